package fct_test

import (
	"strings"
	"testing"

	"testbed/experiments/fct"
	"testbed/inventory"
	o "testbed/orchestrator"
)

// A lab with the LinkGuardian link but no host is told, before anything
// is opened, which roles it lacks: the binder's explanation of fct's
// declared topology.
func TestPlanExplainsALabWithoutHosts(t *testing.T) {
	inv, err := inventory.Parse("lab.yaml", []byte(`version: 1
name: nohosts
devices:
  voa1: {kind: voa, driver: keysight-n77xx, address: "tcp://127.0.0.1:5025", channels: 1}
  sw1: {kind: switch, driver: tofino-bfrt, address: "ssh://root@127.0.0.1:22"}
  sw2: {kind: switch, driver: tofino-bfrt, address: "ssh://root@127.0.0.1:23"}
links:
  - {name: lg, a: {device: sw1, port: "1"}, b: {device: sw2, port: "1"}, transceiver: 25GBASE-SR, voa: {device: voa1, channel: 1}}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := fct.New()
	params, err := o.ResolveParams(r.Meta().Params, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Plan(&o.PlanContext{Params: params, Lab: inv})
	for _, want := range []string{"lab.yaml cannot serve this recipe", "role client needs a host whose driver has hostagent", "role server needs a host", "no device of kind host"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("plan: %v, want it to say %q", err, want)
		}
	}
	var buf strings.Builder
	tp := r.Meta().Topology
	if !tp.Declared() {
		t.Fatal("fct declares no topology")
	}
	tp.Print(&buf)
	for _, want := range []string{"tx-switch", "client", "with a VOA channel on it"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("exp show's requirement does not name %q:\n%s", want, buf.String())
		}
	}
}
