package simlab_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"testbed/experiments/ocscharacterize"
	"testbed/experiments/reactor"
	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/simlab"
)

// A REACToR smaller than the default bench's: four hosts on ports 2..5 of
// an 8-port microsecond switch (listed out of port order), and a
// millisecond switch beside it.
const twinReactorLab = `version: 1
name: small-reactor
devices:
  fast:
    kind: ocs
    driver: mordia-rest
    address: http://192.0.2.40
    options: {ports: "8", serial: MOR424242, min_slot_us: "40", reconfig_dist: truncnormal,
              reconfig_mean_us: "12", reconfig_sd_us: "1", reconfig_min_us: "9", reconfig_max_us: "15"}
  slow:
    kind: ocs
    driver: polatis-scpi
    address: tcp://192.0.2.41:3082
    options: {ports: 8x8, switch_time_ms: "25"}
  hd:
    kind: host
    driver: linux-ssh
    address: ssh://testbed@192.0.2.54
    ports: {eth1: 10.30.0.4/24}
    options: {reactor: tor, reactor_eps_gbps: "10"}
  ha:
    kind: host
    driver: linux-ssh
    address: ssh://testbed@192.0.2.51
    ports: {eth1: 10.30.0.1/24}
    options: {reactor: tor, reactor_eps_gbps: "10"}
  hb:
    kind: host
    driver: linux-ssh
    address: ssh://testbed@192.0.2.52
    ports: {eth1: 10.30.0.2/24}
    options: {reactor: tor, reactor_eps_gbps: "10"}
  hc:
    kind: host
    driver: linux-ssh
    address: ssh://testbed@192.0.2.53
    ports: {eth1: 10.30.0.3/24}
    options: {reactor: tor, reactor_eps_gbps: "10"}
links:
  - {name: ha-fast, a: {device: ha, port: eth1}, b: {device: fast, port: "2"}, transceiver: 10GBASE-SR}
  - {name: hb-fast, a: {device: hb, port: eth1}, b: {device: fast, port: "3"}, transceiver: 10GBASE-SR}
  - {name: hc-fast, a: {device: hc, port: eth1}, b: {device: fast, port: "4"}, transceiver: 10GBASE-SR}
  - {name: hd-fast, a: {device: hd, port: eth1}, b: {device: fast, port: "5"}, transceiver: 10GBASE-SR}
`

// The twin emulates both circuit switches from their options and builds
// the REACToR of the hosts cabled to the microsecond one; the OCS and
// REACToR recipes run on it through its written inventory.
func TestTwinOfCircuitSwitchesAndAReactor(t *testing.T) {
	lab, skipped, tw := startTwin(t, twinReactorLab, "small.yaml", 9)
	dir := t.TempDir()
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	if m := lab.MicroOCS("fast"); m == nil || m.Options().Ports != 8 || m.Options().Serial != "MOR424242" {
		t.Fatalf("fast: %+v", m)
	}
	if p := lab.PolatisSwitch("slow"); p == nil || p.Options().Ingress != 8 {
		t.Fatalf("slow: %+v", p)
	}
	if lab.ReactorFabric("tor") == nil || lab.ReactorHost("hd") == nil {
		t.Fatal("no REACToR tor with host hd in the twin")
	}
	for _, n := range tw.DeviceNames() {
		if d, _ := tw.Device(n); strings.Contains(d.Address, "192.0.2.") {
			t.Errorf("twin's %s still at %s", n, d.Address)
		}
	}

	run := func(r orchestrator.Recipe, sets ...string) []byte {
		t.Helper()
		params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, sets)
		if err != nil {
			t.Fatal(err)
		}
		eng := &orchestrator.Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state")}
		res, err := eng.Run(context.Background(), orchestrator.RunRequest{Recipe: r, Params: params, Lab: tw, Simulated: true, Seed: 9})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
		if err != nil || res.Status != "ok" {
			t.Fatalf("%s: run %s (%s): %v", r.Meta().Name, res.Status, res.Reason, err)
		}
		return b
	}
	num := func(b []byte, keys ...string) map[string]float64 {
		t.Helper()
		var s map[string]any
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, k := range keys {
			v, ok := s[k].(float64)
			if !ok {
				t.Fatalf("no number %s in %s", k, b)
			}
			out[k] = v
		}
		return out
	}
	// The gaps are drawn from the switch's options (12 +- 1 us, within
	// 9..15 us), on the switch's 8 ports.
	b := run(ocscharacterize.New(), "ocs=fast", "slots=4", "slot_us=40", "periods=50", "bin_us=0.5")
	if c := num(b, "ports", "count", "missed", "mean_us", "min_us", "max_us"); c["ports"] != 8 || c["count"] != 200 || c["missed"] != 0 ||
		c["mean_us"] < 11 || c["mean_us"] > 13 || c["min_us"] < 9 || c["max_us"] > 15 {
		t.Errorf("ocs-characterize on the twin: %s", b)
	}
	// The fabric's four hosts each get nearly a 10G link's worth through
	// the circuits (duty cycle 0.94) at the switch's gaps.
	b = run(reactor.NewReconfig(), "hosts=4", "warmup=2", "periods=8", "transition=false")
	if c := num(b, "hosts", "goodput_gbps_host_min", "goodput_gbps_host_max", "reconfig_gap_us_mean", "nights"); c["hosts"] != 4 ||
		c["goodput_gbps_host_min"] < 8 || c["goodput_gbps_host_max"] > 10 || c["reconfig_gap_us_mean"] < 9 || c["reconfig_gap_us_mean"] > 15 || c["nights"] == 0 {
		t.Errorf("reactor-reconfig on the twin: %s", b)
	}
}

// A host on a REACToR must reach the fabric's microsecond switch, and the
// hosts of one REACToR must agree on their packet switch.
func TestTwinReactorMistakesAreNamed(t *testing.T) {
	for _, c := range []struct{ name, edit, repl, want string }{
		{"no switch", `{name: hd-fast, a: {device: hd, port: eth1}, b: {device: fast, port: "5"}, transceiver: 10GBASE-SR}`,
			`{name: hd-slow, a: {device: hd, port: eth1}, b: {device: slow, port: "5"}, transceiver: 10GBASE-SR}`,
			"hd: on REACToR tor, but no link of it reaches a simulated microsecond switch"},
		{"eps", `{reactor: tor, reactor_eps_gbps: "10"}
  ha:`, `{reactor: tor, reactor_eps_gbps: "5"}
  ha:`, "reactor_eps_gbps 5, where the other hosts of REACToR tor say 10"},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(twinReactorLab, c.edit, c.repl, 1)
			if text == twinReactorLab {
				t.Fatalf("edit %q did not apply", c.edit)
			}
			src := filepath.Join(t.TempDir(), "small.yaml")
			if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			inv, err := inventory.Load(src)
			if err != nil {
				t.Fatal(err)
			}
			lab, _, err := simlab.StartTwin(inv, simlab.Options{Seed: 9})
			if err == nil {
				lab.Close()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to say %q", err, c.want)
			}
		})
	}
}
