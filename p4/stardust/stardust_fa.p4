/* -*- P4_16 -*- */
/*
 * Stardust Fabric Adapter for Intel Tofino 1, TNA: the nearest thing a
 * Tofino can do to the FA of Zilberman et al., "Stardust: Divide and
 * Conquer in the Data Center Network" (NSDI'19). README.md says, mechanism
 * by mechanism, what is the paper's and what is approximated.
 *
 * Frames from the hosts (bounded in size by the lab: a frame is a cell):
 *   voq_map (destination MAC) names the VOQ: destination FA, destination
 *   port, traffic class. A frame leaves for the fabric only if its VOQ has
 *   a credit (reg_credit, in frames); it then gets the cell header, the
 *   next sequence number towards its destination FA (reg_seq_out), and is
 *   sprayed: reg_spray gives the next slot of the destination's round
 *   robin and spray (destination FA, slot) the fabric port; the control
 *   plane writes a random permutation of the reachable links there and
 *   replaces it every few rounds. A frame without a credit waits: it goes
 *   round the recirculation port in its traffic class's queue and tries
 *   again. At egress, a data cell finding its fabric port's queue at or
 *   above reg_fci_th is marked FCI, as at an FE.
 * Cells from the fabric:
 *   data: released to the host port (host_port) in sequence order per
 *     source FA (reg_seq_in); a frame ahead of its turn recirculates. A
 *     frame carrying FCI counts against its port's credits (reg_fci); the
 *     latency histogram and reg_fci count a frame on its arrival from the
 *     fabric only, not on its passes round the recirculation port.
 *     Reassembly timer (§4.1: the egress FA drops a packet whose
 *     reassembly timer expires), per frame: a frame's age is now minus
 *     its cell header's tstamp, its source FA's global timestamp when it
 *     left for the fabric (the FAs' timestamps are synced, as for the
 *     latency histogram). An early frame whose age has reached
 *     reg_reasm_timeout (ns; 0: never), on its arrival or on any pass
 *     round the recirculation port, takes its turn at once: reg_seq_in
 *     moves to just past it and every sequence number before it still
 *     missing is given up, counted in reg_reasm_drops. A source FA numbers
 *     its frames in the order it timestamps them, so a missing number was
 *     sent no later than the expired frame: it has been in flight at
 *     least the timeout too, and a burst of losses is given up in one
 *     timeout, not one timeout per gap. A frame that arrives from the
 *     fabric behind reg_seq_in (its number was given up) is dropped; one
 *     that was already waiting when its number was given up is released
 *     when it comes round, out of order, and gives its number back.
 *   credit: adds its frames to the VOQ it names (reg_credit).
 *   reachability: the fabric port is alive (reg_reach_age back to 0).
 * Packet generator frames (the cell header preset in its buffer):
 *   credit: one per host port per period (credit_port), addressed round
 *     robin over the source VOQs the control plane lists (reg_credit_rr,
 *     credit_to); a port's pending FCI count, once it holds a credit's
 *     worth of marked frames, cancels the credit and spends them.
 *   reachability: one per fabric port per period (reach_port).
 *   aging tick: packet id i ages port i's reachability (the control
 *     plane takes a port whose age reaches th out of spray).
 *
 * Compiled by the SDE: bf-p4c --target tofino --arch tna -o <dir> stardust_fa.p4
 */
#include <core.p4>
#include <tna.p4>
#include "common/headers.p4"

/* VOQs: destination ports x traffic classes the control plane numbers. */
#define SD_MAX_VOQS 4096
/* A VOQ banks at most this many frames of credit (two 4 KB credits of 256 B frames). */
#define SD_CREDIT_CAP 32
/* Where a frame without a credit waits: pipe 1's internal port, or a
 * front-panel port in loopback on chassis without it. */
#define SD_RECIRC_PORT 196
/* The recirculation port's queue early frames wait their turn in (the
 * paper's egress reassembly memory), apart from the frames waiting for
 * credit in their traffic classes' queues: a backlog of frames without
 * credit never crowds reassembly out. */
