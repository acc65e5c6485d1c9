package ocs_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"testbed/instruments/ocs"
	"testbed/transport"
)

// A reply body longer than the driver's bound is a garbled reply naming
// the switch and the bound, not a body read whole however long it is.
func TestMordiaBoundsAReply(t *testing.T) {
	const limit = 1 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"vendor":"UC San Diego","model":"` + strings.Repeat("x", 2*limit) + `"}`))
	}))
	defer srv.Close()
	// The Timeout only guards against a hang: the bound is in bytes. At
	// 5 s, a loaded machine (load 30) missed it reading the first MiB
	// under the race detector.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m, err := ocs.OpenMordia(ctx, srv.URL, ocs.Options{Name: "ocs9", Timeout: 30 * time.Second, MaxReply: limit})
	if err == nil {
		m.Close()
		t.Fatal("a 2 MiB identity read whole over a 1 MiB bound")
	}
	if !errors.Is(err, transport.ErrGarbled) || !strings.Contains(err.Error(), "ocs9") || !strings.Contains(err.Error(), "1048576") {
		t.Fatalf("over-long reply: %v, want a garbled reply naming ocs9 and the bound", err)
	}
}
