package ocs_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"testbed/instruments/ocs"
	simocs "testbed/simlab/ocs"
	"testbed/simlab/wire"
	"testbed/simlab/world"
	"testbed/transport"
)

// polatisLab starts a 16x16 millisecond switch on TCP or on a pty.
func polatisLab(t *testing.T, serial bool) (*simocs.PolatisSwitch, *wire.Faults, string) {
	t.Helper()
	sw := simocs.NewPolatis(world.New(1), "ocs2", simocs.PolatisOptions{Serial: "PX001", Firmware: "6.5.2", Ingress: 16, SwitchTime: 20 * time.Millisecond})
	f := &wire.Faults{}
	srv := simocs.NewPolatisServer(sw, f)
	var err error
	if serial {
		err = srv.StartSerial()
	} else {
		err = srv.Start("127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if serial {
		return sw, f, srv.SerialAddress()
	}
	return sw, f, srv.Addr()
}

func openPolatis(t *testing.T, addr string, timeout time.Duration) (*ocs.Polatis, *syncBuf) {
	t.Helper()
	buf := &syncBuf{}
	p, err := ocs.OpenPolatis(context.Background(), addr, ocs.Options{Name: "ocs2", Timeout: timeout, Transcript: transport.NewTranscript(buf)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, buf
}

func TestPolatisSetsReadsAndDarksOverTCPAndSerial(t *testing.T) {
	for _, serial := range []bool{false, true} {
		name := "tcp"
		if serial {
			name = "pty"
		}
		t.Run(name, func(t *testing.T) {
			sw, _, addr := polatisLab(t, serial)
			p, tr := openPolatis(t, addr, 2*time.Second)
			ctx := context.Background()
			id, _ := p.Identity(ctx)
			if id.Vendor != "Polatis" || id.Model != "N-VST-16x16-SIM" || id.Serial != "PX001" || p.Ports() != (ocs.Ports{16, 16}) {
				t.Fatalf("identity %+v ports %v", id, p.Ports())
			}
			if _, err := ocs.AsScheduler(p); !errors.Is(err, ocs.ErrUnsupported) {
				t.Fatalf("a millisecond switch offers schedules: %v", err)
			}
			want := ocs.Configuration{{1, 2}, {2, 1}, {5, 16}}
			start := time.Now()
			if err := p.SetConfiguration(ctx, want); err != nil {
				t.Fatal(err)
			}
			// Returned after *OPC?: the 20 ms switching is over and light passes.
			if time.Since(start) < 20*time.Millisecond || len(sw.Established()) != 3 {
				t.Fatalf("returned after %v with %v established", time.Since(start), sw.Established())
			}
			if c := sw.Connections(); c[1] != 18 || c[2] != 17 || c[5] != 32 {
				t.Fatalf("switch map %v: egress ports are 17..32", c)
			}
			if !strings.Contains(tr.String(), "> :oxc:swit:conn:only (@1,2,5),(@18,17,32)") || !strings.Contains(tr.String(), "> *OPC?") {
				t.Errorf("transcript:\n%s", tr)
			}
			got, err := p.Configuration(ctx)
			if err != nil || !got.Equal(want) {
				t.Fatalf("read back %v, %v", got, err)
			}
			// The exact map replaces, it does not add.
			if err := p.SetConfiguration(ctx, ocs.Configuration{{3, 3}}); err != nil {
				t.Fatal(err)
			}
			if c := sw.Connections(); len(c) != 1 || c[3] != 19 {
				t.Fatalf("after a second map: %v", c)
			}
			sw.SetPortState(19, "F")
			ps, err := p.PortStatus(ctx)
			if err != nil || len(ps) != 32 {
				t.Fatalf("port status %v %v", ps, err)
			}
			if ps[2] != (ocs.PortStatus{Side: ocs.Input, Port: 3, State: ocs.PortEnabled, Peer: 3}) || ps[18] != (ocs.PortStatus{Side: ocs.Output, Port: 3, State: ocs.PortFailed, Peer: 3}) {
				t.Fatalf("port 3: %+v / %+v", ps[2], ps[18])
			}
			if err := p.Dark(ctx); err != nil {
				t.Fatal(err)
			}
			if len(sw.Connections()) != 0 {
				t.Fatalf("dark switch holds %v", sw.Connections())
			}
		})
	}
}

func TestPolatisRefusesBeforeSendingAndSurfacesDeviceErrors(t *testing.T) {
	sw, faults, addr := polatisLab(t, false)
	p, tr := openPolatis(t, addr, time.Second)
	ctx := context.Background()
	err := p.SetConfiguration(ctx, ocs.Configuration{{1, 4}, {17, 5}, {2, 4}})
	if err == nil || !strings.HasPrefix(err.Error(), "ocs2 (polatis-scpi tcp://") || !strings.Contains(err.Error(), "input 17 does not exist (inputs 1..16)") ||
		!strings.Contains(err.Error(), "output 4 is used twice (by inputs 1 and 2)") {
		t.Fatalf("bad map: %v", err)
	}
	if strings.Contains(tr.String(), "conn:only") {
		t.Fatal("a refused map reached the switch")
	}
	faults.FailNext(-240, "Hardware error; port 7 actuator")
	err = p.SetConfiguration(ctx, ocs.Configuration{{7, 7}})
	if err == nil || !strings.Contains(err.Error(), `set configuration 7->7: device error -240,"Hardware error; port 7 actuator"`) {
		t.Fatalf("device error: %v", err)
	}
	if len(sw.Connections()) != 0 {
		t.Fatal("the failed command changed the map")
	}
	// The queue was drained: the next setting succeeds.
	if err := p.SetConfiguration(ctx, ocs.Configuration{{7, 7}}); err != nil {
		t.Fatalf("after a device error: %v", err)
	}
	// A disabled port makes the switch refuse: the error comes from its queue.
	sw.SetPortState(8, "D")
	if err := p.SetConfiguration(ctx, ocs.Configuration{{8, 1}}); err == nil || !strings.Contains(err.Error(), `-221,"Settings conflict"`) {
		t.Fatalf("disabled port: %v", err)
	}
}

func TestPolatisStopsAnsweringAndComesBack(t *testing.T) {
	_, faults, addr := polatisLab(t, false)
	p, tr := openPolatis(t, addr, 300*time.Millisecond)
	ctx := context.Background()
	// The map command and the *OPC? after it go unanswered.
	faults.StallNext(2)
	start := time.Now()
	err := p.SetConfiguration(ctx, ocs.Shift(16, 1))
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "ocs2 (polatis-scpi "+addr+")") {
		t.Fatalf("stalled switch: %v", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatalf("took %v: the deadline was not honoured", time.Since(start))
	}
	// The connection was out of step: the next call redials and works.
	if err := p.Dark(ctx); err != nil {
		t.Fatalf("after a stall: %v", err)
	}
	faults.DropNext(1)
	if _, err := p.Configuration(ctx); err != nil {
		t.Fatalf("a read across one dropped connection: %v", err)
	}
	if !strings.Contains(tr.String(), "reconnecting") {
		t.Error("transcript does not say it reconnected")
	}
	faults.GarbleNext(1)
	if _, err := p.Configuration(ctx); err == nil || !strings.Contains(err.Error(), "is not (@<ingress>),(@<egress>)") {
		t.Fatalf("garbled: %v", err)
	}
	if !slices.Contains(p.Capabilities(), ocs.CapPortStatus) || slices.Contains(p.Capabilities(), ocs.CapSchedule) {
		t.Errorf("capabilities %v", p.Capabilities())
	}
}
