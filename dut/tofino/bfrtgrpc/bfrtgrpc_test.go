package bfrtgrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testbed/drivers"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"testbed/dut/p4switch"
	"testbed/dut/tofino"
	"testbed/dut/tofino/bfrtgrpc"
	"testbed/internal/bfrtpb"
	lg "testbed/p4/linkguardian"
	"testbed/simlab"
	"testbed/transport"
)

// The driver against the simulated switches of the default lab, over
// BF Runtime gRPC on loopback; the same switches over SSH for what the
// other path sees.

func startLab(t *testing.T) *simlab.Lab {
	t.Helper()
	lab, err := simlab.StartDefault(simlab.Options{Seed: 5, SwitchDriver: bfrtgrpc.Driver})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	return lab
}

func open(t *testing.T, lab *simlab.Lab, name string, tr *strings.Builder) *tofino.Switch {
	t.Helper()
	d, ok := lab.Inventory().Device(name)
	if !ok {
		t.Fatalf("no %s", name)
	}
	if !strings.HasPrefix(d.Address, "tcp://") || d.Options["artifacts"] == "" {
		t.Fatalf("%s: address %q, artifacts %q: expected the BF Runtime endpoint and the builds", name, d.Address, d.Options["artifacts"])
	}
	o := bfrtgrpc.Options{Artifacts: d.Options["artifacts"], Timeout: 5 * time.Second}
	if tr != nil {
		o.Transcript = transport.NewTranscript(tr)
	}
	sw, err := bfrtgrpc.Open(context.Background(), d.Address, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	return sw
}

// openSSH opens the same simulated switch over SSH with the SSH driver.
func openSSH(t *testing.T, lab *simlab.Lab, name string) *tofino.Switch {
	t.Helper()
	d, _ := lab.Inventory().Device(name)
	sw, err := tofino.Open(context.Background(), "ssh://admin@"+lab.Switch(name).SSH().Addr(), tofino.Options{Timeout: 5 * time.Second,
		SSH: transport.SSHOptions{KeyFile: d.Credentials.KeyFile, KnownHosts: d.Options["known_hosts"]}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	return sw
}

func devPort(t *testing.T, lab *simlab.Lab, sw, port string) int {
	d, _ := lab.Inventory().Device(sw)
	n, err := strconv.Atoi(d.Ports[port])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A program loaded over gRPC, its registers, tables and ports written over
// gRPC: the SSH path of the same switch reads what was written, and the
// reverse.
func TestLoadProgramTablesRegistersPortsOverBothPaths(t *testing.T) {
	lab := startLab(t)
	ctx := context.Background()
	var tr strings.Builder
	sw := open(t, lab, "sw1", &tr)
	if p, err := sw.Program(ctx); err != nil || p != "" {
		t.Fatalf("program before the load: %q %v", p, err)
	}
	if err := sw.StartSwitchd(ctx, lg.ProgramSender); err != nil {
		t.Fatal(err)
	}
	if p, err := sw.Program(ctx); err != nil || p != lg.ProgramSender {
		t.Fatalf("program after the load: %q %v", p, err)
	}
	id, err := sw.Identity(ctx)
	if err != nil || !strings.Contains(id.Model, "BFN-T10") {
		t.Fatalf("identity %+v %v", id, err)
	}
	other := openSSH(t, lab, "sw1")
	if p, err := other.Program(ctx); err != nil || p != lg.ProgramSender {
		t.Fatalf("the SSH path sees program %q %v", p, err)
	}
	if err := other.EnsureAgent(ctx); err != nil {
		t.Fatal(err)
	}

	// Registers.
	reg := "SwitchEgress." + lg.RegSeqNo
	if err := sw.WriteRegister(ctx, reg, 3, 777); err != nil {
		t.Fatal(err)
	}
	if v, err := other.ReadRegister(ctx, reg, 3); err != nil || v[0] != 777 {
		t.Fatalf("SSH reads %v %v", v, err)
	}
	if err := other.WriteRegister(ctx, reg, 4, 12); err != nil {
		t.Fatal(err)
	}
	vs, err := sw.ReadRegisterRange(ctx, reg, 2, 4)
	if err != nil || len(vs) != 4 || vs[1] != 777 || vs[2] != 12 || vs[0] != 0 {
		t.Fatalf("range over gRPC: %v %v", vs, err)
	}
	if _, err := sw.ReadRegister(ctx, "SwitchEgress.reg_no_such_thing", 0); !tofino.IsNotFound(err) {
		t.Fatalf("an unknown register: %v", err)
	}

	// Tables: an entry added over gRPC is the SSH path's, and the reverse.
	e := tofino.Entry{Key: map[string]int64{lg.KeyEgressPort: 136}, Action: lg.ActionProtect, Data: map[string]int64{lg.ParamDummyPktMaxCount: 5, lg.ParamBlockingMode: 1}}
	if err := sw.AddEntry(ctx, lg.TableLinkProtect, e); err != nil {
		t.Fatal(err)
	}
	got, err := other.Entries(ctx, lg.TableLinkProtect)
	if err != nil || len(got) != 1 || got[0].Key[lg.KeyEgressPort] != 136 || got[0].Data[lg.ParamDummyPktMaxCount] != 5 || got[0].Action != lg.ActionProtect {
		t.Fatalf("SSH reads %+v %v", got, err)
	}
	if err := sw.AddEntry(ctx, lg.TableLinkProtect, e); err == nil {
		t.Fatal("a second entry of one key was accepted")
	}
	e.Data[lg.ParamDummyPktMaxCount] = 9
	if err := other.ModifyEntry(ctx, lg.TableLinkProtect, e); err != nil {
		t.Fatal(err)
	}
	got, err = sw.EntriesWhere(ctx, lg.TableLinkProtect, map[string]int64{lg.KeyEgressPort: 136})
	if err != nil || len(got) != 1 || got[0].Data[lg.ParamDummyPktMaxCount] != 9 {
		t.Fatalf("gRPC reads %+v %v", got, err)
	}
	if err := sw.AddEntry(ctx, lg.TableLinkProtect, tofino.Entry{Key: map[string]int64{lg.KeyEgressPort: 1}, Action: "no_such_action"}); !tofino.IsNotFound(err) {
		t.Fatalf("an unknown action: %v", err)
	}
	if err := sw.DeleteEntry(ctx, lg.TableLinkProtect, map[string]int64{lg.KeyEgressPort: 136}); err != nil {
		t.Fatal(err)
	}
	if got, err := other.Entries(ctx, lg.TableLinkProtect); err != nil || len(got) != 0 {
		t.Fatalf("after delete, SSH reads %+v %v", got, err)
	}

	// Ports and their counters.
	p := devPort(t, lab, "sw1", "p1")
	if err := sw.AddPort(ctx, p, 25, "rs528"); err != nil {
		t.Fatal(err)
	}
	st, err := other.PortStatus(ctx, p)
	if err != nil || st.SpeedGbps != 25 || st.FEC != "BF_FEC_TYP_RS" || !st.Enabled {
		t.Fatalf("SSH sees port %+v %v", st, err)
	}
	st, err = sw.PortStatus(ctx, p)
	if err != nil || st.SpeedGbps != 25 || !st.Enabled {
		t.Fatalf("gRPC sees port %+v %v", st, err)
	}
	c, err := sw.PortCounters(ctx, p)
	if err != nil || len(c.Values) < 10 {
		t.Fatalf("counters %+v %v", c, err)
	}
	if _, ok := c.Values["$FramesTransmittedOK"]; !ok {
		t.Fatalf("no $FramesTransmittedOK in %v", c.Values)
	}
	if _, err := sw.PortStatus(ctx, 300); !tofino.IsNotFound(err) {
		t.Fatalf("a port not added: %v", err)
	}
	// Queue priorities through tf1.tm.port.cfg and tf1.tm.queue.sched_cfg.
	prev, err := sw.SetQueuePriority(ctx, p, 2, 5)
	if err != nil || prev != 0 {
		t.Fatalf("set priority: was %d, %v", prev, err)
	}
	if pr, err := other.QueuePriority(ctx, p, 2); err != nil || pr != 5 {
		t.Fatalf("SSH reads priority %d %v", pr, err)
	}
	// The clock moves when asked.
	t0, err := sw.Clock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t1, err := sw.WaitClock(ctx, t0+time.Millisecond)
	if err != nil || t1 < t0+time.Millisecond {
		t.Fatalf("clock %v -> %v %v", t0, t1, err)
	}
	if !strings.Contains(tr.String(), "table_id") {
		t.Errorf("the transcript shows no request:\n%s", tr.String())
	}
}

// Two clients on one switch: the second finds the program bound by the
// first and works without the BIND.
func TestSecondClientWorksUnbound(t *testing.T) {
	lab := startLab(t)
	ctx := context.Background()
	sw := open(t, lab, "sw2", nil)
	if err := sw.StartSwitchd(ctx, lg.ProgramReceiver); err != nil {
		t.Fatal(err)
	}
	if err := sw.WriteRegister(ctx, lg.RegPauseThreshold, 0, 500); err != nil {
		t.Fatal(err)
	}
	var tr strings.Builder
	mon := open(t, lab, "sw2", &tr)
	if err := mon.EnsureAgent(ctx); err != nil {
		t.Fatal(err)
	}
	v, err := mon.ReadRegister(ctx, lg.RegPauseThreshold, 0)
	if err != nil || v[0] != 500 {
		t.Fatalf("second client reads %v %v", v, err)
	}
	if !strings.Contains(tr.String(), "independent client") {
		t.Errorf("the second client's transcript does not say it is unbound:\n%s", tr.String())
	}
}

// openRegistered opens a switch of the lab as the orchestrator does:
// through the driver's registration, with the inventory's options (the
// twin's agent_ssh among them unless drop names it) and credentials.
func openRegistered(t *testing.T, lab *simlab.Lab, name string, drop ...string) *tofino.Switch {
	t.Helper()
	d, _ := lab.Inventory().Device(name)
	reg, ok := drivers.Lookup("switch", bfrtgrpc.Driver)
	if !ok {
		t.Fatal("no registration")
	}
	opts := map[string]string{}
	for k, v := range d.Options {
		if !slices.Contains(drop, k) {
			opts[k] = v
		}
	}
	dev, err := reg.Open(context.Background(), drivers.Config{Name: name, Kind: "switch", Driver: bfrtgrpc.Driver, Address: d.Address, Timeout: 5 * time.Second, Options: opts,
		SSH: func() (transport.SSHOptions, error) {
			return transport.SSHOptions{KeyFile: d.Credentials.KeyFile, KnownHosts: d.Options["known_hosts"]}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	sw := dev.(*tofino.Switch)
	t.Cleanup(func() { sw.Close() })
	return sw
}

// BF Runtime has no table of FEC counters and no packet-out: the driver
// reaches them through the switch's agent over SSH (options.agent_ssh),
// which reads the same counters the SSH driver does; without the option
// both answer unsupported, naming it.
func TestFECCountersAndPacketOutThroughTheAgentSideChannel(t *testing.T) {
	lab := startLab(t)
	ctx := context.Background()
	if d, _ := lab.Inventory().Device("sw2"); !strings.HasPrefix(d.Options["agent_ssh"], "ssh://") {
		t.Fatalf("the twin gives sw2 agent_ssh %q", d.Options["agent_ssh"])
	}
	sw := openRegistered(t, lab, "sw2")
	if err := sw.StartSwitchd(ctx, lg.ProgramReceiver); err != nil {
		t.Fatal(err)
	}
	p := devPort(t, lab, "sw2", "p1")
	if err := sw.AddPort(ctx, p, 25, "rs528"); err != nil {
		t.Fatal(err)
	}
	got, err := sw.FECCounters(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	want, err := openSSH(t, lab, "sw2").FECCounters(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Corrected != want.Corrected || got.Uncorrected != want.Uncorrected || len(got.SymbolErrors) != len(want.SymbolErrors) {
		t.Errorf("FEC counters over the side channel %+v, over SSH %+v", got, want)
	}
	if err := sw.AddEntry(ctx, lg.TableL2Forward, tofino.Entry{Key: map[string]int64{lg.KeyDstAddr: lg.InjectAddr(p, lg.QueueLowPrio)},
		Action: lg.ActionForwardToQueue, Data: map[string]int64{lg.ParamPort: int64(p), lg.ParamQID: lg.QueueLowPrio}}); err != nil {
		t.Fatal(err)
	}
	if err := sw.PacketOut(ctx, lg.InjectFrame(p, lg.PktAck)); err != nil {
		t.Fatalf("packet out through the side channel: %v", err)
	}

	bare := openRegistered(t, lab, "sw2", "agent_ssh")
	for what, err := range map[string]error{
		"FEC counters": func() error { _, err := bare.FECCounters(ctx, p); return err }(),
		"packet out":   bare.PacketOut(ctx, lg.InjectFrame(p, lg.PktAck)),
	} {
		if !tofino.IsUnsupported(err) || !strings.Contains(err.Error(), "agent_ssh") {
			t.Errorf("%s without the side channel: %v, want unsupported naming options.agent_ssh", what, err)
		}
	}
}

// A program's load is bounded by StartTimeout, not by one operation's
// Timeout: the simulated switch takes 150 ms to load its pipes, which a
// StartTimeout of 50 ms gives up on, saying so, though the Timeout is 5 s
// (the load was under the Timeout, or the caller's deadline, alone). An
// undo of the load is given StartTimeout and four Timeouts (it was told
// nothing, 0).
func TestLoadIsBoundedByStartTimeout(t *testing.T) {
	lab := startLab(t)
	d, _ := lab.Inventory().Device("sw1")
	ctx := context.Background()
	open := func(o bfrtgrpc.Options) *tofino.Switch {
		o.Artifacts = d.Options["artifacts"]
		sw, err := bfrtgrpc.Open(ctx, d.Address, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sw.Close() })
		return sw
	}
	sw := open(bfrtgrpc.Options{Timeout: 5 * time.Second})
	if err := sw.StartSwitchd(ctx, lg.ProgramReceiver); err != nil {
		t.Fatalf("a 150 ms load: %v", err)
	}
	if got := sw.LoadProgramBound(); got != 3*time.Minute+20*time.Second {
		t.Errorf("LoadProgramBound = %v, want StartTimeout (3 min) and four Timeouts", got)
	}
	short := open(bfrtgrpc.Options{Timeout: 5 * time.Second, StartTimeout: 50 * time.Millisecond})
	// Until the switch was seen loading: a loaded machine spent the 50 ms
	// before the request reached it.
	err := heldLoad(t, d.Address, sw, lg.ProgramReceiver, func(<-chan struct{}) (bool, error) {
		return true, short.StartSwitchd(ctx, lg.ProgramSender)
	})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "within 50ms (StartTimeout)") || !strings.Contains(err.Error(), d.Address[len("tcp://"):]) ||
		!strings.Contains(err.Error(), "goes on loading it") {
		t.Fatalf("a 150 ms load with a StartTimeout of 50 ms: %v", err)
	}
	// The switch finishes the load it was left with (an abandoned load
	// is covered by TestAbandonedLoadRunsOnAndIsUndone).
	if p, err := sw.Program(ctx); err != nil || p != lg.ProgramSender {
		t.Fatalf("after the load given up on the switch runs %q (%v), want %q", p, err, lg.ProgramSender)
	}
}

// A load the client gives up on goes on, as on the SDE's BF Runtime
// server, which never looks at a SetForwardingPipelineConfig's context
// and runs warm init begin and end to their end (open-p4studio
// bf_rt_server_impl.cpp:3855-3858, bf_rt_server_mgr.cpp:1119-1157): the
// switch ends up running the new program, not the one it ran, and
// answers nothing else meanwhile (its set_fwd lock). A run's undo of the
// program change (journaled before the load) waits for that load to end
// and loads the program found again. Before, the simulated switch kept
// its program when the client went, so an undo found nothing to do and
// the driver's error said nothing of the switch's state.
func TestAbandonedLoadRunsOnAndIsUndone(t *testing.T) {
	lab := startLab(t)
	d, _ := lab.Inventory().Device("sw1")
	ctx := context.Background()
	sw, err := bfrtgrpc.Open(ctx, d.Address, bfrtgrpc.Options{Artifacts: d.Options["artifacts"], Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	if err := sw.StartSwitchd(ctx, lg.ProgramReceiver); err != nil {
		t.Fatal(err)
	}
	undo := func() {
		t.Helper()
		reg, _ := drivers.Lookup("switch", bfrtgrpc.Driver)
		if err := reg.Undo[p4switch.UndoProgram](ctx, sw, json.RawMessage(`{"program":"`+lg.ProgramReceiver+`"}`)); err != nil {
			t.Fatalf("undo of the abandoned load: %v", err)
		}
		if p, err := sw.Program(ctx); err != nil || p != lg.ProgramReceiver {
			t.Fatalf("after the undo the switch runs %q (%v), want %q, the program found", p, err, lg.ProgramReceiver)
		}
	}

	// The caller's context ends during the 150 ms load, once another
	// client has seen the switch hold it. A cancel that reached the driver
	// only after the load's answer (the switch was seen late in it) gives
	// an error of what followed, or none: tried again.
	err = heldLoad(t, d.Address, sw, lg.ProgramReceiver, func(held <-chan struct{}) (bool, error) {
		gone, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-held:
				cancel()
			case <-gone.Done():
			}
		}()
		err := sw.StartSwitchd(gone, lg.ProgramSender)
		return err != nil && strings.Contains(err.Error(), "load "+lg.ProgramSender+": given up"), err
	})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "given up") || !strings.Contains(err.Error(), "goes on loading it") {
		t.Fatalf("a load whose context ends: %v", err)
	}
	if p, err := sw.Program(ctx); err != nil || p != lg.ProgramSender {
		t.Fatalf("after the load given up on the switch runs %q (%v), want %q: the device finishes a load", p, err, lg.ProgramSender)
	}
	undo()

	// The undo right after the abandoned load meets it still running.
	short, err := bfrtgrpc.Open(ctx, d.Address, bfrtgrpc.Options{Artifacts: d.Options["artifacts"], Timeout: 5 * time.Second, StartTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { short.Close() })
	err = heldLoad(t, d.Address, sw, lg.ProgramReceiver, func(<-chan struct{}) (bool, error) {
		return true, short.StartSwitchd(ctx, lg.ProgramSender)
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a 150 ms load with a StartTimeout of 50 ms: %v", err)
	}
	undo()
}

// heldLoad runs start, a load of a program on the switch at addr that its
// caller gives up on, while another client asks the switch for its
// configuration, until that client was refused because a load held the
// switch (UNAVAILABLE, "Failed to acquire read lock": the set_fwd lock,
// as the driver's undo meets it) and start says its try counts; it
// returns start's error. held is closed once the switch was seen so.
//
// A fixed 50 ms given to the caller did not say the switch had the load:
// on a machine loaded to 20-30 it was spent before the request reached
// the switch, which then never loaded it, and the test said the device
// had dropped a load. A try in which the switch was not seen loading
// (or start says the try does not count) is tried again, up to ten, after sw
// has loaded found again (waiting out any load the switch holds).
func heldLoad(t *testing.T, addr string, sw *tofino.Switch, found string, start func(held <-chan struct{}) (counts bool, err error)) error {
	t.Helper()
	cc, err := grpc.NewClient(strings.TrimPrefix(addr, "tcp://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	stub := bfrtpb.NewBfRuntimeClient(cc)
	ctx := context.Background()
	loading := func() bool {
		_, err := stub.GetForwardingPipelineConfig(ctx, &bfrtpb.GetForwardingPipelineConfigRequest{ClientId: 99})
		return status.Code(err) == codes.Unavailable && strings.Contains(status.Convert(err).Message(), "Failed to acquire read lock")
	}
	type result struct {
		counts bool
		err    error
	}
	for try := 1; ; try++ {
		held, done := make(chan struct{}), make(chan result, 1)
		go func() {
			counts, err := start(held)
			done <- result{counts, err}
		}()
		var r result
		seen, ended := false, false
		for !seen && !ended {
			select {
			case r = <-done:
				ended = true
			default:
				if seen = loading(); seen {
					close(held)
				}
			}
		}
		if seen {
			if r = <-done; r.counts {
				return r.err
			}
		}
		if try == 10 {
			t.Fatalf("in ten tries the switch was not seen holding the load, or the try did not count: %v", r.err)
		}
		t.Logf("try %d: the switch seen holding the load %v, the load's error %v: %s loaded again, tried again", try, seen, r.err, found)
		if err := sw.StartSwitchd(ctx, found); err != nil {
			t.Fatal(err)
		}
	}
}

// options.start_timeout sets how long a program's start may take, over
// either driver: the gRPC switch's load and the undo bound that follows
// from it; a value that is not a positive duration is refused at open,
// naming the device and the option.
func TestStartTimeoutOption(t *testing.T) {
	lab := startLab(t)
	d, _ := lab.Inventory().Device("sw1")
	reg, _ := drivers.Lookup("switch", bfrtgrpc.Driver)
	ctx := context.Background()
	dev, err := reg.Open(ctx, drivers.Config{Name: "sw1", Kind: "switch", Driver: bfrtgrpc.Driver, Address: d.Address, Timeout: 5 * time.Second,
		Options: map[string]string{"artifacts": d.Options["artifacts"], "start_timeout": "2m"}})
	if err != nil {
		t.Fatal(err)
	}
	sw := dev.(*tofino.Switch)
	t.Cleanup(func() { sw.Close() })
	if got := sw.LoadProgramBound(); got != 2*time.Minute+20*time.Second {
		t.Errorf("LoadProgramBound with start_timeout 2m = %v, want 2m20s", got)
	}
	for _, driver := range []string{"tofino-bfrt", bfrtgrpc.Driver} {
		reg, _ := drivers.Lookup("switch", driver)
		_, err := reg.Open(ctx, drivers.Config{Name: "sw9", Kind: "switch", Driver: driver, Address: d.Address, Timeout: time.Second,
			Options: map[string]string{"start_timeout": "soon"}})
		if err == nil || !strings.Contains(err.Error(), `sw9: option start_timeout "soon"`) {
			t.Errorf("%s with start_timeout soon: %v", driver, err)
		}
	}
}
