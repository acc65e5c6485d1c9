package ocs

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"testbed/drivers"
	"testbed/transport"
)

// Polatis drives a Polatis-style millisecond OCS over SCPI, on TCP (port
// 5025) or a serial line (38400 8N1), with the Polatis command set:
//
//	*IDN?                                 Polatis,<product code>,<serial>,<firmware>
//	:oxc:swit:size?                       16,16 (ingress, egress)
//	:oxc:swit:conn:only (@1,2),(@17,18)   exact map: exactly these connections
//	:oxc:swit:disc:all                    disconnect every port
//	:oxc:swit:conn:stat?                  (@1,2),(@17,18); (@),(@) when none
//	:oxc:swit:port:stat? (@1,2,17)        (E,E,D): enabled, disabled, failed
//	*OPC?                                 1 once switching is complete
//	:syst:err?                            <code>,"<text>"; 0,"No error" when empty
//
// Ingress ports are 1..N and egress ports N+1..N+M on the switch; the
// driver's Circuit.Out counts outputs from 1 and adds N on the wire. Set
// commands answer nothing: after each one the driver waits for *OPC?,
// drains the error queue and reads the map back.
//
// Stale replies: after a timeout or an unparsable reply the connection is
// closed and the next call dials again, so a late answer to an old query is
// never taken for a new one.
type Polatis struct {
	addr string
	opts Options

	mu    sync.Mutex
	line  *transport.Line
	id    transport.Identity
	ports Ports
}

// polatisSwitchWait is how much longer than an ordinary exchange *OPC? may
// take after a setting: a Polatis switches all the connections of one
// command together, in tens of milliseconds.
const polatisSwitchWait = time.Second

// OpenPolatis connects, clears status, reads the identity and the size.
func OpenPolatis(ctx context.Context, address string, opts Options) (*Polatis, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	p := &Polatis{addr: address, opts: opts}
	p.line = transport.NewLine(address, transport.LineOptions{
		DialOptions: transport.DialOptions{EOL: "\n", Transcript: opts.Transcript},
		DialTimeout: opts.Timeout,
		Hello:       p.hello,
		DialError:   func(err error) error { return p.errorf("connect: %v", err) },
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.line.Connect(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Polatis) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{p.opts.prefix("polatis-scpi", p.addr)}, args...)...)
}

func (p *Polatis) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < p.opts.Timeout {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, p.opts.Timeout)
}

// hello greets a new connection: clears status, reads the identity and
// the size, and empties the error queue.
func (p *Polatis) hello(ctx context.Context) error {
	if err := p.send(ctx, "*CLS"); err != nil {
		return err
	}
	idn, err := p.query(ctx, "*IDN?")
	if err != nil {
		return err
	}
	parts := strings.Split(idn, ",")
	if len(parts) != 4 {
		p.drop()
		return p.errorf("*IDN? reply %q is not vendor,model,serial,firmware", idn)
	}
	p.id = transport.Identity{Vendor: strings.TrimSpace(parts[0]), Model: strings.TrimSpace(parts[1]), Serial: strings.TrimSpace(parts[2]), Firmware: strings.TrimSpace(parts[3])}
	size, err := p.query(ctx, ":oxc:swit:size?")
	if err != nil {
		return err
	}
	a, b, ok := strings.Cut(size, ",")
	n, e1 := strconv.Atoi(strings.TrimSpace(a))
	m, e2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || e1 != nil || e2 != nil || n < 1 || m < 1 {
		p.drop()
		return p.errorf(":oxc:swit:size? reply %q is not <ingress>,<egress>", size)
	}
	p.ports = Ports{Inputs: n, Outputs: m}
	return p.checkErrors(ctx, "after connect")
}

// drop closes a connection that is out of step.
func (p *Polatis) drop() { p.line.Drop() }

func (p *Polatis) send(ctx context.Context, cmd string) error {
	if err := p.line.Conn().Send(ctx, cmd); err != nil {
		p.drop()
		return p.errorf("send %q: %w", cmd, err)
	}
	return nil
}

// readReply reads one reply line; a trailing ';' (some firmware ends
// replies with one) is dropped.
func (p *Polatis) readReply(ctx context.Context, q string) (string, error) {
	line, err := p.line.Conn().ReadLine(ctx)
	if err != nil {
		p.drop()
		return "", p.errorf("%s: %w", q, err)
	}
	return strings.TrimSuffix(strings.TrimSpace(line), ";"), nil
}

