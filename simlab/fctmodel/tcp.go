package fctmodel

import "math"

// A TCP endpoint after Linux 5.4 (the paper's kernel, §4): the names in
// comments are the kernel's functions whose behaviour each part follows.
// Both ends send and receive: the client sends requests and receives
// answers, the server the other way round.

// Congestion-avoidance states (icsk_ca_state).
const (
	caOpen uint8 = iota
	caDisorder
	caCWR
	caRecovery
	caLoss
)

// What the retransmission timer is armed for (icsk_pending).
const (
	tmNone uint8 = iota
	tmRTO
	tmTLP
	tmREO
	tmSYN // the SYN (client) or SYN-ACK (server) retransmission timer
)

// Connection states (Config.PerFlow): zero is an established connection,
// as the persistent model's always is.
const (
	connEstablished uint8 = iota
	connClosed            // the client before connect()
	connListen            // the server before a SYN
	connSynSent           // TCP_SYN_SENT
	connSynRcvd           // TCP_NEW_SYN_RECV: a request socket
)

// Handshake packet kinds (packet.syn).
const (
	pkSYN uint8 = 1 + iota
	pkSYNACK
)

// Segment flags (TCP_SKB_CB(skb)->sacked).
const (
	fSacked   uint8 = 1 << iota // TCPCB_SACKED_ACKED
	fLost                       // TCPCB_LOST
	fRetrans                    // TCPCB_SACKED_RETRANS: a retransmission in flight
	fEverRetr                   // TCPCB_EVER_RETRANS
)

// ACK processing flags (tcp_input.c FLAG_*).
const (
	flagData = 1 << iota
	flagDataAcked
	flagRetransDataAcked
	flagDataSacked
	flagLostRetrans
	flagSndUnaAdvanced
	flagDsacking
	flagSetXmitTimer

	flagNotDup          = flagData | flagDataAcked
	flagCAAlert         = flagDataSacked | flagDsacking
	flagForwardProgress = flagDataAcked | flagDataSacked
)

const (
	infiniteSsthresh = 0x7fffffff // TCP_INFINITE_SSTHRESH
	timeoutMinJ      = 2          // TCP_TIMEOUT_MIN, jiffies
	maxSackBlocks    = 3          // with the timestamp option
	maxQuickAcks     = 16         // TCP_MAX_QUICKACKS
	rackRecoveryThr  = 16         // TCP_RACK_RECOVERY_THRESH
	noStamp          = math.MinInt64 / 4
)

// seg is a segment sent and not yet cumulatively acknowledged.
type seg struct {
	seq, end int64
	sent     int64 // ps: the latest (re)transmission
	flags    uint8
}

type timer struct {
	kind uint8
	arm  int64 // ps
	n    int64 // jiffies
}

// tcpVars is the endpoint's state apart from its queues: a comparable
// value (it is part of the skip-ahead's key), so everything in it is
// canonical at a clean trial start (see rebase).
type tcpVars struct {
	// Sender.
	sndUna, sndNxt, writeEnd int64
	cwnd, ssthresh, cwndCnt  int64
	ca                       uint8
	priorCwnd, priorSsthresh int64
	lossCwnd                 int64 // DCTCP's loss_cwnd, for undo
	hasUndo                  bool
	undoMarker, undoRetrans  int64
	highSeq                  int64
	prrDelivered, prrOut     int64
	srtt8, mdev, mdevMax     int64 // microseconds; srtt scaled by 8, mdev by 4
	rttvar, rttSeq           int64
	minRTT                   int64 // microseconds, 0: none yet
	rto, backoff             int64 // jiffies
	retransmits              int64 // icsk_retransmits
	rackMstamp               int64 // ps
	rackRTT, rackEndSeq      int64
	rackAdvanced             bool
	reoWndSteps, reoPersist  int64
	reoRoundEnd              int64 // a DSACK widens the window once per round trip
	reordSeen                bool
	reordering               int64
	tlpActive                bool
	tlpHighSeq               int64
	maxPacketsOut            int64
	maxPacketsSeq            int64
	isCwndLimited            bool
	rt                       timer // the retransmission timer: RTO, loss probe or RACK's
	// Receiver.
	rcvNxt, rcvWup int64
	rcvMss         int64
	sacks          [maxSackBlocks]span
	nsacks         uint8
	dsack          span
	hasDsack       bool
	ackPending     bool // an ACK is owed
	ackNow         bool // ... and must go now (a hole filled, a duplicate)
	quick          int64
	pingpong       bool
	lrcv           int64 // ps: the latest data received
	dack           timer // the delayed-ACK timer
	waitEnd        int64 // the byte that completes what the application waits for
	msgIn, msgOut  int64 // sizes of the messages received and written
	isClient       bool
	// Connection (Config.PerFlow).
	conn       uint8
	synRetries int64 // SYNs (client) or SYN-ACKs (server) sent again
	synSent    int64 // ps: the first SYN's transmission by the stack
	firstData  int64 // ps: the first data segment at the sender's capture point; noStamp before
}

type tcpEP struct {
	m    *Model
	id   int
	v    tcpVars
	rtx  []seg  // sent, not cumulatively acknowledged, by sequence
	ofo  []span // received out of order, by sequence
	cnt  counters
	rtG  uint32 // generation of the retransmission timer's event
	daG  uint32 // ... of the delayed-ACK timer's event
	sort []int  // scratch: rtx indexes by time sent
}

func newTCP(m *Model, id int) *tcpEP {
	c := &m.c.TCP
	e := &tcpEP{m: m, id: id}
	v := &e.v
	v.cwnd, v.ssthresh = int64(c.InitCwnd), infiniteSsthresh
	v.rto = m.usToJiffies(c.RTOInit.Microseconds())
	v.rackMstamp = noStamp
	v.reoWndSteps = 1
	v.reordering = int64(c.Reordering)
	v.rcvMss = 536 // TCP_MSS_DEFAULT until segments say otherwise (tcp_initialize_rcv_mss)
	v.pingpong = true
	v.lrcv = noStamp
	v.isClient = id == 0
	v.msgOut, v.msgIn = int64(m.c.RequestBytes), int64(m.c.ResponseBytes)
	if !v.isClient {
		v.msgOut, v.msgIn = v.msgIn, v.msgOut
	}
	v.waitEnd = v.msgIn
	v.synSent, v.firstData = noStamp, noStamp
	if m.c.PerFlow {
		// A new connection: the client connects, the server listens.
		// The receiver starts in quick-ACK mode (tcp_event_data_recv:
		// the first data segment calls tcp_incr_quickack with
		// TCP_MAX_QUICKACKS), not in the RPC's ping-pong mode; the flow
		// is one-way (iperf -n), so the server writes nothing back.
		v.pingpong, v.quick = false, maxQuickAcks
		v.conn = connListen
		if v.isClient {
			v.conn = connClosed
		} else {
			v.msgOut = 0
		}
	}
	return e
}

