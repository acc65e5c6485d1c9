package host

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"testbed/transport"
)

// AgentBinary is a hostagent executable to install.
type AgentBinary struct {
	// Data is the executable; when nil it is read from Path.
	Data []byte
	Path string
	// Version, when set, is what the binary must report: its
	// "--version" prints "hostagent <Version>".
	Version string
}

// Installed reports what InstallAgent found and did.
type Installed struct {
	Path     string // on the host; relative paths are under the home directory
	Machine  string // uname -m
	GOARCH   string // Go's name for Machine
	Previous string // the version found there before ("" if none)
	Version  string // the version installed now
	SHA256   string
	Replaced bool // false: the same binary was already there
}

// AgentPath is where the hostagent binary lives on the host.
func (h *Host) AgentPath() string { return path.Join(h.opts.AgentDir, "hostagent") }

type agentProbe struct {
	machine, goarch, sha256, version string
	installed                        bool
}

func (h *Host) probeAgent(ctx context.Context) (agentProbe, error) {
	out, err := h.do(ctx, "hostagent probe", opAgentProbe, nil, h.AgentPath())
	if err != nil {
		return agentProbe{}, err
	}
	kv := keyValues(out)
	p := agentProbe{machine: kv["arch"], sha256: kv["sha256"], installed: kv["sha256"] != ""}
	if p.machine == "" {
		return p, fmt.Errorf("%s: hostagent probe: no machine type in %q", h.name, truncate(out, 200))
	}
	p.goarch, _ = GOARCH(p.machine)
	if v := kv["version"]; v != "" {
		p.version = strings.TrimSpace(strings.TrimPrefix(v, "hostagent"))
	}
	return p, nil
}

// Arch returns the host's machine type (uname -m) and Go's name for it
// ("" when Go has none).
func (h *Host) Arch(ctx context.Context) (machine, goarch string, err error) {
	p, err := h.probeAgent(ctx)
	return p.machine, p.goarch, err
}

// InstallAgent puts a hostagent binary at AgentPath unless the very same
// one (same sha256 and, when b.Version is set, the same reported version)
// is already there. It refuses an ELF binary built for another machine
// type than the host's. A replaced agent that was running is stopped first.
func (h *Host) InstallAgent(ctx context.Context, b AgentBinary) (Installed, error) {
	data := b.Data
	if data == nil {
		if b.Path == "" {
			return Installed{}, fmt.Errorf("%s: install hostagent: no binary given", h.name)
		}
		var err error
		if data, err = os.ReadFile(b.Path); err != nil {
			return Installed{}, fmt.Errorf("%s: install hostagent: %w", h.name, err)
		}
	}
	p, err := h.probeAgent(ctx)
	if err != nil {
		return Installed{}, err
	}
	in := Installed{Path: h.AgentPath(), Machine: p.machine, GOARCH: p.goarch, Previous: p.version}
	if binArch, isELF, err := elfGOARCH(data); isELF {
		if err != nil {
			return in, fmt.Errorf("%s: install hostagent: %w", h.name, err)
		}
		if binArch != p.goarch {
			return in, fmt.Errorf("%s: install hostagent: the binary is built for linux/%s, the host is %s (%s)", h.name, binArch, p.machine, orUnknown(p.goarch))
		}
	}
	sum := sha256.Sum256(data)
	in.SHA256 = hex.EncodeToString(sum[:])
	if p.installed && p.sha256 == in.SHA256 && (b.Version == "" || p.version == b.Version) {
		in.Version = p.version
		h.opts.Transcript.Note("hostagent %s already installed at %s", orUnknown(p.version), in.Path)
		return in, nil
	}
	if p.installed {
		// The old binary's agent must not keep serving under the new
		// binary's name.
		if err := h.stopAgent(ctx); err != nil {
			return in, err
		}
	}
	if _, err := h.Upload(ctx, in.Path, data, 0o755); err != nil {
		return in, fmt.Errorf("install hostagent: %w", err)
	}
	in.Replaced = true
	q, err := h.probeAgent(ctx)
	if err != nil {
		return in, err
	}
	in.Version = q.version
	if q.sha256 != in.SHA256 {
		return in, fmt.Errorf("%s: install hostagent: %s has sha256 %s after the upload, expected %s", h.name, in.Path, q.sha256, in.SHA256)
	}
	if q.version == "" {
		return in, fmt.Errorf("%s: install hostagent: %s --version printed no \"hostagent <version>\" line", h.name, in.Path)
	}
	if b.Version != "" && q.version != b.Version {
		return in, fmt.Errorf("%s: install hostagent: %s reports version %q, expected %q", h.name, in.Path, q.version, b.Version)
	}
	h.opts.Transcript.Note("hostagent %s installed at %s (was %s)", in.Version, in.Path, orUnknown(in.Previous))
	return in, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Agent is a running hostagent, reached through the SSH connection.
type Agent struct {
	// Addr is where the agent listens on the host's loopback.
	Addr string
	// BaseURL is the URL prefix for Client ("http://127.0.0.1:PORT").
	BaseURL string
	PID     int
	// Started is true when this driver started the agent (and so stops
	// it on Close); false when it found one running.
	Started bool
	// Client sends requests to the agent over forwarded channels, each
	// with this run's token.
	Client *http.Client
	host   *Host
}

// DialContext opens a connection to the agent through the SSH connection,
// whatever address it is asked for.
func (a *Agent) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	return a.host.ssh.DialRemote(ctx, a.Addr)
}

