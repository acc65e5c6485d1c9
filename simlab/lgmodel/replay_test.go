package lgmodel

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// Replaying the recorded stretch after a corruption must give exactly what
// simulating it gives: same seed, same counters and buffer peaks, read at
// the end and in slices along the way, the same simulated clock, and the
// run's source of random numbers left at the same place (simlab/tofino
// draws the next segment's numbers from it). The cases make the replays
// disagree with their recordings (a corrupted copy or dummy, a second
// corruption within the stretch, the loss-emulation table's share), so
// that the hand-over to stepping is exercised too.
func TestReplayEqualsStepping(t *testing.T) {
	const frames = 60_000
	seeds := sweep[uint64](1, 3) // make test: seed 0; make test-long: 0, 1, 2
	type cas struct {
		mode                       Mode
		maxRun                     int64
		bps, loss, drop, lossSmall float64
		copies                     int
		bp                         bool
		loop                       time.Duration
		txCap                      int
	}
	var cases []cas
	for _, bps := range []float64{25e9, 100e9} {
		cases = append(cases,
			cas{bps: bps, loss: 1e-3, copies: 2, bp: true},
			cas{bps: bps, loss: 1e-2, copies: 1, bp: true},
			cas{bps: bps, loss: 1e-4, copies: 1, bp: false},
			cas{bps: bps, loss: 3e-3, drop: 1e-3, lossSmall: 0.2, copies: 1, bp: true},
			cas{bps: bps, loss: 2e-2, copies: 1, bp: true, loop: 250 * time.Nanosecond, txCap: 20_000},
			cas{bps: bps, loss: 1e-3, copies: 2, bp: true, maxRun: 256}, // as simlab/tofino runs it
			// The buffer empties between losses: runs on their way when
			// a recording starts and when it is replayed differ in length.
			cas{bps: bps, loss: 4e-2, drop: 2e-2, lossSmall: 0.05, bp: true},
			cas{mode: NonBlocking, bps: bps, loss: 1e-3, copies: 2},
			cas{mode: NonBlocking, bps: bps, loss: 1e-2, copies: 1, maxRun: 256},
			cas{mode: NonBlocking, bps: bps, loss: 3e-3, drop: 2e-3, lossSmall: 0.2, copies: 1},
		)
	}
	replays, replayed, mid := map[Mode]int64{}, map[Mode]int64{}, map[Mode]int64{}
	for _, k := range cases {
		for seed := uint64(0); seed < seeds; seed++ {
			mode := k.mode
			if mode == Off {
				mode = Ordered
			}
			c, err := Defaults(mode, k.bps, k.loss, frames)
			if err != nil {
				t.Fatal(err)
			}
			c.Backpressure, c.Drop, c.LossSmall, c.MaxRun = k.bp, k.drop, k.lossSmall, k.maxRun
			if k.copies > 0 {
				c.Copies = k.copies // else as the paper's Eq. 2 gives
			}
			if k.loop > 0 {
				c.LoopLatency = k.loop
			}
			if k.txCap > 0 {
				c.TxBufferCap = k.txCap
			}
			step := c
			step.NoReplay = true
			name := fmt.Sprintf("%+v seed %d", k, seed)
			// In one go.
			rf, rs := rand.New(rand.NewPCG(seed, 13)), rand.New(rand.NewPCG(seed, 13))
			fast, _ := New(c, rf)
			slow, _ := New(step, rs)
			fast.Advance(1 << 62)
			slow.Advance(1 << 62)
			if a, b := fast.Result(), slow.Result(); a != b || fast.Now() != slow.Now() {
				t.Fatalf("%s: replayed %+v\nstepped %+v", name, a, b)
			}
			if a, b := rf.Uint64(), rs.Uint64(); a != b {
				t.Fatalf("%s: the source is left elsewhere: next %x, stepped %x", name, a, b)
			}
			replays[mode] += fast.s.replays
			replayed[mode] += fast.s.replayed
			mid[mode] += fast.s.midReplayed
			// In slices of simulated time, as the emulator reads it.
			rf, rs = rand.New(rand.NewPCG(seed, 13)), rand.New(rand.NewPCG(seed, 13))
			fast, _ = New(c, rf)
			slow, _ = New(step, rs)
			for at := 97 * time.Microsecond; ; at += 97 * time.Microsecond {
				df, ds := fast.AdvanceTo(at), slow.AdvanceTo(at)
				tf, ts, pf := fast.Buffers()
				uf, us, ps := slow.Buffers()
				if a, b := fast.Result(), slow.Result(); a != b || df != ds || fast.Now() != slow.Now() || tf != uf || ts != us || pf != ps {
					t.Fatalf("%s at %v: replayed %+v\nstepped %+v", name, at, a, b)
				}
				if df || at > 2*time.Second {
					break
				}
			}
			if a, b := rf.Uint64(), rs.Uint64(); a != b {
				t.Fatalf("%s, in slices: the source is left elsewhere: next %x, stepped %x", name, a, b)
			}
		}
	}
	// Both ways must have been taken in both modes: replays to their end,
	// and replays handed over to stepping at a draw that disagreed.
	for _, m := range []Mode{Ordered, NonBlocking} {
		if replayed[m] == 0 || replays[m] == replayed[m] {
			t.Errorf("%s: %d replays, %d to their end", m, replays[m], replayed[m])
		}
		t.Logf("%s: %d replays, %d to their end, %d of them from a checkpoint", m, replays[m], replayed[m], mid[m])
	}
	// In the ordered mode some stretches are replayed from a checkpoint
	// after the loss (the state at the loss had no recording).
	if mid[Ordered] == 0 {
		t.Errorf("%s: no replay from a checkpoint", Ordered)
	}
}
