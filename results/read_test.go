package results

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// zeros returns gzip members, concatenated, that inflate to n MiB of zero
// bytes: one 1 MiB member compressed once and repeated, so a bomb of any
// size costs the test a kilobyte per MiB to build. gzip readers read
// concatenated members as one stream (RFC 1952 §2.2).
func zeros(t testing.TB, mib int) []byte {
	t.Helper()
	var m bytes.Buffer
	zw := gzip.NewWriter(&m)
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	return bytes.Repeat(m.Bytes(), mib)
}

func gz(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

// tarEntry is one entry of a test archive; data nil with size > 0 means
// size zero bytes, written as a bomb (see bombArchive).
type tarEntry struct {
	hdr  tar.Header
	data []byte
}

// archiveOf writes a bundle directory's files under top/, then extra
// entries, as a .tar.gz.
func archiveOf(t *testing.T, dir string, extra ...tarEntry) []byte {
	t.Helper()
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	top := filepath.Base(dir)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: top + "/", Mode: 0o755})
	files, err := listFiles(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		d, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: top + "/" + f, Mode: 0o644, Size: int64(len(d))})
		tw.Write(d)
	}
	for _, e := range extra {
		h := e.hdr
		if strings.HasPrefix(h.Name, "@/") {
			h.Name = top + h.Name[1:]
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		tw.Write(e.data)
	}
	tw.Close()
	return gz(t, raw.Bytes())
}

// bombArchive is a .tar.gz of a finalized bundle plus one entry of mib MiB
// of zeros, about 1 KB per MiB on disk: the tar header, the bomb as
// repeated gzip members, then the tar's end.
func bombArchive(t testing.TB, dir string, mib int) string {
	t.Helper()
	var head bytes.Buffer
	tw := tar.NewWriter(&head)
	top := filepath.Base(dir)
	files, _ := listFiles(os.DirFS(dir))
	for _, f := range files {
		d, _ := os.ReadFile(filepath.Join(dir, f))
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: top + "/" + f, Mode: 0o644, Size: int64(len(d))})
		tw.Write(d)
	}
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: top + "/data/bomb.csv", Mode: 0o644, Size: int64(mib) << 20})
	tw.Flush() // header written; the data follows as gzip members
	var out bytes.Buffer
	out.Write(gz(t, head.Bytes()))
	out.Write(zeros(t, mib))
	out.Write(gz(t, make([]byte, 1024))) // end of archive: two zero blocks
	p := filepath.Join(t.TempDir(), "bomb.tar.gz")
	if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func wantLimit(t *testing.T, what string, err error, limit, entry string) {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != limit || !strings.Contains(le.Entry, entry) {
		t.Errorf("%s: got %v, want a %s limit error on %q", what, err, limit, entry)
	}
}

