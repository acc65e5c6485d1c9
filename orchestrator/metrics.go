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
	"slices"
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
	KindGauge     = "gauge"
	KindCounter   = "counter"
	KindHistogram = "histogram"
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
	buckets          []float64 // upper bounds, histograms only
	series           map[string]*series
}

type series struct {
	values []string
	v      float64
	// Histograms: observations per bucket (not cumulative), and their
	// count; v holds the sum.
	counts []uint64
	count  uint64
}

// NewMetrics returns an empty registry.
func NewMetrics() *Metrics { return &Metrics{fams: map[string]*family{}} }

// CheckMetricName checks a name against the Prometheus naming conventions
// this project follows: a testbed_ prefix, the unit as a suffix (counters:
// _<unit>_total), _total on counters and only on counters, and no
// histogram name ending in the _bucket, _sum or _count its series add.
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
	case KindGauge, KindHistogram:
		if strings.HasSuffix(name, "_total") {
			return fmt.Errorf("%s %s: the suffix _total is for counters", kind, name)
		}
		if unit != "" && !strings.HasSuffix(name, "_"+unit) {
			return fmt.Errorf("%s %s: expected the suffix _%s (unit %s)", kind, name, unit, unit)
		}
		if kind == KindHistogram {
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if strings.HasSuffix(name, suf) {
					return fmt.Errorf("histogram %s: the suffix %s belongs to the histogram's own series", name, suf)
				}
			}
		}
	default:
		return fmt.Errorf("metric %s: kind %q: expected gauge, counter or histogram", name, kind)
	}
	return nil
}

// register returns the family of that name, creating it; registering a
// name again with another kind or other labels is an error.
func (m *Metrics) register(name, help, kind, unit string, labels []string, buckets []float64) (*family, error) {
	if err := CheckMetricName(name, kind, unit); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, l := range labels {
		if !labelNameRe.MatchString(l) || strings.HasPrefix(l, "__") {
			return nil, fmt.Errorf("metric %s: label name %q: expected letters, digits and '_', not starting with a digit or __", name, l)
		}
		if l == "le" && kind == KindHistogram {
			return nil, fmt.Errorf("histogram %s: label le is the bucket's upper bound", name)
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
		if !slices.Equal(f.buckets, buckets) {
			return nil, fmt.Errorf("histogram %s is already registered with other buckets", name)
		}
		return f, nil
	}
	f := &family{name: name, help: help, kind: kind, labels: append([]string(nil), labels...), buckets: slices.Clone(buckets), series: map[string]*series{}}
	m.fams[name] = f
	return f, nil
}

// Gauge registers (or returns) a gauge family.
func (m *Metrics) Gauge(name, help, unit string, labels ...string) (*Gauge, error) {
	f, err := m.register(name, help, KindGauge, unit, labels, nil)
	if err != nil {
		return nil, err
	}
	return &Gauge{vec{m: m, f: f}}, nil
}

// Counter registers (or returns) a counter family.
func (m *Metrics) Counter(name, help, unit string, labels ...string) (*Counter, error) {
	f, err := m.register(name, help, KindCounter, unit, labels, nil)
	if err != nil {
		return nil, err
	}
	return &Counter{vec{m: m, f: f}}, nil
}

// Histogram registers (or returns) a histogram family with these bucket
// upper bounds (increasing, finite; +Inf is added).
func (m *Metrics) Histogram(name, help, unit string, buckets []float64, labels ...string) (*Histogram, error) {
	if len(buckets) == 0 {
		return nil, fmt.Errorf("histogram %s: no buckets", name)
	}
	for i, b := range buckets {
		if math.IsNaN(b) || math.IsInf(b, 0) || (i > 0 && b <= buckets[i-1]) {
			return nil, fmt.Errorf("histogram %s: buckets must be finite and increasing, got %v", name, buckets)
		}
	}
	f, err := m.register(name, help, KindHistogram, unit, labels, buckets)
	if err != nil {
		return nil, err
	}
	return &Histogram{vec{m: m, f: f}}, nil
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

// Histogram counts observations into buckets.
type Histogram struct{ vec }

// Observe adds one observation to the series with these label values.
func (h *Histogram) Observe(x float64, labelValues ...string) error {
	if math.IsNaN(x) {
		return fmt.Errorf("histogram %s: cannot observe NaN", h.f.name)
	}
	return h.update(labelValues, func(s *series) error {
		if s.counts == nil {
			s.counts = make([]uint64, len(h.f.buckets)+1)
		}
		i, _ := slices.BinarySearch(h.f.buckets, x) // first bound >= x: le is inclusive
		s.counts[i]++
		s.count++
		s.v += x
		return nil
	})
}

// Value returns a series' value and whether it exists (for tests and
// summaries); a histogram's value is the sum of its observations.
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
			if f.kind != KindHistogram {
				writeSample(&b, f.name, f.labels, s.values, "", s.v)
				continue
			}
			var cum uint64
			for i, ub := range f.buckets {
				if s.counts != nil {
					cum += s.counts[i]
				}
				writeSample(&b, f.name+"_bucket", f.labels, s.values, formatSample(ub), float64(cum))
			}
			writeSample(&b, f.name+"_bucket", f.labels, s.values, "+Inf", float64(s.count))
			writeSample(&b, f.name+"_sum", f.labels, s.values, "", s.v)
			writeSample(&b, f.name+"_count", f.labels, s.values, "", float64(s.count))
		}
	}
	m.mu.Unlock()
	_, err := w.Write(b.Bytes())
	return err
}

