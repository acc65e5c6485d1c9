// Package ecmpmodel is a plain packet-switched leaf-spine fabric, frame by
// frame, as the ecmp program (p4/ecmp) runs it on switches: what the
// simulated Tofinos (simlab/tofino, ecmp_dp.go) run behind their agent,
// driven by the switches' own tables, registers and packet-generator
// applications. Nothing is scheduled and nothing is sequenced: every
// egress port has a drop-tail FIFO queue per traffic class in the traffic
// manager, served at the port's rate by the queues' priorities, and the
// mechanisms follow the program's contract:
//
//   - A generator application emits a batch of PerBatch frames every
//     Period, Batches times (the batch's frames enter the ingress pipeline
//     at the same instant). Frames of an application whose packet buffer
//     is not IPv4 (IP false) are counted as generated and dropped by the
//     parser.
//   - gen_flow(app, slot), with the slot drawn per frame uniformly from
//     0..Slots-1 (the program's Random<bit<6>>), gives the destination
//     ToR, the flow and its class: the destination address
//     ecmp.HostAddr(dst), the UDP source port FlowPortBase+flow and the
//     IPv4 diffserv byte ecmp.Diffserv(tc). No entry, or drop, drops.
//   - route(destination ToR): ToHost sends the frame to a port and marks
//     it for delivery (its egress counts the flow registers); Hash to the
//     slot ecmp.FlowSlot(src, dst, 17, sport, FlowDstPort) (the hash's bits 11..6);
//     Spray to a slot drawn per frame; ecmp_slot(dst, slot) gives the
//     port. Drop, no entry, or no ecmp_slot entry drops.
//   - At the source ToR the ingress counts FlowSent[flow] for every frame
//     it sends to the traffic manager (before the queue's admission).
//   - The frame reaches the traffic manager PipelinePs after it entered
//     the ingress, into the egress port's queue of its class: the
//     class-selector bits of its DSCP (ecmp.ClassOf, set_class's qid), at
//     every device it crosses. Each queue holding QueueCapBytes of buffer
//     cells (TMCellBytes each) drops what would overflow it (drop tail).
//   - When a port's transmitter is free it sends the head of one of its
//     queues that hold a frame that has reached the traffic manager: of
//     the highest Priority among them (strict priority), and among queues
//     of that priority the next in round robin after the one that
//     priority last served, one frame per turn. Tofino's scheduler shares
//     a priority among its queues by DWRR (bytes against weights); with
//     equal weights (the SDE's default, 1023 each) and frames of one size
//     a frame per turn is that share, and with frames of different sizes
//     an approximation of it. Each frame takes its bytes plus the preamble
//     and inter-frame gap (20 B) at the port's rate; a frame's egress time
//     is when its transmission starts. A port that is down drops what
//     reaches it and what its queues hold.
//   - A frame marked for delivery counts FlowRcvd[flow] at its egress,
//     and FlowFirst[flow] (when 0) and FlowLast[flow] take the egress time
//     in ns, its low 32 bits (the egress global timestamp).
//   - A port with a link leaves the frame on it: its last bit reaches the
//     peer's port PropPs later, where the frame is lost to corruption with
//     the link's Loss probability (counted as an FCS error) or enters the
//     peer's ingress. A port without a link sends the frame to what is
//     behind it (a host): it is counted as transmitted and leaves the
//     model.
//
// Frames reach a device's traffic manager in the order they entered its
// ingress (PipelinePs is the same for every frame), so each queue is in
// arrival order. Time is in picoseconds. The caller owns the configuration: it writes the
// devices' tables, registers, ports' state and the links' loss between
// advances. Single goroutine; deterministic for a given seed. Each queue
// and each link is a calendar (a FIFO with one event for its head), so
// the event heap holds a few entries per port and per application, and a
// frame in steady state allocates nothing.
package ecmpmodel

import (
	"fmt"
	"math/rand/v2"

	"testbed/p4/ecmp"
	"testbed/simlab/internal/evheap"
)

