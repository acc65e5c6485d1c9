package orchestrator

import (
	"errors"
	"strings"
	"testing"

	"testbed/inventory"
)

// validated is a recipe whose parameters a and b are checked across each
// other; planned counts the plans made.
type validated struct {
	planned int
	plain   bool // Validate returns a plain error
}

func (*validated) Meta() Meta {
	return Meta{Name: "validated", Version: "1",
		Params: []ParamSpec{{Name: "a", Type: TypeInt, Default: int64(1)}, {Name: "b", Type: TypeInt, Default: int64(2)}}}
}

func (v *validated) Validate(p *Params) error {
	if p.Int("a") < p.Int("b") {
		return nil
	}
	if v.plain {
		return errors.New("a must be below b")
	}
	return Inputf("a %d: expected below b %d", p.Int("a"), p.Int("b"))
}

func (v *validated) Plan(pc *PlanContext) (*Plan, error) {
	v.planned++
	return &Plan{}, nil
}

// The engine runs a recipe's declared checks before its Plan, on the dry
// run too, and a failing check is the user's input's error.
func TestEngineValidatesBeforePlanning(t *testing.T) {
	for _, plain := range []bool{false, true} {
		r := &validated{plain: plain}
		eng := &Engine{}
		lab := &inventory.Inventory{Name: "empty", Path: "empty.yaml"}
		params, err := ResolveParams(r.Meta().Params, "", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Plan(RunRequest{Recipe: r, Params: params, Lab: lab}); err != nil || r.planned != 1 {
			t.Fatalf("a < b: %v, %d plans", err, r.planned)
		}
		params, err = ResolveParams(r.Meta().Params, "", nil, []string{"a=3"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = eng.Plan(RunRequest{Recipe: r, Params: params, Lab: lab})
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "b") || r.planned != 1 {
			t.Errorf("plain %v, a=3 b=2: %v (input error %v), %d plans", plain, err, ie != nil, r.planned)
		}
	}
}
