package simlab

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"testbed/inventory"
)

// The simulated lab's optical circuit switches: ocs1, a Mordia-style
// microsecond switch on REST, and ocs2, a Polatis-style millisecond switch
// on SCPI over TCP. Their behaviour is described by their inventory
// entries (options), and the emulators are built from those entries.
const (
	ocsMicroName = "ocs1"
	ocsMilliName = "ocs2"
)

// ocsLab is the lab's switches and their front-ends, by device name.
type ocsLab struct {
	micro   map[string]*MicroOCS
	mordia  map[string]*MordiaServer
	milli   map[string]*PolatisSwitch
	polatis map[string]*PolatisServer
}

// ocsDevices are the inventory entries of the lab's switches. Options of a
// microsecond switch describe its simulated reconfiguration gap (see
// GapFromOptions) and limits; drivers ignore them.
func ocsDevices(seed uint64, microAddr, milliAddr string) []*inventory.Device {
	return []*inventory.Device{
		{Name: ocsMicroName, Kind: "ocs", Driver: "mordia-rest", Address: microAddr,
			Description: "simulated Mordia-style microsecond OCS, 24 ports (REACToR §4)",
			Options: map[string]string{
				"ports":       "24",
				"serial":      fmt.Sprintf("MOR%06d", seed%1000000),
				"min_slot_us": "40",
				// REACToR Fig. 5: about 12 us mean, 14.84 us maximum observed.
				"reconfig_dist":    "truncnormal",
				"reconfig_mean_us": "12",
				"reconfig_sd_us":   "1",
				"reconfig_min_us":  "9",
				"reconfig_max_us":  "15",
			}},
		{Name: ocsMilliName, Kind: "ocs", Driver: "polatis-scpi", Address: milliAddr,
			Description: "simulated Polatis-style millisecond OCS, 16x16",
			Options: map[string]string{
				"ports":          "16x16",
				"serial":         fmt.Sprintf("PX%06d", seed%1000000),
				"switch_time_ms": "25",
			}},
	}
}

// withOCS returns inv with the switches added, checked by the loader.
func withOCS(inv *inventory.Inventory, seed uint64, microAddr, milliAddr string) (*inventory.Inventory, error) {
	for _, d := range ocsDevices(seed, microAddr, milliAddr) {
		inv.Devices[d.Name] = d
	}
	data, err := inv.Marshal()
	if err != nil {
		return nil, err
	}
	return inventory.Parse(inv.Path, data)
}

// MicroOCSFromDevice builds a microsecond switch's description from its
// inventory entry: options ports, serial, min_slot_us, min_night_us,
// max_slots and the reconfig_* gap law.
func MicroOCSFromDevice(d *inventory.Device) (MicroOCSOptions, error) {
	o := MicroOCSOptions{Vendor: "UC San Diego", Model: "Mordia", Serial: d.Options["serial"], Firmware: "sim-1.0"}
	var err error
	if v := d.Options["ports"]; v != "" {
		if o.Ports, err = strconv.Atoi(v); err != nil || o.Ports < 1 {
			return o, fmt.Errorf("%s: option ports=%q is not a positive integer", d.Name, v)
		}
		o.Model = fmt.Sprintf("Mordia-%d", o.Ports)
	}
	if v := d.Options["max_slots"]; v != "" {
		if o.MaxSlots, err = strconv.Atoi(v); err != nil || o.MaxSlots < 1 {
			return o, fmt.Errorf("%s: option max_slots=%q is not a positive integer", d.Name, v)
		}
	}
	if o.MinSlot, err = optMicros(d.Options, "min_slot_us", 0); err != nil {
		return o, fmt.Errorf("%s: %w", d.Name, err)
	}
	if o.MinNight, err = optMicros(d.Options, "min_night_us", 0); err != nil {
		return o, fmt.Errorf("%s: %w", d.Name, err)
	}
	if o.Gap, err = GapFromOptions(d.Options); err != nil {
		return o, fmt.Errorf("%s: %w", d.Name, err)
	}
	return o, nil
}

