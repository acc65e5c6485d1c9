package serve

import (
	"os"
	"testing"

	"testbed/internal/browsertest"
)

// TestMain runs the tests with browsertest.Main: the browser test's tabs
// are of one headless browser, closed after the last test.
func TestMain(m *testing.M) { os.Exit(browsertest.Main(m)) }
