package trafficgen_test

import (
	"context"
	"math"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"testbed/instruments/trafficgen"
)

// FuzzOTGMetricsReply: whatever JSON (or not) an OTG server answers to
// the metrics request, the driver, over HTTP on loopback, returns either
// an error or metrics whose counters are whole numbers of at least zero
// and whose rates and losses are finite: a reply the driver cannot make
// sense of is an error, never a number.
func FuzzOTGMetricsReply(f *testing.F) {
	for _, s := range []string{
		`{"flow_metrics":[{"name":"f1","transmit":"stopped","frames_tx":"1000","frames_rx":998,"bytes_tx":"1500000","bytes_rx":"1497000","frames_tx_rate":0,"loss":0.2}]}`,
		`{"port_metrics":[{"name":"p1","frames_tx":"10","frames_rx":"10","bytes_tx":"640","bytes_rx":"640"}]}`,
		`{}`, `null`, `[]`, ``, `{"flow_metrics":null}`, `{"flow_metrics":[{"frames_tx":"-1"}]}`,
		`{"flow_metrics":[{"loss":"NaN"}]}`, `{"flow_metrics":[{"frames_rx":1e300}]}`, `{"port_metrics":[{"bytes_tx":"9223372036854775808"}]}`,
		`{"flow_metrics":[{"frames_tx":12.5}]}`, `{"flow_metrics":[{"frames_tx_rate":"Infinity"}]}`, `<html>502 Bad Gateway</html>`,
	} {
		f.Add([]byte(s))
	}
	var reply atomic.Pointer[[]byte]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/capabilities/version" {
			w.Write([]byte(`{"api_spec_version":"1.0.0","sdk_version":"1.0.0","app_version":"fuzz 1"}`))
			return
		}
		w.Write(*reply.Load())
	})}
	go srv.Serve(ln)
	f.Cleanup(func() { srv.Close() })
	ctx := context.Background()
	g, err := trafficgen.OpenOTG(ctx, "http://"+ln.Addr().String(), trafficgen.Options{Timeout: 5 * time.Second})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { g.Close() })
	f.Fuzz(func(t *testing.T, body []byte) {
		reply.Store(&body)
		fm, ferr := g.FlowMetrics(ctx)
		pm, perr := g.PortMetrics(ctx)
		finite := func(what string, v float64) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%s %v from %q: want an error, not a number that is none", what, v, body)
			}
		}
		counters := func(what string, vs ...int64) {
			for _, v := range vs {
				if v < 0 {
					t.Fatalf("%s counter %d from %q: want an error", what, v, body)
				}
			}
		}
		if ferr == nil {
			for _, m := range fm {
				counters("flow", m.FramesTx, m.FramesRx, m.BytesTx, m.BytesRx)
				finite("flow rate", m.FramesTxRate)
				finite("flow loss", m.Loss)
			}
		}
		if perr == nil {
			for _, m := range pm {
				counters("port", m.FramesTx, m.FramesRx, m.BytesTx, m.BytesRx)
			}
		}
	})
}
