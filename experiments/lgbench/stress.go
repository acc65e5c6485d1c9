package lgbench

import (
	"context"
	"fmt"
	"math"
	"time"

	"testbed/dut/p4switch"
	lg "testbed/p4/linkguardian"
	"testbed/results"
)

// Snapshot is one read of the bench's counters and registers. Each value
// is a running total; a figure is the difference of two snapshots.
type Snapshot struct {
	Time     time.Duration // the sender's clock at its port read
	SinkTime time.Duration // the receiver's clock at the sink read
	TxFrames int64         // sender port: every frame on the wire
	TxOctets int64
	// TxData: the sender port's frames over 127 B (RMON size counters):
	// originals and copies, not the 64 B dummies.
	TxData      int64
	RxOK        int64 // receiver port
	RxFCS       int64
	Delivered   int64 // originals the receiver forwarded out of its sink port
	PauseFrames int64 // pause frames the receiver sent
	Timeouts    int64 // holes ackNoTimeout skipped
}

// Read takes a snapshot.
func (b *Bench) Read(ctx context.Context) (Snapshot, error) {
	var s Snapshot
	tc, err := b.Tx.PortFramesOf(ctx, b.TxPort, p4switch.FrameQuery{Fields: p4switch.FramesTxAll | p4switch.FramesTxOctets, TxSizes: dataSizes})
	if err != nil {
		return s, fmt.Errorf("%s: %w", b.Sender, err)
	}
	rc, err := b.Rx.PortFramesOf(ctx, b.RxPort, p4switch.FrameQuery{Fields: p4switch.FramesRxOK | p4switch.FramesRxFCSErrors | p4switch.FramesTxPriPause})
	if err != nil {
		return s, fmt.Errorf("%s: %w", b.Receiver, err)
	}
	sc, err := b.Rx.PortFramesOf(ctx, b.Sink, p4switch.FrameQuery{Fields: p4switch.FramesTxOK})
	if err != nil {
		return s, fmt.Errorf("%s: %w", b.Receiver, err)
	}
	to, err := b.Rx.ReadRegister(ctx, lg.RegTimeoutCount, 0)
	if err != nil {
		return s, fmt.Errorf("%s: %w", b.Receiver, err)
	}
	s.Time, s.SinkTime = tc.Time, sc.Time
	s.TxFrames, s.TxOctets, s.TxData = tc.TxAll, tc.TxOctets, tc.TxSized
	s.RxOK, s.RxFCS = rc.RxOK, rc.RxFCSErrors
	s.PauseFrames = rc.TxPriPause
	s.Delivered = sc.TxOK
	for _, v := range to {
		s.Timeouts += v
	}
	return s, nil
}

// dataSizes are the frames over 127 B (FCS included): originals and
// copies, not LinkGuardian's 64 B dummies.
var dataSizes = p4switch.SizeRange{Min: 128}

// Queues is the occupancy of the two LinkGuardian buffers, in bytes.
type Queues struct {
	TxBuffer, TxBufferMax int64 // the sender's buffered copies
	Reorder, ReorderMax   int64 // the receiver's reorder buffer
}

// ReadQueues reads both buffers; clear resets their watermarks after the read.
func (b *Bench) ReadQueues(ctx context.Context, clear bool) (Queues, error) {
	var q Queues
	t, err := b.Tx.Queue(ctx, lg.RecircPort, lg.QueueTxBuffer, clear)
	if err != nil {
		return q, fmt.Errorf("%s: Tx buffer: %w", b.Sender, err)
	}
	r, err := b.Rx.Queue(ctx, lg.RecircPort, lg.QueueReorder, clear)
	if err != nil {
		return q, fmt.Errorf("%s: reorder buffer: %w", b.Receiver, err)
	}
	q.TxBuffer, q.TxBufferMax = t.UsageCells*lg.CellBytes, t.WatermarkCells*lg.CellBytes
	q.Reorder, q.ReorderMax = r.UsageCells*lg.CellBytes, r.WatermarkCells*lg.CellBytes
	return q, nil
}

