package trafficgen

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"

	"testbed/simlab/wire"
	"testbed/simlab/world"
)

// TRexServer emulates a Cisco TRex traffic generator in stateless (STL)
// mode as its clients see it: JSON-RPC 2.0 over a ZeroMQ REP socket (the
// server's port 4501), one request or a batch (a JSON array) per message.
// It follows cisco-system-traffic-generator/trex-core:
//
//   - src/rpc-server/trex_rpc_jsonrpc_v2_parser.cpp: the reply envelope
//     and error codes (-32700 bad JSON, -32600 invalid request, -32601
//     method not registered, -32602 bad parameters, -32000 execute error,
//     each with "message" and the command's "specific_err");
//   - src/rpc-server/commands/trex_rpc_cmd_general.cpp and
//     trex_rpc_cmd_stream.cpp: api_sync_v2 (name STL, major must match,
//     minor not above the server's) returning the api_h every later call
//     carries; acquire (port_id, user, session_id, force) returning the
//     port handler that owned-port commands carry; add_stream's required
//     fields (mode with rate, enabled, self_start, flags, action_count,
//     isg, next_stream_id, packet.binary in base64 and packet.meta, vm,
//     flow_stats), its packet size bounds and rate types;
//   - scripts/automation/trex_control_plane/interactive/trex: the fields
//     of get_port_stats (opackets, ipackets, obytes, ibytes, m_total_*),
//     of get_pgid_stats (flow_stats per pg_id: tp, rp, tb, rb, tps, rps
//     keyed by port; ver_id) and of get_port_status (state IDLE, STREAMS,
//     TX, PAUSE; owner; attr.speed in Gb/s, attr.link.up).
//
// Ports are numbered from 0; a port transmits into the fibre cabled to it
// (TRexPort.TxFibre) and receives what arrives on its RxFibre. Every frame
// is len(packet)+4 bytes on the fibre (TRex adds the FCS; packets shorter
// than 60 bytes are padded to 60, as the server does). A stream's frames
// cross the fibre in blocks (trexBlock), each block's losses drawn from
// the World's optics model when the block begins, so the counts
// depend on the seed and the attenuation, not on when they are read.
//
// Transmission runs in simulated time: TimeScale simulated seconds per
// real second; a stream's rate times the simulated time it has run is
// what it has sent. Flow statistics (rule_type "stats") need an IPv4 or
// IPv6 packet, as TRex's hardware flow statistics (the IP ID rule) do.
//
// Not emulated: the async publisher (port 4500), service mode, capture,
// latency streams, multi-stream chains (next_stream_id other than -1),
// field-engine instructions (vm.instructions must be empty), and the
// zlib-compressed messages the client sends above 256 KiB.
type TRexServer struct {
	world  *world.World
	ports  []TRexPort
	faults *wire.Faults
	scale  float64
	ver    string
	now    func() time.Time

	mu     sync.Mutex
	apiH   string
	nextH  int
	port   []*trexPortState
	pg     map[uint32]*trexPG
	sock   zmq4.Socket
	cancel context.CancelFunc
	done   chan struct{}
}

// TRexPort is a test port of the emulator, by index.
type TRexPort struct {
	TxFibre string // "" if the port only receives
	RxFibre string // "" if nothing arrives at it
}

// TRexOptions tune the emulator.
type TRexOptions struct {
	TimeScale float64 // simulated seconds per real second; default 1000
	// Version is what get_version reports; default "v3.06".
	Version string
}

// The API class versions this server speaks: the STL client of
// trex-core v3.x asks for STL 5.0 (trex_stl_client.py, api_ver).
const (
	trexAPIMajor = 5
	trexAPIMinor = 1
	// MIN_PKT_SIZE and MAX_PKT_SIZE of trex-core's stateless streams
	// (src/stx/stl/trex_stl_stream.h): an Ethernet header at least, a
	// jumbo frame at most.
	trexMinPkt = 14
	trexMaxPkt = 9216
)

type trexPortState struct {
	owner, session, handler string
	state                   string // IDLE, STREAMS, TX, PAUSE
	streams                 map[uint32]*trexStream
	// counters of frames that ended their run (folded in at stop)
	opk, obytes, ipk, ibytes int64
}

// trexPG is a packet group's counters (flow statistics).
type trexPG struct {
	ver            int
	tp, rp, tb, rb map[int]int64 // by port, of finished runs
}

type trexStream struct {
	id      uint32
	pg      uint32 // 0: no flow statistics
	hasPG   bool
	enabled bool
	frame   int // bytes on the fibre, FCS included
	rate    trexRate
	packets int64 // 0: continuous
	fibre   *world.Fibre
	rxPort  int // the port its fibre delivers to, -1 if none
	run     *trexRun
}

type trexRate struct {
	kind  string
	value float64
}

// trexRun is one transmission of a stream, from start_traffic to its end.
// Its frames are drawn in blocks (trexBlock); only the block under way is
// kept apart, so a continuous stream's state stays small however long it
// runs.
type trexRun struct {
	fps      float64
	packets  int64 // 0: until stopped
	realAt   time.Time
	running  bool
	sent     int64
	drawn    int64 // frames whose losses have been drawn
	lostPrev int64 // losses of the blocks before the one under way
	cur      struct{ start, size, lost int64 }
	blocks   int
}

