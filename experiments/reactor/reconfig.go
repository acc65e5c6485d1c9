package reactor

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"testbed/hostagent"
	"testbed/instruments/ocs"
	"testbed/internal/sched"
	o "testbed/orchestrator"
	"testbed/results"
)

// ReconfigName is reactor-reconfig's name on the command line.
const ReconfigName = "reactor-reconfig"

// Reconfig is the reactor-reconfig recipe (REACToR §5.2).
type Reconfig struct{}

// NewReconfig returns the recipe.
func NewReconfig() *Reconfig { return &Reconfig{} }

// Meta implements orchestrator.Recipe.
func (*Reconfig) Meta() o.Meta {
	return o.Meta{
		Name:        ReconfigName,
		Version:     "1.1.0",
		Summary:     "all-to-all TCP under a round-robin circuit schedule, and a workload change mid-period (REACToR §5.2)",
		Description: reconfigDescription,
		Params:      reconfigParams(),
		// §5.2: duty cycle, goodput and what a reconfiguration costs.
		Headlines: []string{"duty_cycle", "goodput_gbps_total", "lost_us_per_slot", "reconfig_gap_us_max"},
	}
}

const reconfigDescription = `The hosts of a hybrid ToR (default: the first 8 by switch port of the lab's REACToR) each get a
traffic class per other host and an EPS class limited to eps_gbps. The switch plays §5.2's
round robin: hosts-1 configurations per period, configuration k joining host i to host i+k,
each slot period/(hosts-1) long including a night of night; with orders > 1 the switch
cycles that many periods, each with the slots in a different order (the prototype changed
the permutation every period). Every host streams a TCP-like bulk flow to every other host:
data on circuits, ACKs through the packet switch. After warmup periods the receivers count
goodput for periods periods, and timestamp what they receive. data/flows.csv has each flow's goodput, data/slots.csv every
circuit of the measured periods as the switch recorded it (start, end, the night's gap) with
the payload its source sent in it. The summary gives the duty cycle measured from the
traffic (duty_cycle: the time circuits carried data over elapsed time, from the receivers'
arrival timestamps, as the hosts report them in bursts), beside the schedule's figure
(duty_cycle_schedule: from the end of each night budget to the end of its slot, over port
time, as the switch recorded the slots) and the senders' (duty_cycle_windows: the time
their classes were unpaused); the difference is what the PFC pause and unpause delays and
idle classes cost (lost_us_per_slot). Then the total goodput and the gaps' mean and
maximum.

With transition, a second run splits the hosts into two halves: first each host streams to
the others of its half (hosts/2-1 configurations per period), then, in the middle of period
transition_periods, to the hosts of the other half (hosts/2 configurations). The recipe, as
controller with a demand oracle, arms the switch with the new schedule ahead, for the first
period boundary after the change (handed over at the change, it would wait on the control
host's round trip to the switch, longer than the half period left on a loaded host); the
switch takes it at that boundary, or at the next it can if the arming came late. data/transition.csv has
every circuit of that run; the summary says when the change happened, when the switch's
record shows the new schedule, and how many period boundaries late that was (0: the next
one, as in the prototype). The switch is put dark and the hosts' classes removed at the
end or on abort.`

func reconfigParams() []o.ParamSpec {
	return []o.ParamSpec{
		{Name: "ocs", Type: o.TypeString, Default: "", Description: "the switch (default: the one the REACToR hosts are on)"},
		{Name: "reactor", Type: o.TypeString, Default: "", Description: "the hosts' REACToR (their option reactor; default: any)"},
		{Name: "hosts", Type: o.TypeInt, Default: int64(8), Min: o.Bound(3), Max: o.Bound(128), Description: "hosts, the first by switch port"},
		{Name: "period", Type: o.TypeDuration, Default: 1500 * time.Microsecond, Min: o.Bound(1e-5), Max: o.Bound(0.1), Description: "scheduling period W (§5.2: 1.5 ms)"},
		{Name: "night", Type: o.TypeDuration, Default: 30 * time.Microsecond, Min: o.Bound(1e-7), Max: o.Bound(0.01), Description: "night budget delta per slot (§4: 30 us)"},
		{Name: "orders", Type: o.TypeInt, Default: int64(4), Min: o.Bound(1), Max: o.Bound(64), Description: "periods the switch cycles, each with its slots in another order"},
		{Name: "warmup", Type: o.TypeInt, Default: int64(10), Min: o.Bound(0), Max: o.Bound(100000), Description: "periods before measuring"},
		{Name: "periods", Type: o.TypeInt, Default: int64(100), Min: o.Bound(1), Max: o.Bound(1000000), Description: "periods measured"},
		{Name: "eps_gbps", Type: o.TypeFloat, Unit: "Gb/s", Default: 1.0, Min: o.Bound(0.001), Max: o.Bound(1600), Description: "each host's EPS rate (§4: 1 Gb/s beside 10 Gb/s circuits)"},
		{Name: "start_margin", Type: o.TypeDuration, Default: 200 * time.Millisecond, Min: o.Bound(0.001), Max: o.Bound(60), Description: "how far ahead of the switch's clock a run is started, to set up its flows"},
		{Name: "transition", Type: o.TypeBool, Default: true, Description: "also run the workload change of §5.2"},
		{Name: "transition_periods", Type: o.TypeInt, Default: int64(6), Min: o.Bound(2), Max: o.Bound(10000), Description: "periods before the change (it happens in the middle of the last) and after it"},
	}
}

