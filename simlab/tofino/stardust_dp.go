package tofino

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	sd "testbed/p4/stardust"
	sdm "testbed/simlab/stardustmodel"
)

// The Stardust dataplane: when switches running stardust_fa and
// stardust_fe are joined by fibres, the dataplane runs the fabric between
// them with its clock (stardustmodel's switch mode), from what the
// switches hold at each moment: their whoami ids, spray, gen_flow,
// host_port, credit_port, credit_to and reach_port tables, their
// registers (as the control plane last wrote them and the cells changed
// them since), their generator applications (pktgen.start with a
// buffer_hex), their ports' speeds and state, and the fibres' optics. What
// the cells do comes back as the switches' registers (reg_credit,
// reg_seq_*, reg_spray, reg_credit_rr, reg_fci, reg_reach_age,
// reg_reasm_drops, reg_lat_hist, reg_qdepth_hist), port
// counters, tm.queue of the FEs' fabric ports and the FAs' recirculation
// port, and pktgen.status.
//
// Stated parameters and approximations (p4/stardust/README.md's table):
//   - a switch's ingress-to-egress time is pipelineNs (fec.go), at the
//     source FA (after its timestamp) and at the FE, for the generators'
//     credit and reachability frames as for data (a generated frame enters
//     the ingress pipeline at the generator's port); the destination FA
//     counts a cell's latency on its arrival at ingress;
//   - a fibre's propagation delay is its length at 5 ns/m (a patch cord's
//     2 m when the inventory gives no length);
//   - credit and reachability frames share a fabric port's queue with the
//     data and take their serialisation time on the link (a 64 B credit
//     per 4 KB of data, about 2% of it); they are counted on its ports and
//     lost as data is;
//   - a frame waiting for a credit (or for its turn at the destination)
//     goes round the recirculation port; what bounds the wait is that
//     port's queue (queue 0 for credit, SD_REASM_QID for early frames),
//     sdRecircCapBytes each, beyond which frames are dropped and counted
//     by tm.queue on SD_RECIRC_PORT; a waiting frame leaves as soon
//     as its VOQ gets a credit (the loop's own latency is not modelled),
//     and an early one at the destination as soon as it is next, also
//     when the control plane rewrites reg_seq_in or reg_credit, or at the
//     instant its age reaches reg_reasm_timeout (ns; the FAs share the
//     dataplane's clock, as synced global timestamps);
//   - every fabric port's queue holds at most sdQueueCapBytes;
//   - a released frame is counted as sent on its host port at once (the
//     host port's queue is not modelled).

const (
	// sdNotACell is the kind of a Stardust program's generator application
	// started without a buffer: its frames are dropped by the program.
	sdNotACell = 0xff
	// sdRecircPort is SD_RECIRC_PORT (stardust_fa.p4): pipe 1's internal
	// port, where a frame without a credit waits.
	sdRecircPort = 196
	// sdRecircCapBytes and sdQueueCapBytes: a queue's share of Tofino 1's
	// 22 MB shared packet buffer under the traffic manager's dynamic
	// thresholds; a stated assumption, not a measured figure.
	sdRecircCapBytes = 1 << 20
	sdQueueCapBytes  = 1 << 20
	// fibreNsPerM is light's delay in silica fibre (group index about 1.47).
	fibreNsPerM = 5.0
	// sdPatchM is the length assumed for a fibre the inventory gives none.
	sdPatchM = 2.0
)

// sdEngine is the Stardust fabric behind the switches.
type sdEngine struct {
	fab   *sdm.SwitchFabric
	sws   []*Tofino
	ver   []uint64
	links []*swLink
	apps  fabricApps[*sdm.SwApp]
	snap  [][][]int64 // device -> register (sdRegs order) -> values after the last sync in
	lkey  []sdLinkKey
}

type sdLinkKey struct {
	rx   float64
	fec  string
	gbps int
}

// noteChange marks a change the Stardust dataplane must pick up.
func (t *Tofino) noteChange(op string) {
	switch op {
	case "table.add", "table.mod", "table.del", "table.clear", "port.add", "port.del", "port.mode", "pktgen.start", "pktgen.stop":
		t.mu.Lock()
		t.sdVer++
		t.mu.Unlock()
	}
}

func isStardust(program string) bool { return program == sd.ProgramFA || program == sd.ProgramFE }

