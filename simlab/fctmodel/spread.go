package fctmodel

import (
	"errors"
	"fmt"
	"time"
)

// Quantile is one point of a distribution: the fraction P of outcomes at
// or below Excess.
type Quantile struct {
	P      float64
	Excess time.Duration
}

// Spread is a distribution of a delay's excess over its least, as a
// quantile table from a measurement: points in increasing P from {0, 0}
// to {1, max}; between two points the excess is linear in P (so the tail
// beyond the last measured percentile up to the maximum is uniform).
type Spread []Quantile

// draw is the excess at cumulative probability u in [0, 1).
func (s Spread) draw(u float64) time.Duration {
	for i := 1; i < len(s); i++ {
		if u <= s[i].P {
			a, b := s[i-1], s[i]
			return a.Excess + time.Duration((u-a.P)/(b.P-a.P)*float64(b.Excess-a.Excess))
		}
	}
	return s[len(s)-1].Excess
}

func (s Spread) validate() error {
	if len(s) == 0 {
		return nil
	}
	if len(s) < 2 || s[0] != (Quantile{}) || s[len(s)-1].P != 1 {
		return errors.New("spread: a quantile table from {0, 0} to {1, max}")
	}
	for i := 1; i < len(s); i++ {
		if !(s[i].P > s[i-1].P) || s[i].Excess < s[i-1].Excess {
			return fmt.Errorf("spread: point %d (%g, %v) does not rise from (%g, %v)", i, s[i].P, s[i].Excess, s[i-1].P, s[i-1].Excess)
		}
	}
	return nil
}

// KernelBypassRoundTrip is the spread a round trip between two hosts adds
// when both poll their NICs from user space (no interrupt, no kernel):
// the NICs' processing, the PCIe transactions on each host (doorbell,
// descriptor and payload reads, payload and completion writes; their
// latency varies with the root complex, caches and other traffic:
// Neugebauer et al., "Understanding PCIe performance for end host
// networking", SIGCOMM 2018, §6) and the polling loops. The points are a
// measured ping-pong between two hosts with Mellanox NICs and kernel
// bypass (sockperf over VMA, 5,303,071 round trips; the example output in
// github.com/Mellanox/sockperf pull request 73): half round trips of
// 1.743 us at least, 1.796 at p25, 1.861 at p50, 1.931 at p90, 2.236 at
// p99, 4.138 at p99.9, 4.565 at p99.99, 7.946 at p99.999 and 42.328 at
// most; here the whole round trip's excess over the least, twice theirs.
// ib_write_lat's ping-pong is the same path (a post, the NIC's DMA, the
// wire, the peer NIC's DMA, a polled buffer, and back).
var KernelBypassRoundTrip = Spread{
	{0, 0},
	{0.25, 106 * time.Nanosecond},
	{0.50, 236 * time.Nanosecond},
	{0.90, 376 * time.Nanosecond},
	{0.99, 986 * time.Nanosecond},
	{0.999, 4790 * time.Nanosecond},
	{0.9999, 5644 * time.Nanosecond},
	{0.99999, 12406 * time.Nanosecond},
	{1, 81170 * time.Nanosecond},
}