#define SD_REASM_QID 7

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
        ig_md.reasm_to = 0;
        ig_md.reasm_over = 0;
        ig_md.expired = 0;
        ig_md.seq_in = 0;
        ig_md.skipped = 0;
        transition select(ig_intr_md.ingress_port) {
            SD_INTERNAL_PORT : parse_internal;
            default : parse_ethernet;
        }
    }
    /* Port 68 is the packet generator's; waiting frames go round
     * SD_RECIRC_PORT instead, so they never look like generator frames. */
    state parse_internal {
        transition parse_pktgen;
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

    /* ---- credits, per VOQ, in frames ---- */
    Register<credit_t, bit<16>>(SD_MAX_VOQS, 0) reg_credit;
    RegisterAction<credit_t, bit<16>, bit<8>>(reg_credit) take_credit = {
        void apply(inout credit_t v, out bit<8> rv) {
            if (v > 0) {
                v = v - 1;
                rv = 1;
            } else {
                rv = 0;
            }
        }
    };
    RegisterAction<credit_t, bit<16>, bit<8>>(reg_credit) add_credit = {
        void apply(inout credit_t v, out bit<8> rv) {
            if (v < SD_CREDIT_CAP) {
                v = v + (credit_t)hdr.sd.len;
            }
            rv = 0;
        }
    };

    /* ---- sequence numbers, per FA ---- */
    Register<bit<32>, fa_id_t>(SD_MAX_FAS, 0) reg_seq_out;
    RegisterAction<bit<32>, fa_id_t, bit<32>>(reg_seq_out) next_seq = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
            v = v + 1;
        }
    };
    /* Each returns the expected number as found; the caller compares it
     * with the frame's. */
    Register<bit<32>, fa_id_t>(SD_MAX_FAS, 0) reg_seq_in;
    RegisterAction<bit<32>, fa_id_t, bit<32>>(reg_seq_in) release_in_order = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
            if (v == hdr.sd.seq) {
                v = v + 1;
            }
        }
    };
    /* An expired frame takes its turn if it is still ahead: every number
     * before it is given up at once. */
    RegisterAction<bit<32>, fa_id_t, bit<32>>(reg_seq_in) skip_to = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
            if (hdr.sd.seq - v < 0x80000000) {
                v = hdr.sd.seq + 1;
            }
        }
    };

    /* ---- reassembly timer, per frame ---- */
    /* The age (ns, now - the cell's tstamp) at which an early frame gives
     * up the numbers before it; 0: never. The control plane writes index
     * 0. Ages are the global timestamps' low 32 bits: a timeout must be
     * under 2^31 ns. */
    Register<bit<32>, bit<1>>(1, 0) reg_reasm_timeout;
    RegisterAction<bit<32>, bit<1>, bit<32>>(reg_reasm_timeout) read_timeout = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
        }
    };
    /* Sequence numbers given up, per source FA. */
    Register<bit<32>, fa_id_t>(SD_MAX_FAS, 0) reg_reasm_drops;
    RegisterAction<bit<32>, fa_id_t, bit<8>>(reg_reasm_drops) count_skipped = {
        void apply(inout bit<32> v, out bit<8> rv) {
            v = v + ig_md.skipped;
            rv = 0;
        }
    };
    RegisterAction<bit<32>, fa_id_t, bit<8>>(reg_reasm_drops) give_back = {
        void apply(inout bit<32> v, out bit<8> rv) {
            if (v > 0) {
                v = v - 1;
            }
            rv = 0;
        }
    };

    /* ---- spraying: a round robin per destination FA ---- */
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

    /* ---- credit generation: a round robin per host port ---- */
    Register<bit<16>, bit<16>>(SD_MAX_PORTS, 0) reg_credit_rr;
    RegisterAction<bit<16>, bit<16>, bit<16>>(reg_credit_rr) next_source = {
        void apply(inout bit<16> v, out bit<16> rv) {
            rv = v;
            if (v == SD_MAX_FAS - 1) {
                v = 0;
            } else {
                v = v + 1;
            }
        }
    };

    /* ---- FCI: marked frames, counted per port, cancel its credits a
     * credit's worth (the credit's len, in frames) at a time: the credit
     * rate falls by the share of frames marked (§4.2) ---- */
    Register<bit<16>, bit<16>>(SD_MAX_PORTS, 0) reg_fci;
    RegisterAction<bit<16>, bit<16>, bit<8>>(reg_fci) count_fci = {
        void apply(inout bit<16> v, out bit<8> rv) {
            v = v + 1;
            rv = 0;
        }
    };
    RegisterAction<bit<16>, bit<16>, bit<8>>(reg_fci) spend_fci = {
        void apply(inout bit<16> v, out bit<8> rv) {
            if (v >= hdr.sd.len && hdr.sd.len != 0) {
                v = v - hdr.sd.len;
                rv = 1;
            } else {
                rv = 0;
            }
        }
    };

    /* ---- fabric latency at the destination FA, by the cell's timestamp ---- */
    Register<bit<32>, bit<16>>(SD_HIST_BUCKETS, 0) reg_lat_hist;
    RegisterAction<bit<32>, bit<16>, bit<8>>(reg_lat_hist) count_latency = {
        void apply(inout bit<32> v, out bit<8> rv) {
            v = v + 1;
            rv = 0;
        }
    };

    /* ---- the generator's host traffic picks a destination slot per frame ---- */
    Random<bit<6>>() gen_slot;

    /* ---- reachability: ticks since a fabric port's last reachability cell ---- */
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

    action to_voq(fa_id_t fa, bit<16> port, bit<16> voq, QueueId_t tc) {
        hdr.sd.setValid();
        hdr.sd.kind = SD_KIND_DATA;
        hdr.sd.flags = 0;
        hdr.sd.dst_fa = fa;
        hdr.sd.dst_port = port;
        hdr.sd.len = 1;
        ig_md.voq = voq;
        ig_tm_md.qid = tc;
    }

    table voq_map {
        key = {
            hdr.ethernet.dst_addr : exact @name("dst_addr");
        }
        actions = {
            to_voq;
            drop;
        }
        default_action = drop();
        size = 4096;
    }

    /* The packet generator's host traffic (kind data): its VOQ by the
     * application and a random slot, so the control plane spreads a flow
     * over destinations by how it fills the MaxLinks slots. */
    table gen_flow {
        key = {
            hdr.pktgen_timer.app_id : exact @name("app_id");
            ig_md.slot              : exact @name("slot");
        }
        actions = {
            to_voq;
            drop;
        }
        default_action = drop();
        size = 4096;
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

    action to_host(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
        hdr.sd.setInvalid();
    }

    table host_port {
        key = {
            hdr.sd.dst_port : exact @name("dst_port");
        }
        actions = {
            to_host;
            drop;
        }
        default_action = drop();
        size = SD_MAX_PORTS;
    }

    action credit_for(bit<16> port) {
        hdr.sd.dst_port = port;
    }

    table credit_port {
        key = {
            hdr.pktgen_timer.packet_id : exact @name("packet_id");
        }
        actions = {
            credit_for;
            drop;
        }
        default_action = drop();
        size = SD_MAX_PORTS;
    }

    action to_source(fa_id_t fa, bit<16> voq) {
        hdr.sd.dst_fa = fa;
        hdr.sd.seq = (bit<32>)voq;
    }

    table credit_to {
        key = {
            hdr.sd.dst_port : exact @name("dst_port");
            ig_md.slot      : exact @name("slot");
        }
        actions = {
            to_source;
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
        size = SD_MAX_LINKS;
    }

    /* A generator frame becomes an Ethernet frame with its cell header. */
    action pktgen_to_ethernet() {
        hdr.ethernet.setValid();
        hdr.ethernet.dst_addr = 0xffffffffffff;
        hdr.ethernet.src_addr = hdr.remaining_ethernet.src_addr;
        hdr.ethernet.ether_type = SD_ETHERTYPE;
        hdr.pktgen_timer.setInvalid();
        hdr.remaining_ethernet.setInvalid();
    }

    action wait_recirculate() {
        ig_tm_md.ucast_egress_port = SD_RECIRC_PORT;
    }

    apply {
        bool to_fabric = false;
        bit<32> delay = 0;
        bit<16> bucket = 0;
        whoami.apply();
        if (hdr.pktgen_timer.isValid() && hdr.sd.isValid() && hdr.sd.kind == SD_KIND_DATA) {
            ig_md.slot = (bit<16>)gen_slot.get();
            gen_flow.apply();
            pktgen_to_ethernet();
            to_fabric = true;
        } else if (hdr.pktgen_timer.isValid()) {
            hdr.sd.src_fa = ig_md.me;
            if (hdr.sd.kind == SD_KIND_CREDIT) {
                credit_port.apply();
                ig_md.slot = next_source.execute(hdr.sd.dst_port);
                credit_to.apply();
                ig_md.ok = spend_fci.execute(hdr.sd.dst_port);
                if (ig_md.ok == 1) {
                    drop();
                } else {
                    ig_md.slot = next_slot.execute(hdr.sd.dst_fa);
                    spray.apply();
                }
                pktgen_to_ethernet();
            } else if (hdr.sd.kind == SD_KIND_REACH) {
                reach_port.apply();
                pktgen_to_ethernet();
            } else {
                age.execute(hdr.pktgen_timer.packet_id[8:0]);
                drop();
            }
        } else if (hdr.sd.isValid() && hdr.sd.kind == SD_KIND_DATA && hdr.sd.dst_fa == ig_md.me) {
            /* The frame's age: also its fabric latency on arrival. */
            delay = ig_prsr_md.global_tstamp[31:0] - hdr.sd.tstamp;
            /* Counted on arrival from the fabric, not on each pass round
             * the recirculation port. */
            if (ig_intr_md.ingress_port != SD_RECIRC_PORT) {
                bucket = (bit<16>)(delay >> SD_LAT_SHIFT);
                if (delay >= (SD_HIST_BUCKETS << SD_LAT_SHIFT)) {
                    bucket = SD_HIST_BUCKETS - 1;
                }
                count_latency.execute(bucket);
                if ((hdr.sd.flags & SD_FLAG_FCI) != 0) {
                    count_fci.execute(hdr.sd.dst_port);
                }
            }
            /* One pass reads and writes each register at most once, in
             * this order: reg_reasm_timeout, reg_seq_in, reg_reasm_drops.
             * Expired: a timeout is set and the age has reached it (the
             * sign bit of age - timeout, ages and timeouts under 2^31). */
            ig_md.reasm_to = read_timeout.execute(0);
            ig_md.reasm_over = delay - ig_md.reasm_to;
            if (ig_md.reasm_to != 0 && ig_md.reasm_over[31:31] == 0) {
                ig_md.expired = 1;
            }
            if (ig_md.expired == 1) {
                ig_md.seq_in = skip_to.execute(hdr.sd.src_fa);
            } else {
                ig_md.seq_in = release_in_order.execute(hdr.sd.src_fa);
            }
            ig_md.skipped = hdr.sd.seq - ig_md.seq_in;
            if (ig_md.skipped == 0) {
                /* Its turn. */
                host_port.apply();
            } else if (ig_md.skipped >= 0x80000000) {
                /* Behind: its number was given up. Released if it was
                 * waiting already (out of order), dropped if it arrives
                 * now, as the paper's expired packet is. */
                if (ig_intr_md.ingress_port == SD_RECIRC_PORT) {
                    give_back.execute(hdr.sd.src_fa);
                    host_port.apply();
                } else {
                    drop();
                }
            } else if (ig_md.expired == 1) {
                /* Its reassembly timer expired: the numbers before it are
                 * given up and it is released. */
                count_skipped.execute(hdr.sd.src_fa);
                host_port.apply();
            } else {
                /* Early: wait round the recirculation port. */
                wait_recirculate();
                ig_tm_md.qid = SD_REASM_QID;
            }
        } else if (hdr.sd.isValid() && hdr.sd.kind == SD_KIND_CREDIT) {
            add_credit.execute(hdr.sd.seq[15:0]);
            drop();
        } else if (hdr.sd.isValid() && hdr.sd.kind == SD_KIND_REACH) {
            seen.execute(ig_intr_md.ingress_port);
            drop();
        } else if (hdr.ethernet.isValid() && !hdr.sd.isValid()) {
            voq_map.apply();
            to_fabric = true;
        }
        if (to_fabric) {
            ig_md.ok = take_credit.execute(ig_md.voq);
            if (ig_md.ok == 1) {
                hdr.sd.src_fa = ig_md.me;
                hdr.sd.seq = next_seq.execute(hdr.sd.dst_fa);
                hdr.sd.tstamp = ig_prsr_md.global_tstamp[31:0];
                hdr.ethernet.ether_type = SD_ETHERTYPE;
                ig_md.slot = next_slot.execute(hdr.sd.dst_fa);
                spray.apply();
            } else {
                /* The VOQ: wait for a credit round the recirculation port.
                 * The frame goes round without its cell header. */
                hdr.sd.setInvalid();
                wait_recirculate();
            }
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

/* The FA's fabric ports are the first stage of the fabric: a data cell
 * leaving by one whose queue is at or above reg_fci_th (buffer cells)
 * is marked FCI, as at the FE, so that credits beyond what the source's
 * own links carry throttle the destinations' credits too (the paper's
 * FAs have a fabric speed-up above the credit rate, §4.1; a bench whose
 * links carry just the host port's rate has none). Frames going round
 * the recirculation port are not marked. */
control SwitchEgress(
        inout sd_headers_t hdr,
        inout sd_egress_md_t eg_md,
        in egress_intrinsic_metadata_t eg_intr_md,
        in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
        inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
        inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    Register<bit<32>, bit<1>>(1, 0) reg_fci_th;
    RegisterAction<bit<32>, bit<1>, bit<32>>(reg_fci_th) read_fci_th = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
        }
    };

    apply {
        if (hdr.sd.isValid() && hdr.sd.kind == SD_KIND_DATA && eg_intr_md.egress_port != SD_RECIRC_PORT) {
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
