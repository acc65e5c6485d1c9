package trafficgen

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"testbed/transport"
)

// OTG drives a traffic generator through the Open Traffic Generator REST
// API (open-traffic-generator/models v1, as served by Keysight Ixia-c and
// others). Every request has a deadline; API errors come back with their
// status, kind and errors[] text. Configuration and control requests are not
// retried (they are not idempotent); a metrics read is retried once after a
// connection error.
type OTG struct {
	addr string
	opts Options
	c    *resty.Client
	id   transport.Identity
}

// OpenOTG connects and reads the API version.
func OpenOTG(ctx context.Context, address string, opts Options) (*OTG, error) {
	u, err := url.Parse(address)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("otg %s: expected http(s)://host[:port][/base]", address)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.MaxReply <= 0 {
		opts.MaxReply = DefaultMaxReply
	}
	c := resty.New().SetBaseURL(strings.TrimSuffix(address, "/")).SetTimeout(opts.Timeout).
		SetHeader("Content-Type", "application/json").SetHeader("Accept", "application/json").
		SetResponseBodyLimit(opts.MaxReply)
	if opts.InsecureTLS {
		c.SetTLSClientConfig(&tls.Config{InsecureSkipVerify: true}) // Ixia-c ships a self-signed certificate
	}
	o := &OTG{addr: address, opts: opts, c: c}
	var v struct {
		API string `json:"api_spec_version"`
		SDK string `json:"sdk_version"`
		App string `json:"app_version"`
	}
	hdr, err := o.call(ctx, "GET", "/capabilities/version", nil, &v, false)
	if err != nil {
		return nil, err
	}
	// OTG reports versions, not a serial number: the identity says what the
	// server told, and no more.
	vendor := hdr
	if vendor == "" {
		vendor = "Open Traffic Generator"
	}
	app, ver, _ := strings.Cut(v.App, " ")
	if app == "" {
		app = "otg"
	}
	o.id = transport.Identity{Vendor: vendor, Model: app, Serial: "n/a", Firmware: strings.TrimSpace(ver + " api " + v.API)}
	return o, nil
}

// APIError is an error answer of the OTG API.
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

// call does one request; it returns the Server header. A read (retry)
// is tried once more after a dropped connection or a reply that is not
// the expected JSON (transport.RetryOnce); a timeout is not retried.
func (o *OTG) call(ctx context.Context, method, path string, in, out any, retry bool) (string, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return "", err
		}
	}
	op := strings.TrimPrefix(path, "/")
	var server string
	once := func() error {
		rctx, cancel := context.WithTimeout(ctx, o.opts.Timeout)
		defer cancel()
		req := o.c.R().SetContext(rctx)
		if body != nil {
			req.SetBody(body)
		}
		o.opts.Transcript.Sent(method + " " + path + " " + string(body))
		resp, err := req.Execute(method, path)
		if err != nil {
			o.opts.Transcript.Error(err)
			if errors.Is(err, resty.ErrResponseBodyTooLarge) {
				return fmt.Errorf("otg %s: %s: a reply over %d bytes: %w", o.addr, op, o.opts.MaxReply, transport.ErrGarbled)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("%w: %w", transport.ErrConnectionLost, err)
			}
			return fmt.Errorf("otg %s: %s: %w", o.addr, op, err)
		}
		raw := resp.Body()
		o.opts.Transcript.Received(fmt.Sprintf("%d %s", resp.StatusCode(), raw))
		if resp.StatusCode() >= 300 {
			ae := &APIError{Status: resp.StatusCode()}
			if json.Unmarshal(raw, ae) != nil || len(ae.Errors) == 0 {
				ae.Errors = []string{strings.TrimSpace(string(raw))}
			}
			return fmt.Errorf("otg %s: %s: %w", o.addr, op, ae)
		}
		if out != nil {
			if err := json.Unmarshal(raw, out); err != nil {
				return fmt.Errorf("otg %s: %s: reply is not the expected JSON (%v): %.80q: %w", o.addr, op, err, raw, transport.ErrGarbled)
			}
		}
		server = resp.Header().Get("Server")
		return nil
	}
	var err error
	if retry {
		err = transport.RetryOnce(ctx, o.opts.Transcript, nil, nil, once)
	} else {
		err = once()
	}
	return server, err
}

// Identity implements Generator.
func (o *OTG) Identity(ctx context.Context) (transport.Identity, error) { return o.id, nil }

// Configure implements Generator.
func (o *OTG) Configure(ctx context.Context, cfg Config) error {
	type port struct {
		Name     string `json:"name"`
		Location string `json:"location"`
	}
	body := map[string]any{}
	var ports []port
	for _, p := range cfg.Ports {
		ports = append(ports, port{p.Name, p.Location})
	}
	var flows []map[string]any
	for _, f := range cfg.Flows {
		dur := map[string]any{"choice": "continuous", "continuous": map[string]any{"gap": 12}}
		if f.Packets > 0 {
			dur = map[string]any{"choice": "fixed_packets", "fixed_packets": map[string]any{"packets": f.Packets, "gap": 12}}
		}
		flows = append(flows, map[string]any{
			"name":     f.Name,
			"tx_rx":    map[string]any{"choice": "port", "port": map[string]any{"tx_name": f.TxPort, "rx_names": []string{f.RxPort}}},
			"size":     map[string]any{"choice": "fixed", "fixed": f.FrameBytes},
			"rate":     map[string]any{"choice": "percentage", "percentage": f.RatePercent},
			"duration": dur,
			"packet": []map[string]any{{"choice": "ethernet", "ethernet": map[string]any{
				"src": map[string]any{"choice": "value", "value": "02:00:00:00:00:01"},
				"dst": map[string]any{"choice": "value", "value": "02:00:00:00:00:02"}}}},
			"metrics": map[string]any{"enable": true},
		})
	}
	body["ports"], body["flows"] = ports, flows
	_, err := o.call(ctx, "POST", "/config", body, nil, false)
	return err
}

