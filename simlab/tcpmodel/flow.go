package tcpmodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"testbed/simlab/internal/fifo"
	"testbed/simlab/lgmodel"
)

// A bulk TCP flow from one host to another across a LinkGuardian link
// (LinkGuardian §4.2 and Appendix B.3: iperf flows with DCTCP, CUBIC and
// BBR over the protected link, Fig. 9 the line-rate case).
//
// The path: the sender's NIC puts segments on its link at HostBps (or at
// the congestion control's pacing rate, if lower); each frame reaches the
// sender switch HostDelay later and joins its egress queue towards the
// LinkGuardian link, which is lgmodel's offered run (its normal queue,
// the copies, the reorder buffer, pause and resume). The egress queue is
// a shared buffer of SwitchBuffer bytes: a frame that finds it full is
// dropped; one that finds more than ECNK bytes in it is marked CE (the
// DCTCP marking rule, RFC 8257 §3.1). Originals leaving the receiver
// switch reach the receiving host, which acknowledges every segment at
// once with a SACK of what it has and an ECN-Echo of a CE mark (DCTCP's
// accurate echo); the acknowledgment reaches the sender AckDelay later.
//
// The sender (RFC 6675's scoreboard): a segment is lost once DupThresh
// segments sent after it are SACKed, and is sent again before new data;
// the congestion control hears of one loss per recovery (until the
// acknowledgments pass what was sent when it began). A retransmission
// timeout (RFC 6298, at least RTOMin) marks everything unSACKed lost.
// The queue the marks see is what was offered to the link and has not
// left the receiver switch, less the reorder buffer (the receiver
// switch's queue) and what the link lost.
//
// Not modelled: delayed ACKs and GRO (one ACK per segment), the receive
// window (never limiting), the ACK path's queues (a constant delay),
// TSO bursts, SACK reneging, and pause frames reaching the hosts (the
// LinkGuardian pause stops the sender switch's port, §4.2).

// FlowConfig is one flow over one link.
type FlowConfig struct {
	CC string
	// MSS is the segment payload (1448: a 1500-byte MTU with TCP
	// timestamps); a frame is MSS + 70 bytes (TCP/IP headers 52,
	// Ethernet header and FCS 18).
	MSS     int
	HostBps float64
	// Link is the LinkGuardian link (lgmodel.Defaults with the mode,
	// copies, backpressure and loss wanted).
	Link lgmodel.Config
	// HostDelay is the sender NIC to switch; AckDelay from the receiver
	// switch's output to the sender's ACK processing (the receiving
	// host, its stack and the way back).
	HostDelay, AckDelay time.Duration
	SwitchBuffer        int // bytes (0: unbounded)
	ECNK                int // bytes (0: no marking)
	// ECT: the flow's segments are ECN-capable (DCTCP sets it; Linux's
	// CUBIC and BBR only answer ECN, net.ipv4.tcp_ecn = 2, so the switch
	// queues their segments past K instead of marking them).
	ECT       bool
	RTOMin    time.Duration
	DupThresh int
	Duration  time.Duration
	// Sample is the time series' interval; LossFrom and LossTo bound
	// when the link corrupts frames (LossTo 0: to the end).
	Sample           time.Duration
	LossFrom, LossTo time.Duration
	Loss             float64
}

// DefaultFlow is a flow between hosts at linkBps (LinkGuardian §4.2: all
// links at 25G) across a link of linkBps in mode, corrupting frames at
// loss: the switch buffer and marking
// threshold of a shallow-buffered ToR port (Tofino's 22 MB are shared by
// all ports; 1 MB to one port), K = 100 KB (the paper's setting, §4:
// "ECN (100 KB marking threshold [14])", [14] being DCTCP's own guidance,
// Alizadeh et al., SIGCOMM 2010, §3.3: K > C x RTT / 7, 36 KB at 100 Gb/s
// and a 20 us round trip), and the paper's
// hosts' rto_min of 1 ms (LinkGuardian artifact: ip route ... rto_min
// 1ms; Linux's default is 200 ms).
func DefaultFlow(cc string, mode lgmodel.Mode, linkBps, loss float64) (FlowConfig, error) {
	lc, err := lgmodel.Defaults(mode, linkBps, loss, 0)
	if err != nil {
		return FlowConfig{}, err
	}
	return FlowConfig{CC: cc, MSS: 1448, HostBps: linkBps, Link: lc, HostDelay: 2 * time.Microsecond, AckDelay: 10 * time.Microsecond,
		SwitchBuffer: 1 << 20, ECNK: 100_000, ECT: cc == "dctcp", RTOMin: time.Millisecond, DupThresh: 3,
		Duration: 20 * time.Millisecond, Sample: time.Millisecond, Loss: loss}, nil
}

