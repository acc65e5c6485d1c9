package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"testbed/hostagent"
	"testbed/simlab/wire"
)

// SimHost is a simulated Linux end host behind an SSH server. It answers
// the host driver's scripts (dut/host/COMMANDS.md) by their "# testbed:<op>"
// line and arguments:
//
//   - identity: a Debian x86_64 machine named after the host;
//   - run: a few commands only (runCommands); any other fails with exit
//     status 127 and says what the host can run;
//   - upload: files are kept in memory with their mode and sha256;
//   - agent-probe/start/status/stop: the simulated host "executes" an
//     uploaded hostagent by running the agent's own code, at this build's
//     version, in-process (hostagent.Agent): agent-probe reports the
//     uploaded file's sha256 and "hostagent <hostagent.Version>", and the
//     agent serves its HTTP API on a port of the host's loopback that only
//     the SSH connection's direct-tcpip channels reach, as on a real host;
//   - sysctl-get/set: a small sysctl table (hostSysctls);
//   - route-get/set: a routing table printed as "ip route show" prints it,
//     where "rto_min lock 1ms" is kept per route.
//
// The agent's FCT servers and clients use the host's data-plane network
// (HostNet): connections between simulated hosts whose trials the transport
// model computes, in the host's simulated time, over the path's link state.
type SimHost struct {
	name   string
	user   string
	home   string
	serial string
	iface  string
	addr   netip.Prefix
	sw     string // the switch the host is attached to
	net    *HostNet
	faults *wire.Faults
	log    *slog.Logger
	srv    *wire.SSHServer
	clock  simClock

	mu      sync.Mutex
	files   map[string]*hostFile // absolute path -> file
	procs   map[string]*hostProc // hostagent state directory -> its process
	nextPID int
	// agentPorts hand out the loopback ports hostagents listen on.
	agentPorts ephemeralPorts
	sysctl     map[string]string
	routes     []*hostRoute
	clients    int // open FCT client connections (see HostNet.dial)
	closed     bool
	reactor    hostagent.ReactorHost // REACToR host control (SetReactor); nil: none

	// flowMu guards newConn: the model of this host's new connections
	// (each connection's first flow), kept across connections.
	flowMu  sync.Mutex
	newConn *connState
	flowRng *rand.Rand
	rdma    *connState // the model of this host's RDMA queue pairs (ib_write_lat)

	// rdmaOpen is how long ib_write_lat takes to open the RDMA device
	// before a server listens (SetRDMAOpenTime); rdmaRefused counts the
	// clients that found no server listening.
	rdmaOpen    time.Duration
	rdmaRefused int64
}

// HostOptions configure a simulated host.
type HostOptions struct {
	Name       string
	User       string // the login account (default "testbed")
	Authorized []ssh.PublicKey
	Listen     string // the SSH server's address (default 127.0.0.1:0)
	Serial     string
	// Iface and Addr are the data-plane interface and its address; the
	// host reaches other hosts of its HostNet through it.
	Iface string
	Addr  netip.Prefix
	// Gateway is the management network's default gateway shown in the
	// routing table (default 192.168.122.1).
	Gateway string
	// Switch names the switch the data-plane interface is cabled to.
	Switch string
	Faults *wire.Faults
	Log    *slog.Logger
}

type hostFile struct {
	data []byte
	mode fs.FileMode
	sum  string
}

// hostProc is a hostagent "process" started by agent-start.
type hostProc struct {
	pid   int // 0 once stopped (the pid file is gone)
	bin   string
	alive bool
	addr  string // what it printed: "listening <addr>"
	log   *lineLog
	agent *hostagent.Agent
	http  *http.Server
	ln    *memListener
}

