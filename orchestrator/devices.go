package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"testbed/drivers"
	_ "testbed/drivers/all" // every driver of this build registers itself
	"testbed/inventory"
	"testbed/transport"
)

// KnownDrivers lists, per device kind, the driver names this build can open
// (every driver registered in package drivers).
func KnownDrivers() map[string][]string {
	out := map[string][]string{}
	for _, k := range drivers.Kinds() {
		out[k] = drivers.Names(k)
	}
	return out
}

// CheckDrivers reports every inventory device whose driver this build does
// not have, positioned in the inventory file.
func CheckDrivers(inv *inventory.Inventory) error {
	ps := DriverProblems(inv)
	if len(ps) > 0 {
		return &InputError{Msg: (&inventory.ValidationError{Problems: ps}).Error()}
	}
	return nil
}

// CheckOptions reports the option keys and values the drivers of inv's
// devices refuse, each at its line, as CheckDrivers does, but passes a
// device whose kind or driver this build does not have: a simulated twin
// leaves such a device out, and starts every other one with its options.
func CheckOptions(inv *inventory.Inventory) error {
	if ps := driverProblems(inv, false); len(ps) > 0 {
		return &InputError{Msg: (&inventory.ValidationError{Problems: ps}).Error()}
	}
	return nil
}

// DriverProblems lists the devices whose kind or driver this build does
// not drive, and the option values their drivers refuse, each at its
// line.
func DriverProblems(inv *inventory.Inventory) []inventory.Problem {
	return driverProblems(inv, true)
}

// driverProblems lists the option problems of inv's devices, and the
// devices this build cannot drive when unknown is set (else it passes
// them).
func driverProblems(inv *inventory.Inventory, unknown bool) []inventory.Problem {
	known := KnownDrivers()
	var out []inventory.Problem
	add := func(err error) {
		var ve *inventory.ValidationError
		if errors.As(err, &ve) {
			out = append(out, ve.Problems...)
		}
	}
	for _, name := range inv.DeviceNames() {
		d, _ := inv.Device(name)
		list, ok := known[d.Kind]
		if !unknown && !(ok && slices.Contains(list, d.Driver)) {
			continue
		}
		if !ok {
			add(inv.DeviceErrorf(d, "kind", "no driver for kind %q yet (this build drives: %s)", d.Kind, kindsOf(known)))
			continue
		}
		if !slices.Contains(list, d.Driver) {
			add(inv.DeviceErrorf(d, "driver", "unknown %s driver %q (known: %s)", d.Kind, d.Driver, strings.Join(list, ", ")))
			continue
		}
		dr, _ := drivers.Lookup(d.Kind, d.Driver)
		for _, p := range dr.OptionProblems(d.Options) {
			add(optionProblem(inv, d, p))
		}
	}
	return inventory.MergeProblems(nil, out) // sorted by line
}

// optionProblem positions one bad option of a device at its key.
func optionProblem(inv *inventory.Inventory, d *inventory.Device, p drivers.OptionProblem) error {
	if !p.Unknown {
		return inv.DeviceErrorf(d, "options."+p.Key, "%q: expected %s (%s driver %s)", p.Value, p.Expected, d.Kind, d.Driver)
	}
	hint := ""
	if p.Suggest != "" {
		hint = fmt.Sprintf("; did you mean %s?", p.Suggest)
	}
	return inv.DeviceErrorf(d, "options."+p.Key, "unknown option %q of %s: its %s driver %s takes %s%s",
		p.Key, d.Name, d.Kind, d.Driver, strings.Join(p.Known, ", "), hint)
}

func kindsOf(m map[string][]string) string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return strings.Join(k, ", ")
}

// OpenedDevice is one connected device.
type OpenedDevice struct {
	Dev *inventory.Device
	// Driver is the opened driver: it implements its kind's interfaces
	// (voa.Attenuator, p4switch.Core, host.Settings, ...).
	Driver   drivers.Device
	Identity transport.Identity
	closer   io.Closer
}

// DeviceSet is the drivers a run has open.
type DeviceSet struct {
	mu      sync.Mutex
	devices map[string]*OpenedDevice
}

// TranscriptFunc gives the transcript for a device (nil for none).
type TranscriptFunc func(device string) *transport.Transcript

