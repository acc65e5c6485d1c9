package reactor

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"testbed/hostagent"
	"testbed/internal/sched"
	o "testbed/orchestrator"
	"testbed/results"
)

// HybridName is reactor-hybrid's name on the command line.
const HybridName = "reactor-hybrid"

// The two ToRs of §5.4.
const (
	ToRHybrid  = "hybrid"  // REACToR: circuits and a packet switch
	ToRCircuit = "circuit" // a pure circuit switch
)

// Hybrid is the reactor-hybrid recipe (REACToR §5.4, Figs. 10 and 11).
type Hybrid struct{}

// NewHybrid returns the recipe.
func NewHybrid() *Hybrid { return &Hybrid{} }

// Meta implements orchestrator.Recipe.
func (*Hybrid) Meta() o.Meta {
	return o.Meta{
		Name:        HybridName,
		Version:     "1.0.0",
		Summary:     "goodput of a hybrid ToR and of a pure circuit ToR as the large flow's share and the small flows vary (REACToR §5.4, Figs. 10-11)",
		Description: hybridDescription,
		Params:      hybridParams(),
		// The goodput fraction per ToR (circuit, hybrid per packet-switch size) against the large flow's share (Fig. 10) and the number of small flows (Fig. 11).
		Headlines: []string{"fig10.*.*", "fig11.*.*"},
	}
}

const hybridDescription = `Every host j of a hybrid ToR (default: all the lab's REACToR hosts) offers its whole link: a
large paced flow of large_share of the link to host j+1 and small_flows small paced flows
sharing the rest, to hosts j+2, j+3, ... (REACToR §5.4; past hosts-2 small flows the
destinations repeat). For each point the recipe, as the controller with a demand oracle,
computes the period's schedule with Solstice (package sched) under §5.4's constraints
(period, night, configurations of at least min_slot including the night): on the hybrid
ToR, the fewest configurations that leave the packet switch only what it can carry at
eps_share of the link per host (each host's EPS class is limited to that); on the circuit
ToR (no packet switch: the hosts' EPS classes get nothing), every flow gets a circuit.
The switch plays the schedule; after warmup periods the receivers count what arrives for
periods periods. goodput_fraction is what arrived over what the applications offered.
Fig. 10 varies the large flow's share (large_shares) with fig10_small_flows small flows;
Fig. 11 varies the number of small flows (small_flows) beside a large flow of fig11_share.
Writes data/hybrid_goodput.csv. The switch is put dark and the hosts' classes removed at
the end or on abort.`

func hybridParams() []o.ParamSpec {
	return []o.ParamSpec{
		{Name: "ocs", Type: o.TypeString, Default: "", Description: "the switch (default: the one the REACToR hosts are on)"},
		{Name: "reactor", Type: o.TypeString, Default: "", Description: "the hosts' REACToR (their option reactor; default: any)"},
		{Name: "hosts", Type: o.TypeInt, Default: int64(0), Min: o.Bound(0), Max: o.Bound(1024), Description: "hosts, the first by switch port (0: all; §5.4 has 64)"},
		{Name: "period", Type: o.TypeDuration, Default: 3 * time.Millisecond, Min: o.Bound(1e-4), Max: o.Bound(0.1), Description: "scheduling period W (§5.4: 3 ms)"},
		{Name: "night", Type: o.TypeDuration, Default: 20 * time.Microsecond, Min: o.Bound(1e-7), Max: o.Bound(0.01), Description: "night budget delta per configuration (§5.4: 20 us)"},
		{Name: "min_slot", Type: o.TypeDuration, Default: 40 * time.Microsecond, Min: o.Bound(1e-7), Max: o.Bound(0.1), Description: "shortest configuration, night included (§5.4: 40 us)"},
		{Name: "tors", Type: o.TypeStrings, Default: []string{ToRHybrid, ToRCircuit}, Description: "ToRs to compare: hybrid, circuit"},
		{Name: "eps_shares", Type: o.TypeFloats, Default: []float64{0.1, 0.2}, Min: o.Bound(0.001), Max: o.Bound(0.99), Description: "the hybrid's packet switch per host, as a share of the link (§5.4: 10 and 20 Gb/s of 100)"},
		{Name: "large_shares", Type: o.TypeFloats, Default: []float64{1, 0.95, 0.9, 0.8, 0.6, 0.4}, Min: o.Bound(0), Max: o.Bound(1), Description: "Fig. 10: the large flow's shares of the link"},
		{Name: "fig10_small_flows", Type: o.TypeInt, Default: int64(20), Min: o.Bound(1), Max: o.Bound(1000), Description: "Fig. 10: small flows beside the large one"},
		{Name: "small_flows", Type: o.TypeFloats, Default: []float64{1, 2, 4, 8, 12, 16, 20}, Min: o.Bound(0), Max: o.Bound(1000), Description: "Fig. 11: numbers of small flows"},
		{Name: "fig11_share", Type: o.TypeFloat, Default: 0.9, Min: o.Bound(0), Max: o.Bound(1), Description: "Fig. 11: the large flow's share"},
		{Name: "warmup", Type: o.TypeInt, Default: int64(2), Min: o.Bound(0), Max: o.Bound(10000), Description: "periods before measuring"},
		{Name: "periods", Type: o.TypeInt, Default: int64(3), Min: o.Bound(1), Max: o.Bound(100000), Description: "periods measured"},
		{Name: "start_margin", Type: o.TypeDuration, Default: 200 * time.Millisecond, Min: o.Bound(0.001), Max: o.Bound(60), Description: "how far ahead of the switch's clock each point starts, to set up its flows"},
	}
}

