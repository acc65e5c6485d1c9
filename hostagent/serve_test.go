package hostagent

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The agent keeps no connection forever: one that sends nothing, one that
// sends a header and then a body slowly, one kept alive idle, are all
// closed by the server; and a client holding the cap of connections gets
// its next one closed at once. (Once 100 idle and 100 slow-body
// connections were held with no token, fds 10 to 310.)
func TestServerBoundsWhatAClientHolds(t *testing.T) {
	a := New(Options{Token: func() (string, error) { return "tok", nil }})
	defer a.Close()
	so := ServerOptions{ReadHeaderTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second,
		WriteTimeout: time.Second, IdleTimeout: 2 * time.Second, MaxConnsPerClient: 4}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(a.Handler(), so)
	go srv.Serve(LimitConnsPerClient(ln, so))
	defer srv.Close()
	addr := ln.Addr().String()

	// closedByServer waits (with a hang detector, not a timing) for the
	// server to close c.
	closedByServer := func(what string, c net.Conn) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err := io.Copy(io.Discard, c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("%s: still open after 30 s", what)
		}
	}
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	silent := dial()
	defer silent.Close()
	slow := dial()
	defer slow.Close()
	io.WriteString(slow, "PUT /v1/reactor/classes HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nAuthorization: Bearer tok\r\n\r\n{")
	idle := dial()
	defer idle.Close()
	io.WriteString(idle, "GET /v1/version HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The cap: three are open, one more is allowed, the fifth is closed.
	fourth := dial()
	defer fourth.Close()
	fifth := dial()
	defer fifth.Close()
	fifth.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := fifth.Read(make([]byte, 1)); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Errorf("fifth connection of one client: read %d, %v; want it closed by the server", n, err)
	}
	closedByServer("a connection that sends nothing", silent)
	closedByServer("a request whose body never ends", slow)
	closedByServer("a kept-alive idle connection", idle)
	closedByServer("a fourth connection that sends nothing", fourth)
	// Closed connections free their places.
	c := dial()
	defer c.Close()
	io.WriteString(c, "GET /v1/version HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
		t.Errorf("a new connection after the others closed: %v", err)
	} else {
		resp.Body.Close()
	}
}
