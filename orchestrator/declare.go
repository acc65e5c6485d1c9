package orchestrator

import (
	"errors"
	"strings"
)

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
