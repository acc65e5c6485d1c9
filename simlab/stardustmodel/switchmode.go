package stardustmodel

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	"testbed/simlab/internal/evheap"
)

// Switch mode: the fabric as the Stardust programs (p4/stardust) run it on
// switches, frame by frame, driven by the switches' own tables, registers
// and packet-generator applications; what the simulated Tofinos
// (simlab/tofino) run behind their agent. Unlike Model, nothing here is
// slotted or packed: a frame is a cell (the programs' approximation), every
// fabric link is a FIFO queue served at its rate (serialisation of the
// frame, its preamble and inter-frame gap) followed by its propagation
// delay, and every mechanism follows the programs:
//
//   - A generator application emits a batch of PerBatch frames (packet ids
//     0..PerBatch-1) every Period, Batches times.
//   - Data (KindData): gen_flow(app, slot) with a uniform slot gives the
//     VOQ; the frame takes one frame's credit from Credit[voq] or waits in
//     the FA's recirculation queue (bounded: RecircCapBytes; beyond, it is
//     dropped). With a credit: SeqOut[dst], the timestamp, SprayRR[dst]
//     picks the slot, Spray[dst][slot] the fabric port, whose queue marks
//     the frame FCI at or above the FA's FCITh (0: off), as an FE's does.
//   - At the FE: its own SprayRR/Spray give the output port; the output
//     queue's depth in TM buffer cells on enqueue is counted in QHist and
//     marks FCI at or above FCITh (0: off); a full queue (QueueCapBytes)
//     drops.
//   - At the destination FA: LatHist counts now - timestamp (64 ns
//     buckets), FCI[port] counts marked frames, and the frame is released
//     in order per source FA (SeqIn); an early frame waits in the
//     recirculation port's early-frame queue (ReorderCapBytes; beyond, it
//     is dropped), and one behind SeqIn (its number was given up) is
//     dropped.
//   - Reassembly timer, per frame: a frame's age is now minus its
//     timestamp (its source FA's clock when it left for the fabric; the
//     devices share one clock, as the FAs' global timestamps are synced).
//     An early frame whose age has reached ReasmTimeout (ns; 0: never)
//     gives up every number of src before it: SeqIn moves past it,
//     ReasmDrops[src] counts the numbers skipped, and what is now in order
//     is released. On Tofino the frame finds that on any pass round the
//     recirculation port (stardust_fa.p4); here, where the loop's latency
//     is not modelled, at the instant its age reaches the timeout (an
//     event per waiting frame), on its arrival if it is already that old,
//     and when the caller's write of the registers makes it so (Resume).
//     The lowest waiting frame of src is the oldest (a source numbers its
//     frames in the order it timestamps them), so it expires first: the
//     gap below it is given up and it is released, then the frames in
//     order after it. On Tofino a waiting frame above it may come round
//     first and take its turn, and the frames below it are released out of
//     order when they come round, giving their numbers back: the same
//     frames and the same count, in a different order.
//   - Credits (KindCredit): CreditPort(packet id) names the host port,
//     CreditRR[port] the slot, CreditTo[port][slot] the (source FA, VOQ);
//     a pending FCI count of at least its worth (PayloadLength frames)
//     cancels it and spends that many; else it is sprayed as data is and
//     adds its frames to the source's Credit[voq] unless that is at or
//     above CreditCap. Credit and reachability frames are frames on the
//     wire: they wait in the port's one queue with the data, take their
//     serialisation time on the link and count in the depth data frames
//     find (not in QHist, and never FCI-marked).
//   - Reachability (KindReach): ReachPort(packet id) names the fabric port;
//     the peer sets Age[its port] to 0. Aging ticks (KindAge) add 1 to
//     Age[packet id], saturating at AgeMax.
//
// Time is in picoseconds. The caller owns the configuration: it writes a
// device's tables and registers and the links' state between advances.
// Single goroutine; deterministic for a given seed.

// Frame kinds, as the cell header's (p4/stardust).
const (
	SwKindData   = 0
	SwKindCredit = 1
	SwKindReach  = 2
	SwKindAge    = 3
)

// Sizes of the programs' registers and the constants they count with
// (p4/stardust/common/headers.p4, stardust_fa.p4).
const (
	SwMaxFAs      = 256
	SwMaxLinks    = 64
	SwPorts       = 512
	SwMaxVOQs     = 4096
	SwHistBuckets = 512
	SwLatShift    = 6
	SwQHistShift  = 2
	SwAgeMax      = 255
	SwCreditSlots = 256
	SwTMCellBytes = 80
	// wireExtraBytes is the preamble and inter-frame gap every frame takes
	// on an Ethernet link (IEEE 802.3: 8 B + 12 B).
	wireExtraBytes = 20
)

// Flow is a gen_flow entry: the VOQ a data frame takes.
type Flow struct {
	Valid    bool
	FA, Port int
	VOQ      int
	TC       int
}

