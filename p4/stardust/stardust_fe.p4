/* -*- P4_16 -*- */
/*
 * Stardust Fabric Element for Intel Tofino 1, TNA: the nearest thing a
 * Tofino can do to the FE of Zilberman et al., "Stardust: Divide and
 * Conquer in the Data Center Network" (NSDI'19). README.md says, mechanism
 * by mechanism, what is the paper's and what is approximated.
 *
 * Cells (frames with the cell header; the FE never parses past it):
 *   data and credit cells are sprayed towards their destination FA:
 *   reg_spray gives the next slot of the destination's round robin and
 *   spray (destination FA, slot) the port; the control plane writes a
 *   random permutation of the links that reach the FA there, replaces it
 *   every few rounds, and leaves out links whose age reached th.
 *   At egress, a data cell leaving a queue at or above reg_fci_th (in the
 *   traffic manager's 80 B buffer cells) carries FCI on to its FA.
 *   reachability cells: the port is alive (reg_reach_age back to 0).
 * Packet generator frames: reachability cells out of every port
 * (reach_port) and the aging tick, as in the FA.
 *
 * Compiled by the SDE: bf-p4c --target tofino --arch tna -o <dir> stardust_fe.p4
 */
#include <core.p4>
#include <tna.p4>
#include "common/headers.p4"

parser SwitchIngressParser(
        packet_in pkt,
        out sd_headers_t hdr,
        out sd_ingress_md_t ig_md,
        out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        ig_md.me = 0;
        ig_md.voq = 0;
        ig_md.slot = 0;
        ig_md.ok = 0;
        transition select(ig_intr_md.ingress_port) {
            SD_INTERNAL_PORT : parse_pktgen;
            default : parse_ethernet;
        }
    }
    state parse_pktgen {
        pkt.extract(hdr.pktgen_timer);
        pkt.extract(hdr.remaining_ethernet);
        transition select(hdr.remaining_ethernet.ether_type) {
            SD_ETHERTYPE : parse_sd;
            default : accept;
        }
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            SD_ETHERTYPE : parse_sd;
            default : accept;
        }
    }
    state parse_sd {
        pkt.extract(hdr.sd);
        transition accept;
    }
}

control SwitchIngress(
        inout sd_headers_t hdr,
        inout sd_ingress_md_t ig_md,
        in ingress_intrinsic_metadata_t ig_intr_md,
        in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
        inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
        inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    Register<bit<16>, fa_id_t>(SD_MAX_FAS, 0) reg_spray;
    RegisterAction<bit<16>, fa_id_t, bit<16>>(reg_spray) next_slot = {
        void apply(inout bit<16> v, out bit<16> rv) {
            rv = v;
            if (v == SD_MAX_LINKS - 1) {
                v = 0;
            } else {
                v = v + 1;
            }
        }
    };

    Register<bit<8>, PortId_t>(SD_MAX_PORTS, SD_AGE_MAX) reg_reach_age;
    RegisterAction<bit<8>, PortId_t, bit<8>>(reg_reach_age) seen = {
        void apply(inout bit<8> v, out bit<8> rv) {
            v = 0;
            rv = 0;
        }
    };
    RegisterAction<bit<8>, PortId_t, bit<8>>(reg_reach_age) age = {
        void apply(inout bit<8> v, out bit<8> rv) {
            if (v < SD_AGE_MAX) {
                v = v + 1;
            }
            rv = v;
        }
    };

    action drop() {
        ig_dprsr_md.drop_ctl = 1;
    }

    action set_id(fa_id_t id) {
        ig_md.me = id;
    }

    table whoami {
        actions = {
            set_id;
        }
        default_action = set_id(0);
        size = 1;
    }

    action to_link(PortId_t link) {
        ig_tm_md.ucast_egress_port = link;
    }

    table spray {
        key = {
            hdr.sd.dst_fa : exact @name("dst_fa");
            ig_md.slot    : exact @name("slot");
        }
        actions = {
            to_link;
            drop;
        }
        default_action = drop();
        size = 16384;
    }

    action reach_on(PortId_t link) {
        ig_tm_md.ucast_egress_port = link;
    }

    table reach_port {
        key = {
            hdr.pktgen_timer.packet_id : exact @name("packet_id");
        }
        actions = {
            reach_on;
            drop;
        }
        default_action = drop();
        size = SD_MAX_PORTS;
    }

    action pktgen_to_ethernet() {
        hdr.ethernet.setValid();
        hdr.ethernet.dst_addr = 0xffffffffffff;
        hdr.ethernet.src_addr = hdr.remaining_ethernet.src_addr;
        hdr.ethernet.ether_type = SD_ETHERTYPE;
        hdr.pktgen_timer.setInvalid();
        hdr.remaining_ethernet.setInvalid();
    }

    apply {
        whoami.apply();
        if (hdr.pktgen_timer.isValid()) {
            hdr.sd.src_fa = ig_md.me;
            if (hdr.sd.kind == SD_KIND_REACH) {
                reach_port.apply();
                pktgen_to_ethernet();
            } else {
                age.execute(hdr.pktgen_timer.packet_id[8:0]);
                drop();
            }
        } else if (hdr.sd.isValid() && hdr.sd.kind == SD_KIND_REACH) {
            seen.execute(ig_intr_md.ingress_port);
            drop();
        } else if (hdr.sd.isValid()) {
            ig_md.slot = next_slot.execute(hdr.sd.dst_fa);
            spray.apply();
        } else {
            drop();
        }
    }
}

