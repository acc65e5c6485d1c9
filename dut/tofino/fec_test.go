package tofino_test

import (
	"context"
	"math"
	"testing"
	"time"

	"testbed/dut/tofino"
	lg "testbed/p4/linkguardian"
	ts "testbed/p4/timestamp"
	"testbed/simlab/physics"
)

// IEEE 802.3 numbers, computed here: a 25GBASE-R lane is 25.78125 GBd, an
// RS(528,514) codeword 5280 bits (clause 91), so T_acc = 204.8 ns; a 66-bit
// block without FEC takes 2.56 ns.
const (
	tAcc25   = 5280 / 25.78125
	block25  = 66 / 25.78125
	tDecRS   = 15.0 // FEC paper §3, Fig. 2
	probeGap = 9_973 * time.Nanosecond
)

// snake starts the timestamp program on sw and forwards generator probes
// through ports (each with a loopback module: no fibre in the lab).
func snake(t *testing.T, sw *tofino.Switch, gbps int, fec string, ports ...int) {
	t.Helper()
	ctx := context.Background()
	if _, err := sw.BuildProgram(ctx, ts.Program, ts.MainFile(ts.Program), ts.Sources()); err != nil {
		t.Fatal(err)
	}
	if err := sw.StartSwitchd(ctx, ts.Program); err != nil {
		t.Fatal(err)
	}
	in := 68
	for _, p := range ports {
		if err := sw.AddPort(ctx, p, gbps, fec); err != nil {
			t.Fatal(err)
		}
		if err := sw.AddEntry(ctx, ts.TableSnake, tofino.Entry{Key: map[string]int64{ts.KeyIngressPort: int64(in)}, Action: ts.ActionForward,
			Data: map[string]int64{ts.ParamPort: int64(p)}}); err != nil {
			t.Fatal(err)
		}
		in = p
	}
}

