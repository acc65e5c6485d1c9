package lgmodel

import (
	"math"
	"time"

	lg "testbed/p4/linkguardian"
)

// The Tx buffer's queue as the sender's program and the receiver's courier
// make it: an accounting of the sender's copies that observes the model's
// sends, the receiver's leading ACK and the held holes, and changes nothing
// in the run (the copies held, MaxTxBufferBytes, still bound the buffer and
// free nothing earlier or later).
//
// The sender (NUS-SNL/linkguardian at bd46f4b, switch_impl/sender) mirrors
// each protected original's copy to the internal recirculation port first
// (sender/setup-ae.py lines 11 and 173, port 68); after that pass it comes
// back to the decision (sender.p4 decide_retx_or_drop, lines 520-560),
// which drops it if the leading ACK the sender holds has passed it and no
// loss notification set its hole bit, else sends it to the loopback port's
// queue (lines 557-559, port 16), round which it goes, decided after every
// pass, until the ACK passes it. That queue is the one polled
// (sender/devtest_cmds.py line 617) and read as watermark_cells x 80 B
// (data_analysis/effective_lossRate_linkSpeed/analyze_expt_data.py lines
// 84-101): it holds only the copies the ACK missed at their first pass.
//
// The receiver sends its leading ACK on one courier packet (injected once,
// receiver/setup-ae.py line 288): each pass through the protected port's
// egress reads the leading ACK register and leaves with it when it has
// moved, and an egress mirror session puts the courier back into the same
// queue (receiver.p4 lines 979-998, setup-ae.py lines 184-205). So the
// sender learns the register as it stood at the courier's last pass, once
// per courier loop (Config.CourierLoop), a way back later (one pass, the
// fibre, the 64 B courier, and Config.AckExtra), where the model's own ACK
// goes back on every arrival.
//
// Every input comes with its time, and the accounting runs behind the
// model's clock: a decision at time t needs the register at a courier pass
// at least a way back before t, which the model has settled by then. The
// stretches the model does not step (a replayed recording, whole cycles
// jumped over) give their inputs from the recording or from the cycle's
// last period, shifted as the model's state is (tpLog).

// tpRun is copies (or arrivals) seq0.. seq0+n-1 at t0, t0+slot, ...
type tpRun struct{ seq0, t0, slot, n int64 }

type tpStep struct{ t, v int64 }

type tpHold struct {
	t, seq int64
	on     bool
}

type tpBack struct{ seq, at int64 }

// tpQueue is a FIFO that reuses its spent front.
type tpQueue struct {
	a    []tpBack
	head int
}

func (q *tpQueue) len() int       { return len(q.a) - q.head }
func (q *tpQueue) front() *tpBack { return &q.a[q.head] }

func (q *tpQueue) push(b tpBack) {
	if q.head > 32 && 2*q.head >= len(q.a) {
		q.a = q.a[:copy(q.a, q.a[q.head:])]
		q.head = 0
	}
	q.a = append(q.a, b)
}

func (q *tpQueue) pop() tpBack {
	b := q.a[q.head]
	q.head++
	if q.head == len(q.a) {
		q.a, q.head = q.a[:0], 0
	}
	return b
}

// tpEntry is one input, as logged for a recording or a cycle.
type tpEntry struct {
	kind int8 // tpSend, tpRx, tpRxRun, tpHoldOn, tpHoldOff
	at   int64
	seq  int64 // the send's or run's first original, the register's value, the hole
	slot int64 // runs
	n    int64 // runs
	t0   int64 // an rx run's first arrival
}

const (
	tpSend = iota
	tpRx
	tpRxRun
	tpHoldOn
	tpHoldOff
)

// tpHistory is how many inputs a cycle's last period may need: a cycle
// spans at most cycleRing originals, each with its send and the receiver's
// ACK, and a few runs.
const tpHistory = 1024

type txPath struct {
	courier, back, loop, drain, copyBytes int64

	sends   []tpRun // copies to send to the first port, in order
	steps   []tpStep
	stepsAt int     // steps before it are read
	rxRun   []tpRun // arrivals of skipped-over runs
	holds   []tpHold
	held    []int64

	free68  int64   // the first port is free from then
	first   tpQueue // copies past the first port, to be decided
	q16     tpQueue // waiting for the read port (at: when they joined)
	free16  int64
	on16    tpQueue // past the read port, to be decided
	sendsAt int     // sends before it are done

	base     int64 // the register at the last courier pass read
	lack     int64 // what the sender holds from the last courier pass read
	maxQ     int64
	nextRead int64 // when the next courier pass's ACK is back
	now      int64 // decided up to here
	inputs   int64

	hist    [tpHistory]tpEntry // the latest inputs (cycles repeat them)
	histN   int64
	logging bool // cycles can be jumped: keep hist
}

