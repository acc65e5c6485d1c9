package lgmodel

import (
	"math"
	"slices"
)

// The accounting's stretch after a loss, replayed.
//
// A replayed recording (replay.go) gives the accounting the inputs of the
// stretch after a corruption, shifted (tpFeed), and the accounting then
// decided every copy of the stretch one by one: the copies after each
// loss whose state does not repeat shifted (tryJump), most of the
// accounting's cost at 100G. But what the accounting does over the
// stretch is a function of its state at the stretch's start, of the
// stretch's inputs and of the courier's phase, and a recording's inputs
// are always the same, shifted: so the accounting's state at the start,
// relative to the stretch's first original and time, with the recording,
// is a key to its state at the stretch's end and the read queue's peak on
// the way, at the phase recorded. The first time a key is met the stretch
// is decided copy by copy and its end noted; when it is met again at a
// phase the note holds for, the end is installed, shifted, and the peak
// raised to the noted one (within one run a note's peak was met when it
// was noted: installing it keeps the watermark exact whatever came first).
//
// The phase: a decision reads the register at the latest courier pass a
// way back before it, so it is the same for every phase whose pass falls
// on the same side of the time the register passed the copy: an arc of
// phases around the one recorded, all of them where it is robust (arc).
// A note holds for the arc all the stretch's decisions share, so a state
// met at many phases takes a few notes, not one a phase (100G ordered,
// 1e-3, 10^8 frames: 2,152 notes for 92,418 stretches).
//
// The state is keyed in a canonical form, so that states that decide the
// same are one key: at the start every copy decided before the stretch's
// first time is decided (advance), so later decisions read the courier's
// passes from a time on, the same at every phase (fold's tauMin); the
// receiver's register before it matters only through its value then, so
// the steps before it and the parts of the runs landed by then fold into
// base (fold). The read port idle and done, or the first port done before
// the next copy is sent, are one state whatever the time they finished
// (canonPorts). Everything else is kept exactly: the copies in flight and
// queued, the copies still to send, the register's steps and runs from
// tauMin on, the hole bits held and to come. The end's register is the
// one the stretch's decisions read, folded at the end the same way at
// every phase (tpStretch.reg: the accounting's own folds the register at
// the passes its phase read). TestTxPathMemoSameAsDecided holds the
// replayed stretches to deciding every copy, exactly.

// tpMemoEnd is a stretch's end: the accounting's state at the end,
// encoded relative to the start (encode), the read queue's peak on the
// way, and the arc of courier phases around the one recorded whose
// decisions are the ones recorded (narrow).
type tpMemoEnd struct {
	end    []int64 // the end's state
	maxQ   int64
	phase  int64
	dl, dr int64
	tails  []*tpTail // the ways on from it (txpath_tail.go)
}

// tpMemoKey is a start's key and its ends noted at different phases
// (kept as numbers, not packed: comparing and installing them is each
// stretch's cost).
type tpMemoKey struct {
	key  []int64
	ends []*tpMemoEnd
}

// tpStretch is the stretch being recorded.
type tpStretch struct {
	on     bool
	dl, dr int64
	reg    *txPath // the register its decisions read: base, steps, runs, none folded
}

const (
	// tpMemoBudget bounds the bytes the noted ends take; when full,
	// they are all forgotten and noted again as met.
	tpMemoBudget = 32 << 20
	tpMemoArcs   = 128 // notes of one key (at different phases) at most
)

// tpFree is a port's free time that no later copy can see: the read port
// idle, or the first port free before the next copy is sent.
const tpFree = math.MinInt64 / 4

