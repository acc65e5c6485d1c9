/* -*- P4_16 -*- */
/*
 * LinkGuardian receiver (Kannan et al., SIGCOMM'23, §3, Algorithms 1 and 2,
 * Appendix A) for Intel Tofino 1, TNA. It runs on the switch at the far end
 * of the corrupting link.
 *
 * Ingress, for the protected packets arriving on the link:
 *   - loss detection: reg_expected_seq_no holds the next sequence number
 *     the sender will put on the wire; an original or a dummy with a higher
 *     one reveals a hole, reported to the sender by a loss notification
 *     (ingress mirror to the link's high-priority queue): the first lost
 *     seqNo and the hole's size, up to LG_MAX_HOLE_TRACK (§3.5);
 *   - in-order delivery (Algorithm 1, blocking mode): reg_ack holds ackNo,
 *     the next sequence number to deliver, with its era. A packet equal to
 *     ackNo is forwarded and ackNo advances; a later one goes into the
 *     reorder buffer (queue LG_QID_REORDER of the recirculation port) and
 *     is checked again each time it comes round; an earlier one is a
 *     duplicate and is dropped. Sequence numbers of different eras are
 *     compared after subtracting N/2 from both (era correction);
 *   - LinkGuardianNB (blocking_mode 0): everything is forwarded at once;
 *     ackNo follows the highest sequence number; of the N retransmitted
 *     copies of a packet the first is forwarded;
 *   - every advance of ackNo is mirrored to the egress of the link's port,
 *     where the leading ACK is kept for the ACKs to the sender (§3.1):
 *     piggybacked on reverse traffic, else carried by the explicit ACK
 *     packet that lives alone in the port's lowest-priority queue and
 *     mirrors itself back into it each time it leaves (self-replenishing);
 *   - ackNoTimeout (§3.5): the packet generator sends a timer packet for
 *     each protected link every 100 ns. While a hole is open (ackNo behind
 *     the expected seqNo) the timer counts down from the last advance of
 *     ackNo; at zero it resubmits itself to skip the hole (ackNo + 1, if
 *     still unchanged) and counts the skip in reg_ack_timeout_count.
 * Egress:
 *   - backpressure (Algorithm 2): every packet leaving the reorder buffer
 *     compares the recirculation queue's depth with the pause and resume
 *     thresholds (in 80 B cells) and, on a change of state, posts a pause
 *     or a resume; the link's next timer packet becomes that PFC frame
 *     (§3.5), sent to the sender, whose MAC pauses or resumes its normal
 *     queue only. A pause lasts 0xffff quanta (335 us at 100G), far longer
 *     than a hole can stay open (ackNoTimeout).
 *
 * Compiled by the SDE: bf-p4c --target tofino --arch tna -o <dir> receiver.p4
 */
#include <core.p4>
#include <tna.p4>

#include "common/headers.p4"

/* ------------------------------------------------------------------------
 * Headers and metadata
 * ---------------------------------------------------------------------- */

struct receiver_headers_t {
    lg_bridge_h           bridge;
    lg_mirror_h           mirror_in;
    lg_buffer_tag_h       buffer_tag;
    pktgen_timer_header_t pktgen_timer;
    remaining_ethernet_h  remaining_ethernet;
    ethernet_h            ethernet;
    lg_h                  lg;
    lg_loss_h             lg_loss;
    pfc_h                 pfc;
}

// The ackNoTimeout state of a link: the ackNo last seen by a timer packet
// and the ticks left before it is skipped.
struct ack_timer_t {
    bit<32> ack_seen;
    bit<32> remaining;
}

// What a packet does with reg_expected_seq_no and reg_ack.
const bit<2> LG_EXP_NONE  = 0;
const bit<2> LG_EXP_ORIG  = 1;   // an original: the next is seqNo + 1
const bit<2> LG_EXP_DUMMY = 2;   // a dummy: the next is its seqNo
const bit<2> LG_EXP_READ  = 3;   // a timer packet
const bit<2> LG_ACK_NONE    = 0;
const bit<2> LG_ACK_ADVANCE = 1; // Algorithm 1: advance if it is ackNo
const bit<2> LG_ACK_SET     = 2; // LinkGuardianNB: follow the highest seqNo
const bit<2> LG_ACK_READ    = 3;

struct receiver_ig_metadata_t {
    lg_resubmit_h resub;
    lg_mirror_h   mirror;
    MirrorId_t    mirror_session;
    lg_idx_t      idx;
    PortId_t      link_port;     // the protected port the packet belongs to
    bit<2>        exp_op;
    bit<2>        ack_op;
    seq_no_t      pkt_seq;
    bit<1>        pkt_era;
    bit<32>       pkt17;         // era ++ seqNo of the packet
    bit<32>       pkt17v;        // the same, marked valid
    seq_no_t      next_seq;
    bit<1>        next_era;
    bit<32>       next17;        // era ++ seqNo of the packet after it
    bit<32>       set17;         // LinkGuardianNB: ackNo after this packet
    seq_no_t      expected;
    seq_no_t      lost;
    seq_no_t      hole_size;
    seq_no_t      min_tmp;
    bit<1>        first_lost_era;
    bit<32>       ack17;         // ackNo before this packet
    bit<32>       lack17;        // ackNo after this packet
    seq_no_t      ack_seq;
    bit<1>        ack_era;
    bit<8>        timer_fire;
    bit<1>        dup;
    bit<1>        is_data;
    bit<1>        is_timer;
    bit<1>        notify_loss;
    bit<1>        notify_ack;
    bit<1>        deliver;
    bit<1>        has_tag;
    bit<1>        use_l2;
}

