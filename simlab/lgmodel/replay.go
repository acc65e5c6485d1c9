package lgmodel

import (
	"math"
	"slices"

	lg "testbed/p4/linkguardian"
)

// Exact replay of the stretch after a corruption.
//
// In the ordered mode every corrupted original sets off the same chain: the
// receiver sees the hole, buffers what follows while the loss notification
// crosses back and the copies cross over, the recirculation loop sends the
// buffered frames round, backpressure pauses and resumes the sender, and
// the reorder buffer settles into a repeating stretch that cycle.go jumps
// over. The chain is deterministic between random draws (the countdown to
// the next corruption, the copies' and dummies' corruption), and it starts
// from a state that recurs: a repeating stretch at the moment of a
// corruption is the same, relative to (nextSeq, now), from one loss to the
// next. So the chain is simulated once, recorded, and replayed whenever the
// same state meets a corruption again.
//
// A recording starts at a corrupted original sent from a state that holds
// nothing the encoding leaves out (cycle.go's encode, with the pending
// timeouts and the passes run ahead) and that a corruption met once before
// (seenBefore); it ends where the chain's repeating
// stretch is found (cycleFound) or where the line is back in steady state,
// and is dropped if a run of steady frames, a second corruption, or the
// end of the time asked for or of the traffic comes first. It keeps every
// draw's kind and outcome, and the whole state at the end (a snapshot).
//
// A replay draws the same numbers from the run's source in the same order,
// one at a time, and compares each outcome with the recorded one: a copy or
// dummy corrupted or not, the loss-emulation table's share, and for the
// countdown only whether the next corruption falls after the stretch (the
// chain depends on the countdown through nothing else). If all agree the
// recorded end state is installed, shifted by the difference in sequence
// numbers and time, and the run goes on from there as after the recording.
// At the first disagreement nothing is installed: the run steps through
// the stretch from its start, and its draws take the numbers the replay
// drew, in order, the disagreeing one last (the path is the recorded one
// up to that draw), so it goes exactly as if it had stepped all along. No
// random number is drawn ahead of stepping, so the run's source is left
// where stepping leaves it (simlab/tofino shares it between segments).
// Config.NoReplay turns this off; a test holds both to identical results.

// Kinds of draws.
const (
	drawLose      = iota + 1 // a copy's corruption: (lost, dropped)
	drawBern                 // a dummy's corruption
	drawCause                // which cause took a corrupted original
	drawGeometric            // the countdown to the next corrupted original
)

type draw struct {
	kind int8
	a, b float64 // its parameters
	u    float64 // the number drawn
}

// same: u gives the outcome the recorded draw gave; for the countdown, a
// count of at least need.
func (d *draw) same(u float64, need int64) bool {
	switch d.kind {
	case drawLose:
		return (u < d.a) == (d.u < d.a) && (u < d.a && u < d.b) == (d.u < d.a && d.u < d.b)
	case drawBern:
		return (u < d.a) == (d.u < d.a)
	case drawCause:
		return (u*d.a < d.b) == (d.u*d.a < d.b)
	case drawGeometric:
		return geometricOf(u, d.a) >= need
	}
	return false
}

// uniform is every random number the model draws: from the run's source,
// or those a replay drew before handing over to stepping.
func (s *sim) uniform(kind int8, a, b float64) float64 {
	s.draws++
	var u float64
	if len(s.injected) > 0 {
		u = s.injected[0]
		s.injected = s.injected[1:]
	} else {
		u = s.r.Float64()
	}
	if r := s.rec; r != nil {
		switch {
		case len(r.draws) == recordDraws || kind == drawGeometric && r.geom >= 0:
			s.rec = nil // too long, or a second countdown
		default:
			r.draws = append(r.draws, draw{kind: kind, a: a, b: b, u: u})
			if kind == drawGeometric {
				r.geom, r.k0 = len(r.draws)-1, geometricOf(u, a)
			}
		}
	}
	return u
}

// snapshot is the whole state before an original is sent, in the
// recording's coordinates.
type snapshot struct {
	now, slotFree, nextSeq, senderAck, lackSent    int64
	ackNo, highest, covered, idleFrom, aheadAt     int64
	undetected, gap, draws, aheadN, flightB, bytes int64
	nev, pendingBP, notifPending                   int
	paused, draining, bpPaused                     bool
	held, txDropped, retx, holes, delivered        []int64
	givenUp                                        []int64
	buf, flight                                    []packet
	q                                              [nQueues][]event
	res                                            Result // MaxTx/MaxRx: since the start
	cyc                                            cycleFrom
}

