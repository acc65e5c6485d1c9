package ocs

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"testbed/simlab/wire/scpi"
)

// The Polatis switch's command table on the shared SCPI core. Public
// clients of the Polatis SCPI interface (lab drivers that talk to it on
// TCP 5025) show: replies end in CRLF (they strip two characters);
// :OXC:SWITch:CONNect:PORT? <port> answers the peer as a quoted string,
// "18", and "" when the port is not connected; :OXC:SWITch:CONNect:STATe?
// answers (@1,2,3),(@17,18,19). The core gives ';' chains with relative
// headers, the error queue with :SYST:ERR? and :SYST:ERR:ALL?, and the
// common commands; *OPC? answers once switching is complete (IEEE 488.2
// §12.5.3: "1" is placed in the output queue when pending operations end).

// polatisError turns the switch model's error into an error-queue entry.
func polatisError(e *scpiErr) error {
	if e == nil {
		return nil
	}
	return &scpi.Error{Code: e.code, Msg: e.text}
}

// newPolatisSCPI builds the switch's SCPI state over the server's
// switch model.
func newPolatisSCPI(s *PolatisServer) *scpi.Instrument {
	k := &polatisCmds{s: s, sw: s.sw}
	table := []scpi.Command{
		{Pattern: ":OXC:SWITch:SIZE", Get: k.size},
		{Pattern: ":OXC:SWITch:CONNect:ADD", Set: k.setting(k.connect(false))},
		{Pattern: ":OXC:SWITch:CONNect:ONLY", Set: k.setting(k.connect(true))},
		{Pattern: ":OXC:SWITch:CONNect:SUBtract", Set: k.setting(k.subtract)},
		{Pattern: ":OXC:SWITch:CONNect:STATe", Get: k.connections},
		{Pattern: ":OXC:SWITch:CONNect:PORT", Get: k.peer},
		{Pattern: ":OXC:SWITch:DISConnect:ALL", Set: k.setting(k.disconnectAll)},
		{Pattern: ":OXC:SWITch:PORT:STATe", Get: k.portStates},
		{Pattern: ":OXC:SWITch:PORT:DISable", Set: k.setting(k.setPortState("D"))},
		{Pattern: ":OXC:SWITch:PORT:ENABle", Set: k.setting(k.setPortState("E"))},
	}
	o := s.sw.opts
	return scpi.New(scpi.Config{
		IDN:   fmt.Sprintf("%s,%s,%s,%s", o.Vendor, o.Model, o.Serial, o.Firmware),
		Reset: k.reset,
		Wait: func() {
			for d := s.sw.SettleTime(); d > 0; d = s.sw.SettleTime() {
				time.Sleep(d)
			}
		},
	}, table)
}

// polatisCmds are the switch's commands over its model.
type polatisCmds struct {
	s  *PolatisServer
	sw *PolatisSwitch
}

// total is the number of ports, ingress and egress.
func (k *polatisCmds) total() int { return k.sw.opts.Ingress + k.sw.opts.Egress }

// setting runs a connection change, after an injected device error.
func (k *polatisCmds) setting(h scpi.Handler) scpi.Handler {
	return func(c *scpi.Call) (string, error) {
		if f, hit := k.s.faults.TakeFailure(); hit {
			return "", &scpi.Error{Code: f.Code, Msg: f.Message}
		}
		return h(c)
	}
}

// reset disconnects everything and enables every port.
func (k *polatisCmds) reset() {
	k.sw.mu.Lock()
	k.sw.disconnectAll()
	for i := range k.sw.state {
		k.sw.state[i] = "E"
	}
	k.sw.mu.Unlock()
}

func (k *polatisCmds) size(*scpi.Call) (string, error) {
	return fmt.Sprintf("%d,%d", k.sw.opts.Ingress, k.sw.opts.Egress), nil
}

