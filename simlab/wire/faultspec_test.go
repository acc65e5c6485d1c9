package wire

import (
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
	} {
		got, err := ParseFaultSpec(in)
		if err != nil || got != want {
			t.Errorf("%q: got %+v, %v; want %+v", in, got, err, want)
		}
		if again, err := ParseFaultSpec(got.String()); err != nil || again != got {
			t.Errorf("%q: String %q reads back as %+v, %v", in, got.String(), again, err)
		}
	}
	for _, bad := range []string{"", "explode", "drop:0", "drop:-1", "drop:x", "garbage:1:2", "delay", "delay:soon", "delay:-1s", "error", "error:", "error::3"} {
		if _, err := ParseFaultSpec(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestInjectCountsAndAlways(t *testing.T) {
	f := &Faults{}
	for _, s := range []string{"drop:2", "garbage:always", "delay:5ms:1", "error:E1:2", "error:E2:always"} {
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
	f.GarbleNext(Always)
	f.Reset()
	if len(f.Pending()) != 0 || f.TakeGarble() {
		t.Errorf("after Reset: %v", f.Pending())
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
