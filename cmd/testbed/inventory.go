package main

import (
	"errors"
	"fmt"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/transport"
)

func (a *app) inventoryCmd() *cobra.Command {
	c := &cobra.Command{Use: "inventory", Short: "Check a lab inventory"}
	var offline bool
	check := &cobra.Command{
		Use:   "check <inventory.yaml>",
		Short: "Validate an inventory and connect to each device, printing its identity",
		Long: `Validate an inventory and connect to each device, printing its identity.

Every problem of the file is reported in one list, sorted by line: what does
not parse, what parsed but is wrong, the drivers this build lacks, option
keys a device's driver does not take (with the keys it takes) and option
values without the form the driver reads (a duration, a TCP port, true or
false: docs/drivers.md), each at its file, line and column.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Every problem of the file in one report, sorted by line: what
			// does not parse, what parsed but is wrong, and the drivers
			// this build lacks.
			inv, err := inventory.LoadPartial(args[0])
			var ve *inventory.ValidationError
			if err != nil && (inv == nil || !errors.As(err, &ve)) {
				return &orchestrator.InputError{Msg: err.Error()}
			}
			var ps []inventory.Problem
			if ve != nil {
				ps = ve.Problems
			}
			if ps = inventory.MergeProblems(ps, orchestrator.DriverProblems(inv)); len(ps) > 0 {
				return &orchestrator.InputError{Msg: (&inventory.ValidationError{Problems: ps}).Error()}
			}
			type row struct {
				Device   string              `json:"device"`
				Kind     string              `json:"kind"`
				Driver   string              `json:"driver"`
				Address  string              `json:"address"`
				Identity *transport.Identity `json:"identity,omitempty"`
				Error    string              `json:"error,omitempty"`
			}
			rows := make([]row, len(inv.DeviceNames()))
			var wg sync.WaitGroup
			for i, n := range inv.DeviceNames() {
				d, _ := inv.Device(n)
				rows[i] = row{Device: n, Kind: d.Kind, Driver: d.Driver, Address: d.Address}
				if offline {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					od, err := orchestrator.OpenDevice(cmd.Context(), d, nil)
					if err != nil {
						rows[i].Error = err.Error()
						return
					}
					defer closeDevice(od)
					rows[i].Identity = &od.Identity
				}()
			}
			wg.Wait()
			failed := 0
			for _, r := range rows {
				if r.Error != "" {
					failed++
				}
			}
			if a.json() {
				if err := a.printJSON(map[string]any{"inventory": args[0], "lab": inv.Name, "offline": offline, "devices": rows, "links": len(inv.Links)}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.stdout, "%s: lab %q, %d devices, %d links: valid\n", args[0], inv.Name, len(rows), len(inv.Links))
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "DEVICE\tKIND\tDRIVER\tADDRESS\tIDENTITY")
				for _, r := range rows {
					id := "(offline: not contacted)"
					switch {
					case r.Error != "":
						id = "UNREACHABLE: " + r.Error
					case r.Identity != nil:
						id = r.Identity.String()
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Device, r.Kind, r.Driver, r.Address, id)
				}
				tw.Flush()
			}
			if failed > 0 {
				return &exitError{code: exitInfra, err: fmt.Errorf("%d of %d devices unreachable", failed, len(rows))}
			}
			return nil
		},
	}
	check.Flags().BoolVar(&offline, "offline", false, "validate only; do not connect to devices")
	c.AddCommand(check)
	return c
}

func closeDevice(od *orchestrator.OpenedDevice) {
	if c, ok := od.Driver.(interface{ Close() error }); ok {
		c.Close()
	}
}
