package results

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/pem"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// testKeys gives one key of every supported type, generated once per test
// binary (the tests read the keys and never change them): an RSA key's
// generation was a third of a second of CPU under the race detector, and
// seven were made.
func testKeys(t *testing.T) map[string]crypto.Signer {
	t.Helper()
	sharedKeys.once.Do(func() {
		_, ed, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			sharedKeys.err = err
			return
		}
		rk, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			sharedKeys.err = err
			return
		}
		ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			sharedKeys.err = err
			return
		}
		sharedKeys.keys = map[string]crypto.Signer{"ed25519": ed, "rsa": rk, "ecdsa": ek}
	})
	if sharedKeys.err != nil {
		t.Fatal(sharedKeys.err)
	}
	return maps.Clone(sharedKeys.keys)
}

var sharedKeys struct {
	once sync.Once
	keys map[string]crypto.Signer
	err  error
}

// strangerKey is a key of no other test's: one testKeys did not give.
func strangerKey(t *testing.T) crypto.Signer {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func sshSigner(t *testing.T, k crypto.Signer) ssh.Signer {
	t.Helper()
	s, err := ssh.NewSignerFromKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// writeKey writes k as an OpenSSH private key file (0600), encrypted when
// passphrase is not empty, and its .pub beside it. Where ssh-keygen is
// installed, it encrypts the key (ssh-keygen -p) with one round of the
// bcrypt KDF, not the 16 Go's writer always uses: every reading of the
// key pays the KDF again (TestLoadSigner reads it twice), 16 rounds were
// most of that test's 5.8 s of CPU under the race detector, and no test
// here is about the KDF's cost; the file is OpenSSH's own then.
func writeKey(t *testing.T, dir, name string, k crypto.Signer, passphrase string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	keygen, lookErr := exec.LookPath("ssh-keygen")
	var blk *pem.Block
	var err error
	if passphrase == "" || lookErr == nil {
		blk, err = ssh.MarshalPrivateKey(k, "test key")
	} else {
		blk, err = ssh.MarshalPrivateKeyWithPassphrase(k, "test key", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	if passphrase != "" && lookErr == nil {
		if out, err := exec.Command(keygen, "-p", "-q", "-a", "1", "-P", "", "-N", passphrase, "-f", p).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen -p: %v\n%s", err, out)
		}
	}
	pub, _ := ssh.NewPublicKey(k.Public())
	if err := os.WriteFile(p+".pub", ssh.MarshalAuthorizedKey(pub), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func allowedLine(principal string, pub ssh.PublicKey) string {
	return principal + " " + string(ssh.MarshalAuthorizedKey(pub))
}

func finalized(t testing.TB) string {
	t.Helper()
	b, _ := newBundle(t)
	fill(t, b)
	if err := b.Finalize(StatusOK, ""); err != nil {
		t.Fatal(err)
	}
	return b.Dir()
}

func sshKeygen(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skip("ssh-keygen not installed (Debian: apt-get install openssh-client); skipping the cross-check with OpenSSH")
	}
	return p
}

// opensshVerify runs ssh-keygen -Y verify on a bundle, as the README says.
func opensshVerify(t *testing.T, bin, dir, allowed, identity string) (string, error) {
	t.Helper()
	sums, err := os.Open(filepath.Join(dir, sumsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer sums.Close()
	cmd := exec.Command(bin, "-Y", "verify", "-f", allowed, "-I", identity, "-n", SignatureNamespace, "-s", filepath.Join(dir, SigFile))
	cmd.Stdin = sums
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestSignVerifyEveryKeyType(t *testing.T) {
	for typ, k := range testKeys(t) {
		t.Run(typ, func(t *testing.T) {
			s := sshSigner(t, k)
			dir := finalized(t)
			if err := Sign(dir, s); err != nil {
				t.Fatal(err)
			}
			if err := Sign(dir, s); err == nil || !strings.Contains(err.Error(), "already signed") {
				t.Errorf("second Sign: %v", err)
			}
			sig, _ := os.ReadFile(filepath.Join(dir, SigFile))
			if !bytes.HasPrefix(sig, []byte(armorBegin+"\n")) {
				t.Errorf("signature not armored:\n%s", sig)
			}
			if typ == "rsa" && !bytes.Contains(decodeArmor(t, sig), []byte(ssh.KeyAlgoRSASHA512)) {
				t.Errorf("RSA signature is not rsa-sha2-512")
			}
			// Unchecked signer.
			r, err := Verify(dir)
			if err != nil || !r.OK || r.Signature == nil || !r.Signature.Valid || r.Signature.Checked || r.Signature.Fingerprint != ssh.FingerprintSHA256(s.PublicKey()) {
				t.Fatalf("verify: %v %+v %+v", err, r, r.Signature)
			}
			// Checked against allowed signers.
			signers, err := ParseAllowedSigners("allowed", []byte(allowedLine("alice@lab,bob@lab", s.PublicKey())))
			if err != nil {
				t.Fatal(err)
			}
			r, _ = VerifyWith(dir, VerifyOptions{AllowedSigners: signers})
			if !r.OK || !r.Signature.Checked || strings.Join(r.Signature.Principals, ",") != "alice@lab,bob@lab" {
				t.Fatalf("verify with allowed signers: %+v %+v", r, r.Signature)
			}
			// A stranger's key is refused.
			other := sshSigner(t, strangerKey(t))
			strangers, _ := ParseAllowedSigners("allowed", []byte(allowedLine("eve@lab", other.PublicKey())))
			r, _ = VerifyWith(dir, VerifyOptions{AllowedSigners: strangers})
			if r.OK || !strings.Contains(strings.Join(r.Problems, "\n"), "not in the allowed signers") {
				t.Errorf("unknown signer accepted: %+v", r)
			}
			// The archive carries the signature.
			tgz := filepath.Join(t.TempDir(), "b.tar.gz")
			if err := Pack(dir, tgz); err != nil {
				t.Fatal(err)
			}
			r, _ = VerifyWith(tgz, VerifyOptions{AllowedSigners: signers})
			if !r.OK || !r.Signature.Checked {
				t.Errorf("verify packed signed bundle: %+v", r)
			}

			if bin, err := exec.LookPath("ssh-keygen"); err == nil {
				allowed := filepath.Join(t.TempDir(), "allowed_signers")
				os.WriteFile(allowed, []byte(allowedLine("alice@lab", s.PublicKey())), 0o644)
				if out, err := opensshVerify(t, bin, dir, allowed, "alice@lab"); err != nil {
					t.Fatalf("ssh-keygen -Y verify refused our signature: %v\n%s", err, out)
				}
				if out, err := opensshVerify(t, bin, dir, allowed, "mallory@lab"); err == nil {
					t.Errorf("ssh-keygen accepted the wrong identity:\n%s", out)
				}
			}

			// Tampering with SHA256SUMS breaks the signature, for us and for OpenSSH.
			p := filepath.Join(dir, sumsFile)
			sums, _ := os.ReadFile(p)
			os.WriteFile(p, append(sums, []byte("0000000000000000000000000000000000000000000000000000000000000000  forged\n")...), 0o644)
			r, _ = Verify(dir)
			if r.OK || r.Signature == nil || r.Signature.Valid || !strings.Contains(strings.Join(r.Problems, "\n"), "does not match") {
				t.Errorf("tampered SHA256SUMS verified: %+v", r)
			}
			if bin, err := exec.LookPath("ssh-keygen"); err == nil {
				allowed := filepath.Join(t.TempDir(), "allowed_signers")
				os.WriteFile(allowed, []byte(allowedLine("alice@lab", s.PublicKey())), 0o644)
				if out, err := opensshVerify(t, bin, dir, allowed, "alice@lab"); err == nil {
					t.Errorf("ssh-keygen accepted a tampered SHA256SUMS:\n%s", out)
				}
			}
		})
	}
}

func decodeArmor(t *testing.T, sig []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, l := range strings.Split(string(sig), "\n") {
		if l != "" && !strings.HasPrefix(l, "-----") {
			out.WriteString(l)
		}
	}
	raw, err := base64.StdEncoding.DecodeString(out.String())
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestOpenSSHSignatureVerifiesHere(t *testing.T) {
	bin := sshKeygen(t)
	for _, typ := range []string{"ed25519", "rsa", "ecdsa"} {
		t.Run(typ, func(t *testing.T) {
			dir := finalized(t)
			// The binary's key of the type, in an OpenSSH key file; its
			// public line is OpenSSH's (ssh-keygen -y). ssh-keygen -t
			// rsa made a 3072-bit key each run, a second of CPU or more.
			key := writeKey(t, t.TempDir(), "id", testKeys(t)[typ], "")
			pubData, err := exec.Command(bin, "-y", "-f", key).Output()
			if err != nil {
				t.Fatalf("ssh-keygen -y: %v", err)
			}
			sign := exec.Command(bin, "-Y", "sign", "-f", key, "-n", SignatureNamespace, filepath.Join(dir, sumsFile))
			if out, err := sign.CombinedOutput(); err != nil {
				t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
			}
			signers, err := ParseAllowedSigners("allowed", []byte("carol@lab namespaces=\""+SignatureNamespace+"\" "+string(pubData)))
			if err != nil {
				t.Fatal(err)
			}
			r, err := VerifyWith(dir, VerifyOptions{AllowedSigners: signers})
			if err != nil || !r.OK || !r.Signature.Checked || r.Signature.Principals[0] != "carol@lab" {
				t.Fatalf("OpenSSH's signature: %v %+v %+v", err, r, r.Signature)
			}
			// Signed in another namespace: refused.
			other := filepath.Join(t.TempDir(), "x")
			os.WriteFile(other, []byte("x"), 0o644)
			exec.Command(bin, "-Y", "sign", "-f", key, "-n", "file", other).Run()
			sig, _ := os.ReadFile(other + ".sig")
			if _, err := VerifySSH(sig, []byte("x"), SignatureNamespace); err == nil || !strings.Contains(err.Error(), `namespace "file"`) {
				t.Errorf("a signature in namespace file was accepted: %v", err)
			}
		})
	}
}

func TestAllowedSignersOptions(t *testing.T) {
	s := sshSigner(t, testKeys(t)["ed25519"])
	key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey())))
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		line, want string // want: "" means allowed
	}{
		{`a@lab ` + key, ""},
		{`"a@lab,b@lab" ` + key + ` comment`, ""},
		{`a@lab namespaces="git,file" ` + key, "allows namespaces git,file"},
		{`a@lab namespaces="testbed-*" ` + key, ""},
		{`a@lab valid-after="20270101Z" ` + key, "valid only after"},
		{`a@lab valid-before="20260101" ` + key, "expired"},
		{`a@lab cert-authority ` + key, "not in the allowed signers"},
	}
	for _, c := range cases {
		signers, err := ParseAllowedSigners("allowed", []byte("# comment\n\n"+c.line+"\n"))
		if err != nil {
			t.Errorf("%s: %v", c.line, err)
			continue
		}
		_, err = Principals(signers, s.PublicKey(), SignatureNamespace, now)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.line, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want %q", c.line, err, c.want)
		}
	}
	for line, want := range map[string]string{
		"alice":                      "allowed:1: expected",
		"alice ssh-ed25519 AAAA!":    "allowed:1:",
		`alice bogus="x" ` + key:     `unknown option "bogus"`,
		`alice valid-after=x ` + key: "expected YYYYMMDD",
	} {
		if _, err := ParseAllowedSigners("allowed", []byte(line)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", line, err, want)
		}
	}
}

// startAgent serves an SSH agent holding keys on a unix socket.
func startAgent(t *testing.T, keys ...crypto.Signer) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agent")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	kr := agent.NewKeyring()
	for _, k := range keys {
		if err := kr.Add(agent.AddedKey{PrivateKey: k}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); agent.ServeAgent(kr, c) }()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
		os.RemoveAll(dir)
	})
	return sock
}

