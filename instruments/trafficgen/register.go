package trafficgen

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"testbed/drivers"
)

// Kind is the inventory's kind for a traffic generator.
const Kind = "trafficgen"

// UndoStop is the undo kind of every traffic generator driver: {} stop
// all traffic.
const UndoStop = "trafficgen.stop"

// Register adds a traffic generator driver to the registry (from the
// driver's init): open turns the inventory's settings into Options.
func Register(name string, open func(ctx context.Context, address string, opts Options) (Generator, error), caps ...string) {
	drivers.Register(drivers.Driver{
		Kind: Kind, Name: name, Capabilities: caps,
		Options: map[string]drivers.Option{"insecure_tls": drivers.BoolOption("whether to accept the device's certificate unchecked (a self-signed one)")},
		Open: func(ctx context.Context, c drivers.Config) (drivers.Device, error) {
			return open(ctx, c.Address, Options{Timeout: c.Timeout, Transcript: c.Transcript, InsecureTLS: c.Options["insecure_tls"] == "true"})
		},
		Undo: map[string]drivers.UndoFunc{
			UndoStop: func(ctx context.Context, dev drivers.Device, _ json.RawMessage) error {
				g, ok := dev.(Generator)
				if !ok {
					return fmt.Errorf("driver %T is not a traffic generator", dev)
				}
				return g.Stop(ctx)
			},
		},
	})
}

// Drivers lists the driver names an inventory may use for a trafficgen:
// those registered (each driver file registers itself).
func Drivers() []string { return drivers.Names(Kind) }

// Open opens the named registered driver at address.
func Open(ctx context.Context, driver, address string, opts Options) (Generator, error) {
	d, ok := drivers.Lookup(Kind, driver)
	if !ok {
		return nil, fmt.Errorf("unknown driver %q for a trafficgen (known: %s)", driver, strings.Join(Drivers(), ", "))
	}
	dev, err := d.Open(ctx, drivers.Config{Kind: Kind, Driver: driver, Address: address, Timeout: opts.Timeout, Transcript: opts.Transcript,
		Options: map[string]string{"insecure_tls": fmt.Sprint(opts.InsecureTLS)}})
	if err != nil {
		return nil, err
	}
	return dev.(Generator), nil
}
