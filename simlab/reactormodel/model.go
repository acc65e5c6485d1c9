package reactormodel

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"testbed/internal/sched"
)

// never is a time no run reaches.
const never = time.Duration(math.MaxInt64)

// route is where a class's traffic goes at a given moment.
type route int

const (
	routeNone    route = iota // paused: nothing leaves the host
	routeCircuit              // over the lit circuit to the destination
	routeEPS                  // to the packet switch
	routeShunt                // unpaused for a circuit that is dark: the classifier sends it to the EPS
)

// stream is one unit of fluid: the data of a flow, or the ACKs its receiver
// returns.
type stream struct {
	f      *flowState
	ack    bool
	qp     bool    // queued in its host's EPS class
	to     int     // destination port
	q      float64 // bytes queued at the host
	rate   float64 // paced arrival rate during this step, bytes/ns
	tmp    float64
	epsq   float64 // bytes queued at the EPS output to port to
	epsArr float64 // bytes that reached the EPS during this step
}

// Counters are a flow's cumulative byte counts (wire bytes).
type Counters struct {
	// Offered is what a paced flow's application offered.
	Offered float64
	// Written is what a bulk flow's application wrote (as its window
	// allowed).
	Written float64
	// Delivered is what reached the destination host, ViaCircuit of it
	// over circuits and ViaEPS of it through the packet switch.
	Delivered, ViaCircuit, ViaEPS float64
	// Shunted is what left the host for a circuit that was dark and went
	// to the EPS instead.
	Shunted float64
	// Dropped is what the EPS dropped (a bulk flow sends it again).
	Dropped float64
	// Acks is the ACK bytes that came back to a bulk flow's sender.
	Acks float64
}

func (c Counters) sub(o Counters) Counters {
	return Counters{c.Offered - o.Offered, c.Written - o.Written, c.Delivered - o.Delivered, c.ViaCircuit - o.ViaCircuit,
		c.ViaEPS - o.ViaEPS, c.Shunted - o.Shunted, c.Dropped - o.Dropped, c.Acks - o.Acks}
}

type flowState struct {
	Flow
	data, ack  *stream
	rate       float64 // paced rate, bytes/ns
	payload    float64 // goodput per wire byte
	unacked    float64 // bulk: bytes sent and not yet acknowledged
	ackPending float64 // ACK bytes generated this step, queued at its end
	c, mark    Counters
}

func (f *flowState) activeAt(t time.Duration) bool {
	return t >= f.Start && (f.Stop == 0 || t < f.Stop)
}

// window is one circuit assignment of a class: the interval between the
// unpause and the pause taking effect, and the light of its slot.
type window struct {
	open, close    time.Duration
	litFrom, litTo time.Duration
	limit          float64 // circuit rate limit, bytes/ns
	rec            int     // index in Model.slots, or -1
}

// class is one of a host's traffic classes: one per destination, and the
// dedicated EPS class.
type class struct {
	host, dst int // dst is -1 for the EPS class
	streams   []*stream
	windows   []window
	eps       bool // mapped to the EPS in the current period
	// The class sends to the EPS during [epsOpen, epsClose).
	epsOpen, epsClose time.Duration
	epsCap            float64 // per-class rate limit towards the EPS, bytes/ns
	arr               float64 // paced arrival rate, this step
	epsRate           float64 // its share of the host's EPS rate, this step
	want              float64 // scratch for the water-filling
}

type host struct {
	classes []*class // by destination; the EPS class last
	active  []*class // classes that hold streams
	scratch []*class
}

type port struct {
	streams           []*stream // streams addressed to this port
	ocsBytes, ocsTime float64   // circuit traffic into the port this step
	epsArr            float64
	qpCum             float64 // EPS-class bytes delivered here, cumulative
	qpMark            float64 // qpCum at the last decision
}

type slotTime struct {
	start, litAt, budgetEnd, end, gap time.Duration
	lit                               int // inputs with a circuit
}