// Stress is one run of the switch packet generator.
type Stress struct {
	Frames     int64
	FrameBytes int // on the wire, FCS included
	AppID      int
	PktgenPort int // 68 on Tofino 1 pipe 0
	// Window: also measure the delivered rate between 10% and 90% of the
	// run's line-rate duration, away from its start and tail.
	Window bool
	// Poll is the interval of device time between status reads at the end.
	Poll time.Duration
	// Period is the generator's timer: one frame a firing. 0, or less
	// than a frame's time on the wire, sends back to back at line rate.
	Period time.Duration
}

// StressResult is what a run measured.
type StressResult struct {
	Sent      int64 // frames the generator sent
	Delivered int64 // originals delivered out of the sink port
	Wire      int64 // frames on the wire: originals, copies, dummies
	FCS       int64 // frames the receiver took with an FCS error
	Timeouts  int64
	Pauses    int64
	Elapsed   time.Duration // device time from start to the generator done
	// RateGbps is the delivered rate over the window, counting each frame's
	// preamble and gap, as line rate is counted (0 without a window).
	RateGbps      float64
	MaxTxBufBytes int64
	MaxRxBufBytes int64
}

// Lost is frames sent and never delivered.
func (r StressResult) Lost() int64 { return r.Sent - r.Delivered }

// LineRateInterval is the generator's packet interval at the link's line
// rate, rounded down to whole nanoseconds (back to back).
func (l *Link) LineRateInterval(frameBytes int) time.Duration {
	return time.Duration(math.Floor(float64((frameBytes+20)*8) / l.LineRateBps * 1e9))
}

// Duration is how long n frames take at the link's line rate.
func (l *Link) Duration(n int64, frameBytes int) time.Duration {
	return time.Duration(float64(n) * float64((frameBytes+20)*8) / l.LineRateBps * 1e9)
}

// interval is the generator's timer for s: its period, or line rate when
// that is shorter.
func (b *Bench) interval(s Stress) time.Duration {
	return max(b.LineRateInterval(s.FrameBytes), s.Period)
}

// runDuration is how long n frames of s take: at line rate, or one a
// period when that is longer.
func (b *Bench) runDuration(s Stress, n int64) time.Duration {
	return max(b.Duration(n, s.FrameBytes), time.Duration(n)*s.Period)
}

// Run sends s.Frames frames, at line rate or one every s.Period, and
// measures them.
func (b *Bench) Run(ctx context.Context, s Stress) (StressResult, error) {
	var r StressResult
	per := min(s.Frames, 65536)
	batches := (s.Frames + per - 1) / per
	if s.Frames < 1 || batches > 65536 {
		return r, fmt.Errorf("stress test of %d frames: expected 1..%d", s.Frames, int64(65536)*65536)
	}
	if _, err := b.ReadQueues(ctx, true); err != nil {
		return r, err
	}
	before, err := b.Read(ctx)
	if err != nil {
		return r, err
	}
	g := pktgen(b, s, int(batches), int(per))
	if err := b.journalPktgen(s.AppID); err != nil {
		return r, err
	}
	if err := b.txRTT.Measure(func() error { return b.Tx.StartPktgen(ctx, g) }); err != nil {
		return r, fmt.Errorf("%s: %w", b.Sender, err)
	}
	stopped := false
	defer func() {
		if !stopped {
			// An error or abort mid-run: leave no generator running.
			_ = b.txRTT.Cleanup(ctx, func(ctx context.Context) error { return b.Tx.StopPktgen(ctx, s.AppID) })
		}
	}()
	t0 := before.Time
	d := b.runDuration(s, g.Packets())
	w := b.clockWaits()
	if s.Window {
		w1, err := w.read(ctx, t0+d/10)
		if err != nil {
			return r, err
		}
		w2, err := w.read(ctx, t0+d*9/10)
		if err != nil {
			return r, err
		}
		if dt := w2.SinkTime - w1.SinkTime; dt > 0 {
			r.RateGbps = float64(w2.Delivered-w1.Delivered) * float64((s.FrameBytes+20)*8) / dt.Seconds() / 1e9
		}
	}
	reached, err := w.until(ctx, t0+d)
	if err != nil {
		return r, err
	}
	poll := s.Poll
	if poll <= 0 {
		poll = time.Millisecond
	}
	limit := t0 + 2*d + 10*time.Second
	var sent int64
	var now time.Duration
	for {
		if err := ctx.Err(); err != nil {
			return r, fmt.Errorf("%s: wait for the packet generator: %w", b.Sender, context.Cause(ctx))
		}
		st, err := b.Tx.PktgenStatus(ctx, s.AppID)
		if err != nil {
			return r, fmt.Errorf("%s: %w", b.Sender, err)
		}
		if now, err = b.Tx.Clock(ctx); err != nil {
			return r, fmt.Errorf("%s: %w", b.Sender, err)
		}
		if st.Done {
			sent, r.Elapsed = st.Packets, now-t0
			break
		}
		if now > limit {
			return r, fmt.Errorf("%s: the packet generator sent %d of %d frames in %v of device time (its timer needs %v)", b.Sender, st.Packets, g.Packets(), now-t0, d)
		}
		if reached, err = w.from(ctx, now, b.nextRead(s, poll, now, now-reached, g.Packets()-st.Packets)); err != nil {
			return r, err
		}
	}
	stopped = true
	// Frames still in flight (retransmissions, the reorder buffer) land
	// within microseconds; one millisecond of device time after the clock
	// read with the generator's last status covers them.
	if _, err := w.from(ctx, now, now+time.Millisecond); err != nil {
		return r, err
	}
	after, err := b.Read(ctx)
	if err != nil {
		return r, err
	}
	q, err := b.ReadQueues(ctx, false)
	if err != nil {
		return r, err
	}
	r.Sent = sent
	r.Delivered = after.Delivered - before.Delivered
	r.Wire = after.TxFrames - before.TxFrames
	r.FCS = after.RxFCS - before.RxFCS
	r.Timeouts = after.Timeouts - before.Timeouts
	r.Pauses = after.PauseFrames - before.PauseFrames
	r.MaxTxBufBytes, r.MaxRxBufBytes = q.TxBufferMax, q.ReorderMax
	if r.Delivered > r.Sent {
		return r, fmt.Errorf("%s: %d frames delivered of %d sent: the sink port counts other traffic", b.Receiver, r.Delivered, r.Sent)
	}
	return r, nil
}

