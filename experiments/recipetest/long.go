package recipetest

import (
	"os"
	"testing"
)

// LongEnv names the environment variable that lets the long end-to-end
// tests run: whole recipes on the twelve-switch Stardust bench, recipes
// compared over both switch drivers, the default bench's summary of a
// recipe that reads a real-time switch (which must run alone). `make
// test` leaves it unset and they skip; `make test-long` (which CI runs
// after `make test`) sets it.
const LongEnv = "TESTBED_LONG"

// Long skips t unless LongEnv is set, saying how to run it.
func Long(t testing.TB) {
	t.Helper()
	if os.Getenv(LongEnv) == "" {
		t.Skipf("a long end-to-end test: make test-long runs it (or %s=1 go test -run '^%s$' in its package)", LongEnv, t.Name())
	}
}
