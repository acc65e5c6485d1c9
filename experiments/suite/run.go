package suite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"testbed/orchestrator"
	"testbed/results"
)

// RunFunc runs one entry as an ordinary run (its own bundle). It returns an
// error without a result only when the run could not start.
type RunFunc func(ctx context.Context, e *Entry) (*orchestrator.RunResult, error)

// How an entry's run ended, for exit codes and JUnit.
const (
	ClassOK      = "ok"
	ClassFailed  = "failed"  // the run ran and failed
	ClassInfra   = "infra"   // the lab could not serve it: unreachable device, lease refused
	ClassAborted = "aborted" // interrupted
	ClassInput   = "input"   // bad input found only at run time (e.g. a plan outside the lab's limits)
	ClassNotRun  = "not-run" // the suite was interrupted before this entry
)

// EntryResult is one entry's run and checks.
type EntryResult struct {
	ID      string  `json:"id"`
	Recipe  string  `json:"recipe"`
	Where   string  `json:"where"`
	Seed    *uint64 `json:"seed,omitempty"`
	RunID   string  `json:"run_id,omitempty"`
	Bundle  string  `json:"bundle,omitempty"`
	Status  string  `json:"status,omitempty"` // the bundle's status
	Class   string  `json:"class"`
	Reason  string  `json:"reason,omitempty"`
	Seconds float64 `json:"seconds"`
	// Baseline is the bundle the entry was compared with ("" if none) and
	// BaselineHow how it was chosen, or why there is none.
	Baseline    string  `json:"baseline,omitempty"`
	BaselineHow string  `json:"baseline_how,omitempty"`
	Checks      []Check `json:"checks"`
	// NotRestored is true when the run left some of the lab unrestored.
	NotRestored bool `json:"not_restored,omitempty"`
}

// Report is a suite run.
type Report struct {
	Suite        string         `json:"suite"`
	File         string         `json:"file"`
	Started      time.Time      `json:"started"`
	Seconds      float64        `json:"seconds"`
	BaselineRoot string         `json:"baseline,omitempty"`
	Entries      []*EntryResult `json:"entries"`
}

// Totals count a report's entries and checks by outcome.
type Totals struct {
	Entries     int `json:"entries"`
	OK          int `json:"ok"`
	Failed      int `json:"failed"`
	Infra       int `json:"infra"`
	Aborted     int `json:"aborted"`
	Input       int `json:"input"`
	NotRun      int `json:"not_run"`
	Checks      int `json:"checks"`
	Passed      int `json:"passed"`
	Regressions int `json:"regressions"`
	Invalid     int `json:"invalid"`
	Skipped     int `json:"skipped"`
	NotRestored int `json:"not_restored"`
}

// Totals counts the report.
func (r *Report) Totals() Totals {
	var t Totals
	for _, e := range r.Entries {
		t.Entries++
		if e.NotRestored {
			t.NotRestored++
		}
		switch e.Class {
		case ClassOK:
			t.OK++
		case ClassFailed:
			t.Failed++
		case ClassInfra:
			t.Infra++
		case ClassAborted:
			t.Aborted++
		case ClassInput:
			t.Input++
		case ClassNotRun:
			t.NotRun++
		}
		for _, c := range e.Checks {
			t.Checks++
			switch c.Outcome {
			case Pass:
				t.Passed++
			case Regression:
				t.Regressions++
			case Invalid:
				t.Invalid++
			case Skipped:
				t.Skipped++
			}
		}
	}
	return t
}

