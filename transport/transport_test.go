package transport

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func TestParseAddress(t *testing.T) {
	good := map[string]Address{
		"tcp://127.0.0.1:5025":             {Scheme: "tcp", Host: "127.0.0.1:5025"},
		"serial:///dev/ttyUSB0?baud=19200": {Scheme: "serial", Path: "/dev/ttyUSB0", Baud: 19200},
		"serial:///dev/ttyS1":              {Scheme: "serial", Path: "/dev/ttyS1", Baud: 9600},
		"ssh://admin@sw1:22":               {Scheme: "ssh", Host: "sw1:22", User: "admin"},
	}
	for raw, want := range good {
		a, err := ParseAddress(raw)
		if err != nil || a.Scheme != want.Scheme || a.Host != want.Host || a.Path != want.Path || a.Baud != want.Baud || a.User != want.User {
			t.Errorf("%s: %+v %v", raw, a, err)
		}
	}
	for _, raw := range []string{"tcp://host", "serial://dev/ttyUSB0", "serial:///dev/x?baud=fast", "ftp://x", "http://"} {
		if _, err := ParseAddress(raw); err == nil {
			t.Errorf("%s accepted", raw)
		}
	}
}

func TestTranscriptScrubsAndTimestamps(t *testing.T) {
	var b bytes.Buffer
	tr := NewTranscript(&b, "pw123", "")
	tr.Sent("login pw123\r")
	tr.Received("ok")
	tr.Error(errors.New("boom"))
	tr.Note("connected to http://admin:Planted-pw9@127.0.0.1:9000/")
	var nilTr *Transcript
	nilTr.Sent("ignored") // a nil transcript records nothing and does not panic
	out := b.String()
	if strings.Contains(out, "Planted-pw9") || !strings.Contains(out, "# connected to http://admin:***@127.0.0.1:9000/") {
		t.Errorf("a URL's password in the transcript:\n%s", out)
	}
	if strings.Contains(out, "pw123") || !strings.Contains(out, `> login ***\r`) || !strings.Contains(out, "< ok") || !strings.Contains(out, "! boom") {
		t.Fatalf("transcript:\n%s", out)
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000000Z", strings.Fields(out)[0]); err != nil {
		t.Fatalf("timestamp: %v", err)
	}
}

func TestLineConnDeadlineAndPeerClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		r := bufio.NewReader(c)
		l, _ := r.ReadString('\n') // answer the first line, ignore the second, then hang up
		c.Write([]byte("echo " + l))
		r.ReadString('\n')
		time.Sleep(300 * time.Millisecond)
		c.Close()
	}()
	c, err := Dial(context.Background(), "tcp://"+ln.Addr().String(), DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	c.Send(ctx, "hi")
	if l, err := c.ReadLine(ctx); err != nil || l != "echo hi" {
		t.Fatalf("ReadLine = %q, %v", l, err)
	}
	c.Send(ctx, "unanswered")
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.ReadLine(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want deadline exceeded, got %v", err)
	}
	if _, err := c.ReadLine(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("want closed by peer, got %v", err)
	}
}

// A device that sends a line with no end is an error once the line passes
// MaxLine, naming the address, not a reader that holds all it is sent.
func TestLineConnBoundsALine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write([]byte("short\n"))
		junk := bytes.Repeat([]byte("x"), 1024)
		for { // until the client hangs up
			if _, err := c.Write(junk); err != nil {
				return
			}
		}
	}()
	addr := "tcp://" + ln.Addr().String()
	c, err := Dial(context.Background(), addr, DialOptions{MaxLine: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if l, err := c.ReadLine(ctx); err != nil || l != "short" {
		t.Fatalf("ReadLine = %q, %v", l, err)
	}
	_, err = c.ReadLine(ctx)
	if !errors.Is(err, ErrGarbled) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "4096") {
		t.Fatalf("an endless line: %v, want a garbled reply naming %s and the bound", err, addr)
	}
}
