package lgmodel

import "os"

// longEnv is the environment variable experiments/recipetest.LongEnv
// names (this pure model does not import the recipes' test helpers):
// `make test-long` sets it and the exactness sweeps below (stepping
// against skipping, replaying, looping ahead and jumping cycles) run all
// their seeds and frames; `make test` runs a short case of each, which
// takes every path of the mechanism it checks (the tests say which
// counters show it) at a third of the CPU.
const longEnv = "TESTBED_LONG"

// sweep gives short under make test and full under make test-long.
func sweep[T any](short, full T) T {
	if os.Getenv(longEnv) != "" {
		return full
	}
	return short
}