// Sizes of the program (p4/ecmp) and of the switch.
const (
	Slots    = ecmp.Slots
	MaxFlows = ecmp.MaxFlows
	MaxToRs  = ecmp.MaxToRs
	// MaxPorts bounds a dev port (Tofino 1's 9-bit port numbers).
	MaxPorts = 512
	// Queues is a port's queues, one per traffic class (ecmp.Classes).
	Queues = ecmp.Classes
	// MaxPriority is the highest queue priority (Tofino's
	// BF_TM_SCH_PRIO_7); 0 is the lowest, every queue's default.
	MaxPriority = 7
	// TMCellBytes is the Tofino traffic manager's buffer cell: a frame
	// takes whole cells of the queue.
	TMCellBytes = 80
	// WireExtraBytes is the preamble and inter-frame gap every frame takes
	// on an Ethernet link (IEEE 802.3: 8 B + 12 B).
	WireExtraBytes = 20
)

// Action is a route entry's action.
type Action uint8

// The route table's actions (ecmp.ActionDrop, ActionToHost,
// ActionECMPHash, ActionECMPSpray).
const (
	Drop Action = iota
	ToHost
	Hash
	Spray
)

// Route is a route entry: Port for ToHost.
type Route struct {
	Action Action
	Port   int
}

// Flow is a gen_flow entry (Valid false: none, or drop): to_flow(Dst,
// Flow, TC).
type Flow struct {
	Valid bool
	Dst   int
	Flow  int
	TC    int
}

// App is a packet-generator application of a device.
type App struct {
	AppID      int    // the key of gen_flow
	FrameBytes int    // on the wire, FCS included
	SrcAddr    uint32 // the packet buffer's IPv4 source address
	IP         bool   // the packet buffer holds IPv4 and UDP headers
	StartPs    int64  // the first batch
	PeriodPs   int64
	Batches    int64
	PerBatch   int
	Enabled    bool  // the caller stops an application by clearing it
	Sent       int64 // frames generated so far
	Next       int64 // batches emitted so far

	// hashes caches each gen_flow slot's 5-tuple hash for the flow it
	// was computed for.
	hashes [Slots]struct {
		fl Flow
		h  uint16
		ok bool
	}
}

// hash is the ECMP hash of the frames slot gives flow fl.
func (a *App) hash(slot int, fl Flow) uint16 {
	c := &a.hashes[slot]
	if !c.ok || c.fl != fl {
		sport := uint16(ecmp.FlowPortBase + fl.Flow)
		c.fl, c.ok = fl, true
		c.h = ecmp.FlowHash(a.SrcAddr, ecmp.HostAddr(fl.Dst), 17, sport, ecmp.FlowDstPort)
	}
	return c.h
}

// Done reports whether every batch has been emitted.
func (a *App) Done() bool { return a.Next >= a.Batches }

// SizeCount is a number of frames of one size (bytes on the wire, FCS
// included).
type SizeCount struct {
	Bytes  int
	Frames int64
}

// Sizes counts frames by size; the caller drains it (s = s[:0]).
type Sizes []SizeCount

func (s *Sizes) add(bytes int) {
	for i := range *s {
		if (*s)[i].Bytes == bytes {
			(*s)[i].Frames++
			return
		}
	}
	*s = append(*s, SizeCount{Bytes: bytes, Frames: 1})
}

// Total is the frames counted.
func (s Sizes) Total() int64 {
	var n int64
	for _, c := range s {
		n += c.Frames
	}
	return n
}

// Port is a device's port: its egress queue and its counters.
type Port struct {
	Dev int // dev port
	Bps float64
	// Up: the port sends (enabled, and its link partner agrees); Present:
	// the port is added (a frame sent to a port not added is dropped as
	// unrouted).
	Up, Present bool

	// Priority is each queue's scheduling priority, 0..MaxPriority
	// (higher served first); the caller's to set.
	Priority [Queues]int

	// Counters the caller drains: frames sent and received (RxBad with an
	// FCS error), frames each full queue dropped, frames dropped because
	// the port was down; Watermark is the fullest each queue has been
	// (bytes of buffer cells) since the caller last reset it.
	Tx, RxOK, RxBad Sizes
	QueueDrops      [Queues]int64
	DownDrops       int64
	Watermark       [Queues]int64

	dev   int32 // device index
	gidx  int32 // index in the fabric's ports
	link  int32 // the link leaving the port, -1 none
	qs    [Queues]queue
	nq    int                   // frames in the queues
	rr    [MaxPriority + 1]int8 // the queue each priority served last
	busy  int64                 // when the transmitter is next free
	sched bool                  // an event for the next frame out is in the heap
}