// plan is one period: its schedule, timing and rate limits.
type plan struct {
	period     int64
	start, end time.Duration
	decideAt   time.Duration
	decidedAt  time.Duration
	s          sched.Schedule
	slots      []slotTime
	lit        [][]bool
	limit      []float64 // circuit rate limit into each port, bytes/ns
	marks      []time.Duration
}

// Model is a hybrid ToR with its hosts, OCS and controller, run in
// simulated time. It is not safe for concurrent use.
type Model struct {
	p     Params
	n     int
	link  float64 // bytes/ns
	eps   float64 // bytes/ns
	ackR  float64
	hosts []*host
	ports []*port
	flows []*flowState
	bulk  []*flowState
	fev   []time.Duration // flow start and stop times
	fevI  int

	now            time.Duration
	cur, next      *plan
	decided        bool
	markI, slotI   int
	lastDecision   time.Duration
	rngGap, rngPFC *rand.Rand
	scheduler      Scheduler

	slots   []SlotRecord
	periods []PeriodRecord
	nights  []Night

	usable, usableMark float64 // port-time open to circuit traffic, ns
	markAt             time.Duration
	markSlots          int
	markPeriods        int
	markNights         int
}

// New builds a model of p carrying flows, with the schedule of its first
// period computed from the demand at time 0.
func New(p Params, flows []Flow) (*Model, error) {
	hasBulk := false
	for _, f := range flows {
		hasBulk = hasBulk || f.Kind == Bulk
	}
	p.fill(hasBulk)
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("reactor model: %w", err)
	}
	for i, f := range flows {
		if err := f.validate(p.Hosts, p.EPSRate); err != nil {
			return nil, fmt.Errorf("reactor model: flow %d: %w", i, err)
		}
	}
	n := p.Hosts
	m := &Model{
		p: p, n: n,
		link:   p.LinkRate / 8e9,
		eps:    p.EPSRate / 8e9,
		ackR:   p.Framing.ackRatio(),
		rngGap: rand.New(rand.NewPCG(p.Seed, 0x6e69676874)), // "night"
		rngPFC: rand.New(rand.NewPCG(p.Seed, 0x706663)),     // "pfc"
	}
	m.scheduler = p.Scheduler
	if m.scheduler == nil {
		m.scheduler = &solstice{frame: int64(p.Framing.MTU + p.Framing.L2Overhead)}
	}
	m.hosts = make([]*host, n)
	m.ports = make([]*port, n)
	for i := range n {
		h := &host{classes: make([]*class, n+1)}
		for j := range n + 1 {
			c := &class{host: i, dst: j, epsOpen: never, epsClose: never, epsCap: math.Inf(1)}
			if j == n {
				c.dst, c.eps, c.epsOpen = -1, true, 0
			}
			h.classes[j] = c
		}
		m.hosts[i] = h
		m.ports[i] = &port{}
	}
	add := func(s *stream, h, cl int) {
		c := m.hosts[h].classes[cl]
		c.streams = append(c.streams, s)
	}
	for _, f := range flows {
		fs := &flowState{Flow: f, payload: p.Framing.payload(f.Kind)}
		if f.Kind == Paced {
			fs.rate = f.Rate / 8e9
		} else if fs.Window == 0 {
			fs.Window = DefaultWindow
		}
		fs.data = &stream{f: fs, to: f.Dst, qp: f.EPS}
		cl := f.Dst
		if f.EPS {
			cl = n
		}
		add(fs.data, f.Src, cl)
		m.flows = append(m.flows, fs)
		if f.Kind == Bulk {
			fs.ack = &stream{f: fs, ack: true, qp: true, to: f.Src}
			add(fs.ack, f.Dst, n)
			m.bulk = append(m.bulk, fs)
		}
		m.fev = append(m.fev, f.Start)
		if f.Stop != 0 {
			m.fev = append(m.fev, f.Stop)
		}
	}
	slices.Sort(m.fev)
	m.fev = slices.Compact(m.fev)
	for _, h := range m.hosts {
		for _, c := range h.classes {
			if len(c.streams) > 0 {
				h.active = append(h.active, c)
			}
		}
	}
	// Streams by destination port, data before ACKs, in flow order.
	for _, f := range m.flows {
		m.ports[f.Dst].streams = append(m.ports[f.Dst].streams, f.data)
	}
	for _, f := range m.bulk {
		m.ports[f.Src].streams = append(m.ports[f.Src].streams, f.ack)
	}
	if err := m.decide(0); err != nil {
		return nil, err
	}
	m.boundary()
	return m, nil
}

