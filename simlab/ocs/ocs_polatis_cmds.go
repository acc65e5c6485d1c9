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

func newPolatisSCPI(s *PolatisServer) *scpi.Instrument {
	sw := s.sw
	total := func() int { return sw.opts.Ingress + sw.opts.Egress }
	// setting runs a connection change, after an injected device error.
	setting := func(h scpi.Handler) scpi.Handler {
		return func(c *scpi.Call) (string, error) {
			if f, hit := s.faults.TakeFailure(); hit {
				return "", &scpi.Error{Code: f.Code, Msg: f.Message}
			}
			return h(c)
		}
	}
	connect := func(only bool) scpi.Handler {
		return setting(func(c *scpi.Call) (string, error) {
			a, b, e := lists(strings.Join(c.Args, ","))
			if e != nil {
				return "", polatisError(e)
			}
			sw.mu.Lock()
			defer sw.mu.Unlock()
			want, e := sw.pairs(a, b)
			if e != nil {
				return "", polatisError(e)
			}
			return "", polatisError(sw.apply(want, only))
		})
	}
	table := []scpi.Command{
		{Pattern: ":OXC:SWITch:SIZE", Get: func(*scpi.Call) (string, error) {
			return fmt.Sprintf("%d,%d", sw.opts.Ingress, sw.opts.Egress), nil
		}},
		{Pattern: ":OXC:SWITch:CONNect:ADD", Set: connect(false)},
		{Pattern: ":OXC:SWITch:CONNect:ONLY", Set: connect(true)},
		{Pattern: ":OXC:SWITch:CONNect:SUBtract", Set: setting(func(c *scpi.Call) (string, error) {
			a, b, e := lists(strings.Join(c.Args, ","))
			if e != nil {
				return "", polatisError(e)
			}
			sw.mu.Lock()
			defer sw.mu.Unlock()
			ports := append(append([]int(nil), a...), b...)
			for _, x := range ports {
				if x < 1 || x > total() {
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
		})},
		{Pattern: ":OXC:SWITch:CONNect:STATe", Get: func(*scpi.Call) (string, error) {
			conns := sw.Connections()
			var ins, egs []int
			for in := range conns {
				ins = append(ins, in)
			}
			sort.Ints(ins)
			for _, in := range ins {
				egs = append(egs, conns[in])
			}
			return "(@" + joinInts(ins) + "),(@" + joinInts(egs) + ")", nil
		}},
		{Pattern: ":OXC:SWITch:CONNect:PORT", Get: func(c *scpi.Call) (string, error) {
			if len(c.Args) == 0 {
				return "", scpi.Errorf(-109, "")
			}
			port, err := strconv.Atoi(c.Arg(0))
			if err != nil {
				return "", scpi.Errorf(-104, "%q is not a port number", c.Arg(0))
			}
			if port < 1 || port > total() {
				return "", polatisError(&errRange)
			}
			for in, eg := range sw.Connections() {
				switch port {
				case in:
					return strconv.Quote(strconv.Itoa(eg)), nil
				case eg:
					return strconv.Quote(strconv.Itoa(in)), nil
				}
			}
			return `""`, nil
		}},
		{Pattern: ":OXC:SWITch:DISConnect:ALL", Set: setting(func(*scpi.Call) (string, error) {
			sw.mu.Lock()
			sw.disconnectAll()
			sw.mu.Unlock()
			return "", nil
		})},
		{Pattern: ":OXC:SWITch:PORT:STATe", Get: func(c *scpi.Call) (string, error) {
			var ports []int
			if len(c.Args) == 0 {
				for i := 1; i <= total(); i++ {
					ports = append(ports, i)
				}
			} else {
				var ok bool
				if ports, ok = polatisList(strings.Join(c.Args, ",")); !ok {
					return "", polatisError(&errSyntax)
				}
			}
			sw.mu.Lock()
			defer sw.mu.Unlock()
			st := make([]string, 0, len(ports))
			for _, x := range ports {
				if x < 1 || x > total() {
					return "", polatisError(&errRange)
				}
				st = append(st, sw.state[x-1])
			}
			return "(" + strings.Join(st, ",") + ")", nil
		}},
	}
	portState := func(state string) scpi.Handler {
		return setting(func(c *scpi.Call) (string, error) {
			ports, ok := polatisList(strings.Join(c.Args, ","))
			if !ok {
				return "", polatisError(&errSyntax)
			}
			for _, x := range ports {
				if err := sw.SetPortState(x, state); err != nil {
					return "", polatisError(&errRange)
				}
			}
			return "", nil
		})
	}
	table = append(table,
		scpi.Command{Pattern: ":OXC:SWITch:PORT:DISable", Set: portState("D")},
		scpi.Command{Pattern: ":OXC:SWITch:PORT:ENABle", Set: portState("E")},
	)
	o := sw.opts
	return scpi.New(scpi.Config{
		IDN: fmt.Sprintf("%s,%s,%s,%s", o.Vendor, o.Model, o.Serial, o.Firmware),
		Reset: func() {
			sw.mu.Lock()
			sw.disconnectAll()
			for i := range sw.state {
				sw.state[i] = "E"
			}
			sw.mu.Unlock()
		},
		Wait: func() {
			for d := sw.SettleTime(); d > 0; d = sw.SettleTime() {
				time.Sleep(d)
			}
		},
	}, table)
}