// cycleFrom is what a snapshot keeps of the search for a repeating
// stretch: the state a cycle just found starts from, and what the marks
// were made after.
type cycleFrom struct {
	aSeq, aAt, aCovered, draws, corrupted int64
	aRes                                  Result
}

type recording struct {
	key   []int64
	start snapshot // its base: nextSeq, now, nev, draws, aheadN, res
	draws []draw
	end   snapshot
	cyc   bool // it ends where a repeating stretch is found, else in steady state
	// A run of steady frames on its way at the start (its idx; 0: none)
	// and its length: the key holds where it ends, not how long it is.
	runIdx, run   int
	runSeq, runAt int64 // its first original, and when it lands
	// runBase: lackSent, ackNo and highest were at the run's start (the key
	// holds that, not where the run starts); until it lands they stay there.
	runBase bool
	geom    int   // the point of the countdown's draw (-1: none yet)
	k0      int64 // the count it drew
	need    int64 // the least count that gives the same stretch
	maxTx   int64 // buffer peaks since the start
	maxRx   int64
	tlog    []tpEntry // the Tx path's inputs in the stretch (txpath.go)
}

const (
	memoMax     = 256     // recordings kept (at 1e-3 about 14-16 KB each)
	recordDraws = 32      // draws in one recording at most
	seenMax     = 1 << 16 // keys noted without a recording at most
)

// memoable: a corrupted original is about to be sent from a state that the
// key holds whole, with time and traffic left for a replay or recording.
func (s *sim) memoable(until int64) bool {
	if s.c.Step || s.c.NoReplay || s.c.NoCycleSkip || s.off != nil || s.c.Mode == Off || s.r == nil ||
		len(s.holes) > 0 || len(s.retx) > 0 || s.undetected > 0 || s.notifPending > 0 || s.idleFrom >= 0 ||
		len(s.delivered) > 0 || len(s.givenUp) > 0 || len(s.txDropped) > 0 || len(s.held) > 0 || len(s.injected) > 0 {
		return false
	}
	return true
}

// margin: loopAhead and kickDrain look this far past the clock (the
// time asked for bounds them there).
func (s *sim) margin() int64 { return s.oneWay() + s.ser64 + 1 }

// memoKey is the state relative to (nextSeq, now): encode's, the pending
// timeouts, and how far the passes run ahead reach. A run of steady frames
// on its way counts by where it ends: it lands in order, delivered whole,
// whatever its length (a replay adds the difference to Delivered). More
// than one: no key (nil).
func (s *sim) memoKey(dst []int64) []int64 {
	n, t := s.nextSeq, s.now
	dst = s.encode(dst)
	// encode's layout: 12 numbers, 3 per frame in the buffer, 2 and 3 per
	// frame in flight, then each queue's length and 13 per event, the
	// arrivals first.
	a := &s.q[qArrive]
	off := 12 + 3*s.buf.n + 2 + 3*s.flight.n + 1
	runs := 0
	for j := a.head; j < len(a.ev); j++ {
		if a.ev[j].p.run > 1 {
			if runs++; runs > 1 {
				return nil
			}
			// Its sent frames' times matter only through the order
			// of its scheduling among the events pending (ties).
			e := &a.ev[j]
			less, same := 0, 0
			for i := range s.q {
				f := &s.q[i]
				for _, o := range f.ev[f.head:] {
					if o.idx != e.idx {
						less += int(b2i(o.sched < e.sched))
						same += int(b2i(o.sched == e.sched))
					}
				}
			}
			k := dst[off+13*(j-a.head):]
			k[1], k[9], k[12] = int64(less)<<32|int64(same), k[9]+k[12], -1
			// The receiver waiting for it, everything before it
			// delivered: lackSent, ackNo and highest all at its start.
			if r := e.p.seq - n; dst[2] == r && dst[3] == r && dst[4] == r {
				dst[2], dst[3], dst[4] = runBase, runBase, runBase
			}
		}
	}
	f := &s.q[qTimeout]
	dst = append(dst, max(s.aheadAt-t, 0), int64(f.len()))
	for j := f.head; j < len(f.ev); j++ {
		e := &f.ev[j]
		dst = append(dst, e.at-t, e.sched-t, int64(s.nev-e.idx), e.seq-n)
	}
	return dst
}