// connect adds the connections of two port lists, or (only) makes them
// the switch's only ones.
func (k *polatisCmds) connect(only bool) scpi.Handler {
	return func(c *scpi.Call) (string, error) {
		a, b, e := lists(strings.Join(c.Args, ","))
		if e != nil {
			return "", polatisError(e)
		}
		k.sw.mu.Lock()
		defer k.sw.mu.Unlock()
		want, e := k.sw.pairs(a, b)
		if e != nil {
			return "", polatisError(e)
		}
		return "", polatisError(k.sw.apply(want, only))
	}
}

// subtract removes every connection of the listed ports.
func (k *polatisCmds) subtract(c *scpi.Call) (string, error) {
	a, b, e := lists(strings.Join(c.Args, ","))
	if e != nil {
		return "", polatisError(e)
	}
	sw := k.sw
	sw.mu.Lock()
	defer sw.mu.Unlock()
	ports := append(append([]int(nil), a...), b...)
	for _, x := range ports {
		if x < 1 || x > k.total() {
			return "", polatisError(&errRange)
		}
	}
	for _, x := range ports {
		for in, eg := range sw.conns {
			if in == x || eg == x {
				delete(sw.conns, in)
				delete(sw.changed, in)
				sw.busy = sw.now().Add(sw.opts.SwitchTime)
			}
		}
	}
	return "", nil
}

// connections answers the connections as (@ingress...),(@egress...).
func (k *polatisCmds) connections(*scpi.Call) (string, error) {
	conns := k.sw.Connections()
	var ins, egs []int
	for in := range conns {
		ins = append(ins, in)
	}
	sort.Ints(ins)
	for _, in := range ins {
		egs = append(egs, conns[in])
	}
	return "(@" + joinInts(ins) + "),(@" + joinInts(egs) + ")", nil
}

// peer answers the port a port is connected to, quoted; "" for none.
func (k *polatisCmds) peer(c *scpi.Call) (string, error) {
	if len(c.Args) == 0 {
		return "", scpi.Errorf(-109, "")
	}
	port, err := strconv.Atoi(c.Arg(0))
	if err != nil {
		return "", scpi.Errorf(-104, "%q is not a port number", c.Arg(0))
	}
	if port < 1 || port > k.total() {
		return "", polatisError(&errRange)
	}
	for in, eg := range k.sw.Connections() {
		switch port {
		case in:
			return strconv.Quote(strconv.Itoa(eg)), nil
		case eg:
			return strconv.Quote(strconv.Itoa(in)), nil
		}
	}
	return `""`, nil
}

func (k *polatisCmds) disconnectAll(*scpi.Call) (string, error) {
	k.sw.mu.Lock()
	k.sw.disconnectAll()
	k.sw.mu.Unlock()
	return "", nil
}

// portStates answers the listed ports' states (every port's without a
// list): E enabled, D disabled.
func (k *polatisCmds) portStates(c *scpi.Call) (string, error) {
	var ports []int
	if len(c.Args) == 0 {
		for i := 1; i <= k.total(); i++ {
			ports = append(ports, i)
		}
	} else {
		var ok bool
		if ports, ok = polatisList(strings.Join(c.Args, ",")); !ok {
			return "", polatisError(&errSyntax)
		}
	}
	k.sw.mu.Lock()
	defer k.sw.mu.Unlock()
	st := make([]string, 0, len(ports))
	for _, x := range ports {
		if x < 1 || x > k.total() {
			return "", polatisError(&errRange)
		}
		st = append(st, k.sw.state[x-1])
	}
	return "(" + strings.Join(st, ",") + ")", nil
}

// setPortState sets the listed ports' state.
func (k *polatisCmds) setPortState(state string) scpi.Handler {
	return func(c *scpi.Call) (string, error) {
		ports, ok := polatisList(strings.Join(c.Args, ","))
		if !ok {
			return "", polatisError(&errSyntax)
		}
		for _, x := range ports {
			if err := k.sw.SetPortState(x, state); err != nil {
				return "", polatisError(&errRange)
			}
		}
		return "", nil
	}
}
