package results

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"testbed/internal/readfile"
)

// SignatureNamespace is the SSHSIG namespace bundle signatures are made
// in. Verify one with OpenSSH:
//
//	ssh-keygen -Y verify -f allowed_signers -I <identity> -n testbed-bundle@testbed -s SHA256SUMS.sig < SHA256SUMS
const SignatureNamespace = "testbed-bundle@testbed"

// SigFile is the signature of SHA256SUMS inside a bundle. It is not listed
// in SHA256SUMS: it signs it.
const SigFile = sumsFile + ".sig"

const (
	sshsigMagic   = "SSHSIG"
	sshsigVersion = 1
	armorBegin    = "-----BEGIN SSH SIGNATURE-----"
	armorEnd      = "-----END SSH SIGNATURE-----"
)

// sshsigSigned is the blob the key actually signs (PROTOCOL.sshsig §3).
func sshsigSigned(namespace, hashAlg string, digest []byte) []byte {
	var b bytes.Buffer
	b.WriteString(sshsigMagic)
	b.Write(ssh.Marshal(struct {
		Namespace, Reserved, HashAlg string
		Hash                         []byte
	}{namespace, "", hashAlg, digest}))
	return b.Bytes()
}

type sshsigBlob struct {
	Version   uint32
	PublicKey []byte
	Namespace string
	Reserved  string
	HashAlg   string
	Signature []byte
}

// SignSSH signs message in namespace in OpenSSH's SSHSIG format
// (PROTOCOL.sshsig), hashed with SHA-512, and returns it armored as
// `ssh-keygen -Y sign` writes it. RSA keys sign with rsa-sha2-512.
func SignSSH(rand io.Reader, signer ssh.Signer, namespace string, message []byte) ([]byte, error) {
	if namespace == "" {
		return nil, errors.New("sshsig: empty namespace")
	}
	digest := sha512.Sum512(message)
	data := sshsigSigned(namespace, "sha512", digest[:])
	pub := signer.PublicKey()
	var sig *ssh.Signature
	var err error
	switch pub.Type() {
	case ssh.KeyAlgoRSA:
		as, ok := signer.(ssh.AlgorithmSigner)
		if !ok {
			return nil, errors.New("sshsig: this RSA signer cannot make rsa-sha2-512 signatures")
		}
		sig, err = as.SignWithAlgorithm(rand, data, ssh.KeyAlgoRSASHA512)
	default:
		sig, err = signer.Sign(rand, data)
	}
	if err != nil {
		return nil, fmt.Errorf("sshsig: sign with %s key %s: %w", pub.Type(), ssh.FingerprintSHA256(pub), err)
	}
	blob := ssh.Marshal(sshsigBlob{Version: sshsigVersion, PublicKey: pub.Marshal(), Namespace: namespace, HashAlg: "sha512", Signature: ssh.Marshal(sig)})
	enc := base64.StdEncoding.EncodeToString(append([]byte(sshsigMagic), blob...))
	var out bytes.Buffer
	out.WriteString(armorBegin + "\n")
	for len(enc) > 70 {
		out.WriteString(enc[:70] + "\n")
		enc = enc[70:]
	}
	out.WriteString(enc + "\n" + armorEnd + "\n")
	return out.Bytes(), nil
}

