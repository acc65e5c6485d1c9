package ocs

import (
	"context"
	"fmt"
	"strings"

	"testbed/drivers"
)

// Drivers lists the driver names an inventory may use for an ocs: those
// registered (register.go; each driver file registers itself).
func Drivers() []string { return drivers.Names(Kind) }

// Open opens the named registered driver at address.
func Open(ctx context.Context, driver, address string, opts Options) (CircuitSwitch, error) {
	d, ok := drivers.Lookup(Kind, driver)
	if !ok {
		return nil, fmt.Errorf("unknown driver %q for an ocs (known: %s)", driver, strings.Join(Drivers(), ", "))
	}
	c := drivers.Config{Name: opts.Name, Kind: Kind, Driver: driver, Address: address, Timeout: opts.Timeout, Transcript: opts.Transcript,
		Options: map[string]string{"insecure_tls": fmt.Sprint(opts.InsecureTLS)}}
	dev, err := d.Open(ctx, c)
	if err != nil {
		return nil, err
	}
	return dev.(CircuitSwitch), nil
}
