package topo_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"testbed/experiments/rail/topo"
)

// clos is a random 3-stage fat tree for tests: pods of ToRs and
// aggregation switches (every ToR of a pod joined to every aggregation
// switch of it unless that link failed), and core switches joined to at
// most one aggregation switch per pod. lper holds each direction's rate,
// keyed "from>to", independently of the package.
type clos struct {
	net  *topo.Network
	lper map[string]float64
	pod  map[string]int
}

func randomClos(rng *rand.Rand) clos {
	pods := 2 + rng.IntN(3)
	torsPer := 1 + rng.IntN(3)
	aggsPer := 1 + rng.IntN(3)
	cores := 1 + rng.IntN(4)
	c := clos{net: &topo.Network{Roles: map[string]topo.Role{}}, lper: map[string]float64{}, pod: map[string]int{}}
	rate := func() float64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return math.Pow(10, -9+6*rng.Float64())
		default:
			return math.Pow(10, -4+3.5*rng.Float64())
		}
	}
	link := func(a, b string) {
		if rng.IntN(8) == 0 { // a failed link
			return
		}
		ab, ba := rate(), rate()
		c.lper[a+">"+b], c.lper[b+">"+a] = ab, ba
		// Half the links given top-down, to exercise orientation.
		if rng.IntN(2) == 0 {
			a, b, ab, ba = b, a, ba, ab
		}
		c.net.Links = append(c.net.Links, &topo.Link{Name: a + "-" + b, A: a, B: b,
			AB: topo.Estimate{LPER: ab, Low: ab, High: ab}, BA: topo.Estimate{LPER: ba, Low: ba, High: ba}})
	}
	var aggs [][]string
	for p := range pods {
		var as []string
		for a := range aggsPer {
			n := fmt.Sprintf("a%d.%d", p, a)
			c.net.Roles[n], c.pod[n] = topo.Agg, p
			as = append(as, n)
		}
		aggs = append(aggs, as)
		for t := range torsPer {
			n := fmt.Sprintf("t%d.%d", p, t)
			c.net.Roles[n], c.pod[n] = topo.ToR, p
			for _, a := range as {
				link(n, a)
			}
		}
	}
	for k := range cores {
		n := fmt.Sprintf("c%d", k)
		c.net.Roles[n] = topo.Core
		for p := range pods {
			if rng.IntN(5) > 0 {
				link(aggs[p][rng.IntN(aggsPer)], n)
			}
		}
	}
	return c
}

func (c clos) has(a, b string) bool { _, ok := c.lper[a+">"+b]; return ok }

func (c clos) pper(sw ...string) float64 {
	ok := 1.0
	for i := 0; i+1 < len(sw); i++ {
		ok *= 1 - c.lper[sw[i]+">"+sw[i+1]]
	}
	return 1 - ok
}

// bruteWorst enumerates every ECMP path of every ordered ToR pair straight
// from the link map: within a pod ToR-agg-ToR, across pods
// ToR-agg-core-agg-ToR.
func (c clos) bruteWorst() (float64, int) {
	var tors, aggs, cores []string
	for n, r := range c.net.Roles {
		switch r {
		case topo.ToR:
			tors = append(tors, n)
		case topo.Agg:
			aggs = append(aggs, n)
		default:
			cores = append(cores, n)
		}
	}
	worst, paths := -1.0, 0
	for _, s := range tors {
		for _, d := range tors {
			if s == d {
				continue
			}
			for _, a := range aggs {
				if c.pod[s] == c.pod[d] {
					if c.has(s, a) && c.has(a, d) {
						worst, paths = max(worst, c.pper(s, a, d)), paths+1
					}
					continue
				}
				for _, k := range cores {
					for _, b := range aggs {
						if c.has(s, a) && c.has(a, k) && c.has(k, b) && c.has(b, d) {
							worst, paths = max(worst, c.pper(s, a, k, b, d)), paths+1
						}
					}
				}
			}
		}
	}
	return worst, paths
}

