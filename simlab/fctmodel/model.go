package fctmodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"testbed/simlab/lgmodel"
)

// Trial is one request/response (or WRITE) of the closed loop.
type Trial struct {
	// Start is the simulated time of the request's write (the WRITE's
	// post), from the start of the run (warm-up included).
	Start time.Duration
	// FCT runs from the request's write to the application having the
	// last byte of the answer (or the WRITE's completion). With
	// Config.PerFlow it is fct1: from the first data segment to the first
	// ACK covering every byte, where the sender's capture sees them.
	FCT time.Duration
	// Connect (Config.PerFlow) runs from connect() to the first data
	// segment: the handshake, SYN retransmissions included.
	Connect time.Duration

	// What the transports did, both directions together.
	Retransmits int // segments (TCP, loss probes included) or packets (RDMA) sent again
	// ClientRetransmits are the client's share: what its socket's
	// TCP_INFO (tcpi_total_retrans) would count.
	ClientRetransmits int
	// ClientSynRetransmits are the SYNs the client sent again
	// (Config.PerFlow; counted in ClientRetransmits too, as TCP_INFO
	// counts them): a capture tells them from data.
	ClientSynRetransmits int
	Timeouts             int // TCP retransmission timeouts; RDMA transport timer expiries
	Probes               int // TCP tail loss probes
	Recoveries           int // TCP fast recoveries entered; RDMA NAKs received
	Spurious             int // data a receiver got twice (a needless retransmission)
	Reordered            int // data a receiver got out of order

	// What the corrupting link did, both directions together.
	LinkCopies int // LinkGuardian copies sent (N per loss it repaired or tried to)
	LinkLost   int // originals the link lost for good (protection off, or a hole ackNoTimeout skipped)
	// LinkDropped are the frames (originals and copies) the links'
	// loss-emulation tables took (Link.Drop), as the switch counts them.
	LinkDropped int
}

// Retransmitted says whether the transport sent anything twice.
func (t Trial) Retransmitted() bool { return t.Retransmits > 0 }

// LinkRecovered says whether LinkGuardian repaired a loss in the trial
// and the transport did not have to.
func (t Trial) LinkRecovered() bool { return t.LinkCopies > 0 && t.LinkLost == 0 }

// Model is a client and a server on one persistent connection across the
// path, in simulated time. It is not safe for concurrent use.
type Model struct {
	c    Config
	r    *rand.Rand
	tick int64 // ps per kernel jiffy

	epoch int64 // absolute ps of relative time 0 (moved up at each rebase)
	now   int64 // ps, relative to epoch

	q        evHeap
	nev      uint64
	nPending int // packet and application events in q (timers aside)

	pkts     []packet
	freePkts []int32

	links    [2]linkRun // 0: client -> server (Forward), 1: back (Reverse)
	nicFree  [2]int64   // host h's NIC transmitter is busy until then
	portFree [2]int64   // the switch port toward host h is busy until then

	tcp  [2]*tcpEP
	rdma [2]*rdmaEP

	trialDone bool
	doneAt    int64
	fctFrom   int64 // Config.PerFlow: where fct1 starts
	trials    int

	cache    map[stateKey]*template
	cacheCap int
	cur      *template // the template of the current state, when known
	prev     *template // the template just applied, whose successor is not yet known
	fates    [2][]float64
	rec      *recording
}

type linkRun struct {
	cfg  *Link
	sim  *lgmodel.Sim // nil: fresh at the next use (the link was quiet)
	pkts []int32      // packet by the link's sequence number
	dels []lgmodel.Delivery
	base lgmodel.Result // counters at the trial's start
	n    int            // frames offered in this trial
}

