package rail

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"testbed/experiments/lgbench"
	"testbed/experiments/stats"
	o "testbed/orchestrator"
	"testbed/results"
)

// StretchName is the recipe's name on the command line.
const StretchName = "rail-stretch"

// Stretch implements orchestrator.Recipe.
type Stretch struct{}

// NewStretch returns the recipe.
func NewStretch() *Stretch { return &Stretch{} }

// Meta implements orchestrator.Recipe.
func (*Stretch) Meta() o.Meta {
	return o.Meta{
		Name:        StretchName,
		Version:     "1.1.0",
		Summary:     "RAIL Table 2: how far each transceiver type runs past its standard reach, per LPER bound (spools of fibre, line-rate LPER)",
		Description: stretchDescription,
		Params:      stretchParams(),
		// Table 2: each transceiver's reach per LPER bound.
		Headlines: []string{"groups.*.reach.*.reach_m"},
		// Spools of fibre of many lengths are on the rail-stretch bench,
		// not on the default one.
		Bench: "rail-stretch",
	}
}

const stretchDescription = `RAIL's stretch experiment (§7.1, Fig. 10-12, Table 2, App. C) on a lab that joins two
switches by spools of fibre of many lengths, each link's length and fibre type in the
inventory (link options fibre_length_m, fibre_type), as the paper's testbed concatenated
OM3 cables of 10 to 1000 m. Every selected link (default: every link with a VOA between
two switches, the LinkGuardian bench) runs seconds of full-size frames at line rate from
the sender's packet generator with protection off; its LPER is lost/sent with the 95%
Wilson interval. The VOA stays as found for these tests.

Then (margin_step_db > 0), as Fig. 11c, each group's spool at the standard's reach takes
VOA attenuation in steps until its LPER passes the largest bound: the attenuation where
it crosses each bound is the margin that length leaves (data/margin.csv). The VOA is put
back to its resting value at the end.

Links are grouped by transceiver, FEC and fibre type; per group and class bound
(bounds: 1e-8, about RAIL's BER 1e-12 for 1518 B frames; 1e-6; 1e-3), the stretched
reach is the length where the LPER crosses the bound: log LPER interpolated linearly in
length between the last spool at or below the bound and the first above it (see
reach.go for the cases where the shorter spool lost nothing). Beside it: the standard's
nominal reach (IEEE 802.3) and the paper's low and high stretch (Table 2, App. C).

Writes data/spools.csv (per link: length, frames, LPER with interval), data/margin.csv and
data/reach.csv (per group and bound: reach, bracket, method, stretch factor, the
standard's and the paper's reaches); the summary has the reach table.`

func stretchParams() []o.ParamSpec {
	ps := []o.ParamSpec{
		{Name: "links", Type: o.TypeStrings, Default: []string{}, Description: "spool links to test (default: every link with a VOA between two switches)"},
		// RAIL §4 measured each link for five minutes; on the simulated
		// bench a second of traffic per spool resolves 1e-6 at 10G (8e5
		// frames) and the cliff's slope.
		{Name: "seconds", Type: o.TypeFloat, Unit: "s", Default: 1.0, Min: o.Bound(1e-6), Max: o.Bound(3600), Description: "line-rate test per spool, in seconds of traffic"},
		{Name: "frame_size", Type: o.TypeInt, Unit: "B", Default: int64(1518), Min: o.Bound(64), Max: o.Bound(9216), Description: "L2 frame size including FCS"},
		// RAIL §7.2: LPER 1e-8 ~ BER 1e-12; §6's class bounds 1e-6 and 1e-3.
		{Name: "bounds", Type: o.TypeFloats, Unit: "1", Default: []float64{1e-8, 1e-6, 1e-3}, Min: o.Bound(0), Max: o.Bound(1), Description: "LPER bounds at which to report the reach"},
		// RAIL Fig. 11c: BER against attenuation added at the specified reach.
		{Name: "margin_step_db", Type: o.TypeFloat, Unit: "dB", Default: 0.5, Min: o.Bound(0), Max: o.Bound(10), Description: "step of the added-attenuation sweep on each group's spool at the standard's reach (0: no sweep)"},
		{Name: "margin_max_db", Type: o.TypeFloat, Unit: "dB", Default: 20.0, Min: o.Bound(0), Max: o.Bound(60), Description: "the sweep's largest added attenuation"},
		{Name: "margin_seconds", Type: o.TypeFloat, Unit: "s", Default: 0.2, Min: o.Bound(1e-6), Max: o.Bound(3600), Description: "line-rate test per step of the sweep"},
	}
	for _, p := range lgbench.Params() {
		switch p.Name {
		case "sink_port", "pktgen_port", "replace_program", "port_up_timeout":
			ps = append(ps, p)
		}
	}
	return ps
}