// Source is a credit_to entry: the source FA's VOQ a credit is for.
type Source struct {
	Valid bool
	FA    int
	VOQ   int
}

// SwApp is a packet-generator application of a device.
type SwApp struct {
	Kind       int
	FrameBytes int   // on the wire, FCS included
	StartPs    int64 // the first batch
	PeriodPs   int64
	// JitterPs, when positive, adds to each gap between batches a draw
	// from 0..JitterPs, uniform, from Rand (which it then needs): the
	// generator's inter-batch-gap jitter (tf1.pktgen.app_cfg's ibg_jitter;
	// uniform in the SDE's reference model of the generator, tofino-model's
	// PktGenJitter: base + uniform(0, max) << scale). The draws are in
	// whole ns, as the field is, from Rand (the fabric's own when nil).
	JitterPs int64
	Rand     *rand.Rand
	// NextPs is when the next batch is due (ps; 0 until the fabric has
	// scheduled one): where a rebuilt fabric resumes a jittered
	// application.
	NextPs        int64
	Batches       int64
	PerBatch      int
	AppID         int   // the key of gen_flow
	PayloadLength int   // a credit's worth, frames
	Enabled       bool  // the caller stops an application by clearing it
	Sent          int64 // frames generated so far
	Next          int64 // batches emitted so far
}

// Done reports whether every batch has been emitted.
func (a *SwApp) Done() bool { return a.Next >= a.Batches }

// PortCount is what crossed a port since the caller last drained it, by
// frame size (bytes on the wire).
type PortCount struct {
	Tx, RxOK, RxBad map[int]int64
}

func (c *PortCount) add(m *map[int]int64, bytes int) {
	if *m == nil {
		*m = map[int]int64{}
	}
	(*m)[bytes]++
}

// SwDevice is one FA or FE: its tables and registers (the caller's to
// write), and its state.
type SwDevice struct {
	Name string
	FE   bool
	ID   int
	// Out maps a dev port to the link that leaves it.
	Out map[int]int
	// Tables.
	Spray      map[int]*[SwMaxLinks]int // destination FA -> slot -> dev port (-1: drop)
	GenFlow    map[int]*[SwMaxLinks]Flow
	HostPort   map[int]int // destination port -> dev port
	CreditPort map[int]int // packet id -> host port
	CreditTo   map[int]*[SwCreditSlots]Source
	ReachPort  map[int]int // packet id -> dev port
	// Registers, sized as the programs declare them.
	Credit, SeqOut, SeqIn, SprayRR, CreditRR, FCI, Age, LatHist, QHist []int64
	// ReasmDrops is per source FA; ReasmTimeout is the reassembly timer
	// in ns (0: wait for ever).
	ReasmDrops          []int64
	FCITh, ReasmTimeout int64
	Apps                []*SwApp

	// Counters the caller drains.
	Ports       map[int]*PortCount
	RecircDrops int64 // frames lost to a full recirculation queue
	// RecircMax is the fullest the recirculation queue has been (bytes)
	// since the caller last reset it.
	RecircMax int64
	// ReorderDrops and ReorderMax are the same for the early frames'
	// queue.
	ReorderDrops, ReorderMax int64
	Unrouted                 int64 // frames a table had no entry for (dropped)

	voqWait      map[int][]int32 // VOQ -> frames waiting for a credit, FIFO
	reorder      map[int]map[uint32]int32
	recircBytes  int64
	reorderBytes int64
	// seqIn is SeqIn as the fabric last left it: a difference is the
	// control plane's write; reasmTo the ReasmTimeout the waiting frames'
	// timer events were set under.
	seqIn   []int64
	reasmTo int64
}

// NewSwDevice makes a device with its registers (ages start at AgeMax).
func NewSwDevice(name string, fe bool, id int) *SwDevice {
	d := &SwDevice{Name: name, FE: fe, ID: id, Out: map[int]int{},
		Spray: map[int]*[SwMaxLinks]int{}, GenFlow: map[int]*[SwMaxLinks]Flow{}, HostPort: map[int]int{},
		CreditPort: map[int]int{}, CreditTo: map[int]*[SwCreditSlots]Source{}, ReachPort: map[int]int{},
		Credit: make([]int64, SwMaxVOQs), SeqOut: make([]int64, SwMaxFAs), SeqIn: make([]int64, SwMaxFAs),
		SprayRR: make([]int64, SwMaxFAs), CreditRR: make([]int64, SwPorts), FCI: make([]int64, SwPorts),
		Age: make([]int64, SwPorts), LatHist: make([]int64, SwHistBuckets), QHist: make([]int64, SwHistBuckets),
		ReasmDrops: make([]int64, SwMaxFAs), seqIn: make([]int64, SwMaxFAs),
		Ports: map[int]*PortCount{}, voqWait: map[int][]int32{}, reorder: map[int]map[uint32]int32{}}
	for i := range d.Age {
		d.Age[i] = SwAgeMax
	}
	return d
}

