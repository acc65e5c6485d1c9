// Package physics is the simulated lab's model of the optical layer:
// received power to bit error rate per transceiver type, Reed-Solomon FEC
// codeword failure, and frame loss; plus an exact sampler for loss counts.
//
// The receiver model is one mechanism for every type (PHYSICS.md, "Optical
// link: attenuation -> loss"): a thermal-noise-limited PIN receiver whose
// Q factor is proportional to the received optical modulation amplitude and
// inversely proportional to the noise, which grows with the square root of
// the receiver bandwidth, i.e. of the baud rate. NRZ has one eye; PAM4 has
// three eyes, each a third of the amplitude. One calibration point fixes the
// noise; the penalties of faster baud (10G -> 25G) and denser modulation
// (NRZ -> PAM4) that LinkGuardian Fig. 1 shows then follow from it.
package physics

import (
	"fmt"
	"math"
	"strings"
)

// FEC describes a Reed-Solomon code RS(N,K) over SymbolBits-bit symbols that
// corrects up to T symbol errors per codeword. The zero value means no FEC.
type FEC struct {
	Name       string // "none", "rs528", "rs544"
	N, K       int
	SymbolBits int
	T          int
}

// FECByName returns "none", "rs528" (RS(528,514) "KR4", IEEE 802.3 cl. 91:
// 10-bit symbols, corrects 7) or "rs544" (RS(544,514) "KP4", cl. 91/134:
// corrects 15).
func FECByName(name string) (FEC, error) {
	switch name {
	case "none", "":
		return FEC{Name: "none"}, nil
	case "rs528":
		return FEC{Name: "rs528", N: 528, K: 514, SymbolBits: 10, T: 7}, nil
	case "rs544":
		return FEC{Name: "rs544", N: 544, K: 514, SymbolBits: 10, T: 15}, nil
	}
	return FEC{}, fmt.Errorf("unknown FEC %q (known: none, rs528, rs544)", name)
}

// Modulation of a lane.
type Modulation int

// Modulations.
const (
	NRZ Modulation = iota
	PAM4
)

// Transceiver is one optical module type with its receiver model.
type Transceiver struct {
	Name       string
	Lanes      int
	BaudGBd    float64 // per lane
	Modulation Modulation
	rateBps    float64
	txDBm      float64 // typical average launch power per lane
	erDB       float64 // extinction ratio
	// The source's centre wavelength and RMS spectral width, for the
	// fibre's chromatic dispersion (fibre.go).
	wavelengthNM, rmsWidthNM float64
}

// The transceiver types of the default bench. Baud rates from IEEE 802.3:
// 10GBASE-SR cl. 52 (10.3125 GBd NRZ), 25GBASE-SR cl. 112 (25.78125 GBd NRZ),
// 50GBASE-SR cl. 138 (26.5625 GBd PAM4), 100GBASE-SR4 cl. 95 (4 x 25.78125
// GBd NRZ). Launch powers are typical module values (datasheets of
// Finisar/II-VI SR optics: about -2.5 dBm for 10G/25G SR, -1 dBm for 50G SR
// PAM4, -2 dBm per lane for SR4), inside each clause's allowed range.
// Extinction ratios: 10G 4.5 dB, 25G 4 dB (cl. 52, 112 minima are 3 and
// 2 dB; typical modules run about 4 dB), PAM4 outer ER 3.5 dB (cl. 138 min 3).
//
// The 850 nm VCSEL sources' RMS spectral widths are the clauses' maxima,
// which is what the standards' link models budget dispersion for:
// 10GBASE-SR 0.45 nm (cl. 52.5, Table 52-6, at 850 nm), 25GBASE-SR and
// 100GBASE-SR4 0.6 nm (cl. 112.7, Table 112-7; cl. 95.7, Table 95-6),
// 40GBASE-SR4 0.65 nm (cl. 86.7, Table 86-6), 50GBASE-SR 0.6 nm
// (cl. 138.7). 40GBASE-SR4 is four 10GBASE-SR lanes (cl. 86: 4 x 10.3125
// GBd NRZ), typical launch -2.5 dBm per lane as the 10G module's.
// 10GBASE-LR is a 1310 nm DFB laser (cl. 52.6, Table 52-12: -20 dB width
// <= 1 nm, i.e. about 0.1 nm RMS), typical launch -1 dBm (range -8.2 to
// 0.5 dBm average).
func transceivers() []Transceiver {
	return []Transceiver{
		{Name: "10GBASE-SR", Lanes: 1, BaudGBd: 10.3125, Modulation: NRZ, rateBps: 10e9, txDBm: -2.5, erDB: 4.5, wavelengthNM: 850, rmsWidthNM: 0.45},
		{Name: "25GBASE-SR", Lanes: 1, BaudGBd: 25.78125, Modulation: NRZ, rateBps: 25e9, txDBm: -2.5, erDB: 4.0, wavelengthNM: 850, rmsWidthNM: 0.6},
		{Name: "50GBASE-SR", Lanes: 1, BaudGBd: 26.5625, Modulation: PAM4, rateBps: 50e9, txDBm: -1.0, erDB: 3.5, wavelengthNM: 850, rmsWidthNM: 0.6},
		{Name: "100GBASE-SR4", Lanes: 4, BaudGBd: 25.78125, Modulation: NRZ, rateBps: 100e9, txDBm: -2.0, erDB: 4.0, wavelengthNM: 850, rmsWidthNM: 0.6},
		{Name: "40GBASE-SR4", Lanes: 4, BaudGBd: 10.3125, Modulation: NRZ, rateBps: 40e9, txDBm: -2.5, erDB: 4.5, wavelengthNM: 850, rmsWidthNM: 0.65},
		{Name: "10GBASE-LR", Lanes: 1, BaudGBd: 10.3125, Modulation: NRZ, rateBps: 10e9, txDBm: -1.0, erDB: 4.5, wavelengthNM: 1310, rmsWidthNM: 0.1},
	}
}

