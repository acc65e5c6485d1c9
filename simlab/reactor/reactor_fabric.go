package reactor

import (
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"time"

	"testbed/hostagent"
	"testbed/internal/sched"
	"testbed/simlab/reactormodel"
)

// ReactorFabric is a simulated REACToR (Liu et al., NSDI 2014): a hybrid
// ToR whose hosts hang off the ports of a simulated microsecond circuit
// switch (MicroOCS) and of an electrical packet switch (EPS). Recipes
// drive it as they would a real one, through the switch's REST API and
// the hosts' agents (hostagent's /v1/reactor/ routes, served here by
// ReactorHostControl); the data plane between them is
// simlab/reactormodel, run in the switch's time:
//
//   - a run begins when the switch arms a schedule and ends when it
//     stops; each run is one model, whose period 0 starts with the
//     switch's;
//   - the model plays, period by period, the schedule the switch plays
//     (its circuits between the hosts' ports; circuits to other ports
//     carry nothing of ours). The fabric's pump watches the switch every
//     Tick and notes the schedule of the period under way, and keeps the
//     model Lag behind the switch's clock, so that when the model's ToR
//     decides a period (reactormodel's ScheduleLead before it) the switch
//     has already begun it and its schedule is known;
//   - the hosts' flows, classes' EPS rate limits and the host-side EPS
//     rate enter the model at the switch time they are asked for; a flow
//     added while a run is under way rebuilds the model and replays it
//     from the run's start with the same schedules, seed and settings,
//     which gives the same history up to the flow's start;
//   - the ToR of the model pauses and unpauses the hosts' classes with
//     PFC frames at the slot boundaries and rate limits circuits by §3.3's
//     rule, itself: the hosts' own pause requests are refused and their
//     circuit rate limits are only recorded.
//
// The reconfiguration gap inside each night is the model's own draw from
// the switch's law (for a switch whose nights come from its mechanism,
// reactormodel.Switching.Law: the mechanism's per-circuit mean and SD
// within its bounds); the switch records its own nights. Traffic does not
// depend on them: hosts are unpaused at the end of the night budget.
type ReactorFabric struct {
	o   ReactorFabricOptions
	log *slog.Logger

	mu       sync.Mutex
	hosts    []*fabricHost
	byAddr   map[netip.Addr]int
	run      *fabricRun // the run under way, or the last one
	runs     int
	pending  []*fabricFlow // flows waiting for the next run
	flowSeq  int
	hostRate []float64 // each host's EPS rate limit for runs (setup eps_bps)

	stop chan struct{}
	done chan struct{}
}

// ReactorFabricOptions describe a fabric.
type ReactorFabricOptions struct {
	Name string
	// OCS is the circuit switch; Ports[i] is the port (from 1, input and
	// output) host i is on.
	OCS   CircuitSwitch
	Ports []int
	// Hosts and Addrs name the hosts and their data-plane addresses.
	Hosts []string
	Addrs []netip.Addr
	// LinkBps is each host's link and each circuit; EPSBps what each
	// host's port of the packet switch carries (the hosts limit what they
	// send to it, §3.2).
	LinkBps, EPSBps float64
	Seed            uint64
	// Lag is how far the data plane stays behind the switch's clock
	// (default 300 us: more than the ToR's 100 us decision lead plus a
	// Tick); Tick is how often the pump looks (default 250 us while a
	// schedule runs, 20 x that while none does).
	Lag, Tick time.Duration
	Log       *slog.Logger
}

// fabricHost is one host's host-control state.
type fabricHost struct {
	name   string
	addr   netip.Addr
	port   int
	setup  *hostagent.ReactorSetup
	sched  map[int64]hostagent.ReactorSchedule // received schedules by period
	hb     *hostagent.ReactorHeartbeat
	wseq   uint64 // windows handed out so far count from here
	limits map[int]float64
}

// fabricFlow is one flow of one run.
type fabricFlow struct {
	id               string
	src, dst         int
	kind             reactormodel.FlowKind
	rate             float64
	eps              bool
	req              hostagent.ReactorFlowRequest
	start, stop      time.Duration // on the switch's clock (stop 0: none)
	measFrom, measTo time.Duration
	from, to         *reactormodel.Counters
	final            *reactormodel.Counters
	run              *fabricRun
	payload          float64
	hidden           bool // stopped and forgotten by its host
}

