// Package lgbench is the LinkGuardian bench the loss-sweep and backpressure
// recipes share (LinkGuardian §4): a sender switch and a receiver switch
// joined by a fibre with a VOA on it, the receiver forwarding what it
// delivers out of a sink port. It brings the switches to the programs and
// ports the experiment needs, sets the link's loss rate through the VOA by
// measuring, configures the protection mode, and runs the switch packet
// generator's line-rate stress test, reading every figure from the
// switches' own counters, registers and queues.
//
// Policy, stated once for both recipes: port counters are never cleared
// (every figure is a difference of two reads); queue watermarks are cleared
// before each measurement; the protection entries and backpressure
// thresholds found on the switches are put back at the end or on abort;
// ports the bench adds are deleted again; a switch daemon the bench starts
// is left running with the LinkGuardian program. With replace_program, a
// program the run found is restarted at its end, and what the run changed
// under a program it replaces is undone before the replacement (a switch
// in a line of three receives on one link and sends on the next).
package lgbench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"testbed/dut/p4switch"
	"testbed/inventory"
	o "testbed/orchestrator"
	lg "testbed/p4/linkguardian"
	"testbed/results"
)

// Mode is a protection mode of the link.
type Mode string

// The modes the recipes compare (LinkGuardian §4.1).
const (
	Off         Mode = "off"
	LinkGuard   Mode = "linkguardian"
	NonBlocking Mode = "linkguardian-nb"
)

// ParseMode checks a mode name.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case Off, LinkGuard, NonBlocking:
		return Mode(s), nil
	}
	return "", fmt.Errorf("mode %q (expected off, linkguardian or linkguardian-nb)", s)
}

// Needs is what a bench link must offer: a VOA on it and its ends on two
// switches.
var Needs = o.LinkNeeds{VOA: true, Across: "switch"}

// Link is one bound bench link as planned: names and numbers, no devices.
type Link struct {
	Link         *inventory.Link
	Sender       string // device names
	Receiver     string
	TxPort       int // dev ports
	RxPort       int
	Sink         int
	Gbps         int
	FEC          string
	LineRateBps  float64
	VOA          string
	VOAChannel   int
	SinkPortName string
	// SinkGbps is the speed the sink port is added at: the fastest bench
	// link's, so every link's delivered traffic fits through it.
	SinkGbps int
	// Unprotected: bound by BindUnprotected, for runs with protection off;
	// Open leaves LinkGuardian's fixed-function setup alone.
	Unprotected bool
}

// Bind fills the recipe's link role with bench links and checks every
// port is a dev port number and the receiver has the sink port.
func Bind(pc *o.PlanContext, names []string, sinkPort string) ([]Link, []o.Binding, error) {
	return bind(pc, names, sinkPort, true)
}

// BindUnprotected is Bind for a recipe that runs every link with its
// protection off (a link qualification): any link speed the switch has,
// not only those whose LinkGuardian timings were measured.
func BindUnprotected(pc *o.PlanContext, names []string, sinkPort string) ([]Link, []o.Binding, error) {
	return bind(pc, names, sinkPort, false)
}

func bind(pc *o.PlanContext, names []string, sinkPort string, protect bool) ([]Link, []o.Binding, error) {
	links, binds, err := o.BindLinks(pc.Lab, "link", names, Needs)
	if err != nil {
		return nil, nil, err
	}
	var out []Link
	for _, l := range links {
		t, ok := inventory.LookupTransceiver(l.Transceiver)
		if !ok {
			return nil, nil, pc.Lab.LinkErrorf(l, "transceiver", "unknown transceiver %q", l.Transceiver)
		}
		b := Link{Link: l, Sender: l.A.Device, Receiver: l.B.Device, FEC: l.FEC, LineRateBps: t.RateBps,
			Gbps: int(t.RateBps / 1e9), VOA: l.VOA.Device, VOAChannel: l.VOA.Channel, SinkPortName: sinkPort, Unprotected: !protect}
		if b.FEC == "" {
			b.FEC = "none"
		}
		if b.TxPort, err = devPort(pc.Lab, l.A.Device, l.A.Port); err != nil {
			return nil, nil, err
		}
		if b.RxPort, err = devPort(pc.Lab, l.B.Device, l.B.Port); err != nil {
			return nil, nil, err
		}
		if b.Sink, err = devPort(pc.Lab, l.B.Device, sinkPort); err != nil {
			return nil, nil, fmt.Errorf("%w (the receiver forwards delivered frames out of its sink port; set sink_port)", err)
		}
		if _, err := lg.FlightResume(t.RateBps); err != nil && protect {
			return nil, nil, pc.Lab.LinkErrorf(l, "transceiver", "%v", err)
		}
		out = append(out, b)
	}
	fastest := 0
	for _, b := range out {
		fastest = max(fastest, b.Gbps)
	}
	for i := range out {
		out[i].SinkGbps = fastest
	}
	binds = append(binds, o.Binding{Role: "programs", Resource: "switches",
		Detail: fmt.Sprintf("%s runs on the sending end, %s on the receiving end", lg.ProgramSender, lg.ProgramReceiver)})
	return out, binds, nil
}