func (e *tcpEP) now() int64 { return e.m.now }

// settled: nothing received out of order, and few enough segments
// unacknowledged for the state to be kept.
func (e *tcpEP) settled() bool { return len(e.ofo) == 0 && len(e.rtx) <= maxKeySegs }

// rebase moves times by -dt, the sent stream by -dSnd and the received
// one by -dRcv, and puts what no longer matters in a canonical form.
func (e *tcpEP) rebase(dt, dSnd, dRcv int64) {
	v := &e.v
	for i := range e.rtx {
		s := &e.rtx[i]
		s.seq -= dSnd
		s.end -= dSnd
		s.sent -= dt
	}
	v.sndUna -= dSnd
	v.sndNxt -= dSnd
	v.writeEnd -= dSnd
	v.undoMarker -= dSnd
	v.highSeq -= dSnd
	v.rttSeq -= dSnd
	v.rackEndSeq -= dSnd
	v.reoRoundEnd -= dSnd
	v.tlpHighSeq -= dSnd
	v.maxPacketsSeq -= dSnd
	if v.rackMstamp != noStamp {
		v.rackMstamp -= dt
	}
	if v.lrcv != noStamp {
		v.lrcv -= dt
	}
	if v.synSent != noStamp {
		v.synSent -= dt
	}
	if v.firstData != noStamp {
		v.firstData -= dt
	}
	if v.rt.kind != tmNone {
		v.rt.arm -= dt
	}
	if v.dack.kind != tmNone {
		v.dack.arm -= dt
	}
	v.rcvNxt -= dRcv
	v.rcvWup -= dRcv
	v.waitEnd -= dRcv
	for i := range v.sacks[:v.nsacks] {
		v.sacks[i].lo -= dRcv
		v.sacks[i].hi -= dRcv
	}
	v.dsack.lo -= dRcv
	v.dsack.hi -= dRcv

	// Canonical forms: values that can no longer change any decision.
	if v.ca == caOpen || v.ca == caDisorder {
		v.highSeq = v.sndUna // only read in CWR, Recovery and Loss
		v.prrDelivered, v.prrOut = 0, 0
		if !v.hasUndo {
			v.priorCwnd, v.priorSsthresh, v.lossCwnd = 0, 0, 0
		}
	}
	if !v.hasUndo {
		v.undoMarker, v.undoRetrans = 0, 0
	} else if v.undoMarker < v.sndUna {
		// With nothing in flight, a DSACK can only be for data from now
		// on, which is after any older marker alike.
		v.undoMarker = v.sndUna - 1
	}
	if !v.tlpActive {
		v.tlpHighSeq = 0
	}
	if v.rttSeq < v.sndUna {
		v.rttSeq = v.sndUna - 1 // "snd_una after rtt_seq" either way
	}
	v.maxPacketsSeq = max(v.maxPacketsSeq, v.sndUna)
	if v.maxPacketsSeq == v.sndUna && len(e.rtx) == 0 {
		v.maxPacketsSeq = 0
	}
	v.reoRoundEnd = max(v.reoRoundEnd, v.sndUna)
	if v.rackMstamp != noStamp {
		old := true
		for _, s := range e.rtx {
			old = old && v.rackMstamp < s.sent
		}
		if old { // before everything outstanding and to come: as good as none
			v.rackMstamp, v.rackEndSeq = noStamp, 0
		}
	} else {
		v.rackEndSeq = 0
	}
	if v.lrcv != noStamp && -v.lrcv >= dps(e.m.c.TCP.DelAck) {
		v.lrcv = noStamp // too long ago to make the next send a reply
	}
	if v.rt.kind == tmNone {
		v.rt = timer{}
	}
	if v.dack.kind == tmNone {
		v.dack = timer{}
	}
	if len(e.ofo) == 0 {
		v.sacks, v.nsacks = [maxSackBlocks]span{}, 0
	}
	if !v.hasDsack {
		v.dsack = span{}
	}
}

// rearmTimers queues the events of the armed timers (after a rebase or a
// restore: a timer's tick is fixed by when it was armed).
func (e *tcpEP) rearmTimers() {
	e.rtG++
	e.daG++
	if t := e.v.rt; t.kind != tmNone {
		e.m.at(e.m.jiffyDeadline(t.arm, t.n), evTimer, uint8(e.id), 0, e.rtG)
	}
	if t := e.v.dack; t.kind != tmNone {
		e.m.at(e.m.jiffyDeadline(t.arm, t.n), evTimer, uint8(e.id), 1, e.daG)
	}
}

// inet_csk_reset_xmit_timer.
func (e *tcpEP) resetTimer(kind uint8, n int64) {
	n = max(1, min(n, e.m.usToJiffies(e.m.c.TCP.RTOMax.Microseconds())))
	e.v.rt = timer{kind: kind, arm: e.now(), n: n}
	e.rtG++
	e.m.at(e.m.jiffyDeadline(e.now(), n), evTimer, uint8(e.id), 0, e.rtG)
}

func (e *tcpEP) clearTimer() {
	e.v.rt = timer{}
	e.rtG++
}

func (e *tcpEP) timer(which uint8, gen uint32) {
	if which == 1 {
		if gen != e.daG || e.v.dack.kind == tmNone {
			return
		}
		e.fired()
		e.v.dack = timer{}
		// tcp_delack_timer_handler: a delayed ACK that had to be sent
		// by the timer ends ping-pong mode.
		if e.v.ackPending {
			e.v.pingpong = false
			e.sendAck()
		}
		return
	}
	if gen != e.rtG || e.v.rt.kind == tmNone {
		return
	}
	e.fired()
	switch e.v.rt.kind {
	case tmREO:
		e.rackReoTimeout()
	case tmTLP:
		e.sendLossProbe()
	case tmRTO:
		e.v.rt = timer{}
		e.retransmitTimer()
	case tmSYN:
		e.v.rt = timer{}
		e.synTimer()
	}
}

