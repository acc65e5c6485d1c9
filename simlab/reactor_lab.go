package simlab

import (
	"testbed/simlab/host"
	"testbed/simlab/reactor"
)

// The default bench's REACToR (REACToR §4's prototype, at the size of its
// Mordia; benches/default.yaml): a hybrid ToR, rtor1, whose 24 hosts
// rh1..rh24 hang off ports 1..24 of the microsecond switch ocs1 with
// 10 Gb/s links, and off a packet switch with 10 Gb/s ports that the hosts
// limit themselves to (the prototype's 1 Gb/s is what its hosts set, §4).
// Each host's link to the switch is an inventory link from its eth1 to the
// switch's port; the packet switch's rate at each host is the host's
// option reactor_eps_gbps. A twin builds it (twin_ocs.go).
const (
	reactorName  = "rtor1"
	reactorHosts = 24
	reactorIface = "eth1"
	reactorXcvr  = "10GBASE-SR"
)

// reactorLab is the lab's fabrics and their hosts.
type reactorLab struct {
	fabrics map[string]*reactor.ReactorFabric // by name
	hosts   map[string]*host.SimHost
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
