package orchestrator

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"testbed/dut/host"
	"testbed/dut/tofino"
	"testbed/dut/tofino/bfrtgrpc"
	"testbed/instruments/ocs"
	"testbed/instruments/trafficgen"
	"testbed/instruments/voa"
	"testbed/inventory"
	"testbed/transport"
)

// KnownDrivers lists, per device kind, the driver names this build can open.
func KnownDrivers() map[string][]string {
	return map[string][]string{
		"voa":        voa.Drivers(),
		"trafficgen": trafficgen.Drivers(),
		"switch":     tofino.Drivers(),
		"host":       host.Drivers(),
		"ocs":        ocs.Drivers(),
	}
}

// CheckDrivers reports every inventory device whose driver this build does
// not have, positioned in the inventory file.
func CheckDrivers(inv *inventory.Inventory) error {
	known := KnownDrivers()
	var problems []string
	for _, name := range inv.DeviceNames() {
		d, _ := inv.Device(name)
		list, ok := known[d.Kind]
		if !ok {
			problems = append(problems, inv.DeviceErrorf(d, "kind", "no driver for kind %q yet (this build drives: %s)", d.Kind, kindsOf(known)).Error())
			continue
		}
		if !slices.Contains(list, d.Driver) {
			problems = append(problems, inv.DeviceErrorf(d, "driver", "unknown %s driver %q (known: %s)", d.Kind, d.Driver, strings.Join(list, ", ")).Error())
		}
	}
	if len(problems) > 0 {
		return &InputError{Msg: strings.Join(problems, "\n")}
	}
	return nil
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
	Dev      *inventory.Device
	Driver   any // voa.Attenuator or trafficgen.Generator
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

// OpenDevice connects to one inventory device with its driver and reads its identity.
func OpenDevice(ctx context.Context, d *inventory.Device, tr *transport.Transcript) (*OpenedDevice, error) {
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	octx, cancel := context.WithTimeout(ctx, timeout*3)
	defer cancel()
	od := &OpenedDevice{Dev: d}
	switch d.Kind {
	case "voa":
		opts := voa.Options{Timeout: timeout, Transcript: tr}
		if d.Limits != nil {
			opts.Limits = &voa.Limits{MinDB: d.Limits.MinDB, MaxDB: d.Limits.MaxDB}
		}
		a, err := voa.Open(octx, d.Driver, d.Address, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: open %s at %s: %w", d.Name, d.Driver, d.Address, err)
		}
		od.Driver, od.closer = a, a
		od.Identity, err = a.Identity(octx)
		if err != nil {
			a.Close()
			return nil, fmt.Errorf("%s: identity: %w", d.Name, err)
		}
	case "trafficgen":
		g, err := trafficgen.Open(octx, d.Driver, d.Address, trafficgen.Options{Timeout: timeout, Transcript: tr, InsecureTLS: d.Options["insecure_tls"] == "true"})
		if err != nil {
			return nil, fmt.Errorf("%s: open %s at %s: %w", d.Name, d.Driver, d.Address, err)
		}
		od.Driver, od.closer = g, g
		od.Identity, err = g.Identity(octx)
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("%s: identity: %w", d.Name, err)
		}
	case "switch":
		var sw *tofino.Switch
		var err error
		if d.Driver == bfrtgrpc.Driver {
			sw, err = bfrtgrpc.Open(octx, d.Address, bfrtgrpc.Options{Artifacts: d.Options["artifacts"], Timeout: timeout, Transcript: tr})
		} else {
			so, err2 := sshOptions(d)
			if err2 != nil {
				return nil, fmt.Errorf("%s: %w", d.Name, err2)
			}
			sw, err = tofino.Open(octx, d.Address, tofino.Options{SSH: so, SDE: d.Options["sde"], Timeout: timeout, Transcript: tr})
		}
		if err != nil {
			return nil, fmt.Errorf("%s: open %s at %s: %w", d.Name, d.Driver, d.Address, err)
		}
		od.Driver, od.closer = sw, sw
		od.Identity, err = sw.Identity(octx)
		if err != nil {
			sw.Close()
			return nil, fmt.Errorf("%s: identity: %w", d.Name, err)
		}
	case "host":
		return openHost(octx, d, timeout, tr)
	case "ocs":
		return openOCS(octx, d, timeout, tr)
	default:
		return nil, fmt.Errorf("%s: no driver for kind %q in this build", d.Name, d.Kind)
	}
	return od, nil
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
