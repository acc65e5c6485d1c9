package transport

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Address is a parsed device address:
//
//	tcp://host:5025
//	serial:///dev/ttyUSB0?baud=9600
//	http://host:port, https://host:port/base
//	ssh://user@host:22
type Address struct {
	Scheme string // tcp, serial, http, https, ssh
	Host   string // host:port for network schemes
	Path   string // device path for serial, base path for http(s)
	User   string // for ssh
	Baud   int    // for serial; default 9600
	Raw    string
}

// ParseAddress parses and checks a device address.
func ParseAddress(raw string) (Address, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Address{}, fmt.Errorf("address %q: %w", raw, err)
	}
	a := Address{Scheme: u.Scheme, Host: u.Host, Path: u.Path, Raw: raw}
	if u.User != nil {
		a.User = u.User.Username()
	}
	switch u.Scheme {
	case "tcp", "ssh":
		if u.Hostname() == "" || u.Port() == "" && u.Scheme == "tcp" {
			return Address{}, fmt.Errorf("address %q: expected %s://host:port", raw, u.Scheme)
		}
	case "http", "https":
		if u.Host == "" {
			return Address{}, fmt.Errorf("address %q: expected %s://host[:port][/path]", raw, u.Scheme)
		}
	case "serial":
		if u.Host != "" || !strings.HasPrefix(u.Path, "/") {
			return Address{}, fmt.Errorf("address %q: expected serial:///dev/<port>?baud=<rate> (three slashes)", raw)
		}
		a.Baud = 9600
		if b := u.Query().Get("baud"); b != "" {
			n, err := strconv.Atoi(b)
			if err != nil || n <= 0 {
				return Address{}, fmt.Errorf("address %q: baud %q is not a positive integer", raw, b)
			}
			a.Baud = n
		}
	default:
		return Address{}, fmt.Errorf("address %q: unknown scheme %q (expected tcp, serial, http, https or ssh)", raw, u.Scheme)
	}
	return a, nil
}
