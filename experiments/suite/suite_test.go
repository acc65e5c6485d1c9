package suite

import (
	"bytes"
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"testbed/experiments"
	"testbed/orchestrator"
	"testbed/results"
)

// fake is a recipe with a few typed parameters; its plan is never run here.
type fake struct{ name, version string }

func (f fake) Meta() orchestrator.Meta {
	return orchestrator.Meta{Name: f.name, Version: f.version, Params: fakeParams()}
}

func fakeParams() []orchestrator.ParamSpec {
	return []orchestrator.ParamSpec{
		{Name: "links", Type: orchestrator.TypeStrings, Default: []string{}},
		{Name: "step_db", Type: orchestrator.TypeFloat, Unit: "dB", Default: 0.5, Min: orchestrator.Bound(0.01)},
		{Name: "frames", Type: orchestrator.TypeInt, Default: int64(1000)},
		{Name: "timeout", Type: orchestrator.TypeDuration, Default: 30 * time.Second},
	}
}
func (f fake) Plan(*orchestrator.PlanContext) (*orchestrator.Plan, error) {
	return &orchestrator.Plan{}, nil
}

func registry() *orchestrator.Registry {
	return orchestrator.NewRegistry(fake{"sweep", "1.0.0"}, fake{"fct", "2.1.0"})
}

const good = `name: nightly
entries:
  - id: sweep-quick
    recipe: sweep
    seed: 7
    set:
      links: [l10g, l25g]
      step_db: 1
      timeout: 5s
    expect:
      - metric: links.l10g.cliff_db
        min: 8
        max: 11
      - metric: links.*.cliff_db
        rel_tol: 0.05
        worse: lower
  - recipe: fct
    expect:
      - {metric: p99_us, abs_tol: 2, worse: higher}
`

func TestParseGoodSuite(t *testing.T) {
	s, err := Parse("nightly.yaml", []byte(good), registry())
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "nightly" || len(s.Entries) != 2 {
		t.Fatalf("suite %q with %d entries", s.Name, len(s.Entries))
	}
	e := s.Entries[0]
	if e.ID != "sweep-quick" || *e.Seed != 7 || e.Pos.String() != "nightly.yaml:3" || len(e.Expect) != 2 {
		t.Fatalf("entry: %+v", e)
	}
	if e.Params.Float("step_db") != 1 || strings.Join(e.Params.Strings("links"), ",") != "l10g,l25g" || e.Params.Duration("timeout") != 5*time.Second {
		t.Errorf("params not resolved: %v", ParamValues(e.Params))
	}
	x := e.Expect[1]
	if x.Worse != results.LowerIsWorse || *x.RelTol != 0.05 || x.Pos.Line != 14 || !x.Relative() {
		t.Errorf("expectation: %+v", x)
	}
	if got := x.Condition(); got != "within rel_tol 0.05 of baseline (lower is worse)" {
		t.Errorf("condition %q", got)
	}
	if s.Entries[1].ID != "fct" || s.Entries[1].Seed != nil || s.Entries[1].Expect[0].Worse != results.HigherIsWorse {
		t.Errorf("second entry: %+v", s.Entries[1])
	}
	// A bare list of entries is a suite too, named after its file.
	s, err = Parse("dir/smoke.yaml", []byte("- recipe: fct\n"), registry())
	if err != nil || s.Name != "smoke" || len(s.Entries) != 1 {
		t.Fatalf("bare list: %v %+v", err, s)
	}
}

