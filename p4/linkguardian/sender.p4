/* -*- P4_16 -*- */
/*
 * LinkGuardian sender (Kannan et al., SIGCOMM'23, §3 and Appendix A) for
 * Intel Tofino 1, TNA. It runs on the switch that transmits into the
 * corrupting link.
 *
 * Egress of a protected port (table link_protect):
 *   - each IPv4/IPv6 packet gets the 3-byte LinkGuardian header: the next
 *     sequence number of the port (reg_seq_no) and its era (reg_era, which
 *     toggles after seqNo 0xffff);
 *   - a copy is mirrored into the Tx buffer: queue LG_QID_TX_BUFFER of the
 *     recirculation port, where it circulates until the receiver's
 *     cumulative ACK covers it or a loss notification asks for it;
 *   - the dummy packet, alone in the port's lowest-priority queue, leaves
 *     whenever the normal queue is empty, carrying the next sequence number
 *     so that the receiver sees a lost tail at once (§3.2). Each time it is
 *     dequeued it mirrors itself back into that queue (self-replenishing);
 *     it goes on the wire at most dummy_pkt_max_count times after each
 *     protected packet and is dropped otherwise.
 * Ingress:
 *   - ACKs (explicit or piggybacked on reverse traffic) and loss
 *     notifications from the receiver update the leading ACK of the port
 *     (reg_leading_ack); a notification also sets the 1-bit reTxReqs
 *     registers of the lost sequence numbers (up to LG_MAX_HOLE_TRACK in a
 *     row, one register per position, §3.5);
 *   - a Tx-buffer copy back from the recirculation port is retransmitted if
 *     its reTxReqs bit is set: multicast group N (table
 *     retx_mcast_buffered_pkt, action set_retx_copies) makes N copies in the
 *     port's high-priority queue (§3.4); dropped if the leading ACK is past
 *     it (Algorithm 1's de-duplication, on the sender side); otherwise sent
 *     round again;
 *   - loss emulation for experiments (table emulate_random_pkt_drop).
 * PFC: the receiver pauses and resumes only the normal queue of the
 * protected port (§3.3). The frames are absorbed by the sender's MAC; the
 * traffic manager maps LG_QID_NORMAL, and neither the retransmission nor
 * the dummy queue, to the paused priority class. Frames the MAC passes up
 * are dropped here.
 *
 * The reTxReqs registers are indexed by sequence number alone (64 Ki bits
 * each): protect at most one link per pipe.
 *
 * Compiled by the SDE: bf-p4c --target tofino --arch tna -o <dir> sender.p4
 */
#include <core.p4>
#include <tna.p4>

#include "common/headers.p4"

/* ------------------------------------------------------------------------
 * Headers and metadata
 * ---------------------------------------------------------------------- */

struct sender_headers_t {
    lg_bridge_h           bridge;
    lg_mirror_h           mirror_in;
    lg_buffer_tag_h       buffer_tag;
    pktgen_timer_header_t pktgen_timer;
    remaining_ethernet_h  remaining_ethernet;
    ethernet_h            ethernet;
    lg_h                  lg;
    lg_loss_h             lg_loss;
}

struct sender_ig_metadata_t {
    lg_idx_t  idx;
    PortId_t  egress_port;     // Tx-buffer copy: the protected port it belongs to
    lg_rand_t rand_num;
    bit<1>    emulated_loss;
    bit<1>    subject_to_loss;
    bit<1>    use_l2;
    bit<1>    to_egress;
    // Tx-buffer copies
    bit<32>   lack17;          // leading ACK of the port: valid, era, seqNo
    bit<1>    lack_valid;
    seq_no_t  lack_seq;
    bit<1>    lack_era;
    seq_no_t  buf_seq;
    seq_no_t  min_seq;
    bit<1>    retx_req_1;
    bit<1>    retx_req_2;
    bit<1>    retx_req_3;
    bit<1>    retx_req_4;
    bit<1>    retx_req_5;
    bit<1>    retx;
    // loss notifications
    seq_no_t  hole_2;
    seq_no_t  hole_3;
    seq_no_t  hole_4;
    seq_no_t  hole_5;
}

