package fct_test

import (
	"context"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"testbed/dut/tofino"
	"testbed/experiments/fct"
	"testbed/experiments/recipetest"
	"testbed/inventory"
	"testbed/orchestrator"
	lg "testbed/p4/linkguardian"
	"testbed/results"
	"testbed/simlab"
	"testbed/transport"
)

func startLab(t *testing.T, seed uint64) *simlab.Lab { return recipetest.StartLab(t, seed) }

// run runs the recipe through the engine against the simulated lab;
// observe sees every event and may abort the run.
func run(t *testing.T, lab *simlab.Lab, seed uint64, observe func(results.Event, func()), sets ...string) (*orchestrator.RunResult, fct.Summary) {
	t.Helper()
	var s fct.Summary
	res := recipetest.Run(t, lab, fct.New(), seed, &s, observe, sets...)
	return res, s
}

// hostState is what the run may change on a simulated host.
type hostState struct {
	routes  []string
	cc      string
	sysctls string // the artifact's settings (paper_sysctls)
}

func hostStates(lab *simlab.Lab) map[string]hostState {
	m := map[string]hostState{}
	for _, h := range []string{"h1", "h2"} {
		cc, _ := lab.Host(h).Sysctl("net.ipv4.tcp_congestion_control")
		var sys []string
		for _, k := range []string{"tcp_no_metrics_save", "tcp_timestamps", "tcp_sack", "tcp_ecn", "tcp_recovery", "tcp_early_retrans"} {
			v, _ := lab.Host(h).Sysctl("net.ipv4." + k)
			sys = append(sys, k+"="+v)
		}
		m[h] = hostState{routes: lab.Host(h).Routes(), cc: cc, sysctls: strings.Join(sys, " ")}
	}
	return m
}

// checkRestored: the VOA at rest, no protection entry on the sender, the
// hosts' routes and congestion control as found, no agent left running.
func checkRestored(t *testing.T, lab *simlab.Lab, before map[string]hostState) {
	t.Helper()
	v, _ := lab.World().VOA("voa3")
	for i, c := range v.Channels {
		if a := c.Target(); a != 0 {
			t.Errorf("voa3 channel %d left at %.2f dB", i+1, a)
		}
	}
	d, _ := lab.Inventory().Device("sw1")
	sw, err := tofino.Open(context.Background(), d.Address, tofino.Options{SSH: transport.SSHOptions{KeyFile: d.Credentials.KeyFile, KnownHosts: d.Options["known_hosts"]}})
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	for _, table := range []string{lg.TableLinkProtect, lg.TableRetxMcast, lg.TableEmulateDrop} {
		if es, err := sw.Entries(context.Background(), table); err != nil || len(es) != 0 {
			t.Errorf("sw1 %s after the run: %+v, %v", table, es, err)
		}
	}
	after := hostStates(lab)
	for h, b := range before {
		a := after[h]
		if !slices.Equal(a.routes, b.routes) || a.cc != b.cc || a.sysctls != b.sysctls {
			t.Errorf("%s after the run: routes %q, congestion control %s, %s; before: %q, %s, %s", h, a.routes, a.cc, a.sysctls, b.routes, b.cc, b.sysctls)
		}
		if lab.Host(h).AgentRunning() {
			t.Errorf("%s: the hostagent the run started still runs", h)
		}
	}
}

