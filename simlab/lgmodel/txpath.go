package lgmodel

import (
	"bytes"
	"math"
	"slices"
	"time"
	"unsafe"

	lg "testbed/p4/linkguardian"
)

// The Tx buffer's queue as the sender's program and the receiver's courier
// make it: an accounting of the sender's copies that observes the model's
// sends, the receiver's leading ACK and the held holes, and changes nothing
// in the run (the copies held, MaxTxBufferBytes, still bound the buffer and
// free nothing earlier or later).
//
// The sender (NUS-SNL/linkguardian at bd46f4b, switch_impl/sender) mirrors
// each protected original's copy to the internal recirculation port first
// (sender/setup-ae.py lines 11 and 173, port 68); after that pass it comes
// back to the decision (sender.p4 decide_retx_or_drop, lines 520-560),
// which drops it if the leading ACK the sender holds has passed it and no
// loss notification set its hole bit, else sends it to the loopback port's
// queue (lines 557-559, port 16), round which it goes, decided after every
// pass, until the ACK passes it. That queue is the one polled
// (sender/devtest_cmds.py line 617) and read as watermark_cells x 80 B
// (data_analysis/effective_lossRate_linkSpeed/analyze_expt_data.py lines
// 84-101): it holds only the copies the ACK missed at their first pass.
//
// The receiver sends its leading ACK on one courier packet (injected once,
// receiver/setup-ae.py line 288): each pass through the protected port's
// egress reads the leading ACK register and leaves with it when it has
// moved, and an egress mirror session puts the courier back into the same
// queue (receiver.p4 lines 979-998, setup-ae.py lines 184-205). So the
// sender learns the register as it stood at the courier's last pass, once
// per courier loop (Config.CourierLoop), a way back later (one pass, the
// fibre, the 64 B courier, and Config.AckExtra), where the model's own ACK
// goes back on every arrival.
//
// Every input comes with its time, and the accounting runs behind the
// model's clock: a decision at time t needs the register at a courier pass
// at least a way back before t, which the model has settled by then. The
// stretches the model does not step (a replayed recording, whole cycles
// jumped over) give their inputs from the recording or from the cycle's
// last period, shifted as the model's state is (tpLog).

// tpRun is copies (or arrivals) seq0.. seq0+n-1 at t0, t0+slot, ...
type tpRun struct{ seq0, t0, slot, n int64 }

// at is the register the run gives at t.
func (r *tpRun) at(t int64) int64 {
	if t < r.t0 {
		return 0
	}
	return r.seq0 + min(r.n, (t-r.t0)/r.slot+1)
}

// continuedBy is whether a run of seq at t0, slot apart, carries r on.
func (r *tpRun) continuedBy(seq, t0, slot int64) bool {
	return r.n > 0 && slot == r.slot && seq == r.seq0+r.n && t0 == r.t0+r.n*r.slot
}

// extendsBack is whether the register at v from t is the value the run
// holds a slot before its first arrival: the run from (v, t) on is r with
// it, the same register at every time.
func (r *tpRun) extendsBack(v, t int64) bool {
	return r.n > 0 && v == r.seq0 && t == r.t0-r.slot
}

type tpStep struct{ t, v int64 }

type tpHold struct {
	t, seq int64
	on     bool
}

type tpBack struct{ seq, at int64 }

// tpQueue is a FIFO that reuses its spent front. Its copies are kept
// relative to (ds, dt): a shift of the whole queue moves those two, and
// a queue loaded from a note reads the note's own numbers (shared) until
// it is pushed to, when it takes a copy of its own.
type tpQueue struct {
	a      []tpBack
	head   int
	ds, dt int64
	shared bool     // a is a note's: never written
	own    []tpBack // the queue's own storage, while a is a note's
}

func (q *tpQueue) len() int { return len(q.a) - q.head }
func (q *tpQueue) front() tpBack {
	b := q.a[q.head]
	return tpBack{b.seq + q.ds, b.at + q.dt}
}

func (q *tpQueue) push(b tpBack) {
	if q.shared {
		q.a, q.head, q.shared = append(q.own[:0], q.a[q.head:]...), 0, false
	} else if q.head > 32 && 2*q.head >= len(q.a) {
		q.a = q.a[:copy(q.a, q.a[q.head:])]
		q.head = 0
	}
	q.a = append(q.a, tpBack{b.seq - q.ds, b.at - q.dt})
}

func (q *tpQueue) pop() tpBack {
	b := q.front()
	q.head++
	if q.head == len(q.a) {
		if q.shared {
			q.a, q.shared = q.own, false
		}
		q.a, q.head = q.a[:0], 0
	}
	return b
}

// shift moves every copy in the queue ds on and dt later.
func (q *tpQueue) shift(ds, dt int64) {
	q.ds += ds
	q.dt += dt
}

// appendQueues appends the copies in flight, relative to copy s0 and time
// t0: for each of the three queues (first pass, port 16's queue, on port
// 16) its length, then each copy's sequence and time.
func (p *txPath) appendQueues(k []int64, s0, t0 int64) []int64 {
	for _, q := range []*tpQueue{&p.first, &p.q16, &p.on16} {
		k = append(k, int64(q.len()))
		ds, dt := q.ds-s0, q.dt-t0
		for _, b := range q.a[q.head:] {
			k = append(k, b.seq+ds, b.at+dt)
		}
	}
	return k
}

// loadQueues sets the three queues from v as appendQueues wrote it,
// shifted to copy s0 and time t0, and returns what follows them in v. The
// least copy in flight is kept from there (leastInFlight): every copy
// goes through here.
func (p *txPath) loadQueues(v []int64, s0, t0 int64) []int64 {
	lo := int64(math.MaxInt64)
	v = p.first.load(v, s0, t0, &lo)
	v = p.q16.load(v, s0, t0, &lo)
	v = p.on16.load(v, s0, t0, &lo)
	p.least, p.leastOK = lo, true
	return v
}

// loadQueuesLeast is loadQueues where the least copy in v is known
// (least, relative to s0; math.MaxInt64 when v holds none): a way on's
// end keeps it (tpTail.least), and one is installed after most stretches
// replayed, so its copies are not gone through for it each time.
func (p *txPath) loadQueuesLeast(v []int64, s0, t0, least int64) []int64 {
	v = p.first.load(v, s0, t0, nil)
	v = p.q16.load(v, s0, t0, nil)
	v = p.on16.load(v, s0, t0, nil)
	if least != math.MaxInt64 {
		least += s0
	}
	p.least, p.leastOK = least, true
	return v
}

