package monitor

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"testbed/experiments/stats"
)

// poisson draws a Poisson count of mean m: a binomial with many frames and
// a small rate, as a port's FCS counter sees it.
func poisson(r *rand.Rand, m float64) uint64 {
	if m <= 0 {
		return 0
	}
	if m > 50 {
		return uint64(math.Max(0, math.Round(m+math.Sqrt(m)*r.NormFloat64())))
	}
	l, k, p := math.Exp(-m), uint64(0), 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// link feeds an estimator polls of perPoll frames at a loss rate.
type link struct {
	e   *Estimator
	rd  Reading
	rng *rand.Rand
}

func newLink(t *testing.T, cfg Config, seed uint64) *link {
	t.Helper()
	e, err := NewEstimator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := &link{e: e, rng: rand.New(rand.NewPCG(seed, 21)), rd: Reading{
		At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Tx: 1 << 40, RxOK: 1 << 40, RxFCS: 77, HasFCS: true,
	}}
	e.Observe(l.rd)
	return l
}

func (l *link) poll(frames uint64, rate float64) Status {
	bad := poisson(l.rng, float64(frames)*rate)
	if bad > frames {
		bad = frames
	}
	l.rd.At = l.rd.At.Add(time.Second)
	l.rd.Tx += frames
	l.rd.RxOK += frames - bad
	l.rd.RxFCS += bad
	return l.e.Observe(l.rd)
}

func TestIdleLinkStaysUnknownAndSaysSo(t *testing.T) {
	l := newLink(t, DefaultConfig(), 1)
	for i := 0; i < 3600; i++ {
		// A trickle of frames (LLDP, a few a second), some corrupted.
		fr := uint64(i % 3)
		st := l.poll(fr, 0.3)
		if st.State != Unknown {
			t.Fatalf("poll %d: idle link is %s (%s), want unknown", i, st.State, st.Reason)
		}
		if i > 0 && st.Changed {
			t.Fatalf("poll %d: idle link changed state", i)
		}
	}
	if st := l.e.Status(); st.Reason == "" || st.Frames >= l.e.Config().MinFrames {
		t.Fatalf("unknown without saying why: %+v", st)
	}
}

// framesToDetect is the smallest frame count at which a link losing at
// exactly rate has a Wilson lower bound above the threshold: the statistics
// cannot detect it sooner.
func framesToDetect(rate, thr, z float64) uint64 {
	for n := uint64(1000); ; n = n * 21 / 20 {
		k := int64(math.Round(rate * float64(n)))
		if lo, _ := stats.Wilson(k, int64(n), z); lo > thr {
			return n
		}
	}
}

func TestDetectionWithinWhatTheStatisticsAllow(t *testing.T) {
	cfg := DefaultConfig()
	for _, rate := range []float64{1e-5, 1e-4, 1e-3} {
		need := framesToDetect(rate, cfg.Threshold, stats.Z95)
		const perPoll = 100_000
		for seed := uint64(1); seed <= 20; seed++ {
			l := newLink(t, cfg, seed)
			var sent uint64
			for l.e.Status().State != Corrupting {
				// A link below its minimum is never judged, however
				// lossy: the window must hold MinFrames.
				if sent > 2*max(need, l.e.Config().MinFrames)+perPoll {
					t.Fatalf("rate %g seed %d: not detected after %d frames (statistics allow %d)", rate, seed, sent, need)
				}
				l.poll(perPoll, rate)
				sent += perPoll
			}
			st := l.e.Status()
			if !(st.Low > cfg.Threshold && st.Low <= st.Rate && st.Rate <= st.High) {
				t.Fatalf("rate %g: corrupting with evidence %+v", rate, st)
			}
		}
	}
}

func TestNoFalseAlarmOverManyCleanWindows(t *testing.T) {
	cfg := DefaultConfig()
	for seed := uint64(1); seed <= 5; seed++ {
		l := newLink(t, cfg, seed)
		clean := 0
		// 2000 polls of 1M frames: 200 full windows at a tenth of the
		// threshold.
		for i := 0; i < 2000; i++ {
			st := l.poll(1_000_000, cfg.Threshold/10)
			if st.State == Corrupting {
				t.Fatalf("seed %d poll %d: false alarm %+v", seed, i, st)
			}
			if st.State == Clean {
				clean++
			}
		}
		if clean < 1500 {
			t.Fatalf("seed %d: only %d of 2000 polls judged clean", seed, clean)
		}
	}
}

func TestHysteresisAndQuietPeriod(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Window = 4_000_000
	cfg.Quiet = 30 * time.Second
	l := newLink(t, cfg, 3)
	for l.e.Status().State != Corrupting {
		l.poll(1_000_000, 1e-4)
	}
	// Healed: the window rolls over, then the quiet period must pass.
	healedAt := l.rd.At
	var cleanAt time.Time
	for i := 0; i < 200 && cleanAt.IsZero(); i++ {
		if st := l.poll(1_000_000, 0); st.State == Clean {
			cleanAt = st.At
		}
	}
	if cleanAt.IsZero() {
		t.Fatal("never cleared")
	}
	if d := cleanAt.Sub(healedAt); d < cfg.Quiet {
		t.Fatalf("cleared %s after healing, before the %s quiet period", d, cfg.Quiet)
	}
	if d := cleanAt.Sub(healedAt); d > cfg.Quiet+10*time.Second {
		t.Fatalf("cleared only %s after healing", d)
	}
	// A corrupting link that goes idle holds its alarm.
	for l.e.Status().State != Corrupting {
		l.poll(1_000_000, 1e-3)
	}
	for i := 0; i < 100; i++ {
		if st := l.poll(0, 0); st.State != Corrupting || st.Changed {
			t.Fatalf("idle corrupting link went %s", st.State)
		}
	}
}

func TestCounterWrapsAndResets(t *testing.T) {
	c := Counter{Bits: 32}
	if d, ok := c.Delta(1<<32-10, 5); !ok || d != 15 {
		t.Fatalf("wrap: %d %v", d, ok)
	}
	if _, ok := c.Delta(1000, 3); ok {
		t.Fatal("a 32-bit counter that fell from 1000 to 3 was reset, not wrapped")
	}
	if _, ok := (Counter{}).Delta(1<<63, 3); ok {
		t.Fatal("a 64-bit counter going back is a reset")
	}

	cfg := DefaultConfig()
	cfg.CounterBits = 32
	l := newLink(t, cfg, 4)
	l.rd.Tx, l.rd.RxOK, l.rd.RxFCS = 1<<32-100, 1<<32-100, 1<<32-1
	base := l.rd
	l.e.prev = &base
	l.rd.Tx += 500_000 // crosses the wrap
	st := l.poll(1_000_000, 0)
	if st.Resets != 0 || st.Frames != 1_000_000 || st.Losses != 0 {
		t.Fatalf("across a wrap: %+v", st)
	}
	// The receiving switch reboots: its counters restart from zero.
	l.rd.RxOK, l.rd.RxFCS = 10, 0
	st = l.poll(1_000_000, 0)
	if st.Resets != 1 || st.Frames != 1_000_000 || st.Losses != 0 {
		t.Fatalf("across a reset the interval must be dropped: %+v", st)
	}
}

func TestSenderSideLossWithoutFCS(t *testing.T) {
	cfg := DefaultConfig()
	e, err := NewEstimator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(0, 0)
	e.Observe(Reading{At: t0, Tx: 100, RxOK: 90})
	// Sender read before receiver: the receiver counted more than the
	// sender's difference shows; not a negative loss.
	st := e.Observe(Reading{At: t0.Add(time.Second), Tx: 5_000_100, RxOK: 5_000_095})
	if st.Frames != 5_000_000 || st.Losses != 0 {
		t.Fatalf("skewed read: %+v", st)
	}
	st = e.Observe(Reading{At: t0.Add(2 * time.Second), Tx: 10_000_100, RxOK: 9_990_095})
	if st.Losses != 10_000 || st.State != Corrupting {
		t.Fatalf("sender-side loss: %+v", st)
	}
}

func TestConfigRejectsNonsense(t *testing.T) {
	for _, c := range []Config{
		{Threshold: 0},
		{Threshold: 1e-6, ClearBelow: 1e-5},
		{Threshold: 1e-6, Window: 10},
		{Threshold: 1e-6, Quiet: -time.Second},
	} {
		if _, err := NewEstimator(c); err == nil {
			t.Fatalf("%+v accepted", c)
		}
	}
}
