package trafficgen_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"testbed/instruments/trafficgen"
	"testbed/transport"
)

// A reply body longer than the driver's bound is a garbled reply naming
// the generator and the bound, not a body read whole however long it is.
func TestOTGBoundsAReply(t *testing.T) {
	const limit = 1 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/capabilities/version" {
			w.Write([]byte(`{"api_spec_version":"1.0.0","sdk_version":"1.0.0","app_version":"bound 1"}`))
			return
		}
		w.Write([]byte(`{"flow_metrics":[{"name":"` + strings.Repeat("f", 2*limit) + `","frames_tx":"1"}]}`))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g, err := trafficgen.OpenOTG(ctx, srv.URL, trafficgen.Options{Timeout: 5 * time.Second, MaxReply: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	_, err = g.FlowMetrics(ctx)
	if !errors.Is(err, transport.ErrGarbled) || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "1048576") {
		t.Fatalf("over-long reply: %v, want a garbled reply naming %s and the bound", err, srv.URL)
	}
}
