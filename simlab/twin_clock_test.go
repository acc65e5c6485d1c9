package simlab_test

import (
	"strings"
	"testing"

	"testbed/inventory"
	"testbed/simlab"
)

// A switch's clock_ppm beyond 802.3's +-100 ppm, or not a number, is
// refused with the inventory's file and line, the switch and what was
// expected; the fec-chain bench's switches each start on their own.
func TestTwinRefusesABadClockOffset(t *testing.T) {
	text, err := simlab.Bench("fec-chain")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"150", "fast"} {
		src := strings.Replace(string(text), `clock_ppm: "-37.5"`, `clock_ppm: "`+bad+`"`, 1)
		if src == string(text) {
			t.Fatal("the bench has no switch at -37.5 ppm to change")
		}
		inv, err := inventory.Parse("chain.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		lab, _, err := simlab.StartTwin(inv, simlab.Options{Seed: 1})
		if err == nil {
			lab.Close()
			t.Fatalf("clock_ppm %q accepted", bad)
		}
		for _, want := range []string{"chain.yaml:", "sw2", "clock_ppm", bad, "-100..100"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("clock_ppm %q: error %q does not say %q", bad, err, want)
			}
		}
	}
}
