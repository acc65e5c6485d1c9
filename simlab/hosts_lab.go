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
	"testbed/simlab/wire"
)

// The default bench's end hosts (LinkGuardian §4.3): h1 behind sw1 and h2
// behind sw2, each on a 100G port of its switch, so that traffic from h1 to
// h2 crosses the 100G LinkGuardian fibre lg100 and its VOA.
type benchHost struct {
	name, sw    string
	swPort      string // the switch's port (inventory name) the host is cabled to
	devPort     int
	iface, addr string
	transceiver string
}

func hostBench() []benchHost {
	return []benchHost{
		{"h1", "sw1", "host", 152, "eth1", "10.0.0.1/24", "100GBASE-SR4"},
		{"h2", "sw2", "host", 152, "eth1", "10.0.0.2/24", "100GBASE-SR4"},
	}
}

// hostFibre is the switch fibre host traffic crosses from sw1 to sw2.
const hostFibre = "lg100"

// hostUser is the simulated hosts' login account.
const hostUser = "testbed"

// hostagentStandIn is the file the simulated lab's inventory offers as the
// prebuilt hostagent for linux/amd64. A simulated host does not execute
// what is uploaded: it runs the agent's code in-process, at this build's
// version; the file only has to say that version, as the real binary does.
func hostagentStandIn() string {
	return `#!/bin/sh
# hostagent stand-in for the testbed's simulated hosts. A simulated host runs
# the hostagent's own code in-process at the version below, whatever file was
# uploaded (simlab/host/hosts.go); elsewhere this file only answers --version.
case "$1" in
--version) echo "hostagent ` + hostagent.Version + `" ;;
*) echo "this hostagent stand-in runs on the testbed's simulated hosts only" >&2; exit 1 ;;
esac
`
}

// addBenchHosts adds the hosts, their switch ports and their cables to
// the bench inventory. The options make the host driver install the
// stand-in: hostagent_source names the lab's directory, which holds no
// source, so nothing is built.
func addBenchHosts(inv *inventory.Inventory, sw switchAccess) {
	for _, b := range hostBench() {
		addr := sw.hosts[b.name]
		inv.Devices[b.name] = &inventory.Device{Name: b.name, Kind: "host", Driver: "linux-ssh", Address: addr,
			Description: "simulated Linux host (runs the hostagent in-process)",
			Credentials: &inventory.Credentials{KeyFile: sw.keyFile},
			Ports:       map[string]string{b.iface: b.addr},
			Options: map[string]string{"known_hosts": sw.knownHost, "hostagent_amd64": filepath.Join(sw.labDir, "hostagent-simulated"),
				"hostagent_source": sw.labDir, "hostagent_version": hostagent.Version}}
		inv.Devices[b.sw].Ports[b.swPort] = strconv.Itoa(b.devPort)
		inv.Links = append(inv.Links, &inventory.Link{
			Name: b.name + "-" + b.sw, A: inventory.Endpoint{Device: b.name, Port: b.iface}, B: inventory.Endpoint{Device: b.sw, Port: b.swPort},
			Transceiver: b.transceiver,
		})
	}
}

// startHosts starts the simulated hosts on a network over the switches'
// dataplane and writes the hostagent stand-in into the lab's directory.
func (l *Lab) startHosts(opts Options, client ssh.PublicKey) ([]*wire.SSHServer, error) {
	if err := os.WriteFile(filepath.Join(l.dir, "hostagent-simulated"), []byte(hostagentStandIn()), 0o755); err != nil {
		return nil, err
	}
	l.hostNet = host.NewHostNet(switchPaths(l.dp), l.world.Seed())
	l.hostNet.Route("sw1", "sw2", hostFibre)
	l.hosts = map[string]*host.SimHost{}
	var servers []*wire.SSHServer
	for i, b := range hostBench() {
		l.faults[b.name] = &wire.Faults{}
		h, err := l.hostNet.AddHost(host.HostOptions{Name: b.name, User: hostUser, Authorized: []ssh.PublicKey{client}, Listen: opts.Listen + ":0",
			Serial: fmt.Sprintf("SIMH%06d", (opts.Seed+uint64(i))%1000000), Iface: b.iface, Addr: netip.MustParsePrefix(b.addr),
			Switch: b.sw, Faults: l.faults[b.name], Log: opts.Log})
		if err != nil {
			return nil, fmt.Errorf("%s emulator: %w", b.name, err)
		}
		l.hosts[b.name] = h
		l.closers = append(l.closers, h.Close)
		servers = append(servers, h.SSH())
	}
	return servers, nil
}

// hostAddrs are the inventory addresses of the running hosts.
func (l *Lab) hostAddrs() map[string]string {
	m := map[string]string{}
	for n, h := range l.hosts {
		m[n] = "ssh://" + hostUser + "@" + h.SSH().Addr()
	}
	return m
}

// Host returns a simulated host by name ("h1", "h2").
func (l *Lab) Host(name string) *host.SimHost { return l.hosts[name] }

// host.HostNet is the simulated hosts' network.
func (l *Lab) HostNet() *host.HostNet { return l.hostNet }
