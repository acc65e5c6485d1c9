package tofino

import (
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"testbed/p4/ecmp"
	"testbed/simlab/physics"
	"testbed/simlab/world"
)

// A small ecmp leaf-spine for the tests, driven through the agent
// protocol: ToRs (ids 0..) with a 100G host port 176 and an uplink
// 136+8j to spine j, a spine's port 136+8i to ToR i, joined by 10 m
// fibres (50 ns); tor1's uplink fibres run through VOA channels. Every
// ToR delivers its own id to its host port; every spine sends ToR i down
// its port to it (ecmp_hash over one member).
type ecBench struct {
	t      testing.TB
	dp     *Dataplane
	w      *world.World
	tors   []*Tofino
	spines []*Tofino
	conns  map[*Tofino]*agentConn
	voa    *world.VOA
	nreq   int
}

const (
	ecHostPort = 176
	ecPktLen   = 1020 // 1024 B frames with the FCS
	ecWireBits = (ecPktLen + 4 + 20) * 8
)

func ecUplink(j int) int { return 136 + 8*j }

func newECBench(t testing.TB, seed uint64, nToR, nSpine int, upSpeed string) *ecBench {
	t.Helper()
	w := world.New(seed)
	b := &ecBench{t: t, w: w, dp: NewDataplane(w), conns: map[*Tofino]*agentConn{}}
	tr, err := physics.TransceiverByName("100GBASE-SR4")
	if err != nil {
		t.Fatal(err)
	}
	none, err := physics.FECByName("none")
	if err != nil {
		t.Fatal(err)
	}
	b.voa = w.NewVOA("voa1", "sim", "N7764A", "1", "1", nSpine, 0, 60, 0, 1e9)
	for i := 0; i < nToR; i++ {
		b.tors = append(b.tors, newSDSwitch(b.dp, fmt.Sprintf("tor%d", i+1), ecmp.Program))
	}
	for j := 0; j < nSpine; j++ {
		b.spines = append(b.spines, newSDSwitch(b.dp, fmt.Sprintf("spine%d", j+1), ecmp.Program))
	}
	for _, sw := range append(append([]*Tofino{}, b.tors...), b.spines...) {
		b.conns[sw] = dialAgent(t, sw)
		b.ok(sw, "auth", `{"token":"tok"}`)
	}
	for j, sp := range b.spines {
		b.ok(sp, "table.add", fmt.Sprintf(`{"name":%q,"key":{},"action":"set_id","data":{"id":%d}}`, ecmp.TableWhoami, 200+j))
	}
	for i, tor := range b.tors {
		b.ok(tor, "port.add", fmt.Sprintf(`{"dev_port":%d,"speed":"BF_SPEED_100G","fec":"BF_FEC_TYP_NONE"}`, ecHostPort))
		b.ok(tor, "table.add", fmt.Sprintf(`{"name":%q,"key":{},"action":"set_id","data":{"id":%d}}`, ecmp.TableWhoami, i))
		b.ok(tor, "table.add", fmt.Sprintf(`{"name":%q,"key":{"dst":%d},"action":"to_host","data":{"port":%d}}`, ecmp.TableRoute, i, ecHostPort))
		for j, sp := range b.spines {
			up, down := ecUplink(j), ecUplink(i)
			b.ok(tor, "port.add", fmt.Sprintf(`{"dev_port":%d,"speed":%q,"fec":"BF_FEC_TYP_NONE"}`, up, upSpeed))
			b.ok(sp, "port.add", fmt.Sprintf(`{"dev_port":%d,"speed":%q,"fec":"BF_FEC_TYP_NONE"}`, down, upSpeed))
			var ch *world.VOAChannel
			if i == 0 {
				ch = b.voa.Channels[j]
			}
			f := w.NewFibre(fmt.Sprintf("%s-%s", tor.name, sp.name), tr, none, 0.5, 0.5, ch)
			f.LengthM = 10
			r := w.NewFibre(fmt.Sprintf("%s-%s (b->a)", tor.name, sp.name), tr, none, 1, 0, nil)
			r.LengthM = 10
			b.dp.Connect(f.Name, tor, up, sp, down, f, 0)
			b.dp.Connect(r.Name, sp, down, tor, up, r, 0)
			b.ok(sp, "table.add", fmt.Sprintf(`{"name":%q,"key":{"dst":%d},"action":"ecmp_hash","data":{}}`, ecmp.TableRoute, i))
			for s := 0; s < ecmp.Slots; s++ {
				b.ok(sp, "table.add", fmt.Sprintf(`{"name":%q,"key":{"dst":%d,"slot":%d},"action":"to_link","data":{"link":%d}}`, ecmp.TableECMPSlot, i, s, down))
			}
		}
	}
	return b
}

