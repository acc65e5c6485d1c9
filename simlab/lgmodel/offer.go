package lgmodel

import (
	"fmt"
	"math"
	"math/rand/v2"

	lg "testbed/p4/linkguardian"
)

// Frames offered one by one.
//
// A stress test offers MTU frames at line rate. A model of end hosts needs
// the same link for sparse traffic of mixed sizes instead: a request frame
// now, an ACK later, a burst of segments after that. NewOffered starts such
// a run: nothing is sent until Offer puts a frame in the sender's normal
// queue, and every original's arrival at the receiver's output (in order,
// or out of order in the non-blocking mode) is reported by Deliveries. The
// protocol is the same code as the stress test's: sequence numbers, loss
// detection by a gap or a dummy, N copies, the reorder buffer, ackNoTimeout.
// There is no skip-ahead: every frame's corruption is decided as it is sent,
// either drawn from the run's source or decided by the caller (Frame.U).

// Frame is an original frame offered to the sender.
type Frame struct {
	At    int64 // picoseconds: when it is in the sender's normal queue
	Bytes int   // L2 frame with FCS, without the LinkGuardian header
	// Loss is the corruption probability of this frame and of each of its
	// copies on the wire.
	Loss float64
	// U decides the original's own corruption: it is corrupted when
	// U < Loss. A negative U draws it from the run's source instead. A
	// caller that samples rare outcomes itself (skipping trials that see no
	// corruption at all) passes its own uniform draw here.
	U float64
	// Drop is the part of Loss the sender's loss-emulation table makes
	// (Config.Drop): a lost frame with U < Drop is counted in Dropped.
	Drop float64
}

// Delivery is an original leaving the receiver for the next hop.
type Delivery struct {
	Seq int64 // the value Offer returned
	At  int64 // picoseconds
}

type frameInfo struct {
	bytes      int
	loss, drop float64
}

type offered struct {
	// queue[head:] are the offers not yet sent, in order: taken from the
	// head, moved down once half of it is taken (one copy per frame, not
	// one per frame taken).
	queue     []Frame
	head      int
	info      []frameInfo // by sequence number, from infoBase
	infoBase  int64
	delivered []Delivery
}

// queued is how many offers wait to be sent.
func (o *offered) queued() int { return len(o.queue) - o.head }

// NewOffered prepares a run at simulated time 0 that sends only the frames
// offered to it. cfg.Frames is ignored; cfg.Loss and cfg.FrameBytes still
// set the dummies' corruption (cfg.LossSmall, or Loss scaled to 64 bytes).
// cfg.Step is implied.
func NewOffered(cfg Config, r *rand.Rand) (*Sim, error) {
	cfg.Frames, cfg.Step, cfg.MaxRun, cfg.Period = Continuous, true, 0, 0 // the offers' times pace it
	m, err := New(cfg, r)
	if err != nil {
		return nil, err
	}
	m.s.off = &offered{}
	return m, nil
}

// Offer queues an original. Frames must be offered in order of At, none
// before the time the run has reached. It returns the frame's sequence
// number (0, 1, ... in order of offering).
func (m *Sim) Offer(f Frame) (int64, error) {
	s := m.s
	o := s.off
	if o == nil {
		return 0, fmt.Errorf("lgmodel: Offer on a stress test (use NewOffered)")
	}
	last := s.now
	if o.queued() > 0 {
		last = max(last, o.queue[len(o.queue)-1].At)
	}
	if f.At < last || f.Bytes < 64 || !(f.Loss >= 0 && f.Loss < 1) || math.IsNaN(f.U) {
		return 0, fmt.Errorf("lgmodel: bad offer %+v (run at %d ps)", f, last)
	}
	o.queue = append(o.queue, f)
	return s.nextSeq + int64(o.queued()) - 1, nil
}

// Deliveries appends to dst the originals delivered since the last call.
func (m *Sim) Deliveries(dst []Delivery) []Delivery {
	o := m.s.off
	if o == nil {
		return dst
	}
	dst = append(dst, o.delivered...)
	o.delivered = o.delivered[:0]
	return dst
}

// NextAt is the simulated time (ps) of the next thing the run will do by
// itself: an event, or a frame to send. math.MaxInt64 when it waits for an
// offer.
func (m *Sim) NextAt() int64 {
	s := m.s
	t := s.nextAt()
	if want, gate := s.nextSend(); want >= 0 {
		t = min(t, max(s.now, gate))
	}
	return t
}

