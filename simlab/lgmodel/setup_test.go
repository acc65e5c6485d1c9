package lgmodel

import (
	"math/rand/v2"
	"testing"
)

// The packets the control plane injects from the CPU port: without the
// receiver's explicit ACK the stress traffic's leading ACK reaches the
// sender only in loss notifications, the Tx buffer fills between two
// losses and the copies of most lost frames were tail-dropped, so most
// losses stay losses; without the sender's dummy no dummy is ever sent.
func TestInjectedPacketsCarryTheProtocol(t *testing.T) {
	run := func(noAck, noDummy bool) Result {
		t.Helper()
		c, err := Defaults(Ordered, 25e9, 1e-3, 200_000)
		if err != nil {
			t.Fatal(err)
		}
		c.NoAck, c.NoDummy = noAck, noDummy
		r, err := Run(c, rand.New(rand.NewPCG(7, 7)))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	full, noAck, noDummy := run(false, false), run(true, false), run(false, true)
	t.Logf("full: loss %.3g, Tx buffer drops %d, dummies %d", full.EffectiveLoss, full.TxBufferDrops, full.Dummies)
	t.Logf("no explicit ACK: loss %.3g, Tx buffer drops %d, peak %d B", noAck.EffectiveLoss, noAck.TxBufferDrops, noAck.MaxTxBufferBytes)
	t.Logf("no dummy: loss %.3g, dummies %d", noDummy.EffectiveLoss, noDummy.Dummies)
	if full.EffectiveLoss > 1e-4 || full.TxBufferDrops != 0 || full.Dummies == 0 {
		t.Fatalf("with every packet: %+v", full)
	}
	if noAck.EffectiveLoss < 5e-4 || noAck.TxBufferDrops < noAck.FramesSent/2 {
		t.Errorf("without the explicit ACK: effective loss %.3g, %d of %d copies tail-dropped: the Tx buffer was freed", noAck.EffectiveLoss, noAck.TxBufferDrops, noAck.FramesSent)
	}
	if noAck.MaxTxBufferBytes > int64(200_000)+2000 || noAck.MaxTxBufferBytes < 150_000 {
		t.Errorf("without the explicit ACK the Tx buffer peaked at %d B, not near its 200 KB", noAck.MaxTxBufferBytes)
	}
	if noDummy.Dummies != 0 {
		t.Errorf("without the dummy: %d dummies", noDummy.Dummies)
	}
}

// The receiver's timer: without it ackNoTimeout never skips a hole that
// no copy fills (here none is retransmitted: no multicast replica), so
// the ordered mode delivers nothing after the first loss, while the
// non-blocking mode forwards around the holes and loses only them. With
// the timer both lose what the link corrupted.
func TestWithoutTheTimerAHoleBlocksForGood(t *testing.T) {
	run := func(mode Mode, noTimeout bool) Result {
		t.Helper()
		c, err := Defaults(mode, 25e9, 1e-3, 100_000)
		if err != nil {
			t.Fatal(err)
		}
		c.Copies, c.NoTimeout = 0, noTimeout
		r, err := Run(c, rand.New(rand.NewPCG(3, 3)))
		if err != nil {
			t.Fatal(err)
		}
		if r.Delivered+r.Lost != r.FramesSent || r.FramesSent != c.Frames {
			t.Fatalf("%v (no timeout %v): %d delivered and %d lost of %d sent", mode, noTimeout, r.Delivered, r.Lost, r.FramesSent)
		}
		return r
	}
	for _, mode := range []Mode{Ordered, NonBlocking} {
		with, without := run(mode, false), run(mode, true)
		t.Logf("%v: with the timer loss %.3g (%d timeouts), without %.3g (%d buffer drops)", mode, with.EffectiveLoss, with.Timeouts, without.EffectiveLoss, without.BufferDrops)
		if with.EffectiveLoss > 2e-3 || with.Timeouts == 0 {
			t.Errorf("%v with the timer: %+v", mode, with)
		}
		if without.Timeouts != 0 {
			t.Errorf("%v without the timer: %d timeouts", mode, without.Timeouts)
		}
		switch mode {
		case Ordered:
			if without.EffectiveLoss < 0.5 || without.BufferDrops == 0 {
				t.Errorf("ordered without the timer: loss %.3g, %d buffer drops: the holes did not block", without.EffectiveLoss, without.BufferDrops)
			}
		case NonBlocking:
			if without.EffectiveLoss != with.EffectiveLoss && without.EffectiveLoss > 2e-3 {
				t.Errorf("non-blocking without the timer: loss %.3g, with %.3g", without.EffectiveLoss, with.EffectiveLoss)
			}
		}
	}
}
