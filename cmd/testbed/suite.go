package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"testbed/experiments"
	"testbed/experiments/suite"
	"testbed/orchestrator"
)

// exitRegression: every run of the suite ran, and a metric is outside its
// bound or worse than the baseline beyond tolerance.
const exitRegression = 5

const suiteExitHelp = `Suite exit codes: 0 every expectation holds; 5 a regression (a metric
outside its bound, or worse than the baseline beyond tolerance); 1 a run
failed; 4 infrastructure (a device unreachable, a lease refused: the lab
broke, not the code); 2 the suite is wrong (a file:line is named); 3
interrupted, the lab restored; 6 the lab NOT restored after a run, however
it ended (the bundle lists what). When several apply the first of 6, 3, 2, 4, 1, 5 wins; the report
and the JUnit file list every entry and check either way.`

// suiteOptions are the suite flags of exp run.
type suiteOptions struct {
	file     string
	baseline string
	junit    string
}

func (o *suiteOptions) addFlags(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&o.file, "suite", "", "run the regression suite in this YAML file instead of one recipe")
	f.StringVar(&o.baseline, "baseline", "", "bundle (directory or .tar.gz), or directory of bundles, the suite's tolerances compare with")
	f.StringVar(&o.junit, "junit", "", "write the suite's results as JUnit XML to this file")
}

// suiteExitCode is the exit code of a suite run; see suiteExitHelp.
func suiteExitCode(rep *suite.Report) int {
	t := rep.Totals()
	switch {
	case t.NotRestored > 0:
		return exitNotRestored
	case t.Aborted > 0 || t.NotRun > 0:
		return exitAborted
	case t.Input > 0 || t.Invalid > 0:
		return exitBadInput
	case t.Infra > 0:
		return exitInfra
	case t.Failed > 0:
		return exitFailed
	case t.Regressions > 0:
		return exitRegression
	}
	return exitOK
}

func verdict(code int) string {
	switch code {
	case exitOK:
		return "ok"
	case exitRegression:
		return "regression"
	case exitFailed:
		return "run failed"
	case exitInfra:
		return "infrastructure"
	case exitBadInput:
		return "suite is wrong"
	case exitAborted:
		return "aborted"
	case exitNotRestored:
		return "aborted, lab NOT restored"
	}
	return fmt.Sprintf("exit %d", code)
}

// expSuite runs a suite: every entry through the same path as exp run,
// each into its own bundle labelled with the suite and the entry, then its
// checks; a text report as entries finish (or JSON at the end), JUnit XML,
// and the exit code.
func (a *app) expSuite(parent context.Context, o suiteOptions, obs *liveMetrics) error {
	s, bs, err := a.loadSuite(o)
	if err != nil {
		return err
	}
	runCtx, cleanupCtx, stop := a.interruptible(parent)
	defer stop()
	sr := &suiteRun{a: a, s: s, parent: parent, cleanupCtx: cleanupCtx, inv: a.v.GetString("inventory"), obs: obs, seeds: map[string]uint64{}}
	if !a.json() {
		fmt.Fprintf(a.stdout, "suite %s (%s): %d entries", s.Name, s.Path, len(s.Entries))
		if bs != nil {
			fmt.Fprintf(a.stdout, ", baseline %s", bs.Root)
		}
		fmt.Fprintln(a.stdout)
	}
	rep := s.Run(runCtx, sr.run, bs, sr.onEntry)
	code := suiteExitCode(rep)
	if code == exitAborted && sr.notRestored {
		code = exitNotRestored
	}
	return a.reportSuite(o, rep, code, sr.pushErrs)
}

// loadSuite reads the suite and its baselines, and checks that the JUnit
// report can be written: it fails now, not after an hour of lab time.
func (a *app) loadSuite(o suiteOptions) (*suite.Suite, *suite.Baselines, error) {
	s, err := suite.Load(o.file, experiments.Registry())
	if err != nil {
		return nil, nil, &exitError{code: exitBadInput, err: err}
	}
	var bs *suite.Baselines
	if o.baseline != "" {
		if bs, err = suite.LoadBaselines(o.baseline); err != nil {
			return nil, nil, &exitError{code: exitBadInput, err: err}
		}
		for _, u := range bs.Unreadable {
			fmt.Fprintf(a.stderr, "testbed: baseline: skipped %s\n", u)
		}
	}
	if o.junit != "" {
		if fi, err := os.Stat(filepath.Dir(o.junit)); err != nil || !fi.IsDir() {
			return nil, nil, &exitError{code: exitBadInput, err: fmt.Errorf("--junit %s: no directory %s", o.junit, filepath.Dir(o.junit))}
		}
	}
	return s, bs, nil
}

