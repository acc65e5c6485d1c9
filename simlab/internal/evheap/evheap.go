// Package evheap is the event queue of the discrete-event models
// (simlab/ecmpmodel, simlab/stardustmodel's switch mode): a 4-ary min-heap
// by time, events of the same time in the order they were pushed, so that
// a run is the same from the same seed. It is pure: no goroutines, no
// locks.
package evheap

// Heap holds events E, each at a time (ps in the models). The zero Heap
// is empty and ready.
type Heap[E any] struct {
	items []item[E]
	seq   uint64 // items pushed so far
}

type item[E any] struct {
	t   int64
	seq uint64
	e   E
}

// less orders by time, then by the order of pushing.
func less[E any](a, b *item[E]) bool { return a.t < b.t || (a.t == b.t && a.seq < b.seq) }

// Len is the number of events held.
func (h *Heap[E]) Len() int { return len(h.items) }

// Next is the time of the earliest event; the heap must not be empty.
func (h *Heap[E]) Next() int64 { return h.items[0].t }

// Push adds e at time t.
func (h *Heap[E]) Push(t int64, e E) {
	h.seq++
	x := item[E]{t: t, seq: h.seq, e: e}
	h.items = append(h.items, x)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !less(&x, &h.items[p]) {
			break
		}
		h.items[i] = h.items[p]
		i = p
	}
	h.items[i] = x
}

// Pop removes the earliest event and gives it with its time; the heap
// must not be empty.
func (h *Heap[E]) Pop() (int64, E) {
	top := h.items[0]
	n := len(h.items) - 1
	last := h.items[n]
	h.items = h.items[:n]
	if n == 0 {
		return top.t, top.e
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for k := c + 1; k < c+4 && k < n; k++ {
			if less(&h.items[k], &h.items[m]) {
				m = k
			}
		}
		if !less(&h.items[m], &last) {
			break
		}
		h.items[i] = h.items[m]
		i = m
	}
	h.items[i] = last
	return top.t, top.e
}