// nominalReachM is the reach IEEE 802.3 specifies per transceiver and
// fibre: 10GBASE-SR cl. 52.14 (Table 52-14: 300 m on 2000 MHz·km OM3;
// 400 m on OM4), 40GBASE-SR4 cl. 86.10 (Table 86-2: 100 m OM3, 150 m
// OM4), 100GBASE-SR4 cl. 95.11 (Table 95-2: 70 m OM3, 100 m OM4),
// 10GBASE-LR cl. 52.14 (10 km).
var nominalReachM = map[[2]string]float64{
	{"10GBASE-SR", "OM3"}: 300, {"10GBASE-SR", "OM4"}: 400,
	{"40GBASE-SR4", "OM3"}: 100, {"40GBASE-SR4", "OM4"}: 150,
	{"100GBASE-SR4", "OM3"}: 70, {"100GBASE-SR4", "OM4"}: 100,
	{"10GBASE-LR", "OS2"}: 10000,
}

// paperReachM is RAIL's Table 2 (10G-SR and 40G-SR4 on OM3, low and high
// stretch: NRB 99% and 95%) and App. C (100G-SR4, FEC off).
var paperReachM = map[string][2]float64{
	"10GBASE-SR": {480, 580}, "40GBASE-SR4": {280, 400}, "100GBASE-SR4": {110, 130},
}

// StretchTables are the recipe's data tables.
func StretchTables() []results.Table {
	return []results.Table{
		marginTable(),
		{Name: "spools", Title: "LPER per fibre length", Description: "One row per spool link: its transceiver, FEC, fibre and length, and the line-rate test's frames and LPER with its 95% Wilson interval.",
			Fields: []results.Field{
				{Name: "link", Type: "string"}, {Name: "transceiver", Type: "string"}, {Name: "fec", Type: "string"}, {Name: "fibre_type", Type: "string"},
				{Name: "length_m", Type: "number", Unit: "m"}, {Name: "frames_sent", Type: "integer", Unit: "frames"}, {Name: "frames_lost", Type: "integer", Unit: "frames"},
				{Name: "lper", Type: "number", Unit: "1"}, {Name: "lper_low", Type: "number", Unit: "1"}, {Name: "lper_high", Type: "number", Unit: "1"},
			},
			// RAIL Fig. 11b / 18a: error rate against fibre length.
			Figures: []results.Figure{{
				Name: "lper-vs-length", Title: "LPER against fibre length",
				Caption: "As RAIL Fig. 11b (BER against OM3 length, no added attenuation) in packets: line-rate 1518 B frames per spool. Open markers: no frame lost, drawn at the 95% upper bound.",
				Kind:    results.Line, X: "length_m", Y: "lper", ZeroAt: "lper_high", LogY: true,
				Series: []string{"transceiver", "fec", "fibre_type"}, Legend: "{transceiver} FEC {fec} {fibre_type}",
				XLabel: "Fibre length (m)", YLabel: "Link packet error rate",
			}}},
		{Name: "reach", Title: "Stretched reach", Description: "One row per transceiver, FEC, fibre and LPER bound: the length where the LPER crosses the bound, its bracket among the spools and how it was found, beside the standard's reach and RAIL's Table 2.",
			Fields: []results.Field{
				{Name: "transceiver", Type: "string"}, {Name: "fec", Type: "string"}, {Name: "fibre_type", Type: "string"},
				{Name: "bound", Type: "number", Unit: "1"}, {Name: "nominal_m", Type: "number", Unit: "m", Description: "IEEE 802.3 reach on this fibre"},
				{Name: "reach_m", Type: "number", Unit: "m"}, {Name: "low_m", Type: "number", Unit: "m"}, {Name: "high_m", Type: "number", Unit: "m"},
				{Name: "method", Type: "string"}, {Name: "stretch", Type: "number", Unit: "1", Description: "reach_m / nominal_m"},
				{Name: "paper_low_m", Type: "number", Unit: "m", Description: "RAIL Table 2 / App. C, low stretch (OM3, FEC off)"},
				{Name: "paper_high_m", Type: "number", Unit: "m", Description: "RAIL Table 2 / App. C, high stretch"},
				{Name: "margin_spool_m", Type: "number", Unit: "m", Description: "length of the spool the added-attenuation sweep ran on"},
				{Name: "margin_db", Type: "number", Unit: "dB", Description: "attenuation that spool takes before its LPER crosses the bound (Fig. 11c)"},
				{Name: "margin_method", Type: "string", Description: "how margin_db was found, as method"},
			},
			Figures: []results.Figure{{
				Name: "reach", Title: "Stretched reach per LPER bound",
				Caption: "As RAIL Table 2: the length at which each transceiver's LPER crosses each bound, from the spools.",
				Kind:    results.Line, X: "bound", Y: "reach_m", LogX: true, Low: "low_m", High: "high_m",
				Series: []string{"transceiver", "fec", "fibre_type"}, Legend: "{transceiver} FEC {fec} {fibre_type}",
				XLabel: "LPER bound", YLabel: "Reach (m)",
			}}},
	}
}

