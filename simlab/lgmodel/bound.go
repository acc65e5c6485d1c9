package lgmodel

import lg "testbed/p4/linkguardian"

// What the receiver keeps of a run stuck behind a hole.
//
// Without ackNoTimeout (NoTimeout) a hole no copy fills holds ackNo for
// good. The receiver's record of what lies above it then grows with the
// run: in the non-blocking mode every original delivered around the hole
// is noted (sim.delivered, for de-duplication, until ackNo passes it), and
// in the ordered mode every original that finds the reorder buffer full is
// a hole for good (sim.holes): an entry a frame sent, 19 MB of maps per
// 2^18 frames (BenchmarkStuckStress*KeepAll), some 1.4 GB for a loss-sweep
// point of 2x10^7 frames on a switch with no timer application. What can
// still matter is kept:
//
//   - an original or a copy that may still arrive is at or above
//     arrivalLow; an entry of delivered or givenUp below it is never
//     looked up again (a late copy is all they are for);
//   - a hole below arrivalLow is never filled: no copy of it will come
//     (a hole is notified once, when found, and a lost copy is not made
//     again). When ackNo itself waits at one, ackNo never moves again, and
//     the holes between it and arrivalLow are never looked up: they are
//     forgotten, the one at ackNo kept (it stops advanceAck, and keeps the
//     receiver from counting as settled, as all of them did).
//
// This is done only under NoTimeout: with ackNoTimeout every hole is
// skipped within the timeout, which bounds what is kept by time, and the
// timeouts look their holes up. The results are those of keeping
// everything (TestBoundedStuckRunSameAsKeepingAll).

// pruneMin is the fewest entries kept before any is looked at for
// forgetting.
const pruneMin = 4096

// bound forgets what can no longer matter once the receiver's record has
// doubled since it was last looked at (at least pruneMin entries): each
// look goes over what is kept, paid for by the entries added since. With
// ackNoTimeout it is a test of one flag (inlined).
func (s *sim) bound() {
	if s.c.NoTimeout {
		s.forget()
	}
}

// forget drops the entries that can no longer matter, when it is time to.
func (s *sim) forget() {
	if len(s.holes)+len(s.delivered)+len(s.givenUp) < max(s.pruneAt, pruneMin) && !s.lookAll || s.keepAll {
		return
	}
	low := s.arrivalLow()
	for seq := range s.delivered {
		if seq < low {
			delete(s.delivered, seq)
		}
	}
	for seq := range s.givenUp {
		if seq < low {
			delete(s.givenUp, seq)
		}
	}
	if s.ackNo < low && s.holes[s.ackNo] {
		for seq := range s.holes {
			if seq > s.ackNo && seq < low {
				delete(s.holes, seq)
			}
		}
	}
	s.pruneAt = 2 * (len(s.holes) + len(s.delivered) + len(s.givenUp))
}

// arrivalLow is the lowest sequence number an original or a copy that may
// still reach the receiver carries: an original not yet arrived is at or
// above highest (they cross in order), a copy is of a hole a notification
// on its way or being handled names, one held in the Tx buffer, one on the
// retransmission queue, or one on the wire. Holes are notified only as
// they are found, at or above highest.
func (s *sim) arrivalLow() int64 {
	low := s.highest
	for _, qi := range []int{qNotify, qHandled} {
		f := &s.q[qi]
		for _, e := range f.ev[f.head:] {
			low = min(low, e.seq)
		}
	}
	f := &s.q[qArrive]
	for _, e := range f.ev[f.head:] {
		if e.p.kind == lg.PktRetransmitted {
			low = min(low, e.p.seq)
		}
	}
	for _, seqs := range [2][]int64{s.held, s.retx} {
		for _, seq := range seqs {
			low = min(low, seq)
		}
	}
	return low
}

// popRetx takes the copy at the retransmission queue's head. The queue is
// the slice s.retx, which moves on along its array (moving the queue down
// a place at every copy sent was quadratic in its length); once empty it
// starts again at its array's front (retxArr), so a run reuses one array.
// An append that outgrew the array made a new one, whose front is where
// the slice starts until the first pop from it.
func (s *sim) popRetx() int64 {
	if !sameArray(s.retx, s.retxArr) {
		s.retxArr = s.retx[:0]
	}
	seq := s.retx[0]
	if s.retx = s.retx[1:]; len(s.retx) == 0 {
		s.retx = s.retxArr
	}
	return seq
}

// sameArray says whether a and b are slices of one array (both with room).
func sameArray(a, b []int64) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:cap(a)][cap(a)-1] == &b[:cap(b)][cap(b)-1]
}
