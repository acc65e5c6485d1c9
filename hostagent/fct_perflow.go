package hostagent

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// runPerFlow runs req's trials each on a new connection (connect, one
// request and its answer, close), as LinkGuardian's artifact runs one
// iperf client per flow (switch_impl/expt_scripts/fct_expt_tcp/
// run_expt.sh: iperf -c ... -n 143 -N -Z dctcp, 1,000 flows a run).
// The handshake is not in a trial's FCT: timing starts after connect().
// Where the connection captures its own segments (FlowCapture), fct_ns
// is fct1 and retrans the data segments sent again; on a kernel socket
// fct_ns is fct1 from the kernel's transmit and ACK timestamps
// (tstamp_linux.go) and retrans the socket's TCP_INFO count (SYNs sent
// again included); where neither can be had, fct_ns is the application's
// request-to-answer time. The summary's timing says which.
func runPerFlow(ctx, parent context.Context, req FCTRunRequest, dial DialFunc, clock Clock, done *atomic.Int64, request []byte) (*FCTResult, error) {
	timeout := time.Duration(req.TrialTimeoutMS) * time.Millisecond
	timing := ""
	kernel := true // try kernel timestamps until a connection cannot give them
	one := func(i int, base time.Duration) (Sample, error) {
		dctx, cancel := context.WithTimeout(ctx, timeout)
		c, err := dial(dctx, "tcp", req.Target)
		cancel()
		if err != nil {
			return Sample{}, fmt.Errorf("trial %d: connect to %s: %w", i, req.Target, err)
		}
		defer c.Close()
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
		fc := newFCTConn(c, 0, request, req.ResponseSize, timeout, clock)
		_, captured := c.(FlowCapture)
		var ks *kernelStamps
		if !captured && kernel {
			ks, _ = armKernelStamps(c)
		}
		wrote := time.Now()
		s, err := fc.trial(base)
		if err != nil {
			return Sample{}, fmt.Errorf("trial %d: %w", i, cause(parent, err))
		}
		t := TimingApp
		if ks != nil {
			d, err := ks.fct1(len(request), wrote)
			switch {
			case err == nil:
				s.FCTNS, t = int64(d), TimingFCT1
			case timing == "":
				kernel = false // this host cannot: the run is timed by the application
			default:
				return Sample{}, fmt.Errorf("trial %d: kernel timestamps: %w", i, err)
			}
		}
		if cp, ok := c.(FlowCapture); ok {
			d, retrans, ok := cp.FCT1()
			if !ok {
				return Sample{}, fmt.Errorf("trial %d: the connection's capture has no ACK covering the request", i)
			}
			// The capture tells data from SYNs: retrans counts what
			// delayed fct1, as the artifact's sender trace does.
			s.FCTNS, s.Retrans, t = int64(d), int32(retrans), TimingFCT1
		}
		if timing == "" {
			timing = t
		} else if timing != t {
			return Sample{}, fmt.Errorf("trial %d: timed by %s after trials timed by %s", i, t, timing)
		}
		return s, nil
	}
	for i := range req.Warmup {
		if _, err := one(i, clock()); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	r := &fctRunner{req: req, done: done, samples: make([]Sample, req.Trials), clock: clock}
	r.base = clock()
	for i := range req.Trials {
		s, err := one(i, r.base)
		if err != nil {
			if perr := parent.Err(); perr != nil {
				return nil, context.Cause(parent)
			}
			return nil, err
		}
		s.SchedNS = s.StartNS
		r.samples[i] = s
		done.Add(1)
	}
	res := r.result()
	res.Summary.Timing = timing
	for _, s := range res.Samples {
		if s.Retrans < 0 {
			res.Summary.Retrans = RetransSummary{Status: "unknown", Reason: "a connection could not say"}
			break
		}
	}
	return res, nil
}
