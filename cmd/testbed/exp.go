package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"testbed/experiments"
	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/results"
	"testbed/simlab"
)

func (a *app) expCmd() *cobra.Command {
	c := &cobra.Command{Use: "exp", Short: "List, show and run experiment recipes"}
	c.AddCommand(a.expListCmd(), a.expShowCmd(), a.expRunCmd(), a.expRerunCmd())
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
				rows = append(rows, row{r.Meta().Name, r.Meta().Version, r.Meta().Summary})
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
			m := r.Meta()
			if a.json() {
				return a.printJSON(map[string]any{"name": m.Name, "version": m.Version, "summary": m.Summary,
					"description": m.Description, "params": m.Params, "headlines": m.Headlines,
					"bench": m.Bench, "topology": declaredTopology(m.Topology)})
			}
			if a.v.GetString("output") == "markdown" {
				// The recipe reference's page (docs/recipes, make docs).
				return recipeMarkdown(a.stdout, r)
			}
			fmt.Fprintf(a.stdout, "%s v%s: %s\n\n%s\n\nParameters (--set name=value, or --params file.yaml):\n", m.Name, m.Version, m.Summary, m.Description)
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  NAME\tTYPE\tUNIT\tDEFAULT\tDESCRIPTION")
			for _, p := range m.Params {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s%s\n", p.Name, p.Type, p.Unit, fmtDefault(p.Default), p.Description, fmtRange(p))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if m.Topology.Declared() {
				fmt.Fprintln(a.stdout)
				m.Topology.Print(a.stdout)
			}
			return nil
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
	var so suiteOptions
	var mo metricsOptions
	c := &cobra.Command{
		Use:   "run <recipe> | run --suite FILE",
		Short: "Run a recipe, or a regression suite (on the simulated lab unless --inventory is given)",
		Long: `Run a recipe. Without --inventory the simulated lab starts in-process and the
recipe runs through the real drivers over real transports against it.

Ctrl-C stops at the next safe point, restores every device touched (VOAs to
their resting attenuation, traffic stopped) and finalizes the bundle as
aborted. A second Ctrl-C stops waiting on devices and prints what could not
be restored. The bundle's path is printed last.

With --suite FILE (and no recipe) every entry of the suite runs the same way,
each into its own bundle, and its expectations are checked against absolute
bounds and, with --baseline, against earlier bundles.

` + suiteExitHelp + `

` + metricsHelp,
		Args: func(cmd *cobra.Command, args []string) error {
			if so.file != "" {
				if len(args) > 0 {
					return fmt.Errorf("--suite runs the recipes the suite names; give no recipe (got %q)", args[0])
				}
				return nil
			}
			if so.baseline != "" || so.junit != "" {
				return fmt.Errorf("--baseline and --junit go with --suite")
			}
			return cobra.RangeArgs(0, 1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			obs, err := a.startMetrics(mo)
			if err != nil {
				return err
			}
			defer obs.Close()
			if so.file != "" {
				if len(sets) > 0 || paramsFile != "" || dryRun || cmd.Flags().Changed("seed") {
					return &exitError{code: exitBadInput, err: fmt.Errorf("--set, --params, --seed and --dry-run do not go with --suite: the suite file sets each entry's parameters and seed")}
				}
				return a.expSuite(context.WithoutCancel(cmd.Context()), so, obs)
			}
			if len(args) == 0 {
				return a.noRecipe()
			}
			if !cmd.Flags().Changed("seed") {
				seed = randomSeed()
			}
			return a.expRun(context.WithoutCancel(cmd.Context()), args[0], sets, paramsFile, dryRun, seed, obs)
		},
	}
	f := c.Flags()
	f.String("inventory", "", "lab inventory (YAML); default: the simulated lab")
	_ = a.v.BindPFlag("inventory", f.Lookup("inventory"))
	f.String("bench", "", "built-in simulated bench to run on without --inventory (testbed lab show-bench NAME; default: the default bench)")
	_ = a.v.BindPFlag("bench", f.Lookup("bench"))
	f.StringArrayVar(&sets, "set", nil, "set a parameter: name=value (repeatable; lists comma-separated)")
	f.StringVar(&paramsFile, "params", "", "parameters file (YAML map of name: value)")
	f.BoolVar(&dryRun, "dry-run", false, "print the plan and check limits without touching any device")
	f.Uint64Var(&seed, "seed", 0, "seed of the simulated lab (default: random, recorded in the manifest)")
	f.Bool("wait", false, "queue for devices another run holds (in order of arrival on etcd leases) instead of exiting 4")
	f.Duration("wait-timeout", 0, "with --wait, give up (exit 4) after this long (0: wait until Ctrl-C)")
	_ = a.v.BindPFlag("wait", f.Lookup("wait"))
	_ = a.v.BindPFlag("wait_timeout", f.Lookup("wait-timeout"))
	f.Int("parallel", 0, "how many of the recipe's independent lanes (a sweep's links on devices of their own) run at once; 0: the number of CPUs, 1: every step in plan order (the results are the same)")
	_ = a.v.BindPFlag("parallel", f.Lookup("parallel"))
	so.addFlags(c)
	mo.addFlags(c)
	return c
}

// randomSeed is a seed for the simulated lab when none is given; it is
// recorded in the manifest, so the run can be repeated.
func randomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) >> 12 // short enough to type back
}

