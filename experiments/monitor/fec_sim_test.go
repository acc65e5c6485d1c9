package monitor

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"testbed/dut/tofino"
	"testbed/instruments/voa"
	o "testbed/orchestrator"
)

// The monitor reads FEC codeword counters through the switch driver
// (tofino.Switch.FECCounters) of the simulated switches: lg25 a>b runs
// RS(528,514) behind a VOA that leaves the fibre's pre-FEC BER high
// enough for the decoder to correct codewords; the monitor counts them
// per poll. With FEC off the same port reads no codeword lock and the
// monitor says FEC is unavailable, not an error. Over either switch
// driver: BF Runtime gRPC has no FEC counters, its driver reads them
// through the agent side channel (options.agent_ssh).
func TestMonitorReadsFECCountersThroughTheDriver(t *testing.T) {
	for _, driver := range []string{"tofino-bfrt", "tofino-bfrt-grpc"} {
		t.Run(driver, func(t *testing.T) { monitorFEC(t, driver) })
	}
}

func monitorFEC(t *testing.T, driver string) {
	b := newActBenchOver(t, driver)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := b.dir
	vd, _ := b.inv.Device("voa3")
	vod, err := o.OpenDevice(ctx, vd, nil)
	if err != nil {
		t.Fatal(err)
	}
	att := vod.Driver.(voa.Attenuator)
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		att.SetAttenuation(c, 1, 0)
		att.(voa.Shutter).SetShutter(c, 1, false)
	})
	if err := att.(voa.Shutter).SetShutter(ctx, 1, true); err != nil {
		t.Fatal(err)
	}
	if err := att.SetAttenuation(ctx, 1, 8); err != nil {
		t.Fatal(err)
	}
	newMon := func() *Monitor {
		m, err := NewMonitor([]Direction{d}, map[string]CounterReader{"sw1": b.sws["sw1"], "sw2": b.sws["sw2"]},
			Config{Threshold: 1e-4, Quiet: time.Minute}, nil, 5*time.Second, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	sw1 := b.sws["sw1"]
	clock, err := sw1.Clock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sw1.StartPktgen(ctx, tofino.Pktgen{AppID: 1, Port: 68, EgressPort: d.TxPort, PacketBytes: 1514,
		Interval: 492 * time.Nanosecond, Batches: 1000, PerBatch: 10000}); err != nil {
		t.Fatal(err)
	}
	poll := func(m *Monitor, n int) FECStatus {
		t.Helper()
		now := time.Unix(1e9, 0)
		for i := 0; i < n; i++ {
			clock += 10 * time.Millisecond
			if _, err := sw1.WaitClock(ctx, clock); err != nil {
				t.Fatal(err)
			}
			now = now.Add(time.Second)
			if _, err := m.Poll(ctx, now); err != nil {
				t.Fatal(err)
			}
		}
		st, _ := m.Snapshot()
		if st[0].FEC == nil {
			t.Fatalf("no FEC status: %+v", st[0])
		}
		return *st[0].FEC
	}
	// FEC off: no codeword lock, unavailable with the reason.
	if f := poll(newMon(), 2); f.Available || !strings.Contains(f.Reason, "no FEC codeword lock") {
		t.Fatalf("FEC off: %+v", f)
	}
	for _, e := range []struct {
		sw   string
		port int
	}{{"sw1", d.TxPort}, {d.Receiver, d.RxPort}} {
		if _, err := b.sws[e.sw].SetPortMode(ctx, e.port, 25, "rs528"); err != nil {
			t.Fatalf("%s port %d: %v", e.sw, e.port, err)
		}
	}
	f := poll(newMon(), 4)
	t.Logf("RS(528,514) at 8 dB: %+v", f)
	if !f.Available || f.Corrected == 0 {
		t.Fatalf("RS(528,514) at 8 dB: %+v, want corrected codewords counted", f)
	}
}