// route makes ToR src reach ToR dst by action (ecmp_hash or ecmp_spray)
// over its uplinks, slot s on uplink s mod the spines, as the control
// plane spreads an ECMP group's members over the slots.
func (b *ecBench) route(src, dst int, action string) {
	b.ok(b.tors[src], "table.add", fmt.Sprintf(`{"name":%q,"key":{"dst":%d},"action":%q,"data":{}}`, ecmp.TableRoute, dst, action))
	for s := 0; s < ecmp.Slots; s++ {
		b.ok(b.tors[src], "table.add", fmt.Sprintf(`{"name":%q,"key":{"dst":%d,"slot":%d},"action":"to_link","data":{"link":%d}}`, ecmp.TableECMPSlot, dst, s, ecUplink(s%len(b.spines))))
	}
}

// flows gives application id of ToR src the flows to ToR dst, over the
// gen_flow slots in turn.
func (b *ecBench) flows(src, id, dst int, flows ...int) {
	for s := 0; s < ecmp.Slots; s++ {
		b.ok(b.tors[src], "table.add", fmt.Sprintf(`{"name":%q,"key":{"app_id":%d,"slot":%d},"action":"to_flow","data":{"dst":%d,"flow":%d}}`,
			ecmp.TableGenFlow, id, s, dst, flows[s%len(flows)]))
	}
}

// app starts application id on ToR src: a 1024 B frame every timerNs for
// frames frames, its buffer the ToR's source address for id.
func (b *ecBench) app(src, id int, timerNs, frames int64) {
	b.t.Helper()
	buf, err := ecmp.Generator{SrcMAC: [6]byte{2, 0, 0, 0, byte(src), byte(id)}, SrcAddr: ecmp.SourceAddr(src, id)}.Buffer(ecPktLen + 4)
	if err != nil {
		b.t.Fatal(err)
	}
	b.ok(b.tors[src], "pktgen.start", fmt.Sprintf(`{"app_id":%d,"egress_port":%d,"pkt_len":%d,"timer_ns":%d,"batches":%d,"packets_per_batch":1,"buffer_hex":%q}`,
		id, ecHostPort, ecPktLen, timerNs, frames, hex.EncodeToString(buf)))
}

// slotOf is the ECMP slot ToR src's application id's frames of flow to
// ToR dst hash to.
func slotOf(src, id, dst, flow int) int {
	return ecmp.FlowSlot(ecmp.SourceAddr(src, id), ecmp.HostAddr(dst), 17, uint16(ecmp.FlowPortBase+flow), ecmp.FlowDstPort)
}

func (b *ecBench) req(sw *Tofino, op, args string) map[string]any {
	b.t.Helper()
	b.nreq++
	return b.conns[sw].send(b.t, fmt.Sprintf(`{"id":%d,"op":%q,"args":%s}`, b.nreq, op, args))
}

func (b *ecBench) ok(sw *Tofino, op, args string) map[string]any {
	b.t.Helper()
	r := b.req(sw, op, args)
	if r["ok"] != true {
		b.t.Fatalf("%s %s %s: %v", sw.name, op, args, r)
	}
	res, _ := r["result"].(map[string]any)
	return res
}

