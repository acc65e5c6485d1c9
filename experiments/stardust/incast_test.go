package stardust_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"testbed/orchestrator"
	"testbed/results"

	"testbed/experiments/recipetest"
	"testbed/experiments/stardust"
)

// Fig. 10c on the bench's shape with 7 senders: Stardust loses no cell,
// drains the senders together (Jain's index over their FCTs near 1, the
// first within 5% of the last) and finishes within 5% of the port's
// ideal, the excess waiting in the senders' VOQs (§5.4). The packet
// fabric, pushing into shallow buffers, drops packets, spreads the FCTs
// (a lower Jain's index) and finishes last later.
func TestIncastFig10c(t *testing.T) {
	var s stardust.IncastSummary
	res := runOffline(t, stardust.NewIncast(), &s, "senders=1,7")
	if !s.ModelOnly || s.Partial || s.Unfinished != 0 || len(s.Stardust) != 2 || len(s.Packet) != 2 {
		t.Fatalf("summary %+v", s)
	}
	sd, pk := s.Stardust["n7"], s.Packet["n7"]
	t.Logf("stardust %+v", sd)
	t.Logf("packet %+v", pk)
	if s.CellsLost != 0 || sd.Lost != 0 {
		t.Errorf("Stardust lost %d cells", s.CellsLost)
	}
	if sd.Jain < 0.999 || sd.FirstFCTMS < 0.95*sd.LastFCTMS {
		t.Errorf("Stardust drained unevenly: Jain %.4f, first %.3f last %.3f ms", sd.Jain, sd.FirstFCTMS, sd.LastFCTMS)
	}
	if sd.LastOverIdl > 1.05 || sd.LastOverIdl < 1 {
		t.Errorf("Stardust's last FCT %.3f ms is %.3f of the ideal", sd.LastFCTMS, sd.LastOverIdl)
	}
	if pk.Lost == 0 || pk.Retransmits != pk.Lost || pk.Jain >= sd.Jain || pk.LastFCTMS <= sd.LastFCTMS {
		t.Errorf("packet fabric: %d drops, %d retransmits, Jain %.4f, last %.3f ms; Stardust Jain %.4f last %.3f ms",
			pk.Lost, pk.Retransmits, pk.Jain, pk.LastFCTMS, sd.Jain, sd.LastFCTMS)
	}
	// One sender alone sees no incast: neither fabric loses anything.
	if one := s.Packet["n1"]; one.Lost != 0 || math.Abs(s.Stardust["n1"].LastOverIdl-1) > 0.05 {
		t.Errorf("one sender: packet fabric lost %d, Stardust at %.3f of the ideal", one.Lost, s.Stardust["n1"].LastOverIdl)
	}
	rows := recipetest.ReadTable(t, res.Dir, "incast_flows")
	if len(rows) != 2*(1+7) {
		t.Errorf("%d rows of flows, want 16", len(rows))
	}
	recipetest.CheckReport(t, res.Dir, "fig10c-incast", "incast-drain")
}

// With shallower buffers the packet fabric drops more: its losses are the
// buffers', not a constant.
func TestIncastPacketFabricDropsWithItsBuffers(t *testing.T) {
	var deep, shallow stardust.IncastSummary
	runOffline(t, stardust.NewIncast(), &deep, "senders=7", "switch_buffer_kb=1024")
	runOffline(t, stardust.NewIncast(), &shallow, "senders=7", "switch_buffer_kb=64")
	if shallow.PacketDrops <= deep.PacketDrops {
		t.Errorf("drops: %d with 64 KB buffers, %d with 1 MB", shallow.PacketDrops, deep.PacketDrops)
	}
	if deep.CellsLost != 0 || shallow.CellsLost != 0 {
		t.Errorf("Stardust lost cells: %d, %d", deep.CellsLost, shallow.CellsLost)
	}
}

// interrupted runs r and cancels it at its first measurement event; the
// bundle must verify, marked aborted, and its summary is decoded into
// summary.
func interrupted(t *testing.T, r orchestrator.Recipe, summary any, sets ...string) {
	t.Helper()
	params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, sets)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	eng := &orchestrator.Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state"),
		Observe: func(e results.Event) {
			if e.Type == "measurement" {
				cancel(orchestrator.ErrAborted)
			}
		}}
	res, err := eng.Run(ctx, orchestrator.RunRequest{Recipe: r, Params: params, Lab: fabricLab(t), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != results.StatusAborted {
		t.Fatalf("status %s (%s), want aborted", res.Status, res.Reason)
	}
	if rep, err := results.Verify(res.Dir); err != nil || !rep.OK {
		t.Fatalf("bundle does not verify: %v %+v", err, rep)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, summary); err != nil {
		t.Fatal(err)
	}
}

// Interrupted after its first N, the run leaves a verifiable bundle whose
// summary holds that N and says it is partial.
func TestIncastInterruptedLeavesAReadableBundle(t *testing.T) {
	var s stardust.IncastSummary
	interrupted(t, stardust.NewIncast(), &s, "senders=2,3,4", "response_kb=50")
	if !s.Partial || len(s.Stardust) != 1 || s.Stardust["n2"].LastFCTMS == 0 {
		t.Errorf("summary of the interrupted run: %+v", s)
	}
}

// Jain's index: 1 when all are equal, 1/n when one holds everything.
func TestJain(t *testing.T) {
	if j := stardust.Jain([]float64{3, 3, 3, 3}); math.Abs(j-1) > 1e-12 {
		t.Errorf("equal: %g", j)
	}
	if j := stardust.Jain([]float64{5, 0, 0, 0}); math.Abs(j-0.25) > 1e-12 {
		t.Errorf("one of four: %g", j)
	}
	if j := stardust.Jain([]float64{1, 2}); math.Abs(j-0.9) > 1e-12 {
		t.Errorf("1 and 2: %g, want 9/10", j)
	}
}
