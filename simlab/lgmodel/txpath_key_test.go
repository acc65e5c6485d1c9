package lgmodel

import (
	"math"
	"slices"
	"testing"
)

// A stretch's note (txpath_memo.go) is keyed by the accounting's state
// relative to where it stands (a, after advanceToJump) and by the offset
// from a to the stretch's first input: the state alone does not say when
// the inputs come. In the model's runs the sender's copies still to send
// imply the offset, so the runs never meet two stretches that differ in
// it alone; here two do. A steady sender and receiver (so the jumps land
// short of the stretch, advanceToJump) are followed by the same recorded
// stretch, the second time a whole number of courier loops later and
// delta picoseconds further from where the jump lands. Replayed through a
// memo the first one filled, the second must end where deciding every
// copy ends it.
func TestTxPathStretchNoteKeepsItsOffset(t *testing.T) {
	const (
		slot    = 125_000   // 100G-like: a frame every 125 ns
		courier = 1_000_000 // eight slots: K slots later is the same phase
		back    = 1_600_000
		n0      = 4_000 // the stretch's first original
		K       = 800   // the second stretch K originals and slots later
	)
	newPath := func() (*sim, *txPath) {
		p := &txPath{courier: courier, back: back, loop: 1_000_000, drain: slot, read: slot, copyBytes: 1,
			leastFloor: math.MinInt64}
		return &sim{tp: p}, p
	}
	// The stretch's inputs, relative to its first original and time: a
	// burst of copies and their arrivals at another phase, a step. (Its
	// notes are kept on it: a new one for each delta.)
	var rec *recording
	newRec := func() *recording {
		return &recording{tlog: []tpEntry{
			{kind: tpSend, at: 40_000, seq: 0, slot: slot, n: 24},
			{kind: tpRx, at: 700_000, seq: -30},
			{kind: tpRxRun, at: 40_000, t0: 40_000 + 3*slot + 700_000, seq: 0, slot: slot, n: 24},
		}}
	}
	// run feeds the steady stretch up to the stretch's first original
	// (shifted k originals), the stretch at t0, and decides up to the end.
	run := func(p *txPath, s *sim, k, delta int64) []int64 {
		steady := int64(n0 + k)
		s.tpInput(tpEntry{kind: tpSend, at: 0, seq: 0, slot: slot, n: steady})
		s.tpInput(tpEntry{kind: tpRxRun, at: 0, t0: slot + 700_000, seq: 0, slot: slot, n: steady})
		t0 := steady*slot + 60_000 + delta
		t1 := t0 + 30*slot
		s.tpReplay(rec, steady, t0, steady, t0, t1)
		p.advance(t1 - 1)
		q := p.appendQueues([]int64{p.now - t0, p.maxQ}, steady, t0)
		p.advance(t1 + 20*courier)
		return append(q, p.now-t0, p.maxQ, p.base-steady)
	}
	for _, delta := range []int64{0, 37_000, 90_000} {
		rec = newRec()
		s1, p1 := newPath()
		run(p1, s1, 0, 0)
		if p1.memoMisses != 1 || p1.stops != 1 {
			t.Fatalf("delta %d: the first stretch noted %d times, from where a jump landed %d times: the case does not exercise the note", delta, p1.memoMisses, p1.stops)
		}
		s2, p2 := newPath()
		p2.memoBytes = p1.memoBytes // the first stretch's note is on rec
		got := run(p2, s2, K, delta)
		s3, p3 := newPath()
		p3.noMemo = true
		want := run(p3, s3, K, delta)
		if !slices.Equal(got, want) {
			t.Errorf("delta %d: the second stretch through the memo ends %v, deciding every copy %v", delta, got, want)
		}
		if delta == 0 && p2.memoHits != 1 || delta != 0 && p2.memoHits != 0 {
			t.Errorf("delta %d: the second stretch met the first's note %d times", delta, p2.memoHits)
		}
	}
}

// sameInts, which compares the accounting's keys and states as bytes, is
// slices.Equal: a difference in any number, in any of its bytes, or in
// the length is found.
func TestSameIntsIsSlicesEqual(t *testing.T) {
	for n := 0; n <= 40; n++ {
		a := make([]int64, n)
		for i := range a {
			a[i] = int64(i*i) - 300
		}
		if !sameInts(a, slices.Clone(a)) {
			t.Fatalf("%d numbers: a copy differs", n)
		}
		if sameInts(a, append(slices.Clone(a), 0)) || sameInts(append(slices.Clone(a), 0), a) {
			t.Errorf("%d numbers: the same with one more", n)
		}
		for i := range a {
			for _, bit := range []uint{0, 17, 40, 63} {
				b := slices.Clone(a)
				b[i] ^= int64(1) << bit
				if sameInts(a, b) || sameInts(b, a) {
					t.Errorf("%d numbers: number %d with bit %d flipped found the same", n, i, bit)
				}
			}
		}
	}
}

// A way on's note is handed to the jumper as it is, not copied
// (presetJump, sharePrev), and must never be written: not by a build-up's
// end installed after it (setPrev), even one shorter than the note, nor
// by the next state noted in the storage a note just noted hands back
// (swapPrev, then stateAt's writes), however many notes were handed over
// before.
func TestTxPathJumperNeverWritesAWayOnsNote(t *testing.T) {
	note := []int64{11, 12, 13, 14, 15, 16, 17, 18}[:8:8]
	other := []int64{21, 22, 23, 24, 25, 26}[:6:6]
	want, wantOther := slices.Clone(note), slices.Clone(other)
	check := func(step string) {
		t.Helper()
		if !slices.Equal(note, want) || !slices.Equal(other, wantOther) {
			t.Fatalf("%s: the notes handed to the jumper are now %v and %v, were %v and %v", step, note, other, want, wantOther)
		}
	}
	j := tpJumper{prev: make([]int64, 0, 32), snap: make([]int64, 0, 32)}
	j.sharePrev(note)
	j.setPrev([]int64{1, 2, 3})
	check("a build-up's end installed after one")
	if !slices.Equal(j.prev, []int64{1, 2, 3}) {
		t.Errorf("the build-up's end installed is %v", j.prev)
	}
	j.sharePrev(other)
	j.sharePrev(note)
	j.setPrev([]int64{4, 5})
	check("a build-up's end installed after two")
	j.sharePrev(note)
	state := append(j.snap[:0], 7, 7, 7)
	j.swapPrev(state)
	j.snap = append(j.snap[:0], 9, 9, 9, 9, 9) // the next state noted (stateAt), as short as fits in a note
	check("a state noted after one, and the next")
	if !slices.Equal(j.prev, []int64{7, 7, 7}) {
		t.Errorf("the state noted is %v", j.prev)
	}
}

// modCourier, the courier's phase of a time, is the Euclidean remainder
// ((x%c)+c)%c, for times on either side of zero and of every multiple.
func TestModCourierIsTheRemainder(t *testing.T) {
	for _, c := range []int64{1, 7, 1_000_000, 1_000_003} {
		for _, base := range []int64{0, c, -c, 5 * c, -5 * c, 1 << 40, -(1 << 40)} {
			for d := int64(-3); d <= 3; d++ {
				x := base + d
				if got, want := modCourier(x, c), ((x%c)+c)%c; got != want {
					t.Errorf("modCourier(%d, %d) = %d, want %d", x, c, got, want)
				}
			}
		}
	}
}
