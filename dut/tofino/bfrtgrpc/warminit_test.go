package bfrtgrpc_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"testbed/internal/bfrtpb"
	lg "testbed/p4/linkguardian"
)

// rawClient is a BF Runtime client of the generated stubs, subscribed on
// its stream as client id; its stream's SetForwardingPipelineConfig
// responses arrive on fwd.
type rawClient struct {
	id    uint32
	stub  bfrtpb.BfRuntimeClient
	fwd   chan bfrtpb.SetForwardingPipelineConfigResponseType
	ended chan error // the stream's end
}

func dialRaw(t *testing.T, addr string, id uint32) *rawClient {
	t.Helper()
	cc, err := grpc.NewClient(strings.TrimPrefix(addr, "tcp://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := &rawClient{id: id, stub: bfrtpb.NewBfRuntimeClient(cc), fwd: make(chan bfrtpb.SetForwardingPipelineConfigResponseType, 8), ended: make(chan error, 1)}
	st, err := c.stub.StreamChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&bfrtpb.StreamMessageRequest{ClientId: id, Update: &bfrtpb.StreamMessageRequest_Subscribe{Subscribe: &bfrtpb.Subscribe{DeviceId: 0,
		Notifications: &bfrtpb.Subscribe_Notifications{}}}}); err != nil {
		t.Fatal(err)
	}
	if m, err := st.Recv(); err != nil || m.GetSubscribe() == nil {
		t.Fatalf("subscribe: %v %v", m, err)
	}
	go func() {
		for {
			m, err := st.Recv()
			if err != nil {
				c.ended <- err
				return
			}
			if r := m.GetSetForwardingPipelineConfigResponse(); r != nil {
				c.fwd <- r.SetForwardingPipelineConfigResponseType
			}
		}
	}()
	return c
}

func (c *rawClient) set(action bfrtpb.SetForwardingPipelineConfigRequest_Action, cfg ...*bfrtpb.ForwardingPipelineConfig) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.stub.SetForwardingPipelineConfig(ctx, &bfrtpb.SetForwardingPipelineConfigRequest{ClientId: c.id, Action: action, Config: cfg})
	return err
}

