// Package monitor holds the pure parts of the corruption monitor: a loss
// estimate per link direction over a frame-count window built from
// successive reads of never-cleared port counters, its Wilson interval, a
// state machine (unknown / clean / corrupting) with hysteresis, the policy
// that turns states into LinkGuardian and link-disable decisions, and
// CorrOpt's capacity checker.
//
// It lives under experiments/ because, like a recipe, it consumes the p4
// contracts (Eq. 2 copies) and experiments/stats, which orchestrator/ may not
// import. The estimator, the policy and the checker do no I/O; poll.go reads
// the counters through the switch driver's method (an interface, so the
// loop is tested apart from any transport) and serves the status as JSON.
package monitor

import (
	"fmt"
	"math"
	"time"

	"testbed/experiments/stats"
)

// State is what the monitor knows of one link direction.
type State int

// States. Unknown means too few frames (or an interval that straddles the
// threshold): it is never an alarm.
const (
	Unknown State = iota
	Clean
	Corrupting
)

func (s State) String() string {
	switch s {
	case Clean:
		return "clean"
	case Corrupting:
		return "corrupting"
	}
	return "unknown"
}

// MarshalText makes a state read as its name in JSON.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Counter turns successive reads of a hardware counter that is never
// cleared into differences, across wraps of a counter of Bits bits and
// across resets (a device reboot or someone clearing the counters).
type Counter struct {
	Bits uint // width of the hardware counter; 0 means 64
}

// Delta is how far the counter moved from prev to cur. A counter that went
// backwards by less than half its range was reset, not wrapped: ok is false
// and the interval must be discarded (what happened before the reset is
// lost). A 64-bit counter never wraps in practice, so going backwards is
// always a reset.
func (c Counter) Delta(prev, cur uint64) (d uint64, ok bool) {
	if cur >= prev {
		return cur - prev, true
	}
	bits := c.Bits
	if bits == 0 || bits >= 64 {
		return 0, false
	}
	rng := uint64(1) << bits
	if prev >= rng || cur >= rng {
		return 0, false // out of range for the width: not a wrap
	}
	d = cur + rng - prev
	if d > rng/2 {
		return 0, false
	}
	return d, true
}

// Reading is one poll of a link direction's counters: frames the sending
// port transmitted, and what the receiving port took in good and with an
// FCS error. Reads of the two ends need not be simultaneous.
type Reading struct {
	At     time.Time
	Tx     uint64 // sender: frames transmitted
	RxOK   uint64 // receiver: frames received OK
	RxFCS  uint64 // receiver: frames received with an FCS error
	HasFCS bool   // the receiver counts FCS errors
}

// Config tunes the estimator of one link direction.
type Config struct {
	// Window is the frame-count window the estimate is taken over (the
	// LinkGuardian artifact's corruptd used 10 million frames).
	Window uint64
	// MinFrames below which the direction is unknown. Zero means the
	// frames that let zero losses bound the rate below Threshold:
	// z²/Threshold (3.8 million at 1e-6 and z = 1.96).
	MinFrames uint64
	// Threshold is the loss rate above which a link corrupts: the
	// interval's lower bound must exceed it.
	Threshold float64
	// ClearBelow is the upper bound under which a corrupting link counts as
	// healed (hysteresis); zero means Threshold.
	ClearBelow float64
	// Quiet is how long a corrupting link must stay below ClearBelow
	// before it is declared clean.
	Quiet time.Duration
	// Z is the normal quantile of the interval; zero means 1.96 (95%).
	Z float64
	// CounterBits is the counters' width (0: 64).
	CounterBits uint
}

// DefaultConfig follows corruptd: a 10-million-frame window, a 1e-6
// threshold, and a minute of quiet before a link is declared clean.
func DefaultConfig() Config {
	return Config{Window: 10_000_000, Threshold: 1e-6, Quiet: time.Minute}
}

func (c Config) normalised() (Config, error) {
	if !(c.Threshold > 0 && c.Threshold < 1) {
		return c, fmt.Errorf("monitor: threshold %g not in (0, 1)", c.Threshold)
	}
	if c.Z == 0 {
		c.Z = stats.Z95
	}
	if c.Z < 0 {
		return c, fmt.Errorf("monitor: negative z %g", c.Z)
	}
	if c.ClearBelow == 0 {
		c.ClearBelow = c.Threshold
	}
	if c.ClearBelow > c.Threshold {
		return c, fmt.Errorf("monitor: clear_below %g above threshold %g: no hysteresis", c.ClearBelow, c.Threshold)
	}
	if c.MinFrames == 0 {
		c.MinFrames = uint64(math.Ceil(c.Z * c.Z / c.Threshold))
	}
	if c.Window == 0 {
		c.Window = c.MinFrames
	}
	if c.Window < c.MinFrames {
		return c, fmt.Errorf("monitor: window %d frames below min_frames %d: the link could never be judged", c.Window, c.MinFrames)
	}
	if c.Quiet < 0 {
		return c, fmt.Errorf("monitor: negative quiet period %s", c.Quiet)
	}
	return c, nil
}

