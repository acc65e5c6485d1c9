package linkguardian

import (
	"fmt"
	"time"
)

// The control-plane setup the programs assume besides their tables and
// registers (README "Deploying", common/headers.p4): mirror sessions,
// multicast groups, queue priorities, PFC, the receiver's timer and the
// packets injected from the CPU port. Without any one of them a real
// Tofino forwards, but does not protect: the sender keeps no copy (no Tx
// buffer session), the receiver sends no loss notification (no control
// session), a retransmission reaches no replica (no multicast group), a
// pause is not honoured (PFC off) or never sent (no timer).
//
// The shapes follow the LinkGuardian artifact's setup scripts
// (NUS-SNL/linkguardian, switch_impl/system_impl/{sender,receiver}/setup-ae.py:
// bfrt.mirror.cfg.add_with_normal, bfrt.pre.node.add / bfrt.pre.mgid.add,
// tf1.tm.queue.sched_cfg max_priority, the periodic pktgen timer, and the
// initial dummy and courier packets sent through the CPU PCIe port).

// Mirror session ids (10 bits), one pair per protected port, or'ed with
// the port's index (PortIndex): LG_SESSION_* in common/headers.p4.
const (
	SessionTxBuffer = 0x100 // sender: the copy kept in the Tx buffer
	SessionCtrl     = 0x100 // receiver: loss notifications
	SessionLowPrio  = 0x180 // both: replenishing the dummy (sender) or the ACK (receiver)
)

// Queues of a protected port (LG_QID_* in common/headers.p4).
const (
	QueueNormal  = 0 // regular traffic, the only one PFC pauses
	QueueLowPrio = 5 // sender: the dummy; receiver: the explicit ACK
	QueueCtrl    = 7 // sender: retransmissions; receiver: notifications, PFC frames
)

// QueuePriorities is the strict order of a protected port's queues, as
// TM scheduling priorities (0..7, higher served first): control above
// normal above the self-replenishing low-priority queue.
var QueuePriorities = map[int]int{QueueCtrl: 7, QueueNormal: 4, QueueLowPrio: 0}

// QueuePFCClasses is the PFC class each queue of the sender's protected
// port honours: the normal queue class 0, the one the receiver pauses;
// the others a class of their own, so a pause holds neither the
// retransmissions nor the dummy (every TM queue is in class 0 until set,
// bf_rt_tm_tf1.json tf1.tm.queue.cfg pfc_cos).
var QueuePFCClasses = map[int]int{QueueNormal: 0, QueueCtrl: QueueCtrl, QueueLowPrio: QueueLowPrio}

// PFCClassEnable is the receive PFC map of the sender's protected port:
// priority class 0, the normal queue's (LG_PFC_CLASS_ENABLE).
const PFCClassEnable = 0x01

// NotificationBytes is the receiver's loss-notification mirror truncation.
const NotificationBytes = 64

// MaxRetxCopies is the largest N the control plane may choose: multicast
// groups 1..MaxRetxCopies are created with N replicas of the protected
// port. Eq. 2 with a 1e-8 target gives 6 at the loss emulation's 6.25%.
const MaxRetxCopies = 8

// TimerInterval is the receiver's packet-generator timer per protected
// link (ackNoTimeout ticks and PFC frames ride on it).
const TimerInterval = 100 * time.Nanosecond

// TimerFrameBytes is a timer packet (the generator's minimum frame).
const TimerFrameBytes = 64

// The table that routes the packets injected from the CPU port to a
// protected port's low-priority queue (both programs).
const (
	TableL2Forward       = "SwitchIngress.l2_forward"
	KeyDstAddr           = "dst_addr"
	ActionForwardToQueue = "forward_to_queue"
	ParamPort            = "port"
	ParamQID             = "qid"
)

// EtherTypeLG is the LinkGuardian ether type (ETHERTYPE_LG).
const EtherTypeLG = 0x88b5

// PortIndex is a protected port's index into per-port state and sessions.
func PortIndex(devPort int) int { return devPort & 0x7f }

