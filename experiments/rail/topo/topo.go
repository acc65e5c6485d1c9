// Package topo holds RAIL's algorithms (Zhuo et al., "RAIL: A Case for
// Redundant Arrays of Inexpensive Links in Data Center Networks", NSDI 2017,
// §5): the worst path packet error rate (PPER) of a Clos network in one
// bottom-up pass over its switches (Algorithm 1, App. B), the greedy
// construction of K virtual topologies for the classes' PPER bounds (§5.1),
// the paths and good-path fraction of every ToR pair (§7.2, Fig. 16), and the
// XOR parity interval of a path (§5.3).
//
// It is pure: it knows nothing of devices, inventories or bundles, and takes
// the link packet error rates (LPER) as given. Where they come from
// (measured on a lab, or a file from a real network) is the caller's concern.
package topo

import (
	"fmt"
	"math"
	"sort"
)

// Role is a switch's stage in a Clos network: ToR at the bottom (stage 1),
// then aggregation (2), then core (3).
type Role int

// The stages of a 3-stage Clos (fat tree).
const (
	ToR  Role = 1
	Agg  Role = 2
	Core Role = 3
)

// ParseRole reads "tor", "agg" or "core" (also "aggregation", "spine").
func ParseRole(s string) (Role, error) {
	switch s {
	case "tor", "ToR", "TOR", "leaf":
		return ToR, nil
	case "agg", "aggregation":
		return Agg, nil
	case "core", "spine":
		return Core, nil
	}
	return 0, fmt.Errorf("role %q: expected tor, agg or core", s)
}

func (r Role) String() string {
	switch r {
	case ToR:
		return "tor"
	case Agg:
		return "agg"
	case Core:
		return "core"
	}
	return fmt.Sprintf("stage%d", int(r))
}

// Estimate is one direction's measured link packet error rate: the point
// estimate and its confidence interval (Low = High = LPER when given
// without one).
type Estimate struct {
	LPER, Low, High float64
	// Frames and Lost are the counts behind it, when known (0: not known).
	Frames, Lost int64
}

// Link is one physical link between switches of adjacent stages, with an
// estimate per direction. A and B are the switch names as given, in either
// order: Network.Build finds which end is the lower one from their roles.
type Link struct {
	Name         string
	A, B         string
	APort, BPort string
	Transceiver  string
	FEC          string
	LengthM      *float64
	// AttenuationABDB and AttenuationBADB are the optical losses per
	// direction (Tx power at one end less Rx power at the other), when known.
	AttenuationABDB, AttenuationBADB *float64
	AB, BA                           Estimate
	// Source says where the row came from (file:line), for messages.
	Source string
}

// Network is a Clos: switches with their stage, and links.
type Network struct {
	Roles map[string]Role
	Links []*Link

	// Derived by Build.
	names    []string       // switch index -> name, sorted by stage then name
	index    map[string]int // name -> switch index
	stage    []Role         // switch index -> stage
	lower    []int          // link index -> its lower end
	upper    []int          // link index -> its upper end
	aIsLower []bool         // link index -> A is the lower end
	children [][]int        // switch -> indexes of links to its children
	parents  [][]int        // switch -> indexes of links to its parents
}

