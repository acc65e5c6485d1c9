package lgmodel

import (
	"math/rand/v2"
	"slices"
	"testing"

	lg "testbed/p4/linkguardian"
)

// The leading ACK frees every copy at or below the highest original the
// receiver has seen, except a notified hole's, which the Tx buffer holds
// until its copies are made (sender.p4: decide_retx_or_drop).
func TestLeadingAckFreesExactlyTheAcknowledgedCopies(t *testing.T) {
	c, err := Defaults(Ordered, 100e9, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(c, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	s := m.s
	s.nextSeq = 10 // originals 0..9 sent
	frames := func() int64 {
		tx, _, _ := m.Buffers()
		return tx / int64(c.FrameBytes+lg.HeaderBytes)
	}
	s.handle(&event{kind: evAck, seq: 4})
	if got := frames(); got != 6 {
		t.Fatalf("after leading ACK 4: %d copies, want 6 (4..9)", got)
	}
	// The receiver saw 6 with 5 missing: the notification, then the ACK.
	s.notifPending++
	s.handle(&event{kind: evNotify, seq: 5, n: 1})
	if got := frames(); got != 6 {
		t.Fatalf("hole 5 notified: %d copies, want 6", got)
	}
	s.handle(&event{kind: evAck, seq: 7})
	if got := frames(); got != 4 {
		t.Fatalf("after leading ACK 7: %d copies, want 4 (hole 5 held, 7..9)", got)
	}
	// The handling delay passes: the held copy becomes N copies.
	e := s.q[qHandled].ev[s.q[qHandled].head]
	s.handle(&e)
	if got := frames(); got != 3 {
		t.Fatalf("after the retransmission: %d copies, want 3", got)
	}
	if want := slices.Repeat([]int64{5}, c.Copies); !slices.Equal(s.retx, want) {
		t.Fatalf("retransmit queue %v, want %v", s.retx, want)
	}
}

// A hole whose copy the full Tx buffer dropped is not retransmitted.
func TestDroppedCopyIsNotRetransmitted(t *testing.T) {
	c, _ := Defaults(Ordered, 100e9, 0, 100)
	c.RetxHandling = 0
	m, _ := New(c, rand.New(rand.NewPCG(1, 1)))
	s := m.s
	s.nextSeq, s.txDropped = 10, []int64{7}
	s.notifPending++
	s.handle(&event{kind: evNotify, seq: 6, n: 2})
	if want := slices.Repeat([]int64{6}, c.Copies); !slices.Equal(s.retx, want) {
		t.Fatalf("retransmit queue %v, want %v (7's copy was dropped)", s.retx, want)
	}
}

// Under a stress the Tx buffer never holds more than its capacity; the
// copies it drops leave losses that only ackNoTimeout skips.
func TestTxBufferBoundHoldsUnderStress(t *testing.T) {
	for _, m := range []Mode{Ordered, NonBlocking} {
		c, _ := Defaults(m, 100e9, 1e-2, 300_000)
		c.TxBufferCap = 20_000 // below the 100G round trip's window
		r, err := Run(c, rand.New(rand.NewPCG(5, 5)))
		if err != nil {
			t.Fatal(err)
		}
		if r.MaxTxBufferBytes > int64(c.TxBufferCap) {
			t.Errorf("%s: Tx buffer reached %d B over its %d B", m, r.MaxTxBufferBytes, c.TxBufferCap)
		}
		if r.TxBufferDrops == 0 || r.Timeouts == 0 || r.Lost == 0 {
			t.Errorf("%s: a Tx buffer below the window must drop copies and leave losses: %+v", m, r)
		}
		if r.Delivered+r.Lost != c.Frames {
			t.Errorf("%s: accounting %+v", m, r)
		}
		c.TxBufferCap = 200_000
		r, _ = Run(c, rand.New(rand.NewPCG(5, 5)))
		if r.TxBufferDrops != 0 || r.MaxTxBufferBytes > 200_000 {
			t.Errorf("%s: default Tx buffer: %+v", m, r)
		}
	}
}

// The Tx buffer's watermark does not depend on how the run is simulated:
// skipping over steady runs (whose frames land, and whose ACKs come back,
// as one event) reads the same occupancy as stepping every frame, about a
// round trip's window and the few copies a loss holds (it read two
// windows when the copies sent after a run waited for the run's ACKs).
func TestTxBufferWatermarkSameSkippedOrStepped(t *testing.T) {
	for _, mode := range []Mode{Ordered, NonBlocking} {
		for _, maxRun := range []int64{0, 256} { // 256: the switch emulator's runs
			var got [2]int64
			for i, step := range []bool{false, true} {
				c, err := Defaults(mode, 100e9, 1e-3, 300_000)
				if err != nil {
					t.Fatal(err)
				}
				c.Step, c.MaxRun = step, maxRun
				m, err := New(c, rand.New(rand.NewPCG(3, 3)))
				if err != nil {
					t.Fatal(err)
				}
				m.Advance(1 << 62)
				got[i] = m.Result().MaxTxBufferBytes / int64(c.FrameBytes+lg.HeaderBytes)
				if w := m.s.steadyTx; got[i] < w || got[i] > w+4 {
					t.Errorf("%s step=%v: Tx buffer watermark %d copies, window %d", mode, step, got[i], w)
				}
			}
			if d := got[0] - got[1]; d < -2 || d > 2 {
				t.Errorf("%s, runs of at most %d: watermark %d copies skipping ahead, %d stepping", mode, maxRun, got[0], got[1])
			}
		}
	}
}
