package lgmodel

import (
	"math/rand/v2"
	"testing"
	"time"
)

// The recipe-path benchmark (experiments/losssweep's
// BenchmarkRecipeFrames*) sends 10^8 frames a point through the
// simulated switch at the attenuation loss-sweep's calibration picks for
// a nominal 1e-3 (seed 1: 8.106 dB at lg100, 7.626 dB at lg25). The
// switch runs the model at the loss that attenuation gives (its
// dataplane's frameLoss), below the nominal rate, and a point's cost is
// mostly per loss, so BenchmarkFrames*'s 1e-3 is not the recipe's case:
// these run the model at the loss the switch configures for the stress
// test, read off its segment's lgmodel.Config. (The loss the
// calibration measured on its shorter points, summary.json's
// actual_loss, is near it: 7.063e-4 and 8.327e-4.)
const (
	recipeLoss100G = 7.239e-4 // lg100 at 8.106 dB
	recipeLoss25G  = 8.267e-4 // lg25 at 7.626 dB
)

// BenchmarkRecipeCase* is the model alone as BenchmarkFrames* runs it
// (uncapped runs, no Tx buffer accounting) on the recipe's 10^8 frames
// at the recipe's loss: the figure BenchmarkRecipeFrames* is within a
// factor of. BenchmarkSwitchCase* configures the model as simlab/tofino's
// dataplane.go does (runs of at most 256 frames in ordered mode, 1024
// without a reorder buffer; the courier's Tx buffer accounting on, which
// the recipe reads): the recipe's figure divided by it is what the path
// itself (the generator's requests, SSH, the agent, the switch
// emulator's clock) costs, and RecipeCase by SwitchCase what the cap and
// the accounting cost:
//
//	go test -run '^$' -bench 'RecipeCase|SwitchCase' -benchtime 1x ./simlab/lgmodel
func BenchmarkRecipeCase100GOrdered1e3(b *testing.B) { benchCase(b, Ordered, 100e9, false) }
func BenchmarkRecipeCase100GNB1e3(b *testing.B)      { benchCase(b, NonBlocking, 100e9, false) }
func BenchmarkRecipeCase25GOrdered1e3(b *testing.B)  { benchCase(b, Ordered, 25e9, false) }
func BenchmarkRecipeCase25GNB1e3(b *testing.B)       { benchCase(b, NonBlocking, 25e9, false) }
func BenchmarkSwitchCase100GOrdered1e3(b *testing.B) { benchCase(b, Ordered, 100e9, true) }
func BenchmarkSwitchCase100GNB1e3(b *testing.B)      { benchCase(b, NonBlocking, 100e9, true) }
func BenchmarkSwitchCase25GOrdered1e3(b *testing.B)  { benchCase(b, Ordered, 25e9, true) }
func BenchmarkSwitchCase25GNB1e3(b *testing.B)       { benchCase(b, NonBlocking, 25e9, true) }

// BenchmarkSwitchSlices* is SwitchCase advanced as the switch advances it
// (simlab/tofino's dataplane.go): in slices of 10 ms of the clock
// (settleEvery), reading the counters after each (Counters, what a
// catch-up accounts) and the Tx buffer queue once at the end (the
// recipe's tm.queue read). BenchmarkSwitchSlicesTxQueue* also asks the
// Tx buffer queue after every slice, as the switch did at every catch-up
// before it asked when the queue is read: the difference is what those
// reads cost.
//
//	go test -run '^$' -bench 'SwitchCase|SwitchSlices' -benchtime 1x ./simlab/lgmodel
func BenchmarkSwitchSlices100GOrdered1e3(b *testing.B)        { benchSlices(b, Ordered, 100e9, false) }
func BenchmarkSwitchSlices100GNB1e3(b *testing.B)             { benchSlices(b, NonBlocking, 100e9, false) }
func BenchmarkSwitchSlices25GOrdered1e3(b *testing.B)         { benchSlices(b, Ordered, 25e9, false) }
func BenchmarkSwitchSlices25GNB1e3(b *testing.B)              { benchSlices(b, NonBlocking, 25e9, false) }
func BenchmarkSwitchSlicesTxQueue100GOrdered1e3(b *testing.B) { benchSlices(b, Ordered, 100e9, true) }
func BenchmarkSwitchSlicesTxQueue100GNB1e3(b *testing.B)      { benchSlices(b, NonBlocking, 100e9, true) }
func BenchmarkSwitchSlicesTxQueue25GOrdered1e3(b *testing.B)  { benchSlices(b, Ordered, 25e9, true) }
func BenchmarkSwitchSlicesTxQueue25GNB1e3(b *testing.B)       { benchSlices(b, NonBlocking, 25e9, true) }

