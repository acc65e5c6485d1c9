// Package reactor holds the REACToR recipes (Liu et al., "Circuit
// Switching Under the Radar with REACToR", NSDI 2014): reactor-reconfig
// (§5.2) and reactor-hybrid (§5.4). They drive a microsecond optical
// circuit switch through its driver (instruments/ocs) and the hosts of a
// hybrid ToR through their agents' REACToR host control (hostagent,
// /v1/reactor/); the recipe plays the REACToR controller: it computes
// the schedules (package sched), loads them into the switch, hands each
// host its classes, schedule and heartbeat, and starts and measures the
// flows.
package reactor

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"testbed/experiments/ocscharacterize"
	"testbed/hostagent"
	"testbed/instruments/ocs"
	"testbed/internal/sched"
	"testbed/inventory"
	o "testbed/orchestrator"
	"testbed/results"
)

// Host is one host of a hybrid ToR as the inventory describes it.
type Host struct {
	Name  string
	Iface string
	Addr  netip.Addr
	// Port is the switch port (input and output) the host is on.
	Port int
	// LinkBps is its link's rate; EPSBps what the ToR's packet switch
	// carries at its port (option reactor_eps_gbps, default the link's).
	LinkBps, EPSBps float64
	Reactor         string
}

// Lab is what a REACToR recipe runs on: a microsecond switch and hosts on
// its ports.
type Lab struct {
	OCS   string
	Hosts []Host
}

// Bind finds the hosts of a hybrid ToR: hosts with the option reactor
// (the named one, or any) whose link ends on a port of one microsecond
// switch (the named one, or the hosts' only one), in port order, n of
// them (0: all). It says precisely what is missing when the lab does not
// fit.
func Bind(pc *o.PlanContext, ocsName, reactorName string, n int) (Lab, []o.Binding, error) {
	inv := pc.Lab
	var why []string
	bySwitch := map[string][]Host{}
	for _, name := range inv.DeviceNames() {
		d, _ := inv.Device(name)
		if d.Kind != "host" || d.Options["reactor"] == "" || (reactorName != "" && d.Options["reactor"] != reactorName) {
			continue
		}
		h, sw, err := hostOf(inv, d)
		if err != nil {
			why = append(why, "  "+err.Error())
			continue
		}
		if ocsName != "" && sw != ocsName {
			continue
		}
		bySwitch[sw] = append(bySwitch[sw], h)
	}
	var switches []string
	for sw := range bySwitch {
		switches = append(switches, sw)
	}
	sort.Strings(switches)
	if len(switches) == 0 {
		msg := fmt.Sprintf("the lab in %s cannot serve this recipe: it needs hosts with the option reactor", inv.Path)
		if reactorName != "" {
			msg += "=" + reactorName
		}
		msg += " whose link ends on a port of a microsecond circuit switch"
		if ocsName != "" {
			msg += " (" + ocsName + ")"
		}
		if len(why) > 0 {
			msg += "; none fits:\n" + strings.Join(why, "\n")
		} else {
			msg += "; it has none (see inventory/README.md, \"Hosts on an optical circuit switch\")"
		}
		return Lab{}, nil, o.Inputf("%s", msg)
	}
	if len(switches) > 1 && ocsName == "" {
		return Lab{}, nil, o.Inputf("hosts of a REACToR hang off several switches (%s): choose one with --set ocs=...", strings.Join(switches, ", "))
	}
	sw := switches[0]
	dev, bind, err := ocscharacterize.BindSwitch(inv, sw)
	if err != nil {
		return Lab{}, nil, err
	}
	hosts := bySwitch[sw]
	sort.Slice(hosts, func(i, j int) bool { return hosts[i].Port < hosts[j].Port })
	if n == 0 {
		n = len(hosts)
	}
	if n < 2 || n > len(hosts) {
		return Lab{}, nil, o.Inputf("hosts=%d: %s has %d REACToR hosts (%s); at least 2 are needed", n, dev.Name, len(hosts), names(hosts))
	}
	hosts = hosts[:n]
	for _, h := range hosts[1:] {
		if h.LinkBps != hosts[0].LinkBps {
			return Lab{}, nil, o.Inputf("hosts %s and %s have links of %g and %g b/s: a REACToR's circuits run at one rate", hosts[0].Name, h.Name, hosts[0].LinkBps, h.LinkBps)
		}
	}
	binds := []o.Binding{bind}
	for _, h := range hosts {
		binds = append(binds, o.Binding{Role: "host", Resource: h.Name, Detail: fmt.Sprintf("%s %s on %s port %d, %g Gb/s, EPS %g Gb/s", h.Iface, h.Addr, sw, h.Port, h.LinkBps/1e9, h.EPSBps/1e9)})
	}
	return Lab{OCS: sw, Hosts: hosts}, binds, nil
}

