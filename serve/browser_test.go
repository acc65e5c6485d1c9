package serve

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"testbed/internal/browsertest"
)

// The trends page in a real browser: five nightly runs of a suite entry
// draw one plot whose band (the suite's baseline within tolerance) the
// browser lays out with a height, the five values as markers, and the one
// night the suite called a regression ringed.
func TestTrendPlotInChromium(t *testing.T) {
	ctx := browsertest.New(t, 90*time.Second)
	runs := t.TempDir()
	var ids []string
	for i, v := range []float64{101, 99, 103, 125, 100} {
		ids = append(ids, night(t, runs, i, v))
	}
	suiteReportFile(t, runs, ids, ids[3])
	ix := openTestIndex(t, runs)
	if _, err := ix.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(New(Options{Index: ix}).Handler())
	defer hs.Close()

	if err := chromedp.Do(ctx, chromedp.Navigate(hs.URL+"/trends")); err != nil {
		t.Fatal(err)
	}
	type plot struct {
		Points      string  `json:"points"`
		Regressions string  `json:"regressions"`
		Markers     int     `json:"markers"`
		Rings       int     `json:"rings"`
		BandHeight  float64 `json:"band_height"`
		BandWidth   float64 `json:"band_width"`
		Title       string  `json:"title"`
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[plot](`(() => {
		const s = document.querySelector('section.trend[data-entry="fct-small"]');
		if (!s) return {};
		const band = s.querySelector('svg polygon');
		const bb = band ? band.getBBox() : {height: 0, width: 0};
		return {
			points: s.dataset.points, regressions: s.dataset.regressions,
			markers: s.querySelectorAll('svg g[data-series] circle:not([data-marked])').length,
			rings: s.querySelectorAll('svg [data-marked="regression"]').length,
			band_height: bb.height, band_width: bb.width,
			title: s.querySelector('svg text').textContent,
		};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("trend plot as laid out: %+v", got)
	if got.Points != "5" || got.Regressions != "1" {
		t.Fatalf("trend section: %+v, want 5 nights and 1 regression", got)
	}
	if got.Markers != 5 || got.Rings != 1 {
		t.Errorf("plot draws %d value markers and %d regression rings, want 5 and 1", got.Markers, got.Rings)
	}
	if got.BandHeight <= 0 || got.BandWidth <= 0 {
		t.Errorf("the tolerance band has no area in the browser: %gx%g", got.BandWidth, got.BandHeight)
	}
}
