package tcpmodel

import (
	"fmt"
	"math/rand/v2"
	"time"

	"testbed/simlab/internal/fifo"
	"testbed/simlab/lgmodel"
)

// A flow whose link changes under it.
//
// RunFlow runs a flow over one link configuration, the loss switched on
// and off at fixed times. An emulated host whose bulk flow crosses a
// switch fibre instead sees what the switches are configured with at each
// moment: the loss the optics give, protection switched on, backpressure
// thresholds. Flow runs in steps, each over the link as it is during the
// step. The loss is a property of each frame sent (lgmodel.Frame.Loss),
// so it changes at once. A change of what the link's protocol runs with
// (mode, copies, backpressure and its thresholds, rate) starts a new run
// of lgmodel for the frames sent from then on, as the switches'
// dataplane model does (simlab/tofino): the older run keeps its frames
// until it has delivered or lost them all, and new frames join the newer
// run once the older one's queue has drained at the link's rate, so the
// wire is never shared by two runs. The newer run's dummies are corrupted
// at the loss of the moment it started (lgmodel.Config.Loss).

// epoch is one run of the link.
type epoch struct {
	sim      *lgmodel.Sim
	cfg      lgmodel.Config
	out      []offer // the run's originals from sequence number base on
	outArr   []offer // the array out is the tail of (fifo.RoomFor)
	base     int64
	maxDeliv int64
}

// offer is an original the run was given and has neither delivered nor
// lost yet (ok), found by its sequence number: the run numbers its
// originals 0, 1, ... in the order offered (lgmodel.Sim.Offer), so a
// slice from the lowest one outstanding holds them (a map by sequence
// number was a fifth of a 100G flow's CPU).
type offer struct {
	seg   int  // the segment
	bytes int  // frame bytes
	ce    bool // marked
	ok    bool
}

// add notes the original the run numbered seq.
func (e *epoch) add(seq int64, o offer) error {
	if want := e.base + int64(len(e.out)); seq != want {
		return fmt.Errorf("tcpmodel: the link's run numbered an original %d, expected %d", seq, want)
	}
	o.ok = true
	e.out = append(fifo.RoomFor(e.out, &e.outArr, 64), o)
	return nil
}

// take removes and returns the original numbered seq, if outstanding.
func (e *epoch) take(seq int64) (offer, bool) {
	i := seq - e.base
	if i < 0 || i >= int64(len(e.out)) || !e.out[i].ok {
		return offer{}, false
	}
	o := e.out[i]
	e.out[i].ok = false
	n := 0
	for n < len(e.out) && !e.out[n].ok {
		n++
	}
	e.out, e.base = e.out[n:], e.base+int64(n)
	return o, true
}

// lostBelow accounts the originals of e below seq not delivered: the
// link lost them.
func (e *epoch) lostBelow(f *flowSim, seq int64) {
	for s := max(e.maxDeliv+1, e.base); s < seq; s++ {
		if o, ok := e.take(s); ok {
			f.leftBytes += int64(o.bytes)
			f.res.LinkLost++
		}
	}
}

// newEpoch starts a run of the link with cfg for the frames sent from
// now on.
func (f *flowSim) newEpoch(cfg lgmodel.Config) error {
	sim, err := lgmodel.NewOffered(cfg, f.rng)
	if err != nil {
		return err
	}
	if f.now > 0 {
		sim.Advance(f.now)
		// What the older runs still queue leaves first.
		f.notBefore = f.now + int64(float64(f.queue()*8)/cfg.LinkBps*1e12)
	}
	f.epochs = append(f.epochs, &epoch{sim: sim, cfg: cfg, maxDeliv: -1})
	return nil
}

// advanceLink runs every run of the link to now and takes their
// deliveries; an older run that has settled is retired, what it never
// delivered counted lost.
func (f *flowSim) advanceLink(now int64) {
	keep := f.epochs[:0]
	for i, e := range f.epochs {
		e.sim.Advance(now)
		f.dels = e.sim.Deliveries(f.dels[:0])
		for _, d := range f.dels {
			f.delivery(e, d)
		}
		if i < len(f.epochs)-1 && e.sim.Quiet() {
			f.retired = addResult(f.retired, e.sim.Result())
			for _, o := range e.out {
				if o.ok {
					f.leftBytes += int64(o.bytes)
					f.res.LinkLost++
				}
			}
			continue
		}
		keep = append(keep, e)
	}
	f.epochs = keep
}

// Link is the link as it is during a step of a Flow: what its protocol
// runs with (lgmodel.Config's Mode, Copies, Backpressure, PauseCells,
// ResumeCells, LinkBps and timers) and the corruption probability of the
// flow's frames.
type Link struct {
	Config lgmodel.Config
	Loss   float64
}

