package orchestrator

import (
	"strings"
	"testing"
	"time"
)

func specs() []ParamSpec {
	return []ParamSpec{
		{Name: "att", Type: TypeFloat, Unit: "dB", Default: 1.5, Min: Bound(0), Max: Bound(40)},
		{Name: "n", Type: TypeInt, Default: int64(10)},
		{Name: "links", Type: TypeStrings, Default: []string{}},
		{Name: "points", Type: TypeFloats, Unit: "dB", Default: []float64{1}},
		{Name: "wait", Type: TypeDuration, Default: time.Second},
		{Name: "mode", Type: TypeString, Default: "lg", Enum: []string{"off", "lg", "lgnb"}},
		{Name: "on", Type: TypeBool, Default: false},
	}
}

func TestResolveParamsPrecedence(t *testing.T) {
	p, err := ResolveParams(specs(), "p.yaml", map[string]any{"att": 3, "n": 7, "links": []any{"a", "b"}}, []string{"att=4.25", "points=1,2.5", "wait=250ms", "n=1e6", "on=true"})
	if err != nil {
		t.Fatal(err)
	}
	if v, src := p.Value("att"); v.(float64) != 4.25 || src != SourceSet {
		t.Errorf("att = %v from %s, want 4.25 from set", v, src)
	}
	if p.Int("n") != 1_000_000 {
		t.Errorf("n = %d", p.Int("n"))
	}
	if got := p.Strings("links"); len(got) != 2 || got[1] != "b" {
		t.Errorf("links = %v", got)
	}
	if _, src := p.Value("links"); src != SourceFile {
		t.Errorf("links source = %s", src)
	}
	if got := p.Floats("points"); len(got) != 2 || got[1] != 2.5 {
		t.Errorf("points = %v", got)
	}
	if p.Duration("wait") != 250*time.Millisecond || !p.Bool("on") || p.String("mode") != "lg" {
		t.Errorf("wait/on/mode wrong: %v %v %v", p.Duration("wait"), p.Bool("on"), p.String("mode"))
	}
}

func TestResolveParamsErrorsNameTheProblem(t *testing.T) {
	cases := []struct {
		sets []string
		file map[string]any
		want string
	}{
		{sets: []string{"att=50"}, want: "above the maximum 40"},
		{sets: []string{"att=-1"}, want: "below the minimum 0"},
		{sets: []string{"att=abc"}, want: `"abc" is not a number (in dB)`},
		{sets: []string{"nope=1"}, want: `unknown parameter "nope"`},
		{sets: []string{"att"}, want: "expected key=value"},
		{sets: []string{"mode=fast"}, want: `"fast" is not one of off, lg, lgnb`},
		{sets: []string{"n=1.5"}, want: `"1.5" is not an integer`},
		{file: map[string]any{"att": true}, want: "p.yaml: parameter att: expected a number"},
		{file: map[string]any{"bogus": 1}, want: `p.yaml: unknown parameter "bogus"`},
	}
	for _, c := range cases {
		_, err := ResolveParams(specs(), "p.yaml", c.file, c.sets)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("sets %v file %v: error %v, want it to contain %q", c.sets, c.file, err, c.want)
		}
		if _, ok := err.(*InputError); err != nil && !ok {
			t.Errorf("error %T is not an InputError", err)
		}
	}
}
