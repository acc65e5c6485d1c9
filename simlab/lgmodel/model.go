// Package lgmodel is a packet-level model of LinkGuardian (SIGCOMM'23, §3
// and Appendix A) between a sender and a receiver switch on a corrupting
// link, in simulated time with real serialization and latency.
//
// The mechanism, not its results, is modelled: sequence numbers (16-bit with
// an era bit), the sender's Tx buffer freed by the receiver's leading ACK
// and bounded like the reorder buffer, loss detection by a gap in sequence numbers, a loss notification to the sender,
// N retransmitted copies on a high-priority queue, a lowest-priority dummy
// queue exposing tail losses, the receiver's reorder buffer (recirculation,
// draining at 100G, each frame back at the ingress a loop latency after its
// pass) with pause/resume backpressure (Algorithm 2) taking
// effect after a flight delay, ackNoTimeout skipping an unrepaired hole,
// tracking of at most 5 consecutive losses, and the non-blocking mode that
// forwards out of order. Every frame's corruption is an independent draw at
// the link's loss rate for its size. Effective loss, effective link speed,
// buffer occupancy and timeouts are counted as they happen.
//
// Speed: the number of good originals until the next corruption is drawn
// at once from the geometric distribution and counted down. While the
// protocol is in steady state (no hole, empty reorder buffer, not paused,
// nothing corrupted in flight) those frames are delivered as one event;
// Config.Step turns this off (every frame's corruption drawn as it is
// sent), and a test checks that both give the same distribution. Where
// the state repeats exactly from frame to frame without being steady (the
// ordered mode's reorder buffer that never empties between losses), whole
// cycles are jumped over (cycle.go); Config.NoCycleSkip turns this off,
// and a test checks that both give identical results.
// Passes of the recirculation loop that only send frames round are run
// ahead of the sender (loopAhead); Config.NoLoopAhead turns this off, and
// a test checks that both give identical results. The stretch after a
// corruption, from a state seen before, is replayed from a recording of
// it, drawing the same random numbers and handing over to stepping at the
// first whose outcome differs (replay.go); Config.NoReplay turns this off,
// and a test checks that both give identical results. A steady stretch
// longer than Config.MaxRun is sent as the chain of its capped runs that
// start by the time asked for, as one run (runChain); Config.NoRunChain
// turns this off, and a test checks that both give identical results.
package lgmodel

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"time"

	lg "testbed/p4/linkguardian"
)

// Mode is the protection mode.
type Mode int

// Modes.
const (
	Off         Mode = iota // no protection: corrupted frames are lost
	Ordered                 // LinkGuardian: reorder buffer and backpressure
	NonBlocking             // LinkGuardianNB: forward out of order
)

func (m Mode) String() string {
	return [...]string{"off", "linkguardian", "linkguardian-nb"}[m]
}

// Config is one stress test: Frames MTU frames offered at line rate.
type Config struct {
	Mode       Mode
	LinkBps    float64
	FrameBytes int     // L2 frame of the stress traffic, e.g. 1518
	Loss       float64 // corruption probability of a FrameBytes frame
	// LossSmall is the corruption probability of a minimum-size (64 B)
	// frame: dummies. Default: Loss scaled by size, 1-(1-Loss)^(64/FrameBytes).
	LossSmall float64
	// Drop is the part of Loss that the sender's loss-emulation table
	// (LinkGuardian's emulate_random_pkt_drop) makes, for counting only:
	// of the originals and copies corrupted, those the table took are
	// counted in Result.Dropped (a frame's one uniform draw u is lost when
	// u < Loss and taken by the table when u < Drop <= Loss).
	Drop         float64
	Copies       int           // N retransmitted copies (Eq. 2)
	Backpressure bool          // pause/resume (ordered mode)
	PauseCells   int           // thresholds on the reorder buffer, 80 B cells
	ResumeCells  int           //
	FlightResume time.Duration // resume decision -> sender resumes
	AckNoTimeout time.Duration
	RxBufferCap  int // reorder buffer capacity in bytes (§4: 200 KB)
	// TxBufferCap bounds the sender's Tx buffer in bytes (0: unbounded).
	// The buffer is the recirculation port's queue that egress-mirrored
	// copies wait in (artifact: sender/setup-ae.py, mirror sessions to
	// RECIRC_PORT_PIPE_0 queue RECIRC_BUFFERING_Q_ID); a copy that finds it
	// full is tail-dropped by the traffic manager. Nothing pauses the
	// sender for it, so a lost original whose copy was dropped is not
	// retransmitted and its hole is skipped by ackNoTimeout.
	TxBufferCap int
	// NoTxCopy: the sender keeps no copy of what it sends (the switch has
	// no Tx-buffer mirror session, sender.p4 copy_for_buffering's
	// 0x100|idx): every original's copy is lost before the Tx buffer, as
	// one a full buffer tail-drops, so nothing lost is retransmitted and
	// every hole is skipped by ackNoTimeout.
	NoTxCopy bool
	// NoAck: the receiver has no explicit ACK packet (the control plane
	// injected none from the CPU port into the protected port's
	// lowest-priority queue, or it does not replenish itself: no mirror
	// session 0x180|idx), and the stress traffic has no reverse traffic to
	// piggyback on, so the leading ACK reaches the sender only inside
	// loss notifications (receiver.p4 set_loss_notification_lack_*).
	// Between two losses nothing frees the Tx buffer: it fills, and the
	// copies of what follows are tail-dropped (TxBufferCap) until the next
	// notification.
	NoAck bool
	// NoDummy: the sender has no dummy packet (none injected from the CPU
	// port, or no self-replenishing mirror session 0x180|idx), so a lost
	// frame is detected only when a later original arrives: a lost tail
	// stays unnoticed (sender.p4's dummy, §3.2).
	NoDummy bool
	// NoTimeout: the receiver has no timer packets (no packet-generator
	// application times the link, receiver.p4's ackNoTimeout rides on
	// them), so a hole that no copy fills is never skipped. In the
	// ordered mode everything after it waits in the reorder buffer, and
	// is dropped once that is full, for good; the non-blocking mode
	// forwards around it. When nothing but frames going round the
	// reorder buffer is left to happen the run ends (stuck): what was not
	// delivered is counted lost. No timer packet becomes a pause frame
	// either: no backpressure.
	NoTimeout bool
	Pipeline  time.Duration // one switch pass (port to port), each way
	// LoopLatency is a recirculated frame's way from the end of its pass
	// through the recirculation port back to the ingress decision: the
	// loopback MAC, the ingress parser and pipeline. Frames on it are in
	// flight, not in the port's queue, whose depth alone the pause and
	// resume thresholds watch (receiver.p4 compares
	// reg_recirc_buffer_pfc_pause_threshold and ..._resume_threshold with
	// the recirculation queue's deq_qdepth).
	LoopLatency time.Duration
	Propagation time.Duration // fibre
	// RetxHandling is the sender's extra time between a loss notification
	// arriving and its copies being ready to send (mirroring, multicast,
	// fetching from the Tx buffer).
	RetxHandling time.Duration
	Frames       int64
	Step         bool // simulate every frame (no skip-ahead)
	// NoCycleSkip simulates, frame by frame, the stretches that repeat
	// exactly (cycle.go) instead of jumping over whole cycles of them.
	// Results are identical either way; a test holds them to it.
	NoCycleSkip bool
	// NoLoopAhead handles every pass of the recirculation loop as the
	// main loop comes to it instead of running the loop ahead of the
	// sender (loopAhead). Results are identical either way; a test holds
	// them to it.
	NoLoopAhead bool
	// NoReplay simulates every stretch after a corruption instead of
	// replaying a recording of the same stretch (replay.go). Results are
	// identical either way; a test holds them to it.
	NoReplay bool
	// MaxRun caps the frames skipped over at once (0: no cap), so that
	// counters read while the run advances grow smoothly and a run stopped
	// (StopOffering) has sent at most the run of MaxRun under way.
	MaxRun int64
	// NoRunChain sends a steady stretch longer than MaxRun as its runs of
	// MaxRun one at a time, as the loop comes to each, instead of the
	// runs that start by the time asked for as one (runChain). Results are
	// identical either way; a test holds them to it.
	NoRunChain bool
	// CourierLoop is the period at which the receiver's courier packet
	// carries the leading ACK back (txpath.go); 0: no courier accounting,
	// the Tx buffer is read as the copies held. With it, the run also
	// reads the Tx buffer as the queue the copies the ACK missed at their
	// first pass wait in (Result.MaxTxQueueBytes, Sim.TxQueue). It
	// changes nothing else in the run.
	CourierLoop time.Duration
	// AckExtra lengthens the courier's way back beyond the model's pass
	// and fibre (txpath.go).
	AckExtra time.Duration
	// LoopbackMAC has the read port serve a copy in the copy's own time
	// on a MAC (txpath.go): the sender's loopback port 16 is a front-panel
	// port in MAC-near loopback (sender/setup-ae.py lines 45-48 and 111),
	// so a copy takes its 2 B lr_buffered header, FCS, preamble and gap,
	// 1543 B of a 1518 B frame at 100G, where its original took 1541 B of
	// the wire; off, the read port serves a copy in its original's wire
	// time. With it a sender back to back outruns the read port by 0.13%
	// and between losses the queue never drains: at line rate and 1e-5 a
	// 2x10^7-frame run's queue reaches megabytes, which the device meets
	// by tail-dropping copies at the queue's limit (not modelled: that
	// changes the run, the accounting only reads it), and the accounting's
	// jumps cannot cross a queue that grows. So it is off in the simulated
	// switch; TestTxBufferAckPathAndSamples measures what it does.
	LoopbackMAC bool
	// Period paces the stress test's originals as a packet generator's
	// periodic timer does, one packet a firing: original i is in the
	// sender's normal queue from i x Period on (the LinkGuardian
	// artifact's generator fires every 124 ns at 100G,
	// sender/config_pktgen.py lines 12-17). The sender takes it when the
	// wire is free and no pause holds it; in a gap the dummy queue's
	// dummy goes first, as the scheduler serves any queue with a frame. A
	// period no longer than a frame's time on the wire is back to back. A
	// paced run is simulated frame by frame (no skipped runs, jumped
	// cycles or replays: those key on back-to-back sending), with the
	// same corruption draws as a back-to-back one, but for its steady
	// stretches between corruptions, which are worked out as runs
	// (paced.go) unless NoPacedRun: results are identical either way.
	Period time.Duration
	// NoPacedRun simulates a paced stress test's steady stretches frame
	// by frame (paced.go).
	NoPacedRun bool
}

