package scpi

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// bench is a two-slot instrument with a value and a state per slot.
type bench struct {
	val     map[int]float64
	state   map[int]bool
	pending bool
	resets  int
	in      *Instrument
}

func newBench() *bench {
	b := &bench{val: map[int]float64{}, state: map[int]bool{}}
	lim := Limits{Min: 0, Max: 40, Def: 0}
	slot := func(c *Call) (int, error) {
		n := c.N(0)
		if n < 1 || n > 2 {
			return 0, Errorf(-114, "")
		}
		return n, nil
	}
	b.in = New(Config{
		IDN:     "ACME,X1,S1,1.0",
		Opt:     "A,B",
		Reset:   func() { b.resets++; b.val = map[int]float64{} },
		Pending: func() bool { return b.pending },
	}, []Command{
		{Pattern: ":INPut#[:CHANnel#]:ATTenuation",
			Set: func(c *Call) (string, error) {
				n, err := slot(c)
				if err != nil {
					return "", err
				}
				v, err := Number(c.Arg(0), DB, lim)
				if err != nil {
					return "", err
				}
				b.val[n] = v
				return "", nil
			},
			Get: func(c *Call) (string, error) {
				n, err := slot(c)
				if err != nil {
					return "", err
				}
				if v, ok, err := QueryLimit(c, lim); ok || err != nil {
					return Float(v), err
				}
				return Float(b.val[n]), nil
			}},
		{Pattern: ":INPut#[:CHANnel#]:WAVelength",
			Set: func(c *Call) (string, error) {
				v, err := Number(c.Arg(0), Metre, Limits{Min: 1250e-9, Max: 1650e-9, Def: 1550e-9})
				if err != nil {
					return "", err
				}
				b.val[100+c.N(0)] = v
				return "", nil
			},
			Get: func(c *Call) (string, error) { return Float(b.val[100+c.N(0)]), nil }},
		{Pattern: ":OUTPut#[:CHANnel#][:STATe]",
			Set: func(c *Call) (string, error) {
				on, err := Bool(c.Arg(0))
				b.state[c.N(0)] = on
				return "", err
			},
			Get: func(c *Call) (string, error) {
				if b.state[c.N(0)] {
					return "1", nil
				}
				return "0", nil
			}},
		{Pattern: ":STATus:OPERation:CONDition", Get: func(c *Call) (string, error) { return "+0", nil }},
	})
	return b
}

func (b *bench) q(t *testing.T, line string) string {
	t.Helper()
	r, ok := b.in.Exec(line)
	if !ok {
		t.Fatalf("%q: no reply", line)
	}
	return r
}

func (b *bench) set(t *testing.T, line string) {
	t.Helper()
	if r, ok := b.in.Exec(line); ok {
		t.Fatalf("%q: unexpected reply %q", line, r)
	}
}

func TestShortLongFormsCaseAndOptionalNodes(t *testing.T) {
	b := newBench()
	for _, line := range []string{":INP2:ATT 3", "inp2:att 3", ":INPut2:ATTenuation 3", "INPUT2:CHAN1:ATTENUATION 3", ":inp2:chan:att 3"} {
		b.val = map[int]float64{}
		b.set(t, line)
		if b.val[2] != 3 {
			t.Errorf("%q did not set slot 2: %v", line, b.val)
		}
	}
	// No suffix means 1.
	b.set(t, ":INP:ATT 4")
	if b.val[1] != 4 {
		t.Errorf(":INP:ATT did not default to slot 1: %v", b.val)
	}
	b.set(t, ":OUTP1 1;:OUTP2:STAT ON")
	if got := b.q(t, ":OUTP1?;:OUTP2:STATE?;:outp1:chan1:stat?"); got != "1;1;1" {
		t.Errorf("shutter states %q", got)
	}
	// A partial mnemonic (neither short nor long) is not a header.
	b.set(t, ":INPU2:ATT 1")
	if got := b.q(t, ":SYST:ERR?"); got != `-113,"Undefined header"` {
		t.Errorf("INPU accepted: %q", got)
	}
	// A suffix where the pattern has none is not the header either.
	b.set(t, ":INP1:ATT2 1")
	if got := b.q(t, ":SYST:ERR?"); !strings.HasPrefix(got, "-113,") {
		t.Errorf("ATT2 accepted: %q", got)
	}
}

func TestRelativeHeadersAfterSemicolon(t *testing.T) {
	b := newBench()
	// WAV is read relative to :INP2: (the node of the previous header).
	b.set(t, ":INP2:ATT 5;WAV 1310NM")
	if b.val[2] != 5 || b.val[102] < 1309.9e-9 || b.val[102] > 1310.1e-9 {
		t.Fatalf("relative header: %v", b.val)
	}
	// A common command between them does not move the current node.
	b.set(t, ":INP1:ATT 1;*CLS;ATT 2")
	if b.val[1] != 2 {
		t.Fatalf("after a common command: %v", b.val)
	}
	// A leading colon returns to the root: ":ATT" alone is undefined.
	b.set(t, ":INP1:ATT 1;:ATT 2")
	if got := b.q(t, ":SYST:ERR?"); !strings.HasPrefix(got, "-113,") || b.val[1] != 1 {
		t.Fatalf("rooted header after ';': %q, %v", got, b.val)
	}
	if got := b.q(t, ":INP1:ATT 7;ATT?;:INP2:ATT?"); got != "+7.00000000E+000;+5.00000000E+000" {
		t.Fatalf("chained queries: %q", got)
	}
}

