package voa

import (
	"bufio"
	"net"
	"strings"
	"testbed/simlab/world"
	"testing"
	"time"
)

// rawSCPI talks to the emulator over a plain TCP socket, as any SCPI client would.
func rawSCPI(t *testing.T) (*world.VOA, func(string) string, func(string)) {
	t.Helper()
	w := world.New(1)
	v := w.NewVOA("v", "Keysight Technologies", "N7762A", "S1", "1.0", 2, 0, 40, 1.2, 0)
	srv := NewKeysightServer(v, nil)
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.Addr(), "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); srv.Close() })
	r := bufio.NewReader(c)
	send := func(s string) { c.Write([]byte(s + "\n")) }
	query := func(s string) string {
		send(s)
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return strings.TrimSpace(l)
	}
	return v, query, send
}

func TestSCPIShortLongFormsAndChains(t *testing.T) {
	v, q, send := rawSCPI(t)
	send(":inp2:att 7.25dB")
	if got := q(":INPut2:ATTenuation?"); got != "+7.25000000E+00" {
		t.Errorf("long-form query = %q", got)
	}
	if v.Channels[1].Target() != 7.25 {
		t.Errorf("channel 2 at %v", v.Channels[1].Target())
	}
	if got := q("INP1:ATT MAX;*OPC?;:INP1:ATT?"); got != "1;+4.00000000E+01" {
		t.Errorf("chained reply = %q", got)
	}
	if got := q(":INP1:WAV 1310NM;:INP1:WAV?"); got != "+1.31000000E-06" {
		t.Errorf("wavelength = %q", got)
	}
	if got := q("*IDN?"); got != "Keysight Technologies,N7762A,S1,1.0" {
		t.Errorf("*IDN? = %q", got)
	}
	if got := q(":SYST:ERR?"); got != `+0,"No error"` {
		t.Errorf("error queue not empty: %q", got)
	}
}

func TestSCPIErrorQueue(t *testing.T) {
	_, q, send := rawSCPI(t)
	send(":INP1:ATT 41")
	send(":BOGUS:CMD 1")
	send(":INP3:ATT 1")
	for _, want := range []string{`-222,"Data out of range"`, `-113,"Undefined header"`, `-114,"Header suffix out of range"`, `+0,"No error"`} {
		if got := q(":SYST:ERR?"); got != want {
			t.Errorf("SYST:ERR? = %q, want %q", got, want)
		}
	}
	for i := 0; i < 35; i++ {
		send(":NOPE")
	}
	n := 0
	last := ""
	for {
		e := q(":SYST:ERR?")
		if strings.HasPrefix(e, "+0") {
			break
		}
		n, last = n+1, e
	}
	if n != 30 || last != `-350,"Queue overflow"` {
		t.Errorf("overflow: %d entries, last %q; want 30 ending in -350", n, last)
	}
}
