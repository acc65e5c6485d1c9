package host

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"testbed/simlab/lgmodel"
	"testbed/simlab/physics"
)

// HostNet is the data-plane network of the simulated hosts. Each host hangs
// off a simulated switch; traffic from a host on one switch to a host on
// another crosses the switch fibre Route names, with whatever that fibre
// does at that moment in the Dataplane: its loss rate from the optics (the
// VOA's attenuation) and the sender's loss-emulation table, and the
// LinkGuardian protection mode and copies the two switches' programs are
// configured with. The cables from the hosts to their switches and the
// reverse direction of the fibre are not modelled (lossless).
//
// The network carries the hostagent's FCT traffic (hostagent/API.md: a
// request whose first eight bytes say its size and the response's, answered
// by a response of that size). It is not a packet emulator: when a client
// has written a whole request, the transport model (simlab/fctmodel)
// computes that trial from the path's state, the sending host's route
// (rto_min) and sysctls (tail loss probe, SACK, RACK): its flow completion
// time and the retransmissions it took. The client host's simulated clock
// moves by that time before the request reaches the server, so the
// response the server writes becomes readable at the modelled instant and
// the hostagent, timing on that clock (hostagent.Options.Clock), records
// the modelled FCT. Connections report their retransmissions as
// hostagent.RetransCounter. A host times its trials on one clock, so it
// keeps one FCT client connection open at a time (closed loop,
// connections=1).
type HostNet struct {
	paths Paths
	seed  uint64
	// drops, if set, is told the frames the sender's loss-emulation table
	// took from the hosts' flows on a fibre (CountEmulatedDrops).
	drops func(fibre string, frames int64)

	mu        sync.Mutex
	hosts     map[string]*SimHost
	byIP      map[netip.Addr]*SimHost
	fibres    map[[2]string]string // (from switch, to switch) -> dataplane link
	listeners map[netip.AddrPort]*hostListener
	rdmaSrv   map[netip.AddrPort]*rdmaServer // ib_write_lat servers waiting, by address and -p port
	// listenPorts and dialPorts hand out the ephemeral ports of port-0
	// listeners and of outgoing connections, each its own cycle over the
	// range, as a kernel keeps bound and connected ports apart.
	listenPorts ephemeralPorts
	dialPorts   ephemeralPorts
	nconn       uint64
	bulk        bulkState // iperf3 flows (bulk.go)
}

// NewHostNet makes an empty host network over the switch fibres paths
// reads.
func NewHostNet(paths Paths, seed uint64) *HostNet {
	return &HostNet{paths: paths, seed: seed, hosts: map[string]*SimHost{}, byIP: map[netip.Addr]*SimHost{},
		fibres: map[[2]string]string{}, listeners: map[netip.AddrPort]*hostListener{}, rdmaSrv: map[netip.AddrPort]*rdmaServer{}}
}

// CountEmulatedDrops makes the network tell f the frames of the hosts'
// flows that a fibre's loss-emulation table took, as they are drawn: the
// simulated lab counts them at the switch. Call it before traffic starts.
func (n *HostNet) CountEmulatedDrops(f func(fibre string, frames int64)) { n.drops = f }

// Route makes traffic from hosts on switch from to hosts on switch to cross
// the dataplane link (fibre) of that name.
func (n *HostNet) Route(from, to, fibre string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fibres[[2]string{from, to}] = fibre
}

// RouteOf is the fibre traffic from hosts on switch from to hosts on
// switch to crosses, if it is routed.
func (n *HostNet) RouteOf(from, to string) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f, ok := n.fibres[[2]string{from, to}]
	return f, ok
}

func (n *HostNet) hostNames() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for k := range n.hosts {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (n *HostNet) attach(h *SimHost) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, dup := n.hosts[h.name]; dup {
		return fmt.Errorf("simulated host %s exists already", h.name)
	}
	if o, dup := n.byIP[h.addr.Addr()]; dup {
		return fmt.Errorf("simulated host %s: address %s is %s's", h.name, h.addr.Addr(), o.name)
	}
	n.hosts[h.name] = h
	n.byIP[h.addr.Addr()] = h
	return nil
}

func (n *HostNet) detach(h *SimHost) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.hosts[h.name] == h {
		delete(n.hosts, h.name)
		delete(n.byIP, h.addr.Addr())
	}
	for k, l := range n.listeners {
		if l.host == h {
			delete(n.listeners, k)
		}
	}
}

// ---- listening

// hostListener is a listening socket of a simulated host's data plane.
type hostListener struct {
	host   *SimHost
	addr   *net.TCPAddr // as bound (0.0.0.0 for any)
	keys   []netip.AddrPort
	conns  chan net.Conn
	done   chan struct{}
	closed sync.Once
}

