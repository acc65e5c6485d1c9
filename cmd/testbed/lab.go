package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/simlab"
	"testbed/simlab/scenario"
)

func (a *app) labCmd() *cobra.Command {
	c := &cobra.Command{Use: "lab", Short: "Run the simulated lab",
		Example: `  testbed lab up --inventory-out lab.yaml
  testbed lab fault voa1=drop:3 --inventory lab.yaml`}
	c.AddCommand(a.labUpCmd())
	c.AddCommand(a.labFaultCmd())
	c.AddCommand(a.labShowBenchCmd())
	c.AddCommand(a.labRecoverCmd(), a.labLeasesCmd())
	return c
}

// labUpFlags are lab up's flags.
type labUpFlags struct {
	out, from, control, bench string
	faultArgs                 []string
	scenarioFile              string
	seed                      uint64
	scale                     float64
	clock                     string
}

func (a *app) labUpCmd() *cobra.Command {
	var o labUpFlags
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
and left out. The options of the devices it twins are checked first, as a
run checks them: a key the driver does not take, or a value not of its form,
is refused at its line. The inventory written is the same lab pointing at
the twin.

Clocks (docs/clocks.md): the traffic generator keeps simulated time, by
default 1000 simulated seconds per real second, so a recipe's traffic runs
fast; its counters, rates and timestamps agree with each other on that
clock. --clock real runs it on the wall clock, for tools that pace
themselves by it (a 1000 pps flow sends 1000 frames a real second);
--time-scale sets any other ratio. Attenuators and optical switches move on
the wall clock either way; the switches' dataplanes step their own
simulated clock as their models compute.

A scenario (--scenario, YAML) makes corruption come and go on the lab's fibres over the
switches' clock: a VOA that drifts (voa_drift, db_per_hour), a connector that gets
dirty at a given time (dirty_connector, step_db, clean_at), a transmitter whose launch
power falls (tx_degrade, db_per_hour); the frames lost follow from the received power
through the optics model.

Faults, to rehearse a recipe's error paths: --fault (repeatable) takes
  ` + faultGrammar + `.
While the lab runs, "testbed lab fault" changes them through the lab's
fault control endpoint, an HTTP server on 127.0.0.1 (--lab-control; a free
port by default) whose address lab up prints and writes into the
inventory's header.`,
		Example: `  testbed lab up --inventory-out lab.yaml
  testbed lab up --fault voa1=garbage:1 --fault sw1=error:BF_INVALID_ARG --lab-control 127.0.0.1:7411
  testbed lab up --inventory mylab.yaml --inventory-out twin.yaml --fault tg1=delay:2s:always
  testbed lab up --fault voa2=slip:200 --inventory-out lab.yaml   # then: testbed voa home voa2 --inventory lab.yaml
  testbed lab up --scenario simlab/scenario/testdata/corruption.yaml --inventory-out lab.yaml
  testbed lab up --bench rail-clos --inventory-out clos.yaml
  testbed lab up --clock real --inventory-out lab.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.labUp(cmd, o) },
	}
	f := up.Flags()
	f.StringVar(&o.out, "inventory-out", "lab.yaml", "where to write the inventory")
	f.StringVar(&o.from, "inventory", "", "start a simulated twin of this inventory instead of the default bench")
	f.StringVar(&o.bench, "bench", "default", "the built-in bench to start (testbed lab show-bench NAME prints one; ignored with --inventory)")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the lab's randomness")
	f.Float64Var(&o.scale, "time-scale", 0, "simulated seconds per real second for traffic (default: the lab's own)")
	f.StringVar(&o.clock, "clock", "sim", "the traffic generator's clock: sim (simulated time, fast) or real (the wall clock, for clients that pace themselves)")
	f.StringVar(&o.scenarioFile, "scenario", "", "scenario file (YAML) of corruption that comes and goes on the lab's fibres over the switches' clock (see simlab/scenario)")
	f.StringArrayVar(&o.faultArgs, "fault", nil, "inject a fault: <device>=drop|delay:<dur>|garbage|error:<text>|slip:<steps>, then :N or :always (repeatable)")
	f.StringVar(&o.control, "lab-control", "127.0.0.1:0", "loopback address of the fault control endpoint")
	return up
}

// labUp starts the simulated lab (the default bench, another, or a twin
// of an inventory) with its scenario and faults, writes the inventory
// pointing at it, and serves it until interrupted.
func (a *app) labUp(cmd *cobra.Command, o labUpFlags) error {
	var faults []faultFlag
	for _, s := range o.faultArgs {
		f, err := parseFaultFlag(s)
		if err != nil {
			return &orchestrator.InputError{Msg: err.Error()}
		}
		faults = append(faults, f)
	}
	scale, err := labTimeScale(o.clock, o.scale)
	if err != nil {
		return err
	}
	opts := simlab.Options{Seed: o.seed, Log: a.logger(), TimeScale: scale}
	var scen *scenario.Scenario
	if o.scenarioFile != "" {
		if scen, err = simlab.LoadScenario(o.scenarioFile); err != nil {
			return &orchestrator.InputError{Msg: err.Error()}
		}
	}
	lab, skipped, err := a.startLab(o, opts)
	if err != nil {
		return err
	}
	defer lab.Close()
	if err := a.impairLab(lab, o.scenarioFile, scen, faults); err != nil {
		return err
	}
	ctlURL, stopCtl, err := serveFaultControl(o.control, lab, a.logger())
	if err != nil {
		return &orchestrator.InputError{Msg: err.Error()}
	}
	defer stopCtl()
	data, err := lab.Inventory().Marshal()
	if err != nil {
		return err
	}
	header := fmt.Sprintf("# Inventory of a simulated lab (testbed lab up, seed %d, pid %d).\n# Valid while that process runs.\n%s%s (testbed lab fault --inventory this-file)\n", o.seed, os.Getpid(), controlComment, ctlURL)
	if err := os.WriteFile(o.out, append([]byte(header), data...), 0o644); err != nil {
		return &orchestrator.InputError{Msg: fmt.Sprintf("write inventory: %v", err)}
	}
	if err := a.printLabUp(o, lab, skipped, faults, ctlURL); err != nil {
		return err
	}
	runCtx, _, stop := a.interruptible(cmd.Context())
	defer stop()
	<-runCtx.Done()
	if cause := context.Cause(runCtx); errors.Is(cause, orchestrator.ErrAborted) || context.Cause(cmd.Context()) == nil {
		fmt.Fprintln(a.stderr, "\nsimulated lab stopping")
	}
	return nil
}

// labTimeScale is the traffic generator's simulated seconds per real
// second from --clock and --time-scale (0: the lab's own).
func labTimeScale(clock string, scale float64) (float64, error) {
	switch {
	case clock == "real" && scale != 0 && scale != 1:
		return 0, &orchestrator.InputError{Msg: fmt.Sprintf("--clock real runs the traffic generator at 1 simulated second per second; --time-scale %g says otherwise (give one of them)", scale)}
	case clock == "real":
		return 1, nil
	case clock != "sim":
		return 0, &orchestrator.InputError{Msg: fmt.Sprintf("--clock %q: expected sim or real", clock)}
	}
	return scale, nil
}

// startLab starts a twin of --inventory, naming the devices left out,
// or else the --bench.
func (a *app) startLab(o labUpFlags, opts simlab.Options) (*simlab.Lab, []simlab.Skipped, error) {
	if o.from != "" {
		inv, err := inventory.Load(o.from)
		if err != nil {
			return nil, nil, &orchestrator.InputError{Msg: err.Error()}
		}
		// The emulators read the options of the devices they stand for:
		// a key the driver does not take is refused at its line, as a run
		// refuses it. A device of a driver this build lacks is left out.
		if err := orchestrator.CheckOptions(inv); err != nil {
			return nil, nil, err
		}
		lab, skipped, err := simlab.StartTwin(inv, opts)
		if err != nil {
			return nil, nil, &orchestrator.InfraError{Op: "start a simulated twin of " + o.from, Err: err}
		}
		for _, s := range skipped {
			fmt.Fprintf(a.stderr, "no emulator for %s: left out of the twin\n", s)
		}
		return lab, skipped, nil
	}
	if _, err := simlab.Bench(o.bench); err != nil {
		return nil, nil, &orchestrator.InputError{Msg: "--bench: " + err.Error()}
	}
	lab, err := simlab.StartBench(o.bench, opts)
	if err != nil {
		return nil, nil, &orchestrator.InfraError{Op: "start the simulated lab", Err: err}
	}
	return lab, nil, nil
}

// impairLab applies the scenario (when there is one) and injects the
// faults.
func (a *app) impairLab(lab *simlab.Lab, scenarioFile string, scen *scenario.Scenario, faults []faultFlag) error {
	if scen != nil {
		if err := lab.ApplyScenario(scen); err != nil {
			return &orchestrator.InputError{Msg: err.Error()}
		}
		fmt.Fprintf(a.stderr, "scenario %s: impairing %s over the switches' clock\n", scenarioFile, strings.Join(scen.Links(), ", "))
	}
	for _, f := range faults {
		fi := lab.Faults(f.Device)
		if fi == nil {
			return &orchestrator.InputError{Msg: fmt.Sprintf("--fault %s: no device %q in the lab takes faults (devices: %s)", f.Device, f.Device, strings.Join(lab.FaultDevices(), ", "))}
		}
		if err := fi.Inject(f.Spec); err != nil {
			return &orchestrator.InputError{Msg: fmt.Sprintf("--fault %s: %v", f.Device, err)}
		}
	}
	return nil
}

// printLabUp says where the lab is: its endpoints, faults, fault control
// and inventory.
func (a *app) printLabUp(o labUpFlags, lab *simlab.Lab, skipped []simlab.Skipped, faults []faultFlag, ctlURL string) error {
	if a.json() {
		left := []string{}
		for _, s := range skipped {
			left = append(left, s.Device)
		}
		return a.printJSON(map[string]any{"inventory": o.out, "endpoints": lab.Endpoints(), "seed": o.seed, "pid": os.Getpid(), "left_out": left, "lab_control": ctlURL})
	}
	fmt.Fprintf(a.stdout, "simulated lab up (seed %d)\n", o.seed)
	for _, e := range lab.Endpoints() {
		fmt.Fprintf(a.stdout, "  %s\n", e)
	}
	for _, f := range faults {
		fmt.Fprintf(a.stdout, "fault: %s %s\n", f.Device, f.Spec)
	}
	fmt.Fprintf(a.stdout, "fault control: %s (testbed lab fault --lab-control %s)\n", ctlURL, strings.TrimPrefix(ctlURL, "http://"))
	fmt.Fprintf(a.stdout, "inventory written to %s\nCtrl-C to stop\n", o.out)
	return nil
}

func (a *app) labShowBenchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show-bench [name]",
		Short: "Print a built-in bench's inventory file (default: the default bench)",
		Long: `Print the inventory file of a bench built into the binary: the lab the
simulated lab starts. Copy it and edit it to describe a lab of your own.
Benches: ` + strings.Join(simlab.BenchNames(), ", ") + `.`,
		Example: `  testbed lab show-bench > mylab.yaml
  testbed lab show-bench rail-stretch --output json
  testbed lab up --inventory mylab.yaml --inventory-out twin.yaml`,
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
			if a.json() {
				// The same document as JSON (its comments are YAML's alone).
				var doc map[string]any
				if err := yaml.Unmarshal(b, &doc); err != nil {
					return fmt.Errorf("bench %s: %w", name, err)
				}
				return a.printJSON(doc)
			}
			_, err = a.stdout.Write(b)
			return err
		},
	}
}

func (a *app) labRecoverCmd() *cobra.Command {
	var invFile string
	c := &cobra.Command{
		Use:   "recover",
		Short: "Undo what runs that died left on the lab's devices (their undo journals)",
		Long: `Before a run changes a device it writes the undo of the change to a journal
beside the device's lease, synced to disk; the run removes the journal when
it has undone everything. A run killed (kill -9, power loss) or unable to
restore a device leaves its journal behind. The next run to lease the device
replays it before it starts; this command does it now, for every device of
the inventory that no live run holds, and lists what it restored. It checks
the inventory's drivers and their options first, as a run does, and refuses a
bad one at its line before opening anything.

Exit code 0 when nothing was left to undo or everything was undone, 4 when
an undo failed (its journal is kept, to try again) or a device is leased by
a live run.`,
		Example: `  testbed lab recover --inventory lab.yaml
  TESTBED_INVENTORY=lab.yaml testbed lab recover --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			path := invFile
			if path == "" {
				path = a.v.GetString("inventory") // TESTBED_INVENTORY or the config file
			}
			if path == "" {
				return &orchestrator.InputError{Msg: "lab recover needs the lab's inventory: --inventory lab.yaml (or TESTBED_INVENTORY); the in-process simulated lab ends with its process and has nothing to recover"}
			}
			inv, err := checkedInventory(path)
			if err != nil {
				return err
			}
			ctx, _, stop := a.interruptible(cmd.Context())
			defer stop()
			log := a.logger()
			store, err := a.leaseStore(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			rec, skipped, rerr := orchestrator.RecoverLabIn(ctx, inv, store, log.Warn)
			type row struct {
				Device  string `json:"device"`
				FromRun string `json:"from_run"`
				Action  string `json:"action"`
				OK      bool   `json:"ok"`
				Error   string `json:"error,omitempty"`
			}
			var rows []row
			for _, r := range rec {
				ca := r.CleanupAction()
				rows = append(rows, row{Device: r.Device, FromRun: r.FromRun, Action: r.Desc, OK: ca.OK, Error: ca.Error})
			}
			if a.json() {
				out := map[string]any{"restored": rows, "skipped": skipped}
				if rerr != nil {
					out["error"] = rerr.Error()
				}
				if err := a.printJSON(out); err != nil {
					return err
				}
			} else {
				if len(rows) == 0 {
					fmt.Fprintln(a.stdout, "nothing to recover: no device has an undo journal left by a dead run")
				}
				for _, r := range rows {
					state := "restored"
					if !r.OK {
						state = "NOT RESTORED: " + r.Error
					}
					fmt.Fprintf(a.stdout, "%s\t%s\t(run %s)\t%s\n", r.Device, r.Action, r.FromRun, state)
				}
				for _, s := range skipped {
					fmt.Fprintf(a.stdout, "skipped, leased by a live run: %s\n", s)
				}
			}
			if rerr != nil {
				return &exitError{code: exitInfra, err: rerr}
			}
			if len(skipped) > 0 {
				return &exitError{code: exitInfra}
			}
			return nil
		},
	}
	c.Flags().StringVar(&invFile, "inventory", "", "lab inventory (YAML); default: TESTBED_INVENTORY or the config file's")
	return c
}