// Sample is one point of the time series.
type Sample struct {
	At           time.Duration
	GoodputBps   float64 // payload the receiver got in the interval
	CwndBytes    float64
	QueueBytes   int64 // the sender switch's egress queue
	TxBufBytes   int64 // LinkGuardian's Tx buffer (copies)
	RxBufBytes   int64 // LinkGuardian's reorder buffer
	Paused       bool
	Retransmits  int64 // TCP retransmissions in the interval
	Marks, Drops int64 // CE marks and tail drops at the switch
}

// FlowResult is a whole run.
type FlowResult struct {
	Samples []Sample
	// GoodputBps over the whole run; Retransmits, RTOs, Marks and Drops
	// in all; LinkLost the originals the link lost (never delivered).
	GoodputBps                              float64
	Retransmits, RTOs, Marks, Drops, Losses int64
	LinkLost                                int64
	MaxQueueBytes                           int64
}

type segment struct {
	sentAt             int64 // ps, last transmission
	retx               bool
	sacked, lost       bool
	ce                 bool
	delivered          int64 // bytes delivered when sent
	deliveredAt        int64 // ps
	firstSent, counted bool
}

type flowSim struct {
	c   FlowConfig
	cc  CC
	rng *rand.Rand
	// The link: its runs, the newest taking new frames (steps.go).
	epochs []*epoch
	// stepped: the link's loss is the step's (lossNow), not c.Loss
	// between LossFrom and LossTo.
	stepped   bool
	lossNow   float64
	notBefore int64 // ps: new frames join the newest run from then
	now       int64
	nextSamp  int64
	dels      []lgmodel.Delivery
	retired   lgmodel.Result // the link's counters of runs retired

	frame int
	// segs are the segments from base on (seg): those below una are
	// SACKed and never read again, so send drops them once they are
	// half of segs (an 8 s flow at 100G sends 65 million).
	segs      []segment
	base      int
	next      int   // next new segment
	una       int   // first not SACKed
	offered   int64 // bytes offered to the link
	leftBytes int64 // bytes delivered or lost by the link
	acks      []ack
	acksArr   []ack // the array acks is the tail of (fifo.RoomFor)
	nicFree   int64
	inflight  int
	// lostPending counts segments marked lost and not yet sent again.
	lostPending int
	delivered   int64 // bytes SACKed
	recovery    int   // segments below which a recovery runs (-1: none)
	srtt        float64
	rttvar      float64
	res         FlowResult
	cur         Sample
}

type ack struct {
	at  int64
	seg int
	ce  bool
}

const ps = int64(1000) // ps per ns

// RunFlow runs the flow and reports it.
func RunFlow(c FlowConfig, r *rand.Rand) (FlowResult, error) {
	cc, err := New(c.CC, c.MSS)
	if err != nil {
		return FlowResult{}, err
	}
	if c.Duration <= 0 {
		return FlowResult{}, fmt.Errorf("tcpmodel: flow %+v: expected a duration", c)
	}
	f, err := newFlowSim(c, cc, r)
	if err != nil {
		return FlowResult{}, err
	}
	if err := f.advance(int64(c.Duration) * ps); err != nil {
		return f.res, err
	}
	f.res.GoodputBps = float64(f.delivered) * 8 / c.Duration.Seconds()
	return f.res, nil
}

func newFlowSim(c FlowConfig, cc CC, r *rand.Rand) (*flowSim, error) {
	switch {
	case !(c.HostBps > 0) || c.Sample <= 0 || c.AckDelay <= 0 || c.DupThresh < 1:
		return nil, fmt.Errorf("tcpmodel: flow %+v: expected a host rate, a sample interval, an ACK delay and a dupthresh", c)
	case !(c.Loss >= 0 && c.Loss < 1):
		return nil, fmt.Errorf("tcpmodel: loss %g: expected in [0, 1)", c.Loss)
	}
	f := &flowSim{c: c, cc: cc, rng: r, frame: c.MSS + 70, recovery: -1, nextSamp: int64(c.Sample) * ps}
	if err := f.newEpoch(c.Link); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *flowSim) queue() int64 {
	var rx int64
	for _, e := range f.epochs {
		_, b, _ := e.sim.Buffers()
		rx += b
	}
	return max(0, f.offered-f.leftBytes-rx)
}