// listen is a host's hostagent.ListenFunc: TCP on its data-plane address
// or on any address ("0.0.0.0", ""), port 0 for a free one.
func (h *SimHost) listen(ctx context.Context, network, address string) (net.Listener, error) {
	fail := func(err error) error { return &net.OpError{Op: "listen", Net: network, Err: err} }
	if network != "tcp" && network != "tcp4" {
		return nil, fail(fmt.Errorf("simulated host %s: network %q not supported", h.name, network))
	}
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fail(err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, fail(fmt.Errorf("invalid port %q", portStr))
	}
	bind := netip.IPv4Unspecified()
	if host != "" {
		if bind, err = netip.ParseAddr(host); err != nil {
			return nil, fail(fmt.Errorf("simulated host %s: %q is not an IPv4 address", h.name, host))
		}
	}
	if bind != netip.IPv4Unspecified() && bind != h.addr.Addr() {
		return nil, fail(syscall.EADDRNOTAVAIL)
	}
	n := h.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if port == 0 {
		p, ok := n.listenPorts.next(func(p uint16) bool { return n.listeners[netip.AddrPortFrom(h.addr.Addr(), p)] != nil })
		if !ok {
			return nil, fail(syscall.EADDRINUSE)
		}
		port = int(p)
	}
	key := netip.AddrPortFrom(h.addr.Addr(), uint16(port))
	if n.listeners[key] != nil {
		return nil, fail(syscall.EADDRINUSE)
	}
	l := &hostListener{host: h, addr: &net.TCPAddr{IP: bind.AsSlice(), Port: port}, keys: []netip.AddrPort{key}, conns: make(chan net.Conn), done: make(chan struct{})}
	n.listeners[key] = l
	return l, nil
}

func (l *hostListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *hostListener) Close() error {
	l.closed.Do(func() {
		close(l.done)
		n := l.host.net
		n.mu.Lock()
		for _, k := range l.keys {
			if n.listeners[k] == l {
				delete(n.listeners, k)
			}
		}
		n.mu.Unlock()
	})
	return nil
}

func (l *hostListener) Addr() net.Addr { return l.addr }

// ---- connecting

// dial is a host's hostagent.DialFunc: a TCP connection to another
// simulated host's listener across the path between their switches.
func (h *SimHost) dial(ctx context.Context, network, address string) (net.Conn, error) {
	fail := func(err error) error { return &net.OpError{Op: "dial", Net: network, Err: err} }
	if network != "tcp" && network != "tcp4" {
		return nil, fail(fmt.Errorf("simulated host %s: network %q not supported", h.name, network))
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return nil, fail(fmt.Errorf("simulated host %s: %q is not an IPv4 address and port", h.name, address))
	}
	n := h.net
	n.mu.Lock()
	dst := n.byIP[ap.Addr()]
	l := n.listeners[ap]
	var fibre string
	if dst != nil {
		fibre = n.fibres[[2]string{h.sw, dst.sw}]
	}
	n.nconn++
	id := n.nconn
	n.mu.Unlock()
	h.mu.Lock()
	route := h.routeTo(ap.Addr())
	h.mu.Unlock()
	switch {
	case route == nil:
		return nil, fail(syscall.ENETUNREACH)
	case dst == h:
		return nil, fail(fmt.Errorf("simulated host %s: connections to itself are not modelled", h.name))
	case dst == nil:
		return nil, fail(fmt.Errorf("%w (no simulated host has %s)", syscall.EHOSTUNREACH, ap.Addr()))
	case fibre == "" && h.sw != dst.sw:
		return nil, fail(fmt.Errorf("%w (no path from %s to %s)", syscall.EHOSTUNREACH, h.sw, dst.sw))
	case h.sw == dst.sw:
		return nil, fail(fmt.Errorf("simulated hosts %s and %s share switch %s: paths without a switch fibre are not modelled", h.name, dst.name, h.sw))
	}
	if p, err := n.path(fibre); err != nil || !p.up {
		if err == nil {
			err = fmt.Errorf("%w (link %s from %s to %s is down)", syscall.EHOSTUNREACH, fibre, h.sw, dst.sw)
		}
		return nil, fail(err)
	}
	if l == nil {
		return nil, fail(syscall.ECONNREFUSED)
	}
	h.mu.Lock()
	if h.clients > 0 {
		h.mu.Unlock()
		return nil, fail(fmt.Errorf("simulated host %s times its trials on one clock: one FCT connection at a time (connections=1, closed loop)", h.name))
	}
	h.clients++
	h.mu.Unlock()
	n.mu.Lock()
	lport, _ := n.dialPorts.next(nil) // one client connection at a time: never all in use
	local := &net.TCPAddr{IP: h.addr.Addr().AsSlice(), Port: int(lport)}
	n.mu.Unlock()
	remote := &net.TCPAddr{IP: ap.Addr().AsSlice(), Port: int(ap.Port())}
	cEnd, sEnd := net.Pipe()
	hs := fnv.New64a()
	fmt.Fprintf(hs, "%s>%s#%d", h.name, dst.name, id)
	c := &hostConn{Conn: cEnd, net: n, src: h, dst: dst, fibre: fibre, local: local, remote: remote,
		rng: rand.New(rand.NewPCG(n.seed, hs.Sum64()))}
	s := &addrConn{Conn: sEnd, local: remote, remote: local}
	select {
	case l.conns <- s:
	case <-l.done:
		c.Close()
		return nil, fail(syscall.ECONNREFUSED)
	case <-ctx.Done():
		c.Close()
		return nil, fail(ctx.Err())
	}
	return c, nil
}

