package results

import (
	"encoding/json"
	"fmt"
	"math"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Direction says which way a metric's change counts as a regression when
// bundle A is the baseline and bundle B the candidate.
type Direction string

// Directions of a metric.
const (
	// Either: any change beyond tolerance is a regression.
	Either Direction = "either"
	// HigherIsWorse: B above A beyond tolerance is a regression (loss
	// rates, latencies); B below A is an improvement.
	HigherIsWorse Direction = "higher_is_worse"
	// LowerIsWorse: B below A beyond tolerance is a regression
	// (throughput, loss cliffs in dB); B above A is an improvement.
	LowerIsWorse Direction = "lower_is_worse"
)

// ParseDirection reads a direction as written in a suite or on a command
// line: "either", "higher_is_worse"/"higher-is-worse", "lower_is_worse"/
// "lower-is-worse".
func ParseDirection(s string) (Direction, error) {
	switch d := Direction(strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_")); d {
	case "":
		return Either, nil
	case Either, HigherIsWorse, LowerIsWorse:
		return d, nil
	}
	return "", fmt.Errorf("direction %q: expected one of either, higher_is_worse, lower_is_worse", s)
}

// Tolerance says how far a number may move and still count as unchanged.
// A change is within tolerance when |B-A| <= Abs or |B-A| <= Rel*|A|; the
// zero Tolerance means exact equality.
type Tolerance struct {
	Abs float64 `json:"abs"`
	Rel float64 `json:"rel"`
}

// Validate refuses negative or non-finite tolerances.
func (t Tolerance) Validate() error {
	for _, x := range []struct {
		name string
		v    float64
	}{{"absolute", t.Abs}, {"relative", t.Rel}} {
		if x.v < 0 || math.IsNaN(x.v) || math.IsInf(x.v, 0) {
			return fmt.Errorf("%s tolerance %v: expected a finite number >= 0", x.name, x.v)
		}
	}
	return nil
}

// Rule sets how the metrics whose path matches Pattern are compared.
// Pattern is a path.Match pattern over the dotted metric path, where '*'
// also matches dots: "links.*.loss_cliff_db.*". An exact path is a pattern
// too.
type Rule struct {
	Pattern   string    `json:"pattern"`
	Direction Direction `json:"direction,omitempty"`
	Tolerance Tolerance `json:"tolerance"`
	// Ignore leaves matching metrics out of the comparison.
	Ignore bool `json:"ignore,omitempty"`
}

// Matches reports whether the rule applies to a metric path.
func (r Rule) Matches(metric string) bool {
	// path.Match treats '/' as the separator; metric paths use dots, so a
	// '*' spans several levels, which is what a user means by links.*.x.
	ok, err := path.Match(r.Pattern, metric)
	return err == nil && ok
}

// DiffOptions configure Diff.
type DiffOptions struct {
	// Tolerance and Direction apply to every metric no Rule matches.
	Tolerance Tolerance
	Direction Direction
	// Rules are tried in order; the first that matches a metric wins.
	Rules []Rule
}

func (o DiffOptions) rule(metric string) Rule {
	for _, r := range o.Rules {
		if r.Matches(metric) {
			return r
		}
	}
	return Rule{Pattern: "*", Direction: o.Direction, Tolerance: o.Tolerance}
}

// Validate checks every tolerance, direction and pattern.
func (o DiffOptions) Validate() error {
	if err := o.Tolerance.Validate(); err != nil {
		return err
	}
	if _, err := ParseDirection(string(o.Direction)); err != nil {
		return err
	}
	for i, r := range o.Rules {
		if _, err := path.Match(r.Pattern, ""); err != nil {
			return fmt.Errorf("rule %d: pattern %q: %w", i+1, r.Pattern, err)
		}
		if err := r.Tolerance.Validate(); err != nil {
			return fmt.Errorf("rule %d (%s): %w", i+1, r.Pattern, err)
		}
		if _, err := ParseDirection(string(r.Direction)); err != nil {
			return fmt.Errorf("rule %d (%s): %w", i+1, r.Pattern, err)
		}
	}
	return nil
}

// Comparison outcomes of one metric.
const (
	MetricEqual   = "equal"   // identical values
	MetricWithin  = "within"  // numbers differ, within tolerance
	MetricBetter  = "better"  // beyond tolerance, in the good direction
	MetricWorse   = "worse"   // beyond tolerance, in the bad direction
	MetricDiffers = "differs" // beyond tolerance (direction either), or non-numbers differ
	MetricOnlyA   = "only_a"  // present in A (baseline) only: the candidate lost it
	MetricOnlyB   = "only_b"  // present in B (candidate) only: a new metric
)

// MetricDiff is the comparison of one metric of A (baseline) with B
// (candidate).
type MetricDiff struct {
	Path string `json:"path"`
	// A and B are float64, string, bool or nil (JSON null); absent when the
	// metric is missing from that side (Status only_a or only_b).
	A any `json:"a,omitempty"`
	B any `json:"b,omitempty"`
	// AbsChange is B-A and RelChange (B-A)/|A|, for two numbers; RelChange
	// is absent when A is 0 and B is not.
	AbsChange *float64  `json:"abs_change,omitempty"`
	RelChange *float64  `json:"rel_change,omitempty"`
	Direction Direction `json:"direction"`
	Tolerance Tolerance `json:"tolerance"`
	Status    string    `json:"status"`
	// Regression is true for worse, differs and only_a: the candidate is
	// not as good as the baseline.
	Regression bool `json:"regression"`
}

// Changed reports whether the metric differs beyond tolerance or exists on
// one side only.
func (d MetricDiff) Changed() bool { return d.Status != MetricEqual && d.Status != MetricWithin }

// CompareMetric compares one metric's value in A with its value in B under a
// direction and tolerance. Numbers compare with the tolerance; strings,
// booleans and nulls compare exactly; a number against a non-number
// differs.
func CompareMetric(name string, a, b any, dir Direction, tol Tolerance) MetricDiff {
	if dir == "" {
		dir = Either
	}
	d := MetricDiff{Path: name, A: a, B: b, Direction: dir, Tolerance: tol}
	fa, aNum := a.(float64)
	fb, bNum := b.(float64)
	if !aNum || !bNum {
		if a == b {
			d.Status = MetricEqual
		} else {
			d.Status, d.Regression = MetricDiffers, true
		}
		return d
	}
	abs := fb - fa
	d.AbsChange = &abs
	switch {
	case fa != 0:
		rel := abs / math.Abs(fa)
		d.RelChange = &rel
	case fb == 0:
		rel := 0.0
		d.RelChange = &rel
	}
	mag := math.Abs(abs)
	switch {
	case fa == fb:
		d.Status = MetricEqual
	case mag <= tol.Abs || mag <= tol.Rel*math.Abs(fa):
		d.Status = MetricWithin
	case dir == HigherIsWorse && fb > fa, dir == LowerIsWorse && fb < fa:
		d.Status, d.Regression = MetricWorse, true
	case dir == HigherIsWorse, dir == LowerIsWorse:
		d.Status = MetricBetter
	default:
		d.Status, d.Regression = MetricDiffers, true
	}
	return d
}

// ProvenanceDiff is one fact about how a run was made, in A and in B.
type ProvenanceDiff struct {
	// Field names the fact: "recipe.version", "params.step_db", "seed",
	// "devices.voa1.firmware", "software.vcs_revision", "programs.sender.sha256".
	Field string `json:"field"`
	A     string `json:"a"`
	B     string `json:"b"`
	Same  bool   `json:"same"`
}

// BundleRef names one side of a diff.
type BundleRef struct {
	Path   string `json:"path,omitempty"`
	RunID  string `json:"run_id"`
	Recipe string `json:"recipe"`
	Status Status `json:"status"`
}

// DiffReport is the outcome of Diff; its JSON form is what
// `testbed results diff --output json` prints.
type DiffReport struct {
	A BundleRef `json:"a"`
	B BundleRef `json:"b"`
	// Identical is true when every metric is equal or within tolerance and
	// none is on one side only. Provenance does not count: the same numbers
	// from a different software version are identical results.
	Identical bool `json:"identical"`
	// Regressions counts metrics whose Regression is true.
	Regressions int              `json:"regressions"`
	Metrics     []MetricDiff     `json:"metrics"`
	Provenance  []ProvenanceDiff `json:"provenance"`
}

// Changed returns the metrics that differ beyond tolerance or are on one
// side only.
func (r *DiffReport) Changed() []MetricDiff {
	var out []MetricDiff
	for _, m := range r.Metrics {
		if m.Changed() {
			out = append(out, m)
		}
	}
	return out
}

// ProvenanceChanged returns the provenance facts that differ.
func (r *DiffReport) ProvenanceChanged() []ProvenanceDiff {
	var out []ProvenanceDiff
	for _, p := range r.Provenance {
		if !p.Same {
			out = append(out, p)
		}
	}
	return out
}

// Diff compares two opened bundles: A is the baseline, B the candidate.
// Metrics are the leaves of summary.json named by FlattenSummary; a bundle
// with no summary.json has no metrics.
func Diff(a, b *Reader, opts DiffOptions) (*DiffReport, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	ma, err := readerMetrics(a)
	if err != nil {
		return nil, fmt.Errorf("diff: bundle A %s: %w", a.label(), err)
	}
	mb, err := readerMetrics(b)
	if err != nil {
		return nil, fmt.Errorf("diff: bundle B %s: %w", b.label(), err)
	}
	rep := &DiffReport{A: a.ref(), B: b.ref(), Metrics: DiffMetrics(ma, mb, opts), Provenance: DiffProvenance(a.Manifest, b.Manifest)}
	rep.Identical = true
	for _, m := range rep.Metrics {
		if m.Changed() {
			rep.Identical = false
		}
		if m.Regression {
			rep.Regressions++
		}
	}
	return rep, nil
}

// DiffMetrics compares two flattened summaries, in path order. Metrics a
// Rule ignores are left out.
func DiffMetrics(a, b []Metric, opts DiffOptions) []MetricDiff {
	type pair struct {
		a, b     any
		inA, inB bool
	}
	all := map[string]*pair{}
	for _, m := range a {
		all[m.Path] = &pair{a: m.Value, inA: true}
	}
	for _, m := range b {
		p := all[m.Path]
		if p == nil {
			p = &pair{}
			all[m.Path] = p
		}
		p.b, p.inB = m.Value, true
	}
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	sort.Strings(names)
	out := []MetricDiff{}
	for _, name := range names {
		p := all[name]
		r := opts.rule(name)
		if r.Ignore {
			continue
		}
		dir := r.Direction
		if dir == "" {
			dir = Either
		}
		switch {
		case p.inA && p.inB:
			out = append(out, CompareMetric(name, p.a, p.b, dir, r.Tolerance))
		case p.inA:
			out = append(out, MetricDiff{Path: name, A: p.a, Direction: dir, Tolerance: r.Tolerance, Status: MetricOnlyA, Regression: true})
		default:
			out = append(out, MetricDiff{Path: name, B: p.b, Direction: dir, Tolerance: r.Tolerance, Status: MetricOnlyB})
		}
	}
	return out
}

// DiffProvenance lists how two runs were made, side by side: recipe and
// version, status, seed, resolved parameters, lab, device identities,
// software and program hashes. A fact missing on one side is "".
func DiffProvenance(a, b Manifest) []ProvenanceDiff {
	fa, fb := provenanceFacts(a), provenanceFacts(b)
	keys := map[string]bool{}
	var order []string
	add := func(facts []fact) {
		for _, f := range facts {
			if !keys[f.k] {
				keys[f.k] = true
				order = append(order, f.k)
			}
		}
	}
	add(fa)
	add(fb)
	ia, ib := factMap(fa), factMap(fb)
	out := make([]ProvenanceDiff, 0, len(order))
	for _, k := range order {
		va, okA := ia[k]
		vb, okB := ib[k]
		out = append(out, ProvenanceDiff{Field: k, A: va, B: vb, Same: okA == okB && va == vb})
	}
	return out
}

type fact struct{ k, v string }

func factMap(fs []fact) map[string]string {
	m := make(map[string]string, len(fs))
	for _, f := range fs {
		m[f.k] = f.v
	}
	return m
}

func provenanceFacts(m Manifest) []fact {
	fs := []fact{
		{"schema", m.Schema},
		{"recipe.name", m.Recipe.Name},
		{"recipe.version", m.Recipe.Version},
		{"status", string(m.Status)},
		{"seed", strconv.FormatUint(m.Seed, 10)},
	}
	params := slices.Clone(m.Params)
	sort.SliceStable(params, func(i, j int) bool { return params[i].Name < params[j].Name })
	for _, p := range params {
		v := formatValue(p.Value)
		if p.Unit != "" {
			v += " " + p.Unit
		}
		fs = append(fs, fact{"params." + p.Name, v})
	}
	fs = append(fs, fact{"lab.name", m.Lab.Name}, fact{"lab.simulated", strconv.FormatBool(m.Lab.Simulated)})
	devs := slices.Clone(m.Devices)
	sort.SliceStable(devs, func(i, j int) bool { return devs[i].Name < devs[j].Name })
	for _, d := range devs {
		p := "devices." + d.Name + "."
		fs = append(fs,
			fact{p + "driver", d.Driver},
			fact{p + "vendor", d.Identity.Vendor},
			fact{p + "model", d.Identity.Model},
			fact{p + "serial", d.Identity.Serial},
			fact{p + "firmware", d.Identity.Firmware})
	}
	fs = append(fs,
		fact{"software.testbed_version", m.Software.TestbedVersion},
		fact{"software.vcs_revision", m.Software.VCSRevision},
		fact{"software.vcs_modified", strconv.FormatBool(m.Software.VCSModified)},
		fact{"software.go_version", m.Software.GoVersion},
		fact{"software.os_arch", m.Software.OS + "/" + m.Software.Arch})
	progs := slices.Clone(m.Programs)
	sort.SliceStable(progs, func(i, j int) bool { return progs[i].key() < progs[j].key() })
	for _, p := range progs {
		fs = append(fs, fact{"programs." + p.key() + ".sha256", p.SHA256})
	}
	return fs
}

// formatValue prints a parameter or metric value the same way on both
// sides: numbers in shortest form, lists and maps as compact JSON.
func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func readerMetrics(r *Reader) ([]Metric, error) {
	if len(r.Summary) == 0 {
		return nil, nil
	}
	return FlattenSummary(r.Summary)
}

func (r *Reader) label() string {
	if r.Path != "" {
		return r.Path
	}
	return r.Manifest.RunID
}

func (r *Reader) ref() BundleRef {
	return BundleRef{Path: r.Path, RunID: r.Manifest.RunID, Recipe: r.Manifest.Recipe.Name, Status: r.Manifest.Status}
}
