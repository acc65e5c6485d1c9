package simlab

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"

	"testbed/hostagent"

	"testbed/inventory"
	"testbed/simlab/host"
	"testbed/simlab/physics"
	"testbed/simlab/tofino"
	"testbed/simlab/trafficgen"
	"testbed/simlab/voa"
	"testbed/simlab/wire"
	"testbed/simlab/world"
)

// Skipped is a device of an inventory that a twin leaves out: its driver
// has no emulator (yet).
type Skipped struct {
	Device, Driver string
}

func (s Skipped) String() string { return fmt.Sprintf("%s (driver %s)", s.Device, s.Driver) }

// twin is a twin being started.
type twin struct {
	lab    *Lab
	opts   Options
	inv    *inventory.Inventory    // the user's
	out    *inventory.Inventory    // the twin's, addresses rewritten
	voas   map[string]*world.VOA   // by device
	fibres map[string]*world.Fibre // by link

	// The switches' dataplanes, one per island of switches joined by
	// fibres (islands.go), once there is a switch; hostDP is the one the
	// simulated hosts' switches are on.
	dps      map[string]*tofino.Dataplane // by island
	fibreDP  map[string]*tofino.Dataplane // by fibre, both directions
	hostDP   *tofino.Dataplane
	switches map[string]*tofino.Tofino // by device
	key      ed25519.PrivateKey        // the lab's SSH client key
	dir      string                    // its key file and known_hosts
	ssh      []*wire.SSHServer         // every SSH server of the twin
	hostNet  *host.HostNet             // the hosts' network, once there is a host
	reactors map[string]*twinReactor   // REACToR fabrics, by the hosts' reactor option
}

// emulator starts the emulator of one device and returns its address.
// Attenuators start before the fibres that run through them, the fibres
// before the instruments that send into them (phase).
type emulator struct {
	phase int
	start func(t *twin, d *inventory.Device, n int) (string, error)
}

// emulators is the table of emulator constructors, keyed by the
// inventory's driver: key.
func emulators() map[string]emulator {
	return map[string]emulator{
		"keysight-n77xx": {0, startN77xx},
		"ozoptics-dd100": {0, startDD100},
		"otg":            {2, startOTG},
		"trex":           {2, startTRex},
		"tofino-bfrt":    {2, startTofino},
		// The same simulated switch, reached over BF Runtime gRPC.
		"tofino-bfrt-grpc": {2, startTofinoGRPC},
		"linux-ssh":        {3, startHost},
		"mordia-rest":      {2, startMordia},
		"polatis-scpi":     {2, startPolatis},
		"stardust-model":   {2, startFabric},
	}
}

// StartTwin starts a simulated twin of inv: one emulator per device whose
// driver has one (same channels and limits), every link between twinned
// devices a simulated fibre with its transceiver and FEC through the VOA
// channel the inventory puts on it. Devices whose driver has no emulator
// are returned as skipped and left out, with the links that touch them.
// The twin's Inventory is inv with the addresses of the emulators.
func StartTwin(inv *inventory.Inventory, opts Options) (lab *Lab, skipped []Skipped, err error) {
	return startTwin(inv, opts, nil)
}