// TransceiverNames lists the known types.
func TransceiverNames() []string {
	var out []string
	for _, t := range transceivers() {
		out = append(out, t.Name)
	}
	return out
}

// TransceiverByName returns a known type.
func TransceiverByName(name string) (Transceiver, error) {
	for _, t := range transceivers() {
		if t.Name == name {
			return t, nil
		}
	}
	return Transceiver{}, fmt.Errorf("unknown transceiver %q (known: %s)", name, strings.Join(TransceiverNames(), ", "))
}

// TxPowerDBm is the module's typical average launch power (per lane).
func (t Transceiver) TxPowerDBm() float64 { return t.txDBm }

// DataRateBps is the Ethernet MAC data rate: what "line rate" means for a
// traffic generator.
func (t Transceiver) DataRateBps() float64 { return t.rateBps }

// Receiver calibration. A typical 10G SR receiver (PIN + TIA) reaches BER
// 1e-12 at about -14 dBm average power with ER 4.5 dB (datasheet typicals
// are 2-4 dB better than cl. 52's stressed-sensitivity limit of -11.1 dBm
// OMA, i.e. about -12.6 dBm average at ER 3 dB). That fixes the noise; all
// other types use the same receiver noise density.
const (
	calSensitivityDBm = -14.0
	calBaudGBd        = 10.3125
	calERDB           = 4.5
	qAt1e12           = 7.034484 // 0.5 erfc(Q/√2) = 1e-12
)

// omaMW is the optical modulation amplitude (P1 - P0) for average power
// pavg (mW) at extinction ratio er (linear): OMA = 2 Pavg (er-1)/(er+1).
func omaMW(pavgMW, erDB float64) float64 {
	er := math.Pow(10, erDB/10)
	return 2 * pavgMW * (er - 1) / (er + 1)
}

// noiseAt is the rms noise (in units of mW of OMA) that makes the
// calibration receiver see Q = 7.03 at its sensitivity; thermal noise
// scales with sqrt(bandwidth), bandwidth with the baud rate.
func noiseAt(baudGBd float64) float64 {
	cal := omaMW(math.Pow(10, calSensitivityDBm/10), calERDB) / qAt1e12
	return cal * math.Sqrt(baudGBd/calBaudGBd)
}

// Q is the eye's Q factor at average received power rxDBm (per lane).
// For PAM4 the amplitude of each of the three eyes is a third of the OMA.
func (t Transceiver) Q(rxDBm float64) float64 {
	oma := omaMW(math.Pow(10, rxDBm/10), t.erDB)
	if t.Modulation == PAM4 {
		oma /= 3
	}
	return oma / noiseAt(t.BaudGBd)
}

