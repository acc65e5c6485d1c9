package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"testbed/internal/browsertest"
	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/serve"
)

// testbed serve in a real browser while a sweep runs against the simulated
// lab: the lab page, left open, shows the VOA's lease appear and go again
// without a reload; the run's page shows its steps advancing as the bundle
// is written, and its end. Its name holds "Lease": the Makefile's RACE_RUN
// runs it under the race detector (the server's streams, index and lease
// reads meet there).
func TestServeShowsALiveRunAndItsLeaseInChromium(t *testing.T) {
	// The browser's time bounds the whole, a guard against a hang: the
	// sweep's 22 steps took up to two minutes under -race at load 20-30.
	const browserTime = 5 * time.Minute
	bctx := browsertest.New(t, browserTime)
	lab, inv := startLab(t, 11)
	// Every VOA reply comes 60 ms late, so the sweep's steps last long
	// enough to be watched (the browser waits by asking, never by time).
	lab.Faults("voa1").SetDelay(60 * time.Millisecond)
	runs, state := dirs(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ix, err := serve.OpenIndex(ctx, filepath.Join(t.TempDir(), "index.sqlite"), runs, recipeHeadlines)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	invd, err := inventory.Load(inv)
	if err != nil {
		t.Fatal(err)
	}
	src := serve.LabSource{Inventory: invd, Leases: &orchestrator.FileLeases{L: orchestrator.NewLeaser(state, 0, nil)}, LeasesName: "file",
		JournalDir: filepath.Join(state, "leases")}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		// The server looks again at testbed serve's default, once a second:
		// the sweep's steps outlast it (a faster poll renders the pages more
		// often, most of this test's CPU under the detector).
		done <- serve.New(serve.Options{Index: ix, Lab: src}).Serve(ctx, ln)
	}()
	defer func() { cancel(); <-done }()
	base := "http://" + ln.Addr().String()

	labTab := bctx
	runTab, closeTab := chromedp.NewContext(bctx)
	defer closeTab()
	if err := chromedp.Do(labTab, chromedp.Navigate(base+"/lab")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(labTab, chromedp.Poll[bool](`document.querySelector('tr[data-device="voa1"] .free') !== null && document.getElementById('conn').className.includes('up')`)); err != nil {
		t.Fatalf("lab page: voa1 is not shown free with live updates on: %v", err)
	}

	r := startRun(t, "exp", "run", "attenuation-sweep", "--inventory", inv, "--runs-dir", runs, "--state-dir", state, "--seed", "4",
		"--set", "links=l10g", "--set", "step_db=1", "--set", "fine_step_db=0.25", "--set", "max_seconds=0.5")
	drained := make(chan struct{})
	go func() { r.each(func(string) bool { return true }); close(drained) }()
	// The run's output, once it is all read (for failure messages).
	runLog := func() string {
		select {
		case <-drained:
			return r.log.String()
		case <-time.After(5 * time.Second):
			return "(the run's output is still being read)"
		}
	}

	// The lease appears on the open lab page, with the run holding it.
	holder, err := chromedp.Run(labTab, chromedp.Poll[string](`(() => { const c = document.querySelector('tr[data-device="voa1"] td.lease'); return c && c.querySelector('.held') ? c.querySelector('a').textContent : ''; })()`))
	if err != nil {
		t.Fatalf("lab page never showed voa1 held: %v\n%s", err, runLog())
	}
	t.Logf("lab page: voa1 held by run %s", holder)

	// The lab page reads the leases as they are, and the run may hold its
	// lease before its bundle is on disk: open the run's page once the
	// bundle is there (a page asked for before is a 404, not live).
	for {
		if _, err := ix.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := ix.Run(ctx, holder); err == nil {
			break
		} else if !errors.Is(err, serve.ErrNoRun) {
			t.Fatal(err)
		}
		select {
		case <-bctx.Done():
			t.Fatalf("run %s held voa1 and never wrote its bundle: %v\n%s", holder, bctx.Err(), runLog())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := chromedp.Do(runTab, chromedp.Navigate(base+"/runs/"+holder)); err != nil {
		t.Fatal(err)
	}
	steps := func(after int) (int, int) {
		t.Helper()
		type p struct{ Done, Total int }
		got, err := chromedp.Run(runTab, chromedp.Poll[p](fmt.Sprintf(`(() => {
			const s = document.querySelector('section.progress');
			if (!s) return null;
			const d = +s.dataset.stepsDone, n = +s.dataset.stepsTotal;
			return d > %d ? {Done: d, Total: n} : null; })()`, after)))
		if err != nil {
			t.Fatalf("run page: steps never passed %d: %v\n%s", after, err, runLog())
		}
		return got.Done, got.Total
	}
	first, total := steps(0)
	second, _ := steps(first)
	t.Logf("run page: %d/%d steps, then %d/%d", first, total, second, total)
	if first >= total {
		t.Fatalf("the run had ended (%d/%d) before its page was watched; nothing was seen advancing", first, total)
	}
	// The end: once the run has ended (its process, whatever the
	// machine's load made its steps take: a wait on the page bounded by
	// chromedp's 30 s from the third step failed under -race at load
	// 20-30, the run still going), the page, still open, shows ok and all
	// steps, and stops following.
	select {
	case <-drained:
	case <-bctx.Done():
		t.Fatalf("the run had not ended when the browser's %v did: %v\n%s", browserTime, bctx.Err(), r.log.String())
	}
	if err := r.cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, runLog())
	}
	if _, err := chromedp.Run(runTab, chromedp.Poll[bool](`document.querySelector('.st-ok') !== null && document.getElementById('conn').textContent === 'finished'`)); err != nil {
		t.Fatalf("run page never showed the run ok: %v\n%s", err, runLog())
	}
	if d, n := steps(second); d != n {
		t.Errorf("finished run shows %d/%d steps", d, n)
	}
	// And the lease goes from the lab page, still without a reload.
	if _, err := chromedp.Run(labTab, chromedp.Poll[bool](`document.querySelector('tr[data-device="voa1"] .free') !== null`)); err != nil {
		t.Fatalf("lab page still shows voa1 held after the run: %v", err)
	}
	// The API says the same.
	resp, err := http.Get(base + "/api/v1/lab")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var labJSON serve.Lab
	if err := json.NewDecoder(resp.Body).Decode(&labJSON); err != nil {
		t.Fatal(err)
	}
	for _, d := range labJSON.Devices {
		if d.Lease != nil {
			t.Errorf("api: %s still leased: %+v", d.Name, d.Lease)
		}
		if d.Name == "voa1" && (d.Identity == nil || d.Identity.RunID != holder) {
			t.Errorf("api: voa1's identity as last seen is not from run %s: %+v", holder, d.Identity)
		}
	}
}
