package stardustmodel

import "fmt"

// The fabric's topology, forwarding and reachability.
//
// Links are numbered: FA fa's link j is fa*LinksPerFA + j; it joins the
// first-tier FE (fa/gFA)*g1 + j%g1 as that FE's parallel link j/g1 to the
// FA. With two stages, first-tier FE f's link to second-tier FE u is
// FAs*LinksPerFA + f*FE2s + u. A cell goes FA -> FE (-> FE2 -> FE) -> FA:
// with two stages every cell crosses the second tier, the first-tier FE
// acting as first and last stage (§6.2's folded Clos).
//
// Every device keeps, per link it sends on, what the cells received on
// that link say the link reaches (§3.2 "each Fabric Adapter holds a
// reachability table"; §5.8 "for each destination Fabric Adapter there is
// only the set of links outgoing from the current device that can be
// used"). An FA advertises itself to its FEs; a first-tier FE advertises
// to second-tier FEs the FAs its valid links to FAs reach, and to FAs all
// it reaches; a second-tier FE advertises to first-tier FEs the union of
// what they advertised to it (§5.8: "each device periodically transmits
// its Fabric Adapter reachability table to its upstream neighbors").

// rxEnd is a link's receiving end: the state its reachability cells built.
type rxEnd struct {
	valid         bool
	good, missed  int
	havePend, pOK bool
	// pErr says the link's measured error rate crossed the threshold in
	// the period the pending cell closes (errors.go): the link is faulty
	// at once, and needs th good cells to come back (§5.10).
	pErr bool
}

// reachEnds is one kind of receiving end, with the reachability bitmap
// last received on each (words uint64 per end) and the one in flight.
type reachEnds struct {
	e          []rxEnd
	bits, pend []uint64
}

func newEnds(n, words int) reachEnds {
	r := reachEnds{e: make([]rxEnd, n), bits: make([]uint64, n*words), pend: make([]uint64, n*words)}
	for i := range r.e {
		r.e[i].valid = true
	}
	return r
}

type reach struct {
	on     bool
	words  int
	linkUp []bool // physical state, by link number
	feUp   []bool // first-tier FEs
	fe2Up  []bool
	sentAt int64 // slot the last round of reachability cells left, -1 none

	fa reachEnds // [fa*LinksPerFA+j]: an FA hearing its FE
	dn reachEnds // [fe*gFA*k + la*k + i]: an FE hearing an FA (no bitmap needed)
	up reachEnds // [fe*FE2s+u]: a first-tier FE hearing a second-tier one
	f2 reachEnds // [u*FEs+fe]: a second-tier FE hearing a first-tier one

	dBits, tBits, rBits []uint64 // scratch: per FE down reach and total, per FE2
}

func (m *Model) initReach() {
	c := m.c
	rt := &m.rt
	rt.on = c.ReachPeriodSlots > 0
	rt.words = (c.FAs + 63) / 64
	nFA := c.FAs * c.LinksPerFA
	rt.linkUp = make([]bool, nFA+c.FEs*c.FE2s*(c.NStages()-1))
	for i := range rt.linkUp {
		rt.linkUp[i] = true
	}
	rt.feUp = make([]bool, c.FEs)
	for i := range rt.feUp {
		rt.feUp[i] = true
	}
	rt.sentAt = -1
	rt.fe2Up = make([]bool, c.FE2s*(c.NStages()-1))
	for i := range rt.fe2Up {
		rt.fe2Up[i] = true
	}
	if !rt.on {
		return
	}
	w := rt.words
	rt.fa = newEnds(nFA, w)
	rt.dn = newEnds(len(m.dnq), 0)
	rt.dBits, rt.tBits = make([]uint64, c.FEs*w), make([]uint64, c.FEs*w)
	if c.NStages() == 2 {
		rt.up = newEnds(c.FEs*c.FE2s, w)
		rt.f2 = newEnds(c.FE2s*c.FEs, w)
		rt.rBits = make([]uint64, c.FE2s*w)
	}
	// The fabric starts converged: rounds of advertisements until every
	// table holds what the topology reaches (a bitmap crosses at most
	// three links: FE to FE2 to FE to FA).
	for i := 0; i < 3; i++ {
		m.advertise()
		m.receive()
	}
	for _, r := range []*reachEnds{&rt.fa, &rt.dn, &rt.up, &rt.f2} {
		for i := range r.e {
			r.e[i].good = c.ReachTh
		}
	}
}

func has(bits []uint64, i, w, d int) bool { return bits[i*w+d/64]&(1<<(d%64)) != 0 }

