package physics

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Fibre is a kind of optical fibre: its cabled attenuation and what
// spreads a pulse travelling along it.
//
// A longer fibre costs a link twice: the light it absorbs (attenuation,
// dB/km) and the eye it closes (dispersion). Dispersion is modelled the
// way the IEEE 802.3 link models of the multimode clauses budget it (the
// "10GEPBud" spreadsheet behind cl. 52.14, 86.10 and 95.11): the fibre's
// impulse response is taken as Gaussian, its RMS width the root sum of
// squares of the modal and the chromatic spread, and it adds in quadrature
// to the width the transmitter and the reference receiver already have.
type Fibre struct {
	Name    string
	DBPerKm float64 // cabled attenuation at the wavelength its transceivers use
	// Multimode fibres carry the 850 nm VCSEL optics (SR), single-mode
	// fibres the 1310 nm lasers (LR).
	Multimode bool
	// EMBMHzKm is the effective modal bandwidth at 850 nm (0 for
	// single-mode): the optical 3 dB bandwidth of a kilometre.
	EMBMHzKm float64
	// Chromatic dispersion D(λ) = S0/4 (λ - λ0⁴/λ³) ps/(nm·km) (the
	// standards' form, IEEE 802.3 cl. 52.14 and ITU-T G.652).
	ZeroDispersionNM float64 // λ0
	SlopePsNm2Km     float64 // S0
}

// Fibres are the fibre types of the simulated lab:
//   - OM3 and OM4, 50/125 um laser-optimised multimode (TIA-492AAAC,
//     TIA-492AAAD): 3.5 dB/km at 850 nm, the value IEEE 802.3 budgets
//     (cl. 52.14 Table 52-24, cl. 86.10, cl. 95.11); effective modal
//     bandwidth 2000 and 4700 MHz·km at 850 nm (cl. 86.10.2, Table 86-13;
//     cl. 95.11.2, Table 95-12); zero-dispersion wavelength 1295-1340 nm
//     with slope at most 0.105 ps/(nm²·km) (cl. 52.14.2 Table 52-25,
//     TIA-492AAAC): 1316 nm and 0.10275 ps/(nm²·km), the link model's
//     values, give D(850 nm) = -103 ps/(nm·km);
//   - OS2, single-mode ITU-T G.652.D: 0.4 dB/km at 1310 nm (cl. 52.14,
//     TIA-568.3-D); λ0 1300-1324 nm, S0 <= 0.092 ps/(nm²·km) (G.652
//     Table 1; cl. 52.14.1 Table 52-23): 1312 nm and 0.092.
func fibres() []Fibre {
	return []Fibre{
		{Name: "OM3", DBPerKm: 3.5, Multimode: true, EMBMHzKm: 2000, ZeroDispersionNM: 1316, SlopePsNm2Km: 0.10275},
		{Name: "OM4", DBPerKm: 3.5, Multimode: true, EMBMHzKm: 4700, ZeroDispersionNM: 1316, SlopePsNm2Km: 0.10275},
		{Name: "OS2", DBPerKm: 0.4, Multimode: false, ZeroDispersionNM: 1312, SlopePsNm2Km: 0.092},
	}
}

// FibreNames lists the known fibre types, sorted.
func FibreNames() []string {
	var out []string
	for _, f := range fibres() {
		out = append(out, f.Name)
	}
	sort.Strings(out)
	return out
}

// FibreByName returns a known fibre type.
func FibreByName(name string) (Fibre, error) {
	for _, f := range fibres() {
		if f.Name == name {
			return f, nil
		}
	}
	return Fibre{}, fmt.Errorf("unknown fibre type %q (known: %s)", name, strings.Join(FibreNames(), ", "))
}

// LossDB is the attenuation of lengthM metres.
func (f Fibre) LossDB(lengthM float64) float64 { return f.DBPerKm * lengthM / 1000 }

// DispersionPsNmKm is the chromatic dispersion at wavelength λ (nm).
func (f Fibre) DispersionPsNmKm(lambdaNM float64) float64 {
	l0 := f.ZeroDispersionNM
	return f.SlopePsNm2Km / 4 * (lambdaNM - l0*l0*l0*l0/(lambdaNM*lambdaNM*lambdaNM))
}

