package sched

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

type algorithm struct {
	name string
	run  func(Demand, Constraints, Options) (Schedule, error)
}

var algorithms = []algorithm{{"BvN", BvN}, {"Solstice", Solstice}}

// shift is the permutation i -> (i+k) mod n; shifts by different k share no
// entry.
func shift(n, k int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = (i + k) % n
	}
	return p
}

// derangement is a random permutation with no fixed point.
func derangement(rng *rand.Rand, n int) []int {
	for {
		p := rng.Perm(n)
		ok := true
		for i, j := range p {
			if i == j {
				ok = false
				break
			}
		}
		if ok {
			return p
		}
	}
}

// sumOf is the demand sum_k w[k] * P_k.
func sumOf(n int, perms [][]int, w []int64) Demand {
	d := NewDemand(n)
	for k, p := range perms {
		for i, j := range p {
			d[i][j] += w[k]
		}
	}
	return d
}

// mustEvaluate checks s against c and d the way every test wants it
// checked, and returns the report.
func mustEvaluate(t *testing.T, s Schedule, d Demand, c Constraints) Report {
	t.Helper()
	if err := Validate(s, c); err != nil {
		t.Fatalf("schedule fails the scheduler's own check: %v", err)
	}
	r, err := Evaluate(s, d, c)
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.N {
		for j := range c.N {
			if got := r.Circuit[i][j] + r.EPS[i][j] + r.Deferred[i][j]; got != d[i][j] {
				t.Fatalf("pair %d->%d: circuit %d + EPS %d + deferred %d = %d, demand %d",
					i, j, r.Circuit[i][j], r.EPS[i][j], r.Deferred[i][j], got, d[i][j])
			}
			if r.Circuit[i][j] < 0 || r.EPS[i][j] < 0 || r.Deferred[i][j] < 0 {
				t.Fatalf("pair %d->%d: negative share %d/%d/%d", i, j, r.Circuit[i][j], r.EPS[i][j], r.Deferred[i][j])
			}
		}
	}
	for k, sl := range s.Slots {
		for i, j := range sl.Perm {
			if j != Dark && d[i][j] == 0 {
				t.Fatalf("slot %d lights %d->%d, which has no demand", k, i, j)
			}
			if j != Dark && r.EPS[i][j] != 0 {
				t.Fatalf("pair %d->%d has a circuit and EPS bytes %d", i, j, r.EPS[i][j])
			}
		}
	}
	return r
}

func perms(s Schedule) [][]int {
	var out [][]int
	for _, sl := range s.Slots {
		out = append(out, sl.Perm)
	}
	return out
}

func TestPermutationMatrix(t *testing.T) {
	c := prototype()
	rng := rand.New(rand.NewPCG(1, 2))
	sigma := derangement(rng, c.N)
	lit := c.Period - c.Delta
	full := bytesIn(lit, c.LinkRate) // what one configuration can carry
	for _, a := range algorithms {
		for _, best := range []bool{false, true} {
			for _, b := range []int64{1, full / 3, full} {
				t.Run(fmt.Sprintf("%s/best=%v/%d", a.name, best, b), func(t *testing.T) {
					d := sumOf(c.N, [][]int{sigma}, []int64{b})
					s, err := a.run(d, c, Options{BestCount: best})
					if err != nil {
						t.Fatal(err)
					}
					r := mustEvaluate(t, s, d, c)
					if len(s.Slots) != 1 {
						t.Fatalf("%d slots, want 1: %v", len(s.Slots), perms(s))
					}
					if !slices.Equal(s.Slots[0].Perm, sigma) {
						t.Errorf("slot %v, want %v", s.Slots[0].Perm, sigma)
					}
					if s.Slots[0].Duration != lit {
						t.Errorf("slot lasts %v, want the whole period less one gap, %v", s.Slots[0].Duration, lit)
					}
					if r.CircuitBytes != d.Total() {
						t.Errorf("circuits carry %d of %d bytes", r.CircuitBytes, d.Total())
					}
				})
			}
		}
	}
}

