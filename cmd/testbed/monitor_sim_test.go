package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"testbed/dut/tofino"
	"testbed/experiments/monitor"
	"testbed/instruments/voa"
	"testbed/orchestrator"
	lg "testbed/p4/linkguardian"
	"testbed/results"
)

// The monitor against the simulated lab, through the drivers: line-rate
// frames cross lg25 while its VOA (voa3 channel 1) is driven until the
// link corrupts; the monitor finds it on the counters alone and, in dry
// run, decides LinkGuardian with Eq. 2's copies. The reverse direction,
// idle, stays unknown. The switch's clock is stepped between polls.
func TestMonitorFindsCorruptionOnSimulatedLab(t *testing.T) {
	lab, inv := startLab(t, 22)
	_, state := dirs(t)
	if code, _, errOut := testbedRun(t, "switch", "deploy", "sw1", "sw2", "--inventory", inv, "--state-dir", state); code != exitOK {
		t.Fatalf("deploy: exit %d: %s", code, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	li := lab.Inventory()
	sws := map[string]*tofino.Switch{}
	for name, prog := range map[string]string{"sw1": "sender", "sw2": "receiver"} {
		d, _ := li.Device(name)
		od, err := orchestrator.OpenDevice(ctx, d, nil)
		if err != nil {
			t.Fatal(err)
		}
		sw := od.Driver.(*tofino.Switch)
		t.Cleanup(func() { sw.Close() })
		sws[name] = sw
		if err := sw.StartSwitchd(ctx, prog); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for port, gbps := range map[string]int{"p1": 100, "p2": 25} {
			n, _ := strconv.Atoi(d.Ports[port])
			if err := sw.AddPort(ctx, n, gbps, "none"); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	}
	vd, _ := li.Device("voa3")
	vod, err := orchestrator.OpenDevice(ctx, vd, nil)
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
	// An N776x powers up with its shutters closed: give lg25 light.
	if err := att.(voa.Shutter).SetShutter(ctx, 1, true); err != nil {
		t.Fatal(err)
	}
	if err := att.SetAttenuation(ctx, 1, 0); err != nil {
		t.Fatal(err)
	}

	all, err := monitor.Directions(li)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []monitor.Direction
	for _, d := range all {
		if d.Link == "lg25" {
			dirs = append(dirs, d)
		}
	}
	cfg := monitor.Config{Threshold: 1e-4, Quiet: time.Minute}
	pol, err := monitor.NewPolicy(monitor.PolicyConfig{TargetLoss: 1e-9}, cfg.Threshold, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := monitor.NewMonitor(dirs, map[string]monitor.CounterReader{"sw1": sws["sw1"], "sw2": sws["sw2"]}, cfg, pol, 5*time.Second,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	tx := dirs[0].TxPort
	if err := sws["sw1"].StartPktgen(ctx, tofino.Pktgen{AppID: 1, Port: 68, EgressPort: tx, PacketBytes: 1514,
		Interval: 492 * time.Nanosecond, Batches: 1000, PerBatch: 10000}); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1e9, 0)
	clock, err := sws["sw1"].Clock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var decided []monitor.Decision
	poll := func(steps int, until func() bool) {
		t.Helper()
		for i := 0; i < steps && !until(); i++ {
			clock += 20 * time.Millisecond
			if _, err := sws["sw1"].WaitClock(ctx, clock); err != nil {
				t.Fatal(err)
			}
			now = now.Add(time.Second)
			ds, err := m.Poll(ctx, now)
			if err != nil {
				t.Fatal(err)
			}
			decided = append(decided, ds...)
		}
	}
	// A clear fibre: judged clean, nothing decided.
	poll(30, func() bool { st, _ := m.Snapshot(); return st[0].State == monitor.Clean })
	if st, _ := m.Snapshot(); st[0].State != monitor.Clean || len(decided) != 0 {
		t.Fatalf("at 0 dB: %+v, decisions %+v", st[0], decided)
	}
	// The VOA closes in: lg25 corrupts.
	if err := att.SetAttenuation(ctx, 1, attLG25); err != nil {
		t.Fatal(err)
	}
	from := clock
	poll(40, func() bool { return len(decided) > 0 })
	st, _ := m.Snapshot()
	t.Logf("lg25 at %.1f dB: detected after %s of traffic: %+v", attLG25, clock-from, st[0].Status)
	if len(decided) != 1 || decided[0].Direction != "a>b" || decided[0].Action != monitor.ActEnableLG {
		t.Fatalf("decisions %+v", decided)
	}
	if want, _ := lg.Copies(1e-9, decided[0].Evidence.High); decided[0].Copies != want || decided[0].Evidence.Losses == 0 {
		t.Fatalf("decision %+v: Eq. 2 gives %d copies", decided[0], want)
	}
	if st[0].State != monitor.Corrupting || st[1].State != monitor.Unknown {
		t.Fatalf("states %s %s", st[0].State, st[1].State)
	}
	// lg25's ports run without FEC: the driver's FEC counters read no
	// codeword lock, said so, not an error.
	if st[0].FEC == nil || st[0].FEC.Available || !strings.Contains(st[0].FEC.Reason, "no FEC codeword lock") {
		t.Fatalf("FEC status %+v", st[0].FEC)
	}
	// Carried out as testbed monitor does without --dry-run: sw1 gets
	// LinkGuardian's entries for lg25's port under a lease taken and
	// released for the action, no undo journal left behind.
	actor := &monitor.Actor{Inv: li, Store: &orchestrator.FileLeases{L: orchestrator.NewLeaser(state, time.Minute, nil)},
		Switches: map[string]monitor.SwitchActor{"sw1": sws["sw1"], "sw2": sws["sw2"]}, Owner: "test", RunID: "monitor-test"}
	m.Carry(ctx, actor, decided)
	if decided[0].Outcome != monitor.OutcomeDone {
		t.Fatalf("enable not carried out: %+v", decided[0])
	}
	es, err := sws["sw1"].Entries(ctx, lg.TableRetxMcast)
	if err != nil || len(es) != 1 || es[0].Key["egress_port"] != int64(tx) || es[0].Data["num_copies"] != int64(decided[0].Copies) {
		t.Fatalf("sw1 %s: %+v %v", lg.TableRetxMcast, es, err)
	}
	if j, _ := filepath.Glob(filepath.Join(state, "leases", "*.journal")); len(j) != 0 {
		t.Fatalf("undo journals left: %v", j)
	}
	// What the endpoints serve.
	mm := monitor.NewMetrics()
	mm.Update(m, decided)
	addr, stop, err := serveMonitor("127.0.0.1:0", m, mm)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	get := func(path string) string {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+path, nil)
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if body := get("/metrics"); !strings.Contains(body, `testbed_monitor_state{direction="a>b",link="lg25"} 2`) ||
		!strings.Contains(body, `testbed_monitor_decisions_total{action="linkguardian_enable",outcome="done"} 1`) {
		t.Fatalf("/metrics:\n%s", body)
	}
	if body := get("/status"); !strings.Contains(body, `"state":"corrupting"`) || !strings.Contains(body, `"state":"unknown"`) {
		t.Fatalf("/status: %s", body)
	}
	// The decision journaled: a monitor bundle that verifies.
	j := monitor.NewJournal(t.TempDir(), results.Lab{Simulated: true, Name: li.Name}, results.CurrentSoftware("test"), nil)
	if err := j.Record(decided[0]); err != nil {
		t.Fatal(err)
	}
	dir := j.Dir()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := results.Verify(dir); err != nil || !rep.OK {
		t.Fatalf("journal %s: %+v %v", dir, rep, err)
	}
	// The event carries the decision's evidence and what became of it.
	if ev, err := os.ReadFile(filepath.Join(dir, "events.jsonl")); err != nil || !strings.Contains(string(ev), `"outcome":"done"`) ||
		!strings.Contains(string(ev), `"losses":`) || !strings.Contains(string(ev), `"rule":`) {
		t.Fatalf("journal events: %s %v", ev, err)
	}
}

// attLG25 is an attenuation at which the simulated lg25 (25GBASE-SR, no
// FEC) loses frames well above the test's 1e-4 threshold (about 8e-3).
const attLG25 = 8.0
