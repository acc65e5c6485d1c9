package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"testbed/dut/p4switch"
	"testbed/inventory"
	o "testbed/orchestrator"
	lg "testbed/p4/linkguardian"
)

// SwitchActor is what acting needs of a switch: LinkGuardian's sender
// tables (p4/linkguardian) and its ports: a p4switch.Switch is one.
type SwitchActor interface {
	Entries(ctx context.Context, table string) ([]p4switch.Entry, error)
	AddEntry(ctx context.Context, table string, e p4switch.Entry) error
	DeleteEntry(ctx context.Context, table string, key map[string]int64) error
	PortStatus(ctx context.Context, devPort int) (p4switch.PortStatus, error)
	DeletePort(ctx context.Context, devPort int) error
}

// Outcomes of acting on a decision.
const (
	OutcomeDone     = "done"     // the change is in force
	OutcomeProposed = "proposed" // nothing to do on a device: a proposal for an operator
	OutcomeDryRun   = "dry_run"  // decided, not carried out
	OutcomeDeferred = "deferred" // the device is leased by a run: decided again at the next poll
	OutcomeFailed   = "failed"   // the change failed; what it had changed was put back
)

// Actor carries out the policy's decisions through the switch drivers.
// Each action takes a lease on the one switch it changes, for that action
// only, and journals its undo in the orchestrator's undo journal before
// the change: the undo is marked done once the change is complete (the
// change is meant to last), carried out at once when the change fails,
// and left for `testbed lab recover` (or the device's next run) when the
// monitor dies in the middle. It is not safe for concurrent use.
type Actor struct {
	Inv      *inventory.Inventory
	Store    o.LeaseStore
	Switches map[string]SwitchActor
	// Owner and RunID name the monitor in the leases and journals it
	// writes.
	Owner, RunID string
	// Dummies is LinkGuardian's dummy_pkt_max_count; Blocking selects the
	// ordered mode (blocking_mode 1, the paper's default, §3.4).
	Dummies  int
	Blocking bool
	// Timeout bounds each action, lease to release (0: 30 s).
	Timeout time.Duration
	Log     *slog.Logger

	// Run, when set, is the run the monitor acts within (a rehearsal):
	// the run holds the switches' leases already, and each undo goes on
	// its undo stack (rc.Journal), so the run's end puts the switch back
	// as found. Store is not used then.
	Run *o.RunContext

	// crash, when set (tests), is asked after each change step; an error
	// from it makes the action stop as a dying process would: journal
	// left pending, lease released, nothing put back.
	crash func(step string) error
}

type step struct {
	name   string
	undo   o.UndoRecord
	change func(ctx context.Context) error
	revert func(ctx context.Context) error
}

// errCrash marks an action stopped by the crash hook.
var errCrash = errors.New("monitor: action stopped (simulated crash)")