// GroupReach is one transceiver, FEC and fibre's row of the reach table.
type GroupReach struct {
	Transceiver string   `json:"transceiver"`
	FEC         string   `json:"fec"`
	FibreType   string   `json:"fibre_type"`
	NominalM    *float64 `json:"nominal_m"`
	PaperLowM   *float64 `json:"paper_low_m"`
	PaperHighM  *float64 `json:"paper_high_m"`
	Spools      int      `json:"spools"`
	// Reach per bound, keyed by the bound as %.0e ("1e-08", "1e-03").
	Reach map[string]Reach `json:"reach"`
	// MarginSpoolM is the spool the added-attenuation sweep ran on, and
	// Margin per bound the attenuation it took (its Reach fields in dB).
	MarginSpoolM *float64         `json:"margin_spool_m,omitempty"`
	Margin       map[string]Reach `json:"margin_db,omitempty"`
}

// StretchSummary is summary.json.
type StretchSummary struct {
	Partial bool                  `json:"partial"`
	Groups  map[string]GroupReach `json:"groups"` // keyed transceiver_fec_fibre
}

type stretchState struct {
	mu       sync.Mutex
	points   map[[3]string][]SpoolPoint
	margins  map[[3]string][]SpoolPoint // x: added dB
	marginAt map[[3]string]float64
	groups   map[string]GroupReach
}

func groupKey(k [3]string) string { return strings.Join(k[:], "_") }

// boundKey names a bound in the summary without a dot (metric paths are
// dotted): 1e-08, 1e-06, 1e-03.
func boundKey(b float64) string { return fmt.Sprintf("%.0e", b) }

// Plan implements Recipe.
func (r *Stretch) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	links, binds, err := lgbench.BindUnprotected(pc, p.Strings("links"), p.String("sink_port"))
	if err != nil {
		return nil, err
	}
	bounds := p.Floats("bounds")
	for _, b := range bounds {
		if !(b > 0 && b < 1) {
			return nil, &o.InputError{Msg: fmt.Sprintf("bounds: %g is not an LPER in (0, 1)", b)}
		}
	}
	for _, l := range links {
		if l.Link.FibreLengthM <= 0 {
			return nil, pc.Lab.LinkErrorf(l.Link, "options", "link %s: rail-stretch needs the spool's length (link option fibre_length_m; or run on the built-in bench of spools: --bench rail-stretch)", l.Link.Name)
		}
	}
	fb := int(p.Int("frame_size"))
	st := &stretchState{points: map[[3]string][]SpoolPoint{}, margins: map[[3]string][]SpoolPoint{}, marginAt: map[[3]string]float64{}, groups: map[string]GroupReach{}}
	byGroup := map[[3]string][]lgbench.Link{}
	var order [][3]string
	plan := &o.Plan{Bindings: binds, Tables: StretchTables(),
		Summary: func(partial bool) (any, error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			return StretchSummary{Partial: partial, Groups: st.groups}, nil
		}}
	for _, l := range links {
		il := l.Link
		ft := il.FibreType
		if ft == "" {
			ft = "OM4" // inventory.DefaultFibreType
		}
		key := [3]string{il.Transceiver, l.FEC, ft}
		if byGroup[key] == nil {
			order = append(order, key)
		}
		byGroup[key] = append(byGroup[key], l)
		frames := int64(math.Ceil(p.Float("seconds") * l.LineRateBps / (float64(fb+20) * 8)))
		devs := []string{l.Sender, l.Receiver, l.VOA}
		plan.Steps = append(plan.Steps, &o.Step{Name: fmt.Sprintf("%s: %g m of %s", il.Name, il.FibreLengthM, ft), Action: "stress-test", Devices: devs,
			Settings: []o.Setting{
				{Device: l.Sender, Name: fmt.Sprintf("port %d", l.TxPort), Value: fmt.Sprintf("%dG fec %s, protection off", l.Gbps, l.FEC)},
				{Device: l.Sender, Name: "pktgen", Value: fmt.Sprintf("%d frames of %d B at line rate (%g s)", frames, fb, p.Float("seconds"))},
			},
			Run: func(ctx context.Context, rc *o.RunContext) error {
				bench, err := lgbench.Open(ctx, rc, l, lgbench.OpenOptions(p))
				if err != nil {
					return err
				}
				if err := bench.Protect(ctx, lgbench.Protection{Mode: lgbench.Off}); err != nil {
					return err
				}
				s := lgbench.StressFrom(p, fb)
				s.Frames = frames
				res, err := bench.Run(ctx, s)
				if err != nil {
					return err
				}
				if res.Sent == 0 {
					return fmt.Errorf("%s: the packet generator sent no frame on %s", l.Sender, il.Name)
				}
				lost := res.Lost()
				lo, hi := stats.Wilson(lost, res.Sent, stats.Z95)
				t, err := rc.Table("spools")
				if err != nil {
					return err
				}
				lper := float64(lost) / float64(res.Sent)
				if err := t.Write(il.Name, il.Transceiver, l.FEC, ft, il.FibreLengthM, res.Sent, lost, lper, lo, hi); err != nil {
					return err
				}
				rc.Event(results.Event{Type: "measurement", Device: l.Sender, Message: fmt.Sprintf("%s (%g m %s): LPER %.3g (%d of %d frames)", il.Name, il.FibreLengthM, ft, lper, lost, res.Sent),
					Fields: map[string]any{"link": il.Name, "length_m": il.FibreLengthM, "frames_sent": res.Sent, "frames_lost": lost, "loss_rate": lper, "loss_rate_high": hi}})
				st.mu.Lock()
				st.points[key] = append(st.points[key], SpoolPoint{LengthM: il.FibreLengthM, Sent: res.Sent, Lost: lost})
				st.mu.Unlock()
				return nil
			}})
	}
	if p.Float("margin_step_db") > 0 {
		for _, key := range order {
			nom, ok := nominalReachM[[2]string{key[0], key[2]}]
			plan.Steps = append(plan.Steps, st.marginStep(key, marginSpool(byGroup[key], nom, ok), p, fb, bounds))
		}
	}
	plan.Steps = append(plan.Steps, &o.Step{Name: "reach table", Action: "analyse", Note: "per transceiver, FEC and fibre: the length where the LPER crosses each bound",
		Run: func(ctx context.Context, rc *o.RunContext) error { return st.reach(rc, bounds) }})
	return plan, nil
}