// HybridTable is data/hybrid_goodput.csv.
func HybridTable() results.Table {
	return results.Table{
		Name: "hybrid_goodput", Title: "Goodput of a hybrid and a pure circuit ToR (REACToR Figs. 10-11)",
		Description: "One row per point: what the receivers counted over what the applications offered.",
		Fields: []results.Field{
			{Name: "tor", Type: "string", Description: "hybrid or circuit"},
			{Name: "eps_gbps", Type: "number", Unit: "Gb/s", Description: "the packet switch per host (0 for the circuit ToR)"},
			{Name: "large_flow_share", Type: "number", Description: "the large flow's share of each host's demand"},
			{Name: "small_flows", Type: "integer", Description: "small flows per host sharing the rest"},
			{Name: "goodput_fraction", Type: "number", Description: "payload delivered over payload offered"},
			{Name: "configurations", Type: "integer", Description: "configurations per period in the schedule"},
		},
	}
}

// HybridFigures are REACToR Figs. 10 and 11 drawn from the table: the
// points of each are those with the other figure's fixed value.
func HybridFigures(fig10SmallFlows int, fig11Share float64) []results.Figure {
	return []results.Figure{
		{Name: "fig10-goodput-vs-large-share", Title: fmt.Sprintf("Goodput as the large flow's demand varies (%d small flows)", fig10SmallFlows),
			Caption: "As REACToR Fig. 10: a pure circuit ToR and REACToR with a packet switch of each size.",
			Kind:    results.Line, X: "large_flow_share", Y: "goodput_fraction", XScale: 100, YScale: 100,
			Where:  []results.Cond{{Column: "small_flows", Value: strconv.Itoa(fig10SmallFlows)}},
			Series: []string{"tor", "eps_gbps"}, Legend: "{tor} ToR, {eps_gbps} Gb/s packet switch",
			XLabel: "Demand of the large flow (% of link rate)", YLabel: "Goodput (% of offered demand)"},
		{Name: "fig11-goodput-vs-small-flows", Title: fmt.Sprintf("Goodput as small flows are added (large flow at %g%% of the link)", fig11Share*100),
			Caption: "As REACToR Fig. 11: the rest of each host's demand split evenly among n small flows.",
			Kind:    results.Line, X: "small_flows", Y: "goodput_fraction", YScale: 100,
			Where:  []results.Cond{{Column: "large_flow_share", Value: strconv.FormatFloat(fig11Share, 'g', -1, 64)}},
			Series: []string{"tor", "eps_gbps"}, Legend: "{tor} ToR, {eps_gbps} Gb/s packet switch",
			XLabel: "Number of small flows per host", YLabel: "Goodput (% of offered demand)"},
	}
}

// HybridPoint is one point.
type HybridPoint struct {
	ToR             string  `json:"tor"`
	EPSGbps         float64 `json:"eps_gbps"`
	LargeShare      float64 `json:"large_flow_share"`
	SmallFlows      int     `json:"small_flows"`
	GoodputFraction float64 `json:"goodput_fraction"`
	Configurations  int     `json:"configurations"`
}

// HybridSummary is summary.json: every point, and the two figures keyed
// for comparison: fig10.<tor>.share<percent> and fig11.<tor>.small<m>,
// where tor is circuit or hybrid_eps<percent of the link>.
type HybridSummary struct {
	Partial   bool                          `json:"partial"`
	Hosts     int                           `json:"hosts"`
	LinkGbps  float64                       `json:"link_gbps"`
	PeriodUS  float64                       `json:"period_us"`
	NightUS   float64                       `json:"night_us"`
	MinSlotUS float64                       `json:"min_slot_us"`
	Points    []HybridPoint                 `json:"points"`
	Fig10     map[string]map[string]float64 `json:"fig10"`
	Fig11     map[string]map[string]float64 `json:"fig11"`
}

