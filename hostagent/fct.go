package hostagent

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The FCT wire protocol (API.md): a request is request_size bytes, the first
// eight of which are two big-endian uint32, request_size and response_size;
// the answer is response_size bytes.
const (
	fctHeaderSize = 8
	maxFCTSize    = 64 << 20
	chunkSize     = 64 << 10
)

// Defaults and limits of an FCT run.
const (
	DefaultRequestSize    = 143
	DefaultResponseSize   = 1
	DefaultTrials         = 300_000
	DefaultTrialTimeoutMS = 10_000
	maxTrials             = 10_000_000
	maxConnections        = 1024
	// lateThreshold: an open-loop trial that starts later than this after
	// its scheduled time counts as late.
	lateThreshold = 100 * time.Microsecond
)

// DialFunc opens a connection; net.Dialer.DialContext is one.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// ListenFunc opens a listener; net.ListenConfig.Listen is one.
type ListenFunc func(ctx context.Context, network, address string) (net.Listener, error)

// RetransCounter is implemented by connections that are not kernel sockets
// (e.g. simulated ones) and can say how many segments they retransmitted so
// far, as Linux's tcpi_total_retrans does for a socket.
type RetransCounter interface {
	TotalRetrans() (uint32, error)
}

// FlowCapture is implemented by connections that capture their own
// segments (simulated ones): FCT1 is LinkGuardian's fct1 of the flow the
// connection carried first (its request), from the first data segment to
// the first ACK covering all of it, as a capture at the sender sees them
// (the artifact's tcpdump on the sender, fct_expt_tcp/calculate_fcts.py).
// dataRetrans are the data segments the capture saw sent again (a SYN sent
// again is not data). ok is false until that ACK has come.
type FlowCapture interface {
	FCT1() (d time.Duration, dataRetrans int, ok bool)
}

// Normalize fills in defaults and checks the request.
func (r FCTRunRequest) Normalize() (FCTRunRequest, error) {
	if r.Target == "" {
		return r, errors.New("target: required (host:port of an FCT server)")
	}
	if _, _, err := net.SplitHostPort(r.Target); err != nil {
		return r, fmt.Errorf("target %q: %v", r.Target, err)
	}
	r.RequestSize = cmp.Or(r.RequestSize, DefaultRequestSize)
	r.ResponseSize = cmp.Or(r.ResponseSize, DefaultResponseSize)
	r.Trials = cmp.Or(r.Trials, DefaultTrials)
	r.Mode = cmp.Or(r.Mode, ModeClosed)
	r.Seed = cmp.Or(r.Seed, 1)
	r.TrialTimeoutMS = cmp.Or(r.TrialTimeoutMS, DefaultTrialTimeoutMS)
	r.Connection = cmp.Or(r.Connection, ConnPersistent)
	switch r.Connection {
	case ConnPersistent:
	case ConnPerFlow:
		if r.Mode == ModeOpen || r.Connections > 1 {
			return r, fmt.Errorf("connection %q: closed loop on one connection at a time only (mode %q, connections %d)", r.Connection, r.Mode, r.Connections)
		}
	default:
		return r, fmt.Errorf("connection %q: must be %q or %q", r.Connection, ConnPersistent, ConnPerFlow)
	}
	switch {
	case r.RequestSize < fctHeaderSize || r.RequestSize > maxFCTSize:
		return r, fmt.Errorf("request_size %d: must be between %d and %d", r.RequestSize, fctHeaderSize, maxFCTSize)
	case r.ResponseSize < 1 || r.ResponseSize > maxFCTSize:
		return r, fmt.Errorf("response_size %d: must be between 1 and %d", r.ResponseSize, maxFCTSize)
	case r.Trials < 1 || r.Trials > maxTrials:
		return r, fmt.Errorf("trials %d: must be between 1 and %d", r.Trials, maxTrials)
	case r.Warmup < 0 || r.Warmup > maxTrials:
		return r, fmt.Errorf("warmup %d: must be between 0 and %d", r.Warmup, maxTrials)
	case r.TrialTimeoutMS < 1 || r.TrialTimeoutMS > 3_600_000:
		return r, fmt.Errorf("trial_timeout_ms %d: must be between 1 and 3600000", r.TrialTimeoutMS)
	}
	switch r.Mode {
	case ModeClosed:
		if r.RatePerSec != 0 {
			return r, errors.New("rate_per_sec: only for mode \"open\"")
		}
		r.Connections = cmp.Or(r.Connections, 1)
	case ModeOpen:
		if !(r.RatePerSec > 0) || r.RatePerSec > 1e8 {
			return r, fmt.Errorf("rate_per_sec %v: mode \"open\" needs a rate above 0 and at most 1e8", r.RatePerSec)
		}
		r.Connections = cmp.Or(r.Connections, 16)
	default:
		return r, fmt.Errorf("mode %q: must be %q or %q", r.Mode, ModeClosed, ModeOpen)
	}
	if r.Connections < 1 || r.Connections > maxConnections {
		return r, fmt.Errorf("connections %d: must be between 1 and %d", r.Connections, maxConnections)
	}
	if r.Bind != "" && net.ParseIP(r.Bind) == nil {
		return r, fmt.Errorf("bind %q: not an IP address", r.Bind)
	}
	return r, nil
}