// AddHost starts a simulated host on the network.
func (n *HostNet) AddHost(o HostOptions) (*SimHost, error) {
	if o.Name == "" || !o.Addr.IsValid() || o.Switch == "" {
		return nil, errors.New("simulated host: name, address and switch are required")
	}
	if o.User == "" {
		o.User = "testbed"
	}
	if o.Iface == "" {
		o.Iface = "eth1"
	}
	if o.Gateway == "" {
		o.Gateway = "192.168.122.1"
	}
	if o.Faults == nil {
		o.Faults = &wire.Faults{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	h := &SimHost{name: o.Name, user: o.User, home: "/home/" + o.User, serial: o.Serial, iface: o.Iface, addr: o.Addr, sw: o.Switch,
		net: n, faults: o.Faults, log: o.Log, files: map[string]*hostFile{}, procs: map[string]*hostProc{}, nextPID: 2400, agentPorts: ephemeralPorts{last: 40000},
		sysctl: defaultSysctls()}
	hs := fnv.New64a()
	fmt.Fprintf(hs, "%s/new-connections", o.Name)
	h.flowRng = rand.New(rand.NewPCG(n.seed, hs.Sum64()))
	mgmt := "192.168.122." + strconv.Itoa(10+len(n.hostNames()))
	h.routes = []*hostRoute{
		mustRoute("default via " + o.Gateway + " dev eth0 proto dhcp src " + mgmt + " metric 100"),
		mustRoute(o.Addr.Masked().String() + " dev " + o.Iface + " proto kernel scope link src " + o.Addr.Addr().String()),
		mustRoute("192.168.122.0/24 dev eth0 proto kernel scope link src " + mgmt + " metric 100"),
	}
	if err := n.attach(h); err != nil {
		return nil, err
	}
	srv, err := wire.NewSSHServer(wire.SSHServerOptions{Listen: o.Listen, User: o.User, Authorized: o.Authorized, Exec: h.exec, Tunnel: h.tunnel, Faults: o.Faults, Log: o.Log})
	if err != nil {
		n.detach(h)
		return nil, fmt.Errorf("%s: %w", o.Name, err)
	}
	h.srv = srv
	return h, nil
}

// Name is the host's name.
func (h *SimHost) Name() string { return h.name }

// SSH is the host's SSH server.
func (h *SimHost) SSH() *wire.SSHServer { return h.srv }

// Addr is the host's data-plane address.
func (h *SimHost) Addr() netip.Prefix { return h.addr }

// Now is the host's simulated clock, which its FCT trials move.
func (h *SimHost) Now() time.Duration { return h.clock.now() }

// Close stops the host's agents and its SSH server.
func (h *SimHost) Close() error {
	h.mu.Lock()
	h.closed = true
	var procs []*hostProc
	for _, p := range h.procs {
		if p.alive {
			procs = append(procs, p)
		}
	}
	h.mu.Unlock()
	for _, p := range procs {
		h.stopProc(p)
	}
	err := h.srv.Close()
	h.net.detach(h)
	return err
}

// File returns an uploaded file (path absolute or relative to the home
// directory) and its mode.
func (h *SimHost) File(p string) ([]byte, fs.FileMode, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.files[h.abs(p)]
	if !ok {
		return nil, 0, false
	}
	return bytes.Clone(f.data), f.mode, true
}

// Sysctl reads a sysctl of the host's table.
func (h *SimHost) Sysctl(key string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.sysctl[key]
	return v, ok
}

// Routes are the host's routes as "ip route show" prints them.
func (h *SimHost) Routes() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.routes {
		out = append(out, r.String())
	}
	return out
}

// AgentRunning reports whether a hostagent runs on the host.
func (h *SimHost) AgentRunning() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.procs {
		if p.alive {
			return true
		}
	}
	return false
}

func (h *SimHost) abs(p string) string {
	p = strings.TrimPrefix(p, "~/")
	if !path.IsAbs(p) {
		p = path.Join(h.home, p)
	}
	return path.Clean(p)
}

// ---- scripts

// hostScriptVars are the arguments of each op, in the order the driver
// sends them (dut/host/COMMANDS.md).
var hostScriptVars = map[string][]string{
	"identity":     nil,
	"run":          {"W", "Q"},
	"upload":       {"P", "T", "M", "S"},
	"agent-probe":  {"B"},
	"agent-start":  {"B", "D"},
	"agent-status": {"B", "D"},
	"agent-stop":   {"B", "D"},
	"sysctl-get":   {"C", "K"},
	"sysctl-set":   {"C", "K", "V"},
	"route-get":    {"C", "R"},
	"route-set":    {"C", "R", "N"},
}