func (e *tcpEP) fired() {
	if e.m.rec != nil {
		e.m.rec.timerFired = true
	}
}

// Scoreboard.

func (e *tcpEP) counts() (out, sacked, lost, retrans int64) {
	out = int64(len(e.rtx))
	for _, s := range e.rtx {
		if s.flags&fSacked != 0 {
			sacked++
		}
		if s.flags&fLost != 0 {
			lost++
		}
		if s.flags&fRetrans != 0 {
			retrans++
		}
	}
	return
}

// inflight is tcp_packets_in_flight.
func (e *tcpEP) inflight() int64 {
	out, sacked, lost, retrans := e.counts()
	return out - (sacked + lost) + retrans
}

// highestSack is tcp_highest_sack_seq: the start of the highest SACKed
// segment, or snd_una.
func (e *tcpEP) highestSack() int64 {
	for i := len(e.rtx) - 1; i >= 0; i-- {
		if e.rtx[i].flags&fSacked != 0 {
			return e.rtx[i].seq
		}
	}
	return e.v.sndUna
}

func (e *tcpEP) inCwndReduction() bool { return e.v.ca == caCWR || e.v.ca == caRecovery }

// Sending.

// appWrite: the application's message reaches the stack (tcp_sendmsg).
func (e *tcpEP) appWrite() {
	if e.m.c.PerFlow && !e.v.isClient {
		e.closeAfterFlow()
		return
	}
	e.v.writeEnd += e.v.msgOut
	e.writeXmit(false)
}

// writeXmit is tcp_write_xmit: new segments while the window allows; a
// loss probe may send one beyond it.
func (e *tcpEP) writeXmit(probe bool) int {
	v := &e.v
	c := &e.m.c.TCP
	sent := 0
	limited := false
	for v.sndNxt < v.writeEnd {
		if e.inflight() >= v.cwnd && !(probe && sent == 0) {
			limited = true
			break
		}
		n := min(int64(c.MSS), v.writeEnd-v.sndNxt)
		prior := len(e.rtx)
		s := seg{seq: v.sndNxt, end: v.sndNxt + n, sent: e.now()}
		e.rtx = append(e.rtx, s)
		v.sndNxt += n
		e.transmit(s.seq, s.end)
		// tcp_event_new_data_sent
		if prior == 0 || v.rt.kind == tmTLP {
			e.rearmRTO()
		}
		if e.inCwndReduction() {
			v.prrOut++
		}
		sent++
		if probe {
			break
		}
	}
	if sent > 0 {
		if !probe {
			e.scheduleLossProbe(false)
		}
		limited = limited || e.inflight() >= v.cwnd
		// tcp_cwnd_validate: remember the most outstanding in a window.
		if v.sndUna >= v.maxPacketsSeq || int64(len(e.rtx)) > v.maxPacketsOut {
			v.maxPacketsOut = int64(len(e.rtx))
			v.maxPacketsSeq = v.sndNxt
			v.isCwndLimited = limited
		}
	}
	return sent
}

// transmit puts a data segment (with the ACK it carries) on the way.
func (e *tcpEP) transmit(seq, end int64) {
	v := &e.v
	// tcp_event_data_sent: a reply soon after data came in: ping-pong.
	if v.lrcv != noStamp && e.now()-v.lrcv < dps(e.m.c.TCP.DelAck) {
		v.pingpong = true
	}
	p := e.ackFields()
	p.seq, p.end = seq, end
	p.bytes += int(end - seq)
	if v.isClient && v.firstData == noStamp && e.m.c.PerFlow {
		// fct1 starts where the sender's capture sees the first data
		// segment: handed to the driver, after the stack's transmit path.
		v.firstData = e.now() + dps(e.m.c.Host.TxStack)
	}
	e.m.xmit(p, e.now()+dps(e.m.c.Host.TxStack))
	e.ackSent()
}

// ackFields is a packet carrying this end's ACK and SACK blocks.
func (e *tcpEP) ackFields() packet {
	v := &e.v
	p := packet{from: uint8(e.id), ack: v.rcvNxt, seq: v.sndNxt, end: v.sndNxt}
	if v.hasDsack {
		p.sacks[0], p.nsacks, p.dsack = v.dsack, 1, true
	}
	for i := 0; i < int(v.nsacks) && int(p.nsacks) < maxSackBlocks; i++ {
		p.sacks[p.nsacks] = v.sacks[i]
		p.nsacks++
	}
	p.bytes = max(minFrameBytes, e.m.c.TCP.HeaderBytes)
	if p.nsacks > 0 {
		p.bytes += tcpSackOptBase + tcpSackBlock*int(p.nsacks)
	}
	return p
}

func (e *tcpEP) sendAck() {
	e.m.xmit(e.ackFields(), e.now()+dps(e.m.c.Host.TxStack))
	e.ackSent()
}

// ackSent is tcp_event_ack_sent: whatever went out carried the ACK.
func (e *tcpEP) ackSent() {
	v := &e.v
	v.rcvWup = v.rcvNxt
	v.ackPending, v.ackNow, v.hasDsack = false, false, false
	v.dsack = span{}
	if v.quick > 0 {
		v.quick--
	}
	if v.dack.kind != tmNone {
		v.dack = timer{}
		e.daG++
	}
}

// retransmit sends rtx[i] again: tcp_retransmit_skb, or for a loss probe
// __tcp_retransmit_skb (which leaves retrans_out and undo alone).
func (e *tcpEP) retransmit(i int, probe bool) {
	v := &e.v
	s := &e.rtx[i]
	s.sent = e.now()
	s.flags |= fEverRetr
	if !probe {
		s.flags |= fRetrans
		if v.undoRetrans < 0 {
			v.undoRetrans = 0
		}
		v.undoRetrans++
	}
	e.cnt.retrans++
	e.transmit(s.seq, s.end)
}

