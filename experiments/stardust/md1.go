package stardust

import "math"

// MD1 is the stationary distribution of the discrete-time M/D/1 queue of
// Stardust §4.2.1: each fabric cell time a Poisson(rho) number of cells
// joins a link's queue and one leaves, Q' = max(Q-1, 0) + A, the queue
// seen after the arrivals. P(Q >= 1) is the link's busy fraction rho, so
// P(Q = 0) = 1 - rho; balance at 0 gives P(Q = 1) = P(Q = 0)(1 - a0)/a0,
// and balance at j the rest:
//
//	P(Q = j+1) = (P(Q = j) - P(Q = 0) a_j - sum_{i=1..j} P(Q = i) a_{j-i+1}) / a_0.
//
// The distribution is unimodal: at high rho it rises before it falls
// (P(Q = 1) > P(Q = 0) above rho = ln 2). Once falling, the terms stop
// below floor or where they would rise again (the recursion subtracts
// nearly equal numbers there), or at kmax. rho must be in (0, 1).
func MD1(rho float64, kmax int, floor float64) []float64 {
	if rho <= 0 || rho >= 1 {
		return nil
	}
	a := make([]float64, kmax+2)
	a[0] = math.Exp(-rho)
	for i := 1; i < len(a); i++ {
		a[i] = a[i-1] * rho / float64(i)
	}
	p := []float64{1 - rho, (1 - rho) * (1 - a[0]) / a[0]}
	falling := p[1] < p[0]
	for j := 1; j < kmax; j++ {
		s := p[j] - p[0]*a[j]
		for i := 1; i <= j; i++ {
			s -= p[i] * a[j-i+1]
		}
		next := s / a[0]
		if next <= 0 || falling && (next < floor || next >= p[j]) {
			break
		}
		falling = falling || next < p[j]
		p = append(p, next)
	}
	return p
}