struct sender_eg_metadata_t {
    lg_idx_t    idx;
    bit<1>      is_ip;
    bit<1>      inner_ipv6;
    bit<1>      is_dummy;
    bit<1>      is_protected;
    bit<1>      dummy_send;
    bit<16>     dummy_max;
    MirrorId_t  mirror_session;
    lg_mirror_h mirror_out;
}

/* ------------------------------------------------------------------------
 * Ingress parser
 * ---------------------------------------------------------------------- */

parser SwitchIngressParser(
        packet_in pkt,
        out sender_headers_t hdr,
        out sender_ig_metadata_t ig_md,
        out ingress_intrinsic_metadata_t ig_intr_md) {

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        ig_md.emulated_loss = 0;
        ig_md.subject_to_loss = 0;
        ig_md.use_l2 = 0;
        ig_md.to_egress = 1;
        ig_md.retx = 0;
        transition select(ig_intr_md.ingress_port) {
            LG_INTERNAL_LOCAL_PORT &&& LG_LOCAL_PORT_MASK : parse_internal;
            default : parse_ethernet;
        }
    }

    // Local port 68: a Tx-buffer copy coming round, or a packet generator
    // frame (whose first three bits are zero).
    state parse_internal {
        transition select(pkt.lookahead<bit<8>>()) {
            LG_TAG_TX_BUFFERED : parse_buffer_tag;
            default : parse_pktgen;
        }
    }

    state parse_buffer_tag {
        pkt.extract(hdr.buffer_tag);
        transition parse_ethernet;
    }

    state parse_pktgen {
        pkt.extract(hdr.pktgen_timer);
        pkt.extract(hdr.remaining_ethernet);
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
        transition select(hdr.lg.pkt_type) {
            LG_TYPE_LOSS_NOTIFICATION : parse_lg_loss;
            default : accept;
        }
    }

    state parse_lg_loss {
        pkt.extract(hdr.lg_loss);
        transition accept;
    }
}

/* ------------------------------------------------------------------------
 * Ingress
 * ---------------------------------------------------------------------- */

