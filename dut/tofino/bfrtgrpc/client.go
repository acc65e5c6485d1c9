// Package bfrtgrpc drives an Intel Tofino switch over BF Runtime gRPC, the
// service bf_switchd serves (port 50052; internal/bfrtpb, generated from the
// SDE's bfruntime.proto), the way labs drive Tofino remotely.
//
// It is the tofino-bfrt-grpc driver: Open returns a *tofino.Switch whose
// operations (dut/tofino/agent/PROTOCOL.md) go to the SDE's tables instead of
// to the bfrt_python agent over SSH, so every recipe that runs over the SSH
// driver runs unchanged over this one. The client follows the SDE's own
// Python client (open-p4studio, pkgsrc/bf-drivers/src/bf_rt/
// bfruntime_grpc_client/python/client.py):
//   - one client_id per driver, a StreamChannel opened at once with a
//     Subscribe for device 0 (ClientInterface.__init__, subscribe), answered
//     with a status OK before anything else is sent;
//   - BIND of the running program (bind_pipeline_config), and the program's
//     bf-rt.json and the device's fixed tables from
//     GetForwardingPipelineConfig (bfrt_info_get); names become ids there;
//   - every Write and Read also names the program (p4_name), which the SDE's
//     server accepts from a client that is not bound, so a second driver on
//     one switch (a run and a monitor) works when the first owns the BIND;
//   - keys and data as the client's make_key/make_data encode them: integers
//     big-endian in the field's bytes (to_bytes), bool and string fields in
//     their own values, a register's value once per pipe on a read;
//   - a failed batch is an UNKNOWN status whose details hold one
//     bfrt_proto.Error per update (_parse_grpc_error_binary_details).
//
// Loading a program (StartSwitchd) is SetForwardingPipelineConfig
// VERIFY_AND_WARM_INIT_BEGIN_AND_END with the program's build, read from
// the Artifacts directory in the SDE's install layout, and waits for
// WARM_INIT_FINISHED on the stream (send_set_forwarding_pipeline_config_request).
package bfrtgrpc

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"testbed/dut/tofino"
	"testbed/internal/bfrtinfo"
	"testbed/internal/bfrtpb"
	"testbed/internal/readfile"
	"testbed/transport"
)

// Driver is the inventory's driver: key of this driver.
const Driver = "tofino-bfrt-grpc"

// DefaultPort is bf_switchd's BF Runtime gRPC port.
const DefaultPort = 50052

// Options configure a connection.
type Options struct {
	// ClientID is the BF Runtime client id (default: a random one in
	// 1..2^24-2, the range the server keeps in its cookies).
	ClientID uint32
	// Device is the device id (default 0).
	Device uint32
	// Artifacts is a directory of compiled programs in the SDE's install
	// layout (share/tofinopd): <program>/bf-rt.json and
	// <program>/pipe/{context.json,tofino.bin}. Without it the driver
	// cannot load a program the switch does not already run.
	Artifacts string
	// Timeout is the deadline of one operation (default 10s).
	Timeout time.Duration
	// StartTimeout bounds a program's load: the SetForwardingPipelineConfig
	// that sends it and the wait for WARM_INIT_FINISHED, the pipes' load
	// that bf_switchd's start does over SSH (default 3 min, as the SSH
	// driver's StartTimeout).
	StartTimeout time.Duration
	Transcript   *transport.Transcript
	// Agent, when set, is the switch's testbed agent over SSH (the
	// tofino-bfrt driver's path, the inventory's options.agent_ssh),
	// which answers what BF Runtime does not serve: port.fec_stat (the
	// port manager's FEC counters, in no BF Runtime table) and packet.out
	// (the CPU port's kernel interface; BF Runtime has no packet I/O).
	// Without it those operations are unsupported. The Conn closes it.
	Agent AgentChannel
}

// AgentChannel is the switch's testbed agent reached over SSH: a
// *tofino.Switch opened with tofino.Open.
type AgentChannel interface {
	AgentCall(ctx context.Context, op string, args, out any) error
	EnsureAgent(ctx context.Context) error
	Close() error
}

