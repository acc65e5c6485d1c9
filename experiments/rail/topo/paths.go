package topo

import "slices"

// walk is an upward walk from a ToR: the links in order from the ToR.
type walk []int

// upWalks lists every upward walk from the ToR src to each switch.
func (n *Network) upWalks(src int, alive []bool) map[int][]walk {
	out := map[int][]walk{}
	var rec func(s int, w walk)
	rec = func(s int, w walk) {
		out[s] = append(out[s], slices.Clone(w))
		for _, li := range n.parents[s] {
			if alive != nil && !alive[li] {
				continue
			}
			rec(n.upper[li], append(w, li))
		}
	}
	rec(src, nil)
	return out
}

// PairPaths are the equal-cost up-down paths between an ordered ToR pair:
// the up-down paths whose highest switch is on the lowest stage any of
// them reaches (what ECMP spreads traffic over).
type PairPaths struct {
	Src, Dst string
	Paths    []Path
}

// AllPaths enumerates, for every ordered pair of distinct ToRs, its
// equal-cost up-down paths over the links alive says are present (nil:
// all), each with its PPER under r. It enumerates every path, O(n^3) in an
// n-ToR Clos: it is for reports and for checking Worst, not for the greedy
// loop.
func (n *Network) AllPaths(r Rates, alive []bool) []PairPaths {
	var tors []int
	for i := range n.names {
		if n.stage[i] == ToR {
			tors = append(tors, i)
		}
	}
	ups := make(map[int]map[int][]walk, len(tors))
	for _, t := range tors {
		ups[t] = n.upWalks(t, alive)
	}
	var out []PairPaths
	for _, a := range tors {
		for _, b := range tors {
			if a == b {
				continue
			}
			pp := PairPaths{Src: n.names[a], Dst: n.names[b]}
			for h := ToR + 1; len(pp.Paths) == 0 && int(h) <= int(n.maxStage()); h++ {
				for t := range n.names {
					if n.stage[t] != h {
						continue
					}
					for _, wu := range ups[a][t] {
						for _, wd := range ups[b][t] {
							if p, ok := n.join(r, a, wu, wd); ok {
								pp.Paths = append(pp.Paths, p)
							}
						}
					}
				}
			}
			out = append(out, pp)
		}
	}
	return out
}

func (n *Network) maxStage() Role {
	m := ToR
	for _, s := range n.stage {
		m = max(m, s)
	}
	return m
}

// join makes the path up wu from src and down the reverse of wd, if it
// visits no switch twice.
func (n *Network) join(r Rates, src int, wu, wd walk) (Path, bool) {
	seen := map[int]bool{src: true}
	sw := []int{src}
	for _, li := range wu {
		sw = append(sw, n.upper[li])
		seen[n.upper[li]] = true
	}
	links := slices.Clone(wu)
	for k := len(wd) - 1; k >= 0; k-- {
		s := n.lower[wd[k]]
		if seen[s] {
			return Path{}, false
		}
		seen[s] = true
		sw = append(sw, s)
		links = append(links, wd[k])
	}
	p := Path{Links: links}
	for _, s := range sw {
		p.Switches = append(p.Switches, n.names[s])
	}
	p.PPER = PPER(n.pathLPERs(r, p)...)
	return p, true
}

// PairClass is one ordered ToR pair's paths in one virtual topology.
type PairClass struct {
	Src, Dst string
	// Paths counts the pair's equal-cost paths in the physical network,
	// Surviving those whose every link the class keeps, Good the
	// surviving ones with PPER at most the good bound.
	Paths, Surviving, Good int
	// Worst is the highest PPER of a surviving path (-1: none survives).
	Worst float64
}

// SurvivingFraction is Surviving / Paths (0 without paths).
func (pc PairClass) SurvivingFraction() float64 { return frac(pc.Surviving, pc.Paths) }

// GoodFraction is Good / Paths: RAIL Fig. 16's fraction of good paths of a
// ToR pair (0 without paths).
func (pc PairClass) GoodFraction() float64 { return frac(pc.Good, pc.Paths) }

func frac(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// PairsInClass counts, for every pair of all (the physical network's
// paths), the paths alive keeps and those of them with PPER <= good.
func PairsInClass(all []PairPaths, alive []bool, good float64) []PairClass {
	out := make([]PairClass, 0, len(all))
	for _, pp := range all {
		pc := PairClass{Src: pp.Src, Dst: pp.Dst, Paths: len(pp.Paths), Worst: noPath}
		for _, p := range pp.Paths {
			if !Survives(p, alive) {
				continue
			}
			pc.Surviving++
			if p.PPER <= good {
				pc.Good++
			}
			pc.Worst = max(pc.Worst, p.PPER)
		}
		out = append(out, pc)
	}
	return out
}

// CountPaths is how many equal-cost paths AllPaths would enumerate over
// the links alive keeps (nil: all), counted without enumerating them: per
// ToR, the number of upward walks to every switch (one pass per stage),
// then per pair the products at the lowest stage where the two meet. It
// counts walks that revisit a switch too, so it is an upper bound, exact
// in a fat tree.
func (n *Network) CountPaths(alive []bool) int64 {
	var tors []int
	for i := range n.names {
		if n.stage[i] == ToR {
			tors = append(tors, i)
		}
	}
	ups := make([][]int64, len(tors))
	for k, t := range tors {
		c := make([]int64, len(n.names))
		c[t] = 1
		// n.names is sorted by stage: a switch's count is final before its
		// parents are reached.
		for s := range n.names {
			if c[s] == 0 {
				continue
			}
			for _, li := range n.parents[s] {
				if alive == nil || alive[li] {
					c[n.upper[li]] += c[s]
				}
			}
		}
		ups[k] = c
	}
	// Per ToR and stage, the switches it reaches: the pair sums run over
	// these alone.
	top := n.maxStage()
	reach := make([][][]int, len(tors))
	for k := range tors {
		reach[k] = make([][]int, top+1)
		for s, c := range ups[k] {
			if c > 0 {
				reach[k][n.stage[s]] = append(reach[k][n.stage[s]], s)
			}
		}
	}
	var total int64
	for a := range tors {
		for b := range tors {
			if a == b {
				continue
			}
			for h := ToR + 1; h <= top; h++ {
				var sum int64
				for _, s := range reach[a][h] {
					sum += ups[a][s] * ups[b][s]
				}
				if sum > 0 {
					total += sum
					break
				}
			}
		}
	}
	return total
}
