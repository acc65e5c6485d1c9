package fec_test

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"testbed/experiments/fec"
	"testbed/experiments/recipetest"
	"testbed/orchestrator"
	"testbed/simlab"
)

// The PHY model's per-hop numbers at 25G RS(528,514) for 64 B frames
// (docs/fec.md's table, from go test -run Example_perHop -v
// ./simlab/phy): the least a cut-through hop holds a header (case A) and
// the most a store-and-forward hop holds the frame. A cut-through switch
// whose egress runs at the ingress's rate waits for a frame's tail when
// the codewords split it (phy.ReadyNs), so its hop spreads as far as
// store-and-forward's worst; 66/25.78125 ns is a 64b/66b block, which the
// egress may wait for its slot.
const (
	ctMin64  = 25.4
	safMax64 = 257.7
	blockNs  = 66 / 25.78125
)

// chainEnvelope runs fec-latency's chain on lab and returns the envelope
// of 25G RS(528,514), cut-through, 64 B, over 1..n hops, the paper's
// per-hop range (§3.1, max - min over every header offset) from the hop
// rows, and the envelopes without FEC by hops. browse renders the report
// in Chromium too (recipetest.CheckReport); without it only its figures
// are checked (a second run's report is the same recipe's).
func chainEnvelope(t *testing.T, lab *simlab.Lab, seed uint64, links string, probes int, browse bool) (env []float64, span float64, res map[string]float64) {
	t.Helper()
	var s fec.LatencySummary
	r := recipetest.Run(t, lab, fec.NewLatency(), seed, &s, nil,
		"path=chain", "chain_links="+links, "frame_sizes=64", "switch_modes=cut-through", fmt.Sprintf("probes=%d", probes))
	if r.Status != "ok" || len(r.Unrestored) != 0 {
		t.Fatalf("run %s (%s), not restored: %v", r.Status, r.Reason, r.Unrestored)
	}
	for _, row := range recipetest.ReadTable(t, r.Dir, "fec_latency_hops") {
		if row["path"] == "chain" && row["link"] == "25G rs528" && row["hop"] == "1" {
			span = num(t, row, "paper_max_ns") - num(t, row, "paper_min_ns")
		}
	}
	flat := map[string]float64{}
	for _, row := range recipetest.ReadTable(t, r.Dir, "fec_latency_envelope") {
		if row["path"] != "chain" {
			continue
		}
		switch row["link"] {
		case "25G rs528":
			env = append(env, num(t, row, "envelope_ns"))
		case "25G none":
			flat[row["hops"]] = num(t, row, "envelope_ns")
		}
	}
	if browse {
		recipetest.CheckReport(t, r.Dir, "chain-latency", "envelope")
	} else {
		recipetest.CheckFigures(t, r.Dir, "chain-latency", "envelope")
	}
	if c, ok := s.Cases["25G_rs528_64B_cut-through_chain"]; !ok || len(c.EnvelopeByHopsNs) != len(env) {
		t.Errorf("summary's chain case %+v, want the envelope over 1..%d hops", c, len(env))
	}
	return env, span, flat
}

// chainGrows is Fig. 7's claim on a chain: the envelope widens with the
// hops, and never beyond hops x the per-hop range. The bound: each hop
// spreads at most from a cut-through hop's least to a store-and-forward
// hop's most (232.3 ns) and a 64b/66b block, plus 2 ns for the two whole-ns
// stamps the latency is read from. The growth: offsets independent per
// hop add like a sum of uniform draws, whose range over 200 probes is
// about 3x one's over five hops (the PHY model alone gives 216.6 ns over
// one link and 698.8 ns over six: go test -run
// TestJitterAccumulatesOverHops -v ./simlab/phy); links on one clock keep
// one hop's range. Twice one hop's envelope separates the two.
func chainGrows(env []float64) error {
	if len(env) < 3 {
		return fmt.Errorf("%d hop counts: too short a chain to grow", len(env))
	}
	for h, e := range env {
		if bound := float64(h+1)*(safMax64-ctMin64+blockNs) + 2; e > bound {
			return fmt.Errorf("envelope over %d hops %.0f ns, beyond %d x the per-hop range (%.0f ns in all)", h+1, e, h+1, bound)
		}
	}
	if last := env[len(env)-1]; last < 2*env[0] {
		return fmt.Errorf("envelope over %d hops %.0f ns, under twice one hop's %.0f ns: it does not grow with the hops", len(env), last, env[0])
	}
	return nil
}

