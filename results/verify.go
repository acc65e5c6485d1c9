package results

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

const sumsFile = "SHA256SUMS"

// writeSums writes SHA256SUMS over every file but itself and its signature,
// in the format `sha256sum -c` reads: "<hex>  <path>".
func writeSums(dir string) error {
	files, err := listFiles(os.DirFS(dir))
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	for _, f := range files {
		if f == sumsFile || f == sumsFile+".sig" {
			continue
		}
		sum, err := hashFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return err
		}
		fmt.Fprintf(&buf, "%s  %s\n", sum, f)
	}
	return os.WriteFile(filepath.Join(dir, sumsFile), buf.Bytes(), 0o644)
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func listFiles(fsys fs.FS) ([]string, error) {
	var out []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	Dir      string   `json:"dir"`
	OK       bool     `json:"ok"`
	Status   Status   `json:"status"`
	Problems []string `json:"problems,omitempty"`
	// Incomplete: the bundle was never finalized (no SHA256SUMS, or the
	// manifest still says running): a crash, not a tampering.
	Incomplete bool `json:"incomplete,omitempty"`
	// Signature is what SHA256SUMS.sig says; nil when the bundle is unsigned.
	Signature *SignatureReport `json:"signature,omitempty"`
}

// VerifyOptions configure VerifyWith.
type VerifyOptions struct {
	// AllowedSigners, when not nil, must grant the key that signed
	// SHA256SUMS, and a signature is then required.
	AllowedSigners []AllowedSigner
	// Now is when allowed-signer validity windows are checked; zero means
	// the current time.
	Now time.Time
	// Limits bound the reading; zero fields take the defaults.
	Limits ReadLimits
}

// SumLine is one line of SHA256SUMS.
type SumLine struct {
	Line int
	Sum  string // lower-case hex
	Name string
}

