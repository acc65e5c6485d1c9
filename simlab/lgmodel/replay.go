package lgmodel

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"unsafe"

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
//
// At 25G the states a corruption meets are one per phase of the reorder
// buffer's rotation, of thousands of rotations: tens of thousands of
// states, most met again within 10^8 frames. So up to memoBudget bytes of
// recordings are kept, packed, and the clock algorithm replaces those not replayed
// lately. And a stretch whose start has no recording may still meet a
// recorded state further on (the stretches after different states merge
// as the buffer reorders): every checkpointEvery originals after the
// corruption, up to checkpointLast, a state seen before is looked up and
// recorded as at the corruption, its countdown already drawn (the replay
// needs it at least as long as the recorded stretch; nothing is drawn).
// Among the first 400,000 losses of a 25G ordered run at 1e-3 (seed 1),
// 69% were replayed to their end, against 8% before.
//
// A paced sender (Config.Period, paced.go) is replayed the same way, its
// key holding besides when the generator makes the next original,
// relative to now (the phase: original i is made at i x Period). Two
// states with the same key then differ by a whole number of periods in
// time as in sequence numbers, so every comparison of the wire's time
// with an original's making comes out the same, and the slack ring
// (paceSlack) and the free dummies (freeDummy) are installed shifted like
// the rest. Its stretch ends where the line is settled (a paced run
// follows), or where a cycle is found that the countdown or the time
// asked for bounds; a cycle jump the sender's slack bounds is recorded
// through (cycle.go cyclesToJump). And it is recorded in segments
// (endSegment), from checkpoints all along the stretch, so that a replay
// fits in the simulated switch's chunks of time.

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
		case len(r.draws) == s.recordDraws() || kind == drawGeometric && (r.geom >= 0 || r.mid):
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
	snapBase
	slotFree, senderAck, lackSent           int64
	ackNo, highest, covered, idleFrom       int64
	aheadAt, undetected, gap, flightB       int64
	bytes                                   int64
	pendingBP, notifPending                 int
	paused, draining, bpPaused              bool
	held, txDropped, retx, holes, delivered []int64
	givenUp                                 []int64
	freeSeq                                 int64
	// sigma is a paced sender's slack ring (paced.go paceSlack) from
	// nextSeq on, modulo its length (nil at line rate).
	sigma []int64
	// The frames in the buffer and in flight, and the pending events of
	// each queue, packed (packFrame, packEvent): a long run keeps tens of
	// thousands of recordings.
	frames        []byte
	nBuf, nFlight int
	events        []byte
	nq            [nQueues]int
	cyc           cycleFrom
}

// snapBase is what a snapshot is relative to (base).
type snapBase struct {
	now, nextSeq, draws, aheadN int64
	free, freeLost              int64 // freeDraws, freeLost (paced.go)
	nev                         int
	res                         Result // MaxTx/MaxRx: since the start
}

// cycleFrom is what a snapshot keeps of the search for a repeating
// stretch: the state a cycle just found starts from, and what the marks
// were made after.
type cycleFrom struct {
	aSeq, aAt, aCovered, draws, corrupted, aFree int64
	aRes                                         Result
}

type recording struct {
	key   []byte // memoKey's numbers, packed (packKey)
	hash  uint64 // hashKey's
	start snapBase
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
	k0      int64 // the count it drew (mid: the count at the start)
	// mid: it starts at a checkpoint of the stretch (checkpoint), not at
	// the corruption: the countdown was drawn before it.
	mid   bool
	need  int64 // the least count that gives the same stretch
	maxTx int64 // buffer peaks since the start
	maxRx int64
	used  bool      // replayed since the memo's hand last passed it (keep)
	size  int64     // bytes()
	tlog  []tpEntry // the Tx path's inputs in the stretch (txpath.go)
	hits  int       // replays so far
	// A paced sender's: the generator's phase at the start, whether the
	// stretch depends on it (made), and the key without it (keyBehind).
	phase  int64
	phased bool
	bkey   []byte
	bhash  uint64
	dec    *unpacked // end's frames and events unpacked, once replayed twice
	// The Tx path's notes of this stretch (txpath_memo.go), valid while
	// tpGen is the Tx path's memoGen.
	tp    []*tpMemoKey
	tpGen int64
}

