package transport

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestPollAsksUntilDoneOrError(t *testing.T) {
	ctx := context.Background()
	asks := 0
	if err := Poll(ctx, func() (bool, error) { asks++; return asks == 3, nil }); err != nil || asks != 3 {
		t.Fatalf("Poll = %v after %d asks, want nil after 3", err, asks)
	}
	boom := errors.New("boom")
	asks = 0
	if err := Poll(ctx, func() (bool, error) { asks++; return false, boom }); err != boom || asks != 1 {
		t.Fatalf("Poll = %v after %d asks, want the ask's error after 1", err, asks)
	}
	// The context ending between asks ends the wait with its own error,
	// unwrapped, so a caller can tell it from the device's answer.
	cctx, cancel := context.WithCancel(ctx)
	asks = 0
	err := PollEvery(cctx, 0, 0, func() (bool, error) {
		asks++
		if asks == 2 {
			cancel()
		}
		return false, nil
	})
	if err != cctx.Err() || asks != 2 {
		t.Fatalf("Poll = %v after %d asks, want context.Canceled after 2", err, asks)
	}
}

// lineServer answers a greeting and queries on 127.0.0.1: "hello" gets
// "hi <n>" (the connection's number), "q" gets "a <n>", "drop" and "garble"
// are answered by hanging up and by "###". It counts connections.
func lineServer(t *testing.T) (addr string, conns *atomic.Int32) {
	t.Helper()
	conns = new(atomic.Int32)
	addr = lineListener(t, func(c net.Conn) {
		n := conns.Add(1)
		r := bufio.NewScanner(c)
		for r.Scan() {
			switch r.Text() {
			case "hello":
				fmt.Fprintf(c, "hi %d\n", n)
			case "q":
				fmt.Fprintf(c, "a %d\n", n)
			case "garble":
				fmt.Fprintln(c, "###")
			case "drop":
				return
			}
		}
	})
	return "tcp://" + addr, conns
}

// lineListener accepts connections on 127.0.0.1 and serves each with
// serve on its own goroutine, closing it when serve returns; the test's
// cleanup closes the listener and waits for every connection's goroutine.
func lineListener(t testing.TB, serve func(net.Conn)) (addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

var errGarbled = errors.New("garbled")

func TestLineRedialsGreetsAndRetriesOnce(t *testing.T) {
	addr, conns := lineServer(t)
	var tr bytes.Buffer
	var l *Line
	greeted := 0
	exchange := func(ctx context.Context, cmd string) (string, error) {
		if err := l.Conn().Send(ctx, cmd); err != nil {
			l.Drop()
			return "", err
		}
		s, err := l.Conn().ReadLine(ctx)
		if err != nil {
			l.Drop()
			return "", err
		}
		if s == "###" {
			l.Drop()
			return "", fmt.Errorf("%s: %q: %w", cmd, s, errGarbled)
		}
		return s, nil
	}
	l = NewLine(addr, LineOptions{
		DialOptions: DialOptions{Transcript: NewTranscript(&tr)},
		Hello: func(ctx context.Context) error {
			greeted++
			_, err := exchange(ctx, "hello")
			return err
		},
		Retryable: func(err error) bool { return errors.Is(err, errGarbled) },
	})
	defer l.Close()
	ctx := context.Background()
	ask := func(cmds ...string) (string, error) {
		var got string
		i := 0
		err := l.Retry(ctx, func() (err error) {
			cmd := cmds[min(i, len(cmds)-1)]
			i++
			got, err = exchange(ctx, cmd)
			return err
		})
		return got, err
	}
	if got, err := ask("q"); err != nil || got != "a 1" || greeted != 1 {
		t.Fatalf("first exchange: %q, %v, greeted %d times", got, err, greeted)
	}
	// A hang-up is tried once more on a new, greeted connection.
	if got, err := ask("drop", "q"); err != nil || got != "a 2" || greeted != 2 {
		t.Fatalf("across a hang-up: %q, %v, greeted %d times", got, err, greeted)
	}
	// So is a reply the device's Retryable names.
	if got, err := ask("garble", "q"); err != nil || got != "a 3" {
		t.Fatalf("across a garbled reply: %q, %v", got, err)
	}
	// Twice is once too many: the second failure is the answer.
	if _, err := ask("garble", "garble"); !errors.Is(err, errGarbled) {
		t.Fatalf("two garbled replies: %v", err)
	}
	if conns.Load() != 4 {
		t.Errorf("%d connections, want 4", conns.Load())
	}
	// An error neither lost nor Retryable is not tried again, and the
	// connection stays.
	other := errors.New("device error")
	tries := 0
	if err := l.Retry(ctx, func() error { tries++; return other }); err != other || tries != 1 {
		t.Fatalf("a device error: %v after %d tries", err, tries)
	}
	if l.Conn() == nil || conns.Load() != 5 {
		t.Fatalf("the connection after a device error: %v, %d connections", l.Conn(), conns.Load())
	}
	if !strings.Contains(tr.String(), "# reconnecting to "+addr) || !strings.Contains(tr.String(), "trying once more on a new connection") {
		t.Errorf("the transcript does not say it reconnected:\n%s", tr.String())
	}
}

func TestLineDialErrorNamesTheDevice(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "tcp://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	l := NewLine(addr, LineOptions{DialError: func(err error) error { return fmt.Errorf("voa1: connect: %w", err) }})
	if err := l.Connect(context.Background()); err == nil || !strings.HasPrefix(err.Error(), "voa1: connect: dial "+addr) {
		t.Fatalf("Connect = %v", err)
	}
}
