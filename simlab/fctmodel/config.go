package fctmodel

import (
	"errors"
	"fmt"
	"math"
	"time"

	"testbed/simlab/lgmodel"
)

// Transport is the end hosts' transport.
type Transport int

// Transports.
const (
	TCP  Transport = iota // the kernel's TCP (Linux 5.4 as in §4 of the paper), DCTCP
	RDMA                  // RoCEv2 reliable connection, one-sided WRITE, on the NIC
)

func (t Transport) String() string {
	switch t {
	case TCP:
		return "tcp"
	case RDMA:
		return "rdma"
	}
	return fmt.Sprintf("transport(%d)", int(t))
}

// Config is one experiment: a client and a server host, a closed loop of
// trials on one persistent connection, and the path between them.
type Config struct {
	Transport Transport
	// RequestBytes is what the client writes each trial: the RPC request
	// (TCP) or the WRITE's length (RDMA).
	RequestBytes int
	// ResponseBytes is the server's answer. TCP: at least 1; the trial
	// ends when the client has read it. RDMA: 0 ends the trial at the
	// WRITE's completion (the requester's CQE, which needs the responder's
	// ACK); more has the server WRITE that much back once the request has
	// landed, and the trial ends when it has landed at the client
	// (perftest's ib_write_lat ping-pong).
	ResponseBytes int
	// Think is the client's pause between one trial's end and the next
	// request.
	Think time.Duration
	// Warmup trials run first and are not reported: the connection's
	// RTT estimate and congestion window settle as they do before a
	// measurement starts.
	Warmup int

	// HostBps is the rate of the host NICs and of the switches' host
	// ports; Cable is the propagation between a host and its switch.
	HostBps float64
	Cable   time.Duration

	// Forward is the corrupting link from the client's switch to the
	// server's; Reverse carries the answers and ACKs back.
	Forward, Reverse Link

	Host HostDelays
	TCP  TCPConfig
	RDMA RDMAConfig

	// PerFlow (TCP) makes each trial a new connection, as the
	// LinkGuardian artifact's FCT experiment does (one iperf client per
	// flow): the three-way handshake over the path, fresh state (the
	// handshake's RTT sample, the initial window, quick ACKs), a one-way
	// flow of RequestBytes (no answer), and the trial's FCT is fct1 (see
	// Trial.FCT). Off: one persistent connection, request and answer.
	PerFlow bool

	// Step decides every frame's corruption as it crosses, with no trial
	// skipped over (see doc.go, "Speed"). For tests of the skip-ahead.
	Step bool
}

// Link is one direction of the link between the two switches.
type Link struct {
	// LG is the link and its protection, as lgmodel models it: mode,
	// rate, copies, a switch pass (Pipeline), propagation, the sender's
	// retransmission handling, ackNoTimeout. Its Loss and FrameBytes set
	// the dummies' corruption; the frames' own come from the fields below.
	LG lgmodel.Config
	// Loss is a frame's corruption probability. With LossBytes 0 every
	// frame, whatever its size, is corrupted with probability Loss (as the
	// loss-emulation table drops packets). With LossBytes > 0, Loss is the
	// corruption probability of a LossBytes frame (the loss measured with
	// MTU frames) and other sizes scale as independent bit errors:
	// 1-(1-Loss)^(bytes/LossBytes).
	Loss      float64
	LossBytes int
	// FrameLoss, if set, gives a frame's corruption probability from its
	// size instead (bytes with FCS, before the LinkGuardian header): e.g.
	// the simulated fibre's physics.FrameLossProbability.
	FrameLoss func(frameBytes int) float64
	// Drop is the part of a frame's corruption probability that the
	// sender's loss-emulation table makes (every size alike): the frames
	// it takes are counted in Trial.LinkDropped.
	Drop float64
}

