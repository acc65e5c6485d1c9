package orchestrator

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"testbed/inventory"
	"testbed/results"
)

func TestMetricNamesFollowConventions(t *testing.T) {
	good := []struct{ name, kind, unit string }{
		{"testbed_run_progress_ratio", KindGauge, "ratio"},
		{"testbed_frames_total", KindCounter, "frames"},
		{"testbed_rx_bytes_total", KindCounter, "bytes"},
		{"testbed_run_start_time_seconds", KindGauge, "seconds"},
		{"testbed_run_step", KindGauge, ""},
	}
	for _, g := range good {
		if err := CheckMetricName(g.name, g.kind, g.unit); err != nil {
			t.Errorf("%s: %v", g.name, err)
		}
	}
	bad := []struct{ name, kind, unit, want string }{
		{"frames_total", KindCounter, "", "prefix testbed_"},
		{"testbed_frames", KindCounter, "", "suffix _total"},
		{"testbed_frames_total", KindGauge, "", "for counters"},
		{"testbed_latency", KindGauge, "seconds", "suffix _seconds"},
		{"testbed_rx_total", KindCounter, "bytes", "_bytes_total"},
		{"testbed_x", KindGauge, "Seconds", "lower-case base unit"},
		{"testbed-x", KindGauge, "", "expected letters"},
	}
	for _, b := range bad {
		if err := CheckMetricName(b.name, b.kind, b.unit); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s (%s, %s): %v, want an error saying %q", b.name, b.kind, b.unit, err, b.want)
		}
	}
	m := NewMetrics()
	if _, err := m.Gauge("testbed_x", "x", "", "link"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Gauge("testbed_x", "x", "", "port"); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("re-registering with other labels: %v", err)
	}
	if _, err := m.Counter("testbed_y_total", "y", "", "__a"); err == nil {
		t.Errorf("reserved label name accepted")
	}
	c, _ := m.Counter("testbed_z_total", "z", "", "a")
	if err := c.Add(-1, "x"); err == nil {
		t.Errorf("a counter went down")
	}
	if err := c.Add(1); err == nil || !strings.Contains(err.Error(), "expected 1") {
		t.Errorf("missing label value: %v", err)
	}
}

func TestExpositionEscapesAndSorts(t *testing.T) {
	m := NewMetrics()
	g, _ := m.Gauge("testbed_beta", "help with \\ and\nnewline", "", "l")
	g.Set(2, `quote " back \ nl`+"\n")
	g.Set(1, "a")
	c, _ := m.Counter("testbed_a_total", "a counter", "")
	c.Add(3)
	text := exposition(t, m)
	want := `# HELP testbed_a_total a counter
# TYPE testbed_a_total counter
testbed_a_total 3
# HELP testbed_beta help with \\ and\nnewline
# TYPE testbed_beta gauge
testbed_beta{l="a"} 1
testbed_beta{l="quote \" back \\ nl\n"} 2
`
	if text != want {
		t.Errorf("exposition:\n%s\nwant:\n%s", text, want)
	}
	promtoolCheck(t, []byte(text))
}

// exposition is what m's handler serves to a scraper.
func exposition(t *testing.T, m *Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	return scrape(t, srv.URL+"/metrics")
}

// promtoolCheck runs `promtool check metrics` on an exposition, when promtool
// is installed (Debian package prometheus).
func promtoolCheck(t *testing.T, text []byte) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not installed (apt-get install prometheus): exposition not checked by promtool")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s\nexposition:\n%s", err, out, text)
	}
}

// checkTextFormat checks that a content type is the text exposition
// format, version 0.0.4, what a scraper that asks for no format gets.
func checkTextFormat(t *testing.T, contentType string) {
	t.Helper()
	mt, params, err := mime.ParseMediaType(contentType)
	want, wantParams, _ := mime.ParseMediaType(MetricsContentType)
	if err != nil || mt != want || params["version"] != wantParams["version"] || params["version"] != "0.0.4" {
		t.Errorf("content type %q (%v), want %s", contentType, err, MetricsContentType)
	}
}

