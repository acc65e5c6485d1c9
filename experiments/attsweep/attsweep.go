// Package attsweep is the attenuation-sweep recipe (LinkGuardian §2, Fig. 1):
// for each link with a VOA, step the attenuation up, and at each point send
// line-rate frames across the link until enough losses are seen for the
// stated precision or the point's budget is spent; the frame loss rate is
// the counter difference between frames sent and frames received intact.
package attsweep

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"testbed/experiments/stats"
	"testbed/instruments/trafficgen"
	"testbed/instruments/voa"
	"testbed/inventory"
	o "testbed/orchestrator"
	"testbed/results"
)

// Name is the recipe's name on the command line.
const Name = "attenuation-sweep"

// Recipe implements orchestrator.Recipe.
type Recipe struct{}

// New returns the recipe.
func New() *Recipe { return &Recipe{} }

// Meta implements orchestrator.Recipe.
func (*Recipe) Meta() o.Meta {
	return o.Meta{
		Name:        Name,
		Version:     "1.0.0",
		Summary:     "frame loss rate against optical attenuation, per link (LinkGuardian Fig. 1)",
		Description: description,
		Params:      params(),
		// Fig. 1: the attenuation at which each link's frame loss reaches 1e-6.
		Headlines: []string{"links.*.loss_cliff_db.1e-06"},
	}
}

const description = `For each selected link (default: every link with a VOA channel and both ends on one
traffic generator), set the VOA to each attenuation from start_db to stop_db in step_db
steps, wait for it to settle (the driver reads it back), then send frame_size frames at
rate_percent of line rate in rounds that grow fourfold until the losses seen reach the
number the stated precision needs or the point's budget (max_seconds of traffic, or
max_frames) is spent. The loss rate is (frames_tx - frames_rx_ok) / frames_tx with a 95%
Wilson score interval, so a point without loss still bounds the rate. Once a point loses
more than stop_loss the link's higher attenuations are skipped. After a link's coarse pass,
points are added every fine_step_db between the last loss-free point and the first point
at or above 1e-3 loss. Every VOA returns to its resting value at the end and on abort.
Writes data/loss_vs_attenuation.csv and a summary with, per link, the smallest
attenuation whose loss rate reaches 1e-8, 1e-6 and 1e-3.`

// Thresholds are the loss rates the summary locates on each curve.
func Thresholds() []float64 { return []float64{1e-8, 1e-6, 1e-3} }

func params() []o.ParamSpec {
	return []o.ParamSpec{
		{Name: "links", Type: o.TypeStrings, Default: []string{}, Description: "links to sweep (default: every link with a VOA and both ends on one traffic generator)"},
		{Name: "start_db", Type: o.TypeFloat, Unit: "dB", Default: 0.0, Min: o.Bound(0), Max: o.Bound(100), Description: "first attenuation"},
		{Name: "stop_db", Type: o.TypeFloat, Unit: "dB", Default: 20.0, Min: o.Bound(0), Max: o.Bound(100), Description: "last attenuation"},
		{Name: "step_db", Type: o.TypeFloat, Unit: "dB", Default: 0.5, Min: o.Bound(0.01), Max: o.Bound(100), Description: "coarse step"},
		{Name: "fine_step_db", Type: o.TypeFloat, Unit: "dB", Default: 0.1, Min: o.Bound(0), Max: o.Bound(100), Description: "step near the loss cliff (0: no refinement)"},
		{Name: "frame_size", Type: o.TypeInt, Unit: "B", Default: int64(1518), Min: o.Bound(64), Max: o.Bound(9216), Description: "L2 frame size including FCS"},
		{Name: "rate_percent", Type: o.TypeFloat, Unit: "%", Default: 100.0, Min: o.Bound(0.001), Max: o.Bound(100), Description: "offered load, percent of line rate"},
		{Name: "precision", Type: o.TypeFloat, Default: 0.2, Min: o.Bound(0.01), Max: o.Bound(1), Description: "stop a point early once the 95% interval half-width is about this fraction of the loss rate"},
		{Name: "max_seconds", Type: o.TypeFloat, Unit: "s", Default: 10.0, Min: o.Bound(0.000001), Max: o.Bound(86400), Description: "per-point budget: seconds of traffic at the offered load"},
		{Name: "max_frames", Type: o.TypeInt, Unit: "frames", Default: int64(0), Min: o.Bound(0), Max: o.Bound(1e15), Description: "per-point budget in frames (0: from max_seconds)"},
		{Name: "first_round_frames", Type: o.TypeInt, Unit: "frames", Default: int64(100000), Min: o.Bound(1), Max: o.Bound(1e12), Description: "frames in a point's first round; each next round sends four times more"},
		{Name: "stop_loss", Type: o.TypeFloat, Default: 0.5, Min: o.Bound(0), Max: o.Bound(1), Description: "skip a link's higher attenuations once its loss rate exceeds this"},
		{Name: "traffic_timeout", Type: o.TypeDuration, Default: 30 * time.Second, Min: o.Bound(0.001), Max: o.Bound(3600), Description: "extra time allowed beyond a round's expected duration before the generator is declared stuck"},
	}
}