// Params returns the parameters in use, defaults filled in.
func (m *Model) Params() Params { return m.p }

// Now is the model's clock.
func (m *Model) Now() time.Duration { return m.now }

// Period is the number of the period in progress (the first is 0) and when
// it started.
func (m *Model) Period() (int64, time.Duration) { return m.cur.period, m.cur.start }

// Schedule is the schedule of the period in progress.
func (m *Model) Schedule() sched.Schedule { return m.cur.s }

// Report is host h's demand report: the bytes queued in each of its
// traffic classes, by destination, with its EPS class last (§3.1).
func (m *Model) Report(h int) []float64 {
	if h < 0 || h >= m.n {
		return nil
	}
	out := make([]float64, m.n+1)
	for j, c := range m.hosts[h].classes {
		for _, s := range c.streams {
			out[j] += s.q
		}
	}
	return out
}

// SetEPSLimit caps what host h's class for destination dst (-1: its EPS
// class) may send to the EPS, in b/s; +Inf removes the cap. The classes
// mapped to the EPS share the host's EPS rate max-min fairly under their
// caps, so the limits in force always sum to at most the EPS rate (§3.2,
// fifth class constraint).
func (m *Model) SetEPSLimit(h, dst int, bps float64) error {
	if h < 0 || h >= m.n || dst < -1 || dst >= m.n || dst == h {
		return fmt.Errorf("reactor model: no class %d of host %d", dst, h)
	}
	if !(bps >= 0) {
		return fmt.Errorf("reactor model: host %d class %d: limit %g b/s, expected >= 0", h, dst, bps)
	}
	if dst == -1 {
		dst = m.n
	}
	m.hosts[h].classes[dst].epsCap = bps / 8e9
	return nil
}

// AdvanceTo runs the model until t.
func (m *Model) AdvanceTo(t time.Duration) error {
	for m.now < t {
		if m.now >= m.cur.end {
			m.boundary()
		}
		if !m.decided && m.now >= m.cur.decideAt {
			if err := m.decide(m.now); err != nil {
				return err
			}
		}
		e := min(m.nextEvent(m.now), t)
		m.step(m.now, e)
		m.now = e
	}
	return nil
}

// RunPeriods runs to the k-th period boundary after the last one passed.
func (m *Model) RunPeriods(k int) error {
	last := m.cur.start
	if m.now >= m.cur.end {
		last = m.cur.end
	}
	return m.AdvanceTo(last + time.Duration(k)*m.p.Period)
}

func (m *Model) constraints() sched.Constraints {
	return sched.Constraints{N: m.n, Period: m.p.Period, Delta: m.p.Delta, MinSlot: m.p.MinSlot,
		LinkRate: m.p.LinkRate, EPSRate: m.p.EPSRate}
}

// demand is what the controller sees at t, in bytes per period.
func (m *Model) demand(t time.Duration) sched.Demand {
	d := sched.NewDemand(m.n)
	switch m.p.Demand {
	case Oracle:
		per := float64(m.p.Period)
		for _, f := range m.flows {
			if f.EPS || !f.activeAt(t) {
				continue
			}
			r := m.link
			if f.Kind == Paced {
				r = f.rate
			}
			d[f.Src][f.Dst] += int64(math.Round(r * per))
		}
	default:
		for _, f := range m.bulk {
			if f.activeAt(t) {
				m.topUp(f)
			}
		}
		for i, h := range m.hosts {
			for _, c := range h.active {
				if c.dst < 0 {
					continue
				}
				var q float64
				for _, s := range c.streams {
					q += s.q
				}
				d[i][c.dst] = int64(math.Round(q))
			}
		}
	}
	return d
}