// BER is the pre-FEC bit error rate at average received power rxDBm (per
// lane). NRZ: 0.5 erfc(Q/√2). PAM4: each of the three decision thresholds
// is crossed with probability p = 0.5 erfc(Q/√2) from an adjacent level;
// with four equiprobable levels (the outer two have one neighbour, the inner
// two have two) the symbol error rate is (1+2+2+1)/4 · p = 1.5 p, and with
// Gray coding a symbol error flips one of its two bits: BER = 0.75 p.
func (t Transceiver) BER(rxDBm float64) float64 {
	q := t.Q(rxDBm)
	if math.IsNaN(q) || q <= 0 {
		return 0.5
	}
	e := math.Erfc(q / math.Sqrt2)
	if t.Modulation == PAM4 {
		return math.Min(0.5, 0.375*e)
	}
	return math.Min(0.5, 0.5*e)
}

// CodewordFailure is the probability that an RS codeword has more symbol
// errors than the code corrects, given independent bit errors at ber:
// symbol error ps = 1-(1-ber)^m; failure = P[Binomial(N, ps) > T], summed
// in log space so that 1e-40 does not underflow to a wrong zero early.
func CodewordFailure(fec FEC, ber float64) float64 {
	if fec.T == 0 || ber <= 0 {
		if fec.T == 0 {
			return ber
		}
		return 0
	}
	ps := -math.Expm1(float64(fec.SymbolBits) * math.Log1p(-ber))
	if ps >= 1 {
		return 1
	}
	lp, lq := math.Log(ps), math.Log1p(-ps)
	lgN, _ := math.Lgamma(float64(fec.N + 1))
	sum := 0.0
	for k := fec.T + 1; k <= fec.N; k++ {
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(fec.N - k + 1))
		term := math.Exp(lgN - lk - lnk + float64(k)*lp + float64(fec.N-k)*lq)
		sum += term
		if term < sum*1e-17 && k > fec.T+3 {
			break
		}
	}
	return math.Min(1, sum)
}

// FrameLossProbability is the probability that a frame of frameBytes bytes
// (L2, including FCS) is lost at rxDBm with the given FEC.
//
// Without FEC a single bit error breaks the FCS: 1-(1-BER)^(8·frameBytes)
// (RAIL §7.1). With RS FEC the frame's bits, with 8 B of preamble/SFD,
// travel in 257-bit blocks per 256 data bits (256b/257b transcoding,
// cl. 91); a frame of L bits starting at a uniformly random offset in
// codewords of W = K·m payload bits spans n = floor(L/W)+1 codewords with
// probability 1-f and n+1 with probability f, where f = frac(L/W) (for
// the first codeword boundary to fall inside the frame). A frame is lost if
// any codeword it spans fails. Multi-lane links (SR4) stripe codewords
// over lanes with the same per-lane BER, so the same expression holds.
func FrameLossProbability(t Transceiver, fec FEC, rxDBm float64, frameBytes int) float64 {
	ber := t.BER(rxDBm)
	if fec.T == 0 {
		return -math.Expm1(float64(8*frameBytes) * math.Log1p(-ber))
	}
	pcw := CodewordFailure(fec, ber)
	if pcw <= 0 {
		return 0
	}
	l := float64(frameBytes+8) * 8 * 257 / 256
	w := float64(fec.K * fec.SymbolBits)
	spans := math.Floor(l/w) + 1
	f := l/w - math.Floor(l/w)
	lok := math.Log1p(-pcw)
	ok := (1-f)*math.Exp(spans*lok) + f*math.Exp((spans+1)*lok)
	return math.Max(0, math.Min(1, 1-ok))
}

// RxPowerForFrameLoss inverts FrameLossProbability: the average received
// power (dBm) at which frames of frameBytes are lost with probability loss.
func RxPowerForFrameLoss(t Transceiver, fec FEC, frameBytes int, loss float64) float64 {
	lo, hi := -40.0, 10.0 // loss falls as power rises
	for i := 0; i < 100; i++ {
		mid := (lo + hi) / 2
		if FrameLossProbability(t, fec, mid, frameBytes) > loss {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}