// VerifySSH checks an armored SSHSIG signature of message made in
// namespace and returns the key that made it. It does not say whether that
// key is trusted: see AllowedSigners.
func VerifySSH(armored, message []byte, namespace string) (ssh.PublicKey, error) {
	text := strings.TrimSpace(string(armored))
	if !strings.HasPrefix(text, armorBegin) || !strings.HasSuffix(text, armorEnd) {
		return nil, fmt.Errorf("sshsig: not an armored SSH signature (expected %q ... %q)", armorBegin, armorEnd)
	}
	body := strings.Join(strings.Fields(text[len(armorBegin):len(text)-len(armorEnd)]), "")
	raw, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("sshsig: armor: %w", err)
	}
	if !bytes.HasPrefix(raw, []byte(sshsigMagic)) {
		return nil, fmt.Errorf("sshsig: missing %q magic", sshsigMagic)
	}
	var blob sshsigBlob
	if err := ssh.Unmarshal(raw[len(sshsigMagic):], &blob); err != nil {
		return nil, fmt.Errorf("sshsig: %w", err)
	}
	if blob.Version != sshsigVersion {
		return nil, fmt.Errorf("sshsig: version %d, this reader knows version %d", blob.Version, sshsigVersion)
	}
	if blob.Namespace != namespace {
		return nil, fmt.Errorf("sshsig: namespace %q, expected %q", blob.Namespace, namespace)
	}
	pub, err := ssh.ParsePublicKey(blob.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("sshsig: public key: %w", err)
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal(blob.Signature, &sig); err != nil {
		return nil, fmt.Errorf("sshsig: signature: %w", err)
	}
	if pub.Type() == ssh.KeyAlgoRSA && sig.Format != ssh.KeyAlgoRSASHA512 && sig.Format != ssh.KeyAlgoRSASHA256 {
		return nil, fmt.Errorf("sshsig: RSA signature format %q refused (SHA-1); expected rsa-sha2-512 or rsa-sha2-256", sig.Format)
	}
	var h hash.Hash
	switch blob.HashAlg {
	case "sha512":
		h = sha512.New()
	case "sha256":
		h = sha256.New()
	default:
		return nil, fmt.Errorf("sshsig: hash algorithm %q, expected sha512 or sha256", blob.HashAlg)
	}
	h.Write(message)
	if err := pub.Verify(sshsigSigned(blob.Namespace, blob.HashAlg, h.Sum(nil)), &sig); err != nil {
		return nil, fmt.Errorf("sshsig: signature by %s key %s does not match the signed file: %w", pub.Type(), ssh.FingerprintSHA256(pub), err)
	}
	return pub, nil
}

// AllowedSigner is one line of an OpenSSH allowed_signers file.
type AllowedSigner struct {
	Line        int
	Principals  []string
	Key         ssh.PublicKey
	CA          bool
	Namespaces  []string // patterns; empty means any
	ValidAfter  time.Time
	ValidBefore time.Time
	hasAfter    bool
	hasBefore   bool
}

// ParseAllowedSigners reads the allowed_signers format of ssh-keygen(1):
// "principals [options] keytype base64-key [comment]" per line, options
// cert-authority, namespaces="...", valid-after="...", valid-before="...".
// name is used in errors.
func ParseAllowedSigners(name string, data []byte) ([]AllowedSigner, error) {
	var out []AllowedSigner
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var principals, rest string
		if strings.HasPrefix(line, `"`) {
			end := strings.IndexByte(line[1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("%s:%d: unterminated quoted principals", name, n)
			}
			principals, rest = line[1:end+1], line[end+2:]
		} else {
			i := strings.IndexAny(line, " \t")
			if i < 0 {
				return nil, fmt.Errorf("%s:%d: expected \"principals [options] keytype base64-key\", found one field", name, n)
			}
			principals, rest = line[:i], line[i:]
		}
		pub, _, opts, _, err := ssh.ParseAuthorizedKey([]byte(strings.TrimSpace(rest)))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: expected \"principals [options] keytype base64-key\": %v", name, n, err)
		}
		s := AllowedSigner{Line: n, Principals: strings.Split(principals, ","), Key: pub}
		for _, o := range opts {
			k, v, _ := strings.Cut(o, "=")
			v = strings.Trim(v, `"`)
			switch strings.ToLower(k) {
			case "cert-authority":
				s.CA = true
			case "namespaces":
				s.Namespaces = strings.Split(v, ",")
			case "valid-after", "valid-before":
				t, err := parseSignerTime(v)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: option %s: %v", name, n, k, err)
				}
				if strings.EqualFold(k, "valid-after") {
					s.ValidAfter, s.hasAfter = t, true
				} else {
					s.ValidBefore, s.hasBefore = t, true
				}
			default:
				return nil, fmt.Errorf("%s:%d: unknown option %q (expected cert-authority, namespaces, valid-after or valid-before)", name, n, k)
			}
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, n+1, err)
	}
	return out, nil
}

