package hostagent

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure an Agent. The zero value serves a real host.
type Options struct {
	Logger *slog.Logger
	// Dial opens the FCT client's connections (default: a net.Dialer bound
	// to the run's "bind" address). A simulated host passes its own network.
	Dial DialFunc
	// Listen opens FCT servers' listeners (default: net.ListenConfig).
	Listen ListenFunc
	// LookPath finds tools such as ib_write_lat (default: exec.LookPath).
	LookPath func(file string) (string, error)
	// Tools run tools in-process instead of executing them, by name (a
	// simulated host's ib_write_lat); the others are executed.
	Tools map[string]ToolFunc
	// ProcNet is where dev, snmp and netstat are read (default: /proc/net).
	ProcNet string
	// Hostname is reported by /v1/version (default: os.Hostname).
	Hostname string
	// Clock times FCT trials (default: the real monotonic clock). A
	// simulated host passes its simulated clock, which its network moves
	// by each trial's modelled time; open-loop runs, whose arrivals wait
	// on real timers, are then refused as not available.
	Clock Clock
	// Reactor does REACToR host control (default: tc on a Linux host,
	// NewTCReactor). A simulated host passes its fabric's.
	Reactor ReactorHost
	// Token, when set, is the token every request must carry (guard.go);
	// nil checks none, which only tests of the API alone should want.
	Token TokenFunc
}

// keepJobs is how many FCT runs and RDMA jobs the agent remembers.
const keepJobs = 32

// keepSamples bounds the samples the agent holds for download, over all
// finished runs (about 40 bytes each): the oldest runs' samples go first, the
// newest run's are always kept.
const keepSamples = 4_000_000

// maxWait bounds the long poll of a run or job.
const maxWait = 60 * time.Second

// Agent serves the API. Its zero value is not usable; call New.
type Agent struct {
	opts    Options
	log     *slog.Logger
	ctx     context.Context // canceled by Close
	stopAll context.CancelFunc

	keepSamples int

	mu      sync.Mutex
	seq     int
	servers registry[*fctServerEntry]
	runs    registry[*fctRun]
	rdma    registry[*writeLatJob]
	closed  bool

	reactorHost ReactorHost
}

// New returns an agent; call Close when done with it.
func New(opts Options) *Agent {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Listen == nil {
		var lc net.ListenConfig
		opts.Listen = lc.Listen
	}
	if opts.LookPath == nil {
		opts.LookPath = exec.LookPath
	}
	opts.ProcNet = cmp.Or(opts.ProcNet, "/proc/net")
	if opts.Hostname == "" {
		opts.Hostname, _ = os.Hostname()
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &Agent{opts: opts, log: opts.Logger, ctx: ctx, stopAll: cancel, keepSamples: keepSamples, reactorHost: opts.Reactor}
	if a.reactorHost == nil {
		a.reactorHost = NewTCReactor(TCOptions{Clock: opts.Clock, Dial: opts.Dial, Listen: opts.Listen, Hostname: opts.Hostname, Logger: opts.Logger})
	}
	return a
}

// Handler is the API's HTTP handler.
func (a *Agent) Handler() http.Handler { return a.guard(a.routes()) }

// routes is where every path of the API is registered.
func (a *Agent) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/v1/version", methods{"GET": a.getVersion})
	mux.Handle("/v1/counters", methods{"GET": a.getCounters})
	mux.Handle("/v1/fct/server", methods{"GET": a.listFCTServers, "POST": a.startFCTServer})
	mux.Handle("/v1/fct/server/{id}", methods{"GET": a.getFCTServer, "DELETE": a.stopFCTServer})
	mux.Handle("/v1/fct/run", methods{"GET": a.listFCTRuns, "POST": a.startFCTRun})
	mux.Handle("/v1/fct/run/{id}", methods{"GET": a.getFCTRun, "DELETE": a.deleteFCTRun})
	mux.Handle("/v1/fct/run/{id}/samples", methods{"GET": a.getFCTSamples})
	mux.Handle("/v1/rdma/write_lat", methods{"GET": a.listWriteLat, "POST": a.startWriteLat})
	mux.Handle("/v1/rdma/write_lat/{id}", methods{"GET": a.getWriteLat, "DELETE": a.deleteWriteLat})
	// REACToR host control (reactor.go).
	mux.Handle("/v1/reactor", methods{"GET": a.reactorStatus})
	mux.Handle("/v1/reactor/classes", methods{"PUT": a.reactorSetup, "DELETE": a.reactorTeardown})
	mux.Handle("/v1/reactor/pause", methods{"POST": a.reactorPause})
	mux.Handle("/v1/reactor/rates", methods{"PUT": a.reactorRates})
	mux.Handle("/v1/reactor/schedule", methods{"PUT": a.reactorSchedule})
	mux.Handle("/v1/reactor/heartbeat", methods{"POST": a.reactorHeartbeat})
	mux.Handle("/v1/reactor/demand", methods{"GET": a.reactorDemand})
	mux.Handle("/v1/reactor/windows", methods{"GET": a.reactorWindows})
	mux.Handle("/v1/reactor/sink", methods{"POST": a.reactorStartSink})
	mux.Handle("/v1/reactor/flows", methods{"GET": a.reactorFlows, "POST": a.reactorStartFlows, "DELETE": a.reactorStopFlows})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, apiErr(KindNotFound, "no such path: %s", r.URL.Path))
	})
	return mux
}

