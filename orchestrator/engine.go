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
	// CleanupTimeout bounds each undo action whose driver does not say
	// how long it may take (default 30 s).
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
	// Parallel bounds how many of the plan's lanes (Step.Lane) run at
	// once: 0 means the number of CPUs, 1 runs every step in plan order.
	// What the run writes is the same either way (lanes.go).
	Parallel int
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
	r := &run{e: e, req: req, plan: plan, started: e.now(), devices: plan.Devices()}
	r.runID = results.NewRunID(r.started, req.Recipe.Meta().Name)
	if err := r.lease(ctx); err != nil {
		return nil, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := r.held.Release(rctx); err != nil {
			e.log().Warn("release leases", "err", err)
		}
	}()
	ctx, stopFence := r.fence(ctx)
	defer stopFence(nil)
	if err := r.createBundle(); err != nil {
		return nil, err
	}
	defer r.closeTranscripts()
	return r.execute(ctx), nil
}

// run is one run under way, what its phases share: its plan, leases,
// bundle and context.
type run struct {
	e       *Engine
	req     RunRequest
	plan    *Plan
	started time.Time
	runID   string
	// devices are the devices the plan touches.
	devices []string
	held    HeldLeases
	// journalOf is each device's address lease, where its undo journal
	// lives.
	journalOf map[string]*Lease
	secrets   []string
	b         *results.Bundle
	res       *RunResult
	rc        *RunContext
	rm        *RunMetrics

	emitMu          sync.Mutex
	tfMu            sync.Mutex
	transcriptFiles []interface{ Close() error }
}

// ending is how a run's phase ended it: nil carries on.
type ending struct {
	status results.Status
	reason string
	err    error
}

// failed ends the run failed, err its cause.
func failed(reason string, err error) *ending {
	return &ending{status: results.StatusFailed, reason: reason, err: err}
}

// lease takes the leases of the plan's devices (by address, and by
// serial on a real lab), waiting for them when the request says so.
func (r *run) lease(ctx context.Context) error {
	var targets []LeaseTarget
	for _, d := range r.devices {
		dev, ok := r.req.Lab.Device(d)
		if !ok {
			return Inputf("plan touches device %q that is not in the inventory", d)
		}
		t := LeaseTarget{Device: d, Address: dev.Address}
		if !r.req.Simulated {
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
	store := r.e.Leases
	if store == nil {
		store = &FileLeases{L: NewLeaser(r.e.StateDir, r.e.LeaseTTL, r.e.log())}
	}
	held, err := r.e.acquire(ctx, store, LeaseRequest{Lab: r.req.Lab.Name, Owner: owner, RunID: r.runID, Devices: targets, Wait: r.req.WaitLeases}, r.req.OnLeaseWait, r.req.WaitTimeout)
	if err != nil {
		var ie *InputError
		if errors.As(err, &ie) {
			return err
		}
		return &InfraError{Op: "lease devices", Err: err}
	}
	r.held = held
	// Each device's undo journal lives with its address lease.
	r.journalOf = map[string]*Lease{}
	for _, ls := range held.Leases() {
		if dev, ok := r.req.Lab.Device(ls.Device); ok && ls.Key == NormalizeAddress(dev.Address) {
			r.journalOf[ls.Device] = ls
		}
	}
	return nil
}

// fence returns the run's context, ended when its leases are lost (its
// etcd session expired, its lease file was taken over): the run stops
// touching the devices, its steps stop, and its journal writes are
// refused by the store.
func (r *run) fence(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	ctx, stopFence := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-r.held.Lost():
			r.e.log().Error("leases lost: stopping the run (another run may hold the devices now)", "run", r.runID)
			stopFence(fmt.Errorf("%w: leases lost (lease store unreachable past the TTL)", ErrAborted))
		case <-ctx.Done():
		}
	}()
	return ctx, stopFence
}