func (b *ecBench) wait(until time.Duration) {
	b.t.Helper()
	b.ok(b.tors[0], "time.wait", fmt.Sprintf(`{"until_ns":%d}`, until.Nanoseconds()))
}

func (b *ecBench) reg(sw *Tofino, name string, idx int) int64 {
	b.t.Helper()
	res := b.ok(sw, "reg.get", fmt.Sprintf(`{"name":%q,"index":%d}`, name, idx))
	var sum int64
	for _, v := range res["values"].([]any) {
		sum += int64(v.(float64))
	}
	return sum
}

func (b *ecBench) counter(sw *Tofino, port int, name string) int64 {
	b.t.Helper()
	res := b.ok(sw, "port.stat", fmt.Sprintf(`{"dev_port":%d}`, port))
	return int64(res["counters"].(map[string]any)[name].(float64))
}

// queue reads tm.queue for queue 0 of a dev port: drops, watermark cells.
func (b *ecBench) queue(sw *Tofino, port int) (drops, watermark int64) {
	b.t.Helper()
	q := b.ok(sw, "tm.queue", fmt.Sprintf(`{"pipe":%d,"pg_id":%d,"pg_queue":%d}`, port>>7, port&127>>2, port&3*8))
	return int64(q["drop_count_packets"].(float64)), int64(q["watermark_cells"].(float64))
}

func (b *ecBench) generated(sw *Tofino, id int) int64 {
	b.t.Helper()
	return int64(b.ok(sw, "pktgen.status", fmt.Sprintf(`{"app_id":%d}`, id))["packets"].(float64))
}

// flowGbps is a flow's rate at ToR dst's host port, from its registers:
// the frames after the first over the time from first to last.
func (b *ecBench) flowGbps(dst, flow int) (rcvd int64, gbps float64) {
	n := b.reg(b.tors[dst], ecmp.RegFlowRcvd, flow)
	first := b.reg(b.tors[dst], ecmp.RegFlowFirst, flow)
	last := b.reg(b.tors[dst], ecmp.RegFlowLast, flow)
	if n < 2 || last <= first {
		return n, 0
	}
	return n, float64((n-1)*ecWireBits) / float64(last-first)
}

// Two flows ECMP hashes onto the same 25G uplink share it: each gets half
// what a flow alone on another uplink gets, and the shared uplink's queue
// drops the rest. Flows A and B come from one application at 50G (a
// slot drawn per frame picks the flow), flow C alone from another at 25G.
func TestECMPHashCollisionHalvesAFlowsShare(t *testing.T) {
	b := newECBench(t, 1, 2, 4, "BF_SPEED_25G")
	b.route(0, 1, ecmp.ActionECMPHash)
	// Flows whose hashes put A and B on one uplink and C on another.
	uplinkOf := func(id, flow int) int { return slotOf(0, id, 1, flow) % 4 }
	fa, fb, fc := 0, -1, -1
	for f := 1; f < ecmp.MaxFlows && fb < 0; f++ {
		if uplinkOf(1, f) == uplinkOf(1, fa) {
			fb = f
		}
	}
	for f := 1; f < ecmp.MaxFlows && fc < 0; f++ {
		if f != fb && uplinkOf(2, f) != uplinkOf(1, fa) {
			fc = f
		}
	}
	b.flows(0, 1, 1, fa, fb)
	b.flows(0, 2, 1, fc)
	const frames = 6000
	b.app(0, 1, 167, 2*frames) // 50.0G
	b.app(0, 2, 335, frames)   // 24.9G: under the 25G uplink
	b.wait(3 * time.Millisecond)

	_, ga := b.flowGbps(1, fa)
	_, gb := b.flowGbps(1, fb)
	nc, gc := b.flowGbps(1, fc)
	t.Logf("A %.2f G, B %.2f G (sharing uplink %d), C %.2f G (uplink %d)", ga, gb, ecUplink(uplinkOf(1, fa)), gc, ecUplink(uplinkOf(2, fc)))
	if math.Abs(ga/gc-0.5) > 0.03 || math.Abs(gb/gc-0.5) > 0.03 {
		t.Errorf("A %.2f G and B %.2f G beside C's %.2f G: want half each", ga, gb, gc)
	}
	if math.Abs(gc-24.93) > 0.1 || nc != frames {
		t.Errorf("C alone: %d of %d frames at %.2f G, want all of them at its 24.93 G", nc, frames, gc)
	}
	sentAB := b.reg(b.tors[0], ecmp.RegFlowSent, fa) + b.reg(b.tors[0], ecmp.RegFlowSent, fb)
	rcvdAB := b.reg(b.tors[1], ecmp.RegFlowRcvd, fa) + b.reg(b.tors[1], ecmp.RegFlowRcvd, fb)
	drops, wm := b.queue(b.tors[0], ecUplink(uplinkOf(1, fa)))
	if g := b.generated(b.tors[0], 1); sentAB != g || sentAB != rcvdAB+drops {
		t.Errorf("A and B: generated %d, reg_flow_sent %d, received %d, dropped at the uplink %d", g, sentAB, rcvdAB, drops)
	}
	if wm != (1<<20)/1040*13 {
		t.Errorf("shared uplink's watermark %d cells, want 1 MiB of 13-cell frames (%d)", wm, (1<<20)/1040*13)
	}
	if d, _ := b.queue(b.tors[0], ecUplink(uplinkOf(2, fc))); d != 0 {
		t.Errorf("C's uplink dropped %d", d)
	}
}