// hashKey hashes a key's length and its first numbers (the sender's and
// receiver's scalars, the buffer's head): enough to tell most keys apart;
// those it does not are compared whole.
func hashKey(k []int64) uint64 {
	h := uint64(14695981039346656037) ^ uint64(len(k))
	for _, v := range k[:min(len(k), 48)] {
		h ^= uint64(v)
		h *= 1099511628211
	}
	return h
}

// replay: a corrupted original is about to be sent. With a recording of
// this state it replays it (see above) and reports whether the end was
// reached (the caller goes on with cycleFound) and what to send next;
// without one it starts recording.
func (s *sim) replay(until int64) (want int, found, cyc bool) {
	s.memoScratch = s.memoKey(s.memoScratch[:0])
	if s.memoScratch == nil {
		return lg.PktOriginal, false, false
	}
	h := hashKey(s.memoScratch)
	var rec *recording
	for _, r := range s.memo[h] {
		if slices.Equal(r.key, s.memoScratch) {
			rec = r
			break
		}
	}
	if rec == nil {
		if s.memoN < memoMax && s.seenBefore(s.memoScratch) {
			r := &recording{key: slices.Clone(s.memoScratch), geom: -1}
			s.base(&r.start)
			r.runIdx, r.runSeq, _, r.run = s.runOnWay()
			if r.runIdx != 0 {
				r.runAt = s.q[qArrive].ev[s.q[qArrive].head].at
				for _, e := range s.q[qArrive].ev[s.q[qArrive].head:] {
					if e.idx == r.runIdx {
						r.runAt = e.at
					}
				}
			}
			r.runBase = r.key[3] == runBase
			s.rec = r
		}
		return lg.PktOriginal, false, false
	}
	span := rec.end.now - rec.start.now
	if until-s.now < span+s.margin() || s.reached-s.now < span+s.margin() ||
		s.c.Frames-s.nextSeq < rec.end.nextSeq-rec.start.nextSeq+2 {
		return lg.PktOriginal, false, false
	}
	var base snapshot
	s.base(&base)
	_, runSeq, runSched, run := s.runOnWay()
	k := int64(-1)
	drawn := s.injected[:0]
	for i := range rec.draws {
		d := &rec.draws[i]
		u := s.r.Float64()
		drawn = append(drawn, u)
		if !d.same(u, rec.need) {
			s.injected = drawn // stepping takes them from the start
			s.replays++
			return lg.PktOriginal, false, false
		}
		if d.kind == drawGeometric {
			k = geometricOf(u, d.a)
		}
	}
	s.injected = drawn[:0]
	s.restore(rec, &rec.end, &base, k, runSeq, runSched, run)
	s.replays++
	s.replayed++
	return lg.PktOriginal, true, rec.cyc
}

// seenBefore notes a key that has no recording and says whether it was
// noted before. Only those are recorded: at 25G most states a corruption
// meets are met once (the loop's phase against the sender's slots differs
// from loss to loss), and recording each of them filled the memo with
// recordings never replayed before the states that recur came round.
func (s *sim) seenBefore(key []int64) bool {
	h := uint64(14695981039346656037)
	for _, v := range key {
		h ^= uint64(v)
		h *= 1099511628211
	}
	if _, ok := s.seen[h]; ok {
		return true
	}
	if s.seen == nil || len(s.seen) >= seenMax {
		s.seen = map[uint64]struct{}{} // forget the oldest with the rest
	}
	s.seen[h] = struct{}{}
	return false
}

// runBase marks, in a key, numbers that are the start of the run on its
// way (memoKey).
const runBase = math.MinInt64

// runOnWay is the run of steady frames on its way to the receiver, if any:
// its idx (0: none), first original, time of scheduling and length.
func (s *sim) runOnWay() (idx int, seq, sched int64, run int) {
	a := &s.q[qArrive]
	for j := a.head; j < len(a.ev); j++ {
		if e := &a.ev[j]; e.p.run > 1 {
			return e.idx, e.p.seq, e.sched, int(e.p.run)
		}
	}
	return 0, 0, 0, 0
}

