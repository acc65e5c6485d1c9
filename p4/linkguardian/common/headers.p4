/* -*- P4_16 -*- */
/*
 * LinkGuardian (Kannan et al., SIGCOMM'23) for Intel Tofino 1 (TNA):
 * headers, constants and types shared by sender.p4 and receiver.p4.
 *
 * The control-plane contract for these programs (table, action and register
 * names, header layout, queue and port numbers) is p4/linkguardian/contract.go;
 * names_test.go checks that both agree.
 */
#ifndef _LINKGUARDIAN_HEADERS_P4_
#define _LINKGUARDIAN_HEADERS_P4_

/* ------------------------------------------------------------------------
 * Types
 * ---------------------------------------------------------------------- */

typedef bit<48> mac_addr_t;
typedef bit<16> ether_type_t;
typedef bit<16> seq_no_t;     // contract: SeqNoBits
typedef bit<3>  lg_pkt_type_t;
// Per-port state is indexed by the port's number inside its pipe,
// dev_port & 0x7f (dev port 136 -> index 8).
typedef bit<7>  lg_idx_t;
const bit<32> LG_MAX_PORTS = 128;

const bit<32>  LG_SEQ_RANGE      = 65536;   // contract: SeqNoRange
const seq_no_t LG_SEQ_HALF_RANGE = 0x8000;  // era correction subtracts N/2
const seq_no_t LG_SEQ_MAX        = 0xffff;  // the era toggles after this one

// Registers that hold a sequence number with its era keep them as one
// 17-bit value, era in bit 16, so that a single stateful ALU compares or
// replaces both; bit 17 says the value has been set (a link is active).
const bit<32> LG_SEQ17_ERA   = 0x10000;
const bit<32> LG_SEQ17_VALID = 0x20000;

// ackNoTimeout in ticks of the receiver's timer packets (§3.5: the
// packet generator sends one every 100 ns per protected link). The
// default is 7 us, for 100G; 25G needs 7.5 us: -DLG_ACK_NO_TIMEOUT_TICKS=75.
// The control plane derives the value from contract.go's AckNoTimeout.
#ifndef LG_ACK_NO_TIMEOUT_TICKS
#define LG_ACK_NO_TIMEOUT_TICKS 70
#endif
const bit<32> LG_ACK_NO_TIMEOUT = LG_ACK_NO_TIMEOUT_TICKS;

// The sender's loss emulation draws a 20-bit random number per packet and
// drops it if the number is one of the table's floor(p * 2^20) entries
// (contract: DropTableEntries). The table holds up to 65536 entries, that
// is p up to 6.25%; raise it with -DLG_DROP_TABLE_SIZE=.. if needed.
#ifndef LG_DROP_TABLE_SIZE
#define LG_DROP_TABLE_SIZE 65536
#endif
typedef bit<20> lg_rand_t;

/* ------------------------------------------------------------------------
 * Ether types
 * ---------------------------------------------------------------------- */

const ether_type_t ETHERTYPE_IPV4 = 0x0800;
const ether_type_t ETHERTYPE_IPV6 = 0x86dd;
// IEEE 802 local experimental ether type: LinkGuardian data and ACK headers.
// The inner ether type is not carried (the header is 3 bytes); its
// inner_ipv6 bit says which of IPv4 and IPv6 to restore.
const ether_type_t ETHERTYPE_LG   = 0x88b5;
// MAC control (PFC), consumed by the sender's MAC.
const ether_type_t ETHERTYPE_MAC_CONTROL = 0x8808;
const bit<16>      PFC_OPCODE            = 0x0101;
const mac_addr_t   PFC_DST_ADDR          = 0x0180c2000001;
const bit<16>      PFC_QUANTA_PAUSE      = 0xffff;
const bit<16>      PFC_QUANTA_RESUME     = 0;
// Source and destination of the frames the receiver originates toward the
// sender (loss notifications): a locally administered address; the link
// is point to point and the sender classifies by ether type.
const mac_addr_t   LG_LINK_ADDR          = 0x02004c470001;
// The priority class of the sender's normal queue (LG_QID_NORMAL), the
// only one the receiver pauses: the sender's traffic manager maps that
// queue, and no other, to PFC priority 0.
const bit<8>       LG_PFC_CLASS_ENABLE   = 0x01;
// PFC request codes the receiver posts for its timer packets.
const bit<8>       LG_PFC_NONE           = 0;
const bit<8>       LG_PFC_PAUSE          = 1;
const bit<8>       LG_PFC_RESUME         = 2;

