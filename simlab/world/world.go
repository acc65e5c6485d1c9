package world

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"testbed/simlab/physics"
)

// World is the one physical model every emulator of a simulated lab shares:
// attenuators and the fibres they sit on. Emulators are protocol front-ends
// over it; they hold no physics of their own.
type World struct {
	seed uint64
	now  func() time.Time

	mu     sync.Mutex
	voas   map[string]*VOA
	fibres map[string]*Fibre
}

// New makes an empty world whose randomness derives from seed.
func New(seed uint64) *World {
	return &World{seed: seed, now: time.Now, voas: map[string]*VOA{}, fibres: map[string]*Fibre{}}
}

// Seed returns the world's seed.
func (w *World) Seed() uint64 { return w.seed }

// Clock is the world's wall clock, which emulators read for time that
// passes on its own (a moving attenuator, a running schedule).
func (w *World) Clock() func() time.Time { return w.now }

// Now reads the world's clock.
func (w *World) Now() time.Time { return w.now() }

// Stream returns a generator for one named stream, so that each fibre's
// (or device's) draws depend only on the seed and its own history, not on
// the others'.
func (w *World) Stream(stream string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(stream))
	return rand.New(rand.NewPCG(w.seed, h.Sum64()))
}

// VOA is a simulated attenuator instrument.
type VOA struct {
	Name     string
	Vendor   string
	Model    string
	Serial   string
	Firmware string
	Channels []*VOAChannel // index 0 is channel 1
}

// VOAChannel is one attenuator channel: a stepper-driven filter whose
// attenuation moves towards its set point at a finite speed.
type VOAChannel struct {
	MinDB, MaxDB    float64
	InsertionLossDB float64 // loss at 0 dB setting (N7764A: about 1.5 dB)
	SpeedDBps       float64 // how fast the setting moves

	mu          sync.Mutex
	now         func() time.Time
	from, to    float64   // motion from -> to
	moveStart   time.Time // when the current motion began
	wavelengthM float64
	offsetDB    float64
	shutterOpen bool
	input       func() float64 // optical power arriving at the input, dBm
	// changes counts the calls that changed the channel's settings (every
	// setter, the input's wiring): a fibre's LightStamp.
	changes atomic.Uint64
}

// NewVOA adds an instrument with n identical channels.
func (w *World) NewVOA(name, vendor, model, serial, firmware string, n int, minDB, maxDB, insertionLossDB, speedDBps float64) *VOA {
	v := &VOA{Name: name, Vendor: vendor, Model: model, Serial: serial, Firmware: firmware}
	for i := 0; i < n; i++ {
		v.Channels = append(v.Channels, &VOAChannel{
			MinDB: minDB, MaxDB: maxDB, InsertionLossDB: insertionLossDB, SpeedDBps: speedDBps,
			now: w.now, wavelengthM: 1550e-9, shutterOpen: true,
			input: func() float64 { return math.Inf(-1) },
		})
	}
	w.mu.Lock()
	w.voas[name] = v
	w.mu.Unlock()
	return v
}

// VOA returns the named instrument.
func (w *World) VOA(name string) (*VOA, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.voas[name]
	return v, ok
}

// SetAttenuation starts moving to dB (which the caller has range-checked).
func (c *VOAChannel) SetAttenuation(dB float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.from = c.attenuationAt(now)
	c.to = dB
	c.moveStart = now
	c.changes.Add(1)
}

// Attenuation is the actual attenuation now (mid-motion while moving).
func (c *VOAChannel) Attenuation() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attenuationAt(c.now())
}

// Target is the set point.
func (c *VOAChannel) Target() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.to
}

// SettleTime is how long until the current motion ends (0 if settled).
func (c *VOAChannel) SettleTime() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	end := c.moveStart.Add(c.moveDuration())
	if d := end.Sub(c.now()); d > 0 {
		return d
	}
	return 0
}

func (c *VOAChannel) moveDuration() time.Duration {
	if c.SpeedDBps <= 0 {
		return 0
	}
	return time.Duration(math.Abs(c.to-c.from) / c.SpeedDBps * float64(time.Second))
}

func (c *VOAChannel) attenuationAt(t time.Time) float64 {
	d := c.moveDuration()
	el := t.Sub(c.moveStart)
	if d == 0 || el >= d {
		return c.to
	}
	if el <= 0 {
		return c.from
	}
	return c.from + (c.to-c.from)*float64(el)/float64(d)
}

