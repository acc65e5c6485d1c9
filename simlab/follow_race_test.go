package simlab

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"testbed/dut/host"
	"testbed/dut/tofino"
	lg "testbed/p4/linkguardian"
)

// A short, slow bulk flow stepped by the switches' clock, small enough to
// run under the race detector: the host's SSH session runs iperf3 while
// this goroutine advances sw1's clock and a second one reads sw1's port
// counters, so the Follow hook meets both connections' goroutines.
// 25G is the slowest link the host model has measured (10G is refused).
// The flow is bounded by bytes (iperf3 -n), as a real one can be, not by
// -t's whole seconds: 100 MB are some 35 ms of 25G, where a second took
// 95-107 s under the detector.
func TestSimulatedIperf3FollowRace(t *testing.T) {
	lab := startLab(t, 36)
	for _, n := range []string{"voa1", "voa3"} {
		if v, ok := lab.World().VOA(n); ok {
			for _, ch := range v.Channels {
				ch.SetShutter(true)
			}
		}
	}
	ctx := hostTestCtx(t)
	sw1, sw2 := openSimSwitch(t, lab, "sw1"), openSimSwitch(t, lab, "sw2")
	for _, s := range []struct {
		sw   *tofino.Switch
		prog string
	}{{sw1, lg.ProgramSender}, {sw2, lg.ProgramReceiver}} {
		if err := s.sw.StartSwitchd(ctx, s.prog); err != nil {
			t.Fatal(err)
		}
		if err := s.sw.AddPort(ctx, 136, 25, "none"); err != nil {
			t.Fatal(err)
		}
	}
	for _, sw := range []*tofino.Switch{sw1, sw2} {
		if err := sw.WaitPortUp(ctx, 136); err != nil {
			t.Fatal(err)
		}
	}
	h1, _ := openSimHost(t, lab, "h1")
	sw1r := openSimSwitch(t, lab, "sw1")
	before, err := sw1.PortCounters(ctx, 136)
	if err != nil {
		t.Fatal(err)
	}
	type out struct {
		r   host.Result
		err error
	}
	done := make(chan out, 1)
	dst := lab.Host("h2").Addr().Addr()
	const flowBytes = 100 << 20
	go func() {
		r, err := h1.Run(ctx, fmt.Sprintf("iperf3 -c %s -n %d -i 0.1 -C dctcp -J", dst, flowBytes))
		done <- out{r, err}
	}()
	for {
		if r, err := h1.Run(ctx, "pgrep -x iperf3"); err == nil && strings.TrimSpace(r.Stdout) != "" {
			break
		}
		select {
		case o := <-done:
			t.Fatalf("iperf3 ended before it was seen running: %v", o.err)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	// Counters read from a second connection while the clock advances.
	stopReads := make(chan struct{})
	reads := make(chan error, 1)
	go func() {
		var last int64
		for {
			select {
			case <-stopReads:
				reads <- nil
				return
			case <-time.After(20 * time.Millisecond):
			}
			c, err := sw1r.PortCounters(ctx, 136)
			if err != nil {
				reads <- err
				return
			}
			n := c.Values["$FramesTransmittedOK"]
			if n < last {
				reads <- fmt.Errorf("frames went back from %d to %d", last, n)
				return
			}
			last = n
		}
	}()
	t0, err := sw1.Clock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prev := before.Values["$FramesTransmittedOK"]
	const window = 5 * time.Millisecond
	for at := window; at <= 4*window; at += window {
		if _, err := sw1.WaitClock(ctx, t0+at); err != nil {
			t.Fatal(err)
		}
		c, err := sw1.PortCounters(ctx, 136)
		if err != nil {
			t.Fatal(err)
		}
		n := c.Values["$FramesTransmittedOK"]
		if n <= prev {
			t.Errorf("sw1 port 136 sent no frames from %v to %v of the flow (%d)", at-window, at, n)
		}
		prev = n
	}
	// The rest of the flow: the clock moves on until iperf3 has written
	// its bytes (a second of 25G would be 3 GB).
	var o out
	for at := 5 * window; ; at += window {
		select {
		case o = <-done:
		default:
			if at > time.Second {
				t.Fatalf("iperf3 -n %d still running after %v of the switches' clock", flowBytes, at)
			}
			if _, err := sw1.WaitClock(ctx, t0+at); err != nil {
				t.Fatal(err)
			}
			continue
		}
		break
	}
	close(stopReads)
	if err := <-reads; err != nil {
		t.Error(err)
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	var rep iperf3Report
	if err := json.Unmarshal([]byte(o.r.Stdout), &rep); err != nil {
		t.Fatalf("iperf3 -J: %v\n%s", err, o.r.Stdout)
	}
	after, err := sw1.PortCounters(ctx, 136)
	if err != nil {
		t.Fatal(err)
	}
	frames := after.Values["$FramesTransmittedOK"] - before.Values["$FramesTransmittedOK"]
	if rep.End.SumSent.Bytes < flowBytes || rep.End.SumSent.Bytes > flowBytes+2*128<<10 {
		t.Errorf("iperf3 -n %d sent %d bytes (expected the count, within a 128 KB write)", flowBytes, rep.End.SumSent.Bytes)
	}
	segs := (rep.End.SumSent.Bytes + 1447) / 1448
	recv := rep.End.SumReceived.Bytes / 1448
	// Every segment (a 1518 B frame) the receiver got crossed sw1's port,
	// and no more than those sent and sent again did (those still in
	// flight when the flow ended are between the two).
	t.Logf("%d bytes sent, %d segments, %d received, %d frames out of sw1's port", rep.End.SumSent.Bytes, segs, recv, frames)
	if segs == 0 || frames < recv || frames > segs+rep.End.SumSent.Retransmits {
		t.Errorf("sw1 port 136 sent %d frames for %d segments sent (%d retransmitted), %d received", frames, segs, rep.End.SumSent.Retransmits, recv)
	}
}
