// Package ocscharacterize is the ocs-characterize recipe: the
// reconfiguration delay of a microsecond optical circuit switch measured
// from its own timestamps (REACToR §4, Fig. 5). The switch runs a schedule
// that changes every circuit at every slot; every night it records (the
// interval during which no circuit carried light) is one sample.
package ocscharacterize

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"testbed/instruments/ocs"
	"testbed/internal/sched"
	"testbed/inventory"
	o "testbed/orchestrator"
	"testbed/results"
)

// Name is the recipe's name on the command line.
const Name = "ocs-characterize"

// Recipe implements orchestrator.Recipe.
type Recipe struct{}

// New returns the recipe.
func New() *Recipe { return &Recipe{} }

// Meta implements orchestrator.Recipe.
func (*Recipe) Meta() o.Meta {
	return o.Meta{
		Name:        Name,
		Version:     "1.0.0",
		Summary:     "reconfiguration delay of a microsecond OCS from its own timestamps, as a histogram (REACToR Fig. 5)",
		Description: description,
		Params:      params(),
		// Fig. 5: the reconfiguration delay's mean, tail and worst, and slots missed.
		Headlines: []string{"mean_us", "p99_us", "max_us", "missed"},
	}
}

const description = `Uploads a schedule to a microsecond optical circuit switch (default: the only one in the lab
that runs schedules, or the first by name) and runs it for the given number of periods. Each
period holds slots configurations; configuration k joins input i to output ((i-1+k) mod
ports)+1, so consecutive slots move every circuit. Each slot is a night of night_us (the
reconfiguration budget; default the switch's minimum, its worst-case gap) followed by
slot_us of light, and the period is exactly the slots. The switch records every night
(start and end of the interval during which no circuit carried light); the recipe reads
that record while the schedule runs, stops it, and writes one row per night to
data/reconfig.csv and the histogram of the gaps, in bins of bin_us, to
data/reconfig_hist.csv. The summary gives the count, mean, standard deviation, minimum,
median, 99th percentile and maximum gap, and how many nights outlasted the budget. The
switch is put dark (no schedule, no circuit) at the end or on abort.`

func params() []o.ParamSpec {
	return []o.ParamSpec{
		{Name: "ocs", Type: o.TypeString, Default: "", Description: "the switch (default: the lab's only switch that runs schedules, else the first by name)"},
		{Name: "ports", Type: o.TypeInt, Default: int64(0), Min: o.Bound(0), Max: o.Bound(4096), Description: "ports the configurations cycle (0: all of the switch's ports)"},
		{Name: "slots", Type: o.TypeInt, Default: int64(8), Min: o.Bound(1), Max: o.Bound(1024), Description: "configurations per period"},
		{Name: "slot_us", Type: o.TypeFloat, Unit: "us", Default: 100.0, Min: o.Bound(0.001), Max: o.Bound(1e6), Description: "how long each configuration's circuits are up, night excluded"},
		{Name: "night_us", Type: o.TypeFloat, Unit: "us", Default: 0.0, Min: o.Bound(0), Max: o.Bound(1e6), Description: "night budget before each slot (0: the switch's minimum)"},
		{Name: "periods", Type: o.TypeInt, Default: int64(500), Min: o.Bound(1), Max: o.Bound(10_000_000), Description: "periods to run"},
		{Name: "bin_us", Type: o.TypeFloat, Unit: "us", Default: 0.25, Min: o.Bound(0.001), Max: o.Bound(1000), Description: "width of the histogram's bins"},
	}
}

