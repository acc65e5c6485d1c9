package fctmodel

import (
	"math"
	"slices"
	"testing"
	"time"

	"testbed/simlab/lgmodel"
)

// A lossless RDMA ping-pong with the hosts' spread: each trial is the
// path's least plus one draw, so the trials' percentiles over the least
// are the table's (within the sampling error of 200,000 trials), and the
// lossless p99.9 lies well above its p50.
func TestRDMASpreadIsTheHostsRoundTrip(t *testing.T) {
	c := config(t, RDMA, lgmodel.Off, 0, 143)
	c.ResponseBytes = 143
	least := run(t, c, 5, 1)[4].FCT
	c.Host.RoundTrip = KernelBypassRoundTrip
	const n = 200_000
	f := make([]time.Duration, 0, n)
	for _, tr := range run(t, c, n, 7) {
		f = append(f, tr.FCT-least)
	}
	slices.Sort(f)
	for _, p := range []float64{0.5, 0.9, 0.99, 0.999} {
		got := f[int(p*n)]
		want := KernelBypassRoundTrip.draw(p)
		// Sampling error: 4 standard deviations of the empirical
		// quantile's p, through the table's slope there; plus a dummy's
		// phase on the idle line (7 ns).
		dp := 4 * math.Sqrt(p*(1-p)/n)
		tol := KernelBypassRoundTrip.draw(p+dp) - KernelBypassRoundTrip.draw(p-dp) + 10*time.Nanosecond
		if d := got - want; d < -tol || d > tol {
			t.Errorf("p%g: %v over the least, want %v (+-%v)", 100*p, got, want, tol)
		}
	}
	if f[0] < -10*time.Nanosecond {
		t.Errorf("a trial %v faster than the least path", f[0])
	}
	if p50, p999 := f[n/2], f[n*999/1000]; p999 < p50+time.Microsecond {
		t.Errorf("lossless p99.9 %v not above p50 %v", p999, p50)
	}
}

func TestSpreadValidates(t *testing.T) {
	for name, s := range map[string]Spread{
		"one point":    {{0, 0}},
		"no zero":      {{0.5, 0}, {1, 1}},
		"no one":       {{0, 0}, {0.5, 1}},
		"falls":        {{0, 0}, {0.5, 10}, {1, 5}},
		"p not rising": {{0, 0}, {0.5, 1}, {0.5, 2}, {1, 3}},
	} {
		if s.validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := KernelBypassRoundTrip.validate(); err != nil {
		t.Error(err)
	}
	c := config(t, RDMA, lgmodel.Off, 0, 143)
	c.Host.RoundTrip = Spread{{0, 0}, {1, -1}}
	if err := c.validate(); err == nil {
		t.Error("a falling spread: config accepted")
	}
}