// tpReplay feeds rec's inputs shifted by ds originals and dt picoseconds,
// the stretch from the model's (n0, t0) to t1, through the memo above.
// The notes of a stretch are kept on its recording (rec.tp): the model's
// key has found the recording, so only the accounting's own state is
// compared, with no hash and no lookup in a table of every note, and the
// notes go with the recording when the model forgets it.
func (s *sim) tpReplay(rec *recording, ds, dt, n0, t0, t1 int64) {
	p := s.tp
	a := t0 - 1 // decided up to here: the stretch's inputs come at t0 on
	if p.noMemo || s.rec != nil || len(rec.tlog) == 0 || a-p.back-p.courier < 0 || t1 <= t0 || p.now > a {
		s.tpFeed(rec.tlog, ds, dt)
		return
	}
	// Decided up to a, or up to where a jump that went as far as a lets
	// it lands (advanceToJump): the stretch decides the rest, the same
	// every time.
	a = p.advanceToJump(a)
	p.tl.on, p.tl.pending = false, false // a tail ends where the next stretch begins
	if !p.fold(p, a) {
		s.tpFeed(rec.tlog, ds, dt)
		return
	}
	p.canonPorts(a, t0)
	k := append(p.memoKey[:0], t1-t0, t0-a)
	k = p.encode(k, n0, a, p)
	p.memoKey = k
	phase := p.courierPhase(a)
	if rec.tpGen != p.memoGen {
		rec.tp, rec.tpGen = nil, p.memoGen // forgotten with the rest
	}
	var mk *tpMemoKey
	for _, x := range rec.tp {
		if sameInts(x.key, k) {
			mk = x
			break
		}
	}
	var ends []*tpMemoEnd
	if mk != nil {
		ends = mk.ends
	}
	for _, e := range ends {
		if !p.onArc(e.phase, phase, e.dl, e.dr) {
			continue
		}
		p.install(e, n0, a)
		p.tl.pending, p.tl.e, p.tl.n0, p.tl.a = true, e, n0, a
		p.memoHits++
		// The inputs still go into the history a cycle repeats
		// (tpJump), by reference, and are counted.
		if p.logging {
			p.histLazy(rec.tlog, ds, dt)
		}
		p.inputs += int64(len(rec.tlog))
		return
	}
	if len(ends) >= tpMemoArcs {
		s.tpFeed(rec.tlog, ds, dt)
		return
	}
	// The key as it was before the stretch (p.memoKey is the end's
	// next), copied into a note only where it is a new key's.
	keep := append(p.memoKeep[:0], k...)
	p.memoKeep = keep
	peak := p.maxQ
	p.maxQ = 0
	st := &p.st
	if st.reg == nil {
		st.reg = &txPath{}
	}
	st.on, st.dl, st.dr = true, p.courier, p.courier
	st.reg.base = p.base
	st.reg.steps, st.reg.stepsAt = append(st.reg.steps[:0], p.steps[p.stepsAt:]...), 0
	st.reg.rxRun = append(st.reg.rxRun[:0], p.rxRun...)
	s.tpFeed(rec.tlog, ds, dt)
	a1 := t1 - 1
	p.advance(a1)
	st.on = false
	stretch := p.maxQ
	p.maxQ = max(peak, stretch)
	if p.now != a1 || !p.fold(st.reg, a1) {
		// (An input at t1 let the accounting decide at t1: not noted.)
		return
	}
	p.canonPorts(a1, t1)
	p.memoKey = p.encode(p.memoKey[:0], n0, a, st.reg)
	e := &tpMemoEnd{end: slices.Clone(p.memoKey), maxQ: stretch, phase: phase, dl: st.dl, dr: st.dr}
	size := int64(8*len(e.end)) + 64
	if p.memoBytes+size+int64(8*len(keep)) > tpMemoBudget {
		p.memoGen++ // every note forgotten
		p.memoBytes, mk = 0, nil
		rec.tp, rec.tpGen = nil, p.memoGen
	}
	if mk == nil {
		mk = &tpMemoKey{key: slices.Clone(keep)}
		rec.tp = append(rec.tp, mk)
		size += int64(8*len(keep)) + 64
	}
	mk.ends = append(mk.ends, e)
	p.memoBytes += size
	p.memoMisses++
	p.tl.e, p.tl.n0, p.tl.a = e, n0, a
	p.recordTail(st.reg)
}

