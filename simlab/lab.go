package simlab

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"

	"fmt"
	"golang.org/x/crypto/ssh"
	"log/slog"
	"sort"

	"testbed/inventory"
	"testbed/simlab/host"
	"testbed/simlab/physics"
	"testbed/simlab/tofino"
	"testbed/simlab/trafficgen"
	"testbed/simlab/voa"
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
}

// Lab is a running simulated lab: the world model and the protocol
// front-ends of every device, plus the inventory that points at them.
type Lab struct {
	world    *world.World
	dp       *tofino.Dataplane
	switches map[string]*tofino.Tofino
	dir      string // the SSH client key and known_hosts of the lab's switches
	keysight *voa.KeysightServer
	voa3     *voa.KeysightServer
	oz       *voa.OZOpticsServer
	otg      *trafficgen.OTGServer
	faults   map[string]*wire.Faults
	hostNet  *host.HostNet
	hosts    map[string]*host.SimHost
	inv      *inventory.Inventory
	closers  []func() error
	ocs      *ocsLab     // optical circuit switches (ocs_lab.go)
	reactor  *reactorLab // the REACToR fabric and its hosts (reactor_lab.go)
}

// The default bench (issue: "one fibre per transceiver type, each through
// its own VOA channel"): a 4-channel N7764A and a DD-100-MC on serial, and
// one OTG traffic generator whose port pairs are patched through them.
type benchLink struct {
	name, transceiver, fec string
	voa                    string
	channel                int
	txPort, rxPort         string
}

func defaultBench() []benchLink {
	return []benchLink{
		{"l10g", "10GBASE-SR", "none", "voa1", 1, "p1", "p2"},
		{"l25g", "25GBASE-SR", "none", "voa1", 2, "p3", "p4"},
		{"l25g-rs", "25GBASE-SR", "rs528", "voa1", 3, "p5", "p6"},
		{"l50g", "50GBASE-SR", "rs544", "voa1", 4, "p7", "p8"},
		{"l100g", "100GBASE-SR4", "rs528", "voa2", 1, "p9", "p10"},
	}
}

// The LinkGuardian bench (LinkGuardian §4.1): a sender switch sw1 and a
// receiver switch sw2 joined by a 25G and a 100G fibre, each through its
// own channel of a second N7764A (voa3); sw2 forwards what it delivers out
// of its sink port. Ports are tofino.Tofino dev ports (pipe 1: 128..).
type switchLink struct {
	name, transceiver, fec string
	channel                int
	port                   string
	txDev, rxDev, front    int
}

func switchBench() []switchLink {
	return []switchLink{
		{"lg25", "25GBASE-SR", "none", 1, "p2", 144, 144, 2},
		{"lg100", "100GBASE-SR4", "none", 2, "p1", 136, 136, 1},
	}
}

const sinkDevPort = 160

// Optical budget of every bench fibre, besides the VOA.
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

// placeholderInventory is the default bench's inventory with placeholder
// addresses, as the Go code below builds it; benches/default.yaml must
// say the same (TestDefaultBenchFile).
func placeholderInventory() (*inventory.Inventory, error) {
	inv, err := benchInventory("tcp://127.0.0.1:5025", "serial:///dev/simlab-voa2?baud=9600", "http://127.0.0.1:8080", placeholderSwitches())
	if err == nil {
		inv, err = defaultOCSInventory(inv)
	}
	if err == nil {
		inv, err = defaultReactorInventory(inv)
	}
	return inv, err
}

// switchAccess is how the inventory reaches the simulated switches and
// hosts.
type switchAccess struct {
	sw1, sw2, voa3     string // addresses
	keyFile, knownHost string
	hosts              map[string]string // host name -> address
	labDir             string            // holds the hostagent stand-in
}