// Defaults fills the paper's parameters for a 25G or 100G link.
func Defaults(mode Mode, linkBps, loss float64, frames int64) (Config, error) {
	c := Config{Mode: mode, LinkBps: linkBps, FrameBytes: 1518, Loss: loss, Frames: frames,
		Backpressure: mode == Ordered, RxBufferCap: 200_000,
		// Sized as the reorder buffer: both are a recirculation port's
		// queue on the same chip (§4).
		TxBufferCap: 200_000,
		// Tofino's port-to-port latency with MAC and PCS is about 1 us.
		Pipeline: time.Microsecond,
		// A recirculation pass crosses the chip as a port-to-port pass
		// does (the receiver does not bypass egress for recirculated
		// frames, "buys more time for reTx to arrive", receiver.p4).
		LoopLatency: time.Microsecond,
		Propagation: 10 * time.Nanosecond, // 2 m of fibre
	}
	var err error
	if c.Copies, err = lg.Copies(1e-8, math.Max(loss, 1e-12)); err != nil {
		return c, err
	}
	if c.FlightResume, err = lg.FlightResume(linkBps); err != nil {
		return c, err
	}
	c.PauseCells, c.ResumeCells = lg.Thresholds(c.FlightResume)
	if c.AckNoTimeout, err = lg.AckNoTimeout(linkBps); err != nil {
		return c, err
	}
	// The retransmission path: the next frame reveals the gap (one frame
	// time), the notification crosses back (a pass and a 64 B frame), the
	// sender handles it, and the copy crosses (a frame time and a pass),
	// behind up to one frame already on the wire. The handling time is what
	// makes this path as long as the longest delay the paper measured.
	maxRetx, err := lg.MaxRetxDelay(linkBps)
	if err != nil {
		return c, err
	}
	slot := time.Duration(float64((c.FrameBytes+20+lg.HeaderBytes)*8) / linkBps * 1e9)
	pass := c.Pipeline + c.Propagation
	c.RetxHandling = maxRetx - 2*pass - 3*slot - time.Duration(float64((64+20+lg.HeaderBytes)*8)/linkBps*1e9)
	return c, nil
}

// Result are the counters of a run.
type Result struct {
	FramesSent       int64 // original frames transmitted
	Transmissions    int64 // every frame on the wire: originals, copies, dummies
	Copies           int64
	Dummies          int64
	Corrupted        int64 // frames lost on the wire
	Delivered        int64 // originals delivered to the next hop
	Lost             int64 // originals never delivered
	Dropped          int64 // corrupted originals and copies the loss-emulation table took (Config.Drop, Frame.Drop)
	Timeouts         int64 // holes skipped by ackNoTimeout
	BufferDrops      int64 // reorder-buffer overflows
	TxBufferDrops    int64 // copies the full Tx buffer could not hold
	PauseFrames      int64
	MaxTxBufferBytes int64 // copies held
	// MaxTxQueueBytes is the watermark of the queue the Tx buffer is read
	// from, in 80 B cells, with the courier's cadence (Config.CourierLoop;
	// 0 without it).
	MaxTxQueueBytes  int64
	MaxRxBufferBytes int64
	Duration         time.Duration // simulated
	EffectiveLoss    float64
	EffectiveBps     float64 // delivered originals' line-rate bits per second
}

// packet and event are kept small: the event queues copy them by value.
type packet struct {
	// seq is the original sequence number (unbounded here; wire form is
	// 16 bits + era); for a dummy, the last original sent before it.
	seq   int64
	run   int64 // >1: a steady run of good originals seq..seq+run-1
	bytes int
	kind  int8
	lost  bool
	// dropped: lost to the loss-emulation table (counted in Dropped).
	dropped bool
}

type event struct {
	at      int64
	seq     int64
	idx     int
	sched   int64 // when it was scheduled: ties go by it, then by idx
	p       packet
	n       int
	kind    int8
	handled bool  // evNotify: the sender's handling delay has passed
	mask    uint8 // evNotify, handled: the holes whose copy the Tx buffer holds
}

const (
	evArrive = iota
	evNotify
	evPause
	evResume
	evAck
	evTimeout
	evDrain
	evLoop
)

// Every kind of event is scheduled a fixed delay after the time it is
// scheduled at, and time never goes back: arrivals land a pass after the
// frame's last bit, which leaves after the last bit of the frame before;
// notifications, ACKs, timeouts and pause/resume frames take their fixed
// delays; one drain is pending at a time. So each kind comes due in the
// order it was scheduled, and the pending events are a few FIFOs merged by
// time (ties broken by scheduling order, as one priority queue would).
const (
	qArrive  = iota
	qNotify  // a loss notification crossing back
	qHandled // ... and handled at the sender
	qBP      // pause and resume frames
	qAck
	qTimeout
	qDrain
	qLoop // recirculated frames on their way back to the ingress decision
	nQueues
)

// deque is the recirculation queue: a ring, so that a frame going round
// again costs no copying of the others. Its length is a power of two (16,
// doubling), so a position wraps by a mask, not a division.
type deque struct {
	a       []packet
	head, n int
}

func (d *deque) at(i int) *packet { return &d.a[(d.head+i)&(len(d.a)-1)] }

func (d *deque) push(p packet) {
	if d.n == len(d.a) {
		a := make([]packet, max(16, 2*len(d.a)))
		for i := 0; i < d.n; i++ {
			a[i] = *d.at(i)
		}
		d.a, d.head = a, 0
	}
	d.a[(d.head+d.n)&(len(d.a)-1)] = p
	d.n++
}

func (d *deque) pop() packet {
	p := d.a[d.head]
	d.head = (d.head + 1) & (len(d.a) - 1)
	d.n--
	return p
}

// fifo is one kind's pending events, due in order.
type fifo struct {
	ev   []event
	head int
}

func (f *fifo) len() int { return len(f.ev) - f.head }

// headAt is when the first event is due (math.MaxInt64: none).
func (f *fifo) headAt() int64 {
	if f.head == len(f.ev) {
		return math.MaxInt64
	}
	return f.ev[f.head].at
}

func (f *fifo) push(e event) {
	*f.grow() = e
}

// grow appends an event to be filled in, zeroed.
func (f *fifo) grow() *event {
	if f.head > 32 && f.head*2 >= len(f.ev) {
		// Reuse the spent front: the queue never grows beyond its peak.
		f.ev = f.ev[:copy(f.ev, f.ev[f.head:])]
		f.head = 0
	}
	if n := len(f.ev); n < cap(f.ev) {
		f.ev = f.ev[:n+1]
		e := &f.ev[n]
		*e = event{}
		return e
	}
	f.ev = append(f.ev, event{})
	return &f.ev[len(f.ev)-1]
}

func queueOf(e *event) int {
	switch e.kind {
	case evArrive:
		return qArrive
	case evNotify:
		if e.handled {
			return qHandled
		}
		return qNotify
	case evPause, evResume:
		return qBP
	case evAck:
		return qAck
	case evTimeout:
		return qTimeout
	case evLoop:
		return qLoop
	}
	return qDrain
}

