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
	const W, T, B, L = 760.0, 34.0, 52.0, 78.0
	// The legend's width from its longest entry at a generous 7 px a
	// character of the 12 px sans-serif (6.2 clipped wide labels at the
	// SVG's edge); an entry longer than the widest legend is cut to fit.
	const charW = 7.0
	legendW := 40.0
	for _, l := range fd.Legend {
		legendW = math.Max(legendW, 34+charW*float64(utf8.RuneCountInString(l)))
	}
	legendW = math.Min(legendW, 280)
	maxChars := int((legendW - 34) / charW)
	for _, ser := range fd.Series {
		for _, p := range ser.Points {
			if p.Bound {
				// Room for the note under the legend: "95% upper bound"
				// at 10 px.
				legendW = math.Max(legendW, 20+6.5*float64(len("95% upper bound"))+8)
			}
		}
	}
	// Notes under the legend, at 10 px (about 6 px a character): what is
	// drawn but not a series (bounds, a series on top of another) and
	// what had rows but nothing to draw.
	const noteW = 6.0
	var missing []string
	if len(fd.Missing) > 0 {
		missing = append(missing, "no value, not drawn:")
		for _, m := range fd.Missing {
			if r := []rune(m); len(r) > 40 {
				m = string(r[:39]) + "…"
			}
			missing = append(missing, "  "+m)
		}
		for _, m := range missing {
			legendW = math.Max(legendW, 8+noteW*float64(utf8.RuneCountInString(m)))
		}
	}
	R := legendW + 16
	H := math.Max(400, T+B+24+16*float64(len(fd.Legend))+12*float64(len(missing)+4))
	pw, ph := W-L-R, H-T-B
	tx := func(v float64, log bool) float64 {
		if log {
			return math.Log10(v)
		}
		return v
	}
	x0, x1 := tx(fd.XMin, fd.LogX), tx(fd.XMax, fd.LogX)
	y0, y1 := tx(fd.YMin, fd.LogY), tx(fd.YMax, fd.LogY)
	sx := func(v float64) float64 { return L + (tx(v, fd.LogX)-x0)/(x1-x0)*pw }
	sy := func(v float64) float64 {
		if fd.LogY && v <= 0 {
			return T + ph
		}
		y := T + ph - (tx(v, fd.LogY)-y0)/(y1-y0)*ph
		return math.Min(math.Max(y, T), T+ph)
	}
	// A series drawn over an equal one is noted under the legend: room
	// for the note's width, found on the plot's first scale (its width
	// changes the pixels by a fraction).
	covers := fd.covering(sx, sy)
	coverNote := []string{"dashed, open: drawn over", "a series it hides (2 px)"}
	if slices.Contains(covers, true) {
		for _, n := range coverNote {
			legendW = math.Max(legendW, 8+noteW*float64(utf8.RuneCountInString(n)))
		}
		R = legendW + 16
		pw = W - L - R
	}
	esc := template.HTMLEscapeString
	var s svgBuf
	s.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Helvetica,Arial,sans-serif" font-size="12" data-figure="%s">`, W, H, W, H, esc(fd.Name))
	s.f(`<rect width="100%%" height="100%%" fill="#fff"/>`)
	s.f(`<text x="%.0f" y="20" font-size="14" font-weight="bold">%s</text>`, L, esc(fd.Title))
	// Grid and ticks.
	for _, v := range axisTicks(fd.YMin, fd.YMax, fd.LogY) {
		y := sy(v)
		s.f(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e6e6e6"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, L, L+pw, y, y, L-5, y+4, tickText(v, fd.LogY))
	}
	if fd.Kind == Bar {
		rot := len(fd.Categories) > 10
		for i, c := range fd.Categories {
			x := sx(float64(i) + 0.5)
			if rot {
				s.f(`<text transform="translate(%.1f %.1f) rotate(-60)" text-anchor="end" font-size="10">%s</text>`, x+3, T+ph+8, esc(c))
			} else {
				s.f(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, T+ph+15, esc(c))
			}
		}
	} else {
		for _, v := range axisTicks(fd.XMin, fd.XMax, fd.LogX) {
			x := sx(v)
			s.f(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e6e6e6"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, x, T, T+ph, x, T+ph+15, tickText(v, fd.LogX))
		}
	}
	s.f(`<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#444"/>`, L, T, pw, ph)
	s.f(`<text x="%.1f" y="%.1f" text-anchor="middle" font-size="13">%s</text>`, L+pw/2, H-10, esc(fd.XLabelText))
	s.f(`<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle" font-size="13">%s</text>`, T+ph/2, esc(fd.YLabelText))
	if fd.Empty() {
		s.f(`<text x="%.1f" y="%.1f" text-anchor="middle" fill="#b00">no rows to draw</text>`, L+pw/2, T+ph/2)
	}
	// Phase changes: a dashed line and the new phase's name, read
	// upwards from the top of the plot.
	for _, m := range fd.Marks {
		if m.X < fd.XMin || m.X > fd.XMax {
			continue
		}
		x := sx(m.X)
		s.f(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#777" stroke-dasharray="3 3" data-mark="%s"/>`, x, x, T, T+ph, esc(m.Label))
		s.f(`<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="end" font-size="10" fill="#555">%s</text>`, x-3, T+4, esc(m.Label))
	}
	s.f(`<g clip-path="none">`)
	// Bound markers of several series at one place sit side by side, 8 px
	// apart, so none hides another (LinkGuardian with and without
	// ordering, both losing nothing over the same frames).
	var boundsDrawn [][2]float64
	nser := len(fd.Series)
	bounds, marked := false, false
	for i, ser := range fd.Series {
		c := palette[i%len(palette)]
		dash := dashes[(i/len(palette))%len(dashes)]
		if covers[i] && dash == "" {
			dash = "5 4"
		}
		s.f(`<g data-series="%s">`, esc(ser.Name))
		pts := ser.Points
		switch fd.Kind {
		case Bar:
			bw := 0.8 / float64(max(nser, 1))
			for _, p := range pts {
				xa := sx(p.X + 0.1 + bw*float64(i))
				xb := sx(p.X + 0.1 + bw*float64(i+1))
				ya, yb := sy(math.Max(p.Y, 0)), sy(math.Max(fd.YMin, 0))
				s.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, xa, ya, math.Max(xb-xa-0.5, 0.5), math.Max(yb-ya, 0), c)
			}
		case Histogram:
			op := 1.0
			if nser > 1 {
				op = 0.55
			}
			for _, p := range pts {
				if p.Y == 0 {
					continue
				}
				xa, xb := sx(p.X), sx(p.X2)
				ya, yb := sy(p.Y), sy(math.Max(fd.YMin, 0))
				s.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="%.2f" stroke="#fff" stroke-width="0.5"/>`, xa, ya, math.Max(xb-xa, 0.5), math.Max(yb-ya, 0), c, op)
			}
		default:
			if fd.Band && len(pts) > 1 {
				// One polygon per run of points with an interval: a point
				// where nothing was observed (drawn at its upper bound) or
				// whose low end is off a log axis breaks the band, so no
				// band reaches down to the axis and covers the plot.
				var up, down []string
				flush := func() {
					if len(up) > 1 {
						s.f(`<polygon points="%s" fill="%s" fill-opacity="0.18" stroke="none"/>`, strings.Join(append(up, down...), " "), c)
					}
					up, down = nil, nil
				}
				for _, p := range pts {
					if math.IsNaN(p.Low) || math.IsNaN(p.High) || p.Bound || (fd.LogY && p.Low <= 0) {
						flush()
						continue
					}
					up = append(up, fmt.Sprintf("%.1f,%.1f", sx(p.X), sy(p.High)))
					down = append([]string{fmt.Sprintf("%.1f,%.1f", sx(p.X), sy(p.Low))}, down...)
				}
				flush()
			}
			if fd.Kind != Scatter && len(pts) > 1 {
				var d strings.Builder
				for j, p := range pts {
					x, y := sx(p.X), sy(p.Y)
					switch {
					case j == 0:
						fmt.Fprintf(&d, "M%.1f %.1f", x, y)
					case fd.Kind == CDF:
						// P(X <= x) rises at each value.
						fmt.Fprintf(&d, "H%.1f V%.1f", x, y)
					case p.Bound:
						// An upper bound is not a measured value: no line
						// joins it to a measured point (or to another bound).
						fmt.Fprintf(&d, "M%.1f %.1f", x, y)
					case fd.Kind == Step && pts[j-1].Bound:
						// A measured rate after a bound holds over its own
						// interval only.
						fmt.Fprintf(&d, "M%.1f %.1fH%.1f", sx(pts[j-1].X), y, x)
					case fd.Kind == Step || fd.Kind == CCDF:
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
				s.f(`<path d="%s" fill="none" stroke="%s" stroke-width="1.8"%s/>`, d.String(), c, da)
			}
			if fd.Kind == CCDF && len(pts) > 0 {
				// Past the slowest sample the fraction is zero: the curve
				// falls off the log axis.
				p := pts[len(pts)-1]
				s.f(`<path d="M%.1f %.1fV%.1f" fill="none" stroke="%s" stroke-width="1.8"/>`, sx(p.X), sy(p.Y), T+ph, c)
				if len(pts) == 1 {
					s.f(`<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, sx(p.X), sy(p.Y), c)
				}
			}
			if !fd.Band {
				for _, p := range pts {
					if math.IsNaN(p.Low) && math.IsNaN(p.High) || p.Bound {
						continue
					}
					lo, hi := p.Low, p.High
					if math.IsNaN(lo) {
						lo = p.Y
					}
					if math.IsNaN(hi) {
						hi = p.Y
					}
					x := sx(p.X)
					s.f(`<path d="M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f" stroke="%s" stroke-width="1" fill="none"/>`,
						x, sy(lo), sy(hi), x-3, sy(lo), x+3, x-3, sy(hi), x+3, c)
				}
			}
			marker := fd.Kind == Scatter || ((fd.Kind == Line || fd.Kind == Step) && len(pts) <= 60)
			for _, p := range pts {
				x, y := sx(p.X), sy(p.Y)
				if p.Marked {
					marked = true
					s.f(`<circle cx="%.1f" cy="%.1f" r="7" fill="none" stroke="#d00" stroke-width="2" data-marked="regression"/>`, x, y)
				}
				switch {
				case p.Bound:
					bounds = true
					n := 0
					for _, b := range boundsDrawn {
						if math.Abs(b[0]-x) < 4 && math.Abs(b[1]-y) < 4 {
							n++
						}
					}
					boundsDrawn = append(boundsDrawn, [2]float64{x, y})
					if x+8*float64(n)+4.5 > L+pw {
						x -= 8 * float64(n) // at the right edge: to the left
					} else {
						x += 8 * float64(n)
					}
					// An open triangle pointing down: the value is below.
					s.f(`<path d="M%.1f %.1fL%.1f %.1fL%.1f %.1fZ" fill="#fff" stroke="%s" stroke-width="1.5"/>`, x-4.5, y-3.5, x+4.5, y-3.5, x, y+4.5, c)
				case marker:
					r := 3.0
					if len(pts) > 40 {
						r = 2.2
					}
					s.f(`%s`, markerSVG(i, x, y, r, c, covers[i]))
				}
			}
		}
		s.f(`</g>`)
	}
	s.f(`</g>`)
	// Legend: one entry per series.
	lx := L + pw + 14
	for i, name := range fd.Legend {
		c := palette[i%len(palette)]
		ly := T + 12 + float64(i)*16
		if fd.Kind == Bar || fd.Kind == Histogram {
			s.f(`<rect x="%.0f" y="%.1f" width="14" height="9" fill="%s"/>`, lx, ly-8, c)
		} else {
			da := ""
			if i < len(covers) && covers[i] {
				da = ` stroke-dasharray="4 2"`
			}
			s.f(`<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"%s/>`, lx, lx+16, ly-4, ly-4, c, da)
			if fd.Kind == Line || fd.Kind == Scatter {
				s.f(`%s`, markerSVG(i, lx+8, ly-4, 3, c, i < len(covers) && covers[i]))
			}
		}
		label := name
		if r := []rune(label); len(r) > maxChars {
			label = string(r[:maxChars-1]) + "…"
		}
		s.f(`<text x="%.0f" y="%.1f" data-legend="%s">%s</text>`, lx+20, ly, esc(name), esc(label))
	}
	ly := T + 12 + float64(len(fd.Legend))*16 + 6
	if bounds {
		s.f(`<path d="M%.1f %.1fL%.1f %.1fL%.1f %.1fZ" fill="#fff" stroke="#444"/><text x="%.0f" y="%.1f" font-size="10">none observed:</text><text x="%.0f" y="%.1f" font-size="10">95%% upper bound</text>`,
			lx+3.5, ly-8, lx+12.5, ly-8, lx+8, ly, lx+20, ly, lx+20, ly+12)
		ly += 28
	}
	if slices.Contains(covers, true) {
		s.f(`<text x="%.0f" y="%.1f" font-size="10" data-note="covers">%s</text><text x="%.0f" y="%.1f" font-size="10">%s</text>`,
			lx, ly, coverNote[0], lx, ly+12, coverNote[1])
		ly += 28
	}
	for j, m := range missing {
		s.f(`<text x="%.0f" y="%.1f" font-size="10" fill="#555" xml:space="preserve" data-missing="%d">%s</text>`, lx, ly+12*float64(j), j, esc(m))
	}
	if marked {
		ly := T + 12 + float64(len(fd.Legend))*16 + 6
		if bounds {
			ly += 30
		}
		s.f(`<circle cx="%.1f" cy="%.1f" r="6" fill="none" stroke="#d00" stroke-width="2"/><text x="%.0f" y="%.1f" font-size="10">regression</text>`, lx+8, ly-4, lx+20, ly)
	}
	s.f(`</svg>`)
	return s.String()
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

// axisTicks are the decades of a log axis (every other one past ten), or
// five to ten round values of a linear one.
func axisTicks(lo, hi float64, log bool) []float64 {
	var out []float64
	if log {
		a, b := math.Round(math.Log10(lo)), math.Round(math.Log10(hi))
		step := math.Max(1, math.Ceil((b-a)/10))
		for e := a; e <= b+1e-9; e += step {
			out = append(out, math.Pow(10, e))
		}
		return out
	}
	step := niceStep((hi - lo) / 7)
	for v := math.Ceil(lo/step-1e-9) * step; v <= hi+step*1e-9; v += step {
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