func names(hs []Host) string {
	var s []string
	for _, h := range hs {
		s = append(s, h.Name)
	}
	return strings.Join(s, ", ")
}

// hostOf reads a REACToR host's link to its switch.
func hostOf(inv *inventory.Inventory, d *inventory.Device) (Host, string, error) {
	h := Host{Name: d.Name, Reactor: d.Options["reactor"]}
	for _, l := range inv.Links {
		for _, e := range [][2]inventory.Endpoint{{l.A, l.B}, {l.B, l.A}} {
			self, peer := e[0], e[1]
			pd, ok := inv.Device(peer.Device)
			if self.Device != d.Name || !ok || pd.Kind != "ocs" {
				continue
			}
			if !ocscharacterize.RunsSchedules(pd) {
				return h, "", fmt.Errorf("%s: its link %s ends on %s (%s), which runs no schedules", d.Name, l.Name, pd.Name, pd.Driver)
			}
			port, err := strconv.Atoi(peer.Port)
			if err != nil || port < 1 {
				return h, "", fmt.Errorf("%s: link %s ends on %s port %q, expected a number from 1", d.Name, l.Name, pd.Name, peer.Port)
			}
			t, ok := inventory.LookupTransceiver(l.Transceiver)
			if !ok {
				return h, "", fmt.Errorf("%s: link %s: unknown transceiver %q", d.Name, l.Name, l.Transceiver)
			}
			addr := d.Ports[self.Port]
			a, err := hostAddr(addr)
			if err != nil {
				return h, "", fmt.Errorf("%s: port %s: its address %q (ports: {%s: <address>/<prefix length>}): %v", d.Name, self.Port, addr, self.Port, err)
			}
			h.Iface, h.Addr, h.Port, h.LinkBps, h.EPSBps = self.Port, a, port, t.RateBps, t.RateBps
			if v := d.Options["reactor_eps_gbps"]; v != "" {
				g, err := strconv.ParseFloat(v, 64)
				if err != nil || g < 0 {
					return h, "", fmt.Errorf("%s: option reactor_eps_gbps=%q is not a rate in Gb/s", d.Name, v)
				}
				h.EPSBps = g * 1e9
			}
			return h, pd.Name, nil
		}
	}
	return h, "", fmt.Errorf("%s: no link from it to an ocs port", d.Name)
}

// hostAddr reads an interface's address, with or without its prefix
// length ("10.20.0.1/24").
func hostAddr(s string) (netip.Addr, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Addr(), nil
	}
	return netip.ParseAddr(s)
}

// Devices lists the lab's devices, switch first.
func (l Lab) Devices() []string {
	out := []string{l.OCS}
	for _, h := range l.Hosts {
		out = append(out, h.Name)
	}
	return out
}

// Run is a REACToR lab opened for a run: the switch and the hosts' agents.
type Run struct {
	Lab
	RC     *o.RunContext
	Switch ocs.CircuitSwitch
	Sched  ocs.Scheduler
	Agents []*hostagent.Client
	// Sinks are where each host's flows go (host:port).
	Sinks []string
}

// Open opens the switch (registering its return to dark) and every
// host's agent (registering the removal of its classes and flows).
func Open(ctx context.Context, rc *o.RunContext, l Lab) (*Run, error) {
	if err := rc.DarkOCSOnExit(l.OCS); err != nil {
		return nil, err
	}
	cs, err := rc.OCS(l.OCS)
	if err != nil {
		return nil, err
	}
	s, err := ocs.AsScheduler(cs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.OCS, err)
	}
	r := &Run{Lab: l, RC: rc, Switch: cs, Sched: s, Agents: make([]*hostagent.Client, len(l.Hosts)), Sinks: make([]string, len(l.Hosts))}
	if p := s.Constraints().Ports; p.Inputs < len(l.Hosts) {
		return nil, fmt.Errorf("%s has %s ports for %d hosts", l.OCS, p, len(l.Hosts))
	}
	err = r.each(ctx, func(ctx context.Context, i int, h Host) error {
		a, err := rc.HostAgent(ctx, h.Name)
		if err != nil {
			return err
		}
		c := hostagent.NewClient(a.Client, a.BaseURL)
		st, err := c.Reactor(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", h.Name, err)
		}
		if !st.Available {
			return fmt.Errorf("%s: REACToR host control is not available: %s", h.Name, st.Reason)
		}
		if rc.FirstTouch("reactor/" + h.Name) {
			if err := rc.Journal(h.Name, o.Undo{Kind: o.UndoReactorTeardown, Desc: "remove the REACToR classes and flows of " + h.Name}); err != nil {
				return err
			}
		}
		sink, err := c.ReactorStartSink(ctx, hostagent.ReactorSinkRequest{Listen: netip.AddrPortFrom(h.Addr, 0).String()})
		if err != nil {
			return fmt.Errorf("%s: start the traffic sink: %w", h.Name, err)
		}
		r.Agents[i], r.Sinks[i] = c, netip.AddrPortFrom(h.Addr, uint16(sink.Port)).String()
		return nil
	})
	return r, err
}