// LinkGuardian Fig. 10 in short, on the simulated lab: with a loss of
// the flows' frames and no protection, the tail FCT is a retransmission
// timeout (rto_min 1 ms), far above the lossless tail; LinkGuardian and
// LinkGuardianNB repair the losses on the link and stay near lossless. The
// numbers come from the transport and link models; the test compares the
// modes with each other.
//
// make test runs it at a loss of 5e-3 over 6,000 trials a mode: 53
// trials retransmit (seed 41, the loss calibrated to 6.6e-3), more than
// the 37 the paper's 1e-3 gives over 30,000, so the check of the affected
// fraction (within a factor of two of the loss) and those of the tails
// keep their power at a fifth of the trials. make test-long
// (TESTBED_LONG) runs the paper's 1e-3 over 30,000 trials, where the
// p99.9 sits on the edge.
func TestFCTTailWithAndWithoutLinkGuardian(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector makes this run ten times slower: make test runs it without")
	}
	trials, loss := 6_000, 5e-3
	if os.Getenv(recipetest.LongEnv) != "" {
		trials, loss = 30_000, 1e-3
	}
	lab := startLab(t, 41)
	before := hostStates(lab)
	res, s := run(t, lab, 41, nil, "trials="+strconv.Itoa(trials), "blocks=4", "calib_losses=100", "warmup=10",
		"loss_source=voa", "loss_rate="+strconv.FormatFloat(loss, 'g', -1, 64), "connection=persistent", "paper_sysctls=false")
	if res.Status != results.StatusOK {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	recipetest.CheckReport(t, res.Dir, "fct-top1pct", "fct-percentiles")
	tcp := s.Transports[fct.TCP]
	for _, m := range []string{"lossless", "off", "linkguardian", "linkguardian-nb"} {
		x := tcp[m]
		t.Logf("%-16s p50 %7.1f us  p99 %7.1f us  p99.9 %8.1f us  p99.99 %8.1f us  x lossless %6.2f  retransmitting %d of %d",
			m, x.P50US, x.P99US, x.P999US, x.P9999US, x.P999VsLossless, x.RetransTrials, x.Trials)
		if x.Trials != trials {
			t.Errorf("%s: %d trials, want %d", m, x.Trials, trials)
		}
	}
	t.Logf("loss %.3g at %.2f dB, %d copies", s.ActualLoss, s.AttenuationDB, s.RetxCopies)
	if s.Partial || s.Link != "lg100" || s.Sender != "h1" || s.Receiver != "h2" {
		t.Errorf("summary: %+v", s)
	}
	if s.ActualLoss < loss || s.ActualLoss > 1.5*loss {
		t.Errorf("calibrated loss %.3g outside [%.3g, %.3g]", s.ActualLoss, loss, 1.5*loss)
	}
	lossless, off, ordered, nb := tcp["lossless"], tcp["off"], tcp["linkguardian"], tcp["linkguardian-nb"]
	if lossless.RetransTrials != 0 || ordered.RetransTrials != 0 || nb.RetransTrials != 0 || off.RetransTrials == 0 {
		t.Errorf("retransmitting trials: lossless %d, off %d, linkguardian %d, nb %d", lossless.RetransTrials, off.RetransTrials, ordered.RetransTrials, nb.RetransTrials)
	}
	// Without protection a trial that loses its request waits for the
	// retransmission timer, at least rto_min: dozens of lossless round
	// trips. The trials that do follow the loss the calibration measured
	// (to its precision, about 10% with 100 losses).
	f := float64(off.RetransTrials) / float64(trials)
	if f < s.ActualLoss/2 || f > 2*s.ActualLoss {
		t.Errorf("off: %.3g of the trials retransmitted at a frame loss of %.3g", f, s.ActualLoss)
	}
	if off.P9999US < 1000*s.RTOMinMS || off.P9999US < 10*lossless.P9999US {
		t.Errorf("off: p99.99 %.1f us, lossless %.1f us", off.P9999US, lossless.P9999US)
	}
	// At 1e-3 the p99.9 sits on the edge: it is a timeout exactly when
	// more than 0.1% of the trials lost a frame (the default 300,000
	// trials at a loss set in [1e-3, 1.5e-3] are safely past it; at 5e-3
	// every run is).
	if off.RetransTrials > trials/1000 {
		if off.P999US < 1000*s.RTOMinMS || off.P999VsLossless < 10 {
			t.Errorf("off: %d of %d trials retransmitted, yet p99.9 is %.1f us (%.1f x lossless)", off.RetransTrials, trials, off.P999US, off.P999VsLossless)
		}
	} else if off.P999VsLossless > 2 {
		t.Errorf("off: %d of %d trials retransmitted, fewer than 0.1%%, yet p99.9 is %.1f us", off.RetransTrials, trials, off.P999US)
	}
	for name, x := range map[string]fct.ModeSummary{"linkguardian": ordered, "linkguardian-nb": nb} {
		if x.P999VsLossless > 2 || x.P999VsLossless < 1 || x.P9999US > 2*lossless.P9999US || 10*x.P9999US > off.P9999US || x.P50US > 1.1*lossless.P50US {
			t.Errorf("%s: p99.9 %.1f us (%.2f x lossless), p99.99 %.1f us, p50 %.1f us; off p99.99 %.1f us", name, x.P999US, x.P999VsLossless, x.P9999US, x.P50US, off.P9999US)
		}
	}
	// rdma: the simulated hosts' ib_write_lat (perftest's report, from the
	// RoCE model over the link): without protection a lost WRITE waits for
	// the transport timer (1.05 ms, halved in perftest's one-way figure);
	// LinkGuardian repairs it on the link.
	rdma := s.Transports[fct.RDMA]
	for _, m := range []string{"lossless", "off", "linkguardian", "linkguardian-nb"} {
		x := rdma[m]
		t.Logf("rdma %-16s typical %6.2f us  p99 %6.2f us  p99.9 %7.2f us  max %7.2f us  x lossless %6.2f", m, x.P50US, x.P99US, x.P999US, x.MaxUS, x.P999VsLossless)
	}
	if len(s.Unavailable) != 0 || rdma["lossless"].Trials != trials || rdma["off"].P999VsLossless < 20 || rdma["off"].P999US < 100 ||
		rdma["linkguardian"].P999VsLossless > 3 || rdma["linkguardian-nb"].P999VsLossless > 3 {
		t.Errorf("rdma: %+v, unavailable %v", rdma, s.Unavailable)
	}
	// The hosts' NICs and PCIe spread a lossless round trip: its tail lies
	// above its median.
	if l := rdma["lossless"]; !(l.P999US > l.P50US+0.5) {
		t.Errorf("rdma lossless: p50 %.2f us, p99.9 %.2f us: no spread", l.P50US, l.P999US)
	}

	samples := recipetest.ReadTable(t, res.Dir, "fct_samples")
	if len(samples) != 2*4*trials {
		t.Fatalf("%d samples, want %d", len(samples), 2*4*trials)
	}
	// Modes take turns block by block, each block starting with the next.
	var order []string
	var prev map[string]string
	for _, r := range samples {
		if r["transport"] != fct.TCP {
			continue
		}
		if prev == nil || r["mode"] != prev["mode"] || r["block"] != prev["block"] {
			order = append(order, r["block"]+":"+r["mode"])
		}
		prev = r
	}
	want := []string{"1:lossless", "1:off", "1:linkguardian", "1:linkguardian-nb", "2:off", "2:linkguardian", "2:linkguardian-nb", "2:lossless",
		"3:linkguardian", "3:linkguardian-nb", "3:lossless", "3:off", "4:linkguardian-nb", "4:lossless", "4:off", "4:linkguardian"}
	if !slices.Equal(order, want) {
		t.Errorf("block order %v, want %v", order, want)
	}
	// The percentiles table agrees with the samples, recomputed here from
	// a count of each distinct value.
	counts := map[string]map[int64]int{}
	for _, r := range samples {
		v, _ := strconv.ParseInt(r["fct_ns"], 10, 64)
		k := r["transport"] + "/" + r["mode"]
		if counts[k] == nil {
			counts[k] = map[int64]int{}
		}
		counts[k][v]++
	}
	pct := recipetest.ReadTable(t, res.Dir, "fct_percentiles")
	if len(pct) != 2*4*6 {
		t.Errorf("%d percentile rows, want 24 tcp and 24 rdma", len(pct))
	}
	for _, r := range pct {
		p, _ := strconv.ParseFloat(r["percentile"], 64)
		got, _ := strconv.ParseFloat(r["fct_us"], 64)
		c := counts[r["transport"]+"/"+r["mode"]]
		var distinct []int64
		n := 0
		for v, k := range c {
			distinct = append(distinct, v)
			n += k
		}
		slices.Sort(distinct)
		ppm := int(math.Round(p * 1e4))
		rank := (ppm*n + 999_999) / 1_000_000 // ceil(p/100 * n), in integers
		var x int64
		below := 0
		for _, v := range distinct {
			if below < rank && rank <= below+c[v] {
				x = v
				break
			}
			below += c[v]
		}
		if want := float64(x) / 1e3; got != want {
			t.Errorf("%s p%s: %v us in the table, %v us by counting", r["mode"], r["percentile"], got, want)
		}
		if r["flow_size"] != "143" {
			t.Errorf("row %v", r)
		}
	}
	checkRestored(t, lab, before)
}

