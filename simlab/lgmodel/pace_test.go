package lgmodel

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// A paced stress test (Config.Period) sends original i no earlier than
// i x Period, keeps up with the generator when nothing holds the sender
// back, and sends back to back when pauses hold it behind (the ordered
// sender's 92 Gb/s falls behind a generator at 99.2); the watermark it reads
// and everything else it counts do not depend on how its time is sliced
// (the simulated switch advances it in chunks of its clock).
func TestPacedStressTestFollowsTheGenerator(t *testing.T) {
	const frames = 60_000
	period := 124 * time.Nanosecond // the artifact's timer at 100G
	pps := durPS(period)
	for _, mode := range []Mode{NonBlocking, Ordered} {
		c, err := Defaults(mode, 100e9, 1e-3, frames)
		if err != nil {
			t.Fatal(err)
		}
		c = c.WithCourier()
		c.Period = period
		m, err := New(c, rand.New(rand.NewPCG(3, 5)))
		if err != nil {
			t.Fatal(err)
		}
		ser := m.s.serFrame
		behind := int64(0) // the most originals the sender was behind the generator
		for at := int64(0); !m.Advance(at); at += 997_000 {
			sent := m.Result().FramesSent
			// By at, the generator has made at/period+1 originals; the
			// sender has at most sent those.
			if made := at/pps + 1; sent > made {
				t.Fatalf("%v: %d originals sent by %d ps, the generator had made %d", mode, sent, at, made)
			}
			if made := min(frames, at/pps+1); made-sent > behind {
				behind = made - sent
			}
		}
		res := m.Result()
		if res.FramesSent != frames || res.Delivered != frames {
			t.Fatalf("%v: sent %d, delivered %d of %d", mode, res.FramesSent, res.Delivered, frames)
		}
		// The run lasts the generator's time at least.
		if end := durPS(m.Now()); end < (frames-1)*pps+ser {
			t.Errorf("%v: done at %d ps, before the last original could be sent (%d ps)", mode, end, (frames-1)*pps+ser)
		}
		t.Logf("%v: %d dummies, at most %d originals behind the generator, read queue %d B", mode, res.Dummies, behind, res.MaxTxQueueBytes)
		switch mode {
		case NonBlocking:
			// Nothing pauses it: it keeps within a few originals of the
			// generator (a loss's copies and the dummies in the gaps).
			if behind > 8 {
				t.Errorf("non-blocking: %d originals behind a generator 0.6%% slower than the wire", behind)
			}
			if res.Dummies == 0 {
				t.Error("non-blocking: no dummy went in the generator's gaps")
			}
		case Ordered:
			// Backpressure pauses it for microseconds at a time: it falls
			// behind, and stays behind, sending its backlog back to back.
			if res.PauseFrames == 0 || behind < 10 {
				t.Errorf("ordered: %d pause frames, at most %d originals behind: the pauses did not hold the sender", res.PauseFrames, behind)
			}
		}

		// Sliced in one go: the same run, to the count.
		m2, err := New(c, rand.New(rand.NewPCG(3, 5)))
		if err != nil {
			t.Fatal(err)
		}
		m2.Advance(math.MaxInt64)
		if r2 := m2.Result(); r2 != res {
			t.Errorf("%v: advanced in one go %+v, in 997 ns slices %+v", mode, r2, res)
		}
	}
}

