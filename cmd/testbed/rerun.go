package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"testbed/experiments"
	"testbed/experiments/suite"
	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/results"
	"testbed/simlab"
)

// LabelRerunOf names, in a rerun's manifest, the run it repeats.
const LabelRerunOf = "rerun_of"

func (a *app) expRerunCmd() *cobra.Command {
	var mo metricsOptions
	var inv string
	var invFromBundle bool
	c := &cobra.Command{
		Use:   "rerun <bundle>",
		Short: "Run a bundle's recipe again with the same parameters and seed, into a new bundle",
		Long: `Read a bundle (directory or .tar.gz) and run its recipe again with the parameters
its manifest recorded, into a new bundle whose path is printed last. On the
simulated lab the seed is the bundle's too, so the rerun should reproduce it:
  testbed results diff <bundle> <new bundle>
says whether it did.

The bundle is verified first (as 'testbed results verify' does, under the
same --max-* limits); one that does not verify is refused, exit 1. A bundle
that was never finalized (its run crashed) is rerun with a warning.

A bundle made on a real lab reruns on --inventory if given, else on the
inventory of TESTBED_INVENTORY or the config file; the inventory file the run
recorded is used only with --inventory-from-bundle, since a path read from a
bundle is the bundle's say, not yours. A warning says when the inventory
differs from the one the bundle recorded. A bundle made on the simulated lab
reruns on a new simulated lab, unless --inventory is given.

A warning says when this build's recipe version (or testbed version) differs
from the bundle's: the rerun then tests the new code with the old parameters.
Parameters the recipe no longer has are dropped, and new ones take their
defaults, each with a warning. Exit codes as for exp run.

` + metricsHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			obs, err := a.startMetrics(mo)
			if err != nil {
				return err
			}
			defer obs.Close()
			if !cmd.Flags().Changed("inventory") {
				inv = ""
			}
			lim, err := readLimits(cmd)
			if err != nil {
				return err
			}
			return a.expRerun(context.WithoutCancel(cmd.Context()), args[0], rerunOptions{inventory: inv, inventoryFromBundle: invFromBundle, limits: lim}, obs)
		},
	}
	c.Flags().StringVar(&inv, "inventory", "", "lab inventory (YAML) to rerun on (default: see above)")
	c.Flags().BoolVar(&invFromBundle, "inventory-from-bundle", false, "rerun a real lab's bundle on the inventory file its manifest recorded")
	addReadLimitFlags(c, false)
	mo.addFlags(c)
	return c
}

// rerunPlan is what a rerun takes from a bundle.
type rerunPlan struct {
	spec     runSpec
	warnings []string
	notes    []string
}

// rerunOptions are exp rerun's flags.
type rerunOptions struct {
	inventory           string // --inventory, "" if not given
	inventoryFromBundle bool
	limits              results.ReadLimits
}

