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
// stretches (simlab/lgmodel paced.go), but steps what follows a loss frame
// by frame, about three times a line-rate loss's cost; where the simulated
// switch reads the Tx buffer's queue with the courier (a point of at most
// 2^27 frames), its stretches are stepped with it, some 10^7 frames a
// CPU-second. Measured on a 2-core machine shared with other builds
// (load 6-14), loss-sweep --seed 1 --set links=lgN --set loss_rates=L
// --set pktgen_period_ns=124, three modes, calibration included:
//
//	frames=2e8, lg100: 1e-5 4.9 s of CPU, 1e-3 13.1 s (some 6x10^5 frames lost); lg25: 7.2 s, 20.8 s
//	frames=1e7, lg100: 1e-5 3.2 s, 1e-3 2.5 s; lg25 1e-3: 5.3 s
//	resolve_effective_loss=1e-10 at line rate, both links (18 points of 3.84x10^9 frames): 261 s (README)
//
// except 25G ordered, whose reorder buffer keeps a rotation between losses
// that the paced pattern seldom repeats with (no cycle of up to 64
// originals), so its stretches are stepped: lgmodel at 25G ordered, 1e-4,
// 2x10^7 frames, 7.8x10^6 frames a CPU-second; the recipe's 3.84x10^9-frame
// point at 1e-4 (resolve_effective_loss=1e-10, links=lg25) was over 6 min
// of CPU when stopped.
//
// The estimate is for planning, within a factor of about three: it tells
// a minutes' run from one of hours before any of it is simulated.
const (
	simPacedFramesPerCPUs     = 1e8
	simCourierFramesPerCPUs   = 1e7
	simCourierMaxFrames       = 1 << 27 // simlab/tofino courierMaxFrames
	simCPUPerLoss             = 10 * time.Microsecond
	simPacedCPUPerLoss        = 30 * time.Microsecond
	simPacedSlowFramesPerCPUs = 7e6                    // paced ordered below 100G
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
	case slow:
		rate = simPacedSlowFramesPerCPUs
	case frames <= simCourierMaxFrames:
		rate = simCourierFramesPerCPUs
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
