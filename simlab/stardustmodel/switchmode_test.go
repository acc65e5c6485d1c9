package stardustmodel

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

const (
	swHost   = 100 // every FA's host port
	swFAPort = 1   // an FA's port to FE j is swFAPort+j
	swFEPort = 10  // an FE's port to FA i is swFEPort+i
)

// swFabric is nFA FAs (ids 0..) and nFE FEs, FA i's port 1+j joined to FE
// j's port 10+i by 100G links of 10 ns; every FA sprays over its links in
// turn and every FE reaches FA i by its port to it.
func swFabric(nFA, nFE int, seed uint64) *SwitchFabric {
	f := NewSwitchFabric(rand.New(rand.NewPCG(seed, 1)))
	var fes []int
	for j := 0; j < nFE; j++ {
		fes = append(fes, f.AddDevice(NewSwDevice("fe", true, j)))
	}
	for i := 0; i < nFA; i++ {
		fa := f.AddDevice(NewSwDevice("fa", false, i))
		f.Devices[fa].HostPort[0] = swHost
		for j, fe := range fes {
			f.AddLink(&SwLink{From: fa, FromPort: swFAPort + j, To: fe, ToPort: swFEPort + i, Bps: 100e9, PropPs: 10_000, Up: true})
			f.AddLink(&SwLink{From: fe, FromPort: swFEPort + i, To: fa, ToPort: swFAPort + j, Bps: 100e9, PropPs: 10_000, Up: true})
			s := new([SwMaxLinks]int)
			for k := range s {
				s[k] = swFEPort + i
			}
			f.Devices[fe].Spray[i] = s
		}
	}
	for i := 0; i < nFA; i++ {
		d := f.Devices[nFE+i]
		for k := 0; k < nFA; k++ {
			s := new([SwMaxLinks]int)
			for slot := range s {
				s[slot] = swFAPort + slot%nFE
			}
			d.Spray[k] = s
		}
	}
	return f
}

func fa(f *SwitchFabric, id int) *SwDevice {
	i, _ := f.faIndex(id)
	return f.Devices[i]
}

// flowTo points app 1 of FA src at FA dst's port 0, VOQ voq, in every slot.
func flowTo(f *SwitchFabric, src, dst, voq int) {
	g := new([SwMaxLinks]Flow)
	for s := range g {
		g[s] = Flow{Valid: true, FA: dst, Port: 0, VOQ: voq}
	}
	fa(f, src).GenFlow[1] = g
}

// creditsFrom makes FA dst's port 0 credit (src, voq) in every slot.
func creditsFrom(f *SwitchFabric, dst, src, voq int) {
	d := fa(f, dst)
	d.CreditPort[0] = 0
	c := new([SwCreditSlots]Source)
	for s := range c {
		c[s] = Source{Valid: true, FA: src, VOQ: voq}
	}
	d.CreditTo[0] = c
}

func devIndex(f *SwitchFabric, d *SwDevice) int {
	for i, x := range f.Devices {
		if x == d {
			return i
		}
	}
	return -1
}

