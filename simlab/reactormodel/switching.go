package reactormodel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"testbed/internal/sched"
)

// Switching is the mechanism of a Mordia-style microsecond circuit
// switch's night, circuit by circuit: the wavelength-selective switch's
// mirror moves and settles, light reaches the receiver, and the
// receiver's clock-data recovery (CDR) and PCS relock onto the new
// transmitter. A circuit carries data after
//
//	settle(out) + relock(in, previous in, out)
//
// from the start of the night; a circuit that stays (same input on the
// same output) keeps its light and costs nothing. The night of a
// reconfiguration ends when the slowest of its new circuits carries data.
//
// Mordia (Porter et al., SIGCOMM 2013; Farrington et al., OFC 2013, "A
// demonstration of ultra-low-latency data center optical circuit
// switching") is six 4-port stations on a ring, each a wavelength-selective
// switch of binary 2D MEMS mirrors (REACToR §4): a reconfiguration swings
// the mirror of the receiver's new wavelength channel through its full
// stroke. Farrington et al. measured a switching time of 2.8 us and a
// receiver electronics initialisation of 8.7 us (11.5 us in all); REACToR
// Fig. 5 observed about 12 us on average, 14.84 us at most, and §4 says the
// transceivers "vary in their lock time".
//
// Settle (the mirror). A mirror is a second-order resonator released by a
// voltage step; it is settled once its ringing stays within Tolerance of
// the stroke: ts = -ln(Tolerance*sqrt(1-z^2)) / (z*wn) (the standard
// envelope bound of an underdamped step response). Its natural frequency
// differs from mirror to mirror (MirrorSpread, uniform, fabrication), and
// its squeeze-film damping follows the gas's viscosity, which grows with
// temperature as (T/T0)^0.7 (Sutherland's law near room temperature).
//
// Relock (the receiver). With no light the receiver's CDR holds the last
// frequency it tracked: that of the previous transmitter on the port, or its
// own reference clock if the port was dark. It must pull its frequency to
// the new transmitter's, then align phase, then the PCS must find block
// lock and come out of reset:
//   - frequency: |f_new - f_held| / PullRate; every transmitter's clock is
//     within +-100 ppm of 10.3125 GBd (IEEE 802.3 Clause 52, 10GBASE-R) and
//     each port's offset is drawn uniformly in that range once;
//   - phase: the new signal's phase is arbitrary, uniform over the half unit
//     interval a bang-bang CDR must slew at most, PhaseSlew UI per ns;
//   - PCS: 64 consecutive valid sync headers for block lock (IEEE 802.3
//     49.2.13.2.2: 64 x 66 bits, 0.41 us at 10.3125 GBd), and the receive
//     PCS held in reset at least 4 us after the CDR reports lock to data
//     (Intel transceiver PHY user guides, "Lock-to-Data Mode");
//   - Frontend, the optical receiver's signal detect and gain recovery, is
//     the rest: chosen so that the relock's mean over the port pairs of
//     the default draw is Farrington et al.'s 8.7 us.
//
// The variation is the mechanism's: mirrors differ (per port), frequency
// steps differ with the pair of transmitters a receiver moves between (per
// reconfiguration), and the phase to acquire is new every time.
type Switching struct {
	// Tolerance is the ringing left at settle, a fraction of the stroke
	// (0.05: within 5% of the target angle the channel's coupling loss is
	// within a fraction of a dB).
	Tolerance float64
	// MirrorHz is each output station's mirror natural frequency at T0, Zeta
	// its damping ratio at T0.
	MirrorHz []float64
	Zeta     float64
	// TempC is the switch's temperature, T0C the one the mirrors were
	// characterised at.
	TempC, T0C float64
	// TxPPM is each input's transmitter clock offset, RefPPM each output
	// receiver's reference clock offset, in ppm of the line rate.
	TxPPM, RefPPM []float64
	// PullRate is how fast the CDR's frequency loop pulls, ppm per us;
	// PhaseSlew UI per ns; BaudGHz the line rate.
	PullRate, PhaseSlew, BaudGHz float64
	// PCSHold is the receive PCS's reset hold after lock, Frontend the
	// receiver's signal detect and gain recovery.
	PCSHold, Frontend time.Duration
}

