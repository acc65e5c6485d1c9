package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"testbed/results"
)

// Plan is what a recipe will do, as data: the dry run prints it, the engine
// runs it. Steps run in order (steps of different lanes at once: Step.Lane);
// each step is a safe point between which an abort may stop the run.
type Plan struct {
	Recipe  string
	Version string
	// Bindings say which lab resources fill the recipe's roles and why.
	Bindings []Binding
	Tables   []results.Table
	Steps    []*Step
	// Summary computes summary.json from what the steps collected. It runs
	// after the steps however the run ended; partial is true when not every
	// step ran.
	Summary func(partial bool) (any, error)
}

// Binding records a role filled by a lab resource.
type Binding struct {
	Role     string
	Resource string
	Detail   string
}

// Step is one unit of work with the settings it applies.
type Step struct {
	Name     string
	Action   string
	Devices  []string
	Settings []Setting
	// Note explains run-time decisions the plan cannot list in advance.
	Note string
	// Estimate is how long the step should take on a real lab (the
	// traffic it sends, the waits it asks for); 0 when unknown. The
	// progress display's ETA adds up the estimates of the steps left,
	// scaled by how the run has kept to the estimates so far.
	Estimate time.Duration
	// Lane names a sequence of steps that does not depend on the other
	// lanes' steps (one link of a sweep): consecutive steps with a lane
	// may run at once with other lanes' (RunRequest.Parallel), each
	// lane's in plan order. Lanes whose steps touch a device in common
	// run as one (a device is driven by one step at a time). A step
	// without a lane runs alone, after every step before it. The run's
	// tables get each step's rows in plan order however the lanes ran
	// (lanes.go).
	Lane string
	Run  func(ctx context.Context, rc *RunContext) error
}

// Setting is one value a step applies to a device.
type Setting struct {
	Device string
	Name   string
	Value  any
	Unit   string
}

func (s Setting) String() string {
	v := fmt.Sprint(s.Value)
	if f, ok := s.Value.(float64); ok {
		v = fmt.Sprintf("%g", f)
	}
	if s.Unit != "" {
		v += " " + s.Unit
	}
	return fmt.Sprintf("%s %s=%s", s.Device, s.Name, v)
}

// Devices lists every device the plan touches, sorted.
func (p *Plan) Devices() []string {
	seen := map[string]bool{}
	for _, s := range p.Steps {
		for _, d := range s.Devices {
			seen[d] = true
		}
	}
	var out []string
	for d := range seen {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// Print writes the plan for people: bindings, devices, then every step with
// its settings.
func (p *Plan) Print(w io.Writer) {
	fmt.Fprintf(w, "plan: %s v%s, %d steps\n", p.Recipe, p.Version, len(p.Steps))
	if len(p.Bindings) > 0 {
		fmt.Fprintln(w, "bindings:")
		for _, b := range p.Bindings {
			fmt.Fprintf(w, "  %-10s <- %s  %s\n", b.Role, b.Resource, b.Detail)
		}
	}
	fmt.Fprintf(w, "devices touched: %s\n", strings.Join(p.Devices(), ", "))
	fmt.Fprintln(w, "steps:")
	for i, s := range p.Steps {
		fmt.Fprintf(w, "  %4d  %-16s %s\n", i+1, s.Action, s.Name)
		for _, st := range s.Settings {
			fmt.Fprintf(w, "          %s\n", st)
		}
		if s.Note != "" {
			fmt.Fprintf(w, "          (%s)\n", s.Note)
		}
	}
}

// PlanJSON is the plan as data for --output json.
type PlanJSON struct {
	Recipe   string     `json:"recipe"`
	Version  string     `json:"version"`
	Bindings []Binding  `json:"bindings"`
	Devices  []string   `json:"devices"`
	Steps    []StepJSON `json:"steps"`
}

// StepJSON is one step as data.
type StepJSON struct {
	Name     string    `json:"name"`
	Action   string    `json:"action"`
	Devices  []string  `json:"devices"`
	Settings []Setting `json:"settings"`
	Note     string    `json:"note,omitempty"`
}

// JSON returns the plan as data.
func (p *Plan) JSON() PlanJSON {
	out := PlanJSON{Recipe: p.Recipe, Version: p.Version, Bindings: p.Bindings, Devices: p.Devices()}
	for _, s := range p.Steps {
		out.Steps = append(out.Steps, StepJSON{Name: s.Name, Action: s.Action, Devices: s.Devices, Settings: s.Settings, Note: s.Note})
	}
	return out
}

// SkipError ends a step without failing the run (e.g. the link is already
// dark, so higher attenuations are pointless).
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return "skipped: " + e.Reason }

// Skip returns a SkipError.
func Skip(format string, args ...any) error { return &SkipError{Reason: fmt.Sprintf(format, args...)} }

func isSkip(err error) (*SkipError, bool) {
	var s *SkipError
	ok := errors.As(err, &s)
	return s, ok
}
