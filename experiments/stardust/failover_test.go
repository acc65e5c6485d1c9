package stardust_test

import (
	"testing"

	"testbed/experiments/recipetest"
	"testbed/experiments/stardust"
)

// §5.9, §5.10, App. E on the bench's one-tier fabric and a small two-tier
// one: a dark link and a failed FE are found by th missed reachability
// cells (detect between th-1 and th+1 periods) and the fabric converges,
// no cell lost to them after, within App. E's t x th with the links'
// delay plus one period (a failure falls anywhere in a period, which the
// formula does not count: one tier can take th+1 periods); a restored link is valid after th good cells. A link corrupting
// cells well above the threshold marks itself faulty within one period
// and a link's delay (before th periods could pass), and is valid again
// th periods after it is clean (10 Gb/s links, so a period is 46 cells'
// worth and a rate of 0.2 crosses 0.01 in each). An FE lost costs throughput (a dip below
// 0.9 of the mean: a quarter of the bench's links) that comes back.
func TestFailoverConvergesWithinAppendixE(t *testing.T) {
	var s stardust.FailoverSummary
	res := runOffline(t, stardust.NewFailover(), &s, "phase=210us", "link_gbps=10", "error_rate=0.2")
	if !s.ModelOnly || s.Partial || len(s.Tiers) != 2 {
		t.Fatalf("summary %+v", s)
	}
	const period = 10.0 // us, the default reach_period
	for key, tr := range s.Tiers {
		ev := tr.Events
		if s.WorstOverFormula > float64(4)/3 || s.WorstOverFormula == 0 {
			t.Errorf("slowest convergence %.2f of App. E's time", s.WorstOverFormula)
		}
		for _, name := range []string{"link-down", "fe-down"} {
			e := ev[name]
			if e.DetectUS == nil || *e.DetectUS < 2*period || *e.DetectUS > 4*period || e.CellsLost == 0 {
				t.Errorf("%s %s: %+v", key, name, e)
			}
			if e.ConvergedUS == nil || *e.ConvergedUS > tr.FormulaPDUS+period {
				t.Errorf("%s %s: converged %v, App. E %.1f us", key, name, e.ConvergedUS, tr.FormulaPDUS)
			}
		}
		for _, name := range []string{"link-up", "fe-up", "clean"} {
			e := ev[name]
			if e.ValidUS == nil || *e.ValidUS < 2*period || *e.ValidUS > 4*period || e.CellsLost != 0 {
				t.Errorf("%s %s: %+v", key, name, e)
			}
		}
		c := ev["corrupt"]
		if c.DetectUS == nil || *c.DetectUS > period+1 || c.CellsLost == 0 {
			t.Errorf("%s corrupt: %+v", key, c)
		}
		if fe := ev["fe-down"]; fe.Dip > 0.9 || fe.RecoveredUS == nil || *fe.RecoveredUS > 210 {
			t.Errorf("%s fe-down: dip %.3f, recovered %v", key, fe.Dip, fe.RecoveredUS)
		}
	}
	recipetest.CheckReport(t, res.Dir, "failover-convergence", "failover-throughput")
}

// Under the threshold (0.001 against 0.05: three errors in a period's 46
// cells) a corrupting link is never marked: it keeps losing cells for the
// whole phase, so the marking above is the error rate's.
func TestFailoverCorruptionUnderThresholdStays(t *testing.T) {
	var s stardust.FailoverSummary
	runOffline(t, stardust.NewFailover(), &s, "tiers=1", "phase=210us", "link_gbps=10", "error_rate=0.001", "error_threshold=0.05")
	c := s.Tiers["t1"].Events["corrupt"]
	if c.DetectUS != nil || c.CellsLost == 0 {
		t.Errorf("corrupt at 0.001: %+v", c)
	}
}

// Interrupted after its first fabric, the run leaves a verifiable bundle
// whose summary holds it and says it is partial.
func TestFailoverInterruptedLeavesAReadableBundle(t *testing.T) {
	var s stardust.FailoverSummary
	interrupted(t, stardust.NewFailover(), &s, "tiers=1,2", "phase=210us")
	if !s.Partial || len(s.Tiers) > 1 {
		t.Errorf("summary of the interrupted run: %+v", s)
	}
}