// nextRead is the time to wait for before the generator's next status
// read, the last read having found it running with left frames to send
// and the clock at now, read ahead since the wait before it reached
// ahead (a simulated switch moves the generator on while its status is
// read). Reading every poll, the reads would come a period of poll plus
// ahead apart; the next read skips those of them that could not find the
// generator done, its last frame leaving one interval after another from
// now at the earliest, and lands where reading every poll would have
// read, so the read that finds it done comes at the same device time and
// Elapsed is the same. A protected link is slower than the line rate the
// first wait assumes (its header, copies and pauses: at 100G ordered and
// 1e-3 it delivers 92.8 Gb/s, and 7.2% of 10^8 frames were left after
// the 12.3 s that wait took), and reading that every poll, four requests
// a read, cost the point 0.1-0.2 s of its 0.65-0.74 s of CPU time
// (docs/linkguardian.md).
func (b *Bench) nextRead(s Stress, poll, now, ahead time.Duration, left int64) time.Duration {
	period := poll + max(ahead, 0)
	if k := b.runDuration(s, left-1) / period; k > 1 {
		return now + (k-1)*period + poll
	}
	return now + poll
}

func pktgen(b *Bench, s Stress, batches, per int) p4switch.Pktgen {
	return p4switch.Pktgen{AppID: s.AppID, Port: s.PktgenPort, EgressPort: b.TxPort, PacketBytes: s.FrameBytes - 4,
		Interval: b.interval(s), Batches: batches, PerBatch: per}
}

// clockStep is the device time the first request of a run's first wait
// asks the switch for. A request cannot be taken back once the switch has it: the
// switch answers nothing else (the generator's stop included) until that
// wait ends, and a simulated switch computes the whole span first. Short
// steps, with the context checked between them, let a cancelled run stop
// the generator promptly; on a real switch they cost one request per step.
// A fifth of a second of device time takes a fifth of a second on a real
// switch; on the simulated lab it may take far less wall time than that
// (a lossless 25G link's 400,000 frames, a few milliseconds), and then the
// requests, not the model, are what a long stress test spends its time on:
// 3.84x10^9 frames at 25G are 9,470 steps of 200 ms (37,600 of 50 ms cost
// more CPU time than the model of the whole non-blocking point). So a run's
// waits double their step, up to clockStepMax, while a step comes back within
// stepWall of wall time, and halves it, down to clockStep, when one takes
// more than 4x that: a stop is answered within a few tenths of a second
// of wall time either way.
const clockStep = 200 * time.Millisecond

