package reactor

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"

	"testbed/hostagent"
	"testbed/simlab/reactormodel"
)

// ReactorHostControl serves one fabric host's REACToR host control (the
// hostagent's /v1/reactor/ routes) from the fabric. Classes, rate limits,
// schedules and heartbeats are kept as a Linux host keeps them; the
// traffic and what the classes hold come from the fabric's data plane.
// The ToR pauses and unpauses the classes itself (PFC), so pause requests
// are refused; circuit rate limits are the ToR's (§3.3), so a class's
// rate limit caps only what it sends to the packet switch.
type ReactorHostControl struct {
	f     *ReactorFabric
	i     int
	iface string
}

// HostControl returns host i's host control; iface is its data interface.
func (f *ReactorFabric) HostControl(i int, iface string) *ReactorHostControl {
	return &ReactorHostControl{f: f, i: i, iface: iface}
}

var _ hostagent.ReactorHost = (*ReactorHostControl)(nil)

func ns(d time.Duration) int64 { return int64(d) }

func (c *ReactorHostControl) host() *fabricHost { return c.f.hosts[c.i] }

// Status implements hostagent.ReactorHost.
func (c *ReactorHostControl) Status(ctx context.Context) (hostagent.ReactorStatus, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	h := c.host()
	st := hostagent.ReactorStatus{Available: true, Backend: "simulated", ClockNs: ns(f.o.OCS.Now())}
	if h.setup != nil {
		s := *h.setup
		st.Setup = &s
		for k, d := range s.Destinations {
			cl := hostagent.ReactorClass{ID: d.Name, Address: d.Address, RateBps: f.o.LinkBps}
			if s.PFC {
				cl.Priority = k + 1
			}
			if j, ok := c.dstIndex(d.Name); ok {
				if v, ok := h.limits[j]; ok {
					cl.RateBps = v
				}
			}
			st.Classes = append(st.Classes, cl)
		}
		eps := hostagent.ReactorClass{ID: hostagent.ReactorEPS, RateBps: s.EPSBps}
		if v, ok := h.limits[-1]; ok {
			eps.RateBps = v
		}
		st.Classes = append(st.Classes, eps)
	}
	if h.hb != nil {
		hb := *h.hb
		st.Heartbeat = &hb
	}
	last := int64(-1)
	for p := range h.sched {
		last = max(last, p)
	}
	if s, ok := h.sched[last]; ok {
		st.Schedule = &s
	}
	return st, nil
}

// dstIndex maps a class id of this host's setup to a fabric host; f.mu held.
func (c *ReactorHostControl) dstIndex(id string) (int, bool) {
	h := c.host()
	if h.setup == nil {
		return 0, false
	}
	for _, d := range h.setup.Destinations {
		if d.Name == id {
			p, err := hostagent.ParsePrefix(d.Address)
			if err != nil {
				return 0, false
			}
			j, ok := c.f.byAddr[p.Addr()]
			return j, ok
		}
	}
	return 0, false
}

// classOf names fabric host j as this host's setup does.
func (c *ReactorHostControl) classOf(j int) string {
	h := c.host()
	if h.setup != nil {
		for _, d := range h.setup.Destinations {
			if p, err := hostagent.ParsePrefix(d.Address); err == nil && p.Addr() == c.f.hosts[j].addr {
				return d.Name
			}
		}
	}
	return c.f.hosts[j].name
}