// Close stops the FCT servers, cancels the runs, kills the RDMA jobs and
// waits for them.
func (a *Agent) Close() error {
	a.mu.Lock()
	a.closed = true
	servers, runs, jobs := a.servers.list(), a.runs.list(), a.rdma.list()
	a.mu.Unlock()
	a.stopAll()
	var errs []error
	for _, s := range servers {
		if err := s.srv.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for _, r := range runs {
		<-r.done
	}
	for _, j := range jobs {
		j.cancel()
		<-j.done
	}
	if err := a.reactorHost.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// newID returns the next id with a prefix; a.mu must be held.
func (a *Agent) newID(prefix string) string {
	a.seq++
	return prefix + "-" + strconv.Itoa(a.seq)
}

// ---- version and counters

func (a *Agent) getVersion(w http.ResponseWriter, r *http.Request) {
	_, devErr := os.Stat(filepath.Join(a.opts.ProcNet, "dev"))
	_, lookErr := a.writeLatPath()
	writeJSON(w, http.StatusOK, VersionInfo{
		Name: "hostagent", Version: Version, API: APIVersion,
		OS: runtime.GOOS, Arch: runtime.GOARCH, Hostname: a.opts.Hostname, Go: runtime.Version(),
		Capabilities: Capabilities{
			FCT:            true,
			TCPInfoRetrans: tcpInfoRetrans,
			Counters:       devErr == nil,
			RDMAWriteLat:   lookErr == nil, // a *APIError: nil when found
		},
	})
}

func (a *Agent) getCounters(w http.ResponseWriter, r *http.Request) {
	c, err := ReadCounters(a.opts.ProcNet)
	if errors.Is(err, fs.ErrNotExist) {
		writeError(w, apiErr(KindNotAvailable, "not available on this host: %v", err))
		return
	}
	if err != nil {
		writeError(w, apiErr(KindFailed, "read counters: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, c.Filter(r.URL.Query()["iface"]...))
}

// ---- FCT servers

type fctServerEntry struct {
	id  string
	srv *FCTServer
}

func (e *fctServerEntry) info() FCTServerInfo {
	open, reqs := e.srv.Stats()
	addr := e.srv.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return FCTServerInfo{ID: e.id, Listen: addr, Port: p, Connections: open, Requests: reqs, StartedAt: e.srv.Started().UTC()}
}

func (a *Agent) startFCTServer(w http.ResponseWriter, r *http.Request) {
	var req FCTServerRequest
	if !decode(w, r, &req) {
		return
	}
	// The server binds to the test interface's address only: an FCT
	// server on every interface would answer anyone on the management
	// network too.
	host, _, err := net.SplitHostPort(req.Listen)
	if err != nil {
		writeError(w, apiErr(KindBadRequest, "listen %q: %v (want the test interface's address, e.g. 10.0.0.2:0)", req.Listen, err))
		return
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		writeError(w, apiErr(KindBadRequest, "listen %q: want the IP address of the test interface, not a wildcard or a name (e.g. 10.0.0.2:0)", req.Listen))
		return
	}
	ln, err := a.opts.Listen(r.Context(), "tcp", req.Listen)
	if err != nil {
		writeError(w, apiErr(KindFailed, "fct server: listen on %s: %v", req.Listen, err))
		return
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		ln.Close()
		writeError(w, apiErr(KindConflict, "the agent is shutting down"))
		return
	}
	e := &fctServerEntry{id: a.newID("srv"), srv: ServeFCT(ln, a.log)}
	a.servers.add(e.id, e)
	a.mu.Unlock()
	a.log.Info("fct server started", "id", e.id, "listen", e.srv.Addr().String())
	writeJSON(w, http.StatusCreated, e.info())
}

func (a *Agent) listFCTServers(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	entries := a.servers.list()
	a.mu.Unlock()
	out := struct {
		Servers []FCTServerInfo `json:"servers"`
	}{Servers: []FCTServerInfo{}}
	for _, e := range entries {
		out.Servers = append(out.Servers, e.info())
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *Agent) fctServer(w http.ResponseWriter, r *http.Request) *fctServerEntry {
	a.mu.Lock()
	e, ok := a.servers.get(r.PathValue("id"))
	a.mu.Unlock()
	if !ok {
		writeError(w, apiErr(KindNotFound, "no fct server %q", r.PathValue("id")))
	}
	return e
}

func (a *Agent) getFCTServer(w http.ResponseWriter, r *http.Request) {
	if e := a.fctServer(w, r); e != nil {
		writeJSON(w, http.StatusOK, e.info())
	}
}

func (a *Agent) stopFCTServer(w http.ResponseWriter, r *http.Request) {
	e := a.fctServer(w, r)
	if e == nil {
		return
	}
	a.mu.Lock()
	a.servers.remove(e.id)
	a.mu.Unlock()
	if err := e.srv.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		writeError(w, apiErr(KindFailed, "stop fct server %s: %v", e.id, err))
		return
	}
	a.log.Info("fct server stopped", "id", e.id)
	writeJSON(w, http.StatusOK, e.info())
}

// ---- FCT runs

type fctRun struct {
	id      string
	req     FCTRunRequest
	started time.Time
	cancel  context.CancelFunc
	done    chan struct{}
	trials  atomic.Int64

	mu       sync.Mutex
	state    string
	err      *ErrorInfo
	result   *FCTResult
	finished time.Time
}

func (run *fctRun) status() FCTRunStatus {
	run.mu.Lock()
	defer run.mu.Unlock()
	st := FCTRunStatus{ID: run.id, State: run.state, Request: run.req, TrialsDone: run.trials.Load(),
		StartedAt: run.started.UTC(), Error: run.err}
	end := time.Now()
	if !run.finished.IsZero() {
		end = run.finished
		fin := run.finished.UTC()
		st.FinishedAt = &fin
	}
	st.ElapsedMS = end.Sub(run.started).Milliseconds()
	if run.result != nil {
		sum := run.result.Summary
		st.Summary = &sum
		st.SamplesKept = run.result.Samples != nil
	}
	return st
}

func (a *Agent) startFCTRun(w http.ResponseWriter, r *http.Request) {
	var req FCTRunRequest
	if !decode(w, r, &req) {
		return
	}
	req, err := req.Normalize()
	if err != nil {
		writeError(w, apiErr(KindBadRequest, "%v", err))
		return
	}
	if a.opts.Clock != nil && req.Mode == ModeOpen {
		writeError(w, apiErr(KindNotAvailable, "not available on this host: %v", ErrOpenLoopClock))
		return
	}
	ctx, cancel := context.WithCancel(a.ctx)
	run := &fctRun{req: req, started: time.Now(), cancel: cancel, done: make(chan struct{}), state: StateRunning}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		cancel()
		writeError(w, apiErr(KindConflict, "the agent is shutting down"))
		return
	}
	run.id = a.newID("run")
	a.runs.add(run.id, run)
	a.runs.trim(keepJobs, func(old *fctRun) bool { return old.status().State != StateRunning })
	a.mu.Unlock()
	a.log.Info("fct run started", "id", run.id, "target", req.Target, "trials", req.Trials, "mode", req.Mode)
	go func() {
		defer close(run.done)
		defer cancel()
		res, err := RunFCTClock(ctx, req, a.opts.Dial, a.opts.Clock, &run.trials)
		run.finish(res, err, ctx.Err() != nil)
		a.log.Info("fct run ended", "id", run.id, "state", run.status().State, "elapsed", time.Since(run.started))
		a.dropOldSamples()
	}()
	writeJSON(w, http.StatusAccepted, run.status())
}

// finish records how a run ended.
func (run *fctRun) finish(res *FCTResult, err error, canceled bool) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.finished = time.Now()
	switch {
	case err == nil:
		run.state, run.result = StateDone, res
	case canceled && errors.Is(err, context.Canceled):
		run.state = StateCanceled
	default:
		run.state, run.err = StateFailed, &ErrorInfo{Kind: KindFailed, Message: fmt.Sprintf("fct run to %s: %v", run.req.Target, err)}
	}
}

// dropOldSamples frees the samples of the oldest finished runs beyond
// keepSamples.
func (a *Agent) dropOldSamples() {
	a.mu.Lock()
	runs := a.runs.list()
	a.mu.Unlock()
	total := 0
	for i := len(runs) - 1; i >= 0; i-- {
		run := runs[i]
		run.mu.Lock()
		if run.result != nil && run.result.Samples != nil {
			if n := len(run.result.Samples); total > 0 && total+n > a.keepSamples {
				run.result.Samples = nil
				a.log.Info("fct run: samples dropped to bound memory", "id", run.id)
			} else {
				total += n
			}
		}
		run.mu.Unlock()
	}
}

func (a *Agent) listFCTRuns(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	runs := a.runs.list()
	a.mu.Unlock()
	out := struct {
		Runs []FCTRunStatus `json:"runs"`
	}{Runs: []FCTRunStatus{}}
	for _, run := range runs {
		out.Runs = append(out.Runs, run.status())
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *Agent) fctRun(w http.ResponseWriter, r *http.Request) *fctRun {
	a.mu.Lock()
	run, ok := a.runs.get(r.PathValue("id"))
	a.mu.Unlock()
	if !ok {
		writeError(w, apiErr(KindNotFound, "no fct run %q", r.PathValue("id")))
	}
	return run
}

func (a *Agent) getFCTRun(w http.ResponseWriter, r *http.Request) {
	run := a.fctRun(w, r)
	if run == nil || !longPoll(w, r, run.done) {
		return
	}
	writeJSON(w, http.StatusOK, run.status())
}

func (a *Agent) deleteFCTRun(w http.ResponseWriter, r *http.Request) {
	run := a.fctRun(w, r)
	if run == nil {
		return
	}
	run.cancel()
	<-run.done
	a.mu.Lock()
	a.runs.remove(run.id)
	a.mu.Unlock()
	st := run.status()
	run.mu.Lock()
	if run.result != nil {
		run.result.Samples = nil
	}
	run.mu.Unlock()
	writeJSON(w, http.StatusOK, st)
}

func (a *Agent) getFCTSamples(w http.ResponseWriter, r *http.Request) {
	run := a.fctRun(w, r)
	if run == nil {
		return
	}
	run.mu.Lock()
	state, res := run.state, run.result
	run.mu.Unlock()
	if state != StateDone || res == nil {
		writeError(w, apiErr(KindConflict, "fct run %s is %s: samples come with a finished run", run.id, state))
		return
	}
	if res.Samples == nil {
		writeError(w, apiErr(KindConflict, "fct run %s: samples dropped: the agent keeps the newest runs' samples, up to %d", run.id, a.keepSamples))
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("Content-Disposition", `attachment; filename="fct_samples.csv.gz"`)
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err := WriteSamplesCSV(zw, res.Samples); err != nil {
		a.log.Warn("fct samples: write", "id", run.id, "err", err)
		return
	}
	if err := zw.Close(); err != nil {
		a.log.Warn("fct samples: write", "id", run.id, "err", err)
	}
}

// ---- RDMA WRITE latency

func (a *Agent) writeLatPath() (string, *APIError) {
	if a.opts.Tools[WriteLatTool] != nil {
		return WriteLatTool, nil
	}
	path, err := a.opts.LookPath(WriteLatTool)
	if err != nil {
		return "", apiErr(KindNotAvailable, "not available on this host: %s not found", WriteLatTool)
	}
	return path, nil
}

func (a *Agent) startWriteLat(w http.ResponseWriter, r *http.Request) {
	path, aerr := a.writeLatPath()
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	var req WriteLatRequest
	if !decode(w, r, &req) {
		return
	}
	req, err := req.Normalize()
	if err != nil {
		writeError(w, apiErr(KindBadRequest, "%v", err))
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		writeError(w, apiErr(KindConflict, "the agent is shutting down"))
		return
	}
	id := a.newID("rdma")
	j, err := startWriteLat(id, path, req, a.opts.Tools[WriteLatTool])
	if err != nil {
		writeError(w, err)
		return
	}
	a.rdma.add(id, j)
	a.rdma.trim(keepJobs, func(old *writeLatJob) bool { return old.snapshot().State != StateRunning })
	a.log.Info("ib_write_lat started", "id", id, "args", j.args)
	writeJSON(w, http.StatusAccepted, j.snapshot())
}

func (a *Agent) listWriteLat(w http.ResponseWriter, r *http.Request) {
	if _, aerr := a.writeLatPath(); aerr != nil {
		writeError(w, aerr)
		return
	}
	a.mu.Lock()
	jobs := a.rdma.list()
	a.mu.Unlock()
	out := struct {
		Jobs []WriteLatStatus `json:"jobs"`
	}{Jobs: []WriteLatStatus{}}
	for _, j := range jobs {
		out.Jobs = append(out.Jobs, j.snapshot())
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *Agent) writeLatJob(w http.ResponseWriter, r *http.Request) *writeLatJob {
	if _, aerr := a.writeLatPath(); aerr != nil {
		writeError(w, aerr)
		return nil
	}
	a.mu.Lock()
	j, ok := a.rdma.get(r.PathValue("id"))
	a.mu.Unlock()
	if !ok {
		writeError(w, apiErr(KindNotFound, "no rdma job %q", r.PathValue("id")))
	}
	return j
}

func (a *Agent) getWriteLat(w http.ResponseWriter, r *http.Request) {
	j := a.writeLatJob(w, r)
	if j == nil || !longPoll(w, r, j.done) {
		return
	}
	writeJSON(w, http.StatusOK, j.snapshot())
}

func (a *Agent) deleteWriteLat(w http.ResponseWriter, r *http.Request) {
	j := a.writeLatJob(w, r)
	if j == nil {
		return
	}
	j.cancel()
	<-j.done
	a.mu.Lock()
	a.rdma.remove(j.id)
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, j.snapshot())
}

// ---- helpers

// methods routes a path's requests by method; others get a JSON 405.
type methods map[string]http.HandlerFunc

func (m methods) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h, ok := m[r.Method]; ok {
		h(w, r)
		return
	}
	allowed := make([]string, 0, len(m))
	for k := range m {
		allowed = append(allowed, k)
	}
	slices.Sort(allowed)
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	writeError(w, apiErr(KindMethodNotAllowed, "%s %s: allowed: %s", r.Method, r.URL.Path, strings.Join(allowed, ", ")))
}

// longPoll waits, as ?wait= asks, for done or the end of the wait. It
// answers the request itself (and returns false) when wait is bad.
func longPoll(w http.ResponseWriter, r *http.Request, done <-chan struct{}) bool {
	s := r.URL.Query().Get("wait")
	if s == "" {
		return true
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		writeError(w, apiErr(KindBadRequest, "wait %q: want a duration such as 30s", s))
		return false
	}
	t := time.NewTimer(min(d, maxWait))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-r.Context().Done():
	}
	return true
}

// decode reads a JSON body into v; an empty body leaves v as it is. On a bad
// body it answers the request and returns false.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return true
	}
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err != nil {
		writeError(w, apiErr(KindBadRequest, "request body: %v", err))
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	var ae *APIError
	if !errors.As(err, &ae) {
		ae = apiErr(KindInternal, "%v", err)
	}
	writeJSON(w, cmp.Or(ae.Status, statusOf(ae.Kind)), errorBody{Error: ErrorInfo{Kind: ae.Kind, Message: ae.Message}})
}

// registry keeps items by id in the order they were added.
type registry[T any] struct {
	order []string
	items map[string]T
}

func (g *registry[T]) add(id string, v T) {
	if g.items == nil {
		g.items = map[string]T{}
	}
	g.order = append(g.order, id)
	g.items[id] = v
}

func (g *registry[T]) get(id string) (T, bool) {
	v, ok := g.items[id]
	return v, ok
}

func (g *registry[T]) remove(id string) {
	delete(g.items, id)
	g.order = slices.DeleteFunc(g.order, func(s string) bool { return s == id })
}

func (g *registry[T]) list() []T {
	out := make([]T, 0, len(g.order))
	for _, id := range g.order {
		out = append(out, g.items[id])
	}
	return out
}

// trim forgets the oldest items that may go until at most keep are left.
func (g *registry[T]) trim(keep int, mayGo func(T) bool) {
	for i := 0; len(g.order) > keep && i < len(g.order); {
		if id := g.order[i]; mayGo(g.items[id]) {
			g.remove(id)
			continue
		}
		i++
	}
}

// WriteSamplesCSV writes samples as the CSV of API.md (uncompressed).
func WriteSamplesCSV(w io.Writer, samples []Sample) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString("trial,conn,sched_ns,start_ns,fct_ns,retrans\n")
	var line []byte
	for _, s := range samples {
		line = strconv.AppendInt(line[:0], int64(s.Trial), 10)
		line = append(line, ',')
		line = strconv.AppendInt(line, int64(s.Conn), 10)
		line = append(line, ',')
		line = strconv.AppendInt(line, s.SchedNS, 10)
		line = append(line, ',')
		line = strconv.AppendInt(line, s.StartNS, 10)
		line = append(line, ',')
		line = strconv.AppendInt(line, s.FCTNS, 10)
		line = append(line, ',')
		if s.Retrans >= 0 {
			line = strconv.AppendInt(line, int64(s.Retrans), 10)
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadSamplesCSV reads the CSV that WriteSamplesCSV writes (uncompressed).
func ReadSamplesCSV(r io.Reader) ([]Sample, error) {
	sc := bufio.NewScanner(r)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("fct samples: empty")
	}
	if h := sc.Text(); h != "trial,conn,sched_ns,start_ns,fct_ns,retrans" {
		return nil, fmt.Errorf("fct samples: unexpected header %q", h)
	}
	var out []Sample
	for line := 2; sc.Scan(); line++ {
		f := strings.Split(sc.Text(), ",")
		if len(f) != 6 {
			return nil, fmt.Errorf("fct samples: line %d: %d fields, want 6", line, len(f))
		}
		var v [5]int64
		for i := range 5 {
			n, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("fct samples: line %d: %v", line, err)
			}
			v[i] = n
		}
		s := Sample{Trial: int(v[0]), Conn: int32(v[1]), SchedNS: v[2], StartNS: v[3], FCTNS: v[4], Retrans: -1}
		if f[5] != "" {
			n, err := strconv.ParseInt(f[5], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("fct samples: line %d: %v", line, err)
			}
			s.Retrans = int32(n)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}
