// Package stardust is the control-plane contract of the Stardust programs
// for Tofino 1 (TNA): stardust_fa.p4, a Fabric Adapter, and stardust_fe.p4,
// a Fabric Element (Zilberman, Bracha, Schzukin, "Stardust: Divide and
// Conquer in the Data Center Network", NSDI'19). It names their tables,
// actions and registers, lays out the cell header they exchange, and gives
// the formulas that turn the paper's parameters (credit size and rate, cell
// size, reachability period and threshold) into what the control plane
// writes: packet-generator periods and register values.
//
// Tofino cannot cut a packet into cells; README.md says, mechanism by
// mechanism, what is the paper's and what the programs approximate.
//
// The P4_16 sources are compiled by a lab's Intel SDE (bf-p4c), not by
// this repository's build.
package stardust

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// The programs: bfrt.<program>.pipe.<Control>.<name>.
const (
	ProgramFA = "stardust_fa"
	ProgramFE = "stardust_fe"
)

// Names the control plane uses. (FA) or (FE) says which program has it;
// the rest are in both.
const (
	// TableWhoami is keyless: its default action set_id gives the device
	// its fabric id (the FA's number, or the FE's for reachability cells).
	TableWhoami = "SwitchIngress.whoami"
	ActionSetID = "set_id"
	// TableVOQ (FA) maps a host frame's destination MAC to its VOQ:
	// destination FA and port, the VOQ's index in RegCredit, and the
	// traffic class (the traffic manager queue it waits in).
	TableVOQ    = "SwitchIngress.voq_map"
	ActionToVOQ = "to_voq"
	// TableSpray maps a spraying slot to a fabric port, keyed by the
	// destination FA and the slot RegSpray gave: the control plane writes
	// a random permutation of the links that reach the FA over the
	// MaxLinks slots, replaces it every few rounds (§5.3), and leaves out
	// links whose RegReachAge reached th (§3.2, §5.8).
	TableSpray   = "SwitchIngress.spray"
	ActionToLink = "to_link"
	// ActionDrop is every table's default.
	ActionDrop = "drop"
	// TableHostPort (FA) sends a released frame to its host port.
	TableHostPort = "SwitchIngress.host_port"
	ActionToHost  = "to_host"
	// TableCreditPort (FA) names the host port a credit generator frame
	// is for, by its packet id within the generator's batch.
	TableCreditPort = "SwitchIngress.credit_port"
	ActionCreditFor = "credit_for"
	// TableCreditTo (FA) addresses a port's credits round robin (RegCreditRR
	// gives the slot) to the source FAs' VOQs the control plane lists.
	TableCreditTo  = "SwitchIngress.credit_to"
	ActionToSource = "to_source"
	// TableReachPort sends a reachability generator frame out of a fabric
	// port, by its packet id.
	TableReachPort = "SwitchIngress.reach_port"
	ActionReachOn  = "reach_on"

	// RegCredit (FA) holds each VOQ's credit balance in frames; a credit
	// cell adds its len, a frame sent to the fabric takes one (§3.3).
	RegCredit = "SwitchIngress.reg_credit"
	// RegSeqOut (FA) is the next sequence number per destination FA, and
	// RegSeqIn the next expected per source FA (in-order release).
	RegSeqOut = "SwitchIngress.reg_seq_out"
	RegSeqIn  = "SwitchIngress.reg_seq_in"
	// RegReasmTimeout (FA, index 0) is the reassembly timer in ns: an
	// early frame whose age (the FA's global timestamp minus the cell
	// header's Tstamp, its source's when it left for the fabric) has
	// reached it takes its turn, giving up every sequence number of its
	// source before it (§4.1: the egress FA drops a packet whose
	// reassembly timer expires); 0 waits for ever. Below ReasmTimeoutMaxNs.
	RegReasmTimeout = "SwitchIngress.reg_reasm_timeout"
	// RegReasmDrops (FA) counts, per source FA, the sequence numbers given
	// up at a reassembly timeout and not since released: frames lost on
	// the way or dropped waiting at this FA.
	RegReasmDrops = "SwitchIngress.reg_reasm_drops"
	// RegSpray is the round-robin slot per destination FA.
	RegSpray = "SwitchIngress.reg_spray"
	// RegCreditRR (FA) is the round-robin slot per host port's credits.
	RegCreditRR = "SwitchIngress.reg_credit_rr"
	// RegFCI (FA) counts the FCI-marked cells received per destination
	// port; a credit's worth of them (its length, in frames) cancels one
	// of the port's credits, so the credit rate falls by the share of
	// cells marked (§4.2).
	RegFCI = "SwitchIngress.reg_fci"
	// RegReachAge counts, per port, the aging ticks since the port's last
	// reachability cell; the link is down once it reaches th.
	RegReachAge = "SwitchIngress.reg_reach_age"
	// RegFCIThreshold is the queue depth, in the traffic manager's buffer
	// cells, at or above which a data cell leaving by an FE's port or an
	// FA's fabric port is marked FCI; 0 turns the device's marking off.
	RegFCIThreshold = "SwitchEgress.reg_fci_th"

	// TableGenFlow (FA) gives a data frame of the packet generator (host
	// traffic on a bench whose FA host ports have no hosts or traffic
	// generator behind them) its VOQ, as voq_map does a host's frame: key
	// the generator application (KeyAppID) and a slot drawn per frame by
	// the program's Random<bit<6>> extern (KeySlot, 0..MaxLinks-1); action
	// ActionToVOQ. The control plane writes a flow's destinations over the
	// MaxLinks slots: one destination in every slot for traffic to one
	// port, a spread for traffic to many.
	TableGenFlow = "SwitchIngress.gen_flow"
	// RegLatHist (FA) is the fabric latency histogram at the destination
	// FA: bucket b counts the data cells that arrived b<<LatBucketShift ns
	// (or more, in the last bucket) after their source FA sent them, by the
	// cell's Tstamp and the switches' global timestamps (which the lab keeps
	// in step, e.g. by PTP; the simulated switches share one clock).
	RegLatHist = "SwitchIngress.reg_lat_hist"
	// RegQHist (FE) is the queue histogram of the FE's output queues:
	// bucket b counts the data cells that found b<<QHistShift of the
	// traffic manager's buffer cells (TMCellBytes each) ahead of them in
	// their queue on enqueue (enq_qdepth; the last bucket holds deeper).
	RegQHist = "SwitchEgress.reg_qdepth_hist"
)

