package monitor

import (
	"encoding/json"
	"fmt"

	"testbed/results"
)

// JournalRecipe names the bundles the monitor journals into.
const JournalRecipe = "monitor"

// Journal writes decisions into bundles of kind monitor under the runs
// directory, one a day (UTC): a day's bundle is finalized, with its
// checksums, when the first decision of the next day comes or the journal
// is closed, so it verifies like any bundle. It is not safe for
// concurrent use.
type Journal struct {
	root   string
	lab    results.Lab
	sw     results.Software
	params []results.Param
	cur    *results.Bundle
	day    string
	counts map[Action]int
}

// NewJournal journals under root (the runs directory). The lab and the
// parameters go into each bundle's manifest.
func NewJournal(root string, lab results.Lab, sw results.Software, params []results.Param) *Journal {
	return &Journal{root: root, lab: lab, sw: sw, params: params}
}

// Dir is the current bundle's directory ("" before the first decision).
func (j *Journal) Dir() string {
	if j.cur == nil {
		return ""
	}
	return j.cur.Dir()
}

// Record appends a decision as an event of type decision, its fields the
// decision's JSON (action, rule, evidence).
func (j *Journal) Record(d Decision) error {
	day := d.At.UTC().Format("2006-01-02")
	if j.cur != nil && day != j.day {
		if err := j.Close(); err != nil {
			return err
		}
	}
	if j.cur == nil {
		b, err := results.Create(j.root, results.Manifest{
			RunID:    results.NewRunID(d.At, JournalRecipe),
			Recipe:   results.RecipeRef{Name: JournalRecipe, Version: "1"},
			Params:   j.params,
			Started:  d.At,
			Lab:      j.lab,
			Software: j.sw,
			Labels:   map[string]string{"day": day},
		}, results.Options{})
		if err != nil {
			return fmt.Errorf("monitor journal: %w", err)
		}
		j.cur, j.day, j.counts = b, day, map[Action]int{}
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("monitor journal: %w", err)
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		return fmt.Errorf("monitor journal: %w", err)
	}
	if err := j.cur.Event(results.Event{Time: d.At, Type: "decision", Step: d.Link + " " + d.Direction, Device: d.Sender,
		Message: string(d.Action) + ": " + d.Rule, Fields: fields}); err != nil {
		return fmt.Errorf("monitor journal %s: %w", j.cur.Dir(), err)
	}
	j.counts[d.Action]++
	return nil
}

// Close finalizes the current bundle with the day's decision counts as
// its summary.
func (j *Journal) Close() error {
	if j.cur == nil {
		return nil
	}
	b := j.cur
	j.cur = nil
	sum := map[string]any{"decisions": j.counts, "day": j.day}
	if err := b.WriteSummary(sum); err != nil {
		return fmt.Errorf("monitor journal %s: %w", b.Dir(), err)
	}
	if err := b.Finalize(results.StatusOK, ""); err != nil {
		return fmt.Errorf("monitor journal %s: %w", b.Dir(), err)
	}
	return nil
}
