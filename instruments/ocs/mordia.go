package ocs

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-resty/resty/v2"

	"testbed/drivers"
	"testbed/internal/sched"
	"testbed/transport"
)

// Routes of the REST API (openapi.yaml) this driver calls, by purpose.
const (
	routeSystem        = "/v1/system"
	routeClock         = "/v1/clock"
	routeConfiguration = "/v1/configuration"
	routeDark          = "/v1/dark"
	routeSchedule      = "/v1/schedule"
	routeStart         = "/v1/schedule/start"
	routeReplace       = "/v1/schedule/replace"
	routeStop          = "/v1/schedule/stop"
	routeNights        = "/v1/nights"
	routePorts         = "/v1/ports"
)

// Mordia drives a Mordia-style microsecond OCS over the REST API published
// in openapi.yaml. Every request has a deadline; a switch that stops
// answering makes the call fail with an error naming the device, never
// hang. Reads are retried once after a connection error; settings are not
// (the switch may have acted on them).
type Mordia struct {
	addr string
	opts Options
	c    *resty.Client

	mu  sync.Mutex
	id  transport.Identity
	con Constraints
}

// OpenMordia connects and reads the switch's identity and constraints.
func OpenMordia(ctx context.Context, address string, opts Options) (*Mordia, error) {
	u, err := url.Parse(address)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: expected http(s)://host[:port][/base]", opts.prefix("mordia-rest", address))
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.MaxReply <= 0 {
		opts.MaxReply = DefaultMaxReply
	}
	c := resty.New().SetBaseURL(strings.TrimSuffix(address, "/")).SetTimeout(opts.Timeout).
		SetHeader("Accept", "application/json").SetResponseBodyLimit(opts.MaxReply)
	if opts.InsecureTLS {
		c.SetTLSClientConfig(&tls.Config{InsecureSkipVerify: true})
	}
	m := &Mordia{addr: address, opts: opts, c: c}
	var sys mordiaSystem
	if err := m.call(ctx, "GET", routeSystem, nil, nil, &sys, "read identity"); err != nil {
		return nil, err
	}
	if sys.Ports < 1 {
		return nil, m.errorf("read identity: the switch reports %d ports", sys.Ports)
	}
	m.id = transport.Identity{Vendor: sys.Vendor, Model: sys.Model, Serial: sys.Serial, Firmware: sys.Firmware}
	m.con = Constraints{
		Ports:   Ports{Inputs: sys.Ports, Outputs: sys.Ports},
		MinSlot: time.Duration(sys.MinSlotNs), MinNight: time.Duration(sys.MinNightNs),
		MaxSlots: sys.MaxSlots, MaxPeriod: time.Duration(sys.MaxPeriodNs),
	}
	return m, nil
}

// JSON shapes of openapi.yaml.
type mordiaSystem struct {
	Vendor      string `json:"vendor"`
	Model       string `json:"model"`
	Serial      string `json:"serial"`
	Firmware    string `json:"firmware"`
	Ports       int    `json:"ports"`
	MinSlotNs   int64  `json:"min_slot_ns"`
	MinNightNs  int64  `json:"min_night_ns"`
	MaxSlots    int    `json:"max_slots"`
	MaxPeriodNs int64  `json:"max_period_ns"`
	NowNs       int64  `json:"now_ns"`
}

type jsCircuit struct {
	In  int `json:"in"`
	Out int `json:"out"`
}

type jsConfiguration struct {
	Circuits []jsCircuit `json:"circuits"`
}

type jsConfigurationState struct {
	Circuits []jsCircuit `json:"circuits"`
	Night    bool        `json:"night"`
	NowNs    int64       `json:"now_ns"`
}

type jsSlot struct {
	DurationNs int64       `json:"duration_ns"`
	Circuits   []jsCircuit `json:"circuits"`
}

type jsSchedule struct {
	PeriodNs int64    `json:"period_ns"`
	NightNs  int64    `json:"night_ns"`
	Slots    []jsSlot `json:"slots"`
}

type jsScheduleState struct {
	State       string      `json:"state"`
	Schedule    *jsSchedule `json:"schedule,omitempty"`
	StartNs     int64       `json:"start_ns"`
	Period      int64       `json:"period"`
	Slot        int         `json:"slot"`
	ReplaceAtNs int64       `json:"replace_at_ns"`
	NowNs       int64       `json:"now_ns"`
}

type jsStart struct {
	AtNs       *int64 `json:"at_ns,omitempty"`
	NextPeriod bool   `json:"next_period,omitempty"`
}