func (f *flowSim) rto() int64 {
	rto := float64(f.c.RTOMin)
	if f.srtt > 0 {
		rto = max(rto, f.srtt+4*f.rttvar)
	}
	return int64(rto) * ps
}

// advance runs the flow until end (ps).
func (f *flowSim) advance(end int64) error {
	sampleEvery := int64(f.c.Sample) * ps
	step := int64(f.c.AckDelay) * ps
	now := f.now
	defer func() { f.now = now }()
	for now < end {
		// The next thing the sender does.
		next := min(end, f.nextSamp, now+step)
		if len(f.acks) > 0 {
			next = min(next, f.acks[0].at)
		}
		if f.canSend() {
			next = min(next, max(now, f.nicFree))
		}
		if oldest := f.oldestOutstanding(); oldest >= 0 {
			next = min(next, f.seg(oldest).sentAt+f.rto())
		}
		next = max(next, now)
		now = next
		f.advanceLink(now)
		for len(f.acks) > 0 && f.acks[0].at <= now {
			a := f.acks[0]
			f.acks = f.acks[1:]
			f.onAck(a, now)
		}
		if oldest := f.oldestOutstanding(); oldest >= 0 && now >= f.seg(oldest).sentAt+f.rto() {
			f.timeout(now)
		}
		for f.canSend() && f.nicFree <= now {
			if err := f.send(now); err != nil {
				return err
			}
		}
		if now >= f.nextSamp {
			f.sample(now)
			f.nextSamp += sampleEvery
		}
	}
	return nil
}

// segsCompact is the fewest SACKed segments send drops at once.
const segsCompact = 1 << 16

// seg is segment i (i >= base).
func (f *flowSim) seg(i int) *segment { return &f.segs[i-f.base] }

// canSend: a lost segment to resend or room in the window for new data.
func (f *flowSim) canSend() bool {
	return float64(f.inflight+f.c.MSS) <= f.cc.Cwnd() || f.inflight == 0
}

func (f *flowSim) oldestOutstanding() int {
	for i := f.una; i < f.next; i++ {
		s := f.seg(i)
		if !s.sacked && !s.lost {
			return i
		}
	}
	return -1
}

// send puts the next segment on the sender's link: the first lost one,
// else a new one.
func (f *flowSim) send(now int64) error {
	idx := -1
	if f.lostPending > 0 {
		for i := f.una; i < f.next; i++ {
			if f.seg(i).lost && !f.seg(i).sacked {
				idx = i
				f.lostPending--
				break
			}
		}
	}
	if idx < 0 {
		if n := f.una - f.base; n >= segsCompact && 2*n >= len(f.segs) {
			copy(f.segs, f.segs[n:])
			f.segs = f.segs[:len(f.segs)-n]
			f.base += n
		}
		f.segs = append(f.segs, segment{})
		idx = f.next
		f.next++
	} else {
		f.res.Retransmits++
		f.cur.Retransmits++
		f.seg(idx).retx = true
	}
	s := f.seg(idx)
	s.lost, s.sentAt, s.delivered, s.deliveredAt = false, now, f.delivered, now
	f.inflight += f.c.MSS
	// The NIC's serialisation, or the pacing rate if slower.
	rate := f.c.HostBps
	if p := f.cc.PacingBps(); p > 0 {
		rate = min(rate, p)
	}
	f.nicFree = now + int64(float64(f.frame*8)/rate*1e12)
	// (The link may have run its recirculation loop a little ahead; a
	// newer run of the link takes frames once the older has drained.)
	e := f.epochs[len(f.epochs)-1]
	at := max(now+int64(f.c.HostDelay)*ps, int64(e.sim.Now())*ps+ps, f.notBefore)
	q := f.queue()
	if f.c.SwitchBuffer > 0 && q+int64(f.frame) > int64(f.c.SwitchBuffer) {
		f.res.Drops++
		f.cur.Drops++
		return nil
	}
	ce := f.c.ECT && f.c.ECNK > 0 && q > int64(f.c.ECNK)
	if ce {
		f.res.Marks++
		f.cur.Marks++
	}
	loss := f.c.Loss
	if f.stepped {
		loss = f.lossNow
	} else if at < int64(f.c.LossFrom)*ps || (f.c.LossTo > 0 && at >= int64(f.c.LossTo)*ps) {
		loss = 0
	}
	seq, err := e.sim.Offer(lgmodel.Frame{At: at, Bytes: f.frame, Loss: loss, U: -1})
	if err != nil {
		return err
	}
	if err := e.add(seq, offer{seg: idx, bytes: f.frame, ce: ce}); err != nil {
		return err
	}
	f.offered += int64(f.frame)
	f.res.MaxQueueBytes = max(f.res.MaxQueueBytes, q+int64(f.frame))
	return nil
}