// Mordia's defaults (see Switching).
const (
	mordiaMirrorHz = 440e3 // a 2.8 us settle at 5% and z = 0.4 at 25 C
	mordiaZeta     = 0.4
	mordiaTol      = 0.05
	// MirrorSpread is the mirrors' natural frequencies' spread, +-3%.
	MirrorSpread = 0.03
	// ClockPPM is IEEE 802.3 Clause 52's +-100 ppm.
	ClockPPM = 100.0
	// a bang-bang CDR moving its phase interpolator 1/64 UI per update at
	// 1/16 of the baud rate: 0.5 UI in about 50 ns.
	mordiaPhaseSlew = 1.0 / 64 / 16 // UI per unit interval
	mordiaPullRate  = 42.0          // ppm per us
	baud10GBASER    = 10.3125       // GBd
)

// NewSwitching draws a switch of ports stations' worth of mirrors and
// clocks from r, at tempC.
func NewSwitching(ports int, r *rand.Rand, tempC float64) *Switching {
	s := &Switching{Tolerance: mordiaTol, Zeta: mordiaZeta, TempC: tempC, T0C: 25,
		PullRate: mordiaPullRate, PhaseSlew: mordiaPhaseSlew * baud10GBASER, BaudGHz: baud10GBASER,
		PCSHold: 4 * time.Microsecond}
	for range ports {
		s.MirrorHz = append(s.MirrorHz, mordiaMirrorHz*(1+MirrorSpread*(2*r.Float64()-1)))
		s.TxPPM = append(s.TxPPM, ClockPPM*(2*r.Float64()-1))
		s.RefPPM = append(s.RefPPM, ClockPPM*(2*r.Float64()-1))
	}
	// Frontend: what makes the relock's mean over the pairs of this
	// draw 8.7 us (Farrington et al.).
	var sum float64
	n := 0
	for out := range ports {
		for in := range ports {
			for prev := range ports {
				if prev != in {
					sum += s.freqUS(in, prev, out)
					n++
				}
			}
		}
	}
	meanPhase := 0.25 / s.PhaseSlew / 1e3 // us
	fixed := usOf(s.PCSHold) + usOf(s.blockLock())
	s.Frontend = time.Duration(math.Round((8.7 - fixed - meanPhase - sum/float64(max(n, 1))) * 1e3))
	return s
}

func usOf(d time.Duration) float64 { return float64(d) / 1e3 }

// Ports is the number of stations' ports.
func (s *Switching) Ports() int { return len(s.MirrorHz) }

// blockLock is 64 sync headers of 66 bits at the baud rate.
func (s *Switching) blockLock() time.Duration {
	return time.Duration(math.Round(64 * 66 / s.BaudGHz))
}

// Settle is output out's mirror's settling time at the switch's
// temperature.
func (s *Switching) Settle(out int) time.Duration {
	z := s.Zeta * math.Pow((s.TempC+273.15)/(s.T0C+273.15), 0.7)
	z = min(z, 0.99)
	wn := 2 * math.Pi * s.MirrorHz[out]
	ts := -math.Log(s.Tolerance*math.Sqrt(1-z*z)) / (z * wn)
	return time.Duration(math.Round(ts * 1e9))
}

// freqUS is the frequency pull, in us, of receiver out moving to
// transmitter in from prev (prev < 0: the port was dark, its CDR on its
// reference).
func (s *Switching) freqUS(in, prev, out int) float64 {
	held := s.RefPPM[out]
	if prev >= 0 {
		held = s.TxPPM[prev]
	}
	return math.Abs(s.TxPPM[in]-held) / s.PullRate
}

// Relock is receiver out's relock onto transmitter in after prev (< 0:
// dark), with the phase to acquire drawn from r.
func (s *Switching) Relock(r *rand.Rand, in, prev, out int) time.Duration {
	phase := 0.5 * r.Float64() / s.PhaseSlew // ns
	t := s.freqUS(in, prev, out)*1e3 + phase
	return time.Duration(math.Round(t)) + s.PCSHold + s.blockLock() + s.Frontend
}

// CircuitRange bounds Circuit(r, in, prev, out) over the phase draw.
func (s *Switching) CircuitRange(in, prev, out int) (lo, hi time.Duration) {
	lo = s.Settle(out) + time.Duration(math.Round(s.freqUS(in, prev, out)*1e3)) + s.PCSHold + s.blockLock() + s.Frontend
	return lo, lo + time.Duration(math.Ceil(0.5/s.PhaseSlew))
}