// createBundle creates the run's bundle, its manifest with the resolved
// parameters, its live metrics and its run context, and records the
// run's start and its bindings.
func (r *run) createBundle() error {
	e, req, plan := r.e, r.req, r.plan
	secrets, err := req.Lab.Secrets()
	if err != nil {
		return &InputError{Msg: err.Error()}
	}
	r.secrets = append(secrets, req.Secrets...)
	m := results.Manifest{
		RunID:    r.runID,
		Recipe:   results.RecipeRef{Name: req.Recipe.Meta().Name, Version: req.Recipe.Meta().Version},
		Seed:     req.Seed,
		Started:  r.started,
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
	r.b, err = results.Create(e.RunsDir, m, results.Options{Secrets: r.secrets, Now: e.Now})
	if err != nil {
		return &InfraError{Op: "create bundle", Err: err}
	}
	r.res = &RunResult{RunID: r.runID, Dir: r.b.Dir(), StepsTotal: len(plan.Steps)}
	reg := e.Metrics
	if reg == nil {
		reg = NewMetrics()
	}
	r.rm, err = reg.startRun(plan.Recipe, plan.Version, r.runID, len(plan.Steps), r.started)
	if err != nil {
		e.log().Error("live metrics", "err", err)
	}
	r.emit(results.Event{Type: "run.start", Message: fmt.Sprintf("%s v%s, %d steps on %d devices", plan.Recipe, plan.Version, len(plan.Steps), len(r.devices)),
		Fields: map[string]any{"run_id": r.runID, "dir": r.b.Dir(), "seed": req.Seed}})
	for _, bd := range plan.Bindings {
		r.emit(results.Event{Type: "bind", Message: fmt.Sprintf("%s <- %s %s", bd.Role, bd.Resource, bd.Detail)})
	}
	r.rc = &RunContext{RunID: r.runID, Seed: req.Seed, Params: req.Params, Lab: req.Lab, Simulated: req.Simulated, Log: e.log(),
		bundle: r.b, tables: map[string]*results.TableWriter{}, emit: r.emit, metrics: r.rm,
		runShared: &runShared{touched: map[string]bool{}, journals: map[string]RunJournal{}, lost: r.held.Lost(),
			cleanupCtx: req.cleanupCtx(), cleanupPer: req.cleanupTimeout()}}
	return nil
}

// emit records an event in the bundle, the live metrics and the
// engine's observer, in one order for every goroutine of the run.
func (r *run) emit(ev results.Event) {
	if ev.Time.IsZero() {
		ev.Time = r.e.now()
	}
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	if err := r.b.Event(ev); err != nil {
		r.e.log().Error("write event", "err", err)
	}
	if r.rm != nil {
		r.rm.observe(ev)
	}
	if r.e.Observe != nil {
		r.e.Observe(ev)
	}
}

// transcript opens a device's transcript in the bundle, scrubbed of the
// run's secrets; nil when it cannot be opened.
func (r *run) transcript(device string) *transport.Transcript {
	w, err := r.b.Transcript(device)
	if err != nil {
		r.e.log().Error("open transcript", "device", device, "err", err)
		return nil
	}
	r.tfMu.Lock()
	r.transcriptFiles = append(r.transcriptFiles, w)
	r.tfMu.Unlock()
	return transport.NewTranscript(w, r.secrets...)
}

func (r *run) closeTranscripts() {
	for _, f := range r.transcriptFiles {
		f.Close()
	}
}

// execute runs the phases that need the bundle, in order, until one
// ends the run, then unwinds the undo stack and seals the bundle.
func (r *run) execute(ctx context.Context) *RunResult {
	defer func() {
		if r.rc.devices != nil {
			r.rc.devices.Close()
		}
	}()
	phases := []func(context.Context) *ending{
		r.createTables,
		r.recoverJournals,
		r.openJournals,
		r.openDevices,
		r.openShutters,
		r.runSteps,
	}
	var end *ending
	for _, phase := range phases {
		if end = phase(ctx); end != nil {
			break
		}
	}
	return r.e.finish(ctx, r.b, r.res, r.rc, r.plan, end.status, end.reason, end.err, r.req)
}

// createTables creates the plan's tables first, so even a run that fails
// at once has their headers.
func (r *run) createTables(context.Context) *ending {
	for _, t := range r.plan.Tables {
		tw, err := r.b.CreateTable(t)
		if err != nil {
			return failed(fmt.Sprintf("create table %s: %v", t.Name, err), err)
		}
		r.rc.tables[t.Name] = tw
	}
	return nil
}

// cleanupTimeout bounds each undo action whose driver does not say how
// long it may take (drivers.Driver.UndoBound).
func (req RunRequest) cleanupTimeout() time.Duration {
	if req.CleanupTimeout <= 0 {
		return 30 * time.Second
	}
	return req.CleanupTimeout
}

// recoverJournals undoes what a run that died left on a device: a
// journal beside a lease is that run's undo, replayed through a fresh
// driver before anything else, so that this run finds the lab as the
// dead run found it.
func (r *run) recoverJournals(ctx context.Context) *ending {
	var recovered []results.CleanupAction
	var recoverErrs []string
	for _, n := range r.devices {
		ls := r.journalOf[n]
		if ls == nil {
			continue
		}
		pending, err := r.held.PendingJournal(ctx, ls)
		if err == nil && len(pending) == 0 {
			// Nothing left to undo (a run killed before its first
			// change leaves a journal of its "begin" line alone): the
			// journal goes, or this run could not start its own.
			if err := r.held.ClearJournal(ctx, ls); err != nil {
				return failed("infrastructure: "+n+": "+err.Error()+" (testbed lab recover removes it)", &InfraError{Op: "undo journal", Err: err})
			}
			continue
		}
		rec, err := r.recoverDevice(ctx, n, ls)
		recovered = append(recovered, rec...)
		if err != nil {
			recoverErrs = append(recoverErrs, err.Error())
		}
	}
	if len(recovered) > 0 {
		_ = r.b.UpdateManifest(func(m *results.Manifest) { m.Recovered = recovered })
	}
	if len(recoverErrs) > 0 {
		err := fmt.Errorf("%s", strings.Join(recoverErrs, "; "))
		return failed("infrastructure: could not undo what an earlier run left: "+err.Error(),
			&InfraError{Op: "undo what an earlier run left", Err: err})
	}
	return nil
}

// recoverDevice replays the journal an earlier run left on device n,
// recording each undo as an event.
func (r *run) recoverDevice(ctx context.Context, n string, ls *Lease) ([]results.CleanupAction, error) {
	dev, _ := r.req.Lab.Device(n)
	from := "a run that ended without restoring it"
	if ls.TookOver != nil {
		from = fmt.Sprintf("run %s (pid %d, %s), whose lease this run took over", ls.TookOver.RunID, ls.TookOver.PID, ls.TookOver.Owner)
	}
	r.emit(results.Event{Type: "recover.start", Device: n, Message: "undoing what " + from + " left on " + n})
	rec, err := RecoverHeld(ctx, dev, r.held, ls, r.transcript, r.req.cleanupTimeout())
	var out []results.CleanupAction
	for _, u := range rec {
		out = append(out, u.CleanupAction())
		if u.Err != nil {
			r.emit(results.Event{Type: "recover.error", Device: n, Message: u.Desc + ": " + u.Err.Error(), Fields: map[string]any{"from_run": u.FromRun, "kind": u.Kind}})
		} else {
			r.emit(results.Event{Type: "recover", Device: n, Message: u.Desc, Fields: map[string]any{"from_run": u.FromRun, "kind": u.Kind}})
		}
	}
	return out, err
}

// openJournals opens this run's undo journal beside each device's lease.
func (r *run) openJournals(ctx context.Context) *ending {
	for _, n := range r.devices {
		ls := r.journalOf[n]
		if ls == nil {
			continue
		}
		j, err := r.held.OpenJournal(ctx, ls, r.runID)
		if err != nil {
			return failed("infrastructure: "+err.Error(), &InfraError{Op: "undo journal", Err: err})
		}
		r.rc.journals[n] = j
	}
	return nil
}

// openDevices opens the drivers of the plan's devices and records who
// each device is.
func (r *run) openDevices(ctx context.Context) *ending {
	ds, err := OpenDevices(ctx, r.req.Lab, r.devices, r.transcript)
	if err != nil {
		end := failed("infrastructure: open devices: "+err.Error(), &InfraError{Op: "open devices", Err: err})
		if cause := context.Cause(ctx); cause != nil {
			end.status, end.reason = results.StatusAborted, "aborted while opening devices: "+cause.Error()
		}
		return end
	}
	r.rc.devices = ds
	_ = r.b.UpdateManifest(func(m *results.Manifest) {
		for _, n := range r.devices {
			od, _ := ds.Get(n)
			m.Devices = append(m.Devices, results.Device{Name: n, Kind: od.Dev.Kind, Driver: od.Dev.Driver, Address: od.Dev.Address,
				Identity: results.Identity(od.Identity)})
		}
	})
	for _, n := range r.devices {
		od, _ := ds.Get(n)
		r.emit(results.Event{Type: "device.open", Device: n, Message: od.Identity.String()})
	}
	return nil
}

// openShutters gives light to the plan's VOA channels.
func (r *run) openShutters(ctx context.Context) *ending {
	if err := r.rc.openShutters(ctx, r.plan); err != nil {
		return failed("infrastructure: give light to the plan's VOA channels: "+err.Error(), &InfraError{Op: "open shutters", Err: err})
	}
	return nil
}

// runSteps runs the plan's steps until one fails or the run is aborted,
// recording each step's start, end or skip and the progress: in plan
// order, or lanes at once where the plan has them (lanes.go).
func (r *run) runSteps(ctx context.Context) *ending {
	segs := laneSegments(r.plan.Steps)
	par := r.req.parallel()
	r.describeLanes(segs, par)
	if par > 1 && concurrent(segs) {
		return r.runLanes(ctx, segs, par)
	}
	for i := range r.plan.Steps {
		if end := r.runSerialStep(ctx, i); end != nil {
			return end
		}
	}
	return &ending{status: results.StatusOK}
}

// runSerialStep runs step i after every step before it has run; a
// non-nil ending ends the run.
func (r *run) runSerialStep(ctx context.Context, i int) *ending {
	steps := r.plan.Steps
	step := steps[i]
	if cause := context.Cause(ctx); cause != nil {
		return &ending{status: results.StatusAborted, reason: fmt.Sprintf("%v before step %d/%d (%s)", cause, i+1, len(steps), step.Name)}
	}
	if err := r.runStep(ctx, i, r.rc); err != nil {
		end := failed(fmt.Sprintf("step %d/%d (%s): %v", i+1, len(steps), step.Name, err), err)
		if cause := context.Cause(ctx); cause != nil && errors.Is(cause, ErrAborted) {
			end = &ending{status: results.StatusAborted, reason: fmt.Sprintf("%v during step %d/%d (%s)", cause, i+1, len(steps), step.Name)}
		}
		r.emit(results.Event{Type: "step.error", Step: step.Name, Message: err.Error()})
		return end
	}
	r.res.StepsDone++
	done := r.res.StepsDone
	_ = r.b.UpdateManifest(func(m *results.Manifest) {
		m.Progress = &results.Progress{StepsDone: done, StepsTotal: len(steps), LastStep: step.Name}
	})
	return nil
}

// runStep runs step i with rc, recording its start with the estimate of
// what is left, and its end or skip; a skip is not an error.
func (r *run) runStep(ctx context.Context, i int, rc *RunContext) error {
	steps := r.plan.Steps
	step := steps[i]
	t0 := r.e.now()
	startFields := map[string]any{"index": i + 1, "of": len(steps)}
	if left := estimateLeft(steps[i:]); left > 0 {
		// This step's estimate and every later one's, for the ETA.
		startFields["estimate_s"], startFields["estimate_left_s"] = step.Estimate.Seconds(), left.Seconds()
	}
	r.emit(results.Event{Type: "step.start", Step: step.Name, Message: step.Action, Fields: startFields})
	err := step.Run(ctx, rc)
	dur := r.e.now().Sub(t0)
	if sk, ok := isSkip(err); ok {
		r.emit(results.Event{Type: "step.skip", Step: step.Name, Message: sk.Reason, Fields: map[string]any{"index": i + 1, "of": len(steps)}})
		return nil
	}
	if err == nil {
		r.emit(results.Event{Type: "step.end", Step: step.Name, Fields: map[string]any{"index": i + 1, "of": len(steps), "seconds": dur.Seconds()}})
	}
	return err
}

// cleanupCtx is what the undos that put the lab back run under: the
// request's CleanupCtx (a second Ctrl-C), never the run's own context, so
// a run cancelled or past its deadline still restores the lab.
func (req RunRequest) cleanupCtx() context.Context {
	if req.CleanupCtx == nil {
		return context.Background()
	}
	return req.CleanupCtx
}

// runUndoAction carries out one undo under cctx, given the time its
// driver says it may take (a move at the attenuator's speed, a program's
// start), the fixed bound per if it says nothing: one cut short leaves
// the lab as it was not found. It returns the bound it gave.
func runUndoAction(cctx context.Context, u undoAction, per time.Duration) (time.Duration, error) {
	bound := per
	if u.Bound != nil {
		bound = u.Bound(cctx, per)
	}
	ctx, cancel := context.WithTimeout(cctx, bound)
	defer cancel()
	return bound, u.Fn(ctx)
}

// finish unwinds the undo stack, writes the summary and finalizes the bundle.
func (e *Engine) finish(ctx context.Context, b *results.Bundle, res *RunResult, rc *RunContext, plan *Plan, status results.Status, reason string, runErr error, req RunRequest) *RunResult {
	cctx := req.cleanupCtx()
	per := req.cleanupTimeout()
	rc.mu.Lock()
	undo := rc.undo
	rc.undo = nil
	rc.mu.Unlock()
	var cleanup []results.CleanupAction
	for i := len(undo) - 1; i >= 0; i-- {
		u := undo[i]
		var err error
		bound := per
		select {
		case <-rc.lost:
			// Fencing: another run may hold the device now; the undo
			// stays in the journal, which its next holder replays.
			err = errors.New("not undone: this run's lease on the device was lost; the device's next holder replays the journal")
		default:
			bound, err = runUndoAction(cctx, u, per)
		}
		ca := results.CleanupAction{Action: u.Desc, Device: u.Device, OK: err == nil}
		if err != nil {
			ca.Error = err.Error()
			res.Unrestored = append(res.Unrestored, fmt.Sprintf("%s: %s: %v", u.Device, u.Desc, err))
			rc.emit(results.Event{Type: "cleanup.error", Device: u.Device, Message: u.Desc + ": " + err.Error(), Fields: map[string]any{"bound_s": bound.Seconds()}})
		} else {
			rc.emit(results.Event{Type: "cleanup", Device: u.Device, Message: u.Desc, Fields: map[string]any{"bound_s": bound.Seconds()}})
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
