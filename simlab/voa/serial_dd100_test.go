package voa

import (
	"bufio"
	"context"
	"os"
	"strings"
	"testbed/simlab/wire"
	"testbed/simlab/world"
	"testing"
	"time"
)

// ddSession opens the emulator's serial line as a client would and returns
// a function that sends a command and returns its reply lines before Done.
func ddSession(t *testing.T) (*world.VOAChannel, func(string) []string) {
	t.Helper()
	return ddSessionWith(t, nil)
}

// ddSessionWith is ddSession with the emulator taking faults.
func ddSessionWith(t *testing.T, faults *wire.Faults) (*world.VOAChannel, func(string) []string) {
	t.Helper()
	v := world.New(1).NewVOA("voa2", "OZ Optics", "DD-100-MC", "OZ1", "3.10", 1, 0, 55, 0.8, 0)
	srv := NewOZOpticsServer(v, faults)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	f, err := os.OpenFile(srv.Path(), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	r := bufio.NewReader(f)
	return v.Channels[0], func(cmd string) []string {
		t.Helper()
		f.Write([]byte(cmd + "\r"))
		var lines []string
		for {
			f.SetReadDeadline(time.Now().Add(3 * time.Second))
			l, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: %v after %q", cmd, err, lines)
			}
			l = strings.TrimSuffix(l, "\r\n")
			if l == "Done" {
				f.SetReadDeadline(time.Now().Add(3 * time.Second))
				if blank, err := r.ReadString('\n'); err != nil || blank != "\r\n" {
					t.Fatalf("%s: after Done %q, %v; want an empty line", cmd, blank, err)
				}
				return lines
			}
			lines = append(lines, l)
		}
	}
}

// The commands public DD-100-MC drivers use (QMI's OzOptics_DD100MC,
// COO-Utilities/ozoptics): D, S?, S<n>, S+<n>, S-<n>, F, B, RES?, L, H.
func TestDD100StepperCommands(t *testing.T) {
	ch, do := ddSession(t)
	eq := func(cmd string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s: %q, want %q", cmd, got, want)
		}
	}
	eq("A36.50", do("A36.50"), "Pos:4060")
	eq("D", do("D"), "DPos:4060", "ATTEN:36.50")
	eq("S?", do("S?"), "Pos:4060")
	eq("F", do("F"), "Pos:4061")
	eq("B", do("B"), "Pos:4060")
	eq("S+10", do("S+10"), "Pos:4070")
	eq("S-70", do("S-70"), "Pos:4000")
	eq("RES?", do("RES?"), "Pos:4000")
	eq("S1000", do("S1000"), "Pos:1000")
	if got := ch.Attenuation(); got < 8.989 || got > 8.991 {
		t.Errorf("1000 steps is %v dB, want 1000/(4060/36.5)", got)
	}
	eq("S99999", do("S99999"), "Error-6")
	eq("Sx", do("Sx"), "Error-2")
	eq("L0.80", do("L0.80"))
	eq("A1.234", do("A1.234"), "Error-2") // the device takes two decimals
	eq("A1e1", do("A1e1"), "Error-2")
	eq("H", do("H"), "Diff=0")
	eq("D", do("D"), "DPos:0", "ATTEN:0.00")
}

// An injected reply delay ends when the emulator closes: a test that set
// a long delay must not be held up by it at its cleanup. The command sets
// the attenuation, so the emulator has taken it (and its delay) once the
// channel's target moved.
func TestDD100CloseEndsAnInjectedDelay(t *testing.T) {
	v := world.New(1).NewVOA("voa2", "OZ Optics", "DD-100-MC", "OZ1", "3.10", 1, 0, 55, 0.8, 0)
	faults := &wire.Faults{}
	faults.SetDelay(time.Hour)
	srv := NewOZOpticsServer(v, faults)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(srv.Path(), os.O_RDWR, 0)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("A12.00\r")); err != nil {
		srv.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for v.Channels[0].Target() != 12 {
		if ctx.Err() != nil {
			srv.Close()
			t.Fatalf("the emulator never took A12.00: target %.2f dB", v.Channels[0].Target())
		}
		time.Sleep(time.Millisecond)
	}
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close still waiting on a reply delayed by an hour after a minute")
	}
}

// A motion that loses steps (faults.SlipNext) leaves the stepper short of
// where the device counts it: A? and S? report the count, the channel
// stands 200 steps (1.80 dB) lower after a move up; a move down that
// loses steps stops above; H runs to the home sensor and answers
// Diff=<the count's error>, and from then on the count is the stepper's.
func TestDD100LostStepsAreFoundByHoming(t *testing.T) {
	f := &wire.Faults{}
	ch, do := ddSessionWith(t, f)
	f.SlipNext(200)
	if got := do("A36.50"); strings.Join(got, "|") != "Pos:4060" {
		t.Fatalf("A36.50: %q", got)
	}
	if got := do("A?"); strings.Join(got, "|") != "Atten:36.50(dB)" {
		t.Fatalf("A? after the slip: %q, want the count's 36.50", got)
	}
	if got := do("S?"); strings.Join(got, "|") != "Pos:4060" {
		t.Fatalf("S?: %q", got)
	}
	if a := ch.Attenuation(); a < 34.69 || a > 34.71 {
		t.Fatalf("the stepper stands at %g dB, want 200 steps short of 36.50 (34.70)", a)
	}
	// A move down that loses 100 steps stops 100 steps above where the
	// count (200 ahead) puts it, 18.20 dB: the count is 100 ahead now.
	f.SlipNext(100)
	do("A20")
	if a := ch.Attenuation(); a < 19.09 || a > 19.11 {
		t.Fatalf("after a move down losing 100 steps the stepper stands at %g dB, want 19.10", a)
	}
	if got := do("H"); strings.Join(got, "|") != "Diff=100" {
		t.Fatalf("H: %q, want the count's error, Diff=100", got)
	}
	if got := do("A?"); strings.Join(got, "|") != "Atten:0.00(dB)" || ch.Attenuation() != 0 {
		t.Fatalf("after homing A? %q, the stepper at %g", got, ch.Attenuation())
	}
	do("A10")
	if got := do("A?"); strings.Join(got, "|") != "Atten:10.00(dB)" || ch.Attenuation() != 10 {
		t.Fatalf("a move after homing: A? %q, the stepper at %g", got, ch.Attenuation())
	}
}
