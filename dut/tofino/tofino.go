// Package tofino drives Intel Tofino switches over SSH.
//
// One long-lived SSH connection per switch (host key checked against
// known_hosts, key or agent authentication, keepalives, redialled on drop)
// carries two things: shell commands with exit status for the processes
// (starting bf_switchd with a program, installing the agent, the platform
// CLI for transceiver diagnostics), and a direct-tcpip channel to the
// testbed agent, a small request/response server that runs inside the
// SDE's bfrt_python and answers every BF Runtime operation with its result
// or its error (agent/PROTOCOL.md). Nothing is typed into a terminal and
// nothing waits a fixed time: readiness is asked for.
package tofino

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"testbed/transport"
)

// AgentScript is the agent run inside bfrt_python on the switch.
//
//go:embed agent/testbed_agent.py
var AgentScript []byte

// AgentVersion is the protocol version this driver speaks.
const AgentVersion = "1"

// Options configure a switch connection.
type Options struct {
	SSH transport.SSHOptions
	// SDE is the SDE directory on the switch ($SDE; default /opt/bf-sde).
	SDE string
	// AgentPort is the agent's port on the switch's loopback (default 9091).
	AgentPort int
	// Timeout is the deadline of one operation (default 10s).
	Timeout time.Duration
	// StartTimeout bounds bf_switchd start-up and the agent's (default 3 min).
	StartTimeout time.Duration
	Transcript   *transport.Transcript
	// Privilege is how bf_switchd and the bfshell client are started:
	// PrivilegeNone ("" or "none": the SSH user may run them, a dedicated
	// user given the SDE's device node and huge pages) or PrivilegeSudo
	// ("sudo": sudo -n, which needs a NOPASSWD:SETENV sudoers rule for
	// $SDE/run_switchd.sh, $SDE/run_bfshell.sh and pkill; docs/tofino.md).
	Privilege string
	// CPUIface is the CPU port's network interface, where packet.out
	// sends frames (the agent's TESTBED_CPU_IFACE; "" its default).
	CPUIface string
	// BfshellPort is bf_switchd's bfshell port, asked for to know the
	// daemon is up (default 9999, the SDE's).
	BfshellPort int
}

// The privileges Options.Privilege names.
const (
	PrivilegeNone = "none"
	PrivilegeSudo = "sudo"
)

// Switch is one Tofino switch.
type Switch struct {
	ssh   *transport.SSH // nil when the switch is reached over BF Runtime gRPC
	agent opConn
	opts  Options
	// life manages the program when the connection does it itself
	// (NewSwitch with a Lifecycle), not over SSH.
	life Lifecycle
}

// opConn answers the operations of agent/PROTOCOL.md: the agent over
// SSH (agentClient), or another connection (NewSwitch).
type opConn interface {
	call(ctx context.Context, op string, args any, out any) error
	close()
}

// Conn is a connection to a switch that answers the operations of
// agent/PROTOCOL.md (each op's args and result as that page gives them,
// failures as *AgentError) by other means than the agent over SSH: the
// BF Runtime gRPC driver (dut/tofino/bfrtgrpc) maps them onto the SDE's
// tables. A Switch made on it offers every method the SSH driver does,
// so a recipe runs unchanged over either.
type Conn interface {
	Call(ctx context.Context, op string, args any, out any) error
	Close() error
}

// Lifecycle is what a Conn that manages the switch's program itself
// offers in place of the SSH driver's shell commands.
type Lifecycle interface {
	Identity(ctx context.Context) (transport.Identity, error)
	// Program is the P4 program the switch runs ("" none).
	Program(ctx context.Context) (string, error)
	// StartProgram loads program, as StartSwitchd does over SSH.
	StartProgram(ctx context.Context, program string) error
	// Ready makes the connection ready for operations on the running
	// program, as EnsureAgent does over SSH.
	Ready(ctx context.Context) error
}