// queue is one of a port's queues: the frames waiting, and their buffer
// cells (bytes).
type queue struct {
	ring
	bytes int64
}

// QueueBytes is what the port's queues hold now (bytes of buffer cells).
func (p *Port) QueueBytes() int64 {
	var n int64
	for q := range p.qs {
		n += p.qs[q].bytes
	}
	return n
}

// QueueBytesOf is what queue q holds now (bytes of buffer cells).
func (p *Port) QueueBytesOf(q int) int64 { return p.qs[q].bytes }

// Device is one switch running ecmp: its tables and registers (the
// caller's to write), and its ports.
type Device struct {
	Name string
	ID   int // whoami
	// Tables. GenFlow: application -> slot -> flow; Route: destination
	// ToR -> entry; Slot: destination ToR -> slot -> dev port (-1 or nil:
	// drop).
	GenFlow map[int]*[Slots]Flow
	Route   [MaxToRs]Route
	Slot    [MaxToRs]*[Slots]int
	// Registers, MaxFlows each.
	FlowSent, FlowRcvd, FlowFirst, FlowLast []int64
	Apps                                    []*App
	// Unrouted counts frames a table dropped (or a missing port);
	// NotIP the generator frames the parser dropped.
	Unrouted, NotIP int64

	ports [MaxPorts]*Port
}

// NewDevice makes a device with no ports, empty tables (every route
// drops) and zero registers.
func NewDevice(name string, id int) *Device {
	return &Device{Name: name, ID: id, GenFlow: map[int]*[Slots]Flow{},
		FlowSent: make([]int64, MaxFlows), FlowRcvd: make([]int64, MaxFlows),
		FlowFirst: make([]int64, MaxFlows), FlowLast: make([]int64, MaxFlows)}
}

// Port is the device's port dev, nil if it has none.
func (d *Device) Port(dev int) *Port {
	if dev < 0 || dev >= MaxPorts {
		return nil
	}
	return d.ports[dev]
}

// Ports calls fn for each of the device's ports in dev port order.
func (d *Device) Ports(fn func(*Port)) {
	for _, p := range d.ports {
		if p != nil {
			fn(p)
		}
	}
}

// Link is one direction of a fibre from a device's port to another's.
type Link struct {
	From, FromPort int // device index, dev port
	To, ToPort     int
	PropPs         int64
	// Loss is the chance a frame of the given size (bytes on the wire) is
	// corrupted; nil for none. Called once per size until SetLoss.
	Loss func(bytes int) float64

	flight   ring // frames on the fibre
	sched    bool
	lastB    int
	lastP    float64
	lossSize map[int]float64
}

// SetLoss replaces the link's loss function.
func (l *Link) SetLoss(f func(bytes int) float64) { l.Loss, l.lossSize, l.lastB = f, nil, 0 }

func (l *Link) lossFor(bytes int) float64 {
	if l.Loss == nil {
		return 0
	}
	if bytes == l.lastB {
		return l.lastP
	}
	p, ok := l.lossSize[bytes]
	if !ok {
		if l.lossSize == nil {
			l.lossSize = map[int]float64{}
		}
		p = l.Loss(bytes)
		l.lossSize[bytes] = p
	}
	l.lastB, l.lastP = bytes, p
	return p
}

type frame struct {
	t        int64 // in a queue: when it reaches the TM; on a fibre: when it arrives
	bytes    int32
	next     int32 // free list
	hash     uint16
	flow     uint16
	tor      uint8 // destination ToR
	diffserv uint8 // the IPv4 diffserv byte: the class is its DSCP's class selector
	host     bool  // route sent it to a host port
}