// epsEvent is a class's EPS rate limit set at a time of the run.
type epsEvent struct {
	at   time.Duration // run time
	host int
	dst  int // -1: the EPS class
	bps  float64
}

// fabricRun is one schedule run of the switch.
type fabricRun struct {
	num      int
	start    time.Duration // switch time of period 0
	period   time.Duration
	eps      float64
	model    *reactormodel.Model
	flows    []*fabricFlow
	scheds   map[int64]sched.Schedule // the schedule each period was given
	seen     map[int64]sched.Schedule // the switch's schedule per period, as observed
	events   []epsEvent
	applied  int             // events[:applied] are in the model
	checks   []time.Duration // run times at which to snapshot counters
	ended    bool
	end      time.Duration // run time the data plane stopped at
	lastSeen time.Duration // switch time the run was last seen running
	stopAt   time.Duration // run time the switch stopped at; -1 while it runs
	err      error
	missed   int // periods decided without an observation of the switch
	maxStep  time.Duration
}

// NewReactorFabric builds a fabric and starts its pump.
func NewReactorFabric(o ReactorFabricOptions) (*ReactorFabric, error) {
	n := len(o.Hosts)
	if o.OCS == nil || n < 2 || len(o.Ports) != n || len(o.Addrs) != n {
		return nil, fmt.Errorf("reactor fabric %s: a switch and at least 2 hosts with a port and an address each", o.Name)
	}
	if !(o.LinkBps > 0) || !(o.EPSBps >= 0) || o.EPSBps > o.LinkBps {
		return nil, fmt.Errorf("reactor fabric %s: link %g b/s, EPS %g b/s: expected 0 <= EPS <= link", o.Name, o.LinkBps, o.EPSBps)
	}
	if o.Lag == 0 {
		o.Lag = 300 * time.Microsecond
	}
	if o.Tick == 0 {
		o.Tick = 250 * time.Microsecond
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	f := &ReactorFabric{o: o, log: o.Log, byAddr: map[netip.Addr]int{}, stop: make(chan struct{}), done: make(chan struct{})}
	seenPort := map[int]bool{}
	for i := range n {
		p := o.Ports[i]
		if p < 1 || p > o.OCS.Ports() || seenPort[p] {
			return nil, fmt.Errorf("reactor fabric %s: host %s on port %d: expected a free port of %s (1..%d)", o.Name, o.Hosts[i], p, o.OCS.Name(), o.OCS.Ports())
		}
		seenPort[p] = true
		if _, dup := f.byAddr[o.Addrs[i]]; dup {
			return nil, fmt.Errorf("reactor fabric %s: address %s twice", o.Name, o.Addrs[i])
		}
		f.byAddr[o.Addrs[i]] = i
		f.hosts = append(f.hosts, &fabricHost{name: o.Hosts[i], addr: o.Addrs[i], port: p, sched: map[int64]hostagent.ReactorSchedule{}, limits: map[int]float64{}})
	}
	f.hostRate = make([]float64, n)
	go f.pump()
	return f, nil
}

// Close stops the pump.
func (f *ReactorFabric) Close() error {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	<-f.done
	return nil
}

// Options returns the fabric's description.
func (f *ReactorFabric) Options() ReactorFabricOptions { return f.o }

// HostIndex returns the index of the named host, or -1.
func (f *ReactorFabric) HostIndex(name string) int {
	for i, h := range f.hosts {
		if h.name == name {
			return i
		}
	}
	return -1
}

func (f *ReactorFabric) pump() {
	defer close(f.done)
	for {
		f.mu.Lock()
		behind := f.stepLocked()
		running := f.run != nil && !f.run.ended
		f.mu.Unlock()
		d := f.o.Tick
		switch {
		case behind:
			d = time.Microsecond // let the API have the lock, then go on
		case !running:
			d *= 20
		}
		select {
		case <-f.stop:
			return
		case <-time.After(d):
		}
	}
}

// Step runs one pump step now (tests).
func (f *ReactorFabric) Step() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stepLocked()
}

