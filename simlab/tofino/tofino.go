package tofino

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	lg "testbed/p4/linkguardian"
	sd "testbed/p4/stardust"
	ts "testbed/p4/timestamp"
	"testbed/simlab/wire"
)

// Tofino is a simulated Tofino switch behind an SSH server: it runs the
// commands the driver sends (starting bf_switchd with a program, installing
// and starting the bfrt_python agent, the platform CLI's get-ddm) and
// serves the agent protocol (dut/tofino/agent/PROTOCOL.md) on its loopback
// port through direct-tcpip channels. Its ports, counters, registers and
// tables are those of the program it runs; its traffic is the shared
// Dataplane's.
type Tofino struct {
	name   string
	serial string
	dp     *Dataplane
	faults *wire.Faults
	front  map[int]int // front-panel port -> dev port
	// clockPPM is the reference clock's offset (TofinoOptions.ClockPPM).
	clockPPM *float64
	srv      *wire.SSHServer

	agentIdle  time.Duration
	agentSlots chan struct{} // one per open agent connection

	// mu guards the switch's state below. Lock order: a switch's mu
	// after the dataplane's (Dataplane.mu), never before it; a port's
	// (simPort.mu) after both. A queue that waits to ask a model
	// (simQueue.later) is read with the dataplane's lock held too.
	mu         sync.Mutex
	installed  map[string]bool              // compiled programs
	p4src      map[string]map[string][]byte // uploaded P4 sources by directory
	program    string                       // what bf_switchd runs ("" stopped)
	readyAt    time.Time                    // bfshell answers from then on
	agentFile  []byte
	agentToken string // ~/.testbed/agent_token, one token per line: the agent asks a connection for one of them
	agentPort  int
	agentUp    bool
	ports      map[int]*simPort
	regs       map[string]map[int]int64
	tables     map[string][]simEntry
	// keys holds each table's entry keys (keyString), kept with tables
	// by opTableWrite: an add, the most frequent write, learns that its
	// key is new without comparing it with every entry (the Stardust
	// bench's bring-up writes thousands; the scan was a fifth of a bench
	// run's CPU).
	keys map[string]map[string]bool
	apps map[int]*pktgenApp
	// appStarts counts the jittered applications started, so that each
	// start draws its own gaps.
	appStarts int
	queues    map[[2]int]*simQueue
	// qprio holds the scheduling priority (tf1.tm.queue.sched_cfg's
	// max_priority) of the queues tm.queue.sched set, by (dev port, qid);
	// a queue not in it has the default, queuePriorityDefault.
	qprio      map[[2]int]int
	switchdLog []string
	fec        *fecState   // PHY state (fec.go)
	setup      *setupState // mirror sessions, PRE, PFC, CPU packets (lgsetup.go)
	// sdVer counts the changes to what the Stardust dataplane reads of
	// the switch (program, ports, tables, generator applications):
	// stardust_dp.go reconfigures its fabric when it moves.
	sdVer uint64
	// bfrtStops stop the BF Runtime gRPC services (bfrt_grpc.go).
	bfrtStops []func()
}

// simPort is a port and its $PORT_STAT counters.
type simPort struct {
	dev      int
	gbps     int
	fec      string // BF_FEC_TYP_*
	enabled  bool
	counters map[string]int64
	mu       sync.Mutex
}

func (p *simPort) add(name string, n int64) {
	if p == nil || n == 0 {
		return
	}
	p.mu.Lock()
	p.counters[name] += n
	p.mu.Unlock()
}

// counterAdd is an add to a port's counter.
type counterAdd struct {
	name string
	n    int64
}

// addAll is add of each, under one taking of the port's lock.
func (p *simPort) addAll(adds ...counterAdd) {
	if p == nil {
		return
	}
	p.mu.Lock()
	for _, a := range adds {
		if a.n != 0 {
			p.counters[a.name] += a.n
		}
	}
	p.mu.Unlock()
}

func (p *simPort) fecName() string {
	switch p.fec {
	case "BF_FEC_TYP_RS":
		if p.gbps == 50 {
			return "rs544"
		}
		return "rs528"
	}
	return "none"
}

type simEntry struct {
	Key    map[string]int64 `json:"key"`
	Action string           `json:"action"`
	Data   map[string]int64 `json:"data"`
}

type pktgenApp struct {
	id         int
	egressPort int
	pktLen     int
	total      int64
	sent       int64
	done       bool
	enabled    bool
	// A Stardust program's application (buffer_hex given): its timing and
	// the cell its packet buffer carries (stardust_dp.go).
	timerNs, batches int64
	perBatch         int
	startNs          time.Duration
	// jitterNs is pktgen.start's ibg_jitter_ns: each gap between batches
	// is timerNs plus a uniform draw from 0..jitterNs, from rng (seeded
	// by the switch, the application and its start). nextPs is when the
	// fabric has its next batch due (the dataplane's ps; 0: not yet).
	jitterNs int64
	rng      *rand.Rand
	nextPs   int64
	cell     *sd.Cell
	// An ecmp program's application (ecmp.go): the headers its frames
	// carry; timed as a Stardust application is.
	ecmp *ecmpGen
	// periodic is a timer_periodic application (the LinkGuardian
	// receiver's timer): it sends perBatch frames every timerNs until
	// stopped, and carries no traffic the dataplane follows.
	periodic bool
}

