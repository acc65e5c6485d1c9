package tofino

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"testbed/dut/p4switch"
	lg "testbed/p4/linkguardian"
	"testbed/transport"
)

// scriptedAgent listens on loopback and answers every request after the
// auth with answer(id), a line the test chooses (without its newline);
// with once, the stream ends after that answer (a reply that never comes
// is an error at once). A nil answer ends the stream without one.
func scriptedAgent(t testing.TB, once bool, answer func(id int64) []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				rd := bufio.NewReader(c)
				for {
					line, err := rd.ReadBytes('\n')
					if err != nil {
						return
					}
					var req agentRequest
					if json.Unmarshal(line, &req) != nil {
						return
					}
					out := []byte(`{"id":` + strconv.FormatInt(req.ID, 10) + `,"ok":true}`)
					if req.Op != "auth" {
						out = answer(req.ID)
						if out == nil {
							return
						}
					}
					if _, err := c.Write(append(out, '\n')); err != nil || (once && req.Op != "auth") {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// A reply line longer than the client's bound is an error naming the
// switch and the bound, not a read that holds whatever the far end sends;
// the connection is dropped (the line's rest is still on it) and the next
// request is answered on a new one.
func TestAgentReplyOverItsBoundIsAnError(t *testing.T) {
	const limit = 1 << 20
	var long atomic.Bool
	long.Store(true)
	addr := scriptedAgent(t, false, func(id int64) []byte {
		n := 4
		if long.Load() {
			n = limit // 2 bytes each: over the bound
		}
		vals := strings.TrimSuffix(strings.Repeat("0,", n), ",")
		return []byte(`{"id":` + strconv.FormatInt(id, 10) + `,"ok":true,"result":{"values":[` + vals + `]}}`)
	})
	var dials atomic.Int32
	s := &Switch{agent: &agentClient{
		dial: func(ctx context.Context) (net.Conn, error) {
			dials.Add(1)
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		},
		token:    func(context.Context) (string, error) { return "t", nil },
		timeout:  5 * time.Second,
		device:   "ssh://sw9.lab",
		maxReply: limit,
	}}
	t.Cleanup(s.agent.close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := s.ReadRegisterRange(ctx, "SwitchIngress.reg_x", 0, 4)
	if err == nil {
		t.Fatal("a 2 MiB reply line read whole, over a 1 MiB bound")
	}
	for _, want := range []string{"ssh://sw9.lab", "reg.range", "too long", strconv.Itoa(limit)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if !errors.Is(err, transport.ErrGarbled) {
		t.Errorf("error %q is not a garbled reply", err)
	}
	long.Store(false)
	v, err := s.ReadRegisterRange(ctx, "SwitchIngress.reg_x", 0, 4)
	if err != nil || len(v) != 4 {
		t.Fatalf("after an over-long reply: %v, %v", v, err)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (the one with the long line dropped)", n)
	}
}

// The bound holds the largest answer the programs allow: a table.get of
// LinkGuardian's loss-emulation table, every one of its 2^20 possible keys
// (a 20-bit exact match) an entry with the widest numbers, and a reg.range
// of MaxRegisterRange 64-bit values.
func TestAgentReplyBoundHoldsTheLargestTable(t *testing.T) {
	e := p4switch.Entry{Key: map[string]int64{"ig_md." + lg.KeyRandNum: 1<<lg.DropRandomBits - 1},
		Action: "SwitchIngress." + lg.ActionDrop, Data: map[string]int64{}}
	one, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	envelope := len(`{"id":9223372036854775807,"ok":true,"result":{"entries":[]}}` + "\n")
	table := envelope + (len(one)+1)<<lg.DropRandomBits
	reg := envelope + MaxRegisterRange*len("-9223372036854775808,")
	if table > maxAgentReply || reg > maxAgentReply {
		t.Errorf("largest table dump %d B, register range %d B: over the bound %d B", table, reg, maxAgentReply)
	}
	t.Logf("largest table dump %d B (%.1f MiB), register range %d B, bound %d MiB", table, float64(table)/(1<<20), reg, maxAgentReply>>20)
}

// Every operation of PROTOCOL.md's table has a retry class, and the
// class table names no operation the protocol does not have.
func TestEveryProtocolOpHasARetryClass(t *testing.T) {
	doc, err := os.ReadFile("agent/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	inOps := false
	for i, line := range strings.Split(string(doc), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			inOps = line == "## Operations"
		case inOps && strings.HasPrefix(line, "| `"):
			op, _, ok := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
			if !ok {
				t.Fatalf("agent/PROTOCOL.md:%d: expected an op in backquotes, got %q", i+1, line)
			}
			ops[op] = true
		}
	}
	if len(ops) < 30 {
		t.Fatalf("agent/PROTOCOL.md: %d operations read from its Operations table, expected the whole table", len(ops))
	}
	for op := range ops {
		r, ok := opRetries[op]
		if !ok {
			t.Errorf("op %s of agent/PROTOCOL.md has no retry class in opRetries", op)
			continue
		}
		if r.class == retryAdd && r.reconcile == nil {
			t.Errorf("op %s: an add with no read-back to reconcile it", op)
		}
		if r.class == retryReadUnless && r.arg == "" {
			t.Errorf("op %s: read unless an argument, but names none", op)
		}
	}
	for op := range opRetries {
		if !ops[op] {
			t.Errorf("opRetries classifies %s, which agent/PROTOCOL.md does not list", op)
		}
	}
}

// A stream lost after a request was written is repeated only when the
// op's class allows it; one lost before (at the dial) always is.
func TestLostStreamRetriesOnlySafeOps(t *testing.T) {
	var served atomic.Int32
	var lose, failDial atomic.Bool
	addr := scriptedAgent(t, false, func(id int64) []byte {
		served.Add(1) // done: whatever follows, the agent did it
		if lose.CompareAndSwap(true, false) {
			return nil // the stream ends before the answer
		}
		return []byte(`{"id":` + strconv.FormatInt(id, 10) + `,"ok":true,"result":{"time_ns":5}}`)
	})
	a := &agentClient{
		dial: func(ctx context.Context) (net.Conn, error) {
			if failDial.CompareAndSwap(true, false) {
				return nil, fmt.Errorf("dial: refused: %w", transport.ErrConnectionLost)
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		},
		token:   func(context.Context) (string, error) { return "t", nil },
		timeout: 5 * time.Second,
		device:  "ssh://sw9.lab",
	}
	t.Cleanup(a.close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	do := func(op string, args any) (int32, error) {
		n := served.Load()
		err := a.call(ctx, op, args, nil)
		return served.Load() - n, err
	}
	lose.Store(true)
	if n, err := do("time", nil); err != nil || n != 2 {
		t.Errorf("a read whose answer was lost: %v, done %d times (want 2: lost, then repeated)", err, n)
	}
	lose.Store(true)
	n, err := do("pktgen.start", map[string]any{"app_id": 1})
	if !errors.Is(err, errOutcomeUnknown) || !strings.Contains(err.Error(), "ssh://sw9.lab") || !strings.Contains(err.Error(), "pktgen.start") {
		t.Errorf("pktgen.start whose answer was lost: %v", err)
	}
	if n != 1 {
		t.Errorf("pktgen.start done %d times, want once", n)
	}
	failDial.Store(true)
	if n, err := do("pktgen.start", map[string]any{"app_id": 1}); err != nil || n != 1 {
		t.Errorf("pktgen.start after a failed dial: %v, done %d times (want once, on the redial)", err, n)
	}
	lose.Store(true)
	if n, err := do("port.pfc", map[string]any{"dev_port": 1, "rx_map": 1, "tx_map": 1}); !errors.Is(err, errOutcomeUnknown) || n != 1 {
		t.Errorf("port.pfc write whose answer was lost: %v, done %d times", err, n)
	}
	lose.Store(true)
	if n, err := do("port.pfc", map[string]any{"dev_port": 1}); err != nil || n != 2 {
		t.Errorf("port.pfc read whose answer was lost: %v, done %d times (want 2)", err, n)
	}
}
