// Package browsertest gives tests tabs of one headless Chromium per test
// binary, or of one that the test binaries of a run share (EnvDir), driven
// over the DevTools protocol (chromedp), and skips a test, saying why,
// where Chromium is not installed.
package browsertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

var yes = true

// HeadlessPath is the headless Chromium a package's tests share: Chrome's
// headless shell where installed (Debian's chromium-headless-shell, the
// same Blink renderer without the browser around it; its launch, with
// every process it starts, is 2.1-2.2 s of CPU where chromium's is 5.1 s),
// else chromium.
func HeadlessPath() (string, error) {
	for _, name := range []string{"chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("chromium not installed (Debian: apt-get install chromium-headless-shell or chromium)")
}

// pool is a test binary's headless browser and the tabs its renders share:
// a browser of the binary's own (dir ""), or, with dir, the one that the
// test binaries of a run share through it (see EnvDir).
type pool struct {
	mu       sync.Mutex
	main     bool          // Main is running the tests (or a test made the pool)
	dir      string        // the run's shared browser's directory, "" for the binary's own
	idleFor  time.Duration // dir's browser ends once no binary has used it for this long
	ctx      context.Context
	cancel   func()
	started  int // browsers the pool started (a crashed one is started again)
	connects int // browsers it connected to, its own included
	// idle holds the tabs Render has done with, to render the next page
	// in: a new tab starts a renderer process (0.6 s of CPU a page,
	// measured with a loss-sweep report), a tab that has one already loads
	// a page for a fraction of that. The browser's first tab (ctx) is one.
	idle  []context.Context
	users *os.File // dir/users, flocked shared while the pool uses dir's browser
}

// shared is the test binary's pool, the one Main runs the tests with.
var shared pool

// Main runs a package's tests (call it from TestMain: os.Exit(browsertest.Main(m)))
// and closes the browser their tabs shared, with its processes and profile
// directory, after the last test. A launch of the headless shell is about
// 2.1 s of CPU with all its processes, a tab in a running one a fraction of
// it: a package whose tests render several reports launches once. Where
// EnvDir names a directory, the tests use the browser that the test
// binaries of the run share through it (started by the first that needs
// it), and Main closes only this binary's tabs and connection.
func Main(m *testing.M) int {
	dir, err := sharedDir()
	if err != nil {
		fmt.Fprintf(os.Stderr, "browsertest: %v; the tests use a browser of their own\n", err)
	}
	shared.mu.Lock()
	shared.main = true
	shared.dir, shared.idleFor = dir, sharedIdle
	shared.mu.Unlock()
	code := m.Run()
	shared.close()
	return code
}

// close closes the pool's tabs and its browser (its own) or its
// connection to it (a shared one, which runs on for the run's other
// binaries), and lets go of a shared browser's users lock.
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, tab := range p.idle {
		if tab != p.ctx {
			_ = chromedp.Cancel(tab)
		}
	}
	p.idle = nil
	if p.cancel != nil {
		p.cancel()
		p.cancel, p.ctx = nil, nil
	}
	if p.users != nil {
		p.users.Close()
		p.users = nil
	}
	p.main = false
}

// browser is the pool's browser's context, started or connected to on
// first use (again if the one before has ended: a crash fails the test
// that saw it, not every test after it).
func (p *pool) browser(path string) (context.Context, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.main {
		return nil, errors.New("browsertest.New needs the package's TestMain to run its tests with browsertest.Main, which closes the shared browser after them")
	}
	if p.ctx != nil && p.ctx.Err() == nil {
		return p.ctx, nil
	}
	if p.cancel != nil {
		p.cancel()
	}
	var (
		ctx    context.Context
		cancel func()
		err    error
	)
	if p.dir == "" {
		ctx, cancel, err = launch(path)
		if err == nil {
			p.started++
		}
	} else {
		ctx, cancel, err = p.sharedBrowser(path)
	}
	if err != nil {
		return nil, err
	}
	p.ctx, p.cancel = ctx, cancel
	p.connects++
	p.idle = append(p.idle, ctx)
	return ctx, nil
}

// flags are the browser's: chromedp's defaults (headless, sRGB colours, no
// first-run pages, ...), the same for a binary's own browser and a shared one.
func flags(path string) []chromedp.ExecAllocatorOption {
	return append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 1200),
	)
}

// launch starts a browser of the binary's own: its context, and the func
// that ends it with its processes and profile.
func launch(path string) (context.Context, func(), error) {
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), flags(path)...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	cancel := func() {
		cancelBrowser()
		cancelAlloc()
	}
	// Start it here, with a context that lives as long as the binary's
	// tests (the first Run binds the browser's life to its context).
	if err := chromedp.Do(bctx); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("start %s: %w", path, err)
	}
	return bctx, cancel, nil
}