// ReconfigTables are reactor-reconfig's tables.
func ReconfigTables() []results.Table {
	circuit := []results.Field{
		{Name: "period", Type: "integer", Description: "scheduling period from the run's start, from 0"},
		{Name: "slot", Type: "integer", Description: "slot of the period, from 0"},
		{Name: "src", Type: "string", Description: "host the circuit carries from"},
		{Name: "dst", Type: "string", Description: "host it carries to"},
		{Name: "start_us", Type: "number", Unit: "us", Description: "when the slot's night began, from the run's start (the switch's record)"},
		{Name: "end_us", Type: "number", Unit: "us", Description: "when the slot's light ended"},
		{Name: "gap_us", Type: "number", Unit: "us", Description: "the night's reconfiguration gap as the switch recorded it"},
		{Name: "bytes", Type: "integer", Unit: "B", Description: "payload the source sent over the circuit (empty where the host cannot tell)"},
	}
	return []results.Table{
		{Name: "flows", Title: "Goodput of every flow", Description: "Payload the receiver counted over the measured periods.",
			Fields: []results.Field{
				{Name: "src", Type: "string", Description: "sending host"},
				{Name: "dst", Type: "string", Description: "receiving host"},
				{Name: "goodput_gbps", Type: "number", Unit: "Gb/s", Description: "payload received over the measured periods"},
			},
			Figures: []results.Figure{
				{Name: "goodput-per-host", Title: "Goodput each host sent, over all its flows",
					Caption: "Per sending host, the sum of its flows' goodput as the receivers counted it.",
					Kind:    results.Bar, X: "src", Y: "goodput_gbps", Aggregate: "sum",
					XLabel: "Sending host", YLabel: "Goodput (Gb/s)"},
				{Name: "goodput-per-flow", Title: "Goodput of every flow, by receiver",
					Kind: results.Bar, X: "dst", Y: "goodput_gbps", Series: []string{"src"}, Legend: "from {src}",
					XLabel: "Receiving host", YLabel: "Goodput (Gb/s)"},
			}},
		{Name: "slots", Title: "Circuits of the measured periods", Description: "One row per circuit per slot.", Fields: circuit,
			Figures: []results.Figure{{Name: "payload-per-circuit", Title: "Payload per circuit",
				Kind: results.Scatter, X: "start_us", Y: "bytes", XScale: 1e-3, YScale: 1e-3, Series: []string{"dst"}, Legend: "to {dst}",
				XLabel: "Start of the slot's night (ms)", YLabel: "Payload over the circuit (KB)"}}},
		{Name: "transition", Title: "Circuits around the workload change", Description: "One row per circuit per slot of the transition run; configs is the number of configurations in the period.",
			Fields: append([]results.Field{{Name: "configs", Type: "integer", Description: "configurations in the period"}}, circuit...),
			Figures: []results.Figure{{Name: "payload-around-change", Title: "Payload per circuit around the workload change",
				Kind: results.Scatter, X: "start_us", Y: "bytes", XScale: 1e-3, YScale: 1e-3, Series: []string{"dst"}, Legend: "to {dst}",
				XLabel: "Start of the slot's night (ms)", YLabel: "Payload over the circuit (KB)"}}},
	}
}

