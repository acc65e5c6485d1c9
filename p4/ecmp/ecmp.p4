/* -*- P4_16 -*- */
/*
 * A plain packet-switched leaf-spine fabric for Intel Tofino 1, TNA: the
 * "standard unscheduled network fabric" Zilberman et al., "Stardust:
 * Divide and Conquer in the Data Center Network" (NSDI'19, §5.2, §5.4,
 * §6.3) compare their fabric against. One program runs on every switch:
 * ToRs and spines differ only in what the control plane writes. The Go
 * contract is p4/ecmp/contract.go; README.md says what is approximated.
 *
 * Forwarding, for IPv4/UDP frames (everything else is dropped):
 *   route (destination ToR, the destination address's third octet):
 *     to_host(port)  deliver out of a host port (marked in the bridged
 *                    header, for the egress flow registers);
 *     ecmp_hash      per flow: the slot is bits 11..6 of a CRC16 over
 *                    the 5-tuple (not its low six bits: the contract's
 *                    SlotShift says why);
 *     ecmp_spray     per packet: the slot is drawn by a Random<bit<6>>;
 *     drop           (the default).
 *   ecmp_slot (destination ToR, slot) names the uplink (to_link); the
 *   control plane writes an ECMP group's members round robin over the
 *   64 slots.
 * Nothing is scheduled, nothing is sequenced and there are no credits:
 * every egress port has drop-tail queues in the traffic manager, one per
 * traffic class.
 *
 * Traffic classes: a frame's class is the class-selector bits of its IPv4
 * DSCP (diffserv[7:5], RFC 2474 §4.2.2: DSCP = class << 3). Every switch a
 * frame crosses puts it in the traffic manager queue of its class
 * (ig_tm_md.qid, and ig_tm_md.ingress_cos for the ingress accounting), so
 * a spine serves it in the class the source ToR gave it; the control plane
 * sets each queue's scheduling priority (tf1.tm.queue.sched_cfg). The
 * class travels in the packet, not in a bridged header: a bridged header
 * does not leave the switch.
 *
 * Packet generator frames (the generator port, ECMP_PKTGEN_PORT): the
 * buffer holds the headers after the generator's 6 B header (TNA's
 * pktgen_timer_header_t, written over the destination MAC): source MAC,
 * EtherType, IPv4 and UDP. gen_flow (application, a slot drawn per frame)
 * gives the frame its flow: the destination address 10.0.<dst>.1, the
 * UDP source port ECMP_FLOW_PORT_BASE + flow, as a host's socket would,
 * and its traffic class in the DSCP (class selector tc, ECN 0).
 * The frame then becomes an Ethernet frame of the same size and is
 * routed as any other. reg_flow_sent counts the flow's frames that leave
 * ingress for the traffic manager; at the destination ToR the egress
 * counts those sent out of the host port (reg_flow_rcvd) and the global
 * timestamps of the first and last (reg_flow_first_ns, reg_flow_last_ns).
 *
 * TNA externs used, as tna.p4 (Open-Tofino, share/p4c/p4include/tna.p4)
 * declares them: Hash<W>(HashAlgorithm_t) with W get<D>(in D data);
 * Random<W>() with W get(); Register<T, I>(size, initial) and
 * RegisterAction<T, I, U>(reg) with apply(inout T value, out U rv);
 * Checksum() with update<T>(in T data) in the deparser. The ECMP hash is
 * Open-Tofino's tna_action_selector example's Hash<bit<16>>(CRC16); the
 * generator header is parsed as in its tna_pktgen example.
 *
 * Compiled by the SDE: bf-p4c --target tofino --arch tna -o <dir> ecmp.p4
 */
#include <core.p4>
#include <tna.p4>

