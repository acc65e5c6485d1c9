package suite

import (
	"fmt"
	"math"
	"strings"

	"testbed/results"
)

// Outcomes of one check.
const (
	Pass       = "pass"
	Regression = "regression" // outside a bound, or worse than the baseline beyond tolerance
	Skipped    = "skipped"    // could not be evaluated (no baseline, the run failed)
	Invalid    = "error"      // the suite is wrong: the pattern matches no metric
)

// Check is one expectation evaluated on one metric (a pattern with '*'
// gives one Check per metric it matches).
type Check struct {
	Expect *Expectation `json:"-"`
	// Pattern and Condition repeat the expectation for reports.
	Pattern   string `json:"pattern"`
	Condition string `json:"condition"`
	Where     string `json:"where"` // file:line of the expectation
	Metric    string `json:"metric,omitempty"`
	// Value is the measured value; Baseline the baseline bundle's value
	// (relative checks only).
	Value    any `json:"value,omitempty"`
	Baseline any `json:"baseline,omitempty"`
	// BandLow and BandHigh are the band the value was held to, for plots:
	// the baseline's value plus and minus the tolerance (relative checks),
	// else the bounds min and max; absent where a side is open.
	BandLow  *float64 `json:"band_low,omitempty"`
	BandHigh *float64 `json:"band_high,omitempty"`
	Outcome  string   `json:"outcome"`
	Message  string   `json:"message"`
}

// Name is the check's test name: metric path and condition.
func (c Check) Name() string {
	m := c.Metric
	if m == "" {
		m = c.Pattern
	}
	return m + " " + c.Condition
}

// Evaluate checks an entry's expectations against a run's summary.json
// and, for tolerances, against a baseline's (nil: no baseline; baselineName
// names it in messages). A pattern that matches no metric of the summary
// gives one Invalid check naming the file and line.
func (e *Entry) Evaluate(summary, baseline []byte, baselineName string) ([]Check, error) {
	cur, err := results.FlattenSummary(summary)
	if err != nil {
		return nil, fmt.Errorf("entry %s: %w", e.ID, err)
	}
	var base map[string]any
	if baseline != nil {
		bm, err := results.FlattenSummary(baseline)
		if err != nil {
			return nil, fmt.Errorf("entry %s: baseline %s: %w", e.ID, baselineName, err)
		}
		base = map[string]any{}
		for _, m := range bm {
			base[m.Path] = m.Value
		}
	}
	var out []Check
	for _, x := range e.Expect {
		proto := Check{Expect: x, Pattern: x.Metric, Condition: x.Condition(), Where: x.Pos.String()}
		n := 0
		for _, m := range cur {
			if !x.Match(m.Path) {
				continue
			}
			n++
			c := proto
			c.Metric, c.Value = m.Path, m.Value
			evaluate(&c, x, m, base, baseline != nil, baselineName)
			out = append(out, c)
		}
		if n == 0 {
			c := proto
			c.Outcome = Invalid
			c.Message = fmt.Sprintf("%s: metric %s matches nothing in the summary of entry %s (%s)", x.Pos, x.Metric, e.ID, someMetrics(cur, x.Metric))
			out = append(out, c)
		}
	}
	return out, nil
}

