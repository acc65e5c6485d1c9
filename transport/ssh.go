package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHOptions configure an SSH connection to a switch or host.
type SSHOptions struct {
	// KnownHosts is the known_hosts file the server's host key is checked
	// against (default ~/.ssh/known_hosts). There is no way to turn the
	// check off.
	KnownHosts string
	// KeyFile is a private key; Passphrase unlocks it if it is encrypted.
	KeyFile    string
	Passphrase string
	// UseAgent authenticates with the keys of the agent at $SSH_AUTH_SOCK.
	UseAgent bool
	// Password is tried after keys (e.g. a switch's management account).
	Password string
	Timeout  time.Duration // dial and per-command default deadline (default 10s)
	// KeepAlive is the interval of keepalive@openssh.com requests (default
	// 15s); a connection that misses two is dropped and redialled.
	KeepAlive time.Duration
	// MaxOutput bounds what one command may write to its standard output
	// and standard error together (default DefaultMaxOutput). A command
	// that writes more is killed and fails with ErrTooMuchOutput: its
	// output is held in memory until it ends, and a command gone wrong on
	// the far side (a cat of the wrong file, a loop that prints) would
	// otherwise take the host's memory until its deadline.
	MaxOutput  int
	Transcript *Transcript
}

// DefaultMaxOutput is the most output a command may write (SSHOptions.
// MaxOutput): far above any the drivers read (a table dump, iperf3's JSON
// report of a long test), far below a host's memory.
const DefaultMaxOutput = 64 << 20

// ErrTooMuchOutput: a command wrote more than SSHOptions.MaxOutput.
var ErrTooMuchOutput = errors.New("too much output")

// SSH is one long-lived SSH connection, redialled when it drops. It runs
// commands with their exit status and opens TCP channels to the far side's
// loopback (direct-tcpip), so services there need no port of their own.
type SSH struct {
	addr Address
	opts SSHOptions
	cfg  *ssh.ClientConfig

	mu     sync.Mutex
	client *ssh.Client
	// gone closes when client's connection has ended.
	gone   chan struct{}
	closed bool
	stop   chan struct{}
}

// DialSSH connects to an ssh://user@host[:port] address.
func DialSSH(ctx context.Context, address string, opts SSHOptions) (*SSH, error) {
	a, err := ParseAddress(address)
	if err != nil {
		return nil, err
	}
	if a.Scheme != "ssh" {
		return nil, fmt.Errorf("address %q: expected ssh://user@host[:port]", address)
	}
	if a.User == "" {
		return nil, fmt.Errorf("address %q: no user (expected ssh://user@host[:port])", address)
	}
	if !strings.Contains(a.Host, ":") || strings.HasSuffix(a.Host, "]") {
		a.Host = net.JoinHostPort(strings.Trim(a.Host, "[]"), "22")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 15 * time.Second
	}
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = DefaultMaxOutput
	}
	cfg, err := clientConfig(a.User, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", address, err)
	}
	s := &SSH{addr: a, opts: opts, cfg: cfg, stop: make(chan struct{})}
	if _, err := s.conn(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func clientConfig(user string, opts SSHOptions) (*ssh.ClientConfig, error) {
	kh := opts.KnownHosts
	if kh == "" {
		home, _ := os.UserHomeDir()
		kh = filepath.Join(home, ".ssh", "known_hosts")
	}
	hostKeys, err := knownhosts.New(kh)
	if err != nil {
		return nil, fmt.Errorf("known_hosts %s: %w (host keys are always checked)", kh, err)
	}
	var auths []ssh.AuthMethod
	if opts.KeyFile != "" {
		pem, err := os.ReadFile(opts.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("key file: %w", err)
		}
		var signer ssh.Signer
		if opts.Passphrase != "" {
			signer, err = ssh.ParsePrivateKeyWithPassphrase(pem, []byte(opts.Passphrase))
		} else {
			signer, err = ssh.ParsePrivateKey(pem)
		}
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, fmt.Errorf("key file %s is encrypted: give its passphrase by reference (password_env/password_file) or use ssh_agent", opts.KeyFile)
		}
		if err != nil {
			return nil, fmt.Errorf("key file %s: %w", opts.KeyFile, err)
		}
		auths = append(auths, ssh.PublicKeys(signer))
	}
	if opts.UseAgent {
		sock := os.Getenv("SSH_AUTH_SOCK")
		if sock == "" {
			return nil, errors.New("ssh_agent is set but SSH_AUTH_SOCK is empty")
		}
		auths = append(auths, ssh.PublicKeysCallback(func() ([]ssh.Signer, error) {
			c, err := net.Dial("unix", sock)
			if err != nil {
				return nil, fmt.Errorf("ssh agent: %w", err)
			}
			// The signers keep using the connection; it is closed with the process.
			return agent.NewClient(c).Signers()
		}))
	}
	if opts.Password != "" {
		auths = append(auths, ssh.Password(opts.Password))
	}
	if len(auths) == 0 {
		return nil, errors.New("no SSH credentials: give key_file, ssh_agent or a password reference")
	}
	return &ssh.ClientConfig{User: user, Auth: auths, HostKeyCallback: hostKeys, Timeout: opts.Timeout}, nil
}