// writeSample writes one sample line; le, if not empty, is added as the
// last label (histogram buckets).
func writeSample(b *bytes.Buffer, name string, labels, values []string, le string, v float64) {
	b.WriteString(name)
	if len(labels) > 0 || le != "" {
		b.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "%s=\"%s\"", l, escapeLabel(values[i]))
		}
		if le != "" {
			if len(labels) > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "le=\"%s\"", le)
		}
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(formatSample(v))
	b.WriteByte('\n')
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

// MetricInfo describes a metric family the testbed publishes. KnownMetrics
// lists them all; dashboards and alert rules may use these names and no
// others (docs/grafana is checked against it).
type MetricInfo struct {
	Name   string   `json:"name"`
	Kind   string   `json:"kind"`
	Unit   string   `json:"unit,omitempty"`
	Help   string   `json:"help"`
	Labels []string `json:"labels"`
	// Source says where the series come from: SourceRun (every run, live),
	// SourceMeasurement (live, from the measurement events that carry
	// Field), SourceSummary (the finished run, as SummaryMetrics pushes it).
	Source string `json:"source"`
	Field  string `json:"field,omitempty"`
}

// Sources of metric families.
const (
	SourceRun         = "run"
	SourceMeasurement = "measurement"
	SourceSummary     = "summary"
)

var runLabels = []string{"recipe", "run_id"}

func runInfo(name, kind, unit, help string, extra ...string) MetricInfo {
	return MetricInfo{Name: name, Kind: kind, Unit: unit, Help: help, Labels: append(append([]string(nil), runLabels...), extra...), Source: SourceRun}
}

// runFamilies are the series the engine publishes for every run.
func runFamilies() []MetricInfo {
	return []MetricInfo{
		runInfo("testbed_run_info", KindGauge, "", "A run of a recipe (always 1); its version is a label.", "version"),
		runInfo("testbed_run_state", KindGauge, "", "1 for the state the run is in (running, ok, failed, aborted), else 0.", "state"),
		runInfo("testbed_run_step", KindGauge, "", "1-based index of the step running now (the last one, once the run ended)."),
		runInfo("testbed_run_steps", KindGauge, "", "Steps in the run's plan."),
		runInfo("testbed_run_progress_ratio", KindGauge, "ratio", "Fraction of the plan's steps done (run or skipped)."),
		runInfo("testbed_run_start_time_seconds", KindGauge, "seconds", "When the run started, in seconds since the Unix epoch."),
		runInfo("testbed_run_end_time_seconds", KindGauge, "seconds", "When the run ended, in seconds since the Unix epoch."),
		runInfo("testbed_run_events_total", KindCounter, "", "Events the run recorded, by type.", "type"),
	}
}

