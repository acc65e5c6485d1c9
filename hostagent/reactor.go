package hostagent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"time"
)

// REACToR host control (Liu et al., NSDI 2014, §3.1, §3.3, §3.4): one
// traffic class per destination plus the EPS class Q_P, pause and unpause
// per class, per-class rate limits, the next period's schedule and a
// period-start heartbeat from the controller, demand reports (the
// occupancy of each class), and the traffic that fills the classes.
//
// The agent checks every request and hands it to a ReactorHost: on a Linux
// host the tc implementation (reactor_tc.go), on a simulated host the
// simulated lab's REACToR fabric. API.md describes the routes.

// ReactorEPS is the id of the dedicated EPS class Q_P, which is never
// paused and never gets a circuit (§3.2).
const ReactorEPS = "eps"

// ReactorHost carries out REACToR host control. Methods return *APIError
// (not_available where the host cannot do a thing, conflict where its
// state does not allow it) or plain errors (failures). Requests reach it
// already checked.
type ReactorHost interface {
	Status(ctx context.Context) (ReactorStatus, error)
	// Setup replaces the host's classes; Teardown removes them and
	// whatever traffic runs.
	Setup(ctx context.Context, s ReactorSetup) error
	Teardown(ctx context.Context) error
	Pause(ctx context.Context, p ReactorPause) error
	SetRates(ctx context.Context, r ReactorRates) error
	SetSchedule(ctx context.Context, s ReactorSchedule) error
	Heartbeat(ctx context.Context, h ReactorHeartbeat) (ReactorHeartbeatAck, error)
	Demand(ctx context.Context) (ReactorDemand, error)
	// Windows returns the log of circuit windows from sequence number
	// since on.
	Windows(ctx context.Context, since uint64) (ReactorWindows, error)
	StartSink(ctx context.Context, r ReactorSinkRequest) (ReactorSink, error)
	StartFlows(ctx context.Context, r ReactorFlowsRequest) ([]ReactorFlow, error)
	Flows(ctx context.Context) (ReactorFlows, error)
	StopFlows(ctx context.Context) error
	Close() error
}

// ReactorSetup is the body of PUT /v1/reactor/classes.
type ReactorSetup struct {
	// Interface is the network interface facing the REACToR.
	Interface string `json:"interface"`
	// PFC: the REACToR pauses and unpauses the classes with 802.1Qbb PFC
	// frames (§3.4); destination classes get PFC priorities 1..7 and the
	// EPS class priority 0, which must have PFC off. Without PFC the
	// classes are paused only through POST /v1/reactor/pause.
	PFC bool `json:"pfc"`
	// LinkBps is the interface's rate (0: read from the interface).
	LinkBps float64 `json:"link_bps,omitempty"`
	// EPSBps limits the EPS class (the packet switch's share, §3.2); 0:
	// the host sends nothing to a packet switch (a pure circuit ToR).
	EPSBps float64 `json:"eps_bps"`
	// Destinations: one class each, in order.
	Destinations []ReactorDestination `json:"destinations"`
}

// ReactorDestination is one destination class.
type ReactorDestination struct {
	// Name is the class's id (a host's name): letters, digits, '.', '-'
	// and '_'; not "eps".
	Name string `json:"name"`
	// Address is the destination's IP address or prefix.
	Address string `json:"address"`
}

// ReactorClass is one class as the host holds it.
type ReactorClass struct {
	ID       string `json:"id"`
	Address  string `json:"address,omitempty"`
	Priority int    `json:"priority"`
	Paused   bool   `json:"paused"`
	// RateBps is the class's rate limit now.
	RateBps float64 `json:"rate_bps"`
	// Handle is the class's tc handle on a Linux host.
	Handle string `json:"handle,omitempty"`
}

// ReactorStatus is the answer of GET /v1/reactor.
type ReactorStatus struct {
	// Available: the host can do REACToR host control; Reason says why
	// not.
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
	// Backend is "tc" (a Linux host) or "simulated".
	Backend   string            `json:"backend"`
	Setup     *ReactorSetup     `json:"setup,omitempty"`
	Classes   []ReactorClass    `json:"classes"`
	Schedule  *ReactorSchedule  `json:"schedule,omitempty"`
	Heartbeat *ReactorHeartbeat `json:"heartbeat,omitempty"`
	// ClockNs is the host's REACToR clock: the controller's clock as the
	// last heartbeat set it (before any heartbeat, the time since the
	// agent started).
	ClockNs int64 `json:"clock_ns"`
}

