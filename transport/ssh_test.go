package transport

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sshServer serves SSH on 127.0.0.1 with a password, running two commands:
// "print N" writes N bytes to standard output and exits 0; "spew" writes
// until its channel is closed (a command gone wrong). It returns the
// address and a known_hosts file with its host key.
func sshServer(t *testing.T) (addr, knownHostsFile string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{PasswordCallback: func(c ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
		if c.User() == "lab" && string(pw) == "secret-pw" {
			return nil, nil
		}
		return nil, errors.New("denied")
	}}
	cfg.AddHostKey(signer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go serveSSH(nc, cfg)
		}
	}()
	kh := filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(ln.Addr().String())}, signer.PublicKey())
	if err := os.WriteFile(kh, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return ln.Addr().String(), kh
}

func serveSSH(nc net.Conn, cfg *ssh.ServerConfig) {
	defer nc.Close()
	conn, chans, reqs, err := ssh.NewServerConn(nc, cfg)
	if err != nil {
		return
	}
	defer conn.Close()
	go ssh.DiscardRequests(reqs)
	for nch := range chans {
		if nch.ChannelType() != "session" {
			nch.Reject(ssh.UnknownChannelType, "session only")
			continue
		}
		ch, creqs, err := nch.Accept()
		if err != nil {
			return
		}
		go func() {
			defer ch.Close()
			for req := range creqs {
				if req.Type != "exec" {
					req.Reply(req.Type == "signal", nil)
					continue
				}
				var p struct{ Command string }
				if err := ssh.Unmarshal(req.Payload, &p); err != nil {
					req.Reply(false, nil)
					return
				}
				req.Reply(true, nil)
				chunk := []byte(strings.Repeat("y\n", 16<<10))
				if n, ok := strings.CutPrefix(p.Command, "print "); ok {
					k, _ := strconv.Atoi(n)
					for k > 0 {
						w, err := ch.Write(chunk[:min(k, len(chunk))])
						if err != nil {
							return
						}
						k -= w
					}
				} else {
					for {
						if _, err := ch.Write(chunk); err != nil {
							return
						}
					}
				}
				status := make([]byte, 4)
				binary.BigEndian.PutUint32(status, 0)
				ch.SendRequest("exit-status", false, status)
				return
			}
		}()
	}
}

// A command's output is held in memory until it ends: one that writes
// without end is killed once it has written more than MaxOutput, and the
// run fails saying so, where it took memory until its deadline (an hour's
// deadline at the loopback's rate is many GB). Output up to the limit is
// returned whole.
func TestSSHBoundsACommandsOutput(t *testing.T) {
	addr, kh := sshServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const limit = 1 << 20
	s, err := DialSSH(ctx, "ssh://lab@"+addr, SSHOptions{KnownHosts: kh, Password: "secret-pw", Timeout: time.Hour, MaxOutput: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.Run(ctx, "print "+strconv.Itoa(limit), nil)
	if err != nil || len(out) != limit {
		t.Fatalf("print %d: %d bytes, %v", limit, len(out), err)
	}
	_, err = s.Run(ctx, "print "+strconv.Itoa(limit+1), nil)
	if !errors.Is(err, ErrTooMuchOutput) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "print") {
		t.Fatalf("print %d: %v, want ErrTooMuchOutput naming the host and the command", limit+1, err)
	}
	if _, err = s.Run(ctx, "spew", nil); !errors.Is(err, ErrTooMuchOutput) {
		t.Fatalf("spew: %v, want ErrTooMuchOutput", err)
	}
	// The connection serves the next command.
	if out, err := s.Run(ctx, "print 10", nil); err != nil || len(out) != 10 {
		t.Fatalf("after a command killed: %q, %v", out, err)
	}
}
