package reactor

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"
)

// fakeSwitchClock is a switch's clock on a fake wall clock: it runs at
// rate times the wall's, an ask of it takes askTime of wall time and reads
// the clock at the ask's end, a sleep advances the wall by exactly its
// length. The wait's over-wait and its asks are measured on it, not on
// the machine's load.
type fakeSwitchClock struct {
	wall    time.Duration
	rate    float64
	askTime time.Duration
	asks    int
}

func (f *fakeSwitchClock) now() time.Time { return time.Unix(0, 0).Add(f.wall) }
func (f *fakeSwitchClock) clock() time.Duration {
	return time.Duration(float64(f.wall) * f.rate)
}
func (f *fakeSwitchClock) ask(context.Context) (time.Duration, error) {
	f.wall += f.askTime
	f.asks++
	return f.clock(), nil
}
func (f *fakeSwitchClock) sleep(_ context.Context, d time.Duration) error {
	f.wall += d
	return nil
}

// WaitClock asks a number of times that grows with the logarithm of the
// wait over an ask's time, at most log2(wait / ask) + 4 (and one a second
// past a second's wait), and returns
// within two asks of the switch's clock passing t, for asks of 50 us to
// 5 ms, waits of 0 to 30 s and switch clocks at half to twice the wall's
// rate. The former waits asked back to back in their last 3 ms: some 60
// asks of 50 us.
func TestWaitClockAsksLogarithmicallyAndSeesTheTime(t *testing.T) {
	for _, askTime := range []time.Duration{50 * time.Microsecond, time.Millisecond, 5 * time.Millisecond} {
		for _, wait := range []time.Duration{0, 500 * time.Microsecond, 3 * time.Millisecond, 20 * time.Millisecond, time.Second, 30 * time.Second} {
			for _, rate := range []float64{0.5, 1, 2} {
				t.Run(fmt.Sprintf("ask%v/wait%v/rate%g", askTime, wait, rate), func(t *testing.T) {
					f := &fakeSwitchClock{wall: time.Hour, rate: rate, askTime: askTime}
					target := f.clock() + wait
					n, err := waitClock(context.Background(), target, f.ask, f.now, f.sleep)
					if err != nil {
						t.Fatal(err)
					}
					if n != f.asks {
						t.Fatalf("reported %d asks, made %d", n, f.asks)
					}
					if f.clock() < target {
						t.Fatalf("returned at %v, before %v", f.clock(), target)
					}
					// The wall time the clock passed t at, and the wait's
					// over-wait past it.
					reached := time.Duration(float64(target) / rate)
					if over := f.wall - reached; over > 2*askTime {
						t.Errorf("returned %v after the clock passed t, more than two asks of %v", over, askTime)
					}
					wallWait := time.Duration(float64(wait) / rate)
					bound := 4 + math.Log2(max(1, float64(min(wallWait, clockGapLongest))/float64(askTime))) + float64(wallWait)/float64(clockGapLongest)
					if float64(n) > bound {
						t.Errorf("asked %d times over %v, want at most %.1f", n, wallWait, bound)
					}
				})
			}
		}
	}
}

// A context that ends stops the wait with its cause.
func TestWaitClockEndsWithItsContext(t *testing.T) {
	f := &fakeSwitchClock{rate: 1, askTime: time.Millisecond}
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := fmt.Errorf("aborted")
	sleep := func(ctx context.Context, d time.Duration) error {
		cancel(cause)
		return sleepCtx(ctx, d)
	}
	if _, err := waitClock(ctx, time.Second, f.ask, f.now, sleep); err != cause {
		t.Fatalf("err %v, want the context's cause", err)
	}
}