struct receiver_eg_metadata_t {
    lg_mirror_h mirror_out;
    MirrorId_t  mirror_session;
    lg_idx_t    idx;
    bit<3>      kind;
    bit<1>      is_ip;
    bit<1>      inner_ipv6;
    bit<32>     lack;            // valid, era, seqNo
    bit<1>      lack_valid;
    bit<32>     qdepth;          // cells
    bit<1>      over_pause;
    bit<1>      under_resume;
    bit<1>      bp_changed;
    bit<8>      pfc_request;
}

// Egress packet kinds.
const bit<3> LG_EG_OTHER = 0;    // regular traffic: piggyback the ACK
const bit<3> LG_EG_LACK  = 1;    // ingress mirror: ackNo advanced
const bit<3> LG_EG_LOSS  = 2;    // ingress mirror: loss notification
const bit<3> LG_EG_ACK   = 3;    // the explicit ACK
const bit<3> LG_EG_TIMER = 4;    // timer packet: PFC frame or nothing
const bit<3> LG_EG_RXBUF = 5;    // leaving the reorder buffer

/* ------------------------------------------------------------------------
 * Ingress parser
 * ---------------------------------------------------------------------- */

parser SwitchIngressParser(
        packet_in pkt,
        out receiver_headers_t hdr,
        out receiver_ig_metadata_t ig_md,
        out ingress_intrinsic_metadata_t ig_intr_md) {

    state start {
        pkt.extract(ig_intr_md);
        ig_md.exp_op = LG_EXP_NONE;
        ig_md.ack_op = LG_ACK_NONE;
        ig_md.timer_fire = 0;
        ig_md.dup = 0;
        ig_md.is_data = 0;
        ig_md.is_timer = 0;
        ig_md.notify_loss = 0;
        ig_md.notify_ack = 0;
        ig_md.deliver = 0;
        ig_md.has_tag = 0;
        ig_md.use_l2 = 0;
        transition select(ig_intr_md.resubmit_flag) {
            1 : parse_resubmit;
            default : parse_port_metadata;
        }
    }

    state parse_resubmit {
        pkt.extract(ig_md.resub);
        transition parse_packet;
    }

    state parse_port_metadata {
        pkt.advance(PORT_METADATA_SIZE);
        transition parse_packet;
    }

    state parse_packet {
        transition select(ig_intr_md.ingress_port) {
            LG_INTERNAL_LOCAL_PORT &&& LG_LOCAL_PORT_MASK : parse_internal;
            default : parse_ethernet;
        }
    }

    // Local port 68: a packet coming round the reorder buffer, or a timer
    // packet from the packet generator (whose first three bits are zero).
    state parse_internal {
        transition select(pkt.lookahead<bit<8>>()) {
            LG_TAG_RX_BUFFERED : parse_buffer_tag;
            default : parse_pktgen;
        }
    }

    state parse_buffer_tag {
        pkt.extract(hdr.buffer_tag);
        transition parse_ethernet;
    }

    // The timer packet's zero padding becomes the PFC header if needed.
    state parse_pktgen {
        pkt.extract(hdr.pktgen_timer);
        pkt.extract(hdr.remaining_ethernet);
        pkt.extract(hdr.pfc);
        transition accept;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_LG : parse_lg;
            default : accept;
        }
    }

    state parse_lg {
        pkt.extract(hdr.lg);
        transition accept;
    }
}

/* ------------------------------------------------------------------------
 * Ingress
 * ---------------------------------------------------------------------- */

