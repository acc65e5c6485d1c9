package trafficgen

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"

	"testbed/transport"
)

// TRex drives a Cisco TRex traffic generator in stateless (STL) mode
// through its JSON-RPC 2.0 control channel, a ZeroMQ REQ socket to the
// server's port 4501, the way TRex's own Python client does
// (cisco-system-traffic-generator/trex-core,
// scripts/automation/trex_control_plane/interactive/trex/):
//
//   - common/trex_req_resp_client.py: the request envelope (jsonrpc,
//     id, method, params carrying api_h) and the error object, whose
//     specific_err says what went wrong;
//   - common/trex_conn.py: api_sync_v2 with {name: STL, major, minor}
//     first, its api_h on every later call;
//   - stl/trex_stl_port.py: acquire (port_id, user, session_id, force)
//     giving the handler that add_stream, remove_all_streams,
//     start_traffic (mul, duration, force, core_mask, start_at_ts),
//     stop_traffic and release carry;
//   - stl/trex_stl_streams.py: the stream object (mode with rate, packet
//     binary in base64 without the FCS, vm, flow_stats with a pg_id);
//   - stl/trex_stl_stats.py: get_pgid_stats and the per-port counters tp,
//     rp, tb, rb, made relative to a reference taken when a flow starts,
//     as the client's clear_stats does.
//
// A flow is a stream with flow statistics (rule_type "stats") on its tx
// port, carrying an IPv4/UDP packet (the hardware rule counts by IP).
// Port locations are TRex port numbers ("0", "1", ...). Every call has a
// deadline; after a timeout the socket is closed and dialled again (a REQ
// socket cannot be used once a reply is lost), as the Python client does.
type TRex struct {
	addr    string // tcp://host:port
	opts    Options
	user    string
	session int64
	id      transport.Identity

	op       sync.Mutex // one Generator method at a time: they share cfg and handler
	mu       sync.Mutex // one request at a time on the REQ socket
	sock     zmq4.Socket
	sockStop context.CancelFunc
	apiH     string
	nextID   int64
	speed    map[int]float64 // port -> line rate in b/s
	handler  map[int]string  // ports this driver owns
	cfg      trexConfig
}

// trexConfig is the configuration the driver installed.
type trexConfig struct {
	ports map[string]int // port name -> TRex port
	flows map[string]*trexFlow
	order []string // flow names as configured
	ref   map[int]trexPortCounters
	// installed says which flows' streams each tx port holds now.
	installed map[int][]string
}

type trexFlow struct {
	Flow
	tx, rx  int
	pg      uint32
	stream  uint32
	ref     trexFlowCounters // at the flow's last start
	started bool
}

type trexFlowCounters struct{ tp, rp, tb, rb int64 }

type trexPortCounters struct{ opk, ipk, ob, ib int64 }

// The STL API class version the client asks for (trex_stl_client.py:
// api_ver = {'name': 'STL', 'major': 5, 'minor': 0}).
const (
	trexAPIName  = "STL"
	trexAPIMajor = 5
	trexAPIMinor = 0
	// trexDefaultPort is the RPC port of the TRex server (trex_cfg.yaml's
	// zmq_rpc_port default, the Python client's sync_port).
	trexDefaultPort = "4501"
)

// TRexRPCError is an error answer of the TRex server.
type TRexRPCError struct {
	Method   string
	Code     int    `json:"code"`
	Message  string `json:"message"`
	Specific string `json:"specific_err"`
}

func (e *TRexRPCError) Error() string {
	if e.Specific != "" {
		return fmt.Sprintf("%s: %s (%d %s)", e.Method, e.Specific, e.Code, e.Message)
	}
	return fmt.Sprintf("%s: %d %s", e.Method, e.Code, e.Message)
}

