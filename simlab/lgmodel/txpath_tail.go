package lgmodel

import (
	"math"
	"slices"
)

// The accounting's way on from a replayed stretch's end, replayed.
//
// A noted stretch (txpath_memo.go) ends where the model is steady again,
// but the accounting is not: the copies in flight still carry the gaps
// the lost original and its retransmissions left in the sender's slots,
// and they go round the read port's queue and back until the state
// repeats shifted and the jumps go on (tryJump), most of the copies
// decided one by one after a loss in non-blocking mode. That way on is a
// function of the state at the stretch's end (the note's, the same for
// every stretch that met it), of the inputs that come after it (the
// sender's copies, the receiver's register) and of the courier's phase.
// So each note keeps the ways on it was followed by, up to the first
// first decision whose state repeats: the inputs they read (relative to
// the stretch's first original and time, the sender's copies up to the
// last one fed, the register up to the latest courier pass read, no hole
// bit; every one of them in by the end's time), the state at their end and the read queue's peak on the way, and
// the arc of courier phases around the one recorded that decides every
// copy on the way as it was decided (narrowOn). When the note is met
// again and the inputs since are those of a way on it kept, at a phase on
// its arc, the way's end is installed.

// tpTail is one way on from a stretch's end.
type tpTail struct {
	in            []int64 // the inputs it read, relative
	end           []int64 // the state at its end, relative
	t2            int64   // its end, relative
	maxQ          int64
	phase, dl, dr int64
	// The jumps' note at its end (tryJump): the state there, relative to
	// its copy and time (stateAt's), which repeats the note a period
	// before, and the decisions of that period that were the same at
	// some courier phases only (tpJumper.cons), at the phase recorded.
	snap []int64
	cons []tpPhased
	// The least copy in flight at that note a period before (relative):
	// presetJump gives it from the end's least, and the tests check it
	// against this one, which the jumper held (checkPreset).
	lo int64
	// The least copy in flight at its end (relative; math.MaxInt64:
	// none), loaded with its copies (loadQueuesLeast).
	least int64
}

// tpTailRec is the way on being looked for or recorded.
type tpTailRec struct {
	pending bool // a note was met: look for its ways on at the next advance
	on      bool // recording
	e       *tpMemoEnd
	n0, a   int64 // the stretch's first original and start
	dl, dr  int64
	peak    int64
	reg     *txPath // the register as the way on reads it: the stretch's end's, and the inputs since
	sends   []tpRun // the copies to send, likewise
	in, end []int64 // scratch
	// the copies in flight at the stretch's end installed (as
	// appendQueues wrote them, relative to n0 and a), not yet loaded
	endQ   []int64
	hits   int64
	misses int64
	jumps  int64 // ways on installed with the jumps' note at their end
}

// tpTails bounds the ways on a note keeps.
const tpTails = 16

// recordTail starts recording the way on from the stretch's end now
// (p.now), the register being reg's (the stretch's end's, canonical).
func (p *txPath) recordTail(reg *txPath) {
	tl := &p.tl
	if len(tl.e.tails) >= tpTails || len(p.held) > 0 {
		return
	}
	tl.on, tl.pending = true, false
	tl.dl, tl.dr, tl.peak = p.courier, p.courier, 0
	if tl.reg == nil {
		tl.reg = &txPath{}
	}
	tl.reg.base = reg.base
	tl.reg.steps, tl.reg.stepsAt = append(tl.reg.steps[:0], reg.steps[reg.stepsAt:]...), 0
	tl.reg.rxRun = append(tl.reg.rxRun[:0], reg.rxRun...)
	tl.sends = append(tl.sends[:0], p.sends[p.sendsAt:]...)
}

// tailStart is called at an advance to until after a note was met: a way
// on it keeps whose inputs are in and the same is installed; else the
// way on is recorded.
func (p *txPath) tailStart(until int64) {
	tl := &p.tl
	tl.pending = false
	if len(p.held) == 0 {
		if x := p.findTail(until); x != nil {
			p.installTail(x)
			tl.hits++
			return
		}
	}
	p.loadQueues(tl.endQ, tl.n0, tl.a) // the stretch's end's own (install)
	if len(p.held) == 0 {
		p.recordTail(p)
	}
}

// findTail is the way on from the stretch's end just installed whose
// inputs are in and the same, on whose arc the phase is; nil when none.
func (p *txPath) findTail(until int64) *tpTail {
	tl := &p.tl
	phase := p.courierPhase(tl.a)
	for _, x := range tl.e.tails {
		if !p.onArc(x.phase, phase, x.dl, x.dr) || until < tl.a+x.t2 ||
			len(p.holds) > 0 && p.holds[0].t <= tl.a+x.t2 {
			continue
		}
		tl.in = p.tailInputs(tl.in[:0], p, p.sends[p.sendsAt:], x.t2, x.end[3])
		if sameInts(tl.in, x.in) {
			return x
		}
	}
	return nil
}

// tailInputs appends the inputs a way on ending at t2 (relative) reads:
// the copies to send up to the one before fed (relative), the register
// up to the latest courier pass its decisions may read; relative to the
// stretch's first original and start.
func (p *txPath) tailInputs(k []int64, reg *txPath, sends []tpRun, t2, fed int64) []int64 {
	n0, a := p.tl.n0, p.tl.a
	for _, r := range sends {
		n := min(r.n, fed+n0-r.seq0)
		if n <= 0 {
			break
		}
		k = append(k, r.seq0-n0, r.t0-a, r.slot, n)
	}
	k = append(k, math.MinInt64, reg.base-n0)
	last := a + t2 - p.back // no decision before t2 reads a later pass
	for _, st := range reg.steps[reg.stepsAt:] {
		if st.t > last {
			break
		}
		k = append(k, st.t-a, st.v-n0)
	}
	k = append(k, math.MinInt64)
	for _, r := range reg.rxRun {
		if r.t0 > last {
			break
		}
		k = append(k, r.seq0-n0, r.t0-a, r.slot, min(r.n, (last-r.t0)/r.slot+1))
	}
	return k
}

