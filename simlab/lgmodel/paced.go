package lgmodel

import (
	"math"

	lg "testbed/p4/linkguardian"
)

// Paced runs: the fast path of a stress test whose originals the packet
// generator paces (Config.Period).
//
// Between corruptions, a paced sender's line is decided by nothing but
// the clock: original i is in the queue from i x Period on; when the wire
// frees before it, the dummy queue's dummy goes first (covering the
// original just sent) and delays it, and once a dummy has covered it the
// line idles on redundant dummies whose slots the original then waits
// for (goIdle, leaveIdle). The receiver takes each original in order and
// sends the leading ACK back; a dummy changes nothing there. So a steady
// stretch of originals is worked out here without events: each frame's
// start from the one before, in integer picoseconds as the event loop
// has it, the dummies' corruption drawn one by one as sending them draws
// it (the same numbers in the same order), the Tx buffer's occupancy at
// each original's sending from the leading ACKs that would have reached
// the sender by then (those already on their way and the stretch's own).
// What the run leaves is what stepping leaves once its last ACK is back:
// the originals of the stretch but its last few land as one arrival
// (the receiver's run branch, whose leading ACK is the body's last),
// the last few land one by one as scheduled events, so that their ACKs
// reach a sender already past the stretch at their own times. A run is
// taken only when all of that falls before the time asked for, so no
// reading ever sees one half done. Config.NoPacedRun turns it off; the
// results are identical either way (TestPacedRunEqualsStepping).

// pacedMaxRun bounds the originals of one paced run (the schedule is
// kept for the run's own ACKs).
const pacedMaxRun = 1 << 14

// pacedPeriodMax bounds the period looked for, in originals (the
// artifact's timer at MTU frames: 29 originals and 3 dummies).
const pacedPeriodMax = 128

// pacedRunnable: a paced run may start with the original about to be
// sent.
func (s *sim) pacedRunnable() bool {
	return s.pacePS > 0 && s.off == nil && s.tp == nil && !s.c.Step && !s.c.NoPacedRun && s.gap > 0 &&
		(s.c.Mode == Off || s.settled())
}

// futureAck is a leading ACK on its way to the sender: due at at, it
// moves the sender's leading ACK to seq.
type futureAck struct{ at, seq int64 }

// pendingAcks lists the leading ACKs that will reach the sender from
// what is already under way: ACK events, and the originals still on the
// wire, each of which the receiver (in order, nothing missing) answers
// on arrival with its seq + 1. In time order.
func (s *sim) pendingAcks(out []futureAck) []futureAck {
	back := s.oneWay() + s.ser64
	a, r := &s.q[qAck], &s.q[qArrive]
	i, j := a.head, r.head
	for i < len(a.ev) || j < len(r.ev) {
		var fa futureAck
		switch {
		case j < len(r.ev) && (i == len(a.ev) || r.ev[j].at+back < a.ev[i].at):
			e := &r.ev[j]
			j++
			if e.p.kind != lg.PktOriginal || e.p.lost {
				continue
			}
			fa = futureAck{at: e.at + back, seq: e.p.seq + max(e.p.run, 1)}
		default:
			fa = futureAck{at: a.ev[i].at, seq: a.ev[i].seq}
			i++
		}
		out = append(out, fa)
	}
	return out
}

// pacedRun sends the originals from s.nextSeq on, the first at s.now, as
// one paced run, if one fits before until; it reports whether it did.
func (s *sim) pacedRun(until int64) bool {
	r := s.newPacedLine(until)
	for j := int64(0); j < r.n; j++ {
		if r.t+r.last > until {
			break
		}
		if r.acks && !r.admit(j) {
			break // its copy is tail-dropped: stepped
		}
		r.send()
		if j+1 == r.n {
			break
		}
		lag := r.t - (r.a+j)*s.pacePS
		r.seekPeriod(j, lag)
		if r.phase == 2 && j == r.i0+r.per {
			j = r.jump(j, lag)
			if j+1 == r.n {
				break
			}
		}
		r.gap(j)
	}
	return r.finish()
}