// each runs f for every host at once and joins the errors.
func (r *Run) each(ctx context.Context, f func(ctx context.Context, i int, h Host) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(r.Hosts))
	sem := make(chan struct{}, 8)
	for i, h := range r.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = f(ctx, i, h)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Each runs f for every host's agent at once.
func (r *Run) Each(ctx context.Context, f func(ctx context.Context, i int, h Host, c *hostagent.Client) error) error {
	return r.each(ctx, func(ctx context.Context, i int, h Host) error {
		if err := f(ctx, i, h, r.Agents[i]); err != nil {
			return fmt.Errorf("%s: %w", h.Name, err)
		}
		return nil
	})
}

// Setup gives every host a class per other host and its EPS rate.
func (r *Run) Setup(ctx context.Context, epsBps float64) error {
	return r.Each(ctx, func(ctx context.Context, i int, h Host, c *hostagent.Client) error {
		s := hostagent.ReactorSetup{Interface: h.Iface, EPSBps: epsBps, PFC: len(r.Hosts) <= 8, LinkBps: h.LinkBps}
		for j, d := range r.Hosts {
			if j != i {
				s.Destinations = append(s.Destinations, hostagent.ReactorDestination{Name: d.Name, Address: d.Addr.String()})
			}
		}
		_, err := c.ReactorSetup(ctx, s)
		return err
	})
}

// Constraints are the switch's and hosts' scheduling constraints.
func (r *Run) Constraints(period, night, minSlot time.Duration, epsBps float64) sched.Constraints {
	return sched.Constraints{N: len(r.Hosts), Period: period, Delta: night, MinSlot: minSlot, LinkRate: r.Hosts[0].LinkBps, EPSRate: epsBps}
}

// ToSwitch is s with the switch's ports in place of host indices: input
// port p = Perm index + 1, as the switch numbers its ports. Ports no host
// uses stay dark.
func (r *Run) ToSwitch(s sched.Schedule) sched.Schedule {
	ports := 0
	for _, h := range r.Hosts {
		ports = max(ports, h.Port)
	}
	out := sched.Schedule{Period: s.Period, Delta: s.Delta}
	for _, sl := range s.Slots {
		perm := make([]int, ports)
		for p := range perm {
			perm[p] = sched.Dark
		}
		for i, j := range sl.Perm {
			if j != sched.Dark {
				perm[r.Hosts[i].Port-1] = r.Hosts[j].Port - 1
			}
		}
		out.Slots = append(out.Slots, sched.Slot{Duration: sl.Duration, Perm: perm})
	}
	return out
}

// HostSchedule is host i's part of a schedule (§3.4's first message).
func (r *Run) HostSchedule(i int, period int64, start time.Duration, s sched.Schedule) hostagent.ReactorSchedule {
	out := hostagent.ReactorSchedule{Period: period, StartNs: int64(start), PeriodNs: int64(s.Period), NightNs: int64(s.Delta)}
	for _, sl := range s.Slots {
		x := hostagent.ReactorSlot{DurationNs: int64(sl.Duration)}
		if j := sl.Perm[i]; j != sched.Dark {
			x.Dst = r.Hosts[j].Name
		}
		out.Slots = append(out.Slots, x)
	}
	return out
}

// Announce hands every host its part of period's schedule and the
// period's heartbeat.
func (r *Run) Announce(ctx context.Context, period int64, start time.Duration, s sched.Schedule) error {
	return r.Each(ctx, func(ctx context.Context, i int, h Host, c *hostagent.Client) error {
		if err := c.ReactorSchedule(ctx, r.HostSchedule(i, period, start, s)); err != nil {
			return err
		}
		_, err := c.ReactorHeartbeat(ctx, hostagent.ReactorHeartbeat{Period: period, StartNs: int64(start)})
		return err
	})
}