// ReconfigSummary is summary.json.
type ReconfigSummary struct {
	Partial  bool    `json:"partial"`
	Hosts    int     `json:"hosts"`
	PeriodUS float64 `json:"period_us"`
	NightUS  float64 `json:"night_us"`
	// SlotUS is each configuration's length, night included.
	SlotUS  float64 `json:"slot_us"`
	Slots   int     `json:"slots"`
	Orders  int     `json:"orders"`
	EPSGbps float64 `json:"eps_gbps"`
	// DutyCycle is measured from the traffic: the time circuits carried
	// data over elapsed time, from the receivers' timestamps (the union
	// of each receiver's arrival bursts, summed over receivers, over
	// hosts x the measured interval).
	DutyCycle float64 `json:"duty_cycle"`
	// DutyCycleSchedule is the schedule's figure: circuit time from the
	// end of each night budget to the end of its slot over port time, as
	// the switch recorded its slots ((214.3-30)/214.3 for §5.2).
	DutyCycleSchedule float64 `json:"duty_cycle_schedule"`
	// DutyCycleWindows is the senders' view: the time their classes were
	// unpaused for a circuit (PFC unpause to pause taking effect), over
	// port time. Schedule minus windows is what the PFC delays cost;
	// windows minus traffic is time a class was open with nothing to send.
	DutyCycleWindows float64 `json:"duty_cycle_windows"`
	// LostUSPerSlot is the schedule's lit time per circuit that carried
	// no data, in us: (schedule - traffic) x period / slots.
	LostUSPerSlot float64 `json:"lost_us_per_slot"`
	// GoodputGbpsTotal is the payload all receivers counted; the per-host
	// extremes show how evenly it is shared.
	GoodputGbpsTotal   float64 `json:"goodput_gbps_total"`
	GoodputGbpsHostMin float64 `json:"goodput_gbps_host_min"`
	GoodputGbpsHostMax float64 `json:"goodput_gbps_host_max"`
	ReconfigGapUSMean  float64 `json:"reconfig_gap_us_mean"`
	ReconfigGapUSMax   float64 `json:"reconfig_gap_us_max"`
	Nights             int     `json:"nights"`
	// Transition is the workload change, when it ran.
	Transition *Transition `json:"transition,omitempty"`
}

// Transition is what the workload change showed.
type Transition struct {
	ConfigsBefore int `json:"configs_before"`
	ConfigsAfter  int `json:"configs_after"`
	// ChangeUS is when the workload changed, FollowedUS when the switch's
	// record first shows a period of the new schedule, both from the
	// run's start; DelayUS the difference.
	ChangeUS   float64 `json:"change_us"`
	FollowedUS float64 `json:"followed_us"`
	DelayUS    float64 `json:"delay_us"`
	// PeriodsLate counts the boundaries between the change and the one
	// the schedule followed at (0: the next boundary).
	PeriodsLate int `json:"periods_late"`
	// GoodputGbpsBefore and After are the total goodput of the two
	// workloads: over the periods before the change (the first excepted),
	// and over the last half of the periods after it.
	GoodputGbpsBefore float64 `json:"goodput_gbps_before"`
	GoodputGbpsAfter  float64 `json:"goodput_gbps_after"`
}

type reconfigState struct {
	mu sync.Mutex
	s  ReconfigSummary
}