// Credits are conserved: every frame a VOQ sends took one frame of
// credit, so what was sent plus the balance left is what the credits
// brought; and an idle VOQ banks no more than the cap.
func TestSwitchCreditsConservedAndCapped(t *testing.T) {
	f := swFabric(2, 1, 1)
	flowTo(f, 0, 1, 3)
	creditsFrom(f, 1, 0, 3)
	// A backlog: 400 frames at once; 20 credits of 4 frames.
	f.AddApp(devIndex(f, fa(f, 0)), &SwApp{Kind: SwKindData, FrameBytes: 256, PeriodPs: 1000, Batches: 1, PerBatch: 400, AppID: 1, Enabled: true})
	f.AddApp(devIndex(f, fa(f, 1)), &SwApp{Kind: SwKindCredit, FrameBytes: 64, PeriodPs: 100_000, Batches: 20, PerBatch: 1, PayloadLength: 4, Enabled: true})
	f.AdvanceTo(10_000_000)
	src := fa(f, 0)
	if sent := src.SeqOut[1]; sent+src.Credit[3] != 80 || sent != 80 {
		t.Errorf("sent %d, balance %d: want 80 frames sent for 20 credits of 4", sent, src.Credit[3])
	}
	if f.Delivered != 80 || src.Waiting() != 320 {
		t.Errorf("delivered %d, waiting %d; want 80 and 320", f.Delivered, src.Waiting())
	}

	// No data: the balance stops at the cap (32: two credits of 16).
	g := swFabric(2, 1, 1)
	creditsFrom(g, 1, 0, 3)
	g.AddApp(devIndex(g, fa(g, 1)), &SwApp{Kind: SwKindCredit, FrameBytes: 64, PeriodPs: 100_000, Batches: 10, PerBatch: 1, PayloadLength: 16, Enabled: true})
	g.AdvanceTo(10_000_000)
	if c := fa(g, 0).Credit[3]; c != 32 {
		t.Errorf("an idle VOQ banked %d frames of credit, want the cap, 32", c)
	}
}

// Spraying follows the table's slots round robin: a permutation of four
// links repeated over the 64 slots sends each link exactly a quarter.
func TestSwitchSprayEvenFromTable(t *testing.T) {
	f := swFabric(2, 4, 1)
	src := fa(f, 0)
	perm := []int{3, 1, 4, 2}
	for s := range src.Spray[1] {
		src.Spray[1][s] = perm[s%4]
	}
	flowTo(f, 0, 1, 0)
	src.Credit[0] = 1 << 20
	f.CreditCap = 1 << 30
	f.AddApp(devIndex(f, src), &SwApp{Kind: SwKindData, FrameBytes: 256, PeriodPs: 100_000, Batches: 64, PerBatch: 10, AppID: 1, Enabled: true})
	f.AdvanceTo(100_000_000)
	for _, p := range perm {
		if n := src.Ports[p].Tx[256]; n != 160 {
			t.Errorf("port %d sent %d frames, want 160 of 640", p, n)
		}
	}
	if f.Delivered != 640 {
		t.Errorf("delivered %d of 640", f.Delivered)
	}
}

// The FE queue histogram and FCI, by hand: six 320 B frames (4 buffer
// cells each) reach the FE at the same instant from six FAs, all for FA
// 6. The first is sent at once and the second waits for it alone: both
// find 0 cells queued; the others find 4, 8, 12, 16 (buckets of 4 cells:
// 0, 0, 1, 2, 3, 4). With the threshold at 8 cells, the three that found
// 8 or more are marked and count in FA 6's reg_fci.
func TestSwitchQueueHistAndFCIByHand(t *testing.T) {
	for _, th := range []int64{0, 8} {
		f := swFabric(7, 1, 1)
		f.Devices[0].FCITh = th
		for src := 0; src < 6; src++ {
			flowTo(f, src, 6, 0)
			fa(f, src).Credit[0] = 1
			f.AddApp(devIndex(f, fa(f, src)), &SwApp{Kind: SwKindData, FrameBytes: 320, PeriodPs: 1000, Batches: 1, PerBatch: 1, AppID: 1, Enabled: true})
		}
		f.AdvanceTo(10_000_000)
		want := []int64{2, 1, 1, 1, 1}
		for b, w := range want {
			if f.Devices[0].QHist[b] != w {
				t.Errorf("th %d: qdepth bucket %d holds %d, want %d (%v)", th, b, f.Devices[0].QHist[b], w, f.Devices[0].QHist[:6])
			}
		}
		marks := map[int64]int64{0: 0, 8: 3}[th]
		if got := fa(f, 6).FCI[0]; got != marks {
			t.Errorf("th %d: %d FCI marks, want %d", th, got, marks)
		}
		if f.Delivered != 6 {
			t.Errorf("delivered %d of 6", f.Delivered)
		}
	}
}

