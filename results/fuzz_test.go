package results

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// Fuzz targets for every parser of bundle input. `make fuzz` runs each
// (scripts/fuzz.sh); `go test` runs their seeds, here and in
// testdata/fuzz/<target>/.

// fuzzLimits keep one fuzz input cheap.
var fuzzLimits = ReadLimits{MaxBytes: 1 << 20, MaxEntryBytes: 256 << 10, MaxEntries: 64}

func FuzzManifest(f *testing.F) {
	f.Add([]byte(`{"schema":"testbed.bundle/v1","run_id":"r","status":"ok","params":[{"name":"a","value":1}],"lab":{"inventory":{"devices":{"a":{"options":{"api_token":"x"}}}}}}`))
	f.Add([]byte(`{"schema":"testbed.bundle/v9"}`))
	f.Add([]byte(`{"schema":"testbed.bundle/v1","started":"2026-01-01T00:00:00Z","ended":null,"devices":[{"address":"http://a:b@c"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeManifest(data)
		if err != nil {
			return
		}
		// What decodes re-encodes, and redacting it is stable and finds
		// nothing the second time (so a bundle redacts its inventory
		// once: redactManifest's done).
		if _, err := json.Marshal(m); err != nil {
			t.Fatalf("a decoded manifest does not encode: %v", err)
		}
		redactManifest(&m, nil)
		again := m
		found := redactManifest(&again, nil)
		a, _ := json.Marshal(m)
		b, _ := json.Marshal(again)
		if !bytes.Equal(a, b) {
			t.Fatalf("redacting twice changed the manifest:\n%s\n%s", a, b)
		}
		if len(found) > 0 {
			t.Fatalf("redacting twice found %q the second time:\n%s", found, a)
		}
	})
}

func FuzzSums(f *testing.F) {
	h := strings.Repeat("0123456789abcdef", 4)
	f.Add([]byte(h + "  manifest.json\n" + h + "  data/a.csv\n"))
	f.Add([]byte(h + "  ../../etc/hostname\n" + h + " */abs\r\n" + h + "  a//b\n\n"))
	f.Add([]byte(strings.ToUpper(h) + "  x\n" + h + "  x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, _ := ParseSums(data)
		seen := map[string]bool{}
		for _, l := range lines {
			if !safeRel(l.Name) || strings.Contains("/"+l.Name+"/", "/../") || strings.HasPrefix(l.Name, "/") {
				t.Fatalf("line %d: unsafe name %q accepted", l.Line, l.Name)
			}
			if len(l.Sum) != 64 || strings.ToLower(l.Sum) != l.Sum {
				t.Fatalf("line %d: sum %q", l.Line, l.Sum)
			}
			if seen[l.Name] {
				t.Fatalf("%q listed twice", l.Name)
			}
			seen[l.Name] = true
		}
	})
}

func FuzzAllowedSigners(f *testing.F) {
	pub, err := ssh.NewPublicKey(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public())
	if err != nil {
		f.Fatal(err)
	}
	key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
	f.Add([]byte("a@lab " + key + "\n"))
	f.Add([]byte(`"a@lab,b@lab" namespaces="testbed-*",valid-after="20260101Z" ` + key + " c\n# x\n\n"))
	f.Add([]byte(`a@lab cert-authority valid-before="202601011200" ` + key))
	f.Add([]byte(`"unterminated ` + key))
	f.Fuzz(func(t *testing.T, data []byte) {
		signers, err := ParseAllowedSigners("allowed_signers", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "allowed_signers:") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, s := range signers {
			if s.Key == nil || s.Line < 1 || len(s.Principals) == 0 {
				t.Fatalf("signer %+v", s)
			}
			Principals(signers, s.Key, SignatureNamespace, time.Unix(1e9, 0))
		}
	})
}

// seedArchive is a small bundle archive as tar bytes (the fuzz target
// gzips them, so that mutations reach the tar structure).
func seedArchive(extra ...tar.Header) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	manifest := []byte(`{"schema":"testbed.bundle/v1","run_id":"r","status":"ok"}`)
	table := []byte("a,b\n1,2\n")
	sums := []byte(sumOf(manifest) + "  manifest.json\n" + sumOf(table) + "  data/t.csv\n")
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "r/", Mode: 0o755})
	for _, f := range []struct {
		name string
		data []byte
	}{{"manifest.json", manifest}, {"data/t.csv", table}, {"SHA256SUMS", sums}} {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "r/" + f.name, Mode: 0o644, Size: int64(len(f.data))})
		tw.Write(f.data)
	}
	for _, h := range extra {
		tw.WriteHeader(&h)
	}
	// Without the two zero blocks that close an archive (a reader ends at
	// the end of the stream as well): a kilobyte less for every mutation
	// and minimization to walk through.
	tw.Flush()
	return b.Bytes()
}

// maxFuzzArchive bounds one FuzzArchive input: 16 tar blocks of 512 B
// hold a bundle's headers and small files; larger inputs only make each
// execution and each minimization step slower.
const maxFuzzArchive = 16 << 10

func FuzzArchive(f *testing.F) {
	f.Add(seedArchive())
	f.Add(seedArchive(tar.Header{Typeflag: tar.TypeSymlink, Name: "r/data/z.csv", Linkname: "/dev/zero"}, tar.Header{Typeflag: tar.TypeFifo, Name: "r/p"}))
	f.Add(seedArchive(tar.Header{Typeflag: tar.TypeReg, Name: "r/../../x"}, tar.Header{Typeflag: tar.TypeReg, Name: "/abs"}))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > maxFuzzArchive {
			return // the limits are fuzzed with fuzzLimits, not with size
		}
		// Stored, not compressed: compressing each input took most of an
		// execution, and the reader's path is the same.
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.NoCompression)
		zw.Write(raw)
		zw.Close()
		s, err := scanArchive("fuzz.tar.gz", &z, scanOptions{limits: fuzzLimits, tables: true})
		if err != nil {
			return
		}
		var total int64
		for name, e := range s.entries {
			if !safeRel(name) {
				t.Fatalf("entry %q leaves the bundle", name)
			}
			if e.size > fuzzLimits.MaxEntryBytes {
				t.Fatalf("entry %q: %d bytes read past the limit", name, e.size)
			}
			total += e.size
		}
		if total > fuzzLimits.MaxBytes || len(s.entries) > fuzzLimits.MaxEntries {
			t.Fatalf("%d bytes in %d entries read past the limits", total, len(s.entries))
		}
		r := verifyScan("fuzz.tar.gz", s, VerifyOptions{})
		if r.OK && len(s.problems) > 0 {
			t.Fatalf("verifies with problems %q", s.problems)
		}
		openScan("fuzz.tar.gz", s)
	})
}

// FuzzCountCSV holds the streaming row counter that show uses to
// encoding/csv, on every input encoding/csv reads without error.
func FuzzCountCSV(f *testing.F) {
	f.Add("a,b\n1,2\n")
	f.Add("a,\"b\nc\"\r\n\n\"1\"\"\",2")
	f.Add("\n\n x \n")
	f.Fuzz(func(t *testing.T, data string) {
		cr := csv.NewReader(strings.NewReader(data))
		cr.FieldsPerRecord = -1
		recs, err := cr.ReadAll()
		if err != nil {
			return
		}
		h, n, err := countCSV(strings.NewReader(data))
		if err != nil || n != len(recs) || (n > 0 && fmt.Sprint(h) != fmt.Sprint(recs[0])) {
			t.Fatalf("%q: counted %d records, header %q (%v); encoding/csv read %d, header %q", data, n, h, err, len(recs), recs)
		}
	})
}
