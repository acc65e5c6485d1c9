package recipetest

import (
	"os"
	"testing"
)

// LongEnv names the environment variable that lets the long end-to-end
// tests run: whole default-bench summaries, whole recipes on the
// twelve-switch Stardust bench, recipes compared over both switch
// drivers. `make test` leaves it unset and they skip; `make test-long`
// (which CI runs after `make test`) sets it.
const LongEnv = "TESTBED_LONG"

// Long skips t unless LongEnv is set, saying how to run it.
func Long(t testing.TB) {
	t.Helper()
	if os.Getenv(LongEnv) == "" {
		t.Skipf("a long end-to-end test: make test-long runs it (or %s=1 go test -run '^%s$' in its package)", LongEnv, t.Name())
	}
}
