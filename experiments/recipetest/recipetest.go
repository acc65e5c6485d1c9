// Package recipetest runs recipes the way their tests need: through the
// engine, against a simulated lab started in the test's process over the
// real drivers and transports, into a bundle under the test's temporary
// directory. Only tests import it.
package recipetest

import (
	"compress/gzip"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"testbed/orchestrator"
	"testbed/results"
	"testbed/simlab"
)

// StartLab starts the default simulated lab, closed when the test ends.
func StartLab(t testing.TB, seed uint64) *simlab.Lab {
	t.Helper()
	lab, err := simlab.StartDefault(simlab.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	return lab
}

// StartBench starts a built-in simulated bench (simlab/benches), closed
// when the test ends.
func StartBench(t testing.TB, name string, seed uint64) *simlab.Lab {
	t.Helper()
	lab, err := simlab.StartBench(name, simlab.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	return lab
}

// Run runs r with the parameters sets (name=value) against lab, decodes
// summary.json into summary (when not nil) and checks the bundle
// verifies. observe, when not nil, sees every event and gets a func that
// aborts the run as Ctrl-C would.
func Run(t testing.TB, lab *simlab.Lab, r orchestrator.Recipe, seed uint64, summary any, observe func(e results.Event, abort func()), sets ...string) *orchestrator.RunResult {
	t.Helper()
	return RunParallel(t, lab, r, seed, 0, summary, observe, sets...)
}

// RunParallel is Run with at most parallel of the plan's lanes at once
// (orchestrator.RunRequest.Parallel: 0 for the number of CPUs, 1 for
// every step in plan order).
func RunParallel(t testing.TB, lab *simlab.Lab, r orchestrator.Recipe, seed uint64, parallel int, summary any, observe func(e results.Event, abort func()), sets ...string) *orchestrator.RunResult {
	t.Helper()
	params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, sets)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	eng := &orchestrator.Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state")}
	if observe != nil {
		eng.Observe = func(e results.Event) { observe(e, func() { cancel(orchestrator.ErrAborted) }) }
	}
	res, err := eng.Run(ctx, orchestrator.RunRequest{Recipe: r, Params: params, Lab: lab.Inventory(), Simulated: true, Seed: seed, Parallel: parallel})
	if err != nil {
		t.Fatal(err)
	}
	if summary != nil {
		b, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
		if err != nil {
			t.Fatalf("run %s (%s): %v", res.Status, res.Reason, err)
		}
		if err := json.Unmarshal(b, summary); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err := results.Verify(res.Dir); err != nil || !rep.OK {
		t.Errorf("bundle does not verify: %v %+v", err, rep)
	}
	CheckHeadlines(t, r, res)
	return res
}

// CheckHeadlines checks that a finished run's summary has a number for
// at least one of the recipe's headline patterns (what the end of a run
// and `results list` show), when the run ended ok.
func CheckHeadlines(t testing.TB, r orchestrator.Recipe, res *orchestrator.RunResult) {
	t.Helper()
	pats := r.Meta().Headlines
	if res.Status != results.StatusOK || len(pats) == 0 {
		return
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
	if err != nil {
		t.Errorf("headlines: %v", err)
		return
	}
	ms, err := results.FlattenSummary(b)
	if err != nil {
		t.Errorf("headlines: %v", err)
		return
	}
	for _, m := range ms {
		if _, ok := m.Value.(float64); !ok {
			continue
		}
		for _, p := range pats {
			if orchestrator.MatchMetric(p, m.Path) {
				return
			}
		}
	}
	t.Errorf("%s: no number of summary.json matches its headlines %v", r.Meta().Name, pats)
}

// ReadTable reads data/<name>.csv (or .csv.gz) of a bundle, one map per
// row by column name.
func ReadTable(t testing.TB, dir, name string) []map[string]string {
	t.Helper()
	p := filepath.Join(dir, "data", name+".csv")
	if _, err := os.Stat(p); err != nil {
		p += ".gz"
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var in io.Reader = f
	if strings.HasSuffix(p, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		in = zr
	}
	recs, err := csv.NewReader(in).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]string
	for _, rec := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = rec[i]
		}
		rows = append(rows, m)
	}
	return rows
}
