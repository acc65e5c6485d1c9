package voa

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"testbed/simlab/world"
	"testing"
	"time"
)

// rawSCPI talks to the emulator over a plain TCP socket, as any SCPI client would.
func rawSCPI(t *testing.T) (*world.VOA, func(string) string, func(string)) {
	t.Helper()
	return rawSCPIModel(t, "N7762A", 2, 0)
}

func rawSCPIModel(t *testing.T, model string, n int, speed float64) (*world.VOA, func(string) string, func(string)) {
	t.Helper()
	w := world.New(1)
	v := w.NewVOA("v", "Keysight Technologies", model, "S1", "1.0", n, 0, 40, 1.2, speed)
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
	write := func(s string) { c.Write([]byte(s + "\n")) }
	query := func(s string) string {
		write(s)
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return strings.TrimSpace(l)
	}
	// send returns once the instrument has run the line: *IDN? behind it
	// is answered after it.
	send := func(s string) {
		write(s)
		query("*IDN?")
	}
	return v, query, send
}

func TestSCPIShortLongFormsAndChains(t *testing.T) {
	v, q, send := rawSCPI(t)
	send(":inp3:att 7.25dB")
	if got := q(":INPut3:ATTenuation?"); got != "+7.25000000E+000" {
		t.Errorf("long-form query = %q", got)
	}
	if v.Channels[1].Target() != 7.25 {
		t.Errorf("channel 2 at %v", v.Channels[1].Target())
	}
	if got := q("INP1:ATT MAX;*OPC?;:INP1:ATT?"); got != "1;+4.00000000E+001" {
		t.Errorf("chained reply = %q", got)
	}
	if got := q(":INP1:WAV 1310NM;:INP1:WAV?"); got != "+1.31000000E-006" {
		t.Errorf("wavelength = %q", got)
	}
	// A header after ';' is read relative to the one before it.
	if got := q(":INP1:ATT 3;ATT?;WAV 1.55UM;WAV?"); got != "+3.00000000E+000;+1.55000000E-006" {
		t.Errorf("relative headers = %q", got)
	}
	if got := q("*IDN?"); got != "Keysight Technologies,N7762A,S1,1.0" {
		t.Errorf("*IDN? = %q", got)
	}
	if got := q(":SYST:ERR?"); got != `+0,"No error"` {
		t.Errorf("error queue not empty: %q", got)
	}
}

// Each attenuator answers on two slot numbers, and only the model's slots
// exist (N7744-90C, "Slot and Channel Numbers").
func TestSCPISlotsPerModel(t *testing.T) {
	for _, m := range []struct {
		model string
		n     int
	}{{"N7761A", 1}, {"N7762A", 2}, {"N7764A", 4}, {"N7766A", 2}, {"N7768A", 4}} {
		v, q, send := rawSCPIModel(t, m.model, m.n, 0)
		for slot := 1; slot <= 2*m.n; slot++ {
			send(":INP" + itoa(slot) + ":ATT " + itoa(slot))
			if got, want := v.Channels[(slot-1)/2].Target(), float64(slot); got != want {
				t.Errorf("%s slot %d: attenuator %d at %v", m.model, slot, (slot-1)/2+1, got)
			}
		}
		send(":INP" + itoa(2*m.n+1) + ":ATT 1")
		if got := q(":SYST:ERR?"); got != `-303,"Module slot empty or slot / channel invalid"` {
			t.Errorf("%s slot %d: %q", m.model, 2*m.n+1, got)
		}
		if got := q(":OUTP" + itoa(2*m.n+2) + "?;:SYST:ERR?"); got != `-303,"Module slot empty or slot / channel invalid"` {
			t.Errorf("%s query of slot %d: %q", m.model, 2*m.n+2, got)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// *OPC? answers at once: 0 while a filter moves, 1 once it has stopped.
// An *OPC? that waited for the move (IEEE 488.2's, the scpi core's
// without Pending) would answer 1: the 0 says it did not wait, where a
// bound of 200 ms of wall time on the answer failed on a loaded machine.
func TestSCPIOPCPolls(t *testing.T) {
	v, q, send := rawSCPIModel(t, "N7764A", 4, 100) // 100 dB/s: 30 dB take 300 ms
	send(":INP1:ATT 30")
	if got := q("*OPC?"); got != "0" {
		t.Fatalf("*OPC? while moving = %q, want 0 at once", got)
	}
	deadline := time.Now().Add(3 * time.Second)
	for q("*OPC?") != "1" {
		if time.Now().After(deadline) {
			t.Fatal("*OPC? never answered 1")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v.Channels[0].Attenuation() != 30 {
		t.Fatalf("done at %v dB", v.Channels[0].Attenuation())
	}
}

func TestSCPIShutterPowerUnitAndReset(t *testing.T) {
	v, q, send := rawSCPIModel(t, "N7764A", 4, 0)
	// Powered up with every shutter closed.
	if got := q(":OUTP1?;:OUTP3:STAT?;:OUTP5?;:OUTP7?"); got != "0;0;0;0" {
		t.Fatalf("shutters at power-up: %q", got)
	}
	send(":OUTP3:STAT ON")
	if !v.Channels[1].Shutter() || v.Channels[0].Shutter() {
		t.Fatal(":OUTP3:STAT ON did not open attenuator 2 alone")
	}
	// The monitor's unit is :OUTP:POW:UNIT; the :SENS form is the power meters'.
	send(":OUTP3:POW:UNIT WATT")
	if got := q(":OUTP3:POW:UN?;:OUTP1:POW:UNIT?"); got != "1;0" {
		t.Fatalf("power units: %q", got)
	}
	send(":SENS3:POW:UNIT 0")
	if got := q(":SYST:ERR?"); !strings.HasPrefix(got, "-113,") {
		t.Fatalf(":SENS:POW:UNIT on an N776xA: %q", got)
	}
	send(":INP1:WAV 1310NM;:INP1:ATT:SPE 10;:INP1:ATT 5")
	send(":NOPE")
	send("*RST")
	if got := q(":SYST:ERR?;:OUTP3?;:OUTP3:POW:UNIT?;:INP1:WAV?;:INP1:ATT:SPE?"); got != `+0,"No error";0;0;+1.55000000E-006;+0.00000000E+000` {
		t.Fatalf("after *RST: %q", got)
	}
	// *RST? is an error, not an empty line.
	send("*RST?")
	if got := q(":SYST:ERR?"); got != `-113,"Undefined header"` {
		t.Fatalf("*RST?: %q", got)
	}
	if got := q("*OPT?;*TST?;*STB?;:SYST:VERS?"); got != "0;0;0;1990.0" {
		t.Fatalf("common queries: %q", got)
	}
	if got := q(":INP1:ATT? MAX;:INP1:ATT? MIN;:INP1:ATT? DEF"); got != "+4.00000000E+001;+0.00000000E+000;+0.00000000E+000" {
		t.Fatalf("MIN|MAX|DEF: %q", got)
	}
	send(":INP1:ATT 2500MDB")
	if got := v.Channels[0].Target(); got != 2.5 {
		t.Fatalf("MDB: %v", got)
	}
}

func TestSCPIErrorQueue(t *testing.T) {
	_, q, send := rawSCPI(t)
	send(":INP1:ATT 41")
	send(":BOGUS:CMD 1")
	send(":INP5:ATT 1")
	for _, want := range []string{`-222,"Data out of range"`, `-113,"Undefined header"`, `-303,"Module slot empty or slot / channel invalid"`, `+0,"No error"`} {
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
