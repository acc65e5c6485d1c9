package orchestrator

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Parameter types a recipe may declare.
const (
	TypeFloat    = "float"
	TypeInt      = "int"
	TypeBool     = "bool"
	TypeString   = "string"
	TypeDuration = "duration"
	TypeFloats   = "[]float"
	TypeStrings  = "[]string"
)

// ParamSpec declares one recipe parameter: its type, unit, default and limits.
type ParamSpec struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Unit        string   `json:"unit,omitempty"`
	Default     any      `json:"default"`
	Description string   `json:"description"`
	Min         *float64 `json:"min,omitempty"`
	Max         *float64 `json:"max,omitempty"`
	Enum        []string `json:"enum,omitempty"`
}

// Bound is a helper for ParamSpec.Min/Max literals.
func Bound(v float64) *float64 { return &v }

// Param sources, recorded in the manifest.
const (
	SourceDefault = "default"
	SourceFile    = "file"
	SourceSet     = "set"
)

// Params are a recipe's resolved parameter values.
type Params struct {
	specs  []ParamSpec
	values map[string]any
	source map[string]string
}

// ResolveParams starts from the defaults, applies values from a parameters
// file (already decoded, e.g. from YAML), then `--set key=value` strings, and
// checks each against its spec. fileName is used in messages.
func ResolveParams(specs []ParamSpec, fileName string, file map[string]any, sets []string) (*Params, error) {
	return ResolveParamsFile(specs, &ParamsFile{Name: fileName, Values: file}, sets)
}

// ResolveParamsFile is ResolveParams with a parameters file as
// ParseParamsFile reads it, so that its errors name the line of each
// value. pf may be nil.
func ResolveParamsFile(specs []ParamSpec, pf *ParamsFile, sets []string) (*Params, error) {
	if pf == nil {
		pf = &ParamsFile{}
	}
	p := &Params{specs: specs, values: map[string]any{}, source: map[string]string{}}
	for _, s := range specs {
		p.values[s.Name] = s.Default
		p.source[s.Name] = SourceDefault
	}
	var problems []string
	fileKeys := make([]string, 0, len(pf.Values))
	for k := range pf.Values {
		fileKeys = append(fileKeys, k)
	}
	sort.Slice(fileKeys, func(i, j int) bool {
		a, b := pf.Lines[fileKeys[i]], pf.Lines[fileKeys[j]]
		if a != b {
			return a < b
		}
		return fileKeys[i] < fileKeys[j]
	})
	for _, k := range fileKeys {
		at := pf.at(k)
		spec, ok := p.spec(k)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: unknown parameter %q (known: %s)", at, k, p.names()))
			continue
		}
		v, err := coerce(spec, pf.Values[k], pf.Text[k])
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: parameter %s: %v", at, k, err))
			continue
		}
		p.values[k], p.source[k] = v, SourceFile
	}
	for _, kv := range sets {
		k, raw, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			problems = append(problems, fmt.Sprintf("--set %q: expected key=value", kv))
			continue
		}
		spec, found := p.spec(k)
		if !found {
			problems = append(problems, fmt.Sprintf("--set %s: unknown parameter %q (known: %s)", kv, k, p.names()))
			continue
		}
		v, err := parseString(spec, raw)
		if err != nil {
			problems = append(problems, fmt.Sprintf("--set %s: %v", kv, err))
			continue
		}
		p.values[k], p.source[k] = v, SourceSet
	}
	if len(problems) > 0 {
		return nil, &InputError{Msg: "bad parameters:\n  " + strings.Join(problems, "\n  ")}
	}
	return p, nil
}

func (p *Params) spec(name string) (ParamSpec, bool) {
	for _, s := range p.specs {
		if s.Name == name {
			return s, true
		}
	}
	return ParamSpec{}, false
}

func (p *Params) names() string {
	var n []string
	for _, s := range p.specs {
		n = append(n, s.Name)
	}
	return strings.Join(n, ", ")
}

// Specs returns the declarations the values were resolved against.
func (p *Params) Specs() []ParamSpec { return p.specs }

// Value returns a parameter's value and where it came from.
func (p *Params) Value(name string) (any, string) { return p.values[name], p.source[name] }

// Float returns a float parameter (panics on a name the recipe did not declare: a programming error).
func (p *Params) Float(name string) float64 { return p.must(name).(float64) }

// Int returns an int parameter.
func (p *Params) Int(name string) int64 { return p.must(name).(int64) }

// Bool returns a bool parameter.
func (p *Params) Bool(name string) bool { return p.must(name).(bool) }

// String returns a string parameter.
func (p *Params) String(name string) string { return p.must(name).(string) }

// Duration returns a duration parameter.
func (p *Params) Duration(name string) time.Duration { return p.must(name).(time.Duration) }

// Floats returns a float list parameter.
func (p *Params) Floats(name string) []float64 { return slices.Clone(p.must(name).([]float64)) }

// Strings returns a string list parameter.
func (p *Params) Strings(name string) []string { return slices.Clone(p.must(name).([]string)) }