// Fig. 7 on a chain of six switches, each on its own clock: the envelope
// grows with the hops within hops x the per-hop range; without FEC it
// stays a few ns. The same chain with every switch on one clock does not
// grow: the growth comes from the independent clocks, not the recipe.
func TestFECLatencyChainEnvelopeGrowsWithHops(t *testing.T) {
	lab := recipetest.StartBench(t, "fec-chain", 5)
	env, span, flat := chainEnvelope(t, lab, 5, "25:none,25:rs528", 200, true)
	t.Logf("independent clocks: envelope by hops %.0f ns (per-hop range %.1f ns); without FEC %v", env, span, flat)
	if len(env) != 5 || math.Abs(span-(242.7-ctMin64)) > 0.1 {
		t.Fatalf("%d hop counts, the paper's per-hop range %.1f ns: want 5 hops at 25G RS(528,514)'s 217.3 ns", len(env), span)
	}
	if err := chainGrows(env); err != nil {
		t.Error(err)
	}
	// Without FEC a hop's latency varies by one 64b/66b block, the
	// latency by the rounding of its two stamps.
	for h, e := range flat {
		n, _ := strconv.Atoi(h)
		if e > float64(n)*blockNs+2 {
			t.Errorf("25G without FEC over %s hops: envelope %.0f ns, beyond a 64b/66b block per hop", h, e)
		}
	}

	inv, err := simlab.BenchInventory("fec-chain")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range inv.Devices {
		if d.Kind == "switch" {
			d.Options["clock_ppm"] = "12"
		}
	}
	one, _, err := simlab.StartTwin(inv, simlab.Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { one.Close() })
	envOne, _, _ := chainEnvelope(t, one, 5, "25:rs528", 100, false)
	t.Logf("one clock: envelope by hops %.0f ns", envOne)
	if err := chainGrows(envOne); err == nil {
		t.Errorf("with every switch on one clock the envelope still grows (%.0f ns): the growth does not come from the clocks", envOne)
	}
}

// A chain the lab cannot serve is refused at planning time, saying why:
// switches no fibre joins, a mode the fibres' transceivers do not run, an
// exit port the last switch lacks.
func TestFECLatencyChainRefusesWhatTheLabCannotServe(t *testing.T) {
	inv, err := simlab.BenchInventory("fec-chain")
	if err != nil {
		t.Fatal(err)
	}
	r := fec.NewLatency()
	for set, want := range map[string]string{
		"chain=sw1,sw3":         "no link",
		"chain=sw1":             "a hop needs two",
		"chain=sw1,sw2,sw1":     "listed twice",
		"chain=sw1,sw2,nope":    "not a switch",
		"chain_links=100:rs528": "25GBASE-SR runs at 25 Gb/s",
		"chain_exit=p9":         `port "p9"`,
		"chain_links=25:rs544":  "25:rs544",
	} {
		params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, []string{"path=chain", set})
		if err != nil {
			t.Fatalf("%s: %v", set, err)
		}
		_, err = r.Plan(&orchestrator.PlanContext{Params: params, Lab: inv, Simulated: true})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", set, err, want)
		} else {
			t.Logf("%s: %v", set, err)
		}
	}
	params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, []string{"path=chain"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Plan(&orchestrator.PlanContext{Params: params, Lab: inv, Simulated: true}); err != nil {
		t.Errorf("the bench's own chain: %v", err)
	}
}
