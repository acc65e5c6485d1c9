package ecmp

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand"
	"os"
	"slices"
	"strings"
	"testing"

	"testbed/p4/internal/decl"
	"testbed/p4/internal/p4check"
)

// The P4 source is compiled by the lab's SDE, not here. These tests read
// it far enough (with the shared reader in p4/internal/p4check) to hold it
// to this package's contract: every name the control plane uses is
// declared, with that name, as that kind of object, in the control the
// contract says; the headers, constants, extern instances and the hash's
// field list are the ones the contract's Go code assumes. A change on
// either side fails them.

type bitField struct {
	name string
	bits int
}

// layout is a header's fields with their widths.
func layout(p *p4check.Program, header string) ([]bitField, error) {
	fields, ok := p.Headers[header]
	if !ok {
		return nil, fmt.Errorf("no header %s", header)
	}
	var out []bitField
	for _, f := range fields {
		w, err := p.Width(f.Type)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %v", header, f.Name, err)
		}
		out = append(out, bitField{f.Name, w})
	}
	return out, nil
}

func totalBits(fs []bitField) int {
	n := 0
	for _, f := range fs {
		n += f.bits
	}
	return n
}

// The headers as the contract's Go code lays them out (Buffer,
// ParseGeneratorBuffer, FlowHash, HeadersBytes).
var wantHeaders = map[string][]bitField{
	"ethernet_h":           {{"dst_addr", 48}, {"src_addr", 48}, {"ether_type", 16}},
	"remaining_ethernet_h": {{"src_addr", 48}, {"ether_type", 16}},
	"ipv4_h": {{"version", 4}, {"ihl", 4}, {"diffserv", 8}, {"total_len", 16}, {"identification", 16}, {"flags", 3},
		{"frag_offset", 13}, {"ttl", 8}, {"protocol", 8}, {"hdr_checksum", 16}, {"src_addr", 32}, {"dst_addr", 32}},
	"udp_h": {{"src_port", 16}, {"dst_port", 16}, {"length", 16}, {"checksum", 16}},
}

// checkLayout holds the program's headers and constants to the contract.
func checkLayout(p *p4check.Program) []error {
	var errs []error
	failf := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	got := map[string][]bitField{}
	for h, want := range wantHeaders {
		fs, err := layout(p, h)
		if err != nil {
			failf("%v", err)
			continue
		}
		got[h] = fs
		if !slices.Equal(fs, want) {
			failf("%s is %v, the contract lays it out as %v", h, fs, want)
		}
	}
	if n := totalBits(got["ethernet_h"]) + totalBits(got["ipv4_h"]) + totalBits(got["udp_h"]); n != HeadersBytes*8 {
		failf("Ethernet, IPv4 and UDP headers are %d bits, the contract says HeadersBytes = %d", n, HeadersBytes)
	}
	// The packet generator's header (TNA's pktgen_timer_header_t, 6 B)
	// replaces the destination MAC; the buffer holds the rest.
	if n := totalBits(got["remaining_ethernet_h"]) + totalBits(got["ipv4_h"]) + totalBits(got["udp_h"]); n != GeneratorBufferBytes*8 {
		failf("the generator's headers after its own are %d bits, the contract says GeneratorBufferBytes = %d", n, GeneratorBufferBytes)
	}
	// The ingress headers in the order the deparser emits them: the
	// bridged header first (egress parses it ahead of the frame), the
	// generator's headers before the Ethernet header they become.
	var order []string
	for _, f := range p.Structs["ecmp_headers_t"] {
		order = append(order, f.Type+" "+f.Name)
	}
	if want := []string{"ecmp_bridge_h bridge", "pktgen_timer_header_t pktgen_timer", "remaining_ethernet_h remaining_ethernet",
		"ethernet_h ethernet", "ipv4_h ipv4", "udp_h udp"}; !slices.Equal(order, want) {
		failf("ecmp_headers_t is %q, want %q", order, want)
	}
	for name, want := range map[string]int64{
		"ECMP_SLOTS":          Slots,
		"ECMP_MAX_FLOWS":      MaxFlows,
		"ECMP_MAX_TORS":       MaxToRs,
		"ECMP_FLOW_PORT_BASE": FlowPortBase,
		"ECMP_FLOW_DST_PORT":  FlowDstPort,
		"ETHERTYPE_IPV4":      0x0800,
		"IP_PROTO_UDP":        17,
		"ECMP_PKTGEN_PORT":    PktgenPort,
	} {
		if v, err := p.Value(name); err != nil || v != want {
			failf("%s = %d (%v), the contract says %d", name, v, err, want)
		}
	}
	return errs
}