func devPort(inv *inventory.Inventory, device, port string) (int, error) {
	d, ok := inv.Device(device)
	if !ok {
		return 0, fmt.Errorf("%s: no device %q", inv.Path, device)
	}
	v, ok := d.Ports[port]
	if !ok {
		return 0, fmt.Errorf("%s: device %s has no port %q", inv.Path, device, port)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 511 {
		return 0, fmt.Errorf("%s: device %s port %s is %q: expected a Tofino dev port number (0..511)", inv.Path, device, port, v)
	}
	return n, nil
}

// Bench is a bench link with its switches open.
type Bench struct {
	Link
	Tx, Rx p4switch.Switch
	rc     *o.RunContext
	// txRTT is the sender's measured round trip: a generator's stop after
	// an error or abort has a deadline derived from it.
	txRTT o.RoundTrip
}

// Options say how far the bench may change the switches.
type Options struct {
	// ReplaceProgram lets the bench restart a switch daemon that runs a
	// program other than LinkGuardian's.
	ReplaceProgram bool
	PortUpTimeout  time.Duration
}

// Open brings the link's switches to the LinkGuardian programs and its
// ports up, registering what must be undone.
func Open(ctx context.Context, rc *o.RunContext, l Link, opts Options) (*Bench, error) {
	b := &Bench{Link: l, rc: rc}
	var err error
	if b.Tx, err = o.As[p4switch.Switch](rc, l.Sender); err != nil {
		return nil, err
	}
	if b.Rx, err = o.As[p4switch.Switch](rc, l.Receiver); err != nil {
		return nil, err
	}
	if err := b.program(ctx, l.Sender, b.Tx, lg.ProgramSender, opts); err != nil {
		return nil, err
	}
	if err := b.program(ctx, l.Receiver, b.Rx, lg.ProgramReceiver, opts); err != nil {
		return nil, err
	}
	for _, p := range []struct {
		dev  string
		sw   p4switch.Switch
		port int
		gbps int
	}{{l.Sender, b.Tx, l.TxPort, l.Gbps}, {l.Receiver, b.Rx, l.RxPort, l.Gbps}, {l.Receiver, b.Rx, l.Sink, l.SinkGbps}} {
		if err := b.port(ctx, p.dev, p.sw, p.port, p.gbps, p.port == l.Sink); err != nil {
			return nil, err
		}
	}
	if err := b.remember(ctx); err != nil {
		return nil, err
	}
	if !l.Unprotected {
		if err := b.setup(ctx); err != nil { // setup.go
			return nil, err
		}
	}
	// The link's ports come up only with light through its VOA: a closed
	// shutter (an N776x powers up closed) is opened, and closed again at
	// the end.
	if err := rc.EnsureLight(ctx, l.VOA, l.VOAChannel); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, opts.PortUpTimeout)
	defer cancel()
	for _, p := range []struct {
		dev  string
		sw   p4switch.Switch
		port int
	}{{l.Sender, b.Tx, l.TxPort}, {l.Receiver, b.Rx, l.RxPort}} {
		if err := p.sw.WaitPortUp(wctx, p.port); err != nil {
			return nil, fmt.Errorf("%s: link %s: %w", p.dev, l.Link.Name, err)
		}
	}
	return b, nil
}

