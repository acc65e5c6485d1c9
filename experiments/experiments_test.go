package experiments

import (
	"strings"
	"testing"
)

// Every recipe names its headline metrics, each a dotted path of
// identifiers (or `*`), so the end of a run and `results list` show the
// numbers its paper reports.
func TestEveryRecipeDeclaresItsHeadlines(t *testing.T) {
	reg := Registry()
	for _, name := range reg.Names() {
		r, _ := reg.Get(name)
		pats := r.Meta().Headlines
		if len(pats) == 0 {
			t.Errorf("%s declares no headline metrics", name)
		}
		for _, p := range pats {
			for _, seg := range strings.Split(p, ".") {
				if seg == "" || strings.ContainsAny(seg, " \t") {
					t.Errorf("%s: headline %q: empty segment or a space", name, p)
				}
			}
		}
	}
}