func (p *Polatis) query(ctx context.Context, q string) (string, error) { return p.queryFor(ctx, q, q) }

// queryFor is query with what the reply is for, in errors.
func (p *Polatis) queryFor(ctx context.Context, q, what string) (string, error) {
	qctx, cancel := p.deadline(ctx)
	defer cancel()
	if err := p.send(qctx, q); err != nil {
		return "", err
	}
	return p.readReply(qctx, what)
}

// checkErrors drains :syst:err? and returns the first device error.
func (p *Polatis) checkErrors(ctx context.Context, doing string) error {
	var first error
	for i := 0; i < 64; i++ {
		s, err := p.query(ctx, ":syst:err?")
		if err != nil {
			return err
		}
		c, text, ok := strings.Cut(s, ",")
		code, cerr := strconv.Atoi(strings.TrimSpace(c))
		if !ok || cerr != nil {
			p.drop()
			return p.errorf(":syst:err? reply %q is not <code>,\"<text>\"", s)
		}
		if code == 0 {
			return first
		}
		if first == nil {
			first = p.errorf("%s: device error %d,%q", doing, code, strings.Trim(strings.TrimSpace(text), `"`))
		}
	}
	return p.errorf("%s: error queue does not empty", doing)
}

// retryOnDrop runs op, and once more on a new connection if the old one
// was lost under it. Only absolute operations go through here.
func (p *Polatis) retryOnDrop(ctx context.Context, op func() error) error {
	return p.line.Retry(ctx, op)
}

// Identity implements CircuitSwitch.
func (p *Polatis) Identity(ctx context.Context) (transport.Identity, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.id, nil
}

// Ports implements CircuitSwitch.
func (p *Polatis) Ports() Ports { return p.ports }

// Capabilities implements CircuitSwitch: no schedules, port states.
func (p *Polatis) Capabilities() []string { return []string{CapPortStatus} }

// channelList formats ports as an SCPI channel list: (@1,2,3).
func channelList(ports []int) string {
	s := make([]string, len(ports))
	for i, x := range ports {
		s[i] = strconv.Itoa(x)
	}
	return "(@" + strings.Join(s, ",") + ")"
}

// parseChannelList reads (@1,2,3) or (@1:3); (@) is empty.
func parseChannelList(s string) ([]int, bool) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "(@") || !strings.HasSuffix(s, ")") {
		return nil, false
	}
	body := strings.TrimSpace(s[2 : len(s)-1])
	if body == "" {
		return nil, true
	}
	var out []int
	for _, item := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(item), ":")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			return nil, false
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a {
				return nil, false
			}
		}
		for x := a; x <= b; x++ {
			out = append(out, x)
		}
	}
	return out, true
}

// SetConfiguration implements CircuitSwitch with :oxc:swit:conn:only, the
// exact-map command; an empty configuration disconnects all.
func (p *Polatis) SetConfiguration(ctx context.Context, c Configuration) error {
	doing := "set configuration " + c.String()
	if ps := c.Problems(p.ports); len(ps) > 0 {
		return p.errorf("%s: refused before sending: %s", doing, strings.Join(ps, "; "))
	}
	if len(c) == 0 {
		return p.Dark(ctx)
	}
	var ins, outs []int
	for _, x := range c.Sorted() {
		ins = append(ins, x.In)
		outs = append(outs, p.ports.Inputs+x.Out)
	}
	cmd := ":oxc:swit:conn:only " + channelList(ins) + "," + channelList(outs)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.retryOnDrop(ctx, func() error { return p.set(ctx, cmd, c, doing) })
}

// Dark implements CircuitSwitch with :oxc:swit:disc:all.
func (p *Polatis) Dark(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.retryOnDrop(ctx, func() error { return p.set(ctx, ":oxc:swit:disc:all", nil, "disconnect all") })
}

// set sends a setting, waits for *OPC?, drains the error queue and reads
// the map back.
func (p *Polatis) set(ctx context.Context, cmd string, want Configuration, doing string) error {
	sctx, cancel := p.deadline(ctx)
	err := p.send(sctx, cmd)
	cancel()
	if err != nil {
		return err
	}
	opcCtx, cancel := context.WithTimeout(ctx, p.opts.Timeout+polatisSwitchWait)
	defer cancel()
	if err := p.send(opcCtx, "*OPC?"); err != nil {
		return err
	}
	line, err := p.readReply(opcCtx, doing+": *OPC?")
	if err != nil {
		return err
	}
	if line != "1" {
		p.drop()
		return p.errorf("%s: *OPC? replied %q, expected 1", doing, line)
	}
	if err := p.checkErrors(ctx, doing); err != nil {
		return err
	}
	got, err := p.readMap(ctx, doing+": ")
	if err != nil {
		return err
	}
	if !got.Equal(want) {
		return p.errorf("%s: the switch reads back %s", doing, got)
	}
	return nil
}