// Per-packet spraying spreads four flows evenly over the four 25G
// uplinks and loses nothing at 97G; ECMP hashing the same four flows,
// two of which share an uplink, loses frames at that uplink's queue. The
// control plane's reg.set of the flow registers restarts their count.
func TestECMPSprayingSpreadsEvenly(t *testing.T) {
	b := newECBench(t, 2, 2, 4, "BF_SPEED_25G")
	// Four flows, the first two hashing to the same uplink.
	flows := []int{0}
	for f := 1; len(flows) < 4; f++ {
		if (len(flows) == 1) == (slotOf(0, 1, 1, f)%4 == slotOf(0, 1, 1, 0)%4) {
			flows = append(flows, f)
		}
	}
	b.flows(0, 1, 1, flows...)
	b.route(0, 1, ecmp.ActionECMPSpray)
	const frames = 12_000
	b.app(0, 1, 86, frames) // 97.1G
	b.wait(1500 * time.Microsecond)
	if g := b.generated(b.tors[0], 1); g != frames {
		t.Fatalf("generated %d of %d", g, frames)
	}
	var rcvd int64
	for _, f := range flows {
		rcvd += b.reg(b.tors[1], ecmp.RegFlowRcvd, f)
	}
	for j := 0; j < 4; j++ {
		n := b.counter(b.tors[0], ecUplink(j), "$FramesTransmittedOK")
		d, _ := b.queue(b.tors[0], ecUplink(j))
		if share := float64(n) / frames; math.Abs(share-0.25) > 0.015 || d != 0 {
			t.Errorf("sprayed: uplink %d sent %.3f of the frames and dropped %d; want 0.25 and none", ecUplink(j), share, d)
		}
	}
	if rcvd != frames || b.counter(b.tors[1], ecHostPort, "$FramesTransmittedOK") != frames {
		t.Errorf("sprayed: received %d of %d", rcvd, frames)
	}

	// The same flows by ECMP hash, the flow registers restarted.
	b.ok(b.tors[0], "pktgen.stop", `{"app_id":1}`)
	b.ok(b.tors[0], "table.mod", fmt.Sprintf(`{"name":%q,"key":{"dst":1},"action":"ecmp_hash","data":{}}`, ecmp.TableRoute))
	for _, f := range flows {
		for _, r := range []struct {
			sw   *Tofino
			name string
		}{{b.tors[0], ecmp.RegFlowSent}, {b.tors[1], ecmp.RegFlowRcvd}, {b.tors[1], ecmp.RegFlowFirst}, {b.tors[1], ecmp.RegFlowLast}} {
			b.ok(r.sw, "reg.set", fmt.Sprintf(`{"name":%q,"index":%d,"value":0}`, r.name, f))
		}
	}
	b.app(0, 1, 86, frames)
	b.wait(3500 * time.Microsecond)
	var sent, got int64
	for _, f := range flows {
		sent += b.reg(b.tors[0], ecmp.RegFlowSent, f)
		got += b.reg(b.tors[1], ecmp.RegFlowRcvd, f)
	}
	shared := ecUplink(slotOf(0, 1, 1, flows[0]) % 4)
	var drops int64
	for j := 0; j < 4; j++ {
		d, _ := b.queue(b.tors[0], ecUplink(j))
		drops += d
		if ecUplink(j) == shared && d < frames/20 {
			t.Errorf("hashed: the uplink two flows share dropped %d", d)
		}
	}
	t.Logf("sprayed: %d of %d received; hashed: %d of %d received, %d dropped at the uplinks", rcvd, frames, got, sent, drops)
	if sent != frames || got+drops != sent {
		t.Errorf("hashed: reg_flow_sent %d (want %d), received %d, dropped %d at the uplinks", sent, frames, got, drops)
	}
}

