package p4switch

import "time"

// Entry is a table entry: its key fields, its action and the action's data.
type Entry struct {
	Key    map[string]int64 `json:"key"`
	Action string           `json:"action"`
	Data   map[string]int64 `json:"data"`
}

// PortStatus is what the switch reports of a port. Speed and FEC are the
// device's names (BF_SPEED_100G, BF_FEC_TYP_RS on a Tofino); SpeedGbps is
// the speed in Gb/s.
type PortStatus struct {
	DevPort   int    `json:"dev_port"`
	Enabled   bool   `json:"enabled"`
	Up        bool   `json:"up"`
	Speed     string `json:"speed"`
	FEC       string `json:"fec"`
	SpeedGbps int    `json:"-"`
}

// PortMode is a port's speed and FEC as the switch names them, and whether
// it is enabled: what SetPortMode found, to be set back by the caller's undo.
type PortMode struct {
	Speed   string `json:"speed"`
	FEC     string `json:"fec"`
	Enabled bool   `json:"enabled"`
}

// TxStamp is a port's transmit timestamp.
type TxStamp struct {
	Valid bool  `json:"valid"`
	Value int64 `json:"value"` // ns, the switch's clock
	ID    int64 `json:"id"`
}

// Counters is one read of every counter of a port, by the device's names
// (a Tofino's $PORT_STAT fields).
type Counters struct {
	// Time is the switch's clock at the read.
	Time   time.Duration
	Values map[string]int64
}

// QueueUsage is a traffic-manager queue's occupancy, in buffer cells (80 B
// on Tofino 1).
type QueueUsage struct {
	UsageCells     int64 `json:"usage_cells"`
	WatermarkCells int64 `json:"watermark_cells"`
	DropPackets    int64 `json:"drop_count_packets"`
}

// Pktgen configures the switch's packet generator: Batches x PerBatch
// packets of PacketBytes, one every Interval, injected on the pktgen port
// and sent out EgressPort.
type Pktgen struct {
	AppID       int
	Port        int // the pktgen port (68 on TF1 pipe 0)
	EgressPort  int
	PacketBytes int
	Interval    time.Duration
	Batches     int
	PerBatch    int
	// Buffer, when set, is the frame after the generator's 6 B header
	// (zero-filled to PacketBytes - 6): a Stardust program's cell
	// (p4/stardust GeneratorBuffer). Without it the driver sends its own
	// frame.
	Buffer []byte
	// IntervalJitter, when positive, adds to each gap between batches a
	// random draw from 0..IntervalJitter (whole ns; tf1.pktgen.app_cfg's
	// ibg_jitter, which the generator draws uniformly: the SDE's
	// reference model, tofino-model's PktGenJitter). One shot only.
	IntervalJitter time.Duration
	// Periodic makes a timer that fires every Interval until stopped
	// (trigger_timer_periodic; Batches is then per firing), such as the
	// LinkGuardian receiver's timer.
	Periodic bool
}

// MirrorSession is a normal mirror session (BF Runtime's mirror.cfg,
// add_with_normal): copies to one port's queue, truncated to MaxPktLen.
type MirrorSession struct {
	ID        int    `json:"sid"`
	Direction string `json:"direction"` // INGRESS, EGRESS or BOTH
	Port      int    `json:"ucast_egress_port"`
	Queue     int    `json:"egress_port_queue"`
	MaxPktLen int    `json:"max_pkt_len"` // truncation, bytes (16384: none)
	Enabled   bool   `json:"session_enable"`
}

// MulticastNode is a node of the packet replication engine (pre.node):
// one replica to each of its dev ports, tagged with its RID.
type MulticastNode struct {
	ID       int   `json:"node_id"`
	RID      int   `json:"rid"`
	DevPorts []int `json:"dev_ports"`
}

// PFC is a port's priority flow control: one bit per priority class
// ($PORT's $RX_PFC_EN_MAP: pause frames of the class are honoured;
// $TX_PFC_EN_MAP: the MAC may send them).
type PFC struct {
	RxMap int `json:"rx_map"`
	TxMap int `json:"tx_map"`
}

// Packets is the number of packets a configuration sends.
func (p Pktgen) Packets() int64 { return int64(p.Batches) * int64(p.PerBatch) }

// PktgenStatus is a packet-generator application's progress.
type PktgenStatus struct {
	Enabled bool  `json:"enabled"`
	Packets int64 `json:"packets"`
	Done    bool  `json:"done"`
}

