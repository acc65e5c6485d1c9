package fct

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"testbed/dut/host"
	"testbed/dut/p4switch"
	"testbed/experiments/lgbench"
	"testbed/inventory"
	o "testbed/orchestrator"
)

// topology is what fct needs of a lab: a LinkGuardian link (a fibre with a
// VOA between two switches) and a host with the hostagent cabled to each of
// its switches. `exp show fct` prints it; Plan binds it first, so a lab that
// lacks a role is told which and why.
func topology() o.Topology {
	return o.Topology{
		Roles: []o.Role{
			{Name: "tx-switch", Kind: p4switch.Kind, Desc: "runs LinkGuardian's sending side"},
			{Name: "rx-switch", Kind: p4switch.Kind, Desc: "runs LinkGuardian's receiving side"},
			{Name: "client", Kind: host.Kind, Capabilities: []string{host.CapAgent}, Desc: "opens the flows (the hostagent's FCT client)"},
			{Name: "server", Kind: host.Kind, Capabilities: []string{host.CapAgent}, Desc: "answers them (the hostagent's FCT server)"},
		},
		Links: []o.LinkRole{
			{Name: "link", A: "tx-switch", B: "rx-switch", VOA: true, Desc: "the protected link; its loss is set with the VOA"},
			{Name: "client-cable", A: "client", B: "tx-switch", Desc: "the client's port on the sending switch"},
			{Name: "server-cable", A: "server", B: "rx-switch", Desc: "the server's port on the receiving switch"},
		},
	}
}

// attachment is a host's cable to a switch port.
type attachment struct {
	Host    string
	Iface   string
	Addr    netip.Prefix
	Switch  string
	Port    string
	Link    string
	RateBps float64
}

