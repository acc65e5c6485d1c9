package hostagent

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// listenLoopback listens on 127.0.0.1 and closes the listener at the end.
func listenLoopback(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	return ln
}

// startServer serves FCT on loopback until the test ends.
func startServer(tb testing.TB) *FCTServer {
	tb.Helper()
	s := ServeFCT(listenLoopback(tb), nil)
	tb.Cleanup(func() { s.Close() })
	return s
}

// slowServer speaks the FCT protocol and holds the answer to its slowAt-th
// request (counted over all connections, from 1) for hold.
func slowServer(tb testing.TB, slowAt int64, hold time.Duration) string {
	tb.Helper()
	ln := listenLoopback(tb)
	var n atomic.Int64
	var wg sync.WaitGroup
	tb.Cleanup(wg.Wait)
	var mu sync.Mutex
	var conns []net.Conn
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				var hdr [8]byte
				for {
					if _, err := io.ReadFull(c, hdr[:]); err != nil {
						return
					}
					req, resp := binary.BigEndian.Uint32(hdr[:4]), binary.BigEndian.Uint32(hdr[4:])
					if _, err := io.CopyN(io.Discard, c, int64(req-8)); err != nil {
						return
					}
					if n.Add(1) == slowAt {
						time.Sleep(hold)
					}
					if _, err := c.Write(make([]byte, resp)); err != nil {
						return
					}
				}
			})
		}
	})
	return ln.Addr().String()
}

// An open-loop run spreads arrivals over connections: one slow trial holds
// up the arrivals behind it with one connection, not with several.
func TestOpenLoopNotSerialisedBehindSlowTrial(t *testing.T) {
	ctx := context.Background()
	// A hold much longer than the stalls of a loaded test machine.
	const hold = time.Second
	maxLate := func(conns int) time.Duration {
		addr := slowServer(t, 20, hold)
		res, err := RunFCT(ctx, FCTRunRequest{Target: addr, Trials: 400, Mode: ModeOpen, RatePerSec: 2000, Connections: conns}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.MaxNS < int64(hold) {
			t.Fatalf("%d connections: the slow trial took %v, less than the hold %v", conns, time.Duration(res.Summary.MaxNS), hold)
		}
		var late int64
		for _, s := range res.Samples {
			late = max(late, s.StartNS-s.SchedNS)
		}
		return time.Duration(late)
	}
	one, eight := maxLate(1), maxLate(8)
	t.Logf("latest start behind schedule: %v with one connection, %v with eight", one, eight)
	// With one connection the arrival after the slow trial waits for it.
	if one < hold/2 {
		t.Errorf("one connection: latest start %v behind schedule, want about the hold %v", one, hold)
	}
	if eight > hold/2 {
		t.Errorf("eight connections: a start %v behind schedule: arrivals queue behind the slow trial", eight)
	}
}

// retransConn reports a retransmission counter that grows by 2 on every
// third reading, as a simulated connection would.
type retransConn struct {
	net.Conn
	reads, total uint32
}

func (c *retransConn) TotalRetrans() (uint32, error) {
	c.reads++
	if c.reads%3 == 0 {
		c.total += 2
	}
	return c.total, nil
}

func TestRetransFromCounterInterface(t *testing.T) {
	srv := startServer(t)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		return &retransConn{Conn: c}, err
	}
	res, err := RunFCT(context.Background(), FCTRunRequest{Target: srv.Addr().String(), Trials: 30}, dial, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Reading 1 is the zero; trial k (from 1) reads k+1: readings 3, 6, ...
	// grow, that is trials 2, 5, 8, ..., 29: ten trials, two segments each.
	r := res.Summary.Retrans
	if r.Status != "known" || r.Trials != 10 || r.Segments != 20 {
		t.Errorf("retrans: %+v", r)
	}
	for i, s := range res.Samples {
		want := int32(0)
		if (i+2)%3 == 0 {
			want = 2
		}
		if s.Retrans != want {
			t.Errorf("trial %d: retrans %d, want %d", i, s.Retrans, want)
		}
	}
}

func TestRetransUnknownForOtherConns(t *testing.T) {
	srv := startServer(t)
	type plainConn struct{ net.Conn } // hides the socket
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		return plainConn{c}, err
	}
	res, err := RunFCT(context.Background(), FCTRunRequest{Target: srv.Addr().String(), Trials: 5}, dial, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Summary.Retrans; r.Status != "unknown" || r.Reason == "" {
		t.Errorf("retrans: %+v", r)
	}
	for _, s := range res.Samples {
		if s.Retrans != -1 {
			t.Fatalf("sample %+v: retrans should be unknown (-1)", s)
		}
	}
}

func TestLargeRequestAndResponse(t *testing.T) {
	srv := startServer(t)
	var done atomic.Int64
	res, err := RunFCT(context.Background(), FCTRunRequest{Target: srv.Addr().String(), Trials: 20, RequestSize: 24387, ResponseSize: 200_000}, nil, &done)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Count != 20 || done.Load() != 20 {
		t.Errorf("count %d, done %d", res.Summary.Count, done.Load())
	}
	// The server counts an answer once written; the client may have read
	// the last one before the count is made.
	var reqs int64
	for deadline := time.Now().Add(5 * time.Second); ; {
		if _, reqs = srv.Stats(); reqs >= 20 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if reqs != 20 {
		t.Errorf("server answered %d requests", reqs)
	}
}

func TestServerRefusesBadHeader(t *testing.T) {
	srv := startServer(t)
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[:4], 4) // request_size below the header's size
	binary.BigEndian.PutUint32(hdr[4:], 1)
	c.Write(hdr[:])
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("after a bad header: read %d, %v; want the connection closed", n, err)
	}
}