control SwitchIngress(
        inout receiver_headers_t hdr,
        inout receiver_ig_metadata_t ig_md,
        in ingress_intrinsic_metadata_t ig_intr_md,
        in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
        inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
        inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    action discard() {
        ig_dprsr_md.drop_ctl = 1;   // mirroring still happens
    }

    /* ---- forwarding ---- */

    action forward(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
        ig_tm_md.qid = LG_QID_NORMAL;
    }

    // Also how the control plane's injected explicit ACK reaches the
    // lowest-priority queue of its protected port.
    action forward_to_queue(PortId_t port, QueueId_t qid) {
        ig_tm_md.ucast_egress_port = port;
        ig_tm_md.qid = qid;
    }

    action l2_miss() {
        ig_dprsr_md.drop_ctl = 1;
    }

    table l2_forward {
        key = {
            hdr.ethernet.dst_addr : exact;
        }
        actions = {
            forward;
            forward_to_queue;
            @defaultonly l2_miss;
        }
        const default_action = l2_miss();
        size = 1024;
    }

    /* ---- loss detection: the next seqNo expected on the wire ---- */

    Register<seq_no_t, lg_idx_t>(LG_MAX_PORTS, 0) reg_expected_seq_no;

    RegisterAction<seq_no_t, lg_idx_t, seq_no_t>(reg_expected_seq_no) expect_after_original = {
        void apply(inout seq_no_t v, out seq_no_t rv) {
            rv = v;
            v = ig_md.next_seq;
        }
    };

    RegisterAction<seq_no_t, lg_idx_t, seq_no_t>(reg_expected_seq_no) expect_after_dummy = {
        void apply(inout seq_no_t v, out seq_no_t rv) {
            rv = v;
            v = ig_md.pkt_seq;
        }
    };

    RegisterAction<seq_no_t, lg_idx_t, seq_no_t>(reg_expected_seq_no) read_expected = {
        void apply(inout seq_no_t v, out seq_no_t rv) {
            rv = v;
        }
    };

    /* ---- ackNo (Algorithm 1): era ++ seqNo of the next to deliver ---- */

    Register<bit<32>, lg_idx_t>(LG_MAX_PORTS, 0) reg_ack;

    RegisterAction<bit<32>, lg_idx_t, bit<32>>(reg_ack) ack_advance_if_next = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
            if (v == ig_md.pkt17) {
                v = ig_md.next17;
            }
        }
    };

    RegisterAction<bit<32>, lg_idx_t, bit<32>>(reg_ack) ack_set = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
            v = ig_md.set17;
        }
    };

    RegisterAction<bit<32>, lg_idx_t, bit<32>>(reg_ack) ack_read = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
        }
    };

    /* ---- ackNoTimeout ---- */

    Register<ack_timer_t, lg_idx_t>(LG_MAX_PORTS, {0, LG_ACK_NO_TIMEOUT}) reg_ack_timer;

    // A hole is open: count down while ackNo stays where it is.
    RegisterAction<ack_timer_t, lg_idx_t, bit<8>>(reg_ack_timer) ack_timer_tick = {
        void apply(inout ack_timer_t v, out bit<8> rv) {
            rv = 0;
            if (v.ack_seen != ig_md.ack17) {
                v.ack_seen = ig_md.ack17;
                v.remaining = LG_ACK_NO_TIMEOUT;
            } else if (v.remaining == 0) {
                v.remaining = LG_ACK_NO_TIMEOUT;
                rv = 1;
            } else {
                v.remaining = v.remaining - 1;
            }
        }
    };

    RegisterAction<ack_timer_t, lg_idx_t, bit<8>>(reg_ack_timer) ack_timer_rearm = {
        void apply(inout ack_timer_t v, out bit<8> rv) {
            v.ack_seen = ig_md.ack17;
            v.remaining = LG_ACK_NO_TIMEOUT;
            rv = 0;
        }
    };

    // Holes skipped by ackNoTimeout, all links (index 0).
    Register<bit<32>, bit<1>>(1, 0) reg_ack_timeout_count;

    RegisterAction<bit<32>, bit<1>, bit<32>>(reg_ack_timeout_count) count_timeout = {
        void apply(inout bit<32> v) {
            v = v + 1;
        }
    };

    /* ---- LinkGuardianNB: forward the first of N retransmitted copies ---- */

    Register<bit<32>, lg_idx_t>(LG_MAX_PORTS, 0) reg_nb_last_retx;

    RegisterAction<bit<32>, lg_idx_t, bit<1>>(reg_nb_last_retx) nb_seen_retx = {
        void apply(inout bit<32> v, out bit<1> rv) {
            if (v == ig_md.pkt17v) {
                rv = 1;
            } else {
                v = ig_md.pkt17v;
                rv = 0;
            }
        }
    };

    /* ---- classification ---- */

    action from_wire() {
        ig_md.idx = ig_intr_md.ingress_port[6:0];
        ig_md.link_port = ig_intr_md.ingress_port;
        ig_md.pkt_seq = hdr.lg.seq_no;
        ig_md.pkt_era = hdr.lg.era;
        ig_md.is_data = 1;
    }

    action from_reorder_buffer() {
        ig_md.idx = hdr.buffer_tag.port[6:0];
        ig_md.link_port = hdr.buffer_tag.port;
        ig_md.pkt_seq = hdr.lg.seq_no;
        ig_md.pkt_era = hdr.lg.era;
        ig_md.is_data = 1;
        ig_md.ack_op = LG_ACK_ADVANCE;
    }

    // The packet generator's source MAC names the protected port.
    action from_timer() {
        ig_md.link_port = hdr.remaining_ethernet.src_addr[8:0];
        ig_md.idx = hdr.remaining_ethernet.src_addr[6:0];
        ig_md.is_timer = 1;
    }

    action from_resubmitted_timer() {
        ig_md.pkt_seq = ig_md.resub.ack_no;
        ig_md.pkt_era = ig_md.resub.ack_era;
        ig_md.ack_op = LG_ACK_ADVANCE;
    }

    action sequence_numbers() {
        ig_md.next_seq = ig_md.pkt_seq + 1;
        ig_md.pkt17 = (bit<32>)(ig_md.pkt_era ++ ig_md.pkt_seq);
    }

    action next_sequence_number() {
        ig_md.next17 = (bit<32>)(ig_md.next_era ++ ig_md.next_seq);
        ig_md.pkt17v = ig_md.pkt17 | LG_SEQ17_VALID;
    }

    action nb_after_original() {
        ig_md.set17 = ig_md.next17;
    }

    action nb_after_dummy() {
        ig_md.set17 = ig_md.pkt17;
    }

    /* ---- loss notification ---- */

    action measure_hole() {
        ig_md.lost = ig_md.pkt_seq - ig_md.expected;
        ig_md.min_tmp = min(ig_md.expected, ig_md.pkt_seq);
    }

    action cap_hole() {
        ig_md.hole_size = min(ig_md.lost, (seq_no_t)LG_MAX_HOLE_TRACK);
    }

    action split_ack() {
        ig_md.ack_seq = ig_md.ack17[15:0];
        ig_md.ack_era = ig_md.ack17[16:16];
    }

    // Era correction (§3.5).
    action era_correct() {
        ig_md.ack_seq = ig_md.ack_seq - LG_SEQ_HALF_RANGE;
        ig_md.pkt_seq = ig_md.pkt_seq - LG_SEQ_HALF_RANGE;
    }

    action compare_with_ack() {
        ig_md.min_tmp = min(ig_md.ack_seq, ig_md.pkt_seq);
    }

    action mirror_common(bit<8> kind) {
        ig_dprsr_md.mirror_type = LG_MIRROR_TYPE;
        ig_md.mirror_session = LG_SESSION_CTRL | (MirrorId_t)ig_md.idx;
        ig_md.mirror.setValid();
        ig_md.mirror.kind = kind;
        ig_md.mirror._pad0 = 0;
        ig_md.mirror.port = ig_md.link_port;
        ig_md.mirror.leading_ack = ig_md.lack17[15:0];
        ig_md.mirror.leading_ack_era = ig_md.lack17[16:16];
        ig_md.mirror._pad1 = 0;
        ig_md.mirror._pad2 = 0;
    }

    action mirror_loss_notification() {
        mirror_common(LG_KIND_MIRROR_LOSS);
        ig_md.mirror.first_lost = ig_md.expected;
        ig_md.mirror.first_lost_era = ig_md.first_lost_era;
        ig_md.mirror.hole_size = ig_md.hole_size[2:0];
    }

    action mirror_ack_update() {
        mirror_common(LG_KIND_MIRROR_LACK);
        ig_md.mirror.first_lost = 0;
        ig_md.mirror.first_lost_era = 0;
        ig_md.mirror.hole_size = 0;
    }

    /* ---- what becomes of a data packet ---- */

    action decap_ipv4() {
        hdr.lg.setInvalid();
        hdr.buffer_tag.setInvalid();
        hdr.ethernet.ether_type = ETHERTYPE_IPV4;
    }

    action decap_ipv6() {
        hdr.lg.setInvalid();
        hdr.buffer_tag.setInvalid();
        hdr.ethernet.ether_type = ETHERTYPE_IPV6;
    }

    // Into the reorder buffer, or round it once more (§3.3).
    action to_reorder_buffer() {
        hdr.buffer_tag.setValid();
        hdr.buffer_tag.tag = LG_TAG_RX_BUFFERED;
        hdr.buffer_tag._pad = 0;
        hdr.buffer_tag.port = ig_md.link_port;
        hdr.lg.rx_buffered = 1;
        ig_tm_md.ucast_egress_port = LG_RECIRC_DEV_PORT;
        ig_tm_md.qid = LG_QID_REORDER;
        ig_md.has_tag = 1;
    }

    // ackNoTimeout: try again as a skip of (ack_era, ack_no).
    action skip_hole() {
        ig_dprsr_md.resubmit_type = LG_RESUBMIT_TYPE;
        ig_md.resub.setValid();
        ig_md.resub.kind = LG_RESUBMIT_SKIP_HOLE;
        ig_md.resub.ack_era = ig_md.ack_era;
        ig_md.resub.idx = ig_md.idx;
        ig_md.resub.ack_no = ig_md.ack_seq;
        ig_md.resub._pad = 0;
    }

    // The timer packet becomes a PFC frame skeleton on the link's
    // high-priority queue; egress fills in pause or resume, or drops it.
    action timer_to_pfc() {
        ig_tm_md.ucast_egress_port = ig_md.link_port;
        ig_tm_md.qid = LG_QID_CTRL;
        hdr.ethernet.setValid();
        hdr.ethernet.dst_addr = PFC_DST_ADDR;
        hdr.ethernet.src_addr = hdr.remaining_ethernet.src_addr;
        hdr.ethernet.ether_type = ETHERTYPE_MAC_CONTROL;
        hdr.pktgen_timer.setInvalid();
        hdr.remaining_ethernet.setInvalid();
        hdr.pfc.setValid();
        hdr.pfc.opcode = PFC_OPCODE;
        hdr.pfc._reserved = 0;
        hdr.pfc.class_enable = LG_PFC_CLASS_ENABLE;
        hdr.pfc.quanta_c0 = 0;
        hdr.pfc.quanta_c1 = 0;
        hdr.pfc.quanta_c2 = 0;
        hdr.pfc.quanta_c3 = 0;
        hdr.pfc.quanta_c4 = 0;
        hdr.pfc.quanta_c5 = 0;
        hdr.pfc.quanta_c6 = 0;
        hdr.pfc.quanta_c7 = 0;
    }

    action add_bridge() {
        hdr.bridge.setValid();
        hdr.bridge.kind = LG_KIND_BRIDGE;
        hdr.bridge._pad = 0;
        hdr.bridge.emulated_loss = 0;
        hdr.bridge.is_timer = ig_md.is_timer;
        hdr.bridge.has_tag = ig_md.has_tag;
    }

    apply {
        /* 1. What the packet is, and what it does with the state. */
        if (hdr.pktgen_timer.isValid()) {
            from_timer();
            if (ig_intr_md.resubmit_flag == 1) {
                from_resubmitted_timer();
            } else {
                ig_md.exp_op = LG_EXP_READ;
                ig_md.ack_op = LG_ACK_READ;
            }
        } else if (hdr.buffer_tag.isValid()) {
            from_reorder_buffer();
        } else if (hdr.lg.isValid() && (hdr.lg.pkt_type == LG_TYPE_ORIGINAL
                                        || hdr.lg.pkt_type == LG_TYPE_RETRANSMITTED
                                        || hdr.lg.pkt_type == LG_TYPE_DUMMY)) {
            from_wire();
            if (hdr.lg.pkt_type == LG_TYPE_ORIGINAL) {
                ig_md.exp_op = LG_EXP_ORIG;
            } else if (hdr.lg.pkt_type == LG_TYPE_DUMMY) {
                ig_md.exp_op = LG_EXP_DUMMY;
            }
            if (hdr.lg.blocking_mode == 1) {
                if (hdr.lg.pkt_type == LG_TYPE_DUMMY) {
                    ig_md.ack_op = LG_ACK_READ;
                } else {
                    ig_md.ack_op = LG_ACK_ADVANCE;
                }
            } else if (hdr.lg.pkt_type != LG_TYPE_RETRANSMITTED) {
                ig_md.ack_op = LG_ACK_SET;
            }
        } else {
            ig_md.use_l2 = 1;             // reverse traffic, injected ACK, ...
        }

        /* 2. Sequence numbers: this packet's and the next one's. */
        sequence_numbers();
        if (ig_md.pkt_seq == LG_SEQ_MAX) {
            ig_md.next_era = ~ig_md.pkt_era;
        } else {
            ig_md.next_era = ig_md.pkt_era;
        }
        next_sequence_number();
        if (hdr.lg.isValid() && hdr.lg.pkt_type == LG_TYPE_DUMMY) {
            nb_after_dummy();
        } else {
            nb_after_original();
        }

        /* 3. Loss detection. */
        if (ig_md.exp_op == LG_EXP_ORIG) {
            ig_md.expected = expect_after_original.execute(ig_md.idx);
        } else if (ig_md.exp_op == LG_EXP_DUMMY) {
            ig_md.expected = expect_after_dummy.execute(ig_md.idx);
        } else if (ig_md.exp_op == LG_EXP_READ) {
            ig_md.expected = read_expected.execute(ig_md.idx);
        }
        if (ig_md.exp_op == LG_EXP_ORIG || ig_md.exp_op == LG_EXP_DUMMY) {
            measure_hole();
            if (ig_md.lost != 0) {
                ig_md.notify_loss = 1;
                cap_hole();
                // expected > seqNo: the hole began in the previous era.
                if (ig_md.min_tmp == ig_md.pkt_seq) {
                    ig_md.first_lost_era = ~ig_md.pkt_era;
                } else {
                    ig_md.first_lost_era = ig_md.pkt_era;
                }
            }
        }

        /* 4. ackNo. */
        if (ig_md.ack_op == LG_ACK_ADVANCE) {
            ig_md.ack17 = ack_advance_if_next.execute(ig_md.idx);
        } else if (ig_md.ack_op == LG_ACK_SET) {
            ig_md.ack17 = ack_set.execute(ig_md.idx);
        } else if (ig_md.ack_op == LG_ACK_READ) {
            ig_md.ack17 = ack_read.execute(ig_md.idx);
        }
        split_ack();
        ig_md.lack17 = ig_md.ack17;

        /* 5. Decisions. */
        if (ig_md.is_timer == 1) {
            if (ig_intr_md.resubmit_flag == 1) {
                if (ig_md.ack17 == ig_md.pkt17) {
                    // Still stuck on the hole: it has been skipped.
                    count_timeout.execute(0);
                    ig_md.lack17 = ig_md.next17;
                    ig_md.notify_ack = 1;
                }
            } else {
                if (ig_md.ack_seq != ig_md.expected) {
                    ig_md.timer_fire = ack_timer_tick.execute(ig_md.idx);
                } else {
                    ack_timer_rearm.execute(ig_md.idx);
                }
                if (ig_md.timer_fire == 1) {
                    skip_hole();
                }
            }
            timer_to_pfc();
        } else if (ig_md.is_data == 1) {
            if (ig_md.ack_op == LG_ACK_ADVANCE) {
                if (ig_md.ack17 == ig_md.pkt17) {
                    ig_md.deliver = 1;     // in order (Algorithm 1, line 1)
                    ig_md.lack17 = ig_md.next17;
                    ig_md.notify_ack = 1;
                } else {
                    if (ig_md.ack_era != ig_md.pkt_era) {
                        era_correct();
                    }
                    compare_with_ack();
                    if (ig_md.min_tmp == ig_md.ack_seq) {
                        to_reorder_buffer();   // ahead of ackNo (line 4)
                    } else {
                        discard();             // behind it: a duplicate (line 7)
                    }
                }
            } else if (ig_md.ack_op == LG_ACK_SET) {
                ig_md.lack17 = ig_md.set17;
                if (ig_md.ack17 != ig_md.set17) {
                    ig_md.notify_ack = 1;
                }
                if (hdr.lg.pkt_type == LG_TYPE_ORIGINAL) {
                    ig_md.deliver = 1;
                } else {
                    discard();                 // a dummy has done its job
                }
            } else if (ig_md.ack_op == LG_ACK_READ) {
                discard();                     // a dummy (blocking mode)
            } else {
                // LinkGuardianNB retransmission: the first copy goes on.
                ig_md.dup = nb_seen_retx.execute(ig_md.idx);
                if (ig_md.dup == 1) {
                    discard();
                } else {
                    ig_md.deliver = 1;
                }
            }
        }

        /* 6. Tell the egress of the link's port (one mirror per packet). */
        if (ig_md.notify_loss == 1) {
            mirror_loss_notification();
        } else if (ig_md.notify_ack == 1) {
            mirror_ack_update();
        }

        /* 7. Forwarding. */
        if (ig_md.deliver == 1) {
            if (hdr.lg.inner_ipv6 == 1) {
                decap_ipv6();
            } else {
                decap_ipv4();
            }
            ig_md.use_l2 = 1;
        }
        if (ig_md.use_l2 == 1) {
            l2_forward.apply();
        }
        add_bridge();
    }
}

