package simlab

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/crypto/ssh"

	"testbed/hostagent"
	"testbed/inventory"
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
	fabric *ReactorFabric
	hosts  map[string]*SimHost
	net    *HostNet
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
	fo := ReactorFabricOptions{Name: reactorName, OCS: m, LinkBps: reactorLinkBps, EPSBps: reactorEPSBps, Seed: opts.Seed, Log: opts.Log}
	for _, b := range bench {
		fo.Hosts, fo.Addrs, fo.Ports = append(fo.Hosts, b.name), append(fo.Addrs, b.addr.Addr()), append(fo.Ports, b.port)
	}
	fab, err := NewReactorFabric(fo)
	if err != nil {
		return err
	}
	l.closers = append(l.closers, fab.Close)
	rl := &reactorLab{fabric: fab, hosts: map[string]*SimHost{}, net: NewHostNet(l.dp, opts.Seed)}
	l.reactor = rl
	kh, err := os.OpenFile(knownHosts, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", reactorName, err)
	}
	defer kh.Close()
	addrs := map[string]string{}
	for i, b := range bench {
		l.faults[b.name] = &Faults{}
		h, err := rl.net.AddHost(HostOptions{Name: b.name, User: hostUser, Authorized: []ssh.PublicKey{signer.PublicKey()}, Listen: opts.Listen + ":0",
			Serial: fmt.Sprintf("SIMR%06d", (opts.Seed+uint64(i))%1000000), Iface: reactorIface, Addr: b.addr, Switch: reactorName,
			Faults: l.faults[b.name], Log: opts.Log})
		if err != nil {
			return fmt.Errorf("%s emulator: %w", b.name, err)
		}
		h.mu.Lock()
		h.reactor = fab.HostControl(i, reactorIface)
		h.mu.Unlock()
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

// ReactorFabric returns the lab's REACToR fabric ("rtor1"), or nil.
func (l *Lab) ReactorFabric(name string) *ReactorFabric {
	if l.reactor == nil || name != reactorName {
		return nil
	}
	return l.reactor.fabric
}

// ReactorHost returns a host of the lab's REACToR fabric by name.
func (l *Lab) ReactorHost(name string) *SimHost {
	if l.reactor == nil {
		return nil
	}
	return l.reactor.hosts[name]
}

// reactorHost is what the host's agent does REACToR host control with:
// its fabric's, or nothing on a host that is on none. A simulated host
// never falls back to the machine's own tc. h.mu held.
func (h *SimHost) reactorHost() hostagent.ReactorHost {
	if h.reactor != nil {
		return h.reactor
	}
	return noReactor{host: h.name, sw: h.sw}
}

// noReactor answers not_available for a simulated host that no REACToR
// serves.
type noReactor struct{ host, sw string }

func (n noReactor) err() error {
	return notAvailable("simulated host %s is cabled to %s, not to a REACToR", n.host, n.sw)
}

func (n noReactor) Status(context.Context) (hostagent.ReactorStatus, error) {
	return hostagent.ReactorStatus{Backend: "simulated", Reason: fmt.Sprintf("simulated host %s is cabled to %s, not to a REACToR", n.host, n.sw)}, nil
}
func (n noReactor) Setup(context.Context, hostagent.ReactorSetup) error          { return n.err() }
func (n noReactor) Teardown(context.Context) error                               { return nil }
func (n noReactor) Pause(context.Context, hostagent.ReactorPause) error          { return n.err() }
func (n noReactor) SetRates(context.Context, hostagent.ReactorRates) error       { return n.err() }
func (n noReactor) SetSchedule(context.Context, hostagent.ReactorSchedule) error { return n.err() }
func (n noReactor) Heartbeat(context.Context, hostagent.ReactorHeartbeat) (hostagent.ReactorHeartbeatAck, error) {
	return hostagent.ReactorHeartbeatAck{}, n.err()
}
func (n noReactor) Demand(context.Context) (hostagent.ReactorDemand, error) {
	return hostagent.ReactorDemand{}, n.err()
}
func (n noReactor) Windows(context.Context, uint64) (hostagent.ReactorWindows, error) {
	return hostagent.ReactorWindows{}, n.err()
}
func (n noReactor) StartSink(context.Context, hostagent.ReactorSinkRequest) (hostagent.ReactorSink, error) {
	return hostagent.ReactorSink{}, n.err()
}
func (n noReactor) StartFlows(context.Context, hostagent.ReactorFlowsRequest) ([]hostagent.ReactorFlow, error) {
	return nil, n.err()
}
func (n noReactor) Flows(context.Context) (hostagent.ReactorFlows, error) {
	return hostagent.ReactorFlows{}, n.err()
}
func (n noReactor) StopFlows(context.Context) error { return nil }
func (n noReactor) Close() error                    { return nil }
