package simlab

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"testbed/dut/tofino"
	"testbed/internal/readfile"
	lg "testbed/p4/linkguardian"
	"testbed/simlab/scenario"
)

// A scenario's dirty connector on lg25, seen through the switch driver
// alone: the receiver's FCS errors jump while the connector is dirty and
// fall back once it is cleaned, at the switches' clock; the transceiver's
// DDM reports the received power step. Nothing in the scenario states a
// loss rate: the losses come from the received power through the optics
// model.
func TestScenarioDirtyConnectorCorruptsThroughTheOptics(t *testing.T) {
	lab, err := StartDefault(Options{Seed: 41})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	ctx := hostTestCtx(t)
	s := &scenario.Scenario{Name: "dirty", Impairments: []scenario.Impairment{
		{Kind: scenario.DirtyConnector, Link: "lg25", Start: 100 * time.Millisecond, StepDB: 2, CleanAt: 200 * time.Millisecond}}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := lab.ApplyScenario(s); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"nowhere", "l10g"} { // l10g joins the traffic generator's ports, not two switches
		if err := lab.ApplyScenario(&scenario.Scenario{Impairments: []scenario.Impairment{{Kind: scenario.TxDegrade, Link: bad, DBPerHour: 1}}}); err == nil {
			t.Fatalf("a scenario on %s was applied", bad)
		}
	}
	// lg25 through voa3 channel 1 at an attenuation where it loses little.
	v, _ := lab.World().VOA("voa3")
	v.Channels[0].SetShutter(true)
	v.Channels[0].SetAttenuation(6)
	time.Sleep(v.Channels[0].SettleTime())

	sws := map[string]*tofino.Switch{}
	for name, prog := range map[string]string{"sw1": lg.ProgramSender, "sw2": lg.ProgramReceiver} {
		sw := openSimSwitch(t, lab, name)
		if err := sw.StartSwitchd(ctx, prog); err != nil {
			t.Fatal(err)
		}
		d, _ := lab.Inventory().Device(name)
		n, _ := strconv.Atoi(d.Ports["p2"])
		if err := sw.AddPort(ctx, n, 25, "none"); err != nil {
			t.Fatal(err)
		}
		sws[name] = sw
	}
	d1, _ := lab.Inventory().Device("sw1")
	port, _ := strconv.Atoi(d1.Ports["p2"])
	start, err := sws["sw1"].Clock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if start >= 100*time.Millisecond {
		t.Fatalf("the switches' clock is at %s already", start)
	}
	if err := sws["sw1"].StartPktgen(ctx, tofino.Pktgen{AppID: 1, Port: 68, EgressPort: port, PacketBytes: 1514,
		Interval: 492 * time.Nanosecond, Batches: 100, PerBatch: 10000}); err != nil {
		t.Fatal(err)
	}
	fcsAt := func(at time.Duration) int64 {
		t.Helper()
		if _, err := sws["sw1"].WaitClock(ctx, at); err != nil {
			t.Fatal(err)
		}
		c, err := sws["sw2"].PortCounters(ctx, port)
		if err != nil {
			t.Fatal(err)
		}
		return c.Values["$FramesReceivedwithFCSError"]
	}
	f0 := fcsAt(100 * time.Millisecond)
	f1 := fcsAt(200 * time.Millisecond)
	f2 := fcsAt(300 * time.Millisecond)
	clean1, dirty, clean2 := f0, f1-f0, f2-f1
	t.Logf("FCS errors: before %d, dirty %d, after cleaning %d", clean1, dirty, clean2)
	if dirty < 100 || dirty < 20*(clean1+1) || dirty < 20*(clean2+1) {
		t.Fatalf("FCS errors before %d, dirty %d, after %d: the dirty connector did not corrupt", clean1, dirty, clean2)
	}
}

// A scenario file is read only when it is a regular file under 1 MiB: a
// directory, or a file past the bound, is refused before it is read.
func TestLoadScenarioBoundsWhatItReads(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadScenario(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", 1<<20)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadScenario(big); !errors.Is(err, readfile.ErrTooLarge) {
		t.Errorf("a file past 1 MiB: %v", err)
	}
}