func badRequest(format string, args ...any) error {
	return &hostagent.APIError{Status: 400, Kind: hostagent.KindBadRequest, Message: fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) error {
	return &hostagent.APIError{Status: 409, Kind: hostagent.KindConflict, Message: fmt.Sprintf(format, args...)}
}

func notAvailable(format string, args ...any) error {
	return &hostagent.APIError{Status: 501, Kind: hostagent.KindNotAvailable, Message: "not available on this host: " + fmt.Sprintf(format, args...)}
}

// Setup implements hostagent.ReactorHost: every destination must be
// another host of the fabric.
func (c *ReactorHostControl) Setup(ctx context.Context, s hostagent.ReactorSetup) error {
	f := c.f
	if s.Interface != c.iface {
		return badRequest("interface %s: this host's link to the REACToR is %s", s.Interface, c.iface)
	}
	if s.LinkBps != 0 && s.LinkBps != f.o.LinkBps {
		return badRequest("link_bps %g: the link is %g b/s", s.LinkBps, f.o.LinkBps)
	}
	if s.EPSBps > f.o.EPSBps {
		return badRequest("eps_bps %g: the packet switch carries at most %g b/s per host", s.EPSBps, f.o.EPSBps)
	}
	for k, d := range s.Destinations {
		p, _ := hostagent.ParsePrefix(d.Address)
		j, ok := f.byAddr[p.Addr()]
		switch {
		case !ok || !p.IsSingleIP():
			return badRequest("destinations[%d] (%s): %s is not a host of REACToR %s (hosts: %s)", k, d.Name, d.Address, f.o.Name, c.hostList())
		case j == c.i:
			return badRequest("destinations[%d] (%s): %s is this host itself", k, d.Name, d.Address)
		}
	}
	if s.LinkBps == 0 {
		s.LinkBps = f.o.LinkBps
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	h := c.host()
	h.setup = &s
	f.hostRate[c.i] = s.EPSBps
	return nil
}

func (c *ReactorHostControl) hostList() string {
	var out []string
	for _, h := range c.f.hosts {
		out = append(out, h.name+" "+h.addr.String())
	}
	return fmt.Sprint(out)
}

// Teardown implements hostagent.ReactorHost.
func (c *ReactorHostControl) Teardown(ctx context.Context) error {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	c.stopFlowsLocked()
	h := c.host()
	h.setup, h.hb, h.sched = nil, nil, map[int64]hostagent.ReactorSchedule{}
	for dst := range h.limits {
		f.setLimitLocked(c.i, dst, inf)
		delete(h.limits, dst)
	}
	f.hostRate[c.i] = 0
	return nil
}

var inf = math.Inf(1)

// Pause implements hostagent.ReactorHost: the fabric's ToR pauses classes.
func (c *ReactorHostControl) Pause(ctx context.Context, p hostagent.ReactorPause) error {
	return notAvailable("the simulated REACToR pauses and unpauses the classes itself, with PFC frames at its slot boundaries (REACToR §3.4)")
}

// SetRates implements hostagent.ReactorHost.
func (c *ReactorHostControl) SetRates(ctx context.Context, r hostagent.ReactorRates) error {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.host().setup == nil {
		return conflict("no classes: PUT /v1/reactor/classes first")
	}
	set := map[int]float64{}
	for id, v := range r.RatesBps {
		if v > f.o.LinkBps {
			return badRequest("rates_bps[%s] = %g is above the link's %g b/s", id, v, f.o.LinkBps)
		}
		if id == hostagent.ReactorEPS {
			set[-1] = v
			continue
		}
		j, ok := c.dstIndex(id)
		if !ok {
			return &hostagent.APIError{Status: 404, Kind: hostagent.KindNotFound, Message: fmt.Sprintf("no class %q", id)}
		}
		set[j] = v
	}
	for j, v := range set {
		f.setLimitLocked(c.i, j, v)
	}
	return nil
}

// SetSchedule implements hostagent.ReactorHost: kept, as a host keeps it.
func (c *ReactorHostControl) SetSchedule(ctx context.Context, s hostagent.ReactorSchedule) error {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	h := c.host()
	if h.setup == nil {
		return conflict("no classes: PUT /v1/reactor/classes first")
	}
	for k, sl := range s.Slots {
		if _, ok := c.dstIndex(sl.Dst); sl.Dst != "" && !ok {
			return badRequest("slots[%d]: no class %q", k, sl.Dst)
		}
	}
	h.sched[s.Period] = s
	for p := range h.sched {
		if p < s.Period-8 {
			delete(h.sched, p)
		}
	}
	return nil
}

// Heartbeat implements hostagent.ReactorHost.
func (c *ReactorHostControl) Heartbeat(ctx context.Context, hb hostagent.ReactorHeartbeat) (hostagent.ReactorHeartbeatAck, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	h := c.host()
	h.hb = &hb
	_, ok := h.sched[hb.Period]
	return hostagent.ReactorHeartbeatAck{Period: hb.Period, Scheduled: ok, ClockNs: ns(f.o.OCS.Now())}, nil
}

// Demand implements hostagent.ReactorHost: the classes' queues in the data
// plane.
func (c *ReactorHostControl) Demand(ctx context.Context) (hostagent.ReactorDemand, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	h := c.host()
	if h.setup == nil {
		return hostagent.ReactorDemand{}, conflict("no classes: PUT /v1/reactor/classes first")
	}
	now, r := f.dataNow()
	d := hostagent.ReactorDemand{ClockNs: ns(now)}
	var rep []float64
	if r != nil && r.model != nil && !r.ended {
		rep = r.model.Report(c.i)
	}
	q := func(k int) int64 {
		if k < len(rep) {
			return int64(rep[k])
		}
		return 0
	}
	for _, dst := range h.setup.Destinations {
		j, _ := c.dstIndex(dst.Name)
		d.Classes = append(d.Classes, hostagent.ReactorClassDemand{ID: dst.Name, BacklogBytes: q(j), BacklogPackets: (q(j) + 1537) / 1538})
	}
	n := len(f.hosts)
	d.Classes = append(d.Classes, hostagent.ReactorClassDemand{ID: hostagent.ReactorEPS, BacklogBytes: q(n), BacklogPackets: (q(n) + 1537) / 1538})
	return d, nil
}

// Windows implements hostagent.ReactorHost: every circuit the ToR opened
// for this host's classes in the current (or last) run, once it closed.
func (c *ReactorHostControl) Windows(ctx context.Context, since uint64) (hostagent.ReactorWindows, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	now, r := f.dataNow()
	out := hostagent.ReactorWindows{ClockNs: ns(now), Next: since}
	if r == nil || r.model == nil {
		return out, nil
	}
	mnow := r.model.Now()
	var seq uint64
	for _, s := range r.model.Result().Slots {
		if s.Src != c.i || s.Close > mnow || s.End > mnow {
			continue
		}
		if seq >= since {
			out.Windows = append(out.Windows, hostagent.ReactorWindow{Seq: seq, Period: s.Period, Slot: s.Slot, Class: c.classOf(s.Dst),
				OpenNs: ns(r.start + s.Open), CloseNs: ns(r.start + s.Close), RateBps: s.RateLimit, Bytes: int64(s.Bytes), WireBytes: int64(s.WireBytes)})
		}
		seq++
	}
	out.Next = max(since, seq)
	return out, nil
}

// StartSink implements hostagent.ReactorHost: a simulated host receives
// its flows whatever their target.
func (c *ReactorHostControl) StartSink(ctx context.Context, r hostagent.ReactorSinkRequest) (hostagent.ReactorSink, error) {
	a := netip.AddrPortFrom(c.f.hosts[c.i].addr, 5201)
	return hostagent.ReactorSink{Listen: a.String(), Port: 5201}, nil
}

// StartFlows implements hostagent.ReactorHost.
func (c *ReactorHostControl) StartFlows(ctx context.Context, req hostagent.ReactorFlowsRequest) ([]hostagent.ReactorFlow, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.host().setup == nil {
		return nil, conflict("no classes: PUT /v1/reactor/classes first")
	}
	var fls []*fabricFlow
	for k, r := range req.Flows {
		j, ok := c.dstIndex(r.Dst)
		if !ok {
			return nil, badRequest("flows[%d]: no class %q", k, r.Dst)
		}
		fl := &fabricFlow{src: c.i, dst: j, rate: r.RateBps, eps: r.EPS, req: r, start: time.Duration(r.StartNs), stop: time.Duration(r.StopNs),
			measFrom: time.Duration(r.MeasureFromNs), measTo: time.Duration(r.MeasureToNs)}
		fl.kind = reactormodel.Paced
		if r.Kind == hostagent.FlowBulk {
			fl.kind = reactormodel.Bulk
			if f.runEPS() <= 0 {
				return nil, badRequest("flows[%d]: a bulk flow's ACKs cross the packet switch (REACToR §5.2), and no host here sends to it (eps_bps 0)", k)
			}
		}
		fls = append(fls, fl)
	}
	if err := f.addFlowsLocked(fls); err != nil {
		return nil, conflict("%v", err)
	}
	var out []hostagent.ReactorFlow
	for _, fl := range fls {
		x := hostagent.ReactorFlow{ID: fl.id, Src: c.host().name, ReactorFlowRequest: fl.req, State: hostagent.FlowWaiting}
		x.StartNs, x.StopNs = ns(fl.start), ns(fl.stop)
		out = append(out, x)
	}
	return out, nil
}

// Flows implements hostagent.ReactorHost.
func (c *ReactorHostControl) Flows(ctx context.Context) (hostagent.ReactorFlows, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	now, _ := f.dataNow()
	out := hostagent.ReactorFlows{ClockNs: ns(now)}
	byID := map[string]*fabricFlow{}
	for _, fl := range f.allFlowsLocked() {
		byID[fl.id] = fl
	}
	var slots []reactormodel.SlotRecord
	for _, x := range f.flowsLocked() {
		fl := byID[x.ID]
		if fl == nil || fl.hidden {
			continue
		}
		rf := hostagent.ReactorFlow{ID: x.ID, Src: f.hosts[x.Src].name, ReactorFlowRequest: fl.req, State: x.State,
			SentBytes: int64(x.Offered * fl.payload), DeliveredBytes: int64(x.Payload), MeasuredBytes: int64(x.MeasuredPayload),
			MeasuredSentBytes: int64(x.MeasuredOffered), Measured: x.Measured}
		rf.StartNs, rf.StopNs = ns(fl.start), ns(fl.stop)
		if x.Measured {
			rf.GoodputBps = x.MeasuredPayload * 8 / (fl.measTo - fl.measFrom).Seconds()
		}
		if x.Src == c.i {
			out.Sent = append(out.Sent, rf)
		}
		if x.Dst == c.i {
			if x.Measured && fl.run != nil && fl.run.model != nil {
				if slots == nil {
					slots = fl.run.model.Result().Slots
				}
				rf.Bursts = arrivals(slots, fl, fl.run.start)
			}
			out.Received = append(out.Received, rf)
		}
	}
	return out, nil
}

// arrivals are flow fl's receive bursts within its measurement interval,
// from the model's arrivals over circuits: the fluid crosses a lit
// circuit without delay (reactormodel's "Bytes served over a lit circuit
// reach the destination at once"), so what the receiver sees of a slot is
// the span from the slot's first to its last byte served, clipped to the
// interval. Slots closer than hostagent.ReactorBurstGapNs join one burst,
// as a receiver timestamping packets would see them. The circuit from
// fl's source to its destination carries all the flows between the two;
// with one flow per pair (the recipes') they are the flow's.
func arrivals(slots []reactormodel.SlotRecord, fl *fabricFlow, start time.Duration) []hostagent.ReactorBurst {
	var bs []hostagent.ReactorBurst
	for _, s := range slots {
		if s.Src != fl.src || s.Dst != fl.dst || s.FirstByte < 0 || s.LastByte <= s.FirstByte {
			continue
		}
		a, b := start+s.FirstByte, start+s.LastByte
		ca, cb := max(a, fl.measFrom), min(b, fl.measTo)
		if cb <= ca {
			continue
		}
		n := int64(s.Bytes * float64(cb-ca) / float64(b-a))
		if k := len(bs); k > 0 && int64(ca)-bs[k-1].LastNs <= hostagent.ReactorBurstGapNs {
			bs[k-1].LastNs = max(bs[k-1].LastNs, int64(cb))
			bs[k-1].Bytes += n
			continue
		}
		bs = append(bs, hostagent.ReactorBurst{FirstNs: int64(ca), LastNs: int64(cb), Bytes: n})
	}
	return bs
}

// StopFlows implements hostagent.ReactorHost: this host's flows stop now
// and are forgotten (those it receives too).
func (c *ReactorHostControl) StopFlows(ctx context.Context) error {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	c.stopFlowsLocked()
	return nil
}

func (c *ReactorHostControl) stopFlowsLocked() {
	f := c.f
	now, r := f.dataNow()
	f.pending = slices.DeleteFunc(f.pending, func(fl *fabricFlow) bool { return fl.src == c.i })
	if r == nil {
		return
	}
	// A run the switch still plays is replayed with the flows stopped now;
	// one it has left stops where it was last seen anyway.
	live := f.liveRunLocked() == r
	changed := false
	for _, fl := range r.flows {
		if fl.src == c.i || fl.dst == c.i {
			fl.hidden = true
		}
		if fl.src == c.i && live && (fl.stop == 0 || fl.stop > now) {
			fl.stop, changed = max(now, fl.start+1), true
		}
	}
	if changed {
		f.rebuildLocked(r)
	}
}

// Close implements hostagent.ReactorHost: the agent process ends, the
// host's classes stay (as tc's do when an agent exits).
func (c *ReactorHostControl) Close() error { return nil }
