package main

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"unicode"
)

// jsonShape rewrites a value for --output json so every command's output
// follows one convention: struct fields without a json tag get
// lower_snake_case keys (RunID -> run_id), and a nil slice is [] rather
// than null. Map keys are data (device and link names) and stay as they
// are; tagged fields keep their tag's name and omitempty.
func jsonShape(v any) any {
	return shape(reflect.ValueOf(v))
}

var (
	jsonMarshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
	textMarshaler = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
)

func shape(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
		return nil
	}
	if v.Type().Implements(jsonMarshaler) || v.Type().Implements(textMarshaler) {
		// time.Time, json.RawMessage and the like say themselves.
		b, err := json.Marshal(v.Interface())
		if err != nil {
			return v.Interface()
		}
		var out any
		if json.Unmarshal(b, &out) != nil {
			return v.Interface()
		}
		return out
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return shape(v.Elem())
	case reflect.Struct:
		out := map[string]any{}
		shapeStruct(v, out)
		return out
	case reflect.Map:
		if v.IsNil() {
			return map[string]any{}
		}
		out := map[string]any{}
		iter := v.MapRange()
		for iter.Next() {
			k := iter.Key()
			var key string
			if k.Kind() == reflect.String {
				key = k.String()
			} else {
				b, _ := json.Marshal(k.Interface())
				key = strings.Trim(string(b), `"`)
			}
			out[key] = shape(iter.Value())
		}
		return out
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Interface() // []byte: base64, as encoding/json does
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = shape(v.Index(i))
		}
		return out
	}
	return v.Interface()
}

func shapeStruct(v reflect.Value, out map[string]any) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		fv := v.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ev := fv
			if ev.Kind() == reflect.Pointer {
				if ev.IsNil() {
					continue
				}
				ev = ev.Elem()
			}
			if ev.Kind() == reflect.Struct {
				shapeStruct(ev, out)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = snakeCase(f.Name)
		}
		if strings.Contains(opts, "omitempty") && fv.IsZero() {
			continue
		}
		if strings.Contains(opts, "omitempty") && (fv.Kind() == reflect.Slice || fv.Kind() == reflect.Map) && fv.Len() == 0 {
			continue
		}
		out[name] = shape(fv)
	}
}

// snakeCase writes a Go name in lower_snake_case: RunID -> run_id,
// StepsDone -> steps_done, OK -> ok.
func snakeCase(s string) string {
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 {
			prevLower := unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1])
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1])
			if prevLower || (unicode.IsUpper(r[i-1]) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
