package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"testbed/experiments"
	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/simlab"
)

// Shell completion (cobra's dynamic completion: `testbed completion bash`):
// recipe names, --set parameter names with their value types, device and
// link names from the inventory, bundle paths under the runs directory.

// completeRecipes offers the recipes' names, each with its summary.
func completeRecipes(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	reg := experiments.Registry()
	var out []string
	for _, n := range reg.Names() {
		if r, err := reg.Get(n); err == nil && strings.HasPrefix(n, toComplete) {
			out = append(out, n+"\t"+r.Meta().Summary)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeRecipeArg completes the one recipe argument of exp run and show.
func completeRecipeArg(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return completeRecipes(cmd, args, toComplete)
}

// completionInventory is the inventory --inventory names, else the
// simulated lab's.
func completionInventory(cmd *cobra.Command) *inventory.Inventory {
	if f := cmd.Flags().Lookup("inventory"); f != nil && f.Value.String() != "" {
		if inv, err := inventory.Load(f.Value.String()); err == nil {
			return inv
		}
		return nil
	}
	return simlab.DefaultInventory()
}

// completeSet completes --set: before '=' the recipe's parameter names
// with type, unit and description; after it, the inventory's links or
// devices for parameters that name them, true/false for booleans.
func (a *app) completeSet(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	r, err := experiments.Registry().Get(args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	name, val, hasValue := strings.Cut(toComplete, "=")
	if !hasValue {
		var out []string
		for _, p := range r.Meta().Params {
			if strings.HasPrefix(p.Name, toComplete) {
				out = append(out, p.Name+"=\t"+paramHint(p))
			}
		}
		return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
	var spec *orchestrator.ParamSpec
	for _, p := range r.Meta().Params {
		if p.Name == name {
			spec = &p
			break
		}
	}
	if spec == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var values []string
	switch {
	case spec.Type == orchestrator.TypeBool:
		values = []string{"true", "false"}
	case len(spec.Enum) > 0:
		values = spec.Enum
	case spec.Type == orchestrator.TypeString || spec.Type == orchestrator.TypeStrings:
		values = inventoryNames(completionInventory(cmd), spec)
	}
	// A list parameter completes its last element.
	done, last := "", val
	if spec.Type == orchestrator.TypeStrings {
		if i := strings.LastIndex(val, ","); i >= 0 {
			done, last = val[:i+1], val[i+1:]
		}
	}
	var out []string
	for _, v := range values {
		if strings.HasPrefix(v, last) {
			out = append(out, name+"="+done+v)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// paramHint is a parameter's type, unit, default and description, for a
// completion menu.
func paramHint(p orchestrator.ParamSpec) string {
	t := p.Type
	if p.Unit != "" {
		t += " " + p.Unit
	}
	return fmt.Sprintf("%s, default %s: %s", t, fmtDefault(p.Default), p.Description)
}

// inventoryNames are the links (for a parameter naming links) or devices
// (for one naming a device, a host, a switch or a kind of the lab's) of
// the inventory.
func inventoryNames(inv *inventory.Inventory, p *orchestrator.ParamSpec) []string {
	if inv == nil {
		return nil
	}
	if strings.Contains(p.Name, "link") {
		var out []string
		for _, l := range inv.Links {
			out = append(out, l.Name)
		}
		return out
	}
	kinds := map[string]bool{}
	for _, n := range inv.DeviceNames() {
		d, _ := inv.Device(n)
		kinds[d.Kind] = true
	}
	desc := strings.ToLower(p.Description)
	if !kinds[p.Name] && !strings.Contains(desc, "device") && !strings.Contains(desc, "host") && !strings.Contains(desc, "switch") {
		return nil
	}
	return inv.DeviceNames()
}

// completeBundles offers the bundle directories and .tar.gz archives
// under the runs directory, newest first, and any path typed.
func (a *app) completeBundles(max int) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if max > 0 && len(args) >= max {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		dir := a.v.GetString("runs_dir")
		if f := cmd.Flags().Lookup("runs-dir"); f != nil && f.Changed {
			dir = f.Value.String()
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, cobra.ShellCompDirectiveDefault
		}
		var out []string
		for i := len(ents) - 1; i >= 0; i-- {
			e := ents[i]
			p := filepath.Join(dir, e.Name())
			if !strings.HasPrefix(p, toComplete) {
				continue
			}
			if e.IsDir() {
				if _, err := os.Stat(filepath.Join(p, "manifest.json")); err == nil {
					out = append(out, p)
				}
			} else if strings.HasSuffix(e.Name(), ".tar.gz") {
				out = append(out, p)
			}
		}
		if len(out) == 0 {
			return nil, cobra.ShellCompDirectiveDefault
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// wireCompletion registers the completions of the command tree.
func (a *app) wireCompletion(root *cobra.Command) {
	// cobra adds its completion command when the root runs; added now, it
	// gets examples like every other command. The shells' completion
	// frameworks are theirs: bash needs Debian's bash-completion package.
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil && c.Name() == "completion" {
		c.Example = `  source <(testbed completion bash)     # needs the bash-completion package
  testbed completion zsh > "${fpath[1]}/_testbed"`
		for _, sh := range c.Commands() {
			sh.Example = "  testbed completion " + sh.Name() + " > testbed-completion." + sh.Name()
		}
	}
	walk(root, func(c *cobra.Command) {
		switch c.CommandPath() {
		case "testbed exp run":
			c.ValidArgsFunction = completeRecipeArg
			_ = c.RegisterFlagCompletionFunc("set", a.completeSet)
			_ = c.RegisterFlagCompletionFunc("inventory", yamlFiles)
			_ = c.RegisterFlagCompletionFunc("params", yamlFiles)
			_ = c.RegisterFlagCompletionFunc("suite", yamlFiles)
			_ = c.RegisterFlagCompletionFunc("baseline", a.completeBundles(0))
		case "testbed exp show":
			c.ValidArgsFunction = completeRecipeArg
		case "testbed results show", "testbed results sign", "testbed results pack", "testbed exp rerun":
			c.ValidArgsFunction = a.completeBundles(1)
		case "testbed results diff":
			c.ValidArgsFunction = a.completeBundles(2)
		case "testbed results verify":
			c.ValidArgsFunction = a.completeBundles(0)
		}
	})
}

func yamlFiles(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, s := range c.Commands() {
		walk(s, fn)
	}
}