// DriverConfig is what a driver opens a device with: the inventory's
// settings of it, with its credentials as SSH settings.
func DriverConfig(d *inventory.Device, tr *transport.Transcript) drivers.Config {
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	c := drivers.Config{Name: d.Name, Kind: d.Kind, Driver: d.Driver, Address: d.Address, Timeout: timeout,
		Options: d.Options, Transcript: tr, SSH: func() (transport.SSHOptions, error) { return sshOptions(d) }}
	if c.Options == nil {
		c.Options = map[string]string{}
	}
	if d.Limits != nil {
		c.Limits = &drivers.Limits{MinDB: d.Limits.MinDB, MaxDB: d.Limits.MaxDB}
	}
	return c
}

// OpenDevice connects to one inventory device with its registered driver
// and reads its identity.
func OpenDevice(ctx context.Context, d *inventory.Device, tr *transport.Transcript) (*OpenedDevice, error) {
	drv, ok := drivers.Lookup(d.Kind, d.Driver)
	if !ok {
		if names := drivers.Names(d.Kind); len(names) > 0 {
			return nil, fmt.Errorf("%s: unknown %s driver %q in this build (known: %s)", d.Name, d.Kind, d.Driver, strings.Join(names, ", "))
		}
		return nil, fmt.Errorf("%s: no driver for kind %q in this build", d.Name, d.Kind)
	}
	c := DriverConfig(d, tr)
	octx, cancel := context.WithTimeout(ctx, c.Timeout*3)
	defer cancel()
	dev, err := drv.Open(octx, c)
	if err != nil {
		if strings.HasPrefix(err.Error(), d.Name+":") || strings.HasPrefix(err.Error(), d.Name+" ") {
			// The driver's errors begin with the device's name already.
			return nil, fmt.Errorf("%w (opening %s at %s)", err, d.Driver, d.Address)
		}
		return nil, fmt.Errorf("%s: open %s at %s: %w", d.Name, d.Driver, d.Address, err)
	}
	id, err := dev.Identity(octx)
	if err != nil {
		dev.Close()
		if strings.HasPrefix(err.Error(), d.Name) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: identity: %w", d.Name, err)
	}
	return &OpenedDevice{Dev: d, Driver: dev, Identity: id, closer: dev}, nil
}

// OpenDevices opens the named devices concurrently; on any failure it closes
// what it opened and returns every failure.
func OpenDevices(ctx context.Context, inv *inventory.Inventory, names []string, transcripts TranscriptFunc) (*DeviceSet, error) {
	ds := &DeviceSet{devices: map[string]*OpenedDevice{}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []string
	for _, n := range names {
		d, ok := inv.Device(n)
		if !ok {
			return nil, fmt.Errorf("no device %q in the inventory", n)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			od, err := OpenDevice(ctx, d, transcripts(n))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err.Error())
				return
			}
			ds.devices[n] = od
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		ds.Close()
		sort.Strings(errs)
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return ds, nil
}

// Get returns an opened device.
func (ds *DeviceSet) Get(name string) (*OpenedDevice, bool) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	d, ok := ds.devices[name]
	return d, ok
}

// Names lists the opened devices, sorted.
func (ds *DeviceSet) Names() []string {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	var out []string
	for n := range ds.devices {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Close closes every driver.
func (ds *DeviceSet) Close() {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	for _, d := range ds.devices {
		if d.closer != nil {
			d.closer.Close()
		}
	}
}

// sshOptions turns a device's credentials and options into SSH settings:
// key_file, ssh_agent, a password reference, and options.known_hosts.
func sshOptions(d *inventory.Device) (transport.SSHOptions, error) {
	o := transport.SSHOptions{KnownHosts: inventory.ExpandHome(d.Options["known_hosts"])}
	if c := d.Credentials; c != nil {
		o.KeyFile = inventory.ExpandHome(c.KeyFile)
		o.UseAgent = c.SSHAgent
		pw, err := c.Password()
		if err != nil {
			return o, err
		}
		if o.KeyFile != "" {
			o.Passphrase = pw // a password reference beside a key unlocks the key
		} else {
			o.Password = pw
		}
	}
	return o, nil
}

// DriverHas reports whether the registered driver of a kind with an
// inventory key declares every capability: planning asks it before it
// opens anything ("can this OCS run schedules?").
func DriverHas(kind, driver string, capabilities ...string) bool {
	d, ok := drivers.Lookup(kind, driver)
	if !ok {
		return false
	}
	for _, c := range capabilities {
		if !d.Has(c) {
			return false
		}
	}
	return true
}

// DriversWith lists the registered drivers of a kind that declare every
// capability, sorted.
func DriversWith(kind string, capabilities ...string) []string {
	var out []string
	for _, n := range drivers.Names(kind) {
		if DriverHas(kind, n, capabilities...) {
			out = append(out, n)
		}
	}
	return out
}