// xmitRetransmitQueue is tcp_xmit_retransmit_queue.
func (e *tcpEP) xmitRetransmitQueue() {
	v := &e.v
	for i := range e.rtx {
		if e.inflight() >= v.cwnd {
			return
		}
		_, _, lost, retrans := e.counts()
		if retrans >= lost {
			return
		}
		f := e.rtx[i].flags
		if f&fLost == 0 || f&(fSacked|fRetrans) != 0 {
			continue
		}
		e.retransmit(i, false)
		if e.inCwndReduction() {
			v.prrOut++
		}
		if i == 0 && v.rt.kind != tmREO {
			e.resetTimer(tmRTO, v.rto)
		}
	}
}

// Timers.

// scheduleLossProbe is tcp_schedule_loss_probe: a probe after two
// round trips, plus TCP_RTO_MIN (200 ms: the constant, not the route's
// rto_min) with a single packet out or TCP_TIMEOUT_MIN otherwise, and
// never later than the RTO would fire.
func (e *tcpEP) scheduleLossProbe(advancingRTO bool) bool {
	v := &e.v
	c := &e.m.c.TCP
	if !c.TLP || len(e.rtx) == 0 || (v.ca != caOpen && v.ca != caCWR) {
		return false
	}
	var t int64
	if v.srtt8 != 0 {
		t = e.m.usToJiffies(v.srtt8 >> 2)
		if len(e.rtx) == 1 {
			t += int64(c.HZ) / 5 // TCP_RTO_MIN
		} else {
			t += timeoutMinJ
		}
	} else {
		t = e.m.usToJiffies(c.RTOInit.Microseconds()) // TCP_TIMEOUT_INIT
	}
	delta := e.rtoDeltaUS()
	if advancingRTO {
		delta = e.m.jiffiesToUS(v.rto)
	}
	if delta > 0 {
		t = min(t, e.m.usToJiffies(delta))
	}
	e.resetTimer(tmTLP, t)
	return true
}

// rtoDeltaUS is tcp_rto_delta_us: how far in the future the RTO of the
// oldest outstanding segment is.
func (e *tcpEP) rtoDeltaUS() int64 {
	if len(e.rtx) == 0 {
		return 0
	}
	return e.m.jiffiesToUS(e.v.rto) - usSince(e.rtx[0].sent, e.now())
}

// rearmRTO is tcp_rearm_rto.
func (e *tcpEP) rearmRTO() {
	v := &e.v
	if len(e.rtx) == 0 {
		e.clearTimer()
		return
	}
	rto := v.rto
	if v.rt.kind == tmREO || v.rt.kind == tmTLP {
		rto = e.m.usToJiffies(max(e.rtoDeltaUS(), 1))
	}
	e.resetTimer(tmRTO, rto)
}

// sendLossProbe is tcp_send_loss_probe.
func (e *tcpEP) sendLossProbe() {
	v := &e.v
	switch {
	case v.sndNxt < v.writeEnd:
		if e.writeXmit(true) == 0 {
			e.rearmRTO()
			return
		}
	case v.tlpActive || len(e.rtx) == 0:
		e.rearmRTO()
		return
	default:
		e.retransmit(len(e.rtx)-1, true)
		v.tlpActive, v.tlpHighSeq = true, v.sndNxt
	}
	e.cnt.probes++
	v.rt.kind = tmNone // the RTO restarts from now
	e.rearmRTO()
}

// retransmitTimer is tcp_retransmit_timer: the RTO.
func (e *tcpEP) retransmitTimer() {
	v := &e.v
	if len(e.rtx) == 0 {
		return
	}
	e.cnt.timeouts++
	v.tlpActive = false
	e.enterLoss()
	v.retransmits++
	e.retransmit(0, false)
	v.backoff++
	v.rto = min(v.rto*2, e.m.usToJiffies(e.m.c.TCP.RTOMax.Microseconds()))
	e.resetTimer(tmRTO, v.rto)
}

// rackReoTimeout is tcp_rack_reo_timeout.
func (e *tcpEP) rackReoTimeout() {
	prior := e.inflight()
	e.rackDetectLoss()
	if prior != e.inflight() {
		if e.v.ca != caRecovery {
			e.enterRecovery()
			e.cwndReduction(1, 0)
		}
		e.xmitRetransmitQueue()
	}
	if e.v.rt.kind != tmRTO {
		e.rearmRTO()
	}
}

// Congestion control: DCTCP on Linux, whose reactions to loss are Reno's
// halving; its alpha (ECN) only matters for reductions without a loss.

func (e *tcpEP) dctcpSsthresh() int64 {
	v := &e.v
	v.lossCwnd = v.cwnd
	return max(v.cwnd-int64(float64(v.cwnd)*e.m.c.TCP.DCTCPAlpha/2), 2)
}

// reactToLoss is dctcp_react_to_loss.
func (e *tcpEP) reactToLoss() {
	v := &e.v
	v.lossCwnd = v.cwnd
	v.ssthresh = max(v.cwnd>>1, 2)
}

// currentSsthresh is tcp_current_ssthresh.
func (e *tcpEP) currentSsthresh() int64 {
	v := &e.v
	if e.inCwndReduction() {
		return v.ssthresh
	}
	return max(v.ssthresh, (v.cwnd>>1)+(v.cwnd>>2))
}

// initCwndReduction is tcp_init_cwnd_reduction.
func (e *tcpEP) initCwndReduction() {
	v := &e.v
	v.highSeq = v.sndNxt
	v.tlpActive = false
	v.cwndCnt = 0
	v.priorCwnd = v.cwnd
	v.prrDelivered, v.prrOut = 0, 0
	v.ssthresh = e.dctcpSsthresh()
}

// cwndReduction is tcp_cwnd_reduction: proportional rate reduction.
func (e *tcpEP) cwndReduction(newlyAckedSacked int64, flag int) {
	v := &e.v
	if newlyAckedSacked <= 0 || v.priorCwnd == 0 {
		return
	}
	in := e.inflight()
	delta := v.ssthresh - in
	v.prrDelivered += newlyAckedSacked
	var snd int64
	switch {
	case delta < 0:
		snd = (v.ssthresh*v.prrDelivered+v.priorCwnd-1)/v.priorCwnd - v.prrOut
	case flag&(flagRetransDataAcked|flagLostRetrans) == flagRetransDataAcked:
		snd = min(delta, max(v.prrDelivered-v.prrOut, newlyAckedSacked)+1)
	default:
		snd = min(delta, newlyAckedSacked)
	}
	if v.prrOut == 0 {
		snd = max(snd, 1) // a fast retransmit on entering recovery
	}
	v.cwnd = in + snd
}