// point is one measured row.
type point struct {
	link                            string
	attDB                           float64
	rxDBm                           *float64
	tx, rxOK, lost                  int64
	lossRate, lossLow, lossHigh     float64
	transceiver, fec, measuredPhase string
}

// state is what the steps of one run share.
type state struct {
	mu     sync.Mutex
	points map[string][]point // per link, in measurement order
	dark   map[string]float64 // link -> attenuation at which it went dark
	links  []*inventory.Link
}

func (s *state) add(p point) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.points[p.link] = append(s.points[p.link], p)
}

func (s *state) sorted(link string) []point {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := slices.Clone(s.points[link])
	sort.Slice(ps, func(i, j int) bool { return ps[i].attDB < ps[j].attDB })
	return ps
}

// Table is the declared data table.
func Table() results.Table {
	return results.Table{
		Name:        "loss_vs_attenuation",
		Title:       "Frame loss rate against VOA attenuation",
		Description: "One row per measured point, in measurement order. loss_rate is frames_lost / frames_tx; loss_rate_low/high is its 95% Wilson score interval.",
		Fields: []results.Field{
			{Name: "link", Type: "string", Description: "inventory link name"},
			{Name: "transceiver", Type: "string", Description: "transceiver type at both ends"},
			{Name: "fec", Type: "string", Description: "FEC mode of the link"},
			{Name: "attenuation_db", Type: "number", Unit: "dB", Description: "VOA attenuation as read back from the instrument"},
			{Name: "rx_power_dbm", Type: "number", Unit: "dBm", Description: "received power: VOA output power meter less the link's loss after the VOA (loss_after_voa_db and its fibre run; empty without a power meter)"},
			{Name: "frames_tx", Type: "integer", Unit: "frames", Description: "frames sent"},
			{Name: "frames_rx_ok", Type: "integer", Unit: "frames", Description: "frames received intact"},
			{Name: "frames_lost", Type: "integer", Unit: "frames", Description: "frames_tx - frames_rx_ok"},
			{Name: "loss_rate", Type: "number", Unit: "1", Description: "observed frame loss ratio"},
			{Name: "loss_rate_low", Type: "number", Unit: "1", Description: "lower end of the 95% Wilson interval"},
			{Name: "loss_rate_high", Type: "number", Unit: "1", Description: "upper end of the 95% Wilson interval"},
		},
		// LinkGuardian Fig. 1: frame loss rate against attenuation, one
		// curve per link type, with the 95% Wilson interval of each point.
		Figures: []results.Figure{{
			Name: "loss-vs-attenuation", Title: "Effect of optical attenuation on Ethernet links (1518 B frames)",
			Caption: "As LinkGuardian Fig. 1. Bars: 95% Wilson interval; points with no loss are not drawn on the log axis (see the CSV for their upper bounds).",
			Kind:    results.Line, X: "attenuation_db", Y: "loss_rate", Low: "loss_rate_low", High: "loss_rate_high",
			Series: []string{"link", "transceiver", "fec"}, Legend: "{transceiver}, FEC {fec} ({link})", LogY: true,
			XLabel: "Attenuation (dB)", YLabel: "Frame loss rate",
		}},
	}
}

