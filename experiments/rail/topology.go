// Package rail holds the RAIL recipes (Zhuo et al., NSDI 2017): qualifying
// links by their transceivers' diagnostics and a line-rate packet error
// test (link-qualify), and building virtual topologies of a Clos from the
// links' packet error rates (rail-topology). The algorithms are in
// rail/topo.
package rail

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strings"

	"testbed/experiments/rail/topo"
	o "testbed/orchestrator"
	"testbed/results"
)

// TopologyName is the recipe's name on the command line.
const TopologyName = "rail-topology"

// Topology implements orchestrator.Recipe.
type Topology struct{}

// NewTopology returns the recipe.
func NewTopology() *Topology { return &Topology{} }

// Meta implements orchestrator.Recipe.
func (*Topology) Meta() o.Meta {
	return o.Meta{
		Name:        TopologyName,
		Version:     "1.0.0",
		Summary:     "RAIL's virtual topologies of a Clos from a link table (§5, Algorithm 1, Fig. 16); offline",
		Description: topologyDescription,
		Params:      topologyParams(),
		// §5 and Fig. 16: links kept, worst PPER and good paths per class.
		Headlines: []string{"classes.*.links_kept", "classes.*.worst_pper", "classes.*.mean_good_fraction", "algorithm1_agrees"},
	}
}

const topologyDescription = `Reads a link table (links_file: CSV or JSON, one row per physical link with a packet
error rate per direction, as measured or as a real network's counters give it; format in
experiments/rail/README.md) and the stage of every switch (the table's a_role/b_role or
"switches", else the inventory device option role: tor|agg|core). Rows may name an
inventory link instead of giving its ends. Touches no device.

Builds one virtual topology per class bound (class_bounds, most reliable first: the
worst path packet error rate any path of the class may have) with RAIL's greedy rounds,
least reliable class first: while Algorithm 1's worst path is above the bound, the link of
that path with the highest LPER leaves the class; the next class starts from what is left.
With estimate=upper (default) every rate is the upper end of its 95% interval, so a
class's bound holds with that confidence. Then, per class, every ordered ToR pair's
equal-cost paths: how many survive, how many are good (PPER <= good_pper, Fig. 16), and
per surviving path the XOR parity interval n for the post-recovery loss target_loss
(§5.3), or replication when no n reaches it.

Writes data/links.csv (the table as read: itself a valid links_file), class_links.csv,
pairs.csv, paths.csv, good_fraction_cdf.csv; exports per class data/rail/classes.json
(what a controller loads: every class's links, exclusions, paths and coding) and
data/rail/frr/<switch>.conf (FRR prefix-lists and route-maps that keep each class's
prefixes, class_prefixes, off the links the class excludes).`

func topologyParams() []o.ParamSpec {
	return []o.ParamSpec{
		{Name: "links_file", Type: o.TypeString, Default: "", Description: "link table, CSV or JSON (experiments/rail/README.md); default: the newest link-qualify bundle's under the runs directory, else the built-in example (RAIL's lab, hand-made)"},
		// RAIL §6: "three virtual topologies with worst-case PPER of 0.0001%, 0.1% and 10%".
		{Name: "class_bounds", Type: o.TypeFloats, Unit: "1", Default: []float64{1e-6, 1e-3, 0.1}, Min: o.Bound(0), Max: o.Bound(1), Description: "worst path packet error rate per class, most reliable class first"},
		{Name: "estimate", Type: o.TypeString, Default: "upper", Enum: []string{"upper", "point"}, Description: "which LPER to use: the upper end of its 95% interval, or the point estimate"},
		// RAIL §7.2: "A good path means PPER less than 4.8e-8, equivalent to
		// 1e-12 BER on each link of a path in a 3-stage fat tree."
		{Name: "good_pper", Type: o.TypeFloat, Unit: "1", Default: 4.8e-8, Min: o.Bound(0), Max: o.Bound(1), Description: "a path at or below this PPER is good (Fig. 16)"},
		// RAIL §5.3: t = 0.1% for TCP.
		{Name: "target_loss", Type: o.TypeFloat, Unit: "1", Default: 1e-3, Min: o.Bound(1e-15), Max: o.Bound(0.5), Description: "post-recovery loss the XOR coding aims below (t)"},
		{Name: "max_paths", Type: o.TypeInt, Unit: "paths", Default: int64(200_000), Min: o.Bound(1), Max: o.Bound(1e7), Description: "refuse a network with more ToR-pair paths than this: every path is a row per class in paths.csv and classes.json"},
		{Name: "class_prefixes", Type: o.TypeStrings, Default: []string{}, Description: "the address block of each class, most reliable first, for the route filters (default 10.<class>.0.0/16)"},
	}
}

