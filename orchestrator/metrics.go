package orchestrator

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/push"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"testbed/results"
)

// Live metrics with Prometheus' client_golang: the engine publishes a
// run's state, current step, progress and start time; recipes publish
// their own live values through RunContext.Gauge, Counter and Histogram.
// Every run-scoped series carries the recipe and run_id labels.
//
// Nothing is global: every run has its own prometheus.Registry, and a
// Metrics value serves its own registry together with those of the runs
// published into it (Engine.Metrics), so two runs (or two tests) in one
// process never see each other's series. The families of all the runs one
// Metrics serves must agree (kind, labels, buckets; the first help text
// wins), so that one scrape holds one consistent family per name.

// MetricsContentType is the content type of the text exposition format,
// version 0.0.4, which Push sends. Handler negotiates the format with the
// scraper; to a client that asks for none it serves this one (with an
// escaping parameter, which legal names such as ours never need).
const MetricsContentType = string(expfmt.FmtText)

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

// Metrics is a registry of metric families (a prometheus.Registry under
// this project's naming rules) and the registries of the runs published
// into it.
type Metrics struct {
	reg *prometheus.Registry
	// root keeps the definitions of the families of every registry it
	// serves: m itself, or the Metrics a run is published into.
	root *Metrics

	mu   sync.Mutex
	fams map[string]*family // this registry's families

	rootMu sync.Mutex // root only; taken after mu, never before
	defs   map[string]*familyDef
	runs   []*Metrics
}

// familyDef is what every registry's family of one name must agree on.
type familyDef struct {
	name, help, kind string
	labels           []string
	buckets          []float64 // upper bounds, histograms only
}

// family is a registered family: its definition and its client_golang
// vector (one of gauge, counter, hist).
type family struct {
	def     *familyDef
	gauge   *prometheus.GaugeVec
	counter *prometheus.CounterVec
	hist    *prometheus.HistogramVec
}

// NewMetrics returns an empty registry.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), fams: map[string]*family{}, defs: map[string]*familyDef{}}
	m.root = m
	return m
}

// newRun returns an empty registry for a run, published into m: m's
// Handler and Gather include its series from now on.
func (m *Metrics) newRun() *Metrics {
	run := &Metrics{reg: prometheus.NewRegistry(), root: m.root, fams: map[string]*family{}}
	m.root.rootMu.Lock()
	m.root.runs = append(m.root.runs, run)
	m.root.rootMu.Unlock()
	return run
}

// Gather implements prometheus.Gatherer: the families of m and of the runs
// published into it, merged by name and sorted. An error says what was
// left out; the families returned are still good.
func (m *Metrics) Gather() ([]*dto.MetricFamily, error) {
	gs := prometheus.Gatherers{m.reg}
	if m.root == m {
		m.rootMu.Lock()
		for _, r := range m.runs {
			gs = append(gs, r.reg)
		}
		m.rootMu.Unlock()
	}
	return gs.Gather()
}

// Handler serves the registry and its runs as /metrics does.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

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

// register returns the family of that name, creating it; a name already
// defined (here or in another registry the root serves) with another kind,
// other labels or other buckets is an error.
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
	root := m.root
	root.rootMu.Lock()
	defer root.rootMu.Unlock()
	def, ok := root.defs[name]
	if ok {
		if def.kind != kind || !slices.Equal(def.labels, labels) {
			return nil, fmt.Errorf("metric %s is already registered as a %s with labels (%s), not a %s with labels (%s)",
				name, def.kind, strings.Join(def.labels, ","), kind, strings.Join(labels, ","))
		}
		if !slices.Equal(def.buckets, buckets) {
			return nil, fmt.Errorf("histogram %s is already registered with other buckets", name)
		}
		if f, ok := m.fams[name]; ok {
			return f, nil
		}
	} else {
		def = &familyDef{name: name, help: help, kind: kind, labels: slices.Clone(labels), buckets: slices.Clone(buckets)}
	}
	f := &family{def: def}
	var c prometheus.Collector
	switch kind {
	case KindGauge:
		f.gauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: def.help}, def.labels)
		c = f.gauge
	case KindCounter:
		f.counter = prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: def.help}, def.labels)
		c = f.counter
	case KindHistogram:
		f.hist = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: def.help, Buckets: def.buckets}, def.labels)
		c = f.hist
	}
	if err := m.reg.Register(c); err != nil {
		return nil, fmt.Errorf("metric %s: %w", name, err)
	}
	root.defs[name] = def
	m.fams[name] = f
	return f, nil
}

// Gauge registers (or returns) a gauge family.
func (m *Metrics) Gauge(name, help, unit string, labels ...string) (*Gauge, error) {
	f, err := m.register(name, help, KindGauge, unit, labels, nil)
	if err != nil {
		return nil, err
	}
	return &Gauge{handle{f: f}}, nil
}

