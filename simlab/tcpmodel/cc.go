// Package tcpmodel is a TCP bulk sender's congestion control and a
// packet-level run of one bulk flow over a LinkGuardian link (lgmodel),
// in simulated time. It is pure (no I/O, no clock, no goroutines) and
// deterministic for a given seed.
//
// Three congestion controls, each its specification's laws:
//   - DCTCP (RFC 8257): Reno's slow start and additive increase; per
//     observation window (one round trip) alpha <- (1-g) alpha + g F with
//     F the fraction of bytes acknowledged with ECN-Echo and g = 1/16
//     (§3.3); a window that saw a mark cuts cwnd <- cwnd (1 - alpha/2)
//     once (§3.3); a loss halves cwnd as Reno does (§3.4).
//   - CUBIC (RFC 9438): after a congestion event at W_max, cwnd follows
//     W_cubic(t) = C (t - K)^3 + W_max with C = 0.4 and K the cube root of
//     W_max (1 - beta) / C (§4.2), beta = 0.7 (§4.6), never below the
//     Reno-friendly estimate W_est, which grows by alpha_cubic =
//     3 (1 - beta) / (1 + beta) segments per window (§4.3); fast
//     convergence lowers W_max when a flow loses below its last W_max
//     (§4.7). An ECN-Echo is a congestion event once per round trip
//     (RFC 3168 §6.1.2).
//   - BBR (draft-cardwell-iccrg-bbr-congestion-control-00, BBRv1): the
//     bottleneck bandwidth is the largest delivery rate over the last 10
//     round trips, RTprop the least round trip; Startup paces at
//     2/ln 2 times the bandwidth until it stops growing by 25% for three
//     round trips, Drain at ln 2 / 2 until the flight is one BDP, then
//     ProbeBW cycles the gains 5/4, 3/4, 1 x 6, one RTprop each; cwnd is
//     twice the BDP. It ignores losses and ECN (v1).
package tcpmodel

import (
	"fmt"
	"math"
	"time"
)

// CC is a congestion control: what the sender may have in flight and how
// fast it may send.
type CC interface {
	Name() string
	// Cwnd is the congestion window, bytes.
	Cwnd() float64
	// PacingBps is the sending rate it asks for (0: no pacing, the NIC's).
	PacingBps() float64
	// OnAck: acked bytes newly acknowledged at now, ce of them with
	// ECN-Echo, with a round-trip sample rtt, delivery-rate sample
	// rateBps (bytes delivered over the interval they took, b/s) and the
	// bytes still in flight.
	OnAck(now time.Duration, acked, ce int, rtt time.Duration, rateBps float64, inflight int)
	// OnLoss: a loss detected by duplicate acknowledgments (fast
	// retransmit), once per recovery.
	OnLoss(now time.Duration, inflight int)
	// OnRTO: a retransmission timeout.
	OnRTO(now time.Duration)
}

// New returns the named congestion control ("dctcp", "cubic", "bbr") for
// segments of mss payload bytes and an initial window of 10 segments
// (RFC 6928).
func New(name string, mss int) (CC, error) {
	if mss <= 0 {
		return nil, fmt.Errorf("tcpmodel: mss %d: expected > 0", mss)
	}
	m := float64(mss)
	switch name {
	case "dctcp":
		return &DCTCP{reno: reno{mss: m, cwnd: 10 * m, ssthresh: math.Inf(1)}, G: 1.0 / 16}, nil
	case "cubic":
		return &Cubic{reno: reno{mss: m, cwnd: 10 * m, ssthresh: math.Inf(1)}, C: 0.4, Beta: 0.7}, nil
	case "bbr":
		return newBBR(m), nil
	}
	return nil, fmt.Errorf("tcpmodel: congestion control %q: expected dctcp, cubic or bbr", name)
}

// reno is slow start and additive increase (RFC 5681 §3.1).
type reno struct {
	mss, cwnd, ssthresh float64
}

func (r *reno) grow(acked int) {
	if r.cwnd < r.ssthresh {
		r.cwnd += float64(acked)
		return
	}
	r.cwnd += r.mss * float64(acked) / r.cwnd
}

func (r *reno) halve() {
	r.ssthresh = max(r.cwnd/2, 2*r.mss)
	r.cwnd = r.ssthresh
}