/* Sizes (contract: Slots, MaxFlows, MaxToRs). */
#define ECMP_SLOTS 64
#define ECMP_MAX_FLOWS 256
#define ECMP_MAX_TORS 256
/* A generator flow's UDP ports (contract: FlowPortBase, FlowDstPort). */
#define ECMP_FLOW_PORT_BASE 49152
#define ECMP_FLOW_DST_PORT 5001
/* Local port 68: the packet generator on pipe 0 of Tofino 1. */
#define ECMP_PKTGEN_PORT 68
#define ETHERTYPE_IPV4 0x0800
#define IP_PROTO_UDP 17

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
/* A ToR id: the third octet of its hosts' addresses, 10.0.<id>.0/24. */
typedef bit<8>  tor_id_t;
/* A flow number: an index into the flow registers. */
typedef bit<8>  flow_t;
/* A traffic class: the DSCP's class selector, and the TM queue (qid). */
typedef bit<3>  tc_t;
/* An ECMP or generator slot: the low six bits of the hash, or a draw. */
typedef bit<6>  slot_t;

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

/* The packet generator writes its 6 B header over the destination MAC. */
header remaining_ethernet_h {
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header ipv4_h {
    bit<4>      version;
    bit<4>      ihl;
    bit<8>      diffserv;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* Bridged from ingress to egress ahead of the frame: whether route
 * delivered it to a host port. */
header ecmp_bridge_h {
    bit<7> _pad;
    bit<1> to_host;
}

struct ecmp_headers_t {
    ecmp_bridge_h         bridge;
    pktgen_timer_header_t pktgen_timer;
    remaining_ethernet_h  remaining_ethernet;
    ethernet_h            ethernet;
    ipv4_h                ipv4;
    udp_h                 udp;
}

struct ecmp_ingress_md_t {
    tor_id_t me;
    slot_t   gen_slot;
    flow_t   flow;
    bit<1>   gen;
    bit<1>   ecmp;
    bit<1>   dropped;
    bit<16>  hash;
}

struct ecmp_egress_headers_t {
    ethernet_h ethernet;
    ipv4_h     ipv4;
    udp_h      udp;
}

struct ecmp_egress_md_t {
    ecmp_bridge_h bridge;
    bit<16>       flow_off;
}

/* ------------------------------------------------------------------------
 * Ingress
 * ---------------------------------------------------------------------- */

parser SwitchIngressParser(
        packet_in pkt,
        out ecmp_headers_t hdr,
        out ecmp_ingress_md_t ig_md,
        out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        ig_md.me = 0;
        ig_md.gen_slot = 0;
        ig_md.flow = 0;
        ig_md.gen = 0;
        ig_md.ecmp = 0;
        ig_md.dropped = 0;
        ig_md.hash = 0;
        transition select(ig_intr_md.ingress_port) {
            ECMP_PKTGEN_PORT : parse_pktgen;
            default : parse_ethernet;
        }
    }
    state parse_pktgen {
        pkt.extract(hdr.pktgen_timer);
        pkt.extract(hdr.remaining_ethernet);
        transition select(hdr.remaining_ethernet.ether_type) {
            ETHERTYPE_IPV4 : parse_ipv4;
            default : accept;
        }
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4 : parse_ipv4;
            default : accept;
        }
    }
    /* Only option-less IPv4 carries UDP here: the hash and gen_flow read
     * the UDP header at a fixed place. */
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (5, IP_PROTO_UDP) : parse_udp;
            default : accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition accept;
    }
}