// WaitClock waits until the switch's clock reaches t, asking it, with
// gaps that follow transport.Poll's rule on a wait whose end is known
// (waitClock).
func (r *Run) WaitClock(ctx context.Context, t time.Duration) error {
	_, err := waitClock(ctx, t, r.Sched.Clock, time.Now, sleepCtx)
	return err
}

// Bounds of WaitClock's gaps: a wait of seconds is still seen within a
// second if the switch's clock jumps; a slow clock's rate is taken as no
// less than clockRateFloor of the wall's (a clock that stands is asked
// once a second, not never).
const (
	clockGapLongest = time.Second
	clockRateFloor  = 1e-3
)

// waitClock asks the switch's clock (ask) until it reads t or later and
// says how many times it asked. After an ask the gap is half of what is
// left to t in wall time (what is left on the switch's clock over the
// clock's rate, measured from the first ask to the last; 1 until two asks
// have measured it), at most clockGapLongest, and at least the time an
// ask takes as measured (the mean of the last asks, halved weights), as
// transport.Poll's gaps are: the asks of a wait grow with the logarithm of
// its length over an ask's time, a switch is kept busy by them at most
// half the time, and t is seen within an ask's time (and a timer's
// lateness) of passing. The last 3 ms were asked back to back, some 60
// times for a 50 us ask.
func waitClock(ctx context.Context, t time.Duration, ask func(context.Context) (time.Duration, error),
	now func() time.Time, sleep func(context.Context, time.Duration) error) (int, error) {
	var (
		took         time.Duration // an ask's time, smoothed
		wall0        time.Time     // the first ask's end
		clock0       time.Duration // the clock it read
		asks         int
		measuredRate = 1.0
	)
	for {
		t0 := now()
		c, err := ask(ctx)
		t1 := now()
		asks++
		if err != nil {
			return asks, err
		}
		if d := t1.Sub(t0); asks == 1 {
			took, wall0, clock0 = d, t1, c
		} else {
			took = (took + d) / 2
			if w := t1.Sub(wall0); w > 0 {
				measuredRate = max(float64(c-clock0)/float64(w), clockRateFloor)
			}
		}
		if c >= t {
			return asks, nil
		}
		left := time.Duration(float64(t-c) / measuredRate)
		if err := sleep(ctx, max(min(left/2, clockGapLongest), took)); err != nil {
			return asks, err
		}
	}
}

// sleepCtx waits d or until ctx ends, whose cause it then returns.
func sleepCtx(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-tm.C:
		return nil
	}
}

// Received waits until every host's data plane has passed t and returns
// the flows each received.
func (r *Run) Received(ctx context.Context, t time.Duration) ([][]hostagent.ReactorFlow, error) {
	out := make([][]hostagent.ReactorFlow, len(r.Hosts))
	err := r.Each(ctx, func(ctx context.Context, i int, h Host, c *hostagent.Client) error {
		fs, err := c.ReactorWaitClock(ctx, int64(t), 10*time.Millisecond)
		out[i] = fs.Received
		return err
	})
	return out, err
}

// Nights reads the switch's record from since until it holds nothing
// more or has passed to, keeping the nights that began in [from, to). (A
// switch still running keeps adding nights: a reader slower than the
// switch, as on a loaded machine, would never reach the end of the record.)
func (r *Run) Nights(ctx context.Context, since uint64, from, to time.Duration) ([]ocs.Night, uint64, error) {
	var out []ocs.Night
	for {
		nl, err := r.Sched.Nights(ctx, since)
		if err != nil {
			return out, since, err
		}
		past := false
		for _, n := range nl.Nights {
			if n.Start >= from && n.Start < to {
				out = append(out, n)
			}
			past = past || n.Start >= to
		}
		since = max(since, nl.Next)
		if len(nl.Nights) < 4096 || past {
			return out, since, nil
		}
	}
}

// RecordSince is where the switch's record stands now.
func (r *Run) RecordSince(ctx context.Context) (uint64, error) {
	var since uint64
	for {
		nl, err := r.Sched.Nights(ctx, since)
		if err != nil {
			return 0, err
		}
		since = max(since, nl.Next)
		if len(nl.Nights) < 4096 {
			return since, nil
		}
	}
}

// Windows reads every host's circuit windows up to until: it asks again
// while the host has more and has not reached until (a host's log grows
// while the schedule runs; this does not chase it).
func (r *Run) Windows(ctx context.Context, until time.Duration) ([][]hostagent.ReactorWindow, error) {
	out := make([][]hostagent.ReactorWindow, len(r.Hosts))
	err := r.Each(ctx, func(ctx context.Context, i int, h Host, c *hostagent.Client) error {
		var since uint64
		for {
			ws, err := c.ReactorWindows(ctx, since)
			if err != nil {
				return err
			}
			out[i] = append(out[i], ws.Windows...)
			if len(ws.Windows) == 0 || ws.Next == since || ws.ClockNs >= int64(until) {
				return nil
			}
			since = ws.Next
		}
	})
	return out, err
}

