package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"testbed/inventory"
	"testbed/results"
)

func TestLaneSegmentsMergeLanesThatShareADevice(t *testing.T) {
	st := func(lane string, devs ...string) *Step { return &Step{Name: lane, Lane: lane, Devices: devs} }
	steps := []*Step{
		st("a", "sw1", "voa1"), st("b", "sw3"), st("c", "sw5", "voa1"), st("a", "sw2"), st("d", "sw4"), st("e", "sw4", "sw5"),
		{Name: "alone", Devices: []string{"sw1"}},
		st("a", "sw1"), st("b", "sw3"),
	}
	segs := laneSegments(steps)
	if len(segs) != 3 {
		t.Fatalf("%d segments, want 3 (the lanes, the step without one, the lanes): %+v", len(segs), segs)
	}
	// a and c share voa1, c and e share sw5, e and d share sw4: one group.
	want := []laneGroup{
		{lanes: []string{"a", "c", "d", "e"}, steps: []int{0, 2, 3, 4, 5}, shared: []string{"sw4", "sw5", "voa1"}},
		{lanes: []string{"b"}, steps: []int{1}},
	}
	if !reflect.DeepEqual(segs[0].groups, want) {
		t.Errorf("groups %+v, want %+v", segs[0].groups, want)
	}
	if g := segs[1].groups; len(g) != 1 || !reflect.DeepEqual(g[0].steps, []int{6}) {
		t.Errorf("the step without a lane: %+v", g)
	}
	if g := segs[2].groups; len(g) != 2 || !reflect.DeepEqual(g[0].steps, []int{7}) || !reflect.DeepEqual(g[1].steps, []int{8}) {
		t.Errorf("after it, a and b run at once again: %+v", g)
	}
	if concurrent(laneSegments(steps[:1])) || !concurrent(segs) {
		t.Error("concurrent: one lane is not, two are")
	}
}

// laneRecipe is lanes of steps that touch no device: each step writes a
// row naming itself and pushes an undo; hook runs inside each.
type laneRecipe struct {
	lanes []string
	per   int
	hook  func(ctx context.Context, lane string, k int) error
}

func (r *laneRecipe) Meta() Meta {
	return Meta{Name: "lanes-probe", Version: "1.0.0", Summary: "steps in lanes"}
}

func (r *laneRecipe) Plan(pc *PlanContext) (*Plan, error) {
	var mu sync.Mutex
	var done []string
	p := &Plan{Tables: []results.Table{{Name: "rows", Fields: []results.Field{{Name: "step", Type: "string"}, {Name: "n", Type: "integer"}}}},
		Summary: func(bool) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			return map[string]int{"steps": len(done)}, nil
		}}
	for _, l := range r.lanes {
		for k := 1; k <= r.per; k++ {
			name := fmt.Sprintf("%s%d", l, k)
			p.Steps = append(p.Steps, &Step{Name: name, Action: "probe", Lane: l, Run: func(ctx context.Context, rc *RunContext) error {
				rc.PushUndo("undo "+name, "", func(context.Context) error { return nil })
				tw, err := rc.Table("rows")
				if err != nil {
					return err
				}
				for n := range 3 {
					if err := tw.Write(name, n); err != nil {
						return err
					}
				}
				if r.hook != nil {
					if err := r.hook(ctx, l, k); err != nil {
						return err
					}
				}
				mu.Lock()
				done = append(done, name)
				mu.Unlock()
				return nil
			}})
		}
	}
	return p, nil
}