type hybridState struct {
	mu sync.Mutex
	s  HybridSummary
}

type hybridPoint struct {
	tor        string
	epsShare   float64
	share      float64
	small      int
	fig10      bool
	fig11      bool
	seriesName string
}

func pct(x float64) string { return strconv.FormatFloat(math.Round(x*1000)/10, 'f', -1, 64) }

// hybridPoints are the points the parameters ask for, each once (a
// point in both figures is measured once and goes into both).
func hybridPoints(p *o.Params, lab Lab) ([]hybridPoint, error) {
	link := lab.Hosts[0].LinkBps
	var points []hybridPoint
	seen := map[[4]float64]int{}
	add := func(pt hybridPoint) {
		k := [4]float64{float64(len(pt.tor)), pt.epsShare, pt.share, float64(pt.small)}
		if i, ok := seen[k]; ok {
			points[i].fig10 = points[i].fig10 || pt.fig10
			points[i].fig11 = points[i].fig11 || pt.fig11
			return
		}
		seen[k] = len(points)
		points = append(points, pt)
	}
	tors := p.Strings("tors")
	if len(tors) == 0 {
		return nil, o.Inputf("tors: expected hybrid, circuit or both")
	}
	for _, t := range tors {
		if t != ToRHybrid && t != ToRCircuit {
			return nil, o.Inputf("tors: %q, expected hybrid or circuit", t)
		}
	}
	for _, e := range p.Floats("eps_shares") {
		for _, h := range lab.Hosts {
			if e*link > h.EPSBps {
				return nil, o.Inputf("eps_shares %g: %s's packet-switch port carries %g Gb/s, less than %g of its %g Gb/s link", e, h.Name, h.EPSBps/1e9, e, link/1e9)
			}
		}
	}
	series := func(fig10, fig11 bool, share float64, small int) {
		if share < 1 && small == 0 {
			return
		}
		for _, t := range tors {
			if t == ToRCircuit {
				add(hybridPoint{tor: t, share: share, small: small, fig10: fig10, fig11: fig11, seriesName: ToRCircuit})
				continue
			}
			for _, e := range p.Floats("eps_shares") {
				add(hybridPoint{tor: t, epsShare: e, share: share, small: small, fig10: fig10, fig11: fig11, seriesName: "hybrid_eps" + pct(e)})
			}
		}
	}
	for _, s := range p.Floats("large_shares") {
		series(true, false, s, int(p.Int("fig10_small_flows")))
	}
	for _, m := range p.Floats("small_flows") {
		if m != math.Trunc(m) {
			return nil, o.Inputf("small_flows: %g is not a whole number", m)
		}
		series(false, true, p.Float("fig11_share"), int(m))
	}
	if len(points) == 0 {
		return nil, o.Inputf("no points: give large_shares or small_flows")
	}
	return points, nil
}

// record puts point pt's result into the summary and its figures' series.
func (st *hybridState) record(pt hybridPoint, x HybridPoint) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.s.Points = append(st.s.Points, x)
	put := func(m map[string]map[string]float64, key string) {
		if m[pt.seriesName] == nil {
			m[pt.seriesName] = map[string]float64{}
		}
		m[pt.seriesName][key] = x.GoodputFraction
	}
	if pt.fig10 {
		put(st.s.Fig10, "share"+pct(pt.share))
	}
	if pt.fig11 {
		put(st.s.Fig11, "small"+strconv.Itoa(pt.small))
	}
}