// Counter registers (or returns) a counter family.
func (m *Metrics) Counter(name, help, unit string, labels ...string) (*Counter, error) {
	f, err := m.register(name, help, KindCounter, unit, labels, nil)
	if err != nil {
		return nil, err
	}
	return &Counter{handle{f: f}}, nil
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
	return &Histogram{handle{f: f}}, nil
}

// handle is a family as its user sees it; pre are label values filled in
// for the user (recipe and run_id for run-scoped metrics).
type handle struct {
	f   *family
	pre []string
}

// values returns all of a series' label values, pre first.
func (h handle) values(lv []string) ([]string, error) {
	d := h.f.def
	if len(h.pre)+len(lv) != len(d.labels) {
		return nil, fmt.Errorf("metric %s: got %d label values, expected %d (%s)", d.name, len(h.pre)+len(lv), len(d.labels), strings.Join(d.labels, ", "))
	}
	return append(slices.Clone(h.pre), lv...), nil
}

// Gauge is a value that goes up and down.
type Gauge struct{ handle }

func (g *Gauge) series(lv []string) (prometheus.Gauge, error) {
	all, err := g.values(lv)
	if err != nil {
		return nil, err
	}
	s, err := g.f.gauge.GetMetricWithLabelValues(all...)
	if err != nil {
		return nil, fmt.Errorf("metric %s: %w", g.f.def.name, err)
	}
	return s, nil
}

// Set sets the series with these label values.
func (g *Gauge) Set(x float64, labelValues ...string) error {
	s, err := g.series(labelValues)
	if err == nil {
		s.Set(x)
	}
	return err
}

// Add adds to the series with these label values.
func (g *Gauge) Add(x float64, labelValues ...string) error {
	s, err := g.series(labelValues)
	if err == nil {
		s.Add(x)
	}
	return err
}

// Counter is a value that only goes up.
type Counter struct{ handle }

// Add adds x >= 0 to the series with these label values.
func (c *Counter) Add(x float64, labelValues ...string) error {
	if x < 0 || math.IsNaN(x) {
		return fmt.Errorf("counter %s: cannot add %v: counters only go up", c.f.def.name, x)
	}
	all, err := c.values(labelValues)
	if err != nil {
		return err
	}
	s, err := c.f.counter.GetMetricWithLabelValues(all...)
	if err != nil {
		return fmt.Errorf("metric %s: %w", c.f.def.name, err)
	}
	s.Add(x)
	return nil
}

// Inc adds one.
func (c *Counter) Inc(labelValues ...string) error { return c.Add(1, labelValues...) }

// Histogram counts observations into buckets.
type Histogram struct{ handle }

// Observe adds one observation to the series with these label values.
func (h *Histogram) Observe(x float64, labelValues ...string) error {
	if math.IsNaN(x) {
		return fmt.Errorf("histogram %s: cannot observe NaN", h.f.def.name)
	}
	all, err := h.values(labelValues)
	if err != nil {
		return err
	}
	s, err := h.f.hist.GetMetricWithLabelValues(all...)
	if err != nil {
		return fmt.Errorf("metric %s: %w", h.f.def.name, err)
	}
	s.Observe(x)
	return nil
}

// Value returns a series' value and whether it exists, in m or in a run
// published into it (for tests and summaries); label values go in the
// order the family was registered with. A histogram's value is the sum of
// its observations.
func (m *Metrics) Value(name string, labelValues ...string) (float64, bool) {
	m.root.rootMu.Lock()
	def, ok := m.root.defs[name]
	m.root.rootMu.Unlock()
	if !ok || len(labelValues) != len(def.labels) {
		return 0, false
	}
	want := map[string]string{}
	for i, l := range def.labels {
		want[l] = labelValues[i]
	}
	mfs, _ := m.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			if len(s.GetLabel()) != len(want) {
				continue
			}
			match := true
			for _, lp := range s.GetLabel() {
				v, ok := want[lp.GetName()]
				match = match && ok && v == lp.GetValue()
			}
			if !match {
				continue
			}
			switch {
			case s.Gauge != nil:
				return s.GetGauge().GetValue(), true
			case s.Counter != nil:
				return s.GetCounter().GetValue(), true
			case s.Histogram != nil:
				return s.GetHistogram().GetSampleSum(), true
			}
		}
	}
	return 0, false
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
func (m *Metrics) registerInfo(fi MetricInfo) (*family, error) {
	var buckets []float64
	if fi.Kind == KindHistogram {
		buckets = fctBuckets()
	}
	return m.register(fi.Name, fi.Help, fi.Kind, fi.Unit, fi.Labels, buckets)
}

