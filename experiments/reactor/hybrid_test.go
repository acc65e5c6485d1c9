package reactor_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"testbed/experiments/reactor"
	"testbed/experiments/recipetest"
	"testbed/orchestrator"
	"testbed/results"
)

// §5.4 on the simulated REACToR's 24 hosts (each sends to its 21
// neighbours, as in the paper): with large flows only, one configuration
// serves every host on either ToR; once small flows appear, the pure
// circuit switch must give each of them a configuration of at least 40 us
// and falls off a cliff, while the hybrid leaves them to its packet switch.
func TestHybridAvoidsTheCliff(t *testing.T) {
	lab := startLab(t, 61)
	var s reactor.HybridSummary
	res := runRecipe(t, lab, reactor.NewHybrid(), &s, nil, "eps_shares=0.1", "large_shares=1,0.95", "small_flows=")
	if res.Status != results.StatusOK {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	if figs := recipetest.CheckReport(t, res.Dir, "fig10-goodput-vs-large-share"); len(figs) != 1 {
		t.Errorf("%d figures, want Fig. 10 alone when there are no Fig. 11 points", len(figs))
	}
	const (
		W    = 3000.0 // us
		dlt  = 20.0
		minS = 20.0 // lit; 40 us with the night
		link = 100.0
	)
	got := map[string]reactor.HybridPoint{}
	for _, p := range s.Points {
		got[fmt.Sprintf("%s/%g", p.ToR, p.LargeShare)] = p
		t.Logf("%s eps %.1f share %.2f small %d: %.4f with %d configurations", p.ToR, p.EPSGbps, p.LargeShare, p.SmallFlows, p.GoodputFraction, p.Configurations)
	}
	if len(s.Points) != 4 || s.Hosts != 24 || s.LinkGbps != 10 {
		t.Fatalf("summary %+v", s)
	}
	// Large flows only: one configuration, lit all but the night and the
	// PFC timing of one slot.
	pfcSpread := (1.3 - 1.2) + (2.188 - 1.014)
	best := (W - dlt - pfcSpread) / W
	for _, tor := range []string{"circuit", "hybrid"} {
		if p := got[tor+"/1"]; p.GoodputFraction < best || p.GoodputFraction > 1 || p.Configurations != 1 {
			t.Errorf("%s ToR, large flows only: %+v, want a goodput in [%.4f, 1] with 1 configuration", tor, p, best)
		}
	}
	// With 20 small flows of 0.25% of the link each, the circuit ToR gives
	// each host's 21 destinations a configuration of at least 40 us: the
	// large flow keeps at most W - 21 nights - 20 minimum slots.
	large := (W - 21*dlt - 20*minS) / W * link
	bound := (min(large, 95) + 5) / link
	if p := got["circuit/0.95"]; p.GoodputFraction > bound+1e-6 || p.Configurations != 21 {
		t.Errorf("circuit ToR at 95%%: %+v, want at most %.4f with 21 configurations", p, bound)
	}
	// The hybrid leaves the 5% of small flows to its packet switch (10% of
	// the link) and keeps one configuration for the large flow.
	hyb := ((W-dlt-pfcSpread)/W*95 + 5) / link
	if p := got["hybrid/0.95"]; p.GoodputFraction < hyb-0.002 || p.Configurations != 1 {
		t.Errorf("hybrid ToR at 95%%: %+v, want at least %.4f with 1 configuration", p, hyb)
	}
	if d := got["circuit/1"].GoodputFraction - got["circuit/0.95"].GoodputFraction; d < 0.2 {
		t.Errorf("the circuit ToR loses %.4f when small flows appear, want a cliff of more than 0.2", d)
	}
	if s.Fig10["circuit"]["share95"] != got["circuit/0.95"].GoodputFraction || s.Fig10["hybrid_eps10"]["share100"] != got["hybrid/1"].GoodputFraction {
		t.Errorf("fig10 %+v", s.Fig10)
	}
	rows := readTable(t, res.Dir, "hybrid_goodput")
	if len(rows) != 4 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if r["tor"] == "circuit" && num(t, r["eps_gbps"]) != 0 || r["tor"] == "hybrid" && num(t, r["eps_gbps"]) != 1 || num(t, r["small_flows"]) != 20 {
			t.Errorf("row %v", r)
		}
		if f := num(t, r["goodput_fraction"]); math.IsNaN(f) || f <= 0 || f > 1 {
			t.Errorf("row %v", r)
		}
	}
	checkRestored(t, lab)
}

func TestHybridPlanExplains(t *testing.T) {
	lab := startLab(t, 62)
	r := reactor.NewHybrid()
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"tors=optical"}, "tors"},
		{[]string{"eps_shares=0.5", "reactor_eps=1"}, "unknown parameter"},
		{[]string{"min_slot=10us"}, "min_slot"},
		{[]string{"large_shares=", "small_flows="}, "no points"},
		{[]string{"small_flows=2.5"}, "whole number"},
	} {
		params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, c.sets)
		if err != nil {
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: %v", c.sets, err)
			}
			continue
		}
		if _, err := r.Plan(&orchestrator.PlanContext{Lab: lab.Inventory(), Params: params, Simulated: true}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.sets, err, c.want)
		}
	}
}