/* ------------------------------------------------------------------------
 * LinkGuardian packet types (contract: PktOriginal .. PktLossNotification)
 * ---------------------------------------------------------------------- */

const lg_pkt_type_t LG_TYPE_ORIGINAL          = 0;
const lg_pkt_type_t LG_TYPE_RETRANSMITTED     = 1;
const lg_pkt_type_t LG_TYPE_DUMMY             = 2;
const lg_pkt_type_t LG_TYPE_ACK               = 3;
const lg_pkt_type_t LG_TYPE_LOSS_NOTIFICATION = 4;

// Consecutive losses one notification reports and the sender tracks, one
// 1-bit reTxReqs register per position (§3.5; contract: MaxHoleTrack).
const bit<3> LG_MAX_HOLE_TRACK = 5;

/* ------------------------------------------------------------------------
 * Ports, queues, mirror sessions
 *
 * Protected links must sit on the same pipe as the recirculation port
 * (registers are per pipe, and buffered packets meet the state of their
 * link only there): with the defaults, pipe 1, dev ports 128..191.
 * ---------------------------------------------------------------------- */

#ifndef LG_RECIRC_PORT
#define LG_RECIRC_PORT 196   // contract: RecircPort (pipe 1, local port 68)
#endif
const PortId_t LG_RECIRC_DEV_PORT = LG_RECIRC_PORT;

// Local port 68 of every pipe is both its packet generator port and its
// recirculation port (Tofino 1): dev ports 68, 196, 324, 452.
const PortId_t LG_INTERNAL_LOCAL_PORT = 68;
const PortId_t LG_LOCAL_PORT_MASK     = 0x7f;

// Queues of the recirculation port: where the two buffers live, for
// tm.counter.queue occupancy reads (contract: QueueTxBuffer, QueueReorder).
const QueueId_t LG_QID_TX_BUFFER = 1;   // sender: copies awaiting an ACK
const QueueId_t LG_QID_REORDER   = 2;   // receiver: out-of-order packets

// Queues of a protected port; their priorities are set by the traffic
// manager configuration (strict priority: CTRL > NORMAL > LOWPRIO), and
// only NORMAL's priority class is paused by the receiver's PFC frames.
const QueueId_t LG_QID_NORMAL  = 0;   // regular traffic
const QueueId_t LG_QID_LOWPRIO = 5;   // sender: the dummy; receiver: the ACK
const QueueId_t LG_QID_CTRL    = 7;   // sender: retransmissions; receiver:
                                      // loss notifications, PFC frames

// Mirror sessions (10-bit ids), one pair per protected port: the session
// id is the base ORed with the port's index.
//   sender:   LG_SESSION_TX_BUFFER | idx -> RecircPort, queue LG_QID_TX_BUFFER
//             LG_SESSION_LOWPRIO   | idx -> the port, queue LG_QID_LOWPRIO (dummy)
//   receiver: LG_SESSION_CTRL      | idx -> the port, queue LG_QID_CTRL,
//                                           truncated to 64 B (ACK updates,
//                                           loss notifications)
//             LG_SESSION_LOWPRIO   | idx -> the port, queue LG_QID_LOWPRIO (ACK)
const MirrorId_t LG_SESSION_TX_BUFFER = 0x100;
const MirrorId_t LG_SESSION_CTRL      = 0x100;
const MirrorId_t LG_SESSION_LOWPRIO   = 0x180;

// ig_dprsr_md.mirror_type / eg_dprsr_md.mirror_type values.
const bit<3> LG_MIRROR_TYPE = 1;
// ig_dprsr_md.resubmit_type value.
const bit<3> LG_RESUBMIT_TYPE = 1;

/* ------------------------------------------------------------------------
 * Internal header kinds: the first byte of everything the pipeline puts in
 * front of a packet for its own use (bridged metadata, mirror metadata,
 * buffer tags). Buffer tags have their top three bits set, so the ingress
 * parser of an internal port tells them from a packet generator header,
 * whose first three bits are padding (zero).
 * ---------------------------------------------------------------------- */

const bit<8> LG_KIND_BRIDGE        = 0x01;
const bit<8> LG_KIND_MIRROR_TXBUF  = 0x11; // sender: copy for the Tx buffer
const bit<8> LG_KIND_MIRROR_DUMMY  = 0x12; // sender: replenish the dummy queue
const bit<8> LG_KIND_MIRROR_LACK   = 0x21; // receiver: new leading ACK
const bit<8> LG_KIND_MIRROR_LOSS   = 0x22; // receiver: loss notification
const bit<8> LG_KIND_MIRROR_ACK    = 0x23; // receiver: replenish the ACK queue
const bit<8> LG_TAG_TX_BUFFERED    = 0xf1; // sender: circulating Tx-buffer copy
const bit<8> LG_TAG_RX_BUFFERED    = 0xf2; // receiver: in the reorder buffer