// leastQueued is the least copy in v (as appendQueues wrote it, relative;
// math.MaxInt64 when none).
func leastQueued(v []int64) int64 {
	least := int64(math.MaxInt64)
	for range 3 {
		n := int(v[0])
		for i := 1; i < 1+2*n; i += 2 {
			least = min(least, v[i])
		}
		v = v[1+2*n:]
	}
	return least
}

// load sets q from v (its length, then each copy's sequence and time, as
// appendQueues wrote them) shifted by s0 and t0, lowers lo to its least
// copy (unless lo is nil: known), and returns what follows it in v.
// (Grown once and written in place, not appended copy by copy: every
// stretch, way on and build-up installed loads the copies in flight.)
func (q *tpQueue) load(v []int64, s0, t0 int64, lo *int64) []int64 {
	n := int(v[0])
	w := v[1 : 1+2*n]
	q.head, q.ds, q.dt = 0, s0, t0
	if !q.shared {
		q.own = q.a // kept for when the queue is pushed to
	}
	if n == 0 {
		q.a, q.shared = q.own[:0], false
		return v[1:]
	}
	// The note's numbers read in place, as pairs: a copy is two int64s.
	q.a, q.shared = unsafe.Slice((*tpBack)(unsafe.Pointer(&w[0])), n)[:n:n], true
	if lo == nil {
		return v[1+2*n:]
	}
	least := int64(math.MaxInt64)
	for i := 0; i < len(w); i += 2 {
		least = min(least, w[i])
	}
	*lo = min(*lo, least+s0)
	return v[1+2*n:]
}

// sameInts is slices.Equal on the accounting's keys and states (some
// tens of numbers each, compared at every replayed stretch, way on and
// note), compared as their bytes: equal bytes are equal numbers, and the
// runtime compares bytes many at a time.
func sameInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return true
	}
	return bytes.Equal(unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), 8*len(a)),
		unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), 8*len(b)))
}

// tpEntry is one input, as logged for a recording or a cycle.
type tpEntry struct {
	kind int8 // tpSend, tpRx, tpRxRun, tpHoldOn, tpHoldOff
	at   int64
	seq  int64 // the send's or run's first original, the register's value, the hole
	slot int64 // runs
	n    int64 // runs
	t0   int64 // an rx run's first arrival
}

const (
	tpSend = iota
	tpRx
	tpRxRun
	tpHoldOn
	tpHoldOff
)

// tpHistory is how many inputs a cycle's last period may need: a cycle
// spans at most cycleRing originals, each with its send and the receiver's
// ACK, and a few runs.
const tpHistory = 1024

type txPath struct {
	courier, back, loop, drain, copyBytes int64
	read                                  int64 // the read port's time a copy (Config.LoopbackMAC)

	sends   []tpRun // copies to send to the first port, in order
	steps   []tpStep
	stepsAt int     // steps before it are read
	rxRun   []tpRun // arrivals of skipped-over runs
	holds   []tpHold
	held    []int64

	free68  int64   // the first port is free from then
	first   tpQueue // copies past the first port, to be decided
	q16     tpQueue // waiting for the read port (at: when they joined)
	free16  int64
	on16    tpQueue // past the read port, to be decided
	sendsAt int     // sends before it are done

	// The least copy in flight, kept as the queues change (leastInFlight):
	// a copy fed has the highest sequence yet, a copy moved between the
	// queues keeps its own, a shift moves them all by the same, loading
	// the queues from a note finds it on the way, so only freeing the
	// least makes it be found again. Every first decision a jump may
	// start from needs it.
	least      int64
	leastOK    bool
	leastFloor int64 // no copy in flight is below it: found, the least
	// find the least copy in flight at every note too, and count where
	// the kept one differs (tests: keeping it changes nothing, and is done)
	checkLeast                        bool
	leastKept, leastFound, leastWrong int64
	leastLooked, leastAll             int64 // copies looked at, and in flight, at the notes
	// check the least copy in flight presetJump gives the note a period
	// before a way on's end against the one the jumper held there when
	// the way on was recorded, and count where they differ; and the state
	// a first decision after it takes as the note's (presetNote) against
	// the state noted in full (tests)
	checkPreset bool
	presetWrong int64
	noteWrong   int64
	// and the ways on's notes the jumper was handed (presetJump), each
	// with a copy taken then: none may be written
	presetSnaps [][2][]int64

	base     int64 // the register at the last courier pass read
	lack     int64 // what the sender holds from the last courier pass read
	maxQ     int64
	nextRead int64 // when the next courier pass's ACK is back
	now      int64 // decided up to here
	inputs   int64
	decided  int64 // copies decided one by one (a jump or a note decides none)
	stops    int64 // stretches replayed from where a jump landed (advanceToJump)

	hist    *[tpHistory]tpEntry // the latest inputs (cycles repeat them); the path's own, not a stretch's register (st.reg, tl.reg)
	histN   int64
	logging bool     // cycles can be jumped: keep hist
	lazy    []tpLazy // replayed stretches' inputs in hist, not copied (histAt)
	lazyAt  int      // lazy's before it are out of the history

	jump   tpJumper
	noJump bool // decide every copy (tests: the jumps change nothing)
	// jump over robust decisions only (tests: the phased jumps change
	// nothing, and they are taken)
	noPhased bool
	inLog    *[]tpEntry // the inputs, as they come (tests)

	// The stretches after losses, replayed (txpath_memo.go): their notes
	// are kept on their recordings (recording.tp), those of an earlier
	// generation forgotten.
	memoGen              int64
	memoBytes            int64
	memoKey              []int64
	memoKeep             []int64 // tpReplay's key while the stretch is stepped
	memoHits, memoMisses int64
	noMemo               bool // decide every replayed stretch and build-up (tests)
	bu                   tpBuildUp
	st                   tpStretch
	tl                   tpTailRec
}

