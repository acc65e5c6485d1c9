// Package phy is a pure, deterministic model of an Ethernet PHY's receive latency: where
// each frame falls in the PCS/FEC stream of a link, when its header and its last byte are
// available to the receiving MAC, and what a switch forwarding it (cut-through or
// store-and-forward) does with that. It is the mechanism behind the FEC latency and
// jitter of Sella, Moore and Zilberman, "FEC Killed the Cut-Through Switch" (seed 001).
//
// The stream. A link carries a continuous PCS byte stream from an alignment point (time
// zero, the start of codeword 0). Frames are placed into it in the order they are sent:
// a frame starts at the first 8-byte (64b/66b block) boundary at or after both its send
// time and the end of the previous frame's inter-packet gap, so a frame's offset within
// the codeword stream follows from the traffic that preceded it, never from a draw.
//
// The code. Without FEC, 8 data bytes ride in one 66-bit block (IEEE 802.3 clause
// 49.2.4 / 82.2.3); with BASE-R (FC) FEC, 32 blocks become a (2112,2080) codeword (clause
// 74.7.1); with Reed-Solomon FEC, 4 blocks are transcoded to one 257-bit block and 20 of
// those fill the 5140 message bits of an RS(528,514) or RS(544,514) codeword (clause
// 91.5.2.5, 134.5.2). A codeword's data is released only when all of it (parity
// included) has arrived and been decoded; without FEC a byte is released when its
// 66-bit block has arrived.
//
// Lanes. A link of L lanes stripes its stream over them (RS symbols round robin over
// lanes, clause 91.5.2.7; 66-bit blocks round robin without FEC, clause 82.2.7), so a
// codeword accumulates L times faster; each lane has its own skew and the receiver
// de-skews by buffering every lane to the slowest one (clause 82.2.12, 91.5.3.3).
//
// The paper's 246 ns. The paper puts the worst case per hop at 25G with RS(528,514) at
// 246 ns (§3.1, case C: (T_acc - T_offset) + T_acc + 2 x T_dec); this model gets 242.7 ns.
// No mechanism is missing. The paper does not list its terms; our reconstruction: 246 =
// 211.2 + 4.8 + 30 is what the formula gives with T_acc taken as 5280 bits at the
// nominal 25 Gb/s (211.2 ns) and about one header (4.8 ns, 15 bytes at 25 Gb/s) of the
// frame left in the first codeword, parity not counted. The
// model takes the codeword at the lane's 25.78125 GBd (clause 107.1, 108.5.2: 5280 bits
// in 204.8 ns, 6.4 ns less) and what the traffic leaves in the first codeword at worst:
// a header starts 8 bytes after a 64b/66b block boundary (clause 82.2.3.4), so case C
// keeps at most 8 header bytes (64 bits at 257/256) plus the 140 parity bits that follow
// the message, 7.9 ns (3.1 ns more): 204.8 + 7.9 + 30 = 242.7 ns. A 25GBASE-R frame
// starting at octet 4 of a block (clause 49 allows it; not modelled) would leave 12
// header bytes: 244.0 ns.
//
// Times are float64 nanoseconds. The package is single-goroutine and has no state beyond
// its values.
package phy

import (
	"fmt"
	"math"
)

// FEC is a link's forward error correction.
type FEC int

const (
	// FECNone is plain 64b/66b (25GBASE-R without FEC, clause 107).
	FECNone FEC = iota
	// FECFire is BASE-R FEC ("FC-FEC", Fire code (2112,2080), clause 74).
	FECFire
	// FECRS528 is RS(528,514) "KR4" FEC with 256b/257b transcoding (clauses 91, 108).
	FECRS528
	// FECRS544 is RS(544,514) "KP4" FEC with 256b/257b transcoding (clauses 91.5.2.7, 134).
	FECRS544
)

