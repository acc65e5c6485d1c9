package host

import (
	"context"
	"net"
	"net/netip"
	"testing"
)

// A long-lived simulated lab never runs out of ports: port-0 listeners and
// outgoing connections each cycle over the ephemeral range, wrapping at its
// end. Dials and listeners once shared one counter of which only dials
// wrapped: after a few fct runs every listener got a port above 65535
// ("10.0.0.2:74995 is not an IPv4 address and port").
func TestHostPortsWrapAndStayValid(t *testing.T) {
	n := NewHostNet(func(string) (Path, error) { return Path{Up: true, FEC: "none", Bps: 25e9}, nil }, 1)
	n.Route("sw1", "sw2", "f12")
	n.Route("sw2", "sw1", "f21")
	h1, err := n.AddHost(HostOptions{Name: "h1", Addr: netip.MustParsePrefix("10.0.0.1/24"), Switch: "sw1"})
	if err != nil {
		t.Fatal(err)
	}
	defer h1.Close()
	h2, err := n.AddHost(HostOptions{Name: "h2", Addr: netip.MustParsePrefix("10.0.0.2/24"), Switch: "sw2"})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	ctx := context.Background()
	// A server that stays: the port-0 listeners after it must skip its port.
	keep, err := h2.listen(ctx, "tcp", "10.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	kept := keep.Addr().(*net.TCPAddr).Port
	valid := func(what string, p int) {
		t.Helper()
		if p < ephemeralLow || p > ephemeralHigh {
			t.Fatalf("%s port %d outside the ephemeral range %d-%d", what, p, ephemeralLow, ephemeralHigh)
		}
	}
	seenListen := map[int]int{}
	const rounds = 2*(ephemeralHigh-ephemeralLow+1) + 100 // every port, twice over
	for i := 0; i < rounds; i++ {
		l, err := h2.listen(ctx, "tcp", "0.0.0.0:0")
		if err != nil {
			t.Fatalf("listen %d: %v", i, err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		valid("listener", p)
		if p == kept {
			t.Fatalf("listener %d got port %d, which the kept server holds", i, p)
		}
		seenListen[p]++
		if i%200 == 0 { // a connection through it, on its own port cycle
			go func() {
				if c, err := l.Accept(); err == nil {
					c.Close()
				}
			}()
			c, err := h1.dial(ctx, "tcp", netip.AddrPortFrom(netip.MustParseAddr("10.0.0.2"), uint16(p)).String())
			if err != nil {
				t.Fatalf("dial %d: %v", i, err)
			}
			valid("client", c.LocalAddr().(*net.TCPAddr).Port)
			c.Close()
		}
		l.Close()
	}
	if len(seenListen) != ephemeralHigh-ephemeralLow { // the range less the kept one
		t.Errorf("listeners used %d ports, want every port of the range but the kept one (%d)", len(seenListen), ephemeralHigh-ephemeralLow)
	}
}