// stepLocked looks at the switch and moves the data plane, and reports
// whether the data plane is still behind where it should be; f.mu held.
func (f *ReactorFabric) stepLocked() bool {
	st := f.o.OCS.Status()
	active := st.State == "running" || st.State == "armed"
	if r := f.run; r != nil && !r.ended && r.stopAt < 0 && (!active || st.Start != r.start) {
		r.stopAt = max(0, r.lastSeen-r.start)
	}
	if r := f.run; r != nil && !r.ended && r.stopAt >= 0 {
		// The switch stopped (or restarted): the data plane stops where
		// it got to, or where the switch was last seen running if that
		// is earlier. (Catching up with the switch would only simulate
		// traffic that nobody can ask about any more.)
		if r.model != nil && r.model.Now() > r.stopAt {
			r.stopAt = r.model.Now()
		}
		r.ended = true
		if r.model != nil {
			r.end = r.model.Now()
		}
		f.log.Info("reactor run ended", "fabric", f.o.Name, "run", r.num, "at", r.start+r.end)
	}
	if active && st.Schedule != nil && (f.run == nil || f.run.ended) && (f.run == nil || f.run.start != st.Start) {
		f.startRunLocked(st)
	}
	r := f.run
	if r == nil || r.ended {
		return false
	}
	if st.State == "running" {
		r.lastSeen = st.Now
		if _, ok := r.seen[st.Period]; !ok {
			r.seen[st.Period] = f.toSched(st.Schedule)
		}
	}
	if target := st.Now - f.o.Lag - r.start; r.model != nil && target > r.model.Now() {
		return !f.advanceLocked(r, target, f.o.Tick)
	}
	return false
}

// toSched relabels a switch schedule from ports to hosts: Perm[i] is the
// host input i's circuit reaches, or Dark.
func (f *ReactorFabric) toSched(s *sched.Schedule) sched.Schedule {
	byPort := map[int]int{}
	for i, h := range f.hosts {
		byPort[h.port] = i
	}
	out := sched.Schedule{Period: s.Period, Delta: s.Delta}
	for _, sl := range s.Slots {
		perm := make([]int, len(f.hosts))
		for i := range perm {
			perm[i] = sched.Dark
		}
		for in, o := range sl.Perm {
			if o == sched.Dark {
				continue
			}
			i, okI := byPort[in+1]
			j, okJ := byPort[o+1]
			if okI && okJ && i != j {
				perm[i] = j
			}
		}
		out.Slots = append(out.Slots, sched.Slot{Perm: perm, Duration: sl.Duration})
	}
	return out
}

// runEPS is the EPS rate of a run: the packet switch's, or less where the
// hosts limit what they send to it (setup eps_bps, §3.2's fifth class
// constraint); the model drains the EPS at that rate too.
func (f *ReactorFabric) runEPS() float64 {
	eps := f.o.EPSBps
	for i, h := range f.hosts {
		if h.setup != nil {
			eps = min(eps, f.hostRate[i])
		}
	}
	return eps
}

func (f *ReactorFabric) startRunLocked(st OCSStatus) {
	f.runs++
	r := &fabricRun{num: f.runs, start: st.Start, period: st.Schedule.Period, eps: f.runEPS(),
		scheds: map[int64]sched.Schedule{}, seen: map[int64]sched.Schedule{0: f.toSched(st.Schedule)}, lastSeen: st.Now, stopAt: -1}
	f.run = r
	for _, fl := range f.pending {
		if fl.stop != 0 && fl.stop <= r.start {
			continue
		}
		fl.run = r
		r.flows = append(r.flows, fl)
		f.addChecks(r, fl)
	}
	f.pending = nil
	for _, fl := range r.flows {
		if fl.kind == reactormodel.Bulk {
			r.maxStep = 20 * time.Microsecond
		}
	}
	for i, h := range f.hosts {
		for dst, bps := range h.limits {
			r.events = append(r.events, epsEvent{at: 0, host: i, dst: dst, bps: bps})
		}
	}
	f.rebuildLocked(r)
	f.log.Info("reactor run started", "fabric", f.o.Name, "run", r.num, "start", r.start, "period", r.period, "flows", len(r.flows), "eps_bps", r.eps)
}

func (f *ReactorFabric) addChecks(r *fabricRun, fl *fabricFlow) {
	for _, t := range []time.Duration{fl.measFrom, fl.measTo} {
		if fl.measTo != 0 {
			if rt := t - r.start; !slices.Contains(r.checks, rt) {
				r.checks = append(r.checks, rt)
			}
		}
	}
	slices.Sort(r.checks)
}

