package trafficgen

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"sort"
	"sync"
	"testbed/simlab/wire"
	"testbed/simlab/world"
	"time"
)

// OTGServer emulates a traffic generator speaking the Open Traffic
// Generator REST API (the subset of open-traffic-generator/models v1.20.0
// that Ixia-c serves and our driver uses; otg_spec.go has its defaults):
//
//	GET  /capabilities/version
//	POST /config, GET /config        ports and flows (fixed or increment
//	                                 size; pps, bps..gbps or percentage rate;
//	                                 fixed_packets, fixed_seconds or
//	                                 continuous)
//	POST /control/state              traffic.flow_transmit start|stop
//	POST /monitor/metrics            flow or port metrics
//
// Errors are the spec's Error object, {"code", "kind", "errors": [...]},
// with HTTP 400 (validation) or 500 (internal), and 404 or 405 for a path
// or method the API does not have. A flow's frames cross the fibre cabled to its transmit
// port (OTGPort.TxFibre); losses come from the World's optics model.
//
// Transmission runs in simulated time: TimeScale simulated seconds per real
// second. Frames are drawn in blocks of otgBlock; each block's loss count
// is sampled once, at the first metrics read or control request after the
// block has begun (at the attenuation then in force), and revealed
// proportionally as the block goes, so with a steady attenuation the final
// counters depend only on the seed and the block sequence, not on when
// metrics are polled. Starting a flow resets its
// counters, as Ixia-c does; a new config resets everything.
type OTGServer struct {
	world  *world.World
	ports  map[string]OTGPort // by location
	faults *wire.Faults
	scale  float64
	now    func() time.Time
	epoch  time.Time // real time of simulated time 0 (the emulator's creation)

	mu    sync.Mutex
	cfg   otgConfig
	flows map[string]*otgFlow
	srv   *http.Server
	ln    net.Listener
	done  chan struct{}
}

// OTGPort is a test port: its location and the fibres its transmitter
// feeds and its receiver ends.
type OTGPort struct {
	Location string
	TxFibre  string // "" if the port only receives
	// RxFibre is the fibre whose frames this port receives; "" if none.
	// When no port of the generator names one, a flow's frames are taken
	// to arrive at its first rx port.
	RxFibre string
}

// OTGOptions tune the emulator.
type OTGOptions struct {
	// TimeScale is simulated seconds per real second; default 1000. 1
	// runs the generator on the wall clock (testbed lab up --clock real),
	// for clients that pace themselves by it.
	TimeScale float64
}

const otgBlock = 1 << 20

// NewOTGServer makes an emulator over w; faults may be nil.
func NewOTGServer(w *world.World, ports []OTGPort, faults *wire.Faults, opts OTGOptions) *OTGServer {
	if faults == nil {
		faults = &wire.Faults{}
	}
	if opts.TimeScale <= 0 {
		opts.TimeScale = 1000
	}
	s := &OTGServer{world: w, ports: map[string]OTGPort{}, faults: faults, scale: opts.TimeScale, now: time.Now, flows: map[string]*otgFlow{}}
	s.epoch = s.now()
	for _, p := range ports {
		s.ports[p.Location] = p
	}
	return s
}

// JSON shapes of the OTG models (the fields we use).
type otgConfig struct {
	Ports []otgPort   `json:"ports"`
	Flows []otgFlowJS `json:"flows"`
}

type otgPort struct {
	Name     string `json:"name"`
	Location string `json:"location"`
}

type otgFlowJS struct {
	Name string `json:"name"`
	TxRx struct {
		Choice string `json:"choice"`
		Port   struct {
			TxName  string   `json:"tx_name"`
			RxNames []string `json:"rx_names"`
		} `json:"port"`
	} `json:"tx_rx"`
	Size     otgSize           `json:"size"`
	Rate     otgRate           `json:"rate"`
	Duration otgDuration       `json:"duration"`
	Packet   []map[string]any  `json:"packet,omitempty"`
	Metrics  *otgFlowMetricsJS `json:"metrics,omitempty"`
}

