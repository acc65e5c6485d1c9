package monitor

import (
	"github.com/prometheus/client_golang/prometheus"
)

// MetricDesc describes one metric family the monitor serves on /metrics.
type MetricDesc struct {
	Name, Help, Kind string // Kind: gauge or counter
	Labels           []string
}

var dirLabels = []string{"link", "direction"}

// MetricDescs lists every family the monitor serves (docs/grafana's
// dashboard is checked against it).
func MetricDescs() []MetricDesc {
	g := func(name, help string) MetricDesc {
		return MetricDesc{Name: name, Help: help, Kind: "gauge", Labels: dirLabels}
	}
	return []MetricDesc{
		g("testbed_monitor_loss_rate", "Loss rate over the frame-count window."),
		g("testbed_monitor_loss_rate_low", "Lower bound of the 95% Wilson interval."),
		g("testbed_monitor_loss_rate_high", "Upper bound of the 95% Wilson interval."),
		g("testbed_monitor_window_frames", "Frames in the window."),
		g("testbed_monitor_state", "0 unknown, 1 clean, 2 corrupting."),
		g("testbed_monitor_linkguardian_copies", "LinkGuardian copies decided (0: off)."),
		g("testbed_monitor_counters_available", "1 when both ends' counters were read at the last poll, 0 when an end has none."),
		g("testbed_monitor_fec_corrected_codewords", "FEC codewords the receiver corrected since the monitor started (where the driver reads them)."),
		g("testbed_monitor_fec_uncorrectable_codewords", "FEC codewords the receiver could not correct since the monitor started (where the driver reads them)."),
		{Name: "testbed_monitor_decisions_total", Help: "Decisions by action and outcome.", Kind: "counter", Labels: []string{"action", "outcome"}},
		{Name: "testbed_monitor_read_errors_total", Help: "Polls with a failed counter read.", Kind: "counter"},
	}
}

// Metrics is the monitor's Prometheus registry, fed after each poll.
type Metrics struct {
	Reg      *prometheus.Registry
	gauges   map[string]*prometheus.GaugeVec
	counters map[string]*prometheus.CounterVec
	readErrs prometheus.Counter
}

// NewMetrics registers every family of MetricDescs.
func NewMetrics() *Metrics {
	mm := &Metrics{Reg: prometheus.NewRegistry(), gauges: map[string]*prometheus.GaugeVec{}, counters: map[string]*prometheus.CounterVec{}}
	for _, d := range MetricDescs() {
		switch {
		case d.Kind == "gauge":
			v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: d.Name, Help: d.Help}, d.Labels)
			mm.gauges[d.Name] = v
			mm.Reg.MustRegister(v)
		case len(d.Labels) > 0:
			v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: d.Name, Help: d.Help}, d.Labels)
			mm.counters[d.Name] = v
			mm.Reg.MustRegister(v)
		default:
			mm.readErrs = prometheus.NewCounter(prometheus.CounterOpts{Name: d.Name, Help: d.Help})
			mm.Reg.MustRegister(mm.readErrs)
		}
	}
	return mm
}

// ReadError counts a poll with a failed read.
func (mm *Metrics) ReadError() { mm.readErrs.Inc() }

// Update sets the gauges from the monitor's status and counts decisions.
func (mm *Metrics) Update(m *Monitor, ds []Decision) {
	dirs, _ := m.Snapshot()
	for _, d := range dirs {
		l := prometheus.Labels{"link": d.Link, "direction": d.Direction}
		set := func(name string, v float64) { mm.gauges[name].With(l).Set(v) }
		set("testbed_monitor_loss_rate", d.Rate)
		set("testbed_monitor_loss_rate_low", d.Low)
		set("testbed_monitor_loss_rate_high", d.High)
		set("testbed_monitor_window_frames", float64(d.Frames))
		set("testbed_monitor_state", float64(d.State))
		set("testbed_monitor_linkguardian_copies", float64(d.Copies))
		avail := 1.0
		if d.Counters != "" {
			avail = 0
		}
		set("testbed_monitor_counters_available", avail)
		if d.FEC != nil && d.FEC.Available {
			set("testbed_monitor_fec_corrected_codewords", float64(d.FEC.Corrected))
			set("testbed_monitor_fec_uncorrectable_codewords", float64(d.FEC.Uncorrected))
		}
	}
	for _, d := range ds {
		out := d.Outcome
		if out == "" {
			out = "none"
		}
		mm.counters["testbed_monitor_decisions_total"].WithLabelValues(string(d.Action), out).Inc()
	}
}