func placeholderSwitches() switchAccess {
	return switchAccess{sw1: "ssh://admin@127.0.0.1:2201", sw2: "ssh://admin@127.0.0.1:2202", voa3: "tcp://127.0.0.1:5026",
		keyFile: "~/.ssh/id_ed25519", knownHost: "~/.ssh/known_hosts",
		hosts: map[string]string{"h1": "ssh://testbed@127.0.0.1:2211", "h2": "ssh://testbed@127.0.0.1:2212"}, labDir: "~/.testbed/simlab"}
}

func benchInventory(voa1Addr, voa2Addr, tgAddr string, sw switchAccess) (*inventory.Inventory, error) {
	zero := 0.0
	inv := &inventory.Inventory{
		Path:    "simulated-lab",
		Version: 1,
		Name:    "simlab",
		Devices: map[string]*inventory.Device{
			"voa1": {Name: "voa1", Kind: "voa", Driver: "keysight-n77xx", Address: voa1Addr, Description: "simulated Keysight N7764A",
				Channels: n7764Channels, Limits: &inventory.Limits{MinDB: 0, MaxDB: n7764MaxDB}, SafeState: &inventory.SafeState{AttenuationDB: &zero}},
			"voa2": {Name: "voa2", Kind: "voa", Driver: "ozoptics-dd100", Address: voa2Addr, Description: "simulated OZ Optics DD-100-MC",
				Channels: 1, Limits: &inventory.Limits{MinDB: 0, MaxDB: dd100MaxDB}, SafeState: &inventory.SafeState{AttenuationDB: &zero}},
			"tg1": {Name: "tg1", Kind: "trafficgen", Driver: "otg", Address: tgAddr, Description: "simulated Open Traffic Generator", Ports: map[string]string{}},
			"voa3": {Name: "voa3", Kind: "voa", Driver: "keysight-n77xx", Address: sw.voa3, Description: "simulated Keysight N7764A on the switch links",
				Channels: n7764Channels, Limits: &inventory.Limits{MinDB: 0, MaxDB: n7764MaxDB}, SafeState: &inventory.SafeState{AttenuationDB: &zero}},
		},
	}
	for i, name := range []string{"sw1", "sw2"} {
		addr := sw.sw1
		if i == 1 {
			addr = sw.sw2
		}
		d := &inventory.Device{Name: name, Kind: "switch", Driver: "tofino-bfrt", Address: addr,
			Description: "simulated tofino.Tofino (Wedge100BF-32X)", Ports: map[string]string{},
			Credentials: &inventory.Credentials{KeyFile: sw.keyFile},
			Options:     map[string]string{"known_hosts": sw.knownHost, "sde": "/opt/bf-sde"}}
		for _, b := range switchBench() {
			d.Ports[b.port] = fmt.Sprintf("%d", b.txDev)
		}
		if i == 1 {
			d.Ports["sink"] = fmt.Sprintf("%d", sinkDevPort)
		}
		inv.Devices[name] = d
	}
	for _, b := range switchBench() {
		l := &inventory.Link{
			Name: b.name, A: inventory.Endpoint{Device: "sw1", Port: b.port}, B: inventory.Endpoint{Device: "sw2", Port: b.port},
			Transceiver: b.transceiver, FEC: b.fec, VOA: &inventory.VOARef{Device: "voa3", Channel: b.channel}, LossAfterVOADB: lossAfterVOADB,
		}
		if b.name == hostFibre {
			l.Options = map[string]string{"data_path": "true"} // the hosts' traffic crosses it
		}
		inv.Links = append(inv.Links, l)
	}
	addBenchHosts(inv, sw)
	for i, b := range defaultBench() {
		inv.Devices["tg1"].Ports[b.txPort] = fmt.Sprintf("sim/eth%d", 2*i+1)
		inv.Devices["tg1"].Ports[b.rxPort] = fmt.Sprintf("sim/eth%d", 2*i+2)
		inv.Links = append(inv.Links, &inventory.Link{
			Name: b.name, A: inventory.Endpoint{Device: "tg1", Port: b.txPort}, B: inventory.Endpoint{Device: "tg1", Port: b.rxPort},
			Transceiver: b.transceiver, FEC: b.fec, VOA: &inventory.VOARef{Device: b.voa, Channel: b.channel}, LossAfterVOADB: lossAfterVOADB,
		})
	}
	// Round-trip through the loader so the simulated lab's inventory is
	// checked exactly like a hand-written one.
	data, err := inv.Marshal()
	if err != nil {
		return nil, err
	}
	return inventory.Parse("simulated-lab", data)
}

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