func (d *SwDevice) port(p int) *PortCount {
	c := d.Ports[p]
	if c == nil {
		c = &PortCount{}
		d.Ports[p] = c
	}
	return c
}

// SwLink is one direction of a fibre between two devices' ports.
type SwLink struct {
	From, FromPort int // device index, dev port
	To, ToPort     int
	Bps            float64
	PropPs         int64
	Up             bool
	// Loss is the chance a frame of the given size (bytes on the wire) is
	// corrupted; nil for none. Called once per size until SetLoss.
	Loss func(bytes int) float64

	busy   int64 // when the transmitter is next free
	q      []qent
	qhead  int
	qcells int64
	// Watermark is the deepest the queue has been (TM cells) since the
	// caller last reset it; QueueDrops the frames lost to a full queue.
	Watermark  int64
	QueueDrops int64
	loss       map[int]float64
}

type qent struct {
	start int64
	cells int32
}

// SetLoss replaces the link's loss function.
func (l *SwLink) SetLoss(f func(bytes int) float64) { l.Loss, l.loss = f, nil }

func (l *SwLink) lossFor(bytes int) float64 {
	if l.Loss == nil {
		return 0
	}
	if p, ok := l.loss[bytes]; ok {
		return p
	}
	if l.loss == nil {
		l.loss = map[int]float64{}
	}
	p := l.Loss(bytes)
	l.loss[bytes] = p
	return p
}

// serPs is the time a frame of bytes takes on the link.
func (l *SwLink) serPs(bytes int) int64 {
	return int64(float64((bytes+wireExtraBytes)*8) / l.Bps * 1e12)
}

// prune drops the entries whose transmission has started by t.
func (l *SwLink) prune(t int64) {
	for l.qhead < len(l.q) && l.q[l.qhead].start <= t {
		l.qcells -= int64(l.q[l.qhead].cells)
		l.qhead++
	}
	if l.qhead > 1024 && l.qhead*2 > len(l.q) {
		l.q = append(l.q[:0], l.q[l.qhead:]...)
		l.qhead = 0
	}
}

// Depth is the queue's depth at t in TM buffer cells: what has not begun
// its transmission.
func (l *SwLink) Depth(t int64) int64 { l.prune(t); return l.qcells }

type swFrame struct {
	kind     uint8
	fci      bool
	src, dst int32 // FA ids
	port     int32 // destination port
	voq      int32
	seq      uint32
	bytes    int32
	tstamp   int64
	frames   int32 // a credit's worth
	next     int32 // free list
}

type swEvent struct {
	kind uint8
	dev  int32
	link int32
	fr   int32
}

const (
	evBatch = iota
	evAtFE
	evAtFA
	evReach
	// evReasm: a waiting frame's reassembly timer may expire (dev, fr;
	// link holds its source FA).
	evReasm
)

// SwitchFabric is the fabric in switch mode.
type SwitchFabric struct {
	Devices []*SwDevice
	Links   []*SwLink
	// PipelinePs is a device's ingress-to-egress time.
	PipelinePs int64
	// QueueCapBytes bounds every fabric port's queue, RecircCapBytes an
	// FA's recirculation queue of frames waiting for credit and
	// ReorderCapBytes its queue of early frames (SD_REASM_QID).
	QueueCapBytes, RecircCapBytes, ReorderCapBytes int64
	// CreditCap is the most a VOQ banks (frames).
	CreditCap int64

	now    int64
	ev     evheap.Heap[swEvent]
	frames []swFrame
	free   int32
	rng    *rand.Rand
	byID   map[int]int // FA id -> device index
	live   int64       // data frames allocated

	// Delivered counts data frames released to host ports; Generated the
	// data frames the applications emitted; Hops the frames that crossed
	// a fabric link.
	Delivered, Generated, Hops int64
}

// NewSwitchFabric makes an empty fabric.
func NewSwitchFabric(r *rand.Rand) *SwitchFabric {
	return &SwitchFabric{rng: r, free: -1, CreditCap: 32, QueueCapBytes: 1 << 20, RecircCapBytes: 1 << 20, ReorderCapBytes: 1 << 20}
}

// Now is the fabric's clock, ps.
func (f *SwitchFabric) Now() int64 { return f.now }

// AddDevice adds a device and returns its index.
func (f *SwitchFabric) AddDevice(d *SwDevice) int {
	f.Devices = append(f.Devices, d)
	f.byID = nil
	return len(f.Devices) - 1
}

// AddLink adds a link from device from's port to device to's port.
func (f *SwitchFabric) AddLink(l *SwLink) int {
	f.Links = append(f.Links, l)
	f.Devices[l.From].Out[l.FromPort] = len(f.Links) - 1
	return len(f.Links) - 1
}