// ---- benchmarks: a run of the paper's count

// BenchmarkFCT300kTrials is one default run, 300,000 trials (the paper's
// count) over loopback, per iteration: seconds on an idle machine. Its
// speed is the benchmark's to report, not a test's to assert (a loaded
// machine is slower, and no less right): ns/trial is the figure to
// compare with BenchmarkBarePingPong's ns/op.
func BenchmarkFCT300kTrials(b *testing.B) {
	srv := startServer(b)
	trials := 0
	for b.Loop() {
		res, err := RunFCT(context.Background(), FCTRunRequest{Target: srv.Addr().String()}, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		if res.Summary.Count != DefaultTrials {
			b.Fatalf("count %d, want the default %d", res.Summary.Count, DefaultTrials)
		}
		trials += res.Summary.Count
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(trials), "ns/trial")
}

// ---- benchmarks: the agent against a bare ping-pong over loopback

// bareServer answers fixed-size requests with fixed-size responses and
// nothing else.
func bareServer(b *testing.B, reqSize, respSize int) string {
	ln := listenLoopback(b)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		req, resp := make([]byte, reqSize), make([]byte, respSize)
		for {
			if _, err := io.ReadFull(c, req); err != nil {
				return
			}
			if _, err := c.Write(resp); err != nil {
				return
			}
		}
	}()
	return ln.Addr().String()
}

// BenchmarkBarePingPong is the floor: a 143 B request and 1 B response on
// one loopback connection, no timing, no bookkeeping.
func BenchmarkBarePingPong(b *testing.B) {
	c, err := net.Dial("tcp", bareServer(b, DefaultRequestSize, DefaultResponseSize))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req, resp := make([]byte, DefaultRequestSize), make([]byte, DefaultResponseSize)
	for b.Loop() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFCTTrial is the client's trial (deadline, timestamps, TCP_INFO)
// against the agent's server: with BenchmarkBarePingPong it gives the
// per-trial overhead.
func BenchmarkFCTTrial(b *testing.B) {
	srv := startServer(b)
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := make([]byte, DefaultRequestSize)
	binary.BigEndian.PutUint32(req[0:4], DefaultRequestSize)
	binary.BigEndian.PutUint32(req[4:8], DefaultResponseSize)
	clock := RealClock()
	fc := newFCTConn(c, 0, req, DefaultResponseSize, 10*time.Second, clock)
	base := clock()
	for b.Loop() {
		if _, err := fc.trial(base); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFCTRun is a whole run per b.N trials: dial, trials, samples,
// sort and summary. ns/op is the agent's cost of one trial, end to end.
func BenchmarkFCTRun(b *testing.B) {
	srv := startServer(b)
	b.ResetTimer()
	if _, err := RunFCT(context.Background(), FCTRunRequest{Target: srv.Addr().String(), Trials: b.N}, nil, nil); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAgentOverBare is the agent's overhead against a bare ping-pong
// over loopback, in alternating blocks so that the machine's load hits both
// alike. One op is a block of each. Reported:
//   - wall-ratio: wall time per trial of a whole agent run (RunFCT against
//     FCTServer: dial, deadlines, timestamps, TCP_INFO, samples, summary)
//     over a bare client and server;
//   - p50-ratio: the agent's median FCT over the bare median round trip
//     (what the agent adds to the number it measures).
func BenchmarkAgentOverBare(b *testing.B) {
	const block = 20_000
	srv := startServer(b)
	c, err := net.Dial("tcp", bareServer(b, DefaultRequestSize, DefaultResponseSize))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req, resp := make([]byte, DefaultRequestSize), make([]byte, DefaultResponseSize)
	rtts := make([]int64, block)
	var bareWall, agentWall time.Duration
	var bareP50, agentP50 []int64
	for b.Loop() {
		t0 := time.Now()
		for i := range rtts {
			t := time.Now()
			if _, err := c.Write(req); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, resp); err != nil {
				b.Fatal(err)
			}
			rtts[i] = int64(time.Since(t))
		}
		bareWall += time.Since(t0)
		bareP50 = append(bareP50, Distribute(rtts).P50NS)

		t0 = time.Now()
		res, err := RunFCT(context.Background(), FCTRunRequest{Target: srv.Addr().String(), Trials: block}, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		agentWall += time.Since(t0)
		agentP50 = append(agentP50, res.Summary.P50NS)
	}
	b.ReportMetric(float64(agentWall)/float64(bareWall), "wall-ratio")
	b.ReportMetric(float64(Distribute(agentP50).P50NS)/float64(Distribute(bareP50).P50NS), "p50-ratio")
	b.ReportMetric(float64(bareWall.Nanoseconds())/float64(b.N*block), "bare-ns/trial")
	b.ReportMetric(float64(agentWall.Nanoseconds())/float64(b.N*block), "agent-ns/trial")
}