// addrConn is a pipe end with the addresses of the simulated sockets.
type addrConn struct {
	net.Conn
	local, remote net.Addr
}

func (c *addrConn) LocalAddr() net.Addr  { return c.local }
func (c *addrConn) RemoteAddr() net.Addr { return c.remote }

// hostConn is the client end of an FCT connection between simulated hosts.
type hostConn struct {
	net.Conn
	net           *HostNet
	src, dst      *SimHost
	fibre         string
	local, remote *net.TCPAddr
	rng           *rand.Rand

	wmu     sync.Mutex // Write
	hdr     [8]byte
	hdrN    int
	left    int // bytes of the request being written still to come
	reqSize int
	resp    int
	state   *connState // the transport's state carried from trial to trial
	started bool       // the connection's first flow has been sent
	fct1    atomic.Int64
	fct1Re  atomic.Int32 // data segments the first flow sent again
	fct1OK  atomic.Bool

	retrans   atomic.Uint32
	closeOnce sync.Once
	// deadline is the client's read deadline on its host's clock (0:
	// none). The trials run in simulated time, so a deadline on the real
	// clock would time out a trial a loaded machine computes slowly and
	// wait in real time for an answer the model knows never comes.
	deadline atomic.Int64
}

// SetDeadline keeps the deadline on the host's clock: the time left until
// t, from the host's present. (The pipe under the connection gets none: a
// run's context, which closes the connection, bounds the real time.)
func (c *hostConn) SetDeadline(t time.Time) error {
	return c.SetReadDeadline(t)
}

// SetReadDeadline: see SetDeadline.
func (c *hostConn) SetReadDeadline(t time.Time) error {
	if t.IsZero() {
		c.deadline.Store(0)
	} else {
		c.deadline.Store(int64(c.src.clock.now() + max(time.Until(t), 1)))
	}
	return c.Conn.SetReadDeadline(time.Time{})
}

// SetWriteDeadline: writes reach the simulated server at once; none is kept.
func (c *hostConn) SetWriteDeadline(time.Time) error { return nil }

// timeout moves the host's clock to the read deadline, if there is one
// before at (the answer's arrival; -1: never), and makes the client's
// reads fail as the deadline's passing does; true if it did.
func (c *hostConn) timeout(at time.Duration) bool {
	dl := time.Duration(c.deadline.Load())
	if dl == 0 || (at >= 0 && at <= dl) {
		return false
	}
	c.src.clock.advance(dl - c.src.clock.now())
	c.Conn.SetReadDeadline(time.Unix(1, 0)) // passed: reads return os.ErrDeadlineExceeded
	return true
}

func (c *hostConn) LocalAddr() net.Addr  { return c.local }
func (c *hostConn) RemoteAddr() net.Addr { return c.remote }

// TotalRetrans implements hostagent.RetransCounter: the segments the
// client's modelled TCP retransmitted on this connection, as its socket's
// TCP_INFO would count them (the server's own are not the client's).
func (c *hostConn) TotalRetrans() (uint32, error) { return c.retrans.Load(), nil }

// FCT1 implements hostagent.FlowCapture: the connection's first flow's
// fct1, from the first data segment to the first ACK covering it, where
// the client's capture of its own segments sees them.
func (c *hostConn) FCT1() (time.Duration, int, bool) {
	return time.Duration(c.fct1.Load()), int(c.fct1Re.Load()), c.fct1OK.Load()
}

func (c *hostConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() {
		c.src.mu.Lock()
		c.src.clients--
		c.src.mu.Unlock()
	})
	return err
}

