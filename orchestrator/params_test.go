package orchestrator

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func specs() []ParamSpec {
	return []ParamSpec{
		{Name: "att", Type: TypeFloat, Unit: "dB", Default: 1.5, Min: Bound(0), Max: Bound(40)},
		{Name: "n", Type: TypeInt, Default: int64(10)},
		{Name: "links", Type: TypeStrings, Default: []string{}},
		{Name: "points", Type: TypeFloats, Unit: "dB", Default: []float64{1}, Max: Bound(40)},
		{Name: "wait", Type: TypeDuration, Default: time.Second, Min: Bound(0.001), Max: Bound(60)},
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
		// The value as written, with its unit.
		{sets: []string{"wait=-1ms"}, want: "--set wait=-1ms: -1ms is below the minimum 1ms"},
		{sets: []string{"wait=2m"}, want: "2m is above the maximum 1m0s"},
		{sets: []string{"att=-1e-3"}, want: "-1e-3 dB is below the minimum 0 dB"},
		{sets: []string{"points=1,45"}, want: "45 dB is above the maximum 40 dB"},
		{file: map[string]any{"att": 4e1 + 1}, want: "p.yaml: parameter att: 41 dB is above the maximum 40 dB"},
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

// A parameters file's errors name the line; every error at once; values
// keep the form they were written in.
func TestParamsFileErrorsNameTheLine(t *testing.T) {
	file := "# sweep settings\natt: 1e2\nbogus: 1\n\nwait: -1ms\nn: 3\nlinks: [a, b]\n"
	pf, err := ParseParamsFile("p.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ResolveParamsFile(specs(), pf, nil)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"p.yaml:2: parameter att: 1e2 dB is above the maximum 40 dB",
		`p.yaml:3: unknown parameter "bogus"`,
		"p.yaml:5: parameter wait: -1ms is below the minimum 1ms",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error:\n%v\nwant it to contain %q", err, want)
		}
	}
	pf, err = ParseParamsFile("p.yaml", []byte("n: 3\nlinks: [a, b]\nwait: 250ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ResolveParamsFile(specs(), pf, []string{"n=4"})
	if err != nil {
		t.Fatal(err)
	}
	if v, src := p.Value("links"); len(v.([]string)) != 2 || src != SourceFile || p.Int("n") != 4 || p.Duration("wait") != 250*time.Millisecond {
		t.Errorf("links %v from %s, n %d, wait %v", v, src, p.Int("n"), p.Duration("wait"))
	}
}

func TestParseParamsFileRejectsShapes(t *testing.T) {
	for text, want := range map[string]string{
		"att: 1\natt: 2\n":      "p.yaml:2: parameter att given twice (first on line 1)",
		"- att\n- n\n":          "p.yaml:1: expected a mapping of parameter name to value (name: value), got a list",
		"att: 1\n  n: [\n":      "p.yaml:2:",
		"att: {x: 1}\n":         "p.yaml:1: parameter att: expected a value or a list, got a mapping",
		"links: [[a]]\n":        "p.yaml:1: parameter links: expected a list of values, got a nested list",
		"att: 1\n? [a]\n: 2\n":  "p.yaml:2: expected a parameter name, got a list",
		"att: 1\nn: *nothere\n": "p.yaml: unknown anchor",
	} {
		_, err := ParseParamsFile("p.yaml", []byte(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", text, err, want)
		}
		if _, ok := err.(*InputError); err != nil && !ok {
			t.Errorf("%q: error %T is not an InputError", text, err)
		}
	}
	for _, empty := range []string{"", "# nothing\n", "~\n"} {
		if pf, err := ParseParamsFile("p.yaml", []byte(empty)); err != nil || len(pf.Values) != 0 {
			t.Errorf("%q: %v %v", empty, pf, err)
		}
	}
}

func TestGridSizeIsCheckedBeforeTheGridIsBuilt(t *testing.T) {
	n, err := GridSize("start_db", "stop_db", "step_db", 0, 20, 0.5, 2)
	if err != nil || n != 41 {
		t.Errorf("0..20 dB in 0.5: %d %v, want 41 points", n, err)
	}
	for _, c := range []struct {
		start, stop, step float64
		series            int
		name              string
	}{
		{0, 1e308, 0.5, 1, "stop_db"},
		{0, 100, 1e-300, 1, "step_db"},
		{0, 600, 0.01, 20, "series"},
		{0, 10, 0, 1, "step_db"},
	} {
		_, err := GridSize("start_db", "stop_db", "step_db", c.start, c.stop, c.step, c.series)
		var in *InputError
		if !errors.As(err, &in) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("GridSize(%g, %g, %g, %d): %v, want bad input naming %s", c.start, c.stop, c.step, c.series, err, c.name)
		}
	}
}

func TestIntegerChoicesAreEnforced(t *testing.T) {
	specs := []ParamSpec{{Name: "gbps", Type: TypeInt, Default: int64(25), Enum: []string{"10", "25", "100"}}}
	if _, err := ResolveParams(specs, "", nil, []string{"gbps=100"}); err != nil {
		t.Errorf("gbps=100: %v", err)
	}
	if _, err := ResolveParams(specs, "", nil, []string{"gbps=1e12"}); err == nil || !strings.Contains(err.Error(), "not one of") {
		t.Errorf("gbps=1e12: %v, want it refused as not one of the choices", err)
	}
}