// decide computes the next period's schedule and rate limits at t.
func (m *Model) decide(t time.Duration) error {
	var num int64
	start := time.Duration(0)
	if m.cur != nil {
		num, start = m.cur.period+1, m.cur.end
	}
	d := m.demand(t)
	c := m.constraints()
	s, err := m.scheduler.Schedule(num, d, c)
	if err != nil {
		return fmt.Errorf("reactor model: period %d: scheduler: %w", num, err)
	}
	if err := sched.Validate(s, c); err != nil {
		return fmt.Errorf("reactor model: period %d: schedule: %w", num, err)
	}
	pl := m.makePlan(num, start, s, d, t)
	m.next, m.decided = pl, true
	if m.cur == nil {
		return nil
	}
	// Classes that leave the EPS for a circuit are paused so that they stop
	// at the boundary (§3.2, third class constraint).
	for i, h := range m.hosts {
		for j, cl := range h.classes[:m.n] {
			if cl.eps && !m.epsMapped(pl, i, j) {
				cl.epsClose = start - m.p.PauseLead + uniform(m.rngPFC, m.p.PFC.OffMin, m.p.PFC.OffMax)
			}
		}
	}
	return nil
}

func (m *Model) epsMapped(pl *plan, i, j int) bool { return m.eps > 0 && i != j && !pl.lit[i][j] }

func (m *Model) makePlan(num int64, start time.Duration, s sched.Schedule, d sched.Demand, t time.Duration) *plan {
	n := m.n
	pl := &plan{period: num, start: start, end: start + m.p.Period, decidedAt: t, s: s}
	pl.decideAt = pl.end - m.p.ScheduleLead
	pl.lit = make([][]bool, n)
	for i := range pl.lit {
		pl.lit[i] = make([]bool, n)
	}
	at := start
	for _, sl := range s.Slots {
		gap := m.p.Gap.Draw(m.rngGap)
		st := slotTime{start: at, gap: gap, litAt: at + gap, budgetEnd: at + s.Delta, end: at + s.Delta + sl.Duration}
		for i, j := range sl.Perm {
			if j != sched.Dark {
				pl.lit[i][j] = true
				st.lit++
			}
		}
		pl.slots = append(pl.slots, st)
		pl.marks = append(pl.marks, st.start, st.budgetEnd, st.end)
		if m.p.UnpauseAtLight {
			pl.marks = append(pl.marks, st.litAt)
		}
		at = st.end
	}
	pl.marks = append(pl.marks, pl.decideAt)
	slices.Sort(pl.marks)
	pl.marks = slices.Compact(pl.marks)

	// §3.3: each circuit is rate limited to the port rate less the EPS
	// load expected at its destination port in this period: the demand
	// the schedule leaves to the EPS (fourth class constraint) plus what
	// the dedicated EPS classes delivered there over the last period.
	pl.limit = make([]float64, n)
	since := float64(t - m.lastDecision)
	per := float64(m.p.Period)
	for j := range n {
		est := 0.0
		if m.eps > 0 {
			pt := m.ports[j]
			if since > 0 {
				est = (pt.qpCum - pt.qpMark) / since
			}
			for i := range n {
				if i != j && !pl.lit[i][j] {
					est += float64(d[i][j]) / per
				}
			}
			est = min(est, m.eps)
		}
		pl.limit[j] = m.link - est
	}
	for _, pt := range m.ports {
		pt.qpMark = pt.qpCum
	}
	m.lastDecision = t
	return pl
}