// Check reports a topology the fabric cannot hold: FA ids not unique, an
// FA without a link to some FE, a link without its reverse.
func (f *SwitchFabric) Check() error {
	seen := map[[2]int]string{}
	var fes []int
	for i, d := range f.Devices {
		k := [2]int{0, d.ID}
		if d.FE {
			k[0] = 1
			fes = append(fes, i)
		}
		if d.ID < 0 || d.ID >= SwMaxFAs {
			return fmt.Errorf("%s: fabric id %d outside 0..%d", d.Name, d.ID, SwMaxFAs-1)
		}
		if o, ok := seen[k]; ok {
			return fmt.Errorf("%s and %s both have fabric id %d (whoami)", o, d.Name, d.ID)
		}
		seen[k] = d.Name
	}
	for _, d := range f.Devices {
		if d.FE {
			continue
		}
		for _, fe := range fes {
			found := false
			for _, li := range d.Out {
				if f.Links[li].To == fe {
					found = true
				}
			}
			if !found {
				return fmt.Errorf("%s: no fabric port joined to %s", d.Name, f.Devices[fe].Name)
			}
		}
	}
	for _, l := range f.Links {
		back, ok := f.Devices[l.To].Out[l.ToPort]
		if !ok || f.Links[back].To != l.From || f.Links[back].ToPort != l.FromPort {
			return fmt.Errorf("%s port %d: its fibre to %s port %d has no return fibre", f.Devices[l.From].Name, l.FromPort, f.Devices[l.To].Name, l.ToPort)
		}
	}
	return nil
}

func (f *SwitchFabric) faIndex(id int) (int, bool) {
	if f.byID == nil {
		f.byID = map[int]int{}
		for i, d := range f.Devices {
			if !d.FE {
				f.byID[d.ID] = i
			}
		}
	}
	i, ok := f.byID[id]
	return i, ok
}

// Reindex is called after a device's ID changes.
func (f *SwitchFabric) Reindex() { f.byID = nil }

// AddApp starts an application on device dev.
func (f *SwitchFabric) AddApp(dev int, a *SwApp) {
	f.Devices[dev].Apps = append(f.Devices[dev].Apps, a)
	if a.Next < a.Batches {
		f.ev.Push(max(a.StartPs, f.now), swEvent{kind: evBatch, dev: int32(dev), fr: int32(len(f.Devices[dev].Apps) - 1)})
	}
}

func (f *SwitchFabric) alloc(fr swFrame) int32 {
	if fr.kind == SwKindData {
		f.live++
	}
	if f.free >= 0 {
		i := f.free
		f.free = f.frames[i].next
		f.frames[i] = fr
		return i
	}
	f.frames = append(f.frames, fr)
	return int32(len(f.frames) - 1)
}

func (f *SwitchFabric) release(i int32) {
	if f.frames[i].kind == SwKindData {
		f.live--
	}
	f.frames[i].next = f.free
	f.free = i
}

// InFlight is the data frames in the fabric or waiting at an FA (for a
// credit or their turn).
func (f *SwitchFabric) InFlight() int64 { return f.live }

// AdvanceTo runs the fabric until t (ps): every event before t.
func (f *SwitchFabric) AdvanceTo(t int64) {
	for f.ev.Len() > 0 && f.ev.Next() < t {
		var e swEvent
		f.now, e = f.ev.Pop()
		switch e.kind {
		case evBatch:
			f.batch(int(e.dev), int(e.fr))
		case evAtFE:
			f.atFE(e)
		case evAtFA:
			f.atFA(e)
		case evReach:
			d := f.Devices[e.dev]
			d.Age[e.link] = 0
		case evReasm:
			f.reasmTimer(e)
		}
	}
	f.now = max(f.now, t)
}

// batch emits one batch of an application and schedules the next.
func (f *SwitchFabric) batch(dev, ai int) {
	d := f.Devices[dev]
	a := d.Apps[ai]
	if !a.Enabled || a.Next >= a.Batches {
		return
	}
	a.Next++
	for i := 0; i < a.PerBatch; i++ {
		a.Sent++
		switch a.Kind {
		case SwKindData:
			f.Generated++
			f.dataFrame(dev, a)
		case SwKindCredit:
			f.credit(dev, a, i)
		case SwKindReach:
			if p, ok := d.ReachPort[i]; ok {
				f.control(dev, p, a.FrameBytes, swFrame{kind: SwKindReach}, f.now+f.PipelinePs)
			} else {
				d.Unrouted++
			}
		case SwKindAge:
			if i < len(d.Age) && d.Age[i] < SwAgeMax {
				d.Age[i]++
			}
		}
	}
	if a.Next < a.Batches {
		a.NextPs = f.now + a.gapPs(f.rng)
		f.ev.Push(a.NextPs, swEvent{kind: evBatch, dev: int32(dev), fr: int32(ai)})
	}
}

