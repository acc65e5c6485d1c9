package reactor

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"testbed/hostagent"
	"testbed/instruments/ocs"
	"testbed/internal/sched"
	o "testbed/orchestrator"
	"testbed/results"
)

// TimeVaryingName is reactor-timevarying's name on the command line.
const TimeVaryingName = "reactor-timevarying"

// TimeVarying is the reactor-timevarying recipe (REACToR §5.3, Fig. 9).
type TimeVarying struct{}

// NewTimeVarying returns the recipe.
func NewTimeVarying() *TimeVarying { return &TimeVarying{} }

// Meta implements orchestrator.Recipe.
func (*TimeVarying) Meta() o.Meta {
	return o.Meta{
		Name:        TimeVaryingName,
		Version:     "1.0.0",
		Summary:     "goodput of flows to one host as they turn, one by one, from low to high bandwidth and move from the EPS to circuits (REACToR §5.3, Fig. 9)",
		Description: timeVaryingDescription,
		Params:      timeVaryingParams(),
		// Fig. 9's shares after each promotion, their fairness, and how
		// long a promotion took.
		Headlines: []string{"phases.*.mean_high_gbps", "jain_min", "mean_low_gbps", "max_promotion_us"},
	}
}

const timeVaryingDescription = `REACToR §5.3's time-varying workload, observed at one receiving host as in Fig. 9. The
first flows+1 hosts of the lab's REACToR (by switch port) take part: the first receives, the
others send one flow each. At first one flow is high bandwidth (a TCP-like bulk flow that
sends all it can) and is served by the circuit switch; the others are low bandwidth (paced
at low_mbps on the wire, the prototype's 96 Mb/s), in their destination's class, which has
no circuit and is therefore sent through the packet switch (EPS). Every phase_periods
periods, in the middle of a period (an inconvenient time, as in §5.2), the next low flow
turns into a bulk flow. The recipe, as REACToR's controller with a demand oracle (the
prototype's controller knew the demand), arms the switch ahead with the schedule for the
new demand: k high flows get k configurations per period of period/k each (night
included), each joining one sender to the receiver; the switch takes it at the first period
boundary after the change, and the hosts hear of it at the change. Between the change and
that boundary the new bulk flow's class has no circuit and goes through the EPS.

data/goodput.csv is Fig. 9: each sender's goodput at the receiver per bin of bin_periods
periods (circuit arrivals from the receiver's timestamped bursts; what a flow received
through the EPS, its measured bytes less its circuit bytes, spread evenly over its
measurement interval, or for a flow that came over circuits over the part of it before its
first circuit: a class with a circuit sends only over it, §3.2). data/phases.csv has each
flow's goodput per phase, over the whole periods of the phase less its first period after
the switch took the schedule (§5.3: a flow may send at a lower rate in the first period of
a new schedule). The summary gives the high flows' mean goodput
per phase, Jain's fairness index among them, the low flows' mean goodput, and each
promotion's delay: from the change to the promoted flow's first arrival over a circuit, as
the receiver timestamped it.`

func timeVaryingParams() []o.ParamSpec {
	return []o.ParamSpec{
		{Name: "ocs", Type: o.TypeString, Default: "", Description: "the switch (default: the one the REACToR hosts are on)"},
		{Name: "reactor", Type: o.TypeString, Default: "", Description: "the hosts' REACToR (their option reactor; default: any)"},
		{Name: "flows", Type: o.TypeInt, Default: int64(3), Min: o.Bound(2), Max: o.Bound(23), Description: "flows to the receiving host (Fig. 9: three), each from its own host; as many phases"},
		{Name: "period", Type: o.TypeDuration, Default: 1500 * time.Microsecond, Min: o.Bound(1e-4), Max: o.Bound(0.1), Description: "scheduling period W (§5.3: 1.5 ms)"},
		{Name: "night", Type: o.TypeDuration, Default: 30 * time.Microsecond, Min: o.Bound(1e-7), Max: o.Bound(0.01), Description: "night budget delta per configuration (§4: 30 us)"},
		{Name: "eps_gbps", Type: o.TypeFloat, Unit: "Gb/s", Default: 1.0, Min: o.Bound(0.001), Max: o.Bound(1600), Description: "each host's EPS rate (§4: 1 Gb/s beside 10 Gb/s circuits)"},
		{Name: "low_mbps", Type: o.TypeFloat, Unit: "Mb/s", Default: 96.0, Min: o.Bound(0.001), Max: o.Bound(100000), Description: "a low-bandwidth flow's paced rate on the wire (§5.3: 96 Mb/s)"},
		{Name: "phase_periods", Type: o.TypeInt, Default: int64(20), Min: o.Bound(4), Max: o.Bound(100000), Description: "periods between one flow's promotion and the next"},
		{Name: "bin_periods", Type: o.TypeInt, Default: int64(1), Min: o.Bound(1), Max: o.Bound(100000), Description: "periods per bin of the goodput time series"},
		{Name: "start_margin", Type: o.TypeDuration, Default: 200 * time.Millisecond, Min: o.Bound(0.001), Max: o.Bound(60), Description: "how far ahead of the switch's clock a run is started, to set up its flows"},
	}
}

