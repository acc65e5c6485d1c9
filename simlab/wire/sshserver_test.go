package wire

import (
	"net"
	"testing"
	"time"
)

// A client that connects and never speaks (one that gave up before its
// version line, or a port scan) must not hold the server's Close: it held
// a simulated host's, and with it the lab's close at the end of a run, for
// good (found as a suite test hung for minutes on a loaded machine).
func TestCloseEndsAHandshakeUnderWay(t *testing.T) {
	s, err := NewSSHServer(SSHServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The server has sent its version line once it is in its handshake.
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Fatalf("no version line from the server: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a hang guard: Close takes milliseconds
		t.Fatal("Close still waiting 30 s on a connection in its handshake")
	}
	// The connection was closed by the server.
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 256)
	for {
		if _, err := c.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the server left the connection open")
			}
			return
		}
	}
}