// Conn is one BF Runtime gRPC connection: a tofino.Conn and
// tofino.Lifecycle.
type Conn struct {
	addr string
	opts Options
	cc   *grpc.ClientConn
	stub bfrtpb.BfRuntimeClient
	tr   *transport.Transcript

	streamCancel context.CancelFunc
	streamOut    chan *bfrtpb.StreamMessageRequest
	streamIn     chan *bfrtpb.StreamMessageResponse
	streamErr    chan error

	mu      sync.Mutex
	program string
	info    *bfrtinfo.Info
	bound   bool
	local   time.Time // the driver's own clock when the switch has none
	// agentUp: the side channel's agent answered since the program was
	// last loaded (a load restarts the daemon the agent runs in).
	agentUp bool
}

// Open connects to a switch's BF Runtime service at tcp://host:port (or
// host:port) and returns it as a switch of the tofino package. It
// subscribes on the stream channel; it binds to the running program when
// an operation first needs it.
func Open(ctx context.Context, address string, opts Options) (*tofino.Switch, error) {
	c, err := Dial(ctx, address, opts)
	if err != nil {
		return nil, err
	}
	return tofino.NewSwitch(c, tofino.Options{Timeout: c.opts.Timeout, Transcript: c.tr}), nil
}

// Dial opens the connection alone.
func Dial(ctx context.Context, address string, opts Options) (*Conn, error) {
	addr, err := hostPort(address)
	if err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 3 * time.Minute
	}
	if opts.ClientID == 0 {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		opts.ClientID = 1 + binary.BigEndian.Uint32(b[:])%(1<<24-2)
	}
	// BF Runtime gRPC has no transport security in the SDE (the Python
	// client's insecure_channel): keep the port on a management network
	// or behind an SSH tunnel.
	cc, err := grpc.DialContext(ctx, addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30), grpc.MaxCallSendMsgSize(1<<30)))
	if err != nil {
		return nil, fmt.Errorf("bf runtime %s: %w", addr, err)
	}
	c := &Conn{addr: addr, opts: opts, cc: cc, stub: bfrtpb.NewBfRuntimeClient(cc), tr: opts.Transcript, local: time.Now()}
	if err := c.subscribe(ctx); err != nil {
		cc.Close()
		return nil, err
	}
	return c, nil
}

func hostPort(address string) (string, error) {
	a, err := transport.ParseAddress(address)
	if err != nil {
		return "", fmt.Errorf("bf runtime address: %w", err)
	}
	if a.Scheme != "tcp" {
		return "", fmt.Errorf("bf runtime address %q: expected tcp://host:port (port %d on bf_switchd)", address, DefaultPort)
	}
	return a.Host, nil
}

// subscribe opens the stream channel and subscribes for the device, as
// ClientInterface does: the server knows the client from then on.
func (c *Conn) subscribe(ctx context.Context) error {
	sctx, cancel := context.WithCancel(context.Background())
	st, err := c.stub.StreamChannel(sctx)
	if err != nil {
		cancel()
		return fmt.Errorf("bf runtime %s: stream: %w", c.addr, err)
	}
	// The receiver keeps its own stream's channels: a new subscription
	// (resubscribe) replaces the Conn's.
	in, errc := make(chan *bfrtpb.StreamMessageResponse, 16), make(chan error, 1)
	c.streamCancel, c.streamIn, c.streamErr = cancel, in, errc
	go func() {
		for {
			m, err := st.Recv()
			if err != nil {
				errc <- err
				close(in)
				return
			}
			select {
			case in <- m:
			default: // nobody waits for it: notifications are not used
			}
		}
	}()
	req := &bfrtpb.StreamMessageRequest{ClientId: c.opts.ClientID, Update: &bfrtpb.StreamMessageRequest_Subscribe{Subscribe: &bfrtpb.Subscribe{
		DeviceId:      c.opts.Device,
		Notifications: &bfrtpb.Subscribe_Notifications{},
	}}}
	c.sent("StreamChannel", req)
	if err := st.Send(req); err != nil {
		cancel()
		return fmt.Errorf("bf runtime %s: subscribe: %w", c.addr, err)
	}
	m, err := c.waitStream(ctx, func(m *bfrtpb.StreamMessageResponse) bool { return m.GetSubscribe() != nil })
	if err != nil {
		cancel()
		return fmt.Errorf("bf runtime %s: subscribe as client %d: %w", c.addr, c.opts.ClientID, err)
	}
	if code := m.GetSubscribe().GetStatus().GetCode(); code != 0 {
		cancel()
		return fmt.Errorf("bf runtime %s: subscribe as client %d: status %d: %s", c.addr, c.opts.ClientID, code, m.GetSubscribe().GetStatus().GetMessage())
	}
	return nil
}

