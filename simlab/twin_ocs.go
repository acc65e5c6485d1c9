package simlab

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"

	"golang.org/x/crypto/ssh"

	"testbed/inventory"
	"testbed/simlab/host"
	"testbed/simlab/ocs"
	"testbed/simlab/reactor"
)

// A twin's optical circuit switches are built from their inventory
// entries' options, as the default bench's are (ocs_lab.go); hosts whose
// option reactor names a REACToR and that are cabled to a twinned
// microsecond switch share one simulated fabric per REACToR name.

// twinReactor is one REACToR fabric of a twin.
type twinReactor struct {
	fabric *reactor.ReactorFabric
	index  map[string]int // host -> its place in the fabric
	iface  map[string]string
	addr   map[string]netip.Prefix
	net    *host.HostNet
}

func (t *twin) ocsLab() *ocsLab {
	if t.lab.ocs == nil {
		t.lab.ocs = &ocsLab{micro: map[string]*ocs.MicroOCS{}, mordia: map[string]*ocs.MordiaServer{}, milli: map[string]*ocs.PolatisSwitch{}, polatis: map[string]*ocs.PolatisServer{}}
	}
	return t.lab.ocs
}

func startMordia(t *twin, d *inventory.Device, n int) (string, error) {
	mo, err := ocs.MicroOCSFromDevice(d)
	if err != nil {
		return "", err
	}
	m, err := ocs.NewMicroOCS(t.lab.world, d.Name, mo)
	if err != nil {
		return "", err
	}
	srv := ocs.NewMordiaServer(m, t.lab.faults[d.Name])
	if err := srv.Start(t.opts.Listen + ":0"); err != nil {
		return "", err
	}
	t.lab.closers = append(t.lab.closers, srv.Close)
	o := t.ocsLab()
	o.micro[d.Name], o.mordia[d.Name] = m, srv
	return srv.Addr(), nil
}

func startPolatis(t *twin, d *inventory.Device, n int) (string, error) {
	po, err := ocs.PolatisFromDevice(d)
	if err != nil {
		return "", err
	}
	sw := ocs.NewPolatis(t.lab.world, d.Name, po)
	srv := ocs.NewPolatisServer(sw, t.lab.faults[d.Name])
	if err := srv.Start(t.opts.Listen + ":0"); err != nil {
		return "", err
	}
	t.lab.closers = append(t.lab.closers, srv.Close)
	o := t.ocsLab()
	o.milli[d.Name], o.polatis[d.Name] = sw, srv
	return srv.Addr(), nil
}

// startReactorHost starts a host of a REACToR: its fabric (with every
// host of the same reactor option) on first use, then the host, whose
// agent serves host control from the fabric.
func startReactorHost(t *twin, d *inventory.Device, n int) (string, error) {
	name := d.Options["reactor"]
	r := t.reactors[name]
	if r == nil {
		var err error
		if r, err = t.startFabric(name); err != nil {
			return "", err
		}
	}
	pub, err := ssh.NewPublicKey(t.key.Public())
	if err != nil {
		return "", err
	}
	i := r.index[d.Name]
	h, err := r.net.AddHost(host.HostOptions{Name: d.Name, User: hostUser, Authorized: []ssh.PublicKey{pub}, Listen: t.opts.Listen + ":0",
		Serial: fmt.Sprintf("SIMR%06d", (t.opts.Seed+uint64(i))%1000000), Iface: r.iface[d.Name], Addr: r.addr[d.Name], Switch: name,
		Faults: t.lab.faults[d.Name], Log: t.opts.Log})
	if err != nil {
		return "", err
	}
	h.SetReactor(r.fabric.HostControl(i, r.iface[d.Name]))
	t.lab.reactor.hosts[d.Name] = h
	return t.hostAddress(d, h), nil
}

// startFabric builds the fabric of the REACToR named: every host of the
// twin whose option reactor names it, each on the port of the one
// microsecond switch its link reaches, in the order of those ports. The
// circuits run at the hosts' transceiver rate, the packet switch at their
// reactor_eps_gbps (else that rate).
func (t *twin) startFabric(name string) (*twinReactor, error) {
	if err := t.ensureKey(); err != nil {
		return nil, err
	}
	rm := reactorMembers{t: t, name: name}
	for _, hn := range t.out.DeviceNames() {
		hd := t.out.Devices[hn]
		if hd.Kind != "host" || hd.Options["reactor"] != name {
			continue
		}
		rm.addHost(hn, hd)
	}
	if len(rm.problems) > 0 {
		return nil, errors.Join(rm.problems...)
	}
	members, sw, linkBps, eps := rm.members, rm.sw, rm.linkBps, rm.eps
	if eps == 0 {
		eps = linkBps
	}
	sort.Slice(members, func(i, j int) bool { return members[i].port < members[j].port })
	fo := reactor.ReactorFabricOptions{Name: name, OCS: &fabricSwitch{m: t.lab.ocs.micro[sw]}, LinkBps: linkBps, EPSBps: eps, Seed: t.opts.Seed, Log: t.opts.Log}
	r := &twinReactor{index: map[string]int{}, iface: map[string]string{}, addr: map[string]netip.Prefix{}}
	for i, m := range members {
		fo.Hosts, fo.Addrs, fo.Ports = append(fo.Hosts, m.host), append(fo.Addrs, m.addr.Addr()), append(fo.Ports, m.port)
		r.index[m.host], r.iface[m.host], r.addr[m.host] = i, m.iface, m.addr
	}
	fab, err := reactor.NewReactorFabric(fo)
	if err != nil {
		return nil, fmt.Errorf("REACToR %s: %w", name, err)
	}
	t.lab.closers = append(t.lab.closers, fab.Close)
	r.fabric = fab
	r.net = host.NewHostNet(t.switchPaths(), t.opts.Seed)
	if t.lab.reactor == nil {
		t.lab.reactor = &reactorLab{fabrics: map[string]*reactor.ReactorFabric{}, hosts: map[string]*host.SimHost{}}
	}
	t.lab.reactor.fabrics[name] = fab
	if t.reactors == nil {
		t.reactors = map[string]*twinReactor{}
	}
	t.reactors[name] = r
	return r, nil
}

