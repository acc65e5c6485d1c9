package stardust_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"testbed/dut/tofino"
	"testbed/experiments/recipetest"
	"testbed/experiments/stardust"
	"testbed/inventory"
	"testbed/orchestrator"
	sd "testbed/p4/stardust"
	"testbed/results"
	"testbed/simlab"
)

// The bench's timeline in the tests: reachability every 5 us (th 3), the
// control plane every 5 us, phases of 70 us (the shortest the recipe
// takes on the bench: 2 x (th + 4) periods).
var failoverBenchSets = []string{"reach_period=5us", "th=3", "bench_poll=5us", "bench_reassembly_timeout=10us",
	"phase=70us", "bin=5us", "bench_warmup=20us"}

// stardust-failover on the simulated Stardust bench, measured from the
// switches through the driver: a dark fibre (voa1 at its maximum) and a
// dead FE (its ports deleted) are found when the receiving ends'
// reachability ages reach th, between th-1 and th+1 periods after the
// failure (plus a poll), and data stops going into them by th+1 periods
// plus the poll; frames are lost only until then. A restored link or FE
// is valid again after th good periods, not sooner and at most a period
// and two polls later. The corrupting link (voa1 raised to a few % of
// frame errors, the port still up) is taken out by its FCS-error rate
// within a period and a poll, before any age reaches th. The dead FE
// costs throughput that comes back. At the end voa1 and the switches are
// as found.
func TestFailoverOnTheBench(t *testing.T) {
	if raceDetector {
		t.Skip("a whole recipe on the bench's twelve switches: run without the race detector (make test-long does); TestFailoverOnTheBenchInterrupted runs under it")
	}
	recipetest.Long(t)
	lab := startStardustBench(t, 4)
	var s stardust.FailoverSummary
	res := recipetest.Run(t, lab, stardust.NewFailover(), 4, &s, nil, failoverBenchSets...)
	if res.Status != "ok" {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	if s.ModelOnly || s.MeasuredOn != "bench" || s.Partial || s.Bench == nil || len(s.Tiers) != 1 {
		t.Fatalf("summary %+v", s)
	}
	const period, poll, th = 5.0, 5.0, 3.0
	run := s.Tiers["t1"]
	if math.Abs(run.FormulaUS-th*period) > 1e-9 || run.FormulaPDUS <= run.FormulaUS {
		t.Errorf("App. E %.2f us (%.2f with pd), want th x c/f = %g us on one tier", run.FormulaUS, run.FormulaPDUS, th*period)
	}
	ev := run.Events
	for _, name := range []string{"link-down", "fe-down"} {
		e := ev[name]
		if e.DetectUS == nil || e.ReachUS == nil || *e.ReachUS < (th-1)*period || *e.ReachUS > (th+1)*period+poll || *e.DetectUS != *e.ReachUS {
			t.Errorf("%s: detect %v, reachability %v us; want the ages at th between %g and %g us", name, fp(e.DetectUS), fp(e.ReachUS), (th-1)*period, (th+1)*period+poll)
		}
		if e.ConvergedUS == nil || *e.ConvergedUS > (th+1)*period+poll || *e.ConvergedUS < *e.DetectUS || e.CellsLost == 0 {
			t.Errorf("%s: converged %v us, %d frames lost", name, fp(e.ConvergedUS), e.CellsLost)
		}
	}
	for _, name := range []string{"link-up", "fe-up", "clean"} {
		e := ev[name]
		if e.ValidUS == nil || *e.ValidUS < th*period || *e.ValidUS > (th+1)*period+2*poll {
			t.Errorf("%s: valid %v us, want th good periods (%g us) and at most a period and two polls more", name, fp(e.ValidUS), th*period)
		}
	}
	if ev["fe-down"].CellsLost <= ev["link-down"].CellsLost {
		t.Errorf("a dead FE (four links) lost %d frames, a dark link %d", ev["fe-down"].CellsLost, ev["link-down"].CellsLost)
	}
	c := ev["corrupt"]
	if c.DetectUS == nil || *c.DetectUS > period+poll || c.ReachUS != nil || c.CellsLost == 0 || c.Marks == 0 {
		t.Errorf("corrupt: %+v (detect %v), want marked by its error rate within a period and a poll, no age at th, frames lost", c, fp(c.DetectUS))
	}
	b := s.Bench
	if b.CorruptFER < 0.02 || b.CorruptFER > 0.12 || b.CorruptDB <= 0 || b.CorruptDB >= 40 {
		t.Errorf("the corrupting link at %.2f dB, frame error rate %.3f: want a few %%, not dark", b.CorruptDB, b.CorruptFER)
	}
	if b.LostAfterConverged != 0 || b.LostInUpPhases != 0 || b.ConvergedOverBound > 1 || b.ValidMinOverTh < 1 {
		t.Errorf("bench summary %+v", b)
	}
	if fe := ev["fe-down"]; fe.Dip > 0.9 || fe.RecoveredUS == nil || *fe.RecoveredUS > 70 {
		t.Errorf("fe-down: dip %.3f, recovered %v", fe.Dip, fp(fe.RecoveredUS))
	}
	if b.Polls == 0 {
		t.Errorf("no poll counted: %+v", b)
	}
	if evs, err := os.ReadFile(filepath.Join(res.Dir, "events.jsonl")); err != nil || !strings.Contains(string(evs), fmt.Sprintf("%d polls of every switch took", b.Polls)) {
		t.Errorf("the polls' wall time is not among the run's events: %v", err)
	}
	rows := recipetest.ReadTable(t, res.Dir, "failover_events")
	if len(rows) != 6 || rows[0]["measured_on"] != "bench" {
		t.Errorf("failover_events: %v", rows)
	}
	recipetest.CheckReport(t, res.Dir, "failover-convergence", "failover-throughput")
	checkFailoverLabAsFound(t, lab, true)
}

// Interrupted while fe1 is down (its ports deleted), on a lab that had
// fe1's ports configured at 100 Gb/s before the run, the run leaves a
// bundle marked aborted with the events measured so far, and voa1 and
// the switches as found: fe1's ports back at 100 Gb/s, no entry or
// generator of the run's.
func TestFailoverOnTheBenchInterrupted(t *testing.T) {
	lab := startStardustBench(t, 5)
	ctx := context.Background()
	fe := openSwitch(t, lab, "fe1")
	if _, err := fe.BuildProgram(ctx, sd.ProgramFE, sd.MainFile(sd.ProgramFE), sd.Sources()); err != nil {
		t.Fatal(err)
	}
	if err := fe.StartSwitchd(ctx, sd.ProgramFE); err != nil {
		t.Fatal(err)
	}
	d, _ := lab.Inventory().Device("fe1")
	var ports []int
	for name, v := range d.Ports {
		p, _ := strconv.Atoi(v)
		if err := fe.AddPort(ctx, p, 100, "none"); err != nil {
			t.Fatalf("fe1 port %s: %v", name, err)
		}
		ports = append(ports, p)
	}
	var s stardust.FailoverSummary
	res := recipetest.Run(t, lab, stardust.NewFailover(), 5, &s, func(e results.Event, abort func()) {
		if e.Type == "setting" && strings.HasPrefix(e.Message, "FE down") {
			abort()
		}
	}, failoverBenchSets...)
	if res.Status != results.StatusAborted || !s.Partial || s.MeasuredOn != "bench" || s.Tiers["t1"].Events["link-down"].DetectUS == nil {
		t.Fatalf("status %s (%s), summary partial %v with %+v", res.Status, res.Reason, s.Partial, s.Tiers)
	}
	for _, p := range ports {
		if st, err := fe.PortStatus(ctx, p); err != nil || st.SpeedGbps != 100 {
			t.Errorf("fe1's port %d after the aborted run: %+v %v, want back at 100 Gb/s as found", p, st, err)
		}
	}
	checkFailoverLabAsFound(t, lab, false)
}

// A Stardust bench none of whose fabric links runs through a VOA cannot
// darken or corrupt one: refused at planning, naming the inventory.
func TestFailoverBenchNeedsAVOA(t *testing.T) {
	text, err := simlab.Bench("stardust")
	if err != nil {
		t.Fatal(err)
	}
	no := regexp.MustCompile(`(?m)^      voa:\n        device: voa1\n        channel: \d\n      loss_after_voa_db: 0.5\n`).ReplaceAllString(string(text), "")
	if no == string(text) {
		t.Fatal("the bench file has no VOA on a link")
	}
	inv, err := inventory.Parse("stardust.yaml", []byte(no))
	if err != nil {
		t.Fatal(err)
	}
	r := stardust.NewFailover()
	params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Plan(&orchestrator.PlanContext{Params: params, Lab: inv}); err == nil || !strings.Contains(err.Error(), "stardust.yaml: no fabric link") {
		t.Errorf("plan without a VOA: %v", err)
	}
}

func fp(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 2, 64)
}