// ReactorPause is the body of POST /v1/reactor/pause: classes to pause
// and classes to unpause (not both).
type ReactorPause struct {
	Pause   []string `json:"pause,omitempty"`
	Unpause []string `json:"unpause,omitempty"`
}

// ReactorRates is the body of PUT /v1/reactor/rates: a rate limit per
// class, in b/s.
type ReactorRates struct {
	RatesBps map[string]float64 `json:"rates_bps"`
}

// ReactorSchedule is the body of PUT /v1/reactor/schedule: this host's
// part of one period's schedule (§3.4: the first of the controller's two
// messages per period).
type ReactorSchedule struct {
	// Period is the period it is for; StartNs when that period begins,
	// on the controller's clock.
	Period   int64         `json:"period"`
	StartNs  int64         `json:"start_ns"`
	PeriodNs int64         `json:"period_ns"`
	NightNs  int64         `json:"night_ns"`
	Slots    []ReactorSlot `json:"slots"`
}

// ReactorSlot is one configuration from this host's side: each begins
// with the night, then the circuit to Dst (none if empty) is up for
// DurationNs, with its class rate limited to RateBps (0: no limit).
type ReactorSlot struct {
	DurationNs int64   `json:"duration_ns"`
	Dst        string  `json:"dst,omitempty"`
	RateBps    float64 `json:"rate_bps,omitempty"`
}

// ReactorHeartbeat is the body of POST /v1/reactor/heartbeat: period
// Period began at StartNs on the controller's clock (§3.4's second
// message). It sets the host's REACToR clock.
type ReactorHeartbeat struct {
	Period  int64 `json:"period"`
	StartNs int64 `json:"start_ns"`
}

// ReactorHeartbeatAck is the answer to a heartbeat.
type ReactorHeartbeatAck struct {
	Period int64 `json:"period"`
	// Scheduled: a schedule for this period had been received.
	Scheduled bool `json:"scheduled"`
	// Applied lists the classes whose rate limits the period's schedule
	// changed; ApplyNs is how long that took.
	Applied []string `json:"applied,omitempty"`
	ApplyNs int64    `json:"apply_ns"`
	ClockNs int64    `json:"clock_ns"`
}

// ReactorDemand is the answer of GET /v1/reactor/demand: the occupancy of
// every class (§3.1: "the occupancy of these traffic classes defines the
// imminent end-host demand").
type ReactorDemand struct {
	ClockNs int64                `json:"clock_ns"`
	Classes []ReactorClassDemand `json:"classes"`
}

// ReactorClassDemand is one class's queue.
type ReactorClassDemand struct {
	ID             string `json:"id"`
	BacklogBytes   int64  `json:"backlog_bytes"`
	BacklogPackets int64  `json:"backlog_packets"`
	SentBytes      int64  `json:"sent_bytes"`
	Drops          int64  `json:"drops"`
}

// ReactorWindow is one interval during which a class was unpaused for a
// circuit: from Open to Close (on the REACToR clock), Bytes of payload
// and WireBytes on the wire sent in it. Period and Slot are -1 when the
// window was not part of a schedule (a pause request).
type ReactorWindow struct {
	Seq       uint64  `json:"seq"`
	Period    int64   `json:"period"`
	Slot      int     `json:"slot"`
	Class     string  `json:"class"`
	OpenNs    int64   `json:"open_ns"`
	CloseNs   int64   `json:"close_ns"`
	RateBps   float64 `json:"rate_bps,omitempty"`
	Bytes     int64   `json:"bytes"`
	WireBytes int64   `json:"wire_bytes"`
}

// ReactorWindows is the answer of GET /v1/reactor/windows.
type ReactorWindows struct {
	Windows []ReactorWindow `json:"windows"`
	Next    uint64          `json:"next"`
	ClockNs int64           `json:"clock_ns"`
}

// ReactorSinkRequest is the body of POST /v1/reactor/sink.
type ReactorSinkRequest struct {
	Listen string `json:"listen,omitempty"`
}