// startTwin starts a twin; serials, when given, is each device's offset
// from the seed in its serial number (else its place among the devices
// by name).
func startTwin(inv *inventory.Inventory, opts Options, serials map[string]int) (lab *Lab, skipped []Skipped, err error) {
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1"
	}
	if opts.Listen != "127.0.0.1" && opts.Listen != "localhost" && opts.Listen != "::1" {
		return nil, nil, fmt.Errorf("simulated lab: listen address %q: only loopback is allowed", opts.Listen)
	}
	// A copy through the file format: the twin's inventory is checked as
	// the user's was.
	data, err := inv.Marshal()
	if err != nil {
		return nil, nil, err
	}
	out, err := inventory.Parse(inv.Path+" (twin)", data)
	if err != nil {
		return nil, nil, err
	}
	t := &twin{lab: &Lab{world: world.New(opts.Seed), faults: map[string]*wire.Faults{}}, opts: opts, inv: inv, out: out,
		voas: map[string]*world.VOA{}, fibres: map[string]*world.Fibre{}, switches: map[string]*tofino.Tofino{}}
	defer func() {
		if err != nil {
			t.lab.Close()
			lab = nil
		}
	}()
	table := emulators()
	names := inv.DeviceNames()
	sort.Strings(names)
	left := map[string]bool{}
	for _, n := range names {
		d, _ := inv.Device(n)
		if _, ok := table[d.Driver]; !ok {
			skipped = append(skipped, Skipped{Device: n, Driver: d.Driver})
			left[n] = true
			delete(out.Devices, n)
		}
	}
	var links []*inventory.Link
	for _, l := range out.Links {
		if left[l.A.Device] || left[l.B.Device] || (l.VOA != nil && left[l.VOA.Device]) {
			continue
		}
		links = append(links, l)
	}
	out.Links = links
	for phase := 0; phase <= 3; phase++ {
		if phase == 1 {
			if err := t.startFibres(); err != nil {
				return nil, nil, err
			}
			continue
		}
		for i, n := range names {
			d, _ := inv.Device(n)
			e, ok := table[d.Driver]
			if !ok || e.phase != phase {
				continue
			}
			t.lab.faults[n] = &wire.Faults{}
			nth := i
			if serials != nil {
				nth = serials[n]
			}
			addr, err := e.start(t, d, nth)
			if err != nil {
				return nil, nil, fmt.Errorf("%s emulator (driver %s): %w", n, d.Driver, err)
			}
			out.Devices[n].Address = addr
		}
	}
	if err := t.finishSwitches(); err != nil {
		return nil, nil, err
	}
	data, err = out.Marshal()
	if err != nil {
		return nil, nil, err
	}
	if t.lab.inv, err = inventory.Parse("simulated twin of "+inv.Path, data); err != nil {
		return nil, nil, err
	}
	return t.lab, skipped, nil
}

// ReverseFibre names the b -> a fibre of a link between two simulated
// switches in the lab's world.
func ReverseFibre(link string) string { return link + " (b->a)" }

// startFibres makes every link of the twin a fibre. Without a VOA, the
// fibre's patch and fibre losses are its whole budget.
func (t *twin) startFibres() error {
	for _, l := range t.out.Links {
		tr, err := physics.TransceiverByName(l.Transceiver)
		if err != nil {
			return fmt.Errorf("%s: link %s: %w", l.Pos, l.Name, err)
		}
		fec := l.FEC
		if fec == "" {
			fec = "none"
		}
		f, err := physics.FECByName(fec)
		if err != nil {
			return fmt.Errorf("%s: link %s: %w", l.Pos, l.Name, err)
		}
		// The link's options give its connectors and fibre run; what
		// they leave out is the bench's patch cords.
		before, after := l.Budget(lossBeforeVOADB, lossAfterVOADB)
		// The fibre run costs what the optics model says: its attenuation
		// and the eye its dispersion closes (physics/fibre.go).
		penalty, runDB := 0.0, 0.0
		if l.FibreLengthM > 0 {
			ft := l.FibreType
			if ft == "" {
				ft = inventory.DefaultFibreType
			}
			pf, err := physics.FibreByName(ft)
			if err == nil {
				err = tr.Carries(pf)
			}
			if err != nil {
				return fmt.Errorf("%s: link %s: %w", l.Pos, l.Name, err)
			}
			runDB = pf.LossDB(l.FibreLengthM)
			after += runDB - l.FibreLossDB()
			penalty = tr.DispersionPenaltyDB(pf, l.FibreLengthM)
		}
		var ch *world.VOAChannel
		if l.VOA != nil {
			v := t.voas[l.VOA.Device]
			if v == nil || l.VOA.Channel < 1 || l.VOA.Channel > len(v.Channels) {
				return fmt.Errorf("%s: link %s: no channel %d on %s in the twin", l.Pos, l.Name, l.VOA.Channel, l.VOA.Device)
			}
			ch = v.Channels[l.VOA.Channel-1]
		}
		t.fibres[l.Name] = t.lab.world.NewFibre(l.Name, tr, f, before, after, ch)
		t.fibres[l.Name].LengthM = l.FibreLengthM
		t.fibres[l.Name].PenaltyDB = penalty
		// The return fibre: the bench's patch cords and the same run,
		// without this direction's VOA or extra connectors.
		t.fibres[l.Name].ReturnLossDB = lossBeforeVOADB + lossAfterVOADB + runDB
	}
	return nil
}