/* ------------------------------------------------------------------------
 * Wire headers
 * ---------------------------------------------------------------------- */

header ethernet_h {
    mac_addr_t   dst_addr;
    mac_addr_t   src_addr;
    ether_type_t ether_type;
}

// The packet generator overwrites the first 6 bytes of its buffer (the
// destination MAC) with pktgen_timer_header_t; the rest of the Ethernet
// header follows.
header remaining_ethernet_h {
    mac_addr_t   src_addr;
    ether_type_t ether_type;
}

// LinkGuardian header, 3 bytes (contract: HeaderBytes), after Ethernet.
// On data packets (sender -> receiver) seq_no is the packet's sequence
// number; on ACK and loss-notification packets (receiver -> sender) it is
// the leading ACK: the next sequence number the receiver expects.
header lg_h {
    seq_no_t      seq_no;
    bit<1>        era;           // toggles at every wrap of seq_no
    lg_pkt_type_t pkt_type;      // LG_TYPE_*
    bit<1>        blocking_mode; // data: 1 ordered (LinkGuardian), 0 NB
    bit<1>        rx_buffered;   // data: has been through the reorder buffer
    bit<1>        piggybacked;   // ACK: carried on a regular packet
    bit<1>        inner_ipv6;    // inner ether type: 1 IPv6, 0 IPv4
}

// Follows lg_h on a loss notification, 3 bytes.
header lg_loss_h {
    seq_no_t first_lost;
    bit<1>   first_lost_era;
    bit<3>   hole_size;          // 1 .. LG_MAX_HOLE_TRACK
    bit<4>   _pad;
}

// 802.1Qbb priority flow control, after an Ethernet header with
// ETHERTYPE_MAC_CONTROL.
header pfc_h {
    bit<16> opcode;
    bit<8>  _reserved;
    bit<8>  class_enable;        // one bit per priority class
    bit<16> quanta_c0;
    bit<16> quanta_c1;
    bit<16> quanta_c2;
    bit<16> quanta_c3;
    bit<16> quanta_c4;
    bit<16> quanta_c5;
    bit<16> quanta_c6;
    bit<16> quanta_c7;
}

/* ------------------------------------------------------------------------
 * Internal headers (never on the wire)
 * ---------------------------------------------------------------------- */

// Ingress -> egress, in front of every packet that does not bypass egress.
header lg_bridge_h {
    bit<8> kind;                 // LG_KIND_BRIDGE
    bit<5> _pad;
    bit<1> emulated_loss;        // sender: lost on the link by emulation
    bit<1> is_timer;             // receiver: a timer packet (may become PFC)
    bit<1> has_tag;              // an lg_buffer_tag_h follows
}

// In front of a mirrored copy (ingress-to-egress or egress-to-egress).
header lg_mirror_h {
    bit<8>   kind;               // LG_KIND_MIRROR_*
    bit<7>   _pad0;
    PortId_t port;               // the protected port the copy belongs to
    seq_no_t leading_ack;        // receiver: LACK and LOSS
    bit<1>   leading_ack_era;
    bit<3>   hole_size;          // receiver: LOSS
    bit<4>   _pad1;
    seq_no_t first_lost;         // receiver: LOSS
    bit<1>   first_lost_era;
    bit<7>   _pad2;
}

// In front of a packet that circulates through the recirculation port.
header lg_buffer_tag_h {
    bit<8>   tag;                // LG_TAG_TX_BUFFERED / LG_TAG_RX_BUFFERED
    bit<7>   _pad;
    PortId_t port;               // sender: egress port to retransmit on;
                                 // receiver: port the packet arrived on
}

// Resubmitted packets carry 8 bytes on Tofino 1 (PORT_METADATA_SIZE).
// The receiver resubmits a timer packet to skip a hole (ackNoTimeout).
header lg_resubmit_h {
    bit<8>   kind;               // always LG_RESUBMIT_SKIP_HOLE
    bit<1>   ack_era;            // skip only if ackNo is still
    lg_idx_t idx;                //   (ack_era, ack_no) on link idx
    seq_no_t ack_no;
    bit<32>  _pad;
}
const bit<8> LG_RESUBMIT_SKIP_HOLE = 0x31;

#endif /* _LINKGUARDIAN_HEADERS_P4_ */
