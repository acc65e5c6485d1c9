package simlab

import (
	"fmt"

	"testbed/inventory"
	"testbed/simlab/ocs"
	"testbed/simlab/wire"
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
	micro   map[string]*ocs.MicroOCS
	mordia  map[string]*ocs.MordiaServer
	milli   map[string]*ocs.PolatisSwitch
	polatis map[string]*ocs.PolatisServer
}

// ocsDevices are the inventory entries of the lab's switches. Options of a
// microsecond switch describe its simulated reconfiguration gap (see
// ocs.GapFromOptions) and limits; drivers ignore them.
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

// startOCS builds the switches from their inventory entries, starts their
// front-ends on loopback and adds them to the lab's inventory.
func (l *Lab) startOCS(opts Options) error {
	l.ocs = &ocsLab{micro: map[string]*ocs.MicroOCS{}, mordia: map[string]*ocs.MordiaServer{}, milli: map[string]*ocs.PolatisSwitch{}, polatis: map[string]*ocs.PolatisServer{}}
	addrs := map[string]string{}
	for _, d := range ocsDevices(opts.Seed, "", "") {
		f := &wire.Faults{}
		l.faults[d.Name] = f
		switch d.Driver {
		case "mordia-rest":
			mo, err := ocs.MicroOCSFromDevice(d)
			if err != nil {
				return err
			}
			m, err := ocs.NewMicroOCS(l.world, d.Name, mo)
			if err != nil {
				return err
			}
			srv := ocs.NewMordiaServer(m, f)
			if err := srv.Start(opts.Listen + ":0"); err != nil {
				return fmt.Errorf("%s emulator: %w", d.Name, err)
			}
			l.closers = append(l.closers, srv.Close)
			l.ocs.micro[d.Name], l.ocs.mordia[d.Name], addrs[d.Name] = m, srv, srv.Addr()
		case "polatis-scpi":
			po, err := ocs.PolatisFromDevice(d)
			if err != nil {
				return err
			}
			sw := ocs.NewPolatis(l.world, d.Name, po)
			srv := ocs.NewPolatisServer(sw, f)
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

// ocs.MicroOCS returns a simulated microsecond switch by name ("ocs1"), or nil.
func (l *Lab) MicroOCS(name string) *ocs.MicroOCS {
	if l.ocs == nil {
		return nil
	}
	return l.ocs.micro[name]
}

// ocs.MordiaServer returns the REST front-end of a microsecond switch, or nil.
func (l *Lab) MordiaServer(name string) *ocs.MordiaServer {
	if l.ocs == nil {
		return nil
	}
	return l.ocs.mordia[name]
}

// ocs.PolatisSwitch returns a simulated millisecond switch by name ("ocs2"), or nil.
func (l *Lab) PolatisSwitch(name string) *ocs.PolatisSwitch {
	if l.ocs == nil {
		return nil
	}
	return l.ocs.milli[name]
}