// boundary starts the next period.
func (m *Model) boundary() {
	first := m.cur == nil
	pl := m.next
	m.cur, m.next, m.decided = pl, nil, false
	m.markI, m.slotI = 0, 0
	m.periods = append(m.periods, PeriodRecord{Period: pl.period, Start: pl.start, DecidedAt: pl.decidedAt, Schedule: pl.s})
	for i, h := range m.hosts {
		for j, c := range h.classes[:m.n] {
			c.windows = slices.DeleteFunc(c.windows, func(w window) bool { return w.close <= pl.start })
			mapped := m.epsMapped(pl, i, j)
			if mapped && !c.eps {
				// Unpaused towards the EPS at the boundary.
				c.epsOpen, c.epsClose = pl.start, never
				if !first {
					c.epsOpen += uniform(m.rngPFC, m.p.PFC.OnMin, m.p.PFC.OnMax)
				}
			}
			c.eps = mapped
		}
	}
	for k, st := range pl.slots {
		m.nights = append(m.nights, Night{Period: pl.period, Slot: k, Start: st.start, Gap: st.gap})
		for i, j := range pl.s.Slots[k].Perm {
			if j == sched.Dark {
				continue
			}
			unpause := st.budgetEnd - m.p.UnpauseLead
			if m.p.UnpauseAtLight {
				unpause = st.litAt
			}
			pause := st.end - m.p.PauseLead
			w := window{
				open:    unpause + uniform(m.rngPFC, m.p.PFC.OnMin, m.p.PFC.OnMax),
				close:   pause + uniform(m.rngPFC, m.p.PFC.OffMin, m.p.PFC.OffMax),
				litFrom: st.litAt, litTo: st.end,
				limit: pl.limit[j], rec: -1,
			}
			if !m.p.NoSlotRecords {
				w.rec = len(m.slots)
				m.slots = append(m.slots, SlotRecord{
					Period: pl.period, Slot: k, Src: i, Dst: j,
					Start: st.start, End: st.end, Gap: st.gap, LitAt: st.litAt,
					UnpauseSent: unpause, Open: w.open, PauseSent: pause, Close: w.close,
					RateLimit: w.limit * 8e9, FirstByte: -1, LastByte: -1,
				})
			}
			if w.close > w.open {
				c := m.hosts[i].classes[j]
				c.windows = append(c.windows, w)
			}
		}
	}
}

func (m *Model) nextEvent(t time.Duration) time.Duration {
	pl := m.cur
	e := pl.end
	for m.markI < len(pl.marks) && pl.marks[m.markI] <= t {
		m.markI++
	}
	if m.markI < len(pl.marks) {
		e = min(e, pl.marks[m.markI])
	}
	for m.fevI < len(m.fev) && m.fev[m.fevI] <= t {
		m.fevI++
	}
	if m.fevI < len(m.fev) {
		e = min(e, m.fev[m.fevI])
	}
	if m.p.MaxStep > 0 {
		e = min(e, t+m.p.MaxStep)
	}
	return e
}

func (m *Model) topUp(f *flowState) {
	if room := f.Window - f.data.q - f.unacked; room > 0 {
		f.data.q += room
		f.c.Written += room
	}
}

// step moves the fluid from t0 to t1, during which no event happens.
func (m *Model) step(t0, t1 time.Duration) {
	for _, pt := range m.ports {
		pt.ocsBytes, pt.ocsTime, pt.epsArr = 0, 0, 0
	}
	for _, h := range m.hosts {
		m.hostStep(h, t0, t1)
	}
	T := float64(t1 - t0)
	for _, pt := range m.ports {
		m.portStep(pt, T)
	}
	for _, f := range m.bulk {
		if f.ackPending > 0 {
			f.ack.q += f.ackPending
			f.ackPending = 0
		}
	}
	m.countUsable(t0, t1)
}

