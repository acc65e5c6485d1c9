package topo

import (
	"fmt"
	"math"
)

// LossOfGroup is the probability that a group of m packets, each lost
// independently with probability p, loses two or more: what one XOR parity
// packet per m-1 data packets cannot repair (RAIL §5.3:
// 1 - (1-p)^m - m p (1-p)^(m-1)). For small m·p the closed form cancels
// to nothing in floating point, so the binomial tail is summed instead.
func LossOfGroup(p float64, m int) float64 {
	if m < 2 || p <= 0 {
		return 0
	}
	if p >= 1 {
		return 1
	}
	mf := float64(m)
	if mf*p > 0.01 {
		l1p := math.Log1p(-p)
		p0 := math.Exp(mf * l1p)
		p1 := mf * p * math.Exp((mf-1)*l1p)
		return math.Max(0, 1-p0-p1)
	}
	// sum_{k>=2} C(m,k) p^k (1-p)^(m-k), term by term.
	term := mf * (mf - 1) / 2 * p * p * math.Exp((mf-2)*math.Log1p(-p))
	sum := 0.0
	for k := 2; k <= m && term > sum*1e-17; k++ {
		sum += term
		term *= (mf - float64(k)) / float64(k+1) * p / (1 - p)
	}
	return sum
}

// Protection is how RAIL's error-correction module protects a path of a
// given PPER for a target post-recovery loss t (§5.3, §7.3).
type Protection struct {
	// Kind is "none" (p <= t: the path needs no coding), "xor" (one parity
	// packet after every N data packets) or "replicate" (every packet sent
	// Copies times: not even N = 1 reaches t).
	Kind   string
	N      int
	Copies int
	// Residual is the loss rate left: P(>= 2 losses in N+1) for xor, p^Copies
	// for replicate, p for none.
	Residual float64
	// Overhead is the extra bandwidth: 1/N for xor, Copies-1 for replicate.
	Overhead float64
}

// maxN bounds the search for N: a path just above t needs N of the order
// of sqrt(2t)/p, far below this for any t a transport cares about.
const maxN = 1 << 24

// Protect chooses the protection of a path of PPER p for target t: no
// coding when p <= t; else the largest N with P(>= 2 losses in N+1) < t
// (RAIL §5.3: p = 0.3%, t = 0.1% gives N = 14, 7.1% overhead); else, when
// even N = 1 fails (p^2 >= t), the fewest copies c with p^c < t (§7.3
// replicates paths of 3-10% PPER three times).
func Protect(p, t float64) (Protection, error) {
	if math.IsNaN(p) || p < 0 || p > 1 {
		return Protection{}, fmt.Errorf("protect: PPER %g is not a probability", p)
	}
	if math.IsNaN(t) || t <= 0 || t >= 1 {
		return Protection{}, fmt.Errorf("protect: target %g is not in (0, 1)", t)
	}
	if p <= t {
		return Protection{Kind: "none", Residual: p}, nil
	}
	if LossOfGroup(p, 2) >= t {
		if p >= 1 {
			return Protection{}, fmt.Errorf("protect: a path that loses every packet cannot be protected")
		}
		c := int(math.Floor(math.Log(t)/math.Log(p))) + 1
		for math.Pow(p, float64(c)) >= t { // floating point at the boundary
			c++
		}
		return Protection{Kind: "replicate", Copies: c, Residual: math.Pow(p, float64(c)), Overhead: float64(c - 1)}, nil
	}
	// LossOfGroup grows with the group: find the last N below t by
	// doubling, then bisection.
	lo, hi := 1, 2
	for hi < maxN && LossOfGroup(p, hi+1) < t {
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if LossOfGroup(p, mid+1) < t {
			lo = mid
		} else {
			hi = mid
		}
	}
	return Protection{Kind: "xor", N: lo, Residual: LossOfGroup(p, lo+1), Overhead: 1 / float64(lo)}, nil
}