// Quiet reports whether the link has settled: nothing queued, in flight,
// buffered or awaiting repair, and the latest original announced by a
// dummy that got through. A quiet link behaves as a fresh one (apart from
// the phase of the idle line's dummies, under one 64-byte frame time).
func (m *Sim) Quiet() bool {
	s := m.s
	settled := s.pending == 0 && len(s.retx) == 0 && len(s.holes) == 0 && s.buf.n == 0 &&
		!s.paused && s.pendingBP == 0 && s.undetected == 0 && s.notifPending == 0
	if s.off != nil {
		settled = settled && s.off.queued() == 0
	}
	return settled && (s.c.Mode == Off || s.covered >= s.nextSeq-1)
}

// nextSend is what the sender puts on the wire next and the earliest time
// it may start: the end of the frame on the wire, or, for an offered frame
// not yet in the queue, its arrival.
func (s *sim) nextSend() (want int, gate int64) {
	want, gate = s.next(), s.slotFree
	if want < 0 && s.off != nil && s.off.queued() > 0 && !s.paused && s.nextSeq < s.c.Frames {
		want, gate = lg.PktOriginal, max(s.slotFree, s.off.queue[s.off.head].At)
	}
	if want < 0 && s.pacePS > 0 && s.off == nil && !s.paused && s.nextSeq < s.c.Frames {
		// A paced original not yet generated: it is sent when it is.
		want, gate = lg.PktOriginal, s.slotFree
		if !s.made(s.slotFree) {
			gate = s.nextSeq * s.pacePS
		}
	}
	return want, gate
}

// ready: the head offer is in the queue at time t (always, for a stress test).
func (o *offered) ready(t int64) bool {
	return o == nil || (o.queued() > 0 && o.queue[o.head].At <= t)
}

// frame is an original's size and corruption probability, for its copies.
func (o *offered) frame(seq int64, bytes int, loss, drop float64) (int, float64, float64) {
	if o == nil || seq < o.infoBase || seq-o.infoBase >= int64(len(o.info)) {
		return bytes, loss, drop
	}
	f := o.info[seq-o.infoBase]
	return f.bytes, f.loss, f.drop
}

func (o *offered) deliver(seq, at int64) {
	if o != nil {
		o.delivered = append(o.delivered, Delivery{Seq: seq, At: at})
	}
}

// takeOffered sends the head offer as the next original.
func (s *sim) takeOffered() packet {
	o := s.off
	f := o.queue[o.head]
	o.head++
	if o.head == len(o.queue) {
		o.queue, o.head = o.queue[:0], 0
	} else if o.head >= 1024 && o.head >= len(o.queue)/2 {
		o.queue, o.head = o.queue[:copy(o.queue, o.queue[o.head:])], 0
	}
	lost, dropped := f.U < f.Loss, f.U < f.Loss && f.U < f.Drop
	if f.U < 0 {
		lost, dropped = s.lose(f.Loss, f.Drop)
	}
	// Copies come from the Tx buffer: keep what they need while an
	// original may still be retransmitted (copyLow). Unprotected (Off),
	// the receiver never notifies a hole (sim.arrive delivers before detecting anything), and
	// with no copies none is queued: no copy is ever made, so nothing is
	// kept. (Keeping every frame of an unprotected run was what grew: an
	// entry per frame sent, some 20 million over the backpressure recipe's
	// TCP flow before LinkGuardian is switched on.)
	if s.c.Mode != Off && s.c.Copies > 0 {
		// highest bounds copyLow from above: what is on its way is looked
		// at only when half of what is kept may go.
		half := int64(len(o.info)) / 2
		if d := s.highest - o.infoBase; d > 0 && d >= half {
			if drop := min(s.copyLow()-o.infoBase, int64(len(o.info))); drop > 0 && drop >= half {
				o.info = o.info[:copy(o.info, o.info[drop:])]
				o.infoBase += drop
			}
		}
		if len(o.info) == 0 {
			o.infoBase = s.nextSeq
		}
		o.info = append(o.info, frameInfo{bytes: f.Bytes, loss: f.Loss, drop: f.Drop})
	}
	p := packet{seq: s.nextSeq, kind: lg.PktOriginal, bytes: f.Bytes, lost: lost, dropped: dropped}
	s.nextSeq++
	s.res.FramesSent++
	return p
}

// copyLow is the lowest original a copy may still be made of: one the
// receiver has not yet seen past (a later arrival or a dummy may yet make
// it a hole), one a loss notification on its way back or being handled
// names, one whose copies wait on the retransmission queue. A hole below
// it is never notified again (a lost copy is not: only ackNoTimeout skips
// it), so with NoTimeout, where no timeout moves ackNo past a hole whose
// copies were all lost, what is kept still follows the link's flight, not
// the run's length.
func (s *sim) copyLow() int64 {
	low := s.highest
	for _, qi := range []int{qNotify, qHandled} {
		f := &s.q[qi]
		for _, e := range f.ev[f.head:] {
			low = min(low, e.seq)
		}
	}
	for _, seq := range s.retx {
		low = min(low, seq)
	}
	return low
}