// checkExterns holds the program's extern instances to the contract: the
// flow registers hold MaxFlows 32-bit counters indexed by a flow number,
// the slot draws are as wide as Slots needs, the hash is a 16-bit CRC16,
// and the tables are keyed by what the control plane writes.
func checkExterns(p *p4check.Program) []error {
	var errs []error
	failf := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	one := func(control, name, typ string) (p4check.Instance, bool) {
		c, ok := p.Controls[control]
		if !ok {
			failf("no control %s", control)
			return p4check.Instance{}, false
		}
		is := c.Instances[name]
		if len(is) != 1 || is[0].Type != typ {
			failf("%s: no single %s %s", control, typ, name)
			return p4check.Instance{}, false
		}
		return is[0], true
	}
	for _, reg := range []string{RegFlowSent, RegFlowRcvd, RegFlowFirst, RegFlowLast} {
		c, n := decl.SplitQualified("", reg)
		in, ok := one(c, n, "Register")
		if !ok {
			continue
		}
		targs := p4check.SplitTop(in.TypeArgs, ",")
		if len(targs) != 2 {
			failf("%s: Register<%s>: want a value and an index type", reg, p4check.Join(in.TypeArgs))
			continue
		}
		if w, err := p.Width(p4check.Join(targs[0])); err != nil || w != 32 {
			failf("%s holds %s (%d bits, %v), the contract reads 32-bit values", reg, p4check.Join(targs[0]), w, err)
		}
		if w, err := p.Width(p4check.Join(targs[1])); err != nil || 1<<w != MaxFlows {
			failf("%s is indexed by %s (%d bits, %v), the contract has %d flows", reg, p4check.Join(targs[1]), w, err, MaxFlows)
		}
		args := in.Args()
		if len(args) != 2 {
			failf("%s: Register(%q): want a size and an initial value", reg, args)
			continue
		}
		if v, err := p.Value(args[0]); err != nil || v != MaxFlows {
			failf("%s has %s = %d entries (%v), the contract says MaxFlows = %d", reg, args[0], v, err, MaxFlows)
		}
		if args[1] != "0" {
			failf("%s starts at %s, the control plane reads 0 as no frame yet", reg, args[1])
		}
	}
	for _, name := range []string{"gen_rng", "spray_rng"} {
		in, ok := one(ControlIngress, name, "Random")
		if !ok {
			continue
		}
		if w, err := p.Width(p4check.Join(in.TypeArgs)); err != nil || 1<<w != Slots {
			failf("%s: Random<%s> draws %d bits (%v), the contract has %d slots", name, p4check.Join(in.TypeArgs), w, err, Slots)
		}
	}
	if in, ok := one(ControlIngress, "flow_hash", "Hash"); ok {
		if w, err := p.Width(p4check.Join(in.TypeArgs)); err != nil || w != 16 {
			failf("flow_hash: Hash<%s>, the contract's FlowHash is 16 bits (%v)", p4check.Join(in.TypeArgs), err)
		}
		if args := in.Args(); !slices.Equal(args, []string{"HashAlgorithm_t.CRC16"}) {
			failf("flow_hash: Hash(%q), the contract's FlowHash is HashAlgorithm_t.CRC16", args)
		}
		if bits.Len(uint(Slots-1)) > 16 {
			failf("%d slots need more bits than the hash has", Slots)
		}
	}
	ig := p4check.Join(p.Controls[ControlIngress].Body)
	for _, want := range []string{
		// route and ecmp_slot are keyed by the destination ToR, the
		// destination address's third octet (HostAddr).
		`hdr.ipv4.dst_addr[15:8]:exact@name("dst");`,
		`ig_md.gen_slot:exact@name("slot");`,
		`hdr.pktgen_timer.app_id:exact@name("app_id");`,
		// to_flow: HostAddr and FlowPortBase+flow.
		`hdr.ipv4.dst_addr=8w10++8w0++dst++8w1;`,
		`hdr.udp.src_port=ECMP_FLOW_PORT_BASE+(bit<16>)flow;`,
		"size=ECMP_MAX_TORS;",
	} {
		if !strings.Contains(ig, want) {
			failf("SwitchIngress has no %s", want)
		}
	}
	// ecmp_slot's slot is FlowSlot's bits of the hash, and a sprayed
	// frame's draw is put there.
	w := bits.Len(uint(Slots - 1))
	if want := fmt.Sprintf(`ig_md.hash[%d:%d]:exact@name("slot");`, SlotShift+w-1, SlotShift); !strings.Contains(ig, want) {
		failf("SwitchIngress has no %s (FlowSlot's bits)", want)
	}
	if want := fmt.Sprintf("ig_md.hash=(bit<16>)spray_rng.get()<<%d;", SlotShift); !strings.Contains(ig, want) {
		failf("SwitchIngress has no %s", want)
	}
	// The traffic class: to_flow's tc is Classes wide and written as the
	// DSCP's class selector (Diffserv); every switch takes the queue and
	// the ingress class of service from those bits (ClassOf), for every
	// frame it forwards.
	if w, err := p.Width("tc_t"); err != nil || 1<<w != Classes || w+ClassShift != 8 {
		failf("tc_t is %d bits (%v), the contract has %d classes in the diffserv byte's top bits from bit %d", w, err, Classes, ClassShift)
	}
	cls := fmt.Sprintf("hdr.ipv4.diffserv[7:%d]", ClassShift)
	for _, want := range []string{
		fmt.Sprintf("hdr.ipv4.diffserv=tc++%dw0;", ClassShift),
		"ig_tm_md.qid=(QueueId_t)" + cls + ";",
		"ig_tm_md.ingress_cos=" + cls + ";",
		"ecmp_slot.apply();}set_class();",
	} {
		if !strings.Contains(ig, want) {
			failf("SwitchIngress has no %s", want)
		}
	}
	return errs
}

