package redact

import (
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// authSchemeRe is what AuthHeaders and SecretShape find without it: an
// HTTP Authorization value (RFC 9110 §11.6.2) in free text, the scheme
// and its credentials. The tests below hold the scanner equal to it.
var authSchemeRe = regexp.MustCompile(`(?i)\b(bearer|basic|token)([ \t]+)([A-Za-z0-9._~+/=-]{8,})`)

func authHeadersByRegexp(s string) string { return authSchemeRe.ReplaceAllString(s, "${1}${2}"+Mask) }

func wholeAuthByRegexp(s string) bool {
	m := authSchemeRe.FindStringSubmatchIndex(s)
	return m != nil && m[0] == 0 && m[1] == len(s)
}

var authCases = []string{
	"", "b", "Bearer", "Bearer ", "Bearer abcdefg", "Bearer abcdefgh", "bearer\t\t0123456789 tail",
	"GET / Authorization: Bearer abcdefgh12345678\n", "Authorization: Basic YWRtaW46aHVudGVyMg==\r\n",
	"xBearer abcdefgh12345678", "_token abcdefgh12345678", "9basic abcdefgh12345678", "-token abcdefgh12345678",
	"token  abc/def+ghi=~.-_ and token   zz", "TOKEN abcdefgh!rest", "tOkEn\tabcdefgh\ttoken\tijklmnop",
	"bearer bearer abcdefgh", "bearer abcdefghbearer 12345678", "bearer abcdefgh bearer 12345678",
	"to\u212Aen abcdefgh12345678", "ba\u017Fic abcdefgh12345678", "BA\u017FIC\tabcdefgh", "é token abcdefgh12345678",
	"\xfftoken abcdefgh12345678", "tok\xffen abcdefgh", "token \xffabcdefgh", "the bearer of news", "bearer: abcdefgh12345678",
	`{"message":"token abcdefgh12345678","basic":"x"}`, "bas", "toke", "bearertoken abcdefgh", "ttoken abcdefgh",
	"Token 12345678", "token 1234567", "token \t \t12345678", "BA\u017FiC 0000000\u017F", "token \u212A\u212A\u212A\u212Aabc", "token é12345678",
}

func TestAuthHeadersAsTheExpression(t *testing.T) {
	for _, s := range authCases {
		if got, want := AuthHeaders(s), authHeadersByRegexp(s); got != want {
			t.Errorf("AuthHeaders(%q) = %q, the expression gives %q", s, got, want)
		}
		_, end, ok := authAt(s, 0)
		if got, want := s != "" && ok && end == len(s), wholeAuthByRegexp(s); got != want {
			t.Errorf("%q: a whole Authorization value %v, the expression says %v", s, got, want)
		}
	}
}

// TestSchemesStartWithoutFolds: nextAuth tries only positions holding b,
// B, t or T, so no other rune may fold to a scheme's first letter.
func TestSchemesStartWithoutFolds(t *testing.T) {
	for _, w := range authSchemes {
		c := rune(w[0])
		for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
			if f != unicode.ToUpper(c) {
				t.Errorf("%q folds to %q: nextAuth must look for it too", c, f)
			}
		}
	}
}

// FuzzAuthHeaders: the scanner masks what the expression masks, and
// takes a whole value for a credential when the expression does.
func FuzzAuthHeaders(f *testing.F) {
	for _, s := range authCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := AuthHeaders(s), authHeadersByRegexp(s); got != want {
			t.Fatalf("AuthHeaders(%q) = %q, the expression gives %q", s, got, want)
		}
		_, end, ok := authAt(s, 0)
		if got, want := s != "" && ok && end == len(s), wholeAuthByRegexp(s); got != want {
			t.Fatalf("%q: a whole Authorization value %v, the expression says %v", s, got, want)
		}
	})
}

// benchText is a manifest-like text: what Text scrubs after each step.
func benchText() string {
	var b strings.Builder
	for i := 0; i < 200; i++ {
		b.WriteString(`    {"name": "sw1", "kind": "switch", "driver": "tofino-ssh", "address": "ssh://admin@127.0.0.1:40123",` +
			` "options": {"bfrt_token_file": "/etc/bf/token", "table": "ti_basic_fwd", "note": "the bearer of news"}},` + "\n")
	}
	return b.String()
}

func BenchmarkAuthHeaders(b *testing.B) {
	s := benchText()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		AuthHeaders(s)
	}
}

func BenchmarkAuthHeadersByRegexp(b *testing.B) {
	s := benchText()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		authHeadersByRegexp(s)
	}
}
