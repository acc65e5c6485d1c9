package fctmodel

import "time"

// The skip-ahead over lossless trials (see Model.Trial).

// maxKeySegs bounds the unacknowledged segments a keyed state may hold.
const maxKeySegs = 8

// maxCache bounds the states kept.
const maxCache = 10_000

// stateKey is the canonical state of both ends at the start of a clean
// trial: everything that decides how the trial goes, with times relative
// to its start and sequence numbers relative to each stream's oldest
// unacknowledged byte (or packet).
type stateKey struct {
	tcp  [2]tcpVars
	rtx  [2][maxKeySegs]seg
	nrtx [2]uint8
	rdma [2]rdmaVars
}

// key is the current (rebased) state, if it is small enough to keep.
func (m *Model) key() (stateKey, bool) {
	var k stateKey
	switch m.c.Transport {
	case TCP:
		for i, e := range m.tcp {
			if len(e.rtx) > maxKeySegs || len(e.ofo) > 0 {
				return k, false
			}
			k.tcp[i] = e.v
			copy(k.rtx[i][:], e.rtx)
			k.nrtx[i] = uint8(len(e.rtx))
		}
	case RDMA:
		for i, e := range m.rdma {
			k.rdma[i] = e.v
		}
	}
	return k, true
}

// restore puts both ends in state k at relative time 0, with nothing in
// flight and fresh links.
func (m *Model) restore(k stateKey) {
	m.now = 0
	m.q = m.q[:0]
	m.nPending = 0
	m.pkts, m.freePkts = m.pkts[:0], m.freePkts[:0]
	for i := range m.links {
		m.links[i].sim = nil
	}
	m.nicFree, m.portFree = [2]int64{}, [2]int64{}
	switch m.c.Transport {
	case TCP:
		for i, e := range m.tcp {
			e.v = k.tcp[i]
			e.rtx = append(e.rtx[:0], k.rtx[i][:k.nrtx[i]]...)
			e.ofo = e.ofo[:0]
		}
	case RDMA:
		for i, e := range m.rdma {
			e.v = k.rdma[i]
		}
	}
	m.rearmAll()
}

// template is what a lossless trial from a state takes.
type template struct {
	ok    bool  // it can stand for the lossless trials from its state
	trial Trial // FCT and counters (Start is filled when applied)
	dur   int64 // ps from the trial's start to the next one's
	end   stateKey
	// p are the corruption probabilities of the frames each link carried,
	// in order; none is the probability that none was corrupted.
	p    [2][]float64
	none float64
	next *template // the template of end, once looked up
}

type recording struct {
	p          [2][]float64
	timerFired bool
}

// record runs the trial from the current state (k) with nothing corrupted
// and keeps what it takes. The model is left in the state it ends in.
func (m *Model) record(k stateKey) *template {
	rec := &recording{}
	m.rec = rec
	t := m.runTrial()
	m.rec = nil
	tpl := &template{trial: t, p: rec.p, none: 1}
	for _, ps := range rec.p {
		for _, p := range ps {
			tpl.none *= 1 - p
		}
	}
	quiet := t.Retransmits == 0 && t.Timeouts == 0 && t.Probes == 0 && t.Recoveries == 0 &&
		t.Spurious == 0 && t.Reordered == 0 && t.LinkCopies == 0 && t.LinkLost == 0
	// A timer that fired would make the course depend on where the trial
	// falls between the kernel's ticks: such a state is not kept.
	if quiet && !rec.timerFired && m.clean() {
		tpl.dur = m.now
		m.rebase()
		tpl.end, tpl.ok = m.key()
	}
	if len(m.cache) >= m.cacheCap {
		// A run that keeps meeting new states: start over rather than
		// grow without bound (each state takes a few kilobytes).
		clear(m.cache)
		m.cur, m.prev = nil, nil
	}
	m.cache[k] = tpl
	return tpl
}

// apply moves the model over a lossless trial from tpl's start state.
func (m *Model) apply(tpl *template) Trial {
	t := tpl.trial
	t.Start = time.Duration(m.epoch / 1000)
	m.epoch += tpl.dur
	m.restore(tpl.end)
	m.cur = tpl.next
	if m.cur == nil {
		m.prev = tpl
	}
	return t
}

// forceFirstCorruption samples a trial from tpl's start given that at least
// one of the frames of its lossless course is corrupted: the first
// corrupted one (links in order, then frames in order of offering) is
// drawn, the frames before it get through, it is corrupted, and the rest
// are drawn as they are sent.
func (m *Model) forceFirstCorruption(tpl *template) {
	v := m.r.Float64() * (1 - tpl.none)
	q := 1.0
	cl, ci := -1, -1
	for l := range tpl.p {
		for i, p := range tpl.p[l] {
			if p <= 0 {
				continue
			}
			cl, ci = l, i // the last one with a chance, should rounding leave v over
			if c := q * p; v < c {
				goto found
			} else {
				v -= c
			}
			q *= 1 - p
		}
	}
found:
	for l := range tpl.p {
		f := m.fates[l][:0]
		for i, p := range tpl.p[l] {
			switch {
			case l < cl || (l == cl && i < ci):
				f = append(f, p+(1-p)*m.r.Float64()) // gets through
			case l == cl && i == ci:
				f = append(f, p*m.r.Float64()) // corrupted
			}
		}
		m.fates[l] = f
	}
}