type event struct {
	kind uint8
	idx  int32 // device (batch), port (dequeue), link (arrival)
	app  int32
}

const (
	evBatch = iota
	evDequeue
	evArrive
)

// Fabric is the devices, their ports and the links between them.
type Fabric struct {
	Devices []*Device
	Links   []*Link
	// PipelinePs is a device's ingress-to-traffic-manager time.
	PipelinePs int64
	// QueueCapBytes bounds every egress queue (bytes of buffer cells).
	QueueCapBytes int64

	// Generated counts the frames the applications emitted; Delivered
	// the frames sent out of a port route's ToHost chose; Hops the frames
	// that left a port onto a link.
	Generated, Delivered, Hops int64

	now    int64
	ev     evheap.Heap[event]
	frames []frame
	free   int32
	ports  []*Port
	rng    *rand.Rand
}

// New makes an empty fabric: 1 MiB queues, no pipeline delay.
func New(r *rand.Rand) *Fabric {
	return &Fabric{rng: r, free: -1, QueueCapBytes: 1 << 20}
}

// Now is the fabric's clock, ps.
func (f *Fabric) Now() int64 { return f.now }

// AddDevice adds a device and returns its index.
func (f *Fabric) AddDevice(d *Device) int {
	f.Devices = append(f.Devices, d)
	return len(f.Devices) - 1
}

// AddPort gives device dev a port (up, present) at bps, or returns the
// one it has.
func (f *Fabric) AddPort(dev, port int, bps float64) (*Port, error) {
	d := f.Devices[dev]
	if port < 0 || port >= MaxPorts {
		return nil, fmt.Errorf("%s: dev port %d outside 0..%d", d.Name, port, MaxPorts-1)
	}
	if p := d.ports[port]; p != nil {
		return p, nil
	}
	p := &Port{Dev: port, Bps: bps, Up: true, Present: true, dev: int32(dev), gidx: int32(len(f.ports)), link: -1}
	d.ports[port] = p
	f.ports = append(f.ports, p)
	return p, nil
}

// AddLink adds a link from a device's port to another's (both ports
// must exist) and returns its index.
func (f *Fabric) AddLink(l *Link) (int, error) {
	from, to := f.Devices[l.From].Port(l.FromPort), f.Devices[l.To].Port(l.ToPort)
	if from == nil || to == nil {
		return 0, fmt.Errorf("link %s port %d -> %s port %d: both ports must be added first", f.Devices[l.From].Name, l.FromPort, f.Devices[l.To].Name, l.ToPort)
	}
	if from.link >= 0 {
		return 0, fmt.Errorf("%s port %d has a link already", f.Devices[l.From].Name, l.FromPort)
	}
	f.Links = append(f.Links, l)
	from.link = int32(len(f.Links) - 1)
	return len(f.Links) - 1, nil
}

// AddApp starts an application on device dev.
func (f *Fabric) AddApp(dev int, a *App) {
	d := f.Devices[dev]
	d.Apps = append(d.Apps, a)
	if a.Next < a.Batches {
		f.ev.Push(max(a.StartPs, f.now), event{kind: evBatch, idx: int32(dev), app: int32(len(d.Apps) - 1)})
	}
}

// InFlight is the frames in queues and on links.
func (f *Fabric) InFlight() int64 {
	var n int64
	for _, p := range f.ports {
		n += int64(p.nq)
	}
	for _, l := range f.Links {
		n += int64(l.flight.n)
	}
	return n
}

// AdvanceTo runs the fabric until t (ps): every event before t.
func (f *Fabric) AdvanceTo(t int64) {
	for f.ev.Len() > 0 && f.ev.Next() < t {
		var e event
		f.now, e = f.ev.Pop()
		switch e.kind {
		case evBatch:
			f.batch(int(e.idx), int(e.app))
		case evDequeue:
			f.dequeue(f.ports[e.idx])
		case evArrive:
			f.arrive(int(e.idx))
		}
	}
	f.now = max(f.now, t)
}