// An incast: three ToRs at line rate into one 100G host port, over a
// fabric of 100G uplinks that carries them all. The host port sends 100G,
// its queue fills to 1 MiB and drops the rest; no fabric queue drops.
func TestECMPIncastDropsAtTheHostPort(t *testing.T) {
	b := newECBench(t, 3, 4, 4, "BF_SPEED_100G")
	const frames = 12_000 // 1 ms at 99.4G
	var apps int64
	for src := 1; src <= 3; src++ {
		b.route(src, 0, ecmp.ActionECMPSpray)
		b.flows(src, 1, 0, src)
		b.app(src, 1, 84, frames)
		apps += frames
	}
	b.wait(300 * time.Microsecond)
	n0 := b.counter(b.tors[0], ecHostPort, "$FramesTransmittedOK")
	b.wait(800 * time.Microsecond)
	n1 := b.counter(b.tors[0], ecHostPort, "$FramesTransmittedOK")
	if g := float64((n1-n0)*ecWireBits) / 500e3; math.Abs(g-100) > 0.5 {
		t.Errorf("the host port sent %.2f G during the incast, want 100", g)
	}
	b.wait(2 * time.Millisecond)
	out := b.counter(b.tors[0], ecHostPort, "$FramesTransmittedOK")
	drops, wm := b.queue(b.tors[0], ecHostPort)
	var sent, rcvd int64
	for src := 1; src <= 3; src++ {
		sent += b.reg(b.tors[src], ecmp.RegFlowSent, src)
		rcvd += b.reg(b.tors[0], ecmp.RegFlowRcvd, src)
	}
	t.Logf("%d generated, %d out of the host port, %d dropped there; watermark %d cells", sent, out, drops, wm)
	if sent != apps || rcvd != out || out+drops != sent {
		t.Errorf("sent %d (want %d), received %d, host port %d + dropped %d", sent, apps, rcvd, out, drops)
	}
	if wm != (1<<20)/1040*13 {
		t.Errorf("host queue watermark %d cells, want 1 MiB (%d)", wm, (1<<20)/1040*13)
	}
	for _, sw := range append(append([]*Tofino{}, b.tors...), b.spines...) {
		for j := 0; j < 4; j++ {
			if d, _ := b.queue(sw, ecUplink(j)); d != 0 {
				t.Errorf("%s port %d dropped %d", sw.name, ecUplink(j), d)
			}
		}
	}
}