func (a *app) expRun(parent context.Context, name string, sets []string, paramsFile string, dryRun bool, seed uint64, obs *liveMetrics) error {
	r, err := experiments.Registry().Get(name)
	if err != nil {
		return err
	}
	var file *orchestrator.ParamsFile
	if paramsFile != "" {
		if file, err = orchestrator.ReadParamsFile(paramsFile); err != nil {
			return err
		}
	}
	params, err := orchestrator.ResolveParamsFile(r.Meta().Params, file, sets)
	if err != nil {
		return err
	}
	spec := runSpec{recipe: r, params: params, seed: seed, inventory: a.v.GetString("inventory"), bench: a.v.GetString("bench")}
	if dryRun {
		return a.dryRun(spec)
	}
	runCtx, cleanupCtx, stop := a.interruptible(parent)
	defer stop()
	res, err := a.runRecipe(runCtx, cleanupCtx, spec, obs)
	if err != nil {
		return err
	}
	return a.reportRun(parent, res, seed, obs, pushGroup{entry: r.Meta().Name}, nil)
}

// runSpec is one run of a recipe as exp run, each entry of a suite and exp
// rerun ask for it.
type runSpec struct {
	recipe orchestrator.Recipe
	params *orchestrator.Params
	seed   uint64
	// inventory is the lab's inventory file; "" starts a simulated lab
	// with the seed.
	inventory string
	// bench is the built-in simulated bench started without an inventory
	// ("": the default bench).
	bench string
	// labels go into the manifest (suite, suite_entry, rerun_of).
	labels map[string]string
	// prefix goes in front of progress lines (the suite entry running).
	prefix string
}

// interruptible returns the context a run runs under and the one its
// cleanup runs under. The first SIGINT/SIGTERM aborts the run at the next
// safe point; the second stops waiting on devices during cleanup.
func (a *app) interruptible(parent context.Context) (runCtx, cleanupCtx context.Context, stop func()) {
	if a.sig != nil {
		// The process's handler, installed first thing in main.
		runCtx, abort := context.WithCancelCause(parent)
		if cause := context.Cause(a.sig.abortCtx); cause != nil {
			abort(cause) // a signal came before the run: it begins aborted
		}
		stopAfter := context.AfterFunc(a.sig.abortCtx, func() { abort(context.Cause(a.sig.abortCtx)) })
		return runCtx, a.sig.hardCtx, func() {
			stopAfter()
			abort(nil)
		}
	}
	runCtx, abort := context.WithCancelCause(parent)
	cleanupCtx, hardStop := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case s := <-sigs:
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
		}
	}()
	return runCtx, cleanupCtx, func() {
		signal.Stop(sigs)
		close(done)
		abort(nil)
		hardStop()
	}
}