func (o *OTG) transmit(ctx context.Context, state string, flows []string) error {
	if flows == nil {
		flows = []string{}
	}
	body := map[string]any{"choice": "traffic", "traffic": map[string]any{"choice": "flow_transmit",
		"flow_transmit": map[string]any{"state": state, "flow_names": flows}}}
	_, err := o.call(ctx, "POST", "/control/state", body, nil, false)
	return err
}

// Start implements Generator.
func (o *OTG) Start(ctx context.Context, flows ...string) error {
	return o.transmit(ctx, "start", flows)
}

// Stop implements Generator.
func (o *OTG) Stop(ctx context.Context, flows ...string) error { return o.transmit(ctx, "stop", flows) }

// counter accepts a JSON number or a string of digits: the models' JSON
// is protobuf's JSON mapping, which writes a uint64 counter as a string
// ("frames_tx": "1000", as Ixia-c's HTTP gateway and gosnappi do). A
// counter that is negative, not whole or beyond int64 is a reply the
// driver cannot trust: an error (transport.ErrGarbled), never a number.
type counter int64

func (c *counter) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*c = 0
		return nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return fmt.Errorf("counter %s is negative: %w", b, transport.ErrGarbled)
		}
		*c = counter(n)
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	// 2^63 is the first float64 beyond int64.
	if err != nil || v < 0 || v >= 1<<63 || v != math.Trunc(v) {
		return fmt.Errorf("counter %s is not a whole number from 0 to 2^63-1: %w", b, transport.ErrGarbled)
	}
	*c = counter(v)
	return nil
}

// gauge is a rate or a loss: a finite number.
type gauge float64

func (g *gauge) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*g = 0
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%s is not a finite number: %w", b, transport.ErrGarbled)
	}
	*g = gauge(v)
	return nil
}

// FlowMetrics implements Generator.
func (o *OTG) FlowMetrics(ctx context.Context, flows ...string) ([]FlowMetrics, error) {
	if flows == nil {
		flows = []string{}
	}
	var resp struct {
		FlowMetrics []struct {
			Name         string  `json:"name"`
			Transmit     string  `json:"transmit"`
			FramesTx     counter `json:"frames_tx"`
			FramesRx     counter `json:"frames_rx"`
			BytesTx      counter `json:"bytes_tx"`
			BytesRx      counter `json:"bytes_rx"`
			FramesTxRate gauge   `json:"frames_tx_rate"`
			Loss         gauge   `json:"loss"`
		} `json:"flow_metrics"`
	}
	req := map[string]any{"choice": "flow", "flow": map[string]any{"flow_names": flows}}
	if _, err := o.call(ctx, "POST", "/monitor/metrics", req, &resp, true); err != nil {
		return nil, err
	}
	var out []FlowMetrics
	for _, m := range resp.FlowMetrics {
		out = append(out, FlowMetrics{Name: m.Name, Transmit: m.Transmit, FramesTx: int64(m.FramesTx), FramesRx: int64(m.FramesRx),
			BytesTx: int64(m.BytesTx), BytesRx: int64(m.BytesRx), FramesTxRate: float64(m.FramesTxRate), Loss: float64(m.Loss)})
	}
	return out, nil
}

// PortMetrics implements Generator.
func (o *OTG) PortMetrics(ctx context.Context, ports ...string) ([]PortMetrics, error) {
	if ports == nil {
		ports = []string{}
	}
	var resp struct {
		PortMetrics []struct {
			Name     string  `json:"name"`
			FramesTx counter `json:"frames_tx"`
			FramesRx counter `json:"frames_rx"`
			BytesTx  counter `json:"bytes_tx"`
			BytesRx  counter `json:"bytes_rx"`
		} `json:"port_metrics"`
	}
	req := map[string]any{"choice": "port", "port": map[string]any{"port_names": ports}}
	if _, err := o.call(ctx, "POST", "/monitor/metrics", req, &resp, true); err != nil {
		return nil, err
	}
	var out []PortMetrics
	for _, m := range resp.PortMetrics {
		out = append(out, PortMetrics{Name: m.Name, FramesTx: int64(m.FramesTx), FramesRx: int64(m.FramesRx), BytesTx: int64(m.BytesTx), BytesRx: int64(m.BytesRx)})
	}
	return out, nil
}

// Close implements Generator.
func (o *OTG) Close() error {
	o.c.GetClient().CloseIdleConnections()
	return nil
}

func init() {
	Register("otg", func(ctx context.Context, address string, opts Options) (Generator, error) {
		return OpenOTG(ctx, address, opts)
	})
}