// Tables are the recipe's data tables.
func Tables() []results.Table {
	lf := make([]results.Field, 0, len(topo.Columns))
	for _, c := range topo.Columns {
		f := results.Field{Name: c, Type: "string"}
		switch {
		case strings.HasPrefix(c, "lper"):
			f.Type, f.Unit = "number", "1"
		case strings.HasPrefix(c, "frames") || strings.HasPrefix(c, "lost"):
			f.Type, f.Unit = "integer", "frames"
		case c == "length_m":
			f.Type, f.Unit = "number", "m"
		case strings.HasPrefix(c, "attenuation"):
			f.Type, f.Unit = "number", "dB"
		}
		lf = append(lf, f)
	}
	return []results.Table{
		{Name: "links", Title: "Link table as read", Description: "The input, one row per physical link, with every switch's role: a valid links_file. Rates per direction (ab: a to b); the interval is the 95% Wilson interval when frames and losses were given.", Fields: lf},
		{Name: "class_links", Title: "Links per class", Description: "One row per class and link: whether the class keeps it, and in which class's round it was removed (a link removed for a less reliable class is out of every more reliable one).",
			Fields: []results.Field{
				{Name: "class", Type: "integer"}, {Name: "bound", Type: "number", Unit: "1", Description: "the class's worst PPER"},
				{Name: "link", Type: "string"}, {Name: "a", Type: "string"}, {Name: "b", Type: "string"},
				{Name: "lper_ab", Type: "number", Unit: "1", Description: "rate used, a to b"}, {Name: "lper_ba", Type: "number", Unit: "1", Description: "rate used, b to a"},
				{Name: "kept", Type: "boolean"}, {Name: "removed_in_class", Type: "integer", Description: "the class whose round removed it (empty: kept)"},
			}},
		{Name: "pairs", Title: "ToR pairs per class", Description: "One row per class and ordered ToR pair: its equal-cost paths in the physical network, those whose links the class keeps, and the good ones (PPER <= good_pper).",
			Fields: []results.Field{
				{Name: "class", Type: "integer"}, {Name: "src", Type: "string"}, {Name: "dst", Type: "string"},
				{Name: "paths", Type: "integer"}, {Name: "surviving", Type: "integer"}, {Name: "surviving_fraction", Type: "number", Unit: "1"},
				{Name: "good", Type: "integer"}, {Name: "good_fraction", Type: "number", Unit: "1", Description: "good surviving paths over all paths (Fig. 16)"},
				{Name: "worst_pper", Type: "number", Unit: "1", Description: "highest PPER of a surviving path (empty: none survives)"},
			}},
		{Name: "paths", Title: "Paths per class", Description: "One row per class and equal-cost path of every ordered ToR pair; protection says how RAIL's coding module protects a surviving path for target_loss: none, xor (one parity packet after parity_n data packets) or replicate (copies).",
			Fields: []results.Field{
				{Name: "class", Type: "integer"}, {Name: "src", Type: "string"}, {Name: "dst", Type: "string"},
				{Name: "path", Type: "string", Description: "switches, joined by >"}, {Name: "pper", Type: "number", Unit: "1"},
				{Name: "survives", Type: "boolean"}, {Name: "protection", Type: "string"},
				{Name: "parity_n", Type: "integer", Description: "data packets per parity packet (xor)"},
				{Name: "copies", Type: "integer", Description: "copies of each packet (replicate)"},
				{Name: "residual_loss", Type: "number", Unit: "1", Description: "loss left after recovery"},
				{Name: "overhead", Type: "number", Unit: "1", Description: "extra bandwidth of the coding"},
			}},
		{Name: "good_fraction_cdf", Title: "Fraction of good paths across ToR pairs (Fig. 16)", Description: "Per class, the cumulative fraction of ordered ToR pairs whose good-path fraction is at most good_fraction.",
			Fields: []results.Field{{Name: "class", Type: "integer"}, {Name: "good_fraction", Type: "number", Unit: "1"}, {Name: "cdf", Type: "number", Unit: "1"}},
			Figures: []results.Figure{{Name: "good_fraction_cdf", Title: "CDF of the good-path fraction of ToR pairs",
				Caption: "As RAIL Fig. 16, per reliability class: the fraction of ordered ToR pairs whose share of good paths is at most x.",
				Kind:    results.Line, X: "good_fraction", Y: "cdf", Series: []string{"class"}, Legend: "class {class}",
				XLabel: "Good-path fraction of a ToR pair", YLabel: "Fraction of ToR pairs at or below"}}},
	}
}