type jsNight struct {
	Seq     uint64 `json:"seq"`
	Period  int64  `json:"period"`
	Slot    int    `json:"slot"`
	StartNs int64  `json:"start_ns"`
	EndNs   int64  `json:"end_ns"`
}

type jsNightLog struct {
	Nights    []jsNight `json:"nights"`
	NextSeq   uint64    `json:"next_seq"`
	OldestSeq uint64    `json:"oldest_seq"`
	NowNs     int64     `json:"now_ns"`
}

type jsPort struct {
	Side  string `json:"side"`
	Port  int    `json:"port"`
	State string `json:"state"`
	Peer  int    `json:"peer"`
}

func toJS(c Configuration) []jsCircuit {
	out := make([]jsCircuit, 0, len(c))
	for _, x := range c.Sorted() {
		out = append(out, jsCircuit(x))
	}
	return out
}

func fromJS(cs []jsCircuit) Configuration {
	out := make(Configuration, 0, len(cs))
	for _, x := range cs {
		out = append(out, Circuit(x))
	}
	return out.Sorted()
}

func scheduleJS(s sched.Schedule) jsSchedule {
	js := jsSchedule{PeriodNs: int64(s.Period), NightNs: int64(s.Delta), Slots: make([]jsSlot, 0, len(s.Slots))}
	for _, sl := range s.Slots {
		js.Slots = append(js.Slots, jsSlot{DurationNs: int64(sl.Duration), Circuits: toJS(Circuits(sl.Perm))})
	}
	return js
}

// APIError is an error answer of the switch.
type APIError struct {
	Status int
	Code   int      `json:"code"`
	Kind   string   `json:"kind"`
	Errors []string `json:"errors"`
}

func (e *APIError) Error() string {
	kind := e.Kind
	if kind == "" {
		kind = "error"
	}
	return fmt.Sprintf("%d %s: %s", e.Status, kind, strings.Join(e.Errors, "; "))
}

func (m *Mordia) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{m.opts.prefix("mordia-rest", m.addr)}, args...)...)
}

// call does one request with a deadline. doing says what for, in errors.
// A read is tried once more after a dropped connection or a reply that is
// not the expected JSON (transport.RetryOnce, every driver's one retry); a
// setting is not (the switch may have acted on it), nor is a timeout.
func (m *Mordia) call(ctx context.Context, method, path string, query map[string]string, in, out any, doing string) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return m.errorf("%s: %v", doing, err)
		}
	}
	line := method + " " + path
	if len(query) > 0 {
		q := url.Values{}
		for k, v := range query {
			q.Set(k, v)
		}
		line += "?" + q.Encode()
	}
	if body != nil {
		line += " " + string(body)
	}
	once := func() error {
		rctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
		defer cancel()
		req := m.c.R().SetContext(rctx)
		if body != nil {
			req.SetHeader("Content-Type", "application/json").SetBody(body)
		}
		if query != nil {
			req.SetQueryParams(query)
		}
		m.opts.Transcript.Sent(line)
		resp, err := req.Execute(method, path)
		if err != nil {
			m.opts.Transcript.Error(err)
			if errors.Is(err, resty.ErrResponseBodyTooLarge) {
				return m.errorf("%s: a reply over %d bytes: %w", doing, m.opts.MaxReply, transport.ErrGarbled)
			}
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				return m.errorf("%s: no answer within %v (the switch stopped answering): %w", doing, m.opts.Timeout, err)
			}
			return m.errorf("%s: %w", doing, err)
		}
		raw := resp.Body()
		m.opts.Transcript.Received(fmt.Sprintf("%d %s", resp.StatusCode(), strings.TrimSpace(string(raw))))
		if resp.StatusCode() >= 300 {
			ae := &APIError{Status: resp.StatusCode()}
			if json.Unmarshal(raw, ae) != nil || len(ae.Errors) == 0 {
				ae.Errors = []string{strings.TrimSpace(string(raw))}
			}
			return m.errorf("%s: %w", doing, ae)
		}
		if out != nil {
			if err := json.Unmarshal(raw, out); err != nil {
				return m.errorf("%s: reply is not the expected JSON (%v): %.80q: %w", doing, err, raw, transport.ErrGarbled)
			}
		}
		return nil
	}
	if method != "GET" {
		return once()
	}
	return transport.RetryOnce(ctx, m.opts.Transcript, nil, nil, once)
}

// Identity implements CircuitSwitch.
func (m *Mordia) Identity(ctx context.Context) (transport.Identity, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.id, nil
}

