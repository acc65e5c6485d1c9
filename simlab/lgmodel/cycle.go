package lgmodel

import "slices"

// Exact skip-ahead over repeating stretches.
//
// After a repaired loss the ordered mode's reorder buffer need not empty:
// at 100G it drains through the recirculation port exactly as fast as
// frames arrive, so it keeps K frames in order (K+1 just after an arrival)
// until the next corruption; at 25G its frames settle in a rotation where
// each delivery takes a few passes of the loop. Either way nothing changes
// from one frame to the next but the sequence numbers and the time: the
// whole state (sender, receiver, buffer, the events in flight) repeats,
// shifted by P originals and D picoseconds, without drawing a random
// number. Such a stretch is deterministic, so it is jumped over in whole
// cycles up to the next corruption (the countdown s.gap), the end of the
// traffic or the time asked for, and every counter grows by its growth in
// one cycle times the cycles jumped.
//
// Detection is exact and checks each repetition as it happens. Before
// each original is sent while the state is cycleable, a hash of a few
// shift-free quantities (the buffer's order among them: at 25G the loop's
// rotation reshuffles it from one original to the next) is kept with a
// mark; the last cycleRing marks are kept. When the hash matches that of a
// mark, the whole state is encoded relative to (nextSeq, now), kept with
// the new mark, and compared with the encodings kept with the matching
// marks, latest first (the shortest period): the first identical one, with
// no random number drawn since, is a cycle. A state whose hash matches no
// mark is not encoded; at 25G the hash repeats within the period of the
// rotation often enough that its marks are encoded before it repeats, so
// the cycle is mostly found one period after the state first repeated.
// (Proposing a period on a matching hash and checking it one period later
// instead spent about 600,000 of the 1.55 million originals stepped in
// 10^7 at 25G and 1e-3 waiting on proposals that failed.)
// Config.NoCycleSkip turns this off, and a test holds both to identical
// results.

const cycleRing = 64 // the longest period looked for, in originals

// cycleMark is the state before an original was sent.
type cycleMark struct {
	hash    uint64
	seq, at int64
	res     Result
	covered int64
	run     int64 // runStart
	free    int64 // freeDraws
	enc     []int64
	encoded bool // enc holds the state
}

type cycles struct {
	// cycleRing marks, made on first use. (Held in sim itself they
	// spread its other fields over 13 KB: the non-blocking mode, which
	// hardly uses them, ran 10% slower.)
	ring    []cycleMark
	n, next int // marks held, the next slot
	// count holds how many marks have each value of their hash's low
	// byte: most states match none, and skip the look through the marks.
	count     [256]uint8
	draws     int64 // the marks' draws and corruptions
	corrupted int64
	cur       []int64 // the state now, encoded (swapped into the ring)
	// The state a found cycle starts from, one period ago.
	aSeq, aAt  int64
	aRes       Result
	aCovered   int64
	aRunStart  int64
	aFree      int64
	jumpedSeqs int64 // originals jumped over (for tests)
}

// cycleable: the state holds nothing the encoding leaves out. Pending
// timeouts are then all spent (their holes are gone, and no hole can
// reopen below the highest original seen): they change nothing when due.
func (s *sim) cycleable() bool {
	return !s.c.Step && !s.c.NoCycleSkip && s.off == nil && s.c.Mode != Off && s.gap > 0 &&
		len(s.holes) == 0 && len(s.retx) == 0 && s.undetected == 0 && s.notifPending == 0 &&
		s.idleFrom < 0 && len(s.delivered) == 0 && len(s.givenUp) == 0 && len(s.txDropped) == 0 && len(s.held) == 0
}

// cycle is called before an original is sent at s.now.
func (s *sim) cycle(until int64) {
	c := &s.cyc
	if !s.cycleable() {
		c.clear()
		return
	}
	if s.draws-s.freeDraws != c.draws || s.res.Corrupted-s.freeLost != c.corrupted {
		c.clear()
		c.draws, c.corrupted = s.draws-s.freeDraws, s.res.Corrupted-s.freeLost
	}
	if c.ring == nil {
		c.ring = make([]cycleMark, cycleRing)
	}
	h := s.shape()
	encoded := false
	for j := 1; j <= c.n && c.count[uint8(h)] > 0; j++ {
		m := &c.ring[(c.next-j+cycleRing)%cycleRing]
		if m.hash != h {
			continue
		}
		if !encoded {
			c.cur, encoded = s.encode(c.cur[:0]), true
		}
		if m.encoded && slices.Equal(m.enc, c.cur) && s.paceRepeats(m) {
			c.aSeq, c.aAt, c.aRes, c.aCovered, c.aRunStart, c.aFree = m.seq, m.at, m.res, m.covered, m.run, m.free
			if s.rec != nil && m.seq < s.rec.start.nextSeq {
				// A mark made before the recording (at a checkpoint):
				// the cycle holds what the sender did before it,
				// compared with the generator unseen (replay.go made).
				s.rec.phased = true
			}
			if s.rec != nil && !s.slackBound(until) {
				s.finishRecording(true)
			}
			s.cycleFound(until)
			return
		}
	}
	s.mark(h, encoded)
}