// stardustSwitches are the switches running a Stardust program that a
// fibre joins to another such switch, in the order of the fibres.
func (d *Dataplane) stardustSwitches() []*Tofino {
	var out []*Tofino
	seen := map[*Tofino]bool{}
	for _, l := range d.links {
		if !isStardust(l.tx.programName()) || !isStardust(l.rx.programName()) {
			continue
		}
		for _, sw := range []*Tofino{l.tx, l.rx} {
			if !seen[sw] {
				seen[sw] = true
				out = append(out, sw)
			}
		}
	}
	return out
}

// ps is a dataplane time in picoseconds.
func ps(t time.Duration) int64 { return int64(t) * 1000 }

// stepStardust runs the fabric of the switches sws (fabricSwitchesLocked)
// to t. A topology the fabric cannot hold is an error only while some
// Stardust application generates.
func (d *Dataplane) stepStardust(sws []*Tofino, t time.Duration) error {
	if len(sws) == 0 {
		d.sd = nil
		return nil
	}
	e := d.sd
	if e == nil || versionsChanged(sws, e.sws, e.ver) {
		ne, err := d.buildStardust(sws, e)
		if err != nil {
			d.sd = nil
			if generating(sws, func(a *pktgenApp) bool { return a.cell != nil }) {
				return fmt.Errorf("stardust fabric: %w", err)
			}
			return nil
		}
		e = ne
		d.sd = e
	}
	e.linkState(d)
	e.syncIn()
	e.fab.Resume()
	e.fab.AdvanceTo(ps(t))
	e.syncOut(d)
	return nil
}

// buildStardust makes the fabric of sws, keeping prev's (frames in flight,
// applications) when the switches and fibres are the same.
func (d *Dataplane) buildStardust(sws []*Tofino, prev *sdEngine) (*sdEngine, error) {
	links, idx := d.linksAmong(sws)
	e := prev
	if e == nil || len(e.sws) != len(sws) || len(e.links) != len(links) || !same(e.sws, sws) || !same(e.links, links) || e.rolesChanged() {
		fab := sdm.NewSwitchFabric(rand.New(rand.NewPCG(d.world.Seed(), 0x5d5d_5d5d)))
		fab.PipelinePs = int64(pipelineNs * 1000)
		fab.QueueCapBytes, fab.RecircCapBytes, fab.ReorderCapBytes, fab.CreditCap = sdQueueCapBytes, sdRecircCapBytes, sdRecircCapBytes, sd.CreditCapFrames
		e = &sdEngine{fab: fab, sws: sws, links: links, apps: newFabricApps[*sdm.SwApp](), lkey: make([]sdLinkKey, len(links))}
		for _, sw := range sws {
			sw.mu.Lock()
			fe := sw.program == sd.ProgramFE
			sw.mu.Unlock()
			fab.AddDevice(sdm.NewSwDevice(sw.name, fe, 0))
		}
		for _, l := range links {
			fab.AddLink(&sdm.SwLink{From: idx[l.tx], FromPort: l.txPort, To: idx[l.rx], ToPort: l.rxPort,
				PropPs: int64(fibreNsPerM * cmpOr(l.fibre.LengthM, sdPatchM) * 1000)})
		}
		e.snap = make([][][]int64, len(sws))
	}
	e.ver = make([]uint64, len(sws))
	for i, sw := range sws {
		if err := e.readSwitch(i, sw); err != nil {
			return nil, err
		}
	}
	e.fab.Reindex()
	if err := e.fab.Check(); err != nil {
		return nil, err
	}
	return e, nil
}

// rolesChanged reports whether a switch now runs the other program.
func (e *sdEngine) rolesChanged() bool {
	for i, sw := range e.sws {
		sw.mu.Lock()
		fe := sw.program == sd.ProgramFE
		sw.mu.Unlock()
		if fe != e.fab.Devices[i].FE {
			return true
		}
	}
	return false
}

func same[T comparable](a, b []T) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func cmpOr(v, def float64) float64 {
	if v > 0 {
		return v
	}
	return def
}

