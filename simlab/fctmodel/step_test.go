package fctmodel

import (
	"math"
	"slices"
	"testing"
	"time"

	"testbed/simlab/lgmodel"
)

// Without corruption the skip-ahead must give exactly what stepping does,
// trial by trial (times, FCTs, counters).
func TestSkipAheadIsExactWithoutCorruption(t *testing.T) {
	for _, c := range []Config{
		config(t, TCP, lgmodel.Off, 0, 143),
		config(t, TCP, lgmodel.Ordered, 0, 24387),
		config(t, TCP, lgmodel.NonBlocking, 0, 100_000),
		config(t, RDMA, lgmodel.NonBlocking, 0, 24387),
	} {
		fast := run(t, c, 3000, 1)
		c.Step = true
		step := run(t, c, 3000, 1)
		if !slices.Equal(fast, step) {
			for i := range fast {
				if fast[i] != step[i] {
					t.Fatalf("%s %d B: trial %d: skipping %+v, stepping %+v", c.Transport, c.RequestBytes, i, fast[i], step[i])
				}
			}
		}
	}
}

// With corruption the two draw differently, so they must agree in
// distribution: how many trials are slowed, by how much on average, what
// the transports did.
func TestSkipAheadMatchesStepping(t *testing.T) {
	for _, tc := range []struct {
		tr   Transport
		mode lgmodel.Mode
		loss float64
		size int
		n    int
	}{
		{TCP, lgmodel.Off, 1e-2, 143, 40_000},
		{TCP, lgmodel.NonBlocking, 3e-3, 24387, 15_000},
		{TCP, lgmodel.Ordered, 3e-3, 24387, 15_000},
		{RDMA, lgmodel.NonBlocking, 3e-3, 24387, 20_000},
	} {
		c := config(t, tc.tr, tc.mode, tc.loss, tc.size)
		n := trials(tc.n)
		base := run(t, config(t, tc.tr, tc.mode, 0, tc.size), 3, 1)[2].FCT
		fast := profile(run(t, c, n, 11), base)
		c.Step = true
		step := profile(run(t, c, n, 12), base)
		t.Logf("%s %s %g %d B: skipping %+v", tc.tr, tc.mode, tc.loss, tc.size, fast)
		t.Logf("%s %s %g %d B: stepping %+v", tc.tr, tc.mode, tc.loss, tc.size, step)
		name := func(s string) string { return tc.tr.String() + " " + tc.mode.String() + " " + s }
		if !sameRate(fast.slowed, step.slowed, n) {
			t.Errorf("%s: %d vs %d trials slowed of %d", name("slowed"), fast.slowed, step.slowed, n)
		}
		// The mean extra time of a slowed trial, within 5 standard errors.
		se := math.Sqrt(fast.extraVar/float64(max(fast.slowed, 1)) + step.extraVar/float64(max(step.slowed, 1)))
		if d := math.Abs(float64(fast.extraMean - step.extraMean)); d > 5*se+float64(time.Microsecond) {
			t.Errorf("%s: mean extra %v vs %v (se %v)", name("extra"), fast.extraMean, step.extraMean, time.Duration(se))
		}
		for _, p := range [][2]int{{fast.retxTrials, step.retxTrials}, {fast.reordTrials, step.reordTrials}, {fast.spurTrials, step.spurTrials}} {
			if !sameRate(p[0], p[1], n) {
				t.Errorf("%s: trials with retransmissions, reordering, duplicates: %+v vs %+v", name("counters"), fast, step)
				break
			}
		}
	}
}

type prof struct {
	slowed                              int
	extraMean                           time.Duration
	extraVar                            float64
	retxTrials, reordTrials, spurTrials int
}

func profile(ts []Trial, base time.Duration) prof {
	var p prof
	var sum, sq float64
	for _, x := range ts {
		if x.FCT > base {
			p.slowed++
			d := float64(x.FCT - base)
			sum += d
			sq += d * d
		}
		if x.Retransmits > 0 {
			p.retxTrials++
		}
		if x.Reordered > 0 {
			p.reordTrials++
		}
		if x.Spurious > 0 {
			p.spurTrials++
		}
	}
	if p.slowed > 0 {
		m := sum / float64(p.slowed)
		p.extraMean = time.Duration(m)
		p.extraVar = sq/float64(p.slowed) - m*m
	}
	return p
}

// sameRate: two counts out of n each are consistent with one rate (two
// proportions, 4.5 standard errors).
func sameRate(a, b, n int) bool {
	p := float64(a+b) / float64(2*n)
	se := math.Sqrt(p * (1 - p) * 2 / float64(n))
	return math.Abs(float64(a-b))/float64(n) <= 4.5*se+1.5/float64(n)
}

func TestSameSeedSameTrials(t *testing.T) {
	c := config(t, TCP, lgmodel.NonBlocking, 3e-3, 24387)
	a, b := run(t, c, 5000, 3), run(t, c, 5000, 3)
	if !slices.Equal(a, b) {
		t.Fatal("two runs with one seed differ")
	}
	if d := run(t, c, 5000, 4); slices.Equal(a, d) {
		t.Fatal("two seeds gave the same trials")
	}
}

// The states kept are bounded: a run that meets more starts over.
func TestKeptStatesAreBounded(t *testing.T) {
	c := config(t, TCP, lgmodel.Off, 1e-2, 143)
	m, err := New(c, newRand(13))
	if err != nil {
		t.Fatal(err)
	}
	m.cacheCap = 20
	ts := m.Run(trials(20_000))
	if len(m.cache) > 20 {
		t.Fatalf("%d states kept, cap 20", len(m.cache))
	}
	fast := profile(ts, run(t, config(t, TCP, lgmodel.Off, 0, 143), 3, 1)[2].FCT)
	if !within(fast.slowed, len(ts), 1e-2, 4.5) {
		t.Fatalf("%d of %d trials slowed, want about %v", fast.slowed, len(ts), 1e-2*float64(len(ts)))
	}
}
