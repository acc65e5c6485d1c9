package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"strings"
	"sync"
	"time"

	"testbed/inventory"
	"testbed/results"
	"testbed/transport"
)

// Engine runs recipes: it plans, leases the devices, opens the drivers,
// runs the steps under a context, records everything into a bundle, and
// always unwinds the undo stack so the lab is left in its safe state.
type Engine struct {
	RunsDir  string // bundles are written under it
	StateDir string // leases live under it
	LeaseTTL time.Duration
	Version  string
	Log      *slog.Logger
	// Observe receives every event as it is recorded (progress display).
	Observe func(results.Event)
	// Metrics receives the run's live series (state, step, progress, and
	// what the recipe publishes); nil keeps them private to the run.
	Metrics *Metrics
	Now     func() time.Time
	// Leases is where device leases live; nil means lease files under
	// StateDir with LeaseTTL.
	Leases LeaseStore
}

// RunRequest is one run.
type RunRequest struct {
	Recipe    Recipe
	Params    *Params
	Lab       *inventory.Inventory
	Simulated bool
	Seed      uint64
	Command   []string
	// CleanupCtx bounds the undo stack. Cancelling it (a second Ctrl-C)
	// stops waiting on devices; what could not be restored is reported.
	CleanupCtx context.Context
	// CleanupTimeout bounds each undo action (default 30 s).
	CleanupTimeout time.Duration
	// Secrets are scrubbed from everything written, in addition to the
	// inventory's resolved credentials.
	Secrets []string
	// WaitLeases queues for devices another run holds instead of
	// refusing the run; ctx bounds the wait.
	WaitLeases bool
	// WaitTimeout bounds that wait (0: as long as ctx lasts).
	WaitTimeout time.Duration
	// OnLeaseWait is told, before the run queues, who holds a device it
	// waits for and its place in that device's queue (1: next).
	OnLeaseWait func(holder Lease, place int)
	// Labels are recorded in the manifest (e.g. suite, suite_entry).
	Labels map[string]string
}

// RunResult is how a run ended.
type RunResult struct {
	RunID      string
	Dir        string
	Status     results.Status
	Reason     string
	Err        error    // the failure, if the run failed
	Unrestored []string // undo actions that did not succeed
	StepsDone  int
	StepsTotal int
}