// lab returns the inventory a run uses: the file given, else a simulated
// lab started with the seed (close it when the run is over).
func (a *app) lab(spec runSpec, log *slog.Logger) (inv *inventory.Inventory, simulated bool, closeLab func(), err error) {
	spec.bench = a.declaredBench(spec)
	if spec.inventory != "" {
		inv, err := inventory.Load(spec.inventory)
		if err != nil {
			return nil, false, nil, &orchestrator.InputError{Msg: err.Error()}
		}
		return inv, false, func() {}, nil
	}
	// A plan that touches no device (a recipe working on a file) needs no
	// lab: the simulated lab's description is enough, nothing is started.
	// Bad input is refused before a lab is started for nothing.
	def := simlab.DefaultInventory()
	if spec.bench != "" && spec.bench != "default" {
		if def, err = simlab.BenchInventory(spec.bench); err != nil {
			return nil, true, nil, &orchestrator.InputError{Msg: "bench: " + err.Error()}
		}
	}
	plan, err := a.engine(nil).Plan(orchestrator.RunRequest{Recipe: spec.recipe, Params: spec.params, Lab: def, Simulated: true, Seed: spec.seed})
	var ie *orchestrator.InputError
	switch {
	case errors.As(err, &ie):
		return nil, true, nil, err
	case err == nil && len(plan.Devices()) == 0:
		return def, true, func() {}, nil
	}
	lab, err := simlab.StartBench(spec.bench, simlab.Options{Seed: spec.seed, Log: log})
	if err != nil {
		return nil, true, nil, &orchestrator.InfraError{Op: "start the simulated lab", Err: err}
	}
	fmt.Fprintf(a.stderr, "%ssimulated lab up (seed %d, %d devices; testbed lab up lists their endpoints)\n", prefixed(spec.prefix), spec.seed, len(lab.Endpoints()))
	return lab.Inventory(), true, func() { lab.Close() }, nil
}

// declaredBench is the bench a run without an inventory starts: the one
// asked for, else the one the recipe declares (said on stderr), else the
// default bench ("").
func (a *app) declaredBench(spec runSpec) string {
	if spec.inventory != "" || spec.bench != "" {
		return spec.bench
	}
	b := spec.recipe.Meta().Bench
	if b != "" {
		fmt.Fprintf(a.stderr, "%s%s runs on the built-in bench %s, which it declares (--bench default or --inventory FILE to run elsewhere)\n", prefixed(spec.prefix), spec.recipe.Meta().Name, b)
	}
	return b
}

func prefixed(p string) string {
	if p == "" {
		return ""
	}
	return p + ": "
}

