package main

import (
	"encoding/json"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"testbed/experiments"
	"testbed/experiments/suite"
	"testbed/orchestrator"
	"testbed/results"
)

func writeSuite(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "nightly.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// lineOf is the 1-based line of the first line of text containing s.
func lineOf(t *testing.T, text, s string) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%q not in the suite", s)
	return 0
}

func TestSuiteReportsRegressionAndWritesJUnit(t *testing.T) {
	t.Parallel()
	runs, state := dirs(t)
	text := `name: quick
entries:
  - id: l10g
    recipe: attenuation-sweep
    seed: 5
    set: {links: [l10g], step_db: 1, fine_step_db: 0.25, max_seconds: 0.5}
    expect:
      - {metric: links.l10g.loss_cliff_db.1e-06, min: 8.8, max: 9.8}
      - {metric: links.l10g.max_loss_free_db, max: 5}
      - {metric: links.*.points, min: 5}
  - id: l25g-rs
    recipe: attenuation-sweep
    seed: 6
    set: {links: [l25g-rs], step_db: 1, fine_step_db: 0.25, max_seconds: 0.5}
    expect:
      - {metric: partial, max: 0}
`
	file := writeSuite(t, text)
	junit := filepath.Join(t.TempDir(), "out.xml")
	code, out, errOut := testbedRun(t, "exp", "run", "--suite", file, "--junit", junit, "--runs-dir", runs, "--state-dir", state)
	if code != exitRegression {
		t.Fatalf("exit %d, want %d (regression)\nstdout:\n%s\nstderr:\n%s", code, exitRegression, out, errOut)
	}
	if strings.Contains(errOut, "\x1b[") || strings.Contains(errOut, "\r") {
		t.Errorf("progress redrawn as on a terminal, but stderr is not one:\n%q", errOut)
	}
	// The failing check names its file:line, the value and the bound.
	badLine := lineOf(t, text, "max_loss_free_db")
	re := regexp.MustCompile(`(?m)^  REGRESSION\s+` + regexp.QuoteMeta(file) + `:` + itoa(badLine) + `: links\.l10g\.max_loss_free_db: measured [0-9.]+, above the maximum 5$`)
	if !re.MatchString(out) {
		t.Errorf("no regression line for %s:%d:\n%s", file, badLine, out)
	}
	for _, want := range []string{`(?m)^  PASS +links\.l10g\.loss_cliff_db\.1e-06: measured [0-9.]+, bound \[8\.8, 9\.8\]$`, `(?m)^  PASS +links\.l10g\.points: measured`,
		`(?m)^  PASS +partial: measured false`, `(?m)^l10g  attenuation-sweep, seed 5 \(.*:3\): ok`, `(?m)^l25g-rs  attenuation-sweep, seed 6 \(.*:11\): ok`,
		`(?m)^REGRESSION \(exit 5\)$`, `2 entries \(2 ok\); 4 checks: 3 passed, 1 regressions`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("report lacks %s:\n%s", want, out)
		}
	}
	// One bundle per entry, labelled with the suite and the entry.
	bundles := regexp.MustCompile(`(?m)^  bundle\s+(\S+)$`).FindAllStringSubmatch(out, -1)
	if len(bundles) != 2 {
		t.Fatalf("want 2 bundles in the report, got %d:\n%s", len(bundles), out)
	}
	for i, id := range []string{"l10g", "l25g-rs"} {
		var m results.Manifest
		readJSON(t, filepath.Join(bundles[i][1], "manifest.json"), &m)
		if m.Labels[suite.LabelSuite] != "quick" || m.Labels[suite.LabelEntry] != id || m.Status != results.StatusOK {
			t.Errorf("bundle of %s: labels %v status %s", id, m.Labels, m.Status)
		}
		if want := map[string]uint64{"l10g": 5, "l25g-rs": 6}[id]; m.Seed != want {
			t.Errorf("bundle of %s: seed %d, want %d", id, m.Seed, want)
		}
	}

	var doc suite.JUnitSuites
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("junit: %v\n%s", err, b)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("junit: %d testsuites", len(doc.Suites))
	}
	// A case per entry's run and per check.
	if s := doc.Suites[0]; s.Tests != 6 || s.Fail != 1 || s.Errors != 0 || len(s.Cases) != 6 {
		t.Errorf("junit: tests %d failures %d errors %d cases %d", s.Tests, s.Fail, s.Errors, len(s.Cases))
	}
	var failed []suite.JUnitCase
	for _, c := range doc.Suites[0].Cases {
		if c.Failure != nil {
			failed = append(failed, c)
		}
	}
	if len(failed) != 1 || failed[0].Classname != "quick.l10g" || !strings.Contains(failed[0].Failure.Message, "above the maximum 5") ||
		!strings.Contains(failed[0].Failure.Message, "measured ") {
		t.Errorf("junit failure: %+v", failed)
	}
}

