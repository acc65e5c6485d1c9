package ecmpmodel

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"testbed/p4/ecmp"
)

const (
	hostPort = 176
	frameB   = 1024
	ms       = int64(1e9) // ps
)

func uplink(j int) int { return 136 + 8*j }

// leafSpine is nToR ToRs (ids 0..) with a 100G host port and nSpine
// uplinks of upGbps, ToR i's uplink j joined to spine j's port 136+8i by
// 10 m fibres (50 ns). Every ToR delivers its own id to its host port and
// sends the others by act over its uplinks (slot s on uplink s%nSpine);
// every spine sends ToR i down its port to it.
type leafSpine struct {
	*Fabric
	tors, spines []int
}

func newLeafSpine(t testing.TB, nToR, nSpine int, upGbps float64, act Action, seed uint64) *leafSpine {
	f := New(rand.New(rand.NewPCG(seed, 7)))
	f.PipelinePs = 300_000
	ls := &leafSpine{Fabric: f}
	must := func(_ any, err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for j := 0; j < nSpine; j++ {
		ls.spines = append(ls.spines, f.AddDevice(NewDevice("spine", 0)))
	}
	for i := 0; i < nToR; i++ {
		tor := f.AddDevice(NewDevice("tor", i))
		ls.tors = append(ls.tors, tor)
		d := f.Devices[tor]
		must(f.AddPort(tor, hostPort, 100e9))
		d.Route[i] = Route{Action: ToHost, Port: hostPort}
		for j, sp := range ls.spines {
			must(f.AddPort(tor, uplink(j), upGbps*1e9))
			must(f.AddPort(sp, uplink(i), upGbps*1e9))
			must(f.AddLink(&Link{From: tor, FromPort: uplink(j), To: sp, ToPort: uplink(i), PropPs: 50_000}))
			must(f.AddLink(&Link{From: sp, FromPort: uplink(i), To: tor, ToPort: uplink(j), PropPs: 50_000}))
			s := new([Slots]int)
			for k := range s {
				s[k] = uplink(i)
			}
			f.Devices[sp].Route[i] = Route{Action: Hash}
			f.Devices[sp].Slot[i] = s
		}
		for k := 0; k < nToR; k++ {
			if k == i {
				continue
			}
			s := new([Slots]int)
			for slot := range s {
				s[slot] = uplink(slot % nSpine)
			}
			d.Route[k] = Route{Action: act}
			d.Slot[k] = s
		}
	}
	return ls
}

// app starts application id on ToR src: frames of flow to ToR dst (every
// gen_flow slot) every periodPs, for dur.
func (ls *leafSpine) app(src, id, dst, flow int, periodPs, dur int64) *App {
	return ls.appClass(src, id, dst, flow, 0, periodPs, dur)
}

// appClass is app with the flow in traffic class tc.
func (ls *leafSpine) appClass(src, id, dst, flow, tc int, periodPs, dur int64) *App {
	d := ls.Devices[ls.tors[src]]
	g := new([Slots]Flow)
	for s := range g {
		g[s] = Flow{Valid: true, Dst: dst, Flow: flow, TC: tc}
	}
	d.GenFlow[id] = g
	a := &App{AppID: id, FrameBytes: frameB, SrcAddr: ecmp.SourceAddr(src, id), IP: true, StartPs: ls.now,
		PeriodPs: periodPs, Batches: dur / periodPs, PerBatch: 1, Enabled: true}
	ls.AddApp(ls.tors[src], a)
	return a
}

// linePs is a frame's time at gbps.
func linePs(gbps float64) int64 { return int64(float64((frameB+WireExtraBytes)*8) / gbps * 1e3) }

func (ls *leafSpine) port(tor, port int) *Port { return ls.Devices[ls.tors[tor]].Port(port) }

// gbps is what n frames of frameB carry in dur ps, as line-rate Gb/s.
func gbps(n int64, dur int64) float64 {
	return float64(n*(frameB+WireExtraBytes)*8) / float64(dur) * 1e3
}

// One flow at 100G hashed by ECMP onto one of four 25G uplinks: the
// uplink carries 25G, its queue fills to 1 MiB and drops the rest, and
// the registers count what entered the fabric and what left it.
func TestHashedFlowTakesOneUplink(t *testing.T) {
	ls := newLeafSpine(t, 2, 4, 25, Hash, 1)
	const dur = 2 * ms
	a := ls.app(0, 1, 1, 5, linePs(100), dur)
	ls.AdvanceTo(dur + ms) // and drain
	slot := ecmp.FlowSlot(ecmp.SourceAddr(0, 1), ecmp.HostAddr(1), 17, ecmp.FlowPortBase+5, ecmp.FlowDstPort)
	want := uplink(int(slot) % 4)
	src, dst := ls.Devices[ls.tors[0]], ls.Devices[ls.tors[1]]
	for j := 0; j < 4; j++ {
		p := ls.port(0, uplink(j))
		if n := p.Tx.Total(); (uplink(j) == want) != (n > 0) {
			t.Errorf("uplink %d (slot %d hashes to %d) sent %d frames", uplink(j), slot, want, n)
		}
	}
	up := ls.port(0, want)
	sent := up.Tx.Total()
	// 25G for the 2 ms the generator runs, plus the 1 MiB queue it drains after.
	queued := int64(ls.QueueCapBytes / cellBytes(frameB))
	if g := gbps(sent-queued, dur); math.Abs(g-25) > 0.25 {
		t.Errorf("the uplink carried %.2f G while the flow ran (%d frames), want 25", g, sent)
	}
	if up.Watermark[0] != queued*cellBytes(frameB) {
		t.Errorf("queue watermark %d B, want the %d frames 1 MiB holds (%d B)", up.Watermark[0], queued, queued*cellBytes(frameB))
	}
	if a.Sent != src.FlowSent[5] || up.QueueDrops[0]+sent != a.Sent {
		t.Errorf("generated %d, reg_flow_sent %d, uplink sent %d + dropped %d", a.Sent, src.FlowSent[5], sent, up.QueueDrops[0])
	}
	host := ls.port(1, hostPort).Tx.Total()
	if dst.FlowRcvd[5] != sent || host != sent || ls.InFlight() != 0 {
		t.Errorf("reg_flow_rcvd %d, host port sent %d, want the uplink's %d (in flight %d)", dst.FlowRcvd[5], host, sent, ls.InFlight())
	}
	// The first frame's egress at the host port: three pipelines (source
	// ToR, spine, destination ToR), two 25G serialisations and two 50 ns
	// fibres; the last leaves as the queue drains.
	ser25 := serPs(frameB, 25e9)
	first := (3*ls.PipelinePs + 2*ser25 + 2*50_000) / 1000
	if dst.FlowFirst[5] < first-2 || dst.FlowFirst[5] > first+2 {
		t.Errorf("reg_flow_first_ns %d, want about %d", dst.FlowFirst[5], first)
	}
	if span := float64(dst.FlowLast[5]-dst.FlowFirst[5]) * 1e3; math.Abs(span-float64(sent-1)*float64(ser25))/span > 0.001 {
		t.Errorf("first to last %v ns for %d frames at 25G", span/1e3, sent)
	}
}

// Per-packet spraying spreads a flow over the four 25G uplinks: 100G
// arrives, every uplink carries a quarter, nothing is dropped.
func TestSprayedFlowUsesEveryUplink(t *testing.T) {
	ls := newLeafSpine(t, 2, 4, 25, Spray, 2)
	const dur = 2 * ms
	// 99G offered: a queue fed at its exact rate by random slots would
	// random-walk without bound.
	a := ls.app(0, 1, 1, 5, linePs(99), dur)
	ls.AdvanceTo(dur + ms)
	for j := 0; j < 4; j++ {
		p := ls.port(0, uplink(j))
		share := float64(p.Tx.Total()) / float64(a.Sent)
		if math.Abs(share-0.25) > 0.01 || p.QueueDrops[0] != 0 {
			t.Errorf("uplink %d: %.3f of the frames, %d dropped; want 0.25 and none", uplink(j), share, p.QueueDrops[0])
		}
	}
	dst := ls.Devices[ls.tors[1]]
	if dst.FlowRcvd[5] != a.Sent {
		t.Errorf("received %d of %d", dst.FlowRcvd[5], a.Sent)
	}
	if g := gbps(dst.FlowRcvd[5], dur); math.Abs(g-99) > 0.5 {
		t.Errorf("delivered %.2f G, want 99", g)
	}
}

// An incast of three ToRs at line rate into one 100G host port: the host
// port sends 100G, its queue fills to 1 MiB and drops the rest; the
// fabric (four 100G uplinks each) drops nothing.
func TestIncastDropsAtTheHostPort(t *testing.T) {
	ls := newLeafSpine(t, 4, 4, 100, Spray, 3)
	const dur = 2 * ms
	var gen int64
	var apps []*App
	for src := 1; src <= 3; src++ {
		apps = append(apps, ls.app(src, 1, 0, src, linePs(100), dur))
	}
	// The host queue fills at 200G: 1 MiB takes 42 us, so the first drop
	// comes near then.
	ls.AdvanceTo(40 * ms / 1000)
	if d := ls.port(0, hostPort).QueueDrops[0]; d != 0 {
		t.Errorf("%d drops after 40 us, before 1 MiB can have filled at 200G", d)
	}
	ls.AdvanceTo(dur + ms)
	for _, a := range apps {
		gen += a.Sent
	}
	h := ls.port(0, hostPort)
	out := h.Tx.Total()
	queued := int64(ls.QueueCapBytes / cellBytes(frameB))
	if g := gbps(out-queued, dur); math.Abs(g-100) > 0.5 {
		t.Errorf("host port sent %.2f G while the incast ran, want 100", g)
	}
	if h.QueueDrops[0]+out != gen || h.QueueDrops[0] < gen/2 {
		t.Errorf("generated %d: host port sent %d and dropped %d", gen, out, h.QueueDrops[0])
	}
	if h.Watermark[0] < ls.QueueCapBytes-cellBytes(frameB) {
		t.Errorf("host queue watermark %d B, want 1 MiB full", h.Watermark[0])
	}
	for _, i := range ls.tors {
		ls.Devices[i].Ports(func(p *Port) {
			if p.Dev != hostPort && p.QueueDrops[0] != 0 {
				t.Errorf("fabric port %d dropped %d", p.Dev, p.QueueDrops[0])
			}
		})
	}
	var rcvd int64
	for src := 1; src <= 3; src++ {
		rcvd += ls.Devices[ls.tors[0]].FlowRcvd[src]
	}
	if rcvd != out {
		t.Errorf("reg_flow_rcvd sums to %d, host port sent %d", rcvd, out)
	}
}

// A lossy fibre loses frames by its probability, counted as FCS errors at
// the receiving port; a port that is down drops what reaches it.
func TestLossyFibreAndPortDown(t *testing.T) {
	ls := newLeafSpine(t, 2, 1, 100, Hash, 4)
	const p = 0.1
	for _, l := range ls.Links {
		if l.From == ls.tors[0] {
			l.SetLoss(func(bytes int) float64 {
				if bytes != frameB {
					t.Errorf("loss asked for %d B frames", bytes)
				}
				return p
			})
		}
	}
	const dur = ms
	a := ls.app(0, 1, 1, 9, linePs(50), dur)
	ls.AdvanceTo(dur + ms)
	rx := ls.Devices[ls.spines[0]].Port(uplink(0))
	bad, ok := rx.RxBad.Total(), rx.RxOK.Total()
	n := float64(a.Sent)
	if bad+ok != a.Sent || math.Abs(float64(bad)-p*n) > 4*math.Sqrt(n*p*(1-p)) {
		t.Errorf("%d frames: %d with an FCS error, %d good; want %.0f lost", a.Sent, bad, ok, p*n)
	}
	if r := ls.Devices[ls.tors[1]].FlowRcvd[9]; r != ok {
		t.Errorf("received %d, want the %d that crossed", r, ok)
	}
	// The uplink goes down: everything sent to it from then on is dropped.
	ls.port(0, uplink(0)).Up = false
	b := ls.app(0, 2, 1, 10, linePs(50), ms)
	ls.AdvanceTo(ls.now + 2*ms)
	if up := ls.port(0, uplink(0)); up.DownDrops != b.Sent || ls.Devices[ls.tors[1]].FlowRcvd[10] != 0 {
		t.Errorf("down port: %d dropped of %d, %d received", up.DownDrops, b.Sent, ls.Devices[ls.tors[1]].FlowRcvd[10])
	}
}

// A route without an entry, a gen_flow slot without one and a buffer that
// is not IPv4 drop at the ingress; none of them is counted as sent.
func TestIngressDrops(t *testing.T) {
	ls := newLeafSpine(t, 3, 1, 100, Hash, 5)
	src := ls.Devices[ls.tors[0]]
	src.Route[2] = Route{}
	a := ls.app(0, 1, 2, 3, linePs(50), 100_000_000)
	ls.AdvanceTo(ms)
	if src.FlowSent[3] != 0 || src.Unrouted != a.Sent {
		t.Errorf("route drop: sent %d, unrouted %d of %d", src.FlowSent[3], src.Unrouted, a.Sent)
	}
	src.Route[2] = Route{Action: Hash}
	b := ls.app(0, 4, 2, 4, linePs(50), 100_000_000)
	g := src.GenFlow[4]
	for s := 0; s < Slots; s += 2 {
		g[s] = Flow{} // half the slots drop
	}
	ls.AdvanceTo(2 * ms)
	dropped := src.Unrouted - a.Sent
	if half := float64(b.Sent) / 2; math.Abs(float64(dropped)-half) > 4*math.Sqrt(half/2) || src.FlowSent[4] != b.Sent-dropped {
		t.Errorf("gen_flow half empty: %d of %d dropped, %d sent", dropped, b.Sent, src.FlowSent[4])
	}
	c := &App{AppID: 1, FrameBytes: frameB, StartPs: ls.now, PeriodPs: 1000_000, Batches: 10, PerBatch: 3, Enabled: true}
	ls.AddApp(ls.tors[0], c)
	ls.AdvanceTo(3 * ms)
	if src.NotIP != 30 || c.Sent != 30 || !c.Done() {
		t.Errorf("not IPv4: %d dropped, %d generated", src.NotIP, c.Sent)
	}
}

// A run of eight 100G host ports' worth of 1024 B frames for 1 ms through
// a leaf-spine of eight ToRs and four spines (100G everywhere), each ToR
// sending at line rate to the next by per-packet spraying.
// go test -run '^$' -bench . -benchmem ./simlab/ecmpmodel
func BenchmarkEightHostPortsOneMillisecond(b *testing.B) {
	var frames int64
	for b.Loop() {
		ls := newLeafSpine(b, 8, 4, 100, Spray, 1)
		for i := 0; i < 8; i++ {
			ls.app(i, 1, (i+1)%8, i, linePs(100), ms)
		}
		ls.AdvanceTo(ms + ms/10)
		frames = ls.Delivered
	}
	b.ReportMetric(float64(frames), "frames/op")
}

// Two classes share ToR 0's one 100G uplink, each offered at up to line
// rate: with the high class's queue at a higher priority, the low class
// gets what the high class leaves (nothing when it fills the link; its
// queue fills and drops the rest); with the two queues at one priority,
// each gets half. Measured at the destination's registers before the
// queues drain.
func TestStrictPriorityBetweenClasses(t *testing.T) {
	const (
		dur        = 2 * ms
		high, low  = 5, 1 // classes (queues)
		fHi, fLow  = 10, 11
		appHi, apL = 1, 2
	)
	run := func(hiPrio, lowPrio int, hiGbps float64) (hi, lo float64, up *Port) {
		ls := newLeafSpine(t, 2, 1, 100, Hash, 3)
		up = ls.port(0, uplink(0))
		up.Priority[high], up.Priority[low] = hiPrio, lowPrio
		ls.appClass(0, appHi, 1, fHi, high, linePs(hiGbps), dur)
		ls.appClass(0, apL, 1, fLow, low, linePs(100), dur)
		ls.AdvanceTo(dur)
		rc := ls.Devices[ls.tors[1]].FlowRcvd
		return gbps(rc[fHi], dur), gbps(rc[fLow], dur), up
	}

	// Strict priority, the high class at line rate: the low one starves.
	hi, lo, up := run(7, 0, 100)
	t.Logf("strict, high at 100G: high %.2f Gb/s, low %.2f", hi, lo)
	if hi < 98 || lo > 0.5 {
		t.Errorf("strict priority, high class at 100G: high %.2f Gb/s, low %.2f; want ~100 and ~0", hi, lo)
	}
	if up.QueueDrops[high] != 0 || up.QueueDrops[low] == 0 || up.Watermark[low] < ls1MiB-cellBytes(frameB) {
		t.Errorf("queue drops %v, watermark %v: want the low class's queue full and dropping, the high one's not", up.QueueDrops, up.Watermark)
	}
	// The scheduler is work conserving: the low class gets what is left.
	hi, lo, _ = run(7, 0, 60)
	t.Logf("strict, high at 60G: high %.2f Gb/s, low %.2f", hi, lo)
	if math.Abs(hi-60) > 1 || math.Abs(lo-40) > 1.5 {
		t.Errorf("strict priority, high class at 60G: high %.2f Gb/s, low %.2f; want ~60 and ~40", hi, lo)
	}
	// The priority is the queue's, not the class number's: reversed, the
	// other class starves.
	hi, lo, _ = run(0, 3, 100)
	if lo < 98 || hi > 0.5 {
		t.Errorf("the low class's queue at the higher priority: high %.2f Gb/s, low %.2f; want ~0 and ~100", hi, lo)
	}
	// One priority (the default): round robin, half each.
	hi, lo, up = run(0, 0, 100)
	t.Logf("equal priorities: high %.2f Gb/s, low %.2f", hi, lo)
	if math.Abs(hi-50) > 1 || math.Abs(lo-50) > 1 {
		t.Errorf("equal priorities: high %.2f Gb/s, low %.2f; want ~50 each", hi, lo)
	}
	if up.QueueDrops[high] == 0 || up.QueueDrops[low] == 0 {
		t.Errorf("equal priorities: queue drops %v, want both queues dropping", up.QueueDrops)
	}
}

const ls1MiB = 1 << 20

// Round robin among queues of one priority goes on past a queue of a
// higher one: three queues, the top one served first, the other two in
// turn, one frame each.
func TestRoundRobinWithinAPriority(t *testing.T) {
	f := New(rand.New(rand.NewPCG(1, 1)))
	d := f.AddDevice(NewDevice("sw", 0))
	p, err := f.AddPort(d, 8, 100e9)
	if err != nil {
		t.Fatal(err)
	}
	p.Priority = [Queues]int{2: 1, 4: 1, 6: 3}
	// Queue it as a program's ingress would: three frames of each class,
	// all reaching the traffic manager before the first leaves.
	for _, tc := range []int{2, 4, 6} {
		for range 3 {
			f.enqueue(f.Devices[d], p, f.alloc(frame{bytes: 100, diffserv: ecmp.Diffserv(tc)}))
		}
	}
	var order []int
	for p.nq > 0 {
		qi := f.pick(p)
		order = append(order, qi)
		q := &p.qs[qi]
		q.bytes -= cellBytes(f.frames[q.pop()].bytes)
		p.nq--
	}
	if want := []int{6, 6, 6, 2, 4, 2, 4, 2, 4}; !slices.Equal(order, want) {
		t.Errorf("served queues %v, want %v", order, want)
	}
}
