package inventory

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// An inventory never holds a secret: secrets are referred to under
// credentials (password_env, password_file, key_file, ssh_agent), so that
// the inventory can be copied into every result bundle as it is. The
// checks below are the first line of defence against a secret written
// elsewhere: in an address's userinfo, or as an option.

// secretWords are the parts of a field name that say its value is a
// secret (case-insensitive).
var secretWords = []string{"password", "passwd", "passphrase", "secret", "token", "key"}

// publicWords mark names of public material that contain a secret word:
// a host key, a public key.
var publicWords = []string{"known_hosts", "public", "pubkey", "hostkey", "host_key"}

// secretWord returns the secret word a field name contains, "" if none.
func secretWord(name string) string {
	n := strings.ToLower(name)
	for _, w := range publicWords {
		if strings.Contains(n, w) {
			return ""
		}
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return w
		}
	}
	// Short words only as a whole part of the name (admin_pw, pass), so
	// that bypass or compass are not taken for secrets.
	for _, part := range strings.FieldsFunc(n, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		switch part {
		case "pw", "pwd", "pass", "apikey":
			return part
		}
	}
	return ""
}

var envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// referenceForms is what an error about a secret says to write instead.
const referenceForms = "refer to it under credentials: password_env: VAR (an environment variable's name), password_file: PATH, key_file: PATH (a private key file) or ssh_agent: true"

// optionSecretProblem says what is wrong with an option whose name looks
// secret, "" when it is a reference rather than a secret: a name ending
// in _env whose value is an environment variable's name, or one ending
// in _file, _path or _dir whose value is a file path.
func optionSecretProblem(key, value string) string {
	w := secretWord(key)
	if w == "" {
		return ""
	}
	k := strings.ToLower(key)
	switch {
	case strings.HasSuffix(k, "_env"):
		if envNameRe.MatchString(value) {
			return ""
		}
		return fmt.Sprintf("option %q names an environment variable, but its value is not a variable name (expected letters, digits and _): an inventory holds no secrets; %s", key, referenceForms)
	case strings.HasSuffix(k, "_file"), strings.HasSuffix(k, "_path"), strings.HasSuffix(k, "_dir"):
		if looksLikePath(value) {
			return ""
		}
		return fmt.Sprintf("option %q names a file, but its value is not a path (expected /abs/path, ~/path, ./relative or dir/file): an inventory holds no secrets; %s", key, referenceForms)
	}
	return fmt.Sprintf("option %q looks like a secret (its name contains %q): an inventory holds no secrets; %s; an option naming a reference ends in _env (a variable's name) or _file (a path)", key, w, referenceForms)
}

// looksLikePath reports whether v is written as a file path rather than
// a bare word (which could be the secret itself).
func looksLikePath(v string) bool {
	if v == "" || strings.ContainsAny(v, " \t\r\n") {
		return false
	}
	return strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") || strings.HasPrefix(v, ".") || strings.Contains(v, "/") || strings.Contains(v, `\`)
}

// userinfoRe finds the userinfo of scheme://userinfo@host in an address
// net/url cannot parse.
var userinfoRe = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#@]*)@`)

// RedactAddress returns an address fit for messages and files: a
// password in its userinfo replaced by "xxxxx" (and, in an address that
// does not parse, everything between :// and @).
func RedactAddress(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if m := userinfoRe.FindStringSubmatch(raw); m != nil && strings.Contains(m[2], ":") {
			return m[1] + "xxxxx@" + raw[len(m[0]):]
		}
		return raw
	}
	if _, ok := u.User.Password(); ok {
		return u.Redacted()
	}
	return raw
}

// addressSecretProblem says what is wrong with an address that carries a
// secret in its userinfo, "" when it carries none: a password in any
// scheme, or any userinfo in an http(s) address (an HTTP client sends it
// as a credential).
func addressSecretProblem(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if m := userinfoRe.FindStringSubmatch(raw); m != nil && strings.Contains(m[2], ":") {
			return fmt.Sprintf("%q carries a password in its userinfo (user:password@): an inventory holds no secrets; write the address without it and %s", RedactAddress(raw), referenceForms)
		}
		return ""
	}
	if u.User == nil {
		return ""
	}
	pw, hasPw := u.User.Password()
	plain := *u
	switch {
	case hasPw && pw != "":
		plain.User = url.User(u.User.Username())
		if u.Scheme == "http" || u.Scheme == "https" {
			plain.User = nil
		}
		return fmt.Sprintf("%q carries a password in its userinfo (user:password@): an inventory holds no secrets; write %s and %s", u.Redacted(), plain.String(), referenceForms)
	case u.Scheme == "http" || u.Scheme == "https":
		plain.User = nil
		return fmt.Sprintf("%s://xxxxx@%s carries userinfo, which an HTTP client sends as a credential: an inventory holds no secrets; write %s and %s", u.Scheme, u.Host, plain.String(), referenceForms)
	}
	return ""
}