// An FA's fabric port marks FCI as an FE's does: six 320 B frames with
// credit leave FA 0 at once by its one link; the first goes at once and
// the second waits for it alone (both find 0 cells queued), the others
// find 4, 8, 12 and 16, so with the FA's threshold at 8 cells three
// arrive marked (the FE's own threshold is off) and count in FA 1's
// reg_fci.
func TestSwitchFAFabricPortMarksFCI(t *testing.T) {
	for _, th := range []int64{0, 8} {
		f := swFabric(2, 1, 1)
		flowTo(f, 0, 1, 0)
		src := fa(f, 0)
		src.FCITh = th
		src.Credit[0] = 6
		f.AddApp(devIndex(f, src), &SwApp{Kind: SwKindData, FrameBytes: 320, PeriodPs: 1000, Batches: 1, PerBatch: 6, AppID: 1, Enabled: true})
		f.AdvanceTo(10_000_000)
		marks := map[int64]int64{0: 0, 8: 3}[th]
		if got := fa(f, 1).FCI[0]; got != marks || f.Delivered != 6 {
			t.Errorf("FA threshold %d: %d FCI marks, %d delivered; want %d and 6", th, got, f.Delivered, marks)
		}
		if sum(src.QHist) != 0 {
			t.Error("an FA counted a queue histogram (the FE's register)")
		}
	}
}

// In-order release: a frame lost in the fabric stalls its source's later
// frames at the destination (they wait their turn), as the program does
// without a reassembly timer.
func TestSwitchInOrderStallsAfterLoss(t *testing.T) {
	f := swFabric(2, 1, 1)
	flowTo(f, 0, 1, 0)
	src := fa(f, 0)
	src.Credit[0] = 10
	f.AddApp(devIndex(f, src), &SwApp{Kind: SwKindData, FrameBytes: 256, PeriodPs: 100_000, Batches: 10, PerBatch: 1, AppID: 1, Enabled: true})
	up := f.Links[src.Out[swFAPort]]
	f.AdvanceTo(250_000) // frames 0, 1, 2 sent
	up.Up = false
	f.AdvanceTo(350_000) // frame 3 lost
	up.Up = true
	f.AdvanceTo(10_000_000)
	dst := fa(f, 1)
	if f.Delivered != 3 || dst.SeqIn[0] != 3 || dst.Waiting() != 6 {
		t.Errorf("delivered %d, next expected %d, waiting %d: want 3, 3, 6", f.Delivered, dst.SeqIn[0], dst.Waiting())
	}
	if n := dst.LatHist; sum(n) != 9 {
		t.Errorf("latency histogram holds %d, want the 9 that arrived", sum(n))
	}
	if f.InFlight() != 6 {
		t.Errorf("%d data frames held, want 6", f.InFlight())
	}
	// The control plane skips the lost frame: the rest go.
	dst.SeqIn[0] = 4
	f.Resume()
	if f.Delivered != 9 || dst.Waiting() != 0 || dst.SeqIn[0] != 10 {
		t.Errorf("after the reset: delivered %d, waiting %d, next %d; want 9, 0, 10", f.Delivered, dst.Waiting(), dst.SeqIn[0])
	}
}

