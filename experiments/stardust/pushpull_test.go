package stardust_test

import (
	"math"
	"testing"

	"testbed/experiments/recipetest"
	"testbed/experiments/stardust"
)

// §5.2 and App. F: pushed, B gets what the middle stage's drops leave it,
// two thirds of 200 over 300 (the paper's 66%), and with A's traffic in
// the high class next to nothing; pulled, A and B each get their port's
// rate and the fabric loses nothing, so with classes pull delivers about
// twice what push does.
func TestPushPullFigs7And12(t *testing.T) {
	var s stardust.PushPullSummary
	res := runOffline(t, stardust.NewPushPull(), &s, "measure=200us")
	if !s.ModelOnly || s.Partial || len(s.Scenarios) != 2 {
		t.Fatalf("summary %+v", s)
	}
	for _, sc := range []string{"fig7", "fig12"} {
		pull := s.Scenarios[sc]["pull"]
		if pull.Lost != 0 || pull.AGbps < 99 || pull.BGbps < 99 {
			t.Errorf("%s pull: %+v", sc, pull)
		}
		if push := s.Scenarios[sc]["push"]; push.Lost == 0 || push.AGbps < 99 {
			t.Errorf("%s push: %+v", sc, push)
		}
	}
	if b := s.Scenarios["fig7"]["push"].BShare; math.Abs(b-2.0/3) > 0.03 {
		t.Errorf("fig7 push: B receives %.3f of what it was sent, the middle stage passes 2/3", b)
	}
	if b := s.Scenarios["fig12"]["push"].BShare; b > 0.05 {
		t.Errorf("fig12 push: B receives %.3f with A's traffic above it", b)
	}
	if r := s.PullOverPush["fig12"]; r < 1.9 || r > 2.01 {
		t.Errorf("fig12: pull delivers %.3f of push's", r)
	}
	recipetest.CheckReport(t, res.Dir, "fig7-pushpull", "fig12-pushpull")
}

// B's loss in the push fabric is the middle stage's congestion, not its
// buffers' size: with buffers deeper than the run can fill, nothing of
// B's is dropped within it, and still B gets a third of the middle
// stage's 200, as its FIFO queues serve what arrives, two parts A's to
// one of B's.
func TestPushPullPushIsTheMiddleStages(t *testing.T) {
	var s stardust.PushPullSummary
	res := runOffline(t, stardust.NewPushPull(), &s, "measure=50us", "warmup=10us", "switch_buffer_kb=100000")
	if b := s.Scenarios["fig7"]["push"].BShare; math.Abs(b-2.0/3) > 0.03 {
		t.Errorf("deep buffers: B receives %.3f of what it was sent", b)
	}
	for _, r := range recipetest.ReadTable(t, res.Dir, "pushpull_ports") {
		if r["scenario"] == "fig7" && r["fabric"] == "push" && r["port"] == "B" && r["lost"] != "0" {
			t.Errorf("deep buffers: %s of B's packets dropped", r["lost"])
		}
	}
}

// Interrupted after its first step, the run leaves a verifiable bundle
// whose summary says it is partial.
func TestPushPullInterruptedLeavesAReadableBundle(t *testing.T) {
	var s stardust.PushPullSummary
	interrupted(t, stardust.NewPushPull(), &s, "measure=50us")
	if !s.Partial || len(s.Scenarios) != 1 {
		t.Errorf("summary of the interrupted run: %+v", s)
	}
}