// trexBlock is the size of a run's i-th block: 2^20 frames, as the OTG
// emulator draws them, for the first 256 blocks (268 M frames); then
// doubling every 256 blocks, so a long continuous stream at a high time
// scale costs a number of draws that grows with the log of its frames, not
// with them. The sizes depend on the block's index alone, never on when
// counters are read.
func trexBlock(i int) int64 { return 1 << 20 << min(i/256, 24) }

// NewTRexServer makes an emulator over w with the given ports (port i is
// ports[i]); faults may be nil.
func NewTRexServer(w *world.World, ports []TRexPort, faults *wire.Faults, opts TRexOptions) *TRexServer {
	if faults == nil {
		faults = &wire.Faults{}
	}
	if opts.TimeScale <= 0 {
		opts.TimeScale = 1000
	}
	if opts.Version == "" {
		opts.Version = "v3.06"
	}
	s := &TRexServer{world: w, ports: ports, faults: faults, scale: opts.TimeScale, ver: opts.Version, now: time.Now, pg: map[uint32]*trexPG{}}
	for range ports {
		s.port = append(s.port, &trexPortState{state: "IDLE", streams: map[uint32]*trexStream{}})
	}
	s.apiH = trexToken(w.Seed(), 0)
	return s
}

// trexToken is an 8-character handle like the server's random ones,
// derived from the seed so runs repeat.
func trexToken(seed uint64, n int) string {
	const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	x := seed*0x9E3779B97F4A7C15 + uint64(n+1)*0xBF58476D1CE4E5B9
	b := make([]byte, 8)
	for i := range b {
		x ^= x >> 31
		x *= 0x94D049BB133111EB
		b[i] = abc[x%uint64(len(abc))]
	}
	return string(b)
}

// Start listens on addr (e.g. "127.0.0.1:0").
func (s *TRexServer) Start(addr string) error {
	ctx, cancel := context.WithCancel(context.Background())
	sock := zmq4.NewRep(ctx)
	if err := sock.Listen("tcp://" + addr); err != nil {
		cancel()
		sock.Close()
		return fmt.Errorf("trex emulator: listen on %s: %w", addr, err)
	}
	s.sock, s.cancel, s.done = sock, cancel, make(chan struct{})
	go s.serve(ctx)
	return nil
}

// Addr is the RPC endpoint: tcp://127.0.0.1:port.
func (s *TRexServer) Addr() string { return "tcp://" + s.sock.Addr().String() }

// Close stops serving.
func (s *TRexServer) Close() error {
	if s.sock == nil {
		return nil
	}
	s.cancel()
	err := s.sock.Close()
	<-s.done
	s.sock = nil
	return err
}

func (s *TRexServer) serve(ctx context.Context) {
	defer close(s.done)
	for {
		msg, err := s.sock.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			continue // a malformed envelope: nothing to answer
		}
		if len(msg.Frames) == 0 {
			continue
		}
		// drop and stall: a REP socket cannot hang up on one peer; both
		// leave the request unanswered, and the client's deadline fires.
		if s.faults.TakeDrop() || s.faults.TakeStall() {
			continue
		}
		if d := s.faults.Delay(); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return
			}
		}
		reply := s.handle(msg.Frames[0])
		if s.faults.TakeGarble() {
			reply = []byte("\x00\xffgarbled")
		}
		if err := s.sock.Send(zmq4.NewMsg(reply)); err != nil && ctx.Err() != nil {
			return
		}
	}
}

// rpcError is a JSON-RPC error object as the TRex server writes it.
type rpcError struct {
	Code     int    `json:"code"`
	Message  string `json:"message"`
	Specific string `json:"specific_err,omitempty"`
}

type rpcReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// Error codes of trex_rpc_jsonrpc_v2_parser.cpp.
const (
	rpcParse         = -32700
	rpcInvalidReq    = -32600
	rpcMethodMissing = -32601
	rpcBadParams     = -32602
	rpcExecute       = -32000
)

// cmdErr is a command's failure: parse (bad parameters) or execute.
type cmdErr struct {
	parse bool
	msg   string
}

func (e *cmdErr) Error() string { return e.msg }

func parseErr(format string, args ...any) error {
	return &cmdErr{parse: true, msg: fmt.Sprintf(format, args...)}
}

func execErr(format string, args ...any) error {
	return &cmdErr{msg: fmt.Sprintf(format, args...)}
}

func (s *TRexServer) handle(raw []byte) []byte {
	var batch []json.RawMessage
	if err := json.Unmarshal(raw, &batch); err == nil {
		var out []rpcReply
		for _, r := range batch {
			out = append(out, s.single(r))
		}
		b, _ := json.Marshal(out)
		return b
	}
	var probe any
	if json.Unmarshal(raw, &probe) != nil {
		b, _ := json.Marshal(rpcReply{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{Code: rpcParse, Message: "Bad JSON Format"}})
		return b
	}
	b, _ := json.Marshal(s.single(raw))
	return b
}

