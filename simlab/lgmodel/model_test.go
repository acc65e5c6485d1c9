package lgmodel

import (
	"math"
	"math/rand/v2"
	lg "testbed/p4/linkguardian"
	"testing"
	"time"
)

func run(t testing.TB, mode Mode, bps, loss float64, frames int64, seed uint64, step bool) Result {
	t.Helper()
	c, err := Defaults(mode, bps, loss, frames)
	if err != nil {
		t.Fatal(err)
	}
	c.Step = step
	r, err := Run(c, rand.New(rand.NewPCG(seed, 7)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Delivered+r.Lost != frames || r.FramesSent != frames {
		t.Fatalf("%s: accounting: sent %d delivered %d lost %d of %d", mode, r.FramesSent, r.Delivered, r.Lost, frames)
	}
	return r
}

func TestNoLossIsLineRate(t *testing.T) {
	for _, m := range []Mode{Off, Ordered, NonBlocking} {
		r := run(t, m, 100e9, 0, 1_000_000, 1, false)
		// Only the 3-byte header costs speed: 1538/1541 of line rate.
		want := 100e9
		if m != Off {
			want = 100e9 * 1541 / 1541 // delivered frames are counted with the header on the wire
		}
		if r.Lost != 0 || math.Abs(r.EffectiveBps/want-1) > 0.002 {
			t.Fatalf("%s: %+v", m, r)
		}
	}
}

// Protection turns an actual loss p into about p^(N+1) (Eq. 1): with a
// high loss and one copy, the effective loss is measurable in a short run.
func TestEffectiveLossIsActualToTheCopiesPlusOne(t *testing.T) {
	for _, m := range []Mode{Ordered, NonBlocking} {
		c, _ := Defaults(m, 25e9, 2e-2, 400_000)
		c.Copies = 1
		r, err := Run(c, rand.New(rand.NewPCG(3, 3)))
		if err != nil {
			t.Fatal(err)
		}
		want := 2e-2 * 2e-2 // p^(N+1)
		if r.EffectiveLoss < want/2 || r.EffectiveLoss > want*2 {
			t.Errorf("%s: effective loss %.2e, want about %.2e (%+v)", m, r.EffectiveLoss, want, r)
		}
		off := run(t, Off, 25e9, 2e-2, 400_000, 3, false)
		if math.Abs(off.EffectiveLoss/2e-2-1) > 0.05 {
			t.Errorf("off: loss %.3e, want 2e-2", off.EffectiveLoss)
		}
	}
}

// Skipping ahead between loss events must give the same distribution as
// stepping every frame: compare means of the key counters over many seeds
// (two-sample z tests at a loose bound; both use the same mechanism after
// a loss, so they differ only in how the steady stretches are drawn).
func TestSkipAheadMatchesStepping(t *testing.T) {
	const seeds = 60
	type acc struct{ n, s, s2 float64 }
	add := func(a *acc, x float64) { a.n++; a.s += x; a.s2 += x * x }
	z := func(a, b acc) float64 {
		ma, mb := a.s/a.n, b.s/b.n
		va, vb := a.s2/a.n-ma*ma, b.s2/b.n-mb*mb
		if va+vb == 0 {
			return 0
		}
		return (ma - mb) / math.Sqrt(va/a.n+vb/b.n)
	}
	for _, m := range []Mode{Ordered, NonBlocking} {
		var lostS, lostK, copS, copK, rxS, rxK, durS, durK acc
		for i := uint64(0); i < seeds; i++ {
			for _, step := range []bool{true, false} {
				c, _ := Defaults(m, 100e9, 1e-2, 30_000)
				c.Copies = 1
				c.Step = step
				r, err := Run(c, rand.New(rand.NewPCG(i, uint64(map[bool]int{true: 1, false: 2}[step]))))
				if err != nil {
					t.Fatal(err)
				}
				if step {
					add(&lostS, float64(r.Lost))
					add(&copS, float64(r.Copies))
					add(&rxS, float64(r.MaxRxBufferBytes))
					add(&durS, float64(r.Duration))
				} else {
					add(&lostK, float64(r.Lost))
					add(&copK, float64(r.Copies))
					add(&rxK, float64(r.MaxRxBufferBytes))
					add(&durK, float64(r.Duration))
				}
			}
		}
		for name, pair := range map[string][2]acc{"lost": {lostS, lostK}, "copies": {copS, copK}, "max rx buffer": {rxS, rxK}, "duration": {durS, durK}} {
			if zz := z(pair[0], pair[1]); math.Abs(zz) > 4 {
				t.Errorf("%s %s: stepping mean %.1f vs skipping %.1f (z=%.1f)", m, name, pair[0].s/pair[0].n, pair[1].s/pair[1].n, zz)
			}
		}
	}
}

// Without backpressure the reorder buffer overflows at 100G and frames are
// lost to it; with backpressure it does not.
func TestBackpressurePreventsOverflow(t *testing.T) {
	c, _ := Defaults(Ordered, 100e9, 1e-3, 1_000_000)
	with, _ := Run(c, rand.New(rand.NewPCG(5, 5)))
	c.Backpressure = false
	without, _ := Run(c, rand.New(rand.NewPCG(5, 5)))
	if with.BufferDrops != 0 || with.MaxRxBufferBytes > int64(c.RxBufferCap) || with.PauseFrames == 0 {
		t.Errorf("with backpressure: %+v", with)
	}
	if without.BufferDrops == 0 || without.Lost <= with.Lost {
		t.Errorf("without backpressure the buffer should overflow: %+v", without)
	}
	t.Logf("with: eff loss %.2e, %.2f Gb/s, max rx %d B, pauses %d", with.EffectiveLoss, with.EffectiveBps/1e9, with.MaxRxBufferBytes, with.PauseFrames)
	t.Logf("without: eff loss %.2e, %.2f Gb/s, drops %d", without.EffectiveLoss, without.EffectiveBps/1e9, without.BufferDrops)
}

func BenchmarkStressTest100G1e3(b *testing.B) {
	// Frames per second of simulated traffic: b.N is in units of 10^6 frames.
	for i := 0; i < b.N; i++ {
		c, _ := Defaults(Ordered, 100e9, 1e-3, 1_000_000)
		if _, err := Run(c, rand.New(rand.NewPCG(uint64(i), 1))); err != nil {
			b.Fatal(err)
		}
	}
}

// LinkGuardianNB loses less link speed than LinkGuardian (it never pauses),
// and the gap grows with speed and loss (§4.1, Fig. 8).
func TestNonBlockingKeepsMoreLinkSpeed(t *testing.T) {
	gap := map[float64]float64{}
	for _, bps := range []float64{25e9, 100e9} {
		for _, loss := range []float64{1e-4, 1e-3} {
			lgr := run(t, Ordered, bps, loss, 1_000_000, 11, false)
			nb := run(t, NonBlocking, bps, loss, 1_000_000, 11, false)
			t.Logf("%3.0fG loss %.0e: LG %.2f Gb/s (eff loss %.1e, pauses %d, max rx %d B, max tx %d B), NB %.2f Gb/s (eff loss %.1e)",
				bps/1e9, loss, lgr.EffectiveBps/1e9, lgr.EffectiveLoss, lgr.PauseFrames, lgr.MaxRxBufferBytes, lgr.MaxTxBufferBytes, nb.EffectiveBps/1e9, nb.EffectiveLoss)
			if nb.EffectiveBps < lgr.EffectiveBps {
				t.Errorf("%gG %g: NB %.2f < LG %.2f Gb/s", bps/1e9, loss, nb.EffectiveBps/1e9, lgr.EffectiveBps/1e9)
			}
			gap[bps*loss] = (nb.EffectiveBps - lgr.EffectiveBps) / bps
		}
	}
	if !(gap[100e9*1e-3] > gap[25e9*1e-3] && gap[100e9*1e-3] > gap[100e9*1e-4]) {
		t.Errorf("the LG/NB gap does not grow with speed and loss: %v", gap)
	}
}

// Advancing in slices of simulated time must give exactly what one Run
// gives with the same random stream: the emulator's polled counters and
// the final result are the same simulation.
func TestAdvanceInSlicesEqualsRun(t *testing.T) {
	for _, mode := range []Mode{Off, Ordered, NonBlocking} {
		cfg, err := Defaults(mode, 100e9, 1e-3, 200_000)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Run(cfg, rand.New(rand.NewPCG(7, 9)))
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(cfg, rand.New(rand.NewPCG(7, 9)))
		if err != nil {
			t.Fatal(err)
		}
		var last Result
		for i := 1; !m.AdvanceTo(time.Duration(i) * 50 * time.Microsecond); i++ {
			r := m.Result()
			if r.FramesSent < last.FramesSent || r.Delivered < last.Delivered {
				t.Fatalf("%s: counters went backwards at slice %d", mode, i)
			}
			if m.Now() > time.Duration(i)*50*time.Microsecond {
				t.Fatalf("%s: advanced to %v past %v", mode, m.Now(), time.Duration(i)*50*time.Microsecond)
			}
			last = r
		}
		if got := m.Result(); got != want {
			t.Errorf("%s: sliced %+v\nrun %+v", mode, got, want)
		}
	}
}

// StopOffering ends continuous traffic cleanly: every original sent is
// resolved and the run reports done.
func TestContinuousStop(t *testing.T) {
	cfg, err := Defaults(Ordered, 25e9, 1e-3, Continuous)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxRun = 64
	m, err := New(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if m.AdvanceTo(2 * time.Millisecond) {
		t.Fatal("continuous traffic finished by itself")
	}
	m.StopOffering()
	if !m.AdvanceTo(time.Duration(math.MaxInt64)) {
		t.Fatal("not done after StopOffering")
	}
	r := m.Result()
	if r.Delivered+r.Lost != r.FramesSent || r.FramesSent < 3500 { // 2 ms at 25G is 4,055 frames at line rate
		t.Fatalf("unresolved frames: %+v", r)
	}
}

// Counters read while a run advances count only what has crossed the
// wire by then, even inside a skipped-over run of frames: sent never runs
// ahead of line rate, and delivered never ahead of sent.
func TestCountersReadMidRunFollowTheWire(t *testing.T) {
	for _, mode := range []Mode{Off, Ordered, NonBlocking} {
		c, err := Defaults(mode, 25e9, 1e-4, 2_000_000)
		if err != nil {
			t.Fatal(err)
		}
		c.MaxRun = 256
		m, err := New(c, rand.New(rand.NewPCG(3, 3)))
		if err != nil {
			t.Fatal(err)
		}
		slot := float64((c.FrameBytes+20+map[bool]int{true: 0, false: lg.HeaderBytes}[mode == Off])*8) / c.LinkBps
		var last Result
		for at := 7 * time.Microsecond; ; at += 7 * time.Microsecond {
			done := m.AdvanceTo(at)
			r := m.Result()
			if lineRate := at.Seconds()/slot + 1; float64(r.FramesSent) > lineRate {
				t.Fatalf("%s at %v: %d frames sent, line rate allows %.0f", mode, at, r.FramesSent, lineRate)
			}
			if r.Delivered > r.FramesSent || r.Delivered < last.Delivered || r.FramesSent < last.FramesSent {
				t.Fatalf("%s at %v: sent %d delivered %d, before sent %d delivered %d", mode, at, r.FramesSent, r.Delivered, last.FramesSent, last.Delivered)
			}
			// Off: nothing waits, so what was sent a microsecond and a
			// frame ago has landed unless corrupted.
			if mode == Off && r.FramesSent-r.Delivered-r.Lost > int64(2*time.Microsecond.Seconds()/slot)+2 {
				t.Fatalf("%s at %v: sent %d, delivered %d, lost %d: frames counted late", mode, at, r.FramesSent, r.Delivered, r.Lost)
			}
			last = r
			if done || at > 2*time.Millisecond {
				break
			}
		}
	}
}