// endCwndReduction is tcp_end_cwnd_reduction.
func (e *tcpEP) endCwndReduction() {
	v := &e.v
	if v.ssthresh < infiniteSsthresh && (v.ca == caCWR || v.hasUndo) {
		v.cwnd = v.ssthresh
	}
}

// congAvoid is tcp_reno_cong_avoid (DCTCP's).
func (e *tcpEP) congAvoid(acked int64) {
	v := &e.v
	limited := v.isCwndLimited
	if v.cwnd < v.ssthresh {
		limited = v.cwnd < 2*v.maxPacketsOut // tcp_is_cwnd_limited in slow start
	}
	if !limited {
		return
	}
	if v.cwnd < v.ssthresh { // tcp_slow_start
		c := min(v.cwnd+acked, v.ssthresh)
		acked -= c - v.cwnd
		v.cwnd = c
		if acked == 0 {
			return
		}
	}
	w := v.cwnd // tcp_cong_avoid_ai
	if v.cwndCnt >= w {
		v.cwndCnt = 0
		v.cwnd++
	}
	v.cwndCnt += acked
	if v.cwndCnt >= w {
		d := v.cwndCnt / w
		v.cwndCnt -= d * w
		v.cwnd += d
	}
}

// Undo.

func (e *tcpEP) initUndo() {
	v := &e.v
	_, _, _, retrans := e.counts()
	v.hasUndo, v.undoMarker = true, v.sndUna
	v.undoRetrans = retrans
	if retrans == 0 {
		v.undoRetrans = -1
	}
}

// mayUndo is tcp_may_undo without timestamps: every retransmission of the
// episode was reported as a duplicate.
func (e *tcpEP) mayUndo() bool { return e.v.hasUndo && e.v.undoRetrans == 0 }

// undoCwndReduction is tcp_undo_cwnd_reduction (DCTCP's undo_cwnd).
func (e *tcpEP) undoCwndReduction() {
	v := &e.v
	if v.priorSsthresh != 0 {
		v.cwnd = max(v.cwnd, v.lossCwnd)
		if v.priorSsthresh > v.ssthresh {
			v.ssthresh = v.priorSsthresh
		}
	}
	v.hasUndo = false
	v.rackAdvanced = true
}

func (e *tcpEP) tryUndoRecovery() {
	v := &e.v
	if e.mayUndo() {
		e.undoCwndReduction()
	} else if v.reoPersist > 0 {
		v.reoPersist--
	}
	v.ca = caOpen
}

func (e *tcpEP) tryUndoDsack() bool {
	v := &e.v
	if v.hasUndo && v.undoRetrans == 0 {
		v.reoPersist = min(rackRecoveryThr, v.reoPersist+1)
		e.undoCwndReduction()
		return true
	}
	return false
}

// tryKeepOpen is tcp_try_keep_open.
func (e *tcpEP) tryKeepOpen() {
	v := &e.v
	_, sacked, lost, retrans := e.counts()
	state := caOpen
	everRetr := len(e.rtx) > 0 && e.rtx[0].flags&fEverRetr != 0
	if sacked+lost > 0 || retrans > 0 || everRetr {
		state = caDisorder
	}
	if v.ca != state {
		v.ca = state
		v.highSeq = v.sndNxt
	}
}

// enterRecovery is tcp_enter_recovery, with dctcp_state's reaction.
func (e *tcpEP) enterRecovery() {
	v := &e.v
	e.cnt.recoveries++
	v.priorSsthresh = 0
	e.initUndo()
	if !e.inCwndReduction() {
		v.priorSsthresh = e.currentSsthresh()
		e.initCwndReduction()
	}
	if v.ca != caRecovery {
		e.reactToLoss()
	}
	v.ca = caRecovery
}

// enterLoss is tcp_enter_loss (without F-RTO).
func (e *tcpEP) enterLoss() {
	v := &e.v
	c := &e.m.c.TCP
	// tcp_timeout_mark_lost: the head, and the rest unless RACK says
	// they were sent too recently.
	for i := range e.rtx {
		if i > 0 && e.rackSkbTimeout(&e.rtx[i], 0) > 0 {
			continue
		}
		e.markLost(i)
	}
	if v.ca <= caDisorder || v.highSeq <= v.sndUna || (v.ca == caLoss && v.retransmits == 0) {
		v.priorSsthresh = e.currentSsthresh()
		v.priorCwnd = v.cwnd
		v.ssthresh = e.dctcpSsthresh()
		e.reactToLoss() // CA_EVENT_LOSS
		e.initUndo()
	}
	v.cwnd = e.inflight() + 1
	v.cwndCnt = 0
	_, sacked, _, _ := e.counts()
	if v.ca <= caDisorder && sacked >= int64(c.Reordering) {
		v.reordering = min(v.reordering, int64(c.Reordering))
	}
	v.ca = caLoss
	v.highSeq = v.sndNxt
}

// markLost is tcp_mark_skb_lost.
func (e *tcpEP) markLost(i int) {
	s := &e.rtx[i]
	if s.flags&(fSacked|fLost) != 0 {
		return
	}
	s.flags |= fLost
	s.flags &^= fRetrans // a retransmission lost again
}

// RACK (tcp_recovery.c).

// rackSentAfter is tcp_rack_sent_after.
func rackSentAfter(t1, t2, seq1, seq2 int64) bool {
	return t1 > t2 || (t1 == t2 && seq1 > seq2)
}

// rackAdvance is tcp_rack_advance.
func (e *tcpEP) rackAdvance(flags uint8, end, sent int64) {
	v := &e.v
	rtt := usSince(sent, e.now())
	if flags&(fRetrans|fEverRetr) != 0 && rtt < v.minRTT {
		return // ambiguous: the original may be what got through
	}
	v.rackAdvanced = true
	v.rackRTT = rtt
	if rackSentAfter(sent, v.rackMstamp, end, v.rackEndSeq) {
		v.rackMstamp, v.rackEndSeq = sent, end
	}
}

// rackReoWnd is tcp_rack_reo_wnd.
func (e *tcpEP) rackReoWnd() int64 {
	v := &e.v
	if !v.reordSeen {
		if v.ca >= caRecovery {
			return 0
		}
		if _, sacked, _, _ := e.counts(); sacked >= v.reordering {
			return 0
		}
	}
	return min((v.minRTT>>2)*v.reoWndSteps, v.srtt8>>3)
}

