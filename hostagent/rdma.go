package hostagent

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// WriteLatTool is the perftest program behind /v1/rdma/write_lat.
const WriteLatTool = "ib_write_lat"

// Defaults of an ib_write_lat job.
const (
	DefaultWriteLatSize       = 143
	DefaultWriteLatIterations = 1000
	DefaultWriteLatTimeoutMS  = 600_000
)

// maxUnsortedIterations bounds a job that prints every sample: the agent
// keeps its output (about 20 bytes a sample) in memory.
const maxUnsortedIterations = 10_000_000

// Normalize fills in defaults and checks the request.
func (r WriteLatRequest) Normalize() (WriteLatRequest, error) {
	r.Size = cmp.Or(r.Size, DefaultWriteLatSize)
	r.Iterations = cmp.Or(r.Iterations, DefaultWriteLatIterations)
	r.TimeoutMS = cmp.Or(r.TimeoutMS, DefaultWriteLatTimeoutMS)
	switch r.Role {
	case RoleServer:
		if r.Server != "" {
			return r, errors.New("server: only for role \"client\"")
		}
	case RoleClient:
		if r.Server == "" {
			return r, errors.New("server: required for role \"client\"")
		}
		if strings.HasPrefix(r.Server, "-") || strings.ContainsAny(r.Server, " \t\n\x00") {
			return r, fmt.Errorf("server %q: not a host address", r.Server)
		}
	default:
		return r, fmt.Errorf("role %q: must be %q or %q", r.Role, RoleServer, RoleClient)
	}
	switch {
	case r.Size < 1 || r.Size > 1<<30:
		return r, fmt.Errorf("size %d: must be between 1 and %d", r.Size, 1<<30)
	case r.Iterations < 5 || r.Iterations > 1_000_000_000:
		return r, fmt.Errorf("iterations %d: must be between 5 and 1000000000", r.Iterations)
	case r.Unsorted && r.Iterations > maxUnsortedIterations:
		return r, fmt.Errorf("iterations %d: with unsorted at most %d (the agent keeps every sample)", r.Iterations, maxUnsortedIterations)
	case r.IBPort < 0 || r.IBPort > 255:
		return r, fmt.Errorf("ib_port %d: must be between 1 and 255", r.IBPort)
	case r.GIDIndex != nil && (*r.GIDIndex < 0 || *r.GIDIndex > 65535):
		return r, fmt.Errorf("gid_index %d: must be between 0 and 65535", *r.GIDIndex)
	case r.TCPPort < 0 || r.TCPPort > 65535:
		return r, fmt.Errorf("tcp_port %d: must be between 1 and 65535", r.TCPPort)
	case r.TimeoutMS < 1 || r.TimeoutMS > 24*3600_000:
		return r, fmt.Errorf("timeout_ms %d: must be between 1 and 86400000", r.TimeoutMS)
	case strings.HasPrefix(r.Device, "-") || strings.ContainsAny(r.Device, " \t\n\x00"):
		return r, fmt.Errorf("device %q: not a device name", r.Device)
	}
	for _, a := range r.ExtraArgs {
		if strings.ContainsRune(a, 0) {
			return r, fmt.Errorf("extra_args: %q holds a NUL byte", a)
		}
	}
	return r, nil
}

// Args are the tool's arguments for a normalized request, without the
// program name.
func (r WriteLatRequest) Args() []string {
	args := []string{"-s", strconv.Itoa(r.Size), "-n", strconv.Itoa(r.Iterations)}
	if r.Device != "" {
		args = append(args, "-d", r.Device)
	}
	if r.IBPort != 0 {
		args = append(args, "-i", strconv.Itoa(r.IBPort))
	}
	if r.GIDIndex != nil {
		args = append(args, "-x", strconv.Itoa(*r.GIDIndex))
	}
	if r.TCPPort != 0 {
		args = append(args, "-p", strconv.Itoa(r.TCPPort))
	}
	if r.Unsorted {
		args = append(args, "-U")
	}
	args = append(args, r.ExtraArgs...)
	if r.Role == RoleClient {
		args = append(args, r.Server)
	}
	return args
}

