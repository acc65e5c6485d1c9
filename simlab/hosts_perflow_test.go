package simlab

import (
	"strconv"
	"testing"
	"time"

	"testbed/dut/host"
	"testbed/dut/tofino"
	"testbed/hostagent"
	lg "testbed/p4/linkguardian"
)

// Per-flow FCT runs on the simulated hosts: each trial is a new
// connection whose fct1 comes from the connection's own capture, and
// the sender's loss-emulation table drops at its rate whatever the
// frame size, as LinkGuardian's artifact measures Fig. 10.
func TestSimulatedHostsPerFlowFCTWithProgramDrop(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector makes its 30,000 connections four times slower: make test runs it without")
	}
	lab, ctx, sw1, _ := startLG100(t, 35)
	agents := map[string]*hostagent.Client{}
	for _, name := range []string{"h1", "h2"} {
		h, d := openSimHost(t, lab, name)
		if _, err := h.InstallAgent(ctx, host.AgentBinary{Path: d.Options["hostagent_amd64"]}); err != nil {
			t.Fatal(err)
		}
		a, err := h.StartAgent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []host.Setting{host.RouteRTOMin("10.0.0.0/24", time.Millisecond), host.Sysctl("net.ipv4.tcp_timestamps", "0")} {
			if _, _, err := h.Apply(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		agents[name] = hostagent.NewClient(a.Client, a.BaseURL)
	}
	srv, err := agents["h2"].StartFCTServer(ctx, hostagent.FCTServerRequest{Listen: "10.0.0.2:0"})
	if err != nil {
		t.Fatal(err)
	}
	target := "10.0.0.2:" + strconv.Itoa(srv.Port)
	const trials = 10_000
	run := func(what string, conn string) hostagent.FCTSummary {
		t.Helper()
		st, err := agents["h1"].RunFCT(ctx, hostagent.FCTRunRequest{Target: target, Trials: trials, Warmup: 10, Connection: conn})
		if err != nil || st.State != hostagent.StateDone {
			t.Fatalf("%s: %+v, %v", what, st, err)
		}
		s := *st.Summary
		t.Logf("%-28s timing %-4s p50 %6.1f us  p99.9 %8.1f us  max %9.1f us  retransmitting trials %d",
			what, s.Timing, micros(s.P50NS), micros(s.P999NS), micros(s.MaxNS), s.Retrans.Trials)
		return s
	}
	persistent := run("lossless, persistent", hostagent.ConnPersistent)
	lossless := run("lossless, per-flow", hostagent.ConnPerFlow)
	if persistent.Timing != hostagent.TimingApp || lossless.Timing != hostagent.TimingFCT1 {
		t.Fatalf("timings %q (persistent) and %q (per-flow), want app and fct1", persistent.Timing, lossless.Timing)
	}
	// fct1 is one round trip of the data segment and its quick ACK: no
	// answer, no application wake-up on either side.
	if lossless.P50NS >= persistent.P50NS || lossless.Retrans.Trials != 0 {
		t.Fatalf("per-flow lossless fct1 p50 %v not below the persistent request/response %v (or retransmitted: %d)",
			time.Duration(lossless.P50NS), time.Duration(persistent.P50NS), lossless.Retrans.Trials)
	}

	// The artifact's drop_random_pkts(p), here 4e-3: the loss-emulation table on
	// the sender drops floor(p*2^20) of its 2^20 random numbers.
	n := lg.DropTableEntries(4e-3)
	for i := range n {
		if err := sw1.AddEntry(ctx, lg.TableEmulateDrop, tofino.Entry{Key: map[string]int64{lg.KeyRandNum: int64(i)}, Action: lg.ActionDrop}); err != nil {
			t.Fatal(err)
		}
	}
	off := run("drop 4e-3, per-flow", hostagent.ConnPerFlow)
	// One data frame per flow: about 0.4% of the flows lose it, whatever
	// its size, and only those retransmit data (a lost SYN delays the
	// connection, not fct1, and the capture does not count it).
	if off.Retrans.Trials < 20 || off.Retrans.Trials > 70 {
		t.Errorf("%d of %d new connections retransmitted data at a drop rate of 4e-3 (expected about 40)", off.Retrans.Trials, trials)
	}
	if off.MaxNS < int64(time.Millisecond) {
		t.Errorf("the slowest affected flow took %v: no RTO", time.Duration(off.MaxNS))
	}
}