// otgFlowMetricsJS is Flow.Metrics: timestamps and latency add the
// Metric.Timestamp and Metric.Latency containers to the flow's metrics.
type otgFlowMetricsJS struct {
	Enable     bool `json:"enable"`
	Loss       bool `json:"loss,omitempty"`
	Timestamps bool `json:"timestamps,omitempty"`
	Latency    *struct {
		Enable bool   `json:"enable"`
		Mode   string `json:"mode,omitempty"` // store_forward (default) or cut_through
	} `json:"latency,omitempty"`
}

// otgFlow is a configured flow's transmission state.
type otgFlow struct {
	js       otgFlowJS
	fibre    *world.Fibre
	txPort   string
	rxPort   string  // the configured port the fibre delivers to ("" if none)
	counted  bool    // whether rxPort is one of the flow's rx ports
	sizes    []int   // frame sizes, repeating (one for a fixed size)
	fps      float64 // frames per simulated second
	packets  int64   // 0: continuous
	running  bool
	paused   bool      // stopped by a pause: resume goes on
	simBase  float64   // simulated seconds of transmission before realAt
	realAt   time.Time // when it (re)started
	segAt    float64   // the emulator's simulated time at realAt, s
	sent     int64
	firstAt  float64 // simulated time the first frame left, s
	lastAt   float64 // simulated time the last frame left, s
	blocks   []int64 // loss drawn per block
	lostDone int64   // losses of completed blocks
}

type otgError struct {
	Code   int      `json:"code"`
	Kind   string   `json:"kind,omitempty"`
	Errors []string `json:"errors"`
}

// Start listens on addr (e.g. "127.0.0.1:0").
func (s *OTGServer) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /capabilities/version", s.handle(s.version))
	mux.HandleFunc("POST /config", s.handle(s.setConfig))
	mux.HandleFunc("GET /config", s.handle(s.getConfig))
	mux.HandleFunc("POST /control/state", s.handle(s.control))
	mux.HandleFunc("POST /monitor/metrics", s.handle(s.metrics))
	otgNotFound(mux)
	s.ln = ln
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return nil
}

// Addr is the base URL: http://127.0.0.1:port.
func (s *OTGServer) Addr() string { return "http://" + s.ln.Addr().String() }

// Close shuts the server down.
func (s *OTGServer) Close() error {
	if s.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	<-s.done
	return err
}

// handle applies faults, then runs h and writes its JSON answer.
func (s *OTGServer) handle(h func(r *http.Request) (int, any)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.faults.TakeDrop() {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}
		if s.faults.TakeStall() {
			<-r.Context().Done()
			return
		}
		if d := s.faults.Delay(); d > 0 {
			time.Sleep(d)
		}
		mutating := r.Method == http.MethodPost && r.URL.Path != "/monitor/metrics"
		if mutating {
			if f, hit := s.faults.TakeFailure(); hit {
				wire.WriteJSON(w, http.StatusInternalServerError, otgError{Code: f.Code, Kind: "internal", Errors: []string{f.Message}})
				return
			}
		}
		code, body := h(r)
		if s.faults.TakeGarble() {
			w.WriteHeader(http.StatusOK)
			w.Write([]byte("<html>\x00garbled"))
			return
		}
		wire.WriteJSON(w, code, body)
	}
}

func bad(kind string, code int, format string, args ...any) (int, any) {
	return code, otgError{Code: code, Kind: kind, Errors: []string{fmt.Sprintf(format, args...)}}
}

func (s *OTGServer) version(r *http.Request) (int, any) {
	return http.StatusOK, map[string]string{"api_spec_version": otgSpecVersion, "sdk_version": "", "app_version": "testbed-simlab-otg 1.0"}
}

func (s *OTGServer) getConfig(r *http.Request) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return http.StatusOK, s.cfg
}