control SwitchIngress(
        inout ecmp_headers_t hdr,
        inout ecmp_ingress_md_t ig_md,
        in ingress_intrinsic_metadata_t ig_intr_md,
        in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
        inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
        inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    /* Generator frames per flow that left ingress for the traffic
     * manager (after it, queue drops are the traffic manager's). */
    Register<bit<32>, flow_t>(ECMP_MAX_FLOWS, 0) reg_flow_sent;
    RegisterAction<bit<32>, flow_t, bit<32>>(reg_flow_sent) count_sent = {
        void apply(inout bit<32> v, out bit<32> rv) {
            v = v + 1;
            rv = 0;
        }
    };

    /* The ECMP hash (contract: FlowHash): HashAlgorithm_t.CRC16, which
     * bf-p4c builds as bf-utils' crc_16 (polynomial 0x8005, reflected,
     * initial value 0, no final xor: CRC-16/ARC). */
    Hash<bit<16>>(HashAlgorithm_t.CRC16) flow_hash;
    /* Per-frame draws: a generator frame's flow slot, a sprayed frame's
     * ECMP slot (placed where ecmp_slot reads the hash's slot bits). */
    Random<slot_t>() gen_rng;
    Random<slot_t>() spray_rng;

    action drop() {
        ig_dprsr_md.drop_ctl = 1;
        ig_md.dropped = 1;
    }

    action set_id(tor_id_t id) {
        ig_md.me = id;
    }

    /* Keyless: the switch's ToR id (a spine's is not used). */
    table whoami {
        actions = {
            set_id;
        }
        default_action = set_id(0);
        size = 1;
    }

    /* A generator frame's flow: the destination ToR's host address
     * 10.0.<dst>.1, the flow's UDP source port and its traffic class: the
     * DSCP's class selector (DSCP = tc << 3, the diffserv byte's top three
     * bits; ECN not-ECT). */
    action to_flow(tor_id_t dst, flow_t flow, tc_t tc) {
        hdr.ipv4.dst_addr = 8w10 ++ 8w0 ++ dst ++ 8w1;
        hdr.udp.src_port = ECMP_FLOW_PORT_BASE + (bit<16>)flow;
        hdr.ipv4.diffserv = tc ++ 5w0;
        ig_md.flow = flow;
        ig_md.gen = 1;
    }

    table gen_flow {
        key = {
            hdr.pktgen_timer.app_id : exact @name("app_id");
            ig_md.gen_slot          : exact @name("slot");
        }
        actions = {
            to_flow;
            drop;
        }
        default_action = drop();
        size = 512;
    }

    action to_host(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
        hdr.bridge.to_host = 1;
    }

    /* Per flow: every frame of a 5-tuple takes the same slot. */
    action ecmp_hash() {
        ig_md.hash = flow_hash.get({
            hdr.ipv4.src_addr,
            hdr.ipv4.dst_addr,
            hdr.ipv4.protocol,
            hdr.udp.src_port,
            hdr.udp.dst_port
        });
        ig_md.ecmp = 1;
    }

    /* Per packet: each frame draws its slot. */
    action ecmp_spray() {
        ig_md.hash = (bit<16>)spray_rng.get() << 6;
        ig_md.ecmp = 1;
    }

    table route {
        key = {
            hdr.ipv4.dst_addr[15:8] : exact @name("dst");
        }
        actions = {
            to_host;
            ecmp_hash;
            ecmp_spray;
            drop;
        }
        default_action = drop();
        size = ECMP_MAX_TORS;
    }

    action to_link(PortId_t link) {
        ig_tm_md.ucast_egress_port = link;
    }

    /* The frame's traffic class, from its DSCP's class selector: the
     * egress queue it waits in (TNA's ig_tm_md.qid; a port's queues 0..7
     * map to its physical queues as tf1.tm.port.cfg's egress_qid_queues
     * says) and its ingress class of service. */
    action set_class() {
        ig_tm_md.qid = (QueueId_t)hdr.ipv4.diffserv[7:5];
        ig_tm_md.ingress_cos = hdr.ipv4.diffserv[7:5];
    }

    table ecmp_slot {
        key = {
            hdr.ipv4.dst_addr[15:8] : exact @name("dst");
            ig_md.hash[11:6]        : exact @name("slot");
        }
        actions = {
            to_link;
            drop;
        }
        default_action = drop();
        size = 16384;
    }

    /* A generator frame becomes an Ethernet frame of the same size: the
     * generator's header and the rest of the buffer's Ethernet header
     * (14 B) give way to a whole one. */
    action pktgen_to_ethernet() {
        hdr.ethernet.setValid();
        hdr.ethernet.dst_addr = 0xffffffffffff;
        hdr.ethernet.src_addr = hdr.remaining_ethernet.src_addr;
        hdr.ethernet.ether_type = hdr.remaining_ethernet.ether_type;
        hdr.pktgen_timer.setInvalid();
        hdr.remaining_ethernet.setInvalid();
    }

    apply {
        hdr.bridge.setValid();
        hdr.bridge._pad = 0;
        hdr.bridge.to_host = 0;
        whoami.apply();
        if (hdr.pktgen_timer.isValid()) {
            if (hdr.udp.isValid()) {
                ig_md.gen_slot = gen_rng.get();
                gen_flow.apply();
            } else {
                drop();
            }
            pktgen_to_ethernet();
        }
        if (hdr.udp.isValid() && ig_md.dropped == 0) {
            route.apply();
            if (ig_md.ecmp == 1) {
                ecmp_slot.apply();
            }
            set_class();
        } else {
            drop();
        }
        if (ig_md.gen == 1 && ig_md.dropped == 0) {
            count_sent.execute(ig_md.flow);
        }
    }
}

