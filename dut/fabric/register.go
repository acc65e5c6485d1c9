package fabric

import (
	"context"
	"time"

	"testbed/drivers"
)

// DriverName is the inventory's driver: key of a fabric served in this
// package's protocol (the simulated lab's, simlab/fabric).
const DriverName = "stardust-model"

// runTimeoutOption is options.run_timeout's form.
var runTimeoutOption = drivers.DurationOption("10m", "how long an exchange that steps the fabric may take")

// init registers the driver: kind fabric, opened by dialling the address
// (tcp://host:port). The device's timeout bounds an exchange; its option
// run_timeout (a Go duration) one that steps the fabric. A fabric keeps
// nothing between connections, so there is nothing to undo.
func init() {
	drivers.Register(drivers.Driver{
		Kind: Kind, Name: DriverName,
		Options: map[string]drivers.Option{"run_timeout": runTimeoutOption},
		Open: func(ctx context.Context, c drivers.Config) (drivers.Device, error) {
			o := Options{Timeout: c.Timeout, Transcript: c.Transcript}
			if v, ok := c.Options["run_timeout"]; ok {
				if err := runTimeoutOption.Check(c.Name, "run_timeout", v); err != nil {
					return nil, err
				}
				o.RunTimeout, _ = time.ParseDuration(v)
			}
			return Dial(ctx, c.Name, c.Address, o)
		},
	})
}