// planRerun reads a bundle's manifest into the run that repeats it.
// configInv is the inventory of the environment or config file.
func planRerun(rd *results.Reader, o rerunOptions, configInv string) (*rerunPlan, error) {
	invFlag := o.inventory
	m := rd.Manifest
	rp := &rerunPlan{}
	if rd.Incomplete {
		rp.warnings = append(rp.warnings, fmt.Sprintf("the bundle was never finalized (status %s): rerunning with what its manifest recorded", m.Status))
	}
	r, err := experiments.Registry().Get(m.Recipe.Name)
	if err != nil {
		return nil, &orchestrator.InputError{Msg: fmt.Sprintf("rerun %s: the bundle ran recipe %q: %v", rd.Path, m.Recipe.Name, err)}
	}
	if m.Recipe.Version != r.Meta().Version {
		rp.warnings = append(rp.warnings, fmt.Sprintf("the bundle ran %s v%s; this build has v%s: differences may come from the recipe's changes",
			r.Meta().Name, m.Recipe.Version, r.Meta().Version))
	}
	if sw := m.Software; sw.TestbedVersion != version {
		rp.notes = append(rp.notes, fmt.Sprintf("the bundle was made by testbed %s (%s); this is testbed %s", sw.TestbedVersion, shortRev(sw.VCSRevision), version))
	}
	declared := map[string]bool{}
	for _, s := range r.Meta().Params {
		declared[s.Name] = true
	}
	values := map[string]any{}
	for _, p := range m.Params {
		if !declared[p.Name] {
			rp.warnings = append(rp.warnings, fmt.Sprintf("parameter %s = %v is not a parameter of %s v%s any more: dropped", p.Name, p.Value, r.Meta().Name, r.Meta().Version))
			continue
		}
		values[p.Name] = p.Value
	}
	for _, s := range r.Meta().Params {
		if _, ok := values[s.Name]; !ok {
			rp.warnings = append(rp.warnings, fmt.Sprintf("parameter %s is new in %s v%s: the bundle has no value, using the default %s", s.Name, r.Meta().Name, r.Meta().Version, fmtDefault(s.Default)))
		}
	}
	params, err := orchestrator.ResolveParams(r.Meta().Params, "bundle "+rd.Path, values, nil)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{}
	for k, v := range m.Labels {
		labels[k] = v
	}
	labels[LabelRerunOf] = m.RunID
	rp.spec = runSpec{recipe: r, params: params, seed: m.Seed, labels: labels}

	switch {
	case invFlag != "":
		rp.spec.inventory = invFlag
	case m.Lab.Simulated:
		// A new simulated lab with the bundle's seed, of the built-in
		// bench the run was on (its inventory's name).
		if _, err := simlab.Bench(m.Lab.Name); err == nil && m.Lab.Name != "default" {
			rp.spec.bench = m.Lab.Name
			rp.notes = append(rp.notes, "on the built-in bench "+m.Lab.Name)
		}
	case configInv != "":
		rp.spec.inventory = configInv
	case m.Lab.InventoryPath != "" && !o.inventoryFromBundle:
		return nil, &orchestrator.InputError{Msg: fmt.Sprintf("rerun %s: the run used lab %s with inventory %s, as its bundle says: give --inventory, or --inventory-from-bundle to use that file",
			rd.Path, m.Lab.Name, m.Lab.InventoryPath)}
	case m.Lab.InventoryPath != "":
		if _, err := os.Stat(m.Lab.InventoryPath); err != nil {
			return nil, &orchestrator.InputError{Msg: fmt.Sprintf("rerun %s: the run used lab %s with inventory %s, which is not here (%v): give --inventory",
				rd.Path, m.Lab.Name, m.Lab.InventoryPath, err)}
		}
		rp.spec.inventory = m.Lab.InventoryPath
		rp.notes = append(rp.notes, "on the inventory the run recorded: "+m.Lab.InventoryPath)
	default:
		return nil, &orchestrator.InputError{Msg: fmt.Sprintf("rerun %s: the run used lab %s and recorded no inventory file: give --inventory", rd.Path, m.Lab.Name)}
	}
	if rp.spec.inventory != "" && !m.Lab.Simulated {
		if inv, err := inventory.Load(rp.spec.inventory); err == nil && canonicalJSON(inv.Redacted()) != canonicalJSON(m.Lab.Inventory) {
			rp.warnings = append(rp.warnings, fmt.Sprintf("inventory %s differs from the one the bundle recorded (lab %s)", rp.spec.inventory, m.Lab.Name))
		}
	}
	if rp.spec.inventory != "" && m.Lab.Simulated {
		rp.notes = append(rp.notes, fmt.Sprintf("the bundle ran on the simulated lab; rerunning on %s", rp.spec.inventory))
	}
	return rp, nil
}

// canonicalJSON is a JSON form equal for equal values, whatever their Go
// types were (a map from YAML, or one decoded from a manifest).
func canonicalJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var x any
	if json.Unmarshal(b, &x) != nil {
		return string(b)
	}
	b, _ = json.Marshal(x)
	return string(b)
}

func (a *app) expRerun(parent context.Context, path string, o rerunOptions, obs *liveMetrics) error {
	rep, err := results.VerifyWith(path, results.VerifyOptions{Limits: o.limits})
	if err != nil {
		return bundleError("rerun: verify", path, err)
	}
	if !rep.OK && !onlyIncomplete(rep.Problems) {
		return &exitError{code: exitFailed, err: fmt.Errorf("rerun %s: the bundle does not verify, refusing to rerun what it says: %s", path, strings.Join(rep.Problems, "; "))}
	}
	rd, err := results.OpenWith(path, results.OpenOptions{Limits: o.limits})
	if err != nil {
		return bundleError("rerun: open", path, err)
	}
	rp, err := planRerun(rd, o, a.v.GetString("inventory"))
	if err != nil {
		return err
	}
	m := rd.Manifest
	for _, w := range rp.warnings {
		fmt.Fprintf(a.stderr, "testbed: warning: %s\n", w)
	}
	for _, n := range rp.notes {
		fmt.Fprintf(a.stderr, "testbed: note: %s\n", n)
	}
	fmt.Fprintf(a.stderr, "rerun of %s: %s v%s, seed %d, %d parameters\n", m.RunID, m.Recipe.Name, m.Recipe.Version, m.Seed, len(m.Params))
	runCtx, cleanupCtx, stop := a.interruptible(parent)
	defer stop()
	res, err := a.runRecipe(runCtx, cleanupCtx, rp.spec, obs)
	if err != nil {
		return err
	}
	g := pushGroup{entry: rp.spec.recipe.Meta().Name}
	if s, e := m.Labels[suite.LabelSuite], m.Labels[suite.LabelEntry]; s != "" && e != "" {
		g = pushGroup{suite: s, entry: e}
	}
	if !a.json() {
		fmt.Fprintf(a.stderr, "compare: testbed results diff %s %s\n", shellQuote(path), shellQuote(res.Dir))
	}
	return a.reportRun(parent, res, rp.spec.seed, obs, g, map[string]any{"rerun_of": m.RunID, "original": path, "warnings": rp.warnings})
}

// onlyIncomplete reports whether every problem of a verification says the
// bundle was never finalized: a crashed run, which a rerun may repeat.
func onlyIncomplete(problems []string) bool {
	for _, p := range problems {
		if !strings.HasPrefix(p, "incomplete: ") {
			return false
		}
	}
	return true
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@+=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
