package fct_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"testbed/experiments/fct"
	"testbed/experiments/lgbench"
	"testbed/hostagent"
	"testbed/results"
)

// The default, as LinkGuardian's artifact measures Fig. 10: a new
// connection per flow timed by fct1, the hosts set as the artifact sets
// them, the loss made by the sender program's random drop at exactly its
// rate. The tail is reported with what makes it honest: the affected
// fraction with its interval, the affected trials' FCTs, the p99.9's
// order-statistic interval and the chance it lands in the timeout tail.
func TestFCTPerFlowProgramDropTail(t *testing.T) {
	if raceDetector {
		t.Skip("30,000 trials, 20 s under the race detector: make test runs it without")
	}
	lab := startLab(t, 43)
	before := hostStates(lab)
	const trials, loss = 10_000, 5e-3
	res, s := run(t, lab, 43, nil, "trials="+strconv.Itoa(trials), "blocks=2", "warmup=10", "transports=tcp",
		"modes=lossless,off,linkguardian", "loss_rate="+strconv.FormatFloat(loss, 'g', -1, 64))
	if res.Status != results.StatusOK {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	if s.LossSource != fct.LossProgram || s.Connection != hostagent.ConnPerFlow || s.Timing != hostagent.TimingFCT1 {
		t.Fatalf("summary: loss source %q, connection %q, timing %q", s.LossSource, s.Connection, s.Timing)
	}
	if s.ActualLoss != lgbench.EmulatedLoss(loss) || s.AttenuationDB != s.RestAttenuationDB {
		t.Errorf("program loss %v at %v dB (rest %v): want exactly %v with the VOA at rest", s.ActualLoss, s.AttenuationDB, s.RestAttenuationDB, lgbench.EmulatedLoss(loss))
	}
	tcp := s.Transports[fct.TCP]
	for _, m := range []string{"lossless", "off", "linkguardian"} {
		x, tl := tcp[m], s.Tails[m]
		t.Logf("%-13s p50 %6.1f us  p99.9 %8.1f us [%8.1f, %8.1f]  affected %d (%.2g [%.2g, %.2g]) p50 %.1f us (x%.1f)  P(miss) %.3g",
			m, x.P50US, x.P999US, tl.P999LowUS, tl.P999HighUS, tl.Affected, tl.AffectedFraction, tl.AffectedLow, tl.AffectedHigh,
			tl.AffectedP50US, tl.AffectedP50VsLossless, tl.PMiss)
	}
	lossless, off, lgd := s.Tails["lossless"], s.Tails["off"], s.Tails["linkguardian"]
	// The switch counts the drops as the artifact did: every frame its
	// emulated drop took, read from the sender's register around each
	// block. With LinkGuardian on, the drops are there and no trial sent
	// data again: the link repaired them.
	t.Logf("switch drops: lossless %d, off %d (affected %d), linkguardian %d (affected %d)",
		tcp["lossless"].SwitchDrops, tcp["off"].SwitchDrops, off.Affected, tcp["linkguardian"].SwitchDrops, lgd.Affected)
	if tcp["lossless"].SwitchDrops != 0 || tcp["off"].SwitchDrops < int64(off.Affected) || tcp["off"].SwitchDrops == 0 || tcp["linkguardian"].SwitchDrops == 0 {
		t.Errorf("switch drops: lossless %d, off %d for %d affected trials, linkguardian %d", tcp["lossless"].SwitchDrops, tcp["off"].SwitchDrops, off.Affected, tcp["linkguardian"].SwitchDrops)
	}
	// One data frame per 143 B flow: the affected fraction is the drop
	// rate, and only without protection.
	if lossless.Affected != 0 || lgd.Affected != 0 || off.AffectedLow > loss || off.AffectedHigh < loss*0.8 {
		t.Errorf("affected: lossless %d, linkguardian %d, off %d [%.3g, %.3g] at a drop of %g", lossless.Affected, lgd.Affected, off.Affected, off.AffectedLow, off.AffectedHigh, loss)
	}
	// An affected flow waits for the loss probe or RTO at rto_min's tick:
	// tens of lossless round trips.
	if off.AffectedP50US < 1000*s.RTOMinMS || off.AffectedP50VsLossless < 20 {
		t.Errorf("off: affected p50 %.1f us (x%.1f lossless)", off.AffectedP50US, off.AffectedP50VsLossless)
	}
	// 5e-3 of 10,000 is 50 affected for a threshold of 11: the p99.9 and
	// both ends of its interval are in the timeout tail, as P(tail) says.
	if off.TailNeed != 11 || off.PMiss > 1e-9 || off.P999LowUS < 1000*s.RTOMinMS || tcp["off"].P999VsLossless < 20 {
		t.Errorf("off tail: need %d, P(miss) %.3g, p99.9 in [%.1f, %.1f] us, x%.1f", off.TailNeed, off.PMiss, off.P999LowUS, off.P999HighUS, tcp["off"].P999VsLossless)
	}
	if tcp["linkguardian"].P999VsLossless > 2 {
		t.Errorf("linkguardian p99.9 x%.2f lossless", tcp["linkguardian"].P999VsLossless)
	}
	checkRestored(t, lab, before)
}

// The simulated ib_write_lat client, like perftest's, fails when it runs
// before its server listens; the recipe tries it again. The receiver's
// ib_write_lat here takes 50 ms to open its RDMA device before it listens
// (perftest opens the device before establish_connection), longer than
// the few milliseconds from the server's start to the client's, so the
// first client of a block is refused and a later one, 20 and 40 ms on,
// finds the server. The sender's refused clients, counted by the
// simulated host, are the recipe's extra client runs, block by block; a
// recipe that did not try again fails its first block (removing the
// retry, the run failed at its first block: "h1: ib_write_lat: failed:
// ib_write_lat: no server"). The loss is 1e-5, the sender's drop table
// ten entries: the retry does not depend on it, and at 1e-3 the table's
// 1,048 entries, each added over the switch's agent, were two thirds of
// the test's CPU under the race detector.
func TestFCTRDMABlocksRetryTheClient(t *testing.T) {
	lab := startLab(t, 44)
	for _, h := range []string{"h1", "h2"} {
		lab.Host(h).SetRDMAOpenTime(50 * time.Millisecond)
	}
	var mu sync.Mutex
	runs := map[string]int{} // mode/block -> client runs
	observe := func(e results.Event, _ func()) {
		if e.Type != "measurement" || e.Fields["transport"] != fct.RDMA {
			return
		}
		n, ok := e.Fields["client_runs"].(int)
		if !ok {
			t.Errorf("rdma block without its client runs: %+v", e.Fields)
			return
		}
		mu.Lock()
		runs[fmt.Sprintf("%v/%v", e.Fields["mode"], e.Fields["block"])] = n
		mu.Unlock()
	}
	res, s := run(t, lab, 44, observe, "trials=200", "blocks=4", "warmup=0", "transports=rdma", "modes=lossless,off", "loss_rate=1e-5")
	if res.Status != results.StatusOK {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	r := s.Transports[fct.RDMA]
	if r["lossless"].Trials != 200 || r["off"].Trials != 200 {
		t.Fatalf("rdma: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	retried, extra := 0, int64(0)
	for _, n := range runs {
		if n > 1 {
			retried++
		}
		extra += int64(n - 1)
	}
	refused := lab.Host("h1").RDMARefused() + lab.Host("h2").RDMARefused()
	t.Logf("client runs per block: %v; %d refused", runs, refused)
	if len(runs) != 8 || refused != extra {
		t.Errorf("%d rdma blocks with %d extra client runs; the hosts refused %d clients", len(runs), extra, refused)
	}
	// The client's start is an agent round trip after the server's: under
	// 50 ms in all but the most loaded blocks.
	if retried < len(runs)/2 {
		t.Errorf("only %d of %d blocks ran their client again: the server's device opening did not delay it", retried, len(runs))
	}
}