// readMap reads :oxc:swit:conn:stat? as a Configuration; doing prefixes
// the query in errors.
func (p *Polatis) readMap(ctx context.Context, doing string) (Configuration, error) {
	const q = ":oxc:swit:conn:stat?"
	s, err := p.queryFor(ctx, q, doing+q)
	if err != nil {
		return nil, err
	}
	a, b, ok := strings.Cut(s, "),")
	var ins, outs []int
	if ok {
		var ok1, ok2 bool
		ins, ok1 = parseChannelList(a + ")")
		outs, ok2 = parseChannelList(b)
		ok = ok1 && ok2 && len(ins) == len(outs)
	}
	if !ok {
		p.drop()
		return nil, p.errorf("%s reply %q is not (@<ingress>),(@<egress>)", q, s)
	}
	var c Configuration
	for i := range ins {
		in, out := ins[i], outs[i]
		if in > p.ports.Inputs { // listed egress first: a connection is unordered
			in, out = out, in
		}
		if in < 1 || in > p.ports.Inputs || out <= p.ports.Inputs || out > p.ports.Inputs+p.ports.Outputs {
			p.drop()
			return nil, p.errorf("%s reply %q joins ports %d and %d, not an ingress and an egress", q, s, ins[i], outs[i])
		}
		c = append(c, Circuit{In: in, Out: out - p.ports.Inputs})
	}
	return c.Sorted(), nil
}

// Configuration implements CircuitSwitch.
func (p *Polatis) Configuration(ctx context.Context) (Configuration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var c Configuration
	err := p.retryOnDrop(ctx, func() (err error) {
		c, err = p.readMap(ctx, "")
		return err
	})
	return c, err
}

// PortStatus implements CircuitSwitch with :oxc:swit:port:stat? over
// every port and the connection map for peers.
func (p *Polatis) PortStatus(ctx context.Context) ([]PortStatus, error) {
	n, m := p.ports.Inputs, p.ports.Outputs
	all := make([]int, 0, n+m)
	for i := 1; i <= n+m; i++ {
		all = append(all, i)
	}
	q := ":oxc:swit:port:stat? " + channelList(all)
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []PortStatus
	err := p.retryOnDrop(ctx, func() error {
		s, err := p.query(ctx, q)
		if err != nil {
			return err
		}
		states := strings.Split(strings.Trim(strings.TrimSpace(s), "()"), ",")
		if len(states) != n+m {
			p.drop()
			return p.errorf(":oxc:swit:port:stat? reply %q has %d states for %d ports", s, len(states), n+m)
		}
		conf, err := p.readMap(ctx, "")
		if err != nil {
			return err
		}
		out = out[:0]
		for i, st := range states {
			var state string
			switch strings.ToUpper(strings.TrimSpace(st)) {
			case "E", "ENABLED":
				state = PortEnabled
			case "D", "DISABLED":
				state = PortDisabled
			case "F", "FAILED":
				state = PortFailed
			default:
				p.drop()
				return p.errorf(":oxc:swit:port:stat? state %q of port %d is not E, D or F", st, i+1)
			}
			ps := PortStatus{Side: Input, Port: i + 1, State: state}
			if i >= n {
				ps.Side, ps.Port = Output, i+1-n
				for _, x := range conf {
					if x.Out == ps.Port {
						ps.Peer = x.In
					}
				}
			} else {
				ps.Peer = conf.Output(ps.Port)
			}
			out = append(out, ps)
		}
		return nil
	})
	return out, err
}

// Close implements CircuitSwitch.
func (p *Polatis) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.line.Close()
}

func init() {
	register("polatis-scpi", func(ctx context.Context, address string, opts Options) (CircuitSwitch, error) {
		return OpenPolatis(ctx, address, opts)
	}, map[string]drivers.Option{
		"ports": twinOption("the ports, inputs x outputs (16x16)"), "switch_time_ms": twinOption("how long a connection takes to switch, in ms"),
	}, CapPortStatus)
}