func TestBvNRecoversDisjointPermutations(t *testing.T) {
	c := prototype()
	// Four shifts with distinct weights whose sum fits what four slots can
	// carry (1,725,000 bytes in 1500 - 4 x 30 us at 10 Gb/s).
	ps := [][]int{shift(c.N, 3), shift(c.N, 1), shift(c.N, 6), shift(c.N, 2)}
	w := []int64{500_000, 800_000, 100_000, 300_000}
	d := sumOf(c.N, ps, w)
	s, err := BvN(d, c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := mustEvaluate(t, s, d, c)
	checkRecovered(t, s, ps, w)
	if r.CircuitBytes != d.Total() {
		t.Errorf("circuits carry %d of %d bytes", r.CircuitBytes, d.Total())
	}
}

func TestBvNRecoversSuperincreasingPermutations(t *testing.T) {
	// Random derangements may overlap; with each weight above the sum of
	// the smaller ones, the bottleneck matching is still the heaviest
	// permutation at every step.
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 20 {
		n := 4 + rng.IntN(12)
		k := 2 + rng.IntN(5)
		var ps [][]int
		var w []int64
		unit := int64(1 + rng.IntN(1000))
		for i := range k {
			p := derangement(rng, n)
			for slices.ContainsFunc(ps, func(q []int) bool { return slices.Equal(p, q) }) {
				p = derangement(rng, n)
			}
			ps = append(ps, p)
			w = append(w, unit<<(2*i)+int64(rng.IntN(int(unit))))
		}
		c := prototype()
		c.N = n
		c.MinSlot = 0
		c.LinkRate = 1e12 // every weight fits
		d := sumOf(n, ps, w)
		s, err := BvN(d, c, Options{})
		if err != nil {
			t.Fatal(err)
		}
		mustEvaluate(t, s, d, c)
		t.Run(fmt.Sprint(trial), func(t *testing.T) { checkRecovered(t, s, ps, w) })
	}
}

func TestSolsticeRecoversPowerOfTwoPermutations(t *testing.T) {
	// Weights a factor of two apart: each halving of the threshold admits
	// exactly the next permutation.
	c := prototype()
	ps := [][]int{shift(c.N, 5), shift(c.N, 2), shift(c.N, 7), shift(c.N, 1)}
	w := []int64{30_000 << 1, 30_000 << 4, 30_000, 30_000 << 3}
	d := sumOf(c.N, ps, w)
	s, err := Solstice(d, c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := mustEvaluate(t, s, d, c)
	checkRecovered(t, s, ps, w)
	if r.CircuitBytes != d.Total() {
		t.Errorf("circuits carry %d of %d bytes", r.CircuitBytes, d.Total())
	}
}

// checkRecovered wants one slot per permutation, heaviest first, with
// durations in proportion to the weights (to within rounding).
func checkRecovered(t *testing.T, s Schedule, ps [][]int, w []int64) {
	t.Helper()
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(w[b] - w[a]) })
	if len(s.Slots) != len(ps) {
		t.Fatalf("%d slots %v, want the %d permutations %v", len(s.Slots), perms(s), len(ps), ps)
	}
	for k, idx := range order {
		if !slices.Equal(s.Slots[k].Perm, ps[idx]) {
			t.Errorf("slot %d is %v, want %v (weight %d)", k, s.Slots[k].Perm, ps[idx], w[idx])
		}
	}
	top := order[0]
	for k, idx := range order {
		// dur_k / dur_top = w_k / w_top, each duration rounded down.
		want := float64(s.Slots[0].Duration) * float64(w[idx]) / float64(w[top])
		if diff := float64(s.Slots[k].Duration) - want; diff > 1 || diff < -1 {
			t.Errorf("slot %d lasts %v, want %v x %d/%d = %.0f ns", k, s.Slots[k].Duration, s.Slots[0].Duration, w[idx], w[top], want)
		}
	}
}

