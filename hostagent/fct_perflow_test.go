package hostagent

import (
	"context"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// A per-flow run opens a new connection for every trial (warm-up
// included) and closes it after; without a capture it says it timed the
// application's request and answer.
func TestRunFCTPerFlowNewConnectionEachTrial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := ServeFCT(ln, nil)
	t.Cleanup(func() { srv.Close() })
	var dials atomic.Int64
	d := &net.Dialer{}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	const trials, warmup = 30, 5
	res, err := RunFCT(context.Background(), FCTRunRequest{Target: ln.Addr().String(), Trials: trials, Warmup: warmup, Connection: ConnPerFlow}, dial, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := dials.Load(); got != trials+warmup {
		t.Fatalf("%d connections for %d trials and %d warm-up trials", got, trials, warmup)
	}
	// On Linux the kernel's transmit and ACK timestamps give fct1; the
	// loopback device stamps in software like a NIC's driver.
	want := TimingApp
	if runtime.GOOS == "linux" {
		want = TimingFCT1
	}
	if len(res.Samples) != trials || res.Summary.Timing != want {
		t.Fatalf("%d samples, timing %q, want %q", len(res.Samples), res.Summary.Timing, want)
	}
	t.Logf("per-flow on loopback, timing %s: p50 %v, max %v", res.Summary.Timing, time.Duration(res.Summary.P50NS), time.Duration(res.Summary.MaxNS))
	// The server counts a request once its answer is written, which may
	// be after the client has read it: wait for the count, by asking.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, req := srv.Stats()
		if req == trials+warmup {
			break
		}
		if req > trials+warmup || time.Now().After(deadline) {
			t.Fatalf("server answered %d requests", req)
		}
		time.Sleep(time.Millisecond)
	}
	for _, s := range res.Samples {
		if s.FCTNS <= 0 || s.FCTNS >= int64(time.Second) {
			t.Fatalf("sample %+v", s)
		}
	}
}

func TestFCTRunRequestConnection(t *testing.T) {
	for _, r := range []FCTRunRequest{
		{Target: "127.0.0.1:1", Connection: "sometimes"},
		{Target: "127.0.0.1:1", Connection: ConnPerFlow, Connections: 2},
		{Target: "127.0.0.1:1", Connection: ConnPerFlow, Mode: ModeOpen, RatePerSec: 10},
	} {
		if _, err := r.Normalize(); err == nil {
			t.Errorf("%+v: accepted", r)
		}
	}
	r, err := FCTRunRequest{Target: "127.0.0.1:1"}.Normalize()
	if err != nil || r.Connection != ConnPersistent {
		t.Fatalf("default connection %q, %v", r.Connection, err)
	}
}
