package orchestrator

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"testbed/results"
)

// Live metrics in the Prometheus text exposition format (version 0.0.4):
// the engine publishes a run's state, current step, progress and start
// time; recipes publish their own live values through RunContext.Gauge and
// RunContext.Counter. Every run-scoped series carries the recipe and run_id
// labels. A Metrics value is its own registry: nothing is global, so two
// runs (or two tests) in one process never see each other's series.
//
// The format is written here with the standard library rather than with
// client_golang: the module's dependency set does not include client_golang's
// own dependencies, and the text format is small and stable
// (https://prometheus.io/docs/instrumenting/exposition_formats/).
// `promtool check metrics` validates what Write produces (see the tests).

// MetricsContentType is the exposition format's HTTP content type.
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// Kinds of metric families.
const (
	KindGauge   = "gauge"
	KindCounter = "counter"
)

// Run states as the testbed_run_state gauge labels them.
var runStates = []string{string(results.StatusRunning), string(results.StatusOK), string(results.StatusFailed), string(results.StatusAborted)}

var (
	metricNameRe = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRe  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	unitRe       = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
)

// Metrics is a registry of metric families.
type Metrics struct {
	mu   sync.Mutex
	fams map[string]*family
}

type family struct {
	name, help, kind string
	labels           []string
	series           map[string]*series
}

type series struct {
	values []string
	v      float64
}

// NewMetrics returns an empty registry.
func NewMetrics() *Metrics { return &Metrics{fams: map[string]*family{}} }

// CheckMetricName checks a name against the Prometheus naming conventions
// this project follows: a testbed_ prefix, the unit as a suffix (counters:
// _<unit>_total), _total on counters and only on counters.
func CheckMetricName(name, kind, unit string) error {
	if !metricNameRe.MatchString(name) {
		return fmt.Errorf("metric name %q: expected letters, digits, '_' and ':', not starting with a digit", name)
	}
	if !strings.HasPrefix(name, "testbed_") {
		return fmt.Errorf("metric name %q: expected the prefix testbed_", name)
	}
	if unit != "" && !unitRe.MatchString(unit) {
		return fmt.Errorf("metric %s: unit %q: expected a lower-case base unit such as seconds, bytes, ratio, frames", name, unit)
	}
	switch kind {
	case KindCounter:
		if !strings.HasSuffix(name, "_total") {
			return fmt.Errorf("counter %s: expected the suffix _total", name)
		}
		if unit != "" && !strings.HasSuffix(name, "_"+unit+"_total") {
			return fmt.Errorf("counter %s: expected the suffix _%s_total (unit %s)", name, unit, unit)
		}
	case KindGauge:
		if strings.HasSuffix(name, "_total") {
			return fmt.Errorf("gauge %s: the suffix _total is for counters", name)
		}
		if unit != "" && !strings.HasSuffix(name, "_"+unit) {
			return fmt.Errorf("gauge %s: expected the suffix _%s (unit %s)", name, unit, unit)
		}
	default:
		return fmt.Errorf("metric %s: kind %q: expected gauge or counter", name, kind)
	}
	return nil
}

