package recipetest

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"testbed/results"
)

// CheckReport checks a finished bundle's figures as a reader would: the
// figures named in want exist, none is empty, no series zig-zags (x goes
// back, or a line visits one x twice), every series has one legend entry,
// and each figure's SVG file is in the bundle. Then, when Chromium is
// installed, it opens report.html headless: the DOM must hold every figure
// and a screenshot must show the first series' colour.
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

// screenshot renders report.html in headless Chromium, if installed.
func screenshot(t testing.TB, dir string, nfigs int) {
	t.Helper()
	chromium, err := Headless()
	if err != nil {
		t.Log("chromium not installed (Debian: apt-get install chromium-headless-shell or chromium); the report is not rendered in a browser")
		return
	}
	report, err := filepath.Abs(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	// One launch both dumps the DOM (stdout) and takes the screenshot:
	// headless Chromium runs every command it is given on the loaded page
	// (two launches cost twice the 1-1.4 s of CPU a launch takes, in every
	// recipe test that checks its report).
	shot := filepath.Join(t.TempDir(), "shot.png")
	dom := string(Browse(t, chromium, report, "--dump-dom", "--screenshot="+shot, "--window-size=1000,2400", "--hide-scrollbars"))
	if n := len(regexp.MustCompile(`<svg\b`).FindAllString(dom, -1)); n != nfigs {
		t.Errorf("chromium's DOM of report.html has %d figures, want %d", n, nfigs)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
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

// Headless is the headless Chromium to render a page with: Chrome's
// headless shell where installed (Debian's chromium-headless-shell, the
// same Blink renderer without the browser around it), else chromium. A
// launch of the shell took 0.33 s of CPU where chromium --headless took
// 1.0 s for the same dump and screenshot of a loss-sweep report, as
// /usr/bin/time counts it (the processes the launch waits for); with
// every process of the launch counted (a cgroup of its own), 2.1-2.2 s
// against 5.1 s. Every recipe test that checks its report launches one.
// --single-process cut a launch of the shell to 1.4-1.5 s but is not
// used: 2 of 16 launches side by side died on their way out (exit 133,
// a trap, after the screenshot was written), and so did one of make
// test's.
func Headless() (string, error) {
	if p, err := exec.LookPath("chromium-headless-shell"); err == nil {
		return p, nil
	}
	return exec.LookPath("chromium")
}

// Browse opens the file at the absolute path file in headless Chromium
// (the binary at chromium: Headless's, or chromium), with the extra flags (--dump-dom,
// --screenshot=..., or both: one launch runs every command given), and
// returns what it printed; a failure fails t.
func Browse(t testing.TB, chromium, file string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--no-first-run", "--user-data-dir=" + filepath.Join(t.TempDir(), "profile")}, extra...)
	cmd := exec.CommandContext(ctx, chromium, append(args, "file://"+file)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, stderr.String())
	}
	return out
}