// waitStream waits for a stream message that match accepts.
func (c *Conn) waitStream(ctx context.Context, match func(*bfrtpb.StreamMessageResponse) bool) (*bfrtpb.StreamMessageResponse, error) {
	ctx, cancel := c.deadline(ctx)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case m, ok := <-c.streamIn:
			if !ok {
				select {
				case err := <-c.streamErr:
					c.streamErr <- err
					return nil, fmt.Errorf("stream closed: %w", err)
				default:
					return nil, errors.New("stream closed")
				}
			}
			c.received("StreamChannel", m)
			if match(m) {
				return m, nil
			}
		}
	}
}

func (c *Conn) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.opts.Timeout)
}

// Close ends the stream (the server forgets the client and its BIND) and
// the connection; nothing on the switch is stopped.
func (c *Conn) Close() error {
	if c.streamCancel != nil {
		c.streamCancel()
	}
	if c.opts.Agent != nil {
		c.opts.Agent.Close()
	}
	return c.cc.Close()
}

func (c *Conn) sent(rpc string, m proto.Message) {
	if c.tr != nil {
		c.tr.Sent(rpc + " " + prototext.MarshalOptions{}.Format(m))
	}
}

func (c *Conn) received(rpc string, m proto.Message) {
	if c.tr != nil {
		c.tr.Received(rpc + " " + prototext.MarshalOptions{}.Format(m))
	}
}

// pipelineConfig asks for the device's configuration. While the switch
// loads a program (one this client gave up waiting for, as a run's undo
// meets after an abandoned load, or another client's) the server refuses
// the request UNAVAILABLE, "Failed to acquire read lock" (its load holds
// the set_fwd lock: open-p4studio bf_rt_server_impl.cpp:3820 and
// 3877-3879): it is asked again until the load ends, within StartTimeout.
func (c *Conn) pipelineConfig(ctx context.Context) (*bfrtpb.GetForwardingPipelineConfigResponse, error) {
	wait, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	var resp *bfrtpb.GetForwardingPipelineConfigResponse
	var last error
	// Asked again at transport.Poll's gaps (an eighth of the time waited,
	// never faster than an answer takes): a real load runs for seconds.
	err := transport.Poll(wait, func() (bool, error) {
		var err error
		resp, err = c.getPipelineConfig(ctx)
		if err != nil && loading(err) {
			last = err
			return false, nil
		}
		return true, err
	})
	switch {
	case err == nil:
		return resp, nil
	case last != nil && wait.Err() != nil && ctx.Err() == nil:
		c.tr.Error(last)
		return nil, fmt.Errorf("bf runtime %s: GetForwardingPipelineConfig: the switch was still loading a program after %v (StartTimeout): %w", c.addr, c.opts.StartTimeout, transport.ErrConnectionLost)
	case ctx.Err() != nil && last != nil:
		c.tr.Error(last)
		return nil, fmt.Errorf("bf runtime %s: GetForwardingPipelineConfig: given up while the switch loaded a program: %w", c.addr, ctx.Err())
	}
	return nil, c.rpcErr("GetForwardingPipelineConfig", err)
}

// loading reports whether the server refused a request because a
// program's load holds its set_fwd lock (BF_IN_USE, UNAVAILABLE:
// open-p4studio bf_rt_server_impl.hpp:104-108).
func loading(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.Unavailable && strings.Contains(st.Message(), "Failed to acquire read lock")
}

