package ecmp

import (
	"encoding/binary"
	"strings"
	"testing"
)

// TNA's HashAlgorithm_t.CRC16 is bf-p4c's crc_16 (p4lang/p4c,
// backends/tofino/bf-p4c/mau/hash_function.cpp: "crc16" and "crc_16" map
// to CRC_16), which bf-utils defines as polynomial 0x8005, reflected,
// initial value 0, final xor 0 (backends/tofino/bf-utils/src/dynamic_hash/
// bfn_hash_algorithm.c, standard_crc_algs: {"crc_16", 0x8005, true, 0,
// 0}): the CRC-16/ARC of the CRC catalogue, whose check value, the CRC of
// the ASCII string "123456789", is 0xBB3D.
func TestCRC16IsCRC16ARC(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0xBB3D {
		t.Errorf("crc16(\"123456789\") = %#04x, want 0xbb3d (CRC-16/ARC)", got)
	}
	if got := crc16(nil); got != 0 {
		t.Errorf("crc16 of nothing = %#04x, want the initial value 0 (no final xor)", got)
	}
}

// FlowHash hashes the 13 bytes of the 5-tuple in order, big-endian.
func TestFlowHash(t *testing.T) {
	src, dst := SourceAddr(1, 0), HostAddr(2)
	b := binary.BigEndian.AppendUint32(nil, src)
	b = binary.BigEndian.AppendUint32(b, dst)
	b = append(b, 17)
	b = binary.BigEndian.AppendUint16(b, FlowPortBase+5)
	b = binary.BigEndian.AppendUint16(b, FlowDstPort)
	if got, want := FlowHash(src, dst, 17, FlowPortBase+5, FlowDstPort), crc16(b); got != want {
		t.Errorf("FlowHash = %#04x, crc16 of the tuple's bytes %#04x", got, want)
	}
	// Every field counts.
	base := FlowHash(src, dst, 17, FlowPortBase+5, FlowDstPort)
	for name, h := range map[string]uint16{
		"source":           FlowHash(src+1, dst, 17, FlowPortBase+5, FlowDstPort),
		"destination":      FlowHash(src, dst+1, 17, FlowPortBase+5, FlowDstPort),
		"protocol":         FlowHash(src, dst, 6, FlowPortBase+5, FlowDstPort),
		"source port":      FlowHash(src, dst, 17, FlowPortBase+6, FlowDstPort),
		"destination port": FlowHash(src, dst, 17, FlowPortBase+5, FlowDstPort+1),
	} {
		if h == base {
			t.Errorf("changing the %s leaves the hash at %#04x", name, h)
		}
	}
}

// FlowSlot's bits of the hash spread the flows of one source and
// destination (UDP source ports FlowPortBase+flow: only the low byte
// varies) over every slot, and so over every uplink; so they do the
// generator applications of a ToR (source address's last octet), the
// destination ToRs and destination ports. The hash's low six bits, the
// obvious choice, do not: a CRC is linear, and they take only three
// bits' worth of a byte followed by two more.
func TestFlowSlotSpreadsFlows(t *testing.T) {
	src, dst := SourceAddr(1, 0), HostAddr(2)
	count := func(n int, tuple func(i int) (uint32, uint32, uint16, uint16), slot func(h uint16) int) (slots int, perLink [4]int) {
		seen := map[int]bool{}
		for i := 0; i < n; i++ {
			s, d, sp, dp := tuple(i)
			x := slot(FlowHash(s, d, 17, sp, dp))
			seen[x] = true
			perLink[x%4]++
		}
		return len(seen), perLink
	}
	ours := func(h uint16) int { return int(h>>SlotShift) % Slots }
	low := func(h uint16) int { return int(h) % Slots }
	for name, tuple := range map[string]func(i int) (uint32, uint32, uint16, uint16){
		"flow": func(i int) (uint32, uint32, uint16, uint16) { return src, dst, uint16(FlowPortBase + i), FlowDstPort },
		"source": func(i int) (uint32, uint32, uint16, uint16) {
			return src&^0xff | uint32(i), dst, FlowPortBase, FlowDstPort
		},
		"destination ToR":  func(i int) (uint32, uint32, uint16, uint16) { return src, HostAddr(i), FlowPortBase, FlowDstPort },
		"destination port": func(i int) (uint32, uint32, uint16, uint16) { return src, dst, FlowPortBase, uint16(5000 + i) },
	} {
		slots, links := count(256, tuple, ours)
		if slots != Slots || links != [4]int{64, 64, 64, 64} {
			t.Errorf("256 values of the %s: %d of %d slots, %v frames over 4 links round robin", name, slots, Slots, links)
		}
	}
	s1, l1 := count(256, func(i int) (uint32, uint32, uint16, uint16) { return src, dst, uint16(FlowPortBase + i), FlowDstPort }, low)
	if s1 != 8 || l1[2]+l1[3] != 0 {
		t.Errorf("the low six bits: %d slots, %v over 4 links (the reason for SlotShift)", s1, l1)
	}
	for i := 0; i < MaxFlows; i++ {
		if got, want := FlowSlot(src, dst, 17, uint16(FlowPortBase+i), FlowDstPort), ours(FlowHash(src, dst, 17, uint16(FlowPortBase+i), FlowDstPort)); got != want || got < 0 || got >= Slots {
			t.Fatalf("FlowSlot of flow %d = %d, want %d", i, got, want)
		}
	}
}