// Plan implements Recipe.
func (r *Recipe) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	start, stop, step := p.Float("start_db"), p.Float("stop_db"), p.Float("step_db")
	if stop < start {
		return nil, o.Inputf("stop_db %.2f dB is below start_db %.2f dB", stop, start)
	}
	links, binds, err := o.BindLinks(pc.Lab, "link", p.Strings("links"), o.LinkNeeds{VOA: true, EndsOn: "trafficgen"})
	if err != nil {
		return nil, err
	}
	n, err := o.GridSize("start_db", "stop_db", "step_db", start, stop, step, len(links))
	if err != nil {
		return nil, err
	}
	grid := make([]float64, 0, n)
	for i := 0; ; i++ {
		a := math.Round((start+float64(i)*step)*1000) / 1000
		if a > stop+1e-9 {
			break
		}
		grid = append(grid, a)
	}
	for _, l := range links {
		if _, ok := inventory.LookupTransceiver(l.Transceiver); !ok {
			return nil, pc.Lab.LinkErrorf(l, "transceiver", "unknown transceiver %q", l.Transceiver)
		}
		for _, a := range grid {
			if err := pc.CheckAttenuation(l.VOA.Device, l.VOA.Channel, a); err != nil {
				return nil, err
			}
		}
	}
	st := &state{points: map[string][]point{}, dark: map[string]float64{}, links: links}
	plan := &o.Plan{Bindings: binds, Tables: []results.Table{Table()},
		Summary: func(partial bool) (any, error) { return summarize(st, partial), nil }}
	m := measurer{p: p}
	for _, l := range links {
		gen := l.A.Device
		for _, a := range grid {
			plan.Steps = append(plan.Steps, &o.Step{
				Name:    fmt.Sprintf("%s @ %.2f dB", l.Name, a),
				Action:  "measure-loss",
				Devices: []string{l.VOA.Device, gen},
				Settings: []o.Setting{
					{Device: l.VOA.Device, Name: fmt.Sprintf("ch%d.attenuation", l.VOA.Channel), Value: a, Unit: "dB"},
					{Device: gen, Name: fmt.Sprintf("flow %s->%s", l.A.Port, l.B.Port), Value: m.describe(l)},
				},
				Run: func(ctx context.Context, rc *o.RunContext) error {
					st.mu.Lock()
					darkAt, dark := st.dark[l.Name]
					st.mu.Unlock()
					if dark {
						return o.Skip("%s went dark at %.2f dB (loss above stop_loss %g)", l.Name, darkAt, p.Float("stop_loss"))
					}
					return m.measure(ctx, rc, st, l, a, "coarse")
				},
			})
		}
		if fine := p.Float("fine_step_db"); fine > 0 && fine < step {
			plan.Steps = append(plan.Steps, &o.Step{
				Name:    fmt.Sprintf("%s: refine near the cliff", l.Name),
				Action:  "refine",
				Devices: []string{l.VOA.Device, gen},
				Settings: []o.Setting{
					{Device: l.VOA.Device, Name: fmt.Sprintf("ch%d.attenuation", l.VOA.Channel), Value: fmt.Sprintf("every %g", fine), Unit: "dB"},
				},
				Note: fmt.Sprintf("points chosen at run time: every %g dB between the last loss-free point and the first point at or above 1e-3, within [%g, %g] dB", fine, start, stop),
				Run: func(ctx context.Context, rc *o.RunContext) error {
					return m.refine(ctx, rc, pc, st, l, fine)
				},
			})
		}
	}
	return plan, nil
}

type measurer struct{ p *o.Params }

func (m measurer) describe(l *inventory.Link) string {
	fs := m.p.Int("frame_size")
	return fmt.Sprintf("%d B frames at %g%% of %s line rate, until %d losses or %s", fs, m.p.Float("rate_percent"), l.Transceiver,
		stats.EventsForPrecision(m.p.Float("precision")), m.budgetText(l))
}

