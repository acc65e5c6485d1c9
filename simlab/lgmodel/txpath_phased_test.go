package lgmodel

import (
	"math/rand/v2"
	"testing"
)

// phasedFlip goes from one crossing of a phased decision's bound to the
// next; it gives the period that walking the phase period by period (as
// phasedLength did) finds first deciding otherwise, for courier loops and
// steps as both speeds make them and random ones, both outcomes, and
// bounds reached and not.
func TestPhasedFlipIsThePeriodByPeriodWalk(t *testing.T) {
	walk := func(c tpPhased, courier, step, k int64) int64 {
		r := c.r
		for i := int64(1); i <= k; i++ {
			if r += step; r >= courier {
				r -= courier
			}
			if (r <= c.d) != c.freed {
				return i
			}
		}
		return k + 1
	}
	rng := rand.New(rand.NewPCG(1, 2))
	flips := 0
	for n := 0; n < 20000; n++ {
		courier := []int64{1_000_000, 1_000_000, 7, 97, 1 + rng.Int64N(2_000_000)}[n%5]
		step := []int64{123_280 % courier, 493_120 % courier, 1 + rng.Int64N(courier)}[n%3]
		if step == 0 {
			continue
		}
		d := rng.Int64N(courier - 1) // a phased decision: 0 <= d < courier-1
		c := tpPhased{d: d, freed: n%2 == 0}
		if c.freed {
			c.r = rng.Int64N(d + 1)
		} else {
			c.r = d + 1 + rng.Int64N(courier-d-1)
		}
		k := 1 + rng.Int64N(tpPhasedLook)
		p := &txPath{courier: courier}
		got, want := p.phasedFlip(c, step, k), walk(c, courier, step, k)
		if got != want {
			t.Fatalf("courier %d, step %d, %+v, k %d: first flip %d, walking period by period %d", courier, step, c, k, got, want)
		}
		if want <= k {
			flips++
		}
	}
	if flips < 1000 {
		t.Errorf("%d cases flip within their bound", flips)
	}
}
