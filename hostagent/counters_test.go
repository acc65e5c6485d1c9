package hostagent

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func TestReadCountersSample(t *testing.T) {
	c, err := ReadCounters("testdata/proc1")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Interfaces) != 3 {
		t.Fatalf("interfaces: got %v", c.Interfaces)
	}
	nic := c.Interfaces["enp65s0f0np0"] // no blank after the colon
	checks := map[string]uint64{
		"rx_bytes": 18446744073709551000, "rx_packets": 9876543210, "rx_errs": 12, "rx_drop": 3,
		"rx_frame": 7, "rx_multicast": 4431, "tx_bytes": 1234567890123, "tx_packets": 987654321, "tx_drop": 1,
	}
	for k, want := range checks {
		if got := nic[k]; got != want {
			t.Errorf("enp65s0f0np0 %s: got %d, want %d", k, got, want)
		}
	}
	if len(nic) != 16 {
		t.Errorf("enp65s0f0np0: %d columns, want 16: %v", len(nic), nic)
	}
	if got := c.Interfaces["lo"]["tx_packets"]; got != 347188 {
		t.Errorf("lo tx_packets: got %d", got)
	}
	if got := c.TCP["RetransSegs"]; got != 3 {
		t.Errorf("Tcp RetransSegs: got %d, want 3", got)
	}
	if got := c.TCP["MaxConn"]; got != -1 {
		t.Errorf("Tcp MaxConn: got %d, want -1", got)
	}
	if _, ok := c.TCPExt["TCPTimeouts"]; !ok || len(c.TCPExt) < 50 {
		t.Errorf("TcpExt: TCPTimeouts missing or too few keys (%d)", len(c.TCPExt))
	}
	if c.Time.IsZero() {
		t.Error("no time")
	}
}

func TestCountersDeltaAndFilter(t *testing.T) {
	before := Counters{
		Interfaces: map[string]IfaceStats{"eth0": {"rx_bytes": 100, "tx_packets": ^uint64(0)}},
		TCP:        map[string]int64{"RetransSegs": 7},
		TCPExt:     map[string]int64{"TCPTimeouts": 1},
	}
	after := Counters{
		Interfaces: map[string]IfaceStats{"eth0": {"rx_bytes": 350, "tx_packets": 4}, "eth1": {"rx_bytes": 9}},
		TCP:        map[string]int64{"RetransSegs": 19},
		TCPExt:     map[string]int64{"TCPTimeouts": 4},
	}
	d := after.Delta(before)
	if d.Interfaces["eth0"]["rx_bytes"] != 250 || d.Interfaces["eth0"]["tx_packets"] != 5 || d.Interfaces["eth1"]["rx_bytes"] != 9 {
		t.Errorf("interfaces delta: %v", d.Interfaces)
	}
	if d.TCP["RetransSegs"] != 12 || d.TCPExt["TCPTimeouts"] != 3 {
		t.Errorf("tcp delta: %v %v", d.TCP, d.TCPExt)
	}
	f := after.Filter("eth1", "nope")
	if len(f.Interfaces) != 1 || f.Interfaces["eth1"] == nil {
		t.Errorf("filter: %v", f.Interfaces)
	}
}

func TestCountersErrors(t *testing.T) {
	if _, err := ReadCounters(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing dev: got %v, want fs.ErrNotExist", err)
	}
	bad := []string{
		"Inter-|\n face |bytes packets|bytes\n eth0: 1 2 3 4\n", // too many values
		"Inter-|\n face |bytes|bytes\n eth0 1 2\n",              // no colon
		"Inter-|\n face |bytes|bytes\n eth0: 1 x\n",             // not a number
		"Inter-|\n face bytes bytes\n",                          // header
	}
	for _, in := range bad {
		if _, err := ParseNetDev(strings.NewReader(in)); err == nil {
			t.Errorf("ParseNetDev(%q): no error", in)
		}
	}
	badSNMP := []string{
		"Tcp: A B\nTcp: 1\n",
		"Tcp: A B\nUdp: 1 2\n",
		"Tcp: A B\n",
		"Tcp: A\nTcp: x\n",
	}
	for _, in := range badSNMP {
		if _, err := ParseSNMP(strings.NewReader(in)); err == nil {
			t.Errorf("ParseSNMP(%q): no error", in)
		}
	}
}
