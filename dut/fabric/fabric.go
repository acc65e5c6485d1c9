// Package fabric drives a Stardust fabric seen whole: configured from the
// Stardust contract's Fabric (p4/stardust/fabric.go), stepped slot by slot,
// offered flows, its links and FEs failed and restored, and its statistics
// read. The simulated lab serves one (simlab/fabric: the cell-level model
// and the packet-switched fabric the paper compares Stardust with), so a
// recipe's model mode reaches the model through a device and the recipe
// never imports the simulated lab.
//
// The protocol: newline-delimited JSON over TCP, a request
// {"id":n,"op":"...","args":{...}} answered by {"id":n,"ok":true,"result":...}
// or {"id":n,"ok":false,"error":"..."}; one fabric per connection, made by
// open. Ops:
//
//	identity -> {vendor, model, serial, firmware}
//	open {kind: cells|packets, fabric, packet, seed: [s1, s2]}
//	run {slots} -> {now}
//	stats -> the cell fabric's FabricStats; the packet fabric's {now, sent, drops, retransmits}
//	add_flow {src, port, prio, bytes, packet_bytes} -> {id}
//	flow {id} -> {delivered, done, done_slot, drops (packets)}
//	set_link {link, up}; set_fe {tier, fe, up}; set_link_error_rate {link, rate, threshold}
//	link {link} -> {valid, corrupted, faulty_periods}
//	fa_link {fa, j, dst} -> {link, fe, reaches (dst >= 0)}
//	run_until_done {until, step} -> {now, done}
//	flows -> [flow state, ...] in the order the flows were added
//	watch {slots, origin, bin, links, reach: [{fa, j, dst}]} -> {now, start, changes, bins}
//
// A recipe holds a fabric by the kind's interfaces, Fabric and Faults
// (kind.go), never by this driver's Conn.
package fabric

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	sd "testbed/p4/stardust"
	"testbed/transport"
)

// Kind is the inventory's kind of a fabric.
const Kind = "fabric"

// Options configure Dial.
type Options struct {
	// Timeout bounds one exchange whose context has no earlier deadline
	// (default 5 s), except the ones that step the fabric (run,
	// run_until_done, watch), which RunTimeout bounds (default 10 min:
	// a large fabric computes a few thousand slots a second).
	Timeout    time.Duration
	RunTimeout time.Duration
	Transcript *transport.Transcript
}

// stepping are the ops that step the fabric: their reply comes when the
// slots asked for have been computed.
var stepping = map[string]bool{"run": true, "run_until_done": true, "watch": true}

// Conn is a connection to a fabric; it holds the fabric open made.
type Conn struct {
	name string
	opts Options

	mu   sync.Mutex
	conn *transport.LineConn
	id   int64
}

// Dial connects to the fabric at address (tcp://host:port); name is the
// inventory's device name, for errors.
func Dial(ctx context.Context, name, address string, opts Options) (*Conn, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.RunTimeout <= 0 {
		opts.RunTimeout = 10 * time.Minute
	}
	// Its answers grow with the run (flows: one state a flow; watch: a
	// sample a bin), so the line bound is a guard against a runaway
	// stream, not the size of an answer: 256 MiB.
	c, err := transport.Dial(ctx, address, transport.DialOptions{Transcript: opts.Transcript, MaxLine: 256 << 20})
	if err != nil {
		return nil, fmt.Errorf("%s: connect: %w", name, err)
	}
	return &Conn{name: name, opts: opts, conn: c}, nil
}

// Close closes the connection and the fabric with it.
func (c *Conn) Close() error { return c.conn.Close() }