func TestNumbersUnitsAndLimits(t *testing.T) {
	cases := []struct {
		arg   string
		units Units
		want  float64
		code  int
	}{
		{"10.5", DB, 10.5, 0},
		{"10.5dB", DB, 10.5, 0},
		{"10.5 DB", DB, 10.5, 0},
		{"2500MDB", DB, 2.5, 0},
		{"MAX", DB, 40, 0},
		{"min", DB, 0, 0},
		{"DEF", DB, 0, 0},
		{"1.55E-06", Metre, 1.55e-6, 0},
		{"1550NM", Metre, 1550e-9, 0},
		{"1.31UM", Metre, 1.31e-6, 0},
		{"41", DB, 0, -222},
		{"-1", DB, 0, -222},
		{"abc", DB, 0, -104},
		{"3XB", DB, 0, -131},
		{"", DB, 0, -109},
	}
	for _, c := range cases {
		lim := Limits{0, 40, 0}
		if c.units["NM"] != 0 {
			lim = Limits{1e-6, 2e-6, 1.55e-6}
		}
		v, err := Number(c.arg, c.units, lim)
		if c.code != 0 {
			e, ok := err.(*Error)
			if !ok || e.Code != c.code {
				t.Errorf("Number(%q) = %v, %v; want error %d", c.arg, v, err, c.code)
			}
			continue
		}
		if err != nil || v < c.want*(1-1e-12)-1e-18 || v > c.want*(1+1e-12)+1e-18 {
			t.Errorf("Number(%q) = %v, %v; want %v", c.arg, v, err, c.want)
		}
	}
	b := newBench()
	if got := b.q(t, ":INP1:ATT? MAX;:INP1:ATT? MIN;:INP1:ATT? DEF"); got != "+4.00000000E+001;+0.00000000E+000;+0.00000000E+000" {
		t.Errorf("MIN|MAX|DEF queries: %q", got)
	}
	b.in.Exec(":INP1:ATT? BOGUS")
	if got := b.q(t, ":SYST:ERR?"); !strings.HasPrefix(got, "-224,") {
		t.Errorf("bad query argument: %q", got)
	}
}

