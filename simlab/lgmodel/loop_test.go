package lgmodel

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	lg "testbed/p4/linkguardian"
)

// Frames on their way back round the loop are not in the recirculation
// queue: the pause threshold, on the queue's depth, does not count them.
func TestPauseThresholdCountsOnlyTheQueue(t *testing.T) {
	c, _ := Defaults(Ordered, 100e9, 0, 1000)
	for _, inFlight := range []bool{true, false} {
		m, _ := New(c, rand.New(rand.NewPCG(1, 1)))
		s := m.s
		b := int64(c.FrameBytes + lg.HeaderBytes)
		n := int64(c.PauseCells)*lg.CellBytes/b + 1 // enough to pause if queued
		for i := int64(0); i < n; i++ {
			p := packet{seq: 10 + i, kind: lg.PktOriginal, bytes: c.FrameBytes}
			if inFlight {
				s.flight.push(p)
				s.flightB += b
			} else {
				s.buf.push(p)
			}
			s.bufBytes += b
		}
		s.backpressure()
		if s.bpPaused == inFlight {
			t.Errorf("%d frames, in flight %v: paused %v", n, inFlight, s.bpPaused)
		}
	}
}

// A frame's turn is decided when it is back at the ingress, the loop's
// latency after its pass through the recirculation port.
func TestRecirculatedFrameIsDecidedAfterTheLoop(t *testing.T) {
	c, _ := Defaults(Ordered, 100e9, 0, 1000)
	m, _ := New(c, rand.New(rand.NewPCG(1, 1)))
	s := m.s
	s.off = &offered{}
	s.nextSeq, s.highest = 2, 1
	s.holes[0] = true
	s.arrive(packet{seq: 1, kind: lg.PktOriginal, bytes: c.FrameBytes}) // waits: 0 is missing
	s.arrive(packet{seq: 0, kind: lg.PktOriginal, bytes: c.FrameBytes}) // 0 forwarded at once
	m.Advance(1 << 50)
	d := s.off.delivered
	if len(d) != 2 || d[1].Seq != 1 {
		t.Fatalf("deliveries %+v", d)
	}
	want := drainPS(c.FrameBytes) + durPS(c.LoopLatency)
	if d[1].At != want {
		t.Errorf("frame 1 delivered at %d ps, want a pass and the loop: %d ps", d[1].At, want)
	}
}

// Running the loop ahead of the sender changes nothing: same seed, same
// counters, with every pass handled in turn by the main loop, read at the
// end and in slices along the way, with and without cycle skipping.
func TestLoopAheadEqualsStepping(t *testing.T) {
	const seeds = 2
	frames := sweep[int64](10_000, 30_000) // make test: a third of the frames; make test-long: all
	var ahead int64
	for _, bps := range []float64{25e9, 100e9} {
		for _, loss := range []float64{1e-4, 1e-3, 1e-2} {
			for _, bp := range []bool{true, false} {
				for _, noCycle := range []bool{true, false} {
					for seed := uint64(0); seed < seeds; seed++ {
						c, err := Defaults(Ordered, bps, loss, frames)
						if err != nil {
							t.Fatal(err)
						}
						c.Backpressure, c.NoCycleSkip = bp, noCycle
						c.Copies = 1 + int(seed%2)
						if seed%2 == 1 {
							c.LoopLatency = 250 * time.Nanosecond // a shorter loop: other ties
						}
						step := c
						step.NoLoopAhead = true
						want, err := Run(step, rand.New(rand.NewPCG(seed, 5)))
						if err != nil {
							t.Fatal(err)
						}
						one, _ := New(c, rand.New(rand.NewPCG(seed, 5)))
						one.Advance(1 << 62)
						name := fmt.Sprintf("%gG loss %g backpressure %v no cycle skip %v seed %d", bps/1e9, loss, bp, noCycle, seed)
						if got := one.Result(); got != want {
							t.Fatalf("%s: ahead %+v\nstepped %+v", name, got, want)
						}
						ahead += one.s.aheadN
						fast, _ := New(c, rand.New(rand.NewPCG(seed, 5)))
						slow, _ := New(step, rand.New(rand.NewPCG(seed, 5)))
						for at := 13 * time.Microsecond; ; at += 37 * time.Microsecond {
							df, ds := fast.AdvanceTo(at), slow.AdvanceTo(at)
							if rf, rs := fast.Result(), slow.Result(); rf != rs || df != ds || fast.Now() != slow.Now() {
								t.Fatalf("%s at %v: ahead %+v\nstepped %+v", name, at, rf, rs)
							}
							if df || at > time.Second {
								break
							}
						}
					}
				}
			}
		}
	}
	if ahead == 0 {
		t.Error("no pass of the loop was handled ahead")
	}
}