// Lane is one lane's transceiver diagnostics.
type Lane struct {
	Lane      int
	RxDBm     float64
	TxDBm     float64
	BiasMilli float64
}

// FECCounters is one read of a port's forward error correction counters
// (on a Tofino, bf_port_rs_fec_status_and_counters_get of the SDE's
// bf_port API: hi_ser, fec_align_status, fec_corr_cnt, fec_uncorr_cnt,
// fec_ser_lane_0..3). Counts run from when the port was added or its mode
// last changed; compare two reads for a rate.
type FECCounters struct {
	// Time is the switch's clock at the read.
	Time time.Duration
	// Corrected counts codewords that had errors the decoder corrected;
	// Uncorrected those it could not (their frames reach the MAC with a bad
	// FCS: PortFrames.RxFCSErrors counts them again).
	Corrected, Uncorrected int64
	// SymbolErrors are the symbol errors the decoder found, per lane of
	// the port (RS-FEC: 10-bit symbols; FC-FEC: corrected blocks).
	SymbolErrors [4]int64
	// Aligned says the FEC has codeword lock on all lanes; HighSER that the
	// symbol error rate is above the code's bypass threshold (802.3 clause
	// 91.5.3.3).
	Aligned, HighSER bool
}

// PortFrames is one read of a port's frame counters in device-neutral
// terms: running totals since the port was added or its counters cleared,
// each from one of the MAC's RMON counters (RFC 2819 / IEEE 802.3 clause
// 30; on a Tofino 1 the $PORT_STAT fields of bf_rt_port_tf1.json). A read
// of a subset (PortFramesOf) leaves the fields it did not ask for at 0.
type PortFrames struct {
	// Time is the switch's clock at the read.
	Time time.Duration
	// TxOK: frames sent without error ($FramesTransmittedOK).
	TxOK int64
	// TxAll: every frame sent, good or bad ($FramesTransmittedAll).
	TxAll int64
	// TxOctets: the bytes of every frame sent, FCS included
	// ($OctetsTransmittedTotal).
	TxOctets int64
	// TxPriPause: priority flow control (802.1Qbb) pause frames sent
	// ($FramesTransmittedPriPause).
	TxPriPause int64
	// RxOK: frames received without error ($FramesReceivedOK).
	RxOK int64
	// RxAll: every frame received, good or bad ($FramesReceivedAll).
	RxAll int64
	// RxFCSErrors: frames received with a bad frame check sequence: the
	// corruption a link's FEC left uncorrected ($FramesReceivedwithFCSError).
	RxFCSErrors int64
	// TxSized: frames sent whose length, FCS included, lies in the RMON
	// frame-size ranges covering the read's TxSizes (the sum of the
	// $FramesTransmittedLength_<range> fields); 0 unless asked for.
	TxSized int64
}

// FrameField selects a field of PortFrames for PortFramesOf; combine
// them with |.
type FrameField uint

// The fields, in the order a read names their counters.
const (
	FramesTxOK FrameField = 1 << iota
	FramesTxAll
	FramesTxOctets
	FramesTxPriPause
	FramesRxOK
	FramesRxAll
	FramesRxFCSErrors

	// FramesAll is every field but TxSized.
	FramesAll = FramesTxOK | FramesTxAll | FramesTxOctets | FramesTxPriPause | FramesRxOK | FramesRxAll | FramesRxFCSErrors
)

// SizeRange is a range of frame lengths in bytes, FCS included, Min to
// Max inclusive; Max 0 means no upper bound. The zero SizeRange selects
// nothing.
type SizeRange struct{ Min, Max int }

// FrameQuery is what a PortFramesOf read asks for: Fields, and, when
// TxSizes is set, TxSized over the RMON frame-size ranges it overlaps.
type FrameQuery struct {
	Fields  FrameField
	TxSizes SizeRange
}

// Build is the outcome of compiling and installing a P4 program.
type Build struct {
	Program string
	// SourceSHA256 is the hash of the uploaded sources (sorted paths and
	// contents), as the switch computed it.
	SourceSHA256 string
	// Conf is the installed configuration the switch daemon loads the
	// program with (run_switchd.sh -p <Program> on a Tofino).
	Conf     string
	Duration time.Duration
	// Log is the tail of the compiler's output.
	Log string
}