// Act carries out a decision on direction dir. It returns the outcome and,
// for a failed or deferred action, why.
func (a *Actor) Act(ctx context.Context, d Decision, dir Direction) (string, error) {
	switch d.Action {
	case ActProposeDown, ActRefuseDown, ActWithdrawDown, ActProposeFEC:
		return OutcomeProposed, nil
	}
	sw := a.Switches[d.Sender]
	if sw == nil {
		return OutcomeFailed, fmt.Errorf("%s: no switch driver to act through", d.Sender)
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if a.Run != nil {
		return a.actInRun(ctx, sw, d, dir)
	}
	return a.actLeased(ctx, sw, d, dir)
}

// actLeased carries out a decision outside a run: it leases the switch,
// puts back what a dead run (or a monitor killed mid-action) left, and
// applies the steps under an undo journal of its own.
func (a *Actor) actLeased(ctx context.Context, sw SwitchActor, d Decision, dir Direction) (string, error) {
	dev, ok := a.Inv.Device(d.Sender)
	if !ok {
		return OutcomeFailed, fmt.Errorf("%s: not in inventory %s", d.Sender, a.Inv.Path)
	}

	// The lease store's round trip and the switch's: the release and the
	// put-backs after a failure have deadlines derived from them.
	var storeRTT, swRTT o.RoundTrip
	var h o.HeldLeases
	err := storeRTT.Measure(func() (err error) {
		h, err = a.Store.Acquire(ctx, o.LeaseRequest{Lab: a.Inv.Name, Owner: a.Owner, RunID: a.RunID,
			Devices: []o.LeaseTarget{{Device: dev.Name, Address: dev.Address, Serial: dev.Options["serial"]}}})
		return err
	})
	var held *o.LeaseHeldError
	if errors.As(err, &held) {
		return OutcomeDeferred, fmt.Errorf("%s: leased by %s (run %s): %s waits", d.Sender, held.Held.Owner, held.Held.RunID, d.Action)
	}
	if err != nil {
		return OutcomeFailed, fmt.Errorf("%s: lease: %w", d.Sender, err)
	}
	defer func() {
		if err := storeRTT.Cleanup(ctx, h.Release); err != nil {
			a.log().Warn("monitor: release lease", "device", d.Sender, "err", err)
		}
	}()
	var ls *o.Lease
	for _, l := range h.Leases() {
		if l.Key == o.NormalizeAddress(dev.Address) {
			ls = l // the journal lives with the address lease
		}
	}
	if ls == nil {
		return OutcomeFailed, fmt.Errorf("%s: no lease on its address %s", d.Sender, dev.Address)
	}
	// What a dead run (or a monitor killed mid-action) left is put back
	// before this action touches the switch, as a run would.
	if rec, err := o.RecoverHeld(ctx, dev, h, ls, nil, 0); err != nil {
		return OutcomeFailed, fmt.Errorf("%s: replay the undo journal found: %w", d.Sender, err)
	} else if len(rec) > 0 {
		a.log().Info("monitor: replayed an undo journal left behind", "device", d.Sender, "undos", len(rec))
	}
	var steps []step
	err = swRTT.Measure(func() (err error) { steps, err = a.plan(ctx, sw, d, dir); return err })
	if err != nil {
		return OutcomeFailed, err
	}
	j, err := h.OpenJournal(ctx, ls, a.RunID)
	if err != nil {
		return OutcomeFailed, fmt.Errorf("%s: %w", d.Sender, err)
	}
	return a.applyJournaled(ctx, j, steps, d.Sender, &swRTT)
}

// applyJournaled applies the steps, each undo appended to the journal
// before its change; on a failure it puts back the changes made, newest
// first, and closes the journal (a simulated crash leaves it pending).
// swRTT is the switch's round trip, which the put-backs' deadlines derive
// from.
func (a *Actor) applyJournaled(ctx context.Context, j o.RunJournal, steps []step, sender string, swRTT *o.RoundTrip) (string, error) {
	var seqs []int
	var done []step
	fail := func(cause error) (string, error) {
		if errors.Is(cause, errCrash) {
			j.Close() // pending undos stay on disk
			return OutcomeFailed, cause
		}
		return OutcomeFailed, putBack(ctx, j, done, seqs, swRTT, cause)
	}
	for _, s := range steps {
		seq, err := j.Append(s.undo)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", sender, err))
		}
		seqs = append(seqs, seq)
		if err := s.change(ctx); err != nil {
			return fail(fmt.Errorf("%s: %s: %w", sender, s.name, err))
		}
		done = append(done, s)
		if a.crash != nil {
			if err := a.crash(s.name); err != nil {
				return fail(err)
			}
		}
	}
	for _, s := range seqs {
		if err := j.Done(s); err != nil {
			return OutcomeFailed, fmt.Errorf("%s: %w", sender, err)
		}
	}
	if _, err := j.Close(); err != nil {
		return OutcomeFailed, fmt.Errorf("%s: %w", sender, err)
	}
	return OutcomeDone, nil
}