func (b *Bench) program(ctx context.Context, dev string, sw p4switch.Switch, want string, opts Options) error {
	got, err := sw.Program(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", dev, err)
	}
	found := b.rc.ProgramFound(dev, got)
	if got == want {
		return sw.Ready(ctx)
	}
	if got != "" && !opts.ReplaceProgram {
		return fmt.Errorf("%s runs the P4 program %q, not %q: set replace_program=true to restart its switch daemon with %s", dev, got, want, want)
	}
	after := "it is left running"
	if got != "" {
		// What the run changed under the program it replaces belongs to
		// that program (its ports, entries, registers): undone now, while
		// it runs. A switch in the middle of a line receives on one link
		// and sends on the next.
		if err := b.rc.SettleProgram(ctx, dev, got, "bf_switchd restarts with "+want); err != nil {
			return err
		}
		if got == found {
			after = "the run restarts " + found + ", the program found, at its end"
			if b.rc.FirstTouch("lgbench/program/" + dev) {
				if err := b.rc.Journal(dev, o.Undo{Kind: o.UndoTofinoProgram, Desc: fmt.Sprintf("restart bf_switchd on %s with %s, the program found", dev, found),
					Found: found, Args: map[string]string{"program": found}}); err != nil {
					return err
				}
			}
		}
	}
	b.rc.Event(results.Event{Type: "setting", Device: dev, Message: fmt.Sprintf("starting bf_switchd with %s (was: %q); %s", want, got, after),
		Fields: map[string]any{"program": want, "previous_program": got}})
	if err := sw.LoadProgram(ctx, want); err != nil {
		return fmt.Errorf("%s: %w", dev, err)
	}
	return nil
}