// New opens a tab of the package's shared headless browser (see Main) for
// t: a context that ends with the test, or after timeout, and closes the
// tab when the test ends. It skips t where Chromium is not installed.
func New(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	path, err := HeadlessPath()
	if err != nil {
		t.Skip(err.Error() + "; skipping the browser test")
	}
	return shared.tab(t, path, timeout)
}

func (p *pool) tab(t testing.TB, path string, timeout time.Duration) context.Context {
	t.Helper()
	bctx, err := p.browser(path)
	if err != nil {
		t.Fatal(err)
	}
	tctx, cancelTab := chromedp.NewContext(bctx)
	ctx, cancel := context.WithTimeout(tctx, timeout)
	t.Cleanup(func() {
		cancel()
		cancelTab()
	})
	// Open the tab now, so that a browser gone wrong fails here, plainly.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab of %s: %v", path, err)
	}
	return ctx
}

// renderTab is an idle tab of the pool's browser, or a new one.
func (p *pool) renderTab(t testing.TB, path string) context.Context {
	t.Helper()
	bctx, err := p.browser(path)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	for len(p.idle) > 0 {
		ctx := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if ctx.Err() == nil {
			p.mu.Unlock()
			return ctx
		}
	}
	p.mu.Unlock()
	// The tab lives as long as the browser, or the connection to it (close
	// closes both): its first Run is on its own context, with no timeout.
	ctx, _ := chromedp.NewContext(bctx)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab of %s: %v", path, err)
	}
	return ctx
}

// Render opens the file at path (made absolute) in a tab of the shared
// browser (see New) with a viewport of width x height CSS pixels, and
// returns the document as the browser built it (document.documentElement's
// outerHTML once the page has loaded: what --dump-dom prints) and a
// screenshot: of the first element the CSS selector shot matches, or of the
// viewport where shot is "" or matches nothing. ok is false, with a log
// saying why, where Chromium is not installed; any other failure fails t.
// The tab renders other pages after this one (the same tab, Render's
// alone: New's tabs are the tests' own).
func Render(t testing.TB, path string, width, height int64, shot string) (dom string, img image.Image, ok bool) {
	t.Helper()
	return shared.render(t, path, width, height, shot)
}

func (p *pool) render(t testing.TB, path string, width, height int64, shot string) (dom string, img image.Image, ok bool) {
	t.Helper()
	chromium, err := HeadlessPath()
	if err != nil {
		t.Log(err.Error() + "; the page is not rendered in a browser")
		return "", nil, false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	tab := p.renderTab(t, chromium)
	ctx, cancel := context.WithTimeout(tab, 2*time.Minute)
	defer cancel()
	page := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height), chromedp.Navigate(page)); err != nil {
		t.Fatalf("chromium: open %s: %v", page, err)
	}
	dom, err = chromedp.Run(ctx, chromedp.Evaluate[string]("document.documentElement.outerHTML"))
	if err != nil {
		t.Fatalf("chromium: the DOM of %s: %v", page, err)
	}
	capture := chromedp.CaptureScreenshot()
	if shot != "" {
		// The element's box on the page, null where no element matches or
		// it has no box (display:none): the viewport's screenshot then.
		// chromedp.Screenshot would wait, until the timeout, for an
		// element to match and show.
		box, err := chromedp.Run(ctx, chromedp.Evaluate[*cdppage.Viewport](fmt.Sprintf(`(() => {
			const e = document.querySelector(%q);
			const r = e && e.getBoundingClientRect();
			return r && r.width > 0 && r.height > 0 ?
				{x: Math.round(r.left + scrollX), y: Math.round(r.top + scrollY), width: Math.round(r.width), height: Math.round(r.height), scale: 1} : null;
		})()`, shot)))
		if err != nil {
			t.Fatalf("chromium: find %q in %s: %v", shot, page, err)
		}
		if box != nil {
			capture = func(ctx context.Context, tg *chromedp.Target) ([]byte, error) {
				r, err := cdp.Call(ctx, tg, cdppage.CaptureScreenshot, cdppage.CaptureScreenshotParams{
					Format: cdppage.CaptureScreenshotFormatPng, CaptureBeyondViewport: &yes, FromSurface: &yes, Clip: box})
				return r.Data, err
			}
		}
	}
	b, err := chromedp.Run(ctx, capture)
	if err != nil {
		t.Fatalf("chromium: screenshot of %s (%q): %v", page, shot, err)
	}
	if img, err = png.Decode(bytes.NewReader(b)); err != nil {
		t.Fatalf("chromium: screenshot of %s: %v", page, err)
	}
	p.mu.Lock()
	p.idle = append(p.idle, tab)
	p.mu.Unlock()
	return dom, img, true
}