// Tables are the recipe's data tables.
func Tables() []results.Table {
	return []results.Table{
		{
			Name:        "reconfig",
			Title:       "Reconfigurations as the switch recorded them",
			Description: "One row per night of the run: no circuit carried light from start_us to end_us (times from the start of the schedule, on the switch's clock).",
			Fields: []results.Field{
				{Name: "period", Type: "integer", Description: "period of the schedule, from 0"},
				{Name: "slot", Type: "integer", Description: "slot the night began, from 0"},
				{Name: "config", Type: "integer", Description: "the slot's configuration k: input i feeds output ((i-1+k) mod ports)+1"},
				{Name: "start_us", Type: "number", Unit: "us", Description: "when the night began"},
				{Name: "end_us", Type: "number", Unit: "us", Description: "when the new circuits carried light"},
				{Name: "gap_us", Type: "number", Unit: "us", Description: "end_us - start_us: the reconfiguration delay"},
			},
			// REACToR Fig. 5: the histogram of the observed delay.
			Figures: []results.Figure{
				{Name: "reconfig-delay-histogram", Title: "Observed end-to-end circuit switch reconfiguration delay",
					Caption: "As REACToR Fig. 5: every night of the run, binned.",
					Kind:    results.Histogram, X: "gap_us", Bins: 30,
					XLabel: "Reconfiguration delay (µs)", YLabel: "Number of reconfigurations"},
				{Name: "reconfig-delay-over-time", Title: "Reconfiguration delay of every night",
					Kind: results.Scatter, X: "start_us", Y: "gap_us", XScale: 1e-3,
					XLabel: "Start of the night (ms)", YLabel: "Reconfiguration delay (µs)"},
			},
		},
		{
			Name:        "reconfig_hist",
			Title:       "Histogram of the reconfiguration delay (REACToR Fig. 5)",
			Description: "Nights per bin of gap_us; a gap g falls in the bin with bin_start_us <= g < bin_end_us.",
			Fields: []results.Field{
				{Name: "bin_start_us", Type: "number", Unit: "us", Description: "lower edge"},
				{Name: "bin_end_us", Type: "number", Unit: "us", Description: "upper edge"},
				{Name: "count", Type: "integer", Description: "nights in the bin"},
				{Name: "fraction", Type: "number", Description: "count over all nights"},
				{Name: "cumulative", Type: "number", Description: "fraction of nights up to the bin's upper edge"},
			},
		},
	}
}

// Summary is summary.json.
type Summary struct {
	Partial  bool    `json:"partial"`
	OCS      string  `json:"ocs"`
	Ports    int     `json:"ports"`
	Slots    int     `json:"slots"`
	SlotUS   float64 `json:"slot_us"`
	NightUS  float64 `json:"night_us"`
	PeriodUS float64 `json:"period_us"`
	Periods  int64   `json:"periods"`
	// Expected is periods x slots; Count the nights recorded; Missed
	// those the switch's record had dropped before they were read.
	Expected int64 `json:"expected"`
	Count    int64 `json:"count"`
	Missed   int64 `json:"missed"`
	// The gap's distribution, in us.
	MeanUS float64 `json:"mean_us"`
	SDUS   float64 `json:"sd_us"`
	MinUS  float64 `json:"min_us"`
	P50US  float64 `json:"p50_us"`
	P99US  float64 `json:"p99_us"`
	MaxUS  float64 `json:"max_us"`
	// OverBudget counts nights longer than night_us: a circuit that lit
	// after the hosts were told to send.
	OverBudget int64 `json:"over_budget"`
}

// Schedules are the capabilities a switch this recipe runs on needs: it
// runs timed schedules and records its nights. The drivers that declare
// them are asked of the driver registry, before anything is opened.
var Schedules = []string{ocs.CapSchedule, ocs.CapNightLog}

// RunsSchedules reports whether an inventory device is an optical circuit
// switch whose driver runs schedules and records their nights.
func RunsSchedules(d *inventory.Device) bool {
	return d.Kind == ocs.Kind && o.DriverHas(d.Kind, d.Driver, Schedules...)
}