// Build checks the network and prepares it for the algorithms: every link
// joins two known switches one stage apart, no link is given twice, and
// every LPER is a probability inside its interval.
func (n *Network) Build() error {
	n.names = n.names[:0]
	for s := range n.Roles {
		n.names = append(n.names, s)
	}
	sort.Slice(n.names, func(i, j int) bool {
		a, b := n.names[i], n.names[j]
		if n.Roles[a] != n.Roles[b] {
			return n.Roles[a] < n.Roles[b]
		}
		return a < b
	})
	n.index = make(map[string]int, len(n.names))
	n.stage = make([]Role, len(n.names))
	for i, s := range n.names {
		n.index[s] = i
		n.stage[i] = n.Roles[s]
	}
	n.lower = make([]int, len(n.Links))
	n.upper = make([]int, len(n.Links))
	n.aIsLower = make([]bool, len(n.Links))
	n.children = make([][]int, len(n.names))
	n.parents = make([][]int, len(n.names))
	seen := map[[2]int]string{}
	for i, l := range n.Links {
		ia, oka := n.index[l.A]
		ib, okb := n.index[l.B]
		switch {
		case !oka:
			return fmt.Errorf("%s: link %s: switch %s has no role (expected tor, agg or core)", l.Source, l.Name, l.A)
		case !okb:
			return fmt.Errorf("%s: link %s: switch %s has no role (expected tor, agg or core)", l.Source, l.Name, l.B)
		case n.stage[ia] == n.stage[ib]+1:
			n.lower[i], n.upper[i] = ib, ia
		case n.stage[ib] == n.stage[ia]+1:
			n.lower[i], n.upper[i], n.aIsLower[i] = ia, ib, true
		default:
			return fmt.Errorf("%s: link %s joins %s (%s) and %s (%s): a Clos link joins adjacent stages", l.Source, l.Name, l.A, n.stage[ia], l.B, n.stage[ib])
		}
		key := [2]int{n.lower[i], n.upper[i]}
		if prev, dup := seen[key]; dup {
			return fmt.Errorf("%s: link %s joins %s and %s again (already at %s): parallel links are not supported", l.Source, l.Name, l.A, l.B, prev)
		}
		seen[key] = l.Source
		for _, e := range []struct {
			dir string
			est Estimate
		}{{l.A + "->" + l.B, l.AB}, {l.B + "->" + l.A, l.BA}} {
			for _, v := range []float64{e.est.LPER, e.est.Low, e.est.High} {
				if math.IsNaN(v) || v < 0 || v > 1 {
					return fmt.Errorf("%s: link %s %s: LPER %g is not a probability in [0, 1]", l.Source, l.Name, e.dir, v)
				}
			}
			if e.est.Low > e.est.LPER || e.est.High < e.est.LPER {
				return fmt.Errorf("%s: link %s %s: interval [%g, %g] does not contain the LPER %g", l.Source, l.Name, e.dir, e.est.Low, e.est.High, e.est.LPER)
			}
		}
		n.children[n.upper[i]] = append(n.children[n.upper[i]], i)
		n.parents[n.lower[i]] = append(n.parents[n.lower[i]], i)
	}
	return nil
}

// ToRs lists the ToR switches, sorted.
func (n *Network) ToRs() []string {
	var out []string
	for i, s := range n.names {
		if n.stage[i] == ToR {
			out = append(out, s)
		}
	}
	return out
}

// Lower names link i's lower end (after Build).
func (n *Network) Lower(i int) string { return n.names[n.lower[i]] }

// Upper names link i's upper end (after Build).
func (n *Network) Upper(i int) string { return n.names[n.upper[i]] }

// Rates gives the LPER a computation uses for one direction of a link: ab
// is the A -> B direction as the link was given.
type Rates func(l *Link, ab bool) float64

// Point uses the point estimates.
func Point(l *Link, ab bool) float64 { return pick(l, ab).LPER }

// UpperBound uses the upper ends of the confidence intervals: a class bound
// then holds with the intervals' confidence, and a link measured with too
// few frames to show it is good is not taken for good.
func UpperBound(l *Link, ab bool) float64 { return pick(l, ab).High }

func pick(l *Link, ab bool) Estimate {
	if ab {
		return l.AB
	}
	return l.BA
}

// rate is the LPER of link i going up (lower -> upper) or down.
func (n *Network) rate(r Rates, i int, up bool) float64 {
	return r(n.Links[i], up == n.aIsLower[i])
}

// PPER is a path's packet error rate from its links' LPERs (App. B, Def. 5):
// 1 - prod(1 - LPER).
func PPER(lpers ...float64) float64 {
	ok := 1.0
	for _, p := range lpers {
		ok *= 1 - p
	}
	return 1 - ok
}