func TestParseErrorsNameFileAndLine(t *testing.T) {
	cases := []struct{ text, want string }{
		{"entries:\n  - recipe: nope\n", `bad.yaml:2: entries[0]: unknown recipe "nope" (known: fct, sweep)`},
		{"entries:\n  - recipe: fct\n    sed: 1\n", `bad.yaml:3: entries[0]: unknown key "sed" (expected one of: id, recipe, set, seed, expect, bench)`},
		{"entries:\n  - recipe: fct\n    bench: 'a b'\n", `bad.yaml:3: entry fct.bench "a b": expected a built-in bench's name`},
		{"entries:\n  - recipe: sweep\n    set:\n      step_db: fast\n", `bad.yaml:4: entry sweep (sweep): set: parameter step_db: "fast" is not a number`},
		{"entries:\n  - recipe: sweep\n    set:\n      nope: 1\n", `bad.yaml:4: entry sweep (sweep): set: unknown parameter "nope"`},
		{"entries:\n  - recipe: sweep\n    set:\n      step_db: 0\n", `bad.yaml:4: entry sweep (sweep): set: parameter step_db: 0 dB is below the minimum 0.01`},
		{"entries:\n  - recipe: fct\n    expect:\n      - metric: a.b\n        maxx: 3\n", `bad.yaml:5: entry fct: expect[0]: unknown key "maxx" (expected one of: metric, min, max, rel_tol, abs_tol, worse)`},
		{"entries:\n  - recipe: fct\n    expect:\n      - metric: a.b\n        worse: sideways\n        rel_tol: 0.1\n", `bad.yaml:5: entry fct: expect[0]: worse "sideways": expected lower, higher or either`},
		{"entries:\n  - recipe: fct\n    expect:\n      - metric: a.b\n        worse: lower\n        max: 1\n", `bad.yaml:5: entry fct: expect[0]: worse says which change from the baseline is a regression; it needs rel_tol or abs_tol`},
		{"entries:\n  - recipe: fct\n    expect:\n      - metric: a.b\n", `bad.yaml:4: entry fct: expect[0]: nothing to check`},
		{"entries:\n  - recipe: fct\n    expect:\n      - metric: a..b\n        max: 1\n", `bad.yaml:4: entry fct: expect[0]: metric "a..b" has an empty segment`},
		{"entries:\n  - recipe: fct\n    expect:\n      - {metric: a, min: 3, max: 1}\n", `bad.yaml:4: entry fct: expect[0]: min 3 is above max 1`},
		{"entries:\n  - recipe: fct\n    expect:\n      - {metric: a, rel_tol: -1}\n", `bad.yaml:4: entry fct: expect[0]: rel_tol -1: expected a number >= 0`},
		{"entries:\n  - recipe: fct\n    expect:\n      - {metric: a, max: lots}\n", `bad.yaml:4: entry fct: expect[0].max: expected a finite number, got "lots"`},
		{"entries:\n  - recipe: fct\n    seed: -3\n", `bad.yaml:3: entry fct: seed -3: expected a whole number >= 0`},
		{"entries:\n  - recipe: fct\n  - recipe: fct\n", `bad.yaml:3: entries[1]: id "fct" is also the id of the entry at bad.yaml:2`},
		{"entries:\n  - recipe: fct\n    id: 'a b'\n", `bad.yaml:3: entries[0].id "a b": expected letters`},
		{"name: x\n", `bad.yaml:1: suite has no entries`},
		{"- recipe:\n", `bad.yaml:1: entries[0]: recipe is empty: expected a recipe's name (known: fct, sweep)`},
		{"entries: [\n", `bad.yaml: `},
	}
	for _, c := range cases {
		_, err := Parse("bad.yaml", []byte(c.text), registry())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got: %v\nwant: %s", c.text, err, c.want)
			continue
		}
		if _, ok := err.(*orchestrator.InputError); !ok {
			t.Errorf("%q: %T is not an InputError", c.text, err)
		}
	}
}

// Every mistake in a suite is reported at once: an unknown recipe does
// not hide the entry's other mistakes, and a repeated id is reported
// whether or not the entries that share it have mistakes of their own.
func TestParseReportsEveryMistakeAtOnce(t *testing.T) {
	text := `entries:
  - id: nightly-sweep
    recipe: swep
    seed: -1
    set: {step_db: 0}
    expect:
      - {metric: a, min: 3, max: 1}
  - id: nightly-sweep
    recipe: sweep
  - recipe: fct
    seed: lots
  - recipe: fct
  - recipe: nope
  - recipe: nope
    expect:
      - metric: a..b
        max: 1
`
	_, err := Parse("bad.yaml", []byte(text), registry())
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`bad.yaml:3: entries[0]: unknown recipe "swep" (known: fct, sweep)`,
		`bad.yaml:4: entry nightly-sweep: seed -1: expected a whole number >= 0`,
		`bad.yaml:7: entry nightly-sweep: expect[0]: min 3 is above max 1`,
		`bad.yaml:8: entries[1]: id "nightly-sweep" is also the id of the entry at bad.yaml:2`,
		`bad.yaml:11: entry fct: seed: expected a whole number >= 0, got "lots"`,
		`bad.yaml:12: entries[3]: id "fct" is also the id of the entry at bad.yaml:10`,
		`bad.yaml:13: entries[4]: unknown recipe "nope"`,
		`bad.yaml:14: entries[5]: unknown recipe "nope"`,
		`bad.yaml:14: entries[5]: id "nope" is also the id of the entry at bad.yaml:13`,
		`bad.yaml:16: entry nope: expect[0]: metric "a..b" has an empty segment`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error:\n%v\nwant it to contain:\n%s", err, want)
		}
	}
	// A parameter's limit is reported with the value as written.
	_, err = Parse("bad.yaml", []byte("- recipe: sweep\n  set: {timeout: -1ms, step_db: 1e-3}\n"), registry())
	if err == nil || !strings.Contains(err.Error(), "set: parameter step_db: 1e-3 dB is below the minimum 0.01 dB") {
		t.Errorf("error %v does not keep the value as written", err)
	}
}

