package lgmodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	lg "testbed/p4/linkguardian"
)

// The courier's accounting (txpath.go) observes the run: replaying
// recordings, jumping cycles and running the loop ahead must feed it
// exactly the inputs stepping feeds it, so the read queue's watermark is
// the same either way, read at the end and in slices along the way; and
// it changes nothing else in the run.
func TestTxPathSameReplayedOrStepped(t *testing.T) {
	type cas struct {
		mode   Mode
		bps    float64
		loss   float64
		maxRun int64
	}
	var cases []cas
	for _, bps := range []float64{25e9, 100e9} {
		cases = append(cases, cas{Ordered, bps, 1e-3, 0}, cas{Ordered, bps, 1e-3, 256}, cas{NonBlocking, bps, 1e-3, 256},
			cas{Ordered, bps, 1e-2, 0}, cas{NonBlocking, bps, 1e-2, 0})
	}
	for _, k := range cases {
		for seed := uint64(0); seed < 2; seed++ {
			c, err := Defaults(k.mode, k.bps, k.loss, 40_000)
			if err != nil {
				t.Fatal(err)
			}
			c.MaxRun = k.maxRun
			plain, _ := Run(c, rand.New(rand.NewPCG(seed, 3)))
			c.CourierLoop, c.AckExtra = time.Microsecond, 500*time.Nanosecond
			slow := c
			slow.NoReplay, slow.NoCycleSkip, slow.NoLoopAhead = true, true, true
			f, err := New(c, rand.New(rand.NewPCG(seed, 3)))
			if err != nil {
				t.Fatal(err)
			}
			s, _ := New(slow, rand.New(rand.NewPCG(seed, 3)))
			for at := 97 * time.Microsecond; ; at += 97 * time.Microsecond {
				df, ds := f.AdvanceTo(at), s.AdvanceTo(at)
				rf, rs := f.Result(), s.Result()
				if rf != rs || df != ds {
					t.Fatalf("%+v seed %d at %v: replayed and jumped %+v, stepped %+v", k, seed, at, rf, rs)
				}
				if df {
					break
				}
			}
			if k.mode == Ordered && (f.s.replayed == 0 || k.loss == 1e-3 && f.s.cyc.jumpedSeqs == 0) {
				t.Errorf("%+v seed %d: %d replays, %d originals jumped: the case does not exercise them", k, seed, f.s.replayed, f.s.cyc.jumpedSeqs)
			}
			r := f.Result()
			if r.MaxTxQueueBytes == 0 {
				t.Errorf("%+v seed %d: the read queue never held a copy", k, seed)
			}
			q := r.MaxTxQueueBytes
			r.MaxTxQueueBytes = 0
			if r != plain {
				t.Errorf("%+v seed %d: the courier's accounting changed the run: %+v, without it %+v", k, seed, r, plain)
			}
			t.Logf("%+v seed %d: read queue %.1f KB, copies held %.1f KB", k, seed, float64(q)/1e3, float64(r.MaxTxBufferBytes)/1e3)
		}
	}
}

// The accounting reads what the test harness that plays the artifact's
// path step by step reads (txpath_test.go's artifactPath, with the
// courier): the same run, one sampling the sender's ACK at fixed steps of
// the clock, the other deciding each copy at its own time, so they agree
// to within a couple of copies, not exactly (their courier phases differ
// by the way back).
func TestTxPathAgreesWithTheStepByStepPath(t *testing.T) {
	for _, x := range []struct {
		mode Mode
		mac  bool // the read port at the copy's own time (Config.LoopbackMAC)
	}{{NonBlocking, false}, {Ordered, false}, {Ordered, true}} {
		mode := x.mode
		period := map[Mode]int64{Ordered: 0, NonBlocking: 124_000}[mode]
		c, err := Defaults(mode, 100e9, 1e-3, 0)
		if err != nil {
			t.Fatal(err)
		}
		const frames = 20_000
		extras := pathExtras{courierPS: durPS(time.Microsecond)}
		if x.mac {
			extras.readBytes = lg.BufferedHeaderBytes
		}
		harness, _ := artifactPath(t, c, 7, period, frames, extras)
		c.CourierLoop = time.Microsecond
		c.LoopbackMAC = x.mac
		m, err := NewOffered(c, rand.New(rand.NewPCG(7, 7)))
		if err != nil {
			t.Fatal(err)
		}
		if period == 0 {
			period = m.s.serFrame
		}
		for i := int64(0); i < frames; i++ {
			if _, err := m.Offer(Frame{At: i * period, Bytes: c.FrameBytes, Loss: c.Loss, U: -1}); err != nil {
				t.Fatal(err)
			}
		}
		m.Advance(frames * period)
		m.StopOffering()
		m.Advance(1 << 62)
		got := m.Result().MaxTxQueueBytes
		t.Logf("%s, read port's own time %v: the accounting reads %.1f KB, the step-by-step path %.1f KB", mode, x.mac, float64(got)/1e3, float64(harness)/1e3)
		if d := got - harness; d < -2*1600 || d > 2*1600 {
			t.Errorf("%s, read port's own time %v: the accounting reads %d B, the step-by-step path %d B: more than two copies apart", mode, x.mac, got, harness)
		}
	}
}

