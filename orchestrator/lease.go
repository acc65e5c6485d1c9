package orchestrator

import (
	"crypto/rand"
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
	"strings"
	"syscall"
	"time"

	"testbed/transport"
)

// Lease is a claim on one physical device for one run, kept as a file under
// the state directory so that two runs (from any process or user on this
// host) cannot drive the same instrument at once. The file is named after
// the device itself (its normalised address, or its serial number where the
// inventory states it), never after the inventory's names: two inventories
// that call one instrument by different names still meet on one lease.
// Leases expire (labgrid's lesson on stale locks): a lease whose process is
// gone or whose TTL has passed is taken over with a warning, and the undo
// journal the dead run left beside it is replayed first (journal.go).
type Lease struct {
	Key     string    `json:"key"`
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
	// TookOver is the lease this one replaced (its holder died or its TTL
	// passed), nil for a free device.
	TookOver *Lease `json:"-"`
}

// JournalPath is where the undo journal of this lease's device lives.
func (ls *Lease) JournalPath() string { return strings.TrimSuffix(ls.path, ".json") + ".journal" }

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
	return fmt.Sprintf("device %s (%s) is leased by %s (pid %d on %s, run %s, lab %q, device %s there) since %s, lease valid until %s",
		h.Key, h.Address, h.Owner, h.PID, h.Host, h.RunID, h.Lab, h.Device, h.Start.Format(time.RFC3339),
		h.Renewed.Add(time.Duration(h.TTL)).Format(time.RFC3339))
}