func (b *Bench) port(ctx context.Context, dev string, sw p4switch.Switch, port, gbps int, sink bool) error {
	st, err := sw.PortStatus(ctx, port)
	switch {
	case p4switch.IsNotFound(err):
		fec := b.FEC
		if sink {
			fec = "none"
		}
		if err := b.rc.Journal(dev, o.Undo{Kind: o.UndoTofinoDeletePort, Desc: fmt.Sprintf("delete port %d the run added on %s", port, dev),
			Args: map[string]int{"port": port}}); err != nil {
			return err
		}
		if err := sw.AddPort(ctx, port, gbps, fec); err != nil {
			return fmt.Errorf("%s: %w", dev, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("%s: %w", dev, err)
	case sink && st.SpeedGbps < b.Gbps:
		return fmt.Errorf("%s: sink port %d runs at %s, slower than link %s (%d Gb/s): delete the port or choose another sink_port", dev, port, st.Speed, b.Link.Link.Name, b.Gbps)
	case !sink && st.SpeedGbps != gbps:
		return fmt.Errorf("%s: port %d runs at %s, link %s needs %d Gb/s: delete the port or fix the inventory", dev, port, st.Speed, b.Link.Link.Name, gbps)
	}
	return nil
}

// remember records the protection entries and thresholds found, once per
// run and link, in the undo journal of the switch they are on (one entry
// per table and register, so each switch's restore stands alone).
func (b *Bench) remember(ctx context.Context) error {
	if !b.rc.FirstTouch("lgbench/" + b.Sender + "/" + strconv.Itoa(b.TxPort)) {
		return nil
	}
	for _, table := range []string{lg.TableLinkProtect, lg.TableRetxMcast} {
		es, err := b.Tx.Entries(ctx, table)
		if err != nil {
			return fmt.Errorf("%s: %w", b.Sender, err)
		}
		var found *p4switch.Entry
		for i := range es {
			if es[i].Key["egress_port"] == int64(b.TxPort) {
				found = &es[i]
			}
		}
		desc := fmt.Sprintf("remove the %s entry of port %d on %s", table, b.TxPort, b.Sender)
		if found != nil {
			desc = fmt.Sprintf("restore the %s entry of port %d found on %s", table, b.TxPort, b.Sender)
		}
		if err := b.rc.Journal(b.Sender, o.Undo{Kind: o.UndoTofinoEntry, Desc: desc, Found: found,
			Args: map[string]any{"table": table, "key": portKey(b.TxPort), "entry": found}}); err != nil {
			return err
		}
	}
	for _, reg := range []string{lg.RegPauseThreshold, lg.RegResumeThreshold} {
		v, err := b.Rx.ReadRegister(ctx, reg, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", b.Receiver, err)
		}
		if len(v) == 0 {
			return fmt.Errorf("%s: register %s read no value", b.Receiver, reg)
		}
		if err := b.rc.Journal(b.Receiver, o.Undo{Kind: o.UndoTofinoRegister, Desc: fmt.Sprintf("restore %s[0] = %d found on %s", reg, v[0], b.Receiver),
			Found: v[0], Args: map[string]any{"name": reg, "index": 0, "value": v[0]}}); err != nil {
			return err
		}
	}
	return nil
}

// journalPktgen records, the first time a run starts a packet generator
// application on the sender, the undo that stops it.
func (b *Bench) journalPktgen(appID int) error {
	if !b.rc.FirstTouch(fmt.Sprintf("pktgen/%s/%d", b.Sender, appID)) {
		return nil
	}
	return b.rc.Journal(b.Sender, o.Undo{Kind: o.UndoTofinoPktgen, Desc: fmt.Sprintf("stop packet generator application %d on %s", appID, b.Sender),
		Args: map[string]int{"app_id": appID}})
}

func portKey(p int) map[string]int64 { return map[string]int64{"egress_port": int64(p)} }

// Protection is a protection configuration of the link.
type Protection struct {
	Mode   Mode
	Copies int
	// PauseCells and ResumeCells are the receiver's backpressure
	// thresholds; zero turns backpressure off.
	PauseCells, ResumeCells int
	Dummies                 int // dummy_pkt_max_count
}

// Protect configures the sender's entries and the receiver's thresholds.
func (b *Bench) Protect(ctx context.Context, p Protection) error {
	for _, t := range []string{lg.TableLinkProtect, lg.TableRetxMcast} {
		if err := b.Tx.DeleteEntry(ctx, t, portKey(b.TxPort)); err != nil && !p4switch.IsNotFound(err) {
			return fmt.Errorf("%s: %w", b.Sender, err)
		}
	}
	// The thresholds are one pair per receiver (index 0): the program
	// protects one link per pipe (p4/linkguardian/receiver.p4).
	idx := 0
	if err := b.Rx.WriteRegister(ctx, lg.RegPauseThreshold, idx, int64(p.PauseCells)); err != nil {
		return fmt.Errorf("%s: %w", b.Receiver, err)
	}
	if err := b.Rx.WriteRegister(ctx, lg.RegResumeThreshold, idx, int64(p.ResumeCells)); err != nil {
		return fmt.Errorf("%s: %w", b.Receiver, err)
	}
	if p.Mode == Off {
		return nil
	}
	missing, err := b.missingSetup(ctx, p.Copies) // setup.go
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		b.rc.Event(results.Event{Type: "warning", Device: b.Sender, Message: fmt.Sprintf("link %s: %s will not protect: %s", b.Link.Link.Name, p.Mode, strings.Join(missing, "; ")),
			Fields: map[string]any{"link": b.Link.Link.Name, "missing": missing}})
	}
	blocking := int64(1)
	if p.Mode == NonBlocking {
		blocking = 0
	}
	if err := b.Tx.AddEntry(ctx, lg.TableRetxMcast, p4switch.Entry{Key: portKey(b.TxPort), Action: lg.ActionRetxCopies,
		Data: map[string]int64{"num_copies": int64(p.Copies)}}); err != nil {
		return fmt.Errorf("%s: %w", b.Sender, err)
	}
	if err := b.Tx.AddEntry(ctx, lg.TableLinkProtect, p4switch.Entry{Key: portKey(b.TxPort), Action: lg.ActionProtect,
		Data: map[string]int64{"dummy_pkt_max_count": int64(p.Dummies), "blocking_mode": blocking}}); err != nil {
		return fmt.Errorf("%s: %w", b.Sender, err)
	}
	return nil
}

// DefaultProtection is the paper's configuration for a mode at a measured
// loss rate: copies from Eq. 2 for the target, thresholds from the link
// speed's t_flight_resume (ordered mode with backpressure only).
func (b *Bench) DefaultProtection(mode Mode, target, actual float64, backpressure bool, dummies int) (Protection, error) {
	p := Protection{Mode: mode, Dummies: dummies}
	if mode == Off {
		return p, nil
	}
	var err error
	if actual > 0 {
		p.Copies, err = lg.Copies(target, actual)
	} else {
		p.Copies = 1 // a link that lost nothing still gets one copy
	}
	if err != nil {
		return p, err
	}
	if mode == LinkGuard && backpressure {
		tf, err := lg.FlightResume(b.LineRateBps)
		if err != nil {
			return p, err
		}
		p.PauseCells, p.ResumeCells = lg.Thresholds(tf)
	}
	return p, nil
}