// startDefaultInGo builds the default bench over one world model and starts
// every device's protocol front-end on loopback.
func startDefaultInGo(opts Options) (lab *Lab, err error) {
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1"
	}
	if opts.Listen != "127.0.0.1" && opts.Listen != "localhost" && opts.Listen != "::1" {
		return nil, fmt.Errorf("simulated lab: listen address %q: only loopback is allowed", opts.Listen)
	}
	w := world.New(opts.Seed)
	l := &Lab{world: w, faults: map[string]*wire.Faults{"voa1": {}, "voa2": {}, "tg1": {}, "voa3": {}, "sw1": {}, "sw2": {}}}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	voa1 := w.NewVOA("voa1", "Keysight Technologies", "N7764A", fmt.Sprintf("SIM%06d", opts.Seed%1000000), "1.2.0", n7764Channels, 0, n7764MaxDB, n7764ILDB, n7764Speed)
	voa2 := w.NewVOA("voa2", "OZ Optics", "DD-100-MC", fmt.Sprintf("OZ%06d", opts.Seed%1000000), "3.10", 1, 0, dd100MaxDB, dd100ILDB, dd100Speed)
	var ports []trafficgen.OTGPort
	for i, b := range defaultBench() {
		t, err := physics.TransceiverByName(b.transceiver)
		if err != nil {
			return nil, err
		}
		fec, err := physics.FECByName(b.fec)
		if err != nil {
			return nil, err
		}
		v := voa1
		if b.voa == "voa2" {
			v = voa2
		}
		w.NewFibre(b.name, t, fec, lossBeforeVOADB, lossAfterVOADB, v.Channels[b.channel-1])
		ports = append(ports, trafficgen.OTGPort{Location: fmt.Sprintf("sim/eth%d", 2*i+1), TxFibre: b.name}, trafficgen.OTGPort{Location: fmt.Sprintf("sim/eth%d", 2*i+2), RxFibre: b.name})
	}

	l.keysight = voa.NewKeysightServer(voa1, l.faults["voa1"])
	if err := l.keysight.Start(opts.Listen + ":0"); err != nil {
		return nil, fmt.Errorf("voa1 emulator: %w", err)
	}
	l.closers = append(l.closers, l.keysight.Close)

	l.oz = voa.NewOZOpticsServer(voa2, l.faults["voa2"])
	if err := l.oz.Start(); err != nil {
		return nil, fmt.Errorf("voa2 emulator: %w", err)
	}
	l.closers = append(l.closers, l.oz.Close)

	l.otg = trafficgen.NewOTGServer(w, ports, l.faults["tg1"], trafficgen.OTGOptions{TimeScale: opts.TimeScale})
	if err := l.otg.Start(opts.Listen + ":0"); err != nil {
		return nil, fmt.Errorf("tg1 emulator: %w", err)
	}
	l.closers = append(l.closers, l.otg.Close)

	if err := l.startSwitches(opts); err != nil {
		return nil, err
	}
	sw1, sw2 := l.switches["sw1"], l.switches["sw2"]
	l.inv, err = benchInventory(l.keysight.Addr(), l.oz.Address(), l.otg.Addr(), switchAccess{
		sw1: "ssh://admin@" + sw1.SSH().Addr(), sw2: "ssh://admin@" + sw2.SSH().Addr(), voa3: l.voa3.Addr(),
		keyFile: filepath.Join(l.dir, "sim_ed25519"), knownHost: filepath.Join(l.dir, "known_hosts"), hosts: l.hostAddrs(), labDir: l.dir})
	if err != nil {
		return nil, err
	}
	if err := l.startOCS(opts); err != nil {
		return nil, err
	}
	if err := l.startReactor(opts); err != nil {
		return nil, err
	}
	if opts.Log != nil {
		opts.Log.Info("simulated lab up", "seed", opts.Seed, "endpoints", l.Endpoints())
	}
	return l, nil
}