// parseScript reads a driver script: its op and its assignments (single
// quoted, a quote inside as '\”).
func parseScript(cmd string) (string, map[string]string, error) {
	first, rest, _ := strings.Cut(cmd, "\n")
	op, ok := strings.CutPrefix(strings.TrimSpace(first), "# testbed:")
	if !ok {
		return "", nil, fmt.Errorf("the simulated host runs only the driver's scripts (first line \"# testbed:<op>\"), not %q", first)
	}
	names, ok := hostScriptVars[op]
	if !ok {
		return op, nil, fmt.Errorf("unknown operation %q", op)
	}
	vars := map[string]string{}
	for _, name := range names {
		v, after, ok := cutAssignment(rest, name)
		if !ok {
			return op, nil, fmt.Errorf("%s: expected the assignment %s='...'", op, name)
		}
		vars[name], rest = v, after
	}
	return op, vars, nil
}

// cutAssignment reads NAME='value'\n at the start of s.
func cutAssignment(s, name string) (value, rest string, ok bool) {
	s, ok = strings.CutPrefix(s, name+"='")
	if !ok {
		return "", "", false
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '\'')
		if i < 0 {
			return "", "", false
		}
		b.WriteString(s[:i])
		s = s[i+1:]
		if after, ok := strings.CutPrefix(s, `\''`); ok {
			b.WriteByte('\'')
			s = after
			continue
		}
		if s == "" {
			return b.String(), "", true
		}
		if s[0] != '\n' {
			return "", "", false
		}
		return b.String(), s[1:], true
	}
}

func (h *SimHost) exec(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
	if d := h.faults.Delay(); d > 0 {
		time.Sleep(d)
	}
	if h.faults.TakeDrop() {
		h.srv.DropConnections()
		return 255
	}
	op, vars, err := parseScript(cmd)
	if err != nil {
		fmt.Fprintf(stderr, "sh: %v\n", err)
		return 127
	}
	if e, ok := h.faults.TakeFailure(); ok {
		fmt.Fprintln(stderr, e.Message)
		return max(1, e.Code)
	}
	switch op {
	case "identity":
		fmt.Fprintf(stdout, "hostname=%s\nkernel=Linux 6.1.0-28-amd64\narch=x86_64\nos=Debian GNU/Linux 12 (bookworm)\nvendor=testbed\nproduct=simulated host\nserial=%s\nhome=%s\n",
			h.name, h.serial, h.home)
		return 0
	case "run":
		return h.run(ctx, vars["W"], vars["Q"], stdout, stderr)
	case "upload":
		return h.upload(vars, stdin, stdout, stderr)
	case "agent-probe":
		return h.agentProbe(vars["B"], stdout)
	case "agent-start":
		return h.agentStart(vars["B"], vars["D"], stdin, stdout, stderr)
	case "agent-status":
		return h.agentStatus(vars["B"], vars["D"], stdout)
	case "agent-stop":
		return h.agentStop(vars["B"], vars["D"], stdout)
	case "sysctl-get", "sysctl-set":
		return h.sysctlOp(op, vars, stdout, stderr)
	case "route-get", "route-set":
		return h.routeOp(op, vars, stdout, stderr)
	}
	fmt.Fprintf(stderr, "sh: unsupported operation %q\n", op)
	return 127
}

// ---- upload and the agent

func (h *SimHost) upload(v map[string]string, stdin io.Reader, stdout, stderr io.Writer) int {
	data, err := io.ReadAll(io.LimitReader(stdin, 256<<20))
	if err != nil {
		fmt.Fprintf(stderr, "cat: -: %v\n", err)
		return 1
	}
	mode, err := strconv.ParseUint(v["M"], 8, 32)
	if err != nil || mode > 0o7777 {
		fmt.Fprintf(stderr, "chmod: invalid mode: '%s'\n", v["M"])
		return 1
	}
	sum := sha256.Sum256(data)
	got := hex.EncodeToString(sum[:])
	if got != v["S"] {
		fmt.Fprintf(stderr, "checksum mismatch: received %s\n", got)
		return 3
	}
	p := h.abs(v["P"])
	h.mu.Lock()
	h.files[p] = &hostFile{data: data, mode: fs.FileMode(mode), sum: got}
	h.mu.Unlock()
	fmt.Fprintf(stdout, "sha256=%s\n", got)
	return 0
}