// probe sends one 64 B probe and reads, per snake port, the ingress
// register and the MAC's transmit timestamp.
func probe(t *testing.T, sw *tofino.Switch, at time.Duration, bytes int, ports ...int) (rx, tx []int64) {
	t.Helper()
	ctx := context.Background()
	if _, err := sw.WaitClock(ctx, at); err != nil {
		t.Fatal(err)
	}
	g := tofino.Pktgen{AppID: 1, Port: 68, EgressPort: ports[0], PacketBytes: bytes - 4, Interval: time.Duration(float64((bytes+20)*8)/25) * time.Nanosecond, Batches: 1, PerBatch: 1}
	if err := sw.StartPktgen(ctx, g); err != nil {
		t.Fatal(err)
	}
	for _, p := range append([]int{68}, ports...) {
		v, err := sw.ReadRegister(ctx, ts.RegRxTs, p)
		if err != nil {
			t.Fatal(err)
		}
		rx = append(rx, v[0])
	}
	for _, p := range ports {
		st, err := sw.TxTimestamp(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Valid {
			t.Fatalf("port %d: no transmit timestamp after a probe", p)
		}
		tx = append(tx, st.Value)
	}
	return rx, tx
}

// wireSpread is the range of (ingress stamp of port k) - (transmit stamp
// of port k) over probes: what the PHYs and the cable cost, FEC included.
func wireSpread(t *testing.T, sw *tofino.Switch, n int, ports ...int) (lo, hi float64) {
	lo = math.Inf(1)
	now, _ := sw.Clock(context.Background())
	for k := 1; k <= n; k++ {
		rx, tx := probe(t, sw, now+time.Duration(k)*probeGap, 64, ports...)
		for i := range ports {
			w := float64(uint32(rx[i+1]) - uint32(tx[i]))
			lo, hi = math.Min(lo, w), math.Max(hi, w)
		}
	}
	return lo, hi
}

// The simulated switch's timestamps come from the PHY of each link: with
// RS(528,514) at 25G a probe waits for its codeword, so over probes sent at
// times that walk across the codeword the wire latency spreads over about a
// codeword's accumulation time, and never falls below one decode; without
// FEC it waits at most one 66-bit block (plus the 1 ns of the clock).
func TestProbeTimestampsComeFromThePHY(t *testing.T) {
	lab := startLab(t)
	sw := open(t, lab, "sw1", 5*time.Second)
	snake(t, sw, 25, "rs528", 0, 4)
	loRS, hiRS := wireSpread(t, sw, 60, 0, 4)
	if hiRS-loRS < 0.8*tAcc25 || hiRS-loRS > 2*tAcc25+2*tDecRS+5 {
		t.Errorf("25G RS(528,514): wire latency spans %.0f..%.0f ns; a codeword's accumulation is %.1f ns", loRS, hiRS, tAcc25)
	}
	sw2 := open(t, lab, "sw2", 5*time.Second)
	snake(t, sw2, 25, "none", 0, 4)
	lo, hi := wireSpread(t, sw2, 60, 0, 4)
	if hi-lo > block25+2 {
		t.Errorf("25G without FEC: wire latency spans %.0f..%.0f ns, more than a block (%.2f ns)", lo, hi, block25)
	}
	if loRS-lo < tDecRS {
		t.Errorf("RS(528,514)'s least wire latency %.0f ns is not a decode (%.0f ns) above no FEC's %.0f ns", loRS, tDecRS, lo)
	}
	t.Logf("wire latency 25G: rs528 %.0f..%.0f ns, none %.0f..%.0f ns", loRS, hiRS, lo, hi)
}

// Store-and-forward waits for the whole frame; cut-through for its header.
func TestCutThroughAndStoreAndForward(t *testing.T) {
	lab := startLab(t)
	sw := open(t, lab, "sw1", 5*time.Second)
	ctx := context.Background()
	snake(t, sw, 25, "none", 0, 4)
	hop := func(bytes int) float64 {
		now, _ := sw.Clock(ctx)
		rx, _ := probe(t, sw, now+probeGap, bytes, 0, 4)
		return float64(uint32(rx[2]) - uint32(rx[1]))
	}
	saf := hop(1518)
	prev, err := sw.SetCutThrough(ctx, 4, true)
	if err != nil || prev {
		t.Fatalf("cut-through was %v (%v); a port starts store-and-forward", prev, err)
	}
	ct := hop(1518)
	// 1518 B at 25 Gb/s (64b/66b) is 485.8 ns of serialization, the
	// header's 14 B 4.5 ns.
	ser := float64(1518-14) * 8 * 66 / 64 / 25.78125
	if d := saf - ct; math.Abs(d-ser) > 2*block25+2 {
		t.Errorf("store-and-forward %.0f ns, cut-through %.0f ns: differ by %.0f, want the frame's serialization %.1f", saf, ct, d, ser)
	}
	if prev, err := sw.SetCutThrough(ctx, 4, false); err != nil || !prev {
		t.Fatalf("cut-through read back %v (%v)", prev, err)
	}
}

// port.mode changes speed and FEC and answers what to put back.
func TestSetPortModeAnswersThePrevious(t *testing.T) {
	lab := startLab(t)
	sw := open(t, lab, "sw1", 5*time.Second)
	ctx := context.Background()
	snake(t, sw, 25, "none", 0)
	prev, err := sw.SetPortMode(ctx, 0, 100, "rs528")
	if err != nil || prev.Speed != "BF_SPEED_25G" || prev.FEC != "BF_FEC_TYP_NONE" || !prev.Enabled {
		t.Fatalf("previous %+v, %v", prev, err)
	}
	if st, err := sw.PortStatus(ctx, 0); err != nil || st.SpeedGbps != 100 || st.FEC != "BF_FEC_TYP_RS" {
		t.Fatalf("status after the change: %+v %v", st, err)
	}
	if err := sw.RestorePortMode(ctx, 0, prev); err != nil {
		t.Fatal(err)
	}
	if st, _ := sw.PortStatus(ctx, 0); st.SpeedGbps != 25 || st.FEC != "BF_FEC_TYP_NONE" {
		t.Fatalf("not restored: %+v", st)
	}
	if _, err := sw.SetPortMode(ctx, 9, 25, "rs528"); !tofino.IsNotFound(err) {
		t.Fatalf("mode of a port never added: %v", err)
	}
}

// FEC counters follow the fibre's pre-FEC BER and the code's strength:
// the corrected codewords over 100 ms match the count a binomial
// model of symbol errors predicts (computed here from the BER), and past
// the code's reach codewords go uncorrected.
func TestFECCountersFollowTheBER(t *testing.T) {
	lab := startLab(t)
	ctx := context.Background()
	tx := open(t, lab, "sw1", 5*time.Second)
	rx := open(t, lab, "sw2", 5*time.Second)
	p := dev(t, lab, "sw1", "p2") // lg25, through voa3 channel 1
	rp := dev(t, lab, "sw2", "p2")
	if err := tx.StartSwitchd(ctx, lg.ProgramSender); err != nil {
		t.Fatal(err)
	}
	if err := rx.StartSwitchd(ctx, lg.ProgramReceiver); err != nil {
		t.Fatal(err)
	}
	if err := tx.AddPort(ctx, p, 25, "rs528"); err != nil {
		t.Fatal(err)
	}
	if err := rx.AddPort(ctx, rp, 25, "rs528"); err != nil {
		t.Fatal(err)
	}
	if v, ok := lab.World().VOA("voa3"); ok {
		for _, ch := range v.Channels {
			ch.SetShutter(true)
		}
	}
	f, _ := lab.World().Fibre("lg25")
	rs := physics.FEC{Name: "rs528", N: 528, K: 514, SymbolBits: 10, T: 7}
	measure := func(ber float64) (tofino.FECCounters, float64) {
		// Received power for this BER, found on the transceiver's curve.
		lo, hi := -30.0, 0.0
		for i := 0; i < 60; i++ {
			if mid := (lo + hi) / 2; f.Transceiver.BER(mid) > ber {
				lo = mid
			} else {
				hi = mid
			}
		}
		f.VOA.SetAttenuation(f.VOA.OutputPowerDBm() - f.LossAfterDB - hi + f.VOA.Attenuation())
		time.Sleep(f.VOA.SettleTime())
		got := f.Transceiver.BER(f.RxPowerDBm())
		a, err := rx.FECCounters(ctx, rp)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rx.WaitClock(ctx, a.Time+100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		b, err := rx.FECCounters(ctx, rp)
		if err != nil {
			t.Fatal(err)
		}
		return tofino.FECCounters{Time: b.Time - a.Time, Corrected: b.Corrected - a.Corrected, Uncorrected: b.Uncorrected - a.Uncorrected,
			SymbolErrors: b.SymbolErrors, Aligned: b.Aligned, HighSER: b.HighSER}, got
	}
	c, ber := measure(1e-6)
	codewords := c.Time.Seconds() * 25.78125e9 / 5280
	ps := 1 - math.Pow(1-ber, 10)
	want := codewords * (1 - math.Pow(1-ps, 528))
	if !c.Aligned || math.Abs(float64(c.Corrected)-want) > 5*math.Sqrt(want)+1 || c.Uncorrected != 0 {
		t.Errorf("BER %.2g: %d corrected, %d uncorrected of %.0f codewords; want about %.0f corrected, none lost", ber, c.Corrected, c.Uncorrected, codewords, want)
	}
	// Below the PCS's loss of lock (about 1e-3), beyond T=7 now and then.
	c, ber = measure(5e-4)
	codewords = c.Time.Seconds() * 25.78125e9 / 5280
	if c.Uncorrected == 0 || !c.HighSER {
		t.Errorf("BER %.2g (%.1f symbol errors a codeword, T=7): %d uncorrected, hi_ser %v", ber, 528*(1-math.Pow(1-ber, 10)), c.Uncorrected, c.HighSER)
	}
	if got, want := float64(c.Uncorrected)/codewords, physics.CodewordFailure(rs, ber); math.Abs(got-want) > 0.1*want {
		t.Errorf("BER %.2g: uncorrectable fraction %.3g, binomial tail %.3g", ber, got, want)
	}
}
