package results

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestCompareMetric(t *testing.T) {
	exact := Tolerance{}
	cases := []struct {
		name       string
		a, b       any
		dir        Direction
		tol        Tolerance
		status     string
		regression bool
	}{
		{"equal numbers", 1.5, 1.5, Either, exact, MetricEqual, false},
		{"exact: any change differs", 1.5, 1.5000001, Either, exact, MetricDiffers, true},
		{"within relative", 100.0, 104.0, Either, Tolerance{Rel: 0.05}, MetricWithin, false},
		{"just beyond relative", 100.0, 105.5, Either, Tolerance{Rel: 0.05}, MetricDiffers, true},
		{"relative uses |A|", -100.0, -96.0, Either, Tolerance{Rel: 0.05}, MetricWithin, false},
		{"within absolute", 0.0, 1e-9, Either, Tolerance{Abs: 1e-6}, MetricWithin, false},
		{"higher is worse, went up", 1e-6, 2e-6, HigherIsWorse, exact, MetricWorse, true},
		{"higher is worse, went down", 2e-6, 1e-6, HigherIsWorse, exact, MetricBetter, false},
		{"lower is worse, went down", 9.25, 9.0, LowerIsWorse, Tolerance{Abs: 0.1}, MetricWorse, true},
		{"lower is worse, went up", 9.25, 9.5, LowerIsWorse, Tolerance{Abs: 0.1}, MetricBetter, false},
		{"lower is worse, within", 9.25, 9.2, LowerIsWorse, Tolerance{Abs: 0.1}, MetricWithin, false},
		{"strings equal", "RS(528,514)", "RS(528,514)", Either, Tolerance{Rel: 1}, MetricEqual, false},
		{"strings differ despite tolerance", "RS(528,514)", "none", Either, Tolerance{Rel: 1}, MetricDiffers, true},
		{"null to number", nil, 6.0, LowerIsWorse, Tolerance{Rel: 1}, MetricDiffers, true},
		{"null to null", nil, nil, Either, exact, MetricEqual, false},
		{"bools", true, false, Either, exact, MetricDiffers, true},
	}
	for _, c := range cases {
		d := CompareMetric("m", c.a, c.b, c.dir, c.tol)
		if d.Status != c.status || d.Regression != c.regression {
			t.Errorf("%s: status %s regression %v, want %s %v", c.name, d.Status, d.Regression, c.status, c.regression)
		}
	}
	d := CompareMetric("m", 8.0, 10.0, Either, exact)
	if d.AbsChange == nil || *d.AbsChange != 2 || d.RelChange == nil || *d.RelChange != 0.25 {
		t.Errorf("changes of 8 -> 10: %+v", d)
	}
	d = CompareMetric("m", 0.0, 3.0, Either, exact)
	if d.AbsChange == nil || *d.AbsChange != 3 || d.RelChange != nil {
		t.Errorf("0 -> 3 must have an absolute change and no relative one: %+v", d)
	}
	if _, err := json.Marshal(d); err != nil {
		t.Errorf("a diff from zero does not encode: %v", err)
	}
}

