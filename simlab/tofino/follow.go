package tofino

import (
	"time"

	"testbed/simlab/lgmodel"
)

// Traffic of others across the switches' fibres.
//
// The simulated hosts' bulk flows (simlab/host, iperf3) cross a switch
// fibre as the packet generator's traffic does, and must see the link as
// the switches are configured with at each moment: the loss the optics
// give, protection, backpressure thresholds. The dataplane steps such a
// Follower with its own clock: each advance of the clock, in chunks of at
// most advanceChunk, steps every follower over the same span of simulated
// time, with the fibres' state as it is during the span (a recipe changes
// a switch or a VOA only while the clock stands still). What the follower
// put on its fibre is then added to the ports' counters, the programs'
// registers and the Tx buffer and reorder buffer queues, as the
// generator's traffic is, so a recipe reads it through the switch driver.

// Follower is traffic stepped with the dataplane's clock.
type Follower interface {
	// Step runs the traffic from from to to (the dataplane's clock), the
	// fibres as state reads them. It is called with the dataplane's lock
	// held: it must not call the dataplane.
	Step(from, to time.Duration, state func(fibre string) (LinkState, error))
	// Traffic is what the traffic has put on its fibre so far: the
	// link's counters since the follower started (lgmodel.Result's counts
	// and maxima), its frame size, the protection mode of its latest
	// frames and the Tx and reorder buffers now. fibre "" for none yet.
	Traffic() (fibre string, total lgmodel.Result, frameBytes int, mode lgmodel.Mode, txBytes, rxBytes int64)
}

type following struct {
	id   uint64
	f    Follower
	last lgmodel.Result
}

// Follow steps f with the clock from now on, until the returned stop is
// called.
func (d *Dataplane) Follow(f Follower) (stop func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nfollow++
	id := d.nfollow
	d.follow = append(d.follow, &following{id: id, f: f})
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		kept := d.follow[:0]
		for _, g := range d.follow {
			if g.id != id {
				kept = append(kept, g)
			}
		}
		d.follow = kept
	}
}

type fixedBuffers struct{ tx, rx int64 }

func (b fixedBuffers) Buffers() (int64, int64, bool) { return b.tx, b.rx, false }

// stepFollowers steps every follower from from to to, in order of
// following, and adds their traffic to the counters.
func (d *Dataplane) stepFollowers(from, to time.Duration) {
	if to <= from {
		return
	}
	for _, g := range d.follow {
		g.f.Step(from, to, d.linkStateLocked)
		fibre, cur, frameBytes, mode, tx, rx := g.f.Traffic()
		if fibre == "" {
			continue
		}
		for _, l := range d.links {
			if l.name == fibre {
				d.addTraffic(l, frameBytes, mode, cur, g.last, fixedBuffers{tx, rx})
				break
			}
		}
		g.last = cur
	}
}