// The paced non-blocking sender reads no more Tx buffer than the back to
// back one: the read port serves a copy in less than the generator's
// period, where back to back it gets one no faster than the wire sends.
func TestPacedTxQueueNotAboveBackToBack(t *testing.T) {
	c, err := Defaults(NonBlocking, 100e9, 1e-3, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	c = c.WithCourier()
	b2b, err := Run(c, rand.New(rand.NewPCG(1, 5)))
	if err != nil {
		t.Fatal(err)
	}
	c.Period = 124 * time.Nanosecond
	paced, err := Run(c, rand.New(rand.NewPCG(1, 5)))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read queue: back to back %d B, paced %d B", b2b.MaxTxQueueBytes, paced.MaxTxQueueBytes)
	if paced.MaxTxQueueBytes > b2b.MaxTxQueueBytes {
		t.Errorf("paced reads %d B, back to back %d B", paced.MaxTxQueueBytes, b2b.MaxTxQueueBytes)
	}
	// A period shorter than the wire's is back to back.
	c.Period = time.Nanosecond
	fast, err := Run(c, rand.New(rand.NewPCG(1, 5)))
	if err != nil {
		t.Fatal(err)
	}
	if fast != b2b {
		t.Errorf("a 1 ns period gives %+v, back to back %+v", fast, b2b)
	}
}

// A paced stress test's steady stretches, worked out as runs (paced.go),
// give exactly what sending them frame by frame gives: same seed, same
// counters, Tx and reorder buffer readings, read in slices of simulated
// time as the simulated switch reads them and at the end of one go. The
// cases cover both speeds, the three modes, ordered with and without its
// pauses, 1e-5 and 1e-3, dummies corrupted often enough to be lost in
// the gaps, a period long enough for the line to idle on redundant
// dummies, and no dummies at all; and, at 1e-4, enough losses for the
// stretches after them to be replayed (replay.go: keyed on the
// generator's phase, in segments, recorded through the cycle jumps the
// sender's slack bounds), which the test requires.
func TestPacedRunEqualsStepping(t *testing.T) {
	seeds := sweep[uint64](1, 3) // make test: seed 0; make test-long: 0, 1, 2
	short := sweep[int64](15_000, 40_000)
	type cas struct {
		mode      Mode
		bps, loss float64
		frames    int64
		periodNs  int64 // at 100G, scaled by 100/speed as loss-sweep scales it
		bp        bool
		lossSmall float64 // 0: the Defaults' (from loss)
		noDummy   bool
		courier   bool // the Tx buffer's read queue (txpath.go): no paced run, cycles jumped
	}
	var cases []cas
	for _, bps := range []float64{25e9, 100e9} {
		for _, loss := range []float64{1e-5, 1e-3} {
			frames := short
			if loss < 1e-4 {
				frames = sweep[int64](100_000, 300_000) // a few losses
			}
			cases = append(cases, cas{Ordered, bps, loss, frames, 124, true, 0, false, false},
				cas{NonBlocking, bps, loss, frames, 124, false, 0, false, false},
				cas{Off, bps, loss, frames, 124, false, 0, false, false})
		}
		cases = append(cases, cas{Ordered, bps, 1e-3, short, 124, false, 0, false, false},
			cas{NonBlocking, bps, 1e-3, short, 124, false, 0.05, false, false},
			cas{NonBlocking, bps, 1e-3, short, 200, false, 0.3, false, false},
			cas{Ordered, bps, 1e-3, short, 150, true, 0, true, false},
			cas{Ordered, bps, 1e-5, short, 140, true, 0.05, false, false}, // the original 10 ns after a dummy
			cas{Ordered, bps, 1e-3, short, 124, true, 0.05, false, false},
			cas{Ordered, bps, 1e-3, short, 124, true, 0, false, true},
			cas{NonBlocking, bps, 1e-3, short, 124, false, 0, false, true})
	}
	// Enough losses at 1e-4 for the stretches after them to meet the
	// same state at the same phase of the generator, and be replayed
	// (replay.go), behind-the-timer cycle jumps recorded through.
	long := sweep[int64](400_000, 1_500_000)
	cases = append(cases, cas{Ordered, 25e9, 1e-4, long, 124, true, 0, false, false},
		cas{NonBlocking, 100e9, 1e-4, long, 124, false, 0, false, false})
	var runs, periods, ahead, jumped, replayed, through int64
	for _, k := range cases {
		c, err := Defaults(k.mode, k.bps, k.loss, k.frames)
		if err != nil {
			t.Fatal(err)
		}
		c.Period = time.Duration(k.periodNs*100e9/int64(k.bps)) * time.Nanosecond
		c.Backpressure, c.NoDummy = k.bp, k.noDummy
		if k.lossSmall > 0 {
			c.LossSmall = k.lossSmall
		}
		if k.courier {
			c = c.WithCourier()
		}
		step := c
		step.NoPacedRun, step.NoLoopAhead, step.NoCycleSkip = true, true, true
		for seed := uint64(0); seed < seeds; seed++ {
			fast, err := New(c, rand.New(rand.NewPCG(seed, 17)))
			if err != nil {
				t.Fatal(err)
			}
			slow, err := New(step, rand.New(rand.NewPCG(seed, 17)))
			if err != nil {
				t.Fatal(err)
			}
			for at := 97 * time.Microsecond; ; at += 97 * time.Microsecond {
				df, ds := fast.AdvanceTo(at), slow.AdvanceTo(at)
				rf, rs := fast.Result(), slow.Result()
				txf, rxf, pf := fast.Buffers()
				txs, rxs, ps := slow.Buffers()
				qf, wf, _ := fast.TxQueue()
				qs, ws, _ := slow.TxQueue()
				if rf != rs || df != ds || txf != txs || rxf != rxs || pf != ps || qf != qs || wf != ws {
					t.Fatalf("%+v seed %d at %v: runs %+v (buffers %d %d %v), frame by frame %+v (%d %d %v)", k, seed, at, rf, txf, rxf, pf, rs, txs, rxs, ps)
				}
				if df {
					break
				}
			}
			one, err := New(c, rand.New(rand.NewPCG(seed, 17)))
			if err != nil {
				t.Fatal(err)
			}
			one.Advance(math.MaxInt64)
			if got, want := one.Result(), slow.Result(); got != want {
				t.Fatalf("%+v seed %d: in one go %+v, frame by frame %+v", k, seed, got, want)
			}
			if one.s.draws != slow.s.draws || fast.s.draws != slow.s.draws {
				t.Errorf("%+v seed %d: %d numbers drawn in one go, %d sliced, frame by frame %d", k, seed, one.s.draws, fast.s.draws, slow.s.draws)
			}
			runs += one.s.pacedRuns + fast.s.pacedRuns
			periods += one.s.pacedJumped + fast.s.pacedJumped
			ahead += one.s.aheadN
			jumped += one.s.cyc.jumpedSeqs
			replayed += one.s.replayed + fast.s.replayed
			through += one.s.slackJumps + fast.s.slackJumps
			if !k.courier && (one.s.pacedRuns == 0 || fast.s.pacedRuns == 0) {
				t.Fatalf("%+v seed %d: no paced run (%d in one go, %d sliced)", k, seed, one.s.pacedRuns, fast.s.pacedRuns)
			}
		}
	}
	t.Logf("paced runs %d, originals in whole periods %d, jumped in cycles %d, stretches replayed %d, cycle jumps recorded through %d", runs, periods, jumped, replayed, through)
	if runs == 0 || periods == 0 || jumped == 0 || replayed == 0 || through == 0 {
		t.Errorf("paced runs %d (originals in whole periods %d), originals jumped in cycles %d, stretches replayed %d (cycle jumps recorded through %d): a fast path was not taken", runs, periods, jumped, replayed, through)
	}
	// The loop is not run ahead of a paced sender (model.go, loopsAhead).
	if ahead != 0 {
		t.Errorf("%d loop passes handled ahead of a paced sender", ahead)
	}
}

// A replay installs the slack each original of its stretch left
// (replay.go restorePaced), which the cycle found at its end reads to
// bound its jump (paced.go paceCycles): the sender behind the generator
// catches up within so many cycles. The slack left in the ring from
// before the replay is of other originals; where it is smaller the jump
// is only shorter (exact still), so TestPacedRunEqualsStepping did not
// notice it kept. Here a replay finds the ring full of a slack no
// original left (staleSlack), as large as can be: unless the replay
// installs every slack it reads, a jump goes past the point where the
// sender catches up, and the counters part from stepping's.
func TestPacedReplayInstallsTheSlack(t *testing.T) {
	seeds := sweep[uint64](1, 4) // make test: seed 0; make test-long: 0-3
	var replayed, bounded int64
	for seed := uint64(0); seed < seeds; seed++ {
		c, err := Defaults(Ordered, 25e9, 1e-4, 1_000_000)
		if err != nil {
			t.Fatal(err)
		}
		c.Period = 496 * time.Nanosecond
		step := c
		step.NoPacedRun, step.NoLoopAhead, step.NoCycleSkip = true, true, true
		slow, err := New(step, rand.New(rand.NewPCG(seed, 5)))
		if err != nil {
			t.Fatal(err)
		}
		slow.Advance(math.MaxInt64)
		for _, slice := range []time.Duration{0, time.Millisecond} {
			fast, err := New(c, rand.New(rand.NewPCG(seed, 5)))
			if err != nil {
				t.Fatal(err)
			}
			fast.s.staleSlack = true
			if slice == 0 {
				fast.Advance(math.MaxInt64)
			} else {
				for at := slice; !fast.AdvanceTo(at); at += slice {
				}
			}
			if got, want := fast.Result(), slow.Result(); got != want {
				t.Fatalf("seed %d, slices of %v: replayed %+v, frame by frame %+v", seed, slice, got, want)
			}
			replayed += fast.s.replayed
			bounded += fast.s.slackJumps
		}
	}
	if replayed == 0 || bounded == 0 {
		t.Errorf("stretches replayed %d, cycle jumps the slack bounded recorded through %d: the case does not reach the slack", replayed, bounded)
	}
}