// expect waits for the stream's next SetForwardingPipelineConfig response.
func (c *rawClient) expect(t *testing.T, who string, want bfrtpb.SetForwardingPipelineConfigResponseType) {
	t.Helper()
	select {
	case got := <-c.fwd:
		if got != want {
			t.Fatalf("%s: the stream says %v, want %v", who, got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no %v on the stream", who, want)
	}
}

func wantCode(t *testing.T, what string, err error, code codes.Code, msg string) {
	t.Helper()
	if status.Code(err) != code || !strings.Contains(status.Convert(err).Message(), msg) {
		t.Fatalf("%s: %v, want %v %q", what, err, code, msg)
	}
}

// build reads a program's build from the artifacts directory as a
// config of a SetForwardingPipelineConfig.
func build(t *testing.T, dir, program string) *bfrtpb.ForwardingPipelineConfig {
	t.Helper()
	var files [3][]byte
	for i, f := range []string{"bf-rt.json", "pipe/context.json", "pipe/tofino.bin"} {
		b, err := os.ReadFile(filepath.Join(dir, program, f))
		if err != nil {
			t.Fatal(err)
		}
		files[i] = b
	}
	return &bfrtpb.ForwardingPipelineConfig{P4Name: program, BfruntimeInfo: files[0],
		Profiles: []*bfrtpb.ForwardingPipelineConfig_Profile{{ProfileName: "pipe", Context: files[1], Binary: files[2], PipeScope: []uint32{0, 1, 2, 3}}}}
}

// A warm init in two calls, as the SDE serves it (open-p4studio
// bf_rt_server_mgr.cpp:1092-1176, ConfigManager::warmInitBegin/End
// 551-631): VERIFY_AND_WARM_INIT_BEGIN adds the program and tells every
// subscribed client WARM_INIT_STARTED; until WARM_INIT_END the clients
// work on the new program (a driver opens, finds it, binds and writes an
// entry); a second BEGIN of the same client is UNAVAILABLE, an END with a
// config INVALID_ARGUMENT; the END tells every client WARM_INIT_FINISHED
// and the entry written between stays; an END after the client's warm
// init finished is UNAVAILABLE, and an END without a BEGIN succeeds. A
// BEGIN_AND_END tells every client STARTED and FINISHED. Before, BEGIN
// and END were UNIMPLEMENTED, and a BEGIN_AND_END told its own client
// FINISHED alone.
func TestWarmInitBeginWritesEnd(t *testing.T) {
	lab := startLab(t)
	d, _ := lab.Inventory().Device("sw1")
	ctx := context.Background()
	sw := open(t, lab, "sw1", nil)
	if err := sw.StartSwitchd(ctx, lg.ProgramSender); err != nil {
		t.Fatal(err)
	}
	a, b := dialRaw(t, d.Address, 7001), dialRaw(t, d.Address, 7002)

	// An END without a BEGIN: the device is not locked, so it does nothing
	// but finish the client's warm init (ConfigManager INITIAL -> FINISHED).
	if err := b.set(bfrtpb.SetForwardingPipelineConfigRequest_WARM_INIT_END); err != nil {
		t.Fatalf("WARM_INIT_END without a BEGIN: %v", err)
	}
	a.expect(t, "client a, b's END", bfrtpb.SetForwardingPipelineConfigResponseType_WARM_INIT_FINISHED)
	b.expect(t, "client b, its END", bfrtpb.SetForwardingPipelineConfigResponseType_WARM_INIT_FINISHED)
	wantCode(t, "a second END of client b", b.set(bfrtpb.SetForwardingPipelineConfigRequest_WARM_INIT_END), codes.Unavailable, "Already warm_init_finished. Cannot perform WARM_INIT_END again")

	recv := build(t, d.Options["artifacts"], lg.ProgramReceiver)
	if err := a.set(bfrtpb.SetForwardingPipelineConfigRequest_VERIFY_AND_WARM_INIT_BEGIN, recv); err != nil {
		t.Fatalf("VERIFY_AND_WARM_INIT_BEGIN: %v", err)
	}
	a.expect(t, "client a, its BEGIN", bfrtpb.SetForwardingPipelineConfigResponseType_WARM_INIT_STARTED)
	b.expect(t, "client b, a's BEGIN", bfrtpb.SetForwardingPipelineConfigResponseType_WARM_INIT_STARTED)
	wantCode(t, "a second BEGIN of client a", a.set(bfrtpb.SetForwardingPipelineConfigRequest_VERIFY_AND_WARM_INIT_BEGIN, recv), codes.Unavailable, "Warm_init in process.")

	// Between BEGIN and END: a driver finds the new program and writes it.
	mid := open(t, lab, "sw1", nil)
	if p, err := mid.Program(ctx); err != nil || p != lg.ProgramReceiver {
		t.Fatalf("between BEGIN and END the switch names %q (%v), want %q", p, err, lg.ProgramReceiver)
	}
	regs := lg.RegExpectedSeqNo
	if err := mid.WriteRegister(ctx, regs, 2, 4242); err != nil {
		t.Fatalf("a register written between BEGIN and END: %v", err)
	}

	wantCode(t, "an END with a config", a.set(bfrtpb.SetForwardingPipelineConfigRequest_WARM_INIT_END, recv), codes.InvalidArgument, "Commit msg cannot contain any config.")
	if err := a.set(bfrtpb.SetForwardingPipelineConfigRequest_WARM_INIT_END); err != nil {
		t.Fatalf("WARM_INIT_END after the BEGIN: %v", err)
	}
	a.expect(t, "client a, its END", bfrtpb.SetForwardingPipelineConfigResponseType_WARM_INIT_FINISHED)
	b.expect(t, "client b, a's END", bfrtpb.SetForwardingPipelineConfigResponseType_WARM_INIT_FINISHED)
	wantCode(t, "a second END of client a", a.set(bfrtpb.SetForwardingPipelineConfigRequest_WARM_INIT_END), codes.Unavailable, "Already warm_init_finished.")

	// A BEGIN_AND_END tells every subscribed client both, and finishes
	// its client's warm init (mgr.cpp:1119-1157).
	c := dialRaw(t, d.Address, 7003)
	if err := c.set(bfrtpb.SetForwardingPipelineConfigRequest_VERIFY_AND_WARM_INIT_BEGIN_AND_END, recv); err != nil {
		t.Fatalf("VERIFY_AND_WARM_INIT_BEGIN_AND_END: %v", err)
	}
	for _, x := range []*rawClient{a, b, c} {
		x.expect(t, "a BEGIN_AND_END", bfrtpb.SetForwardingPipelineConfigResponseType_WARM_INIT_STARTED)
		x.expect(t, "a BEGIN_AND_END", bfrtpb.SetForwardingPipelineConfigResponseType_WARM_INIT_FINISHED)
	}
	wantCode(t, "an END after a BEGIN_AND_END", c.set(bfrtpb.SetForwardingPipelineConfigRequest_WARM_INIT_END), codes.Unavailable, "Already warm_init_finished.")
	if err := mid.WriteRegister(ctx, regs, 2, 4242); err != nil {
		t.Fatal(err)
	}

	after := open(t, lab, "sw1", nil)
	if p, err := after.Program(ctx); err != nil || p != lg.ProgramReceiver {
		t.Fatalf("after the END the switch runs %q (%v)", p, err)
	}
	if v, err := after.ReadRegister(ctx, regs, 2); err != nil || v[0] != 4242 {
		t.Fatalf("the register written between BEGIN and END reads %v (%v) after the END", v, err)
	}
}

func (c *rawClient) bind(program string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.stub.SetForwardingPipelineConfig(ctx, &bfrtpb.SetForwardingPipelineConfigRequest{ClientId: c.id,
		Action: bfrtpb.SetForwardingPipelineConfigRequest_BIND, Config: []*bfrtpb.ForwardingPipelineConfig{{P4Name: program}}})
	return err
}

// A load drops the clients bound to the program it replaces, as the SDE's
// refreshConnections does (bf_rt_server_mgr.cpp:904-966): their streams
// get the load's STARTED and FINISHED, then end CANCELLED, and the server
// no longer knows them, so a BIND is UNAVAILABLE "Unknown client" until
// they subscribe again. A client bound to the program loaded stays. The
// simulated switch only unbound them and kept their streams, so a driver
// that rebinds after another program's load passed against it and would
// fail against bf_switchd; the driver now subscribes again
// (TestAbandonedLoadRunsOnAndIsUndone loads over a driver bound to the
// program replaced).
func TestLoadDropsTheClientsOfTheProgramReplaced(t *testing.T) {
	lab := startLab(t)
	d, _ := lab.Inventory().Device("sw1")
	ctx := context.Background()
	sw := open(t, lab, "sw1", nil)
	if err := sw.StartSwitchd(ctx, lg.ProgramSender); err != nil {
		t.Fatal(err)
	}
	sw.Close() // its BIND of the sender goes with its stream
	a, b, loader := dialRaw(t, d.Address, 7101), dialRaw(t, d.Address, 7102), dialRaw(t, d.Address, 7103)
	if err := a.bind(lg.ProgramSender); err != nil {
		t.Fatalf("BIND %s: %v", lg.ProgramSender, err)
	}
	recv := build(t, d.Options["artifacts"], lg.ProgramReceiver)
	if err := loader.set(bfrtpb.SetForwardingPipelineConfigRequest_VERIFY_AND_WARM_INIT_BEGIN_AND_END, recv); err != nil {
		t.Fatal(err)
	}
	for _, x := range []*rawClient{a, b} {
		x.expect(t, "a load", bfrtpb.SetForwardingPipelineConfigResponseType_WARM_INIT_STARTED)
		x.expect(t, "a load", bfrtpb.SetForwardingPipelineConfigResponseType_WARM_INIT_FINISHED)
	}
	select {
	case err := <-a.ended:
		if status.Code(err) != codes.Canceled {
			t.Fatalf("the stream of the client bound to the program replaced ended %v, want CANCELLED", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream of the client bound to the program replaced goes on")
	}
	wantCode(t, "a BIND from the client dropped", a.bind(lg.ProgramReceiver), codes.Unavailable, "Unknown client")
	if err := dialRaw(t, d.Address, 7101).bind(lg.ProgramReceiver); err != nil {
		t.Fatalf("a BIND after subscribing again: %v", err)
	}
	select {
	case err := <-b.ended:
		t.Fatalf("the stream of an unbound client ended: %v", err)
	default:
	}
	if err := b.bind(lg.ProgramReceiver); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("client b, never bound, BINDs the program another owns: %v, want ALREADY_EXISTS (it is still known)", err)
	}
}
