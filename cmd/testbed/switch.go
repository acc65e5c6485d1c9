package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"testbed/dut/tofino"
	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/p4/ecmp"
	lg "testbed/p4/linkguardian"
	sd "testbed/p4/stardust"
	ts "testbed/p4/timestamp"
)

// deployableProgram is a P4 program's sources and its main file.
type deployableProgram struct {
	sources map[string][]byte
	main    string
}

// deployable are the P4 programs built into this binary: each program's
// sources and its main file.
func deployable() map[string]deployableProgram {
	lgs, sds := lg.Sources(), sd.Sources()
	return map[string]deployableProgram{
		lg.ProgramSender:   {lgs, lg.MainFile(lg.ProgramSender)},
		lg.ProgramReceiver: {lgs, lg.MainFile(lg.ProgramReceiver)},
		ts.Program:         {ts.Sources(), ts.MainFile(ts.Program)},
		sd.ProgramFA:       {sds, sd.MainFile(sd.ProgramFA)},
		sd.ProgramFE:       {sds, sd.MainFile(sd.ProgramFE)},
		ecmp.Program:       {ecmp.Sources(), ecmp.MainFile(ecmp.Program)},
	}
}

func (a *app) switchCmd() *cobra.Command {
	c := &cobra.Command{Use: "switch", Short: "Work with the lab's programmable switches"}
	c.AddCommand(a.switchDeployCmd())
	return c
}

// deployFlags are switch deploy's flags.
type deployFlags struct {
	programs []string
	seed     uint64
	invFile  string
}