func TestGzipBombStopsAtTheLimit(t *testing.T) {
	dir := finalized(t)
	// 64 MiB of zeros in a 70 KB archive, against a 4 MiB per-file limit:
	// the reader must stop at the header's size, before inflating it.
	bomb := bombArchive(t, dir, 64)
	lim := ReadLimits{MaxEntryBytes: 4 << 20}
	_, err := VerifyWith(bomb, VerifyOptions{Limits: lim})
	wantLimit(t, "verify", err, LimitEntryBytes, "data/bomb.csv")
	_, err = OpenWith(bomb, OpenOptions{Limits: lim})
	wantLimit(t, "open", err, LimitEntryBytes, "data/bomb.csv")
	// The total limit counts every file.
	_, err = VerifyWith(bomb, VerifyOptions{Limits: ReadLimits{MaxBytes: 8 << 20}})
	wantLimit(t, "verify, total", err, LimitBytes, "data/bomb.csv")
	if err != nil && !strings.Contains(err.Error(), "max-bytes") {
		t.Errorf("the error does not name the limit: %v", err)
	}

	// A gzip table that inflates without end, in a bundle directory:
	// show (Open) bounds the inflation; verify only hashes the file.
	dir = finalized(t)
	if err := os.WriteFile(filepath.Join(dir, "data", "samples.csv.gz"), zeros(t, 32), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = OpenWith(dir, OpenOptions{Limits: ReadLimits{MaxEntryBytes: 2 << 20}})
	wantLimit(t, "open gzip table", err, LimitEntryBytes, "data/samples.csv.gz (inflated)")
	if r, err := VerifyWith(dir, VerifyOptions{Limits: ReadLimits{MaxEntryBytes: 2 << 20}}); err != nil || r.OK || !strings.Contains(strings.Join(r.Problems, "\n"), "extra: data/samples.csv.gz") {
		t.Errorf("verify: %v %+v", err, r)
	}
}

func TestTooManyEntries(t *testing.T) {
	dir := finalized(t)
	files, _ := listFiles(os.DirFS(dir))
	lim := ReadLimits{MaxEntries: len(files)} // the files fit, their directories do not
	_, err := VerifyWith(dir, VerifyOptions{Limits: lim})
	wantLimit(t, "directory", err, LimitEntries, "")
	dirs := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	if _, err := VerifyWith(dir, VerifyOptions{Limits: ReadLimits{MaxEntries: len(files) + len(dirs)}}); err != nil {
		t.Errorf("a bundle within the limit: %v", err)
	}
	p := filepath.Join(t.TempDir(), "b.tar.gz")
	os.WriteFile(p, archiveOf(t, dir), 0o644)
	_, err = OpenWith(p, OpenOptions{Limits: lim})
	wantLimit(t, "archive", err, LimitEntries, "")
}

func sumOf(d []byte) string {
	h := sha256.Sum256(d)
	return hex.EncodeToString(h[:])
}

func TestSumsPathsStayInsideTheBundle(t *testing.T) {
	dir := finalized(t)
	// A file outside the bundle, and SHA256SUMS lines that reach it with
	// its right checksum.
	outside := filepath.Join(filepath.Dir(dir), "outside.txt")
	secretData := []byte("not part of the bundle\n")
	os.WriteFile(outside, secretData, 0o644)
	abs, _ := filepath.Abs(outside)
	sums, _ := os.ReadFile(filepath.Join(dir, sumsFile))
	for _, name := range []string{"../outside.txt", abs, "data/../../outside.txt"} {
		add := append(bytes.Clone(sums), []byte(sumOf(secretData)+"  "+name+"\n")...)
		os.WriteFile(filepath.Join(dir, sumsFile), add, 0o644)
		r, err := Verify(dir)
		if err != nil || r.OK || !strings.Contains(strings.Join(r.Problems, "\n"), "unsafe path: SHA256SUMS line") {
			t.Errorf("%s: %v %+v", name, err, r)
		}
	}
}

func TestArchivePathsStayInsideTheBundle(t *testing.T) {
	dir := finalized(t)
	d := []byte("x\n")
	for _, name := range []string{"@/../../evil.txt", "/etc/evil", "other-run/manifest.json", "@/data/../../x"} {
		p := filepath.Join(t.TempDir(), "b.tar.gz")
		os.WriteFile(p, archiveOf(t, dir, tarEntry{tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(d)), Mode: 0o644}, d}), 0o644)
		r, err := Verify(p)
		if err != nil || r.OK || !strings.Contains(strings.Join(r.Problems, "\n"), "unsafe path: archive entry") {
			t.Errorf("%s: %v %+v", name, err, r)
		}
	}
	// Names written "./run-id/..." are the same names.
	var raw bytes.Buffer
	zr, _ := gzip.NewReader(bytes.NewReader(archiveOf(t, dir)))
	tr, tw := tar.NewReader(zr), tar.NewWriter(&raw)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "./", Mode: 0o755})
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		h.Name = "./" + h.Name
		tw.WriteHeader(h)
		io.Copy(tw, tr)
	}
	tw.Close()
	p := filepath.Join(t.TempDir(), "dot.tar.gz")
	os.WriteFile(p, gz(t, raw.Bytes()), 0o644)
	if r, err := Verify(p); err != nil || !r.OK {
		t.Errorf("./ names: %v %+v", err, r)
	}
	// A second copy of a file, appended after the genuine one.
	p = filepath.Join(t.TempDir(), "dup.tar.gz")
	os.WriteFile(p, archiveOf(t, dir, tarEntry{tar.Header{Typeflag: tar.TypeReg, Name: "@/summary.json", Size: int64(len(d)), Mode: 0o644}, d}), 0o644)
	if r, err := Verify(p); err != nil || r.OK || !strings.Contains(strings.Join(r.Problems, "\n"), "duplicate: summary.json") {
		t.Errorf("duplicate entry: %v %+v", err, r)
	}
}