// TimeVaryingTables are reactor-timevarying's tables.
func TimeVaryingTables() []results.Table {
	return []results.Table{
		{Name: "goodput", Title: "Goodput of each flow over time (Fig. 9)", Description: "Per sender and bin, the payload the receiver got from it.",
			Fields: []results.Field{
				{Name: "time_ms", Type: "number", Unit: "ms", Description: "start of the bin, from the run's start"},
				{Name: "src", Type: "string", Description: "sending host"},
				{Name: "goodput_gbps", Type: "number", Unit: "Gb/s", Description: "payload received in the bin over its length"},
				{Name: "circuit_gbps", Type: "number", Unit: "Gb/s", Description: "the part of it that came over circuits"},
			},
			Figures: []results.Figure{{Name: "goodput-over-time", Title: "Goodput of each flow to the receiving host",
				Caption: "Each flow turns from low to high bandwidth at its promotion (the phases' changes); the high flows share the receiver's link.",
				Kind:    results.Line, X: "time_ms", Y: "goodput_gbps", Series: []string{"src"}, Legend: "from {src}",
				XLabel: "Time (ms)", YLabel: "Goodput (Gb/s)"}}},
		{Name: "phases", Title: "Goodput of each flow per phase", Description: "Over each phase less its first period under the new schedule.",
			Fields: []results.Field{
				{Name: "phase", Type: "integer", Description: "phase, from 0"},
				{Name: "high_flows", Type: "integer", Description: "high-bandwidth flows in the phase"},
				{Name: "src", Type: "string", Description: "sending host"},
				{Name: "bandwidth", Type: "string", Description: "high (bulk, on circuits) or low (paced, through the EPS)"},
				{Name: "goodput_gbps", Type: "number", Unit: "Gb/s", Description: "payload received over the phase's measured span"},
			},
			Figures: []results.Figure{{Name: "goodput-per-phase", Title: "Goodput of each flow per phase",
				Kind: results.Bar, X: "phase", Y: "goodput_gbps", Series: []string{"src"}, Legend: "from {src}",
				XLabel: "Phase (high-bandwidth flows - 1)", YLabel: "Goodput (Gb/s)"}}},
	}
}

// TimeVaryingSummary is summary.json.
type TimeVaryingSummary struct {
	Partial  bool    `json:"partial"`
	Receiver string  `json:"receiver"`
	Flows    int     `json:"flows"`
	PeriodUS float64 `json:"period_us"`
	NightUS  float64 `json:"night_us"`
	EPSGbps  float64 `json:"eps_gbps"`
	LowMbps  float64 `json:"low_mbps"`
	// Phases, one per number of high flows.
	Phases []TVPhase `json:"phases"`
	// JainMin is the least fairness index among a phase's high flows.
	JainMin float64 `json:"jain_min"`
	// LowGbpsMean is the low flows' mean goodput over the phases they
	// were low in.
	LowGbpsMean float64 `json:"mean_low_gbps"`
	// PromotionUS is, per promotion, the time from the change to the
	// promoted flow's first arrival over a circuit; PromotionUSMax the
	// largest. PeriodsLate is the most period boundaries any promotion
	// waited past the first one after its change (0: served at once).
	PromotionUS    []float64 `json:"promotion_us"`
	PromotionUSMax float64   `json:"max_promotion_us"`
	PeriodsLate    int       `json:"periods_late"`
}