// BindSwitch picks the scheduling switch a recipe runs on: the named one,
// or the lab's only one (the first by name if there are several).
func BindSwitch(lab *inventory.Inventory, name string) (*inventory.Device, o.Binding, error) {
	var cands []string
	for _, n := range lab.DeviceNames() {
		d, _ := lab.Device(n)
		if RunsSchedules(d) {
			cands = append(cands, n)
		}
	}
	if name != "" {
		d, ok := lab.Device(name)
		switch {
		case !ok:
			return nil, o.Binding{}, o.Inputf("ocs: no device %q in %s (switches that run schedules: %s)", name, lab.Path, orNone(cands))
		case d.Kind != "ocs":
			return nil, o.Binding{}, o.Inputf("%v", lab.DeviceErrorf(d, "kind", "device %s is a %s, not an ocs", name, d.Kind))
		case !RunsSchedules(d):
			return nil, o.Binding{}, o.Inputf("%v", lab.DeviceErrorf(d, "driver", "%s (%s) holds one configuration at a time; this recipe needs a switch that runs schedules and records its nights (drivers: %s)",
				name, d.Driver, strings.Join(o.DriversWith(ocs.Kind, Schedules...), ", ")))
		}
		return d, o.Binding{Role: "ocs", Resource: name, Detail: d.Driver + " " + d.Address}, nil
	}
	if len(cands) == 0 {
		return nil, o.Binding{}, o.Inputf("the lab in %s cannot serve this recipe: it needs an optical circuit switch that runs schedules (kind ocs, driver %s); it has none",
			lab.Path, strings.Join(o.DriversWith(ocs.Kind, Schedules...), " or "))
	}
	d, _ := lab.Device(cands[0])
	detail := d.Driver + " " + d.Address
	if len(cands) > 1 {
		detail += fmt.Sprintf(" (first of %s; choose with --set ocs=...)", strings.Join(cands, ", "))
	}
	return d, o.Binding{Role: "ocs", Resource: d.Name, Detail: detail}, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func usDur(us float64) time.Duration {
	return time.Duration(math.Round(us * float64(time.Microsecond)))
}

func durUS(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

type state struct {
	mu sync.Mutex
	s  Summary
}

// Plan implements Recipe.
func (r *Recipe) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	dev, bind, err := BindSwitch(pc.Lab, p.String("ocs"))
	if err != nil {
		return nil, err
	}
	slots, periods := int(p.Int("slots")), p.Int("periods")
	slotD, nightD := usDur(p.Float("slot_us")), usDur(p.Float("night_us"))
	if slotD <= 0 {
		return nil, o.Inputf("slot_us %g rounds to no time at all", p.Float("slot_us"))
	}
	if n := int64(slots) * periods; n > 50_000_000 {
		return nil, o.Inputf("%d slots x %d periods is %d nights: at most 50,000,000", slots, periods, n)
	}
	st := &state{s: Summary{OCS: dev.Name, Slots: slots, SlotUS: p.Float("slot_us"), Periods: periods, Expected: int64(slots) * periods}}
	tables := Tables()
	// The figure's bins are the recipe's (bin_us), as its histogram table's.
	tables[0].Figures[0].BinWidth = p.Float("bin_us")
	plan := &o.Plan{Bindings: []o.Binding{bind}, Tables: tables,
		Summary: func(partial bool) (any, error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			s := st.s
			s.Partial = partial || s.Count < s.Expected
			return s, nil
		}}
	night := "the switch's minimum"
	if nightD > 0 {
		night = fmt.Sprintf("%g us", p.Float("night_us"))
	}
	plan.Steps = append(plan.Steps, &o.Step{
		Name: fmt.Sprintf("%s: %d periods of %d configurations", dev.Name, periods, slots), Action: "characterize", Devices: []string{dev.Name},
		Settings: []o.Setting{
			{Device: dev.Name, Name: "schedule", Value: fmt.Sprintf("%d slots of %g us after a night of %s, cycling every circuit", slots, p.Float("slot_us"), night)},
			{Device: dev.Name, Name: "after", Value: "dark (no schedule, no circuit)"},
		},
		Note: "the period is the slots' total; ports default to the switch's",
		Run: func(ctx context.Context, rc *o.RunContext) error {
			run := &characterization{rc: rc, name: dev.Name, ports: int(p.Int("ports")), slots: slots, slot: slotD, night: nightD,
				periods: periods, bin: p.Float("bin_us"), st: st}
			return run.run(ctx)
		},
	})
	return plan, nil
}

type characterization struct {
	rc          *o.RunContext
	name        string
	ports       int
	slots       int
	slot, night time.Duration
	periods     int64
	bin         float64
	st          *state
}

// Build returns the schedule: slots configurations of ports, each a shift
// by one more than the last (skipping the identity), slot long after a
// night, the period exactly their total.
func Build(ports, slots int, slot, night time.Duration) sched.Schedule {
	s := sched.Schedule{Delta: night}
	for k := range slots {
		s.Slots = append(s.Slots, sched.Slot{Duration: slot, Perm: ocs.Shift(ports, ShiftOf(ports, k)).Perm(ports)})
	}
	s.Period = s.Busy()
	return s
}

// ShiftOf is the configuration of slot k on a switch of ports ports:
// shifts 1..ports-1 in turn.
func ShiftOf(ports, k int) int {
	if ports < 2 {
		return 0
	}
	return k%(ports-1) + 1
}

func (c *characterization) run(ctx context.Context) error {
	rc := c.rc
	if err := rc.DarkOCSOnExit(c.name); err != nil {
		return err
	}
	cs, err := rc.OCS(c.name)
	if err != nil {
		return err
	}
	sw, err := ocs.AsScheduler(cs)
	if err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	con := sw.Constraints()
	maxPorts := min(con.Ports.Inputs, con.Ports.Outputs)
	if c.ports == 0 {
		c.ports = maxPorts
	}
	if c.ports < 2 || c.ports > maxPorts {
		return o.Inputf("ports %d: %s has %s ports; at least 2 are needed to reconfigure", c.ports, c.name, con.Ports)
	}
	if c.night == 0 {
		c.night = con.MinNight
	}
	s := Build(c.ports, c.slots, c.slot, c.night)
	if err := con.Validate(s); err != nil {
		return o.Inputf("%s: %v", c.name, err)
	}
	c.st.mu.Lock()
	c.st.s.Ports, c.st.s.NightUS, c.st.s.PeriodUS = c.ports, durUS(c.night), durUS(s.Period)
	c.st.mu.Unlock()

	// Where the switch's record stands now: nights from here on are ours.
	since, err := drain(ctx, sw, 0, nil)
	if err != nil {
		return err
	}
	if err := cs.Dark(ctx); err != nil {
		return err
	}
	if err := sw.LoadSchedule(ctx, s); err != nil {
		return err
	}
	start, err := sw.StartSchedule(ctx, ocs.StartAt{NextPeriod: true})
	if err != nil {
		return err
	}
	end := start + time.Duration(c.periods)*s.Period
	rc.Event(results.Event{Type: "setting", Device: c.name, Message: fmt.Sprintf("schedule of %d x %v slots (%v nights) on %d ports, period %v, starts at %v on the switch's clock",
		c.slots, c.slot, c.night, c.ports, s.Period, start),
		Fields: map[string]any{"start_ns": int64(start), "period_ns": int64(s.Period), "night_ns": int64(c.night), "slots": c.slots, "ports": c.ports}})

	var nights []ocs.Night
	var missed uint64
	keep := func(nl ocs.NightLog) {
		missed += nl.Missed
		for _, n := range nl.Nights {
			if n.Period >= 0 && n.Period < c.periods && n.Start >= start {
				nights = append(nights, n)
			}
		}
	}
	// Read the record as the schedule runs, so the switch's ring never
	// overwrites a night before it is read.
	poll := min(max(s.Period*4, 5*time.Millisecond), 200*time.Millisecond)
	lastReport := time.Now()
	for {
		now, err := sw.Clock(ctx)
		if err != nil {
			return err
		}
		if since, err = drain(ctx, sw, since, keep); err != nil {
			return err
		}
		if now >= end+s.Period {
			break
		}
		if time.Since(lastReport) > 2*time.Second {
			lastReport = time.Now()
			rc.Event(results.Event{Type: "measurement", Device: c.name, Message: fmt.Sprintf("%d of %d nights recorded", len(nights), c.periods*int64(c.slots))})
		}
		wait := min(poll, end+s.Period-now)
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(max(wait, time.Millisecond)):
		}
	}
	if err := sw.StopSchedule(ctx); err != nil {
		return err
	}
	if _, err := drain(ctx, sw, since, keep); err != nil {
		return err
	}
	return c.write(nights, missed)
}

