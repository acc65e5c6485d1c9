package stardustmodel

import (
	"fmt"
	"math"
	"math/rand/v2"

	"testbed/simlab/internal/fifo"
)

// PackedCells is how many cells a burst of packets (their sizes in bytes)
// takes when the burst is chopped as one unit, so a cell may hold the
// tail of one packet and the head of the next (§3.4, Fig. 4).
func PackedCells(sizes []int, cellBytes int) int {
	total := 0
	for _, s := range sizes {
		total += s
	}
	return (total + cellBytes - 1) / cellBytes
}

// UnpackedCells is how many cells the same packets take when each packet
// is chopped on its own (the "non-packed cells" of §6.1.1).
func UnpackedCells(sizes []int, cellBytes int) int {
	n := 0
	for _, s := range sizes {
		n += (s + cellBytes - 1) / cellBytes
	}
	return n
}

type cell struct {
	srcFA, dstFA int32
	fe           int32 // the FE (of the tier it is heading to) it reaches next
	link         int32 // the physical link it is on (reach.go numbers them)
	port         int32 // global destination port
	prio         int8
	bytes        int32
	sent         int64 // slot it left the source FA
	fci          bool
}

type voq struct {
	pkts     []int32 // sizes, FIFO
	pktsArr  []int32 // the array pkts is the tail of (fifo.RoomFor)
	bytes    int64
	balance  int64 // credit bytes not yet spent; negative is surplus sent (§3.3)
	inflight int   // credits granted and on their way
	waiting  bool  // in its scheduler's request list
}

// sched is a destination port's egress credit scheduler (§4.1).
type sched struct {
	tokens   float64   // bytes' worth of credit accrued
	factor   float64   // FCI throttle, 1 is full rate
	lastCut  int64     // slot of the last FCI cut
	fciCells int64     // proportional law: marked cells not yet worth a credit
	lists    [][]int32 // per priority: source FAs whose VOQ requests, round robin order
	egress   float64   // egress buffer bytes
	credits  int64
}

// sprayer hands out links in a random permutation, replaced every
// RefreshRounds rounds (§5.3).
type sprayer struct {
	perm   []int32
	pos    int
	rounds int
}

func (s *sprayer) next(r *rand.Rand, refresh int) int32 {
	if s.pos == len(s.perm) {
		s.pos = 0
		s.rounds++
		if refresh > 0 && s.rounds%refresh == 0 {
			r.Shuffle(len(s.perm), func(i, j int) { s.perm[i], s.perm[j] = s.perm[j], s.perm[i] })
		}
	}
	l := s.perm[s.pos]
	s.pos++
	return l
}

func newSprayer(r *rand.Rand, n int) sprayer {
	s := sprayer{perm: make([]int32, n)}
	for i := range s.perm {
		s.perm[i] = int32(i)
	}
	r.Shuffle(n, func(i, j int) { s.perm[i], s.perm[j] = s.perm[j], s.perm[i] })
	return s
}

type creditEv struct{ srcFA, voq int32 }

// Model is one fabric in motion.
type Model struct {
	c Config
	r *rand.Rand

	prop      int     // propagation delay in slots
	hops      int     // fabric links from FA to FA: 2 or 4
	creditLat int     // a credit's way back to the source FA, in slots
	portBytes float64 // bytes a port drains per slot
	creditPer float64 // credit bytes a scheduler accrues per slot at full rate
	prop1     bool    // the proportional FCI law (Config.FCIReaction)
	perCredit int64   // its marked cells per cancelled credit
	arrRate   float64 // packet arrivals per slot per FA
	nextArr   []float64

	// topology (reach.go): g1 first-tier FEs and gFA FAs per group, k
	// parallel links from a first-tier FE to each FA of its group.
	g1, gFA, k int

	voqs   [][]voq  // [fa][(port*Priorities)+prio]
	scheds []sched  // [global port]
	faq    [][]cell // [fa]: the cells from faHead[fa] on wait, in order
	faHead []int
	faSpr  []sprayer // [fa]
	dnSpr  []sprayer // [fe*gFA+local dstFA], over the k links
	upSpr  []sprayer // [fe], over the FE2s (two stages)
	f2Spr  []sprayer // [fe2*Groups+group], over the group's g1 FEs
	dnq    []cellq   // last stage: [fe*gFA*k + local dstFA*k + i]
	upq    []cellq   // [fe*FE2s + fe2]
	f2q    []cellq   // [fe2*FEs + fe]

	feIn   [][]cell // calendar: cells reaching a first-tier FE from an FA
	f2In   [][]cell // calendar: cells reaching a second-tier FE
	dnIn   [][]cell // calendar: cells reaching a first-tier FE from an FE2
	faIn   [][]cell // calendar: cells reaching their destination FA
	credIn [][]creditEv
	now    int64

	rt reach

	flows *flowTable // flows.go: nil unless AddFlow was called
	errs  *linkErrs  // errors.go: nil unless SetLinkErrorRate was called

	S Stats
}