// delivery: an original left the receiver switch; the host acknowledges
// it. Originals skipped over were lost on the link.
func (f *flowSim) delivery(e *epoch, d lgmodel.Delivery) {
	e.lostBelow(f, d.Seq)
	e.maxDeliv = max(e.maxDeliv, d.Seq)
	o, ok := e.take(d.Seq)
	if !ok {
		return
	}
	f.leftBytes += int64(o.bytes)
	f.cur.GoodputBps += float64(f.c.MSS)
	f.acks = append(fifo.RoomFor(f.acks, &f.acksArr, 64), ack{at: d.At + int64(f.c.AckDelay)*ps, seg: o.seg, ce: o.ce})
}

func (f *flowSim) onAck(a ack, now int64) {
	if a.seg < f.base {
		return // SACKed: a duplicate copy of a retransmitted segment
	}
	s := f.seg(a.seg)
	if s.sacked {
		return // a duplicate copy of a retransmitted segment
	}
	inOrder := a.seg == f.una
	s.sacked = true
	if !s.lost {
		f.inflight -= f.c.MSS
	} else {
		f.lostPending-- // SACKed before it was sent again
	}
	f.delivered += int64(f.c.MSS)
	rtt := time.Duration((now - s.sentAt) / ps)
	if !s.retx {
		r := float64(rtt)
		if f.srtt == 0 {
			f.srtt, f.rttvar = r, r/2
		} else {
			f.rttvar = 0.75*f.rttvar + 0.25*math.Abs(f.srtt-r)
			f.srtt = 0.875*f.srtt + 0.125*r
		}
	}
	var rate float64
	if dt := now - s.deliveredAt; dt > 0 {
		rate = float64(f.delivered-s.delivered) * 8 / (float64(dt) / 1e12)
	}
	for f.una < f.next && f.seg(f.una).sacked {
		f.una++
	}
	if f.recovery >= 0 && f.una >= f.recovery {
		f.recovery = -1
	}
	ce := 0
	if a.ce {
		ce = f.c.MSS
	}
	f.cc.OnAck(time.Duration(now/ps), f.c.MSS, ce, rtt, rate, f.inflight)
	// RFC 6675: a segment with DupThresh SACKed segments sent after it is
	// lost. (An acknowledgment in order leaves no hole behind it.)
	if inOrder {
		return
	}
	sackedAbove := 0
	for i := f.next - 1; i >= f.una; i-- {
		t := f.seg(i)
		if t.sacked {
			sackedAbove++
			continue
		}
		if sackedAbove >= f.c.DupThresh && !t.lost && t.sentAt < s.sentAt {
			t.lost = true
			f.lostPending++
			f.inflight -= f.c.MSS
			if f.recovery < 0 {
				f.recovery = f.next
				f.res.Losses++
				f.cc.OnLoss(time.Duration(now/ps), f.inflight)
			}
		}
	}
}

func (f *flowSim) timeout(now int64) {
	f.res.RTOs++
	for i := f.una; i < f.next; i++ {
		t := f.seg(i)
		if !t.sacked && !t.lost {
			t.lost = true
			f.lostPending++
			f.inflight -= f.c.MSS
		}
	}
	f.recovery = f.next
	f.cc.OnRTO(time.Duration(now / ps))
}

func (f *flowSim) sample(now int64) {
	var tx, rx int64
	var paused bool
	for _, e := range f.epochs {
		t, r, p := e.sim.Buffers()
		tx, rx, paused = tx+t, rx+r, paused || p
	}
	s := f.cur
	s.At = time.Duration(now / ps)
	s.GoodputBps = s.GoodputBps * 8 / f.c.Sample.Seconds()
	s.CwndBytes = f.cc.Cwnd()
	s.QueueBytes, s.TxBufBytes, s.RxBufBytes, s.Paused = f.queue(), tx, rx, paused
	f.res.Samples = append(f.res.Samples, s)
	f.cur = Sample{}
}