// An abort in the middle of the blocks puts everything back: the VOA at
// rest, protection off as found, the hosts' routes and sysctls, and no
// agent left running; the bundle says how far it got. The abort comes
// after the second TCP block however long the blocks are: 200 trials a
// block are enough.
func TestFCTAbortRestoresTheLab(t *testing.T) {
	lab := startLab(t, 42)
	before := hostStates(lab)
	blocks := 0
	res, s := run(t, lab, 42, func(e results.Event, abort func()) {
		if e.Type == "measurement" && strings.HasPrefix(e.Message, "tcp ") {
			if blocks++; blocks == 2 {
				abort()
			}
		}
	}, "trials=800", "blocks=4", "calib_losses=50", "modes=off,linkguardian")
	if res.Status != results.StatusAborted {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	if !s.Partial || res.StepsDone >= res.StepsTotal {
		t.Errorf("partial %v, %d of %d steps", s.Partial, res.StepsDone, res.StepsTotal)
	}
	if len(res.Unrestored) != 0 {
		t.Errorf("not restored: %v", res.Unrestored)
	}
	checkRestored(t, lab, before)
}

func TestFCTPlanErrors(t *testing.T) {
	r := fct.New()
	eng := &orchestrator.Engine{}
	plan := func(inv *inventory.Inventory, sets ...string) (*orchestrator.Plan, error) {
		params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, sets)
		if err != nil {
			return nil, err
		}
		return eng.Plan(orchestrator.RunRequest{Recipe: r, Params: params, Lab: inv, Simulated: true})
	}
	inv := simlab.DefaultInventory()
	p, err := plan(inv)
	if err != nil {
		t.Fatal(err)
	}
	var binds []string
	for _, b := range p.Bindings {
		binds = append(binds, b.Role+"="+b.Resource)
	}
	// lg25 joins the same switches, but the hosts' cables are 100G.
	for _, want := range []string{"link=link lg100", "sender=host h1", "receiver=host h2"} {
		if !slices.Contains(binds, want) {
			t.Errorf("bindings %v lack %s", binds, want)
		}
	}
	if _, err := plan(inv, "link=lg25"); err != nil {
		t.Errorf("link=lg25: %v", err)
	}
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"sender=h2"}, "the sender host h2 is cabled to sw2, not to sw1"},
		{[]string{"receiver=h1"}, "the receiver host h1 is cabled to sw1, not to sw2"},
		{[]string{"sender=voa1"}, "device voa1 is a voa, not a host"},
		{[]string{"sender=h7"}, `no device "h7"`},
		{[]string{"link=l10g"}, "link l10g cannot serve"},
		{[]string{"modes=off,fast"}, `modes=off,fast: "fast" is not one of lossless, off, linkguardian, linkguardian-nb`},
		{[]string{"transports=udp"}, `transports=udp: "udp" is not one of tcp, rdma`},
		{[]string{"modes=off,off"}, "modes: off is listed twice"},
		{[]string{"trials=5", "blocks=10"}, "more blocks than trials"},
		{[]string{"target_loss=2e-3"}, "not above target_loss"},
		{[]string{"rto_min=1500us"}, "whole number of milliseconds"},
		{[]string{"loss_source=fibre"}, `loss_source=fibre: "fibre" is not one of program, voa`},
		{[]string{"connection=udp"}, `connection=udp: "udp" is not one of per-flow, persistent`},
		{[]string{"loss_rate=5e-7", "target_loss=1e-9"}, "below the program's resolution"},
	} {
		if _, err := plan(inv, c.sets...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.sets, err, c.want)
		}
	}
	// A lab without hosts says what the recipe needs.
	bare := simlab.DefaultInventory()
	for _, h := range []string{"h1", "h2"} {
		delete(bare.Devices, h)
	}
	bare.Links = slices.DeleteFunc(bare.Links, func(l *inventory.Link) bool { return strings.HasPrefix(l.Name, "h") })
	if _, err := plan(bare); err == nil || !strings.Contains(err.Error(), "needs a sender host") || !strings.Contains(err.Error(), "no host is cabled to sw1") {
		t.Errorf("no hosts: %v", err)
	}
	// Plans are data: the dry run lists the blocks in their turns.
	p, err = plan(inv, "trials=100", "blocks=2", "transports=tcp")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, s := range p.Steps {
		if s.Action == "fct-block" {
			blocks = append(blocks, s.Name)
		}
	}
	if len(blocks) != 8 || blocks[0] != "block 1/2: tcp lossless" || blocks[4] != "block 2/2: tcp off" {
		t.Errorf("blocks %q", blocks)
	}
}