// One flow hashed onto a 25G uplink at 20G loses nothing: every frame
// generated is counted sent, crosses both hops and leaves the host port
// at the generator's spacing; the ports count it on every hop. Then a
// corrupting fibre on that uplink loses frames at its optics' frame loss
// probability, counted as FCS errors at the spine.
func TestECMPOneFlowBelowCapacity(t *testing.T) {
	b := newECBench(t, 4, 2, 2, "BF_SPEED_25G")
	b.route(0, 1, ecmp.ActionECMPHash)
	b.flows(0, 1, 1, 7)
	j := slotOf(0, 1, 1, 7) % 2
	const frames = 4000
	b.app(0, 1, 418, frames) // 19.98G
	b.wait(2 * time.Millisecond)
	st := b.ok(b.tors[0], "pktgen.status", `{"app_id":1}`)
	if st["done"] != true || st["packets"].(float64) != frames {
		t.Errorf("pktgen.status %v, want done with %d packets", st, frames)
	}
	n, g := b.flowGbps(1, 7)
	if sent := b.reg(b.tors[0], ecmp.RegFlowSent, 7); sent != frames || n != frames {
		t.Errorf("reg_flow_sent %d, reg_flow_rcvd %d: want %d each", sent, n, frames)
	}
	if want := float64(ecWireBits) / 418; math.Abs(g-want) > 0.01 {
		t.Errorf("first to last frame at %.3f G, want the generator's %.3f G", g, want)
	}
	for _, c := range []struct {
		sw   *Tofino
		port int
		name string
	}{
		{b.tors[0], ecUplink(j), "$FramesTransmittedOK"}, {b.spines[j], ecUplink(0), "$FramesReceivedOK"},
		{b.spines[j], ecUplink(1), "$FramesTransmittedOK"}, {b.tors[1], ecUplink(j), "$FramesReceivedOK"},
		{b.tors[1], ecHostPort, "$FramesTransmittedOK"}, {b.tors[1], ecHostPort, "$FramesTransmittedLength_1024_1518"},
	} {
		if v := b.counter(c.sw, c.port, c.name); v != frames {
			t.Errorf("%s port %d %s = %d, want %d", c.sw.name, c.port, c.name, v, frames)
		}
	}
	if v := b.counter(b.tors[1], ecHostPort, "$OctetsTransmittedTotal"); v != frames*(ecPktLen+4) {
		t.Errorf("host port octets %d, want %d", v, frames*(ecPktLen+4))
	}
	if d, wm := b.queue(b.tors[0], ecUplink(j)); d != 0 || wm > 26 {
		t.Errorf("uplink queue: %d drops, watermark %d cells; want none and at most two frames", d, wm)
	}

	// The uplink's fibre corrupts: 1024 B frames lost with p = 2%.
	fibre, _ := b.w.Fibre(fmt.Sprintf("tor1-spine%d", j+1))
	ch := b.voa.Channels[j]
	lo, hi := 0.0, 30.0
	for i := 0; i < 50; i++ {
		ch.SetAttenuation((lo + hi) / 2)
		if fibre.FrameLossProbability(ecPktLen+4) < 0.02 {
			lo = (lo + hi) / 2
		} else {
			hi = (lo + hi) / 2
		}
	}
	p := fibre.FrameLossProbability(ecPktLen + 4)
	f := 8 // a flow of application 2 hashed onto the same uplink
	for slotOf(0, 2, 1, f)%2 != j {
		f++
	}
	b.flows(0, 2, 1, f)
	b.app(0, 2, 418, frames)
	b.wait(4 * time.Millisecond)
	bad := b.counter(b.spines[j], ecUplink(0), "$FramesReceivedwithFCSError")
	got := b.reg(b.tors[1], ecmp.RegFlowRcvd, f)
	mean := p * frames
	t.Logf("p %.4f: %d of %d corrupted, %d received", p, bad, frames, got)
	if math.Abs(float64(bad)-mean) > 5*math.Sqrt(mean) || got != frames-bad {
		t.Errorf("%d of %d corrupted (p = %.4f: %.0f expected), %d received", bad, frames, p, mean, got)
	}
}