// finishRecording: the chain's repeating stretch is found (cyc: in
// cycle, before cycleFound), or the line is back in steady state (in
// steps, before the original that starts a run). The recording is kept if
// nothing in it depended on the time asked for or the end of the traffic.
func (s *sim) finishRecording(cyc bool) {
	r := s.rec
	if r.geom < 0 || s.reached-s.now < s.margin() || s.c.Frames-s.nextSeq < 2 || s.gap <= 0 {
		s.rec = nil
		return
	}
	s.capture(&r.end)
	s.rec = nil
	r.cyc = cyc
	// Any count from here on gives the same stretch: the countdown is
	// only compared with zero before it ends.
	r.need = r.k0 - s.gap + 1
	h := hashKey(r.key)
	if s.memo == nil {
		s.memo = map[uint64][]*recording{}
	}
	s.memo[h] = append(s.memo[h], r)
	s.memoN++
}

// base notes what a snapshot is relative to.
func (s *sim) base(b *snapshot) {
	b.now, b.nextSeq, b.nev, b.draws, b.aheadN, b.res = s.now, s.nextSeq, s.nev, s.draws, s.aheadN, s.res
}

func (s *sim) capture(sn *snapshot) {
	s.base(sn)
	sn.slotFree, sn.senderAck, sn.lackSent, sn.ackNo, sn.highest = s.slotFree, s.senderAck, s.lackSent, s.ackNo, s.highest
	sn.covered, sn.idleFrom, sn.aheadAt, sn.undetected, sn.gap = s.covered, s.idleFrom, s.aheadAt, s.undetected, s.gap
	sn.flightB, sn.bytes, sn.pendingBP, sn.notifPending = s.flightB, s.bufBytes, s.pendingBP, s.notifPending
	sn.paused, sn.draining, sn.bpPaused = s.paused, s.draining, s.bpPaused
	sn.held, sn.txDropped, sn.retx = slices.Clone(s.held), slices.Clone(s.txDropped), slices.Clone(s.retx)
	sn.holes, sn.delivered, sn.givenUp = keys(s.holes), keys(s.delivered), keys(s.givenUp)
	sn.buf, sn.flight = s.buf.slice(), s.flight.slice()
	for i := range s.q {
		sn.q[i] = slices.Clone(s.q[i].ev[s.q[i].head:])
	}
	c := &s.cyc
	sn.cyc = cycleFrom{aSeq: c.aSeq, aAt: c.aAt, aRes: c.aRes, aCovered: c.aCovered, draws: c.draws, corrupted: c.corrupted}
	if r := s.rec; r != nil {
		sn.res.MaxTxBufferBytes, sn.res.MaxRxBufferBytes = r.maxTx, r.maxRx
	}
}

func keys(m map[int64]bool) []int64 {
	var k []int64
	for h, ok := range m {
		if ok {
			k = append(k, h)
		}
	}
	return k
}

func (d *deque) slice() []packet {
	a := make([]packet, d.n)
	for i := range a {
		a[i] = *d.at(i)
	}
	return a
}

