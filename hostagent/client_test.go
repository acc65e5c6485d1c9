package hostagent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// An answer longer than the client's bound is an error naming the agent
// and the bound, not a decode that holds whatever the far end sends; the
// bound itself holds the API's largest answer.
func TestClientBoundsAnAnswer(t *testing.T) {
	const limit = 1 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"agent":"hostagent","pad":"` + strings.Repeat("x", 2*limit) + `"}`))
	}))
	defer srv.Close()
	c := NewClient(nil, srv.URL)
	c.maxAnswer = limit
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := c.Version(ctx)
	if err == nil || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "1048576") {
		t.Fatalf("a 2 MiB answer over a 1 MiB bound: %v, want an error naming %s and the bound", err, srv.URL)
	}
	// Every sample of the longest unsorted job, at the widest a float64
	// prints, fits.
	widest := len("-1.7976931348623157e+308,")
	if need := int64(widest) * maxUnsortedIterations; need > maxAnswerBytes {
		t.Errorf("the longest ib_write_lat answer needs %d bytes, over the bound %d", need, maxAnswerBytes)
	}
}
