package wire

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// ExecHandler runs one command of an SSH "exec" request: it reads stdin,
// writes stdout and stderr, and returns the exit status.
type ExecHandler func(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) int

// TunnelHandler serves a direct-tcpip channel to host:port on the
// emulated device; ok=false refuses it (nothing listens there).
type TunnelHandler func(host string, port int) (serve func(conn io.ReadWriteCloser), ok bool)

// SSHServer is an SSH server on 127.0.0.1 for emulated switches and hosts:
// public-key authentication against the keys it was given, "exec"
// requests, keepalives, and direct-tcpip channels.
type SSHServer struct {
	ln      net.Listener
	cfg     *ssh.ServerConfig
	hostKey ssh.Signer
	exec    ExecHandler
	tunnel  TunnelHandler
	faults  *Faults
	log     *slog.Logger
	user    string

	mu    sync.Mutex
	conns map[*ssh.ServerConn]bool
	raw   map[net.Conn]bool // accepted, handshake not yet done
	wg    sync.WaitGroup
	ctx   context.Context
	stop  context.CancelFunc
}

// SSHServerOptions configure an SSHServer.
type SSHServerOptions struct {
	Listen     string // default 127.0.0.1:0
	User       string // the account (default "admin")
	Authorized []ssh.PublicKey
	Exec       ExecHandler
	Tunnel     TunnelHandler
	Faults     *Faults
	Log        *slog.Logger
}

// NewSSHServer starts an SSH server with a fresh ed25519 host key.
func NewSSHServer(o SSHServerOptions) (*SSHServer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	hk, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, err
	}
	if o.User == "" {
		o.User = "admin"
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &SSHServer{hostKey: hk, exec: o.Exec, tunnel: o.Tunnel, faults: o.Faults, log: o.Log, user: o.User, conns: map[*ssh.ServerConn]bool{}, raw: map[net.Conn]bool{}}
	authorized := o.Authorized
	s.cfg = &ssh.ServerConfig{
		PublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if meta.User() != s.user {
				return nil, fmt.Errorf("unknown user %q", meta.User())
			}
			for _, k := range authorized {
				if bytes.Equal(k.Marshal(), key.Marshal()) {
					return &ssh.Permissions{}, nil
				}
			}
			return nil, fmt.Errorf("key %s not authorized", ssh.FingerprintSHA256(key))
		},
	}
	s.cfg.AddHostKey(hk)
	s.ln, err = net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, err
	}
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is the listening address.
func (s *SSHServer) Addr() string { return s.ln.Addr().String() }

// HostKey is the server's public host key.
func (s *SSHServer) HostKey() ssh.PublicKey { return s.hostKey.PublicKey() }

// User is the account the server accepts.
func (s *SSHServer) User() string { return s.user }

// KnownHostsLine is the known_hosts line for this server.
func (s *SSHServer) KnownHostsLine() string {
	return knownHostsLine(s.Addr(), s.HostKey())
}

func knownHostsLine(addr string, k ssh.PublicKey) string {
	host, port, _ := net.SplitHostPort(addr)
	return fmt.Sprintf("[%s]:%s %s", host, port, bytes.TrimSpace(ssh.MarshalAuthorizedKey(k)))
}

// DropConnections closes every open SSH connection (fault injection),
// and every connection still in its handshake.
func (s *SSHServer) DropConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
	for c := range s.raw {
		c.Close()
	}
}

// loginGrace bounds a connection's handshake, as OpenSSH's sshd bounds
// it (LoginGraceTime, 120 s by default): a client that connects and
// never speaks holds a goroutine until then, not for ever.
const loginGrace = 2 * time.Minute

// Close stops the server and closes every connection.
func (s *SSHServer) Close() error {
	s.stop()
	err := s.ln.Close()
	s.DropConnections()
	s.wg.Wait()
	return err
}

func (s *SSHServer) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(nc)
		}()
	}
}

