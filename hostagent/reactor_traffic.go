package hostagent

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The traffic of REACToR experiments on a Linux host: flows over TCP to
// another host's sink. A bulk flow writes as fast as the socket takes it
// (§5.2's TCP flows); a paced flow writes payload at rate_bps x 1448/1538,
// what a 1500-byte MTU puts on the wire at rate_bps. Each connection
// begins with a header naming the flow and its measurement interval, so
// the receiver counts what it gets per flow and within the interval, on
// its own REACToR clock.

const (
	flowMagic   = "RFLW"
	flowVersion = 1
	// pacedPayload is the payload share of the wire at a 1500-byte MTU:
	// TCP/IPv4 with timestamps (52 B) in a frame with 38 B of Ethernet
	// overhead.
	pacedPayload = 1448.0 / 1538.0
)

// traffic runs one host's flows and sink.
type traffic struct {
	host   string
	dial   DialFunc
	listen ListenFunc
	clock  func() int64
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	seq  int
	sent []*sentFlow
	recv []*recvFlow
	sink net.Listener
	// stop ends the current flows (not the sink).
	stopCtx  context.Context
	stopFlow context.CancelFunc
}

type sentFlow struct {
	ReactorFlow
	sent, measured int64
	err            string
	done           bool
}

type recvFlow struct {
	ReactorFlow
	delivered, measured int64
	bursts              []ReactorBurst
}

func newTraffic(host string, dial DialFunc, listen ListenFunc, clock func() int64, log *slog.Logger) *traffic {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	if listen == nil {
		var lc net.ListenConfig
		listen = lc.Listen
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &traffic{host: host, dial: dial, listen: listen, clock: clock, log: log, ctx: ctx, cancel: cancel}
	t.stopCtx, t.stopFlow = context.WithCancel(ctx)
	return t
}

func (t *traffic) startSink(ctx context.Context, req ReactorSinkRequest) (ReactorSink, error) {
	addr := req.Listen
	if addr == "" {
		addr = "0.0.0.0:0"
	}
	t.mu.Lock()
	if t.sink != nil {
		// One sink per agent: asking again gives the one that runs.
		s := sinkInfo(t.sink)
		t.mu.Unlock()
		return s, nil
	}
	t.mu.Unlock()
	ln, err := t.listen(ctx, "tcp", addr)
	if err != nil {
		return ReactorSink{}, apiErr(KindFailed, "sink: listen on %s: %v", addr, err)
	}
	t.mu.Lock()
	t.sink = ln
	t.mu.Unlock()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.wg.Add(1)
			go func() {
				defer t.wg.Done()
				t.receive(c)
			}()
		}
	}()
	return sinkInfo(ln), nil
}

func sinkInfo(ln net.Listener) ReactorSink {
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return ReactorSink{Listen: addr, Port: p}
}

// header is what a flow's connection begins with.
func header(f ReactorFlow) []byte {
	var b []byte
	b = append(b, flowMagic...)
	b = append(b, flowVersion)
	for _, s := range []string{f.ID, f.Src, f.Dst, f.Kind} {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(f.MeasureFromNs))
	b = binary.BigEndian.AppendUint64(b, uint64(f.MeasureToNs))
	return b
}

func readHeader(r *bufio.Reader) (ReactorFlow, error) {
	var f ReactorFlow
	magic := make([]byte, len(flowMagic)+1)
	if _, err := io.ReadFull(r, magic); err != nil {
		return f, err
	}
	if string(magic[:4]) != flowMagic || magic[4] != flowVersion {
		return f, fmt.Errorf("not a flow of this agent's version (header %q)", magic)
	}
	var fields [4]string
	for i := range fields {
		var n uint16
		if err := binary.Read(r, binary.BigEndian, &n); err != nil {
			return f, err
		}
		s := make([]byte, n)
		if _, err := io.ReadFull(r, s); err != nil {
			return f, err
		}
		fields[i] = string(s)
	}
	var win [2]uint64
	if err := binary.Read(r, binary.BigEndian, &win); err != nil {
		return f, err
	}
	f.ID, f.Src, f.Dst, f.Kind = fields[0], fields[1], fields[2], fields[3]
	f.MeasureFromNs, f.MeasureToNs = int64(win[0]), int64(win[1])
	return f, nil
}