// before orders events: by time, then by scheduling order. Time never goes
// back, so the order of idx is that of sched; sched alone keeps the order
// for the passes loopAhead handles before the sender's frames of that time.
func (a *event) before(b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.sched != b.sched {
		return a.sched < b.sched
	}
	return a.idx < b.idx
}

// at schedules an event.
func (s *sim) at(ev event) {
	s.nev++
	ev.idx = s.nev
	ev.sched = s.now
	qi := queueOf(&ev)
	f := &s.q[qi]
	if f.len() == 0 && s.firstQ >= -1 {
		// A new head: it may come before the earliest known.
		if s.firstQ < 0 {
			s.firstQ = qi
		} else if h := &s.q[s.firstQ].ev[s.q[s.firstQ].head]; ev.before(h) {
			s.firstQ = qi
		}
	}
	f.push(ev)
	s.pending++
	s.busy |= 1 << qi
}

// first is the queue holding the earliest pending event (-1: none).
func (s *sim) first() int {
	if s.firstQ >= -1 {
		return s.firstQ
	}
	best := -1
	var be *event
	for m := s.busy; m != 0; m &= m - 1 {
		i := bits.TrailingZeros8(m)
		f := &s.q[i]
		e := &f.ev[f.head]
		if best < 0 || e.before(be) {
			best, be = i, e
		}
	}
	s.firstQ = best
	return best
}

// emptied clears q[qi]'s bit in busy if it holds no event now (an event
// left it).
func (s *sim) emptied(qi int) {
	if f := &s.q[qi]; f.head == len(f.ev) {
		s.busy &^= 1 << qi
	}
}

// nextAt is the time of the earliest pending event (math.MaxInt64: none).
func (s *sim) nextAt() int64 {
	if i := s.first(); i >= 0 {
		return s.q[i].ev[s.q[i].head].at
	}
	return math.MaxInt64
}

func durPS(d time.Duration) int64 { return int64(d) * 1000 }

type sim struct {
	c       Config
	r       *rand.Rand
	res     Result
	q       [nQueues]fifo
	pending int   // events in q
	busy    uint8 // bit i: q[i] holds an event
	firstQ  int   // the queue first() found (-1: none), -2: to be found again
	nev     int

	// sender
	now, slotFree int64
	nextSeq       int64
	// senderAck is the receiver's leading ACK as the sender last heard it:
	// the highest original seen + 1. Copies below it leave the Tx buffer
	// (sender.p4: a buffered packet with seq <= leading_ack is dropped
	// unless its hole bit is set, then it is retransmitted), except those
	// of notified holes, held until their copies are made.
	senderAck    int64
	held         []int64 // notified holes whose copies are not made yet
	txDropped    []int64 // originals above senderAck whose copy was tail-dropped, ascending
	retx         []int64
	retxArr      []int64 // retx's array from its front (popRetx)
	paused       bool
	pendingBP    int
	undetected   int64 // originals lost on the wire that the receiver has not yet seen as holes
	notifPending int
	// gap is the number of good originals before the next corrupted one
	// (-1: not drawn yet). Corruptions are i.i.d., so the gaps between them
	// are geometric: drawn once, counted down frame by frame or skipped
	// over in runs and cycles alike.
	gap      int64
	draws    int64 // random numbers drawn so far
	cyc      cycles
	covered  int64 // last original a delivered dummy has announced
	idleFrom int64 // the line carries only redundant dummies since then (-1: not idle)
	// The last skipped-over run: its first frame's start, slot and length,
	// so counters read mid-run count only the frames already sent.
	runStart, runSlot, runLen int64
	runEnd                    int64 // nextSeq after the last run
	// chainLast is where sending the capped runs of the latest chain one
	// by one would have left the clock (chainClock): it is there once the
	// loop stops.
	chainLast int64
	chained   int64 // capped runs sent in chains, beyond the first of each (tests)
	// prevRuns are the runs before the last whose ACKs may still be on
	// their way (runs of MaxRun frames follow each other): start, slot,
	// length, end.
	prevRuns                    [][4]int64
	reached                     int64 // the latest time Advance was asked for
	until                       int64 // the time the loop under way is asked for
	serFrame, ser64, drainFrame int64 // ser(FrameBytes), ser(64), drainPS(FrameBytes)
	// pacePS is Config.Period in picoseconds when it paces the originals
	// (longer than serFrame), else 0: original i is generated at i x pacePS.
	pacePS int64
	// paced.go: scratch of a paced run, and the runs sent (tests)
	pacedT     []int64
	pacedAcks  []futureAck
	pacedDrawn []float64
	pacedGD    []int8
	// Dummies whose corruption changes nothing but the counters (paced.go
	// freeDummy): drawn, lost, and nextSeq when the last one was sent.
	freeDraws, freeLost, freeSeq int64
	pacedRuns                    int64
	pacedJumped                  int64            // originals a paced run jumped over in whole periods (tests)
	pacedEnd                     int64            // nextSeq after the last paced run
	sigma                        [cycleRing]int64 // paceSlack by seq modulo cycleRing
	// staleSlack (tests): a replay finds the slack ring full of slack no
	// original left (replay.go restorePaced must install all it reads).
	staleSlack bool

	// receiver
	lackSent  int64 // the last leading ACK sent back
	ackNo     int64
	highest   int64 // highest original seen + 1
	holes     map[int64]bool
	buf       deque // recirculation queue: the reorder buffer (ordered mode)
	flight    deque // frames past their pass, on the loop back to the decision
	flightB   int64 // their bytes (part of bufBytes)
	loopPS    int64
	aheadN    int64  // events loopAhead handled (tests)
	aheadAt   int64  // the time of the latest of them
	inBuf     []bool // by seq modulo its length: the originals in buf, all in [ackNo, ackNo+len)
	bufBytes  int64
	draining  bool
	bpPaused  bool
	steadyTx  int64
	delivered map[int64]bool // NB mode: delivered out of order, for de-duplication
	// givenUp are holes above ackNo that their timeout has counted lost
	// while ackNo still waited below them. A late copy of one is a
	// duplicate: the original was given up and counted once, as lost.
	givenUp map[int64]bool
	pruneAt int  // bound looks at the three maps above once they hold this many entries
	keepAll bool // bound forgets nothing (tests)
	lookAll bool // bound looks at every entry added (tests)

	off *offered // frames offered one by one (NewOffered); nil for a stress test

	// replay.go
	rec               *recording // under way (nil: none)
	memo              map[uint64][]*recording
	memoAll           []*recording // every recording in memo, in the clock's order (keep)
	memoHand          int
	memoBytes         int64 // their bytes (recording.bytes)
	decBytes          int64 // the unpacked ends kept (recording.dec, decBudget)
	decScratch        unpacked
	memoScratch       []int64
	memoPacked        []byte
	lossSeq           int64               // the last corrupted original (checkpoint)
	seen              map[uint64]struct{} // hashes of keys met once (seenBefore)
	injected          []float64           // drawn by a replay that handed over: the next numbers drawn
	replays, replayed int64               // replays started, and reaching their end (tests)
	midReplayed       int64               // ... of them, from a checkpoint (tests)
	slackJumps        int64               // cycle jumps recorded through (cycle.go slackBound; tests)

	tp *txPath // the Tx buffer's read queue with the courier (nil: off)
}

// Run simulates cfg with randomness from r.
func Run(cfg Config, r *rand.Rand) (Result, error) {
	m, err := New(cfg, r)
	if err != nil {
		return Result{}, err
	}
	m.Advance(math.MaxInt64)
	return m.Result(), nil
}

// Sim is a run in progress, advanced in simulated time: what an emulator
// uses to let counters grow while they are polled.
type Sim struct{ s *sim }

// Continuous is a Frames value for traffic that runs until StopOffering.
const Continuous = math.MaxInt64 / 8

