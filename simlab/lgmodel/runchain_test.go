package lgmodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// A steady stretch's capped runs sent as one chain up to the time asked
// for (runChain) must give exactly what sending them one at a time gives
// (NoRunChain): the counters, the buffers and the courier's Tx buffer
// queue read in slices of simulated time that cut the chains, the run
// stopped mid-stretch (StopOffering: what the switch does when a segment
// ends, which must still send only the capped run under way) and the
// result at the end.
func TestRunChainEqualsCappedRuns(t *testing.T) {
	type cas struct {
		mode    Mode
		bps     float64
		loss    float64
		maxRun  int64
		courier bool
	}
	var cases []cas
	for _, bps := range []float64{25e9, 100e9} {
		for _, loss := range []float64{1e-3, 1e-4} {
			cases = append(cases,
				cas{NonBlocking, bps, loss, 1024, true}, cas{NonBlocking, bps, loss, 1024, false},
				cas{Ordered, bps, loss, 256, true}, cas{Off, bps, loss, 256, false})
		}
	}
	cases = append(cases, cas{NonBlocking, 25e9, 1e-3, 64, true}, cas{Ordered, 100e9, 1e-4, 64, false})
	// Slices shorter and longer than a capped run (a 25G run of 1024
	// frames takes 504 us, 100G's 126 us, 256 a quarter), and stops 1.9
	// and 7.3 ms in: they cut chains at various places.
	const frames = 400_000
	var chained int64
	for i, k := range cases {
		for seed := uint64(0); seed < 2; seed++ {
			slice := []time.Duration{137 * time.Microsecond, 1100 * time.Microsecond}[(i+int(seed))%2]
			stopAt := []time.Duration{1900 * time.Microsecond, 7300 * time.Microsecond}[seed]
			name := fmt.Sprintf("%+v seed %d slices %v", k, seed, slice)
			mk := func(noChain bool, total int64) *Sim {
				c, err := Defaults(k.mode, k.bps, k.loss, total)
				if err != nil {
					t.Fatal(err)
				}
				if k.mode == Off {
					c.Copies = 0
				}
				c.MaxRun, c.NoRunChain = k.maxRun, noChain
				if k.courier {
					c = c.WithCourier()
				}
				m, err := New(c, rand.New(rand.NewPCG(seed, 5)))
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			// Read along the way, to the end.
			fast, slow := mk(false, frames), mk(true, frames)
			for at := slice; ; at += slice {
				df, ds := fast.AdvanceTo(at), slow.AdvanceTo(at)
				sameSim(t, name+fmt.Sprintf(" at %v", at), fast, slow)
				if df != ds {
					t.Fatalf("%s at %v: done %v, capped runs %v", name, at, df, ds)
				}
				if df || at > time.Second {
					break
				}
			}
			chained += fast.s.chained
			if slow.s.chained != 0 {
				t.Fatalf("%s: NoRunChain sent %d runs in chains", name, slow.s.chained)
			}
			// Stopped mid-stretch, after slices and in one go.
			for _, sliced := range []bool{true, false} {
				fast, slow := mk(false, Continuous), mk(true, Continuous)
				for at := slice; sliced && at < stopAt; at += slice {
					fast.AdvanceTo(at)
					slow.AdvanceTo(at)
				}
				fast.AdvanceTo(stopAt)
				slow.AdvanceTo(stopAt)
				fast.StopOffering()
				slow.StopOffering()
				sameSim(t, name+fmt.Sprintf(" stopped at %v (sliced %v)", stopAt, sliced), fast, slow)
				if !fast.AdvanceTo(time.Duration(math.MaxInt64)) || !slow.AdvanceTo(time.Duration(math.MaxInt64)) {
					t.Fatalf("%s: not done after StopOffering", name)
				}
				sameSim(t, name+" after the stop", fast, slow)
			}
		}
	}
	// The chains must be taken: most stretches between losses at 1e-4
	// are several capped runs long.
	if chained < 10_000 {
		t.Errorf("only %d capped runs sent in chains", chained)
	}
	t.Logf("%d capped runs sent in chains", chained)
}

// sameSim fails unless a and b read the same: counters, buffers, the Tx
// buffer queue, the clock.
func sameSim(t *testing.T, what string, a, b *Sim) {
	t.Helper()
	if ra, rb := a.Result(), b.Result(); ra != rb {
		t.Fatalf("%s: chained %+v\ncapped runs %+v", what, ra, rb)
	}
	ta, xa, pa := a.Buffers()
	tb, xb, pb := b.Buffers()
	if ta != tb || xa != xb || pa != pb {
		t.Fatalf("%s: buffers chained %d %d %v, capped runs %d %d %v", what, ta, xa, pa, tb, xb, pb)
	}
	qa, wa, _ := a.TxQueue()
	qb, wb, _ := b.TxQueue()
	if qa != qb || wa != wb || a.Now() != b.Now() {
		t.Fatalf("%s: Tx queue chained %d/%d at %v, capped runs %d/%d at %v", what, qa, wa, a.Now(), qb, wb, b.Now())
	}
}