// ReactorSink is a running traffic sink.
type ReactorSink struct {
	Listen string `json:"listen"`
	Port   int    `json:"port"`
}

// Kinds of flow.
const (
	// FlowBulk is a TCP flow that sends all it can (§5.2).
	FlowBulk = "bulk"
	// FlowPaced is a UDP flow at a constant rate (§5's pktgen sender).
	FlowPaced = "paced"
)

// ReactorFlowRequest is one flow to start.
type ReactorFlowRequest struct {
	// Dst is the destination class; EPS puts the flow in the EPS class
	// Q_P instead.
	Dst  string `json:"dst"`
	EPS  bool   `json:"eps,omitempty"`
	Kind string `json:"kind"`
	// RateBps is a paced flow's rate on the wire.
	RateBps float64 `json:"rate_bps,omitempty"`
	// Target is the destination's sink, host:port (a Linux host; the
	// simulated hosts deliver to the destination directly).
	Target string `json:"target,omitempty"`
	// StartNs and StopNs bound when the application offers data, on the
	// REACToR clock (0: now; 0: until stopped). A start in the past is
	// now.
	StartNs int64 `json:"start_ns,omitempty"`
	StopNs  int64 `json:"stop_ns,omitempty"`
	// MeasureFromNs and MeasureToNs bound the interval over which the
	// receiver counts what it gets (0, 0: none).
	MeasureFromNs int64 `json:"measure_from_ns,omitempty"`
	MeasureToNs   int64 `json:"measure_to_ns,omitempty"`
}

// ReactorFlowsRequest is the body of POST /v1/reactor/flows.
type ReactorFlowsRequest struct {
	Flows []ReactorFlowRequest `json:"flows"`
}

// ReactorFlow is one flow's state, as its sender or its receiver sees it.
type ReactorFlow struct {
	ID string `json:"id"`
	// Src is the sending host; the request's Dst names the receiving
	// one's class.
	Src string `json:"src"`
	ReactorFlowRequest
	// State is "waiting", "running" or "stopped".
	State string `json:"state"`
	// SentBytes: payload the sender's application handed over.
	SentBytes int64 `json:"sent_bytes"`
	// DeliveredBytes: payload that reached the receiver.
	DeliveredBytes int64 `json:"delivered_bytes"`
	// MeasuredBytes: payload the receiver got within the measurement
	// interval; MeasuredSentBytes what the sender's application offered
	// in it (on the sender's side); Measured once the interval is over.
	MeasuredBytes     int64 `json:"measured_bytes"`
	MeasuredSentBytes int64 `json:"measured_sent_bytes"`
	Measured          bool  `json:"measured"`
	// GoodputBps is MeasuredBytes over the interval, once measured.
	GoodputBps float64 `json:"goodput_bps,omitempty"`
	Error      string  `json:"error,omitempty"`
	// Bursts are the receiver's arrivals within the measurement interval
	// by their receive timestamps, grouped into runs with no silence
	// longer than ReactorBurstGapNs (a received flow, once measured; at
	// most maxBursts, the earliest).
	Bursts []ReactorBurst `json:"bursts,omitempty"`
}

// ReactorBurst is a run of arrivals at a receiver: the first and the last
// arrival's receive timestamps (REACToR clock) and the payload between.
type ReactorBurst struct {
	FirstNs int64 `json:"first_ns"`
	LastNs  int64 `json:"last_ns"`
	Bytes   int64 `json:"bytes"`
}

// ReactorBurstGapNs is the longest silence inside a burst: 5 us, four
// 1538-byte frames at 10 Gb/s and well below a circuit switch's night
// (REACToR §4: about 12 us of reconfiguration), so that bursts are the
// circuits' lit spans as the receiver saw them.
const ReactorBurstGapNs = 5000

// maxBursts bounds a flow's burst log.
const maxBursts = 1 << 16

// AddArrival extends bs with an arrival of n bytes at t: the last burst
// when t is within ReactorBurstGapNs of its end, else a new one.
func AddArrival(bs []ReactorBurst, t, n int64) []ReactorBurst {
	if k := len(bs); k > 0 && t-bs[k-1].LastNs <= ReactorBurstGapNs && t >= bs[k-1].LastNs {
		bs[k-1].LastNs = t
		bs[k-1].Bytes += n
		return bs
	}
	if len(bs) >= maxBursts {
		return bs
	}
	return append(bs, ReactorBurst{FirstNs: t, LastNs: t, Bytes: n})
}

