package simlab

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"testbed/dut/host"
)

// iperf3Report is the part of iperf3's -J output the test reads.
type iperf3Report struct {
	Intervals []struct {
		Sum struct {
			Start, End  float64
			Bytes       int64
			Retransmits int64
		}
	}
	End struct {
		SumSent     struct{ Bytes, Retransmits int64 } `json:"sum_sent"`
		SumReceived struct{ Bytes int64 }              `json:"sum_received"`
	}
	Server struct {
		Intervals []struct {
			Sum struct{ Bytes int64 }
		}
	} `json:"server_output_json"`
}

// A bulk flow on a simulated host runs in the switches' simulated time
// over lg100 as it is at each moment: lossless until the loss is switched
// on under it (through the fibre's VOA, the clock standing still), after
// which the link's losses reach TCP and it retransmits. Its frames count
// on the switches' ports, and the command returns once the switch's clock
// has passed its end. The link's ports run at 25G: iperf3 -t takes whole
// seconds, and a second of 25G is a quarter of the segments a second of
// 100G is, for the same mechanism (the recipe's TCP flow over 100G is
// experiments/backpressure's TestBackpressureWithATCPFlow), and the flow
// must run at the rate the switches' ports were added at, not at 100G.
func TestSimulatedIperf3FollowsTheSwitchesClock(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector makes this run ten times slower: make test runs it without")
	}
	const gbps = 25
	lab, ctx, sw1, _ := startLG(t, 35, gbps)
	h1, _ := openSimHost(t, lab, "h1")
	if _, err := h1.Run(ctx, "iperf3 -c 10.0.0.2 -t 1 -C reno"); err == nil || !strings.Contains(err.Error(), "dctcp, cubic and bbr") {
		t.Errorf("an unknown congestion control: %v", err)
	}
	for cmd, want := range map[string]string{
		"iperf3 -s":                        "runs clients only",
		"iperf3 -c 10.0.0.2 -t 0.5":        "whole seconds",
		"iperf3 -c 10.0.0.2 -t 1 -n 1M":    "only one test end condition",
		"iperf3 -c 10.0.0.2 -n 0":          "expected a count of bytes",
		"iperf3 -c 10.0.0.2 -n 1X":         "expected a count of bytes",
		"iperf3 -c 10.0.0.2 -u":            "option \"-u\" is not offered",
		"iperf3 -c 10.9.9.9 -t 1 -C cubic": "no other simulated host has 10.9.9.9",
	} {
		if _, err := h1.Run(ctx, cmd); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v (expected %q)", cmd, err, want)
		}
	}
	var xe *host.ExitError
	if _, err := h1.Run(ctx, "pgrep -x iperf3"); !errors.As(err, &xe) || xe.Status != 1 {
		t.Errorf("pgrep with no flow running: %v", err)
	}
	before, err := sw1.PortCounters(ctx, 136)
	if err != nil {
		t.Fatal(err)
	}
	dst := lab.Host("h2").Addr().Addr()
	type out struct {
		r   host.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		r, err := h1.Run(ctx, fmt.Sprintf("iperf3 -c %s -t 1 -i 0.1 -C dctcp -J --get-server-output", dst))
		done <- out{r, err}
	}()
	// Wait by asking: the flow is running once pgrep lists it.
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
	t0, err := sw1.Clock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sw1.WaitClock(ctx, t0+500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	loss := setFibreLoss(t, lab, 1e-3, 1518)
	for at := 600 * time.Millisecond; at <= 1100*time.Millisecond; at += 100 * time.Millisecond {
		if _, err := sw1.WaitClock(ctx, t0+at); err != nil {
			t.Fatal(err)
		}
	}
	o := <-done
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
	if len(rep.Intervals) != 10 || len(rep.Server.Intervals) != 10 {
		t.Fatalf("%d intervals, %d at the server:\n%s", len(rep.Intervals), len(rep.Server.Intervals), o.r.Stdout)
	}
	var retxClean, retxLossy int64
	for i, iv := range rep.Intervals {
		got := float64(rep.Server.Intervals[i].Sum.Bytes) * 8 / 0.1 / 1e9
		t.Logf("%.1f-%.1f s: %.2f Gb/s received, %d retransmits", iv.Sum.Start, iv.Sum.End, got, iv.Sum.Retransmits)
		if i < 5 {
			retxClean += iv.Sum.Retransmits
			if i > 0 && (got < 0.85*gbps || got > gbps) {
				t.Errorf("lossless interval %d: %.2f Gb/s received", i, got)
			}
		} else {
			retxLossy += iv.Sum.Retransmits
		}
	}
	t.Logf("loss %.3g from 0.5 s: %d retransmits before, %d after; %d frames out of sw1's port", loss, retxClean, retxLossy, frames)
	if retxClean != 0 || retxLossy == 0 || rep.End.SumSent.Retransmits != retxLossy {
		t.Errorf("retransmits: %d lossless, %d lossy, %d in all", retxClean, retxLossy, rep.End.SumSent.Retransmits)
	}
	// Every segment (a 1518 B frame) crossed sw1's port.
	segs := (rep.End.SumSent.Bytes + 1447) / 1448
	if frames < segs || frames > segs+retxLossy+1000 {
		t.Errorf("sw1 port 136 sent %d frames for %d segments", frames, segs)
	}
	if r, err := h1.Run(ctx, "pgrep -x iperf3"); err == nil {
		t.Errorf("pgrep after the flow: %q", r.Stdout)
	}
	// Without -J: iperf3's interval lines and its two summary lines, the
	// receiver's total the sum of what the server got; this flow ends by
	// bytes (-n 500M: some 0.18 s of 25G), its last interval and the
	// summary where the count was written.
	go func() {
		r, err := h1.Run(ctx, fmt.Sprintf("iperf3 -c %s -n 500M -i 0.1 -C dctcp", dst))
		done <- out{r, err}
	}()
	for {
		if r, err := h1.Run(ctx, "pgrep -x iperf3"); err == nil && strings.TrimSpace(r.Stdout) != "" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t1, err := sw1.Clock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for at := 10 * time.Millisecond; ; at += 10 * time.Millisecond {
		select {
		case o = <-done:
		default:
			if at > time.Second {
				// The flow ends on the switch's clock, but its reply
				// comes back over SSH in wall time: on a loaded machine
				// it can arrive after the clock was waited past a
				// second. Wait for it, bounded, before calling the flow
				// stuck (the clock is not waited on meanwhile).
				select {
				case o = <-done:
				case <-ctx.Done():
					t.Fatal(ctx.Err())
				case <-time.After(30 * time.Second):
					t.Fatal("iperf3 -n 500M still running after a second of 25G")
				}
				break
			}
			if _, err := sw1.WaitClock(ctx, t1+at); err != nil {
				t.Fatal(err)
			}
			continue
		}
		break
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	lines := strings.Split(strings.TrimSpace(o.r.Stdout), "\n")
	var intervals int
	for _, l := range lines {
		if strings.HasPrefix(l, "[  5]   0.00-0.10 ") || strings.HasPrefix(l, "[  5]   0.10-0.1") || strings.HasPrefix(l, "[  5]   0.10-0.2") {
			intervals++
		}
	}
	if intervals != 2 || !strings.Contains(o.r.Stdout, "Gbits/sec") || !strings.Contains(o.r.Stdout, " receiver\n") || lines[len(lines)-1] != "iperf Done." {
		t.Errorf("iperf3 text output:\n%s", o.r.Stdout)
	}
}