// HostDelays are the hosts' own latencies, the same on both hosts.
type HostDelays struct {
	// TCP in the kernel. TxStack: from the stack sending a segment to its
	// first bit on the wire (qdisc, driver, doorbell, DMA). RxStack: from
	// a frame's last bit in to the stack processing it (interrupt
	// moderation, NAPI, IP, TCP). Wake: from data being ready in the stack
	// to the application returning from its read. Syscall: from the
	// application's write to the stack sending.
	TxStack, RxStack, Wake, Syscall time.Duration
	// RxCoalesce is the NIC's receive interrupt moderation period
	// (ethtool rx-usecs) when the host's jitter is modelled (0: none, a
	// lossless run has a single FCT). With the period timer running from
	// the previous interrupt (mlx5's EQE-based mode; Linux lib/dim's
	// NET_DIM_RX_EQE_PROFILES, whose second profile is 8 us), a lone
	// frame arrives at a uniformly random point of the period and waits
	// for its end: U(0, RxCoalesce), on top of RxStack. The waits of the
	// trial's two critical receptions are added to its FCT; the stack's
	// own timing (RTT samples, timers) sees RxStack alone.
	RxCoalesce time.Duration
	// RDMA on the NIC. Post: from the application's post (doorbell) to the
	// first bit on the wire. NICRx: from a packet's last bit in to its
	// payload placed and the ACK/NAK decided. Poll: from the NIC writing a
	// completion (or the payload) to the polling application seeing it.
	Post, NICRx, Poll time.Duration
	// RoundTrip (RDMA), when set, is the spread of a round trip through
	// both hosts' NICs, PCIe and polling loops over its least (Post,
	// NICRx and Poll are the least): one draw per trial is added to its
	// FCT (a trial is one round trip: the WRITE and its answer, or the
	// WRITE and its ACK). Empty: every lossless trial takes the same time.
	// KernelBypassRoundTrip is a measured one.
	RoundTrip Spread
}

// TCPConfig are the TCP parameters: the Linux defaults of the paper's
// kernel, with the route's rto_min of 1 ms the paper configures.
type TCPConfig struct {
	MSS         int // payload per segment: 1500 MTU - 40 - 12 (timestamps)
	HeaderBytes int // per frame: Ethernet 14, IPv4 20, TCP 20 + 12 options, FCS 4
	// SynBytes is a SYN's or SYN-ACK's frame: Ethernet 14, IPv4 20, TCP
	// 20 + options (MSS 4, SACK-permitted and timestamps 12, window scale
	// 4; 12 without timestamps), FCS 4.
	SynBytes int
	InitCwnd int // RFC 6928, TCP_INIT_CWND
	RTOMin   time.Duration
	RTOMax   time.Duration // TCP_RTO_MAX
	RTOInit  time.Duration // TCP_TIMEOUT_INIT: before any RTT sample
	HZ       int           // kernel timer tick (CONFIG_HZ)
	// DelayedAck: acknowledge every second full segment, out-of-order and
	// duplicate data at once, the rest after DelAck unless data going the
	// other way carries the ACK first (as an RPC's answer does). Off: every
	// segment is acknowledged at once (TCP_QUICKACK kept set).
	DelayedAck bool
	DelAck     time.Duration // TCP_DELACK_MIN / TCP_ATO_MIN
	// TLP is the tail loss probe (net.ipv4.tcp_early_retrans = 3).
	TLP bool
	// Reordering is the initial reordering degree, in segments
	// (net.ipv4.tcp_reordering): SACKed segments beyond a hole before
	// RACK gives up its reordering window; MaxReordering bounds what it
	// learns (net.ipv4.tcp_max_reordering).
	Reordering, MaxReordering int
	// DCTCPAlpha is DCTCP's alpha, the fraction of ECN-marked bytes: it
	// sets how much a congestion-window reduction without a loss (after a
	// loss probe repaired a tail) cuts. With no queue it decays to 0.
	DCTCPAlpha float64
}