// decodePushPath decodes a Pushgateway push path, /metrics/job/<job>/<name>/<value>...,
// into its grouping labels (with job); a name ending in @base64 has its
// value in base64url ("=" for an empty one).
func decodePushPath(path string) (map[string]string, error) {
	rest, ok := strings.CutPrefix(path, "/metrics/")
	parts := strings.Split(rest, "/")
	if !ok || len(parts)%2 != 0 {
		return nil, fmt.Errorf("push path %q: expected /metrics/ and name/value pairs", path)
	}
	group := map[string]string{}
	for i := 0; i < len(parts); i += 2 {
		name, value := parts[i], parts[i+1]
		var err error
		if n, ok := strings.CutSuffix(name, "@base64"); ok {
			var b []byte
			if value != "=" {
				b, err = base64.RawURLEncoding.DecodeString(value)
			}
			name, value = n, string(b)
		} else {
			value, err = url.QueryUnescape(value)
		}
		if _, dup := group[name]; err != nil || dup {
			return nil, fmt.Errorf("push path %q: label %s: %v (or given twice)", path, name, err)
		}
		group[name] = value
	}
	return group, nil
}

// stepRecipe is a recipe of n steps that touch no device; step hook runs
// inside each step, while the run is live.
type stepRecipe struct {
	n    int
	hook func(ctx context.Context, rc *RunContext, i int) error
}

func (r *stepRecipe) Meta() Meta {
	return Meta{Name: "metrics-probe", Version: "1.2.0", Summary: "steps that publish live metrics"}
}
func (r *stepRecipe) Plan(pc *PlanContext) (*Plan, error) {
	p := &Plan{Summary: func(bool) (any, error) {
		return map[string]any{"frames": map[string]any{"sent": 1000.0, "lost": 3.0}, "ok": true, "note": "text"}, nil
	}}
	for i := 1; i <= r.n; i++ {
		p.Steps = append(p.Steps, &Step{Name: fmt.Sprintf("step %d", i), Action: "probe",
			Run: func(ctx context.Context, rc *RunContext) error { return r.hook(ctx, rc, i) }})
	}
	return p, nil
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("scrape %s: %s\n%s", url, resp.Status, b)
	}
	checkTextFormat(t, resp.Header.Get("Content-Type"))
	return string(b)
}

func TestRunPublishesLiveMetricsOverHTTP(t *testing.T) {
	inv, err := inventory.Parse("lab.yaml", []byte("version: 1\nname: t\ndevices:\n  voa1: {kind: voa, driver: keysight-n77xx, address: \"tcp://127.0.0.1:5025\", channels: 4}\n"))
	if err != nil {
		t.Fatal(err)
	}
	reg := NewMetrics()
	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()
	var mid string
	r := &stepRecipe{n: 4, hook: func(ctx context.Context, rc *RunContext, i int) error {
		c, err := rc.Counter("testbed_frames_total", "Frames by outcome.", "frames", "outcome")
		if err != nil {
			return err
		}
		if err := c.Add(250, "sent"); err != nil {
			return err
		}
		if _, err := rc.Gauge("testbed_bad", "x", "", "run_id"); err == nil {
			return fmt.Errorf("a recipe could set run_id")
		}
		if i == 3 {
			mid = scrape(t, srv.URL+"/metrics")
		}
		return nil
	}}
	p, _ := ResolveParams(nil, "", nil, nil)
	dir := t.TempDir()
	eng := &Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state"), Metrics: reg}
	res, err := eng.Run(context.Background(), RunRequest{Recipe: r, Params: p, Lab: inv, Labels: map[string]string{"suite_entry": "probe"}})
	if err != nil || res.Status != results.StatusOK {
		t.Fatalf("run: %v %+v", err, res)
	}
	lbl := fmt.Sprintf(`recipe="metrics-probe",run_id="%s"`, res.RunID)
	for _, want := range []string{
		`testbed_run_state{` + lbl + `,state="running"} 1`,
		`testbed_run_state{` + lbl + `,state="ok"} 0`,
		`testbed_run_step{` + lbl + `} 3`,
		`testbed_run_steps{` + lbl + `} 4`,
		`testbed_run_progress_ratio{` + lbl + `} 0.5`,
		`testbed_frames_total{outcome="sent",` + lbl + `} 750`,
		`testbed_run_info{` + lbl + `,version="1.2.0"} 1`,
		`# TYPE testbed_frames_total counter`,
		`testbed_run_start_time_seconds{` + lbl + `} 1.`,
	} {
		if !strings.Contains(mid, want) {
			t.Errorf("mid-run scrape lacks %q:\n%s", want, mid)
		}
	}
	promtoolCheck(t, []byte(mid))
	end := scrape(t, srv.URL+"/metrics")
	for _, want := range []string{`testbed_run_state{` + lbl + `,state="ok"} 1`, `testbed_run_state{` + lbl + `,state="running"} 0`,
		`testbed_run_progress_ratio{` + lbl + `} 1`, `testbed_frames_total{outcome="sent",` + lbl + `} 1000`, `testbed_run_end_time_seconds{`} {
		if !strings.Contains(end, want) {
			t.Errorf("final scrape lacks %q:\n%s", want, end)
		}
	}
	rd, err := results.Open(res.Dir)
	if err != nil || rd.Manifest.Labels["suite_entry"] != "probe" {
		t.Errorf("labels not in the manifest: %v %+v", err, rd)
	}
}

