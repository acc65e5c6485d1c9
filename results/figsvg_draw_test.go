package results

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// recs builds a CSV's records: header first.
func recs(header string, rows ...string) [][]string {
	out := [][]string{strings.Split(header, ",")}
	for _, r := range rows {
		out = append(out, strings.Split(r, ","))
	}
	return out
}

var textRe = regexp.MustCompile(`<text x="([0-9.]+)" y="([0-9.]+)"[^>]*>([^<]*)</text>`)

// insideViewBox checks every horizontal text of the SVG starts and ends
// inside its width, at 7 px a character of 12 px text (6 of 10 px text),
// and inside its height.
func insideViewBox(t *testing.T, svg string) {
	t.Helper()
	var w, h float64
	fmt.Sscanf(svg[strings.Index(svg, `viewBox="`):], `viewBox="0 0 %g %g"`, &w, &h)
	for _, m := range textRe.FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		y, _ := strconv.ParseFloat(m[2], 64)
		cw := 7.0
		if strings.Contains(m[0], `font-size="10"`) {
			cw = 6
		}
		end := x + cw*float64(utf8.RuneCountInString(m[3]))
		if strings.Contains(m[0], `text-anchor="end"`) {
			end = x
		}
		if strings.Contains(m[0], `text-anchor="middle"`) {
			end = x + cw*float64(utf8.RuneCountInString(m[3]))/2
		}
		if x < 0 || end > w || y < 0 || y > h {
			t.Errorf("text %q at (%.0f, %.0f) to x %.0f: outside the %gx%g view box", m[3], x, y, end, w, h)
		}
	}
}

// A Bar category where no series has a value (the FEC-off reference of
// a marginal latency, a speed with no FEC-off mode) is not drawn as an
// empty slot that reads as 0; it is named under the legend. A series
// with no point gets no legend entry beside no mark.
func TestEmptyCategoriesAndSeriesAreNamedNotDrawn(t *testing.T) {
	bar := buildFigure(Figure{Name: "m", Kind: Bar, X: "link", Y: "marginal_ns", Series: []string{"mode"}},
		[]Field{{Name: "marginal_ns", Unit: "ns"}},
		recs("link,mode,marginal_ns",
			"25G none,ct,", "25G rs528,ct,240", "50G rs544,ct,", "100G rs528,ct,80",
			"25G none,sf,", "25G rs528,sf,241", "50G rs544,sf,", "100G rs528,sf,81"))
	if got := strings.Join(bar.Categories, "|"); got != "100G rs528|25G rs528" {
		t.Errorf("categories %q, want the two with a value", got)
	}
	if got := strings.Join(bar.Missing, "|"); got != "25G none|50G rs544" {
		t.Errorf("missing %q", got)
	}
	for _, s := range bar.Series {
		for _, p := range s.Points {
			if p.X < 0 || int(p.X) >= len(bar.Categories) || bar.Categories[int(p.X)] == "" {
				t.Errorf("series %s: bar at %g outside the %d categories", s.Name, p.X, len(bar.Categories))
			}
		}
	}
	svg := bar.SVG()
	if n := strings.Count(svg, `<rect x=`) - strings.Count(svg, `width="14" height="9"`); n != 4+1 { // 4 bars and the frame
		t.Errorf("%d rects besides the legend's, want 4 bars and the frame", n)
	}
	for _, c := range []string{"no value, not drawn:", "  25G none", "  50G rs544"} {
		if !strings.Contains(svg, ">"+c+"<") {
			t.Errorf("no %q under the legend", c)
		}
	}
	insideViewBox(t, svg)

	sc := buildFigure(Figure{Name: "s", Kind: Scatter, X: "cost_ns", Y: "margin_db", Series: []string{"fec"}},
		nil, recs("fec,cost_ns,margin_db", "none,0,", "fc,80,1.5", "rs528,240,3", "rs544,300,", "rs544-int,320,"))
	if got := strings.Join(sc.Legend, "|"); got != "fc|rs528" {
		t.Errorf("legend %q, want the two series with a point", got)
	}
	if got := strings.Join(sc.Missing, "|"); got != "none|rs544|rs544-int" {
		t.Errorf("missing %q", got)
	}
	if n := strings.Count(sc.SVG(), "<g data-series="); n != 2 {
		t.Errorf("%d series drawn, want 2", n)
	}
	// A figure with nothing to draw still says so, with its series.
	none := buildFigure(Figure{Name: "n", Kind: Line, X: "x", Y: "y", Series: []string{"s"}}, nil, recs("s,x,y", "a,1,", "b,2,"))
	if len(none.Missing) != 0 || !strings.Contains(none.SVG(), "no rows to draw") {
		t.Errorf("an empty figure: missing %v", none.Missing)
	}
}

