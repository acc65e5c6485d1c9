package lgmodel

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	lg "testbed/p4/linkguardian"
)

func newOffered(t *testing.T, mode Mode, loss float64) *Sim {
	t.Helper()
	c, err := Defaults(mode, 100e9, loss, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewOffered(c, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// drain runs m until it settles and returns its deliveries.
func drain(t *testing.T, m *Sim) []Delivery {
	t.Helper()
	var out []Delivery
	for i := 0; m.NextAt() != math.MaxInt64; i++ {
		if i > 100_000 {
			t.Fatal("run does not settle")
		}
		m.Advance(m.NextAt())
		out = m.Deliveries(out)
	}
	return out
}

func offer(t *testing.T, m *Sim, f Frame) int64 {
	t.Helper()
	seq, err := m.Offer(f)
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

func TestOfferedFrameCrossesInItsOwnTime(t *testing.T) {
	for _, mode := range []Mode{Off, Ordered, NonBlocking} {
		m := newOffered(t, mode, 1e-3)
		at := int64(5_000_000) // 5 us
		if seq := offer(t, m, Frame{At: at, Bytes: 213, Loss: 1e-3, U: 1}); seq != 0 {
			t.Fatalf("%s: first seq %d", mode, seq)
		}
		d := drain(t, m)
		hdr := lg.HeaderBytes
		if mode == Off {
			hdr = 0
		}
		// Serialization at 100G (with preamble, gap and header), a switch pass, the fibre.
		want := at + int64((213+20+hdr)*8*10) + 1_000_000 + 10_000
		if len(d) != 1 || d[0].Seq != 0 || d[0].At != want {
			t.Fatalf("%s: deliveries %+v, want seq 0 at %d", mode, d, want)
		}
		if !m.Quiet() {
			t.Fatalf("%s: not quiet after the frame crossed", mode)
		}
	}
}

func TestOfferedCorruptionIsRepairedWithinTheRetransmissionDelay(t *testing.T) {
	maxRetx, _ := lg.MaxRetxDelay(100e9)
	for _, mode := range []Mode{Ordered, NonBlocking} {
		m := newOffered(t, mode, 1e-3)
		offer(t, m, Frame{At: 0, Bytes: 213, Loss: 1e-3, U: 0}) // corrupted on the wire
		d := drain(t, m)
		r := m.Result()
		if len(d) != 1 || r.Copies != 2 || r.Lost != 0 {
			t.Fatalf("%s: deliveries %+v, result %+v", mode, d, r)
		}
		clean := int64((213+20+lg.HeaderBytes)*8*10) + 1_010_000
		extra := d[0].At - clean
		t.Logf("%s: repaired %d ps after a clean crossing", mode, extra)
		// Found by the dummy behind it, repaired by a copy: more than a
		// round trip across the link, within the longest delay measured.
		if extra < 2_000_000 || extra > int64(maxRetx)*1000 {
			t.Fatalf("%s: repaired %d ps after a clean crossing, want within (2 us, %v]", mode, extra, maxRetx)
		}
		if !m.Quiet() {
			t.Fatalf("%s: not quiet", mode)
		}
	}
	m := newOffered(t, Off, 1e-3)
	offer(t, m, Frame{At: 0, Bytes: 213, Loss: 1e-3, U: 0})
	if d := drain(t, m); len(d) != 0 || m.Result().Lost != 1 {
		t.Fatalf("off: a corrupted frame was delivered: %+v", d)
	}
}

// Five back-to-back frames, the second corrupted: the ordered mode holds
// the rest until the copy arrives, the non-blocking mode lets them pass.
func TestOfferedOrderAfterACorruption(t *testing.T) {
	for _, mode := range []Mode{Ordered, NonBlocking} {
		m := newOffered(t, mode, 1e-3)
		for i := 0; i < 5; i++ {
			u := 1.0
			if i == 1 {
				u = 0
			}
			offer(t, m, Frame{At: 0, Bytes: 1518, Loss: 1e-3, U: u})
		}
		d := drain(t, m)
		var seqs []int64
		for _, x := range d {
			seqs = append(seqs, x.Seq)
		}
		want := []int64{0, 1, 2, 3, 4}
		if mode == NonBlocking {
			want = []int64{0, 2, 3, 4, 1}
		}
		if !slices.Equal(seqs, want) {
			t.Fatalf("%s: delivered in order %v, want %v", mode, seqs, want)
		}
		if mode == Ordered && d[2].At < d[1].At {
			t.Fatalf("ordered: frame 2 left before the repaired frame 1: %+v", d)
		}
	}
}

// When every copy is corrupted too, ackNoTimeout gives the hole up and the
// ordered mode releases what waited behind it.
func TestOfferedHoleGivenUp(t *testing.T) {
	m := newOffered(t, Ordered, 1e-3) // the dummies get through
	offer(t, m, Frame{At: 0, Bytes: 1518, Loss: 0.999999, U: 0})
	offer(t, m, Frame{At: 0, Bytes: 1518, Loss: 0.999999, U: 1})
	d := drain(t, m)
	r := m.Result()
	if len(d) != 1 || d[0].Seq != 1 || r.Timeouts != 1 || r.Lost != 1 {
		t.Fatalf("deliveries %+v, result %+v", d, r)
	}
	timeout, _ := lg.AckNoTimeout(100e9)
	if d[0].At < int64(timeout)*1000 {
		t.Fatalf("frame 1 left at %d ps, before ackNoTimeout %v", d[0].At, timeout)
	}
}

func TestOfferRejectsTheBadAndThePast(t *testing.T) {
	m := newOffered(t, Ordered, 1e-3)
	offer(t, m, Frame{At: 1_000_000, Bytes: 100, Loss: 0, U: -1})
	for _, f := range []Frame{
		{At: 999_999, Bytes: 100},  // before the last offer
		{At: 2_000_000, Bytes: 63}, // runt
		{At: 2_000_000, Bytes: 100, Loss: 1},
		{At: 2_000_000, Bytes: 100, U: math.NaN()},
	} {
		if _, err := m.Offer(f); err == nil {
			t.Errorf("offer %+v accepted", f)
		}
	}
	c, _ := Defaults(Ordered, 100e9, 1e-3, 10)
	s, _ := New(c, rand.New(rand.NewPCG(1, 1)))
	if _, err := s.Offer(Frame{Bytes: 100}); err == nil {
		t.Error("a stress test accepted an offer")
	}
}

// benchOffered offers n MTU frames back to back at the link's rate and
// runs them through, taking the deliveries as it goes, as tcpmodel does
// with a flow's segments. Its B/op (-benchmem) is what a run keeps and
// allocates per n frames: what it keeps for copies (offered.info) grew
// with every frame an unprotected run sent.
//
//	go test -run XXX -bench Offered -benchmem ./simlab/lgmodel
func benchOffered(b *testing.B, mode Mode, n int) {
	c, err := Defaults(mode, 100e9, 1e-3, 1)
	if err != nil {
		b.Fatal(err)
	}
	const frame = 1518
	gap := int64(math.Ceil(float64((frame+20+lg.HeaderBytes)*8) / 100e9 * 1e12)) // ps per frame at line rate
	var dels []Delivery
	for i := 0; i < b.N; i++ {
		m, err := NewOffered(c, rand.New(rand.NewPCG(1, uint64(i))))
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for k := 0; k < n; k++ {
			at := int64(k) * gap
			if _, err := m.Offer(Frame{At: at, Bytes: frame, Loss: 1e-3, U: -1}); err != nil {
				b.Fatal(err)
			}
			m.Advance(at)
			dels = m.Deliveries(dels[:0])
			got += len(dels)
		}
		for m.NextAt() != math.MaxInt64 {
			m.Advance(m.NextAt())
			dels = m.Deliveries(dels[:0])
			got += len(dels)
		}
		if got == 0 {
			b.Fatal("nothing delivered")
		}
	}
}

func BenchmarkOffered100GOff(b *testing.B)     { benchOffered(b, Off, 1<<18) }
func BenchmarkOffered100GOrdered(b *testing.B) { benchOffered(b, Ordered, 1<<16) }

// stuckOffered is a non-blocking run without ackNoTimeout (NoTimeout)
// whose first original and its one copy are lost (a hole nothing will
// ever fill, so ackNo waits below it for good), then n frames offered
// back to back, lossless; all offered up front (ahead) or one at a time.
func stuckOffered(t testing.TB, n int, ahead bool) *Sim {
	c, err := Defaults(NonBlocking, 100e9, 1e-3, 1)
	if err != nil {
		t.Fatal(err)
	}
	c.NoTimeout = true
	m, err := NewOffered(c, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	const frame = 1518
	gap := int64(math.Ceil(float64((frame+20+lg.HeaderBytes)*8) / 100e9 * 1e12))
	var dels []Delivery
	for k := 0; k < n; k++ {
		f := Frame{At: int64(k) * gap, Bytes: frame}
		if k == 0 {
			f.Loss = 1 - 1e-12 // the original (U 0) and, all but surely, its copy
		}
		if _, err := m.Offer(f); err != nil {
			t.Fatal(err)
		}
		if !ahead {
			m.Advance(f.At)
			dels = m.Deliveries(dels[:0])
		}
	}
	for m.NextAt() != math.MaxInt64 {
		m.Advance(m.NextAt())
		dels = m.Deliveries(dels[:0])
	}
	return m
}

// Without ackNoTimeout a hole whose copies are all lost holds ackNo for
// good: what the run keeps for copies (offered.info) was trimmed at ackNo,
// and grew by an entry per frame sent after it. A copy is made only of an
// original the receiver has not yet seen past, or one a notification or
// the retransmission queue names: what is kept follows the flight.
func TestOfferedKeepsCopiesInfoBoundedWithoutTimeout(t *testing.T) {
	const n = 50_000
	m := stuckOffered(t, n, false)
	s := m.s
	if s.ackNo != 0 || !s.holes[0] || m.Result().Delivered != n-1 {
		t.Fatalf("the case is not a hole held for good: ackNo %d, holes %v, delivered %d of %d", s.ackNo, s.holes[0], m.Result().Delivered, n)
	}
	if k := len(s.off.info); k > 1024 {
		t.Fatalf("%d frames' info kept for copies after %d frames, none of which can still be copied", k, n)
	}
}

// benchStuck runs stuckOffered once per iteration: with the offers made
// one at a time (-benchmem: what the stuck run keeps per n frames), or
// all made before the run starts, a queue n long taken from its head (it
// was moved down a frame at each take: n*n/2 frames copied).
//
//	go test -run XXX -bench 'OfferedStuck|OfferedAhead' -benchmem ./simlab/lgmodel
func benchStuck(b *testing.B, n int, ahead bool) {
	for i := 0; i < b.N; i++ {
		stuckOffered(b, n, ahead)
	}
}

func BenchmarkOfferedStuckNoTimeout(b *testing.B) { benchStuck(b, 1<<17, false) }
func BenchmarkOfferedAhead(b *testing.B)          { benchStuck(b, 1<<15, true) }
