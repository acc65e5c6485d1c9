package orchestrator

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"testbed/inventory"
	"testbed/results"
)

func TestHistogramExposition(t *testing.T) {
	m := NewMetrics()
	h, err := m.Histogram("testbed_probe_seconds", "probe times", "seconds", []float64{0.001, 0.01, 0.1}, "link")
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []float64{0.0005, 0.001, 0.002, 0.05, 3} {
		if err := h.Observe(x, "l1"); err != nil {
			t.Fatal(err)
		}
	}
	text := exposition(t, m)
	want := `# HELP testbed_probe_seconds probe times
# TYPE testbed_probe_seconds histogram
testbed_probe_seconds_bucket{link="l1",le="0.001"} 2
testbed_probe_seconds_bucket{link="l1",le="0.01"} 3
testbed_probe_seconds_bucket{link="l1",le="0.1"} 4
testbed_probe_seconds_bucket{link="l1",le="+Inf"} 5
testbed_probe_seconds_sum{link="l1"} 3.0535
testbed_probe_seconds_count{link="l1"} 5
`
	if text != want {
		t.Errorf("exposition:\n%s\nwant:\n%s", text, want)
	}
	promtoolCheck(t, []byte(text))

	for _, bad := range []struct {
		name    string
		buckets []float64
		labels  []string
		want    string
	}{
		{"testbed_x_seconds", nil, nil, "no buckets"},
		{"testbed_x_seconds", []float64{1, 1}, nil, "increasing"},
		{"testbed_x_seconds_count", []float64{1}, nil, "_count"},
		{"testbed_x_total", []float64{1}, nil, "_total is for counters"},
		{"testbed_y_seconds", []float64{1}, []string{"le"}, "label le"},
		{"testbed_probe_seconds", []float64{1}, []string{"link"}, "other buckets"},
	} {
		if _, err := m.Histogram(bad.name, "x", "seconds", bad.buckets, bad.labels...); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s %v %v: %v, want an error saying %q", bad.name, bad.buckets, bad.labels, err, bad.want)
		}
	}
	if err := h.Observe(1); err == nil {
		t.Errorf("an observation without its label value was accepted")
	}
}

var typeLineRe = regexp.MustCompile(`(?m)^# TYPE (\S+) (\S+)$`)