// Ports implements CircuitSwitch.
func (m *Mordia) Ports() Ports { return m.con.Ports }

// Capabilities implements CircuitSwitch.
func (m *Mordia) Capabilities() []string {
	return []string{CapSchedule, CapNightLog, CapPortStatus}
}

// Constraints implements Scheduler.
func (m *Mordia) Constraints() Constraints { return m.con }

// SetConfiguration implements CircuitSwitch: the switch must hold no
// running schedule. It waits by asking until the circuits are up.
func (m *Mordia) SetConfiguration(ctx context.Context, c Configuration) error {
	doing := "set configuration " + c.String()
	if ps := c.Problems(m.con.Ports); len(ps) > 0 {
		return m.errorf("%s: refused before sending: %s", doing, strings.Join(ps, "; "))
	}
	if len(c) == 0 {
		return m.Dark(ctx)
	}
	var st jsConfigurationState
	if err := m.call(ctx, "PUT", routeConfiguration, nil, jsConfiguration{Circuits: toJS(c)}, &st, doing); err != nil {
		return err
	}
	return m.waitConfiguration(ctx, c, doing)
}

// waitConfiguration polls until the switch reports exactly c up.
func (m *Mordia) waitConfiguration(ctx context.Context, want Configuration, doing string) error {
	wctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	defer cancel()
	var got Configuration
	err := transport.PollEvery(wctx, time.Millisecond, time.Millisecond, func() (bool, error) {
		var night bool
		var err error
		got, night, err = m.configuration(wctx, doing+": read configuration")
		return err == nil && !night && got.Equal(want), err
	})
	if err != nil && err == wctx.Err() {
		return m.errorf("%s: the switch holds %s, not the configuration asked for", doing, got)
	}
	return err
}

func (m *Mordia) configuration(ctx context.Context, doing string) (Configuration, bool, error) {
	var st jsConfigurationState
	if err := m.call(ctx, "GET", routeConfiguration, nil, nil, &st, doing); err != nil {
		return nil, false, err
	}
	return fromJS(st.Circuits), st.Night, nil
}

// Configuration implements CircuitSwitch: the circuits up now (none
// during a night).
func (m *Mordia) Configuration(ctx context.Context) (Configuration, error) {
	c, _, err := m.configuration(ctx, "read configuration")
	return c, err
}

// PortStatus implements CircuitSwitch.
func (m *Mordia) PortStatus(ctx context.Context) ([]PortStatus, error) {
	var pl struct {
		Ports []jsPort `json:"ports"`
	}
	if err := m.call(ctx, "GET", routePorts, nil, nil, &pl, "read port status"); err != nil {
		return nil, err
	}
	out := make([]PortStatus, 0, len(pl.Ports))
	for _, p := range pl.Ports {
		out = append(out, PortStatus{Side: Side(p.Side), Port: p.Port, State: p.State, Peer: p.Peer})
	}
	return out, nil
}

// Dark implements CircuitSwitch: stop any schedule and disconnect all,
// then check by asking that nothing is up.
func (m *Mordia) Dark(ctx context.Context) error {
	var st jsScheduleState
	if err := m.call(ctx, "POST", routeDark, nil, nil, &st, "go dark"); err != nil {
		return err
	}
	if st.State == StateArmed || st.State == StateRunning {
		return m.errorf("go dark: the switch still reports its schedule %s", st.State)
	}
	return m.waitConfiguration(ctx, nil, "go dark")
}

// LoadSchedule implements Scheduler. The schedule is checked against the
// switch's constraints first; nothing is sent if it breaks one.
func (m *Mordia) LoadSchedule(ctx context.Context, s sched.Schedule) error {
	if err := m.con.Validate(s); err != nil {
		return m.errorf("load schedule: %w", err)
	}
	var st jsScheduleState
	return m.call(ctx, "PUT", routeSchedule, nil, scheduleJS(s), &st, "load schedule")
}

// StartSchedule implements Scheduler.
func (m *Mordia) StartSchedule(ctx context.Context, at StartAt) (time.Duration, error) {
	req := jsStart{NextPeriod: at.NextPeriod}
	if !at.NextPeriod {
		if at.At < 0 {
			return 0, m.errorf("start schedule: start time %v is negative", at.At)
		}
		t := int64(at.At)
		req.AtNs = &t
	}
	var st struct {
		StartNs int64 `json:"start_ns"`
	}
	if err := m.call(ctx, "POST", routeStart, nil, req, &st, "start schedule"); err != nil {
		return 0, err
	}
	return time.Duration(st.StartNs), nil
}

