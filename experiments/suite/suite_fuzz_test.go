package suite

import (
	"errors"
	"strings"
	"testing"

	"testbed/orchestrator"
)

// FuzzParse: any bytes give a suite or an input error naming the file,
// never a panic; a suite that parses has entries with a recipe, resolved
// parameters, unique ids and expectations that check something.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		good,
		"- recipe: fct\n",
		"entries:\n  - recipe: nope\n    seed: -1\n  - recipe: nope\n",
		"entries:\n  - recipe: sweep\n    set: {step_db: 1e-3, timeout: -1ms, links: [a]}\n    expect:\n      - {metric: 'a.*', abs_tol: 1, worse: lower}\n",
		"entries: [\n",
		"name: x\nentries: []\n",
		"a: &a [*a]\n",
	} {
		f.Add([]byte(s))
	}
	reg := registry()
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("s.yaml", data, reg)
		if err != nil {
			var ie *orchestrator.InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), "s.yaml") {
				t.Fatalf("error %T %q: want an InputError naming the file", err, err)
			}
			return
		}
		if len(s.Entries) == 0 {
			t.Fatal("a suite without entries parsed")
		}
		ids := map[string]bool{}
		for _, e := range s.Entries {
			if e.Recipe == nil || e.Params == nil || e.ID == "" || ids[e.ID] {
				t.Fatalf("entry %+v: recipe, parameters and a unique id expected", e)
			}
			ids[e.ID] = true
			for _, x := range e.Expect {
				if x.Min == nil && x.Max == nil && !x.Relative() {
					t.Fatalf("expectation %+v checks nothing", x)
				}
			}
		}
	})
}
