package stardust

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"testbed/dut/fabric"
	o "testbed/orchestrator"
	sd "testbed/p4/stardust"
	"testbed/results"
)

// FailoverName is the recipe's name on the command line.
const FailoverName = "stardust-failover"

// Failover is the stardust-failover recipe (§5.9, §5.10, App. E).
type Failover struct{}

// NewFailover returns the recipe.
func NewFailover() *Failover { return &Failover{} }

// Meta implements orchestrator.Recipe.
func (*Failover) Meta() o.Meta {
	return o.Meta{
		Name:        FailoverName,
		Version:     "1.3.0",
		Summary:     "Stardust self-healing: reachability convergence and throughput around a failed link, a failed FE and a corrupting link, against App. E's formula; on the model, or on a Stardust bench",
		Description: failoverDescription,
		Params:      failoverParams(),
		// §5.9-5.10: convergence against App. E's formula.
		Headlines: []string{"worst_over_formula", "bench.converged_over_bound", "tiers.*.events.*.detect_us"},
	}
}

const failoverDescription = `Runs the cell-level Stardust model with Poisson traffic at load and reachability cells
every reach_period (th of them to change a link's state), and in turn: fails FA 0's
connection to its first FE (all its parallel links to it: the bench has one), restores
it, fails that FE whole, restores it, then makes one of FA 0's links corrupt cells at
error_rate (a raised VOA, not a dark one) and later clean again. Each phase lasts
phase. Measured from the devices' own state and counters: when each end of the link
stops using it (detect), when the last cell is lost to the failure (converged: every
device's table excludes it), the cells lost, the delivered throughput in bins of bin
(its dip against the mean before the first failure, and when it is back above that mean
less three standard deviations of its bins), and after a restore or once clean, when the link is valid again. The corrupting link
marks itself faulty when the error rate its receiver measures over a reachability period
crosses error_threshold (§5.10), and is valid again after th good reachability cells.

App. E's reaction time is t x th = (c/f + pd) x ceil(N/(h x b)) x (2n - 1) x th, with
c/f the reach_period, pd a link's delay, N = FAs x hosts_per_fa hosts, b bitmap_bits and
n the tiers; the recipe reports it with and without pd beside what the model measured.

tiers=1 is the Stardust bench's fabric (8 FAs x 4 links to 4 FEs); tiers=2 a small
two-tier fabric (16 FAs x 8 links, 8 first-tier FEs in 2 groups, 16 second-tier FEs).
Links of link_gbps, host ports carrying what the links do. The model runs on the lab's
fabric device (kind fabric: the simulated lab's fabric1) and stands for the fabric
(model_only in the summary). Writes data/failover_events.csv,
failover_convergence.csv and failover_timeline.csv.

On a Stardust bench (switches with the inventory option stardust_role, e.g. --bench
stardust) the same tables come from the switches (measured_on: bench; failover_bench.go):
the fabric brought up as stardust-fabric's bench mode does, uniform traffic at load from
the FAs' generators, and a control plane in the recipe that polls every fabric port's
reachability age and FCS-error and received-frame counters every bench_poll on the
switches' clock and rewrites the spraying; the FAs' reassembly timers (§4.1, set to
bench_reassembly_timeout at bring-up) give up the frames lost in the fabric, and the
recipe counts them from the FAs' given-up counters at each poll. The first fabric link with a VOA goes dark (the VOA at its
maximum), comes back, its FE fails (its ports deleted through the switch driver) and comes
back, then the link corrupts (the VOA at the attenuation, found by bisection before the
phases, where its receiver counts about error_rate of frames with FCS errors) and is
cleaned. tiers, link_gbps and link_m are the model's; on the bench the links are
bench_link_gbps and the inventory's fibres.`