func (c *Conn) getPipelineConfig(ctx context.Context) (*bfrtpb.GetForwardingPipelineConfigResponse, error) {
	ctx, cancel := c.deadline(ctx)
	defer cancel()
	req := &bfrtpb.GetForwardingPipelineConfigRequest{DeviceId: c.opts.Device, ClientId: c.opts.ClientID}
	c.sent("GetForwardingPipelineConfig", req)
	resp, err := c.stub.GetForwardingPipelineConfig(ctx, req)
	if err != nil {
		return nil, err
	}
	if c.tr != nil {
		// The documents are long: the transcript names them.
		names := []string{}
		for _, cf := range resp.Config {
			names = append(names, fmt.Sprintf("%s (bf-rt.json %d B)", cf.P4Name, len(cf.BfruntimeInfo)))
		}
		c.tr.Received(fmt.Sprintf("GetForwardingPipelineConfig config=%v non_p4_config=%d B", names, len(resp.GetNonP4Config().GetBfruntimeInfo())))
	}
	return resp, nil
}

// Program is the P4 program the device runs ("" none).
func (c *Conn) Program(ctx context.Context) (string, error) {
	resp, err := c.pipelineConfig(ctx)
	if err != nil {
		return "", err
	}
	if len(resp.Config) == 0 {
		return "", nil
	}
	return resp.Config[0].P4Name, nil
}

// Ready binds the client to the running program and reads its tables.
func (c *Conn) Ready(ctx context.Context) error {
	_, err := c.tables(ctx)
	return err
}

// tables is the running program's tables and the device's, read and
// bound on first use.
func (c *Conn) tables(ctx context.Context) (*bfrtinfo.Info, error) {
	c.mu.Lock()
	in, p := c.info, c.program
	c.mu.Unlock()
	if in != nil {
		return in, nil
	}
	resp, err := c.pipelineConfig(ctx)
	if err != nil {
		return nil, err
	}
	if len(resp.Config) == 0 {
		return nil, fmt.Errorf("bf runtime %s: the switch runs no P4 program", c.addr)
	}
	cf := resp.Config[0]
	p = cf.P4Name
	pi, err := bfrtinfo.Parse(p+"'s bf-rt.json from "+c.addr, cf.BfruntimeInfo)
	if err != nil {
		return nil, err
	}
	np, err := bfrtinfo.Parse("the non-P4 tables of "+c.addr, resp.GetNonP4Config().GetBfruntimeInfo())
	if err != nil {
		return nil, err
	}
	in = bfrtinfo.Merge(pi, np)
	if err := c.bind(ctx, p); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.info, c.program = in, p
	c.mu.Unlock()
	return in, nil
}

// bind binds the client to program. A program another client owns is
// used without the BIND (every request names the program).
func (c *Conn) bind(ctx context.Context, program string) error {
	ctx, cancel := c.deadline(ctx)
	defer cancel()
	req := &bfrtpb.SetForwardingPipelineConfigRequest{DeviceId: c.opts.Device, ClientId: c.opts.ClientID,
		Action: bfrtpb.SetForwardingPipelineConfigRequest_BIND, Config: []*bfrtpb.ForwardingPipelineConfig{{P4Name: program}}}
	c.sent("SetForwardingPipelineConfig", req)
	_, err := c.stub.SetForwardingPipelineConfig(ctx, req)
	if status.Code(err) == codes.Unavailable && strings.HasPrefix(status.Convert(err).Message(), "Unknown client") {
		// A load of another program dropped this client: the SDE's
		// refreshConnections cancels the stream of every client bound to
		// the program replaced (bf_rt_server_mgr.cpp:904-966), and the
		// server forgets a client whose stream ended.
		c.tr.Note("the switch no longer knows client %d (a load replaced the program it was bound to): subscribing again", c.opts.ClientID)
		if c.streamCancel != nil {
			c.streamCancel()
		}
		if err := c.subscribe(ctx); err != nil {
			return err
		}
		c.sent("SetForwardingPipelineConfig", req)
		_, err = c.stub.SetForwardingPipelineConfig(ctx, req)
	}
	if status.Code(err) == codes.AlreadyExists {
		c.tr.Note("another client owns %s; working as an independent client (p4_name in every request)", program)
		return nil
	}
	if err != nil {
		return c.rpcErr("bind "+program, err)
	}
	c.mu.Lock()
	c.bound = true
	c.mu.Unlock()
	return nil
}