// Plan implements Recipe.
func (r *Hybrid) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	lab, binds, err := Bind(pc, p.String("ocs"), p.String("reactor"), int(p.Int("hosts")))
	if err != nil {
		return nil, err
	}
	n := len(lab.Hosts)
	W, night, minSlot := p.Duration("period"), p.Duration("night"), p.Duration("min_slot")
	if minSlot <= night {
		return nil, o.Inputf("min_slot %v must be longer than the night %v (it includes it)", minSlot, night)
	}
	link := lab.Hosts[0].LinkBps
	points, err := hybridPoints(p, lab)
	if err != nil {
		return nil, err
	}
	st := &hybridState{s: HybridSummary{Hosts: n, LinkGbps: link / 1e9, PeriodUS: us(W), NightUS: us(night), MinSlotUS: us(minSlot),
		Fig10: map[string]map[string]float64{}, Fig11: map[string]map[string]float64{}}}
	table := HybridTable()
	figs := HybridFigures(int(p.Int("fig10_small_flows")), p.Float("fig11_share"))
	if len(p.Floats("large_shares")) > 0 {
		table.Figures = append(table.Figures, figs[0])
	}
	if len(p.Floats("small_flows")) > 0 {
		table.Figures = append(table.Figures, figs[1])
	}
	plan := &o.Plan{Bindings: binds, Tables: []results.Table{table},
		Summary: func(partial bool) (any, error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			s := st.s
			s.Partial = partial
			return s, nil
		}}
	var run *Run
	plan.Steps = append(plan.Steps, &o.Step{
		Name: fmt.Sprintf("%d hosts: agents", n), Action: "prepare-hosts", Devices: lab.Devices(),
		Run: func(ctx context.Context, rc *o.RunContext) error {
			var err error
			run, err = Open(ctx, rc, lab)
			return err
		},
	})
	for _, pt := range points {
		eps := pt.epsShare * link
		name := fmt.Sprintf("%s ToR, large flow %.0f%%, %d small flows", pt.tor, pt.share*100, pt.small)
		if pt.tor == ToRHybrid {
			name = fmt.Sprintf("hybrid ToR (EPS %g Gb/s), large flow %.0f%%, %d small flows", eps/1e9, pt.share*100, pt.small)
		}
		plan.Steps = append(plan.Steps, &o.Step{
			Name: name, Action: "hybrid-point", Devices: lab.Devices(),
			Settings: []o.Setting{{Device: "hosts", Name: "eps_class", Value: eps / 1e9, Unit: "Gb/s"},
				{Device: lab.OCS, Name: "schedule", Value: "Solstice on the offered demand"}},
			Run: func(ctx context.Context, rc *o.RunContext) error {
				if run == nil {
					return o.Skip("the hosts were not prepared")
				}
				x, err := hybridRun(ctx, run, pt, eps, W, night, minSlot, int(p.Int("warmup")), int(p.Int("periods")), p.Duration("start_margin"))
				if err != nil {
					return err
				}
				tw, err := rc.Table("hybrid_goodput")
				if err != nil {
					return err
				}
				if err := tw.Write(x.ToR, x.EPSGbps, x.LargeShare, x.SmallFlows, x.GoodputFraction, x.Configurations); err != nil {
					return err
				}
				st.record(pt, x)
				rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("%s: goodput %.4f of the offered load with %d configurations", name, x.GoodputFraction, x.Configurations),
					Fields: map[string]any{"tor": x.ToR, "eps_gbps": x.EPSGbps, "large_flow_share": x.LargeShare, "small_flows": x.SmallFlows, "goodput_fraction": x.GoodputFraction}})
				return nil
			},
		})
	}
	return plan, nil
}

// Skewed is §5.4's workload on n hosts at link: host j sends a large flow
// of share x of its link to j+1 and splits the rest equally among m small
// flows to j+2, j+3, ... (mod n; past n-2 the destinations repeat).
// Flows with nothing to offer are left out. flows[j] lists host j's as
// (destination, rate) pairs.
func Skewed(n int, link, share float64, m int) [][]Offer {
	out := make([][]Offer, n)
	for j := range n {
		if share > 0 {
			out[j] = append(out[j], Offer{Dst: (j + 1) % n, Bps: share * link})
		}
		if share >= 1 {
			continue
		}
		for k := range m {
			off := 1
			if n > 2 {
				off = 2 + k%(n-2)
			}
			out[j] = append(out[j], Offer{Dst: (j + off) % n, Bps: (1 - share) * link / float64(m)})
		}
	}
	return out
}

// Offer is one paced flow's destination and rate on the wire.
type Offer struct {
	Dst int
	Bps float64
}

// Demand is the bytes per period the offers ask for (a demand oracle).
func Demand(offers [][]Offer, period time.Duration) sched.Demand {
	n := len(offers)
	rates := make([][]float64, n)
	for i := range rates {
		rates[i] = make([]float64, n)
		for _, f := range offers[i] {
			rates[i][f.Dst] += f.Bps
		}
	}
	return sched.FromRates(rates, period)
}