// families returns name -> kind of the families in an exposition.
func families(text string) map[string]string {
	out := map[string]string{}
	for _, m := range typeLineRe.FindAllStringSubmatch(text, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// A run whose recipe names every measurement field publishes exactly the
// families KnownMetrics lists as run and measurement families, and what
// SummaryMetrics pushes adds only families KnownMetrics lists.
func TestKnownMetricsAreWhatARunPublishes(t *testing.T) {
	inv, err := inventory.Parse("lab.yaml", []byte("version: 1\nname: t\ndevices:\n  voa1: {kind: voa, driver: keysight-n77xx, address: \"tcp://127.0.0.1:5025\", channels: 4}\n"))
	if err != nil {
		t.Fatal(err)
	}
	reg := NewMetrics()
	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()
	r := &stepRecipe{n: 3, hook: func(ctx context.Context, rc *RunContext, i int) error {
		rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("point %d", i), Fields: map[string]any{
			"link": "l25g", "frames_tx": int64(1000 * i), "frames_lost": int64(i), "loss_rate": float64(i) / 1000, "loss_rate_high": float64(i) / 500,
			"attenuation_db": 7.5 + float64(i), "rx_power_dbm": -9.25, "queue_depth_packets": 40 + i, "fct_seconds": []any{12e-6, 0.25},
		}})
		// A measurement of another subject, by device, with a bad value.
		rc.Event(results.Event{Type: "measurement", Device: "sw1", Fields: map[string]any{"queue_depth_packets": 7, "loss_rate": "n/a"}})
		return nil
	}}
	p, _ := ResolveParams(nil, "", nil, nil)
	dir := t.TempDir()
	eng := &Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state"), Metrics: reg}
	res, err := eng.Run(context.Background(), RunRequest{Recipe: r, Params: p, Lab: inv})
	if err != nil || res.Status != results.StatusOK {
		t.Fatalf("run: %v %+v", err, res)
	}
	text := scrape(t, srv.URL+"/metrics")
	promtoolCheck(t, []byte(text))
	got := families(text)
	known := map[string]MetricInfo{}
	var live []string
	for _, fi := range KnownMetrics() {
		known[fi.Name] = fi
		if fi.Source != SourceSummary {
			live = append(live, fi.Name)
		}
		if err := CheckMetricName(fi.Name, fi.Kind, fi.Unit); err != nil {
			t.Errorf("known metric: %v", err)
		}
	}
	var gotNames []string
	for n, kind := range got {
		gotNames = append(gotNames, n)
		if fi, ok := known[n]; !ok || fi.Kind != kind {
			t.Errorf("the run published %s (%s), which KnownMetrics does not list as such", n, kind)
		}
	}
	sort.Strings(gotNames)
	sort.Strings(live)
	if !slices.Equal(gotNames, live) {
		t.Errorf("published families %v\nKnownMetrics (live) %v", gotNames, live)
	}
	run := fmt.Sprintf(`recipe="metrics-probe",run_id="%s"`, res.RunID)
	l25g, sw1 := `link="l25g",`+run, `link="sw1",`+run
	for _, want := range []string{
		`testbed_sent_frames_total{` + l25g + `} 6000`,
		`testbed_lost_frames_total{` + l25g + `} 6`,
		`testbed_frame_loss_ratio{` + l25g + `} 0.003`,
		`testbed_attenuation_decibels{` + l25g + `} 10.5`,
		`testbed_queue_depth_packets{` + l25g + `} 43`,
		`testbed_queue_depth_packets{` + sw1 + `} 7`,
		`testbed_fct_seconds_bucket{` + l25g + `,le="2e-05"} 3`,
		`testbed_fct_seconds_bucket{` + l25g + `,le="0.2"} 3`,
		`testbed_fct_seconds_bucket{` + l25g + `,le="0.5"} 6`,
		`testbed_fct_seconds_count{` + l25g + `} 6`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("scrape lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, `testbed_frame_loss_ratio{`+sw1+`}`) {
		t.Errorf("a non-numeric field became a sample")
	}

	rd, err := results.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := SummaryMetrics(rd.Manifest, rd.Summary)
	if err != nil {
		t.Fatal(err)
	}
	pushed := exposition(t, sm)
	promtoolCheck(t, []byte(pushed))
	for n, kind := range families(pushed) {
		if fi, ok := known[n]; !ok || fi.Kind != kind {
			t.Errorf("SummaryMetrics pushes %s (%s), which KnownMetrics does not list as such", n, kind)
		}
	}
}

// A recipe that registered a measurement family's name its own way keeps
// it; the engine's series does not break the run.
func TestRecipeOwnFamilyWinsOverMeasurementSeries(t *testing.T) {
	inv, _ := inventory.Parse("lab.yaml", []byte("version: 1\nname: t\ndevices: {}\n"))
	reg := NewMetrics()
	r := &stepRecipe{n: 1, hook: func(ctx context.Context, rc *RunContext, i int) error {
		g, err := rc.Gauge("testbed_frame_loss_ratio", "mine", "ratio", "port")
		if err != nil {
			return err
		}
		_ = g.Set(0.5, "p1")
		rc.Event(results.Event{Type: "measurement", Fields: map[string]any{"link": "x", "loss_rate": 0.25}})
		return nil
	}}
	p, _ := ResolveParams(nil, "", nil, nil)
	dir := t.TempDir()
	eng := &Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state"), Metrics: reg}
	res, err := eng.Run(context.Background(), RunRequest{Recipe: r, Params: p, Lab: inv})
	if err != nil || res.Status != results.StatusOK {
		t.Fatalf("run: %v %+v", err, res)
	}
	if v, ok := reg.Value("testbed_frame_loss_ratio", "metrics-probe", res.RunID, "p1"); !ok || v != 0.5 {
		t.Errorf("the recipe's own series: %v %v", v, ok)
	}
}