func TestUniformAllToAllIsRoundRobin(t *testing.T) {
	// Each pair offers what one round-robin slot carries: N-1
	// configurations are needed to light every pair, and they serve it all.
	c := prototype()
	rr, err := RoundRobin(c)
	if err != nil {
		t.Fatal(err)
	}
	d := uniform(c.N, bytesIn(rr.Slots[0].Duration, c.LinkRate))
	want := mustEvaluate(t, rr, d, c)
	if want.CircuitBytes != d.Total() {
		t.Fatalf("round robin carries %d of %d", want.CircuitBytes, d.Total())
	}
	for _, a := range algorithms {
		for _, best := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/best=%v", a.name, best), func(t *testing.T) {
				s, err := a.run(d, c, Options{BestCount: best})
				if err != nil {
					t.Fatal(err)
				}
				r := mustEvaluate(t, s, d, c)
				if len(s.Slots) != c.N-1 {
					t.Fatalf("%d slots, want N-1 = %d", len(s.Slots), c.N-1)
				}
				seen := map[[2]int]int{}
				for k, sl := range s.Slots {
					if sl.Duration != rr.Slots[0].Duration {
						t.Errorf("slot %d lasts %v, round robin's last %v", k, sl.Duration, rr.Slots[0].Duration)
					}
					for i, j := range sl.Perm {
						seen[[2]int{i, j}]++
					}
				}
				for i := range c.N {
					for j := range c.N {
						if i != j && seen[[2]int{i, j}] != 1 {
							t.Errorf("pair %d->%d lit %d times, want once", i, j, seen[[2]int{i, j}])
						}
					}
				}
				if r.CircuitBytes != want.CircuitBytes || r.DutyCycle != want.DutyCycle {
					t.Errorf("circuit bytes %d, duty %.4f; round robin %d, %.4f", r.CircuitBytes, r.DutyCycle, want.CircuitBytes, want.DutyCycle)
				}
			})
		}
	}
}

func TestBoundLeavesSmallestToEPS(t *testing.T) {
	c := prototype()
	ps := [][]int{shift(c.N, 1), shift(c.N, 2), shift(c.N, 3), shift(c.N, 4), shift(c.N, 5)}
	w := []int64{30_000 << 4, 30_000 << 3, 30_000 << 2, 30_000 << 1, 30_000}
	d := sumOf(c.N, ps, w)
	byPeriod := c
	byPeriod.MinSlot = 470 * time.Microsecond // 500 us with the gap: three per period
	if byPeriod.MaxSlots() != 3 {
		t.Fatalf("MaxSlots = %d, want 3", byPeriod.MaxSlots())
	}
	cases := []struct {
		name string
		c    Constraints
		o    Options
	}{
		{"option", c, Options{MaxConfigs: 3}},
		{"period", byPeriod, Options{}},
		{"period and larger option", byPeriod, Options{MaxConfigs: 10}},
	}
	for _, a := range algorithms {
		for _, tc := range cases {
			t.Run(a.name+"/"+tc.name, func(t *testing.T) {
				s, err := a.run(d, tc.c, tc.o)
				if err != nil {
					t.Fatal(err)
				}
				r := mustEvaluate(t, s, d, tc.c)
				if len(s.Slots) != 3 {
					t.Fatalf("%d slots %v, want 3", len(s.Slots), perms(s))
				}
				for k := range 3 {
					if !slices.Equal(s.Slots[k].Perm, ps[k]) {
						t.Errorf("slot %d is %v, want %v", k, s.Slots[k].Perm, ps[k])
					}
				}
				// The two lightest permutations go to the EPS, whole; the
				// three heaviest are carried whole by circuits.
				wantEPS := sumOf(c.N, ps[3:], w[3:])
				for i := range c.N {
					if !slices.Equal(r.EPS[i], wantEPS[i]) {
						t.Errorf("EPS row %d = %v, want %v", i, r.EPS[i], wantEPS[i])
					}
				}
				if r.DeferredBytes != 0 || r.CircuitBytes != d.Total()-wantEPS.Total() {
					t.Errorf("circuit %d, deferred %d; want %d, 0", r.CircuitBytes, r.DeferredBytes, d.Total()-wantEPS.Total())
				}
				var minCircuit, maxEPS int64 = 1 << 62, 0
				for i := range c.N {
					for j := range c.N {
						if r.Circuit[i][j] > 0 {
							minCircuit = min(minCircuit, d[i][j])
						}
						maxEPS = max(maxEPS, r.EPS[i][j])
					}
				}
				if maxEPS >= minCircuit {
					t.Errorf("EPS gets a pair of %d bytes while circuits serve one of %d", maxEPS, minCircuit)
				}
			})
		}
	}
}