control SwitchIngress(
        inout sender_headers_t hdr,
        inout sender_ig_metadata_t ig_md,
        in ingress_intrinsic_metadata_t ig_intr_md,
        in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
        inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
        inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    action discard() {
        ig_dprsr_md.drop_ctl = 1;
    }

    /* ---- forwarding of regular traffic ---- */

    action forward(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
        ig_tm_md.qid = LG_QID_NORMAL;
    }

    // Also how the control plane's injected dummy reaches the lowest-
    // priority queue of its protected port.
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

    // Packet generator frames (stress traffic, §4.1): the generator wrote
    // its header over the destination MAC; the source MAC names the egress
    // port in its two low bytes.
    action pktgen_to_ethernet() {
        ig_tm_md.ucast_egress_port = hdr.remaining_ethernet.src_addr[8:0];
        ig_tm_md.qid = LG_QID_NORMAL;
        hdr.ethernet.setValid();
        hdr.ethernet.dst_addr = 0xffffffffffff;
        hdr.ethernet.src_addr = hdr.remaining_ethernet.src_addr;
        hdr.ethernet.ether_type = ETHERTYPE_IPV4;
        hdr.pktgen_timer.setInvalid();
        hdr.remaining_ethernet.setInvalid();
    }

    /* ---- loss emulation ---- */

    Random<lg_rand_t>() rng;

    action draw_random() {
        ig_md.rand_num = rng.get();
    }

    // Every packet the emulated drop takes, counted at the switch as the
    // artifact counted its losses (index 0; the control plane reads it).
    Register<bit<32>, bit<1>>(1, 0) emulated_drops;

    RegisterAction<bit<32>, bit<1>, bit<32>>(emulated_drops) count_emulated_drop = {
        void apply(inout bit<32> v) {
            v = v + 1;
        }
    };

    // The packet is lost on the link: a retransmission here, an original in
    // egress once it has its sequence number and its Tx-buffer copy.
    action drop() {
        ig_md.emulated_loss = 1;
        count_emulated_drop.execute(0);
    }

    action no_loss() {
    }

    table emulate_random_pkt_drop {
        key = {
            ig_md.rand_num : exact;
        }
        actions = {
            drop;
            @defaultonly no_loss;
        }
        const default_action = no_loss();
        size = LG_DROP_TABLE_SIZE;
    }

    /* ---- the leading ACK of each protected port ---- */

    Register<bit<32>, lg_idx_t>(LG_MAX_PORTS, 0) reg_leading_ack;

    RegisterAction<bit<32>, lg_idx_t, bit<32>>(reg_leading_ack) store_leading_ack = {
        void apply(inout bit<32> v) {
            v = ig_md.lack17;
        }
    };

    RegisterAction<bit<32>, lg_idx_t, bit<32>>(reg_leading_ack) load_leading_ack = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
        }
    };

    /* ---- reTxReqs: one 1-bit register per position in a hole ---- */

    Register<bit<1>, seq_no_t>(LG_SEQ_RANGE, 0) reg_retx_req_1;
    Register<bit<1>, seq_no_t>(LG_SEQ_RANGE, 0) reg_retx_req_2;
    Register<bit<1>, seq_no_t>(LG_SEQ_RANGE, 0) reg_retx_req_3;
    Register<bit<1>, seq_no_t>(LG_SEQ_RANGE, 0) reg_retx_req_4;
    Register<bit<1>, seq_no_t>(LG_SEQ_RANGE, 0) reg_retx_req_5;

    RegisterAction<bit<1>, seq_no_t, bit<1>>(reg_retx_req_1) request_retx_1 = {
        void apply(inout bit<1> v) { v = 1; }
    };
    RegisterAction<bit<1>, seq_no_t, bit<1>>(reg_retx_req_2) request_retx_2 = {
        void apply(inout bit<1> v) { v = 1; }
    };
    RegisterAction<bit<1>, seq_no_t, bit<1>>(reg_retx_req_3) request_retx_3 = {
        void apply(inout bit<1> v) { v = 1; }
    };
    RegisterAction<bit<1>, seq_no_t, bit<1>>(reg_retx_req_4) request_retx_4 = {
        void apply(inout bit<1> v) { v = 1; }
    };
    RegisterAction<bit<1>, seq_no_t, bit<1>>(reg_retx_req_5) request_retx_5 = {
        void apply(inout bit<1> v) { v = 1; }
    };

    // Read and clear: a request is served once.
    RegisterAction<bit<1>, seq_no_t, bit<1>>(reg_retx_req_1) take_retx_req_1 = {
        void apply(inout bit<1> v, out bit<1> rv) { rv = v; v = 0; }
    };
    RegisterAction<bit<1>, seq_no_t, bit<1>>(reg_retx_req_2) take_retx_req_2 = {
        void apply(inout bit<1> v, out bit<1> rv) { rv = v; v = 0; }
    };
    RegisterAction<bit<1>, seq_no_t, bit<1>>(reg_retx_req_3) take_retx_req_3 = {
        void apply(inout bit<1> v, out bit<1> rv) { rv = v; v = 0; }
    };
    RegisterAction<bit<1>, seq_no_t, bit<1>>(reg_retx_req_4) take_retx_req_4 = {
        void apply(inout bit<1> v, out bit<1> rv) { rv = v; v = 0; }
    };
    RegisterAction<bit<1>, seq_no_t, bit<1>>(reg_retx_req_5) take_retx_req_5 = {
        void apply(inout bit<1> v, out bit<1> rv) { rv = v; v = 0; }
    };

    /* ---- ACKs and loss notifications from the receiver ---- */

    action from_link() {
        ig_md.idx = ig_intr_md.ingress_port[6:0];
        ig_md.lack17 = LG_SEQ17_VALID | (bit<32>)(hdr.lg.era ++ hdr.lg.seq_no);
    }

    action prepare_holes() {
        ig_md.hole_2 = hdr.lg_loss.first_lost + 1;
        ig_md.hole_3 = hdr.lg_loss.first_lost + 2;
        ig_md.hole_4 = hdr.lg_loss.first_lost + 3;
        ig_md.hole_5 = hdr.lg_loss.first_lost + 4;
    }

    action decap_ipv4() {
        hdr.lg.setInvalid();
        hdr.ethernet.ether_type = ETHERTYPE_IPV4;
    }

    action decap_ipv6() {
        hdr.lg.setInvalid();
        hdr.ethernet.ether_type = ETHERTYPE_IPV6;
    }

    /* ---- Tx-buffer copies ---- */

    action from_tx_buffer() {
        ig_md.idx = hdr.buffer_tag.port[6:0];
        ig_md.egress_port = hdr.buffer_tag.port;
        ig_md.buf_seq = hdr.lg.seq_no;
        ig_md.subject_to_loss = 0;
        ig_md.to_egress = 0;
    }

    action split_leading_ack() {
        ig_md.lack_valid = ig_md.lack17[17:17];
        ig_md.lack_seq = ig_md.lack17[15:0];
        ig_md.lack_era = ig_md.lack17[16:16];
        ig_md.retx = ig_md.retx_req_1 | ig_md.retx_req_2 | ig_md.retx_req_3
                   | ig_md.retx_req_4 | ig_md.retx_req_5;
    }

    // Era correction (§3.5): two sequence numbers of different eras are
    // compared after subtracting N/2 from both.
    action era_correct() {
        ig_md.buf_seq = ig_md.buf_seq - LG_SEQ_HALF_RANGE;
        ig_md.lack_seq = ig_md.lack_seq - LG_SEQ_HALF_RANGE;
    }

    action compare_with_leading_ack() {
        ig_md.min_seq = min(ig_md.buf_seq, ig_md.lack_seq);
    }

    // Another trip round the recirculation port, egress bypassed so that
    // the copy keeps its tag.
    action keep_buffered() {
        ig_tm_md.ucast_egress_port = LG_RECIRC_DEV_PORT;
        ig_tm_md.qid = LG_QID_TX_BUFFER;
        ig_tm_md.bypass_egress = 1;
    }

    // N copies to the port's high-priority queue: multicast group N holds
    // N replicas of the port (created by the deploy step).
    action set_retx_copies(bit<8> num_copies) {
        ig_tm_md.mcast_grp_a = (MulticastGroupId_t)num_copies;
        ig_tm_md.qid = LG_QID_CTRL;
        ig_tm_md.bypass_egress = 1;
        hdr.buffer_tag.setInvalid();
        hdr.lg.pkt_type = LG_TYPE_RETRANSMITTED;
        ig_md.subject_to_loss = 1;
    }

    // No entry for the port: one copy.
    action retx_one_copy() {
        ig_tm_md.ucast_egress_port = ig_md.egress_port;
        ig_tm_md.qid = LG_QID_CTRL;
        ig_tm_md.bypass_egress = 1;
        hdr.buffer_tag.setInvalid();
        hdr.lg.pkt_type = LG_TYPE_RETRANSMITTED;
        ig_md.subject_to_loss = 1;
    }

    table retx_mcast_buffered_pkt {
        key = {
            ig_md.egress_port : exact;
        }
        actions = {
            set_retx_copies;
            @defaultonly retx_one_copy;
        }
        const default_action = retx_one_copy();
        size = 128;
    }

    action add_bridge() {
        hdr.bridge.setValid();
        hdr.bridge.kind = LG_KIND_BRIDGE;
        hdr.bridge._pad = 0;
        hdr.bridge.emulated_loss = ig_md.emulated_loss;
        hdr.bridge.is_timer = 0;
        hdr.bridge.has_tag = 0;
    }

    apply {
        draw_random();

        if (hdr.buffer_tag.isValid()) {
            // A copy in the Tx buffer, back from the recirculation port.
            from_tx_buffer();
            ig_md.lack17 = load_leading_ack.execute(ig_md.idx);
            ig_md.retx_req_1 = take_retx_req_1.execute(ig_md.buf_seq);
            ig_md.retx_req_2 = take_retx_req_2.execute(ig_md.buf_seq);
            ig_md.retx_req_3 = take_retx_req_3.execute(ig_md.buf_seq);
            ig_md.retx_req_4 = take_retx_req_4.execute(ig_md.buf_seq);
            ig_md.retx_req_5 = take_retx_req_5.execute(ig_md.buf_seq);
            split_leading_ack();
            if (ig_md.retx == 1) {
                retx_mcast_buffered_pkt.apply();
            } else {
                if (ig_md.lack_era != hdr.lg.era) {
                    era_correct();
                }
                compare_with_leading_ack();
                if (ig_md.lack_valid == 0) {
                    keep_buffered();       // no ACK from this link yet
                } else if (ig_md.min_seq == ig_md.buf_seq && ig_md.buf_seq != ig_md.lack_seq) {
                    discard();             // delivered: the ACK is past it
                } else {
                    keep_buffered();
                }
            }
        } else {
            if (hdr.lg.isValid() && (hdr.lg.pkt_type == LG_TYPE_ACK
                                     || hdr.lg.pkt_type == LG_TYPE_LOSS_NOTIFICATION)) {
                // Leading ACK, and for a loss notification the hole (§3, A.1).
                from_link();
                store_leading_ack.execute(ig_md.idx);
                if (hdr.lg_loss.isValid()) {
                    prepare_holes();
                    request_retx_1.execute(hdr.lg_loss.first_lost);
                    if (hdr.lg_loss.hole_size >= 2) {
                        request_retx_2.execute(ig_md.hole_2);
                    }
                    if (hdr.lg_loss.hole_size >= 3) {
                        request_retx_3.execute(ig_md.hole_3);
                    }
                    if (hdr.lg_loss.hole_size >= 4) {
                        request_retx_4.execute(ig_md.hole_4);
                    }
                    if (hdr.lg_loss.hole_size >= 5) {
                        request_retx_5.execute(ig_md.hole_5);
                    }
                }
                if (hdr.lg.piggybacked == 1) {
                    if (hdr.lg.inner_ipv6 == 1) {
                        decap_ipv6();
                    } else {
                        decap_ipv4();
                    }
                    ig_md.use_l2 = 1;
                } else {
                    discard();             // explicit ACK or notification
                }
            } else if (hdr.pktgen_timer.isValid()) {
                pktgen_to_ethernet();
                ig_md.subject_to_loss = 1;
            } else if (hdr.ethernet.isValid()
                       && hdr.ethernet.ether_type == ETHERTYPE_MAC_CONTROL) {
                discard();                 // PFC the MAC did not absorb
            } else {
                ig_md.use_l2 = 1;
                if (!hdr.lg.isValid()) {
                    ig_md.subject_to_loss = 1;
                }
            }
            if (ig_md.use_l2 == 1) {
                l2_forward.apply();
            }
        }

        if (ig_md.subject_to_loss == 1) {
            emulate_random_pkt_drop.apply();
        }
        if (ig_md.to_egress == 1) {
            add_bridge();
        } else if (ig_md.emulated_loss == 1) {
            discard();                     // a retransmission lost on the link
        }
    }
}

