// Package fec holds the FEC recipes: fec-latency, the per-hop latency and
// jitter forward error correction adds (Sella, Moore and Zilberman, "FEC
// Killed the Cut-Through Switch", Figs. 5-7, §3.2.2), measured with the
// timestamp program's hardware timestamps along a snake of ports; and
// fec-ber, the margin each FEC buys against received power (the paper's
// Figs. 9-10 and §4.5 in the lab's terms).
package fec

import (
	"fmt"
	"math"
)

// PHY is what the paper's closed forms need of a port's mode: computed
// here from IEEE 802.3's numbers, never from a measurement.
type PHY struct {
	Gbps  int
	FEC   string  // none, fc, rs528, rs544
	Lanes int     // physical lanes the codewords are striped over
	Baud  float64 // line bits per second per lane
	// CodeBits and MsgBits are a codeword's line bits and its message part;
	// DataBytes the MAC bytes a codeword carries (0 without FEC).
	CodeBits, MsgBits, DataBytes int
	// TDec is the paper's decoding time (§3, Fig. 2: 15 ns for RS(528,514),
	// 31 ns for RS(544,514) at 1 GHz); NaN where the paper gives none (the
	// Fire code).
	TDec float64
}

// phyOf is a port's PHY at a speed and FEC, or an error naming what is
// possible. Lanes and rates: 802.3 clause 49/52 (10GBASE-R, 10.3125 GBd),
// 107/112 (25GBASE-R, 25.78125 GBd), 138 (50GBASE-SR, one 53.125 Gb/s PAM4
// lane, RS(544,514) only), 95 (100GBASE-SR4, 4 x 25.78125 GBd, RS(528,514)).
// Codes: BASE-R FEC (2112,2080), 32 blocks of 8 bytes (clause 74.7); RS
// codewords of 514 10-bit message symbols carrying 20 transcoded 257-bit
// blocks of 32 bytes (clause 91.5.2.5).
func phyOf(gbps int, fec string) (PHY, error) {
	p := PHY{Gbps: gbps, FEC: fec, Lanes: 1, Baud: 25.78125e9, TDec: math.NaN()}
	switch gbps {
	case 10:
		p.Baud = 10.3125e9
	case 25:
	case 50:
		p.Baud = 53.125e9
	case 100:
		p.Lanes = 4
	default:
		return p, fmt.Errorf("speed %d G (expected 10, 25, 50 or 100)", gbps)
	}
	ok := false
	switch fec {
	case "none":
		ok = gbps != 50
	case "fc":
		ok = gbps == 10 || gbps == 25
		p.CodeBits, p.MsgBits, p.DataBytes = 2112, 2080, 256
	case "rs528":
		ok = gbps == 25 || gbps == 100
		p.CodeBits, p.MsgBits, p.DataBytes, p.TDec = 5280, 5140, 640, 15
	case "rs544":
		ok = gbps == 50
		p.CodeBits, p.MsgBits, p.DataBytes, p.TDec = 5440, 5140, 640, 31
	}
	if !ok {
		return p, fmt.Errorf("%d G with FEC %q: the modes are 10:none|fc, 25:none|fc|rs528, 50:rs544, 100:none|rs528", gbps, fec)
	}
	return p, nil
}

// TAcc is the accumulation time of a codeword over all lanes (§2).
func (p PHY) TAcc() float64 {
	if p.CodeBits == 0 {
		return 0
	}
	return float64(p.CodeBits) / (p.Baud * float64(p.Lanes)) * 1e9
}

// plainNs is how long n MAC bytes take on a link without FEC (64b/66b).
func (p PHY) plainNs(n int) float64 {
	return float64(n) * 8 * 66 / 64 / (p.Baud * float64(p.Lanes)) * 1e9
}

// Header is what a cut-through switch waits for: DA, SA, EtherType.
const headerBytes = 14

// paperNs is the paper's §3.1 latency of a frame of size bytes whose header
// starts at byte offset o of a codeword's data, from the header's first bit
// at the receiver: to the header decoded (cut-through) or the last byte
// decoded (store-and-forward). T_offset is o's place in the codeword's
// message bits; each codeword the needed byte lies beyond the header's adds
// T_acc and one more T_dec (cases B and C, generalised to frames longer than
// a codeword the way §3.1 counts two).
func (p PHY) paperNs(o, size int, saf bool) float64 {
	tAcc := p.TAcc()
	tOff := float64(o) / float64(p.DataBytes) * tAcc * float64(p.MsgBits) / float64(p.CodeBits)
	need := o + headerBytes - 1
	if saf {
		need = o + size - 1
	}
	k := float64(need / p.DataBytes)
	return (tAcc - tOff) + k*tAcc + (k+1)*p.TDec
}

// Prediction is the paper's range of what FEC adds per hop, over every
// header offset a frame can take (frames start on a 64b/66b block
// boundary, clause 82.2.3.4, and the header follows 8 bytes of preamble).
type Prediction struct {
	// MinNs and MaxNs bound the FEC latency of one hop from the header's
	// first bit; MarginalMin/MaxNs are those less the same wait without FEC
	// (the header's or the frame's serialization): Fig. 6's marginal latency.
	MinNs, MaxNs                 float64
	MarginalMinNs, MarginalMaxNs float64
}

// Predict is the paper's range for a mode; ok is false where the paper
// has no formula (no FEC, or the Fire code it does not analyse).
func (p PHY) Predict(size int, saf bool) (Prediction, bool) {
	if p.CodeBits == 0 || math.IsNaN(p.TDec) {
		return Prediction{}, false
	}
	pr := Prediction{MinNs: math.Inf(1), MaxNs: math.Inf(-1)}
	for o := 0; o < p.DataBytes; o += 8 {
		v := p.paperNs(o, size, saf)
		pr.MinNs, pr.MaxNs = math.Min(pr.MinNs, v), math.Max(pr.MaxNs, v)
	}
	off := p.plainNs(headerBytes)
	if saf {
		off = p.plainNs(size)
	}
	pr.MarginalMinNs, pr.MarginalMaxNs = pr.MinNs-off, pr.MaxNs-off
	return pr, true
}