func (f FEC) String() string {
	switch f {
	case FECNone:
		return "none"
	case FECFire:
		return "fc-fec"
	case FECRS528:
		return "rs528"
	case FECRS544:
		return "rs544"
	}
	return fmt.Sprintf("fec(%d)", int(f))
}

// Frame layout on the wire (IEEE 802.3 clause 3.1.1, 4.4.2).
const (
	// PreambleBytes is preamble plus SFD (clause 3.2.1, 3.2.2); /S/ replaces the first
	// preamble octet in the PCS (clause 82.2.3.4) but the octet still occupies the slot.
	PreambleBytes = 8
	// HeaderBytes is what a cut-through switch needs to forward: destination, source and
	// EtherType (clause 3.2.3 to 3.2.6).
	HeaderBytes = 14
	// IPGBytes is the minimum inter-packet gap (clause 4.4.2: 96 bit times).
	IPGBytes = 12
	// blockBytes is the data of one 64b/66b block (clause 49.2.4, 82.2.3).
	blockBytes = 8
	// MaxDeskewNs is the lane-to-lane skew the receiver must tolerate, the "up to 180 ns"
	// of the paper's §3.2.1 (IEEE 802.3 clause 80.5, skew at the PMD service interface).
	MaxDeskewNs = 180.0
)

// Decoding delays (paper §2-3, Fig. 2: a 1 GHz device clock and the reference decoder of
// its ref. [26], Wang and Chen, "Feasibility of 100G-KR FEC", IEEE 802.3 May 2011).
const (
	// DecodeRS528Ns is T_dec for RS(528,514) (paper §3: "either 15ns or 31ns").
	DecodeRS528Ns = 15.0
	// DecodeRS544Ns is T_dec for RS(544,514), the stronger code (paper §3, Fig. 2).
	DecodeRS544Ns = 31.0
	// DecodeFireNs is T_dec for the Fire code. Not in the paper: the Fire code is
	// decoded by an error-trapping shift register one symbol per clock; we charge one
	// 1 GHz clock per 64-bit word of its 2080 message bits (33 ns). A stated assumption.
	DecodeFireNs = 33.0
)

// Lane signalling rates in bits per second.
const (
	// Lane25G is a 25GBASE-R lane: 25.78125 GBd NRZ (clause 107.1, 109.1).
	Lane25G = 25.78125e9
	// Lane50GPAM4 is a 50GBASE-R lane: 26.5625 GBd PAM4, 53.125 Gb/s (clause 134.1, 135).
	Lane50GPAM4 = 53.125e9
)

// code is the unit the receiver must accumulate before it may release data.
type code struct {
	dataBytes int     // PCS data bytes per unit (per lane row when uncoded)
	bits      int     // line bits per unit, all lanes together
	msgBits   int     // bits of the unit that carry data (the rest is parity, sent last)
	decodeNs  float64 // T_dec
}

func codeFor(f FEC, lanes int, decodeNs float64) (code, error) {
	switch f {
	case FECNone:
		// One 66-bit block per lane per row; a row is released when its blocks arrive.
		return code{dataBytes: blockBytes * lanes, bits: 66 * lanes, msgBits: 66 * lanes}, nil
	case FECFire:
		if lanes != 1 {
			return code{}, fmt.Errorf("fc-fec runs per PCS lane; only single-lane links are modelled, got %d lanes", lanes)
		}
		// 32 blocks, each sync header compressed to one bit: 32*65 = 2080 message bits,
		// 32 parity bits (clause 74.7.1).
		return code{dataBytes: 32 * blockBytes, bits: 2112, msgBits: 2080, decodeNs: decodeNs}, nil
	case FECRS528, FECRS544:
		// 20 transcoded 257-bit blocks of 4*8 bytes each = 5140 bits = 514 10-bit symbols
		// (clause 91.5.2.5); parity 14 or 30 symbols (clause 91.5.2.7, 134.5.2.1).
		n := 528
		if f == FECRS544 {
			n = 544
		}
		return code{dataBytes: 20 * 4 * blockBytes, bits: n * 10, msgBits: 5140, decodeNs: decodeNs}, nil
	}
	return code{}, fmt.Errorf("unknown FEC %d", int(f))
}