// New builds the fabric. r drives every random choice.
func New(c Config, r *rand.Rand) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	slot := c.SlotSeconds()
	m := &Model{c: c, r: r}
	m.prop = int(math.Ceil(c.PropDelay.Seconds() / slot))
	if c.ReachPeriodSlots > 0 && c.ReachPeriodSlots <= m.prop+1 {
		return nil, fmt.Errorf("ReachPeriodSlots %d: a reachability period must exceed a link's delay of %d slots", c.ReachPeriodSlots, m.prop+1)
	}
	m.hops = 2 * c.NStages()
	// A credit crosses the fabric (egress FA to source FA) on the control
	// crossbar (§4.2), so it sees the data path's propagation delays.
	m.creditLat = m.hops * (m.prop + 1)
	m.portBytes = c.PortBps * slot / 8
	m.creditPer = c.CreditRateBps() * slot / 8
	m.prop1, m.perCredit = c.Reaction() == FCIProportional, int64(c.CreditCells())
	m.arrRate = c.Load * c.PortBps * float64(c.PortsPerFA) * slot / 8 / float64(c.PacketBytes)
	m.g1, m.gFA = c.FEs/c.NGroups(), c.FAs/c.NGroups()
	m.k = c.LinksPerFA / m.g1
	ports := c.FAs * c.PortsPerFA
	m.voqs = make([][]voq, c.FAs)
	m.faq = make([][]cell, c.FAs)
	m.faHead = make([]int, c.FAs)
	m.faSpr = make([]sprayer, c.FAs)
	m.nextArr = make([]float64, c.FAs)
	for fa := range m.voqs {
		m.voqs[fa] = make([]voq, ports*c.Priorities)
		m.faSpr[fa] = newSprayer(r, c.LinksPerFA)
		m.nextArr[fa] = m.gap()
	}
	m.scheds = make([]sched, ports)
	for g := range m.scheds {
		m.scheds[g] = sched{factor: 1, lastCut: -1 << 40, lists: make([][]int32, c.Priorities)}
	}
	m.dnSpr = make([]sprayer, c.FEs*m.gFA)
	for i := range m.dnSpr {
		m.dnSpr[i] = newSprayer(r, m.k)
	}
	m.dnq = make([]cellq, c.FEs*m.gFA*m.k)
	if c.NStages() == 2 {
		m.upSpr = make([]sprayer, c.FEs)
		for i := range m.upSpr {
			m.upSpr[i] = newSprayer(r, c.FE2s)
		}
		m.f2Spr = make([]sprayer, c.FE2s*c.NGroups())
		for i := range m.f2Spr {
			m.f2Spr[i] = newSprayer(r, m.g1)
		}
		m.upq = make([]cellq, c.FEs*c.FE2s)
		m.f2q = make([]cellq, c.FE2s*c.FEs)
	}
	n := m.prop + 2
	m.feIn = make([][]cell, n)
	m.f2In = make([][]cell, n)
	m.dnIn = make([][]cell, n)
	m.faIn = make([][]cell, n)
	m.credIn = make([][]creditEv, m.creditLat+1)
	m.initReach()
	m.S = Stats{
		SlotSeconds: slot, QueueHist: make([]int64, c.FEQueueCells+1),
		UplinkCells: make([]int64, c.FAs*c.LinksPerFA), FELinks: len(m.dnq),
		UplinkDst: make([]int64, c.FAs*c.LinksPerFA*c.FAs),
		PortBytes: make([]int64, ports), PortCredits: make([]int64, ports),
		PortFCICells: make([]int64, ports), PortFCICancelled: make([]int64, ports),
		PrioOffered: make([]int64, c.Priorities), PrioArrived: make([]int64, c.Priorities),
	}
	return m, nil
}

func (m *Model) gap() float64 {
	if m.arrRate <= 0 {
		return math.Inf(1)
	}
	return m.r.ExpFloat64() / m.arrRate
}