// StartProgram loads program from the Artifacts directory and binds to it.
func (c *Conn) StartProgram(ctx context.Context, program string) error {
	if c.opts.Artifacts == "" {
		return fmt.Errorf("load %s: the driver has no compiled programs to send (set the device's artifacts option to a directory of <program>/bf-rt.json and <program>/pipe/{context.json,tofino.bin})", program)
	}
	if program == "" || program != filepath.Base(program) || program == "." || program == ".." {
		return fmt.Errorf("load %q: a program name is one directory of the artifacts option, not a path", program)
	}
	dir := filepath.Join(c.opts.Artifacts, program)
	var files [3][]byte
	for i, f := range []string{"bf-rt.json", "pipe/context.json", "pipe/tofino.bin"} {
		// A Tofino 1 build is tens of megabytes; 512 MiB bounds a wrong
		// path (a device file, a disk image) without refusing a real one.
		b, err := readfile.Read(filepath.Join(dir, f), 512<<20)
		if err != nil {
			return fmt.Errorf("load %s: %w", program, err)
		}
		files[i] = b
	}
	c.mu.Lock()
	c.info, c.program, c.bound, c.agentUp = nil, "", false, false
	c.mu.Unlock()
	req := &bfrtpb.SetForwardingPipelineConfigRequest{DeviceId: c.opts.Device, ClientId: c.opts.ClientID,
		Action: bfrtpb.SetForwardingPipelineConfigRequest_VERIFY_AND_WARM_INIT_BEGIN_AND_END,
		Config: []*bfrtpb.ForwardingPipelineConfig{{P4Name: program, BfruntimeInfo: files[0],
			Profiles: []*bfrtpb.ForwardingPipelineConfig_Profile{{ProfileName: "pipe", Context: files[1], Binary: files[2], PipeScope: []uint32{0, 1, 2, 3}}}}}}
	if c.tr != nil {
		c.tr.Sent(fmt.Sprintf("SetForwardingPipelineConfig action=VERIFY_AND_WARM_INIT_BEGIN_AND_END p4_name=%s bf-rt.json=%d B context.json=%d B tofino.bin=%d B", program, len(files[0]), len(files[1]), len(files[2])))
	}
	// The load and its WARM_INIT_FINISHED within StartTimeout, as the SSH
	// driver waits for bf_switchd's start: the pipes take seconds to load,
	// more than one operation's Timeout.
	sctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	_, err := c.stub.SetForwardingPipelineConfig(sctx, req)
	if err != nil {
		// A load given up on goes on: the SDE's server does not look at
		// its request's context and, once the program is verified, runs
		// warm init begin and end to their end (open-p4studio
		// bf_rt_server_impl.cpp:3855-3858, bf_rt_server_mgr.cpp:
		// 1119-1157). The program found is gone; a run's undo finds the
		// new one (or the load still holding the switch, which it waits
		// for) and loads the program found again.
		const goesOn = "the switch goes on loading it and then runs it, not the program it ran before"
		if errors.Is(sctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			c.tr.Error(err)
			return fmt.Errorf("bf runtime %s: load %s: not loaded within %v (StartTimeout); %s: %w", c.addr, program, c.opts.StartTimeout, goesOn, context.DeadlineExceeded)
		}
		if ctx.Err() != nil {
			c.tr.Error(err)
			return fmt.Errorf("bf runtime %s: load %s: given up (%v); %s: %w", c.addr, program, context.Cause(ctx), goesOn, ctx.Err())
		}
		return c.rpcErr("load "+program, err)
	}
	if _, err := c.waitStream(sctx, func(m *bfrtpb.StreamMessageResponse) bool {
		return m.GetSetForwardingPipelineConfigResponse().GetSetForwardingPipelineConfigResponseType() == bfrtpb.SetForwardingPipelineConfigResponseType_WARM_INIT_FINISHED
	}); err != nil && strings.HasPrefix(err.Error(), "stream closed") {
		// The load has ended (the call returns after warm init end), and
		// dropped this client with the program it was bound to; the
		// BIND below subscribes again.
		c.tr.Note("stream ended after the load: %v", err)
	} else if err != nil {
		return fmt.Errorf("bf runtime %s: load %s: no WARM_INIT_FINISHED within %v (StartTimeout): %w", c.addr, program, c.opts.StartTimeout, err)
	}
	in, err := c.tables(ctx)
	if err != nil {
		return err
	}
	_ = in
	if p := c.boundProgram(); p != program {
		return fmt.Errorf("load %s: the switch runs %q", program, p)
	}
	return nil
}

