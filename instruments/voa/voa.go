// Package voa drives variable optical attenuators. One interface, Attenuator,
// covers every vendor; the inventory's `driver:` key picks the implementation
// (see Drivers). Drivers enforce the inventory's limits before anything is
// sent, check the instrument's error reporting after every setting, and
// return only once the attenuator has settled.
package voa

import (
	"context"
	"fmt"
	"time"

	"testbed/transport"
)

// Attenuator is one multi-channel (or single-channel) VOA. Channels count from 1.
type Attenuator interface {
	Identity(ctx context.Context) (transport.Identity, error)
	// Channels reports how many channels the instrument has.
	Channels() int
	// SetAttenuation sets a channel and returns once it reads back settled
	// within the driver's tolerance (0.05 dB unless the device says otherwise).
	SetAttenuation(ctx context.Context, channel int, dB float64) error
	Attenuation(ctx context.Context, channel int) (float64, error)
	// Capabilities lists what the driver can do beyond attenuation:
	// CapPowerMeter, CapShutter, CapWavelength.
	Capabilities() []string
	Close() error
}

// PowerMeter is implemented by attenuators with a built-in output power
// monitor (Keysight N776x).
type PowerMeter interface {
	// OutputPower reads the optical power leaving the channel, in dBm.
	OutputPower(ctx context.Context, channel int) (float64, error)
}

// Shutter is implemented by attenuators with an output shutter (Keysight
// N776x). A shutter that is closed gives no light whatever the attenuation.
type Shutter interface {
	// ShutterOpen reads the shutter's state.
	ShutterOpen(ctx context.Context, channel int) (bool, error)
	// SetShutter opens or closes it and returns once it reads back so.
	SetShutter(ctx context.Context, channel int, open bool) error
}

// Homer is implemented by attenuators whose motor counts steps from a
// home sensor (OZ Optics DD-100-MC). Home runs the motor back to the
// sensor, which resets the count, and returns how far the count was off
// there; the attenuator is then at its minimum.
type Homer interface {
	Home(ctx context.Context) (diff int, err error)
}

// Capabilities a driver may declare.
const (
	CapPowerMeter = "power-meter"
	CapShutter    = "shutter"
	CapWavelength = "wavelength"
)

// Limits bound what may be sent to a channel. Drivers refuse values outside
// them before touching the wire.
type Limits struct {
	MinDB float64
	MaxDB float64
}

// Check returns an error naming the value and the limits if dB is outside.
func (l Limits) Check(channel int, dB float64) error {
	if dB < l.MinDB || dB > l.MaxDB {
		return fmt.Errorf("channel %d: attenuation %.2f dB outside limits [%.2f, %.2f] dB", channel, dB, l.MinDB, l.MaxDB)
	}
	return nil
}

// Options configure a driver when it is opened.
type Options struct {
	// Limits apply to every channel; zero value means the device's own range.
	Limits *Limits
	// Timeout bounds each exchange that has no tighter context deadline.
	Timeout time.Duration
	// TravelTime, for a motor-driven attenuator that does not report its
	// speed (the DD-100), is how long its motor may take over the whole
	// range (the inventory's options.travel_time); 0: what the device's
	// manual allows (30 s for the DD-100-MC's homing).
	TravelTime time.Duration
	// Transcript records the exchange; nil records nothing.
	Transcript *transport.Transcript
}