// Plan implements Recipe.
func (r *Reconfig) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	lab, binds, err := Bind(pc, p.String("ocs"), p.String("reactor"), int(p.Int("hosts")))
	if err != nil {
		return nil, err
	}
	n := len(lab.Hosts)
	W, night := p.Duration("period"), p.Duration("night")
	eps := p.Float("eps_gbps") * 1e9
	orders := int(p.Int("orders"))
	for _, h := range lab.Hosts {
		if eps > h.EPSBps || eps >= h.LinkBps {
			return nil, o.Inputf("eps_gbps %g: %s's packet-switch port carries %g Gb/s and its link %g Gb/s; the EPS must be slower than the link", p.Float("eps_gbps"), h.Name, h.EPSBps/1e9, h.LinkBps/1e9)
		}
	}
	if (W-time.Duration(n-1)*night)/time.Duration(n-1) <= 0 {
		return nil, o.Inputf("%d configurations of a %v night do not fit in a %v period", n-1, night, W)
	}
	if p.Bool("transition") && n%2 != 0 {
		return nil, o.Inputf("transition: %d hosts do not split into two halves; use an even number of hosts or transition=false", n)
	}
	st := &reconfigState{s: ReconfigSummary{Hosts: n, PeriodUS: us(W), NightUS: us(night), Slots: n - 1, Orders: orders, EPSGbps: eps / 1e9,
		SlotUS: us(W) / float64(n-1)}}
	plan := &o.Plan{Bindings: binds, Tables: ReconfigTables(),
		Summary: func(partial bool) (any, error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			s := st.s
			s.Partial = partial
			return s, nil
		}}
	var run *Run
	plan.Steps = append(plan.Steps, &o.Step{
		Name: fmt.Sprintf("%d hosts: classes and agents", n), Action: "prepare-hosts", Devices: lab.Devices(),
		Settings: []o.Setting{{Device: lab.OCS, Name: "after", Value: "dark"}, {Device: "hosts", Name: "eps_class", Value: eps / 1e9, Unit: "Gb/s"}},
		Run: func(ctx context.Context, rc *o.RunContext) error {
			var err error
			if run, err = Open(ctx, rc, lab); err != nil {
				return err
			}
			return run.Setup(ctx, eps)
		},
	})
	plan.Steps = append(plan.Steps, &o.Step{
		Name: fmt.Sprintf("all-to-all, %d x %v slots per %v", n-1, W/time.Duration(n-1), W), Action: "all-to-all", Devices: lab.Devices(),
		Settings: []o.Setting{
			{Device: lab.OCS, Name: "schedule", Value: fmt.Sprintf("round robin of %d configurations, %v night, %d slot orders", n-1, night, orders)},
			{Device: "hosts", Name: "flows", Value: fmt.Sprintf("bulk to every other host, %d warm-up + %d measured periods", p.Int("warmup"), p.Int("periods"))},
		},
		Run: func(ctx context.Context, rc *o.RunContext) error {
			if run == nil {
				return o.Skip("the hosts were not prepared")
			}
			return allToAll(ctx, run, st, W, night, orders, int(p.Int("warmup")), int(p.Int("periods")), p.Duration("start_margin"), rc.Seed)
		},
	})
	if p.Bool("transition") {
		k := int(p.Int("transition_periods"))
		plan.Steps = append(plan.Steps, &o.Step{
			Name: "transition: group-internal to cross-talk", Action: "transition", Devices: lab.Devices(),
			Settings: []o.Setting{{Device: lab.OCS, Name: "schedule", Value: fmt.Sprintf("%d configurations, replaced mid-period %d by %d configurations", n/2-1, k-1, n/2)}},
			Run: func(ctx context.Context, rc *o.RunContext) error {
				if run == nil {
					return o.Skip("the hosts were not prepared")
				}
				return transition(ctx, run, st, W, night, k, p.Duration("start_margin"))
			},
		})
	}
	return plan, nil
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// fill gives a sub-period's last slot what rounding left, so that the
// slots fill the period exactly.
func fill(s sched.Schedule) sched.Schedule {
	out := s
	out.Slots = slices.Clone(s.Slots)
	if n := len(out.Slots); n > 0 {
		out.Slots[n-1].Duration += s.Period - s.Busy()
	}
	return out
}

// cycle is the switch schedule that plays s in orders periods, the slots
// of period p > 0 in an order drawn from seed.
func (r *Run) cycle(s sched.Schedule, orders int, seed uint64) (sched.Schedule, [][]int) {
	s = fill(s)
	var all sched.Schedule
	all.Delta, all.Period = s.Delta, s.Period*time.Duration(orders)
	var perms [][]int
	for p := range orders {
		idx := make([]int, len(s.Slots))
		for i := range idx {
			idx[i] = i
		}
		if p > 0 {
			rand.New(rand.NewPCG(seed, uint64(p))).Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		}
		for _, k := range idx {
			all.Slots = append(all.Slots, s.Slots[k])
		}
		perms = append(perms, idx)
	}
	return r.ToSwitch(all), perms
}

// circuitRow is one circuit of one slot.
type circuitRow struct {
	period        int64
	slot          int
	src, dst      int
	start, end    time.Duration
	gap           time.Duration
	bytes         *int64
	configsPeriod int
}

