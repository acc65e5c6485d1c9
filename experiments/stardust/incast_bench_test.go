package stardust_test

import (
	"strconv"
	"testing"

	"testbed/experiments/recipetest"
	"testbed/experiments/stardust"
	"testbed/p4/ecmp"
	"testbed/simlab"
)

// stardust-incast on the Stardust bench: N FAs' generators answer the
// first FA at once, at line rate each, and the requester's credits, round
// robin over their VOQs, pace them. No frame is lost; the replies drain
// together (first and last within 5%); the last finishes at the
// requester's port rate (the ideal: all frames back to back at line
// rate), because the frames beyond what the port takes wait at their
// sources, not in the fabric. FCI is off here: its reaction is a separate
// mechanism (the README's incast section). On the packet-switched bench
// (the same switches running p4/ecmp) the lone reply is hashed onto one
// 25 Gb/s uplink, four times the ideal; four replies meet at the spines
// their hashes pick, and each finishes when its spine's downlink to the
// requester has carried every reply that shares it.
func TestIncastOnTheBench(t *testing.T) {
	if raceDetector {
		t.Skip("a whole recipe on the bench's twelve switches: run without the race detector (make test-long does); TestFabricOnTheBenchInterrupted covers the bring-up under it")
	}
	recipetest.Long(t)
	lab := startStardustBench(t, 4)
	var s stardust.IncastSummary
	res := recipetest.Run(t, lab, stardust.NewIncast(), 4, &s, nil, "senders=1,4", "fci_threshold=0")
	if res.Status != "ok" {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	if s.ModelOnly || s.MeasuredOn != "bench" || s.PacketFrom != "bench" || s.Partial || s.Unfinished != 0 {
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
	if pk := s.Packet["n1"]; pk.LastFCTMS < 3.5*pk.IdealFCTMS || pk.Unfinished != 0 {
		t.Errorf("ECMP, one reply: %+v: want it held to one 25 Gb/s link, four times the port's ideal", pk)
	}
	checkIncastSpines(t, lab, res.Dir)
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

// checkIncastSpines predicts from the 4-sender replies' 5-tuples (the rows
// of ecmp_flows) which uplink, so which spine, each took, and holds each
// reply's FCT to the time its spine's 25 Gb/s downlink to the requester
// takes to carry the m replies that share it, plus at most 12 us of
// latency (nothing else is congested: the requester's host port takes
// the four downlinks' 100 Gb/s).
func checkIncastSpines(t *testing.T, lab *simlab.Lab, dir string) {
	t.Helper()
	type reply struct {
		spine   int
		fct     float64
		sent    int64
		matches bool
	}
	var rs []reply
	on := map[int]int{}
	for _, r := range recipetest.ReadTable(t, dir, "ecmp_flows") {
		if r["step"] != "4 senders" {
			continue
		}
		d, _ := lab.Inventory().Device(r["src"])
		id, _ := strconv.Atoi(d.Options["stardust_id"])
		sport, _ := strconv.Atoi(r["udp_src_port"])
		dst, _ := strconv.Atoi(r["dst_subnet"])
		fct, err := strconv.ParseFloat(r["fct_us"], 64)
		sent, _ := strconv.ParseInt(r["sent"], 10, 64)
		rs = append(rs, reply{ecmp.FlowSlot(ecmp.SourceAddr(id, 4), ecmp.HostAddr(dst), 17, uint16(sport), ecmp.FlowDstPort) % 4, fct, sent, err == nil && r["received"] == r["sent"]})
		on[rs[len(rs)-1].spine]++
	}
	if len(rs) != 4 {
		t.Fatalf("ecmp_flows: %d replies for 4 senders", len(rs))
	}
	if len(on) == 4 {
		t.Fatalf("the four replies hash to four distinct spines with this seed: the test would not see them meet")
	}
	for _, r := range rs {
		// A reply of 9000 B frames (9024 B on the wire) on a 25 Gb/s link.
		one := float64(r.sent) * 9024 * 8 / 25e9 * 1e6
		want := float64(on[r.spine]) * one
		if !r.matches || r.fct < 0.97*want || r.fct > want+12 {
			t.Errorf("reply through spine %d, shared by %d: FCT %.1f us, want %.1f us (+12): %+v", r.spine+1, on[r.spine], r.fct, want, r)
		}
	}
}