// call runs one op and decodes its result into out (nil: ignored).
func (c *Conn) call(ctx context.Context, op string, args, out any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	timeout := c.opts.Timeout
	if stepping[op] {
		timeout = max(timeout, c.opts.RunTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c.id++
	req, err := json.Marshal(map[string]any{"id": c.id, "op": op, "args": args})
	if err != nil {
		return fmt.Errorf("%s: %s: %w", c.name, op, err)
	}
	if err := c.conn.Send(ctx, string(req)); err != nil {
		return fmt.Errorf("%s: %s: %w", c.name, op, err)
	}
	line, err := c.conn.ReadLine(ctx)
	if err != nil {
		// Out of step from here: a late answer would be taken for the
		// next request's.
		c.conn.Close()
		return fmt.Errorf("%s: %s: %w", c.name, op, err)
	}
	var resp struct {
		ID     int64           `json:"id"`
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &resp); err != nil || resp.ID != c.id {
		c.conn.Close()
		return fmt.Errorf("%s: %s: reply %.80q is not the answer to request %d", c.name, op, line, c.id)
	}
	if !resp.OK {
		return fmt.Errorf("%s: %s", c.name, resp.Error)
	}
	if out != nil {
		if err := json.Unmarshal(resp.Result, out); err != nil {
			return fmt.Errorf("%s: %s: result: %w", c.name, op, err)
		}
	}
	return nil
}

// Identity implements drivers.Device.
func (c *Conn) Identity(ctx context.Context) (transport.Identity, error) {
	var id transport.Identity
	err := c.call(ctx, "identity", struct{}{}, &id)
	return id, err
}

// Seed is the two words of a PCG seed: the fabric's random choices
// (spraying orders, arrivals) follow from it alone.
type Seed [2]uint64

// OpenCells makes the connection's fabric a Stardust fabric of cells.
func (c *Conn) OpenCells(ctx context.Context, f sd.Fabric, seed Seed) error {
	return c.call(ctx, "open", map[string]any{"kind": "cells", "fabric": f, "seed": seed}, nil)
}

// OpenPackets makes it the packet-switched fabric of the same hosts and
// links.
func (c *Conn) OpenPackets(ctx context.Context, f sd.Fabric, o sd.PacketFabricOpts, seed Seed) error {
	return c.call(ctx, "open", map[string]any{"kind": "packets", "fabric": f, "packet": o, "seed": seed}, nil)
}

// Run steps the fabric n slots and returns the slot it is at.
func (c *Conn) Run(ctx context.Context, slots int64) (int64, error) {
	var r struct{ Now int64 }
	err := c.call(ctx, "run", map[string]int64{"slots": slots}, &r)
	return r.Now, err
}

// Stats reads a cell fabric's statistics.
func (c *Conn) Stats(ctx context.Context) (sd.FabricStats, error) {
	var s sd.FabricStats
	err := c.call(ctx, "stats", struct{}{}, &s)
	return s, err
}

// PacketCounters are the packet fabric's counters.
type PacketCounters struct {
	Now, Sent, Drops, Retransmits int64
}

// PacketStats reads the packet fabric's counters.
func (c *Conn) PacketStats(ctx context.Context) (PacketCounters, error) {
	var p PacketCounters
	err := c.call(ctx, "stats", struct{}{}, &p)
	return p, err
}

// Flow is a flow to offer: bytes from FA Src to global host port Port in
// priority Prio, as packets of PacketBytes.
type Flow struct {
	Src         int   `json:"src"`
	Port        int   `json:"port"`
	Prio        int   `json:"prio"`
	Bytes       int64 `json:"bytes"`
	PacketBytes int   `json:"packet_bytes"`
}

// AddFlow offers a flow and returns its number.
func (c *Conn) AddFlow(ctx context.Context, f Flow) (int, error) {
	var r struct{ ID int }
	err := c.call(ctx, "add_flow", f, &r)
	return r.ID, err
}

// FlowState is how far a flow got: bytes delivered, whether its last byte
// left the egress port and in which (fractional) slot, packets dropped
// (packet fabric).
type FlowState struct {
	Delivered int64
	Done      bool
	DoneSlot  float64 `json:"done_slot"`
	Drops     int64
}

// Flow reads flow id's state.
func (c *Conn) Flow(ctx context.Context, id int) (FlowState, error) {
	var s FlowState
	err := c.call(ctx, "flow", map[string]int{"id": id}, &s)
	return s, err
}

// SetLink fails (up false) or restores a fabric link, both directions.
func (c *Conn) SetLink(ctx context.Context, link int, up bool) error {
	return c.call(ctx, "set_link", map[string]any{"link": link, "up": up}, nil)
}

// SetFE fails or restores FE fe of tier 1 or 2.
func (c *Conn) SetFE(ctx context.Context, tier, fe int, up bool) error {
	return c.call(ctx, "set_fe", map[string]any{"tier": tier, "fe": fe, "up": up}, nil)
}

// SetLinkErrorRate sets an FA-FE link's cell error rate and the measured
// rate above which its receiving end marks it faulty.
func (c *Conn) SetLinkErrorRate(ctx context.Context, link int, rate, threshold float64) error {
	return c.call(ctx, "set_link_error_rate", map[string]any{"link": link, "rate": rate, "threshold": threshold}, nil)
}

// LinkState is what the ends of an FA-FE link know of it.
type LinkState struct {
	Valid         bool
	Corrupted     int64
	FaultyPeriods int64 `json:"faulty_periods"`
}

// Link reads FA-FE link's state.
func (c *Conn) Link(ctx context.Context, link int) (LinkState, error) {
	var s LinkState
	err := c.call(ctx, "link", map[string]int{"link": link}, &s)
	return s, err
}

// FALink is FA fa's link j: its number, the first-tier FE at its far end,
// and whether fa's table lets it send cells for FA dst on it.
type FALink struct {
	Link, FE int
	Reaches  bool
}

// FALink reads FA fa's link j, and its reach towards FA dst (dst < 0: not
// asked).
func (c *Conn) FALink(ctx context.Context, fa, j, dst int) (FALink, error) {
	var l FALink
	err := c.call(ctx, "fa_link", map[string]int{"fa": fa, "j": j, "dst": dst}, &l)
	return l, err
}

// RunUntilDone steps the fabric step slots at a time while it is before
// slot until and some flow has not delivered its last byte; it returns
// the slot reached and whether every flow is done.
func (c *Conn) RunUntilDone(ctx context.Context, until, step int64) (int64, bool, error) {
	var r struct {
		Now  int64
		Done bool
	}
	err := c.call(ctx, "run_until_done", map[string]int64{"until": until, "step": step}, &r)
	return r.Now, r.Done, err
}

// Flows reads every flow's state, in the order the flows were added.
func (c *Conn) Flows(ctx context.Context) ([]FlowState, error) {
	var fs []FlowState
	err := c.call(ctx, "flows", struct{}{}, &fs)
	return fs, err
}

// Watch steps a cell fabric slot by slot and reports the watched state's
// changes and the bins' samples (see WatchSpec and Trace).
func (c *Conn) Watch(ctx context.Context, w WatchSpec) (Trace, error) {
	var t Trace
	err := c.call(ctx, "watch", w, &t)
	return t, err
}

// String names the connection in logs.
func (c *Conn) String() string { return c.name + " (fabric " + strconv.Quote(c.conn.Address()) + ")" }
