package ocs

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testbed/internal/sched"
	"testbed/simlab/reactormodel"
	"testbed/simlab/wire"
	"testbed/simlab/world"
	"time"
)

// GapDistribution is the law of a microsecond switch's reconfiguration
// gap: the time from the start of a night until the new circuits carry
// light. It is the REACToR model's law (a normal truncated to [Min, Max],
// default Mordia's per REACToR Fig. 5: mean 12 us, SD 1 us on [9, 15] us),
// so the emulator and the simulated fabric draw from one definition.
type GapDistribution = reactormodel.GapLaw

// DefaultGap is Mordia's gap per REACToR Fig. 5.
func DefaultGap() GapDistribution { return reactormodel.DefaultGap() }

func optMicros(o map[string]string, key string, def time.Duration) (time.Duration, error) {
	v, ok := o[key]
	if !ok || v == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("option %s=%q is not a non-negative number of microseconds", key, v)
	}
	return time.Duration(f * float64(time.Microsecond)), nil
}

// GapFromOptions reads a reconfiguration gap law from inventory options:
// reconfig_dist "truncnormal" (a normal truncated to [min, max]),
// reconfig_mean_us, reconfig_sd_us, reconfig_min_us, reconfig_max_us.
// Missing keys take DefaultGap's values. (reconfig_dist "mordia", the
// mechanism, is read by MicroOCSFromDevice.)
func GapFromOptions(o map[string]string) (GapDistribution, error) {
	if d := o["reconfig_dist"]; d != "" && d != "truncnormal" {
		return GapDistribution{}, fmt.Errorf("option reconfig_dist=%q: expected truncnormal (a law) or mordia (the mechanism)", d)
	}
	g := DefaultGap()
	var err error
	for _, f := range []struct {
		key string
		v   *time.Duration
	}{{"reconfig_mean_us", &g.Mean}, {"reconfig_sd_us", &g.SD}, {"reconfig_min_us", &g.Min}, {"reconfig_max_us", &g.Max}} {
		if *f.v, err = optMicros(o, f.key, *f.v); err != nil {
			return GapDistribution{}, err
		}
	}
	return g, g.Validate()
}

// MicroOCSOptions describe a simulated microsecond switch. Zero values take
// the defaults noted.
type MicroOCSOptions struct {
	Vendor, Model, Serial, Firmware string
	// Ports, inputs and outputs each (default 24: Mordia, REACToR §4).
	Ports int
	// Gap is the reconfiguration gap's law (default DefaultGap); with
	// Mechanism it is the mechanism's summary (reactormodel.Switching.Law).
	Gap GapDistribution
	// Mechanism: each night's gap comes from reactormodel.Switching, the
	// mirrors settling and the receivers relocking circuit by circuit,
	// instead of a draw from Gap; TempC is the switch's temperature
	// (default 25 C).
	Mechanism bool
	TempC     float64
	// MinSlot is the shortest slot, night included (default 40 us, the
	// bound REACToR §5.4 simulates with).
	MinSlot time.Duration
	// MinNight is the shortest night budget accepted (default Gap.Max: the
	// worst-case gap, so a circuit never comes up after its night).
	MinNight time.Duration
	// MaxSlots per schedule (default 128; §5.4 uses up to 75).
	MaxSlots int
	// MaxPeriod is the longest period accepted (default 100 ms).
	MaxPeriod time.Duration
	// NightLog is how many nights the switch's record holds (default 65536).
	NightLog int
	// TimeScale is switch-clock seconds per real second (default 1).
	TimeScale float64
	// Clock, if set, is the switch's clock (tests); otherwise it runs from
	// creation at TimeScale.
	Clock func() time.Duration
}

// OCSCircuit joins input In to output Out (both from 1).
type OCSCircuit struct {
	In  int `json:"in"`
	Out int `json:"out"`
}

// OCSSlot is one configuration and how long it is up after its night.
type OCSSlot struct {
	Duration time.Duration
	Circuits []OCSCircuit
}

// OCSSchedule is a cycle of slots repeated every Period; each slot begins
// with a night of length Night. It is the schedule as the REST API carries
// it, circuits in the order sent.
type OCSSchedule struct {
	Period time.Duration
	Night  time.Duration
	Slots  []OCSSlot

	ports *sched.Schedule // the same over the ports, once accepted
}

// onPorts is s as the schedulers write schedules, over the switch's ports:
// a slot's Perm[p-1] is the output, less one, that input p feeds, or
// sched.Dark. s must have passed checkSchedule.
func (s *OCSSchedule) onPorts(ports int) *sched.Schedule {
	out := &sched.Schedule{Period: s.Period, Delta: s.Night, Slots: make([]sched.Slot, 0, len(s.Slots))}
	for _, sl := range s.Slots {
		perm := make([]int, ports)
		for i := range perm {
			perm[i] = sched.Dark
		}
		for _, c := range sl.Circuits {
			perm[c.In-1] = c.Out - 1
		}
		out.Slots = append(out.Slots, sched.Slot{Duration: sl.Duration, Perm: perm})
	}
	return out
}

