package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// The committed references (docs/cli, docs/recipes) are what `make docs`
// writes from this code: a command, flag, parameter, table or figure
// changed without `make docs` fails here, naming the page.
func TestGeneratedDocsAreCurrent(t *testing.T) {
	dir := t.TempDir()
	if code, _, errOut := testbedRun(t, "gen-docs", dir); code != exitOK {
		t.Fatalf("gen-docs: exit %d: %s", code, errOut)
	}
	for _, sub := range []string{"cli", "recipes"} {
		want := readTree(t, filepath.Join(dir, sub))
		got := readTree(t, filepath.Join("..", "..", "docs", sub))
		for name, w := range want {
			if g, ok := got[name]; !ok {
				t.Errorf("docs/%s/%s is missing: run make docs", sub, name)
			} else if !bytes.Equal(g, w) {
				t.Errorf("docs/%s/%s is stale: run make docs", sub, name)
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("docs/%s/%s is no longer generated: run make docs", sub, name)
			}
		}
	}
}

func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}