func (h *SimHost) agentProbe(bin string, stdout io.Writer) int {
	fmt.Fprintln(stdout, "arch=x86_64")
	h.mu.Lock()
	f, ok := h.files[h.abs(bin)]
	h.mu.Unlock()
	if !ok {
		return 0
	}
	fmt.Fprintf(stdout, "sha256=%s\n", f.sum)
	version := ""
	if f.mode&0o111 != 0 { // a file that cannot be executed prints nothing
		version = "hostagent " + hostagent.Version
	}
	fmt.Fprintf(stdout, "version=%s\n", version)
	return 0
}

// procFor is the process the pid file in dir names, if it is alive and
// runs bin (what the script's alive() checks); h.mu held.
func (h *SimHost) procFor(bin, dir string) *hostProc {
	p := h.procs[h.abs(dir)]
	if p == nil || !p.alive || p.bin != h.abs(bin) {
		return nil
	}
	return p
}

func (h *SimHost) agentStart(bin, dir string, stdin io.Reader, stdout, stderr io.Writer) int {
	// The run's token, from stdin to $D/token (0600), as the script does;
	// a running agent reads it on its next request.
	tok, err := io.ReadAll(io.LimitReader(stdin, 4096))
	if err != nil {
		fmt.Fprintf(stderr, "cat: -: %v\n", err)
		return 1
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		fmt.Fprintln(stderr, "sh: the host is shutting down")
		return 1
	}
	tokenPath := path.Join(h.abs(dir), "token")
	sum := sha256.Sum256(tok)
	h.files[tokenPath] = &hostFile{data: tok, mode: 0o600, sum: hex.EncodeToString(sum[:])}
	if p := h.procFor(bin, dir); p != nil {
		fmt.Fprintf(stdout, "running=%d\n", p.pid)
		return 0
	}
	h.nextPID++
	p := &hostProc{pid: h.nextPID, bin: h.abs(bin), log: &lineLog{}}
	h.procs[h.abs(dir)] = p
	fmt.Fprintf(stdout, "started=%d\n", p.pid)
	f, ok := h.files[p.bin]
	switch {
	case !ok:
		// setsid starts, writes the pid, and exec fails.
		fmt.Fprintf(p.log, "hostagent: 1: exec: %s: not found\n", bin)
		return 0
	case f.mode&0o111 == 0:
		fmt.Fprintf(p.log, "hostagent: 1: exec: %s: Permission denied\n", bin)
		return 0
	}
	port, free := h.agentPorts.next(func(port uint16) bool {
		for _, o := range h.procs {
			if o.alive && o.ln != nil && o.ln.addr.Port == int(port) {
				return true
			}
		}
		return false
	})
	if !free {
		fmt.Fprintf(p.log, "hostagent: listen tcp 127.0.0.1:0: bind: address already in use\n")
		return 0
	}
	p.ln = newMemListener(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(port)})
	log := slog.New(slog.NewTextHandler(p.log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	p.agent = hostagent.New(hostagent.Options{
		Logger: log,
		Dial:   h.dial,
		Listen: h.listen,
		Clock:  h.clock.now,
		LookPath: func(file string) (string, error) {
			return "", fmt.Errorf("exec: %q: executable file not found in $PATH", file)
		},
		ProcNet:  "/nonexistent/simulated-host/proc/net", // no interface counters on a simulated host
		Hostname: h.name,
		Reactor:  h.reactorHost(),
		Token:    func() (string, error) { return h.token(tokenPath) },
		Tools:    map[string]hostagent.ToolFunc{hostagent.WriteLatTool: h.ibWriteLat},
	})
	p.http = hostagent.NewServer(p.agent.Handler(), hostagent.ServerOptions{Log: log})
	p.alive, p.addr = true, p.ln.Addr().String()
	log.Info("hostagent serving", "version", hostagent.Version, "addr", p.addr)
	go p.http.Serve(p.ln)
	return 0
}

func (h *SimHost) agentStatus(bin, dir string, stdout io.Writer) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.procs[h.abs(dir)]
	if p == nil {
		fmt.Fprint(stdout, "pid=\nalive=no\nlisten=\n")
		return 0
	}
	pid := ""
	if p.pid != 0 {
		pid = strconv.Itoa(p.pid)
	}
	alive := "no"
	if h.procFor(bin, dir) != nil {
		alive = "yes"
	}
	fmt.Fprintf(stdout, "pid=%s\nalive=%s\nlisten=%s\n", pid, alive, p.addr)
	for _, l := range p.log.tail(20) {
		fmt.Fprintf(stdout, "log: %s\n", l)
	}
	return 0
}

