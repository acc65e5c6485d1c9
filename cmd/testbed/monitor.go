package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"testbed/dut/host"
	"testbed/dut/tofino"
	"testbed/experiments/monitor"
	"testbed/hostagent"
	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/results"
	"testbed/simlab"
	"testbed/transport"
)

// monitorFlags are monitor's flags: its own, the estimator's and the
// policy's.
type monitorFlags struct {
	invFile, metricsAddr string
	interval             time.Duration
	dryRun, allowDisable bool
	polls                int
	seed                 uint64
	est                  monitor.Config
	pol                  monitor.PolicyConfig
}

func (a *app) monitorCmd() *cobra.Command {
	o := &monitorFlags{est: monitor.DefaultConfig(), pol: monitor.DefaultPolicy()}
	c := &cobra.Command{
		Use:   "monitor",
		Short: "Watch every switch link for corruption and decide LinkGuardian and CorrOpt actions",
		Long: `monitor polls the $PORT_STAT counters of both ends of every link between switches
through the switch driver, and of links between a switch and a host with the host's NIC
counters through its hostagent (reported unavailable where the host has none), holding
no lease. FEC codeword counters are read where the switch driver has them; a receiver's
uncorrectable codewords on a corrupting link give a proposal of a stronger FEC mode (the
FEC paper's §4.5), never a change. For each direction it keeps a loss rate over a
frame-count window with its 95% Wilson interval: a direction with too few frames is
unknown, it is corrupting only when the interval's lower bound is above --threshold, and
it is clean again only after --quiet below it. A corrupting direction gets LinkGuardian
with the copies of Eq. 2 for --target-loss (raised as the rate grows, removed once clean);
a corrupting link is proposed for disabling when CorrOpt's check says every ToR (inventory
option role: tor|agg|core) keeps --min-path-fraction of its paths to the spine.
Every decision is printed as a JSON line on stdout, logged with its evidence, and journaled
as an event of a bundle of kind monitor under the runs directory (one a day, UTC, finalized
at the next day or on exit, verifiable with testbed results verify).
Unless --dry-run, each decision is carried out through the switch driver: LinkGuardian's
sender entries (p4/linkguardian, non-blocking mode: ordered mode would also need the
receiver's backpressure thresholds) on the switch the direction leaves, under a lease of
that switch taken for the action only (an action on a switch a run holds waits for the
next poll), its undo journaled first so that a monitor killed mid-action leaves the
switch recoverable by testbed lab recover. A link is taken down (its upstream port
deleted) only with --allow-disable; otherwise CorrOpt's verdict is a proposal.
Metrics (/metrics) and the status (/status, JSON) are served on --metrics-addr, a
loopback address. It checks the inventory's drivers and their options first, as a run
does, and refuses a bad one at its line before opening anything. With no --inventory it
watches the simulated lab.`,
		Example: `  testbed monitor --dry-run
  testbed monitor --inventory lab.yaml --dry-run --interval 1s --metrics-addr 127.0.0.1:9464
  testbed monitor --inventory lab.yaml --target-loss 1e-9 --allow-disable --min-path-fraction 0.75
  curl -s http://127.0.0.1:9464/status`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.monitor(cmd.Context(), o) },
	}
	fl := c.Flags()
	fl.StringVar(&o.invFile, "inventory", "", "lab inventory (default: the simulated lab)")
	fl.DurationVar(&o.interval, "interval", time.Second, "time between counter polls")
	fl.BoolVar(&o.dryRun, "dry-run", false, "decide and report without acting")
	fl.BoolVar(&o.allowDisable, "allow-disable", false, "take a corrupting link down when CorrOpt allows it (default: propose only)")
	fl.StringVar(&o.metricsAddr, "metrics-addr", "127.0.0.1:9464", "loopback address for /metrics and /status (empty: none)")
	fl.IntVar(&o.polls, "polls", 0, "stop after this many polls (0: until interrupted)")
	fl.Uint64Var(&o.seed, "seed", 1, "seed of the simulated lab")
	fl.Uint64Var(&o.est.Window, "window", o.est.Window, "frames in the estimate's window")
	fl.Float64Var(&o.est.Threshold, "threshold", o.est.Threshold, "loss rate above which a link corrupts (the interval's lower bound must exceed it)")
	fl.DurationVar(&o.est.Quiet, "quiet", o.est.Quiet, "time below the threshold before a corrupting link is clean")
	fl.Float64Var(&o.pol.TargetLoss, "target-loss", o.pol.TargetLoss, "effective loss LinkGuardian must reach (Eq. 2; 0: never enable)")
	fl.Float64Var(&o.pol.MinPathFraction, "min-path-fraction", o.pol.MinPathFraction, "CorrOpt: fraction of its paths to the spine every ToR keeps")
	return c
}

