package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"testbed/orchestrator"
)

// signals is the process's SIGINT/SIGTERM handler. main installs it before
// anything else, so that a signal at any moment (while the configuration
// is read, the simulated lab starts, the leases are taken) is caught and
// ends the command through its normal path: a run that has begun records
// it as aborted, with the lab restored and the bundle finalized, never a
// process killed half-way with a bundle-less lease or lab left behind. The
// first signal aborts (the run stops at its next safe point); the second
// stops waiting on devices during the cleanup.
type signals struct {
	abortCtx context.Context
	abort    context.CancelCauseFunc
	hardCtx  context.Context
	hard     context.CancelFunc

	mu     sync.Mutex
	stderr io.Writer
	ch     chan os.Signal
}

// installSignals starts catching SIGINT and SIGTERM.
func installSignals() *signals {
	s := &signals{ch: make(chan os.Signal, 2), stderr: os.Stderr}
	s.abortCtx, s.abort = context.WithCancelCause(context.Background())
	s.hardCtx, s.hard = context.WithCancel(context.Background())
	signal.Notify(s.ch, os.Interrupt, syscall.SIGTERM)
	go s.loop()
	return s
}

func (s *signals) loop() {
	n := 0
	for sig := range s.ch {
		n++
		s.mu.Lock()
		w := s.stderr
		s.mu.Unlock()
		if n == 1 {
			fmt.Fprintf(w, "\ntestbed: %v: stopping at the next safe point and restoring the lab (again to stop waiting)\n", sig)
			s.abort(fmt.Errorf("%w by %v", orchestrator.ErrAborted, sig))
			continue
		}
		fmt.Fprintf(w, "\ntestbed: %v again: no longer waiting on devices\n", sig)
		s.hard()
	}
}

// setOutput says where the messages go.
func (s *signals) setOutput(w io.Writer) {
	s.mu.Lock()
	s.stderr = w
	s.mu.Unlock()
}