func (e *tcpEP) rackSkbTimeout(s *seg, reoWnd int64) int64 {
	return e.v.rackRTT + reoWnd - usSince(s.sent, e.now())
}

// rackDetectLoss is tcp_rack_detect_loss: an outstanding segment sent
// before the latest one delivered is lost once more than the latest RTT
// plus the reordering window has passed since it was sent. It returns
// the longest wait (microseconds) of those not yet lost.
func (e *tcpEP) rackDetectLoss() int64 {
	v := &e.v
	reo := e.rackReoWnd()
	e.sort = e.sort[:0]
	for i, s := range e.rtx {
		if s.flags&fSacked != 0 || (s.flags&fLost != 0 && s.flags&fRetrans == 0) {
			continue
		}
		e.sort = append(e.sort, i)
	}
	// The kernel's time-sorted list: by time sent, then sequence.
	for a := 1; a < len(e.sort); a++ {
		for b := a; b > 0; b-- {
			x, y := &e.rtx[e.sort[b-1]], &e.rtx[e.sort[b]]
			if x.sent < y.sent || (x.sent == y.sent && x.end <= y.end) {
				break
			}
			e.sort[b-1], e.sort[b] = e.sort[b], e.sort[b-1]
		}
	}
	var wait int64
	for _, i := range e.sort {
		s := &e.rtx[i]
		if !rackSentAfter(v.rackMstamp, s.sent, v.rackEndSeq, s.end) {
			break
		}
		if r := e.rackSkbTimeout(s, reo); r <= 0 {
			e.markLost(i)
		} else {
			wait = max(wait, r)
		}
	}
	return wait
}

// rackMarkLost is tcp_rack_mark_lost.
func (e *tcpEP) rackMarkLost() {
	v := &e.v
	if !v.rackAdvanced {
		return
	}
	v.rackAdvanced = false
	if wait := e.rackDetectLoss(); wait > 0 {
		e.resetTimer(tmREO, e.m.usToJiffies(wait)+timeoutMinJ)
	}
}

// rackUpdateReoWnd is tcp_rack_update_reo_wnd: a DSACK widens the
// reordering window by a step (once per round trip); sixteen recoveries
// without one narrow it back.
func (e *tcpEP) rackUpdateReoWnd(flag int) {
	v := &e.v
	if flag&flagDsacking != 0 {
		if v.sndUna >= v.reoRoundEnd {
			v.reoWndSteps = min(v.reoWndSteps+1, 0xff)
			v.reoRoundEnd = v.sndNxt
			v.reoPersist = rackRecoveryThr
		}
	} else if v.reoPersist == 0 {
		v.reoWndSteps = 1
	}
}

// checkSackReordering is tcp_check_sack_reordering.
func (e *tcpEP) checkSackReordering(low int64) {
	v := &e.v
	fack := e.highestSack()
	if low >= fack {
		return
	}
	mss := int64(e.m.c.TCP.MSS)
	if metric := fack - low; metric > v.reordering*mss {
		v.reordering = min((metric+mss-1)/mss, int64(e.m.c.TCP.MaxReordering))
	}
	v.reordSeen = true
}

// RTT (tcp_rtt_estimator, tcp_set_rto).

func (e *tcpEP) rttEstimator(m int64) {
	v := &e.v
	rtoMin := e.m.c.TCP.RTOMin.Microseconds()
	if v.srtt8 != 0 {
		d := m - (v.srtt8 >> 3)
		v.srtt8 += d
		if d < 0 {
			d = -d
			d -= v.mdev >> 2
			if d > 0 {
				d >>= 3
			}
		} else {
			d -= v.mdev >> 2
		}
		v.mdev += d
		if v.mdev > v.mdevMax {
			v.mdevMax = v.mdev
			if v.mdevMax > v.rttvar {
				v.rttvar = v.mdevMax
			}
		}
		if v.sndUna > v.rttSeq {
			if v.mdevMax < v.rttvar {
				v.rttvar -= (v.rttvar - v.mdevMax) >> 2
			}
			v.rttSeq = v.sndNxt
			v.mdevMax = rtoMin
		}
	} else {
		v.srtt8 = m << 3
		v.mdev = m << 1
		v.rttvar = max(v.mdev, rtoMin)
		v.mdevMax = v.rttvar
		v.rttSeq = v.sndNxt
	}
	v.srtt8 = max(1, v.srtt8)
	v.rto = min(e.m.usToJiffies((v.srtt8>>3)+v.rttvar), e.m.usToJiffies(e.m.c.TCP.RTOMax.Microseconds()))
}

// ACK processing (tcp_ack).

func (e *tcpEP) onAck(p *packet, flag int) {
	v := &e.v
	ack := p.ack
	if ack > v.sndNxt {
		return
	}
	priorUna := v.sndUna
	priorFack := e.highestSack()
	if ack < priorUna { // an old ACK: only its SACK blocks count
		if p.nsacks > 0 {
			_, _ = e.sacktag(p, priorUna, priorFack, &flag)
			e.fastretransAlert(priorUna, flag)
			e.xmitRetransmitQueue()
		}
		return
	}
	if ack > priorUna {
		flag |= flagSndUnaAdvanced
		v.retransmits = 0
	}
	v.sndUna = ack
	newlySacked, sackRTT := e.sacktag(p, priorUna, priorFack, &flag)
	newlyAcked := e.cleanRtx(ack, priorFack, sackRTT, &flag)
	e.rackUpdateReoWnd(flag)
	if v.tlpActive {
		e.processTLPAck(ack, flag)
	}
	if flag&flagSetXmitTimer != 0 {
		if !e.scheduleLossProbe(true) {
			e.rearmRTO()
		}
	}
	rexmit := false
	if flag&flagNotDup == 0 || flag&flagCAAlert != 0 || v.ca != caOpen {
		rexmit = e.fastretransAlert(priorUna, flag)
	}
	// tcp_cong_control
	delivered := newlyAcked + newlySacked
	if e.inCwndReduction() {
		e.cwndReduction(delivered, flag)
	} else if e.mayRaiseCwnd(flag) {
		e.congAvoid(delivered)
	}
	if rexmit {
		e.xmitRetransmitQueue()
	}
	if len(e.rtx) == 0 && v.rt.kind != tmNone {
		e.clearTimer()
	}
}

