package orchestrator

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzParseParamsFile: any bytes give a parameters file or an input error
// naming the file, never a panic; a file that parses resolves against a
// recipe's parameters to values of the declared types, or an input error.
func FuzzParseParamsFile(f *testing.F) {
	for _, s := range []string{
		"att: 3\nn: 7\nlinks: [a, b]\n",
		"wait: -1ms\natt: 1e2\n",
		"points: [1, 2.5]\nmode: lgnb\non: true\n",
		"att: 1\natt: 2\n",
		"- a\n- b\n",
		"a: &x [1]\nb: *x\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := ParseParamsFile("p.yaml", data)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), "p.yaml") {
				t.Fatalf("error %T %q: want an InputError naming the file", err, err)
			}
			return
		}
		p, err := ResolveParamsFile(specs(), pf, nil)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("resolve: error %T %q is not an InputError", err, err)
			}
			return
		}
		checkTypes(t, p)
	})
}

// FuzzResolveSet: any --set string resolves to a value of the declared
// type or an input error; a resolved value written back out resolves to
// the same value.
func FuzzResolveSet(f *testing.F) {
	for _, s := range []string{"att=4.25", "n=1e6", "wait=-1ms", "points=1,2.5", "links=a,,b", "mode=lg", "on=true", "att", "=1", "wait=2562047h47m16.854775807s", "n=9.3e18"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, set string) {
		p, err := ResolveParams(specs(), "", nil, []string{set})
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %T %q is not an InputError", err, err)
			}
			return
		}
		checkTypes(t, p)
		k, _, _ := strings.Cut(set, "=")
		k = strings.TrimSpace(k)
		v, _ := p.Value(k)
		again, err := ResolveParams(specs(), "", nil, []string{k + "=" + format(v)})
		if err != nil {
			t.Fatalf("%q resolved to %#v, whose text %q does not resolve: %v", set, v, format(v), err)
		}
		if w, _ := again.Value(k); !reflect.DeepEqual(v, w) {
			t.Fatalf("%q resolved to %#v, written back %q resolves to %#v", set, v, format(v), w)
		}
	})
}

func checkTypes(t *testing.T, p *Params) {
	t.Helper()
	for _, s := range p.Specs() {
		v, _ := p.Value(s.Name)
		ok := false
		switch s.Type {
		case TypeFloat:
			_, ok = v.(float64)
		case TypeInt:
			_, ok = v.(int64)
		case TypeBool:
			_, ok = v.(bool)
		case TypeString:
			_, ok = v.(string)
		case TypeDuration:
			_, ok = v.(time.Duration)
		case TypeFloats:
			_, ok = v.([]float64)
		case TypeStrings:
			_, ok = v.([]string)
		}
		if !ok {
			t.Fatalf("parameter %s (%s) resolved to %#v", s.Name, s.Type, v)
		}
	}
}

func format(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []float64:
		var parts []string
		for _, f := range x {
			parts = append(parts, strconv.FormatFloat(f, 'g', -1, 64))
		}
		return strings.Join(parts, ",")
	case []string:
		return strings.Join(x, ",")
	}
	return fmt.Sprint(v)
}
