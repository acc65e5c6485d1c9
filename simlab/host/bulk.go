package host

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"testbed/simlab/lgmodel"
	"testbed/simlab/physics"
	"testbed/simlab/tcpmodel"
)

// Bulk TCP flows: iperf3.
//
// A simulated host runs "iperf3 -c <address> -t <seconds>|-n <bytes>
// [-i <interval>] [-C dctcp|cubic|bbr] [-J] [--get-server-output]
// [-p <port>]" as a lab
// host does for LinkGuardian's Appendix B.3 (iperf3 with -C), printing
// iperf3's own interval lines or, with -J, its JSON (esnet/iperf
// iperf_api.c: start, intervals, end; server_output_json with
// --get-server-output). With -n (--bytes, iperf3's K, M, G and T suffixes
// binary) the flow ends once the client has written that many bytes, not
// after a duration: iperf3 counts whole 128 KB writes (its default -l),
// so it ends within one block past the count, and -t and -n together
// are refused as iperf3 refuses them (iperf_api.c: "only one test end
// condition (-t, -n, -k) may be specified"). The server side needs no iperf3 -s: the
// destination is any simulated host the sender reaches across a switch
// fibre.
//
// The flow's packets come from simlab/tcpmodel over the fibre as the
// switches are configured at each moment. The flow lives in the switches'
// simulated time: it is stepped with their dataplane's clock (SwitchClock,
// wired in by the simulated lab), which moves only while a switch is
// asked to wait (dut/tofino WaitClock). So the flow starts at the clock's
// reading when the command arrives, a recipe that switches the loss or
// LinkGuardian at a time of the switch's clock changes the flow at that
// time, and the command returns once the clock has passed the flow's end.
// Meanwhile "pgrep -x iperf3" on the host lists it. What the flow puts on
// the fibre shows in the switches' port counters and queues.

// SwitchClock is the switches' simulated clock that bulk flows follow.
type SwitchClock interface {
	Now() time.Duration
	// Follow steps s with the clock until stop is called.
	Follow(s BulkStepper) (stop func())
}

// BulkStepper is a bulk flow as the switches' clock steps it.
type BulkStepper interface {
	// Step runs the flow from from to to, the fibres as paths reads them.
	Step(from, to time.Duration, paths Paths)
	// Traffic is what the flow has put on its fibre (see tofino.Follower).
	Traffic() (fibre string, total lgmodel.Result, frameBytes int, mode lgmodel.Mode, txBytes, rxBytes int64)
}

// bulkState is the host network's bulk flows.
type bulkState struct {
	mu      sync.Mutex
	clock   SwitchClock
	running map[*SimHost][]int // pids
	nextPID int
	n       uint64
}

// UseSwitchClock makes bulk flows follow the switches' clock c.
func (n *HostNet) UseSwitchClock(c SwitchClock) {
	n.bulk.mu.Lock()
	defer n.bulk.mu.Unlock()
	n.bulk.clock = c
}

// iperfArgs is an iperf3 client's command line.
type iperfArgs struct {
	dst        netip.Addr
	port       int
	secs       int
	bytes      int64 // -n: the flow ends after writing this many (0: after secs)
	timeSet    bool
	interval   float64
	cc         string
	json, srv  bool
	hostString string
}