func TestLoadSigner(t *testing.T) {
	ctx := context.Background()
	keys := testKeys(t)
	dir := t.TempDir()
	plain := writeKey(t, dir, "plain", keys["ed25519"], "")
	locked := writeKey(t, dir, "locked", keys["rsa"], "correct horse")
	pass := filepath.Join(dir, "pass")
	os.WriteFile(pass, []byte("correct horse\n"), 0o600)
	wrong := filepath.Join(dir, "wrong")
	os.WriteFile(wrong, []byte("battery staple\n"), 0o600)

	s, done, err := LoadSigner(ctx, SignerOptions{KeyFile: plain})
	if err != nil || s.PublicKey().Type() != ssh.KeyAlgoED25519 {
		t.Fatalf("plain key: %v", err)
	}
	done()
	if _, _, err := LoadSigner(ctx, SignerOptions{KeyFile: locked}); err == nil || !strings.Contains(err.Error(), "--passphrase-file") || !strings.Contains(err.Error(), "SSH_AUTH_SOCK") {
		t.Errorf("locked key without passphrase: %v", err)
	}
	if _, _, err := LoadSigner(ctx, SignerOptions{KeyFile: locked, PassphraseFile: wrong}); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("wrong passphrase: %v", err)
	}
	s, _, err = LoadSigner(ctx, SignerOptions{KeyFile: locked, PassphraseFile: pass})
	if err != nil || s.PublicKey().Type() != ssh.KeyAlgoRSA {
		t.Fatalf("passphrase file: %v", err)
	}
	d := finalized(t)
	if err := Sign(d, s); err != nil {
		t.Fatal(err)
	}
	if r, _ := Verify(d); !r.OK {
		t.Errorf("signed with decrypted key: %+v", r)
	}

	// The agent holds the locked key: the key file names which one to use.
	sock := startAgent(t, keys["ecdsa"], keys["rsa"])
	for _, kf := range []string{locked, locked + ".pub"} {
		s, done, err := LoadSigner(ctx, SignerOptions{KeyFile: kf, AgentSocket: sock})
		if err != nil {
			t.Fatalf("%s via agent: %v", kf, err)
		}
		d := finalized(t)
		if err := Sign(d, s); err != nil {
			t.Fatalf("sign via agent: %v", err)
		}
		done()
		if r, _ := Verify(d); !r.OK || r.Signature.KeyType != ssh.KeyAlgoRSA {
			t.Errorf("signed via agent: %+v", r)
		}
		if bin, err := exec.LookPath("ssh-keygen"); err == nil {
			allowed := filepath.Join(t.TempDir(), "allowed_signers")
			os.WriteFile(allowed, []byte(allowedLine("agent@lab", s.PublicKey())), 0o644)
			if out, err := opensshVerify(t, bin, d, allowed, "agent@lab"); err != nil {
				t.Errorf("ssh-keygen -Y verify of an agent RSA signature: %v\n%s", err, out)
			}
		}
	}
	if _, _, err := LoadSigner(ctx, SignerOptions{AgentSocket: sock}); err == nil || !strings.Contains(err.Error(), "holds 2 keys") {
		t.Errorf("ambiguous agent: %v", err)
	}
	if _, _, err := LoadSigner(ctx, SignerOptions{KeyFile: plain + ".pub", AgentSocket: sock}); err == nil || !strings.Contains(err.Error(), "does not hold key") {
		t.Errorf("key absent from agent: %v", err)
	}
	if _, _, err := LoadSigner(ctx, SignerOptions{KeyFile: plain + ".pub"}); err == nil || !strings.Contains(err.Error(), "SSH agent") {
		t.Errorf("public key without agent: %v", err)
	}
	if _, _, err := LoadSigner(ctx, SignerOptions{KeyFile: pass}); err == nil || !strings.Contains(err.Error(), "expected an OpenSSH private key") {
		t.Errorf("not a key: %v", err)
	}
}

func TestSignRefusesBrokenOrPackedBundle(t *testing.T) {
	s := sshSigner(t, testKeys(t)["ed25519"])
	d := finalized(t)
	os.WriteFile(filepath.Join(d, "summary.json"), []byte("{}"), 0o644)
	if err := Sign(d, s); err == nil || !strings.Contains(err.Error(), "changed: summary.json") {
		t.Errorf("signed a tampered bundle: %v", err)
	}
	d = finalized(t)
	tgz := filepath.Join(t.TempDir(), "b.tar.gz")
	if err := Pack(d, tgz); err != nil {
		t.Fatal(err)
	}
	if err := Sign(tgz, s); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("signed an archive: %v", err)
	}
	if r, _ := VerifyWith(d, VerifyOptions{AllowedSigners: []AllowedSigner{{Key: s.PublicKey(), Principals: []string{"x"}}}}); r.OK || !strings.Contains(strings.Join(r.Problems, "\n"), "unsigned") {
		t.Errorf("unsigned bundle passed with allowed signers: %+v", r)
	}
}
