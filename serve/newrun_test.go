package serve

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"testbed/results"
)

// A run started after the index last looked (the lab page links a lease
// to it at once) has its page, live, not a 404 until the next poll: the
// server here never polls (no Serve), so only the look on a miss finds it.
func TestRunStartedSinceTheLastLookHasItsLivePage(t *testing.T) {
	ctx := context.Background()
	runs := t.TempDir()
	ix := openTestIndex(t, runs)
	if _, err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(New(Options{Index: ix}).Handler())
	defer hs.Close()

	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	m := results.Manifest{RunID: results.NewRunID(start, "fct"), Recipe: results.RecipeRef{Name: "fct", Version: "1.0.0"}, Started: start,
		Lab: results.Lab{Simulated: true, Name: "simlab"}}
	b, err := results.Create(runs, m, results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Finalize(results.StatusOK, "")

	resp, err := http.Get(hs.URL + "/runs/" + m.RunID)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "/live/runs/"+m.RunID) {
		t.Fatalf("the page of a run started since the index looked: %s, live: %v\n%s", resp.Status, strings.Contains(string(body), "/live/runs/"), body)
	}
	resp, err = http.Get(hs.URL + "/runs/20261130T090000.000Z-none-000000")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a run that is nowhere: %s, want 404", resp.Status)
	}
}