control SwitchIngressDeparser(
        packet_out pkt,
        inout receiver_headers_t hdr,
        in receiver_ig_metadata_t ig_md,
        in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {

    Mirror() mirror;
    Resubmit() resubmit;

    apply {
        if (ig_dprsr_md.mirror_type == LG_MIRROR_TYPE) {
            mirror.emit<lg_mirror_h>(ig_md.mirror_session, ig_md.mirror);
        }
        if (ig_dprsr_md.resubmit_type == LG_RESUBMIT_TYPE) {
            resubmit.emit<lg_resubmit_h>(ig_md.resub);
        }
        pkt.emit(hdr);
    }
}

/* ------------------------------------------------------------------------
 * Egress parser
 * ---------------------------------------------------------------------- */

parser SwitchEgressParser(
        packet_in pkt,
        out receiver_headers_t hdr,
        out receiver_eg_metadata_t eg_md,
        out egress_intrinsic_metadata_t eg_intr_md) {

    state start {
        pkt.extract(eg_intr_md);
        eg_md.kind = LG_EG_OTHER;
        eg_md.is_ip = 0;
        eg_md.inner_ipv6 = 0;
        eg_md.lack_valid = 0;
        eg_md.over_pause = 0;
        eg_md.under_resume = 0;
        eg_md.bp_changed = 0;
        eg_md.pfc_request = LG_PFC_NONE;
        transition select(pkt.lookahead<bit<8>>()) {
            LG_KIND_BRIDGE : parse_bridge;
            LG_KIND_MIRROR_LACK : parse_mirror_only;
            LG_KIND_MIRROR_LOSS : parse_mirror_only;
            LG_KIND_MIRROR_ACK : parse_mirror;
            default : accept;
        }
    }

    state parse_bridge {
        pkt.extract(hdr.bridge);
        transition select(hdr.bridge.has_tag) {
            1 : parse_buffer_tag;
            default : parse_ethernet;
        }
    }

    state parse_buffer_tag {
        pkt.extract(hdr.buffer_tag);
        transition parse_ethernet;
    }

    // An ingress-mirrored copy: only its mirror header counts (egress
    // writes the notification's headers in front of the truncated rest).
    state parse_mirror_only {
        pkt.extract(hdr.mirror_in);
        transition accept;
    }

    // The explicit ACK, mirrored by egress as it left.
    state parse_mirror {
        pkt.extract(hdr.mirror_in);
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4 : mark_ipv4;
            ETHERTYPE_IPV6 : mark_ipv6;
            ETHERTYPE_LG : parse_lg;
            ETHERTYPE_MAC_CONTROL : parse_pfc;
            default : accept;
        }
    }

    state mark_ipv4 {
        eg_md.is_ip = 1;
        transition accept;
    }

    state mark_ipv6 {
        eg_md.is_ip = 1;
        eg_md.inner_ipv6 = 1;
        transition accept;
    }

    state parse_lg {
        pkt.extract(hdr.lg);
        transition accept;
    }

    state parse_pfc {
        pkt.extract(hdr.pfc);
        transition accept;
    }
}

