package results

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

// dashes tell series apart beyond the palette's colours.
var dashes = []string{"", "6 3", "2 2", "8 3 2 3"}

// SVG draws the figure as a standalone SVG document: axes with human
// labels and units, decade ticks as 10^n on log axes, a legend entry per
// series, error bars or bands, and open markers for upper bounds.
func (fd *FigureData) SVG() string {
	p := newSVGPlot(fd)
	p.frame()
	p.phaseMarks()
	p.s.f(`<g clip-path="none">`)
	for i, ser := range fd.Series {
		p.series(i, ser)
	}
	p.s.f(`</g>`)
	p.legend()
	p.notes()
	p.s.f(`</svg>`)
	return p.s.String()
}

// The figure's fixed geometry: its width and its top, bottom and left
// margins (the right one holds the legend and grows with it).
const (
	svgW, svgT, svgB, svgL = 760.0, 34.0, 52.0, 78.0
	// legendCharW is the legend's width of a character: a generous 7 px
	// a character of the 12 px sans-serif (6.2 clipped wide labels at
	// the SVG's edge).
	legendCharW = 7.0
	// noteCharW is a note's width of a character under the legend, at
	// 10 px.
	noteCharW = 6.0
)

// coverNote is the note under the legend when a series is drawn over an
// equal one.
var coverNote = []string{"dashed, open: drawn over", "a series it hides (2 px)"}

// svgPlot is one figure being drawn: its size and scales, worked out
// from the legend and the notes before anything is drawn, and what the
// series drawn so far leave for the legend's notes.
type svgPlot struct {
	fd *FigureData
	s  svgBuf
	// H is the height; pw and ph the plot area's width and height.
	H, pw, ph float64
	// legendW is the legend's width; an entry longer than maxChars is
	// cut to fit.
	legendW  float64
	maxChars int
	// x0, x1, y0, y1 are the axes' ends, as log10 on a log axis.
	x0, x1, y0, y1 float64
	// missing are the notes on what had rows but nothing to draw.
	missing []string
	// covers marks the series drawn over an equal one.
	covers []bool
	// boundsDrawn are the bound markers drawn, where several at one
	// place sit side by side; bounds and marked say whether a bound or
	// a regression ring was drawn, for the legend's notes.
	boundsDrawn    [][2]float64
	bounds, marked bool
}

// newSVGPlot sizes the figure: the legend's width from its entries and
// notes, the height from their number, and the scales of the plot area
// left between.
func newSVGPlot(fd *FigureData) *svgPlot {
	p := &svgPlot{fd: fd}
	p.sizeLegend()
	p.missing = missingNotes(fd.Missing)
	for _, m := range p.missing {
		p.legendW = math.Max(p.legendW, 8+noteCharW*float64(utf8.RuneCountInString(m)))
	}
	p.H = math.Max(400, svgT+svgB+24+16*float64(len(fd.Legend))+12*float64(len(p.missing)+4))
	p.pw, p.ph = svgW-svgL-p.right(), p.H-svgT-svgB
	p.x0, p.x1 = axisValue(fd.XMin, fd.LogX), axisValue(fd.XMax, fd.LogX)
	p.y0, p.y1 = axisValue(fd.YMin, fd.LogY), axisValue(fd.YMax, fd.LogY)
	// A series drawn over an equal one is noted under the legend: room
	// for the note's width, found on the plot's first scale (its width
	// changes the pixels by a fraction).
	p.covers = fd.covering(p.sx, p.sy)
	if slices.Contains(p.covers, true) {
		for _, n := range coverNote {
			p.legendW = math.Max(p.legendW, 8+noteCharW*float64(utf8.RuneCountInString(n)))
		}
		p.pw = svgW - svgL - p.right()
	}
	return p
}

// sizeLegend sets the legend's width from its longest entry, at most
// 280 px, and the room for the bound's note under it.
func (p *svgPlot) sizeLegend() {
	p.legendW = 40.0
	for _, l := range p.fd.Legend {
		p.legendW = math.Max(p.legendW, 34+legendCharW*float64(utf8.RuneCountInString(l)))
	}
	p.legendW = math.Min(p.legendW, 280)
	p.maxChars = int((p.legendW - 34) / legendCharW)
	if p.fd.hasBound() {
		// Room for the note under the legend: "95% upper bound" at 10 px.
		p.legendW = math.Max(p.legendW, 20+6.5*float64(len("95% upper bound"))+8)
	}
}