// advertise computes every reachability cell sent this round from the
// senders' tables now; a cell is sent only by a live device on a live link.
func (m *Model) advertise() {
	c, rt := m.c, &m.rt
	w := rt.words
	clear(rt.dBits)
	per := m.gFA * m.k
	for q := range rt.dn.e {
		fe := q / per
		if rt.dn.e[q].valid && rt.feUp[fe] {
			a := (fe/m.g1)*m.gFA + (q%per)/m.k
			rt.dBits[fe*w+a/64] |= 1 << (a % 64)
		}
	}
	copy(rt.tBits, rt.dBits)
	if c.NStages() == 2 {
		clear(rt.rBits)
		for q := range rt.f2.e {
			u := q / c.FEs
			if rt.f2.e[q].valid && rt.fe2Up[u] {
				for x := 0; x < w; x++ {
					rt.rBits[u*w+x] |= rt.f2.bits[q*w+x]
				}
			}
		}
		for q := range rt.up.e {
			fe := q / c.FE2s
			if rt.up.e[q].valid {
				for x := 0; x < w; x++ {
					rt.tBits[fe*w+x] |= rt.up.bits[q*w+x]
				}
			}
		}
		nFA := c.FAs * c.LinksPerFA
		for q := range rt.up.e { // FE q/FE2s hears FE2 u
			u := q % c.FE2s
			ok := rt.fe2Up[u] && rt.linkUp[nFA+q]
			rt.up.e[q].havePend, rt.up.e[q].pOK = true, ok
			copy(rt.up.pend[q*w:(q+1)*w], rt.rBits[u*w:(u+1)*w])
		}
		for q := range rt.f2.e { // FE2 u hears FE fe
			u, fe := q/c.FEs, q%c.FEs
			ok := rt.feUp[fe] && rt.linkUp[nFA+fe*c.FE2s+u]
			rt.f2.e[q].havePend, rt.f2.e[q].pOK = true, ok
			copy(rt.f2.pend[q*w:(q+1)*w], rt.dBits[fe*w:(fe+1)*w])
		}
	}
	for li := range rt.fa.e { // FA hears its FE
		fe := m.faLinkFE(li/c.LinksPerFA, li%c.LinksPerFA)
		rt.fa.e[li].havePend, rt.fa.e[li].pOK = true, rt.feUp[fe] && rt.linkUp[li]
		rt.fa.e[li].pErr = m.errs != nil && m.errored(li)
		copy(rt.fa.pend[li*w:(li+1)*w], rt.tBits[fe*w:(fe+1)*w])
	}
	for q := range rt.dn.e { // FE hears an FA (FAs do not fail)
		rt.dn.e[q].havePend, rt.dn.e[q].pOK = true, rt.linkUp[m.dnLink(q)]
		rt.dn.e[q].pErr = m.errs != nil && m.errored(m.dnLink(q))
	}
}

// receive applies the cells in flight: th good ones make a link valid,
// th missed ones invalid (App. E, §5.9).
func (m *Model) receive() {
	rt, th := &m.rt, m.c.ReachTh
	w := rt.words
	for _, r := range []*reachEnds{&rt.fa, &rt.dn, &rt.up, &rt.f2} {
		ww := w
		if r == &rt.dn {
			ww = 0
		}
		for i := range r.e {
			e := &r.e[i]
			if !e.havePend {
				continue
			}
			e.havePend = false
			if e.pErr {
				e.pErr, e.good, e.missed, e.valid = false, 0, th, false
				continue
			}
			if e.pOK {
				e.good++
				e.missed = 0
				copy(r.bits[i*ww:(i+1)*ww], r.pend[i*ww:(i+1)*ww])
				if e.good >= th {
					e.valid = true
				}
			} else {
				e.missed++
				e.good = 0
				if e.missed >= th {
					e.valid = false
				}
			}
		}
	}
}

// reachStep sends a round of reachability cells every ReachPeriodSlots
// and applies them a link's delay later (the period exceeds it: New).
func (m *Model) reachStep() {
	rt := &m.rt
	if m.now%int64(m.c.ReachPeriodSlots) == 0 {
		m.advertise()
		rt.sentAt = m.now
	}
	if rt.sentAt >= 0 && m.now == rt.sentAt+int64(m.prop)+1 {
		m.receive()
	}
}

func (m *Model) faLinkFE(fa, j int) int { return (fa/m.gFA)*m.g1 + j%m.g1 }

// dnLink is the link number of last-stage queue q.
func (m *Model) dnLink(q int) int {
	per := m.gFA * m.k
	fe, la, i := q/per, (q%per)/m.k, q%m.k
	a := (fe/m.g1)*m.gFA + la
	return a*m.c.LinksPerFA + i*m.g1 + fe%m.g1
}