func failoverParams() []o.ParamSpec {
	return append([]o.ParamSpec{
		{Name: "tiers", Type: o.TypeFloats, Unit: "tiers", Default: []float64{1, 2}, Min: o.Bound(1), Max: o.Bound(2), Description: "FE tiers, one run each: 1 the bench's fabric, 2 a small two-tier one (model only: a bench is its own fabric)"},
		{Name: "load", Type: o.TypeFloat, Unit: "1", Default: 0.6, Min: o.Bound(0.01), Max: o.Bound(1), Description: "offered data over the fabric's data capacity"},
		// Table 4: S = 50 Gb/s, c/f = 10 us, th = 3, b = 128, h = 40.
		{Name: "link_gbps", Type: o.TypeFloat, Unit: "Gb/s", Default: 50.0, Min: o.Bound(1), Max: o.Bound(1000), Description: "fabric link rate (Table 4: 50 Gb/s; model only: the bench's is bench_link_gbps)"},
		{Name: "reach_period", Type: o.TypeDuration, Default: 10 * time.Microsecond, Min: o.Bound(1e-7), Max: o.Bound(0.01), Description: "reachability cell period, c/f (Table 4: 10 us)"},
		{Name: "th", Type: o.TypeInt, Default: int64(3), Min: o.Bound(1), Max: o.Bound(100), Description: "reachability cells to change a link's state (Table 4: 3)"},
		{Name: "bitmap_bits", Type: o.TypeInt, Default: int64(128), Min: o.Bound(1), Max: o.Bound(1 << 16), Description: "App. E's b, FAs per reachability cell; the model's cells carry every FA, so at most the FAs here"},
		{Name: "hosts_per_fa", Type: o.TypeInt, Default: int64(40), Min: o.Bound(1), Max: o.Bound(1 << 16), Description: "App. E's h, for N = FAs x h"},
		{Name: "link_m", Type: o.TypeFloat, Unit: "m", Default: 100.0, Min: o.Bound(0), Max: o.Bound(100000), Description: "fibre length of every fabric link, at 5 ns/m (Table 4: pd 500 ns; model only: the bench's are the inventory's)"},
		fciReactionParam(),
		// Ours: a cell error rate a raised VOA might give, and a threshold
		// under it that a period's worth of cells measures reliably.
		{Name: "error_rate", Type: o.TypeFloat, Unit: "1", Default: 0.05, Min: o.Bound(0), Max: o.Bound(1), Description: "cells corrupted on the corrupting link (on the bench: the frame error rate its receiver should count, which sets the VOA)"},
		{Name: "error_threshold", Type: o.TypeFloat, Unit: "1", Default: 0.01, Min: o.Bound(0), Max: o.Bound(1), Description: "measured error rate over a reachability period above which a link marks itself faulty"},
		{Name: "phase", Type: o.TypeDuration, Default: 300 * time.Microsecond, Min: o.Bound(1e-6), Max: o.Bound(1), Description: "duration of each phase (before, failed, restored, ...)"},
		{Name: "bin", Type: o.TypeDuration, Default: 10 * time.Microsecond, Min: o.Bound(1e-7), Max: o.Bound(0.01), Description: "throughput bin"},
	}, failoverBenchParams()...)
}