// circuits lists the circuits of the nights recorded: each switch night
// (period P, slot s) of schedule sw is slot s%slotsPer of REACToR period
// P*orders + s/slotsPer. Windows give the bytes.
func (r *Run) circuits(nights []ocs.Night, sw sched.Schedule, slotsPer int, origin time.Duration, windows [][]hostagent.ReactorWindow) []circuitRow {
	byPort := map[int]int{}
	for i, h := range r.Hosts {
		byPort[h.Port] = i
	}
	type key struct {
		src    int
		period int64
		slot   int
		dst    string
	}
	bytes := map[key]int64{}
	for i, ws := range windows {
		for _, w := range ws {
			if w.Period >= 0 {
				bytes[key{i, w.Period, w.Slot, w.Class}] += w.Bytes
			}
		}
	}
	orders := len(sw.Slots) / slotsPer
	var out []circuitRow
	for _, n := range nights {
		if n.Slot < 0 || n.Slot >= len(sw.Slots) {
			continue
		}
		sl := sw.Slots[n.Slot]
		end := n.Start + sw.Delta + sl.Duration
		for _, c := range ocs.Circuits(sl.Perm) {
			i, okI := byPort[c.In]
			j, okJ := byPort[c.Out]
			if !okI || !okJ {
				continue
			}
			row := circuitRow{period: n.Period*int64(orders) + int64(n.Slot/slotsPer), slot: n.Slot % slotsPer, src: i, dst: j,
				start: n.Start - origin, end: end - origin, gap: n.Gap(), configsPeriod: slotsPer}
			if b, ok := bytes[key{i, n.Period, n.Slot, r.Hosts[j].Name}]; ok {
				row.bytes = &b
			}
			out = append(out, row)
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].start != out[b].start {
			return out[a].start < out[b].start
		}
		return out[a].src < out[b].src
	})
	return out
}

func allToAll(ctx context.Context, run *Run, st *reconfigState, W, night time.Duration, orders, warmup, periods int, margin time.Duration, seed uint64) error {
	n := len(run.Hosts)
	eps := st.s.EPSGbps * 1e9
	base, err := sched.RoundRobin(run.Constraints(W, night, 0, eps))
	if err != nil {
		return o.Inputf("%v", err)
	}
	if c := run.Sched.Constraints(); c.MaxSlots > 0 && orders*(n-1) > c.MaxSlots {
		return o.Inputf("orders %d x %d slots: %s holds at most %d slots per schedule", orders, n-1, run.OCS, c.MaxSlots)
	}
	sw, _ := run.cycle(base, orders, seed)
	if err := run.Sched.Constraints().Validate(sw); err != nil {
		return o.Inputf("%s: %v", run.OCS, err)
	}
	total := time.Duration(warmup+periods) * W
	since, err := run.RecordSince(ctx)
	if err != nil {
		return err
	}
	start, err := run.Start(ctx, sw, margin, func(i int, start time.Duration) []hostagent.ReactorFlowRequest {
		from, to := start+time.Duration(warmup)*W, start+total
		var fs []hostagent.ReactorFlowRequest
		for j, h := range run.Hosts {
			if j != i {
				fs = append(fs, hostagent.ReactorFlowRequest{Dst: h.Name, Kind: hostagent.FlowBulk, Target: run.Sinks[j],
					StartNs: int64(start), StopNs: int64(to + W), MeasureFromNs: int64(from), MeasureToNs: int64(to)})
			}
		}
		return fs
	})
	if err != nil {
		return err
	}
	from, to := start+time.Duration(warmup)*W, start+total
	if err := run.Announce(ctx, 0, start, base); err != nil {
		return err
	}
	run.RC.Event(results.Event{Type: "setting", Device: run.OCS, Message: fmt.Sprintf("round robin of %d x %v slots (%v nights) starts at %v on the switch's clock, %d slot orders",
		n-1, base.Slots[0].Duration, night, start, orders), Fields: map[string]any{"start_ns": int64(start), "period_ns": int64(W)}})
	recv, err := run.Received(ctx, to)
	if err != nil {
		return err
	}
	nights, _, err := run.Nights(ctx, since, from, to)
	if err != nil {
		return err
	}
	windows, err := run.Windows(ctx, to)
	if err != nil {
		return err
	}
	if err := run.Stop(ctx); err != nil {
		return err
	}

	perHost, totalBps, err := writeFlows(run, recv)
	if err != nil {
		return err
	}
	rows := run.circuits(nights, sw, n-1, start, windows)
	if err := writeCircuits(run, "slots", rows, false); err != nil {
		return err
	}
	var open time.Duration
	var gaps []float64
	for _, nt := range nights {
		gaps = append(gaps, us(nt.Gap()))
	}
	for _, row := range rows {
		open += row.end - (row.start + night)
	}
	portTime := float64(n) * float64(to-from)
	carried, err := carriedTime(run, recv, from, to)
	if err != nil {
		return err
	}
	unpaused := unpausedTime(windows, from, to)
	st.mu.Lock()
	defer st.mu.Unlock()
	s := &st.s
	s.SlotUS = us(base.Slots[0].Duration + night)
	s.DutyCycle = float64(carried) / portTime
	s.DutyCycleSchedule = float64(open) / portTime
	s.DutyCycleWindows = float64(unpaused) / portTime
	s.LostUSPerSlot = (s.DutyCycleSchedule - s.DutyCycle) * us(W) / float64(n-1)
	s.GoodputGbpsTotal = totalBps / 1e9
	s.GoodputGbpsHostMin, s.GoodputGbpsHostMax = slices.Min(perHost)/1e9, slices.Max(perHost)/1e9
	s.Nights = len(nights)
	if len(gaps) > 0 {
		var sum float64
		for _, g := range gaps {
			sum += g
		}
		s.ReconfigGapUSMean, s.ReconfigGapUSMax = sum/float64(len(gaps)), slices.Max(gaps)
	}
	run.RC.Event(results.Event{Type: "measurement", Device: run.OCS, Message: fmt.Sprintf("all-to-all: duty cycle %.4f from the traffic (schedule %.4f, classes unpaused %.4f), %.3f Gb/s in all (%.3f..%.3f per host), gaps %.2f us mean, %.2f us max over %d nights",
		s.DutyCycle, s.DutyCycleSchedule, s.DutyCycleWindows, s.GoodputGbpsTotal, s.GoodputGbpsHostMin, s.GoodputGbpsHostMax, s.ReconfigGapUSMean, s.ReconfigGapUSMax, s.Nights),
		Fields: map[string]any{"duty_cycle": s.DutyCycle, "duty_cycle_schedule": s.DutyCycleSchedule, "goodput_gbps_total": s.GoodputGbpsTotal}})
	return nil
}

