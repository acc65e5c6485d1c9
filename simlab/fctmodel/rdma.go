package fctmodel

// An RDMA reliable-connection endpoint on the NIC (InfiniBand Architecture
// Specification vol. 1, ch. 9, as RoCEv2 carries it): the requester sends
// a WRITE as packets with consecutive PSNs and keeps a transport timer;
// the responder takes packets in PSN order only, ACKs the last packet of a
// message (and every AckEvery packets), answers the first out-of-sequence
// packet with a NAK and drops the rest until the expected one comes. A NAK
// or the timer makes the requester go back to the oldest unacknowledged
// packet and send everything from there again (go-back-N).

const (
	rdData = iota
	rdAck
	rdNak
)

type rdmaVars struct {
	// Requester.
	psnNext, psnUna    int64
	msgStart, msgBytes int64 // the message in flight: its first PSN and length
	timerOn            bool
	timerArm           int64 // ps
	// Responder.
	ePSN     int64
	nakSent  bool
	sinceAck int64
	isClient bool
}

type rdmaEP struct {
	m   *Model
	id  int
	v   rdmaVars
	cnt counters
	gen uint32
}

func newRDMA(m *Model, id int) *rdmaEP {
	return &rdmaEP{m: m, id: id, v: rdmaVars{isClient: id == 0}}
}

func (e *rdmaEP) settled() bool { return e.v.psnUna == e.v.psnNext && !e.v.nakSent }

func (e *rdmaEP) rebase(dt, dSnd, dRcv int64) {
	v := &e.v
	v.psnNext -= dSnd
	v.psnUna -= dSnd
	v.msgStart -= dSnd
	v.ePSN -= dRcv
	if v.timerOn {
		v.timerArm -= dt
	} else {
		v.timerArm = 0
	}
}

func (e *rdmaEP) timeout() int64 {
	return int64(4096) << e.m.c.RDMA.TimeoutExp * 1000 // 4.096 us * 2^exp, in ps
}

func (e *rdmaEP) rearmTimers() {
	e.gen++
	if e.v.timerOn {
		e.m.at(e.v.timerArm+e.timeout(), evTimer, uint8(e.id), 0, e.gen)
	}
}

func (e *rdmaEP) startTimer(at int64) {
	e.v.timerOn, e.v.timerArm = true, at
	e.gen++
	e.m.at(at+e.timeout(), evTimer, uint8(e.id), 0, e.gen)
}

func (e *rdmaEP) stopTimer() {
	e.v.timerOn, e.v.timerArm = false, 0
	e.gen++
}

// post is the application posting a WRITE of n bytes.
func (e *rdmaEP) post(now, n int64) {
	v := &e.v
	mtu := int64(e.m.c.RDMA.MTU)
	pkts := max(1, (n+mtu-1)/mtu)
	v.msgStart, v.msgBytes = v.psnNext, n
	ready := now + dps(e.m.c.Host.Post)
	for k := int64(0); k < pkts; k++ {
		e.sendData(v.psnNext+k, ready)
	}
	v.psnNext += pkts
	if !v.timerOn {
		e.startTimer(ready)
	}
}

func (e *rdmaEP) sendData(psn, ready int64) {
	v := &e.v
	mtu := int64(e.m.c.RDMA.MTU)
	k := psn - v.msgStart
	payload := min(mtu, v.msgBytes-k*mtu)
	bytes := roceBytes + int(payload)
	if k == 0 {
		bytes += rethBytes
	}
	last := (k+1)*mtu >= v.msgBytes
	e.m.xmit(packet{from: uint8(e.id), bytes: max(bytes, minFrameBytes), rkind: rdData, psn: psn, last: last}, ready)
}

// goBack sends again everything from the oldest unacknowledged packet.
func (e *rdmaEP) goBack() {
	v := &e.v
	ready := e.m.now + dps(e.m.c.Host.Post)
	for psn := v.psnUna; psn < v.psnNext; psn++ {
		e.sendData(psn, ready)
		e.cnt.retrans++
	}
	e.startTimer(ready)
}

func (e *rdmaEP) timer(gen uint32) {
	if gen != e.gen || !e.v.timerOn {
		return
	}
	if e.m.rec != nil {
		e.m.rec.timerFired = true
	}
	e.cnt.timeouts++
	e.goBack()
}

func (e *rdmaEP) respond(kind uint8, psn int64) {
	e.m.xmit(packet{from: uint8(e.id), bytes: roceAckBytes, rkind: kind, psn: psn}, e.m.now)
}

func (e *rdmaEP) receive(p *packet) {
	v := &e.v
	now := e.m.now
	h := &e.m.c.Host
	switch p.rkind {
	case rdAck, rdNak:
		if p.psn < v.psnUna-1 || v.psnUna == v.psnNext {
			return // stale
		}
		if p.rkind == rdNak {
			if p.psn < v.psnUna {
				return
			}
			e.cnt.recoveries++
			v.psnUna = p.psn // a NAK acknowledges what came before
			e.goBack()
			return
		}
		if p.psn < v.psnUna {
			return
		}
		v.psnUna = p.psn + 1
		if v.psnUna < v.psnNext {
			e.startTimer(now) // progress restarts the timer
			return
		}
		e.stopTimer()
		if v.isClient && e.m.c.ResponseBytes == 0 {
			e.m.done(now + dps(h.Poll)) // the completion, polled
		}
	case rdData:
		switch {
		case p.psn == v.ePSN:
			v.ePSN++
			v.nakSent = false
			v.sinceAck++
			if p.last || (e.m.c.RDMA.AckEvery > 0 && v.sinceAck >= int64(e.m.c.RDMA.AckEvery)) {
				e.respond(rdAck, p.psn)
				v.sinceAck = 0
			}
			if p.last && e.m.c.ResponseBytes > 0 {
				// The message has landed; the polling application sees it.
				if v.isClient {
					e.m.done(now + dps(h.Poll))
				} else {
					e.m.at(now+dps(h.Poll), evApp, uint8(e.id), appWrite, 0)
				}
			}
		case p.psn < v.ePSN:
			e.cnt.spurious++
			if p.last {
				e.respond(rdAck, v.ePSN-1)
			}
		default:
			e.cnt.reordered++
			if !v.nakSent {
				e.respond(rdNak, v.ePSN)
				v.nakSent = true
			}
		}
	}
}
