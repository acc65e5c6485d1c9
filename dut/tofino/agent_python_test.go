package tofino

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"testbed/internal/proctest"
	"testbed/transport"
)

// The switch agent itself (agent/testbed_agent.py) is Python that runs
// inside bfrt_python; these tests run it against the stand-in bfrt of
// agent/fake_bfrt.py: its own unit tests, and the driver's client talking to
// it over TCP.

// python is the interpreter's own path (sys.executable), found once per
// test binary: python3 on PATH may be a version manager's shim (pyenv's
// is a shell script that runs pyenv: some 0.6 s of CPU before Python
// starts), which every agent a test starts would pay again.
func python(t *testing.T) string {
	t.Helper()
	pythonOnce.Do(func() { pythonPath, pythonSkip = findPython() })
	if pythonSkip != "" {
		t.Skip(pythonSkip)
	}
	return pythonPath
}

// Python is python for the package's external tests (the stand-in
// bf_switchd's interpreter), which so find it once with these.
func Python(t *testing.T) string {
	t.Helper()
	return python(t)
}

var (
	pythonOnce             sync.Once
	pythonPath, pythonSkip string
)

func findPython() (path, skip string) {
	p, err := exec.LookPath("python3")
	if err != nil {
		return "", "python3 is not on PATH: the switch agent's tests need it"
	}
	out, err := exec.Command(p, "-c", "import sys; print(sys.executable)").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return "", fmt.Sprintf("python3 (%s) does not run: %v", p, err)
	}
	return strings.TrimSpace(string(out)), ""
}

// pythonEnv keeps the interpreter from writing __pycache__ into the tree.
func pythonEnv() []string { return append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1") }

func TestAgentPythonUnittest(t *testing.T) {
	py := python(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-m", "unittest", "-v")
	cmd.Dir = "agent"
	cmd.Env = pythonEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest in dut/tofino/agent: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "\nOK") {
		t.Fatalf("unittest did not report OK:\n%s", out)
	}
	t.Logf("%s", lastLines(string(out), 3))
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

var listeningRe = regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)

// startFakeAgent runs agent/run_fake.py (the agent loaded as bfrt_python
// loads it, over the stand-in bfrt) and returns a switch whose agent client
// dials it directly, without SSH.
func startFakeAgent(t *testing.T, args ...string) *Switch {
	t.Helper()
	py := python(t)
	cmd := exec.Command(py, append([]string{filepath.Join("agent", "run_fake.py")}, args...)...)
	// The agent reads the run's token from a 0600 file, as on a switch.
	tokFile := filepath.Join(t.TempDir(), "agent_token")
	if err := os.WriteFile(tokFile, []byte(fakeToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(pythonEnv(), "TESTBED_AGENT_TOKEN_FILE="+tokFile)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := proctest.Start(t, cmd); err != nil { // it ends with this binary
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listeningRe.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
				break
			}
		}
		close(addr)
		for sc.Scan() {
		}
	}()
	var a string
	select {
	case a = <-addr:
	case <-time.After(30 * time.Second):
	}
	if a == "" {
		t.Fatal("run_fake.py did not say where it listens")
	}
	return fakeAgentSwitch(t, a, fakeToken)
}

// fakeToken is the token startFakeAgent's agent asks for.
const fakeToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// fakeAgentSwitch is a switch whose agent client dials addr directly,
// without SSH, and presents tok.
func fakeAgentSwitch(t *testing.T, addr, tok string) *Switch {
	s := &Switch{opts: Options{Timeout: 5 * time.Second}}
	s.agent = &agentClient{
		dial: func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		},
		token:   func(context.Context) (string, error) { return tok, nil },
		timeout: 5 * time.Second,
	}
	t.Cleanup(s.agent.close)
	return s
}

