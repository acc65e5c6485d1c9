package scenario

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func load(t *testing.T) *Scenario {
	t.Helper()
	b, err := os.ReadFile("testdata/corruption.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse("testdata/corruption.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The impairments add over the lab clock as the file says: the drift
// grows linearly to its cap, the dirty connector is a step between its
// times, the transmitter's fall is reported apart from the path's loss;
// every term moves in steps of Resolution.
func TestScenarioOpticsFollowTheClock(t *testing.T) {
	s := load(t)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for _, c := range []struct {
		link     string
		at       time.Duration
		tx, path float64
	}{
		{"lg25", 0, 0, 0},
		{"lg25", 5 * time.Minute, 0, 1.0},              // 12 dB/h for 5 min, connector clean again
		{"lg25", 3 * time.Minute, 0, 0.6 + 1.5},        // drift and the dirty connector
		{"lg25", 2*time.Minute - time.Second, 0, 0.39}, // 0.3967 dB, floored to 0.01
		{"lg25", 2 * time.Hour, 0, 2},                  // capped at max_db
		{"lg100", 10 * time.Second, 0, 0},
		{"lg100", 150 * time.Second, 1.0, 0}, // 30 dB/h for 2 min
		{"lg10", time.Hour, 0, 0},
	} {
		o := s.At(c.link, c.at)
		if !near(o.TxDropDB, c.tx) || !near(o.PathLossDB, c.path) {
			t.Errorf("%s at %s: %+v, want tx %.2f path %.2f", c.link, c.at, o, c.tx, c.path)
		}
	}
	if got := s.Links(); strings.Join(got, ",") != "lg100,lg25" {
		t.Errorf("links %v", got)
	}
	if err := s.CheckLinks([]string{"lg25"}); err == nil || !strings.Contains(err.Error(), "testdata/corruption.yaml:17") || !strings.Contains(err.Error(), "lg100") {
		t.Errorf("unknown link: %v", err)
	}
}

// Bad files are refused with the file, the line and what was expected.
func TestScenarioParseErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"name: x\nimpairments:\n  - kind: voa_drift\n    link: lg25\n    start: 0s\n", "f.yaml:3: voa_drift needs db_per_hour > 0"},
		{"name: x\nimpairments:\n  - kind: laser\n    link: lg25\n", "f.yaml:3: kind \"laser\""},
		{"name: x\nimpairments:\n  - kind: dirty_connector\n    link: lg25\n    start: 1m\n    step_db: 1\n    clean_at: 30s\n", "clean_at 30s not after start 1m0s"},
		{"name: x\nimpairments:\n  - kind: dirty_connector\n    link: lg25\n    start: soon\n    step_db: 1\n", "f.yaml:3: start: \"soon\""},
		{"name: x\nimpairments:\n  - kind: tx_degrade\n    start: 0s\n    db_per_hour: 1\n", "no link"},
		{"name: x\nimpairments: []\n", "no impairments"},
		{"name: x\nloss_rate: 1e-3\nimpairments: []\n", "field loss_rate not found"},
	} {
		_, err := Parse("f.yaml", []byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
}

// The scenarios the docs ship parse and name only the default bench's
// links.
func TestShippedScenariosParse(t *testing.T) {
	files, err := filepath.Glob("../../docs/scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped scenarios: %v", err)
	}
	for _, f := range append(files, "testdata/corruption.yaml") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse(f, b)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CheckLinks([]string{"lg25", "lg100", "l10g", "l25g", "l25g-rs", "l50g", "l100g"}); err != nil {
			t.Error(err)
		}
	}
}