// DCTCP is RFC 8257's sender.
type DCTCP struct {
	reno
	// G is the estimation gain g (RFC 8257 §4.2: 1/16).
	G float64
	// Alpha is the estimate of the fraction of marked bytes.
	Alpha float64
	// the observation window: bytes acked and marked since it began, and
	// the time it ends (one round trip).
	winAcked, winCE int
	winEnd          time.Duration
	cutThisWindow   bool
}

// Name implements CC.
func (*DCTCP) Name() string { return "dctcp" }

// Cwnd implements CC.
func (d *DCTCP) Cwnd() float64 { return d.cwnd }

// PacingBps implements CC.
func (*DCTCP) PacingBps() float64 { return 0 }

// OnAck implements CC.
func (d *DCTCP) OnAck(now time.Duration, acked, ce int, rtt time.Duration, _ float64, _ int) {
	if d.winEnd == 0 {
		d.winEnd = now + rtt
	}
	d.winAcked += acked
	d.winCE += ce
	if ce > 0 && !d.cutThisWindow {
		// §3.3: reduce once per window in which a mark arrived, with the
		// alpha of the last completed window.
		d.ssthresh = max(d.cwnd*(1-d.Alpha/2), 2*d.mss)
		d.cwnd = d.ssthresh
		d.cutThisWindow = true
	} else if ce == 0 {
		d.grow(acked)
	}
	if now >= d.winEnd {
		if d.winAcked > 0 {
			f := float64(d.winCE) / float64(d.winAcked)
			d.Alpha = (1-d.G)*d.Alpha + d.G*f
		}
		d.winAcked, d.winCE, d.cutThisWindow = 0, 0, false
		d.winEnd = now + rtt
	}
}

// OnLoss implements CC (§3.4: as Reno).
func (d *DCTCP) OnLoss(time.Duration, int) { d.halve() }

// OnRTO implements CC.
func (d *DCTCP) OnRTO(time.Duration) {
	d.ssthresh = max(d.cwnd/2, 2*d.mss)
	d.cwnd = d.mss
}

// Cubic is RFC 9438's sender.
type Cubic struct {
	reno
	C, Beta float64
	// WMax is the window before the last congestion event, K the time
	// W_cubic takes to get back to it (seconds), epoch when the event was.
	WMax, K    float64
	epoch      time.Duration
	inEpoch    bool
	wEst       float64
	ceRoundEnd time.Duration
}

// Name implements CC.
func (*Cubic) Name() string { return "cubic" }

// Cwnd implements CC.
func (c *Cubic) Cwnd() float64 { return c.cwnd }

// PacingBps implements CC.
func (*Cubic) PacingBps() float64 { return 0 }

// WCubic is W_cubic(t) in bytes, t seconds after the congestion event
// (RFC 9438 §4.2, Figure 1; the law is in segments).
func (c *Cubic) WCubic(t float64) float64 {
	return (c.C*math.Pow(t-c.K, 3) + c.WMax/c.mss) * c.mss
}

// OnAck implements CC.
func (c *Cubic) OnAck(now time.Duration, acked, ce int, rtt time.Duration, _ float64, _ int) {
	if ce > 0 && now >= c.ceRoundEnd {
		c.event(now)
		c.ceRoundEnd = now + rtt
		return
	}
	if c.cwnd < c.ssthresh || !c.inEpoch {
		c.grow(acked)
		return
	}
	t := (now - c.epoch + rtt).Seconds() // §4.2: the target is W_cubic(t + RTT)
	target := c.WCubic(t)
	// §4.3: the Reno-friendly estimate.
	alpha := 3 * (1 - c.Beta) / (1 + c.Beta)
	c.wEst += alpha * c.mss * float64(acked) / c.cwnd
	target = max(target, c.wEst)
	// §4.4: cwnd grows by (target - cwnd) / cwnd per acked segment, at
	// most to 1.5 cwnd.
	target = min(max(target, c.cwnd), 1.5*c.cwnd)
	c.cwnd += (target - c.cwnd) / c.cwnd * float64(acked)
}

// event is a congestion event (§4.6, §4.7).
func (c *Cubic) event(now time.Duration) {
	w := c.cwnd
	if c.inEpoch && w < c.WMax {
		c.WMax = w * (1 + c.Beta) / 2 // fast convergence
	} else {
		c.WMax = w
	}
	c.cwnd = max(w*c.Beta, 2*c.mss)
	c.ssthresh = c.cwnd
	c.K = math.Cbrt(c.WMax / c.mss * (1 - c.Beta) / c.C)
	c.epoch, c.inEpoch, c.wEst = now, true, c.cwnd
}

