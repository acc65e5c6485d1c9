package browsertest

import (
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// page writes an HTML page holding, 500 pixels down (below a 400x300
// viewport), a 100x100 blue square (#1f77b4, as the reports draw their
// first series) whose style is extra, and returns its path.
func page(t *testing.T, name, extra string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	html := `<!DOCTYPE html><html><body style="margin:0;background:#fff"><div style="height:500px"></div><svg id="` + strings.TrimSuffix(name, ".html") +
		`" width="100" height="100" style="` + extra + `"><rect width="100" height="100" fill="#1f77b4"/></svg></body></html>`
	if err := os.WriteFile(p, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func blue(img image.Image) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 == 0x1f && g>>8 == 0x77 && bl>>8 == 0xb4 {
				n++
			}
		}
	}
	return n
}

// Pages rendered one after another share one launch of the browser and
// one tab, and each shows its own page: the square drawn fills the
// screenshot of it, the square hidden shows none, the viewport above the
// square none either, and each DOM is its page's.
func TestRenderSharesOneBrowserAndShowsEachPage(t *testing.T) {
	if _, err := HeadlessPath(); err != nil {
		t.Skip(err.Error())
	}
	before := connects(&shared)
	for _, c := range []struct {
		name, style, shot string
		size, pixels      int
	}{
		{"shown.html", "", "svg", 100, 100 * 100},
		{"hidden.html", "visibility:hidden", "svg", 100, 0},
		{"viewport.html", "", "", 400, 0},
		{"again.html", "", "svg", 100, 100 * 100},
	} {
		dom, img, ok := Render(t, page(t, c.name, c.style), 400, 300, c.shot)
		if !ok {
			t.Fatal("Render: chromium not found, though HeadlessPath found it")
		}
		if b := img.Bounds(); b.Dx() != c.size {
			t.Errorf("%s: screenshot %v, want %d pixels wide", c.name, b, c.size)
		}
		if n := blue(img); n != c.pixels {
			t.Errorf("%s: the screenshot shows %d blue pixels, want %d", c.name, n, c.pixels)
		}
		if id := `id="` + strings.TrimSuffix(c.name, ".html") + `"`; !strings.Contains(dom, id) {
			t.Errorf("%s: the DOM lacks %s:\n%s", c.name, id, dom)
		}
	}
	if n := connects(&shared) - before; n > 1 || connects(&shared) == 0 {
		t.Errorf("four pages took %d browsers (%d in all), want one shared", n, connects(&shared))
	}
	shared.mu.Lock()
	tabs := len(shared.idle)
	shared.mu.Unlock()
	if tabs != 1 {
		t.Errorf("%d idle tabs after four pages rendered one after another, want the one they shared", tabs)
	}
}

// A binary's browser that dies (a crash, the OOM killer) is started again
// for the next tab: one crash fails the test that saw it, not every test
// of the package after it. The test kills the browser: it uses one of its
// own, never the run's shared one (EnvDir).
func TestTabAfterTheBrowserDiedStartsAnother(t *testing.T) {
	path, err := HeadlessPath()
	if err != nil {
		t.Skip(err.Error())
	}
	p := &pool{main: true}
	defer p.close()
	p.tab(t, path, time.Minute)
	p.mu.Lock()
	bctx := p.ctx
	p.mu.Unlock()
	before := p.started
	if err := chromedp.FromContext(bctx).Browser.Process().Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-bctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the killed browser's context did not end")
	}
	if _, _, ok := p.render(t, page(t, "after.html", ""), 200, 200, "svg"); !ok {
		t.Fatal("Render: chromium not found")
	}
	if n := p.started - before; n != 1 {
		t.Errorf("%d launches after the browser died, want 1", n)
	}
}

// New refuses to start a shared browser in a binary whose TestMain is not
// Main: nothing would close it, and its processes and profile would outlive
// the tests.
func TestTabNeedsMain(t *testing.T) {
	shared.mu.Lock()
	shared.main = false
	shared.mu.Unlock()
	defer func() {
		shared.mu.Lock()
		shared.main = true
		shared.mu.Unlock()
	}()
	if _, err := shared.browser("/nonexistent/chromium"); err == nil || !strings.Contains(err.Error(), "browsertest.Main") {
		t.Errorf("browser without Main: %v, want an error naming browsertest.Main", err)
	}
}

func connects(p *pool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.connects
}
