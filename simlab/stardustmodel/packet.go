package stardustmodel

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// PacketFabric is the comparison the paper draws Stardust against (§5.2,
// §5.4, §6.3): the same one-stage topology built of packet switches. The
// FAs are ToRs and the FEs spines; nothing is scheduled. A flow is hashed
// to one uplink of its ToR and one of its spine's parallel links down to
// the destination ToR (ECMP, per flow, chosen at random as a hash of the
// flow's header would), and packets are pushed in as fast as the sender's
// window allows. Every switch output (ToR uplink, spine downlink, ToR port
// to its host) has a shallow drop-tail buffer of BufferBytes.
//
// The senders keep a window of packets in flight, AIMD as TCP Reno does
// (one packet more per window acknowledged, half on a loss, at most once
// per window); the receiver acknowledges every packet, the
// acknowledgement returning over an uncongested path with the fabric's
// propagation delay; a lost packet is sent again RTO after it was sent
// (selective acknowledgements with a retransmission timer; no fast
// retransmit). Time is slotted as Model's, in fabric cell times of the
// Config; a link sends a packet whole once it has had the packet's time
// (store and forward).
type PacketFabric struct {
	c    Config
	o    PacketOpts
	r    *rand.Rand
	prop int
	rto  int64
	k    int // parallel links from a spine to each ToR

	linkBytes, portBytes float64 // bytes per slot

	up   []pqueue // [fa*LinksPerFA + j]
	down []pqueue // [fe*FAs*k + fa*k + i]
	port []pqueue // [global port]: ToR to host
	nic  []float64

	flows []pflow
	cal   map[int64][]pev
	now   int64

	// Drops counts packets dropped in the fabric (a full buffer), Sent
	// the packets sent, retransmissions included, Retransmits those.
	Drops, Sent, Retransmits int64
}

type pkt struct {
	flow  int32
	seq   int32
	down  int32 // spine downlink it takes
	prio  int8
	bytes int32
	hop   int8 // 0 on the uplink, 1 on the spine's downlink, 2 at the port
	sent  int64
}

type pqueue struct {
	q     [][]pkt // per class
	bytes []int
	acc   float64
}

type pflow struct {
	src, port, up, down int // ToR, global port, hashed uplink and downlink
	bytes               int64
	prio                int
	pktBytes            int
	npkt                int
	next                int     // next new sequence number
	retx                []int32 // lost packets to send again
	inflight            int
	cwnd                float64
	lastCut             int64
	acked               []bool
	nacked              int
	delivered           int64
	done                float64
	drops               int64
}

// pev is a packet reaching a hop, an acknowledgement or a timeout.
type pev struct {
	kind int8 // 0 packet arrives at its next queue, 1 ack, 2 timeout
	p    pkt
}

// NewPacketFabric builds the packet fabric of c's one-stage topology
// (FAs, FEs, LinksPerFA, PortsPerFA, rates, PropDelay).
func NewPacketFabric(c Config, o PacketOpts, r *rand.Rand) (*PacketFabric, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.NStages() != 1 {
		return nil, fmt.Errorf("the packet fabric has one stage of spines, not %d", c.NStages())
	}
	if o.BufferBytes <= 0 || o.InitWindow <= 0 || o.RTO <= 0 || o.Classes < 0 {
		return nil, fmt.Errorf("packet fabric: buffer %d B, first window %d, RTO %v must be positive, classes %d not negative", o.BufferBytes, o.InitWindow, o.RTO, o.Classes)
	}
	o.Classes = max(o.Classes, 1)
	slot := c.SlotSeconds()
	f := &PacketFabric{c: c, o: o, r: r, k: c.LinksPerFA / c.FEs, cal: map[int64][]pev{}}
	f.prop = int(math.Ceil(c.PropDelay.Seconds() / slot))
	f.rto = int64(math.Ceil(o.RTO.Seconds() / slot))
	f.linkBytes, f.portBytes = c.LinkBps*slot/8, c.PortBps*slot/8
	f.up = f.queues(c.FAs * c.LinksPerFA)
	f.down = f.queues(c.FEs * c.FAs * f.k)
	f.port = f.queues(c.FAs * c.PortsPerFA)
	f.nic = make([]float64, 0)
	return f, nil
}