// NewSwitch makes a Switch on c; when c is also a Lifecycle, Identity,
// Program, StartSwitchd and EnsureAgent are c's. Methods that need a
// shell on the switch (transceiver diagnostics, building P4 sources)
// answer an error.
func NewSwitch(c Conn, opts Options) *Switch {
	s := &Switch{agent: connAdapter{c}, opts: opts}
	if l, ok := c.(Lifecycle); ok {
		s.life = l
	}
	return s
}

type connAdapter struct{ c Conn }

func (a connAdapter) call(ctx context.Context, op string, args any, out any) error {
	return a.c.Call(ctx, op, args, out)
}
func (a connAdapter) close() { a.c.Close() }

// Open connects to a switch at ssh://user@host[:port]. It does not start
// anything on it.
func Open(ctx context.Context, address string, opts Options) (*Switch, error) {
	if opts.SDE == "" {
		opts.SDE = "/opt/bf-sde"
	}
	if opts.AgentPort == 0 {
		opts.AgentPort = 9091
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 3 * time.Minute
	}
	if opts.SSH.Timeout <= 0 {
		opts.SSH.Timeout = opts.Timeout
	}
	if opts.BfshellPort == 0 {
		opts.BfshellPort = 9999
	}
	switch opts.Privilege {
	case "":
		opts.Privilege = PrivilegeNone
	case PrivilegeNone, PrivilegeSudo:
	default:
		return nil, fmt.Errorf("switch %s: privilege %q (expected %s or %s)", address, opts.Privilege, PrivilegeNone, PrivilegeSudo)
	}
	if opts.CPUIface != "" && !validName(opts.CPUIface) {
		return nil, fmt.Errorf("switch %s: cpu_iface %q (expected a network interface name: letters, digits, _ and -)", address, opts.CPUIface)
	}
	opts.SSH.Transcript = opts.Transcript
	c, err := transport.DialSSH(ctx, address, opts.SSH)
	if err != nil {
		return nil, err
	}
	s := &Switch{ssh: c, opts: opts}
	tok, err := newToken()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("agent token: %w", err)
	}
	s.agent = &agentClient{
		dial: func(ctx context.Context) (net.Conn, error) {
			return c.DialRemote(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.AgentPort)))
		},
		token:      s.tokenInstaller(tok),
		transcript: opts.Transcript, timeout: opts.Timeout, device: address,
	}
	return s, nil
}

// agentTokenFile is where the agent reads the token every connection must
// present (PROTOCOL.md, "Authentication"): in the SSH user's home, beside
// the agent, expanded by the user's shell, so the absolute path reaches
// bf_switchd's environment whoever runs it (root through sudo, whose
// ~ is elsewhere). An agent in a daemon started without it reads the
// file beside itself.
const agentTokenFile = `"$HOME/.testbed/agent_token"`

// privileged is the prefix that runs a command with the privilege the
// SDE's daemon needs, and the environment assignments after it (sudo
// resets the environment: what the command needs is given on sudo's
// command line, which a SETENV rule allows).
func (s *Switch) privileged() string {
	if s.opts.Privilege == PrivilegeSudo {
		return "sudo -n "
	}
	return ""
}

// privilegeCheck is a script line that fails at once, saying what to
// configure, when sudo would ask for a password for cmd (a path on the
// switch); empty without sudo.
func (s *Switch) privilegeCheck(cmd string) string {
	if s.opts.Privilege != PrivilegeSudo {
		return ""
	}
	return `sudo -n -l ` + cmd + ` >/dev/null 2>&1 || { echo "testbed: sudo -n may not run ` + cmd + ` as $(id -un) without a password: add a NOPASSWD:SETENV sudoers rule (docs/tofino.md)" >&2; exit 3; }
`
}