// TVPhase is one phase of the workload.
type TVPhase struct {
	HighFlows int `json:"high_flows"`
	// FromMS and ToMS bound the span measured, from the run's start.
	FromMS float64 `json:"from_ms"`
	ToMS   float64 `json:"to_ms"`
	// HighGbps is each high flow's goodput, in sender order; Mean, Sum
	// and Jain's index among them follow.
	HighGbps     []float64 `json:"high_gbps"`
	HighGbpsMean float64   `json:"mean_high_gbps"`
	HighGbpsSum  float64   `json:"sum_high_gbps"`
	Jain         float64   `json:"jain"`
	LowGbps      []float64 `json:"low_gbps,omitempty"`
}

type tvState struct {
	mu sync.Mutex
	s  TimeVaryingSummary
}

// Plan implements Recipe.
func (r *TimeVarying) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	n := int(p.Int("flows"))
	lab, binds, err := Bind(pc, p.String("ocs"), p.String("reactor"), n+1)
	if err != nil {
		return nil, err
	}
	W, night := p.Duration("period"), p.Duration("night")
	eps, low := p.Float("eps_gbps")*1e9, p.Float("low_mbps")*1e6
	for _, h := range lab.Hosts {
		if eps > h.EPSBps || eps >= h.LinkBps {
			return nil, o.Inputf("eps_gbps %g: %s's packet-switch port carries %g Gb/s and its link %g Gb/s; the EPS must be slower than the link", p.Float("eps_gbps"), h.Name, h.EPSBps/1e9, h.LinkBps/1e9)
		}
	}
	if float64(n-1)*low > eps {
		return nil, o.Inputf("low_mbps %g: %d low flows need %g Gb/s of the EPS's %g Gb/s", p.Float("low_mbps"), n-1, float64(n-1)*low/1e9, eps/1e9)
	}
	if time.Duration(n)*night >= W {
		return nil, o.Inputf("%d configurations of a %v night do not fit in a %v period", n, night, W)
	}
	tv := tvRun{W: W, night: night, eps: eps, low: low, n: n, phase: time.Duration(p.Int("phase_periods")) * W, bin: time.Duration(p.Int("bin_periods")) * W}
	st := &tvState{s: TimeVaryingSummary{Receiver: lab.Hosts[0].Name, Flows: n, PeriodUS: us(W), NightUS: us(night), EPSGbps: eps / 1e9, LowMbps: low / 1e6}}
	plan := &o.Plan{Bindings: binds, Tables: TimeVaryingTables(),
		Summary: func(partial bool) (any, error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			s := st.s
			s.Partial = partial
			return s, nil
		}}
	plan.Steps = append(plan.Steps, &o.Step{
		Name: fmt.Sprintf("%d hosts: classes and agents", n+1), Action: "prepare-hosts", Devices: lab.Devices(),
		Settings: []o.Setting{{Device: lab.OCS, Name: "after", Value: "dark"}, {Device: "hosts", Name: "eps_class", Value: eps / 1e9, Unit: "Gb/s"}},
		Run: func(ctx context.Context, rc *o.RunContext) error {
			var err error
			if tv.run, err = Open(ctx, rc, lab); err != nil {
				return err
			}
			return tv.run.Setup(ctx, eps)
		},
	})
	plan.Steps = append(plan.Steps, &o.Step{
		Name: fmt.Sprintf("%d flows to %s, one promoted every %v", n, lab.Hosts[0].Name, tv.phase), Action: "time-varying", Devices: lab.Devices(),
		Settings: []o.Setting{
			{Device: lab.OCS, Name: "schedule", Value: fmt.Sprintf("k configurations of %v/k for k high flows, %v night", W, night)},
			{Device: "hosts", Name: "flows", Value: fmt.Sprintf("1 bulk and %d paced at %g Mb/s, one turning bulk each phase", n-1, low/1e6)},
		},
		Run: func(ctx context.Context, rc *o.RunContext) error {
			if tv.run == nil {
				return o.Skip("the hosts were not prepared")
			}
			return tv.play(ctx, st, p.Duration("start_margin"))
		},
	})
	return plan, nil
}

