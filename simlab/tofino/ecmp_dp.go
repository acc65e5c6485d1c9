package tofino

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"testbed/p4/ecmp"
	em "testbed/simlab/ecmpmodel"
)

// The ecmp dataplane: switches running ecmp, joined by fibres (or alone,
// once one of them starts a generator application), carry frames on the
// dataplane's clock through the packet fabric of simlab/ecmpmodel, from
// what the switches hold at each moment: their whoami ids, gen_flow,
// route and ecmp_slot tables, their flow registers (as the control plane
// last wrote them and the frames changed them since), their generator
// applications (pktgen.start on an ecmp switch: a batch of
// packets_per_batch frames of pkt_len bytes and the FCS every timer_ns,
// batches times), their ports' speeds and state, and the fibres' optics.
// What the frames do comes back as reg_flow_sent, reg_flow_rcvd,
// reg_flow_first_ns and reg_flow_last_ns, the ports' counters, tm.queue
// (each queue of every port) and pktgen.status.
//
// Stated parameters and approximations:
//   - a switch's ingress-to-traffic-manager time is pipelineNs (fec.go);
//     a frame's egress time (what reg_flow_first_ns and reg_flow_last_ns
//     hold, as the egress global timestamp) is when its transmission
//     starts;
//   - every egress port (fabric and host) has a drop-tail queue per
//     traffic class in use, each of sdQueueCapBytes (1 MiB of 80 B buffer
//     cells), the same stated assumption as the Stardust fabric's
//     (stardust_dp.go): a queue's share of Tofino 1's 22 MB buffer under
//     the traffic manager's dynamic thresholds, not a measured figure;
//     each queue's drops and fill are tm.queue's drop_count_packets, usage
//     and watermark for its qid;
//   - a frame's class, and so its queue at every switch, is what to_flow
//     wrote in its DSCP (a gen_flow entry's tc; an entry without one is
//     class 0); a port's queues are served by the priorities tm.queue.sched
//     set (queuePriorityDefault, 0, for the others): strict priority
//     between priorities, round robin by frame within one, which is the
//     traffic manager's DWRR when the weights are equal (the SDE's default)
//     and the frames of one size (simlab/ecmpmodel);
//   - a port sends a frame in its bytes, the FCS, the preamble and the
//     inter-frame gap (pkt_len + 4 + 20 B) at its speed; a fibre's
//     propagation delay is its length at 5 ns/m (sdPatchM when the
//     inventory gives no length); an RS FEC's encoding delay is not added;
//   - a frame the fibre's optics corrupt (the frame loss physics gives for
//     the power arriving, its size and the port's FEC, as stardust_dp.go)
//     is dropped at the receiver and counted there as an FCS error; a port
//     that is down (disabled, its partner disagreeing, or dark) sends
//     nothing: what reaches it, and what its queue holds, is dropped;
//   - a generator batch's frames enter the ingress at the same instant (the
//     generator's own rate within a batch is not modelled); a generator
//     application without a buffer_hex sends frames that are not IPv4,
//     which the program drops;
//   - TTL is not decremented: a route that loops a frame sends it round
//     until a queue drops it;
//   - a port without a fibre (a host port) sends what leaves it to
//     nothing the dataplane follows: it is counted as transmitted.

// ecEngine is the ecmp fabric behind the switches.
type ecEngine struct {
	fab   *em.Fabric
	sws   []*Tofino
	ver   []uint64
	links []*swLink
	ml    []*em.Link
	apps  fabricApps[*em.App]
	snap  [][4][]int64 // device -> register (ecRegs order) -> values after the last sync in
	lkey  []sdLinkKey
}

// noteECMP makes sw's fabric part of the dataplane even without a fibre
// to another ecmp switch (its generator started).
func (d *Dataplane) noteECMP(sw *Tofino) {
	d.lockPromptly()
	defer d.mu.Unlock()
	if !slices.Contains(d.ecSws, sw) {
		d.ecSws = append(d.ecSws, sw)
	}
}

// ecmpSwitches are the switches running ecmp that a fibre joins to
// another such switch, in the order of the fibres, then those that
// started a generator application.
func (d *Dataplane) ecmpSwitches() []*Tofino {
	var out []*Tofino
	seen := map[*Tofino]bool{}
	add := func(sw *Tofino) {
		if !seen[sw] {
			seen[sw] = true
			out = append(out, sw)
		}
	}
	for _, l := range d.links {
		if isECMP(l.tx.programName()) && isECMP(l.rx.programName()) {
			add(l.tx)
			add(l.rx)
		}
	}
	for _, sw := range d.ecSws {
		if isECMP(sw.programName()) {
			add(sw)
		}
	}
	return out
}

