package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A line of events.jsonl longer than any event (here 2 MiB) is skipped
// whole, and the events after it are read: the live view does not stop
// at it, then or at the next read.
func TestReadEventsPassesAnOverlongLine(t *testing.T) {
	dir := t.TempDir()
	body := `{"type":"run.start"}` + "\n" + strings.Repeat("x", 2<<20) + "\n" + `{"type":"step.start"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	evs, off, err := readEvents(dir, 0)
	if err != nil || len(evs) != 2 || evs[1].Type != "step.start" || off != int64(len(body)) {
		t.Fatalf("read %d events (%v), offset %d of %d, %v", len(evs), evs, off, len(body), err)
	}
}
