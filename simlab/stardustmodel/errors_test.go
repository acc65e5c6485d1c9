package stardustmodel

import (
	"math/rand/v2"
	"testing"
)

// A link whose error rate crosses the threshold (§5.10) is marked faulty
// at both ends within a period and a link's delay, and once out it loses
// no more data; when its errors stop it is back after th good
// reachability cells, no sooner. Under the threshold it stays in and
// keeps losing cells: the marking is the error rate's doing.
func TestCorruptingLinkMarksItselfFaulty(t *testing.T) {
	for _, tc := range []struct {
		rate   float64
		faulty bool
	}{{0.2, true}, {0.002, false}} {
		c := Default()
		c.Load = 0.6
		c.ReachPeriodSlots, c.ReachTh = 50, 3
		m, err := New(c, rand.New(rand.NewPCG(3, 17)))
		if err != nil {
			t.Fatal(err)
		}
		m.Run(2000)
		li := m.FALink(5, 2)
		if err := m.SetLinkErrorRate(li, tc.rate, 0.05); err != nil {
			t.Fatal(err)
		}
		from := m.Now()
		out := int64(-1)
		for m.Now() < from+int64(10*c.ReachPeriodSlots) {
			m.Run(1)
			if out < 0 && !m.LinkValid(li) {
				out = m.Now()
			}
		}
		if !tc.faulty {
			if out >= 0 || m.LinkCorrupted(li) == 0 {
				t.Errorf("rate %g under the threshold: marked faulty at %d, %d cells corrupted", tc.rate, out-from, m.LinkCorrupted(li))
			}
			continue
		}
		if out < 0 || out-from > int64(c.ReachPeriodSlots+m.prop+1) {
			t.Fatalf("rate %g: faulty after %d slots (period %d)", tc.rate, out-from, c.ReachPeriodSlots)
		}
		lost := m.LinkCorrupted(li)
		m.Run(int64(5 * c.ReachPeriodSlots))
		if m.LinkCorrupted(li) != lost || m.LinkValid(li) {
			t.Errorf("out of service, the link lost %d more cells, valid %v", m.LinkCorrupted(li)-lost, m.LinkValid(li))
		}
		if err := m.SetLinkErrorRate(li, 0, 0.05); err != nil {
			t.Fatal(err)
		}
		clean := m.Now()
		back := int64(-1)
		for m.Now() < clean+int64(10*c.ReachPeriodSlots) && back < 0 {
			m.Run(1)
			if m.LinkValid(li) {
				back = m.Now()
			}
		}
		// th good cells: the first may close a period already under way.
		if back < 0 || back-clean < int64((c.ReachTh-1)*c.ReachPeriodSlots) || back-clean > int64((c.ReachTh+1)*c.ReachPeriodSlots+m.prop+1) {
			t.Errorf("back after %d slots, th %d periods of %d", back-clean, c.ReachTh, c.ReachPeriodSlots)
		}
	}
}