// A table the fabric cannot hold is an error naming the switch and the
// entry once an application generates.
func TestECMPBadTableEntry(t *testing.T) {
	b := newECBench(t, 5, 2, 1, "BF_SPEED_100G")
	b.route(0, 1, ecmp.ActionECMPHash)
	b.ok(b.tors[0], "table.add", fmt.Sprintf(`{"name":%q,"key":{"dst":1,"slot":64},"action":"to_link","data":{"link":136}}`, ecmp.TableECMPSlot))
	b.wait(time.Microsecond) // nothing generates: no error
	b.flows(0, 1, 1, 0)
	b.app(0, 1, 1000, 10)
	r := b.req(b.tors[0], "time.wait", `{"until_ns":100000}`)
	e, _ := r["error"].(map[string]any)
	if msg, _ := e["message"].(string); r["ok"] != false || !strings.Contains(msg, "tor1") || !strings.Contains(msg, "slot 0..63") {
		t.Errorf("slot 64: %v", r)
	}
}

// flowsClass gives application id of ToR src one flow to ToR dst in
// traffic class tc (to_flow's tc: its DSCP class selector) in every
// gen_flow slot.
func (b *ecBench) flowsClass(src, id, dst, tc, flow int) {
	for s := 0; s < ecmp.Slots; s++ {
		b.ok(b.tors[src], "table.add", fmt.Sprintf(`{"name":%q,"key":{"app_id":%d,"slot":%d},"action":"to_flow","data":{"dst":%d,"flow":%d,"tc":%d}}`,
			ecmp.TableGenFlow, id, s, dst, flow, tc))
	}
}

// queueOf reads tm.queue for queue qid of a dev port (the default
// carving: pg_queue = channel*8 + qid): drops, watermark cells.
func (b *ecBench) queueOf(sw *Tofino, port, qid int) (drops, watermark int64) {
	b.t.Helper()
	q := b.ok(sw, "tm.queue", fmt.Sprintf(`{"pipe":%d,"pg_id":%d,"pg_queue":%d}`, port>>7, port&127>>2, port&3*8+qid))
	return int64(q["drop_count_packets"].(float64)), int64(q["watermark_cells"].(float64))
}

// Two flows of different classes, from two ToRs, meet at the spine's
// downlink to a third (App. F, Fig. 12 of the Stardust paper: a push
// fabric's two classes at its congested middle stage), each offered at
// 100.6G. With the high class's queue of that port at priority 7
// (tm.queue.sched) it fills the link and the low class gets next to
// nothing: its queue there fills and drops. With the priorities equal (the
// default) they get about half each. The class rides in the frames: the
// source ToRs' uplinks queue them in their class too.
func TestECMPStrictPriorityAtTheSpine(t *testing.T) {
	const (
		hiTC, loTC     = 5, 1
		hiFlow, loFlow = 10, 11
		timerNs        = 83 // 1044 B on the wire every 83 ns: 100.6G
		frames         = 6000
	)
	down := ecUplink(2) // the spine's port to ToR 2
	run := func(strict bool) (hi, lo float64, b *ecBench) {
		b = newECBench(t, 5, 3, 1, "BF_SPEED_100G")
		if strict {
			prev := b.ok(b.spines[0], "tm.queue.sched", fmt.Sprintf(`{"dev_port":%d,"qid":%d,"priority":7}`, down, hiTC))
			if prev["priority"] != float64(0) {
				t.Errorf("the queue's priority before: %v, want the default 0", prev["priority"])
			}
		}
		for src, c := range []struct{ tc, flow int }{{hiTC, hiFlow}, {loTC, loFlow}} {
			b.route(src, 2, ecmp.ActionECMPHash)
			b.flowsClass(src, 1, 2, c.tc, c.flow)
			b.app(src, 1, timerNs, frames)
		}
		end := time.Duration(frames * timerNs)
		b.wait(end)
		rate := func(flow int) float64 {
			return float64(b.reg(b.tors[2], ecmp.RegFlowRcvd, flow)*ecWireBits) / float64(end.Nanoseconds())
		}
		return rate(hiFlow), rate(loFlow), b
	}

	hi, lo, b := run(true)
	t.Logf("priority 7 against 0 at the spine: high class %.2f Gb/s, low %.2f", hi, lo)
	if hi < 99 || lo > 0.5 {
		t.Errorf("strict priority: high class %.2f Gb/s, low %.2f; want ~100 and ~0", hi, lo)
	}
	if d, wm := b.queueOf(b.spines[0], down, loTC); d == 0 || wm != (1<<20)/1040*13 {
		t.Errorf("the low class's queue at the spine: %d drops, watermark %d cells; want drops and 1 MiB", d, wm)
	}
	if d, _ := b.queueOf(b.spines[0], down, hiTC); d != 0 {
		t.Errorf("the high class's queue at the spine dropped %d", d)
	}
	for src, tc := range []int{hiTC, loTC} {
		if _, wm := b.queueOf(b.tors[src], ecUplink(0), tc); wm == 0 {
			t.Errorf("tor%d's uplink: queue %d never held a frame of its class", src+1, tc)
		}
		if _, wm := b.queueOf(b.tors[src], ecUplink(0), 0); wm != 0 {
			t.Errorf("tor%d's uplink: queue 0 held %d cells, no frame is of class 0", src+1, wm)
		}
	}

	hi, lo, b = run(false)
	t.Logf("equal priorities at the spine: high class %.2f Gb/s, low %.2f", hi, lo)
	if math.Abs(hi-50) > 1.5 || math.Abs(lo-50) > 1.5 {
		t.Errorf("equal priorities: high class %.2f Gb/s, low %.2f; want ~50 each", hi, lo)
	}
	for _, tc := range []int{hiTC, loTC} {
		if d, _ := b.queueOf(b.spines[0], down, tc); d == 0 {
			t.Errorf("equal priorities: queue %d at the spine dropped nothing", tc)
		}
	}
}

