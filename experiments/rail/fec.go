package rail

import (
	"context"
	"fmt"

	"testbed/dut/p4switch"
	"testbed/experiments/lgbench"
	"testbed/experiments/rail/topo"
	o "testbed/orchestrator"
	"testbed/results"
)

// FECCounts are a port's receive-side RS-FEC counters as a switch reports
// them: codewords corrected and uncorrectable, and the symbol errors the
// decoder corrected (IEEE 802.3 cl. 91.6: FEC_corrected_cw_counter,
// FEC_uncorrected_cw_counter, FEC_symbol_error_counter_i per lane, summed).
type FECCounts struct {
	Codewords     int64 // codewords received, when the switch counts them (0: unknown)
	Corrected     int64
	Uncorrectable int64
	SymbolErrors  int64
}

// fecCounterReader is what link-qualify needs of a switch driver to give
// a FEC link's pre- and post-FEC BER: its counters of a dev port, read
// before and after the test (the Tofino driver's FECCounters, the SDE's
// fec_corr_cnt, fec_uncorr_cnt and fec_ser_lane_N). A driver that lacks
// it leaves the BER unknown.
type fecCounterReader interface {
	FECCounters(ctx context.Context, devPort int) (p4switch.FECCounters, error)
}

// readFECCounts reads a port's counters as link-qualify counts them: the
// symbol errors of every lane summed; the switch does not count codewords.
func readFECCounts(ctx context.Context, r fecCounterReader, devPort int) (FECCounts, error) {
	c, err := r.FECCounters(ctx, devPort)
	if err != nil {
		return FECCounts{}, err
	}
	if !c.Aligned && c.Corrected == 0 && c.Uncorrected == 0 {
		return FECCounts{}, fmt.Errorf("no FEC codeword lock (FEC off on the port, or the link down)")
	}
	n := FECCounts{Corrected: c.Corrected, Uncorrectable: c.Uncorrected}
	for _, s := range c.SymbolErrors {
		n.SymbolErrors += s
	}
	return n, nil
}

// fecCode is an RS code's geometry: n symbols per codeword, k of data, of
// m bits, correcting t (cl. 91: RS(528,514) and RS(544,514), m = 10).
type fecCode struct{ n, k, m, t int }

func fecCodeOf(name string) (fecCode, bool) {
	switch name {
	case "rs528":
		return fecCode{528, 514, 10, 7}, true
	case "rs544":
		return fecCode{544, 514, 10, 15}, true
	}
	return fecCode{}, false
}

// FECBER is what a test's counter differences say of a FEC link.
type FECBER struct {
	Codewords int64 `json:"codewords"`
	// PreFEC is corrected symbol errors over bits received: each errored
	// symbol is one bit error, exact to first order at the low BERs a
	// link runs at (a symbol holds a second error with probability about
	// m·BER), so a lower bound above that.
	PreFEC float64 `json:"pre_fec_ber"`
	// PostFECLow is the post-FEC BER's lower bound: an uncorrectable
	// codeword holds at least t+1 symbol errors, each at least one bit.
	PostFECLow    float64 `json:"post_fec_ber_low"`
	Uncorrectable int64   `json:"uncorrectable_codewords"`
}

// fecBER derives the BERs from counter differences d over a test that
// carried frames frames of frameBytes (L2 with FCS): when the switch does
// not count codewords, they are the frames' bits, with preamble and 64b/66b
// transcoded to 256b/257b (cl. 91.5.2.5), over the codeword's k·m data bits.
func fecBER(d FECCounts, fec string, frames int64, frameBytes int) (FECBER, error) {
	c, ok := fecCodeOf(fec)
	if !ok {
		return FECBER{}, fmt.Errorf("FEC %q has no RS codeword counters", fec)
	}
	cw := d.Codewords
	if cw <= 0 {
		bits := float64(frames) * float64(frameBytes+8) * 8 * 257 / 256
		cw = int64(bits/float64(c.k*c.m)) + 1
	}
	if cw <= 0 || d.SymbolErrors < 0 || d.Uncorrectable < 0 {
		return FECBER{}, fmt.Errorf("FEC counters went backwards or counted nothing: %+v", d)
	}
	bits := float64(cw) * float64(c.n*c.m)
	return FECBER{Codewords: cw, PreFEC: float64(d.SymbolErrors) / bits,
		PostFECLow: float64(d.Uncorrectable) * float64(c.t+1) / bits, Uncorrectable: d.Uncorrectable}, nil
}

// fecRead is a FEC link's counters read before its test, or why not.
type fecRead struct {
	r      fecCounterReader
	before FECCounts
	note   string
}

// openFEC reads the receiver's FEC counters before the test, when the link
// runs RS-FEC and the switch driver can.
func openFEC(ctx context.Context, b *lgbench.Bench, l lgbench.Link) fecRead {
	if _, ok := fecCodeOf(l.FEC); !ok {
		return fecRead{}
	}
	r, ok := any(b.Rx).(fecCounterReader)
	if !ok {
		return fecRead{note: fmt.Sprintf("pre- and post-FEC BER unknown: the %s switch driver reads no FEC counters", l.Receiver)}
	}
	c, err := readFECCounts(ctx, r, l.RxPort)
	if err != nil {
		return fecRead{note: fmt.Sprintf("pre- and post-FEC BER unknown: %s: FEC counters of port %d: %v", l.Receiver, l.RxPort, err)}
	}
	return fecRead{r: r, before: c}
}

// fec reads the counters after the test and records the BERs, or the
// reason there are none.
func (st *qualifyState) fec(ctx context.Context, rc *o.RunContext, f fecRead, l lgbench.Link, tl *topo.Link, res lgbench.StressResult, fb int) error {
	if f.r == nil && f.note == "" {
		return nil
	}
	var ber *FECBER
	note := f.note
	if f.r != nil {
		after, err := readFECCounts(ctx, f.r, l.RxPort)
		if err != nil {
			note = fmt.Sprintf("pre- and post-FEC BER unknown: %s: FEC counters of port %d after the test: %v", l.Receiver, l.RxPort, err)
		} else {
			d := FECCounts{Corrected: after.Corrected - f.before.Corrected, Uncorrectable: after.Uncorrectable - f.before.Uncorrectable,
				SymbolErrors: after.SymbolErrors - f.before.SymbolErrors}
			if after.Codewords > 0 && f.before.Codewords > 0 {
				d.Codewords = after.Codewords - f.before.Codewords
			}
			b, err := fecBER(d, l.FEC, res.Sent, fb)
			if err != nil {
				note = fmt.Sprintf("pre- and post-FEC BER unknown: %s port %d: %v", l.Receiver, l.RxPort, err)
			} else {
				ber = &b
				t, err := rc.Table("fec")
				if err != nil {
					return err
				}
				if err := t.Write(tl.Name, tl.A, tl.B, l.FEC, b.Codewords, d.SymbolErrors, d.Uncorrectable, b.PreFEC, b.PostFECLow); err != nil {
					return err
				}
			}
		}
	}
	if note != "" {
		rc.Event(results.Event{Type: "note", Device: l.Receiver, Message: tl.Name + ": " + note})
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	h := st.hs[tl.Name]
	h.FEC, h.FECNote = ber, note
	st.hs[tl.Name] = h
	return nil
}