func TestMatchPathOneSegmentPerStar(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"links.*.loss_cliff_db.1e-06", "links.l10g.loss_cliff_db.1e-06", true},
		{"links.*.loss_cliff_db.*", "links.l25g-rs.loss_cliff_db.1e-08", true},
		{"links.*", "links.l10g.points", false}, // one segment only
		{"links.l25g*.points", "links.l25g-rs.points", true},
		{"links.l10g.points", "links.l10g.points", true},
		{"links.l10g.points", "links.l10g.point", false},
	} {
		if got := matchPath(c.pattern, c.path); got != c.want {
			t.Errorf("match(%q, %q) = %v", c.pattern, c.path, got)
		}
	}
}

func mustEntry(t *testing.T, text string) *Entry {
	t.Helper()
	s, err := Parse("s.yaml", []byte(text), registry())
	if err != nil {
		t.Fatal(err)
	}
	return s.Entries[0]
}

func TestEvaluateBoundsTolerancesAndMissingMetrics(t *testing.T) {
	e := mustEntry(t, `- recipe: sweep
  expect:
    - {metric: links.l10g.cliff_db, min: 8, max: 11}
    - {metric: links.*.cliff_db, rel_tol: 0.05, worse: lower}
    - {metric: links.*.dark_db, max: 30}
    - {metric: links.l40g.cliff_db, min: 1}
    - {metric: partial, max: 0}
`)
	cur := []byte(`{"partial": true, "links": {"l10g": {"cliff_db": 9.0, "dark_db": null}, "l25g": {"cliff_db": 7.5, "dark_db": 12}}}`)
	base := []byte(`{"links": {"l10g": {"cliff_db": 9.3}, "l25g": {"cliff_db": 6.9}}}`)
	checks, err := e.Evaluate(cur, base, "old-bundle")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Check{}
	for _, c := range checks {
		got[c.Pattern+" "+c.Metric] = c
	}
	want := map[string]struct{ outcome, msg string }{
		"links.l10g.cliff_db links.l10g.cliff_db": {Pass, "measured 9, bound [8, 11]"},
		// -3.2%: within 5%.
		"links.*.cliff_db links.l10g.cliff_db": {Pass, "baseline 9.3 (old-bundle), rel_tol 0.05 (5%)"},
		// Higher is better.
		"links.*.cliff_db links.l25g.cliff_db": {Pass, "baseline 6.9"},
		"links.*.dark_db links.l10g.dark_db":   {Regression, "s.yaml:5: links.l10g.dark_db: measured null, not a number; expected maximum 30"},
		"links.*.dark_db links.l25g.dark_db":   {Pass, "measured 12"},
		"links.l40g.cliff_db ":                 {Invalid, "s.yaml:6: metric links.l40g.cliff_db matches nothing in the summary of entry sweep (it has 5 metrics: links.l10g.cliff_db"},
		"partial partial":                      {Regression, "s.yaml:7: partial: measured 1, above the maximum 0"},
	}
	if len(checks) != len(want) {
		t.Errorf("%d checks, want %d: %+v", len(checks), len(want), checks)
	}
	for k, w := range want {
		c, ok := got[k]
		if !ok {
			t.Errorf("no check %s", k)
			continue
		}
		if c.Outcome != w.outcome || !strings.Contains(c.Message, w.msg) {
			t.Errorf("%s: %s %q, want %s containing %q", k, c.Outcome, c.Message, w.outcome, w.msg)
		}
	}
	// The same run against a baseline it fell behind by more than 5%.
	worse := []byte(`{"partial": false, "links": {"l10g": {"cliff_db": 9.9}, "l25g": {"cliff_db": 7.5}}}`)
	checks, _ = e.Evaluate(cur, worse, "good-bundle")
	found := false
	for _, c := range checks {
		if c.Metric == "links.l10g.cliff_db" && c.Pattern == "links.*.cliff_db" {
			found = true
			want := "s.yaml:4: links.l10g.cliff_db: measured 9, baseline 9.9 (good-bundle): change -0.9 (-9.091%) beyond rel_tol 0.05 (5%); lower is worse"
			if c.Outcome != Regression || c.Message != want || c.Baseline != 9.9 || c.Value != 9.0 {
				t.Errorf("regression: %s %q\nwant %q", c.Outcome, c.Message, want)
			}
		}
	}
	if !found {
		t.Error("no relative check of l10g")
	}
	// Without a baseline the relative checks are skipped, not passed.
	checks, _ = e.Evaluate(cur, nil, "")
	for _, c := range checks {
		if c.Pattern == "links.*.cliff_db" && (c.Outcome != Skipped || !strings.Contains(c.Message, "no baseline")) {
			t.Errorf("no baseline: %s %q", c.Outcome, c.Message)
		}
	}
}

