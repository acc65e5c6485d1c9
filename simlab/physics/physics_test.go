package physics

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func mustT(t *testing.T, name string) Transceiver {
	tr, err := TransceiverByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func mustF(t *testing.T, name string) FEC {
	f, err := FECByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func logPMF(n int64, p float64, k int64) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p)
}

// chiSquare compares draws with the exact pmf, pooling sparse tails; it
// returns the statistic and the degrees of freedom.
func chiSquare(t *testing.T, r *rand.Rand, n int64, p float64, draws int) (float64, int) {
	counts := map[int64]int{}
	for i := 0; i < draws; i++ {
		counts[Binomial(r, n, p)]++
	}
	mean := float64(n) * p
	sd := math.Sqrt(mean * (1 - p))
	lo, hi := int64(math.Max(0, math.Floor(mean-6*sd-1))), int64(math.Min(float64(n), math.Ceil(mean+6*sd+1)))
	var chi float64
	bins := 0
	var expAcc, obsAcc float64
	for k := lo; k <= hi; k++ {
		expAcc += float64(draws) * math.Exp(logPMF(n, p, k))
		obsAcc += float64(counts[k])
		if expAcc >= 20 {
			chi += (obsAcc - expAcc) * (obsAcc - expAcc) / expAcc
			bins++
			expAcc, obsAcc = 0, 0
		}
	}
	return chi, bins - 1
}

func TestBinomialMatchesExactPMF(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		n int64
		p float64
	}{{50, 0.3}, {2000, 0.01}, {1_000_000, 2e-5}, {1_000_000_000, 1e-6}, {1000, 0.7}, {100, 0.02}} {
		chi, df := chiSquare(t, r, c.n, c.p, 200_000)
		// 99.9th percentile of chi-square is below df + 3.1·sqrt(2 df) + 10 for these df.
		limit := float64(df) + 3.1*math.Sqrt(2*float64(df)) + 10
		if chi > limit {
			t.Errorf("Binomial(%d, %g): chi-square %.1f with %d df exceeds %.1f", c.n, c.p, chi, df, limit)
		}
	}
}

func TestBinomialMomentsAtScale(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		n int64
		p float64
	}{{1_000_000_000_000, 1e-3}, {100_000_000, 1e-8}, {5_000_000_000, 0.5}} {
		const draws = 20000
		var s, s2 float64
		for i := 0; i < draws; i++ {
			x := float64(Binomial(r, c.n, c.p))
			s += x
			s2 += x * x
		}
		mean, want := s/draws, float64(c.n)*c.p
		vr, wantVar := s2/draws-mean*mean, want*(1-c.p)
		if math.Abs(mean-want) > 5*math.Sqrt(wantVar/draws) {
			t.Errorf("Binomial(%d,%g): mean %g, want %g", c.n, c.p, mean, want)
		}
		if math.Abs(vr/wantVar-1) > 0.06 {
			t.Errorf("Binomial(%d,%g): variance %g, want %g", c.n, c.p, vr, wantVar)
		}
	}
	if Binomial(r, 10, 0) != 0 || Binomial(r, 10, 1) != 10 || Binomial(r, 0, 0.5) != 0 {
		t.Error("edge cases wrong")
	}
}

func TestCodewordFailureMatchesBruteForce(t *testing.T) {
	fec := mustF(t, "rs528")
	for _, ber := range []float64{1e-3, 3e-4} {
		ps := 1 - math.Pow(1-ber, 10)
		// Exact tail with big floats.
		sum := new(big.Float).SetPrec(200)
		for k := fec.T + 1; k <= fec.N; k++ {
			bin := new(big.Float).SetInt(new(big.Int).Binomial(int64(fec.N), int64(k)))
			term := new(big.Float).Mul(bin, big.NewFloat(math.Pow(ps, float64(k))*math.Pow(1-ps, float64(fec.N-k))))
			sum.Add(sum, term)
		}
		want, _ := sum.Float64()
		if got := CodewordFailure(fec, ber); math.Abs(got/want-1) > 1e-6 {
			t.Errorf("ber %g: %g, want %g", ber, got, want)
		}
	}
	// As ber -> 0 the failure falls as ber^(T+1).
	a, b := CodewordFailure(fec, 1e-6), CodewordFailure(fec, 1e-7)
	if slope := math.Log10(a / b); math.Abs(slope-float64(fec.T+1)) > 0.05 {
		t.Errorf("log-log slope %.3f, want %d", slope, fec.T+1)
	}
	if CodewordFailure(fec, 1e-9) <= 0 {
		t.Error("tiny failure probability underflowed to zero")
	}
}

