package reactormodel

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"testbed/internal/sched"
)

func newTestSwitching(t *testing.T, tempC float64) *Switching {
	t.Helper()
	s := NewSwitching(24, rand.New(rand.NewPCG(7, 7)), tempC)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return s
}

// The mirror: a slower mirror settles later, in inverse proportion to its
// natural frequency; a warmer switch damps its mirrors more (the gas's
// viscosity grows with temperature) and they settle sooner.
func TestSwitchingSettleFollowsTheMirror(t *testing.T) {
	s := newTestSwitching(t, 25)
	slow, fast := 0, 0
	for i := range s.Ports() {
		if s.MirrorHz[i] < s.MirrorHz[slow] {
			slow = i
		}
		if s.MirrorHz[i] > s.MirrorHz[fast] {
			fast = i
		}
	}
	got := float64(s.Settle(slow)) / float64(s.Settle(fast))
	if want := s.MirrorHz[fast] / s.MirrorHz[slow]; math.Abs(got-want) > 1e-3 || want < 1.02 {
		t.Errorf("settle ratio %.4f, want the frequency ratio %.4f", got, want)
	}
	// Farrington et al. (OFC 2013): 2.8 us of switching.
	if d := s.Settle(0); d < 2600*time.Nanosecond || d > 3000*time.Nanosecond {
		t.Errorf("settle %v at 25 C, want about 2.8 us", d)
	}
	hot := newTestSwitching(t, 60)
	if hot.Settle(0) >= s.Settle(0) {
		t.Errorf("settle %v at 60 C, %v at 25 C: more damping must settle sooner", hot.Settle(0), s.Settle(0))
	}
}

// The receiver: a circuit costs its frequency step over the pull rate
// more than one from a transmitter at the held frequency; a circuit that
// stays costs nothing; a night lasts as long as its slowest new circuit.
func TestSwitchingRelockFollowsTheClocks(t *testing.T) {
	s := newTestSwitching(t, 25)
	r := rand.New(rand.NewPCG(1, 1))
	// Receiver 5 held transmitter 2's clock; move it to 3, then to 2's
	// twin (same clock): the difference is the step's pull.
	s.TxPPM[4] = s.TxPPM[2]
	var same, moved time.Duration
	for range 200 {
		same += s.Relock(r, 4, 2, 5)
		moved += s.Relock(r, 3, 2, 5)
	}
	want := math.Abs(s.TxPPM[3]-s.TxPPM[2]) / s.PullRate * 1e3 // ns
	if got := float64(moved-same) / 200; math.Abs(got-want) > 10 {
		t.Errorf("the frequency step costs %.0f ns, want %.0f", got, want)
	}
	perm := func(k int) []int {
		p := make([]int, 24)
		for i := range p {
			p[i] = (i + k) % 24
		}
		return p
	}
	if g := s.Night(r, perm(1), perm(1)); g != 0 {
		t.Errorf("no circuit moved, night %v", g)
	}
	// One circuit moves: the night is that circuit's.
	next := perm(1)
	next[0], next[1] = sched.Dark, sched.Dark
	next[0] = 5
	r1, r2 := rand.New(rand.NewPCG(3, 3)), rand.New(rand.NewPCG(3, 3))
	if g, c := s.Night(r1, perm(1), next), s.Circuit(r2, 0, 4, 5); g != c {
		t.Errorf("night %v, its one new circuit %v", g, c)
	}
}

// Over the pairs of ports a circuit takes Farrington et al.'s 2.8 + 8.7 us
// on average, varies by about REACToR Fig. 5's spread, and never exceeds
// the bound the night budget must cover (15 us, REACToR's ocs-characterize
// budget); a night of 24 moving circuits lasts as long as its slowest.
func TestSwitchingGivesMordiasGaps(t *testing.T) {
	s := newTestSwitching(t, 25)
	law := s.Law()
	t.Logf("per circuit: mean %v, SD %v, within [%v, %v]; settle %v..%v, receiver front end %v", law.Mean, law.SD, law.Min, law.Max, s.Settle(0), s.Settle(1), s.Frontend)
	if math.Abs(float64(law.Mean-11500*time.Nanosecond)) > 100 || law.SD < 500*time.Nanosecond || law.SD > 1500*time.Nanosecond {
		t.Errorf("per circuit %v mean, %v SD: want 11.5 us and about 1 us", law.Mean, law.SD)
	}
	if law.Max > 15*time.Microsecond || law.Min < 9*time.Microsecond {
		t.Errorf("bounds [%v, %v]: want within [9, 15] us", law.Min, law.Max)
	}
	r := rand.New(rand.NewPCG(2, 2))
	var prev []int
	for k := range 2000 {
		next := make([]int, 24)
		for i := range next {
			next[i] = (i + 1 + k%23) % 24
		}
		g := s.Night(r, prev, next)
		if g < law.Min || g > law.Max {
			t.Fatalf("night %d: %v outside [%v, %v]", k, g, law.Min, law.Max)
		}
		prev = next
	}
}
