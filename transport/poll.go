package transport

import (
	"context"
	"time"
)

// Poll waits by asking: it calls ask until it reports done, returns an
// error, or ctx ends (ctx's error then, wrapped by nothing, so a caller can
// tell its own deadline from the device's answer). The intervals between
// asks grow from 10 ms to 1 s, so a condition that holds at once costs one
// call and a slow one (a daemon starting, a port training) is not asked
// hundreds of times a second. Give ctx the deadline the wait may take.
func Poll(ctx context.Context, ask func() (done bool, err error)) error {
	return PollEvery(ctx, 10*time.Millisecond, time.Second, ask)
}

// PollEvery is Poll with the first interval and the longest one given:
// each interval doubles the last, up to longest (first == longest asks at
// a steady rate, as an instrument's *OPC? is polled).
func PollEvery(ctx context.Context, first, longest time.Duration, ask func() (done bool, err error)) error {
	wait := first
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	for {
		done, err := ask()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		wait = min(wait*2, longest)
	}
}