type simQueue struct {
	usage, watermark int64 // bytes
	drops            int64 // frames lost to a full queue
	// later is the model whose Tx buffer queue was accounted since the
	// queue last asked it (txqueue.go): asked when the queue is read.
	later txQueueModel
}

// Objects each program declares (the names of p4/linkguardian's contract).
const senderSeqReg = "SwitchEgress." + lg.RegSeqNo

var programObjects = map[string]struct{ regs, tables []string }{
	lg.ProgramSender: {
		regs:   []string{senderSeqReg, "SwitchEgress." + lg.RegEra, lg.RegEmulatedDrops},
		tables: []string{lg.TableLinkProtect, lg.TableRetxMcast, lg.TableEmulateDrop, lg.TableL2Forward},
	},
	lg.ProgramReceiver: {
		regs: []string{lg.RegExpectedSeqNo, "SwitchIngress." + lg.RegAck, lg.RegTimeoutCount,
			lg.RegPauseThreshold, lg.RegResumeThreshold},
		tables: []string{lg.TableL2Forward},
	},
	ts.Program: {regs: []string{ts.RegRxTs, ts.RegTxTs}, tables: []string{ts.TableSnake}},
}

// TofinoOptions configure a simulated switch.
type TofinoOptions struct {
	Name, Serial string
	Authorized   []ssh.PublicKey
	Faults       *wire.Faults
	FrontPorts   map[int]int // front-panel port -> dev port, for get-ddm
	Listen       string
	// AgentIdle closes an agent connection that sends nothing for this
	// long (default 300 s, as the real agent); AgentMaxConns is how many
	// agent connections are served at once (default 8).
	AgentIdle     time.Duration
	AgentMaxConns int
	// ClockPPM, when set, is the offset of the switch's reference clock
	// from nominal in ppm (within 802.3's +-100): every port's PHY runs
	// from it. Unset, the offset is drawn from the world's seed and the
	// switch's name, so every switch of a lab has its own.
	ClockPPM *float64
}

// NewTofino starts a simulated switch with the LinkGuardian programs
// installed (compiled) and nothing running.
func NewTofino(dp *Dataplane, o TofinoOptions) (*Tofino, error) {
	if o.Faults == nil {
		o.Faults = &wire.Faults{}
	}
	if o.ClockPPM != nil && !(math.Abs(*o.ClockPPM) <= 100) {
		return nil, fmt.Errorf("switch %s: clock offset %g ppm beyond 802.3's +-100", o.Name, *o.ClockPPM)
	}
	t := &Tofino{name: o.Name, serial: o.Serial, dp: dp, faults: o.Faults, front: o.FrontPorts, clockPPM: o.ClockPPM,
		installed: map[string]bool{lg.ProgramSender: true, lg.ProgramReceiver: true},
		agentIdle: cmp.Or(o.AgentIdle, 300*time.Second), agentSlots: make(chan struct{}, cmp.Or(o.AgentMaxConns, 8))}
	t.reset("")
	srv, err := wire.NewSSHServer(wire.SSHServerOptions{Listen: o.Listen, Authorized: o.Authorized, Exec: t.exec, Tunnel: t.tunnel, Faults: o.Faults})
	if err != nil {
		return nil, err
	}
	t.srv = srv
	return t, nil
}

// SSH is the switch's SSH server.
func (t *Tofino) SSH() *wire.SSHServer { return t.srv }

// Close stops the switch.
func (t *Tofino) Close() error {
	t.mu.Lock()
	stops := t.bfrtStops
	t.bfrtStops = nil
	t.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	return t.srv.Close()
}

// reset is bf_switchd (re)starting with program: every port, counter,
// register, table and generator is gone.
func (t *Tofino) reset(program string) {
	t.program = program
	if t.dp != nil {
		t.dp.programs.Add(1) // the dataplane looks again at who runs what
	}
	t.ports = map[int]*simPort{}
	t.regs = map[string]map[int]int64{}
	t.tables = map[string][]simEntry{}
	t.keys = map[string]map[string]bool{}
	t.apps = map[int]*pktgenApp{}
	t.queues = map[[2]int]*simQueue{}
	t.qprio = map[[2]int]int{}
	t.agentUp = false
	t.fec = nil
	t.setup = newSetupState()
	t.sdVer++
	o, ok := programObjects[program]
	if !ok {
		o.regs, o.tables, ok = stardustObjects(program) // stardust.go
	}
	if !ok {
		o.regs, o.tables, _ = ecmpObjects(program) // ecmp.go
	}
	for _, r := range o.regs {
		t.regs[r] = stardustInitial(r) // stardust.go
	}
	for _, tb := range o.tables {
		t.tables[tb] = nil
	}
}

