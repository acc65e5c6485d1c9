package results

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// copyDir copies a bundle to dst with different modes and times, as a
// copy made by another user on another machine would have.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	later := time.Now().Add(time.Hour)
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, data, 0o600); err != nil {
			return err
		}
		return os.Chtimes(target, later, later)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func packBytes(t *testing.T, dir string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "b.tar.gz")
	if err := Pack(dir, out); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestPackIsReproducible(t *testing.T) {
	dir := finalized(t)
	first := packBytes(t, dir)
	if again := packBytes(t, dir); !bytes.Equal(first, again) {
		t.Fatal("packing the same bundle twice gave different bytes")
	}
	// A copy elsewhere, under another name, with other modes and times.
	elsewhere := filepath.Join(t.TempDir(), "copied-bundle")
	copyDir(t, dir, elsewhere)
	if other := packBytes(t, elsewhere); !bytes.Equal(first, other) {
		t.Fatal("a copy of the bundle in another directory packed to different bytes")
	}

	zr, err := gzip.NewReader(bytes.NewReader(first))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() || zr.Comment != "" {
		t.Errorf("gzip header carries name %q / time %v / comment %q", zr.Name, zr.ModTime, zr.Comment)
	}
	rd, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := PackTime(rd.Manifest)
	if !want.Equal(rd.Manifest.Ended.Truncate(time.Second)) {
		t.Errorf("pack time %v is not the run's end %v", want, rd.Manifest.Ended)
	}
	top := rd.Manifest.RunID + "/"
	tr := tar.NewReader(zr)
	var names, files []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		wantMode := int64(0o644)
		if h.Typeflag == tar.TypeDir {
			wantMode = 0o755
		} else {
			files = append(files, strings.TrimPrefix(h.Name, top))
		}
		if !strings.HasPrefix(h.Name, top) || h.Mode != wantMode || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(want) {
			t.Errorf("entry %s: mode %o uid %d gid %d uname %q gname %q mtime %v", h.Name, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime)
		}
	}
	if names[0] != top || !sort.StringsAreSorted(files) {
		t.Errorf("entries out of order: %v", names)
	}
	for _, must := range []string{"manifest.json", "SHA256SUMS", "data/loss.csv", "transcripts/voa1.log", "report.html"} {
		if !strings.Contains(strings.Join(files, " "), must) {
			t.Errorf("archive lacks %s: %v", must, files)
		}
	}

	out := filepath.Join(t.TempDir(), "b.tar.gz")
	os.WriteFile(out, first, 0o644)
	if r, err := Verify(out); err != nil || !r.OK {
		t.Fatalf("verify the archive: %v %+v", err, r)
	}
	if err := Pack(dir, out); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("Pack overwrote an existing archive: %v", err)
	}
	// Standard tools read it: tar extracts, sha256sum -c checks.
	if _, err := exec.LookPath("tar"); err == nil {
		x := t.TempDir()
		if b, err := exec.Command("tar", "-xzf", out, "-C", x).CombinedOutput(); err != nil {
			t.Fatalf("tar -xzf: %v\n%s", err, b)
		}
		if _, err := exec.LookPath("sha256sum"); err == nil {
			cmd := exec.Command("sha256sum", "--quiet", "-c", "SHA256SUMS")
			cmd.Dir = filepath.Join(x, rd.Manifest.RunID)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("sha256sum -c in the extracted archive: %v\n%s", err, b)
			}
		}
	}
}

func TestPackRefusesWhatDoesNotVerify(t *testing.T) {
	dir := finalized(t)
	os.WriteFile(filepath.Join(dir, "data", "loss.csv"), []byte("forged\n"), 0o644)
	out := filepath.Join(t.TempDir(), "b.tar.gz")
	if err := Pack(dir, out); err == nil || !strings.Contains(err.Error(), "changed: data/loss.csv") {
		t.Errorf("packed a tampered bundle: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused pack left %s behind", out)
	}
	b, _ := newBundle(t)
	fill(t, b) // never finalized
	if err := Pack(b.Dir(), out); err == nil || !strings.Contains(err.Error(), "never finalized") {
		t.Errorf("packed an unfinished bundle: %v", err)
	}
}

func TestPackTime(t *testing.T) {
	end := time.Date(2026, 3, 4, 5, 6, 7, 891e6, time.FixedZone("x", 3600))
	if got := PackTime(Manifest{Started: end.Add(-time.Hour), Ended: &end}); !got.Equal(end.Truncate(time.Second)) || got.Location() != time.UTC {
		t.Errorf("ended run: %v", got)
	}
	if got := PackTime(Manifest{Started: end}); !got.Equal(end.Truncate(time.Second)) {
		t.Errorf("never ended: %v", got)
	}
	if got := PackTime(Manifest{}); got.Unix() != 0 {
		t.Errorf("no times: %v", got)
	}
}