// receive counts one connection's bytes.
func (t *traffic) receive(c net.Conn) {
	defer c.Close()
	go func() {
		<-t.ctx.Done()
		c.Close()
	}()
	br := bufio.NewReaderSize(c, 64<<10)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	h, err := readHeader(br)
	if err != nil {
		t.log.Warn("reactor sink: dropped a connection", "remote", c.RemoteAddr().String(), "err", err)
		return
	}
	c.SetReadDeadline(time.Time{})
	rf := &recvFlow{ReactorFlow: h}
	t.mu.Lock()
	t.recv = append(t.recv, rf)
	t.mu.Unlock()
	buf := make([]byte, 64<<10)
	for {
		n, err := br.Read(buf)
		if n > 0 {
			now := t.clock()
			t.mu.Lock()
			rf.delivered += int64(n)
			if rf.MeasureToNs != 0 && now >= rf.MeasureFromNs && now < rf.MeasureToNs {
				rf.measured += int64(n)
				// The read's time stands for the arrival of its bytes: a
				// user-space receive timestamp, later than the wire by the
				// stack's latency (interrupt moderation, GRO).
				rf.bursts = AddArrival(rf.bursts, now, int64(n))
			}
			t.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

func (t *traffic) start(reqs []ReactorFlowRequest) ([]ReactorFlow, error) {
	for i, r := range reqs {
		if _, _, err := net.SplitHostPort(r.Target); err != nil {
			return nil, apiErr(KindBadRequest, "flows[%d]: target %q: expected the destination's sink as host:port (POST /v1/reactor/sink there)", i, r.Target)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []ReactorFlow
	for _, r := range reqs {
		t.seq++
		f := &sentFlow{ReactorFlow: ReactorFlow{ID: fmt.Sprintf("%s-f%d", t.host, t.seq), Src: t.host, ReactorFlowRequest: r, State: FlowWaiting}}
		t.sent = append(t.sent, f)
		out = append(out, f.ReactorFlow)
		ctx := t.stopCtx
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			t.send(ctx, f)
		}()
	}
	return out, nil
}

// sleepUntil waits until the REACToR clock reaches at.
func (t *traffic) sleepUntil(ctx context.Context, at int64) error {
	for {
		d := time.Duration(at - t.clock())
		if d <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(d, 50*time.Millisecond)):
		}
	}
}

func (t *traffic) send(ctx context.Context, f *sentFlow) {
	fail := func(err error) {
		t.mu.Lock()
		f.err, f.done = err.Error(), true
		t.mu.Unlock()
	}
	if err := t.sleepUntil(ctx, f.StartNs); err != nil {
		fail(err)
		return
	}
	if f.StopNs != 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(f.StopNs-t.clock()))
		defer cancel()
	}
	t.mu.Lock()
	f.State = FlowRunning
	t.mu.Unlock()
	c, err := t.dial(ctx, "tcp", f.Target)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("connect to %s: stopped before it connected", f.Target)
		}
		fail(err)
		return
	}
	defer c.Close()
	go func() {
		<-ctx.Done()
		c.Close()
	}()
	if _, err := c.Write(header(f.ReactorFlow)); err != nil {
		fail(err)
		return
	}
	buf := make([]byte, 64<<10)
	began := t.clock()
	for ctx.Err() == nil {
		n := len(buf)
		if f.Kind == FlowPaced {
			t.mu.Lock()
			sent := f.sent
			t.mu.Unlock()
			allowed := int64(f.RateBps*pacedPayload/8*float64(t.clock()-began)/1e9) - sent
			if allowed <= 0 {
				select {
				case <-ctx.Done():
				case <-time.After(time.Millisecond):
				}
				continue
			}
			n = int(min(allowed, int64(len(buf))))
		}
		w, err := c.Write(buf[:n])
		now := t.clock()
		t.mu.Lock()
		f.sent += int64(w)
		if f.MeasureToNs != 0 && now >= f.MeasureFromNs && now < f.MeasureToNs {
			f.measured += int64(w)
		}
		t.mu.Unlock()
		if err != nil {
			if ctx.Err() == nil {
				fail(err)
				return
			}
			break
		}
	}
	t.mu.Lock()
	f.done = true
	t.mu.Unlock()
}

func (t *traffic) list() ReactorFlows {
	now := t.clock()
	t.mu.Lock()
	defer t.mu.Unlock()
	out := ReactorFlows{ClockNs: now}
	for _, f := range t.sent {
		x := f.ReactorFlow
		x.SentBytes, x.MeasuredSentBytes, x.Error = f.sent, f.measured, f.err
		x.Measured = x.MeasureToNs != 0 && now >= x.MeasureToNs
		switch {
		case f.done:
			x.State = FlowStopped
		case now < f.StartNs:
			x.State = FlowWaiting
		}
		out.Sent = append(out.Sent, x)
	}
	for _, f := range t.recv {
		x := f.ReactorFlow
		x.DeliveredBytes, x.MeasuredBytes = f.delivered, f.measured
		x.Measured = x.MeasureToNs != 0 && now >= x.MeasureToNs
		if x.Measured {
			x.GoodputBps = float64(f.measured) * 8 / (float64(x.MeasureToNs-x.MeasureFromNs) / 1e9)
			x.Bursts = slices.Clone(f.bursts)
		}
		x.State = FlowRunning
		out.Received = append(out.Received, x)
	}
	return out
}

// stopAll stops and forgets every flow, sent and received; the sink stays.
func (t *traffic) stopAll() {
	t.mu.Lock()
	t.stopFlow()
	t.stopCtx, t.stopFlow = context.WithCancel(t.ctx)
	t.sent = nil
	t.recv = nil
	t.mu.Unlock()
}

func (t *traffic) close() error {
	t.cancel()
	t.mu.Lock()
	ln := t.sink
	t.sink = nil
	t.mu.Unlock()
	var err error
	if ln != nil {
		if e := ln.Close(); e != nil && !errors.Is(e, net.ErrClosed) {
			err = e
		}
	}
	t.wg.Wait()
	return err
}
