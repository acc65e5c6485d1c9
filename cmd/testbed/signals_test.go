package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// testbed monitor runs until it is stopped: SIGINT (Ctrl-C) or SIGTERM
// (systemctl stop) ends it through its normal path, its deferred cleanup run
// (devices closed, the simulated lab stopped), exit 0. It once printed "stopping at the next safe point" and kept
// polling, 10 minutes after two SIGINTs.
func TestMonitorStopsOnSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			runs, state := dirs(t)
			r := startRun(t, "monitor", "--dry-run", "--interval", "50ms", "--metrics-addr", "127.0.0.1:0", "--runs-dir", runs, "--state-dir", state)
			r.each(func(line string) bool { return !strings.HasPrefix(line, "metrics: ") })
			if err := r.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			exited := make(chan error, 1)
			go func() {
				r.each(func(string) bool { return true })
				exited <- r.cmd.Wait()
			}()
			// A hang detector, not a timing: the stop time is logged.
			select {
			case err := <-exited:
				t.Logf("%v: exited %.2f s after the signal", sig, time.Since(start).Seconds())
				if err != nil {
					t.Fatalf("monitor after %v: %v\n%s", sig, err, r.log.String())
				}
			case <-time.After(2 * time.Minute):
				t.Fatalf("monitor still running 2 minutes after %v\n%s", sig, r.log.String())
			}
		})
	}
}