func (f *PacketFabric) queues(n int) []pqueue {
	qs := make([]pqueue, n)
	for i := range qs {
		qs[i] = pqueue{q: make([][]pkt, f.o.Classes), bytes: make([]int, f.o.Classes)}
	}
	return qs
}

// AddFlow offers bytes from ToR src to global port, in packets of
// pktBytes, now, and returns the flow's number.
func (f *PacketFabric) AddFlow(src, port int, bytes int64, pktBytes int) (int, error) {
	return f.AddFlowClass(src, port, 0, bytes, pktBytes)
}

// AddFlowClass is AddFlow in traffic class prio (0 the highest).
func (f *PacketFabric) AddFlowClass(src, port, prio int, bytes int64, pktBytes int) (int, error) {
	c := f.c
	if src < 0 || src >= c.FAs || port < 0 || port >= len(f.port) || port/c.PortsPerFA == src || bytes <= 0 || pktBytes <= 0 || prio < 0 || prio >= f.o.Classes {
		return 0, fmt.Errorf("flow ToR %d to port %d, class %d, %d B in %d B packets: expected another ToR's port, a class below %d and positive sizes", src, port, prio, bytes, pktBytes, f.o.Classes)
	}
	n := int((bytes + int64(pktBytes) - 1) / int64(pktBytes))
	fl := pflow{src: src, port: port, up: src*c.LinksPerFA + f.r.IntN(c.LinksPerFA), bytes: bytes, prio: prio, pktBytes: pktBytes,
		npkt: n, cwnd: float64(f.o.InitWindow), lastCut: -1 << 40, acked: make([]bool, n), done: -1}
	fe := (fl.up - src*c.LinksPerFA) % c.FEs
	dst := port / c.PortsPerFA
	fl.down = fe*c.FAs*f.k + dst*f.k + f.r.IntN(f.k)
	f.flows = append(f.flows, fl)
	f.nic = append(f.nic, 0)
	return len(f.flows) - 1, nil
}

func (f *PacketFabric) size(fl *pflow, seq int) int32 {
	if seq == fl.npkt-1 {
		return int32(fl.bytes - int64(seq)*int64(fl.pktBytes))
	}
	return int32(fl.pktBytes)
}

func (f *PacketFabric) at(t int64, e pev) { f.cal[t] = append(f.cal[t], e) }

// push puts a packet in its class's queue, or drops it (drop tail).
func (f *PacketFabric) push(q *pqueue, p pkt) {
	if q.bytes[p.prio]+int(p.bytes) > f.o.BufferBytes {
		f.Drops++
		f.flows[p.flow].drops++
		if !f.o.OpenLoop {
			f.at(p.sent+f.rto, pev{kind: 2, p: p})
		}
		return
	}
	q.q[p.prio] = append(q.q[p.prio], p)
	q.bytes[p.prio] += int(p.bytes)
}

// serve sends what a queue's link rate allows this slot; deliver is
// called with each packet sent.
func (f *PacketFabric) serve(q *pqueue, rate float64, deliver func(pkt)) {
	head := func() int { // the highest class with a packet, -1 none
		for c := range q.q {
			if len(q.q[c]) > 0 {
				return c
			}
		}
		return -1
	}
	c := head()
	if c < 0 {
		q.acc = 0
		return
	}
	q.acc += rate
	for c >= 0 && q.acc >= float64(q.q[c][0].bytes) {
		p := q.q[c][0]
		q.q[c] = q.q[c][1:]
		q.bytes[c] -= int(p.bytes)
		q.acc -= float64(p.bytes)
		deliver(p)
		c = head()
	}
}

// Run advances the fabric by n slots.
func (f *PacketFabric) Run(n int64) {
	for end := f.now + n; f.now < end; f.now++ {
		f.step()
	}
}

