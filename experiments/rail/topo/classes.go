package topo

import (
	"fmt"
	"math"
)

// Removal is one link taken out of a class's candidates, and why.
type Removal struct {
	Link int
	// LPER is the link's rate in the direction the worst path used it.
	LPER float64
	// Worst is the worst path of the candidates when it was removed.
	Worst Path
}

// Class is one virtual topology: the links it keeps for a bound on the
// worst PPER of any of its paths.
type Class struct {
	// Index counts from 1, the most reliable class.
	Index int
	Bound float64
	// Alive[i] says whether link i is in the class.
	Alive []bool
	// Removed lists the links this class's round took out, in order (links
	// a less reliable class already dropped are not repeated).
	Removed []Removal
	// Worst is the class's worst path once its round ended (Found false
	// when no ToR pair is joined any more).
	Worst Path
	Found bool
}

// Classes builds one virtual topology per bound with RAIL's greedy rounds
// (§5.1): bounds are the classes' worst-case PPERs, most reliable first,
// strictly increasing. The least reliable class starts from every link
// alive says is up (nil: all); while its worst path (Algorithm 1) is above
// its bound, the link of that path with the highest LPER is removed. Each
// next class, one more reliable, starts from the links the previous round
// kept. Ties between equally bad links go to the one given first.
func (n *Network) Classes(r Rates, bounds []float64, alive []bool) ([]Class, error) {
	if err := CheckBounds(bounds); err != nil {
		return nil, err
	}
	cur := make([]bool, len(n.Links))
	for i := range cur {
		cur[i] = alive == nil || alive[i]
	}
	out := make([]Class, len(bounds))
	for k := len(bounds) - 1; k >= 0; k-- {
		c := Class{Index: k + 1, Bound: bounds[k]}
		for {
			w, ok := n.Worst(r, cur)
			c.Worst, c.Found = w, ok
			if !ok || w.PPER <= bounds[k] {
				break
			}
			lp := n.pathLPERs(r, w)
			worst := 0
			for j := range lp {
				if lp[j] > lp[worst] || lp[j] == lp[worst] && w.Links[j] < w.Links[worst] {
					worst = j
				}
			}
			cur[w.Links[worst]] = false
			c.Removed = append(c.Removed, Removal{Link: w.Links[worst], LPER: lp[worst], Worst: w})
		}
		c.Alive = append([]bool(nil), cur...)
		out[k] = c
	}
	return out, nil
}

// Survives says whether every link of p is in alive.
func Survives(p Path, alive []bool) bool {
	for _, li := range p.Links {
		if !alive[li] {
			return false
		}
	}
	return true
}

// CheckBounds checks the classes' bounds: at least one, probabilities,
// strictly increasing from the most reliable class.
func CheckBounds(bounds []float64) error {
	if len(bounds) == 0 {
		return fmt.Errorf("classes: no bound given")
	}
	for k, b := range bounds {
		if math.IsNaN(b) || b < 0 || b > 1 {
			return fmt.Errorf("classes: bound %g of class %d is not a probability", b, k+1)
		}
		if k > 0 && b <= bounds[k-1] {
			return fmt.Errorf("classes: bounds must increase from the most reliable class: class %d's %g is not above class %d's %g", k+1, b, k, bounds[k-1])
		}
	}
	return nil
}