// background is cmd run under nohup with the environment assignments env
// and the privilege the options name.
func (s *Switch) background(env, cmd string) string {
	if s.opts.Privilege == PrivilegeSudo {
		return "nohup sudo -n " + env + " " + cmd
	}
	return env + " nohup " + cmd
}

// daemonEnv is the environment the agent reads in bf_switchd (and the SDE
// paths its scripts need), as assignments for a command line.
func (s *Switch) daemonEnv(program string) string {
	env := fmt.Sprintf(`SDE="$SDE" SDE_INSTALL="$SDE_INSTALL" TESTBED_AGENT_PORT=%d TESTBED_AGENT_TOKEN_FILE=`+agentTokenFile, s.opts.AgentPort)
	if program != "" {
		env += " TESTBED_PROGRAM=" + program
	}
	if s.opts.CPUIface != "" {
		env += " TESTBED_CPU_IFACE=" + s.opts.CPUIface
	}
	return env
}

// agentTokensKept is how many tokens the token file holds: each driver
// adds its own, one per line, and the agent accepts any of them, so two
// drivers on one switch (a run and a monitor reading counters, a test's
// observer) do not lock each other out; the oldest is dropped.
const agentTokensKept = 16

// tokenInstaller returns the agent client's token function: the first time
// it is asked (and after a failure), it adds tok to the switch's token
// file (mode 0600, from stdin: never on a command line or in the
// transcript), which the agent reads for every new connection.
func (s *Switch) tokenInstaller(tok string) func(ctx context.Context) (string, error) {
	installed := false // guarded by the agent client's mutex
	return func(ctx context.Context) (string, error) {
		if installed {
			return tok, nil
		}
		_, err := s.sh(ctx, "agent-token", `mkdir -p "$HOME/.testbed" && rm -f "$HOME/.testbed/agent_token.new" && (umask 077 && { tail -n `+strconv.Itoa(agentTokensKept-1)+` `+agentTokenFile+` 2>/dev/null; cat; } > "$HOME/.testbed/agent_token.new") && chmod 600 "$HOME/.testbed/agent_token.new" && mv -f "$HOME/.testbed/agent_token.new" `+agentTokenFile, []byte(tok+"\n"))
		if err != nil {
			return "", fmt.Errorf("install the agent token: %w", err)
		}
		installed = true
		return tok, nil
	}
}

// newToken returns a fresh random token (256 bits, hex).
func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Close closes the connection; nothing on the switch is stopped.
func (s *Switch) Close() error {
	s.agent.close()
	if s.ssh == nil {
		return nil
	}
	return s.ssh.Close()
}

// sh runs a script on the switch with $SDE set. The first line names the
// operation (a comment), which keeps transcripts readable.
func (s *Switch) sh(ctx context.Context, op, script string, stdin []byte) (string, error) {
	if s.ssh == nil {
		return "", fmt.Errorf("%s: this needs a shell on the switch, and the switch is driven without SSH (BF Runtime gRPC)", op)
	}
	cmd := fmt.Sprintf("# testbed:%s\nSDE=%s; SDE_INSTALL=$SDE/install; export SDE SDE_INSTALL\n%s", op, shellQuote(s.opts.SDE), script)
	var in *strings.Reader
	if stdin != nil {
		in = strings.NewReader(string(stdin))
		return s.ssh.Run(ctx, cmd, in)
	}
	return s.ssh.Run(ctx, cmd, nil)
}

