// Package ecmp is the control-plane contract of ecmp.p4, a plain
// packet-switched fabric for Tofino 1 (TNA): the comparison the Stardust
// paper draws its fabric against (Zilberman et al., NSDI'19, §5.2, §5.4,
// §6.3: "a standard unscheduled network fabric"). One program runs on every
// switch of a leaf-spine bench: a ToR (the Stardust bench's FA positions)
// sends its hosts' packets to the spines by an ECMP hash of their 5-tuple,
// a spine sends them down to the destination ToR, and the ToR delivers
// them to its host port. Nothing is scheduled and nothing is sequenced:
// every egress port has drop-tail queues in the traffic manager, one per
// traffic class (Classes), served by the queues' scheduling priorities.
//
// Flows come from the switch's packet generator (a bench whose ToR host
// ports have no hosts behind them): gen_flow gives each generator frame a
// destination ToR and a flow number, as a host's socket would give a
// packet its addresses and ports; the registers count each flow's frames
// where they enter the fabric and where they leave it to the host.
//
// The P4_16 source is compiled by a lab's Intel SDE (bf-p4c), not by this
// repository's build.
package ecmp

import (
	"encoding/binary"
	"fmt"
)

// Program is the program's name: bfrt.ecmp.pipe.<Control>.<name>.
const Program = "ecmp"

// Names the control plane uses.
const (
	// TableWhoami is keyless: its default action set_id gives the switch
	// its ToR id (the third octet of its hosts' addresses, 10.0.<id>.0/24);
	// a spine's id is not used.
	TableWhoami = "SwitchIngress.whoami"
	ActionSetID = "set_id"
	// TableGenFlow gives a generator frame its flow: key the generator
	// application (KeyAppID) and a slot drawn per frame by the program's
	// Random<bit<6>> extern (KeySlot, 0..Slots-1); action ActionToFlow
	// writes the destination address 10.0.<dst>.1, the UDP source port
	// FlowPortBase+flow and the traffic class tc as the DSCP's class
	// selector (Diffserv). The control plane writes an application's
	// flows over the Slots slots (one flow in every slot for one flow).
	TableGenFlow = "SwitchIngress.gen_flow"
	ActionToFlow = "to_flow"
	// TableRoute is keyed by the destination ToR (the destination
	// address's third octet): ActionToHost delivers to a host port,
	// ActionECMPHash sends the packet to the slot its 5-tuple hashes to
	// (per flow, as ECMP does; FlowSlot), ActionECMPSpray to a slot drawn per packet
	// (per-packet spraying, the best load balancing a packet fabric gets,
	// §5.2 "even with multi-path routing").
	TableRoute      = "SwitchIngress.route"
	ActionToHost    = "to_host"
	ActionECMPHash  = "ecmp_hash"
	ActionECMPSpray = "ecmp_spray"
	// TableECMPSlot maps (destination ToR, slot) to an uplink: the control
	// plane writes an ECMP group's members round robin over the Slots
	// slots, as a Tofino action selector spreads its members over its
	// hash space.
	TableECMPSlot = "SwitchIngress.ecmp_slot"
	ActionToLink  = "to_link"
	// ActionDrop is every table's default.
	ActionDrop = "drop"

	// RegFlowSent counts, per flow, the generator frames that left this
	// ToR's ingress for the traffic manager (queue drops after it are the
	// traffic manager's, counted by tm.queue).
	RegFlowSent = "SwitchIngress.reg_flow_sent"
	// RegFlowRcvd counts, per flow, the frames this ToR's egress sent out
	// of a host port: what the flow's receiver got.
	RegFlowRcvd = "SwitchEgress.reg_flow_rcvd"
	// RegFlowFirst and RegFlowLast hold the egress global timestamp (ns,
	// its low 32 bits: they wrap after 4.29 s) of the flow's first and
	// last frame out of the host port; First is written when it is 0.
	RegFlowFirst = "SwitchEgress.reg_flow_first_ns"
	RegFlowLast  = "SwitchEgress.reg_flow_last_ns"
)