// Run advances the fabric by n slots.
func (m *Model) Run(n int64) {
	for end := m.now + n; m.now < end; m.now++ {
		m.step()
	}
	m.S.Slots = m.now
}

func (m *Model) step() {
	c := m.c
	// 1. cells reach their destination FA: egress buffer, latency, FCI.
	slotIn := int(m.now % int64(len(m.faIn)))
	for _, x := range m.faIn[slotIn] {
		m.S.CellsArrived++
		m.S.BytesArrived += int64(x.bytes)
		lat := m.now - x.sent
		for int64(len(m.S.LatencyHist)) <= lat {
			m.S.LatencyHist = append(m.S.LatencyHist, 0)
		}
		m.S.LatencyHist[lat]++
		s := &m.scheds[x.port]
		s.egress += float64(x.bytes)
		m.S.PortBytes[x.port] += int64(x.bytes)
		m.S.PrioArrived[x.prio] += int64(x.bytes)
		if m.flows != nil {
			m.flowArrived(x)
		}
		if x.fci {
			m.S.FCICells++
			m.S.PortFCICells[x.port]++
			if m.prop1 {
				// The programs' law: counted here, spent where the
				// scheduler next issues a credit (step 5).
				s.fciCells++
				continue
			}
			// One cut per control round trip: cells marked before the
			// last cut could take effect say nothing new.
			if m.now-s.lastCut > int64(m.creditLat+m.hops*m.prop) {
				s.factor *= 1 - c.FCIDecrease
				s.lastCut = m.now
			}
		}
	}
	m.faIn[slotIn] = m.faIn[slotIn][:0]

	// 2. FEs: arrivals join the output queue chosen by spraying among the
	// links their table says reach the destination FA (reach.go); each
	// output link sends one cell.
	m.feStep()

	// 3. credits reach their VOQ: it dequeues packets up to the credit,
	// keeping the surplus for later (§3.3), and packs them into cells as
	// one burst (§3.4).
	cs := int(m.now % int64(len(m.credIn)))
	for _, e := range m.credIn[cs] {
		m.useCredit(int(e.srcFA), int(e.voq))
	}
	m.credIn[cs] = m.credIn[cs][:0]

	// 4. packets arrive from the hosts into VOQs.
	for fa := range m.nextArr {
		for m.nextArr[fa] < 1 {
			m.arrive(fa)
			m.nextArr[fa] += m.gap()
		}
		m.nextArr[fa]--
	}

	// 5. egress schedulers grant credits at the credit rate, strict
	// priority then round robin over requesting VOQs, unless the egress
	// buffer is close to full (§4.1). Egress ports drain at port rate.
	back := int((m.now + int64(m.creditLat)) % int64(len(m.credIn)))
	for g := range m.scheds {
		s := &m.scheds[g]
		if s.factor < 1 {
			s.factor = math.Min(1, s.factor+1/float64(max(c.FCIRecoverSlots, 1)))
		}
		s.egress = math.Max(0, s.egress-m.portBytes)
		if s.egress > float64(c.EgressStopBytes) {
			continue // stopped: no credit accrues until the port drains
		}
		s.tokens += m.creditPer * s.factor
		busy := false
		for _, l := range s.lists {
			busy = busy || len(l) > 0
		}
		if !busy && s.tokens > float64(c.CreditBytes) {
			s.tokens = float64(c.CreditBytes)
		}
		for s.tokens >= float64(c.CreditBytes) {
			if s.fciCells >= m.perCredit {
				// Proportional law: a credit's worth of marked cells
				// cancels the credit due now, as stardust_fa.p4 cancels
				// the port's next generated credit (reg_fci).
				s.fciCells -= m.perCredit
				s.tokens -= float64(c.CreditBytes)
				m.S.FCICancelled++
				m.S.PortFCICancelled[g]++
				continue
			}
			p := 0
			for p < len(s.lists) && len(s.lists[p]) == 0 {
				p++
			}
			if p == len(s.lists) {
				break
			}
			src := s.lists[p][0]
			s.lists[p] = s.lists[p][1:]
			vi := g*c.Priorities + p
			v := &m.voqs[src][vi]
			v.inflight++
			v.waiting = false
			s.tokens -= float64(c.CreditBytes)
			s.credits++
			m.S.Credits++
			m.S.PortCredits[g]++
			m.credIn[back] = append(m.credIn[back], creditEv{src, int32(vi)})
			m.request(int(src), vi)
		}
	}

	// 6. each FA sends up to one cell per fabric link, the links taken in
	// the order of the FA's current random permutation (§3.2, §5.3),
	// skipping links its table says do not reach the cell's destination.
	feArr := int((m.now + int64(m.prop) + 1) % int64(len(m.feIn)))
	for fa := range m.faq {
		q := m.faq[fa][m.faHead[fa]:]
		n := min(len(q), c.LinksPerFA)
		sent := 0
		for _, x := range q[:n] {
			j, ok := m.pick(&m.faSpr[fa], func(j int) bool { return m.faReaches(fa, j, int(x.dstFA)) })
			if !ok {
				break // no link reaches it: the cell and those behind it wait
			}
			sent++
			li := fa*c.LinksPerFA + j
			m.S.UplinkCells[li]++
			m.S.UplinkDst[li*c.FAs+int(x.dstFA)]++
			m.S.CellsSent++
			x.sent = m.now
			x.fe = int32(m.faLinkFE(fa, j))
			x.link = int32(li)
			if !m.rt.linkUp[li] {
				m.S.CellsLostFailed++
				continue
			}
			if m.corrupts(li) {
				continue
			}
			m.feIn[feArr] = append(m.feIn[feArr], x)
		}
		// The queue's head moves on. What is left moves down to the
		// array's front once it is no longer than what has left (each
		// cell sent pays for one moved), not every slot: that copy was
		// 70% of a permutation run's CPU, its queues a flow's backlog.
		if h := m.faHead[fa] + sent; h > len(m.faq[fa])-h {
			m.faq[fa] = m.faq[fa][:copy(m.faq[fa], m.faq[fa][h:])]
			m.faHead[fa] = 0
		} else {
			m.faHead[fa] = h
		}
	}
	if m.c.ReachPeriodSlots > 0 {
		m.reachStep()
	}
}