// The model's stress test with the courier's accounting (WithCourier), as
// the simulated switch runs it (runs of at most 256 frames): frames per
// CPU-second, against the same runs without it (BenchmarkCourierOff*):
// go test -run '^$' -bench Courier ./simlab/lgmodel.
func BenchmarkCourier100GOrdered1e3(b *testing.B)    { benchCourier(b, Ordered, 100e9, true) }
func BenchmarkCourier100GNB1e3(b *testing.B)         { benchCourier(b, NonBlocking, 100e9, true) }
func BenchmarkCourier25GOrdered1e3(b *testing.B)     { benchCourier(b, Ordered, 25e9, true) }
func BenchmarkCourier25GNB1e3(b *testing.B)          { benchCourier(b, NonBlocking, 25e9, true) }
func BenchmarkCourierOff100GOrdered1e3(b *testing.B) { benchCourier(b, Ordered, 100e9, false) }
func BenchmarkCourierOff100GNB1e3(b *testing.B)      { benchCourier(b, NonBlocking, 100e9, false) }
func BenchmarkCourierOff25GOrdered1e3(b *testing.B)  { benchCourier(b, Ordered, 25e9, false) }
func BenchmarkCourierOff25GNB1e3(b *testing.B)       { benchCourier(b, NonBlocking, 25e9, false) }