// onArc is whether the courier's phase now is on the arc (dl before, dr
// after) around the phase recorded.
func (p *txPath) onArc(recorded, now, dl, dr int64) bool {
	d := modCourier(recorded-now, p.courier)
	return d <= dr || p.courier-d <= dl
}

// fold folds reg's register (p itself, or the stretch's) into the form
// the decisions after a read: the steps before the earliest courier pass
// any of them may read, at any phase, and the parts of the runs landed by
// then go into base. False when the runs would not stay in order of first
// arrival (not met).
func (p *txPath) fold(reg *txPath, a int64) bool {
	tauMin := a + 1 - p.back - p.courier
	last := int64(math.MinInt64)
	for _, r := range reg.rxRun {
		t0 := r.t0
		if t0 <= tauMin {
			j := (tauMin-r.t0)/r.slot + 1
			if j >= r.n {
				continue
			}
			t0 += j * r.slot
		}
		if t0 < last {
			return false
		}
		last = t0
	}
	for reg.stepsAt < len(reg.steps) && reg.steps[reg.stepsAt].t <= tauMin {
		reg.base = max(reg.base, reg.steps[reg.stepsAt].v)
		reg.stepsAt++
	}
	reg.steps = reg.steps[:copy(reg.steps, reg.steps[reg.stepsAt:])]
	reg.stepsAt = 0
	runs := reg.rxRun[:0]
	for _, r := range reg.rxRun {
		if r.t0 <= tauMin {
			v := r.at(tauMin)
			reg.base = max(reg.base, v)
			j := v - r.seq0
			if j >= r.n {
				continue
			}
			r = tpRun{v, r.t0 + j*r.slot, r.slot, r.n - j}
		}
		runs = append(runs, r)
	}
	reg.rxRun = runs
	return true
}

// canonPorts puts the rest of the state, decided up to a, the inputs to
// come from next on, in its canonical form (see above).
func (p *txPath) canonPorts(a, next int64) {
	p.nextRead = 0 // read afresh: the same pass reads the same register
	if p.q16.len() == 0 && p.free16 <= a {
		p.free16 = tpFree
	}
	if p.sendsAt < len(p.sends) {
		next = min(next, p.sends[p.sendsAt].t0)
	}
	if p.free68 <= next {
		p.free68 = tpFree
	}
	p.jump.valid, p.jump.robust, p.bu.on = false, false, false
}

// narrowStretch is called at each decision of the stretch being recorded
// (seq at t, freed or not): the arc of phases that decide it the same.
func (p *txPath) narrowStretch(seq, t int64, freed bool) {
	st := &p.st
	st.dl, st.dr = p.narrowOn(st.reg, st.dl, st.dr, seq, t, freed)
}

// narrowOn narrows the arc (dl, dr) by the decision on seq at t, the
// register being reg's.
func (p *txPath) narrowOn(reg *txPath, dl, dr, seq, t int64, freed bool) (int64, int64) {
	if !freed && len(p.held) > 0 && p.isHeld(seq) {
		return dl, dr // held at every phase
	}
	// When the register passes seq.
	d := int64(-1) // never
	if reg.base > seq {
		d = p.courier // always
	} else {
		pass := int64(math.MaxInt64)
		for _, x := range reg.steps[reg.stepsAt:] {
			if x.v > seq {
				pass = x.t
				break
			}
		}
		for _, r := range reg.rxRun {
			if seq < r.seq0+r.n {
				pass = min(pass, r.t0+max(0, seq-r.seq0)*r.slot)
			}
		}
		if pass != math.MaxInt64 {
			d = t - p.back - pass
		}
	}
	return arc(dl, dr, t-p.back, d, p.courier, freed)
}