// register returns the family of that name, creating it; registering a
// name again with another kind or other labels is an error.
func (m *Metrics) register(name, help, kind, unit string, labels []string) (*family, error) {
	if err := CheckMetricName(name, kind, unit); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, l := range labels {
		if !labelNameRe.MatchString(l) || strings.HasPrefix(l, "__") {
			return nil, fmt.Errorf("metric %s: label name %q: expected letters, digits and '_', not starting with a digit or __", name, l)
		}
		if seen[l] {
			return nil, fmt.Errorf("metric %s: label %q given twice", name, l)
		}
		seen[l] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.fams[name]; ok {
		if f.kind != kind || strings.Join(f.labels, ",") != strings.Join(labels, ",") {
			return nil, fmt.Errorf("metric %s is already registered as a %s with labels (%s), not a %s with labels (%s)",
				name, f.kind, strings.Join(f.labels, ","), kind, strings.Join(labels, ","))
		}
		return f, nil
	}
	f := &family{name: name, help: help, kind: kind, labels: append([]string(nil), labels...), series: map[string]*series{}}
	m.fams[name] = f
	return f, nil
}

// Gauge registers (or returns) a gauge family.
func (m *Metrics) Gauge(name, help, unit string, labels ...string) (*Gauge, error) {
	f, err := m.register(name, help, KindGauge, unit, labels)
	if err != nil {
		return nil, err
	}
	return &Gauge{vec{m: m, f: f}}, nil
}

// Counter registers (or returns) a counter family.
func (m *Metrics) Counter(name, help, unit string, labels ...string) (*Counter, error) {
	f, err := m.register(name, help, KindCounter, unit, labels)
	if err != nil {
		return nil, err
	}
	return &Counter{vec{m: m, f: f}}, nil
}

// vec is a family handle; pre are label values filled in for the caller
// (recipe and run_id for run-scoped metrics).
type vec struct {
	m   *Metrics
	f   *family
	pre []string
}

func (v vec) update(lv []string, fn func(s *series) error) error {
	all := append(append([]string(nil), v.pre...), lv...)
	if len(all) != len(v.f.labels) {
		return fmt.Errorf("metric %s: got %d label values, expected %d (%s)", v.f.name, len(all), len(v.f.labels), strings.Join(v.f.labels, ", "))
	}
	key := strings.Join(all, "\xff")
	v.m.mu.Lock()
	defer v.m.mu.Unlock()
	s, ok := v.f.series[key]
	if !ok {
		s = &series{values: all}
		v.f.series[key] = s
	}
	return fn(s)
}

// Gauge is a value that goes up and down.
type Gauge struct{ vec }

// Set sets the series with these label values.
func (g *Gauge) Set(x float64, labelValues ...string) error {
	return g.update(labelValues, func(s *series) error { s.v = x; return nil })
}

// Add adds to the series with these label values.
func (g *Gauge) Add(x float64, labelValues ...string) error {
	return g.update(labelValues, func(s *series) error { s.v += x; return nil })
}

// Counter is a value that only goes up.
type Counter struct{ vec }

// Add adds x >= 0 to the series with these label values.
func (c *Counter) Add(x float64, labelValues ...string) error {
	if x < 0 || math.IsNaN(x) {
		return fmt.Errorf("counter %s: cannot add %v: counters only go up", c.f.name, x)
	}
	return c.update(labelValues, func(s *series) error { s.v += x; return nil })
}

// Inc adds one.
func (c *Counter) Inc(labelValues ...string) error { return c.Add(1, labelValues...) }

// Value returns a series' value and whether it exists (for tests and
// summaries).
func (m *Metrics) Value(name string, labelValues ...string) (float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.fams[name]
	if !ok {
		return 0, false
	}
	s, ok := f.series[strings.Join(labelValues, "\xff")]
	if !ok {
		return 0, false
	}
	return s.v, true
}

// Write writes every family that has a series, in the text exposition
// format, sorted by name and label values.
func (m *Metrics) Write(w io.Writer) error {
	m.mu.Lock()
	var b bytes.Buffer
	names := make([]string, 0, len(m.fams))
	for n := range m.fams {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := m.fams[n]
		if len(f.series) == 0 {
			continue
		}
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.name, escapeHelp(f.help), f.name, f.kind)
		keys := make([]string, 0, len(f.series))
		for k := range f.series {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s := f.series[k]
			b.WriteString(f.name)
			if len(f.labels) > 0 {
				b.WriteByte('{')
				for i, l := range f.labels {
					if i > 0 {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, "%s=\"%s\"", l, escapeLabel(s.values[i]))
				}
				b.WriteByte('}')
			}
			b.WriteByte(' ')
			b.WriteString(formatSample(s.v))
			b.WriteByte('\n')
		}
	}
	m.mu.Unlock()
	_, err := w.Write(b.Bytes())
	return err
}

// Handler serves the registry as /metrics does.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", MetricsContentType)
		_ = m.Write(w)
	})
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(s)
}

