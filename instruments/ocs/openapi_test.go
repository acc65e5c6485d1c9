package ocs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"testbed/instruments/ocs"
	simocs "testbed/simlab/ocs"
)

// apiDoc is openapi.yaml, loaded as plain data.
type apiDoc struct {
	root map[string]any
}

func loadAPI(t *testing.T) *apiDoc {
	t.Helper()
	b, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := yaml.Unmarshal(b, &root); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if v, _ := root["openapi"].(string); !strings.HasPrefix(v, "3.") {
		t.Fatalf("openapi.yaml: openapi version %q, want 3.x", v)
	}
	return &apiDoc{root: root}
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

// ops lists "METHOD /path" for every operation in the document.
func (d *apiDoc) ops() map[string]map[string]any {
	out := map[string]map[string]any{}
	for path, item := range obj(d.root["paths"]) {
		for method, op := range obj(item) {
			switch method {
			case "get", "put", "post", "delete", "patch":
				out[strings.ToUpper(method)+" "+path] = obj(op)
			}
		}
	}
	return out
}

// deref follows a local $ref.
func (d *apiDoc) deref(s map[string]any) map[string]any {
	for i := 0; i < 8; i++ {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		cur := any(d.root)
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cur = obj(cur)[part]
		}
		s = obj(cur)
	}
	return s
}

func jsonSchema(d *apiDoc, content any) map[string]any {
	return d.deref(obj(obj(obj(content)["application/json"])["schema"]))
}

// check validates a JSON value against the subset of JSON Schema the
// document uses: type, properties, required, additionalProperties: false,
// items, enum, minimum, maximum. It returns every violation.
func (d *apiDoc) check(where string, s map[string]any, v any) []string {
	s = d.deref(s)
	if s == nil {
		return []string{where + ": no schema"}
	}
	var ps []string
	bad := func(format string, args ...any) { ps = append(ps, where+": "+fmt.Sprintf(format, args...)) }
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			bad("%T, want an object", v)
			return ps
		}
		props := obj(s["properties"])
		req, _ := s["required"].([]any)
		for _, r := range req {
			if _, ok := m[r.(string)]; !ok {
				bad("required %q missing", r)
			}
		}
		for k, x := range m {
			p, known := props[k]
			if !known {
				if s["additionalProperties"] == false {
					bad("property %q is not in the schema", k)
				}
				continue
			}
			ps = append(ps, d.check(where+"."+k, obj(p), x)...)
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			bad("%T, want an array", v)
			return ps
		}
		for i, x := range a {
			ps = append(ps, d.check(fmt.Sprintf("%s[%d]", where, i), obj(s["items"]), x)...)
		}
	case "integer":
		f, ok := v.(float64)
		if !ok || f != math.Trunc(f) {
			bad("%v, want an integer", v)
			return ps
		}
		if lo, ok := s["minimum"].(int); ok && f < float64(lo) {
			bad("%v below the minimum %d", f, lo)
		}
		if hi, ok := s["maximum"].(int); ok && f > float64(hi) {
			bad("%v above the maximum %d", f, hi)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			bad("%T, want a string", v)
			return ps
		}
		if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, any(str)) {
			bad("%q is not one of %v", str, enum)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("%T, want a boolean", v)
		}
	default:
		bad("schema type %v is not handled by this checker", s["type"])
	}
	return ps
}

func TestSchemaCheckerCatchesViolations(t *testing.T) {
	d := loadAPI(t)
	s := obj(obj(obj(d.root["components"])["schemas"])["System"])
	var v any
	json.Unmarshal([]byte(`{"vendor":"x","model":"y","serial":"z","firmware":"f","ports":0,"min_slot_ns":1.5,"max_slots":1,"max_period_ns":0,"now_ns":1,"extra":true}`), &v)
	got := strings.Join(d.check("System", s, v), "\n")
	for _, want := range []string{`required "min_night_ns" missing`, `ports: 0 below the minimum 1`, `min_slot_ns: 1.5, want an integer`, `property "extra" is not in the schema`} {
		if !strings.Contains(got, want) {
			t.Errorf("checker missed %q; said:\n%s", want, got)
		}
	}
}

