package serve

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"

	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/results"
)

// Every answer of the API, on a lab with a held lease, a pending undo
// journal, a running run, finished runs and a suite report, is what
// openapi.yaml documents: no key more, none missing, every type as
// stated. kin-openapi validates it.
func TestAPIIsWhatOpenAPIDocuments(t *testing.T) {
	ctx := context.Background()
	doc, err := openapi3.NewLoader().LoadFromData(openapiYAML)
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if err := doc.Validate(ctx); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}

	runs := t.TempDir()
	var ids []string
	for i, v := range []float64{101, 99, 125} {
		ids = append(ids, night(t, runs, i, v))
	}
	suiteReportFile(t, runs, ids, ids[2])
	// A run still running: its manifest says so and its events are being
	// written.
	start := time.Date(2026, 11, 9, 2, 0, 0, 0, time.UTC)
	live, err := results.Create(runs, results.Manifest{RunID: results.NewRunID(start, "fct"), Recipe: results.RecipeRef{Name: "fct", Version: "1.0.0"}, Started: start}, results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []results.Event{
		{Type: "run.start", Time: start},
		{Type: "step.start", Step: "warm up", Time: start.Add(time.Second), Fields: map[string]any{"index": 1, "of": 4, "estimate_left_s": 40.0}},
		{Type: "step.end", Step: "warm up", Time: start.Add(9 * time.Second), Fields: map[string]any{"index": 1, "of": 4}},
	} {
		if err := live.Event(e); err != nil {
			t.Fatal(err)
		}
	}
	// The lab: h1 leased by a run, with an undo in its journal.
	state := t.TempDir()
	leaser := orchestrator.NewLeaser(state, time.Hour, nil)
	held, err := leaser.Acquire("lab-a", "alice", live.Manifest().RunID, []orchestrator.LeaseTarget{{Device: "h1", Address: "ssh://10.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer leaser.Release(held)
	j, err := orchestrator.CreateJournal(held[0].JournalPath(), live.Manifest().RunID, held[0].Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(orchestrator.UndoRecord{Device: "h1", Kind: "host.sysctl", Desc: "restore net.ipv4.tcp_ecn to 2"}); err != nil {
		t.Fatal(err)
	}
	inv := &inventory.Inventory{Name: "lab-a", Devices: map[string]*inventory.Device{"h1": {Name: "h1", Kind: "host", Driver: "linux", Address: "ssh://10.0.0.1"}}}

	ix := openTestIndex(t, runs)
	if _, err := ix.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	srv := New(Options{Index: ix, Lab: LabSource{Inventory: inv, Leases: &orchestrator.FileLeases{L: leaser}, LeasesName: "file", JournalDir: filepath.Join(state, "leases")}})
	h := srv.Handler()
	for _, c := range []struct {
		path   string
		status int
	}{
		{"/api/v1/health", 200},
		{"/api/v1/lab", 200},
		{"/api/v1/runs", 200},
		{"/api/v1/runs?status=running", 200},
		{"/api/v1/runs?status=nope", 400},
		{"/api/v1/runs?limit=0", 400},
		{"/api/v1/runs/" + ids[1], 200},
		{"/api/v1/runs/" + live.Manifest().RunID, 200},
		{"/api/v1/runs/" + live.Manifest().RunID + "/progress", 200},
		{"/api/v1/openapi.yaml", 200},
		{"/api/v1/runs/" + ids[1] + "/diff", 200},
		{"/api/v1/runs/" + ids[0] + "/diff", 404},
		{"/api/v1/runs/nope", 404},
		{"/api/v1/trends", 200},
		{"/api/v1/trends?nights=x", 400},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080"+c.path, nil)
		h.ServeHTTP(rec, req)
		if rec.Code != c.status {
			t.Errorf("%s: %d, want %d: %s", c.path, rec.Code, c.status, rec.Body.String())
			continue
		}
		if c.path == "/api/v1/openapi.yaml" {
			if !bytes.Equal(rec.Body.Bytes(), openapiYAML) {
				t.Errorf("the served openapi.yaml is not the document")
			}
			continue
		}
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Errorf("%s is not in openapi.yaml: %v", c.path, err)
			continue
		}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: &openapi3filter.Options{ExcludeRequestQueryParams: c.status == 400}}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: rec.Code, Header: rec.Header(),
			Body: io.NopCloser(bytes.NewReader(rec.Body.Bytes())), Options: &openapi3filter.Options{IncludeResponseStatus: true}}
		if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
			t.Errorf("%s: the answer is not what openapi.yaml says: %v\n%.1500s", c.path, err, rec.Body.String())
		}
		// The validator is not a rubber stamp: a key the document does
		// not name is refused.
		if c.path == "/api/v1/lab" {
			for _, want := range []string{`"owner": "alice"`, `"pending_undos": 1`, `"kind": "host.sysctl"`} {
				if !bytes.Contains(rec.Body.Bytes(), []byte(want)) {
					t.Errorf("lab answer lacks %s: %s", want, rec.Body.String())
				}
			}
			bad := bytes.Replace(rec.Body.Bytes(), []byte(`"lease_store"`), []byte(`"leaseStore"`), 1)
			out.Body = io.NopCloser(bytes.NewReader(bad))
			if err := openapi3filter.ValidateResponse(ctx, out); err == nil {
				t.Errorf("the validator accepted a lab answer with leaseStore for lease_store")
			}
		}
	}
}