// Plan binds and plans without touching any device (the dry run).
func (e *Engine) Plan(req RunRequest) (*Plan, error) {
	if err := CheckDrivers(req.Lab); err != nil {
		return nil, err
	}
	if err := ValidateParams(req.Recipe, req.Params); err != nil {
		return nil, err
	}
	p, err := req.Recipe.Plan(&PlanContext{Params: req.Params, Lab: req.Lab, Simulated: req.Simulated, RunsDir: e.RunsDir})
	if err != nil {
		return nil, err
	}
	m := req.Recipe.Meta()
	p.Recipe, p.Version = m.Name, m.Version
	if err := checkPlanSize(p); err != nil {
		return nil, err
	}
	return p, nil
}

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Engine) log() *slog.Logger {
	if e.Log != nil {
		return e.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Run runs a recipe. It returns an error without a bundle only when the run
// could not start (bad input, devices leased by someone else); once the
// bundle exists every outcome is recorded in it and in the RunResult.
func (e *Engine) Run(ctx context.Context, req RunRequest) (*RunResult, error) {
	plan, err := e.Plan(req)
	if err != nil {
		return nil, err
	}
	started := e.now()
	runID := results.NewRunID(started, req.Recipe.Meta().Name)
	devices := plan.Devices()

	var targets []LeaseTarget
	for _, d := range devices {
		dev, ok := req.Lab.Device(d)
		if !ok {
			return nil, Inputf("plan touches device %q that is not in the inventory", d)
		}
		t := LeaseTarget{Device: d, Address: dev.Address}
		if !req.Simulated {
			// An in-process simulated lab's serials are the same in
			// every copy of it: only a real lab's say which device it is.
			t.Serial = dev.Options["serial"]
		}
		targets = append(targets, t)
	}
	owner := "unknown"
	if u, err := user.Current(); err == nil {
		owner = u.Username
	}
	store := e.Leases
	if store == nil {
		store = &FileLeases{L: NewLeaser(e.StateDir, e.LeaseTTL, e.log())}
	}
	held, err := e.acquire(ctx, store, LeaseRequest{Lab: req.Lab.Name, Owner: owner, RunID: runID, Devices: targets, Wait: req.WaitLeases}, req.OnLeaseWait, req.WaitTimeout)
	if err != nil {
		var ie *InputError
		if errors.As(err, &ie) {
			return nil, err
		}
		return nil, &InfraError{Op: "lease devices", Err: err}
	}
	leases := held.Leases()
	// Each device's undo journal lives with its address lease.
	journalOf := map[string]*Lease{}
	for _, ls := range leases {
		if dev, ok := req.Lab.Device(ls.Device); ok && ls.Key == NormalizeAddress(dev.Address) {
			journalOf[ls.Device] = ls
		}
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := held.Release(rctx); err != nil {
			e.log().Warn("release leases", "err", err)
		}
	}()
	// Fencing: a run whose leases are lost (its etcd session expired, its
	// lease file was taken over) stops touching the devices: its context
	// ends, so its steps stop; its journal writes are refused by the store.
	ctx, stopFence := context.WithCancelCause(ctx)
	defer stopFence(nil)
	go func() {
		select {
		case <-held.Lost():
			e.log().Error("leases lost: stopping the run (another run may hold the devices now)", "run", runID)
			stopFence(fmt.Errorf("%w: leases lost (lease store unreachable past the TTL)", ErrAborted))
		case <-ctx.Done():
		}
	}()

	secrets, err := req.Lab.Secrets()
	if err != nil {
		return nil, &InputError{Msg: err.Error()}
	}
	secrets = append(secrets, req.Secrets...)

	m := results.Manifest{
		RunID:    runID,
		Recipe:   results.RecipeRef{Name: req.Recipe.Meta().Name, Version: req.Recipe.Meta().Version},
		Seed:     req.Seed,
		Started:  started,
		Lab:      results.Lab{Simulated: req.Simulated, Name: req.Lab.Name, InventoryPath: req.Lab.Path, Inventory: req.Lab.Redacted()},
		Software: results.CurrentSoftware(e.Version),
		Command:  req.Command,
		Labels:   req.Labels,
		Progress: &results.Progress{StepsTotal: len(plan.Steps)},
	}
	for _, s := range req.Params.Specs() {
		v, src := req.Params.Value(s.Name)
		if d, ok := v.(time.Duration); ok {
			v = d.String()
		}
		m.Params = append(m.Params, results.Param{Name: s.Name, Value: v, Type: s.Type, Unit: s.Unit, Source: src})
	}
	b, err := results.Create(e.RunsDir, m, results.Options{Secrets: secrets, Now: e.Now})
	if err != nil {
		return nil, &InfraError{Op: "create bundle", Err: err}
	}
	res := &RunResult{RunID: runID, Dir: b.Dir(), StepsTotal: len(plan.Steps)}
	reg := e.Metrics
	if reg == nil {
		reg = NewMetrics()
	}
	rm, err := reg.startRun(plan.Recipe, plan.Version, runID, len(plan.Steps), started)
	if err != nil {
		e.log().Error("live metrics", "err", err)
	}

	var emitMu sync.Mutex
	emit := func(ev results.Event) {
		if ev.Time.IsZero() {
			ev.Time = e.now()
		}
		emitMu.Lock()
		defer emitMu.Unlock()
		if err := b.Event(ev); err != nil {
			e.log().Error("write event", "err", err)
		}
		if rm != nil {
			rm.observe(ev)
		}
		if e.Observe != nil {
			e.Observe(ev)
		}
	}

	var transcriptFiles []interface{ Close() error }
	var tfMu sync.Mutex
	transcripts := func(device string) *transport.Transcript {
		w, err := b.Transcript(device)
		if err != nil {
			e.log().Error("open transcript", "device", device, "err", err)
			return nil
		}
		tfMu.Lock()
		transcriptFiles = append(transcriptFiles, w)
		tfMu.Unlock()
		return transport.NewTranscript(w, secrets...)
	}
	defer func() {
		for _, f := range transcriptFiles {
			f.Close()
		}
	}()

	emit(results.Event{Type: "run.start", Message: fmt.Sprintf("%s v%s, %d steps on %d devices", plan.Recipe, plan.Version, len(plan.Steps), len(devices)),
		Fields: map[string]any{"run_id": runID, "dir": b.Dir(), "seed": req.Seed}})
	for _, bd := range plan.Bindings {
		emit(results.Event{Type: "bind", Message: fmt.Sprintf("%s <- %s %s", bd.Role, bd.Resource, bd.Detail)})
	}

	// Tables first, so even a run that fails at once has their headers.
	rc := &RunContext{RunID: runID, Seed: req.Seed, Params: req.Params, Lab: req.Lab, Simulated: req.Simulated, Log: e.log(),
		bundle: b, tables: map[string]*results.TableWriter{}, emit: emit, touched: map[string]bool{}, metrics: rm, journals: map[string]RunJournal{}, lost: held.Lost()}
	for _, t := range plan.Tables {
		tw, err := b.CreateTable(t)
		if err != nil {
			return e.finish(ctx, b, res, rc, plan, results.StatusFailed, fmt.Sprintf("create table %s: %v", t.Name, err), err, req), nil
		}
		rc.tables[t.Name] = tw
	}

	// A journal beside a lease is what a run that died left undone on
	// that device: undo it, through a fresh driver, before anything else,
	// so that this run finds the lab as the dead run found it.
	per := req.CleanupTimeout
	if per <= 0 {
		per = 30 * time.Second
	}
	var recovered []results.CleanupAction
	var recoverErrs []string
	for _, n := range devices {
		ls := journalOf[n]
		if ls == nil {
			continue
		}
		pending, err := held.PendingJournal(ctx, ls)
		if err == nil && len(pending) == 0 {
			// Nothing left to undo (a run killed before its first
			// change leaves a journal of its "begin" line alone): the
			// journal goes, or this run could not start its own.
			if err := held.ClearJournal(ctx, ls); err != nil {
				return e.finish(ctx, b, res, rc, plan, results.StatusFailed, "infrastructure: "+n+": "+err.Error()+" (testbed lab recover removes it)",
					&InfraError{Op: "undo journal", Err: err}, req), nil
			}
			continue
		}
		dev, _ := req.Lab.Device(n)
		from := "a run that ended without restoring it"
		if ls.TookOver != nil {
			from = fmt.Sprintf("run %s (pid %d, %s), whose lease this run took over", ls.TookOver.RunID, ls.TookOver.PID, ls.TookOver.Owner)
		}
		emit(results.Event{Type: "recover.start", Device: n, Message: "undoing what " + from + " left on " + n})
		rec, err := RecoverHeld(ctx, dev, held, ls, transcripts, per)
		for _, r := range rec {
			recovered = append(recovered, r.CleanupAction())
			if r.Err != nil {
				emit(results.Event{Type: "recover.error", Device: n, Message: r.Desc + ": " + r.Err.Error(), Fields: map[string]any{"from_run": r.FromRun, "kind": r.Kind}})
			} else {
				emit(results.Event{Type: "recover", Device: n, Message: r.Desc, Fields: map[string]any{"from_run": r.FromRun, "kind": r.Kind}})
			}
		}
		if err != nil {
			recoverErrs = append(recoverErrs, err.Error())
		}
	}
	if len(recovered) > 0 {
		_ = b.UpdateManifest(func(m *results.Manifest) { m.Recovered = recovered })
	}
	if len(recoverErrs) > 0 {
		err := fmt.Errorf("%s", strings.Join(recoverErrs, "; "))
		return e.finish(ctx, b, res, rc, plan, results.StatusFailed, "infrastructure: could not undo what an earlier run left: "+err.Error(),
			&InfraError{Op: "undo what an earlier run left", Err: err}, req), nil
	}
	for _, n := range devices {
		ls := journalOf[n]
		if ls == nil {
			continue
		}
		j, err := held.OpenJournal(ctx, ls, runID)
		if err != nil {
			return e.finish(ctx, b, res, rc, plan, results.StatusFailed, "infrastructure: "+err.Error(), &InfraError{Op: "undo journal", Err: err}, req), nil
		}
		rc.journals[n] = j
	}

	ds, err := OpenDevices(ctx, req.Lab, devices, transcripts)
	if err != nil {
		status, reason := results.StatusFailed, "infrastructure: open devices: "+err.Error()
		if cause := context.Cause(ctx); cause != nil {
			status, reason = results.StatusAborted, "aborted while opening devices: "+cause.Error()
		}
		return e.finish(ctx, b, res, rc, plan, status, reason, &InfraError{Op: "open devices", Err: err}, req), nil
	}
	defer ds.Close()
	rc.devices = ds
	_ = b.UpdateManifest(func(m *results.Manifest) {
		for _, n := range devices {
			od, _ := ds.Get(n)
			m.Devices = append(m.Devices, results.Device{Name: n, Kind: od.Dev.Kind, Driver: od.Dev.Driver, Address: od.Dev.Address,
				Identity: results.Identity(od.Identity)})
		}
	})
	for _, n := range devices {
		od, _ := ds.Get(n)
		emit(results.Event{Type: "device.open", Device: n, Message: od.Identity.String()})
	}

	status, reason := results.StatusOK, ""
	var runErr error
	if err := rc.openShutters(ctx, plan); err != nil {
		return e.finish(ctx, b, res, rc, plan, results.StatusFailed, "infrastructure: give light to the plan's VOA channels: "+err.Error(), &InfraError{Op: "open shutters", Err: err}, req), nil
	}
	for i, step := range plan.Steps {
		if cause := context.Cause(ctx); cause != nil {
			status, reason = results.StatusAborted, fmt.Sprintf("%v before step %d/%d (%s)", cause, i+1, len(plan.Steps), step.Name)
			break
		}
		t0 := e.now()
		startFields := map[string]any{"index": i + 1, "of": len(plan.Steps)}
		if left := estimateLeft(plan.Steps[i:]); left > 0 {
			// This step's estimate and every later one's, for the ETA.
			startFields["estimate_s"], startFields["estimate_left_s"] = step.Estimate.Seconds(), left.Seconds()
		}
		emit(results.Event{Type: "step.start", Step: step.Name, Message: step.Action, Fields: startFields})
		err := step.Run(ctx, rc)
		dur := e.now().Sub(t0)
		if sk, ok := isSkip(err); ok {
			emit(results.Event{Type: "step.skip", Step: step.Name, Message: sk.Reason, Fields: map[string]any{"index": i + 1, "of": len(plan.Steps)}})
			err = nil
		} else if err == nil {
			emit(results.Event{Type: "step.end", Step: step.Name, Fields: map[string]any{"index": i + 1, "of": len(plan.Steps), "seconds": dur.Seconds()}})
		}
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && errors.Is(cause, ErrAborted) {
				status, reason = results.StatusAborted, fmt.Sprintf("%v during step %d/%d (%s)", cause, i+1, len(plan.Steps), step.Name)
			} else {
				status, reason, runErr = results.StatusFailed, fmt.Sprintf("step %d/%d (%s): %v", i+1, len(plan.Steps), step.Name, err), err
			}
			emit(results.Event{Type: "step.error", Step: step.Name, Message: err.Error()})
			break
		}
		res.StepsDone = i + 1
		_ = b.UpdateManifest(func(m *results.Manifest) {
			m.Progress = &results.Progress{StepsDone: i + 1, StepsTotal: len(plan.Steps), LastStep: step.Name}
		})
	}
	return e.finish(ctx, b, res, rc, plan, status, reason, runErr, req), nil
}

// finish unwinds the undo stack, writes the summary and finalizes the bundle.
func (e *Engine) finish(ctx context.Context, b *results.Bundle, res *RunResult, rc *RunContext, plan *Plan, status results.Status, reason string, runErr error, req RunRequest) *RunResult {
	cctx := req.CleanupCtx
	if cctx == nil {
		cctx = context.Background()
	}
	per := req.CleanupTimeout
	if per <= 0 {
		per = 30 * time.Second
	}
	rc.mu.Lock()
	undo := rc.undo
	rc.undo = nil
	rc.mu.Unlock()
	var cleanup []results.CleanupAction
	for i := len(undo) - 1; i >= 0; i-- {
		u := undo[i]
		var err error
		select {
		case <-rc.lost:
			// Fencing: another run may hold the device now; the undo
			// stays in the journal, which its next holder replays.
			err = errors.New("not undone: this run's lease on the device was lost; the device's next holder replays the journal")
		default:
			ctx, cancel := context.WithTimeout(cctx, per)
			err = u.Fn(ctx)
			cancel()
		}
		ca := results.CleanupAction{Action: u.Desc, Device: u.Device, OK: err == nil}
		if err != nil {
			ca.Error = err.Error()
			res.Unrestored = append(res.Unrestored, fmt.Sprintf("%s: %s: %v", u.Device, u.Desc, err))
			rc.emit(results.Event{Type: "cleanup.error", Device: u.Device, Message: u.Desc + ": " + err.Error()})
		} else {
			rc.emit(results.Event{Type: "cleanup", Device: u.Device, Message: u.Desc})
		}
		cleanup = append(cleanup, ca)
	}
	// Close the journals: a journal whose undos all ran is removed; one
	// with undos that failed stays beside its lease for the next run (or
	// `testbed lab recover`) to replay.
	for n, j := range rc.journals {
		if removed, err := j.Close(); err != nil {
			e.log().Error("close undo journal", "device", n, "err", err)
		} else if !removed {
			rc.emit(results.Event{Type: "journal.kept", Device: n, Message: "undo journal kept: the next run to lease " + n + " (or testbed lab recover) replays what was not restored"})
		}
	}
	if len(res.Unrestored) > 0 && status == results.StatusOK {
		status, reason = results.StatusFailed, fmt.Sprintf("could not restore %d device setting(s)", len(res.Unrestored))
	}
	if plan.Summary != nil {
		partial := status != results.StatusOK || res.StepsDone < res.StepsTotal
		if sum, err := plan.Summary(partial); err != nil {
			rc.emit(results.Event{Type: "summary.error", Message: err.Error()})
		} else if err := b.WriteSummary(sum); err != nil {
			rc.emit(results.Event{Type: "summary.error", Message: err.Error()})
		}
	}
	// A signal that came while the lab was being restored or the summary
	// written ends the run aborted: it did not end as it was asked to.
	if cause := context.Cause(ctx); status == results.StatusOK && cause != nil && errors.Is(cause, ErrAborted) {
		status, reason = results.StatusAborted, fmt.Sprintf("%v during finalisation (every step had run)", cause)
	}
	restored := len(res.Unrestored) == 0
	if !restored && status == results.StatusAborted {
		reason += fmt.Sprintf("; lab NOT restored: %d cleanup action(s) failed", len(res.Unrestored))
	}
	rc.emit(results.Event{Type: "run.end", Message: string(status) + " " + reason,
		Fields: map[string]any{"status": string(status), "steps_done": res.StepsDone, "steps_total": res.StepsTotal}})
	_ = b.UpdateManifest(func(m *results.Manifest) { m.Cleanup, m.LabRestored = cleanup, &restored })
	if err := b.Finalize(status, reason); err != nil {
		e.log().Error("finalize bundle", "dir", b.Dir(), "err", err)
		fmt.Fprintf(os.Stderr, "testbed: finalize bundle %s: %v\n", b.Dir(), err)
	}
	res.Status, res.Reason, res.Err = status, reason, runErr
	return res
}

// acquire takes the run's leases; when it must wait it first says who holds
// what it waits for and its place in the queue.
func (e *Engine) acquire(ctx context.Context, store LeaseStore, req LeaseRequest, onWait func(Lease, int), timeout time.Duration) (HeldLeases, error) {
	wait := req.Wait
	req.Wait = false
	h, err := store.Acquire(ctx, req)
	var held *LeaseHeldError
	if err == nil || !wait || !errors.As(err, &held) {
		return h, err
	}
	if onWait != nil {
		place := 1
		if st, lerr := store.List(ctx); lerr == nil {
			for _, s := range st {
				if s.Key == held.Held.Key {
					place += len(s.Waiters)
				}
			}
		}
		onWait(held.Held, place)
	}
	req.Wait = true
	if timeout > 0 {
		wctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("gave up waiting after %v (--wait-timeout)", timeout))
		defer cancel()
		return store.Acquire(wctx, req)
	}
	return store.Acquire(ctx, req)
}

// estimateLeft adds up the steps' estimates.
func estimateLeft(steps []*Step) time.Duration {
	var d time.Duration
	for _, s := range steps {
		d += s.Estimate
	}
	return d
}