// dryRun prints the plan of a run without touching any device.
func (a *app) dryRun(spec runSpec) error {
	spec.bench = a.declaredBench(spec)
	inv, simulated := simlab.DefaultInventory(), true
	if spec.inventory == "" && spec.bench != "" {
		var err error
		if inv, err = simlab.BenchInventory(spec.bench); err != nil {
			return &orchestrator.InputError{Msg: "bench: " + err.Error()}
		}
	}
	if spec.inventory != "" {
		var err error
		if inv, err = inventory.Load(spec.inventory); err != nil {
			return &orchestrator.InputError{Msg: err.Error()}
		}
		simulated = false
	}
	eng := a.engine(nil)
	plan, err := eng.Plan(orchestrator.RunRequest{Recipe: spec.recipe, Params: spec.params, Lab: inv, Simulated: simulated, Seed: spec.seed})
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

func (a *app) engine(obs *liveMetrics) *orchestrator.Engine {
	eng := &orchestrator.Engine{RunsDir: a.v.GetString("runs_dir"), StateDir: a.stateDir(), Version: version, Log: a.logger()}
	if obs != nil {
		eng.Metrics = obs.reg
	}
	return eng
}

// runRecipe is the one run path: the lab (inventory or simulated), the
// engine with progress and live metrics, the run into a new bundle. It
// returns an error without a result only when the run could not start.
func (a *app) runRecipe(runCtx, cleanupCtx context.Context, spec runSpec, obs *liveMetrics) (*orchestrator.RunResult, error) {
	log := a.logger()
	inv, simulated, closeLab, err := a.lab(spec, log)
	if err != nil {
		return nil, err
	}
	defer closeLab()
	eng := a.engine(obs)
	store, err := a.leaseStore(runCtx)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	eng.Leases = store
	req := orchestrator.RunRequest{Recipe: spec.recipe, Params: spec.params, Lab: inv, Simulated: simulated, Seed: spec.seed,
		Command: append([]string{"testbed"}, os.Args[1:]...), CleanupCtx: cleanupCtx, Labels: spec.labels,
		WaitLeases: a.v.GetBool("wait"), WaitTimeout: a.v.GetDuration("wait_timeout"), OnLeaseWait: a.printLeaseWait(spec.prefix),
		Parallel: a.v.GetInt("parallel")}
	if !a.json() {
		// What runs, how far, ETA: redrawn in place on a terminal, plain
		// lines in CI logs.
		pd := orchestrator.ProgressFor(a.stderr)
		pd.Prefix = spec.prefix
		eng.Observe = pd.Observe
		defer pd.Close()
	}
	res, err := eng.Run(runCtx, req)
	if err != nil {
		return nil, err
	}
	for _, u := range res.Unrestored {
		fmt.Fprintf(a.stderr, "%stestbed: NOT RESTORED: %s\n", prefixed(spec.prefix), u)
	}
	return res, nil
}

// runExitCode is the exit code of one finished run.
func runExitCode(res *orchestrator.RunResult) int {
	if len(res.Unrestored) > 0 {
		return exitNotRestored // a dirty lab, however the run ended
	}
	switch res.Status {
	case results.StatusAborted:
		return exitAborted
	case results.StatusFailed:
		var ie *orchestrator.InfraError
		if errors.As(res.Err, &ie) || strings.HasPrefix(res.Reason, "infrastructure") {
			return exitInfra
		}
		return exitFailed
	}
	return exitOK
}

// reportRun prints how a run ended (the bundle's path last; extra goes
// into the JSON form), pushes its summary when a Pushgateway is
// configured, and returns its exit code.
func (a *app) reportRun(ctx context.Context, res *orchestrator.RunResult, seed uint64, obs *liveMetrics, g pushGroup, extra map[string]any) error {
	code := runExitCode(res)
	pushErr := obs.push(ctx, res.Dir, g)
	if pushErr != nil {
		fmt.Fprintf(a.stderr, "testbed: %v\n", pushErr)
		if code == exitOK {
			code = exitInfra
		}
	}
	if a.json() {
		out := map[string]any{"run_id": res.RunID, "bundle": res.Dir, "status": res.Status, "reason": res.Reason,
			"steps_done": res.StepsDone, "steps_total": res.StepsTotal, "unrestored": res.Unrestored, "seed": seed}
		if pushErr != nil {
			out["push_error"] = pushErr.Error()
		}
		for k, v := range extra {
			out[k] = v
		}
		if err := a.printJSON(out); err != nil {
			return err
		}
	} else {
		a.printRunEnd(res)
		fmt.Fprintln(a.stdout, res.Dir)
	}
	if code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

// declaredTopology is a recipe's declared topology for JSON, or nil.
func declaredTopology(t orchestrator.Topology) any {
	if t.Declared() {
		return t
	}
	return nil
}