func (a *app) switchDeployCmd() *cobra.Command {
	var o deployFlags
	deploy := &cobra.Command{
		Use:   "deploy <switch>...",
		Short: "Compile the P4 programs on switches with their SDE and install them",
		Long: `deploy uploads the P4 sources built into this binary (LinkGuardian's sender and receiver,
p4/linkguardian, by default; the per-hop latency probes, p4/timestamp, with --program
timestamp; Stardust's Fabric Adapter and Fabric Element, p4/stardust, with --program
stardust_fa,stardust_fe; the plain ECMP packet fabric Stardust is compared with, p4/ecmp,
with --program ecmp) to each named switch over SSH, compiles them there with the SDE's bf-p4c (Tofino, TNA) and installs
each program where run_switchd.sh -p <program> finds it. It checks the inventory's drivers
and their options first, as inventory check does, and refuses a bad one at its line before
opening anything. It leases the switches while it works and does not restart a running
bf_switchd: the recipes start the program they need.
With no --inventory it deploys on the simulated lab, whose switches check the sources but
do not compile them.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.switchDeploy(cmd.Context(), o, args) },
	}
	deploy.Flags().StringSliceVar(&o.programs, "program", []string{lg.ProgramSender, lg.ProgramReceiver}, "programs to build: sender, receiver (LinkGuardian), timestamp (per-hop latency probes), stardust_fa, stardust_fe (Stardust)")
	deploy.Flags().StringVar(&o.invFile, "inventory", "", "lab inventory (default: the simulated lab)")
	deploy.Flags().Uint64Var(&o.seed, "seed", 1, "seed of the simulated lab")
	return deploy
}

// deployResult is one program built on one switch.
type deployResult struct {
	Switch       string  `json:"switch"`
	Program      string  `json:"program"`
	SourceSHA256 string  `json:"source_sha256,omitempty"`
	Conf         string  `json:"conf,omitempty"`
	Seconds      float64 `json:"seconds"`
	Log          string  `json:"log,omitempty"`
	Error        string  `json:"error,omitempty"`
}

// switchDeploy builds the programs on the named switches, leased while
// it works, on the lab's inventory or the simulated lab.
func (a *app) switchDeploy(ctx context.Context, o deployFlags, args []string) error {
	progs := deployable()
	for _, p := range o.programs {
		if _, ok := progs[p]; !ok {
			return &orchestrator.InputError{Msg: fmt.Sprintf("--program %q: expected %s, %s, %s, %s, %s or %s", p, lg.ProgramSender, lg.ProgramReceiver, ts.Program, sd.ProgramFA, sd.ProgramFE, ecmp.Program)}
		}
	}
	inv, closeLab, err := a.labInventory(o.invFile, o.seed, "deploying on its switches")
	if err != nil {
		return err
	}
	defer closeLab()
	devs, targets, err := deployTargets(inv, args)
	if err != nil {
		return err
	}
	release, err := a.leaseDevices(inv, "switch-deploy", "the switches", targets)
	if err != nil {
		return err
	}
	defer release()
	var out []deployResult
	failed := 0
	for _, d := range devs {
		rs, err := deployOn(ctx, d, o.programs, progs)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Error != "" {
				failed++
			}
		}
		out = append(out, rs...)
	}
	if err := a.printDeploy(out); err != nil {
		return err
	}
	if failed > 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("%d of %d builds failed", failed, len(out))}
	}
	return nil
}

// deployTargets are the named devices, each a switch of the inventory,
// and their leases.
func deployTargets(inv *inventory.Inventory, names []string) ([]*inventory.Device, []orchestrator.LeaseTarget, error) {
	var targets []orchestrator.LeaseTarget
	var devs []*inventory.Device
	for _, n := range names {
		d, ok := inv.Device(n)
		if !ok {
			return nil, nil, &orchestrator.InputError{Msg: fmt.Sprintf("%s: no device %q (switches: %s)", inv.Path, n, strings.Join(switchNames(inv), ", "))}
		}
		if d.Kind != "switch" {
			return nil, nil, &orchestrator.InputError{Msg: fmt.Sprintf("%s: device %s is a %s, not a switch", inv.Path, n, d.Kind)}
		}
		targets = append(targets, orchestrator.LeaseTarget{Device: n, Address: d.Address, Serial: d.Options["serial"]})
		devs = append(devs, d)
	}
	return devs, targets, nil
}

// deployOn builds the programs on one switch: a result per program, or
// one with the error when the switch cannot be opened; an error when its
// driver builds no programs.
func deployOn(ctx context.Context, d *inventory.Device, programs []string, progs map[string]deployableProgram) ([]deployResult, error) {
	od, err := orchestrator.OpenDevice(ctx, d, nil)
	if err != nil {
		return []deployResult{{Switch: d.Name, Error: err.Error()}}, nil
	}
	defer closeDevice(od)
	sw, ok := od.Driver.(*tofino.Switch)
	if !ok {
		return nil, &orchestrator.InputError{Msg: fmt.Sprintf("%s: driver %s cannot build P4 programs", d.Name, d.Driver)}
	}
	var out []deployResult
	for _, p := range programs {
		b, err := sw.BuildProgram(ctx, p, progs[p].main, progs[p].sources)
		r := deployResult{Switch: d.Name, Program: p, SourceSHA256: b.SourceSHA256, Conf: b.Conf, Seconds: b.Duration.Seconds(), Log: b.Log}
		if err != nil {
			r.Error = err.Error()
		}
		out = append(out, r)
	}
	return out, nil
}

// printDeploy prints each build's outcome.
func (a *app) printDeploy(out []deployResult) error {
	if a.json() {
		return a.printJSON(out)
	}
	for _, r := range out {
		if r.Error != "" {
			fmt.Fprintf(a.stdout, "%s %s: FAILED: %s\n", r.Switch, r.Program, r.Error)
			continue
		}
		fmt.Fprintf(a.stdout, "%s %s: installed %s (sources %.12s, %.1f s)\n", r.Switch, r.Program, r.Conf, r.SourceSHA256, r.Seconds)
	}
	return nil
}

func switchNames(inv *inventory.Inventory) []string {
	var out []string
	for _, n := range inv.DeviceNames() {
		if d, _ := inv.Device(n); d.Kind == "switch" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
