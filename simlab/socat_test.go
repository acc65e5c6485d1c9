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

// IEEE 488.2's mandatory *SRE/*SRE?, a parameter the header does not take,
// and *RST's speed against the DEF the instrument reports, as socat sees
// them.
func TestSocatN77xxIEEE4882(t *testing.T) {
	v := world.New(1).NewVOA("voa1", "Keysight Technologies", "N7764A", "S9", "1.0", 4, 0, 45, 1.5, 500)
	srv := voa.NewKeysightServer(v, nil)
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	got := socatSession(t, "TCP:"+strings.TrimPrefix(srv.Addr(), "tcp://"),
		"*SRE 32;*SRE?\n*SRE 255;*SRE?\n:INP1:ATT 5,6\n:SYST:ERR?\n:INP1:ATT?\n"+
			":INP1:ATT:SPE 20;SPE?\n*RST\n:INP1:ATT:SPE?;:INP1:ATT:SPE? DEF\n:INP9:ATT 1\n*SRE 4;*STB?\n*CLS;*STB?\n:SYST:ERR?\n")
	want := strings.Join([]string{
		"32",
		"191", // bit 6 of the SRE is ignored
		"-108,\"Parameter not allowed;:INP1:ATT takes at most 1 parameter(s), got 2\"",
		"+0.00000000E+000", // the command was not executed
		"+2.00000000E+001",
		"+5.00000000E+002;+5.00000000E+002", // *RST loads DEF
		"68",                                // the error queue's bit 2, and MSS (bit 6) since *SRE enables it
		"0",
		"+0,\"No error\"",
	}, "\n") + "\n"
	if got != want {
		t.Errorf("socat received\n%s\nwant\n%s", got, want)
	}
}

// The DD-100's homing answers Diff=, as the public driver waits for, and
// an attenuation with three decimals is a bad command.
func TestSocatDD100HomeAndDecimals(t *testing.T) {
	v := world.New(1).NewVOA("voa2", "OZ Optics", "DD-100-MC", "OZ1", "3.10", 1, 0, 55, 0.8, 0)
	srv := voa.NewOZOpticsServer(v, nil)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	got := socatSession(t, srv.Path()+",raw,echo=0,b9600", "A1.234\rA1.25\rH\rA?\r")
	want := "Error-2\r\nDone\r\n\r\nPos:139\r\nDone\r\n\r\nDiff=0\r\nDone\r\n\r\nAtten:0.00(dB)\r\nDone\r\n\r\n"
	if got != want {
		t.Errorf("socat received %q, want %q", got, want)
	}
}