// bundle writes a finished bundle of a fake run.
func bundle(t *testing.T, root, recipe string, status results.Status, labels map[string]string, params []results.Param, started time.Time, summary any) string {
	t.Helper()
	m := results.Manifest{RunID: results.NewRunID(started, recipe), Recipe: results.RecipeRef{Name: recipe, Version: "1.0.0"},
		Params: params, Started: started, Labels: labels}
	b, err := results.Create(root, m, results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if summary != nil {
		if err := b.WriteSummary(summary); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Finalize(status, ""); err != nil {
		t.Fatal(err)
	}
	return b.Dir()
}

func sweepParams(step float64) []results.Param {
	return []results.Param{{Name: "links", Value: []string{"l10g"}}, {Name: "step_db", Value: step}, {Name: "frames", Value: 1000},
		{Name: "timeout", Value: "30s"}}
}

func TestBaselineMatchingByIDThenParameters(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 11, 20, 2, 0, 0, 0, time.UTC)
	sum := map[string]any{"cliff_db": 9.0}
	byParamsOld := bundle(t, root, "sweep", results.StatusOK, nil, sweepParams(1), t0, sum)
	byParamsNew := bundle(t, root, "sweep", results.StatusOK, nil, sweepParams(1), t0.Add(time.Hour), sum)
	_ = bundle(t, root, "sweep", results.StatusFailed, map[string]string{LabelEntry: "q"}, sweepParams(1), t0.Add(3*time.Hour), sum)
	byID := bundle(t, root, "sweep", results.StatusOK, map[string]string{LabelEntry: "q"}, sweepParams(1), t0.Add(30*time.Minute), sum)
	// The entry's newest bundle ran with another step: not its baseline.
	_ = bundle(t, root, "sweep", results.StatusOK, map[string]string{LabelEntry: "q"}, sweepParams(2), t0.Add(2*time.Hour), sum)
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("not a bundle"), 0o644)
	bs, err := LoadBaselines(root)
	if err != nil || bs.Single || len(bs.Bundles) != 5 {
		t.Fatalf("load: %v %+v", err, bs)
	}
	e := mustEntry(t, "- {recipe: sweep, id: q, set: {links: [l10g], step_db: 1}}\n")
	if b, how := bs.For(e); b == nil || b.Path != byID || !strings.Contains(how, "suite entry q") {
		t.Errorf("by id: %v %s", b, how)
	}
	e = mustEntry(t, "- {recipe: sweep, id: other, set: {links: [l10g], step_db: 1}}\n")
	if b, how := bs.For(e); b == nil || b.Path != byParamsNew || !strings.Contains(how, "same parameters") {
		t.Errorf("by parameters: %v %s (older one %s)", b, how, byParamsOld)
	}
	e = mustEntry(t, "- {recipe: sweep, id: other, set: {links: [l25g]}}\n")
	if b, why := bs.For(e); b != nil || !strings.Contains(why, "no ok bundle in "+root) || !strings.Contains(why, "5 bundles of sweep, 1 of them not ok") {
		t.Errorf("no match: %v %s", b, why)
	}
	// One bundle serves every entry of its recipe.
	one, err := LoadBaselines(byParamsOld)
	if err != nil || !one.Single {
		t.Fatal(err)
	}
	// ... but not one that ran with other parameters: not compared, and why.
	if b, why := one.For(e); b != nil || !strings.Contains(why, "other parameters (links: [\"l10g\"] in the baseline, [\"l25g\"] here; step_db: 1 in the baseline, 0.5 here)") || !strings.Contains(why, "not compared") {
		t.Errorf("single, other parameters: %v %s", b, why)
	}
	same := mustEntry(t, "- {recipe: sweep, id: q, set: {links: [l10g], step_db: 1}}\n")
	if b, how := one.For(same); b == nil || how != "the bundle given" {
		t.Errorf("single, same parameters: %v %s", b, how)
	}
	// An entry whose parameters changed since its last bundle: that bundle
	// is not compared, and the reason says so.
	e = mustEntry(t, "- {recipe: sweep, id: q, set: {links: [l10g], step_db: 2, frames: 5000}}\n")
	if b, why := bs.For(e); b != nil || !strings.Contains(why, "the newest ok bundle of entry q") || !strings.Contains(why, "frames: 1000 in the baseline, 5000 here") {
		t.Errorf("entry with new parameters: %v %s", b, why)
	}
	if b, why := one.For(mustEntry(t, "- {recipe: fct}\n")); b != nil || !strings.Contains(why, "is a sweep run, entry fct runs fct") {
		t.Errorf("single, other recipe: %v %s", b, why)
	}
	if _, err := LoadBaselines(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no bundle in this directory") {
		t.Errorf("empty dir: %v", err)
	}
}