// pageSize is the most nights one read of the record returns (the REST
// API's maximum page).
const pageSize = 4096

// drain reads the switch's record from since on, page after page until a
// page is not full, handing each page to keep, and returns where to read
// from next. It does not chase a running schedule: nights recorded while
// it reads wait for the next call.
func drain(ctx context.Context, sw ocs.Scheduler, since uint64, keep func(ocs.NightLog)) (uint64, error) {
	for {
		nl, err := sw.Nights(ctx, since)
		if err != nil {
			return since, err
		}
		if keep != nil {
			keep(nl)
		}
		since = max(since, nl.Next)
		if len(nl.Nights) < pageSize {
			return since, nil
		}
	}
}

func (c *characterization) write(nights []ocs.Night, missed uint64) error {
	sort.Slice(nights, func(i, j int) bool { return nights[i].Seq < nights[j].Seq })
	tbl, err := c.rc.Table("reconfig")
	if err != nil {
		return err
	}
	gaps := make([]float64, 0, len(nights))
	var over int64
	for _, n := range nights {
		g := durUS(n.Gap())
		gaps = append(gaps, g)
		if n.Gap() > c.night {
			over++
		}
	}
	st := Describe(gaps)
	c.st.mu.Lock()
	s := &c.st.s
	s.Count, s.Missed, s.OverBudget = int64(len(gaps)), int64(missed), over
	s.MeanUS, s.SDUS, s.MinUS, s.P50US, s.P99US, s.MaxUS = st.Mean, st.SD, st.Min, st.P50, st.P99, st.Max
	c.st.mu.Unlock()

	// Times from the start of the schedule: the first period's start.
	origin := time.Duration(-1)
	for _, n := range nights {
		if n.Period == 0 && n.Slot == 0 {
			origin = n.Start
			break
		}
	}
	if origin < 0 && len(nights) > 0 {
		origin = nights[0].Start
	}
	for _, n := range nights {
		if err := tbl.Write(n.Period, n.Slot, ShiftOf(c.ports, n.Slot), durUS(n.Start-origin), durUS(n.End-origin), durUS(n.Gap())); err != nil {
			return err
		}
	}
	ht, err := c.rc.Table("reconfig_hist")
	if err != nil {
		return err
	}
	for _, b := range Histogram(gaps, c.bin) {
		if err := ht.Write(b.Start, b.End, b.Count, b.Fraction, b.Cumulative); err != nil {
			return err
		}
	}
	c.rc.Event(results.Event{Type: "measurement", Device: c.name,
		Message: fmt.Sprintf("%d nights: gap mean %.3f us, p50 %.3f us, p99 %.3f us, max %.3f us (%d over the %.1f us budget)", len(gaps), st.Mean, st.P50, st.P99, st.Max, over, durUS(c.night)),
		Fields:  map[string]any{"count": len(gaps), "mean_us": st.Mean, "p99_us": st.P99, "max_us": st.Max, "missed": missed}})
	if missed > 0 {
		return fmt.Errorf("%s: the switch's record dropped %d nights before they were read", c.name, missed)
	}
	return nil
}