// The copy as the artifact's sender keeps it: after its first pass it
// carries, besides the original's 3 B LinkGuardian header, the 2 B
// lr_buffered header that pass adds (common/linkradar_hdr.p4 lines 59-63,
// 2 + 5 + 9 bits; sender.p4 add_linkradar_buffered_hdr and
// fill_data_linkradar_buffered_hdr, lines 876-889 and 1059-1062), and the
// traffic manager stores it without the 4 B FCS the MAC adds on the way
// out: a 1518 B frame's copy is 1519 B, 19 cells (the artifact's
// non-blocking reading, 285 cells, is 15 such copies).
//
// Those 2 B also make a copy take longer on the read port than its
// original took on the wire: port 16 is a front-panel port in MAC-near
// loopback (sender/setup-ae.py lines 45-48 and 111), so a copy takes
// 1519 B, FCS, preamble and gap, 1543 B, where the original took 1541 B.
// Port 68 is internal (no MAC: no preamble or gap) and its copy 1520 B
// with the 3 B mirror header (sender/includes/headers.p4 lines 43-49;
// lr_buffered is added at its egress), no slower than the wire: a copy
// never waits there, as originals are never closer than their wire time,
// and the accounting serves it in the original's wire time. The read
// port's own time is Config.LoopbackMAC (off by default, see there): a
// sender back to back then outruns the read port by 0.13%, a copy every
// 770 frames, which the ordered sender meets between pauses and the
// artifact's non-blocking generator (124 ns a frame) never does.
const fcsBytes = 4

func newTxPath(s *sim) *txPath {
	cells := int64((s.c.FrameBytes - fcsBytes + lg.HeaderBytes + lg.BufferedHeaderBytes + lg.CellBytes - 1) / lg.CellBytes)
	read := s.drainFrame
	if s.c.LoopbackMAC {
		read = drainPS(s.c.FrameBytes + lg.BufferedHeaderBytes)
	}
	return &txPath{
		courier: durPS(s.c.CourierLoop), back: s.oneWay() + s.ser64 + durPS(s.c.AckExtra),
		loop: s.loopPS, drain: s.drainFrame, read: read, copyBytes: cells * lg.CellBytes,
		logging: !s.c.NoCycleSkip, leastFloor: math.MinInt64, hist: new([tpHistory]tpEntry),
	}
}

// input records an input: into the accounting, the history a cycle
// repeats, and the recording under way.
func (s *sim) tpInput(e tpEntry) {
	p := s.tp
	p.add(&e)
	if p.inLog != nil {
		*p.inLog = append(*p.inLog, e)
	}
	if p.logging {
		p.hist[uint64(p.histN)%tpHistory] = e // histN >= 0: a mask, no bounds check
		p.histN++
	}
	if r := s.rec; r != nil {
		r.tlog = append(r.tlog, e) // replayed shifted as the state is (restore)
	}
	if p.inputs++; p.inputs&1023 == 0 {
		// Keep what waits to be decided short. Inputs come in the order
		// of their times (a replayed stretch's too, after the clock has
		// moved to its end): up to this one's, every input is in.
		p.advance(e.at)
	}
}

func (p *txPath) add(e *tpEntry) {
	if p.st.on && (e.kind == tpRx || e.kind == tpRxRun) {
		p.st.reg.add(e) // the register as the stretch recorded reads it
	}
	if p.tl.on {
		p.tailAdd(*e) // the inputs of the way on recorded
	}
	switch e.kind {
	case tpSend:
		// A run that continues the last one (the next skipped-over run
		// of a steady stretch, the next original sent back to back) is
		// one run: the same copies at the same times, and a steady
		// stretch is one run the jumps can cross (tryJump).
		if k := len(p.sends) - 1; k >= p.sendsAt && p.sends[k].continuedBy(e.seq, e.at, e.slot) {
			p.sends[k].n += e.n
			return
		}
		p.sends = append(p.sends, tpRun{e.seq, e.at, e.slot, e.n})
	case tpRx:
		// Arrivals one slot apart, each moving the register on by one
		// (a stretch the model steps), are a run: the register then is
		// the same at every time, and the run lets the jumps cross the
		// stretch. The run keeps the runs in order of first arrival.
		if k := len(p.rxRun) - 1; k >= 0 && p.rxRun[k].continuedBy(e.seq-1, e.at, p.rxRun[k].slot) {
			p.rxRun[k].n++
			return
		}
		if k := len(p.steps) - 1; k >= p.stepsAt && e.seq == p.steps[k].v+1 && e.at > p.steps[k].t &&
			(len(p.rxRun) == 0 || p.rxRun[len(p.rxRun)-1].t0 <= p.steps[k].t) {
			st := p.steps[k]
			p.steps = p.steps[:k]
			p.rxRun = append(p.rxRun, tpRun{st.v - 1, st.t, e.at - st.t, 2})
			return
		}
		if k := len(p.rxRun) - 1; k >= 0 && p.rxRun[k].extendsBack(e.seq, e.at) {
			// The step the last run starts from (an original stepped
			// just before the skipped-over run that follows it lands):
			// the run from it, and from the steps before it that lead
			// to it one slot apart, is the same register.
			r := &p.rxRun[k]
			r.seq0, r.t0, r.n = r.seq0-1, r.t0-r.slot, r.n+1
			for j := len(p.steps) - 1; j >= p.stepsAt && r.extendsBack(p.steps[j].v, p.steps[j].t) &&
				(k == 0 || p.rxRun[k-1].t0 <= p.steps[j].t); j-- {
				r.seq0, r.t0, r.n = r.seq0-1, r.t0-r.slot, r.n+1
				p.steps = p.steps[:j]
			}
			return
		}
		p.steps = append(p.steps, tpStep{e.at, e.seq})
	case tpRxRun:
		if k := len(p.rxRun) - 1; k >= 0 && p.rxRun[k].continuedBy(e.seq, e.t0, e.slot) {
			p.rxRun[k].n += e.n // the same register at every time
			return
		}
		p.rxRun = append(p.rxRun, tpRun{e.seq, e.t0, e.slot, e.n})
	case tpHoldOn, tpHoldOff:
		p.holds = append(p.holds, tpHold{e.at, e.seq, e.kind == tpHoldOn})
	}
}

// popFront takes q's first entry off and moves the rest down to the front
// of its array, where q = q[1:] would walk the queue along its array:
// then every append at the array's end allocated a new one, and the
// receiver's runs and the holds were most of the model's garbage at 100G
// non-blocking (docs/linkguardian.md). The queues hold a few entries.
func popFront[T any](q []T) []T {
	return q[:copy(q, q[1:])]
}

// tpLazy is a replayed stretch's inputs in the history (hist), at its
// positions pos on: its recording's, shifted by ds originals and dt
// picoseconds. A stretch replayed from a note leaves them there rather than
// copying each into the ring, as most are never read: only a cycle's
// period (tpJump) reads the history, a cycle found seldom after a loss in
// non-blocking mode. (A recording's inputs are never changed once it is
// done: replay.go makes each anew.)
type tpLazy struct {
	log         []tpEntry
	ds, dt, pos int64
}