func TestBestCountWhenDeltaDominates(t *testing.T) {
	// A 200 us gap in a 1 ms period: a second configuration for a light
	// permutation the EPS can carry costs the heavy one a fifth of its
	// circuit time. Keeping every configuration lights both; BestCount
	// keeps one and leaves the light permutation to the EPS.
	c := Constraints{N: 4, Period: time.Millisecond, Delta: 200 * time.Microsecond, MinSlot: 10 * time.Microsecond, LinkRate: 8e9, EPSRate: 1e9}
	ps := [][]int{shift(4, 1), shift(4, 2)}
	d := sumOf(4, ps, []int64{900_000, 50_000})
	for _, a := range algorithms {
		t.Run(a.name, func(t *testing.T) {
			all, err := a.run(d, c, Options{})
			if err != nil {
				t.Fatal(err)
			}
			best, err := a.run(d, c, Options{BestCount: true})
			if err != nil {
				t.Fatal(err)
			}
			ra, rb := mustEvaluate(t, all, d, c), mustEvaluate(t, best, d, c)
			if len(all.Slots) != 2 || len(best.Slots) != 1 {
				t.Fatalf("%d slots kept by default, %d by BestCount; want 2 and 1", len(all.Slots), len(best.Slots))
			}
			if !slices.Equal(best.Slots[0].Perm, ps[0]) {
				t.Errorf("BestCount kept %v, want the heavy %v", best.Slots[0].Perm, ps[0])
			}
			// One slot: 800 us at 1 byte/ns for each heavy pair, and the
			// EPS (125,000 bytes per host) carries the light ones.
			if want := int64(4*800_000 + 4*50_000); rb.DeliveredBytes() != want {
				t.Errorf("BestCount delivers %d, want %d", rb.DeliveredBytes(), want)
			}
			if rb.DeliveredBytes() <= ra.DeliveredBytes() {
				t.Errorf("BestCount delivers %d, keeping both %d", rb.DeliveredBytes(), ra.DeliveredBytes())
			}
			if !rb.EPSFits {
				t.Error("EPS said not to fit the light permutation")
			}
		})
	}
}