// New prepares a run of cfg at simulated time 0.
func New(cfg Config, r *rand.Rand) (*Sim, error) {
	if cfg.Frames <= 0 || cfg.Frames > Continuous || cfg.LinkBps <= 0 || cfg.FrameBytes < 64 || cfg.Loss < 0 || cfg.Loss >= 1 {
		return nil, fmt.Errorf("lgmodel: bad config %+v", cfg)
	}
	// Copies 0 is a retransmission that reaches no replica: the
	// multicast group set_retx_copies names does not exist on the switch,
	// or the receiver's loss notification never reaches the sender.
	if cfg.Mode != Off && cfg.Copies < 0 {
		return nil, fmt.Errorf("lgmodel: %s with %d copies", cfg.Mode, cfg.Copies)
	}
	if cfg.NoAck || cfg.NoTimeout {
		// The Tx buffer's fill then depends on when notifications come,
		// and holes outlive their timeouts, which the recordings and
		// cycles (replay.go, cycle.go) do not key on: simulate every
		// stretch (same results, more work).
		cfg.NoCycleSkip, cfg.NoReplay = true, true
	}
	if cfg.NoTimeout {
		// The pause and resume frames are timer packets too (receiver.p4
		// timer_to_pfc): no timer, no backpressure.
		cfg.Backpressure = false
	}
	if cfg.LossSmall == 0 && cfg.Loss > 0 {
		cfg.LossSmall = -math.Expm1(64.0 / float64(cfg.FrameBytes) * math.Log1p(-cfg.Loss))
	}
	s := &sim{c: cfg, r: r, holes: map[int64]bool{}, delivered: map[int64]bool{}, givenUp: map[int64]bool{}, covered: -1, idleFrom: -1, gap: -1, firstQ: -1}
	s.serFrame, s.ser64, s.drainFrame = s.serPS(cfg.FrameBytes), s.serPS(64), drainPS(cfg.FrameBytes)
	s.loopPS = durPS(cfg.LoopLatency)
	if p := durPS(cfg.Period); p > s.serFrame {
		s.pacePS = p
	}
	s.steadyTx = s.steadyTxFrames()
	if cfg.CourierLoop > 0 && cfg.Mode != Off && !cfg.NoAck && !cfg.NoTxCopy {
		s.tp = newTxPath(s)
	}
	return &Sim{s: s}, nil
}

// Advance simulates until simulated time until (picoseconds since the
// start) or until the run is done, and reports whether it is done.
func (m *Sim) Advance(until int64) bool {
	m.s.reached = max(m.s.reached, until)
	m.s.loop(until)
	// The clock is where stepping would have left it: past the passes
	// handled ahead and where the capped runs sent as one would have
	// left it (chainClock), none later than the time asked for.
	m.s.now = max(m.s.now, m.s.aheadAt, m.s.chainLast)
	return m.s.done()
}

// AdvanceTo is Advance with a duration.
func (m *Sim) AdvanceTo(t time.Duration) bool {
	if t >= time.Duration(math.MaxInt64/1000) {
		return m.Advance(math.MaxInt64)
	}
	return m.Advance(durPS(t))
}

// Now is the simulated time reached.
func (m *Sim) Now() time.Duration { return time.Duration(m.s.now / 1000) }

// StopOffering ends the offered traffic: nothing new is sent after the
// originals already sent; copies, dummies and the receiver finish.
func (m *Sim) StopOffering() { m.s.c.Frames = m.s.nextSeq }

// Buffers are the Tx buffer and reorder buffer occupancy now, and whether
// the sender is paused.
func (m *Sim) Buffers() (txBytes, rxBytes int64, paused bool) {
	s := m.s
	if s.c.Mode != Off {
		txBytes = s.txFrames() * int64(s.c.FrameBytes+lg.HeaderBytes)
	}
	return txBytes, s.bufBytes, s.paused
}

// Result are the counters so far (final once Advance reports done).
// With the courier's Tx buffer accounting (Config.CourierLoop), its
// figure (MaxTxQueueBytes) is brought to the model's clock first, as
// TxQueue does.
func (m *Sim) Result() Result {
	res := m.Counters()
	if s := m.s; s.tp != nil {
		s.tp.advance(s.now)
		_, res.MaxTxQueueBytes = s.tp.queueBytes()
	}
	return res
}

// Counters is Result without the Tx buffer accounting's figure
// (MaxTxQueueBytes is 0): every other field is the model's own. The
// accounting runs behind the model's clock (the model brings it forward
// before each stretch it replays) and is brought to the clock when read
// (Result, TxQueue); a reader that wants the frame counters often (a
// switch accounting its ports at every catch-up) reads these, and asks
// TxQueue when its queue is read.
func (m *Sim) Counters() Result {
	s := m.s
	res := s.res
	if s.reached < math.MaxInt64 {
		sent, arrived := s.runProgress(s.reached)
		res.FramesSent -= sent
		res.Transmissions -= sent
		res.Delivered += arrived
	}
	d := s.now
	res.Duration = time.Duration(d / 1000)
	if res.FramesSent > 0 {
		res.EffectiveLoss = float64(res.Lost) / float64(res.FramesSent)
	}
	if d > 0 {
		res.EffectiveBps = float64(res.Delivered) * float64(s.wire(s.c.FrameBytes)) * 8 / (float64(d) * 1e-12)
	}
	if s.c.Mode != Off && res.FramesSent > 0 && s.steadyFits() {
		res.MaxTxBufferBytes = max(res.MaxTxBufferBytes, min(s.steadyTx, res.FramesSent)*int64(s.c.FrameBytes+lg.HeaderBytes))
	}
	return res
}

// TxQueue is the queue the Tx buffer is read from with the courier's
// cadence (Config.CourierLoop): its depth now and its watermark, in
// bytes (whole 80 B cells a copy); ok is false without the courier. It
// brings the accounting to the model's clock: the same answer whenever
// it is asked while the clock stands, and however often it was asked
// before (the accounting gives the same for any slicing of its time).
func (m *Sim) TxQueue() (now, watermark int64, ok bool) {
	s := m.s
	if s.tp == nil {
		return 0, 0, false
	}
	s.tp.advance(s.now)
	now, watermark = s.tp.queueBytes()
	return now, watermark, true
}

// HasTxQueue is whether TxQueue answers (the courier's accounting is on),
// without bringing the accounting to the clock.
func (m *Sim) HasTxQueue() bool { return m.s.tp != nil }

// wire is a frame's bytes on the wire: preamble+SFD and IPG (20 B), plus
// the LinkGuardian header when protection is on.
func (s *sim) wire(frame int) int {
	if s.c.Mode == Off {
		return frame + 20
	}
	return frame + 20 + lg.HeaderBytes
}

func (s *sim) ser(bytes int) int64 {
	switch bytes {
	case s.c.FrameBytes:
		return s.serFrame
	case 64:
		return s.ser64
	}
	return s.serPS(bytes)
}

func (s *sim) serPS(bytes int) int64 { return int64(float64(s.wire(bytes)*8) / s.c.LinkBps * 1e12) }

func (s *sim) oneWay() int64 { return durPS(s.c.Pipeline) + durPS(s.c.Propagation) }

// steadyTxFrames is the Tx buffer occupancy of uninterrupted line-rate
// traffic: a copy is freed one round trip after it starts (serialization,
// one way, the ACK's way back).
func (s *sim) steadyTxFrames() int64 {
	rt := s.ser(s.c.FrameBytes) + 2*s.oneWay() + s.ser(64)
	return (rt + s.ser(s.c.FrameBytes) - 1) / s.ser(s.c.FrameBytes)
}

// lose draws a frame's corruption at probability loss, and whether the
// loss-emulation table (drop <= loss of it) took it, from one draw.
func (s *sim) lose(loss, drop float64) (lost, dropped bool) {
	if loss <= 0 {
		return false, false
	}
	u := s.uniform(drawLose, loss, drop)
	return u < loss, u < loss && u < drop
}

func (s *sim) bern(p float64) bool {
	if p <= 0 {
		return false
	}
	return s.uniform(drawBern, p, 0) < p
}

// done: every original sent and resolved at the receiver.
func (s *sim) done() bool {
	return s.nextSeq == s.c.Frames && s.res.Delivered+s.res.Lost == s.c.Frames && s.pending == 0
}

// steadyFits: the steady window of copies fits in the Tx buffer, so a
// steady run loses none of them.
func (s *sim) steadyFits() bool {
	if s.c.NoAck {
		return false // no ACK bounds the window
	}
	return s.c.TxBufferCap <= 0 || s.steadyTx*int64(s.c.FrameBytes+lg.HeaderBytes) <= int64(s.c.TxBufferCap)
}

// txFrames is the Tx buffer's occupancy in copies.
func (s *sim) txFrames() int64 {
	lack := s.txLack()
	n := s.nextSeq - lack
	// txDropped is in order of sequence numbers (sent in order; takeHeld
	// and setLack only take some out): those from lack on are its tail.
	i, _ := slices.BinarySearch(s.txDropped, lack)
	n -= int64(len(s.txDropped) - i)
	for _, h := range s.held {
		if h < lack {
			n++ // not counted above once the leading ACK passed it
		}
	}
	return n
}

