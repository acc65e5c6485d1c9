package simlab

import (
	"bytes"
	"strings"
	"testing"
)

// benches/default.yaml is the default bench the running lab is built as:
// the same devices, ports, options and links as the bench the lab's code
// starts, with that code's placeholder addresses.
func TestDefaultBenchFile(t *testing.T) {
	built, err := placeholderInventory()
	if err != nil {
		t.Fatal(err)
	}
	want, err := built.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DefaultInventory().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("benches/default.yaml differs from the bench the simulated lab starts; it should read:\n%s", want)
	}
	if len(DefaultInventory().DeviceNames()) < 10 {
		t.Errorf("default bench has only %v", DefaultInventory().DeviceNames())
	}
}

func TestBenchNames(t *testing.T) {
	if names := BenchNames(); len(names) == 0 || names[0] != "default" {
		t.Errorf("benches %v", names)
	}
	if _, err := Bench("nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "default") {
		t.Errorf("unknown bench: %v", err)
	}
}
