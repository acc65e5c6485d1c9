// Package browsertest starts headless Chromium for tests, driven over the
// DevTools protocol (chromedp), and skips a test, saying why, where
// Chromium is not installed.
package browsertest

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// New starts a headless Chromium for t and returns a browser context (a
// first tab) that ends with the test, or with timeout. The browser and its
// profile directory go when the test ends.
func New(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("chromium not installed (Debian: apt-get install chromium); skipping the browser test")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1200),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	ctx, cancel := context.WithTimeout(bctx, timeout)
	t.Cleanup(func() {
		cancel()
		cancelBrowser()
		cancelAlloc()
	})
	// Start the browser now, so a broken install fails here, plainly.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium %s: %v", path, err)
	}
	return ctx
}
