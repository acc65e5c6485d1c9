package physics

import (
	"math"
	"math/rand/v2"
)

// Binomial draws exactly from Binomial(n, p).
//
// Small means (n·min(p,1-p) < 10) use inversion by sequential search,
// which is exact; larger ones use BTRD, the transformed rejection with
// decomposition of Hörmann ("The generation of binomial random variates",
// J. Statist. Comput. Simul. 46, 1993), also exact, in O(1) expected time.
// n up to about 2^62.
func Binomial(r *rand.Rand, n int64, p float64) int64 {
	if n <= 0 || p <= 0 {
		return 0
	}
	if p >= 1 {
		return n
	}
	if p > 0.5 {
		return n - Binomial(r, n, 1-p)
	}
	if float64(n)*p < 10 {
		return binomialInversion(r, n, p)
	}
	return btrd(r, n, p)
}

// binomialInversion walks the cdf from 0: P(0) = (1-p)^n, P(k+1) = P(k)·(n-k)/(k+1)·p/(1-p).
func binomialInversion(r *rand.Rand, n int64, p float64) int64 {
	q := 1 - p
	s := p / q
	f := math.Exp(float64(n) * math.Log1p(-p))
	u := r.Float64()
	var k int64
	for u > f {
		u -= f
		k++
		if k > n {
			// Rounding left a sliver of probability: restart (exactness kept).
			u, k, f = r.Float64(), 0, math.Exp(float64(n)*math.Log1p(-p))
			continue
		}
		f *= s * float64(n-k+1) / float64(k)
		if f == 0 {
			u, k, f = r.Float64(), 0, math.Exp(float64(n)*math.Log1p(-p))
		}
	}
	return k
}

// fc is the Stirling-series correction log(k!) - [(k+1/2)log(k+1) - (k+1) + log(2π)/2],
// tabulated for k < 10 (Hörmann 1993, Table 1).
func fc(k float64) float64 {
	switch {
	case k < 10:
		return [...]float64{0.08106146679532726, 0.04134069595540929, 0.02767792568499834, 0.02079067210376509,
			0.01664469118982119, 0.01387612882307075, 0.01189670994589177, 0.01041126526197209,
			0.009255462182712733, 0.008330563433362871}[int(k)]
	}
	k1 := k + 1
	k2 := k1 * k1
	return (1.0/12 - (1.0/360-1.0/1260/k2)/k2) / k1
}

// btrd is Hörmann's algorithm BTRD for n·p >= 10, p <= 0.5.
func btrd(r *rand.Rand, n int64, p float64) int64 {
	nf := float64(n)
	q := 1 - p
	npq := nf * p * q
	spq := math.Sqrt(npq)
	// Setup (Hörmann 1993, step 0).
	b := 1.15 + 2.53*spq
	a := -0.0873 + 0.0248*b + 0.01*p
	c := nf*p + 0.5
	vr := 0.92 - 4.2/b
	alpha := (2.83 + 5.1/b) * spq
	ratio := p / q
	nr := (nf + 1) * ratio
	m := math.Floor((nf + 1) * p)
	nm := nf - m + 1
	h := (m+0.5)*math.Log((m+1)/(ratio*nm)) + fc(m) + fc(nf-m)
	for {
		// Step 1: the triangle-free region, accepted at once.
		u := r.Float64() - 0.5
		v := r.Float64()
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*a/us+b)*u + c)
		if k < 0 || k > nf {
			continue
		}
		if us >= 0.07 && v <= vr {
			return int64(k)
		}
		// Step 2: transform v for the acceptance tests.
		v = v * alpha / (a/(us*us) + b)
		km := math.Abs(k - m)
		if km <= 15 {
			// Step 3.1: recursive evaluation of f(k)/f(m).
			f := 1.0
			if m < k {
				for i := m + 1; i <= k; i++ {
					f *= nr/i - ratio
				}
			} else if m > k {
				for i := k + 1; i <= m; i++ {
					v *= nr/i - ratio
				}
			}
			if v <= f {
				return int64(k)
			}
			continue
		}
		// Step 3.2: squeeze on log v.
		v = math.Log(v)
		rho := (km / npq) * (((km/3+0.625)*km+1.0/6)/npq + 0.5)
		t := -km * km / (2 * npq)
		if v < t-rho {
			return int64(k)
		}
		if v > t+rho {
			continue
		}
		// Step 3.3: final acceptance with Stirling corrections.
		nk := nf - k + 1
		if v <= h+(nf+1)*math.Log(nm/nk)+(k+0.5)*math.Log(nk*ratio/(k+1))-fc(k)-fc(nf-k) {
			return int64(k)
		}
	}
}