func (m measurer) budgetText(l *inventory.Link) string {
	if mf := m.p.Int("max_frames"); mf > 0 {
		return fmt.Sprintf("%d frames", mf)
	}
	return fmt.Sprintf("%g s (%d frames)", m.p.Float("max_seconds"), m.budget(l))
}

// framesPerSecond at the offered load: each frame costs 8 B preamble+SFD
// and a 12 B inter-packet gap on the wire (IEEE 802.3 cl. 4).
func (m measurer) framesPerSecond(l *inventory.Link) float64 {
	t, _ := inventory.LookupTransceiver(l.Transceiver)
	return t.RateBps * m.p.Float("rate_percent") / 100 / (float64(m.p.Int("frame_size")+20) * 8)
}

func (m measurer) budget(l *inventory.Link) int64 {
	if mf := m.p.Int("max_frames"); mf > 0 {
		return mf
	}
	return int64(math.Max(1, math.Floor(m.p.Float("max_seconds")*m.framesPerSecond(l))))
}

// measure sets the attenuation and measures one point.
func (m measurer) measure(ctx context.Context, rc *o.RunContext, st *state, l *inventory.Link, attDB float64, phase string) error {
	if err := rc.SetAttenuation(ctx, l.VOA.Device, l.VOA.Channel, attDB); err != nil {
		return err
	}
	a, err := rc.Attenuator(l.VOA.Device)
	if err != nil {
		return err
	}
	readBack, err := a.Attenuation(ctx, l.VOA.Channel)
	if err != nil {
		return fmt.Errorf("%s: read back channel %d: %w", l.VOA.Device, l.VOA.Channel, err)
	}
	pt := point{link: l.Name, attDB: readBack, transceiver: l.Transceiver, fec: l.FEC, measuredPhase: phase}
	if pm, ok := a.(voa.PowerMeter); ok && slices.Contains(a.Capabilities(), voa.CapPowerMeter) {
		out, err := pm.OutputPower(ctx, l.VOA.Channel)
		if err != nil {
			return fmt.Errorf("%s: read output power of channel %d: %w", l.VOA.Device, l.VOA.Channel, err)
		}
		_, after := l.Budget(0, 0) // connectors and fibre run after the VOA
		rx := out - after
		pt.rxDBm = &rx
	}

	g, err := rc.Generator(l.A.Device)
	if err != nil {
		return err
	}
	dev, _ := rc.Lab.Device(l.A.Device)
	need := stats.EventsForPrecision(m.p.Float("precision"))
	budget := m.budget(l)
	round := m.p.Int("first_round_frames")
	flow := "sweep-" + l.Name
	for pt.tx < budget {
		n := min(round, budget-pt.tx)
		cfg := trafficgen.Config{
			Ports: []trafficgen.Port{{Name: l.A.Port, Location: dev.Ports[l.A.Port]}, {Name: l.B.Port, Location: dev.Ports[l.B.Port]}},
			Flows: []trafficgen.Flow{{Name: flow, TxPort: l.A.Port, RxPort: l.B.Port, FrameBytes: int(m.p.Int("frame_size")),
				RatePercent: m.p.Float("rate_percent"), Packets: n}},
		}
		if err := g.Configure(ctx, cfg); err != nil {
			return fmt.Errorf("%s: configure flow %s: %w", l.A.Device, flow, err)
		}
		if err := rc.StartTraffic(ctx, l.A.Device, flow); err != nil {
			return err
		}
		fm, err := waitStopped(ctx, g, flow, time.Duration(float64(n)/m.framesPerSecond(l)*float64(time.Second)), m.p.Duration("traffic_timeout"))
		if err != nil {
			return fmt.Errorf("%s: flow %s: %w", l.A.Device, flow, err)
		}
		if fm.FramesRx > fm.FramesTx {
			return fmt.Errorf("%s: flow %s received %d frames but sent %d: counters inconsistent", l.A.Device, flow, fm.FramesRx, fm.FramesTx)
		}
		pt.tx += fm.FramesTx
		pt.rxOK += fm.FramesRx
		pt.lost = pt.tx - pt.rxOK
		if fm.FramesTx == 0 {
			return fmt.Errorf("%s: flow %s stopped having sent no frames", l.A.Device, flow)
		}
		if pt.lost >= need {
			break
		}
		round *= 4
	}
	pt.lossRate = float64(pt.lost) / float64(pt.tx)
	pt.lossLow, pt.lossHigh = stats.Wilson(pt.lost, pt.tx, stats.Z95)
	st.mu.Lock()
	first := len(st.points[l.Name]) == 0
	st.mu.Unlock()
	if first && pt.rxOK == 0 {
		// Nothing arrived at the sweep's lowest attenuation: no light reaches
		// the receiver, and a curve of 100% loss would measure nothing.
		return fmt.Errorf("%s: every frame lost (%d) at %.2f dB, the first point of the sweep: no light reaches %s (shutter of %s channel %d closed, fibre disconnected?)",
			l.Name, pt.tx, pt.attDB, l.B.Device, l.VOA.Device, l.VOA.Channel)
	}
	st.add(pt)
	if err := writeRow(rc, pt); err != nil {
		return err
	}
	fields := map[string]any{"link": l.Name, "attenuation_db": pt.attDB, "frames_tx": pt.tx, "frames_lost": pt.lost,
		"loss_rate": pt.lossRate, "loss_rate_high": pt.lossHigh, "phase": phase}
	if pt.rxDBm != nil {
		fields["rx_power_dbm"] = *pt.rxDBm
	}
	rc.Event(results.Event{Type: "measurement", Step: fmt.Sprintf("%s @ %.2f dB", l.Name, attDB), Message: fmt.Sprintf("%s %.2f dB: loss %s (%d/%d)",
		l.Name, pt.attDB, fmtRate(pt), pt.lost, pt.tx), Fields: fields})
	if pt.lossRate > m.p.Float("stop_loss") {
		st.mu.Lock()
		if _, ok := st.dark[l.Name]; !ok {
			st.dark[l.Name] = attDB
		}
		st.mu.Unlock()
	}
	return nil
}