// voaLimits are a VOA's channels and range: the inventory's, else the
// model's.
func voaLimits(d *inventory.Device, channels int, maxDB float64) (int, float64, float64) {
	minDB := 0.0
	if d.Channels > 0 {
		channels = d.Channels
	}
	if d.Limits != nil {
		minDB = d.Limits.MinDB
		if d.Limits.MaxDB > 0 {
			maxDB = d.Limits.MaxDB
		}
	}
	return channels, minDB, maxDB
}

func startN77xx(t *twin, d *inventory.Device, n int) (string, error) {
	ch, lo, hi := voaLimits(d, n7764Channels, n7764MaxDB)
	// The model answers *IDN? and decides which slots exist, so it must
	// have as many attenuators as the inventory says (Keysight N7760A
	// family data sheet: N7761A one, N7762A two, N7764A four).
	models := map[int]string{1: "N7761A", 2: "N7762A", 4: "N7764A"}
	model, ok := models[ch]
	if !ok {
		return "", fmt.Errorf("%s: %s: an N776x has 1, 2 or 4 attenuators, not %d channels", d.Pos, d.Name, ch)
	}
	v := t.lab.world.NewVOA(d.Name, "Keysight Technologies", model, fmt.Sprintf("SIM%06d", (t.opts.Seed+uint64(n))%1000000), "1.2.0", ch, lo, hi, n7764ILDB, n7764Speed)
	t.voas[d.Name] = v
	s := voa.NewKeysightServer(v, t.lab.faults[d.Name])
	if err := s.Start(t.opts.Listen + ":0"); err != nil {
		return "", err
	}
	t.lab.closers = append(t.lab.closers, s.Close)
	return s.Addr(), nil
}

func startDD100(t *twin, d *inventory.Device, n int) (string, error) {
	_, lo, hi := voaLimits(d, 1, dd100MaxDB)
	v := t.lab.world.NewVOA(d.Name, "OZ Optics", "DD-100-MC", fmt.Sprintf("OZ%06d", (t.opts.Seed+uint64(n))%1000000), "3.10", 1, lo, hi, dd100ILDB, dd100Speed)
	t.voas[d.Name] = v
	s := voa.NewOZOpticsServer(v, t.lab.faults[d.Name])
	if err := s.Start(); err != nil {
		return "", err
	}
	t.lab.closers = append(t.lab.closers, s.Close)
	return s.Address(), nil
}

func startOTG(t *twin, d *inventory.Device, n int) (string, error) {
	tx, rx := map[string]string{}, map[string]string{} // port name -> the fibre it sends into, receives from
	for _, l := range t.out.Links {
		if l.A.Device == d.Name {
			tx[l.A.Port] = l.Name
		}
		if l.B.Device == d.Name {
			rx[l.B.Port] = l.Name
		}
	}
	var ports []trafficgen.OTGPort
	names := make([]string, 0, len(d.Ports))
	for p := range d.Ports {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		ports = append(ports, trafficgen.OTGPort{Location: d.Ports[p], TxFibre: tx[p], RxFibre: rx[p]})
	}
	s := trafficgen.NewOTGServer(t.lab.world, ports, t.lab.faults[d.Name], trafficgen.OTGOptions{TimeScale: t.opts.TimeScale})
	if err := s.Start(t.opts.Listen + ":0"); err != nil {
		return "", err
	}
	t.lab.closers = append(t.lab.closers, s.Close)
	return s.Addr(), nil
}

// startTRex starts a TRex emulator whose ports are the device's port
// locations, TRex port numbers ("0", "1", ...), each sending into the fibre
// of the link it is the a end of and receiving that of the link it ends.
func startTRex(t *twin, d *inventory.Device, n int) (string, error) {
	tx, rx := map[string]string{}, map[string]string{}
	for _, l := range t.out.Links {
		if l.A.Device == d.Name {
			tx[l.A.Port] = l.Name
		}
		if l.B.Device == d.Name {
			rx[l.B.Port] = l.Name
		}
	}
	var ports []trafficgen.TRexPort
	for name, loc := range d.Ports {
		i, err := strconv.Atoi(loc)
		if err != nil || i < 0 || i > 255 {
			return "", fmt.Errorf("%s: port %s: location %q is not a TRex port number (0..255)", d.Name, name, loc)
		}
		for len(ports) <= i {
			ports = append(ports, trafficgen.TRexPort{})
		}
		ports[i] = trafficgen.TRexPort{TxFibre: tx[name], RxFibre: rx[name]}
	}
	s := trafficgen.NewTRexServer(t.lab.world, ports, t.lab.faults[d.Name], trafficgen.TRexOptions{TimeScale: t.opts.TimeScale})
	if err := s.Start(t.opts.Listen + ":0"); err != nil {
		return "", err
	}
	t.lab.closers = append(t.lab.closers, s.Close)
	return s.Addr(), nil
}

