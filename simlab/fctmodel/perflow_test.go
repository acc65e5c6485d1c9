package fctmodel

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"testbed/simlab/lgmodel"
)

func perFlow(t *testing.T, mode lgmodel.Mode, loss float64, flow int) Config {
	t.Helper()
	c, err := Defaults(TCP, mode, loss, flow)
	if err != nil {
		t.Fatal(err)
	}
	c.PerFlow = true
	return c
}

// A lossless new connection: fct1 is the data segment's round trip with
// an immediate (quick) ACK, the handshake before it and outside it.
func TestPerFlowLossless(t *testing.T) {
	m, err := New(perFlow(t, lgmodel.Off, 0, 143), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	a, b := m.Trial(), m.Trial()
	if a.FCT != b.FCT || a.Connect != b.Connect {
		t.Fatalf("two lossless new connections differ: %+v %+v", a, b)
	}
	if a.Retransmits != 0 || a.Timeouts != 0 {
		t.Fatalf("lossless trial retransmitted: %+v", a)
	}
	// The handshake takes a round trip plus the stack's way to the
	// application and back; fct1 is one round trip, not two.
	if a.Connect < a.FCT {
		t.Fatalf("connect %v shorter than fct1 %v", a.Connect, a.FCT)
	}
	p, _ := New(func() Config { c, _ := Defaults(TCP, lgmodel.Off, 0, 143); return c }(), rand.New(rand.NewPCG(1, 2)))
	if pt := p.Trial(); a.FCT >= pt.FCT {
		t.Fatalf("fct1 %v is not below the persistent request/response FCT %v (no answer, no wake-up)", a.FCT, pt.FCT)
	}
	t.Logf("lossless: fct1 %v, connect %v", a.FCT, a.Connect)
}

// Every SYN lost once: the client sends it again after TCP_TIMEOUT_INIT
// (1 s); the connection gets no RTT sample (Karn), so a data loss then
// waits for the 3 s fallback RTO.
func TestPerFlowSYNLoss(t *testing.T) {
	c := perFlow(t, lgmodel.Off, 0, 143)
	c.Step = true
	lost := 0
	c.Forward.FrameLoss = func(b int) float64 {
		if b == c.TCP.SynBytes {
			return 0.5
		}
		return 0
	}
	m, err := New(c, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	var synLost, clean Trial
	for range 200 {
		tr := m.Trial()
		switch tr.Timeouts {
		case 0:
			clean = tr
		case 1: // lost once; more losses back off to 2 s, 4 s, ...
			synLost = tr
			lost++
		case 2:
			if d := tr.Connect - clean.Connect; d < 2990*time.Millisecond || d > 3100*time.Millisecond {
				t.Fatalf("two lost SYNs delayed the connection by %v, want 1 s + 2 s", d)
			}
		}
	}
	if lost == 0 || synLost.Connect == 0 {
		t.Fatal("no SYN was lost at a SYN loss of 0.5")
	}
	if d := synLost.Connect - clean.Connect; d < 990*time.Millisecond || d > 1100*time.Millisecond {
		t.Fatalf("a lost SYN delayed the connection by %v, want TCP_TIMEOUT_INIT (1 s) plus a tick", d)
	}
	if synLost.FCT != clean.FCT {
		t.Fatalf("fct1 %v includes the handshake (clean %v)", synLost.FCT, clean.FCT)
	}
	if synLost.ClientRetransmits == 0 || synLost.ClientSynRetransmits != synLost.ClientRetransmits {
		t.Fatalf("a SYN sent again: %d retransmissions, %d of them SYNs", synLost.ClientRetransmits, synLost.ClientSynRetransmits)
	}
}

// At a per-frame drop of 1e-2, the affected new connections recover by
// the loss probe or RTO at the 1 ms rto_min's tick; LinkGuardian repairs
// them in microseconds.
func TestPerFlowAffected(t *testing.T) {
	for _, tc := range []struct {
		mode     lgmodel.Mode
		min, max time.Duration
	}{{lgmodel.Off, time.Millisecond, 3 * time.Millisecond}, {lgmodel.Ordered, 0, 60 * time.Microsecond}} {
		m, err := New(perFlow(t, tc.mode, 1e-2, 143), rand.New(rand.NewPCG(5, 6)))
		if err != nil {
			t.Fatal(err)
		}
		tr := m.Run(20_000)
		base := slices.MinFunc(tr, func(a, b Trial) int { return int(a.FCT - b.FCT) }).FCT
		var slow []time.Duration
		for _, x := range tr {
			if x.FCT > base+10*time.Microsecond {
				slow = append(slow, x.FCT)
			}
		}
		slices.Sort(slow)
		switch tc.mode {
		case lgmodel.Off:
			if len(slow) < 100 || len(slow) > 350 {
				t.Fatalf("off: %d of 20000 trials slow at 1e-2 (one data frame per flow)", len(slow))
			}
			if med := slow[len(slow)/2]; med < tc.min || med > tc.max {
				t.Fatalf("off: affected median %v not in [%v, %v]", med, tc.min, tc.max)
			}
		default:
			if len(slow) > 0 && slow[len(slow)-1] > tc.max {
				t.Fatalf("%v: slowest %v above %v", tc.mode, slow[len(slow)-1], tc.max)
			}
		}
	}
}

// Interrupt coalescing spreads the lossless FCT over [base, base + 2
// periods] with the mean at base + one period; without it a lossless run
// has a single FCT.
func TestRxCoalesceJitter(t *testing.T) {
	c := perFlow(t, lgmodel.Off, 0, 143)
	base, _ := New(c, rand.New(rand.NewPCG(7, 8)))
	b := base.Trial().FCT
	c.Host.RxCoalesce = 8 * time.Microsecond
	m, err := New(c, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatal(err)
	}
	const n = 20_000
	var sum time.Duration
	lo, hi := time.Hour, time.Duration(0)
	for range n {
		f := m.Trial().FCT
		sum += f
		lo, hi = min(lo, f), max(hi, f)
	}
	mean := sum / n
	if lo < b || hi > b+16*time.Microsecond || hi-lo < 14*time.Microsecond {
		t.Fatalf("FCTs in [%v, %v], base %v, period 8us", lo, hi, b)
	}
	if d := mean - b - 8*time.Microsecond; d < -200*time.Nanosecond || d > 200*time.Nanosecond {
		t.Fatalf("mean %v, want base %v + 8us", mean, b)
	}
}

// A 24,387 B flow on a new connection: the initial window (10 segments),
// then the rest once the first ACKs come back; the last segment's ACK,
// owed after the connection's quick ACKs ran out, goes with the
// server's FIN when it reads the end of the stream. Nothing is sent
// twice and fct1 is two round trips and the server's close.
func TestPerFlowMultiSegmentLossless(t *testing.T) {
	m, err := New(perFlow(t, lgmodel.Off, 0, 24387), rand.New(rand.NewPCG(9, 10)))
	if err != nil {
		t.Fatal(err)
	}
	one, _ := New(perFlow(t, lgmodel.Off, 0, 143), rand.New(rand.NewPCG(9, 10)))
	rtt := one.Trial().FCT
	for range 3 {
		tr := m.Trial()
		if tr.Retransmits != 0 || tr.Probes != 0 || tr.Timeouts != 0 {
			t.Fatalf("lossless 24,387 B flow retransmitted: %+v", tr)
		}
		if tr.FCT < 2*rtt || tr.FCT > 4*rtt {
			t.Fatalf("fct1 %v, want two round trips (%v each) and the server's close", tr.FCT, rtt)
		}
	}
}