// Address is the address dialled.
func (s *SSH) Address() string { return s.addr.Raw }

// conn returns the live client, dialling if there is none.
func (s *SSH) conn(ctx context.Context) (*ssh.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("ssh connection closed")
	}
	if s.client != nil {
		return s.client, nil
	}
	d := net.Dialer{Timeout: s.opts.Timeout}
	nc, err := d.DialContext(ctx, "tcp", s.addr.Host)
	if err != nil {
		s.opts.Transcript.Error(err)
		return nil, fmt.Errorf("ssh %s: %w", s.addr.Host, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	} else {
		nc.SetDeadline(time.Now().Add(s.opts.Timeout))
	}
	c, chans, reqs, err := ssh.NewClientConn(nc, s.addr.Host, s.cfg)
	if err != nil {
		nc.Close()
		s.opts.Transcript.Error(err)
		return nil, fmt.Errorf("ssh %s: %w", s.addr.Host, err)
	}
	nc.SetDeadline(time.Time{})
	client := ssh.NewClient(c, chans, reqs)
	gone := make(chan struct{})
	go func() { client.Wait(); close(gone) }()
	s.client, s.gone = client, gone
	s.opts.Transcript.Note("ssh connected to %s as %s", s.addr.Host, s.cfg.User)
	go s.watch(client, gone)
	return client, nil
}

// watch sends keepalives and forgets the client when it dies, so the next
// call redials.
func (s *SSH) watch(c *ssh.Client, done <-chan struct{}) {
	t := time.NewTicker(s.opts.KeepAlive)
	defer t.Stop()
	misses := 0
	for {
		select {
		case <-done:
			s.drop(c, "connection closed by peer")
			return
		case <-s.stop:
			return
		case <-t.C:
			errc := make(chan error, 1)
			go func() { _, _, err := c.SendRequest("keepalive@openssh.com", true, nil); errc <- err }()
			select {
			case err := <-errc:
				if err != nil {
					misses++
				} else {
					misses = 0
				}
			case <-time.After(s.opts.KeepAlive):
				misses++
			}
			if misses >= 2 {
				s.drop(c, "no answer to two keepalives")
				c.Close()
				return
			}
		}
	}
}

func (s *SSH) drop(c *ssh.Client, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == c {
		s.client = nil
		if !s.closed {
			s.opts.Transcript.Note("ssh connection lost: %s", why)
		}
	}
}

// forget drops a client that failed an operation at the transport level.
func (s *SSH) forget(c *ssh.Client) {
	s.drop(c, "operation failed")
	c.Close()
}

// ExitError is a command that ran and exited non-zero.
type ExitError struct {
	Command string
	Status  int
	Stderr  string
}

func (e *ExitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if len(msg) > 400 {
		msg = msg[len(msg)-400:]
	}
	if msg == "" {
		return fmt.Sprintf("%s: exit status %d", firstLine(e.Command), e.Status)
	}
	return fmt.Sprintf("%s: exit status %d: %s", firstLine(e.Command), e.Status, msg)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Run runs a command (a POSIX shell script) with stdin, and returns its
// standard output. A non-zero exit is an *ExitError; the deadline is the
// context's, or Timeout.
func (s *SSH) Run(ctx context.Context, cmd string, stdin io.Reader) (string, error) {
	out, _, err := s.RunStreams(ctx, cmd, stdin)
	return out, err
}

// RunStreams is Run that also returns the command's standard error, whether
// it exited zero or not.
func (s *SSH) RunStreams(ctx context.Context, cmd string, stdin io.Reader) (stdout, stderr string, err error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.Timeout)
		defer cancel()
	}
	// A retry must send the same input: rewind a seekable stdin to where
	// it started; any other stdin is not retried.
	var start int64
	seeker, seekable := stdin.(io.Seeker)
	if seekable {
		if start, err = seeker.Seek(0, io.SeekCurrent); err != nil {
			seekable = false
		}
	}
	stdout, stderr, err = s.run(ctx, cmd, stdin)
	if err != nil && IsConnectionLost(err) && ctx.Err() == nil && (stdin == nil || seekable) {
		// One retry on a fresh connection: the command never ran or its
		// result was lost with the connection; every command the drivers
		// send is safe to repeat.
		if seekable {
			if _, serr := seeker.Seek(start, io.SeekStart); serr != nil {
				return stdout, stderr, err
			}
		}
		s.opts.Transcript.Note("retrying on a new connection")
		stdout, stderr, err = s.run(ctx, cmd, stdin)
	}
	return stdout, stderr, err
}

