package suite

import "testing"

// An entry may name the built-in bench it runs on without an inventory.
func TestEntryBench(t *testing.T) {
	s, err := Parse("s.yaml", []byte("entries:\n  - recipe: fct\n    bench: rail-clos\n  - recipe: sweep\n"), registry())
	if err != nil {
		t.Fatal(err)
	}
	if s.Entries[0].Bench != "rail-clos" || s.Entries[1].Bench != "" {
		t.Errorf("benches %q, %q", s.Entries[0].Bench, s.Entries[1].Bench)
	}
}
