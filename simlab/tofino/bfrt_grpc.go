package tofino

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"testbed/internal/bfrtinfo"
	"testbed/internal/bfrtpb"
)

// The simulated switch's BF Runtime gRPC service: what bf_switchd serves
// on port 50052 (bfruntime.proto), on the simulated switch's loopback,
// over the SAME state the SSH agent path reads and writes. Every request
// is turned into the agent operations of dut/tofino/agent/PROTOCOL.md and
// handled by handle(), so a table entry written over gRPC is read back
// over SSH and the reverse.
//
// Behaviour follows the SDE's server (open-p4studio, pkgsrc/bf-drivers/
// src/bf_rt/proto/bf_rt_server_impl.cpp and bf_rt_server_mgr.cpp):
//   - a client is known once its StreamChannel has subscribed; two
//     streams with one client_id are refused ("Can't have two clients
//     with the same client id");
//   - BIND (SetForwardingPipelineConfig) needs a subscribed client and
//     exactly one config naming the program the device runs, and one
//     client owns a program: a second BIND of it is ALREADY_EXISTS;
//   - Write and Read use the client's bound program, or the request's
//     p4_name (an independent client); neither is "Bound config not
//     found";
//   - VERIFY_AND_WARM_INIT_BEGIN_AND_END loads a program from the config's
//     bfruntime_info and profile (context.json, tofino.bin), which takes
//     pipelineLoadTime, answers WARM_INIT_FINISHED on the client's stream,
//     and drops the clients bound to the program it replaced (their
//     streams end CANCELLED and the server forgets them: refresh);
//   - a load, once verified, runs to its end whether or not its client
//     waits for it: the SDE's handler ignores its ServerContext
//     (bf_rt_server_impl.cpp:3855-3858, "ServerContext * /*context*/")
//     and runs warm init begin (the new program added to the device) and
//     end in one call (bf_rt_server_mgr.cpp:1119-1157, warmInitBegin
//     551-597, warmInitEnd 610-621); a client that gave up finds the new
//     program running, not the old one. While it runs, the load holds the
//     set_fwd lock to write (impl.cpp:3877-3879) and every Read, Write,
//     GetForwardingPipelineConfig and BIND, which only try the lock to
//     read (impl.cpp:3820, 3865, 3932, 4215; pthread_rwlock_tryrdlock in
//     bf_rt_server_impl.hpp:482-497), is refused UNAVAILABLE ("Failed to
//     acquire read lock for client N In use"; BF_IN_USE to UNAVAILABLE,
//     impl.hpp:104-108); another load waits;
//   - VERIFY_AND_WARM_INIT_BEGIN and WARM_INIT_END are the same warm init
//     in two calls, each client with its own state (INITIAL, STARTED,
//     FINISHED; warmInitBegin and warmInitEnd say what each refuses);
//     between them the clients work on the new program, and each call
//     tells every subscribed client WARM_INIT_STARTED or _FINISHED (a
//     BEGIN_AND_END tells them both);
//   - a batch's failures are an UNKNOWN status whose details hold one
//     bfrt_proto.Error per update (canonical_code OK for those that
//     worked), as BfRtServerErrorReporter sends them.
// Table by table, what each write and read does is in bfrtUpdate and
// bfrtRead.

// sharedProgram is the name under which the SDE's server offers the
// device's fixed tables alone ("$SHARED", bf_rt_server_mgr.cpp).
const sharedProgram = "$SHARED"

// BFRuntimePort is bf_switchd's BF Runtime gRPC port.
const BFRuntimePort = 50052

type bfrtService struct {
	bfrtpb.UnimplementedBfRuntimeServer
	t *Tofino

	nonP4 []byte
	fixed *bfrtinfo.Info

	// setFwd is the SDE server's set_fwd rwlock (bf_rt_server_impl.hpp,
	// SetFwdConfigLockGuard): a load holds it to write, and waits for it;
	// Read, Write, GetForwardingPipelineConfig and BIND try it to read
	// and, while a load holds it, answer UNAVAILABLE (readLock).
	setFwd sync.RWMutex

	mu      sync.Mutex
	streams map[uint32]chan *bfrtpb.StreamMessageResponse
	bound   map[uint32]string
	// warm is each subscribed client's warm init state, its
	// ConfigManager's fwd_config_state_ (absent: INITIAL).
	warm map[uint32]warmState
	// kick ends a client's stream: closed when a load drops the program
	// it is bound to (refresh).
	kick  map[uint32]chan struct{}
	infos map[string]*progInfo
	// The packet generator's tables as written (a generator application
	// starts when app_cfg enables it): the buffer by offset, the ports
	// with pktgen_enable, each application's configuration.
	pktBuf   map[int][]byte
	pktPorts map[int]bool
	apps     map[int]*bfrtApp
}

type progInfo struct {
	json []byte
	info *bfrtinfo.Info // the program's tables and the device's
}

type bfrtApp struct {
	action string
	fields map[string]uint64
	on     bool
}

// ServeBFRuntime starts the switch's BF Runtime gRPC service on listen
// (a loopback host:port; port 0 picks one) and returns its address.
func (t *Tofino) ServeBFRuntime(listen string) (string, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("%s: BF Runtime listen address %q: %w", t.name, listen, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", fmt.Errorf("%s: BF Runtime listen address %q: only loopback is allowed", t.name, listen)
	}
	np, err := nonP4Info()
	if err != nil {
		return "", err
	}
	fixed, err := bfrtinfo.Parse("the SDE's fixed tables", np)
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return "", fmt.Errorf("%s: BF Runtime: %w", t.name, err)
	}
	s := &bfrtService{t: t, nonP4: np, fixed: fixed, streams: map[uint32]chan *bfrtpb.StreamMessageResponse{},
		bound: map[uint32]string{}, warm: map[uint32]warmState{}, kick: map[uint32]chan struct{}{}, infos: map[string]*progInfo{}, pktBuf: map[int][]byte{}, pktPorts: map[int]bool{}, apps: map[int]*bfrtApp{}}
	srv := grpc.NewServer()
	bfrtpb.RegisterBfRuntimeServer(srv, s)
	go srv.Serve(ln)
	t.mu.Lock()
	t.bfrtStops = append(t.bfrtStops, srv.Stop)
	t.mu.Unlock()
	return ln.Addr().String(), nil
}

// A failure of one operation, with the bf_status_t the SDE would give.
type bfStatus struct {
	code codes.Code
	msg  string
}

func (e *bfStatus) Error() string { return e.msg }

func bfErr(c codes.Code, f string, a ...any) error { return &bfStatus{c, fmt.Sprintf(f, a...)} }

// grpcCode is the canonical code of an operation's error: the agent
// protocol's kinds map as the SDE's to_grpc_status maps bf_status_t
// (BF_OBJECT_NOT_FOUND NOT_FOUND, BF_INVALID_ARG INVALID_ARGUMENT,
// BF_ALREADY_EXISTS ALREADY_EXISTS).
func grpcCode(err error) codes.Code {
	var bs *bfStatus
	var ae *agentErr
	switch {
	case errors.As(err, &bs):
		return bs.code
	case errors.As(err, &ae) && ae.kind == "not_found":
		return codes.NotFound
	case errors.As(err, &ae) && ae.kind == "bad_request":
		return codes.InvalidArgument
	case strings.Contains(err.Error(), "BF_ALREADY_EXISTS"):
		return codes.AlreadyExists
	}
	return codes.Unknown
}