// Accounting says how decoding time adds up when a frame's bytes span codewords.
type Accounting int

const (
	// PerCodeword charges T_dec once for every codeword from the one holding the first
	// byte of the frame's header to the one holding the byte asked for: the paper's
	// §3.1 accounting (cases B and C cost 2 x T_dec), a decoder that does not overlap
	// the decoding of one codeword with the next.
	PerCodeword Accounting = iota
	// Pipelined charges T_dec once, after the codeword holding the byte: a decoder that
	// decodes codeword k while codeword k+1 accumulates.
	Pipelined
)

// LinkConfig describes one direction of a link.
type LinkConfig struct {
	Name string
	// LaneRate is the signalling rate of each lane in bits per second.
	LaneRate float64
	// Lanes is 1, 2 or 4.
	Lanes int
	FEC   FEC
	// DecodeNs is T_dec; zero takes the FEC's default above.
	DecodeNs float64
	// Accounting of T_dec over codewords (default PerCodeword, the paper's).
	Accounting Accounting
	// PropagationNs is the fibre's delay, common to all lanes.
	PropagationNs float64
	// SkewNs is each lane's extra delay (len == Lanes, or empty for none).
	SkewNs []float64
	// PPM is the transmitter clock's offset from nominal in parts per million; 802.3
	// allows +-100 ppm (clause 82.2.12, 109.2.2). Links are plesiochronous, so over a run
	// the codeword phases of a path's links drift against each other.
	PPM float64
	// AlignNs is the alignment point: when codeword 0 starts on the line. Links of a
	// path run from their own clocks, so their codeword phases differ.
	AlignNs float64
}

// Presets for the links of the paper's Fig. 2 and the simulated lab.
func Preset25G(f FEC) LinkConfig {
	return LinkConfig{Name: "25G-" + f.String(), LaneRate: Lane25G, Lanes: 1, FEC: f}
}

// Preset100GSR4 is 100GBASE-SR4: 4 x 25.78125 GBd with RS(528,514) (clause 95.1).
func Preset100GSR4() LinkConfig {
	return LinkConfig{Name: "100G-SR4-rs528", LaneRate: Lane25G, Lanes: 4, FEC: FECRS528}
}

// Preset50GPAM4 is 50GBASE-SR: one 53.125 Gb/s PAM4 lane with RS(544,514) (clause 138).
func Preset50GPAM4() LinkConfig {
	return LinkConfig{Name: "50G-PAM4-rs544", LaneRate: Lane50GPAM4, Lanes: 1, FEC: FECRS544}
}

// Preset50G2 is 50G over two 25.78125 GBd lanes with RS(528,514) (25G/50G Ethernet
// Consortium specification, "50GBASE-CR2/KR2").
func Preset50G2() LinkConfig {
	return LinkConfig{Name: "50G-2x25-rs528", LaneRate: Lane25G, Lanes: 2, FEC: FECRS528}
}

// Link is one direction of a link: a transmitter placing frames into the stream and a
// receiver releasing them.
type Link struct {
	cfg      LinkConfig
	code     code
	unitNs   float64 // time one code unit takes on the line (all lanes in parallel)
	msgNs    float64 // time its message part takes
	deskewNs float64 // slowest lane's skew: what every byte waits after de-skew
	nextFree int64   // first byte position the next frame may use (after its IPG)
}