// FailoverTables are the recipe's tables and figures.
func FailoverTables() []results.Table {
	return []results.Table{
		{Name: "failover_events", Title: "Events", Description: "One row per tiers and event.",
			Fields: []results.Field{
				{Name: "tiers", Type: "integer"},
				{Name: "event", Type: "string", Description: "link-down, link-up, fe-down, fe-up, corrupt, clean"},
				{Name: "at_us", Type: "number", Unit: "us", Description: "when it happened, from the start"},
				{Name: "detect_us", Type: "number", Unit: "us", Description: "down events: until both ends of FA 0's link hold it invalid"},
				{Name: "converged_us", Type: "number", Unit: "us", Description: "down events: until the last cell lost to the failure"},
				{Name: "valid_us", Type: "number", Unit: "us", Description: "up and clean events: until both ends hold the link valid again"},
				{Name: "formula_us", Type: "number", Unit: "us", Description: "App. E: c/f x ceil(N/(h x b)) x (2n-1) x th"},
				{Name: "formula_pd_us", Type: "number", Unit: "us", Description: "App. E with the links' delay: (c/f + pd) x ceil(N/(h x b)) x (2n-1) x th"},
				{Name: "cells_lost", Type: "integer", Description: "cells lost to the failure in the phase: on a dead link or FE, with no route, or corrupted"},
				{Name: "congestion_lost", Type: "integer", Description: "cells an FE queue overflowed with in the phase"},
				{Name: "dip", Type: "number", Unit: "1", Description: "lowest bin's throughput over the mean before the first failure"},
				{Name: "recovered_us", Type: "number", Unit: "us", Description: "until the throughput stays above the mean before the first failure less three of its bins' standard deviations (empty: it never fell below)"},
				{Name: "reach_us", Type: "number", Unit: "us", Description: "bench, down events: until the receiving ends' reachability ages had reached th, as the control plane read them"},
				{Name: "measured_on", Type: "string", Description: "model, or bench (the switches, through the driver)"},
			}},
		{Name: "failover_convergence", Title: "Convergence against App. E", Description: "One row per tiers, down event and source.",
			Fields: []results.Field{
				{Name: "tiers", Type: "integer"}, {Name: "event", Type: "string"},
				{Name: "source", Type: "string", Description: "model, bench (converged), bench reachability (ages at th), or App. E with and without link delay"},
				{Name: "us", Type: "number", Unit: "us"},
			},
			Figures: []results.Figure{{Name: "failover-convergence", Title: "Reachability convergence after a failure",
				Caption: "Until the last cell lost to a failed link, a failed FE and a corrupting link in the model (on a bench: until data stopped going onto them, and until the reachability ages reached th), against App. E's t x th for the same parameters (§5.9).",
				Kind:    results.Bar, X: "event", Y: "us", Series: []string{"tiers", "source"}, Legend: "{tiers} tier(s), {source}",
				XLabel: "Event", YLabel: "Time (µs)"}}},
		{Name: "failover_timeline", Title: "Throughput around the events", Description: "One row per tiers and bin.",
			Fields: []results.Field{
				{Name: "tiers", Type: "integer"}, {Name: "t_us", Type: "number", Unit: "us", Description: "bin start"},
				{Name: "phase", Type: "string"},
				{Name: "throughput_gbps", Type: "number", Unit: "Gb/s", Description: "data delivered to the destination FAs"},
				{Name: "normalised", Type: "number", Unit: "1", Description: "over the mean before the first failure"},
				{Name: "cells_lost", Type: "integer"},
			},
			Figures: []results.Figure{{Name: "failover-throughput", Title: "Delivered throughput through failures",
				Caption: "The fabric's delivered data per bin over its mean before the first failure: a link fails and comes back, an FE fails and comes back, a link corrupts and is cleaned (§5.9, §5.10). Dashed lines mark each event.",
				Kind:    results.Line, X: "t_us", Y: "normalised", Series: []string{"tiers"}, Legend: "{tiers} tier(s)", Phase: "phase",
				XLabel: "Time (µs)", YLabel: "Throughput / before"}}},
	}
}

// FailoverEvent is one event's measurements; absent ones are nil.
type FailoverEvent struct {
	AtUS        float64  `json:"at_us"`
	DetectUS    *float64 `json:"detect_us,omitempty"`
	ConvergedUS *float64 `json:"converged_us,omitempty"`
	ValidUS     *float64 `json:"valid_us,omitempty"`
	CellsLost   int64    `json:"cells_lost"`
	// CongestionLost counts cells an FE queue overflowed with: the load
	// the failure moved onto the remaining links, before FCI throttles.
	CongestionLost int64    `json:"congestion_lost"`
	Dip            float64  `json:"dip"`
	RecoveredUS    *float64 `json:"recovered_us,omitempty"`
	// ReachUS (bench) is until the receiving ends' reachability ages had
	// reached th, as the control plane read them.
	ReachUS *float64 `json:"reach_us,omitempty"`
	// Marks (bench) counts the times the failed links were taken out in
	// the phase: more than one for a corrupting link that comes back after
	// th good periods of reachability cells and is taken out again.
	Marks int `json:"marks,omitempty"`
}

// FailoverRun is one fabric's run.
type FailoverRun struct {
	Fabric      string                   `json:"fabric"`
	FormulaUS   float64                  `json:"formula_us"`
	FormulaPDUS float64                  `json:"formula_pd_us"`
	Events      map[string]FailoverEvent `json:"events"`
	// WorstOverFormula is the slowest down event's convergence over
	// App. E's time with the links' delay.
	WorstOverFormula float64 `json:"worst_over_formula"`
}