// arc narrows the arc (dl, dr) of shifts x of the courier's passes to
// those under which a decision reading the latest pass at or before u
// decides as it did (freed or not), the register having passed the copy
// d before u: with the passes shifted by x it reads u-((r-x) mod c).
func arc(dl, dr, u, d, c int64, freed bool) (int64, int64) {
	r := u % c
	if freed {
		if d >= c-1 {
			return dl, dr // every pass it may read has it
		}
		return min(dl, d-r), min(dr, r)
	}
	if d < 0 {
		return dl, dr // none has it
	}
	return min(dl, c-1-r), min(dr, r-d-1)
}

// encode appends the canonical state relative to original n0 and time a,
// the register's from reg (p itself, or the stretch's).
func (p *txPath) encode(k []int64, n0, a int64, reg *txPath) []int64 {
	rel := func(t int64) int64 {
		if t == tpFree {
			return tpFree
		}
		return t - a
	}
	k = append(k, p.now-a, reg.base-n0, rel(p.free68), rel(p.free16), int64(len(p.sends)-p.sendsAt))
	for _, r := range p.sends[p.sendsAt:] {
		k = append(k, r.seq0-n0, r.t0-a, r.slot, r.n)
	}
	k = append(k, int64(len(reg.steps)-reg.stepsAt))
	for _, st := range reg.steps[reg.stepsAt:] {
		k = append(k, st.t-a, st.v-n0)
	}
	k = append(k, int64(len(reg.rxRun)))
	for _, r := range reg.rxRun {
		k = append(k, r.seq0-n0, r.t0-a, r.slot, r.n)
	}
	k = append(k, int64(len(p.holds)))
	for _, h := range p.holds {
		k = append(k, h.t-a, h.seq-n0, b2i(h.on))
	}
	k = append(k, int64(len(p.held)))
	for _, h := range p.held {
		k = append(k, h-n0)
	}
	return p.appendQueues(k, n0, a)
}

// install sets the state e's end gives, relative to n0 and a, but for the
// copies in flight (tpTailRec.endQ).
func (p *txPath) install(e *tpMemoEnd, n0, a int64) {
	b := e.end
	abs := func(v int64) int64 {
		if v == tpFree {
			return tpFree
		}
		return v + a
	}
	// Read in place (an index, not a number taken off the front at a
	// time): every stretch replayed installs one.
	p.now, p.base = b[0]+a, b[1]+n0
	p.free68, p.free16 = abs(b[2]), abs(b[3])
	n, i := int(b[4]), 5
	p.sends, p.sendsAt = p.sends[:0], 0
	for ; n > 0; n, i = n-1, i+4 {
		p.sends = append(p.sends, tpRun{b[i] + n0, b[i+1] + a, b[i+2], b[i+3]})
	}
	n, i = int(b[i]), i+1
	p.steps, p.stepsAt = p.steps[:0], 0
	for ; n > 0; n, i = n-1, i+2 {
		p.steps = append(p.steps, tpStep{b[i] + a, b[i+1] + n0})
	}
	n, i = int(b[i]), i+1
	p.rxRun = p.rxRun[:0]
	for ; n > 0; n, i = n-1, i+4 {
		p.rxRun = append(p.rxRun, tpRun{b[i] + n0, b[i+1] + a, b[i+2], b[i+3]})
	}
	n, i = int(b[i]), i+1
	p.holds = p.holds[:0]
	for ; n > 0; n, i = n-1, i+3 {
		p.holds = append(p.holds, tpHold{b[i] + a, b[i+1] + n0, b[i+2] != 0})
	}
	n, i = int(b[i]), i+1
	p.held = p.held[:0]
	for ; n > 0; n, i = n-1, i+1 {
		p.held = append(p.held, b[i]+n0)
	}
	// The copies in flight are loaded when the way on is looked for
	// (tailStart, before any decision or reading): a way on found loads
	// its own, and most are.
	p.tl.endQ = b[i:]
	p.nextRead = 0
	p.maxQ = max(p.maxQ, e.maxQ)
	p.jump.valid, p.jump.robust, p.bu.on = false, false, false
}

