package fctmodel

import (
	"math"
	"testing"
	"time"

	"testbed/simlab/lgmodel"
)

// The model's single-packet recovery against a small calculation.
//
// A WRITE of one packet with LinkGuardian (N copies) on a link corrupting
// each frame with p, the ACK path clean: the original gets through with
// 1-p; it is lost and a copy repairs it with p(1-p^N) (the dummies behind
// it keep coming until one reveals the hole, so the hole is always found);
// it and all N copies are lost, and the requester's transport timer must
// resend it, with p^(N+1) (§3.4, Eq. 1). Without protection that is p.
func TestSinglePacketRecoveryMatchesCalculation(t *testing.T) {
	const p = 0.05
	n := trials(200_000)
	timeout := 4096 * time.Nanosecond << 8
	for _, tc := range []struct {
		mode   lgmodel.Mode
		copies int
	}{{lgmodel.Off, 0}, {lgmodel.Ordered, 1}, {lgmodel.Ordered, 2}, {lgmodel.NonBlocking, 1}} {
		c := config(t, RDMA, tc.mode, p, 143)
		if tc.mode != lgmodel.Off {
			c.Forward.LG.Copies = tc.copies
		}
		base := summarize(run(t, config(t, RDMA, tc.mode, 0, 143), 10, 1)).fct[0]
		var clean, repaired, timedOut int
		for _, x := range run(t, c, n, 5) {
			switch {
			case x.FCT == base:
				clean++
			case x.FCT < timeout:
				repaired++
			default:
				timedOut++
			}
		}
		all := math.Pow(p, float64(tc.copies+1))
		want := [3]float64{1 - p, p - all, all}
		got := [3]int{clean, repaired, timedOut}
		t.Logf("%s N=%d: clean %d repaired %d timed out %d of %d; expected %.1f %.1f %.1f",
			tc.mode, tc.copies, clean, repaired, timedOut, n, want[0]*float64(n), want[1]*float64(n), want[2]*float64(n))
		for i := range got {
			if !within(got[i], n, want[i], 4.5) {
				t.Errorf("%s N=%d: class %d: %d of %d, want about %.1f", tc.mode, tc.copies, i, got[i], n, want[i]*float64(n))
			}
		}
	}
}

// A lost single-segment request is repaired by the tail loss probe, which
// waits for the RTO: srtt (27 us) + rttvar (at least rto_min, 1 ms) rounds
// up to 2 jiffies at HZ 1000, and a kernel timer of 2 jiffies fires at the
// second tick after it is armed: 1 to 2 ms later, uniformly as trials fall
// anywhere between ticks. The probe then takes an ordinary round trip. So
// the slow trials' FCTs spread over (1 ms, 2 ms] + the lossless FCT minus
// the write's syscall, with a mean in the middle. With the probe turned
// off the RTO does the same job.
func TestLostRequestWaitsForTheRTOTick(t *testing.T) {
	const p = 0.01
	n := trials(60_000)
	for _, tlp := range []bool{true, false} {
		c := config(t, TCP, lgmodel.Off, p, 143)
		c.TCP.TLP = tlp
		base := summarize(run(t, config(t, TCP, lgmodel.Off, 0, 143), 10, 1)).fct[0]
		var slow []time.Duration
		var probes, timeouts int
		ts := run(t, c, n, 6)
		for i, x := range ts {
			// One corrupted frame (a lost probe would wait for another
			// RTO), after a clean trial (whose RTT sample undid any
			// backoff: Karn's rule takes none from a retransmission).
			if x.FCT > base && x.LinkLost == 1 && i > 0 && ts[i-1].FCT == base {
				slow = append(slow, x.FCT-base+c.Host.Syscall)
				probes += x.Probes
				timeouts += x.Timeouts
			}
		}
		var sum time.Duration
		lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
		for _, d := range slow {
			sum += d
			lo, hi = min(lo, d), max(hi, d)
		}
		mean := sum / time.Duration(len(slow))
		// The mean of a uniform (1, 2] ms; its standard error over the
		// slow trials is 0.29 ms / sqrt(k).
		se := time.Duration(float64(289*time.Microsecond) / math.Sqrt(float64(len(slow))))
		t.Logf("tlp %v: %d slow trials, extra %v .. %v, mean %v (want 1.5 ms +- %v); probes %d timeouts %d",
			tlp, len(slow), lo, hi, mean, 5*se, probes, timeouts)
		if lo <= time.Millisecond || hi > 2*time.Millisecond+time.Microsecond {
			t.Errorf("tlp %v: recovery took %v to %v, want within (1 ms, 2 ms]", tlp, lo, hi)
		}
		if d := mean - 1500*time.Microsecond; d < -5*se || d > 5*se {
			t.Errorf("tlp %v: mean recovery %v, want 1.5 ms", tlp, mean)
		}
		if tlp && (probes < len(slow) || timeouts > len(slow)/10) || !tlp && (probes != 0 || timeouts < len(slow)) {
			t.Errorf("tlp %v: %d probes and %d timeouts for %d recoveries", tlp, probes, timeouts, len(slow))
		}
	}
}

// The client's share of the retransmissions is its own: with only the
// requests corrupted, the server retransmits (probes) its answers while
// the client's lost request goes unanswered, and those are not the
// client's.
func TestClientRetransmitsAreTheClients(t *testing.T) {
	var client, all int
	for _, x := range run(t, config(t, TCP, lgmodel.Off, 1e-2, 143), trials(20_000), 15) {
		client += x.ClientRetransmits
		all += x.Retransmits
		if x.ClientRetransmits > x.Retransmits || x.LinkLost > 0 && x.ClientRetransmits == 0 && x.FCT > time.Millisecond {
			t.Fatalf("trial %+v", x)
		}
	}
	if client == 0 || client >= all {
		t.Errorf("client %d of %d retransmissions", client, all)
	}
}
