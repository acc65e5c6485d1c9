package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"image"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"testbed/internal/browsertest"
	"testbed/results"
)

// sweepBundle runs a quick sweep on the simulated lab and returns its bundle.
func sweepBundle(t *testing.T, seed string, extra ...string) string {
	t.Helper()
	runs, state := dirs(t)
	args := append([]string{"exp", "run", "attenuation-sweep", "--runs-dir", runs, "--state-dir", state, "--seed", seed}, quick...)
	code, out, errOut := testbedRun(t, append(args, extra...)...)
	if code != exitOK {
		t.Fatalf("sweep: exit %d\n%s", code, errOut)
	}
	return lastLine(out)
}

// keyFile writes a fresh ed25519 OpenSSH private key, encrypted when
// passphrase is not empty, and returns its path and public key.
func keyFile(t *testing.T, passphrase string) (string, ssh.PublicKey) {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var blk *pem.Block
	if passphrase == "" {
		blk, err = ssh.MarshalPrivateKey(k, "lab key")
	} else {
		blk, err = ssh.MarshalPrivateKeyWithPassphrase(k, "lab key", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(p, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	pub, _ := ssh.NewPublicKey(k.Public())
	return p, pub
}

func TestResultsSignVerifyPack(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "") // no agent: the key files decide
	bundle := sweepBundle(t, "7")
	key, pub := keyFile(t, "")
	allowed := filepath.Join(t.TempDir(), "allowed_signers")
	os.WriteFile(allowed, []byte("lab@example.org "+string(ssh.MarshalAuthorizedKey(pub))), 0o644)

	// Before signing, --allowed-signers demands a signature.
	if code, out, _ := testbedRun(t, "results", "verify", bundle, "--allowed-signers", allowed); code != exitFailed || !strings.Contains(out, "unsigned") {
		t.Errorf("unsigned bundle with --allowed-signers: exit %d: %s", code, out)
	}
	// A locked key with no passphrase file and no agent: a clear error.
	locked, _ := keyFile(t, "pw")
	if code, _, errOut := testbedRun(t, "results", "sign", bundle, "--key", locked); code != exitBadInput || !strings.Contains(errOut, "--passphrase-file") {
		t.Errorf("locked key: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(bundle, results.SigFile)); !os.IsNotExist(err) {
		t.Fatalf("a refused sign left a signature behind")
	}

	code, out, errOut := testbedRun(t, "results", "sign", bundle, "--key", key)
	if code != exitOK || !strings.Contains(out, ssh.FingerprintSHA256(pub)) {
		t.Fatalf("sign: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = testbedRun(t, "results", "verify", bundle)
	if code != exitOK || !strings.Contains(out, "signer unchecked") || !strings.Contains(out, ssh.FingerprintSHA256(pub)) {
		t.Errorf("verify without allowed signers: exit %d: %s", code, out)
	}
	code, out, _ = testbedRun(t, "results", "verify", bundle, "--allowed-signers", allowed)
	if code != exitOK || !strings.Contains(out, "allowed as lab@example.org") {
		t.Errorf("verify with allowed signers: exit %d: %s", code, out)
	}
	_, strangerPub := keyFile(t, "")
	strangers := filepath.Join(t.TempDir(), "strangers")
	os.WriteFile(strangers, []byte("eve@example.org "+string(ssh.MarshalAuthorizedKey(strangerPub))), 0o644)
	if code, out, _ := testbedRun(t, "results", "verify", bundle, "--allowed-signers", strangers, "--output", "json"); code != exitFailed || !strings.Contains(out, "not in the allowed signers") {
		t.Errorf("signer not allowed: exit %d: %s", code, out)
	}
	if bin, err := exec.LookPath("ssh-keygen"); err == nil {
		// The README's command, verbatim.
		cmd := exec.Command("sh", "-c", `"$0" -Y verify -f "$1" -I lab@example.org -n testbed-bundle@testbed -s SHA256SUMS.sig < SHA256SUMS`, bin, allowed)
		cmd.Dir = bundle
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("ssh-keygen -Y verify: %v\n%s", err, b)
		}
	} else {
		t.Log("ssh-keygen not installed: skipped the OpenSSH cross-check")
	}

	// Pack: the same bytes twice, from the CLI and from the binary's stdout.
	wd := t.TempDir()
	a1, a2 := filepath.Join(wd, "one.tar.gz"), filepath.Join(wd, "two.tar.gz")
	for _, out := range []string{a1, a2} {
		if code, stdout, errOut := testbedRun(t, "results", "pack", bundle, "--out", out); code != exitOK || strings.TrimSpace(stdout) != out {
			t.Fatalf("pack: exit %d: %s %s", code, stdout, errOut)
		}
	}
	b1, _ := os.ReadFile(a1)
	b2, _ := os.ReadFile(a2)
	piped, err := exec.Command(testbedBin, "results", "pack", bundle, "--out", "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	if len(b1) == 0 || !bytes.Equal(b1, b2) || !bytes.Equal(b1, piped) {
		t.Fatalf("packs differ: %d, %d, %d bytes", len(b1), len(b2), len(piped))
	}
	if code, _, errOut := testbedRun(t, "results", "pack", bundle, "--out", a1); code != exitBadInput || !strings.Contains(errOut, "exists") {
		t.Errorf("pack over an existing archive: exit %d: %s", code, errOut)
	}
	code, out, _ = testbedRun(t, "results", "verify", a1, "--allowed-signers", allowed)
	if code != exitOK || !strings.Contains(out, "allowed as lab@example.org") {
		t.Errorf("verify the archive: exit %d: %s", code, out)
	}

	// Tampering with SHA256SUMS breaks the signature.
	sums := filepath.Join(bundle, "SHA256SUMS")
	data, _ := os.ReadFile(sums)
	os.WriteFile(sums, bytes.Replace(data, []byte("  summary.json"), []byte("  summary.json.bak"), 1), 0o644)
	code, out, _ = testbedRun(t, "results", "verify", bundle)
	if code != exitFailed || !strings.Contains(out, "SHA256SUMS.sig: sshsig: signature by") {
		t.Errorf("tampered SHA256SUMS: exit %d: %s", code, out)
	}
}

func TestResultsDiff(t *testing.T) {
	a := sweepBundle(t, "7")
	same := sweepBundle(t, "7")
	coarser := sweepBundle(t, "7", "--set", "step_db=2")

	code, out, errOut := testbedRun(t, "results", "diff", a, same)
	if code != exitOK || !strings.Contains(out, "IDENTICAL") || !strings.Contains(out, "links.l10g.loss_cliff_db.1e-06") {
		t.Fatalf("same seed, same parameters: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = testbedRun(t, "results", "diff", a, coarser)
	if code != exitFailed || !strings.Contains(out, "DIFFERENT") || !regexp.MustCompile(`params\.step_db\s+1 dB\s+2 dB`).MatchString(out) {
		t.Fatalf("different step: exit %d\n%s", code, out)
	}
	code, out, _ = testbedRun(t, "results", "diff", a, coarser, "--output", "json")
	var rep struct {
		A, B struct {
			Path  string `json:"path"`
			RunID string `json:"run_id"`
		}
		Identical bool `json:"identical"`
		Metrics   []struct {
			Path      string   `json:"path"`
			A         any      `json:"a"`
			B         any      `json:"b"`
			AbsChange *float64 `json:"abs_change"`
			Status    string   `json:"status"`
		} `json:"metrics"`
		Provenance []struct {
			Field string `json:"field"`
			A, B  string
			Same  bool `json:"same"`
		} `json:"provenance"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitFailed {
		t.Fatalf("json: exit %d: %v\n%s", code, err, out)
	}
	if rep.Identical || rep.A.Path != a || rep.B.RunID == "" || len(rep.Metrics) == 0 {
		t.Errorf("json report: %+v", rep)
	}
	changed := 0
	for _, m := range rep.Metrics {
		if m.Status != results.MetricEqual && m.Status != results.MetricWithin {
			changed++
		}
	}
	var provFields []string
	for _, p := range rep.Provenance {
		provFields = append(provFields, p.Field)
	}
	if changed == 0 || !strings.Contains(strings.Join(provFields, " "), "devices.voa1.firmware") {
		t.Errorf("json: %d changed metrics; provenance fields %v", changed, provFields)
	}
	// Ignoring every metric leaves nothing to differ.
	if code, out, _ := testbedRun(t, "results", "diff", a, coarser, "--ignore", "*"); code != exitOK {
		t.Errorf("--ignore '*': exit %d\n%s", code, out)
	}
	for _, bad := range [][]string{{"--tolerance", "-1"}, {"--tolerance", "lots"}, {"--direction", "up"}} {
		if code, _, errOut := testbedRun(t, append([]string{"results", "diff", a, same}, bad...)...); code != exitBadInput || errOut == "" {
			t.Errorf("%v: exit %d: %s", bad, code, errOut)
		}
	}
	if code, _, errOut := testbedRun(t, "results", "diff", a, filepath.Join(t.TempDir(), "nope")); code != exitBadInput || !strings.Contains(errOut, "nope") {
		t.Errorf("missing bundle: exit %d: %s", code, errOut)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	bundle := sweepBundle(t, "3")
	p := filepath.Join(bundle, "manifest.json")
	data, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(data, []byte(`"testbed.bundle/v1"`), []byte(`"testbed.bundle/v3"`), 1), 0o644)
	const want = "bundle schema v3 is newer than this testbed understands (v1); upgrade testbed"
	for _, args := range [][]string{{"results", "show", bundle}, {"results", "diff", bundle, bundle}} {
		if code, _, errOut := testbedRun(t, args...); code != exitBadInput || !strings.Contains(errOut, want) {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
	if code, out, _ := testbedRun(t, "results", "verify", bundle); code != exitFailed || !strings.Contains(out, want) {
		t.Errorf("verify: exit %d: %s", code, out)
	}
}

// TestReportIsSelfContained: a report must open years later, offline, so
// it may load nothing from the network, and every link it has must be a
// file of the bundle.
func TestReportIsSelfContained(t *testing.T) {
	bundle := sweepBundle(t, "5")
	html, err := os.ReadFile(filepath.Join(bundle, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)<script`),
		regexp.MustCompile(`(?i)<link\b`),
		regexp.MustCompile(`(?i)<(img|iframe|object|embed)\b`),
		regexp.MustCompile(`(?i)url\(`),
		regexp.MustCompile(`(?i)@import`),
	} {
		if loc := bad.FindIndex(html); loc != nil {
			t.Errorf("report loads something: %q", html[loc[0]:min(loc[1]+60, len(html))])
		}
	}
	attrs := regexp.MustCompile(`(?i)\s(src|href|xlink:href)\s*=\s*"([^"]*)"`).FindAllSubmatch(html, -1)
	if len(attrs) == 0 {
		t.Fatal("report links no data file; the test would check nothing")
	}
	for _, m := range attrs {
		ref := string(m[2])
		if strings.Contains(ref, ":") || strings.HasPrefix(ref, "/") {
			t.Errorf("%s=%q is not a path inside the bundle", m[1], ref)
			continue
		}
		if _, err := os.Stat(filepath.Join(bundle, filepath.FromSlash(ref))); err != nil {
			t.Errorf("%s=%q: %v", m[1], ref, err)
		}
	}
	// No attribute may point off the machine. Device addresses in the text
	// (the inventory as used) are content, not assets; the SVG namespace
	// name is never fetched.
	for _, m := range regexp.MustCompile(`\s([\w:-]+)\s*=\s*["']?([a-zA-Z][a-zA-Z0-9+.-]*:)?//`).FindAllSubmatch(html, -1) {
		if string(m[1]) != "xmlns" {
			t.Errorf("attribute %s points at a network location: %q", m[1], m[0])
		}
	}
}

// TestReportRendersInChromium opens a real bundle's report.html in headless
// Chromium: the DOM it builds must hold the plot as SVG with one line per
// link, and a screenshot must show both links' colours.
func TestReportRendersInChromium(t *testing.T) {
	if _, err := browsertest.HeadlessPath(); err != nil {
		t.Skip(err.Error() + "; skipping the browser rendering test")
	}
	bundle := sweepBundle(t, "5") // two links: l10g and l25g-rs
	// A tab of the binary's shared headless browser (TestMain runs the
	// tests with browsertest.Main): the DOM and a screenshot of the plot,
	// as recipetest.CheckReport takes them.
	dom, img, _ := browsertest.Render(t, filepath.Join(bundle, "report.html"), 1000, 1200, "svg")
	svgs := regexp.MustCompile(`(?s)<svg\b.*?</svg>`).FindAllString(dom, -1)
	if len(svgs) != 1 {
		t.Fatalf("chromium's DOM has %d svg plots, want 1\n%.2000s", len(svgs), dom)
	}
	if n := strings.Count(svgs[0], "<g data-series="); n != 2 {
		t.Errorf("plot has %d lines, want one per link (2)", n)
	}
	if !strings.Contains(svgs[0], "l10g") || !strings.Contains(svgs[0], "l25g-rs") {
		t.Errorf("plot legend lacks the links")
	}

	// The report draws series in #1f77b4 then #d62728.
	for name, want := range map[string][3]int{"blue l10g": {0x1f, 0x77, 0xb4}, "red l25g-rs": {0xd6, 0x27, 0x28}} {
		n := countColour(img, want)
		t.Logf("%s: %d pixels", name, n)
		if n < 30 {
			t.Errorf("screenshot shows %d pixels of the %s series; the plot did not render", n, name)
		}
	}
}

func countColour(img image.Image, c [3]int) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(int(r>>8), c[0]) && near(int(g>>8), c[1]) && near(int(bl>>8), c[2]) {
				n++
			}
		}
	}
	return n
}

func near(a, b int) bool { return a-b <= 24 && b-a <= 24 }

func TestResultsReadLimitFlags(t *testing.T) {
	b := sweepBundle(t, "21")
	for _, c := range [][]string{
		{"results", "verify", b, "--max-entry-bytes", "1KiB"},
		{"results", "show", b, "--max-bytes", "2k"},
		{"results", "diff", b, b, "--max-entries", "2"},
	} {
		code, _, errOut := testbedRun(t, c...)
		if code != exitBadInput || !strings.Contains(errOut, "raise the limit with "+c[len(c)-2]) {
			t.Errorf("%v: exit %d: %s", c, code, errOut)
		}
	}
	if code, _, errOut := testbedRun(t, "results", "verify", b, "--max-bytes", "lots"); code != exitBadInput || !strings.Contains(errOut, "--max-bytes") {
		t.Errorf("bad size: exit %d: %s", code, errOut)
	}
	if code, _, errOut := testbedRun(t, "results", "verify", b, "--max-bytes", "64MiB", "--max-entries", "100"); code != exitOK {
		t.Errorf("within raised limits: exit %d: %s", code, errOut)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1048576": 1 << 20, "512KiB": 512 << 10, "64MiB": 64 << 20, "4GiB": 4 << 30, "2g": 2 << 30, "1.5K": 1536, "10 MB": 10 << 20, "100b": 100} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "lots", "1XB", "9e30GiB"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