func shellQuote(v string) string { return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'" }

// Identity reads the switch's host name, platform, serial and SDE version.
func (s *Switch) Identity(ctx context.Context) (transport.Identity, error) {
	if s.life != nil {
		return s.life.Identity(ctx)
	}
	out, err := s.sh(ctx, "identity", `echo "hostname=$(hostname)"
echo "platform=$(cat /sys/class/dmi/id/product_name 2>/dev/null)"
echo "serial=$(cat /sys/class/dmi/id/product_serial 2>/dev/null)"
echo "sde=$(cat "$SDE_INSTALL/share/VERSION" 2>/dev/null || basename "$SDE")"`, nil)
	if err != nil {
		return transport.Identity{}, fmt.Errorf("identity: %w", err)
	}
	kv := keyValues(out)
	if kv["hostname"] == "" {
		return transport.Identity{}, fmt.Errorf("identity: unexpected answer %q", truncate(out, 200))
	}
	model := kv["platform"]
	if model == "" {
		model = "Tofino switch"
	}
	return transport.Identity{Vendor: "Intel Tofino", Model: model + " (" + kv["hostname"] + ")", Serial: kv["serial"], Firmware: "SDE " + kv["sde"]}, nil
}

func keyValues(out string) map[string]string {
	kv := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok {
			kv[k] = strings.TrimSpace(v)
		}
	}
	return kv
}

var confRe = regexp.MustCompile(`([^/\s]+)\.conf\b`)

// Program returns the P4 program bf_switchd runs, or "" when it is not running.
func (s *Switch) Program(ctx context.Context) (string, error) {
	if s.life != nil {
		return s.life.Program(ctx)
	}
	out, err := s.sh(ctx, "switchd-status", `pgrep -a -x bf_switchd || true`, nil)
	if err != nil {
		return "", fmt.Errorf("switchd status: %w", err)
	}
	out = strings.TrimSpace(out)
	if out == "" {
		return "", nil
	}
	m := confRe.FindStringSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("switchd status: bf_switchd runs but its --conf-file is not in %q", truncate(out, 200))
	}
	return m[1], nil
}

// StartSwitchd (re)starts bf_switchd with program, waits until bfshell's
// port answers, then installs and starts the agent and waits until it
// reports the program loaded.
func (s *Switch) StartSwitchd(ctx context.Context, program string) error {
	if !validName(program) {
		return fmt.Errorf("start switchd: program name %q (expected letters, digits, _ and -)", program)
	}
	if s.life != nil {
		return s.life.StartProgram(ctx, program)
	}
	// bfrt_python runs inside bf_switchd, so the agent's settings go into
	// the daemon's environment; run_bfshell.sh is only the client.
	// With sudo, the daemon runs as root: it is stopped and started
	// through sudo, and what the agent needs reaches it on sudo's
	// command line. The background job's output goes to the log as a
	// whole (the subshell too, not only its last command): a job holding
	// the session's output open keeps the SSH command from returning.
	_, err := s.sh(ctx, "switchd-start", s.privilegeCheck(`"$SDE/run_switchd.sh"`)+fmt.Sprintf(`%[1]spkill -x bf_switchd
while pgrep -x bf_switchd >/dev/null; do sleep 0.2; done
mkdir -p "$HOME/.testbed"
(cd "$SDE" && %[2]s) > "$HOME/.testbed/switchd.log" 2>&1 < /dev/null &
echo started`, s.privileged(), s.background(s.daemonEnv(program), `"$SDE/run_switchd.sh" -p `+program)), nil)
	if err != nil {
		return fmt.Errorf("start switchd -p %s: %w", program, err)
	}
	s.agent.close() // the old agent died with the old switchd
	sctx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	if err := s.waitListening(sctx, s.opts.BfshellPort); err != nil {
		return fmt.Errorf("start switchd -p %s: bfshell port %d never answered: %w (see ~/.testbed/switchd.log on the switch)", program, s.opts.BfshellPort, err)
	}
	if err := s.EnsureAgent(sctx); err != nil {
		return fmt.Errorf("start switchd -p %s: %w", program, err)
	}
	h, err := s.Hello(ctx)
	if err != nil {
		return err
	}
	if h.Program != program {
		return fmt.Errorf("start switchd -p %s: the agent reports program %q", program, h.Program)
	}
	return nil
}

