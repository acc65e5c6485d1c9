package simlab

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testbed/simlab/voa"
	"testbed/simlab/world"
	"testing"
	"time"
)

// socatSession runs socat, a client nobody here wrote, with stdin as what
// it sends, and returns what it received.
func socatSession(t *testing.T, address, stdin string) string {
	t.Helper()
	path, err := exec.LookPath("socat")
	if err != nil {
		t.Skip("socat is not installed (apt-get install socat): the emulators' third-party client check is skipped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// -t 0.5: after stdin ends, wait half a second for the last replies.
	cmd := exec.CommandContext(ctx, path, "-t", "0.5", "-", address)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("socat %s: %v\n%s", address, err, errb.String())
	}
	return out.String()
}

func TestSocatTalksToTheN77xx(t *testing.T) {
	v := world.New(1).NewVOA("voa1", "Keysight Technologies", "N7764A", "S9", "1.0", 4, 0, 45, 1.5, 0)
	srv := voa.NewKeysightServer(v, nil)
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	got := socatSession(t, "TCP:"+strings.TrimPrefix(srv.Addr(), "tcp://"),
		"*IDN?\n:INP3:ATT 5;ATT?;:OUTP3 1;:OUTP3?\n:INP9:ATT 1\n:SYST:ERR:ALL?\n")
	want := "Keysight Technologies,N7764A,S9,1.0\n+5.00000000E+000;1\n-303,\"Module slot empty or slot / channel invalid\"\n"
	if got != want {
		t.Errorf("socat received %q, want %q", got, want)
	}
	if v.Channels[1].Target() != 5 || !v.Channels[1].Shutter() {
		t.Errorf("attenuator 2 at %v dB, shutter open %v", v.Channels[1].Target(), v.Channels[1].Shutter())
	}
}

func TestSocatTalksToTheDD100OverItsSerialLine(t *testing.T) {
	v := world.New(1).NewVOA("voa2", "OZ Optics", "DD-100-MC", "OZ1", "3.10", 1, 0, 55, 0.8, 0)
	srv := voa.NewOZOpticsServer(v, nil)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	got := socatSession(t, srv.Path()+",raw,echo=0,b9600", "A12.25\rA?\r")
	want := "Pos:1363\r\nDone\r\n\r\nAtten:12.25(dB)\r\nDone\r\n\r\n"
	if got != want {
		t.Errorf("socat received %q, want %q", got, want)
	}
}