// mark keeps the state now as the latest mark, with its encoding in c.cur
// if encoded.
func (s *sim) mark(h uint64, encoded bool) {
	c := &s.cyc
	m := &c.ring[c.next]
	if c.n == cycleRing {
		c.count[uint8(m.hash)]-- // the oldest mark leaves
	}
	c.count[uint8(h)]++
	enc := m.enc
	*m = cycleMark{hash: h, seq: s.nextSeq, at: s.now, res: s.res, covered: s.covered, run: s.runStart, free: s.freeDraws, enc: enc, encoded: encoded}
	if encoded {
		m.enc, c.cur = c.cur, enc
	}
	c.next = (c.next + 1) % cycleRing
	c.n = min(c.n+1, cycleRing)
}

// clear drops the marks.
func (c *cycles) clear() {
	if c.n > 0 {
		c.n = 0
		c.count = [256]uint8{}
	}
}

// cycleFound: the state now repeats the state at c.aSeq, one cycle on.
func (s *sim) cycleFound(until int64) {
	c := &s.cyc
	if c.ring == nil {
		c.ring = make([]cycleMark, cycleRing)
	}
	s.jump(until)
	// The marks were made before the jump. A jump cut short by the time
	// asked for leaves the state a whole number of cycles on: it is the
	// first mark, so that the next Advance resumes jumping one cycle on.
	c.clear()
	c.cur = s.encode(c.cur[:0])
	s.mark(s.shape(), true)
}