// Inventory is the lab as an inventory whose addresses point at the running emulators.
func (l *Lab) Inventory() *inventory.Inventory { return l.inv }

// world.World is the lab's physical model.
func (l *Lab) World() *world.World { return l.world }

// wire.Faults returns the fault injector of a device ("voa1", "voa2", "tg1",
// "sw1", "h1", ...).
func (l *Lab) Faults(device string) *wire.Faults { return l.faults[device] }

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

// startSwitches starts voa3 and the two simulated Tofinos with an SSH
// client key of the lab's own, and wires the switch fibres.
func (l *Lab) startSwitches(opts Options) error {
	w := l.world
	voa3 := w.NewVOA("voa3", "Keysight Technologies", "N7764A", fmt.Sprintf("SIM%06d", (opts.Seed+3)%1000000), "1.2.0", n7764Channels, 0, n7764MaxDB, n7764ILDB, n7764Speed)
	l.voa3 = voa.NewKeysightServer(voa3, l.faults["voa3"])
	if err := l.voa3.Start(opts.Listen + ":0"); err != nil {
		return fmt.Errorf("voa3 emulator: %w", err)
	}
	l.closers = append(l.closers, l.voa3.Close)
	dir, err := os.MkdirTemp("", "testbed-simlab-")
	if err != nil {
		return err
	}
	l.dir = dir
	l.closers = append(l.closers, func() error { return os.RemoveAll(dir) })
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	pub, err := ssh.NewPublicKey(key.Public())
	if err != nil {
		return err
	}
	l.dp = tofino.NewDataplane(w)
	l.switches = map[string]*tofino.Tofino{}
	front := map[int]int{}
	for _, b := range switchBench() {
		front[b.front] = b.txDev
	}
	for i, name := range []string{"sw1", "sw2"} {
		sw, err := tofino.NewTofino(l.dp, tofino.TofinoOptions{Name: name, Serial: fmt.Sprintf("TF%08d", opts.Seed%100000000+uint64(i)), Authorized: []ssh.PublicKey{pub},
			Faults: l.faults[name], FrontPorts: front, Listen: opts.Listen + ":0"})
		if err != nil {
			return fmt.Errorf("%s emulator: %w", name, err)
		}
		l.switches[name] = sw
		l.closers = append(l.closers, sw.Close)
	}
	for _, b := range switchBench() {
		t, err := physics.TransceiverByName(b.transceiver)
		if err != nil {
			return err
		}
		fec, err := physics.FECByName(b.fec)
		if err != nil {
			return err
		}
		f := w.NewFibre(b.name, t, fec, lossBeforeVOADB, lossAfterVOADB, voa3.Channels[b.channel-1])
		l.dp.Connect(b.name, l.switches["sw1"], b.txDev, l.switches["sw2"], b.rxDev, f, sinkDevPort)
	}
	servers, err := l.startHosts(opts, pub)
	if err != nil {
		return err
	}
	_, _, err = wire.SSHClientFiles(dir, key, append([]*wire.SSHServer{l.switches["sw1"].SSH(), l.switches["sw2"].SSH()}, servers...)...)
	return err
}

// Switch returns a simulated switch by name ("sw1", "sw2").
func (l *Lab) Switch(name string) *tofino.Tofino { return l.switches[name] }