// New prepares a model; r is its only source of randomness.
func New(cfg Config, r *rand.Rand) (*Model, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("fctmodel: %w", err)
	}
	if r == nil {
		return nil, fmt.Errorf("fctmodel: no random source")
	}
	m := &Model{c: cfg, r: r, cache: map[stateKey]*template{}, cacheCap: maxCache}
	m.links[0].cfg, m.links[1].cfg = &m.c.Forward, &m.c.Reverse
	for _, l := range []*Link{&m.c.Forward, &m.c.Reverse} {
		// The dummies (64 B) are corrupted as any frame of their size.
		l.LG.Loss, l.LG.LossSmall = l.frameLoss(l.LG.FrameBytes), l.frameLoss(64)
	}
	m.tick = int64(1e12) / int64(cfg.TCP.HZ)
	switch cfg.Transport {
	case TCP:
		for i := range m.tcp {
			m.tcp[i] = newTCP(m, i)
		}
	case RDMA:
		for i := range m.rdma {
			m.rdma[i] = newRDMA(m, i)
		}
	}
	for i := 0; i < cfg.Warmup; i++ {
		m.Trial()
	}
	return m, nil
}

// Run returns the next n trials.
func (m *Model) Run(n int) []Trial {
	out := make([]Trial, n)
	for i := range out {
		out[i] = m.Trial()
	}
	return out
}

// FCTs returns the FCTs of the next n trials.
func (m *Model) FCTs(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = m.Trial().FCT
	}
	return out
}

// Trial runs the next trial.
//
// Speed: at the start of a trial where nothing is in flight (the usual
// case), the state of both ends is put in a canonical form (times from
// now, sequence numbers from the oldest unacknowledged byte) and looked up.
// The first time a state is seen, its trial is run once with no frame
// corrupted, and what that takes is kept: the frames each link carried and
// their corruption probabilities, the FCT, the state it ends in. From then
// on a trial from that state is lossless with probability prod(1-p_i), and
// then the kept outcome is applied at once; otherwise the first corrupted
// frame is drawn (frame i with probability prod_{j<i}(1-p_j) p_i, given
// that one is), the frames before it are made to get through, and the
// trial is simulated frame by frame. This is exact: a trial's course is a
// function of the corruption draws of the frames offered to each link in
// order, and a lossless trial's is fixed by its state.
func (m *Model) Trial() Trial {
	t := m.nextTrial()
	if c := m.c.Host.RxCoalesce; c > 0 && m.c.Transport == TCP {
		// Interrupt coalescing (HostDelays.RxCoalesce): the two receptions
		// on the trial's critical path (the request or data segment at
		// the server, the answer or ACK at the client) each wait for the
		// moderation timer, uniformly over its period.
		t.FCT += time.Duration((m.r.Float64() + m.r.Float64()) * float64(c))
	}
	if s := m.c.Host.RoundTrip; len(s) > 0 && m.c.Transport == RDMA {
		// The NICs', PCIe's and polling's spread (HostDelays.RoundTrip):
		// it delays when the application sees the answer and so its next
		// post, nothing the NICs' transport decides.
		t.FCT += s.draw(m.r.Float64())
	}
	return t
}

func (m *Model) nextTrial() Trial {
	m.trials++
	if m.c.PerFlow {
		m.newConnection()
	}
	if !m.clean() {
		m.cur, m.prev = nil, nil
		return m.runTrial()
	}
	m.rebase()
	if m.c.Step {
		return m.runTrial()
	}
	tpl := m.cur
	var key stateKey
	if tpl == nil {
		var ok bool
		if key, ok = m.key(); !ok {
			m.prev = nil
			return m.runTrial()
		}
		tpl = m.cache[key]
		if m.prev != nil && tpl != nil {
			m.prev.next = tpl
		}
	}
	m.cur, m.prev = nil, nil
	if tpl == nil {
		epoch := m.epoch
		tpl = m.record(key)
		if tpl.ok && m.r.Float64() < tpl.none {
			m.prev = tpl
			return tpl.trial
		}
		m.epoch = epoch
		m.restore(key)
	} else if tpl.ok && m.r.Float64() < tpl.none {
		return m.apply(tpl)
	}
	if tpl.ok {
		m.forceFirstCorruption(tpl)
	}
	t := m.runTrial()
	m.fates[0], m.fates[1] = m.fates[0][:0], m.fates[1][:0]
	return t
}

