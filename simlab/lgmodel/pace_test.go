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