func formatSample(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// RunMetrics are one run's series: the engine's run gauges and the
// recipe's own, all labelled with recipe and run_id.
type RunMetrics struct {
	m             *Metrics
	recipe, runID string

	mu       sync.Mutex
	total    int
	state    *Gauge
	step     *Gauge
	progress *Gauge
	events   *Counter
	end      *Gauge
}

// The run gauges every run publishes.
func (m *Metrics) startRun(recipe, version, runID string, steps int, started time.Time) (*RunMetrics, error) {
	rm := &RunMetrics{m: m, recipe: recipe, runID: runID, total: steps}
	var err error
	g := func(name, help, unit string, labels ...string) *Gauge {
		if err != nil {
			return nil
		}
		var x *Gauge
		x, err = m.Gauge(name, help, unit, append([]string{"recipe", "run_id"}, labels...)...)
		if x != nil {
			x.pre = []string{recipe, runID}
		}
		return x
	}
	info := g("testbed_run_info", "A run of a recipe (always 1); its version is a label.", "", "version")
	rm.state = g("testbed_run_state", "1 for the state the run is in (running, ok, failed, aborted), else 0.", "", "state")
	rm.step = g("testbed_run_step", "1-based index of the step running now (the last one, once the run ended).", "")
	stepsG := g("testbed_run_steps", "Steps in the run's plan.", "")
	rm.progress = g("testbed_run_progress_ratio", "Fraction of the plan's steps done (run or skipped).", "ratio")
	start := g("testbed_run_start_time_seconds", "When the run started, in seconds since the Unix epoch.", "seconds")
	rm.end = g("testbed_run_end_time_seconds", "When the run ended, in seconds since the Unix epoch.", "seconds")
	if err != nil {
		return nil, err
	}
	c, err := m.Counter("testbed_run_events_total", "Events the run recorded, by type.", "", "recipe", "run_id", "type")
	if err != nil {
		return nil, err
	}
	c.pre = []string{recipe, runID}
	rm.events = c
	_ = info.Set(1, version)
	_ = stepsG.Set(float64(steps))
	_ = rm.step.Set(0)
	_ = rm.progress.Set(0)
	_ = start.Set(float64(started.UnixNano()) / 1e9)
	rm.setState(string(results.StatusRunning))
	return rm, nil
}

func (rm *RunMetrics) setState(state string) {
	for _, s := range runStates {
		v := 0.0
		if s == state {
			v = 1
		}
		_ = rm.state.Set(v, s)
	}
}

// observe follows the run's events: steps, progress and the end state.
func (rm *RunMetrics) observe(ev results.Event) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	_ = rm.events.Inc(ev.Type)
	switch ev.Type {
	case "step.start":
		if i, ok := intField(ev.Fields, "index"); ok {
			_ = rm.step.Set(float64(i))
		}
	case "step.end", "step.skip":
		if i, ok := intField(ev.Fields, "index"); ok && rm.total > 0 {
			_ = rm.progress.Set(float64(i) / float64(rm.total))
		}
	case "run.end":
		if s, ok := ev.Fields["status"].(string); ok {
			rm.setState(s)
		}
		t := ev.Time
		if t.IsZero() {
			t = time.Now()
		}
		_ = rm.end.Set(float64(t.UnixNano()) / 1e9)
	}
}

func intField(f map[string]any, k string) (int, bool) {
	switch v := f[k].(type) {
	case int:
		return v, true
	case int64:
		return int(v), true
	case float64:
		return int(v), true
	}
	return 0, false
}

// Gauge registers a recipe's live gauge. The recipe and run_id labels are
// added in front of labels and filled in: Set and Add take values for the
// recipe's own labels only. Names follow CheckMetricName.
func (rc *RunContext) Gauge(name, help, unit string, labels ...string) (*Gauge, error) {
	if rc.metrics == nil {
		return nil, fmt.Errorf("metric %s: this run publishes no metrics", name)
	}
	if err := reservedLabels(name, labels); err != nil {
		return nil, err
	}
	g, err := rc.metrics.m.Gauge(name, help, unit, append([]string{"recipe", "run_id"}, labels...)...)
	if err != nil {
		return nil, err
	}
	g.pre = []string{rc.metrics.recipe, rc.metrics.runID}
	return g, nil
}

// Counter registers a recipe's live counter, labelled like Gauge.
func (rc *RunContext) Counter(name, help, unit string, labels ...string) (*Counter, error) {
	if rc.metrics == nil {
		return nil, fmt.Errorf("metric %s: this run publishes no metrics", name)
	}
	if err := reservedLabels(name, labels); err != nil {
		return nil, err
	}
	c, err := rc.metrics.m.Counter(name, help, unit, append([]string{"recipe", "run_id"}, labels...)...)
	if err != nil {
		return nil, err
	}
	c.pre = []string{rc.metrics.recipe, rc.metrics.runID}
	return c, nil
}