// StartAgent starts "hostagent serve --listen 127.0.0.1:0" on the host,
// detached from the SSH session (its own session, pid file, log file), and
// waits for the address it prints. An agent already running from the same
// binary is used as it is (and not stopped on Close).
func (h *Host) StartAgent(ctx context.Context) (*Agent, error) {
	h.mu.Lock()
	a := h.agent
	h.mu.Unlock()
	if a != nil {
		return a, nil
	}
	// A token for this run: sent on stdin (never on a command line, never
	// in the transcript), kept by the agent in a 0600 file and asked of
	// every request.
	token, err := newToken()
	if err != nil {
		return nil, fmt.Errorf("%s: start hostagent: %w", h.name, err)
	}
	out, err := h.do(ctx, "start hostagent", opAgentStart, []byte(token+"\n"), h.AgentPath(), h.opts.StateDir)
	if err != nil {
		return nil, err
	}
	kv := keyValues(out)
	started := kv["started"] != ""
	if !started && kv["running"] == "" {
		return nil, fmt.Errorf("%s: start hostagent: unexpected answer %q", h.name, truncate(out, 200))
	}
	sctx, cancel := context.WithTimeout(ctx, h.opts.StartTimeout)
	defer cancel()
	var st map[string]string
	var lastOut string
	err = transport.Poll(sctx, func() (bool, error) {
		out, err := h.do(sctx, "hostagent status", opAgentStatus, nil, h.AgentPath(), h.opts.StateDir)
		if err != nil {
			return false, err
		}
		lastOut, st = out, keyValues(out)
		if st["alive"] == "no" && st["pid"] != "" {
			return false, fmt.Errorf("%s: start hostagent: it exited%s", h.name, logTail(out))
		}
		return st["alive"] == "yes" && st["listen"] != "", nil
	})
	if err != nil {
		if sctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("%s: start hostagent: no \"listening\" line within %v%s", h.name, h.opts.StartTimeout, logTail(lastOut))
			if started {
				err = errors.Join(err, h.stopAgentScript(ctx))
			}
		}
		return nil, err
	}
	addr := st["listen"]
	host, port, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		if started {
			h.stopAgentScript(ctx)
		}
		return nil, fmt.Errorf("%s: start hostagent: it listens on %q, not on the loopback", h.name, addr)
	}
	pid, _ := strconv.Atoi(st["pid"])
	a = &Agent{Addr: addr, BaseURL: "http://" + net.JoinHostPort(host, port), PID: pid, Started: started, host: h}
	a.Client = &http.Client{Transport: &bearer{token: token, base: &http.Transport{
		DialContext:         a.DialContext,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}}
	// The SSH server must allow direct-tcpip channels.
	c, err := a.DialContext(ctx, "tcp", addr)
	if err != nil {
		if started {
			h.stopAgentScript(ctx)
		}
		return nil, fmt.Errorf("%s: hostagent listens on %s but a forwarded channel to it failed (does sshd allow TCP forwarding?): %w", h.name, addr, err)
	}
	c.Close()
	h.opts.Transcript.Note("hostagent pid %d on %s (started by this run: %v)", pid, addr, started)
	h.mu.Lock()
	if h.agent != nil { // a concurrent StartAgent won
		a2 := h.agent
		h.mu.Unlock()
		return a2, nil
	}
	h.agent = a
	h.mu.Unlock()
	return a, nil
}

