package ocs

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testbed/simlab/wire"
	"testbed/simlab/world"
	"time"

	"testbed/simlab/wire/scpi"
)

// PolatisOptions describe a simulated millisecond (beam-steering) switch.
type PolatisOptions struct {
	Vendor, Model, Serial, Firmware string
	// Ingress and Egress port counts (default 16 each): ingress ports are
	// 1..Ingress, egress ports Ingress+1..Ingress+Egress.
	Ingress, Egress int
	// SwitchTime is how long a connection takes to be made or moved
	// (default 25 ms: "milliseconds", and labs guard with 30 ms or more,
	// reference/PROTOCOLS.md). Every connection of one command switches
	// together.
	SwitchTime time.Duration
}

// PolatisSwitch is a simulated millisecond optical circuit switch: a
// cross-connect map whose changes take SwitchTime to establish.
type PolatisSwitch struct {
	Name string
	opts PolatisOptions
	now  func() time.Time

	mu      sync.Mutex
	conns   map[int]int       // ingress -> egress (switch numbering)
	changed map[int]time.Time // ingress -> when its connection was last made
	busy    time.Time         // when the last switching completes
	state   []string          // per port (index port-1): "E", "D", "F"
}

// NewPolatis adds a simulated millisecond switch to the world.
func NewPolatis(w *world.World, name string, opts PolatisOptions) *PolatisSwitch {
	if opts.Ingress <= 0 {
		opts.Ingress = 16
	}
	if opts.Egress <= 0 {
		opts.Egress = opts.Ingress
	}
	if opts.SwitchTime <= 0 {
		opts.SwitchTime = 25 * time.Millisecond
	}
	if opts.Vendor == "" {
		opts.Vendor = "Polatis"
	}
	if opts.Model == "" {
		// Polatis product codes carry the size: N-VST-<in>x<out>-...
		opts.Model = fmt.Sprintf("N-VST-%dx%d-SIM", opts.Ingress, opts.Egress)
	}
	p := &PolatisSwitch{Name: name, opts: opts, now: w.Clock(), conns: map[int]int{}, changed: map[int]time.Time{},
		state: make([]string, opts.Ingress+opts.Egress)}
	for i := range p.state {
		p.state[i] = "E"
	}
	return p
}

// Options returns the switch's description.
func (p *PolatisSwitch) Options() PolatisOptions { return p.opts }

// Connections is the commanded map, ingress -> egress (switch numbering).
func (p *PolatisSwitch) Connections() map[int]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[int]int{}
	for k, v := range p.conns {
		out[k] = v
	}
	return out
}

// Established is the connections carrying light now: made at least
// SwitchTime ago, both ports enabled.
func (p *PolatisSwitch) Established() map[int]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	out := map[int]int{}
	for in, eg := range p.conns {
		if now.Sub(p.changed[in]) >= p.opts.SwitchTime && p.state[in-1] == "E" && p.state[eg-1] == "E" {
			out[in] = eg
		}
	}
	return out
}

// SettleTime is how long until the switching under way completes.
func (p *PolatisSwitch) SettleTime() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d := p.busy.Sub(p.now()); d > 0 {
		return d
	}
	return 0
}

// SetPortState sets a port (switch numbering) to "E", "D" or "F".
func (p *PolatisSwitch) SetPortState(port int, state string) error {
	if port < 1 || port > len(p.state) || (state != "E" && state != "D" && state != "F") {
		return fmt.Errorf("%s: port %d state %q", p.Name, port, state)
	}
	p.mu.Lock()
	p.state[port-1] = state
	p.mu.Unlock()
	return nil
}

// scpiErr is an SCPI error-queue entry.
type scpiErr struct {
	code int
	text string
}

var (
	errSyntax   = scpiErr{-102, "Syntax error"}
	errMissing  = scpiErr{-109, "Missing parameter"}
	errUndef    = scpiErr{-113, "Undefined header"}
	errConflict = scpiErr{-221, "Settings conflict"}
	errRange    = scpiErr{-222, "Data out of range"}
)

// pairs turns two channel lists into ingress -> egress pairs, checking
// ranges, sides and duplicates.
func (p *PolatisSwitch) pairs(a, b []int) (map[int]int, *scpiErr) {
	if len(a) != len(b) {
		return nil, &errConflict
	}
	n, total := p.opts.Ingress, p.opts.Ingress+p.opts.Egress
	out := map[int]int{}
	used := map[int]bool{}
	for i := range a {
		x, y := a[i], b[i]
		if x < 1 || x > total || y < 1 || y > total {
			return nil, &errRange
		}
		if x > n {
			x, y = y, x
		}
		if x > n || y <= n || used[x] || used[y] {
			return nil, &errConflict
		}
		used[x], used[y] = true, true
		out[x] = y
	}
	return out, nil
}

// apply replaces the map (only) or adds to it; callers hold p.mu.
func (p *PolatisSwitch) apply(want map[int]int, only bool) *scpiErr {
	for in, eg := range want {
		if p.state[in-1] != "E" || p.state[eg-1] != "E" {
			return &errConflict
		}
	}
	if !only {
		for in, eg := range want {
			if _, busy := p.conns[in]; busy {
				return &errConflict
			}
			for _, e := range p.conns {
				if e == eg {
					return &errConflict
				}
			}
		}
	}
	now := p.now()
	moved := false
	if only {
		for in, eg := range p.conns {
			if want[in] != eg {
				delete(p.conns, in)
				delete(p.changed, in)
				moved = true
			}
		}
	}
	for in, eg := range want {
		if p.conns[in] != eg {
			p.conns[in], p.changed[in] = eg, now
			moved = true
		}
	}
	if moved {
		p.busy = now.Add(p.opts.SwitchTime)
	}
	return nil
}