func TestSuiteBaselineTolerance(t *testing.T) {
	t.Parallel()
	runs, state := dirs(t)
	text := `entries:
  - id: sweep
    recipe: attenuation-sweep
    seed: 8
    set: {links: [l25g], step_db: 1, fine_step_db: 0.25, max_seconds: 0.5}
    expect:
      - metric: links.*.loss_cliff_db.1e-06
        abs_tol: 0.2
        worse: lower
`
	file := writeSuite(t, text)
	// Last night: no baseline, so the relative check is skipped.
	code, out, errOut := testbedRun(t, "exp", "run", "--suite", file, "--runs-dir", runs, "--state-dir", state)
	if code != exitOK || !strings.Contains(out, "SKIPPED") || !strings.Contains(out, "no baseline") {
		t.Fatalf("first night: exit %d\n%s\n%s", code, out, errOut)
	}
	// Tonight against last night's bundles: the same seed, the same cliff.
	tonight := filepath.Join(t.TempDir(), "runs")
	code, out, errOut = testbedRun(t, "exp", "run", "--suite", file, "--baseline", runs, "--runs-dir", tonight, "--state-dir", state)
	// The suite keeps its report beside the bundles it judged, with the
	// band each relative check held its value to.
	reps, _ := filepath.Glob(filepath.Join(tonight, "suite-reports", "*.json"))
	if len(reps) != 1 {
		t.Fatalf("suite reports kept in %s: %v, want 1", tonight, reps)
	}
	var kept struct {
		Entries []struct {
			RunID  string `json:"run_id"`
			Checks []struct {
				Metric   string   `json:"metric"`
				Baseline float64  `json:"baseline"`
				Low      *float64 `json:"band_low"`
				High     *float64 `json:"band_high"`
			} `json:"checks"`
		} `json:"entries"`
	}
	readJSON(t, reps[0], &kept)
	banded := false
	for _, e := range kept.Entries {
		for _, c := range e.Checks {
			if c.Metric == "links.l25g.loss_cliff_db.1e-06" && c.Low != nil && c.High != nil && e.RunID != "" {
				banded = *c.Low < c.Baseline && *c.High > c.Baseline && math.Abs(*c.High-*c.Low-0.4) < 1e-9
			}
		}
	}
	if !banded {
		t.Errorf("suite report %s lacks the l25g cliff's band of baseline +- abs_tol 0.2", reps[0])
	}
	if code != exitOK || !regexp.MustCompile(`PASS +links\.l25g\.loss_cliff_db\.1e-06: measured [0-9.]+, baseline [0-9.]+, abs_tol 0\.2`).MatchString(out) || !strings.Contains(out, "newest ok bundle of suite entry sweep") {
		t.Fatalf("against the baseline: exit %d\n%s\n%s", code, out, errOut)
	}
	// A baseline whose cliff lay 1 dB higher: tonight's is worse beyond
	// tolerance.
	all, _ := os.ReadDir(runs)
	var ents []os.DirEntry
	for _, e := range all {
		if e.Name() != "suite-reports" { // the suite's report, kept beside its bundles
			ents = append(ents, e)
		}
	}
	if len(ents) != 1 {
		t.Fatalf("%d bundles in %s", len(ents), runs)
	}
	sumPath := filepath.Join(runs, ents[0].Name(), "summary.json")
	var sum map[string]any
	readJSON(t, sumPath, &sum)
	cliffs := sum["links"].(map[string]any)["l25g"].(map[string]any)["loss_cliff_db"].(map[string]any)
	was := cliffs["1e-06"].(float64)
	cliffs["1e-06"] = was + 1
	b, _ := json.Marshal(sum)
	if err := os.WriteFile(sumPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	third := filepath.Join(t.TempDir(), "runs")
	code, out, errOut = testbedRun(t, "exp", "run", "--suite", file, "--baseline", runs, "--runs-dir", third, "--state-dir", state)
	if code != exitRegression {
		t.Fatalf("against a better baseline: exit %d, want %d\n%s\n%s", code, exitRegression, out, errOut)
	}
	want := "baseline " + strings.TrimSuffix(strings.TrimSuffix(jsonNum(was+1), "0"), ".")
	if !strings.Contains(out, "REGRESSION") || !strings.Contains(out, want) || !strings.Contains(out, "lower is worse") {
		t.Errorf("regression against the baseline not explained (want %q):\n%s", want, out)
	}
}

func jsonNum(f float64) string { b, _ := json.Marshal(f); return string(b) }

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestSuiteInfrastructureFailureKeepsOtherEntries(t *testing.T) {
	t.Parallel()
	lab, inv := startLab(t, 9)
	runs, state := dirs(t)
	// Someone else holds voa2, which only the l100g entry needs.
	d, _ := lab.Inventory().Device("voa2")
	if _, err := orchestrator.NewLeaser(state, time.Hour, nil).Acquire("simlab", "someone-else", "run-x", []orchestrator.LeaseTarget{{Device: "voa2", Address: d.Address}}); err != nil {
		t.Fatal(err)
	}
	entry := func(id, link string) string {
		return `  - id: ` + id + `
    recipe: attenuation-sweep
    set: {links: [` + link + `], step_db: 1, fine_step_db: 0.25, max_seconds: 0.5}
    expect:
      - {metric: links.` + link + `.points, min: 3}
`
	}
	file := writeSuite(t, "name: lab\nentries:\n"+entry("first", "l10g")+entry("blocked", "l100g")+entry("last", "l25g-rs"))
	code, out, errOut := testbedRun(t, "exp", "run", "--suite", file, "--inventory", inv, "--runs-dir", runs, "--state-dir", state, "--output", "json")
	if code != exitInfra {
		t.Fatalf("exit %d, want %d (infrastructure)\n%s\n%s", code, exitInfra, out, errOut)
	}
	var rep struct {
		suite.Report
		Totals   suite.Totals `json:"totals"`
		ExitCode int          `json:"exit_code"`
		Verdict  string       `json:"verdict"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if rep.ExitCode != exitInfra || rep.Verdict != "infrastructure" || len(rep.Entries) != 3 {
		t.Fatalf("report: exit %d verdict %q entries %d", rep.ExitCode, rep.Verdict, len(rep.Entries))
	}
	for i, want := range []string{suite.ClassOK, suite.ClassInfra, suite.ClassOK} {
		e := rep.Entries[i]
		if e.Class != want {
			t.Errorf("entry %s: class %s (%s), want %s", e.ID, e.Class, e.Reason, want)
		}
		if want == suite.ClassOK && (e.Bundle == "" || len(e.Checks) != 1 || e.Checks[0].Outcome != suite.Pass) {
			t.Errorf("entry %s lost its results: %+v", e.ID, e)
		}
	}
	if b := rep.Entries[1]; !strings.Contains(b.Reason, "someone-else") || len(b.Checks) != 1 || b.Checks[0].Outcome != suite.Skipped {
		t.Errorf("blocked entry: %+v", b)
	}
	if rep.Totals.OK != 2 || rep.Totals.Infra != 1 || rep.Totals.Passed != 2 || rep.Totals.Skipped != 1 {
		t.Errorf("totals: %+v", rep.Totals)
	}
}

func TestSuiteMistakesExit2NamingTheLine(t *testing.T) {
	t.Parallel()
	runs, state := dirs(t)
	text := "entries:\n  - recipe: attenuation-sweep\n    expect:\n      - {metric: links.l10g.points, min: 1, max: 0}\n"
	code, _, errOut := testbedRun(t, "exp", "run", "--suite", writeSuite(t, text), "--runs-dir", runs, "--state-dir", state)
	if code != exitBadInput || !regexp.MustCompile(`nightly\.yaml:4: .*min 1 is above max 0`).MatchString(errOut) {
		t.Errorf("bad bounds: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(runs); !os.IsNotExist(err) {
		t.Errorf("a wrong suite ran something")
	}
	// A metric the recipe's summary does not have: the suite is wrong.
	text = "entries:\n  - recipe: attenuation-sweep\n    seed: 1\n    set: {links: [l10g], step_db: 1, fine_step_db: 0.25, max_seconds: 0.5}\n    expect:\n      - {metric: links.l10g.no_such_metric, max: 1}\n"
	file := writeSuite(t, text)
	code, out, errOut := testbedRun(t, "exp", "run", "--suite", file, "--runs-dir", runs, "--state-dir", state)
	if code != exitBadInput || !strings.Contains(out, file+":6: metric links.l10g.no_such_metric matches nothing") {
		t.Errorf("unknown metric: exit %d\n%s\n%s", code, out, errOut)
	}
	// A recipe and --suite together.
	if code, _, errOut := testbedRun(t, "exp", "run", "attenuation-sweep", "--suite", file); code != exitBadInput || !strings.Contains(errOut, "give no recipe") {
		t.Errorf("recipe with --suite: exit %d: %s", code, errOut)
	}
	if code, _, errOut := testbedRun(t, "exp", "run", "attenuation-sweep", "--baseline", runs); code != exitBadInput || !strings.Contains(errOut, "go with --suite") {
		t.Errorf("--baseline without --suite: exit %d: %s", code, errOut)
	}
}

// The example suite parses against this build's recipes, and covers each.
func TestExampleSuiteCoversEveryRecipe(t *testing.T) {
	s, err := suite.Load(filepath.Join("..", "..", "suites", "nightly.yaml"), experiments.Registry())
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, e := range s.Entries {
		covered[e.Recipe.Meta().Name] = true
	}
	for _, n := range experiments.Registry().Names() {
		if !covered[n] {
			t.Errorf("suites/nightly.yaml has no entry for recipe %s", n)
		}
	}
}

func TestInterruptedSuiteReportsWhatRan(t *testing.T) {
	t.Parallel()
	lab, inv := startLab(t, 23)
	runs, state := dirs(t)
	lab.Faults("voa1").SetDelay(50 * time.Millisecond)
	entry := func(id string) string {
		return "  - id: " + id + "\n    recipe: attenuation-sweep\n    set: {links: [l10g], step_db: 1, fine_step_db: 0.25, max_seconds: 0.5}\n" +
			"    expect:\n      - {metric: partial, max: 0}\n"
	}
	file := writeSuite(t, "entries:\n"+entry("first")+entry("second"))
	junit := filepath.Join(t.TempDir(), "out.xml")
	r := startRun(t, "exp", "run", "--suite", file, "--inventory", inv, "--runs-dir", runs, "--state-dir", state, "--junit", junit)
	seen := 0
	r.each(func(line string) bool {
		if measured(line) {
			if seen++; seen == 2 {
				r.cmd.Process.Signal(syscall.SIGINT)
			}
		}
		return true
	})
	r.cmd.Wait()
	out := r.stdout.String()
	if code := r.cmd.ProcessState.ExitCode(); code != exitAborted {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitAborted, out, r.log.String())
	}
	for _, want := range []string{`(?m)^first  attenuation-sweep, seed \d+ \(.*:2\): ABORTED`, `(?m)^  bundle +\S+`, `(?m)^second  attenuation-sweep \(.*:7\): NOT RUN$`,
		`(?m)^  SKIPPED +.*not evaluated: the run ended aborted`, `(?m)^ABORTED \(exit 3\)$`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("report lacks %s:\n%s", want, out)
		}
	}
	var doc suite.JUnitSuites
	b, err := os.ReadFile(junit)
	if err != nil || xml.Unmarshal(b, &doc) != nil || len(doc.Suites) != 1 || doc.Suites[0].Errors != 1 || doc.Suites[0].Skipped != 3 {
		t.Errorf("junit after an interrupt (%v):\n%s", err, b)
	}
	assertRested(t, lab)
}