// hashFields is the field list flow_hash.get hashes, as written.
func hashFields(p *p4check.Program) ([]string, error) {
	ig := p4check.Join(p.Controls[ControlIngress].Body)
	const call = "flow_hash.get({"
	i := strings.Index(ig, call)
	if i < 0 || strings.Count(ig, call) != 1 {
		return nil, fmt.Errorf("SwitchIngress calls flow_hash.get({...}) %d times, want once", strings.Count(ig, call))
	}
	rest := ig[i+len(call):]
	j := strings.Index(rest, "})")
	if j < 0 {
		return nil, fmt.Errorf("flow_hash.get: field list never closed")
	}
	return strings.Split(rest[:j], ","), nil
}

// fieldWidth is the width of hdr.<header>.<field> in the ingress headers.
func fieldWidth(p *p4check.Program, ref string) (int, error) {
	parts := strings.Split(ref, ".")
	if len(parts) != 3 || parts[0] != "hdr" {
		return 0, fmt.Errorf("%s: not a header field", ref)
	}
	for _, f := range p.Structs["ecmp_headers_t"] {
		if f.Name != parts[1] {
			continue
		}
		fs, err := layout(p, f.Type)
		if err != nil {
			return 0, err
		}
		for _, x := range fs {
			if x.name == parts[2] {
				return x.bits, nil
			}
		}
	}
	return 0, fmt.Errorf("%s: no such field", ref)
}

// pack concatenates values of the given widths, most significant bit
// first, as a field list is hashed.
func pack(widths []int, vals []uint64) []byte {
	var out []byte
	var acc uint64
	n := 0
	for k, w := range widths {
		for b := w - 1; b >= 0; b-- {
			acc = acc<<1 | (vals[k]>>b)&1
			if n++; n == 8 {
				out = append(out, byte(acc))
				acc, n = 0, 0
			}
		}
	}
	return out
}