// pacedLine is the state the phases of a paced run share: the line as
// worked out up to original a+j, the Tx buffer's reading, the gap being
// sent and the period search.
type pacedLine struct {
	s       *sim
	until   int64
	n, a    int64 // the originals at most, the first's seq
	ser     int64
	ackRT   int64 // an original's start to its ACK at the sender
	last    int64 // an original's start to the last event it causes
	size    int64 // an original's bytes in the Tx buffer
	acks    bool
	dummies bool // the line sends dummies

	ts   []int64     // the originals' starts
	pend []futureAck // the leading ACKs already under way, not yet taken
	lack int64       // the sender's leading ACK
	own  int         // the run's originals whose ACK lack counts

	covered       int64
	nDummy, nLost int64
	maxTx         int64
	// The dummies in the gap before original j, not counted until it is
	// sent, and their draws (given back if it is not).
	gDummy, gLost int64
	gCovered      int64
	drawn         []float64
	t, h          int64 // original j's start, and when the sender took events before it

	// The period search: the lag at original ref; the period per found
	// (phase 1), checked over one more period from i0 (phase 2). gd[j]:
	// the dummies in the gap after original j (0 or 1 in a period).
	gd                   []int8
	ref, refLag, per, i0 int64
	phase                int
	dirty                bool
}

// newPacedLine starts a paced run from s.nextSeq at s.now.
func (s *sim) newPacedLine(until int64) pacedLine {
	prot := s.c.Mode != Off
	r := pacedLine{
		s:       s,
		until:   until,
		n:       min(s.gap, s.c.Frames-s.nextSeq, pacedMaxRun),
		a:       s.nextSeq,
		ser:     s.serFrame,
		acks:    prot && !s.c.NoAck,
		dummies: prot && !s.c.NoDummy,
		size:    int64(s.c.FrameBytes + lg.HeaderBytes),
		ts:      s.pacedT[:0],
		lack:    s.senderAck,
		t:       s.now,
		h:       s.now,
		gd:      s.pacedGD[:0],
		drawn:   s.pacedDrawn[:0],
		dirty:   true,
	}
	ow := s.oneWay()
	r.ackRT = r.ser + 2*ow + s.ser64
	r.last = r.ser + ow
	if r.acks {
		r.last = r.ackRT
		s.pacedAcks = s.pendingAcks(s.pacedAcks[:0])
		r.pend = s.pacedAcks
	}
	r.covered = s.covered
	r.gCovered = r.covered
	return r
}

// admit reads the Tx buffer when original a+j's copy joins it, the ACKs
// due by h taken (at a tie, before the send); false if the copy is
// tail-dropped.
func (r *pacedLine) admit(j int64) bool {
	for len(r.pend) > 0 && r.pend[0].at <= r.h {
		r.lack = max(r.lack, r.pend[0].seq)
		r.pend = r.pend[1:]
	}
	for r.own < len(r.ts) && r.ts[r.own]+r.ackRT <= r.h {
		r.own++
		r.lack = max(r.lack, r.a+int64(r.own))
	}
	occ := r.a + j + 1 - r.lack
	if c := int64(r.s.c.TxBufferCap); c > 0 && occ*r.size > c {
		return false
	}
	r.maxTx = max(r.maxTx, occ*r.size)
	return true
}

// send sends the original at t, counting the gap before it.
func (r *pacedLine) send() {
	r.nDummy, r.nLost, r.covered, r.drawn = r.nDummy+r.gDummy, r.nLost+r.gLost, r.gCovered, r.drawn[:0]
	r.ts = append(r.ts, r.t)
}

// seekPeriod and jump send whole periods of the line's pattern at once:
// original j+p starts p
// periods after j once the lag of an original's start behind its timer
// repeats, each gap's timing not depending on whether its dummy is
// corrupted (one dummy, after which the original is there), and the Tx
// buffer's reading repeats once the ACKs counted are the run's own from
// the repeating part.
//
// seekPeriod moves the period search on by original j, started lag
// behind its timer.
func (r *pacedLine) seekPeriod(j, lag int64) {
	switch {
	case r.dirty:
		r.ref, r.refLag, r.phase, r.dirty = j, lag, 0, false
	case r.phase == 0 && j > r.ref && lag == r.refLag:
		r.per, r.phase = j-r.ref, 1
	case r.phase == 0 && j-r.ref >= pacedPeriodMax:
		r.ref, r.refLag = j, lag
	}
	if r.phase == 1 && (!r.acks || len(r.pend) == 0 && int64(r.own) > r.ref && r.lack == r.a+int64(r.own)) {
		r.i0, r.phase = j, 2
	}
}