// PolatisFromDevice builds a millisecond switch's description from its
// inventory entry: options ports ("16x16"), serial, switch_time_ms.
func PolatisFromDevice(d *inventory.Device) (PolatisOptions, error) {
	o := PolatisOptions{Serial: d.Options["serial"], Firmware: "6.5.2-sim"}
	if v := d.Options["ports"]; v != "" {
		a, b, ok := strings.Cut(v, "x")
		n, e1 := strconv.Atoi(a)
		m, e2 := strconv.Atoi(b)
		if !ok || e1 != nil || e2 != nil || n < 1 || m < 1 {
			return o, fmt.Errorf("%s: option ports=%q is not <ingress>x<egress>", d.Name, v)
		}
		o.Ingress, o.Egress = n, m
	}
	if v := d.Options["switch_time_ms"]; v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return o, fmt.Errorf("%s: option switch_time_ms=%q is not a positive number", d.Name, v)
		}
		o.SwitchTime = time.Duration(f * float64(time.Millisecond))
	}
	return o, nil
}

// startOCS builds the switches from their inventory entries, starts their
// front-ends on loopback and adds them to the lab's inventory.
func (l *Lab) startOCS(opts Options) error {
	l.ocs = &ocsLab{micro: map[string]*MicroOCS{}, mordia: map[string]*MordiaServer{}, milli: map[string]*PolatisSwitch{}, polatis: map[string]*PolatisServer{}}
	addrs := map[string]string{}
	for _, d := range ocsDevices(opts.Seed, "", "") {
		f := &Faults{}
		l.faults[d.Name] = f
		switch d.Driver {
		case "mordia-rest":
			mo, err := MicroOCSFromDevice(d)
			if err != nil {
				return err
			}
			m, err := l.world.NewMicroOCS(d.Name, mo)
			if err != nil {
				return err
			}
			srv := NewMordiaServer(m, f)
			if err := srv.Start(opts.Listen + ":0"); err != nil {
				return fmt.Errorf("%s emulator: %w", d.Name, err)
			}
			l.closers = append(l.closers, srv.Close)
			l.ocs.micro[d.Name], l.ocs.mordia[d.Name], addrs[d.Name] = m, srv, srv.Addr()
		case "polatis-scpi":
			po, err := PolatisFromDevice(d)
			if err != nil {
				return err
			}
			sw := l.world.NewPolatis(d.Name, po)
			srv := NewPolatisServer(sw, f)
			if err := srv.Start(opts.Listen + ":0"); err != nil {
				return fmt.Errorf("%s emulator: %w", d.Name, err)
			}
			l.closers = append(l.closers, srv.Close)
			l.ocs.milli[d.Name], l.ocs.polatis[d.Name], addrs[d.Name] = sw, srv, srv.Addr()
		}
	}
	inv, err := withOCS(l.inv, opts.Seed, addrs[ocsMicroName], addrs[ocsMilliName])
	if err != nil {
		return err
	}
	l.inv = inv
	return nil
}

// defaultOCSInventory adds the switches with placeholder addresses, for
// the dry-run inventory.
func defaultOCSInventory(inv *inventory.Inventory) (*inventory.Inventory, error) {
	return withOCS(inv, 0, "http://127.0.0.1:8081", "tcp://127.0.0.1:5027")
}

// MicroOCS returns a simulated microsecond switch by name ("ocs1"), or nil.
func (l *Lab) MicroOCS(name string) *MicroOCS {
	if l.ocs == nil {
		return nil
	}
	return l.ocs.micro[name]
}

// MordiaServer returns the REST front-end of a microsecond switch, or nil.
func (l *Lab) MordiaServer(name string) *MordiaServer {
	if l.ocs == nil {
		return nil
	}
	return l.ocs.mordia[name]
}

// PolatisSwitch returns a simulated millisecond switch by name ("ocs2"), or nil.
func (l *Lab) PolatisSwitch(name string) *PolatisSwitch {
	if l.ocs == nil {
		return nil
	}
	return l.ocs.milli[name]
}