func TestFloatFormat(t *testing.T) {
	for v, want := range map[float64]string{1.55e-6: "+1.55000000E-006", 14: "+1.40000000E+001", -80: "-8.00000000E+001", 0: "+0.00000000E+000"} {
		if got := Float(v); got != want {
			t.Errorf("Float(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestErrorQueue(t *testing.T) {
	b := newBench()
	b.set(t, ":INP1:ATT 41")
	b.set(t, ":BOGUS:CMD 1")
	b.set(t, ":INP3:ATT 1")
	b.set(t, ":OUTP1 maybe")
	for _, want := range []string{`-222,"Data out of range"`, `-113,"Undefined header"`, `-114,"Header suffix out of range"`, `-224,"Illegal parameter value;expected 0, 1, OFF or ON"`, `+0,"No error"`} {
		if got := b.q(t, ":SYST:ERR?"); got != want {
			t.Errorf(":SYST:ERR? = %q, want %q", got, want)
		}
	}
	// :SYST:ERR:ALL? empties the queue in one reply.
	b.set(t, ":INP1:ATT 41")
	b.set(t, ":NOPE")
	if got := b.q(t, ":SYSTem:ERRor:ALL?"); got != `-222,"Data out of range",-113,"Undefined header"` {
		t.Errorf(":SYST:ERR:ALL? = %q", got)
	}
	if got := b.q(t, ":SYST:ERR:ALL?"); got != `+0,"No error"` {
		t.Errorf("empty :SYST:ERR:ALL? = %q", got)
	}
	// Overflow: 30 entries, the last replaced by -350.
	for i := 0; i < 35; i++ {
		b.set(t, ":NOPE")
	}
	if got := b.q(t, ":SYST:ERR:COUN?"); got != "30" {
		t.Errorf("count %q", got)
	}
	all := b.q(t, ":SYST:ERR:ALL?")
	if n := strings.Count(all, "-113,"); n != 29 || !strings.HasSuffix(all, `-350,"Queue overflow"`) {
		t.Errorf("overflow: %d x -113, %q", n, all[len(all)-30:])
	}
	// A command error discards the rest of the message.
	b.val[1] = 0
	b.set(t, ":NOPE;:INP1:ATT 9")
	if b.val[1] != 0 {
		t.Error("the unit after a command error was executed")
	}
	b.in.Exec("*CLS")
	// An execution error does not.
	b.set(t, ":INP1:ATT 99;:INP1:ATT 9")
	if b.val[1] != 9 {
		t.Error("the unit after an execution error was not executed")
	}
}

func TestCommonCommands(t *testing.T) {
	b := newBench()
	if got := b.q(t, "*IDN?"); got != "ACME,X1,S1,1.0" {
		t.Errorf("*IDN? %q", got)
	}
	if got := b.q(t, "*OPT?;*TST?"); got != "A,B;0" {
		t.Errorf("*OPT?;*TST? %q", got)
	}
	// Power-on bit first, then cleared by reading.
	if got := b.q(t, "*ESR?"); got != "128" {
		t.Errorf("first *ESR? %q", got)
	}
	if got := b.q(t, "*ESR?"); got != "0" {
		t.Errorf("second *ESR? %q", got)
	}
	b.set(t, ":NOPE")
	b.set(t, "*ESE 32")
	if got := b.q(t, "*STB?;*ESE?"); got != "36;32" {
		t.Errorf("*STB?;*ESE? after a command error: %q", got)
	}
	if got := b.q(t, "*ESR?"); got != "32" {
		t.Errorf("*ESR? after a command error: %q", got)
	}
	// *OPC? answers at once: 0 while pending, 1 when done.
	b.pending = true
	if got := b.q(t, "*OPC?"); got != "0" {
		t.Errorf("*OPC? while pending %q", got)
	}
	b.pending = false
	if got := b.q(t, "*OPC?"); got != "1" {
		t.Errorf("*OPC? when done %q", got)
	}
	// *RST clears the queue and resets the instrument; *RST? is an error.
	b.set(t, ":NOPE")
	b.set(t, "*RST")
	if b.resets != 1 {
		t.Errorf("*RST ran Reset %d times", b.resets)
	}
	if got := b.q(t, ":SYST:ERR?"); got != `+0,"No error"` {
		t.Errorf("*RST left the queue: %q", got)
	}
	if r, ok := b.in.Exec("*RST?"); ok {
		t.Errorf("*RST? replied %q", r)
	}
	if got := b.q(t, ":SYST:ERR?"); !strings.HasPrefix(got, "-113,") {
		t.Errorf("*RST?: %q", got)
	}
	if b.resets != 1 {
		t.Error("*RST? reset the instrument")
	}
	b.set(t, "*CLS")
	if got := b.q(t, "*STB?;*ESR?"); got != "0;0" {
		t.Errorf("after *CLS: %q", got)
	}
}

func TestQueryOnlyAndSetOnly(t *testing.T) {
	b := newBench()
	b.set(t, ":STAT:OPER:COND 1")
	if got := b.q(t, ":SYST:ERR?"); !strings.HasPrefix(got, "-113,") {
		t.Errorf("set form of a query-only header: %q", got)
	}
	if got := b.q(t, ":STATus:OPERation:CONDition?"); got != "+0" {
		t.Errorf("query-only header: %q", got)
	}
}

func TestBadPatternPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a malformed pattern was accepted")
		}
	}()
	New(Config{}, []Command{{Pattern: ":inp[:chan"}})
}

func ExampleInstrument_Exec() {
	in := New(Config{IDN: "ACME,X1,S1,1.0"}, nil)
	r, _ := in.Exec("*IDN?;:SYST:ERR?")
	fmt.Println(r)
	// Output: ACME,X1,S1,1.0;+0,"No error"
}

// Without a Pending report, *OPC? waits for the operations to finish and
// then answers 1 (IEEE 488.2 §12.5.3).
func TestOPCQueryWaitsWithoutPending(t *testing.T) {
	waited := 0
	in := New(Config{Wait: func() { waited++ }}, nil)
	if r, ok := in.Exec("*OPC?"); !ok || r != "1" || waited != 1 {
		t.Fatalf("*OPC? = %q, waited %d times", r, waited)
	}
}

// FuzzExec: no program message makes the core panic, answer a line with a
// terminator inside it, or grow its error queue past its bound.
func FuzzExec(f *testing.F) {
	for _, s := range []string{"*IDN?", ":INP1:ATT 3;ATT?;WAV 1310NM", ":SYST:ERR:ALL?", "*RST?", ":inp9:chan2:att? MAX", "\"a;b\";'c'", ":OUTP1:STAT ON;:OUTP1?", "::;;", ":INP99999999999999999999:ATT 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		b := newBench()
		for i := 0; i < 40; i++ {
			r, _ := b.in.Exec(line)
			if strings.ContainsAny(r, "\n") && !strings.Contains(line, "\n") {
				t.Fatalf("%q answered %q", line, r)
			}
		}
		n, _ := b.in.Exec(":SYST:ERR:COUN?")
		if c, err := strconv.Atoi(n); err != nil || c > 30 {
			t.Fatalf("%q: error queue count %q", line, n)
		}
	})
}