// latColumns are the columns perftest's latency tests print, as they appear
// in the table's header, with where each goes in a LatRow.
var latColumns = []struct {
	header string
	set    func(*LatRow, float64)
}{
	{"#bytes", func(r *LatRow, v float64) { r.Bytes = int64(v) }},
	{"#iterations", func(r *LatRow, v float64) { r.Iterations = int64(v) }},
	{"t_min[usec]", func(r *LatRow, v float64) { r.TMinUS = &v }},
	{"t_max[usec]", func(r *LatRow, v float64) { r.TMaxUS = &v }},
	{"t_typical[usec]", func(r *LatRow, v float64) { r.TTypicalUS = &v }},
	{"t_avg[usec]", func(r *LatRow, v float64) { r.TAvgUS = &v }},
	{"t_stdev[usec]", func(r *LatRow, v float64) { r.TStdevUS = &v }},
	{"99% percentile[usec]", func(r *LatRow, v float64) { r.P99US = &v }},
	{"99.9% percentile[usec]", func(r *LatRow, v float64) { r.P999US = &v }},
	{"tps average", func(r *LatRow, v float64) { r.TPSAvg = &v }},
	{"CPU_Util[%]", func(r *LatRow, v float64) { r.CPUUtilPct = &v }},
}

var latHeaderRE = func() *regexp.Regexp {
	alts := make([]string, len(latColumns))
	for i, c := range latColumns {
		alts[i] = strings.ReplaceAll(regexp.QuoteMeta(c.header), " ", `\s+`)
	}
	return regexp.MustCompile(strings.Join(alts, "|"))
}()

// ParseLatTable reads the result table of a perftest latency test
// (ib_write_lat, ib_send_lat, ib_read_lat) from the tool's output. It takes
// the header to learn the columns, so it reads both the old three-value
// table (t_min, t_max, t_typical), the current one (with t_avg, t_stdev and
// the 99 % and 99.9 % percentiles) and the duration mode's (t_avg, tps
// average); warnings printed inside the table are skipped.
func ParseLatTable(out []byte) (*WriteLatResult, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var cols []int // indexes into latColumns; nil outside a table
	res := &WriteLatResult{}
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		trimmed := strings.TrimSpace(text)
		if strings.Contains(text, "#bytes") && strings.Contains(text, "#iterations") {
			var err error
			if cols, err = latHeader(text); err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			continue
		}
		if cols == nil {
			continue
		}
		if strings.HasPrefix(trimmed, "---") {
			cols = nil // end of the table
			continue
		}
		fields := strings.Fields(trimmed)
		if len(fields) == 0 {
			continue
		}
		if _, err := strconv.ParseUint(fields[0], 10, 64); err != nil {
			continue // e.g. "Conflicting CPU frequency values detected: ..."
		}
		if len(fields) != len(cols) {
			return nil, fmt.Errorf("line %d: %d values under %d columns: %q", line, len(fields), len(cols), trimmed)
		}
		var row LatRow
		for i, f := range fields {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s %q: not a number", line, latColumns[cols[i]].header, f)
			}
			latColumns[cols[i]].set(&row, v)
		}
		res.Rows = append(res.Rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(res.Rows) == 0 {
		return nil, errors.New("no latency table in the output")
	}
	samples, err := parseLatSamples(out)
	if err != nil {
		return nil, err
	}
	res.SamplesUS = samples
	return res, nil
}

// parseLatSamples reads the per-iteration latencies perftest prints with
// -U (--report-unsorted) or -H (--report-histogram) before its table
// (print_report_lat, src/perftest_parameters.c): a line "#, usec" (or
// "#, cycles" with -C) and then one line "i, value" per iteration, i from
// 1. None printed: nil. A list whose numbering skips is an error.
func parseLatSamples(out []byte) ([]float64, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var samples []float64
	in := false
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "#, usec" || text == "#, cycles" {
			if samples != nil {
				return nil, fmt.Errorf("line %d: a second list of samples (-U and -H together?)", line)
			}
			in, samples = true, []float64{}
			continue
		}
		if !in {
			continue
		}
		i, v, ok := strings.Cut(text, ",")
		n, err := strconv.Atoi(strings.TrimSpace(i))
		if !ok || err != nil {
			in = false // the end of the list
			continue
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: sample %q: not a number", line, strings.TrimSpace(v))
		}
		if n != len(samples)+1 {
			return nil, fmt.Errorf("line %d: sample %d after %d", line, n, len(samples))
		}
		samples = append(samples, x)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if samples != nil && len(samples) == 0 {
		return nil, errors.New("an empty list of samples")
	}
	return samples, nil
}