// Write passes the request bytes to the server; when they complete a
// request, the trial is computed and the client's clock moved first.
func (c *hostConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for rest := p; len(rest) > 0; {
		if c.left == 0 { // a request starts: its header
			k := copy(c.hdr[c.hdrN:], rest)
			c.hdrN += k
			rest = rest[k:]
			if c.hdrN < len(c.hdr) {
				break
			}
			c.hdrN = 0
			c.reqSize = int(binary.BigEndian.Uint32(c.hdr[0:4]))
			c.resp = int(binary.BigEndian.Uint32(c.hdr[4:8]))
			c.left = max(c.reqSize-len(c.hdr), 0)
			if c.reqSize < len(c.hdr) || c.resp < 1 {
				return c.Conn.Write(p) // not the FCT protocol: the server will hang up
			}
		} else {
			k := min(c.left, len(rest))
			c.left -= k
			rest = rest[k:]
		}
		if c.left == 0 {
			err := c.trial(c.reqSize, c.resp)
			if errors.Is(err, errPathDown) {
				// Sent into a dark fibre: no answer ever comes, and the
				// client's trial times out as it would on a real host,
				// at its deadline on the host's clock.
				c.timeout(-1)
				return len(p), nil
			}
			if err != nil {
				return 0, &net.OpError{Op: "write", Net: "tcp", Source: c.local, Addr: c.remote, Err: err}
			}
		}
	}
	return c.Conn.Write(p)
}

// trial computes one request/response with the transport model and moves
// the client host's clock by its FCT.
func (c *hostConn) trial(req, resp int) error {
	r, err := c.net.trial(c, req, resp)
	if err != nil {
		return err
	}
	if c.timeout(c.src.clock.now() + r.clock) {
		return nil // the answer comes after the client stopped waiting
	}
	if r.newConn {
		c.fct1.Store(int64(r.fct1))
		c.fct1Re.Store(int32(r.dataRetrans))
		c.fct1OK.Store(true)
	}
	c.retrans.Add(uint32(r.retrans))
	if r.dropped > 0 && c.net.drops != nil {
		c.net.drops(c.fibre, int64(r.dropped))
	}
	c.src.clock.advance(r.clock)
	return nil
}

// ---- the path

// hostPath is what host traffic sees on a switch fibre at one moment.
type hostPath struct {
	up            bool
	mode          lgmodel.Mode
	copies        int
	pause, resume int // the receiver's backpressure thresholds, cells
	bps           float64
	fec           string
	rxDBm         float64 // received power
	drop          float64 // the sender's loss-emulation table's drop fraction
	transceiver   physics.Transceiver
	fecParams     physics.FEC
}

// frameLoss is the corruption probability of a frame of frameBytes (FCS
// included) on the path: the optics' and the loss-emulation table's, as
// the dataplane computes it for its own traffic.
func (p hostPath) frameLoss(frameBytes int) float64 {
	loss := 1.0
	if !math.IsInf(p.rxDBm, -1) {
		loss = physics.FrameLossProbability(p.transceiver, p.fecParams, p.rxDBm, frameBytes)
	}
	return 1 - (1-loss)*(1-p.drop)
}

// path reads a fibre's state now.
func (n *HostNet) path(fibre string) (hostPath, error) {
	s, err := n.paths(fibre)
	if err != nil {
		return hostPath{}, err
	}
	p := hostPath{up: s.Up, mode: s.Mode, copies: s.Copies, pause: s.Pause, resume: s.Resume, bps: s.Bps, fec: s.FEC,
		rxDBm: s.RxDBm, drop: s.Drop, transceiver: s.Transceiver}
	if p.up {
		if p.fecParams, err = physics.FECByName(s.FEC); err != nil {
			return hostPath{}, err
		}
	}
	return p, nil
}

// simClock is a simulated host's monotonic clock.
type simClock struct{ ns atomic.Int64 }

func (c *simClock) now() time.Duration      { return time.Duration(c.ns.Load()) }
func (c *simClock) advance(d time.Duration) { c.ns.Add(int64(max(d, 0))) }

// Linux's default net.ipv4.ip_local_port_range (Documentation/networking/
// ip-sysctl.rst): the ports a kernel picks for port-0 binds and for
// outgoing connections.
const (
	ephemeralLow  = 32768
	ephemeralHigh = 60999
)

// ephemeralPorts cycles over the ephemeral range, wrapping at its end and
// skipping ports still in use, so that a long-lived lab never runs out.
type ephemeralPorts struct{ last uint16 }

// next returns the next free port after the last one handed out, false
// when every port of the range is in use.
func (e *ephemeralPorts) next(inUse func(uint16) bool) (uint16, bool) {
	const span = ephemeralHigh - ephemeralLow + 1
	for i := 0; i < span; i++ {
		p := e.last + 1
		if p < ephemeralLow || p > ephemeralHigh {
			p = ephemeralLow
		}
		e.last = p
		if inUse == nil || !inUse(p) {
			return p, true
		}
	}
	return 0, false
}