// gapPs is the time to an application's next batch: its period, plus its
// jitter's draw.
func (a *SwApp) gapPs(fabric *rand.Rand) int64 {
	if a.JitterPs <= 0 {
		return a.PeriodPs
	}
	r := a.Rand
	if r == nil {
		r = fabric
	}
	return a.PeriodPs + r.Int64N(a.JitterPs/1000+1)*1000
}

// dataFrame is a generated frame at its FA's ingress.
func (f *SwitchFabric) dataFrame(dev int, a *SwApp) {
	d := f.Devices[dev]
	slots := d.GenFlow[a.AppID]
	slot := f.rng.IntN(SwMaxLinks)
	if slots == nil || !slots[slot].Valid {
		d.Unrouted++
		return
	}
	fl := slots[slot]
	fr := swFrame{kind: SwKindData, src: int32(d.ID), dst: int32(fl.FA), port: int32(fl.Port), voq: int32(fl.VOQ), bytes: int32(a.FrameBytes)}
	if fl.VOQ < 0 || fl.VOQ >= len(d.Credit) {
		d.Unrouted++
		return
	}
	if len(d.voqWait[fl.VOQ]) == 0 && d.Credit[fl.VOQ] > 0 {
		d.Credit[fl.VOQ]--
		f.toFabric(dev, f.alloc(fr))
		return
	}
	// No credit: round the recirculation port, FIFO behind the VOQ's
	// other waiting frames.
	if d.recircBytes+int64(fr.bytes) > f.RecircCapBytes {
		d.RecircDrops++
		return
	}
	d.recircBytes += int64(fr.bytes)
	d.RecircMax = max(d.RecircMax, d.recircBytes)
	d.voqWait[fl.VOQ] = append(d.voqWait[fl.VOQ], f.alloc(fr))
}

// toFabric sends a data frame that has its credit from FA dev.
func (f *SwitchFabric) toFabric(dev int, fi int32) {
	d := f.Devices[dev]
	fr := &f.frames[fi]
	dst := int(fr.dst)
	if dst < 0 || dst >= SwMaxFAs {
		d.Unrouted++
		f.release(fi)
		return
	}
	fr.seq = uint32(d.SeqOut[dst])
	d.SeqOut[dst] = int64(uint32(d.SeqOut[dst] + 1))
	fr.tstamp = f.now
	port, ok := f.sprayPort(d, dst)
	if !ok {
		f.release(fi)
		return
	}
	f.transmit(dev, port, fi, f.now+f.PipelinePs, false)
}

// sprayPort advances the device's round robin for dst and reads spray.
func (f *SwitchFabric) sprayPort(d *SwDevice, dst int) (int, bool) {
	slot := int(d.SprayRR[dst]) % SwMaxLinks
	d.SprayRR[dst] = int64((slot + 1) % SwMaxLinks)
	s := d.Spray[dst]
	if s == nil || s[slot] < 0 {
		d.Unrouted++
		return 0, false
	}
	return s[slot], true
}

// transmit puts data frame fi in the queue of dev's port at t; at an FE
// it counts the depth it finds; at an FE or an FA it marks FCI at FCITh.
func (f *SwitchFabric) transmit(dev, port int, fi int32, t int64, fe bool) {
	d := f.Devices[dev]
	li, ok := d.Out[port]
	if !ok {
		d.Unrouted++
		f.release(fi)
		return
	}
	l := f.Links[li]
	fr := &f.frames[fi]
	cells := (int64(fr.bytes) + SwTMCellBytes - 1) / SwTMCellBytes
	depth := l.Depth(t)
	if depth*SwTMCellBytes+int64(fr.bytes) > f.QueueCapBytes {
		l.QueueDrops++
		f.release(fi)
		return
	}
	if fe {
		b := depth >> SwQHistShift
		if b >= SwHistBuckets {
			b = SwHistBuckets - 1
		}
		d.QHist[b]++
	}
	if d.FCITh != 0 && depth >= d.FCITh {
		fr.fci = true
	}
	start := max(t, l.busy)
	l.busy = start + l.serPs(int(fr.bytes))
	if start > t {
		l.q = append(l.q, qent{start: start, cells: int32(cells)})
		l.qcells += cells
		l.Watermark = max(l.Watermark, l.qcells)
	}
	f.Hops++
	d.port(port).add(&d.port(port).Tx, int(fr.bytes))
	if !f.crosses(l, int(fr.bytes)) {
		f.release(fi)
		return
	}
	kind := uint8(evAtFA)
	at := l.busy + l.PropPs
	if f.Devices[l.To].FE {
		kind = evAtFE
		at += f.PipelinePs
	}
	f.ev.Push(at, swEvent{kind: kind, dev: int32(l.To), link: int32(li), fr: fi})
}