// Match keys and action parameters as bfrt_python spells them.
const (
	KeyAppID  = "app_id"
	KeySlot   = "slot"
	KeyDst    = "dst"
	ParamID   = "id"
	ParamDst  = "dst"
	ParamFlow = "flow"
	ParamTC   = "tc"
	ParamPort = "port"
	ParamLink = "link"
)

// Sizes and constants of ecmp.p4.
const (
	// Slots is the number of ECMP (and generator flow) slots: six bits
	// of the hash (FlowSlot), or a Random<bit<6>>.
	Slots = 64
	// SlotShift is where ecmp_hash takes the slot from the hash: bits
	// SlotShift+5..SlotShift. Not the low six bits: CRC16 is linear, and
	// its low six bits take only three bits' worth of the UDP source
	// port's low byte (the byte followed by two more, the destination
	// port), so the MaxFlows flows of one source and destination would
	// reach 8 of the 64 slots, 2 of 4 uplinks. Bits 11..6 take six bits'
	// worth of the source port's low byte, of the source address's last
	// octet, of the destination ToR and of the destination port's low
	// byte (contract_test.go).
	SlotShift = 6
	// MaxFlows is the flow registers' size; a flow number is below it.
	MaxFlows = 256
	// MaxToRs bounds a ToR id (the route table's size).
	MaxToRs = 256
	// FlowPortBase is the UDP source port of flow 0.
	FlowPortBase = 49152
	// FlowDstPort is every generator frame's UDP destination port.
	FlowDstPort = 5001
	// HeadersBytes is Ethernet + IPv4 (no options) + UDP.
	HeadersBytes = 14 + 20 + 8
	// PktgenPort is the port the program takes generator frames from:
	// the packet generator of Tofino 1's pipe 0.
	PktgenPort = 68
	// Classes is the number of traffic classes (to_flow's tc, a bit<3>):
	// a class is the egress queue (ig_tm_md.qid) a frame waits in at
	// every switch, and a Tofino 1 port has 8 queues by default
	// (tf1.tm.port.cfg's port_queues_count).
	Classes = 8
	// ClassShift is where the class sits in the IPv4 diffserv byte: the
	// DSCP's class-selector bits (RFC 2474 §4.2.2.2, DSCP = class << 3),
	// the byte's bits 7..5; ECN (bits 1..0) is left 0.
	ClassShift = 5
)

// Diffserv is the IPv4 diffserv byte to_flow writes for class tc.
func Diffserv(tc int) uint8 { return uint8(tc&(Classes-1)) << ClassShift }

// ClassOf is the traffic class (and queue) every switch gives a frame
// whose IPv4 diffserv byte is b: its DSCP's class-selector bits.
func ClassOf(b uint8) int { return int(b >> ClassShift) }

// HostAddr is the address gen_flow writes for ToR dst's host.
func HostAddr(dst int) uint32 { return 10<<24 | uint32(dst&0xff)<<8 | 1 }

// SourceAddr is the source address of ToR tor's generator application app.
func SourceAddr(tor, app int) uint32 { return 10<<24 | uint32(tor&0xff)<<8 | uint32(app+2)&0xff }

// FlowHash is ecmp.p4's ECMP hash: Hash<bit<16>>(HashAlgorithm_t.CRC16)
// over {src_addr, dst_addr, protocol, src_port, dst_port} in that order,
// big-endian; FlowSlot is the slot ecmp_hash takes from it.
func FlowHash(src, dst uint32, proto uint8, sport, dport uint16) uint16 {
	var b [13]byte
	binary.BigEndian.PutUint32(b[0:], src)
	binary.BigEndian.PutUint32(b[4:], dst)
	b[8] = proto
	binary.BigEndian.PutUint16(b[9:], sport)
	binary.BigEndian.PutUint16(b[11:], dport)
	return crc16(b[:])
}

// FlowSlot is the ECMP slot of a 5-tuple: bits SlotShift+5..SlotShift of
// its FlowHash (ecmp.p4's ig_md.hash[11:6]).
func FlowSlot(src, dst uint32, proto uint8, sport, dport uint16) int {
	return int(FlowHash(src, dst, proto, sport, dport)>>SlotShift) % Slots
}