// Histogram registers: HistBuckets buckets, the last saturating.
const (
	HistBuckets    = 512
	LatBucketShift = 6 // 64 ns
	QHistShift     = 2 // 4 buffer cells, 320 B
)

// KindAge is the packet generator's aging tick (local to a device, never
// on a link): each adds one to the age of the port its packet id names.
const KindAge = 3

// Match keys and action parameters as bfrt_python spells them.
const (
	KeyDstAddr  = "dst_addr"
	KeyDstFA    = "dst_fa"
	KeySlot     = "slot"
	KeyDstPort  = "dst_port"
	KeyPacketID = "packet_id"
	KeyAppID    = "app_id"
	ParamID     = "id"
	ParamFA     = "fa"
	ParamPort   = "port"
	ParamVOQ    = "voq"
	ParamTC     = "tc"
	ParamLink   = "link"
)

// TMCellBytes is the Tofino traffic manager's buffer cell: queue depths
// (enq_qdepth) count these.
const TMCellBytes = 80

// FCIThreshold is RegFCIThreshold for a threshold of frames frames of
// frameBytes each: the depth in buffer cells they take.
func FCIThreshold(frames, frameBytes int) uint32 {
	return uint32(frames * ((frameBytes + TMCellBytes - 1) / TMCellBytes))
}