func TestEmptyDemand(t *testing.T) {
	c := prototype()
	for _, a := range algorithms {
		s, err := a.run(NewDemand(c.N), c, Options{BestCount: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Slots) != 0 {
			t.Errorf("%s: %d slots for no demand", a.name, len(s.Slots))
		}
		if err := Validate(s, c); err != nil {
			t.Errorf("%s: empty schedule rejected: %v", a.name, err)
		}
	}
}

func TestSchedulersRejectBadInput(t *testing.T) {
	c := prototype()
	for _, a := range algorithms {
		d := NewDemand(c.N)
		d[2][2] = 5
		if _, err := a.run(d, c, Options{}); err == nil || !strings.Contains(err.Error(), "demand[2][2]") {
			t.Errorf("%s, diagonal demand: %v", a.name, err)
		}
		if _, err := a.run(NewDemand(3), c, Options{}); err == nil || !strings.Contains(err.Error(), "3 rows") {
			t.Errorf("%s, 3x3 demand for 8 ports: %v", a.name, err)
		}
		if _, err := a.run(NewDemand(c.N), c, Options{MaxConfigs: -1}); err == nil || !strings.Contains(err.Error(), "bound") {
			t.Errorf("%s, negative bound: %v", a.name, err)
		}
		bad := c
		bad.LinkRate = 0
		if _, err := a.run(NewDemand(c.N), bad, Options{}); err == nil || !strings.Contains(err.Error(), "link rate") {
			t.Errorf("%s, no link rate: %v", a.name, err)
		}
	}
}

// randomCase draws constraints and a demand: sparse or dense, skewed or
// even, with magnitudes from well under to well over what a period carries.
func randomCase(rng *rand.Rand) (Demand, Constraints, Options) {
	n := 2 + rng.IntN(15)
	c := Constraints{
		N:        n,
		Period:   time.Duration(200+rng.IntN(2800)) * time.Microsecond,
		Delta:    time.Duration(rng.IntN(50)) * time.Microsecond,
		MinSlot:  time.Duration(rng.IntN(100)) * time.Microsecond,
		LinkRate: float64(1+rng.IntN(100)) * 1e9,
		EPSRate:  float64(rng.IntN(11)) * 1e9,
	}
	if rng.IntN(5) == 0 {
		c.Delta, c.MinSlot = 0, 0
	}
	full := bytesIn(c.Period, c.LinkRate)
	density := rng.Float64()
	d := NewDemand(n)
	for i := range n {
		for j := range n {
			if i == j || rng.Float64() > density {
				continue
			}
			switch rng.IntN(3) {
			case 0: // small
				d[i][j] = rng.Int64N(full/int64(n*n) + 1)
			case 1: // around a fair share
				d[i][j] = rng.Int64N(2*full/int64(n) + 1)
			default: // heavy
				d[i][j] = rng.Int64N(2*full + 1)
			}
		}
	}
	return d, c, Options{MaxConfigs: rng.IntN(n + 4)}
}

func TestRandomDemandsProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	trials := 400
	if testing.Short() {
		trials = 50
	}
	for trial := range trials {
		d, c, o := randomCase(rng)
		for _, a := range algorithms {
			name := fmt.Sprintf("%s/%d", a.name, trial)
			plain, err := a.run(d, c, o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			bo := o
			bo.BestCount = true
			best, err := a.run(d, c, bo)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, s := range []Schedule{plain, best} {
				if len(s.Slots) > o.limit(c) {
					t.Fatalf("%s: %d slots over the bound %d", name, len(s.Slots), o.limit(c))
				}
				for k, sl := range s.Slots {
					if !partialPermutation(sl.Perm, c.N) {
						t.Fatalf("%s: slot %d is not a permutation: %v", name, k, sl.Perm)
					}
				}
				if s.Busy() > c.Period {
					t.Fatalf("%s: busy %v over the period %v", name, s.Busy(), c.Period)
				}
				mustEvaluate(t, s, d, c)
			}
			rp, _ := Evaluate(plain, d, c)
			rb, _ := Evaluate(best, d, c)
			// BestCount tries the plain count too.
			if rb.DeliveredBytes() < rp.DeliveredBytes() {
				t.Fatalf("%s: BestCount delivers %d, keeping all %d", name, rb.DeliveredBytes(), rp.DeliveredBytes())
			}
			// Slots fill the period, less at most a nanosecond each of
			// rounding.
			for _, s := range []Schedule{plain, best} {
				if n := len(s.Slots); n > 0 && c.Period-s.Busy() >= time.Duration(n) {
					t.Fatalf("%s: %v of the period left unused by %d slots", name, c.Period-s.Busy(), n)
				}
			}
		}
	}
}

func partialPermutation(p []int, n int) bool {
	if len(p) != n {
		return false
	}
	used := make([]bool, n)
	for _, j := range p {
		if j == Dark {
			continue
		}
		if j < 0 || j >= n || used[j] {
			return false
		}
		used[j] = true
	}
	return true
}

func TestStuff(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 200 {
		d, _, _ := randomCase(rng)
		n := len(d)
		s, line := stuff(d)
		var want int64
		for i := range n {
			var row, col int64
			for j := range n {
				row += d[i][j]
				col += d[j][i]
			}
			want = max(want, row, col)
		}
		if line != want {
			t.Fatalf("line sum %d, want the largest line of the demand %d", line, want)
		}
		for i := range n {
			var row, col int64
			for j := range n {
				if s[i][j] < d[i][j] {
					t.Fatalf("stuffing lowered [%d][%d] from %d to %d", i, j, d[i][j], s[i][j])
				}
				row += s[i][j]
				col += s[j][i]
			}
			if row != line || col != line {
				t.Fatalf("row %d sums to %d, column %d to %d; want %d", i, row, i, col, line)
			}
		}
	}
}

func TestDecompositionsCoverDemand(t *testing.T) {
	// Run to the end, each decomposition sums to the stuffed matrix, so
	// every pair's terms weigh at least its demand; BvN's weights never
	// increase.
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 100 {
		d, _, _ := randomCase(rng)
		n := len(d)
		for _, tc := range []struct {
			name  string
			terms func(Demand, int) []config
		}{{"BvN", bvnTerms}, {"Solstice", solsticeTerms}} {
			cfgs := tc.terms(d, 1<<30)
			got := NewDemand(n)
			for k, cf := range cfgs {
				if !partialPermutation(cf.perm, n) || cf.weight <= 0 {
					t.Fatalf("%s %d: term %d: %v weight %d", tc.name, trial, k, cf.perm, cf.weight)
				}
				if tc.name == "BvN" && k > 0 && cf.weight > cfgs[k-1].weight {
					t.Fatalf("BvN %d: term %d weighs %d, more than term %d's %d", trial, k, cf.weight, k-1, cfgs[k-1].weight)
				}
				for i, j := range cf.perm {
					if j != Dark {
						got[i][j] += cf.weight
					}
				}
			}
			if len(cfgs) > n*n-2*n+2 {
				t.Errorf("%s %d: %d terms, more than Marcus-Ree's (n-1)^2+1 = %d", tc.name, trial, len(cfgs), n*n-2*n+2)
			}
			for i := range n {
				for j := range n {
					if got[i][j] < d[i][j] {
						t.Fatalf("%s %d: pair %d->%d: terms weigh %d, demand %d", tc.name, trial, i, j, got[i][j], d[i][j])
					}
				}
			}
		}
	}
}

func TestMatcherAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 500 {
		n := 1 + rng.IntN(6)
		s := make([][]int64, n)
		for i := range s {
			s[i] = make([]int64, n)
			for j := range s[i] {
				if rng.IntN(3) > 0 {
					s[i][j] = rng.Int64N(10)
				}
			}
		}
		m := newMatcher(n)
		// Reuse the matcher across thresholds, as the decompositions do.
		for _, th := range []int64{1 + rng.Int64N(9), 1 + rng.Int64N(9), 1} {
			want := false
			permute(n, func(p []int) {
				ok := true
				for i, j := range p {
					ok = ok && s[i][j] >= th
				}
				want = want || ok
			})
			got := m.perfect(s, th)
			if got != want {
				t.Fatalf("trial %d: perfect matching at >= %d in %v: got %v, want %v", trial, th, s, got, want)
			}
			if got {
				if !partialPermutation(m.left, n) || slices.Contains(m.left, -1) {
					t.Fatalf("trial %d: matching %v is not a permutation", trial, m.left)
				}
				for i, j := range m.left {
					if s[i][j] < th || m.right[j] != i {
						t.Fatalf("trial %d: matching %v uses [%d][%d] = %d below %d, or right %v disagrees", trial, m.left, i, j, s[i][j], th, m.right)
					}
				}
			}
		}
	}
}