// countUsable adds the port-time during which circuits were open to
// traffic (from the end of the night budget, or from light with
// UnpauseAtLight, to the end of the slot).
func (m *Model) countUsable(t0, t1 time.Duration) {
	pl := m.cur
	for m.slotI < len(pl.slots) && pl.slots[m.slotI].end <= t0 {
		m.slotI++
	}
	for k := m.slotI; k < len(pl.slots) && pl.slots[k].start < t1; k++ {
		st := pl.slots[k]
		from := st.budgetEnd
		if m.p.UnpauseAtLight {
			from = st.litAt
		}
		if a, b := max(from, t0), min(st.end, t1); b > a {
			m.usable += float64(b-a) * float64(st.lit)
		}
	}
}

func (m *Model) hostStep(h *host, t0, t1 time.Duration) {
	T := float64(t1 - t0)
	for _, c := range h.active {
		c.arr = 0
		for _, s := range c.streams {
			s.rate = 0
			if s.ack || !s.f.activeAt(t0) {
				continue
			}
			if s.f.Kind == Paced {
				s.rate = s.f.rate
				c.arr += s.rate
			} else {
				m.topUp(s.f)
			}
		}
	}
	if m.eps > 0 {
		// What the host's link leaves for the EPS while a circuit class
		// sends at its limit.
		capB := m.eps * T
		h.scratch = h.scratch[:0]
		for _, c := range h.active {
			for _, w := range c.windows {
				if w.open >= t1 {
					break
				}
				if a, b := max(w.open, t0), min(w.close, t1); b > a {
					capB -= float64(b-a) * max(0, m.eps-(m.link-w.limit))
				}
			}
			if c.epsOpen < t1 && c.epsClose > t0 {
				c.want = c.arr
				for _, s := range c.streams {
					if s.q > 0 {
						c.want = math.Inf(1)
						break
					}
				}
				c.want = min(c.want, c.epsCap)
				h.scratch = append(h.scratch, c)
			}
		}
		waterfill(h.scratch, max(0, capB)/T)
	}
	for _, c := range h.active {
		m.classStep(c, t0, t1)
	}
}

// waterfill shares total among cs max-min fairly, none getting more than
// its want.
func waterfill(cs []*class, total float64) {
	slices.SortStableFunc(cs, func(a, b *class) int { return cmp.Compare(a.want, b.want) })
	left := total
	for k, c := range cs {
		c.epsRate = min(c.want, left/float64(len(cs)-k))
		left -= c.epsRate
	}
}

// classStep runs one class through [t0, t1), piece by piece as its
// circuit windows, its slot's light and its EPS mapping begin and end.
func (m *Model) classStep(c *class, t0, t1 time.Duration) {
	for len(c.windows) > 0 && c.windows[0].close <= t0 {
		c.windows = c.windows[1:]
	}
	for t := t0; t < t1; {
		next, rt, rate := t1, routeNone, 0.0
		var w *window
		for i := range c.windows {
			x := &c.windows[i]
			if x.open >= next {
				break
			}
			if x.close <= t {
				continue
			}
			if x.open > t {
				next = x.open
				break
			}
			w, rate, next = x, x.limit, min(next, x.close)
			switch {
			case t < x.litFrom:
				rt, next = routeShunt, min(next, x.litFrom)
			case t < x.litTo:
				rt, next = routeCircuit, min(next, x.litTo)
			default:
				rt = routeShunt
			}
			break
		}
		if rt == routeNone {
			switch {
			case c.epsOpen <= t && t < c.epsClose:
				rt, rate, next = routeEPS, c.epsRate, min(next, c.epsClose)
			case c.epsOpen > t:
				next = min(next, c.epsOpen)
			}
		}
		m.serve(c, t, next, rate, rt, w)
		t = next
	}
}

