package voa

import (
	"context"
	"fmt"
	"strings"
)

// Drivers lists the driver names an inventory may use for a VOA.
func Drivers() []string { return []string{"keysight-n77xx", "ozoptics-dd100"} }

// Open opens the named driver at address.
func Open(ctx context.Context, driver, address string, opts Options) (Attenuator, error) {
	switch driver {
	case "keysight-n77xx":
		return OpenKeysight(ctx, address, opts)
	case "ozoptics-dd100":
		return OpenOZOptics(ctx, address, opts)
	}
	return nil, fmt.Errorf("%w %q for a voa (known: %s)", errUnknownDriver, driver, strings.Join(Drivers(), ", "))
}