// putBack reverts the steps done, newest first, marks their undos done
// when every one went back, closes the journal and says how cause ended.
func putBack(ctx context.Context, j o.RunJournal, done []step, seqs []int, swRTT *o.RoundTrip, cause error) error {
	var errs []error
	for i := len(done) - 1; i >= 0; i-- {
		if err := swRTT.Cleanup(ctx, done[i].revert); err != nil {
			errs = append(errs, fmt.Errorf("put back (%s): %w", done[i].undo.Desc, err))
			continue
		}
	}
	if len(errs) == 0 {
		for _, s := range seqs {
			j.Done(s)
		}
	}
	if _, err := j.Close(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w; and %w: the undo journal keeps them for testbed lab recover", cause, errors.Join(errs...))
	}
	return fmt.Errorf("%w (put back as found)", cause)
}

// actInRun carries out a decision within a run that holds the switch:
// each step's undo goes on the run's stack before the change.
func (a *Actor) actInRun(ctx context.Context, sw SwitchActor, d Decision, dir Direction) (string, error) {
	steps, err := a.plan(ctx, sw, d, dir)
	if err != nil {
		return OutcomeFailed, err
	}
	for _, s := range steps {
		if err := a.Run.Journal(d.Sender, o.Undo{Kind: s.undo.Kind, Desc: s.undo.Desc, Found: s.undo.Found, Args: s.undo.Args}); err != nil {
			return OutcomeFailed, err
		}
		if err := s.change(ctx); err != nil {
			return OutcomeFailed, fmt.Errorf("%s: %s: %w", d.Sender, s.name, err)
		}
	}
	return OutcomeDone, nil
}

func (a *Actor) log() *slog.Logger {
	if a.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Log
}

// plan reads what the switch holds now and returns the steps of the
// decision, each with the undo that puts back what it found.
func (a *Actor) plan(ctx context.Context, sw SwitchActor, d Decision, dir Direction) ([]step, error) {
	key := map[string]int64{"egress_port": int64(dir.TxPort)}
	found := func(table string) (*p4switch.Entry, error) {
		es, err := sw.Entries(ctx, table)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Sender, err)
		}
		for i := range es {
			if es[i].Key["egress_port"] == int64(dir.TxPort) {
				return &es[i], nil
			}
		}
		return nil, nil
	}
	// setEntry replaces the port's entry of a table by e (nil: removes
	// it), undone by putting back the entry found.
	setEntry := func(table string, e *p4switch.Entry) (step, error) {
		f, err := found(table)
		if err != nil {
			return step{}, err
		}
		desc := fmt.Sprintf("remove the %s entry of port %d on %s", table, dir.TxPort, d.Sender)
		if f != nil {
			desc = fmt.Sprintf("restore the %s entry of port %d found on %s", table, dir.TxPort, d.Sender)
		}
		put := func(ctx context.Context, want *p4switch.Entry) error {
			if err := sw.DeleteEntry(ctx, table, key); err != nil && !p4switch.IsNotFound(err) {
				return err
			}
			if want != nil {
				return sw.AddEntry(ctx, table, *want)
			}
			return nil
		}
		return step{
			name:   "set " + table,
			undo:   undoRecord(d.Sender, o.UndoTofinoEntry, desc, f, map[string]any{"table": table, "key": key, "entry": f}),
			change: func(ctx context.Context) error { return put(ctx, e) },
			revert: func(ctx context.Context) error { return put(ctx, f) },
		}, nil
	}
	var steps []step
	add := func(table string, e *p4switch.Entry) error {
		s, err := setEntry(table, e)
		if err == nil {
			steps = append(steps, s)
		}
		return err
	}
	retx := &p4switch.Entry{Key: key, Action: lg.ActionRetxCopies, Data: map[string]int64{"num_copies": int64(d.Copies)}}
	switch d.Action {
	case ActEnableLG:
		blocking := int64(0)
		if a.Blocking {
			blocking = 1
		}
		// Copies first: a protected port must find its multicast group.
		if err := add(lg.TableRetxMcast, retx); err != nil {
			return nil, err
		}
		if err := add(lg.TableLinkProtect, &p4switch.Entry{Key: key, Action: lg.ActionProtect,
			Data: map[string]int64{"dummy_pkt_max_count": int64(a.Dummies), "blocking_mode": blocking}}); err != nil {
			return nil, err
		}
	case ActRaiseCopies:
		if err := add(lg.TableRetxMcast, retx); err != nil {
			return nil, err
		}
	case ActDisableLG:
		if err := add(lg.TableLinkProtect, nil); err != nil {
			return nil, err
		}
		if err := add(lg.TableRetxMcast, nil); err != nil {
			return nil, err
		}
	case ActDisableLink:
		ps, err := sw.PortStatus(ctx, dir.TxPort)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Sender, err)
		}
		fec := fecName(ps.FEC)
		if ps.SpeedGbps == 0 || fec == "" {
			return nil, fmt.Errorf("%s: port %d reports speed %q FEC %q: cannot note how to add it back", d.Sender, dir.TxPort, ps.Speed, ps.FEC)
		}
		args := map[string]any{"port": dir.TxPort, "gbps": ps.SpeedGbps, "fec": fec}
		steps = append(steps, step{
			name: fmt.Sprintf("delete port %d", dir.TxPort),
			undo: undoRecord(d.Sender, o.UndoTofinoAddPort, fmt.Sprintf("add back port %d (%d Gb/s, FEC %s) of link %s on %s", dir.TxPort, ps.SpeedGbps, fec, d.Link, d.Sender),
				ps, args),
			change: func(ctx context.Context) error { return sw.DeletePort(ctx, dir.TxPort) },
			revert: func(ctx context.Context) error {
				if as, ok := sw.(interface {
					AddPort(ctx context.Context, devPort, gbps int, fec string) error
				}); ok {
					return as.AddPort(ctx, dir.TxPort, ps.SpeedGbps, fec)
				}
				return fmt.Errorf("%s: driver cannot add a port back", d.Sender)
			},
		})
	default:
		return nil, fmt.Errorf("monitor: no action for %q", d.Action)
	}
	return steps, nil
}

