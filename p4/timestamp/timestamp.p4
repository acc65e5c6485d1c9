/* -*- P4_16 -*- */
/*
 * Per-hop latency probes for Intel Tofino 1, TNA: the FEC latency and
 * jitter of Sella et al., "FEC Killed the Cut-Through Switch", measured with
 * the switch's own clocks. Probe frames (EtherType TS_ETHERTYPE) carry a
 * 4-byte stamp header and TS_MAX_HOPS 8-byte records; at every pass through
 * the switch (a snake of loopback cables, or a chain of switches) the
 * program fills the record of the current hop:
 *   - ingress: rx_ts, the low 32 bits of the MAC's ingress timestamp
 *     (ig_intr_md.ingress_mac_tstamp: taken when the frame's first bytes
 *     leave the PHY, so after the FEC decoder);
 *   - egress: eg_ts, the low 32 bits of the egress parser's global
 *     timestamp, and the hop counter moves on. The MAC also records the
 *     frame's transmit timestamp in the port's tx timestamp FIFO
 *     (capture_tstamp_on_tx), which the control plane reads.
 * On a snake every hop shares one clock: rx_ts[k+1] - rx_ts[k] is a hop,
 * rx_ts[k+1] - eg_ts[k] the wire and both PHYs, FEC included. Records are
 * preallocated by the sender of the probe, so a frame keeps its size on
 * every hop: a 64 B frame has room for the header and five records.
 * Latest stamps are also kept per port in reg_rx_ts and reg_tx_ts.
 *
 * Forwarding: table snake, keyed by the ingress port, sends a frame to the
 * next port of the snake (action forward) or drops it.
 *
 * Compiled by the SDE: bf-p4c --target tofino --arch tna -o <dir> timestamp.p4
 */
#include <core.p4>
#include <tna.p4>

/* IEEE Std 802 local experimental EtherType 1. */
#define TS_ETHERTYPE 0x88B5
/* Records a probe carries: a 64 B frame holds 14 + 4 + 5 * 8 + 4 (FCS). */
#define TS_MAX_HOPS 5
#define TS_MAX_PORTS 512

typedef bit<32> ts32_t;

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

/* The stamp header: which probe, how many hops stamped so far. */
header ts_h {
    bit<16> seq;
    bit<8>  hops;
    bit<8>  max_hops;
}

/* One hop's record. */
header ts_rec_h {
    ts32_t rx_ts;
    ts32_t eg_ts;
}

struct ts_headers_t {
    ethernet_h  ethernet;
    ts_h        ts;
    ts_rec_h[TS_MAX_HOPS] rec;
}

struct ts_ingress_md_t {
    bit<8> unused;
}

struct ts_egress_md_t {
    bit<8> unused;
}

/* ------------------------------------------------------------------------
 * Ingress
 * ---------------------------------------------------------------------- */

parser SwitchIngressParser(
        packet_in pkt,
        out ts_headers_t hdr,
        out ts_ingress_md_t ig_md,
        out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            TS_ETHERTYPE : parse_ts;
            default : accept;
        }
    }
    state parse_ts {
        pkt.extract(hdr.ts);
        pkt.extract(hdr.rec[0]);
        pkt.extract(hdr.rec[1]);
        pkt.extract(hdr.rec[2]);
        pkt.extract(hdr.rec[3]);
        pkt.extract(hdr.rec[4]);
        transition accept;
    }
}