func parseIperf(args []string) (iperfArgs, error) {
	a := iperfArgs{port: 5201, secs: 10, interval: 1, cc: "cubic"}
	client := false
	for i := 0; i < len(args); i++ {
		arg := args[i]
		val := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("option requires an argument -- '%s'", strings.TrimLeft(arg, "-"))
			}
			i++
			return args[i], nil
		}
		var v string
		var err error
		switch arg {
		case "-J", "--json":
			a.json = true
			continue
		case "--get-server-output":
			a.srv = true
			continue
		case "-s", "--server", "-D", "--daemon":
			return a, fmt.Errorf("the simulated iperf3 runs clients only (-c <address>); its server side needs no process")
		case "-c", "--client", "-t", "--time", "-n", "--bytes", "-i", "--interval", "-C", "--congestion", "-p", "--port":
			if v, err = val(); err != nil {
				return a, err
			}
		default:
			return a, fmt.Errorf("option %q is not offered by the simulated iperf3 (it takes -c, -t, -n, -i, -C, -p, -J, --get-server-output)", arg)
		}
		if err := a.set(arg, v); err != nil {
			return a, err
		}
		if arg == "-c" || arg == "--client" {
			client = true
		}
	}
	if !client {
		return a, fmt.Errorf("the simulated iperf3 runs clients only (-c <address>); its server side needs no process")
	}
	if a.timeSet && a.bytes > 0 {
		return a, fmt.Errorf("only one test end condition (-t, -n, -k) may be specified")
	}
	if a.bytes > 0 {
		a.secs = 0 // iperf3's test_start reports duration 0 for -n
	}
	switch a.cc {
	case "dctcp", "cubic", "bbr":
	default:
		return a, fmt.Errorf("-C %s: the simulated hosts offer dctcp, cubic and bbr", a.cc)
	}
	return a, nil
}

// set takes an option's value.
func (a *iperfArgs) set(arg, v string) error {
	var err error
	switch arg {
	case "-c", "--client":
		if a.dst, err = netip.ParseAddr(v); err != nil {
			return fmt.Errorf("-c %s: the simulated iperf3 expects an IPv4 address", v)
		}
		a.hostString = v
	case "-t", "--time":
		if a.secs, err = strconv.Atoi(v); err != nil || a.secs < 1 || a.secs > 86400 {
			return fmt.Errorf("-t %s: expected whole seconds from 1 to 86400", v)
		}
		a.timeSet = true
	case "-n", "--bytes":
		if a.bytes, err = iperfUnits(v); err != nil || a.bytes < 1 {
			return fmt.Errorf("-n %s: expected a count of bytes (optionally with K, M, G or T)", v)
		}
	case "-i", "--interval":
		if a.interval, err = strconv.ParseFloat(v, 64); err != nil || !(a.interval >= 0.1 && a.interval <= 60) {
			return fmt.Errorf("-i %s: report interval must be between 0.1 and 60 seconds", v)
		}
	case "-C", "--congestion":
		a.cc = v
	case "-p", "--port":
		if a.port, err = strconv.Atoi(v); err != nil || a.port < 1 || a.port > 65535 {
			return fmt.Errorf("-p %s: expected a port", v)
		}
	}
	return nil
}

// iperfUnits reads a count as iperf3's unit_atoi does: a number with an
// optional K, M, G or T (either case), each a power of 1024.
func iperfUnits(v string) (int64, error) {
	mult := 1.0
	if n := len(v); n > 0 {
		switch v[n-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		case 't', 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			v = v[:n-1]
		}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 0 && f*mult < 1<<62) {
		return 0, fmt.Errorf("%q: not a count", v)
	}
	return int64(f * mult), nil
}

// iperfBlock is iperf3's default TCP write (-l, 128 KB): with -n it counts
// bytes written a block at a time.
const iperfBlock = 128 << 10

// iperfInterval is one reporting interval of a flow.
type iperfInterval struct {
	start, end         float64 // s since the flow's start
	sent, received     int64   // payload bytes
	retransmits        int64
	cwnd               int64
	rttUS              int64
	maxTx, maxRx       int64
	pauses, linkLosses int64
}

// bulkFlow is a running iperf3 client.
type bulkFlow struct {
	h, dst   *SimHost
	fibre    string
	a        iperfArgs
	start    time.Duration // the switches' clock
	interval time.Duration
	dur      time.Duration
	base     tcpmodel.FlowConfig
	fl       *tcpmodel.Flow
	rng      *rand.Rand

	mu        sync.Mutex
	err       error
	done      chan struct{}
	closed    bool
	intervals []iperfInterval
	lastSent  int64
	lastRecv  int64
	lastRetx  int64
}