func (s *SSH) run(ctx context.Context, cmd string, stdin io.Reader) (string, string, error) {
	c, err := s.conn(ctx)
	if err != nil {
		return "", "", err
	}
	sess, err := c.NewSession()
	if err != nil {
		s.forget(c)
		return "", "", fmt.Errorf("ssh session: %w: %w", err, ErrConnectionLost)
	}
	defer sess.Close()
	room := &outputRoom{left: s.opts.MaxOutput, over: make(chan struct{})}
	stdout, stderr := &roomBuffer{room: room}, &roomBuffer{room: room}
	sess.Stdout, sess.Stderr = stdout, stderr
	if stdin != nil {
		sess.Stdin = stdin
	}
	s.opts.Transcript.Sent(cmd)
	done := make(chan error, 1)
	go func() { done <- sess.Run(cmd) }()
	select {
	case err = <-done:
	case <-room.over:
	case <-ctx.Done():
		sess.Signal(ssh.SIGKILL)
		sess.Close()
		s.opts.Transcript.Error(fmt.Errorf("deadline: %w", ctx.Err()))
		return "", "", fmt.Errorf("%s: %w", firstLine(cmd), ctx.Err())
	}
	if room.full() {
		// What it wrote is not kept: the command ended or is killed
		// before anything reads it.
		sess.Signal(ssh.SIGKILL)
		sess.Close()
		err := fmt.Errorf("%s: %s: more than %d bytes of output: %w", s.addr.Raw, firstLine(cmd), s.opts.MaxOutput, ErrTooMuchOutput)
		s.opts.Transcript.Error(err)
		return "", "", err
	}
	if out := strings.TrimRight(stdout.String(), "\n"); out != "" {
		s.opts.Transcript.Received(out)
	}
	if err != nil {
		var ee *ssh.ExitError
		if errors.As(err, &ee) {
			xe := &ExitError{Command: cmd, Status: ee.ExitStatus(), Stderr: stderr.String()}
			s.opts.Transcript.Error(xe)
			return stdout.String(), stderr.String(), xe
		}
		s.opts.Transcript.Error(err)
		s.forget(c)
		return stdout.String(), stderr.String(), fmt.Errorf("%s: %w: %w", firstLine(cmd), err, ErrConnectionLost)
	}
	return stdout.String(), stderr.String(), nil
}

// outputRoom is what a command may still write, its standard output and
// error together; over closes when it has written more.
type outputRoom struct {
	mu   sync.Mutex
	left int
	over chan struct{}
}

func (r *outputRoom) full() bool {
	select {
	case <-r.over:
		return true
	default:
		return false
	}
}

// roomBuffer keeps one stream's output while there is room; what comes
// beyond is dropped (not refused: the session's copying goes on until the
// command is killed).
type roomBuffer struct {
	room *outputRoom
	b    bytes.Buffer
}

func (w *roomBuffer) Write(p []byte) (int, error) {
	r := w.room
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(p) > r.left {
		if r.left >= 0 {
			close(r.over)
		}
		r.left = -1
		return len(p), nil
	}
	w.b.Write(p)
	r.left -= len(p)
	return len(p), nil
}

func (w *roomBuffer) String() string { return w.b.String() }

// DialRemote opens a TCP connection from the far side to addr (normally
// 127.0.0.1:port there), through the SSH connection.
func (s *SSH) DialRemote(ctx context.Context, addr string) (net.Conn, error) {
	nc, err := s.dialRemote(ctx, addr)
	if err != nil && IsConnectionLost(err) && ctx.Err() == nil {
		// The connection died under us (its watcher may not know yet):
		// one more try on a new one.
		nc, err = s.dialRemote(ctx, addr)
	}
	return nc, err
}

func (s *SSH) dialRemote(ctx context.Context, addr string) (net.Conn, error) {
	c, err := s.conn(ctx)
	if err != nil {
		return nil, err
	}
	type res struct {
		nc  net.Conn
		err error
	}
	s.mu.Lock()
	gone := s.gone
	if s.client != c {
		gone = nil // replaced meanwhile: the plain wait below still ends with ctx
	}
	s.mu.Unlock()
	ch := make(chan res, 1)
	go func() { nc, err := c.Dial("tcp", addr); ch <- res{nc, err} }()
	select {
	case <-gone:
		// A channel opened while the connection was dying may never be
		// answered (the client forgets to fail it): treat it as lost.
		go func() {
			if r := <-ch; r.nc != nil {
				r.nc.Close()
			}
		}()
		s.forget(c)
		return nil, fmt.Errorf("%s on %s: connection ended: %w", addr, s.addr.Host, ErrConnectionLost)
	case r := <-ch:
		if r.err != nil {
			var oe *ssh.OpenChannelError
			if errors.As(r.err, &oe) {
				return nil, fmt.Errorf("%s on %s: %w", addr, s.addr.Host, r.err)
			}
			s.forget(c)
			return nil, fmt.Errorf("%s on %s: %w: %w", addr, s.addr.Host, r.err, ErrConnectionLost)
		}
		return r.nc, nil
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.nc != nil {
				r.nc.Close()
			}
		}()
		return nil, fmt.Errorf("%s on %s: %w", addr, s.addr.Host, ctx.Err())
	}
}

// Close closes the connection for good.
func (s *SSH) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.stop)
	if s.client != nil {
		s.client.Close()
		s.client = nil
	}
	return nil
}
