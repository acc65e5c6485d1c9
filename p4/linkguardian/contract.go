// Package linkguardian is the control-plane contract of the LinkGuardian P4
// program (Kannan et al., SIGCOMM'23): the names of its tables, actions and
// registers as the program declares them, its header layout, and the rules
// that turn an operator's intent into register values (retransmitted
// copies from Eq. 2, backpressure thresholds in Tofino cells, ackNoTimeout).
//
// The P4_16 sources are compiled by a lab's Intel SDE (bf-p4c), not by this
// repository's build.
package linkguardian

import (
	"fmt"
	"math"
	"time"
)

// LinkGuardian runs as two P4 programs: the sender on the switch that
// transmits into the corrupting link and the receiver on the other end.
// The control plane reaches their objects as bfrt.<program>.pipe.<name>.
const (
	ProgramSender   = "sender"
	ProgramReceiver = "receiver"
)

// Names the control plane uses, as the LinkGuardian artifact's P4 declares
// them (control and object name), with the program that declares each.
const (
	// Sender. TableLinkProtect is keyed by egress_port; ActionProtect takes
	// dummy_pkt_max_count and blocking_mode (1 ordered, 0 non-blocking).
	TableLinkProtect = "SwitchEgress.link_protect"
	ActionProtect    = "protect"
	// Sender state: next sequence number and its era.
	RegSeqNo = "reg_seq_no"
	RegEra   = "reg_era"
	// Sender: multicasts a buffered packet N times on a loss notification.
	TableRetxMcast = "SwitchIngress.retx_mcast_buffered_pkt"
	// Sender: drops packets whose 20-bit random number hits one of
	// floor(p * 2^20) entries: the artifact's loss emulation.
	TableEmulateDrop = "SwitchIngress.emulate_random_pkt_drop"
	// Sender: every packet TableEmulateDrop's ActionDrop took (a counter
	// register, index 0): the losses counted at the switch.
	RegEmulatedDrops = "SwitchIngress.emulated_drops"

	// Receiver: the next expected sequence number (ackNo), per port.
	RegExpectedSeqNo = "SwitchIngress.reg_expected_seq_no"
	RegAck           = "reg_ack"
	// Sender: the number of copies a loss notification multicasts, per
	// protected egress port: the action selects multicast group N, which
	// the deploy step creates with N replicas to the port's retransmit queue.
	ActionRetxCopies = "set_retx_copies"
	// Receiver: holes skipped by ackNoTimeout (a counter register, index 0).
	RegTimeoutCount = "SwitchIngress.reg_ack_timeout_count"
	// Receiver: backpressure thresholds on the recirculation buffer, in cells.
	RegPauseThreshold  = "SwitchEgress.reg_recirc_buffer_pfc_pause_threshold"
	RegResumeThreshold = "SwitchEgress.reg_recirc_buffer_pfc_resume_threshold"
)

// Where the buffers live in the traffic manager, for occupancy reads
// (tm.counter.queue, 80 B cells): the sender's Tx buffer of copies and the
// receiver's reorder buffer are queues of the pipe-1 recirculation port.
const (
	RecircPort    = 196
	QueueTxBuffer = 1 // sender
	QueueReorder  = 2 // receiver
)

// Header layout (§3.5): a 3-byte LinkGuardian header on protected packets:
// a 16-bit seqNo, the era bit that toggles at every wrap, and the packet
// type. The receiver adds a 3-byte ACK header on reverse traffic.
const (
	HeaderBytes  = 3
	SeqNoBits    = 16
	SeqNoRange   = 1 << SeqNoBits
	MaxHoleTrack = 5 // consecutive losses tracked: 5 one-bit reTxReqs registers (§3.5)
)

// Packet types carried in the header.
const (
	PktOriginal = iota
	PktRetransmitted
	PktDummy
	PktAck
	PktLossNotification
)

// Copies is Eq. 2: the number N of retransmitted copies that brings the
// effective loss rate, actual^(N+1), down to the target:
// N = ceil(log(target)/log(actual) - 1), at least 1.
func Copies(target, actual float64) (int, error) {
	if !(target > 0 && target < 1) || !(actual > 0 && actual < 1) {
		return 0, fmt.Errorf("copies: loss rates must be in (0, 1), got target %g actual %g", target, actual)
	}
	if actual <= target {
		return 1, nil // a healthy link still retransmits once if it loses
	}
	// Round before ceil so that 8/4 - 1 is 1, not 1.0000000000000002.
	n := math.Ceil(math.Round((math.Log(target)/math.Log(actual)-1)*1e9) / 1e9)
	return int(math.Max(1, n)), nil
}