// ReactorFlows is the answer of GET /v1/reactor/flows.
type ReactorFlows struct {
	ClockNs  int64         `json:"clock_ns"`
	Sent     []ReactorFlow `json:"sent"`
	Received []ReactorFlow `json:"received"`
}

// Flow states.
const (
	FlowWaiting = "waiting"
	FlowRunning = "running"
	FlowStopped = "stopped"
)

// reactor returns the agent's ReactorHost.
func (a *Agent) reactor() ReactorHost { return a.reactorHost }

var classNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// maxReactorClasses bounds the destination classes (a rack: REACToR §5.4
// simulates 64 hosts per ToR).
const maxReactorClasses = 1024

// Check validates a setup.
func (s ReactorSetup) Check() error {
	var errs []error
	if !ifaceRE.MatchString(s.Interface) {
		errs = append(errs, fmt.Errorf("interface %q: expected an interface name", s.Interface))
	}
	if !(s.LinkBps >= 0) || math.IsInf(s.LinkBps, 0) {
		errs = append(errs, fmt.Errorf("link_bps %g: expected a rate >= 0 (0: the interface's)", s.LinkBps))
	}
	if !(s.EPSBps >= 0) || math.IsInf(s.EPSBps, 0) || (s.LinkBps > 0 && s.EPSBps > s.LinkBps) {
		errs = append(errs, fmt.Errorf("eps_bps %g: expected a rate of at most the link's (0: a pure circuit ToR)", s.EPSBps))
	}
	if len(s.Destinations) == 0 || len(s.Destinations) > maxReactorClasses {
		errs = append(errs, fmt.Errorf("%d destinations: expected 1..%d", len(s.Destinations), maxReactorClasses))
	}
	if s.PFC && len(s.Destinations) > 7 {
		errs = append(errs, fmt.Errorf("%d destinations with pfc: PFC has 8 priorities, one for the EPS class and at most 7 destinations (REACToR §4; reuse classes across periods, or set pfc false)", len(s.Destinations)))
	}
	names, addrs := map[string]bool{}, map[netip.Prefix]string{}
	for i, d := range s.Destinations {
		switch {
		case !classNameRE.MatchString(d.Name) || d.Name == ReactorEPS:
			errs = append(errs, fmt.Errorf("destinations[%d]: name %q: expected letters, digits, '.', '-' or '_', not %q", i, d.Name, ReactorEPS))
		case names[d.Name]:
			errs = append(errs, fmt.Errorf("destinations[%d]: name %q given twice", i, d.Name))
		}
		names[d.Name] = true
		p, err := ParsePrefix(d.Address)
		if err != nil {
			errs = append(errs, fmt.Errorf("destinations[%d] (%s): %v", i, d.Name, err))
			continue
		}
		if o, dup := addrs[p]; dup {
			errs = append(errs, fmt.Errorf("destinations[%d] (%s): address %s is also %s's", i, d.Name, p, o))
		}
		addrs[p] = d.Name
	}
	return errors.Join(errs...)
}