// startTofino starts a simulated Tofino reached over SSH with the lab's own
// client key. Its front-panel ports are the inventory's ports named p<N>
// (p1 is front port 1), as on the default bench.
func startTofino(t *twin, d *inventory.Device, n int) (string, error) {
	if err := t.ensureKey(); err != nil {
		return "", err
	}
	dp := t.dataplaneOf(d.Name) // islands.go
	t.lab.switches = t.switches
	pub, err := ssh.NewPublicKey(t.key.Public())
	if err != nil {
		return "", err
	}
	front := map[int]int{}
	for name, v := range d.Ports {
		f, err1 := strconv.Atoi(strings.TrimPrefix(name, "p"))
		dev, err2 := strconv.Atoi(v)
		if strings.HasPrefix(name, "p") && err1 == nil && err2 == nil {
			front[f] = dev
		}
	}
	ppm, err := clockPPM(d)
	if err != nil {
		return "", err
	}
	sw, err := tofino.NewTofino(dp, tofino.TofinoOptions{Name: d.Name, Serial: fmt.Sprintf("TF%08d", (t.opts.Seed+uint64(n))%100000000), Authorized: []ssh.PublicKey{pub},
		Faults: t.lab.faults[d.Name], FrontPorts: front, Listen: t.opts.Listen + ":0", ClockPPM: ppm})
	if err != nil {
		return "", err
	}
	t.switches[d.Name] = sw
	t.ssh = append(t.ssh, sw.SSH())
	t.lab.closers = append(t.lab.closers, sw.Close)
	od := t.out.Devices[d.Name]
	od.Credentials = &inventory.Credentials{KeyFile: filepath.Join(t.dir, "sim_ed25519")}
	if od.Options == nil {
		od.Options = map[string]string{}
	}
	od.Options["known_hosts"] = filepath.Join(t.dir, "known_hosts")
	return "ssh://admin@" + sw.SSH().Addr(), nil
}