// iperf3 runs an iperf3 client (see above); limit is the run's timeout.
func (h *SimHost) iperf3(ctx context.Context, args []string, limit time.Duration, stdout, stderr io.Writer) int {
	a, err := parseIperf(args)
	if err != nil {
		fmt.Fprintf(stderr, "iperf3: parameter error - %v\n", err)
		return 1
	}
	n := h.net
	n.mu.Lock()
	dst := n.byIP[a.dst]
	var fibre string
	if dst != nil {
		fibre = n.fibres[[2]string{h.sw, dst.sw}]
	}
	n.mu.Unlock()
	n.bulk.mu.Lock()
	clock := n.bulk.clock
	n.bulk.mu.Unlock()
	switch {
	case dst == nil || dst == h:
		fmt.Fprintf(stderr, "iperf3: error - unable to connect to server - server may have stopped running or use a different port, firewall issue, etc.: No route to host (no other simulated host has %s)\n", a.dst)
		return 1
	case fibre == "":
		fmt.Fprintf(stderr, "iperf3: error - unable to connect to server: No route to host (simulated host %s on %s and %s on %s: no switch fibre joins them)\n", h.name, h.sw, dst.name, dst.sw)
		return 1
	case clock == nil:
		fmt.Fprintf(stderr, "iperf3: error - the simulated host %s has no switches' clock to run a flow on\n", h.name)
		return 1
	}
	p, err := n.path(fibre)
	if err == nil && !p.up {
		err = fmt.Errorf("link %s is down", fibre)
	}
	if err != nil {
		fmt.Fprintf(stderr, "iperf3: error - unable to connect to server: %v\n", err)
		return 1
	}
	base, err := tcpmodel.DefaultFlow(a.cc, lgmodel.Off, p.bps, 0)
	if err != nil {
		fmt.Fprintf(stderr, "iperf3: error - %v\n", err)
		return 1
	}
	base.RTOMin = h.RTOMinTo(a.dst)
	base.Sample = time.Duration(math.Round(a.interval * 1e9))
	base.HostBps = p.bps
	if base.Link, err = linkConfig(p); err != nil {
		fmt.Fprintf(stderr, "iperf3: error - %v\n", err)
		return 1
	}
	n.bulk.mu.Lock()
	n.bulk.n++
	hs := fnv.New64a()
	fmt.Fprintf(hs, "iperf3 %s>%s#%d", h.name, dst.name, n.bulk.n)
	n.bulk.mu.Unlock()
	rng := rand.New(rand.NewPCG(n.seed, hs.Sum64()))
	fl, err := tcpmodel.NewFlow(base, rng)
	if err != nil {
		fmt.Fprintf(stderr, "iperf3: error - %v\n", err)
		return 1
	}
	dur := time.Duration(a.secs) * time.Second
	if a.bytes > 0 {
		dur = 86400 * time.Second // until the bytes are written (or the command's limit)
	}
	b := &bulkFlow{h: h, dst: dst, fibre: fibre, a: a, start: clock.Now(), interval: base.Sample, dur: dur,
		base: base, fl: fl, rng: rng, done: make(chan struct{})}
	pid := n.bulk.startPID(h)
	defer n.bulk.endPID(h, pid)
	stop := clock.Follow(b)
	defer stop()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-b.done:
	case <-ctx.Done():
		fmt.Fprintln(stderr, "iperf3: interrupt - the client has terminated")
		return 1
	case <-t.C:
		return 137 // timeout -s KILL
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		fmt.Fprintf(stderr, "iperf3: error - %v\n", b.err)
		return 1
	}
	if a.json {
		out, err := json.MarshalIndent(b.report(), "", "\t")
		if err != nil {
			fmt.Fprintf(stderr, "iperf3: error - %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, string(out))
		return 0
	}
	b.text(stdout)
	return 0
}

func (s *bulkState) startPID(h *SimHost) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running == nil {
		s.running = map[*SimHost][]int{}
		s.nextPID = 4100
	}
	s.nextPID++
	s.running[h] = append(s.running[h], s.nextPID)
	return s.nextPID
}

func (s *bulkState) endPID(h *SimHost, pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.running[h][:0]
	for _, p := range s.running[h] {
		if p != pid {
			kept = append(kept, p)
		}
	}
	s.running[h] = kept
}