// unpacked is a snapshot's frames and events as unpackFrame and
// unpackEvent give them back, in their order.
type unpacked struct {
	frames []packet
	events []event
}

func (u *unpacked) bytes() int64 {
	return int64(cap(u.frames))*int64(unsafe.Sizeof(packet{})) + int64(cap(u.events))*int64(unsafe.Sizeof(event{}))
}

// unpack gives sn's frames and events, from rec's kept copy, or unpacked
// now into the scratch (and kept when rec has been replayed decHits
// times and the budget has room).
func (s *sim) unpack(rec *recording, sn *snapshot) *unpacked {
	if rec.dec != nil {
		return rec.dec
	}
	dst := &s.decScratch
	keep := rec.hits >= decHits && s.decBytes < decBudget // else into the scratch, not a copy to drop
	if keep {
		dst = &unpacked{}
	}
	dst.frames, dst.events = dst.frames[:0], dst.events[:0]
	b := sn.frames
	for range sn.nBuf + sn.nFlight {
		var p packet
		p, b = unpackFrame(b, sn.nextSeq)
		dst.frames = append(dst.frames, p)
	}
	b = sn.events
	for _, n := range sn.nq {
		for range n {
			var e event
			e, b = unpackEvent(b, sn.now, sn.nextSeq, sn.nev)
			dst.events = append(dst.events, e)
		}
	}
	if keep && s.decBytes+dst.bytes() <= decBudget {
		rec.dec = dst
		s.decBytes += dst.bytes()
	}
	return dst
}

const (
	// The recordings' memory: at 25G ordered and 1e-3 a recording takes
	// about 2.1 KB (the key's 300 numbers packed into about 420 bytes, the
	// end state's frames and events into about 450, the rest its scalars;
	// with the Tx path's courier, txpath.go, its inputs too), so about
	// 60,000 of them. The states a loss meets in the reorder buffer's
	// rotation are many (about 19,000 distinct among the first 30,000
	// losses, most met again later): 256 recordings filled within the
	// first 300 losses and replayed 8% of the stretches; 2^15 replay about
	// 73% of the losses between 2x10^8 and 4x10^8 frames, 2^16 about 88%.
	memoBudget = 128 << 20
	// decBudget bounds the ends kept unpacked (recording.dec): a
	// recording's end is unpacked to stay once replayed decHits times. At
	// 100G nearly every loss replays one of a few recordings, and
	// unpacking their varints at every replay was a third of the model's
	// CPU. At 25G most of the tens of thousands of recordings replay a
	// few times each, and keeping those unpacked from their second replay
	// cost 11% more CPU than unpacking the compact varints each time.
	decBudget   = 16 << 20
	decHits     = 16
	recordDraws = 32 // draws in one recording at most
	// ... of a paced sender: the dummies in the generator's gaps draw
	// their corruption, one every 10 originals at 25G.
	recordDrawsPaced = 1024
	seenMax          = 1 << 18 // keys noted without a recording at most
)

// recordDraws bounds the draws of one recording.
func (s *sim) recordDraws() int {
	if s.pacePS > 0 {
		return recordDrawsPaced
	}
	return recordDraws
}

// memoable: a corrupted original is about to be sent from a state that the
// key holds whole, with time and traffic left for a replay or recording.
// A paced sender's Tx path with the courier (txpath.go) is not keyed on
// the generator's phase: not replayed.
func (s *sim) memoable(until int64) bool {
	if s.c.Step || s.c.NoReplay || s.c.NoCycleSkip || s.off != nil || s.pacePS > 0 && s.tp != nil || s.c.Mode == Off || s.r == nil ||
		len(s.holes) > 0 || len(s.retx) > 0 || s.undetected > 0 || s.notifPending > 0 || s.idleFrom >= 0 ||
		len(s.delivered) > 0 || len(s.givenUp) > 0 || len(s.txDropped) > 0 || len(s.held) > 0 || len(s.injected) > 0 {
		return false
	}
	return true
}