// fctBuckets are the upper bounds of the flow completion time histogram,
// 1 us to 1 s on a 1-2-5 scale: a one-packet flow completes within one
// RTT (microseconds on a 100G link), and a lost tail packet costs a
// retransmission timeout, milliseconds to hundreds of milliseconds
// (LinkGuardian, SIGCOMM 2023, section 2 and Fig. 10: 99.9th percentile
// FCTs of 143 B flows rise 51x to 66x under 1e-3 corruption loss).
func fctBuckets() []float64 {
	return []float64{1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 0.1, 0.2, 0.5, 1}
}

// measurementFamilies are the live series the engine takes from a
// recipe's measurement events: a field of that name (a number; for
// histograms a number or a list of numbers) updates the family, labelled
// with the event's link field (else its device). A recipe gets live frame,
// loss, queue and FCT series by naming its fields so.
func measurementFamilies() []MetricInfo {
	m := func(name, kind, unit, field, help string) MetricInfo {
		return MetricInfo{Name: name, Kind: kind, Unit: unit, Help: help, Labels: append(append([]string(nil), runLabels...), "link"), Source: SourceMeasurement, Field: field}
	}
	return []MetricInfo{
		m("testbed_sent_frames_total", KindCounter, "frames", "frames_tx", "Frames sent in the measurements so far."),
		m("testbed_lost_frames_total", KindCounter, "frames", "frames_lost", "Frames sent and not received intact in the measurements so far."),
		m("testbed_frame_loss_ratio", KindGauge, "ratio", "loss_rate", "Frame loss ratio of the latest measurement."),
		m("testbed_frame_loss_upper_bound_ratio", KindGauge, "ratio", "loss_rate_high", "Upper end of the 95% interval of the latest measurement's frame loss ratio."),
		m("testbed_attenuation_decibels", KindGauge, "decibels", "attenuation_db", "Attenuation of the latest measurement, as read back from the VOA."),
		m("testbed_rx_power_dbm", KindGauge, "dbm", "rx_power_dbm", "Received optical power of the latest measurement."),
		m("testbed_queue_depth_packets", KindGauge, "packets", "queue_depth_packets", "Queue depth of the latest measurement."),
		m("testbed_fct_seconds", KindHistogram, "seconds", "fct_seconds", "Flow completion times measured."),
	}
}

// summaryFamilies are what SummaryMetrics adds to the run's own families.
func summaryFamilies() []MetricInfo {
	s := func(name, unit, help string, extra ...string) MetricInfo {
		return MetricInfo{Name: name, Kind: KindGauge, Unit: unit, Help: help, Labels: append(append([]string(nil), runLabels...), extra...), Source: SourceSummary}
	}
	return []MetricInfo{
		s("testbed_run_duration_seconds", "seconds", "How long the run took."),
		s("testbed_result_value", "", "A number from the run's summary.json, named by its path (booleans as 0 or 1).", "metric"),
	}
}

// KnownMetrics lists every metric family the engine and SummaryMetrics
// publish, sorted by name. Recipes may register more of their own through
// RunContext.Gauge, Counter and Histogram.
func KnownMetrics() []MetricInfo {
	all := append(append(runFamilies(), measurementFamilies()...), summaryFamilies()...)
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all
}

func infoOf(fams []MetricInfo, name string) MetricInfo {
	for _, f := range fams {
		if f.Name == name {
			return f
		}
	}
	panic("orchestrator: no metric family " + name) // a programming error, caught by the tests
}

// registerInfo registers a family as its MetricInfo describes it.
func (m *Metrics) registerInfo(fi MetricInfo) (vec, error) {
	var buckets []float64
	if fi.Kind == KindHistogram {
		buckets = fctBuckets()
	}
	f, err := m.register(fi.Name, fi.Help, fi.Kind, fi.Unit, fi.Labels, buckets)
	if err != nil {
		return vec{}, err
	}
	return vec{m: m, f: f}, nil
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
	// measured are the measurement families by field, registered on first use.
	measured map[string]vec
}