var ifaceRE = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,15}$`)

// ParsePrefix reads an address ("10.0.0.2") or a prefix ("10.0.0.0/24").
func ParsePrefix(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("address %q: expected an IP address or prefix", s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// Check validates a schedule.
func (s ReactorSchedule) Check() error {
	var errs []error
	if s.Period < 0 || s.StartNs < 0 {
		errs = append(errs, fmt.Errorf("period %d starting at %d ns: expected both >= 0", s.Period, s.StartNs))
	}
	if s.PeriodNs <= 0 || s.NightNs < 0 {
		errs = append(errs, fmt.Errorf("period_ns %d, night_ns %d: expected a positive period and a night >= 0", s.PeriodNs, s.NightNs))
	}
	var busy int64
	for k, sl := range s.Slots {
		if sl.DurationNs <= 0 {
			errs = append(errs, fmt.Errorf("slots[%d]: duration_ns %d: expected > 0", k, sl.DurationNs))
		}
		if !(sl.RateBps >= 0) || math.IsInf(sl.RateBps, 0) {
			errs = append(errs, fmt.Errorf("slots[%d]: rate_bps %g: expected >= 0", k, sl.RateBps))
		}
		if sl.Dst == ReactorEPS {
			errs = append(errs, fmt.Errorf("slots[%d]: the EPS class never gets a circuit (REACToR §3.2)", k))
		}
		busy += sl.DurationNs + s.NightNs
	}
	if s.PeriodNs > 0 && busy > s.PeriodNs {
		errs = append(errs, fmt.Errorf("slots and nights take %d ns, more than the period's %d ns", busy, s.PeriodNs))
	}
	return errors.Join(errs...)
}

// Check validates a flow request.
func (f ReactorFlowRequest) Check() error {
	switch f.Kind {
	case FlowBulk:
		if f.RateBps != 0 {
			return fmt.Errorf("dst %s: a bulk flow takes what it can; rate_bps is for paced flows", f.Dst)
		}
	case FlowPaced:
		if !(f.RateBps > 0) || math.IsInf(f.RateBps, 0) {
			return fmt.Errorf("dst %s: paced flow at %g b/s: expected a positive rate", f.Dst, f.RateBps)
		}
	default:
		return fmt.Errorf("dst %s: kind %q: expected %s or %s", f.Dst, f.Kind, FlowBulk, FlowPaced)
	}
	if f.Dst == "" || f.Dst == ReactorEPS {
		return fmt.Errorf("dst %q: expected a destination class (eps: true puts the flow in the EPS class)", f.Dst)
	}
	if f.StartNs < 0 || f.StopNs < 0 || (f.StopNs != 0 && f.StopNs <= f.StartNs) {
		return fmt.Errorf("dst %s: start_ns %d, stop_ns %d: expected 0 <= start < stop (stop 0: until stopped)", f.Dst, f.StartNs, f.StopNs)
	}
	if f.MeasureFromNs < 0 || f.MeasureToNs < 0 || (f.MeasureToNs != 0 || f.MeasureFromNs != 0) && f.MeasureToNs <= f.MeasureFromNs {
		return fmt.Errorf("dst %s: measure_from_ns %d, measure_to_ns %d: expected from < to (or both 0)", f.Dst, f.MeasureFromNs, f.MeasureToNs)
	}
	return nil
}

func (r ReactorRates) check() error {
	if len(r.RatesBps) == 0 {
		return errors.New("rates_bps: expected at least one class")
	}
	for id, v := range r.RatesBps {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("rates_bps[%s] = %g: expected a positive rate", id, v)
		}
	}
	return nil
}

func (p ReactorPause) check() error {
	if len(p.Pause) == 0 && len(p.Unpause) == 0 {
		return errors.New("expected classes to pause or unpause")
	}
	seen := map[string]bool{}
	for _, id := range append(append([]string(nil), p.Pause...), p.Unpause...) {
		if id == ReactorEPS {
			return fmt.Errorf("class %s is never paused (REACToR §3.2)", ReactorEPS)
		}
		if seen[id] {
			return fmt.Errorf("class %s is named twice", id)
		}
		seen[id] = true
	}
	return nil
}

// ---- handlers

func (a *Agent) reactorStatus(w http.ResponseWriter, r *http.Request) {
	st, err := a.reactor().Status(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	if st.Classes == nil {
		st.Classes = []ReactorClass{}
	}
	writeJSON(w, http.StatusOK, st)
}

// reactorDo runs a change and answers with the status after it.
func (a *Agent) reactorDo(w http.ResponseWriter, r *http.Request, f func(ctx context.Context) error) {
	if err := f(r.Context()); err != nil {
		writeError(w, err)
		return
	}
	a.reactorStatus(w, r)
}

func (a *Agent) reactorSetup(w http.ResponseWriter, r *http.Request) {
	var s ReactorSetup
	if !decode(w, r, &s) {
		return
	}
	if err := s.Check(); err != nil {
		writeError(w, apiErr(KindBadRequest, "%v", err))
		return
	}
	a.reactorDo(w, r, func(ctx context.Context) error { return a.reactor().Setup(ctx, s) })
}

func (a *Agent) reactorTeardown(w http.ResponseWriter, r *http.Request) {
	a.reactorDo(w, r, a.reactor().Teardown)
}

func (a *Agent) reactorPause(w http.ResponseWriter, r *http.Request) {
	var p ReactorPause
	if !decode(w, r, &p) {
		return
	}
	if err := p.check(); err != nil {
		writeError(w, apiErr(KindBadRequest, "%v", err))
		return
	}
	a.reactorDo(w, r, func(ctx context.Context) error { return a.reactor().Pause(ctx, p) })
}

func (a *Agent) reactorRates(w http.ResponseWriter, r *http.Request) {
	var x ReactorRates
	if !decode(w, r, &x) {
		return
	}
	if err := x.check(); err != nil {
		writeError(w, apiErr(KindBadRequest, "%v", err))
		return
	}
	a.reactorDo(w, r, func(ctx context.Context) error { return a.reactor().SetRates(ctx, x) })
}

func (a *Agent) reactorSchedule(w http.ResponseWriter, r *http.Request) {
	var s ReactorSchedule
	if !decode(w, r, &s) {
		return
	}
	if err := s.Check(); err != nil {
		writeError(w, apiErr(KindBadRequest, "%v", err))
		return
	}
	a.reactorDo(w, r, func(ctx context.Context) error { return a.reactor().SetSchedule(ctx, s) })
}

func (a *Agent) reactorHeartbeat(w http.ResponseWriter, r *http.Request) {
	var h ReactorHeartbeat
	if !decode(w, r, &h) {
		return
	}
	if h.Period < 0 || h.StartNs < 0 {
		writeError(w, apiErr(KindBadRequest, "period %d starting at %d ns: expected both >= 0", h.Period, h.StartNs))
		return
	}
	ack, err := a.reactor().Heartbeat(r.Context(), h)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ack)
}

func (a *Agent) reactorDemand(w http.ResponseWriter, r *http.Request) {
	d, err := a.reactor().Demand(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	if d.Classes == nil {
		d.Classes = []ReactorClassDemand{}
	}
	writeJSON(w, http.StatusOK, d)
}

func (a *Agent) reactorWindows(w http.ResponseWriter, r *http.Request) {
	var since uint64
	if s := r.URL.Query().Get("since"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			writeError(w, apiErr(KindBadRequest, "since %q: expected a sequence number", s))
			return
		}
		since = n
	}
	ws, err := a.reactor().Windows(r.Context(), since)
	if err != nil {
		writeError(w, err)
		return
	}
	if ws.Windows == nil {
		ws.Windows = []ReactorWindow{}
	}
	writeJSON(w, http.StatusOK, ws)
}

func (a *Agent) reactorStartSink(w http.ResponseWriter, r *http.Request) {
	var req ReactorSinkRequest
	if !decode(w, r, &req) {
		return
	}
	s, err := a.reactor().StartSink(r.Context(), req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, s)
}

func (a *Agent) reactorStartFlows(w http.ResponseWriter, r *http.Request) {
	var req ReactorFlowsRequest
	if !decode(w, r, &req) {
		return
	}
	if len(req.Flows) == 0 || len(req.Flows) > maxReactorClasses {
		writeError(w, apiErr(KindBadRequest, "%d flows: expected 1..%d", len(req.Flows), maxReactorClasses))
		return
	}
	for i, f := range req.Flows {
		if err := f.Check(); err != nil {
			writeError(w, apiErr(KindBadRequest, "flows[%d]: %v", i, err))
			return
		}
	}
	fs, err := a.reactor().StartFlows(r.Context(), req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, struct {
		Flows []ReactorFlow `json:"flows"`
	}{fs})
}

func (a *Agent) reactorFlows(w http.ResponseWriter, r *http.Request) {
	fs, err := a.reactor().Flows(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	if fs.Sent == nil {
		fs.Sent = []ReactorFlow{}
	}
	if fs.Received == nil {
		fs.Received = []ReactorFlow{}
	}
	writeJSON(w, http.StatusOK, fs)
}

func (a *Agent) reactorStopFlows(w http.ResponseWriter, r *http.Request) {
	if err := a.reactor().StopFlows(r.Context()); err != nil {
		writeError(w, err)
		return
	}
	a.reactorFlows(w, r)
}

// ---- client

// Reactor reads the host's REACToR state.
func (c *Client) Reactor(ctx context.Context) (ReactorStatus, error) {
	var st ReactorStatus
	err := c.do(ctx, "GET", "/v1/reactor", nil, &st)
	return st, err
}

// ReactorSetup sets up the host's classes.
func (c *Client) ReactorSetup(ctx context.Context, s ReactorSetup) (ReactorStatus, error) {
	var st ReactorStatus
	err := c.do(ctx, "PUT", "/v1/reactor/classes", s, &st)
	return st, err
}

// ReactorTeardown removes the host's classes and stops its flows.
func (c *Client) ReactorTeardown(ctx context.Context) error {
	return c.do(ctx, "DELETE", "/v1/reactor/classes", nil, nil)
}

// ReactorPause pauses and unpauses classes.
func (c *Client) ReactorPause(ctx context.Context, p ReactorPause) (ReactorStatus, error) {
	var st ReactorStatus
	err := c.do(ctx, "POST", "/v1/reactor/pause", p, &st)
	return st, err
}

// ReactorRates sets class rate limits.
func (c *Client) ReactorRates(ctx context.Context, r ReactorRates) (ReactorStatus, error) {
	var st ReactorStatus
	err := c.do(ctx, "PUT", "/v1/reactor/rates", r, &st)
	return st, err
}

// ReactorSchedule hands the host a period's schedule.
func (c *Client) ReactorSchedule(ctx context.Context, s ReactorSchedule) error {
	return c.do(ctx, "PUT", "/v1/reactor/schedule", s, nil)
}

// ReactorHeartbeat tells the host a period began.
func (c *Client) ReactorHeartbeat(ctx context.Context, h ReactorHeartbeat) (ReactorHeartbeatAck, error) {
	var ack ReactorHeartbeatAck
	err := c.do(ctx, "POST", "/v1/reactor/heartbeat", h, &ack)
	return ack, err
}

// ReactorDemand reads the host's demand report.
func (c *Client) ReactorDemand(ctx context.Context) (ReactorDemand, error) {
	var d ReactorDemand
	err := c.do(ctx, "GET", "/v1/reactor/demand", nil, &d)
	return d, err
}

// ReactorWindows reads the host's circuit windows from since on.
func (c *Client) ReactorWindows(ctx context.Context, since uint64) (ReactorWindows, error) {
	var ws ReactorWindows
	err := c.do(ctx, "GET", "/v1/reactor/windows?since="+strconv.FormatUint(since, 10), nil, &ws)
	return ws, err
}

// ReactorStartSink starts the host's traffic sink.
func (c *Client) ReactorStartSink(ctx context.Context, r ReactorSinkRequest) (ReactorSink, error) {
	var s ReactorSink
	err := c.do(ctx, "POST", "/v1/reactor/sink", r, &s)
	return s, err
}

// ReactorStartFlows starts flows from the host.
func (c *Client) ReactorStartFlows(ctx context.Context, fs ...ReactorFlowRequest) ([]ReactorFlow, error) {
	var out struct {
		Flows []ReactorFlow `json:"flows"`
	}
	err := c.do(ctx, "POST", "/v1/reactor/flows", ReactorFlowsRequest{Flows: fs}, &out)
	return out.Flows, err
}

// ReactorFlows reads the flows the host sends and receives.
func (c *Client) ReactorFlows(ctx context.Context) (ReactorFlows, error) {
	var fs ReactorFlows
	err := c.do(ctx, "GET", "/v1/reactor/flows", nil, &fs)
	return fs, err
}

// ReactorStopFlows stops and forgets the host's flows.
func (c *Client) ReactorStopFlows(ctx context.Context) error {
	return c.do(ctx, "DELETE", "/v1/reactor/flows", nil, nil)
}

// ReactorWaitClock polls the flows (every poll) until the host's REACToR
// clock reaches at, and returns them: every flow measured up to at is
// measured then.
func (c *Client) ReactorWaitClock(ctx context.Context, at int64, poll time.Duration) (ReactorFlows, error) {
	for {
		fs, err := c.ReactorFlows(ctx)
		if err != nil || fs.ClockNs >= at {
			return fs, err
		}
		select {
		case <-ctx.Done():
			return fs, ctx.Err()
		case <-time.After(min(poll, time.Duration(at-fs.ClockNs))):
		}
	}
}