// OCSNight is one recorded reconfiguration: no circuit carried light from
// Start to End. Period and Slot are -1 for a configuration set by hand.
type OCSNight struct {
	Seq    uint64
	Period int64
	Slot   int
	Start  time.Duration
	End    time.Duration
}

// OCSError is a refusal: Kind "validation" (the request is wrong) or
// "conflict" (the switch's state does not allow it).
type OCSError struct {
	Kind     string
	Problems []string
}

func (e *OCSError) Error() string { return fmt.Sprintf("%s: %v", e.Kind, e.Problems) }

func ocsRefuse(kind, format string, args ...any) *OCSError {
	return &OCSError{Kind: kind, Problems: []string{fmt.Sprintf(format, args...)}}
}

// MicroOCS is a simulated microsecond optical circuit switch (Mordia-style):
// it runs schedules on its own clock, reconfigures at every slot boundary
// with a gap drawn from its GapDistribution, and records every night.
//
// Time advances lazily: every call first plays the schedule forward to the
// clock's present, drawing one gap per night in order from the switch's
// own seeded stream, so the gaps (and the record) depend only on the seed
// and the number of nights, never on when the switch is asked.
type MicroOCS struct {
	Name string
	opts MicroOCSOptions
	now  func() time.Duration

	mu     sync.Mutex
	rng    *rand.Rand
	loaded *OCSSchedule
	run    *ocsRun
	last   *ocsRun // the run before, stopped
	static *ocsLit
	ring   []OCSNight
	seq    uint64 // sequence number of the next night
	state  [2][]string
	// sw is the night's mechanism (opts.Mechanism), its phase draws from
	// rng like the law's.
	sw *reactormodel.Switching
}

type ocsLit struct {
	circuits      []OCSCircuit
	litAt, darkAt time.Duration // darkAt < 0: until further notice
	period        int64
	slot          int
}

type ocsRun struct {
	sched       *OCSSchedule
	start       time.Duration // when the first period begins
	periodStart time.Duration
	period      int64
	slot        int           // next slot to begin
	next        time.Duration // when it begins (the period's end once slot == len)
	started     bool
	cur         ocsLit
	pending     *OCSSchedule
	pendingAt   time.Duration
	// epochs: the schedule each stretch of periods ran, from period from on.
	epochs []ocsEpoch
}

type ocsEpoch struct {
	from  int64
	sched *OCSSchedule
}

// NewMicroOCS adds a simulated microsecond switch to the world.
func NewMicroOCS(w *world.World, name string, opts MicroOCSOptions) (*MicroOCS, error) {
	if opts.Ports == 0 {
		opts.Ports = 24
	}
	if opts.Ports < 1 {
		return nil, fmt.Errorf("%s: %d ports", name, opts.Ports)
	}
	var sw *reactormodel.Switching
	if opts.Mechanism {
		if opts.TempC == 0 {
			opts.TempC = 25
		}
		// The mirrors and clocks of this switch, drawn once from its own
		// stream (per port), apart from the nights' stream.
		sw = reactormodel.NewSwitching(opts.Ports, w.Stream("ocs/"+name+"/optics"), opts.TempC)
		if err := sw.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		opts.Gap = sw.Law()
	}
	if opts.Gap == (GapDistribution{}) {
		opts.Gap = DefaultGap()
	}
	if err := opts.Gap.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if opts.MinSlot == 0 {
		opts.MinSlot = 40 * time.Microsecond
	}
	if opts.MinNight == 0 {
		opts.MinNight = opts.Gap.Max
	}
	if opts.MaxSlots == 0 {
		opts.MaxSlots = 128
	}
	if opts.MaxPeriod == 0 {
		opts.MaxPeriod = 100 * time.Millisecond
	}
	if opts.NightLog <= 0 {
		opts.NightLog = 1 << 16
	}
	if opts.TimeScale <= 0 {
		opts.TimeScale = 1
	}
	if opts.Ports < 1 {
		return nil, fmt.Errorf("%s: %d ports", name, opts.Ports)
	}
	m := &MicroOCS{Name: name, opts: opts, rng: w.Stream("ocs/" + name), ring: make([]OCSNight, opts.NightLog), sw: sw}
	if opts.Clock != nil {
		m.now = opts.Clock
	} else {
		epoch, now, scale := w.Now(), w.Clock(), opts.TimeScale
		m.now = func() time.Duration { return time.Duration(float64(now().Sub(epoch)) * scale) }
	}
	for side := range m.state {
		m.state[side] = make([]string, opts.Ports)
		for i := range m.state[side] {
			m.state[side][i] = "enabled"
		}
	}
	return m, nil
}

