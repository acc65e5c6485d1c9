package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: a scenario file parses or is refused with an error naming
// the file, never a panic, whatever its bytes.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../docs/scenarios/*.yaml")
	for _, p := range append(files, "testdata/corruption.yaml") {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("name: x\nimpairments:\n  - kind: voa_drift\n    link: lg25\n    start: 0s\n    db_per_hour: 1e308\n"))
	f.Add([]byte("name: x\nimpairments:\n  - {kind: dirty_connector, link: lg25, start: 1m, step_db: .nan}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 64<<10 {
			return // bound the work per input: a scenario is a page, not a megabyte
		}
		s, err := Parse("f.yaml", b)
		if err != nil {
			if !strings.Contains(err.Error(), "f.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		_ = s.CheckLinks([]string{"lg25", "l10g"})
	})
}