func (e *tcpEP) mayRaiseCwnd(flag int) bool {
	if e.v.reordering > int64(e.m.c.TCP.Reordering) {
		return flag&flagForwardProgress != 0
	}
	return flag&flagDataAcked != 0
}

// sacktag marks the segments p's SACK blocks cover (tcp_sacktag_write_queue,
// tcp_check_dsack). It returns how many were newly SACKed and the RTT
// sample they give (microseconds, -1: none).
func (e *tcpEP) sacktag(p *packet, priorUna, priorFack int64, flag *int) (int64, int64) {
	v := &e.v
	if p.nsacks == 0 {
		return 0, -1
	}
	blocks := p.sacks[:p.nsacks]
	dup := blocks[0].lo < p.ack ||
		(len(blocks) > 1 && blocks[0].hi <= blocks[1].hi && blocks[0].lo >= blocks[1].lo)
	if dup {
		*flag |= flagDsacking
		if v.hasUndo && v.undoRetrans > 0 && blocks[0].hi <= priorUna && blocks[0].hi > v.undoMarker {
			v.undoRetrans-- // a duplicate of data already forgotten
		}
	}
	var n int64
	reord := int64(math.MaxInt64)
	first := int64(math.MaxInt64)
	for bi, b := range blocks {
		for i := range e.rtx {
			s := &e.rtx[i]
			if s.seq < b.lo || s.end > b.hi {
				continue
			}
			if bi == 0 && dup && s.flags&(fRetrans|fEverRetr) != 0 {
				if v.hasUndo && v.undoRetrans > 0 && s.end > v.undoMarker {
					v.undoRetrans--
				}
			}
			if s.flags&fSacked != 0 {
				continue
			}
			s.flags |= fSacked
			s.flags &^= fLost | fRetrans
			n++
			*flag |= flagDataSacked
			if s.flags&fEverRetr == 0 {
				first = min(first, s.sent)
				if s.seq < priorFack {
					reord = min(reord, s.seq)
				}
			}
			e.rackAdvance(s.flags, s.end, s.sent)
		}
	}
	if reord < priorFack {
		e.checkSackReordering(reord)
	}
	if first == math.MaxInt64 {
		return n, -1
	}
	return n, usSince(first, e.now())
}

// cleanRtx drops what ack covers (tcp_clean_rtx_queue) and takes the RTT
// sample (tcp_ack_update_rtt); it returns how many segments were newly
// acknowledged.
func (e *tcpEP) cleanRtx(ack, priorFack, sackRTT int64, flag *int) int64 {
	v := &e.v
	var n int64
	firstAckt, lastAckt := int64(math.MaxInt64), int64(math.MinInt64)
	reord := int64(math.MaxInt64)
	k := 0
	for ; k < len(e.rtx) && e.rtx[k].end <= ack; k++ {
		s := &e.rtx[k]
		*flag |= flagDataAcked
		sacked := s.flags&fSacked != 0
		if s.flags&(fRetrans|fEverRetr) != 0 {
			*flag |= flagRetransDataAcked
		} else if !sacked {
			firstAckt = min(firstAckt, s.sent)
			lastAckt = max(lastAckt, s.sent)
			reord = min(reord, s.seq)
		}
		if !sacked {
			n++
			e.rackAdvance(s.flags, s.end, s.sent)
		}
	}
	e.rtx = e.rtx[:copy(e.rtx, e.rtx[k:])]
	if *flag&flagDataAcked != 0 {
		*flag |= flagSetXmitTimer
	}
	if reord < priorFack {
		e.checkSackReordering(reord) // a hole filled by the original: reordering
	}
	seqRTT, caRTT := int64(-1), int64(-1)
	if firstAckt != math.MaxInt64 {
		seqRTT, caRTT = usSince(firstAckt, e.now()), usSince(lastAckt, e.now())
	}
	if seqRTT < 0 {
		seqRTT, caRTT = sackRTT, sackRTT
	}
	if seqRTT >= 0 {
		if caRTT >= 0 && (v.minRTT == 0 || caRTT < v.minRTT) {
			v.minRTT = max(caRTT, 1)
		}
		e.rttEstimator(seqRTT)
		v.backoff = 0
	}
	return n
}

// processTLPAck is tcp_process_tlp_ack.
func (e *tcpEP) processTLPAck(ack int64, flag int) {
	v := &e.v
	switch {
	case ack < v.tlpHighSeq:
	case flag&flagDsacking != 0:
		v.tlpActive = false // the original and the probe both arrived
	case ack > v.tlpHighSeq:
		e.initCwndReduction() // the probe repaired a loss
		v.ca = caCWR
		e.endCwndReduction()
		e.tryKeepOpen()
	case flag&(flagSndUnaAdvanced|flagNotDup|flagDataSacked) == 0:
		v.tlpActive = false
	}
}

// fastretransAlert is tcp_fastretrans_alert with RACK; it reports whether
// lost segments are to be retransmitted.
func (e *tcpEP) fastretransAlert(priorUna int64, flag int) bool {
	v := &e.v
	// D. State exits once high_seq is acknowledged.
	if v.ca != caOpen && v.sndUna >= v.highSeq {
		switch v.ca {
		case caCWR:
			if v.sndUna != v.highSeq {
				e.endCwndReduction()
				v.ca = caOpen
			}
		case caRecovery:
			e.tryUndoRecovery()
			e.endCwndReduction()
		}
	}
	// E. Process the state.
	switch v.ca {
	case caRecovery:
		if e.tryUndoDsack() {
			e.tryKeepOpen()
			return false
		}
		e.identifyLoss(&flag)
		return true
	}
	rexmit := false
	if v.ca == caLoss {
		// tcp_process_loss; an Open state (undone, or recovered) goes on
		// as any other.
		switch {
		case flag&flagSndUnaAdvanced != 0 && e.mayUndo():
			e.undoCwndReduction()
			v.retransmits = 0
			v.ca = caOpen
		case v.sndUna >= v.highSeq:
			e.tryUndoRecovery()
		default:
			rexmit = true
		}
		e.identifyLoss(&flag)
		if v.ca != caOpen && flag&flagLostRetrans == 0 {
			return rexmit
		}
	}
	if v.ca <= caDisorder {
		e.tryUndoDsack()
	}
	e.identifyLoss(&flag)
	if _, _, lost, _ := e.counts(); lost == 0 { // tcp_time_to_recover
		if v.ca != caCWR {
			e.tryKeepOpen()
		}
		return rexmit
	}
	e.enterRecovery()
	return true
}

