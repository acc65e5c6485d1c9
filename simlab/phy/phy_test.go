package phy

import (
	"math"
	"testing"
)

// The paper's quantities, computed here from IEEE 802.3 numbers, not from the model.
const (
	laneBaud   = 25.78125  // GBd, 25GBASE-R lane (clause 107.1)
	rs528Bits  = 528 * 10  // RS(528,514) codeword, 10-bit symbols (clause 91.5.2.1)
	msgBits    = 514 * 10  // its message: 20 transcoded 257-bit blocks
	cwBytes    = 20 * 32   // MAC bytes per codeword (20 x 256 data bits)
	tDec528    = 15.0      // paper §3, Fig. 2
	paperWorst = 246.0     // paper §3.1, 25G RS(528,514), one hop
	paperHet   = 159.0     // paper §3.2.2, one 25G link among 100G
	frame64    = 64        // bytes, DA to FCS
	stride64   = 88        // 8 preamble + 64 + 12 IPG = 84, up to a block boundary
	hdrBytes   = 6 + 6 + 2 // DA, SA, EtherType
	preamble   = 8         // preamble + SFD
	blockTime  = 66 / 25.78125
)

// paperFormula is §3.1: the latency from a frame's header passing the receiver to its
// header (cut-through) or whole frame (store-and-forward) being decoded, for a header
// starting at byte offset o of a codeword of tAcc on a link with tDec, frame of size.
func paperFormula(o, size int, tAcc, tDec float64, saf bool) (float64, byte) {
	// T_offset: the header's offset in time within the codeword; message bytes are
	// carried at 257/256 of their bits and the parity follows them (clause 91.5.2.5).
	tOff := float64(o) / cwBytes * tAcc * msgBits / rs528Bits
	one := tAcc - tOff + tDec
	two := (tAcc - tOff) + tAcc + 2*tDec
	switch {
	case o+hdrBytes > cwBytes:
		return two, 'C'
	case o+size > cwBytes:
		if saf {
			return two, 'B'
		}
		return one, 'B'
	default:
		return one, 'A'
	}
}