control SwitchIngressDeparser(
        packet_out pkt,
        inout sd_headers_t hdr,
        in sd_ingress_md_t ig_md,
        in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        pkt.emit(hdr);
    }
}

parser SwitchEgressParser(
        packet_in pkt,
        out sd_headers_t hdr,
        out sd_egress_md_t eg_md,
        out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        eg_md.fci_th = 0;
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            SD_ETHERTYPE : parse_sd;
            default : accept;
        }
    }
    state parse_sd {
        pkt.extract(hdr.sd);
        transition accept;
    }
}

control SwitchEgress(
        inout sd_headers_t hdr,
        inout sd_egress_md_t eg_md,
        in egress_intrinsic_metadata_t eg_intr_md,
        in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
        inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
        inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    /* One threshold for every queue, set by the control plane. */
    Register<bit<32>, bit<1>>(1, 0) reg_fci_th;
    RegisterAction<bit<32>, bit<1>, bit<32>>(reg_fci_th) read_fci_th = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
        }
    };

    /* What a data cell found ahead of it in its queue, in buckets of
     * 1 << SD_QHIST_SHIFT buffer cells; the last bucket saturates. */
    Register<bit<32>, bit<16>>(SD_HIST_BUCKETS, 0) reg_qdepth_hist;
    RegisterAction<bit<32>, bit<16>, bit<8>>(reg_qdepth_hist) count_depth = {
        void apply(inout bit<32> v, out bit<8> rv) {
            v = v + 1;
            rv = 0;
        }
    };

    apply {
        bit<16> bucket = 0;
        if (hdr.sd.isValid() && hdr.sd.kind == SD_KIND_DATA) {
            bucket = (bit<16>)(eg_intr_md.enq_qdepth >> SD_QHIST_SHIFT);
            if (eg_intr_md.enq_qdepth >= (SD_HIST_BUCKETS << SD_QHIST_SHIFT)) {
                bucket = SD_HIST_BUCKETS - 1;
            }
            count_depth.execute(bucket);
            eg_md.fci_th = read_fci_th.execute(0);
            if (eg_md.fci_th != 0 && (bit<32>)eg_intr_md.enq_qdepth >= eg_md.fci_th) {
                hdr.sd.flags = hdr.sd.flags | SD_FLAG_FCI;
            }
        }
    }
}

control SwitchEgressDeparser(
        packet_out pkt,
        inout sd_headers_t hdr,
        in sd_egress_md_t eg_md,
        in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply {
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
