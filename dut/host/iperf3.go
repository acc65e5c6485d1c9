package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Iperf3Flow is one client run of iperf3 (esnet/iperf, version 3): a bulk
// TCP flow to Dst for Seconds (-t) or until it has written Bytes (-n),
// reported every Interval, with congestion control CC (iperf3 -C, Linux
// only), the server's report included.
type Iperf3Flow struct {
	Dst      netip.Addr
	Seconds  int64
	Bytes    int64
	Interval time.Duration
	CC       string
}

// Command is the flow's command line, with JSON output (-J) and the
// server's own intervals (--get-server-output), as iperf3(1) spells them.
func (f Iperf3Flow) Command() string {
	end := fmt.Sprintf("-t %d", f.Seconds)
	if f.Bytes > 0 {
		end = fmt.Sprintf("-n %d", f.Bytes)
	}
	return fmt.Sprintf("iperf3 -c %s %s -i %g -C %s -J --get-server-output", f.Dst, end, f.Interval.Seconds(), f.CC)
}

// Check says what iperf3 would refuse: -t takes whole seconds, a flow
// ends by time or by bytes, not both ("only one test end condition (-t,
// -n, -k) may be specified"), and it refuses a report interval (-i) below
// 0.1 s.
func (f Iperf3Flow) Check() error {
	switch {
	case f.Seconds > 0 && f.Bytes > 0:
		return fmt.Errorf("iperf3 -t %d -n %d: only one test end condition may be specified", f.Seconds, f.Bytes)
	case f.Bytes < 0:
		return fmt.Errorf("iperf3 -n %d: expected a count of bytes", f.Bytes)
	case f.Bytes == 0 && f.Seconds <= 0:
		return fmt.Errorf("iperf3 -t %d: expected whole seconds, at least 1", f.Seconds)
	}
	if f.Interval < 100*time.Millisecond {
		return fmt.Errorf("iperf3 -i %v: iperf3 reports at most every 0.1 s", f.Interval)
	}
	return nil
}

// Iperf3Interval is one interval of a side's report.
type Iperf3Interval struct {
	Sum struct {
		Start, End  float64
		Bytes       int64
		Retransmits int64 // the sender's; 0 at the server
	}
}

// Iperf3Report is what is read of iperf3's -J output: the client's
// intervals, its totals, and the server's intervals.
type Iperf3Report struct {
	Intervals []Iperf3Interval
	End       struct {
		SumSent struct {
			Bytes       int64
			Retransmits int64
		} `json:"sum_sent"`
	}
	Server *struct {
		Intervals []Iperf3Interval
	} `json:"server_output_json"`
	Error string
}

// ServerIntervals are the server's intervals, none when it sent no report.
func (r Iperf3Report) ServerIntervals() []Iperf3Interval {
	if r.Server == nil {
		return nil
	}
	return r.Server.Intervals
}

// ParseIperf3JSON reads iperf3's -J output; an "error" it reports is an
// error.
func ParseIperf3JSON(out string) (Iperf3Report, error) {
	var r Iperf3Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return r, fmt.Errorf("iperf3 -J output: %w", err)
	}
	if r.Error != "" {
		return r, fmt.Errorf("iperf3: %s", r.Error)
	}
	return r, nil
}

// Iperf3 runs the flow on the host (the client end; the receiving host
// runs the server) and returns its report once it ends.
func (h *Host) Iperf3(ctx context.Context, f Iperf3Flow) (Iperf3Report, error) {
	if err := f.Check(); err != nil {
		return Iperf3Report{}, fmt.Errorf("%s: %w", h.name, err)
	}
	r, err := h.Run(ctx, f.Command())
	if err != nil {
		return Iperf3Report{}, fmt.Errorf("%s: %s: %w %s", h.name, f.Command(), err, strings.TrimSpace(r.Stderr))
	}
	rep, err := ParseIperf3JSON(r.Stdout)
	if err != nil {
		return rep, fmt.Errorf("%s: %w", h.name, err)
	}
	return rep, nil
}

// Iperf3Running says whether an iperf3 process runs on the host (pgrep -x
// iperf3; its exit status 1 is "none").
func (h *Host) Iperf3Running(ctx context.Context) (bool, error) {
	r, err := h.Run(ctx, "pgrep -x iperf3")
	var xe *ExitError
	if errors.As(err, &xe) && xe.Status == 1 {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: pgrep -x iperf3: %w", h.name, err)
	}
	return strings.TrimSpace(r.Stdout) != "", nil
}
