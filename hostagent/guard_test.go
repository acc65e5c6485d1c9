package hostagent

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The guard refuses, before any route, requests without the run's token,
// cross-origin requests and bodies that are not JSON, each with the API's
// error shape.
func TestGuardRefuses(t *testing.T) {
	a := New(Options{Token: func() (string, error) { return "s3cret-run-token", nil }})
	t.Cleanup(func() { a.Close() })
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)

	cases := []struct {
		name, method, path, auth, origin, ctype, body string
		status                                        int
		kind                                          string
	}{
		{"no token", "GET", "/v1/version", "", "", "", "", 401, KindUnauthorized},
		{"wrong token", "GET", "/v1/version", "Bearer s3cret-run-tokeX", "", "", "", 401, KindUnauthorized},
		{"token prefix", "GET", "/v1/version", "Bearer s3cret", "", "", "", 401, KindUnauthorized},
		{"basic scheme", "GET", "/v1/version", "Basic s3cret-run-token", "", "", "", 401, KindUnauthorized},
		{"no token, unknown path", "GET", "/nothing", "", "", "", "", 401, KindUnauthorized},
		{"right token", "GET", "/v1/version", "Bearer s3cret-run-token", "", "", "", 200, ""},
		{"same origin", "GET", "/v1/version", "Bearer s3cret-run-token", srv.URL, "", "", 200, ""},
		{"cross origin", "GET", "/v1/version", "Bearer s3cret-run-token", "http://evil.example", "", "", 403, KindForbidden},
		{"cross origin, no token", "POST", "/v1/fct/server", "", "http://evil.example", "text/plain", `{"listen":"127.0.0.1:0"}`, 403, KindForbidden},
		{"text/plain body", "POST", "/v1/fct/server", "Bearer s3cret-run-token", "", "text/plain", `{"listen":"127.0.0.1:0"}`, 415, KindUnsupportedMediaType},
		{"form body", "PUT", "/v1/reactor/rates", "Bearer s3cret-run-token", "", "application/x-www-form-urlencoded", `a=b`, 415, KindUnsupportedMediaType},
		{"body without type", "POST", "/v1/fct/server", "Bearer s3cret-run-token", "", "", `{"listen":"127.0.0.1:0"}`, 415, KindUnsupportedMediaType},
		{"json body", "POST", "/v1/fct/server", "Bearer s3cret-run-token", "", "application/json; charset=utf-8", `{"listen":"127.0.0.1:0"}`, 201, ""},
		{"body too large", "POST", "/v1/fct/server", "Bearer s3cret-run-token", "", "application/json", `{"listen":"` + strings.Repeat("x", 2<<20) + `"}`, 400, KindBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body io.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			req, err := http.NewRequest(c.method, srv.URL+c.path, body)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range map[string]string{"Authorization": c.auth, "Origin": c.origin, "Content-Type": c.ctype} {
				if v != "" {
					req.Header.Set(k, v)
				}
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status {
				t.Fatalf("HTTP %d %s, want %d", resp.StatusCode, raw, c.status)
			}
			if c.kind == "" {
				return
			}
			var eb errorBody
			if err := json.Unmarshal(raw, &eb); err != nil || eb.Error.Kind != c.kind || eb.Error.Message == "" {
				t.Errorf("body %s (%v), want an error of kind %s", raw, err, c.kind)
			}
			if strings.Contains(string(raw), "s3cret-run-token") {
				t.Errorf("the answer repeats the token: %s", raw)
			}
			if c.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

// An agent whose token cannot be had serves nobody.
func TestGuardWithoutToken(t *testing.T) {
	a := New(Options{Token: func() (string, error) { return "", nil }})
	t.Cleanup(func() { a.Close() })
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	for _, auth := range []string{"", "Bearer ", "Bearer x"} {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/version", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("%q: HTTP %d, want 401", auth, resp.StatusCode)
		}
	}
}