// batch emits one batch of an application and schedules the next.
func (f *Fabric) batch(dev, ai int) {
	d := f.Devices[dev]
	a := d.Apps[ai]
	if !a.Enabled || a.Next >= a.Batches {
		return
	}
	a.Next++
	slots := d.GenFlow[a.AppID]
	for i := 0; i < a.PerBatch; i++ {
		a.Sent++
		f.Generated++
		if !a.IP {
			d.NotIP++
			continue
		}
		slot := f.rng.IntN(Slots)
		if slots == nil || !slots[slot].Valid {
			d.Unrouted++
			continue
		}
		fl := slots[slot]
		fr := frame{bytes: int32(a.FrameBytes), tor: uint8(fl.Dst), flow: uint16(fl.Flow & (MaxFlows - 1)), hash: a.hash(slot, fl),
			diffserv: ecmp.Diffserv(fl.TC)}
		p, ok := f.route(d, &fr)
		if !ok {
			continue
		}
		d.FlowSent[fr.flow]++
		f.enqueue(d, p, f.alloc(fr))
	}
	if a.Next < a.Batches {
		f.ev.Push(f.now+a.PeriodPs, event{kind: evBatch, idx: int32(dev), app: int32(ai)})
	}
}

// route is the ingress: the port the frame leaves by, false if dropped.
func (f *Fabric) route(d *Device, fr *frame) (*Port, bool) {
	r := d.Route[fr.tor]
	fr.host = false
	port := -1
	switch r.Action {
	case ToHost:
		port = r.Port
		fr.host = true
	case Hash, Spray:
		slot := int(fr.hash>>ecmp.SlotShift) % Slots
		if r.Action == Spray {
			slot = f.rng.IntN(Slots)
		}
		if s := d.Slot[fr.tor]; s != nil {
			port = s[slot]
		}
	}
	p := d.Port(port)
	if p == nil || !p.Present {
		d.Unrouted++
		return nil, false
	}
	return p, true
}

// enqueue hands frame fi to the traffic manager for port p: it reaches
// the queue of its class PipelinePs from now.
func (f *Fabric) enqueue(d *Device, p *Port, fi int32) {
	fr := &f.frames[fi]
	if !p.Up {
		p.DownDrops++
		f.release(fi)
		return
	}
	qi := ecmp.ClassOf(fr.diffserv)
	q := &p.qs[qi]
	c := cellBytes(fr.bytes)
	if q.bytes+c > f.QueueCapBytes {
		p.QueueDrops[qi]++
		f.release(fi)
		return
	}
	fr.t = f.now + f.PipelinePs
	q.push(fi)
	q.bytes += c
	p.nq++
	p.Watermark[qi] = max(p.Watermark[qi], q.bytes)
	if !p.sched {
		f.schedule(p)
	}
}

func cellBytes(b int32) int64 {
	return (int64(b) + TMCellBytes - 1) / TMCellBytes * TMCellBytes
}

// schedule sets the event for p's next frame out: when the transmitter is
// free and the earliest of its queues' heads has reached the traffic
// manager. A frame enqueued later reaches it no earlier (frames reach it
// in ingress order), so the event stands.
func (f *Fabric) schedule(p *Port) {
	p.sched = true
	head := int64(-1)
	for q := range p.qs {
		if p.qs[q].n > 0 {
			if t := f.frames[p.qs[q].peek()].t; head < 0 || t < head {
				head = t
			}
		}
	}
	f.ev.Push(max(head, p.busy, f.now), event{kind: evDequeue, idx: p.gidx})
}

// pick is the queue p's scheduler serves now: of the queues whose head has
// reached the traffic manager, one of the highest priority, the next in
// round robin after the one that priority served last; -1 if none.
func (f *Fabric) pick(p *Port) int {
	best, bestPrio := -1, -1
	for q := range p.qs {
		pq := &p.qs[q]
		if pq.n == 0 || f.frames[pq.peek()].t > f.now {
			continue
		}
		pr := min(max(p.Priority[q], 0), MaxPriority)
		switch {
		case pr > bestPrio:
			best, bestPrio = q, pr
		case pr == bestPrio:
			// The round robin's order: the queues after the last served,
			// then those up to it.
			last := int(p.rr[pr])
			if (q-last-1+Queues)%Queues < (best-last-1+Queues)%Queues {
				best = q
			}
		}
	}
	if best >= 0 {
		p.rr[bestPrio] = int8(best)
	}
	return best
}