// Options returns the switch's description.
func (m *MicroOCS) Options() MicroOCSOptions { return m.opts }

// Now is the switch's clock.
func (m *MicroOCS) Now() time.Duration { return m.now() }

// advance plays the schedule forward to now. Callers hold m.mu.
func (m *MicroOCS) advance(now time.Duration) {
	r := m.run
	for r != nil && r.next <= now {
		s := r.sched
		if r.slot == len(s.Slots) {
			r.period++
			r.periodStart, r.slot = r.next, 0
			if r.pending != nil && r.pendingAt <= r.periodStart {
				r.sched, r.pending, r.pendingAt = r.pending, nil, 0
				r.epochs = append(r.epochs, ocsEpoch{from: r.period, sched: r.sched})
			}
			continue
		}
		start := r.next
		var prev []OCSCircuit
		if r.started {
			prev = r.cur.circuits
		} else if m.static != nil {
			prev = m.static.circuits
		}
		gap := m.nightGap(prev, s.Slots[r.slot].Circuits)
		m.record(OCSNight{Period: r.period, Slot: r.slot, Start: start, End: start + gap})
		sl := s.Slots[r.slot]
		r.cur = ocsLit{circuits: sl.Circuits, litAt: start + gap, darkAt: start + s.Night + sl.Duration,
			period: r.period, slot: r.slot}
		r.started = true
		m.static = nil
		r.slot++
		if r.slot == len(s.Slots) {
			r.next = r.periodStart + s.Period
		} else {
			r.next = r.cur.darkAt
		}
	}
}

// nightGap is the gap of the night from circuits prev to next: the
// mechanism's (the slowest new circuit), or a draw from the law.
func (m *MicroOCS) nightGap(prev, next []OCSCircuit) time.Duration {
	if m.sw == nil {
		return m.opts.Gap.Draw(m.rng)
	}
	return m.sw.Night(m.rng, circuitPerm(prev, m.opts.Ports), circuitPerm(next, m.opts.Ports))
}

// circuitPerm is circuits as a permutation over the ports from 0:
// perm[in-1] = out-1, or sched.Dark.
func circuitPerm(cs []OCSCircuit, ports int) []int {
	perm := make([]int, ports)
	for i := range perm {
		perm[i] = sched.Dark
	}
	for _, c := range cs {
		if c.In >= 1 && c.In <= ports && c.Out >= 1 && c.Out <= ports {
			perm[c.In-1] = c.Out - 1
		}
	}
	return perm
}

// Switching is the mechanism of the switch's nights, or nil when they
// are drawn from a law.
func (m *MicroOCS) Switching() *reactormodel.Switching { return m.sw }

func (m *MicroOCS) record(n OCSNight) {
	n.Seq = m.seq
	m.ring[m.seq%uint64(len(m.ring))] = n
	m.seq++
}

func (m *MicroOCS) oldest() uint64 {
	if m.seq > uint64(len(m.ring)) {
		return m.seq - uint64(len(m.ring))
	}
	return 0
}

// lit is what carries light at now (after advance): the circuits, and
// whether the switch is in a night.
func (m *MicroOCS) lit(now time.Duration) ([]OCSCircuit, bool) {
	var l *ocsLit
	switch {
	case m.run != nil && m.run.started:
		l = &m.run.cur
	case m.static != nil:
		l = m.static
	default:
		return nil, false
	}
	if now < l.litAt {
		return nil, true
	}
	if l.darkAt >= 0 && now >= l.darkAt {
		return nil, false
	}
	var out []OCSCircuit
	for _, c := range l.circuits {
		if m.state[0][c.In-1] == "enabled" && m.state[1][c.Out-1] == "enabled" {
			out = append(out, c)
		}
	}
	return out, false
}

// Lit returns the circuits carrying light now and whether the switch is
// reconfiguring (in a night).
func (m *MicroOCS) Lit() (circuits []OCSCircuit, night bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.advance(now)
	return m.lit(now)
}

// check validates circuits against the switch's ports; where prefixes
// each problem.
func (m *MicroOCS) checkCircuits(where string, cs []OCSCircuit) []string {
	var ps []string
	ins, outs := map[int]int{}, map[int]int{}
	n := m.opts.Ports
	for _, c := range cs {
		if c.In < 1 || c.In > n {
			ps = append(ps, fmt.Sprintf("%sinput %d out of range 1..%d", where, c.In, n))
		}
		if c.Out < 1 || c.Out > n {
			ps = append(ps, fmt.Sprintf("%soutput %d out of range 1..%d", where, c.Out, n))
		}
		if o, dup := ins[c.In]; dup {
			ps = append(ps, fmt.Sprintf("%sinput %d appears twice (outputs %d, %d)", where, c.In, o, c.Out))
		}
		if i, dup := outs[c.Out]; dup {
			ps = append(ps, fmt.Sprintf("%soutput %d appears twice (inputs %d, %d)", where, c.Out, i, c.In))
		}
		ins[c.In], outs[c.Out] = c.Out, c.In
	}
	return ps
}