// fecName maps BF Runtime's FEC type to the driver's name (RS is the same
// BF_FEC_TYP_RS for rs528 and rs544, so either adds it back).
func fecName(bf string) string {
	switch bf {
	case "BF_FEC_TYP_NONE":
		return "none"
	case "BF_FEC_TYP_FC", "BF_FEC_TYP_FIRECODE":
		return "fc"
	case "BF_FEC_TYP_RS", "BF_FEC_TYP_REED_SOLOMON":
		return "rs528"
	}
	return ""
}

// undoRecord is an undo as the orchestrator's journal holds it. found and
// args are entries, port states and maps of numbers and strings: they
// always marshal.
func undoRecord(device, kind, desc string, found, args any) o.UndoRecord {
	u := o.UndoRecord{Device: device, Kind: kind, Desc: desc}
	u.Args, _ = json.Marshal(args)
	if found != nil && !isNilEntry(found) {
		u.Found, _ = json.Marshal(found)
	}
	return u
}

func isNilEntry(v any) bool {
	e, ok := v.(*p4switch.Entry)
	return ok && e == nil
}

// Carry carries out decisions through a (nil: a dry run, nothing
// carried out) and sets each one's outcome. A decision that failed or
// waits for a lease is forgotten by the policy, so the next poll decides
// it again.
func (m *Monitor) Carry(ctx context.Context, a *Actor, ds []Decision) {
	for i := range ds {
		d := &ds[i]
		if a == nil {
			d.Outcome = OutcomeDryRun
			continue
		}
		dir, ok := m.direction(d.Link, d.Direction)
		if !ok {
			d.Outcome, d.Error = OutcomeFailed, fmt.Sprintf("no direction %s %s", d.Link, d.Direction)
			continue
		}
		out, err := a.Act(ctx, *d, dir)
		d.Outcome = out
		if err != nil {
			d.Error = err.Error()
		}
		if out == OutcomeFailed || out == OutcomeDeferred {
			if m.policy != nil {
				m.policy.Forget(*d)
			}
			m.log.Warn("monitor: action not carried out", "link", d.Link, "direction", d.Direction, "action", string(d.Action), "outcome", out, "err", err)
		}
	}
}

func (m *Monitor) direction(link, direction string) (Direction, bool) {
	for _, d := range m.dirs {
		if d.Link == link && d.Direction == direction {
			return d, true
		}
	}
	return Direction{}, false
}