// switchMaxRun is the run cap simlab/tofino's dataplane.go (newSegment)
// gives a mode.
func switchMaxRun(mode Mode) int64 {
	if mode == Ordered {
		return 256
	}
	return 1024
}

// recipeFrames is the recipe-path benchmark's frames a point.
const recipeFrames = 100_000_000

// recipeConfig is the recipe's case at a link speed: its frames at the
// loss the switch configures, alone or (asSwitch) with the switch's run
// cap and the courier's accounting.
func recipeConfig(b *testing.B, mode Mode, bps float64, asSwitch bool) Config {
	loss := recipeLoss25G
	if bps == 100e9 {
		loss = recipeLoss100G
	}
	c, err := Defaults(mode, bps, loss, recipeFrames)
	if err != nil {
		b.Fatal(err)
	}
	if asSwitch {
		c.MaxRun = switchMaxRun(mode)
		c = c.WithCourier()
	}
	return c
}

// reportRecipeRate reports b's frames per wall and per CPU second.
func reportRecipeRate(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(b.N)*recipeFrames/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(float64(b.N)*recipeFrames/(cpuTime(b)-cpu0).Seconds(), "frames/cpu-s")
	b.ReportMetric(0, "ns/op")
}

func benchCase(b *testing.B, mode Mode, bps float64, asSwitch bool) {
	cpu0 := cpuTime(b)
	for i := 0; i < b.N; i++ {
		if _, err := Run(recipeConfig(b, mode, bps, asSwitch), rand.New(rand.NewPCG(uint64(i+1), 1))); err != nil {
			b.Fatal(err)
		}
	}
	reportRecipeRate(b, cpu0)
}

// BenchmarkPacedCase25GOrdered* is the paced 1e-10 table's costly case
// (loss-sweep --set pktgen_period_ns=124 --set resolve_effective_loss=1e-10,
// lg25 ordered: the generator's timer at 496 ns, the loss its calibration
// measures, seed 1) as the simulated switch configures the model for a
// point of more than 2^27 frames (runs of at most 256, no small-frame
// loss, no courier) and advances it (chunks of 1 ms), on fewer frames
// than the point's 3.84x10^9:
//
//	go test -run '^$' -bench 'PacedCase' -benchtime 1x ./simlab/lgmodel
func BenchmarkPacedCase25GOrdered1e3(b *testing.B) { benchPacedCase(b, 9.11e-4, 40_000_000) }
func BenchmarkPacedCase25GOrdered1e4(b *testing.B) { benchPacedCase(b, 7.6e-5, 80_000_000) }

func benchPacedCase(b *testing.B, loss float64, frames int64) {
	cpu0 := cpuTime(b)
	var losses int64
	for i := 0; i < b.N; i++ {
		c, err := Defaults(Ordered, 25e9, loss, frames)
		if err != nil {
			b.Fatal(err)
		}
		c.MaxRun, c.LossSmall, c.Period = 256, 0, 496*time.Nanosecond
		m, err := New(c, rand.New(rand.NewPCG(uint64(i+1), 1)))
		if err != nil {
			b.Fatal(err)
		}
		for at := time.Millisecond; !m.AdvanceTo(at); at += time.Millisecond {
		}
		losses += m.Result().Corrupted
	}
	b.ReportMetric(float64(b.N)*float64(frames)/(cpuTime(b)-cpu0).Seconds(), "frames/cpu-s")
	b.ReportMetric((cpuTime(b)-cpu0).Seconds()*1e6/float64(losses), "cpu-us/loss")
	b.ReportMetric(0, "ns/op")
}

func benchSlices(b *testing.B, mode Mode, bps float64, askEverySlice bool) {
	cpu0 := cpuTime(b)
	for i := 0; i < b.N; i++ {
		m, err := New(recipeConfig(b, mode, bps, true), rand.New(rand.NewPCG(uint64(i+1), 1)))
		if err != nil {
			b.Fatal(err)
		}
		var sent int64
		for t := 10 * time.Millisecond; ; t += 10 * time.Millisecond {
			done := m.AdvanceTo(t)
			sent += m.Counters().FramesSent
			if askEverySlice {
				m.TxQueue()
			}
			if done {
				break
			}
		}
		_, w, ok := m.TxQueue()
		if !ok || w == 0 || sent == 0 {
			b.Fatalf("the Tx buffer queue's watermark %d (ok %v), frames %d", w, ok, sent)
		}
	}
	reportRecipeRate(b, cpu0)
}