control SwitchIngressDeparser(
        packet_out pkt,
        inout sender_headers_t hdr,
        in sender_ig_metadata_t ig_md,
        in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {

    apply {
        pkt.emit(hdr);
    }
}

/* ------------------------------------------------------------------------
 * Egress parser
 * ---------------------------------------------------------------------- */

parser SwitchEgressParser(
        packet_in pkt,
        out sender_headers_t hdr,
        out sender_eg_metadata_t eg_md,
        out egress_intrinsic_metadata_t eg_intr_md) {

    state start {
        pkt.extract(eg_intr_md);
        eg_md.is_ip = 0;
        eg_md.inner_ipv6 = 0;
        eg_md.is_dummy = 0;
        eg_md.is_protected = 0;
        eg_md.dummy_send = 0;
        transition select(pkt.lookahead<bit<8>>()) {
            LG_KIND_BRIDGE : parse_bridge;
            LG_KIND_MIRROR_TXBUF : parse_mirror;
            LG_KIND_MIRROR_DUMMY : parse_mirror;
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
}

/* ------------------------------------------------------------------------
 * Egress
 * ---------------------------------------------------------------------- */

control SwitchEgress(
        inout sender_headers_t hdr,
        inout sender_eg_metadata_t eg_md,
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

    /* ---- sequence numbers and era, per protected port ---- */

    Register<seq_no_t, lg_idx_t>(LG_MAX_PORTS, 0) reg_seq_no;

    RegisterAction<seq_no_t, lg_idx_t, seq_no_t>(reg_seq_no) take_seq_no = {
        void apply(inout seq_no_t v, out seq_no_t rv) {
            rv = v;
            v = v + 1;
        }
    };

    RegisterAction<seq_no_t, lg_idx_t, seq_no_t>(reg_seq_no) peek_seq_no = {
        void apply(inout seq_no_t v, out seq_no_t rv) {
            rv = v;
        }
    };

    // 0 or 1. The era of seqNo 0xffff is the old one; the next packet's,
    // and a dummy's announcing it, the new one.
    Register<bit<8>, lg_idx_t>(LG_MAX_PORTS, 0) reg_era;

    RegisterAction<bit<8>, lg_idx_t, bit<8>>(reg_era) read_era = {
        void apply(inout bit<8> v, out bit<8> rv) {
            rv = v;
        }
    };

    RegisterAction<bit<8>, lg_idx_t, bit<8>>(reg_era) read_toggle_era = {
        void apply(inout bit<8> v, out bit<8> rv) {
            rv = v;
            v = v ^ 1;
        }
    };

    /* ---- dummy packets (§3.2) ---- */

    // How many more times the dummy may go on the wire: refilled by every
    // protected packet, spent by the dummy.
    Register<bit<16>, lg_idx_t>(LG_MAX_PORTS, 0) reg_dummy_pkt_budget;

    RegisterAction<bit<16>, lg_idx_t, bit<16>>(reg_dummy_pkt_budget) refill_dummy_budget = {
        void apply(inout bit<16> v) {
            v = eg_md.dummy_max;
        }
    };

    RegisterAction<bit<16>, lg_idx_t, bit<1>>(reg_dummy_pkt_budget) spend_dummy_budget = {
        void apply(inout bit<16> v, out bit<1> rv) {
            if (v == 0) {
                rv = 0;
            } else {
                v = v - 1;
                rv = 1;
            }
        }
    };

    action fill_dummy() {
        hdr.lg.seq_no = peek_seq_no.execute(eg_md.idx);
        hdr.lg.pkt_type = LG_TYPE_DUMMY;
    }

    // Self-replenishing: a copy back into the port's lowest-priority queue.
    action replenish_dummy() {
        eg_dprsr_md.mirror_type = LG_MIRROR_TYPE;
        eg_md.mirror_session = LG_SESSION_LOWPRIO | (MirrorId_t)eg_md.idx;
        eg_md.mirror_out.setValid();
        eg_md.mirror_out.kind = LG_KIND_MIRROR_DUMMY;
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

    /* ---- protection ---- */

    // blocking_mode: 1 LinkGuardian (ordered), 0 LinkGuardianNB.
    action protect(bit<16> dummy_pkt_max_count, bit<1> blocking_mode) {
        hdr.lg.setValid();
        hdr.lg.seq_no = take_seq_no.execute(eg_md.idx);
        hdr.lg.era = 0;
        hdr.lg.pkt_type = LG_TYPE_ORIGINAL;
        hdr.lg.blocking_mode = blocking_mode;
        hdr.lg.rx_buffered = 0;
        hdr.lg.piggybacked = 0;
        hdr.lg.inner_ipv6 = eg_md.inner_ipv6;
        hdr.ethernet.ether_type = ETHERTYPE_LG;
        eg_md.dummy_max = dummy_pkt_max_count;
        eg_md.is_protected = 1;
    }

    action unprotected() {
    }

    table link_protect {
        key = {
            eg_intr_md.egress_port : exact;
        }
        actions = {
            protect;
            @defaultonly unprotected;
        }
        const default_action = unprotected();
        size = 128;
    }

    // The copy for the Tx buffer (§3): mirrored to the recirculation port.
    action buffer_copy() {
        eg_dprsr_md.mirror_type = LG_MIRROR_TYPE;
        eg_md.mirror_session = LG_SESSION_TX_BUFFER | (MirrorId_t)eg_md.idx;
        eg_md.mirror_out.setValid();
        eg_md.mirror_out.kind = LG_KIND_MIRROR_TXBUF;
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

    // The mirrored copy, in egress of the recirculation port: tagged with
    // its protected port, it goes round into the ingress.
    action tag_for_tx_buffer() {
        hdr.buffer_tag.setValid();
        hdr.buffer_tag.tag = LG_TAG_TX_BUFFERED;
        hdr.buffer_tag._pad = 0;
        hdr.buffer_tag.port = hdr.mirror_in.port;
    }

    apply {
        set_idx();

        if (hdr.mirror_in.isValid()) {
            if (hdr.mirror_in.kind == LG_KIND_MIRROR_TXBUF) {
                tag_for_tx_buffer();
            } else {
                eg_md.is_dummy = 1;        // the replenished dummy
            }
            hdr.mirror_in.setInvalid();
        } else if (hdr.lg.isValid()) {
            if (hdr.lg.pkt_type == LG_TYPE_DUMMY) {
                eg_md.is_dummy = 1;        // the dummy the control plane injected
            }
        } else if (eg_md.is_ip == 1) {
            link_protect.apply();
        }

        if (eg_md.is_dummy == 1) {
            fill_dummy();
        }
        if (eg_md.is_protected == 1 && hdr.lg.seq_no == LG_SEQ_MAX) {
            hdr.lg.era = (bit<1>)read_toggle_era.execute(eg_md.idx);
        } else if (eg_md.is_protected == 1 || eg_md.is_dummy == 1) {
            hdr.lg.era = (bit<1>)read_era.execute(eg_md.idx);
        }

        if (eg_md.is_dummy == 1) {
            eg_md.dummy_send = spend_dummy_budget.execute(eg_md.idx);
            replenish_dummy();
            if (eg_md.dummy_send == 0) {
                discard();                 // back in the queue, not on the wire
            }
        } else if (eg_md.is_protected == 1) {
            refill_dummy_budget.execute(eg_md.idx);
            buffer_copy();
        }

        // Emulated loss: the packet is numbered and buffered, then lost.
        if (hdr.bridge.isValid()) {
            if (hdr.bridge.emulated_loss == 1) {
                discard();
            }
            hdr.bridge.setInvalid();
        }
    }
}

control SwitchEgressDeparser(
        packet_out pkt,
        inout sender_headers_t hdr,
        in sender_eg_metadata_t eg_md,
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