// runTrial simulates one trial from now, frame by frame.
func (m *Model) runTrial() Trial {
	t0 := m.now
	var before [2]counters
	for i := range before {
		before[i] = m.endpointCounters(i)
	}
	for i := range m.links {
		l := &m.links[i]
		l.n = 0
		if l.sim == nil {
			m.freshLink(i)
		}
		l.base = l.sim.Result()
	}
	m.trialDone = false
	switch m.c.Transport {
	case TCP:
		if m.c.PerFlow {
			m.at(t0+dps(m.c.Host.Syscall), evApp, 0, appConnect, 0)
		} else {
			m.at(t0+dps(m.c.Host.Syscall), evApp, 0, appWrite, 0)
		}
	case RDMA:
		m.rdma[0].post(t0, int64(m.c.RequestBytes))
	}
	for !m.trialDone {
		m.step(math.MaxInt64)
	}
	next := m.doneAt + dps(m.c.Think)
	for m.step(next) {
	}
	m.now = next
	t := Trial{Start: time.Duration((m.epoch + t0) / 1000), FCT: time.Duration((m.doneAt - t0) / 1000)}
	if m.c.PerFlow && m.c.Transport == TCP {
		t.FCT = time.Duration((m.doneAt - m.fctFrom) / 1000)
		t.Connect = time.Duration((m.fctFrom - t0) / 1000)
	}
	t.ClientRetransmits = m.endpointCounters(0).retrans - before[0].retrans
	t.ClientSynRetransmits = m.endpointCounters(0).synRetrans - before[0].synRetrans
	for i := range before {
		c := m.endpointCounters(i)
		t.Retransmits += c.retrans - before[i].retrans
		t.Timeouts += c.timeouts - before[i].timeouts
		t.Probes += c.probes - before[i].probes
		t.Recoveries += c.recoveries - before[i].recoveries
		t.Spurious += c.spurious - before[i].spurious
		t.Reordered += c.reordered - before[i].reordered
	}
	for i := range m.links {
		l := &m.links[i]
		r := l.sim.Result()
		t.LinkCopies += int(r.Copies - l.base.Copies)
		t.LinkLost += int(r.Lost - l.base.Lost)
		t.LinkDropped += int(r.Dropped - l.base.Dropped)
	}
	return t
}

// step handles the earliest thing pending at or before until: an event of
// the hosts or what a link does next (a link goes first at a tie: its
// deliveries become events). It reports whether there was one.
func (m *Model) step(until int64) bool {
	tq := int64(math.MaxInt64)
	if len(m.q) > 0 {
		tq = m.q[0].at
	}
	li, tl := -1, int64(math.MaxInt64)
	for i := range m.links {
		if s := m.links[i].sim; s != nil {
			if n := s.NextAt(); n < tl {
				li, tl = i, n
			}
		}
	}
	if li >= 0 && tl <= tq {
		if tl > until {
			return false
		}
		m.now = max(m.now, tl)
		m.links[li].sim.Advance(tl)
		m.collect(li)
		return true
	}
	if tq > until {
		return false
	}
	if tq == math.MaxInt64 {
		panic(fmt.Sprintf("fctmodel: trial %d stalled at %d ps with nothing pending", m.trials, m.now))
	}
	e := m.q.pop()
	if e.kind != evTimer {
		m.nPending--
	}
	m.now = e.at
	m.handle(e)
	return true
}

// clean: nothing in flight, queued or half done: a trial can start from
// a canonical state.
func (m *Model) clean() bool {
	if m.nPending != 0 {
		return false
	}
	for i := range m.links {
		if s := m.links[i].sim; s != nil && !s.Quiet() {
			return false
		}
	}
	switch m.c.Transport {
	case TCP:
		return m.tcp[0].settled() && m.tcp[1].settled()
	case RDMA:
		return m.rdma[0].settled() && m.rdma[1].settled()
	}
	return false
}

// rebase moves relative time 0 to now and renumbers the streams from
// their oldest unacknowledged byte (or packet). Quiet links are dropped:
// the next trial that needs them starts fresh ones.
func (m *Model) rebase() {
	dt := m.now
	m.epoch += dt
	m.now = 0
	for h := range m.nicFree {
		m.nicFree[h] = max(0, m.nicFree[h]-dt)
		m.portFree[h] = max(0, m.portFree[h]-dt)
	}
	for i := range m.links {
		m.links[i].sim = nil
	}
	switch m.c.Transport {
	case TCP:
		d0, d1 := m.tcp[0].v.sndUna, m.tcp[1].v.sndUna
		m.tcp[0].rebase(dt, d0, d1)
		m.tcp[1].rebase(dt, d1, d0)
	case RDMA:
		d0, d1 := m.rdma[0].v.psnUna, m.rdma[1].v.psnUna
		m.rdma[0].rebase(dt, d0, d1)
		m.rdma[1].rebase(dt, d1, d0)
	}
	m.rearmAll()
}

