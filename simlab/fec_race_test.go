package simlab

import (
	"context"
	"fmt"
	"testing"
	"time"

	"testbed/dut/tofino"
	lg "testbed/p4/linkguardian"
)

// A port's FEC counters read on one connection while another advances the
// dataplane's clock: the read looks at the light on the port's fibre at
// the clock's time, which the advance moves, so it takes the dataplane's
// lock as the port status does. Under the race detector this failed while
// the read did not.
func TestFECCountersWhileTheClockMoves(t *testing.T) {
	lab := startLab(t, 41)
	if v, ok := lab.World().VOA("voa3"); ok { // lg100's, shut until opened
		for _, ch := range v.Channels {
			ch.SetShutter(true)
		}
	}
	ctx := hostTestCtx(t)
	sw1, sw2 := openSimSwitch(t, lab, "sw1"), openSimSwitch(t, lab, "sw2")
	for _, sw := range []*tofino.Switch{sw1, sw2} {
		if err := sw.StartSwitchd(ctx, lg.ProgramSender); err != nil {
			t.Fatal(err)
		}
		if err := sw.AddPort(ctx, 136, 100, "rs528"); err != nil {
			t.Fatal(err)
		}
	}
	up, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := sw2.WaitPortUp(up, 136); err != nil {
		t.Fatal(err)
	}
	reads := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		var last time.Duration
		for n := 0; ; n++ {
			select {
			case <-stop:
				if n == 0 {
					reads <- fmt.Errorf("no read while the clock moved")
					return
				}
				reads <- nil
				return
			default:
			}
			c, err := sw2.FECCounters(ctx, 136)
			if err != nil {
				reads <- err
				return
			}
			if !c.Aligned || c.Time < last {
				reads <- fmt.Errorf("read %d: aligned %v at %v after %v", n, c.Aligned, c.Time, last)
				return
			}
			last = c.Time
		}
	}()
	t0, err := sw1.Clock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 50; i++ {
		if _, err := sw1.WaitClock(ctx, t0+time.Duration(i)*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-reads; err != nil {
		t.Error(err)
	}
}
