package losssweep

import (
	"fmt"
	"strings"
	"time"

	o "testbed/orchestrator"
)

// What a stress point costs on the simulated lab, in CPU time: a paced
// point (pktgen_period_ns above a frame's time on the wire) is simulated
// frame by frame; a line-rate point skips from one loss to the next, so its
// cost follows the frames lost. Measured on a 2-core machine shared with
// other builds (load 8-12), loss-sweep --seed 1 --set links=lg100, three
// modes a loss rate:
//
//	pktgen_period_ns=124 frames=1e7, loss 1e-5 and 1e-3: 10.9 and 9.1 s of CPU (3x10^7 frames)
//	frames=1e9, loss 1e-3: 9.4 s of CPU (some 3x10^6 frames lost); loss 1e-5: 1.1 s
//	resolve_effective_loss=1e-10, both links (18 points of 3.84x10^9 frames): 261 s (README)
//
// The estimate is for planning, within a factor of about three: it tells
// a minutes' run from one of hours before any of it is simulated.
const (
	simPacedFramesPerCPUs = 3e6
	simCPUPerLoss         = 10 * time.Microsecond
	simCPUPerPoint        = 300 * time.Millisecond // bring-up, calibration's share, the bundle
)

// simPointCPU is one stress point's estimated CPU time on the simulated lab.
func simPointCPU(frames int64, loss float64, paced bool) time.Duration {
	d := simCPUPerPoint
	if paced {
		return d + time.Duration(float64(frames)/simPacedFramesPerCPUs*float64(time.Second))
	}
	return d + time.Duration(float64(frames)*loss*float64(simCPUPerLoss))
}

// simCost adds up a plan's stress points on the simulated lab.
type simCost struct {
	total         time.Duration
	points, paced int
}

func (c *simCost) add(frames int64, loss float64, paced bool) time.Duration {
	d := simPointCPU(frames, loss, paced)
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
		why = append(why, fmt.Sprintf("pktgen_period_ns=%d paces %d of the %d points, simulated frame by frame (some %.0e frames per CPU-second)",
			p.Int("pktgen_period_ns"), c.paced, c.points, float64(simPacedFramesPerCPUs)))
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
