package redact

import (
	"math"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A secret is known by its shape too, whatever the key it sits under
// (session, cookie, otp, community, a name nobody listed): an HTTP
// credential ("Bearer ...", "Basic ..."), a JSON Web Token, or a long
// random-looking token (mixed-case letters and digits, high entropy).
// Hex strings (checksums, MAC addresses, run ids) are data, not secrets:
// they are never taken by shape.

// An HTTP Authorization value (RFC 9110 §11.6.2) in free text is a
// scheme (bearer, basic or token, in any case, at the start of a word)
// then spaces or tabs and at least 8 characters of a token68 (letters,
// each in any case, digits and ._~+/=-): what the
// regular expression (?i)\b(bearer|basic|token)([ \t]+)([A-Za-z0-9._~+/=-]{8,})
// matches, found by authAt and nextAuth below without it. Every bundle's
// file and transcript line goes through AuthHeaders: the expression's
// machine was a fifth of a simulated bench run's CPU (the manifest,
// rewritten after each step). auth_test.go holds the two equal.
var authSchemes = [...]string{"bearer", "basic", "token"}

// minCredLen is the shortest credential taken after a scheme.
const minCredLen = 8

// authAt matches an Authorization value starting at s[i] (a scheme's
// first letter, after a byte that is not an ASCII letter, digit or _):
// it returns where the scheme's spaces end (the credential's start) and
// where the credential ends, ok false if none starts there. As (?i) does,
// a letter of the scheme matches each of its Unicode simple case folds
// (the Kelvin sign for k, the long s for s).
func authAt(s string, i int) (cred, end int, ok bool) {
	if i > 0 && isWordByte(s[i-1]) {
		return 0, 0, false
	}
	j := -1
	for _, w := range authSchemes {
		if j = foldPrefix(s[i:], w); j >= 0 {
			break
		}
	}
	if j < 0 {
		return 0, 0, false
	}
	j += i
	cred = j
	for cred < len(s) && (s[cred] == ' ' || s[cred] == '\t') {
		cred++
	}
	if cred == j {
		return 0, 0, false
	}
	end = cred
	n := 0
	for end < len(s) {
		if c := s[end]; c < utf8.RuneSelf {
			if !isCredByte(c) {
				break
			}
			end++
		} else {
			r, size := utf8.DecodeRuneInString(s[end:])
			if !foldsToASCIILetter(r) {
				break
			}
			end += size
		}
		n++
	}
	if n < minCredLen {
		return 0, 0, false
	}
	return cred, end, true
}

// foldsToASCIILetter reports whether a rune beyond ASCII is a case fold
// of an ASCII letter (the Kelvin sign, the long s): (?i) takes it into a
// class of letters.
func foldsToASCIILetter(r rune) bool {
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < utf8.RuneSelf && isAlpha(byte(f)) {
			return true
		}
	}
	return false
}

// foldPrefix returns the length in s of a prefix equal to the lower-case
// ASCII word w under Unicode simple case folding, -1 if s has none.
func foldPrefix(s, w string) int {
	n := 0
	for k := 0; k < len(w); k++ {
		if n >= len(s) {
			return -1
		}
		if c := s[n]; c < utf8.RuneSelf {
			if c|0x20 != w[k] || !isAlpha(c) {
				return -1
			}
			n++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[n:])
		if !foldsTo(r, rune(w[k])) {
			return -1
		}
		n += size
	}
	return n
}

// foldsTo reports whether r is in the simple case-folding orbit of c.
func foldsTo(r, c rune) bool {
	for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
		if f == r {
			return true
		}
	}
	return r == c
}

// nextAuth returns the first Authorization value at or after s[i]: its
// start, its credential's start and end; start -1 if there is none.
func nextAuth(s string, i int) (start, cred, end int) {
	for ; i < len(s); i++ {
		switch s[i] {
		case 'b', 'B', 't', 'T':
			if c, e, ok := authAt(s, i); ok {
				return i, c, e
			}
		}
	}
	return -1, 0, 0
}

func isWordByte(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' || c == '_' }

func isCredByte(c byte) bool {
	return isAlpha(c) || c >= '0' && c <= '9' || strings.IndexByte("._~+/=-", c) >= 0
}

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
	if s != "" {
		if _, end, ok := authAt(s, 0); ok && end == len(s) {
			return true
		}
	}
	if strings.HasPrefix(s, "eyJ") && jwtRe.MatchString(s) {
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
	start, cred, end := nextAuth(s, 0)
	if start < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for start >= 0 {
		b.WriteString(s[last:cred])
		b.WriteString(Mask)
		last = end
		start, cred, end = nextAuth(s, end)
	}
	b.WriteString(s[last:])
	return b.String()
}
