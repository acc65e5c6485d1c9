package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An archive with an entry a bundle may not hold (a path leaving it) is
// shown and diffed with a warning, and the command exits 1, as verify
// does: a script reading only the exit code must not take it for sound.
func TestShowAndDiffExitNonZeroOnUnsafeArchives(t *testing.T) {
	a := sweepBundle(t, "7")
	packed := filepath.Join(t.TempDir(), "a.tar.gz")
	if code, _, errOut := testbedRun(t, "results", "pack", a, "--out", packed); code != exitOK {
		t.Fatalf("pack: exit %d: %s", code, errOut)
	}
	// The same archive with one more entry, ../evil.txt beside the run.
	f, err := os.Open(packed)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	tr, tw := tar.NewReader(zr), tar.NewWriter(&raw)
	top := ""
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if top == "" {
			top, _, _ = strings.Cut(strings.TrimPrefix(h.Name, "./"), "/")
		}
		tw.WriteHeader(h)
		io.Copy(tw, tr)
	}
	f.Close()
	evil := []byte("x\n")
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: top + "/../../evil.txt", Size: int64(len(evil)), Mode: 0o644})
	tw.Write(evil)
	tw.Close()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw.Bytes())
	zw.Close()
	bad := filepath.Join(t.TempDir(), "bad.tar.gz")
	os.WriteFile(bad, gz.Bytes(), 0o644)

	if code, _, errOut := testbedRun(t, "results", "show", packed); code != exitOK {
		t.Fatalf("show of the sound archive: exit %d: %s", code, errOut)
	}
	for _, args := range [][]string{{"show", bad}, {"show", bad, "--output", "json"}, {"diff", a, bad}, {"diff", bad, a}} {
		code, _, errOut := testbedRun(t, append([]string{"results"}, args...)...)
		if code != exitFailed || !strings.Contains(errOut, "unsafe path") {
			t.Errorf("results %s: exit %d, want %d with the unsafe entry named:\n%s", strings.Join(args, " "), code, exitFailed, errOut)
		}
	}
}