func (s *SSHServer) serve(nc net.Conn) {
	// Held from accept, so that Close ends a handshake under way (a
	// client that connected and never sent its version held Close
	// for ever, and with it the lab's).
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.raw[nc] = true
	s.mu.Unlock()
	nc.SetDeadline(time.Now().Add(loginGrace))
	sc, chans, reqs, err := ssh.NewServerConn(nc, s.cfg)
	nc.SetDeadline(time.Time{})
	s.mu.Lock()
	delete(s.raw, nc)
	if err == nil && s.ctx.Err() == nil {
		s.conns[sc] = true // in the same hold, so Close cannot miss it
	}
	s.mu.Unlock()
	if err != nil {
		s.log.Debug("ssh handshake", "err", err)
		nc.Close()
		return
	}
	if s.ctx.Err() != nil {
		sc.Close()
		return
	}
	defer func() {
		s.mu.Lock()
		delete(s.conns, sc)
		s.mu.Unlock()
		sc.Close()
	}()
	go func() {
		for r := range reqs { // keepalive@openssh.com and friends
			if r.WantReply {
				r.Reply(r.Type == "keepalive@openssh.com", nil)
			}
		}
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for nch := range chans {
		switch nch.ChannelType() {
		case "session":
			ch, creqs, err := nch.Accept()
			if err != nil {
				continue
			}
			wg.Add(1)
			go func() { defer wg.Done(); s.session(ch, creqs) }()
		case "direct-tcpip":
			var p struct {
				Host     string
				Port     uint32
				OrigHost string
				OrigPort uint32
			}
			if err := ssh.Unmarshal(nch.ExtraData(), &p); err != nil {
				nch.Reject(ssh.ConnectionFailed, "bad direct-tcpip request")
				continue
			}
			if s.tunnel == nil {
				nch.Reject(ssh.Prohibited, "no forwarding")
				continue
			}
			serveFn, ok := s.tunnel(p.Host, int(p.Port))
			if !ok {
				nch.Reject(ssh.ConnectionFailed, fmt.Sprintf("connect to %s port %d failed: Connection refused", p.Host, p.Port))
				continue
			}
			ch, creqs, err := nch.Accept()
			if err != nil {
				continue
			}
			go ssh.DiscardRequests(creqs)
			wg.Add(1)
			go func() { defer wg.Done(); serveFn(ch) }()
		default:
			nch.Reject(ssh.UnknownChannelType, "unsupported channel type")
		}
	}
}

func (s *SSHServer) session(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	for r := range reqs {
		switch r.Type {
		case "env", "pty-req":
			r.Reply(r.Type == "env", nil)
		case "exec":
			var p struct{ Command string }
			if err := ssh.Unmarshal(r.Payload, &p); err != nil {
				r.Reply(false, nil)
				return
			}
			r.Reply(true, nil)
			status := 127
			if s.exec != nil {
				status = s.exec(s.ctx, p.Command, ch, ch, ch.Stderr())
			}
			ch.CloseWrite()
			st := make([]byte, 4)
			binary.BigEndian.PutUint32(st, uint32(status))
			ch.SendRequest("exit-status", false, st)
			return
		default:
			if r.WantReply {
				r.Reply(false, nil)
			}
		}
	}
}

// SSHClientFiles writes a client key pair's private half and a known_hosts
// file for the given servers into dir, returning their paths: what an
// inventory's key_file and known_hosts options point at.
func SSHClientFiles(dir string, key ed25519.PrivateKey, servers ...*SSHServer) (keyFile, knownHosts string, err error) {
	pemBlock, err := ssh.MarshalPrivateKey(key, "testbed simulated lab")
	if err != nil {
		return "", "", err
	}
	keyFile = filepath.Join(dir, "sim_ed25519")
	var pemBuf bytes.Buffer
	if err := pem.Encode(&pemBuf, pemBlock); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, pemBuf.Bytes(), 0o600); err != nil {
		return "", "", err
	}
	var kh bytes.Buffer
	for _, s := range servers {
		fmt.Fprintln(&kh, s.KnownHostsLine())
	}
	knownHosts = filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(knownHosts, kh.Bytes(), 0o600); err != nil {
		return "", "", err
	}
	return keyFile, knownHosts, nil
}