// runLanes runs r with at most par lanes at once; abort, if not nil, is
// given the run's abort.
func runLaneRecipe(t *testing.T, r Recipe, par int, abort *func()) (*RunResult, []results.Event) {
	t.Helper()
	inv, err := inventory.Parse("lab.yaml", []byte("version: 1\nname: t\ndevices: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := ResolveParams(nil, "", nil, nil)
	dir := t.TempDir()
	var mu sync.Mutex
	var evs []results.Event
	eng := &Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state"), Observe: func(e results.Event) {
		mu.Lock()
		evs = append(evs, e)
		mu.Unlock()
	}}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	if abort != nil {
		*abort = func() { cancel(ErrAborted) }
	}
	res, err := eng.Run(ctx, RunRequest{Recipe: r, Params: p, Lab: inv, Parallel: par})
	if err != nil {
		t.Fatal(err)
	}
	return res, evs
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Two lanes run at once (each one's first step waits until the other's
// has begun, which a serial run never lets happen), and the table and
// the summary come out byte for byte as a serial run writes them.
func TestLanesRunAtOnceAndWriteWhatASerialRunWrites(t *testing.T) {
	serial, _ := runLaneRecipe(t, &laneRecipe{lanes: []string{"a", "b"}, per: 3}, 1, nil)
	if serial.Status != results.StatusOK {
		t.Fatalf("serial run %s: %s", serial.Status, serial.Reason)
	}
	begun := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	other := map[string]string{"a": "b", "b": "a"}
	hook := func(ctx context.Context, lane string, k int) error {
		if k != 1 {
			return nil
		}
		close(begun[lane])
		select {
		case <-begun[other[lane]]:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(time.Minute): // a hang guard, not a measure
			return fmt.Errorf("lane %s ran alone: lane %s's first step never began beside it", lane, other[lane])
		}
	}
	par, evs := runLaneRecipe(t, &laneRecipe{lanes: []string{"a", "b"}, per: 3, hook: hook}, 2, nil)
	if par.Status != results.StatusOK {
		t.Fatalf("parallel run %s: %s", par.Status, par.Reason)
	}
	for _, f := range []string{"data/rows.csv", "summary.json"} {
		if s, p := readFile(t, serial.Dir, f), readFile(t, par.Dir, f); s != p {
			t.Errorf("%s differs:\nserial:\n%s\nparallel:\n%s", f, s, p)
		}
	}
	if !strings.HasPrefix(readFile(t, par.Dir, "data/rows.csv"), "step,n\na1,0\na1,1\na1,2\na2,0\n") {
		t.Errorf("rows not in plan order:\n%s", readFile(t, par.Dir, "data/rows.csv"))
	}
	if par.StepsDone != 6 || par.StepsTotal != 6 {
		t.Errorf("steps done %d of %d, want 6 of 6", par.StepsDone, par.StepsTotal)
	}
	var lanes, cleanups int
	for _, e := range evs {
		switch e.Type {
		case "lanes":
			lanes++
			if !strings.Contains(e.Message, "2 lanes, 2 at once at most") {
				t.Errorf("lanes event: %q", e.Message)
			}
		case "cleanup":
			cleanups++
		}
	}
	if lanes != 1 || cleanups != 6 {
		t.Errorf("%d lanes events (want 1), %d undos run (want 6, one per step)", lanes, cleanups)
	}
}

// A step that fails stops the other lanes at their next safe point: their
// step under way sees the run's context end, and no later step starts;
// what ran is in the table, in plan order, and the reason names the step
// that failed.
func TestALaneThatFailsStopsTheOthers(t *testing.T) {
	bBegun := make(chan struct{})
	hook := func(ctx context.Context, lane string, k int) error {
		switch {
		case lane == "b" && k == 1:
			close(bBegun)
			<-ctx.Done() // stopped by a's failure
			return context.Cause(ctx)
		case lane == "a" && k == 2:
			<-bBegun
			return errors.New("the probe broke")
		}
		return nil
	}
	res, evs := runLaneRecipe(t, &laneRecipe{lanes: []string{"a", "b"}, per: 3, hook: hook}, 2, nil)
	if res.Status != results.StatusFailed || !strings.Contains(res.Reason, "step 2/6 (a2): the probe broke") {
		t.Fatalf("status %s (%s), want failed at a2", res.Status, res.Reason)
	}
	if res.StepsDone != 1 {
		t.Errorf("steps done %d, want 1 (a1)", res.StepsDone)
	}
	want := "step,n\na1,0\na1,1\na1,2\na2,0\na2,1\na2,2\nb1,0\nb1,1\nb1,2\n"
	if got := readFile(t, res.Dir, "data/rows.csv"); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	errs := map[string]string{}
	for _, e := range evs {
		if e.Type == "step.error" {
			errs[e.Step] = e.Message
		}
		if e.Type == "step.start" && (e.Step == "a3" || e.Step == "b2") {
			t.Errorf("%s started after a2 failed", e.Step)
		}
	}
	if !strings.Contains(errs["b1"], "stopped: step 2/6 (a2) failed") || len(errs) != 2 {
		t.Errorf("step errors %v, want a2's and b1's (stopped by a2)", errs)
	}
}

// An abort stops every lane; the bundle says which steps were under way
// and every step's undo runs.
func TestAnAbortStopsEveryLane(t *testing.T) {
	var abort func()
	var wg sync.WaitGroup
	wg.Add(2)
	hook := func(ctx context.Context, lane string, k int) error {
		if k != 2 {
			return nil
		}
		wg.Done()
		if lane == "a" {
			wg.Wait()
			abort()
		}
		<-ctx.Done()
		return context.Cause(ctx)
	}
	res, evs := runLaneRecipe(t, &laneRecipe{lanes: []string{"a", "b"}, per: 3, hook: hook}, 2, &abort)
	if res.Status != results.StatusAborted || !strings.Contains(res.Reason, "during step 2/6 (a2), step 5/6 (b2)") {
		t.Fatalf("status %s (%s), want aborted during a2 and b2", res.Status, res.Reason)
	}
	var cleanups int
	for _, e := range evs {
		if e.Type == "cleanup" {
			cleanups++
		}
	}
	if res.StepsDone != 2 || cleanups != 4 {
		t.Errorf("steps done %d (want 2: a1, b1), undos run %d (want 4)", res.StepsDone, cleanups)
	}
	rd, err := results.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	m := rd.Manifest
	if m.Status != results.StatusAborted || m.Progress == nil || m.Progress.StepsDone != 2 {
		t.Errorf("manifest: status %s, progress %+v", m.Status, m.Progress)
	}
}