// tailAdd mirrors an input into the way on being recorded.
func (p *txPath) tailAdd(e tpEntry) {
	tl := &p.tl
	switch e.kind {
	case tpRx, tpRxRun:
		tl.reg.add(&e)
	case tpSend:
		if k := len(tl.sends) - 1; k >= 0 && tl.sends[k].continuedBy(e.seq, e.at, e.slot) {
			tl.sends[k].n += e.n
			return
		}
		tl.sends = append(tl.sends, tpRun{e.seq, e.at, e.slot, e.n})
	default:
		tl.on = false // a hole bit: not recorded
	}
}

// tailEnd is called while recording at a first decision whose state
// repeats (the note n: s at t, not yet decided): the way on ends here and
// is noted, with the note, so that where it is installed the jumps go on
// at once (presetJump). It ends there and not earlier: what the jumps
// would do between its end and the state that repeats (note, decide,
// note again, a build-up replayed) is the same every time it is met.
func (p *txPath) tailEnd(n *tpNote) {
	t := n.t
	tl := &p.tl
	tl.on = false
	if p.sendsAt >= len(p.sends) || len(p.held) > 0 {
		return
	}
	n0, a := tl.n0, tl.a
	rel := func(v int64) int64 {
		if v == tpFree {
			return tpFree
		}
		return v - a
	}
	// The ports' times as they are: the next copy to send is an input
	// the way on did not read.
	fed := p.sends[p.sendsAt].seq0 - n0
	end := p.appendQueues(append(tl.end[:0], t-a, rel(p.free68), rel(p.free16), fed), n0, a)
	tl.end = end
	x := &tpTail{end: slices.Clone(end), t2: t - a, maxQ: tl.peak,
		phase: p.courierPhase(a), dl: tl.dl, dr: tl.dr}
	x.least = leastQueued(x.end[4:])
	x.in = p.tailInputs(nil, tl.reg, tl.sends, x.t2, fed)
	x.snap, x.cons = slices.Clone(n.snap), slices.Clone(p.jump.cons)
	x.lo = p.jump.lo - n0 // the last note's (keepNote comes after)
	tl.e.tails = append(tl.e.tails, x)
	p.memoBytes += int64(8*(len(x.in)+len(x.end)+len(x.snap)+3*len(x.cons))) + 128
	tl.misses++
}

// installTail sets the state the way on x ends in; the inputs stay the
// accounting's, the copies fed on the way taken from those to send.
func (p *txPath) installTail(x *tpTail) {
	n0, a := p.tl.n0, p.tl.a
	v := x.end
	abs := func(u int64) int64 {
		if u == tpFree {
			return tpFree
		}
		return u + a
	}
	p.now, p.free68, p.free16 = v[0]+a, abs(v[1]), abs(v[2])
	fed := v[3] + n0
	p.loadQueuesLeast(v[4:], n0, a, x.least)
	for p.sendsAt < len(p.sends) {
		r := &p.sends[p.sendsAt]
		if r.seq0+r.n <= fed {
			p.sendsAt++
			continue
		}
		if d := fed - r.seq0; d > 0 {
			r.seq0, r.t0, r.n = fed, r.t0+d*r.slot, r.n-d
		}
		break
	}
	p.nextRead = 0
	p.maxQ = max(p.maxQ, x.maxQ)
	p.jump.valid, p.jump.robust, p.bu.on = false, false, false
	p.presetJump(x)
}

// presetJump sets the jumps' note (tpJumper) as it stood a period before
// the way on x's end, just installed: the next first decision, at the
// end, then finds the state repeated and jumps. The note a period before
// is the end's own state (it repeats), a slot earlier, its least copy in
// flight one lower, every decision since robust but for x.cons, whose
// courier phase moves with the phase the way on is installed at.
func (p *txPath) presetJump(x *tpTail) {
	if x.snap == nil || p.first.len() == 0 || p.sendsAt >= len(p.sends) {
		return
	}
	j := &p.jump
	r := &p.sends[p.sendsAt]
	s := p.first.front().seq
	ri, lo, ok := p.inflightRun(s, r.slot)
	if !ok {
		return
	}
	shift := p.courierPhase(p.tl.a) - x.phase
	j.cons = j.cons[:0]
	for _, c := range x.cons {
		c.r = modCourier(c.r+shift, p.courier)
		if (c.r <= c.d) != c.freed {
			j.cons = j.cons[:0]
			return // not met: the arc decides each as recorded
		}
		j.cons = append(j.cons, c)
	}
	j.sharePrev(x.snap) // the note itself, not a copy
	if p.checkPreset {
		p.presetSnaps = append(p.presetSnaps, [2][]int64{x.snap, slices.Clone(x.snap)})
	}
	j.prevT, j.run, j.lo, j.valid, j.robust = p.now-r.slot, p.rxRun[ri], lo-1, true, true
	j.skip, j.backoff = 0, 0
	j.preset = true // the next first decision is at the end, with the end's copies (presetNote)
	p.tl.jumps++
	if p.checkPreset && j.lo != x.lo+p.tl.n0 {
		p.presetWrong++
	}
}
