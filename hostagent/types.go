package hostagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// The JSON bodies of the API (API.md), shared by the server and Client.

// VersionInfo is the answer of GET /v1/version.
type VersionInfo struct {
	Name         string       `json:"name"`
	Version      string       `json:"version"`
	API          string       `json:"api"`
	OS           string       `json:"os"`
	Arch         string       `json:"arch"`
	Hostname     string       `json:"hostname"`
	Go           string       `json:"go"`
	Capabilities Capabilities `json:"capabilities"`
}

// Capabilities says what this agent can do on this host.
type Capabilities struct {
	FCT            bool `json:"fct"`
	TCPInfoRetrans bool `json:"tcp_info_retrans"`
	Counters       bool `json:"counters"`
	RDMAWriteLat   bool `json:"rdma_write_lat"`
}

// FCTServerRequest is the body of POST /v1/fct/server.
type FCTServerRequest struct {
	Listen string `json:"listen,omitempty"`
}

// FCTServerInfo describes a running (or just stopped) FCT server.
type FCTServerInfo struct {
	ID          string    `json:"id"`
	Listen      string    `json:"listen"`
	Port        int       `json:"port"`
	Connections int64     `json:"connections"`
	Requests    int64     `json:"requests"`
	StartedAt   time.Time `json:"started_at"`
}

// Modes of an FCT run.
const (
	ModeClosed = "closed"
	ModeOpen   = "open"
)

// FCTRunRequest is the body of POST /v1/fct/run. Zero fields take their
// defaults (see Normalize).
type FCTRunRequest struct {
	Target         string  `json:"target"`
	RequestSize    int     `json:"request_size,omitempty"`
	ResponseSize   int     `json:"response_size,omitempty"`
	Trials         int     `json:"trials,omitempty"`
	Warmup         int     `json:"warmup,omitempty"`
	Mode           string  `json:"mode,omitempty"`
	RatePerSec     float64 `json:"rate_per_sec,omitempty"`
	Connections    int     `json:"connections,omitempty"`
	Bind           string  `json:"bind,omitempty"`
	Seed           int64   `json:"seed,omitempty"`
	TrialTimeoutMS int     `json:"trial_timeout_ms,omitempty"`
	// Connection is "persistent" (the default: each connection carries
	// trial after trial) or "per-flow" (a new connection per trial,
	// closed after it, as LinkGuardian's artifact runs iperf per flow).
	Connection string `json:"connection,omitempty"`
}

// Connection kinds of an FCT run.
const (
	ConnPersistent = "persistent"
	ConnPerFlow    = "per-flow"
)

// FCT timings: what a sample's fct_ns measures.
const (
	// TimingApp: from just before the request's write to the answer's
	// last byte read, by the application.
	TimingApp = "app"
	// TimingFCT1: LinkGuardian's fct1, from the first data segment to the
	// first ACK covering every byte of the request, as the sender's own
	// capture of its socket's segments sees them (FlowCapture).
	TimingFCT1 = "fct1"
)

// Job states of FCT runs and RDMA jobs.
const (
	StateRunning  = "running"
	StateDone     = "done"
	StateFailed   = "failed"
	StateCanceled = "canceled"
)

// FCTRunStatus is the state of an FCT run.
type FCTRunStatus struct {
	ID         string        `json:"id"`
	State      string        `json:"state"`
	Request    FCTRunRequest `json:"request"`
	TrialsDone int64         `json:"trials_done"`
	StartedAt  time.Time     `json:"started_at"`
	FinishedAt *time.Time    `json:"finished_at,omitempty"`
	ElapsedMS  int64         `json:"elapsed_ms"`
	Summary    *FCTSummary   `json:"summary,omitempty"`
	// SamplesKept: the samples can be downloaded (done runs only).
	SamplesKept bool       `json:"samples_kept"`
	Error       *ErrorInfo `json:"error,omitempty"`
}

// FCTSummary is the distribution of a run's FCTs with what else the run saw.
type FCTSummary struct {
	Distribution
	LateTrials int            `json:"late_trials"`
	Retrans    RetransSummary `json:"retrans"`
	// Timing is what fct_ns measures: TimingApp or TimingFCT1 (per-flow
	// runs on connections that capture their segments).
	Timing string `json:"timing,omitempty"`
}

// RetransSummary counts the trials that saw a retransmission, where the
// operating system can tell.
type RetransSummary struct {
	Status   string `json:"status"` // "known" or "unknown"
	Trials   int    `json:"trials"`
	Segments int64  `json:"segments"`
	Reason   string `json:"reason,omitempty"`
}

// MarshalJSON leaves the counts out when they are unknown, rather than
// showing zeros that could be taken for a measurement.
func (r RetransSummary) MarshalJSON() ([]byte, error) {
	if r.Status != "known" {
		return json.Marshal(struct {
			Status string `json:"status"`
			Reason string `json:"reason,omitempty"`
		}{r.Status, r.Reason})
	}
	type plain RetransSummary
	return json.Marshal(plain(r))
}

