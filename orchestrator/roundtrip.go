package orchestrator

import (
	"context"
	"errors"
	"sync"
	"time"
)

// RoundTrip keeps the longest round trip measured to one device during a
// run. A wall deadline around a call to the device is derived from it
// rather than fixed: a loaded control host, whose round trips are long
// too, gives its calls longer, and a call that passes its deadline is
// tried again with twice as long. The zero value (or nil) has measured
// nothing and gives the floor.
type RoundTrip struct {
	mu    sync.Mutex
	worst time.Duration
}

const (
	// roundTripFactor is how many measured round trips one call may take:
	// a call is one round trip plus the device's own work, which the
	// measured calls (a clock read, a start) include too.
	roundTripFactor = 50
	// roundTripFloor is the shortest deadline, whatever was measured.
	roundTripFloor = time.Second
	// cleanupTries bounds Cleanup: 1 + 2 + 4 + 8 deadlines, 15 s at the
	// floor.
	cleanupTries = 4
)

// Observe records one measured round trip.
func (r *RoundTrip) Observe(d time.Duration) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.worst = max(r.worst, d)
	r.mu.Unlock()
}

// Measure runs f, a call to the device, and records how long it took.
func (r *RoundTrip) Measure(f func() error) error {
	t := time.Now()
	err := f()
	r.Observe(time.Since(t))
	return err
}

// Deadline is how long one call to the device may take: roundTripFactor
// times the longest round trip measured, at least roundTripFloor.
func (r *RoundTrip) Deadline() time.Duration {
	if r == nil {
		return roundTripFloor
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(roundTripFloor, roundTripFactor*r.worst)
}

// Cleanup runs op, a call that puts the device back after an error or an
// abort (a generator's stop, a lease's release), on a context that outlives
// ctx's cancellation. Each try has Deadline(), doubled from one try to the
// next; a try that ends because its deadline passed (a stalled or dropped
// reply, a device slower than measured) is made again, cleanupTries at
// most. op must be idempotent. It returns op's last error.
func (r *RoundTrip) Cleanup(ctx context.Context, op func(ctx context.Context) error) error {
	base := context.WithoutCancel(ctx)
	d := r.Deadline()
	var err error
	for try := 0; try < cleanupTries; try++ {
		tctx, cancel := context.WithTimeout(base, d)
		err = op(tctx)
		passed := tctx.Err() != nil
		cancel()
		if err == nil || !passed && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		d *= 2
	}
	return err
}
