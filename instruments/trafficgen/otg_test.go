package trafficgen_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"testbed/instruments/trafficgen"
	"testbed/simlab/physics"
	simtg "testbed/simlab/trafficgen"
	"testbed/simlab/wire"
	"testbed/simlab/world"
)

// otgLab starts an OTG emulator on HTTP whose port eth1 transmits over a
// 25G fibre through a VOA channel to eth2.
func otgLab(t *testing.T, seed uint64) (*world.VOAChannel, *wire.Faults, string) {
	t.Helper()
	w := world.New(seed)
	tr, _ := physics.TransceiverByName("25GBASE-SR")
	fec, _ := physics.FECByName("none")
	v := w.NewVOA("voa1", "Keysight Technologies", "N7764A", "SIM1", "1.0", 1, 0, 60, 1.5, 1e6)
	w.NewFibre("l25g", tr, fec, 1.0, 0.5, v.Channels[0])
	f := &wire.Faults{}
	srv := simtg.NewOTGServer(w, []simtg.OTGPort{{Location: "eth1", TxFibre: "l25g"}, {Location: "eth2"}}, f, simtg.OTGOptions{TimeScale: 1e5})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return v.Channels[0], f, srv.Addr()
}

func open(t *testing.T, addr string, timeout time.Duration) trafficgen.Generator {
	t.Helper()
	g, err := trafficgen.Open(context.Background(), "otg", addr, trafficgen.Options{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func config(packets int64) trafficgen.Config {
	return trafficgen.Config{
		Ports: []trafficgen.Port{{Name: "p1", Location: "eth1"}, {Name: "p2", Location: "eth2"}},
		Flows: []trafficgen.Flow{{Name: "f1", TxPort: "p1", RxPort: "p2", FrameBytes: 1518, RatePercent: 100, Packets: packets}},
	}
}

// run sends packets frames and waits by asking until the flow has stopped.
func run(t *testing.T, g trafficgen.Generator, packets int64, poll time.Duration) trafficgen.FlowMetrics {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := g.Configure(ctx, config(packets)); err != nil {
		t.Fatal(err)
	}
	if err := g.Start(ctx, "f1"); err != nil {
		t.Fatal(err)
	}
	for {
		ms, err := g.FlowMetrics(ctx, "f1")
		if err != nil {
			t.Fatal(err)
		}
		if ms[0].Transmit == trafficgen.StateStopped {
			return ms[0]
		}
		time.Sleep(poll)
	}
}

func TestOTGSendsFramesAcrossTheModelledFibre(t *testing.T) {
	ch, _, addr := otgLab(t, 5)
	g := open(t, addr, 5*time.Second)
	id, _ := g.Identity(context.Background())
	if id.Model == "" || !strings.Contains(id.Firmware, "api") {
		t.Errorf("identity %+v", id)
	}
	m := run(t, g, 5_000_000, time.Millisecond)
	if m.FramesTx != 5_000_000 || m.FramesRx != m.FramesTx {
		t.Fatalf("at 0 dB: %+v, want every frame through", m)
	}
	// Near the 25G no-FEC cliff frames are lost: from the optics model.
	ch.SetAttenuation(8.5)
	m = run(t, g, 5_000_000, time.Millisecond)
	if m.FramesTx != 5_000_000 || m.FramesRx >= m.FramesTx || m.FramesRx == 0 {
		t.Fatalf("at 8.5 dB: %+v, want some but not all frames lost", m)
	}
	pm, err := g.PortMetrics(context.Background(), "p1", "p2")
	if err != nil || pm[0].FramesTx != m.FramesTx || pm[1].FramesRx != m.FramesRx {
		t.Fatalf("port metrics %+v %v", pm, err)
	}
}

func TestOTGDeterministicWhateverThePolling(t *testing.T) {
	final := func(seed uint64, poll time.Duration) int64 {
		ch, _, addr := otgLab(t, seed)
		ch.SetAttenuation(8.5)
		return run(t, open(t, addr, 5*time.Second), 3_000_000, poll).FramesRx
	}
	a, b, c := final(9, time.Millisecond), final(9, 7*time.Millisecond), final(10, time.Millisecond)
	if a != b {
		t.Errorf("same seed, different polling: %d vs %d frames received", a, b)
	}
	if a == c {
		t.Errorf("different seeds gave identical counts (%d): the seed does not reach the model", a)
	}
}

func TestOTGErrors(t *testing.T) {
	_, faults, addr := otgLab(t, 1)
	g := open(t, addr, 300*time.Millisecond)
	ctx := context.Background()
	bad := config(10)
	bad.Flows[0].TxPort = "p9"
	err := g.Configure(ctx, bad)
	var ae *trafficgen.APIError
	if !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(err.Error(), `tx port "p9" not configured`) {
		t.Fatalf("validation error: %v", err)
	}
	faults.FailNext(500, "port eth1 link down")
	if err := g.Configure(ctx, config(10)); err == nil || !strings.Contains(err.Error(), "500 internal: port eth1 link down") {
		t.Fatalf("device error: %v", err)
	}
	faults.StallNext(1)
	start := time.Now()
	if err := g.Start(ctx); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stall: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("deadline not honoured")
	}
	faults.DropNext(1)
	if err := g.Stop(ctx); err == nil {
		t.Fatal("dropped connection not reported")
	}
	// One garbled or dropped reply to a read is ridden through (tried once
	// more); two in a row fail it, saying what came.
	faults.GarbleNext(1)
	if _, err := g.FlowMetrics(ctx); err != nil {
		t.Fatalf("one garbled reply: %v", err)
	}
	faults.DropNext(1)
	if _, err := g.PortMetrics(ctx); err != nil {
		t.Fatalf("one dropped reply: %v", err)
	}
	faults.GarbleNext(2)
	if _, err := g.FlowMetrics(ctx); err == nil || !strings.Contains(err.Error(), "not the expected JSON") {
		t.Fatalf("garbage twice: %v", err)
	}
	if _, err := trafficgen.Open(ctx, "ixnetwork", addr, trafficgen.Options{}); err == nil || !strings.Contains(err.Error(), "otg") {
		t.Fatalf("unknown driver: %v", err)
	}
}
