package results

import "math"

// TrendPoint is one run's value of a metric in a trend: X orders the runs
// (night after night), Low and High bound the tolerance band the suite
// held the value to (NaN: no band for this run), Regression marks a value
// the suite called a regression.
type TrendPoint struct {
	X          float64
	Value      float64
	Low, High  float64
	Regression bool
}

// TrendFigure is a metric's trend drawn by the reports' plotting code: a
// line of the values, the tolerance band shaded behind it, and each value
// the suite marked as a regression ringed in red.
func TrendFigure(name, title, xLabel, yLabel string, pts []TrendPoint) FigureData {
	fd := FigureData{Figure: Figure{Name: name, Title: title, Kind: Line, Band: true}, XLabelText: xLabel, YLabelText: yLabel}
	s := SeriesData{Name: "value"}
	for _, p := range pts {
		lo, hi := p.Low, p.High
		if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
			// A one-sided bound: the band reaches the other side only
			// as far as the plotted values.
			lo, hi = math.NaN(), math.NaN()
		}
		s.Points = append(s.Points, Point{X: p.X, Y: p.Value, Low: lo, High: hi, Marked: p.Regression})
	}
	fd.Series = []SeriesData{s}
	fd.Legend = []string{"value, band: tolerance"}
	fd.ranges()
	return fd
}
