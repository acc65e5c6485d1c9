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

// trexLab starts a TRex emulator on ZeroMQ over TCP whose port 0 transmits
// over a 25G fibre through a VOA channel to port 1; port 2 is cabled to
// nothing.
func trexLab(t *testing.T, seed uint64) (*world.VOAChannel, *wire.Faults, string) {
	t.Helper()
	w := world.New(seed)
	tr, _ := physics.TransceiverByName("25GBASE-SR")
	fec, _ := physics.FECByName("none")
	v := w.NewVOA("voa1", "Keysight Technologies", "N7764A", "SIM1", "1.0", 1, 0, 60, 1.5, 1e6)
	w.NewFibre("l25g", tr, fec, 1.0, 0.5, v.Channels[0])
	f := &wire.Faults{}
	srv := simtg.NewTRexServer(w, []simtg.TRexPort{{TxFibre: "l25g"}, {RxFibre: "l25g"}, {}}, f, simtg.TRexOptions{TimeScale: 1e5})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return v.Channels[0], f, srv.Addr()
}

func openTRex(t *testing.T, addr string, timeout time.Duration) trafficgen.Generator {
	t.Helper()
	g, err := trafficgen.Open(context.Background(), "trex", addr, trafficgen.Options{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func trexConfig(packets int64) trafficgen.Config {
	return trafficgen.Config{
		Ports: []trafficgen.Port{{Name: "p1", Location: "0"}, {Name: "p2", Location: "1"}},
		Flows: []trafficgen.Flow{{Name: "f1", TxPort: "p1", RxPort: "p2", FrameBytes: 1518, RatePercent: 100, Packets: packets}},
	}
}

// trexRun configures, starts and waits by asking until the flow stops.
func trexRun(t *testing.T, g trafficgen.Generator, cfg trafficgen.Config, poll time.Duration) trafficgen.FlowMetrics {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := g.Configure(ctx, cfg); err != nil {
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
		select {
		case <-ctx.Done():
			t.Fatalf("flow still %s: %+v", ms[0].Transmit, ms[0])
		case <-time.After(poll):
		}
	}
}

func TestTRexSendsFramesAcrossTheModelledFibre(t *testing.T) {
	ch, _, addr := trexLab(t, 5)
	g := openTRex(t, addr, 5*time.Second)
	id, _ := g.Identity(context.Background())
	if id.Vendor != "Cisco" || !strings.HasPrefix(id.Model, "TRex") || !strings.Contains(id.Firmware, "STL 5.0") {
		t.Errorf("identity %+v", id)
	}
	m := trexRun(t, g, trexConfig(3_000_000), time.Millisecond)
	if m.FramesTx != 3_000_000 || m.FramesRx != m.FramesTx || m.BytesTx != 3_000_000*1518 || m.BytesRx != m.BytesTx {
		t.Fatalf("at 0 dB: %+v, want every frame through", m)
	}
	// Near the 25G no-FEC cliff frames are lost: from the optics model.
	ch.SetAttenuation(8.5)
	m = trexRun(t, g, trexConfig(3_000_000), time.Millisecond)
	if m.FramesTx != 3_000_000 || m.FramesRx >= m.FramesTx || m.FramesRx == 0 {
		t.Fatalf("at 8.5 dB: %+v, want some but not all frames lost", m)
	}
	if want := 100 * float64(m.FramesTx-m.FramesRx) / float64(m.FramesTx); m.Loss != want {
		t.Errorf("loss %g%%, want %g%%", m.Loss, want)
	}
	pm, err := g.PortMetrics(context.Background(), "p1", "p2")
	if err != nil || pm[0].FramesTx != m.FramesTx || pm[1].FramesRx != m.FramesRx || pm[0].FramesRx != 0 || pm[1].BytesRx != m.BytesRx {
		t.Fatalf("port metrics %+v %v, flow %+v", pm, err, m)
	}
}

// A continuous flow runs until stopped, at the rate its percentage of the
// 25G line gives, and its counters agree with that rate.
func TestTRexContinuousFlowStops(t *testing.T) {
	_, _, addr := trexLab(t, 3)
	g := openTRex(t, addr, 5*time.Second)
	ctx := context.Background()
	cfg := trexConfig(0)
	cfg.Flows[0].RatePercent = 10
	cfg.Flows[0].FrameBytes = 64
	if err := g.Configure(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var m trafficgen.FlowMetrics
	for m.FramesTx < 1_000_000 {
		ms, err := g.FlowMetrics(ctx, "f1")
		if err != nil {
			t.Fatal(err)
		}
		m = ms[0]
		if m.Transmit != trafficgen.StateStarted {
			t.Fatalf("continuous flow %s after %d frames", m.Transmit, m.FramesTx)
		}
	}
	// 10% of the 25G data rate in 64 B frames, each 20 B more on the line.
	if want := 0.10 * 25e9 / (84 * 8); m.FramesTxRate < want*0.999 || m.FramesTxRate > want*1.001 {
		t.Errorf("tx rate %g frames/s, want %g", m.FramesTxRate, want)
	}
	if err := g.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	ms, err := g.FlowMetrics(ctx, "f1")
	if err != nil || ms[0].Transmit != trafficgen.StateStopped || ms[0].FramesTx < m.FramesTx {
		t.Fatalf("after stop: %+v %v", ms, err)
	}
	again, _ := g.FlowMetrics(ctx, "f1")
	if again[0].FramesTx != ms[0].FramesTx {
		t.Errorf("a stopped flow still counts: %d then %d", ms[0].FramesTx, again[0].FramesTx)
	}
}

func TestTRexDeterministicWhateverThePolling(t *testing.T) {
	final := func(seed uint64, poll time.Duration) int64 {
		ch, _, addr := trexLab(t, seed)
		ch.SetAttenuation(8.5)
		return trexRun(t, openTRex(t, addr, 5*time.Second), trexConfig(3_000_000), poll).FramesRx
	}
	a, b, c := final(9, time.Millisecond), final(9, 7*time.Millisecond), final(10, time.Millisecond)
	if a != b {
		t.Errorf("same seed, different polling: %d vs %d frames received", a, b)
	}
	if a == c {
		t.Errorf("different seeds gave identical counts (%d): the seed does not reach the model", a)
	}
}

// Two drivers (two users) cannot both own a port; the second is told who
// owns it. Closing the first releases the port.
func TestTRexPortOwnership(t *testing.T) {
	_, _, addr := trexLab(t, 1)
	ctx := context.Background()
	a, err := trafficgen.OpenTRex(ctx, addr, trafficgen.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Configure(ctx, trexConfig(10)); err != nil {
		t.Fatal(err)
	}
	b := openTRex(t, addr, 5*time.Second)
	err = b.Configure(ctx, trexConfig(10))
	var re *trafficgen.TRexRPCError
	if !errors.As(err, &re) || re.Code != -32000 || !strings.Contains(err.Error(), "already owned") {
		t.Fatalf("second owner: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Configure(ctx, trexConfig(10)); err != nil {
		t.Fatalf("after the first released: %v", err)
	}
}

func TestTRexErrors(t *testing.T) {
	_, faults, addr := trexLab(t, 1)
	g := openTRex(t, addr, 300*time.Millisecond)
	ctx := context.Background()
	bad := trexConfig(10)
	bad.Ports[1].Location = "7"
	if err := g.Configure(ctx, bad); err == nil || !strings.Contains(err.Error(), "TRex port 7 does not exist") {
		t.Fatalf("unknown port: %v", err)
	}
	bad = trexConfig(10)
	bad.Ports[1].Location = "eth2"
	if err := g.Configure(ctx, bad); err == nil || !strings.Contains(err.Error(), `location "eth2" is not a TRex port number`) {
		t.Fatalf("bad location: %v", err)
	}
	faults.FailNext(-32000, "port 0 link down")
	err := g.Configure(ctx, trexConfig(10))
	var re *trafficgen.TRexRPCError
	if !errors.As(err, &re) || re.Code != -32000 || !strings.Contains(err.Error(), "port 0 link down") {
		t.Fatalf("device error: %v", err)
	}
	faults.StallNext(1)
	start := time.Now()
	if err := g.Configure(ctx, trexConfig(10)); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stall: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("deadline not honoured")
	}
	// After a lost reply the driver dials again and goes on.
	if err := g.Configure(ctx, trexConfig(10)); err != nil {
		t.Fatalf("after a stall: %v", err)
	}
	faults.GarbleNext(1)
	if _, err := g.FlowMetrics(ctx); err == nil || !strings.Contains(err.Error(), "not JSON-RPC 2.0") {
		t.Fatalf("garbage: %v", err)
	}
	if _, err := trafficgen.Open(ctx, "trex", "http://127.0.0.1:4501", trafficgen.Options{}); err == nil || !strings.Contains(err.Error(), "tcp://host[:port]") {
		t.Fatalf("bad address: %v", err)
	}
}

// An undo in a later process: a driver that configured nothing stops the
// traffic an earlier driver of the same user left running (taking the port
// over from that session), and leaves another user's alone, saying so.
func TestTRexStopsTrafficLeftRunning(t *testing.T) {
	_, _, addr := trexLab(t, 2)
	ctx := context.Background()
	running := func(g trafficgen.Generator) string {
		ms, err := g.FlowMetrics(ctx, "f1")
		if err != nil {
			t.Fatal(err)
		}
		return ms[0].Transmit
	}
	first := openTRex(t, addr, 5*time.Second)
	cfg := trexConfig(0)
	cfg.Flows[0].RatePercent = 1
	if err := first.Configure(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := first.Start(ctx); err != nil {
		t.Fatal(err)
	}
	later := openTRex(t, addr, 5*time.Second)
	if err := later.Stop(ctx); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if s := running(first); s != trafficgen.StateStopped {
		t.Fatalf("after the later driver's Stop the flow is %s", s)
	}

	t.Setenv("USER", "someone-else")
	other := openTRex(t, addr, 5*time.Second)
	if err := other.Configure(ctx, trafficgen.Config{Ports: []trafficgen.Port{{Name: "x", Location: "0"}, {Name: "y", Location: "1"}},
		Flows: []trafficgen.Flow{{Name: "f1", TxPort: "x", RxPort: "y", FrameBytes: 64, RatePercent: 1}}}); err == nil {
		t.Fatal("another user configured ports the first driver owns")
	}
	first.Close() // releases its ports
	if err := other.Configure(ctx, trafficgen.Config{Ports: []trafficgen.Port{{Name: "x", Location: "0"}, {Name: "y", Location: "1"}},
		Flows: []trafficgen.Flow{{Name: "f1", TxPort: "x", RxPort: "y", FrameBytes: 64, RatePercent: 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := other.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Setenv("USER", "me")
	mine := openTRex(t, addr, 5*time.Second)
	if err := mine.Stop(ctx); err == nil || !strings.Contains(err.Error(), `port 0 transmits for "someone-else"`) {
		t.Fatalf("another user's traffic: %v", err)
	}
	if s := running(other); s != trafficgen.StateStarted {
		t.Fatalf("another user's flow is %s after our undo", s)
	}
}

// A metrics read over ZeroMQ from the emulator: get_pgid_stats and
// get_port_status for one running flow.
func BenchmarkTRexFlowMetrics(b *testing.B) {
	w := world.New(1)
	tr, _ := physics.TransceiverByName("25GBASE-SR")
	fec, _ := physics.FECByName("none")
	v := w.NewVOA("voa1", "Keysight Technologies", "N7764A", "SIM1", "1.0", 1, 0, 60, 1.5, 1e6)
	w.NewFibre("l25g", tr, fec, 1.0, 0.5, v.Channels[0])
	srv := simtg.NewTRexServer(w, []simtg.TRexPort{{TxFibre: "l25g"}, {RxFibre: "l25g"}}, nil, simtg.TRexOptions{TimeScale: 1})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	g, err := trafficgen.Open(ctx, "trex", srv.Addr(), trafficgen.Options{Timeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	cfg := trexConfig(0)
	cfg.Flows[0].RatePercent = 1
	if err := g.Configure(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	if err := g.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := g.FlowMetrics(ctx, "f1"); err != nil {
			b.Fatal(err)
		}
	}
}