// The reassembly timer, per frame: FA 0 sprays frame k (one every 100 ns)
// over its four FEs in turn, and its link to FE 0 is down from 0.25 to
// 2.25 us, so frames 4, 8, 12, 16 and 20 are lost: five gaps, each with a
// frame waiting behind it. Each gap is given up when the age of the frame
// after it (now - its send time) reaches the timeout, 1 us: frame 5, sent
// at 0.5 us, at exactly 1.5 us;
// the last, 21, at 3.1 us. The stall ends one timeout after the last
// loss, not one timeout per gap (the stall-age design's 5 us and more).
// Without a timer the stall stays; a timeout set later gives up at once
// every gap whose successor is already that old.
func TestSwitchReassemblyTimerGivesUpABurstAtOnce(t *testing.T) {
	var up *SwLink
	// step advances the clock to t (every event before it), the link
	// coming back at 2.25 us.
	step := func(f *SwitchFabric, t int64) {
		if t > 2_250_000 && !up.Up {
			f.AdvanceTo(2_250_000)
			up.Up = true
		}
		f.AdvanceTo(t)
	}
	run := func(timeoutNs int64) *SwitchFabric {
		f := swFabric(2, 4, 1)
		flowTo(f, 0, 1, 0)
		src, dst := fa(f, 0), fa(f, 1)
		src.Credit[0] = 40
		dst.ReasmTimeout = timeoutNs
		f.AddApp(devIndex(f, src), &SwApp{Kind: SwKindData, FrameBytes: 256, PeriodPs: 100_000, Batches: 40, PerBatch: 1, AppID: 1, Enabled: true})
		up = f.Links[src.Out[swFAPort]]
		f.AdvanceTo(250_000)
		up.Up = false
		return f
	}
	f := run(1000)
	dst := fa(f, 1)
	step(f, 1_500_000) // every event before 1.5 us
	if f.Delivered != 4 || dst.SeqIn[0] != 4 || dst.ReasmDrops[0] != 0 {
		t.Errorf("just before 1.5 us: delivered %d, next %d, given up %d; want 4, 4, 0 (frame 5 not yet 1 us old)", f.Delivered, dst.SeqIn[0], dst.ReasmDrops[0])
	}
	step(f, 1_500_001)
	if f.Delivered != 7 || dst.SeqIn[0] != 8 || dst.ReasmDrops[0] != 1 {
		t.Errorf("at 1.5 us: delivered %d, next %d, given up %d; want 7, 8, 1 (4 given up, 5..7 out)", f.Delivered, dst.SeqIn[0], dst.ReasmDrops[0])
	}
	step(f, 3_100_001) // frame 21, sent at 2.1 us, expires at 3.1 us
	if dst.ReasmDrops[0] != 5 || dst.Waiting() != 0 || dst.SeqIn[0] < 30 {
		t.Errorf("at 3.1 us: given up %d, waiting %d, next %d; want 5, 0, 30 or more (every gap given up, what arrived released)", dst.ReasmDrops[0], dst.Waiting(), dst.SeqIn[0])
	}
	step(f, 20_000_000)
	if f.Delivered != 35 || dst.SeqIn[0] != 40 || dst.ReasmDrops[0] != 5 || f.InFlight() != 0 || f.Delivered+dst.ReasmDrops[0] != f.Generated {
		t.Errorf("at the end: delivered %d, next %d, given up %d, held %d; want 35, 40, 5, 0: every frame sent released or given up",
			f.Delivered, dst.SeqIn[0], dst.ReasmDrops[0], f.InFlight())
	}

	f = run(0)
	dst = fa(f, 1)
	step(f, 20_000_000)
	if f.Delivered != 4 || dst.ReasmDrops[0] != 0 || dst.Waiting() != 31 {
		t.Errorf("no timer: delivered %d, given up %d, waiting %d; want 4, 0, 31", f.Delivered, dst.ReasmDrops[0], dst.Waiting())
	}
	// The control plane sets a timeout: every waiting frame is older than
	// it, so every gap goes at once.
	dst.ReasmTimeout = 1000
	f.Resume()
	if f.Delivered != 35 || dst.ReasmDrops[0] != 5 || dst.Waiting() != 0 || dst.SeqIn[0] != 40 {
		t.Errorf("timer set late: delivered %d, given up %d, waiting %d, next %d; want 35, 5, 0, 40", f.Delivered, dst.ReasmDrops[0], dst.Waiting(), dst.SeqIn[0])
	}
	// Raised while frames wait: they wait until the new timeout.
	f = run(1000)
	dst = fa(f, 1)
	step(f, 1_000_000)
	dst.ReasmTimeout = 2000
	f.Resume()
	step(f, 2_500_000)
	if dst.ReasmDrops[0] != 0 || f.Delivered != 4 {
		t.Errorf("timeout raised to 2 us: given up %d, delivered %d by 2.5 us; want 0, 4", dst.ReasmDrops[0], f.Delivered)
	}
	step(f, 2_500_001)
	if dst.ReasmDrops[0] != 1 {
		t.Errorf("timeout raised to 2 us: given up %d at 2.5 us, want 1 (frame 5's)", dst.ReasmDrops[0])
	}
}