// hasBound reports whether any point is drawn at its upper bound.
func (fd *FigureData) hasBound() bool {
	for _, ser := range fd.Series {
		for _, pt := range ser.Points {
			if pt.Bound {
				return true
			}
		}
	}
	return false
}

// missingNotes are the notes under the legend naming what had rows but
// nothing to draw, each cut to 40 characters.
func missingNotes(missing []string) []string {
	if len(missing) == 0 {
		return nil
	}
	out := []string{"no value, not drawn:"}
	for _, m := range missing {
		if r := []rune(m); len(r) > 40 {
			m = string(r[:39]) + "…"
		}
		out = append(out, "  "+m)
	}
	return out
}

// right is the right margin: the legend and its gap.
func (p *svgPlot) right() float64 { return p.legendW + 16 }

// axisValue is where v sits along an axis: its log10 on a log one.
func axisValue(v float64, log bool) float64 {
	if log {
		return math.Log10(v)
	}
	return v
}

// sx is the x pixel of v.
func (p *svgPlot) sx(v float64) float64 {
	return svgL + (axisValue(v, p.fd.LogX)-p.x0)/(p.x1-p.x0)*p.pw
}

// sy is the y pixel of v, held inside the plot area (a non-positive
// value on a log axis sits on its bottom).
func (p *svgPlot) sy(v float64) float64 {
	if p.fd.LogY && v <= 0 {
		return svgT + p.ph
	}
	y := svgT + p.ph - (axisValue(v, p.fd.LogY)-p.y0)/(p.y1-p.y0)*p.ph
	return math.Min(math.Max(y, svgT), svgT+p.ph)
}

// esc escapes text for the SVG.
func esc(s string) string { return template.HTMLEscapeString(s) }