func fmtRate(pt point) string {
	if pt.lost == 0 {
		return fmt.Sprintf("0 (< %.1e)", pt.lossHigh)
	}
	return fmt.Sprintf("%.2e", pt.lossRate)
}

// waitStopped polls the flow until it reports stopped and its receive
// counter has stopped moving: wait by asking, bounded by the expected
// duration plus slack.
func waitStopped(ctx context.Context, g trafficgen.Generator, flow string, expected, slack time.Duration) (trafficgen.FlowMetrics, error) {
	ctx, cancel := context.WithTimeout(ctx, expected+slack)
	defer cancel()
	// Ask often at first, then back off towards a twentieth of the expected
	// duration: a fast generator (or the simulated lab) is not kept
	// waiting, and a long real transmission is not polled needlessly.
	limit := min(max(expected/20, time.Millisecond), 250*time.Millisecond)
	interval := time.Millisecond
	var last trafficgen.FlowMetrics
	stoppedSeen := false
	for {
		ms, err := g.FlowMetrics(ctx, flow)
		if err != nil {
			return last, fmt.Errorf("read metrics: %w", err)
		}
		if len(ms) != 1 {
			return last, fmt.Errorf("read metrics: expected 1 flow, got %d", len(ms))
		}
		fm := ms[0]
		if fm.Transmit == trafficgen.StateStopped {
			// Frames still in flight arrive within microseconds; one more
			// read that agrees means the counters are final.
			if stoppedSeen && fm.FramesRx == last.FramesRx && fm.FramesTx == last.FramesTx {
				return fm, nil
			}
			stoppedSeen = true
			interval = time.Millisecond
		} else {
			interval = min(interval*2, limit)
		}
		last = fm
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("still %s after %v (sent %d frames): %w", fm.Transmit, expected+slack, fm.FramesTx, context.Cause(ctx))
		case <-time.After(interval):
		}
	}
}