func (p *Params) must(name string) any {
	v, ok := p.values[name]
	if !ok {
		panic(fmt.Sprintf("recipe reads undeclared parameter %q", name))
	}
	return v
}

// coerce converts a decoded (YAML/JSON) value to the spec's Go type.
// text is the value as the user wrote it, for messages ("" when unknown).
func coerce(s ParamSpec, v any, text string) (any, error) {
	if str, ok := v.(string); ok {
		return parseString(s, str)
	}
	if text == "" {
		text = fmt.Sprint(v)
	}
	switch s.Type {
	case TypeFloat:
		f, ok := toFloat(v)
		if !ok {
			return nil, fmt.Errorf("expected a number, got %s", text)
		}
		return checkRange(s, f, text)
	case TypeInt:
		f, ok := toFloat(v)
		if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
			return nil, fmt.Errorf("expected an integer, got %s", text)
		}
		if _, err := checkRange(s, f, text); err != nil {
			return nil, err
		}
		return int64(f), nil
	case TypeBool:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("expected true or false, got %s", text)
		}
		return b, nil
	case TypeFloats, TypeStrings:
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("expected a list, got %s", text)
		}
		var parts []string
		for _, e := range list {
			parts = append(parts, fmt.Sprint(e))
		}
		return parseString(s, strings.Join(parts, ","))
	}
	return parseString(s, fmt.Sprint(v))
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return 0, false
}

func parseString(s ParamSpec, raw string) (any, error) {
	raw = strings.TrimSpace(raw)
	switch s.Type {
	case TypeFloat:
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number (%s)", raw, unitHint(s))
		}
		return checkRange(s, f, raw)
	case TypeInt:
		f, err := strconv.ParseFloat(raw, 64) // accepts 1e6
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
			return nil, fmt.Errorf("%q is not an integer", raw)
		}
		if _, err := checkRange(s, f, raw); err != nil {
			return nil, err
		}
		return int64(f), nil
	case TypeBool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", raw)
		}
		return b, nil
	case TypeDuration:
		d, err := time.ParseDuration(raw)
		if err != nil {
			return nil, fmt.Errorf("%q is not a duration (e.g. 10s, 500ms)", raw)
		}
		if _, err := checkRange(s, d.Seconds(), raw); err != nil {
			return nil, err
		}
		return d, nil
	case TypeString:
		if len(s.Enum) > 0 && !slices.Contains(s.Enum, raw) {
			return nil, fmt.Errorf("%q is not one of %s", raw, strings.Join(s.Enum, ", "))
		}
		return raw, nil
	case TypeFloats:
		out := []float64{}
		for _, part := range splitList(raw) {
			f, err := strconv.ParseFloat(part, 64)
			if err != nil {
				return nil, fmt.Errorf("%q is not a number (%s)", part, unitHint(s))
			}
			if _, err := checkRange(s, f, part); err != nil {
				return nil, err
			}
			out = append(out, f)
		}
		return out, nil
	case TypeStrings:
		out := splitList(raw)
		for _, e := range out {
			if len(s.Enum) > 0 && !slices.Contains(s.Enum, e) {
				return nil, fmt.Errorf("%q is not one of %s", e, strings.Join(s.Enum, ", "))
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("parameter type %q is not supported", s.Type)
}

func splitList(raw string) []string {
	out := []string{}
	for _, part := range strings.Split(raw, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func unitHint(s ParamSpec) string {
	if s.Unit != "" {
		return "in " + s.Unit
	}
	return "plain number"
}

// checkRange checks f against the spec's limits; shown is the value as
// the user wrote it, so that a message keeps their unit ("-1ms", not
// "-0.001").
func checkRange(s ParamSpec, f float64, shown string) (float64, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s is not a finite number", shown)
	}
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, strconv.FormatFloat(f, 'g', -1, 64)) {
		return 0, fmt.Errorf("%s is not one of %s", withUnit(s, shown), strings.Join(s.Enum, ", "))
	}
	if s.Min != nil && f < *s.Min {
		return 0, fmt.Errorf("%s is below the minimum %s", withUnit(s, shown), bound(s, *s.Min))
	}
	if s.Max != nil && f > *s.Max {
		return 0, fmt.Errorf("%s is above the maximum %s", withUnit(s, shown), bound(s, *s.Max))
	}
	return f, nil
}

// withUnit appends the spec's unit to a plain number; a duration carries
// its own.
func withUnit(s ParamSpec, v string) string {
	if s.Type == TypeDuration || s.Unit == "" {
		return v
	}
	return v + " " + s.Unit
}

// bound writes a limit in the spec's terms: a duration as a duration
// (a duration's limits are in seconds), a number with the unit.
func bound(s ParamSpec, b float64) string {
	if s.Type == TypeDuration {
		return time.Duration(math.Round(b * 1e9)).String()
	}
	return withUnit(s, strconv.FormatFloat(b, 'g', -1, 64))
}
