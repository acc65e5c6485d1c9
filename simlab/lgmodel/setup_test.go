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