// monitor watches the lab's links until interrupted (or --polls): it
// opens the switches and hosts the links join, decides on each poll and,
// unless --dry-run, acts; every decision goes to stdout and the day's
// journal bundle.
func (a *app) monitor(ctx context.Context, o *monitorFlags) error {
	if o.allowDisable {
		o.pol.AutoDisable = true
	}
	if o.interval <= 0 {
		return &orchestrator.InputError{Msg: fmt.Sprintf("--interval %s: must be positive", o.interval)}
	}
	log := a.logger()
	inv, closeLab, err := a.monitoredLab(o)
	if err != nil {
		return err
	}
	defer closeLab()
	dirs, policy, err := monitorPolicy(inv, o)
	if err != nil {
		return err
	}
	switches, hostNames := monitor.Switches(dirs), monitor.Hosts(dirs)
	names := append(append([]string(nil), switches...), hostNames...)
	set, err := orchestrator.OpenDevices(ctx, inv, names, func(string) *transport.Transcript { return nil })
	if err != nil {
		return &orchestrator.InfraError{Op: "open switches", Err: err}
	}
	defer set.Close()
	hosts, err := monitorHosts(ctx, inv, set, hostNames)
	if err != nil {
		return err
	}
	readers, actors, err := monitorSwitches(inv, set, switches)
	if err != nil {
		return err
	}
	a.warnProgramsNotLoaded(ctx, switches, readers, o.monitoredInventory(a))
	var actor *monitor.Actor
	if !o.dryRun {
		store, err := a.leaseStore(ctx)
		if err != nil {
			return err
		}
		defer store.Close()
		actor = &monitor.Actor{Inv: inv, Store: store, Switches: actors, Owner: currentUser(),
			RunID: results.NewRunID(time.Now(), "monitor"), Log: log}
	}
	m, err := monitor.NewMonitorWith(dirs, readers, hosts, o.est, policy, 5*time.Second, log)
	if err != nil {
		return &orchestrator.InputError{Msg: err.Error()}
	}
	met := monitor.NewMetrics()
	bound, stop, err := serveMonitor(o.metricsAddr, m, met)
	if err != nil {
		return &orchestrator.InputError{Msg: err.Error()}
	}
	defer stop()
	if bound != "" {
		fmt.Fprintf(a.stderr, "metrics: http://%s/metrics, status: http://%s/status\n", bound, bound)
	}
	j := a.monitorJournal(o, inv)
	runErr := runMonitor(ctx, m, actor, met, o.interval, o.polls, json.NewEncoder(a.stdout), j, log)
	if err := j.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if d := j.Dir(); d != "" {
		fmt.Fprintln(a.stderr, "journal:", d)
	}
	return runErr
}

// monitoredInventory is the inventory file watched: --inventory, or
// TESTBED_INVENTORY or the config file's; "" for the simulated lab.
func (o *monitorFlags) monitoredInventory(a *app) string {
	if o.invFile != "" {
		return o.invFile
	}
	return a.v.GetString("inventory")
}

// monitoredLab loads the lab's inventory, or starts the simulated lab
// (closed by the function returned).
func (a *app) monitoredLab(o *monitorFlags) (*inventory.Inventory, func(), error) {
	if f := o.monitoredInventory(a); f != "" {
		inv, err := checkedInventory(f)
		if err != nil {
			return nil, nil, err
		}
		return inv, func() {}, nil
	}
	lab, err := simlab.StartDefault(simlab.Options{Seed: o.seed, Log: a.logger()})
	if err != nil {
		return nil, nil, &orchestrator.InfraError{Op: "start the simulated lab", Err: err}
	}
	fmt.Fprintln(a.stderr, "simulated lab up: monitoring its switch links")
	return lab.Inventory(), func() { lab.Close() }, nil
}

// monitorPolicy finds the directions to watch, the links between
// switches, and the policy over the lab's topology (no disabling to
// propose when no device says it is a ToR).
func monitorPolicy(inv *inventory.Inventory, o *monitorFlags) ([]monitor.Direction, *monitor.Policy, error) {
	dirs, err := monitor.Directions(inv)
	if err != nil {
		return nil, nil, &orchestrator.InputError{Msg: err.Error()}
	}
	if len(dirs) == 0 {
		return nil, nil, &orchestrator.InputError{Msg: inv.Path + ": no link joins two switches: nothing to monitor"}
	}
	topo, err := monitor.NewTopology(inv)
	if err != nil {
		return nil, nil, &orchestrator.InputError{Msg: err.Error()}
	}
	if len(topo.ToRs()) == 0 {
		o.pol.ProposeDisable = false // no roles: CorrOpt has nothing to check
	}
	policy, err := monitor.NewPolicy(o.pol, o.est.Threshold, topo)
	if err != nil {
		return nil, nil, &orchestrator.InputError{Msg: err.Error()}
	}
	return dirs, policy, nil
}

// monitorHosts reaches the hosts' NIC counters through their hostagents.
func monitorHosts(ctx context.Context, inv *inventory.Inventory, set *orchestrator.DeviceSet, names []string) (map[string]monitor.HostCounterReader, error) {
	hosts := map[string]monitor.HostCounterReader{}
	for _, name := range names {
		od, _ := set.Get(name)
		h, ok := od.Driver.(*host.Host)
		if !ok {
			return nil, &orchestrator.InputError{Msg: fmt.Sprintf("%s: driver %s reaches no hostagent", name, inv.Devices[name].Driver)}
		}
		ag, _, err := h.EnsureAgent(ctx)
		if err != nil {
			return nil, &orchestrator.InfraError{Op: name + ": start the hostagent", Err: err}
		}
		hosts[name] = hostagent.NewClient(ag.Client, ag.BaseURL)
	}
	return hosts, nil
}