// A series equal to an earlier one (within 2 px) is drawn dashed with
// open markers, so the one under it shows through; a series that only
// comes close is drawn as usual.
func TestSeriesDrawnOverAnEqualOneIsDashed(t *testing.T) {
	mk := func(second string) *FigureData {
		fd := buildFigure(Figure{Name: "g", Kind: Line, X: "n", Y: "goodput", Series: []string{"eps"}}, nil,
			recs("eps,n,goodput", "1,1,99.380", "1,10,99.381", "1,20,99.380", "2,1,99.381", "2,10,"+second, "2,20,99.381",
				"0,1,98", "0,10,90", "0,20,82"))
		return &fd
	}
	svg := mk("99.380").SVG()
	groups := strings.Split(svg[:strings.LastIndex(svg, "</g></g>")], "<g data-series=")[1:]
	if len(groups) != 3 {
		t.Fatalf("%d series", len(groups))
	}
	if strings.Contains(groups[0], "stroke-dasharray") || !strings.Contains(groups[1], `stroke-dasharray="5 4"`) || strings.Contains(groups[2], "stroke-dasharray") {
		t.Errorf("want only the second series dashed:\n%s", svg)
	}
	if !strings.Contains(groups[1], `fill="#fff"`) {
		t.Errorf("the covering series' markers are not open")
	}
	if !strings.Contains(svg, `data-note="covers"`) {
		t.Errorf("no note saying what the dashes mean")
	}
	insideViewBox(t, svg)
	if svg := mk("95").SVG(); strings.Contains(svg, "stroke-dasharray") || strings.Contains(svg, `data-note="covers"`) {
		t.Errorf("a series apart from the others drawn dashed")
	}
	// A shorter series under a longer one (no FEC: frames all lost past
	// 9 dB, so no BER there) is hidden too.
	fd := buildFigure(Figure{Name: "b", Kind: Line, X: "db", Y: "ber", Series: []string{"fec"}, LogY: true}, nil,
		recs("fec,db,ber", "none,7.5,3e-8", "none,8,6e-7", "rs528,7.5,3e-8", "rs528,8,6e-7", "rs528,9.5,3e-4"))
	groups = strings.Split(fd.SVG(), "<g data-series=")[1:]
	if len(groups) != 2 || strings.Contains(groups[0], "stroke-dasharray") || !strings.Contains(groups[1], "stroke-dasharray") {
		t.Errorf("the series over a shorter one it hides is not dashed")
	}
}

// A Step series goes through no upper bound: the held rate after a bound
// starts at the bound's x, not from the bound's marker.
func TestStepLineBreaksAtBounds(t *testing.T) {
	fd := buildFigure(Figure{Name: "t", Kind: Step, X: "t", Y: "loss", ZeroAt: "bound", LogY: true}, nil,
		recs("t,loss,bound", "1,0,1e-6", "2,0,1e-6", "3,1e-5,1e-6", "4,1e-4,1e-6", "5,0,1e-6"))
	svg := fd.SVG()
	i := strings.Index(svg, `<path d="M`)
	path := svg[i+9 : i+strings.Index(svg[i:], `"`+` fill`)]
	// Moves to bounds 1 and 2, to x(2) at rate 3, across to x(3), a
	// step to 4, and a move to bound 5.
	steps := regexp.MustCompile(`[MVHL]`).FindAllString(path, -1)
	if got := strings.Join(steps, ""); got != "MMMHVHM" {
		t.Errorf("path %s: commands %s, want MMMHVHM", path, got)
	}
	xs := regexp.MustCompile(`M([0-9.]+) `).FindAllStringSubmatch(path, -1)
	if len(xs) < 3 || xs[1][1] != xs[2][1] {
		t.Errorf("path %s: the rate after the bound at t=2 does not start at its x", path)
	}
}