// The sender's Tx buffer reads its copies back through a loopback port,
// port 16 of the artifact's sender: a front-panel port added at 100G and
// put in MAC-near loopback (NUS-SNL/linkguardian, switch_impl/system_impl/
// sender/setup-ae.py lines 45-48, the "Recirculation port" 19/0 at 100G,
// and line 111, LOOPBACK_MODE='BF_LPBK_MAC_NEAR'), so a copy takes a
// frame's time on a MAC there: its bytes, the FCS, the preamble and the
// gap. After its first pass a copy carries, besides the original's
// LinkGuardian header, the 2 B lr_buffered header that pass adds
// (common/linkradar_hdr.p4 lines 59-63; sender.p4
// add_linkradar_buffered_hdr).
const (
	TxLoopbackBps       = 100e9
	BufferedHeaderBytes = 2
	// MACGapBytes is what a MAC puts on the wire besides a frame: the
	// 8 B preamble and the 12 B inter-frame gap (IEEE 802.3).
	MACGapBytes = 20
)

// TxLoopbackCopyNs is how long, in nanoseconds, the copy of a protected
// frame of frameBytes (FCS included, before the LinkGuardian header) takes
// on the sender's loopback port: 1543 B of a 1518 B frame, 123.44 ns.
func TxLoopbackCopyNs(frameBytes int) float64 {
	return float64((frameBytes+HeaderBytes+BufferedHeaderBytes+MACGapBytes)*8) / TxLoopbackBps * 1e9
}

// ProtectedFrameNs is how long, in nanoseconds, a protected frame of
// frameBytes (FCS included, before the LinkGuardian header) takes on a
// link of bps: 1541 B of a 1518 B frame, 123.28 ns at 100G. Copies sent
// back to back at that pace outrun the loopback port when it is shorter
// than TxLoopbackCopyNs.
func ProtectedFrameNs(frameBytes int, bps float64) float64 {
	return float64((frameBytes+HeaderBytes+MACGapBytes)*8) / bps * 1e9
}

// CellBytes is the Tofino 1 buffer cell (PROTOCOLS.md, traffic manager).
const CellBytes = 80

// RecirculationBps is the rate at which the receiver's recirculation-based
// reorder buffer drains: the recirculation port runs at 100G (§4, Parameters).
const RecirculationBps = 100e9

// resumeAllowanceBytes is the conservative allowance the paper adds on top
// of what drains during t_flight_resume (§4: 40 KB at 25G with 1.9 us, 37 KB
// at 100G with 1.6 us; both are the drained bytes plus about 16 KiB).
const resumeAllowanceBytes = 16 << 10

// MTUCells is what one MTU packet (1518 B frame plus the LinkGuardian
// header) occupies in the buffer.
func MTUCells() int { return int(math.Ceil(float64(1518+HeaderBytes) / CellBytes)) }

// Thresholds returns the receiver's backpressure thresholds in cells: the
// reorder buffer must not run dry during t_flight_resume while it drains at
// the recirculation rate (§3.3, Fig. 6), and pause sits 2 MTU above resume
// (DCQCN's hysteresis, §3.3).
func Thresholds(tFlightResume time.Duration) (pauseCells, resumeCells int) {
	drained := RecirculationBps / 8 * tFlightResume.Seconds()
	resumeCells = int(math.Ceil((drained + resumeAllowanceBytes) / CellBytes))
	return resumeCells + 2*MTUCells(), resumeCells
}

// FlightResume is the measured worst-case delay between the receiver
// deciding to resume and the sender's queue resuming (§4, Parameters).
func FlightResume(linkBps float64) (time.Duration, error) {
	switch linkBps {
	case 25e9:
		return 1900 * time.Nanosecond, nil
	case 100e9:
		return 1600 * time.Nanosecond, nil
	}
	return 0, fmt.Errorf("t_flight_resume was measured for 25G and 100G links only, not %g Gb/s: measure it and set it", linkBps/1e9)
}

// MaxRetxDelay is the longest time the paper measured from a loss to the
// arrival of its retransmission (§4, Parameters): 6 us at 25G, 5.5 us at 100G.
func MaxRetxDelay(linkBps float64) (time.Duration, error) {
	switch linkBps {
	case 25e9:
		return 6 * time.Microsecond, nil
	case 100e9:
		return 5500 * time.Nanosecond, nil
	}
	return 0, fmt.Errorf("the maximum retransmission delay was measured for 25G and 100G links only, not %g Gb/s", linkBps/1e9)
}

// AckNoTimeout is the receiver's hole-skipping timeout: the maximum
// retransmission delay plus a 1.5 us margin (7.5 us at 25G, 7 us at 100G).
func AckNoTimeout(linkBps float64) (time.Duration, error) {
	d, err := MaxRetxDelay(linkBps)
	return d + 1500*time.Nanosecond, err
}

// DropTableEntries is how many entries of the loss-emulation table drop a
// packet with probability p: floor(p * 2^20).
func DropTableEntries(p float64) int { return int(math.Floor(p * (1 << 20))) }