// op runs one agent operation on the switch's state and decodes its
// result into out (may be nil).
func (s *bfrtService) op(name string, args map[string]any, out any) error {
	raw := map[string]json.RawMessage{}
	for k, v := range args {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		raw[k] = b
	}
	res, err := s.t.handle(agentReq{Op: name, Args: raw})
	if err != nil {
		return err
	}
	if out == nil || res == nil {
		return nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func (s *bfrtService) programInfo(program string) (*progInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pi, ok := s.infos[program]; ok {
		return pi, nil
	}
	b, err := programInfo(program)
	if err != nil {
		return nil, err
	}
	in, err := bfrtinfo.Parse(program+"/bf-rt.json", b)
	if err != nil {
		return nil, err
	}
	pi := &progInfo{json: b, info: bfrtinfo.Merge(in, s.fixed)}
	s.infos[program] = pi
	return pi, nil
}

func (s *bfrtService) GetForwardingPipelineConfig(ctx context.Context, req *bfrtpb.GetForwardingPipelineConfigRequest) (*bfrtpb.GetForwardingPipelineConfigResponse, error) {
	if err := s.fault(); err != nil {
		return nil, err
	}
	unlock, err := s.readLock(req.ClientId)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if req.DeviceId != 0 {
		return nil, status.Errorf(codes.NotFound, "device %d: the switch has device 0 only", req.DeviceId)
	}
	resp := &bfrtpb.GetForwardingPipelineConfigResponse{NonP4Config: &bfrtpb.NonP4Config{BfruntimeInfo: s.nonP4}}
	if p := s.t.programName(); p != "" {
		pi, err := s.programInfo(p)
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		resp.Config = append(resp.Config, &bfrtpb.ForwardingPipelineConfig{P4Name: p, BfruntimeInfo: pi.json,
			Profiles: []*bfrtpb.ForwardingPipelineConfig_Profile{{ProfileName: "pipe", PipeScope: []uint32{0, 1, 2, 3}}}})
	}
	return resp, nil
}

func (s *bfrtService) SetForwardingPipelineConfig(ctx context.Context, req *bfrtpb.SetForwardingPipelineConfigRequest) (*bfrtpb.SetForwardingPipelineConfigResponse, error) {
	if err := s.fault(); err != nil {
		return nil, err
	}
	switch req.Action {
	case bfrtpb.SetForwardingPipelineConfigRequest_BIND:
		unlock, err := s.readLock(req.ClientId)
		if err != nil {
			return nil, err
		}
		defer unlock()
		if len(req.Config) != 1 {
			return nil, status.Error(codes.InvalidArgument, "Exactly one config message required.")
		}
		p4 := req.Config[0].P4Name
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.streams[req.ClientId]; !ok {
			return nil, status.Errorf(codes.Unavailable, "Unknown client. Client_id:%d", req.ClientId)
		}
		for c, p := range s.bound {
			if p == p4 && c != req.ClientId {
				return nil, status.Errorf(codes.AlreadyExists, "Client ID %d trying to bind but Client ID %d already owns this P4", req.ClientId, c)
			}
		}
		if p4 == "" || p4 != s.t.programName() {
			return nil, status.Errorf(codes.NotFound, "Failed to find BfRtInfo for program %s", p4)
		}
		s.bound[req.ClientId] = p4
		return &bfrtpb.SetForwardingPipelineConfigResponse{}, nil
	case bfrtpb.SetForwardingPipelineConfigRequest_VERIFY, bfrtpb.SetForwardingPipelineConfigRequest_VERIFY_AND_WARM_INIT_BEGIN_AND_END:
		c, err := verifyConfig(req)
		if err != nil {
			return nil, err
		}
		if req.Action == bfrtpb.SetForwardingPipelineConfigRequest_VERIFY {
			return &bfrtpb.SetForwardingPipelineConfigResponse{}, nil
		}
		return s.load(req.ClientId, c.P4Name)
	case bfrtpb.SetForwardingPipelineConfigRequest_VERIFY_AND_WARM_INIT_BEGIN:
		return s.warmInitBegin(req)
	case bfrtpb.SetForwardingPipelineConfigRequest_WARM_INIT_END:
		return s.warmInitEnd(req)
	}
	return nil, status.Errorf(codes.Unimplemented, "SetForwardingPipelineConfig action %v: the simulated switch serves BIND, VERIFY, VERIFY_AND_WARM_INIT_BEGIN_AND_END, VERIFY_AND_WARM_INIT_BEGIN and WARM_INIT_END", req.Action)
}

// verifyConfig checks a load's one config: its bf-rt.json and a profile
// with context.json and tofino.bin, a build of a program the simulated
// switch runs.
func verifyConfig(req *bfrtpb.SetForwardingPipelineConfigRequest) (*bfrtpb.ForwardingPipelineConfig, error) {
	if len(req.Config) != 1 {
		return nil, status.Error(codes.InvalidArgument, "the simulated switch has one pipeline: expected exactly one config")
	}
	c := req.Config[0]
	var ctxJSON, bin []byte
	for _, p := range c.Profiles {
		if p.ProfileName == "pipe" || len(c.Profiles) == 1 {
			ctxJSON, bin = p.Context, p.Binary
		}
	}
	if len(c.BfruntimeInfo) == 0 || len(ctxJSON) == 0 || len(bin) == 0 {
		return nil, status.Errorf(codes.InvalidArgument, "program %q: a config needs bfruntime_info and a profile with context and binary", c.P4Name)
	}
	if err := checkBuild(c.P4Name, c.BfruntimeInfo, ctxJSON, bin); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return c, nil
}

// readLock tries the set_fwd lock to read, as the SDE's Read, Write,
// GetForwardingPipelineConfig and BIND do: UNAVAILABLE while a load holds
// it. unlock releases it.
func (s *bfrtService) readLock(client uint32) (unlock func(), err error) {
	if !s.setFwd.TryRLock() {
		return nil, status.Errorf(codes.Unavailable, "Failed to acquire read lock for client %d In use", client)
	}
	return s.setFwd.RUnlock, nil
}

// load is a verified warm init with program: under the set_fwd lock, to
// its end whatever its client does meanwhile (the SDE's handler never
// looks at its context), the client's answer sent if it still listens.
// The client's warm init is then finished: a WARM_INIT_END from it is
// refused. Every subscribed client is told WARM_INIT_STARTED, then
// WARM_INIT_FINISHED (it was the loading client alone, told FINISHED).
func (s *bfrtService) load(client uint32, program string) (*bfrtpb.SetForwardingPipelineConfigResponse, error) {
	s.setFwd.Lock()
	defer s.setFwd.Unlock()
	s.install(program)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setWarm(client, warmFinished)
	// Every subscribed client hears the begin and the end, as from
	// sendSetForwardingPipelineConfigResponse (bf_rt_server_mgr.cpp:
	// 1140-1156); the call itself answers nothing (impl.cpp:3855-3858
	// leave the response unset).
	s.broadcast(bfrtpb.SetForwardingPipelineConfigResponseType_WARM_INIT_STARTED)
	s.broadcast(bfrtpb.SetForwardingPipelineConfigResponseType_WARM_INIT_FINISHED)
	s.refresh(program)
	return &bfrtpb.SetForwardingPipelineConfigResponse{}, nil
}

// install adds program to the device as a load does, under the set_fwd
// lock held to write: it takes pipelineLoadTime, and every port,
// counter, table, register and generator is gone (refresh then drops
// the clients bound to another program).
func (s *bfrtService) install(program string) {
	// The pipes take a while to load (as bf_switchd's start over SSH):
	// the answer comes once they have. A time.Sleep and not a select on
	// the request's context: the device does not stop a load whose client
	// has gone.
	time.Sleep(pipelineLoadTime)
	// As bf_switchd restarting with the program (switchd-start over
	// SSH): every port, counter, table, register and generator is gone.
	s.t.dp.stopAll(s.t)
	s.t.mu.Lock()
	s.t.reset(program)
	s.t.installed[program] = true
	s.t.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pktBuf, s.pktPorts, s.apps = map[int][]byte{}, map[int]bool{}, map[int]*bfrtApp{}
}

// refresh drops the clients bound to a program other than the one the
// device now runs, as the SDE's refreshConnections does after a load
// (bf_rt_server_mgr.cpp:904-966): the client's binding is reset and its
// stream cancelled (ConnectionData::cancel, TryCancel; impl.hpp:406), so
// that the server forgets it (cleanupConnection when the stream ends,
// impl.cpp:4414) and the client must subscribe again before it BINDs
// ("Unknown client", mgr.cpp:972-975). Clients bound to the program stay.
// s.mu held.
func (s *bfrtService) refresh(program string) {
	for cl, p := range s.bound {
		if p == program || p == sharedProgram {
			continue
		}
		delete(s.bound, cl)
		if k, ok := s.kick[cl]; ok {
			close(k)
			delete(s.kick, cl)
			delete(s.streams, cl)
			delete(s.warm, cl)
		}
	}
}

// warmState is a client's warm init state (the SDE's
// ForwardingConfigState: INITIAL, WARM_INIT_STARTED, WARM_INIT_FINISHED;
// bf_rt_server_impl.hpp:93-97).
type warmState int

const (
	warmInitial warmState = iota
	warmStarted
	warmFinished
)

// setWarm keeps a subscribed client's warm init state; s.mu held. An
// independent client (no stream) keeps none: the SDE drops its
// connection data after each SetForwardingPipelineConfig
// (bf_rt_server_impl.cpp:3887, 3896-3905), so each of its calls starts
// INITIAL.
func (s *bfrtService) setWarm(client uint32, st warmState) {
	if _, ok := s.streams[client]; ok {
		s.warm[client] = st
	}
}

// broadcast sends a SetForwardingPipelineConfigResponse of type t on
// every subscribed client's stream, as the SDE's
// sendSetForwardingPipelineConfigResponse does (bf_rt_server_mgr.cpp:
// 1195-1207); s.mu held.
func (s *bfrtService) broadcast(t bfrtpb.SetForwardingPipelineConfigResponseType) {
	m := &bfrtpb.StreamMessageResponse{Update: &bfrtpb.StreamMessageResponse_SetForwardingPipelineConfigResponse{
		SetForwardingPipelineConfigResponse: &bfrtpb.SetForwardingPipelineConfigResponse{SetForwardingPipelineConfigResponseType: t}}}
	for _, ch := range s.streams {
		select {
		case ch <- m:
		default:
		}
	}
}

// warmInitBegin serves VERIFY_AND_WARM_INIT_BEGIN as the SDE does
// (bf_rt_server_mgr.cpp:1092-1118, ConfigManager::warmInitBegin 551-608):
// under the set_fwd lock held to write (impl.cpp:3876-3883), so that
// Read, Write, GetForwardingPipelineConfig and BIND are UNAVAILABLE
// meanwhile; refused UNAVAILABLE to a client whose warm init has begun
// and not ended ("Warm_init in process.", BF_NOT_READY); else the
// program is added to the device, WARM_INIT_STARTED goes to every
// subscribed client, the clients bound to another program are dropped
// (refresh), and the client's warm init has begun. Until a WARM_INIT_END the clients
// work on the new program: GetForwardingPipelineConfig names it (the
// SDE saved it to disk at the begin), a BIND of it and Writes and Reads
// of its tables are served.
func (s *bfrtService) warmInitBegin(req *bfrtpb.SetForwardingPipelineConfigRequest) (*bfrtpb.SetForwardingPipelineConfigResponse, error) {
	s.setFwd.Lock()
	defer s.setFwd.Unlock()
	s.mu.Lock()
	st := s.warm[req.ClientId]
	s.mu.Unlock()
	if st == warmStarted {
		return nil, status.Error(codes.Unavailable, "Warm_init in process. Not ready")
	}
	c, err := verifyConfig(req)
	if err != nil {
		return nil, err
	}
	s.install(c.P4Name)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setWarm(req.ClientId, warmStarted)
	s.broadcast(bfrtpb.SetForwardingPipelineConfigResponseType_WARM_INIT_STARTED)
	s.refresh(c.P4Name)
	return &bfrtpb.SetForwardingPipelineConfigResponse{}, nil
}

// warmInitEnd serves WARM_INIT_END as the SDE does (bf_rt_server_mgr.cpp:
// 1159-1176, ConfigManager::warmInitEnd 610-631): a config in it is
// INVALID_ARGUMENT ("Commit msg cannot contain any config."); a client
// whose warm init has finished (by an END, or a BEGIN_AND_END) is
// refused UNAVAILABLE ("Already warm_init_finished. Cannot perform
// WARM_INIT_END again", BF_NOT_READY); from INITIAL (no BEGIN: the
// device is not locked, so bf_switchd's warm_init_end does nothing,
// bf_switchd.c:3908-3953) or a begun warm init it succeeds, sends
// WARM_INIT_FINISHED to every subscribed client and finishes the
// client's warm init.
func (s *bfrtService) warmInitEnd(req *bfrtpb.SetForwardingPipelineConfigRequest) (*bfrtpb.SetForwardingPipelineConfigResponse, error) {
	if len(req.Config) > 0 {
		return nil, status.Error(codes.InvalidArgument, "Commit msg cannot contain any config. Invalid arguments")
	}
	s.setFwd.Lock()
	defer s.setFwd.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.warm[req.ClientId] == warmFinished {
		return nil, status.Error(codes.Unavailable, "Already warm_init_finished. Cannot perform WARM_INIT_END again Not ready")
	}
	s.setWarm(req.ClientId, warmFinished)
	s.broadcast(bfrtpb.SetForwardingPipelineConfigResponseType_WARM_INIT_FINISHED)
	return &bfrtpb.SetForwardingPipelineConfigResponse{}, nil
}

func (s *bfrtService) StreamChannel(st bfrtpb.BfRuntime_StreamChannelServer) error {
	in := make(chan *bfrtpb.StreamMessageRequest)
	errc := make(chan error, 1)
	go func() {
		for {
			m, err := st.Recv()
			if err != nil {
				errc <- err
				return
			}
			select {
			case in <- m:
			case <-st.Context().Done():
				return
			}
		}
	}()
	out := make(chan *bfrtpb.StreamMessageResponse, 8)
	kick := make(chan struct{})
	var id uint32
	registered := false
	defer func() {
		if registered {
			s.mu.Lock()
			if s.streams[id] == out { // not a kicked client's successor
				delete(s.streams, id)
				delete(s.bound, id)
				delete(s.warm, id)
				delete(s.kick, id)
			}
			s.mu.Unlock()
		}
	}()
	for {
		select {
		case <-st.Context().Done():
			return nil
		case <-errc:
			return nil
		case <-kick:
			// What was sent before the cancel (the load's FINISHED)
			// goes out first.
			for len(out) > 0 {
				if err := st.Send(<-out); err != nil {
					return nil
				}
			}
			return status.Errorf(codes.Canceled, "client %d: its program is no longer on the device: subscribe again", id)
		case m := <-out:
			if err := st.Send(m); err != nil {
				return nil
			}
		case m := <-in:
			sub := m.GetSubscribe()
			if sub == nil {
				continue // a digest ack: the simulated programs learn nothing
			}
			if registered && m.ClientId != id {
				return status.Errorf(codes.InvalidArgument, "stream of client %d: a subscribe for client %d", id, m.ClientId)
			}
			if !registered {
				s.mu.Lock()
				_, taken := s.streams[m.ClientId]
				if !taken {
					s.streams[m.ClientId] = out
					s.kick[m.ClientId] = kick
				}
				s.mu.Unlock()
				if taken {
					return status.Errorf(codes.AlreadyExists, "Can't have two clients with the same client id (%d)", m.ClientId)
				}
				id, registered = m.ClientId, true
			}
			if sub.DeviceId != 0 {
				return status.Errorf(codes.NotFound, "device %d: the switch has device 0 only", sub.DeviceId)
			}
			resp := &bfrtpb.StreamMessageResponse{Update: &bfrtpb.StreamMessageResponse_Subscribe{Subscribe: &bfrtpb.Subscribe{DeviceId: sub.DeviceId, Notifications: sub.Notifications, Status: &rpcstatus.Status{}}}}
			if err := st.Send(resp); err != nil {
				return nil
			}
		}
	}
}

// clientInfo is the tables a request works on: its p4_name's, else the
// program its client bound.
func (s *bfrtService) clientInfo(client uint32, p4 string) (*bfrtinfo.Info, error) {
	if p4 == sharedProgram {
		return s.fixed, nil
	}
	if p4 == "" {
		s.mu.Lock()
		p, ok := s.bound[client]
		s.mu.Unlock()
		if !ok {
			return nil, status.Errorf(codes.NotFound, "client %d: Bound config not found (BIND a program or name one in p4_name)", client)
		}
		p4 = p
	}
	if p4 != s.t.programName() {
		return nil, status.Errorf(codes.NotFound, "no program %q on the device (it runs %q)", p4, s.t.programName())
	}
	pi, err := s.programInfo(p4)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return pi.info, nil
}

// fault applies the switch's injected faults to a request: a delay, a
// dropped connection (the service is unavailable), a device error.
func (s *bfrtService) fault() error {
	f := s.t.faults
	if d := f.Delay(); d > 0 {
		time.Sleep(d)
	}
	if f.TakeDrop() {
		return status.Error(codes.Unavailable, "connection dropped")
	}
	if e, ok := f.TakeFailure(); ok {
		return status.Error(codes.Internal, e.Message)
	}
	return nil
}

func (s *bfrtService) Write(ctx context.Context, req *bfrtpb.WriteRequest) (*bfrtpb.WriteResponse, error) {
	if err := s.fault(); err != nil {
		return nil, err
	}
	unlock, err := s.readLock(req.ClientId)
	if err != nil {
		return nil, err
	}
	defer unlock()
	info, err := s.clientInfo(req.ClientId, req.P4Name)
	if err != nil {
		return nil, err
	}
	var errs []*bfrtpb.Error
	failed := false
	for i, u := range req.Updates {
		e := &bfrtpb.Error{}
		if err := s.update(info, req.Target, u); err != nil {
			failed = true
			e.CanonicalCode, e.Message = int32(grpcCode(err)), fmt.Sprintf("update %d: %v", i, err)
		}
		errs = append(errs, e)
	}
	if failed {
		return nil, batchError("Write Error Status", errs)
	}
	return &bfrtpb.WriteResponse{}, nil
}

// batchError is the SDE's error status of a batch: UNKNOWN, one
// bfrt_proto.Error per update in its details.
func batchError(msg string, errs []*bfrtpb.Error) error {
	var first string
	for _, e := range errs {
		if e.CanonicalCode != 0 && first == "" {
			first = e.Message
		}
	}
	st := status.New(codes.Unknown, msg+": "+first)
	for _, e := range errs {
		if d, err := st.WithDetails(e); err == nil {
			st = d
		}
	}
	return st.Err()
}

func (s *bfrtService) Read(req *bfrtpb.ReadRequest, st bfrtpb.BfRuntime_ReadServer) error {
	if err := s.fault(); err != nil {
		return err
	}
	unlock, err := s.readLock(req.ClientId)
	if err != nil {
		return err
	}
	defer unlock()
	info, err := s.clientInfo(req.ClientId, req.P4Name)
	if err != nil {
		return err
	}
	resp := &bfrtpb.ReadResponse{}
	var errs []*bfrtpb.Error
	failed := false
	for i, ent := range req.Entities {
		e := &bfrtpb.Error{}
		entries, err := s.read(info, req.Target, ent)
		if err != nil {
			failed = true
			e.CanonicalCode, e.Message = int32(grpcCode(err)), fmt.Sprintf("entity %d: %v", i, err)
		}
		errs = append(errs, e)
		for _, te := range entries {
			resp.Entities = append(resp.Entities, &bfrtpb.Entity{Entity: &bfrtpb.Entity_TableEntry{TableEntry: te}})
		}
	}
	if failed {
		return batchError("Read Error Status", errs)
	}
	return st.Send(resp)
}

// ---- decoding and encoding entries ----

// entryKey is a table entry's key fields by name, exact values only.
func entryKey(t *bfrtinfo.Table, te *bfrtpb.TableEntry) (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, kf := range te.GetKey().GetFields() {
		f, ok := t.KeyByID(kf.FieldId)
		if !ok {
			return nil, bfErr(codes.InvalidArgument, "table %s has no key field %d", t.Name, kf.FieldId)
		}
		ex := kf.GetExact()
		if ex == nil {
			return nil, bfErr(codes.InvalidArgument, "table %s key %s: the simulated switch's tables match exactly", t.Name, f.Name)
		}
		if n := f.Bytes(); n > 0 && len(ex.Value) != n {
			return nil, bfErr(codes.InvalidArgument, "table %s key %s: %d bytes, expected %d", t.Name, f.Name, len(ex.Value), n)
		}
		v, err := bfrtinfo.Decode(ex.Value)
		if err != nil {
			return nil, bfErr(codes.InvalidArgument, "table %s key %s: %v", t.Name, f.Name, err)
		}
		out[f.Name] = v
	}
	return out, nil
}

// entryData is a table entry's action and data fields by name: integers
// as uint64, bool, string, and byte strings wider than 8 bytes as []byte.
func entryData(t *bfrtinfo.Table, te *bfrtpb.TableEntry) (*bfrtinfo.Action, map[string]any, error) {
	var act *bfrtinfo.Action
	if id := te.GetData().GetActionId(); id != 0 {
		a, ok := t.ActionByID(id)
		if !ok {
			return nil, nil, bfErr(codes.NotFound, "table %s has no action %d", t.Name, id)
		}
		act = a
	}
	out := map[string]any{}
	for _, df := range te.GetData().GetFields() {
		f, ok := t.DataByID(df.FieldId, act)
		if !ok {
			return nil, nil, bfErr(codes.InvalidArgument, "table %s has no data field %d", t.Name, df.FieldId)
		}
		switch v := df.Value.(type) {
		case *bfrtpb.DataField_Stream:
			if f.Type != nil && f.Type.Type == "bytes" && (f.Type.Width > 64 || f.Repeated && !f.IsRegisterData()) {
				out[f.Name] = v.Stream
				continue
			}
			if n := f.Bytes(); n > 0 && len(v.Stream) != n && !f.IsRegisterData() {
				return nil, nil, bfErr(codes.InvalidArgument, "table %s field %s: %d bytes, expected %d", t.Name, f.Name, len(v.Stream), n)
			}
			x, err := bfrtinfo.Decode(v.Stream)
			if err != nil {
				return nil, nil, bfErr(codes.InvalidArgument, "table %s field %s: %v", t.Name, f.Name, err)
			}
			out[f.Name] = x
		case *bfrtpb.DataField_BoolVal:
			out[f.Name] = v.BoolVal
		case *bfrtpb.DataField_IntArrVal:
			out[f.Name] = append([]uint32{}, v.IntArrVal.GetVal()...)
		case *bfrtpb.DataField_BoolArrVal:
			out[f.Name] = append([]bool{}, v.BoolArrVal.GetVal()...)
		case *bfrtpb.DataField_StrVal:
			if f.Type != nil && len(f.Type.Choices) > 0 && !contains(f.Type.Choices, v.StrVal) {
				return nil, nil, bfErr(codes.InvalidArgument, "table %s field %s: %q is not one of %v", t.Name, f.Name, v.StrVal, f.Type.Choices)
			}
			out[f.Name] = v.StrVal
		default:
			return nil, nil, bfErr(codes.InvalidArgument, "table %s field %s: a value of a type the simulated switch does not take", t.Name, f.Name)
		}
	}
	return act, out, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// dataField encodes a value of a data field by its type.
func dataField(f *bfrtinfo.Field, v any) (*bfrtpb.DataField, error) {
	df := &bfrtpb.DataField{FieldId: f.ID}
	switch x := v.(type) {
	case bool:
		df.Value = &bfrtpb.DataField_BoolVal{BoolVal: x}
	case string:
		df.Value = &bfrtpb.DataField_StrVal{StrVal: x}
	case []uint32:
		df.Value = &bfrtpb.DataField_IntArrVal{IntArrVal: &bfrtpb.DataField_IntArray{Val: x}}
	case int64:
		b, err := bfrtinfo.Encode(uint64(x)&widthMask(f), f.Bytes())
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		df.Value = &bfrtpb.DataField_Stream{Stream: b}
	default:
		return nil, fmt.Errorf("field %s: value %v", f.Name, v)
	}
	return df, nil
}

// widthMask keeps the bits a field holds (a register cell of 32 bits
// reads back its low 32 bits, unsigned, as the hardware's does).
func widthMask(f *bfrtinfo.Field) uint64 {
	n := f.Bytes()
	if f.Type != nil && f.Type.Type == "bytes" && f.Type.Width < 64 {
		return 1<<uint(f.Type.Width) - 1
	}
	if n >= 8 {
		return ^uint64(0)
	}
	return 1<<(8*uint(n)) - 1
}

func keyField(f *bfrtinfo.Field, v int64) (*bfrtpb.KeyField, error) {
	b, err := bfrtinfo.Encode(uint64(v), f.Bytes())
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", f.Name, err)
	}
	return &bfrtpb.KeyField{FieldId: f.ID, MatchType: &bfrtpb.KeyField_Exact_{Exact: &bfrtpb.KeyField_Exact{Value: b}}}, nil
}

// requested is the data fields a read names (none: every field).
func requested(t *bfrtinfo.Table, te *bfrtpb.TableEntry) map[string]bool {
	fs := te.GetData().GetFields()
	if len(fs) == 0 {
		return nil
	}
	out := map[string]bool{}
	for _, df := range fs {
		if f, ok := t.DataByID(df.FieldId, nil); ok {
			out[f.Name] = true
		}
	}
	return out
}

// entry builds a read's answer: key values and data fields by name.
func entry(t *bfrtinfo.Table, key map[string]int64, act *bfrtinfo.Action, data map[string]any) (*bfrtpb.TableEntry, error) {
	te := &bfrtpb.TableEntry{TableId: t.ID, Data: &bfrtpb.TableData{}}
	if len(t.Key) > 0 {
		te.Value = &bfrtpb.TableEntry_Key{Key: &bfrtpb.TableKey{}}
		for _, f := range t.Key {
			v, ok := key[f.Name]
			if !ok {
				v, ok = key[bfrtinfo.Keyword(f.Name)]
			}
			if !ok {
				return nil, fmt.Errorf("table %s: entry without key field %s", t.Name, f.Name)
			}
			kf, err := keyField(f, v)
			if err != nil {
				return nil, err
			}
			te.GetKey().Fields = append(te.GetKey().Fields, kf)
		}
	}
	if act != nil {
		te.Data.ActionId = act.ID
	}
	fields := t.Data
	if act != nil {
		fields = append(append([]*bfrtinfo.Field{}, act.Data...), t.Data...)
	}
	for _, f := range fields {
		v, ok := data[f.Name]
		if !ok {
			continue
		}
		df, err := dataField(f, v)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", t.Name, err)
		}
		te.Data.Fields = append(te.Data.Fields, df)
	}
	return te, nil
}

// ---- writes ----

func (s *bfrtService) update(info *bfrtinfo.Info, tgt *bfrtpb.TargetDevice, u *bfrtpb.Update) error {
	te := u.GetEntity().GetTableEntry()
	if te == nil {
		return bfErr(codes.Unimplemented, "the simulated switch writes table entries only")
	}
	t, ok := info.TableByID(te.TableId)
	if !ok {
		return bfErr(codes.NotFound, "no table %d", te.TableId)
	}
	key, err := entryKey(t, te)
	if err != nil {
		return err
	}
	act, data, err := entryData(t, te)
	if err != nil {
		return err
	}
	for name := range data {
		if f, _ := t.DataField(name, act); f != nil && f.ReadOnly && t.TableType != "PortConfigure" {
			return bfErr(codes.InvalidArgument, "table %s field %s is read-only", t.Name, name)
		}
	}
	typ := u.Type
	if typ == bfrtpb.Update_INSERT_OR_MODIFY {
		typ = bfrtpb.Update_MODIFY
		if t.TableType == "MatchAction_Direct" && !s.p4Exists(t, key) {
			typ = bfrtpb.Update_INSERT
		}
	}
	w, ok := writers[t.TableType]
	if !ok {
		return bfErr(codes.Unimplemented, "table %s (%s): the simulated switch does not model it", t.Name, t.TableType)
	}
	return w(s, write{t: t, typ: typ, key: key, act: act, data: data, pipe: pipeOf(tgt, te), name: strings.TrimPrefix(t.Name, "pipe.")})
}

// write is one update of a table entry, decoded.
type write struct {
	t    *bfrtinfo.Table
	typ  bfrtpb.Update_Type // INSERT_OR_MODIFY resolved
	key  map[string]uint64
	act  *bfrtinfo.Action
	data map[string]any
	pipe int64
	name string // the table's name without "pipe."
}

// writers serve the updates of each table type the simulated switch
// models, through the agent's operations.
var writers = map[string]func(s *bfrtService, w write) error{
	"MatchAction_Direct": (*bfrtService).writeP4Table,
	"Register":           (*bfrtService).writeRegister,
	"PortConfigure": func(s *bfrtService, w write) error {
		return s.writePort(w.t, w.typ, w.key, w.data)
	},
	"PortStat":           (*bfrtService).writePortStat,
	"TmCounterQueue":     (*bfrtService).writeQueueCounter,
	"TmQueueSchedCfg":    (*bfrtService).writeQueueSched,
	"PktgenPortCfg":      (*bfrtService).writePktgenPort,
	"PktgenPktBufferCfg": (*bfrtService).writePktgenBuffer,
	"PktgenAppCfg": func(s *bfrtService, w write) error {
		return s.writeApp(w.t, w.key, w.act, w.data)
	},
	"MirrorCfg":  (*bfrtService).writeSetupTable,
	"PreNode":    (*bfrtService).writeSetupTable,
	"PreMgid":    (*bfrtService).writeSetupTable,
	"TmQueueCfg": (*bfrtService).writeSetupTable,
	"SimClock":   (*bfrtService).writeClock,
}

// writeP4Table is an entry of a program's match-action table: add,
// modify, delete, or with no key clear the table.
func (s *bfrtService) writeP4Table(w write) error {
	args := map[string]any{"name": w.name, "key": intMap(w.key)}
	switch w.typ {
	case bfrtpb.Update_INSERT, bfrtpb.Update_MODIFY:
		if w.act == nil {
			return bfErr(codes.InvalidArgument, "table %s: an entry needs an action", w.t.Name)
		}
		d := map[string]int64{}
		for k, v := range w.data {
			x, ok := v.(uint64)
			if !ok {
				return bfErr(codes.InvalidArgument, "table %s action %s: parameter %s is not an integer", w.t.Name, w.act.Name, k)
			}
			d[k] = int64(x)
		}
		args["action"], args["data"] = lastName(w.act.Name), d
		op := "table.add"
		if w.typ == bfrtpb.Update_MODIFY {
			op = "table.mod"
		}
		return s.op(op, args, nil)
	case bfrtpb.Update_DELETE:
		if len(w.key) == 0 {
			return s.op("table.clear", map[string]any{"name": w.name}, nil)
		}
		return s.op("table.del", args, nil)
	}
	return bfErr(codes.Unimplemented, "table %s (%s): the simulated switch does not model it", w.t.Name, w.t.TableType)
}

func (s *bfrtService) writeRegister(w write) error {
	idx, ok := w.key["$REGISTER_INDEX"]
	if !ok || (w.typ != bfrtpb.Update_INSERT && w.typ != bfrtpb.Update_MODIFY) {
		return bfErr(codes.InvalidArgument, "register %s: write an entry of a $REGISTER_INDEX (MODIFY)", w.name)
	}
	v, ok := w.data[w.name+".f1"].(uint64)
	if !ok {
		return bfErr(codes.InvalidArgument, "register %s: no value for %s.f1", w.name, w.name)
	}
	return s.op("reg.set", map[string]any{"name": w.name, "index": idx, "value": int64(v)}, nil)
}

func (s *bfrtService) writePortStat(w write) error {
	dev, ok := w.key["$DEV_PORT"]
	if w.typ != bfrtpb.Update_MODIFY || !ok || len(w.data) != 0 {
		return bfErr(codes.InvalidArgument, "$PORT_STAT: only a MODIFY of a $DEV_PORT with no data (which clears its counters) is served")
	}
	return s.op("port.stat_clear", map[string]any{"dev_port": dev}, nil)
}

func (s *bfrtService) writeQueueCounter(w write) error {
	v, ok := w.data["watermark_cells"]
	if w.typ != bfrtpb.Update_MODIFY || !ok || v != uint64(0) || len(w.data) != 1 {
		return bfErr(codes.InvalidArgument, "%s: only watermark_cells=0 is written (clearing the watermark)", w.t.Name)
	}
	return s.op("tm.queue", map[string]any{"pipe": w.pipe, "pg_id": w.key["pg_id"], "pg_queue": w.key["pg_queue"], "clear_watermark": true}, nil)
}

func (s *bfrtService) writeQueueSched(w write) error {
	p, ok := w.data["max_priority"].(string)
	if w.typ != bfrtpb.Update_MODIFY || !ok || len(w.data) != 1 {
		return bfErr(codes.InvalidArgument, "%s: only max_priority is written by the simulated switch", w.t.Name)
	}
	prio, err := priorityOf(p)
	if err != nil {
		return err
	}
	dev, qid := tmQueuePort(w.pipe, w.key["pg_id"], w.key["pg_queue"])
	return s.op("tm.queue.sched", map[string]any{"dev_port": dev, "qid": qid, "priority": prio}, nil)
}

func (s *bfrtService) writePktgenPort(w write) error {
	on, ok := w.data["pktgen_enable"].(bool)
	if !ok {
		return bfErr(codes.InvalidArgument, "%s: expected pktgen_enable", w.t.Name)
	}
	s.mu.Lock()
	s.pktPorts[int(w.key["dev_port"])] = on
	s.mu.Unlock()
	return nil
}

func (s *bfrtService) writePktgenBuffer(w write) error {
	b, ok := w.data["buffer"].([]byte)
	if !ok {
		if x, isInt := w.data["buffer"].(uint64); isInt {
			b, _ = bfrtinfo.Encode(x, int(w.key["pkt_buffer_size"]))
		}
	}
	if int(w.key["pkt_buffer_size"]) != len(b) || w.key["pkt_buffer_offset"]+w.key["pkt_buffer_size"] > 16<<10 {
		return bfErr(codes.InvalidArgument, "%s: buffer of %d bytes at %d, size %d (16 KiB per pipe)", w.t.Name, len(b), w.key["pkt_buffer_offset"], w.key["pkt_buffer_size"])
	}
	s.mu.Lock()
	s.pktBuf[int(w.key["pkt_buffer_offset"])] = append([]byte(nil), b...)
	s.mu.Unlock()
	return nil
}

func (s *bfrtService) writeSetupTable(w write) error {
	return s.writeSetup(w.t, w.typ, w.key, w.act, w.data, w.pipe) // bfrt_grpc_setup.go
}

func (s *bfrtService) writeClock(w write) error {
	until, ok := w.data["until_ns"].(uint64)
	if !ok {
		return bfErr(codes.InvalidArgument, "%s: expected until_ns", w.t.Name)
	}
	return s.op("time.wait", map[string]any{"until_ns": int64(until)}, nil)
}

func (s *bfrtService) p4Exists(t *bfrtinfo.Table, key map[string]uint64) bool {
	var r struct {
		Entries []simEntry `json:"entries"`
	}
	if err := s.op("table.get", map[string]any{"name": strings.TrimPrefix(t.Name, "pipe."), "key": intMap(key)}, &r); err != nil {
		return false
	}
	for _, e := range r.Entries {
		if maps.Equal(e.Key, intMap(key)) {
			return true
		}
	}
	return false
}

func intMap(m map[string]uint64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = int64(v)
	}
	return out
}