// suiteRun runs a suite's entries as exp run does and follows them: the
// seed each ran with, whether one left the lab unrestored, and the
// metrics pushes that failed.
type suiteRun struct {
	a          *app
	s          *suite.Suite
	parent     context.Context
	cleanupCtx context.Context
	inv        string
	obs        *liveMetrics

	mu          sync.Mutex
	seeds       map[string]uint64
	notRestored bool
	pushErrs    []string
}

// run runs one entry into its own bundle, labelled with the suite and
// the entry.
func (sr *suiteRun) run(ctx context.Context, e *suite.Entry) (*orchestrator.RunResult, error) {
	seed := randomSeed()
	if e.Seed != nil {
		seed = *e.Seed
	}
	sr.mu.Lock()
	sr.seeds[e.ID] = seed
	sr.mu.Unlock()
	fmt.Fprintf(sr.a.stderr, "== %s: %s (%s)\n", e.ID, e.Recipe.Meta().Name, e.Pos)
	res, err := sr.a.runRecipe(ctx, sr.cleanupCtx, runSpec{recipe: e.Recipe, params: e.Params, seed: seed, inventory: sr.inv, bench: e.Bench, prefix: e.ID,
		labels: map[string]string{suite.LabelSuite: sr.s.Name, suite.LabelEntry: e.ID}}, sr.obs)
	if res != nil && runExitCode(res) == exitNotRestored {
		sr.mu.Lock()
		sr.notRestored = true
		sr.mu.Unlock()
	}
	return res, err
}

// onEntry records an entry's seed in its result, pushes its metrics and
// prints its block of the text report.
func (sr *suiteRun) onEntry(er *suite.EntryResult) {
	sr.mu.Lock()
	if sd, ok := sr.seeds[er.ID]; ok && er.Seed == nil {
		er.Seed = &sd
	}
	sr.mu.Unlock()
	if err := sr.obs.push(sr.parent, er.Bundle, pushGroup{suite: sr.s.Name, entry: er.ID}); err != nil {
		fmt.Fprintf(sr.a.stderr, "testbed: %v\n", err)
		sr.pushErrs = append(sr.pushErrs, fmt.Sprintf("entry %s: %v", er.ID, err))
	}
	if !sr.a.json() {
		printEntry(sr.a.stdout, er)
	}
}

// reportSuite writes the JUnit report, keeps the suite's report beside
// its bundles, prints the totals (or the JSON report) and exits with the
// suite's code (an infrastructure failure when a report could not be
// written or pushed).
func (a *app) reportSuite(o suiteOptions, rep *suite.Report, code int, pushErrs []string) error {
	var junitErr error
	if o.junit != "" {
		junitErr = writeJUnit(o.junit, rep)
		if junitErr != nil {
			fmt.Fprintf(a.stderr, "testbed: %v\n", junitErr)
		}
	}
	if (junitErr != nil || len(pushErrs) > 0) && code == exitOK {
		code = exitInfra
	}
	out := struct {
		*suite.Report
		Totals   suite.Totals `json:"totals"`
		ExitCode int          `json:"exit_code"`
		Verdict  string       `json:"verdict"`
		JUnit    string       `json:"junit,omitempty"`
		Problems []string     `json:"problems,omitempty"`
	}{Report: rep, Totals: rep.Totals(), ExitCode: code, Verdict: verdict(code), JUnit: o.junit, Problems: pushErrs}
	if junitErr != nil {
		out.Problems = append(out.Problems, junitErr.Error())
	}
	// The report is kept beside the bundles it judged: the bundles were
	// sealed before their checks ran, and testbed serve's trends mark the
	// regressions where this report marked them.
	if err := saveSuiteReport(a.v.GetString("runs_dir"), rep, out); err != nil {
		fmt.Fprintf(a.stderr, "testbed: %v\n", err)
	}
	if a.json() {
		if err := a.printJSON(out); err != nil {
			return err
		}
	} else {
		printTotals(a.stdout, rep, code)
		if o.junit != "" && junitErr == nil {
			fmt.Fprintf(a.stdout, "junit: %s\n", o.junit)
		}
	}
	if code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

// writeJUnit writes the report to a temporary file beside path and renames
// it, so a CI reader never sees half a file.
func writeJUnit(path string, rep *suite.Report) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".junit-*.xml")
	if err != nil {
		return fmt.Errorf("junit %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	werr := rep.WriteJUnit(f)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("junit %s: %w", path, err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return fmt.Errorf("junit %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("junit %s: %w", path, err)
	}
	return nil
}

var outcomeWord = map[string]string{
	suite.Pass:       "PASS",
	suite.Regression: "REGRESSION",
	suite.Skipped:    "SKIPPED",
	suite.Invalid:    "ERROR",
}

var classWord = map[string]string{
	suite.ClassOK:      "ok",
	suite.ClassFailed:  "RUN FAILED",
	suite.ClassInfra:   "INFRASTRUCTURE FAILURE",
	suite.ClassAborted: "ABORTED",
	suite.ClassInput:   "BAD INPUT",
	suite.ClassNotRun:  "NOT RUN",
}