// jump sends as many whole periods after original j as fit, and restarts
// the period search; it returns the original it reached.
func (r *pacedLine) jump(j, lag int64) int64 {
	s := r.s
	if k := min((r.n-1-j)/r.per, (r.until-r.last-r.t)/(r.per*s.pacePS)); k >= 1 {
		r.drawPeriods(j, k)
		for i := int64(0); i < k*r.per; i++ {
			r.ts = append(r.ts, r.ts[len(r.ts)-int(r.per)]+r.per*s.pacePS)
			r.gd = append(r.gd, r.gd[len(r.gd)-int(r.per)])
		}
		r.t += k * r.per * s.pacePS
		r.h = r.t
		r.own += int(k * r.per)
		r.lack += k * r.per
		j += k * r.per
		s.pacedJumped += k * r.per
	}
	r.ref, r.refLag, r.phase = j, lag, 0
	return j
}

// drawPeriods draws the corruption of the dummies of k periods after
// original j, in order, as sending them draws it.
func (r *pacedLine) drawPeriods(j, k int64) {
	s := r.s
	for i := int64(0); i < k*r.per; i++ {
		if r.gd[j-r.per+i%r.per] == 0 {
			continue
		}
		r.nDummy++
		if s.c.LossSmall > 0 && s.uniform(drawBern, s.c.LossSmall, 0) < s.c.LossSmall {
			r.nLost++
		} else {
			r.covered = r.a + j + i
		}
	}
}

// gap works out the line after original j to the next original's start:
// the wire frees at t+ser.
func (r *pacedLine) gap(j int64) {
	free, avail := r.t+r.ser, (r.a+j+1)*r.s.pacePS
	r.gDummy, r.gLost = 0, 0
	if !r.dummies || avail <= free {
		r.gd = append(r.gd, 0)
		r.t = max(free, avail)
		r.h = r.t
		return
	}
	free, idle := r.sendDummies(j, free, avail)
	r.h, r.t = max(free, avail), max(free, avail)
	if idle && free < avail {
		k := (avail - free + r.s.ser64 - 1) / r.s.ser64
		r.gDummy += k
		r.t = free + k*r.s.ser64
	}
	r.gd = append(r.gd, 1)
	if r.gDummy > 1 || idle && free < avail {
		r.dirty = true // the gap's timing depends on its draws, or idles
	}
}

// sendDummies: dummies go until the original is in the queue (avail);
// once one has covered the original just sent, the line idles on
// redundant ones, and the original waits for the one under way. It
// returns when the wire frees after the last dummy drawn, and whether
// the line idles.
func (r *pacedLine) sendDummies(j, free, avail int64) (int64, bool) {
	s := r.s
	idle := false
	for free < avail && !idle {
		r.gDummy++
		lost := false
		if s.c.LossSmall > 0 { // as bern draws
			u := s.uniform(drawBern, s.c.LossSmall, 0)
			r.drawn = append(r.drawn, u)
			lost = u < s.c.LossSmall
		}
		if lost {
			r.gLost++
		} else {
			r.gCovered = r.a + j
			idle = true
		}
		free += s.ser64
	}
	return free, idle
}

// finish gives back the draws of the dummies after the run's last
// original, keeps the buffers, and counts the run, if it holds an
// original.
func (r *pacedLine) finish() bool {
	s := r.s
	if len(r.drawn) > 0 {
		// The dummies after the run's last original are sent by
		// stepping, which draws their corruption again: the same numbers.
		s.injected = append(append([]float64(nil), r.drawn...), s.injected...)
		s.draws -= int64(len(r.drawn))
	}
	s.pacedT, s.pacedDrawn, s.pacedGD = r.ts, r.drawn[:0], r.gd
	if len(r.ts) == 0 {
		return false
	}
	s.emitPaced(r.ts, r.nDummy, r.nLost, r.covered, r.maxTx)
	return true
}

// emitPaced counts a paced run of len(ts) originals, original nextSeq+j
// starting at ts[j], with the dummies between them, and schedules its
// arrivals: those whose ACK the sender takes before its next frame as one
// steady run, the rest one by one.
func (s *sim) emitPaced(ts []int64, dummies, lost, covered, maxTx int64) {
	s.rec = nil
	k := int64(len(ts))
	a := s.nextSeq
	s.res.FramesSent += k
	s.res.Transmissions += k + dummies
	s.res.Dummies += dummies
	s.res.Corrupted += lost
	s.res.MaxTxBufferBytes = max(s.res.MaxTxBufferBytes, maxTx)
	s.covered = covered
	s.nextSeq += k
	s.gap -= k
	s.pacedRuns++
	s.pacedEnd = s.nextSeq
	ser, ow := s.serFrame, s.oneWay()
	s.slotFree = ts[k-1] + ser
	body := k - 1
	if s.c.Mode != Off && !s.c.NoAck {
		// Original j's ACK reaches the sender at ts[j]+ser+2 ow+ser64:
		// the body's by the end of the run's last frame.
		lim := ts[k-1] - 2*ow - s.ser64
		for body >= 0 && ts[body] > lim {
			body--
		}
	}
	now := s.now
	if body >= 0 {
		s.now = ts[body] // scheduled as the body's last frame schedules it
		s.at(event{at: ts[body] + ser + ow, kind: evArrive, p: packet{seq: a, kind: lg.PktOriginal, bytes: s.c.FrameBytes, run: body + 1}})
	}
	for j := body + 1; j < k; j++ {
		s.now = ts[j]
		s.at(event{at: ts[j] + ser + ow, kind: evArrive, p: packet{seq: a + j, kind: lg.PktOriginal, bytes: s.c.FrameBytes}})
	}
	s.now = now
}

