package monitor

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"testbed/inventory"
)

// randomInventory writes a small random three-tier (or two-tier) Clos lab
// as an inventory file with role options, and parses it.
func randomInventory(t *testing.T, r *rand.Rand) *inventory.Inventory {
	t.Helper()
	var b strings.Builder
	b.WriteString("version: 1\nname: corropt-test\ndevices:\n")
	counts := []int{1 + r.IntN(4), 1 + r.IntN(3), r.IntN(3)} // tor, agg, core (0 cores: agg is the top)
	roles := []string{"tor", "agg", "core"}
	var sw [3][]string
	port := 1
	for s, n := range counts {
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("%s%d", roles[s], i)
			sw[s] = append(sw[s], name)
			fmt.Fprintf(&b, "  %s: {kind: switch, driver: tofino-bfrt, address: \"ssh://admin@127.0.0.1:%d\", options: {role: %s}}\n", name, port, roles[s])
			port++
		}
	}
	b.WriteString("  tg1: {kind: trafficgen, driver: otg, address: \"http://127.0.0.1:1\"}\nlinks:\n")
	nl := 0
	link := func(a, bb string) {
		fmt.Fprintf(&b, "  - {name: l%d, a: {device: %s}, b: {device: %s}, transceiver: 25GBASE-SR}\n", nl, a, bb)
		nl++
	}
	for s := 0; s < 2; s++ {
		for _, lo := range sw[s] {
			for _, hi := range sw[s+1] {
				for k := r.IntN(3); k > 0; k-- { // 0, 1 or 2 parallel links
					link(lo, hi)
				}
			}
		}
	}
	// Noise the checker must ignore: a link to a host port and one
	// within a stage.
	link(sw[0][0], "tg1")
	if len(sw[1]) > 1 {
		link(sw[1][0], sw[1][1])
	}
	inv, err := inventory.Parse(filepath.Join(t.TempDir(), "lab.yaml"), []byte(b.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	return inv
}

// bruteFraction enumerates every up-path of every ToR to the top stage as
// a list of links and counts those that avoid the disabled links.
func bruteFraction(inv *inventory.Inventory, disabled map[string]bool) map[string]float64 {
	stage := map[string]Stage{}
	top := Stage(0)
	for n, d := range inv.Devices {
		if s, err := ParseStage(d.Options["role"]); err == nil {
			stage[n] = s
			top = max(top, s)
		}
	}
	type edge struct{ name, to string }
	up := map[string][]edge{}
	for _, l := range inv.Links {
		sa, sb := stage[l.A.Device], stage[l.B.Device]
		if sa == 0 || sb == 0 || sa == sb {
			continue
		}
		lo, hi := l.A.Device, l.B.Device
		if sa > sb {
			lo, hi = hi, lo
		}
		up[lo] = append(up[lo], edge{l.Name, hi})
	}
	var walk func(at string, path []string, out *[][]string)
	walk = func(at string, path []string, out *[][]string) {
		if stage[at] == top {
			*out = append(*out, append([]string(nil), path...))
			return
		}
		for _, e := range up[at] {
			walk(e.to, append(path, e.name), out)
		}
	}
	frac := map[string]float64{}
	for n, s := range stage {
		if s != ToR {
			continue
		}
		var all [][]string
		walk(n, nil, &all)
		alive := 0
	paths:
		for _, p := range all {
			for _, l := range p {
				if disabled[l] {
					continue paths
				}
			}
			alive++
		}
		if len(all) > 0 {
			frac[n] = float64(alive) / float64(len(all))
		}
	}
	return frac
}

func TestCorrOptCheckerAgreesWithBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 21))
	checked, refused := 0, 0
	for trial := 0; trial < 300; trial++ {
		inv := randomInventory(t, r)
		topo, err := NewTopology(inv)
		if err != nil {
			t.Fatal(err)
		}
		disabled := map[string]bool{}
		for _, l := range inv.Links {
			if topo.Has(l.Name) && r.IntN(4) == 0 {
				disabled[l.Name] = true
			}
		}
		minFrac := []float64{0.25, 0.5, 0.75}[r.IntN(3)]
		for _, l := range inv.Links {
			if !topo.Has(l.Name) || disabled[l.Name] {
				continue
			}
			ok, worst, err := topo.Check(disabled, l.Name, minFrac)
			if err != nil {
				t.Fatal(err)
			}
			with := map[string]bool{l.Name: true}
			for k := range disabled {
				with[k] = true
			}
			brute, was := bruteFraction(inv, with), bruteFraction(inv, disabled)
			wantOK := true
			for tor, f := range brute {
				if f < was[tor] && f < minFrac {
					wantOK = false
				}
			}
			if ok != wantOK {
				t.Fatalf("trial %d link %s (disabled %v, min %g): checker says %v (worst %+v), brute force %v (%v)",
					trial, l.Name, disabled, minFrac, ok, worst, wantOK, brute)
			}
			if worst.ToR != "" && worst.Fraction != brute[worst.ToR] {
				t.Fatalf("trial %d link %s: %s keeps %g, brute force %g", trial, l.Name, worst.ToR, worst.Fraction, brute[worst.ToR])
			}
			checked++
			if !ok {
				refused++
			}
		}
	}
	// The comparison must have seen both answers many times.
	if checked < 500 || refused < 50 || checked-refused < 50 {
		t.Fatalf("weak test: %d checks, %d refused", checked, refused)
	}
}

func TestTopologyRejectsBadRole(t *testing.T) {
	inv, err := inventory.Parse(filepath.Join(t.TempDir(), "lab.yaml"), []byte(`version: 1
name: x
devices:
  s1: {kind: switch, driver: tofino-bfrt, address: "ssh://admin@127.0.0.1:1", options: {role: spine}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewTopology(inv); err == nil || !strings.Contains(err.Error(), "s1") {
		t.Fatalf("err = %v", err)
	}
	topo, _ := NewTopology(&inventory.Inventory{})
	if _, _, err := topo.Check(nil, "nope", 0.5); err == nil {
		t.Fatal("unknown link accepted")
	}
}