// Schedule is the controller's scheduler: Solstice, keeping the fewest of
// its configurations, in the order it cuts them, that leave the packet
// switch only what it carries in a period (every host's EPS bytes, sent
// and received, within EPSRate x W, a frame per pair allowed for
// rounding), all of them when none does or there is no packet switch:
// a pure circuit ToR gives every flow a circuit (§5.4).
func Schedule(d sched.Demand, c sched.Constraints) (sched.Schedule, error) {
	all, err := sched.Solstice(d, c, sched.Options{})
	if err != nil || c.EPSRate <= 0 || len(all.Slots) <= 1 {
		return all, err
	}
	fits := func(s sched.Schedule) (bool, error) {
		r, err := sched.Evaluate(s, d, c)
		if err != nil {
			return false, err
		}
		const frame = 1538
		for h := range d {
			var sent, recv, ps, pr int64
			for k := range d {
				if v := r.EPS[h][k]; v > 0 {
					sent, ps = sent+v, ps+1
				}
				if v := r.EPS[k][h]; v > 0 {
					recv, pr = recv+v, pr+1
				}
			}
			if sent > r.EPSCapacityBytes+ps*frame || recv > r.EPSCapacityBytes+pr*frame {
				return false, nil
			}
		}
		return true, nil
	}
	// The lit pairs only grow with the count, so what is left to the EPS
	// only shrinks: search for the fewest that fit.
	lo, hi, best := 1, len(all.Slots), all
	for lo < hi {
		m := (lo + hi) / 2
		s, err := sched.Solstice(d, c, sched.Options{MaxConfigs: m})
		if err != nil {
			return sched.Schedule{}, err
		}
		ok, err := fits(s)
		if err != nil {
			return sched.Schedule{}, err
		}
		if ok {
			best, hi = s, m
		} else {
			lo = m + 1
		}
	}
	return best, nil
}

// Flows waits until every host's data plane has passed t and returns the
// flows each host sent and received.
func (r *Run) Flows(ctx context.Context, t time.Duration) ([]hostagent.ReactorFlows, error) {
	out := make([]hostagent.ReactorFlows, len(r.Hosts))
	err := r.Each(ctx, func(ctx context.Context, i int, h Host, c *hostagent.Client) error {
		var err error
		out[i], err = c.ReactorWaitClock(ctx, int64(t), 10*time.Millisecond)
		return err
	})
	return out, err
}

func hybridRun(ctx context.Context, run *Run, pt hybridPoint, eps float64, W, night, minSlot time.Duration, warmup, periods int, margin time.Duration) (HybridPoint, error) {
	n := len(run.Hosts)
	link := run.Hosts[0].LinkBps
	x := HybridPoint{ToR: pt.tor, EPSGbps: eps / 1e9, LargeShare: pt.share, SmallFlows: pt.small, GoodputFraction: math.NaN()}
	if err := run.Setup(ctx, eps); err != nil {
		return x, err
	}
	offers := Skewed(n, link, pt.share, pt.small)
	c := run.Constraints(W, night, minSlot-night, eps)
	s, err := Schedule(Demand(offers, W), c)
	if err != nil {
		return x, o.Inputf("schedule: %v", err)
	}
	if err := sched.Validate(s, c); err != nil {
		return x, fmt.Errorf("schedule: %w", err)
	}
	x.Configurations = len(s.Slots)
	sw := run.ToSwitch(s)
	if err := run.Sched.Constraints().Validate(sw); err != nil {
		return x, o.Inputf("%s: %v", run.OCS, err)
	}
	total := time.Duration(warmup+periods) * W
	start, err := run.Start(ctx, sw, margin, func(i int, start time.Duration) []hostagent.ReactorFlowRequest {
		var fs []hostagent.ReactorFlowRequest
		for _, f := range offers[i] {
			fs = append(fs, hostagent.ReactorFlowRequest{Dst: run.Hosts[f.Dst].Name, Kind: hostagent.FlowPaced, RateBps: f.Bps, Target: run.Sinks[f.Dst],
				StartNs: int64(start), StopNs: int64(start + total + W), MeasureFromNs: int64(start + time.Duration(warmup)*W), MeasureToNs: int64(start + total)})
		}
		return fs
	})
	if err != nil {
		return x, err
	}
	if err := run.Announce(ctx, 0, start, s); err != nil {
		return x, err
	}
	fls, err := run.Flows(ctx, start+total)
	if err != nil {
		return x, err
	}
	if err := run.Stop(ctx); err != nil {
		return x, err
	}
	var offered, delivered int64
	for i, fs := range fls {
		for _, f := range fs.Sent {
			if !f.Measured {
				return x, fmt.Errorf("%s: flow %s to %s was not measured", run.Hosts[i].Name, f.ID, f.Dst)
			}
			offered += f.MeasuredSentBytes
		}
		for _, f := range fs.Received {
			delivered += f.MeasuredBytes
		}
	}
	if offered <= 0 {
		return x, fmt.Errorf("the hosts offered nothing over the measured periods")
	}
	x.GoodputFraction = float64(delivered) / float64(offered)
	return x, nil
}
