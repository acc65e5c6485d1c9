// Package host drives Linux end hosts over SSH.
//
// One long-lived SSH connection per host (host key checked against
// known_hosts, key or agent authentication, keepalives, redialled on drop;
// see transport.SSH) carries everything: commands with their output, exit
// status and deadline; file uploads without sftp (stdin to a temporary
// file, checksum checked, renamed into place); installing the hostagent
// binary when the host has a different one; starting it detached from the
// SSH session on the host's loopback; and reaching its HTTP API through a
// direct-tcpip channel of the same connection, so the agent needs no port
// reachable from outside; its only credential is the run's token, made
// here and handed over on agent-start's stdin.
//
// Settings a recipe changes (a sysctl, a route's rto_min) are applied with
// their value before and after recorded, and an undo that restores them.
// FanOut runs one operation on many hosts at once with a bound.
//
// The driver sends a small fixed set of shell scripts (commands.go,
// COMMANDS.md), so that an emulated host can answer them.
package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"testbed/transport"
)

// Options configure a host connection.
type Options struct {
	SSH transport.SSHOptions
	// Name names the host in errors and transcripts (default: the
	// address's host part).
	Name string
	// Timeout is the deadline of one command when the context has none
	// (default 10s).
	Timeout time.Duration
	// AgentDir is the directory the hostagent binary is installed in;
	// relative paths are under the login user's home (default .testbed/bin).
	AgentDir string
	// StateDir holds the running agent's pid file, stdout and log (default
	// .testbed/hostagent, under the home directory).
	StateDir string
	// StartTimeout bounds how long the agent may take to print its address
	// (default 30s).
	StartTimeout time.Duration
	// Sysctl and IP are the commands used for settings (default "sysctl"
	// and "ip" from the login PATH). Tests point them at stand-ins.
	Sysctl string
	IP     string
	// Agent says where a hostagent binary for the host's architecture
	// comes from (EnsureAgent).
	Agent      AgentSource
	Transcript *transport.Transcript
}

// Host is one Linux host.
type Host struct {
	name string
	ssh  *transport.SSH
	opts Options

	mu    sync.Mutex
	agent *Agent // the running agent, once StartAgent found or started it
}

// Open connects to a host at ssh://user@host[:port]. It starts nothing.
func Open(ctx context.Context, address string, opts Options) (*Host, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.SSH.Timeout <= 0 {
		opts.SSH.Timeout = opts.Timeout
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	if opts.AgentDir == "" {
		opts.AgentDir = ".testbed/bin"
	}
	if opts.StateDir == "" {
		opts.StateDir = ".testbed/hostagent"
	}
	opts.AgentDir, opts.StateDir = homeRelative(opts.AgentDir), homeRelative(opts.StateDir)
	if opts.Sysctl == "" {
		opts.Sysctl = "sysctl"
	}
	if opts.IP == "" {
		opts.IP = "ip"
	}
	if opts.Name == "" {
		opts.Name = address
		if a, err := transport.ParseAddress(address); err == nil {
			opts.Name = a.Host
		}
	}
	opts.SSH.Transcript = opts.Transcript
	c, err := transport.DialSSH(ctx, address, opts.SSH)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Name, err)
	}
	return &Host{name: opts.Name, ssh: c, opts: opts}, nil
}

// homeRelative turns "~/x" into "x": commands run in the home directory.
func homeRelative(p string) string {
	if p == "~" {
		return "."
	}
	return strings.TrimPrefix(p, "~/")
}

// Name is the host's name in errors.
func (h *Host) Name() string { return h.name }

// Close stops the agent if this driver started it, then closes the
// connection.
func (h *Host) Close() error {
	// Stopping waits up to 5 s for the agent to exit after TERM.
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.Timeout+10*time.Second)
	defer cancel()
	err := h.StopAgent(ctx)
	return errors.Join(err, h.ssh.Close())
}

// Result is what a command printed and its exit status.
type Result struct {
	Stdout string
	Stderr string
	Status int
}