// input is the link table resolved against the inventory.
type input struct {
	file     string
	sha256   string
	estimate string // "upper 95%" or "point": which LPER the rates are
	net      *topo.Network
	rates    topo.Rates
	// why says where the table came from when links_file was not given.
	why string
}

// load reads the links file and fills from the inventory what it leaves
// out: a row's ends from the inventory link of its name, a switch's role
// from the device's role option.
func load(pc *o.PlanContext) (*input, error) {
	srcs, err := tableSources(pc)
	if err != nil {
		return nil, err
	}
	var skipped []string
	for i, src := range srcs {
		in, err := loadFrom(pc, src.name, src.data)
		if err != nil && i < len(srcs)-1 {
			// A qualified table this lab's recipe cannot use (one ToR):
			// said, and the next source tried.
			skipped = append(skipped, fmt.Sprintf("%s: %v", src.name, err))
			continue
		}
		if err != nil {
			return nil, err
		}
		in.why = src.why
		if len(skipped) > 0 {
			in.why += " (not used: " + strings.Join(skipped, "; ") + ")"
		}
		return in, nil
	}
	return nil, o.Inputf("%s needs a link table: --set links_file=path (CSV or JSON; format in experiments/rail/README.md)", TopologyName)
}

func loadFrom(pc *o.PlanContext, file string, data []byte) (*input, error) {
	tab, err := topo.ReadTable(file, bytes.NewReader(data))
	if err != nil {
		return nil, &o.InputError{Msg: err.Error()}
	}
	sum := sha256.Sum256(data)
	in := &input{file: file, sha256: hex.EncodeToString(sum[:]), net: &topo.Network{Roles: tab.Roles, Links: tab.Links}, rates: topo.UpperBound, estimate: "upper 95%"}
	if pc.Params.String("estimate") == "point" {
		in.rates, in.estimate = topo.Point, "point"
	}
	for _, l := range tab.Links {
		if l.A != "" && l.B != "" {
			continue
		}
		il, ok := pc.Lab.Link(l.Name)
		if !ok {
			return nil, o.Inputf("%s: link %s: no ends given and the inventory %s has no link of that name", l.Source, l.Name, pc.Lab.Path)
		}
		l.A, l.B, l.APort, l.BPort = il.A.Device, il.B.Device, il.A.Port, il.B.Port
		if l.Transceiver == "" {
			l.Transceiver, l.FEC = il.Transceiver, il.FEC
		}
	}
	for _, l := range tab.Links {
		for _, sw := range []string{l.A, l.B} {
			d, ok := pc.Lab.Device(sw)
			if !ok || d.Options["role"] == "" {
				continue
			}
			r, err := topo.ParseRole(d.Options["role"])
			if err != nil {
				return nil, pc.Lab.DeviceErrorf(d, "options", "device %s: %v", sw, err)
			}
			if prev, ok := tab.Roles[sw]; ok && prev != r {
				return nil, o.Inputf("%s: switch %s is %s in the link table but %s in the inventory (%s)", l.Source, sw, prev, r, d.Pos)
			}
			tab.Roles[sw] = r
		}
	}
	if err := in.net.Build(); err != nil {
		return nil, &o.InputError{Msg: err.Error()}
	}
	if len(in.net.ToRs()) < 2 {
		return nil, o.Inputf("%s: %d ToR switches: RAIL's paths join two ToRs (give roles with a_role/b_role, \"switches\" or the inventory option role)", file, len(in.net.ToRs()))
	}
	return in, nil
}

// run is what the steps share.
type run struct {
	in      *input
	bounds  []float64
	target  float64
	good    float64
	prefix  []string
	classes []topo.Class
	all     []topo.PairPaths
	pairs   [][]topo.PairClass // per class
	prot    map[string]topo.Protection
	agree   *bool
	done    bool
}