// readSwitch copies a switch's tables and applications into device i.
func (e *sdEngine) readSwitch(i int, sw *Tofino) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	e.ver[i] = sw.sdVer
	dv := e.fab.Devices[i]
	if fe := sw.program == sd.ProgramFE; fe != dv.FE {
		return fmt.Errorf("%s: changed role", sw.name)
	}
	dv.ID = 0
	for _, en := range sw.tables[sd.TableWhoami] {
		if en.Action == sd.ActionSetID {
			dv.ID = int(en.Data[sd.ParamID])
		}
	}
	bad := func(table string, en simEntry, what string) error {
		return fmt.Errorf("%s: table %s entry %v: %s", sw.name, table, en.Key, what)
	}
	dv.Spray = map[int]*[sdm.SwMaxLinks]int{}
	for _, en := range sw.tables[sd.TableSpray] {
		dst, slot := int(en.Key[sd.KeyDstFA]), int(en.Key[sd.KeySlot])
		if dst < 0 || dst >= sd.MaxFAs || slot < 0 || slot >= sd.MaxLinks {
			return bad(sd.TableSpray, en, fmt.Sprintf("expected dst_fa 0..%d and slot 0..%d", sd.MaxFAs-1, sd.MaxLinks-1))
		}
		s := dv.Spray[dst]
		if s == nil {
			s = new([sdm.SwMaxLinks]int)
			for k := range s {
				s[k] = -1
			}
			dv.Spray[dst] = s
		}
		if en.Action == sd.ActionToLink {
			s[slot] = int(en.Data[sd.ParamLink])
		}
	}
	dv.GenFlow = map[int]*[sdm.SwMaxLinks]sdm.Flow{}
	for _, en := range sw.tables[sd.TableGenFlow] {
		app, slot := int(en.Key[sd.KeyAppID]), int(en.Key[sd.KeySlot])
		if slot < 0 || slot >= sd.MaxLinks {
			return bad(sd.TableGenFlow, en, fmt.Sprintf("expected slot 0..%d", sd.MaxLinks-1))
		}
		g := dv.GenFlow[app]
		if g == nil {
			g = new([sdm.SwMaxLinks]sdm.Flow)
			dv.GenFlow[app] = g
		}
		if en.Action == sd.ActionToVOQ {
			g[slot] = sdm.Flow{Valid: true, FA: int(en.Data[sd.ParamFA]), Port: int(en.Data[sd.ParamPort]), VOQ: int(en.Data[sd.ParamVOQ]), TC: int(en.Data[sd.ParamTC])}
		}
	}
	keyed := func(table, key, param, action string) map[int]int {
		m := map[int]int{}
		for _, en := range sw.tables[table] {
			if en.Action == action {
				m[int(en.Key[key])] = int(en.Data[param])
			}
		}
		return m
	}
	dv.HostPort = keyed(sd.TableHostPort, sd.KeyDstPort, sd.ParamPort, sd.ActionToHost)
	dv.CreditPort = keyed(sd.TableCreditPort, sd.KeyPacketID, sd.ParamPort, sd.ActionCreditFor)
	dv.ReachPort = keyed(sd.TableReachPort, sd.KeyPacketID, sd.ParamLink, sd.ActionReachOn)
	dv.CreditTo = map[int]*[sdm.SwCreditSlots]sdm.Source{}
	for _, en := range sw.tables[sd.TableCreditTo] {
		p, slot := int(en.Key[sd.KeyDstPort]), int(en.Key[sd.KeySlot])
		if slot < 0 || slot >= sdm.SwCreditSlots {
			return bad(sd.TableCreditTo, en, fmt.Sprintf("expected slot 0..%d", sdm.SwCreditSlots-1))
		}
		c := dv.CreditTo[p]
		if c == nil {
			c = new([sdm.SwCreditSlots]sdm.Source)
			dv.CreditTo[p] = c
		}
		if en.Action == sd.ActionToSource {
			c[slot] = sdm.Source{Valid: true, FA: int(en.Data[sd.ParamFA]), VOQ: int(en.Data[sd.ParamVOQ])}
		}
	}
	// Applications started since: into the fabric.
	for _, id := range slices.Sorted(maps.Keys(sw.apps)) {
		a := sw.apps[id]
		if a.cell == nil || !a.enabled || e.apps.has(a) {
			continue
		}
		// An application already part way (the fabric was rebuilt)
		// continues after the batches it emitted.
		next, start := a.resume()
		if a.jitterNs > 0 && a.nextPs > 0 {
			start = a.nextPs // jittered: when the fabric had it due
		}
		sa := &sdm.SwApp{Kind: int(a.cell.Kind), FrameBytes: a.pktLen + 4, StartPs: start, PeriodPs: a.timerNs * 1000,
			JitterPs: a.jitterNs * 1000, Rand: a.rng,
			Batches: a.batches, PerBatch: a.perBatch, AppID: a.id, PayloadLength: int(a.cell.PayloadLength), Enabled: true,
			Sent: a.sent, Next: next}
		e.apps.add(a, i, sa)
		e.fab.AddApp(i, sa)
	}
	return nil
}