func TestRunClassifiesAndWritesJUnit(t *testing.T) {
	runs := t.TempDir()
	base := t.TempDir()
	t0 := time.Now().Add(-time.Hour)
	s, err := Parse("nightly.yaml", []byte(`name: nightly
entries:
  - id: good
    recipe: sweep
    expect:
      - {metric: cliff_db, abs_tol: 0.2, worse: lower}
      - {metric: points, min: 5}
  - id: worse
    recipe: sweep
    expect:
      - {metric: cliff_db, min: 9.5}
      - {metric: nosuch, max: 1}
  - id: broken-lab
    recipe: fct
    expect:
      - {metric: p99_us, max: 100}
  - id: failing
    recipe: fct
  - id: leased
    recipe: fct
`), registry())
	if err != nil {
		t.Fatal(err)
	}
	// The baseline ran with the entry's parameters, as a run records them.
	var bp []results.Param
	for k, v := range ParamValues(s.Entries[0].Params) {
		bp = append(bp, results.Param{Name: k, Value: v})
	}
	baseline := bundle(t, base, "sweep", results.StatusOK, map[string]string{LabelEntry: "good"}, bp, t0, map[string]any{"cliff_db": 9.0, "points": 10})
	bs, err := LoadBaselines(base)
	if err != nil {
		t.Fatal(err)
	}
	run := func(ctx context.Context, e *Entry) (*orchestrator.RunResult, error) {
		switch e.ID {
		case "leased":
			return nil, &orchestrator.InfraError{Op: "lease devices", Err: os.ErrExist}
		case "broken-lab":
			d := bundle(t, runs, e.Recipe.Meta().Name, results.StatusFailed, nil, nil, time.Now(), nil)
			return &orchestrator.RunResult{Dir: d, Status: results.StatusFailed, Reason: "infrastructure: open devices: tg1: connection refused"}, nil
		case "failing":
			d := bundle(t, runs, e.Recipe.Meta().Name, results.StatusFailed, nil, nil, time.Now(), nil)
			return &orchestrator.RunResult{Dir: d, Status: results.StatusFailed, Reason: "step 3/9: device error -222"}, nil
		}
		d := bundle(t, runs, e.Recipe.Meta().Name, results.StatusOK, map[string]string{LabelEntry: e.ID}, nil, time.Now(), map[string]any{"cliff_db": 9.1, "points": 12})
		return &orchestrator.RunResult{Dir: d, Status: results.StatusOK}, nil
	}
	var seen []string
	rep := s.Run(context.Background(), run, bs, func(er *EntryResult) { seen = append(seen, er.ID+"="+er.Class) })
	if strings.Join(seen, " ") != "good=ok worse=ok broken-lab=infra failing=failed leased=infra" {
		t.Errorf("classes: %v", seen)
	}
	if rep.Entries[0].Baseline != baseline || !strings.Contains(rep.Entries[0].BaselineHow, "suite entry good") {
		t.Errorf("baseline of good: %q %q", rep.Entries[0].Baseline, rep.Entries[0].BaselineHow)
	}
	tot := rep.Totals()
	if tot.Passed != 2 || tot.Regressions != 1 || tot.Invalid != 1 || tot.Skipped != 1 || tot.Infra != 2 || tot.Failed != 1 || tot.OK != 2 {
		t.Errorf("totals: %+v", tot)
	}

	var buf bytes.Buffer
	if err := rep.WriteJUnit(&buf); err != nil {
		t.Fatal(err)
	}
	var doc JUnitSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, buf.String())
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d testsuites", len(doc.Suites))
	}
	js := doc.Suites[0]
	// 5 run cases + good: 2, worse: 2, broken-lab: 1 skipped.
	if js.Name != "nightly" || js.Tests != 10 || len(js.Cases) != 10 || js.Fail != 2 || js.Errors != 3 || js.Skipped != 1 {
		t.Fatalf("suite counts: tests %d cases %d failures %d errors %d skipped %d\n%s", js.Tests, len(js.Cases), js.Fail, js.Errors, js.Skipped, buf.String())
	}
	cases := map[string]JUnitCase{}
	for _, c := range js.Cases {
		cases[c.Classname+"/"+c.Name] = c
	}
	reg := cases["nightly.worse/cliff_db >= 9.5"]
	if reg.Failure == nil || reg.Failure.Type != "regression" || !strings.Contains(reg.Failure.Message, "measured 9.1, below the minimum 9.5") ||
		!strings.Contains(reg.Failure.Message, "nightly.yaml:11") {
		t.Errorf("regression case: %+v", reg)
	}
	good := cases["nightly.good/cliff_db within abs_tol 0.2 of baseline (lower is worse)"]
	if good.Failure != nil || good.Error != nil || !strings.Contains(good.SystemOut, "baseline 9 ("+baseline+")") {
		t.Errorf("passing relative case: %+v", good)
	}
	if c := cases["nightly.worse/nosuch <= 1"]; c.Error == nil || c.Error.Type != "suite" || !strings.Contains(c.Error.Message, "nightly.yaml:12: metric nosuch matches nothing") {
		t.Errorf("unmatched metric: %+v", c)
	}
	if c := cases["nightly.broken-lab/run fct"]; c.Error == nil || c.Error.Type != "infrastructure" || !strings.Contains(c.Error.Message, "connection refused") {
		t.Errorf("infra case: %+v", c)
	}
	if c := cases["nightly.failing/run fct"]; c.Failure == nil || c.Failure.Type != "run-failed" || !strings.Contains(c.Failure.Message, "-222") {
		t.Errorf("failed run case: %+v", c)
	}
	if c := cases["nightly.broken-lab/p99_us <= 100"]; c.Skipped == nil {
		t.Errorf("check of an infra-failed run: %+v", c)
	}
	if c := cases["nightly.good/run sweep"]; !strings.Contains(c.SystemOut, "bundle: "+runs) || !strings.Contains(c.SystemOut, "baseline: "+baseline) {
		t.Errorf("run case output: %q", c.SystemOut)
	}
}

