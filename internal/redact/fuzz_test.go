package redact

import (
	"strings"
	"testing"
)

// FuzzURLPasswords: masking never panics, is stable (masking twice is
// masking once), and a URL built with a password never keeps it.
func FuzzURLPasswords(f *testing.F) {
	f.Add("http://", "admin", "pw", "10.0.0.1:80/x", "text ")
	f.Add("ssh+tls://", "", "p@ss:w", "h", `{"a":"`)
	f.Add("h://", "u", "***", "", "&#34;")
	f.Fuzz(func(t *testing.T, scheme, user, pw, host, prefix string) {
		s := prefix + scheme + user + ":" + pw + "@" + host
		once := URLPasswords(s)
		if twice := URLPasswords(once); twice != once {
			t.Fatalf("not stable: %q -> %q -> %q", s, once, twice)
		}
		// A well-formed URL: a scheme after a non-scheme character, a
		// user and a password free of terminators, the password at least
		// as long as what Text hunts, a host without "@" or terminators,
		// no other URL around.
		clean := func(x string) bool { return !strings.ContainsAny(x, "/?#\"'` \t\r\n") }
		if !strings.HasSuffix(scheme, "://") || len(scheme) < 4 || !isAlpha(scheme[0]) || strings.Contains(scheme[:len(scheme)-3], ":") ||
			!clean(scheme[:len(scheme)-3]) || !clean(user) || !clean(pw) || strings.ContainsAny(user, "@:") ||
			len(pw) < MinScrubLen || strings.Contains(pw, Mask) || strings.Contains(host, "@") || !clean(host) || strings.Contains(prefix+host, "://") {
			return
		}
		for i := 0; i < len(scheme)-3; i++ {
			if !isSchemeChar(scheme[i]) {
				return
			}
		}
		if len(prefix) > 0 && isSchemeChar(prefix[len(prefix)-1]) {
			return
		}
		if want := prefix + scheme + user + ":" + Mask + "@" + host; once != want {
			t.Fatalf("%q: got %q, want %q", s, once, want)
		}
		_, found := Value(s)
		if len(found) == 0 || found[len(found)-1] != pw {
			t.Fatalf("%q: found %q, want the password %q", s, found, pw)
		}
	})
}
