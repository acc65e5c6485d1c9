package results

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Rows written through held writers land in the order of their commits,
// each writer's rows in one piece, scrubbed as any other row; nothing
// reaches the file before its commit.
func TestHeldRowsLandInCommitOrder(t *testing.T) {
	b, _ := newBundle(t)
	tw, err := b.CreateTable(Table{Name: "pts", Fields: []Field{{Name: "step", Type: "string"}, {Name: "n", Type: "integer"}}})
	if err != nil {
		t.Fatal(err)
	}
	a, c := tw.Hold(), tw.Hold()
	var wg sync.WaitGroup
	for _, w := range []struct {
		tw   *TableWriter
		name string
	}{{a, "a"}, {c, "c" + secret}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3 {
				if err := w.tw.Write(w.name, i); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	read := func() string {
		t.Helper()
		got, err := os.ReadFile(filepath.Join(b.Dir(), "data", "pts.csv"))
		if err != nil {
			t.Fatal(err)
		}
		return string(got)
	}
	if got := read(); got != "step,n\n" {
		t.Fatalf("before any commit the table holds %q", got)
	}
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := tw.Write("direct", 9); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(); err != nil { // nothing left: nothing written twice
		t.Fatal(err)
	}
	want := "step,n\nc***,0\nc***,1\nc***,2\ndirect,9\na,0\na,1\na,2\n"
	if got := read(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	if err := a.Write("a"); err == nil || !strings.Contains(err.Error(), "1 values for 2 fields") {
		t.Errorf("a held writer took a short row: %v", err)
	}
	if err := b.Finalize(StatusOK, ""); err != nil {
		t.Fatal(err)
	}
	late := tw.Hold()
	if err := late.Write("late", 1); err != nil {
		t.Fatal(err)
	}
	if err := late.Commit(); err == nil || !strings.Contains(err.Error(), "finalized") {
		t.Errorf("a commit after the bundle was finalized: %v", err)
	}
}