// params are the model's parameters for run r.
func (f *ReactorFabric) params(r *fabricRun) reactormodel.Params {
	g := f.o.OCS.Gap()
	p := reactormodel.Params{
		Hosts:    len(f.hosts),
		LinkRate: f.o.LinkBps,
		EPSRate:  r.eps,
		Period:   r.period,
		Delta:    g.Max,
		MinSlot:  time.Nanosecond,
		Gap:      g,
		// The ACK clock of bulk flows is sampled every 20 us; the step is
		// fixed when the run starts, so that a replay with more flows
		// steps as the first run did. Paced flows alone need no bound
		// (the fluid is exact between events, and finer steps change
		// nothing).
		MaxStep:      r.maxStep,
		ScheduleLead: min(100*time.Microsecond, r.period/2),
		// The ToR's §3.3 rate limits estimate the EPS load from the
		// hosts' declared flows, a demand oracle as the prototype and
		// §5.4 had.
		Demand: reactormodel.Oracle,
		Seed:   f.o.Seed ^ uint64(r.num)*0x9e3779b97f4a7c15,
	}
	p.Scheduler = reactormodel.SchedulerFunc(func(period int64, _ sched.Demand, _ sched.Constraints) (sched.Schedule, error) {
		return f.scheduleFor(r, period), nil
	})
	return p
}

// scheduleFor is the schedule of period k: what the run was given before
// (a replay), else what the switch's record says it played in that period
// (a replacement takes over at a boundary the pump may not have seen: on
// a loaded machine it misses whole periods), else what the switch was
// seen playing in that period.
func (f *ReactorFabric) scheduleFor(r *fabricRun, k int64) sched.Schedule {
	if s, ok := r.scheds[k]; ok {
		return s
	}
	s, ok := r.seen[k]
	if ps, known := f.o.OCS.PeriodSchedule(r.start, k); known {
		s, ok = f.toSched(ps), true
	}
	if !ok {
		// Not observed (the pump was late, or the switch stopped):
		// the latest schedule seen before.
		r.missed++
		best := int64(-1)
		for p := range r.seen {
			if p < k && p > best {
				best = p
			}
		}
		s = r.seen[best]
	}
	if s.Period != r.period || s.Delta < f.o.OCS.Gap().Max {
		if r.err == nil {
			r.err = fmt.Errorf("period %d: the switch's schedule has period %v and night %v; this fabric runs periods of %v with nights of at least %v", k, s.Period, s.Delta, r.period, f.o.OCS.Gap().Max)
		}
		s = sched.Schedule{Period: r.period, Delta: f.o.OCS.Gap().Max}
	}
	r.scheds[k] = s
	return s
}

// rebuildLocked makes run r's model afresh and replays it to where it was.
func (f *ReactorFabric) rebuildLocked(r *fabricRun) {
	var at time.Duration
	if r.model != nil {
		at = r.model.Now()
	}
	var flows []reactormodel.Flow
	for _, fl := range r.flows {
		mf := reactormodel.Flow{Src: fl.src, Dst: fl.dst, Kind: fl.kind, Rate: fl.rate, EPS: fl.eps, Start: max(0, fl.start-r.start)}
		if fl.stop != 0 {
			mf.Stop = fl.stop - r.start
		}
		flows = append(flows, mf)
	}
	m, err := reactormodel.New(f.params(r), flows)
	if err != nil {
		r.err, r.model = err, nil
		f.log.Warn("reactor run: model", "fabric", f.o.Name, "err", err)
		m, _ = reactormodel.New(f.params(r), nil)
	}
	r.model, r.applied = m, 0
	for _, fl := range r.flows {
		fl.from, fl.to, fl.final = nil, nil, nil
		fl.payload = payloadOf(m.Params().Framing, fl.kind)
	}
	f.advanceLocked(r, at, 0)
}

func payloadOf(fr reactormodel.Framing, k reactormodel.FlowKind) float64 {
	h := fr.UDPIPHeaders
	if k == reactormodel.Bulk {
		h = fr.TCPIPHeaders
	}
	return float64(fr.MTU-h) / float64(fr.MTU+fr.L2Overhead)
}