// tvRun is one run of the time-varying workload: host 0 receives, host
// i+1 sends flow i.
type tvRun struct {
	run        *Run
	W, night   time.Duration
	phase, bin time.Duration
	eps, low   float64
	n          int
	start, end time.Duration
	changes    []time.Duration // changes[p]: when phase p begins (changes[0] = start)
	takes      []time.Duration // when the switch takes phase p's schedule
	flowsOf    [][]hostagent.ReactorFlow
}

// schedule is phase k's: k+1 configurations, each joining sender j+1 to
// the receiver for period/(k+1), night included.
func (tv *tvRun) schedule(k int) sched.Schedule {
	m := k + 1
	s := sched.Schedule{Period: tv.W, Delta: tv.night}
	dur := (tv.W - time.Duration(m)*tv.night) / time.Duration(m)
	for j := range m {
		perm := make([]int, tv.n+1)
		for i := range perm {
			perm[i] = sched.Dark
		}
		perm[j+1] = 0
		s.Slots = append(s.Slots, sched.Slot{Perm: perm, Duration: dur})
	}
	return fill(s)
}

// requests are sender i's flows: low (paced) until its promotion, high
// (bulk) from it; flow 0 is high from the start.
func (tv *tvRun) requests(i int, start time.Duration) []hostagent.ReactorFlowRequest {
	if i == 0 {
		return nil
	}
	f := i - 1
	end := start + time.Duration(tv.n)*tv.phase
	change := start + time.Duration(f)*tv.phase + tv.W/2
	high := hostagent.ReactorFlowRequest{Dst: tv.run.Hosts[0].Name, Kind: hostagent.FlowBulk, Target: tv.run.Sinks[0],
		StartNs: int64(start), StopNs: int64(end), MeasureFromNs: int64(start), MeasureToNs: int64(end)}
	if f == 0 {
		return []hostagent.ReactorFlowRequest{high}
	}
	high.StartNs, high.MeasureFromNs = int64(change), int64(change)
	lowF := hostagent.ReactorFlowRequest{Dst: tv.run.Hosts[0].Name, Kind: hostagent.FlowPaced, RateBps: tv.low, Target: tv.run.Sinks[0],
		StartNs: int64(start), StopNs: int64(change), MeasureFromNs: int64(start), MeasureToNs: int64(change)}
	return []hostagent.ReactorFlowRequest{lowF, high}
}

