package experiments

import (
	"errors"
	"strings"
	"testing"

	"testbed/experiments/suite"
	o "testbed/orchestrator"
)

// Every number a user can type has a limit, so that no typo can ask for
// unbounded work (stop_db=1e308 once built a sweep grid until the OOM
// killer stopped it at 23.9 GB).
func TestEveryNumericParameterHasALimit(t *testing.T) {
	reg := Registry()
	for _, n := range reg.Names() {
		r, _ := reg.Get(n)
		if missing := o.CheckParamLimits(r.Meta().Params); len(missing) > 0 {
			t.Errorf("%s: numeric parameters without a minimum and a maximum: %s", n, strings.Join(missing, ", "))
		}
	}
}

// A huge value of any numeric parameter, from --set or from a suite entry,
// is bad input naming the parameter, before any plan is built.
func TestHugeValuesAreRefusedNamingTheParameter(t *testing.T) {
	reg := Registry()
	for _, n := range reg.Names() {
		r, _ := reg.Get(n)
		for _, s := range r.Meta().Params {
			switch s.Type {
			case o.TypeFloat, o.TypeInt, o.TypeDuration, o.TypeFloats:
			default:
				continue
			}
			huge := "1e308"
			if s.Type == o.TypeDuration {
				huge = "2540400h" // the longest a time.Duration holds, about 290 years
			}
			_, err := o.ResolveParams(r.Meta().Params, "", nil, []string{s.Name + "=" + huge})
			var in *o.InputError
			if !errors.As(err, &in) || !strings.Contains(err.Error(), s.Name) {
				t.Errorf("%s --set %s=%s: %v, want bad input naming %s", n, s.Name, huge, err, s.Name)
			}
		}
	}
	_, err := suite.Parse("nightly.yaml", []byte("entries:\n  - recipe: attenuation-sweep\n    set:\n      stop_db: 1e308\n"), reg)
	if err == nil || !strings.Contains(err.Error(), "stop_db") || !strings.Contains(err.Error(), "nightly.yaml:4") {
		t.Errorf("suite entry with stop_db 1e308: %v, want an error at nightly.yaml:4 naming stop_db", err)
	}
}
