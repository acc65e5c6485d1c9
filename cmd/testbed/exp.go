package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"testbed/experiments"
	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/results"
	"testbed/simlab"
)

func (a *app) expCmd() *cobra.Command {
	c := &cobra.Command{Use: "exp", Short: "List, show and run experiment recipes"}
	c.AddCommand(a.expListCmd(), a.expShowCmd(), a.expRunCmd())
	return c
}

func (a *app) expListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the recipes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			reg := experiments.Registry()
			type row struct{ Name, Version, Summary string }
			var rows []row
			for _, n := range reg.Names() {
				r, _ := reg.Get(n)
				rows = append(rows, row{r.Name(), r.Version(), r.Summary()})
			}
			if a.json() {
				return a.printJSON(rows)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RECIPE\tVERSION\tSUMMARY")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.Version, r.Summary)
			}
			return tw.Flush()
		},
	}
}

func (a *app) expShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show <recipe>",
		Short: "Show a recipe's description and parameters (types, units, defaults)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := experiments.Registry().Get(args[0])
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(map[string]any{"name": r.Name(), "version": r.Version(), "summary": r.Summary(),
					"description": r.Description(), "params": r.Params()})
			}
			fmt.Fprintf(a.stdout, "%s v%s: %s\n\n%s\n\nParameters (--set name=value, or --params file.yaml):\n", r.Name(), r.Version(), r.Summary(), r.Description())
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  NAME\tTYPE\tUNIT\tDEFAULT\tDESCRIPTION")
			for _, p := range r.Params() {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s%s\n", p.Name, p.Type, p.Unit, fmtDefault(p.Default), p.Description, fmtRange(p))
			}
			return tw.Flush()
		},
	}
}

func fmtDefault(v any) string {
	switch x := v.(type) {
	case []string:
		if len(x) == 0 {
			return "(all)"
		}
		return strings.Join(x, ",")
	case float64:
		return fmt.Sprintf("%g", x)
	}
	return fmt.Sprint(v)
}

func fmtRange(p orchestrator.ParamSpec) string {
	switch {
	case p.Min != nil && p.Max != nil:
		return fmt.Sprintf(" [%g..%g]", *p.Min, *p.Max)
	case p.Min != nil:
		return fmt.Sprintf(" [>= %g]", *p.Min)
	case p.Max != nil:
		return fmt.Sprintf(" [<= %g]", *p.Max)
	}
	return ""
}