func logTail(statusOut string) string {
	var lines []string
	for _, l := range strings.Split(statusOut, "\n") {
		if rest, ok := strings.CutPrefix(l, "log: "); ok {
			lines = append(lines, rest)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "; its log ends:\n" + strings.Join(lines, "\n")
}

// StopAgent stops the agent if this driver started it; one it found
// running is only forgotten.
func (h *Host) StopAgent(ctx context.Context) error {
	h.mu.Lock()
	a := h.agent
	h.agent = nil
	h.mu.Unlock()
	if a == nil {
		return nil
	}
	a.Client.CloseIdleConnections()
	if !a.Started {
		return nil
	}
	return h.stopAgentScript(ctx)
}

// stopAgent stops whatever agent runs from AgentPath, started by this
// driver or not.
func (h *Host) stopAgent(ctx context.Context) error {
	h.mu.Lock()
	a := h.agent
	h.agent = nil
	h.mu.Unlock()
	if a != nil {
		a.Client.CloseIdleConnections()
	}
	return h.stopAgentScript(ctx)
}

func (h *Host) stopAgentScript(ctx context.Context) error {
	_, err := h.do(ctx, "stop hostagent", opAgentStop, nil, h.AgentPath(), h.opts.StateDir)
	return err
}

// EnsureAgent installs the hostagent for the host's architecture (from
// Options.Agent) if the host has another one, starts it if it is not
// running, and returns it.
func (h *Host) EnsureAgent(ctx context.Context) (*Agent, Installed, error) {
	machine, goarch, err := h.Arch(ctx)
	if err != nil {
		return nil, Installed{}, err
	}
	if goarch == "" {
		return nil, Installed{}, fmt.Errorf("%s: hostagent: no Go architecture for machine type %q", h.name, machine)
	}
	b, err := h.opts.Agent.Binary(ctx, goarch)
	if err != nil {
		return nil, Installed{}, fmt.Errorf("%s: %w", h.name, err)
	}
	in, err := h.InstallAgent(ctx, b)
	if err != nil {
		return nil, in, err
	}
	a, err := h.StartAgent(ctx)
	return a, in, err
}

// GOARCH maps a machine type as uname -m prints it to Go's GOARCH.
func GOARCH(machine string) (string, bool) {
	switch m := strings.TrimSpace(machine); {
	case m == "x86_64" || m == "amd64":
		return "amd64", true
	case m == "i386" || m == "i486" || m == "i586" || m == "i686":
		return "386", true
	case m == "aarch64" || m == "arm64":
		return "arm64", true
	case strings.HasPrefix(m, "armv") || m == "arm":
		return "arm", true
	case m == "ppc64le" || m == "ppc64" || m == "s390x" || m == "riscv64":
		return m, true
	case m == "loongarch64":
		return "loong64", true
	}
	return "", false
}

// elfGOARCH says which GOARCH an ELF executable is for; isELF is false for
// anything else (a script, say, which runs anywhere).
func elfGOARCH(data []byte) (goarch string, isELF bool, err error) {
	if !bytes.HasPrefix(data, []byte(elf.ELFMAG)) {
		return "", false, nil
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return "", true, fmt.Errorf("not a readable ELF file: %w", err)
	}
	le := f.ByteOrder.String() == "LittleEndian"
	is64 := f.Class == elf.ELFCLASS64
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", true, nil
	case elf.EM_386:
		return "386", true, nil
	case elf.EM_AARCH64:
		return "arm64", true, nil
	case elf.EM_ARM:
		return "arm", true, nil
	case elf.EM_PPC64:
		if le {
			return "ppc64le", true, nil
		}
		return "ppc64", true, nil
	case elf.EM_S390:
		return "s390x", true, nil
	case elf.EM_RISCV:
		if is64 {
			return "riscv64", true, nil
		}
	case elf.EM_LOONGARCH:
		return "loong64", true, nil
	case elf.EM_MIPS:
		if is64 {
			if le {
				return "mips64le", true, nil
			}
			return "mips64", true, nil
		}
	}
	return "", true, fmt.Errorf("ELF machine %v is no Go architecture this driver knows", f.Machine)
}

// newToken returns a fresh random token (256 bits, hex).
func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// bearer adds "Authorization: Bearer <token>" to every request (the
// hostagent's API.md, "Authentication").
type bearer struct {
	token string
	base  *http.Transport
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// CloseIdleConnections is what http.Client.CloseIdleConnections calls.
func (b *bearer) CloseIdleConnections() { b.base.CloseIdleConnections() }