// printEntry writes one entry's block of the text report: how its run
// ended, its bundle and baseline, and one line per check.
func printEntry(w io.Writer, er *suite.EntryResult) {
	seed := ""
	if er.Seed != nil {
		seed = fmt.Sprintf(", seed %d", *er.Seed)
	}
	fmt.Fprintf(w, "\n%s  %s%s (%s): %s", er.ID, er.Recipe, seed, er.Where, classWord[er.Class])
	if er.Class != suite.ClassNotRun {
		fmt.Fprintf(w, " in %.1fs", er.Seconds)
	}
	fmt.Fprintln(w)
	if er.Class != suite.ClassOK && er.Reason != "" {
		fmt.Fprintf(w, "  reason    %s\n", er.Reason)
	}
	if er.Bundle != "" {
		fmt.Fprintf(w, "  bundle    %s\n", er.Bundle)
	}
	switch {
	case er.Baseline != "":
		fmt.Fprintf(w, "  baseline  %s (%s)\n", er.Baseline, er.BaselineHow)
	case er.BaselineHow != "" && hasRelative(er):
		fmt.Fprintf(w, "  baseline  none: %s\n", er.BaselineHow)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	checks := er.Checks
	for len(checks) > 0 {
		c := checks[0]
		n, why := sameSkip(checks)
		if er.Baseline != "" {
			// The entry's baseline line names it once.
			c.Message = strings.ReplaceAll(c.Message, " ("+er.Baseline+")", "")
		}
		if n > 1 {
			fmt.Fprintf(tw, "  %s\t%s: %s: %d metrics not compared: %s\n", outcomeWord[c.Outcome], c.Where, c.Pattern, n, oneLine(why))
		} else {
			n = 1
			fmt.Fprintf(tw, "  %s\t%s\n", outcomeWord[c.Outcome], oneLine(c.Message))
		}
		checks = checks[n:]
	}
	tw.Flush()
}

// sameSkip counts the checks at the head of cs that one expectation
// skipped for one reason (no baseline, say), so they print as one line.
func sameSkip(cs []suite.Check) (int, string) {
	why := func(c suite.Check) string {
		if c.Outcome != suite.Skipped || c.Metric == "" {
			return ""
		}
		_, rest, ok := strings.Cut(c.Message, c.Metric+": not compared: ")
		if !ok {
			return ""
		}
		return rest
	}
	first := why(cs[0])
	if first == "" {
		return 0, ""
	}
	n := 1
	for n < len(cs) && cs[n].Where == cs[0].Where && why(cs[n]) == first {
		n++
	}
	return n, first
}

func hasRelative(er *suite.EntryResult) bool {
	for _, c := range er.Checks {
		if c.Expect != nil && c.Expect.Relative() {
			return true
		}
	}
	return false
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// printTotals writes the report's last lines: counts and the verdict.
func printTotals(w io.Writer, rep *suite.Report, code int) {
	t := rep.Totals()
	var runs []string
	for _, c := range []struct {
		n    int
		what string
	}{{t.OK, "ok"}, {t.Failed, "failed"}, {t.Infra, "infrastructure"}, {t.Input, "bad input"}, {t.Aborted, "aborted"}, {t.NotRun, "not run"}} {
		if c.n > 0 {
			runs = append(runs, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	fmt.Fprintf(w, "\nsuite %s: %d entries (%s); %d checks: %d passed, %d regressions, %d skipped, %d errors; %.1fs\n",
		rep.Suite, t.Entries, strings.Join(runs, ", "), t.Checks, t.Passed, t.Regressions, t.Skipped, t.Invalid, rep.Seconds)
	fmt.Fprintf(w, "%s (exit %d)\n", strings.ToUpper(verdict(code)), code)
}

// saveSuiteReport writes a suite run's report, as --output json prints
// it, to <runs>/suite-reports/<started>-<suite>.json (written whole, then
// renamed into place).
func saveSuiteReport(runsDir string, rep *suite.Report, v any) error {
	dir := filepath.Join(runsDir, "suite-reports")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("suite report: %w", err)
	}
	name := rep.Started.UTC().Format("20060102T150405.000Z") + "-" + slugName(rep.Suite) + ".json"
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("suite report: %w", err)
	}
	f, err := os.CreateTemp(dir, ".report-*.json")
	if err != nil {
		return fmt.Errorf("suite report: %w", err)
	}
	_, werr := f.Write(append(data, '\n'))
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("suite report %s: %w", filepath.Join(dir, name), err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("suite report %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

// slugName is s in lower case with runs of other characters as one '-'.
func slugName(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.TrimSuffix(b.String(), "-")
	if out == "" {
		return "suite"
	}
	return out
}
