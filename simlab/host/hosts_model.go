package host

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"testbed/simlab/fctmodel"
	"testbed/simlab/lgmodel"
)

// errPathDown: the fibre is dark or its ports are down; a request sent now
// is never answered.
var errPathDown = errors.New("the path is down")

// modelKey is everything a connection's transport model is built from;
// when any of it changes between trials the model is rebuilt.
type modelKey struct {
	mode          lgmodel.Mode
	copies        int
	pause, resume int
	bps           float64
	fec           string
	rxDBm, drop   float64
	rtoMin        time.Duration
	tlp           bool
	reordering    int
	maxReordering int
	req, resp     int
	timestamps    bool // net.ipv4.tcp_timestamps: the option's 12 bytes in every segment
	perFlow       bool // a new connection's first flow (fctmodel.Config.PerFlow)
	rdma          bool // an RDMA WRITE ping-pong (ib_write_lat) instead of TCP
}

// connState is the transport's state carried from one trial to the next
// on a connection: one fctmodel.Model (a client and a server on one
// persistent connection) for as long as nothing it was built from changes.
type connState struct {
	key   modelKey
	model *fctmodel.Model
}

// sysctlInt reads an integer sysctl of the host's table.
func (h *SimHost) sysctlInt(key string) int {
	v, _ := h.Sysctl(key)
	n, _ := strconv.Atoi(strings.TrimSpace(v))
	return n
}

// trialResult is what one trial of a connection took.
type trialResult struct {
	clock   time.Duration // how far the client's clock moves
	fct1    time.Duration // the first flow's fct1 (newConn only)
	retrans int
	dropped int // frames the sender's loss-emulation table took
	newConn bool
	// dataRetrans: the first flow's data segments sent again, as the
	// client's capture tells them from SYNs (newConn only).
	dataRetrans int
}

// trial computes one request/response of c with fctmodel: the forward
// direction is the fibre with its state now, the rto_min is the client's
// route's, the tail loss probe and reordering follow the client's sysctls.
// A connection's first request is a new connection's flow: the handshake
// and that flow, with fct1 as the client's capture would time it
// (fctmodel.Config.PerFlow, on the host's model of new connections); the
// next ones go on the connection's own persistent model.
func (n *HostNet) trial(c *hostConn, req, resp int) (trialResult, error) {
	p, err := n.path(c.fibre)
	if err != nil {
		return trialResult{}, err
	}
	if !p.up {
		return trialResult{}, errPathDown
	}
	src := c.src
	k := modelKey{mode: p.mode, copies: p.copies, pause: p.pause, resume: p.resume, bps: p.bps, fec: p.fec, rxDBm: p.rxDBm, drop: p.drop,
		rtoMin: src.RTOMinTo(c.dst.addr.Addr()), tlp: src.sysctlInt("net.ipv4.tcp_early_retrans") >= 3,
		reordering: src.sysctlInt("net.ipv4.tcp_reordering"), maxReordering: src.sysctlInt("net.ipv4.tcp_max_reordering"),
		req: req, resp: resp, timestamps: src.sysctlInt("net.ipv4.tcp_timestamps") != 0}
	if !c.started {
		c.started = true
		k.perFlow = true
		src.flowMu.Lock()
		defer src.flowMu.Unlock()
		if src.newConn == nil || src.newConn.key != k {
			m, err := newTrialModel(k, p, src.flowRng)
			if err != nil {
				return trialResult{}, fmt.Errorf("simulated %s -> %s over %s: %w", src.name, c.dst.name, c.fibre, err)
			}
			src.newConn = &connState{key: k, model: m}
		}
		t := src.newConn.model.Trial()
		return trialResult{clock: t.Connect + t.FCT, fct1: t.FCT, retrans: t.ClientRetransmits, newConn: true, dropped: t.LinkDropped,
			dataRetrans: t.ClientRetransmits - t.ClientSynRetransmits}, nil
	}
	if c.state == nil || c.state.key != k {
		m, err := newTrialModel(k, p, c.rng)
		if err != nil {
			return trialResult{}, fmt.Errorf("simulated %s -> %s over %s: %w", src.name, c.dst.name, c.fibre, err)
		}
		c.state = &connState{key: k, model: m}
	}
	t := c.state.model.Trial()
	return trialResult{clock: t.FCT, retrans: t.ClientRetransmits, dropped: t.LinkDropped}, nil
}

// newTrialModel builds the TCP model of a connection over the path: the
// paper's hosts and timers (fctmodel.Defaults) with the link's rate,
// protection, copies and per-size frame loss as configured now, and the
// client host's rto_min and loss-recovery settings.
func newTrialModel(k modelKey, p hostPath, r *rand.Rand) (*fctmodel.Model, error) {
	tr := fctmodel.TCP
	if k.rdma {
		tr = fctmodel.RDMA
	}
	cfg, err := fctmodel.Defaults(tr, k.mode, p.frameLoss(1518), k.req)
	if err != nil {
		return nil, err
	}
	cfg.ResponseBytes = k.resp
	cfg.PerFlow = k.perFlow
	// The hosts' jitter: the NIC's receive interrupt moderation, a period
	// of 8 us (Linux lib/dim NET_DIM_RX_EQE_PROFILES' second profile) that
	// a lone frame waits out from a uniformly random point. The stack's
	// constant receive delay keeps the rest, so the mean is unchanged.
	if !k.rdma { // RDMA completions are polled: no interrupt
		cfg.Host.RxCoalesce = 8 * time.Microsecond
		cfg.Host.RxStack -= cfg.Host.RxCoalesce / 2
	} else {
		// RDMA's: the spread of a polled round trip through the NICs and
		// PCIe, as measured on kernel-bypass hosts.
		cfg.Host.RoundTrip = fctmodel.KernelBypassRoundTrip
	}
	if !k.timestamps {
		// No timestamp option: 12 bytes fewer per segment and SYN, a
		// larger MSS (1500 - 40).
		cfg.TCP.MSS, cfg.TCP.HeaderBytes, cfg.TCP.SynBytes = 1460, 14+20+20+4, 14+20+32+4
	}
	if cfg.Forward, err = fctmodel.DefaultLink(k.mode, k.bps, p.frameLoss(1518)); err != nil {
		return nil, err
	}
	cfg.Forward.FrameLoss = p.frameLoss
	cfg.Forward.Drop = p.drop
	if k.mode != lgmodel.Off {
		cfg.Forward.LG.Copies = max(k.copies, 1)
		cfg.Forward.LG.PauseCells, cfg.Forward.LG.ResumeCells = k.pause, k.resume
		cfg.Forward.LG.Backpressure = k.mode == lgmodel.Ordered && k.pause > 0 && k.resume > 0 && k.resume <= k.pause
	}
	if cfg.Reverse, err = fctmodel.DefaultLink(lgmodel.Off, k.bps, 0); err != nil {
		return nil, err
	}
	cfg.TCP.RTOMin = k.rtoMin
	cfg.TCP.TLP = k.tlp
	if k.reordering > 0 {
		cfg.TCP.Reordering = k.reordering
	}
	if k.maxReordering >= cfg.TCP.Reordering {
		cfg.TCP.MaxReordering = k.maxReordering
	}
	return fctmodel.New(cfg, r)
}