// ---- tests ----

func loadProgram(t *testing.T) map[string]*p4check.Program {
	return p4check.LoadAll(t, MainFile, Program)
}

var reportAll = p4check.Report

func TestProgramDeclaresTheContractNames(t *testing.T) {
	reportAll(t, p4check.CheckDeclarations(loadProgram(t), Declarations()))
}

func TestHeadersMatchTheContract(t *testing.T) {
	reportAll(t, checkLayout(loadProgram(t)[Program]))
}

func TestExternsMatchTheContract(t *testing.T) {
	reportAll(t, checkExterns(loadProgram(t)[Program]))
}

func TestProgramIsWired(t *testing.T) {
	reportAll(t, p4check.CheckWiring(MainFile(Program), loadProgram(t)[Program]))
}

// FlowHash is the program's hash: the CRC16 of the fields flow_hash.get
// lists, in its order and at the widths the headers give them, packed as
// a field list is hashed.
func TestFlowHashIsTheProgramsFieldList(t *testing.T) {
	p := loadProgram(t)[Program]
	fields, err := hashFields(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"hdr.ipv4.src_addr", "hdr.ipv4.dst_addr", "hdr.ipv4.protocol", "hdr.udp.src_port", "hdr.udp.dst_port"}
	if !slices.Equal(fields, want) {
		t.Fatalf("flow_hash hashes %q, FlowHash %q", fields, want)
	}
	widths := make([]int, len(fields))
	for k, f := range fields {
		if widths[k], err = fieldWidth(p, f); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewSource(1))
	for range 200 {
		src, dst := rng.Uint32(), rng.Uint32()
		proto, sport, dport := uint8(rng.Intn(256)), uint16(rng.Intn(65536)), uint16(rng.Intn(65536))
		b := pack(widths, []uint64{uint64(src), uint64(dst), uint64(proto), uint64(sport), uint64(dport)})
		if got, want := FlowHash(src, dst, proto, sport, dport), crc16(b); got != want {
			t.Fatalf("FlowHash(%#x, %#x, %d, %d, %d) = %#04x, the program's field list gives %#04x", src, dst, proto, sport, dport, got, want)
		}
	}
}

// A generator buffer, read with the program's own header declarations
// from where the parser starts after the generator's header, holds what
// the parser selects on and what to_flow leaves alone.
func TestGeneratorBufferParsesAsTheProgramReadsIt(t *testing.T) {
	p := loadProgram(t)[Program]
	g := Generator{SrcMAC: [6]byte{2, 0, 0, 0, 3, 4}, SrcAddr: SourceAddr(3, 1)}
	const frame = 256
	b, err := g.Buffer(frame)
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]uint64{}
	off := 0 // bits
	for _, h := range []string{"remaining_ethernet_h", "ipv4_h", "udp_h"} {
		fs, err := layout(p, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			var v uint64
			for k := 0; k < f.bits; k++ {
				bit := off + k
				if bit/8 >= len(b) {
					t.Fatalf("%s.%s runs past the %d B buffer", h, f.name, len(b))
				}
				v = v<<1 | uint64(b[bit/8]>>(7-bit%8))&1
			}
			vals[h+"."+f.name] = v
			off += f.bits
		}
	}
	if off != len(b)*8 {
		t.Errorf("the headers take %d bits of a %d B buffer", off, len(b))
	}
	must := func(name string) uint64 {
		v, err := p.Value(name)
		if err != nil {
			t.Fatal(err)
		}
		return uint64(v)
	}
	for field, want := range map[string]uint64{
		"remaining_ethernet_h.src_addr":   0x020000000304,
		"remaining_ethernet_h.ether_type": must("ETHERTYPE_IPV4"),
		"ipv4_h.version":                  4,
		"ipv4_h.ihl":                      5,
		"ipv4_h.protocol":                 must("IP_PROTO_UDP"),
		"ipv4_h.total_len":                frame - 14 - 4,
		"ipv4_h.src_addr":                 0x0a000303,
		"udp_h.dst_port":                  must("ECMP_FLOW_DST_PORT"),
		"udp_h.length":                    frame - 14 - 4 - 20,
		"udp_h.checksum":                  0,
	} {
		if vals[field] != want {
			t.Errorf("%s = %#x, want %#x", field, vals[field], want)
		}
	}
	// The header checksum the buffer carries is valid (the deparser
	// recomputes it after to_flow writes the destination).
	if s := ipChecksum(b[8:28]); s != 0 {
		t.Errorf("IPv4 header checksum does not verify: %#04x", s)
	}
}