// LeaseTarget is one device a run wants: its inventory name (for messages),
// its address, and its serial number when the inventory states it.
type LeaseTarget struct {
	Device  string
	Address string
	Serial  string
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

// DeviceKey names a physical device: "serial:<serial>" where the serial is
// known, else its address normalised (scheme and host in lower case, the
// scheme's default port made explicit, "localhost" as 127.0.0.1, IP
// addresses in canonical form, the SSH user, URL path and serial-line
// options dropped, a serial device path with its symbolic links resolved).
// Two spellings of one instrument give one key.
func DeviceKey(address, serial string) string {
	if s := strings.TrimSpace(serial); s != "" {
		return "serial:" + s
	}
	return NormalizeAddress(address)
}

// NormalizeAddress is the address part of DeviceKey
// (transport.NormalizeAddress).
func NormalizeAddress(address string) string { return transport.NormalizeAddress(address) }

// leaseFile names the lease file of a device key: a readable form of the
// key plus a hash of it, so the name is a safe file name and still unique.
func leaseFile(key string) string {
	h := sha256.Sum256([]byte(key))
	readable := strings.Trim(unsafeChars.ReplaceAllString(key, "_"), "_")
	if len(readable) > 60 {
		readable = readable[:60]
	}
	return readable + "-" + hex.EncodeToString(h[:6]) + ".json"
}

// Acquire takes leases on all devices or none. A device is keyed by its
// address and, where its serial is given, by its serial too.
func (l *Leaser) Acquire(lab, owner, runID string, devices []LeaseTarget) ([]*Lease, error) {
	if err := makeShared(l.Dir); err != nil {
		return nil, fmt.Errorf("lease directory %s: %w", l.Dir, err)
	}
	host, _ := os.Hostname()
	type want struct {
		key string
		t   LeaseTarget
	}
	var wants []want
	seen := map[string]string{}
	for _, t := range devices {
		keys := []string{NormalizeAddress(t.Address)}
		if t.Serial != "" {
			keys = append(keys, DeviceKey("", t.Serial))
		}
		for _, k := range keys {
			if other, dup := seen[k]; dup {
				if other == t.Device {
					continue
				}
				return nil, &InputError{Msg: fmt.Sprintf("devices %s and %s are one physical device (%s): the inventory names it twice", other, t.Device, k)}
			}
			seen[k] = t.Device
			wants = append(wants, want{k, t})
		}
	}
	sort.Slice(wants, func(i, j int) bool { return wants[i].key < wants[j].key })
	var got []*Lease
	for _, w := range wants {
		now := l.Now()
		ls := &Lease{Key: w.key, Device: w.t.Device, Address: w.t.Address, Lab: lab, Owner: owner, Host: host, PID: os.Getpid(),
			RunID: runID, Start: now, Renewed: now, TTL: Duration(l.TTL), path: filepath.Join(l.Dir, leaseFile(w.key))}
		if err := l.take(ls); err != nil {
			l.Release(got)
			return nil, err
		}
		got = append(got, ls)
	}
	return got, nil
}

// writeTemp writes a lease to a new temporary file in the lease directory,
// synced, and returns its path.
func (l *Leaser) writeTemp(ls *Lease) (string, error) {
	data, err := json.MarshalIndent(ls, "", "  ")
	if err != nil {
		return "", err
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(l.Dir, ".tmp-"+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(append(data, '\n'))
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// take creates the lease file atomically: the lease is written whole to a
// temporary file and hard-linked to its name, which fails if the name
// exists. A reader never sees a half-written lease. A stale lease is
// replaced under the directory's lock, after reading it again, so two runs
// taking over one dead lease cannot both win.
func (l *Leaser) take(ls *Lease) error {
	tmp, err := l.writeTemp(ls)
	if err != nil {
		return fmt.Errorf("write lease for %s in %s: %w", ls.Device, l.Dir, err)
	}
	defer os.Remove(tmp)
	for attempt := 0; attempt < 3; attempt++ {
		err := os.Link(tmp, ls.path)
		if err == nil {
			syncDir(l.Dir)
			return nil
		}
		if !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("lease %s for %s: %w", ls.path, ls.Device, err)
		}
		held, rerr := readLease(ls.path)
		if errors.Is(rerr, os.ErrNotExist) {
			continue // released meanwhile
		}
		if rerr != nil {
			return fmt.Errorf("lease %s for %s (%s) cannot be read (%v): if no run holds this device, remove the file", ls.path, ls.Device, ls.Key, rerr)
		}
		reason := l.stale(held)
		if reason == "" {
			return &LeaseHeldError{Held: *held}
		}
		took, err := l.takeOver(ls, tmp, held)
		if err != nil {
			return err
		}
		if took {
			l.warn("taking over stale lease", "device", ls.Device, "key", ls.Key, "held_by", held.Owner, "pid", held.PID, "run", held.RunID, "reason", reason)
			ls.TookOver = held
			return nil
		}
	}
	return fmt.Errorf("lease %s for %s: could not take it after repeated takeovers", ls.path, ls.Device)
}

// takeOver replaces a stale lease with ls if the file still holds exactly
// that stale lease; it reports whether it did.
func (l *Leaser) takeOver(ls *Lease, tmp string, stale *Lease) (bool, error) {
	unlock, err := l.lock()
	if err != nil {
		return false, err
	}
	defer unlock()
	now, err := readLease(ls.path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil || now.RunID != stale.RunID || now.PID != stale.PID || !now.Renewed.Equal(stale.Renewed) {
		return false, nil // someone else moved first: look again
	}
	if err := os.Rename(tmp, ls.path); err != nil {
		return false, fmt.Errorf("take over lease %s for %s: %w", ls.path, ls.Device, err)
	}
	syncDir(l.Dir)
	return true, nil
}

// lock takes the lease directory's lock (for takeovers, renewals and
// releases: the moves that replace or remove a lease file).
func (l *Leaser) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(l.Dir, ".lock"), os.O_RDONLY|os.O_CREATE, 0o664)
	if err != nil {
		return nil, fmt.Errorf("lock lease directory %s: %w", l.Dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock lease directory %s: %w", l.Dir, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// makeShared creates the lease directory so that every lab user in its
// group can take, replace and remove leases and journals in it: group
// writable, new files inheriting the group (setgid). An existing
// directory's mode is the administrator's choice and left alone.
func makeShared(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o2775); err != nil {
		return err
	}
	_ = os.Chmod(dir, 0o2775) // past the umask
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
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
// periodically). The new lease replaces the old by rename, so readers see
// one or the other whole. It returns how many of them were lost (taken
// over by another run).
func (l *Leaser) Renew(leases []*Lease) (lost int) {
	unlock, err := l.lock()
	if err != nil {
		l.warn("renew leases", "err", err)
		return 0
	}
	defer unlock()
	for _, ls := range leases {
		held, err := readLease(ls.path)
		if err != nil || held.PID != ls.PID || held.RunID != ls.RunID {
			l.warn("lease lost", "device", ls.Device, "key", ls.Key)
			lost++
			continue
		}
		ls.Renewed = l.Now()
		tmp, err := l.writeTemp(ls)
		if err != nil {
			l.warn("renew lease", "device", ls.Device, "err", err)
			continue
		}
		if err := os.Rename(tmp, ls.path); err != nil {
			os.Remove(tmp)
			l.warn("renew lease", "device", ls.Device, "err", err)
		}
	}
	return lost
}

// List returns the leases in the directory, by key.
func (l *Leaser) List() ([]*Lease, error) {
	names, err := filepath.Glob(filepath.Join(l.Dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("list leases in %s: %w", l.Dir, err)
	}
	var out []*Lease
	for _, n := range names {
		ls, err := readLease(n)
		if err != nil {
			continue // released meanwhile, or being written
		}
		out = append(out, ls)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Release removes leases this process holds (never someone else's).
func (l *Leaser) Release(leases []*Lease) {
	if len(leases) == 0 {
		return
	}
	unlock, err := l.lock()
	if err != nil {
		l.warn("release leases", "err", err)
		return
	}
	defer unlock()
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

// HostStateDir is the host-wide state directory, where every user's runs
// see each other's leases.
const HostStateDir = "/var/lib/testbed"

// DefaultStateDir is where leases and journals live when neither a flag
// nor TESTBED_STATE_DIR says: HostStateDir when it exists and is writable
// or can be created, else $XDG_STATE_HOME/testbed (or
// ~/.local/state/testbed), with a warning that runs of other users on this
// host will not see this one's leases.
func DefaultStateDir() (dir, warning string) { return defaultStateDir(HostStateDir) }

func defaultStateDir(hostDir string) (dir, warning string) {
	if usableDir(hostDir) {
		return hostDir, ""
	}
	user := filepath.Join(os.TempDir(), "testbed-state")
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		user = filepath.Join(d, "testbed")
	} else if h, err := os.UserHomeDir(); err == nil {
		user = filepath.Join(h, ".local", "state", "testbed")
	}
	return user, fmt.Sprintf("%s is not usable (create it writable for every lab user, e.g. group testbed mode 2775); leases are kept in %s, which runs of other users on this host do not see", hostDir, user)
}

// usableDir reports whether dir exists (or can be made) and this process
// can create files in it.
func usableDir(dir string) bool {
	if err := os.MkdirAll(dir, 0o2775); err != nil {
		return false
	}
	f, err := os.CreateTemp(dir, ".probe-")
	if err != nil {
		return false
	}
	f.Close()
	os.Remove(f.Name())
	return true
}