// FailoverSummary is summary.json.
type FailoverSummary struct {
	Partial   bool `json:"partial"`
	ModelOnly bool `json:"model_only"`
	// MeasuredOn is "bench" when the numbers come from the switches of a
	// Stardust bench (empty for the model); Bench holds what only it has.
	MeasuredOn string         `json:"measured_on,omitempty"`
	Bench      *FailoverBench `json:"bench,omitempty"`
	// Tiers are keyed t1, t2 (the bench: t1).
	Tiers map[string]FailoverRun `json:"tiers"`
	// WorstOverFormula is the largest, all tiers.
	WorstOverFormula float64 `json:"worst_over_formula"`
}

func failoverConfig(p *o.Params, tiers int) (sd.Fabric, error) {
	c := sd.DefaultFabric()
	if tiers == 2 {
		c.FAs, c.FEs, c.LinksPerFA, c.Groups, c.Stages, c.FE2s = 16, 8, 8, 2, 2, 16
	} else {
		c.FAs, c.FEs, c.LinksPerFA, c.Groups, c.Stages, c.PortsPerFA = 8, 4, 4, 1, 1, 4
	}
	c.LinkBps = p.Float("link_gbps") * 1e9
	c.PortBps = c.LinkBps * float64(c.LinksPerFA) / float64(c.PortsPerFA)
	c.PropDelay = time.Duration(p.Float("link_m") * 5)
	c.ReachTh = int(p.Int("th"))
	c.FCIReaction = p.String("fci_reaction")
	c.ReachPeriodSlots = max(1, int(math.Round(p.Duration("reach_period").Seconds()/c.SlotSeconds())))
	data := float64(c.CellBytes) / float64(c.CellBytes+c.CellHeaderBytes+c.LinkOverheadBytes)
	c.Load = p.Float("load") * data
	return c, c.Validate()
}

// Plan implements Recipe. On the model it runs on the lab's fabric device;
// with Stardust switches in the inventory, on them (planBench).
func (r *Failover) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	if b, err := findBench(pc.Lab); err != nil {
		return nil, err
	} else if b != nil {
		return r.planBench(pc, b)
	}
	var tiers []int
	for _, f := range p.Floats("tiers") {
		if f != 1 && f != 2 {
			return nil, o.Inputf("tiers: %g, expected 1 or 2", f)
		}
		if !slices.Contains(tiers, int(f)) {
			tiers = append(tiers, int(f))
		}
	}
	if len(tiers) == 0 {
		return nil, o.Inputf("tiers: expected 1, 2 or both")
	}
	for _, n := range tiers {
		c, err := failoverConfig(p, n)
		if err != nil {
			return nil, o.Inputf("%s: the fabric's parameters: %v", FailoverName, err)
		}
		if b := int(p.Int("bitmap_bits")); b < c.FAs {
			return nil, o.Inputf("bitmap_bits %d: the model's reachability cells carry all %d FAs, so b must be at least that", b, c.FAs)
		}
		if p.Duration("phase") < 3*time.Duration(c.ReachTh+4)*p.Duration("reach_period") {
			return nil, o.Inputf("phase %v: expected at least 3 x (th + 4) reachability periods, for the fabric to converge and settle", p.Duration("phase"))
		}
	}
	dev, err := bindFabric(pc.Lab)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	sum := FailoverSummary{ModelOnly: true, Tiers: map[string]FailoverRun{}}
	done := 0
	plan := &o.Plan{Tables: FailoverTables(),
		Bindings: []o.Binding{modelBinding(dev, "the cell-level fabric alone (model_only)")},
		Summary: func(partial bool) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			s := sum
			s.Partial = partial || done < len(tiers)
			return s, nil
		}}
	for _, n := range tiers {
		c, _ := failoverConfig(p, n)
		plan.Steps = append(plan.Steps, &o.Step{Name: fmt.Sprintf("%d tier(s)", n), Action: "simulate", Devices: []string{dev}, Note: describe(c),
			Run: func(ctx context.Context, rc *o.RunContext) error {
				fr, err := failoverRun(ctx, rc, dev, p, n)
				if err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				sum.Tiers["t"+strconv.Itoa(n)] = fr
				sum.WorstOverFormula = max(sum.WorstOverFormula, fr.WorstOverFormula)
				done++
				return nil
			}})
	}
	return plan, nil
}