func lastName(s string) string {
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func pipeOf(req *bfrtpb.TargetDevice, te *bfrtpb.TableEntry) int64 {
	tgt := req
	if te.EntryTgt != nil {
		tgt = te.EntryTgt
	}
	if tgt == nil || tgt.PipeId == 0xffff {
		return 0
	}
	return int64(tgt.PipeId)
}

// tmQueuePort is the port and queue id of a TM queue key in the default
// carving tf1.tm.port.cfg reads (pg_id = (dev & 0x7f) >> 2, pg_queue =
// (dev & 3) * 8 + qid).
func tmQueuePort(pipe int64, pg, pq uint64) (dev int64, qid int64) {
	return pipe<<7 | int64(pg)<<2 | int64(pq/8), int64(pq % 8)
}

// priorityOf reads a max_priority choice: LOW is 0, HIGH 7.
func priorityOf(p string) (int, error) {
	switch p {
	case "LOW":
		return 0, nil
	case "HIGH":
		return 7, nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 7 {
		return 0, bfErr(codes.InvalidArgument, "max_priority %q: expected LOW, 0..7 or HIGH", p)
	}
	return n, nil
}

// writePort is $PORT: INSERT adds a port ($SPEED, $FEC, $PORT_ENABLE),
// MODIFY changes its speed and FEC or its cut-through, DELETE removes it.
func (s *bfrtService) writePort(t *bfrtinfo.Table, typ bfrtpb.Update_Type, key map[string]uint64, data map[string]any) error {
	dev, ok := key["$DEV_PORT"]
	if !ok {
		return bfErr(codes.InvalidArgument, "$PORT: expected $DEV_PORT")
	}
	for k := range data {
		switch k {
		case "$SPEED", "$FEC", "$PORT_ENABLE", "$AUTO_NEGOTIATION", "$CUT_THROUGH_EN", "$RX_PFC_EN_MAP", "$TX_PFC_EN_MAP":
		default:
			return bfErr(codes.Unimplemented, "$PORT field %s: the simulated switch does not model it", k)
		}
	}
	switch typ {
	case bfrtpb.Update_INSERT:
		sp, _ := data["$SPEED"].(string)
		fec, _ := data["$FEC"].(string)
		if sp == "" || fec == "" {
			return bfErr(codes.InvalidArgument, "$PORT add %d: $SPEED and $FEC are mandatory", dev)
		}
		if err := s.op("port.add", map[string]any{"dev_port": dev, "speed": sp, "fec": fecName(fec), "enable": true}, nil); err != nil {
			return err
		}
		if on, ok := data["$PORT_ENABLE"].(bool); ok && !on {
			s.t.mu.Lock()
			if p := s.t.ports[int(dev)]; p != nil {
				p.enabled = false
			}
			s.t.mu.Unlock()
		}
		return nil
	case bfrtpb.Update_MODIFY:
		sp, hasSp := data["$SPEED"].(string)
		fec, hasFec := data["$FEC"].(string)
		if hasSp != hasFec {
			return bfErr(codes.InvalidArgument, "$PORT modify %d: the simulated switch changes $SPEED and $FEC together", dev)
		}
		if hasSp {
			if err := s.op("port.mode", map[string]any{"dev_port": dev, "speed": sp, "fec": fecName(fec)}, nil); err != nil {
				return err
			}
		}
		rx, hasRx := data["$RX_PFC_EN_MAP"].(uint64)
		tx, hasTx := data["$TX_PFC_EN_MAP"].(uint64)
		if hasRx || hasTx {
			var cur struct {
				Rx int64 `json:"rx_map"`
				Tx int64 `json:"tx_map"`
			}
			if err := s.op("port.pfc", map[string]any{"dev_port": dev}, &cur); err != nil {
				return err
			}
			if hasRx {
				cur.Rx = int64(rx)
			}
			if hasTx {
				cur.Tx = int64(tx)
			}
			if err := s.op("port.pfc", map[string]any{"dev_port": dev, "rx_map": cur.Rx, "tx_map": cur.Tx}, nil); err != nil {
				return err
			}
		}
		if ct, ok := data["$CUT_THROUGH_EN"].(bool); ok {
			return s.op("port.cut_through", map[string]any{"dev_port": dev, "enable": ct}, nil)
		}
		return nil
	case bfrtpb.Update_DELETE:
		return s.op("port.del", map[string]any{"dev_port": dev}, nil)
	}
	return bfErr(codes.InvalidArgument, "$PORT: update %v", typ)
}

// fecName is a $FEC choice as the agent names it (the SDE's choices have
// both spellings).
func fecName(f string) string {
	switch f {
	case "BF_FEC_TYP_FIRECODE":
		return "BF_FEC_TYP_FC"
	case "BF_FEC_TYP_REED_SOLOMON":
		return "BF_FEC_TYP_RS"
	}
	return f
}

// writeApp is tf1.pktgen.app_cfg: the fields are kept; enabling an
// application starts it with its buffer, disabling stops it. The frame
// the generator sends is the buffer's: a buffer that is the agent's own
// frame (source MAC 02:74:62:<app>:<egress port>, EtherType 0x88B5)
// names the port it goes out of, as the agent's pktgen.start does;
// another is a program's cell or header (buffer_hex).
func (s *bfrtService) writeApp(t *bfrtinfo.Table, key map[string]uint64, act *bfrtinfo.Action, data map[string]any) error {
	id := int(key["app_id"])
	s.mu.Lock()
	app := s.apps[id]
	if app == nil {
		app = &bfrtApp{fields: map[string]uint64{}}
		s.apps[id] = app
	}
	if act != nil {
		app.action = lastName(act.Name)
	}
	en, hasEn := data["app_enable"].(bool)
	for k, v := range data {
		if x, ok := v.(uint64); ok {
			app.fields[k] = x
		}
	}
	wasOn := app.on
	if hasEn {
		app.on = en
	}
	f := app.fields
	buf := s.pktBuf[int(f["pkt_buffer_offset"])]
	portOn := false
	for p, on := range s.pktPorts {
		portOn = portOn || on && uint64(p&0x7f) == f["pipe_local_source_port"]
	}
	action := app.action
	s.mu.Unlock()
	switch {
	case !hasEn || en == wasOn:
		return nil
	case !en:
		return s.op("pktgen.stop", map[string]any{"app_id": id}, nil)
	}
	if action != "trigger_timer_one_shot" && action != "trigger_timer_periodic" {
		return bfErr(codes.Unimplemented, "pktgen app %d: the simulated switch runs timer applications only, not %q", id, action)
	}
	if !portOn {
		return bfErr(codes.InvalidArgument, "pktgen app %d: port %d has no pktgen_enable (tf1.pktgen.port_cfg)", id, f["pipe_local_source_port"])
	}
	n := int(f["pkt_len"])
	if len(buf) < n {
		return bfErr(codes.InvalidArgument, "pktgen app %d: pkt_len %d but the buffer at %d holds %d bytes", id, n, f["pkt_buffer_offset"], len(buf))
	}
	args := map[string]any{"app_id": id, "pkt_len": n + pktgenHeader, "timer_ns": f["timer_nanosec"],
		"batches": f["batch_count_cfg"] + 1, "packets_per_batch": f["packets_per_batch_cfg"] + 1}
	if action == "trigger_timer_periodic" {
		args["trigger"] = "timer_periodic"
	}
	if j := f["ibg_jitter"]; j > 0 {
		args["ibg_jitter_ns"] = j
	}
	if f["ipg_jitter"] > 0 {
		return bfErr(codes.Unimplemented, "pktgen app %d: ipg_jitter %d: the simulated switch emits a batch's packets together and models jitter between batches only (ibg_jitter)", id, f["ipg_jitter"])
	}
	frame := buf[:n]
	if len(frame) >= 8 && frame[0] == 0x02 && frame[1] == 0x74 && frame[2] == 0x62 && int(frame[3]) == id&0xff && frame[6] == 0x88 && frame[7] == 0xB5 {
		args["egress_port"] = int(frame[4])<<8 | int(frame[5])
	} else {
		args["egress_port"] = f["pipe_local_source_port"]
		args["buffer_hex"] = hex.EncodeToString(frame)
	}
	if err := s.op("pktgen.start", args, nil); err != nil {
		s.mu.Lock()
		app.on = false
		s.mu.Unlock()
		return err
	}
	return nil
}

// pktgenHeader is the 6 B header Tofino 1's generator writes in place of
// a frame's first bytes (pkt_len counts the buffer after it).
const pktgenHeader = 6

// ---- reads ----

func (s *bfrtService) read(info *bfrtinfo.Info, tgt *bfrtpb.TargetDevice, ent *bfrtpb.Entity) ([]*bfrtpb.TableEntry, error) {
	te := ent.GetTableEntry()
	if te == nil {
		return nil, bfErr(codes.Unimplemented, "the simulated switch reads table entries only")
	}
	t, ok := info.TableByID(te.TableId)
	if !ok {
		return nil, bfErr(codes.NotFound, "no table %d", te.TableId)
	}
	key, err := entryKey(t, te)
	if err != nil {
		return nil, err
	}
	r, ok := readers[t.TableType]
	if !ok {
		return nil, bfErr(codes.Unimplemented, "table %s (%s): the simulated switch does not model it", t.Name, t.TableType)
	}
	return r(s, readReq{t: t, key: key, want: requested(t, te), pipe: pipeOf(tgt, te), name: strings.TrimPrefix(t.Name, "pipe.")})
}

// readReq is one read of a table, decoded.
type readReq struct {
	t    *bfrtinfo.Table
	key  map[string]uint64
	want map[string]bool // the data fields asked for (nil: all)
	pipe int64
	name string // the table's name without "pipe."
}

// one is the read's answer: the entry of its key with act and d.
func (r readReq) one(act *bfrtinfo.Action, d map[string]any) ([]*bfrtpb.TableEntry, error) {
	e, err := entry(r.t, intMap(r.key), act, d)
	if err != nil {
		return nil, err
	}
	return []*bfrtpb.TableEntry{e}, nil
}

// readers serve the reads of each table type the simulated switch
// models, through the agent's operations.
var readers = map[string]func(s *bfrtService, r readReq) ([]*bfrtpb.TableEntry, error){
	"MatchAction_Direct": (*bfrtService).readP4Table,
	"Register": func(s *bfrtService, r readReq) ([]*bfrtpb.TableEntry, error) {
		return s.readRegister(r.t, r.name, r.key)
	},
	"PortConfigure":   (*bfrtService).readPort,
	"PortStat":        (*bfrtService).readPortStat,
	"TmCounterQueue":  (*bfrtService).readQueueCounter,
	"TmPortCfg":       (*bfrtService).readTMPort,
	"TmQueueSchedCfg": (*bfrtService).readQueueSched,
	"PktgenAppCfg":    (*bfrtService).readApp,
	"MirrorCfg":       (*bfrtService).readSetupTable,
	"PreNode":         (*bfrtService).readSetupTable,
	"PreMgid":         (*bfrtService).readSetupTable,
	"TmQueueCfg":      (*bfrtService).readSetupTable,
	"SimClock":        (*bfrtService).readClock,
	"DevConfigure": func(s *bfrtService, r readReq) ([]*bfrtpb.TableEntry, error) {
		r.key = nil
		return r.one(nil, filter(map[string]any{"sku": "BFN-T10-032D", "num_pipes": int64(4), "num_stages": int64(12), "num_max_ports": int64(288), "num_front_ports": int64(32), "pcie_cpu_port": int64(320)}, r.want))
	},
}

// readP4Table reads a program's match-action table: every entry, or the
// one of the key.
func (s *bfrtService) readP4Table(r readReq) ([]*bfrtpb.TableEntry, error) {
	t, key := r.t, r.key
	var got struct {
		Entries []simEntry `json:"entries"`
	}
	args := map[string]any{"name": r.name}
	if len(key) > 0 {
		args["key"] = intMap(key)
	}
	if err := s.op("table.get", args, &got); err != nil {
		return nil, err
	}
	var out []*bfrtpb.TableEntry
	for _, e := range got.Entries {
		if len(key) > 0 && !maps.Equal(e.Key, intMap(key)) {
			continue
		}
		act, ok := t.Action(e.Action)
		if !ok {
			return nil, bfErr(codes.Internal, "table %s: entry with action %q the program does not declare", t.Name, e.Action)
		}
		d := map[string]any{}
		for k, v := range e.Data {
			d[k] = v
		}
		te, err := entry(t, e.Key, act, d)
		if err != nil {
			return nil, err
		}
		out = append(out, te)
	}
	if len(key) > 0 && len(out) == 0 {
		return nil, bfErr(codes.NotFound, "table %s has no entry %v", t.Name, key)
	}
	return out, nil
}

// readPort reads $PORT of one $DEV_PORT: its status, and the fields
// other operations keep when asked for (all of them when none is named).
func (s *bfrtService) readPort(r readReq) ([]*bfrtpb.TableEntry, error) {
	dev, ok := r.key["$DEV_PORT"]
	if !ok {
		return nil, bfErr(codes.Unimplemented, "$PORT: the simulated switch reads one $DEV_PORT at a time")
	}
	var st struct {
		Enabled bool   `json:"enabled"`
		Up      bool   `json:"up"`
		Speed   string `json:"speed"`
		FEC     string `json:"fec"`
	}
	if err := s.op("port.status", map[string]any{"dev_port": dev}, &st); err != nil {
		return nil, err
	}
	d := map[string]any{"$SPEED": st.Speed, "$FEC": st.FEC, "$PORT_ENABLE": st.Enabled, "$PORT_UP": st.Up,
		"$AUTO_NEGOTIATION": "PM_AN_FORCE_DISABLE", "$IS_VALID": true, "$IS_INTERNAL": false}
	if err := s.readPortExtras(dev, r.want, d); err != nil {
		return nil, err
	}
	return r.one(nil, filter(d, r.want))
}

// readPortExtras adds to d the $PORT fields of port dev that want asks
// for: cut-through, the PFC maps, and the 1588 transmit timestamp.
func (s *bfrtService) readPortExtras(dev uint64, want map[string]bool, d map[string]any) error {
	if want == nil || want["$CUT_THROUGH_EN"] {
		var ct struct {
			Enabled bool `json:"enabled"`
		}
		if err := s.op("port.cut_through", map[string]any{"dev_port": dev}, &ct); err != nil {
			return err
		}
		d["$CUT_THROUGH_EN"] = ct.Enabled
	}
	if want == nil || want["$RX_PFC_EN_MAP"] || want["$TX_PFC_EN_MAP"] {
		var pfc struct {
			Rx int64 `json:"rx_map"`
			Tx int64 `json:"tx_map"`
		}
		if err := s.op("port.pfc", map[string]any{"dev_port": dev}, &pfc); err != nil {
			return err
		}
		d["$RX_PFC_EN_MAP"], d["$TX_PFC_EN_MAP"] = pfc.Rx, pfc.Tx
	}
	// The 1588 transmit timestamp FIFO pops on a read: only a read
	// that names its fields reads it.
	if want["$TIMESTAMP_1588_VALUE"] || want["$TIMESTAMP_1588_VALID"] {
		var ts struct {
			Valid bool  `json:"valid"`
			Value int64 `json:"value"`
			ID    int64 `json:"id"`
		}
		if err := s.op("port.tx_tstamp", map[string]any{"dev_port": dev}, &ts); err != nil {
			return err
		}
		d["$TIMESTAMP_1588_VALID"], d["$TIMESTAMP_1588_VALUE"], d["$TIMESTAMP_1588_ID"] = ts.Valid, ts.Value, ts.ID
	}
	return nil
}

func (s *bfrtService) readPortStat(r readReq) ([]*bfrtpb.TableEntry, error) {
	dev, ok := r.key["$DEV_PORT"]
	if !ok {
		return nil, bfErr(codes.Unimplemented, "$PORT_STAT: the simulated switch reads one $DEV_PORT at a time")
	}
	args := map[string]any{"dev_port": dev}
	if r.want != nil {
		var names []string
		for n := range r.want {
			names = append(names, n)
		}
		args["names"] = names
	}
	var got struct {
		Counters map[string]int64 `json:"counters"`
	}
	if err := s.op("port.stat", args, &got); err != nil {
		return nil, err
	}
	d := map[string]any{}
	for k, v := range got.Counters {
		if _, known := r.t.DataField(k, nil); known {
			d[k] = v
		}
	}
	return r.one(nil, d)
}

func (s *bfrtService) readQueueCounter(r readReq) ([]*bfrtpb.TableEntry, error) {
	var q struct {
		Usage int64 `json:"usage_cells"`
		Mark  int64 `json:"watermark_cells"`
		Drops int64 `json:"drop_count_packets"`
	}
	if err := s.op("tm.queue", map[string]any{"pipe": r.pipe, "pg_id": r.key["pg_id"], "pg_queue": r.key["pg_queue"]}, &q); err != nil {
		return nil, err
	}
	return r.one(nil, filter(map[string]any{"usage_cells": q.Usage, "watermark_cells": q.Mark, "drop_count_packets": q.Drops}, r.want))
}

// readTMPort is tf1.tm.port.cfg in the default carving: a port's group,
// its number in the group and its eight queues.
func (s *bfrtService) readTMPort(r readReq) ([]*bfrtpb.TableEntry, error) {
	t, want := r.t, r.want
	dev, ok := r.key["dev_port"]
	if !ok || dev&0x7f >= tmPortsPerPipe {
		return nil, bfErr(codes.NotFound, "%s: no TM port %d", t.Name, dev)
	}
	d := map[string]any{"pg_id": int64(dev&0x7f) >> 2, "pg_port_nr": int64(dev & 3), "port_queues_count": int64(8)}
	e, err := entry(t, intMap(r.key), nil, filter(d, want))
	if err != nil {
		return nil, err
	}
	if f, ok := t.DataField("egress_qid_queues", nil); ok && (want == nil || want[f.Name]) {
		var qs []uint32
		for q := 0; q < 8; q++ {
			qs = append(qs, uint32(dev&3)*8+uint32(q))
		}
		e.Data.Fields = append(e.Data.Fields, &bfrtpb.DataField{FieldId: f.ID, Value: &bfrtpb.DataField_IntArrVal{IntArrVal: &bfrtpb.DataField_IntArray{Val: qs}}})
	}
	return []*bfrtpb.TableEntry{e}, nil
}

func (s *bfrtService) readQueueSched(r readReq) ([]*bfrtpb.TableEntry, error) {
	dev, qid := tmQueuePort(r.pipe, r.key["pg_id"], r.key["pg_queue"])
	var got struct {
		Priority int `json:"priority"`
	}
	if err := s.op("tm.queue.sched", map[string]any{"dev_port": dev, "qid": qid}, &got); err != nil {
		return nil, err
	}
	p := strconv.Itoa(got.Priority)
	if got.Priority == 0 {
		p = "LOW" // the first choice for priority 0 (prio_to_str)
	}
	return r.one(nil, filter(map[string]any{"max_priority": p, "min_priority": "LOW", "min_rate_enable": false, "max_rate_enable": false, "scheduling_enable": true, "dwrr_weight": int64(1023)}, r.want))
}

// readApp is tf1.pktgen.app_cfg: the fields written, the application's
// state and its packet counter.
func (s *bfrtService) readApp(r readReq) ([]*bfrtpb.TableEntry, error) {
	id := int(r.key["app_id"])
	s.mu.Lock()
	app := s.apps[id]
	var f map[string]uint64
	act := ""
	if app != nil {
		f, act = app.fields, app.action
	}
	s.mu.Unlock()
	if app == nil {
		return nil, bfErr(codes.NotFound, "pktgen app %d is not configured", id)
	}
	var st struct {
		Enabled bool  `json:"enabled"`
		Packets int64 `json:"packets"`
	}
	err := s.op("pktgen.status", map[string]any{"app_id": id}, &st)
	if IsAgentNotFound(err) {
		err = nil // configured but never started
	}
	if err != nil {
		return nil, err
	}
	d := map[string]any{"app_enable": st.Enabled, "pkt_counter": st.Packets}
	for k, v := range f {
		if _, known := d[k]; !known {
			d[k] = int64(v)
		}
	}
	a, _ := r.t.Action(act)
	return r.one(a, filter(d, r.want))
}

func (s *bfrtService) readSetupTable(r readReq) ([]*bfrtpb.TableEntry, error) {
	return s.readSetup(r.t, r.key, r.want, r.pipe) // bfrt_grpc_setup.go
}

func (s *bfrtService) readClock(r readReq) ([]*bfrtpb.TableEntry, error) {
	var got struct {
		TimeNs int64 `json:"time_ns"`
	}
	if err := s.op("time", nil, &got); err != nil {
		return nil, err
	}
	r.key = nil
	return r.one(nil, map[string]any{"time_ns": got.TimeNs})
}

// IsAgentNotFound reports whether err is an operation's not_found.
func IsAgentNotFound(err error) bool {
	var ae *agentErr
	return errors.As(err, &ae) && ae.kind == "not_found"
}

func filter(d map[string]any, want map[string]bool) map[string]any {
	if want == nil {
		return d
	}
	out := map[string]any{}
	for k, v := range d {
		if want[k] {
			out[k] = v
		}
	}
	return out
}

// readRegister answers a register read: one index (its value in each of
// the four pipes, the program's state in pipe 0's copy as reg.get keeps
// it), or, without a key, every index.
func (s *bfrtService) readRegister(t *bfrtinfo.Table, name string, key map[string]uint64) ([]*bfrtpb.TableEntry, error) {
	f, ok := t.DataField(name+".f1", nil)
	if !ok {
		return nil, bfErr(codes.Internal, "register %s: no field %s.f1", name, name)
	}
	mk := func(idx int64, vals []int64) (*bfrtpb.TableEntry, error) {
		e, err := entry(t, map[string]int64{"$REGISTER_INDEX": idx}, nil, nil)
		if err != nil {
			return nil, err
		}
		for _, v := range vals {
			df, err := dataField(f, v)
			if err != nil {
				return nil, err
			}
			e.Data.Fields = append(e.Data.Fields, df)
		}
		return e, nil
	}
	if idx, ok := key["$REGISTER_INDEX"]; ok {
		var r struct {
			Values []int64 `json:"values"`
		}
		if err := s.op("reg.get", map[string]any{"name": name, "index": idx}, &r); err != nil {
			return nil, err
		}
		e, err := mk(int64(idx), r.Values)
		if err != nil {
			return nil, err
		}
		return []*bfrtpb.TableEntry{e}, nil
	}
	var out []*bfrtpb.TableEntry
	for from := 0; from < t.Size; from += 4096 {
		n := min(4096, t.Size-from)
		var r struct {
			Values []int64 `json:"values"`
		}
		if err := s.op("reg.range", map[string]any{"name": name, "from": from, "count": n}, &r); err != nil {
			return nil, err
		}
		for i, v := range r.Values {
			e, err := mk(int64(from+i), []int64{v, 0, 0, 0})
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
	}
	return out, nil
}
