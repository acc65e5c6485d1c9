// Package browsertest gives tests tabs of one headless Chromium per test
// binary, driven over the DevTools protocol (chromedp), and skips a test,
// saying why, where Chromium is not installed.
package browsertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"net/url"
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

// shared is the one headless browser of a test binary whose TestMain is
// Main: started by the first New, closed when the package's tests end.
var shared struct {
	mu      sync.Mutex
	main    bool // Main is running the tests
	ctx     context.Context
	cancel  func()
	started int // browsers started (a crashed one is started again)
}

// Main runs a package's tests (call it from TestMain: os.Exit(browsertest.Main(m)))
// and closes the browser their tabs shared, with its processes and profile
// directory, after the last test. A launch of the headless shell is about
// 2.1 s of CPU with all its processes, a tab in a running one a fraction of
// it: a package whose tests render several reports launches once.
func Main(m *testing.M) int {
	shared.mu.Lock()
	shared.main = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cancel != nil {
		shared.cancel()
		shared.cancel, shared.ctx = nil, nil
	}
	shared.main = false
	return code
}

// browser is the shared browser's context, started on first use (again if
// the one before has ended: a crash fails the test that saw it, not every
// test after it).
func browser(path string) (context.Context, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.main {
		return nil, errors.New("browsertest.New needs the package's TestMain to run its tests with browsertest.Main, which closes the shared browser after them")
	}
	if shared.ctx != nil && shared.ctx.Err() == nil {
		return shared.ctx, nil
	}
	if shared.cancel != nil {
		shared.cancel()
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 1200),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	cancel := func() {
		cancelBrowser()
		cancelAlloc()
	}
	// Start it here, with a context that lives as long as the binary's
	// tests (the first Run binds the browser's life to its context).
	if err := chromedp.Do(bctx); err != nil {
		cancel()
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	shared.ctx, shared.cancel = bctx, cancel
	shared.started++
	return bctx, nil
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
	return tab(t, path, timeout)
}

func tab(t testing.TB, path string, timeout time.Duration) context.Context {
	t.Helper()
	bctx, err := browser(path)
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

// idle holds the tabs Render has done with, to render the next page in:
// a new tab starts a renderer process (0.6 s of CPU a page, measured with
// a loss-sweep report), a tab that has one already loads a page for a
// fraction of that.
var idle []context.Context

// renderTab is an idle tab of the shared browser, or a new one.
func renderTab(t testing.TB, path string) context.Context {
	t.Helper()
	bctx, err := browser(path)
	if err != nil {
		t.Fatal(err)
	}
	shared.mu.Lock()
	for len(idle) > 0 {
		ctx := idle[len(idle)-1]
		idle = idle[:len(idle)-1]
		if ctx.Err() == nil {
			shared.mu.Unlock()
			return ctx
		}
	}
	shared.mu.Unlock()
	// The tab lives as long as the browser (Main closes both): its first
	// Run is on its own context, with no timeout.
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
	chromium, err := HeadlessPath()
	if err != nil {
		t.Log(err.Error() + "; the page is not rendered in a browser")
		return "", nil, false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	tab := renderTab(t, chromium)
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
	shared.mu.Lock()
	idle = append(idle, tab)
	shared.mu.Unlock()
	return dom, img, true
}
