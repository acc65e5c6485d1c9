package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/simlab"
)

func (a *app) labCmd() *cobra.Command {
	c := &cobra.Command{Use: "lab", Short: "Run the simulated lab"}
	var out, from string
	var seed uint64
	var scale float64
	up := &cobra.Command{
		Use:   "up",
		Short: "Run the simulated lab in the foreground and write an inventory pointing at it",
		Long: `Start the simulated lab (VOAs on TCP and on a pseudo-terminal, a traffic generator
on HTTP, all over one physical model) and keep it running until Ctrl-C. The
inventory written to --inventory-out points at its endpoints, so

  testbed exp run attenuation-sweep --inventory lab.yaml

runs against it from another terminal exactly as against a real lab.

With --inventory, start a twin of that lab instead: one emulator per device
whose driver has one, every link between them a simulated fibre through the
VOA channel the inventory puts on it; devices without an emulator are named
and left out. The inventory written is the same lab pointing at the twin.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := simlab.Options{Seed: seed, Log: a.logger(), TimeScale: scale}
			var lab *simlab.Lab
			var skipped []simlab.Skipped
			if from != "" {
				inv, err := inventory.Load(from)
				if err != nil {
					return &orchestrator.InputError{Msg: err.Error()}
				}
				if lab, skipped, err = simlab.StartTwin(inv, opts); err != nil {
					return &orchestrator.InfraError{Op: "start a simulated twin of " + from, Err: err}
				}
				for _, s := range skipped {
					fmt.Fprintf(a.stderr, "no emulator for %s: left out of the twin\n", s)
				}
			} else {
				var err error
				if lab, err = simlab.StartDefault(opts); err != nil {
					return &orchestrator.InfraError{Op: "start the simulated lab", Err: err}
				}
			}
			defer lab.Close()
			data, err := lab.Inventory().Marshal()
			if err != nil {
				return err
			}
			header := fmt.Sprintf("# Inventory of a simulated lab (testbed lab up, seed %d, pid %d).\n# Valid while that process runs.\n", seed, os.Getpid())
			if err := os.WriteFile(out, append([]byte(header), data...), 0o644); err != nil {
				return &orchestrator.InputError{Msg: fmt.Sprintf("write inventory: %v", err)}
			}
			if a.json() {
				left := []string{}
				for _, s := range skipped {
					left = append(left, s.Device)
				}
				if err := a.printJSON(map[string]any{"inventory": out, "endpoints": lab.Endpoints(), "seed": seed, "pid": os.Getpid(), "left_out": left}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.stdout, "simulated lab up (seed %d)\n", seed)
				for _, e := range lab.Endpoints() {
					fmt.Fprintf(a.stdout, "  %s\n", e)
				}
				fmt.Fprintf(a.stdout, "inventory written to %s\nCtrl-C to stop\n", out)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			if context.Cause(cmd.Context()) == nil {
				fmt.Fprintln(a.stderr, "\nsimulated lab stopping")
			}
			return nil
		},
	}
	up.Flags().StringVar(&out, "inventory-out", "lab.yaml", "where to write the inventory")
	up.Flags().StringVar(&from, "inventory", "", "start a simulated twin of this inventory instead of the default bench")
	up.Flags().Uint64Var(&seed, "seed", 1, "seed of the lab's randomness")
	up.Flags().Float64Var(&scale, "time-scale", 0, "simulated seconds per real second for traffic (default: the lab's own)")
	c.AddCommand(up)
	c.AddCommand(&cobra.Command{
		Use:   "show-bench [name]",
		Short: "Print a built-in bench's inventory file (default: the default bench)",
		Long: `Print the inventory file of a bench built into the binary: the lab the
simulated lab starts. Copy it and edit it to describe a lab of your own.
Benches: ` + strings.Join(simlab.BenchNames(), ", ") + `.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := "default"
			if len(args) == 1 {
				name = args[0]
			}
			b, err := simlab.Bench(name)
			if err != nil {
				return &orchestrator.InputError{Msg: err.Error()}
			}
			_, err = a.stdout.Write(b)
			return err
		},
	})
	return c
}