// Plan implements Recipe. It reads and checks the link table now, so bad
// input is refused before the run starts; it touches no device.
func (r *Topology) Plan(pc *o.PlanContext) (*o.Plan, error) {
	in, err := load(pc)
	if err != nil {
		return nil, err
	}
	st := &run{in: in, bounds: pc.Params.Floats("class_bounds"), target: pc.Params.Float("target_loss"), good: pc.Params.Float("good_pper"),
		prot: map[string]topo.Protection{}}
	if np, limit := in.net.CountPaths(nil), pc.Params.Int("max_paths"); np > limit {
		return nil, o.Inputf("%s: %d ToR-pair paths, more than max_paths %d: every path is a row per class in paths.csv and classes.json (raise max_paths to accept)", in.file, np, limit)
	}
	if err := topo.CheckBounds(st.bounds); err != nil {
		return nil, o.Inputf("class_bounds: %v", err)
	}
	st.prefix = pc.Params.Strings("class_prefixes")
	if len(st.prefix) == 0 {
		for k := range st.bounds {
			st.prefix = append(st.prefix, fmt.Sprintf("10.%d.0.0/16", k+1))
		}
	}
	if len(st.prefix) != len(st.bounds) {
		return nil, o.Inputf("class_prefixes: %d blocks for %d classes", len(st.prefix), len(st.bounds))
	}
	for _, p := range st.prefix {
		if err := checkPrefix(p); err != nil {
			return nil, o.Inputf("class_prefixes: %v", err)
		}
	}
	bind := o.Binding{Role: "link table", Resource: in.file, Detail: fmt.Sprintf("%d links, %d ToRs, sha256 %s", len(in.net.Links), len(in.net.ToRs()), in.sha256[:12])}
	if in.why != "" {
		bind.Detail += "; " + in.why
	}
	plan := &o.Plan{Bindings: []o.Binding{bind}, Tables: Tables(),
		Summary: func(partial bool) (any, error) { return st.summary(partial), nil }}
	plan.Steps = []*o.Step{
		{Name: "virtual topologies", Action: "compute", Note: fmt.Sprintf("greedy rounds for bounds %v, %s estimates", st.bounds, pc.Params.String("estimate")),
			Run: func(ctx context.Context, rc *o.RunContext) error { return st.build(rc) }},
		{Name: "paths per class", Action: "compute", Note: "every ordered ToR pair's equal-cost paths, their survival, goodness and coding",
			Run: func(ctx context.Context, rc *o.RunContext) error { return st.paths(rc) }},
		{Name: "export", Action: "write", Note: "data/rail/classes.json and data/rail/frr/<switch>.conf",
			Run: func(ctx context.Context, rc *o.RunContext) error { return st.export(rc) }},
	}
	return plan, nil
}

func (st *run) build(rc *o.RunContext) error {
	net := st.in.net
	lt, err := rc.Table("links")
	if err != nil {
		return err
	}
	for _, l := range net.Links {
		vals := []any{l.Name, l.A, l.APort, net.Roles[l.A].String(), l.B, l.BPort, net.Roles[l.B].String(), l.Transceiver, l.FEC,
			ptr(l.LengthM), ptr(l.AttenuationABDB), ptr(l.AttenuationBADB),
			l.AB.LPER, l.AB.Low, l.AB.High, frames(l.AB), lost(l.AB),
			l.BA.LPER, l.BA.Low, l.BA.High, frames(l.BA), lost(l.BA)}
		if err := lt.Write(vals...); err != nil {
			return err
		}
	}
	cls, err := net.Classes(st.in.rates, st.bounds, nil)
	if err != nil {
		return err
	}
	st.classes = cls
	removedIn := map[int]int{}
	for k := len(cls) - 1; k >= 0; k-- {
		for _, rm := range cls[k].Removed {
			removedIn[rm.Link] = cls[k].Index
			rc.Event(results.Event{Type: "decision", Step: "virtual topologies",
				Message: fmt.Sprintf("class %d: %s out (LPER %.3g on the worst path %s, PPER %.3g > %g)", cls[k].Index, net.Links[rm.Link].Name, rm.LPER,
					strings.Join(rm.Worst.Switches, ">"), rm.Worst.PPER, cls[k].Bound),
				Fields: map[string]any{"class": cls[k].Index, "link": net.Links[rm.Link].Name, "lper": rm.LPER, "worst_pper": rm.Worst.PPER}})
		}
	}
	ct, err := rc.Table("class_links")
	if err != nil {
		return err
	}
	for _, c := range cls {
		for i, l := range net.Links {
			var rin any
			if !c.Alive[i] {
				rin = removedIn[i]
			}
			if err := ct.Write(c.Index, c.Bound, l.Name, l.A, l.B, st.in.rates(l, true), st.in.rates(l, false), c.Alive[i], rin); err != nil {
				return err
			}
		}
	}
	return nil
}