// play runs the workload: it starts the first phase's schedule, then,
// phase by phase, arms the next schedule for the change and tells the
// hosts at the change; then it reads what the receiver got.
func (tv *tvRun) play(ctx context.Context, st *tvState, margin time.Duration) error {
	run := tv.run
	scheds := make([]sched.Schedule, tv.n)
	for k := range scheds {
		scheds[k] = tv.schedule(k)
		if err := run.Sched.Constraints().Validate(run.ToSwitch(scheds[k])); err != nil {
			return o.Inputf("%s: %v", run.OCS, err)
		}
	}
	start, err := run.Start(ctx, run.ToSwitch(scheds[0]), margin, tv.requests)
	if err != nil {
		return err
	}
	tv.start, tv.end = start, start+time.Duration(tv.n)*tv.phase
	tv.changes, tv.takes = []time.Duration{start}, []time.Duration{start}
	if err := run.Announce(ctx, 0, start, scheds[0]); err != nil {
		return err
	}
	for k := 1; k < tv.n; k++ {
		change := start + time.Duration(k)*tv.phase + tv.W/2
		// The previous replacement must have taken over before the next
		// is armed: the switch holds one successor.
		if err := run.WaitClock(ctx, tv.takes[k-1]); err != nil {
			return err
		}
		eff, err := run.Sched.ReplaceSchedule(ctx, run.ToSwitch(scheds[k]), ocs.StartAt{At: change})
		if err != nil {
			return err
		}
		if eff >= tv.end {
			return fmt.Errorf("%s: the switch takes the schedule of %s's promotion at %v, not before the run's end at %v: the request, sent when the previous schedule took over at %v, came late (a loaded control host); a longer phase_periods leaves more room",
				run.OCS, run.Hosts[k+1].Name, eff-start, tv.end-start, tv.takes[k-1]-start)
		}
		if err := run.WaitClock(ctx, change); err != nil {
			return err
		}
		if err := run.Announce(ctx, int64((eff-start)/tv.W), eff, scheds[k]); err != nil {
			return err
		}
		tv.changes, tv.takes = append(tv.changes, change), append(tv.takes, eff)
		run.RC.Event(results.Event{Type: "change", Device: run.OCS, Message: fmt.Sprintf("%s's flow turned high at %v; the switch takes %d configurations at %v",
			run.Hosts[k+1].Name, change-start, k+1, eff-start), Fields: map[string]any{"change_us": us(change - start), "effective_us": us(eff - start)}})
	}
	recv, err := run.Received(ctx, tv.end)
	if err != nil {
		return err
	}
	if err := run.Stop(ctx); err != nil {
		return err
	}
	tv.flowsOf = make([][]hostagent.ReactorFlow, tv.n)
	for _, f := range recv[0] {
		if !f.Measured {
			return fmt.Errorf("%s: flow %s from %s was not measured", run.Hosts[0].Name, f.ID, f.Src)
		}
		for i, h := range run.Hosts[1:] {
			if f.Src == h.Name {
				tv.flowsOf[i] = append(tv.flowsOf[i], f)
			}
		}
	}
	return tv.report(st)
}

// flowBytes is the payload flow f delivered within [a, b): its circuit
// bursts' bytes, each spread evenly over its span, and the rest of what it
// measured (what came through the EPS) spread evenly over its measurement
// interval, or, for a flow that came over circuits, over the part of it
// before its first circuit. circuit is the first part.
func flowBytes(f hostagent.ReactorFlow, a, b time.Duration) (total, circuit float64) {
	overlap := func(x, y int64) float64 {
		lo, hi := max(x, int64(a)), min(y, int64(b))
		if hi <= lo {
			return 0
		}
		return float64(hi - lo)
	}
	var inBursts int64
	for _, bu := range f.Bursts {
		inBursts += bu.Bytes
		if bu.LastNs <= bu.FirstNs {
			if bu.FirstNs >= int64(a) && bu.FirstNs < int64(b) {
				circuit += float64(bu.Bytes)
			}
			continue
		}
		circuit += float64(bu.Bytes) * overlap(bu.FirstNs, bu.LastNs) / float64(bu.LastNs-bu.FirstNs)
	}
	total = circuit
	// A class with a circuit in a period sends only over it (§3.2), so a
	// flow that has arrived over a circuit went through the EPS before
	// its first circuit only: between its start and its promotion.
	to := f.MeasureToNs
	if len(f.Bursts) > 0 {
		to = min(to, f.Bursts[0].FirstNs)
	}
	if rest := f.MeasuredBytes - inBursts; rest > 0 && to > f.MeasureFromNs {
		total += float64(rest) * overlap(f.MeasureFromNs, to) / float64(to-f.MeasureFromNs)
	}
	return total, circuit
}

// gbps is bytes over [a, b) in Gb/s.
func gbps(bytes float64, a, b time.Duration) float64 {
	return bytes * 8 / (b - a).Seconds() / 1e9
}

