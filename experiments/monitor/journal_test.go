package monitor

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"testbed/results"
)

func TestJournalRotatesDailyAndVerifies(t *testing.T) {
	root := t.TempDir()
	j := NewJournal(root, results.Lab{Name: "pod"}, results.CurrentSoftware("test"), []results.Param{{Name: "threshold", Value: 1e-6}})
	day1 := time.Date(2026, 11, 24, 23, 59, 0, 0, time.UTC)
	d := Decision{At: day1, Link: "lg25", Direction: "a>b", Sender: "sw1", Action: ActEnableLG, Copies: 2, Rule: "Eq. 2",
		Evidence: Evidence{State: Corrupting, Frames: 40_000, Losses: 313, Low: 6.9e-3, High: 8.6e-3, Threshold: 1e-4}}
	if err := j.Record(d); err != nil {
		t.Fatal(err)
	}
	first := j.Dir()
	d.At, d.Action = day1.Add(2*time.Minute), ActDisableLG
	if err := j.Record(d); err != nil {
		t.Fatal(err)
	}
	second := j.Dir()
	if second == first || second == "" {
		t.Fatalf("no rotation at midnight: %s %s", first, second)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{first, second} {
		rep, err := results.Verify(dir)
		if err != nil || !rep.OK || rep.Status != results.StatusOK {
			t.Fatalf("%s: %+v %v", dir, rep, err)
		}
	}
	f, err := os.Open(filepath.Join(first, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var ev struct {
		Type   string
		Device string
		Fields struct {
			Action   string
			Copies   int
			Evidence struct {
				Losses uint64
				Low    float64
			}
		}
	}
	if !sc.Scan() {
		t.Fatal("no event")
	}
	if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "decision" || ev.Device != "sw1" || ev.Fields.Action != string(ActEnableLG) || ev.Fields.Copies != 2 ||
		ev.Fields.Evidence.Losses != 313 || ev.Fields.Evidence.Low != 6.9e-3 {
		t.Fatalf("event %s", sc.Bytes())
	}
	var sum struct{ Decisions map[string]int }
	data, err := os.ReadFile(filepath.Join(second, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &sum); err != nil || sum.Decisions[string(ActDisableLG)] != 1 {
		t.Fatalf("summary %s %v", data, err)
	}
}
