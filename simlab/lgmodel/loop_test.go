package lgmodel

import (
	"math/rand/v2"
	"testing"

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