func TestInterruptStopsTheSuite(t *testing.T) {
	s, err := Parse("s.yaml", []byte("- {recipe: sweep, id: a}\n- {recipe: sweep, id: b, expect: [{metric: x, max: 1}]}\n"), registry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := 0
	rep := s.Run(ctx, func(ctx context.Context, e *Entry) (*orchestrator.RunResult, error) {
		ran++
		cancel()
		return &orchestrator.RunResult{Status: results.StatusAborted, Reason: "aborted by interrupt"}, nil
	}, nil, nil)
	if ran != 1 || rep.Entries[0].Class != ClassAborted || rep.Entries[1].Class != ClassNotRun || rep.Entries[1].Checks[0].Outcome != Skipped {
		t.Errorf("ran %d: %+v %+v", ran, rep.Entries[0], rep.Entries[1])
	}
}

// The example suite parses against this build's recipes and runs each of
// them at least once.
func TestExampleNightlySuiteCoversEveryRecipe(t *testing.T) {
	reg := experiments.Registry()
	s, err := Load(filepath.Join("..", "..", "suites", "nightly.yaml"), reg)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, e := range s.Entries {
		have[e.Recipe.Meta().Name] = true
	}
	for _, n := range reg.Names() {
		if !have[n] {
			t.Errorf("suites/nightly.yaml has no entry for recipe %s: add one (with quick parameters) so the nightly job covers it", n)
		}
	}
}