// histLazy puts log, shifted by ds and dt, into the history as the next
// inputs, by reference.
func (p *txPath) histLazy(log []tpEntry, ds, dt int64) {
	old := p.histN + int64(len(log)) - tpHistory // the history keeps positions from here
	// Those out of it are passed over, not moved down at every stretch:
	// the rest are moved down once they are as many.
	for p.lazyAt < len(p.lazy) && p.lazy[p.lazyAt].pos+int64(len(p.lazy[p.lazyAt].log)) <= old {
		p.lazy[p.lazyAt].log = nil
		p.lazyAt++
	}
	if p.lazyAt > 32 && 2*p.lazyAt >= len(p.lazy) {
		n := copy(p.lazy, p.lazy[p.lazyAt:])
		clear(p.lazy[n:])
		p.lazy, p.lazyAt = p.lazy[:n], 0
	}
	p.lazy = append(p.lazy, tpLazy{log, ds, dt, p.histN})
	p.histN += int64(len(log))
}

// histAt is the input at history position i (histN-tpHistory <= i <
// histN): a replayed stretch's (histLazy) or one written into the ring.
func (p *txPath) histAt(i int64) tpEntry {
	for j := len(p.lazy) - 1; j >= p.lazyAt; j-- {
		l := &p.lazy[j]
		if i >= l.pos+int64(len(l.log)) {
			break // written after it, into the ring
		}
		if i >= l.pos {
			e := l.log[i-l.pos]
			e.at += l.dt
			e.t0 += l.dt
			e.seq += l.ds
			return e
		}
	}
	return p.hist[uint64(i)%tpHistory]
}

// feed adds the inputs of a replayed stretch or of jumped cycles, shifted
// by ds originals and dt picoseconds.
func (s *sim) tpFeed(log []tpEntry, ds, dt int64) {
	for _, e := range log {
		e.at += dt
		e.t0 += dt
		e.seq += ds
		s.tpInput(e)
	}
}

// tpJump repeats the inputs of the cycle's last period, [from, now), m
// times, each shifted by one more period of p originals and d picoseconds.
func (s *sim) tpJump(from, now, p, d, m int64) {
	tp := s.tp
	lo := max(0, tp.histN-tpHistory)
	i := tp.histN
	for i > lo && tp.histAt(i-1).at >= from {
		i--
	}
	if i == lo && lo > 0 {
		panic("lgmodel: a cycle's period holds more inputs than the Tx path keeps")
	}
	period := make([]tpEntry, 0, tp.histN-i)
	sends, steps := 0, 0
	for ; i < tp.histN; i++ {
		if e := tp.histAt(i); e.at < now {
			period = append(period, e)
			switch e.kind {
			case tpSend:
				sends++
			case tpRx:
				steps++
			default:
				sends = -1 << 30 // runs or holds: repeat entry by entry
			}
		}
	}
	if p == 1 && sends == 1 && steps <= 1 {
		// One copy and at most one ACK a period (100G's in-order
		// stretch): m of them, one period apart, are a run of each.
		for _, e := range period {
			if e.kind == tpSend {
				tp.add(&tpEntry{kind: tpSend, at: e.at + d, seq: e.seq + 1, slot: d, n: m})
			} else {
				tp.add(&tpEntry{kind: tpRxRun, at: e.at + d, t0: e.at + d, seq: e.seq, slot: d, n: m})
			}
		}
		return
	}
	if sr, rr, ok := periodRuns(period, p, d); ok {
		// p copies and p ACKs a period, one slot apart (25G's in-order
		// stretch): m periods of them are a run of each, m*p long.
		tp.add(&tpEntry{kind: tpSend, at: sr.t0 + d, seq: sr.seq0 + p, slot: sr.slot, n: m * p})
		tp.add(&tpEntry{kind: tpRxRun, at: rr.t0 + d, t0: rr.t0 + d, seq: rr.seq0 + p, slot: rr.slot, n: m * p})
		return
	}
	// The cycle's inputs need not be kept: the next cycle is found a
	// whole period of stepping later.
	for j := int64(1); j <= m; j++ {
		for _, e := range period {
			e.at += j * d
			e.t0 += j * d
			e.seq += j * p
			tp.add(&e)
		}
		if j&255 == 0 {
			tp.advance(period[0].at + j*d)
		}
	}
}

// periodRuns: a cycle's period of p originals over d is one run of
// copies (sr: its first copy and time, the slot, p of them) and one run of
// ACKs, each moving the register on by one (rr: the register before the
// first, its time, the slot), both d/p apart; ok is false otherwise.
func periodRuns(period []tpEntry, p, d int64) (sr, rr tpRun, ok bool) {
	if p < 2 || d%p != 0 {
		return sr, rr, false
	}
	slot := d / p
	for _, e := range period {
		switch e.kind {
		case tpSend:
			if e.slot != slot {
				return sr, rr, false
			}
			if sr.n == 0 {
				sr = tpRun{e.seq, e.at, slot, e.n}
			} else if sr.continuedBy(e.seq, e.at, slot) {
				sr.n += e.n
			} else {
				return sr, rr, false
			}
		case tpRx:
			if rr.n == 0 {
				rr = tpRun{e.seq - 1, e.at, slot, 1}
			} else if rr.continuedBy(e.seq-1, e.at, slot) {
				rr.n++
			} else {
				return sr, rr, false
			}
		default:
			return sr, rr, false
		}
	}
	return sr, rr, sr.n == p && rr.n == p
}

// ackAt is the leading ACK the sender holds at t: the register as the
// courier's last pass at least a way back before t read it.
func (p *txPath) ackAt(t int64) int64 {
	if t < p.nextRead {
		return p.lack // the same courier pass
	}
	return p.readCourier(t)
}

// readCourier is ackAt at a courier pass not yet read.
func (p *txPath) readCourier(t int64) int64 {
	if t < p.back {
		return 0
	}
	k := (t - p.back) / p.courier
	p.nextRead = (k+1)*p.courier + p.back
	tau := k * p.courier
	for p.stepsAt < len(p.steps) && p.steps[p.stepsAt].t <= tau {
		p.base = max(p.base, p.steps[p.stepsAt].v)
		p.stepsAt++
	}
	if p.stepsAt > 256 && 2*p.stepsAt > len(p.steps) {
		p.steps = p.steps[:copy(p.steps, p.steps[p.stepsAt:])]
		p.stepsAt = 0
	}
	// Skipped-over runs land in order of their first arrival: those
	// wholly seen fold into the register, the first not yet begun ends
	// the look.
	for len(p.rxRun) > 0 && tau >= p.rxRun[0].t0+(p.rxRun[0].n-1)*p.rxRun[0].slot {
		p.base = max(p.base, p.rxRun[0].seq0+p.rxRun[0].n)
		p.rxRun = popFront(p.rxRun)
	}
	v := p.base
	for _, r := range p.rxRun {
		if tau < r.t0 {
			break
		}
		v = max(v, r.seq0+min(r.n, (tau-r.t0)/r.slot+1))
	}
	p.lack = v
	return v
}