// RDMAConfig are the RoCEv2 RC parameters.
type RDMAConfig struct {
	MTU int // payload per packet (RoCE path MTU for a 1500 B Ethernet MTU)
	// TimeoutExp is the QP's local ACK timeout attribute: the requester's
	// transport timer is 4.096 us * 2^TimeoutExp (IB spec, C9-140).
	TimeoutExp int
	// AckEvery is the responder's ACK coalescing: an ACK at least every
	// AckEvery packets besides the one the last packet of a message asks
	// for. 0: only the last.
	AckEvery int
}

// Frame overheads of RoCEv2 (IB spec annex A16/A17): Ethernet 14, IPv4
// 20, UDP 8, BTH 12, ICRC 4, FCS 4; a WRITE's first packet carries the
// RETH (16), an ACK the AETH (4).
const (
	roceBytes      = 14 + 20 + 8 + 12 + 4 + 4
	rethBytes      = 16
	roceAckBytes   = roceBytes + 4
	minFrameBytes  = 64
	tcpSackOptBase = 4 // NOP, NOP, kind, length
	tcpSackBlock   = 8
)

// Defaults is the paper's setup (§4, §4.3): 100G links, a corrupting
// forward link with the given protection and per-frame loss, a clean
// reverse direction (corruption is usually one-directional, §2), and a
// flow of flowBytes: the client's request (TCP, answered with one byte)
// or the WRITE (RDMA, ended by its completion).
func Defaults(t Transport, mode lgmodel.Mode, loss float64, flowBytes int) (Config, error) {
	c := Config{
		Transport:    t,
		RequestBytes: flowBytes,
		Warmup:       10,
		HostBps:      100e9,
		Cable:        10 * time.Nanosecond, // 2 m
		Host: HostDelays{
			TxStack: 2 * time.Microsecond,
			RxStack: 8 * time.Microsecond,
			Wake:    2 * time.Microsecond,
			Syscall: time.Microsecond,
			Post:    600 * time.Nanosecond,
			NICRx:   300 * time.Nanosecond,
			Poll:    200 * time.Nanosecond,
		},
		TCP: TCPConfig{
			MSS: 1448, HeaderBytes: 14 + 20 + 32 + 4, SynBytes: 14 + 20 + 40 + 4, InitCwnd: 10,
			RTOMin: time.Millisecond, RTOMax: 120 * time.Second, RTOInit: time.Second,
			HZ: 1000, DelayedAck: true, DelAck: 40 * time.Millisecond, TLP: true,
			Reordering: 3, MaxReordering: 300,
		},
		RDMA: RDMAConfig{MTU: 1024, TimeoutExp: 8},
	}
	if t == TCP {
		c.ResponseBytes = 1
	}
	var err error
	if c.Forward, err = DefaultLink(mode, 100e9, loss); err != nil {
		return c, err
	}
	c.Reverse, err = DefaultLink(lgmodel.Off, 100e9, 0)
	return c, err
}

// DefaultLink is a link of the given rate, protection and per-frame loss
// with lgmodel's parameters from the paper; the copies follow Eq. 2 for
// the target 1e-8.
func DefaultLink(mode lgmodel.Mode, bps, loss float64) (Link, error) {
	cfg, err := lgmodel.Defaults(mode, bps, loss, 1)
	if err != nil && mode == lgmodel.Off {
		// Off needs none of the protocol's measured delays.
		cfg, err = lgmodel.Config{Mode: lgmodel.Off, LinkBps: bps, FrameBytes: 1518, Loss: loss,
			Pipeline: time.Microsecond, Propagation: 10 * time.Nanosecond, RxBufferCap: 200_000}, nil
	}
	if err != nil {
		return Link{}, err
	}
	return Link{LG: cfg, Loss: loss}, nil
}

// frameLoss is a frame's corruption probability on l.
func (l *Link) frameLoss(bytes int) float64 {
	switch {
	case l.FrameLoss != nil:
		return l.FrameLoss(bytes)
	case l.LossBytes > 0 && l.Loss > 0:
		return -math.Expm1(float64(bytes) / float64(l.LossBytes) * math.Log1p(-l.Loss))
	}
	return l.Loss
}