// tm.queue.sched on the simulated switch: the previous priority answered,
// each queue apart, the default back after bf_switchd restarts, and bad
// arguments refused.
func TestQueuePrioritiesOverTheAgent(t *testing.T) {
	b := newECBench(t, 1, 1, 1, "BF_SPEED_100G")
	sw := b.tors[0]
	set := func(port, qid, prio int) any {
		return b.ok(sw, "tm.queue.sched", fmt.Sprintf(`{"dev_port":%d,"qid":%d,"priority":%d}`, port, qid, prio))["priority"]
	}
	for _, c := range []struct{ port, qid, prio, prev int }{{136, 2, 7, 0}, {136, 2, 4, 7}, {136, 3, 1, 0}, {137, 2, 1, 0}, {136, 2, 0, 4}} {
		if got := set(c.port, c.qid, c.prio); got != float64(c.prev) {
			t.Errorf("port %d queue %d priority %d: previous %v, want %d", c.port, c.qid, c.prio, got, c.prev)
		}
	}
	set(136, 3, 6)
	sw.mu.Lock()
	sw.reset(ecmp.Program)
	sw.mu.Unlock()
	if got := set(136, 3, 6); got != float64(0) {
		t.Errorf("after a restart: previous %v, want the default 0", got)
	}
	// Without a priority the call reads, and writes nothing.
	for range 2 {
		if r := b.req(sw, "tm.queue.sched", `{"dev_port":136,"qid":3}`); r["ok"] != true || r["result"].(map[string]any)["priority"] != float64(6) {
			t.Errorf("read of port 136 queue 3: %v, want priority 6", r)
		}
	}
	for _, c := range []struct{ args, kind string }{
		{`{"dev_port":100,"qid":0,"priority":1}`, "not_found"},
		{`{"dev_port":136,"qid":8,"priority":1}`, "bad_request"},
		{`{"dev_port":136,"qid":0,"priority":8}`, "bad_request"},
		{`{"dev_port":136,"qid":0,"priority":"7"}`, "bad_request"},
	} {
		r := b.req(sw, "tm.queue.sched", c.args)
		if e, _ := r["error"].(map[string]any); r["ok"] != false || e["kind"] != c.kind {
			t.Errorf("%s: %v, want a %s error", c.args, r, c.kind)
		}
	}
}