func mustLink(t testing.TB, c LinkConfig) *Link {
	t.Helper()
	l, err := NewLink(c)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestWorstCasePerHop25GRS528(t *testing.T) {
	l := mustLink(t, Preset25G(FECRS528))
	tAcc := rs528Bits / laneBaud
	if math.Abs(l.AccumulationNs()-tAcc) > 1e-9 {
		t.Fatalf("T_acc %v, want %v", l.AccumulationNs(), tAcc)
	}
	worst := 0.0
	seen := map[byte]int{}
	for k := 0; k < 200; k++ {
		f, err := l.Send(0, frame64) // offered at once: back-to-back frames
		if err != nil {
			t.Fatal(err)
		}
		// The traffic alone says where the header is: frame k's DA is at 88k+8.
		pos := stride64*k + preamble
		if f.HeaderPos != int64(pos) {
			t.Fatalf("frame %d header at %d, traffic puts it at %d", k, f.HeaderPos, pos)
		}
		o := pos % cwBytes
		for _, saf := range []bool{false, true} {
			want, c := paperFormula(o, frame64, tAcc, tDec528, saf)
			got := f.HeaderNs - f.HeaderFirstBitRxNs
			if saf {
				got = f.LastNs - f.HeaderFirstBitRxNs
			}
			if math.Abs(got-want) > 0.01 {
				t.Fatalf("frame %d offset %d saf=%v: %.3f ns, formula %.3f (case %c)", k, o, saf, got, want, c)
			}
			if c != f.Case {
				t.Fatalf("frame %d offset %d: case %c, formula's %c", k, o, f.Case, c)
			}
			if !saf {
				seen[c]++
				worst = math.Max(worst, got)
			}
		}
	}
	for _, c := range []byte("ABC") {
		if seen[c] == 0 {
			t.Errorf("case %c never met by back-to-back 64 B frames", c)
		}
	}
	if math.Abs(worst-paperWorst) > 5 {
		t.Errorf("worst case per hop %.1f ns, paper %.0f ns", worst, paperWorst)
	}
	t.Logf("worst case per hop at 25G RS(528,514): %.2f ns (paper: %.0f ns)", worst, paperWorst)
}

func TestFECOffAddsNoFECDelay(t *testing.T) {
	c := Preset25G(FECNone)
	c.PropagationNs = 50
	l := mustLink(t, c)
	hdrTime := hdrBytes * 8 * 66 / 64 / laneBaud
	for k := 0; k < 100; k++ {
		f, err := l.Send(float64(k)*37, 64+k)
		if err != nil {
			t.Fatal(err)
		}
		// Without FEC the receiver holds a byte only until its 66-bit block is in.
		hd := f.HeaderNs - f.HeaderFirstBitRxNs - hdrTime
		ld := f.LastNs - (f.LastTxNs + c.PropagationNs)
		if hd < -1e-9 || hd > blockTime+1e-9 || ld < -1e-9 || ld > blockTime+1e-9 {
			t.Fatalf("frame %d: header held %.3f ns, last byte %.3f ns beyond arrival; at most one block (%.3f ns)", k, hd, ld, blockTime)
		}
		if f.Case != 0 {
			t.Fatalf("frame %d: FEC case %c without FEC", k, f.Case)
		}
	}
}

func TestStripingAndSkew100G(t *testing.T) {
	c := Preset100GSR4()
	plain := mustLink(t, c)
	skews := []float64{0, 3, 7, 12}
	c.SkewNs = skews
	skewed := mustLink(t, c)
	tAcc := rs528Bits / (4 * laneBaud) // striped over four lanes: a quarter (paper §3.2.1)
	if math.Abs(plain.AccumulationNs()-tAcc) > 1e-9 {
		t.Fatalf("T_acc %v, want %v", plain.AccumulationNs(), tAcc)
	}
	for k := 0; k < 200; k++ {
		a, _ := plain.Send(0, frame64)
		b, _ := skewed.Send(0, frame64)
		want, _ := paperFormula(int(a.HeaderPos%cwBytes), frame64, tAcc, tDec528, false)
		if got := a.HeaderNs - a.HeaderFirstBitRxNs; math.Abs(got-want) > 0.01 {
			t.Fatalf("frame %d: %.3f ns, formula %.3f", k, got, want)
		}
		// De-skew holds every lane to the slowest: 12 ns on every byte.
		if d := b.HeaderNs - a.HeaderNs; math.Abs(d-12) > 1e-9 {
			t.Fatalf("frame %d: skew adds %.3f ns, want 12", k, d)
		}
	}
	buf := skewed.DeskewBufferNs()
	for i, s := range skews {
		if buf[i] != 12-s {
			t.Errorf("lane %d de-skew buffer %.1f ns, want %.1f", i, buf[i], 12-s)
		}
	}
	c.SkewNs = []float64{0, 0, 0, 181}
	if _, err := NewLink(c); err == nil {
		t.Error("181 ns of skew accepted; the receiver de-skews at most 180 ns")
	}
}

// Figs. 5-6: with FEC a cut-through switch waits as long as a store-and-forward one
// except in case B; without FEC they differ by the frame's serialization every time.
func TestCutThroughVsStoreAndForward(t *testing.T) {
	fec := mustLink(t, Preset25G(FECRS528))
	raw := mustLink(t, Preset25G(FECNone))
	tAcc := rs528Bits / laneBaud
	for k := 0; k < 80; k++ { // 80 frames cover every block offset of the codeword once
		f, _ := fec.Send(0, frame64)
		r, _ := raw.Send(0, frame64)
		gap := f.LastNs - f.HeaderNs
		switch f.Case {
		case 'A', 'C':
			if gap > 1e-9 {
				t.Fatalf("frame %d case %c: store-and-forward waits %.3f ns more than cut-through", k, f.Case, gap)
			}
		case 'B':
			if math.Abs(gap-(tAcc+tDec528)) > 0.01 {
				t.Fatalf("frame %d case B: store-and-forward waits %.3f ns more, want T_acc+T_dec", k, gap)
			}
		}
		rawGap := r.LastNs - r.HeaderNs
		if want := float64(frame64-hdrBytes) * 8 * 66 / 64 / laneBaud; math.Abs(rawGap-want) > blockTime {
			t.Fatalf("frame %d without FEC: store-and-forward waits %.3f ns more, want about %.3f", k, rawGap, want)
		}
	}
	// Marginal latency (Fig. 6): what FEC adds over the same link without it, against
	// what the switch waits for without FEC. A store-and-forward switch had to take the
	// whole frame in anyway, so the longer the frame the less FEC costs it in
	// proportion; a cut-through switch, which needed 14 bytes, waits for a codeword.
	prevSAF := math.Inf(1)
	for _, size := range []int{64, 512, 1518} {
		fec := mustLink(t, Preset25G(FECRS528))
		raw := mustLink(t, Preset25G(FECNone))
		var ct, saf, ct0, saf0 float64
		const n = 400
		for k := 0; k < n; k++ {
			f, _ := fec.Send(0, size)
			r, _ := raw.Send(0, size)
			ct += (f.HeaderNs - r.HeaderNs) / n
			saf += (f.LastNs - r.LastNs) / n
			ct0 += (r.HeaderNs - r.HeaderFirstBitRxNs) / n
			saf0 += (r.LastNs - r.HeaderFirstBitRxNs) / n
		}
		t.Logf("%4d B at 25G RS(528,514): mean marginal latency cut-through %.1f ns over %.1f ns, store-and-forward %.1f ns over %.1f ns",
			size, ct, ct0, saf, saf0)
		if ct/ct0 <= 3*saf/saf0 {
			t.Errorf("%d B: cut-through's marginal latency (%.1f ns over %.1f) not far above store-and-forward's (%.1f over %.1f) in proportion",
				size, ct, ct0, saf, saf0)
		}
		if saf/saf0 >= prevSAF {
			t.Errorf("%d B: store-and-forward's marginal share %.2f not below the shorter frame's %.2f", size, saf/saf0, prevSAF)
		}
		prevSAF = saf / saf0
	}
}

// §3.2.2: one 25G link among 100G links adds the difference of their worst cases.
func TestHeterogeneousLink(t *testing.T) {
	worst := func(c LinkConfig) float64 {
		l := mustLink(t, c)
		w := 0.0
		for k := 0; k < 200; k++ {
			f, _ := l.Send(0, frame64)
			w = math.Max(w, f.HeaderNs-f.HeaderFirstBitRxNs)
		}
		return w
	}
	d := worst(Preset25G(FECRS528)) - worst(Preset100GSR4())
	// The formula's worst header offset (case C) on each link, computed here.
	worstOf := func(tAcc float64) float64 {
		w := 0.0
		for o := 0; o < cwBytes; o += 8 {
			v, _ := paperFormula(o, frame64, tAcc, tDec528, false)
			w = math.Max(w, v)
		}
		return w
	}
	want := worstOf(rs528Bits/laneBaud) - worstOf(rs528Bits/(4*laneBaud))
	if math.Abs(d-want) > 0.01 {
		t.Errorf("25G worst minus 100G worst %.3f ns, formula %.3f", d, want)
	}
	if math.Abs(d-paperHet) > 5 {
		t.Errorf("25G link among 100G adds %.1f ns, paper %.0f ns", d, paperHet)
	}
	t.Logf("one 25G link among 100G: %.2f ns more at worst (paper: %.0f ns)", d, paperHet)

	// The same along a path: five cut-through hops, the third link 25G.
	run := func(mid LinkConfig) (lo, hi float64) {
		p := path(t, Preset100GSR4(), mid)
		lo = math.Inf(1)
		for k := 0; k < 400; k++ {
			tr, err := p.Send(float64(k)*91.7, frame64)
			if err != nil {
				t.Fatal(err)
			}
			lo, hi = math.Min(lo, tr.HeaderLatencyNs()), math.Max(hi, tr.HeaderLatencyNs())
		}
		return lo, hi
	}
	lo100, hi100 := run(Preset100GSR4())
	loHet, hiHet := run(Preset25G(FECRS528))
	if hiHet-hi100 < d-60 || hiHet <= hi100 || loHet <= lo100 {
		t.Errorf("path with a 25G link: %.1f..%.1f ns, all-100G %.1f..%.1f ns", loHet, hiHet, lo100, hi100)
	}
	t.Logf("five hops, all 100G: %.1f..%.1f ns; one 25G: %.1f..%.1f ns", lo100, hi100, loHet, hiHet)
}

// path builds six links (five cut-through hops), the third link being mid; each link's
// codeword phase differs (its own alignment point).
func path(t testing.TB, c, mid LinkConfig) *Path {
	// The links' clock offsets, within 802.3's +-100 ppm.
	ppm := [6]float64{0, -37, 52, -88, 15, 71}
	mk := func(i int, c LinkConfig) *Link {
		c.AlignNs = float64(i) * 17.3
		c.PPM = ppm[i]
		return mustLink(t, c)
	}
	p := &Path{First: mk(0, c)}
	for i := 1; i < 6; i++ {
		cc := c
		if i == 3 {
			cc = mid
		}
		p.Hops = append(p.Hops, Hop{Mode: CutThrough, PipelineNs: 300, Out: mk(i, cc)})
	}
	return p
}

// Fig. 7: jitter accumulates over hops: the envelope of five hops is wider than one's.
func TestJitterAccumulatesOverHops(t *testing.T) {
	p := path(t, Preset25G(FECRS528), Preset25G(FECRS528))
	lo1, hi1 := math.Inf(1), 0.0
	lo5, hi5 := math.Inf(1), 0.0
	for k := 0; k < 500; k++ {
		tr, err := p.Send(float64(k)*10_000, frame64) // 5 ms: the phases drift
		if err != nil {
			t.Fatal(err)
		}
		one := tr[0].HeaderNs - tr[0].SentNs
		lo1, hi1 = math.Min(lo1, one), math.Max(hi1, one)
		lo5, hi5 = math.Min(lo5, tr.HeaderLatencyNs()), math.Max(hi5, tr.HeaderLatencyNs())
	}
	if hi5-lo5 <= hi1-lo1 {
		t.Errorf("five-hop envelope %.1f ns not wider than one hop's %.1f ns", hi5-lo5, hi1-lo1)
	}
	t.Logf("envelope: one link %.1f ns, six links %.1f ns", hi1-lo1, hi5-lo5)
}

func TestRejects(t *testing.T) {
	for _, c := range []LinkConfig{
		{Name: "3 lanes", LaneRate: Lane25G, Lanes: 3},
		{Name: "no rate", Lanes: 1},
		{Name: "fire x4", LaneRate: Lane25G, Lanes: 4, FEC: FECFire},
		{Name: "skews", LaneRate: Lane25G, Lanes: 4, SkewNs: []float64{1}},
	} {
		if _, err := NewLink(c); err == nil {
			t.Errorf("%s accepted", c.Name)
		}
	}
	l := mustLink(t, Preset25G(FECNone))
	if _, err := l.Send(0, 10); err == nil {
		t.Error("10-byte frame accepted")
	}
}

func BenchmarkPathFiveHops(b *testing.B) {
	p := path(b, Preset100GSR4(), Preset25G(FECRS528))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := p.Send(float64(i)*100, 256); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}

// The other codes: the same formulas with their own codeword and decoder. The
// 50G PAM4 lane carries RS(544,514) codewords (5440 bits) at 53.125 Gb/s
// (clause 134); the Fire code a 2112-bit codeword of 32 65-bit blocks
// (clause 74.7); a pipelined decoder charges T_dec once.
func TestOtherCodesFollowTheFormulas(t *testing.T) {
	for _, c := range []struct {
		cfg                  LinkConfig
		bits, msg, dataBytes int
		rate, tDec           float64
		perCodeword          bool
	}{
		{Preset50GPAM4(), 5440, 5140, 640, 53.125, 31, true},
		{Preset25G(FECFire), 2112, 2080, 256, laneBaud, 33, true},
		{func() LinkConfig { c := Preset25G(FECRS528); c.Accounting = Pipelined; return c }(), rs528Bits, msgBits, cwBytes, laneBaud, tDec528, false},
	} {
		l := mustLink(t, c.cfg)
		tAcc := float64(c.bits) / c.rate
		for k := 0; k < 300; k++ {
			f, _ := l.Send(0, frame64)
			o := (stride64*k + preamble) % c.dataBytes
			tOff := float64(o) / float64(c.dataBytes) * tAcc * float64(c.msg) / float64(c.bits)
			want := tAcc - tOff + c.tDec
			if o+hdrBytes > c.dataBytes {
				want += tAcc
				if c.perCodeword {
					want += c.tDec
				}
			}
			if got := f.HeaderNs - f.HeaderFirstBitRxNs; math.Abs(got-want) > 0.01 {
				t.Fatalf("%s frame %d offset %d: %.3f ns, formula %.3f", c.cfg.Name, k, o, got, want)
			}
		}
	}
}

// A cut-through hop into a faster link waits until the frame can leave without
// running out of bytes; into a link as fast, it leaves once the header is in.
func TestCutThroughNeverUnderruns(t *testing.T) {
	for _, c := range []struct {
		in, out LinkConfig
		waits   bool
	}{
		{Preset25G(FECRS528), Preset100GSR4(), true},
		{Preset25G(FECNone), Preset25G(FECNone), false},
	} {
		p := &Path{First: mustLink(t, c.in), Hops: []Hop{{Mode: CutThrough, Out: mustLink(t, c.out)}}}
		for k := 0; k < 50; k++ {
			tr, err := p.Send(float64(k)*2000, 1518)
			if err != nil {
				t.Fatal(err)
			}
			in, out := tr[0], tr[1]
			// The egress puts the last byte on the line no earlier than the ingress has it.
			if out.LastTxNs < in.LastNs-1e-6 {
				t.Fatalf("%s -> %s frame %d: last byte sent at %.1f ns, received at %.1f ns", c.in.Name, c.out.Name, k, out.LastTxNs, in.LastNs)
			}
			waited := out.SentNs > in.HeaderNs+1e-6
			if waited != c.waits {
				t.Fatalf("%s -> %s frame %d: offered at %.1f ns, header in at %.1f ns", c.in.Name, c.out.Name, k, out.SentNs, in.HeaderNs)
			}
		}
	}
}

// Same traffic, same times: the model draws nothing.
func TestDeterministic(t *testing.T) {
	run := func() []Trip {
		p := path(t, Preset100GSR4(), Preset25G(FECRS528))
		var out []Trip
		for k := 0; k < 100; k++ {
			tr, err := p.Send(float64(k*k%997)*3.7+float64(k)*500, 64+(k*37)%1455)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tr)
		}
		return out
	}
	a, b := run(), run()
	for i := range a {
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				t.Fatalf("frame %d link %d differs between runs", i, j)
			}
		}
	}
}
