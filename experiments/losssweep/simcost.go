package losssweep

import (
	"fmt"
	"strings"
	"time"

	o "testbed/orchestrator"
)

// What a stress point costs on the simulated lab, in CPU time. A
// line-rate point skips from one loss to the next, so its cost follows the
// frames lost. A paced point (pktgen_period_ns above a frame's time on the
// wire) works out its steady stretches between losses in whole periods of
// the generator's pattern and jumps the reorder buffer's repeating
// stretches (simlab/lgmodel paced.go); what follows a loss it replays
// where its state was met before, keyed on the generator's phase
// (replay.go), and steps elsewhere, about three times a line-rate loss's
// cost (measured before the replay, which makes lg100's loss cheaper:
// not re-measured); where the simulated switch reads the Tx buffer's
// queue with the courier (a point of at most 2^27 frames), its stretches
// are stepped with it, some 10^7 frames a CPU-second, 25G ordered too.
// Measured on a 2-core machine shared with other builds
// (load 6-14), loss-sweep --seed 1 --set links=lgN --set loss_rates=L
// --set pktgen_period_ns=124, three modes, calibration included:
//
//	frames=2e8, lg100: 1e-5 4.9 s of CPU, 1e-3 13.1 s (some 6x10^5 frames lost); lg25: 7.2 s, 20.8 s
//	frames=1e7, lg100: 1e-5 3.2 s, 1e-3 2.5 s; lg25 1e-3: 5.3 s
//	resolve_effective_loss=1e-10 at line rate, both links (18 points of 3.84x10^9 frames): 261 s (README)
//
// except 25G ordered, whose sender falls behind the generator after each
// loss, catches up, and keeps pace while its reorder buffer drains for
// some 1,700 originals, a stretch that does not repeat: lgmodel replays it
// in segments (replay.go), keyed on the generator's phase, where its state
// was met before, and steps it where not; its cost follows the losses
// until the stretches fill the time between them. Measured on the final
// build, loss-sweep --seed 1 --set pktgen_period_ns=124 --set
// resolve_effective_loss=1e-10 --set links=lg25 (3.84x10^9 frames a point,
// 2-core machine, load 10-12), CPU time a point, calibration excluded:
//
//	ordered: 9.89e-6 19.4 s, 7.6e-5 183 s, 9.11e-4 196 s
//	off and non-blocking: 15-35 s each
//
// so some 600 us a lost frame, at most 2x10^7 frames a CPU-second. With
// the stretch's checkpoints chosen by the state (lgmodel replay.go
// pacedCheckpoint), the ordered point alone (--set modes=linkguardian
// --set loss_rates=1e-4, and 1e-3; calibration included; both builds run
// alongside at load 10-12): 9.2e-5 154.0 s before, 87.3 s after (some
// 250 us a lost frame); 8.33e-4 123.5 s and 130.2 s, under the bound.
//
// The estimate is for planning, within a factor of about three: it tells
// a minutes' run from one of hours before any of it is simulated.
const (
	simPacedFramesPerCPUs     = 1e8
	simCourierFramesPerCPUs   = 1e7
	simCourierMaxFrames       = 1 << 27 // simlab/tofino courierMaxFrames
	simCPUPerLoss             = 10 * time.Microsecond
	simPacedCPUPerLoss        = 30 * time.Microsecond
	simPacedSlowFramesPerCPUs = 2e7                    // paced ordered below 100G, at most
	simPacedSlowCPUPerLoss    = 250 * time.Microsecond // ... of it, while the losses leave time between them
	simCPUPerPoint            = 300 * time.Millisecond // bring-up, calibration's share, the bundle
)

// simPointCPU is one stress point's estimated CPU time on the simulated lab.
// slow: a paced ordered point below 100G.
func simPointCPU(frames int64, loss float64, paced, slow bool) time.Duration {
	d := simCPUPerPoint
	if !paced {
		return d + time.Duration(float64(frames)*loss*float64(simCPUPerLoss))
	}
	rate := simPacedFramesPerCPUs
	switch {
	case frames <= simCourierMaxFrames:
		rate = simCourierFramesPerCPUs
	case slow:
		lost := time.Duration(float64(frames) * loss * float64(simPacedSlowCPUPerLoss))
		return d + min(lost, time.Duration(float64(frames)/simPacedSlowFramesPerCPUs*float64(time.Second)))
	}
	return d + time.Duration(float64(frames)/rate*float64(time.Second)) + time.Duration(float64(frames)*loss*float64(simPacedCPUPerLoss))
}

// simCost adds up a plan's stress points on the simulated lab.
type simCost struct {
	total         time.Duration
	points, paced int
}

func (c *simCost) add(frames int64, loss float64, paced, slow bool) time.Duration {
	d := simPointCPU(frames, loss, paced, slow)
	c.total += d
	c.points++
	if paced {
		c.paced++
	}
	return d
}

// check refuses a plan whose estimate is over limit (sim_cpu_limit),
// naming the parameters that make it and the one that lets it run.
func (c *simCost) check(p *o.Params, frames int64, limit time.Duration) error {
	if c.total <= limit {
		return nil
	}
	var why []string
	if r := p.Float("resolve_effective_loss"); r > 0 {
		why = append(why, fmt.Sprintf("resolve_effective_loss=%g gives %d frames a point", r, frames))
	} else {
		why = append(why, fmt.Sprintf("frames=%d", frames))
	}
	if c.paced > 0 {
		why = append(why, fmt.Sprintf("pktgen_period_ns=%d paces %d of the %d points (some %.0e frames per CPU-second and %v a lost frame)",
			p.Int("pktgen_period_ns"), c.paced, c.points, float64(simPacedFramesPerCPUs), simPacedCPUPerLoss))
	}
	return o.Inputf("on the simulated lab this plan is about %s of CPU, over sim_cpu_limit=%s: %s, over %d stress points; "+
		"set sim_cpu_limit=%s (or more) to run it anyway, or ask for fewer frames, points or paced links",
		roundCPU(c.total), limit, strings.Join(why, "; "), c.points, roundCPU(c.total*3/2))
}

// roundCPU writes a CPU time to the second (to the minute past an hour).
func roundCPU(d time.Duration) time.Duration {
	if d > time.Hour {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}