func TestPushSummaryToPushgateway(t *testing.T) {
	var mu sync.Mutex
	var method, path, ctype, body string
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		method, path, ctype, body = r.Method, r.URL.EscapedPath(), r.Header.Get("Content-Type"), string(b)
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer gw.Close()
	started := time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)
	ended := started.Add(90 * time.Second)
	m := results.Manifest{RunID: "20261122T130000.000Z-attenuation-sweep-abcdef", Recipe: results.RecipeRef{Name: "attenuation-sweep", Version: "1.0.0"},
		Status: results.StatusOK, Started: started, Ended: &ended}
	summary := []byte(`{"partial": false, "links": {"l10g": {"loss_cliff_db": {"1e-06": 9.3, "1e-08": null}, "fec": "none"}}}`)
	reg, err := SummaryMetrics(m, summary)
	if err != nil {
		t.Fatal(err)
	}
	if err := Push(context.Background(), gw.URL+"/", "testbed", []string{"lab", "lab 1", "entry", "a/b"}, reg); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	group, err := decodePushPath(path)
	if method != http.MethodPut || err != nil || !maps.Equal(group, map[string]string{"job": "testbed", "lab": "lab 1", "entry": "a/b"}) || ctype != MetricsContentType {
		t.Errorf("push: %s %s %v %v (%s)", method, path, group, err, ctype)
	}
	lbl := `recipe="attenuation-sweep",run_id="20261122T130000.000Z-attenuation-sweep-abcdef"`
	for _, want := range []string{
		`testbed_result_value{metric="links.l10g.loss_cliff_db.1e-06",` + lbl + `} 9.3`,
		`testbed_result_value{metric="partial",` + lbl + `} 0`,
		`testbed_run_state{` + lbl + `,state="ok"} 1`,
		`testbed_run_duration_seconds{` + lbl + `} 90`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("pushed body lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "1e-08") || strings.Contains(body, `metric="links.l10g.fec"`) {
		t.Errorf("nulls and strings were pushed:\n%s", body)
	}
	promtoolCheck(t, []byte(body))

	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "pushed metrics are invalid or inconsistent", http.StatusBadRequest)
	}))
	defer refuse.Close()
	if err := Push(context.Background(), refuse.URL, "testbed", nil, reg); err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "inconsistent") {
		t.Errorf("refused push: %v", err)
	}
	if err := Push(context.Background(), "ftp://x", "testbed", nil, reg); err == nil || !strings.Contains(err.Error(), "http://") {
		t.Errorf("bad URL: %v", err)
	}
	// The series carry recipe and run_id: a group keyed by either would
	// hide the series' own label, so the push is refused before sending.
	method = ""
	mu.Unlock()
	err = Push(context.Background(), gw.URL, "testbed", []string{"recipe", "attenuation-sweep"}, reg)
	mu.Lock()
	if err == nil || !strings.Contains(err.Error(), "recipe") || method != "" {
		t.Errorf("grouping by a label the series carry: %v (request %q)", err, method)
	}
}