// Status is a direction's estimate and state after a reading, with the
// evidence behind it.
type Status struct {
	State  State     `json:"state"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	Frames uint64    `json:"frames"` // frames in the window
	Losses uint64    `json:"losses"` // of them lost or corrupted
	Rate   float64   `json:"rate"`   // Losses / Frames (0 with no frames)
	Low    float64   `json:"low"`    // Wilson interval
	High   float64   `json:"high"`
	// Since is when the direction entered State.
	Since time.Time `json:"since"`
	// Changed says this reading moved the state.
	Changed bool `json:"changed"`
	// Resets counts the counter resets seen (their intervals discarded).
	Resets int `json:"resets"`
}

type sample struct{ n, k uint64 }

// Estimator follows one link direction. It is not safe for concurrent use.
type Estimator struct {
	cfg        Config
	ctr        Counter
	prev       *Reading
	win        []sample
	n, k       uint64
	st         Status
	clearSince time.Time
}

// NewEstimator checks cfg and returns an estimator in state unknown.
func NewEstimator(cfg Config) (*Estimator, error) {
	c, err := cfg.normalised()
	if err != nil {
		return nil, err
	}
	return &Estimator{cfg: c, ctr: Counter{Bits: c.CounterBits}, st: Status{Low: 0, High: 1, Reason: "no reading yet"}}, nil
}

// Config is the estimator's configuration with defaults filled in.
func (e *Estimator) Config() Config { return e.cfg }

// Status is the latest status.
func (e *Estimator) Status() Status { return e.st }

// Observe takes a reading and returns the new status. The first reading
// only sets the baseline: counters are never cleared, only differenced.
func (e *Estimator) Observe(r Reading) Status {
	prev := e.prev
	e.prev = &r
	e.st.At, e.st.Changed = r.At, false
	if prev == nil {
		return e.decide(r.At)
	}
	tx, ok1 := e.ctr.Delta(prev.Tx, r.Tx)
	rx, ok2 := e.ctr.Delta(prev.RxOK, r.RxOK)
	fcs, ok3 := e.ctr.Delta(prev.RxFCS, r.RxFCS)
	if !ok1 || !ok2 || (r.HasFCS && !ok3) {
		e.st.Resets++
		return e.decide(r.At)
	}
	var s sample
	if r.HasFCS {
		// Both counts at the receiving end: no skew between the reads of
		// two switches, and a corrupted frame is counted once.
		s = sample{n: rx + fcs, k: fcs}
	} else {
		// Frames the sender sent that the receiver did not take. The two
		// ends are read at different instants; the skew telescopes over
		// a window of differences, and a sample that reads negative is
		// counted as no loss.
		s = sample{n: tx}
		if tx > rx {
			s.k = tx - rx
		}
	}
	if s.n > 0 {
		e.push(s)
	}
	return e.decide(r.At)
}

// push adds a sample and drops the oldest while the rest still fill the
// window.
func (e *Estimator) push(s sample) {
	e.win = append(e.win, s)
	e.n += s.n
	e.k += s.k
	drop := 0
	for drop < len(e.win)-1 && e.n-e.win[drop].n >= e.cfg.Window {
		e.n -= e.win[drop].n
		e.k -= e.win[drop].k
		drop++
	}
	if drop > 0 {
		e.win = append(e.win[:0], e.win[drop:]...)
	}
}

func (e *Estimator) set(s State, at time.Time, reason string) {
	if s != e.st.State {
		e.st.State, e.st.Since, e.st.Changed = s, at, true
	}
	e.st.Reason = reason
}

func (e *Estimator) decide(at time.Time) Status {
	c := &e.cfg
	st := &e.st
	st.Frames, st.Losses = e.n, e.k
	st.Rate = 0
	if e.n > 0 {
		st.Rate = float64(e.k) / float64(e.n)
	}
	st.Low, st.High = stats.Wilson(int64(e.k), int64(e.n), c.Z)
	switch {
	case e.n < c.MinFrames:
		if st.State == Corrupting {
			// Evidence too thin to clear: hold the alarm.
			e.clearSince = time.Time{}
			e.set(Corrupting, at, fmt.Sprintf("holding: %d frames in the window, %d needed to judge", e.n, c.MinFrames))
		} else {
			e.set(Unknown, at, fmt.Sprintf("too few frames: %d in the window, %d needed", e.n, c.MinFrames))
		}
	case st.Low > c.Threshold:
		e.clearSince = time.Time{}
		e.set(Corrupting, at, fmt.Sprintf("lower bound %.3g above threshold %.3g", st.Low, c.Threshold))
	case st.State == Corrupting:
		if st.High >= c.ClearBelow {
			e.clearSince = time.Time{}
			e.set(Corrupting, at, fmt.Sprintf("holding: upper bound %.3g not below %.3g", st.High, c.ClearBelow))
			break
		}
		if e.clearSince.IsZero() {
			e.clearSince = at
		}
		if q := at.Sub(e.clearSince); q < c.Quiet {
			e.set(Corrupting, at, fmt.Sprintf("holding: upper bound %.3g below %.3g for %s of %s quiet", st.High, c.ClearBelow, q, c.Quiet))
			break
		}
		e.clearSince = time.Time{}
		e.set(Clean, at, fmt.Sprintf("upper bound %.3g below %.3g for the %s quiet period", st.High, c.ClearBelow, c.Quiet))
	case st.High < c.Threshold:
		e.set(Clean, at, fmt.Sprintf("upper bound %.3g below threshold %.3g", st.High, c.Threshold))
	default:
		e.set(Unknown, at, fmt.Sprintf("interval [%.3g, %.3g] straddles threshold %.3g", st.Low, st.High, c.Threshold))
	}
	return *st
}
