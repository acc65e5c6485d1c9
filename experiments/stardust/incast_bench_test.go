package stardust_test

import (
	"strconv"
	"testing"

	"testbed/experiments/recipetest"
	"testbed/experiments/stardust"
)

// stardust-incast on the Stardust bench: N FAs' generators answer the
// first FA at once, at line rate each, and the requester's credits, round
// robin over their VOQs, pace them. No frame is lost; the replies drain
// together (first and last within 5%); the last finishes at the
// requester's port rate (the ideal: all frames back to back at line
// rate), because the frames beyond what the port takes wait at their
// sources, not in the fabric. FCI is off here: its reaction is a separate
// mechanism (the README's incast section). ECMP at the bench's shape (the
// model) hashes the lone reply onto one 25 Gb/s link: four times the
// ideal.
func TestIncastOnTheBench(t *testing.T) {
	if raceDetector {
		t.Skip("a whole recipe on the bench's twelve switches: run without the race detector (make test does); TestFabricOnTheBenchInterrupted covers the bring-up under it")
	}
	lab := startStardustBench(t, 4)
	var s stardust.IncastSummary
	res := recipetest.Run(t, lab, stardust.NewIncast(), 4, &s, nil, "senders=1,4", "fci_threshold=0")
	if res.Status != "ok" {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	if s.ModelOnly || s.MeasuredOn != "bench" || s.PacketFrom != "model" || s.Partial || s.Unfinished != 0 {
		t.Fatalf("summary %+v", s)
	}
	if s.CellsLost != 0 || s.MinJainStardust < 0.999 {
		t.Errorf("stardust: %d frames lost, Jain %.5f", s.CellsLost, s.MinJainStardust)
	}
	one, four := s.Stardust["n1"], s.Stardust["n4"]
	// Within 3 us (polls of 1 us, a microsecond of fabric latency) and 3%
	// of the ideal.
	for _, x := range []stardust.IncastPoint{one, four} {
		if x.LastFCTMS < x.IdealFCTMS || x.LastFCTMS > x.IdealFCTMS*1.03+0.003 {
			t.Errorf("last FCT %.4f ms against the ideal %.4f ms", x.LastFCTMS, x.IdealFCTMS)
		}
	}
	if four.LastFCTMS-four.FirstFCTMS > 0.05*four.LastFCTMS {
		t.Errorf("4 senders: first %.4f, last %.4f ms: not draining together", four.FirstFCTMS, four.LastFCTMS)
	}
	if pk := s.Packet["n1"]; pk.LastFCTMS < 3.5*pk.IdealFCTMS {
		t.Errorf("ECMP, one reply: %.4f ms against the port's %.4f: not held to one link", pk.LastFCTMS, pk.IdealFCTMS)
	}
	n := 0
	for _, r := range recipetest.ReadTable(t, res.Dir, "incast_flows") {
		if r["fabric"] == "stardust" && r["senders"] == "4" {
			n++
			if v, err := strconv.ParseFloat(r["fct_ms"], 64); err != nil || v <= 0 {
				t.Errorf("sender %s: fct %q", r["sender_fa"], r["fct_ms"])
			}
		}
	}
	if n != 4 {
		t.Errorf("%d rows for 4 senders", n)
	}
	recipetest.CheckReport(t, res.Dir, "fig10c-incast", "incast-drain")
}