// writeFlows writes every received flow's goodput (each must have been
// measured) and returns each host's and the total.
func writeFlows(run *Run, recv [][]hostagent.ReactorFlow) ([]float64, float64, error) {
	flows, err := run.RC.Table("flows")
	if err != nil {
		return nil, 0, err
	}
	perHost := make([]float64, len(run.Hosts))
	var totalBps float64
	for i, fs := range recv {
		sort.Slice(fs, func(a, b int) bool { return fs[a].Src < fs[b].Src })
		for _, f := range fs {
			if !f.Measured {
				return nil, 0, fmt.Errorf("%s: flow %s from %s was not measured (it is %s)", run.Hosts[i].Name, f.ID, f.Src, f.State)
			}
			perHost[i] += f.GoodputBps
			totalBps += f.GoodputBps
			if err := flows.Write(f.Src, run.Hosts[i].Name, f.GoodputBps/1e9); err != nil {
				return nil, 0, err
			}
		}
	}
	return perHost, totalBps, nil
}

// carriedTime is the time in [from, to) the hosts received traffic, summed
// over the hosts: the union of each one's arrival bursts.
func carriedTime(run *Run, recv [][]hostagent.ReactorFlow, from, to time.Duration) (time.Duration, error) {
	var carried time.Duration
	for i, fs := range recv {
		var spans [][2]int64
		for _, f := range fs {
			for _, b := range f.Bursts {
				spans = append(spans, [2]int64{b.FirstNs, b.LastNs})
			}
		}
		if len(spans) == 0 {
			return 0, fmt.Errorf("%s: its received flows report no arrival bursts, so the duty cycle cannot be measured from the traffic (hostagent 1.2.0 with bursts expected)", run.Hosts[i].Name)
		}
		carried += time.Duration(unionNs(spans, int64(from), int64(to)))
	}
	return carried, nil
}

// unpausedTime is the time in [from, to) the hosts' classes were open,
// summed over the hosts.
func unpausedTime(windows [][]hostagent.ReactorWindow, from, to time.Duration) time.Duration {
	var unpaused time.Duration
	for _, ws := range windows {
		var spans [][2]int64
		for _, w := range ws {
			if w.Period >= 0 {
				spans = append(spans, [2]int64{w.OpenNs, w.CloseNs})
			}
		}
		unpaused += time.Duration(unionNs(spans, int64(from), int64(to)))
	}
	return unpaused
}

