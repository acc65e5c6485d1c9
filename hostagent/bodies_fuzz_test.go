package hostagent

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// bodyKind is one request body the agent decodes and checks, as its
// handler does (decode, then the type's Normalize or Check).
type bodyKind struct {
	name  string
	new   func() any
	check func(v any) (any, error) // the normalized request, or why not
}

var bodyKinds = []bodyKind{
	{"fct run", func() any { return &FCTRunRequest{} }, func(v any) (any, error) { return v.(*FCTRunRequest).Normalize() }},
	{"write_lat", func() any { return &WriteLatRequest{} }, func(v any) (any, error) { return v.(*WriteLatRequest).Normalize() }},
	{"reactor classes", func() any { return &ReactorSetup{} }, func(v any) (any, error) { return *v.(*ReactorSetup), v.(*ReactorSetup).Check() }},
	{"reactor schedule", func() any { return &ReactorSchedule{} }, func(v any) (any, error) { return *v.(*ReactorSchedule), v.(*ReactorSchedule).Check() }},
	{"reactor pause", func() any { return &ReactorPause{} }, func(v any) (any, error) { return *v.(*ReactorPause), v.(*ReactorPause).check() }},
	{"reactor rates", func() any { return &ReactorRates{} }, func(v any) (any, error) { return *v.(*ReactorRates), v.(*ReactorRates).check() }},
	{"reactor flows", func() any { return &ReactorFlowsRequest{} }, func(v any) (any, error) {
		for _, f := range v.(*ReactorFlowsRequest).Flows {
			if err := f.Check(); err != nil {
				return nil, err
			}
		}
		return *v.(*ReactorFlowsRequest), nil
	}},
	{"reactor heartbeat", func() any { return &ReactorHeartbeat{} }, func(v any) (any, error) { return *v.(*ReactorHeartbeat), nil }},
	{"reactor sink", func() any { return &ReactorSinkRequest{} }, func(v any) (any, error) { return *v.(*ReactorSinkRequest), nil }},
	{"fct server", func() any { return &FCTServerRequest{} }, func(v any) (any, error) { return *v.(*FCTServerRequest), nil }},
}

// The agent's request bodies, as its handlers read them: a body is either
// refused with a 400 whose JSON error says it is a bad request, or
// decodes; a decoded FCT or write_lat request normalizes to one that
// normalizes to itself (the defaults and limits are applied once), within
// its limits. Nothing panics, whatever the bytes.
func FuzzAgentBodies(f *testing.F) {
	for _, s := range []string{
		`{}`, ``, `null`, `[]`, `{"target":"10.0.0.2:5001"}`,
		`{"target":"10.0.0.2:5001","trials":1000,"mode":"open","rate_per_sec":1e5,"connections":4}`,
		`{"target":"10.0.0.2:5001","connection":"per-flow","trials":10,"warmup":2,"trial_timeout_ms":5}`,
		`{"target":"10.0.0.2:5001","trials":1e300}`, `{"target":"[::1]:1","request_size":-1}`,
		`{"device":"mlx5_0","size":64,"iters":1000}`,
		`{"period":3,"start_ns":1000,"period_ns":1500000,"night_ns":30000,"slots":[{"duration_ns":200000,"dst":"h2"}]}`,
		`{"flows":[{"dst":"h2","kind":"bulk","target":"10.0.0.2:7","start_ns":1,"stop_ns":2}]}`,
		`{"rates_bps":{"h2":1e9,"eps":-1}}`, `{"listen":"10.0.0.2:0"}`, `{"a":1}{"b":2}`, `{"target":"x"} trailing`,
		`{"period":-1,"start_ns":-5}`, "{\"target\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, k := range bodyKinds {
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
			v := k.new()
			if !decode(w, r, v) {
				var e struct {
					Error struct {
						Kind    string `json:"kind"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if w.Code != http.StatusBadRequest || json.Unmarshal(w.Body.Bytes(), &e) != nil {
					t.Fatalf("%s: refused with %d %q: want a 400 with a JSON error", k.name, w.Code, w.Body.String())
				}
				if !strings.Contains(w.Body.String(), KindBadRequest) {
					t.Fatalf("%s: refusal %q does not say %s", k.name, w.Body.String(), KindBadRequest)
				}
				continue
			}
			n, err := k.check(v)
			if err != nil {
				continue
			}
			switch x := n.(type) {
			case FCTRunRequest:
				if x.Trials < 1 || x.Trials > maxTrials || x.TrialTimeoutMS < 1 || x.Connections < 1 {
					t.Fatalf("fct run normalized out of its limits: %+v", x)
				}
				again, err := x.Normalize()
				if err != nil || !reflect.DeepEqual(again, x) {
					t.Fatalf("fct run: normalizing %+v again gives %+v, %v", x, again, err)
				}
			case WriteLatRequest:
				again, err := x.Normalize()
				if err != nil || !reflect.DeepEqual(again, x) {
					t.Fatalf("write_lat: normalizing %+v again gives %+v, %v", x, again, err)
				}
			}
		}
	})
}