func (p *txPath) isHeld(seq int64) bool {
	for _, h := range p.held {
		if h == seq {
			return true
		}
	}
	return false
}

// advance decides every copy and serves the ports up to until.
func (p *txPath) advance(until int64) {
	p.advanceStop(until, false)
}

// advanceToJump is advance, but stops where a jump that went as far as
// until lets it lands, at the first decision there: it returns the time
// decided up to, until or the landing's last picosecond. The decisions
// left up to until (those of the copies after the last one a jump can
// reach, round the read port and back) are the same wherever the state
// after such a jump is met, so a stretch replayed from there (tpReplay)
// makes them part of its note.
func (p *txPath) advanceToJump(until int64) int64 {
	return p.advanceStop(until, true)
}

func (p *txPath) advanceStop(until int64, stop bool) int64 {
	if p.tl.pending {
		p.tailStart(until)
	}
	for {
		p.feedFirst()
		next, kind := p.nextEvent()
		if kind < 0 || next > until {
			break
		}
		p.now = next
		if kind == 1 && !p.noJump && p.tryJump(next, until) {
			if stop && p.jump.toUntil {
				p.feedFirst()
				if at, _ := p.nextEvent(); at > next && at <= until {
					p.now = at - 1
					p.stops++
					return p.now
				}
			}
			continue // the state a whole number of periods on
		}
		switch kind {
		case 0:
			p.applyHold()
		case 1, 2:
			p.decide(kind, next)
		case 3:
			p.jump.preset = false
			b := p.q16.pop()
			p.free16 = next + p.read
			p.on16.push(tpBack{b.seq, p.free16 + p.loop})
		}
	}
	p.now = max(p.now, until)
	return p.now
}

// feedFirst puts the next copy through the first port when none is on
// its way back from it: the copies are served in order.
func (p *txPath) feedFirst() {
	if p.first.len() != 0 || p.sendsAt >= len(p.sends) {
		return
	}
	r := &p.sends[p.sendsAt]
	start := max(p.free68, r.t0)
	p.free68 = start + p.drain
	p.first.push(tpBack{r.seq0, p.free68 + p.loop})
	p.least = min(p.least, r.seq0)
	r.seq0++
	r.t0 += r.slot
	if r.n--; r.n != 0 {
		return
	}
	if p.sendsAt++; p.sendsAt == len(p.sends) {
		p.sends, p.sendsAt = p.sends[:0], 0
	} else if p.sendsAt > 64 && 2*p.sendsAt > len(p.sends) {
		p.sends = p.sends[:copy(p.sends, p.sends[p.sendsAt:])]
		p.sendsAt = 0
	}
}

// nextEvent is the earliest of: a hole bit set or cleared (kind 0), a
// copy back from the first port (1), a copy back from the read port (2),
// the read port taking its next copy (3). Ties in that order; kind -1
// when nothing is pending.
func (p *txPath) nextEvent() (next int64, kind int) {
	next, kind = int64(math.MaxInt64), -1
	if len(p.holds) > 0 {
		next, kind = p.holds[0].t, 0
	}
	if p.first.len() > 0 && p.first.front().at < next {
		next, kind = p.first.front().at, 1
	}
	if p.on16.len() > 0 && p.on16.front().at < next {
		next, kind = p.on16.front().at, 2
	}
	if p.q16.len() > 0 {
		if t := max(p.free16, p.q16.front().at); t < next {
			next, kind = t, 3
		}
	}
	return next, kind
}

// applyHold sets or clears the next hole bit.
func (p *txPath) applyHold() {
	p.jump.robust, p.jump.preset = false, false
	p.bu.on, p.tl.on = false, false
	h := p.holds[0]
	p.holds = popFront(p.holds)
	if h.on {
		p.held = append(p.held, h.seq)
		return
	}
	for i, v := range p.held {
		if v == h.seq {
			p.held = append(p.held[:i], p.held[i+1:]...)
			return
		}
	}
}

// decide takes the copy back from the first port (kind 1) or the read
// port (2) at next: freed when the ACK the sender holds has passed it
// and no hole bit holds it, else into the read port's queue.
func (p *txPath) decide(kind int, next int64) {
	p.decided++
	p.jump.preset = false // the copies in flight move
	var b tpBack
	if kind == 1 {
		b = p.first.pop()
	} else {
		b = p.on16.pop()
	}
	freed := b.seq < p.ackAt(b.at) && (len(p.held) == 0 || !p.isHeld(b.seq))
	if p.jump.robust {
		p.jump.robust = p.robust(b.seq, b.at, freed)
	}
	if p.bu.on {
		p.narrow(b.seq, b.at, freed)
	}
	if p.st.on {
		p.narrowStretch(b.seq, b.at, freed)
	}
	if p.tl.on {
		p.tl.dl, p.tl.dr = p.narrowOn(p.tl.reg, p.tl.dl, p.tl.dr, b.seq, b.at, freed)
	}
	if freed {
		if b.seq == p.least {
			// Found again when next needed: every copy in flight is
			// above it, a copy being kept once.
			p.leastOK, p.leastFloor = false, b.seq+1
		}
		return
	}
	if p.q16.len() == 0 && p.free16 <= next {
		// An idle port takes it at once: one copy in the queue.
		p.maxQ = max(p.maxQ, 1)
		p.bu.peak, p.tl.peak = max(p.bu.peak, 1), max(p.tl.peak, 1)
		p.free16 = next + p.read
		p.on16.push(tpBack{b.seq, p.free16 + p.loop})
		return
	}
	p.q16.push(b)
	p.maxQ = max(p.maxQ, int64(p.q16.len()))
	p.bu.peak = max(p.bu.peak, int64(p.q16.len()))
	p.tl.peak = max(p.tl.peak, int64(p.q16.len()))
}

// queueBytes is the read queue now, and its watermark, in 80 B cells.
func (p *txPath) queueBytes() (now, watermark int64) {
	return int64(p.q16.len()) * p.copyBytes, p.maxQ * p.copyBytes
}

