package tofino

import (
	"math"
	"time"

	"testbed/simlab/physics"
)

// What the Stardust fabric (stardust_dp.go) and the ecmp fabric
// (ecmp_dp.go) do alike to follow the switches behind them: notice a
// change, find the fibres among their switches, give each fibre its frame
// loss, carry registers and applications across, and count frames on
// the ports.

// versionsChanged reports whether sws are not the switches have, in the
// same order, at the versions ver (their sdVer when last read).
// fabricSwitches is the dataplane's record of the switches its Stardust
// and ecmp fabrics are made of (stardustSwitches, ecmpSwitches), valid
// while no switch has restarted with a program (programs), no fibre has
// been connected and no ecmp generator noted since (links, ecs).
type fabricSwitches struct {
	ok             bool
	programs       uint64
	links, ecs     int
	stardust, ecmp []*Tofino
}

// fabricSwitchesLocked are the switches of the Stardust fabric and of the
// ecmp fabric, read again from the switches only when a program, a fibre
// or an ecmp generator has come since they were last read; d.mu held.
func (d *Dataplane) fabricSwitchesLocked() (stardust, ecmp []*Tofino) {
	c := &d.fabrics
	// Read before the switches: a restart while they are read makes the
	// next chunk read them again.
	n := d.programs.Load()
	if !c.ok || c.programs != n || c.links != len(d.links) || c.ecs != len(d.ecSws) {
		*c = fabricSwitches{ok: true, programs: n, links: len(d.links), ecs: len(d.ecSws),
			stardust: d.stardustSwitches(), ecmp: d.ecmpSwitches()}
	}
	return c.stardust, c.ecmp
}

func versionsChanged(sws, have []*Tofino, ver []uint64) bool {
	if len(sws) != len(have) {
		return true
	}
	for i, sw := range sws {
		sw.mu.Lock()
		v := sw.sdVer
		sw.mu.Unlock()
		if sw != have[i] || v != ver[i] {
			return true
		}
	}
	return false
}

// linksAmong are the fibres that join two of sws, in the dataplane's
// order, and each switch's index in sws.
func (d *Dataplane) linksAmong(sws []*Tofino) ([]*swLink, map[*Tofino]int) {
	var links []*swLink
	idx := map[*Tofino]int{}
	for i, sw := range sws {
		idx[sw] = i
	}
	for _, l := range d.links {
		_, a := idx[l.tx]
		_, b := idx[l.rx]
		if a && b {
			links = append(links, l)
		}
	}
	return links, idx
}

// generating reports whether any of sws has an application of the
// fabric's (mine) that is enabled and not done.
func generating(sws []*Tofino, mine func(*pktgenApp) bool) bool {
	for _, sw := range sws {
		sw.mu.Lock()
		active := false
		for _, a := range sw.apps {
			active = active || (mine(a) && a.enabled && !a.done)
		}
		sw.mu.Unlock()
		if active {
			return true
		}
	}
	return false
}

// fibreLoss is the frame loss of fibre l, sent from its port tp, at now
// (the loss physics gives for the power arriving, the frame's size and
// the port's FEC), ok false when that is what *key already records and
// the fibre has a loss (have). A fibre that is dark, or a FEC the physics
// does not know, loses every frame.
func fibreLoss(l *swLink, tp *simPort, now time.Duration, key *sdLinkKey, have bool) (loss func(bytes int) float64, ok bool) {
	rx := l.fibre.EyePowerDBmAt(now)
	k := sdLinkKey{rx: rx, fec: tp.fecName(), gbps: tp.gbps}
	if k == *key && have {
		return nil, false
	}
	*key = k
	tr := l.fibre.Transceiver
	fec, err := physics.FECByName(k.fec)
	if err != nil || math.IsInf(rx, -1) {
		return func(int) float64 { return 1 }, true
	}
	fc := tp.fec == "BF_FEC_TYP_FC"
	return func(bytes int) float64 {
		if fc {
			return fireFrameLoss(tr.BER(rx), bytes) // fec.go
		}
		return physics.FrameLossProbability(tr, fec, rx, bytes)
	}, true
}