// ExitError is a command that ran on the host and exited non-zero.
type ExitError struct {
	Host string
	// What is what was being done: `run "<command>"` for Run, else the
	// driver's operation ("upload .testbed/bin/hostagent").
	What    string
	Command string // Run's command line ("" for the driver's own operations)
	Status  int
	Stdout  string
	Stderr  string
}

func (e *ExitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if len(msg) > 400 {
		msg = "..." + msg[len(msg)-400:]
	}
	if msg == "" {
		return fmt.Sprintf("%s: %s: exit status %d", e.Host, e.What, e.Status)
	}
	return fmt.Sprintf("%s: %s: exit status %d: %s", e.Host, e.What, e.Status, msg)
}

// commandLabel shortens a command for an error message.
func commandLabel(cmd string) string {
	l := cmd
	if i := strings.IndexByte(l, '\n'); i >= 0 {
		l = l[:i] + " ..."
	}
	if len(l) > 120 {
		l = l[:117] + "..."
	}
	return fmt.Sprintf("run %q", l)
}

// Run runs a command line (in the login shell of the account) and returns
// its output and exit status. A non-zero exit returns the Result and an
// *ExitError; the deadline is the context's, or Options.Timeout.
//
// On the host the command is killed, with every process it started, when
// the deadline has passed (by timeout(1) where the host has it).
func (h *Host) Run(ctx context.Context, cmd string) (Result, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.opts.Timeout)
		defer cancel()
	}
	dl, _ := ctx.Deadline()
	// Whole seconds, one more than left: the driver gives up first.
	secs := int64(time.Until(dl)/time.Second) + 2
	stdout, stderr, err := h.ssh.RunStreams(ctx, script(opRun, strconv.FormatInt(max(secs, 2), 10), cmd), nil)
	r := Result{Stdout: stdout, Stderr: stderr}
	if err != nil {
		var xe *transport.ExitError
		if errors.As(err, &xe) {
			r.Status = xe.Status
			return r, &ExitError{Host: h.name, What: commandLabel(cmd), Command: cmd, Status: xe.Status, Stdout: stdout, Stderr: stderr}
		}
		return r, fmt.Errorf("%s: %s: %w", h.name, commandLabel(cmd), err)
	}
	return r, nil
}

// do runs one of the driver's own scripts; errors name the host and what
// was being done.
func (h *Host) do(ctx context.Context, what, op string, stdin []byte, args ...string) (string, error) {
	var in io.Reader
	if stdin != nil {
		in = bytes.NewReader(stdin)
	}
	stdout, _, err := h.ssh.RunStreams(ctx, script(op, args...), in)
	if err != nil {
		var xe *transport.ExitError
		if errors.As(err, &xe) {
			return stdout, &ExitError{Host: h.name, What: what, Status: xe.Status, Stdout: stdout, Stderr: xe.Stderr}
		}
		return stdout, fmt.Errorf("%s: %s: %w", h.name, what, err)
	}
	return stdout, nil
}

// Identity says what the host is: vendor and product from DMI, host name,
// OS, kernel and machine type.
func (h *Host) Identity(ctx context.Context) (transport.Identity, error) {
	out, err := h.do(ctx, "identity", opIdentity, nil)
	if err != nil {
		return transport.Identity{}, err
	}
	kv := keyValues(out)
	if kv["hostname"] == "" || kv["arch"] == "" {
		return transport.Identity{}, fmt.Errorf("%s: identity: unexpected answer %q", h.name, truncate(out, 200))
	}
	vendor := kv["vendor"]
	if vendor == "" {
		vendor = "Linux host"
	}
	model := kv["hostname"]
	if p := kv["product"]; p != "" {
		model = p + " (" + model + ")"
	}
	fw := strings.TrimSpace(kv["os"] + " " + kv["kernel"] + " " + kv["arch"])
	return transport.Identity{Vendor: vendor, Model: model, Serial: kv["serial"], Firmware: fw}, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// HTTPClient is the agent's client, or nil before StartAgent.
func (h *Host) HTTPClient() *http.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.agent == nil {
		return nil
	}
	return h.agent.Client
}