func ptr(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// frames and lost are an estimate's counts, empty when it came without.
func frames(e topo.Estimate) any {
	if e.Frames == 0 {
		return nil
	}
	return e.Frames
}

func lost(e topo.Estimate) any {
	if e.Frames == 0 {
		return nil
	}
	return e.Lost
}

func (st *run) paths(rc *o.RunContext) error {
	net := st.in.net
	st.all = net.AllPaths(st.in.rates, nil)
	// Algorithm 1 against the enumeration: the same worst path.
	enumWorst := -1.0
	for _, pp := range st.all {
		for _, p := range pp.Paths {
			enumWorst = max(enumWorst, p.PPER)
		}
	}
	w, ok := net.Worst(st.in.rates, nil)
	agree := (!ok && enumWorst < 0) || ok && closeTo(w.PPER, enumWorst)
	st.agree = &agree
	if !agree {
		return fmt.Errorf("algorithm 1 found worst PPER %g, the enumeration of every path %g", w.PPER, enumWorst)
	}
	pt, err := rc.Table("paths")
	if err != nil {
		return err
	}
	prt, err := rc.Table("pairs")
	if err != nil {
		return err
	}
	cdf, err := rc.Table("good_fraction_cdf")
	if err != nil {
		return err
	}
	for _, c := range st.classes {
		pcs := topo.PairsInClass(st.all, c.Alive, st.good)
		st.pairs = append(st.pairs, pcs)
		// Each pair's worst path by Algorithm 1's recurrences must be the
		// enumeration's.
		for i, pw := range net.WorstPerPair(st.in.rates, c.Alive) {
			if e := pcs[i].Worst; pw.Src != pcs[i].Src || pw.Dst != pcs[i].Dst || !closeTo(pw.PPER, e) {
				*st.agree = false
				return fmt.Errorf("class %d: pair %s->%s: algorithm 1 found worst PPER %g, the enumeration %g", c.Index, pw.Src, pw.Dst, pw.PPER, e)
			}
		}
		for _, pp := range st.all {
			for _, p := range pp.Paths {
				surv := topo.Survives(p, c.Alive)
				var kind, n, copies, resid, over any
				if surv {
					pr, err := topo.Protect(p.PPER, st.target)
					if err != nil {
						return fmt.Errorf("path %s: %w", strings.Join(p.Switches, ">"), err)
					}
					st.prot[protKey(c.Index, p)] = pr
					kind, resid = pr.Kind, pr.Residual
					switch pr.Kind {
					case "xor":
						n, over = pr.N, pr.Overhead
					case "replicate":
						copies, over = pr.Copies, pr.Overhead
					default:
						over = 0.0
					}
				}
				if err := pt.Write(c.Index, pp.Src, pp.Dst, strings.Join(p.Switches, ">"), p.PPER, surv, kind, n, copies, resid, over); err != nil {
					return err
				}
			}
		}
		fr := make([]float64, 0, len(pcs))
		for _, pc := range pcs {
			var worst any
			if pc.Worst >= 0 {
				worst = pc.Worst
			}
			if err := prt.Write(c.Index, pc.Src, pc.Dst, pc.Paths, pc.Surviving, pc.SurvivingFraction(), pc.Good, pc.GoodFraction(), worst); err != nil {
				return err
			}
			fr = append(fr, pc.GoodFraction())
		}
		sort.Float64s(fr)
		for i, f := range fr {
			if i+1 < len(fr) && fr[i+1] == f {
				continue
			}
			if err := cdf.Write(c.Index, f, float64(i+1)/float64(len(fr))); err != nil {
				return err
			}
		}
	}
	st.done = true
	return nil
}

// closeTo compares two PPERs computed in different orders: each is one
// minus a product of factors near one, so they agree to a few units in the
// last place of 1 (absolute), not of themselves.
func closeTo(a, b float64) bool { return math.Abs(a-b) <= 1e-14+1e-12*math.Abs(b) }

func protKey(class int, p topo.Path) string {
	return fmt.Sprintf("%d/%s", class, strings.Join(p.Switches, ">"))
}

// ClassSummary is one class's headline numbers.
type ClassSummary struct {
	Bound         float64 `json:"bound"`
	LinksKept     int     `json:"links_kept"`
	LinksExcluded int     `json:"links_excluded"`
	// WorstPPER is the class's worst path (null: no ToR pair is joined).
	WorstPPER *float64 `json:"worst_pper"`
	// PairsConnected counts ordered ToR pairs with a surviving path.
	PairsConnected int `json:"pairs_connected"`
	// Surviving and good-path fractions over ordered ToR pairs (Fig. 16).
	MinSurvivingFraction  float64 `json:"min_surviving_fraction"`
	MeanSurvivingFraction float64 `json:"mean_surviving_fraction"`
	MinGoodFraction       float64 `json:"min_good_fraction"`
	MeanGoodFraction      float64 `json:"mean_good_fraction"`
	// Coding of the surviving paths for target_loss.
	PathsSurviving int `json:"paths_surviving"`
	PathsXOR       int `json:"paths_xor"`
	PathsReplicate int `json:"paths_replicate"`
	// MinParityN is the smallest XOR interval any path needs (null: none).
	MinParityN *int `json:"min_parity_n"`
	// MeanOverhead is the coding's extra bandwidth averaged over surviving
	// paths (each path equally loaded).
	MeanOverhead float64 `json:"mean_overhead"`
}

// Summary is summary.json.
type Summary struct {
	Partial     bool    `json:"partial"`
	LinksSHA256 string  `json:"links_sha256"`
	Estimate    string  `json:"estimate"`
	Links       int     `json:"links"`
	ToRs        int     `json:"tors"`
	Aggs        int     `json:"aggs"`
	Cores       int     `json:"cores"`
	Pairs       int     `json:"pairs"`
	Paths       int     `json:"paths"`
	TargetLoss  float64 `json:"target_loss"`
	GoodPPER    float64 `json:"good_pper"`
	// PhysicalWorstPPER is Algorithm 1 over every link.
	PhysicalWorstPPER *float64 `json:"physical_worst_pper"`
	// Algorithm1Agrees says the enumeration of every path found the same
	// worst PPER as Algorithm 1, over the network and per ToR pair in
	// every class (null: not checked).
	Algorithm1Agrees *bool                   `json:"algorithm1_agrees"`
	Classes          map[string]ClassSummary `json:"classes"`
}

func (st *run) summary(partial bool) Summary {
	net := st.in.net
	s := Summary{Partial: partial || !st.done, LinksSHA256: st.in.sha256, Estimate: st.in.estimate, Links: len(net.Links),
		TargetLoss: st.target, GoodPPER: st.good, Algorithm1Agrees: st.agree, Classes: map[string]ClassSummary{}}
	for _, r := range net.Roles {
		switch r {
		case topo.ToR:
			s.ToRs++
		case topo.Agg:
			s.Aggs++
		case topo.Core:
			s.Cores++
		}
	}
	if w, ok := net.Worst(st.in.rates, nil); ok {
		v := w.PPER
		s.PhysicalWorstPPER = &v
	}
	for _, pp := range st.all {
		s.Pairs++
		s.Paths += len(pp.Paths)
	}
	for k, c := range st.classes {
		cs := ClassSummary{Bound: c.Bound}
		for _, a := range c.Alive {
			if a {
				cs.LinksKept++
			} else {
				cs.LinksExcluded++
			}
		}
		if c.Found {
			v := c.Worst.PPER
			cs.WorstPPER = &v
		}
		if k < len(st.pairs) {
			pcs := st.pairs[k]
			cs.MinSurvivingFraction, cs.MinGoodFraction = 1, 1
			for _, pc := range pcs {
				if pc.Surviving > 0 {
					cs.PairsConnected++
				}
				cs.MinSurvivingFraction = min(cs.MinSurvivingFraction, pc.SurvivingFraction())
				cs.MinGoodFraction = min(cs.MinGoodFraction, pc.GoodFraction())
				cs.MeanSurvivingFraction += pc.SurvivingFraction() / float64(len(pcs))
				cs.MeanGoodFraction += pc.GoodFraction() / float64(len(pcs))
			}
			for _, pp := range st.all {
				for _, p := range pp.Paths {
					pr, ok := st.prot[protKey(c.Index, p)]
					if !ok {
						continue
					}
					cs.PathsSurviving++
					cs.MeanOverhead += pr.Overhead
					switch pr.Kind {
					case "xor":
						cs.PathsXOR++
						if cs.MinParityN == nil || pr.N < *cs.MinParityN {
							n := pr.N
							cs.MinParityN = &n
						}
					case "replicate":
						cs.PathsReplicate++
					}
				}
			}
			if cs.PathsSurviving > 0 {
				cs.MeanOverhead /= float64(cs.PathsSurviving)
			}
		}
		s.Classes[fmt.Sprint(c.Index)] = cs
	}
	return s
}