// crc16 is TNA's CRC16: polynomial 0x8005, bits reflected in and out,
// initial value 0, no final xor (the CRC-16/ARC parameters). bf-p4c maps
// HashAlgorithm_t.CRC16 to bf-utils' crc_16, {0x8005, reflected, init 0,
// final xor 0} (p4lang/p4c, backends/tofino/bf-p4c/mau/hash_function.cpp
// and backends/tofino/bf-utils/src/dynamic_hash/bfn_hash_algorithm.c).
func crc16(b []byte) uint16 {
	var c uint16
	for _, x := range b {
		c ^= uint16(x)
		for i := 0; i < 8; i++ {
			if c&1 != 0 {
				c = c>>1 ^ 0xa001
			} else {
				c >>= 1
			}
		}
	}
	return c
}

// Generator is what a generator application's frames carry: the
// Ethernet, IPv4 and UDP headers before gen_flow rewrites the destination
// address and source port.
type Generator struct {
	SrcMAC  [6]byte
	SrcAddr uint32
}

// GeneratorBufferBytes is what a generator application's packet buffer
// holds after the 6 B header the packet generator writes over the
// destination MAC (TNA's pktgen_timer_header_t): the source MAC, the
// EtherType (IPv4), the IPv4 header and the UDP header.
const GeneratorBufferBytes = 8 + 20 + 8

// Buffer lays out g's packet buffer for frames of frameBytes (the IPv4
// total length and UDP length follow from it).
func (g Generator) Buffer(frameBytes int) ([]byte, error) {
	if frameBytes < HeadersBytes+4 || frameBytes > 9216 {
		return nil, fmt.Errorf("generator frame of %d B: want %d..9216 (Ethernet, IPv4 and UDP headers and the FCS)", frameBytes, HeadersBytes+4)
	}
	ipLen := frameBytes - 14 - 4
	b := make([]byte, 0, GeneratorBufferBytes)
	b = append(b, g.SrcMAC[:]...)
	b = binary.BigEndian.AppendUint16(b, 0x0800)
	ip := []byte{0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0}
	binary.BigEndian.PutUint16(ip[2:], uint16(ipLen))
	ip = binary.BigEndian.AppendUint32(ip, g.SrcAddr)
	ip = binary.BigEndian.AppendUint32(ip, 0) // gen_flow writes it
	binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip))
	b = append(b, ip...)
	b = binary.BigEndian.AppendUint16(b, 0) // gen_flow writes it
	b = binary.BigEndian.AppendUint16(b, FlowDstPort)
	b = binary.BigEndian.AppendUint16(b, uint16(ipLen-20))
	return binary.BigEndian.AppendUint16(b, 0), nil // no UDP checksum
}

// ParseGeneratorBuffer reads a buffer Buffer wrote: the generator and
// the frame size its lengths give.
func ParseGeneratorBuffer(b []byte) (Generator, int, error) {
	var g Generator
	if len(b) < GeneratorBufferBytes {
		return g, 0, fmt.Errorf("generator buffer: %d bytes, want %d (source MAC, EtherType, IPv4 and UDP headers)", len(b), GeneratorBufferBytes)
	}
	copy(g.SrcMAC[:], b)
	if et := binary.BigEndian.Uint16(b[6:]); et != 0x0800 {
		return g, 0, fmt.Errorf("generator buffer: EtherType %#04x, want 0x0800 (IPv4)", et)
	}
	ip := b[8:28]
	if ip[0] != 0x45 || ip[9] != 17 {
		return g, 0, fmt.Errorf("generator buffer: IPv4 version/IHL %#02x protocol %d, want 0x45 and 17 (UDP)", ip[0], ip[9])
	}
	g.SrcAddr = binary.BigEndian.Uint32(ip[12:])
	return g, int(binary.BigEndian.Uint16(ip[2:])) + 14 + 4, nil
}

func ipChecksum(h []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		s += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}