// Sample is one recorded FCT trial. Times are nanoseconds after the run's
// start; Retrans is -1 when unknown.
type Sample struct {
	Trial   int
	Conn    int32
	Retrans int32
	SchedNS int64
	StartNS int64
	FCTNS   int64
}

// Roles of an ib_write_lat job.
const (
	RoleServer = "server"
	RoleClient = "client"
)

// WriteLatRequest is the body of POST /v1/rdma/write_lat.
type WriteLatRequest struct {
	Role       string   `json:"role"`
	Server     string   `json:"server,omitempty"`
	Size       int      `json:"size,omitempty"`
	Iterations int      `json:"iterations,omitempty"`
	Device     string   `json:"device,omitempty"`
	IBPort     int      `json:"ib_port,omitempty"`
	GIDIndex   *int     `json:"gid_index,omitempty"`
	TCPPort    int      `json:"tcp_port,omitempty"`
	ExtraArgs  []string `json:"extra_args,omitempty"`
	TimeoutMS  int      `json:"timeout_ms,omitempty"`
	// Unsorted asks for every iteration's latency (perftest's -U,
	// --report-unsorted): the result's samples_us, in the order they ran.
	Unsorted bool `json:"unsorted,omitempty"`
}

// WriteLatStatus is the state of an ib_write_lat job.
type WriteLatStatus struct {
	ID         string          `json:"id"`
	State      string          `json:"state"`
	Role       string          `json:"role"`
	Args       []string        `json:"args"`
	StartedAt  time.Time       `json:"started_at"`
	FinishedAt *time.Time      `json:"finished_at,omitempty"`
	ExitCode   *int            `json:"exit_code,omitempty"`
	Result     *WriteLatResult `json:"result,omitempty"`
	Output     string          `json:"output,omitempty"`
	Error      *ErrorInfo      `json:"error,omitempty"`
}

// WriteLatResult is the parsed latency table of perftest.
type WriteLatResult struct {
	Rows []LatRow `json:"rows"`
	// SamplesUS are the per-iteration latencies perftest printed with -U
	// (--report-unsorted): iterations - 1 of them, each the time between
	// two successive posts, halved for WRITE (one round trip / 2), in the
	// order they ran.
	SamplesUS []float64 `json:"samples_us,omitempty"`
}

// LatRow is one row of a perftest latency table; columns the tool did not
// print are nil.
type LatRow struct {
	Bytes      int64    `json:"bytes"`
	Iterations int64    `json:"iterations"`
	TMinUS     *float64 `json:"t_min_us,omitempty"`
	TMaxUS     *float64 `json:"t_max_us,omitempty"`
	TTypicalUS *float64 `json:"t_typical_us,omitempty"`
	TAvgUS     *float64 `json:"t_avg_us,omitempty"`
	TStdevUS   *float64 `json:"t_stdev_us,omitempty"`
	P99US      *float64 `json:"p99_us,omitempty"`
	P999US     *float64 `json:"p99_9_us,omitempty"`
	TPSAvg     *float64 `json:"tps_avg,omitempty"`
	CPUUtilPct *float64 `json:"cpu_util_pct,omitempty"`
}

// Error kinds of the API.
const (
	KindBadRequest       = "bad_request"
	KindNotFound         = "not_found"
	KindMethodNotAllowed = "method_not_allowed"
	KindConflict         = "conflict"
	KindNotAvailable     = "not_available"
	KindFailed           = "failed"
	KindInternal         = "internal"
)

// ErrorInfo is the body of an API error and the error of a failed job.
type ErrorInfo struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// errorBody is the envelope of an error response.
type errorBody struct {
	Error ErrorInfo `json:"error"`
}

// APIError is an error answered by the agent (or a failed job's error).
type APIError struct {
	Status  int // HTTP status; 0 for the error of a failed job
	Kind    string
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("hostagent: %s: %s", e.Kind, e.Message)
}

// ErrNotAvailable matches (errors.Is) any error of kind not_available.
var ErrNotAvailable = errors.New("not available on this host")

// Is makes errors.Is(err, ErrNotAvailable) true for not_available errors.
func (e *APIError) Is(target error) bool {
	return target == ErrNotAvailable && e.Kind == KindNotAvailable
}

// statusOf is the HTTP status of an error kind.
func statusOf(kind string) int {
	switch kind {
	case KindBadRequest:
		return http.StatusBadRequest
	case KindNotFound:
		return http.StatusNotFound
	case KindMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case KindConflict:
		return http.StatusConflict
	case KindNotAvailable:
		return http.StatusNotImplemented
	default:
		return http.StatusInternalServerError
	}
}

// apiErr builds an APIError of a kind with its HTTP status.
func apiErr(kind, format string, args ...any) *APIError {
	return &APIError{Status: statusOf(kind), Kind: kind, Message: fmt.Sprintf(format, args...)}
}
