package results

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const secret = "s3cr3t-Planted-9"

func newBundle(t testing.TB) (*Bundle, string) {
	t.Helper()
	root := t.TempDir()
	m := Manifest{RunID: NewRunID(time.Now(), "attenuation-sweep"), Recipe: RecipeRef{Name: "attenuation-sweep", Version: "1"},
		Params: []Param{{Name: "pw", Value: "x" + secret, Type: "string", Source: "set"}}, Command: []string{"testbed", "--set", "pw=" + secret}}
	b, err := Create(root, m, Options{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	return b, root
}

func fill(t testing.TB, b *Bundle) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.Event(Event{Type: "step.start", Message: "using " + secret}))
	tw, err := b.CreateTable(Table{Name: "loss", Fields: []Field{{Name: "link", Type: "string"}, {Name: "att", Type: "number", Unit: "dB"}, {Name: "loss", Type: "number"}},
		Plot: &Plot{X: "att", Y: "loss", Series: "link", LogY: true}})
	must(err)
	must(tw.Write("l1", 1.0, 0.0))
	must(tw.Write("l1", 2.0, 1e-6))
	must(tw.Write("l2"+secret, 2.0, 1e-3))
	tr, err := b.Transcript("voa1")
	must(err)
	tr.Write([]byte("> :INP1:ATT 3dB pw=" + secret + "\n"))
	must(b.WriteSummary(map[string]any{"k": secret, "v": 1.5}))
}

func TestRoundTripVerifiesWithStandardTools(t *testing.T) {
	b, _ := newBundle(t)
	fill(t, b)
	if err := b.Finalize(StatusOK, ""); err != nil {
		t.Fatal(err)
	}
	if err := b.Finalize(StatusOK, ""); err == nil {
		t.Error("second Finalize accepted")
	}
	r, err := Verify(b.Dir())
	if err != nil || !r.OK || r.Status != StatusOK {
		t.Fatalf("verify: %v %+v", err, r)
	}
	if _, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command("sha256sum", "-c", "SHA256SUMS")
		cmd.Dir = b.Dir()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sha256sum -c: %v\n%s", err, out)
		}
	}
	rd, err := Open(b.Dir())
	if err != nil || rd.Incomplete || len(rd.Tables) != 1 || rd.Tables[0].Rows != 3 || rd.Events != 1 {
		t.Fatalf("open: %v %+v", err, rd)
	}
	html, _ := os.ReadFile(filepath.Join(b.Dir(), "report.html"))
	if !bytes.Contains(html, []byte("<svg")) || !bytes.Contains(html, []byte(b.Manifest().RunID)) || bytes.Contains(html, []byte("NaN")) {
		t.Errorf("report lacks the plot or run id, or has NaN")
	}
	dp, _ := os.ReadFile(filepath.Join(b.Dir(), "datapackage.json"))
	if !bytes.Contains(dp, []byte(`"unit": "dB"`)) || !bytes.Contains(dp, []byte("tabular-data-package")) {
		t.Errorf("datapackage.json: %s", dp)
	}
}

func TestNoSecretInAnyFile(t *testing.T) {
	b, _ := newBundle(t)
	fill(t, b)
	b.Finalize(StatusFailed, "failed near "+secret)
	filepath.Walk(b.Dir(), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			if data, _ := os.ReadFile(p); bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s holds the secret", p)
			}
		}
		return nil
	})
}

func TestVerifyDetectsTampering(t *testing.T) {
	cases := map[string]func(dir string){
		"changed: data/loss.csv": func(dir string) {
			p := filepath.Join(dir, "data", "loss.csv")
			d, _ := os.ReadFile(p)
			d[len(d)-2] ^= 1
			os.WriteFile(p, d, 0o644)
		},
		"missing: summary.json":        func(dir string) { os.Remove(filepath.Join(dir, "summary.json")) },
		"extra: data/x.csv":            func(dir string) { os.WriteFile(filepath.Join(dir, "data", "x.csv"), []byte("a\n"), 0o644) },
		"manifest.json does not parse": func(dir string) { os.WriteFile(filepath.Join(dir, "manifest.json"), []byte("{"), 0o644) },
	}
	for want, tamper := range cases {
		b, _ := newBundle(t)
		fill(t, b)
		b.Finalize(StatusOK, "")
		tamper(b.Dir())
		r, err := Verify(b.Dir())
		if err != nil || r.OK || !strings.Contains(strings.Join(r.Problems, "\n"), want) {
			t.Errorf("%s: got %v %+v", want, err, r)
		}
	}
}