// linkState sets each fibre's rate, state and frame loss as they are now.
func (e *sdEngine) linkState(d *Dataplane) {
	for i, l := range e.links {
		ml := e.fab.Links[i]
		tp := l.tx.port(l.txPort)
		ml.Up = d.portUp(l.tx, l.txPort) && d.portUp(l.rx, l.rxPort)
		if tp == nil {
			ml.Up = false
			ml.Bps = 100e9
			continue
		}
		ml.Bps = float64(tp.gbps) * 1e9
		if loss, ok := fibreLoss(l, tp, d.now, &e.lkey[i], ml.Loss != nil); ok {
			ml.SetLoss(loss)
		}
	}
}

// sdRegs names a device's registers as the switch holds them.
func sdRegs(dv *sdm.SwDevice) []fabricReg {
	type r = fabricReg
	if dv.FE {
		return []r{{sd.RegSpray, dv.SprayRR}, {sd.RegReachAge, dv.Age}, {sd.RegQHist, dv.QHist}}
	}
	return []r{{sd.RegCredit, dv.Credit}, {sd.RegSeqOut, dv.SeqOut}, {sd.RegSeqIn, dv.SeqIn}, {sd.RegSpray, dv.SprayRR},
		{sd.RegCreditRR, dv.CreditRR}, {sd.RegFCI, dv.FCI}, {sd.RegReachAge, dv.Age}, {sd.RegLatHist, dv.LatHist},
		{sd.RegReasmDrops, dv.ReasmDrops}}
}

// syncIn reads the switches' registers into the fabric (the control
// plane may have written them) and the applications' state.
func (e *sdEngine) syncIn() {
	for i, sw := range e.sws {
		dv := e.fab.Devices[i]
		regs := sdRegs(dv)
		if e.snap[i] == nil {
			e.snap[i] = make([][]int64, len(regs))
		}
		sw.mu.Lock()
		regsIn(sw, regs, e.snap[i])
		dv.FCITh = sw.regs[sd.RegFCIThreshold][0]
		if !dv.FE {
			dv.ReasmTimeout = sw.regs[sd.RegReasmTimeout][0]
		}
		e.apps.syncIn(i, sw, func(sa *sdm.SwApp) *bool { return &sa.Enabled })
		sw.mu.Unlock()
	}
}

// syncOut adds what the cells did to the switches: register changes,
// port counters, queues, generator progress.
func (e *sdEngine) syncOut(d *Dataplane) {
	now := e.fab.Now()
	for i, sw := range e.sws {
		dv := e.fab.Devices[i]
		regs := sdRegs(dv)
		sw.mu.Lock()
		regsOut(sw, regs, e.snap[i])
		// The fabric ports' queues (FEs' and FAs') and the recirculation port.
		for port, li := range dv.Out {
			l := e.fab.Links[li]
			q := sw.queues[[2]int{port, 0}]
			if q == nil {
				q = &simQueue{}
				sw.queues[[2]int{port, 0}] = q
			}
			q.usage = l.Depth(now) * sd.TMCellBytes
			q.watermark = max(q.watermark, l.Watermark*sd.TMCellBytes, q.usage)
			q.drops += l.QueueDrops
			l.QueueDrops, l.Watermark = 0, 0
		}
		if !dv.FE {
			// Queue 0: frames waiting for credit; sd.ReasmQID: early
			// frames waiting for their turn.
			for _, c := range []struct {
				qid        int
				max, drops *int64
				bytes      int64
			}{{0, &dv.RecircMax, &dv.RecircDrops, dv.RecircBytes()}, {sd.ReasmQID, &dv.ReorderMax, &dv.ReorderDrops, dv.ReorderBytes()}} {
				q := sw.queues[[2]int{sdRecircPort, c.qid}]
				if q == nil {
					q = &simQueue{}
					sw.queues[[2]int{sdRecircPort, c.qid}] = q
				}
				q.usage = c.bytes
				q.watermark = max(q.watermark, q.usage, *c.max)
				q.drops += *c.drops
				*c.drops, *c.max = 0, 0
			}
		}
		ports := make(map[int]*simPort, len(dv.Ports))
		for p := range dv.Ports {
			ports[p] = sw.ports[p]
		}
		sw.mu.Unlock()
		for p, c := range dv.Ports {
			sp := ports[p]
			for bytes, n := range c.Tx {
				sp.countTx(bytes, n)
			}
			for bytes, n := range c.RxOK {
				sp.countRxOK(bytes, n)
			}
			for bytes, n := range c.RxBad {
				sp.countRxBad(bytes, n)
			}
		}
		clear(dv.Ports)
	}
	for a, sa := range e.apps.of {
		a.nextPs = sa.NextPs
	}
	e.apps.syncOut(func(sa *sdm.SwApp) (int64, bool, bool) { return sa.Sent, sa.Done(), sa.Enabled })
}