// A frame that arrives after its number was given up is dropped, not
// released: every frame sent is either released or counted in ReasmDrops.
// Here FA 0's link to FE 1 is 3 us long: every odd frame (one every 100
// ns) arrives 3 us late, after the even frame behind it, 1 us old, gave
// its number up; the last, 29, has no frame behind it and is released.
func TestSwitchReassemblyLateFramesDropped(t *testing.T) {
	f := swFabric(2, 2, 1)
	flowTo(f, 0, 1, 0)
	src, dst := fa(f, 0), fa(f, 1)
	src.Credit[0] = 30
	dst.ReasmTimeout = 1000
	f.Links[src.Out[swFAPort+1]].PropPs = 3_000_000
	f.AddApp(devIndex(f, src), &SwApp{Kind: SwKindData, FrameBytes: 256, PeriodPs: 100_000, Batches: 30, PerBatch: 1, AppID: 1, Enabled: true})
	f.AdvanceTo(20_000_000)
	if sum(dst.LatHist) != 30 || f.InFlight() != 0 {
		t.Fatalf("%d frames arrived, %d held; want 30 and 0", sum(dst.LatHist), f.InFlight())
	}
	if f.Delivered != 16 || dst.ReasmDrops[0] != 14 {
		t.Errorf("delivered %d, given up %d: want 16 (the 15 even frames and 29) and 14", f.Delivered, dst.ReasmDrops[0])
	}
}

func sum(h []int64) int64 {
	var n int64
	for _, c := range h {
		n += c
	}
	return n
}

// The same seed, the same fabric.
func TestSwitchDeterministic(t *testing.T) {
	run := func(seed uint64) []int64 {
		f := swFabric(3, 2, seed)
		for src := 0; src < 2; src++ {
			flowTo(f, src, 2, src)
			f.AddApp(devIndex(f, fa(f, src)), &SwApp{Kind: SwKindData, FrameBytes: 256, PeriodPs: 40_000, Batches: 500, PerBatch: 1, AppID: 1, Enabled: true})
		}
		d := fa(f, 2)
		d.CreditPort[0] = 0
		c := new([SwCreditSlots]Source)
		for s := range c {
			c[s] = Source{Valid: true, FA: s % 2, VOQ: s % 2}
		}
		d.CreditTo[0] = c
		f.AddApp(devIndex(f, d), &SwApp{Kind: SwKindCredit, FrameBytes: 64, PeriodPs: 300_000, Batches: 100, PerBatch: 1, PayloadLength: 8, Enabled: true})
		f.AdvanceTo(40_000_000)
		return append(append([]int64{}, d.LatHist...), f.Devices[0].QHist...)
	}
	a, b := run(5), run(5)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 5 twice: histograms differ at %d", i)
		}
	}
	if sum(a) == 0 {
		t.Fatal("nothing crossed")
	}
}

