// Command testbed runs experiments on an optical/switching testbed, or on
// the built-in simulated lab when no inventory is given.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"testbed/orchestrator"
)

// Exit codes (documented in the README).
const (
	exitOK       = 0
	exitFailed   = 1 // the run ran and failed (or a bundle does not verify)
	exitBadInput = 2 // usage, inventory, parameters, plan outside limits
	exitAborted  = 3 // interrupted; the lab was restored
	exitInfra    = 4 // the lab could not serve the run: unreachable device, lease held, disk
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "testbed: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "testbed: %v\n", err)
	var ie *orchestrator.InputError
	var fe *orchestrator.InfraError
	switch {
	case errors.As(err, &fe):
		return exitInfra
	case errors.As(err, &ie):
		return exitBadInput
	}
	return exitBadInput // cobra usage errors and the like
}
