package simlab

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/crypto/ssh"

	"testbed/hostagent"
	"testbed/inventory"
	"testbed/simlab/host"
	"testbed/simlab/reactor"
	"testbed/simlab/wire"
)

// The default lab's REACToR (REACToR §4's prototype, at the size of its
// Mordia): a hybrid ToR, rtor1, whose 24 hosts rh1..rh24 hang off ports
// 1..24 of the microsecond switch ocs1 with 10 Gb/s links, and off a
// packet switch with 10 Gb/s ports that the hosts limit themselves to
// (the prototype's 1 Gb/s is what its hosts set, §4). Each host's link to
// the switch is an inventory link from its eth1 to the switch's port; the
// packet switch's rate at each host is the host's option reactor_eps_gbps.
const (
	reactorName    = "rtor1"
	reactorOCS     = ocsMicroName
	reactorHosts   = 24
	reactorIface   = "eth1"
	reactorLinkBps = 10e9
	reactorEPSBps  = 10e9
	reactorXcvr    = "10GBASE-SR"
)

// reactorLab is the lab's fabric and its hosts.
type reactorLab struct {
	fabrics map[string]*reactor.ReactorFabric // by name
	hosts   map[string]*host.SimHost
	net     *host.HostNet
}

type reactorHost struct {
	name string
	addr netip.Prefix
	port int
}

func reactorBench() []reactorHost {
	var out []reactorHost
	for i := 1; i <= reactorHosts; i++ {
		out = append(out, reactorHost{name: fmt.Sprintf("rh%d", i), addr: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 20, 0, byte(i)}), 24), port: i})
	}
	return out
}

// withReactor adds the fabric's hosts and their links to the switch to
// inv; addrs maps host names to their SSH addresses.
func withReactor(inv *inventory.Inventory, addrs map[string]string, keyFile, knownHosts, labDir string) (*inventory.Inventory, error) {
	for _, b := range reactorBench() {
		inv.Devices[b.name] = &inventory.Device{Name: b.name, Kind: "host", Driver: "linux-ssh", Address: addrs[b.name],
			Description: fmt.Sprintf("simulated Linux host on REACToR %s (port %d of %s; runs the hostagent in-process)", reactorName, b.port, reactorOCS),
			Credentials: &inventory.Credentials{KeyFile: keyFile},
			Ports:       map[string]string{reactorIface: b.addr.String()},
			Options: map[string]string{"known_hosts": knownHosts, "hostagent_amd64": filepath.Join(labDir, "hostagent-simulated"),
				"hostagent_source": labDir, "hostagent_version": hostagent.Version,
				"reactor": reactorName, "reactor_eps_gbps": strconv.FormatFloat(reactorEPSBps/1e9, 'g', -1, 64)}}
		inv.Links = append(inv.Links, &inventory.Link{
			Name: b.name + "-" + reactorOCS, A: inventory.Endpoint{Device: b.name, Port: reactorIface},
			B: inventory.Endpoint{Device: reactorOCS, Port: strconv.Itoa(b.port)}, Transceiver: reactorXcvr,
		})
	}
	data, err := inv.Marshal()
	if err != nil {
		return nil, err
	}
	return inventory.Parse(inv.Path, data)
}

// defaultReactorInventory adds the fabric with placeholder addresses, for
// the dry-run inventory.
func defaultReactorInventory(inv *inventory.Inventory) (*inventory.Inventory, error) {
	addrs := map[string]string{}
	for i, b := range reactorBench() {
		addrs[b.name] = fmt.Sprintf("ssh://%s@127.0.0.1:%d", hostUser, 2300+i+1)
	}
	return withReactor(inv, addrs, "~/.ssh/id_ed25519", "~/.ssh/known_hosts", "~/.testbed/simlab")
}

// startReactor starts the fabric on the lab's microsecond switch, its
// hosts' SSH servers (with the lab's client key and known_hosts), and adds
// them to the lab's inventory.
func (l *Lab) startReactor(opts Options) error {
	m := l.MicroOCS(reactorOCS)
	if m == nil {
		return fmt.Errorf("%s: the lab has no microsecond switch %s", reactorName, reactorOCS)
	}
	keyFile, knownHosts := filepath.Join(l.dir, "sim_ed25519"), filepath.Join(l.dir, "known_hosts")
	pem, err := os.ReadFile(keyFile)
	if err != nil {
		return fmt.Errorf("%s: %w", reactorName, err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		return fmt.Errorf("%s: the lab's client key: %w", reactorName, err)
	}
	bench := reactorBench()
	fo := reactor.ReactorFabricOptions{Name: reactorName, OCS: &fabricSwitch{m: m}, LinkBps: reactorLinkBps, EPSBps: reactorEPSBps, Seed: opts.Seed, Log: opts.Log}
	for _, b := range bench {
		fo.Hosts, fo.Addrs, fo.Ports = append(fo.Hosts, b.name), append(fo.Addrs, b.addr.Addr()), append(fo.Ports, b.port)
	}
	fab, err := reactor.NewReactorFabric(fo)
	if err != nil {
		return err
	}
	l.closers = append(l.closers, fab.Close)
	rl := &reactorLab{fabrics: map[string]*reactor.ReactorFabric{reactorName: fab}, hosts: map[string]*host.SimHost{}, net: host.NewHostNet(switchPaths(l.dp), opts.Seed)}
	l.reactor = rl
	kh, err := os.OpenFile(knownHosts, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", reactorName, err)
	}
	defer kh.Close()
	addrs := map[string]string{}
	for i, b := range bench {
		l.faults[b.name] = &wire.Faults{}
		h, err := rl.net.AddHost(host.HostOptions{Name: b.name, User: hostUser, Authorized: []ssh.PublicKey{signer.PublicKey()}, Listen: opts.Listen + ":0",
			Serial: fmt.Sprintf("SIMR%06d", (opts.Seed+uint64(i))%1000000), Iface: reactorIface, Addr: b.addr, Switch: reactorName,
			Faults: l.faults[b.name], Log: opts.Log})
		if err != nil {
			return fmt.Errorf("%s emulator: %w", b.name, err)
		}
		h.SetReactor(fab.HostControl(i, reactorIface))
		rl.hosts[b.name] = h
		l.closers = append(l.closers, h.Close)
		if _, err := fmt.Fprintln(kh, h.SSH().KnownHostsLine()); err != nil {
			return err
		}
		addrs[b.name] = "ssh://" + hostUser + "@" + h.SSH().Addr()
	}
	inv, err := withReactor(l.inv, addrs, keyFile, knownHosts, l.dir)
	if err != nil {
		return err
	}
	l.inv = inv
	return nil
}

// ReactorFabric returns a REACToR fabric of the lab by name ("rtor1"), or nil.
func (l *Lab) ReactorFabric(name string) *reactor.ReactorFabric {
	if l.reactor == nil {
		return nil
	}
	return l.reactor.fabrics[name]
}

// ReactorHost returns a host of the lab's REACToR fabric by name.
func (l *Lab) ReactorHost(name string) *host.SimHost {
	if l.reactor == nil {
		return nil
	}
	return l.reactor.hosts[name]
}