// crosses draws whether a frame sent on l arrives, counting it at the
// receiver (an FCS error when corrupted; nothing on a dark or down link).
func (f *SwitchFabric) crosses(l *SwLink, bytes int) bool {
	if !l.Up {
		return false
	}
	rx := f.Devices[l.To].port(l.ToPort)
	if p := l.lossFor(bytes); p > 0 && (p >= 1 || f.rng.Float64() < p) {
		rx.add(&rx.RxBad, bytes)
		return false
	}
	rx.add(&rx.RxOK, bytes)
	return true
}

// control sends a credit or reachability frame out of dev's port,
// reaching its traffic manager at t. A generator's frame enters the
// ingress pipeline at the generator's port (Tofino 1's 68) and reaches
// the traffic manager PipelinePs later, as a generated data frame does
// (toFabric); a credit forwarded by an FE has taken its pipeline on
// arrival. So a credit's loop from its scheduler to the source FA's VOQ
// counts the pipelines it crosses, as the paper's credit rate compensates
// for "propagation and processing delays" (§4.1). On Tofino it is a frame like any
// other (the programs give it no queue of its own: queue 0, as data), so
// it waits in the port's FIFO behind what is queued, takes its
// serialisation time on the link (the busy figure read from the port's
// transmit counters is the time the link was taken), counts in the depth
// later frames find, and arrives after the propagation delay. It is not
// counted in the FE's queue histogram and is never marked FCI (the
// programs do both for data cells only).
func (f *SwitchFabric) control(dev, port, bytes int, fr swFrame, t int64) {
	d := f.Devices[dev]
	li, ok := d.Out[port]
	if !ok {
		d.Unrouted++
		return
	}
	l := f.Links[li]
	depth := l.Depth(t)
	if depth*SwTMCellBytes+int64(bytes) > f.QueueCapBytes {
		l.QueueDrops++
		return
	}
	start := max(t, l.busy)
	l.busy = start + l.serPs(bytes)
	if start > t {
		cells := (int64(bytes) + SwTMCellBytes - 1) / SwTMCellBytes
		l.q = append(l.q, qent{start: start, cells: int32(cells)})
		l.qcells += cells
		l.Watermark = max(l.Watermark, l.qcells)
	}
	d.port(port).add(&d.port(port).Tx, bytes)
	if !f.crosses(l, bytes) {
		return
	}
	at := l.busy + l.PropPs
	if fr.kind == SwKindReach {
		f.ev.Push(at, swEvent{kind: evReach, dev: int32(l.To), link: int32(l.ToPort)})
		return
	}
	fr.bytes = int32(bytes)
	kind := uint8(evAtFA)
	if f.Devices[l.To].FE {
		kind = evAtFE
		at += f.PipelinePs
	}
	f.ev.Push(at, swEvent{kind: kind, dev: int32(l.To), link: int32(li), fr: f.alloc(fr)})
}

// credit is packet id i of a credit application at FA dev.
func (f *SwitchFabric) credit(dev int, a *SwApp, i int) {
	d := f.Devices[dev]
	p, ok := d.CreditPort[i]
	if !ok || p < 0 || p >= SwPorts {
		d.Unrouted++
		return
	}
	s := int(d.CreditRR[p]) % SwCreditSlots
	d.CreditRR[p] = int64((s + 1) % SwCreditSlots)
	to := d.CreditTo[p]
	if to == nil || !to[s].Valid {
		d.Unrouted++
		return
	}
	if n := int64(a.PayloadLength); n > 0 && d.FCI[p] >= n {
		d.FCI[p] -= n
		return
	}
	src := to[s]
	fr := swFrame{kind: SwKindCredit, src: int32(d.ID), dst: int32(src.FA), voq: int32(src.VOQ), frames: int32(a.PayloadLength)}
	if src.FA == d.ID {
		f.addCredit(dev, fr)
		return
	}
	port, ok := f.sprayPort(d, src.FA)
	if !ok {
		return
	}
	f.control(dev, port, a.FrameBytes, fr, f.now+f.PipelinePs)
}

// addCredit adds a credit's frames to a VOQ and lets its waiting frames go.
func (f *SwitchFabric) addCredit(dev int, fr swFrame) {
	d := f.Devices[dev]
	v := int(fr.voq)
	if v < 0 || v >= len(d.Credit) {
		d.Unrouted++
		return
	}
	if d.Credit[v] < f.CreditCap {
		d.Credit[v] += int64(fr.frames) // 0 from Resume
	}
	w := d.voqWait[v]
	n := 0
	for n < len(w) && d.Credit[v] > 0 {
		d.Credit[v]--
		d.recircBytes -= int64(f.frames[w[n]].bytes)
		f.toFabric(dev, w[n])
		n++
	}
	if n == len(w) {
		delete(d.voqWait, v)
	} else {
		d.voqWait[v] = w[n:]
	}
}