// rearmAll rebuilds the event queue from the endpoints' timers.
func (m *Model) rearmAll() {
	m.q = m.q[:0]
	switch m.c.Transport {
	case TCP:
		for _, e := range m.tcp {
			e.rearmTimers()
		}
	case RDMA:
		for _, e := range m.rdma {
			e.rearmTimers()
		}
	}
}

func (m *Model) freshLink(i int) {
	l := &m.links[i]
	sim, err := lgmodel.NewOffered(l.cfg.LG, m.r)
	if err != nil {
		panic(fmt.Sprintf("fctmodel: link %d: %v", i, err)) // validated in New
	}
	l.sim, l.pkts, l.dels = sim, l.pkts[:0], l.dels[:0]
}

// Event kinds.
const (
	evRx    = iota // a packet reaches its host (after the host's receive delay)
	evTimer        // a timer of an endpoint (sub: which)
	evApp          // an application acts (sub: what)
)

// Application actions.
const (
	appWrite   = iota // TCP: the application's write reaches the stack; RDMA: a post
	appConnect        // TCP (Config.PerFlow): the client's connect()
)

type event struct {
	at   int64
	id   uint64
	kind uint8
	ep   uint8
	sub  uint8
	gen  uint32
	pkt  int32
}

func (m *Model) at(t int64, kind, ep, sub uint8, gen uint32) {
	m.nev++
	if kind != evTimer {
		m.nPending++
	}
	m.q.push(event{at: t, id: m.nev, kind: kind, ep: ep, sub: sub, gen: gen})
}

func (m *Model) handle(e event) {
	switch m.c.Transport {
	case TCP:
		ep := m.tcp[e.ep]
		switch e.kind {
		case evRx:
			p := m.pkts[e.pkt]
			m.freePkt(e.pkt)
			ep.receive(&p)
		case evTimer:
			ep.timer(e.sub, e.gen)
		case evApp:
			if e.sub == appConnect {
				ep.connect()
			} else {
				ep.appWrite()
			}
		}
	case RDMA:
		ep := m.rdma[e.ep]
		switch e.kind {
		case evRx:
			p := m.pkts[e.pkt]
			m.freePkt(e.pkt)
			ep.receive(&p)
		case evTimer:
			ep.timer(e.gen)
		case evApp:
			ep.post(m.now, int64(m.c.ResponseBytes))
		}
	}
}

// done ends the trial: the client's application has the answer at t.
func (m *Model) done(t int64) {
	m.trialDone, m.doneAt = true, t
}

// The path.

// packet is a frame between the hosts.
type packet struct {
	from  uint8
	bytes int // L2 frame with FCS
	// TCP
	seq, end int64 // data [seq, end); a pure ACK has none
	ack      int64
	sacks    [4]span
	nsacks   uint8
	dsack    bool  // the first SACK block reports a duplicate
	syn      uint8 // pkSYN, pkSYNACK: a handshake packet (Config.PerFlow)
	// RDMA
	rkind uint8
	psn   int64
	last  bool // the last packet of a message: asks for an ACK
}

type span struct{ lo, hi int64 }

func (m *Model) newPkt(p packet) int32 {
	if n := len(m.freePkts); n > 0 {
		i := m.freePkts[n-1]
		m.freePkts = m.freePkts[:n-1]
		m.pkts[i] = p
		return i
	}
	m.pkts = append(m.pkts, p)
	return int32(len(m.pkts) - 1)
}

func (m *Model) freePkt(i int32) { m.freePkts = append(m.freePkts, i) }

// ser is a frame's time on a wire of bps, with preamble and gap.
func ser(bytes int, bps float64) int64 { return int64(float64((bytes+20)*8) / bps * 1e12) }