// WithCourier is c with the courier's parameters taken from c's own. The
// courier's loop is an egress pass and an egress mirror back into the same
// queue (receiver.p4 lines 979-998): one more pass through the chip, as a
// recirculated frame's (LoopLatency; no published figure gives a mirror
// loop's latency alone). Its way back is what the paper measured for the
// receiver's other control frame to the sender, the pause/resume frame's
// t_flight_resume (FlightResume, §4 Parameters: 1.6 us at 100G, 1.9 us at
// 25G), a frame that also leaves on a packet the receiver's pipeline sends
// (a timer packet, receiver.p4 line 518), crosses the link and acts at the
// sender: the model's pass, fibre and 64 B frame are already on the
// courier's way, AckExtra is the rest.
func (c Config) WithCourier() Config {
	c.CourierLoop = c.LoopLatency
	oneWay := c.Pipeline + c.Propagation + time.Duration(float64((64+20+lg.HeaderBytes)*8)/c.LinkBps*1e9)
	c.AckExtra = max(0, c.FlightResume-oneWay)
	return c
}

// The jumps. Between losses the sender sends one steady run and the
// receiver's register climbs one original a frame time (a skipped-over
// run, tpRxRun): the inputs repeat every frame, shifted by one original
// and one slot. The accounting's state then repeats too (at 100G the read
// port serves as fast as copies come, so its queue keeps the depth the
// last loss left; at 25G every copy goes round the loop alone) but for
// one thing, the courier's phase, which moves by the slot modulo the
// courier loop every frame. A decision is robust when its outcome is the
// same at every phase: the copy's original reached the register (the run
// gives when: R(seq)) no later than the earliest courier pass the sender
// may hold (freed), or after the latest (kept). So when the state at a
// copy's first decision is the state at the previous copy's, shifted by
// one original and one slot, every decision between them was robust, and
// the run goes on, the state k frames on is this one shifted k times, with
// the same queue depths on the way: the accounting jumps there.
type tpJumper struct {
	snap, prev []int64 // the state relative to a first decision
	// prev is a way on's note (presetJump: tpTail.snap, never written),
	// not the jumper's own storage, which is kept in spare meanwhile
	// (ownPrev).
	prevShared bool
	spare      []int64
	prevT      int64
	lo         int64      // the least copy in flight then
	valid      bool       // prev holds the last first decision's state
	robust     bool       // every decision since then was robust, or phased (cons)
	cons, last []tpPhased // the decisions since then robust at some phases only, and the last period's
	run        tpRun      // the receiver's run those decisions read
	valid0     bool       // the state just noted had one to compare with
	skip       int        // first decisions to let pass before noting again
	backoff    int
	jumps      int64
	jumped     int64 // originals jumped over
	toUntil    bool  // the last first decision jumped as far as the time asked for let it
	// A way on's end (presetJump) or a build-up's end (installBuildUp)
	// was just installed with its note: the copies in flight are the
	// note's, relative to the next first decision, so only the rest of
	// the state is noted there (presetNote).
	preset bool
	quick  int64 // first decisions noted so (tests)
}

// sharePrev makes prev a way on's note itself (presetJump), not a copy:
// it is only read (presetNote, sameState) until prev is set again.
func (j *tpJumper) sharePrev(note []int64) {
	if !j.prevShared {
		j.spare, j.prevShared = j.prev, true
	}
	j.prev = note
}

// setPrev writes state into prev's own storage (installBuildUp).
func (j *tpJumper) setPrev(state []int64) {
	j.ownPrev()
	j.prev = append(j.prev[:0], state...)
}

// swapPrev makes the state just noted (in snap's storage) prev, and
// prev's own storage the next note's (keepNote).
func (j *tpJumper) swapPrev(state []int64) {
	j.ownPrev()
	j.snap, j.prev = j.prev, state
}

// ownPrev gives prev back its own storage where it was a way on's note
// (sharePrev), before it is written or handed on to be written.
func (j *tpJumper) ownPrev() {
	if j.prevShared {
		j.prev, j.spare, j.prevShared = j.spare, nil, false
	}
}

// tpPhased is a decision that is the same at some courier phases only:
// the latest pass at or before u (passes fall on multiples of the
// courier's loop) is u - r with r = u mod courier, and the register, the
// run's, passed the copy d before u, so the copy is freed when r <= d.
type tpPhased struct {
	r, d  int64
	freed bool
}

// tpPhasedMax bounds the phased decisions a period may hold and still be
// jumped, tpPhasedLook how many periods a jump looks ahead for the first
// that decides one of them otherwise.
const (
	tpPhasedMax  = 8
	tpPhasedLook = 1 << 14
)

// robust is whether the decision on seq at t (freed or not) is the same
// at every courier phase, the register being the run's; or, when it is
// the same at some only, the run's register decided it and the period
// holds few such (noted in p.jump.cons: phasedLength).
func (p *txPath) robust(seq, t int64, freed bool) bool {
	r := &p.jump.run
	if seq < r.seq0 || seq >= r.seq0+r.n {
		return false
	}
	at := r.t0 + (seq-r.seq0)*r.slot // the register passes seq
	u := t - p.back                  // the latest courier pass the sender may hold
	if freed && at <= u-p.courier+1 || !freed && at > u {
		return true // every pass the sender may hold has it, or none has
	}
	j := &p.jump
	if u < 0 || p.noPhased || len(j.cons) == tpPhasedMax {
		return false
	}
	c := tpPhased{u % p.courier, u - at, freed}
	if (c.r <= c.d) != freed {
		return false // decided by the register beside the run
	}
	j.cons = append(j.cons, c)
	return true
}

// phasedLength is how many of the next k periods (at most tpPhasedLook)
// decide every phased decision of the last period (cons) as it was
// decided: shifted by i periods of slot, a decision reads the pass its
// own shifted time gives, u+i*slot, and the register passes its copy
// i*slot later too, so only r moves, by slot modulo the courier's loop.
func (p *txPath) phasedLength(cons []tpPhased, slot, k int64) int64 {
	step := slot % p.courier
	k = min(k, tpPhasedLook)
	if step == 0 {
		return k // the phase never moves
	}
	for _, c := range cons {
		k = min(k, p.phasedFlip(c, step, k)-1)
	}
	return k
}

// phasedFlip is the first of the next k periods (from 1) that decides c
// otherwise, its phase moving by step a period; k+1 when none does. It
// goes from one crossing to the next: a freed decision's phase (at most
// c.d) stays freed until it passes c.d, where it flips unless it wraps
// past the courier's loop to at most c.d again; a kept one's (above c.d)
// stays kept until it wraps, where it flips if it lands at most c.d.
func (p *txPath) phasedFlip(c tpPhased, step, k int64) int64 {
	r := c.r
	for i := int64(0); ; {
		m := (p.courier-1-r)/step + 1 // periods to the wrap
		if c.freed {
			m = (c.d-r)/step + 1 // periods past c.d
		}
		if i += m; i > k {
			return k + 1
		}
		if r += m * step; r >= p.courier {
			r -= p.courier
		}
		if (r <= c.d) != c.freed {
			return i
		}
	}
}