func (s *TRexServer) single(raw json.RawMessage) rpcReply {
	var req struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	rep := rpcReply{JSONRPC: "2.0", ID: json.RawMessage("null")}
	if err := json.Unmarshal(raw, &req); err != nil {
		rep.Error = &rpcError{Code: rpcInvalidReq, Message: "Invalid JSONRPC Version"}
		return rep
	}
	if len(req.ID) > 0 {
		rep.ID = req.ID
	}
	if req.JSONRPC != "2.0" {
		rep.Error = &rpcError{Code: rpcInvalidReq, Message: "Invalid JSONRPC Version"}
		return rep
	}
	if req.Method == "" {
		rep.Error = &rpcError{Code: rpcInvalidReq, Message: "Missing Method Name"}
		return rep
	}
	h, ok := s.methods()[req.Method]
	if !ok {
		rep.Error = &rpcError{Code: rpcMethodMissing, Message: "Method " + req.Method + " not registered"}
		return rep
	}
	p := params{}
	if len(req.Params) > 0 && string(req.Params) != "null" {
		if err := json.Unmarshal(req.Params, (*map[string]any)(&p)); err != nil {
			rep.Error = &rpcError{Code: rpcBadParams, Message: "Bad paramters for method", Specific: "params is not an object"}
			return rep
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advanceAll()
	var res any
	err := error(nil)
	if h.api && p.str("api_h") != s.apiH {
		err = execErr("API verification failed - missing or bad API handler provided")
	} else if h.mutates {
		if f, hit := s.faults.TakeFailure(); hit {
			err = execErr("%s", f.Message)
		}
	}
	if err == nil {
		res, err = h.fn(p)
	}
	if err != nil {
		var ce *cmdErr
		if errors.As(err, &ce) && ce.parse {
			rep.Error = &rpcError{Code: rpcBadParams, Message: "Bad paramters for method", Specific: err.Error()}
		} else {
			rep.Error = &rpcError{Code: rpcExecute, Message: "Failed To Execute Method", Specific: err.Error()}
		}
		return rep
	}
	if res == nil {
		res = map[string]any{}
	}
	rep.Result = res
	return rep
}

type trexMethod struct {
	fn      func(p params) (any, error)
	api     bool // needs api_h
	mutates bool // a setting command: takes injected device errors
}

func (s *TRexServer) methods() map[string]trexMethod {
	return map[string]trexMethod{
		"api_sync_v2":        {fn: s.apiSync},
		"ping":               {fn: func(params) (any, error) { return map[string]any{}, nil }},
		"get_version":        {fn: s.version},
		"get_supported_cmds": {fn: s.supported, api: true},
		"get_system_info":    {fn: s.systemInfo, api: true},
		"get_port_status":    {fn: s.portStatus, api: true},
		"acquire":            {fn: s.acquire, api: true, mutates: true},
		"release":            {fn: s.release, api: true, mutates: true},
		"add_stream":         {fn: s.addStream, api: true, mutates: true},
		"remove_all_streams": {fn: s.removeAll, api: true, mutates: true},
		"get_stream_list":    {fn: s.streamList, api: true},
		"start_traffic":      {fn: s.startTraffic, api: true, mutates: true},
		"stop_traffic":       {fn: s.stopTraffic, api: true, mutates: true},
		"get_port_stats":     {fn: s.portStats, api: true},
		"get_pgid_stats":     {fn: s.pgidStats, api: true},
		"get_active_pgids":   {fn: s.activePGIDs, api: true},
		"get_global_stats":   {fn: s.globalStats, api: true},
	}
}

// params reads a request's parameters the way the server's parse_* helpers
// do: a missing field or one of the wrong type is a parse error naming it.
type params map[string]any

func (p params) get(name string) (any, error) {
	v, ok := p[name]
	if !ok {
		return nil, parseErr("field '%s' is missing", name)
	}
	return v, nil
}

func (p params) str(name string) string {
	s, _ := p[name].(string)
	return s
}

func (p params) reqStr(name string) (string, error) {
	v, err := p.get(name)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", parseErr("field '%s' is '%v', expecting 'string'", name, v)
	}
	return s, nil
}

func (p params) reqNum(name string) (float64, error) {
	v, err := p.get(name)
	if err != nil {
		return 0, err
	}
	f, ok := v.(float64)
	if !ok {
		return 0, parseErr("field '%s' is '%v', expecting 'number'", name, v)
	}
	return f, nil
}

func (p params) reqInt(name string) (int64, error) {
	f, err := p.reqNum(name)
	if err != nil {
		return 0, err
	}
	if f != math.Trunc(f) {
		return 0, parseErr("field '%s' is '%v', expecting 'int'", name, f)
	}
	return int64(f), nil
}

func (p params) reqBool(name string) (bool, error) {
	v, err := p.get(name)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, parseErr("field '%s' is '%v', expecting 'bool'", name, v)
	}
	return b, nil
}