// shape hashes a few quantities that repeat when the state does.
func (s *sim) shape() uint64 {
	n, t := s.nextSeq, s.now
	h := uint64(14695981039346656037)
	mix := func(v int64) {
		h ^= uint64(v)
		h *= 1099511628211
	}
	mix(s.slotFree - t)
	mix(s.senderAck - n)
	mix(s.ackNo - n)
	mix(s.highest - n)
	mix(s.bufBytes)
	mix(int64(s.buf.n))
	mix(int64(s.flight.n))
	mix(s.buf.order(n))
	if s.flight.n > 0 {
		mix(s.flight.at(0).seq - n)
	}
	mix(int64(s.pendingBP))
	if s.paused {
		mix(1)
	}
	if s.bpPaused {
		mix(2)
	}
	for i := range s.q {
		if i == qTimeout {
			continue
		}
		f := &s.q[i]
		mix(int64(f.len()))
		if f.len() > 0 {
			mix(f.ev[f.head].at - t)
		}
	}
	return h
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// encode appends the whole state relative to (nextSeq, now) and to the
// events scheduled so far (ties between events go by scheduling order).
// Spent timeouts are left out; covered matters only through whether the
// latest original has been announced.
func (s *sim) encode(dst []int64) []int64 {
	n, t := s.nextSeq, s.now
	dst = append(dst, s.slotFree-t, s.senderAck-n, s.lackSent-n, s.ackNo-n, s.highest-n, b2i(s.covered == n-1),
		s.bufBytes, b2i(s.draining), b2i(s.bpPaused), b2i(s.paused), int64(s.pendingBP), int64(s.buf.n))
	dst = s.buf.encode(dst, n)
	dst = append(dst, int64(s.flight.n), s.flightB)
	dst = s.flight.encode(dst, n)
	for i := range s.q {
		if i == qTimeout {
			continue
		}
		f := &s.q[i]
		dst = append(dst, int64(f.len()))
		for j := f.head; j < len(f.ev); j++ {
			e := &f.ev[j]
			seq := e.seq
			if e.kind == evAck {
				seq -= n
			}
			pseq := e.p.seq - n
			if e.kind != evArrive {
				pseq = 0
			}
			dst = append(dst, e.at-t, e.sched-t, int64(s.nev-e.idx), int64(e.kind), seq, int64(e.n), b2i(e.handled), int64(e.mask),
				int64(e.p.kind), pseq, int64(e.p.bytes), b2i(e.p.lost), e.p.run)
		}
	}
	return dst
}

// encode appends the frames, 3 numbers each, their sequence numbers
// relative to n.
func (d *deque) encode(dst []int64, n int64) []int64 {
	for i, k := d.head, 0; k < d.n; i, k = i+1, k+1 {
		if i == len(d.a) {
			i = 0
		}
		p := &d.a[i]
		dst = append(dst, p.seq-n, int64(p.kind)|b2i(p.lost)<<8|int64(p.bytes)<<9, p.run)
	}
	return dst
}

// order hashes the frames' sequence numbers relative to n, in order: at
// 25G the rotation of the loop shuffles them from one original to the next.
func (d *deque) order(n int64) int64 {
	var w int64
	for i, k := d.head, 0; k < d.n; i, k = i+1, k+1 {
		if i == len(d.a) {
			i = 0
		}
		w = w*31 + d.a[i].seq - n
	}
	return w
}

// cyclesToJump is how many cycles of p originals lasting d picoseconds
// jump takes from here, and whether a paced sender's slack (paceCycles)
// sets that: the sender catches up with the generator there, and what
// follows does not repeat (the reorder buffer drains while the sender
// keeps pace), so a recording (replay.go) goes on through the jump. (A
// jump is exact whatever its length, so a recording may hold one: its end
// is a state of the same path. One the countdown or the time asked for
// bounds ends the recording, as at line rate, and is jumped when replayed,
// as far as the replay's own countdown and time allow.)
func (s *sim) cyclesToJump(until, p, d int64) (int64, bool) {
	m := min(s.gap/p, (s.c.Frames-s.nextSeq-1)/p, (until-max(s.now, s.aheadAt))/d)
	pc := s.paceCycles(p, d)
	return min(m, pc), pc <= m
}

// slackBound: the jump from the cycle just found is set by the paced
// sender's slack (cyclesToJump).
func (s *sim) slackBound(until int64) bool {
	c := &s.cyc
	p, d := s.nextSeq-c.aSeq, s.now-c.aAt
	if p <= 0 || d <= 0 {
		return false
	}
	_, slack := s.cyclesToJump(until, p, d)
	if slack {
		s.slackJumps++
		s.rec.phased = true // how far behind the sender is sets the jump
	}
	return slack
}

// jump: the state now is the state at c.aSeq shifted by one cycle. Jump
// over as many more cycles as the next corruption, the end of the traffic
// and the time asked for allow.
func (s *sim) jump(until int64) {
	c := &s.cyc
	p, d := s.nextSeq-c.aSeq, s.now-c.aAt
	if p <= 0 || d <= 0 {
		return
	}
	// The original about to be sent is sent after the jump: keep one.
	// Passes of the loop handled ahead move with the state: they too stay
	// within the time asked for.
	m, _ := s.cyclesToJump(until, p, d)
	if m <= 0 {
		return
	}
	ds, dt := m*p, m*d
	if s.tp != nil {
		s.tpJump(c.aAt, s.now, p, d, m) // the Tx path's inputs, cycle by cycle
	}
	r, a := &s.res, c.aRes
	r.FramesSent += m * (r.FramesSent - a.FramesSent)
	r.Transmissions += m * (r.Transmissions - a.Transmissions)
	r.Copies += m * (r.Copies - a.Copies)
	r.Dummies += m * (r.Dummies - a.Dummies)
	r.Delivered += m * (r.Delivered - a.Delivered)
	r.Lost += m * (r.Lost - a.Lost)
	r.Timeouts += m * (r.Timeouts - a.Timeouts)
	r.BufferDrops += m * (r.BufferDrops - a.BufferDrops)
	r.PauseFrames += m * (r.PauseFrames - a.PauseFrames)
	// Corrupted is unchanged: no frame was corrupted in the cycle, but
	// for dummies whose corruption changes nothing else (paced.go).
	if f := s.freeDraws - c.aFree; f > 0 {
		s.jumpFreeDummies(m*f, ds)
	} else if s.covered == s.nextSeq-1 {
		s.covered += ds
	}
	if s.runStart >= c.aAt && s.runStart != c.aRunStart {
		s.runStart += dt // a run sent in every cycle: the last one
		s.runEnd += ds
	}
	s.nextSeq += ds
	s.senderAck += ds
	s.lackSent += ds
	s.ackNo += ds
	s.highest += ds
	s.gap -= ds
	s.now += dt
	if s.aheadAt > s.now-dt {
		s.aheadAt += dt
	}
	s.slotFree += dt
	for i := 0; i < s.buf.n; i++ {
		s.buf.at(i).seq += ds
	}
	for i := 0; i < s.flight.n; i++ {
		s.flight.at(i).seq += ds
	}
	s.indexBuffer(0)
	for i := range s.q {
		if i == qTimeout {
			continue // spent: due when they are due, changing nothing
		}
		f := &s.q[i]
		for j := f.head; j < len(f.ev); j++ {
			e := &f.ev[j]
			e.at += dt
			e.sched += dt
			if e.kind == evAck {
				e.seq += ds
			}
			if e.kind == evArrive {
				e.p.seq += ds // a dummy's: the last original sent
			}
		}
	}
	s.firstQ = -2
	c.jumpedSeqs += ds
}
