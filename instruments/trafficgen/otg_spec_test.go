//go:build !race

// The race detector makes loading the 1 MB specification take 13 s instead
// of 0.5 s, so these run without it (make test runs them so; the emulator's
// concurrency is exercised under the detector by the driver tests here).

package trafficgen_test

// Conformance of the OTG emulator to the Open Traffic Generator API as
// published: every request below is shaped as an OTG client sends it
// (fields left out where the spec has a default), checked against
// open-traffic-generator/models v1.20.0 artifacts/openapi.yaml with
// kin-openapi's request validator, sent over HTTP, and its response checked
// against the same document. testdata/otg-openapi-v1.20.0.json.gz is that
// file, gzip-compressed, unchanged (sha256 of the yaml:
// 26c90dd09347d7ee0cdb6278f4ef6c9796e4b0814f7ae9b78f6b698178e1c871).
//
// The document's JSON is protobuf's JSON mapping of the same models (the
// servers and gosnappi marshal with protojson): a 64-bit integer travels
// as a string of digits, which the document's "type: integer" does not
// say; protoJSON turns those back into numbers before a body is held to
// the document. The official Go client's own exchanges are in
// otg_gosnappi_test.go.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"testbed/simlab/physics"
	simtg "testbed/simlab/trafficgen"
	"testbed/simlab/world"
)

var otgSpec struct {
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error
}

func loadOTGSpec(t *testing.T) (*openapi3.T, routers.Router) {
	t.Helper()
	otgSpec.once.Do(func() {
		f, err := os.Open("testdata/otg-openapi-v1.20.0.json.gz")
		if err != nil {
			otgSpec.err = err
			return
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			otgSpec.err = err
			return
		}
		b, err := io.ReadAll(io.LimitReader(zr, 8<<20))
		if err != nil {
			otgSpec.err = err
			return
		}
		doc := &openapi3.T{}
		if err := json.Unmarshal(b, doc); err != nil {
			otgSpec.err = err
			return
		}
		if err := openapi3.NewLoader().ResolveRefsIn(doc, nil); err != nil {
			otgSpec.err = err
			return
		}
		otgSpec.doc = doc
		otgSpec.router, otgSpec.err = legacy.NewRouter(doc)
	})
	if otgSpec.err != nil {
		t.Fatalf("OTG spec: %v", otgSpec.err)
	}
	return otgSpec.doc, otgSpec.router
}