// attachments lists the cables from a host to switch ports: inventory links
// with the host on one end and a switch on the other.
func attachments(inv *inventory.Inventory, hostName string) ([]attachment, error) {
	d, ok := inv.Device(hostName)
	if !ok {
		return nil, fmt.Errorf("no device %q in %s (hosts: %s)", hostName, inv.Path, strings.Join(hostNames(inv), ", "))
	}
	if d.Kind != "host" {
		return nil, inv.DeviceErrorf(d, "kind", "device %s is a %s, not a host", hostName, d.Kind)
	}
	var out []attachment
	for _, l := range inv.Links {
		ends := [][2]inventory.Endpoint{{l.A, l.B}, {l.B, l.A}}
		for _, e := range ends {
			h, sw := e[0], e[1]
			if h.Device != hostName {
				continue
			}
			sd, ok := inv.Device(sw.Device)
			if !ok || sd.Kind != "switch" {
				continue
			}
			addr, err := netip.ParsePrefix(d.Ports[h.Port])
			if err != nil {
				return nil, inv.DeviceErrorf(d, "ports", "host %s port %s (cable %s): %q is not an address with prefix length", hostName, h.Port, l.Name, d.Ports[h.Port])
			}
			a := attachment{Host: hostName, Iface: h.Port, Addr: addr, Switch: sw.Device, Port: sw.Port, Link: l.Name}
			if t, ok := inventory.LookupTransceiver(l.Transceiver); ok {
				a.RateBps = t.RateBps
			}
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, inv.DeviceErrorf(d, "", "host %s is cabled to no switch port: add a link from one of its ports to a switch's", hostName)
	}
	return out, nil
}

func hostNames(inv *inventory.Inventory) []string {
	var out []string
	for _, n := range inv.DeviceNames() {
		if d, _ := inv.Device(n); d.Kind == "host" {
			out = append(out, n)
		}
	}
	return out
}

// hostsOn lists the hosts cabled to a switch.
func hostsOn(inv *inventory.Inventory, sw string) []attachment {
	var out []attachment
	for _, h := range hostNames(inv) {
		as, err := attachments(inv, h)
		if err != nil {
			continue
		}
		for _, a := range as {
			if a.Switch == sw {
				out = append(out, a)
			}
		}
	}
	return out
}

// binding is the recipe's roles filled: the LinkGuardian link, a sender
// host on its sending switch and a receiver host on its receiving switch.
type binding struct {
	Link     lgbench.Link
	Sender   attachment
	Receiver attachment
}

// bind fills the roles. sender, receiver and link may be empty: then the
// lab must offer exactly one way to fill them (among links, the ones as
// fast as the hosts' cables first), or the error says what to set.
func bind(pc *o.PlanContext, sender, receiver, link, sinkPort string) (binding, []o.Binding, error) {
	inv := pc.Lab
	var names []string
	if link != "" {
		names = []string{link}
	}
	links, binds, err := lgbench.Bind(pc, names, sinkPort)
	if err != nil {
		return binding{}, nil, err
	}
	pick := func(role, name, sw string) ([]attachment, string) {
		if name != "" {
			as, err := attachments(inv, name)
			if err != nil {
				return nil, err.Error()
			}
			var on []attachment
			var seen []string
			for _, a := range as {
				if a.Switch == sw {
					on = append(on, a)
				}
				seen = append(seen, a.Switch)
			}
			if len(on) == 0 {
				return nil, fmt.Sprintf("the %s host %s is cabled to %s, not to %s", role, name, strings.Join(seen, ", "), sw)
			}
			return on, ""
		}
		on := hostsOn(inv, sw)
		if len(on) == 0 {
			return nil, fmt.Sprintf("no host is cabled to %s (the %s)", sw, map[string]string{"sender": "sending switch", "receiver": "receiving switch"}[role])
		}
		return on, ""
	}
	type cand struct {
		b    binding
		fast bool
	}
	var cands []cand
	var why []string
	for _, l := range links {
		ss, w1 := pick("sender", sender, l.Sender)
		rs, w2 := pick("receiver", receiver, l.Receiver)
		if w1 != "" || w2 != "" {
			why = append(why, fmt.Sprintf("  link %s (%s -> %s): %s", l.Link.Name, l.Sender, l.Receiver, strings.Join(nonEmpty(w1, w2), "; ")))
			continue
		}
		for _, s := range ss {
			for _, r := range rs {
				if s.Host == r.Host {
					continue
				}
				cands = append(cands, cand{b: binding{Link: l, Sender: s, Receiver: r}, fast: s.RateBps == l.LineRateBps && r.RateBps == l.LineRateBps})
			}
		}
	}
	if len(cands) == 0 {
		msg := fmt.Sprintf("the lab in %s cannot serve the fct recipe: it needs a sender host cabled to the sending switch of a LinkGuardian link (a link with a VOA between two switches) and a receiver host cabled to its receiving switch", inv.Path)
		if len(why) > 0 {
			msg += ":\n" + strings.Join(why, "\n")
		}
		return binding{}, nil, o.Inputf("%s", msg)
	}
	if len(cands) > 1 && slices.ContainsFunc(cands, func(c cand) bool { return c.fast }) {
		cands = slices.DeleteFunc(cands, func(c cand) bool { return !c.fast })
	}
	if len(cands) > 1 {
		var opts []string
		for _, c := range cands {
			opts = append(opts, fmt.Sprintf("  link=%s sender=%s receiver=%s", c.b.Link.Link.Name, c.b.Sender.Host, c.b.Receiver.Host))
		}
		return binding{}, nil, o.Inputf("the lab in %s offers several ways to run the fct recipe; choose one with --set:\n%s", inv.Path, strings.Join(opts, "\n"))
	}
	b := cands[0].b
	var keep []o.Binding
	for _, x := range binds {
		if x.Resource == "link "+b.Link.Link.Name || x.Role != "link" {
			keep = append(keep, x)
		}
	}
	keep = append(keep,
		o.Binding{Role: "sender", Resource: "host " + b.Sender.Host, Detail: fmt.Sprintf("%s %s, cabled to %s:%s (%s)", b.Sender.Iface, b.Sender.Addr, b.Sender.Switch, b.Sender.Port, b.Sender.Link)},
		o.Binding{Role: "receiver", Resource: "host " + b.Receiver.Host, Detail: fmt.Sprintf("%s %s, cabled to %s:%s (%s)", b.Receiver.Iface, b.Receiver.Addr, b.Receiver.Switch, b.Receiver.Port, b.Receiver.Link)})
	return b, keep, nil
}

func nonEmpty(s ...string) []string {
	return slices.DeleteFunc(s, func(x string) bool { return x == "" })
}