// txLack is the leading ACK the sender holds now. A steady run is sent as
// one block and lands as one event (emitRun), so the ACKs of its frames
// come back, in this model, together a round trip after its last frame;
// on the wire they come one frame time apart, frame i's a round trip after
// it left: runStart + (i+1) slots, one way, the ACK's 64 B and one way
// back. Those count here, else every frame sent after a run (a loss ends
// one) would find the run's last round trip of copies still held, and the
// Tx buffer would read two round trips' window instead of one. Runs of
// MaxRun frames follow one another, so the runs before the last count too.
func (s *sim) txLack() int64 {
	lack := s.senderAck
	if s.c.NoAck {
		return lack // no run's ACKs come back
	}
	acked := func(start, slot, n, end int64) int64 {
		back := start + slot + 2*s.oneWay() + s.ser(64)
		if n <= 0 || s.now < back {
			return 0
		}
		return end - n + min(n, (s.now-back)/slot+1)
	}
	if s.runLen > 0 {
		lack = max(lack, acked(s.runStart, s.runSlot, s.runLen, s.runEnd))
	}
	// Runs before the last one (of MaxRun frames each, back to back):
	// those whose ACKs are all back are forgotten.
	keep := s.prevRuns[:0]
	for _, r := range s.prevRuns {
		if r[3] > s.senderAck {
			lack = max(lack, acked(r[0], r[1], r[2], r[3]))
			keep = append(keep, r)
		}
	}
	s.prevRuns = keep
	return lack
}

// setLack records a leading ACK reaching the sender.
func (s *sim) setLack(lack int64) {
	if lack <= s.senderAck {
		return
	}
	s.senderAck = lack
	i := 0
	for i < len(s.txDropped) && s.txDropped[i] < lack {
		i++
	}
	if i > 0 {
		s.txDropped = s.txDropped[:copy(s.txDropped, s.txDropped[i:])]
	}
}

// takeHeld: a loss notification for n holes from seq reaches the sender.
// The Tx buffer holds the copy of each hole whose copy was not dropped;
// those stay held until the copies are made. Bit i of the mask: hole
// seq+i is retransmitted.
func (s *sim) takeHeld(seq int64, n int) uint8 {
	var mask uint8
	for i := 0; i < n; i++ {
		h := seq + int64(i)
		if j, ok := slices.BinarySearch(s.txDropped, h); ok {
			s.txDropped = slices.Delete(s.txDropped, j, j+1)
			continue
		}
		mask |= 1 << i
		s.held = append(s.held, h)
		if s.tp != nil {
			s.tpInput(tpEntry{kind: tpHoldOn, at: s.now, seq: h})
		}
	}
	return mask
}

func (s *sim) steady() bool { return s.pacePS == 0 && s.settled() }

// settled: nothing of a loss is left on either side, nor any pause; the
// steady window fits the Tx buffer.
func (s *sim) settled() bool {
	return !s.c.Step && s.steadyFits() && len(s.txDropped) == 0 && len(s.held) == 0 && len(s.holes) == 0 && s.buf.n == 0 && s.flight.n == 0 && !s.draining && !s.paused && s.pendingBP == 0 &&
		len(s.retx) == 0 && s.undetected == 0 && s.notifPending == 0 && !s.bpPaused
}

// next says what the sender would put on the wire now.
func (s *sim) next() int {
	switch {
	case len(s.retx) > 0:
		return lg.PktRetransmitted
	case s.nextSeq < s.c.Frames && !s.paused && s.off.ready(max(s.now, s.slotFree)) && s.made(max(s.now, s.slotFree)):
		return lg.PktOriginal
	case s.c.Mode != Off && !s.c.NoDummy && s.res.Delivered+s.res.Lost < s.c.Frames && s.covered < s.nextSeq-1:
		return lg.PktDummy
	}
	return -1
}

func (s *sim) loop(until int64) {
	s.steps(until)
	s.rec = nil // a recording cut by the time asked for is not kept
}

func (s *sim) steps(until int64) {
	s.until = until
	for !s.done() {
		want, gate := s.nextSend()
		if s.c.NoTimeout && want < 0 && s.stuck() {
			s.giveUp()
			return
		}
		if qi := s.first(); qi >= 0 {
			f := &s.q[qi]
			if want < 0 || f.ev[f.head].at <= gate {
				if f.ev[f.head].at > until {
					return
				}
				// Handle a copy: handling may schedule into the same queue.
				e := f.ev[f.head]
				f.head++
				s.pending--
				s.firstQ = -2 // to be found again
				s.emptied(qi)
				s.now = max(s.now, e.at)
				s.handle(&e)
				s.loopAhead()
				continue
			}
		}
		if want < 0 || max(s.now, gate) > until {
			return
		}
		s.now = max(s.now, gate)
		s.leaveIdle()
		if want == lg.PktOriginal {
			s.cycle(until)
			s.endSegment()
			for {
				// A corruption: a recording under way met a second one
				// and is not kept; in a state seen before, what followed
				// it last time is replayed (replay.go), up to the
				// repeating stretch, jumped over to the next corruption.
				// At a checkpoint of the stretch after one, likewise.
				if s.gap == 0 {
					s.rec = nil
					s.lossSeq = s.nextSeq
				} else if s.gap < 0 || s.rec != nil || !s.checkpoint() {
					break
				}
				if !s.memoable(until) {
					break
				}
				var found, cyc bool
				if want, found, cyc = s.replay(until); !found {
					break
				}
				if cyc {
					s.cycleFound(until)
				}
			}
			if s.rec != nil && s.gap > 0 && s.settled() {
				// The stretch is over: the line is back in steady state
				// (a paced sender's: its next stretch is a paced run).
				s.finishRecording(false)
			}
		}
		s.send(want)
	}
}

// While the dummy queue holds only redundant dummies (one announcing the
// latest original already got through) the line keeps sending them; they
// change nothing at the receiver, so they are not simulated one by one.
// A frame that becomes ready waits for the dummy under way to finish.
func (s *sim) goIdle() {
	if s.idleFrom < 0 {
		s.idleFrom = s.slotFree
	}
}

func (s *sim) leaveIdle() {
	if s.idleFrom < 0 {
		return
	}
	slot := s.ser(64)
	n := (s.now - s.idleFrom + slot - 1) / slot
	s.res.Dummies += n
	s.res.Transmissions += n
	s.now = s.idleFrom + n*slot
	s.idleFrom = -1
}

// send puts the next frame on the wire: copies first, then normal traffic
// unless paused, then (protected modes) a dummy.
func (s *sim) send(kind int) {
	var p packet
	switch kind {
	case lg.PktRetransmitted:
		seq := s.popRetx()
		bytes, loss, drop := s.off.frame(seq, s.c.FrameBytes, s.c.Loss, s.c.Drop)
		p = packet{seq: seq, kind: lg.PktRetransmitted, bytes: bytes}
		p.lost, p.dropped = s.lose(loss, drop)
		s.res.Copies++
	case lg.PktOriginal:
		if s.off != nil {
			p = s.takeOffered()
			break
		}
		lost, dropped := false, false
		switch {
		case s.c.Step:
			lost, dropped = s.lose(s.c.Loss, s.c.Drop)
		default:
			if s.gap < 0 {
				s.gap = s.geometric()
			}
			switch {
			case s.gap == 0:
				lost, s.gap = true, -1
				if s.c.Drop > 0 {
					// Which of the causes took it: the table with
					// probability Drop/Loss.
					dropped = s.uniform(drawCause, s.c.Loss, s.c.Drop)*s.c.Loss < s.c.Drop
				}
			case s.pacedRunnable() && s.pacedRun(s.until):
				return
			case s.pacePS == 0 && (s.c.Mode == Off || s.steady()):
				// Skip ahead: send the good frames before the next
				// corruption as one run.
				n := min(s.gap, s.c.Frames-s.nextSeq)
				if s.c.MaxRun > 0 {
					n = min(n, s.runChain())
					s.chainLast = max(s.chainLast, s.chainClock(n))
					s.chained += (n - 1) / s.c.MaxRun
				}
				s.gap -= n
				s.emitRun(packet{seq: s.nextSeq, kind: lg.PktOriginal, bytes: s.c.FrameBytes, run: n})
				return
			default:
				s.gap--
			}
		}
		p = packet{seq: s.nextSeq, kind: lg.PktOriginal, bytes: s.c.FrameBytes, lost: lost, dropped: dropped}
		s.nextSeq++
		s.res.FramesSent++
	case lg.PktDummy:
		free := s.pacePS > 0 && s.c.LossSmall > 0 && s.freeDummy()
		p = packet{kind: lg.PktDummy, bytes: 64, seq: s.nextSeq - 1, lost: s.bern(s.c.LossSmall)}
		if free {
			s.freeDraws, s.freeSeq = s.freeDraws+1, s.nextSeq
			if p.lost {
				s.freeLost++
			}
		}
		s.res.Dummies++
		if !p.lost {
			s.covered = p.seq
		}
	}
	s.transmit(p)
	if s.next() < 0 && s.c.Mode != Off && !s.c.NoDummy {
		s.goIdle()
	}
}

