package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"time"

	"testbed/inventory"
	"testbed/results"
	"testbed/transport"
)

// Recovered is one journaled undo replayed after the run that wrote it
// died, and its outcome.
type Recovered struct {
	Device  string // the device's name in this inventory
	FromRun string
	Desc    string
	Kind    string
	Err     error
}

// CleanupAction is the record of it in a bundle's manifest.
func (r Recovered) CleanupAction() results.CleanupAction {
	ca := results.CleanupAction{Action: r.Desc, Device: r.Device, OK: r.Err == nil, FromRun: r.FromRun}
	if r.Err != nil {
		ca.Error = r.Err.Error()
	}
	return ca
}

// RecoverDevice replays what a device's undo journal still holds, newest
// first, through a freshly opened driver of the device, each undo bounded
// by per. It marks each undo done in the journal as it succeeds, and
// removes the journal when nothing is left in it. An undo that fails stays
// in the journal (and the error says so) so it can be tried again. A
// journal that does not exist has nothing to replay.
func RecoverDevice(ctx context.Context, d *inventory.Device, journal string, tr TranscriptFunc, per time.Duration) ([]Recovered, error) {
	pending, err := ReadJournal(journal)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: read undo journal: %w", d.Name, err)
	}
	mark := func(u PendingUndo) error { return markDone(journal, u) }
	out, err := replayPending(ctx, d, pending, mark, tr, per)
	if err != nil {
		return out, fmt.Errorf("%w; its journal %s keeps them", err, journal)
	}
	if err := os.Remove(journal); err != nil && !errors.Is(err, os.ErrNotExist) {
		return out, fmt.Errorf("%s: remove undo journal: %w", d.Name, err)
	}
	return out, nil
}

// RecoverHeld is RecoverDevice for a device's journal wherever its lease
// store keeps it (a file beside the lease, or etcd).
func RecoverHeld(ctx context.Context, d *inventory.Device, h HeldLeases, ls *Lease, tr TranscriptFunc, per time.Duration) ([]Recovered, error) {
	pending, err := h.PendingJournal(ctx, ls)
	if err != nil {
		return nil, fmt.Errorf("%s: read undo journal: %w", d.Name, err)
	}
	mark := func(u PendingUndo) error { return h.MarkReplayed(ctx, ls, u) }
	out, err := replayPending(ctx, d, pending, mark, tr, per)
	if err != nil {
		return out, err
	}
	if err := h.ClearJournal(ctx, ls); err != nil {
		return out, fmt.Errorf("%s: %w", d.Name, err)
	}
	return out, nil
}

// replayPending carries out pending undos newest first through a freshly
// opened driver, marking each done as it succeeds.
func replayPending(ctx context.Context, d *inventory.Device, pending []PendingUndo, mark func(PendingUndo) error, tr TranscriptFunc, per time.Duration) ([]Recovered, error) {
	if len(pending) == 0 {
		return nil, nil
	}
	if per <= 0 {
		per = 30 * time.Second
	}
	var trs *transport.Transcript
	if tr != nil {
		trs = tr(d.Name)
	}
	od, err := OpenDevice(ctx, d, trs)
	if err != nil {
		var out []Recovered
		for i := len(pending) - 1; i >= 0; i-- {
			out = append(out, Recovered{Device: d.Name, FromRun: pending[i].RunID, Desc: pending[i].Desc, Kind: pending[i].Kind, Err: err})
		}
		return out, fmt.Errorf("%s: undo what run %s left: %w", d.Name, pending[0].RunID, err)
	}
	defer od.closer.Close()
	var out []Recovered
	var failed int
	for i := len(pending) - 1; i >= 0; i-- {
		u := pending[i]
		uctx, cancel := context.WithTimeout(ctx, undoBound(ctx, od, u.UndoRecord, per))
		err := runUndo(uctx, od, u.UndoRecord)
		cancel()
		if err == nil {
			if merr := mark(u); merr != nil {
				err = merr
			}
		}
		if err != nil {
			failed++
		}
		out = append(out, Recovered{Device: d.Name, FromRun: u.RunID, Desc: u.Desc, Kind: u.Kind, Err: err})
	}
	if failed > 0 {
		return out, fmt.Errorf("%s: %d of %d undo(s) left by run %s failed", d.Name, failed, len(pending), pending[0].RunID)
	}
	return out, nil
}

// RecoverLab leases every device of an inventory that is not leased by a
// live run, replays the undo journals dead runs left for them, and releases
// them. Devices leased by a live run are reported, not touched.
func RecoverLab(ctx context.Context, inv *inventory.Inventory, stateDir string, log func(string, ...any)) (restored []Recovered, skipped []string, err error) {
	return RecoverLabIn(ctx, inv, &FileLeases{L: NewLeaser(stateDir, time.Minute, nil)}, log)
}

// RecoverLabIn is RecoverLab on any lease store (files, or etcd, where the
// journals live in etcd with the leases).
func RecoverLabIn(ctx context.Context, inv *inventory.Inventory, store LeaseStore, log func(string, ...any)) (restored []Recovered, skipped []string, err error) {
	owner := "unknown"
	if u, err := user.Current(); err == nil {
		owner = u.Username
	}
	runID := results.NewRunID(time.Now(), "recover")
	var errs []error
	for _, name := range inv.DeviceNames() {
		d, _ := inv.Device(name)
		h, err := store.Acquire(ctx, LeaseRequest{Lab: inv.Name, Owner: owner, RunID: runID, Devices: []LeaseTarget{{Device: name, Address: d.Address, Serial: d.Options["serial"]}}})
		var held *LeaseHeldError
		if errors.As(err, &held) {
			skipped = append(skipped, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		for _, ls := range h.Leases() {
			if ls.Key != NormalizeAddress(d.Address) {
				continue // the journal lives with the address lease
			}
			if ls.TookOver != nil && log != nil {
				log("took over the lease of a dead run", "device", name, "run", ls.TookOver.RunID, "pid", ls.TookOver.PID)
			}
			rec, err := RecoverHeld(ctx, d, h, ls, nil, 0)
			restored = append(restored, rec...)
			if err != nil {
				errs = append(errs, err)
			}
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if err := h.Release(rctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		cancel()
	}
	return restored, skipped, errors.Join(errs...)
}