func ptr(v float64) *float64 { return &v }

func failoverRun(ctx context.Context, rc *o.RunContext, dev string, p *o.Params, tiers int) (FailoverRun, error) {
	c, err := failoverConfig(p, tiers)
	if err != nil {
		return FailoverRun{}, err
	}
	f, err := openCells(ctx, rc, dev, c, rc.Seed^uint64(tiers), 0xfa)
	if err != nil {
		return FailoverRun{}, err
	}
	ft, err := o.As[fabric.Faults](rc, dev)
	if err != nil {
		return FailoverRun{}, err
	}
	slot := c.SlotSeconds()
	m := &failoverModel{rc: rc, f: f, ft: ft, tiers: tiers, slot: slot, base: -1,
		phase: int64(math.Round(p.Duration("phase").Seconds() / slot)),
		bin:   max(1, int64(math.Round(p.Duration("bin").Seconds()/slot)))}
	// App. E.
	period := float64(c.ReachPeriodSlots) * slot
	pd := float64(int(math.Ceil(c.PropDelay.Seconds()/slot))+1) * slot // a link's delay as the model counts it
	msgs := math.Ceil(float64(c.FAs*int(p.Int("hosts_per_fa"))) / float64(int(p.Int("hosts_per_fa"))*int(p.Int("bitmap_bits"))))
	hops := float64(2*tiers - 1)
	m.fr = FailoverRun{Fabric: describe(c), Events: map[string]FailoverEvent{},
		FormulaUS:   period * msgs * hops * float64(c.ReachTh) * 1e6,
		FormulaPDUS: (period + pd) * msgs * hops * float64(c.ReachTh) * 1e6}

	// FA 0's connection to its first FE: its links j with j mod (FEs of
	// a group) = 0; watched, with FA 0's reach to FA 1 over each, slot by
	// slot.
	g1 := c.FEs / max(c.Groups, 1)
	m.watch = fabric.WatchSpec{Bin: m.bin}
	var fe int
	for j := 0; j < c.LinksPerFA; j += g1 {
		l, err := ft.FALink(ctx, 0, j, -1)
		if err != nil {
			return m.fr, err
		}
		if j == 0 {
			fe = l.FE
		}
		m.watch.Links = append(m.watch.Links, l.Link)
		m.watch.Reach = append(m.watch.Reach, fabric.Reach{FA: 0, J: j, Dst: 1})
	}
	if m.tl, err = rc.Table("failover_timeline"); err != nil {
		return m.fr, err
	}
	for _, ph := range modelPhases(ctx, ft, m.watch.Links, fe, p) {
		if err := m.runPhase(ctx, ph); err != nil {
			return m.fr, err
		}
	}
	m.fr.WorstOverFormula = m.worst
	return m.fr, nil
}

// modelPhase is a phase of the model's run: the fault it applies, and the
// watched state its detection (down) or its restore (up) reaches, or nil.
type modelPhase struct {
	name  string
	apply func() error
	down  func(fabric.WatchState) bool
	up    func(fabric.WatchState) bool
}

// modelPhases are the run's phases over FA 0's watched links to its first
// FE (fe): the links down and up, the FE down and up, the first link
// corrupting and clean.
func modelPhases(ctx context.Context, ft fabric.Faults, links []int, fe int, p *o.Params) []modelPhase {
	all := func(bs []bool, v bool) bool {
		for _, b := range bs {
			if b != v {
				return false
			}
		}
		return true
	}
	valid := func(w fabric.WatchState) bool { return all(w.Valid, true) }
	invalid := func(w fabric.WatchState) bool { return all(w.Valid, false) }
	// An FE that fails sends no reachability cells: FA 0's ends of its
	// links find that; the FE's own ends, dead with it, hold nothing.
	faOut := func(w fabric.WatchState) bool { return all(w.Reach, false) }
	corruptLink := links[0] // Valid[0]
	cleanValid := func(w fabric.WatchState) bool { return w.Valid[0] }
	corruptOut := func(w fabric.WatchState) bool { return !w.Valid[0] }
	setLinks := func(up bool) error {
		for _, l := range links {
			if err := ft.SetLink(ctx, l, up); err != nil {
				return err
			}
		}
		return nil
	}
	return []modelPhase{
		{name: "before", apply: func() error { return nil }},
		{name: "link-down", apply: func() error { return setLinks(false) }, down: invalid},
		{name: "link-up", apply: func() error { return setLinks(true) }, up: valid},
		{name: "fe-down", apply: func() error { return ft.SetFE(ctx, 1, fe, false) }, down: faOut},
		{name: "fe-up", apply: func() error { return ft.SetFE(ctx, 1, fe, true) }, up: valid},
		{name: "corrupt", apply: func() error {
			return ft.SetLinkErrorRate(ctx, corruptLink, p.Float("error_rate"), p.Float("error_threshold"))
		}, down: corruptOut},
		{name: "clean", apply: func() error { return ft.SetLinkErrorRate(ctx, corruptLink, 0, p.Float("error_threshold")) }, up: cleanValid},
	}
}