// The copy as the artifact's sender keeps it: after its first pass it
// carries, besides the original's 3 B LinkGuardian header, the 2 B
// lr_buffered header that pass adds (common/linkradar_hdr.p4 lines 59-63,
// 2 + 5 + 9 bits; sender.p4 add_linkradar_buffered_hdr and
// fill_data_linkradar_buffered_hdr, lines 876-889 and 1059-1062). So a
// copy takes 2 B more of a recirculation port's time than its original
// took of the wire, and the traffic manager stores it without the 4 B FCS
// the MAC adds on the way out: a 1518 B frame's copy is 1519 B, 19 cells
// (the artifact's non-blocking reading, 285 cells, is 15 such copies).
const (
	bufferedHeaderBytes = 2
	fcsBytes            = 4
)

func newTxPath(s *sim) *txPath {
	cells := int64((s.c.FrameBytes - fcsBytes + lg.HeaderBytes + bufferedHeaderBytes + lg.CellBytes - 1) / lg.CellBytes)
	return &txPath{
		courier: durPS(s.c.CourierLoop), back: s.oneWay() + s.ser64 + durPS(s.c.AckExtra),
		loop: s.loopPS, drain: drainPS(s.c.FrameBytes + bufferedHeaderBytes), copyBytes: cells * lg.CellBytes,
		logging: !s.c.NoCycleSkip,
	}
}

// input records an input: into the accounting, the history a cycle
// repeats, and the recording under way.
func (s *sim) tpInput(e tpEntry) {
	p := s.tp
	p.add(e)
	if p.logging {
		p.hist[p.histN%tpHistory] = e
		p.histN++
	}
	if r := s.rec; r != nil {
		r.tlog = append(r.tlog, e) // replayed shifted as the state is (restore)
	}
	if p.inputs++; p.inputs&1023 == 0 {
		// Keep what waits to be decided short. Inputs come in the order
		// of their times (a replayed stretch's too, after the clock has
		// moved to its end): up to this one's, every input is in.
		p.advance(e.at)
	}
}

func (p *txPath) add(e tpEntry) {
	switch e.kind {
	case tpSend:
		p.sends = append(p.sends, tpRun{e.seq, e.at, e.slot, e.n})
	case tpRx:
		p.steps = append(p.steps, tpStep{e.at, e.seq})
	case tpRxRun:
		p.rxRun = append(p.rxRun, tpRun{e.seq, e.t0, e.slot, e.n})
	case tpHoldOn, tpHoldOff:
		p.holds = append(p.holds, tpHold{e.at, e.seq, e.kind == tpHoldOn})
	}
}

// feed adds the inputs of a replayed stretch or of jumped cycles, shifted
// by ds originals and dt picoseconds.
func (s *sim) tpFeed(log []tpEntry, ds, dt int64) {
	for _, e := range log {
		e.at += dt
		e.t0 += dt
		e.seq += ds
		s.tpInput(e)
	}
}

// tpJump repeats the inputs of the cycle's last period, [from, now), m
// times, each shifted by one more period of p originals and d picoseconds.
func (s *sim) tpJump(from, now, p, d, m int64) {
	tp := s.tp
	lo := max(0, tp.histN-tpHistory)
	i := tp.histN
	for i > lo && tp.hist[(i-1)%tpHistory].at >= from {
		i--
	}
	if i == lo && lo > 0 {
		panic("lgmodel: a cycle's period holds more inputs than the Tx path keeps")
	}
	period := make([]tpEntry, 0, tp.histN-i)
	sends, steps := 0, 0
	for ; i < tp.histN; i++ {
		if e := tp.hist[i%tpHistory]; e.at < now {
			period = append(period, e)
			switch e.kind {
			case tpSend:
				sends++
			case tpRx:
				steps++
			default:
				sends = -1 << 30 // runs or holds: repeat entry by entry
			}
		}
	}
	if p == 1 && sends == 1 && steps <= 1 {
		// One copy and at most one ACK a period (100G's in-order
		// stretch): m of them, one period apart, are a run of each.
		for _, e := range period {
			if e.kind == tpSend {
				tp.add(tpEntry{kind: tpSend, at: e.at + d, seq: e.seq + 1, slot: d, n: m})
			} else {
				tp.add(tpEntry{kind: tpRxRun, at: e.at + d, t0: e.at + d, seq: e.seq, slot: d, n: m})
			}
		}
		return
	}
	// The cycle's inputs need not be kept: the next cycle is found a
	// whole period of stepping later.
	for j := int64(1); j <= m; j++ {
		for _, e := range period {
			e.at += j * d
			e.t0 += j * d
			e.seq += j * p
			tp.add(e)
		}
		if j&255 == 0 {
			tp.advance(period[0].at + j*d)
		}
	}
}

// ackAt is the leading ACK the sender holds at t: the register as the
// courier's last pass at least a way back before t read it.
func (p *txPath) ackAt(t int64) int64 {
	if t < p.nextRead {
		return p.lack // the same courier pass
	}
	return p.readCourier(t)
}