// reactorMember is a host of a REACToR: its interface on the port of
// the microsecond switch its link reaches, and its address.
type reactorMember struct {
	host, iface string
	port        int
	addr        netip.Prefix
}

// reactorMembers gathers the hosts of the REACToR named, the one
// microsecond switch they hang off, the circuits' rate and the packet
// switch's, and what is wrong with them.
type reactorMembers struct {
	t            *twin
	name         string
	members      []reactorMember
	sw           string
	linkBps, eps float64
	problems     []error
}

// addHost adds host hn: its link to the switch, and its reactor_eps_gbps,
// which every host of the REACToR must agree on.
func (rm *reactorMembers) addHost(hn string, hd *inventory.Device) {
	var m *reactorMember
	for _, l := range rm.t.out.Links {
		for _, e := range [][2]inventory.Endpoint{{l.A, l.B}, {l.B, l.A}} {
			if mm := rm.member(hn, hd, l, e); mm != nil {
				m = mm
			}
		}
	}
	if m == nil {
		rm.problems = append(rm.problems, fmt.Errorf("%s: %s: on REACToR %s, but no link of it reaches a simulated microsecond switch (driver mordia-rest)", hd.Pos, hn, rm.name))
		return
	}
	e := 0.0
	if v, ok := hd.Options["reactor_eps_gbps"]; ok {
		g, err := strconv.ParseFloat(v, 64)
		if err != nil || g <= 0 {
			rm.problems = append(rm.problems, fmt.Errorf("%s: %s: reactor_eps_gbps %q: expected a positive number of Gb/s", hd.Pos, hn, v))
			return
		}
		e = g * 1e9
	}
	if rm.eps != 0 && e != rm.eps {
		rm.problems = append(rm.problems, fmt.Errorf("%s: %s: reactor_eps_gbps %g, where the other hosts of REACToR %s say %g", hd.Pos, hn, e/1e9, rm.name, rm.eps/1e9))
		return
	}
	rm.eps = e
	rm.members = append(rm.members, *m)
}

// member is host hn as link l's end e[0] makes it a member, when e[1] is
// a simulated microsecond switch: on the REACToR's one switch, a numbered
// port, an interface address, the rate of the REACToR's other links.
// Nil when the link reaches no such switch or is wrong (a problem).
func (rm *reactorMembers) member(hn string, hd *inventory.Device, l *inventory.Link, e [2]inventory.Endpoint) *reactorMember {
	ocs := rm.t.lab.ocs
	if e[0].Device != hn || ocs == nil || ocs.micro[e[1].Device] == nil {
		return nil
	}
	if rm.sw != "" && rm.sw != e[1].Device {
		rm.problems = append(rm.problems, fmt.Errorf("%s: link %s: REACToR %s has its hosts on %s and %s; a fabric is built around one microsecond switch", l.Pos, l.Name, rm.name, rm.sw, e[1].Device))
		return nil
	}
	rm.sw = e[1].Device
	port, err := strconv.Atoi(e[1].Port)
	if err != nil {
		rm.problems = append(rm.problems, fmt.Errorf("%s: link %s: port %q of %s: expected a number", l.Pos, l.Name, e[1].Port, rm.sw))
		return nil
	}
	addr, err := netip.ParsePrefix(hd.Ports[e[0].Port])
	if err != nil {
		rm.problems = append(rm.problems, fmt.Errorf("%s: %s: port %s: expected an interface address such as 10.20.0.1/24: %w", hd.Pos, hn, e[0].Port, err))
		return nil
	}
	tr, _ := inventory.LookupTransceiver(l.Transceiver)
	if rm.linkBps != 0 && tr.RateBps != rm.linkBps {
		rm.problems = append(rm.problems, fmt.Errorf("%s: link %s: %s on a REACToR whose other hosts run at %g Gb/s", l.Pos, l.Name, l.Transceiver, rm.linkBps/1e9))
		return nil
	}
	rm.linkBps = tr.RateBps
	return &reactorMember{host: hn, iface: e[0].Port, port: port, addr: addr}
}
