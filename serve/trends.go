package serve

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"testbed/results"
)

// TrendPoint is one night's value of a suite entry's headline metric.
type TrendPoint struct {
	RunID   string    `json:"run_id"`
	Started time.Time `json:"started"`
	Value   float64   `json:"value"`
	// BandLow and BandHigh are the band the suite held the value to
	// (its baseline's value within tolerance, or its bounds); null
	// where the suite checked no such side.
	BandLow  *float64 `json:"band_low"`
	BandHigh *float64 `json:"band_high"`
	// Outcome is the suite's verdict on the value: pass, regression,
	// skipped; "" when no suite report covers the run.
	Outcome    string `json:"outcome"`
	Regression bool   `json:"regression"`
}

// Trend is one suite entry's headline metric, night after night, oldest
// first.
type Trend struct {
	Suite  string       `json:"suite"`
	Entry  string       `json:"suite_entry"`
	Recipe string       `json:"recipe"`
	Metric string       `json:"metric"`
	Unit   string       `json:"unit"`
	Points []TrendPoint `json:"points"`
	// Regressions counts the points the suite marked.
	Regressions int `json:"regressions"`
}

// TrendFilter selects trends; empty fields select all.
type TrendFilter struct {
	Suite, Entry, Metric string
	// Nights is how many of the newest runs each trend keeps (0: 60).
	Nights int
}

func trendFilter(q url.Values) (TrendFilter, error) {
	f := TrendFilter{Suite: q.Get("suite"), Entry: q.Get("suite_entry"), Metric: q.Get("metric")}
	if n := q.Get("nights"); n != "" {
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 || v > 5000 {
			return f, fmt.Errorf("nights %q: expected a whole number from 1 to 5000", n)
		}
		f.Nights = v
	}
	return f, nil
}

// Trends reads the headline metrics of the suites' runs from the index,
// with the band and verdict of the suite report that judged each run.
func (ix *Index) Trends(ctx context.Context, f TrendFilter) ([]Trend, error) {
	nights := f.Nights
	if nights <= 0 {
		nights = 60
	}
	where := []string{"suite != ''"}
	var args []any
	if f.Suite != "" {
		where, args = append(where, "suite = ?"), append(args, f.Suite)
	}
	if f.Entry != "" {
		where, args = append(where, "suite_entry = ?"), append(args, f.Entry)
	}
	mwhere := ""
	if f.Metric != "" {
		mwhere, args = " AND m.path = ?", append(args, f.Metric)
	}
	args = append(args, nights)
	// The newest runs of each entry only: years of nights stay one page.
	q := `WITH r AS (
		SELECT run_id, suite, suite_entry, recipe, started,
			ROW_NUMBER() OVER (PARTITION BY suite, suite_entry ORDER BY run_id DESC) AS n
		FROM runs WHERE ` + strings.Join(where, " AND ") + ` AND status = 'ok')
	SELECT r.suite, r.suite_entry, r.recipe, r.run_id, r.started, m.path, m.value, m.unit, c.low, c.high, c.outcome
	FROM r JOIN metrics m ON m.run_id = r.run_id` + mwhere + `
	LEFT JOIN checks c ON c.run_id = r.run_id AND c.metric = m.path
	WHERE r.n <= ?
	ORDER BY r.suite, r.suite_entry, m.path, r.run_id`
	rows, err := ix.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("run index: trends: %w", err)
	}
	defer rows.Close()
	out := []Trend{}
	var cur *Trend
	for rows.Next() {
		var suite, entry, recipe, id, path, unit string
		var started int64
		var value float64
		var low, high sql.NullFloat64
		var outcome sql.NullString
		if err := rows.Scan(&suite, &entry, &recipe, &id, &started, &path, &value, &unit, &low, &high, &outcome); err != nil {
			return nil, fmt.Errorf("run index: trends: %w", err)
		}
		if cur == nil || cur.Suite != suite || cur.Entry != entry || cur.Metric != path {
			out = append(out, Trend{Suite: suite, Entry: entry, Recipe: recipe, Metric: path, Unit: unit, Points: []TrendPoint{}})
			cur = &out[len(out)-1]
		}
		n := len(cur.Points)
		if n == 0 || cur.Points[n-1].RunID != id {
			cur.Points = append(cur.Points, TrendPoint{RunID: id, Started: time.Unix(0, started).UTC(), Value: value})
			n++
		}
		p := &cur.Points[n-1]
		// Several expectations may check one metric: any regression
		// marks it; the first band given is drawn.
		if outcome.Valid {
			if outcome.String == "regression" {
				if !p.Regression {
					cur.Regressions++
				}
				p.Regression, p.Outcome = true, outcome.String
			} else if p.Outcome == "" || p.Outcome == "skipped" {
				p.Outcome = outcome.String
			}
		}
		if low.Valid && p.BandLow == nil {
			v := low.Float64
			p.BandLow = &v
		}
		if high.Valid && p.BandHigh == nil {
			v := high.Float64
			p.BandHigh = &v
		}
	}
	return out, rows.Err()
}

// SVG draws a trend with the reports' plotting code.
func (t Trend) SVG() string {
	pts := make([]results.TrendPoint, len(t.Points))
	for i, p := range t.Points {
		lo, hi := math.NaN(), math.NaN()
		if p.BandLow != nil && p.BandHigh != nil {
			lo, hi = *p.BandLow, *p.BandHigh
		}
		pts[i] = results.TrendPoint{X: float64(i + 1), Value: p.Value, Low: lo, High: hi, Regression: p.Regression}
	}
	y := t.Metric
	if t.Unit != "" {
		y += " (" + t.Unit + ")"
	}
	x := "Night"
	if n := len(t.Points); n > 0 {
		x = fmt.Sprintf("Night (1 = %s, %d = %s)", t.Points[0].Started.Format("2006-01-02"), n, t.Points[n-1].Started.Format("2006-01-02"))
	}
	fd := results.TrendFigure(t.Suite+"-"+t.Entry+"-"+t.Metric, t.Suite+" / "+t.Entry+": "+t.Metric, x, y, pts)
	return fd.SVG()
}