// ParseSums reads SHA256SUMS as `sha256sum -c` does ("<hex>  <path>", or
// "<hex> *<path>" for binary mode) and keeps only lines that name a file
// inside the bundle: a path that is absolute, holds "..", is not clean
// ("a//b", "./a") or names a file twice is a problem, as is a malformed
// line. Problems name SHA256SUMS and the line.
func ParseSums(data []byte) (lines []SumLine, problems []string) {
	seen := map[string]int{}
	n := 0
	for len(data) > 0 {
		n++
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		text := strings.TrimSuffix(string(line), "\r")
		if len(text) < 66 || (text[64:66] != "  " && text[64:66] != " *") {
			problems = append(problems, fmt.Sprintf("%s line %d: malformed: %q (expected \"<sha256 hex>  <path>\")", sumsFile, n, clip(text, 120)))
			continue
		}
		sum, name := strings.ToLower(text[:64]), text[66:]
		if _, err := hex.DecodeString(sum); err != nil {
			problems = append(problems, fmt.Sprintf("%s line %d: malformed: %q is not a SHA-256 in hex", sumsFile, n, clip(text[:64], 64)))
			continue
		}
		if !safeRel(name) {
			problems = append(problems, fmt.Sprintf("unsafe path: %s line %d: %q is not a clean relative path inside the bundle", sumsFile, n, clip(name, 120)))
			continue
		}
		if first, dup := seen[name]; dup {
			problems = append(problems, fmt.Sprintf("%s line %d: %s is already listed on line %d", sumsFile, n, name, first))
			continue
		}
		seen[name] = n
		lines = append(lines, SumLine{Line: n, Sum: sum, Name: name})
	}
	return lines, problems
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// Verify checks a bundle directory or .tar.gz: the manifest parses, every
// file listed in SHA256SUMS is present and unchanged, no file is extra or
// anything but a regular file, every path stays inside the bundle, and
// SHA256SUMS.sig, when present, is a valid signature of SHA256SUMS (its
// signer unchecked). It reads under the default ReadLimits. The error
// return is for a path that cannot be read at all, or a bundle beyond a
// limit (a *LimitError).
func Verify(p string) (*VerifyReport, error) { return VerifyWith(p, VerifyOptions{}) }

// VerifyWith is Verify that also checks the signer against allowed signers
// and reads under opts.Limits.
func VerifyWith(p string, opts VerifyOptions) (*VerifyReport, error) {
	s, err := scanBundle(p, scanOptions{limits: opts.Limits})
	if err != nil {
		return nil, err
	}
	return verifyScan(p, s, opts), nil
}

func verifyScan(p string, s *scan, opts VerifyOptions) *VerifyReport {
	r := &VerifyReport{Dir: p}
	r.Problems = append(r.Problems, s.problems...)
	var m Manifest
	if data, ok := s.meta["manifest.json"]; !ok {
		r.Problems = append(r.Problems, "missing: manifest.json")
	} else if dm, err := decodeManifest(data); err != nil {
		r.Problems = append(r.Problems, err.Error())
	} else {
		m = dm
	}
	r.Status = m.Status
	sums, ok := s.meta[sumsFile]
	if !ok {
		r.Incomplete = true
		r.Problems = append(r.Problems, fmt.Sprintf("incomplete: no %s, the bundle was never finalized (manifest status %q)", sumsFile, m.Status))
		return r
	}
	if sig, ok := s.meta[SigFile]; ok {
		now := opts.Now
		if now.IsZero() {
			now = time.Now()
		}
		r.Signature = checkSignature(sig, sums, opts.AllowedSigners, now)
		if r.Signature.Problem != "" {
			r.Problems = append(r.Problems, r.Signature.Problem)
		}
	} else if opts.AllowedSigners != nil {
		r.Problems = append(r.Problems, fmt.Sprintf("unsigned: no %s, and allowed signers were given", SigFile))
	}
	lines, problems := ParseSums(sums)
	r.Problems = append(r.Problems, problems...)
	listed := map[string]bool{}
	for _, l := range lines {
		listed[l.Name] = true
		e, ok := s.entries[l.Name]
		switch {
		case !ok:
			r.Problems = append(r.Problems, "missing: "+l.Name)
		case e.bad != "":
			// Reported by the walk: not a regular file.
		case e.sum != l.Sum:
			r.Problems = append(r.Problems, "changed: "+l.Name)
		}
	}
	for _, f := range s.files() {
		if f != sumsFile && f != SigFile && !listed[f] {
			r.Problems = append(r.Problems, "extra: "+f)
		}
	}
	if m.Status == StatusRunning {
		r.Incomplete = true
		r.Problems = append(r.Problems, "incomplete: manifest status is still running")
	}
	r.OK = len(r.Problems) == 0
	return r
}

// TableInfo describes one data table of a bundle.
type TableInfo struct {
	Name   string  `json:"name"`
	Path   string  `json:"path"`
	Rows   int     `json:"rows"`
	Fields []Field `json:"fields,omitempty"`
}

// Reader is an opened bundle.
type Reader struct {
	// Path is what Open was given.
	Path       string
	Manifest   Manifest
	Summary    json.RawMessage
	Tables     []TableInfo
	Events     int
	Files      []string
	Incomplete bool
	// Problems are what reading found wrong without stopping: files that
	// are not regular files, paths that leave the bundle. Verify says
	// more.
	Problems []string
}

// OpenOptions configure OpenWith.
type OpenOptions struct {
	Limits ReadLimits
}

// Open reads a bundle (directory or .tar.gz) for display, under the
// default ReadLimits. A bundle that was never finalized opens too, marked
// Incomplete. It does not verify checksums: see Verify.
func Open(p string) (*Reader, error) { return OpenWith(p, OpenOptions{}) }

// OpenWith is Open under opts.Limits; a gzip table's inflated size counts
// against the per-file limit.
func OpenWith(p string, opts OpenOptions) (*Reader, error) {
	s, err := scanBundle(p, scanOptions{limits: opts.Limits, tables: true})
	if err != nil {
		return nil, err
	}
	return openScan(p, s)
}

func openScan(p string, s *scan) (*Reader, error) {
	r := &Reader{Path: p, Problems: s.problems}
	data, ok := s.meta["manifest.json"]
	if !ok {
		return nil, fmt.Errorf("manifest.json: %w", fs.ErrNotExist)
	}
	var err error
	if r.Manifest, err = decodeManifest(data); err != nil {
		return nil, err
	}
	if d, ok := s.meta["summary.json"]; ok {
		r.Summary = d
	}
	r.Events = s.events
	r.Files = s.files()
	_, finalized := s.meta[sumsFile]
	r.Incomplete = !finalized || r.Manifest.Status == StatusRunning
	for _, f := range r.Files {
		if ti, ok := s.tables[f]; ok {
			r.Tables = append(r.Tables, *ti)
		}
	}
	return r, nil
}

// Archive writes dir as a reproducible .tar.gz whose top directory is the
// run id; it is Pack.
func Archive(dir, out string) error { return Pack(dir, out) }