/* ------------------------------------------------------------------------
 * Egress
 * ---------------------------------------------------------------------- */

control SwitchEgress(
        inout receiver_headers_t hdr,
        inout receiver_eg_metadata_t eg_md,
        in egress_intrinsic_metadata_t eg_intr_md,
        in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
        inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
        inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    action discard() {
        eg_dprsr_md.drop_ctl = 1;   // mirroring still happens
    }

    action set_idx() {
        eg_md.idx = eg_intr_md.egress_port[6:0];
    }

    /* ---- the leading ACK, as the egress of each link's port knows it ---- */

    Register<bit<32>, lg_idx_t>(LG_MAX_PORTS, 0) reg_leading_ack;

    RegisterAction<bit<32>, lg_idx_t, bit<32>>(reg_leading_ack) store_leading_ack = {
        void apply(inout bit<32> v) {
            v = eg_md.lack;
        }
    };

    RegisterAction<bit<32>, lg_idx_t, bit<32>>(reg_leading_ack) load_leading_ack = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
        }
    };

    action lack_from_mirror() {
        eg_md.lack = LG_SEQ17_VALID
                   | (bit<32>)(hdr.mirror_in.leading_ack_era ++ hdr.mirror_in.leading_ack);
    }

    action split_lack() {
        eg_md.lack_valid = eg_md.lack[17:17];
    }

    action build_loss_notification() {
        hdr.ethernet.setValid();
        hdr.ethernet.dst_addr = LG_LINK_ADDR;
        hdr.ethernet.src_addr = LG_LINK_ADDR;
        hdr.ethernet.ether_type = ETHERTYPE_LG;
        hdr.lg.setValid();
        hdr.lg.seq_no = hdr.mirror_in.leading_ack;
        hdr.lg.era = hdr.mirror_in.leading_ack_era;
        hdr.lg.pkt_type = LG_TYPE_LOSS_NOTIFICATION;
        hdr.lg.blocking_mode = 0;
        hdr.lg.rx_buffered = 0;
        hdr.lg.piggybacked = 0;
        hdr.lg.inner_ipv6 = 0;
        hdr.lg_loss.setValid();
        hdr.lg_loss.first_lost = hdr.mirror_in.first_lost;
        hdr.lg_loss.first_lost_era = hdr.mirror_in.first_lost_era;
        hdr.lg_loss.hole_size = hdr.mirror_in.hole_size;
        hdr.lg_loss._pad = 0;
    }

    action fill_explicit_ack() {
        hdr.lg.seq_no = eg_md.lack[15:0];
        hdr.lg.era = eg_md.lack[16:16];
        hdr.lg.pkt_type = LG_TYPE_ACK;
        hdr.lg.blocking_mode = 0;
        hdr.lg.rx_buffered = 0;
        hdr.lg.piggybacked = 0;
        hdr.lg.inner_ipv6 = 0;
    }

    // Self-replenishing: a copy back into the port's lowest-priority queue.
    action replenish_ack() {
        eg_dprsr_md.mirror_type = LG_MIRROR_TYPE;
        eg_md.mirror_session = LG_SESSION_LOWPRIO | (MirrorId_t)eg_md.idx;
        eg_md.mirror_out.setValid();
        eg_md.mirror_out.kind = LG_KIND_MIRROR_ACK;
        eg_md.mirror_out._pad0 = 0;
        eg_md.mirror_out.port = eg_intr_md.egress_port;
        eg_md.mirror_out.leading_ack = 0;
        eg_md.mirror_out.leading_ack_era = 0;
        eg_md.mirror_out.hole_size = 0;
        eg_md.mirror_out._pad1 = 0;
        eg_md.mirror_out.first_lost = 0;
        eg_md.mirror_out.first_lost_era = 0;
        eg_md.mirror_out._pad2 = 0;
    }

    action piggyback_ack() {
        hdr.lg.setValid();
        hdr.lg.seq_no = eg_md.lack[15:0];
        hdr.lg.era = eg_md.lack[16:16];
        hdr.lg.pkt_type = LG_TYPE_ACK;
        hdr.lg.blocking_mode = 0;
        hdr.lg.rx_buffered = 0;
        hdr.lg.piggybacked = 1;
        hdr.lg.inner_ipv6 = eg_md.inner_ipv6;
        hdr.ethernet.ether_type = ETHERTYPE_LG;
    }

    /* ---- backpressure (Algorithm 2), thresholds in 80 B cells ---- */

    // Defaults for 100G (§4); the control plane writes contract.go's
    // Thresholds for the link's speed.
    Register<bit<32>, bit<1>>(1, 500) reg_recirc_buffer_pfc_pause_threshold;
    Register<bit<32>, bit<1>>(1, 460) reg_recirc_buffer_pfc_resume_threshold;

    RegisterAction<bit<32>, bit<1>, bit<1>>(reg_recirc_buffer_pfc_pause_threshold) reached_pause = {
        void apply(inout bit<32> v, out bit<1> rv) {
            if (eg_md.qdepth >= v) {
                rv = 1;
            } else {
                rv = 0;
            }
        }
    };

    RegisterAction<bit<32>, bit<1>, bit<1>>(reg_recirc_buffer_pfc_resume_threshold) reached_resume = {
        void apply(inout bit<32> v, out bit<1> rv) {
            if (eg_md.qdepth <= v) {
                rv = 1;
            } else {
                rv = 0;
            }
        }
    };

    // curr_state of Algorithm 2, per link: 0 resume, 1 pause.
    Register<bit<8>, lg_idx_t>(LG_MAX_PORTS, 0) reg_pfc_state;

    RegisterAction<bit<8>, lg_idx_t, bit<1>>(reg_pfc_state) pause_if_resumed = {
        void apply(inout bit<8> v, out bit<1> rv) {
            if (v == 0) {
                v = 1;
                rv = 1;
            } else {
                rv = 0;
            }
        }
    };

    RegisterAction<bit<8>, lg_idx_t, bit<1>>(reg_pfc_state) resume_if_paused = {
        void apply(inout bit<8> v, out bit<1> rv) {
            if (v == 1) {
                v = 0;
                rv = 1;
            } else {
                rv = 0;
            }
        }
    };

    // The PFC frame the link's next timer packet is to become.
    Register<bit<8>, lg_idx_t>(LG_MAX_PORTS, 0) reg_pfc_request;

    RegisterAction<bit<8>, lg_idx_t, bit<8>>(reg_pfc_request) post_pause = {
        void apply(inout bit<8> v) {
            v = LG_PFC_PAUSE;
        }
    };

    RegisterAction<bit<8>, lg_idx_t, bit<8>>(reg_pfc_request) post_resume = {
        void apply(inout bit<8> v) {
            v = LG_PFC_RESUME;
        }
    };

    RegisterAction<bit<8>, lg_idx_t, bit<8>>(reg_pfc_request) take_pfc_request = {
        void apply(inout bit<8> v, out bit<8> rv) {
            rv = v;
            v = LG_PFC_NONE;
        }
    };

    action leaving_reorder_buffer() {
        eg_md.idx = hdr.buffer_tag.port[6:0];
        eg_md.qdepth = (bit<32>)eg_intr_md.deq_qdepth;
    }

    action pfc_pause() {
        hdr.pfc.quanta_c0 = PFC_QUANTA_PAUSE;
    }

    action pfc_resume() {
        hdr.pfc.quanta_c0 = PFC_QUANTA_RESUME;
    }

    apply {
        set_idx();

        if (hdr.mirror_in.isValid()) {
            if (hdr.mirror_in.kind == LG_KIND_MIRROR_LACK) {
                eg_md.kind = LG_EG_LACK;
            } else if (hdr.mirror_in.kind == LG_KIND_MIRROR_LOSS) {
                eg_md.kind = LG_EG_LOSS;
            } else {
                eg_md.kind = LG_EG_ACK;    // the replenished explicit ACK
            }
        } else if (hdr.bridge.isValid() && hdr.bridge.is_timer == 1) {
            eg_md.kind = LG_EG_TIMER;
        } else if (hdr.buffer_tag.isValid()) {
            eg_md.kind = LG_EG_RXBUF;
        } else if (hdr.lg.isValid() && hdr.lg.pkt_type == LG_TYPE_ACK) {
            eg_md.kind = LG_EG_ACK;        // the explicit ACK the control plane injected
        }

        // The leading ACK.
        if (eg_md.kind == LG_EG_LACK || eg_md.kind == LG_EG_LOSS) {
            lack_from_mirror();
            store_leading_ack.execute(eg_md.idx);
        } else if (eg_md.kind == LG_EG_ACK
                   || (eg_md.kind == LG_EG_OTHER && eg_md.is_ip == 1)) {
            eg_md.lack = load_leading_ack.execute(eg_md.idx);
            split_lack();
        }

        if (eg_md.kind == LG_EG_LACK) {
            discard();                     // news for this register only
        } else if (eg_md.kind == LG_EG_LOSS) {
            build_loss_notification();
        } else if (eg_md.kind == LG_EG_ACK) {
            replenish_ack();
            if (eg_md.lack_valid == 1) {
                fill_explicit_ack();
            } else {
                discard();                 // nothing received on the link yet
            }
        } else if (eg_md.kind == LG_EG_OTHER) {
            if (eg_md.lack_valid == 1) {
                piggyback_ack();
            }
        } else if (eg_md.kind == LG_EG_TIMER) {
            eg_md.pfc_request = take_pfc_request.execute(eg_md.idx);
            if (eg_md.pfc_request == LG_PFC_PAUSE) {
                pfc_pause();
            } else if (eg_md.pfc_request == LG_PFC_RESUME) {
                pfc_resume();
            } else {
                discard();
            }
        } else if (eg_md.kind == LG_EG_RXBUF) {
            leaving_reorder_buffer();
            eg_md.over_pause = reached_pause.execute(0);
            eg_md.under_resume = reached_resume.execute(0);
            if (eg_md.over_pause == 1) {
                eg_md.bp_changed = pause_if_resumed.execute(eg_md.idx);
                if (eg_md.bp_changed == 1) {
                    post_pause.execute(eg_md.idx);
                }
            } else if (eg_md.under_resume == 1) {
                eg_md.bp_changed = resume_if_paused.execute(eg_md.idx);
                if (eg_md.bp_changed == 1) {
                    post_resume.execute(eg_md.idx);
                }
            }
        }

        hdr.mirror_in.setInvalid();
        hdr.bridge.setInvalid();
    }
}

control SwitchEgressDeparser(
        packet_out pkt,
        inout receiver_headers_t hdr,
        in receiver_eg_metadata_t eg_md,
        in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {

    Mirror() mirror;

    apply {
        if (eg_dprsr_md.mirror_type == LG_MIRROR_TYPE) {
            mirror.emit<lg_mirror_h>(eg_md.mirror_session, eg_md.mirror_out);
        }
        pkt.emit(hdr);
    }
}

Pipeline(SwitchIngressParser(),
         SwitchIngress(),
         SwitchIngressDeparser(),
         SwitchEgressParser(),
         SwitchEgress(),
         SwitchEgressDeparser()) pipe;

Switch(pipe) main;