// The run gauges every run publishes.
func (m *Metrics) startRun(recipe, version, runID string, steps int, started time.Time) (*RunMetrics, error) {
	rm := &RunMetrics{m: m, recipe: recipe, runID: runID, total: steps, measured: map[string]vec{}}
	fams := runFamilies()
	var err error
	get := func(name string) vec {
		if err != nil {
			return vec{}
		}
		var v vec
		v, err = m.registerInfo(infoOf(fams, name))
		v.pre = []string{recipe, runID}
		return v
	}
	info := &Gauge{get("testbed_run_info")}
	rm.state = &Gauge{get("testbed_run_state")}
	rm.step = &Gauge{get("testbed_run_step")}
	stepsG := &Gauge{get("testbed_run_steps")}
	rm.progress = &Gauge{get("testbed_run_progress_ratio")}
	start := &Gauge{get("testbed_run_start_time_seconds")}
	rm.end = &Gauge{get("testbed_run_end_time_seconds")}
	rm.events = &Counter{get("testbed_run_events_total")}
	if err != nil {
		return nil, err
	}
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

// observe follows the run's events: steps, progress, the end state, and
// the measurement fields measurementFamilies names.
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
	case "measurement":
		rm.measure(ev)
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

// measure updates the measurement families from an event's fields. A
// family a recipe already registered otherwise is left alone.
func (rm *RunMetrics) measure(ev results.Event) {
	link, _ := ev.Fields["link"].(string)
	if link == "" {
		link = ev.Device
	}
	for _, fi := range measurementFamilies() {
		raw, ok := ev.Fields[fi.Field]
		if !ok {
			continue
		}
		var xs []float64
		if x, ok := toFloat(raw); ok {
			xs = []float64{x}
		} else if fi.Kind == KindHistogram {
			xs = floatList(raw)
		}
		if len(xs) == 0 {
			continue
		}
		v, ok := rm.measured[fi.Field]
		if !ok {
			var err error
			if v, err = rm.m.registerInfo(fi); err != nil {
				rm.measured[fi.Field] = vec{}
				continue
			}
			v.pre = []string{rm.recipe, rm.runID}
			rm.measured[fi.Field] = v
		}
		if v.f == nil {
			continue
		}
		for _, x := range xs {
			switch fi.Kind {
			case KindCounter:
				_ = (&Counter{v}).Add(x, link)
			case KindGauge:
				_ = (&Gauge{v}).Set(x, link)
			case KindHistogram:
				_ = (&Histogram{v}).Observe(x, link)
			}
		}
	}
}

func floatList(v any) []float64 {
	var out []float64
	switch l := v.(type) {
	case []float64:
		return l
	case []any:
		for _, e := range l {
			if x, ok := toFloat(e); ok {
				out = append(out, x)
			}
		}
	}
	return out
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

// Histogram registers a recipe's live histogram with these bucket upper
// bounds, labelled like Gauge.
func (rc *RunContext) Histogram(name, help, unit string, buckets []float64, labels ...string) (*Histogram, error) {
	if rc.metrics == nil {
		return nil, fmt.Errorf("metric %s: this run publishes no metrics", name)
	}
	if err := reservedLabels(name, labels); err != nil {
		return nil, err
	}
	h, err := rc.metrics.m.Histogram(name, help, unit, buckets, append([]string{"recipe", "run_id"}, labels...)...)
	if err != nil {
		return nil, err
	}
	h.pre = []string{rc.metrics.recipe, rc.metrics.runID}
	return h, nil
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
	known := KnownMetrics()
	gauge := func(name string) (*Gauge, error) {
		v, err := reg.registerInfo(infoOf(known, name))
		return &Gauge{v}, err
	}
	state, err := gauge("testbed_run_state")
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
	start, _ := gauge("testbed_run_start_time_seconds")
	_ = start.Set(float64(m.Started.UnixNano())/1e9, pre...)
	if m.Ended != nil {
		end, _ := gauge("testbed_run_end_time_seconds")
		_ = end.Set(float64(m.Ended.UnixNano())/1e9, pre...)
		dur, _ := gauge("testbed_run_duration_seconds")
		_ = dur.Set(m.Ended.Sub(m.Started).Seconds(), pre...)
	}
	if len(summary) == 0 {
		return reg, nil
	}
	ms, err := results.FlattenSummary(summary)
	if err != nil {
		return nil, err
	}
	val, _ := gauge("testbed_result_value")
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