func TestWorstMatchesBruteForceOnRandomClos(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 17))
	for trial := range 300 {
		c := randomClos(rng)
		if err := c.net.Build(); err != nil {
			t.Fatal(err)
		}
		want, paths := c.bruteWorst()
		got, ok := c.net.Worst(topo.Point, nil)
		if paths == 0 {
			if ok {
				t.Fatalf("trial %d: no path exists but Worst found %v", trial, got.Switches)
			}
			continue
		}
		if !ok {
			t.Fatalf("trial %d: Worst found no path; brute force %d paths, worst %g", trial, paths, want)
		}
		if math.Abs(got.PPER-want) > 1e-12*math.Max(1, want) {
			t.Fatalf("trial %d: Worst %g via %v, brute force %g", trial, got.PPER, got.Switches, want)
		}
		// The path it names is real and has the PPER it says.
		if p := c.pper(got.Switches...); math.Abs(p-got.PPER) > 1e-12 {
			t.Fatalf("trial %d: path %v has PPER %g, Worst said %g", trial, got.Switches, p, got.PPER)
		}
		// The enumeration the reports use agrees with the brute force too.
		all, n := -1.0, 0
		for _, pp := range c.net.AllPaths(topo.Point, nil) {
			for _, p := range pp.Paths {
				all, n = max(all, p.PPER), n+1
			}
		}
		// Per pair, Algorithm 1's recurrences agree with the enumeration.
		pw := c.net.WorstPerPair(topo.Point, nil)
		for i, pp := range c.net.AllPaths(topo.Point, nil) {
			w := -1.0
			for _, p := range pp.Paths {
				w = max(w, p.PPER)
			}
			if pw[i].Src != pp.Src || pw[i].Dst != pp.Dst || math.Abs(pw[i].PPER-w) > 1e-12*math.Max(1, w) {
				t.Fatalf("trial %d: pair %s->%s worst %g, enumeration %s->%s %g", trial, pw[i].Src, pw[i].Dst, pw[i].PPER, pp.Src, pp.Dst, w)
			}
		}
		if c := c.net.CountPaths(nil); c != int64(n) {
			t.Fatalf("trial %d: CountPaths %d, AllPaths enumerates %d", trial, c, n)
		}
		if n != paths || math.Abs(all-want) > 1e-12*math.Max(1, want) {
			t.Fatalf("trial %d: AllPaths %d paths worst %g, brute force %d worst %g", trial, n, all, paths, want)
		}
	}
}

func TestClassesKeepEveryPathWithinItsBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 3))
	bounds := []float64{1e-6, 1e-3, 0.1} // RAIL §6's three classes
	for trial := range 100 {
		c := randomClos(rng)
		if err := c.net.Build(); err != nil {
			t.Fatal(err)
		}
		cls, err := c.net.Classes(topo.Point, bounds, nil)
		if err != nil {
			t.Fatal(err)
		}
		all := c.net.AllPaths(topo.Point, nil)
		for k, cl := range cls {
			for _, pp := range all {
				for _, p := range pp.Paths {
					if topo.Survives(p, cl.Alive) && p.PPER > cl.Bound {
						t.Fatalf("trial %d class %d: path %v PPER %g above bound %g survives", trial, cl.Index, p.Switches, p.PPER, cl.Bound)
					}
				}
			}
			// A more reliable class keeps a subset of a less reliable one's links.
			if k+1 < len(cls) {
				for i, a := range cl.Alive {
					if a && !cls[k+1].Alive[i] {
						t.Fatalf("trial %d: class %d keeps link %d that class %d dropped", trial, cl.Index, i, cls[k+1].Index)
					}
				}
			}
			// Every removal was forced: the worst path was above the bound
			// and the removed link was its worst.
			for _, r := range cl.Removed {
				if r.Worst.PPER <= cl.Bound {
					t.Fatalf("trial %d class %d: removed %d though the worst path %g met %g", trial, cl.Index, r.Link, r.Worst.PPER, cl.Bound)
				}
			}
		}
	}
}

