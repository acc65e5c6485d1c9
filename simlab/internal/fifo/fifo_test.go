package fifo

import (
	"math/rand/v2"
	"testing"
)

// A queue whose front is cut by re-slicing and whose end grows through
// RoomFor keeps its elements in order, and once its array has room for
// twice what it holds it allocates nothing more: the elements move back
// to the array's start instead (an append would have allocated a new
// array whenever the end reached the array's, the front's slots lost).
func TestRoomForReusesTheArrayAndKeepsTheOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	var q, arr []int
	next, want := 0, 0
	step := func() {
		for range 1 + r.IntN(300) {
			q = append(RoomFor(q, &arr, 16), next)
			next++
		}
		for n := r.IntN(len(q) + 1); n > 0; n-- {
			if q[0] != want {
				t.Fatalf("front %d, want %d (queue %d long)", q[0], want, len(q))
			}
			q, want = q[1:], want+1
		}
		for len(q) > 500 { // bound what it holds
			if q[0] != want {
				t.Fatalf("front %d, want %d", q[0], want)
			}
			q, want = q[1:], want+1
		}
	}
	for range 1000 {
		step()
	}
	for i, v := range q {
		if v != want+i {
			t.Fatalf("element %d is %d, want %d", i, v, want+i)
		}
	}
	// AllocsPerRun rounds down an average: 100 steps a run.
	if allocs := testing.AllocsPerRun(20, func() {
		for range 100 {
			step()
		}
	}); allocs != 0 {
		t.Errorf("%.0f allocations in 100 steps of a queue at most 800 long: the array is not reused", allocs)
	}
}