// checkpoint: the original about to be sent is a checkpoint of the
// stretch after the last corruption, where a replay may start (replay).
// The states a corruption meets are many, at 25G ordered one per phase of
// the reorder buffer's rotation, and the stretches after them merge only
// gradually (among 30,000 losses, 29,500 distinct states 10 originals
// after the loss, 14,700 after 20, 8,400 after 40, 5,200 after 80): a
// stretch whose start has no recording may still meet a recorded state
// further on.
//
// The checkpoints are every checkpointEvery originals after the loss, up
// to checkpointLast at line rate and pacedFixedLast for a paced sender,
// whose later ones are chosen by the state itself (pacedCheckpoint), all
// along the stretch.
func (s *sim) checkpoint() bool {
	d := s.nextSeq - s.lossSeq
	if s.pacePS > 0 && d > pacedFixedLast {
		return !s.settled() && s.pacedCheckpoint()
	}
	return d > 0 && d%checkpointEvery == 0 && (d <= checkpointLast || s.pacePS > 0) && !s.settled()
}

// pacedCheckpoint: a paced sender's state, pacedFixedLast originals or
// more after the loss, is a checkpoint when the top bits of its shape
// (cycle.go: quantities relative to nextSeq and now) are zero, one state
// in checkpointEvery. Two stretches that met one state go on through the
// same states, each as many originals after its own loss as it took to
// get there: at 25G ordered the stretches after different losses merge
// at different distances from them (the reorder buffer's drain, some
// 2,400 originals after the sender catches up, below), so checkpoints
// every checkpointEvery originals after the loss fell on the same states
// of a merged path only where the distances agreed modulo
// checkpointEvery, and a path met after another loss was recorded anew,
// at other states. Chosen by the state, they are the same states after
// every loss. Near the loss, where the stretches after one state at the
// loss have not parted, the fixed distances are kept: chosen by the
// state there too, 25G ordered at 9.11e-4 handled 3% more events. 25G
// ordered paced at 496 ns, 4x10^7 frames in 1 ms slices, seed 1
// (counted in a scratch build): at 7.6e-5, events handled 24.76 to 17.48
// million, originals stepped 2.43 to 1.72 million, recordings kept 18,251
// to 10,524; at 9.11e-4, events 31.65 to 31.72 million. (The shape's low
// bits, which times in multiples of 320 ps leave to the sequence numbers
// and counts alone, chose worse: 2.06 million originals stepped.)
func (s *sim) pacedCheckpoint() bool {
	return s.shape()>>60 == 0
}

// endSegment ends a paced sender's recording at the first checkpoint
// pacedSegment originals or more after its start. After a loss a paced
// ordered sender at 25G falls behind the generator, catches up, and then
// keeps pace while its reorder buffer drains for some 1,700 originals
// (850 us), a stretch that does not repeat (no cycle of up to 1,024
// originals) and that the simulated switch's chunks of 1 ms of simulated
// time (simlab/tofino advanceChunk) mostly cut: a replay must end within
// the time asked for. So its stretch is recorded in segments, one from
// each checkpoint (checkpoint, to the end of the stretch), each replayed
// where the last ended. Segments of 64 originals at least: 25G
// ordered at 7.6e-5, 8x10^7 frames in 1 ms slices, with checkpoints every
// 16 originals after the loss, 3.3 s of CPU against 3.9 s with 128 (32:
// 6% more than 64 over 4x10^7 frames, 256: 32% more; checkpoints every 8
// originals, 12% more).
func (s *sim) endSegment() {
	if r := s.rec; r != nil && s.pacePS > 0 && s.gap > 0 && s.nextSeq-r.start.nextSeq >= pacedSegment && s.checkpoint() {
		s.finishRecording(false)
	}
}

const (
	checkpointEvery = 16  // originals between checkpoints (a paced sender's: on average)
	checkpointLast  = 128 // the last checkpoint after a corruption (line rate)
	pacedSegment    = 64  // a paced recording's originals at least (endSegment)
	pacedFixedLast  = 256 // a paced sender's last checkpoint at a fixed distance from the loss
)

// margin: loopAhead and kickDrain look this far past the clock (the
// time asked for bounds them there).
func (s *sim) margin() int64 { return s.oneWay() + s.ser64 + 1 }