func evaluate(c *Check, x *Expectation, m results.Metric, base map[string]any, haveBase bool, baselineName string) {
	var fails, skips []string
	compared := false
	if x.Min != nil || x.Max != nil {
		v, ok := m.Value.(float64)
		if b, isBool := m.Value.(bool); isBool {
			v, ok = 0, true // booleans bound as 0 and 1
			if b {
				v = 1
			}
		}
		switch {
		case !ok:
			fails = append(fails, fmt.Sprintf("measured %s, not a number; expected %s", show(m.Value), boundText(x)))
		case x.Min != nil && v < *x.Min:
			fails = append(fails, fmt.Sprintf("measured %s, below the minimum %s", show(v), fnum(*x.Min)))
		case x.Max != nil && v > *x.Max:
			fails = append(fails, fmt.Sprintf("measured %s, above the maximum %s", show(v), fnum(*x.Max)))
		}
	}
	c.BandLow, c.BandHigh = x.Min, x.Max
	if x.Relative() {
		b, inBase := base[m.Path]
		switch {
		case !haveBase:
			skips = append(skips, "no baseline for this entry")
		case !inBase:
			skips = append(skips, fmt.Sprintf("baseline %s has no metric %s", baselineName, m.Path))
		default:
			c.Baseline, compared = b, true
			if bf, ok := b.(float64); ok {
				tol := x.Tolerance()
				w := math.Max(tol.Abs, tol.Rel*math.Abs(bf))
				lo, hi := bf-w, bf+w
				c.BandLow, c.BandHigh = &lo, &hi
			}
			d := results.CompareMetric(m.Path, b, m.Value, x.Worse, x.Tolerance())
			if d.Regression {
				fails = append(fails, fmt.Sprintf("measured %s, baseline %s (%s): %s beyond %s; %s",
					show(m.Value), show(b), baselineName, changeText(d), tolText(x), worseText(x.Worse)))
			}
		}
	}
	switch {
	case len(fails) > 0:
		c.Outcome, c.Message = Regression, fmt.Sprintf("%s: %s: %s", x.Pos, m.Path, strings.Join(fails, "; "))
	case len(skips) > 0 && x.Min == nil && x.Max == nil:
		c.Outcome, c.Message = Skipped, fmt.Sprintf("%s: %s: not compared: %s", x.Pos, m.Path, strings.Join(skips, "; "))
	default:
		c.Outcome = Pass
		parts := []string{"measured " + show(m.Value)}
		if x.Min != nil || x.Max != nil {
			parts = append(parts, boundText(x))
		}
		if compared {
			parts = append(parts, fmt.Sprintf("baseline %s (%s), %s", show(c.Baseline), baselineName, tolText(x)))
		}
		if len(skips) > 0 {
			parts = append(parts, "not compared: "+strings.Join(skips, "; "))
		}
		c.Message = fmt.Sprintf("%s: %s", m.Path, strings.Join(parts, ", "))
	}
}

func boundText(x *Expectation) string {
	switch {
	case x.Min != nil && x.Max != nil:
		return fmt.Sprintf("bound [%s, %s]", fnum(*x.Min), fnum(*x.Max))
	case x.Min != nil:
		return "minimum " + fnum(*x.Min)
	case x.Max != nil:
		return "maximum " + fnum(*x.Max)
	}
	return ""
}

func tolText(x *Expectation) string {
	var t []string
	if x.RelTol != nil {
		t = append(t, fmt.Sprintf("rel_tol %s (%s%%)", fnum(*x.RelTol), fnum(*x.RelTol*100)))
	}
	if x.AbsTol != nil {
		t = append(t, "abs_tol "+fnum(*x.AbsTol))
	}
	if len(t) == 0 {
		return "tolerance 0"
	}
	return strings.Join(t, " or ")
}

func changeText(d results.MetricDiff) string {
	if d.AbsChange == nil {
		return "changed"
	}
	s := "change " + signed(*d.AbsChange)
	if d.RelChange != nil {
		s += fmt.Sprintf(" (%s%%)", signed(*d.RelChange*100))
	}
	return s
}

func signed(f float64) string {
	if f > 0 {
		return "+" + fmt.Sprintf("%.4g", f)
	}
	return fmt.Sprintf("%.4g", f)
}

func show(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		return fnum(x)
	case string:
		return fmt.Sprintf("%q", x)
	}
	return fmt.Sprint(v)
}

// someMetrics names a few metrics of the summary, those sharing the
// pattern's first segment first, so the user sees what exists.
func someMetrics(ms []results.Metric, pattern string) string {
	if len(ms) == 0 {
		return "the summary is empty"
	}
	first := strings.SplitN(pattern, ".", 2)[0]
	var near, rest []string
	for _, m := range ms {
		if strings.SplitN(m.Path, ".", 2)[0] == first || matchPath(first, strings.SplitN(m.Path, ".", 2)[0]) {
			near = append(near, m.Path)
		} else {
			rest = append(rest, m.Path)
		}
	}
	all := append(near, rest...)
	const max = 6
	more := ""
	if len(all) > max {
		more = fmt.Sprintf(", ... %d more", len(all)-max)
		all = all[:max]
	}
	return fmt.Sprintf("it has %d metrics: %s%s", len(ms), strings.Join(all, ", "), more)
}