// OpenTRex connects to a TRex server at tcp://host[:port] (port 4501 if
// none is given), synchronises the STL API version and reads the server's
// version and ports.
func OpenTRex(ctx context.Context, address string, opts Options) (*TRex, error) {
	addr, err := trexAddress(address)
	if err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	user := os.Getenv("USER")
	if user == "" {
		user = "testbed"
	}
	t := &TRex{addr: addr, opts: opts, user: user, session: time.Now().UnixNano() % 1_000_000_000, speed: map[int]float64{}, handler: map[int]string{}}
	var sync struct {
		APIH string `json:"api_h"`
	}
	if err := t.call(ctx, "api_sync_v2", map[string]any{"name": trexAPIName, "major": trexAPIMajor, "minor": trexAPIMinor}, &sync); err != nil {
		t.Close()
		return nil, fmt.Errorf("trex %s: %w", addr, err)
	}
	if sync.APIH == "" {
		t.Close()
		return nil, fmt.Errorf("trex %s: api_sync_v2 gave no api_h", addr)
	}
	t.mu.Lock()
	t.apiH = sync.APIH
	t.mu.Unlock()
	var ver struct {
		Version string `json:"version"`
		BuiltBy string `json:"built_by"`
		Mode    string `json:"mode"`
	}
	if err := t.call(ctx, "get_version", nil, &ver); err != nil {
		t.Close()
		return nil, fmt.Errorf("trex %s: %w", addr, err)
	}
	var sys struct {
		Hostname  string `json:"hostname"`
		PortCount int    `json:"port_count"`
		Ports     []struct {
			Index int     `json:"index"`
			Speed float64 `json:"speed"` // Gb/s
		} `json:"ports"`
	}
	if err := t.call(ctx, "get_system_info", nil, &sys); err != nil {
		t.Close()
		return nil, fmt.Errorf("trex %s: %w", addr, err)
	}
	for _, p := range sys.Ports {
		t.speed[p.Index] = p.Speed * 1e9
	}
	// TRex reports versions and a host name, no serial number: the
	// identity says what the server told, and no more.
	host := sys.Hostname
	if host == "" {
		host = "n/a"
	}
	t.id = transport.Identity{Vendor: "Cisco", Model: "TRex " + strings.TrimSpace(ver.Mode), Serial: host,
		Firmware: strings.TrimSpace(ver.Version + " api " + fmt.Sprintf("%s %d.%d", trexAPIName, trexAPIMajor, trexAPIMinor))}
	return t, nil
}

func trexAddress(address string) (string, error) {
	u, err := url.Parse(address)
	if err != nil || u.Scheme != "tcp" || u.Hostname() == "" {
		return "", fmt.Errorf("trex %s: expected tcp://host[:port] (the RPC port, 4501 by default)", address)
	}
	port := u.Port()
	if port == "" {
		port = trexDefaultPort
	}
	return "tcp://" + net.JoinHostPort(u.Hostname(), port), nil
}

// dial opens the REQ socket; t.mu is held.
func (t *TRex) dial() error {
	ctx, cancel := context.WithCancel(context.Background())
	s := zmq4.NewReq(ctx, zmq4.WithDialerTimeout(t.opts.Timeout), zmq4.WithDialerMaxRetries(1), zmq4.WithTimeout(t.opts.Timeout))
	if err := s.Dial(t.addr); err != nil {
		cancel()
		s.Close()
		return err
	}
	t.sock, t.sockStop = s, cancel
	return nil
}

// drop closes the socket after a lost reply; t.mu is held.
func (t *TRex) drop() {
	if t.sock != nil {
		t.sockStop()
		t.sock.Close()
		t.sock = nil
	}
}

