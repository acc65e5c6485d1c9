package hostagent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// IfaceStats are one interface's counters from /proc/net/dev, named
// rx_<column> and tx_<column> after the file's header (rx_bytes, tx_drop...).
type IfaceStats map[string]uint64

// Counters is a snapshot of a host's interface and TCP counters.
type Counters struct {
	Time       time.Time             `json:"time"`
	Interfaces map[string]IfaceStats `json:"interfaces"`
	TCP        map[string]int64      `json:"tcp"`     // /proc/net/snmp "Tcp:"
	TCPExt     map[string]int64      `json:"tcp_ext"` // /proc/net/netstat "TcpExt:"
}

// ReadCounters reads dev, snmp and netstat under procNet (normally
// /proc/net). Without dev the answer is an error that wraps fs.ErrNotExist.
func ReadCounters(procNet string) (Counters, error) {
	c := Counters{Time: time.Now().UTC()}
	var err error
	if c.Interfaces, err = parseFile(filepath.Join(procNet, "dev"), ParseNetDev); err != nil {
		return c, err
	}
	snmp, err := parseFile(filepath.Join(procNet, "snmp"), ParseSNMP)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return c, err
	}
	netstat, err := parseFile(filepath.Join(procNet, "netstat"), ParseSNMP)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return c, err
	}
	c.TCP, c.TCPExt = snmp["Tcp"], netstat["TcpExt"]
	return c, nil
}

func parseFile[T any](path string, parse func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	v, err := parse(f)
	if err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// ParseNetDev parses /proc/net/dev.
func ParseNetDev(r io.Reader) (map[string]IfaceStats, error) {
	sc := bufio.NewScanner(r)
	var names []string
	out := map[string]IfaceStats{}
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		switch line {
		case 1:
			continue
		case 2: // " face |bytes packets ...|bytes packets ..."
			parts := strings.Split(text, "|")
			if len(parts) != 3 {
				return nil, fmt.Errorf("line 2: want a header of three |-separated parts, got %q", text)
			}
			for _, f := range strings.Fields(parts[1]) {
				names = append(names, "rx_"+f)
			}
			for _, f := range strings.Fields(parts[2]) {
				names = append(names, "tx_"+f)
			}
			continue
		}
		name, rest, ok := strings.Cut(text, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: no interface name in %q", line, text)
		}
		fields := strings.Fields(rest)
		if len(fields) != len(names) {
			return nil, fmt.Errorf("line %d: %d values for %d columns", line, len(fields), len(names))
		}
		st := make(IfaceStats, len(names))
		for i, f := range fields {
			v, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: %v", line, names[i], err)
			}
			st[names[i]] = v
		}
		out[strings.TrimSpace(name)] = st
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if names == nil {
		return nil, errors.New("no header")
	}
	return out, nil
}

// ParseSNMP parses the format of /proc/net/snmp and /proc/net/netstat: for
// each table a line "Name: key key ..." followed by "Name: value value ...".
func ParseSNMP(r io.Reader) (map[string]map[string]int64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20) // TcpExt lines are long
	out := map[string]map[string]int64{}
	var keys []string
	var table string
	for line := 1; sc.Scan(); line++ {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			if strings.TrimSpace(sc.Text()) == "" {
				continue
			}
			return nil, fmt.Errorf("line %d: no table name", line)
		}
		fields := strings.Fields(rest)
		if keys == nil {
			table, keys = name, fields
			continue
		}
		if name != table {
			return nil, fmt.Errorf("line %d: values of %q after the keys of %q", line, name, table)
		}
		if len(fields) != len(keys) {
			return nil, fmt.Errorf("line %d: %s: %d values for %d keys", line, table, len(fields), len(keys))
		}
		m := make(map[string]int64, len(keys))
		for i, f := range fields {
			v, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				u, uerr := strconv.ParseUint(f, 10, 64)
				if uerr != nil {
					return nil, fmt.Errorf("line %d: %s %s: %v", line, table, keys[i], err)
				}
				v = int64(u)
			}
			m[keys[i]] = v
		}
		out[table] = m
		keys = nil
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if keys != nil {
		return nil, fmt.Errorf("%s: keys without values", table)
	}
	return out, nil
}

// Delta returns c minus before: the counts between two snapshots. Interface
// counters wrap modulo 2^64. Interfaces and keys missing from before count
// from zero.
func (c Counters) Delta(before Counters) Counters {
	d := Counters{Time: c.Time, Interfaces: map[string]IfaceStats{}, TCP: map[string]int64{}, TCPExt: map[string]int64{}}
	for name, st := range c.Interfaces {
		ds := IfaceStats{}
		for k, v := range st {
			ds[k] = v - before.Interfaces[name][k]
		}
		d.Interfaces[name] = ds
	}
	for k, v := range c.TCP {
		d.TCP[k] = v - before.TCP[k]
	}
	for k, v := range c.TCPExt {
		d.TCPExt[k] = v - before.TCPExt[k]
	}
	return d
}

// Filter keeps only the named interfaces (all when names is empty).
func (c Counters) Filter(names ...string) Counters {
	if len(names) == 0 {
		return c
	}
	keep := map[string]IfaceStats{}
	for _, n := range names {
		if st, ok := c.Interfaces[n]; ok {
			keep[n] = st
		}
	}
	c.Interfaces = keep
	return c
}
