package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"testbed/results"
)

// synthRuns writes n bundles' manifest.json and summary.json (what the
// index reads) under dir: five recipes, two in five runs from the nightly
// suite's four entries, three headline numbers each; and the suite's
// reports marking a band and the odd regression.
func synthRuns(b *testing.B, dir string, n int) {
	b.Helper()
	recipes := []string{"fct", "loss-sweep", "attenuation-sweep", "stardust-load", "ocs-characterize"}
	entries := []string{"fct-small", "fct-large", "sweep-quick", "stardust"}
	type check struct {
		Metric  string  `json:"metric"`
		Outcome string  `json:"outcome"`
		Low     float64 `json:"band_low"`
		High    float64 `json:"band_high"`
	}
	type entry struct {
		ID     string  `json:"id"`
		RunID  string  `json:"run_id"`
		Checks []check `json:"checks"`
	}
	var report []entry
	t0 := time.Date(2020, 1, 1, 2, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		start := t0.Add(time.Duration(i) * 5 * time.Hour)
		rec := recipes[i%len(recipes)]
		id := fmt.Sprintf("%s-%s-%06x", start.Format("20060102T150405.000Z"), rec, i)
		m := results.Manifest{Schema: results.Schema, RunID: id, Recipe: results.RecipeRef{Name: rec, Version: "1.0.0"}, Status: results.StatusOK, Started: start,
			Lab: results.Lab{Name: "lab-a"},
			Devices: []results.Device{{Name: "voa1", Kind: "voa", Driver: "keysight-n77xx", Address: "tcp://10.0.0.21:5025", Identity: results.Identity{Vendor: "Keysight", Model: "N7764A", Serial: "MY123", Firmware: "1.2"}},
				{Name: "tg1", Kind: "trafficgen", Driver: "otg", Address: "https://10.0.0.30", Identity: results.Identity{Vendor: "Keysight", Model: "IxOS", Serial: "TG9", Firmware: "9.1"}}}}
		end := start.Add(20 * time.Minute)
		m.Ended = &end
		if i%5 < 2 {
			m.Labels = map[string]string{"suite": "nightly", "suite_entry": entries[(i/5)%len(entries)]}
		}
		v := 100 + float64(i%17)
		sum := map[string]any{"a": map[string]any{"p50_us": v / 2, "p99_us": v, "p999_us": v * 1.5}, "other": map[string]any{"x": 1, "y": 2}}
		d := filepath.Join(dir, id)
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		mj, _ := json.Marshal(m)
		sj, _ := json.Marshal(sum)
		if err := os.WriteFile(filepath.Join(d, "manifest.json"), mj, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "summary.json"), sj, 0o644); err != nil {
			b.Fatal(err)
		}
		if m.Labels != nil {
			out := "pass"
			if i%97 == 0 {
				out = "regression"
			}
			report = append(report, entry{ID: m.Labels["suite_entry"], RunID: id, Checks: []check{{Metric: "a.p99_us", Outcome: out, Low: 95, High: 120}}})
		}
	}
	rd := filepath.Join(dir, suiteReportsDir)
	if err := os.MkdirAll(rd, 0o755); err != nil {
		b.Fatal(err)
	}
	data, _ := json.Marshal(map[string]any{"suite": "nightly", "entries": report})
	if err := os.WriteFile(filepath.Join(rd, "all-nightly.json"), data, 0o644); err != nil {
		b.Fatal(err)
	}
}

func headlinesA(string) []string { return []string{"a.p99_us", "a.p50_us", "a.p999_us"} }

// BenchmarkIndex10k is the run index over 10,000 bundles: the list of
// runs (`results list`'s answer, newest first, as the API and the runs
// page give it), the trends page rendered whole, and a sync that finds
// nothing new. The first sync's time (building the index from nothing)
// is reported once as build_s.
//
//	go test -run XXX -bench Index10k -benchtime 20x ./serve
func BenchmarkIndex10k(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	synthRuns(b, dir, 10000)
	ix, err := OpenIndex(ctx, filepath.Join(b.TempDir(), "index.sqlite"), dir, headlinesA)
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	t0 := time.Now()
	st, err := ix.Sync(ctx)
	if err != nil {
		b.Fatal(err)
	}
	build := time.Since(t0)
	if st.Added != 10000 {
		b.Fatalf("indexed %d bundles, want 10000", st.Added)
	}
	srv := New(Options{Index: ix})
	h := srv.Handler()
	page := func(b *testing.B, path string) {
		for i := 0; i < b.N; i++ {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != 200 {
				b.Fatalf("%s: %d %s", path, rec.Code, rec.Body.String())
			}
		}
	}
	b.Run("runs_api", func(b *testing.B) { page(b, "/api/v1/runs") })
	b.Run("runs_api_recipe", func(b *testing.B) { page(b, "/api/v1/runs?recipe=fct&status=ok&limit=1000") })
	b.Run("runs_page", func(b *testing.B) { page(b, "/runs") })
	b.Run("trends_page", func(b *testing.B) { page(b, "/trends") })
	b.Run("trends_api_all_nights", func(b *testing.B) { page(b, "/api/v1/trends?nights=5000") })
	b.Run("lab_page", func(b *testing.B) { page(b, "/lab") })
	b.Run("sync_unchanged", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if st, err := ix.Sync(ctx); err != nil || st.changed() {
				b.Fatalf("%+v %v", st, err)
			}
		}
	})
	b.ReportMetric(build.Seconds(), "build_s")
}