// call sends one request and decodes its result into out.
func (t *TRex) call(ctx context.Context, method string, params map[string]any, out any) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if params == nil {
		params = map[string]any{}
	}
	if t.apiH != "" {
		params["api_h"] = t.apiH
	}
	t.nextID++
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": strconv.FormatInt(t.nextID, 10), "method": method, "params": params})
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
	defer cancel()
	if t.sock == nil {
		if err := t.dial(); err != nil {
			t.opts.Transcript.Error(err)
			return fmt.Errorf("%s: connect: %w", method, err)
		}
	}
	t.opts.Transcript.Sent(string(req))
	type answer struct {
		msg zmq4.Msg
		err error
	}
	ch := make(chan answer, 1)
	sock := t.sock
	go func() {
		if err := sock.Send(zmq4.NewMsg(req)); err != nil {
			ch <- answer{err: err}
			return
		}
		m, err := sock.Recv()
		ch <- answer{m, err}
	}()
	var a answer
	select {
	case a = <-ch:
	case <-rctx.Done():
		t.drop()
		<-ch
		err := context.Cause(rctx)
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no reply within %v: %w", t.opts.Timeout, err)
		}
		t.opts.Transcript.Error(err)
		return fmt.Errorf("%s: %w", method, err)
	}
	if a.err != nil {
		t.drop()
		t.opts.Transcript.Error(a.err)
		return fmt.Errorf("%s: %w", method, a.err)
	}
	var raw []byte
	if len(a.msg.Frames) > 0 {
		raw = a.msg.Frames[0]
	}
	t.opts.Transcript.Received(string(raw))
	var rep struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  json.RawMessage `json:"result"`
		Error   *TRexRPCError   `json:"error"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil || rep.JSONRPC != "2.0" {
		return fmt.Errorf("%s: reply is not JSON-RPC 2.0: %.80q", method, raw)
	}
	if rep.Error != nil {
		rep.Error.Method = method
		return rep.Error
	}
	if rep.Result == nil {
		return fmt.Errorf("%s: reply has neither result nor error: %.80q", method, raw)
	}
	if out != nil {
		if err := json.Unmarshal(rep.Result, out); err != nil {
			return fmt.Errorf("%s: result is not what was expected (%v): %.80q", method, err, rep.Result)
		}
	}
	return nil
}

// Identity implements Generator.
func (t *TRex) Identity(ctx context.Context) (transport.Identity, error) { return t.id, nil }

func (t *TRex) portNumber(p Port) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(p.Location))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("trex %s: port %s: location %q is not a TRex port number (0, 1, ...)", t.addr, p.Name, p.Location)
	}
	if _, ok := t.speed[n]; !ok {
		return 0, fmt.Errorf("trex %s: port %s: TRex port %d does not exist (the server has %d)", t.addr, p.Name, n, len(t.speed))
	}
	return n, nil
}

// acquire takes ownership of a TRex port for this driver.
func (t *TRex) acquire(ctx context.Context, port int) error {
	if t.handler[port] != "" {
		return nil
	}
	var h string
	if err := t.call(ctx, "acquire", map[string]any{"port_id": port, "user": t.user, "session_id": t.session, "force": false}, &h); err != nil {
		return fmt.Errorf("trex %s: port %d: %w", t.addr, port, err)
	}
	t.handler[port] = h
	return nil
}

func (t *TRex) owned(ctx context.Context, method string, port int, extra map[string]any) error {
	p := map[string]any{"port_id": port, "handler": t.handler[port]}
	for k, v := range extra {
		p[k] = v
	}
	if err := t.call(ctx, method, p, nil); err != nil {
		return fmt.Errorf("trex %s: port %d: %w", t.addr, port, err)
	}
	return nil
}

// Configure implements Generator: it takes the flows' tx ports, clears
// them and adds one stream per flow.
func (t *TRex) Configure(ctx context.Context, cfg Config) error {
	t.op.Lock()
	defer t.op.Unlock()
	c := trexConfig{ports: map[string]int{}, flows: map[string]*trexFlow{}, ref: map[int]trexPortCounters{}, installed: map[int][]string{}}
	for _, p := range cfg.Ports {
		if _, dup := c.ports[p.Name]; dup {
			return fmt.Errorf("trex %s: port %s defined twice", t.addr, p.Name)
		}
		n, err := t.portNumber(p)
		if err != nil {
			return err
		}
		c.ports[p.Name] = n
	}
	for i, f := range cfg.Flows {
		if _, dup := c.flows[f.Name]; dup {
			return fmt.Errorf("trex %s: flow %s defined twice", t.addr, f.Name)
		}
		tx, ok := c.ports[f.TxPort]
		if !ok {
			return fmt.Errorf("trex %s: flow %s: tx port %q not configured", t.addr, f.Name, f.TxPort)
		}
		rx, ok := c.ports[f.RxPort]
		if !ok {
			return fmt.Errorf("trex %s: flow %s: rx port %q not configured", t.addr, f.Name, f.RxPort)
		}
		if f.FrameBytes < 64 || f.FrameBytes > 9216 {
			return fmt.Errorf("trex %s: flow %s: frame size %d B is outside [64, 9216]", t.addr, f.Name, f.FrameBytes)
		}
		if f.RatePercent <= 0 || f.RatePercent > 100 {
			return fmt.Errorf("trex %s: flow %s: rate %g%% is outside (0, 100]", t.addr, f.Name, f.RatePercent)
		}
		c.flows[f.Name] = &trexFlow{Flow: f, tx: tx, rx: rx, pg: uint32(i + 1)}
		c.order = append(c.order, f.Name)
	}
	// Every port of the configuration is taken: the tx ports to send, the
	// rest so no one else starts traffic into the receivers mid-run.
	for _, n := range sortedPorts(c.ports) {
		if err := t.acquire(ctx, n); err != nil {
			return err
		}
		if err := t.owned(ctx, "stop_traffic", n, nil); err != nil {
			return err
		}
		if err := t.owned(ctx, "remove_all_streams", n, nil); err != nil {
			return err
		}
	}
	t.cfg = c
	for _, n := range sortedPorts(c.ports) {
		if err := t.install(ctx, n, c.order); err != nil {
			return err
		}
	}
	for _, n := range sortedPorts(c.ports) {
		pc, err := t.portCounters(ctx, n)
		if err != nil {
			return err
		}
		t.cfg.ref[n] = pc
	}
	return nil
}

func sortedPorts(m map[string]int) []int {
	seen := map[int]bool{}
	var out []int
	for _, n := range m {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

// install puts the streams of the named flows that send from port n on it
// (after removing what it held), stream ids from 1 in the order given.
func (t *TRex) install(ctx context.Context, n int, names []string) error {
	if len(t.cfg.installed[n]) > 0 {
		if err := t.owned(ctx, "remove_all_streams", n, nil); err != nil {
			return err
		}
	}
	var on []string
	id := uint32(0)
	for _, name := range names {
		f := t.cfg.flows[name]
		if f.tx != n {
			continue
		}
		id++
		f.stream = id
		mode := map[string]any{"type": "continuous", "rate": map[string]any{"type": "percentage", "value": f.RatePercent}}
		if f.Packets > 0 {
			mode = map[string]any{"type": "single_burst", "total_pkts": f.Packets, "rate": map[string]any{"type": "percentage", "value": f.RatePercent}}
		}
		stream := map[string]any{
			"enabled": true, "self_start": true, "start_paused": false, "isg": 0.0, "core_id": -1,
			"flags": 0, "action_count": 0, "next_stream_id": -1,
			"mode":       mode,
			"packet":     map[string]any{"binary": base64.StdEncoding.EncodeToString(trexPacket(f.FrameBytes-4, f.pg)), "meta": ""},
			"vm":         map[string]any{"instructions": []any{}, "split_by_var": ""},
			"flow_stats": map[string]any{"enabled": true, "stream_id": f.pg, "rule_type": "stats", "vxlan": false, "ieee_1588": false},
		}
		if err := t.owned(ctx, "add_stream", n, map[string]any{"stream_id": id, "stream": stream}); err != nil {
			return fmt.Errorf("flow %s: %w", name, err)
		}
		on = append(on, name)
	}
	t.cfg.installed[n] = on
	return nil
}

// trexPacket is an Ethernet/IPv4/UDP packet of n bytes (the frame without
// its FCS, which TRex adds), locally administered MACs, the flow's packet
// group in the UDP source port.
func trexPacket(n int, pg uint32) []byte {
	b := make([]byte, n)
	copy(b[0:6], []byte{0x02, 0, 0, 0, 0, 0x02})
	copy(b[6:12], []byte{0x02, 0, 0, 0, 0, 0x01})
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(n-14))
	ip[8] = 64 // TTL
	ip[9] = 17 // UDP
	copy(ip[12:16], []byte{16, 0, 0, 1})
	copy(ip[16:20], []byte{48, 0, 0, 1})
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	udp := b[34:42]
	binary.BigEndian.PutUint16(udp[0:], uint16(1024+pg%60000))
	binary.BigEndian.PutUint16(udp[2:], 12)
	binary.BigEndian.PutUint16(udp[4:], uint16(n-34))
	return b
}

func (t *TRex) selectFlows(names []string) ([]*trexFlow, error) {
	if len(names) == 0 {
		names = t.cfg.order
	}
	var out []*trexFlow
	for _, n := range names {
		f, ok := t.cfg.flows[n]
		if !ok {
			return nil, fmt.Errorf("trex %s: flow %q is not configured", t.addr, n)
		}
		out = append(out, f)
	}
	return out, nil
}

// Start implements Generator. TRex starts a port's streams together: a
// port whose streams are not exactly the named flows' gets them first.
func (t *TRex) Start(ctx context.Context, flows ...string) error {
	t.op.Lock()
	defer t.op.Unlock()
	fs, err := t.selectFlows(flows)
	if err != nil {
		return err
	}
	byPort := map[int][]string{}
	for _, f := range fs {
		byPort[f.tx] = append(byPort[f.tx], f.Name)
	}
	ports := make([]int, 0, len(byPort))
	for n := range byPort {
		ports = append(ports, n)
	}
	sort.Ints(ports)
	for _, n := range ports {
		if err := t.owned(ctx, "stop_traffic", n, nil); err != nil {
			return err
		}
		if !sameSet(t.cfg.installed[n], byPort[n]) {
			if err := t.install(ctx, n, byPort[n]); err != nil {
				return err
			}
		}
	}
	stats, err := t.pgStats(ctx, fs)
	if err != nil {
		return err
	}
	for _, f := range fs {
		f.ref, f.started = stats[f.pg].at(f.tx, f.rx), true
	}
	for _, n := range ports {
		// mul raw 1: the streams' own rates; duration -1: until the
		// streams end or are stopped (trex_stl_port.py, start).
		err := t.owned(ctx, "start_traffic", n, map[string]any{"mul": map[string]any{"type": "raw", "op": "abs", "value": 1.0},
			"duration": -1, "force": false, "core_mask": uint64(1<<64 - 1), "start_at_ts": 0})
		if err != nil {
			return err
		}
	}
	return nil
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x := append([]string(nil), a...)
	y := append([]string(nil), b...)
	sort.Strings(x)
	sort.Strings(y)
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// Stop implements Generator: it stops the tx ports of the named flows
// (all configured ports if none are named; with none configured, the
// traffic this user left running: stopLeftovers).
func (t *TRex) Stop(ctx context.Context, flows ...string) error {
	t.op.Lock()
	defer t.op.Unlock()
	var ports []int
	if len(flows) == 0 && len(t.handler) == 0 {
		return t.stopLeftovers(ctx)
	}
	if len(flows) == 0 {
		ports = sortedPorts(t.cfg.ports)
	} else {
		fs, err := t.selectFlows(flows)
		if err != nil {
			return err
		}
		seen := map[int]bool{}
		for _, f := range fs {
			if !seen[f.tx] {
				seen[f.tx] = true
				ports = append(ports, f.tx)
			}
		}
	}
	for _, n := range ports {
		if t.handler[n] == "" {
			continue
		}
		if err := t.owned(ctx, "stop_traffic", n, nil); err != nil {
			return err
		}
	}
	return nil
}

// stopLeftovers stops traffic a driver that owns nothing finds running:
// an undo after the process that started it is gone. A port transmitting
// for this user (another session of ours) is taken over with force, one
// transmitting for no one is taken; either is stopped and released. A port
// another user owns is theirs: it is left alone and named in the error.
func (t *TRex) stopLeftovers(ctx context.Context) error {
	ports := make([]int, 0, len(t.speed))
	for n := range t.speed {
		ports = append(ports, n)
	}
	sort.Ints(ports)
	var errs []error
	for _, n := range ports {
		var ps struct {
			State string `json:"state"`
			Owner string `json:"owner"`
		}
		if err := t.call(ctx, "get_port_status", map[string]any{"port_id": n, "block": false}, &ps); err != nil {
			return fmt.Errorf("trex %s: port %d: %w", t.addr, n, err)
		}
		if ps.State != "TX" && ps.State != "PAUSE" && ps.State != "PCAP_TX" {
			continue
		}
		if ps.Owner != "" && ps.Owner != t.user {
			errs = append(errs, fmt.Errorf("trex %s: port %d transmits for %q, not for %q: left running", t.addr, n, ps.Owner, t.user))
			continue
		}
		var h string
		if err := t.call(ctx, "acquire", map[string]any{"port_id": n, "user": t.user, "session_id": t.session, "force": ps.Owner != ""}, &h); err != nil {
			return fmt.Errorf("trex %s: port %d: %w", t.addr, n, err)
		}
		t.handler[n] = h
		if err := t.owned(ctx, "stop_traffic", n, nil); err != nil {
			return err
		}
		if err := t.owned(ctx, "release", n, nil); err != nil {
			return err
		}
		delete(t.handler, n)
	}
	return errors.Join(errs...)
}

// pgCounters are a packet group's counters by port, as get_pgid_stats
// lists them.
type pgCounters struct {
	TP  map[string]int64   `json:"tp"`
	RP  map[string]int64   `json:"rp"`
	TB  map[string]int64   `json:"tb"`
	RB  map[string]int64   `json:"rb"`
	TPS map[string]float64 `json:"tps"`
}

func (c pgCounters) at(tx, rx int) trexFlowCounters {
	ts, rs := strconv.Itoa(tx), strconv.Itoa(rx)
	return trexFlowCounters{tp: c.TP[ts], rp: c.RP[rs], tb: c.TB[ts], rb: c.RB[rs]}
}

func (t *TRex) pgStats(ctx context.Context, fs []*trexFlow) (map[uint32]pgCounters, error) {
	ids := make([]uint32, 0, len(fs))
	for _, f := range fs {
		ids = append(ids, f.pg)
	}
	var res struct {
		FlowStats map[string]pgCounters `json:"flow_stats"`
	}
	if err := t.call(ctx, "get_pgid_stats", map[string]any{"pgids": ids}, &res); err != nil {
		return nil, fmt.Errorf("trex %s: %w", t.addr, err)
	}
	out := map[uint32]pgCounters{}
	for k, v := range res.FlowStats {
		id, err := strconv.ParseUint(k, 10, 32)
		if err != nil {
			continue // "g", the global error counters
		}
		out[uint32(id)] = v
	}
	return out, nil
}

// FlowMetrics implements Generator. A flow counts from its last start; it
// is stopped once it has sent all its frames or its port no longer
// transmits.
func (t *TRex) FlowMetrics(ctx context.Context, flows ...string) ([]FlowMetrics, error) {
	t.op.Lock()
	defer t.op.Unlock()
	fs, err := t.selectFlows(flows)
	if err != nil {
		return nil, err
	}
	stats, err := t.pgStats(ctx, fs)
	if err != nil {
		return nil, err
	}
	state := map[int]string{}
	var out []FlowMetrics
	for _, f := range fs {
		c := stats[f.pg]
		now := c.at(f.tx, f.rx)
		m := FlowMetrics{Name: f.Name, Transmit: StateStopped}
		if f.started {
			m.FramesTx, m.FramesRx = now.tp-f.ref.tp, now.rp-f.ref.rp
			m.BytesTx, m.BytesRx = now.tb-f.ref.tb, now.rb-f.ref.rb
		}
		if f.started && (f.Packets == 0 || m.FramesTx < f.Packets) {
			st, ok := state[f.tx]
			if !ok {
				var ps struct {
					State string `json:"state"`
				}
				if err := t.call(ctx, "get_port_status", map[string]any{"port_id": f.tx, "block": false}, &ps); err != nil {
					return nil, fmt.Errorf("trex %s: port %d: %w", t.addr, f.tx, err)
				}
				st = ps.State
				state[f.tx] = st
			}
			switch st {
			case "TX", "PCAP_TX":
				m.Transmit = StateStarted
				m.FramesTxRate = c.TPS[strconv.Itoa(f.tx)]
			case "PAUSE":
				m.Transmit = StatePaused
			}
		}
		if m.FramesTx > 0 {
			m.Loss = 100 * float64(m.FramesTx-m.FramesRx) / float64(m.FramesTx)
		}
		out = append(out, m)
	}
	return out, nil
}

func (t *TRex) portCounters(ctx context.Context, n int) (trexPortCounters, error) {
	var ps struct {
		OPk int64 `json:"opackets"`
		IPk int64 `json:"ipackets"`
		OB  int64 `json:"obytes"`
		IB  int64 `json:"ibytes"`
	}
	if err := t.call(ctx, "get_port_stats", map[string]any{"port_id": n}, &ps); err != nil {
		return trexPortCounters{}, fmt.Errorf("trex %s: port %d: %w", t.addr, n, err)
	}
	return trexPortCounters{ps.OPk, ps.IPk, ps.OB, ps.IB}, nil
}

// PortMetrics implements Generator: a port's counters since Configure.
func (t *TRex) PortMetrics(ctx context.Context, ports ...string) ([]PortMetrics, error) {
	t.op.Lock()
	defer t.op.Unlock()
	if len(ports) == 0 {
		for name := range t.cfg.ports {
			ports = append(ports, name)
		}
		sort.Strings(ports)
	}
	var out []PortMetrics
	for _, name := range ports {
		n, ok := t.cfg.ports[name]
		if !ok {
			return nil, fmt.Errorf("trex %s: port %q is not configured", t.addr, name)
		}
		c, err := t.portCounters(ctx, n)
		if err != nil {
			return nil, err
		}
		r := t.cfg.ref[n]
		out = append(out, PortMetrics{Name: name, FramesTx: c.opk - r.opk, FramesRx: c.ipk - r.ipk, BytesTx: c.ob - r.ob, BytesRx: c.ib - r.ib})
	}
	return out, nil
}

// Close releases the ports the driver took (stopping their traffic
// first, as the server requires) and closes the socket.
func (t *TRex) Close() error {
	t.op.Lock()
	defer t.op.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), t.opts.Timeout)
	defer cancel()
	var errs []error
	ports := make([]int, 0, len(t.handler))
	for n := range t.handler {
		ports = append(ports, n)
	}
	sort.Ints(ports)
	for _, n := range ports {
		if err := t.owned(ctx, "stop_traffic", n, nil); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := t.owned(ctx, "release", n, nil); err != nil {
			errs = append(errs, err)
		}
		delete(t.handler, n)
	}
	t.mu.Lock()
	t.drop()
	t.mu.Unlock()
	return errors.Join(errs...)
}

func init() {
	Register("trex", func(ctx context.Context, address string, opts Options) (Generator, error) {
		return OpenTRex(ctx, address, opts)
	})
}