// RunMetrics are one run's series, in the run's own registry: the
// engine's run gauges and the recipe's own, all labelled with recipe and
// run_id.
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
	// measured are the measurement families by field, registered on first
	// use; nil for one the recipe registered otherwise.
	measured map[string]*family
}

// startRun gives a run its own registry, published into m, with the run
// gauges every run publishes.
func (m *Metrics) startRun(recipe, version, runID string, steps int, started time.Time) (*RunMetrics, error) {
	rm := &RunMetrics{m: m.newRun(), recipe: recipe, runID: runID, total: steps, measured: map[string]*family{}}
	fams := runFamilies()
	var err error
	get := func(name string) handle {
		if err != nil {
			return handle{}
		}
		var f *family
		f, err = rm.m.registerInfo(infoOf(fams, name))
		return handle{f: f, pre: []string{recipe, runID}}
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
		f, ok := rm.measured[fi.Field]
		if !ok {
			f, _ = rm.m.registerInfo(fi) // nil when the recipe registered the name otherwise
			rm.measured[fi.Field] = f
		}
		if f == nil {
			continue
		}
		h := handle{f: f, pre: []string{rm.recipe, rm.runID}}
		for _, x := range xs {
			switch fi.Kind {
			case KindCounter:
				_ = (&Counter{h}).Add(x, link)
			case KindGauge:
				_ = (&Gauge{h}).Set(x, link)
			case KindHistogram:
				_ = (&Histogram{h}).Observe(x, link)
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
	if err := rc.recipeMetric(name, labels); err != nil {
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
	if err := rc.recipeMetric(name, labels); err != nil {
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
	if err := rc.recipeMetric(name, labels); err != nil {
		return nil, err
	}
	h, err := rc.metrics.m.Histogram(name, help, unit, buckets, append([]string{"recipe", "run_id"}, labels...)...)
	if err != nil {
		return nil, err
	}
	h.pre = []string{rc.metrics.recipe, rc.metrics.runID}
	return h, nil
}

// recipeMetric checks that the run publishes metrics and that the recipe
// does not name the labels the engine sets.
func (rc *RunContext) recipeMetric(name string, labels []string) error {
	if rc.metrics == nil {
		return fmt.Errorf("metric %s: this run publishes no metrics", name)
	}
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
		f, err := reg.registerInfo(infoOf(known, name))
		if err != nil {
			return nil, err
		}
		return &Gauge{handle{f: f, pre: pre}}, nil
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
		if err := state.Set(v, s); err != nil {
			return nil, err
		}
	}
	set := func(name string, v float64, lv ...string) error {
		g, err := gauge(name)
		if err != nil {
			return err
		}
		return g.Set(v, lv...)
	}
	if err := set("testbed_run_start_time_seconds", float64(m.Started.UnixNano())/1e9); err != nil {
		return nil, err
	}
	if m.Ended != nil {
		if err := set("testbed_run_end_time_seconds", float64(m.Ended.UnixNano())/1e9); err != nil {
			return nil, err
		}
		if err := set("testbed_run_duration_seconds", m.Ended.Sub(m.Started).Seconds()); err != nil {
			return nil, err
		}
	}
	if len(summary) == 0 {
		return reg, nil
	}
	ms, err := results.FlattenSummary(summary)
	if err != nil {
		return nil, err
	}
	for _, x := range ms {
		v, ok := x.Value.(float64)
		if b, isBool := x.Value.(bool); isBool {
			v, ok = 0, true
			if b {
				v = 1
			}
		}
		if !ok {
			continue
		}
		if err := set("testbed_result_value", v, x.Path); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// Push replaces the group job/<job>/<name>/<value>... on a Prometheus
// Pushgateway with what g gathers (HTTP PUT, text format, with
// client_golang's push package). Grouping is a list of label name, value
// pairs; a pushed series may not carry a grouping label itself. Without a
// deadline in ctx the push gets 30 seconds.
func Push(ctx context.Context, gateway, job string, grouping []string, g prometheus.Gatherer) error {
	if len(grouping)%2 != 0 {
		return fmt.Errorf("push to %s: grouping needs label name and value pairs, got %d strings", gateway, len(grouping))
	}
	u, err := url.Parse(gateway)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("pushgateway %q: expected an http:// or https:// URL", gateway)
	}
	p := push.New(gateway, job).Gatherer(g).Format(expfmt.NewFormat(expfmt.TypeTextPlain))
	for i := 0; i < len(grouping); i += 2 {
		if !labelNameRe.MatchString(grouping[i]) || strings.HasPrefix(grouping[i], "__") {
			return fmt.Errorf("push to %s: grouping label %q is not a label name", gateway, grouping[i])
		}
		p = p.Grouping(grouping[i], grouping[i+1])
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	if err := p.PushContext(ctx); err != nil {
		return fmt.Errorf("push to %s: %w", gateway, err)
	}
	return nil
}