// Cell header layout: after an Ethernet header with EtherType EtherType,
// CellHeaderBytes of kind (8 bits), flags (8 bits: FCI, last frame of a
// burst), destination FA (16), destination port (16), source FA (16),
// sequence number (32), payload length (16) and the source FA's global
// timestamp when it sent the cell to the fabric (32, ns, low bits).
const (
	// EtherType is IEEE Std 802's local experimental EtherType 2.
	EtherType       = 0x88B6
	EthernetBytes   = 14
	CellHeaderBytes = 18
	// Cell kinds.
	KindData   = 0
	KindCredit = 1
	KindReach  = 2
	// Flags.
	FlagFCI  = 0x01
	FlagLast = 0x02
	// ReasmQID is the recirculation port's queue early frames wait their
	// turn in at the egress FA (SD_REASM_QID), apart from the frames
	// waiting for credit in their traffic class's queue.
	ReasmQID = 7
	// MaxFAs is the size of the per-FA registers and tables (SD_MAX_FAS).
	MaxFAs = 256
	// MaxLinks is the spraying slots per destination (SD_MAX_LINKS).
	MaxLinks = 64
	// PortCount sizes the per-port registers (SD_MAX_PORTS).
	PortCount = 512
	// MaxVOQs is RegCredit's size (SD_MAX_VOQS).
	MaxVOQs = 4096
	// ReasmTimeoutMaxNs bounds RegReasmTimeout: ages are differences of
	// the global timestamps' low 32 bits, compared by the sign of age -
	// timeout, so both stay under 2^31 ns.
	ReasmTimeoutMaxNs = 1<<31 - 1
	// AgeMax is where a reachability age saturates (SD_AGE_MAX): th must
	// be below it.
	AgeMax = 255
	// CreditCapFrames is the most credit a VOQ banks (SD_CREDIT_CAP, in
	// frames): a credit arriving at or above it is lost, so an idle VOQ
	// cannot hoard.
	CreditCapFrames = 32
)

// Cell is the header a frame carries through the fabric.
type Cell struct {
	Kind, Flags   uint8
	DstFA         uint16
	DstPort       uint16
	SrcFA         uint16
	Seq           uint32
	PayloadLength uint16
	Tstamp        uint32
}

// Marshal lays c out as the programs parse it.
func (c Cell) Marshal() []byte {
	b := make([]byte, CellHeaderBytes)
	b[0], b[1] = c.Kind, c.Flags
	binary.BigEndian.PutUint16(b[2:], c.DstFA)
	binary.BigEndian.PutUint16(b[4:], c.DstPort)
	binary.BigEndian.PutUint16(b[6:], c.SrcFA)
	binary.BigEndian.PutUint32(b[8:], c.Seq)
	binary.BigEndian.PutUint16(b[12:], c.PayloadLength)
	binary.BigEndian.PutUint32(b[14:], c.Tstamp)
	return b
}

// ParseCell reads a cell header.
func ParseCell(b []byte) (Cell, error) {
	if len(b) < CellHeaderBytes {
		return Cell{}, fmt.Errorf("cell header: %d bytes, want %d", len(b), CellHeaderBytes)
	}
	return Cell{
		Kind: b[0], Flags: b[1],
		DstFA: binary.BigEndian.Uint16(b[2:]), DstPort: binary.BigEndian.Uint16(b[4:]),
		SrcFA: binary.BigEndian.Uint16(b[6:]), Seq: binary.BigEndian.Uint32(b[8:]),
		PayloadLength: binary.BigEndian.Uint16(b[12:]), Tstamp: binary.BigEndian.Uint32(b[14:]),
	}, nil
}

// GeneratorBufferBytes is what a Stardust generator application's packet
// buffer holds after the 6 B header the packet generator writes over the
// destination MAC (TNA's pktgen_timer_header_t): the rest of the Ethernet
// header (source MAC, EtherType) and a cell header.
const GeneratorBufferBytes = 8 + CellHeaderBytes

// GeneratorBuffer is the packet buffer of a generator application whose
// frames carry cell c (its kind says what they are: KindData host traffic,
// KindCredit credits, KindReach reachability cells, KindAge aging ticks),
// from source MAC src.
func GeneratorBuffer(src [6]byte, c Cell) []byte {
	b := make([]byte, 0, GeneratorBufferBytes)
	b = append(b, src[:]...)
	b = binary.BigEndian.AppendUint16(b, EtherType)
	return append(b, c.Marshal()...)
}

// ParseGeneratorBuffer reads a generator buffer GeneratorBuffer wrote.
func ParseGeneratorBuffer(b []byte) (src [6]byte, c Cell, err error) {
	if len(b) < GeneratorBufferBytes {
		return src, c, fmt.Errorf("generator buffer: %d bytes, want %d (source MAC, EtherType, cell header)", len(b), GeneratorBufferBytes)
	}
	copy(src[:], b)
	if et := binary.BigEndian.Uint16(b[6:]); et != EtherType {
		return src, c, fmt.Errorf("generator buffer: EtherType %#04x, want %#04x", et, EtherType)
	}
	c, err = ParseCell(b[8:])
	return src, c, err
}