// stuck: without ackNoTimeout (NoTimeout), every original is sent,
// nothing is left to send and nothing is on its way but frames going
// round the reorder buffer behind a hole no copy will fill, and some
// originals are neither delivered nor lost: nothing will change.
func (s *sim) stuck() bool {
	if s.nextSeq < s.c.Frames || s.res.Delivered+s.res.Lost >= s.c.Frames || len(s.retx) > 0 || s.notifPending > 0 {
		return false
	}
	for qi := range s.q {
		if qi != qDrain && qi != qLoop && s.q[qi].len() > 0 {
			return false
		}
	}
	return true
}

// giveUp ends a stuck run: the originals not delivered never will be.
// The frames in the reorder buffer go round for good; their passes
// change nothing and are not simulated.
func (s *sim) giveUp() {
	s.res.Lost = s.c.Frames - s.res.Delivered
	for qi := range s.q {
		s.q[qi].ev, s.q[qi].head = s.q[qi].ev[:0], 0
	}
	s.pending, s.firstQ, s.draining, s.busy = 0, -1, false, 0
}

// geometric draws how many good frames come before the next corrupted one.
func (s *sim) geometric() int64 {
	if s.c.Loss <= 0 {
		return math.MaxInt64 / 4
	}
	return geometricOf(s.uniform(drawGeometric, s.c.Loss, 0), s.c.Loss)
}

// geometricOf is the number of good frames before the next corrupted one
// that the uniform draw u gives at loss.
func geometricOf(u, loss float64) int64 {
	k := math.Floor(math.Log(1-u) / math.Log1p(-loss)) // 1-u in (0, 1]
	if k > math.MaxInt64/4 {
		return math.MaxInt64 / 4
	}
	return int64(k)
}

// runProgress is how a reading at time t sees skipped-over runs, which
// the simulation counts whole: notSent frames of the last run counted as
// sent have not been sent in full by t, and arrived frames of runs still on the
// wire have landed (and are delivered, being in order) by t.
func (s *sim) runProgress(t int64) (notSent, arrived int64) {
	if s.runLen > 0 && t < s.runStart+s.runLen*s.runSlot {
		done := int64(0) // frames whose last bit has left by t
		if t >= s.runStart {
			done = min(s.runLen, (t-s.runStart)/s.runSlot)
		}
		notSent = s.runLen - done
	}
	var runs []*event
	f := &s.q[qArrive]
	for i := f.head; i < len(f.ev); i++ {
		if e := &f.ev[i]; e.p.run > 1 && e.at > t {
			runs = append(runs, e)
		}
	}
	if len(runs) == 0 {
		return notSent, 0
	}
	slices.SortFunc(runs, func(a, b *event) int { return cmp.Compare(a.p.seq, b.p.seq) })
	next := s.ackNo
	for _, e := range runs {
		if s.c.Mode != Off && (e.p.seq != next || len(s.holes) > 0 || s.buf.n > 0 || s.flight.n > 0) {
			break // would not be delivered on arrival: count it when it lands
		}
		slot := s.ser(e.p.bytes)
		first := e.at - (e.p.run-1)*slot
		if t >= first {
			arrived += min(e.p.run, (t-first)/slot+1)
		}
		next = e.p.seq + e.p.run
	}
	return notSent, arrived
}

// runChain is how many frames a steady stretch sends now as one run:
// MaxRun, or (without NoRunChain) the runs of MaxRun that go back to back
// from now and start by the time asked for (s.until), which the loop
// would send one after the other before it stops there. Nothing can tell
// them apart: between them the loop only lands the runs before (in order,
// steady), the leading ACK and the frames sent and landed read the same
// for one run as for its pieces (txLack, runProgress), and whoever reads
// the model or stops it (StopOffering) does so at the time asked for, by
// when the capped runs would all have started; the run under way then is
// the chain's last.
func (s *sim) runChain() int64 {
	if s.c.NoRunChain {
		return s.c.MaxRun
	}
	span := s.c.MaxRun * s.serFrame
	return s.c.MaxRun * (1 + max(s.until-s.now, 0)/span)
}

// chainClock is the latest time, by the time asked for, that sending a
// chain of n frames from now as its capped runs one by one would have
// moved the clock to: the last run's start, or a run before it landing
// or its ACK reaching the sender (ackBack), events the chain has not.
func (s *sim) chainClock(n int64) int64 {
	span := s.c.MaxRun * s.serFrame
	last := (n - 1) / s.c.MaxRun // the runs before the last
	t := s.now + last*span
	back := s.oneWay() + s.ser64 // a run's landing to its ACK's
	if s.c.Mode == Off || s.c.NoAck {
		back = 0 // no ACK (arrive, ackBack)
	}
	for j := last; j > 0; j-- {
		land := s.now + j*span + s.oneWay() // run j-1's
		if land+back <= t {
			break // and every run before it
		}
		for _, at := range [2]int64{land, land + back} {
			if at <= s.until {
				t = max(t, at)
			}
		}
	}
	return t
}

func (s *sim) emitRun(p packet) {
	s.rec = nil // a run's length depends on the countdown: not replayed
	k := p.run
	slot := s.ser(p.bytes)
	if s.runLen > 0 && s.runEnd > s.senderAck {
		s.prevRuns = slices.DeleteFunc(s.prevRuns, func(r [4]int64) bool { return r[3] <= s.senderAck })
		s.prevRuns = append(s.prevRuns, [4]int64{s.runStart, s.runSlot, s.runLen, s.runEnd})
	}
	s.runStart, s.runSlot, s.runLen = s.now, slot, k
	s.nextSeq += k
	s.runEnd = s.nextSeq
	s.res.FramesSent += k
	s.res.Transmissions += k
	last := s.now + (k-1)*slot
	s.slotFree = last + slot
	// During a steady run ACKs flow continuously: the Tx buffer holds the
	// steady-state window, not the whole run. (Without ACKs, steadyFits
	// sends no run.)
	s.setLack(s.nextSeq - s.steadyTx)
	s.at(event{at: last + slot + s.oneWay(), kind: evArrive, p: p})
	if s.tp != nil {
		s.tpInput(tpEntry{kind: tpSend, at: s.now, seq: p.seq, slot: slot, n: k})
		s.tpInput(tpEntry{kind: tpRxRun, at: s.now, t0: s.now + slot + s.oneWay(), seq: p.seq, slot: slot, n: k})
	}
}

func (s *sim) transmit(p packet) {
	s.res.Transmissions++
	slot := s.ser(p.bytes)
	s.slotFree = s.now + slot
	if p.lost {
		s.res.Corrupted++
		if p.dropped {
			s.res.Dropped++
		}
		if s.c.Mode == Off {
			if p.kind == lg.PktOriginal {
				s.res.Lost++
			}
			return
		}
		if p.kind == lg.PktOriginal {
			s.undetected++
		}
	}
	if p.kind == lg.PktOriginal && s.c.Mode != Off {
		// The original's egress-mirrored copy joins the Tx buffer, or is
		// tail-dropped when it is full (sender.p4 copy_for_buffering).
		size := int64(s.c.FrameBytes + lg.HeaderBytes)
		if s.c.NoTxCopy || s.c.TxBufferCap > 0 && s.txFrames()*size > int64(s.c.TxBufferCap) {
			s.txDropped = append(s.txDropped, p.seq)
			s.res.TxBufferDrops++
		}
		s.res.MaxTxBufferBytes = max(s.res.MaxTxBufferBytes, s.txFrames()*size)
		if s.rec != nil {
			s.rec.maxTx = max(s.rec.maxTx, s.txFrames()*size)
		}
		if s.tp != nil && (len(s.txDropped) == 0 || s.txDropped[len(s.txDropped)-1] != p.seq) {
			s.tpInput(tpEntry{kind: tpSend, at: s.now, seq: p.seq, slot: slot, n: 1})
		}
	}
	if p.kind == lg.PktOriginal && s.pacePS > 0 {
		s.paceSlack(p.seq)
	}
	s.at(event{at: s.now + slot + s.oneWay(), kind: evArrive, p: p})
}

