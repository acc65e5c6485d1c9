package hostagent

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stepClock is a clock that moves only when told to.
type stepClock struct{ ns atomic.Int64 }

func (c *stepClock) now() time.Duration { return time.Duration(c.ns.Load()) }

// advancingConn moves the clock by a random amount on each request write,
// as a simulated network does with a trial's modelled time, and remembers
// the amounts.
type advancingConn struct {
	net.Conn
	clock *stepClock
	rng   *rand.Rand
	mu    *sync.Mutex
	steps *[]time.Duration
}

func (c *advancingConn) Write(p []byte) (int, error) {
	d := time.Duration(1000 + c.rng.IntN(5_000_000))
	c.mu.Lock()
	*c.steps = append(*c.steps, d)
	c.mu.Unlock()
	c.clock.ns.Add(int64(d))
	return c.Conn.Write(p)
}

func advancingDial(clock *stepClock, seed uint64, steps *[]time.Duration) DialFunc {
	var mu sync.Mutex
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &advancingConn{Conn: c, clock: clock, rng: rand.New(rand.NewPCG(seed, 1)), mu: &mu, steps: steps}, nil
	}
}

// With a clock of its own, a trial's FCT is what that clock moved between
// the request's write and the response's last byte: here exactly the
// connection's step, whatever the real round trip took.
func TestFCTTimedOnGivenClock(t *testing.T) {
	srv := startServer(t)
	clock := &stepClock{}
	clock.ns.Store(int64(7 * time.Second)) // any origin
	var steps []time.Duration
	const warmup, trials = 5, 200
	res, err := RunFCTClock(context.Background(), FCTRunRequest{Target: srv.Addr().String(), Trials: trials, Warmup: warmup},
		advancingDial(clock, 3, &steps), clock.now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != warmup+trials {
		t.Fatalf("%d request writes, want %d", len(steps), warmup+trials)
	}
	var start time.Duration
	for i, s := range res.Samples {
		want := steps[warmup+i]
		if time.Duration(s.FCTNS) != want || time.Duration(s.StartNS) != start {
			t.Fatalf("trial %d: fct %v start %v, want fct %v start %v", i, time.Duration(s.FCTNS), time.Duration(s.StartNS), want, start)
		}
		start += want
	}
	fcts := make([]int64, trials)
	for i, d := range steps[warmup:] {
		fcts[i] = int64(d)
	}
	if got, want := res.Summary.Distribution, Distribute(fcts); got != want {
		t.Errorf("summary %+v, want %+v", got, want)
	}
}

// The real clock stays the default: FCTs are the real round trips, far
// from the fake steps the connection applies to a clock nobody reads.
func TestFCTDefaultClockIsReal(t *testing.T) {
	srv := startServer(t)
	clock := &stepClock{}
	var steps []time.Duration
	t0 := time.Now()
	res, err := RunFCT(context.Background(), FCTRunRequest{Target: srv.Addr().String(), Trials: 50}, advancingDial(clock, 4, &steps), nil)
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(t0)
	var sum time.Duration
	for _, s := range res.Samples {
		sum += time.Duration(s.FCTNS)
	}
	if sum > wall || sum >= clock.now() {
		t.Errorf("FCTs sum to %v in %v of wall time (the fake clock moved %v)", sum, wall, clock.now())
	}
}

// Open loop waits on real timers, so another clock refuses it, in RunFCTClock
// and through the API (not available, before anything starts).
func TestOpenLoopRefusedOnGivenClock(t *testing.T) {
	srv := startServer(t)
	clock := &stepClock{}
	req := FCTRunRequest{Target: srv.Addr().String(), Trials: 10, Mode: ModeOpen, RatePerSec: 1000}
	if _, err := RunFCTClock(context.Background(), req, nil, clock.now, nil); !errors.Is(err, ErrOpenLoopClock) {
		t.Errorf("RunFCTClock open loop: %v", err)
	}
	ctx := testCtx(t)
	c, _ := startAgent(t, Options{Clock: clock.now})
	_, err := c.RunFCT(ctx, req)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Kind != KindNotAvailable || !errors.Is(err, ErrNotAvailable) {
		t.Fatalf("open loop over the API: %v", err)
	}
	var steps []time.Duration
	c2, _ := startAgent(t, Options{Clock: clock.now, Dial: advancingDial(clock, 5, &steps)})
	st, err := c2.RunFCT(ctx, FCTRunRequest{Target: srv.Addr().String(), Trials: 20})
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateDone || st.Summary == nil {
		t.Fatalf("closed loop on the given clock: %+v", st)
	}
	var maxStep time.Duration
	for _, d := range steps {
		maxStep = max(maxStep, d)
	}
	if time.Duration(st.Summary.MaxNS) != maxStep {
		t.Errorf("max FCT %v, the largest clock step %v", time.Duration(st.Summary.MaxNS), maxStep)
	}
}
