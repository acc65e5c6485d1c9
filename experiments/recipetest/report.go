package recipetest

import (
	"image"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"testbed/internal/browsertest"
	"testbed/results"
)

// CheckReport checks a finished bundle's figures as a reader would: the
// figures named in want exist, none is empty, no series zig-zags (x goes
// back, or a line visits one x twice), every series has one legend entry,
// and each figure's SVG file is in the bundle. Then, when Chromium is
// installed, it opens report.html in a tab of the test binary's shared
// headless browser (its package's TestMain must run the tests with
// browsertest.Main): the DOM must hold every figure and a screenshot must
// show the first series' colour.
func CheckReport(t testing.TB, dir string, want ...string) []results.FigureData {
	t.Helper()
	figs := CheckFigures(t, dir, want...)
	screenshot(t, dir, len(figs))
	return figs
}

// CheckFigures is CheckReport without the browser: for a second run of a
// recipe whose report a test has rendered once already.
func CheckFigures(t testing.TB, dir string, want ...string) []results.FigureData {
	t.Helper()
	figs, err := results.ReadFigures(dir)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, fd := range figs {
		have[fd.Name] = true
		for _, p := range results.CheckFigure(fd) {
			t.Error(p)
		}
		svg, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(fd.Path)))
		if err != nil {
			t.Errorf("figure %s: %v", fd.Name, err)
			continue
		}
		if n := strings.Count(string(svg), "<g data-series="); n != len(fd.Series) {
			t.Errorf("%s draws %d series, the figure has %d", fd.Path, n, len(fd.Series))
		}
		for _, l := range fd.Legend {
			if !strings.Contains(string(svg), `data-legend="`+escapeAttr(l)+`"`) {
				t.Errorf("%s: no legend entry %q", fd.Path, l)
			}
		}
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("no figure %q in the bundle (have %v)", w, have)
		}
	}
	return figs
}

func escapeAttr(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&#34;")
		case '\'':
			b.WriteString("&#39;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// screenshot renders report.html in a tab of the test binary's shared
// headless Chromium (browsertest.Render: the package's TestMain runs its
// tests with browsertest.Main), if installed: the DOM must hold every
// figure, and a screenshot of the first figure (a 1000x2400 page's pixels
// cost about 0.1 s of CPU a report more to capture, encode and decode)
// must show the first series' colour.
func screenshot(t testing.TB, dir string, nfigs int) {
	t.Helper()
	dom, img, ok := browsertest.Render(t, filepath.Join(dir, "report.html"), 1000, 2400, "svg")
	if !ok {
		return
	}
	if n := len(regexp.MustCompile(`<svg\b`).FindAllString(dom, -1)); n != nfigs {
		t.Errorf("chromium's DOM of report.html has %d figures, want %d", n, nfigs)
	}
	// The first series of every figure is drawn in #1f77b4.
	if n := countColour(img, [3]int{0x1f, 0x77, 0xb4}); n < 30 {
		t.Errorf("the screenshot of report.html shows %d pixels of the first series' colour; the figures did not render", n)
	}
}

func countColour(img image.Image, c [3]int) int {
	near := func(a, b int) bool { return a-b <= 24 && b-a <= 24 }
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(int(r>>8), c[0]) && near(int(g>>8), c[1]) && near(int(bl>>8), c[2]) {
				n++
			}
		}
	}
	return n
}