// failoverModel is a failover run on the model, phase after phase.
type failoverModel struct {
	rc          *o.RunContext
	f           fabric.Fabric
	ft          fabric.Faults
	tiers       int
	slot        float64
	phase, bin  int64
	watch       fabric.WatchSpec
	tl          *results.TableWriter
	base, floor float64 // mean bin before the first failure, and the normal range's floor over it
	worst       float64
	fr          FailoverRun
}

func (m *failoverModel) us(slots int64) float64 { return float64(slots) * m.slot * 1e6 }

// failLost are the cells lost to a failure (the watch's Lost): on a dead
// link or FE, with no route, or corrupted. Cells an FE queue overflowed
// with are congestion's, apart.
func failLost(s sd.FabricStats) int64 { return s.CellsLostFailed + s.CellsNoRoute + s.CellsCorrupted }

// runPhase applies a phase, watches it and writes its timeline; the
// first phase sets the baseline, the others are events against it.
func (m *failoverModel) runPhase(ctx context.Context, ph modelPhase) error {
	if err := ph.apply(); err != nil {
		return err
	}
	s0, err := m.f.Stats(ctx)
	if err != nil {
		return err
	}
	at := s0.Slots
	ev := FailoverEvent{AtUS: m.us(at)}
	lost0, cong0 := failLost(s0), s0.CellsLost
	pw, err := watchPhase(ctx, m.ft, m.watch, at, m.phase, lost0, ph.down, ph.up)
	if err != nil {
		return err
	}
	if pw.detect >= 0 {
		ev.DetectUS = ptr(m.us(pw.detect - at))
	}
	if pw.valid >= 0 {
		ev.ValidUS = ptr(m.us(pw.valid - at))
	}
	bins, err := m.writeBins(ph.name, pw.bins, s0.BytesArrived, lost0)
	if err != nil {
		return err
	}
	s1, err := m.f.Stats(ctx)
	if err != nil {
		return err
	}
	ev.CellsLost = failLost(s1) - lost0
	ev.CongestionLost = s1.CellsLost - cong0
	if ph.name == "before" {
		// The first bins hold the fabric filling: the mean of the
		// second half.
		var sd float64
		m.base, sd = meanSD(bins[len(bins)/2:])
		// Three standard deviations of the bins below the mean: the
		// Poisson traffic's own spread is no dip.
		m.floor = 1 - 3*sd/m.base
		return nil
	}
	ev.Dip = 1
	last := -1
	for i, b := range bins {
		ev.Dip = min(ev.Dip, b/m.base)
		if b/m.base < m.floor {
			last = i
		}
	}
	if last >= 0 {
		ev.RecoveredUS = ptr(m.us(int64(last+1) * m.bin))
	}
	if ph.down != nil {
		if pw.lastLoss >= 0 {
			ev.ConvergedUS = ptr(m.us(pw.lastLoss - at))
		} else {
			ev.ConvergedUS = ptr(0)
		}
		m.worst = max(m.worst, *ev.ConvergedUS/m.fr.FormulaPDUS)
	}
	m.fr.Events[ph.name] = ev
	return m.writeEvent(ph.name, ph.down != nil, ev)
}