// StartProgramBound is how long StartProgram, with the reading of the
// program before it, may take: the load within StartTimeout and the
// exchanges around it (the program read before, the load's
// configuration read back and the BIND, the read of the running program
// an undo does first), a Timeout each. A run's undo of a program change
// is given this long (tofino.Switch.LoadProgramBound), as the SSH
// driver's restart is given its StartTimeout and four Timeouts.
func (c *Conn) StartProgramBound() time.Duration {
	return c.opts.StartTimeout + 4*c.opts.Timeout
}

// p4Name is what a request names: the program, or before there is one
// the device's fixed tables ("$SHARED", as the SDE's server calls them).
func (c *Conn) p4Name() string {
	if p := c.boundProgram(); p != "" {
		return p
	}
	return "$SHARED"
}

func (c *Conn) boundProgram() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.program
}

// Identity reads the device's SKU (tf1.dev.device_configuration); BF
// Runtime says nothing of the host, its serial or the SDE's version.
func (c *Conn) Identity(ctx context.Context) (transport.Identity, error) {
	id := transport.Identity{Vendor: "Intel Tofino", Model: "Tofino switch (BF Runtime gRPC at " + c.addr + ")", Firmware: "BF Runtime gRPC"}
	in, err := c.tables(ctx)
	if err != nil {
		// No program yet: the device's fixed tables still answer.
		resp, err2 := c.pipelineConfig(ctx)
		if err2 != nil {
			return id, err
		}
		if in, err = bfrtinfo.Parse("non-P4 tables", resp.GetNonP4Config().GetBfruntimeInfo()); err != nil {
			return id, err
		}
	}
	t, ok := in.Table("tf1.dev.device_configuration")
	if !ok {
		return id, nil
	}
	var sku string
	err = c.readOne(ctx, in, t, nil, nil, []string{"sku"}, func(e *entry) error {
		sku, _ = e.data["sku"].(string)
		return nil
	})
	if err != nil {
		return id, fmt.Errorf("identity: %w", err)
	}
	if sku != "" {
		id.Model = sku + " (BF Runtime gRPC at " + c.addr + ")"
	}
	return id, nil
}

// rpcErr wraps an RPC's failure: a batch's first failed update, as a
// *tofino.AgentError of the kind the agent protocol gives that status
// (NOT_FOUND not_found, INVALID_ARGUMENT bad_request, others bfrt).
func (c *Conn) rpcErr(what string, err error) error {
	c.tr.Error(err)
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%s: %w", what, err)
	}
	code, msg := st.Code(), st.Message()
	for _, d := range st.Details() {
		if e, ok := d.(*bfrtpb.Error); ok && e.CanonicalCode != 0 {
			code, msg = codes.Code(e.CanonicalCode), e.Message
			break
		}
	}
	switch code {
	case codes.NotFound:
		return &tofino.AgentError{Op: what, Kind: "not_found", Message: msg}
	case codes.InvalidArgument:
		return &tofino.AgentError{Op: what, Kind: "bad_request", Message: msg}
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return fmt.Errorf("%s: %s: %w", what, msg, transport.ErrConnectionLost)
	}
	return &tofino.AgentError{Op: what, Kind: "bfrt", Message: fmt.Sprintf("%s (%s)", msg, code)}
}