// MinCreditBytes is the smallest credit a scheduler generating one credit
// every cyclesPerCredit clocks at clockHz can hand out and still fill an
// adapter of outputBps (§4.1: 10 Tb/s, 1 GHz, every two clocks; the paper
// prints 2000 B, the arithmetic gives 2500 B).
func MinCreditBytes(outputBps, clockHz float64, cyclesPerCredit int) float64 {
	return outputBps / (clockHz / float64(cyclesPerCredit)) / 8
}

// CreditPeriod is the interval between the credits of one egress port:
// credits of creditBytes at port rate x (1 + speedUp) (§4.1; §6.3: 4 KB
// and 3%). On Tofino it is the packet generator's period for the port's
// credit application.
func CreditPeriod(portBps, speedUp float64, creditBytes int) (time.Duration, error) {
	if portBps <= 0 || speedUp < 0 || creditBytes <= 0 {
		return 0, errors.New("credit period: port rate and credit size must be positive, speed-up not negative")
	}
	return time.Duration(math.Round(float64(creditBytes) * 8 / (portBps * (1 + speedUp)) * 1e9)), nil
}

// CellBytes is the payload of one frame-as-cell: the largest multiple of
// the datapath width that, with the Ethernet and cell headers, fits the
// bound the lab sets for a frame (§3.2: cells are bounded, e.g. 256 B, and
// match the FE pipeline's width).
func CellBytes(frameBound, datapathBytes int) (int, error) {
	n := (frameBound - EthernetBytes - CellHeaderBytes) / datapathBytes * datapathBytes
	if n <= 0 {
		return 0, fmt.Errorf("a frame of %d B has no room for a %d B datapath word after the headers", frameBound, datapathBytes)
	}
	return n, nil
}

// Reach is the reachability parameters of Appendix E (Table 4).
type Reach struct {
	ClockHz      float64         // f
	Cycles       int             // c, clocks between messages per link
	BitmapBits   int             // b, FAs one message reports
	MessageBytes int             // B
	HostsPerFA   int             // h
	Hosts        int             // N
	Tiers        int             // n
	Th           int             // th, consecutive messages before a state change
	Prop         []time.Duration // pd_i for the 2n-1 links on the way
	LinkBps      float64         // s
}

// PaperReach is Table 4 with 50 ns and 500 ns links (the 652 µs of
// Appendix E takes one 50 ns and two 500 ns links).
func PaperReach() Reach {
	return Reach{ClockHz: 1e9, Cycles: 10000, BitmapBits: 128, MessageBytes: 24, HostsPerFA: 40,
		Hosts: 32000, Tiers: 2, Th: 3, LinkBps: 50e9,
		Prop: []time.Duration{50 * time.Nanosecond, 500 * time.Nanosecond, 500 * time.Nanosecond}}
}

// Period is t' = c/f, the interval between reachability messages on a
// link: the packet generator's period for reachability cells.
func (r Reach) Period() time.Duration {
	return time.Duration(math.Round(float64(r.Cycles) / r.ClockHz * 1e9))
}

// Messages is M = ceil(N / (h b)), the messages a full table takes.
func (r Reach) Messages() int {
	return (r.Hosts + r.HostsPerFA*r.BitmapBits - 1) / (r.HostsPerFA * r.BitmapBits)
}

// Recovery is t x th with propagation: the sum over the 2n-1 links of
// (c/f + pd_i) x M x th (Appendix E).
func (r Reach) Recovery() time.Duration {
	var sum float64
	for i := 0; i < 2*r.Tiers-1; i++ {
		pd := 0.0
		if i < len(r.Prop) {
			pd = r.Prop[i].Seconds()
		}
		sum += (float64(r.Cycles)/r.ClockHz + pd) * float64(r.Messages()*r.Th)
	}
	return time.Duration(math.Round(sum * 1e9))
}

// Overhead is the fraction of a link reachability cells take: B 8 f / (c s).
func (r Reach) Overhead() float64 {
	return float64(r.MessageBytes) * 8 * r.ClockHz / (float64(r.Cycles) * r.LinkBps)
}