// noHang runs fn, failing the test if it has not returned in a minute:
// a reader that blocks on a FIFO never would.
func noHang(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s: still reading after a minute", what)
	}
}

func TestNonRegularFilesInADirectory(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(p string) error
		what string
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "named pipe"},
		{"link to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "symbolic link"},
		{"link outside", func(p string) error { return os.Symlink("../../outside", p) }, "symbolic link"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := finalized(t)
			// Replace a listed file, and add an unlisted one.
			for _, f := range []string{"transcripts/voa1.log", "data/extra.csv"} {
				p := filepath.Join(dir, f)
				os.Remove(p)
				if err := c.make(p); err != nil {
					t.Skipf("cannot make a %s here: %v", c.name, err)
				}
			}
			noHang(t, "verify", func() {
				r, err := Verify(dir)
				all := ""
				if r != nil {
					all = strings.Join(r.Problems, "\n")
				}
				for _, f := range []string{"transcripts/voa1.log", "data/extra.csv"} {
					if err != nil || r.OK || !strings.Contains(all, "not a regular file: "+f+" ("+c.what) {
						t.Errorf("verify %s: %v %+v", f, err, r)
					}
				}
			})
			noHang(t, "open", func() {
				rd, err := Open(dir)
				if err != nil || len(rd.Problems) != 2 || len(rd.Tables) != 1 {
					t.Errorf("open: %v %+v", err, rd)
				}
			})
			if err := Pack(dir, filepath.Join(t.TempDir(), "x.tar.gz")); err == nil {
				t.Error("pack accepted it")
			}
		})
	}
	// The bundle path itself a FIFO: refused, not read.
	p := filepath.Join(t.TempDir(), "fifo.tar.gz")
	if err := syscall.Mkfifo(p, 0o644); err == nil {
		noHang(t, "verify a fifo", func() {
			if _, err := Verify(p); err == nil || !strings.Contains(err.Error(), "named pipe") {
				t.Errorf("verify a fifo: %v", err)
			}
		})
	}
}

func TestNonRegularEntriesInAnArchive(t *testing.T) {
	dir := finalized(t)
	p := filepath.Join(t.TempDir(), "b.tar.gz")
	os.WriteFile(p, archiveOf(t, dir,
		tarEntry{hdr: tar.Header{Typeflag: tar.TypeFifo, Name: "@/data/fifo.csv", Mode: 0o644}},
		tarEntry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: "@/data/zero.csv", Linkname: "/dev/zero", Mode: 0o777}},
		tarEntry{hdr: tar.Header{Typeflag: tar.TypeChar, Name: "@/data/dev.csv", Devmajor: 1, Devminor: 5, Mode: 0o644}},
		tarEntry{hdr: tar.Header{Typeflag: tar.TypeLink, Name: "@/data/hard.csv", Linkname: "/etc/hostname", Mode: 0o644}},
	), 0o644)
	r, err := Verify(p)
	if err != nil || r.OK {
		t.Fatalf("verify: %v %+v", err, r)
	}
	all := strings.Join(r.Problems, "\n")
	for _, want := range []string{"data/fifo.csv (named pipe)", "data/zero.csv (symbolic link to /dev/zero)", "data/dev.csv (character device)", "data/hard.csv (hard link to /etc/hostname)"} {
		if !strings.Contains(all, "not a regular file: "+want) {
			t.Errorf("verify does not say %q:\n%s", want, all)
		}
	}
	rd, err := Open(p)
	if err != nil || len(rd.Problems) != 4 || len(rd.Tables) != 1 {
		t.Errorf("open: %v %+v", err, rd)
	}
}