// checkSchedule applies the switch's constraints.
func (m *MicroOCS) checkSchedule(s *OCSSchedule) *OCSError {
	var ps []string
	o := m.opts
	if s.Period <= 0 || s.Period > o.MaxPeriod {
		ps = append(ps, fmt.Sprintf("period_ns %d outside 1..%d", s.Period, o.MaxPeriod))
	}
	if s.Night < o.MinNight {
		ps = append(ps, fmt.Sprintf("night_ns %d below the minimum %d", s.Night, o.MinNight))
	}
	if len(s.Slots) == 0 || len(s.Slots) > o.MaxSlots {
		ps = append(ps, fmt.Sprintf("%d slots: need 1..%d", len(s.Slots), o.MaxSlots))
	}
	var busy time.Duration
	for k, sl := range s.Slots {
		where := fmt.Sprintf("slots[%d]: ", k)
		if sl.Duration <= 0 {
			ps = append(ps, where+"duration_ns must be positive")
		}
		if s.Night+sl.Duration < o.MinSlot {
			ps = append(ps, fmt.Sprintf("%snight_ns + duration_ns = %d below the minimum slot %d", where, s.Night+sl.Duration, o.MinSlot))
		}
		ps = append(ps, m.checkCircuits(where, sl.Circuits)...)
		busy += s.Night + sl.Duration
	}
	if s.Period > 0 && busy > s.Period {
		ps = append(ps, fmt.Sprintf("sum(duration_ns) + slots * night_ns = %d exceeds period_ns %d", busy, s.Period))
	}
	if len(ps) > 0 {
		return &OCSError{Kind: "validation", Problems: ps}
	}
	return nil
}

// Load sets the schedule the next Start runs.
func (m *MicroOCS) Load(s OCSSchedule) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance(m.now())
	if m.run != nil {
		return ocsRefuse("conflict", "a schedule is %s: replace it with POST /v1/schedule/replace, or stop it first", m.stateLocked())
	}
	if err := m.checkSchedule(&s); err != nil {
		return err
	}
	s.ports = s.onPorts(m.opts.Ports)
	m.loaded = &s
	return nil
}

// Start arms the loaded schedule: at a time on the switch's clock, or at
// the next multiple of its period.
func (m *MicroOCS) Start(at time.Duration, nextPeriod bool) (time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.advance(now)
	switch {
	case m.loaded == nil:
		return 0, ocsRefuse("conflict", "no schedule loaded")
	case m.run != nil:
		return 0, ocsRefuse("conflict", "a schedule is already %s", m.stateLocked())
	}
	start := at
	if nextPeriod {
		w := m.loaded.Period
		start = (now/w + 1) * w
	} else if at <= now {
		return 0, ocsRefuse("validation", "at_ns %d is not in the future (now_ns %d)", at, now)
	}
	m.run = &ocsRun{sched: m.loaded, start: start, periodStart: start, next: start}
	m.run.epochs = []ocsEpoch{{from: 0, sched: m.loaded}}
	return start, nil
}

// Replace hands the running schedule its successor, which takes over at
// the first period boundary of the running schedule at or after at, and
// no earlier than the next one (at <= 0: the next one); that boundary is
// returned. A controller that knows when its demand changes arms the
// replacement ahead, so the change does not wait on its round trip.
func (m *MicroOCS) Replace(s OCSSchedule, at time.Duration) (time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance(m.now())
	if m.run == nil {
		return 0, ocsRefuse("conflict", "no schedule is running")
	}
	if err := m.checkSchedule(&s); err != nil {
		return 0, err
	}
	s.ports = s.onPorts(m.opts.Ports)
	r := m.run
	m.loaded = &s
	b := r.periodStart
	if r.started {
		b += r.sched.Period
	}
	if at > b {
		b += (at - b + r.sched.Period - 1) / r.sched.Period * r.sched.Period
	}
	if !r.started && b == r.periodStart {
		r.sched, r.pending, r.pendingAt = &s, nil, 0
		r.epochs = []ocsEpoch{{from: 0, sched: &s}}
		return r.periodStart, nil
	}
	r.pending, r.pendingAt = &s, b
	return r.pendingAt, nil
}