// monitorSwitches are the switches' counter readers and actors.
func monitorSwitches(inv *inventory.Inventory, set *orchestrator.DeviceSet, names []string) (map[string]monitor.CounterReader, map[string]monitor.SwitchActor, error) {
	readers := map[string]monitor.CounterReader{}
	actors := map[string]monitor.SwitchActor{}
	for _, name := range names {
		od, _ := set.Get(name)
		sw, ok := od.Driver.(*tofino.Switch)
		if !ok {
			return nil, nil, &orchestrator.InputError{Msg: fmt.Sprintf("%s: driver %s reads no port counters", name, inv.Devices[name].Driver)}
		}
		readers[name] = sw
		actors[name] = sw
	}
	return readers, actors, nil
}

// monitorJournal opens the day's journal bundle, its parameters the
// monitor's settings.
func (a *app) monitorJournal(o *monitorFlags, inv *inventory.Inventory) *monitor.Journal {
	return monitor.NewJournal(a.v.GetString("runs_dir"), results.Lab{Simulated: o.monitoredInventory(a) == "", Name: inv.Name, InventoryPath: inv.Path},
		results.CurrentSoftware(version), []results.Param{
			{Name: "window", Value: o.est.Window}, {Name: "threshold", Value: o.est.Threshold}, {Name: "quiet", Value: o.est.Quiet.String()},
			{Name: "target_loss", Value: o.pol.TargetLoss}, {Name: "min_path_fraction", Value: o.pol.MinPathFraction},
			{Name: "interval", Value: o.interval.String()}, {Name: "dry_run", Value: o.dryRun},
			{Name: "allow_disable", Value: o.allowDisable}})
}

// serveMonitor serves /metrics and /status on a loopback address.
// It returns the address bound ("" when addr is empty: nothing served).
func serveMonitor(addr string, m *monitor.Monitor, mm *monitor.Metrics) (bound string, stop func(), err error) {
	if addr == "" {
		return "", func() {}, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", nil, fmt.Errorf("--metrics-addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", nil, fmt.Errorf("--metrics-addr %q: the monitor serves on a loopback address only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(mm.Reg, promhttp.HandlerOpts{}))
	mux.Handle("/status", m)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}, nil
}

func runMonitor(ctx context.Context, m *monitor.Monitor, actor *monitor.Actor, mm *monitor.Metrics, interval time.Duration, polls int, out *json.Encoder, j *monitor.Journal, log interface {
	Info(string, ...any)
}) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for n := 1; ; n++ {
		ds, err := m.Poll(ctx, time.Now())
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			mm.ReadError()
		}
		m.Carry(ctx, actor, ds)
		mm.Update(m, ds)
		for _, d := range ds {
			log.Info("monitor: decision", "link", d.Link, "direction", d.Direction, "action", string(d.Action),
				"copies", d.Copies, "outcome", d.Outcome, "error", d.Error, "rule", d.Rule, "frames", d.Evidence.Frames,
				"losses", d.Evidence.Losses, "low", d.Evidence.Low, "high", d.Evidence.High)
			if err := out.Encode(d); err != nil {
				return fmt.Errorf("monitor: write decision: %w", err)
			}
			if err := j.Record(d); err != nil {
				return err
			}
		}
		if polls > 0 && n >= polls {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// warnProgramsNotLoaded says once, before the first poll, which switches
// run no P4 program (bf_switchd not running): their ports' counters
// cannot be read until a program runs, and every poll would fail on them.
// A recipe starts the programs it needs (and leaves them running).
func (a *app) warnProgramsNotLoaded(ctx context.Context, switches []string, readers map[string]monitor.CounterReader, invFile string) {
	var idle []string
	for _, name := range switches {
		sw, ok := readers[name].(*tofino.Switch)
		if !ok {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		prog, err := sw.Program(pctx)
		cancel()
		if err == nil && prog == "" {
			idle = append(idle, name)
		}
	}
	if len(idle) == 0 {
		return
	}
	how := "  testbed exp run loss-sweep --inventory " + invFile + " --set links=lg25 --set frames=1000000\n"
	if invFile == "" {
		// The in-process lab ends with this command: a run cannot reach it.
		how = "  testbed lab up --inventory-out lab.yaml        # in another terminal, the lab kept running\n" +
			"  testbed exp run loss-sweep --inventory lab.yaml --set links=lg25 --set frames=1000000\n" +
			"  testbed monitor --dry-run --inventory lab.yaml\n"
	}
	fmt.Fprintf(a.stderr, "monitor: %s run no P4 program yet (bf_switchd is not running), so their counters cannot be read; "+
		"a recipe starts the programs it needs and leaves them running, so load LinkGuardian's with a short run first:\n%s"+
		"(until then reads of those ports fail, each warned about once)\n", strings.Join(idle, ", "), how)
}