// frame draws the document's head, the title, the grid with its ticks
// (a Bar figure's categories along x), the plot's border and the axes'
// labels.
func (p *svgPlot) frame() {
	fd, s := p.fd, &p.s
	L, T, W, H, pw, ph := svgL, svgT, svgW, p.H, p.pw, p.ph
	s.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Helvetica,Arial,sans-serif" font-size="12" data-figure="%s">`, W, H, W, H, esc(fd.Name))
	s.f(`<rect width="100%%" height="100%%" fill="#fff"/>`)
	s.f(`<text x="%.0f" y="20" font-size="14" font-weight="bold">%s</text>`, L, esc(fd.Title))
	for _, v := range axisTicks(fd.YMin, fd.YMax, fd.LogY) {
		y := p.sy(v)
		s.f(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e6e6e6"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, L, L+pw, y, y, L-5, y+4, tickText(v, fd.LogY))
	}
	if fd.Kind == Bar {
		p.categories()
	} else {
		for _, v := range axisTicks(fd.XMin, fd.XMax, fd.LogX) {
			x := p.sx(v)
			s.f(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e6e6e6"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, x, T, T+ph, x, T+ph+15, tickText(v, fd.LogX))
		}
	}
	s.f(`<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#444"/>`, L, T, pw, ph)
	s.f(`<text x="%.1f" y="%.1f" text-anchor="middle" font-size="13">%s</text>`, L+pw/2, H-10, esc(fd.XLabelText))
	s.f(`<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle" font-size="13">%s</text>`, T+ph/2, esc(fd.YLabelText))
	if fd.Empty() {
		s.f(`<text x="%.1f" y="%.1f" text-anchor="middle" fill="#b00">no rows to draw</text>`, L+pw/2, T+ph/2)
	}
}

// categories writes a Bar figure's categories under their bars, turned
// when more than ten would crowd the axis.
func (p *svgPlot) categories() {
	rot := len(p.fd.Categories) > 10
	for i, c := range p.fd.Categories {
		x := p.sx(float64(i) + 0.5)
		if rot {
			p.s.f(`<text transform="translate(%.1f %.1f) rotate(-60)" text-anchor="end" font-size="10">%s</text>`, x+3, svgT+p.ph+8, esc(c))
		} else {
			p.s.f(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, svgT+p.ph+15, esc(c))
		}
	}
}

// phaseMarks draws the phase changes: a dashed line and the new phase's
// name, read upwards from the top of the plot.
func (p *svgPlot) phaseMarks() {
	for _, m := range p.fd.Marks {
		if m.X < p.fd.XMin || m.X > p.fd.XMax {
			continue
		}
		x := p.sx(m.X)
		p.s.f(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#777" stroke-dasharray="3 3" data-mark="%s"/>`, x, x, svgT, svgT+p.ph, esc(m.Label))
		p.s.f(`<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="end" font-size="10" fill="#555">%s</text>`, x-3, svgT+4, esc(m.Label))
	}
}

// series draws series i as its figure's kind draws it, in a group named
// after it.
func (p *svgPlot) series(i int, ser SeriesData) {
	c := palette[i%len(palette)]
	p.s.f(`<g data-series="%s">`, esc(ser.Name))
	switch p.fd.Kind {
	case Bar:
		p.bars(i, ser.Points, c)
	case Histogram:
		p.histogram(ser.Points, c)
	default:
		dash := dashes[(i/len(palette))%len(dashes)]
		if p.covers[i] && dash == "" {
			dash = "5 4"
		}
		if p.fd.Band && len(ser.Points) > 1 {
			p.band(ser.Points, c)
		}
		if p.fd.Kind != Scatter && len(ser.Points) > 1 {
			p.curve(ser.Points, c, dash)
		}
		if p.fd.Kind == CCDF && len(ser.Points) > 0 {
			p.ccdfTail(ser.Points, c)
		}
		if !p.fd.Band {
			p.errorBars(ser.Points, c)
		}
		p.markers(i, ser.Points, c)
	}
	p.s.f(`</g>`)
}

// bars draws series i's bars, the series of a category side by side.
func (p *svgPlot) bars(i int, pts []Point, c string) {
	bw := 0.8 / float64(max(len(p.fd.Series), 1))
	for _, pt := range pts {
		xa := p.sx(pt.X + 0.1 + bw*float64(i))
		xb := p.sx(pt.X + 0.1 + bw*float64(i+1))
		ya, yb := p.sy(math.Max(pt.Y, 0)), p.sy(math.Max(p.fd.YMin, 0))
		p.s.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, xa, ya, math.Max(xb-xa-0.5, 0.5), math.Max(yb-ya, 0), c)
	}
}

// histogram draws a series' bins that hold a value, translucent when
// several series overlap.
func (p *svgPlot) histogram(pts []Point, c string) {
	op := 1.0
	if len(p.fd.Series) > 1 {
		op = 0.55
	}
	for _, pt := range pts {
		if pt.Y == 0 {
			continue
		}
		xa, xb := p.sx(pt.X), p.sx(pt.X2)
		ya, yb := p.sy(pt.Y), p.sy(math.Max(p.fd.YMin, 0))
		p.s.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="%.2f" stroke="#fff" stroke-width="0.5"/>`, xa, ya, math.Max(xb-xa, 0.5), math.Max(yb-ya, 0), c, op)
	}
}

// band shades a series' intervals: one polygon per run of points with an
// interval. A point where nothing was observed (drawn at its upper
// bound) or whose low end is off a log axis breaks the band, so no band
// reaches down to the axis and covers the plot.
func (p *svgPlot) band(pts []Point, c string) {
	var up, down []string
	flush := func() {
		if len(up) > 1 {
			p.s.f(`<polygon points="%s" fill="%s" fill-opacity="0.18" stroke="none"/>`, strings.Join(append(up, down...), " "), c)
		}
		up, down = nil, nil
	}
	for _, pt := range pts {
		if math.IsNaN(pt.Low) || math.IsNaN(pt.High) || pt.Bound || (p.fd.LogY && pt.Low <= 0) {
			flush()
			continue
		}
		up = append(up, fmt.Sprintf("%.1f,%.1f", p.sx(pt.X), p.sy(pt.High)))
		down = append([]string{fmt.Sprintf("%.1f,%.1f", p.sx(pt.X), p.sy(pt.Low))}, down...)
	}
	flush()
}

// curve joins a series' points as its kind reads them: straight lines,
// steps of a rate over its interval, or the rises and falls of a CDF or
// CCDF; never through a bound.
func (p *svgPlot) curve(pts []Point, c, dash string) {
	kind := p.fd.Kind
	var d strings.Builder
	for j, pt := range pts {
		x, y := p.sx(pt.X), p.sy(pt.Y)
		switch {
		case j == 0:
			fmt.Fprintf(&d, "M%.1f %.1f", x, y)
		case kind == CDF:
			// P(X <= x) rises at each value.
			fmt.Fprintf(&d, "H%.1f V%.1f", x, y)
		case pt.Bound:
			// An upper bound is not a measured value: no line
			// joins it to a measured point (or to another bound).
			fmt.Fprintf(&d, "M%.1f %.1f", x, y)
		case kind == Step && pts[j-1].Bound:
			// A measured rate after a bound holds over its own
			// interval only.
			fmt.Fprintf(&d, "M%.1f %.1fH%.1f", p.sx(pts[j-1].X), y, x)
		case kind == Step || kind == CCDF:
			// A rate over the interval ending at x; P(X >= x)
			// falls just after x.
			fmt.Fprintf(&d, "V%.1f H%.1f", y, x)
		case pts[j-1].Bound:
			fmt.Fprintf(&d, "M%.1f %.1f", x, y)
		default:
			fmt.Fprintf(&d, "L%.1f %.1f", x, y)
		}
	}
	da := ""
	if dash != "" {
		da = ` stroke-dasharray="` + dash + `"`
	}
	p.s.f(`<path d="%s" fill="none" stroke="%s" stroke-width="1.8"%s/>`, d.String(), c, da)
}

// ccdfTail drops a CCDF off its log axis past the slowest sample, where
// the fraction is zero; a lone point gets a marker too.
func (p *svgPlot) ccdfTail(pts []Point, c string) {
	pt := pts[len(pts)-1]
	p.s.f(`<path d="M%.1f %.1fV%.1f" fill="none" stroke="%s" stroke-width="1.8"/>`, p.sx(pt.X), p.sy(pt.Y), svgT+p.ph, c)
	if len(pts) == 1 {
		p.s.f(`<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, p.sx(pt.X), p.sy(pt.Y), c)
	}
}

// errorBars draws each measured point's interval, one end at the value
// when the other is missing.
func (p *svgPlot) errorBars(pts []Point, c string) {
	for _, pt := range pts {
		if math.IsNaN(pt.Low) && math.IsNaN(pt.High) || pt.Bound {
			continue
		}
		lo, hi := pt.Low, pt.High
		if math.IsNaN(lo) {
			lo = pt.Y
		}
		if math.IsNaN(hi) {
			hi = pt.Y
		}
		x := p.sx(pt.X)
		p.s.f(`<path d="M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f" stroke="%s" stroke-width="1" fill="none"/>`,
			x, p.sy(lo), p.sy(hi), x-3, p.sy(lo), x+3, x-3, p.sy(hi), x+3, c)
	}
}

// markers draws series i's points: a red ring on a flagged one, an open
// triangle on a bound, and the series' marker on a scatter or a short
// line.
func (p *svgPlot) markers(i int, pts []Point, c string) {
	kind := p.fd.Kind
	marker := kind == Scatter || ((kind == Line || kind == Step) && len(pts) <= 60)
	for _, pt := range pts {
		x, y := p.sx(pt.X), p.sy(pt.Y)
		if pt.Marked {
			p.marked = true
			p.s.f(`<circle cx="%.1f" cy="%.1f" r="7" fill="none" stroke="#d00" stroke-width="2" data-marked="regression"/>`, x, y)
		}
		switch {
		case pt.Bound:
			p.bound(x, y, c)
		case marker:
			r := 3.0
			if len(pts) > 40 {
				r = 2.2
			}
			p.s.f(`%s`, markerSVG(i, x, y, r, c, p.covers[i]))
		}
	}
}

// bound draws an upper bound at (x, y): an open triangle pointing down,
// the value is below. Bound markers of several series at one place sit
// side by side, 8 px apart, so none hides another (LinkGuardian with and
// without ordering, both losing nothing over the same frames).
func (p *svgPlot) bound(x, y float64, c string) {
	p.bounds = true
	n := 0
	for _, b := range p.boundsDrawn {
		if math.Abs(b[0]-x) < 4 && math.Abs(b[1]-y) < 4 {
			n++
		}
	}
	p.boundsDrawn = append(p.boundsDrawn, [2]float64{x, y})
	if x+8*float64(n)+4.5 > svgL+p.pw {
		x -= 8 * float64(n) // at the right edge: to the left
	} else {
		x += 8 * float64(n)
	}
	p.s.f(`<path d="M%.1f %.1fL%.1f %.1fL%.1f %.1fZ" fill="#fff" stroke="%s" stroke-width="1.5"/>`, x-4.5, y-3.5, x+4.5, y-3.5, x, y+4.5, c)
}

// legendX is the legend's left edge.
func (p *svgPlot) legendX() float64 { return svgL + p.pw + 14 }

// legend draws one entry per series: a swatch, or the series' line with
// its marker, and its name cut to fit.
func (p *svgPlot) legend() {
	fd, lx := p.fd, p.legendX()
	for i, name := range fd.Legend {
		c := palette[i%len(palette)]
		ly := svgT + 12 + float64(i)*16
		if fd.Kind == Bar || fd.Kind == Histogram {
			p.s.f(`<rect x="%.0f" y="%.1f" width="14" height="9" fill="%s"/>`, lx, ly-8, c)
		} else {
			covered := i < len(p.covers) && p.covers[i]
			da := ""
			if covered {
				da = ` stroke-dasharray="4 2"`
			}
			p.s.f(`<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"%s/>`, lx, lx+16, ly-4, ly-4, c, da)
			if fd.Kind == Line || fd.Kind == Scatter {
				p.s.f(`%s`, markerSVG(i, lx+8, ly-4, 3, c, covered))
			}
		}
		label := name
		if r := []rune(label); len(r) > p.maxChars {
			label = string(r[:p.maxChars-1]) + "…"
		}
		p.s.f(`<text x="%.0f" y="%.1f" data-legend="%s">%s</text>`, lx+20, ly, esc(name), esc(label))
	}
}

// notes writes under the legend what is drawn but not a series (bounds,
// a series drawn over another, regressions) and what had rows but
// nothing to draw.
func (p *svgPlot) notes() {
	lx := p.legendX()
	top := svgT + 12 + float64(len(p.fd.Legend))*16 + 6
	ly := top
	if p.bounds {
		p.s.f(`<path d="M%.1f %.1fL%.1f %.1fL%.1f %.1fZ" fill="#fff" stroke="#444"/><text x="%.0f" y="%.1f" font-size="10">none observed:</text><text x="%.0f" y="%.1f" font-size="10">95%% upper bound</text>`,
			lx+3.5, ly-8, lx+12.5, ly-8, lx+8, ly, lx+20, ly, lx+20, ly+12)
		ly += 28
	}
	if slices.Contains(p.covers, true) {
		p.s.f(`<text x="%.0f" y="%.1f" font-size="10" data-note="covers">%s</text><text x="%.0f" y="%.1f" font-size="10">%s</text>`,
			lx, ly, coverNote[0], lx, ly+12, coverNote[1])
		ly += 28
	}
	for j, m := range p.missing {
		p.s.f(`<text x="%.0f" y="%.1f" font-size="10" fill="#555" xml:space="preserve" data-missing="%d">%s</text>`, lx, ly+12*float64(j), j, esc(m))
	}
	if p.marked {
		ly := top
		if p.bounds {
			ly += 30
		}
		p.s.f(`<circle cx="%.1f" cy="%.1f" r="6" fill="none" stroke="#d00" stroke-width="2"/><text x="%.0f" y="%.1f" font-size="10">regression</text>`, lx+8, ly-4, lx+20, ly)
	}
}

// markerSVG draws series i's marker: a circle, square, diamond or
// triangle in turn, so overlapping series stay apart.
// An open marker (white inside, a little larger) is drawn over a series
// it would otherwise hide.
func markerSVG(i int, x, y, r float64, c string, open bool) string {
	fill := `fill="` + c + `"`
	if open {
		r += 1.5
		fill = `fill="#fff" fill-opacity="0.3" stroke="` + c + `" stroke-width="1.5"`
	}
	switch i % 4 {
	case 1:
		return fmt.Sprintf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" %s/>`, x-r, y-r, 2*r, 2*r, fill)
	case 2:
		r *= 1.3
		return fmt.Sprintf(`<path d="M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ" %s/>`, x, y-r, x+r, y, x, y+r, x-r, y, fill)
	case 3:
		r *= 1.3
		return fmt.Sprintf(`<path d="M%.1f %.1fL%.1f %.1fL%.1f %.1fZ" %s/>`, x, y-r, x+r, y+r*0.8, x-r, y+r*0.8, fill)
	}
	return fmt.Sprintf(`<circle cx="%.1f" cy="%.1f" r="%.1f" %s/>`, x, y, r, fill)
}

// covering reports, per series, whether it is drawn over an earlier one
// that it would hide: every measured point of the earlier series lies
// within 2 px of a point of the later ones (two packet-switch sizes whose
// goodputs agree to 1e-5; one link's pre-FEC BER under two FEC modes).
// Every later series that hides some of its points is marked. Bars and
// histograms sit side by side or translucent, so nothing hides there.
func (fd *FigureData) covering(sx, sy func(float64) float64) []bool {
	out := make([]bool, len(fd.Series))
	if fd.Kind == Bar || fd.Kind == Histogram {
		return out
	}
	type px struct{ x, y float64 }
	drawn := make([][]px, len(fd.Series))
	for i, s := range fd.Series {
		for _, p := range s.Points {
			if !p.Bound {
				drawn[i] = append(drawn[i], px{sx(p.X), sy(p.Y)})
			}
		}
		// Points are in x order; pixels too, but for ties.
		sort.SliceStable(drawn[i], func(a, b int) bool { return drawn[i][a].x < drawn[i][b].x })
	}
	near := func(b []px, a px) bool {
		for n := sort.Search(len(b), func(n int) bool { return b[n].x >= a.x-2 }); n < len(b) && b[n].x <= a.x+2; n++ {
			if math.Abs(b[n].y-a.y) <= 2 {
				return true
			}
		}
		return false
	}
	for k := range fd.Series {
		if len(drawn[k]) == 0 {
			continue
		}
		hiders := map[int]bool{}
		hidden := true
		for _, a := range drawn[k] {
			found := false
			for j := k + 1; j < len(fd.Series); j++ {
				if near(drawn[j], a) {
					found, hiders[j] = true, true
				}
			}
			if !found {
				hidden = false
				break
			}
		}
		if hidden {
			for j := range hiders {
				out[j] = true
			}
		}
	}
	return out
}

// maxTicks bounds an axis's ticks: the steps below give at most a dozen,
// but added to a value far above them (1e17 + 5) a step can vanish, and
// an axis down to 0 has decades without end.
const maxTicks = 64

// axisTicks are the decades of a log axis (every other one past ten), or
// five to ten round values of a linear one.
func axisTicks(lo, hi float64, log bool) []float64 {
	var out []float64
	if log {
		a, b := math.Round(math.Log10(lo)), math.Round(math.Log10(hi))
		if math.IsInf(a, 0) || math.IsNaN(a) || math.IsInf(b, 0) || math.IsNaN(b) {
			return nil
		}
		step := math.Max(1, math.Ceil((b-a)/10))
		for i := 0; i < maxTicks; i++ {
			e := a + float64(i)*step
			if e > b+1e-9 {
				break
			}
			out = append(out, math.Pow(10, e))
		}
		return out
	}
	step := niceStep((hi - lo) / 7)
	first := math.Ceil(lo/step-1e-9) * step
	for i := 0; i < maxTicks; i++ {
		v := first + float64(i)*step
		if !(v <= hi+step*1e-9) {
			break
		}
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		out = append(out, v)
	}
	return out
}

// tickText writes a decade as 10 with a superscript exponent, a linear
// value in the shortest form.
func tickText(v float64, log bool) string {
	if log {
		e := int(math.Round(math.Log10(v)))
		switch e {
		case 0:
			return "1"
		case 1:
			return "10"
		}
		return fmt.Sprintf(`10<tspan dy="-6" font-size="9">%d</tspan>`, e)
	}
	return strconv.FormatFloat(v, 'g', 5, 64)
}
