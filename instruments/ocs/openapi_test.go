package ocs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"testbed/instruments/ocs"
	simocs "testbed/simlab/ocs"
)

// loadAPI loads openapi.yaml with kin-openapi and validates it as an
// OpenAPI 3 document.
func loadAPI(t *testing.T) (*openapi3.T, routers.Router) {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile("openapi.yaml")
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return doc, router
}

// validate checks one recorded exchange against the document: route,
// method, query parameters, request body, and response status and body.
func validate(ctx context.Context, router routers.Router, x exchange) error {
	// The document's server (the routes are matched under it).
	target := "http://127.0.0.1:8081" + x.Path
	if x.Query != "" {
		target += "?" + x.Query
	}
	req, err := http.NewRequest(x.Method, target, bytes.NewReader(x.Req))
	if err != nil {
		return err
	}
	if len(x.Req) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("%s %s is not in openapi.yaml: %w", x.Method, x.Path, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route}
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
		return fmt.Errorf("%s %s: request %s: %w", x.Method, target, x.Req, err)
	}
	if route.Operation.RequestBody == nil && len(x.Req) > 0 {
		return fmt.Errorf("%s %s: a body was sent to an operation that takes none: %s", x.Method, x.Path, x.Req)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: x.Status, Header: h,
		Body: io.NopCloser(bytes.NewReader(x.Resp)), Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("%s %s: %d answer %s: %w", x.Method, x.Path, x.Status, x.Resp, err)
	}
	return nil
}

// The validator is not a rubber stamp: answers the document does not allow
// are refused.
func TestValidatorCatchesViolations(t *testing.T) {
	_, router := loadAPI(t)
	ctx := context.Background()
	good := exchange{Method: "GET", Path: "/v1/system", Status: 200, Resp: []byte(`{"vendor":"x","model":"y","serial":"z","firmware":"f","ports":8,"min_slot_ns":1,"min_night_ns":1,"max_slots":1,"max_period_ns":0,"now_ns":1}`)}
	if err := validate(ctx, router, good); err != nil {
		t.Fatalf("a valid answer refused: %v", err)
	}
	for name, x := range map[string]exchange{
		"ports 0":             {Method: "GET", Path: "/v1/system", Status: 200, Resp: []byte(`{"vendor":"x","model":"y","serial":"z","firmware":"f","ports":0,"min_slot_ns":1,"min_night_ns":1,"max_slots":1,"max_period_ns":0,"now_ns":1}`)},
		"missing field":       {Method: "GET", Path: "/v1/system", Status: 200, Resp: []byte(`{"vendor":"x"}`)},
		"unknown path":        {Method: "GET", Path: "/v1/nope", Status: 404, Resp: []byte(`{}`)},
		"bad query":           {Method: "GET", Path: "/v1/nights", Query: "since=-1", Status: 200, Resp: []byte(`{}`)},
		"undocumented status": {Method: "GET", Path: "/v1/clock", Status: 418, Resp: []byte(`{}`)},
	} {
		if err := validate(ctx, router, x); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestDriverAndEmulatorKeepToTheOpenAPIDocument drives every operation of
// the driver against the emulator and checks each exchange against
// openapi.yaml with kin-openapi's request and response validation: route
// and method, query parameters, request and response bodies and status;
// and that the document, the emulator's routes and the driver's calls are
// the same set of operations.
func TestDriverAndEmulatorKeepToTheOpenAPIDocument(t *testing.T) {
	doc, router := loadAPI(t)
	var docOps []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			docOps = append(docOps, method+" "+path)
		}
	}
	sort.Strings(docOps)
	served := append([]string(nil), simocs.MordiaRoutes()...)
	sort.Strings(served)
	if !slices.Equal(docOps, served) {
		t.Errorf("the emulator serves %v\nthe document has %v", served, docOps)
	}

	lab := newMordiaLab(t, 9, opts8())
	cs, _ := openMordia(t, lab.addr, hangGuard)
	s, _ := ocs.AsScheduler(cs)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cs.Identity(ctx)
	must(cs.SetConfiguration(ctx, ocs.Shift(8, 2)))
	_, err := cs.Configuration(ctx)
	must(err)
	_, err = cs.PortStatus(ctx)
	must(err)
	must(cs.Dark(ctx))
	// Error answers: 409 (nothing loaded), 400 (a start time in the past).
	if _, err := s.StartSchedule(ctx, ocs.StartAt{NextPeriod: true}); err == nil {
		t.Fatal("start with nothing loaded accepted")
	}
	sched := allToAll(8, 1500*us, 30*us)
	must(s.LoadSchedule(ctx, sched))
	if _, err := s.StartSchedule(ctx, ocs.StartAt{At: 1}); err == nil {
		t.Fatal("start in the past accepted")
	}
	startAhead(t, s)
	// The replacement takes over at the boundary it names (the next one
	// when the request arrived, which a loaded machine may make a later
	// period than the second): once the switch's clock has passed it,
	// nothing is pending.
	at, err := s.ReplaceSchedule(ctx, allToAll(8, 1400*us, 20*us), ocs.StartAt{NextPeriod: true})
	must(err)
	st := waitUntil(t, s, at)
	if st.ReplaceAt != 0 {
		t.Fatalf("replacement at %v still pending: %+v", at, st)
	}
	_, err = s.Nights(ctx, 0)
	must(err)
	must(s.StopSchedule(ctx))
	_, err = s.ScheduleStatus(ctx)
	must(err)

	called := map[string]bool{}
	for _, x := range lab.rec.exchanges() {
		called[x.Method+" "+x.Path] = true
		if err := validate(ctx, router, x); err != nil {
			t.Error(err)
		}
	}
	for _, k := range docOps {
		if !called[k] {
			t.Errorf("the driver never called %s", k)
		}
	}
	statuses := map[int]bool{}
	for _, x := range lab.rec.exchanges() {
		statuses[x.Status] = true
	}
	if !statuses[400] || !statuses[409] {
		t.Errorf("error answers were not exercised: %v", statuses)
	}
}