// memoKey is the state relative to (nextSeq, now): encode's, the pending
// timeouts, and how far the passes run ahead reach. A run of steady frames
// on its way counts by where it ends: it lands in order, delivered whole,
// whatever its length (a replay adds the difference to Delivered). More
// than one: no key (nil). A paced sender's key ends with the generator's
// phase: when the next original is made, relative to now (paced.go).
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
	if s.pacePS > 0 {
		dst = append(dst, n*s.pacePS-t)
	}
	return dst
}

// hashKey hashes a whole key. (Hashing only its first numbers, the
// sender's and receiver's scalars and the buffer's head, left keys that
// differ further on in one bucket: with thousands of recordings a lookup
// compared most of them.)
func hashKey(k []int64) uint64 {
	h := uint64(14695981039346656037) ^ uint64(len(k))
	for _, v := range k {
		h ^= uint64(v)
		h *= 1099511628211
	}
	return h
}

// packKey appends k's numbers as signed varints: most are small offsets
// of sequence numbers and times, so a recording's key takes about a
// quarter of the bytes. The packing is one to one: equal bytes, equal keys.
func packKey(dst []byte, k []int64) []byte {
	for _, v := range k {
		dst = binary.AppendVarint(dst, v)
	}
	return dst
}

// replay: a corrupted original is about to be sent. With a recording of
// this state it replays it (see above) and reports whether the end was
// reached (the caller goes on with cycleFound) and what to send next;
// without one it starts recording.
func (s *sim) replay(until int64) (want int, found, cyc bool) {
	mid := s.gap > 0
	s.memoScratch = s.memoKey(s.memoScratch[:0])
	if s.memoScratch == nil {
		return lg.PktOriginal, false, false
	}
	// The same state at a corruption and at a checkpoint has two futures:
	// the original about to be sent is corrupted or not.
	s.memoScratch = append(s.memoScratch, b2i(mid))
	h := hashKey(s.memoScratch)
	rec := s.find(h, false, 0)
	if rec == nil && s.pacePS > 0 {
		rec = s.findBehind()
	}
	if rec == nil {
		if s.seenBefore(h) || s.pacePS > 0 && s.seenBehind() {
			s.memoPacked = packKey(s.memoPacked[:0], s.memoScratch)
			r := &recording{key: bytes.Clone(s.memoPacked), hash: h, geom: -1, mid: mid}
			s.keyBehind(r)
			if mid {
				r.k0 = s.gap
			}
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
			r.runBase = s.memoScratch[3] == runBase
			s.rec = r
		}
		return lg.PktOriginal, false, false
	}
	rec.used = true
	rec.hits++
	span := rec.end.now - rec.start.now
	if until-s.now < span+s.margin() || s.reached-s.now < span+s.margin() ||
		s.c.Frames-s.nextSeq < rec.end.nextSeq-rec.start.nextSeq+2 || mid && s.gap < rec.need {
		// (From a checkpoint the countdown is known: the next corruption
		// within the stretch is not replayed, nothing drawn.)
		return lg.PktOriginal, false, false
	}
	var base snapBase
	s.base(&base)
	_, runSeq, runSched, run := s.runOnWay()
	k := int64(-1)
	if mid {
		k = s.gap
	}
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
	if s.staleSlack && s.pacePS > 0 {
		for i := range s.sigma {
			s.sigma[i] = 1 << 50
		}
	}
	s.restore(rec, &rec.end, &base, k, runSeq, runSched, run)
	s.replays++
	s.replayed++
	s.midReplayed += b2i(mid)
	return lg.PktOriginal, true, rec.cyc
}

// find looks up the recording of the key in s.memoScratch, its hash h;
// behind: one recorded at the generator's phase ph or later.
func (s *sim) find(h uint64, behind bool, ph int64) *recording {
	rs := s.memo[h]
	if len(rs) == 0 {
		return nil
	}
	s.memoPacked = packKey(s.memoPacked[:0], s.memoScratch)
	for _, r := range rs {
		if bytes.Equal(r.key, s.memoPacked) && (!behind || r.phase >= ph) {
			return r
		}
	}
	return nil
}

