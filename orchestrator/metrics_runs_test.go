package orchestrator

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"testbed/inventory"
	"testbed/results"
)

// runProbe runs a stepRecipe of n steps on an empty lab, publishing into
// reg (nil: the run keeps its series to itself).
func runProbe(t *testing.T, reg *Metrics, n int, hook func(ctx context.Context, rc *RunContext, i int) error) *RunResult {
	t.Helper()
	inv, err := inventory.Parse("lab.yaml", []byte("version: 1\nname: t\ndevices: {}\n"))
	if err != nil {
		t.Error(err)
		return nil
	}
	p, _ := ResolveParams(nil, "", nil, nil)
	dir := t.TempDir()
	eng := &Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state"), Metrics: reg}
	res, err := eng.Run(context.Background(), RunRequest{Recipe: &stepRecipe{n: n, hook: hook}, Params: p, Lab: inv})
	if err != nil || res.Status != results.StatusOK {
		t.Errorf("run: %v %+v", err, res)
		return nil
	}
	return res
}

// Runs published into different registries, at the same time, in one
// process, never see each other's series; a run published nowhere shows
// up nowhere.
func TestRunsInOneProcessKeepTheirSeriesApart(t *testing.T) {
	regs := []*Metrics{NewMetrics(), NewMetrics(), nil}
	ids := make([]string, len(regs))
	// Every run waits in its second step until all runs have counted
	// their frames, so their registries are live at the same time.
	var counted sync.WaitGroup
	counted.Add(len(regs))
	var wg sync.WaitGroup
	for k, reg := range regs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := runProbe(t, reg, 2, func(ctx context.Context, rc *RunContext, i int) error {
				if i == 1 {
					c, err := rc.Counter("testbed_probe_frames_total", "Frames the probe counted.", "frames")
					if err != nil {
						counted.Done()
						return err
					}
					c.Add(float64(100 * (k + 1)))
					counted.Done()
					counted.Wait()
				}
				return nil
			})
			if res != nil {
				ids[k] = res.RunID
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for k, reg := range regs[:2] {
		text := exposition(t, reg)
		promtoolCheck(t, []byte(text))
		for j, id := range ids {
			has := strings.Contains(text, `run_id="`+id+`"`)
			if has != (j == k) {
				t.Errorf("registry %d holds run %d's series: %v\n%s", k, j, has, text)
			}
		}
		want := fmt.Sprintf(`testbed_probe_frames_total{recipe="metrics-probe",run_id="%s"} %d`, ids[k], 100*(k+1))
		if !strings.Contains(text, want) {
			t.Errorf("registry %d lacks %q:\n%s", k, want, text)
		}
		if v, ok := reg.Value("testbed_run_progress_ratio", "metrics-probe", ids[k]); !ok || v != 1 {
			t.Errorf("registry %d: progress of its run %v %v", k, v, ok)
		}
	}
}

// Runs published into one registry, one after the other (a suite), are
// served together, each in its own series; a family of one name means the
// same thing in all of them.
func TestRunsPublishedTogetherAgreeOnFamilies(t *testing.T) {
	reg := NewMetrics()
	first := runProbe(t, reg, 1, func(ctx context.Context, rc *RunContext, i int) error {
		g, err := rc.Gauge("testbed_probe_depth_packets", "Depth the first run saw.", "packets", "port")
		if err != nil {
			return err
		}
		return g.Set(5, "p1")
	})
	var refused error
	second := runProbe(t, reg, 1, func(ctx context.Context, rc *RunContext, i int) error {
		// Another help text is taken as the same family; the first
		// run's help is what a scrape shows.
		g, err := rc.Gauge("testbed_probe_depth_packets", "Depth the second run saw.", "packets", "port")
		if err != nil {
			return err
		}
		if err := g.Set(9, "p1"); err != nil {
			return err
		}
		_, refused = rc.Histogram("testbed_probe_depth_packets", "A histogram now.", "packets", []float64{1, 10}, "port")
		return nil
	})
	if first == nil || second == nil {
		return
	}
	if refused == nil || !strings.Contains(refused.Error(), "already registered as a gauge") {
		t.Errorf("the same name as another kind in a later run: %v", refused)
	}
	if _, err := reg.Gather(); err != nil {
		t.Errorf("gather: %v", err)
	}
	text := exposition(t, reg)
	promtoolCheck(t, []byte(text))
	for _, want := range []string{
		"# HELP testbed_probe_depth_packets Depth the first run saw.\n# TYPE testbed_probe_depth_packets gauge\n",
		fmt.Sprintf(`testbed_probe_depth_packets{port="p1",recipe="metrics-probe",run_id="%s"} 5`, first.RunID),
		fmt.Sprintf(`testbed_probe_depth_packets{port="p1",recipe="metrics-probe",run_id="%s"} 9`, second.RunID),
		fmt.Sprintf(`testbed_run_state{recipe="metrics-probe",run_id="%s",state="ok"} 1`, first.RunID),
		fmt.Sprintf(`testbed_run_state{recipe="metrics-probe",run_id="%s",state="ok"} 1`, second.RunID),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("scrape lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "# TYPE testbed_run_state "); n != 1 {
		t.Errorf("testbed_run_state described %d times:\n%s", n, text)
	}
}