// An unknown path is 404 with kind not_found, a known path with another
// method 405 with kind method_not_allowed, both as the document's Error.
func TestMordiaNotFoundAndMethodNotAllowed(t *testing.T) {
	doc, _ := loadAPI(t)
	lab := newMordiaLab(t, 9, opts8())
	for _, c := range []struct {
		method, path string
		code         int
		kind         string
	}{
		{"GET", "/v1/nope", 404, "not_found"},
		{"GET", "/v2/system", 404, "not_found"},
		{"DELETE", "/v1/system", 405, "method_not_allowed"},
		{"GET", "/v1/dark", 405, "method_not_allowed"},
	} {
		req, _ := http.NewRequest(c.method, lab.addr+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var v map[string]any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s %s: %q is not JSON", c.method, c.path, raw)
		}
		if resp.StatusCode != c.code || v["kind"] != c.kind || v["code"] != float64(c.code) {
			t.Errorf("%s %s: %d %s, want %d kind %s", c.method, c.path, resp.StatusCode, raw, c.code, c.kind)
		}
		if err := doc.Components.Schemas["Error"].Value.VisitJSON(map[string]any(v)); err != nil {
			t.Errorf("%s %s: %s is not the document's Error: %v", c.method, c.path, raw, err)
		}
	}
}

// A cursor beyond the last record must not make the client skip the
// records that come later.
func TestMordiaNightsCursorNeverSkips(t *testing.T) {
	lab := newMordiaLab(t, 9, opts8())
	cs, _ := openMordia(t, lab.addr, hangGuard)
	s, _ := ocs.AsScheduler(cs)
	ctx := context.Background()
	ahead, err := s.Nights(ctx, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if ahead.Next != 0 || len(ahead.Nights) != 0 {
		t.Fatalf("before any night, since=1e6 answers next %d with %d nights", ahead.Next, len(ahead.Nights))
	}
	if err := s.LoadSchedule(ctx, allToAll(8, 1500*us, 30*us)); err != nil {
		t.Fatal(err)
	}
	startAhead(t, s)
	waitPeriod(t, s, 2)
	got, err := s.Nights(ctx, ahead.Next)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Nights) == 0 || got.Nights[0].Seq != 0 {
		t.Fatalf("the nights after an early cursor: %d, first %+v", len(got.Nights), got.Nights)
	}
	for i, n := range got.Nights {
		if n.Seq != uint64(i) {
			t.Fatalf("night %d has seq %d: a record was skipped", i, n.Seq)
		}
	}
	if err := s.StopSchedule(ctx); err != nil {
		t.Fatal(err)
	}
}
