package simlab

import (
	"testbed/simlab/tofino"
)

// simulatedSwitch reports whether a device's driver is one the twin runs
// a simulated Tofino for (emulators: startTofino, startTofinoGRPC).
func simulatedSwitch(driver string) bool {
	return driver == "tofino-bfrt" || driver == "tofino-bfrt-grpc"
}

// dataplaneOf is the dataplane of the island of switches sw belongs to:
// switches joined by a path of fibres share one (its clock, its traffic,
// its lock); switches joined by none share no traffic, so each island
// keeps its own, and one island's traffic runs beside another's, on
// another core, with the same results as one after the other. On a
// bench whose switches are all joined, as the default bench's are,
// there is one.
func (t *twin) dataplaneOf(sw string) *tofino.Dataplane {
	if t.dps == nil {
		t.dps, t.fibreDP = map[string]*tofino.Dataplane{}, map[string]*tofino.Dataplane{}
	}
	island := t.islandOf(sw)
	dp := t.dps[island]
	if dp == nil {
		dp = tofino.NewDataplane(t.lab.world)
		t.dps[island] = dp
	}
	return dp
}

// islandOf names sw's island by its first switch in the inventory's
// order of links (sw itself when no fibre joins it to another switch).
func (t *twin) islandOf(sw string) string {
	parent := map[string]string{}
	var find func(string) string
	find = func(n string) string {
		p, ok := parent[n]
		if !ok || p == n {
			return n
		}
		r := find(p)
		parent[n] = r
		return r
	}
	isSwitch := func(n string) bool {
		d, ok := t.out.Device(n)
		return ok && simulatedSwitch(d.Driver)
	}
	for _, l := range t.out.Links {
		if !isSwitch(l.A.Device) || !isSwitch(l.B.Device) {
			continue
		}
		a, b := find(l.A.Device), find(l.B.Device)
		if a == b {
			continue
		}
		parent[b] = a
	}
	return find(sw)
}
