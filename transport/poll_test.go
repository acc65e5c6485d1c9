package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a poll's clock in a test: it moves only when an ask takes
// its time or a gap is slept, so a wait's over-wait is measured on it and
// not on the machine's load. Sleeping across ctx's deadline ends at the
// deadline with context.DeadlineExceeded, as the wall clock's timer would.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !c.now.Add(d).Before(dl) {
		c.now = dl
		return context.DeadlineExceeded
	}
	c.now = c.now.Add(d)
	return nil
}

// fakeDevice is a device whose condition becomes true at trueAt after the
// wait began; an ask takes askTime on the fake clock, and the device reads
// the condition halfway through it (when it answers). It records when each
// ask began.
type fakeDevice struct {
	clk     *fakeClock
	start   time.Time
	askTime time.Duration
	trueAt  time.Duration
	asks    []time.Duration
}

func (d *fakeDevice) ask() (bool, error) {
	began := d.clk.now.Sub(d.start)
	d.asks = append(d.asks, began)
	d.clk.now = d.clk.now.Add(d.askTime)
	return began+d.askTime/2 >= d.trueAt, nil
}

// wait polls dev as Poll does, on dev's fake clock, and returns the
// over-wait: from the condition becoming true to the poll returning.
func (d *fakeDevice) wait(ctx context.Context) (time.Duration, error) {
	err := pollWith(ctx, d.clk, pollShortest, pollLongest, d.ask)
	return d.clk.now.Sub(d.start) - d.trueAt, err
}

func newFakeDevice(askTime, trueAt time.Duration) *fakeDevice {
	clk := &fakeClock{now: time.Now()}
	return &fakeDevice{clk: clk, start: clk.now, askTime: askTime, trueAt: trueAt}
}

// The over-wait of a poll (from the condition becoming true to Poll
// returning) is at most two asks (the one in flight when it became true,
// and the one that sees it) and a gap of an ask's time (1 ms at least) or
// an eighth of the time waited, whichever is longer: never the
// nearly 1 s a doubling interval capped at 1 s lets a condition met just
// after an ask wait. Measured on a fake clock for asks from a loopback
// round trip's 50 us to a slow device's 300 ms, and conditions becoming
// true from at once to 30 s in.
func TestPollOverWaitIsAFractionOfTheWaitPlusTwoAsks(t *testing.T) {
	for _, askTime := range []time.Duration{50 * time.Microsecond, time.Millisecond, 20 * time.Millisecond, 300 * time.Millisecond} {
		worst := 0.0
		for i := 0; i <= 400; i++ {
			// log-spaced, from 0 to 30 s, off any multiple of the ask.
			trueAt := 0 * time.Second
			if i > 0 {
				trueAt = time.Duration(float64(30*time.Second) * math.Pow(10, -5+5*float64(i)/400))
			}
			dev := newFakeDevice(askTime, trueAt)
			over, err := dev.wait(context.Background())
			if err != nil {
				t.Fatalf("ask %v, true at %v: %v", askTime, trueAt, err)
			}
			bound := 2*askTime + max(askTime, pollShortest, (trueAt+askTime)/8)
			if over > bound {
				t.Fatalf("ask %v, true at %v: seen %v after it became true, want at most 2 asks and a gap of an ask or 1/8 of the wait = %v (asks began at %v)",
					askTime, trueAt, over, bound, dev.asks[max(0, len(dev.asks)-4):])
			}
			worst = max(worst, float64(over)/float64(bound))
		}
		t.Logf("ask %v: worst over-wait %.3f of its bound", askTime, worst)
	}
}