func (s *OTGServer) setConfig(r *http.Request) (int, any) {
	var cfg otgConfig
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	if err := dec.Decode(&cfg); err != nil {
		return bad("validation", 400, "config does not parse: %v", err)
	}
	var errs []string
	ports := map[string]string{}
	for _, p := range cfg.Ports {
		if _, dup := ports[p.Name]; dup {
			errs = append(errs, fmt.Sprintf("port %q defined twice", p.Name))
		}
		if _, ok := s.ports[p.Location]; !ok {
			errs = append(errs, fmt.Sprintf("port %q: location %q does not exist on this generator", p.Name, p.Location))
		}
		ports[p.Name] = p.Location
	}
	flows := map[string]*otgFlow{}
	for _, f := range cfg.Flows {
		if _, dup := flows[f.Name]; dup {
			errs = append(errs, fmt.Sprintf("flow %q defined twice", f.Name))
			continue
		}
		tx, rxs := f.TxRx.Port.TxName, f.TxRx.Port.RxNames
		txLoc, okTx := ports[tx]
		switch {
		case f.TxRx.Choice != "port" && f.TxRx.Choice != "": // "port" is the default
			errs = append(errs, fmt.Sprintf("flow %s: tx_rx choice %q is not supported (port)", f.Name, f.TxRx.Choice))
			continue
		case !okTx:
			errs = append(errs, fmt.Sprintf("flow %s: tx port %q not configured", f.Name, tx))
			continue
		case len(rxs) == 0:
			errs = append(errs, fmt.Sprintf("flow %s: no rx port (tx_rx.port.rx_names is empty)", f.Name))
			continue
		}
		unknown := false
		for _, rx := range rxs {
			if ports[rx] == "" {
				errs = append(errs, fmt.Sprintf("flow %s: rx port %q not configured", f.Name, rx))
				unknown = true
			}
		}
		if unknown {
			continue
		}
		fibreName := s.ports[txLoc].TxFibre
		fibre, ok := s.world.Fibre(fibreName)
		if fibreName == "" || !ok {
			errs = append(errs, fmt.Sprintf("flow %s: port %s (%s) is not cabled to a fibre", f.Name, tx, txLoc))
			continue
		}
		sizes, fps, packets, ferrs := otgResolve(&f, fibre.Transceiver.DataRateBps())
		if len(ferrs) > 0 {
			errs = append(errs, ferrs...)
			continue
		}
		rxPort, counted := s.receiver(cfg.Ports, fibreName, rxs)
		flows[f.Name] = &otgFlow{js: f, fibre: fibre, txPort: tx, rxPort: rxPort, counted: counted, sizes: sizes, fps: fps, packets: packets}
	}
	if len(errs) > 0 {
		return http.StatusBadRequest, otgError{Code: 400, Kind: "validation", Errors: errs}
	}
	s.mu.Lock()
	s.cfg, s.flows = cfg, flows
	s.mu.Unlock()
	return http.StatusOK, map[string]any{"warnings": []string{}}
}