// MirrorSession is one session of bfrt.mirror.cfg (add_with_normal).
type MirrorSession struct {
	ID        int
	Direction string // INGRESS or EGRESS
	Port      int    // ucast_egress_port
	Queue     int    // egress_port_queue
	MaxPktLen int    // truncation, bytes
}

// fullFrame is max_pkt_len without truncation (the artifact's 16384).
const fullFrame = 16384

// SenderMirrors are the sender's sessions for a protected port.
func SenderMirrors(port int) []MirrorSession {
	i := PortIndex(port)
	return []MirrorSession{
		{ID: SessionTxBuffer | i, Direction: "EGRESS", Port: RecircPort, Queue: QueueTxBuffer, MaxPktLen: fullFrame},
		{ID: SessionLowPrio | i, Direction: "EGRESS", Port: port, Queue: QueueLowPrio, MaxPktLen: fullFrame},
	}
}

// ReceiverMirrors are the receiver's sessions for a protected port.
func ReceiverMirrors(port int) []MirrorSession {
	i := PortIndex(port)
	return []MirrorSession{
		{ID: SessionCtrl | i, Direction: "INGRESS", Port: port, Queue: QueueCtrl, MaxPktLen: NotificationBytes},
		{ID: SessionLowPrio | i, Direction: "EGRESS", Port: port, Queue: QueueLowPrio, MaxPktLen: fullFrame},
	}
}

// MulticastNode is a PRE node (bfrt.pre.node): one replica per dev port.
type MulticastNode struct {
	ID       int
	RID      int
	DevPorts []int
}

// RetxGroup is multicast group n (set_retx_copies(n)) for a protected
// port: n nodes, each one replica of the port. Node ids are the port's
// index times MaxRetxCopies plus the replica's, so every group of every
// port has its own.
func RetxGroup(port, n int) (mgid int, nodes []MulticastNode, err error) {
	if n < 1 || n > MaxRetxCopies {
		return 0, nil, fmt.Errorf("linkguardian: %d retransmitted copies (expected 1..%d)", n, MaxRetxCopies)
	}
	base := 1 + (PortIndex(port)*MaxRetxCopies*(MaxRetxCopies+1))/2 + (n*(n-1))/2
	for r := 0; r < n; r++ {
		nodes = append(nodes, MulticastNode{ID: base + r, RID: r, DevPorts: []int{port}})
	}
	return n, nodes, nil
}

// InjectAddr is the destination MAC of a packet injected from the CPU
// port for queue qid of port: the artifact's (dev_port << 5) | qid.
func InjectAddr(port, qid int) int64 { return int64(port)<<5 | int64(qid) }

// InjectFrame is the minimum-size frame the control plane sends from the
// CPU port to seed a protected port's low-priority queue: the dummy
// (sender) or the explicit ACK (receiver), kind PktDummy or PktAck, with
// seqNo 0 and era 0 (the artifact's send_initial_dummy_pkt and
// send_initial_courier_pkt).
func InjectFrame(port, kind int) []byte {
	f := make([]byte, 60)
	a := InjectAddr(port, QueueLowPrio)
	for i := 0; i < 6; i++ {
		f[i] = byte(a >> (8 * (5 - i)))
	}
	copy(f[6:12], []byte{0x02, 0x00, 0x4c, 0x47, 0x00, 0x02})
	f[12], f[13] = EtherTypeLG>>8, EtherTypeLG&0xff
	// lg_h: seq_no (16), era (1), pkt_type (3), blocking, rx_buffered,
	// piggybacked, inner_ipv6.
	f[16] = byte(kind&7) << 4
	return f
}

// ParseInjected reads what InjectFrame wrote: the destination MAC and
// the LinkGuardian packet type; ok is false for another ether type.
func ParseInjected(f []byte) (dst int64, kind int, ok bool) {
	if len(f) < 17 || int(f[12])<<8|int(f[13]) != EtherTypeLG {
		return 0, 0, false
	}
	for i := 0; i < 6; i++ {
		dst = dst<<8 | int64(f[i])
	}
	return dst, int(f[16]>>4) & 7, true
}