// PeriodSchedule is the schedule (over the switch's ports) that period k
// of the run started at start played, from the switch's own record of its
// replacements; false for a period the switch has not reached, or a run
// it no longer remembers (only the current and the one before are kept).
func (m *MicroOCS) PeriodSchedule(start time.Duration, k int64) (*sched.Schedule, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance(m.now())
	r := m.run
	if r == nil || r.start != start {
		r = m.last
	}
	if r == nil || r.start != start || !r.started || k < 0 || k > r.period {
		return nil, false
	}
	var s *OCSSchedule
	for _, e := range r.epochs {
		if e.from <= k {
			s = e.sched
		}
	}
	if s == nil || s.ports == nil {
		return nil, false
	}
	return s.ports, true
}

// Stop ends the run at once; every circuit goes dark.
func (m *MicroOCS) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance(m.now())
	m.last, m.run = m.run, nil
}

// Dark stops any run and drops the loaded schedule and any configuration:
// the switch is idle, as it was powered on. A stopped schedule left loaded
// is state a later start would run, not the dark a run's undo promises.
func (m *MicroOCS) Dark() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance(m.now())
	m.last, m.run, m.static, m.loaded = m.run, nil, nil, nil
}

// SetConfiguration holds cs until told otherwise; the change costs a night.
func (m *MicroOCS) SetConfiguration(cs []OCSCircuit) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.advance(now)
	if m.run != nil {
		return ocsRefuse("conflict", "a schedule is %s: stop it before setting a configuration", m.stateLocked())
	}
	if ps := m.checkCircuits("", cs); len(ps) > 0 {
		return &OCSError{Kind: "validation", Problems: ps}
	}
	if len(cs) == 0 {
		m.static = nil
		return nil
	}
	var prev []OCSCircuit
	if m.static != nil {
		prev = m.static.circuits
	}
	gap := m.nightGap(prev, cs)
	m.record(OCSNight{Period: -1, Slot: -1, Start: now, End: now + gap})
	m.static = &ocsLit{circuits: append([]OCSCircuit(nil), cs...), litAt: now + gap, darkAt: -1, period: -1, slot: -1}
	return nil
}

func (m *MicroOCS) stateLocked() string {
	switch {
	case m.run != nil && m.run.started:
		return "running"
	case m.run != nil:
		return "armed"
	case m.loaded != nil:
		return "loaded"
	}
	return "idle"
}

// OCSStatus is the schedule state. OnPorts is Schedule as the schedulers
// write schedules (sched.Schedule over the switch's ports, Perm[p-1] the
// output input p feeds, less one).
type OCSStatus struct {
	State     string
	Schedule  *OCSSchedule
	OnPorts   *sched.Schedule
	Start     time.Duration
	Period    int64
	Slot      int
	ReplaceAt time.Duration
	Now       time.Duration
}

// Status reports what the switch is doing.
func (m *MicroOCS) Status() OCSStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.advance(now)
	st := OCSStatus{State: m.stateLocked(), Schedule: m.loaded, Now: now}
	if r := m.run; r != nil {
		st.Schedule, st.Start, st.Period, st.ReplaceAt = r.sched, r.start, r.period, r.pendingAt
		if r.started {
			st.Slot = r.cur.slot
		}
	}
	if st.Schedule != nil {
		st.OnPorts = st.Schedule.ports
	}
	return st
}

// Nights returns up to limit recorded nights that have ended, from
// sequence number since on, with the next sequence number to ask for and
// the oldest still held.
func (m *MicroOCS) Nights(since uint64, limit int) (nights []OCSNight, next, oldest uint64, now time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now = m.now()
	m.advance(now)
	oldest = m.oldest()
	// A cursor beyond the last record is brought back to it: answering
	// next_seq = since would make the client skip the records numbered
	// between the two when they come.
	next = min(max(since, oldest), m.seq)
	for ; next < m.seq && len(nights) < limit; next++ {
		n := m.ring[next%uint64(len(m.ring))]
		if n.End > now {
			break
		}
		nights = append(nights, n)
	}
	return nights, next, oldest, now
}

// SetPortState marks a port "enabled", "disabled" or "failed"; circuits
// through a port that is not enabled carry no light.
func (m *MicroOCS) SetPortState(out bool, port int, state string) error {
	if port < 1 || port > m.opts.Ports {
		return fmt.Errorf("%s: no port %d", m.Name, port)
	}
	if state != "enabled" && state != "disabled" && state != "failed" {
		return fmt.Errorf("%s: port state %q", m.Name, state)
	}
	side := 0
	if out {
		side = 1
	}
	m.mu.Lock()
	m.state[side][port-1] = state
	m.mu.Unlock()
	return nil
}

