package redact

import (
	"math"
	"regexp"
	"strings"
)

// A secret is known by its shape too, whatever the key it sits under
// (session, cookie, otp, community, a name nobody listed): an HTTP
// credential ("Bearer ...", "Basic ..."), a JSON Web Token, or a long
// random-looking token (mixed-case letters and digits, high entropy).
// Hex strings (checksums, MAC addresses, run ids) are data, not secrets:
// they are never taken by shape.

// authSchemeRe finds an HTTP Authorization value (RFC 9110 §11.6.2) in
// free text: the scheme and its credentials.
var authSchemeRe = regexp.MustCompile(`(?i)\b(bearer|basic|token)([ \t]+)([A-Za-z0-9._~+/=-]{8,})`)

// jwtRe is a JSON Web Token's compact form (RFC 7519: base64url header
// beginning {" encoded, a payload and a signature).
var jwtRe = regexp.MustCompile(`^eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*$`)

// minTokenLen and minTokenEntropy bound a random-looking token: 20
// characters of at least 4 bits of Shannon entropy each (a base64 token
// of random bytes has close to 6; English words and identifiers below 4).
const (
	minTokenLen     = 20
	minTokenEntropy = 4.0
)

// SecretShape reports whether a value looks like a secret by its shape.
func SecretShape(v string) bool {
	s := strings.TrimSpace(v)
	if m := authSchemeRe.FindStringSubmatchIndex(s); m != nil && m[0] == 0 && m[1] == len(s) {
		return true
	}
	if jwtRe.MatchString(s) {
		return true
	}
	return randomToken(s)
}

// randomToken: one word (no white space) with a segment between
// separators (- _ . : /) of minTokenLen or more characters holding upper
// and lower case letters and digits, of high entropy.
func randomToken(s string) bool {
	if len(s) < minTokenLen || strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	for _, seg := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune("-_.:/@", r) }) {
		if len(seg) < minTokenLen {
			continue
		}
		var upper, lower, digit bool
		for _, c := range seg {
			switch {
			case c >= 'A' && c <= 'Z':
				upper = true
			case c >= 'a' && c <= 'z':
				lower = true
			case c >= '0' && c <= '9':
				digit = true
			}
		}
		if upper && lower && digit && entropy(seg) >= minTokenEntropy {
			return true
		}
	}
	return false
}

// entropy is the Shannon entropy of s's bytes, bits per byte.
func entropy(s string) float64 {
	var n [256]int
	for i := 0; i < len(s); i++ {
		n[s[i]]++
	}
	h := 0.0
	for _, c := range n {
		if c > 0 {
			p := float64(c) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h
}

// AuthHeaders masks the credentials of every "Bearer ..." (or Basic,
// Token) in free text: "Authorization: Bearer ***".
func AuthHeaders(s string) string {
	if !strings.ContainsAny(s, "bBtT") {
		return s
	}
	return authSchemeRe.ReplaceAllString(s, "${1}${2}"+Mask)
}