/* gen_flow rewrites the destination address: the IPv4 header checksum
 * is recomputed for every frame (TNA's Checksum extern, as Open-Tofino's
 * tna_checksum example does). The UDP checksum stays 0 (none). */
control SwitchIngressDeparser(
        packet_out pkt,
        inout ecmp_headers_t hdr,
        in ecmp_ingress_md_t ig_md,
        in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_checksum;
    apply {
        hdr.ipv4.hdr_checksum = ipv4_checksum.update({
            hdr.ipv4.version,
            hdr.ipv4.ihl,
            hdr.ipv4.diffserv,
            hdr.ipv4.total_len,
            hdr.ipv4.identification,
            hdr.ipv4.flags,
            hdr.ipv4.frag_offset,
            hdr.ipv4.ttl,
            hdr.ipv4.protocol,
            hdr.ipv4.src_addr,
            hdr.ipv4.dst_addr
        });
        pkt.emit(hdr);
    }
}

/* ------------------------------------------------------------------------
 * Egress
 * ---------------------------------------------------------------------- */

parser SwitchEgressParser(
        packet_in pkt,
        out ecmp_egress_headers_t hdr,
        out ecmp_egress_md_t eg_md,
        out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(eg_md.bridge);
        eg_md.flow_off = 0;
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4 : parse_ipv4;
            default : accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (5, IP_PROTO_UDP) : parse_udp;
            default : accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition accept;
    }
}

/* A flow's frames out of a host port: what its receiver got, and when
 * (the egress parser's global timestamp, ns, low 32 bits). */
control SwitchEgress(
        inout ecmp_egress_headers_t hdr,
        inout ecmp_egress_md_t eg_md,
        in egress_intrinsic_metadata_t eg_intr_md,
        in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
        inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
        inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    Register<bit<32>, flow_t>(ECMP_MAX_FLOWS, 0) reg_flow_rcvd;
    RegisterAction<bit<32>, flow_t, bit<32>>(reg_flow_rcvd) count_rcvd = {
        void apply(inout bit<32> v, out bit<32> rv) {
            v = v + 1;
            rv = 0;
        }
    };
    /* Written once: while it holds 0 (a frame whose timestamp's low 32
     * bits are 0 leaves it to the next). */
    Register<bit<32>, flow_t>(ECMP_MAX_FLOWS, 0) reg_flow_first_ns;
    RegisterAction<bit<32>, flow_t, bit<32>>(reg_flow_first_ns) stamp_first = {
        void apply(inout bit<32> v, out bit<32> rv) {
            if (v == 0) {
                v = eg_prsr_md.global_tstamp[31:0];
            }
            rv = 0;
        }
    };
    Register<bit<32>, flow_t>(ECMP_MAX_FLOWS, 0) reg_flow_last_ns;
    RegisterAction<bit<32>, flow_t, bit<32>>(reg_flow_last_ns) stamp_last = {
        void apply(inout bit<32> v, out bit<32> rv) {
            v = eg_prsr_md.global_tstamp[31:0];
            rv = 0;
        }
    };

    apply {
        if (eg_md.bridge.to_host == 1 && hdr.udp.isValid() && hdr.udp.dst_port == ECMP_FLOW_DST_PORT) {
            eg_md.flow_off = hdr.udp.src_port - ECMP_FLOW_PORT_BASE;
            if (eg_md.flow_off < ECMP_MAX_FLOWS) {
                count_rcvd.execute(eg_md.flow_off[7:0]);
                stamp_first.execute(eg_md.flow_off[7:0]);
                stamp_last.execute(eg_md.flow_off[7:0]);
            }
        }
    }
}

control SwitchEgressDeparser(
        packet_out pkt,
        inout ecmp_egress_headers_t hdr,
        in ecmp_egress_md_t eg_md,
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
