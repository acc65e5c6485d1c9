package fabric

import (
	"context"

	"testbed/drivers"
)

// DriverName is the inventory's driver: key of a fabric served in this
// package's protocol (the simulated lab's, simlab/fabric).
const DriverName = "stardust-model"

// init registers the driver: kind fabric, opened by dialling the address
// (tcp://host:port). A fabric keeps nothing between connections, so there
// is nothing to undo.
func init() {
	drivers.Register(drivers.Driver{
		Kind: Kind, Name: DriverName,
		Open: func(ctx context.Context, c drivers.Config) (drivers.Device, error) {
			return Dial(ctx, c.Name, c.Address, Options{Timeout: c.Timeout, Transcript: c.Transcript})
		},
	})
}
