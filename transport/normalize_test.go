package transport

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"unicode"
)

// endpoint is one network endpoint of a device: what a lease must key on.
type endpoint struct {
	scheme string // ssh, http, tcp
	host   string // an IPv4 or IPv6 address, or a DNS name (Unicode or ASCII)
	port   uint16
}

var testHosts = []string{
	"127.0.0.1", "10.0.0.7", "192.168.1.20", "::1", "2001:db8::5", "fe80::1:2:3:4",
	"voa1.lab", "sw1", "bücher.example", "münchen.lab", "xn--nxasmm1c.lab",
}

// spell writes one spelling of e, chosen by r: every form the dialer and a
// resolver read as the same endpoint.
func spell(r *rand.Rand, e endpoint) string {
	scheme := e.scheme
	if scheme == "http" && r.IntN(2) == 0 {
		scheme = "HTTP"
	}
	host := e.host
	if ip, err := netip.ParseAddr(host); err == nil {
		host = spellIP(r, ip)
	} else {
		host = spellName(r, host)
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	port := fmt.Sprint(e.port)
	if r.IntN(2) == 0 {
		port = strings.Repeat("0", 1+r.IntN(3)) + port // RFC 3986 allows leading zeros
	}
	hostport := host + ":" + port
	if def := defaultPorts[e.scheme]; def == uint64(e.port) && r.IntN(2) == 0 {
		hostport = host
	}
	user := ""
	if e.scheme == "ssh" && r.IntN(2) == 0 {
		user = []string{"root@", "admin@"}[r.IntN(2)]
	}
	tail := ""
	if e.scheme == "http" && r.IntN(2) == 0 {
		tail = []string{"/", "/api/v1", "/?x=1"}[r.IntN(3)]
	}
	ws := []string{"", " ", "\t"}[r.IntN(3)]
	return ws + scheme + "://" + user + hostport + tail + ws
}

func spellIP(r *rand.Rand, ip netip.Addr) string {
	if ip.Is4() {
		switch r.IntN(3) {
		case 0:
			return "::ffff:" + ip.String() // IPv4-mapped IPv6
		case 1:
			if ip.IsLoopback() && ip == netip.AddrFrom4([4]byte{127, 0, 0, 1}) {
				return []string{"localhost", "LocalHost", "localhost."}[r.IntN(3)]
			}
		}
		return ip.String()
	}
	b := ip.As16()
	groups := make([]string, 8)
	for i := range groups {
		v := uint16(b[2*i])<<8 | uint16(b[2*i+1])
		switch r.IntN(3) {
		case 0:
			groups[i] = fmt.Sprintf("%04x", v) // full, with leading zeros
		case 1:
			groups[i] = fmt.Sprintf("%X", v)
		default:
			groups[i] = fmt.Sprintf("%x", v)
		}
	}
	return strings.Join(groups, ":") // uncompressed
}

func spellName(r *rand.Rand, name string) string {
	var b strings.Builder
	for _, c := range name {
		if r.IntN(2) == 0 {
			c = unicode.ToUpper(c)
		}
		b.WriteRune(c)
	}
	s := b.String()
	switch name {
	case "bücher.example":
		if r.IntN(2) == 0 {
			s = "xn--bcher-kva.EXAMPLE"
		}
	case "xn--nxasmm1c.lab":
		if r.IntN(2) == 0 {
			s = "βόλος.lab"
		}
	}
	if r.IntN(3) == 0 {
		s += "." // the fully qualified form
	}
	return s
}

// TestNormalizeAddressSpellings is the property a lease depends on: any two
// spellings of one endpoint give one key, and two endpoints never share one.
func TestNormalizeAddressSpellings(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 1))
	keys := map[endpoint]string{}
	owner := map[string]endpoint{}
	for i := 0; i < 4000; i++ {
		e := endpoint{
			scheme: []string{"ssh", "http", "tcp"}[r.IntN(3)],
			host:   testHosts[r.IntN(len(testHosts))],
			port:   []uint16{22, 80, 443, 5025, 8443, 44633, 65535}[r.IntN(7)],
		}
		a := spell(r, e)
		k := NormalizeAddress(a)
		if prev, ok := keys[e]; ok && prev != k {
			t.Fatalf("%q -> %q, another spelling of %+v -> %q: want one key", a, k, e, prev)
		}
		keys[e] = k
		if o, ok := owner[k]; ok && o != e {
			t.Fatalf("%+v and %+v share the key %q", o, e, k)
		}
		owner[k] = e
	}
}

func TestNormalizeAddressCases(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"tcp://127.0.0.1:044633", "tcp://127.0.0.1:44633"},
		{"tcp://[::ffff:127.0.0.1]:5025", "tcp://127.0.0.1:5025"},
		{"tcp://[2001:DB8:0:0:0:0:0:1]:5025", "tcp://[2001:db8::1]:5025"},
		{"ssh://root@Bücher.Example.:022", "ssh://xn--bcher-kva.example:22"},
		{"https://h", "http://h:443"},
		{"tcp://h:99999", "tcp://h:99999"}, // not a port: unchanged, ParseAddress refuses it
	} {
		if got := NormalizeAddress(c.in); got != c.want {
			t.Errorf("NormalizeAddress(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
