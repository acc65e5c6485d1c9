package voa

import (
	"context"
	"fmt"
	"strings"

	"testbed/drivers"
)

// Drivers lists the driver names an inventory may use for a VOA: those
// registered (register.go; each driver file registers itself).
func Drivers() []string { return drivers.Names(Kind) }

// Open opens the named registered driver at address.
func Open(ctx context.Context, driver, address string, opts Options) (Attenuator, error) {
	d, ok := drivers.Lookup(Kind, driver)
	if !ok {
		return nil, fmt.Errorf("%w %q for a voa (known: %s)", errUnknownDriver, driver, strings.Join(Drivers(), ", "))
	}
	c := drivers.Config{Kind: Kind, Driver: driver, Address: address, Timeout: opts.Timeout, Transcript: opts.Transcript}
	if opts.TravelTime > 0 {
		c.Options = map[string]string{"travel_time": opts.TravelTime.String()}
	}
	if opts.Limits != nil {
		c.Limits = &drivers.Limits{MinDB: opts.Limits.MinDB, MaxDB: opts.Limits.MaxDB}
	}
	dev, err := d.Open(ctx, c)
	if err != nil {
		return nil, err
	}
	return dev.(Attenuator), nil
}