func (p *PolatisSwitch) disconnectAll() {
	if len(p.conns) > 0 {
		p.busy = p.now().Add(p.opts.SwitchTime)
	}
	p.conns, p.changed = map[int]int{}, map[int]time.Time{}
}

// PolatisServer emulates a Polatis switch's SCPI interface over TCP (port
// 5025 on the real switch) and on a serial line (38400 8N1; here a
// pseudo-terminal), over a PolatisSwitch. Implemented: *IDN? *CLS *RST
// *OPC? *OPC *WAI, :SYSTem:ERRor[:NEXT]?, :OXC:SWITch:SIZE?,
// :OXC:SWITch:CONNect:ADD|ONLY|SUBtract <list>,<list>,
// :OXC:SWITch:CONNect:STATe?, :OXC:SWITch:CONNect:PORT? <port>,
// :OXC:SWITch:DISConnect:ALL, :OXC:SWITch:PORT:STATe? [<list>],
// :OXC:SWITch:PORT:DISable|ENABle <list>. Channel lists are (@1,2,3) or
// ranges (@1:3). Headers are case-insensitive in short or long form, ';'
// separates commands on a line, set commands answer nothing, and *OPC?
// answers once switching has completed. Errors go to a FIFO queue of 30
// (-102 syntax, -109 missing parameter, -113 undefined header, -221
// settings conflict: a port used twice or on the wrong side, -222 port out
// of range, -350 overflow).
type PolatisServer struct {
	sw     *PolatisSwitch
	faults *wire.Faults

	mu   sync.Mutex
	scpi *scpi.Instrument
	srv  wire.ConnServer
	pty  *wire.PTY
}

// NewPolatisServer serves sw; faults may be nil.
func NewPolatisServer(sw *PolatisSwitch, faults *wire.Faults) *PolatisServer {
	if faults == nil {
		faults = &wire.Faults{}
	}
	s := &PolatisServer{sw: sw, faults: faults}
	s.scpi = newPolatisSCPI(s)
	return s
}

// Start listens on addr (e.g. "127.0.0.1:0").
func (s *PolatisServer) Start(addr string) error {
	return s.srv.Start(addr, func(c net.Conn) { s.serveLines(c, c, true) })
}

// StartSerial serves the same interface on a pseudo-terminal.
func (s *PolatisServer) StartSerial() error {
	p, err := wire.OpenPTY()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.pty = p
	s.mu.Unlock()
	s.srv.Go(func() { s.serveLines(p.Master, p.Master, false) })
	return nil
}

// Addr is the TCP address a driver dials: tcp://127.0.0.1:port.
func (s *PolatisServer) Addr() string { return "tcp://" + s.srv.Addr() }

// SerialAddress is the serial address: serial:///dev/pts/N?baud=38400.
func (s *PolatisServer) SerialAddress() string { return "serial://" + s.pty.Path + "?baud=38400" }

// Close stops serving and waits for the server's goroutines.
func (s *PolatisServer) Close() error {
	s.mu.Lock()
	p := s.pty
	s.mu.Unlock()
	if p == nil {
		return s.srv.Close()
	}
	return s.srv.Close(p.Close)
}

type lineWriter interface{ Write([]byte) (int, error) }

// serveLines reads commands ending in LF or CR and answers them. On a
// serial line a "drop" fault means the switch stops answering, like a stall.
func (s *PolatisServer) serveLines(r interface{ Read([]byte) (int, error) }, w lineWriter, network bool) {
	br := bufio.NewReader(r)
	var line strings.Builder
	for {
		b, err := br.ReadByte()
		if err != nil {
			return
		}
		if b != '\n' && b != '\r' {
			line.WriteByte(b)
			continue
		}
		cmd := strings.TrimSpace(line.String())
		line.Reset()
		if cmd == "" {
			continue
		}
		if s.faults.TakeDrop() {
			if network {
				return
			}
			continue
		}
		stall := s.faults.TakeStall()
		replies := s.execLine(cmd)
		if stall || len(replies) == 0 {
			continue
		}
		if d := s.faults.Delay(); d > 0 {
			time.Sleep(d)
		}
		out := strings.Join(replies, ";")
		if s.faults.TakeGarble() {
			out = "\x15#\xff?garbled\x00"
		}
		// Replies end in CRLF, as the switch's do (ocs_polatis_cmds.go).
		if _, err := w.Write([]byte(out + "\r\n")); err != nil {
			return
		}
	}
}

// execLine runs one program message on the SCPI core.
func (s *PolatisServer) execLine(line string) []string {
	if r, ok := s.scpi.Exec(line); ok {
		return []string{r}
	}
	return nil
}

// lists parses "<list>,<list>".
func lists(arg string) (a, b []int, e *scpiErr) {
	if strings.TrimSpace(arg) == "" {
		return nil, nil, &errMissing
	}
	i := strings.Index(arg, ")")
	if i < 0 {
		return nil, nil, &errSyntax
	}
	rest := strings.TrimSpace(arg[i+1:])
	rest, ok := strings.CutPrefix(rest, ",")
	if !ok {
		return nil, nil, &errMissing
	}
	a, ok1 := polatisList(arg[:i+1])
	b, ok2 := polatisList(rest)
	if !ok1 || !ok2 {
		return nil, nil, &errSyntax
	}
	return a, b, nil
}

// polatisList parses an SCPI channel list (@1,2,5:7); (@) is empty.
func polatisList(s string) ([]int, bool) {
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
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a || b-a > 4096 {
				return nil, false
			}
		}
		for x := a; x <= b; x++ {
			out = append(out, x)
		}
	}
	return out, true
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
