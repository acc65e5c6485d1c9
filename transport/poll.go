package transport

import (
	"context"
	"time"
)

// pollFraction bounds the gap between two asks by the time already
// waited: a gap is at most 1/pollFraction of it (past the shortest gap),
// so a condition met just after an ask is seen at most that fraction of
// the wait, plus an ask or two, later than it became true; the number of
// asks grows with the logarithm of the wait, not with the wait.
const pollFraction = 8

// Poll's shortest and longest gaps: a device answering in microseconds
// (an emulator on the loopback) is asked at most a thousand times a
// second, and only in the first 8 ms of a wait; a wait of many seconds
// (a port training) is still seen within a second.
const (
	pollShortest = time.Millisecond
	pollLongest  = time.Second
)

// Poll waits by asking: it calls ask until it reports done, returns an
// error, or ctx ends (ctx's error then, wrapped by nothing, so a caller can
// tell its own deadline from the device's answer). The gap between asks
// follows what the device's answers have shown (PollEvery's rule, with a
// shortest gap of 1 ms or the ask's own time, and a longest of 1 s): a condition
// that holds at once costs one call, one met late is seen within an
// eighth of the time waited (and an ask or two), and a slow one (a daemon
// starting, a port training) is not asked hundreds of times a second.
// Give ctx the deadline the wait may take.
func Poll(ctx context.Context, ask func() (done bool, err error)) error {
	return PollEvery(ctx, pollShortest, pollLongest, ask)
}

// PollEvery is Poll with the shortest and the longest gap between asks
// given. The gap after an ask is, in this order:
//
//   - an eighth of the time waited since the first ask began, at most
//     longest;
//   - at most half of what is left of ctx's deadline, so the last asks
//     before it are not slept through;
//   - at least first, and at least the time an ask takes as measured
//     (the mean of the last asks, halved weights): a device is never
//     kept busier than half the time by the asks, and a slow device is
//     not asked faster than it answers, whatever first and longest say.
//
// first == longest asks at a steady rate, as an instrument's *OPC? may be
// polled at the pace its manual gives.
func PollEvery(ctx context.Context, first, longest time.Duration, ask func() (done bool, err error)) error {
	return pollWith(ctx, wallClock{}, first, longest, ask)
}

// pollClock is the clock a poll measures asks and waits by: the wall
// clock in use, a fake one in tests (which measure a wait's over-wait on
// it, not on the machine's load).
type pollClock interface {
	Now() time.Time
	// Sleep waits d or until ctx ends, whose error it then returns.
	Sleep(ctx context.Context, d time.Duration) error
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func pollWith(ctx context.Context, clk pollClock, first, longest time.Duration, ask func() (bool, error)) error {
	start := clk.Now()
	var took time.Duration // the measured time of an ask, smoothed
	for n := 0; ; n++ {
		t0 := clk.Now()
		done, err := ask()
		d := clk.Now().Sub(t0)
		if n == 0 {
			took = d
		} else {
			took = (took + d) / 2
		}
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		now := clk.Now()
		left := time.Duration(-1)
		if dl, ok := ctx.Deadline(); ok {
			left = dl.Sub(now)
		}
		if err := clk.Sleep(ctx, pollGap(now.Sub(start), took, left, first, longest)); err != nil {
			return err
		}
	}
}

// pollGap is PollEvery's rule: the gap after an ask when waited has passed
// since the first ask began, an ask takes took, and left is what is left
// of the deadline (negative: none).
func pollGap(waited, took, left, first, longest time.Duration) time.Duration {
	g := min(waited/pollFraction, longest)
	if left >= 0 {
		g = min(g, left/2)
	}
	return max(g, first, took)
}
