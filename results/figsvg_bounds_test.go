package results

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// An upper bound (nothing observed) is drawn as an open marker, never
// joined by a line to a measured point, and it breaks the band: no band
// reaches from a bound down to the log axis.
func TestSVGBoundsBreakLinesAndBands(t *testing.T) {
	fd := &FigureData{Figure: Figure{Name: "f", Title: "t", Kind: Line, LogY: true, Band: true},
		Series: []SeriesData{{Name: "lg25", Points: []Point{
			{X: 1, Y: 1e-3, Low: 5e-4, High: 2e-3},
			{X: 2, Y: 2e-3, Low: 1e-3, High: 4e-3},
			{X: 3, Y: 1e-6, Low: 0, High: 1e-6, Bound: true},
			{X: 4, Y: 1e-6, Low: 0, High: 1e-6, Bound: true},
			{X: 5, Y: 1e-3, Low: 5e-4, High: 2e-3},
		}}},
		Legend: []string{"a legend entry long enough to have been clipped at the edge before"},
		XMin:   1, XMax: 5, YMin: 1e-7, YMax: 1e-2}
	svg := fd.SVG()
	if n := strings.Count(svg, "<polygon"); n != 1 {
		t.Errorf("%d band polygons, want 1 (points 1-2; the bounds break it)", n)
	}
	i := strings.Index(svg, `<path d="M`)
	path := svg[i : i+strings.Index(svg[i:], `"/>`)]
	if strings.Count(path, "L") != 1 || strings.Count(path, "M") != 4 {
		t.Errorf("line %s: want one segment joining the two measured points, each bound and the last point moved to", path)
	}
	if !strings.Contains(svg, "95% upper bound") {
		t.Errorf("bound note missing: %s", svg)
	}
	// The legend entry, cut to fit, ends inside the SVG at 7 px a character.
	j := strings.Index(svg, `data-legend=`)
	x := strings.LastIndex(svg[:j], `x="`)
	var lx float64
	fmt.Sscanf(svg[x:], `x="%g"`, &lx)
	label := svg[j+strings.Index(svg[j:], ">")+1 : j+strings.Index(svg[j:], "</text>")]
	if end := lx + 7*float64(utf8.RuneCountInString(label)); end > 760 {
		t.Errorf("legend entry %q ends at %.0f px, past the SVG's 760", label, end)
	}
}

// A histogram with a bin width takes it, aligned on its multiples,
// whatever its number of bins would give.
func TestHistogramBinWidth(t *testing.T) {
	e := histEdges([]float64{13.30, 13.38, 13.51, 14.49}, 30, 0.25)
	if len(e) < 2 || e[0] != 13.25 || e[1]-e[0] != 0.25 || e[len(e)-1] <= 14.49 {
		t.Errorf("edges %v", e)
	}
	if auto := histEdges([]float64{13.30, 13.38, 13.51, 14.49}, 30, 0); auto[1]-auto[0] >= 0.25 {
		t.Errorf("without a width, 30 bins over 1.2 us: %v", auto)
	}
}
