package tofino

import (
	"bufio"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"testbed/simlab/wire"
)

// agentConn is one connection to the emulated agent over an in-memory pipe.
type agentConn struct {
	c  net.Conn
	rd *bufio.Reader
}

func dialAgent(t testing.TB, sw *Tofino) *agentConn {
	t.Helper()
	client, server := net.Pipe()
	go sw.serveAgent(server)
	t.Cleanup(func() { client.Close() })
	client.SetDeadline(time.Now().Add(10 * time.Second))
	return &agentConn{c: client, rd: bufio.NewReader(client)}
}

func (a *agentConn) send(t testing.TB, line string) map[string]any {
	t.Helper()
	if _, err := a.c.Write([]byte(line + "\n")); err != nil {
		t.Fatalf("send %s: %v", line, err)
	}
	return a.recv(t)
}

func (a *agentConn) recv(t testing.TB) map[string]any {
	t.Helper()
	reply, err := a.rd.ReadBytes('\n')
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(reply, &m); err != nil {
		t.Fatalf("reply %q: %v", reply, err)
	}
	return m
}

func (a *agentConn) closed() bool {
	_, err := a.rd.ReadByte()
	return err != nil
}

func errKind(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	k, _ := e["kind"].(string)
	return k
}

func testSwitch(idle time.Duration, conns int) *Tofino {
	return &Tofino{faults: &wire.Faults{}, agentToken: "tok-123", agentIdle: idle, agentSlots: make(chan struct{}, conns)}
}

// The emulated agent keeps the real one's rules: the token first, a reply
// to malformed JSON with the connection kept, idle connections closed, a
// cap on connections.
func TestAgentEmulatorRules(t *testing.T) {
	sw := testSwitch(time.Minute, 2)

	a := dialAgent(t, sw)
	if r := a.send(t, `{"id":1,"op":"hello"}`); errKind(r) != "unauthorized" || !a.closed() {
		t.Errorf("hello first: %v, want unauthorized and the connection closed", r)
	}
	a = dialAgent(t, sw)
	if r := a.send(t, `{"id":1,"op":"auth","args":{"token":"tok-124"}}`); errKind(r) != "unauthorized" || !a.closed() {
		t.Errorf("wrong token: %v", r)
	}

	a = dialAgent(t, sw)
	if r := a.send(t, `{"id":1,"op":"auth","args":{"token":"tok-123"}}`); r["ok"] != true {
		t.Fatalf("auth: %v", r)
	}
	for _, bad := range []string{`not json`, `{"id":`, `[1,2]`} {
		if r := a.send(t, bad); errKind(r) != "bad_request" || r["id"] != float64(0) {
			t.Errorf("%s: %v, want bad_request with id 0", bad, r)
		}
	}
	// Still open after the malformed lines, and still answering.
	if r := a.send(t, `nope`); errKind(r) != "bad_request" {
		t.Errorf("after malformed lines: %v", r)
	}

	// Two open (a and b): a third is busy.
	b := dialAgent(t, sw)
	if r := b.send(t, `{"id":1,"op":"auth","args":{"token":"tok-123"}}`); r["ok"] != true {
		t.Fatalf("auth: %v", r)
	}
	c := dialAgent(t, sw)
	if r := c.recv(t); errKind(r) != "busy" || !c.closed() {
		t.Errorf("third connection: %v, want busy", r)
	}
}

func TestAgentEmulatorIdleTimeout(t *testing.T) {
	sw := testSwitch(200*time.Millisecond, 2)
	a := dialAgent(t, sw)
	if r := a.send(t, `{"id":1,"op":"auth","args":{"token":"tok-123"}}`); r["ok"] != true {
		t.Fatalf("auth: %v", r)
	}
	start := time.Now()
	if !a.closed() {
		t.Fatal("an idle connection stays open")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("closed after %v", d)
	}
	// Its slot is free again.
	b := dialAgent(t, sw)
	if r := b.send(t, `{"id":1,"op":"auth","args":{"token":"tok-123"}}`); r["ok"] != true || strings.Contains(errKind(r), "busy") {
		t.Errorf("after the idle close: %v", r)
	}
}