func TestCrashLeavesReadableIncompleteBundle(t *testing.T) {
	b, _ := newBundle(t)
	fill(t, b) // no Finalize: the process "died"
	rd, err := Open(b.Dir())
	if err != nil || !rd.Incomplete || rd.Tables[0].Rows != 3 || rd.Events != 1 {
		t.Fatalf("open incomplete: %v %+v", err, rd)
	}
	r, _ := Verify(b.Dir())
	if r.OK || !strings.Contains(strings.Join(r.Problems, " "), "never finalized") {
		t.Fatalf("verify of unfinished bundle: %+v", r)
	}
}

func TestNeverOverwriteAndIDsSortByTime(t *testing.T) {
	root := t.TempDir()
	m := Manifest{RunID: "fixed-id"}
	if _, err := Create(root, m, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(root, m, Options{}); err == nil {
		t.Fatal("second Create with the same id succeeded")
	}
	seen := map[string]bool{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prev := ""
	for i := 0; i < 10000; i++ {
		id := NewRunID(t0.Add(time.Duration(i)*time.Millisecond), "Loss Sweep!")
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
		if id <= prev {
			t.Fatalf("%s does not sort after %s", id, prev)
		}
		prev = id
	}
	if strings.ContainsAny(prev, " !/") {
		t.Errorf("unsafe id %q", prev)
	}
}

func TestArchiveVerifies(t *testing.T) {
	b, root := newBundle(t)
	fill(t, b)
	b.Finalize(StatusOK, "")
	out := filepath.Join(root, "b.tar.gz")
	if err := Archive(b.Dir(), out); err != nil {
		t.Fatal(err)
	}
	if r, err := Verify(out); err != nil || !r.OK {
		t.Fatalf("verify archive: %v %+v", err, r)
	}
	if err := Archive(b.Dir(), out); err == nil {
		t.Error("Archive overwrote an existing file")
	}
}

func TestDataFilesAreWrittenOnceListedAndVerified(t *testing.T) {
	b, _ := newBundle(t)
	fill(t, b)
	f := DataFile{Path: "frr/sw1.conf", Mediatype: "text/plain", Description: "route filters"}
	if err := b.WriteDataFile(f, []byte("ip prefix-list X seq 5 permit 10.0.0.0/8 "+secret+"\n")); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []DataFile{f, {Path: "../escape"}, {Path: "/abs"}, {Path: "a/../b"}, {Path: "loss.csv"}, {Path: ""}} {
		if err := b.WriteDataFile(bad, []byte("x")); err == nil {
			t.Errorf("data file %q accepted", bad.Path)
		}
	}
	if err := b.Finalize(StatusOK, ""); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(b.Dir(), "data", "frr", "sw1.conf"))
	if err != nil || strings.Contains(string(got), secret) {
		t.Fatalf("data file %q %v: missing or not scrubbed", got, err)
	}
	dp, _ := os.ReadFile(filepath.Join(b.Dir(), "datapackage.json"))
	if !strings.Contains(string(dp), `"path": "data/frr/sw1.conf"`) || !strings.Contains(string(dp), `"profile": "data-package"`) ||
		!strings.Contains(string(dp), `"profile": "tabular-data-resource"`) {
		t.Errorf("datapackage.json does not list the file as a resource beside the table:\n%s", dp)
	}
	if r, err := Verify(b.Dir()); err != nil || !r.OK {
		t.Fatalf("verify: %v %+v", err, r)
	}
}