func validName(p string) bool {
	if p == "" {
		return false
	}
	for _, r := range p {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// waitListening asks until 127.0.0.1:port on the switch accepts.
func (s *Switch) waitListening(ctx context.Context, port int) error {
	return transport.Poll(ctx, func() (bool, error) {
		c, err := s.ssh.DialRemote(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			if transport.IsConnectionLost(err) || ctx.Err() != nil {
				return false, err
			}
			return false, nil
		}
		c.Close()
		return true, nil
	})
}

// Hello is the agent's greeting.
type Hello struct {
	Agent   string `json:"agent"`
	Version string `json:"version"`
	Program string `json:"program"`
	TimeNs  int64  `json:"time_ns"`
}

// Hello asks the agent who it is.
func (s *Switch) Hello(ctx context.Context) (Hello, error) {
	var h Hello
	if err := s.agent.call(ctx, "hello", nil, &h); err != nil {
		return h, err
	}
	if h.Version != AgentVersion {
		return h, fmt.Errorf("agent speaks protocol %q, this driver %q", h.Version, AgentVersion)
	}
	return h, nil
}

// EnsureAgent installs the agent if the switch has another version of it,
// and starts it if it does not answer.
func (s *Switch) EnsureAgent(ctx context.Context) error {
	if s.life != nil {
		return s.life.Ready(ctx)
	}
	sum := sha256.Sum256(AgentScript)
	want := hex.EncodeToString(sum[:])
	out, err := s.sh(ctx, "agent-sha", `sha256sum "$HOME/.testbed/testbed_agent.py" 2>/dev/null || true`, nil)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if f := strings.Fields(out); len(f) == 0 || f[0] != want {
		if _, err := s.sh(ctx, "agent-install", `mkdir -p "$HOME/.testbed" && cat > "$HOME/.testbed/testbed_agent.py.new" && mv "$HOME/.testbed/testbed_agent.py.new" "$HOME/.testbed/testbed_agent.py"`, AgentScript); err != nil {
			return fmt.Errorf("agent install: %w", err)
		}
	}
	if _, err := s.Hello(ctx); err == nil {
		return nil
	}
	s.agent.close()
	// The agent runs inside bf_switchd (bfrt_python), which reads it from
	// the path given; bfshell is only the client that asks it to.
	if _, err := s.sh(ctx, "agent-start", s.privilegeCheck(`"$SDE/run_bfshell.sh"`)+fmt.Sprintf(`(cd "$HOME/.testbed" && %s) > "$HOME/.testbed/agent.log" 2>&1 < /dev/null &
echo started`, s.background(s.daemonEnv(""), `"$SDE/run_bfshell.sh" -b "$HOME/.testbed/testbed_agent.py"`)), nil); err != nil {
		return fmt.Errorf("agent start: %w", err)
	}
	// An agent that dies at start (no program loaded, a Python error) never
	// answers: the wait is bounded by StartTimeout, not only by the
	// caller's context, which a recipe's step gives no deadline.
	sctx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	err = transport.Poll(sctx, func() (bool, error) {
		_, err := s.Hello(sctx)
		var ae *AgentError
		if errors.As(err, &ae) {
			return false, err
		}
		return err == nil, nil
	})
	if err != nil {
		if sctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("not within %v: %w", s.opts.StartTimeout, err)
		}
		return fmt.Errorf("agent did not answer on 127.0.0.1:%d: %w (see ~/.testbed/agent.log on the switch)", s.opts.AgentPort, err)
	}
	return nil
}

// AgentCall sends one operation of agent/PROTOCOL.md to the agent as it
// stands (args and result as that page gives them, failures as
// *AgentError). It is how another driver of the same switch reaches what
// only the agent offers: the BF Runtime gRPC driver's side channel for
// the port manager's FEC counters and the CPU port's packet-out
// (dut/tofino/bfrtgrpc, docs/tofino-grpc.md).
func (s *Switch) AgentCall(ctx context.Context, op string, args, out any) error {
	return s.agent.call(ctx, op, args, out)
}
