package tofino

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
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
// is an error at once).
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