// A jittered application's gaps between batches are its period plus a
// uniform draw from 0..JitterPs in whole ns (the generator's ibg_jitter):
// within those bounds, with the uniform's mean and variance, and the same
// for the same source.
func TestSwitchAppJitter(t *testing.T) {
	gaps := func(seed uint64) []int64 {
		f := swFabric(2, 1, 1)
		a := &SwApp{Kind: SwKindData, FrameBytes: 256, PeriodPs: 1000, JitterPs: 200_000, Rand: rand.New(rand.NewPCG(seed, 2)),
			Batches: 20000, PerBatch: 1, AppID: 1, Enabled: true}
		f.AddApp(devIndex(f, fa(f, 0)), a)
		f.AdvanceTo(1)
		var out []int64
		for !a.Done() {
			at := a.NextPs
			f.AdvanceTo(at + 1)
			if !a.Done() {
				out = append(out, a.NextPs-at)
			}
		}
		return out
	}
	g := gaps(7)
	if len(g) != 19998 {
		t.Fatalf("%d gaps of 20000 batches", len(g))
	}
	var sum, sq float64
	for _, v := range g {
		if v < 1000 || v > 201_000 || v%1000 != 0 {
			t.Fatalf("gap %d ps: want 1000 + a whole ns in 0..200 ns", v)
		}
		x := float64(v-1000) / 1000
		sum += x
		sq += x * x
	}
	n := float64(len(g))
	mean, vr := sum/n, sq/n-(sum/n)*(sum/n)
	// Uniform on 0..200: mean 100, variance (201^2-1)/12 = 3366.7; the
	// mean's standard error is 0.41 ns.
	if math.Abs(mean-100) > 2 || math.Abs(vr-3366.7) > 0.05*3366.7 {
		t.Errorf("jitter mean %.2f ns, variance %.1f: want 100 and 3366.7 (uniform on 0..200 ns)", mean, vr)
	}
	if h := gaps(7); !slices.Equal(h, g) {
		t.Error("the same source gave other gaps")
	}
	if h := gaps(8); slices.Equal(h, g) {
		t.Error("another source gave the same gaps")
	}
}

// Credit and reachability frames take their time on the wire: an FE's
// link to FA 1, kept busy by data from FAs 0 and 2, also carries FA 3's
// credits for FA 1 and the FE's reachability cells. Every frame its port
// counted sending took its serialisation time on the link, so the port's
// counters never claim more time than the link has had (the busy figure
// the bench reads from them is the time the link was taken), and data
// frames behind a control frame find it in the queue's depth. A control
// frame that crossed the link beside the data (no slot of its own) would
// add its time to the counters only.
func TestSwitchControlFramesTakeTheLink(t *testing.T) {
	f := swFabric(4, 1, 1)
	f.CreditCap = 1 << 30
	for _, src := range []int{0, 2} {
		flowTo(f, src, 1, 0)
		fa(f, src).Credit[0] = 1 << 20
		f.AddApp(devIndex(f, fa(f, src)), &SwApp{Kind: SwKindData, FrameBytes: 256, PeriodPs: 1000, Batches: 1, PerBatch: 2000, AppID: 1, Enabled: true})
	}
	creditsFrom(f, 3, 1, 5) // FA 3's port credits FA 1's VOQ 5: over the FE's link to FA 1
	f.AddApp(devIndex(f, fa(f, 3)), &SwApp{Kind: SwKindCredit, FrameBytes: 64, PeriodPs: 50_000, Batches: 1000, PerBatch: 1, PayloadLength: 16, Enabled: true})
	fe := f.Devices[0]
	fe.ReachPort[0] = swFEPort + 1
	f.AddApp(0, &SwApp{Kind: SwKindReach, FrameBytes: 64, PeriodPs: 100_000, Batches: 1000, PerBatch: 1, Enabled: true})
	const until = 30_000_000 // 30 us: the link to FA 1 is backlogged throughout (4000 frames of 22 ns)
	f.AdvanceTo(until)
	l := f.Links[fe.Out[swFEPort+1]]
	var wire int64
	for size, n := range fe.Ports[swFEPort+1].Tx {
		wire += n * l.serPs(size)
	}
	ctl := fe.Ports[swFEPort+1].Tx[64]
	if ctl < 800 || fe.Ports[swFEPort+1].Tx[256] == 0 {
		t.Fatalf("the FE's port to FA 1 sent %d control frames and %d data frames", ctl, fe.Ports[swFEPort+1].Tx[256])
	}
	// The counters cover what was queued by now; the link is taken until
	// l.busy, and was never idle from the first frame on.
	if wire > l.busy {
		t.Errorf("the port counted %d ps of frames (%d of them control frames) on a link busy until %d ps", wire, ctl, l.busy)
	}
	if f := fa(f, 1).Credit[5]; f == 0 {
		t.Error("FA 1's VOQ 5 got no credit: the credits did not cross")
	}
}