func (h *SimHost) agentStop(bin, dir string, stdout io.Writer) int {
	h.mu.Lock()
	p := h.procs[h.abs(dir)]
	pid := ""
	if p != nil && p.pid != 0 {
		pid = strconv.Itoa(p.pid)
	}
	run := h.procFor(bin, dir)
	if p != nil {
		p.pid = 0 // rm -f "$D/pid"
	}
	delete(h.files, path.Join(h.abs(dir), "token"))
	h.mu.Unlock()
	if run != nil {
		h.stopProc(run)
	}
	fmt.Fprintf(stdout, "stopped=%s\n", pid)
	return 0
}

// token is what the agent's --token-file holds: the file at p, trimmed.
func (h *SimHost) token(p string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.files[p]
	if !ok {
		return "", fmt.Errorf("open %s: no such file or directory", p)
	}
	return strings.TrimSpace(string(f.data)), nil
}

// stopProc ends an agent as TERM does: the HTTP server closes, the agent
// stops its FCT servers and runs.
func (h *SimHost) stopProc(p *hostProc) {
	h.mu.Lock()
	if !p.alive {
		h.mu.Unlock()
		return
	}
	p.alive = false
	h.mu.Unlock()
	fmt.Fprintln(p.log, `level=INFO msg="hostagent stopping"`)
	p.http.Close()
	p.agent.Close()
}

// tunnel serves direct-tcpip channels to a running agent's loopback port.
func (h *SimHost) tunnel(host string, port int) (func(io.ReadWriteCloser), bool) {
	if host != "127.0.0.1" && host != "localhost" && host != "::1" {
		return nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.procs {
		if p.alive && p.ln.addr.Port == port {
			ln := p.ln
			return func(c io.ReadWriteCloser) { ln.serve(c) }, true
		}
	}
	return nil, false
}

// lineLog is a process's stderr (D/log): the lines written to it.
type lineLog struct {
	mu    sync.Mutex
	lines []string
	part  []byte
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part = append(l.part, p...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, string(l.part[:i]))
		l.part = l.part[i+1:]
	}
	if over := len(l.lines) - 1000; over > 0 {
		l.lines = slices.Delete(l.lines, 0, over)
	}
	return len(p), nil
}

func (l *lineLog) tail(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines[max(0, len(l.lines)-n):])
}

// memListener is a listening socket on the simulated host's loopback:
// its connections are the SSH connection's forwarded channels.
type memListener struct {
	addr   *net.TCPAddr
	conns  chan net.Conn
	done   chan struct{}
	closed sync.Once
}

func newMemListener(addr *net.TCPAddr) *memListener {
	return &memListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return nil
}

func (l *memListener) Addr() net.Addr { return l.addr }

// serve hands a forwarded channel to the server and waits until it is
// closed.
func (l *memListener) serve(rwc io.ReadWriteCloser) {
	c := &channelConn{rwc: rwc, local: l.addr, remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, done: make(chan struct{})}
	select {
	case l.conns <- c:
	case <-l.done:
		rwc.Close()
		return
	}
	select {
	case <-c.done:
	case <-l.done:
		c.Close()
	}
}

// channelConn is an SSH channel as a net.Conn; deadlines are not kept
// (the HTTP server closes idle connections itself).
type channelConn struct {
	rwc           io.ReadWriteCloser
	local, remote net.Addr
	once          sync.Once
	done          chan struct{}
}

func (c *channelConn) Read(p []byte) (int, error)  { return c.rwc.Read(p) }
func (c *channelConn) Write(p []byte) (int, error) { return c.rwc.Write(p) }
func (c *channelConn) Close() error {
	var err error
	c.once.Do(func() { err = c.rwc.Close(); close(c.done) })
	return err
}
func (c *channelConn) LocalAddr() net.Addr              { return c.local }
func (c *channelConn) RemoteAddr() net.Addr             { return c.remote }
func (c *channelConn) SetDeadline(time.Time) error      { return nil }
func (c *channelConn) SetReadDeadline(time.Time) error  { return nil }
func (c *channelConn) SetWriteDeadline(time.Time) error { return nil }