// Cycles of a paced run (cycle.go). The state cycle.go encodes leaves the
// generator's timer out: a paced stretch repeats if, besides, either the
// next original is due at the same time relative to the clock (a cycle
// of p originals lasting p periods: the sender keeps pace), or no
// original of the cycle waited for the timer, nor will in the cycles
// jumped (a sender behind the generator, its backlog sent back to back
// after pauses, while the buffer rotates): each original it sent found
// the next already made when the wire freed after it. That slack (sigma)
// moves by the cycle's duration less p periods each cycle.

// paceSlack records, as original seq leaves, by how much the next one
// was made before the wire freed after it.
func (s *sim) paceSlack(seq int64) {
	s.sigma[seq%int64(len(s.sigma))] = s.slotFree - (seq+1)*s.pacePS
}

// paceRepeats: the state now repeats the state at mark m for the timer
// too.
func (s *sim) paceRepeats(m *cycleMark) bool {
	if s.pacePS == 0 || s.nextSeq*s.pacePS-s.now == m.seq*s.pacePS-m.at {
		return true
	}
	return m.seq >= s.pacedEnd && s.minSlack(m.seq) >= 0
}

// minSlack is the least slack of the originals sent since from.
func (s *sim) minSlack(from int64) int64 {
	least := int64(1) << 62
	for q := from; q < s.nextSeq; q++ {
		least = min(least, s.sigma[q%int64(len(s.sigma))])
	}
	return least
}

// paceCycles bounds the cycles of p originals lasting d picoseconds that
// may be jumped from the mark at s.cyc.aSeq (cycle.go jump): as many as
// keep the slack of a sender falling no further behind at 0 or above.
func (s *sim) paceCycles(p, d int64) int64 {
	c := &s.cyc
	if s.pacePS == 0 || s.nextSeq*s.pacePS-s.now == c.aSeq*s.pacePS-c.aAt {
		return math.MaxInt64
	}
	delta := d - p*s.pacePS
	if delta >= 0 {
		return math.MaxInt64
	}
	return s.minSlack(c.aSeq) / -delta
}

// freeDummy: the dummy about to be sent changes nothing but the counters
// whether or not it is corrupted: the next original will be there when
// it ends, no pause holds or can reach the sender before then, and no
// original is missing at the receiver (a dummy arriving there only
// repeats the highest original seen). What follows it is then the same
// either way; covered differs, which matters only until the next original
// leaves. A cycle (cycle.go) may hold such dummies: their draws are made
// again, one by one, for every cycle jumped.
func (s *sim) freeDummy() bool {
	return s.off == nil && !s.paused && s.pendingBP == 0 && s.undetected == 0 && s.nextSeq < s.c.Frames &&
		s.made(s.now+s.ser64)
}

// jumpFreeDummies draws the corruption of n free dummies of cycles jumped
// over, ds originals in all, in order, and sets covered as the last of
// them leaves it.
func (s *sim) jumpFreeDummies(n, ds int64) {
	last := s.freeSeq == s.nextSeq // the cycle's last free dummy covers the original before the mark
	lost := false
	for i := int64(0); i < n; i++ {
		lost = s.uniform(drawBern, s.c.LossSmall, 0) < s.c.LossSmall
		if lost {
			s.res.Corrupted++
			s.freeLost++
		}
	}
	s.freeDraws += n
	s.freeSeq += ds
	switch {
	case last && !lost:
		s.covered = s.nextSeq + ds - 1
	case last:
		s.covered = min(s.covered, s.nextSeq-1) // below the new nextSeq-1, as when it was lost
	case s.covered == s.nextSeq-1:
		s.covered += ds
	}
}