// fabricReg is one of a device's registers in a fabric, by the name the
// switch holds it under.
type fabricReg struct {
	name string
	v    []int64
}

// regsIn sets regs to what sw holds (the control plane may have written
// it) and snap to the same, for regsOut to add only what the fabric
// changed since. sw.mu is held.
func regsIn(sw *Tofino, regs []fabricReg, snap [][]int64) {
	for k, r := range regs {
		if snap[k] == nil {
			snap[k] = make([]int64, len(r.v))
		}
		clear(r.v)
		for idx, v := range sw.regs[r.name] {
			if idx >= 0 && idx < len(r.v) {
				r.v[idx] = v
			}
		}
		copy(snap[k], r.v)
	}
}

// regsOut adds to sw's registers what the fabric changed in regs since
// regsIn took snap. sw.mu is held.
func regsOut(sw *Tofino, regs []fabricReg, snap [][]int64) {
	for k, r := range regs {
		m := sw.regs[r.name]
		if m == nil {
			continue
		}
		for idx, v := range r.v {
			if dl := v - snap[k][idx]; dl != 0 {
				m[idx] += dl
			}
		}
	}
}

// resume is where an application continues in a fabric (re)built while
// it runs: after the batches it has emitted (next), the first of the
// others at startPs.
func (a *pktgenApp) resume() (next, startPs int64) {
	next = a.sent / int64(a.perBatch)
	return next, ps(a.startNs) + next*a.timerNs*1000
}

// fabricApps are the applications a fabric runs (A, the fabric's own
// record of one) and the device each runs on.
type fabricApps[A any] struct {
	of  map[*pktgenApp]A
	dev map[*pktgenApp]int
}

func newFabricApps[A any]() fabricApps[A] {
	return fabricApps[A]{of: map[*pktgenApp]A{}, dev: map[*pktgenApp]int{}}
}

func (f fabricApps[A]) has(a *pktgenApp) bool { _, ok := f.of[a]; return ok }

func (f fabricApps[A]) add(a *pktgenApp, dev int, fa A) {
	f.of[a] = fa
	f.dev[a] = dev
}

// syncIn clears the enabled flag (enabled) of device dev's applications
// that sw has stopped, or lost with a restart of bf_switchd. sw.mu is
// held.
func (f fabricApps[A]) syncIn(dev int, sw *Tofino, enabled func(A) *bool) {
	for a, fa := range f.of {
		if f.dev[a] == dev {
			e := enabled(fa)
			*e = *e && a.enabled && sw.apps[a.id] == a
		}
	}
}

// syncOut gives the switches' applications the fabric's progress (state:
// frames sent, all batches done, still enabled) and forgets those the
// fabric no longer runs.
func (f fabricApps[A]) syncOut(state func(A) (sent int64, done, enabled bool)) {
	for a, fa := range f.of {
		sent, done, enabled := state(fa)
		a.sent = sent
		if done || !enabled {
			a.done = a.done || done
			if !enabled {
				delete(f.of, a)
				delete(f.dev, a)
			}
		}
	}
}

// countTx counts n frames of bytes sent from p.
func (p *simPort) countTx(bytes int, n int64) {
	p.add("$FramesTransmittedAll", n)
	p.add("$FramesTransmittedOK", n)
	p.add("$OctetsTransmittedTotal", n*int64(bytes))
	p.add(txLength(int64(bytes)), n)
}

// countRxOK counts n good frames of bytes received on p.
func (p *simPort) countRxOK(bytes int, n int64) {
	p.add("$FramesReceivedAll", n)
	p.add("$FramesReceivedOK", n)
	p.add("$OctetsReceived", n*int64(bytes))
	p.add(rxLength(int64(bytes)), n)
}

// countRxBad counts n frames of bytes received on p with an FCS error.
func (p *simPort) countRxBad(bytes int, n int64) {
	p.add("$FramesReceivedAll", n)
	p.add("$FramesReceivedwithFCSError", n)
	p.add("$FrameswithanyError", n)
	p.add("$OctetsReceived", n*int64(bytes))
	p.add(rxLength(int64(bytes)), n)
}
