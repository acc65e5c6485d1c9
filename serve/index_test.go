package serve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"testbed/results"
)

// night writes a finished bundle of a nightly suite entry through the
// bundle writer: a run of "fct" started on day n whose summary holds the
// headline p99 and a non-headline number.
func night(t testing.TB, runs string, n int, p99 float64) string {
	t.Helper()
	start := time.Date(2026, 11, 1+n, 2, 0, 0, 0, time.UTC)
	m := results.Manifest{RunID: results.NewRunID(start, "fct"), Recipe: results.RecipeRef{Name: "fct", Version: "1.0.0"}, Started: start,
		Lab:     results.Lab{Simulated: true, Name: "simlab"},
		Labels:  map[string]string{"suite": "nightly", "suite_entry": "fct-small"},
		Devices: []results.Device{{Name: "h1", Kind: "host", Driver: "linux", Address: "ssh://10.0.0.1", Identity: results.Identity{Vendor: "Linux", Model: "x86_64", Serial: "h1", Firmware: "6.1"}}}}
	now := start
	b, err := results.Create(runs, m, results.Options{Now: func() time.Time { now = now.Add(time.Second); return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Event(results.Event{Type: "run.start"}); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteSummary(map[string]any{"fct": map[string]any{"p99_us": p99, "flows": 1000}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Finalize(results.StatusOK, ""); err != nil {
		t.Fatal(err)
	}
	return m.RunID
}

// suiteReportFile writes what `exp run --suite` keeps: each run's check of
// fct.p99_us against a baseline of 100 within 10, the given run marked a
// regression.
func suiteReportFile(t *testing.T, runs string, ids []string, regressed string) {
	t.Helper()
	type check struct {
		Metric   string  `json:"metric"`
		Outcome  string  `json:"outcome"`
		Baseline float64 `json:"baseline"`
		Low      float64 `json:"band_low"`
		High     float64 `json:"band_high"`
	}
	type entry struct {
		ID     string  `json:"id"`
		RunID  string  `json:"run_id"`
		Checks []check `json:"checks"`
	}
	rep := struct {
		Suite   string  `json:"suite"`
		Entries []entry `json:"entries"`
	}{Suite: "nightly"}
	for _, id := range ids {
		out := "pass"
		if id == regressed {
			out = "regression"
		}
		rep.Entries = append(rep.Entries, entry{ID: "fct-small", RunID: id, Checks: []check{{Metric: "fct.p99_us", Outcome: out, Baseline: 100, Low: 90, High: 110}}})
	}
	data, _ := json.Marshal(rep)
	dir := filepath.Join(runs, suiteReportsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "20261106T020000.000Z-nightly.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func headlinesFCT(recipe string) []string {
	if recipe == "fct" {
		return []string{"fct.p99_us"}
	}
	return nil
}

func openTestIndex(t *testing.T, runs string) *Index {
	t.Helper()
	ix, err := OpenIndex(context.Background(), filepath.Join(t.TempDir(), "index.sqlite"), runs, headlinesFCT)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func TestIndexFollowsTheDisk(t *testing.T) {
	ctx := context.Background()
	runs := t.TempDir()
	var ids []string
	for i, v := range []float64{101, 99, 103} {
		ids = append(ids, night(t, runs, i, v))
	}
	if err := os.MkdirAll(filepath.Join(runs, "not-a-bundle"), 0o755); err != nil {
		t.Fatal(err)
	}
	ix := openTestIndex(t, runs)
	st, err := ix.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Added != 3 || st.Removed != 0 {
		t.Fatalf("first sync: %+v, want 3 added", st)
	}
	got, err := ix.Runs(ctx, RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].RunID != ids[2] || got[2].RunID != ids[0] {
		t.Fatalf("runs newest first: got %v", got)
	}
	if want := "fct.p99_us 103 " + results.MetricUnit("fct.p99_us"); len(got[0].Headline) != 1 || got[0].Headline[0] != want {
		t.Errorf("headline of the newest run: %q, want the declared headline %q", got[0].Headline, want)
	}
	// Nothing changed on disk: nothing is read again.
	if st, _ := ix.Sync(ctx); st.changed() {
		t.Errorf("second sync changed %+v with nothing new on disk", st)
	}
	// A bundle removed and one added are picked up.
	if err := os.RemoveAll(filepath.Join(runs, ids[1])); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, night(t, runs, 3, 98))
	st, err = ix.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Added != 1 || st.Removed != 1 {
		t.Fatalf("sync after one removed and one added: %+v", st)
	}
	if _, err := ix.Run(ctx, ids[1]); err == nil {
		t.Errorf("run %s is still indexed after its bundle was removed", ids[1])
	}
	prev, err := ix.Previous(ctx, Run{RunID: ids[3], Recipe: "fct"})
	if err != nil || prev.RunID != ids[2] {
		t.Errorf("previous run of %s: %v %v, want %s", ids[3], prev.RunID, err, ids[2])
	}
}

func TestTrendsCarryTheSuitesBandAndVerdict(t *testing.T) {
	ctx := context.Background()
	runs := t.TempDir()
	vals := []float64{101, 99, 103, 125, 100}
	var ids []string
	for i, v := range vals {
		ids = append(ids, night(t, runs, i, v))
	}
	suiteReportFile(t, runs, ids, ids[3])
	ix := openTestIndex(t, runs)
	if _, err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	ts, err := ix.Trends(ctx, TrendFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 {
		t.Fatalf("%d trends, want 1 (fct-small's headline fct.p99_us; flows is not a headline): %+v", len(ts), ts)
	}
	tr := ts[0]
	if tr.Suite != "nightly" || tr.Entry != "fct-small" || tr.Metric != "fct.p99_us" || len(tr.Points) != 5 || tr.Regressions != 1 {
		t.Fatalf("trend %+v", tr)
	}
	for i, p := range tr.Points {
		if p.Value != vals[i] || p.RunID != ids[i] {
			t.Errorf("night %d: %s %g, want %s %g", i+1, p.RunID, p.Value, ids[i], vals[i])
		}
		if p.BandLow == nil || *p.BandLow != 90 || p.BandHigh == nil || *p.BandHigh != 110 {
			t.Errorf("night %d: band %s..%s, want 90..110", i+1, fmtNum(p.BandLow), fmtNum(p.BandHigh))
		}
		if p.Regression != (i == 3) {
			t.Errorf("night %d: regression %v", i+1, p.Regression)
		}
	}
	svg := tr.SVG()
	if !strings.Contains(svg, "<polygon") || strings.Count(svg, `data-marked="regression"`) != 1 {
		t.Errorf("trend SVG lacks the band or the one regression mark:\n%.1500s", svg)
	}
	// Only the newest nights when asked.
	ts, _ = ix.Trends(ctx, TrendFilter{Nights: 2})
	if len(ts) != 1 || len(ts[0].Points) != 2 || ts[0].Points[1].RunID != ids[4] {
		t.Errorf("two newest nights: %+v", ts)
	}
	// The suite report removed: values stay, bands and marks go.
	if err := os.RemoveAll(filepath.Join(runs, suiteReportsDir)); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	ts, _ = ix.Trends(ctx, TrendFilter{})
	if len(ts) != 1 || ts[0].Regressions != 0 || ts[0].Points[0].BandLow != nil {
		t.Errorf("after the suite report went: %+v", ts)
	}
}

func TestAPIAndTokenAndReadOnly(t *testing.T) {
	ctx := context.Background()
	runs := t.TempDir()
	a := night(t, runs, 0, 100)
	b := night(t, runs, 1, 120)
	ix := openTestIndex(t, runs)
	if _, err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	srv := New(Options{Index: ix, Token: "s3cret"})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	get := func(path, token string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	if resp, _ := get("/api/v1/runs", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %s, want 401", resp.Status)
	}
	if resp, _ := get("/api/v1/runs", "wrong"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token: %s, want 401", resp.Status)
	}
	resp, body := get("/api/v1/runs?recipe=fct", "s3cret")
	var list struct {
		Runs []map[string]any `json:"runs"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &list) != nil || len(list.Runs) != 2 {
		t.Fatalf("runs: %s %s", resp.Status, body)
	}
	for k := range list.Runs[0] {
		if k != strings.ToLower(k) || strings.Contains(k, "-") {
			t.Errorf("API key %q is not lower_snake_case", k)
		}
	}
	resp, body = get("/api/v1/runs/"+b+"/diff", "s3cret")
	var diff results.DiffReport
	if resp.StatusCode != 200 || json.Unmarshal(body, &diff) != nil {
		t.Fatalf("diff: %s %s", resp.Status, body)
	}
	if diff.A.RunID != a || diff.B.RunID != b || diff.Identical {
		t.Errorf("diff of %s against the previous run: A %s B %s identical %v", b, diff.A.RunID, diff.B.RunID, diff.Identical)
	}
	var changed bool
	for _, m := range diff.Metrics {
		if m.Path == "fct.p99_us" && m.Changed() {
			changed = true
		}
	}
	if !changed {
		t.Errorf("diff does not show fct.p99_us changing 100 -> 120: %+v", diff.Metrics)
	}
	if resp, _ := get("/api/v1/runs/nope", "s3cret"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown run: %s, want 404", resp.Status)
	}
	if resp, body := get("/runs/"+b+"/files/summary.json", "s3cret"); resp.StatusCode != 200 || !strings.Contains(string(body), "p99_us") {
		t.Errorf("bundle file: %s %s", resp.Status, body)
	}
	if resp, _ := get("/runs/"+b+"/files/../../../etc/passwd", "s3cret"); resp.StatusCode == 200 {
		t.Errorf("a path out of the bundle was served")
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/api/v1/runs", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer s3cret")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %v %v, want 405 (read-only)", resp.Status, err)
	} else {
		resp.Body.Close()
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:8080": true, "localhost:80": true, "[::1]:8080": true, "0.0.0.0:8080": false, ":8080": false, "10.1.2.3:80": false} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
