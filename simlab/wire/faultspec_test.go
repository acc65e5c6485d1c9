package wire

import (
	"strings"
	"testing"
	"time"
)

func TestParseFaultSpec(t *testing.T) {
	for in, want := range map[string]FaultSpec{
		"drop":                    {Kind: "drop", Count: 1},
		"drop:3":                  {Kind: "drop", Count: 3},
		"drop:always":             {Kind: "drop", Count: Always},
		"garbage:1":               {Kind: "garbage", Count: 1},
		"delay:200ms":             {Kind: "delay", Delay: 200 * time.Millisecond, Count: 1},
		"delay:2s:always":         {Kind: "delay", Delay: 2 * time.Second, Count: Always},
		"error:BF_INVALID_ARG":    {Kind: "error", Text: "BF_INVALID_ARG", Count: 1},
		"error:BF_INVALID_ARG:2":  {Kind: "error", Text: "BF_INVALID_ARG", Count: 2},
		"error:code: busy:always": {Kind: "error", Text: "code: busy", Count: Always},
		"error:a:b":               {Kind: "error", Text: "a:b", Count: 1},
		"slip:200":                {Kind: "slip", Steps: 200, Count: 1},
		"slip:1:3":                {Kind: "slip", Steps: 1, Count: 3},
		"slip:100000:always":      {Kind: "slip", Steps: 100000, Count: Always},
	} {
		got, err := ParseFaultSpec(in)
		if err != nil || got != want {
			t.Errorf("%q: got %+v, %v; want %+v", in, got, err, want)
		}
		if again, err := ParseFaultSpec(got.String()); err != nil || again != got {
			t.Errorf("%q: String %q reads back as %+v, %v", in, got.String(), again, err)
		}
	}
	for _, bad := range []string{"", "explode", "drop:0", "drop:-1", "drop:x", "garbage:1:2", "delay", "delay:soon", "delay:-1s", "error", "error:", "error::3",
		"slip", "slip:", "slip:0", "slip:-5", "slip:x", "slip:2.5", "slip:100001", "slip:200:0", "slip:200:x", "slip::3"} {
		if _, err := ParseFaultSpec(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestInjectCountsAndAlways(t *testing.T) {
	f := &Faults{}
	got := injectAll(t, f, "drop:2", "garbage:always", "delay:5ms:1", "error:E1:2", "error:E2:always")
	if want := "[drop:2 garbage:always delay:5ms:1 error:E1:2 error:E2:always]"; fmtList(got) != want {
		t.Errorf("pending %v, want %s", got, want)
	}
	if !f.TakeDrop() || !f.TakeDrop() || f.TakeDrop() {
		t.Error("drop:2 is not two drops")
	}
	for range 5 {
		if !f.TakeGarble() {
			t.Fatal("garbage:always ran out")
		}
	}
	if f.Delay() != 5*time.Millisecond || f.Delay() != 0 {
		t.Error("delay:5ms:1 is not one delayed reply")
	}
	for _, want := range []string{"E1", "E1", "E2", "E2", "E2"} {
		if e, ok := f.TakeFailure(); !ok || e.Message != want || e.Code != DeviceErrorCode {
			t.Fatalf("failure %+v %v, want %s", e, ok, want)
		}
	}
	f.DropNext(1) // added to always stays always
	slip, err := ParseFaultSpec("slip:200")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Inject(slip); err == nil || !strings.Contains(err.Error(), "no stepper motor") || len(f.Pending()) != 3 {
		t.Errorf("a slip injected on a device without a stepper: %v; pending %v", err, f.Pending())
	}
	f.GarbleNext(Always)
	f.Reset()
	if len(f.Pending()) != 0 || f.TakeGarble() {
		t.Errorf("after Reset: %v", f.Pending())
	}
}

// A slip hits motions of a stepper, as many as its count, each losing its
// steps; faults on the same motion add up; always hits every motion until
// Reset, which leaves the device a stepper.
func TestSlipCountsMotions(t *testing.T) {
	f := &Faults{}
	f.HasStepper()
	got := injectAll(t, f, "slip:200:2", "slip:50:always", "slip:7")
	if want := "[slip:207:1 slip:200:1 slip:50:always]"; fmtList(got) != want {
		t.Errorf("pending %v, want %s", got, want)
	}
	for i, want := range []int{257, 250, 50, 50} {
		if n := f.TakeSlip(); n != want {
			t.Errorf("motion %d lost %d steps, want %d", i, n, want)
		}
	}
	f.Reset()
	if n := f.TakeSlip(); n != 0 || len(f.Pending()) != 0 {
		t.Errorf("after Reset a motion lost %d steps; pending %v", n, f.Pending())
	}
	f.SlipNext(30)
	if err := f.Inject(FaultSpec{Kind: "slip", Steps: 5, Count: 1}); err != nil || f.TakeSlip() != 35 || f.TakeSlip() != 0 {
		t.Errorf("SlipNext and a slip on the same motion: %v", err)
	}
	var none *Faults
	if none.TakeSlip() != 0 {
		t.Error("no faults lose steps")
	}
}

func fmtList(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}

// injectAll parses and injects each spec into f, and returns what f then
// has pending, as specs.
func injectAll(t *testing.T, f *Faults, specs ...string) []string {
	t.Helper()
	for _, s := range specs {
		fs, err := ParseFaultSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Inject(fs); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, p := range f.Pending() {
		got = append(got, p.String())
	}
	return got
}