// validate checks the configuration: the flow, the links, the hosts'
// delays and the transport's parameters.
func (c *Config) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	c.validateFlow(bad)
	c.Forward.validate("forward", bad)
	c.Reverse.validate("reverse", bad)
	c.Host.validate(bad)
	switch c.Transport {
	case TCP:
		c.TCP.validate(bad)
	case RDMA:
		c.RDMA.validate(bad)
	}
	return errors.Join(errs...)
}

// validateFlow checks the transport, the flow's sizes and pauses, and
// the hosts' path.
func (c *Config) validateFlow(bad func(string, ...any)) {
	if c.Transport != TCP && c.Transport != RDMA {
		bad("transport %d: unknown", c.Transport)
	}
	if c.RequestBytes < 1 {
		bad("request_bytes %d: must be at least 1", c.RequestBytes)
	}
	if c.PerFlow && c.Transport != TCP {
		bad("per_flow: only for TCP")
	}
	if c.Transport == TCP && c.ResponseBytes < 1 {
		bad("response_bytes %d: TCP needs an answer of at least 1 byte", c.ResponseBytes)
	}
	if c.ResponseBytes < 0 || c.Think < 0 || c.Warmup < 0 {
		bad("response_bytes, think and warmup must not be negative")
	}
	if !(c.HostBps > 0) || c.Cable < 0 {
		bad("host_bps %g, cable %v: bad path", c.HostBps, c.Cable)
	}
}

// validate checks the link's LinkGuardian configuration and its loss.
func (l *Link) validate(name string, bad func(string, ...any)) {
	if !(l.LG.LinkBps > 0) || l.LG.FrameBytes < 64 || l.LG.Pipeline < 0 || l.LG.Propagation < 0 {
		bad("%s link: bad lgmodel config", name)
	}
	if l.LG.Mode != lgmodel.Off && l.LG.Copies < 1 {
		bad("%s link: %s needs at least one copy", name, l.LG.Mode)
	}
	if l.FrameLoss == nil && !(l.Loss >= 0 && l.Loss < 1) || l.LossBytes < 0 {
		bad("%s link: loss %g (per %d bytes) out of range", name, l.Loss, l.LossBytes)
	}
}

// validate checks that no host delay is negative and the round trip's
// distribution.
func (h HostDelays) validate(bad func(string, ...any)) {
	for _, d := range []time.Duration{h.TxStack, h.RxStack, h.Wake, h.Syscall, h.Post, h.NICRx, h.Poll, h.RxCoalesce} {
		if d < 0 {
			bad("host delays must not be negative: %+v", h)
			break
		}
	}
	if err := h.RoundTrip.validate(); err != nil {
		bad("host round trip: %v", err)
	}
}

// validate checks TCP's segment, window, reordering and timer
// parameters and DCTCP's alpha.
func (t TCPConfig) validate(bad func(string, ...any)) {
	if t.MSS < 1 || t.HeaderBytes < 0 || t.InitCwnd < 1 || t.HZ < 1 || t.Reordering < 1 || t.MaxReordering < t.Reordering {
		bad("tcp: bad parameters %+v", t)
	}
	if t.RTOMin <= 0 || t.RTOMax < t.RTOMin || t.RTOInit <= 0 || t.DelAck <= 0 {
		bad("tcp: bad timers %+v", t)
	}
	if !(t.DCTCPAlpha >= 0 && t.DCTCPAlpha <= 1) {
		bad("tcp: dctcp alpha %g not in [0, 1]", t.DCTCPAlpha)
	}
}

// validate checks RoCE's MTU, ACK timeout exponent and ACK coalescing.
func (r RDMAConfig) validate(bad func(string, ...any)) {
	if r.MTU < 1 || r.TimeoutExp < 1 || r.TimeoutExp > 31 || r.AckEvery < 0 {
		bad("rdma: bad parameters %+v", r)
	}
}