func (t *Tofino) programName() string { t.mu.Lock(); defer t.mu.Unlock(); return t.program }

func (t *Tofino) port(dev int) *simPort { t.mu.Lock(); defer t.mu.Unlock(); return t.ports[dev] }

func (t *Tofino) tableSize(name string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.tables[name])
}

func (t *Tofino) entry(table, keyField string, key int) (simEntry, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.tables[table] {
		if e.Key[keyField] == int64(key) {
			return e, true
		}
	}
	return simEntry{}, false
}

func (t *Tofino) reg(name string, idx int) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.regs[name][idx]
}

func (t *Tofino) addRegLocked(name string, idx int, d int64) {
	r, ok := t.regs[name]
	if !ok || d == 0 {
		return
	}
	v := r[idx] + d
	if strings.Contains(name, "seq_no") {
		v &= lg.SeqNoRange - 1 // a 16-bit register wraps
	}
	r[idx] = v
}

// queueTrack records a buffer's occupancy as a TM queue (bytes). With
// the dataplane's lock and t.mu held.
func (t *Tofino) queueTrack(port, q int, seg interface {
	Buffers() (int64, int64, bool)
}, segMax int64, tx bool) {
	sq := t.queue(port, q)
	sq.catchUp() // a model's reading waiting comes first (txqueue.go)
	txb, rxb, _ := seg.Buffers()
	if tx {
		rxb = txb
	}
	sq.track(rxb, segMax)
}

func (t *Tofino) countTx(dev int, n, bytes int64) {
	if p := t.port(dev); p != nil {
		p.add("$FramesTransmittedAll", n)
		p.add("$FramesTransmittedOK", n)
		p.add("$OctetsTransmittedTotal", n*bytes)
		p.add(txLength(bytes), n)
	}
}

// queuePriorityDefault is a TM queue's scheduling priority until the
// control plane sets one: the SDE sets BF_TM_SCH_PRIO_0 for every queue of
// Tofino 1 at init (bf-drivers, traffic_mgr/init/tm_tofino_default.c,
// bf_tm_tofino_set_sch_default_for_q: bf_tm_sched_q_priority_set and
// bf_tm_sched_q_remaining_bw_priority_set, with DWRR weight 1023), though
// the API's header comments say BF_TM_SCH_PRIO_7 (traffic_mgr_sch_intf.h).
// Either way every queue starts at one priority with one weight.
const queuePriorityDefault = 0

// tmPortsPerPipe is Tofino 1's ports per pipe in the traffic manager: 18
// port groups of 4.
const tmPortsPerPipe = 72

// tmQueueKey is the (dev_port, qid) a TM queue op names, checked: a
// dev_port of the chip, one of a port's 8 queues, on a port the traffic
// manager has (tf1.tm.port.cfg).
func tmQueueKey(a map[string]json.RawMessage) ([2]int, error) {
	dev, err := argInt(a, "dev_port")
	if err != nil {
		return [2]int{}, err
	}
	qid, err := argInt(a, "qid")
	if err != nil {
		return [2]int{}, err
	}
	switch {
	case dev < 0 || dev > 511:
		return [2]int{}, badReq("dev_port %d: expected 0..511", dev)
	case qid < 0 || qid > 7:
		return [2]int{}, badReq("qid %d: expected 0..7", qid)
	case dev&0x7f >= tmPortsPerPipe:
		return [2]int{}, notFound("no TM port %d (tf1.tm.port.cfg)", dev)
	}
	return [2]int{int(dev), int(qid)}, nil
}

// queueSched is tm.queue.sched: a queue's priority set, the previous one
// answered (without a priority, the queue's answered). With t.mu held.
func (t *Tofino) queueSched(a map[string]json.RawMessage) (any, error) {
	k, err := tmQueueKey(a)
	if err != nil {
		return nil, err
	}
	// Without a priority the call reads the queue's.
	prio, set := int64(0), a["priority"] != nil
	if set {
		if prio, err = argInt(a, "priority"); err != nil {
			return nil, err
		}
		if prio < 0 || prio > 7 {
			return nil, badReq("priority %d: expected 0..7", prio)
		}
	}
	prev, ok := t.qprio[k]
	if !ok {
		prev = queuePriorityDefault
	}
	if set {
		t.qprio[k] = int(prio)
	}
	return map[string]any{"priority": prev}, nil
}

// queuePriority is the scheduling priority of queue qid of port dev. With
// t.mu held.
func (t *Tofino) queuePriority(dev, qid int) int {
	if p, ok := t.qprio[[2]int{dev, qid}]; ok {
		return p
	}
	return queuePriorityDefault
}

// ---- shell commands ----