// NewLink checks cfg and returns an idle link at its alignment point.
func NewLink(cfg LinkConfig) (*Link, error) {
	if cfg.Lanes != 1 && cfg.Lanes != 2 && cfg.Lanes != 4 {
		return nil, fmt.Errorf("link %s: %d lanes, want 1, 2 or 4", cfg.Name, cfg.Lanes)
	}
	if !(cfg.LaneRate > 0) {
		return nil, fmt.Errorf("link %s: lane rate %g b/s", cfg.Name, cfg.LaneRate)
	}
	if cfg.DecodeNs == 0 {
		switch cfg.FEC {
		case FECRS528:
			cfg.DecodeNs = DecodeRS528Ns
		case FECRS544:
			cfg.DecodeNs = DecodeRS544Ns
		case FECFire:
			cfg.DecodeNs = DecodeFireNs
		}
	}
	if math.Abs(cfg.PPM) > 100 {
		return nil, fmt.Errorf("link %s: clock offset %g ppm beyond +-100", cfg.Name, cfg.PPM)
	}
	if cfg.DecodeNs < 0 || cfg.PropagationNs < 0 {
		return nil, fmt.Errorf("link %s: negative delay", cfg.Name)
	}
	c, err := codeFor(cfg.FEC, cfg.Lanes, cfg.DecodeNs)
	if err != nil {
		return nil, fmt.Errorf("link %s: %w", cfg.Name, err)
	}
	if len(cfg.SkewNs) != 0 && len(cfg.SkewNs) != cfg.Lanes {
		return nil, fmt.Errorf("link %s: %d skews for %d lanes", cfg.Name, len(cfg.SkewNs), cfg.Lanes)
	}
	lo, hi := 0.0, 0.0
	for i, s := range cfg.SkewNs {
		if s < 0 {
			return nil, fmt.Errorf("link %s: lane %d skew %g ns < 0", cfg.Name, i, s)
		}
		if i == 0 || s < lo {
			lo = s
		}
		if s > hi {
			hi = s
		}
	}
	if hi-lo > MaxDeskewNs {
		return nil, fmt.Errorf("link %s: lane skew %g ns beyond the %g ns the receiver de-skews", cfg.Name, hi-lo, MaxDeskewNs)
	}
	cfg.SkewNs = append([]float64(nil), cfg.SkewNs...)
	unit := float64(c.bits) / (cfg.LaneRate * (1 + cfg.PPM*1e-6) * float64(cfg.Lanes)) * 1e9
	return &Link{
		cfg:      cfg,
		code:     c,
		unitNs:   unit,
		msgNs:    unit * float64(c.msgBits) / float64(c.bits),
		deskewNs: hi,
	}, nil
}

// Config returns the link's configuration (defaults filled in).
func (l *Link) Config() LinkConfig { return l.cfg }

// AccumulationNs is T_acc: the time a code unit takes to arrive over all lanes.
func (l *Link) AccumulationNs() float64 { return l.unitNs }

// DataRate is the link's MAC data rate in bits per second.
func (l *Link) DataRate() float64 { return float64(l.code.dataBytes*8) / l.unitNs * 1e9 }

// DeskewBufferNs is how long the receiver holds each lane's data to align it with the
// slowest lane.
func (l *Link) DeskewBufferNs() []float64 {
	out := make([]float64, l.cfg.Lanes)
	for i := range out {
		if len(l.cfg.SkewNs) > 0 {
			out[i] = l.deskewNs - l.cfg.SkewNs[i]
		}
	}
	return out
}

// txNs is when byte pos has been fully put on the line by the sender (relative to the
// alignment point, before propagation): data bytes are spread evenly over the message
// part of their unit.
func (l *Link) txNs(pos int64) float64 {
	d := int64(l.code.dataBytes)
	u, i := pos/d, pos%d
	return l.cfg.AlignNs + float64(u)*l.unitNs + float64(i+1)/float64(d)*l.msgNs
}

// firstPosAt is the first byte position that has not started on the line at time t.
func (l *Link) firstPosAt(t float64) int64 {
	t -= l.cfg.AlignNs
	if t <= 0 {
		return 0
	}
	d := int64(l.code.dataBytes)
	u := int64(math.Floor(t / l.unitNs))
	in := t - float64(u)*l.unitNs
	if in >= l.msgNs {
		return (u + 1) * d
	}
	return u*d + int64(math.Ceil(in/l.msgNs*float64(d)-1e-9))
}