func (m *Model) faReaches(fa, j, d int) bool {
	li := fa*m.c.LinksPerFA + j
	return !m.rt.on || (m.rt.fa.e[li].valid && has(m.rt.fa.bits, li, m.rt.words, d))
}

// pick takes the sprayer's next link that ok accepts. Two rounds of draws
// cover every link at least once, even when a new permutation starts
// midway.
func (m *Model) pick(sp *sprayer, ok func(int) bool) (int, bool) {
	if !m.rt.on {
		return int(sp.next(m.r, m.c.RefreshRounds)), true
	}
	for range 2 * len(sp.perm) {
		if l := int(sp.next(m.r, m.c.RefreshRounds)); ok(l) {
			return l, true
		}
	}
	return 0, false
}

func (m *Model) enqueue(q *cellq, x cell) {
	c := m.c
	if q.len() >= c.FEQueueCells {
		m.S.CellsLost++
		return
	}
	if c.FCIThreshold > 0 && q.len() >= c.FCIThreshold {
		x.fci = true
	}
	q.push(x)
}

// toDown queues a cell at its last-stage FE on a link to its destination.
func (m *Model) toDown(x cell) {
	fe := int(x.fe)
	if !m.rt.feUp[fe] {
		m.S.CellsLostFailed++
		return
	}
	la := int(x.dstFA) % m.gFA
	base := fe*m.gFA*m.k + la*m.k
	i, ok := m.pick(&m.dnSpr[fe*m.gFA+la], func(i int) bool { return !m.rt.on || m.rt.dn.e[base+i].valid })
	if !ok {
		m.S.CellsNoRoute++
		return
	}
	m.enqueue(&m.dnq[base+i], x)
}

// toUp queues a cell at its first-tier FE on a link to a second-tier FE
// that reaches its destination.
func (m *Model) toUp(x cell) {
	fe, d, c := int(x.fe), int(x.dstFA), m.c
	if !m.rt.feUp[fe] {
		m.S.CellsLostFailed++
		return
	}
	u, ok := m.pick(&m.upSpr[fe], func(u int) bool {
		q := fe*c.FE2s + u
		return !m.rt.on || (m.rt.up.e[q].valid && has(m.rt.up.bits, q, m.rt.words, d))
	})
	if !ok {
		m.S.CellsNoRoute++
		return
	}
	m.enqueue(&m.upq[fe*c.FE2s+u], x)
}

// toF2 queues a cell at a second-tier FE on a link to a first-tier FE of
// the destination's group that reaches it.
func (m *Model) toF2(x cell) {
	u, d, c := int(x.fe), int(x.dstFA), m.c
	if !m.rt.fe2Up[u] {
		m.S.CellsLostFailed++
		return
	}
	g := d / m.gFA
	i, ok := m.pick(&m.f2Spr[u*c.NGroups()+g], func(i int) bool {
		q := u*c.FEs + g*m.g1 + i
		return !m.rt.on || (m.rt.f2.e[q].valid && has(m.rt.f2.bits, q, m.rt.words, d))
	})
	if !ok {
		m.S.CellsNoRoute++
		return
	}
	m.enqueue(&m.f2q[u*c.FEs+g*m.g1+i], x)
}

// cellq is an FE output queue: the cells from h on wait, in order. A pop
// moves the head on; what is left moves down to the array's front only
// when the array is full and at least half of it has left (each cell
// moved paid for by one popped), not at every pop: moving the queue down a
// cell at each pop was 13% of BenchmarkPaperCells' CPU, a copy of the
// whole queue per cell sent.
type cellq struct {
	c []cell
	h int
}

func (q *cellq) len() int { return len(q.c) - q.h }

func (q *cellq) push(x cell) {
	if len(q.c) == cap(q.c) && q.h > 0 && q.h >= len(q.c)-q.h {
		q.c, q.h = q.c[:copy(q.c, q.c[q.h:])], 0
	}
	q.c = append(q.c, x)
}

// pop takes the head cell; the queue must not be empty.
func (q *cellq) pop() cell {
	x := q.c[q.h]
	if q.h++; q.h == len(q.c) {
		q.c, q.h = q.c[:0], 0
	}
	return x
}

// drop empties the queue and says how many cells it held.
func (q *cellq) drop() int {
	n := q.len()
	q.c, q.h = q.c[:0], 0
	return n
}