// report writes the tables and the summary.
func (tv *tvRun) report(st *tvState) error {
	run := tv.run
	gt, err := run.RC.Table("goodput")
	if err != nil {
		return err
	}
	for a := tv.start; a < tv.end; a += tv.bin {
		b := min(a+tv.bin, tv.end)
		for i, fs := range tv.flowsOf {
			var tot, circ float64
			for _, f := range fs {
				x, c := flowBytes(f, a, b)
				tot, circ = tot+x, circ+c
			}
			if err := gt.Write(float64(a-tv.start)/1e6, run.Hosts[i+1].Name, gbps(tot, a, b), gbps(circ, a, b)); err != nil {
				return err
			}
		}
	}
	s, err := tv.phases()
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.s.Phases, st.s.JainMin, st.s.LowGbpsMean = s.Phases, s.JainMin, s.LowGbpsMean
	st.s.PromotionUS, st.s.PromotionUSMax, st.s.PeriodsLate = s.PromotionUS, s.PromotionUSMax, s.PeriodsLate
	run.RC.Event(results.Event{Type: "measurement", Device: run.Hosts[0].Name, Message: fmt.Sprintf("%d phases: high flows' mean goodput %s Gb/s, Jain's index at least %.4f, low flows %.4f Gb/s, promotions within %.0f us",
		len(s.Phases), phaseMeans(s.Phases), s.JainMin, s.LowGbpsMean, s.PromotionUSMax)})
	return nil
}

func phaseMeans(ps []TVPhase) string {
	out := ""
	for i, p := range ps {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%.3f", p.HighGbpsMean)
	}
	return out
}

// phases computes each phase's goodputs, writes data/phases.csv and
// measures the promotions.
func (tv *tvRun) phases() (TimeVaryingSummary, error) {
	run := tv.run
	pt, err := run.RC.Table("phases")
	if err != nil {
		return TimeVaryingSummary{}, err
	}
	var s TimeVaryingSummary
	s.JainMin = 1
	var lows []float64
	for k := range tv.n {
		// Whole periods, so that every configuration counts as often.
		a, b := tv.takes[k]+tv.W, tv.end
		if k+1 < tv.n {
			b = tv.takes[k] + (tv.changes[k+1]-tv.takes[k])/tv.W*tv.W
		}
		ph := TVPhase{HighFlows: k + 1, FromMS: float64(a-tv.start) / 1e6, ToMS: float64(b-tv.start) / 1e6}
		for i, fs := range tv.flowsOf {
			var tot float64
			for _, f := range fs {
				x, _ := flowBytes(f, a, b)
				tot += x
			}
			g, band := gbps(tot, a, b), "high"
			if i <= k {
				ph.HighGbps = append(ph.HighGbps, g)
			} else {
				ph.LowGbps, band = append(ph.LowGbps, g), "low"
				lows = append(lows, g)
			}
			if err := pt.Write(k, k+1, run.Hosts[i+1].Name, band, g); err != nil {
				return s, err
			}
		}
		var sum, sq float64
		for _, g := range ph.HighGbps {
			sum, sq = sum+g, sq+g*g
		}
		ph.HighGbpsSum, ph.HighGbpsMean = sum, sum/float64(len(ph.HighGbps))
		ph.Jain = sum * sum / (float64(len(ph.HighGbps)) * sq)
		s.JainMin = min(s.JainMin, ph.Jain)
		s.Phases = append(s.Phases, ph)
	}
	if len(lows) > 0 {
		var sum float64
		for _, g := range lows {
			sum += g
		}
		s.LowGbpsMean = sum / float64(len(lows))
	}
	return s, tv.promotions(&s)
}

// promotions measures, for each promoted flow, the time from its change
// to its first arrival over a circuit.
func (tv *tvRun) promotions(s *TimeVaryingSummary) error {
	for k := 1; k < tv.n; k++ {
		first := int64(math.MaxInt64)
		for _, f := range tv.flowsOf[k] {
			for _, bu := range f.Bursts {
				if bu.FirstNs >= int64(tv.changes[k]) {
					first = min(first, bu.FirstNs)
				}
			}
		}
		if first == math.MaxInt64 {
			return fmt.Errorf("%s: the flow from %s, high from %v, never arrived over a circuit", tv.run.Hosts[0].Name, tv.run.Hosts[k+1].Name, tv.changes[k]-tv.start)
		}
		d := time.Duration(first) - tv.changes[k]
		s.PromotionUS = append(s.PromotionUS, us(d))
		// The first boundary after the change is W/2 away.
		s.PeriodsLate = max(s.PeriodsLate, int((time.Duration(first)-tv.changes[k]-tv.W/2)/tv.W))
	}
	if len(s.PromotionUS) > 0 {
		s.PromotionUSMax = slices.Max(s.PromotionUS)
	}
	return nil
}