func (m *Model) arrive(fa int) {
	c := m.c
	dstFA := m.r.IntN(c.FAs - 1)
	if dstFA >= fa {
		dstFA++
	}
	g := dstFA*c.PortsPerFA + m.r.IntN(c.PortsPerFA)
	p := 0
	if c.Priorities > 1 && m.r.Float64() >= c.HighShare {
		p = c.Priorities - 1
	}
	vi := g*c.Priorities + p
	v := &m.voqs[fa][vi]
	v.pkts = append(fifo.RoomFor(v.pkts, &v.pktsArr, 16), int32(c.PacketBytes))
	v.bytes += int64(c.PacketBytes)
	m.S.BytesOffered += int64(c.PacketBytes)
	m.S.PrioOffered[p] += int64(c.PacketBytes)
	m.request(fa, vi)
}

// request puts a VOQ in its scheduler's list if the data it holds is not
// already covered by its credit balance and the credits on their way.
func (m *Model) request(fa, vi int) {
	v := &m.voqs[fa][vi]
	if v.waiting || v.bytes-v.balance-int64(v.inflight*m.c.CreditBytes) <= 0 {
		return
	}
	g, p := vi/m.c.Priorities, vi%m.c.Priorities
	s := &m.scheds[g]
	s.lists[p] = append(s.lists[p], int32(fa))
	v.waiting = true
}

func (m *Model) useCredit(fa, vi int) {
	c := m.c
	v := &m.voqs[fa][vi]
	v.inflight--
	v.balance += int64(c.CreditBytes)
	g, prio := vi/c.Priorities, vi%c.Priorities
	dstFA := g / c.PortsPerFA
	burst := int64(0)
	for v.balance > 0 && len(v.pkts) > 0 {
		s := int64(v.pkts[0])
		v.pkts = v.pkts[1:]
		v.bytes -= s
		v.balance -= s
		burst += s
		m.S.Packets++
	}
	if burst > 0 {
		m.S.Bursts++
		m.S.BurstBytes += burst
	}
	if len(v.pkts) == 0 && v.balance > 0 {
		v.balance = 0 // an empty VOQ keeps no credit
	}
	for burst > 0 {
		b := min(burst, int64(c.CellBytes))
		burst -= b
		m.faq[fa] = append(m.faq[fa], cell{srcFA: int32(fa), dstFA: int32(dstFA), port: int32(g), prio: int8(prio), bytes: int32(b)})
	}
	m.request(fa, vi)
}