// readCourier is ackAt at a courier pass not yet read.
func (p *txPath) readCourier(t int64) int64 {
	if t < p.back {
		return 0
	}
	k := (t - p.back) / p.courier
	p.nextRead = (k+1)*p.courier + p.back
	tau := k * p.courier
	for p.stepsAt < len(p.steps) && p.steps[p.stepsAt].t <= tau {
		p.base = max(p.base, p.steps[p.stepsAt].v)
		p.stepsAt++
	}
	if p.stepsAt > 256 && 2*p.stepsAt > len(p.steps) {
		p.steps = p.steps[:copy(p.steps, p.steps[p.stepsAt:])]
		p.stepsAt = 0
	}
	// Skipped-over runs land in order of their first arrival: those
	// wholly seen fold into the register, the first not yet begun ends
	// the look.
	for len(p.rxRun) > 0 && tau >= p.rxRun[0].t0+(p.rxRun[0].n-1)*p.rxRun[0].slot {
		p.base = max(p.base, p.rxRun[0].seq0+p.rxRun[0].n)
		p.rxRun = p.rxRun[1:]
	}
	v := p.base
	for _, r := range p.rxRun {
		if tau < r.t0 {
			break
		}
		v = max(v, r.seq0+min(r.n, (tau-r.t0)/r.slot+1))
	}
	p.lack = v
	return v
}

func (p *txPath) isHeld(seq int64) bool {
	for _, h := range p.held {
		if h == seq {
			return true
		}
	}
	return false
}

// advance decides every copy and serves the ports up to until.
func (p *txPath) advance(until int64) {
	for {
		// The earliest of: a hole bit set or cleared, a copy back from the
		// first port, a copy back from the read port, the read port
		// taking its next copy. Ties in that order.
		next, kind := int64(math.MaxInt64), -1
		if len(p.holds) > 0 {
			next, kind = p.holds[0].t, 0
		}
		if p.first.len() == 0 && p.sendsAt < len(p.sends) {
			// The next copy through the first port: served in order.
			r := &p.sends[p.sendsAt]
			start := max(p.free68, r.t0)
			p.free68 = start + p.drain
			p.first.push(tpBack{r.seq0, p.free68 + p.loop})
			r.seq0++
			r.t0 += r.slot
			if r.n--; r.n == 0 {
				if p.sendsAt++; p.sendsAt == len(p.sends) {
					p.sends, p.sendsAt = p.sends[:0], 0
				} else if p.sendsAt > 64 && 2*p.sendsAt > len(p.sends) {
					p.sends = p.sends[:copy(p.sends, p.sends[p.sendsAt:])]
					p.sendsAt = 0
				}
			}
		}
		if p.first.len() > 0 && p.first.front().at < next {
			next, kind = p.first.front().at, 1
		}
		if p.on16.len() > 0 && p.on16.front().at < next {
			next, kind = p.on16.front().at, 2
		}
		if p.q16.len() > 0 {
			if t := max(p.free16, p.q16.front().at); t < next {
				next, kind = t, 3
			}
		}
		if kind < 0 || next > until {
			break
		}
		p.now = next
		switch kind {
		case 0:
			h := p.holds[0]
			p.holds = p.holds[1:]
			if h.on {
				p.held = append(p.held, h.seq)
			} else {
				for i, v := range p.held {
					if v == h.seq {
						p.held = append(p.held[:i], p.held[i+1:]...)
						break
					}
				}
			}
		case 1, 2:
			var b tpBack
			if kind == 1 {
				b = p.first.pop()
			} else {
				b = p.on16.pop()
			}
			if b.seq < p.ackAt(b.at) && (len(p.held) == 0 || !p.isHeld(b.seq)) {
				continue // freed
			}
			if p.q16.len() == 0 && p.free16 <= next {
				// An idle port takes it at once: one copy in the queue.
				p.maxQ = max(p.maxQ, 1)
				p.free16 = next + p.drain
				p.on16.push(tpBack{b.seq, p.free16 + p.loop})
				continue
			}
			p.q16.push(b)
			p.maxQ = max(p.maxQ, int64(p.q16.len()))
		case 3:
			b := p.q16.pop()
			p.free16 = next + p.drain
			p.on16.push(tpBack{b.seq, p.free16 + p.loop})
		}
	}
	p.now = max(p.now, until)
}

// queueBytes is the read queue now, and its watermark, in 80 B cells.
func (p *txPath) queueBytes() (now, watermark int64) {
	return int64(p.q16.len()) * p.copyBytes, p.maxQ * p.copyBytes
}

// WithCourier is c with the courier's parameters taken from c's own. The
// courier's loop is an egress pass and an egress mirror back into the same
// queue (receiver.p4 lines 979-998): one more pass through the chip, as a
// recirculated frame's (LoopLatency; no published figure gives a mirror
// loop's latency alone). Its way back is what the paper measured for the
// receiver's other control frame to the sender, the pause/resume frame's
// t_flight_resume (FlightResume, §4 Parameters: 1.6 us at 100G, 1.9 us at
// 25G), a frame that also leaves on a packet the receiver's pipeline sends
// (a timer packet, receiver.p4 line 518), crosses the link and acts at the
// sender: the model's pass, fibre and 64 B frame are already on the
// courier's way, AckExtra is the rest.
func (c Config) WithCourier() Config {
	c.CourierLoop = c.LoopLatency
	oneWay := c.Pipeline + c.Propagation + time.Duration(float64((64+20+lg.HeaderBytes)*8)/c.LinkBps*1e9)
	c.AckExtra = max(0, c.FlightResume-oneWay)
	return c
}
