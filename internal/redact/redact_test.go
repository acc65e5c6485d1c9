package redact

import (
	"fmt"
	"strings"
	"testing"
)

func TestURLPasswords(t *testing.T) {
	for in, want := range map[string]string{
		"http://admin:pw@10.0.0.1:8080/api":               "http://admin:***@10.0.0.1:8080/api",
		"connect https://u:p%40ss@host and ssh://root@h2": "connect https://u:***@host and ssh://root@h2",
		`{"address":"http://a:b@c"}`:                      `{"address":"http://a:***@c"}`,
		"<td>tcp+tls://x:raw@pw@host</td>":                "<td>tcp+tls://x:***@host</td>",
		"http://:only-pw@h":                               "http://:***@h",
		"http://host/a:b@c":                               "http://host/a:b@c",
		"no scheme ://a:b@c, 1://a:b@c":                   "no scheme ://a:b@c, 1://a:b@c",
		"http://admin:***@h":                              "http://admin:***@h",
		"&#34;http://a:pw@h&#34;":                         "&#34;http://a:***@h&#34;",
		"plain text":                                      "plain text",
		"http://a:p<w>@h":                                 "http://a:***@h",
		`"http://a:p\u003cw@h"`:                           `"http://a:***@h"`,
	} {
		if got := URLPasswords(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestSecretKey(t *testing.T) {
	for _, k := range []string{"api_token", "Password", "db_passwd", "client_secret", "api_key", "privateKey", "aws_credential", "TOKEN",
		// Names outside the first word list that leaked into bundles.
		"bearer", "auth", "x-auth", "Authorization", "cookie", "session_id", "passcode", "private", "snmp_community", "pin", "otp", "auth_method"} {
		if !SecretKey(k) {
			t.Errorf("%s: not a secret key", k)
		}
	}
	for _, k := range []string{"known_hosts", "serial", "api_token_env", "password_file", "key_file", "sde", "reactor_eps_gbps", "ip", "credentials", "key", "Keys", "author", "spinning", "hotplug", "pinned_cpu"} {
		if SecretKey(k) {
			t.Errorf("%s: a secret key", k)
		}
	}
}

func TestValue(t *testing.T) {
	in := map[string]any{
		"name": "lab",
		"devices": map[string]any{
			"ocs1": map[string]any{
				"address":     "http://admin:hunter22@127.0.0.1:9000",
				"options":     map[string]any{"api_token": "tok-123456", "pin": "7", "ttl": 30, "api_token_env": "OCS_TOKEN", "secret_map": map[string]any{"a": "nested-value"}},
				"credentials": map[string]any{"password_env": "OCS_PW", "key_file": "~/.ssh/id"},
			},
		},
		"list": []any{"https://u:listpass@h", 3.5},
		"strs": map[string]string{"password": "short", "url": "http://a:strmap-pw@h"},
	}
	out, found := Value(in)
	got := fmt.Sprint(out)
	for _, leak := range []string{"hunter22", "tok-123456", "nested-value", "listpass", "short", "strmap-pw"} {
		if strings.Contains(got, leak) {
			t.Errorf("%s left in %s", leak, got)
		}
	}
	for _, keep := range []string{"OCS_TOKEN", "OCS_PW", "~/.ssh/id", "http://admin:***@127.0.0.1:9000", "pin:***", "ttl:30"} {
		if !strings.Contains(got, keep) {
			t.Errorf("%s lost from %s", keep, got)
		}
	}
	want := map[string]bool{"hunter22": true, "tok-123456": true, "nested-value": true, "listpass": true, "strmap-pw": true}
	if len(found) != len(want) {
		t.Errorf("found %q", found)
	}
	for _, f := range found {
		if !want[f] {
			t.Errorf("found %q, not a secret (or too short to hunt)", f)
		}
	}
	if s := fmt.Sprint(in); !strings.Contains(s, "hunter22") || !strings.Contains(s, "tok-123456") {
		t.Errorf("Value changed its input: %s", s)
	}
}

func TestTextAndForms(t *testing.T) {
	sec := `p<a"&ss`
	forms := Forms(sec)
	if len(forms) != 3 {
		t.Fatalf("forms %q", forms)
	}
	s := "raw " + sec + ` json "p\u003ca\"\u0026ss" html p&lt;a&#34;&amp;ss at http://u:other-pw@h`
	got := Text(s, forms)
	for _, f := range append(forms, "other-pw") {
		if strings.Contains(got, f) {
			t.Errorf("%q left in %q", f, got)
		}
	}
}

func TestSecretShape(t *testing.T) {
	for _, v := range []string{
		"Bearer abcdefgh12345678", "bearer 0123456789", "Basic YWRtaW46aHVudGVyMg==",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
		"ghp_R4nd0mT0k3nW1thM1x3dC4s3AndD1g1ts", "xK9fQ2mZ7pL4vB8nR1tY6wE3", "AKIAIOSFODNN7EXAMPLEx9Kq2",
	} {
		if !SecretShape(v) {
			t.Errorf("%q: not taken for a secret", v)
		}
	}
	for _, v := range []string{
		"", "cubic", "ssh://admin@10.0.0.1:22", "/opt/bf-sde", "25GBASE-SR", "20261128T225352.817Z-reactor-hybrid-27999e",
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "00:11:22:33:44:55", "simulated Keysight N7764A",
		"AttenuationSweepRecipeVersion2", "Bearer", "the bearer of news",
	} {
		if SecretShape(v) {
			t.Errorf("%q: taken for a secret", v)
		}
	}
	in := map[string]any{"options": map[string]any{"x_header": "Bearer abcdefgh12345678", "note": "xK9fQ2mZ7pL4vB8nR1tY6wE3"}}
	out, found := Value(in)
	if got := fmt.Sprint(out); strings.Contains(got, "abcdefgh") || strings.Contains(got, "xK9f") || len(found) != 2 {
		t.Errorf("values by shape: %s, found %q", got, found)
	}
	if got := Text("GET / Authorization: Bearer abcdefgh12345678\n", nil); got != "GET / Authorization: Bearer ***\n" {
		t.Errorf("Text: %q", got)
	}
}