const (
	clockStepMax = 20 * time.Second // the switch accepts waits up to 60 s ahead
	stepWall     = 50 * time.Millisecond
)

// clockWait is a run's waits for the sender's clock: each wait starts with
// the step the one before it ended with (clockStep for the first), so a
// long stress test's later waits do not double their way up from
// clockStep again, and one that is handed the clock as the caller just
// read it does not read it again. A stress test of 10^8 frames at 25G
// and 1e-3 (49 s of the clock) made 72 requests to the two switches
// non-blocking and 188 ordered, 59 and 144 so (seed 1; the waits vary with
// the wall time their steps take); on the simulated lab a request costs
// the CPU of some 10^5 of the model's frames (docs/linkguardian.md).
type clockWait struct {
	b    *Bench
	step time.Duration
}

func (b *Bench) clockWaits() *clockWait { return &clockWait{b: b, step: clockStep} }

// until waits for the sender's clock to reach t, reading it first.
func (w *clockWait) until(ctx context.Context, t time.Duration) (time.Duration, error) {
	now, err := w.b.Tx.Clock(ctx)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", w.b.Sender, err)
	}
	return w.from(ctx, now, t)
}

// from waits for the sender's clock to reach t from now, the clock as the
// caller last read it, in steps (see clockStep), returning as soon as ctx
// ends between steps. It returns the time the clock read last.
func (w *clockWait) from(ctx context.Context, now, t time.Duration) (time.Duration, error) {
	for now < t {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("%s: wait for clock %v: %w", w.b.Sender, t, context.Cause(ctx))
		}
		start := time.Now()
		var err error
		if now, err = w.b.Tx.WaitClock(ctx, min(t, now+w.step)); err != nil {
			return 0, fmt.Errorf("%s: %w", w.b.Sender, err)
		}
		w.step = nextStep(w.step, time.Since(start))
	}
	return now, nil
}

// read waits for the clock to reach t and takes a snapshot there.
func (w *clockWait) read(ctx context.Context, t time.Duration) (Snapshot, error) {
	if _, err := w.until(ctx, t); err != nil {
		return Snapshot{}, err
	}
	return w.b.Read(ctx)
}

// nextStep is the device time of a wait's next request after one of step
// took wall of wall time.
func nextStep(step, wall time.Duration) time.Duration {
	switch {
	case wall < stepWall:
		return min(2*step, clockStepMax)
	case wall > 4*stepWall:
		return max(step/2, clockStep)
	}
	return step
}

// waitRead waits, in steps from clockStep, for the sender's clock to
// reach t and takes a snapshot there.
func (b *Bench) waitRead(ctx context.Context, t time.Duration) (Snapshot, error) {
	return b.clockWaits().read(ctx, t)
}

// Calibration is the attenuation that gives the link a loss rate, and the
// rate measured there with protection off.
type Calibration struct {
	Target        float64
	AttenuationDB float64
	Lost, Frames  int64
	Loss          float64
	Measurements  int
}

// CalibrateOptions bound the search.
type CalibrateOptions struct {
	StartDB, StepDB, MaxDB float64
	// Tolerance: a point is accepted when its measured loss lies within
	// [target/Tolerance, target]: the nominal rate is an upper bound, so
	// Eq. 2 gives the paper's copies for it.
	Tolerance float64
	// Losses the accepting measurement expects to see (its precision);
	// MaxFrames caps any one measurement.
	Losses     int64
	MaxFrames  int64
	FrameBytes int
	Stress     Stress
}

type lossPoint struct {
	att        float64
	lost, sent int64
}

func (p lossPoint) rate() float64 { return float64(p.lost) / float64(p.sent) }

