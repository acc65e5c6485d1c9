// Package drivers is the registry of device drivers: each driver package
// registers itself here, from its init, with its kind, the inventory's
// `driver:` key that chooses it, how to open it, its static capabilities
// and the undo kinds it carries out. The run engine opens devices, asks
// what a driver can do before it opens anything, and undoes a run's
// changes through this registry alone; it never names a vendor.
//
// Registration is the only thing a driver's init does, and the registry
// is written only then: after the program has started it is read-only,
// so two runs (or two labs) share it safely. Package all imports every
// driver package of the build.
package drivers

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"testbed/transport"
)

// Device is an opened driver: what every kind's driver does besides its
// kind's interfaces.
type Device interface {
	// Identity reads the device's vendor, model, serial and firmware.
	Identity(ctx context.Context) (transport.Identity, error)
	// Close closes the connection; it leaves the device as it is.
	Close() error
}

// Config is what the inventory says of one device, as its driver opens it.
type Config struct {
	// Name is the device's name in the inventory (errors begin with it).
	Name string
	// Kind and Driver are the inventory's kind and driver: keys.
	Kind, Driver string
	// Address is where the device answers (a URL, host:port or a serial
	// device, as the driver expects).
	Address string
	// Timeout is the deadline of one operation.
	Timeout time.Duration
	// Options are the inventory's options: for the device, as given.
	Options map[string]string
	// Limits, for a VOA, bound the attenuation that may be set (nil: the
	// device's own).
	Limits *Limits
	// SSH, for a device reached over SSH, is the settings its
	// credentials give (keys, agent, a password), with options.known_hosts.
	SSH func() (transport.SSHOptions, error)
	// Transcript records what is said to the device (nil for none).
	Transcript *transport.Transcript
}

// Limits bound a VOA's attenuation, in dB.
type Limits struct{ MinDB, MaxDB float64 }

// Option returns an option's value, with a leading ~/ expanded to the
// user's home directory when path is true.
func (c Config) Option(key string, path bool) string {
	v := c.Options[key]
	if path {
		return ExpandHome(v)
	}
	return v
}

// ExpandHome expands a leading ~/ to the user's home directory.
func ExpandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, rest)
		}
	}
	return p
}

// UndoFunc carries out one undo record on an opened device of the driver:
// args are the record's arguments as the run journaled them.
type UndoFunc func(ctx context.Context, dev Device, args json.RawMessage) error

// UndoBoundFunc is how long carrying out an undo record may take on an
// opened device, as the driver works it out from the device (an
// attenuator's move from where it stands at the speed it reports, a
// program's load within the driver's start-up bound); it is asked just
// before the undo. Zero says nothing: the run's fixed bound applies.
type UndoBoundFunc func(ctx context.Context, dev Device, args json.RawMessage) (time.Duration, error)

// Driver is one driver's registration.
type Driver struct {
	// Kind is the device kind it drives (voa, trafficgen, ocs, switch, host, fabric).
	Kind string
	// Name is the inventory's driver: key that chooses it.
	Name string
	// Open connects to a device. It does not change the device.
	Open func(ctx context.Context, c Config) (Device, error)
	// Capabilities are what the driver can do beyond its kind's core,
	// known without opening a device (e.g. "schedules" for an OCS that
	// runs timed schedules): planning asks for them.
	Capabilities []string
	// Undo are the undo kinds the driver carries out, by the kind's name
	// in the journal ("tofino.entry").
	Undo map[string]UndoFunc
	// UndoBound are, for the undo kinds that may take longer than a run's
	// fixed bound on an undo (30 s unless the run says), how long one may
	// take: a run gives such an undo that long instead.
	UndoBound map[string]UndoBoundFunc
	// Options are every inventory option a device of the driver may
	// carry, by key: those the driver reads, and those the run engine,
	// the recipes or the simulated lab's twin read of such a device (a
	// switch's role, a host's reactor, an emulator's ports). The
	// inventory's check refuses, at its file and line before anything
	// opens (OptionProblems), a key that neither they nor CommonOptions
	// declare and a value without its option's form. A key written
	// "prefix<what>" (hostagent_<goarch>) stands for every longer key
	// with that prefix.
	Options map[string]Option
}

// Option is the form of one driver option's value.
type Option struct {
	// Expected is what a value must be, as an error says it ("a positive
	// duration (e.g. 30s)"), or, for text, what the option says.
	Expected string
	// Valid reports whether a value has that form (nil: any text).
	Valid func(v string) bool
}

// TextOption is an option whose value is text its reader checks, if at
// all; what says what it gives.
func TextOption(what string) Option { return Option{Expected: what} }

// CommonOptions are the options any device may carry whatever its
// driver: its serial number, which the run engine keys a device's lease
// by (with its address) and a twin's emulator reports as its identity.
func CommonOptions() map[string]Option {
	return map[string]Option{"serial": TextOption("the device's serial number")}
}

// DurationOption is an option whose value is a positive Go duration;
// example is one such value, what says what it sets.
func DurationOption(example, what string) Option {
	return Option{
		Expected: fmt.Sprintf("a positive duration (e.g. %s), %s", example, what),
		Valid: func(v string) bool {
			d, err := time.ParseDuration(v)
			return err == nil && d > 0
		},
	}
}

