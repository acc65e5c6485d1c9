package lgmodel

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// A stretch replayed from a note leaves its inputs in the history a cycle
// repeats by reference (histLazy), not copied: the history read back
// (histAt) is, at every position a cycle may read, what the same run
// gives with every replayed stretch's inputs fed one by one (noMemo), read
// in 97 us slices; and the cases do leave stretches there by reference.
func TestTxPathHistoryOfReplaysIsTheirInputs(t *testing.T) {
	for _, k := range []struct {
		mode   Mode
		bps    float64
		maxRun int64
	}{{NonBlocking, 100e9, 1024}, {NonBlocking, 25e9, 1024}, {Ordered, 100e9, 256}} {
		c, err := Defaults(k.mode, k.bps, 1e-3, 200_000)
		if err != nil {
			t.Fatal(err)
		}
		c.MaxRun = k.maxRun
		c = c.WithCourier()
		var ms [2]*Sim
		for i := range ms {
			if ms[i], err = New(c, rand.New(rand.NewPCG(5, 3))); err != nil {
				t.Fatal(err)
			}
			ms[i].s.tp.noMemo = i == 1
		}
		name := fmt.Sprintf("%s %gG", k.mode, k.bps/1e9)
		lazy, reads := 0, 0
		for at := 97 * time.Microsecond; ; at += 97 * time.Microsecond {
			done := ms[0].AdvanceTo(at)
			ms[1].AdvanceTo(at)
			got, want := ms[0].s.tp, ms[1].s.tp
			if got.histN != want.histN {
				t.Fatalf("%s at %v: %d inputs in the history, fed one by one %d", name, at, got.histN, want.histN)
			}
			lazy += len(got.lazy) - got.lazyAt
			for i := max(0, got.histN-tpHistory); i < got.histN; i++ {
				if g, w := got.histAt(i), want.histAt(i); g != w {
					t.Fatalf("%s at %v: input %d of %d in the history %+v, fed one by one %+v", name, at, i, got.histN, g, w)
				}
				reads++
			}
			if len(want.lazy) != want.lazyAt {
				t.Fatalf("%s: stretches by reference with every stretch fed one by one", name)
			}
			if done {
				break
			}
		}
		t.Logf("%s: %d inputs compared, %d stretches by reference met, %d replayed", name, reads, lazy, ms[0].s.tp.memoHits)
		if lazy == 0 || ms[0].s.tp.memoHits == 0 {
			t.Errorf("%s: no stretch was left in the history by reference", name)
		}
	}
}