func reservedLabels(name string, labels []string) error {
	for _, l := range labels {
		if l == "recipe" || l == "run_id" {
			return fmt.Errorf("metric %s: label %q is set by the engine", name, l)
		}
	}
	return nil
}

// SummaryMetrics turns a finished run into series for a Pushgateway: every
// numeric leaf of summary.json as testbed_result_value{metric="<path>"}
// (path as results.FlattenSummary names it), booleans as 0/1, plus the
// run's state, start and end time and duration. Strings and nulls are left
// out: Prometheus holds numbers only.
func SummaryMetrics(m results.Manifest, summary []byte) (*Metrics, error) {
	reg := NewMetrics()
	pre := []string{m.Recipe.Name, m.RunID}
	state, err := reg.Gauge("testbed_run_state", "1 for the state the run ended in, else 0.", "", "recipe", "run_id", "state")
	if err != nil {
		return nil, err
	}
	for _, s := range runStates[1:] {
		v := 0.0
		if s == string(m.Status) {
			v = 1
		}
		_ = state.Set(v, append(pre, s)...)
	}
	start, _ := reg.Gauge("testbed_run_start_time_seconds", "When the run started, in seconds since the Unix epoch.", "seconds", "recipe", "run_id")
	_ = start.Set(float64(m.Started.UnixNano())/1e9, pre...)
	if m.Ended != nil {
		end, _ := reg.Gauge("testbed_run_end_time_seconds", "When the run ended, in seconds since the Unix epoch.", "seconds", "recipe", "run_id")
		_ = end.Set(float64(m.Ended.UnixNano())/1e9, pre...)
		dur, _ := reg.Gauge("testbed_run_duration_seconds", "How long the run took.", "seconds", "recipe", "run_id")
		_ = dur.Set(m.Ended.Sub(m.Started).Seconds(), pre...)
	}
	if len(summary) == 0 {
		return reg, nil
	}
	ms, err := results.FlattenSummary(summary)
	if err != nil {
		return nil, err
	}
	val, _ := reg.Gauge("testbed_result_value", "A number from the run's summary.json, named by its path (booleans as 0 or 1).", "", "recipe", "run_id", "metric")
	for _, x := range ms {
		switch v := x.Value.(type) {
		case float64:
			_ = val.Set(v, append(pre, x.Path)...)
		case bool:
			b := 0.0
			if v {
				b = 1
			}
			_ = val.Set(b, append(pre, x.Path)...)
		}
	}
	return reg, nil
}

// Push replaces the group job/<job>/<key>/<value>... on a Prometheus
// Pushgateway with the registry's series (HTTP PUT, text format). Grouping
// is a list of label name, value pairs.
func Push(ctx context.Context, gateway, job string, grouping []string, m *Metrics) error {
	if len(grouping)%2 != 0 {
		return fmt.Errorf("push to %s: grouping needs label name and value pairs, got %d strings", gateway, len(grouping))
	}
	u, err := url.Parse(gateway)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("pushgateway %q: expected an http:// or https:// URL", gateway)
	}
	p := strings.TrimRight(u.Path, "/") + "/metrics/" + groupSegment("job", job)
	for i := 0; i < len(grouping); i += 2 {
		if !labelNameRe.MatchString(grouping[i]) {
			return fmt.Errorf("push to %s: grouping label %q is not a label name", gateway, grouping[i])
		}
		p += "/" + groupSegment(grouping[i], grouping[i+1])
	}
	var body bytes.Buffer
	if err := m.Write(&body); err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	target := *u
	target.Path, target.RawPath = "", ""
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, target.String()+p, &body)
	if err != nil {
		return fmt.Errorf("push to %s: %w", gateway, err)
	}
	req.Header.Set("Content-Type", MetricsContentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("push to %s: %w", gateway, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("push to %s: %s: %s", gateway, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// groupSegment is one name/value pair of a Pushgateway path; values with a
// '/' (or empty ones) use the base64 form the Pushgateway defines.
func groupSegment(name, value string) string {
	if value == "" {
		return name + "@base64/="
	}
	if strings.Contains(value, "/") {
		return name + "@base64/" + base64.RawURLEncoding.EncodeToString([]byte(value))
	}
	return name + "/" + url.PathEscape(value)
}