func (p params) reqObj(name string) (params, error) {
	v, err := p.get(name)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, parseErr("field '%s' is '%v', expecting 'object'", name, v)
	}
	return params(m), nil
}

// port reads port_id and checks it exists.
func (s *TRexServer) portID(p params) (int, error) {
	id, err := p.reqInt("port_id")
	if err != nil {
		return 0, err
	}
	if id < 0 || int(id) >= len(s.port) {
		return 0, parseErr("invalid port id - should be between 0 and %d", len(s.port)-1)
	}
	return int(id), nil
}

// owned reads port_id and checks the handler owns the port.
func (s *TRexServer) owned(p params) (int, *trexPortState, error) {
	id, err := s.portID(p)
	if err != nil {
		return 0, nil, err
	}
	h, err := p.reqStr("handler")
	if err != nil {
		return 0, nil, err
	}
	st := s.port[id]
	if st.handler == "" || h != st.handler {
		return 0, nil, execErr("port %d is not owned by you or your current executing session", id)
	}
	return id, st, nil
}

func (s *TRexServer) apiSync(p params) (any, error) {
	name, err := p.reqStr("name")
	if err != nil {
		return nil, err
	}
	major, err := p.reqInt("major")
	if err != nil {
		return nil, err
	}
	minor, err := p.reqInt("minor")
	if err != nil {
		return nil, err
	}
	if name != "STL" {
		return nil, execErr("API type '%s': the server runs in STL mode", name)
	}
	if major != trexAPIMajor || minor > trexAPIMinor {
		return nil, execErr("%s API version mismatch: server: '%d.%d', client: '%d.%d'", name, trexAPIMajor, trexAPIMinor, major, minor)
	}
	return map[string]any{"api_h": s.apiH}, nil
}

func (s *TRexServer) version(params) (any, error) {
	return map[string]any{"version": s.ver, "build_date": "Jan  1 2025", "build_time": "00:00:00", "built_by": "testbed-simlab", "mode": "STL"}, nil
}

