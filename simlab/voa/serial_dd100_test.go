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
	v := world.New(1).NewVOA("voa2", "OZ Optics", "DD-100-MC", "OZ1", "3.10", 1, 0, 55, 0.8, 0)
	srv := NewOZOpticsServer(v, nil)
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
