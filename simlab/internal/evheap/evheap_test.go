package evheap

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Events come out by time, and those of one time in the order they went
// in, however pushes and pops interleave.
func TestOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type ev struct {
		t int64
		n int
	}
	var h Heap[int]
	var held []ev // what the heap should hold, in push order
	var got []ev
	n := 0
	for range 20000 {
		if h.Len() > 0 && rng.IntN(3) == 0 {
			tm, e := h.Pop()
			got = append(got, ev{tm, e})
			// The earliest held, the first pushed among equals.
			best := 0
			for i, x := range held {
				if x.t < held[best].t {
					best = i
				}
			}
			if want := held[best]; want != (ev{tm, e}) {
				t.Fatalf("pop %d: got time %d event %d, want time %d event %d", len(got), tm, e, want.t, want.n)
			}
			held = slices.Delete(held, best, best+1)
			continue
		}
		x := ev{int64(rng.IntN(50)), n}
		n++
		h.Push(x.t, x.n)
		held = append(held, x)
		if h.Len() != len(held) || h.Next() != slices.MinFunc(held, func(a, b ev) int { return int(a.t - b.t) }).t {
			t.Fatalf("after push %d: len %d, next %d; want len %d", n, h.Len(), h.Next(), len(held))
		}
	}
	if len(got) == 0 {
		t.Fatal("no pops")
	}
}
