package fct

import (
	"math"
	"slices"

	"testbed/experiments/stats"
	"testbed/hostagent"
)

// The tail of a mode: what makes its p99.9 honest. A loss delays a
// trial by a retransmission timeout; the p99.9 shows it only when more
// than 0.1% of the trials are affected, so the report gives that fraction
// with its interval, the affected trials' own distribution, the p99.9's
// order-statistic interval, and the probability that the p99.9 lands in
// the timeout tail at all.

// TailSummary is one tcp mode's tail in summary.json.
type TailSummary struct {
	// Affected trials: those whose flow had a data segment sent again
	// (fct1 on a capture: the data segments it saw; otherwise TCP_INFO's
	// count, SYNs included).
	Affected         int     `json:"affected"`
	AffectedFraction float64 `json:"affected_fraction"`
	AffectedLow      float64 `json:"affected_low"`  // 95% Wilson interval
	AffectedHigh     float64 `json:"affected_high"` //
	// The affected trials' FCTs.
	AffectedP50US float64 `json:"affected_p50_us,omitempty"`
	AffectedP99US float64 `json:"affected_p99_us,omitempty"`
	// AffectedP50VsLossless is the affected trials' median over the
	// lossless p99.9.
	AffectedP50VsLossless float64 `json:"affected_p50_vs_lossless,omitempty"`
	// P999LowUS and P999HighUS bound the p99.9 with 95% confidence: the
	// order statistics at the 2.5% and 97.5% quantiles of Binomial(n,
	// 0.999) (distribution-free; Hahn & Meeker, Statistical Intervals,
	// §5.2).
	P999LowUS  float64 `json:"p99_9_low_us"`
	P999HighUS float64 `json:"p99_9_high_us"`
	// TailNeed is how many affected trials put the nearest-rank p99.9 in
	// the timeout tail (n - ceil(0.999 n) + 1).
	TailNeed int `json:"tail_need"`
	// PerTrialLoss is the probability that a trial is affected, from the
	// link's loss per data frame and the flow's data frames; PTail is the
	// probability, under it, that the p99.9 lands in the timeout tail:
	// P[Binomial(n, PerTrialLoss) >= TailNeed].
	PerTrialLoss float64 `json:"per_trial_loss,omitempty"`
	PTail        float64 `json:"p_tail,omitempty"`
	// PMiss is 1 - PTail, summed on its own side (it can be far below
	// what 1 - PTail resolves): P[Binomial(n, PerTrialLoss) < TailNeed].
	PMiss float64 `json:"p_miss,omitempty"`
}

// tailOf computes the tail of one mode's trials.
func tailOf(fcts []int64, affected []bool, perTrialLoss float64, losslessP999US float64) TailSummary {
	n := len(fcts)
	var t TailSummary
	if n == 0 {
		return t
	}
	var aff []int64
	for i, a := range affected {
		if a {
			aff = append(aff, fcts[i])
		}
	}
	t.Affected = len(aff)
	t.AffectedFraction = float64(t.Affected) / float64(n)
	t.AffectedLow, t.AffectedHigh = stats.Wilson(int64(t.Affected), int64(n), stats.Z95)
	if len(aff) > 0 {
		slices.Sort(aff)
		t.AffectedP50US = us(hostagent.PercentileSorted(aff, hostagent.PPM50))
		t.AffectedP99US = us(hostagent.PercentileSorted(aff, hostagent.PPM99))
		if losslessP999US > 0 {
			t.AffectedP50VsLossless = t.AffectedP50US / losslessP999US
		}
	}
	sorted := slices.Clone(fcts)
	slices.Sort(sorted)
	lo, hi := quantileRanks(n, 0.999, 0.95)
	t.P999LowUS, t.P999HighUS = us(sorted[lo-1]), us(sorted[hi-1])
	t.TailNeed = tailNeed(n)
	if perTrialLoss > 0 {
		t.PerTrialLoss = perTrialLoss
		t.PTail = binomSF(n, perTrialLoss, t.TailNeed)
		t.PMiss = binomCDF(n, perTrialLoss, t.TailNeed-1)
	}
	return t
}

// tailNeed is how many of n trials must be slow for the nearest-rank
// p99.9 (rank ceil(0.999 n)) to be one of them.
func tailNeed(n int) int { return n - int(math.Ceil(0.999*float64(n)-1e-9)) + 1 }

// quantileRanks are the 1-based ranks (l, u) of the order statistics
// that bound the q-quantile with confidence conf: l is the
// (1-conf)/2-quantile of Binomial(n, q), u one past its (1+conf)/2
// quantile, clamped to [1, n].
func quantileRanks(n int, q, conf float64) (int, int) {
	a := (1 - conf) / 2
	l := binomQuantile(n, q, a)
	u := binomQuantile(n, q, 1-a) + 1
	return min(max(l, 1), n), min(max(u, 1), n)
}

// binomLogPMF is log P[Binomial(n, p) = k].
func binomLogPMF(n, k int, p float64) float64 {
	lg := func(x float64) float64 { v, _ := math.Lgamma(x); return v }
	return lg(float64(n+1)) - lg(float64(k+1)) - lg(float64(n-k+1)) + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p)
}

// binomCDF is P[Binomial(n, p) <= k], summed over the terms that matter
// (the mean +- 40 standard deviations, and at least 50 terms).
func binomCDF(n int, p float64, k int) float64 {
	if k < 0 {
		return 0
	}
	if k >= n {
		return 1
	}
	mean, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
	lo := max(0, int(mean-40*sd)-50)
	var s float64
	for i := lo; i <= k; i++ {
		s += math.Exp(binomLogPMF(n, i, p))
	}
	return min(s, 1)
}

// binomSF is P[Binomial(n, p) >= k].
func binomSF(n int, p float64, k int) float64 {
	if k <= 0 {
		return 1
	}
	if k > n {
		return 0
	}
	mean, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
	hi := min(n, int(mean+40*sd)+50)
	var s float64
	for i := k; i <= hi; i++ {
		s += math.Exp(binomLogPMF(n, i, p))
	}
	return min(s, 1)
}

// binomQuantile is the smallest k with P[Binomial(n, p) <= k] >= a.
func binomQuantile(n int, p, a float64) int {
	mean, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
	k := max(0, int(mean-40*sd)-50)
	var s float64
	for ; k < n; k++ {
		s += math.Exp(binomLogPMF(n, k, p))
		if s >= a {
			return k
		}
	}
	return n
}