// identifyLoss is tcp_identify_packet_loss.
func (e *tcpEP) identifyLoss(flag *int) {
	if len(e.rtx) == 0 {
		return
	}
	_, _, _, prior := e.counts()
	e.rackMarkLost()
	if _, _, _, r := e.counts(); r < prior {
		*flag |= flagLostRetrans
	}
}

// Receiving.

// receive handles a frame from the peer: its ACK, then its data, then
// whatever may now be sent, then the ACK owed (tcp_rcv_established).
func (e *tcpEP) receive(p *packet) {
	if (p.syn != 0 || e.v.conn != connEstablished) && e.handshake(p) {
		return
	}
	flag := 0
	if p.end > p.seq {
		flag |= flagData
	}
	e.onAck(p, flag)
	if p.end > p.seq {
		e.onData(p)
	}
	e.writeXmit(false)
	e.ackCheck()
	// fct1 (Config.PerFlow) ends at the first ACK that covers every byte
	// of the flow, as the sender's capture sees it.
	if v := &e.v; e.m.c.PerFlow && v.isClient && v.writeEnd > 0 && v.sndUna >= v.writeEnd && !e.m.trialDone {
		e.m.fctFrom = v.firstData
		e.m.done(e.now())
	}
}

// onData is tcp_data_queue.
func (e *tcpEP) onData(p *packet) {
	v := &e.v
	v.lrcv = e.now()
	if n := p.end - p.seq; n > v.rcvMss {
		v.rcvMss = min(n, int64(e.m.c.TCP.MSS))
	}
	v.ackPending = true
	switch {
	case p.end <= v.rcvNxt: // all of it again: a needless retransmission
		e.cnt.spurious++
		v.dsack, v.hasDsack = span{p.seq, p.end}, true
		e.enterQuickack()
		v.ackNow = true
	case p.seq <= v.rcvNxt: // in order
		v.rcvNxt = p.end
		had := len(e.ofo) > 0
		k := 0
		for ; k < len(e.ofo) && e.ofo[k].lo <= v.rcvNxt; k++ {
			v.rcvNxt = max(v.rcvNxt, e.ofo[k].hi)
		}
		e.ofo = e.ofo[:copy(e.ofo, e.ofo[k:])]
		e.sackRemove()
		if had && len(e.ofo) == 0 {
			v.ackNow = true // RFC 5681 4.2: a filled hole is acknowledged at once
		}
		e.deliverApp()
	default: // out of order
		e.cnt.reordered++
		for _, o := range e.ofo {
			if o.lo <= p.seq && p.end <= o.hi {
				e.cnt.spurious++
				v.dsack, v.hasDsack = span{p.seq, p.end}, true
				return
			}
		}
		e.ofoInsert(span{p.seq, p.end})
	}
}

func (e *tcpEP) enterQuickack() {
	e.v.quick = maxQuickAcks
	e.v.pingpong = false
}

// ofoInsert queues s and moves its SACK block to the front
// (tcp_data_queue_ofo, tcp_sack_new_ofo_skb).
func (e *tcpEP) ofoInsert(s span) {
	v := &e.v
	i := 0
	for i < len(e.ofo) && e.ofo[i].hi < s.lo {
		i++
	}
	e.ofo = append(e.ofo, span{})
	copy(e.ofo[i+1:], e.ofo[i:])
	e.ofo[i] = s
	// Merge neighbours.
	out := e.ofo[:0]
	for _, o := range e.ofo {
		if n := len(out); n > 0 && o.lo <= out[n-1].hi {
			out[n-1].hi = max(out[n-1].hi, o.hi)
			out[n-1].lo = min(out[n-1].lo, o.lo)
			continue
		}
		out = append(out, o)
	}
	e.ofo = out
	var blk span
	for _, o := range e.ofo {
		if o.lo <= s.lo && s.hi <= o.hi {
			blk = o
		}
	}
	// The block with the new data first, then the others by recency.
	blocks := []span{blk}
	for _, b := range v.sacks[:v.nsacks] {
		if b.hi < blk.lo || b.lo > blk.hi {
			blocks = append(blocks, b)
		}
	}
	v.nsacks = uint8(min(len(blocks), maxSackBlocks))
	copy(v.sacks[:], blocks[:v.nsacks])
}

// sackRemove drops SACK blocks rcv_nxt has passed (tcp_sack_remove).
func (e *tcpEP) sackRemove() {
	v := &e.v
	n := 0
	for _, b := range v.sacks[:v.nsacks] {
		if b.hi > v.rcvNxt {
			v.sacks[n] = b
			n++
		}
	}
	for i := n; i < maxSackBlocks; i++ {
		v.sacks[i] = span{}
	}
	v.nsacks = uint8(n)
}

// ackCheck is __tcp_ack_snd_check.
func (e *tcpEP) ackCheck() {
	v := &e.v
	c := &e.m.c.TCP
	if !v.ackPending {
		return
	}
	if !c.DelayedAck || v.ackNow || v.rcvNxt-v.rcvWup > v.rcvMss || (v.quick > 0 && !v.pingpong) || len(e.ofo) > 0 {
		e.sendAck()
		return
	}
	if v.dack.kind == tmNone {
		n := max(1, e.m.usToJiffies(c.DelAck.Microseconds()))
		v.dack = timer{kind: 1, arm: e.now(), n: n}
		e.daG++
		e.m.at(e.m.jiffyDeadline(e.now(), n), evTimer, uint8(e.id), 1, e.daG)
	}
}

// deliverApp hands a complete message to the application.
func (e *tcpEP) deliverApp() {
	v := &e.v
	if v.rcvNxt < v.waitEnd {
		return
	}
	v.waitEnd += v.msgIn
	h := &e.m.c.Host
	if v.isClient {
		e.m.done(e.now() + dps(h.Wake))
		return
	}
	// The server reads the request and writes its answer.
	e.m.at(e.now()+dps(h.Wake)+dps(h.Syscall), evApp, uint8(e.id), appWrite, 0)
}