// tryJump is called at the first decision on the copy at p.first's front,
// at t: it notes the state and, when the state repeats, jumps. Its phases:
// the back-off (backingOff), the note of the state (jumpNote, sameState,
// keepNote), then the way on when the state did not repeat (notRepeated)
// or the jump (jumpOn).
func (p *txPath) tryJump(t, until int64) bool {
	p.jump.toUntil = false
	preset := p.jump.preset
	p.jump.preset = false
	if p.backingOff() {
		return false
	}
	var n tpNote
	if !p.jumpNote(&n, t, until, preset) {
		p.jump.valid, p.jump.robust = false, false
		p.bu.on = false
		return false
	}
	least := p.jump.lo // the least copy in flight at the last note
	same := p.sameState(&n)
	p.keepNote(&n, same)
	if !same {
		return p.notRepeated(&n)
	}
	return p.jumpOn(&n, least)
}

// tpNote is the state tryJump notes at a first decision, which its phases
// share.
type tpNote struct {
	t, until int64
	s        int64   // the copy at p.first's front
	r        *tpRun  // the sender's run
	ri       int     // the receiver's run the copies in flight are in (index)
	rx       tpRun   // that run
	lo       int64   // the least copy in flight
	snap     []int64 // the state relative to (s, t), in p.jump.snap's storage
	preset   bool    // the state is the last note's, not written (presetNote)
}

// backingOff is whether this first decision lets the state pass unnoted.
func (p *txPath) backingOff() bool {
	j := &p.jump
	if j.skip > 0 && !p.bu.on && !p.tl.on {
		// Backing off after a state that did not repeat (the stretch
		// after a loss): noting the state costs as much as deciding.
		j.skip--
		return true
	}
	return false
}

// jumpNote is the state at the first decision at t, when it is one a
// jump may start from: no copy held, the sender in a run, a courier pass
// already made, and every copy in flight in one receiver's run of the
// sender's slot. (It fills in n, not returns it: most first decisions
// after a loss fail here, and the note was copied out at each.) preset:
// the first decision after a way on's end was installed with its note
// (presetJump).
func (p *txPath) jumpNote(n *tpNote, t, until int64, preset bool) bool {
	if len(p.held) > 0 || p.sendsAt >= len(p.sends) || t-p.back-p.courier <= 0 {
		return false
	}
	n.t, n.until, n.s, n.r = t, until, p.first.front().seq, &p.sends[p.sendsAt]
	var ok bool
	n.ri, n.lo, ok = p.inflightRun(n.s, n.r.slot)
	if !ok {
		return false
	}
	n.rx = p.rxRun[n.ri]
	if preset && p.presetNote(n) {
		return true
	}
	n.snap = p.stateAt(n.s, n.t, n.r)
	return true
}

// presetNote is whether the state at the first decision after a way on's
// end (presetJump) or a build-up's end (installBuildUp) was installed
// with its note repeats the note a period before (j.prev), found without
// writing the state out: the copies in flight and the ports were
// installed from that end, recorded at the same first decision as the
// note, and nothing is decided between (the first decision is the next
// event: a way on ends before any hold bit set or cleared and before the
// time asked for, a build-up within the periods its inputs are known
// steady, jumpLength), so the copies' part
// of the state is the note's by construction; only what the inputs since
// may have moved is compared: the sender's run, the ports' times as it
// reads them (stateTail), the receiver's run, the slot since the note.
// When it repeats, the state is the note's and is not written (n.preset).
func (p *txPath) presetNote(n *tpNote) bool {
	j := &p.jump
	if !j.valid || !j.robust || p.bu.on || p.st.on || p.tl.on || n.t-j.prevT != n.r.slot ||
		n.rx.seq0 != j.run.seq0 || n.rx.t0 != j.run.t0 || n.rx.slot != j.run.slot {
		return false
	}
	var buf [5]int64
	tail := p.stateTail(buf[:0], n.s, n.t, n.r)
	if len(j.prev) < len(tail) {
		return false
	}
	for i, v := range j.prev[len(j.prev)-len(tail):] {
		if tail[i] != v {
			return false
		}
	}
	if p.checkPreset && !slices.Equal(p.stateAt(n.s, n.t, n.r), j.prev) {
		p.noteWrong++
	}
	n.preset = true
	j.quick++
	return true
}

// sameState is whether the state noted (n) is the last note's shifted by
// one original and one slot, every decision between them robust.
func (p *txPath) sameState(n *tpNote) bool {
	j := &p.jump
	j.valid0 = j.valid
	same := n.preset || j.valid && j.robust && n.t-j.prevT == n.r.slot && n.rx.seq0 == j.run.seq0 && n.rx.t0 == j.run.t0 &&
		n.rx.slot == j.run.slot && sameInts(n.snap, j.prev)
	if same && p.tl.on {
		p.tailEnd(n) // the way on from a stretch's end ends where the state repeats
	}
	if same && len(j.cons) > 0 && (p.bu.on || p.st.on) {
		// A recording's arc is narrowed by every decision it makes: it
		// jumps over robust decisions only.
		same = false
	}
	return same
}

// keepNote makes the state noted (n) the last note, and hands it to a
// build-up being recorded.
func (p *txPath) keepNote(n *tpNote, same bool) {
	j := &p.jump
	j.last, j.cons = j.cons, j.last[:0]
	if p.bu.on {
		p.noteBuildUp(n.s, n.t, n.snap, &n.rx, same)
	}
	if n.preset {
		n.snap = j.prev // the state is the note's already (presetNote)
	} else {
		j.swapPrev(n.snap)
	}
	j.prevT, j.run, j.lo, j.valid, j.robust = n.t, n.rx, n.lo, true, true
}

// notRepeated goes on from a note whose state did not repeat: to the
// state a recorded build-up ends in (true), or backing off.
func (p *txPath) notRepeated(n *tpNote) bool {
	j := &p.jump
	if !j.valid0 {
		return false
	}
	if !p.noMemo && !p.bu.on && !p.st.on && !p.tl.on && p.buildUp(n.s, n.t, n.until, n.r, n.ri, n.lo, n.snap) {
		return true // the state the recorded build-up ends in, noted as repeating
	}
	j.backoff = min(2*j.backoff+1, 7)
	j.skip = j.backoff
	j.valid = false
	return false
}