// OCSPort is one port's state and what carries light through it now.
type OCSPort struct {
	Side  string `json:"side"`
	Port  int    `json:"port"`
	State string `json:"state"`
	Peer  int    `json:"peer"`
}

// Ports reports every port, inputs then outputs.
func (m *MicroOCS) Ports() []OCSPort {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.advance(now)
	lit, _ := m.lit(now)
	in, out := map[int]int{}, map[int]int{}
	for _, c := range lit {
		in[c.In], out[c.Out] = c.Out, c.In
	}
	var ps []OCSPort
	for i := 1; i <= m.opts.Ports; i++ {
		ps = append(ps, OCSPort{Side: "in", Port: i, State: m.state[0][i-1], Peer: in[i]})
	}
	for i := 1; i <= m.opts.Ports; i++ {
		ps = append(ps, OCSPort{Side: "out", Port: i, State: m.state[1][i-1], Peer: out[i]})
	}
	return ps
}

// MordiaServer serves a MicroOCS over the REST API of
// instruments/ocs/openapi.yaml (the contract the mordia-rest driver keeps
// to). Errors are {"code", "kind", "errors": [...]} with 400 (validation),
// 409 (conflict) or 500 (an injected device error). Besides the per-request
// Faults, HangAfterPeriods makes the whole control plane stop answering
// once the running schedule reaches a given period, while the data plane
// keeps cycling: a controller that hangs mid-schedule.
type MordiaServer struct {
	ocs    *MicroOCS
	faults *wire.Faults

	mu        sync.Mutex
	hangAfter int64 // -1: never
	hung      bool
	srv       *http.Server
	ln        net.Listener
	done      chan struct{}
	closing   chan struct{}
	closeOnce sync.Once
}

// NewMordiaServer serves m; faults may be nil.
func NewMordiaServer(m *MicroOCS, faults *wire.Faults) *MordiaServer {
	if faults == nil {
		faults = &wire.Faults{}
	}
	return &MordiaServer{ocs: m, faults: faults, hangAfter: -1, closing: make(chan struct{})}
}

// MordiaRoutes lists the routes the server serves, "METHOD /path".
func MordiaRoutes() []string {
	return []string{
		"GET /v1/system", "GET /v1/clock",
		"GET /v1/configuration", "PUT /v1/configuration", "POST /v1/dark",
		"GET /v1/schedule", "PUT /v1/schedule",
		"POST /v1/schedule/start", "POST /v1/schedule/replace", "POST /v1/schedule/stop",
		"GET /v1/nights", "GET /v1/ports",
	}
}

// HangAfterPeriods makes the server stop answering every request once the
// running schedule has reached period n (0: as soon as it runs); n < 0
// cancels. Resume undoes a hang.
func (s *MordiaServer) HangAfterPeriods(n int64) {
	s.mu.Lock()
	s.hangAfter = n
	s.mu.Unlock()
}

// Resume makes a hung server answer again.
func (s *MordiaServer) Resume() {
	s.mu.Lock()
	s.hung, s.hangAfter = false, -1
	s.mu.Unlock()
}

func (s *MordiaServer) hanging() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hung {
		return true
	}
	if s.hangAfter < 0 {
		return false
	}
	st := s.ocs.Status()
	if st.State == "running" && st.Period >= s.hangAfter {
		s.hung = true
	}
	return s.hung
}

// Handler is the API as an http.Handler.
func (s *MordiaServer) Handler() http.Handler {
	mux := http.NewServeMux()
	h := map[string]func(*http.Request) (int, any){
		"GET /v1/system":            s.system,
		"GET /v1/clock":             s.clock,
		"GET /v1/configuration":     s.getConfiguration,
		"PUT /v1/configuration":     s.putConfiguration,
		"POST /v1/dark":             s.dark,
		"GET /v1/schedule":          s.getSchedule,
		"PUT /v1/schedule":          s.putSchedule,
		"POST /v1/schedule/start":   s.start,
		"POST /v1/schedule/replace": s.replace,
		"POST /v1/schedule/stop":    s.stop,
		"GET /v1/nights":            s.nights,
		"GET /v1/ports":             s.ports,
	}
	for _, r := range MordiaRoutes() {
		mux.HandleFunc(r, s.handle(h[r]))
	}
	// A known path with another method is 405, anything else 404, each with
	// its own kind (openapi.yaml, Error).
	allow := map[string][]string{}
	for _, r := range MordiaRoutes() {
		method, path, _ := strings.Cut(r, " ")
		allow[path] = append(allow[path], method)
	}
	for path, methods := range allow {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", strings.Join(methods, ", "))
			wire.WriteJSON(w, http.StatusMethodNotAllowed, mordiaError{Code: 405, Kind: "method_not_allowed",
				Errors: []string{fmt.Sprintf("%s %s: allowed methods are %s", r.Method, r.URL.Path, strings.Join(methods, ", "))}})
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		wire.WriteJSON(w, http.StatusNotFound, mordiaError{Code: 404, Kind: "not_found", Errors: []string{fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)}})
	})
	return mux
}

