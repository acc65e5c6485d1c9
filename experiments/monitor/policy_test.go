package monitor

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"testbed/inventory"
	lg "testbed/p4/linkguardian"
)

// pod is two ToRs, each with two uplinks to two aggregation switches.
func pod(t *testing.T) *Topology {
	t.Helper()
	inv, err := inventory.Parse(filepath.Join(t.TempDir(), "lab.yaml"), []byte(`version: 1
name: pod
devices:
  t1: {kind: switch, driver: tofino-bfrt, address: "ssh://admin@127.0.0.1:1", options: {role: tor}}
  t2: {kind: switch, driver: tofino-bfrt, address: "ssh://admin@127.0.0.1:2", options: {role: tor}}
  a1: {kind: switch, driver: tofino-bfrt, address: "ssh://admin@127.0.0.1:3", options: {role: agg}}
  a2: {kind: switch, driver: tofino-bfrt, address: "ssh://admin@127.0.0.1:4", options: {role: agg}}
links:
  - {name: t1-a1, a: {device: t1}, b: {device: a1}, transceiver: 25GBASE-SR}
  - {name: t1-a2, a: {device: t1}, b: {device: a2}, transceiver: 25GBASE-SR}
  - {name: t2-a1, a: {device: t2}, b: {device: a1}, transceiver: 25GBASE-SR}
  - {name: t2-a2, a: {device: t2}, b: {device: a2}, transceiver: 25GBASE-SR}
`))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := NewTopology(inv)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// drive feeds an estimator polls at a rate until the predicate holds.
func drive(t *testing.T, l *link, p *Policy, d Dir, rate float64, polls int) []Decision {
	t.Helper()
	var out []Decision
	for i := 0; i < polls; i++ {
		out = append(out, p.Decide(d, l.poll(1_000_000, rate))...)
	}
	return out
}

func actions(ds []Decision) []Action {
	var a []Action
	for _, d := range ds {
		a = append(a, d.Action)
	}
	return a
}

func TestPolicyProtectsRaisesAndTurnsOff(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Quiet = 20 * time.Second
	l := newLink(t, cfg, 9)
	pc := DefaultPolicy()
	pc.ProposeDisable = false
	p, err := NewPolicy(pc, cfg.Threshold, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := Dir{Link: "t1-a1", Direction: "a>b", Sender: "t1"}

	// Idle and clean links: nothing.
	if ds := drive(t, l, p, d, 0, 30); len(ds) != 0 {
		t.Fatalf("clean link: %v", actions(ds))
	}
	ds := drive(t, l, p, d, 1e-5, 30)
	if len(ds) == 0 || ds[0].Action != ActEnableLG {
		t.Fatalf("1e-5 link: %v", actions(ds))
	}
	en := ds[0]
	if want, _ := lg.Copies(pc.TargetLoss, en.Evidence.High); en.Copies != want || en.Copies < 1 {
		t.Fatalf("copies %d, Eq. 2 at the upper bound %g gives %d", en.Copies, en.Evidence.High, want)
	}
	if en.Evidence.Low <= cfg.Threshold || en.Evidence.Frames == 0 || !strings.Contains(en.Rule, "Eq. 2") {
		t.Fatalf("enable without its evidence: %+v", en)
	}
	// Never lowered while the estimate narrows.
	for _, x := range ds[1:] {
		if x.Action != ActRaiseCopies || x.Copies <= en.Copies {
			t.Fatalf("after enabling: %+v", x)
		}
	}
	before := p.Copies(d)
	// The rate grows to 1e-3: more copies, by Eq. 2.
	ds = drive(t, l, p, d, 1e-3, 20)
	if len(ds) == 0 || ds[len(ds)-1].Action != ActRaiseCopies || p.Copies(d) <= before {
		t.Fatalf("rate grew, copies %d -> %d: %v", before, p.Copies(d), actions(ds))
	}
	if want, _ := lg.Copies(pc.TargetLoss, 1e-3); p.Copies(d) < want {
		t.Fatalf("copies %d below Eq. 2's %d at 1e-3", p.Copies(d), want)
	}
	// Healed: off once the quiet period has passed, not before.
	var off *Decision
	for i := 0; i < 100 && off == nil; i++ {
		for _, x := range p.Decide(d, l.poll(1_000_000, 0)) {
			if x.Action != ActDisableLG {
				t.Fatalf("healing: %+v", x)
			}
			off = &x
		}
	}
	if off == nil || p.Copies(d) != 0 || off.Evidence.State != Clean {
		t.Fatalf("never turned off: %+v", off)
	}
	if ds := drive(t, l, p, d, 0, 50); len(ds) != 0 {
		t.Fatalf("after turning off: %v", actions(ds))
	}
}

func TestPolicyProposesDisablingOnlyWhenCorrOptAllows(t *testing.T) {
	cfg := DefaultConfig()
	pc := DefaultPolicy()
	pc.MinPathFraction = 0.5
	p, err := NewPolicy(pc, cfg.Threshold, pod(t))
	if err != nil {
		t.Fatal(err)
	}
	d1 := Dir{Link: "t1-a1", Direction: "a>b", Sender: "t1"}
	ds := drive(t, newLink(t, cfg, 1), p, d1, 1e-4, 20)
	var prop []Decision
	for _, x := range ds {
		if x.Action == ActProposeDown || x.Action == ActDisableLink || x.Action == ActRefuseDown {
			prop = append(prop, x)
		}
	}
	if len(prop) != 1 || prop[0].Action != ActProposeDown || p.Down("t1-a1") {
		t.Fatalf("t1-a1: %v (proposed once, never disabled on its own)", actions(ds))
	}
	if c := prop[0].Evidence.Capacity; c == nil || c.ToR != "t1" || c.Fraction != 0.5 {
		t.Fatalf("capacity evidence %+v", c)
	}

	// With automatic disabling, t1-a1 goes down; t1's other uplink then
	// may not (t1 would keep no path).
	pc.AutoDisable = true
	p, _ = NewPolicy(pc, cfg.Threshold, pod(t))
	drive(t, newLink(t, cfg, 2), p, d1, 1e-4, 20)
	if !p.Down("t1-a1") {
		t.Fatal("auto-disable did not take t1-a1 down")
	}
	d2 := Dir{Link: "t1-a2", Direction: "b>a", Sender: "a2"}
	ds = drive(t, newLink(t, cfg, 3), p, d2, 1e-4, 20)
	var refused bool
	for _, x := range ds {
		if x.Action == ActDisableLink {
			t.Fatalf("t1-a2 disabled, cutting t1 off: %+v", x)
		}
		if x.Action == ActRefuseDown {
			refused = true
			if x.Evidence.Capacity == nil || x.Evidence.Capacity.Fraction != 0 {
				t.Fatalf("refusal evidence %+v", x.Evidence)
			}
		}
	}
	if !refused || p.Down("t1-a2") {
		t.Fatalf("t1-a2: %v", actions(ds))
	}
	// The other ToR's link is independent.
	ds = drive(t, newLink(t, cfg, 4), p, Dir{Link: "t2-a2", Direction: "a>b", Sender: "t2"}, 1e-4, 20)
	if !p.Down("t2-a2") {
		t.Fatalf("t2-a2: %v", actions(ds))
	}
}

func TestPolicyForgetRetries(t *testing.T) {
	p, err := NewPolicy(PolicyConfig{TargetLoss: 1e-9}, 1e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := Dir{Link: "x", Direction: "a>b", Sender: "s"}
	st := Status{State: Corrupting, Low: 2e-6, High: 1e-5, Frames: 1e7, Losses: 50}
	ds := p.Decide(d, st)
	if len(ds) != 1 || ds[0].Action != ActEnableLG {
		t.Fatalf("%v", actions(ds))
	}
	if ds := p.Decide(d, st); len(ds) != 0 {
		t.Fatalf("decided twice: %v", actions(ds))
	}
	p.Forget(ds[0])
	if ds := p.Decide(d, st); len(ds) != 1 || ds[0].Action != ActEnableLG {
		t.Fatalf("after a failed action: %v", actions(ds))
	}
}

func TestPolicyRejectsNonsense(t *testing.T) {
	for _, c := range []PolicyConfig{
		{TargetLoss: 1e-3},
		{TargetLoss: 1e-9, MaxCopies: -1},
		{ProposeDisable: true, MinPathFraction: 0.5},
	} {
		if _, err := NewPolicy(c, 1e-6, nil); err == nil {
			t.Fatalf("%+v accepted", c)
		}
	}
}

func TestPolicyCapsCopiesAndSaysTheTargetIsMissed(t *testing.T) {
	p, err := NewPolicy(PolicyConfig{TargetLoss: 1e-9, MaxCopies: 3}, 1e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := Dir{Link: "x", Direction: "a>b", Sender: "s"}
	// Eq. 2 at 0.1: ceil(9 - 1) = 8 copies, more than the 3 deployed.
	ds := p.Decide(d, Status{State: Corrupting, Low: 0.09, High: 0.1, Frames: 1e6, Losses: 95_000})
	if len(ds) != 1 || ds[0].Copies != 3 || !strings.Contains(ds[0].Rule, "capped at 3 (target not met)") {
		t.Fatalf("%+v", ds)
	}
	if want, _ := lg.Copies(1e-9, 0.1); want != 8 {
		t.Fatalf("Eq. 2 gives %d", want)
	}
}