// pgrep answers "pgrep -x iperf3": the host's running flows.
func (h *SimHost) pgrep(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 || args[0] != "-x" {
		fmt.Fprintf(stderr, "pgrep: the simulated host %s answers only \"pgrep -x <name>\"\n", h.name)
		return 2
	}
	if args[1] != "iperf3" {
		return 1
	}
	s := &h.net.bulk
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.running[h] {
		fmt.Fprintln(stdout, p)
	}
	if len(s.running[h]) == 0 {
		return 1
	}
	return 0
}

// linkConfig is the LinkGuardian link as the path is configured now, as
// the FCT trials build it (hosts_model.go).
func linkConfig(p hostPath) (lgmodel.Config, error) {
	c, err := lgmodel.Defaults(p.mode, p.bps, 0, 0)
	if err != nil {
		return c, err
	}
	if p.mode == lgmodel.Off {
		c.Copies, c.PauseCells, c.ResumeCells, c.Backpressure = 0, 0, 0, false
		return c, nil
	}
	c.Copies = max(p.copies, 1)
	c.PauseCells, c.ResumeCells = p.pause, p.resume
	c.Backpressure = p.mode == lgmodel.Ordered && p.pause > 0 && p.resume > 0 && p.resume <= p.pause
	return c, nil
}

// Step implements BulkStepper: the flow to to, interval by interval, the
// link as paths reads it now.
func (b *bulkFlow) Step(from, to time.Duration, paths Paths) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	s, err := paths(b.fibre)
	var link tcpmodel.Link
	if err == nil {
		p := hostPath{up: s.Up, mode: s.Mode, copies: s.Copies, pause: s.Pause, resume: s.Resume, bps: s.Bps, fec: s.FEC, rxDBm: s.RxDBm, drop: s.Drop, transceiver: s.Transceiver}
		link.Loss = 1 - 1e-9 // a dark fibre or a port down loses every frame
		if p.up {
			if p.fecParams, err = physics.FECByName(s.FEC); err == nil {
				link.Loss = min(p.frameLoss(b.fl.FrameBytes()), 1-1e-9)
			}
		}
		if err == nil {
			if p.bps <= 0 {
				p.bps = b.base.HostBps
			}
			link.Config, err = linkConfig(p)
		}
	}
	for err == nil {
		at := b.fl.Now()
		next := (at/b.interval + 1) * b.interval
		until := min(to-b.start, next, b.dur)
		if b.a.bytes > 0 {
			// No further than the time the rest takes at the host's line
			// rate, nor less than one block's.
			rest := b.a.bytes - b.fl.SentBytes()
			until = min(until, at+time.Duration(float64(max(rest, iperfBlock))*8/b.base.HostBps*1e9))
		}
		if until <= at {
			break
		}
		if err = b.fl.Step(until, link); err != nil {
			break
		}
		if b.a.bytes > 0 && b.fl.SentBytes() >= b.a.bytes {
			b.dur = until
		}
		if until == next || until == b.dur {
			b.record(until)
		}
		if until == b.dur {
			b.closed = true
			close(b.done)
			return
		}
	}
	if err != nil {
		b.err = fmt.Errorf("simulated flow %s -> %s over %s: %w", b.h.name, b.dst.name, b.fibre, err)
		b.closed = true
		close(b.done)
	}
}

// record closes the interval ending at end.
func (b *bulkFlow) record(end time.Duration) {
	r := b.fl.Result()
	sent := b.fl.SentBytes()
	recv := int64(math.Round(r.GoodputBps * end.Seconds() / 8))
	start := time.Duration(len(b.intervals)) * b.interval
	iv := iperfInterval{start: start.Seconds(), end: end.Seconds(), sent: sent - b.lastSent, received: recv - b.lastRecv,
		retransmits: r.Retransmits - b.lastRetx, cwnd: int64(b.fl.Cwnd()), rttUS: b.fl.SRTT().Microseconds()}
	b.lastSent, b.lastRecv, b.lastRetx = sent, recv, r.Retransmits
	b.intervals = append(b.intervals, iv)
}

// Traffic implements BulkStepper.
func (b *bulkFlow) Traffic() (string, lgmodel.Result, int, lgmodel.Mode, int64, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	total, tx, rx, mode := b.fl.LinkCounters()
	return b.fibre, total, b.fl.FrameBytes(), mode, tx, rx
}
