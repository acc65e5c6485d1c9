package topo

import "slices"

// Path is an up-down path between two ToRs: its switches in order and the
// links between them (indexes into Network.Links), with its PPER.
type Path struct {
	Switches []string
	Links    []int
	PPER     float64
}

// Src is the path's first ToR, Dst its last.
func (p Path) Src() string { return p.Switches[0] }

// Dst is the path's last ToR.
func (p Path) Dst() string { return p.Switches[len(p.Switches)-1] }

// noPath marks a switch no ToR reaches (or that reaches no ToR) through the
// links considered; every real PPER is >= 0.
const noPath = -1.0

// Worst finds the up-down path with the highest PPER over the links alive
// says are present (nil: all), with RAIL's Algorithm 1: one pass over the
// switches from the bottom stage up, computing on each switch s
//
//	up_s   the PPER of the worst upward path from any ToR to s,
//	down_s the PPER of the worst downward path from s to any ToR,
//	top_s  the PPER of the worst up-down path whose highest switch is s,
//
// from its children's up and down values, with the path up and the path
// down through different children; the worst path is the worst top_s.
// Each switch is visited once and each link twice, so the time is linear
// in the links, Θ(n log n) for an n-ToR Clos (App. B, Theorems 3-5). As in
// App. B, two different children of a switch lead to different ToRs: true
// of a fat tree, where a core switch has one aggregation switch per pod.
//
// ok is false when no ToR pair is joined by any path.
func (n *Network) Worst(r Rates, alive []bool) (p Path, ok bool) {
	ns := len(n.names)
	up := make([]float64, ns)
	down := make([]float64, ns)
	upVia := make([]int, ns)   // link from the child the worst up path comes through
	downVia := make([]int, ns) // link to the child the worst down path goes through
	best, bestS, bestUp, bestDown := noPath, -1, -1, -1
	// n.names is sorted by stage: children come before their parents.
	for s := range ns {
		upVia[s], downVia[s] = -1, -1
		if n.stage[s] == ToR {
			up[s], down[s] = 0, 0
			continue
		}
		up[s], down[s] = noPath, noPath
		// The best and second best child on each side (by link), so that
		// top_s over c != d is found in one pass over the children.
		a1, a2, b1, b2 := noPath, noPath, noPath, noPath
		ai1, ai2, bi1, bi2 := -1, -1, -1, -1
		for _, li := range n.children[s] {
			if alive != nil && !alive[li] {
				continue
			}
			c := n.lower[li]
			if up[c] != noPath {
				v := 1 - (1-up[c])*(1-n.rate(r, li, true))
				if v > a1 {
					a2, ai2, a1, ai1 = a1, ai1, v, li
				} else if v > a2 {
					a2, ai2 = v, li
				}
			}
			if down[c] != noPath {
				v := 1 - (1-n.rate(r, li, false))*(1-down[c])
				if v > b1 {
					b2, bi2, b1, bi1 = b1, bi1, v, li
				} else if v > b2 {
					b2, bi2 = v, li
				}
			}
		}
		up[s], upVia[s] = a1, ai1
		down[s], downVia[s] = b1, bi1
		// top_s: the worst combination through different children.
		top, tu, td := noPath, -1, -1
		consider := func(a float64, ai int, b float64, bi int) {
			if ai < 0 || bi < 0 || ai == bi {
				return
			}
			if v := 1 - (1-a)*(1-b); v > top {
				top, tu, td = v, ai, bi
			}
		}
		consider(a1, ai1, b1, bi1)
		if ai1 == bi1 {
			consider(a1, ai1, b2, bi2)
			consider(a2, ai2, b1, bi1)
		}
		if top > best {
			best, bestS, bestUp, bestDown = top, s, tu, td
		}
	}
	if bestS < 0 {
		return Path{}, false
	}
	// Walk back down both sides.
	var upLinks []int
	for li := bestUp; li >= 0; li = upVia[n.lower[li]] {
		upLinks = append(upLinks, li)
	}
	slices.Reverse(upLinks)
	links := upLinks
	for li := bestDown; li >= 0; li = downVia[n.lower[li]] {
		links = append(links, li)
	}
	p = Path{Links: links, PPER: best}
	p.Switches = append(p.Switches, n.names[n.lower[links[0]]])
	for _, li := range upLinks {
		p.Switches = append(p.Switches, n.names[n.upper[li]])
	}
	for _, li := range links[len(upLinks):] {
		p.Switches = append(p.Switches, n.names[n.lower[li]])
	}
	return p, true
}

// pathLPERs are the LPERs of a path's links in the direction it runs.
func (n *Network) pathLPERs(r Rates, p Path) []float64 {
	out := make([]float64, len(p.Links))
	for k, li := range p.Links {
		// A link goes up while the path has not passed its top switch.
		out[k] = n.rate(r, li, n.names[n.lower[li]] == p.Switches[k])
	}
	return out
}

// PairWorst is the worst equal-cost path of one ordered ToR pair.
type PairWorst struct {
	Src, Dst string
	// PPER is the worst path's (-1 when no path joins them).
	PPER float64
}

// WorstPerPair applies Algorithm 1's recurrences per ToR instead of over
// all of them: for each ToR a, up_a(s), the worst upward path from a to
// every switch, and down_b(s), the worst downward path from every switch
// to b, each in one pass over the links; the worst path of a pair (a, b)
// is the worst combination at the lowest stage where the two meet. Two
// ToRs meeting first at s cannot have reached it through one child (they
// would have met lower), so Algorithm 1's c != d holds by itself.
// O(T·L + T²·S) for T ToRs, L links and S switches.
func (n *Network) WorstPerPair(r Rates, alive []bool) []PairWorst {
	var tors []int
	for i := range n.names {
		if n.stage[i] == ToR {
			tors = append(tors, i)
		}
	}
	ns := len(n.names)
	pass := func(t int, up bool) []float64 {
		v := make([]float64, ns)
		for s := range v {
			v[s] = noPath
		}
		v[t] = 0
		for s := range ns { // by stage: children first
			if v[s] == noPath {
				continue
			}
			for _, li := range n.parents[s] {
				if alive != nil && !alive[li] {
					continue
				}
				p := n.upper[li]
				v[p] = max(v[p], 1-(1-v[s])*(1-n.rate(r, li, up)))
			}
		}
		return v
	}
	ups := make([][]float64, len(tors))
	downs := make([][]float64, len(tors))
	for k, t := range tors {
		ups[k], downs[k] = pass(t, true), pass(t, false)
	}
	top := n.maxStage()
	var out []PairWorst
	for a := range tors {
		for b := range tors {
			if a == b {
				continue
			}
			pw := PairWorst{Src: n.names[tors[a]], Dst: n.names[tors[b]], PPER: noPath}
			for h := ToR + 1; h <= top && pw.PPER == noPath; h++ {
				for s := range ns {
					if n.stage[s] == h && ups[a][s] != noPath && downs[b][s] != noPath {
						pw.PPER = max(pw.PPER, 1-(1-ups[a][s])*(1-downs[b][s]))
					}
				}
			}
			out = append(out, pw)
		}
	}
	return out
}
