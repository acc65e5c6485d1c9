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
	// exitNotRestored: some of the lab could not be restored, however the
	// run ended (aborted, failed: a second Ctrl-C, a device that failed its
	// restore); the bundle's manifest lists what (cleanup, lab_restored:
	// false). It wins over every other code: the lab is dirty.
	exitNotRestored = 6
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	sig := installSignals() // first thing: see signals.go
	os.Exit(runWith(context.Background(), sig, os.Args[1:], os.Stdout, os.Stderr))
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

// run runs one command in-process (tests); interrupts are caught per run.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runWith(ctx, nil, args, stdout, stderr)
}

// runWith runs one command; sig, when not nil, is the process's signal
// handler, installed before anything else.
func runWith(ctx context.Context, sig *signals, args []string, stdout, stderr io.Writer) int {
	if sig != nil {
		sig.setOutput(stderr)
		// Every command's context ends with the first SIGINT/SIGTERM, so
		// that a long-running one (monitor, lab up, lab recover, switch
		// deploy) stops and runs its deferred cleanup. The runs (exp run,
		// exp rerun, suites) detach from it: they abort at their next safe
		// point through interruptible, and finalize their bundle after.
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(sig.abortCtx, func() { cancel(context.Cause(sig.abortCtx)) })
		defer stop()
	}
	root, _ := newRootApp(stdout, stderr, sig)
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