func (f *PacketFabric) step() {
	c := f.c
	hop := int64(f.prop) + 1
	// Arrivals, acknowledgements and timeouts due now, simultaneous ones
	// in random order (none has a switch's port arbitration behind it).
	evs := f.cal[f.now]
	f.r.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	for _, e := range evs {
		fl := &f.flows[e.p.flow]
		switch e.kind {
		case 0:
			switch e.p.hop {
			case 1:
				f.push(&f.down[e.p.down], e.p)
			case 2:
				f.push(&f.port[fl.port], e.p)
			}
		case 1:
			fl.inflight--
			if !fl.acked[e.p.seq] {
				fl.acked[e.p.seq] = true
				fl.nacked++
				fl.cwnd += 1 / fl.cwnd
			}
		case 2:
			fl.inflight--
			fl.retx = append(fl.retx, e.p.seq)
			// One cut per window's round trip.
			if f.now-fl.lastCut > f.rto {
				fl.cwnd = max(1, fl.cwnd/2)
				fl.lastCut = f.now
			}
		}
	}
	delete(f.cal, f.now)
	// Ports deliver to the hosts: the receiver acknowledges.
	for g := range f.port {
		f.serve(&f.port[g], f.portBytes, func(p pkt) {
			fl := &f.flows[p.flow]
			fl.delivered += int64(p.bytes)
			// Only a dropped packet is sent again, so none is counted twice.
			if fl.delivered >= fl.bytes && fl.done < 0 {
				fl.done = float64(f.now + 1)
			}
			if !f.o.OpenLoop {
				f.at(f.now+2*hop, pev{kind: 1, p: p})
			}
		})
	}
	for i := range f.down {
		f.serve(&f.down[i], f.linkBytes, func(p pkt) { p.hop = 2; f.at(f.now+hop, pev{kind: 0, p: p}) })
	}
	for i := range f.up {
		f.serve(&f.up[i], f.linkBytes, func(p pkt) { p.hop = 1; f.at(f.now+hop, pev{kind: 0, p: p}) })
	}
	// Senders: a host NIC sends at its port rate while the window allows,
	// lost packets first.
	for id := range f.flows {
		fl := &f.flows[id]
		if len(fl.retx) == 0 && fl.next >= fl.npkt {
			continue
		}
		f.nic[id] += f.portBytes
		for f.o.OpenLoop || float64(fl.inflight) < math.Floor(fl.cwnd) {
			seq := fl.next
			retx := len(fl.retx) > 0
			if retx {
				seq = int(fl.retx[0])
			} else if fl.next >= fl.npkt {
				break
			}
			b := f.size(fl, seq)
			if f.nic[id] < float64(b) {
				break
			}
			f.nic[id] -= float64(b)
			if retx {
				fl.retx = fl.retx[1:]
				f.Retransmits++
			} else {
				fl.next++
			}
			fl.inflight++
			f.Sent++
			up, down := fl.up, fl.down
			if f.o.Spray {
				up = fl.src*c.LinksPerFA + f.r.IntN(c.LinksPerFA)
				fe := (up - fl.src*c.LinksPerFA) % c.FEs
				down = fe*c.FAs*f.k + (fl.port/c.PortsPerFA)*f.k + f.r.IntN(f.k)
			}
			f.push(&f.up[up], pkt{flow: int32(id), seq: int32(seq), down: int32(down), prio: int8(fl.prio), bytes: b, sent: f.now})
		}
		f.nic[id] = min(f.nic[id], float64(fl.pktBytes)) // a waiting NIC banks no more than a packet
	}
}

// FlowDone is the slot at which flow id's last byte reached its host.
func (f *PacketFabric) FlowDone(id int) (float64, bool) {
	d := f.flows[id].done
	return d, d >= 0
}

// FlowDrops is the packets of flow id dropped in the fabric.
func (f *PacketFabric) FlowDrops(id int) int64 { return f.flows[id].drops }

// Now is the current slot.
func (f *PacketFabric) Now() int64 { return f.now }

// FlowDelivered is the data of flow id its host has received.
func (f *PacketFabric) FlowDelivered(id int) int64 { return f.flows[id].delivered }
