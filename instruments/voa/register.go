package voa

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"testbed/drivers"
)

// Kind is the inventory's kind for an attenuator.
const Kind = "voa"

// Undo kinds of every VOA driver (the run journals them by these names).
const (
	UndoAttenuation = "voa.attenuation" // {channel, db}: set the channel
	UndoShutter     = "voa.shutter"     // {channel, open}: set the channel's shutter
)

// travelTimeOption is options.travel_time's form.
var travelTimeOption = drivers.DurationOption("30s", "how long the motor takes over the whole range")

// register adds one VOA driver to the registry: open turns the
// inventory's settings into Options; options are the inventory options
// with a form the driver reads (travel_time only where the driver's
// waits come from a travel time: the N77xx reports its speed).
func register(name string, open func(ctx context.Context, address string, opts Options) (Attenuator, error), options map[string]drivers.Option, caps ...string) {
	_, readsTravel := options["travel_time"]
	drivers.Register(drivers.Driver{
		Kind: Kind, Name: name, Capabilities: caps,
		Options: options,
		Open: func(ctx context.Context, c drivers.Config) (drivers.Device, error) {
			opts := Options{Timeout: c.Timeout, Transcript: c.Transcript}
			if v, ok := c.Options["travel_time"]; ok && readsTravel {
				if err := travelTimeOption.Check(c.Name, "travel_time", v); err != nil {
					return nil, err
				}
				opts.TravelTime, _ = time.ParseDuration(v)
			}
			if c.Limits != nil {
				opts.Limits = &Limits{MinDB: c.Limits.MinDB, MaxDB: c.Limits.MaxDB}
			}
			return open(ctx, c.Address, opts)
		},
		Undo: map[string]drivers.UndoFunc{
			UndoAttenuation: func(ctx context.Context, dev drivers.Device, raw json.RawMessage) error {
				var a struct {
					Channel int     `json:"channel"`
					DB      float64 `json:"db"`
				}
				v, err := undoArgs[Attenuator](dev, raw, &a)
				if err != nil {
					return err
				}
				return v.SetAttenuation(ctx, a.Channel, a.DB)
			},
			UndoShutter: func(ctx context.Context, dev drivers.Device, raw json.RawMessage) error {
				var a struct {
					Channel int  `json:"channel"`
					Open    bool `json:"open"`
				}
				sh, err := undoArgs[Shutter](dev, raw, &a)
				if err != nil {
					return err
				}
				return sh.SetShutter(ctx, a.Channel, a.Open)
			},
		},
		UndoBound: map[string]drivers.UndoBoundFunc{
			UndoAttenuation: func(ctx context.Context, dev drivers.Device, raw json.RawMessage) (time.Duration, error) {
				var a struct {
					Channel int     `json:"channel"`
					DB      float64 `json:"db"`
				}
				b, ok := dev.(interface {
					SetAttenuationBound(ctx context.Context, ch int, dB float64) (time.Duration, error)
				})
				if !ok {
					return 0, nil
				}
				if _, err := undoArgs[Attenuator](dev, raw, &a); err != nil {
					return 0, err
				}
				return b.SetAttenuationBound(ctx, a.Channel, a.DB)
			},
			UndoShutter: func(ctx context.Context, dev drivers.Device, raw json.RawMessage) (time.Duration, error) {
				var a struct {
					Channel int `json:"channel"`
				}
				b, ok := dev.(interface {
					SetShutterBound(ctx context.Context, ch int) (time.Duration, error)
				})
				if !ok {
					return 0, nil
				}
				if _, err := undoArgs[Shutter](dev, raw, &a); err != nil {
					return 0, err
				}
				return b.SetShutterBound(ctx, a.Channel)
			},
		},
	})
}

// undoArgs checks the device is a T and decodes an undo's arguments.
func undoArgs[T any](dev drivers.Device, raw json.RawMessage, args any) (T, error) {
	t, ok := dev.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("driver %T does not carry out this undo", dev)
	}
	if len(raw) == 0 {
		var zero T
		return zero, fmt.Errorf("undo without its arguments")
	}
	if err := json.Unmarshal(raw, args); err != nil {
		var zero T
		return zero, fmt.Errorf("undo arguments %s: %w", raw, err)
	}
	return t, nil
}