// A name changed on the contract side is caught.
func TestContractRenameIsCaught(t *testing.T) {
	progs := loadProgram(t)
	for name, mutate := range map[string]func(*decl.Declaration) bool{
		"table renamed": func(d *decl.Declaration) bool {
			if d.Kind == decl.KindTable && d.QualifiedName() == TableRoute {
				d.Name = "routes"
				return true
			}
			return false
		},
		"register moved": func(d *decl.Declaration) bool {
			if d.Kind == decl.KindRegister && d.QualifiedName() == RegFlowSent {
				d.Control = ControlEgress
				return true
			}
			return false
		},
		"parameter renamed": func(d *decl.Declaration) bool {
			if d.Kind == decl.KindAction && d.Name == ActionToFlow {
				d.Params = []string{"tor", "flow"}
				return true
			}
			return false
		},
		"action of another table": func(d *decl.Declaration) bool {
			if d.Kind == decl.KindAction && d.Name == ActionECMPSpray {
				d.Table = TableECMPSlot
				return true
			}
			return false
		},
		"key renamed": func(d *decl.Declaration) bool {
			if d.Kind == decl.KindTable && d.QualifiedName() == TableECMPSlot {
				d.Keys = []string{"dst", "index"}
				return true
			}
			return false
		},
	} {
		t.Run(name, func(t *testing.T) {
			decls := Declarations()
			hit := 0
			for k := range decls {
				if mutate(&decls[k]) {
					hit++
				}
			}
			if hit != 1 {
				t.Fatalf("the mutation applied to %d declarations, want 1", hit)
			}
			if errs := p4check.CheckDeclarations(progs, decls); len(errs) == 0 {
				t.Error("went unnoticed")
			}
		})
	}
}

