package orchestrator

import (
	"errors"
	"strings"
)

// BenchDeclarer is a recipe that needs a built-in simulated bench other
// than the default one (its roles are not on the default bench, such as
// rail-stretch's spools of fibre). With no inventory and no bench given, a
// run of it starts that bench.
type BenchDeclarer interface {
	Bench() string
}

// DeclaredBench is the bench a recipe declares, or "" (the default bench).
func DeclaredBench(r Recipe) string {
	if b, ok := r.(BenchDeclarer); ok {
		return b.Bench()
	}
	return ""
}

// Headliner is a recipe that names its headline metrics: the summary's
// numbers that answer what the recipe reproduces (a paper's numbers), in
// the order they are shown at the end of a run and in `results list`.
// Each is a metric path as `results show` prints it; `*` matches one
// dotted segment (`links.*.loss_cliff_db.1e-06`).
type Headliner interface {
	Headlines() []string
}

// DeclaredHeadlines is the headline patterns a recipe declares, or nil.
func DeclaredHeadlines(r Recipe) []string {
	if h, ok := r.(Headliner); ok {
		return h.Headlines()
	}
	return nil
}

// MatchMetric reports whether a metric path matches a headline pattern:
// the same number of dotted segments, each equal or `*`.
func MatchMetric(pattern, path string) bool {
	ps, ms := strings.Split(pattern, "."), strings.Split(path, ".")
	if len(ps) != len(ms) {
		return false
	}
	for i := range ps {
		if ps[i] != "*" && ps[i] != ms[i] {
			return false
		}
	}
	return true
}

// Validator is a recipe whose parameters are checked across each other
// (more trials than blocks, a loss rate above its target): the engine
// runs the checks before Plan, on the dry run too, so a parameter's own
// limits and choices stay in its ParamSpec and Plan is left with the
// steps.
type Validator interface {
	Validate(p *Params) error
}

// ValidateParams runs a recipe's declared checks on p (none: nil). An
// error is the user's input's.
func ValidateParams(r Recipe, p *Params) error {
	v, ok := r.(Validator)
	if !ok {
		return nil
	}
	err := v.Validate(p)
	if err == nil {
		return nil
	}
	var ie *InputError
	if errors.As(err, &ie) {
		return err
	}
	return &InputError{Msg: err.Error()}
}
