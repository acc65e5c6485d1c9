package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"testbed/results"
)

// A plan's lanes (Step.Lane) are sequences of steps that do not depend on
// each other: the links of a sweep, each with its own switches and VOA.
// The engine runs them at once, up to RunRequest.Parallel of them, and
// keeps what the run writes the same as a serial run's: every step
// writes its tables' rows through held writers (results.TableWriter.Hold)
// whose rows are committed in plan order, however the steps interleaved
// in time; the undo stack, the journals and the events are the run's
// (they were always safe for the steps' own goroutines). A device is
// driven by one step at a time: lanes that touch a device in common are
// merged into one, which runs its steps in plan order.

// laneGroup is steps (indices into the plan) that run one after another:
// one lane, or lanes merged because they share a device.
type laneGroup struct {
	lanes  []string // in the order of their first step
	steps  []int
	shared []string // the devices that made the merge, sorted
}

// laneSegment is steps that run at once as groups: a maximal run of
// consecutive steps with a lane, or one step without a lane (a group of
// its own).
type laneSegment struct {
	steps  []int // in plan order
	groups []laneGroup
}

// laneSegments splits a plan's steps into segments.
func laneSegments(steps []*Step) []laneSegment {
	var segs []laneSegment
	for i := 0; i < len(steps); {
		if steps[i].Lane == "" {
			segs = append(segs, laneSegment{steps: []int{i}, groups: []laneGroup{{steps: []int{i}}}})
			i++
			continue
		}
		j := i
		for j < len(steps) && steps[j].Lane != "" {
			j++
		}
		segs = append(segs, laneSegmentOf(steps, i, j))
		i = j
	}
	return segs
}

// laneSegmentOf groups steps[from:to] (every one with a lane): lanes that
// share a device, directly or through another lane, are one group.
func laneSegmentOf(steps []*Step, from, to int) laneSegment {
	var order []string            // lanes by first step
	parent := map[string]string{} // union-find over lane names
	var find func(string) string
	find = func(l string) string {
		if parent[l] != l {
			parent[l] = find(parent[l])
		}
		return parent[l]
	}
	owner := map[string]string{}         // device -> a lane touching it
	devs := map[string]map[string]bool{} // lane -> devices
	for i := from; i < to; i++ {
		l := steps[i].Lane
		if _, ok := parent[l]; !ok {
			parent[l] = l
			order = append(order, l)
			devs[l] = map[string]bool{}
		}
		for _, d := range steps[i].Devices {
			devs[l][d] = true
			if o, ok := owner[d]; ok {
				if a, b := find(o), find(l); a != b {
					parent[b] = a
				}
			} else {
				owner[d] = l
			}
		}
	}
	seg := laneSegment{}
	at := map[string]int{} // root -> group index
	for _, l := range order {
		r := find(l)
		g, ok := at[r]
		if !ok {
			g = len(seg.groups)
			at[r] = g
			seg.groups = append(seg.groups, laneGroup{})
		}
		seg.groups[g].lanes = append(seg.groups[g].lanes, l)
	}
	for i := from; i < to; i++ {
		seg.steps = append(seg.steps, i)
		g := at[find(steps[i].Lane)]
		seg.groups[g].steps = append(seg.groups[g].steps, i)
	}
	for gi := range seg.groups {
		g := &seg.groups[gi]
		if len(g.lanes) < 2 {
			continue
		}
		n := map[string]int{}
		for _, l := range g.lanes {
			for d := range devs[l] {
				n[d]++
			}
		}
		for d, k := range n {
			if k > 1 {
				g.shared = append(g.shared, d)
			}
		}
		slices.Sort(g.shared)
	}
	return seg
}

// parallel is how many lanes the run may run at once.
func (req RunRequest) parallel() int {
	if req.Parallel > 0 {
		return req.Parallel
	}
	return runtime.NumCPU()
}

// concurrent reports whether any segment has groups to run at once.
func concurrent(segs []laneSegment) bool {
	return slices.ContainsFunc(segs, func(s laneSegment) bool { return len(s.groups) > 1 })
}

// describeLanes records how the run's lanes run: at once, or merged where
// they share a device.
func (r *run) describeLanes(segs []laneSegment, par int) {
	for _, sg := range segs {
		if len(sg.groups) == 1 && len(sg.groups[0].lanes) < 2 {
			continue
		}
		var parts []string
		for _, g := range sg.groups {
			p := fmt.Sprintf("%s (%d steps)", strings.Join(g.lanes, "+"), len(g.steps))
			if len(g.shared) > 0 {
				p += fmt.Sprintf(": one after the other, they share %s", strings.Join(g.shared, ", "))
			}
			parts = append(parts, p)
		}
		how := fmt.Sprintf("%d at once at most", min(par, len(sg.groups)))
		if par <= 1 || len(sg.groups) == 1 {
			how = "one at a time"
		}
		r.emit(results.Event{Type: "lanes", Message: fmt.Sprintf("steps %d-%d: %d lanes, %s: %s", sg.steps[0]+1, sg.steps[len(sg.steps)-1]+1,
			len(sg.groups), how, strings.Join(parts, "; ")), Fields: map[string]any{"parallel": par, "lanes": len(sg.groups)}})
	}
}

// forStep is the context one step of a lane runs with: the run's, with
// held writers of its tables (commitStep hands their rows on).
func (rc *RunContext) forStep() *RunContext {
	v := *rc
	v.tables = make(map[string]*results.TableWriter, len(rc.tables))
	for n, t := range rc.tables {
		v.tables[n] = t.Hold()
	}
	return &v
}

