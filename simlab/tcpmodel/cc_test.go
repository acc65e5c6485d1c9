package tcpmodel

import (
	"math"
	"testing"
	"time"
)

const mss = 1448

// RFC 8257 §3.3: alpha tracks the fraction of marked bytes with gain g,
// and a window with a mark cuts cwnd by alpha/2, once.
func TestDCTCPAlphaAndCut(t *testing.T) {
	cc, _ := New("dctcp", mss)
	d := cc.(*DCTCP)
	rtt := 10 * time.Microsecond
	now := time.Duration(0)
	// Windows of 10 segments, half of them marked.
	for w := range 200 {
		for k := range 10 {
			now += rtt / 10
			ce := 0
			if k%2 == 0 {
				ce = mss
			}
			d.OnAck(now, mss, ce, rtt, 0, 0)
		}
		if w == 1 && (d.Alpha < 0.4/16 || d.Alpha > 0.6/16) {
			t.Fatalf("alpha after one window %.5f, want g x F, about %.5f", d.Alpha, 0.5/16)
		}
	}
	if math.Abs(d.Alpha-0.5) > 0.01 {
		t.Errorf("alpha %.4f after 200 windows half marked, want 0.5", d.Alpha)
	}
	// A fresh window with one mark: cwnd x (1 - alpha/2), then no more
	// cuts in that window.
	now += rtt
	d.OnAck(now, mss, 0, rtt, 0, 0) // closes the window
	d.cwnd = 100 * mss
	d.ssthresh = 50 * mss
	want := 100 * mss * (1 - d.Alpha/2)
	d.OnAck(now+time.Nanosecond, mss, mss, rtt, 0, 0)
	if math.Abs(d.Cwnd()-want) > 1e-6 {
		t.Errorf("cwnd %.1f after a mark, want %.1f", d.Cwnd(), want)
	}
	d.OnAck(now+2*time.Nanosecond, mss, mss, rtt, 0, 0)
	if math.Abs(d.Cwnd()-want) > 1e-6 {
		t.Errorf("a second mark in the window cut again: %.1f", d.Cwnd())
	}
	// §3.4: a loss halves as Reno.
	d.OnLoss(now, 0)
	if math.Abs(d.Cwnd()-want/2) > 1e-6 {
		t.Errorf("cwnd %.1f after a loss, want %.1f", d.Cwnd(), want/2)
	}
}

// RFC 9438: beta = 0.7 at a congestion event, and then the window follows
// W_cubic(t) = C (t-K)^3 + W_max, back at W_max after K seconds, below it
// (concave) before and above it (convex) after.
func TestCubicFollowsItsLaw(t *testing.T) {
	cc, _ := New("cubic", mss)
	c := cc.(*Cubic)
	c.cwnd, c.ssthresh = 100*mss, 50*mss
	c.OnLoss(0, 0)
	if c.Cwnd() != 70*mss || c.WMax != 100*mss {
		t.Fatalf("after the event cwnd %.0f, W_max %.0f: want 70 and 100 segments", c.Cwnd()/mss, c.WMax/mss)
	}
	K := math.Cbrt(100 * 0.3 / 0.4)
	if math.Abs(c.K-K) > 1e-9 || math.Abs(c.WCubic(K)-c.WMax) > 1e-6 {
		t.Fatalf("K %.4f, want %.4f; W_cubic(K) %.1f", c.K, K, c.WCubic(K))
	}
	// ACKs every RTT / cwnd for 2K seconds with a 100 ms RTT.
	rtt := 100 * time.Millisecond
	now := time.Duration(0)
	at := func(ts float64) float64 {
		for now.Seconds() < ts {
			step := time.Duration(float64(rtt) / (c.Cwnd() / mss))
			now += step
			c.OnAck(now, mss, 0, rtt, 0, 0)
		}
		return c.Cwnd() / mss
	}
	half, atK, after := at(K/2), at(K), at(1.5*K)
	// W_cubic(t + RTT) is the target, reached within a round trip.
	wantHalf, wantAfter := c.WCubic(K/2+0.1)/mss, c.WCubic(1.5*K+0.1)/mss
	t.Logf("cwnd at K/2 %.1f (law %.1f), at K %.1f, at 1.5K %.1f (law %.1f)", half, wantHalf, atK, after, wantAfter)
	if math.Abs(half-wantHalf) > 2 || math.Abs(after-wantAfter) > 0.05*wantAfter || math.Abs(atK-100) > 2 {
		t.Errorf("cwnd does not follow W_cubic")
	}
	if !(half < 100 && after > 101) {
		t.Errorf("concave then convex: %.1f before K, %.1f after", half, after)
	}
}

// The draft's BBRv1: Startup at 2/ln 2, leaving it when the bandwidth
// stops growing, Drain, then ProbeBW's gain cycle averaging 1 and a cwnd
// of twice the BDP; a loss changes nothing.
func TestBBRStatesAndGains(t *testing.T) {
	cc, _ := New("bbr", mss)
	b := cc.(*BBR)
	if math.Abs(b.gain-2/math.Ln2) > 1e-12 || b.State != BBRStartup {
		t.Fatalf("startup gain %.4f", b.gain)
	}
	rtt := 100 * time.Microsecond
	const rate = 10e9
	now := time.Duration(0)
	inflight := 1 << 20
	var gains []float64
	for range 5000 {
		now += rtt / 20
		b.OnAck(now, mss, 0, rtt, rate, inflight)
		if b.State == BBRDrain {
			inflight = 0
		}
		if b.State == BBRProbeBW {
			gains = append(gains, b.gain)
		}
	}
	if b.State != BBRProbeBW || b.BtlBw != rate || b.RTProp != rtt {
		t.Fatalf("state %s, btlbw %g, rtprop %v", b.State, b.BtlBw, b.RTProp)
	}
	bdp := rate / 8 * rtt.Seconds()
	if math.Abs(b.Cwnd()-2*bdp) > 1e-6 {
		t.Errorf("cwnd %.0f, want 2 x BDP = %.0f", b.Cwnd(), 2*bdp)
	}
	var sum float64
	for _, g := range gains {
		sum += g
	}
	if m := sum / float64(len(gains)); math.Abs(m-1) > 0.02 {
		t.Errorf("ProbeBW's mean pacing gain %.3f, want 1", m)
	}
	before := b.Cwnd()
	b.OnLoss(now, 0)
	if b.Cwnd() != before {
		t.Errorf("a loss moved cwnd %.0f -> %.0f", before, b.Cwnd())
	}
	if _, err := New("reno", mss); err == nil {
		t.Error("an unknown congestion control was accepted")
	}
}