func benchCourier(b *testing.B, mode Mode, bps float64, courier bool) {
	const frames = 4_000_000
	cpu0 := cpuTime(b)
	for i := 0; i < b.N; i++ {
		c, err := Defaults(mode, bps, 1e-3, frames)
		if err != nil {
			b.Fatal(err)
		}
		c.MaxRun = 256
		if courier {
			c = c.WithCourier()
		}
		if _, err := Run(c, rand.New(rand.NewPCG(uint64(i), 1))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*frames/(cpuTime(b)-cpu0).Seconds(), "frames/cpu-s")
}

// The accounting's jumps over steady stretches (txpath.go, tryJump) give
// the read queue's watermark that deciding every copy gives, on runs as
// the simulated switch makes them (runs of at most 256 frames) and as the
// model alone does, at both speeds, in both modes, at 1e-2 and 1e-4;
// and they do jump: most originals of a run at 1e-4 are jumped over.
func TestTxPathJumpsSameAsEveryCopy(t *testing.T) {
	for _, bps := range []float64{25e9, 100e9} {
		for _, mode := range []Mode{Ordered, NonBlocking} {
			for _, loss := range []float64{1e-2, 1e-4} {
				for _, maxRun := range []int64{0, 256} {
					for seed := uint64(0); seed < 1; seed++ {
						c, err := Defaults(mode, bps, loss, 50_000)
						if err != nil {
							t.Fatal(err)
						}
						c.MaxRun = maxRun
						c = c.WithCourier()
						run := func(noJump bool) (Result, tpJumper) {
							m, err := New(c, rand.New(rand.NewPCG(seed, 5)))
							if err != nil {
								t.Fatal(err)
							}
							m.s.tp.noJump = noJump
							m.Advance(1 << 62)
							return m.Result(), m.s.tp.jump
						}
						every, _ := run(true)
						got, j := run(false)
						name := fmt.Sprintf("%s %gG %g maxRun %d seed %d", mode, bps/1e9, loss, maxRun, seed)
						if got != every {
							t.Errorf("%s: with the jumps %+v, deciding every copy %+v", name, got, every)
						}
						t.Logf("%s: read queue %d B, %d jumps over %d originals", name, got.MaxTxQueueBytes, j.jumps, j.jumped)
						if loss == 1e-4 && j.jumped < c.Frames/2 {
							t.Errorf("%s: %d of %d originals jumped over", name, j.jumped, c.Frames)
						}
					}
				}
			}
		}
	}
}

// The accounting's memo (txpath_memo.go) replays the stretch after a loss,
// the way on from its end (txpath_tail.go) and the build-up after it
// from notes: the read queue's watermark, read
// at the end, and its depth and watermark, read in slices along the way,
// are what deciding every copy gives, exactly, at both speeds, in both modes, on runs as the simulated
// switch makes them and as the model alone does; and the notes are met
// (the case exercises them).
func TestTxPathMemoSameAsDecided(t *testing.T) {
	type cas struct {
		mode   Mode
		bps    float64
		loss   float64
		maxRun int64
		frames int64
	}
	cases := []cas{
		{Ordered, 100e9, 1e-3, 256, 400_000}, {NonBlocking, 100e9, 1e-3, 256, 400_000},
		{Ordered, 100e9, 1e-2, 0, 100_000}, {NonBlocking, 100e9, 1e-2, 0, 100_000},
		{Ordered, 25e9, 1e-3, 256, 200_000}, {NonBlocking, 25e9, 1e-3, 0, 200_000},
	}
	for _, k := range cases {
		c, err := Defaults(k.mode, k.bps, k.loss, k.frames)
		if err != nil {
			t.Fatal(err)
		}
		c.MaxRun = k.maxRun
		c = c.WithCourier()
		run := func(noMemo bool) (*Sim, []int64) {
			m, err := New(c, rand.New(rand.NewPCG(3, 9)))
			if err != nil {
				t.Fatal(err)
			}
			m.s.tp.noMemo, m.s.tp.checkPreset = noMemo, true
			var read []int64
			for at := 211 * time.Microsecond; ; at += 211 * time.Microsecond {
				done := m.AdvanceTo(at)
				now, _, _ := m.TxQueue()
				read = append(read, now, m.Result().MaxTxQueueBytes)
				if done {
					return m, read
				}
			}
		}
		name := fmt.Sprintf("%s %gG %g maxRun %d", k.mode, k.bps/1e9, k.loss, k.maxRun)
		every, everyRead := run(true)
		got, gotRead := run(false)
		if r, w := got.Result(), every.Result(); r != w {
			t.Errorf("%s: with the memo %+v, deciding every copy %+v", name, r, w)
		}
		if !slices.Equal(gotRead, everyRead) {
			t.Errorf("%s: the depth and watermark read along the way with the memo %v, deciding every copy %v", name, gotRead, everyRead)
		}
		tp := got.s.tp
		t.Logf("%s: read queue %d B; stretches %d replayed, %d decided; build-ups %d replayed (%d where a jump stopped at a phased decision), %d decided; ways on from a stretch %d replayed (%d with the jumps' note, %d taken as it), %d decided; %d stretches from where a jump landed",
			name, got.Result().MaxTxQueueBytes, tp.memoHits, tp.memoMisses, tp.bu.hits, tp.bu.flips, tp.bu.misses, tp.tl.hits, tp.tl.jumps, tp.jump.quick, tp.tl.misses, tp.stops)
		if k.bps == 100e9 && k.mode == Ordered && (tp.memoHits == 0 || tp.bu.hits == 0) {
			t.Errorf("%s: the case does not exercise the memo", name)
		}
		if k.bps == 100e9 && k.mode == NonBlocking && k.maxRun == 256 && (tp.tl.hits == 0 || tp.tl.hits < 2*tp.tl.misses) {
			t.Errorf("%s: %d ways on from a stretch replayed, %d decided: the case does not exercise them", name, tp.tl.hits, tp.tl.misses)
		}
		if k.mode == NonBlocking && k.loss == 1e-3 && 2*tp.tl.jumps < tp.tl.hits {
			t.Errorf("%s: %d of %d ways on from a stretch installed with the jumps' note at their end (presetJump)", name, tp.tl.jumps, tp.tl.hits)
		}
		if k.bps == 100e9 && k.mode == NonBlocking && (tp.bu.flips == 0 || 2*tp.bu.flips < tp.bu.hits) {
			t.Errorf("%s: %d of %d build-ups replayed where a jump stopped at a phased decision (flipBuildUp)", name, tp.bu.flips, tp.bu.hits)
		}
		if tp.presetWrong != 0 {
			t.Errorf("%s: at %d of %d ways on installed with the jumps' note, its least copy in flight a period before is not the one the jumper held (presetJump)", name, tp.presetWrong, tp.tl.jumps)
		}
		written := 0
		for _, x := range tp.presetSnaps {
			if !slices.Equal(x[0], x[1]) {
				written++
			}
		}
		if written != 0 {
			t.Errorf("%s: %d of %d ways on's notes handed to the jumper (presetJump) were written over", name, written, len(tp.presetSnaps))
		}
		if tp.noteWrong != 0 {
			t.Errorf("%s: at %d of %d first decisions after a way on's end taken as its note (presetNote), the state noted in full differs", name, tp.noteWrong, tp.jump.quick)
		}
		if 4*tp.jump.quick < 3*(tp.tl.jumps+tp.bu.hits) {
			t.Errorf("%s: %d of %d ways on installed with the jumps' note and %d build-ups replayed had the state at their end taken as the note's (presetNote)", name, tp.jump.quick, tp.tl.jumps, tp.bu.hits)
		}
		if k.mode == NonBlocking && k.loss == 1e-3 && 2*tp.stops < tp.memoHits {
			t.Errorf("%s: %d of %d stretches replayed from where a jump landed (advanceToJump)", name, tp.stops, tp.memoHits)
		}
	}
}

// The jumps over periods whose decisions hold at some courier phases only
// (txpath.go, robust and phasedLength: non-blocking 100G's build-ups,
// where the read queue settles where a copy's second decision falls
// beside a courier pass) give what deciding every copy gives, exactly, the
// read queue's depth and watermark read along the way; and they are
// taken: without them, non-blocking 100G in runs of 256 decides at least
// 5/3 as many copies one by one (3.2 times as many at 1e-3).
func TestTxPathPhasedJumpsSameAsEveryCopy(t *testing.T) {
	type cas struct {
		mode   Mode
		bps    float64
		loss   float64
		maxRun int64
		frames int64
	}
	for _, k := range []cas{
		{NonBlocking, 100e9, 1e-3, 256, 300_000}, {NonBlocking, 100e9, 1e-2, 0, 60_000},
		{Ordered, 100e9, 1e-3, 256, 200_000}, {NonBlocking, 25e9, 1e-3, 256, 100_000},
	} {
		c, err := Defaults(k.mode, k.bps, k.loss, k.frames)
		if err != nil {
			t.Fatal(err)
		}
		c.MaxRun = k.maxRun
		c = c.WithCourier()
		run := func(noJump, noPhased bool) (*Sim, []int64) {
			m, err := New(c, rand.New(rand.NewPCG(5, 11)))
			if err != nil {
				t.Fatal(err)
			}
			m.s.tp.noJump, m.s.tp.noPhased = noJump, noPhased
			var read []int64
			for at := 173 * time.Microsecond; ; at += 173 * time.Microsecond {
				done := m.AdvanceTo(at)
				now, _, _ := m.TxQueue()
				read = append(read, now, m.Result().MaxTxQueueBytes)
				if done {
					return m, read
				}
			}
		}
		name := fmt.Sprintf("%s %gG %g maxRun %d", k.mode, k.bps/1e9, k.loss, k.maxRun)
		every, everyRead := run(true, false)
		robust, _ := run(false, true)
		got, gotRead := run(false, false)
		if r, w := got.Result(), every.Result(); r != w {
			t.Errorf("%s: with the phased jumps %+v, deciding every copy %+v", name, r, w)
		}
		if !slices.Equal(gotRead, everyRead) {
			t.Errorf("%s: the depth and watermark read along the way with the phased jumps %v, deciding every copy %v", name, gotRead, everyRead)
		}
		d, dr := got.s.tp.decided, robust.s.tp.decided
		t.Logf("%s: read queue %d B; copies decided one by one %d, %d jumping over robust decisions only, %d every copy",
			name, got.Result().MaxTxQueueBytes, d, dr, every.s.tp.decided)
		if k.mode == NonBlocking && k.bps == 100e9 && k.maxRun == 256 && 3*dr < 5*d {
			t.Errorf("%s: %d copies decided one by one with the phased jumps, %d without: they are not taken", name, d, dr)
		}
	}
}

// The register the accounting reads (add merges the receiver's steps and
// runs as they come: a step continuing a run, steps into a run, the steps
// that lead one slot apart to a run that follows) is the register its
// inputs give read naively, at every input's time: the most any step or
// run had reached by then.
func TestTxPathRegisterIsItsInputs(t *testing.T) {
	type cas struct {
		mode   Mode
		bps    float64
		maxRun int64
	}
	for _, k := range []cas{{NonBlocking, 100e9, 256}, {Ordered, 100e9, 256}, {NonBlocking, 25e9, 0}, {Ordered, 25e9, 256}} {
		c, err := Defaults(k.mode, k.bps, 1e-2, 60_000)
		if err != nil {
			t.Fatal(err)
		}
		c.MaxRun = k.maxRun
		c = c.WithCourier()
		c.NoCycleSkip = true // every input through tpInput
		m, err := New(c, rand.New(rand.NewPCG(2, 13)))
		if err != nil {
			t.Fatal(err)
		}
		m.s.tp.noMemo = true
		var log []tpEntry
		m.s.tp.inLog = &log
		m.Advance(1 << 62)
		name := fmt.Sprintf("%s %gG maxRun %d", k.mode, k.bps/1e9, k.maxRun)

		p := &txPath{courier: 1} // no way back, a pass every picosecond: the register at t
		var landed int64         // the naive register: steps and runs landed by the last read
		var runs []tpEntry
		naive := func(t int64) int64 {
			v := landed
			kept := runs[:0]
			for _, r := range runs {
				if t >= r.t0 {
					v = max(v, r.seq+min(r.n, (t-r.t0)/r.slot+1))
				}
				if t >= r.t0+(r.n-1)*r.slot {
					landed = max(landed, r.seq+r.n) // wholly landed: reads are in order
				} else {
					kept = append(kept, r)
				}
			}
			runs = kept
			return v
		}
		var steps []tpEntry
		extended, reads := 0, 0
		last := int64(0)
		for _, e := range log {
			if e.kind != tpRx && e.kind != tpRxRun {
				continue
			}
			if ti := e.at - 1; ti > last {
				for _, st := range steps {
					if st.at <= ti {
						landed = max(landed, st.seq)
					}
				}
				steps = slices.DeleteFunc(steps, func(st tpEntry) bool { return st.at <= ti })
				if got, want := p.readCourier(ti), naive(ti); got != want {
					t.Fatalf("%s: at %d ps the accounting reads the register %d, its inputs give %d", name, ti, got, want)
				}
				last, reads = ti, reads+1
			}
			var t0 int64 = math.MaxInt64
			if n := len(p.rxRun); n > 0 {
				t0 = p.rxRun[n-1].t0
			}
			p.add(&e)
			if n := len(p.rxRun); e.kind == tpRx && n > 0 && p.rxRun[n-1].t0 < t0 {
				extended++
			}
			if e.kind == tpRx {
				steps = append(steps, e)
			} else {
				runs = append(runs, e)
			}
		}
		t.Logf("%s: %d inputs, %d reads, %d runs extended back", name, len(log), reads, extended)
		if k.mode == NonBlocking && k.bps == 100e9 && extended == 0 {
			t.Errorf("%s: no run was extended back by the steps before it", name)
		}
	}
}

// The least copy in flight, which every first decision a jump may start
// from needs, is kept as the queues change, and found again, when the
// least was freed, only as far as its successor (leastInFlight): at both
// speeds, in both modes, with the notes replayed and stepped, it is the
// least of every copy in flight at every note, and the copies looked at
// are under two thirds of those in flight (at 100G a fifth or less).
func TestTxPathLeastInFlightIsKept(t *testing.T) {
	for _, bps := range []float64{25e9, 100e9} {
		for _, mode := range []Mode{Ordered, NonBlocking} {
			for _, noMemo := range []bool{false, true} {
				c, err := Defaults(mode, bps, 1e-3, 400_000)
				if err != nil {
					t.Fatal(err)
				}
				c.MaxRun = switchMaxRun(mode)
				c = c.WithCourier()
				m, err := New(c, rand.New(rand.NewPCG(3, 7)))
				if err != nil {
					t.Fatal(err)
				}
				tp := m.s.tp
				tp.checkLeast, tp.noMemo = true, noMemo
				m.Advance(1 << 62)
				name := fmt.Sprintf("%s %gG noMemo %v", mode, bps/1e9, noMemo)
				t.Logf("%s: the least copy in flight kept at %d notes, found at %d (%d wrong); %d copies looked at of %d in flight", name, tp.leastKept, tp.leastFound, tp.leastWrong, tp.leastLooked, tp.leastAll)
				if tp.leastWrong != 0 {
					t.Errorf("%s: the least copy in flight kept or found differs from the least of all at %d of %d notes", name, tp.leastWrong, tp.leastKept+tp.leastFound)
				}
				if tp.leastKept == 0 || 3*tp.leastLooked > 2*tp.leastAll {
					t.Errorf("%s: the least copy in flight kept at %d notes, %d copies looked at of %d in flight: not kept, or not found early", name, tp.leastKept, tp.leastLooked, tp.leastAll)
				}
			}
		}
	}
}

// After a way on's end is installed with its note (presetJump), the
// first decision takes the copies in flight as the note's and compares
// only what the inputs since may have moved (presetNote): the sender's
// run, the ports' times as it reads them, the receiver's run, the slot
// since the note and the decisions since. The model's runs never move
// them there (TestTxPathMemoSameAsDecided counts the state noted in full
// against the note's and finds no difference), so each is moved here on a
// state of its own, and the note must not be taken.
func TestTxPathPresetNoteComparesWhatInputsMove(t *testing.T) {
	const slot, t0 = 125_000, 50_000_000
	state := func() (*txPath, tpNote) {
		p := &txPath{courier: 1_000_000, back: 1_600_000, loop: 1_000_000, drain: slot, read: slot, copyBytes: 1,
			leastFloor: math.MinInt64}
		p.first.push(tpBack{100, t0})
		p.on16.push(tpBack{97, t0 + 300_000})
		p.free68, p.free16 = t0-20_000, t0+50_000
		p.sends = []tpRun{{101, t0 - 10_000, slot, 50}}
		p.rxRun = []tpRun{{90, t0 - 2_000_000, slot, 100}}
		n := tpNote{t: t0, s: 100, r: &p.sends[0], rx: p.rxRun[0]}
		j := &p.jump
		j.prev = slices.Clone(p.stateAt(n.s, n.t, n.r))
		j.prevT, j.run, j.valid, j.robust = t0-slot, p.rxRun[0], true, true
		return p, n
	}
	if p, n := state(); !p.presetNote(&n) || !n.preset {
		t.Fatal("the state as noted is not taken as the note")
	}
	for _, m := range []struct {
		what string
		move func(p *txPath, n *tpNote)
	}{
		{"the sender's run starting a picosecond later", func(p *txPath, n *tpNote) { p.sends[0].t0++ }},
		{"the sender's run starting an original on", func(p *txPath, n *tpNote) { p.sends[0].seq0++ }},
		{"the sender's run at another slot", func(p *txPath, n *tpNote) { p.sends[0].slot++ }},
		{"the read port busy a picosecond longer", func(p *txPath, n *tpNote) { p.free16++ }},
		{"the first port busy past the sender's next copy", func(p *txPath, n *tpNote) { p.free68 = t0 }},
		{"the receiver's run an arrival longer back", func(p *txPath, n *tpNote) { n.rx.seq0, n.rx.t0 = n.rx.seq0-1, n.rx.t0-slot }},
		{"the receiver's run at another slot", func(p *txPath, n *tpNote) { n.rx.slot++ }},
		{"the note a picosecond further back", func(p *txPath, n *tpNote) { p.jump.prevT-- }},
		{"a decision since the note not robust", func(p *txPath, n *tpNote) { p.jump.robust = false }},
		{"no note", func(p *txPath, n *tpNote) { p.jump.valid = false }},
	} {
		p, n := state()
		m.move(p, &n)
		if p.presetNote(&n) {
			t.Errorf("%s: the note taken", m.what)
		}
	}
}
