package hostagent

import (
	"crypto/subtle"
	"mime"
	"net/http"
	"strings"
)

// Error kinds of the request guard (guard.go).
const (
	KindUnauthorized         = "unauthorized"
	KindForbidden            = "forbidden"
	KindUnsupportedMediaType = "unsupported_media_type"
)

// TokenFunc returns the token every request must carry as
// "Authorization: Bearer <token>". It is asked on every request, so the
// token may change while the agent runs (a new run hands its own token to
// an agent it finds running). An error or an empty token refuses every
// request.
type TokenFunc func() (string, error)

// guard wraps the API's handler with the checks every request passes
// before it reaches a route: a cross-origin request (an Origin header
// naming another origin than the agent's own) is refused with 403, a
// request without the run's token with 401, and a body that is not
// application/json with 415. A nil token skips the token check (tests of
// the API alone); the command always sets one.
func (a *Agent) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
			writeError(w, &APIError{Status: http.StatusForbidden, Kind: KindForbidden,
				Message: "cross-origin request from " + quoteShort(o) + " refused"})
			return
		}
		if a.opts.Token != nil {
			if msg := checkToken(a.opts.Token, r.Header.Get("Authorization")); msg != "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="hostagent"`)
				writeError(w, &APIError{Status: http.StatusUnauthorized, Kind: KindUnauthorized, Message: msg})
				return
			}
		}
		if hasBody(r) {
			ct := r.Header.Get("Content-Type")
			mt, _, err := mime.ParseMediaType(ct)
			if err != nil || mt != "application/json" {
				writeError(w, &APIError{Status: http.StatusUnsupportedMediaType, Kind: KindUnsupportedMediaType,
					Message: "request body of type " + quoteShort(ct) + ": want application/json"})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// checkToken says what is wrong with an Authorization header ("" if
// nothing is). The comparison takes the same time wherever the tokens
// differ.
func checkToken(token TokenFunc, header string) string {
	want, err := token()
	if err != nil || want == "" {
		return "the agent has no token to check requests against"
	}
	scheme, got, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "missing bearer token (Authorization: Bearer <token>)"
	}
	if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(want)) != 1 {
		return "wrong token"
	}
	return ""
}

// hasBody says whether a request carries a body (a known non-zero length,
// or a chunked one of unknown length).
func hasBody(r *http.Request) bool {
	return r.ContentLength > 0 || (r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody)
}

func quoteShort(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

// BearerTransport adds "Authorization: Bearer <Token>" to every request it
// sends through Base (http.DefaultTransport when nil).
type BearerTransport struct {
	Token string
	Base  http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *BearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.Token)
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

// CloseIdleConnections closes Base's idle connections (http.Client's
// CloseIdleConnections reaches them through this).
func (t *BearerTransport) CloseIdleConnections() {
	if c, ok := t.Base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