// writeBins writes a phase's timeline, a row per bin, and returns the
// bytes each bin delivered.
func (m *failoverModel) writeBins(name string, bs []fabric.Bin, binBytes, binLost int64) ([]float64, error) {
	var bins []float64
	for _, b := range bs {
		x := float64(b.BytesArrived - binBytes)
		bins = append(bins, x)
		norm := any(nil)
		if m.base > 0 {
			norm = x / m.base
		}
		if err := m.tl.Write(m.tiers, m.us(b.Slot-m.bin), name, x*8/(float64(m.bin)*m.slot)/1e9, norm, b.Lost-binLost); err != nil {
			return nil, err
		}
		binBytes, binLost = b.BytesArrived, b.Lost
	}
	return bins, nil
}

// writeEvent writes an event's row, and for a failure (down) its
// convergence beside App. E's.
func (m *failoverModel) writeEvent(name string, down bool, ev FailoverEvent) error {
	fr, tiers := m.fr, m.tiers
	et, err := m.rc.Table("failover_events")
	if err != nil {
		return err
	}
	var fo, fopd any
	if down {
		fo, fopd = fr.FormulaUS, fr.FormulaPDUS
	}
	if err := et.Write(tiers, name, ev.AtUS, nilable(ev.DetectUS), nilable(ev.ConvergedUS), nilable(ev.ValidUS), fo, fopd, ev.CellsLost, ev.CongestionLost, ev.Dip, nilable(ev.RecoveredUS), nil, "model"); err != nil {
		return err
	}
	if down {
		ct, err := m.rc.Table("failover_convergence")
		if err != nil {
			return err
		}
		for _, row := range []struct {
			src string
			v   float64
		}{{"model", *ev.ConvergedUS}, {"App. E", fr.FormulaUS}, {"App. E with pd", fr.FormulaPDUS}} {
			if err := ct.Write(tiers, name, row.src, row.v); err != nil {
				return err
			}
		}
	}
	m.rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("%d tier(s), %s: detect %s, converged %s, valid %s us; %d cells lost, dip %.3f, recovered %s us (App. E %.1f us, %.1f with pd)",
		tiers, name, fmtp(ev.DetectUS), fmtp(ev.ConvergedUS), fmtp(ev.ValidUS), ev.CellsLost, ev.Dip, fmtp(ev.RecoveredUS), fr.FormulaUS, fr.FormulaPDUS)})
	return nil
}

// phaseWatch is what a phase's watch saw: the first slot after which its
// event's detection (down) and its restore (up) held, the last slot in
// which a failure lost a cell (each -1: none), and the bins' samples.
type phaseWatch struct {
	detect, valid, lastLoss int64
	bins                    []fabric.Bin
}

// watchPhase steps the fabric through the phase slots from slot at,
// watching w slot by slot (in watches of at most 20000 slots, so that an
// interrupted run stops soon); lost0 is the failure-lost cells at at.
func watchPhase(ctx context.Context, ft fabric.Faults, w fabric.WatchSpec, at, phase, lost0 int64, down, up func(fabric.WatchState) bool) (phaseWatch, error) {
	pw := phaseWatch{detect: -1, valid: -1, lastLoss: -1}
	// check sees the state after slot n: the first slot each holds.
	check := func(n int64, st fabric.WatchState) {
		if down != nil && pw.detect < 0 && down(st) {
			pw.detect = n
		}
		if up != nil && pw.valid < 0 && up(st) {
			pw.valid = n
		}
	}
	prevLost := lost0
	for now := at; now < at+phase; {
		w.Slots, w.Origin = min(at+phase-now, 20000), at
		tr, err := ft.Watch(ctx, w)
		if err != nil {
			return pw, err
		}
		check(now+1, tr.StateAt(now+1))
		for _, st := range tr.Changes {
			if st.Lost > prevLost {
				pw.lastLoss = st.Slot
			}
			prevLost = st.Lost
			if st.Slot > now+1 {
				check(st.Slot, st)
			}
		}
		pw.bins = append(pw.bins, tr.Bins...)
		now = tr.Now
	}
	return pw, nil
}

func nilable(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func fmtp(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 2, 64)
}

// meanSD is the mean of xs and their sample standard deviation (0 for
// one value).
func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var v float64
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(v / float64(max(1, len(xs)-1)))
}
