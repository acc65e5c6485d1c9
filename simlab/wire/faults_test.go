package wire

import (
	"testing"
	"time"
)

func TestFaultsResetClearsEverything(t *testing.T) {
	f := &Faults{}
	f.mu.Lock()
	f.drop, f.stall, f.garble, f.delay = 1, 2, 3, time.Second
	f.failures = []DeviceError{{Code: 1, Message: "x"}}
	f.mu.Unlock()
	f.Reset()
	if f.TakeDrop() || f.TakeStall() || f.TakeGarble() || f.Delay() != 0 {
		t.Error("faults survive Reset")
	}
	if _, ok := f.TakeFailure(); ok {
		t.Error("a device error survives Reset")
	}
	f.Reset() // and the mutex still works
}

// A device without faults holds a nil *Faults: every question an emulator
// asks of it answers "none" rather than panic.
func TestNilFaultsAreNone(t *testing.T) {
	var f *Faults
	if f.TakeDrop() || f.TakeStall() || f.TakeGarble() || f.Delay() != 0 {
		t.Fatal("a nil *Faults reported a fault")
	}
	if _, ok := f.TakeFailure(); ok {
		t.Fatal("a nil *Faults reported a device error")
	}
}