// dequeue sends the frame the scheduler picks from p's queues.
func (f *Fabric) dequeue(p *Port) {
	p.sched = false
	qi := f.pick(p)
	if qi < 0 { // not reached the traffic manager yet
		f.schedule(p)
		return
	}
	q := &p.qs[qi]
	fi := q.pop()
	fr := &f.frames[fi]
	q.bytes -= cellBytes(fr.bytes)
	p.nq--
	if !p.Up {
		p.DownDrops++
		f.release(fi)
	} else {
		p.busy = f.now + serPs(int(fr.bytes), p.Bps)
		p.Tx.add(int(fr.bytes))
		if fr.host {
			d := f.Devices[p.dev]
			ts := f.now / 1000 & 0xffffffff
			d.FlowRcvd[fr.flow]++
			if d.FlowFirst[fr.flow] == 0 {
				d.FlowFirst[fr.flow] = ts
			}
			d.FlowLast[fr.flow] = ts
			f.Delivered++
		}
		if p.link < 0 {
			f.release(fi)
		} else {
			l := f.Links[p.link]
			fr.t = p.busy + l.PropPs
			f.Hops++
			l.flight.push(fi)
			if !l.sched {
				l.sched = true
				f.ev.Push(fr.t, event{kind: evArrive, idx: p.link})
			}
		}
	}
	if p.nq > 0 {
		f.schedule(p)
	}
}

// serPs is the time a frame of bytes takes on a port of bps.
func serPs(bytes int, bps float64) int64 {
	return int64(float64((bytes+WireExtraBytes)*8) / bps * 1e12)
}

// arrive is the frame at the head of link li's fibre reaching its peer.
func (f *Fabric) arrive(li int) {
	l := f.Links[li]
	fi := l.flight.pop()
	l.sched = false
	if l.flight.n > 0 {
		l.sched = true
		f.ev.Push(f.frames[l.flight.peek()].t, event{kind: evArrive, idx: int32(li)})
	}
	fr := &f.frames[fi]
	d := f.Devices[l.To]
	rx := d.Port(l.ToPort)
	if rx == nil || !rx.Present {
		f.release(fi)
		return
	}
	if p := l.lossFor(int(fr.bytes)); p > 0 && (p >= 1 || f.rng.Float64() < p) {
		rx.RxBad.add(int(fr.bytes))
		f.release(fi)
		return
	}
	rx.RxOK.add(int(fr.bytes))
	out, ok := f.route(d, fr)
	if !ok {
		f.release(fi)
		return
	}
	f.enqueue(d, out, fi)
}

// ---- frames ----

func (f *Fabric) alloc(fr frame) int32 {
	if f.free >= 0 {
		i := f.free
		f.free = f.frames[i].next
		f.frames[i] = fr
		return i
	}
	f.frames = append(f.frames, fr)
	return int32(len(f.frames) - 1)
}

func (f *Fabric) release(i int32) {
	f.frames[i].next = f.free
	f.free = i
}

// ---- a FIFO of frame indices ----

type ring struct {
	b       []int32
	head, n int
}

func (r *ring) push(x int32) {
	if r.n == len(r.b) {
		nb := make([]int32, max(16, 2*len(r.b)))
		for i := 0; i < r.n; i++ {
			nb[i] = r.b[(r.head+i)&(len(r.b)-1)]
		}
		r.b, r.head = nb, 0
	}
	r.b[(r.head+r.n)&(len(r.b)-1)] = x
	r.n++
}

func (r *ring) peek() int32 { return r.b[r.head] }

func (r *ring) pop() int32 {
	x := r.b[r.head]
	r.head = (r.head + 1) & (len(r.b) - 1)
	r.n--
	return x
}