// The python agent serves only a client with the run's token; the Go
// client reports its refusal as an unauthorized AgentError.
func TestAgentPythonRefusesWrongToken(t *testing.T) {
	s := startFakeAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	addr := s.agent.(*agentClient).conn.RemoteAddr().String()
	for _, tok := range []string{"", strings.Repeat("f", 64), fakeToken[:63]} {
		_, err := fakeAgentSwitch(t, addr, tok).Hello(ctx)
		var ae *AgentError
		if !errors.As(err, &ae) || ae.Kind != "unauthorized" {
			t.Errorf("token %q: %v, want an unauthorized refusal", tok, err)
		}
	}
}

func TestAgentPythonWithGoClient(t *testing.T) {
	const (
		pktgenPort = 68
		dev        = 136
		seq        = "SwitchEgress.reg_seq_no"
		protect    = "SwitchEgress.link_protect"
	)
	// A queue of port 196 (pipe 1, pg_id 17), queue 1: pg_queue 0*8+1.
	s := startFakeAgent(t, "--queue", "1:17:1:40:90:3", "--counter", "136:$FramesReceivedOK:1234")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	h, err := s.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Agent != "testbed-bfrt-agent" || h.Version != AgentVersion || h.Program != "sender" {
		t.Fatalf("hello %+v", h)
	}
	if d := time.Since(time.Unix(0, h.TimeNs)); d < -time.Second || d > time.Second {
		t.Errorf("agent clock off by %v", d)
	}

	// Ports.
	if _, err := s.PortStatus(ctx, dev); !IsNotFound(err) {
		t.Fatalf("status of a port not added: %v", err)
	}
	if err := s.AddPort(ctx, dev, 100, "rs528"); err != nil {
		t.Fatal(err)
	}
	var ae *AgentError
	if err := s.AddPort(ctx, dev, 100, "rs528"); !errors.As(err, &ae) || ae.Kind != "bfrt" || !strings.Contains(ae.Message, "Already exists") {
		t.Fatalf("second add: %v", err)
	}
	ps, err := s.PortStatus(ctx, dev)
	if err != nil {
		t.Fatal(err)
	}
	if ps != (PortStatus{DevPort: dev, Enabled: true, Up: true, Speed: "BF_SPEED_100G", FEC: "BF_FEC_TYP_RS", SpeedGbps: 100}) {
		t.Fatalf("status %+v", ps)
	}
	if err := s.WaitPortUp(ctx, dev); err != nil {
		t.Fatal(err)
	}
	prev, err := s.SetPortMode(ctx, dev, 25, "fc")
	if err != nil || prev != (PortMode{Speed: "BF_SPEED_100G", FEC: "BF_FEC_TYP_RS", Enabled: true}) {
		t.Fatalf("set mode: %+v, %v", prev, err)
	}
	if ps, err := s.PortStatus(ctx, dev); err != nil || ps.SpeedGbps != 25 || ps.FEC != "BF_FEC_TYP_FC" || !ps.Enabled {
		t.Fatalf("after set mode: %+v, %v", ps, err)
	}
	if ts, err := s.TxTimestamp(ctx, dev); err != nil || ts != (TxStamp{}) {
		t.Fatalf("tx timestamp before any: %+v, %v", ts, err)
	}
	if _, err := s.SetPortMode(ctx, dev, 25, "kr4"); err == nil {
		t.Error("unknown FEC accepted")
	}
	if err := s.RestorePortMode(ctx, dev, prev); err != nil {
		t.Fatal(err)
	}
	if ps, err := s.PortStatus(ctx, dev); err != nil || ps.SpeedGbps != 100 || ps.FEC != "BF_FEC_TYP_RS" {
		t.Fatalf("after restore: %+v, %v", ps, err)
	}
	c, err := s.PortCounters(ctx, dev)
	if err != nil {
		t.Fatal(err)
	}
	if c.Values["$FramesReceivedOK"] != 1234 || len(c.Values) < 10 {
		t.Fatalf("counters %v", c.Values)
	}
	if _, ok := c.Values["$FramesTransmittedAll"]; !ok {
		t.Fatalf("no $FramesTransmittedAll in %v", c.Values)
	}
	if d := time.Since(time.Unix(0, int64(c.Time))); d < 0 || d > 10*time.Second {
		t.Errorf("counters read at %v, %v ago", c.Time, d)
	}
	if err := s.ClearPortCounters(ctx, dev); err != nil {
		t.Fatal(err)
	}
	if c, err := s.PortCounters(ctx, dev); err != nil || c.Values["$FramesReceivedOK"] != 0 {
		t.Fatalf("after clear: %v %v", c.Values, err)
	}

	// Traffic manager.
	q, err := s.Queue(ctx, 196, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	if q != (QueueUsage{UsageCells: 40, WatermarkCells: 90, DropPackets: 3}) {
		t.Fatalf("queue %+v", q)
	}
	if q, err := s.Queue(ctx, 196, 1, false); err != nil || q.WatermarkCells != 0 || q.UsageCells != 40 {
		t.Fatalf("queue after clearing its watermark: %+v %v", q, err)
	}
	if q, err := s.Queue(ctx, 196, 2, false); err != nil || q != (QueueUsage{}) {
		t.Fatalf("another queue: %+v %v", q, err)
	}
	for _, c := range []struct{ prio, prev int }{{7, 0}, {2, 7}, {2, 2}, {0, 2}} {
		if prev, err := s.SetQueuePriority(ctx, 196, 3, c.prio); err != nil || prev != c.prev {
			t.Fatalf("queue priority %d: previous %d %v, want %d", c.prio, prev, err, c.prev)
		}
	}
	if p, err := s.QueuePriority(ctx, 196, 3); err != nil || p != 0 {
		t.Fatalf("queue priority read back: %d %v, want 0", p, err)
	}
	if _, err := s.SetQueuePriority(ctx, 100, 3, 1); !IsNotFound(err) {
		t.Errorf("priority of a queue of a port beyond the pipe's 72: %v", err)
	}
	if _, err := s.SetQueuePriority(ctx, 196, 3, 8); err == nil || !strings.Contains(err.Error(), "expected 0..7") {
		t.Errorf("priority 8: %v", err)
	}

	// Registers.
	if err := s.WriteRegister(ctx, seq, 32, 4242); err != nil {
		t.Fatal(err)
	}
	v, err := s.ReadRegister(ctx, seq, 32)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 4 || v[0] != 4242 || v[3] != 4242 {
		t.Fatalf("register values %v", v)
	}
	if err := s.WriteRegister(ctx, seq, 34, 7); err != nil {
		t.Fatal(err)
	}
	// Summed over the four pipes.
	if v, err := s.ReadRegisterRange(ctx, seq, 31, 5); err != nil || !slices.Equal(v, []int64{0, 4 * 4242, 0, 4 * 7, 0}) {
		t.Fatalf("register range: %v %v", v, err)
	}
	if _, err := s.ReadRegisterRange(ctx, seq, 510, 3); !IsNotFound(err) {
		t.Fatalf("a range past the register's 512 indices: %v", err)
	}
	if _, err := s.ReadRegisterRange(ctx, seq, 0, MaxRegisterRange+1); err == nil {
		t.Fatal("a range of 4097 indices accepted")
	}
	if _, err := s.ReadRegister(ctx, "SwitchEgress.reg_nope", 0); !IsNotFound(err) {
		t.Fatalf("unknown register: %v", err)
	}
	if _, err := s.ReadRegister(ctx, protect, 0); !IsNotFound(err) {
		t.Fatalf("a table read as a register: %v", err)
	}

	// Tables.
	e := Entry{Key: map[string]int64{"egress_port": dev}, Action: "protect", Data: map[string]int64{"dummy_pkt_max_count": 4, "blocking_mode": 1}}
	if err := s.AddEntry(ctx, protect, e); err != nil {
		t.Fatal(err)
	}
	if err := s.AddEntry(ctx, protect, e); !errors.As(err, &ae) || ae.Kind != "bfrt" {
		t.Fatalf("duplicate entry: %v", err)
	}
	if err := s.AddEntry(ctx, protect, Entry{Key: e.Key, Action: "unprotect"}); !IsNotFound(err) {
		t.Fatalf("unknown action: %v", err)
	}
	if err := s.AddEntry(ctx, "SwitchIngress.retx_mcast_buffered_pkt", Entry{Key: map[string]int64{"egress_port": dev}, Action: "set_retx_copies", Data: map[string]int64{"num_copies": 2}}); err != nil {
		t.Fatal(err)
	}
	es, err := s.Entries(ctx, protect)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Action != "protect" || es[0].Key["egress_port"] != dev || es[0].Data["dummy_pkt_max_count"] != 4 || es[0].Data["blocking_mode"] != 1 {
		t.Fatalf("entries %+v", es)
	}
	if err := s.DeleteEntry(ctx, protect, e.Key); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteEntry(ctx, protect, e.Key); !IsNotFound(err) {
		t.Fatalf("deleting a deleted entry: %v", err)
	}
	if es, err := s.Entries(ctx, protect); err != nil || len(es) != 0 {
		t.Fatalf("entries after delete: %+v %v", es, err)
	}
	if err := s.ClearTable(ctx, "SwitchIngress.retx_mcast_buffered_pkt"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Entries(ctx, "SwitchEgress.nope"); !IsNotFound(err) {
		t.Fatalf("unknown table: %v", err)
	}

	// Packet generator: 10 x 100 packets of 1514 B, one every 124 ns.
	p := Pktgen{AppID: 1, Port: pktgenPort, EgressPort: dev, PacketBytes: 1514, Interval: 124 * time.Nanosecond, Batches: 10, PerBatch: 100}
	if err := s.StartPktgen(ctx, p); err != nil {
		t.Fatal(err)
	}
	var st PktgenStatus
	err = transport.Poll(ctx, func() (bool, error) {
		var err error
		st, err = s.PktgenStatus(ctx, p.AppID)
		return st.Done, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if st != (PktgenStatus{Enabled: false, Packets: p.Packets(), Done: true}) {
		t.Fatalf("pktgen status %+v", st)
	}
	if err := s.StopPktgen(ctx, p.AppID); err != nil {
		t.Fatal(err)
	}
	// A frame of the caller's: 26 bytes in a 64 B packet are accepted, 59
	// refused before they are sent.
	cell := Pktgen{AppID: 3, Port: pktgenPort, EgressPort: dev, PacketBytes: 64, Interval: time.Microsecond, Batches: 1, PerBatch: 1, Buffer: make([]byte, 26)}
	cell.Buffer[0], cell.Buffer[25] = 0x02, 0xee
	if err := s.StartPktgen(ctx, cell); err != nil {
		t.Fatal(err)
	}
	cell.AppID, cell.Buffer = 4, make([]byte, 59)
	if err := s.StartPktgen(ctx, cell); err == nil || IsNotFound(err) {
		t.Fatalf("a 59 B buffer in a 64 B packet: %v", err)
	}
	if _, err := s.PktgenStatus(ctx, 9); !IsNotFound(err) {
		t.Fatalf("status of app 9: %v", err)
	}
	if err := s.StartPktgen(ctx, Pktgen{AppID: 2, Port: pktgenPort, EgressPort: 140, PacketBytes: 64, Interval: time.Microsecond, Batches: 1, PerBatch: 1}); !IsNotFound(err) {
		t.Fatalf("pktgen to a port not added: %v", err)
	}

	// The switch's clock.
	now, err := s.Clock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	until := now + 30*time.Millisecond
	got, err := s.WaitClock(ctx, until)
	if err != nil {
		t.Fatal(err)
	}
	if got < until {
		t.Fatalf("WaitClock(%v) answered at %v", until, got)
	}
	if _, err := s.WaitClock(ctx, got+time.Hour); !errors.As(err, &ae) || ae.Kind != "bad_request" {
		t.Fatalf("waiting an hour: %v", err)
	}

	// Ports go away.
	if err := s.DeletePort(ctx, dev); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePort(ctx, dev); !IsNotFound(err) {
		t.Fatalf("deleting a deleted port: %v", err)
	}
}

// The client redials when the agent's connection is lost, and the agent
// serves the new connection.
func TestAgentPythonReconnect(t *testing.T) {
	s := startFakeAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	s.agent.(*agentClient).mu.Lock()
	s.agent.(*agentClient).conn.Close() // as if the SSH channel dropped
	s.agent.(*agentClient).mu.Unlock()
	if _, err := s.Hello(ctx); err != nil {
		t.Fatalf("after losing the connection: %v", err)
	}
}

// The setup ops and the FEC counters through the driver, served by the
// Python agent over the stand-in bfrt (and the stand-in port manager and
// CPU port): what the bench does to a real switch, as a real switch's
// agent answers it.
func TestAgentPythonSetupAndFEC(t *testing.T) {
	s := startFakeAgent(t, "--fec", "136:17:2")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.AddPort(ctx, 136, 100, "rs528"); err != nil {
		t.Fatal(err)
	}
	c, err := s.FECCounters(ctx, 136)
	if err != nil || c.Corrected != 17 || c.Uncorrected != 2 || !c.Aligned {
		t.Errorf("FEC counters: %+v %v, want 17 corrected, 2 uncorrected, aligned", c, err)
	}
	m := MirrorSession{ID: 0x108, Direction: "EGRESS", Port: 196, Queue: 1, MaxPktLen: 16384, Enabled: true}
	if err := s.AddMirror(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Mirror(ctx, m.ID); err != nil || got != m {
		t.Errorf("mirror session: %+v %v, want %+v", got, err, m)
	}
	if err := s.AddMulticastNode(ctx, MulticastNode{ID: 9, RID: 0, DevPorts: []int{136}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddMulticastGroup(ctx, 1, []int{9}); err != nil {
		t.Fatal(err)
	}
	if ids, err := s.MulticastGroup(ctx, 1); err != nil || !slices.Equal(ids, []int{9}) {
		t.Errorf("group 1: %v %v", ids, err)
	}
	if n, err := s.MulticastNodeOf(ctx, 9); err != nil || !slices.Equal(n.DevPorts, []int{136}) {
		t.Errorf("node 9: %+v %v", n, err)
	}
	if prev, err := s.SetPFC(ctx, 136, PFC{RxMap: 1}); err != nil || prev != (PFC{}) {
		t.Errorf("PFC: previous %+v %v", prev, err)
	}
	if p, err := s.PFCOf(ctx, 136); err != nil || p.RxMap != 1 {
		t.Errorf("PFC read back: %+v %v", p, err)
	}
	if prev, err := s.SetQueuePFCCos(ctx, 136, 7, 7); err != nil || prev != 0 {
		t.Errorf("queue 7's PFC class: previous %d %v", prev, err)
	}
	if err := s.AddPort(ctx, 196, 100, "none"); err != nil {
		t.Fatal(err)
	}
	timer := Pktgen{AppID: 7, Port: 196, EgressPort: 136, PacketBytes: 64, Interval: 100 * time.Nanosecond, Batches: 1, PerBatch: 1, Periodic: true}
	if err := s.StartPktgen(ctx, timer); err != nil {
		t.Fatal(err)
	}
	if st, err := s.PktgenStatus(ctx, 7); err != nil || !st.Enabled || st.Done {
		t.Errorf("periodic timer: %+v %v, want running and never done", st, err)
	}
	if err := s.StopPktgen(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if err := s.PacketOut(ctx, make([]byte, 60)); err != nil {
		t.Errorf("packet out: %v", err)
	}
}

// A table.add whose answer was lost is found done by reading the entry
// back, as the switch keeps it: a ternary value outside its mask reads back
// without those bits (the driver ANDs them away), and is still the
// request; another priority or another value under the mask is not.
func TestAgentPythonReconcilesAMaskedKey(t *testing.T) {
	s := startFakeAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const name = "SwitchIngress.decide_retx_or_drop"
	key := map[string]int64{"is_missing_hole_1": 1, "is_missing_hole_1_mask": 0, "MATCH_PRIORITY": 7}
	if err := s.AddEntry(ctx, name, Entry{Key: key, Action: "retx"}); err != nil {
		t.Fatal(err)
	}
	args := func(k map[string]int64) map[string]any {
		return map[string]any{"name": name, "action": "retx", "key": k, "data": map[string]int64{}}
	}
	a := s.agent.(*agentClient)
	if same, err := reconcileTableAdd(ctx, a, args(key)); err != nil || !same {
		t.Errorf("the entry added, read back with its value masked: same %v, %v; want the request", same, err)
	}
	other := maps.Clone(key)
	other["MATCH_PRIORITY"] = 8
	if same, err := reconcileTableAdd(ctx, a, args(other)); err != nil || same {
		t.Errorf("another priority: same %v, %v; want not the request", same, err)
	}
	if err := s.AddEntry(ctx, name, Entry{Key: map[string]int64{"is_missing_hole_1": 0, "is_missing_hole_1_mask": 1, "MATCH_PRIORITY": 9}, Action: "retx"}); err != nil {
		t.Fatal(err)
	}
	if same, err := reconcileTableAdd(ctx, a, args(map[string]int64{"is_missing_hole_1": 1, "is_missing_hole_1_mask": 1, "MATCH_PRIORITY": 9})); err != nil || same {
		t.Errorf("another value under the mask: same %v, %v; want not the request", same, err)
	}
}

// A group whose add lost its answer is found done by reading it back from
// the agent over the stand-in bfrt, which gives the group's nodes in the
// order of their handles in the multicast manager (the lowest free when
// each node was added), as the device does: not the add's order and not
// the nodes' ids. The driver compares them as a set; another set is not
// the request.
func TestAgentPythonReconcilesAGroupReadBackOutOfOrder(t *testing.T) {
	s := startFakeAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Handles: 20 gets 0, 10 gets 1, 30 gets 2; 20 deleted frees 0 for 40.
	for _, id := range []int{20, 10, 30} {
		if err := s.AddMulticastNode(ctx, MulticastNode{ID: id, RID: 1, DevPorts: []int{136}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteMulticastNode(ctx, 20); err != nil {
		t.Fatal(err)
	}
	if err := s.AddMulticastNode(ctx, MulticastNode{ID: 40, RID: 1, DevPorts: []int{136}}); err != nil {
		t.Fatal(err)
	}
	sent := []int{10, 30, 40}
	if err := s.AddMulticastGroup(ctx, 3, sent); err != nil {
		t.Fatal(err)
	}
	got, err := s.MulticastGroup(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{40, 10, 30}; !slices.Equal(got, want) {
		t.Fatalf("group 3 reads back %v, want %v (node handle order)", got, want)
	}
	reconcile := opRetries["pre.mgid.add"].reconcile
	a := s.agent.(*agentClient)
	if same, err := reconcile(ctx, a, map[string]any{"mgid": 3, "node_ids": sent}); err != nil || !same {
		t.Errorf("group 3 read back as %v against the add's %v: same %v, %v; want the request", got, sent, same, err)
	}
	if same, err := reconcile(ctx, a, map[string]any{"mgid": 3, "node_ids": []int{10, 30}}); err != nil || same {
		t.Errorf("another node set: same %v, %v; want not the request", same, err)
	}
}