// A paced sender behind the generator finds every original made when
// the wire frees: how far behind it is does not matter to the stretch,
// as long as it stays so. A stretch in which no comparison of the wire's
// time with an original's making came out "not yet" (made, nextSend,
// freeDummy), nor a cycle jump was bounded by the slack, goes the same
// from any phase at or before its own (a sender as far behind or
// further: every comparison comes out "made" again). Such a recording is
// kept under its key with the phase replaced by behindPhase, and found
// from an earlier phase (findBehind). At 25G ordered and 1e-3 the
// sender stays behind the generator: the phase never repeats.
const behindPhase = math.MaxInt64

// phaseAt is where s.memoScratch holds the phase (memoKey's last number,
// before the corruption's flag).
func (s *sim) phaseAt() int { return len(s.memoScratch) - 2 }

// findBehind looks up a recording kept behind (above) that the phase now
// may replay.
func (s *sim) findBehind() *recording {
	i := s.phaseAt()
	ph := s.memoScratch[i]
	s.memoScratch[i] = behindPhase
	r := s.find(hashKey(s.memoScratch), true, ph)
	s.memoScratch[i] = ph
	return r
}

// seenBehind is seenBefore for the key with the phase left out.
func (s *sim) seenBehind() bool {
	i := s.phaseAt()
	ph := s.memoScratch[i]
	s.memoScratch[i] = behindPhase
	seen := s.seenBefore(hashKey(s.memoScratch))
	s.memoScratch[i] = ph
	return seen
}

// keyBehind gives r, a paced sender's recording under way, its key with
// the phase left out, which keep uses unless r is phased.
func (s *sim) keyBehind(r *recording) {
	if s.pacePS == 0 {
		return
	}
	i := s.phaseAt()
	r.phase = s.memoScratch[i]
	s.memoScratch[i] = behindPhase
	r.bhash = hashKey(s.memoScratch)
	s.memoPacked = packKey(s.memoPacked[:0], s.memoScratch)
	r.bkey = bytes.Clone(s.memoPacked)
	s.memoScratch[i] = r.phase
}

// made: original nextSeq is made by t. A paced recording under way notes
// a "not yet": its stretch holds the generator's phase.
func (s *sim) made(t int64) bool {
	if s.nextSeq*s.pacePS <= t {
		return true
	}
	if s.rec != nil {
		s.rec.phased = true
	}
	return false
}

// seenBefore notes a key that has no recording and says whether it was
// noted before. Only those are recorded: at 25G most states a corruption
// meets are met once (the loop's phase against the sender's slots differs
// from loss to loss), and recording each of them filled the memo with
// recordings never replayed before the states that recur came round.
// Keys are noted by their hash alone: two keys with one hash only make a
// recording start sooner (a recording is exact whatever starts it).
func (s *sim) seenBefore(h uint64) bool {
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
	if r.geom < 0 && !r.mid || s.nextSeq == r.start.nextSeq || s.reached-s.now < s.margin() || s.c.Frames-s.nextSeq < 2 || s.gap <= 0 {
		s.rec = nil
		return
	}
	s.capture(&r.end)
	s.rec = nil
	r.cyc = cyc
	if r.bkey != nil && !r.phased {
		r.key, r.hash = r.bkey, r.bhash
	}
	r.bkey = nil
	// Any count from here on gives the same stretch: the countdown is
	// only compared with zero before it ends.
	r.need = r.k0 - s.gap + 1
	s.keep(r)
}

// keep adds r to the memo. When it is full, r takes the place of the
// first recording the hand finds not replayed since it last passed (the
// clock algorithm): those replayed often stay. (Keeping the first
// recordings that fill it for good replayed about half the stretches of a
// long 25G run once they had filled, against 85% with all kept.)
func (s *sim) keep(r *recording) {
	if s.memo == nil {
		s.memo = map[uint64][]*recording{}
	}
	s.memo[r.hash] = append(s.memo[r.hash], r)
	r.size = r.bytes()
	if s.memoBytes+r.size <= memoBudget || len(s.memoAll) == 0 {
		s.memoAll = append(s.memoAll, r)
		s.memoBytes += r.size
		return
	}
	for s.memoAll[s.memoHand].used {
		s.memoAll[s.memoHand].used = false
		s.memoHand = (s.memoHand + 1) % len(s.memoAll)
	}
	old := s.memoAll[s.memoHand]
	rs := s.memo[old.hash]
	if rs = slices.DeleteFunc(rs, func(x *recording) bool { return x == old }); len(rs) == 0 {
		delete(s.memo, old.hash)
	} else {
		s.memo[old.hash] = rs
	}
	if old.dec != nil {
		s.decBytes -= old.dec.bytes()
	}
	s.memoAll[s.memoHand] = r
	s.memoBytes += r.size - old.size
	s.memoHand = (s.memoHand + 1) % len(s.memoAll)
}

