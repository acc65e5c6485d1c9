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
	n := min(s.gap, s.c.Frames-s.nextSeq, pacedMaxRun)
	a, t0 := s.nextSeq, s.now
	ser, ow := s.serFrame, s.oneWay()
	ackRT := ser + 2*ow + s.ser64 // an original's start to its ACK at the sender
	prot := s.c.Mode != Off
	acks := prot && !s.c.NoAck
	dummies := prot && !s.c.NoDummy
	size := int64(s.c.FrameBytes + lg.HeaderBytes)
	last := ser + ow // an original's start to the last event it causes
	if acks {
		last = ackRT
	}

	ts := s.pacedT[:0]
	var pend []futureAck
	if acks {
		s.pacedAcks = s.pendingAcks(s.pacedAcks[:0])
		pend = s.pacedAcks
	}
	lack := s.senderAck
	own := 0 // the run's originals whose ACK lack counts
	covered := s.covered
	var nDummy, nLost, maxTx int64
	// The dummies in the gap before original j, not counted until it is
	// sent, and their draws (given back if it is not).
	var gDummy, gLost int64
	gCovered, drawn := covered, s.pacedDrawn[:0]
	t, h := t0, t0 // original j's start, and when the sender took events before it
	// The period search: the lag at original ref; the period per found
	// (phase 1), checked over one more period from i0 (phase 2). gd[j]:
	// the dummies in the gap after original j (0 or 1 in a period).
	gd := s.pacedGD[:0]
	var ref, refLag, per, i0 int64
	phase, dirty := 0, true
	for j := int64(0); j < n; j++ {
		if t+last > until {
			break
		}
		if acks {
			// The Tx buffer when original a+j's copy joins it: the ACKs
			// due by h have been taken (at a tie, before the send).
			for len(pend) > 0 && pend[0].at <= h {
				lack = max(lack, pend[0].seq)
				pend = pend[1:]
			}
			for own < len(ts) && ts[own]+ackRT <= h {
				own++
				lack = max(lack, a+int64(own))
			}
			occ := a + j + 1 - lack
			if s.c.TxBufferCap > 0 && occ*size > int64(s.c.TxBufferCap) {
				break // its copy is tail-dropped: stepped
			}
			maxTx = max(maxTx, occ*size)
		}
		nDummy, nLost, covered, drawn = nDummy+gDummy, nLost+gLost, gCovered, drawn[:0]
		ts = append(ts, t)
		if j+1 == n {
			break
		}
		// Whole periods of the line's pattern at once: original j+p
		// starts p periods after j once the lag of an original's start
		// behind its timer repeats, each gap's timing not depending on
		// whether its dummy is corrupted (one dummy, after which the
		// original is there), and the Tx buffer's reading repeats once
		// the ACKs counted are the run's own from the repeating part.
		lag := t - (a+j)*s.pacePS
		switch {
		case dirty:
			ref, refLag, phase, dirty = j, lag, 0, false
		case phase == 0 && j > ref && lag == refLag:
			per, phase = j-ref, 1
		case phase == 0 && j-ref >= pacedPeriodMax:
			ref, refLag = j, lag
		}
		if phase == 1 && (!acks || len(pend) == 0 && int64(own) > ref && lack == a+int64(own)) {
			i0, phase = j, 2
		}
		if phase == 2 && j == i0+per {
			if k := min((n-1-j)/per, (until-last-t)/(per*s.pacePS)); k >= 1 {
				for i := int64(0); i < k*per; i++ {
					if gd[j-per+i%per] == 0 {
						continue
					}
					nDummy++
					if s.c.LossSmall > 0 && s.uniform(drawBern, s.c.LossSmall, 0) < s.c.LossSmall {
						nLost++
					} else {
						covered = a + j + i
					}
				}
				for i := int64(0); i < k*per; i++ {
					ts = append(ts, ts[len(ts)-int(per)]+per*s.pacePS)
					gd = append(gd, gd[len(gd)-int(per)])
				}
				t += k * per * s.pacePS
				h = t
				own += int(k * per)
				lack += k * per
				j += k * per
				s.pacedJumped += k * per
			}
			ref, refLag, phase = j, lag, 0
			if j+1 == n {
				break
			}
		}
		// The next original: the wire frees at t+ser.
		free, avail := t+ser, (a+j+1)*s.pacePS
		gDummy, gLost = 0, 0
		if !dummies || avail <= free {
			gd = append(gd, 0)
			t = max(free, avail)
			h = t
			continue
		}
		// Dummies go until the original is in the queue; once one has
		// covered the original just sent, the line idles on redundant
		// ones, and the original waits for the one under way.
		idle := false
		for free < avail && !idle {
			gDummy++
			lost := false
			if s.c.LossSmall > 0 { // as bern draws
				u := s.uniform(drawBern, s.c.LossSmall, 0)
				drawn = append(drawn, u)
				lost = u < s.c.LossSmall
			}
			if lost {
				gLost++
			} else {
				gCovered = a + j
				idle = true
			}
			free += s.ser64
		}
		h, t = max(free, avail), max(free, avail)
		if idle && free < avail {
			k := (avail - free + s.ser64 - 1) / s.ser64
			gDummy += k
			t = free + k*s.ser64
		}
		gd = append(gd, 1)
		if gDummy > 1 || idle && free < avail {
			dirty = true // the gap's timing depends on its draws, or idles
		}
	}
	if len(drawn) > 0 {
		// The dummies after the run's last original are sent by
		// stepping, which draws their corruption again: the same numbers.
		s.injected = append(append([]float64(nil), drawn...), s.injected...)
		s.draws -= int64(len(drawn))
	}
	s.pacedT, s.pacedDrawn, s.pacedGD = ts, drawn[:0], gd
	if len(ts) == 0 {
		return false
	}
	s.emitPaced(ts, nDummy, nLost, covered, maxTx)
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
		s.nextSeq*s.pacePS <= s.now+s.ser64
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