// Flow is a bulk flow run in steps (see above).
type Flow struct {
	f     *flowSim
	taken int
}

// NewFlow starts a flow at time 0 over c.Link, lossless until the first
// step says otherwise. c.Duration, c.Loss, c.LossFrom and c.LossTo are
// not used: each step gives the link's loss.
func NewFlow(c FlowConfig, r *rand.Rand) (*Flow, error) {
	cc, err := New(c.CC, c.MSS)
	if err != nil {
		return nil, err
	}
	c.Loss, c.LossFrom, c.LossTo = 0, 0, 0
	f, err := newFlowSim(c, cc, r)
	if err != nil {
		return nil, err
	}
	f.stepped = true
	return &Flow{f: f}, nil
}

// sameProtocol reports whether a run started with a can carry on as b:
// everything but the loss the same.
func sameProtocol(a, b lgmodel.Config) bool {
	b.Loss, b.LossSmall, b.Frames, b.Step, b.MaxRun = a.Loss, a.LossSmall, a.Frames, a.Step, a.MaxRun
	return a == b
}

// Step runs the flow until until (since its start) over l.
func (fl *Flow) Step(until time.Duration, l Link) error {
	f := fl.f
	if !(l.Loss >= 0 && l.Loss < 1) {
		return fmt.Errorf("tcpmodel: loss %g: expected in [0, 1)", l.Loss)
	}
	if int64(until)*ps < f.now {
		return fmt.Errorf("tcpmodel: step to %v: the flow is at %v already", until, time.Duration(f.now/ps))
	}
	if cur := f.epochs[len(f.epochs)-1].cfg; !sameProtocol(cur, l.Config) {
		cfg := l.Config
		cfg.Loss, cfg.LossSmall = l.Loss, 0
		if err := f.newEpoch(cfg); err != nil {
			return err
		}
	}
	f.lossNow = l.Loss
	return f.advance(int64(until) * ps)
}

// Now is the time the flow has reached.
func (fl *Flow) Now() time.Duration { return time.Duration(fl.f.now / ps) }

// Samples are the time series' points since the last call.
func (fl *Flow) Samples() []Sample {
	s := fl.f.res.Samples[fl.taken:]
	fl.taken = len(fl.f.res.Samples)
	return s
}

// Result is the flow so far: its counters, every sample, and its
// goodput since the start.
func (fl *Flow) Result() FlowResult {
	r := fl.f.res
	if fl.f.now > 0 {
		r.GoodputBps = float64(fl.f.delivered) * 8 / (float64(fl.f.now) / 1e12)
	}
	return r
}

// SentBytes is the new data the sender has sent (what iperf3 counts as
// written), retransmissions not included.
func (fl *Flow) SentBytes() int64 { return int64(fl.f.next) * int64(fl.f.c.MSS) }

// Cwnd and SRTT are the sender's congestion window (bytes) and smoothed
// round-trip time now, as TCP_INFO reports them.
func (fl *Flow) Cwnd() float64       { return fl.f.cc.Cwnd() }
func (fl *Flow) SRTT() time.Duration { return time.Duration(fl.f.srtt) }

// addResult adds a run's counters to a total.
func addResult(t, r lgmodel.Result) lgmodel.Result {
	t.FramesSent += r.FramesSent
	t.Transmissions += r.Transmissions
	t.Copies += r.Copies
	t.Dummies += r.Dummies
	t.Corrupted += r.Corrupted
	t.Delivered += r.Delivered
	t.Lost += r.Lost
	t.Timeouts += r.Timeouts
	t.BufferDrops += r.BufferDrops
	t.TxBufferDrops += r.TxBufferDrops
	t.PauseFrames += r.PauseFrames
	t.MaxTxBufferBytes = max(t.MaxTxBufferBytes, r.MaxTxBufferBytes)
	t.MaxRxBufferBytes = max(t.MaxRxBufferBytes, r.MaxRxBufferBytes)
	return t
}

// LinkCounters are the link's counters for the flow's frames so far,
// over every run of the link (lgmodel.Result's counts and maxima; its
// duration and rates are not filled), the buffers now, and the mode the
// newest run protects with. An emulated switch adds them to its ports'
// counters and queues.
func (fl *Flow) LinkCounters() (total lgmodel.Result, txBytes, rxBytes int64, mode lgmodel.Mode) {
	total = fl.f.retired
	for _, e := range fl.f.epochs {
		total = addResult(total, e.sim.Result())
		t, r, _ := e.sim.Buffers()
		txBytes, rxBytes = txBytes+t, rxBytes+r
	}
	return total, txBytes, rxBytes, fl.f.epochs[len(fl.f.epochs)-1].cfg.Mode
}

// FrameBytes is the flow's frame on the link (FCS included).
func (fl *Flow) FrameBytes() int { return fl.f.frame }