// Start listens on addr (e.g. "127.0.0.1:0").
func (s *MordiaServer) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return nil
}

// Addr is the base URL: http://127.0.0.1:port.
func (s *MordiaServer) Addr() string { return "http://" + s.ln.Addr().String() }

// Close shuts the server down; stalled requests are released.
func (s *MordiaServer) Close() error {
	s.closeOnce.Do(func() { close(s.closing) })
	if s.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	<-s.done
	return err
}

type mordiaError struct {
	Code   int      `json:"code"`
	Kind   string   `json:"kind"`
	Errors []string `json:"errors"`
}

func (s *MordiaServer) handle(h func(*http.Request) (int, any)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.faults.TakeDrop() {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}
		if s.faults.TakeStall() || s.hanging() {
			select {
			case <-r.Context().Done():
			case <-s.closing:
			}
			return
		}
		if d := s.faults.Delay(); d > 0 {
			time.Sleep(d)
		}
		if r.Method != http.MethodGet {
			if f, hit := s.faults.TakeFailure(); hit {
				wire.WriteJSON(w, http.StatusInternalServerError, mordiaError{Code: f.Code, Kind: "internal", Errors: []string{f.Message}})
				return
			}
		}
		code, body := h(r)
		if s.faults.TakeGarble() {
			w.WriteHeader(http.StatusOK)
			w.Write([]byte("{\x00garbled"))
			return
		}
		wire.WriteJSON(w, code, body)
	}
}

func refusal(err error) (int, any) {
	e, ok := err.(*OCSError)
	if !ok {
		return http.StatusInternalServerError, mordiaError{Code: 500, Kind: "internal", Errors: []string{err.Error()}}
	}
	code := http.StatusBadRequest
	if e.Kind == "conflict" {
		code = http.StatusConflict
	}
	return code, mordiaError{Code: code, Kind: e.Kind, Errors: e.Problems}
}

// decode reads a JSON body strictly: unknown fields are refused, as the
// API's schemas allow no additional properties.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return ocsRefuse("validation", "body does not parse: %v", err)
	}
	return nil
}

type jsSchedule struct {
	PeriodNs *int64 `json:"period_ns"`
	NightNs  *int64 `json:"night_ns"`
	Slots    []struct {
		DurationNs *int64       `json:"duration_ns"`
		Circuits   []OCSCircuit `json:"circuits"`
	} `json:"slots"`
}

func (js *jsSchedule) schedule() (OCSSchedule, error) {
	if js.PeriodNs == nil || js.NightNs == nil || js.Slots == nil {
		return OCSSchedule{}, ocsRefuse("validation", "a schedule needs period_ns, night_ns and slots")
	}
	s := OCSSchedule{Period: time.Duration(*js.PeriodNs), Night: time.Duration(*js.NightNs)}
	for k, sl := range js.Slots {
		if sl.DurationNs == nil || sl.Circuits == nil {
			return OCSSchedule{}, ocsRefuse("validation", "slots[%d] needs duration_ns and circuits", k)
		}
		s.Slots = append(s.Slots, OCSSlot{Duration: time.Duration(*sl.DurationNs), Circuits: sl.Circuits})
	}
	return s, nil
}

func scheduleOut(s *OCSSchedule) map[string]any {
	slots := make([]map[string]any, 0, len(s.Slots))
	for _, sl := range s.Slots {
		cs := sl.Circuits
		if cs == nil {
			cs = []OCSCircuit{}
		}
		slots = append(slots, map[string]any{"duration_ns": int64(sl.Duration), "circuits": cs})
	}
	return map[string]any{"period_ns": int64(s.Period), "night_ns": int64(s.Night), "slots": slots}
}

func (s *MordiaServer) system(r *http.Request) (int, any) {
	o := s.ocs.opts
	return http.StatusOK, map[string]any{"vendor": o.Vendor, "model": o.Model, "serial": o.Serial, "firmware": o.Firmware,
		"ports": o.Ports, "min_slot_ns": int64(o.MinSlot), "min_night_ns": int64(o.MinNight), "max_slots": o.MaxSlots,
		"max_period_ns": int64(o.MaxPeriod), "now_ns": int64(s.ocs.Now())}
}

func (s *MordiaServer) clock(r *http.Request) (int, any) {
	return http.StatusOK, map[string]any{"now_ns": int64(s.ocs.Now())}
}