// unitOf is the code unit holding byte pos.
func (l *Link) unitOf(pos int64) int64 { return pos / int64(l.code.dataBytes) }

// releaseNs is when the receiver hands byte pos to the MAC, for a frame whose header
// starts in unit first.
func (l *Link) releaseNs(pos, first int64) float64 {
	u := l.unitOf(pos)
	arrived := l.cfg.AlignNs + float64(u+1)*l.unitNs + l.cfg.PropagationNs + l.deskewNs
	decodes := 1.0
	if l.cfg.Accounting == PerCodeword && u > first {
		decodes = float64(u - first + 1)
	}
	if l.cfg.FEC == FECNone {
		decodes = 0
	}
	return arrived + decodes*l.code.decodeNs
}

// Frame is what the model says about one frame on one link.
type Frame struct {
	// Size is the frame's size in bytes, destination address to FCS.
	Size int
	// SentNs is when it was offered to the transmitter.
	SentNs float64
	// StartPos is the stream byte position of its preamble; HeaderPos of its destination
	// address (both since the alignment point).
	StartPos, HeaderPos int64
	// HeaderOffset is the destination address's byte offset within its code unit, and
	// Codeword that unit's index.
	HeaderOffset int
	Codeword     int64
	// Case is the paper's Fig. 4 case: 'A' frame within one codeword, 'B' header in
	// one and the rest spilling over, 'C' the header itself split (0 without FEC).
	Case byte
	// Spans is the number of code units the frame (header to FCS) touches.
	Spans int
	// HeaderTxNs and LastTxNs are when the sender has put the first bit of the header and
	// the last bit of the frame on the line.
	HeaderTxNs, LastTxNs float64
	// HeaderFirstBitRxNs is when the header's first bit reaches the receiver's pins
	// (propagation and the slowest lane's skew after it left the sender).
	HeaderFirstBitRxNs float64
	// HeaderNs is when the receiver's MAC has the whole header; LastNs the last byte.
	HeaderNs, LastNs float64
}

// Send places a frame of size bytes, offered at sentNs, into the stream and returns
// when its parts reach the receiving MAC. Frames must be sent in order of time; a frame
// offered while the previous one is still on the line waits for it (a FIFO).
func (l *Link) Send(sentNs float64, size int) (Frame, error) {
	if size < HeaderBytes+4 {
		return Frame{}, fmt.Errorf("link %s: frame of %d bytes shorter than header and FCS", l.cfg.Name, size)
	}
	pos := l.firstPosAt(sentNs)
	if pos < l.nextFree {
		pos = l.nextFree
	}
	// A frame starts on a block boundary (clause 82.2.3.4: /S/ only in lane 0).
	if r := pos % blockBytes; r != 0 {
		pos += blockBytes - r
	}
	hdr := pos + PreambleBytes
	hdrEnd := hdr + HeaderBytes - 1
	last := hdr + int64(size) - 1
	l.nextFree = last + 1 + IPGBytes
	first := l.unitOf(hdr)
	f := Frame{
		Size: size, SentNs: sentNs, StartPos: pos, HeaderPos: hdr,
		HeaderOffset: int(hdr % int64(l.code.dataBytes)), Codeword: first,
		Spans:      int(l.unitOf(last) - first + 1),
		HeaderTxNs: l.txNs(hdr) - l.msgNs/float64(l.code.dataBytes),
		LastTxNs:   l.txNs(last),
		HeaderNs:   l.releaseNs(hdrEnd, first),
		LastNs:     l.releaseNs(last, first),
	}
	f.HeaderFirstBitRxNs = f.HeaderTxNs + l.cfg.PropagationNs + l.deskewNs
	if l.cfg.FEC != FECNone {
		switch {
		case l.unitOf(hdrEnd) != first:
			f.Case = 'C'
		case f.Spans > 1:
			f.Case = 'B'
		default:
			f.Case = 'A'
		}
	}
	return f, nil
}