// Start loads s into the switch and starts it at the first multiple of
// its period at least margin from now, after registering the flows each
// host's flows(start) returns; the flows wait for the schedule. The
// margin is at least a few times what one registration was measured to
// take on the switch's clock (the control host may be loaded). When the
// hosts took longer than that to take their flows, or the start had
// passed on the switch's clock when it was asked to start, it tries
// again with twice the margin (or twice what the late attempt took), up
// to three times.
func (r *Run) Start(ctx context.Context, s sched.Schedule, margin time.Duration, flows func(i int, start time.Duration) []hostagent.ReactorFlowRequest) (time.Duration, error) {
	if err := r.Switch.Dark(ctx); err != nil {
		return 0, err
	}
	if err := r.Sched.LoadSchedule(ctx, s); err != nil {
		return 0, err
	}
	// One round trip to the switch, measured on its clock: registering
	// the flows takes a few per host, the start one more.
	t0, err := r.Sched.Clock(ctx)
	if err != nil {
		return 0, err
	}
	t1, err := r.Sched.Clock(ctx)
	if err != nil {
		return 0, err
	}
	margin = max(margin, startRoundTrips*time.Duration(len(r.Hosts)+1)*(t1-t0))
	for attempt := 0; ; attempt++ {
		start, took, late, err := r.register(ctx, s.Period, margin, flows)
		if err != nil {
			return 0, err
		}
		if late == "" {
			got, err := r.Sched.StartSchedule(ctx, ocs.StartAt{At: start})
			if err == nil {
				return got, nil
			}
			// Refused: if the switch's clock has passed the start, the
			// request came too late (a loaded control host); otherwise
			// the refusal is the switch's own.
			now, cerr := r.Sched.Clock(ctx)
			if cerr != nil || now < start {
				return 0, err
			}
			late = fmt.Sprintf("the switch's clock (%v) had passed the start planned at %v when it was asked to start", now, start)
			took = now - (start - margin)
		}
		if attempt == 3 {
			return 0, fmt.Errorf("%s: %s, even with a start margin of %v: raise start_margin", r.OCS, late, margin)
		}
		margin = max(2*margin, 2*took)
		r.RC.Event(results.Event{Type: "change", Device: r.OCS, Message: fmt.Sprintf("%s; trying again with a start margin of %v", late, margin)})
	}
}

// startRoundTrips is how many round trips to the switch, per host, a
// start's margin covers at least: a host takes its flows in a stop and a
// start request, the start one more, with room for a slow one.
const startRoundTrips = 8

// register hands the hosts their flows for a run that starts margin from
// now; took is how long that took on the switch's clock, late says why
// the start must move (the hosts were too slow).
func (r *Run) register(ctx context.Context, period, margin time.Duration, flows func(i int, start time.Duration) []hostagent.ReactorFlowRequest) (time.Duration, time.Duration, string, error) {
	now, err := r.Sched.Clock(ctx)
	if err != nil {
		return 0, 0, "", err
	}
	begin := now
	start := ((now+margin)/period + 1) * period
	var mu sync.Mutex
	var late string
	err = r.Each(ctx, func(ctx context.Context, i int, h Host, c *hostagent.Client) error {
		if err := c.ReactorStopFlows(ctx); err != nil {
			return err
		}
		fs := flows(i, start)
		if len(fs) == 0 {
			return nil
		}
		_, err := c.ReactorStartFlows(ctx, fs...)
		var ae *hostagent.APIError
		if errors.As(err, &ae) && ae.Kind == hostagent.KindConflict {
			mu.Lock()
			late = ae.Message
			mu.Unlock()
			return nil
		}
		return err
	})
	if err != nil {
		return 0, 0, "", err
	}
	if now, err = r.Sched.Clock(ctx); err != nil {
		return 0, 0, "", err
	}
	if late == "" && now >= start-time.Millisecond {
		late = fmt.Sprintf("registering the flows took until %v on the switch's clock, past the start planned at %v", now, start)
	}
	return start, now - begin, late, nil
}

// Stop stops the switch's schedule and every host's flows.
func (r *Run) Stop(ctx context.Context) error {
	err := r.Sched.StopSchedule(ctx)
	return errors.Join(err, r.Each(ctx, func(ctx context.Context, i int, h Host, c *hostagent.Client) error {
		return c.ReactorStopFlows(ctx)
	}))
}