func writeRow(rc *o.RunContext, pt point) error {
	t, err := rc.Table("loss_vs_attenuation")
	if err != nil {
		return err
	}
	var rx any
	if pt.rxDBm != nil {
		rx = math.Round(*pt.rxDBm*1000) / 1000
	}
	return t.Write(pt.link, pt.transceiver, pt.fec, pt.attDB, rx, pt.tx, pt.rxOK, pt.lost, pt.lossRate, pt.lossLow, pt.lossHigh)
}

// refine adds points every fine dB across the cliff the coarse pass found.
func (m measurer) refine(ctx context.Context, rc *o.RunContext, pc *o.PlanContext, st *state, l *inventory.Link, fine float64) error {
	pts := st.sorted(l.Name)
	lo, hi, ok := cliffWindow(pts)
	if !ok {
		return o.Skip("no loss cliff within the coarse points of %s", l.Name)
	}
	done := map[string]bool{}
	for _, p := range pts {
		done[strconv.FormatFloat(math.Round(p.attDB*100)/100, 'f', 2, 64)] = true
	}
	n := 0
	for a := lo + fine; a < hi-1e-9 && n < 100; a += fine {
		a = math.Round(a*1000) / 1000
		if done[strconv.FormatFloat(a, 'f', 2, 64)] {
			continue
		}
		if err := pc.CheckAttenuation(l.VOA.Device, l.VOA.Channel, a); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if err := m.measure(ctx, rc, st, l, a, "fine"); err != nil {
			return err
		}
		n++
	}
	return nil
}

// cliffWindow is the span from the last loss-free point below the first
// lossy one to the first point at or above 1e-3 loss.
func cliffWindow(pts []point) (lo, hi float64, ok bool) {
	first := -1
	for i, p := range pts {
		if p.lost > 0 {
			first = i
			break
		}
	}
	if first <= 0 {
		return 0, 0, false
	}
	lo = pts[first-1].attDB
	hi = pts[len(pts)-1].attDB
	for _, p := range pts[first:] {
		if p.lossRate >= 1e-3 {
			hi = p.attDB
			break
		}
	}
	return lo, hi, hi > lo
}

// LinkSummary is one link's headline numbers.
type LinkSummary struct {
	Transceiver string `json:"transceiver"`
	FEC         string `json:"fec"`
	Points      int    `json:"points"`
	// LossCliffDB maps a loss-rate threshold ("1e-08") to the smallest
	// measured attenuation whose loss rate reaches it (null: not reached).
	LossCliffDB map[string]*float64 `json:"loss_cliff_db"`
	// MaxLossFreeDB is the highest attenuation below the first lossy point.
	MaxLossFreeDB *float64 `json:"max_loss_free_db"`
	DarkAtDB      *float64 `json:"dark_at_db,omitempty"`
}

// Summary is summary.json.
type Summary struct {
	Partial    bool                   `json:"partial"`
	Thresholds []float64              `json:"thresholds"`
	Links      map[string]LinkSummary `json:"links"`
}

func summarize(st *state, partial bool) Summary {
	s := Summary{Partial: partial, Thresholds: Thresholds(), Links: map[string]LinkSummary{}}
	for _, l := range st.links {
		pts := st.sorted(l.Name)
		ls := LinkSummary{Transceiver: l.Transceiver, FEC: l.FEC, Points: len(pts), LossCliffDB: map[string]*float64{}}
		for _, th := range Thresholds() {
			key := strconv.FormatFloat(th, 'e', -1, 64)
			ls.LossCliffDB[key] = nil
			for _, p := range pts {
				if p.lost > 0 && p.lossRate >= th {
					v := p.attDB
					ls.LossCliffDB[key] = &v
					break
				}
			}
		}
		for _, p := range pts {
			if p.lost > 0 {
				break
			}
			v := p.attDB
			ls.MaxLossFreeDB = &v
		}
		st.mu.Lock()
		if d, ok := st.dark[l.Name]; ok {
			ls.DarkAtDB = &d
		}
		st.mu.Unlock()
		s.Links[l.Name] = ls
	}
	return s
}