func TestAddresses(t *testing.T) {
	if got := HostAddr(7); got != 0x0a000701 {
		t.Errorf("HostAddr(7) = %#08x, want 10.0.7.1", got)
	}
	if got := SourceAddr(7, 0); got != 0x0a000702 {
		t.Errorf("SourceAddr(7, 0) = %#08x, want 10.0.7.2", got)
	}
	if HostAddr(7)>>8 != SourceAddr(7, 3)>>8 {
		t.Error("a ToR's generator and host addresses are not in one /24")
	}
}

func TestGeneratorBufferRoundTrip(t *testing.T) {
	g := Generator{SrcMAC: [6]byte{0x02, 0x74, 0x62, 1, 0, 0}, SrcAddr: SourceAddr(4, 1)}
	for _, frame := range []int{HeadersBytes + 4, 64, 1518, 9216} {
		b, err := g.Buffer(frame)
		if err != nil {
			t.Fatalf("%d B: %v", frame, err)
		}
		if len(b) != GeneratorBufferBytes {
			t.Fatalf("%d B frame: buffer of %d bytes, want %d", frame, len(b), GeneratorBufferBytes)
		}
		got, n, err := ParseGeneratorBuffer(b)
		if err != nil || got != g || n != frame {
			t.Errorf("%d B: parsed %+v, %d B, %v", frame, got, n, err)
		}
		if ipChecksum(b[8:28]) != 0 {
			t.Errorf("%d B: IPv4 header checksum does not verify", frame)
		}
		if l := binary.BigEndian.Uint16(b[32:]); int(l) != frame-HeadersBytes-4+8 {
			t.Errorf("%d B: UDP length %d", frame, l)
		}
	}
}

func TestGeneratorBufferErrors(t *testing.T) {
	g := Generator{SrcAddr: SourceAddr(1, 0)}
	for _, frame := range []int{HeadersBytes + 3, 0, 9217} {
		if _, err := g.Buffer(frame); err == nil || !strings.Contains(err.Error(), "generator frame") {
			t.Errorf("%d B frame: %v", frame, err)
		}
	}
	good, err := g.Buffer(128)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		mutate func([]byte) []byte
		want   string
	}{
		"short":        {func(b []byte) []byte { return b[:GeneratorBufferBytes-1] }, "35 bytes"},
		"not IPv4":     {func(b []byte) []byte { b[6], b[7] = 0x86, 0xdd; return b }, "EtherType 0x86dd"},
		"IPv4 options": {func(b []byte) []byte { b[8] = 0x46; return b }, "version/IHL"},
		"not UDP":      {func(b []byte) []byte { b[17] = 6; return b }, "protocol 6"},
	} {
		b := c.mutate(append([]byte(nil), good...))
		if _, _, err := ParseGeneratorBuffer(b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
}

// A class is the DSCP's class selector (RFC 2474: CSn is DSCP n<<3), ECN
// left 0, and the switches read the class back from those bits whatever
// the DSCP's low three bits hold.
func TestClassIsTheDSCPClassSelector(t *testing.T) {
	for tc := 0; tc < Classes; tc++ {
		b := Diffserv(tc)
		if dscp, ecn := b>>2, b&3; int(dscp) != tc<<3 || ecn != 0 {
			t.Errorf("class %d: diffserv %#02x, DSCP %d ECN %d; want DSCP %d (CS%d), ECN 0", tc, b, dscp, ecn, tc<<3, tc)
		}
		if got := ClassOf(b); got != tc {
			t.Errorf("ClassOf(Diffserv(%d)) = %d", tc, got)
		}
	}
	// AF41 (DSCP 34) is in class 4; EF (46) in class 5.
	if ClassOf(34<<2) != 4 || ClassOf(46<<2|1) != 5 {
		t.Errorf("AF41 in class %d, EF in class %d; want 4 and 5", ClassOf(34<<2), ClassOf(46<<2|1))
	}
}
