// Package fifo holds the models' queues that are cut at the front by
// re-slicing and grow at the end, reusing their array.
package fifo

// RoomFor gives a queue s whose front is cut by re-slicing (s = s[1:])
// room for one more element at its end: where s is full, its elements
// move back to the start of arr, the array s is the tail of, when that
// leaves at least half of it free, else to a new array twice their
// number (least at the least). Growing by append instead allocates a new array each time the
// queue's end reaches its array's, and a queue emptied from the front
// keeps none of its array (in the Stardust model, a VOQ emptied by its
// credits: a tenth of its CPU in allocation; in the TCP model, the
// acknowledgements and originals in flight).
func RoomFor[T any](s []T, arr *[]T, least int) []T {
	if len(s) < cap(s) {
		return s
	}
	if cap(*arr) == 0 || cap(*arr) < 2*len(s) {
		*arr = make([]T, 0, max(2*len(s), least))
	}
	return (*arr)[:copy((*arr)[:len(s)], s)]
}