control SwitchIngress(
        inout ts_headers_t hdr,
        inout ts_ingress_md_t ig_md,
        in ingress_intrinsic_metadata_t ig_intr_md,
        in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
        inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
        inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    Register<ts32_t, PortId_t>(TS_MAX_PORTS, 0) reg_rx_ts;
    RegisterAction<ts32_t, PortId_t, ts32_t>(reg_rx_ts) store_rx_ts = {
        void apply(inout ts32_t v) {
            v = ig_intr_md.ingress_mac_tstamp[31:0];
        }
    };

    action forward(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
    }

    action drop() {
        ig_dprsr_md.drop_ctl = 1;
    }

    table snake {
        key = {
            ig_intr_md.ingress_port : exact;
        }
        actions = {
            forward;
            drop;
        }
        default_action = drop();
        size = TS_MAX_PORTS;
    }

    apply {
        snake.apply();
        if (hdr.ts.isValid() && hdr.ts.hops < hdr.ts.max_hops) {
            store_rx_ts.execute(ig_intr_md.ingress_port);
            if (hdr.ts.hops == 0) {
                hdr.rec[0].rx_ts = ig_intr_md.ingress_mac_tstamp[31:0];
            } else if (hdr.ts.hops == 1) {
                hdr.rec[1].rx_ts = ig_intr_md.ingress_mac_tstamp[31:0];
            } else if (hdr.ts.hops == 2) {
                hdr.rec[2].rx_ts = ig_intr_md.ingress_mac_tstamp[31:0];
            } else if (hdr.ts.hops == 3) {
                hdr.rec[3].rx_ts = ig_intr_md.ingress_mac_tstamp[31:0];
            } else if (hdr.ts.hops == 4) {
                hdr.rec[4].rx_ts = ig_intr_md.ingress_mac_tstamp[31:0];
            }
        }
    }
}

control SwitchIngressDeparser(
        packet_out pkt,
        inout ts_headers_t hdr,
        in ts_ingress_md_t ig_md,
        in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        pkt.emit(hdr);
    }
}

/* ------------------------------------------------------------------------
 * Egress
 * ---------------------------------------------------------------------- */

parser SwitchEgressParser(
        packet_in pkt,
        out ts_headers_t hdr,
        out ts_egress_md_t eg_md,
        out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            TS_ETHERTYPE : parse_ts;
            default : accept;
        }
    }
    state parse_ts {
        pkt.extract(hdr.ts);
        pkt.extract(hdr.rec[0]);
        pkt.extract(hdr.rec[1]);
        pkt.extract(hdr.rec[2]);
        pkt.extract(hdr.rec[3]);
        pkt.extract(hdr.rec[4]);
        transition accept;
    }
}

control SwitchEgress(
        inout ts_headers_t hdr,
        inout ts_egress_md_t eg_md,
        in egress_intrinsic_metadata_t eg_intr_md,
        in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
        inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
        inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    Register<ts32_t, PortId_t>(TS_MAX_PORTS, 0) reg_tx_ts;
    RegisterAction<ts32_t, PortId_t, ts32_t>(reg_tx_ts) store_tx_ts = {
        void apply(inout ts32_t v) {
            v = eg_prsr_md.global_tstamp[31:0];
        }
    };

    apply {
        if (hdr.ts.isValid() && hdr.ts.hops < hdr.ts.max_hops) {
            store_tx_ts.execute(eg_intr_md.egress_port);
            /* The MAC puts the transmit timestamp in the port's FIFO. */
            eg_oport_md.capture_tstamp_on_tx = 1;
            if (hdr.ts.hops == 0) {
                hdr.rec[0].eg_ts = eg_prsr_md.global_tstamp[31:0];
            } else if (hdr.ts.hops == 1) {
                hdr.rec[1].eg_ts = eg_prsr_md.global_tstamp[31:0];
            } else if (hdr.ts.hops == 2) {
                hdr.rec[2].eg_ts = eg_prsr_md.global_tstamp[31:0];
            } else if (hdr.ts.hops == 3) {
                hdr.rec[3].eg_ts = eg_prsr_md.global_tstamp[31:0];
            } else if (hdr.ts.hops == 4) {
                hdr.rec[4].eg_ts = eg_prsr_md.global_tstamp[31:0];
            }
            hdr.ts.hops = hdr.ts.hops + 1;
        }
    }
}

control SwitchEgressDeparser(
        packet_out pkt,
        inout ts_headers_t hdr,
        in ts_egress_md_t eg_md,
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