// PortOption is an option whose value is a TCP port, 1..65535.
func PortOption() Option {
	return Option{
		Expected: "a TCP port 1..65535",
		Valid: func(v string) bool {
			p, err := strconv.Atoi(v)
			return err == nil && p >= 1 && p <= 65535
		},
	}
}

// BoolOption is an option whose value is true or false.
func BoolOption(what string) Option {
	return Option{
		Expected: "true or false, " + what,
		Valid:    func(v string) bool { return v == "true" || v == "false" },
	}
}

// Check returns the error of a bad value of the option key, naming the
// device, the option and what was expected; nil when v is good.
func (o Option) Check(device, key, v string) error {
	if o.Valid == nil || o.Valid(v) {
		return nil
	}
	return fmt.Errorf("%s: option %s %q: expected %s", device, key, v, o.Expected)
}

// OptionProblem is one bad option of a device's options: a value
// without its form (Expected), or a key the driver does not take
// (Unknown, with the keys it takes and the nearest of them, if near).
type OptionProblem struct {
	Key, Value, Expected string
	Unknown              bool
	Known                []string
	Suggest              string
}

// OptionKeys lists, sorted, the option keys a device of the driver may
// carry: its own and CommonOptions.
func (d Driver) OptionKeys() []string {
	var out []string
	for _, m := range []map[string]Option{d.Options, CommonOptions()} {
		for k := range m {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// option finds key's declaration: its own, a common one, or a
// "prefix<what>" key that key extends.
func (d Driver) option(key string) (Option, bool) {
	if o, ok := d.Options[key]; ok {
		return o, true
	}
	if o, ok := CommonOptions()[key]; ok {
		return o, true
	}
	for k, o := range d.Options {
		if prefix, _, ok := strings.Cut(k, "<"); ok && strings.HasSuffix(k, ">") && len(key) > len(prefix) && strings.HasPrefix(key, prefix) {
			return o, true
		}
	}
	return Option{}, false
}

// OptionProblems lists, sorted by key, the options the driver does not
// take and those whose values do not have the form it declares.
func (d Driver) OptionProblems(opts map[string]string) []OptionProblem {
	var out []OptionProblem
	for k, v := range opts {
		o, ok := d.option(k)
		switch {
		case !ok:
			known := d.OptionKeys()
			out = append(out, OptionProblem{Key: k, Value: v, Unknown: true, Known: known, Suggest: nearest(k, known)})
		case o.Valid != nil && !o.Valid(v):
			out = append(out, OptionProblem{Key: k, Value: v, Expected: o.Expected})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// nearest returns the key of known nearest to k when it is a likely typo
// of it (at most two edits, a swap of neighbours counting one, and fewer
// than a third of k's letters), else "".
func nearest(k string, known []string) string {
	best, bd := "", 3
	for _, c := range known {
		if strings.Contains(c, "<") {
			continue
		}
		if d := editDistance(strings.ToLower(k), c); d < bd && 3*d < len(k) {
			best, bd = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and swaps of neighbours.
func editDistance(a, b string) int {
	prev2, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// Has reports whether the driver declares capability c.
func (d Driver) Has(c string) bool { return slices.Contains(d.Capabilities, c) }

var (
	mu       sync.RWMutex
	registry = map[string]map[string]Driver{} // kind -> driver key -> Driver
)

// Register adds a driver. A driver package calls it from its init; a
// second registration of one kind and key, one without a name, kind or
// Open, or one bounding an undo kind it does not carry out, is a
// programming error and panics.
func Register(d Driver) {
	if d.Kind == "" || d.Name == "" || d.Open == nil {
		panic(fmt.Sprintf("drivers: registration %q of kind %q without a kind, name or Open", d.Name, d.Kind))
	}
	for k := range d.UndoBound {
		if d.Undo[k] == nil {
			panic(fmt.Sprintf("drivers: %s driver %q bounds undo kind %q, which it does not carry out", d.Kind, d.Name, k))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if registry[d.Kind] == nil {
		registry[d.Kind] = map[string]Driver{}
	}
	if _, dup := registry[d.Kind][d.Name]; dup {
		panic(fmt.Sprintf("drivers: %s driver %q registered twice", d.Kind, d.Name))
	}
	d.Capabilities = slices.Clone(d.Capabilities)
	sort.Strings(d.Capabilities)
	registry[d.Kind][d.Name] = d
}

// Lookup returns the driver of a kind with an inventory key.
func Lookup(kind, name string) (Driver, bool) {
	mu.RLock()
	defer mu.RUnlock()
	d, ok := registry[kind][name]
	return d, ok
}

// Kinds lists the device kinds some driver drives, sorted.
func Kinds() []string {
	mu.RLock()
	defer mu.RUnlock()
	var out []string
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Names lists the driver keys of a kind, sorted.
func Names(kind string) []string {
	mu.RLock()
	defer mu.RUnlock()
	var out []string
	for n := range registry[kind] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// With lists the driver keys of a kind that declare capability c, sorted.
func With(kind, c string) []string {
	var out []string
	for _, n := range Names(kind) {
		if d, _ := Lookup(kind, n); d.Has(c) {
			out = append(out, n)
		}
	}
	return out
}

// UndoKinds lists every undo kind some driver carries out, sorted.
func UndoKinds() []string {
	mu.RLock()
	defer mu.RUnlock()
	seen := map[string]bool{}
	var out []string
	for _, byName := range registry {
		for _, d := range byName {
			for u := range d.Undo {
				if !seen[u] {
					seen[u] = true
					out = append(out, u)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}
