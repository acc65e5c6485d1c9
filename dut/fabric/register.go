package fabric

import (
	"context"
	"fmt"
	"time"

	"testbed/drivers"
)

// DriverName is the inventory's driver: key of a fabric served in this
// package's protocol (the simulated lab's, simlab/fabric).
const DriverName = "stardust-model"

// init registers the driver: kind fabric, opened by dialling the address
// (tcp://host:port). The device's timeout bounds an exchange; its option
// run_timeout (a Go duration) one that steps the fabric. A fabric keeps
// nothing between connections, so there is nothing to undo.
func init() {
	drivers.Register(drivers.Driver{
		Kind: Kind, Name: DriverName,
		Open: func(ctx context.Context, c drivers.Config) (drivers.Device, error) {
			o := Options{Timeout: c.Timeout, Transcript: c.Transcript}
			if v, ok := c.Options["run_timeout"]; ok {
				d, err := time.ParseDuration(v)
				if err != nil || d <= 0 {
					return nil, fmt.Errorf("%s: options.run_timeout %q: expected a positive duration such as 10m", c.Name, v)
				}
				o.RunTimeout = d
			}
			return Dial(ctx, c.Name, c.Address, o)
		},
	})
}