// Calibrate finds the attenuation at which the link, unprotected, loses
// MTU frames at the target rate, by measuring: an upward scan until the
// loss reaches the window, then interpolation of log(loss) against
// attenuation between the bracketing points. A lab's optics differ from
// any model of them; the measurement is what counts.
func (b *Bench) Calibrate(ctx context.Context, target float64, o CalibrateOptions) (Calibration, error) {
	c := Calibration{Target: target}
	if err := b.Protect(ctx, Protection{Mode: Off}); err != nil {
		return c, err
	}
	lo := target / o.Tolerance
	inWindow := func(r float64) bool { return r >= lo && r <= target }
	measure := func(att float64, n int64) (lossPoint, error) {
		if err := ctx.Err(); err != nil {
			return lossPoint{}, fmt.Errorf("link %s: calibrating %g: %w", b.Link.Link.Name, target, context.Cause(ctx))
		}
		att = math.Round(att*1000) / 1000
		if err := b.rc.SetAttenuation(ctx, b.VOA, b.VOAChannel, att); err != nil {
			return lossPoint{}, err
		}
		s := o.Stress
		s.Frames, s.FrameBytes, s.Window = n, o.FrameBytes, false
		r, err := b.Run(ctx, s)
		if err != nil {
			return lossPoint{}, err
		}
		c.Measurements++
		p := lossPoint{att: att, lost: r.Lost(), sent: r.Sent}
		b.rc.Event(results.Event{Type: "measurement", Device: b.VOA, Message: fmt.Sprintf("%s: calibrating %g: %.3f dB loses %d of %d (%.3g)",
			b.Link.Link.Name, target, att, p.lost, p.sent, p.rate()),
			Fields: map[string]any{"link": b.Link.Link.Name, "target_loss": target, "attenuation_db": att, "frames": p.sent, "lost": p.lost}})
		return p, nil
	}
	nScan := min(o.MaxFrames, max(100_000, int64(30/target)))
	nFine := min(o.MaxFrames, max(100_000, int64(float64(o.Losses)/target)))
	// Scan up until the loss reaches the window.
	var below *lossPoint
	var hi lossPoint
	a := o.StartDB
	for {
		if a > o.MaxDB+1e-9 {
			return c, fmt.Errorf("link %s: frame loss stayed below %g up to %g dB (max_db)", b.Link.Link.Name, lo, o.MaxDB)
		}
		p, err := measure(a, nScan)
		if err != nil {
			return c, err
		}
		if p.rate() >= lo {
			hi = p
			break
		}
		below = &p
		a += o.StepDB
	}
	// Already too lossy at the start: step down until below the window.
	for below == nil {
		if hi.att <= 0 {
			return c, fmt.Errorf("link %s: loses %.3g of frames with the VOA at 0 dB, above the target %g", b.Link.Link.Name, hi.rate(), target)
		}
		p, err := measure(math.Max(0, hi.att-o.StepDB), nScan)
		if err != nil {
			return c, err
		}
		if p.rate() < lo {
			below = &p
		} else {
			hi = p
		}
	}
	bl := *below
	for i := 0; i < 12; i++ {
		if inWindow(hi.rate()) && hi.sent < nFine {
			p, err := measure(hi.att, nFine)
			if err != nil {
				return c, err
			}
			if p.rate() < lo {
				bl = p
				continue
			}
			hi = p
		}
		if inWindow(hi.rate()) && hi.sent >= nFine {
			c.AttenuationDB, c.Lost, c.Frames, c.Loss = hi.att, hi.lost, hi.sent, hi.rate()
			return c, nil
		}
		next := (bl.att + hi.att) / 2
		if bl.lost > 0 {
			// log(loss) is close to linear in dB across a narrow span of the cliff.
			aim := math.Log(target / math.Sqrt(o.Tolerance))
			f := (aim - math.Log(bl.rate())) / (math.Log(hi.rate()) - math.Log(bl.rate()))
			next = bl.att + math.Min(0.9, math.Max(0.1, f))*(hi.att-bl.att)
		}
		next = math.Round(next*1000) / 1000
		if next <= bl.att || next >= hi.att {
			break // the VOA's 0.001 dB resolution is exhausted
		}
		p, err := measure(next, nFine)
		if err != nil {
			return c, err
		}
		switch {
		case inWindow(p.rate()):
			c.AttenuationDB, c.Lost, c.Frames, c.Loss = p.att, p.lost, p.sent, p.rate()
			return c, nil
		case p.rate() < lo:
			bl = p
		default:
			hi = p
		}
	}
	return c, fmt.Errorf("link %s: could not set the frame loss within [%.3g, %g]: %.3g at %.3f dB, %.3g at %.3f dB",
		b.Link.Link.Name, lo, target, bl.rate(), bl.att, hi.rate(), hi.att)
}