// checkFailoverLabAsFound: voa1 back at 0 dB, fa1's entries gone, no
// generator running, and (feAdded) fe1's ports deleted as the run found
// them.
func checkFailoverLabAsFound(t *testing.T, lab *simlab.Lab, feAdded bool) {
	t.Helper()
	v, ok := lab.World().VOA("voa1")
	if !ok {
		t.Fatal("no voa1")
	}
	for i, ch := range v.Channels {
		if a := ch.Target(); a != 0 {
			t.Errorf("voa1 channel %d at %.2f dB after the run, want the 0 found", i+1, a)
		}
	}
	ctx := context.Background()
	if feAdded {
		fe := openSwitch(t, lab, "fe1")
		d, _ := lab.Inventory().Device("fe1")
		for name, v := range d.Ports {
			p, _ := strconv.Atoi(v)
			if _, err := fe.PortStatus(ctx, p); !tofino.IsNotFound(err) {
				t.Errorf("fe1's port %s (%d) after the run: %v, want deleted as found", name, p, err)
			}
		}
	}
	fa := openSwitch(t, lab, "fa1")
	for _, tb := range []string{sd.TableWhoami, sd.TableSpray, sd.TableGenFlow, sd.TableCreditTo, sd.TableReachPort} {
		if es, err := fa.Entries(ctx, tb); err != nil || len(es) != 0 {
			t.Errorf("fa1's %s after the run: %d entries, %v", tb, len(es), err)
		}
	}
	for app := 0; app < 4; app++ {
		if st, err := fa.PktgenStatus(ctx, app); err == nil && st.Enabled {
			t.Errorf("fa1's generator application %d still enabled", app)
		}
	}
}
