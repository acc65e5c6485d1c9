package main

import (
	"github.com/spf13/cobra"
)

// examples are the Example blocks of the commands' help, by command path.
func examples() map[string]string {
	return map[string]string{
		"testbed": `  testbed exp run attenuation-sweep                 # on the simulated lab
  testbed exp run loss-sweep --inventory lab.yaml --set links=lg25
  testbed results list --latest`,
		"testbed exp": `  testbed exp list
  testbed exp show loss-sweep
  testbed exp run fct --set trials=20000`,
		"testbed exp list": `  testbed exp list
  testbed exp list -o json`,
		"testbed exp show": `  testbed exp show attenuation-sweep
  testbed exp show reactor-hybrid -o json`,
		"testbed exp run": `  testbed exp run                                   # lists the recipes
  testbed exp run attenuation-sweep --seed 1
  testbed exp run loss-sweep --set loss_rates=1e-4,1e-3 --set links=lg25
  testbed exp run attenuation-sweep --inventory lab.yaml --dry-run
  testbed exp run loss-sweep --inventory lab.yaml --leases etcd://etcd1:2379/lab-a --wait --wait-timeout 2h
  testbed exp run --suite suites/nightly.yaml --baseline runs/<bundle> --junit junit.xml
  testbed exp run rail-stretch --bench rail-stretch        # on a built-in bench other than the default`,
		"testbed exp rerun": `  testbed exp rerun runs/20261122T130405.123Z-attenuation-sweep-3fa9c2
  testbed exp rerun bundle.tar.gz --inventory lab.yaml`,
		"testbed inventory": `  testbed inventory check lab.yaml`,
		"testbed inventory check": `  testbed inventory check lab.yaml
  testbed inventory check lab.yaml --offline -o json`,
		"testbed lab": `  testbed lab up --inventory-out lab.yaml`,
		"testbed lab up": `  testbed lab up --inventory-out lab.yaml   # then, from another terminal:
  testbed exp run attenuation-sweep --inventory lab.yaml`,
		"testbed results": `  testbed results list --recipe loss-sweep
  testbed results show runs/<bundle>
  testbed results diff runs/<A> runs/<B>`,
		"testbed results verify": `  testbed results verify runs/<bundle>
  testbed results verify bundle.tar.gz --allowed-signers allowed_signers`,
		"testbed results show": `  testbed results show runs/<bundle>
  testbed results show bundle.tar.gz -o json`,
		"testbed results sign": `  testbed results sign runs/<bundle> --key ~/.ssh/id_ed25519`,
		"testbed results pack": `  testbed results pack runs/<bundle>`,
		"testbed results diff": `  testbed results diff runs/<A> runs/<B>
  testbed results diff runs/<A> runs/<B> --changed -o json`,
		"testbed switch":        `  testbed switch deploy sw1 sw2 --inventory lab.yaml`,
		"testbed switch deploy": `  testbed switch deploy sw1 --inventory lab.yaml`,
		"testbed voa":           `  testbed voa home voa2 --inventory lab.yaml`,
		"testbed voa home": `  testbed voa home voa2 --inventory lab.yaml          # home, then back where it stood
  testbed voa home voa2 --inventory lab.yaml --stay   # leave it at home, 0 dB`,
		"testbed version": `  testbed version -o json`,
	}
}

// extend adds what the command tree gains beyond its commands' own files:
// results list, shell completion, and the Example blocks.
func (a *app) extend(root *cobra.Command) {
	walk(root, func(c *cobra.Command) {
		if c.CommandPath() == "testbed results" {
			c.AddCommand(a.resultsListCmd())
		}
	})
	a.wireCompletion(root)
	ex := examples()
	walk(root, func(c *cobra.Command) {
		if c.Example == "" {
			c.Example = ex[c.CommandPath()]
		}
	})
}
