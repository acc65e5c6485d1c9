package lgmodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	lg "testbed/p4/linkguardian"
)

// stuckStress is a stress test of n frames without ackNoTimeout
// (NoTimeout) at loss with the given copies: with none (the multicast
// group of the copies missing) the first corrupted original is a hole for
// good; with some, the first whose copies are all lost too. keepAll: the
// receiver forgets nothing; lookAll: it looks for what to forget at every
// entry added.
func stuckStress(t testing.TB, mode Mode, loss float64, copies int, n int64, seed uint64, keepAll, lookAll bool) *Sim {
	t.Helper()
	c, err := Defaults(mode, 100e9, loss, n)
	if err != nil {
		t.Fatal(err)
	}
	c.NoTimeout, c.Copies = true, copies
	m, err := New(c, rand.New(rand.NewPCG(seed, 7)))
	if err != nil {
		t.Fatal(err)
	}
	m.s.keepAll, m.s.lookAll = keepAll, lookAll
	m.Advance(math.MaxInt64)
	return m
}

func (s *sim) recordEntries() int { return len(s.holes) + len(s.delivered) + len(s.givenUp) }

// A stress test stuck behind a hole for good: in the non-blocking mode
// every original delivered around it was noted, in the ordered mode every
// original the full reorder buffer dropped was a hole, an entry per frame
// sent. What the receiver keeps now follows the link's flight.
func TestStuckRunKeepsItsRecordBounded(t *testing.T) {
	const n = 1 << 16
	for _, mode := range []Mode{NonBlocking, Ordered} {
		all := stuckStress(t, mode, 1e-3, 0, n, 1, true, false)
		if k := all.s.recordEntries(); k < n/2 {
			t.Fatalf("%s: the case does not grow: %d entries kept of %d frames when keeping all", mode, k, n)
		}
		m := stuckStress(t, mode, 1e-3, 0, n, 1, false, false)
		s := m.s
		if !s.holes[s.ackNo] {
			t.Fatalf("%s: ackNo %d is not held by a hole", mode, s.ackNo)
		}
		if k := s.recordEntries(); k > 2*pruneMin {
			t.Fatalf("%s: %d entries kept (holes %d, delivered %d, given up %d) after %d frames stuck behind hole %d",
				mode, k, len(s.holes), len(s.delivered), len(s.givenUp), n, s.ackNo)
		}
		if m.Result() != all.Result() {
			t.Fatalf("%s: result %+v, keeping everything %+v", mode, m.Result(), all.Result())
		}
	}
	m := stuckOffered(t, 50_000, false)
	if k := m.s.recordEntries(); k > 2*pruneMin {
		t.Fatalf("offered: %d entries kept after 50000 frames stuck behind hole %d", k, m.s.ackNo)
	}
}

