// Package redact removes secrets from text and data before they are
// written anywhere a person or a bundle keeps them: the password of a URL
// (http://admin:pw@host), the value of a secret-looking option (api_token),
// and known secret values. It imports only the standard library, so that
// every layer (transport's transcripts, results' bundles, inventory) may
// use it.
package redact

import (
	"encoding/json"
	"html"
	"strings"
)

// Mask replaces what is removed.
const Mask = "***"

// MinScrubLen is the shortest secret value hunted through free text.
// Shorter values found under a secret-looking key are masked where they
// stand, but not replaced everywhere: replacing "42" or "yes" in every
// transcript and table would destroy the data and hide little.
const MinScrubLen = 6

// URLPasswords masks the password of every URL in s that carries one in
// its userinfo (RFC 3986 §3.2.1, which deprecates it): "http://admin:pw@h"
// becomes "http://admin:***@h". The user name stays, a URL without a
// password is unchanged. A URL's authority ends at "/", "?", "#", white
// space, a quote or "`", so that URLs inside JSON strings, HTML ("&#34;")
// and log lines are found; its userinfo ends at the last "@" of the
// authority, as url.Parse reads it, so a raw "@" in a password is masked
// too. Where text follows a URL without a space ("<br>"), more than the
// password may be masked, never less.
func URLPasswords(s string) string { return maskURLs(s, nil) }

// maskURLs is URLPasswords; with found not nil, it also appends each
// password it masked.
func maskURLs(s string, found *[]string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			break
		}
		// The scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
		j := i
		for j > 0 && isSchemeChar(rest[j-1]) {
			j--
		}
		for j < i && !isAlpha(rest[j]) {
			j++
		}
		start := i + 3
		if j == i {
			b.WriteString(rest[:start])
			rest = rest[start:]
			continue
		}
		end := start
		for end < len(rest) && !strings.ContainsRune("/?#\"'` \t\r\n", rune(rest[end])) {
			end++
		}
		auth := rest[start:end]
		at := strings.LastIndexByte(auth, '@')
		colon := -1
		if at >= 0 {
			colon = strings.IndexByte(auth[:at], ':')
		}
		pw := ""
		if colon >= 0 {
			pw = auth[colon+1 : at]
		}
		if pw == "" || pw == Mask {
			b.WriteString(rest[:end])
		} else {
			if found != nil && len(pw) >= MinScrubLen {
				*found = append(*found, pw)
			}
			b.WriteString(rest[:start+colon+1])
			b.WriteString(Mask)
			b.WriteString(rest[start+at : end])
		}
		rest = rest[end:]
	}
	b.WriteString(rest)
	return b.String()
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isSchemeChar(c byte) bool {
	return isAlpha(c) || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

// SecretKey reports whether a key (an option name) looks like it holds a
// secret: it contains token, password, passwd, passphrase, secret, key,
// credential, bearer, authorization, cookie, session, passcode, private or
// community, or has auth, pin, otp, pw, pwd or pass as a whole part, in
// any case ("auth" is left out: auth_method: password
// would have every "password" of a transcript masked). A reference to a
// secret is not one: a key ending in _env or _file (password_env,
// api_token_file, key_file)
// names where the secret is, and an inventory's "credentials" block holds
// only such references (inventory.Credentials). A bare "key" or "keys" is
// a lookup key (a sysctl's name, a P4 table entry's match fields), not a
// key to anything: api_key, ssh_key, private_key are secret.
func SecretKey(k string) bool {
	l := strings.ToLower(k)
	if l == "credentials" || l == "key" || l == "keys" || strings.HasSuffix(l, "_env") || strings.HasSuffix(l, "_file") {
		return false
	}
	for _, w := range [...]string{"token", "password", "passwd", "passphrase", "secret", "key", "credential",
		"bearer", "authorization", "cookie", "session", "passcode", "private", "community"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	// Short words only as a whole part of the name (snmp_pin, otp,
	// x-auth), so that author, spinning or hotplug are not taken.
	for _, part := range strings.FieldsFunc(l, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		switch part {
		case "auth", "pin", "otp", "pw", "pwd", "pass":
			return true
		}
	}
	return false
}

// Value returns a copy of v, data as JSON or YAML decode it (maps, slices,
// strings, numbers), in which the value under every secret-looking key is
// Mask and every string has its URL passwords masked. It also returns the
// secret values it removed (strings of at least MinScrubLen bytes, the
// passwords of URLs included), for Text to hunt in free text. v itself is
// not changed.
func Value(v any) (any, []string) {
	var found []string
	out := value(v, &found)
	return out, found
}

func value(v any, found *[]string) any {
	switch x := v.(type) {
	case string:
		if SecretShape(x) {
			collect(x, found)
			// A URL's password inside is found on its own too: a
			// transcript may carry it without the rest of the value.
			maskURLs(x, found)
			return Mask
		}
		return maskURLs(x, found)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if SecretKey(k) {
				collect(e, found)
				out[k] = Mask
			} else {
				out[k] = value(e, found)
			}
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, e := range x {
			if SecretKey(k) {
				collect(e, found)
				out[k] = Mask
			} else {
				out[k] = value(e, found).(string)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = value(e, found)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = value(e, found).(string)
		}
		return out
	}
	return v
}

// collect gathers the strings under a secret key.
func collect(v any, found *[]string) {
	switch x := v.(type) {
	case string:
		if len(x) >= MinScrubLen {
			*found = append(*found, x)
		}
	case map[string]any:
		for _, e := range x {
			collect(e, found)
		}
	case map[string]string:
		for _, e := range x {
			collect(e, found)
		}
	case []any:
		for _, e := range x {
			collect(e, found)
		}
	case []string:
		for _, e := range x {
			collect(e, found)
		}
	}
}

// Forms returns s as it may appear in the files a bundle holds: itself,
// inside a JSON string and in HTML, each once.
func Forms(s string) []string {
	out := []string{s}
	if b, err := json.Marshal(s); err == nil {
		if j := string(b[1 : len(b)-1]); j != s {
			out = append(out, j)
		}
	}
	if h := html.EscapeString(s); h != s && h != out[len(out)-1] {
		out = append(out, h)
	}
	return out
}

// Text replaces every occurrence of each secret in s with Mask, then
// masks URL passwords and the credentials of "Bearer ..." and the like. Empty secrets are ignored.
func Text(s string, secrets []string) string {
	for _, sec := range secrets {
		if sec != "" && strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, Mask)
		}
	}
	return AuthHeaders(URLPasswords(s))
}
