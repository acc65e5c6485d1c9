package transport

import (
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// defaultPorts are the ports a scheme implies when an address names none.
var defaultPorts = map[string]uint64{"ssh": 22, "http": 80, "https": 443}

// NormalizeAddress names the endpoint an address reaches, so that every
// spelling of one endpoint gives one string (the lease key of a device):
//   - scheme and host in lower case; https is http (one device whatever the
//     transport security), the scheme's default port made explicit;
//   - the port read as a number (RFC 3986 allows leading zeros, and the
//     dialer reads "044633" as 44633), so it is written without them;
//   - IP addresses in canonical form (netip): IPv6 compressed and in lower
//     case, an IPv4-mapped IPv6 address as its IPv4 address, "localhost" as
//     127.0.0.1;
//   - host names through IDNA's lookup profile (UTS #46, the mapping a
//     resolver applies), so Unicode and punycode spellings of one name meet,
//     and without a trailing root dot;
//   - the SSH user, the URL path, query and fragment dropped; a serial device
//     path cleaned and its symbolic links resolved.
//
// An address that does not parse comes back trimmed, unchanged otherwise.
func NormalizeAddress(address string) string {
	raw := strings.TrimSpace(address)
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return raw
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == "serial" {
		p := filepath.Clean(u.Path)
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		return "serial://" + p
	}
	host := canonicalHost(u.Hostname())
	var port string
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return raw // not a port: leave it alone, ParseAddress refuses it
		}
		port = strconv.FormatUint(n, 10)
	} else if d, ok := defaultPorts[scheme]; ok {
		port = strconv.FormatUint(d, 10)
	}
	if scheme == "https" {
		scheme = "http"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host
}

// canonicalHost is one spelling of a host: an IP address in netip's
// canonical form, a name as IDNA's lookup profile gives it.
func canonicalHost(h string) string {
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.Unmap().String()
	}
	name := strings.TrimSuffix(h, ".")
	if a, err := idna.Lookup.ToASCII(name); err == nil {
		name = a
	}
	name = strings.ToLower(name)
	if name == "localhost" {
		return "127.0.0.1"
	}
	if ip, err := netip.ParseAddr(name); err == nil { // e.g. full-width digits
		return ip.Unmap().String()
	}
	return name
}