// The build-up after a loss, replayed.
//
// After a loss the sender's copies come steadily again, but the
// accounting's state does not repeat at once: at 100G the read port's
// queue fills again copy by copy (each copy goes round two or three times
// before the courier's ACK passes it), and the jumps (tryJump) wait for a
// state that repeats shifted. That build-up is a function of the state at
// a copy's first decision (stateAt's, relative to the copy and the time),
// of the receiver's run relative to it, and of the courier's phase, so
// long as nothing but the two runs feeds the accounting (jumpLength's
// conditions, from the earliest pass the first decision may read): the
// first time such a state does not repeat after one that was noted, its
// build-up is decided copy by copy up to the first state that repeats, and
// that state noted with its length and the read queue's peak on the way;
// met again, with the inputs steady for as long, the noted state is
// installed and the jumps go on from it.
//
// The phase: a decision reads the register at the latest courier pass a
// way back before it, and the run gives when the register passes the
// copy, so each decision is the same over an arc of phases around the
// one recorded (all of them where the decision is robust); the note holds
// for the arc every decision of the build-up shares, and is met at any
// phase on it.

type tpBuildUp struct {
	on     bool  // a build-up is being recorded
	dl, dr int64 // the arc of courier phases its decisions share so far
	peak   int64 // the read queue's peak since its start
	s0, t0 int64 // its first decision's copy and time
	kMax   int64 // its length at most (the inputs known steady)
	phase  int64
	rx     tpRun // the receiver's run it reads
	key    []int64

	memo         map[uint64][]*tpBuildKey
	bytes        int64
	hits, misses int64
	flips        int64 // hits where a jump stopped at a phased decision (flipBuildUp)
	scratch      []int64
}

// tpBuildKey is a start's key and its ends noted at different
// phases.
type tpBuildKey struct {
	key  []int64
	ends []*tpBuildEnd
}

type tpBuildEnd struct {
	end    []int64 // stateAt's at the end, relative to its copy and time
	l      int64   // copies from the start to the end
	peak   int64
	phase  int64 // the courier's phase recorded
	dl, dr int64 // the arc around it that decides the same
}

const (
	tpBuildBudget = 32 << 20
	tpBuildArcs   = 64 // notes of one state (at different phases) at most
)

// courierPhase is the courier's phase at a first decision at t.
func (p *txPath) courierPhase(t int64) int64 {
	return modCourier(t-p.back, p.courier)
}

// modCourier is x mod c in [0, c) (c > 0): one division, where
// ((x%c)+c)%c takes two (onArc and courierPhase run several times a
// stretch replayed).
func modCourier(x, c int64) int64 {
	if x %= c; x < 0 {
		x += c
	}
	return x
}

// buildUp is called at a first decision whose state did not repeat (s at
// t; snap is stateAt's): with a note of the state it installs the end
// noted; without one it starts recording.
func (p *txPath) buildUp(s, t, until int64, r *tpRun, ri int, lo int64, snap []int64) bool {
	bu := &p.bu
	rx := p.rxRun[ri]
	k := p.jumpLength(t, until, r, ri, lo, t-p.back-p.courier)
	if k < 1 {
		return false
	}
	key := append(bu.scratch[:0], rx.seq0-s, rx.t0-t, rx.slot)
	key = append(key, snap...)
	bu.scratch = key
	h := hashKey(key)
	phase := p.courierPhase(t)
	var ends []*tpBuildEnd
	for _, x := range bu.memo[h] {
		if sameInts(x.key, key) {
			ends = x.ends
			break
		}
	}
	for _, e := range ends {
		if !p.onArc(e.phase, phase, e.dl, e.dr) {
			continue
		}
		if e.l > k {
			return false // the inputs are not known steady for as long
		}
		p.installBuildUp(e, s, t, r, rx, lo)
		return true
	}
	if len(ends) >= tpBuildArcs {
		return false
	}
	bu.on, bu.dl, bu.dr, bu.peak = true, p.courier, p.courier, 0
	bu.s0, bu.t0, bu.kMax, bu.phase, bu.rx = s, t, k, phase, rx
	bu.key = append(bu.key[:0], key...)
	return false
}