// serve runs class c from a to b at service rate rate (bytes/ns) towards
// rt. Over a constant rate and constant arrivals a fluid queue serves
// min(rate x T, backlog + arrivals); streams share it in proportion to
// what each has.
func (m *Model) serve(c *class, a, b time.Duration, rate float64, rt route, w *window) {
	dur := float64(b - a)
	var avail, arr float64
	for _, s := range c.streams {
		in := s.rate * dur
		s.tmp = s.q + in
		avail += s.tmp
		arr += in
		s.f.c.Offered += in
	}
	served := 0.0
	if rt != routeNone && rate > 0 && avail > 0 {
		served = min(rate*dur, avail)
	}
	if served <= 0 {
		for _, s := range c.streams {
			s.q = s.tmp
		}
		return
	}
	k := served / avail
	var payload float64
	for _, s := range c.streams {
		x := s.tmp * k
		s.q = max(0, s.tmp-x)
		if x <= 0 {
			continue
		}
		if !s.ack && s.f.Kind == Bulk {
			s.f.unacked += x
		}
		switch rt {
		case routeCircuit:
			m.deliver(s, x, true)
			payload += x * s.f.payload
		case routeShunt:
			s.f.c.Shunted += x
			fallthrough
		case routeEPS:
			s.epsArr += x
			m.ports[s.to].epsArr += x
		}
	}
	if rt != routeCircuit {
		return
	}
	// How long the circuit carried traffic: all of it if the class
	// stayed backlogged or kept receiving; else until the queue ran dry.
	busy := dur
	if avail < rate*dur && arr == 0 {
		busy = served / rate
	}
	pt := m.ports[c.dst]
	pt.ocsBytes += served
	pt.ocsTime += busy
	if w != nil && w.rec >= 0 {
		r := &m.slots[w.rec]
		r.WireBytes += served
		r.Bytes += payload
		if r.FirstByte < 0 {
			r.FirstByte = a
		}
		r.LastByte = a + time.Duration(math.Round(busy))
	}
}

func (m *Model) deliver(s *stream, x float64, circuit bool) {
	f := s.f
	if s.ack {
		f.unacked = max(0, f.unacked-x/m.ackR)
		f.c.Acks += x
		return
	}
	f.c.Delivered += x
	if circuit {
		f.c.ViaCircuit += x
	} else {
		f.c.ViaEPS += x
	}
	if f.Kind == Bulk {
		f.ackPending += x * m.ackR
	}
}

// portStep serves the EPS's output queue to one ToR downlink. The
// downlink's multiplexer gives circuit traffic priority (§3.3: the OCS is
// bufferless), so the EPS gets at most its own rate and at most what the
// circuit leaves of the port.
func (m *Model) portStep(pt *port, T float64) {
	busy := min(pt.ocsTime, T)
	capB := m.eps * (T - busy)
	if busy > 0 {
		capB += busy * min(m.eps, max(0, m.link-pt.ocsBytes/busy))
	}
	var queued float64
	for _, s := range pt.streams {
		s.tmp = s.epsq + s.epsArr
		s.epsArr = 0
		queued += s.tmp
	}
	if queued <= 0 {
		return
	}
	served := min(capB, queued)
	k := served / queued
	var left, data float64
	for _, s := range pt.streams {
		x := s.tmp * k
		s.epsq = max(0, s.tmp-x)
		left += s.epsq
		if !s.ack {
			data += s.epsq
		}
		if x > 0 {
			m.deliver(s, x, false)
			if s.qp {
				pt.qpCum += x
			}
		}
	}
	// The switch drops what its buffer cannot hold (everything, when
	// there is no EPS), data only: a later cumulative ACK covers a lost
	// one.
	excess := 0.0
	switch {
	case m.eps <= 0:
		excess = left
	case m.p.EPSBuffer > 0 && left > m.p.EPSBuffer:
		excess = left - m.p.EPSBuffer
	}
	if excess <= 0 || data <= 0 {
		return
	}
	k = min(1, excess/data)
	for _, s := range pt.streams {
		if s.ack || s.epsq <= 0 {
			continue
		}
		x := s.epsq * k
		s.epsq -= x
		s.f.c.Dropped += x
		if s.f.Kind == Bulk {
			// Sent again from the host.
			s.f.unacked = max(0, s.f.unacked-x)
			s.q += x
		}
	}
}