// Resume lets waiting frames go after the caller changed registers (a
// frame round the recirculation port tries again every loop): a VOQ given
// credit sends what waits in it, and a source whose expected sequence
// number was reset releases what is now in order, and the waiting frames'
// reassembly timers follow a new timeout.
func (f *SwitchFabric) Resume() {
	for dev, d := range f.Devices {
		if d.FE {
			continue
		}
		for _, v := range slices.Sorted(maps.Keys(d.voqWait)) {
			if d.Credit[v] > 0 {
				f.addCredit(dev, swFrame{voq: int32(v)})
			}
		}
		retime := d.ReasmTimeout != d.reasmTo
		d.reasmTo = d.ReasmTimeout
		for _, src := range slices.Sorted(maps.Keys(d.reorder)) {
			if d.SeqIn[src] != d.seqIn[src] {
				f.releaseBehind(d, src)
			}
			f.drainInOrder(d, src)
			f.expire(d, src)
			if !retime {
				continue
			}
			// Their events were set under the old timeout: set them
			// again (an event that finds its frame not yet expired sets
			// itself again, so a later one is harmless).
			for _, seq := range slices.Sorted(maps.Keys(d.reorder[src])) {
				fi := d.reorder[src][seq]
				if at, on := f.expiresAt(d, &f.frames[fi]); on {
					f.ev.Push(max(at, f.now), swEvent{kind: evReasm, dev: int32(dev), link: int32(src), fr: fi})
				}
			}
		}
	}
}

// expiresAt is when a frame's reassembly timer expires (ps), under the
// device's timeout; false without one.
func (f *SwitchFabric) expiresAt(d *SwDevice, fr *swFrame) (int64, bool) {
	if d.ReasmTimeout <= 0 {
		return 0, false
	}
	return fr.tstamp + d.ReasmTimeout*1000, true
}

// lowestWaiting is src's waiting frame with the lowest sequence number at
// or after SeqIn.
func (d *SwDevice) lowestWaiting(src int) (uint32, int32, bool) {
	next := uint32(d.SeqIn[src])
	low, fi, found := uint32(0), int32(0), false
	for seq, w := range d.reorder[src] {
		if behind(seq, next) {
			continue
		}
		if !found || seq-next < low-next {
			low, fi, found = seq, w, true
		}
	}
	return low, fi, found
}

// expire gives up src's gaps while its lowest waiting frame's reassembly
// timer has expired: one gap per expired frame, every number below it at
// once.
func (f *SwitchFabric) expire(d *SwDevice, src int) {
	for {
		_, fi, ok := d.lowestWaiting(src)
		if !ok {
			return
		}
		if at, on := f.expiresAt(d, &f.frames[fi]); !on || at > f.now {
			return
		}
		f.giveUpGap(d, src)
	}
}

// reasmTimer is a waiting frame's timer event: if the frame still waits,
// its source's expired gaps are given up; if the caller has since raised
// the timeout, the frame's event is set again at its new expiry.
func (f *SwitchFabric) reasmTimer(e swEvent) {
	d := f.Devices[e.dev]
	src := int(e.link)
	// Still waiting? (A frame slot released and taken again by another
	// waiting frame of src has its own event: this one then only checks
	// early.)
	if w, ok := d.reorder[src][f.frames[e.fr].seq]; !ok || w != e.fr {
		return
	}
	if at, on := f.expiresAt(d, &f.frames[e.fr]); on && at > f.now {
		f.ev.Push(at, swEvent{kind: evReasm, dev: e.dev, link: e.link, fr: e.fr})
		return
	}
	f.expire(d, src)
}

// behind reports whether sequence number seq is behind next (32-bit
// serial arithmetic).
func behind(seq, next uint32) bool { return seq-next >= 1<<31 }

// releaseBehind lets go, out of order, the waiting frames of src that the
// control plane's write of SeqIn left behind it: on Tofino they come round
// and are released, each giving its number back to ReasmDrops.
func (f *SwitchFabric) releaseBehind(d *SwDevice, src int) {
	next := uint32(d.SeqIn[src])
	for _, seq := range slices.Sorted(maps.Keys(d.reorder[src])) {
		if !behind(seq, next) {
			continue
		}
		w := d.reorder[src][seq]
		delete(d.reorder[src], seq)
		d.reorderBytes -= int64(f.frames[w].bytes)
		if d.ReasmDrops[src] > 0 {
			d.ReasmDrops[src]--
		}
		f.toHost(d, w)
	}
	d.seqIn[src] = d.SeqIn[src]
}