// stepECMP runs the fabric of the switches sws (fabricSwitchesLocked) to
// t. A table the fabric cannot hold is an error only while some ecmp
// application generates.
func (d *Dataplane) stepECMP(sws []*Tofino, t time.Duration) error {
	if len(sws) == 0 {
		d.ec = nil
		return nil
	}
	e := d.ec
	if e == nil || versionsChanged(sws, e.sws, e.ver) {
		ne, err := d.buildECMP(sws, e)
		if err != nil {
			d.ec = nil
			if generating(sws, func(a *pktgenApp) bool { return a.ecmp != nil }) {
				return fmt.Errorf("ecmp fabric: %w", err)
			}
			return nil
		}
		e = ne
		d.ec = e
	}
	e.portState(d)
	e.syncIn()
	e.fab.AdvanceTo(ps(t))
	e.syncOut()
	return nil
}

// buildECMP makes the fabric of sws, keeping prev's (frames in flight,
// applications) when the switches and fibres are the same.
func (d *Dataplane) buildECMP(sws []*Tofino, prev *ecEngine) (*ecEngine, error) {
	links, idx := d.linksAmong(sws)
	e := prev
	if e == nil || len(e.sws) != len(sws) || len(e.links) != len(links) || !same(e.sws, sws) || !same(e.links, links) {
		fab := em.New(rand.New(rand.NewPCG(d.world.Seed(), 0xec3b_ec3b)))
		fab.PipelinePs = int64(pipelineNs * 1000)
		fab.QueueCapBytes = sdQueueCapBytes
		e = &ecEngine{fab: fab, sws: sws, links: links, apps: newFabricApps[*em.App](),
			lkey: make([]sdLinkKey, len(links)), snap: make([][4][]int64, len(sws))}
		for _, sw := range sws {
			fab.AddDevice(em.NewDevice(sw.name, 0))
		}
		for _, l := range links {
			// The fibre's ends are ports of the model whether or not the
			// switches have added them yet (portState says which have).
			if _, err := fab.AddPort(idx[l.tx], l.txPort, 100e9); err != nil {
				return nil, err
			}
			if _, err := fab.AddPort(idx[l.rx], l.rxPort, 100e9); err != nil {
				return nil, err
			}
			ml := &em.Link{From: idx[l.tx], FromPort: l.txPort, To: idx[l.rx], ToPort: l.rxPort,
				PropPs: int64(fibreNsPerM * cmpOr(l.fibre.LengthM, sdPatchM) * 1000)}
			if _, err := fab.AddLink(ml); err != nil {
				return nil, fmt.Errorf("fibre %s: %w", l.name, err)
			}
			e.ml = append(e.ml, ml)
		}
	}
	e.ver = make([]uint64, len(sws))
	for i, sw := range sws {
		if err := e.readSwitch(i, sw); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// readSwitch copies a switch's ports, tables and new applications into
// device i.
func (e *ecEngine) readSwitch(i int, sw *Tofino) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	e.ver[i] = sw.sdVer
	dv := e.fab.Devices[i]
	for _, dev := range slices.Sorted(maps.Keys(sw.ports)) {
		if _, err := e.fab.AddPort(i, dev, float64(sw.ports[dev].gbps)*1e9); err != nil {
			return fmt.Errorf("%s: %w", sw.name, err)
		}
	}
	dv.ID = 0
	for _, en := range sw.tables[ecmp.TableWhoami] {
		if en.Action == ecmp.ActionSetID {
			dv.ID = int(en.Data[ecmp.ParamID])
		}
	}
	tr := ecTables{sw}
	for _, read := range []func(*em.Device) error{tr.genFlows, tr.routes, tr.slots} {
		if err := read(dv); err != nil {
			return err
		}
	}
	// Applications started since: into the fabric.
	for _, id := range slices.Sorted(maps.Keys(sw.apps)) {
		a := sw.apps[id]
		if a.ecmp == nil || !a.enabled || e.apps.has(a) {
			continue
		}
		// An application already part way (the fabric was rebuilt)
		// continues after the batches it emitted.
		next, start := a.resume()
		ma := &em.App{AppID: a.id, FrameBytes: a.pktLen + 4, SrcAddr: a.ecmp.gen.SrcAddr, IP: a.ecmp.ip,
			StartPs: start, PeriodPs: a.timerNs * 1000, Batches: a.batches, PerBatch: a.perBatch,
			Enabled: true, Sent: a.sent, Next: next}
		e.apps.add(a, i, ma)
		e.fab.AddApp(i, ma)
	}
	return nil
}

// ecTables reads the ecmp program's tables of a switch into the
// fabric's device, with the switch's lock held.
type ecTables struct{ sw *Tofino }

// inRange is field name of m (an entry's key or data) when it is in
// 0..n-1, else an error naming the switch, the table and the entry.
func (r ecTables) inRange(table string, en simEntry, m map[string]int64, name string, n int) (int, error) {
	v, ok := m[name]
	if !ok || v < 0 || v >= int64(n) {
		return 0, fmt.Errorf("%s: table %s entry %v: expected %s 0..%d, got %v", r.sw.name, table, en.Key, name, n-1, m)
	}
	return int(v), nil
}

// genFlows reads gen_flow: the flow each generator application's slot
// carries.
func (r ecTables) genFlows(dv *em.Device) error {
	dv.GenFlow = map[int]*[em.Slots]em.Flow{}
	for _, en := range r.sw.tables[ecmp.TableGenFlow] {
		slot, err := r.inRange(ecmp.TableGenFlow, en, en.Key, ecmp.KeySlot, em.Slots)
		if err != nil {
			return err
		}
		app := int(en.Key[ecmp.KeyAppID])
		g := dv.GenFlow[app]
		if g == nil {
			g = new([em.Slots]em.Flow)
			dv.GenFlow[app] = g
		}
		if en.Action != ecmp.ActionToFlow {
			continue
		}
		if g[slot], err = r.flow(en); err != nil {
			return err
		}
	}
	return nil
}

// flow is a gen_flow entry's to_flow: destination, flow and class.
func (r ecTables) flow(en simEntry) (em.Flow, error) {
	dst, err := r.inRange(ecmp.TableGenFlow, en, en.Data, ecmp.ParamDst, ecmp.MaxToRs)
	if err != nil {
		return em.Flow{}, err
	}
	flow, err := r.inRange(ecmp.TableGenFlow, en, en.Data, ecmp.ParamFlow, ecmp.MaxFlows)
	if err != nil {
		return em.Flow{}, err
	}
	tc := 0
	if _, ok := en.Data[ecmp.ParamTC]; ok {
		if tc, err = r.inRange(ecmp.TableGenFlow, en, en.Data, ecmp.ParamTC, ecmp.Classes); err != nil {
			return em.Flow{}, err
		}
	}
	return em.Flow{Valid: true, Dst: dst, Flow: flow, TC: tc}, nil
}

// routes reads route: to a host port, or spread by hash or spray.
func (r ecTables) routes(dv *em.Device) error {
	dv.Route = [em.MaxToRs]em.Route{}
	for _, en := range r.sw.tables[ecmp.TableRoute] {
		dst, err := r.inRange(ecmp.TableRoute, en, en.Key, ecmp.KeyDst, ecmp.MaxToRs)
		if err != nil {
			return err
		}
		switch en.Action {
		case ecmp.ActionToHost:
			p, err := r.inRange(ecmp.TableRoute, en, en.Data, ecmp.ParamPort, em.MaxPorts)
			if err != nil {
				return err
			}
			dv.Route[dst] = em.Route{Action: em.ToHost, Port: p}
		case ecmp.ActionECMPHash:
			dv.Route[dst] = em.Route{Action: em.Hash}
		case ecmp.ActionECMPSpray:
			dv.Route[dst] = em.Route{Action: em.Spray}
		}
	}
	return nil
}

// slots reads ecmp_slot: the link of each destination's slot (-1: none).
func (r ecTables) slots(dv *em.Device) error {
	dv.Slot = [em.MaxToRs]*[em.Slots]int{}
	for _, en := range r.sw.tables[ecmp.TableECMPSlot] {
		dst, err := r.inRange(ecmp.TableECMPSlot, en, en.Key, ecmp.KeyDst, ecmp.MaxToRs)
		if err != nil {
			return err
		}
		slot, err := r.inRange(ecmp.TableECMPSlot, en, en.Key, ecmp.KeySlot, em.Slots)
		if err != nil {
			return err
		}
		s := dv.Slot[dst]
		if s == nil {
			s = new([em.Slots]int)
			for k := range s {
				s[k] = -1
			}
			dv.Slot[dst] = s
		}
		if en.Action == ecmp.ActionToLink {
			p, err := r.inRange(ecmp.TableECMPSlot, en, en.Data, ecmp.ParamLink, em.MaxPorts)
			if err != nil {
				return err
			}
			s[slot] = p
		}
	}
	return nil
}

// portState sets each port's speed and state, and each fibre's frame
// loss, as they are now.
func (e *ecEngine) portState(d *Dataplane) {
	for i, sw := range e.sws {
		e.fab.Devices[i].Ports(func(p *em.Port) {
			sp := sw.port(p.Dev)
			p.Present = sp != nil
			p.Up = sp != nil && d.portUp(sw, p.Dev)
			if sp != nil {
				p.Bps = float64(sp.gbps) * 1e9
			}
			sw.mu.Lock()
			for q := range p.Priority {
				p.Priority[q] = sw.queuePriority(p.Dev, q)
			}
			sw.mu.Unlock()
		})
	}
	for i, l := range e.links {
		ml := e.ml[i]
		tp := l.tx.port(l.txPort)
		if tp == nil {
			continue // the port is down: nothing crosses
		}
		if loss, ok := fibreLoss(l, tp, d.now, &e.lkey[i], ml.Loss != nil); ok {
			ml.SetLoss(loss)
		}
	}
}

// ecRegs names a device's registers as the switch holds them.
func ecRegs(dv *em.Device) [4]fabricReg {
	return [4]fabricReg{{ecmp.RegFlowSent, dv.FlowSent}, {ecmp.RegFlowRcvd, dv.FlowRcvd}, {ecmp.RegFlowFirst, dv.FlowFirst}, {ecmp.RegFlowLast, dv.FlowLast}}
}

// syncIn reads the switches' registers into the fabric (the control
// plane may have written them) and the applications' state.
func (e *ecEngine) syncIn() {
	for i, sw := range e.sws {
		dv := e.fab.Devices[i]
		regs := ecRegs(dv)
		sw.mu.Lock()
		regsIn(sw, regs[:], e.snap[i][:])
		e.apps.syncIn(i, sw, func(ma *em.App) *bool { return &ma.Enabled })
		sw.mu.Unlock()
	}
}

// syncOut adds what the frames did to the switches: register changes,
// port counters, queues, generator progress.
func (e *ecEngine) syncOut() {
	for i, sw := range e.sws {
		dv := e.fab.Devices[i]
		regs := ecRegs(dv)
		sw.mu.Lock()
		regsOut(sw, regs[:], e.snap[i][:])
		type counted struct {
			sp *simPort
			p  *em.Port
		}
		var ports []counted
		dv.Ports(func(p *em.Port) {
			sp := sw.ports[p.Dev]
			if sp == nil {
				p.Tx, p.RxOK, p.RxBad, p.QueueDrops, p.Watermark = p.Tx[:0], p.RxOK[:0], p.RxBad[:0], [em.Queues]int64{}, [em.Queues]int64{}
				return
			}
			for qi := range em.Queues {
				k := [2]int{p.Dev, qi}
				q := sw.queues[k]
				if q == nil {
					if qi != 0 && p.QueueBytesOf(qi) == 0 && p.Watermark[qi] == 0 && p.QueueDrops[qi] == 0 {
						continue // a queue no frame has used
					}
					q = &simQueue{}
					sw.queues[k] = q
				}
				q.usage = p.QueueBytesOf(qi)
				q.watermark = max(q.watermark, p.Watermark[qi], q.usage)
				q.drops += p.QueueDrops[qi]
			}
			p.QueueDrops, p.Watermark = [em.Queues]int64{}, [em.Queues]int64{}
			ports = append(ports, counted{sp, p})
		})
		sw.mu.Unlock()
		for _, c := range ports {
			for _, s := range c.p.Tx {
				c.sp.countTx(s.Bytes, s.Frames)
			}
			for _, s := range c.p.RxOK {
				c.sp.countRxOK(s.Bytes, s.Frames)
			}
			for _, s := range c.p.RxBad {
				c.sp.countRxBad(s.Bytes, s.Frames)
			}
			c.p.Tx, c.p.RxOK, c.p.RxBad = c.p.Tx[:0], c.p.RxOK[:0], c.p.RxBad[:0]
		}
	}
	e.apps.syncOut(func(ma *em.App) (int64, bool, bool) { return ma.Sent, ma.Done(), ma.Enabled })
}