// otgCall sends body to the emulator; when the path is in the spec, the
// request (if checkReq) and the response are validated against it.
func otgCall(t *testing.T, base, method, path, body string, checkReq bool) (int, map[string]any) {
	t.Helper()
	doc, router := loadOTGSpec(t)
	ctx := context.Background()
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	// The spec's servers entry is "/": route on the path alone.
	specReq, _ := http.NewRequest(method, path, strings.NewReader(body))
	specReq.Header = req.Header
	route, params, routeErr := router.FindRoute(specReq)
	var in *openapi3filter.RequestValidationInput
	if routeErr == nil {
		in = &openapi3filter.RequestValidationInput{Request: specReq, PathParams: params, Route: route}
		if checkReq {
			if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
				t.Fatalf("%s %s: the request is not what the spec allows: %v", method, path, err)
			}
		}
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if routeErr == nil {
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
			Body: io.NopCloser(bytes.NewReader(protoJSON(t, route.Operation, resp.StatusCode, raw)))}
		if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
			t.Fatalf("%s %s: response %d %s is not what the spec says: %v", method, path, resp.StatusCode, raw, err)
		}
	} else {
		// Not an API path: the body must still be the spec's Error object.
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s %s: %d body %q is not JSON", method, path, resp.StatusCode, raw)
		}
		if err := doc.Components.Schemas["Error"].Value.VisitJSON(v); err != nil {
			t.Fatalf("%s %s: %d body %s is not the spec's Error: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m
}

// protoJSON rewrites the 64-bit integers of a response body, which
// protobuf's JSON mapping writes as strings ("frames_tx": "1000"), as
// the numbers the document's schema declares, so the document can judge
// the rest. A string that is not all digits is left for it to reject.
func protoJSON(t *testing.T, op *openapi3.Operation, status int, raw []byte) []byte {
	t.Helper()
	rr := op.Responses.Status(status)
	if rr == nil {
		rr = op.Responses.Default()
	}
	if rr == nil || rr.Value == nil || rr.Value.Content.Get("application/json") == nil {
		return raw
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	out, err := json.Marshal(int64Numbers(rr.Value.Content.Get("application/json").Schema, v))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func int64Numbers(ref *openapi3.SchemaRef, v any) any {
	if ref == nil || ref.Value == nil {
		return v
	}
	sc := ref.Value
	switch x := v.(type) {
	case string:
		if sc.Type.Is("integer") && (sc.Format == "int64" || sc.Format == "uint64") {
			if n, err := strconv.ParseInt(x, 10, 64); err == nil {
				return n
			}
		}
	case []any:
		for i := range x {
			x[i] = int64Numbers(sc.Items, x[i])
		}
	case map[string]any:
		for k, e := range x {
			if p, ok := sc.Properties[k]; ok {
				x[k] = int64Numbers(p, e)
			}
		}
	}
	return v
}

// num reads a metric as a number, whether the server wrote it as one or,
// for a 64-bit integer, as protojson's string of digits.
func num(t *testing.T, v any) float64 {
	t.Helper()
	switch x := v.(type) {
	case float64:
		return x
	case string:
		n, err := strconv.ParseFloat(x, 64)
		if err == nil {
			return n
		}
	}
	t.Fatalf("metric %v (%T) is not a number", v, v)
	return 0
}

const otgPorts = `"ports":[{"name":"p1","location":"eth1"},{"name":"p2","location":"eth2"}]`

func otgFlow(extra string) string {
	f := `{"name":"f1","tx_rx":{"choice":"port","port":{"tx_name":"p1","rx_names":["p2"]}}`
	if extra != "" {
		f += "," + extra
	}
	return `{` + otgPorts + `,"flows":[` + f + `}]}`
}

// flowMetric polls the flow's metrics until stopped (or once if !wait).
func flowMetric(t *testing.T, base string, wait bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, m := otgCall(t, base, "POST", "/monitor/metrics", `{"choice":"flow","flow":{"flow_names":["f1"]}}`, true)
		if code != 200 {
			t.Fatalf("metrics: %d %v", code, m)
		}
		fm := m["flow_metrics"].([]any)[0].(map[string]any)
		if !wait || fm["transmit"] == "stopped" {
			return fm
		}
		if time.Now().After(deadline) {
			t.Fatalf("flow never stopped: %v", fm)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func start(t *testing.T, base string) {
	t.Helper()
	if code, m := otgCall(t, base, "POST", "/control/state", `{"choice":"traffic","traffic":{"choice":"flow_transmit","flow_transmit":{"state":"start"}}}`, true); code != 200 {
		t.Fatalf("start: %d %v", code, m)
	}
}

func stop(t *testing.T, base string) {
	t.Helper()
	if code, m := otgCall(t, base, "POST", "/control/state", `{"choice":"traffic","traffic":{"choice":"flow_transmit","flow_transmit":{"state":"stop","flow_names":["f1"]}}}`, true); code != 200 {
		t.Fatalf("stop: %d %v", code, m)
	}
}

func configure(t *testing.T, base, cfg string) {
	t.Helper()
	if code, m := otgCall(t, base, "POST", "/config", cfg, true); code != 200 {
		t.Fatalf("config %s: %d %v", cfg, code, m)
	}
}

func TestOTGSpecVersion(t *testing.T) {
	_, _, base := otgLab(t, 1)
	code, m := otgCall(t, base, "GET", "/capabilities/version", "", true)
	if code != 200 || m["api_spec_version"] != "1.20.0" {
		t.Fatalf("version: %d %v", code, m)
	}
}

// A flow with nothing but its ports: 64 B frames at 1000 pps, continuous
// (Flow.Size, Flow.Rate and Flow.Duration defaults).
func TestOTGSpecDefaults(t *testing.T) {
	_, _, base := otgLab(t, 1)
	configure(t, base, otgFlow(""))
	start(t, base)
	fm := flowMetric(t, base, false)
	if fm["transmit"] != "started" || fm["frames_tx_rate"].(float64) != 1000 {
		t.Fatalf("defaults: %v", fm)
	}
	time.Sleep(20 * time.Millisecond)
	fm = flowMetric(t, base, false)
	if fm["transmit"] != "started" {
		t.Fatalf("a continuous flow stopped by itself: %v", fm)
	}
	tx := num(t, fm["frames_tx"])
	if tx <= 0 || num(t, fm["bytes_tx"]) != 64*tx {
		t.Fatalf("64 B frames: %v", fm)
	}
	stop(t, base)
}

func TestOTGSpecRates(t *testing.T) {
	_, _, base := otgLab(t, 1)
	rate := func(r string) float64 {
		configure(t, base, otgFlow(`"size":{"choice":"fixed","fixed":1518},"rate":`+r))
		start(t, base)
		defer stop(t, base)
		return flowMetric(t, base, false)["frames_tx_rate"].(float64)
	}
	wire := float64((1518 + 20) * 8) // preamble, SFD and inter-packet gap
	cases := map[string]float64{
		`{"choice":"pps","pps":5000}`:             5000,
		`{"choice":"bps","bps":1000000000}`:       1e9 / wire,
		`{"choice":"kbps","kbps":2000000}`:        2e9 / wire,
		`{"choice":"mbps","mbps":3000}`:           3e9 / wire,
		`{"choice":"gbps","gbps":10}`:             10e9 / wire,
		`{"choice":"gbps"}`:                       1e9 / wire, // gbps defaults to 1
		`{"choice":"bps"}`:                        1e9 / wire, // bps defaults to 1e9
		`{"choice":"percentage"}`:                 rate(`{"choice":"percentage","percentage":100}`),
		`{"choice":"pps"}`:                        1000,
		`{"choice":"percentage","percentage":50}`: rate(`{"choice":"percentage","percentage":100}`) / 2,
	}
	for r, want := range cases {
		if got := rate(r); math.Abs(got-want) > 1e-6*want {
			t.Errorf("rate %s: %v frames/s, want %v", r, got, want)
		}
	}
}

func TestOTGSpecIncrementSizeAndFixedSeconds(t *testing.T) {
	_, _, base := otgLab(t, 1)
	// Every size from 64 to 1518 once, twice over.
	n := int64(1518 - 64 + 1)
	configure(t, base, otgFlow(`"size":{"choice":"increment","increment":{"start":64,"end":1518,"step":1}},"rate":{"choice":"percentage","percentage":10},"duration":{"choice":"fixed_packets","fixed_packets":{"packets":`+itoa(2*n)+`}}`))
	start(t, base)
	fm := flowMetric(t, base, true)
	var sum int64
	for s := int64(64); s <= 1518; s++ {
		sum += s
	}
	if int64(num(t, fm["frames_tx"])) != 2*n || int64(num(t, fm["bytes_tx"])) != 2*sum {
		t.Fatalf("increment: %v; want %d frames, %d bytes", fm, 2*n, 2*sum)
	}
	// Increment with every field left to its default: 64..1518 step 1.
	configure(t, base, otgFlow(`"size":{"choice":"increment"},"duration":{"choice":"fixed_packets","fixed_packets":{"packets":`+itoa(n)+`}}`))
	start(t, base)
	if fm := flowMetric(t, base, true); int64(num(t, fm["bytes_tx"])) != sum {
		t.Fatalf("default increment: %v", fm)
	}
	// fixed_seconds: 0.05 s at 20000 pps is 1000 frames.
	configure(t, base, otgFlow(`"rate":{"choice":"pps","pps":20000},"duration":{"choice":"fixed_seconds","fixed_seconds":{"seconds":0.05}}`))
	start(t, base)
	if fm := flowMetric(t, base, true); num(t, fm["frames_tx"]) != 1000 {
		t.Fatalf("fixed_seconds: %v", fm)
	}
	// fixed_packets with packets left out sends one.
	configure(t, base, otgFlow(`"duration":{"choice":"fixed_packets","fixed_packets":{}}`))
	start(t, base)
	if fm := flowMetric(t, base, true); num(t, fm["frames_tx"]) != 1 {
		t.Fatalf("fixed_packets default: %v", fm)
	}
}

func TestOTGSpecErrorObjects(t *testing.T) {
	_, _, base := otgLab(t, 1)
	for _, c := range []struct {
		method, path, body string
		code               int
	}{
		{"GET", "/no/such/path", "", 404},
		{"PUT", "/config", "{}", 405},
		{"GET", "/monitor/metrics", "", 405},
		{"DELETE", "/control/state", "", 405},
	} {
		code, m := otgCall(t, base, c.method, c.path, c.body, false)
		if code != c.code || m["code"] != float64(c.code) || len(m["errors"].([]any)) == 0 {
			t.Errorf("%s %s: %d %v, want %d with the spec's Error", c.method, c.path, code, m, c.code)
		}
	}
	// A config the emulator cannot serve is a 400 with kind validation,
	// saying which flow and why.
	code, m := otgCall(t, base, "POST", "/config", otgFlow(`"rate":{"choice":"gbps","gbps":400}`), true)
	if code != 400 || m["kind"] != "validation" || !strings.Contains(m["errors"].([]any)[0].(string), "flow f1") {
		t.Errorf("over-rate config: %d %v", code, m)
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// Several rx ports: a flow's frames arrive where its fibre ends; the flow
// counts them if that port is one of its rx ports, and the port counts
// whatever arrives.
func TestOTGSpecSeveralRxPorts(t *testing.T) {
	w := world.New(1)
	tr, _ := physics.TransceiverByName("25GBASE-SR")
	fec, _ := physics.FECByName("none")
	v := w.NewVOA("voa1", "Keysight Technologies", "N7764A", "SIM1", "1.0", 1, 0, 60, 1.5, 1e6)
	w.NewFibre("l25g", tr, fec, 1.0, 0.5, v.Channels[0])
	srv := simtg.NewOTGServer(w, []simtg.OTGPort{{Location: "eth1", TxFibre: "l25g"}, {Location: "eth2", RxFibre: "l25g"}, {Location: "eth3"}}, nil, simtg.OTGOptions{TimeScale: 1e5})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	base := srv.Addr()
	ports := `"ports":[{"name":"p1","location":"eth1"},{"name":"p2","location":"eth2"},{"name":"p3","location":"eth3"}]`
	flow := func(rx string) string {
		return `{` + ports + `,"flows":[{"name":"f1","tx_rx":{"choice":"port","port":{"tx_name":"p1","rx_names":[` + rx + `]}},` +
			`"size":{"choice":"fixed","fixed":1518},"rate":{"choice":"percentage","percentage":10},"duration":{"choice":"fixed_packets","fixed_packets":{"packets":1000}}}]}`
	}
	portRx := func(name string) float64 {
		_, m := otgCall(t, base, "POST", "/monitor/metrics", `{"choice":"port","port":{"port_names":["`+name+`"]}}`, true)
		return num(t, m["port_metrics"].([]any)[0].(map[string]any)["frames_rx"])
	}
	configure(t, base, flow(`"p3","p2"`))
	start(t, base)
	if fm := flowMetric(t, base, true); num(t, fm["frames_rx"]) != 1000 {
		t.Fatalf("rx ports p3 and p2, fibre ends at p2: %v", fm)
	}
	if portRx("p2") != 1000 || portRx("p3") != 0 {
		t.Fatalf("port rx: p2 %v, p3 %v", portRx("p2"), portRx("p3"))
	}
	configure(t, base, flow(`"p3"`))
	start(t, base)
	if fm := flowMetric(t, base, true); num(t, fm["frames_rx"]) != 0 || num(t, fm["frames_tx"]) != 1000 {
		t.Fatalf("rx port p3 only, fibre ends at p2: %v", fm)
	}
	if portRx("p2") != 1000 {
		t.Fatalf("p2 did not count what arrived: %v", portRx("p2"))
	}
}

// Our driver's own requests, and the emulator's answers to them, are what
// the spec allows: every exchange of a configure, start, metrics and stop
// is recorded on its way through and validated.
func TestOTGSpecDriverExchanges(t *testing.T) {
	_, router := loadOTGSpec(t)
	_, _, emu := otgLab(t, 1)
	type exchange struct {
		method, path string
		req, resp    []byte
		status       int
		header       http.Header
	}
	var mu sync.Mutex
	var seen []exchange
	target, _ := url.Parse(emu)
	proxy := httputil.NewSingleHostReverseProxy(target)
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rw := httptest.NewRecorder()
		proxy.ServeHTTP(rw, r)
		mu.Lock()
		seen = append(seen, exchange{r.Method, r.URL.Path, body, rw.Body.Bytes(), rw.Code, rw.Header().Clone()})
		mu.Unlock()
		for k, v := range rw.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rw.Code)
		w.Write(rw.Body.Bytes())
	}))
	t.Cleanup(rec.Close)
	g := open(t, rec.URL, 5*time.Second)
	ctx := context.Background()
	if _, err := g.Identity(ctx); err != nil {
		t.Fatal(err)
	}
	run(t, g, 5000, time.Millisecond)
	if _, err := g.PortMetrics(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	paths := map[string]bool{}
	for _, x := range seen {
		paths[x.method+" "+x.path] = true
		req, _ := http.NewRequest(x.method, x.path, bytes.NewReader(x.req))
		if len(x.req) > 0 {
			req.Header.Set("Content-Type", "application/json")
		}
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Errorf("the driver called %s %s, not in the spec: %v", x.method, x.path, err)
			continue
		}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route}
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			t.Errorf("the driver's %s %s %s: %v", x.method, x.path, x.req, err)
		}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: x.status, Header: x.header,
			Body: io.NopCloser(bytes.NewReader(protoJSON(t, route.Operation, x.status, x.resp)))}
		if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
			t.Errorf("the emulator's answer to %s %s: %d %s: %v", x.method, x.path, x.status, x.resp, err)
		}
	}
	for _, want := range []string{"GET /capabilities/version", "POST /config", "POST /control/state", "POST /monitor/metrics"} {
		if !paths[want] {
			t.Errorf("the driver never called %s (called %v)", want, paths)
		}
	}
}
