package ocs

import (
	"context"
	"fmt"
	"strings"
)

// Drivers lists the driver names an inventory may use for an ocs.
func Drivers() []string { return []string{"mordia-rest", "polatis-scpi"} }

// Open opens the named driver at address.
func Open(ctx context.Context, driver, address string, opts Options) (CircuitSwitch, error) {
	switch driver {
	case "mordia-rest":
		return OpenMordia(ctx, address, opts)
	case "polatis-scpi":
		return OpenPolatis(ctx, address, opts)
	}
	return nil, fmt.Errorf("unknown driver %q for an ocs (known: %s)", driver, strings.Join(Drivers(), ", "))
}
