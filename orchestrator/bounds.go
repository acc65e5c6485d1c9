package orchestrator

import (
	"fmt"
	"math"
)

// MaxPlanSteps caps the steps one plan may lay out. A sweep of the widest
// VOA (60 dB) at the finest step a recipe allows (0.01 dB) over a dozen
// links stays well below it; a typo (stop_db=1e308) does not, and is bad
// input before a single step is allocated.
const MaxPlanSteps = 100_000

// GridSize is how many points a sweep from start to stop in step lays out,
// computed without laying them out: the count is checked against
// MaxPlanSteps, times the number of series the grid is repeated for, and
// a sweep over the cap is bad input naming the parameters that make it.
func GridSize(startName, stopName, stepName string, start, stop, step float64, series int) (int, error) {
	if !(step > 0) || math.IsInf(step, 0) {
		return 0, Inputf("parameter %s: %g is not a positive step", stepName, step)
	}
	if math.IsNaN(start) || math.IsNaN(stop) || math.IsInf(start, 0) || math.IsInf(stop, 0) {
		return 0, Inputf("parameters %s and %s: %g and %g are not finite", startName, stopName, start, stop)
	}
	if stop < start {
		return 0, nil
	}
	n := math.Floor((stop-start)/step+1e-9) + 1
	if series < 1 {
		series = 1
	}
	if n*float64(series) > MaxPlanSteps {
		return 0, Inputf("parameters %s=%g, %s=%g, %s=%g: a sweep of %.3g points%s, over the cap of %d steps a plan may lay out: narrow the range or widen the step",
			startName, start, stopName, stop, stepName, step, n, seriesText(series), MaxPlanSteps)
	}
	return int(n), nil
}

func seriesText(series int) string {
	if series == 1 {
		return ""
	}
	return fmt.Sprintf(" on each of %d series", series)
}

// checkPlanSize is the engine's check of every plan, whatever built it.
func checkPlanSize(p *Plan) error {
	if len(p.Steps) > MaxPlanSteps {
		return Inputf("%s: the plan has %d steps, over the cap of %d: a parameter asks for more work than one run may do", p.Recipe, len(p.Steps), MaxPlanSteps)
	}
	return nil
}

// CheckParamLimits reports the numeric parameters of specs that lack a
// limit: every number a user can type must have a minimum and a maximum
// (or a list of choices), so that no value can ask for unbounded work.
func CheckParamLimits(specs []ParamSpec) []string {
	var out []string
	for _, s := range specs {
		switch s.Type {
		case TypeFloat, TypeInt, TypeDuration, TypeFloats:
			if len(s.Enum) > 0 {
				continue
			}
			if s.Min == nil || s.Max == nil {
				out = append(out, s.Name)
			}
		}
	}
	return out
}
