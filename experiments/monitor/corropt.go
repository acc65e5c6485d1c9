package monitor

import (
	"fmt"
	"sort"

	"testbed/inventory"
)

// Stage is a switch's tier in a Clos network.
type Stage int

// Stages, bottom up.
const (
	ToR Stage = iota + 1
	Agg
	Core
)

// ParseStage reads an inventory role option.
func ParseStage(s string) (Stage, error) {
	switch s {
	case "tor":
		return ToR, nil
	case "agg":
		return Agg, nil
	case "core":
		return Core, nil
	}
	return 0, fmt.Errorf("role %q: want tor, agg or core", s)
}

// Topology is the up-down graph CorrOpt reasons over: switches by stage and
// the links between adjacent or higher stages, each by its inventory name.
type Topology struct {
	names  []string
	index  map[string]int
	stage  []Stage
	top    Stage
	links  []upLink
	byName map[string]int
	up     [][]int // switch -> links going up from it
	down   [][]int // switch -> links coming up into it
}

type upLink struct {
	name         string
	lower, upper int
}

// NewTopology builds the topology from the inventory's switches that carry
// a role option (tor|agg|core, as experiments/rail reads it) and the links
// between them. Links to devices without a role, and links within a stage,
// carry no ToR-to-spine path and are left out.
func NewTopology(inv *inventory.Inventory) (*Topology, error) {
	t := &Topology{index: map[string]int{}, byName: map[string]int{}}
	names := make([]string, 0, len(inv.Devices))
	for _, d := range inv.Devices {
		if d.Options["role"] != "" {
			names = append(names, d.Name)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		d := inv.Devices[n]
		s, err := ParseStage(d.Options["role"])
		if err != nil {
			return nil, fmt.Errorf("topology: device %s: %w", n, err)
		}
		t.addSwitch(n, s)
	}
	for _, l := range inv.Links {
		if err := t.addLink(l.Name, l.A.Device, l.B.Device); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *Topology) addSwitch(name string, s Stage) {
	t.index[name] = len(t.names)
	t.names = append(t.names, name)
	t.stage = append(t.stage, s)
	t.up = append(t.up, nil)
	t.down = append(t.down, nil)
	t.top = max(t.top, s)
}

// addLink adds a link between two switches; a link with an end that is no
// switch of the topology, or within one stage, is ignored.
func (t *Topology) addLink(name, a, b string) error {
	ia, oka := t.index[a]
	ib, okb := t.index[b]
	if !oka || !okb || t.stage[ia] == t.stage[ib] {
		return nil
	}
	if _, dup := t.byName[name]; dup {
		return fmt.Errorf("topology: link %s named twice", name)
	}
	if t.stage[ia] > t.stage[ib] {
		ia, ib = ib, ia
	}
	i := len(t.links)
	t.links = append(t.links, upLink{name: name, lower: ia, upper: ib})
	t.byName[name] = i
	t.up[ia] = append(t.up[ia], i)
	t.down[ib] = append(t.down[ib], i)
	return nil
}

// Has says whether the link joins two stages of the topology.
func (t *Topology) Has(link string) bool { _, ok := t.byName[link]; return ok }

// ToRs lists the ToR switches.
func (t *Topology) ToRs() []string {
	var out []string
	for i, n := range t.names {
		if t.stage[i] == ToR {
			out = append(out, n)
		}
	}
	return out
}

// paths counts, for every switch, its up-paths to the top stage over links
// not disabled: one at the top, else the sum over alive uplinks of the
// paths of the switch above. Switches are visited top stage first.
func (t *Topology) paths(disabled map[string]bool) []float64 {
	p := make([]float64, len(t.names))
	for s := t.top; s >= ToR; s-- {
		for i := range t.names {
			if t.stage[i] != s {
				continue
			}
			if s == t.top {
				p[i] = 1
				continue
			}
			for _, li := range t.up[i] {
				if l := t.links[li]; !disabled[l.name] {
					p[i] += p[l.upper]
				}
			}
		}
	}
	return p
}

// Capacity is a ToR's share of its up-paths to the spine that survive.
type Capacity struct {
	ToR      string  `json:"tor"`
	Paths    float64 `json:"paths"`
	Of       float64 `json:"of"`
	Fraction float64 `json:"fraction"`
}

// Check is CorrOpt's fast checker (Zhuo et al., SIGCOMM'17, §5): may link
// be disabled, on top of the links already disabled, while every ToR keeps
// at least the fraction minFrac of its up-paths to the spine? Only the ToRs
// below the link can lose paths, so only they are counted, and of them only
// those that lose a path to this link: a ToR already below the bound
// through other links does not stop a link it does not use from going.
// The fraction is of the ToR's paths in the full topology. worst is the
// ToR that loses paths and keeps the smallest fraction (the empty Capacity
// when no ToR loses a path).
func (t *Topology) Check(disabled map[string]bool, link string, minFrac float64) (ok bool, worst Capacity, err error) {
	li, found := t.byName[link]
	if !found {
		return false, Capacity{}, fmt.Errorf("corropt: link %s joins no two stages of the topology (role options tor|agg|core)", link)
	}
	full, before := t.paths(nil), t.paths(disabled)
	with := make(map[string]bool, len(disabled)+1)
	for k, v := range disabled {
		with[k] = v
	}
	with[link] = true
	after := t.paths(with)
	ok = true
	worst.Fraction = 2
	for _, tor := range t.below(t.links[li].lower) {
		c := Capacity{ToR: t.names[tor], Paths: after[tor], Of: full[tor]}
		if after[tor] == before[tor] {
			continue // loses no path to this link
		}
		c.Fraction = c.Paths / c.Of
		if c.Fraction < worst.Fraction {
			worst = c
		}
		if c.Fraction < minFrac {
			ok = false
		}
	}
	if worst.Fraction == 2 {
		worst = Capacity{}
	}
	return ok, worst, nil
}

// below lists the ToRs at or below switch i.
func (t *Topology) below(i int) []int {
	seen := map[int]bool{i: true}
	queue := []int{i}
	var tors []int
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if t.stage[s] == ToR {
			tors = append(tors, s)
		}
		for _, li := range t.down[s] {
			if l := t.links[li].lower; !seen[l] {
				seen[l] = true
				queue = append(queue, l)
			}
		}
	}
	sort.Ints(tors)
	return tors
}
