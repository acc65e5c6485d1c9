package stardust_test

import (
	"os"
	"testing"

	"testbed/internal/browsertest"
)

// TestMain runs the tests with browsertest.Main: the reports they check
// (recipetest.CheckReport) render in tabs of one headless browser, closed
// after the last test.
func TestMain(m *testing.M) { os.Exit(browsertest.Main(m)) }