func (s *sim) handle(e *event) {
	switch e.kind {
	case evArrive:
		s.arrive(e.p)
	case evNotify:
		if !e.handled {
			// The notification sets the holes' bits as it arrives
			// (sender.p4 set_holes_1..5).
			e.mask = s.takeHeld(e.seq, e.n)
			if s.c.NoAck {
				// The notification carries the leading ACK: everything
				// below its first hole got through.
				s.setLack(e.seq)
			}
			if s.c.RetxHandling > 0 {
				// The sender's mirror/multicast path takes its time.
				s.at(event{at: s.now + durPS(s.c.RetxHandling), kind: evNotify, seq: e.seq, n: e.n, handled: true, mask: e.mask})
				return
			}
		}
		s.notifPending--
		for i := 0; i < e.n; i++ {
			if e.mask&(1<<i) == 0 {
				continue // its copy was dropped: only the timeout skips the hole
			}
			// The held copy leaves the Tx buffer as N copies on the
			// retransmission queue (retx_mcast_buffered_pkt).
			seq := e.seq + int64(i)
			if j := slices.Index(s.held, seq); j >= 0 {
				s.held = slices.Delete(s.held, j, j+1)
				if s.tp != nil {
					s.tpInput(tpEntry{kind: tpHoldOff, at: s.now, seq: seq})
				}
			}
			for c := 0; c < s.c.Copies; c++ {
				s.retx = append(s.retx, seq)
			}
		}
	case evPause:
		s.pendingBP--
		s.paused = true
	case evResume:
		s.pendingBP--
		s.paused = false
	case evAck:
		s.setLack(e.seq)
	case evTimeout:
		if s.holes[e.seq] {
			delete(s.holes, e.seq)
			s.res.Timeouts++
			s.res.Lost++
			if e.seq > s.ackNo {
				s.givenUp[e.seq] = true
			}
			s.advanceAck()
		}
	case evDrain:
		s.buf.rotate(e.n)
		s.drainOne()
	case evLoop:
		p := s.flight.pop()
		s.flightB -= int64(p.bytes + lg.HeaderBytes)
		s.decide(p)
	}
}

// loopAhead handles, at once, the passes through the recirculation port
// and the returns round the loop that only send frames round again, up to
// the first that could meet anything else: an arrival, timeout, ACK,
// notification, pause or resume due (they touch the queue, ackNo or wake
// the sender, whose leaving idle moves the clock), a frame sent from now
// landing, a frame in its turn or a duplicate back at the decision, or the
// time asked for. The sender meanwhile sees nothing of the receiver but
// through those events; the events these passes schedule keep their own
// time of scheduling, so ties with the sender's frames go as when stepped.
func (s *sim) loopAhead() {
	if !s.loopsAhead() {
		return
	}
	if s.idleFrom >= 0 {
		if want, _ := s.nextSend(); want >= 0 {
			return // the sender leaves idle now: the clock moves to the end of its dummy
		}
	}
	horizon := min(s.now+s.oneWay()+s.ser64, s.q[qArrive].headAt(), s.q[qNotify].headAt(), s.q[qHandled].headAt(),
		s.q[qBP].headAt(), s.q[qAck].headAt(), s.q[qTimeout].headAt())
	if s.reached < horizon {
		horizon = s.reached + 1
	}
	dq, lq := &s.q[qDrain], &s.q[qLoop]
	// The pass under way, if any, and the returns due, in order: those
	// already scheduled and those of the passes handled here, which are
	// scheduled as each pass ends (lq.ev[lq.head+oldL:]).
	haveD, dAt, dSched, oldD := dq.len() > 0, int64(0), int64(0), true
	if haveD {
		dAt, dSched = dq.ev[dq.head].at, dq.ev[dq.head].sched
	}
	oldL := 0 // scheduled returns handled here
	for {
		lAt, lSched, haveL := int64(0), int64(0), oldL < lq.len()
		if haveL {
			e := &lq.ev[lq.head+oldL]
			lAt, lSched = e.at, e.sched
		}
		// A return scheduled no later than the pass's end comes first
		// at a tie: it was scheduled before the pass (or in the same
		// handling, before it).
		if haveL && (!haveD || lAt < dAt || lAt == dAt && lSched <= dSched) {
			if lAt >= horizon {
				break
			}
			p := s.flight.at(0)
			b := int64(p.bytes + lg.HeaderBytes)
			if p.seq <= s.ackNo || s.bpToggles(s.bufBytes-s.flightB+b) {
				break // in its turn, a duplicate, or a pause to send
			}
			s.buf.push(s.flight.pop())
			s.flightB -= b
			oldL++
			if !haveD {
				s.draining = true
				haveD, dAt, dSched, oldD = true, lAt+s.drainTime(s.buf.at(0).bytes), lAt, false
			}
			s.aheadAt = lAt
			s.aheadN++
			continue
		}
		if !haveD || dAt >= horizon || s.buf.n == 0 {
			break
		}
		p := s.buf.at(0)
		b := int64(p.bytes + lg.HeaderBytes)
		if s.bpToggles(s.bufBytes - s.flightB - b) {
			break // a resume to send
		}
		if oldD {
			dq.head++
			s.pending--
			s.emptied(qDrain)
			oldD = false
		}
		s.flight.push(s.buf.pop())
		s.flightB += b
		s.schedPass(qLoop, evLoop, dAt+s.loopPS, dAt)
		s.aheadAt = dAt
		s.aheadN++
		if s.buf.n > 0 {
			t := dAt
			dAt, dSched = t+s.drainTime(s.buf.at(0).bytes), t
		} else {
			haveD = false
			s.draining = false
		}
	}
	// The returns handled leave their queue; the pass under way, if it
	// started here, is scheduled after the returns of the passes before it.
	lq.head += oldL
	s.pending -= oldL
	s.emptied(qLoop)
	if haveD && !oldD {
		s.schedPass(qDrain, evDrain, dAt, dSched)
	}
	s.firstQ = -2
}

// loopsAhead says whether passes round the loop are handled ahead: a
// protected link whose frames recirculate, not stepped event by event
// (small enough to be inlined into loopAhead, whose every call asks).
// Not for a paced run: there, passes handled ahead let the reorder
// buffer's watermark, read between two arrivals, fall behind stepping's
// (TestPacedRunEqualsStepping, make test-long: 25G ordered at 1e-5, the
// timer at 140 ns, dummies lost at 0.05, seed 2, read at 14.744 ms:
// 48,672 B against 50,193 B).
func (s *sim) loopsAhead() bool {
	return s.off == nil && s.pacePS == 0 && s.loopPS != 0 && !s.c.Step && !s.c.NoLoopAhead
}

// schedPass schedules a pass's end or a return round the loop (kind, on
// queue qi, carrying nothing but its time) as if at time sched.
func (s *sim) schedPass(qi int, kind int8, at, sched int64) {
	s.nev++
	e := s.q[qi].grow()
	e.at, e.sched, e.idx, e.kind = at, sched, s.nev, kind
	s.pending++
	s.busy |= 1 << qi
}

// bpToggles says whether the queue at qb bytes would send a pause or a
// resume (backpressure).
func (s *sim) bpToggles(qb int64) bool {
	if !s.c.Backpressure {
		return false
	}
	cells := (qb + lg.CellBytes - 1) / lg.CellBytes
	return cells >= int64(s.c.PauseCells) && !s.bpPaused || cells <= int64(s.c.ResumeCells) && s.bpPaused
}

// arrive is the receiver's ingress: Algorithm 1 for originals and copies,
// tail-loss detection for dummies.
func (s *sim) arrive(p packet) {
	if s.c.Mode == Off {
		s.res.Delivered += max(p.run, 1)
		s.off.deliver(p.seq, s.now)
		return
	}
	if p.lost {
		return // corrupted: the MAC drops it (FCS error)
	}
	if p.run > 0 && p.kind == lg.PktOriginal && p.run >= 1 && len(s.holes) == 0 && s.buf.n == 0 && s.flight.n == 0 && p.seq == s.ackNo {
		// A steady run, in order.
		s.ackNo += p.run
		s.highest = max(s.highest, s.ackNo)
		s.res.Delivered += p.run
		s.ackBack()
		return
	}
	if p.run > 1 {
		// Not expected (a run is sent only in steady state); unroll it.
		s.rec = nil
		for i := int64(0); i < p.run; i++ {
			s.arrive(packet{seq: p.seq + i, kind: lg.PktOriginal, bytes: p.bytes})
		}
		return
	}
	switch p.kind {
	case lg.PktDummy:
		s.detect(p.seq + 1)
		s.ackBack()
		return
	}
	seq := p.seq
	s.detect(seq)
	s.highest = max(s.highest, seq+1)
	s.ackBack()
	switch {
	case seq < s.ackNo || (s.c.Mode == NonBlocking && s.delivered[seq]) || s.buffered(seq) || s.givenUp[seq]:
		return // duplicate copy: de-duplication
	case seq == s.ackNo:
		delete(s.holes, seq)
		s.res.Delivered++
		s.off.deliver(seq, s.now)
		s.advanceAck()
	default: // seq > ackNo
		if s.c.Mode == NonBlocking {
			if s.holes[seq] {
				delete(s.holes, seq)
			}
			s.delivered[seq] = true
			s.res.Delivered++
			s.off.deliver(seq, s.now)
			s.advanceAck()
			s.bound()
			return
		}
		if s.holes[seq] {
			// A copy filling a later hole: it waits in the buffer too.
			delete(s.holes, seq)
		}
		s.enqueue(p)
	}
}