// RAIL Fig. 9: solid links at 1e-8, three gray links at 1e-5; class (b)
// guarantees 2e-8 (no gray link), (c) 1e-5 (paths with one gray link),
// (d) 2e-5 (every link).
func TestClassesOfFig9Shape(t *testing.T) {
	n := &topo.Network{Roles: map[string]topo.Role{"A": topo.Agg, "B": topo.Agg, "C": topo.ToR, "D": topo.ToR, "E": topo.ToR, "F": topo.ToR}}
	add := func(a, b string, p float64) {
		n.Links = append(n.Links, &topo.Link{Name: a + b, A: a, B: b, AB: topo.Estimate{LPER: p, Low: p, High: p}, BA: topo.Estimate{LPER: p, Low: p, High: p}})
	}
	for _, t := range []string{"C", "D", "E", "F"} {
		for _, a := range []string{"A", "B"} {
			p := 1e-8
			if a == "A" && (t == "D" || t == "F") || a == "B" && t == "E" {
				p = 1e-5
			}
			add(t, a, p)
		}
	}
	if err := n.Build(); err != nil {
		t.Fatal(err)
	}
	cls, err := n.Classes(topo.Point, []float64{2.1e-8, 1.01e-5, 2.1e-5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kept := func(c topo.Class) int {
		k := 0
		for _, a := range c.Alive {
			if a {
				k++
			}
		}
		return k
	}
	// Class 3 keeps all 8 links; class 2 must drop one of A's two gray
	// links (D-A-F has two); class 1 keeps only the 5 solid links.
	if g := []int{kept(cls[0]), kept(cls[1]), kept(cls[2])}; g[0] != 5 || g[1] != 7 || g[2] != 8 {
		t.Fatalf("links kept per class %v, want [5 7 8]", g)
	}
	if w := cls[2].Worst.PPER; math.Abs(w-topo.PPER(1e-5, 1e-5)) > 1e-15 {
		t.Fatalf("class 3 worst %g, want D-A-F's %g", w, topo.PPER(1e-5, 1e-5))
	}
}

// RAIL §5.3: "For a path loss rate of p = 0.3%, we would choose n to be 14
// so that the post-recovery loss rate is again 0.092% < 0.1%. The bandwidth
// overhead in this case is 7.1%."
func TestParityIntervalOfThePaper(t *testing.T) {
	pr, err := topo.Protect(0.003, 0.001)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Kind != "xor" || pr.N != 14 {
		t.Fatalf("protection %+v, want xor with n = 14", pr)
	}
	if math.Round(pr.Residual*1e5) != 92 || math.Round(pr.Overhead*1000) != 71 {
		t.Fatalf("residual %g, overhead %g: want 0.092%% and 7.1%%", pr.Residual, pr.Overhead)
	}
	// n is the largest: one more data packet per parity breaks the target.
	if topo.LossOfGroup(0.003, 16) < 0.001 {
		t.Fatal("n = 15 would also meet the target")
	}
}

func TestProtectionKinds(t *testing.T) {
	if pr, _ := topo.Protect(5e-4, 1e-3); pr.Kind != "none" {
		t.Errorf("a path below the target: %+v", pr)
	}
	// §7.3: paths of 3-10% PPER are replicated three times for t = 0.1%.
	for _, p := range []float64{0.04, 0.09} {
		pr, _ := topo.Protect(p, 1e-3)
		if pr.Kind != "replicate" || pr.Copies != 3 {
			t.Errorf("PPER %g: %+v, want 3 copies", p, pr)
		}
	}
	if _, err := topo.Protect(0.5, 0); err == nil {
		t.Error("a zero target was accepted")
	}
}

// The series and the closed form agree where both are accurate.
func TestLossOfGroupSeriesMatchesClosedForm(t *testing.T) {
	for _, c := range []struct {
		p float64
		m int
	}{{1e-3, 9}, {5e-4, 19}, {2e-4, 40}} {
		closed := 1 - math.Pow(1-c.p, float64(c.m)) - float64(c.m)*c.p*math.Pow(1-c.p, float64(c.m-1))
		got := topo.LossOfGroup(c.p, c.m)
		if math.Abs(got-closed)/closed > 1e-6 {
			t.Errorf("p %g m %d: %g, closed form %g", c.p, c.m, got, closed)
		}
	}
	// Tiny p: about C(m,2) p^2, where the closed form cancels to nothing.
	if got, want := topo.LossOfGroup(1e-9, 10), 45e-18; math.Abs(got-want)/want > 1e-6 {
		t.Errorf("p 1e-9 m 10: %g, want %g", got, want)
	}
}

func TestBuildNamesTheBadRow(t *testing.T) {
	n := &topo.Network{Roles: map[string]topo.Role{"t1": topo.ToR, "c1": topo.Core},
		Links: []*topo.Link{{Name: "x", A: "t1", B: "c1", Source: "links.csv:4"}}}
	err := n.Build()
	if err == nil || !strings.Contains(err.Error(), "links.csv:4") || !strings.Contains(err.Error(), "adjacent stages") {
		t.Fatalf("error %v", err)
	}
}

// fatTree is the paper's k-port 3-stage fat tree (k = 32: 512 ToRs, 512
// aggregation and 256 core switches, 16,384 links), each direction's LPER
// drawn by rate.
func fatTree(b *testing.B, k int, rate func() float64) *topo.Network {
	n := &topo.Network{Roles: map[string]topo.Role{}}
	add := func(a, c string) {
		p, q := rate(), rate()
		n.Links = append(n.Links, &topo.Link{Name: a + "-" + c, A: a, B: c, AB: topo.Estimate{LPER: p, Low: p, High: p}, BA: topo.Estimate{LPER: q, Low: q, High: q}})
	}
	for p := range k {
		for i := range k / 2 {
			n.Roles[fmt.Sprintf("t%d.%d", p, i)] = topo.ToR
			n.Roles[fmt.Sprintf("a%d.%d", p, i)] = topo.Agg
		}
		for i := range k / 2 {
			for j := range k / 2 {
				add(fmt.Sprintf("t%d.%d", p, i), fmt.Sprintf("a%d.%d", p, j))
				add(fmt.Sprintf("a%d.%d", p, j), fmt.Sprintf("c%d.%d", j, i))
			}
		}
	}
	for j := range k / 2 {
		for i := range k / 2 {
			n.Roles[fmt.Sprintf("c%d.%d", j, i)] = topo.Core
		}
	}
	if err := n.Build(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(n.Links)), "links")
	return n
}

// BenchmarkWorstFatTree32 times Algorithm 1 on the 32-port fat tree.
func BenchmarkWorstFatTree32(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := fatTree(b, 32, func() float64 { return math.Pow(10, -12+10*rng.Float64()) })
	for b.Loop() {
		n.Worst(topo.Point, nil)
	}
}

// BenchmarkCountPathsFatTree32 counts the 32-port fat tree's ToR-pair
// paths (512 x 511 pairs, 16 or 256 paths each) without enumerating them.
func BenchmarkCountPathsFatTree32(b *testing.B) {
	n := fatTree(b, 32, func() float64 { return 0 })
	var c int64
	for b.Loop() {
		c = n.CountPaths(nil)
	}
	b.ReportMetric(float64(c), "paths")
}

// BenchmarkClassesFatTree32 times the three classes' greedy rounds on the
// 32-port fat tree with 1% of the link directions gray (LPER 1e-7 to 0.2,
// log-uniform), the rest at 1e-10: each removal reruns Algorithm 1.
func BenchmarkClassesFatTree32(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := fatTree(b, 32, func() float64 {
		if rng.IntN(100) == 0 {
			return math.Pow(10, -7+6.3*rng.Float64())
		}
		return 1e-10
	})
	removed := 0
	for b.Loop() {
		cls, err := n.Classes(topo.Point, []float64{1e-6, 1e-3, 0.1}, nil)
		if err != nil {
			b.Fatal(err)
		}
		removed = 0
		for _, c := range cls {
			removed += len(c.Removed)
		}
	}
	b.ReportMetric(float64(removed), "removals")
}