// advanceLocked runs r's model towards run time t, applying rate-limit
// events and taking counter snapshots at their times, for at most budget
// of wall-clock time (0: no limit), and reports whether it reached t. The
// model may run slower than the switch's clock (a large fabric, a slow
// machine): the pump then gives it the lock back and forth, and the data
// plane simply stays further behind.
func (f *ReactorFabric) advanceLocked(r *fabricRun, t, budget time.Duration) bool {
	m := r.model
	if m == nil {
		return true
	}
	began := time.Now()
	if budget > 0 {
		// The pump's targets follow the wall clock; the model steps
		// differently depending on where it is stopped (a bulk flow's
		// ACK clock is sampled per step), so it only stops on a fixed
		// grid (and at measurement boundaries and rate changes), which
		// makes a run the same whenever the pump looks.
		t -= t % advanceGrid
	}
	for m.Now() < t {
		if budget > 0 && time.Since(began) > budget {
			return false
		}
		next := min(t, (m.Now()/advanceGrid+1)*advanceGrid)
		f.applyEvents(r, m.Now())
		if r.applied < len(r.events) {
			next = min(next, r.events[r.applied].at) // the first after now
		}
		for _, c := range r.checks {
			if c > m.Now() {
				next = min(next, c)
				break
			}
		}
		if err := m.AdvanceTo(next); err != nil {
			if r.err == nil {
				r.err = err
			}
			return true
		}
		f.snapshot(r)
	}
	f.applyEvents(r, m.Now())
	f.snapshot(r)
	return true
}

// advanceGrid is where the pump stops the model.
const advanceGrid = 100 * time.Microsecond

// applyEvents sets the limits whose time has come (at or before now) that
// the model has not had yet, in time order; events are kept in time
// order, and a limit is in force until a later event of its class, so
// the events before r.applied need not be set again.
func (f *ReactorFabric) applyEvents(r *fabricRun, now time.Duration) {
	for ; r.applied < len(r.events) && r.events[r.applied].at <= now; r.applied++ {
		e := r.events[r.applied]
		r.model.SetEPSLimit(e.host, e.dst, e.bps)
	}
}

// snapshot records the flows' counters at the model's time when it is a
// measurement boundary.
func (f *ReactorFabric) snapshot(r *fabricRun) {
	now := r.model.Now()
	if !slices.Contains(r.checks, now) {
		return
	}
	var cs []reactormodel.Counters
	for i, fl := range r.flows {
		if fl.measTo == 0 {
			continue
		}
		for _, x := range []struct {
			at  time.Duration
			dst **reactormodel.Counters
		}{{fl.measFrom - r.start, &fl.from}, {fl.measTo - r.start, &fl.to}} {
			if x.at == now && *x.dst == nil {
				if cs == nil {
					cs = r.model.FlowCounters()
				}
				c := cs[i]
				*x.dst = &c
			}
		}
	}
}

// dataNow is the data plane's time on the switch's clock, and the run.
// Between runs it follows the switch's clock, Lag behind, but not past
// the start of a run the switch has begun and the fabric has not (its
// pump begins it when it next looks at the switch, which on a loaded
// machine can be after the run's end): until then the run's flows wait,
// and a host that read the switch's clock as its own would see a wait for
// a measurement's end over with the flows not measured.
func (f *ReactorFabric) dataNow() (time.Duration, *fabricRun) {
	r := f.run
	if r != nil && r.model != nil && !r.ended {
		return r.start + r.model.Now(), r
	}
	now := f.o.OCS.Now() - f.o.Lag
	if st := f.o.OCS.Status(); (st.State == "running" || st.State == "armed") && st.Schedule != nil && (r == nil || r.start != st.Start) {
		now = min(now, st.Start)
	}
	if r == nil || r.model == nil {
		return now, nil
	}
	return max(r.start+r.end, now), r
}

// FabricFlow is a flow's counters (tests and the host-control API).
type FabricFlow struct {
	ID                 string
	Src, Dst           int
	Start, Stop        time.Duration
	MeasFrom, MeasTo   time.Duration
	Delivered, Offered float64 // wire bytes delivered and offered so far
	Payload            float64 // payload bytes delivered so far
	Measured           bool
	MeasuredPayload    float64
	MeasuredOffered    float64 // payload the application offered in the interval
	Run                int
	State              string
}