// parseSignerTime reads YYYYMMDD[HHMM[SS]][Z], local time unless Z.
func parseSignerTime(v string) (time.Time, error) {
	loc := time.Local
	if strings.HasSuffix(v, "Z") || strings.HasSuffix(v, "z") {
		v, loc = v[:len(v)-1], time.UTC
	}
	for _, layout := range []string{"20060102", "200601021504", "20060102150405"} {
		if len(v) == len(layout) {
			if t, err := time.ParseInLocation(layout, v, loc); err == nil {
				return t, nil
			}
		}
	}
	return time.Time{}, fmt.Errorf("time %q: expected YYYYMMDD[HHMM[SS]][Z]", v)
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

// Principals returns the principals an allowed_signers list grants key in
// namespace at time now, and why none if it grants none.
func Principals(signers []AllowedSigner, key ssh.PublicKey, namespace string, now time.Time) ([]string, error) {
	fp := ssh.FingerprintSHA256(key)
	var why []string
	var out []string
	for _, s := range signers {
		if s.CA || !bytes.Equal(s.Key.Marshal(), key.Marshal()) {
			continue
		}
		switch {
		case len(s.Namespaces) > 0 && !matchAny(s.Namespaces, namespace):
			why = append(why, fmt.Sprintf("line %d allows namespaces %s, not %s", s.Line, strings.Join(s.Namespaces, ","), namespace))
		case s.hasAfter && now.Before(s.ValidAfter):
			why = append(why, fmt.Sprintf("line %d is valid only after %s", s.Line, s.ValidAfter.Format(time.RFC3339)))
		case s.hasBefore && !now.Before(s.ValidBefore):
			why = append(why, fmt.Sprintf("line %d expired at %s", s.Line, s.ValidBefore.Format(time.RFC3339)))
		default:
			out = append(out, s.Principals...)
		}
	}
	if len(out) == 0 {
		if len(why) == 0 {
			return nil, fmt.Errorf("key %s is not in the allowed signers", fp)
		}
		return nil, fmt.Errorf("key %s is not allowed: %s", fp, strings.Join(why, "; "))
	}
	return out, nil
}

// SignatureReport is what Verify found about SHA256SUMS.sig.
type SignatureReport struct {
	// Valid: the signature matches SHA256SUMS.
	Valid       bool   `json:"valid"`
	KeyType     string `json:"key_type,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// Checked: an allowed-signers file was given and grants the key
	// Principals. When false the signer is unchecked.
	Checked    bool     `json:"checked"`
	Principals []string `json:"principals,omitempty"`
	Problem    string   `json:"problem,omitempty"`
}

// checkSignature verifies sig against sums and, when signers is not nil,
// that the key is one of them.
func checkSignature(sig, sums []byte, signers []AllowedSigner, now time.Time) *SignatureReport {
	r := &SignatureReport{}
	pub, err := VerifySSH(sig, sums, SignatureNamespace)
	if err != nil {
		r.Problem = fmt.Sprintf("%s: %v", SigFile, err)
		return r
	}
	r.Valid, r.KeyType, r.Fingerprint = true, pub.Type(), ssh.FingerprintSHA256(pub)
	if signers == nil {
		return r
	}
	p, err := Principals(signers, pub, SignatureNamespace, now)
	if err != nil {
		r.Problem = fmt.Sprintf("%s: %v", SigFile, err)
		return r
	}
	r.Checked, r.Principals = true, p
	return r
}

// Sign writes SHA256SUMS.sig into a finalized bundle directory: an SSH
// signature over SHA256SUMS in SignatureNamespace. It refuses a bundle that
// does not verify and one that is already signed.
func Sign(dir string, signer ssh.Signer) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("sign %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("sign %s: not a directory: sign the bundle directory, then pack it", dir)
	}
	rep, err := Verify(dir)
	if err != nil {
		return fmt.Errorf("sign %s: %w", dir, err)
	}
	var problems []string
	for _, p := range rep.Problems {
		if !strings.HasPrefix(p, SigFile+":") {
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("sign %s: the bundle does not verify, refusing to sign it: %s", dir, strings.Join(problems, "; "))
	}
	sigPath := filepath.Join(dir, SigFile)
	if _, err := os.Stat(sigPath); err == nil {
		return fmt.Errorf("sign %s: already signed (%s exists); a bundle is never overwritten, remove it to sign again", dir, SigFile)
	}
	sums, err := readfile.Read(filepath.Join(dir, sumsFile), maxMetaBytes)
	if err != nil {
		return fmt.Errorf("sign %s: %w", dir, err)
	}
	sig, err := SignSSH(nil, signer, SignatureNamespace, sums)
	if err != nil {
		return fmt.Errorf("sign %s: %w", dir, err)
	}
	f, err := os.OpenFile(sigPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("sign %s: %w", dir, err)
	}
	_, werr := f.Write(sig)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(sigPath)
		return fmt.Errorf("sign %s: write %s: %w", dir, SigFile, err)
	}
	return nil
}

// SignerOptions say where the signing key comes from.
type SignerOptions struct {
	// KeyFile is an OpenSSH private key, or a public key (.pub) whose
	// private half is in the SSH agent. Empty means the agent's only key.
	KeyFile string
	// PassphraseFile holds the key's passphrase (first line).
	PassphraseFile string
	// AgentSocket is the SSH agent (usually $SSH_AUTH_SOCK); empty means
	// no agent.
	AgentSocket string
}

// LoadSigner returns a signer for opts and a function that releases it
// (closes the agent connection). An encrypted key with no passphrase file
// is looked up in the agent; with no agent either, the error says what to
// give.
func LoadSigner(ctx context.Context, opts SignerOptions) (ssh.Signer, func() error, error) {
	nop := func() error { return nil }
	var want ssh.PublicKey
	if opts.KeyFile != "" {
		data, err := os.ReadFile(opts.KeyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("signing key: %w", err)
		}
		if pub, _, _, _, err := ssh.ParseAuthorizedKey(data); err == nil {
			want = pub // a public key: its private half is in the agent
		} else {
			s, err := ssh.ParsePrivateKey(data)
			var missing *ssh.PassphraseMissingError
			switch {
			case err == nil:
				return s, nop, nil
			case errors.As(err, &missing) && opts.PassphraseFile != "":
				pass, err := os.ReadFile(opts.PassphraseFile)
				if err != nil {
					return nil, nil, fmt.Errorf("signing key %s: passphrase: %w", opts.KeyFile, err)
				}
				pass = bytes.TrimRight(bytes.SplitN(pass, []byte("\n"), 2)[0], "\r")
				s, err := ssh.ParsePrivateKeyWithPassphrase(data, pass)
				if err != nil {
					return nil, nil, fmt.Errorf("signing key %s: with the passphrase from %s: %w", opts.KeyFile, opts.PassphraseFile, err)
				}
				return s, nop, nil
			case errors.As(err, &missing):
				want = missing.PublicKey
				if want == nil {
					if pd, err := os.ReadFile(opts.KeyFile + ".pub"); err == nil {
						want, _, _, _, _ = ssh.ParseAuthorizedKey(pd)
					}
				}
				if opts.AgentSocket == "" || want == nil {
					return nil, nil, fmt.Errorf("signing key %s is protected by a passphrase: give --passphrase-file FILE, or add the key to an SSH agent (ssh-add) and set SSH_AUTH_SOCK", opts.KeyFile)
				}
			default:
				return nil, nil, fmt.Errorf("signing key %s: expected an OpenSSH private key or a .pub key held by the agent: %w", opts.KeyFile, err)
			}
		}
	}
	if opts.AgentSocket == "" {
		if want != nil {
			return nil, nil, fmt.Errorf("signing key %s is a public key: its private half must be in an SSH agent (set SSH_AUTH_SOCK)", opts.KeyFile)
		}
		return nil, nil, errors.New("no signing key: give --key FILE, or run an SSH agent (SSH_AUTH_SOCK)")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", opts.AgentSocket)
	if err != nil {
		return nil, nil, fmt.Errorf("ssh agent %s: %w", opts.AgentSocket, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	closeFn := func() error { stop(); return conn.Close() }
	signers, err := agent.NewClient(conn).Signers()
	if err != nil {
		closeFn()
		return nil, nil, fmt.Errorf("ssh agent %s: list keys: %w", opts.AgentSocket, err)
	}
	if want == nil {
		if len(signers) != 1 {
			closeFn()
			return nil, nil, fmt.Errorf("ssh agent %s holds %d keys: choose one with --key <key or key.pub>", opts.AgentSocket, len(signers))
		}
		return signers[0], closeFn, nil
	}
	for _, s := range signers {
		if bytes.Equal(s.PublicKey().Marshal(), want.Marshal()) {
			return s, closeFn, nil
		}
	}
	closeFn()
	return nil, nil, fmt.Errorf("ssh agent %s does not hold key %s (%s): add it with ssh-add, or give --passphrase-file", opts.AgentSocket, ssh.FingerprintSHA256(want), opts.KeyFile)
}

// ReadAllowedSigners reads an allowed_signers file.
func ReadAllowedSigners(file string) ([]AllowedSigner, error) {
	data, err := readfile.Read(file, maxMetaBytes)
	if err != nil {
		return nil, fmt.Errorf("allowed signers: %w", err)
	}
	s, err := ParseAllowedSigners(file, data)
	if err != nil {
		return nil, err
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("allowed signers %s: no keys in it", file)
	}
	return s, nil
}