// Stats describe a sample.
type Stats struct {
	Count                        int
	Mean, SD, Min, P50, P99, Max float64
}

// Describe computes the sample's statistics; percentiles are nearest-rank
// (the p-th is the ceil(p/100 n)-th smallest). An empty sample gives NaNs.
func Describe(xs []float64) Stats {
	s := Stats{Count: len(xs)}
	if len(xs) == 0 {
		nan := math.NaN()
		s.Mean, s.SD, s.Min, s.P50, s.P99, s.Max = nan, nan, nan, nan, nan, nan
		return s
	}
	v := slices.Clone(xs)
	slices.Sort(v)
	var sum float64
	for _, x := range v {
		sum += x
	}
	s.Mean = sum / float64(len(v))
	var ss float64
	for _, x := range v {
		ss += (x - s.Mean) * (x - s.Mean)
	}
	if len(v) > 1 {
		s.SD = math.Sqrt(ss / float64(len(v)-1))
	}
	rank := func(p float64) float64 {
		k := int(math.Ceil(p / 100 * float64(len(v))))
		return v[min(max(k, 1), len(v))-1]
	}
	s.Min, s.P50, s.P99, s.Max = v[0], rank(50), rank(99), v[len(v)-1]
	return s
}

// Bin is one histogram bin [Start, End).
type Bin struct {
	Start, End           float64
	Count                int
	Fraction, Cumulative float64
}

// Histogram bins xs in bins of width w aligned on multiples of w, from
// the bin holding the smallest value to the one holding the largest.
func Histogram(xs []float64, w float64) []Bin {
	if len(xs) == 0 || !(w > 0) {
		return nil
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	first, last := int64(math.Floor(lo/w)), int64(math.Floor(hi/w))
	counts := make([]int, last-first+1)
	for _, x := range xs {
		counts[int64(math.Floor(x/w))-first]++
	}
	out := make([]Bin, len(counts))
	cum := 0
	for i, n := range counts {
		cum += n
		k := first + int64(i)
		out[i] = Bin{Start: float64(k) * w, End: float64(k+1) * w, Count: n,
			Fraction: float64(n) / float64(len(xs)), Cumulative: float64(cum) / float64(len(xs))}
	}
	return out
}