// OnLoss implements CC.
func (c *Cubic) OnLoss(now time.Duration, _ int) { c.event(now) }

// OnRTO implements CC.
func (c *Cubic) OnRTO(now time.Duration) {
	c.event(now)
	c.cwnd = c.mss
}

// BBR phases.
const (
	BBRStartup = "startup"
	BBRDrain   = "drain"
	BBRProbeBW = "probe_bw"
)

// BBR is BBRv1's sender (draft-cardwell-iccrg-bbr-congestion-control-00).
type BBR struct {
	mss   float64
	State string
	// BtlBw (b/s) is the max filter of the delivery rate over the last 10
	// rounds; RTProp the least RTT seen.
	BtlBw     float64
	RTProp    time.Duration
	rates     []float64 // per round, the largest sample
	round     int
	roundEnd  time.Duration
	fullBw    float64
	fullCnt   int
	gain      float64
	cycle     int
	cycleEnd  time.Duration
	inflight  int
	cwndGain  float64
	probeGain [8]float64
}

func newBBR(mss float64) *BBR {
	g := 2 / math.Ln2
	return &BBR{mss: mss, State: BBRStartup, gain: g, cwndGain: g, rates: []float64{0},
		probeGain: [8]float64{1.25, 0.75, 1, 1, 1, 1, 1, 1}}
}

// Name implements CC.
func (*BBR) Name() string { return "bbr" }

// BDP is the estimated bandwidth-delay product, bytes.
func (b *BBR) BDP() float64 {
	if b.BtlBw == 0 || b.RTProp == 0 {
		return 10 * b.mss
	}
	return b.BtlBw / 8 * b.RTProp.Seconds()
}

// Cwnd implements CC: cwnd_gain x BDP (2 in ProbeBW), at least 4
// segments.
func (b *BBR) Cwnd() float64 {
	g := b.cwndGain
	if b.State == BBRProbeBW {
		g = 2
	}
	return max(g*b.BDP(), 4*b.mss)
}

// PacingBps implements CC.
func (b *BBR) PacingBps() float64 {
	if b.BtlBw == 0 {
		return 0
	}
	return b.gain * b.BtlBw
}

// OnAck implements CC.
func (b *BBR) OnAck(now time.Duration, acked, _ int, rtt time.Duration, rateBps float64, inflight int) {
	b.inflight = inflight
	if rtt > 0 && (b.RTProp == 0 || rtt < b.RTProp) {
		b.RTProp = rtt
	}
	newRound := false
	if now >= b.roundEnd {
		newRound = true
		b.round++
		b.roundEnd = now + max(rtt, time.Microsecond)
		b.rates = append(b.rates, 0)
		if len(b.rates) > 10 {
			b.rates = b.rates[1:]
		}
	}
	b.rates[len(b.rates)-1] = max(b.rates[len(b.rates)-1], rateBps)
	b.BtlBw = 0
	for _, r := range b.rates {
		b.BtlBw = max(b.BtlBw, r)
	}
	switch b.State {
	case BBRStartup:
		if newRound {
			// §4.3.2.2: full pipe when the bandwidth grew less than 25%
			// for three rounds.
			if b.BtlBw >= 1.25*b.fullBw {
				b.fullBw, b.fullCnt = b.BtlBw, 0
			} else if b.fullCnt++; b.fullCnt >= 3 {
				b.State, b.gain = BBRDrain, math.Ln2/2
			}
		}
	case BBRDrain:
		if float64(inflight) <= b.BDP() {
			b.enterProbeBW(now)
		}
	case BBRProbeBW:
		if now >= b.cycleEnd {
			b.cycle = (b.cycle + 1) % len(b.probeGain)
			b.gain = b.probeGain[b.cycle]
			b.cycleEnd = now + b.RTProp
		}
	}
}

func (b *BBR) enterProbeBW(now time.Duration) {
	b.State, b.cycle, b.cwndGain = BBRProbeBW, 2, 2
	b.gain = b.probeGain[b.cycle]
	b.cycleEnd = now + b.RTProp
}

// OnLoss implements CC: BBRv1 does not take a loss as a signal.
func (b *BBR) OnLoss(time.Duration, int) {}

// OnRTO implements CC: the model keeps its estimates (BBRv1 restores
// cwnd from them once the timeout's retransmission is acknowledged).
func (b *BBR) OnRTO(time.Duration) {}