func dps(d time.Duration) int64 { return int64(d) * 1000 }

// xmit sends p from host p.from; ready is when it is ready at the NIC.
// The NIC serializes frames in order; the frame crosses to the switch,
// which offers it to the link toward the other host.
func (m *Model) xmit(p packet, ready int64) {
	h := int(p.from)
	start := max(ready, m.nicFree[h])
	s := ser(p.bytes, m.c.HostBps)
	m.nicFree[h] = start + s
	at := start + s + dps(m.c.Cable)
	l := &m.links[h]
	loss := l.cfg.frameLoss(p.bytes)
	u := -1.0
	if l.n < len(m.fates[h]) {
		u = m.fates[h][l.n]
	}
	l.n++
	if m.rec != nil {
		m.rec.p[h] = append(m.rec.p[h], loss)
		u = 2 // recording the lossless course: nothing is corrupted
	}
	seq, err := l.sim.Offer(lgmodel.Frame{At: at, Bytes: p.bytes, Loss: loss, U: u, Drop: min(l.cfg.Drop, loss)})
	if err != nil {
		panic(fmt.Sprintf("fctmodel: link %d: %v", h, err))
	}
	if seq != int64(len(l.pkts)) {
		panic("fctmodel: link sequence out of step")
	}
	l.pkts = append(l.pkts, m.newPkt(p))
}

// collect turns link i's deliveries into arrivals at the far host: a pass
// through the receiving switch, its port toward the host, the cable, the
// host's receive path.
func (m *Model) collect(i int) {
	l := &m.links[i]
	l.dels = l.sim.Deliveries(l.dels[:0])
	to := 1 - i
	for _, d := range l.dels {
		pi := l.pkts[d.Seq]
		p := &m.pkts[pi]
		out := max(d.At+dps(l.cfg.LG.Pipeline), m.portFree[to])
		s := ser(p.bytes, m.c.HostBps)
		m.portFree[to] = out + s
		t := out + s + dps(m.c.Cable)
		if m.c.Transport == TCP {
			t += dps(m.c.Host.RxStack)
		} else {
			t += dps(m.c.Host.NICRx)
		}
		m.nev++
		m.nPending++
		m.q.push(event{at: t, id: m.nev, kind: evRx, ep: uint8(to), pkt: pi})
	}
}

// Kernel timers run on jiffies: a timer of n jiffies armed at t fires at
// the n-th tick after the one t falls in.
func (m *Model) jiffyDeadline(arm, n int64) int64 {
	abs := m.epoch + arm
	return (abs/m.tick+n)*m.tick - m.epoch
}

// usToJiffies is the kernel's usecs_to_jiffies (rounding up).
func (m *Model) usToJiffies(us int64) int64 {
	if us <= 0 {
		return 0
	}
	tickUS := m.tick / 1_000_000
	return (us + tickUS - 1) / tickUS
}

func (m *Model) jiffiesToUS(j int64) int64 { return j * (m.tick / 1_000_000) }

// usSince is a duration in whole microseconds, as the stack's clock
// measures it (tcp_mstamp).
func usSince(from, to int64) int64 { return (to - from) / 1_000_000 }

type counters struct {
	retrans, timeouts, probes, recoveries, spurious, reordered int
	synRetrans                                                 int // SYNs or SYN-ACKs sent again (in retrans too)
}

func (m *Model) endpointCounters(i int) counters {
	switch m.c.Transport {
	case TCP:
		return m.tcp[i].cnt
	case RDMA:
		return m.rdma[i].cnt
	}
	return counters{}
}

// evHeap is a min-heap of events by time, then by order of scheduling.
type evHeap []event

func (h evHeap) less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].id < h[j].id
}

func (h *evHeap) push(e event) {
	*h = append(*h, e)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *evHeap) pop() event {
	q := *h
	e := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	for i := 0; ; {
		l, r, s := 2*i+1, 2*i+2, i
		if l < n && q.less(l, s) {
			s = l
		}
		if r < n && q.less(r, s) {
			s = r
		}
		if s == i {
			break
		}
		q[i], q[s] = q[s], q[i]
		i = s
	}
	*h = q
	return e
}