// commitStep appends the rows a step's held writers kept to the run's
// tables.
func (rc *RunContext) commitStep() error {
	names := make([]string, 0, len(rc.tables))
	for n := range rc.tables {
		names = append(names, n)
	}
	slices.Sort(names)
	var errs []error
	for _, n := range names {
		errs = append(errs, rc.tables[n].Commit())
	}
	return errors.Join(errs...)
}

// laneRun is the bookkeeping of the steps of one segment run in lanes.
type laneRun struct {
	r   *run
	seg laneSegment

	mu       sync.Mutex
	ended    map[int]error       // steps that ended, with their error
	rcs      map[int]*RunContext // their contexts, until committed
	next     int                 // seg.steps[next] is the next to commit
	first    int                 // the first step to fail, -1 for none
	firstErr error
}

// runLanes runs the plan's segments in order, each one's groups at once
// (at most par of them), until a step fails or the run is aborted.
func (r *run) runLanes(ctx context.Context, segs []laneSegment, par int) *ending {
	for _, sg := range segs {
		if len(sg.groups) == 1 {
			for _, i := range sg.steps {
				if end := r.runSerialStep(ctx, i); end != nil {
					return end
				}
			}
			continue
		}
		if end := r.runSegment(ctx, sg, par); end != nil {
			return end
		}
	}
	return &ending{status: results.StatusOK}
}

// runSegment runs one segment's groups at once. The first step to fail
// stops the others (each at its next safe point, as an abort does); the
// rows of every step that ran are committed in plan order.
func (r *run) runSegment(ctx context.Context, sg laneSegment, par int) *ending {
	steps := r.plan.Steps
	lr := &laneRun{r: r, seg: sg, ended: map[int]error{}, rcs: map[int]*RunContext{}, first: -1}
	lctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
launch:
	for _, g := range sg.groups {
		select {
		case sem <- struct{}{}:
		case <-lctx.Done():
			break launch
		}
		wg.Add(1)
		go func(g laneGroup) {
			defer wg.Done()
			defer func() { <-sem }()
			for _, i := range g.steps {
				if context.Cause(lctx) != nil {
					return
				}
				rc := r.rc.forStep()
				err := r.runStep(lctx, i, rc)
				if err != nil {
					r.emit(results.Event{Type: "step.error", Step: steps[i].Name, Message: err.Error()})
				}
				if lr.end(i, rc, err) {
					stop(fmt.Errorf("%w: step %d/%d (%s) failed", ErrLaneStopped, i+1, len(steps), steps[i].Name))
				}
				if err != nil {
					return
				}
			}
		}(g)
	}
	wg.Wait()
	lr.commitRest()
	return lr.ending(ctx)
}

// ErrLaneStopped is the cause a lane's step sees when another lane's
// step failed and the run stops.
var ErrLaneStopped = errors.New("stopped")

// end records how step i ended and commits what can be, in plan order;
// it reports whether i is the first step of the segment to fail.
func (lr *laneRun) end(i int, rc *RunContext, err error) (first bool) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	lr.ended[i], lr.rcs[i] = err, rc
	if err != nil && lr.first < 0 {
		lr.first, lr.firstErr, first = i, err, true
	}
	for lr.next < len(lr.seg.steps) {
		j := lr.seg.steps[lr.next]
		if _, ok := lr.ended[j]; !ok {
			break
		}
		lr.commit(j)
		lr.next++
	}
	return first
}

// commitRest commits, in plan order, the steps that ran after one that
// never did (the segment stopped before it).
func (lr *laneRun) commitRest() {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	for _, j := range lr.seg.steps[lr.next:] {
		if _, ok := lr.ended[j]; ok {
			lr.commit(j)
		}
	}
	lr.next = len(lr.seg.steps)
}

// commit hands step j's rows to the run's tables and counts it done if
// it did not fail; under lr.mu.
func (lr *laneRun) commit(j int) {
	r := lr.r
	rc := lr.rcs[j]
	delete(lr.rcs, j)
	if err := rc.commitStep(); err != nil {
		r.e.log().Error("commit a step's rows", "step", r.plan.Steps[j].Name, "err", err)
		r.emit(results.Event{Type: "step.error", Step: r.plan.Steps[j].Name, Message: "its table rows: " + err.Error()})
	}
	if lr.ended[j] != nil {
		return
	}
	r.res.StepsDone++
	done, total, name := r.res.StepsDone, len(r.plan.Steps), r.plan.Steps[j].Name
	_ = r.b.UpdateManifest(func(m *results.Manifest) {
		m.Progress = &results.Progress{StepsDone: done, StepsTotal: total, LastStep: name}
	})
}

// ending is how the segment ended the run: nil when every step ran.
func (lr *laneRun) ending(ctx context.Context) *ending {
	steps := lr.r.plan.Steps
	name := func(i int) string { return fmt.Sprintf("step %d/%d (%s)", i+1, len(steps), steps[i].Name) }
	if cause := context.Cause(ctx); cause != nil && (lr.first < 0 || errors.Is(cause, ErrAborted)) {
		var during []string
		for _, i := range lr.seg.steps {
			if err, ok := lr.ended[i]; ok && err != nil {
				during = append(during, name(i))
			}
		}
		if len(during) > 0 {
			return &ending{status: results.StatusAborted, reason: fmt.Sprintf("%v during %s", cause, strings.Join(during, ", "))}
		}
		for _, i := range lr.seg.steps {
			if _, ok := lr.ended[i]; !ok {
				return &ending{status: results.StatusAborted, reason: fmt.Sprintf("%v before %s", cause, name(i))}
			}
		}
	}
	if lr.first >= 0 {
		return failed(fmt.Sprintf("%s: %v", name(lr.first), lr.firstErr), lr.firstErr)
	}
	return nil
}
