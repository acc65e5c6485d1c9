package hostagent

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// startAgent serves an agent on 127.0.0.1 and returns a client of it and
// its base URL.
func startAgent(t *testing.T, opts Options) (*Client, string) {
	t.Helper()
	a := New(opts)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() {
		srv.Close()
		if err := a.Close(); err != nil {
			t.Errorf("agent close: %v", err)
		}
	})
	return NewClient(srv.Client(), srv.URL), srv.URL
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func startFCTServer(t *testing.T, ctx context.Context, c *Client) FCTServerInfo {
	t.Helper()
	srv, err := c.StartFCTServer(ctx, FCTServerRequest{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if srv.Port == 0 || !strings.HasPrefix(srv.Listen, "127.0.0.1:") {
		t.Fatalf("fct server: %+v", srv)
	}
	return srv
}

// checkSummary recomputes a summary from samples, independently of
// Distribute (by counting, without sorting), and compares.
func checkSummary(t *testing.T, sum FCTSummary, samples []Sample, trials int) {
	t.Helper()
	if len(samples) != trials || sum.Count != trials {
		t.Fatalf("count: summary %d, samples %d, want %d", sum.Count, len(samples), trials)
	}
	fcts := make([]int64, len(samples))
	var total int64
	retransTrials := 0
	for i, s := range samples {
		if s.Trial != i {
			t.Fatalf("sample %d has trial %d", i, s.Trial)
		}
		if s.FCTNS <= 0 {
			t.Fatalf("sample %d: fct %d", i, s.FCTNS)
		}
		if i > 0 && s.StartNS < samples[i-1].StartNS {
			t.Fatalf("samples not in order of start at %d", i)
		}
		if s.Retrans > 0 {
			retransTrials++
		}
		fcts[i] = s.FCTNS
		total += s.FCTNS
	}
	want := map[string][2]int64{
		"p50": {sum.P50NS, nearestRankByCounting(fcts, PPM50)}, "p90": {sum.P90NS, nearestRankByCounting(fcts, PPM90)},
		"p99": {sum.P99NS, nearestRankByCounting(fcts, PPM99)}, "p99.9": {sum.P999NS, nearestRankByCounting(fcts, PPM999)},
		"p99.99": {sum.P9999NS, nearestRankByCounting(fcts, PPM9999)},
		"min":    {sum.MinNS, slices.Min(fcts)}, "max": {sum.MaxNS, slices.Max(fcts)},
	}
	for name, gw := range want {
		if gw[0] != gw[1] {
			t.Errorf("%s: summary %d, recomputed %d", name, gw[0], gw[1])
		}
	}
	if mean := (total + int64(trials)/2) / int64(trials); abs(mean-sum.MeanNS) > 1 {
		t.Errorf("mean: summary %d, recomputed %d", sum.MeanNS, mean)
	}
	if sum.Retrans.Status == "known" && sum.Retrans.Trials != retransTrials {
		t.Errorf("retrans trials: summary %d, samples %d", sum.Retrans.Trials, retransTrials)
	}
}

func abs(v int64) int64 { return max(v, -v) }

func TestFCTClosedLoopOverAPI(t *testing.T) {
	ctx := testCtx(t)
	c, _ := startAgent(t, Options{})
	srv := startFCTServer(t, ctx, c)
	const trials = 3000
	st, err := c.RunFCT(ctx, FCTRunRequest{Target: srv.Listen, RequestSize: 143, ResponseSize: 37, Trials: trials, Warmup: 10, Connections: 2})
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateDone || st.Summary == nil || st.TrialsDone != trials || st.FinishedAt == nil {
		t.Fatalf("status: %+v", st)
	}
	if st.Request.Mode != ModeClosed || st.Request.Seed != 1 || st.Request.TrialTimeoutMS != DefaultTrialTimeoutMS {
		t.Errorf("defaults not filled in: %+v", st.Request)
	}
	samples, err := c.FCTSamples(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkSummary(t, *st.Summary, samples, trials)
	conns := map[int32]int{}
	var sumFCT int64
	for _, s := range samples {
		conns[s.Conn]++
		sumFCT += s.FCTNS
		if s.SchedNS != s.StartNS {
			t.Fatalf("closed loop: sched %d != start %d", s.SchedNS, s.StartNS)
		}
		if runtime.GOOS == "linux" && s.Retrans < 0 {
			t.Fatalf("linux: retransmissions unknown in %+v", s)
		}
	}
	if len(conns) != 2 || conns[0] == 0 || conns[1] == 0 {
		t.Errorf("trials per connection: %v", conns)
	}
	// Two connections cannot have spent more time in trials than twice the
	// run's duration.
	if elapsed := time.Duration(st.ElapsedMS+1) * time.Millisecond; time.Duration(sumFCT) > 2*elapsed {
		t.Errorf("sum of FCTs %v exceeds 2 x elapsed %v", time.Duration(sumFCT), elapsed)
	}
	wantStatus := "unknown"
	if runtime.GOOS == "linux" {
		wantStatus = "known"
	}
	if st.Summary.Retrans.Status != wantStatus {
		t.Errorf("retrans status %q, want %q", st.Summary.Retrans.Status, wantStatus)
	}
	servers, err := c.FCTServers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 1 || servers[0].Requests != trials+2*10 {
		t.Errorf("server: %+v, want %d requests", servers, trials+20)
	}

	// The raw download is a gzip'd file.
	var gz strings.Builder
	if err := c.FCTSamplesGzip(ctx, st.ID, &gz); err != nil {
		t.Fatal(err)
	}
	if s := gz.String(); len(s) < 2 || s[0] != 0x1f || s[1] != 0x8b {
		t.Errorf("samples download is not gzip")
	}

	stopped, err := c.StopFCTServer(ctx, srv.ID)
	if err != nil || stopped.ID != srv.ID {
		t.Fatalf("stop: %+v %v", stopped, err)
	}
	if _, err := net.DialTimeout("tcp", srv.Listen, time.Second); err == nil {
		t.Error("fct server still accepts after stop")
	}
	if _, err := c.CancelFCTRun(ctx, st.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FCTRun(ctx, st.ID, 0); !isKind(err, KindNotFound) {
		t.Errorf("deleted run: got %v, want not_found", err)
	}
}

func isKind(err error, kind string) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Kind == kind
}

func TestFCTOpenLoopOverAPI(t *testing.T) {
	ctx := testCtx(t)
	c, _ := startAgent(t, Options{})
	srv := startFCTServer(t, ctx, c)
	const trials, rate = 2000, 4000.0
	req := FCTRunRequest{Target: srv.Listen, Trials: trials, Mode: ModeOpen, RatePerSec: rate, Connections: 4, Seed: 42}
	st, err := c.RunFCT(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	samples, err := c.FCTSamples(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkSummary(t, *st.Summary, samples, trials)
	scheds := make([]int64, len(samples))
	late := 0
	for i, s := range samples {
		scheds[i] = s.SchedNS
		if s.StartNS < s.SchedNS {
			t.Fatalf("trial %d started %d ns before its schedule", i, s.SchedNS-s.StartNS)
		}
		if time.Duration(s.StartNS-s.SchedNS) > lateThreshold {
			late++
		}
	}
	if late != st.Summary.LateTrials {
		t.Errorf("late trials: summary %d, samples %d", st.Summary.LateTrials, late)
	}
	slices.Sort(scheds)
	// Poisson arrivals: the mean gap is 1/rate (its standard error over
	// 2000 gaps is about 2 %).
	meanGap := float64(scheds[len(scheds)-1]) / float64(len(scheds))
	if want := 1e9 / rate; meanGap < 0.85*want || meanGap > 1.15*want {
		t.Errorf("mean gap between arrivals %.0f ns, want about %.0f", meanGap, want)
	}
	// Exponential gaps: about 1/e of them are longer than the mean.
	longer := 0
	for i := 1; i < len(scheds); i++ {
		if float64(scheds[i]-scheds[i-1]) > 1e9/rate {
			longer++
		}
	}
	if frac := float64(longer) / float64(len(scheds)-1); frac < 0.31 || frac > 0.43 {
		t.Errorf("fraction of gaps above the mean %.3f, want about 0.368", frac)
	}
	// The run takes about trials/rate.
	if d := time.Duration(st.ElapsedMS) * time.Millisecond; d < 300*time.Millisecond || d > 20*time.Second {
		t.Errorf("open loop of %d trials at %v/s took %v", trials, rate, d)
	}

	// The same seed gives the same schedule.
	st2, err := c.RunFCT(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	samples2, err := c.FCTSamples(ctx, st2.ID)
	if err != nil {
		t.Fatal(err)
	}
	scheds2 := make([]int64, len(samples2))
	for i, s := range samples2 {
		scheds2[i] = s.SchedNS
	}
	slices.Sort(scheds2)
	if !slices.Equal(scheds, scheds2) {
		t.Error("same seed, different arrival schedule")
	}
}

func TestFCTRunCanceledByClient(t *testing.T) {
	ctx := testCtx(t)
	c, _ := startAgent(t, Options{})
	srv := startFCTServer(t, ctx, c)
	// An open loop at 10/s for 1000 trials would take 100 s.
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.RunFCT(rctx, FCTRunRequest{Target: srv.Listen, Trials: 1000, Mode: ModeOpen, RatePerSec: 10})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancel took %v", d)
	}
	runs := listRuns(t, ctx, c)
	if len(runs) != 0 {
		t.Errorf("a canceled run is still on the agent: %+v", runs)
	}
	// and its connections are closed
	waitFor(t, func() bool {
		s, _ := c.FCTServers(ctx)
		return len(s) == 1 && s[0].Connections == 0
	})
}

func listRuns(t *testing.T, ctx context.Context, c *Client) []FCTRunStatus {
	t.Helper()
	var out struct {
		Runs []FCTRunStatus `json:"runs"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/fct/run", nil, &out); err != nil {
		t.Fatal(err)
	}
	return out.Runs
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFCTRunFailures(t *testing.T) {
	ctx := testCtx(t)
	c, _ := startAgent(t, Options{})

	// Nobody listens on the target.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	st, err := c.RunFCT(ctx, FCTRunRequest{Target: dead, Trials: 10})
	if err == nil || st.State != StateFailed || st.Error == nil || !strings.Contains(st.Error.Message, "connect 0 to "+dead) {
		t.Errorf("dead target: %+v, %v", st, err)
	}

	// A server that accepts and never answers: the trial timeout ends it.
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	go func() {
		for {
			conn, err := mute.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
			go io.Copy(io.Discard, conn)
		}
	}()
	start := time.Now()
	st, err = c.RunFCT(ctx, FCTRunRequest{Target: mute.Addr().String(), Trials: 10, TrialTimeoutMS: 200})
	if err == nil || st.State != StateFailed || !strings.Contains(st.Error.Message, "trial timeout") {
		t.Errorf("mute server: %+v, %v", st, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a 200 ms trial timeout took %v", d)
	}
	// A server that hangs up after five answers, with two connections: the
	// run fails with what happened, not with the cancellation of the others.
	addr := slowServer(t, 0, 0)
	st, err = c.RunFCT(ctx, FCTRunRequest{Target: hangUpAfter(t, addr, 5), Trials: 100, Connections: 2})
	if err == nil || st.State != StateFailed || !strings.Contains(st.Error.Message, "server closed the connection") {
		t.Errorf("server hangs up: %+v, %v", st.Error, err)
	}

	// A server that hangs up with the request unread in its socket: its
	// kernel resets the connection, which is the same hang-up.
	rst, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer rst.Close()
	go func() {
		for {
			conn, err := rst.Accept()
			if err != nil {
				return
			}
			go func() {
				// Let the request arrive, read none of it, and close
				// with a reset (what a close with unread data sends).
				if tc, ok := conn.(*net.TCPConn); ok {
					tc.SetLinger(0)
				}
				time.Sleep(50 * time.Millisecond)
				conn.Close()
			}()
		}
	}()
	st2, err := c.RunFCT(ctx, FCTRunRequest{Target: rst.Addr().String(), Trials: 10, TrialTimeoutMS: 2000})
	if err == nil || st2.State != StateFailed || !strings.Contains(st2.Error.Message, "server closed the connection") {
		t.Errorf("server resets the connection: %+v, %v", st2.Error, err)
	}

	// Samples of a failed run are a conflict.
	if _, err := c.FCTSamples(ctx, st.ID); !isKind(err, KindConflict) {
		t.Errorf("samples of a failed run: %v", err)
	}
}

// rawCall sends a request and returns the status and the error body.
func rawCall(t *testing.T, method, url, body string) (int, ErrorInfo) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb errorBody
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(raw, &eb); err != nil {
			t.Fatalf("%s %s: error body is not JSON: %q", method, url, raw)
		}
	}
	return resp.StatusCode, eb.Error
}

func TestBadRequests(t *testing.T) {
	ctx := testCtx(t)
	c, base := startAgent(t, Options{LookPath: func(string) (string, error) { return "", errors.New("nope") }})
	srv := startFCTServer(t, ctx, c)
	slow, err := c.StartFCTRun(ctx, FCTRunRequest{Target: srv.Listen, Trials: 1000, Mode: ModeOpen, RatePerSec: 10})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method, path, body string
		status             int
		kind, mentions     string
	}{
		{"POST", "/v1/fct/run", `{}`, 400, KindBadRequest, "target"},
		{"POST", "/v1/fct/run", ``, 400, KindBadRequest, "target"},
		{"POST", "/v1/fct/run", `{"target":"127.0.0.1:1","trials":-5}`, 400, KindBadRequest, "trials -5"},
		{"POST", "/v1/fct/run", `{"target":"127.0.0.1:1","request_size":4}`, 400, KindBadRequest, "request_size 4"},
		{"POST", "/v1/fct/run", `{"target":"127.0.0.1:1","mode":"open"}`, 400, KindBadRequest, "rate_per_sec"},
		{"POST", "/v1/fct/run", `{"target":"127.0.0.1:1","mode":"sideways"}`, 400, KindBadRequest, "mode"},
		{"POST", "/v1/fct/run", `{"target":"127.0.0.1:1","rate_per_sec":5}`, 400, KindBadRequest, "rate_per_sec"},
		{"POST", "/v1/fct/run", `{"target":"127.0.0.1:1","connections":5000}`, 400, KindBadRequest, "connections"},
		{"POST", "/v1/fct/run", `{"target":"no-port"}`, 400, KindBadRequest, "target"},
		{"POST", "/v1/fct/run", `{"target":"127.0.0.1:1","bind":"eth0"}`, 400, KindBadRequest, "bind"},
		{"POST", "/v1/fct/run", `{"target":"127.0.0.1:1","trails":5}`, 400, KindBadRequest, "trails"},
		{"POST", "/v1/fct/run", `{"target":`, 400, KindBadRequest, "request body"},
		{"POST", "/v1/fct/run", `{"target":"127.0.0.1:1"} {}`, 400, KindBadRequest, "more than one"},
		{"PUT", "/v1/fct/run", `{}`, 405, KindMethodNotAllowed, "GET, POST"},
		{"GET", "/v1/fct/run/run-999", ``, 404, KindNotFound, "run-999"},
		{"GET", "/v1/fct/run/" + slow.ID + "?wait=soon", ``, 400, KindBadRequest, "wait"},
		{"GET", "/v1/fct/run/" + slow.ID + "/samples", ``, 409, KindConflict, "running"},
		{"DELETE", "/v1/fct/server/srv-999", ``, 404, KindNotFound, "srv-999"},
		{"POST", "/v1/fct/server", `{"listen":"nonsense"}`, 400, KindBadRequest, "listen"},
		{"POST", "/v1/fct/server", `{}`, 400, KindBadRequest, "test interface"},
		{"POST", "/v1/fct/server", `{"listen":"0.0.0.0:0"}`, 400, KindBadRequest, "not a wildcard"},
		{"POST", "/v1/fct/server", `{"listen":"[::]:0"}`, 400, KindBadRequest, "not a wildcard"},
		{"POST", "/v1/fct/server", `{"listen":"localhost:0"}`, 400, KindBadRequest, "not a wildcard or a name"},
		{"POST", "/v1/fct/server", `{"listen":"` + srv.Listen + `"}`, 500, KindFailed, "listen on " + srv.Listen},
		{"GET", "/v1/nothing", ``, 404, KindNotFound, "/v1/nothing"},
		{"GET", "/v2/version", ``, 404, KindNotFound, "/v2/version"},
		{"POST", "/v1/rdma/write_lat", `{"role":"client","server":"10.0.0.1"}`, 501, KindNotAvailable, "not available on this host: ib_write_lat not found"},
		{"GET", "/v1/rdma/write_lat/rdma-1", ``, 501, KindNotAvailable, "ib_write_lat not found"},
	}
	for _, tc := range cases {
		status, e := rawCall(t, tc.method, base+tc.path, tc.body)
		if status != tc.status || e.Kind != tc.kind || !strings.Contains(e.Message, tc.mentions) {
			t.Errorf("%s %s %s: got %d %s %q, want %d %s mentioning %q", tc.method, tc.path, tc.body, status, e.Kind, e.Message, tc.status, tc.kind, tc.mentions)
		}
	}
	// The client maps not_available to ErrNotAvailable.
	_, err = c.StartWriteLat(ctx, WriteLatRequest{Role: RoleServer})
	if !errors.Is(err, ErrNotAvailable) {
		t.Errorf("StartWriteLat without the tool: %v", err)
	}
	// A short long-poll of a running run answers running.
	st, err := c.FCTRun(ctx, slow.ID, 50*time.Millisecond)
	if err != nil || st.State != StateRunning {
		t.Errorf("long poll of a running run: %+v %v", st, err)
	}
}

func TestVersionAndCounters(t *testing.T) {
	ctx := testCtx(t)
	c, _ := startAgent(t, Options{ProcNet: "testdata/proc1", Hostname: "h7"})
	v, err := c.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v.Name != "hostagent" || v.Version != Version || v.API != "v1" || v.Hostname != "h7" || v.OS != runtime.GOOS ||
		!v.Capabilities.FCT || !v.Capabilities.Counters || v.Capabilities.TCPInfoRetrans != (runtime.GOOS == "linux") {
		t.Errorf("version: %+v", v)
	}
	all, err := c.Counters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Interfaces) != 3 || all.TCP["RetransSegs"] != 3 || all.Interfaces["enp65s0f0np0"]["rx_bytes"] != 18446744073709551000 {
		t.Errorf("counters: %+v", all)
	}
	one, err := c.Counters(ctx, "lo")
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Interfaces) != 1 || one.Interfaces["lo"] == nil {
		t.Errorf("counters of lo: %v", one.Interfaces)
	}

	none, _ := startAgent(t, Options{ProcNet: t.TempDir()})
	if _, err := none.Counters(ctx); !errors.Is(err, ErrNotAvailable) {
		t.Errorf("without /proc/net/dev: %v", err)
	}
	if v, err := none.Version(ctx); err != nil || v.Capabilities.Counters {
		t.Errorf("version without /proc/net/dev: %+v %v", v.Capabilities, err)
	}
}

// fakeTool writes an executable script standing in for ib_write_lat.
func fakeTool(t *testing.T, script string) func(string) (string, error) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("shell scripts stand in for ib_write_lat")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, WriteLatTool)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return func(name string) (string, error) {
		if name != WriteLatTool {
			return "", errors.New("not found")
		}
		return path, nil
	}
}

func TestWriteLatJobs(t *testing.T) {
	ctx := testCtx(t)
	sample, err := filepath.Abs("testdata/perftest/current_client_mlx4.txt")
	if err != nil {
		t.Fatal(err)
	}
	argsFile := filepath.Join(t.TempDir(), "args")
	look := fakeTool(t, `
echo "$@" > '`+argsFile+`'
case "$*" in
*fail*) echo " Unable to Connect the HCA's through the link" >&2; exit 1;;
*hang*) sleep 30;;
esac
cat '`+sample+`'
`)
	c, _ := startAgent(t, Options{LookPath: look})
	if v, err := c.Version(ctx); err != nil || !v.Capabilities.RDMAWriteLat {
		t.Fatalf("version: %+v %v", v, err)
	}

	st, err := c.StartWriteLat(ctx, WriteLatRequest{Role: RoleClient, Server: "10.0.1.2", Iterations: 300000, Device: "mlx5_0"})
	if err != nil {
		t.Fatal(err)
	}
	st, err = c.WaitWriteLat(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateDone || st.Result == nil || len(st.Result.Rows) != 1 || *st.Result.Rows[0].P999US != 4.70 ||
		st.ExitCode == nil || *st.ExitCode != 0 || !strings.Contains(st.Output, "RDMA_Write Latency Test") {
		t.Errorf("job: %+v", st)
	}
	args, _ := os.ReadFile(argsFile)
	if got := strings.TrimSpace(string(args)); got != "-s 143 -n 300000 -d mlx5_0 10.0.1.2" {
		t.Errorf("tool's arguments: %q", got)
	}

	st, err = c.StartWriteLat(ctx, WriteLatRequest{Role: RoleServer, ExtraArgs: []string{"fail"}})
	if err != nil {
		t.Fatal(err)
	}
	st, err = c.WaitWriteLat(ctx, st.ID)
	if err == nil || st.State != StateFailed || st.ExitCode == nil || *st.ExitCode != 1 || !strings.Contains(st.Output, "Unable to Connect") {
		t.Errorf("failing tool: %+v %v", st, err)
	}

	start := time.Now()
	st, err = c.StartWriteLat(ctx, WriteLatRequest{Role: RoleServer, ExtraArgs: []string{"hang"}, TimeoutMS: 200})
	if err != nil {
		t.Fatal(err)
	}
	st, err = c.WaitWriteLat(ctx, st.ID)
	if err == nil || st.State != StateFailed || !strings.Contains(st.Error.Message, "killed after timeout_ms 200") {
		t.Errorf("hanging tool: %+v %v", st, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("timeout of 200 ms took %v", d)
	}
	if runtime.GOOS == "linux" {
		// The tool's children go with it: the script's "sleep 30" holds
		// the output pipe, and the job would wait for it otherwise.
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the killed tool's children lived on: the job took %v", d)
		}
	}

	st, err = c.StartWriteLat(ctx, WriteLatRequest{Role: RoleServer, ExtraArgs: []string{"hang"}})
	if err != nil {
		t.Fatal(err)
	}
	stopped, err := c.StopWriteLat(ctx, st.ID)
	if err != nil || stopped.State != StateCanceled {
		t.Errorf("stop: %+v %v", stopped, err)
	}
	if _, err := c.WriteLat(ctx, st.ID, 0); !isKind(err, KindNotFound) {
		t.Errorf("stopped job: %v", err)
	}
	if _, err := c.StartWriteLat(ctx, WriteLatRequest{Role: RoleClient}); !isKind(err, KindBadRequest) {
		t.Errorf("client without server: %v", err)
	}
}

func TestRegistryTrim(t *testing.T) {
	var g registry[int]
	for i := range 40 {
		g.add(string(rune('a'+i)), i)
	}
	g.trim(32, func(v int) bool { return v%2 == 1 }) // only odd ones may go
	if len(g.order) != 32 || len(g.items) != 32 {
		t.Fatalf("kept %d", len(g.order))
	}
	for i, v := range g.list()[:4] {
		if want := []int{0, 2, 4, 6}[i]; v != want {
			t.Errorf("kept %v", g.list())
			break
		}
	}
}

// hangUpAfter is a proxy to an FCT server that closes each connection after
// n requests.
func hangUpAfter(t *testing.T, target string, n int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				var hdr [8]byte
				for range n {
					if _, err := io.ReadFull(c, hdr[:]); err != nil {
						return
					}
					req, resp := binary.BigEndian.Uint32(hdr[:4]), binary.BigEndian.Uint32(hdr[4:])
					up.Write(hdr[:])
					if _, err := io.CopyN(up, c, int64(req-8)); err != nil {
						return
					}
					if _, err := io.CopyN(c, up, int64(resp)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestOldSamplesDropped(t *testing.T) {
	ctx := testCtx(t)
	a := New(Options{})
	a.keepSamples = 250
	srv := httptest.NewServer(a.Handler())
	defer func() { srv.Close(); a.Close() }()
	c := NewClient(srv.Client(), srv.URL)
	fs := startFCTServer(t, ctx, c)
	var ids []string
	for range 3 {
		st, err := c.RunFCT(ctx, FCTRunRequest{Target: fs.Listen, Trials: 100})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, st.ID)
	}
	// 100 + 100 fit in 250; the third run back is dropped.
	for i, id := range ids {
		st, err := c.FCTRun(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, serr := c.FCTSamples(ctx, id)
		if kept := i > 0; st.SamplesKept != kept || (serr == nil) != kept {
			t.Errorf("run %d: samples_kept %v, download error %v; want kept %v", i, st.SamplesKept, serr, kept)
		}
		if st.Summary == nil || st.Summary.Count != 100 {
			t.Errorf("run %d: the summary stays: %+v", i, st.Summary)
		}
	}
	if _, err := c.FCTSamples(ctx, ids[0]); !isKind(err, KindConflict) || !strings.Contains(err.Error(), "samples dropped") {
		t.Errorf("dropped samples: %v", err)
	}
}