// jumpOn jumps from a note whose state repeated (n) as many periods as
// the inputs stay the last period's (least: the least copy in flight at
// the note before) and its phased decisions stay decided as they were.
func (p *txPath) jumpOn(n *tpNote, least int64) bool {
	j := &p.jump
	j.backoff = 0
	r := n.r
	k := p.jumpLength(n.t, n.until, r, n.ri, least, j.prevT-r.slot-p.back-p.courier)
	flip := false
	if len(j.last) > 0 && k >= 1 {
		kp := p.phasedLength(j.last, r.slot, k)
		flip, k = kp < k, kp
	}
	if k >= 1 {
		p.shift(k, k*r.slot, r)
		j.valid, j.robust = false, false
		j.jumps++
		j.jumped += k
		j.toUntil = k == (n.until-n.t)/r.slot
	}
	if flip && p.flipBuildUp(n, max(k, 0)) {
		return true
	}
	return k >= 1
}

// flipBuildUp is called where a jump from the note n stops k periods on
// (k may be 0) because a phased decision of the next period flips: the
// state there is n's shifted by k, and what follows (the read queue a
// copy deeper or shallower, built up again until the state repeats) is
// the build-up noted from that state at that phase (buildUp). It is
// looked up there at once, from n's state, rather than after deciding the
// period and noting the state twice more; without a note of it the
// build-up is recorded from there.
func (p *txPath) flipBuildUp(n *tpNote, k int64) bool {
	if p.noMemo || p.bu.on || p.st.on || p.tl.on {
		return false
	}
	if p.buildUp(n.s+k, n.t+k*n.r.slot, n.until, n.r, n.ri, n.lo+k, n.snap) {
		p.bu.flips++
		return true
	}
	return false
}

// inflightRun is the receiver's run the copy s is in (its index), when
// that run's slot is the sender's and every copy in flight is in it, and
// the least copy in flight.
func (p *txPath) inflightRun(s, slot int64) (ri int, lo int64, ok bool) {
	ri = -1
	for i := range p.rxRun {
		if x := &p.rxRun[i]; x.seq0 <= s && s < x.seq0+x.n {
			ri = i
			break
		}
	}
	if ri < 0 || p.rxRun[ri].slot != slot {
		return -1, 0, false
	}
	lo = min(s, p.leastInFlight())
	return ri, lo, lo >= p.rxRun[ri].seq0
}

// leastInFlight is the least copy in flight (math.MaxInt64 when none):
// the one kept, or, when that was freed, found by going through the
// queues, as far as a copy at the floor below which none is.
func (p *txPath) leastInFlight() int64 {
	lo := p.least
	if p.leastOK {
		p.leastKept++
	} else {
		var looked int
		lo, looked = p.scanLeast(p.leastFloor)
		p.least, p.leastOK = lo, true
		p.leastFound++
		p.leastLooked += int64(looked)
	}
	if p.checkLeast {
		p.leastAll += int64(p.first.len() + p.q16.len() + p.on16.len())
		if all, _ := p.scanLeast(math.MinInt64); lo != all {
			p.leastWrong++
		}
	}
	return lo
}

// scanLeast goes through the copies in flight for the least, stopping at
// one at floor, and says how many it looked at. The copies past the read
// port first: the successor of the least, freed, has most often been
// round it the longest.
func (p *txPath) scanLeast(floor int64) (lo int64, looked int) {
	lo = math.MaxInt64
	for _, q := range []*tpQueue{&p.on16, &p.q16, &p.first} {
		i := q.head
		for ; i < len(q.a) && lo != floor; i++ {
			lo = min(lo, q.a[i].seq+q.ds)
		}
		looked += i - q.head
	}
	return lo, looked
}

// stateAt is the accounting's state relative to (s, t), in p.jump.snap's
// storage.
func (p *txPath) stateAt(s, t int64, r *tpRun) []int64 {
	return p.stateTail(p.appendQueues(p.jump.snap[:0], s, t), s, t, r)
}

// stateTail appends the state's part after the copies in flight (the
// ports' times, the sender's run: five numbers), relative to (s, t).
func (p *txPath) stateTail(snap []int64, s, t int64, r *tpRun) []int64 {
	free68, free16 := p.free68-t, p.free16-t
	if p.free68 <= r.t0 {
		free68 = math.MinInt64 // the next copy starts when sent either way
	}
	if p.q16.len() == 0 && p.free16 <= t {
		free16 = math.MinInt64 // idle: the next copy is taken at once either way
	}
	return append(snap, free68, free16, r.seq0-s, r.t0-t, r.slot)
}

// jumpLength is how many periods from t the inputs stay what the last
// period was: the sender's run, the receiver's (copies up to s+k decided
// on it), nothing else raising the register past the least copy decided
// (the least in flight at the last note) or holding a copy, and every
// input in. Below 1: no jump.
func (p *txPath) jumpLength(t, until int64, r *tpRun, ri int, least, from int64) int64 {
	rx := p.rxRun[ri]
	s := p.first.front().seq
	d := r.slot
	k := min(r.n-1, rx.seq0+rx.n-1-s, (until-t)/d)
	// What the register holds beside the run matters only where it is
	// above both the least copy decided and the run: from the earliest
	// courier pass the decisions may read on (from).
	if p.base > least && p.base > rx.at(from) {
		return 0
	}
	for i, x := range p.rxRun {
		if i < ri && x.seq0+x.n > least {
			return 0
		}
		if i > ri {
			k = min(k, (x.t0-t)/d-1)
			break
		}
	}
	for _, st := range p.steps[p.stepsAt:] {
		if st.t > t+k*d {
			break
		}
		if st.v > least && st.v > rx.at(max(st.t, from)) {
			k = min(k, (st.t-t)/d-1)
			break
		}
	}
	if len(p.holds) > 0 {
		k = min(k, (p.holds[0].t-t)/d-1)
	}
	return k
}

// shift moves the state ds originals and dt on: the copies in flight, the
// ports, the sender's run.
func (p *txPath) shift(ds, dt int64, r *tpRun) {
	for _, q := range [3]*tpQueue{&p.first, &p.q16, &p.on16} {
		q.shift(ds, dt)
	}
	if p.least != math.MaxInt64 {
		p.least += ds // none in flight stays none
	}
	if p.leastFloor != math.MinInt64 {
		p.leastFloor += ds
	}
	p.free68 += dt
	p.free16 += dt
	r.seq0 += ds
	r.t0 += dt
	r.n -= ds
	p.nextRead = 0 // read the courier afresh at the next decision
}