// SetWavelength sets the calibration wavelength in metres.
func (c *VOAChannel) SetWavelength(m float64) {
	c.mu.Lock()
	c.wavelengthM = m
	c.changes.Add(1)
	c.mu.Unlock()
}

// Wavelength in metres.
func (c *VOAChannel) Wavelength() float64 { c.mu.Lock(); defer c.mu.Unlock(); return c.wavelengthM }

// SetOffset sets the display offset in dB (added to readings, not to the light).
func (c *VOAChannel) SetOffset(dB float64) {
	c.mu.Lock()
	c.offsetDB = dB
	c.changes.Add(1)
	c.mu.Unlock()
}

// Offset in dB.
func (c *VOAChannel) Offset() float64 { c.mu.Lock(); defer c.mu.Unlock(); return c.offsetDB }

// SetShutter opens (true) or closes the output shutter.
func (c *VOAChannel) SetShutter(open bool) {
	c.mu.Lock()
	c.shutterOpen = open
	c.changes.Add(1)
	c.mu.Unlock()
}

// Shutter reports whether the output shutter is open.
func (c *VOAChannel) Shutter() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.shutterOpen }

// OutputPowerDBm is the optical power leaving the channel: input power
// less insertion loss and attenuation; -Inf with the shutter closed.
func (c *VOAChannel) OutputPowerDBm() float64 {
	c.mu.Lock()
	in, open, att, il := c.input, c.shutterOpen, c.attenuationAt(c.now()), c.InsertionLossDB
	c.mu.Unlock()
	if !open {
		return math.Inf(-1)
	}
	return in() - il - att
}

// Fibre is a one-directional optical path from a transmitter to a receiver,
// optionally through a VOA channel. Loss is what the receiver's FEC and MAC
// make of the power that arrives.
type Fibre struct {
	Name         string
	Transceiver  physics.Transceiver
	FEC          physics.FEC
	LossBeforeDB float64 // fibre and connectors between transmitter and VOA
	LossAfterDB  float64 // fibre and connectors between VOA and receiver
	// PenaltyDB is the power the fibre run's dispersion costs the
	// receiver's eye (physics.Transceiver.DispersionPenaltyDB): not light
	// lost, so the receiver's power monitor does not see it; +Inf when the
	// eye is closed.
	PenaltyDB float64
	// ReturnLossDB is the loss of the duplex pair's other fibre, b to a:
	// no VOA, and none of this direction's extra connectors (a dirty
	// connector is on one fibre: RAIL §2.3, Fig. 5b). 0: the patch losses
	// of this direction.
	ReturnLossDB float64
	// LengthM is the fibre run's length (0: unknown, a patch cord); what
	// models its propagation delay (5 ns/m) read.
	LengthM float64
	VOA     *VOAChannel

	mu  sync.Mutex
	rng *rand.Rand
	// impair, when set, is what changes on the fibre over the lab clock
	// (a scenario): the launch power's fall and extra path loss, dB.
	impair func(t time.Duration) (txDropDB, pathLossDB float64)
	// changes counts SetImpairment's calls: LightStamp.
	changes atomic.Uint64
}

// SetImpairment makes the fibre's optics change with the lab clock:
// f(t) gives how far the transmitter's launch power has fallen and how
// much extra loss the path has at lab time t (nil: none). f must be safe
// to call from several goroutines (a pure function of t).
func (f *Fibre) SetImpairment(fn func(t time.Duration) (txDropDB, pathLossDB float64)) {
	f.mu.Lock()
	f.impair = fn
	f.changes.Add(1)
	f.mu.Unlock()
}

// LightStamp tells a reader of the fibre's light (EyePowerDBmAt and the
// powers it derives from) when it may keep what it read. steady: no
// impairment moves the light with the lab clock (SetImpairment) and the
// VOA channel, if any, is not moving (its motion runs on the world's wall
// clock); stamp counts the changes made since the fibre was made to its
// impairment and to its channel's settings (every setter). While a
// fibre is steady its light is the same at any lab time until its Stamp
// differs from the stamp: a reader takes LightStamp before it reads the
// light, and may keep that reading while Stamp returns the same. The
// exported fields are the fibre's making: a change to them is not
// counted, and is seen by the next reader that reads anew.
func (f *Fibre) LightStamp() (stamp uint64, steady bool) {
	stamp = f.Stamp()
	f.mu.Lock()
	steady = f.impair == nil
	f.mu.Unlock()
	if c := f.VOA; c != nil && steady {
		c.mu.Lock()
		d := c.moveDuration()
		steady = d == 0 || c.now().Sub(c.moveStart) >= d
		c.mu.Unlock()
	}
	return stamp, steady
}