// TestDriverAndEmulatorKeepToTheOpenAPIDocument drives every operation of
// the driver against the emulator and checks each exchange against
// openapi.yaml: route and method, query parameters, request and response
// bodies; and that the document, the emulator's routes and the driver's
// calls are the same set of operations.
func TestDriverAndEmulatorKeepToTheOpenAPIDocument(t *testing.T) {
	d := loadAPI(t)
	ops := d.ops()
	var docOps []string
	for k := range ops {
		docOps = append(docOps, k)
	}
	sort.Strings(docOps)
	served := append([]string(nil), simocs.MordiaRoutes()...)
	sort.Strings(served)
	if !slices.Equal(docOps, served) {
		t.Errorf("the emulator serves %v\nthe document has %v", served, docOps)
	}

	lab := newMordiaLab(t, 9, opts8())
	cs, _ := openMordia(t, lab.addr, 2*time.Second)
	s, _ := ocs.AsScheduler(cs)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cs.Identity(ctx)
	must(cs.SetConfiguration(ctx, ocs.Shift(8, 2)))
	_, err := cs.Configuration(ctx)
	must(err)
	_, err = cs.PortStatus(ctx)
	must(err)
	must(cs.Dark(ctx))
	// Error answers: 409 (nothing loaded), 400 (a start time in the past).
	if _, err := s.StartSchedule(ctx, ocs.StartAt{NextPeriod: true}); err == nil {
		t.Fatal("start with nothing loaded accepted")
	}
	sched := allToAll(8, 1500*us, 30*us)
	must(s.LoadSchedule(ctx, sched))
	if _, err := s.StartSchedule(ctx, ocs.StartAt{At: 1}); err == nil {
		t.Fatal("start in the past accepted")
	}
	now, err := s.Clock(ctx)
	must(err)
	// Far enough ahead that a loaded machine still asks in time.
	_, err = s.StartSchedule(ctx, ocs.StartAt{At: now + 100*time.Millisecond})
	must(err)
	_, err = s.ReplaceSchedule(ctx, allToAll(8, 1400*us, 20*us))
	must(err)
	st := waitPeriod(t, s, 2)
	if st.ReplaceAt != 0 {
		t.Fatalf("replacement still pending in period 2: %+v", st)
	}
	_, err = s.Nights(ctx, 0)
	must(err)
	must(s.StopSchedule(ctx))
	_, err = s.ScheduleStatus(ctx)
	must(err)

	called := map[string]bool{}
	for _, x := range lab.rec.exchanges() {
		key := x.Method + " " + x.Path
		called[key] = true
		op, ok := ops[key]
		if !ok {
			t.Errorf("%s is not in openapi.yaml", key)
			continue
		}
		q, _ := url.ParseQuery(x.Query)
		for name := range q {
			declared := false
			params, _ := op["parameters"].([]any)
			for _, p := range params {
				declared = declared || (obj(p)["name"] == name && obj(p)["in"] == "query")
			}
			if !declared {
				t.Errorf("%s: query parameter %q is not declared", key, name)
			}
		}
		if rb := obj(op["requestBody"]); rb != nil {
			var v any
			if err := json.Unmarshal(x.Req, &v); err != nil {
				t.Errorf("%s: request body %q is not JSON", key, x.Req)
			} else {
				for _, p := range d.check(key+" request", jsonSchema(d, rb["content"]), v) {
					t.Error(p)
				}
			}
		} else if len(x.Req) > 0 {
			t.Errorf("%s: a body was sent to an operation that takes none: %s", key, x.Req)
		}
		resps := obj(op["responses"])
		r, ok := resps[fmt.Sprint(x.Status)]
		if !ok {
			r = resps["default"]
		}
		var v any
		if err := json.Unmarshal(x.Resp, &v); err != nil {
			t.Errorf("%s: %d answer %q is not JSON", key, x.Status, x.Resp)
			continue
		}
		for _, p := range d.check(fmt.Sprintf("%s %d", key, x.Status), jsonSchema(d, d.deref(obj(r))["content"]), v) {
			t.Error(p)
		}
	}
	for _, k := range docOps {
		if !called[k] {
			t.Errorf("the driver never called %s", k)
		}
	}
	statuses := map[int]bool{}
	for _, x := range lab.rec.exchanges() {
		statuses[x.Status] = true
	}
	if !statuses[400] || !statuses[409] {
		t.Errorf("error answers were not exercised: %v", statuses)
	}
}
