package results

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
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
}

// bundleFS is a bundle's files, from a directory or a .tar.gz.
type bundleFS struct {
	name  string
	files map[string][]byte // for archives
	dir   string            // for directories
}

func openFS(p string) (*bundleFS, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return &bundleFS{name: p, dir: p}, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: not a directory or a .tar.gz: %w", p, err)
	}
	tr := tar.NewReader(zr)
	b := &bundleFS{name: p, files: map[string][]byte{}}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := path.Clean(h.Name)
		// Strip the top directory (the run id).
		if i := strings.IndexByte(name, '/'); i >= 0 {
			name = name[i+1:]
		}
		data, err := io.ReadAll(io.LimitReader(tr, 1<<31))
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", p, h.Name, err)
		}
		b.files[name] = data
	}
	return b, nil
}

func (b *bundleFS) read(name string) ([]byte, error) {
	if b.files != nil {
		d, ok := b.files[name]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return d, nil
	}
	return os.ReadFile(filepath.Join(b.dir, filepath.FromSlash(name)))
}

func (b *bundleFS) list() ([]string, error) {
	if b.files != nil {
		var out []string
		for k := range b.files {
			out = append(out, k)
		}
		sort.Strings(out)
		return out, nil
	}
	return listFiles(os.DirFS(b.dir))
}

func (b *bundleFS) sum(name string) (string, error) {
	if b.files != nil {
		d, ok := b.files[name]
		if !ok {
			return "", fs.ErrNotExist
		}
		h := sha256.Sum256(d)
		return hex.EncodeToString(h[:]), nil
	}
	return hashFile(filepath.Join(b.dir, filepath.FromSlash(name)))
}

// Verify checks a bundle directory or .tar.gz: the manifest parses, every
// file listed in SHA256SUMS is present and unchanged, no file is extra, and
// SHA256SUMS.sig, when present, is a valid signature of SHA256SUMS (its
// signer unchecked). The error return is only for a path that cannot be
// read at all.
func Verify(p string) (*VerifyReport, error) { return VerifyWith(p, VerifyOptions{}) }

// VerifyWith is Verify that also checks the signer against allowed signers.
func VerifyWith(p string, opts VerifyOptions) (*VerifyReport, error) {
	b, err := openFS(p)
	if err != nil {
		return nil, err
	}
	r := &VerifyReport{Dir: p}
	var m Manifest
	if data, err := b.read("manifest.json"); err != nil {
		r.Problems = append(r.Problems, "missing: manifest.json")
	} else if m, err = decodeManifest(data); err != nil {
		r.Problems = append(r.Problems, err.Error())
	}
	r.Status = m.Status
	sums, err := b.read(sumsFile)
	if err != nil {
		r.Problems = append(r.Problems, fmt.Sprintf("incomplete: no %s, the bundle was never finalized (manifest status %q)", sumsFile, m.Status))
		return r, nil
	}
	if sig, err := b.read(SigFile); err == nil {
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
	listed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		want, name, ok := strings.Cut(line, "  ")
		if !ok || len(want) != 64 {
			r.Problems = append(r.Problems, fmt.Sprintf("%s line %d: malformed: %q", sumsFile, n, line))
			continue
		}
		listed[name] = true
		got, err := b.sum(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			r.Problems = append(r.Problems, "missing: "+name)
		case err != nil:
			r.Problems = append(r.Problems, fmt.Sprintf("unreadable: %s: %v", name, err))
		case got != want:
			r.Problems = append(r.Problems, "changed: "+name)
		}
	}
	files, err := b.list()
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if f != sumsFile && f != SigFile && !listed[f] {
			r.Problems = append(r.Problems, "extra: "+f)
		}
	}
	if m.Status == StatusRunning {
		r.Problems = append(r.Problems, "incomplete: manifest status is still running")
	}
	r.OK = len(r.Problems) == 0
	return r, nil
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
}

// Open reads a bundle (directory or .tar.gz) for display. A bundle that was
// never finalized opens too, marked Incomplete.
func Open(p string) (*Reader, error) {
	b, err := openFS(p)
	if err != nil {
		return nil, err
	}
	r := &Reader{Path: p}
	data, err := b.read("manifest.json")
	if err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	if r.Manifest, err = decodeManifest(data); err != nil {
		return nil, err
	}
	if s, err := b.read("summary.json"); err == nil {
		r.Summary = s
	}
	if ev, err := b.read("events.jsonl"); err == nil {
		r.Events = bytes.Count(ev, []byte("\n"))
	}
	if r.Files, err = b.list(); err != nil {
		return nil, err
	}
	_, serr := b.read(sumsFile)
	r.Incomplete = serr != nil || r.Manifest.Status == StatusRunning
	for _, f := range r.Files {
		if !strings.HasPrefix(f, "data/") || !strings.HasSuffix(f, ".csv") && !strings.HasSuffix(f, ".csv.gz") {
			continue
		}
		d, _ := b.read(f)
		if strings.HasSuffix(f, ".gz") {
			if zr, err := gzip.NewReader(bytes.NewReader(d)); err == nil {
				d, _ = io.ReadAll(zr)
			}
		}
		recs, _ := csv.NewReader(bytes.NewReader(d)).ReadAll()
		ti := TableInfo{Name: strings.TrimSuffix(strings.TrimSuffix(path.Base(f), ".gz"), ".csv"), Path: f}
		if len(recs) > 0 {
			ti.Rows = len(recs) - 1
			for _, h := range recs[0] {
				ti.Fields = append(ti.Fields, Field{Name: h})
			}
		}
		r.Tables = append(r.Tables, ti)
	}
	return r, nil
}

// Archive writes dir as a reproducible .tar.gz whose top directory is the
// run id; it is Pack.
func Archive(dir, out string) error { return Pack(dir, out) }