// feStep moves the cells reaching FEs this slot into output queues, then
// sends one cell from every non-empty output queue.
func (m *Model) feStep() {
	c := m.c
	cur := int(m.now % int64(len(m.feIn)))
	out := int((m.now + int64(m.prop) + 1) % int64(len(m.feIn)))
	if c.NStages() == 2 {
		for _, x := range m.dnIn[cur] {
			m.toDown(x)
		}
		m.dnIn[cur] = m.dnIn[cur][:0]
		for _, x := range m.f2In[cur] {
			m.toF2(x)
		}
		m.f2In[cur] = m.f2In[cur][:0]
		for _, x := range m.feIn[cur] {
			m.toUp(x)
		}
	} else {
		for _, x := range m.feIn[cur] {
			m.toDown(x)
		}
	}
	m.feIn[cur] = m.feIn[cur][:0]
	for q := range m.dnq {
		n := m.dnq[q].len()
		m.S.QueueHist[n]++
		if n == 0 {
			continue
		}
		m.S.FELinkBusy++
		x := m.dnq[q].pop()
		li := m.dnLink(q)
		if !m.rt.linkUp[li] {
			m.S.CellsLostFailed++
			continue
		}
		if m.corrupts(li) {
			continue
		}
		x.link = int32(li)
		m.faIn[out] = append(m.faIn[out], x)
	}
	if c.NStages() == 1 {
		return
	}
	nFA := c.FAs * c.LinksPerFA
	for q := range m.f2q {
		if m.f2q[q].len() == 0 {
			continue
		}
		x := m.f2q[q].pop()
		u, fe := q/c.FEs, q%c.FEs
		li := nFA + fe*c.FE2s + u
		if !m.rt.linkUp[li] {
			m.S.CellsLostFailed++
			continue
		}
		x.fe, x.link = int32(fe), int32(li)
		m.dnIn[out] = append(m.dnIn[out], x)
	}
	for q := range m.upq {
		if m.upq[q].len() == 0 {
			continue
		}
		x := m.upq[q].pop()
		li := nFA + q
		if !m.rt.linkUp[li] {
			m.S.CellsLostFailed++
			continue
		}
		x.fe, x.link = int32(q%c.FE2s), int32(li)
		m.f2In[out] = append(m.f2In[out], x)
	}
}

// FALink is the number of FA fa's fabric link j, for SetLink.
func (m *Model) FALink(fa, j int) int { return fa*m.c.LinksPerFA + j }

// FELink is the number of the link from first-tier FE fe to second-tier
// FE u (two stages), for SetLink.
func (m *Model) FELink(fe, u int) int { return m.c.FAs*m.c.LinksPerFA + fe*m.c.FE2s + u }

// LinkFE is the first-tier FE at the far end of FA fa's link j.
func (m *Model) LinkFE(fa, j int) int { return m.faLinkFE(fa, j) }

// SetLink fails (up false) or restores a link, both directions: a cell
// sent on a failed link is lost, and its reachability cells stop.
func (m *Model) SetLink(link int, up bool) error {
	if link < 0 || link >= len(m.rt.linkUp) {
		return fmt.Errorf("link %d: the fabric has links 0..%d", link, len(m.rt.linkUp)-1)
	}
	m.rt.linkUp[link] = up
	return nil
}

// SetFE fails or restores a first-tier FE (tier 1) or a second-tier FE
// (tier 2). A failed FE loses what it holds and what reaches it, and
// sends no reachability cells (§5.10).
func (m *Model) SetFE(tier, fe int, up bool) error {
	var st []bool
	var qs [][]cellq // the FE's output queues, as ranges of the model's
	switch {
	case tier == 1 && fe >= 0 && fe < m.c.FEs:
		st = m.rt.feUp
		per := m.gFA * m.k
		qs = append(qs, m.dnq[fe*per:(fe+1)*per])
		if m.c.NStages() == 2 {
			qs = append(qs, m.upq[fe*m.c.FE2s:(fe+1)*m.c.FE2s])
		}
	case tier == 2 && m.c.NStages() == 2 && fe >= 0 && fe < m.c.FE2s:
		st = m.rt.fe2Up
		qs = append(qs, m.f2q[fe*m.c.FEs:(fe+1)*m.c.FEs])
	default:
		return fmt.Errorf("FE %d of tier %d: no such FE (%d tiers, %d first-tier, %d second-tier FEs)", fe, tier, m.c.NStages(), m.c.FEs, m.c.FE2s)
	}
	if !up {
		for _, r := range qs {
			for i := range r {
				m.S.CellsLostFailed += int64(r[i].drop())
			}
		}
	}
	st[fe] = up
	return nil
}

// FAReaches says whether FA fa's table lets it send cells for FA d on its
// link j (always, without reachability cells).
func (m *Model) FAReaches(fa, j, d int) bool { return m.faReaches(fa, j, d) }

// Now is the current slot.
func (m *Model) Now() int64 { return m.now }