// Run runs the entries in order, each through run, and evaluates each
// finished run's expectations against its baseline (bs may be nil).
// onEntry, if not nil, sees each entry's result as soon as it is known.
// An interrupted context stops the suite; the entries not reached are
// reported as not run.
func (s *Suite) Run(ctx context.Context, run RunFunc, bs *Baselines, onEntry func(*EntryResult)) *Report {
	rep := &Report{Suite: s.Name, File: s.Path, Started: time.Now()}
	if bs != nil {
		rep.BaselineRoot = bs.Root
	}
	stopped := false
	for _, e := range s.Entries {
		er := &EntryResult{ID: e.ID, Recipe: e.Recipe.Meta().Name, Where: e.Pos.String(), Seed: e.Seed}
		rep.Entries = append(rep.Entries, er)
		if stopped || ctx.Err() != nil {
			stopped = true
			er.Class, er.Reason = ClassNotRun, "the suite was interrupted before this entry"
			er.Checks = notEvaluated(e, "not evaluated: the entry did not run")
			if onEntry != nil {
				onEntry(er)
			}
			continue
		}
		t0 := time.Now()
		res, err := run(ctx, e)
		er.Seconds = time.Since(t0).Seconds()
		s.finish(ctx, e, er, res, err, bs)
		if er.Class == ClassAborted {
			stopped = true
		}
		if onEntry != nil {
			onEntry(er)
		}
	}
	rep.Seconds = time.Since(rep.Started).Seconds()
	return rep
}

func (s *Suite) finish(ctx context.Context, e *Entry, er *EntryResult, res *orchestrator.RunResult, err error, bs *Baselines) {
	if res == nil {
		var ie *orchestrator.InputError
		var fe *orchestrator.InfraError
		switch {
		case err == nil:
			er.Class, er.Reason = ClassFailed, "the run returned no result"
		case ctx.Err() != nil:
			er.Class, er.Reason = ClassAborted, err.Error()
		case errors.As(err, &fe):
			er.Class, er.Reason = ClassInfra, err.Error()
		case errors.As(err, &ie):
			er.Class, er.Reason = ClassInput, fmt.Sprintf("%s: entry %s: %v", e.Pos, e.ID, err)
		default:
			er.Class, er.Reason = ClassFailed, err.Error()
		}
		er.Checks = notEvaluated(e, "not evaluated: the run did not start")
		return
	}
	er.RunID, er.Bundle, er.Status, er.Reason = res.RunID, res.Dir, string(res.Status), res.Reason
	er.NotRestored = len(res.Unrestored) > 0
	switch res.Status {
	case results.StatusOK:
		er.Class = ClassOK
	case results.StatusAborted:
		er.Class = ClassAborted
	default:
		er.Class = ClassFailed
		var fe *orchestrator.InfraError
		if errors.As(res.Err, &fe) || strings.HasPrefix(res.Reason, "infrastructure") {
			er.Class = ClassInfra
		}
	}
	if er.Class != ClassOK {
		er.Checks = notEvaluated(e, fmt.Sprintf("not evaluated: the run ended %s", res.Status))
		return
	}
	rd, err := results.Open(res.Dir)
	if err != nil {
		er.Class, er.Reason = ClassInfra, fmt.Sprintf("read the bundle back: %v", err)
		er.Checks = notEvaluated(e, "not evaluated: the bundle could not be read")
		return
	}
	if len(rd.Summary) == 0 {
		for _, x := range e.Expect {
			er.Checks = append(er.Checks, Check{Expect: x, Pattern: x.Metric, Condition: x.Condition(), Where: x.Pos.String(), Outcome: Invalid,
				Message: fmt.Sprintf("%s: metric %s: the run of %s wrote no summary.json", x.Pos, x.Metric, e.Recipe.Meta().Name)})
		}
		return
	}
	var baseSummary []byte
	baseName := ""
	if len(e.Expect) > 0 {
		b, how := bs.For(e)
		er.BaselineHow = how
		if b != nil {
			er.Baseline, baseSummary, baseName = b.Path, b.Summary, b.Path
		}
	}
	checks, err := e.Evaluate(rd.Summary, baseSummary, baseName)
	if err != nil {
		er.Checks = []Check{{Pattern: "summary.json", Condition: "parses", Where: e.Pos.String(), Outcome: Invalid, Message: err.Error()}}
		return
	}
	er.Checks = checks
}

func notEvaluated(e *Entry, why string) []Check {
	var out []Check
	for _, x := range e.Expect {
		out = append(out, Check{Expect: x, Pattern: x.Metric, Condition: x.Condition(), Where: x.Pos.String(), Outcome: Skipped,
			Message: fmt.Sprintf("%s: %s: %s", x.Pos, x.Metric, why)})
	}
	return out
}