// What the receiver forgets changes nothing: stuck runs with copies on
// their way, late copies and holes filled behind the one that holds
// ackNo give the same results and deliveries as keeping everything, with
// the receiver looking for what to forget at every entry it adds.
func TestBoundedStuckRunSameAsKeepingAll(t *testing.T) {
	forgot := 0
	for _, mode := range []Mode{NonBlocking, Ordered} {
		for _, k := range []struct {
			loss   float64
			copies int
		}{{1e-3, 0}, {2e-2, 1}, {5e-2, 2}, {0.2, 3}} {
			for seed := uint64(1); seed <= 2; seed++ {
				name := fmt.Sprintf("%s loss %g copies %d seed %d", mode, k.loss, k.copies, seed)
				ma := stuckStress(t, mode, k.loss, k.copies, 1<<12, seed, true, false)
				mb := stuckStress(t, mode, k.loss, k.copies, 1<<12, seed, false, true)
				a, b := ma.Result(), mb.Result()
				forgot += ma.s.recordEntries() - mb.s.recordEntries()
				if a != b {
					t.Fatalf("%s: bounded %+v, keeping everything %+v", name, b, a)
				}
			}
		}
		// Frames offered one by one, mixed sizes, sometimes a gap
		// between them, the deliveries taken as they come.
		for seed := uint64(1); seed <= 2; seed++ {
			var got [2][]Delivery
			var res [2]Result
			var kept [2]int
			for i, keep := range []bool{true, false} {
				c, err := Defaults(mode, 100e9, 1e-2, 1)
				if err != nil {
					t.Fatal(err)
				}
				c.NoTimeout, c.Copies = true, 1
				m, err := NewOffered(c, rand.New(rand.NewPCG(seed, 3)))
				if err != nil {
					t.Fatal(err)
				}
				m.s.keepAll, m.s.lookAll = keep, !keep
				src := rand.New(rand.NewPCG(seed, 4))
				at := int64(0)
				for f := 0; f < 3_000; f++ {
					bytes := 64 + src.IntN(1455)
					at += int64(float64((bytes+20+lg.HeaderBytes)*8)/100e9*1e12) + int64(src.IntN(2))*50_000
					if _, err := m.Offer(Frame{At: at, Bytes: bytes, Loss: 0.03, U: -1}); err != nil {
						t.Fatal(err)
					}
					m.Advance(at)
					got[i] = m.Deliveries(got[i])
				}
				// Ordered, frames go round the reorder buffer behind the
				// hole for as long as the run is advanced: 1 ms more.
				m.Advance(at + 1_000_000_000)
				res[i], kept[i] = m.Result(), m.s.recordEntries()
				got[i] = m.Deliveries(got[i])
			}
			forgot += kept[0] - kept[1]
			if res[0] != res[1] || !slices.Equal(got[0], got[1]) {
				t.Fatalf("%s offered seed %d: bounded %+v (%d deliveries), keeping everything %+v (%d)", mode, seed, res[1], len(got[1]), res[0], len(got[0]))
			}
		}
	}
	if forgot == 0 {
		t.Fatal("nothing was forgotten: the cases do not get stuck")
	}
}

// The retransmission queue's head moves on along its array: a copy sent
// does not move the others down a place (that was quadratic in the
// queue's length), and once empty the queue starts again at the front of
// the array it has.
func TestRetxQueueMovesItsHead(t *testing.T) {
	var s sim
	for seq := range int64(8) {
		s.retx = append(s.retx, seq)
	}
	arr := s.retx[:cap(s.retx)]
	for want := range int64(8) {
		if got := s.popRetx(); got != want {
			t.Fatalf("popped %d, want %d", got, want)
		}
		if want < 7 && (arr[0] != 0 || len(s.retx) != int(7-want)) {
			t.Fatalf("after popping %d: array front %d, %d queued: the queue was moved down", want, arr[0], len(s.retx))
		}
	}
	if len(s.retx) != 0 || !sameArray(s.retx, arr) || &s.retx[:1][0] != &arr[0] {
		t.Fatalf("an emptied queue does not start again at its array's front")
	}
	// Pushed past its array's end, it moves to a new one and goes on.
	for seq := range int64(3) {
		s.retx = append(s.retx, 10+seq)
	}
	s.popRetx()
	for seq := range int64(20) {
		s.retx = append(s.retx, 20+seq)
	}
	want := append([]int64{11, 12}, func() (w []int64) {
		for seq := range int64(20) {
			w = append(w, 20+seq)
		}
		return
	}()...)
	for _, w := range want {
		if got := s.popRetx(); got != w {
			t.Fatalf("popped %d, want %d", got, w)
		}
	}
	if len(s.retx) != 0 {
		t.Fatalf("%d left", len(s.retx))
	}
}

// benchStuckStress runs stuckStress once per iteration (-benchmem: what a
// stuck run keeps and allocates per n frames).
//
//	go test -run XXX -bench StuckStress -benchmem ./simlab/lgmodel
func benchStuckStress(b *testing.B, mode Mode, keepAll bool) {
	for b.Loop() {
		stuckStress(b, mode, 1e-3, 0, 1<<18, 1, keepAll, false)
	}
}

func BenchmarkStuckStressNonBlocking(b *testing.B)        { benchStuckStress(b, NonBlocking, false) }
func BenchmarkStuckStressOrdered(b *testing.B)            { benchStuckStress(b, Ordered, false) }
func BenchmarkStuckStressNonBlockingKeepAll(b *testing.B) { benchStuckStress(b, NonBlocking, true) }
func BenchmarkStuckStressOrderedKeepAll(b *testing.B)     { benchStuckStress(b, Ordered, true) }