// narrow is called at each decision while recording (seq at t, freed or
// not): the arc of phases that decide it the same.
func (p *txPath) narrow(seq, t int64, freed bool) {
	bu := &p.bu
	rx := &bu.rx
	if seq < rx.seq0 || seq >= rx.seq0+rx.n {
		bu.on = false
		return
	}
	u := t - p.back // the latest pass the decision may read
	bu.dl, bu.dr = arc(bu.dl, bu.dr, u, u-(rx.t0+(seq-rx.seq0)*rx.slot), p.courier, freed)
}

// noteBuildUp is called at each first decision while recording: the
// recording ends where the state repeats (same), or is dropped where the
// inputs are no longer what they were at its start.
func (p *txPath) noteBuildUp(s, t int64, snap []int64, rx *tpRun, same bool) {
	bu := &p.bu
	l := s - bu.s0
	if rx.seq0 != bu.rx.seq0 || rx.t0 != bu.rx.t0 || rx.slot != bu.rx.slot || t-bu.t0 != l*rx.slot || l > bu.kMax {
		bu.on = false
		return
	}
	if !same {
		return
	}
	bu.on = false
	h := hashKey(bu.key)
	e := &tpBuildEnd{end: slices.Clone(snap), l: l, peak: bu.peak, phase: bu.phase, dl: bu.dl, dr: bu.dr}
	size := int64(8*len(e.end)) + 64
	if bu.memo == nil || bu.bytes+size+int64(8*len(bu.key)) > tpBuildBudget {
		bu.memo, bu.bytes = map[uint64][]*tpBuildKey{}, 0
	}
	var bk *tpBuildKey
	for _, x := range bu.memo[h] {
		if sameInts(x.key, bu.key) {
			bk = x
			break
		}
	}
	if bk == nil {
		bk = &tpBuildKey{key: slices.Clone(bu.key)}
		bu.memo[h] = append(bu.memo[h], bk)
		size += int64(8*len(bk.key)) + 64
	}
	bk.ends = append(bk.ends, e)
	bu.bytes += size
	bu.misses++
}

// installBuildUp sets the state e ends in, its first decision on copy
// s+e.l at t+e.l slots (rx: the receiver's run; lo: the least copy in
// flight at s).
func (p *txPath) installBuildUp(e *tpBuildEnd, s, t int64, r *tpRun, rx tpRun, lo int64) {
	s1, t1 := s+e.l, t+e.l*r.slot
	v := p.loadQueues(e.end, s1, t1)
	abs := func(x, t int64) int64 {
		if x == math.MinInt64 {
			return tpFree
		}
		return x + t
	}
	p.free68, p.free16 = abs(v[0], t1), abs(v[1], t1)
	seq0 := v[2] + s1
	r.n -= seq0 - r.seq0
	r.seq0, r.t0 = seq0, v[3]+t1
	p.nextRead = 0
	p.maxQ = max(p.maxQ, e.peak)
	p.bu.hits++
	// The state repeats from there (the recording ended where it did):
	// the jumper holds it as noted a slot before, so the next first
	// decision jumps.
	j := &p.jump
	j.setPrev(e.end)
	j.prevT, j.run, j.lo, j.valid, j.robust = t1-r.slot, rx, lo, true, true
	j.skip, j.backoff = 0, 0
	j.cons = j.cons[:0] // the recording ended on a period of robust decisions
	j.preset = true     // the copies in flight are that note's (presetNote)
	j.jumped += e.l
}