// flowsLocked reports every flow of the current (or last) run and the
// pending ones.
func (f *ReactorFabric) flowsLocked() []FabricFlow {
	now, r := f.dataNow()
	var out []FabricFlow
	var cs []reactormodel.Counters
	if r != nil && r.model != nil {
		cs = r.model.FlowCounters()
	}
	add := func(fl *fabricFlow, idx int) {
		x := FabricFlow{ID: fl.id, Src: fl.src, Dst: fl.dst, Start: fl.start, Stop: fl.stop, MeasFrom: fl.measFrom, MeasTo: fl.measTo, State: "waiting"}
		if fl.run != nil {
			x.Run = fl.run.num
		}
		if idx >= 0 && idx < len(cs) {
			c := cs[idx]
			x.Delivered, x.Payload = c.Delivered, c.Delivered*fl.payload
			x.Offered = c.Offered + c.Written
		}
		switch {
		case fl.run != nil && fl.run.ended:
			x.State = "stopped"
		case fl.run != nil && now >= fl.start && (fl.stop == 0 || now < fl.stop):
			x.State = "running"
		case fl.stop != 0 && now >= fl.stop:
			x.State = "stopped"
		}
		if fl.from != nil && fl.to != nil {
			x.Measured = true
			x.MeasuredPayload = (fl.to.Delivered - fl.from.Delivered) * fl.payload
			x.MeasuredOffered = (fl.to.Offered + fl.to.Written - fl.from.Offered - fl.from.Written) * fl.payload
		}
		out = append(out, x)
	}
	if r != nil {
		for i, fl := range r.flows {
			add(fl, i)
		}
	}
	for _, fl := range f.pending {
		add(fl, -1)
	}
	return out
}

// allFlowsLocked lists the current (or last) run's flows and the pending ones.
func (f *ReactorFabric) allFlowsLocked() []*fabricFlow {
	var out []*fabricFlow
	if f.run != nil {
		out = append(out, f.run.flows...)
	}
	return append(out, f.pending...)
}

// Flows reports the flows of the current (or last) run and the pending ones.
func (f *ReactorFabric) Flows() []FabricFlow {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.flowsLocked()
}

// Result is the model's result for the current (or last) run from its
// start, with its start on the switch's clock.
func (f *ReactorFabric) Result() (reactormodel.Result, time.Duration, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.run == nil || f.run.model == nil {
		return reactormodel.Result{}, 0, false
	}
	return f.run.model.Result(), f.run.start, true
}

// Err is what went wrong with the current (or last) run, if anything.
func (f *ReactorFabric) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.run == nil {
		return nil
	}
	return f.run.err
}

// liveRunLocked is the run under way, or nil when the switch runs no
// schedule now (a run the switch has left is marked to stop where it was
// last seen running).
func (f *ReactorFabric) liveRunLocked() *fabricRun {
	r := f.run
	if r == nil || r.ended || r.stopAt >= 0 {
		return nil
	}
	st := f.o.OCS.Status()
	if (st.State != "running" && st.State != "armed") || st.Start != r.start {
		r.stopAt = max(0, r.lastSeen-r.start)
		return nil
	}
	return r
}

// addFlowsLocked registers flows; a run under way is rebuilt with them,
// otherwise they wait for the next.
func (f *ReactorFabric) addFlowsLocked(fls []*fabricFlow) error {
	now, _ := f.dataNow()
	r := f.liveRunLocked()
	for _, fl := range fls {
		if fl.start < now {
			fl.start = now
		}
		if fl.stop != 0 && fl.stop <= fl.start {
			return fmt.Errorf("flow to %s: stops at %v, before the data plane's present %v", f.hosts[fl.dst].name, fl.stop, now)
		}
		if fl.measTo != 0 && fl.measFrom < now {
			return fmt.Errorf("flow to %s: its measurement starts at %v, which the data plane has passed (it is at %v): start measuring later", f.hosts[fl.dst].name, fl.measFrom, now)
		}
	}
	for _, fl := range fls {
		f.flowSeq++
		fl.id = fmt.Sprintf("%s-f%d", f.hosts[fl.src].name, f.flowSeq)
		if r == nil {
			f.pending = append(f.pending, fl)
			continue
		}
		fl.run = r
		r.flows = append(r.flows, fl)
		f.addChecks(r, fl)
	}
	if r != nil {
		f.rebuildLocked(r)
	}
	return nil
}

// setLimitLocked caps what host h's class for dst (-1: its EPS class) may
// send to the EPS, from the data plane's present on.
func (f *ReactorFabric) setLimitLocked(h, dst int, bps float64) {
	f.hosts[h].limits[dst] = bps
	if r := f.run; r != nil && !r.ended && r.model != nil {
		// At the model's present, so after every event applied: it
		// lands at r.applied or later, and is set again there (the
		// same limit) when the model next moves.
		r.events = append(r.events, epsEvent{at: r.model.Now(), host: h, dst: dst, bps: bps})
		sort.SliceStable(r.events, func(i, j int) bool { return r.events[i].at < r.events[j].at })
		r.model.SetEPSLimit(h, dst, bps)
	}
}