// unionNs is the length of the union of spans [a, b] clipped to [from, to).
func unionNs(spans [][2]int64, from, to int64) int64 {
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	var total, end int64 = 0, from
	for _, sp := range spans {
		a, b := max(sp[0], end), min(sp[1], to)
		if b > a {
			total += b - a
			end = b
		}
	}
	return total
}

func writeCircuits(run *Run, table string, rows []circuitRow, configs bool) error {
	tw, err := run.RC.Table(table)
	if err != nil {
		return err
	}
	for _, row := range rows {
		var b any
		if row.bytes != nil {
			b = *row.bytes
		}
		vals := []any{row.period, row.slot, run.Hosts[row.src].Name, run.Hosts[row.dst].Name, us(row.start), us(row.end), us(row.gap), b}
		if configs {
			vals = append([]any{row.configsPeriod}, vals...)
		}
		if err := tw.Write(vals...); err != nil {
			return err
		}
	}
	return nil
}

// halves are §5.2's two groups: hosts 0..n/2-1 and n/2..n-1.
func groupInternal(n int, c sched.Constraints) sched.Schedule {
	h := n / 2
	s := sched.Schedule{Period: c.Period, Delta: c.Delta}
	m := h - 1
	dur := (c.Period - time.Duration(m)*c.Delta) / time.Duration(m)
	for k := 1; k <= m; k++ {
		perm := make([]int, n)
		for i := range perm {
			g := i / h * h
			perm[i] = g + (i-g+k)%h
		}
		s.Slots = append(s.Slots, sched.Slot{Perm: perm, Duration: dur})
	}
	return fill(s)
}

func crossTalk(n int, c sched.Constraints) sched.Schedule {
	h := n / 2
	s := sched.Schedule{Period: c.Period, Delta: c.Delta}
	dur := (c.Period - time.Duration(h)*c.Delta) / time.Duration(h)
	for k := range h {
		perm := make([]int, n)
		for i := range perm {
			if i < h {
				perm[i] = h + (i+k)%h
			} else {
				perm[i] = (i - h + k) % h
			}
		}
		s.Slots = append(s.Slots, sched.Slot{Perm: perm, Duration: dur})
	}
	return fill(s)
}