// Circuit is when circuit in->out carries data after the night began.
func (s *Switching) Circuit(r *rand.Rand, in, prev, out int) time.Duration {
	return s.Settle(out) + s.Relock(r, in, prev, out)
}

// Night is the gap of a reconfiguration from prev to next (perms over the
// ports: perm[in] is the output, or sched.Dark; prev nil: all dark): the
// time until the slowest new circuit carries data, 0 if none is new.
func (s *Switching) Night(r *rand.Rand, prev, next []int) time.Duration {
	src := make([]int, s.Ports()) // the input each output had
	for i := range src {
		src[i] = -1
	}
	for in, out := range prev {
		if out != sched.Dark && out >= 0 && out < len(src) {
			src[out] = in
		}
	}
	var gap time.Duration
	for in, out := range next {
		if out == sched.Dark || out < 0 || out >= len(src) || in >= s.Ports() || src[out] == in {
			continue
		}
		gap = max(gap, s.Circuit(r, in, src[out], out))
	}
	return gap
}

// Bound is the longest night the mechanism can give: the slowest mirror,
// the largest frequency step between two clocks within the standard's
// +-100 ppm, and the whole half unit interval of phase.
func (s *Switching) Bound() time.Duration {
	var settle time.Duration
	for out := range s.Ports() {
		settle = max(settle, s.Settle(out))
	}
	f := 2 * ClockPPM / s.PullRate * 1e3
	return settle + time.Duration(math.Ceil(f+0.5/s.PhaseSlew)) + s.PCSHold + s.blockLock() + s.Frontend
}

// Floor is the shortest night a changed circuit can give.
func (s *Switching) Floor() time.Duration {
	settle := time.Duration(math.MaxInt64)
	for out := range s.Ports() {
		settle = min(settle, s.Settle(out))
	}
	return settle + s.PCSHold + s.blockLock() + s.Frontend
}

// Law summarises the mechanism as a GapLaw for those who need only its
// range (a night budget must cover Max): Min and Max are Floor and Bound,
// Mean and SD those of one circuit over every pair of ports with the mean
// phase.
func (s *Switching) Law() GapLaw {
	var sum, sq float64
	n := 0
	meanPhase := 0.25 / s.PhaseSlew
	for out := range s.Ports() {
		for in := range s.Ports() {
			for prev := range s.Ports() {
				if prev == in {
					continue
				}
				x := float64(s.Settle(out)) + s.freqUS(in, prev, out)*1e3 + meanPhase + float64(s.PCSHold+s.blockLock()+s.Frontend)
				sum += x
				sq += x * x
				n++
			}
		}
	}
	g := GapLaw{Min: s.Floor(), Max: s.Bound()}
	if n > 0 {
		m := sum / float64(n)
		g.Mean = time.Duration(math.Round(m))
		g.SD = time.Duration(math.Round(math.Sqrt(max(0, sq/float64(n)-m*m))))
	}
	g.Mean = min(max(g.Mean, g.Min), g.Max)
	return g
}

// Validate checks the mechanism.
func (s *Switching) Validate() error {
	switch {
	case s.Ports() == 0 || len(s.TxPPM) != s.Ports() || len(s.RefPPM) != s.Ports():
		return fmt.Errorf("switching: %d mirrors, %d transmitters, %d receivers: expected one of each per port", s.Ports(), len(s.TxPPM), len(s.RefPPM))
	case !(s.Tolerance > 0 && s.Tolerance < 1) || !(s.Zeta > 0 && s.Zeta < 1):
		return fmt.Errorf("switching: tolerance %g, damping %g: expected both in (0, 1)", s.Tolerance, s.Zeta)
	case !(s.PullRate > 0) || !(s.PhaseSlew > 0) || !(s.BaudGHz > 0):
		return fmt.Errorf("switching: pull rate %g ppm/us, phase slew %g UI/ns, %g GBd: expected positive", s.PullRate, s.PhaseSlew, s.BaudGHz)
	case s.TempC < -40 || s.TempC > 85:
		return fmt.Errorf("switching: temperature %g C: expected within -40..85 C (industrial range)", s.TempC)
	case s.Frontend < 0:
		return fmt.Errorf("switching: receiver front end %v: expected >= 0", s.Frontend)
	}
	return nil
}