// A slow condition is not asked hundreds of times a second: in every
// window [w, 2w) of a wait, whatever the ask's time, it is asked at most
// 8 times once w is 8 ms or more, and never sooner than an ask's time
// (or 1 ms) after the last one ended (the device is not kept busier than
// half the time by the asks).
func TestPollAsksASlowConditionRarely(t *testing.T) {
	for _, askTime := range []time.Duration{10 * time.Microsecond, time.Millisecond, 300 * time.Millisecond} {
		dev := newFakeDevice(askTime, time.Hour)
		ctx, cancel := context.WithDeadline(context.Background(), dev.start.Add(30*time.Second))
		_, err := dev.wait(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("ask %v: a condition never met ended %v, want the deadline", askTime, err)
		}
		for i := 1; i < len(dev.asks); i++ {
			if gap := dev.asks[i] - dev.asks[i-1] - askTime; gap < max(askTime, pollShortest) {
				t.Fatalf("ask %v: asks at %v and %v, a gap of %v, under the ask's time", askTime, dev.asks[i-1], dev.asks[i], gap)
			}
		}
		for w := 8 * time.Millisecond; w < 5*time.Second; w *= 2 {
			n := 0
			for _, a := range dev.asks {
				if a >= w && a < 2*w {
					n++
				}
			}
			if n > 8 {
				t.Fatalf("ask %v: %d asks between %v and %v into the wait, want at most 8", askTime, n, w, 2*w)
			}
		}
		t.Logf("ask %v: %d asks in 30 s", askTime, len(dev.asks))
	}
}

// A condition met shortly before the deadline is still seen: the gaps
// shrink to half of what is left, so a wait is not slept through its
// last second.
func TestPollAsksBeforeTheDeadline(t *testing.T) {
	askTime := time.Millisecond
	for _, before := range []time.Duration{900 * time.Millisecond, 300 * time.Millisecond, 40 * time.Millisecond, 8 * time.Millisecond} {
		dev := newFakeDevice(askTime, 10*time.Second-before)
		ctx, cancel := context.WithDeadline(context.Background(), dev.start.Add(10*time.Second))
		_, err := dev.wait(ctx)
		cancel()
		if err != nil {
			t.Fatalf("condition true %v before the deadline: %v (asks began at %v)", before, err, dev.asks[max(0, len(dev.asks)-4):])
		}
	}
}

// pollServer answers "q" on 127.0.0.1 with "1" once the condition it
// holds is true and "0" before.
func pollServer(t testing.TB) (addr string, cond *atomic.Bool) {
	cond = new(atomic.Bool)
	addr = lineListener(t, func(c net.Conn) {
		r := bufio.NewScanner(c)
		for r.Scan() {
			v := "0"
			if cond.Load() {
				v = "1"
			}
			fmt.Fprintln(c, v)
		}
	})
	return addr, cond
}

// BenchmarkPollOverWait polls a condition over TCP on 127.0.0.1 that
// becomes true 1 to 100 ms into the wait and reports the over-wait (from
// the condition becoming true to Poll returning) in measured asks
// (over-wait/ask) and as a share of the wait (over-wait/wait).
func BenchmarkPollOverWait(b *testing.B) {
	addr, cond := pollServer(b)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	ctx := context.Background()
	var over, waited, askSum time.Duration
	asks := 0
	for i := 0; i < b.N; i++ {
		cond.Store(false)
		after := time.Duration(1+(i*37)%100) * time.Millisecond
		var became time.Time
		var once sync.Once
		start := time.Now()
		timer := time.AfterFunc(after, func() { once.Do(func() { became = time.Now(); cond.Store(true) }) })
		err := Poll(ctx, func() (bool, error) {
			t0 := time.Now()
			fmt.Fprintln(c, "q")
			s, err := r.ReadString('\n')
			askSum += time.Since(t0)
			asks++
			return strings.TrimSpace(s) == "1", err
		})
		end := time.Now()
		timer.Stop()
		if err != nil {
			b.Fatal(err)
		}
		over += end.Sub(became)
		waited += became.Sub(start)
	}
	ask := askSum / time.Duration(asks)
	b.ReportMetric(float64(over)/float64(b.N)/float64(ask), "over-wait/ask")
	b.ReportMetric(float64(over)/float64(waited), "over-wait/wait")
	b.ReportMetric(float64(asks)/float64(b.N), "asks/op")
}
