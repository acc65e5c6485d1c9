package tofino_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"testbed/dut/tofino"
	lg "testbed/p4/linkguardian"
	"testbed/simlab"
	"testbed/simlab/physics"
	"testbed/transport"
)

// The driver against the simulated switches of the default lab, over SSH.

func startLab(t *testing.T) *simlab.Lab {
	t.Helper()
	lab, err := simlab.StartDefault(simlab.Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	return lab
}

func open(t *testing.T, lab *simlab.Lab, name string, timeout time.Duration) *tofino.Switch {
	t.Helper()
	var sb strings.Builder
	return openWith(t, lab, name, timeout, &sb)
}

// openWith is open with the driver's transcript written to w.
func openWith(t *testing.T, lab *simlab.Lab, name string, timeout time.Duration, w io.Writer) *tofino.Switch {
	t.Helper()
	d, ok := lab.Inventory().Device(name)
	if !ok {
		t.Fatalf("no %s", name)
	}
	sw, err := tofino.Open(context.Background(), d.Address, tofino.Options{Timeout: timeout,
		SSH:        transport.SSHOptions{KeyFile: d.Credentials.KeyFile, KnownHosts: d.Options["known_hosts"]},
		Transcript: transport.NewTranscript(w)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	return sw
}

func dev(t *testing.T, lab *simlab.Lab, sw, port string) int {
	d, _ := lab.Inventory().Device(sw)
	n, err := strconv.Atoi(d.Ports[port])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestHostKeyIsChecked(t *testing.T) {
	lab := startLab(t)
	d, _ := lab.Inventory().Device("sw1")
	// A known_hosts that lists sw2's key under sw1's address: the host key
	// check must refuse the connection.
	sw1, sw2 := lab.Switch("sw1").SSH(), lab.Switch("sw2").SSH()
	host, port, _ := net.SplitHostPort(sw1.Addr())
	line := strings.Replace(sw2.KnownHostsLine(), sw2.Addr()[strings.LastIndex(sw2.Addr(), ":")+1:], port, 1)
	if !strings.Contains(line, "["+host+"]:"+port) {
		t.Fatalf("bad line %q", line)
	}
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := tofino.Open(context.Background(), d.Address, tofino.Options{Timeout: 2 * time.Second,
		SSH: transport.SSHOptions{KeyFile: d.Credentials.KeyFile, KnownHosts: kh}})
	if err == nil || !strings.Contains(err.Error(), "key mismatch") {
		t.Fatalf("a wrong host key was accepted: %v", err)
	}
}

func TestStartProgramPortsRegistersTables(t *testing.T) {
	lab := startLab(t)
	ctx := context.Background()
	sw := open(t, lab, "sw2", 5*time.Second)
	id, err := sw.Identity(ctx)
	if err != nil || id.Serial == "" || !strings.Contains(id.Firmware, "SDE") {
		t.Fatalf("identity %+v %v", id, err)
	}
	if p, err := sw.Program(ctx); err != nil || p != "" {
		t.Fatalf("program before start: %q %v", p, err)
	}
	if err := sw.StartSwitchd(ctx, lg.ProgramReceiver); err != nil {
		t.Fatal(err)
	}
	if p, err := sw.Program(ctx); err != nil || p != lg.ProgramReceiver {
		t.Fatalf("program after start: %q %v", p, err)
	}
	// A register by its contract name; an unknown name is a clear not_found.
	if err := sw.WriteRegister(ctx, lg.RegPauseThreshold, 0, 500); err != nil {
		t.Fatal(err)
	}
	v, err := sw.ReadRegister(ctx, lg.RegPauseThreshold, 0)
	if err != nil || v[0] != 500 {
		t.Fatalf("read back %v %v", v, err)
	}
	_, err = sw.ReadRegister(ctx, "SwitchEgress.reg_no_such_thing", 0)
	if !tofino.IsNotFound(err) || !strings.Contains(err.Error(), "reg_no_such_thing") {
		t.Fatalf("unknown register: %v", err)
	}
	// Ports: adding twice is the switch's error, returned as such.
	p := dev(t, lab, "sw2", "p1")
	if err := sw.AddPort(ctx, p, 100, "none"); err != nil {
		t.Fatal(err)
	}
	err = sw.AddPort(ctx, p, 100, "none")
	var ae *tofino.AgentError
	if !errors.As(err, &ae) || ae.Kind != "bfrt" {
		t.Fatalf("second add: %v", err)
	}
	st, err := sw.PortStatus(ctx, p)
	if err != nil || st.SpeedGbps != 100 || st.Up {
		t.Fatalf("status with no partner: %+v %v", st, err)
	}
	if err := sw.AddPort(ctx, p, 7, "none"); err == nil {
		t.Fatal("7G accepted")
	}
	// A command error from the device comes back as an error.
	lab.Faults("sw2").FailNext(1, "BF_INVALID_ARG")
	if _, err := sw.ReadRegister(ctx, lg.RegPauseThreshold, 0); err == nil || !strings.Contains(err.Error(), "BF_INVALID_ARG") {
		t.Fatalf("device error: %v", err)
	}
	// The receiver program has no sender tables.
	if err := sw.AddEntry(ctx, lg.TableLinkProtect, tofino.Entry{Key: map[string]int64{"egress_port": 136}, Action: lg.ActionProtect}); !tofino.IsNotFound(err) {
		t.Fatalf("table of the other program: %v", err)
	}
}

func TestDroppedSessionMidRunReconnects(t *testing.T) {
	lab := startLab(t)
	ctx := context.Background()
	sw := open(t, lab, "sw1", 5*time.Second)
	if err := sw.StartSwitchd(ctx, lg.ProgramSender); err != nil {
		t.Fatal(err)
	}
	e := tofino.Entry{Key: map[string]int64{"egress_port": 136}, Action: lg.ActionProtect, Data: map[string]int64{"dummy_pkt_max_count": 4, "blocking_mode": 1}}
	if err := sw.AddEntry(ctx, lg.TableLinkProtect, e); err != nil {
		t.Fatal(err)
	}
	// The whole SSH connection drops while a request is on its way.
	lab.Faults("sw1").DropNext(1)
	es, err := sw.Entries(ctx, lg.TableLinkProtect)
	if err != nil {
		t.Fatalf("after a dropped connection: %v", err)
	}
	if len(es) != 1 || es[0].Data["blocking_mode"] != 1 {
		t.Fatalf("entries %+v", es)
	}
	// Shell commands reconnect too.
	lab.Switch("sw1").SSH().DropConnections()
	if p, err := sw.Program(ctx); err != nil || p != lg.ProgramSender {
		t.Fatalf("program after drop: %q %v", p, err)
	}
	// A request the switch swallows fails at the deadline, it does not hang.
	lab.Faults("sw1").StallNext(1)
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := sw.Entries(sctx, lg.TableLinkProtect); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled request: %v", err)
	}
	if _, err := sw.Entries(ctx, lg.TableLinkProtect); err != nil {
		t.Fatalf("after a stall: %v", err)
	}
}

// Line-rate stress traffic across the corrupting 100G fibre: counters at
// both ends and the sink agree with each other and with the protection.
func TestPktgenAcrossTheCorruptingLink(t *testing.T) {
	lab, tx, rx, p, sink := startLG100Stress(t)
	ctx := context.Background()
	// Set the fibre to about 1e-3 frame loss through the world's VOA.
	f, _ := lab.World().Fibre("lg100")
	target := physics.RxPowerForFrameLoss(f.Transceiver, physics.FEC{Name: "none"}, 1518, 1e-3)
	f.VOA.SetAttenuation(f.VOA.OutputPowerDBm() - f.LossAfterDB - target + f.VOA.Attenuation())
	time.Sleep(f.VOA.SettleTime())

	run := func(protect bool) (sent, fcs, delivered int64) {
		for _, c := range []struct {
			s    *tofino.Switch
			port int
		}{{tx, p}, {rx, p}, {rx, sink}} {
			if err := c.s.ClearPortCounters(ctx, c.port); err != nil {
				t.Fatal(err)
			}
		}
		if protect {
			if err := tx.AddEntry(ctx, lg.TableLinkProtect, tofino.Entry{Key: map[string]int64{"egress_port": int64(p)}, Action: lg.ActionProtect,
				Data: map[string]int64{"dummy_pkt_max_count": 4, "blocking_mode": 0}}); err != nil {
				t.Fatal(err)
			}
			if err := tx.AddEntry(ctx, lg.TableRetxMcast, tofino.Entry{Key: map[string]int64{"egress_port": int64(p)}, Action: lg.ActionRetxCopies,
				Data: map[string]int64{"num_copies": 2}}); err != nil {
				t.Fatal(err)
			}
			setupLG(t, ctx, tx, rx, p, p, 2) // setup_test.go
		}
		g := tofino.Pktgen{AppID: 1, Port: 68, EgressPort: p, PacketBytes: 1514, Interval: 124 * time.Nanosecond, Batches: 10, PerBatch: 20000}
		if err := tx.StartPktgen(ctx, g); err != nil {
			t.Fatal(err)
		}
		for {
			st, err := tx.PktgenStatus(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			if st.Done {
				if st.Packets != g.Packets() {
					t.Fatalf("pktgen sent %d of %d", st.Packets, g.Packets())
				}
				break
			}
		}
		tc, err := tx.PortCounters(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rx.PortCounters(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := rx.PortCounters(ctx, sink)
		if err != nil {
			t.Fatal(err)
		}
		checkPortFrames(t, ctx, tx, p, tc)
		checkPortFrames(t, ctx, rx, p, rc)
		checkPortFrames(t, ctx, rx, sink, sc)
		if tc.Values["$FramesTransmittedAll"] != rc.Values["$FramesReceivedAll"] {
			t.Errorf("tx %d frames, rx saw %d", tc.Values["$FramesTransmittedAll"], rc.Values["$FramesReceivedAll"])
		}
		return tc.Values["$FramesTransmittedAll"], rc.Values["$FramesReceivedwithFCSError"], sc.Values["$FramesTransmittedOK"]
	}
	sent, fcs, delivered := run(false)
	if sent != 200000 || fcs < 100 || fcs > 400 || delivered != sent-fcs {
		t.Errorf("unprotected: sent %d, FCS errors %d (expected ~200), delivered %d", sent, fcs, delivered)
	}
	sent, fcs, delivered = run(true)
	// Protected: more on the wire (copies, dummies), corruption still
	// happens, and every original arrives.
	if sent <= 200000 || fcs < 100 || delivered != 200000 {
		t.Errorf("protected: on the wire %d, FCS errors %d, delivered %d of 200000", sent, fcs, delivered)
	}
}

// An aborted stress leaves nothing in flight: once the generator is
// stopped the counters are settled, and moving the switch's clock (the
// next run's first wait) delivers no leftover frame of it.
func TestPktgenStopSettlesCounters(t *testing.T) {
	lab, tx, rx, p, sink := startLG100Stress(t)
	ctx := context.Background()
	// Lossy enough that the ordered mode holds frames in its reorder
	// buffer waiting for retransmissions when the generator stops.
	f, _ := lab.World().Fibre("lg100")
	target := physics.RxPowerForFrameLoss(f.Transceiver, physics.FEC{Name: "none"}, 1518, 1e-3)
	f.VOA.SetAttenuation(f.VOA.OutputPowerDBm() - f.LossAfterDB - target + f.VOA.Attenuation())
	time.Sleep(f.VOA.SettleTime())
	if err := tx.AddEntry(ctx, lg.TableLinkProtect, tofino.Entry{Key: map[string]int64{"egress_port": int64(p)}, Action: lg.ActionProtect,
		Data: map[string]int64{"dummy_pkt_max_count": 4, "blocking_mode": 1}}); err != nil {
		t.Fatal(err)
	}
	g := tofino.Pktgen{AppID: 1, Port: 68, EgressPort: p, PacketBytes: 1514, Interval: 124 * time.Nanosecond, Batches: 1000, PerBatch: 20000}
	if err := tx.StartPktgen(ctx, g); err != nil {
		t.Fatal(err)
	}
	// 6 ms of traffic: each status read moves the switch's clock 2 ms
	// while the generator runs, so its round trip is the wall time of a
	// request plus 2 ms of the link's simulation on this machine, as
	// loaded as it is now.
	var perStatus time.Duration
	for i := 0; i < 3; i++ {
		start := time.Now()
		if _, err := tx.PktgenStatus(ctx, 1); err != nil {
			t.Fatal(err)
		}
		perStatus = max(perStatus, time.Since(start))
	}
	// The stop comes on a second session while the first waits for 2 s of
	// the switch's clock (many seconds of computation at 100G): it is
	// answered once the wait's current piece of work is done (the
	// dataplane settles its model every 10 ms of the clock and lets a stop
	// in between 1 ms chunks: at most 11 ms of simulation, 5.5 status
	// reads' worth), and the wait then ends with nothing left to move. Its
	// deadline is from the measured reads, with room for the load to
	// change: a fixed one failed under -race beside other builds, where
	// the stop took its 11 ms of simulation in over 5 s.
	stopDeadline := max(5*time.Second, 25*perStatus)
	t.Logf("a status read (2 ms of the clock) took up to %v: the stop's deadline is %v", perStatus, stopDeadline)
	stopper := open(t, lab, "sw1", stopDeadline)
	now, err := tx.Clock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { _, err := tx.WaitClock(ctx, now+2*time.Second); waited <- err }()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := stopper.StopPktgen(ctx, 1); err != nil {
		t.Fatal(err)
	}
	t.Logf("pktgen.stop answered after %v, during another session's wait on the clock", time.Since(start))
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	read := func() (sent, arrived, delivered int64) {
		tc, err := tx.PortCounters(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rx.PortCounters(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := rx.PortCounters(ctx, sink)
		if err != nil {
			t.Fatal(err)
		}
		return tc.Values["$FramesTransmittedAll"], rc.Values["$FramesReceivedAll"], sc.Values["$FramesTransmittedOK"]
	}
	sent, arrived, delivered := read()
	if delivered == 0 {
		t.Fatal("nothing delivered before the stop")
	}
	if sent != arrived {
		t.Errorf("at stop: %d frames sent, %d arrived: frames still on the wire", sent, arrived)
	}
	if now, err = tx.Clock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rx.WaitClock(ctx, now+10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	sent2, arrived2, delivered2 := read()
	if sent2 != sent || arrived2 != arrived || delivered2 != delivered {
		t.Errorf("after the stop the clock moved and counters changed: sent %d -> %d, arrived %d -> %d, delivered %d -> %d",
			sent, sent2, arrived, arrived2, delivered, delivered2)
	}
	st, err := tx.PktgenStatus(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Enabled || st.Packets == g.Packets() {
		t.Errorf("stopped generator reads %+v", st)
	}
}

// The simulated switch's agent asks every connection for the token the
// driver installed over SSH: a connection through the same SSH server
// without it, or with another, is refused; the driver's transcript never
// holds it.
func TestAgentRequiresTheRunsToken(t *testing.T) {
	lab := startLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, _ := lab.Inventory().Device("sw1")
	var sb strings.Builder
	sw := openWith(t, lab, "sw1", 5*time.Second, &sb)
	if err := sw.StartSwitchd(ctx, lg.ProgramSender); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), `"op":"auth","args":{"token":"***"}`) {
		t.Errorf("the transcript does not show the auth request:\n%s", sb.String())
	}
	if m := regexp.MustCompile(`[0-9a-f]{64}`).FindString(sb.String()); m != "" {
		t.Errorf("the transcript holds a token-like string %s", m)
	}

	raw, err := transport.DialSSH(ctx, d.Address, transport.SSHOptions{KeyFile: d.Credentials.KeyFile, KnownHosts: d.Options["known_hosts"], Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	for _, first := range []string{
		`{"id":1,"op":"hello"}`,
		`{"id":1,"op":"auth","args":{"token":"` + strings.Repeat("f", 64) + `"}}`,
		`{"id":1,"op":"auth"}`,
		`not json`,
	} {
		c, err := raw.DialRemote(ctx, "127.0.0.1:9091")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte(first + "\n")); err != nil {
			t.Fatal(err)
		}
		rd := bufio.NewReader(c)
		line, err := rd.ReadString('\n')
		if err != nil || !strings.Contains(line, `"ok":false`) || !strings.Contains(line, `"unauthorized"`) {
			t.Errorf("%s: answer %q %v, want an unauthorized refusal", first, line, err)
		}
		if _, err := rd.ReadString('\n'); err == nil {
			t.Errorf("%s: the connection stays open after the refusal", first)
		}
		c.Close()
	}
	// The driver still works, and so does a second driver: each adds its
	// own token to the switch's file and the agent accepts any of them
	// (TestLossSweepCancelMidStressStopsTheGenerator has a run's driver
	// reconnect after an observer's driver installed its token).
	if _, err := sw.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	sw2 := open(t, lab, "sw1", 5*time.Second)
	if _, err := sw2.Hello(ctx); err != nil {
		t.Fatalf("second driver: %v", err)
	}
}

// The sender counts every frame its emulated drop takes in
// lg.RegEmulatedDrops, from the drops drawn: with the fibre clean, the
// count is the frames lost, and it sits within binomial bounds of the
// table's rate; LinkGuardian on, the same count with nothing lost.
func TestEmulatedDropsCountedAtTheSwitch(t *testing.T) {
	_, tx, rx, p, sink := startLG100Stress(t)
	ctx := context.Background()
	const rate = 2e-3
	entries := lg.DropTableEntries(rate)
	for i := range entries {
		if err := tx.AddEntry(ctx, lg.TableEmulateDrop, tofino.Entry{Key: map[string]int64{lg.KeyRandNum: int64(i)}, Action: lg.ActionDrop}); err != nil {
			t.Fatal(err)
		}
	}
	drops := func() int64 {
		v, err := tx.ReadRegister(ctx, lg.RegEmulatedDrops, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(v) == 0 {
			t.Fatalf("%s read no value", lg.RegEmulatedDrops)
		}
		return v[0]
	}
	run := func(protect bool) (counted, lost, fcs int64) {
		for _, c := range []struct {
			s    *tofino.Switch
			port int
		}{{tx, p}, {rx, p}, {rx, sink}} {
			if err := c.s.ClearPortCounters(ctx, c.port); err != nil {
				t.Fatal(err)
			}
		}
		if protect {
			if err := tx.AddEntry(ctx, lg.TableLinkProtect, tofino.Entry{Key: map[string]int64{"egress_port": int64(p)}, Action: lg.ActionProtect,
				Data: map[string]int64{"dummy_pkt_max_count": 4, "blocking_mode": 0}}); err != nil {
				t.Fatal(err)
			}
			if err := tx.AddEntry(ctx, lg.TableRetxMcast, tofino.Entry{Key: map[string]int64{"egress_port": int64(p)}, Action: lg.ActionRetxCopies,
				Data: map[string]int64{"num_copies": 2}}); err != nil {
				t.Fatal(err)
			}
			setupLG(t, ctx, tx, rx, p, p, 2) // setup_test.go
		}
		before := drops()
		g := tofino.Pktgen{AppID: 1, Port: 68, EgressPort: p, PacketBytes: 1514, Interval: 124 * time.Nanosecond, Batches: 10, PerBatch: 20000}
		if err := tx.StartPktgen(ctx, g); err != nil {
			t.Fatal(err)
		}
		for {
			st, err := tx.PktgenStatus(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			if st.Done {
				break
			}
		}
		tc, err := tx.PortCounters(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rx.PortCounters(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := rx.PortCounters(ctx, sink)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("protect %v: on the wire %d, FCS errors %d, delivered %d", protect, tc.Values["$FramesTransmittedAll"], rc.Values["$FramesReceivedwithFCSError"], sc.Values["$FramesTransmittedOK"])
		return drops() - before, g.Packets() - sc.Values["$FramesTransmittedOK"], rc.Values["$FramesReceivedwithFCSError"]
	}
	// Unprotected, every emulated drop is a frame lost: the count is the
	// frames lost, within 5 sigma of n*p.
	const n = 200000
	p0 := float64(entries) / (1 << lg.DropRandomBits)
	mean, sigma := n*p0, math.Sqrt(n*p0*(1-p0))
	counted, lost, fcs := run(false)
	t.Logf("off: %d counted at the switch, %d lost, %d FCS errors (n*p = %.0f)", counted, lost, fcs, mean)
	if counted != lost || counted > fcs {
		t.Errorf("off: the switch counted %d emulated drops, %d frames were lost (%d FCS errors)", counted, lost, fcs)
	}
	if math.Abs(float64(counted)-mean) > 5*sigma {
		t.Errorf("off: %d emulated drops of %d frames at %g, want %.0f +- %.0f", counted, n, p0, mean, 5*sigma)
	}
	// Protected: the table still takes originals and copies; the link
	// repairs them, so nothing is lost while the switch counts them.
	counted, lost, fcs = run(true)
	t.Logf("protected: %d counted at the switch, %d lost, %d FCS errors", counted, lost, fcs)
	if counted == 0 || lost != 0 || counted > fcs {
		t.Errorf("protected: the switch counted %d emulated drops, %d frames lost, %d FCS errors", counted, lost, fcs)
	}
}

// startLG100Stress starts the simulated lab with sw1 and sw2 running
// LinkGuardian's sender and receiver, lg100's port (p) added at 100G on
// both and sw2's sink port, and lights the fibre (the attenuators power up
// with their shutters closed, and these tests drive the switches without a
// recipe); it returns once p is up on the sender.
func startLG100Stress(t *testing.T) (lab *simlab.Lab, tx, rx *tofino.Switch, p, sink int) {
	t.Helper()
	lab = startLab(t)
	ctx := context.Background()
	tx = open(t, lab, "sw1", 5*time.Second)
	rx = open(t, lab, "sw2", 5*time.Second)
	if err := tx.StartSwitchd(ctx, lg.ProgramSender); err != nil {
		t.Fatal(err)
	}
	if err := rx.StartSwitchd(ctx, lg.ProgramReceiver); err != nil {
		t.Fatal(err)
	}
	p = dev(t, lab, "sw1", "p1")
	sink = dev(t, lab, "sw2", "sink")
	for _, c := range []struct {
		s    *tofino.Switch
		port int
	}{{tx, p}, {rx, p}, {rx, sink}} {
		if err := c.s.AddPort(ctx, c.port, 100, "none"); err != nil {
			t.Fatal(err)
		}
	}
	if v, ok := lab.World().VOA("voa3"); ok {
		for _, ch := range v.Channels {
			ch.SetShutter(true)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := tx.WaitPortUp(wctx, p); err != nil {
		t.Fatal(err)
	}
	return lab, tx, rx, p, sink
}

// checkPortFrames reads a port's typed frame counters, whole and in
// subsets, and checks them against a read of its raw $PORT_STAT fields
// (c) made after the traffic settled.
func checkPortFrames(t *testing.T, ctx context.Context, s *tofino.Switch, port int, c tofino.Counters) {
	t.Helper()
	v := c.Values
	pf, err := s.PortFrames(ctx, port)
	if err != nil {
		t.Fatalf("port %d frames: %v", port, err)
	}
	want := tofino.PortFrames{Time: pf.Time, TxOK: v["$FramesTransmittedOK"], TxAll: v["$FramesTransmittedAll"], TxOctets: v["$OctetsTransmittedTotal"],
		TxPriPause: v["$FramesTransmittedPriPause"], RxOK: v["$FramesReceivedOK"], RxAll: v["$FramesReceivedAll"], RxFCSErrors: v["$FramesReceivedwithFCSError"]}
	if pf != want || pf.Time < c.Time {
		t.Errorf("port %d frames %+v, want %+v (raw %v)", port, pf, want, v)
	}
	if pf.TxAll+pf.RxAll == 0 {
		t.Errorf("port %d: no frames counted: %+v", port, pf)
	}
	// A subset: only its fields, the others 0.
	sub, err := s.PortFramesOf(ctx, port, tofino.FrameQuery{Fields: tofino.FramesRxAll | tofino.FramesRxFCSErrors})
	if err != nil || sub != (tofino.PortFrames{Time: sub.Time, RxAll: pf.RxAll, RxFCSErrors: pf.RxFCSErrors}) {
		t.Errorf("port %d frames received: %+v %v, want those of %+v", port, sub, err, pf)
	}
	// Frame sizes: the RMON ranges overlapping the range asked, summed.
	var big int64
	for _, n := range []string{"128_255", "256_511", "512_1023", "1024_1518", "1519_2047", "2048_4095", "4096_8191", "8192_9215", "9216"} {
		big += v["$FramesTransmittedLength_"+n]
	}
	one := v["$FramesTransmittedLength_1024_1518"]
	for _, q := range []struct {
		r    tofino.SizeRange
		want int64
	}{{tofino.SizeRange{Min: 128}, big}, {tofino.SizeRange{Min: 1518, Max: 1518}, one}, {tofino.SizeRange{Min: 1100, Max: 1200}, one},
		{tofino.SizeRange{Min: 1, Max: 127}, pf.TxAll - big}} {
		got, err := s.PortFramesOf(ctx, port, tofino.FrameQuery{TxSizes: q.r})
		if err != nil || got.TxSized != q.want || got.TxAll != 0 {
			t.Errorf("port %d frames sent of %+v: %+v %v, want TxSized %d", port, q.r, got, err, q.want)
		}
	}
	for _, q := range []tofino.FrameQuery{{}, {Fields: 1 << 20}, {TxSizes: tofino.SizeRange{Min: 200, Max: 100}}, {TxSizes: tofino.SizeRange{Max: 100}}} {
		if _, err := s.PortFramesOf(ctx, port, q); err == nil {
			t.Errorf("port %d frames of %+v: no error", port, q)
		}
	}
}

// Inter-batch jitter (ibg_jitter) rides pktgen.start to the switch; the
// simulated switch times it only where a dataplane follows the frames one
// by one (a Stardust program's), so a LinkGuardian line-rate application
// with jitter is refused rather than run without it. The driver refuses a
// negative jitter and jitter on a periodic timer before asking.
func TestPktgenJitterReachesTheSwitch(t *testing.T) {
	_, tx, _, p, _ := startLG100Stress(t)
	ctx := context.Background()
	g := tofino.Pktgen{AppID: 1, Port: 68, EgressPort: p, PacketBytes: 1514, Interval: 124 * time.Nanosecond, Batches: 10, PerBatch: 1, IntervalJitter: 100 * time.Nanosecond}
	if err := tx.StartPktgen(ctx, g); err == nil || !strings.Contains(err.Error(), "ibg_jitter_ns 100") {
		t.Errorf("jitter on a LinkGuardian application: %v, want the switch to refuse ibg_jitter_ns 100", err)
	}
	for _, bad := range []tofino.Pktgen{{IntervalJitter: -time.Nanosecond}, {IntervalJitter: time.Nanosecond, Periodic: true}} {
		b := g
		b.IntervalJitter, b.Periodic = bad.IntervalJitter, bad.Periodic
		if err := tx.StartPktgen(ctx, b); err == nil || !strings.Contains(err.Error(), "jitter") {
			t.Errorf("jitter %v, periodic %v: %v", b.IntervalJitter, b.Periodic, err)
		}
	}
	if st, err := tx.PktgenStatus(ctx, 1); err == nil && st.Enabled {
		t.Errorf("a refused application runs: %+v", st)
	}
}

// An agent that dies at start (here: bf_switchd runs no program, so
// bfshell cannot reach it) never answers: EnsureAgent gives up at the
// switch's StartTimeout, not only at its caller's deadline, which a
// recipe's step does not set (it asked forever).
func TestEnsureAgentGivesUpAtStartTimeout(t *testing.T) {
	lab := startLab(t)
	d, _ := lab.Inventory().Device("sw1")
	var sb strings.Builder
	sw, err := tofino.Open(context.Background(), d.Address, tofino.Options{Timeout: 10 * time.Second, StartTimeout: 500 * time.Millisecond,
		SSH:        transport.SSHOptions{KeyFile: d.Credentials.KeyFile, KnownHosts: d.Options["known_hosts"]},
		Transcript: transport.NewTranscript(&sb)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	// The caller's deadline only guards the test: it must not be the one
	// that ends the wait.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = sw.EnsureAgent(ctx)
	if err == nil {
		t.Fatal("EnsureAgent answered for a switch that runs no program")
	}
	if ctx.Err() != nil || !strings.Contains(err.Error(), "not within 500ms") {
		t.Fatalf("EnsureAgent = %v (caller's context: %v), want it to give up at StartTimeout", err, ctx.Err())
	}
}