// giveUpGap is the reassembly timer's release: SeqIn moves to the lowest
// waiting frame of src, the numbers skipped count in ReasmDrops, and what
// is now in order is released.
func (f *SwitchFabric) giveUpGap(d *SwDevice, src int) {
	low, _, found := d.lowestWaiting(src)
	if !found {
		return
	}
	d.ReasmDrops[src] += int64(low - uint32(d.SeqIn[src]))
	d.SeqIn[src] = int64(low)
	d.seqIn[src] = d.SeqIn[src]
	f.drainInOrder(d, src)
}

// drainInOrder releases src's waiting frames while the next is there.
func (f *SwitchFabric) drainInOrder(d *SwDevice, src int) {
	for {
		next := uint32(d.SeqIn[src])
		w, ok := d.reorder[src][next]
		if !ok {
			if len(d.reorder[src]) == 0 {
				delete(d.reorder, src)
			}
			return
		}
		delete(d.reorder[src], next)
		d.reorderBytes -= int64(f.frames[w].bytes)
		f.releaseHost(d, w)
	}
}

// atFE: a frame arrives at an FE (after its pipeline).
func (f *SwitchFabric) atFE(e swEvent) {
	d := f.Devices[e.dev]
	fr := &f.frames[e.fr]
	port, ok := f.sprayPort(d, int(fr.dst))
	if !ok {
		f.release(e.fr)
		return
	}
	if fr.kind == SwKindCredit {
		c := *fr
		f.release(e.fr)
		f.control(int(e.dev), port, int(c.bytes), c, f.now)
		return
	}
	f.transmit(int(e.dev), port, e.fr, f.now, true)
}

// atFA: a frame arrives at an FA's ingress.
func (f *SwitchFabric) atFA(e swEvent) {
	dev := int(e.dev)
	d := f.Devices[dev]
	fr := f.frames[e.fr]
	if int(fr.dst) != d.ID {
		d.Unrouted++ // not for this FA: the program drops it
		f.release(e.fr)
		return
	}
	if fr.kind == SwKindCredit {
		f.release(e.fr)
		f.addCredit(dev, fr)
		return
	}
	b := (f.now - fr.tstamp) / 1000 >> SwLatShift
	if b >= SwHistBuckets {
		b = SwHistBuckets - 1
	}
	d.LatHist[b]++
	if fr.fci && fr.port >= 0 && int(fr.port) < SwPorts {
		d.FCI[fr.port]++
	}
	src := int(fr.src)
	if next := uint32(d.SeqIn[src]); fr.seq != next {
		if behind(fr.seq, next) {
			// Its number was given up: dropped, as the paper's expired
			// packet (counted in ReasmDrops when it was given up).
			f.release(e.fr)
			return
		}
		// Early: round the recirculation port's early-frame queue until
		// its turn, or until its reassembly timer expires (already, if it
		// arrives that old: then the gap before it is given up at once).
		if d.reorderBytes+int64(fr.bytes) > f.ReorderCapBytes {
			d.ReorderDrops++
			f.release(e.fr)
			return
		}
		if d.reorder[src] == nil {
			d.reorder[src] = map[uint32]int32{}
		}
		d.reorderBytes += int64(fr.bytes)
		d.ReorderMax = max(d.ReorderMax, d.reorderBytes)
		d.reorder[src][fr.seq] = e.fr
		if at, on := f.expiresAt(d, &fr); on {
			if at <= f.now {
				f.expire(d, src)
			} else {
				f.ev.Push(at, swEvent{kind: evReasm, dev: int32(dev), link: int32(src), fr: e.fr})
			}
		}
		return
	}
	f.releaseHost(d, e.fr)
	if len(d.reorder[src]) > 0 {
		f.drainInOrder(d, src)
	}
}

// releaseHost sends the next in-order frame out of its host port.
func (f *SwitchFabric) releaseHost(d *SwDevice, fi int32) {
	fr := &f.frames[fi]
	d.SeqIn[fr.src] = int64(uint32(d.SeqIn[fr.src] + 1))
	d.seqIn[fr.src] = d.SeqIn[fr.src]
	f.toHost(d, fi)
}

// toHost sends a released frame out of its host port.
func (f *SwitchFabric) toHost(d *SwDevice, fi int32) {
	fr := &f.frames[fi]
	if p, ok := d.HostPort[int(fr.port)]; ok {
		f.Delivered++
		d.port(p).add(&d.port(p).Tx, int(fr.bytes))
	} else {
		d.Unrouted++
	}
	f.release(fi)
}

// RecircBytes is what waits for credit in the device's recirculation
// queue.
func (d *SwDevice) RecircBytes() int64 { return d.recircBytes }

// ReorderBytes is what waits for its turn in the device's early-frame
// queue.
func (d *SwDevice) ReorderBytes() int64 { return d.reorderBytes }

// Waiting is the data frames device dev holds in its recirculation queue.
func (d *SwDevice) Waiting() int64 {
	var n int64
	for _, w := range d.voqWait {
		n += int64(len(w))
	}
	for _, m := range d.reorder {
		n += int64(len(m))
	}
	return n
}