// restore installs sn, the end of rec, on the state at cur (its start):
// the same state shifted by the difference in sequence numbers and time. k
// is the countdown the replay drew; runSeq, runSched and run, the run on
// its way at cur.
func (s *sim) restore(rec *recording, sn, cur *snapshot, k, runSeq, runSched int64, run int) {
	st := &rec.start
	ds, dt, dn := cur.nextSeq-st.nextSeq, cur.now-st.now, cur.nev-st.nev
	s.now, s.slotFree, s.nextSeq = sn.now+dt, sn.slotFree+dt, sn.nextSeq+ds
	s.senderAck, s.lackSent, s.ackNo, s.highest = sn.senderAck+ds, sn.lackSent+ds, sn.ackNo+ds, sn.highest+ds
	if rec.runBase {
		for _, v := range [3]struct {
			dst *int64
			rec int64
		}{{&s.lackSent, sn.lackSent}, {&s.ackNo, sn.ackNo}, {&s.highest, sn.highest}} {
			if v.rec == rec.runSeq {
				*v.dst = runSeq // the run has not landed yet
			}
		}
	}
	if sn.covered >= st.nextSeq-1 {
		s.covered = sn.covered + ds
	} // else no dummy announced anything since the start: as it is
	s.idleFrom = -1
	if sn.idleFrom >= 0 {
		s.idleFrom = sn.idleFrom + dt
	}
	if sn.aheadAt > st.now {
		s.aheadAt = sn.aheadAt + dt
	} // else spent, as it is
	s.undetected, s.flightB, s.bufBytes = sn.undetected, sn.flightB, sn.bytes
	s.pendingBP, s.notifPending = sn.pendingBP, sn.notifPending
	s.paused, s.draining, s.bpPaused = sn.paused, sn.draining, sn.bpPaused
	s.gap = sn.gap + k - rec.k0
	s.draws = cur.draws + sn.draws - st.draws
	s.aheadN = cur.aheadN + sn.aheadN - st.aheadN
	s.nev = cur.nev + sn.nev - st.nev
	s.held = shifted(s.held[:0], sn.held, ds)
	s.txDropped = shifted(s.txDropped[:0], sn.txDropped, ds)
	s.retx = shifted(s.retx[:0], sn.retx, ds)
	refill(s.holes, sn.holes, ds)
	refill(s.delivered, sn.delivered, ds)
	refill(s.givenUp, sn.givenUp, ds)
	for _, d := range [2]struct {
		q *deque
		a []packet
	}{{&s.buf, sn.buf}, {&s.flight, sn.flight}} {
		d.q.head, d.q.n = 0, 0
		for _, p := range d.a {
			p.seq += ds
			d.q.push(p)
		}
	}
	s.pending = 0
	for i := range s.q {
		f := &s.q[i]
		f.ev, f.head = f.ev[:0], 0
		for _, e := range sn.q[i] {
			e.at += dt
			e.sched += dt
			e.idx += dn
			switch e.kind {
			case evAck, evNotify, evTimeout:
				e.seq += ds
			case evArrive:
				e.p.seq += ds
				if rec.runIdx != 0 && e.idx == rec.runIdx+dn {
					e.p.seq, e.p.run, e.sched = runSeq, int64(run), runSched
				}
			}
			f.ev = append(f.ev, e)
		}
		s.pending += len(f.ev)
		s.busy &^= 1 << i
		if len(f.ev) > 0 {
			s.busy |= 1 << i
		}
	}
	s.firstQ = -2
	s.indexBuffer(0)
	if s.tp != nil {
		s.tpFeed(rec.tlog, ds, dt)
	}
	// Counters read after the run on its way landed (events are handled
	// before an original sent at their time) count it whole: the
	// difference in length is delivered too.
	landed := func(at int64) int64 {
		if rec.runIdx != 0 && rec.runAt <= at {
			return int64(run - rec.run)
		}
		return 0
	}
	s.res = addResult(cur.res, sn.res, st.res)
	s.res.Delivered += landed(sn.now)
	s.res.MaxTxBufferBytes = max(cur.res.MaxTxBufferBytes, sn.res.MaxTxBufferBytes)
	s.res.MaxRxBufferBytes = max(cur.res.MaxRxBufferBytes, sn.res.MaxRxBufferBytes)
	// The search for a repeating stretch: the cycle found, shifted likewise
	// (cycleFound jumps from it). The marks are not kept: the search
	// starts again from here, which changes nothing but when it finds.
	c, a := &s.cyc, &sn.cyc
	c.clear()
	c.aSeq, c.aAt, c.aCovered = a.aSeq+ds, a.aAt+dt, a.aCovered+ds
	c.aRes = addResult(cur.res, a.aRes, st.res)
	c.aRes.Delivered += landed(a.aAt)
	c.aRunStart = s.runStart // no run was sent in the stretch
	c.draws = cur.draws + a.draws - st.draws
	c.corrupted = cur.res.Corrupted + a.corrupted - st.res.Corrupted
}

func shifted(dst, src []int64, d int64) []int64 {
	for _, v := range src {
		dst = append(dst, v+d)
	}
	return dst
}

func refill(m map[int64]bool, k []int64, d int64) {
	clear(m)
	for _, v := range k {
		m[v+d] = true
	}
}

// addResult is cur plus the counts from base to r (the peaks are left to
// the caller).
func addResult(cur, r, base Result) Result {
	cur.FramesSent += r.FramesSent - base.FramesSent
	cur.Transmissions += r.Transmissions - base.Transmissions
	cur.Copies += r.Copies - base.Copies
	cur.Dummies += r.Dummies - base.Dummies
	cur.Corrupted += r.Corrupted - base.Corrupted
	cur.Delivered += r.Delivered - base.Delivered
	cur.Lost += r.Lost - base.Lost
	cur.Dropped += r.Dropped - base.Dropped
	cur.Timeouts += r.Timeouts - base.Timeouts
	cur.BufferDrops += r.BufferDrops - base.BufferDrops
	cur.TxBufferDrops += r.TxBufferDrops - base.TxBufferDrops
	cur.PauseFrames += r.PauseFrames - base.PauseFrames
	return cur
}
