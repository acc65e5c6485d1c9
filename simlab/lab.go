package simlab

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"testbed/inventory"
	"testbed/simlab/host"
	"testbed/simlab/tofino"
	"testbed/simlab/wire"
	"testbed/simlab/world"
)

// Options configure a simulated lab.
type Options struct {
	Seed uint64
	Log  *slog.Logger
	// TimeScale is simulated seconds per real second for traffic (0: 1000).
	TimeScale float64
	// Listen is the host emulators bind to; only loopback is allowed.
	Listen string
	// SwitchDriver, when set, is the driver of every switch of the
	// default bench (StartDefault): tofino-bfrt-grpc gives each simulated
	// switch's BF Runtime gRPC endpoint as its address.
	SwitchDriver string
}

// Lab is a running simulated lab: the world model and the protocol
// front-ends of every device, plus the inventory that points at them.
type Lab struct {
	world    *world.World
	switches map[string]*tofino.Tofino
	dir      string // the SSH client key and known_hosts of the lab's switches
	faults   map[string]*wire.Faults
	hostNet  *host.HostNet
	hosts    map[string]*host.SimHost
	inv      *inventory.Inventory
	closers  []func() error
	ocs      *ocsLab     // optical circuit switches (ocs_lab.go)
	reactor  *reactorLab // the REACToR fabrics and their hosts (reactor_lab.go, twin_ocs.go)
}

// Optical budget of a twin's fibre where its link's options give none.
const (
	// Patch cord from the transmitter to the VOA: two LC mated pairs of
	// about 0.3-0.5 dB each (TIA-568 allows 0.75 dB per pair) plus a few
	// metres of OM4: 1.0 dB.
	lossBeforeVOADB = 1.0
	// VOA output to the receiver: one mated pair and a short cord.
	lossAfterVOADB = 0.5
	// Keysight N7764A: 4 channels, 0-40 dB attenuation range, insertion
	// loss about 1.2 dB (datasheet: <= 1.5 dB), transition speed
	// configurable up to 1000 dB/s; we use 500 dB/s.
	n7764Channels = 4
	n7764MaxDB    = 40
	n7764ILDB     = 1.2
	n7764Speed    = 500
	// OZ Optics DD-100-MC: stepper-driven, MAX ATTEN 55 dB (its CD reply),
	// insertion loss about 0.8 dB; moves are slow (a full-range move takes
	// seconds; homing up to 30 s per the manual): 40 dB/s.
	dd100MaxDB = 55
	dd100ILDB  = 0.8
	dd100Speed = 40
)

// StartDefault starts the default bench, benches/default.yaml, as a twin:
// every device's protocol front-end on loopback over one world model.
// Serial numbers follow the seed as they always have (voa3 and sw2, h2
// count on from it), and so does the circuit switch's serial option.
func StartDefault(opts Options) (*Lab, error) {
	b, err := Bench("default")
	if err != nil {
		return nil, err
	}
	inv, err := inventory.Parse("simulated-lab", b)
	if err != nil {
		return nil, err
	}
	if opts.SwitchDriver != "" {
		for _, d := range inv.Devices {
			if d.Kind == "switch" {
				d.Driver = opts.SwitchDriver
			}
		}
	}
	for n, prefix := range map[string]string{ocsMicroName: "MOR", ocsMilliName: "PX"} {
		if d, ok := inv.Devices[n]; ok {
			d.Options["serial"] = fmt.Sprintf("%s%06d", prefix, opts.Seed%1000000)
		}
	}
	lab, skipped, err := startTwin(inv, opts, map[string]int{"voa3": 3, "sw2": 1, "h2": 1})
	if err != nil {
		return nil, err
	}
	if len(skipped) > 0 {
		lab.Close()
		return nil, fmt.Errorf("simulated lab: the default bench has devices without an emulator: %v", skipped)
	}
	lab.inv.Path = "simulated-lab"
	if opts.Log != nil {
		opts.Log.Info("simulated lab up", "seed", opts.Seed, "endpoints", lab.Endpoints())
	}
	return lab, nil
}

// Inventory is the lab as an inventory whose addresses point at the running emulators.
func (l *Lab) Inventory() *inventory.Inventory { return l.inv }

// world.World is the lab's physical model.
func (l *Lab) World() *world.World { return l.world }

// wire.Faults returns the fault injector of a device ("voa1", "voa2", "tg1",
// "sw1", "h1", ...).
func (l *Lab) Faults(device string) *wire.Faults { return l.faults[device] }

// FaultDevices names the devices that take injected faults, sorted.
func (l *Lab) FaultDevices() []string {
	out := make([]string, 0, len(l.faults))
	for n := range l.faults {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Endpoints lists "device driver address" for each device.
func (l *Lab) Endpoints() []string {
	var out []string
	for _, n := range l.inv.DeviceNames() {
		d, _ := l.inv.Device(n)
		out = append(out, fmt.Sprintf("%s %s %s", n, d.Driver, d.Address))
	}
	sort.Strings(out)
	return out
}

// Close stops every front-end, newest first.
func (l *Lab) Close() error {
	var errs []error
	for i := len(l.closers) - 1; i >= 0; i-- {
		errs = append(errs, l.closers[i]())
	}
	l.closers = nil
	return errors.Join(errs...)
}

// Switch returns a simulated switch by name ("sw1", "sw2").
func (l *Lab) Switch(name string) *tofino.Tofino { return l.switches[name] }