// A name, layout, constant or extern changed on the P4 side is caught.
func TestSourceChangeIsCaught(t *testing.T) {
	type check int
	const (
		names check = iota
		headers
		externs
		hash
	)
	for _, c := range []struct {
		name, old, new string
		by             check
	}{
		{"table", "table ecmp_slot {", "table ecmp_slots {", names},
		{"action parameter", "action to_host(PortId_t port)", "action to_host(PortId_t egress)", names},
		{"egress register", ") reg_flow_last_ns;", ") reg_flow_last;", names},
		{"key", `hdr.pktgen_timer.app_id : exact @name("app_id");`, `hdr.pktgen_timer.app_id : exact @name("app");`, names},
		{"field width", "bit<16> dst_port;", "bit<8> dst_port;", headers},
		{"field order", "ipv4_addr_t src_addr;\n    ipv4_addr_t dst_addr;", "ipv4_addr_t dst_addr;\n    ipv4_addr_t src_addr;", headers},
		{"register size", "Register<bit<32>, flow_t>(ECMP_MAX_FLOWS, 0) reg_flow_rcvd;", "Register<bit<32>, flow_t>(128, 0) reg_flow_rcvd;", externs},
		{"register index", "typedef bit<8>  flow_t;", "typedef bit<7>  flow_t;", externs},
		{"random width", "typedef bit<6>  slot_t;", "typedef bit<5>  slot_t;", externs},
		{"hash algorithm", "Hash<bit<16>>(HashAlgorithm_t.CRC16) flow_hash;", "Hash<bit<16>>(HashAlgorithm_t.CRC32) flow_hash;", externs},
		{"slot bits", "ig_md.hash[11:6]        : exact", "ig_md.hash[5:0]         : exact", externs},
		{"spray bits", "spray_rng.get() << 6;", "spray_rng.get();", externs},
		{"class in the DSCP", "hdr.ipv4.diffserv = tc ++ 5w0;", "hdr.ipv4.diffserv = 5w0 ++ tc;", externs},
		{"queue not from the class", "ig_tm_md.qid = (QueueId_t)hdr.ipv4.diffserv[7:5];", "ig_tm_md.qid = 0;", externs},
		{"class not set", "            set_class();\n", "", externs},
		{"class width", "typedef bit<3>  tc_t;", "typedef bit<2>  tc_t;", externs},
		{"class parameter", "action to_flow(tor_id_t dst, flow_t flow, tc_t tc)", "action to_flow(tor_id_t dst, flow_t flow)", names},
		{"flow port", "ECMP_FLOW_PORT_BASE + (bit<16>)flow;", "ECMP_FLOW_PORT_BASE + (bit<16>)flow + 1;", externs},
		{"hash field order", "hdr.udp.src_port,\n            hdr.udp.dst_port\n", "hdr.udp.dst_port,\n            hdr.udp.src_port\n", hash},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, err := p4check.Load(MainFile(Program))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(src.Text, c.old) != 1 {
				t.Fatalf("%q occurs %d times, want 1", c.old, strings.Count(src.Text, c.old))
			}
			src.Text = strings.Replace(src.Text, c.old, c.new, 1)
			p, err := p4check.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			var errs []error
			switch c.by {
			case names:
				errs = p4check.CheckDeclarations(map[string]*p4check.Program{Program: p}, Declarations())
			case headers:
				errs = checkLayout(p)
			case externs:
				errs = checkExterns(p)
			case hash:
				if f, err := hashFields(p); err != nil || f[3] != "hdr.udp.src_port" {
					errs = append(errs, fmt.Errorf("field list %q", f))
				}
			}
			if len(errs) == 0 {
				t.Errorf("replacing %q with %q went unnoticed", c.old, c.new)
			}
		})
	}
	for name, val := range map[string]string{"ECMP_FLOW_DST_PORT": "5002", "ECMP_SLOTS": "32", "ECMP_FLOW_PORT_BASE": "49153"} {
		src, err := p4check.Load(MainFile(Program))
		if err != nil {
			t.Fatal(err)
		}
		src.Defines[name] = val
		p, err := p4check.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		if len(checkLayout(p)) == 0 {
			t.Errorf("%s %s went unnoticed", name, val)
		}
	}
}

// Every name constant of contract.go (Table*, Action*, Reg*) is in
// Declarations, so a name added to the contract is checked too.
func TestDeclarationsCoverTheContract(t *testing.T) {
	n, errs, err := p4check.CheckContractNames("contract.go", Declarations())
	if err != nil {
		t.Fatal(err)
	}
	reportAll(t, errs)
	if n != 15 {
		t.Errorf("found %d name constants in contract.go, want 15", n)
	}
}

func TestSourcesEmbedTheProgram(t *testing.T) {
	src := Sources()
	onDisk, err := os.ReadFile(MainFile(Program))
	if err != nil {
		t.Fatal(err)
	}
	if string(src[MainFile(Program)]) != string(onDisk) || len(src) != 1 {
		t.Errorf("Sources() holds %d files; %s not the file on disk", len(src), MainFile(Program))
	}
}

// pack is the field-list packing the hash test relies on.
func TestPack(t *testing.T) {
	if got := pack([]int{4, 4, 16}, []uint64{4, 5, 0xbeef}); !slices.Equal(got, []byte{0x45, 0xbe, 0xef}) {
		t.Errorf("% x", got)
	}
	b := pack([]int{32, 16}, []uint64{0x0a000701, 49153})
	if binary.BigEndian.Uint32(b) != 0x0a000701 || binary.BigEndian.Uint16(b[4:]) != 49153 {
		t.Errorf("% x", b)
	}
}
