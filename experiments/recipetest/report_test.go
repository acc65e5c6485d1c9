package recipetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"testbed/internal/browsertest"
)

func TestMain(m *testing.M) { os.Exit(browsertest.Main(m)) }

// errorsOf records a check's Errorf calls instead of failing the test.
type errorsOf struct {
	testing.TB
	errs []string
}

func (e *errorsOf) Errorf(format string, args ...any) {
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

// The browser half of CheckReport, on the shared browser's tabs, passes a
// report whose figures render and fails one whose figures do not, or whose
// DOM holds another number of them.
func TestScreenshotFailsAReportThatDoesNotRender(t *testing.T) {
	if _, err := browsertest.HeadlessPath(); err != nil {
		t.Skip(err.Error())
	}
	fig := func(style string) string {
		return `<svg width="200" height="100" style="` + style + `"><g data-series="0"><polyline points="0,90 100,10 200,50" stroke="#1f77b4" stroke-width="3" fill="none"/></g></svg>`
	}
	for _, c := range []struct {
		name, body string
		nfigs      int
		want       string // in an error, or "" for none
	}{
		{"renders", fig("") + fig(""), 2, ""},
		{"hidden", fig("display:none") + fig("display:none"), 2, "did not render"},
		{"one figure short", fig(""), 2, "has 1 figures, want 2"},
	} {
		dir := t.TempDir()
		html := "<!DOCTYPE html><html><body>" + c.body + "</body></html>"
		if err := os.WriteFile(filepath.Join(dir, "report.html"), []byte(html), 0o644); err != nil {
			t.Fatal(err)
		}
		rec := &errorsOf{TB: t}
		screenshot(rec, dir, c.nfigs)
		got := strings.Join(rec.errs, "; ")
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: errors %q, want %q", c.name, got, c.want)
		}
	}
}