// Upper bounds of several series at one point sit side by side.
func TestBoundsOfSeveralSeriesSideBySide(t *testing.T) {
	fd := buildFigure(Figure{Name: "e", Kind: Line, X: "loss", Y: "eff", ZeroAt: "high", Series: []string{"mode"}, LogX: true, LogY: true}, nil,
		recs("mode,loss,eff,high", "lg,1e-4,0,2e-7", "lg-nb,1e-4,0,2e-7", "lg2,1e-4,0,2e-7", "off,1e-4,1e-4,1.1e-4"))
	svg := fd.SVG()
	tri := regexp.MustCompile(`<path d="M([0-9.]+) ([0-9.]+)L[^"]*Z" fill="#fff"`).FindAllStringSubmatch(svg, -1)
	tri = tri[:len(tri)-1] // the legend's
	if len(tri) != 3 {
		t.Fatalf("%d bound markers, want 3", len(tri))
	}
	seen := map[string]bool{}
	for _, m := range tri {
		if seen[m[1]] {
			t.Errorf("two bound markers at x %s", m[1])
		}
		seen[m[1]] = true
	}
	if strings.Contains(svg, `data-note="covers"`) {
		t.Errorf("bounds alone taken for a series drawn over another")
	}
	// At the plot's right edge they go left, inside the frame.
	fd.XMin, fd.XMax = 1e-6, 1e-4
	svg = fd.SVG()
	var fx, fy, fw float64
	fmt.Sscanf(svg[strings.Index(svg, `<rect x="78"`):], `<rect x="%g" y="%g" width="%g"`, &fx, &fy, &fw)
	tri = regexp.MustCompile(`<path d="M[0-9.]+ [0-9.]+L([0-9.]+) [^"]*Z" fill="#fff"`).FindAllStringSubmatch(svg, -1)
	for _, m := range tri[:len(tri)-1] { // the last is the legend's
		// The first sits on the edge, its half-width of 4.5 px past it.
		if right, _ := strconv.ParseFloat(m[1], 64); right > fx+fw+5 || fw == 0 {
			t.Errorf("a bound marker's right corner at %.1f, past the plot (%g+%g)", right, fx, fw)
		}
	}
}

// A phase column marks each change along x with a labelled dashed line.
func TestPhaseChangesMarked(t *testing.T) {
	f := Figure{Name: "f", Kind: Line, X: "t_us", Y: "norm", Series: []string{"tiers"}, Phase: "phase"}
	fd := buildFigure(f, nil, recs("tiers,t_us,phase,norm",
		"1,0,before,1", "1,10,before,1", "1,20,link-down,0.8", "1,30,link-down,1", "1,40,link-up,1",
		"2,0,before,1", "2,20,link-down,0.9", "2,40,link-up,1"))
	if got := fmt.Sprint(fd.Marks); got != "[{20 link-down} {40 link-up}]" {
		t.Errorf("marks %s", got)
	}
	svg := fd.SVG()
	for _, l := range []string{"link-down", "link-up"} {
		if !strings.Contains(svg, `data-mark="`+l+`"`) || !strings.Contains(svg, ">"+l+"</text>") {
			t.Errorf("no labelled mark %q", l)
		}
	}
	tb := Table{Name: "tl", Fields: []Field{{Name: "t_us"}, {Name: "norm"}, {Name: "tiers"}}, Figures: []Figure{f}}
	if err := tb.validateFigures(); err == nil || !strings.Contains(err.Error(), `phase column "phase"`) {
		t.Errorf("a phase column not in the table: %v", err)
	}
}

// buildFigure turns a table's records, header first, into the figure's
// series.
func buildFigure(f Figure, fields []Field, recs [][]string) FigureData {
	b := newFigBuilder(f, fields)
	for _, r := range recs {
		b.add(r)
	}
	return b.finish()
}
