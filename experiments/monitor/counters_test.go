package monitor

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"testbed/hostagent"
)

// agentWithDev runs a real hostagent on loopback HTTP reading its NIC
// counters from dir/dev (nothing in dir: a host without NIC counters).
func agentWithDev(t *testing.T, dir string) *hostagent.Client {
	t.Helper()
	a := hostagent.New(hostagent.Options{ProcNet: dir, Hostname: filepath.Base(dir)})
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() { srv.Close(); a.Close() })
	return hostagent.NewClient(srv.Client(), srv.URL)
}

// writeDev writes a /proc/net/dev with one interface's packet and error
// counts, in the kernel's layout.
func writeDev(t *testing.T, dir, iface string, rxPackets, rxErrs, txPackets uint64) {
	t.Helper()
	s := "Inter-|   Receive                                                |  Transmit\n" +
		" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" +
		fmt.Sprintf("%6s: %d %d %d 0 0 0 0 0 %d %d 0 0 0 0 0 0\n", iface, rxPackets*1500, rxPackets, rxErrs, txPackets*1500, txPackets)
	if err := os.WriteFile(filepath.Join(dir, "dev"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Host ends are read through the hostagent's counters: a direction whose
// receiving NIC counts receive errors at 1e-3 of what it takes in is
// found corrupting from rx_packets and rx_errs; a host whose agent has no
// NIC counters is reported unavailable, not as a read error, and its
// direction stays unknown. Host ends never get LinkGuardian.
func TestMonitorReadsHostNICCounters(t *testing.T) {
	d1, d2, d3 := t.TempDir(), t.TempDir(), t.TempDir()
	hosts := map[string]HostCounterReader{"h1": agentWithDev(t, d1), "h2": agentWithDev(t, d2), "h3": agentWithDev(t, d3)}
	dirs := []Direction{
		{Dir: Dir{Link: "h1h2", Direction: "a>b", Sender: "h1"}, Receiver: "h2", TxName: "eth1", RxName: "eth1", TxHost: true, RxHost: true},
		{Dir: Dir{Link: "h1h3", Direction: "a>b", Sender: "h1"}, Receiver: "h3", TxName: "eth1", RxName: "eth1", TxHost: true, RxHost: true},
	}
	pol, err := NewPolicy(PolicyConfig{TargetLoss: 1e-9}, 1e-4, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMonitorWith(dirs, nil, hosts, Config{Threshold: 1e-4, Window: 1_000_000}, pol, 5*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Unix(1e9, 0)
	var tx, rx, bad uint64
	for i := 0; i < 12; i++ {
		writeDev(t, d1, "eth1", 0, 0, tx)
		writeDev(t, d2, "eth1", rx, bad, 0)
		ds, err := m.Poll(ctx, now)
		if err != nil {
			t.Fatalf("poll %d: %v", i, err)
		}
		if len(ds) != 0 {
			t.Fatalf("decisions on a host link: %+v", ds)
		}
		tx += 100_000
		rx += 99_900
		bad += 100
		now = now.Add(time.Second)
	}
	st, errs := m.Snapshot()
	if len(errs) != 0 {
		t.Fatalf("read errors: %v", errs)
	}
	if st[0].State != Corrupting || st[0].Counters != "" || st[0].Rate < 0.9e-3 || st[0].Rate > 1.1e-3 {
		t.Fatalf("h1>h2: %+v", st[0])
	}
	if st[1].State != Unknown || !strings.Contains(st[1].Counters, "no NIC counters") {
		t.Fatalf("h1>h3 (no counters): %+v", st[1])
	}
	if _, err := NewMonitorWith(dirs, nil, map[string]HostCounterReader{"h1": hosts["h1"]}, Config{Threshold: 1e-4}, nil, time.Second, slog.New(slog.DiscardHandler)); err == nil ||
		!strings.Contains(err.Error(), "host h2") {
		t.Fatalf("missing host reader: %v", err)
	}
}

// The stronger-FEC proposal (FEC paper §4.5): once per corrupting episode,
// only on uncorrectable codewords, only to a mode the transceiver
// supports, never when FEC counters are unavailable.
func TestStrongerFECProposal(t *testing.T) {
	for _, c := range []struct{ xcvr, mode, want string }{
		{"25GBASE-SR", "none", "rs528"}, // no FC-FEC in the table for 25GBASE-SR
		{"25GBASE-SR", "rs528", ""},
		{"50GBASE-SR", "none", "rs544"},
		{"100GBASE-SR4", "none", "rs528"},
		{"10GBASE-SR", "none", ""},
		{"unknown-module", "fc", "rs528"},
	} {
		if got := StrongerFEC(c.xcvr, c.mode); got != c.want {
			t.Errorf("StrongerFEC(%s, %s) = %q, want %q", c.xcvr, c.mode, got, c.want)
		}
	}
	pol, err := NewPolicy(PolicyConfig{TargetLoss: 1e-9}, 1e-4, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := Dir{Link: "lg25", Direction: "a>b", Sender: "sw1"}
	bad := Status{State: Corrupting, Frames: 1e6, Losses: 1e3, Low: 9e-4, High: 1.1e-3}
	f := FECStatus{Available: true, Mode: "none", LastCorrected: 0, LastUncorrected: 0}
	if ds := pol.DecideFEC(d, bad, f, "25GBASE-SR"); len(ds) != 0 {
		t.Fatalf("no uncorrectable codewords, yet %+v", ds)
	}
	f.LastUncorrected, f.LastCorrected = 7, 1000
	if ds := pol.DecideFEC(d, bad, FECStatus{Reason: "unavailable"}, "25GBASE-SR"); len(ds) != 0 {
		t.Fatalf("unavailable counters, yet %+v", ds)
	}
	ds := pol.DecideFEC(d, bad, f, "25GBASE-SR")
	if len(ds) != 1 || ds[0].Action != ActProposeFEC || ds[0].FECMode != "rs528" || ds[0].Evidence.FEC == nil ||
		ds[0].Evidence.FEC.LastUncorrected != 7 || !strings.Contains(ds[0].Rule, "§4.5") {
		t.Fatalf("proposal %+v", ds)
	}
	if again := pol.DecideFEC(d, bad, f, "25GBASE-SR"); len(again) != 0 {
		t.Fatalf("proposed twice in one episode: %+v", again)
	}
	pol.DecideFEC(d, Status{State: Clean}, f, "25GBASE-SR")
	if next := pol.DecideFEC(d, bad, f, "25GBASE-SR"); len(next) != 1 {
		t.Fatalf("a new episode proposes again: %+v", next)
	}
}