// bytes is about what r takes in memory.
func (r *recording) bytes() int64 {
	return int64(unsafe.Sizeof(*r)) + int64(cap(r.key)+cap(r.end.frames)+cap(r.end.events)+8*cap(r.end.sigma)) +
		int64(cap(r.draws))*int64(unsafe.Sizeof(draw{})) + int64(cap(r.tlog))*int64(unsafe.Sizeof(tpEntry{}))
}

// base notes what a snapshot is relative to.
func (s *sim) base(b *snapBase) {
	b.now, b.nextSeq, b.nev, b.draws, b.aheadN, b.res = s.now, s.nextSeq, s.nev, s.draws, s.aheadN, s.res
	b.free, b.freeLost = s.freeDraws, s.freeLost
}

func (s *sim) capture(sn *snapshot) {
	s.base(&sn.snapBase)
	sn.slotFree, sn.senderAck, sn.lackSent, sn.ackNo, sn.highest = s.slotFree, s.senderAck, s.lackSent, s.ackNo, s.highest
	sn.covered, sn.idleFrom, sn.aheadAt, sn.undetected, sn.gap = s.covered, s.idleFrom, s.aheadAt, s.undetected, s.gap
	sn.flightB, sn.bytes, sn.pendingBP, sn.notifPending = s.flightB, s.bufBytes, s.pendingBP, s.notifPending
	sn.paused, sn.draining, sn.bpPaused = s.paused, s.draining, s.bpPaused
	sn.held, sn.txDropped, sn.retx = slices.Clone(s.held), slices.Clone(s.txDropped), slices.Clone(s.retx)
	sn.holes, sn.delivered, sn.givenUp = keys(s.holes), keys(s.delivered), keys(s.givenUp)
	sn.nBuf, sn.nFlight = s.buf.n, s.flight.n
	b := s.memoPacked[:0]
	for _, d := range [2]*deque{&s.buf, &s.flight} {
		for i := 0; i < d.n; i++ {
			b = packFrame(b, d.at(i), s.nextSeq)
		}
	}
	sn.frames = bytes.Clone(b)
	b = b[:0]
	for i := range s.q {
		f := &s.q[i]
		sn.nq[i] = f.len()
		for j := f.head; j < len(f.ev); j++ {
			b = packEvent(b, &f.ev[j], s.now, s.nextSeq, s.nev)
		}
	}
	sn.events = bytes.Clone(b)
	s.memoPacked = b
	c := &s.cyc
	sn.cyc = cycleFrom{aSeq: c.aSeq, aAt: c.aAt, aRes: c.aRes, aCovered: c.aCovered, draws: c.draws, corrupted: c.corrupted, aFree: c.aFree}
	if s.pacePS > 0 {
		sn.freeSeq = s.freeSeq
		sn.sigma = make([]int64, cycleRing)
		for i := range sn.sigma {
			sn.sigma[i] = s.sigma[(s.nextSeq+int64(i))%cycleRing]
		}
	}
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

// packFrame appends p, its sequence number relative to n, as varints;
// unpackFrame takes it back exactly.
func packFrame(dst []byte, p *packet, n int64) []byte {
	dst = binary.AppendVarint(dst, p.seq-n)
	dst = binary.AppendVarint(dst, p.run)
	dst = binary.AppendVarint(dst, int64(p.bytes))
	return binary.AppendVarint(dst, int64(p.kind)*4+b2i(p.lost)*2+b2i(p.dropped))
}

func unpackFrame(b []byte, n int64) (packet, []byte) {
	var v [4]int64
	for i := range v {
		var k int
		v[i], k = binary.Varint(b)
		b = b[k:]
	}
	return packet{seq: v[0] + n, run: v[1], bytes: int(v[2]), kind: int8(v[3] >> 2), lost: v[3]&2 != 0, dropped: v[3]&1 != 0}, b
}

// packEvent appends e, its times relative to t, its sequence numbers to n
// and its index to nev, as varints; unpackEvent takes it back exactly.
func packEvent(dst []byte, e *event, t, n int64, nev int) []byte {
	dst = binary.AppendVarint(dst, e.at-t)
	dst = binary.AppendVarint(dst, e.sched-t)
	dst = binary.AppendVarint(dst, int64(e.idx-nev))
	dst = binary.AppendVarint(dst, e.seq-n)
	dst = binary.AppendVarint(dst, int64(e.n))
	dst = binary.AppendVarint(dst, int64(e.kind)*2+b2i(e.handled))
	dst = binary.AppendVarint(dst, int64(e.mask))
	return packFrame(dst, &e.p, n)
}

func unpackEvent(b []byte, t, n int64, nev int) (event, []byte) {
	var v [7]int64
	for i := range v {
		var k int
		v[i], k = binary.Varint(b)
		b = b[k:]
	}
	e := event{at: v[0] + t, sched: v[1] + t, idx: int(v[2]) + nev, seq: v[3] + n, n: int(v[4]),
		kind: int8(v[5] >> 1), handled: v[5]&1 != 0, mask: uint8(v[6])}
	e.p, b = unpackFrame(b, n)
	return e, b
}

// restore installs sn, the end of rec, on the state at cur (its start):
// the same state shifted by the difference in sequence numbers and time. k
// is the countdown the replay drew; runSeq, runSched and run, the run on
// its way at cur.
func (s *sim) restore(rec *recording, sn *snapshot, cur *snapBase, k, runSeq, runSched int64, run int) {
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
	u := s.unpack(rec, sn)
	fr := u.frames
	for _, d := range [2]struct {
		q *deque
		n int
	}{{&s.buf, sn.nBuf}, {&s.flight, sn.nFlight}} {
		d.q.head, d.q.n = 0, 0
		for _, p := range fr[:d.n] {
			p.seq += ds
			d.q.push(p)
		}
		fr = fr[d.n:]
	}
	s.pending = 0
	evs := u.events
	for i := range s.q {
		f := &s.q[i]
		f.ev, f.head = f.ev[:0], 0
		for _, e := range evs[:sn.nq[i]] {
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
		evs = evs[sn.nq[i]:]
		s.pending += len(f.ev)
		s.busy &^= 1 << i
		if len(f.ev) > 0 {
			s.busy |= 1 << i
		}
	}
	s.firstQ = -2
	s.indexBuffer(0)
	if s.tp != nil {
		s.tpReplay(rec, ds, dt, cur.nextSeq, cur.now, s.now)
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
	c.aFree = cur.free + a.aFree - st.free
	s.restorePaced(rec, sn, cur, ds, dt)
}

// restorePaced installs what a paced sender's stretch leaves besides:
// the free dummies (paced.go freeDummy) counted, and the slack ring.
// With the generator's phase in the key, the recording's and the
// replay's clocks differ by ds periods exactly, so a slack (the wire's
// time less an original's making) is the same in both. Only slack
// written in the stretch is read after it (minSlack reads from a mark,
// and the marks are made anew): the rest of the ring is left as the
// recording had it.
func (s *sim) restorePaced(rec *recording, sn *snapshot, cur *snapBase, ds, dt int64) {
	if sn.sigma == nil {
		return
	}
	st := &rec.start
	if sn.free > st.free {
		s.freeSeq = sn.freeSeq + ds
	} // else no free dummy in the stretch: as it is
	s.freeDraws = cur.free + sn.free - st.free
	s.freeLost = cur.freeLost + sn.freeLost - st.freeLost
	for i, v := range sn.sigma {
		s.sigma[(s.nextSeq+int64(i))%cycleRing] = v + dt - ds*s.pacePS
	}
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