// FCTResult is what an FCT run measured.
type FCTResult struct {
	Samples []Sample // in order of start
	Summary FCTSummary
}

// Clock is a monotonic clock: the time since some fixed origin, never going
// back. FCT trials are timed on it.
type Clock func() time.Duration

// RealClock is the host's monotonic clock (time.Since of a time taken when
// it is made).
func RealClock() Clock {
	origin := time.Now()
	return func() time.Duration { return time.Since(origin) }
}

// ErrOpenLoopClock is the error of an open-loop run on a clock other than
// the real one: its arrivals are waited for on real timers, and a simulated
// clock moves only with the trials.
var ErrOpenLoopClock = errors.New("mode \"open\" waits for its arrivals on real timers; this agent times trials on a simulated clock, so only closed-loop runs are possible")

// RunFCT runs the trials of req (normalized) against an FCT server. dial nil
// means a net.Dialer (bound to req.Bind if set). done, if not nil, counts
// finished trials as they finish. Canceling ctx closes the connections.
func RunFCT(ctx context.Context, req FCTRunRequest, dial DialFunc, done *atomic.Int64) (*FCTResult, error) {
	return RunFCTClock(ctx, req, dial, nil, done)
}

// RunFCTClock is RunFCT with the trials timed on clock (nil: RealClock).
// Only closed-loop runs may use another clock than the real one
// (ErrOpenLoopClock).
func RunFCTClock(ctx context.Context, req FCTRunRequest, dial DialFunc, clock Clock, done *atomic.Int64) (*FCTResult, error) {
	req, err := req.Normalize()
	if err != nil {
		return nil, err
	}
	if clock == nil {
		clock = RealClock()
	} else if req.Mode == ModeOpen {
		return nil, ErrOpenLoopClock
	}
	if dial == nil {
		d := &net.Dialer{Timeout: 10 * time.Second}
		if req.Bind != "" {
			d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(req.Bind)}
		}
		dial = d.DialContext
	}
	if done == nil {
		done = new(atomic.Int64)
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	request := make([]byte, req.RequestSize)
	binary.BigEndian.PutUint32(request[0:4], uint32(req.RequestSize))
	binary.BigEndian.PutUint32(request[4:8], uint32(req.ResponseSize))
	if req.Connection == ConnPerFlow {
		return runPerFlow(ctx, parent, req, dial, clock, done, request)
	}

	conns := make([]*fctConn, 0, req.Connections)
	defer func() {
		for _, fc := range conns {
			fc.c.Close()
		}
	}()
	for i := range req.Connections {
		c, err := dial(ctx, "tcp", req.Target)
		if err != nil {
			return nil, fmt.Errorf("connect %d to %s: %w", i, req.Target, err)
		}
		conns = append(conns, newFCTConn(c, int32(i), request, req.ResponseSize, time.Duration(req.TrialTimeoutMS)*time.Millisecond, clock))
	}
	// Closing the connections is what interrupts a trial blocked on I/O.
	stop := context.AfterFunc(ctx, func() {
		for _, fc := range conns {
			fc.c.Close()
		}
	})
	defer stop()

	r := &fctRunner{req: req, conns: conns, done: done, samples: make([]Sample, req.Trials), clock: clock}
	if err := r.warmup(); err != nil {
		return nil, cause(parent, err)
	}
	r.base = clock()
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	fail := func(err error) {
		once.Do(func() { firstErr = err; cancel() })
	}
	var next atomic.Int64 // closed loop: the next trial to claim
	var schedule []int64
	var arrivals chan int // open loop: trials, each at its arrival time
	if req.Mode == ModeOpen {
		schedule = poissonSchedule(req.Trials, req.RatePerSec, req.Seed)
		arrivals = make(chan int, min(req.Trials, 1<<16))
		wg.Go(func() { r.dispatch(ctx, schedule, arrivals) })
	}
	for _, fc := range conns {
		wg.Go(func() {
			if err := r.worker(fc, &next, schedule, arrivals); err != nil {
				fail(err)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, cause(parent, firstErr)
	}
	if err := parent.Err(); err != nil {
		return nil, context.Cause(parent)
	}
	return r.result(), nil
}

// cause prefers the caller's context's error, when it ended, over the I/O
// error that closing the connections provoked.
func cause(parent context.Context, err error) error {
	if parent.Err() != nil && !errors.Is(err, errTrialTimeout) {
		return context.Cause(parent)
	}
	return err
}

var errTrialTimeout = errors.New("trial timeout")

type fctRunner struct {
	req     FCTRunRequest
	conns   []*fctConn
	done    *atomic.Int64
	samples []Sample
	clock   Clock
	base    time.Duration // the clock at the start of the recorded trials
}

func (r *fctRunner) warmup() error {
	var wg sync.WaitGroup
	errs := make([]error, len(r.conns))
	for i, fc := range r.conns {
		wg.Go(func() {
			for range r.req.Warmup {
				if _, err := fc.trial(r.clock()); err != nil {
					errs[i] = fmt.Errorf("warm-up: %w", err)
					return
				}
			}
			if r.req.Warmup > 0 {
				fc.resetRetrans()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// worker runs trials on one connection. In closed loop it claims the next
// trial as soon as it is free; in open loop it takes the next trial that has
// arrived, so an arrival goes to whichever connection is free and never
// queues behind a slow trial on another one. It starts late only when every
// connection is busy.
func (r *fctRunner) worker(fc *fctConn, next *atomic.Int64, schedule []int64, arrivals <-chan int) error {
	for {
		var i int
		if arrivals != nil {
			var ok bool
			if i, ok = <-arrivals; !ok {
				return nil
			}
		} else if i = int(next.Add(1) - 1); i >= r.req.Trials {
			return nil
		}
		s, err := fc.trial(r.base)
		if err != nil {
			return fmt.Errorf("trial %d: %w", i, err)
		}
		s.SchedNS = s.StartNS
		if schedule != nil {
			s.SchedNS = schedule[i]
		}
		r.samples[i] = s
		r.done.Add(1)
	}
}

// dispatch releases the open loop's trials at their arrival times. One
// goroutine waits for all of them, so a connection's worker wakes once per
// trial, for the trial.
func (r *fctRunner) dispatch(ctx context.Context, schedule []int64, arrivals chan<- int) {
	defer close(arrivals)
	sl := newShortSleeper()
	defer sl.close()
	for i, at := range schedule {
		if waitUntil(ctx, sl, r.clock, r.base+time.Duration(at)) != nil {
			return
		}
		select {
		case arrivals <- i:
		case <-ctx.Done():
			return
		}
	}
}

// poissonSchedule returns the arrival times (ns after the start) of n
// trials arriving as a Poisson process of the given rate.
func poissonSchedule(n int, ratePerSec float64, seed int64) []int64 {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6a09e667f3bcc909))
	meanGapNS := 1e9 / ratePerSec
	out := make([]int64, n)
	var t float64
	for i := range out {
		t += rng.ExpFloat64() * meanGapNS
		out[i] = int64(t)
	}
	return out
}

// waitUntil waits until the clock (the real one) reads at. The Go
// runtime's timers round short sleeps up to about a millisecond on Linux, so
// the last two milliseconds are slept with sl where there is one. It neither
// spins nor yields in a loop: either would take a P from the goroutines
// waiting for responses and add scheduling delay to the FCTs being measured.
func waitUntil(ctx context.Context, sl *shortSleeper, clock Clock, at time.Duration) error {
	const timerAbove = 2 * time.Millisecond
	for {
		wait := at - clock()
		if wait <= 0 {
			return nil
		}
		if wait <= timerAbove && sl.sleep(wait) {
			continue
		}
		d := wait - timerAbove*3/4 // wake with the last stretch left
		if wait <= timerAbove {
			d = wait // no short sleeper here
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (r *fctRunner) result() *FCTResult {
	samples := r.samples
	slices.SortStableFunc(samples, func(a, b Sample) int { return cmp.Compare(a.StartNS, b.StartNS) })
	fcts := make([]int64, len(samples))
	sum := FCTSummary{Retrans: RetransSummary{Status: "known"}, Timing: TimingApp}
	for i := range samples {
		s := &samples[i]
		s.Trial = i
		fcts[i] = s.FCTNS
		if time.Duration(s.StartNS-s.SchedNS) > lateThreshold {
			sum.LateTrials++
		}
		if s.Retrans > 0 {
			sum.Retrans.Trials++
			sum.Retrans.Segments += int64(s.Retrans)
		}
	}
	for _, fc := range r.conns {
		if fc.retrans == nil {
			sum.Retrans = RetransSummary{Status: "unknown", Reason: fc.retransWhy}
			break
		}
	}
	sum.Distribution = Distribute(fcts)
	return &FCTResult{Samples: samples, Summary: sum}
}

// fctConn is one persistent client connection.
type fctConn struct {
	c          net.Conn
	id         int32
	request    []byte
	respSize   int
	buf        []byte
	timeout    time.Duration
	retrans    func() (uint32, error) // nil: unknown
	retransWhy string
	last       uint32
	clock      Clock
}

func newFCTConn(c net.Conn, id int32, request []byte, respSize int, timeout time.Duration, clock Clock) *fctConn {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	fc := &fctConn{c: c, id: id, request: request, respSize: respSize, buf: make([]byte, min(respSize, chunkSize)), timeout: timeout, clock: clock}
	if rc, ok := c.(RetransCounter); ok {
		fc.retrans = rc.TotalRetrans
	} else {
		fc.retrans, fc.retransWhy = socketRetrans(c)
	}
	fc.resetRetrans()
	return fc
}

// resetRetrans takes the connection's retransmission count as the new zero.
func (fc *fctConn) resetRetrans() {
	if fc.retrans == nil {
		return
	}
	n, err := fc.retrans()
	if err != nil {
		fc.retrans, fc.retransWhy = nil, err.Error()
		return
	}
	fc.last = n
}

// trial runs one request/response. The FCT runs from just before the
// request's write to just after the response's last byte is read, on the
// run's clock (the real monotonic one unless the agent was given another).
// base is the clock's reading at the start of the run; the deadline is
// always on the real clock.
func (fc *fctConn) trial(base time.Duration) (Sample, error) {
	fc.c.SetDeadline(time.Now().Add(fc.timeout))
	t0 := fc.clock()
	if _, err := fc.c.Write(fc.request); err != nil {
		return Sample{}, fc.ioErr("write request", err)
	}
	if fc.respSize <= len(fc.buf) {
		if _, err := io.ReadFull(fc.c, fc.buf[:fc.respSize]); err != nil {
			return Sample{}, fc.ioErr("read response", err)
		}
	} else {
		for left := fc.respSize; left > 0; {
			n, err := fc.c.Read(fc.buf[:min(left, len(fc.buf))])
			left -= n
			if err != nil && left > 0 {
				return Sample{}, fc.ioErr("read response", err)
			}
		}
	}
	t1 := fc.clock()
	s := Sample{Conn: fc.id, Retrans: -1, StartNS: int64(t0 - base), FCTNS: int64(t1 - t0)}
	if fc.retrans != nil {
		n, err := fc.retrans()
		if err != nil {
			fc.retrans, fc.retransWhy = nil, err.Error()
		} else {
			s.Retrans = int32(n - fc.last)
			fc.last = n
		}
	}
	return s, nil
}

func (fc *fctConn) ioErr(what string, err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("connection %d: %s: no answer within the trial timeout %v: %w", fc.id, what, fc.timeout, errTrialTimeout)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("connection %d: %s: server closed the connection", fc.id, what)
	}
	// A server that closes with our request still unread in its socket
	// makes its kernel answer with a reset, not a FIN: the same hang-up,
	// seen as ECONNRESET (or EPIPE on a write after it).
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("connection %d: %s: server closed the connection (%v)", fc.id, what, err)
	}
	return fmt.Errorf("connection %d: %s: %w", fc.id, what, err)
}

// FCTServer answers FCT requests on a listener until closed.
type FCTServer struct {
	ln        net.Listener
	log       *slog.Logger
	started   time.Time
	requests  atomic.Int64
	open      atomic.Int64
	zeros     []byte
	mu        sync.Mutex
	conns     map[net.Conn]struct{}
	closed    bool
	wg        sync.WaitGroup
	closeOnce sync.Once
	// readers are the connections' read buffers, kept for the next: a
	// run of per-flow trials opens a connection per trial (1.2 million in
	// fct's default run), and a fresh 64 KB buffer for each was most of
	// what the run allocated (75 GB).
	readers sync.Pool
}

// ServeFCT starts answering FCT requests on ln. log may be nil.
func ServeFCT(ln net.Listener, log *slog.Logger) *FCTServer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &FCTServer{ln: ln, log: log, started: time.Now(), zeros: make([]byte, chunkSize), conns: map[net.Conn]struct{}{}}
	s.wg.Go(s.accept)
	return s
}

// Addr is the listener's address.
func (s *FCTServer) Addr() net.Addr { return s.ln.Addr() }

// Stats returns the connections open now and the requests answered so far.
func (s *FCTServer) Stats() (open, requests int64) { return s.open.Load(), s.requests.Load() }

// Started is when the server started.
func (s *FCTServer) Started() time.Time { return s.started }

// Close stops accepting, closes every connection and waits for them.
func (s *FCTServer) Close() error {
	var err error
	s.closeOnce.Do(func() {
		err = s.ln.Close()
		s.mu.Lock()
		s.closed = true
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return err
}

func (s *FCTServer) accept() {
	backoff := 5 * time.Millisecond
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("fct server: accept", "addr", s.ln.Addr().String(), "err", err)
			time.Sleep(backoff) // e.g. out of file descriptors
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.open.Add(1)
		s.wg.Go(func() {
			defer func() {
				c.Close()
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				s.open.Add(-1)
			}()
			if err := s.serve(c); err != nil && !errors.Is(err, net.ErrClosed) {
				s.log.Debug("fct server: connection ends", "remote", c.RemoteAddr().String(), "err", err)
			}
		})
	}
}

// serve answers the requests of one connection until it closes.
func (s *FCTServer) serve(c net.Conn) error {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	br, _ := s.readers.Get().(*bufio.Reader)
	if br == nil {
		br = bufio.NewReaderSize(c, chunkSize)
	} else {
		br.Reset(c)
	}
	defer func() {
		br.Reset(nil)
		s.readers.Put(br)
	}()
	var hdr [fctHeaderSize]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		reqSize := int(binary.BigEndian.Uint32(hdr[0:4]))
		respSize := int(binary.BigEndian.Uint32(hdr[4:8]))
		if reqSize < fctHeaderSize || reqSize > maxFCTSize || respSize < 1 || respSize > maxFCTSize {
			return fmt.Errorf("bad request header: request_size %d response_size %d", reqSize, respSize)
		}
		if _, err := br.Discard(reqSize - fctHeaderSize); err != nil {
			return err
		}
		for left := respSize; left > 0; {
			n := min(left, len(s.zeros))
			if _, err := c.Write(s.zeros[:n]); err != nil {
				return err
			}
			left -= n
		}
		s.requests.Add(1)
	}
}