func (s *MordiaServer) configurationState() map[string]any {
	m := s.ocs
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.advance(now)
	lit, night := m.lit(now)
	if lit == nil {
		lit = []OCSCircuit{}
	}
	sort.Slice(lit, func(i, j int) bool { return lit[i].In < lit[j].In })
	return map[string]any{"circuits": lit, "night": night, "now_ns": int64(now)}
}

func (s *MordiaServer) getConfiguration(r *http.Request) (int, any) {
	return http.StatusOK, s.configurationState()
}

func (s *MordiaServer) putConfiguration(r *http.Request) (int, any) {
	var body struct {
		Circuits []OCSCircuit `json:"circuits"`
	}
	if err := decode(r, &body); err != nil {
		return refusal(err)
	}
	if body.Circuits == nil {
		return refusal(ocsRefuse("validation", "circuits missing"))
	}
	if err := s.ocs.SetConfiguration(body.Circuits); err != nil {
		return refusal(err)
	}
	return http.StatusOK, s.configurationState()
}

func (s *MordiaServer) scheduleState() map[string]any {
	st := s.ocs.Status()
	out := map[string]any{"state": st.State, "now_ns": int64(st.Now)}
	if st.Schedule != nil {
		out["schedule"] = scheduleOut(st.Schedule)
	}
	if st.State == "armed" || st.State == "running" {
		out["start_ns"], out["period"], out["slot"] = int64(st.Start), st.Period, st.Slot
		if st.ReplaceAt > 0 {
			out["replace_at_ns"] = int64(st.ReplaceAt)
		}
	}
	return out
}

func (s *MordiaServer) dark(r *http.Request) (int, any) {
	s.ocs.Dark()
	return http.StatusOK, s.scheduleState()
}

func (s *MordiaServer) getSchedule(r *http.Request) (int, any) {
	return http.StatusOK, s.scheduleState()
}

func (s *MordiaServer) putSchedule(r *http.Request) (int, any) {
	var js jsSchedule
	if err := decode(r, &js); err != nil {
		return refusal(err)
	}
	sch, err := js.schedule()
	if err != nil {
		return refusal(err)
	}
	if err := s.ocs.Load(sch); err != nil {
		return refusal(err)
	}
	return http.StatusOK, s.scheduleState()
}

func (s *MordiaServer) start(r *http.Request) (int, any) {
	var body struct {
		AtNs       *int64 `json:"at_ns"`
		NextPeriod bool   `json:"next_period"`
	}
	if err := decode(r, &body); err != nil {
		return refusal(err)
	}
	if (body.AtNs == nil) == !body.NextPeriod {
		return refusal(ocsRefuse("validation", "give exactly one of at_ns and next_period"))
	}
	var at time.Duration
	if body.AtNs != nil {
		at = time.Duration(*body.AtNs)
	}
	start, err := s.ocs.Start(at, body.NextPeriod)
	if err != nil {
		return refusal(err)
	}
	return http.StatusOK, map[string]any{"start_ns": int64(start)}
}

func (s *MordiaServer) replace(r *http.Request) (int, any) {
	var js jsSchedule
	if err := decode(r, &js); err != nil {
		return refusal(err)
	}
	sch, err := js.schedule()
	if err != nil {
		return refusal(err)
	}
	var at time.Duration
	if v := r.URL.Query().Get("at_ns"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return refusal(ocsRefuse("validation", "at_ns=%q is not a time in nanoseconds", v))
		}
		at = time.Duration(n)
	}
	at, err = s.ocs.Replace(sch, at)
	if err != nil {
		return refusal(err)
	}
	return http.StatusOK, map[string]any{"effective_ns": int64(at)}
}

func (s *MordiaServer) stop(r *http.Request) (int, any) {
	s.ocs.Stop()
	return http.StatusOK, s.scheduleState()
}

const maxNightsPage = 4096

func (s *MordiaServer) nights(r *http.Request) (int, any) {
	q := r.URL.Query()
	var since uint64
	limit := maxNightsPage
	if v := q.Get("since"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return refusal(ocsRefuse("validation", "since=%q is not a sequence number", v))
		}
		since = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxNightsPage {
			return refusal(ocsRefuse("validation", "limit=%q is not in 1..%d", v, maxNightsPage))
		}
		limit = n
	}
	ns, next, oldest, now := s.ocs.Nights(since, limit)
	out := make([]map[string]any, 0, len(ns))
	for _, n := range ns {
		out = append(out, map[string]any{"seq": n.Seq, "period": n.Period, "slot": n.Slot, "start_ns": int64(n.Start), "end_ns": int64(n.End)})
	}
	return http.StatusOK, map[string]any{"nights": out, "next_seq": next, "oldest_seq": oldest, "now_ns": int64(now)}
}

func (s *MordiaServer) ports(r *http.Request) (int, any) {
	return http.StatusOK, map[string]any{"ports": s.ocs.Ports()}
}