// reach writes the reach table from the spools measured.
func (st *stretchState) reach(rc *o.RunContext, bounds []float64) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.points) == 0 {
		return o.Skip("no spool was measured")
	}
	t, err := rc.Table("reach")
	if err != nil {
		return err
	}
	keys := make([][3]string, 0, len(st.points))
	for k := range st.points {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return groupKey(keys[i]) < groupKey(keys[j]) })
	num := func(v float64, ok bool) *float64 {
		if !ok {
			return nil
		}
		return &v
	}
	for _, k := range keys {
		g := GroupReach{Transceiver: k[0], FEC: k[1], FibreType: k[2], Spools: len(st.points[k]), Reach: map[string]Reach{}}
		nom, ok := nominalReachM[[2]string{k[0], k[2]}]
		g.NominalM = num(nom, ok)
		// The paper's stretch is for OM3 and, at 100G, FEC off.
		if pr, ok := paperReachM[k[0]]; ok && k[2] == "OM3" && k[1] == "none" {
			g.PaperLowM, g.PaperHighM = num(pr[0], true), num(pr[1], true)
		}
		for _, b := range bounds {
			r := ReachAt(st.points[k], b)
			if r.ReachM != nil {
				v := math.Round(*r.ReachM*10) / 10
				r.ReachM = &v
			}
			g.Reach[boundKey(b)] = r
			var stretch *float64
			if r.ReachM != nil && g.NominalM != nil {
				v := math.Round(*r.ReachM / *g.NominalM * 100) / 100
				stretch = &v
			}
			var marginSpoolM, marginDB *float64
			var marginMethod any
			if ms := st.margins[k]; len(ms) > 0 {
				m := ReachAt(ms, b)
				if m.ReachM != nil {
					v := math.Round(*m.ReachM*100) / 100
					m.ReachM = &v
				}
				if g.Margin == nil {
					g.Margin = map[string]Reach{}
				}
				g.Margin[boundKey(b)] = m
				at := st.marginAt[k]
				marginSpoolM, marginDB, marginMethod = &at, m.ReachM, m.Method
				g.MarginSpoolM = marginSpoolM
			}
			if err := t.Write(k[0], k[1], k[2], b, ptr(g.NominalM), ptr(r.ReachM), ptr(r.LowM), ptr(r.HighM), r.Method, ptr(stretch), ptr(g.PaperLowM), ptr(g.PaperHighM),
				ptr(marginSpoolM), ptr(marginDB), marginMethod); err != nil {
				return err
			}
		}
		st.groups[groupKey(k)] = g
	}
	return nil
}