func TestParseDirectionAndValidate(t *testing.T) {
	for in, want := range map[string]Direction{"": Either, "either": Either, "higher-is-worse": HigherIsWorse, "Lower_Is_Worse": LowerIsWorse} {
		if got, err := ParseDirection(in); err != nil || got != want {
			t.Errorf("ParseDirection(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseDirection("up"); err == nil || !strings.Contains(err.Error(), "higher_is_worse") {
		t.Errorf("bad direction: %v", err)
	}
	bad := []DiffOptions{
		{Tolerance: Tolerance{Rel: -1}},
		{Tolerance: Tolerance{Abs: math.NaN()}},
		{Rules: []Rule{{Pattern: "[", Tolerance: Tolerance{}}}},
		{Rules: []Rule{{Pattern: "x", Direction: "sideways"}}},
	}
	for i, o := range bad {
		if err := o.Validate(); err == nil {
			t.Errorf("options %d accepted: %+v", i, o)
		}
	}
}

func TestDiffMetricsRulesAndOneSided(t *testing.T) {
	a := []Metric{{"links.l10g.cliff", 9.25}, {"links.l25g.cliff", 6.75}, {"links.l25g.fec", "none"}, {"old", 1.0}, {"partial", false}}
	b := []Metric{{"links.l10g.cliff", 9.0}, {"links.l25g.cliff", 7.0}, {"links.l25g.fec", "none"}, {"new", 2.0}, {"partial", false}}
	opts := DiffOptions{Rules: []Rule{
		{Pattern: "links.*.cliff", Direction: LowerIsWorse, Tolerance: Tolerance{Abs: 0.1}},
		{Pattern: "partial", Ignore: true},
	}}
	got := map[string]string{}
	for _, d := range DiffMetrics(a, b, opts) {
		got[d.Path] = d.Status
	}
	want := map[string]string{"links.l10g.cliff": MetricWorse, "links.l25g.cliff": MetricBetter, "links.l25g.fec": MetricEqual, "old": MetricOnlyA, "new": MetricOnlyB}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
}

// diffBundle writes and opens a finalized bundle with the given seed,
// firmware and summary.
func diffBundle(t *testing.T, seed uint64, fw string, summary any) *Reader {
	t.Helper()
	m := Manifest{RunID: NewRunID(time.Now(), "attenuation-sweep"), Recipe: RecipeRef{Name: "attenuation-sweep", Version: "1"}, Seed: seed,
		Params:   []Param{{Name: "step_db", Value: 0.5, Type: "number", Unit: "dB", Source: "default"}, {Name: "links", Value: []any{"l10g"}, Type: "[]string", Source: "set"}},
		Devices:  []Device{{Name: "voa1", Kind: "voa", Driver: "keysight-n77xx", Identity: Identity{Vendor: "Keysight Technologies", Model: "N7764A", Serial: "MY1", Firmware: fw}}},
		Software: Software{TestbedVersion: "0.1.0", GoVersion: "go1.26"},
		Programs: []Program{{Device: "sw1", Name: "sender", SHA256: strings.Repeat("a", 64)}}}
	b, err := Create(t.TempDir(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WriteSummary(summary); err != nil {
		t.Fatal(err)
	}
	if err := b.Finalize(StatusOK, ""); err != nil {
		t.Fatal(err)
	}
	r, err := Open(b.Dir())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDiffBundles(t *testing.T) {
	sum := func(cliff float64) any {
		return map[string]any{"links": map[string]any{"l10g": map[string]any{"loss_cliff_db": map[string]any{"1e-06": cliff}, "fec": "none"}}}
	}
	a := diffBundle(t, 1, "A.01", sum(9.25))
	same := diffBundle(t, 1, "A.01", sum(9.25))
	b := diffBundle(t, 2, "A.02", sum(9.5))

	rep, err := Diff(a, same, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Identical || rep.Regressions != 0 || len(rep.Changed()) != 0 || len(rep.Metrics) != 2 {
		t.Errorf("a bundle against its twin: %+v", rep)
	}
	rep, err = Diff(a, b, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ch := rep.Changed()
	if rep.Identical || len(ch) != 1 || ch[0].Path != "links.l10g.loss_cliff_db.1e-06" || *ch[0].AbsChange != 0.25 || rep.Regressions != 1 {
		t.Errorf("exact diff: %+v", rep)
	}
	pc := map[string][2]string{}
	for _, p := range rep.ProvenanceChanged() {
		pc[p.Field] = [2]string{p.A, p.B}
	}
	if pc["seed"] != [2]string{"1", "2"} || pc["devices.voa1.firmware"] != [2]string{"A.01", "A.02"} {
		t.Errorf("provenance changes: %v", pc)
	}
	if _, ok := pc["software.go_version"]; ok {
		t.Errorf("unchanged software reported as changed: %v", pc)
	}
	var haveProgram, haveParam bool
	for _, p := range rep.Provenance {
		haveProgram = haveProgram || p.Field == "programs.sw1.sender.sha256" && p.Same
		haveParam = haveParam || p.Field == "params.step_db" && p.A == "0.5 dB" && p.Same
	}
	if !haveProgram || !haveParam {
		t.Errorf("provenance lacks program hash or parameter: %+v", rep.Provenance)
	}
	rep, err = Diff(a, b, DiffOptions{Tolerance: Tolerance{Rel: 0.05}})
	if err != nil || !rep.Identical {
		t.Errorf("5%% tolerance should absorb 9.25 -> 9.5: %v %+v", err, rep)
	}
	if _, err := Diff(a, b, DiffOptions{Tolerance: Tolerance{Rel: -0.1}}); err == nil {
		t.Error("negative tolerance accepted")
	}
}