// permute calls f with every permutation of 0..n-1 (Heap's algorithm).
func permute(n int, f func([]int)) {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	var gen func(k int)
	gen = func(k int) {
		if k <= 1 {
			f(p)
			return
		}
		for i := range k {
			gen(k - 1)
			if k%2 == 0 {
				p[i], p[k-1] = p[k-1], p[i]
			} else {
				p[0], p[k-1] = p[k-1], p[0]
			}
		}
	}
	gen(n)
}

func TestBestCountTieGoesToFewerConfigs(t *testing.T) {
	// The second configuration repeats the first: it adds nothing but a
	// reconfiguration gap, so BestCount drops it and the plain fit keeps it.
	c := prototype()
	d := sumOf(c.N, [][]int{shift(c.N, 1)}, []int64{1000})
	cfgs := []config{{perm: shift(c.N, 1), weight: 2}, {perm: shift(c.N, 1), weight: 1}}
	if s := fit(cfgs, d, c, Options{}); len(s.Slots) != 2 {
		t.Errorf("plain fit kept %d slots, want 2", len(s.Slots))
	}
	s := fit(cfgs, d, c, Options{BestCount: true})
	if len(s.Slots) != 1 {
		t.Fatalf("BestCount kept %d slots, want 1", len(s.Slots))
	}
	if s.Slots[0].Duration != c.Period-c.Delta {
		t.Errorf("the one slot lasts %v, want %v", s.Slots[0].Duration, c.Period-c.Delta)
	}
}