// latHeader maps a table header to column indexes; a header with anything
// it does not know is an error, not a guess.
func latHeader(text string) ([]int, error) {
	var cols []int
	prev := 0
	for _, m := range latHeaderRE.FindAllStringIndex(text, -1) {
		if gap := strings.TrimSpace(text[prev:m[0]]); gap != "" {
			return nil, fmt.Errorf("unknown column %q in the table header", gap)
		}
		name := strings.Join(strings.Fields(text[m[0]:m[1]]), " ")
		for i, c := range latColumns {
			if c.header == name {
				cols = append(cols, i)
			}
		}
		prev = m[1]
	}
	if gap := strings.TrimSpace(text[prev:]); gap != "" {
		return nil, fmt.Errorf("unknown column %q in the table header", gap)
	}
	if len(cols) < 3 || cols[0] != 0 || cols[1] != 1 {
		return nil, fmt.Errorf("not a latency table header: %q", strings.TrimSpace(text))
	}
	return cols, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.buf)
}

// writeLatJob is one ib_write_lat process.
type writeLatJob struct {
	id     string
	req    WriteLatRequest
	args   []string
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	status WriteLatStatus
}

// outputShown is how much of the tool's output a status carries.
const outputShown = 64 << 10

// ToolFunc runs a tool in-process with its arguments (without the
// program name), writing what it prints to out, and returns when the tool
// would exit; an error is a non-zero exit. A simulated host's tools are.
type ToolFunc func(ctx context.Context, args []string, out io.Writer) error

// startWriteLat starts the tool at path for a normalized request, or runs
// tool in-process when it is not nil.
func startWriteLat(id, path string, req WriteLatRequest, tool ToolFunc) (*writeLatJob, error) {
	ctx, cancel := context.WithTimeoutCause(context.Background(), time.Duration(req.TimeoutMS)*time.Millisecond,
		fmt.Errorf("%s: killed after timeout_ms %d", WriteLatTool, req.TimeoutMS))
	args := req.Args()
	// With -U the tool prints a line per iteration (up to 20 bytes) before
	// its table: room for all of them.
	out := &tailBuffer{max: 1<<20 + 24*req.Iterations*btoi(req.Unsorted)}
	j := &writeLatJob{id: id, req: req, args: append([]string{WriteLatTool}, args...), cancel: cancel, done: make(chan struct{})}
	j.status = WriteLatStatus{ID: id, State: StateRunning, Role: req.Role, Args: j.args, StartedAt: time.Now().UTC()}
	var wait func() (int, error)
	if tool != nil {
		errc := make(chan error, 1)
		go func() { errc <- tool(ctx, args, out) }()
		wait = func() (int, error) {
			if err := <-errc; err != nil {
				return 1, err
			}
			return 0, nil
		}
	} else {
		cmd := exec.CommandContext(ctx, path, args...)
		cmd.Stdout, cmd.Stderr = out, out
		cmd.WaitDelay = 2 * time.Second
		ownProcessGroup(cmd)
		if err := cmd.Start(); err != nil {
			cancel()
			return nil, apiErr(KindFailed, "start %s: %v", WriteLatTool, err)
		}
		wait = func() (int, error) {
			err := cmd.Wait()
			return cmd.ProcessState.ExitCode(), err
		}
	}
	go func() {
		defer close(j.done)
		defer cancel()
		code, werr := wait()
		output := out.Bytes()
		j.mu.Lock()
		defer j.mu.Unlock()
		st := &j.status
		now := time.Now().UTC()
		st.FinishedAt = &now
		if code >= 0 {
			st.ExitCode = &code
		}
		st.Output = string(output[max(0, len(output)-outputShown):])
		res, perr := ParseLatTable(output)
		switch {
		case errors.Is(context.Cause(ctx), context.Canceled):
			st.State = StateCanceled
		case ctx.Err() != nil:
			st.State, st.Error = StateFailed, &ErrorInfo{Kind: KindFailed, Message: context.Cause(ctx).Error()}
		case werr != nil:
			st.State, st.Error = StateFailed, &ErrorInfo{Kind: KindFailed, Message: fmt.Sprintf("%s: %v", WriteLatTool, werr)}
		case perr != nil:
			st.State, st.Error = StateFailed, &ErrorInfo{Kind: KindFailed, Message: fmt.Sprintf("%s: %v", WriteLatTool, perr)}
		default:
			st.State, st.Result = StateDone, res
		}
	}()
	return j, nil
}

func (j *writeLatJob) snapshot() WriteLatStatus {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.status
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