// firstPeriodWith is the start of the first period in the switch's
// record with slots nights (the new schedule's count), or -1.
func firstPeriodWith(nights []ocs.Night, slots int) time.Duration {
	perPeriod := map[int64]int{}
	periodStart := map[int64]time.Duration{}
	for _, nt := range nights {
		perPeriod[nt.Period]++
		if nt.Slot == 0 {
			periodStart[nt.Period] = nt.Start
		}
	}
	var ps []int64
	for p := range perPeriod {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	for _, p := range ps {
		if perPeriod[p] == slots {
			return periodStart[p]
		}
	}
	return -1
}

// addGoodput adds the received flows' goodput (each must have been
// measured) to before or after the change, by when the flow started.
func (tr *Transition) addGoodput(run *Run, recv [][]hostagent.ReactorFlow, change time.Duration) error {
	for i, fs := range recv {
		for _, f := range fs {
			if !f.Measured {
				return fmt.Errorf("%s: flow %s from %s was not measured (it is %s)", run.Hosts[i].Name, f.ID, f.Src, f.State)
			}
			if f.StartNs < int64(change) {
				tr.GoodputGbpsBefore += f.GoodputBps / 1e9
			} else {
				tr.GoodputGbpsAfter += f.GoodputBps / 1e9
			}
		}
	}
	return nil
}

func transition(ctx context.Context, run *Run, st *reconfigState, W, night time.Duration, k int, margin time.Duration) error {
	n := len(run.Hosts)
	c := run.Constraints(W, night, 0, st.s.EPSGbps*1e9)
	before, after := groupInternal(n, c), crossTalk(n, c)
	swBefore, swAfter := run.ToSwitch(before), run.ToSwitch(after)
	for _, s := range []sched.Schedule{swBefore, swAfter} {
		if err := run.Sched.Constraints().Validate(s); err != nil {
			return o.Inputf("%s: %v", run.OCS, err)
		}
	}
	since, err := run.RecordSince(ctx)
	if err != nil {
		return err
	}
	h := n / 2
	times := func(start time.Duration) (change, end time.Duration) {
		return start + time.Duration(k-1)*W + W/2, start + time.Duration(2*k)*W
	}
	start, err := run.Start(ctx, swBefore, margin, func(i int, start time.Duration) []hostagent.ReactorFlowRequest {
		change, end := times(start)
		var fs []hostagent.ReactorFlowRequest
		for j, d := range run.Hosts {
			if j == i {
				continue
			}
			f := hostagent.ReactorFlowRequest{Dst: d.Name, Kind: hostagent.FlowBulk, Target: run.Sinks[j]}
			if (i < h) == (j < h) {
				f.StartNs, f.StopNs, f.MeasureFromNs, f.MeasureToNs = int64(start), int64(change), int64(start+W), int64(start+time.Duration(k-1)*W)
			} else {
				f.StartNs, f.StopNs, f.MeasureFromNs, f.MeasureToNs = int64(change), int64(end), int64(end-time.Duration(k/2)*W), int64(end)
			}
			fs = append(fs, f)
		}
		return fs
	})
	if err != nil {
		return err
	}
	change, end := times(start)
	// The controller knows when the new workload starts (a demand oracle,
	// as the prototype had) and arms the switch with the new schedule
	// ahead, for the first boundary after the change: handed over at the
	// change, it would wait on the controller's round trip to the switch,
	// which on a loaded control host is longer than the half period left.
	eff, err := run.Sched.ReplaceSchedule(ctx, swAfter, ocs.StartAt{At: change})
	if err != nil {
		return err
	}
	if err := run.Announce(ctx, 0, start, before); err != nil {
		return err
	}
	// The hosts hear of the new schedule when their workload changes.
	if err := run.WaitClock(ctx, change); err != nil {
		return err
	}
	next := start + time.Duration(k)*W
	effPeriod := int64((eff - start) / W)
	if err := run.Announce(ctx, effPeriod, eff, after); err != nil {
		return err
	}
	run.RC.Event(results.Event{Type: "change", Device: run.OCS, Message: fmt.Sprintf("workload changed at %v; the switch takes the cross-talk schedule at %v (period %d)", change-start, eff-start, effPeriod),
		Fields: map[string]any{"change_us": us(change - start), "effective_us": us(eff - start)}})
	recv, err := run.Received(ctx, end)
	if err != nil {
		return err
	}
	nights, _, err := run.Nights(ctx, since, start, end)
	if err != nil {
		return err
	}
	windows, err := run.Windows(ctx, end)
	if err != nil {
		return err
	}
	if err := run.Stop(ctx); err != nil {
		return err
	}
	followed := firstPeriodWith(nights, len(after.Slots))
	var rows []circuitRow
	for _, nt := range nights {
		sw, per := swBefore, len(before.Slots)
		if followed >= 0 && nt.Start >= followed {
			sw, per = swAfter, len(after.Slots)
		}
		rows = append(rows, run.circuits([]ocs.Night{nt}, sw, per, start, windows)...)
	}
	// Periods are counted from the run's start on the switch: with one
	// order per period the switch's period is the run's.
	if err := writeCircuits(run, "transition", rows, true); err != nil {
		return err
	}
	tr := &Transition{ConfigsBefore: len(before.Slots), ConfigsAfter: len(after.Slots), ChangeUS: us(change - start), FollowedUS: math.NaN(), DelayUS: math.NaN(), PeriodsLate: -1}
	if followed >= 0 {
		tr.FollowedUS, tr.DelayUS = us(followed-start), us(followed-change)
		tr.PeriodsLate = int((followed - next) / W)
	}
	if err := tr.addGoodput(run, recv, change); err != nil {
		return err
	}
	st.mu.Lock()
	st.s.Transition = tr
	st.mu.Unlock()
	if followed < 0 {
		return fmt.Errorf("%s: the switch's record shows no period of the new schedule before %v", run.OCS, end-start)
	}
	run.RC.Event(results.Event{Type: "measurement", Device: run.OCS, Message: fmt.Sprintf("transition: the workload changed at %.0f us, the schedule followed at %.0f us (%d boundaries late); %.2f Gb/s before, %.2f Gb/s after",
		tr.ChangeUS, tr.FollowedUS, tr.PeriodsLate, tr.GoodputGbpsBefore, tr.GoodputGbpsAfter)})
	return nil
}