func TestBERCalibrationAndMonotone(t *testing.T) {
	tr := mustT(t, "10GBASE-SR")
	if got := tr.BER(calSensitivityDBm); math.Abs(got/1e-12-1) > 0.01 {
		t.Errorf("BER at the calibration point = %g, want 1e-12", got)
	}
	for _, name := range TransceiverNames() {
		tr := mustT(t, name)
		prev := 1.0
		for p := -25.0; p <= 0; p += 0.25 {
			b := tr.BER(p)
			if b > prev {
				t.Errorf("%s: BER rises with power at %g dBm", name, p)
			}
			prev = b
		}
	}
}

func margin(t *testing.T, tr, fec string, loss float64) float64 {
	x := mustT(t, tr)
	return x.TxPowerDBm() - RxPowerForFrameLoss(x, mustF(t, fec), 1518, loss)
}

// LinkGuardian Fig. 1 ordering must come out of the receiver and FEC model.
func TestFig1Ordering(t *testing.T) {
	for _, loss := range []float64{1e-8, 1e-6, 1e-3} {
		m10 := margin(t, "10GBASE-SR", "none", loss)
		m25 := margin(t, "25GBASE-SR", "none", loss)
		m25rs := margin(t, "25GBASE-SR", "rs528", loss)
		m50 := margin(t, "50GBASE-SR", "rs544", loss)
		m100 := margin(t, "100GBASE-SR4", "rs528", loss)
		t.Logf("loss %g: margin (tx - rx at loss) 10G %.2f, 25G-RS %.2f, 25G %.2f, 50G-RS544 %.2f, 100G-SR4-RS %.2f dB", loss, m10, m25rs, m25, m50, m100)
		// Fig. 1's claims: faster baud tolerates less (10G > 25G), FEC
		// moves the cliff (25G-RS > 25G), and 50G PAM4 suffers most even
		// with its stronger FEC.
		if !(m10 > m25 && m25rs > m25 && m50 < m25 && m50 < m10 && m50 < m25rs && m50 < m100) {
			t.Errorf("loss %g: ordering broken: 10G %.2f, 25G-RS %.2f, 25G %.2f, 50G %.2f", loss, m10, m25rs, m25, m50)
		}
		if d := m25rs - m25; d < 1 || d > 4 {
			t.Errorf("loss %g: RS(528,514) moves 25G's cliff by %.2f dB, want 1-4", loss, d)
		}
		if math.Abs(m100-m25rs) > 1 {
			t.Errorf("loss %g: 100G-SR4 %.2f dB far from 25G-RS %.2f dB", loss, m100, m25rs)
		}
	}
	// The cliff is steep: from 1e-9 to 1e-2 within a few dB.
	for _, c := range [][2]string{{"10GBASE-SR", "none"}, {"25GBASE-SR", "rs528"}, {"50GBASE-SR", "rs544"}} {
		tr, f := mustT(t, c[0]), mustF(t, c[1])
		w := RxPowerForFrameLoss(tr, f, 1518, 1e-9) - RxPowerForFrameLoss(tr, f, 1518, 1e-2)
		if w <= 0 || w > 4 {
			t.Errorf("%s %s: loss goes from 1e-9 to 1e-2 over %.2f dB", c[0], c[1], w)
		}
	}
}

func TestFrameLossLimits(t *testing.T) {
	tr := mustT(t, "25GBASE-SR")
	for _, f := range []string{"none", "rs528"} {
		fec := mustF(t, f)
		if p := FrameLossProbability(tr, fec, -40, 1518); p < 0.999 {
			t.Errorf("%s: loss at -40 dBm = %g, want ~1", f, p)
		}
		if p := FrameLossProbability(tr, fec, 0, 1518); p > 1e-15 {
			t.Errorf("%s: loss at 0 dBm = %g, want ~0", f, p)
		}
		at := RxPowerForFrameLoss(tr, fec, 1518, 1e-4)
		if a, b := FrameLossProbability(tr, fec, at, 64), FrameLossProbability(tr, fec, at, 1518); !(a < b && b > 0) {
			t.Errorf("%s: small frames (%g) not less exposed than large (%g)", f, a, b)
		}
	}
}

func BenchmarkBinomial(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct {
		name string
		n    int64
		p    float64
	}{{"1e9x1e-6", 1e9, 1e-6}, {"1e12x1e-3", 1e12, 1e-3}, {"1000x0.3", 1000, 0.3}, {"1e8x1e-8", 1e8, 1e-8}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				Binomial(r, c.n, c.p)
			}
		})
	}
}

func BenchmarkFrameLossProbability(b *testing.B) {
	tr, _ := TransceiverByName("25GBASE-SR")
	fec, _ := FECByName("rs528")
	for i := 0; i < b.N; i++ {
		FrameLossProbability(tr, fec, -12.5, 1518)
	}
}