func (a *app) expRunCmd() *cobra.Command {
	var sets []string
	var paramsFile string
	var dryRun bool
	var seed uint64
	c := &cobra.Command{
		Use:   "run <recipe>",
		Short: "Run a recipe (on the simulated lab unless --inventory is given)",
		Long: `Run a recipe. Without --inventory the simulated lab starts in-process and the
recipe runs through the real drivers over real transports against it.

Ctrl-C stops at the next safe point, restores every device touched (VOAs to
their resting attenuation, traffic stopped) and finalizes the bundle as
aborted. A second Ctrl-C stops waiting on devices and prints what could not
be restored. The bundle's path is printed last.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("seed") {
				var b [8]byte
				_, _ = rand.Read(b[:])
				seed = binary.LittleEndian.Uint64(b[:]) >> 12 // short enough to type back
			}
			return a.expRun(cmd.Context(), args[0], sets, paramsFile, dryRun, seed)
		},
	}
	f := c.Flags()
	f.String("inventory", "", "lab inventory (YAML); default: the simulated lab")
	_ = a.v.BindPFlag("inventory", f.Lookup("inventory"))
	f.StringArrayVar(&sets, "set", nil, "set a parameter: name=value (repeatable; lists comma-separated)")
	f.StringVar(&paramsFile, "params", "", "parameters file (YAML map of name: value)")
	f.BoolVar(&dryRun, "dry-run", false, "print the plan and check limits without touching any device")
	f.Uint64Var(&seed, "seed", 0, "seed of the simulated lab (default: random, recorded in the manifest)")
	return c
}

func readParamsFile(path string) (map[string]any, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &orchestrator.InputError{Msg: fmt.Sprintf("parameters file: %v", err)}
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, &orchestrator.InputError{Msg: fmt.Sprintf("%s: %v", path, err)}
	}
	return m, nil
}

func (a *app) expRun(parent context.Context, name string, sets []string, paramsFile string, dryRun bool, seed uint64) error {
	r, err := experiments.Registry().Get(name)
	if err != nil {
		return err
	}
	file, err := readParamsFile(paramsFile)
	if err != nil {
		return err
	}
	params, err := orchestrator.ResolveParams(r.Params(), paramsFile, file, sets)
	if err != nil {
		return err
	}
	log := a.logger()

	// First signal: abort at the next safe point. Second: stop waiting in cleanup.
	runCtx, abort := context.WithCancelCause(parent)
	defer abort(nil)
	cleanupCtx, hardStop := context.WithCancel(context.Background())
	defer hardStop()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		n := 0
		for s := range sigs {
			n++
			if n == 1 {
				fmt.Fprintf(a.stderr, "\ntestbed: %v: stopping at the next safe point and restoring the lab (again to stop waiting)\n", s)
				abort(fmt.Errorf("%w by %v", orchestrator.ErrAborted, s))
			} else {
				fmt.Fprintf(a.stderr, "\ntestbed: %v again: no longer waiting on devices\n", s)
				hardStop()
				return
			}
		}
	}()

	var inv *inventory.Inventory
	simulated := false
	if path := a.v.GetString("inventory"); path != "" {
		inv, err = inventory.Load(path)
		if err != nil {
			return &orchestrator.InputError{Msg: err.Error()}
		}
	} else {
		simulated = true
		if !dryRun {
			lab, err := simlab.StartDefault(simlab.Options{Seed: seed, Log: log})
			if err != nil {
				return &orchestrator.InfraError{Op: "start the simulated lab", Err: err}
			}
			defer lab.Close()
			inv = lab.Inventory()
			fmt.Fprintf(a.stderr, "simulated lab up (seed %d): %s\n", seed, strings.Join(lab.Endpoints(), ", "))
		} else {
			inv = simlab.DefaultInventory()
		}
	}

	eng := &orchestrator.Engine{RunsDir: a.v.GetString("runs_dir"), StateDir: a.v.GetString("state_dir"), Version: version, Log: log}
	req := orchestrator.RunRequest{Recipe: r, Params: params, Lab: inv, Simulated: simulated, Seed: seed,
		Command: append([]string{"testbed"}, os.Args[1:]...), CleanupCtx: cleanupCtx}
	if dryRun {
		plan, err := eng.Plan(req)
		if err != nil {
			return err
		}
		if a.json() {
			return a.printJSON(plan.JSON())
		}
		plan.Print(a.stdout)
		fmt.Fprintln(a.stdout, "dry run: limits checked, no device touched")
		return nil
	}
	if !a.json() {
		eng.Observe = newProgress(a.stderr).observe
	}
	res, err := eng.Run(runCtx, req)
	if err != nil {
		return err
	}
	for _, u := range res.Unrestored {
		fmt.Fprintf(a.stderr, "testbed: NOT RESTORED: %s\n", u)
	}
	code := exitOK
	switch res.Status {
	case results.StatusAborted:
		code = exitAborted
	case results.StatusFailed:
		code = exitFailed
		var ie *orchestrator.InfraError
		if errors.As(res.Err, &ie) || strings.HasPrefix(res.Reason, "infrastructure") {
			code = exitInfra
		}
	}
	if a.json() {
		if err := a.printJSON(map[string]any{"run_id": res.RunID, "bundle": res.Dir, "status": res.Status, "reason": res.Reason,
			"steps_done": res.StepsDone, "steps_total": res.StepsTotal, "unrestored": res.Unrestored, "seed": seed}); err != nil {
			return err
		}
	} else {
		if res.Status != results.StatusOK {
			fmt.Fprintf(a.stderr, "run %s: %s\n", res.Status, res.Reason)
		}
		fmt.Fprintln(a.stdout, res.Dir)
	}
	if code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

// progress prints events as a run goes.
type progress struct {
	mu    sync.Mutex
	out   interface{ Write([]byte) (int, error) }
	index string
}

func newProgress(w interface{ Write([]byte) (int, error) }) *progress { return &progress{out: w} }

func (p *progress) observe(e results.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e.Type {
	case "run.start", "bind":
		fmt.Fprintf(p.out, "%s\n", e.Message)
	case "device.open":
		fmt.Fprintf(p.out, "  %s: %s\n", e.Device, e.Message)
	case "step.start":
		p.index = fmt.Sprintf("[%4v/%v]", e.Fields["index"], e.Fields["of"])
	case "measurement":
		fmt.Fprintf(p.out, "%s %s\n", p.index, e.Message)
	case "step.skip":
		fmt.Fprintf(p.out, "%s %s: skipped: %s\n", p.index, e.Step, e.Message)
	case "step.error":
		fmt.Fprintf(p.out, "%s %s: ERROR: %s\n", p.index, e.Step, e.Message)
	case "cleanup":
		fmt.Fprintf(p.out, "cleanup: %s\n", e.Message)
	case "cleanup.error":
		fmt.Fprintf(p.out, "cleanup FAILED: %s: %s\n", e.Device, e.Message)
	case "run.end":
		fmt.Fprintf(p.out, "run %s\n", e.Message)
	}
}