func (s *OTGServer) control(r *http.Request) (int, any) {
	var req struct {
		Choice  string `json:"choice"`
		Traffic struct {
			Choice       string `json:"choice"`
			FlowTransmit struct {
				State     string   `json:"state"`
				FlowNames []string `json:"flow_names"`
			} `json:"flow_transmit"`
		} `json:"traffic"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return bad("validation", 400, "control state does not parse: %v", err)
	}
	if req.Choice != "traffic" || req.Traffic.Choice != "flow_transmit" {
		return bad("validation", 400, "control state choice %q/%q is not supported (traffic/flow_transmit)", req.Choice, req.Traffic.Choice)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	names, err := s.selectFlows(req.Traffic.FlowTransmit.FlowNames)
	if err != nil {
		return bad("validation", 400, "%v", err)
	}
	now := s.now()
	for _, n := range names {
		f := s.flows[n]
		switch req.Traffic.FlowTransmit.State {
		case "start":
			*f = otgFlow{js: f.js, fibre: f.fibre, txPort: f.txPort, rxPort: f.rxPort, counted: f.counted, sizes: f.sizes, fps: f.fps, packets: f.packets,
				running: true, realAt: now, segAt: s.simTime(now)}
		case "stop", "pause":
			s.advance(f, now)
			if f.running {
				f.simBase += now.Sub(f.realAt).Seconds() * s.scale
				f.paused = req.Traffic.FlowTransmit.State == "pause"
			}
			f.running = false
		case "resume":
			if !f.running && (f.packets == 0 || f.sent < f.packets) {
				f.running, f.paused, f.realAt, f.segAt = true, false, now, s.simTime(now)
			}
		default:
			return bad("validation", 400, "flow_transmit state %q is not one of start, stop, pause, resume", req.Traffic.FlowTransmit.State)
		}
	}
	return http.StatusOK, map[string]any{"warnings": []string{}}
}

func (s *OTGServer) selectFlows(names []string) ([]string, error) {
	if len(names) == 0 {
		for n := range s.flows {
			names = append(names, n)
		}
		sort.Strings(names)
		return names, nil
	}
	for _, n := range names {
		if _, ok := s.flows[n]; !ok {
			return nil, fmt.Errorf("flow %q is not configured", n)
		}
	}
	return names, nil
}

// simTime is the emulator's simulated time at real time now, in seconds
// since its creation: the clock of its timestamps.
func (s *OTGServer) simTime(now time.Time) float64 {
	return now.Sub(s.epoch).Seconds() * s.scale
}

// advance brings a running flow's counters up to real time now. Frame k
// of the flow (from 0) leaves at k/fps seconds of transmission: a flow
// that has transmitted for T simulated seconds has sent floor(T*fps)+1
// frames, and its first and last frames' times are fps apart per frame,
// so a client's rate times the time the timestamps span is the count.
func (s *OTGServer) advance(f *otgFlow, now time.Time) {
	if !f.running {
		return
	}
	sim := f.simBase + now.Sub(f.realAt).Seconds()*s.scale
	target := int64(math.Floor(sim*f.fps)) + 1
	if f.packets > 0 && target >= f.packets {
		target = f.packets
	}
	if target > f.sent {
		if f.sent == 0 {
			f.firstAt = f.segAt - f.simBase
		}
		// Frame target-1 left at (target-1)/fps of transmission, in
		// this segment if it began after the segment's start.
		f.lastAt = f.segAt + float64(target-1)/f.fps - f.simBase
	}
	for int64(len(f.blocks))*otgBlock < target {
		n := int64(otgBlock)
		if f.packets > 0 {
			n = min(n, f.packets-int64(len(f.blocks))*otgBlock)
		}
		f.blocks = append(f.blocks, f.transmit(int64(len(f.blocks))*otgBlock, n))
	}
	f.sent = max(f.sent, target)
	if f.packets > 0 && f.sent >= f.packets {
		f.running = false
		f.simBase = float64(f.packets) / f.fps
	}
}

// counters are a flow's tx and rx frames now.
func (f *otgFlow) counters() (tx, rx int64) {
	var lost int64
	full := f.sent / otgBlock
	for i := int64(0); i < int64(len(f.blocks)); i++ {
		if i < full {
			lost += f.blocks[i]
			continue
		}
		// The block under way: reveal its losses in proportion.
		size := int64(otgBlock)
		if f.packets > 0 {
			size = min(size, f.packets-i*otgBlock)
		}
		done := f.sent - i*otgBlock
		if done >= size {
			lost += f.blocks[i]
		} else if done > 0 {
			lost += f.blocks[i] * done / size
		}
	}
	return f.sent, f.sent - lost
}

// The names a metrics request may select (Flow.Metrics.Request
// metric_names, Port.Metrics.Request column_names): a row keeps its keys
// (name; a flow's port_tx and port_rx) and the names asked for, or every
// metric when the list is empty.
var (
	otgFlowMetricNames = []string{"transmit", "frames_tx", "frames_rx", "bytes_tx", "bytes_rx", "frames_tx_rate", "frames_rx_rate"}
	otgPortColumnNames = []string{"transmit", "location", "link", "capture", "frames_tx", "frames_rx", "bytes_tx", "bytes_rx",
		"frames_tx_rate", "frames_rx_rate", "bytes_tx_rate", "bytes_rx_rate", "last_change"}
)

// otgSelect keeps the row's keys and the wanted names; it returns an error
// naming an unknown one.
func otgSelect(field string, allowed, wanted []string, keys ...string) (func(map[string]any) map[string]any, error) {
	if len(wanted) == 0 {
		return func(m map[string]any) map[string]any { return m }, nil
	}
	keep := map[string]bool{}
	for _, k := range keys {
		keep[k] = true
	}
	for _, w := range wanted {
		ok := false
		for _, a := range allowed {
			ok = ok || a == w
		}
		if !ok {
			return nil, fmt.Errorf("%s: %q is not one of %v", field, w, allowed)
		}
		keep[w] = true
	}
	return func(m map[string]any) map[string]any {
		for k := range m {
			if !keep[k] {
				delete(m, k)
			}
		}
		return m
	}, nil
}

func (s *OTGServer) metrics(r *http.Request) (int, any) {
	var req struct {
		Choice string `json:"choice"`
		Flow   struct {
			FlowNames   []string `json:"flow_names"`
			MetricNames []string `json:"metric_names"`
		} `json:"flow"`
		Port struct {
			PortNames   []string `json:"port_names"`
			ColumnNames []string `json:"column_names"`
		} `json:"port"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return bad("validation", 400, "metrics request does not parse: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, f := range s.flows {
		s.advance(f, now)
	}
	switch req.Choice {
	case "flow":
		names, err := s.selectFlows(req.Flow.FlowNames)
		if err != nil {
			return bad("validation", 400, "%v", err)
		}
		sel, err := otgSelect("flow.metric_names", otgFlowMetricNames, req.Flow.MetricNames, "name", "port_tx", "port_rx")
		if err != nil {
			return bad("validation", 400, "%v", err)
		}
		out := []map[string]any{}
		for _, n := range names {
			out = append(out, sel(s.flowMetric(n, s.flows[n])))
		}
		return http.StatusOK, map[string]any{"choice": "flow_metrics", "flow_metrics": out}
	case "port":
		var names []string
		for _, p := range s.cfg.Ports {
			names = append(names, p.Name)
		}
		if len(req.Port.PortNames) > 0 {
			for _, n := range req.Port.PortNames {
				found := false
				for _, p := range s.cfg.Ports {
					found = found || p.Name == n
				}
				if !found {
					return bad("validation", 400, "port %q is not configured", n)
				}
			}
			names = req.Port.PortNames
		}
		sel, err := otgSelect("port.column_names", otgPortColumnNames, req.Port.ColumnNames, "name")
		if err != nil {
			return bad("validation", 400, "%v", err)
		}
		out := []map[string]any{}
		for _, n := range names {
			out = append(out, sel(s.portMetric(n)))
		}
		return http.StatusOK, map[string]any{"choice": "port_metrics", "port_metrics": out}
	}
	return bad("validation", 400, "metrics choice %q is not supported (flow, port)", req.Choice)
}

// flowMetric is flow n's Flow.Metric row.
func (s *OTGServer) flowMetric(n string, f *otgFlow) map[string]any {
	tx, rx := f.counters()
	if !f.counted {
		rx = 0 // the frames arrive at a port the flow does not list
	}
	state := "stopped"
	txRate, rxRate := 0.0, 0.0
	if f.running {
		state = "started"
		txRate = f.fps
		if tx > 0 {
			rxRate = f.fps * float64(rx) / float64(tx)
		}
	} else if f.paused {
		state = "paused"
	}
	loss := 0.0
	if tx > 0 {
		loss = 100 * float64(tx-rx) / float64(tx)
	}
	portRx := f.rxPort
	if !f.counted || portRx == "" {
		portRx = f.js.TxRx.Port.RxNames[0]
	}
	m := map[string]any{"name": n, "port_tx": f.txPort, "port_rx": portRx, "transmit": state,
		"frames_tx": u64(tx), "frames_rx": u64(rx), "bytes_tx": u64(f.bytes(tx)), "bytes_rx": u64(f.rxBytes(tx, rx)),
		"frames_tx_rate": txRate, "frames_rx_rate": rxRate, "loss": loss}
	if mj := f.js.Metrics; mj != nil && mj.Timestamps {
		// The frames' departure times on the emulator's simulated clock, ns
		// since its start; empty until a frame has left.
		ts := map[string]any{}
		if tx > 0 {
			ts["first_timestamp_ns"] = f.firstAt * 1e9
			ts["last_timestamp_ns"] = f.lastAt * 1e9
		}
		m["timestamps"] = ts
	}
	if mj := f.js.Metrics; mj != nil && mj.Latency != nil && mj.Latency.Enable {
		m["latency"] = f.latency(mj.Latency.Mode)
	}
	return m
}

// latency is Metric.Latency of the flow's received frames over its
// fibre: the light's time of flight (5 ns/m, a silica core's group index
// of 1.47), and in store_forward mode (RFC 1242's last bit out to first
// bit in) less each frame's serialization at the port's line rate, so a
// frame longer than the fibre is "negative", as on a tester's
// back-to-back ports. Empty until a frame has arrived.
func (f *otgFlow) latency(mode string) map[string]any {
	if _, rx := f.counters(); rx == 0 || !f.counted {
		return map[string]any{}
	}
	flight := f.fibre.LengthM * 5
	line := f.fibre.Transceiver.DataRateBps()
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	for _, n := range f.sizes {
		d := flight
		if mode != "cut_through" {
			d -= float64(n*8) / line * 1e9
		}
		lo, hi, sum = min(lo, d), max(hi, d), sum+d
	}
	return map[string]any{"minimum_ns": lo, "maximum_ns": hi, "average_ns": sum / float64(len(f.sizes))}
}

// portMetric is port n's Port.Metric row.
func (s *OTGServer) portMetric(n string) map[string]any {
	var ftx, frx, btx, brx int64
	var ftxRate, frxRate, btxRate, brxRate float64
	transmit := "stopped"
	for _, f := range s.flows {
		tx, rx := f.counters()
		mean := float64(f.bytes(int64(len(f.sizes)))) / float64(len(f.sizes))
		if f.txPort == n {
			ftx, btx = ftx+tx, btx+f.bytes(tx)
			if f.running {
				transmit = "started"
				ftxRate += f.fps
				btxRate += f.fps * mean
			}
		}
		if f.rxPort == n {
			frx, brx = frx+rx, brx+f.rxBytes(tx, rx)
			if f.running && tx > 0 {
				frxRate += f.fps * float64(rx) / float64(tx)
				brxRate += f.fps * float64(rx) / float64(tx) * mean
			}
		}
	}
	loc := ""
	for _, p := range s.cfg.Ports {
		if p.Name == n {
			loc = p.Location
		}
	}
	// The link came up when the emulator did; no capture is configured.
	return map[string]any{"name": n, "location": loc, "link": "up", "capture": "stopped", "transmit": transmit,
		"frames_tx": u64(ftx), "frames_rx": u64(frx), "bytes_tx": u64(btx), "bytes_rx": u64(brx),
		"frames_tx_rate": ftxRate, "frames_rx_rate": frxRate, "bytes_tx_rate": btxRate, "bytes_rx_rate": brxRate,
		"last_change": u64(s.epoch.UnixNano())}
}
