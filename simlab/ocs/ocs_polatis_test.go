package ocs

import (
	"bufio"
	"net"
	"os"
	"strings"
	"testbed/simlab/world"
	"testing"
	"time"
)

func polatisLab(t *testing.T, opts PolatisOptions) (*PolatisSwitch, *PolatisServer) {
	t.Helper()
	sw := NewPolatis(world.New(1), "ocs2", opts)
	srv := NewPolatisServer(sw, nil)
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return sw, srv
}

// rawLine talks to a line-oriented SCPI port as any client would.
func rawLine(t *testing.T, rw interface {
	Read([]byte) (int, error)
	Write([]byte) (int, error)
}, setDeadline func(time.Time)) (query func(string) string, send func(string)) {
	r := bufio.NewReader(rw)
	send = func(s string) { rw.Write([]byte(s + "\n")) }
	query = func(s string) string {
		t.Helper()
		send(s)
		setDeadline(time.Now().Add(2 * time.Second))
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return strings.TrimSpace(l)
	}
	return query, send
}

func TestPolatisSCPIMapAndSwitchingTime(t *testing.T) {
	sw, srv := polatisLab(t, PolatisOptions{Ingress: 8, Egress: 8, SwitchTime: 60 * time.Millisecond})
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.Addr(), "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q, send := rawLine(t, c, func(d time.Time) { c.SetReadDeadline(d) })
	if got := q("*IDN?"); got != "Polatis,N-VST-8x8-SIM,," {
		t.Errorf("*IDN? = %q", got)
	}
	if got := q(":oxc:swit:size?"); got != "8,8" {
		t.Errorf("size = %q", got)
	}
	if got := q(":oxc:swit:conn:stat?"); got != "(@),(@)" {
		t.Errorf("empty map = %q", got)
	}
	start := time.Now()
	send(":oxc:swit:conn:only (@1,2,3),(@10,9,16)")
	if len(sw.Established()) != 0 {
		t.Error("connections established before the switching time")
	}
	if got := q("*OPC?"); got != "1" || time.Since(start) < 60*time.Millisecond {
		t.Errorf("*OPC? = %q after %v, want 1 after the 60 ms switching time", got, time.Since(start))
	}
	if e := sw.Established(); len(e) != 3 || e[2] != 9 {
		t.Errorf("established %v", e)
	}
	if got := q(":OXC:SWITch:CONNect:STATe?"); got != "(@1,2,3),(@10,9,16)" {
		t.Errorf("long-form stat = %q", got)
	}
	// The peer as the switch quotes it; "" for a port with no connection.
	if got := q(":oxc:swit:conn:port? 9;:oxc:swit:conn:port? 4"); got != `"2";""` {
		t.Errorf("port? = %q", got)
	}
	// only is exact: 1 and 3 go, 2 stays, 4 comes (egress listed first is fine too).
	send(":oxc:swit:conn:only (@9,12),(@2,4)")
	if got := q(":oxc:swit:conn:stat?"); got != "(@2,4),(@9,12)" {
		t.Errorf("after only: %q", got)
	}
	send(":oxc:swit:conn:add (@5:6),(@13:14)")
	send(":oxc:swit:conn:sub (@4),(@)")
	if got := q(":oxc:swit:conn:stat?"); got != "(@2,5,6),(@9,13,14)" {
		t.Errorf("after add and sub: %q", got)
	}
	send(":oxc:swit:port:dis (@13)")
	if got := q(":oxc:swit:port:stat? (@5,13)"); got != "(E,D)" {
		t.Errorf("port states %q", got)
	}
	q("*OPC?")
	if e := sw.Established(); len(e) != 2 || e[5] != 0 {
		t.Errorf("a circuit through a disabled port carries light: %v", e)
	}
	send(":oxc:swit:disc:all")
	if got := q(":oxc:swit:conn:stat?;:syst:err?"); got != `(@),(@);+0,"No error"` {
		t.Errorf("after disc:all: %q", got)
	}
}

func TestPolatisSCPIErrorQueue(t *testing.T) {
	_, srv := polatisLab(t, PolatisOptions{Ingress: 4, SwitchTime: time.Millisecond})
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.Addr(), "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q, send := rawLine(t, c, func(d time.Time) { c.SetReadDeadline(d) })
	send(":oxc:swit:conn:only (@1,2),(@5,5)") // egress 5 twice
	send(":oxc:swit:conn:only (@1),(@2)")     // two ingress ports
	send(":oxc:swit:conn:add (@1),(@9)")      // no port 9 on a 4x4
	send(":oxc:swit:conn:add (@1,2")
	send(":oxc:swit:conn:add")
	send(":oxc:bogus")
	for _, want := range []string{`-221,"Settings conflict"`, `-221,"Settings conflict"`, `-222,"Data out of range"`, `-102,"Syntax error"`,
		`-109,"Missing parameter"`, `-113,"Undefined header"`, `+0,"No error"`} {
		if got := q(":syst:err?"); got != want {
			t.Errorf(":syst:err? = %q, want %q", got, want)
		}
	}
	if got := q(":oxc:swit:conn:stat?"); got != "(@),(@)" {
		t.Errorf("refused commands changed the map: %q", got)
	}
	// :SYST:ERR:ALL? empties the queue in one reply.
	send(":oxc:bogus")
	send(":oxc:swit:conn:add (@1),(@9)")
	if got := q(":syst:err:all?"); got != `-113,"Undefined header",-222,"Data out of range"` {
		t.Errorf(":syst:err:all? = %q", got)
	}
}

// Replies end in CRLF, and a header after ';' is read relative to the one
// before it.
func TestPolatisSCPICRLFAndRelativeHeaders(t *testing.T) {
	sw, srv := polatisLab(t, PolatisOptions{Ingress: 4, SwitchTime: time.Millisecond})
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.Addr(), "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte(":oxc:swit:conn:add (@1),(@5);add (@2),(@6);stat?;port? 6\n"))
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	raw, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if raw != "(@1,2),(@5,6);\"2\"\r\n" {
		t.Errorf("reply %q, want the map and the quoted peer ending in CRLF", raw)
	}
	if c := sw.Connections(); c[1] != 5 || c[2] != 6 {
		t.Errorf("connections %v", c)
	}
}

func TestPolatisSCPIOnSerial(t *testing.T) {
	sw := NewPolatis(world.New(1), "ocs2", PolatisOptions{Ingress: 4, SwitchTime: time.Millisecond})
	srv := NewPolatisServer(sw, nil)
	if err := srv.StartSerial(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if !strings.HasSuffix(srv.SerialAddress(), "?baud=38400") {
		t.Errorf("address %s", srv.SerialAddress())
	}
	f, err := os.OpenFile(srv.pty.Path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	q, send := rawLine(t, f, func(d time.Time) { f.SetReadDeadline(d) })
	send(":oxc:swit:conn:only (@1,2),(@5,6)")
	if got := q("*OPC?;:oxc:swit:conn:stat?"); got != "1;(@1,2),(@5,6)" {
		t.Errorf("over the serial line: %q", got)
	}
}