func TestParseSums(t *testing.T) {
	h := strings.Repeat("ab", 32)
	data := h + "  data/a.csv\n" + strings.ToUpper(h) + " *b\r\n" + "short\n" + strings.Repeat("zz", 32) + "  c\n" + h + "  ./d\n" + h + "  data/a.csv\n" + h + "  e"
	lines, problems := ParseSums([]byte(data))
	got := fmt.Sprint(lines)
	if want := fmt.Sprint([]SumLine{{1, h, "data/a.csv"}, {2, h, "b"}, {7, h, "e"}}); got != want {
		t.Errorf("lines %s, want %s", got, want)
	}
	want := []string{"line 3: malformed", "line 4: malformed", "unsafe path: SHA256SUMS line 5", "line 6: data/a.csv is already listed on line 1"}
	all := strings.Join(problems, "\n")
	if len(problems) != len(want) {
		t.Errorf("problems %q", problems)
	}
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("no problem says %q:\n%s", w, all)
		}
	}
}

func TestCountCSV(t *testing.T) {
	for _, c := range []struct {
		in     string
		header string
		n      int
	}{
		{"a,b\n1,2\n3,4\n", "[a b]", 3},
		{"a,b\r\n1,2\r\n3,4", "[a b]", 3},
		{"a,\"b\nc\"\n\"1\n\n2\",3\n\n", "[a b\nc]", 2},
		{"", "[]", 0},
		{"\n\nx\n", "[x]", 1},
	} {
		h, n, err := countCSV(strings.NewReader(c.in))
		if err != nil || fmt.Sprint(h) != c.header || n != c.n {
			t.Errorf("%q: %q %d %v, want %s %d", c.in, h, n, err, c.header, c.n)
		}
	}
}

// BenchmarkShowGzipBomb opens (as show does) a bundle directory whose
// data/samples.csv.gz is 2 MB of gzip inflating to 2 GiB, under the
// default limits: it stops once the per-file limit (1 GiB) is inflated,
// in constant memory (B/op).
//
//	go test -run '^$' -bench ShowGzipBomb -benchmem -benchtime 1x ./results
func BenchmarkShowGzipBomb(b *testing.B) {
	dir := finalized(b)
	if err := os.WriteFile(filepath.Join(dir, "data", "samples.csv.gz"), zeros(b, 2048), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, err := Open(dir)
		var le *LimitError
		if !errors.As(err, &le) || le.Max != DefaultMaxEntryBytes {
			b.Fatalf("open: %v", err)
		}
	}
}

// BenchmarkVerifyArchive verifies a .tar.gz whose one large entry is
// 512 MiB of zeros (about 500 KB packed): every byte is inflated and
// hashed, none held (B/op stays far below the entry's size).
//
//	go test -run '^$' -bench VerifyArchive -benchmem -benchtime 3x ./results
func BenchmarkVerifyArchive(b *testing.B) {
	dir := finalized(b)
	bomb := bombArchive(b, dir, 512)
	b.SetBytes(512 << 20)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := Verify(bomb)
		if err != nil || r.OK {
			b.Fatalf("verify: %v %+v", err, r)
		}
	}
}

// oneByte reads one byte at a time, so that a header spans many reads.
type oneByte struct{ r *strings.Reader }

func (o oneByte) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

func TestCountCSVAcrossReads(t *testing.T) {
	h, n, err := countCSV(oneByte{strings.NewReader("\"a\"\"x\",b\n1,\"2\n3\"\n\n4,5\n")})
	if err != nil || fmt.Sprint(h) != `[a"x b]` || n != 3 {
		t.Errorf("got %q %d %v", h, n, err)
	}
}

// A summary.json larger than a file parsed whole may be is refused by its
// size, before a byte of it is held: growing a buffer towards the cap
// took more memory than a process under ulimit -v 1500000 has (a 1000 MB
// summary.json aborted the runtime). Counted in bytes allocated, not time.
func TestOversizedSummaryRefusedBeforeReading(t *testing.T) {
	dir := finalized(t)
	f, err := os.OpenFile(filepath.Join(dir, "summary.json"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxMetaBytes + 1); err != nil { // sparse: no disk
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = OpenWith(dir, OpenOptions{})
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "summary.json: larger than 64 MiB") {
		t.Fatalf("open: %v, want summary.json refused by its size", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("opening it allocated %d MiB: the file was read before it was refused", got>>20)
	}
}