func (s *TRexServer) supported(params) (any, error) {
	var out []string
	for n := range s.methods() {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// speedGbps is a port's line rate, from the transceiver of its fibre.
func (s *TRexServer) speedBps(i int) float64 {
	for _, name := range []string{s.ports[i].TxFibre, s.ports[i].RxFibre} {
		if f, ok := s.world.Fibre(name); ok && name != "" {
			return f.Transceiver.DataRateBps()
		}
	}
	return 10e9
}

func (s *TRexServer) mac(i int) string {
	return fmt.Sprintf("02:00:00:00:%02x:%02x", (i>>8)&0xff, i&0xff)
}

func (s *TRexServer) systemInfo(params) (any, error) {
	var ports []map[string]any
	for i := range s.port {
		g := s.speedBps(i) / 1e9
		ports = append(ports, map[string]any{
			"index": i, "description": "simulated port", "driver": "net_simlab", "numa": 0,
			"pci_addr": fmt.Sprintf("0000:%02x:00.0", i+3), "hw_macaddr": s.mac(i), "src_macaddr": s.mac(i), "dst_macaddr": s.mac(i ^ 1),
			"is_virtual": false, "is_fc_supported": false, "is_led_supported": false, "is_link_supported": false,
			"speed": g, "supp_speeds": []float64{g * 1000},
			"rx": map[string]any{"caps": []string{"flow_stats", "latency", "rx_bytes"}, "counters": 127},
		})
	}
	return map[string]any{"core_type": "simulated", "dp_core_count": 1, "dp_core_count_per_port": 1,
		"hostname": "simlab-trex", "port_count": len(s.port), "ports": ports, "uptime": "simulated"}, nil
}

func (s *TRexServer) portStatus(p params) (any, error) {
	id, err := s.portID(p)
	if err != nil {
		return nil, err
	}
	st := s.port[id]
	var max uint32
	for sid := range st.streams {
		max = maxU32(max, sid)
	}
	return map[string]any{"owner": st.owner, "state": st.state, "max_stream_id": max, "service": false, "service_filtered": false,
		"attr": map[string]any{"speed": s.speedBps(id) / 1e9, "link": map[string]any{"up": true}, "promiscuous": map[string]any{"enabled": false},
			"multicast": map[string]any{"enabled": false}, "fc": map[string]any{"mode": 0}}}, nil
}

func maxU32(a, b uint32) uint32 {
	if a > b {
		return a
	}
	return b
}

func (s *TRexServer) acquire(p params) (any, error) {
	id, err := s.portID(p)
	if err != nil {
		return nil, err
	}
	user, err := p.reqStr("user")
	if err != nil {
		return nil, err
	}
	force, err := p.reqBool("force")
	if err != nil {
		return nil, err
	}
	session, _ := p["session_id"].(float64)
	sess := strconv.FormatFloat(session, 'f', -1, 64)
	st := s.port[id]
	if st.owner != "" && !force && (st.owner != user || st.session != sess) {
		return nil, execErr("port is already owned by '%s'", st.owner)
	}
	s.nextH++
	st.owner, st.session, st.handler = user, sess, trexToken(s.world.Seed(), s.nextH)
	return st.handler, nil
}

func (s *TRexServer) release(p params) (any, error) {
	_, st, err := s.owned(p)
	if err != nil {
		return nil, err
	}
	st.owner, st.session, st.handler = "", "", ""
	return nil, nil
}

// addStream adds a stream to an owned, inactive port: the stream object
// as TRex's add_stream takes it (stream.json of trex-core's RPC spec),
// every field the server requires checked in the server's order.
func (s *TRexServer) addStream(p params) (any, error) {
	id, st, err := s.owned(p)
	if err != nil {
		return nil, err
	}
	if st.state == "TX" || st.state == "PAUSE" {
		return nil, execErr("port %d is active: stop it before adding streams", id)
	}
	sid, err := p.reqInt("stream_id")
	if err != nil {
		return nil, err
	}
	sec, err := p.reqObj("stream")
	if err != nil {
		return nil, err
	}
	str, err := parseTRexStream(uint32(sid), sec)
	if err != nil {
		return nil, err
	}
	if _, dup := st.streams[str.id]; dup {
		return nil, execErr("stream %d already exists on port %d", str.id, id)
	}
	if name := s.ports[id].TxFibre; name != "" {
		str.fibre, _ = s.world.Fibre(name)
		for j, q := range s.ports {
			if q.RxFibre == name {
				str.rxPort = j
			}
		}
	}
	if str.hasPG && !s.pgInUse(str.pg) {
		// A packet group that comes into use starts its counters afresh
		// under a new version, as the server's flow stat rules do.
		old := s.pg[str.pg]
		ver := 1
		if old != nil {
			ver = old.ver + 1
		}
		s.pg[str.pg] = &trexPG{ver: ver, tp: map[int]int64{}, rp: map[int]int64{}, tb: map[int]int64{}, rb: map[int]int64{}}
	}
	st.streams[str.id] = str
	st.state = "STREAMS"
	return nil, nil
}

// parseTRexStream reads a stream object: its mode and rate, its flags,
// its packet, its field engine and its flow stats, in that order.
func parseTRexStream(id uint32, sec params) (*trexStream, error) {
	str := &trexStream{id: id, rxPort: -1}
	mode, err := sec.reqObj("mode")
	if err != nil {
		return nil, err
	}
	if err := str.parseMode(mode); err != nil {
		return nil, err
	}
	if str.enabled, err = sec.reqBool("enabled"); err != nil {
		return nil, err
	}
	if err := checkTRexStreamFlow(sec); err != nil {
		return nil, err
	}
	bin, err := trexPacket(sec)
	if err != nil {
		return nil, err
	}
	str.frame = max(len(bin), 60) + 4
	vm, err := sec.reqObj("vm")
	if err != nil {
		return nil, err
	}
	if ins, ok := vm["instructions"].([]any); !ok {
		return nil, parseErr("field 'instructions' is missing")
	} else if len(ins) > 0 {
		return nil, execErr("field engine instructions are not emulated by this server")
	}
	fs, err := sec.reqObj("flow_stats")
	if err != nil {
		return nil, err
	}
	if err := str.parseFlowStats(fs, bin); err != nil {
		return nil, err
	}
	return str, nil
}

// parseMode reads a stream's mode: continuous or one burst of
// total_pkts, and its rate.
func (str *trexStream) parseMode(mode params) error {
	typ, err := mode.reqStr("type")
	if err != nil {
		return err
	}
	switch typ {
	case "continuous":
	case "single_burst":
		n, err := mode.reqInt("total_pkts")
		if err != nil {
			return err
		}
		if n <= 0 {
			return parseErr("single_burst: 'total_pkts' cannot be zero.")
		}
		str.packets = n
	case "multi_burst":
		return execErr("multi_burst streams are not emulated by this server")
	default:
		return parseErr("bad stream type provided: '%s'", typ)
	}
	rate, err := mode.reqObj("rate")
	if err != nil {
		return err
	}
	if str.rate.value, err = rate.reqNum("value"); err != nil {
		return err
	}
	if str.rate.value < 0 {
		return parseErr("field 'value' must be non-negative")
	}
	if str.rate.kind, err = rate.reqStr("type"); err != nil {
		return err
	}
	switch str.rate.kind {
	case "pps", "bps_L1", "bps_L2", "percentage":
	default:
		return parseErr("field 'type' has value '%s' - must be one of pps, bps_L1, bps_L2, percentage", str.rate.kind)
	}
	return nil
}

// checkTRexStreamFlow checks the fields that chain a stream to others
// and space its packets: required, and no chain (not emulated).
func checkTRexStreamFlow(sec params) error {
	if _, err := sec.reqBool("self_start"); err != nil {
		return err
	}
	for _, f := range []string{"flags", "action_count", "next_stream_id"} {
		if _, err := sec.reqInt(f); err != nil {
			return err
		}
	}
	if isg, err := sec.reqNum("isg"); err != nil {
		return err
	} else if isg < 0 {
		return parseErr("field 'isg' must be non-negative")
	}
	if next, _ := sec.reqInt("next_stream_id"); next != -1 {
		return execErr("stream chains (next_stream_id %d) are not emulated by this server", next)
	}
	return nil
}

// trexPacket decodes a stream's packet, of a size the server sends.
func trexPacket(sec params) ([]byte, error) {
	pkt, err := sec.reqObj("packet")
	if err != nil {
		return nil, err
	}
	b64, err := pkt.reqStr("binary")
	if err != nil {
		return nil, err
	}
	if _, err := pkt.reqStr("meta"); err != nil {
		return nil, err
	}
	bin, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, parseErr("packet.binary is not base64: %v", err)
	}
	if len(bin) < trexMinPkt || len(bin) > trexMaxPkt {
		return nil, execErr("Bad packet size provided: %d. Should be between %d and %d", len(bin), trexMinPkt, trexMaxPkt)
	}
	return bin, nil
}

// parseFlowStats reads a stream's flow stats: when enabled, the packet
// group it counts in, by the stats rule, which needs an IP packet.
func (str *trexStream) parseFlowStats(fs params, bin []byte) error {
	var err error
	if str.hasPG, err = fs.reqBool("enabled"); err != nil || !str.hasPG {
		return err
	}
	pg, err := fs.reqInt("stream_id")
	if err != nil {
		return err
	}
	rule, err := fs.reqStr("rule_type")
	if err != nil {
		return err
	}
	if rule != "stats" {
		return execErr("flow_stats rule_type '%s' is not emulated by this server (stats)", rule)
	}
	// The hardware rule counts by the IP header: an IPv4 or IPv6
	// packet, untagged or behind one 802.1Q tag.
	et := binary.BigEndian.Uint16(bin[12:14])
	if et == 0x8100 && len(bin) >= 18 {
		et = binary.BigEndian.Uint16(bin[16:18])
	}
	if et != 0x0800 && et != 0x86dd {
		return execErr("flow stats (pg_id %d) need an IPv4 or IPv6 packet; ether type is 0x%04x", pg, et)
	}
	str.pg = uint32(pg)
	return nil
}

func (s *TRexServer) pgInUse(pg uint32) bool {
	for _, st := range s.port {
		for _, x := range st.streams {
			if x.hasPG && x.pg == pg {
				return true
			}
		}
	}
	return false
}

func (s *TRexServer) removeAll(p params) (any, error) {
	id, st, err := s.owned(p)
	if err != nil {
		return nil, err
	}
	if st.state == "TX" || st.state == "PAUSE" {
		return nil, execErr("port %d is active: stop it before removing streams", id)
	}
	st.streams = map[uint32]*trexStream{}
	st.state = "IDLE"
	return nil, nil
}

func (s *TRexServer) streamList(p params) (any, error) {
	id, err := s.portID(p)
	if err != nil {
		return nil, err
	}
	ids := []uint32{}
	for sid := range s.port[id].streams {
		ids = append(ids, sid)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// fps is a stream's frame rate at a multiplier factor on a port of lineBps.
// Every frame costs 20 B more on the line (preamble, SFD, minimum gap:
// IEEE 802.3 cl. 4): bps_L1 and percentage count them, bps_L2 does not.
func (x *trexStream) fps(factor, lineBps float64) float64 {
	l1 := float64(x.frame+20) * 8
	switch x.rate.kind {
	case "pps":
		return x.rate.value * factor
	case "bps_L1":
		return x.rate.value * factor / l1
	case "bps_L2":
		return x.rate.value * factor / (float64(x.frame) * 8)
	default: // percentage
		return x.rate.value / 100 * lineBps * factor / l1
	}
}

func (s *TRexServer) startTraffic(p params) (any, error) {
	id, st, err := s.owned(p)
	if err != nil {
		return nil, err
	}
	mul, err := p.reqObj("mul")
	if err != nil {
		return nil, err
	}
	mtype, err := mul.reqStr("type")
	if err != nil {
		return nil, err
	}
	op, err := mul.reqStr("op")
	if err != nil {
		return nil, err
	}
	mval, err := mul.reqNum("value")
	if err != nil {
		return nil, err
	}
	dur, err := p.reqNum("duration")
	if err != nil {
		return nil, err
	}
	force, err := p.reqBool("force")
	if err != nil {
		return nil, err
	}
	if op != "abs" {
		return nil, parseErr("start_traffic: multiplier op '%s' - only 'abs' is allowed", op)
	}
	if st.state == "IDLE" {
		return nil, execErr("unable to start traffic - no streams attached to port")
	}
	if (st.state == "TX" || st.state == "PAUSE") && !force {
		return nil, execErr("port %d is already active - stop it or use force", id)
	}
	if st.state == "TX" || st.state == "PAUSE" {
		s.stopPort(id)
	}
	line := s.speedBps(id)
	// The profile's own rate at factor 1: what bps and percentage
	// multipliers are relative to.
	var basePPS, baseBpsL1 float64
	for _, x := range st.streams {
		if x.enabled {
			f := x.fps(1, line)
			basePPS += f
			baseBpsL1 += f * float64(x.frame+20) * 8
		}
	}
	factor := mval
	switch mtype {
	case "raw":
	case "pps":
		factor = mval / basePPS
	case "bps":
		factor = mval / baseBpsL1
	case "percentage":
		factor = mval / 100 * line / baseBpsL1
	default:
		return nil, parseErr("field 'type' has value '%s' - must be one of raw, bps, pps, percentage", mtype)
	}
	if baseBpsL1*factor > line*(1+1e-9) {
		return nil, execErr("Expected L1 B/W: '%.6g Gbps' exceeds port line rate: '%.6g Gbps'", baseBpsL1*factor/1e9, line/1e9)
	}
	now := s.now()
	for _, x := range st.streams {
		if !x.enabled {
			continue
		}
		fps := x.fps(factor, line)
		n := x.packets
		if dur > 0 {
			byTime := int64(math.Floor(dur * fps))
			if n == 0 || byTime < n {
				n = max(byTime, 1)
			}
		}
		x.run = &trexRun{fps: fps, packets: n, realAt: now, running: true}
	}
	st.state = "TX"
	return map[string]any{"multiplier": factor, "ts": float64(now.UnixNano()) / 1e9}, nil
}

func (s *TRexServer) stopTraffic(p params) (any, error) {
	id, _, err := s.owned(p)
	if err != nil {
		return nil, err
	}
	s.stopPort(id)
	return nil, nil
}

// stopPort ends every run of a port's streams and folds their counters in.
func (s *TRexServer) stopPort(id int) {
	st := s.port[id]
	for _, x := range st.streams {
		if x.run != nil {
			s.fold(id, x)
		}
	}
	if st.state == "TX" || st.state == "PAUSE" {
		st.state = "STREAMS"
	}
}

// fold ends a stream's run: its counters join the port's and its packet
// group's.
func (s *TRexServer) fold(port int, x *trexStream) {
	tx, rx := x.run.counters()
	st := s.port[port]
	st.opk += tx
	st.obytes += tx * int64(x.frame)
	if x.rxPort >= 0 {
		r := s.port[x.rxPort]
		r.ipk += rx
		r.ibytes += rx * int64(x.frame)
	}
	if g := s.pg[x.pg]; x.hasPG && g != nil {
		g.tp[port] += tx
		g.tb[port] += tx * int64(x.frame)
		if x.rxPort >= 0 {
			g.rp[x.rxPort] += rx
			g.rb[x.rxPort] += rx * int64(x.frame)
		}
	}
	x.run = nil
}

// advanceAll brings every running stream up to now; a port whose streams
// have all ended goes back to STREAMS, as the server's does when its
// bursts are done.
func (s *TRexServer) advanceAll() {
	now := s.now()
	for id, st := range s.port {
		if st.state != "TX" {
			continue
		}
		active := false
		for _, x := range st.streams {
			if x.run == nil {
				continue
			}
			s.advance(x, now)
			active = active || x.run.running
		}
		if !active {
			s.stopPort(id)
		}
	}
}

// advance sends the frames a stream's run has had time for, drawing each
// block's losses from the fibre when the block begins.
func (s *TRexServer) advance(x *trexStream, now time.Time) {
	r := x.run
	if !r.running {
		return
	}
	sim := now.Sub(r.realAt).Seconds() * s.scale
	target := int64(math.Floor(sim * r.fps))
	if r.packets > 0 && target >= r.packets {
		target = r.packets
	}
	for r.drawn < target {
		n := trexBlock(r.blocks)
		if r.packets > 0 {
			n = min(n, r.packets-r.drawn)
		}
		var lost int64
		if x.fibre != nil {
			lost = x.fibre.Transmit(n, x.frame)
		} else {
			lost = n // a port cabled to nothing sends into the void
		}
		r.lostPrev += r.cur.lost
		r.cur.start, r.cur.size, r.cur.lost = r.drawn, n, lost
		r.drawn += n
		r.blocks++
	}
	r.sent = max(r.sent, target)
	if r.packets > 0 && r.sent >= r.packets {
		r.running = false
	}
}

// counters are a run's frames sent and received so far; the block under
// way reveals its losses in proportion.
func (r *trexRun) counters() (tx, rx int64) {
	lost := r.lostPrev
	switch done := r.sent - r.cur.start; {
	case done >= r.cur.size:
		lost += r.cur.lost
	case done > 0:
		// lost*done/size without overflow: a late block holds up to 2^44
		// frames; lost <= size keeps the quotient below done.
		hi, lo := bits.Mul64(uint64(r.cur.lost), uint64(done))
		q, _ := bits.Div64(hi, lo, uint64(r.cur.size))
		lost += int64(q)
	}
	return r.sent, r.sent - lost
}

func (s *TRexServer) portStats(p params) (any, error) {
	id, err := s.portID(p)
	if err != nil {
		return nil, err
	}
	st := s.port[id]
	opk, obytes, ipk, ibytes := st.opk, st.obytes, st.ipk, st.ibytes
	var txPPS, txBps, rxPPS, rxBps float64
	for j, q := range s.port {
		for _, x := range q.streams {
			if x.run == nil {
				continue
			}
			tx, rx := x.run.counters()
			running := x.run.running
			if j == id {
				opk += tx
				obytes += tx * int64(x.frame)
				if running {
					txPPS += x.run.fps
					txBps += x.run.fps * float64(x.frame) * 8
				}
			}
			if x.rxPort == id {
				ipk += rx
				ibytes += rx * int64(x.frame)
				if running && tx > 0 {
					f := x.run.fps * float64(rx) / float64(tx)
					rxPPS += f
					rxBps += f * float64(x.frame) * 8
				}
			}
		}
	}
	return map[string]any{"opackets": opk, "ipackets": ipk, "obytes": obytes, "ibytes": ibytes, "oerrors": 0, "ierrors": 0,
		"m_total_tx_pps": txPPS, "m_total_tx_bps": txBps, "m_total_rx_pps": rxPPS, "m_total_rx_bps": rxBps, "m_cpu_util": 0.0}, nil
}

func (s *TRexServer) pgidStats(p params) (any, error) {
	v, err := p.get("pgids")
	if err != nil {
		return nil, err
	}
	list, ok := v.([]any)
	if !ok {
		return nil, parseErr("field 'pgids' is '%v', expecting 'array'", v)
	}
	fs, ver := map[string]any{}, map[string]any{}
	for _, e := range list {
		f, ok := e.(float64)
		if !ok || f < 0 || f != math.Trunc(f) {
			return nil, parseErr("pgids: '%v' is not a packet group id", e)
		}
		pg := uint32(f)
		g := s.pg[pg]
		if g == nil {
			continue // never used: the server leaves it out
		}
		tp, rp, tb, rb := copyMap(g.tp), copyMap(g.rp), copyMap(g.tb), copyMap(g.rb)
		tps, rps, tbs, rbs := map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}
		for j, q := range s.port {
			for _, x := range q.streams {
				if !x.hasPG || x.pg != pg || x.run == nil {
					continue
				}
				tx, rx := x.run.counters()
				tp[j] += tx
				tb[j] += tx * int64(x.frame)
				if x.rxPort >= 0 {
					rp[x.rxPort] += rx
					rb[x.rxPort] += rx * int64(x.frame)
				}
				if x.run.running {
					tps[strconv.Itoa(j)] += x.run.fps
					tbs[strconv.Itoa(j)] += x.run.fps * float64(x.frame) * 8
					if x.rxPort >= 0 && tx > 0 {
						f := x.run.fps * float64(rx) / float64(tx)
						rps[strconv.Itoa(x.rxPort)] += f
						rbs[strconv.Itoa(x.rxPort)] += f * float64(x.frame) * 8
					}
				}
			}
		}
		// Every port appears under every counter, as the server lists them.
		out := map[string]any{}
		for name, m := range map[string]map[int]int64{"tp": tp, "rp": rp, "tb": tb, "rb": rb} {
			byPort := map[string]int64{}
			for j := range s.port {
				byPort[strconv.Itoa(j)] = m[j]
			}
			out[name] = byPort
		}
		for name, m := range map[string]map[string]float64{"tps": tps, "rps": rps, "tbs": tbs, "rbs": rbs} {
			byPort := map[string]float64{}
			for j := range s.port {
				byPort[strconv.Itoa(j)] = m[strconv.Itoa(j)]
			}
			out[name] = byPort
		}
		key := strconv.FormatUint(uint64(pg), 10)
		fs[key] = out
		ver[key] = g.ver
	}
	return map[string]any{"flow_stats": fs, "latency": map[string]any{}, "ver_id": ver}, nil
}

func copyMap(m map[int]int64) map[int]int64 {
	out := make(map[int]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (s *TRexServer) activePGIDs(params) (any, error) {
	ids := []uint32{}
	for pg := range s.pg {
		if s.pgInUse(pg) {
			ids = append(ids, pg)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return map[string]any{"ids": map[string]any{"flow_stats": ids, "latency": []uint32{}}}, nil
}

func (s *TRexServer) globalStats(params) (any, error) {
	var opk, ipk, obytes, ibytes int64
	var txPPS, rxPPS, txBps, rxBps float64
	for i := range s.port {
		v, _ := s.portStats(params{"port_id": float64(i)})
		m := v.(map[string]any)
		opk += m["opackets"].(int64)
		ipk += m["ipackets"].(int64)
		obytes += m["obytes"].(int64)
		ibytes += m["ibytes"].(int64)
		txPPS += m["m_total_tx_pps"].(float64)
		rxPPS += m["m_total_rx_pps"].(float64)
		txBps += m["m_total_tx_bps"].(float64)
		rxBps += m["m_total_rx_bps"].(float64)
	}
	return map[string]any{"m_total_tx_pkts": opk, "m_total_rx_pkts": ipk, "m_total_tx_bytes": obytes, "m_total_rx_bytes": ibytes,
		"m_tx_pps": txPPS, "m_rx_pps": rxPPS, "m_tx_bps": txBps, "m_rx_bps": rxBps, "m_cpu_util": 0.0, "m_active_flows": 0}, nil
}
