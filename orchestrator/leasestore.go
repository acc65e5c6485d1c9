package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// LeaseStore is where a run's device leases live: files under the state
// directory on one host (FileLeases, the embedded default) or etcd shared by
// many hosts (EtcdLeases). Both take all of a run's devices or none, key
// them by the physical device (DeviceKey), and say who holds a refused one.
type LeaseStore interface {
	// Acquire takes leases on every device or none. Without wait a held
	// device is refused at once with a *LeaseHeldError; with wait the
	// run queues for it (in order of arrival where the store can) until
	// ctx ends.
	Acquire(ctx context.Context, req LeaseRequest) (HeldLeases, error)
	// List returns the leases held now, and who waits for each device.
	List(ctx context.Context) ([]LeaseStatus, error)
	// ForceRelease takes a device's lease from its holder (an operator's
	// act, for a holder known to be gone), recording who did it, and
	// returns the lease it removed (nil when none was held).
	ForceRelease(ctx context.Context, key, by string) (*Lease, error)
	Close() error
}

// LeaseRequest is what a run asks a LeaseStore for.
type LeaseRequest struct {
	Lab, Owner, RunID string
	Devices           []LeaseTarget
	Wait              bool
}

// HeldLeases is a run's claim on its devices.
type HeldLeases interface {
	Leases() []*Lease
	// Lost is closed when the claim can no longer be trusted (the store
	// forgot the holder: its etcd session expired in a partition, or its
	// lease file was taken over). A holder that sees it stops touching
	// the devices: fencing.
	Lost() <-chan struct{}
	// Release gives the devices back.
	Release(ctx context.Context) error

	// PendingJournal returns what a device's undo journal still holds
	// from earlier runs (nothing when there is no journal).
	PendingJournal(ctx context.Context, ls *Lease) ([]PendingUndo, error)
	// MarkReplayed records that an earlier run's undo was carried out.
	MarkReplayed(ctx context.Context, ls *Lease, u PendingUndo) error
	// ClearJournal removes a journal whose undos were all replayed.
	ClearJournal(ctx context.Context, ls *Lease) error
	// OpenJournal starts this run's undo journal of a device.
	OpenJournal(ctx context.Context, ls *Lease, runID string) (RunJournal, error)
}

// RunJournal is the undo journal a run appends to (journal.go's file
// Journal, or EtcdJournal).
type RunJournal interface {
	Append(UndoRecord) (int, error)
	Done(seq int) error
	// Close reports whether nothing is left to undo (the journal is gone).
	Close() (removed bool, err error)
}

// LeaseStatus is one device's lease as a listing shows it.
type LeaseStatus struct {
	Key     string  `json:"key"`
	Holder  *Lease  `json:"holder"`
	Waiters []Lease `json:"waiters"`
}

// FileLeases is the file backend behind the LeaseStore interface.
type FileLeases struct {
	L *Leaser
	// Poll is how often a waiting Acquire asks again (file leases have no
	// queue: waiters are not served in order of arrival).
	Poll time.Duration
}

type fileHeld struct {
	l      *Leaser
	leases []*Lease
	lost   chan struct{}
	stop   chan struct{}
	done   chan struct{}
}

// Acquire implements LeaseStore, renewing the files at a third of the TTL
// until released.
func (f *FileLeases) Acquire(ctx context.Context, req LeaseRequest) (HeldLeases, error) {
	poll := f.Poll
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	for {
		leases, err := f.L.Acquire(req.Lab, req.Owner, req.RunID, req.Devices)
		var held *LeaseHeldError
		if err == nil {
			h := &fileHeld{l: f.L, leases: leases, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
			go h.renew()
			return h, nil
		}
		if !req.Wait || !errors.As(err, &held) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for %s held by %s (run %s): %w", held.Held.Device, held.Held.Owner, held.Held.RunID, context.Cause(ctx))
		case <-time.After(poll):
		}
	}
}

func (h *fileHeld) renew() {
	defer close(h.done)
	t := time.NewTicker(h.l.TTL / 3)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if lost := h.l.Renew(h.leases); lost > 0 {
				select {
				case <-h.lost:
				default:
					close(h.lost)
				}
			}
		case <-h.stop:
			return
		}
	}
}

func (h *fileHeld) Leases() []*Lease      { return h.leases }
func (h *fileHeld) Lost() <-chan struct{} { return h.lost }
func (h *fileHeld) Release(context.Context) error {
	select {
	case <-h.stop:
		return nil
	default:
	}
	close(h.stop)
	<-h.done
	h.l.Release(h.leases)
	return nil
}

func (h *fileHeld) PendingJournal(_ context.Context, ls *Lease) ([]PendingUndo, error) {
	p, err := ReadJournal(ls.JournalPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return p, err
}

func (h *fileHeld) MarkReplayed(_ context.Context, ls *Lease, u PendingUndo) error {
	return markDone(ls.JournalPath(), u)
}

func (h *fileHeld) ClearJournal(_ context.Context, ls *Lease) error {
	if err := os.Remove(ls.JournalPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove undo journal: %w", err)
	}
	return nil
}

func (h *fileHeld) OpenJournal(_ context.Context, ls *Lease, runID string) (RunJournal, error) {
	return CreateJournal(ls.JournalPath(), runID, ls.Key, h.l.Now)
}

// List implements LeaseStore: the lease files (file leases have no waiters).
func (f *FileLeases) List(context.Context) ([]LeaseStatus, error) {
	ls, err := f.L.List()
	if err != nil {
		return nil, err
	}
	out := []LeaseStatus{}
	for _, l := range ls {
		out = append(out, LeaseStatus{Key: l.Key, Holder: l, Waiters: []Lease{}})
	}
	return out, nil
}

// ForceRelease implements LeaseStore: the lease file goes (its undo
// journal stays, for the next holder to replay) and a line is appended to
// <leases>/released.log.
func (f *FileLeases) ForceRelease(_ context.Context, key, by string) (*Lease, error) {
	unlock, err := f.L.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	path := filepath.Join(f.L.Dir, leaseFile(key))
	held, err := readLease(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read lease %s: %w", path, err)
	}
	rec, _ := json.Marshal(map[string]any{"time": f.L.Now().UTC(), "key": key, "by": by, "holder": held})
	lf, err := os.OpenFile(filepath.Join(f.L.Dir, "released.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o664)
	if err != nil {
		return nil, fmt.Errorf("record forced release: %w", err)
	}
	_, werr := lf.Write(append(rec, '\n'))
	if err := errors.Join(werr, lf.Sync(), lf.Close()); err != nil {
		return nil, fmt.Errorf("record forced release: %w", err)
	}
	if err := os.Remove(path); err != nil {
		return nil, fmt.Errorf("release %s: %w", key, err)
	}
	return held, nil
}

// Close implements LeaseStore.
func (f *FileLeases) Close() error { return nil }
