package orchestrator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"syscall"
	"time"
)

// Lease is a claim on one device for one run, kept as a file under the
// state directory so that two runs (from any process on this host) cannot
// drive the same instrument at once. Leases expire (labgrid's lesson on
// stale locks): a lease whose process is gone or whose TTL has passed is
// taken over with a warning.
type Lease struct {
	Device  string    `json:"device"`
	Address string    `json:"address"`
	Lab     string    `json:"lab"`
	Owner   string    `json:"owner"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	RunID   string    `json:"run_id"`
	Start   time.Time `json:"start"`
	Renewed time.Time `json:"renewed"`
	TTL     Duration  `json:"ttl"`

	path string
}

// Duration marshals as a Go duration string.
type Duration time.Duration

// MarshalJSON writes "2h0m0s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "2h0m0s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// LeaseHeldError says who holds a device.
type LeaseHeldError struct{ Held Lease }

func (e *LeaseHeldError) Error() string {
	h := e.Held
	return fmt.Sprintf("device %s (%s) is leased by %s (pid %d on %s, run %s) since %s, lease valid until %s",
		h.Device, h.Address, h.Owner, h.PID, h.Host, h.RunID, h.Start.Format(time.RFC3339),
		h.Renewed.Add(time.Duration(h.TTL)).Format(time.RFC3339))
}

// Leaser takes and releases leases in a state directory.
type Leaser struct {
	Dir string // <state>/leases
	TTL time.Duration
	Log *slog.Logger
	Now func() time.Time
	// alive reports whether a pid on this host still runs.
	alive func(pid int) bool
}

// NewLeaser keeps leases under stateDir/leases.
func NewLeaser(stateDir string, ttl time.Duration, log *slog.Logger) *Leaser {
	if ttl <= 0 {
		ttl = 2 * time.Hour
	}
	return &Leaser{Dir: filepath.Join(stateDir, "leases"), TTL: ttl, Log: log, Now: time.Now, alive: pidAlive}
}

func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// leaseKey names the lease file: readable lab and device names plus a hash
// of the address, so two labs that both call their attenuator "voa1" do not
// collide, and the same instrument reached under one name does.
func leaseKey(lab, device, address string) string {
	h := sha256.Sum256([]byte(address))
	return unsafeChars.ReplaceAllString(lab+"-"+device, "_") + "-" + hex.EncodeToString(h[:4]) + ".json"
}

// Acquire takes leases on all devices or none.
func (l *Leaser) Acquire(lab, owner, runID string, devices map[string]string) ([]*Lease, error) {
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("lease directory: %w", err)
	}
	host, _ := os.Hostname()
	var got []*Lease
	names := make([]string, 0, len(devices))
	for d := range devices {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, dev := range names {
		now := l.Now()
		ls := &Lease{Device: dev, Address: devices[dev], Lab: lab, Owner: owner, Host: host, PID: os.Getpid(),
			RunID: runID, Start: now, Renewed: now, TTL: Duration(l.TTL), path: filepath.Join(l.Dir, leaseKey(lab, dev, devices[dev]))}
		if err := l.take(ls); err != nil {
			l.Release(got)
			return nil, err
		}
		got = append(got, ls)
	}
	return got, nil
}

func (l *Leaser) take(ls *Lease) error {
	data, _ := json.MarshalIndent(ls, "", "  ")
	for attempt := 0; attempt < 3; attempt++ {
		f, err := os.OpenFile(ls.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, werr := f.Write(append(data, '\n'))
			cerr := f.Close()
			if werr != nil || cerr != nil {
				os.Remove(ls.path)
				return fmt.Errorf("write lease %s: %v", ls.path, errors.Join(werr, cerr))
			}
			return nil
		}
		if !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("lease %s: %w", ls.path, err)
		}
		held, rerr := readLease(ls.path)
		if rerr != nil {
			// A half-written lease from a crash: treat as stale.
			l.warn("removing unreadable lease", "path", ls.path, "err", rerr)
			os.Remove(ls.path)
			continue
		}
		if reason := l.stale(held); reason != "" {
			l.warn("taking over stale lease", "device", held.Device, "held_by", held.Owner, "pid", held.PID, "run", held.RunID, "reason", reason)
			os.Remove(ls.path)
			continue
		}
		return &LeaseHeldError{Held: *held}
	}
	return fmt.Errorf("lease %s: could not take it after repeated takeovers", ls.path)
}

func (l *Leaser) stale(h *Lease) string {
	if exp := h.Renewed.Add(time.Duration(h.TTL)); l.Now().After(exp) {
		return "expired at " + exp.Format(time.RFC3339)
	}
	host, _ := os.Hostname()
	if h.Host == host && !l.alive(h.PID) {
		return fmt.Sprintf("process %d is gone", h.PID)
	}
	return ""
}

// Renew pushes the expiry of held leases forward (long runs call it
// periodically).
func (l *Leaser) Renew(leases []*Lease) {
	for _, ls := range leases {
		ls.Renewed = l.Now()
		data, _ := json.MarshalIndent(ls, "", "  ")
		tmp := ls.path + ".tmp"
		if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err == nil {
			os.Rename(tmp, ls.path)
		}
	}
}

// Release removes leases this process holds (never someone else's).
func (l *Leaser) Release(leases []*Lease) {
	for _, ls := range leases {
		held, err := readLease(ls.path)
		if err == nil && held.PID == ls.PID && held.RunID == ls.RunID {
			os.Remove(ls.path)
		}
	}
}

func readLease(path string) (*Lease, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ls Lease
	if err := json.Unmarshal(b, &ls); err != nil {
		return nil, err
	}
	ls.path = path
	return &ls, nil
}

func (l *Leaser) warn(msg string, args ...any) {
	if l.Log != nil {
		l.Log.Warn(msg, args...)
	}
}