// detect notes a gap below seq: every original in [highest, seq) not yet
// seen is a hole; the first MaxHoleTrack of a burst are notified.
func (s *sim) detect(seq int64) {
	if seq <= s.highest {
		return
	}
	first, n := s.highest, int(seq-s.highest)
	s.highest = seq
	s.undetected -= int64(n)
	for i := 0; i < n; i++ {
		h := first + int64(i)
		s.holes[h] = true
		if !s.c.NoTimeout {
			s.at(event{at: s.now + durPS(s.c.AckNoTimeout), kind: evTimeout, seq: h})
		}
	}
	track := min(n, lg.MaxHoleTrack)
	s.notifPending++
	// The notification is mirrored at the receiver and crosses back.
	s.at(event{at: s.now + s.oneWay() + s.ser(64), kind: evNotify, seq: first, n: track})
	s.bound()
}

// advanceAck moves ackNo past every original delivered or given up; an
// original waiting in the recirculation queue stops it (it leaves the queue
// in order when the loop brings it round).
func (s *sim) advanceAck() {
	for s.ackNo < s.highest && !s.holes[s.ackNo] && !s.buffered(s.ackNo) {
		delete(s.delivered, s.ackNo)
		if len(s.givenUp) > 0 {
			delete(s.givenUp, s.ackNo)
		}
		s.ackNo++
	}
	s.ackBack()
	s.kickDrain()
}

// ackBack sends the leading ACK, the highest original seen + 1, when it
// has moved: the receiver records it on every arrival and it rides back
// on reverse traffic or a courier packet (receiver.p4 set_loss_notification_lack_*,
// reg_leading_ack).
func (s *sim) ackBack() {
	if s.highest <= s.lackSent || s.c.NoAck {
		return
	}
	s.lackSent = s.highest
	s.at(event{at: s.now + s.oneWay() + s.ser(64), kind: evAck, seq: s.highest})
	if s.tp != nil {
		s.tpInput(tpEntry{kind: tpRx, at: s.now, seq: s.highest})
	}
}

// enqueue puts an out-of-order packet into the recirculation queue.
func (s *sim) enqueue(p packet) {
	b := int64(p.bytes + lg.HeaderBytes)
	if s.bufBytes+b > int64(s.c.RxBufferCap) {
		s.res.BufferDrops++
		s.holes[p.seq] = true // gone; only the timeout can skip it
		if !s.c.NoTimeout {
			s.at(event{at: s.now + durPS(s.c.AckNoTimeout), kind: evTimeout, seq: p.seq})
		}
		s.bound()
		return
	}
	s.buf.push(p)
	s.markBuffered(p.seq)
	s.bufBytes += b
	s.res.MaxRxBufferBytes = max(s.res.MaxRxBufferBytes, s.bufBytes)
	if s.rec != nil {
		s.rec.maxRx = max(s.rec.maxRx, s.bufBytes)
	}
	s.backpressure()
	s.kickDrain()
}

// buffered reports whether seq already waits in the recirculation queue.
func (s *sim) buffered(seq int64) bool {
	d := seq - s.ackNo
	return d >= 0 && d < int64(len(s.inBuf)) && s.inBuf[seq&int64(len(s.inBuf)-1)]
}

// markBuffered notes that seq, just queued, waits in the buffer. Every
// original in the buffer is at or above ackNo (below it, it would have
// been dropped as a duplicate, and ackNo stops at the first one), so a
// ring of flags over [ackNo, ackNo+len) holds them all; it doubles when a
// sequence number falls beyond it.
func (s *sim) markBuffered(seq int64) {
	if d := seq - s.ackNo; d < 0 || d >= int64(len(s.inBuf)) {
		s.indexBuffer(d + 1)
		return
	}
	s.inBuf[seq&int64(len(s.inBuf)-1)] = true
}

// indexBuffer rebuilds the flags from the buffer, for a span of at least n.
func (s *sim) indexBuffer(n int64) {
	size := max(64, len(s.inBuf))
	for int64(size) < n {
		size *= 2
	}
	if size != len(s.inBuf) {
		s.inBuf = make([]bool, size)
	} else {
		clear(s.inBuf)
	}
	for i := 0; i < s.buf.n+s.flight.n; i++ {
		var seq int64
		if i < s.buf.n {
			seq = s.buf.at(i).seq
		} else {
			seq = s.flight.at(i - s.buf.n).seq
		}
		d := seq - s.ackNo
		if d < 0 {
			continue // a duplicate on its way out: never looked up
		}
		if d >= int64(size) {
			s.indexBuffer(d + 1)
			return
		}
		s.inBuf[seq&int64(size-1)] = true
	}
}

// kickDrain starts the recirculation port on the queue's head. The port is
// a loopback MAC at 100G: a pass costs the frame, its header, preamble and
// gap, as on the wire.
func (s *sim) kickDrain() {
	if s.draining || s.buf.n == 0 {
		return
	}
	s.draining = true
	t := s.now + s.drainTime(s.buf.at(0).bytes)
	// Passes of frames whose turn has not come only send them round again.
	// While nothing else can touch the queue or move ackNo (no arrival or
	// timeout is due, no frame sent from now could land), nor wake an idle
	// sender (no resume, no copies to send: leaving idle moves the clock to
	// the end of the dummy under way), and the time asked for is not
	// reached, k of them are taken as one event that rotates the queue by
	// k before its (k+1)th pass, due when that pass ends. With a loop
	// latency the frames come back one by one: loopAhead takes such
	// passes together.
	k := 0
	if s.off == nil && s.loopPS == 0 {
		limit := min(s.q[qArrive].headAt(), s.q[qTimeout].headAt(), s.q[qBP].headAt(), s.q[qHandled].headAt(),
			s.now+s.oneWay()+s.ser(64))
		n := s.buf.n
		for s.buf.at(k%n).seq > s.ackNo {
			next := t + s.drainTime(s.buf.at((k+1)%n).bytes)
			if next >= limit || next > s.reached {
				break
			}
			k, t = k+1, next
		}
	}
	s.at(event{at: t, kind: evDrain, n: k})
}

func (s *sim) drainTime(bytes int) int64 {
	if bytes == s.c.FrameBytes {
		return s.drainFrame
	}
	return drainPS(bytes)
}

// rotate moves the queue's first k frames to its back, in order.
func (d *deque) rotate(k int) {
	for k %= max(d.n, 1); k > 0; k-- {
		d.push(d.pop())
	}
}

// drainPS is one pass of a frame through the recirculation port: a
// loopback MAC at 100G, the frame with its header, preamble and gap.
func drainPS(bytes int) int64 {
	return int64(float64((bytes+lg.HeaderBytes+20)*8) / lg.RecirculationBps * 1e12)
}

// drainOne finishes a pass of the head through the pipeline: Algorithm 1.
func (s *sim) drainOne() {
	s.draining = false
	if s.buf.n == 0 {
		return
	}
	p := s.buf.pop()
	if s.loopPS > 0 {
		// Back to the ingress after the loop's latency; the port serves
		// its next frame meanwhile.
		s.flight.push(p)
		s.flightB += int64(p.bytes + lg.HeaderBytes)
		s.at(event{at: s.now + s.loopPS, kind: evLoop})
		s.backpressure()
		s.kickDrain()
		return
	}
	s.decide(p)
}

// decide is the ingress decision on a recirculated frame: Algorithm 1.
func (s *sim) decide(p packet) {
	switch {
	case p.seq == s.ackNo: // its turn: forwarded
		s.leave(p)
		s.res.Delivered++
		s.off.deliver(p.seq, s.now)
		s.ackNo++
		s.advanceAck()
	case p.seq < s.ackNo: // a duplicate: dropped
		s.leave(p)
	default: // not yet: round again
		s.buf.push(p)
	}
	s.backpressure()
	s.kickDrain()
}

func (s *sim) leave(p packet) {
	if d := p.seq - s.ackNo; d >= 0 && d < int64(len(s.inBuf)) {
		s.inBuf[p.seq&int64(len(s.inBuf)-1)] = false
	} else {
		s.indexBuffer(0) // not expected: keep the flags exact
	}
	s.bufBytes -= int64(p.bytes + lg.HeaderBytes)
}

// backpressure is Algorithm 2 on the reorder buffer's depth in cells.
func (s *sim) backpressure() {
	if !s.c.Backpressure {
		return
	}
	cells := (s.bufBytes - s.flightB + lg.CellBytes - 1) / lg.CellBytes
	switch {
	case cells >= int64(s.c.PauseCells) && !s.bpPaused:
		s.bpPaused = true
		s.pendingBP++
		s.res.PauseFrames++
		// PFC frames are absorbed by the sender's RX MAC (§3.5), not a
		// pipeline pass: a pause takes the measured flight time, as a resume.
		s.at(event{at: s.now + durPS(s.c.FlightResume), kind: evPause})
	case cells <= int64(s.c.ResumeCells) && s.bpPaused:
		s.bpPaused = false
		s.pendingBP++
		s.res.PauseFrames++
		s.at(event{at: s.now + durPS(s.c.FlightResume), kind: evResume})
	}
}