// pipelineLoadTime is how long the simulated switch takes to load a P4
// program into its pipes: bf_switchd's start with it (over SSH, bfshell
// answers from then on) and a warm init with it over BF Runtime (answered
// from then on). A real Tofino takes seconds; this is short enough for
// tests and long enough that a driver which does not wait for it, or
// bounds the wait by less, is seen to fail.
const pipelineLoadTime = 150 * time.Millisecond

var (
	opRe      = regexp.MustCompile(`^# testbed:([a-z0-9-]+)`)
	progRe    = regexp.MustCompile(`run_switchd\.sh"? -p ([A-Za-z0-9_-]+)`)
	agentPort = regexp.MustCompile(`TESTBED_AGENT_PORT=(\d+)`)
	ddmRe     = regexp.MustCompile(`get-ddm (\d+)`)
)

func (t *Tofino) exec(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
	if d := t.faults.Delay(); d > 0 {
		time.Sleep(d)
	}
	if t.faults.TakeDrop() {
		t.srv.DropConnections()
		return 255
	}
	m := opRe.FindStringSubmatch(cmd)
	if m == nil {
		fmt.Fprintf(stderr, "sh: the simulated switch runs only the driver's scripts (first line \"# testbed:<op>\"), not %q\n", firstLineOf(cmd))
		return 127
	}
	if e, ok := t.faults.TakeFailure(); ok {
		fmt.Fprintln(stderr, e.Message)
		return max(1, e.Code)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch m[1] {
	case "identity":
		fmt.Fprintf(stdout, "hostname=%s\nplatform=Wedge100BF-32X (simulated)\nserial=%s\nsde=9.13.0\n", t.name, t.serial)
	case "switchd-status":
		if t.program != "" {
			fmt.Fprintf(stdout, "4242 /opt/bf-sde/install/bin/bf_switchd --install-dir /opt/bf-sde/install --conf-file /opt/bf-sde/install/share/p4/targets/tofino/%s.conf --background\n", t.program)
		}
	case "switchd-start":
		p := progRe.FindStringSubmatch(cmd)
		if p == nil {
			fmt.Fprintln(stderr, "run_switchd.sh: no -p <program>")
			return 1
		}
		t.mu.Unlock()
		t.dp.stopAll(t)
		t.mu.Lock()
		if !t.installed[p[1]] {
			// As the real script: it starts, fails to find the conf, exits.
			t.reset("")
			t.switchdLog = append(t.switchdLog, "ERROR: "+p[1]+".conf not found; build and install the program first")
		} else {
			t.reset(p[1])
			t.readyAt = time.Now().Add(pipelineLoadTime) // bf_switchd takes a while to come up
		}
		fmt.Fprintln(stdout, "started")
	case "p4-upload":
		t.mu.Unlock()
		rc := t.p4Upload(cmd, stdin, stdout, stderr)
		t.mu.Lock()
		return rc
	case "p4-build":
		return t.p4Build(cmd, stdout, stderr)
	case "agent-sha":
		if t.agentFile != nil {
			s := sha256.Sum256(t.agentFile)
			fmt.Fprintf(stdout, "%s  /home/admin/.testbed/testbed_agent.py\n", hex.EncodeToString(s[:]))
		}
	case "agent-install":
		t.mu.Unlock()
		data, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
		t.mu.Lock()
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		t.agentFile = data
	case "agent-token":
		t.mu.Unlock()
		data, err := io.ReadAll(io.LimitReader(stdin, 4096))
		t.mu.Lock()
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		// As the driver's script: the token is added, the last
		// agentTokensKept kept, and any of them is accepted.
		toks := append(strings.Fields(t.agentToken), strings.Fields(string(data))...)
		if len(toks) > agentTokensKept {
			toks = toks[len(toks)-agentTokensKept:]
		}
		t.agentToken = strings.Join(toks, "\n")
	case "agent-start":
		if t.agentFile == nil {
			fmt.Fprintln(stdout, "started") // nohup: the error goes to agent.log
			break
		}
		p := agentPort.FindStringSubmatch(cmd)
		if p == nil || t.program == "" || time.Now().Before(t.readyAt) {
			fmt.Fprintln(stdout, "started") // bfshell cannot connect: the agent dies, see agent.log
			break
		}
		t.agentPort, _ = strconv.Atoi(p[1])
		t.agentUp = true
		fmt.Fprintln(stdout, "started")
	case "ddm":
		p := ddmRe.FindStringSubmatch(cmd)
		if p == nil || t.program == "" {
			fmt.Fprintln(stderr, "bfshell: cannot connect to switchd")
			return 1
		}
		front, _ := strconv.Atoi(p[1])
		dev, ok := t.front[front]
		if !ok {
			fmt.Fprintf(stdout, "bf-sde.bf_pltfm.qsfp> get-ddm %d\nQSFP %d not present\n", front, front)
			break
		}
		fmt.Fprintf(stdout, "bf-sde.bf_pltfm.qsfp> get-ddm %d\n", front)
		t.mu.Unlock()
		lanes, rx, tx := t.dp.optics(t, dev)
		t.mu.Lock()
		for i := 1; i <= lanes; i++ {
			fmt.Fprintf(stdout, "Channel %d:  %.2fdBm  %.2fdBm  %.2fmA\n", i, rx, tx, 6.5)
		}
	default:
		fmt.Fprintf(stderr, "sh: unsupported operation %q\n", m[1])
		return 127
	}
	return 0
}

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func (t *Tofino) tunnel(host string, port int) (func(io.ReadWriteCloser), bool) {
	if host != "127.0.0.1" && host != "localhost" {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ready := t.program != "" && !time.Now().Before(t.readyAt)
	switch {
	case port == 9999 && ready:
		return func(c io.ReadWriteCloser) { c.Close() }, true
	case port == t.agentPort && t.agentUp && ready:
		return t.serveAgent, true
	}
	return nil, false
}

// ---- the agent protocol ----

type agentReq struct {
	ID   int64                      `json:"id"`
	Op   string                     `json:"op"`
	Args map[string]json.RawMessage `json:"args"`
}

type agentErr struct{ kind, msg string }

func (e *agentErr) Error() string { return e.msg }

func badReq(f string, a ...any) error   { return &agentErr{"bad_request", fmt.Sprintf(f, a...)} }
func notFound(f string, a ...any) error { return &agentErr{"not_found", fmt.Sprintf(f, a...)} }

func (t *Tofino) serveAgent(c io.ReadWriteCloser) {
	defer c.Close()
	select {
	case t.agentSlots <- struct{}{}:
		defer func() { <-t.agentSlots }()
	default:
		out, _ := json.Marshal(map[string]any{"id": 0, "ok": false, "error": map[string]string{"kind": "busy", "message": fmt.Sprintf("%d connections already open", cap(t.agentSlots))}})
		c.Write(append(out, '\n'))
		return
	}
	// As the real agent: a connection quiet for agentIdle is closed.
	idle := time.AfterFunc(t.agentIdle, func() { c.Close() })
	defer idle.Stop()
	rd := bufio.NewReader(c)
	authed := false
	for {
		idle.Reset(t.agentIdle)
		line, err := rd.ReadBytes('\n')
		if err != nil {
			return
		}
		if !idle.Stop() {
			return // closed for idleness while the line arrived
		}
		if !authed {
			// As the real agent: the first line presents the token in
			// ~/.testbed/agent_token, or the connection is refused.
			t.mu.Lock()
			want := t.agentToken
			t.mu.Unlock()
			resp, ok := agentAuth(line, want)
			out, _ := json.Marshal(resp)
			if _, err := c.Write(append(out, '\n')); err != nil || !ok {
				return
			}
			authed = true
			continue
		}
		if d := t.faults.Delay(); d > 0 {
			time.Sleep(d)
		}
		if t.faults.TakeDrop() {
			t.srv.DropConnections()
			return
		}
		if t.faults.TakeStall() {
			continue // swallow the request: the driver's deadline must fire
		}
		var req agentReq
		var resp map[string]any
		if err := json.Unmarshal(line, &req); err != nil {
			resp = map[string]any{"id": 0, "ok": false, "error": map[string]string{"kind": "bad_request", "message": "request is not JSON: " + err.Error()}}
		} else if e, ok := t.faults.TakeFailure(); ok {
			resp = map[string]any{"id": req.ID, "ok": false, "error": map[string]string{"kind": "bfrt", "message": e.Message}}
		} else {
			res, err := t.handle(req)
			if err != nil {
				kind := "bfrt"
				if ae, ok := err.(*agentErr); ok {
					kind = ae.kind
				}
				resp = map[string]any{"id": req.ID, "ok": false, "error": map[string]string{"kind": kind, "message": err.Error()}}
			} else {
				if res == nil {
					res = map[string]any{}
				}
				resp = map[string]any{"id": req.ID, "ok": true, "result": res}
			}
		}
		if t.faults.TakeDropReply() {
			// Done, and the answer lost on its way back.
			t.srv.DropConnections()
			return
		}
		out, _ := json.Marshal(resp)
		if t.faults.TakeGarble() {
			out = []byte("Traceback (most recent call last):")
		}
		if _, err := c.Write(append(out, '\n')); err != nil {
			return
		}
	}
}

// agentTokensKept is how many tokens the token file keeps (the driver's
// agent-token script keeps the last 16).
const agentTokensKept = 16

// anyToken reports whether got is one of the tokens in want (one per
// line), each compared in constant time.
func anyToken(got, want string) bool {
	ok := false
	for _, w := range strings.Fields(want) {
		if subtle.ConstantTimeCompare([]byte(got), []byte(w)) == 1 {
			ok = true
		}
	}
	return ok
}

// agentAuth answers a connection's first line: ok when it is the auth
// request with the token want (compared in constant time).
func agentAuth(line []byte, want string) (map[string]any, bool) {
	var req struct {
		ID   int64  `json:"id"`
		Op   string `json:"op"`
		Args struct {
			Token string `json:"token"`
		} `json:"args"`
	}
	err := json.Unmarshal(line, &req)
	refuse := func(msg string) (map[string]any, bool) {
		return map[string]any{"id": req.ID, "ok": false, "error": map[string]string{"kind": "unauthorized", "message": msg}}, false
	}
	switch {
	case err != nil || req.Op != "auth":
		return refuse("the first request must be auth with the run's token")
	case !anyToken(req.Args.Token, want):
		return refuse("wrong token")
	}
	return map[string]any{"id": req.ID, "ok": true, "result": map[string]any{}}, true
}

func argInt(a map[string]json.RawMessage, k string) (int64, error) {
	v, ok := a[k]
	if !ok {
		return 0, badReq("missing argument %q", k)
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil || f != math.Trunc(f) {
		return 0, badReq("argument %q: expected an integer, got %s", k, v)
	}
	return int64(f), nil
}

func argStr(a map[string]json.RawMessage, k string) (string, error) {
	var s string
	v, ok := a[k]
	if !ok {
		return "", badReq("missing argument %q", k)
	}
	if err := json.Unmarshal(v, &s); err != nil {
		return "", badReq("argument %q: expected a string, got %s", k, v)
	}
	return s, nil
}

func argMap(a map[string]json.RawMessage, k string) (map[string]int64, error) {
	out := map[string]int64{}
	v, ok := a[k]
	if !ok {
		return out, nil
	}
	if err := json.Unmarshal(v, &out); err != nil {
		return nil, badReq("argument %q: expected an object of integers, got %s", k, v)
	}
	return out, nil
}

var speedGbps = map[string]int{"BF_SPEED_10G": 10, "BF_SPEED_25G": 25, "BF_SPEED_40G": 40, "BF_SPEED_50G": 50, "BF_SPEED_100G": 100}

// portStatNames are the $PORT_STAT fields a read returns.
var portStatNames = []string{"$FramesReceivedOK", "$FramesReceivedAll", "$FramesReceivedwithFCSError", "$FrameswithanyError",
	"$OctetsReceivedinGoodFrames", "$OctetsReceived", "$FramesTransmittedOK", "$FramesTransmittedAll",
	"$OctetsTransmittedTotal", "$FramesTransmittedPriPause", "$FramesReceivedPriPause", "$PriorityPauseFrames"}

// The MAC's RMON frame-size counters: upper bounds of each range (the last
// is 9216 and over).
var lengthBuckets = []struct {
	max  int
	name string
}{{63, "lt_64"}, {64, "eq_64"}, {127, "65_127"}, {255, "128_255"}, {511, "256_511"}, {1023, "512_1023"},
	{1518, "1024_1518"}, {2047, "1519_2047"}, {4095, "2048_4095"}, {8191, "4096_8191"}, {9215, "8192_9215"}, {1 << 30, "9216"}}

func init() {
	for _, b := range lengthBuckets {
		tx, rx := "$FramesTransmittedLength_"+b.name, "$FramesReceivedLength_"+b.name
		portStatNames = append(portStatNames, tx, rx)
		lengthCounters = append(lengthCounters, [2]string{tx, rx})
	}
}

// lengthCounters are the size buckets' counters, transmitted and
// received, named once (init) rather than at every count.
var lengthCounters [][2]string

// txLength and rxLength name the frame-size counter a frame of n bytes
// (FCS included) counts in.
func txLength(n int64) string { return lengthCounters[lengthBucket(n)][0] }
func rxLength(n int64) string { return lengthCounters[lengthBucket(n)][1] }

// lengthBucket is the index of the size bucket a frame of n bytes counts
// in (the last takes any larger).
func lengthBucket(n int64) int {
	for i, b := range lengthBuckets {
		if n <= int64(b.max) {
			return i
		}
	}
	return len(lengthBuckets) - 1
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// keyMatches reports whether key has every field of filter at its value
// (an empty filter matches every key).
func keyMatches(key, filter map[string]int64) bool {
	for k, v := range filter {
		if kv, ok := key[k]; !ok || kv != v {
			return false
		}
	}
	return true
}

// keyString is a key as one comparable string: its fields in order, each
// with its value.
func keyString(k map[string]int64) string {
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(k)) {
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(k[n], 10))
		b.WriteByte(';')
	}
	return b.String()
}

// tableAction says which actions the program's tables have (the
// Stardust programs and ecmp both have a whoami and a gen_flow).
func tableAction(program, table, action string) bool {
	if isECMP(program) {
		return ecmpAction(table, action) // ecmp.go
	}
	switch table {
	case lg.TableLinkProtect:
		return action == lg.ActionProtect
	case lg.TableRetxMcast:
		return action == lg.ActionRetxCopies
	case lg.TableEmulateDrop:
		return action == "drop"
	case lg.TableL2Forward:
		return action == lg.ActionForwardToQueue || action == "forward"
	case ts.TableSnake:
		return action == ts.ActionForward || action == ts.ActionDrop
	}
	return stardustAction(table, action) // stardust.go
}

func (t *Tofino) pktgenStart(a map[string]json.RawMessage) (any, error) {
	var v [6]int64
	for i, k := range []string{"app_id", "egress_port", "pkt_len", "timer_ns", "batches", "packets_per_batch"} {
		x, err := argInt(a, k)
		if err != nil {
			return nil, err
		}
		v[i] = x
	}
	if v[2] < 60 || v[2] > 16384 {
		return nil, badReq("pkt_len %d", v[2])
	}
	cell, eg, err := t.pktgenBuffer(a)
	if err != nil {
		return nil, err
	}
	if err := t.pktgenIdle(v[0]); err != nil {
		return nil, err
	}
	trig, err := pktgenTrigger(a)
	if err != nil {
		return nil, err
	}
	jitter, err := pktgenJitter(a)
	if err != nil {
		return nil, err
	}
	if jitter > 0 && (cell == nil || trig != "timer_one_shot") {
		// The simulated switch times jittered batches only where a
		// dataplane follows the generator's frames one by one.
		return nil, badReq("ibg_jitter_ns %d: the simulated switch models inter-batch jitter only for a Stardust program's one-shot applications", jitter)
	}
	switch {
	case trig == "timer_periodic":
		return nil, t.startTimerApp(v)
	case cell != nil || eg != nil:
		return nil, t.startFabricApp(v, cell, eg, jitter)
	}
	return nil, t.startLineRateApp(v)
}

// pktgenBuffer reads pktgen.start's buffer_hex: a Stardust cell or an
// ecmp frame for those programs (nil both for another).
func (t *Tofino) pktgenBuffer(a map[string]json.RawMessage) (*sd.Cell, *ecmpGen, error) {
	var cell *sd.Cell
	var buf []byte
	raw, given := a["buffer_hex"]
	if given {
		var h string
		if err := json.Unmarshal(raw, &h); err != nil {
			return nil, nil, badReq("argument \"buffer_hex\": expected a string, got %s", raw)
		}
		b, err := hex.DecodeString(h)
		if err != nil || h != strings.ToLower(h) {
			return nil, nil, badReq("buffer_hex: expected lowercase hex, got %q", h)
		}
		buf = b
	}
	eg, err := ecmpBuffer(t.programName(), buf, given) // ecmp.go
	if err != nil {
		return nil, nil, badReq("buffer_hex: %v", err)
	}
	if given && eg == nil {
		c, perr := stardustBuffer(t.programName(), buf) // stardust.go
		if perr != nil {
			return nil, nil, badReq("buffer_hex: %v", perr)
		}
		cell = c
	} else if isStardust(t.programName()) {
		// No buffer: the program drops the generator's frames, which
		// are not cells; they are generated at their period all the same.
		cell = &sd.Cell{Kind: sdNotACell} // stardust_dp.go
	}
	return cell, eg, nil
}

// maxPktgenTimerNs is the largest timer_nanosec (a 32-bit field).
const maxPktgenTimerNs = 1<<32 - 1

// pktgenJitter reads pktgen.start's optional ibg_jitter_ns (0 without):
// at most the generator's longest timer.
func pktgenJitter(a map[string]json.RawMessage) (int64, error) {
	if _, ok := a["ibg_jitter_ns"]; !ok {
		return 0, nil
	}
	j, err := argInt(a, "ibg_jitter_ns")
	if err != nil {
		return 0, err
	}
	if j < 0 || j > maxPktgenTimerNs {
		return 0, badReq("ibg_jitter_ns %d: expected 0..%d", j, maxPktgenTimerNs)
	}
	return j, nil
}

// pktgenIdle: a program runs and application id is not running.
func (t *Tofino) pktgenIdle(id int64) error {
	t.mu.Lock()
	if t.program == "" {
		t.mu.Unlock()
		return fmt.Errorf("pktgen: no program running")
	}
	old, running := t.apps[int(id)]
	t.mu.Unlock()
	if running {
		running, _, _ = t.dp.appState(old)
	}
	if running {
		return fmt.Errorf("pktgen app %d is running: stop it first", id)
	}
	return nil
}

// startTimerApp starts a periodic timer (the LinkGuardian receiver's,
// every 100 ns per protected link): its frames stay inside the switch,
// so no line rate bounds its period. v: pktgenStart's arguments.
func (t *Tofino) startTimerApp(v [6]int64) error {
	t.mu.Lock()
	_, added := t.ports[int(v[1])]
	t.mu.Unlock()
	if !added {
		return notFound("egress port %d is not added", v[1])
	}
	if v[3] <= 0 || v[5] <= 0 {
		return badReq("pktgen: timer_ns and packets_per_batch must be positive, got %d, %d", v[3], v[5])
	}
	app := &pktgenApp{id: int(v[0]), egressPort: int(v[1]), pktLen: int(v[2]), enabled: true, periodic: true,
		timerNs: v[3], perBatch: int(v[5]), startNs: t.dp.Now()}
	t.mu.Lock()
	t.apps[app.id] = app
	t.mu.Unlock()
	return nil
}

// startFabricApp starts a Stardust or ecmp application: its frames enter
// the ingress pipeline and go where the program sends them, whatever
// egress_port says.
func (t *Tofino) startFabricApp(v [6]int64, cell *sd.Cell, eg *ecmpGen, jitterNs int64) error {
	if v[3] <= 0 || v[4] <= 0 || v[5] <= 0 {
		return badReq("pktgen: timer_ns, batches and packets_per_batch must be positive, got %d, %d, %d", v[3], v[4], v[5])
	}
	app := &pktgenApp{id: int(v[0]), egressPort: int(v[1]), pktLen: int(v[2]), total: v[4] * v[5], enabled: true,
		timerNs: v[3], batches: v[4], perBatch: int(v[5]), startNs: t.dp.Now(), cell: cell, ecmp: eg, jitterNs: jitterNs}
	if jitterNs > 0 {
		// The generator's own random source: one stream per switch and
		// application, a new one at each start, from the lab's seed.
		t.mu.Lock()
		t.appStarts++
		n := t.appStarts
		t.mu.Unlock()
		app.rng = rand.New(rand.NewPCG(t.dp.world.Seed(), t.seedFor(fmt.Sprintf("pktgen-jitter/%d", n), app.id)))
	}
	t.mu.Lock()
	t.apps[app.id] = app
	t.sdVer++
	t.mu.Unlock()
	if eg != nil {
		t.dp.noteECMP(t) // ecmp_dp.go
	}
	return nil
}

// startLineRateApp starts a LinkGuardian or timestamp program's
// application: back-to-back frames out of the egress port.
func (t *Tofino) startLineRateApp(v [6]int64) error {
	t.mu.Lock()
	p := t.ports[int(v[1])]
	t.mu.Unlock()
	if p == nil {
		return notFound("egress port %d is not added", v[1])
	}
	// The generator offers a packet every timer_ns, one a firing (ipg and
	// ibg both timer_ns, as the agent programs a one-shot application):
	// a period longer than a frame's time on the wire paces the
	// LinkGuardian stress test (lgmodel Config.Period; the artifact's
	// 124 ns at 100G), a shorter one is back to back. A Stardust
	// program's applications (credits, reachability cells, aging ticks,
	// paced host traffic) run at their period in the Stardust dataplane
	// (stardust_dp.go), and an ecmp program's in the ecmp dataplane
	// (ecmp_dp.go).
	app := &pktgenApp{id: int(v[0]), egressPort: int(v[1]), pktLen: int(v[2]), total: v[4] * v[5], enabled: true, timerNs: v[3]}
	t.mu.Lock()
	t.apps[app.id] = app
	prog := t.program
	t.mu.Unlock()
	if prog == ts.Program {
		return t.sendProbes(app, v[3]) // fec.go
	}
	return t.dp.startApp(t, app)
}

// stopAll ends every generator of sw (bf_switchd restarting).
func (d *Dataplane) stopAll(sw *Tofino) {
	d.mu.Lock()
	defer d.mu.Unlock()
	kept := d.runs[:0]
	for _, r := range d.runs {
		if r.link.tx != sw && r.link.rx != sw {
			kept = append(kept, r)
		}
	}
	d.runs = kept
}

// optics is what a port's transceiver reports: lanes, RX and TX power.
func (d *Dataplane) optics(sw *Tofino, dev int) (lanes int, rx, tx float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.links {
		if (l.rx == sw && l.rxPort == dev) || (l.tx == sw && l.txPort == dev) {
			lanes = l.fibre.Transceiver.Lanes
			tx = l.fibre.TxPowerDBmAt(d.now)
			rx = l.fibre.RxPowerDBmAt(d.now)
			if l.tx == sw {
				// The return fibre has no VOA: the patch losses only.
				rx = tx - l.fibre.LossBeforeDB - l.fibre.LossAfterDB
				if l.fibre.ReturnLossDB > 0 {
					rx = tx - l.fibre.ReturnLossDB
				}
			}
			if math.IsInf(rx, -1) {
				rx = -40
			}
			return lanes, rx, tx
		}
	}
	return 1, -40, -40
}

// Names of the registers and tables a program declares, sorted (for tests).
func programNames(program string) []string {
	o := programObjects[program]
	out := append(append([]string{}, o.regs...), o.tables...)
	sort.Strings(out)
	return out
}