// clockPPM is a simulated switch's options.clock_ppm: the offset of its
// reference clock from nominal, within 802.3's +-100 ppm, as a frequency
// counter would measure it on the real switch (nil: drawn from the seed).
// A chain of switches each on its own clock (benches/fec-chain.yaml)
// gives each link its own codeword rate.
func clockPPM(d *inventory.Device) (*float64, error) {
	v, ok := d.Options["clock_ppm"]
	if !ok {
		return nil, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(math.Abs(f) <= 100) {
		pos := d.Pos
		if p, ok := d.FieldPos["options.clock_ppm"]; ok {
			pos = p
		}
		return nil, fmt.Errorf("%s: switch %s: options.clock_ppm %q: expected the clock's offset in ppm, a number within -100..100 (IEEE 802.3's +-100 ppm)", pos, d.Name, v)
	}
	return &f, nil
}

// startTofinoGRPC starts a simulated switch as startTofino does (its SSH
// server too: the twin's hosts and fibres find it there) and serves its
// BF Runtime gRPC service: the device's address is that service
// (tcp://127.0.0.1:<port>), and its artifacts option a directory of the
// simulated compiler's builds of every program the simulated switch
// runs, in the SDE's install layout, which the driver sends to load one;
// its agent_ssh option the SSH server, where the driver's side channel
// finds the agent for what BF Runtime does not serve (FEC counters,
// packet-out), as on a real switch.
func startTofinoGRPC(t *twin, d *inventory.Device, n int) (string, error) {
	sshAddr, err := startTofino(t, d, n)
	if err != nil {
		return "", err
	}
	addr, err := t.switches[d.Name].ServeBFRuntime(t.opts.Listen + ":0")
	if err != nil {
		return "", err
	}
	dir, err := t.artifacts()
	if err != nil {
		return "", err
	}
	od := t.out.Devices[d.Name]
	od.Options["artifacts"] = dir
	od.Options["agent_ssh"] = sshAddr
	return "tcp://" + addr, nil
}

// artifacts writes, once, the simulated compiler's build of every program
// the simulated switch runs under the twin's directory: <program>/bf-rt.json
// and <program>/pipe/{context.json,tofino.bin}.
func (t *twin) artifacts() (string, error) {
	dir := filepath.Join(t.dir, "tofinopd")
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	for _, p := range tofino.Programs() {
		bfrt, ctxJSON, bin, err := tofino.SimulatedBuild(p)
		if err != nil {
			return "", err
		}
		if err := os.MkdirAll(filepath.Join(dir, p, "pipe"), 0o755); err != nil {
			return "", err
		}
		for name, b := range map[string][]byte{"bf-rt.json": bfrt, "pipe/context.json": ctxJSON, "pipe/tofino.bin": bin} {
			if err := os.WriteFile(filepath.Join(dir, p, name), b, 0o644); err != nil {
				return "", err
			}
		}
	}
	return dir, nil
}

// ensureKey makes the twin's directory (its SSH client key, known_hosts
// and the hostagent stand-in) and its SSH client key, once.
func (t *twin) ensureKey() error {
	if t.key != nil {
		return nil
	}
	dir, err := os.MkdirTemp("", "testbed-simlab-")
	if err != nil {
		return err
	}
	t.dir = dir
	t.lab.dir = dir
	t.lab.closers = append(t.lab.closers, func() error { return os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(t.dir, "hostagent-simulated"), []byte(hostagentStandIn()), 0o755); err != nil {
		return err
	}
	_, t.key, err = ed25519.GenerateKey(rand.Reader)
	return err
}

// finishSwitches joins the switches by their fibres (a link's a end
// sends, its b end receives and forwards what it delivers out of its port
// named sink) and writes the lab's SSH client key and known_hosts.
func (t *twin) finishSwitches() error {
	if len(t.dps) == 0 {
		return t.writeClientFiles()
	}
	devPort := func(dev, port string) (int, error) {
		d, _ := t.out.Device(dev)
		v, ok := d.Ports[port]
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			return 0, fmt.Errorf("switch %s: port %s: expected a dev port number, got %q", dev, port, v)
		}
		return n, nil
	}
	for _, l := range t.out.Links {
		tx, rx := t.switches[l.A.Device], t.switches[l.B.Device]
		if tx == nil || rx == nil {
			continue
		}
		txPort, err := devPort(l.A.Device, l.A.Port)
		if err != nil {
			return fmt.Errorf("%s: link %s: %w", l.Pos, l.Name, err)
		}
		rxPort, err := devPort(l.B.Device, l.B.Port)
		if err != nil {
			return fmt.Errorf("%s: link %s: %w", l.Pos, l.Name, err)
		}
		sink := 0
		if d, _ := t.out.Device(l.B.Device); d.Ports["sink"] != "" {
			if sink, err = devPort(l.B.Device, "sink"); err != nil {
				return fmt.Errorf("%s: link %s: %w", l.Pos, l.Name, err)
			}
		}
		dp := t.dataplaneOf(l.A.Device) // the same as l.B.Device's: the fibre joins them
		t.fibreDP[l.Name], t.fibreDP[ReverseFibre(l.Name)] = dp, dp
		dp.Connect(l.Name, tx, txPort, rx, rxPort, t.fibres[l.Name], sink)
		// The pair's other fibre, b -> a (ReverseFibre): no VOA, the
		// bench's cords and the run, the same eye penalty; a forwards what
		// it delivers out of its own sink port, if it has one.
		fw := t.fibres[l.Name]
		back := t.lab.world.NewFibre(ReverseFibre(l.Name), fw.Transceiver, fw.FEC, fw.ReturnLossDB, 0, nil)
		back.PenaltyDB = fw.PenaltyDB
		back.LengthM = fw.LengthM
		backSink := 0
		if d, _ := t.out.Device(l.A.Device); d.Ports["sink"] != "" {
			if backSink, err = devPort(l.A.Device, "sink"); err != nil {
				return fmt.Errorf("%s: link %s: %w", l.Pos, l.Name, err)
			}
		}
		dp.Connect(ReverseFibre(l.Name), rx, rxPort, tx, txPort, back, backSink)
	}
	if t.hostNet != nil {
		// Host traffic between hosts on two switches joined by a fibre
		// crosses that fibre: the one marked data_path where several
		// join them, else the last listed; hosts further apart are not
		// routed.
		marked := map[[2]string]bool{}
		for _, l := range t.out.Links {
			if l.DataPath {
				marked[[2]string{l.A.Device, l.B.Device}] = true
			}
		}
		for _, l := range t.out.Links {
			k := [2]string{l.A.Device, l.B.Device}
			if t.switches[l.A.Device] != nil && t.switches[l.B.Device] != nil && (l.DataPath || !marked[k]) {
				t.hostNet.Route(l.A.Device, l.B.Device, l.Name)
			}
		}
	}
	return t.writeClientFiles()
}

// writeClientFiles writes the twin's SSH client key and the known_hosts
// of every SSH server it started, if it started any.
func (t *twin) writeClientFiles() error {
	if t.key == nil {
		return nil
	}
	_, _, err := wire.SSHClientFiles(t.dir, t.key, t.ssh...)
	return err
}

// startHost starts a simulated Linux host cabled to a switch of the twin:
// the interface of its link to the switch, with the interface's address.
// It runs the hostagent's own code in-process (simlab/host; the stand-in
// the driver uploads is in hosts_lab.go).
func startHost(t *twin, d *inventory.Device, n int) (string, error) {
	if d.Options["reactor"] != "" {
		return startReactorHost(t, d, n)
	}
	var sw, iface string
	for _, l := range t.out.Links {
		switch {
		case l.A.Device == d.Name && t.switches[l.B.Device] != nil:
			sw, iface = l.B.Device, l.A.Port
		case l.B.Device == d.Name && t.switches[l.A.Device] != nil:
			sw, iface = l.A.Device, l.B.Port
		}
	}
	if sw == "" {
		return "", fmt.Errorf("expected a link to a simulated switch (driver tofino-bfrt)")
	}
	addr, err := netip.ParsePrefix(d.Ports[iface])
	if err != nil {
		return "", fmt.Errorf("port %s: expected an interface address such as 10.0.0.1/24: %w", iface, err)
	}
	dp := t.dataplaneOf(sw)
	if t.hostDP != nil && dp != t.hostDP {
		return "", fmt.Errorf("its switch %s is joined by no fibres to the switches of the lab's other hosts: the simulated hosts follow one island of switches' clock", sw)
	}
	if t.hostNet == nil {
		t.hostDP = dp
		t.hostNet = host.NewHostNet(t.switchPaths(), t.opts.Seed)
		t.hostNet.UseSwitchClock(switchClock{dp})
		t.hostNet.CountEmulatedDrops(dp.AddEmulatedDrops)
		t.lab.hostNet = t.hostNet
		t.lab.hosts = map[string]*host.SimHost{}
	}
	pub, err := ssh.NewPublicKey(t.key.Public())
	if err != nil {
		return "", err
	}
	h, err := t.hostNet.AddHost(host.HostOptions{Name: d.Name, User: hostUser, Authorized: []ssh.PublicKey{pub}, Listen: t.opts.Listen + ":0",
		Serial: fmt.Sprintf("SIMH%06d", (t.opts.Seed+uint64(n))%1000000), Iface: iface, Addr: addr, Switch: sw, Faults: t.lab.faults[d.Name], Log: t.opts.Log})
	if err != nil {
		return "", err
	}
	t.lab.hosts[d.Name] = h
	return t.hostAddress(d, h), nil
}

// hostAddress registers a started host's SSH server with the twin and
// points the twin's inventory entry at it, with the twin's key, known_hosts
// and hostagent stand-in.
func (t *twin) hostAddress(d *inventory.Device, h *host.SimHost) string {
	t.ssh = append(t.ssh, h.SSH())
	t.lab.closers = append(t.lab.closers, h.Close)
	od := t.out.Devices[d.Name]
	od.Credentials = &inventory.Credentials{KeyFile: filepath.Join(t.dir, "sim_ed25519")}
	if od.Options == nil {
		od.Options = map[string]string{}
	}
	od.Options["known_hosts"] = filepath.Join(t.dir, "known_hosts")
	od.Options["hostagent_amd64"] = filepath.Join(t.dir, "hostagent-simulated")
	od.Options["hostagent_source"] = t.dir
	od.Options["hostagent_version"] = hostagent.Version
	return "ssh://" + hostUser + "@" + h.SSH().Addr()
}
