package orchestrator

import (
	"errors"
	"fmt"
)

// The engine sorts what goes wrong into classes, as LAVA does: bad input
// (the user must change something), infrastructure (the lab could not serve
// the run: unreachable device, lease held, disk), the experiment failing,
// and an abort on request. The CLI maps them to distinct exit codes.

// InputError is bad input: inventory, parameters, or a plan that violates a limit.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

// InfraError is the lab failing to serve the run.
type InfraError struct {
	Op  string
	Err error
}

func (e *InfraError) Error() string { return fmt.Sprintf("%s: %v", e.Op, e.Err) }
func (e *InfraError) Unwrap() error { return e.Err }

// ErrAborted is the cause of a run context cancelled on request (signal).
var ErrAborted = errors.New("aborted")

// Inputf makes an InputError.
func Inputf(format string, args ...any) error { return &InputError{Msg: fmt.Sprintf(format, args...)} }