// Stamp is LightStamp's stamp alone: two atomic loads, no lock, no clock.
// (Each count only grows, so their sum is the same only while neither moved.)
func (f *Fibre) Stamp() uint64 {
	n := f.changes.Load()
	if f.VOA != nil {
		n += f.VOA.changes.Load()
	}
	return n
}

func (f *Fibre) impairmentAt(t time.Duration) (tx, path float64) {
	f.mu.Lock()
	fn := f.impair
	f.mu.Unlock()
	if fn == nil {
		return 0, 0
	}
	return fn(t)
}

// RxPowerDBmAt is the average power at the receiver at lab time t: as
// RxPowerDBm, less the impairments in force at t (every term is a loss in
// dB along the same path, so they add).
func (f *Fibre) RxPowerDBmAt(t time.Duration) float64 {
	tx, path := f.impairmentAt(t)
	return f.RxPowerDBm() - tx - path
}

// TxPowerDBmAt is the transmitter's launch power at lab time t (what its
// module's DDM reports).
func (f *Fibre) TxPowerDBmAt(t time.Duration) float64 {
	tx, _ := f.impairmentAt(t)
	return f.Transceiver.TxPowerDBm() - tx
}

// NewFibre adds a fibre; voa may be nil. The VOA channel's input is wired to
// this fibre's transmitter.
func (w *World) NewFibre(name string, t physics.Transceiver, fec physics.FEC, lossBefore, lossAfter float64, voa *VOAChannel) *Fibre {
	f := &Fibre{Name: name, Transceiver: t, FEC: fec, LossBeforeDB: lossBefore, LossAfterDB: lossAfter, VOA: voa, rng: w.Stream("fibre/" + name)}
	if voa != nil {
		voa.mu.Lock()
		voa.input = func() float64 { return t.TxPowerDBm() - lossBefore }
		voa.changes.Add(1)
		voa.mu.Unlock()
	}
	w.mu.Lock()
	w.fibres[name] = f
	w.mu.Unlock()
	return f
}

// Fibre returns the named fibre.
func (w *World) Fibre(name string) (*Fibre, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f, ok := w.fibres[name]
	return f, ok
}

// RxPowerDBm is the average power at the receiver now.
func (f *Fibre) RxPowerDBm() float64 {
	if f.VOA != nil {
		return f.VOA.OutputPowerDBm() - f.LossAfterDB
	}
	return f.Transceiver.TxPowerDBm() - f.LossBeforeDB - f.LossAfterDB
}

// EyePowerDBm is the received power less the dispersion penalty: the
// back-to-back power that gives the receiver the eye it has now, what its
// bit error ratio follows.
func (f *Fibre) EyePowerDBm() float64 { return f.RxPowerDBm() - f.PenaltyDB }

// EyePowerDBmAt is EyePowerDBm at lab time t: the received power less the
// impairments in force at t (a scenario's) and the dispersion penalty.
func (f *Fibre) EyePowerDBmAt(t time.Duration) float64 { return f.RxPowerDBmAt(t) - f.PenaltyDB }

// FrameLossProbability is the chance a frame of the given size is lost now.
func (f *Fibre) FrameLossProbability(frameBytes int) float64 {
	rx := f.EyePowerDBm()
	if math.IsInf(rx, -1) {
		return 1
	}
	return physics.FrameLossProbability(f.Transceiver, f.FEC, rx, frameBytes)
}

// Transmit sends n frames of frameBytes across the fibre at the present
// received power and returns how many arrive corrupted (and are dropped by
// the receiving MAC). Draws come from the fibre's own seeded stream.
func (f *Fibre) Transmit(n int64, frameBytes int) (lost int64) {
	if n <= 0 {
		return 0
	}
	p := f.FrameLossProbability(frameBytes)
	f.mu.Lock()
	defer f.mu.Unlock()
	return physics.Binomial(f.rng, n, p)
}

func (f *Fibre) String() string {
	return fmt.Sprintf("fibre %s (%s, fec %s)", f.Name, f.Transceiver.Name, f.FEC.Name)
}

// Speed is how fast the setting moves, dB/s.
func (c *VOAChannel) Speed() float64 { c.mu.Lock(); defer c.mu.Unlock(); return c.SpeedDBps }

// SetSpeed changes the motion speed; a motion in progress is re-based so the
// position stays continuous.
func (c *VOAChannel) SetSpeed(dBps float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.from = c.attenuationAt(now)
	c.moveStart = now
	c.SpeedDBps = dBps
	c.changes.Add(1)
}
