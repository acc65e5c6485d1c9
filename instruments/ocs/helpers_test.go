package ocs_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"testbed/instruments/ocs"
	"testbed/internal/sched"
	simocs "testbed/simlab/ocs"
	"testbed/simlab/wire"
	"testbed/simlab/world"
	"testbed/transport"
)

const us = time.Microsecond

// syncBuf is a transcript sink the test can read.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// exchange is one HTTP request the emulator saw, and its answer.
type exchange struct {
	Method, Path, Query string
	Status              int
	Req, Resp           []byte
}

// recorder sits in front of the emulator's handler and keeps every exchange.
type recorder struct {
	h  http.Handler
	mu sync.Mutex
	xs []exchange
}

type teeWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (t *teeWriter) WriteHeader(code int) { t.status = code; t.ResponseWriter.WriteHeader(code) }
func (t *teeWriter) Write(b []byte) (int, error) {
	if t.status == 0 {
		t.status = http.StatusOK
	}
	t.body.Write(b)
	return t.ResponseWriter.Write(b)
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	tw := &teeWriter{ResponseWriter: w}
	defer func() {
		r.mu.Lock()
		r.xs = append(r.xs, exchange{Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery, Status: tw.status, Req: body, Resp: tw.body.Bytes()})
		r.mu.Unlock()
	}()
	r.h.ServeHTTP(tw, req)
}

func (r *recorder) exchanges() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]exchange(nil), r.xs...)
}

// mordiaLab is a simulated microsecond switch served over HTTP on
// loopback through a recorder.
type mordiaLab struct {
	ocs    *simocs.MicroOCS
	srv    *simocs.MordiaServer
	faults *wire.Faults
	rec    *recorder
	addr   string
}

func newMordiaLab(t *testing.T, seed uint64, opts simocs.MicroOCSOptions) *mordiaLab {
	t.Helper()
	m, err := simocs.NewMicroOCS(world.New(seed), "ocs1", opts)
	if err != nil {
		t.Fatal(err)
	}
	f := &wire.Faults{}
	srv := simocs.NewMordiaServer(m, f)
	rec := &recorder{h: srv.Handler()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: rec, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); hs.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close() // releases stalled requests
		hs.Close()
		<-done
	})
	return &mordiaLab{ocs: m, srv: srv, faults: f, rec: rec, addr: "http://" + ln.Addr().String()}
}

// hangGuard is the driver Timeout of the tests that are not about it:
// a bound on an exchange that never ends, not on a slow one. A running
// switch's nights read back under load 18 with -race took over 2 s
// (TestMordiaRunsReplacesAndStopsASchedule failed so), which the
// switch's schedule, kept on its own clock, does not depend on.
const hangGuard = 15 * time.Second

func openMordia(t *testing.T, addr string, timeout time.Duration) (*ocs.Mordia, *syncBuf) {
	t.Helper()
	buf := &syncBuf{}
	m, err := ocs.OpenMordia(context.Background(), addr, ocs.Options{Name: "ocs1", Timeout: timeout, Transcript: transport.NewTranscript(buf)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, buf
}

// allToAll is REACToR §5.2's schedule for n hosts: n-1 configurations
// sharing a period equally, each including the night.
func allToAll(n int, period, night time.Duration) sched.Schedule {
	s := sched.Schedule{Period: period, Delta: night}
	for k := 1; k < n; k++ {
		s.Slots = append(s.Slots, sched.Slot{Duration: period/time.Duration(n-1) - night, Perm: ocs.Shift(n, k).Perm(n)})
	}
	return s
}

// startAhead starts the loaded schedule at a time on the switch's clock
// chosen from a measured round trip to it (ten of them ahead), and asks
// again, further ahead, when the switch's clock had passed that time by
// the time the request arrived (a loaded machine); it returns the start.
func startAhead(t *testing.T, s ocs.Scheduler) time.Duration {
	t.Helper()
	ctx := context.Background()
	ahead := 10
	for attempt := 0; ; attempt++ {
		t0, err := s.Clock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t1, err := s.Clock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		at := t1 + time.Duration(ahead)*max(t1-t0, 100*time.Microsecond)
		start, err := s.StartSchedule(ctx, ocs.StartAt{At: at})
		if err == nil {
			return start
		}
		if now, cerr := s.Clock(ctx); cerr != nil || now < at || attempt == 4 {
			t.Fatalf("start at %v: %v", at, err)
		}
		ahead *= 4
	}
}
