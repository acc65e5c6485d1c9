package orchestrator

import (
	"bufio"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// A device that swallows the first request after a run's abort: Cleanup,
// on a context that outlives the abort, gives up on that try when its
// deadline (from the measured round trips) passes and asks again on a
// new connection, which is answered.
func TestRoundTripCleanupRetriesAStalledReply(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var stops atomic.Int32
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
					line, err := rd.ReadString('\n')
					if err != nil {
						return
					}
					if line == "stop\n" && stops.Add(1) == 1 {
						continue // the reply that never comes
					}
					c.Write([]byte("ok\n"))
				}
			}()
		}
	}()
	call := func(ctx context.Context, req string) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
		if _, err := c.Write([]byte(req + "\n")); err != nil {
			return err
		}
		if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		return nil
	}
	var rt RoundTrip
	ctx, cancel := context.WithCancel(context.Background())
	if err := rt.Measure(func() error { return call(ctx, "clock") }); err != nil {
		t.Fatal(err)
	}
	cancel() // the run is aborted: its cleanup still reaches the device
	if err := rt.Cleanup(ctx, func(ctx context.Context) error { return call(ctx, "stop") }); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	if n := stops.Load(); n != 2 {
		t.Errorf("%d stops sent, want 2 (the stalled one and its retry)", n)
	}
}

// The deadline follows the round trips measured, with a floor.
func TestRoundTripDeadline(t *testing.T) {
	var rt *RoundTrip
	if d := rt.Deadline(); d != roundTripFloor {
		t.Errorf("nothing measured: %v, want the floor %v", d, roundTripFloor)
	}
	rt = &RoundTrip{}
	rt.Observe(time.Millisecond)
	if d := rt.Deadline(); d != roundTripFloor {
		t.Errorf("1 ms round trips: %v, want the floor %v", d, roundTripFloor)
	}
	rt.Observe(100 * time.Millisecond)
	rt.Observe(10 * time.Millisecond)
	if d := rt.Deadline(); d != roundTripFactor*100*time.Millisecond {
		t.Errorf("100 ms at worst: %v, want %v", d, roundTripFactor*100*time.Millisecond)
	}
}