// gaussSigmaPerHz is σ·f3dB of a Gaussian impulse response: its transfer
// function exp(-2π²σ²f²) halves at f3dB = sqrt(ln 2 / 2)/(πσ).
var gaussSigmaPerHz = math.Sqrt(math.Ln2/2) / math.Pi

// Carries says whether the transceiver runs on the fibre: the SR optics
// (850 nm) on multimode, the LR optics (1310 nm) on single-mode.
func (t Transceiver) Carries(f Fibre) error {
	if (t.wavelengthNM < 1000) != f.Multimode {
		kind := "single-mode"
		if t.wavelengthNM < 1000 {
			kind = "multimode"
		}
		return fmt.Errorf("%s (%.0f nm) runs on %s fibre, not %s", t.Name, t.wavelengthNM, kind, f.Name)
	}
	return nil
}

// PulseSpreadPs is the RMS spread lengthM metres of f add to a pulse:
// modal, σ = 0.187 L/EMB (the Gaussian whose 3 dB bandwidth is EMB/L), and
// chromatic, σ = |D(λ)| Δλrms L.
func (t Transceiver) PulseSpreadPs(f Fibre, lengthM float64) (modal, chromatic float64) {
	km := lengthM / 1000
	if f.EMBMHzKm > 0 {
		modal = gaussSigmaPerHz / (f.EMBMHzKm * 1e6 / km) * 1e12
	}
	chromatic = math.Abs(f.DispersionPsNmKm(t.wavelengthNM)) * t.rmsWidthNM * km
	return modal, chromatic
}

// backToBackSigmaPs is the RMS width a pulse has with no fibre: the
// transmitter and the reference receiver, each a Gaussian of 3 dB
// bandwidth 0.75 times the signalling rate (the reference receiver of
// IEEE 802.3 cl. 52.9.7, 86.8.4.5 and 95.8.5: a fourth-order
// Bessel-Thomson response at 0.75 x the signalling rate).
func (t Transceiver) backToBackSigmaPs() float64 {
	one := gaussSigmaPerHz / (0.75 * t.BaudGBd * 1e9) * 1e12
	return math.Sqrt2 * one
}

// eyeOpening is the vertical opening of an NRZ eye through a Gaussian
// channel of RMS width sigma, as a fraction of the OMA: a lone one between
// zeros reaches erf(T/(2√2σ)) of the full level at its centre, a lone zero
// between ones falls to 1 - erf(...), so the worst-case eye is
// 2 erf(T/(2√2σ)) - 1 (closed at 0).
func eyeOpening(sigmaPs, bitPs float64) float64 {
	return 2*math.Erf(bitPs/(2*math.Sqrt2*sigmaPs)) - 1
}

// DispersionPenaltyDB is the optical power penalty (ISI) of lengthM
// metres of f: how much more power the receiver needs to see the eye it
// sees back to back, 10 log10(eye0/eye). The receiver's calibration
// (api.go) is a back-to-back sensitivity, so that eye is the reference.
// +Inf once the eye closes: no power recovers it. PAM4 has three eyes of a
// third of the span each; their ISI closes them the same fraction of a
// symbol period, which this NRZ form approximates.
func (t Transceiver) DispersionPenaltyDB(f Fibre, lengthM float64) float64 {
	if lengthM <= 0 {
		return 0
	}
	bit := 1000 / t.BaudGBd // ps
	s0 := t.backToBackSigmaPs()
	m, c := t.PulseSpreadPs(f, lengthM)
	eye0, eye := eyeOpening(s0, bit), eyeOpening(math.Sqrt(s0*s0+m*m+c*c), bit)
	if eye <= 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(eye0/eye)
}

// FibrePenaltyDB is everything lengthM metres of f cost the link, in dB
// of received power: its attenuation plus its dispersion penalty.
func (t Transceiver) FibrePenaltyDB(f Fibre, lengthM float64) float64 {
	return f.LossDB(lengthM) + t.DispersionPenaltyDB(f, lengthM)
}