// ReplaceSchedule implements Scheduler; checked like LoadSchedule.
func (m *Mordia) ReplaceSchedule(ctx context.Context, s sched.Schedule, at StartAt) (time.Duration, error) {
	if err := m.con.Validate(s); err != nil {
		return 0, m.errorf("replace schedule: %w", err)
	}
	var q map[string]string
	if !at.NextPeriod {
		if at.At < 0 {
			return 0, m.errorf("replace schedule: time %v is negative", at.At)
		}
		q = map[string]string{"at_ns": strconv.FormatInt(int64(at.At), 10)}
	}
	var r struct {
		EffectiveNs int64 `json:"effective_ns"`
	}
	if err := m.call(ctx, "POST", routeReplace, q, scheduleJS(s), &r, "replace schedule"); err != nil {
		return 0, err
	}
	return time.Duration(r.EffectiveNs), nil
}

// StopSchedule implements Scheduler.
func (m *Mordia) StopSchedule(ctx context.Context) error {
	var st jsScheduleState
	if err := m.call(ctx, "POST", routeStop, nil, nil, &st, "stop schedule"); err != nil {
		return err
	}
	if st.State == StateArmed || st.State == StateRunning {
		return m.errorf("stop schedule: the switch still reports it %s", st.State)
	}
	return nil
}

// ScheduleStatus implements Scheduler.
func (m *Mordia) ScheduleStatus(ctx context.Context) (ScheduleStatus, error) {
	var st jsScheduleState
	if err := m.call(ctx, "GET", routeSchedule, nil, nil, &st, "read schedule state"); err != nil {
		return ScheduleStatus{}, err
	}
	return ScheduleStatus{State: st.State, Start: time.Duration(st.StartNs), Period: st.Period, Slot: st.Slot,
		ReplaceAt: time.Duration(st.ReplaceAtNs), Now: time.Duration(st.NowNs)}, nil
}

// Nights implements Scheduler. One call returns at most one page (4096
// nights); ask again from NightLog.Next for more.
func (m *Mordia) Nights(ctx context.Context, since uint64) (NightLog, error) {
	var nl jsNightLog
	q := map[string]string{"since": strconv.FormatUint(since, 10)}
	if err := m.call(ctx, "GET", routeNights, q, nil, &nl, "read nights"); err != nil {
		return NightLog{}, err
	}
	out := NightLog{Next: nl.NextSeq, Now: time.Duration(nl.NowNs)}
	if nl.OldestSeq > since {
		out.Missed = nl.OldestSeq - since
	}
	for _, n := range nl.Nights {
		out.Nights = append(out.Nights, Night{Seq: n.Seq, Period: n.Period, Slot: n.Slot, Start: time.Duration(n.StartNs), End: time.Duration(n.EndNs)})
	}
	return out, nil
}

// Clock implements Scheduler.
func (m *Mordia) Clock(ctx context.Context) (time.Duration, error) {
	var c struct {
		NowNs int64 `json:"now_ns"`
	}
	if err := m.call(ctx, "GET", routeClock, nil, nil, &c, "read clock"); err != nil {
		return 0, err
	}
	return time.Duration(c.NowNs), nil
}

// Close implements CircuitSwitch.
func (m *Mordia) Close() error {
	m.c.GetClient().CloseIdleConnections()
	return nil
}

func init() {
	register("mordia-rest", func(ctx context.Context, address string, opts Options) (CircuitSwitch, error) {
		return OpenMordia(ctx, address, opts)
	}, map[string]drivers.Option{
		"ports": twinOption("the number of ports"), "max_slots": twinOption("the most slots a schedule holds"),
		"min_slot_us": twinOption("the shortest slot, in µs"), "min_night_us": twinOption("the shortest night, in µs"),
		"reconfig_dist":    twinOption("the reconfiguration gap's law (mordia or truncnormal)"),
		"temperature_c":    twinOption("the switch's temperature, in °C (reconfig_dist mordia)"),
		"reconfig_mean_us": twinOption("the gap's mean, in µs (truncnormal)"), "reconfig_sd_us": twinOption("the gap's standard deviation, in µs (truncnormal)"),
		"reconfig_min_us": twinOption("the gap's least, in µs (truncnormal)"), "reconfig_max_us": twinOption("the gap's most, in µs (truncnormal)"),
	}, CapSchedule, CapNightLog, CapPortStatus)
}
