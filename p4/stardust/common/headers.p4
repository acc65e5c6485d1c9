/* -*- P4_16 -*- */
/*
 * Stardust on Tofino 1 (TNA): what the Fabric Adapter (stardust_fa.p4)
 * and the Fabric Element (stardust_fe.p4) share. The Go contract is
 * p4/stardust/contract.go; README.md says what is the paper's and what is
 * the Tofino approximation.
 */
#ifndef _STARDUST_HEADERS_
#define _STARDUST_HEADERS_

/* IEEE Std 802 local experimental EtherType 2. */
#define SD_ETHERTYPE 0x88B6
#define SD_MAX_FAS 256
#define SD_MAX_LINKS 64
#define SD_MAX_PORTS 512
/* Cell kinds (contract: Kind*); KIND_AGE is the aging tick, local only. */
#define SD_KIND_DATA 0
#define SD_KIND_CREDIT 1
#define SD_KIND_REACH 2
#define SD_KIND_AGE 3
/* Flags (contract: Flag*). */
#define SD_FLAG_FCI 0x01
#define SD_FLAG_LAST 0x02
/* Local port 68: the packet generator and recirculation on pipe 0. */
#define SD_INTERNAL_PORT 68
/* A reachability age saturates here; the control plane compares it with th. */
#define SD_AGE_MAX 255
/* Histogram registers (contract: HistBuckets, LatBucketShift, QHistShift):
 * fabric latency in 64 ns buckets at the FA, FE queue depth in buckets of
 * four 80 B buffer cells; the last bucket saturates. */
#define SD_HIST_BUCKETS 512
#define SD_LAT_SHIFT 6
#define SD_QHIST_SHIFT 2

typedef bit<48> mac_addr_t;
typedef bit<16> fa_id_t;
typedef bit<32> credit_t;

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

/* The packet generator writes its header over the destination MAC. */
header remaining_ethernet_h {
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

/* The cell header, 18 bytes (contract: CellHeaderBytes). On a data frame
 * seq is the frame's number from its source FA to its destination FA; on
 * a credit it is the VOQ the credit is for, at the source FA. tstamp is
 * the source FA's global timestamp (ns, low 32 bits) when the frame left
 * for the fabric. */
header sd_h {
    bit<8>  kind;
    bit<8>  flags;
    fa_id_t dst_fa;
    bit<16> dst_port;
    fa_id_t src_fa;
    bit<32> seq;
    bit<16> len;
    bit<32> tstamp;
}

struct sd_headers_t {
    pktgen_timer_header_t pktgen_timer;
    remaining_ethernet_h  remaining_ethernet;
    ethernet_h            ethernet;
    sd_h                  sd;
}

struct sd_ingress_md_t {
    fa_id_t  me;
    bit<16>  voq;
    bit<16>  slot;
    bit<8>   ok;
    bit<32>  reasm_to;
    bit<32>  reasm_over;
    bit<8>   expired;
    bit<32>  seq_in;
    bit<32>  skipped;
}

struct sd_egress_md_t {
    bit<32> fci_th;
}

#endif
