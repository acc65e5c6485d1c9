package lgmodel

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Every original is counted once: delivered, lost, or still on its way.
// Without backpressure at 25G and 1e-2 the reorder buffer overflows; a
// hole whose timeout gives it up while ackNo still waits below it must
// not be delivered again when a late copy of it arrives (it once was:
// seed (1,5) stepped counted 20002 of 20000 originals).
func TestEveryOriginalCountedOnce(t *testing.T) {
	const frames = 20_000
	for _, mode := range []Mode{Ordered, NonBlocking} {
		for _, step := range []bool{false, true} {
			for seed := uint64(0); seed < 4; seed++ {
				c, err := Defaults(mode, 25e9, 1e-2, frames)
				if err != nil {
					t.Fatal(err)
				}
				c.Backpressure, c.Step = false, step
				m, err := New(c, rand.New(rand.NewPCG(seed, 5)))
				if err != nil {
					t.Fatal(err)
				}
				for at := 97 * time.Microsecond; ; at += 97 * time.Microsecond {
					done := m.AdvanceTo(at)
					r := m.Result()
					if r.Delivered+r.Lost > r.FramesSent || r.Transmissions != r.FramesSent+r.Copies+r.Dummies {
						t.Fatalf("%s step=%v seed (%d,5) at %v: sent %d, delivered %d + lost %d, transmissions %d",
							mode, step, seed, at, r.FramesSent, r.Delivered, r.Lost, r.Transmissions)
					}
					if done {
						if r.Delivered+r.Lost != frames || r.FramesSent != frames {
							t.Fatalf("%s step=%v seed (%d,5): sent %d, delivered %d + lost %d, want %d",
								mode, step, seed, r.FramesSent, r.Delivered, r.Lost, frames)
						}
						break
					}
					if at > time.Second {
						t.Fatalf("%s step=%v seed (%d,5): not done after 1 s", mode, step, seed)
					}
				}
			}
		}
	}
}
