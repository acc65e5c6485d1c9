package stardustmodel

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func run(t testing.TB, c Config, slots int64, seed uint64) *Model {
	t.Helper()
	m, err := New(c, rand.New(rand.NewPCG(seed, 17)))
	if err != nil {
		t.Fatal(err)
	}
	m.Run(slots)
	return m
}

// md1Tail is P(Q >= k) for the discrete-time M/D/1 queue the paper uses
// (§4.2.1): each slot a Poisson(rho) number of cells arrives and one
// leaves, Q' = max(Q-1, 0) + A, sampled after the arrivals. It is computed
// here by iterating the chain's distribution to its fixed point, apart
// from the model.
func md1Tail(rho float64, kmax int) []float64 {
	n := 400
	a := make([]float64, n)
	a[0] = math.Exp(-rho)
	for i := 1; i < n; i++ {
		a[i] = a[i-1] * rho / float64(i)
	}
	p := make([]float64, n)
	p[0] = 1
	for it := 0; it < 20000; it++ {
		q := make([]float64, n)
		for i, pi := range p {
			if pi == 0 {
				continue
			}
			b := max(i-1, 0)
			for j := 0; b+j < n && j < n; j++ {
				q[b+j] += pi * a[j]
			}
		}
		d := 0.0
		for i := range p {
			d += math.Abs(p[i] - q[i])
		}
		p = q
		if d < 1e-13 {
			break
		}
	}
	tail := make([]float64, kmax+1)
	for k := 0; k <= kmax; k++ {
		for i := k; i < n; i++ {
			tail[k] += p[i]
		}
	}
	return tail
}

func utilisation(m *Model) float64 {
	return float64(m.S.FELinkBusy) / float64(m.S.Slots) / float64(m.S.FELinks)
}

// The last-stage FE queue follows the M/D/1 model of §4.2.1. The model's
// own link utilisation rho (busy slots over slots) feeds the prediction.
// Poisson arrivals are the worst case (§4.2.1: finitely many FAs and credit
// pacing make the tail lighter), so the tolerance is one-sided at the
// tail: P(Q >= k) at most the prediction + 0.03 for every k, and at least
// half the prediction wherever the prediction is 0.05 or more.
func TestLastStageQueueIsMD1(t *testing.T) {
	for _, load := range []float64{0.46, 0.65, 0.83} {
		c := Default()
		c.Load = load
		c.FCIThreshold = 0
		m := run(t, c, 30000, 3)
		rho := utilisation(m)
		tot := int64(0)
		for _, v := range m.S.QueueHist {
			tot += v
		}
		md := md1Tail(rho, 8)
		cum := tot
		for k := 0; k <= 8; k++ {
			got := float64(cum) / float64(tot)
			t.Logf("rho %.3f P(Q>=%d) model %.4f M/D/1 %.4f", rho, k, got, md[k])
			if got > md[k]+0.03 || (md[k] >= 0.05 && got < md[k]/2) {
				t.Errorf("rho %.3f: P(Q>=%d) = %.4f, M/D/1 says %.4f", rho, k, got, md[k])
			}
			cum -= m.S.QueueHist[k]
		}
		if m.S.CellsLost != 0 {
			t.Errorf("rho %.3f: %d cells lost in the fabric", rho, m.S.CellsLost)
		}
	}
	if rho := md1Tail(0.9, 1)[1]; math.Abs(rho-0.9) > 1e-9 {
		t.Errorf("M/D/1 busy fraction %g, want 0.9", rho)
	}
}

// One backlogged VOQ per port: the scheduler grants credits at port rate x
// (1 + speed-up) / credit size (§4.1) when the egress buffer never fills.
func TestCreditRate(t *testing.T) {
	c := Default()
	c.FAs, c.FEs, c.LinksPerFA, c.PortsPerFA = 2, 2, 4, 1
	c.Load = 3
	c.EgressStopBytes = math.MaxInt32
	c.FCIThreshold = 0
	c.FEQueueCells = 1 << 20
	const slots = 200000
	m := run(t, c, slots, 1)
	want := c.CreditRateBps() / 8 * c.SlotSeconds() * slots / float64(c.CreditBytes)
	for g, got := range m.S.PortCredits {
		if math.Abs(float64(got)-want) > 0.005*want {
			t.Errorf("port %d: %d credits, want %.0f = port rate x 1.03 / 4 KB", g, got, want)
		}
	}
	// With the egress stop on, the port is kept full but no fuller:
	// delivered bytes follow the port rate, not the credit rate.
	c.EgressStopBytes = 64 << 10
	m = run(t, c, slots, 1)
	port := c.PortBps / 8 * c.SlotSeconds() * slots
	for g, got := range m.S.PortBytes {
		if r := float64(got) / port; r < 0.99 || r > 1.005 {
			t.Errorf("port %d: delivered %.4f of the port rate with the egress stop, want 0.99..1.005", g, r)
		}
	}
}

func TestPackingCounts(t *testing.T) {
	// §6.1.1: 64 B cells. 31 packets of 65 B: packed, 2015 B in 32 cells;
	// each on its own, 2 cells apiece.
	sizes := make([]int, 31)
	for i := range sizes {
		sizes[i] = 65
	}
	if got := PackedCells(sizes, 64); got != 32 {
		t.Errorf("packed: %d cells, want 32", got)
	}
	if got := UnpackedCells(sizes, 64); got != 62 {
		t.Errorf("unpacked: %d cells, want 62", got)
	}
}

// Packets one byte over a cell would take two cells each unpacked (§3.4);
// the model packs each credit's release as a unit, so every burst wastes
// less than one cell: cells <= burst bytes / cell size + bursts.
func TestModelPacksVOQs(t *testing.T) {
	c := Default()
	c.PacketBytes = c.CellBytes + 1
	c.Load = 0.5
	m := run(t, c, 20000, 2)
	bound := m.S.BurstBytes/int64(c.CellBytes) + m.S.Bursts
	t.Logf("%d cells for %d packets in %d bursts (bound %d, unpacked %d)", m.S.CellsSent, m.S.Packets, m.S.Bursts, bound, 2*m.S.Packets)
	if m.S.CellsSent > bound || m.S.CellsSent < m.S.BurstBytes/int64(c.CellBytes) {
		t.Errorf("%d cells, want between %d and %d", m.S.CellsSent, m.S.BurstBytes/int64(c.CellBytes), bound)
	}
	if m.S.Bursts >= m.S.Packets/2 {
		t.Errorf("%d bursts for %d packets: credits are not releasing several packets", m.S.Bursts, m.S.Packets)
	}
}

// Every round of a permutation hands each link one cell, so an FA's links
// never differ by more than one cell however traffic falls (§5.3).
func TestSprayingEven(t *testing.T) {
	c := Default()
	m := run(t, c, 20000, 4)
	for fa := 0; fa < c.FAs; fa++ {
		lo, hi := int64(math.MaxInt64), int64(0)
		for _, n := range m.S.UplinkCells[fa*c.LinksPerFA : (fa+1)*c.LinksPerFA] {
			lo, hi = min(lo, n), max(hi, n)
		}
		if hi-lo > 1 || hi == 0 {
			t.Errorf("FA %d: uplinks carried %d..%d cells", fa, lo, hi)
		}
	}
}

// §5.3: bursts of half as many cells as links, towards two destinations
// in turn, would keep each destination on its half of a fixed link order;
// replacing the permutation every few rounds spreads every destination
// over every link. The measure is the spread of one FA's per-link counts
// towards one destination: (max - min) / mean.
func TestPermutationRefreshBreaksSynchronisation(t *testing.T) {
	spread := func(refresh int) float64 {
		c := Default()
		c.FAs, c.FEs, c.LinksPerFA, c.PortsPerFA = 3, 1, 8, 1
		c.PacketBytes, c.CreditBytes = c.CellBytes, 4*c.CellBytes
		c.Load, c.RefreshRounds = 3, refresh
		m := run(t, c, 200000, 9)
		worst := 0.0
		for d := 1; d < c.FAs; d++ {
			lo, hi, sum := int64(math.MaxInt64), int64(0), int64(0)
			for j := 0; j < c.LinksPerFA; j++ {
				n := m.S.UplinkDst[j*c.FAs+d]
				lo, hi, sum = min(lo, n), max(hi, n), sum+n
			}
			worst = max(worst, float64(hi-lo)/(float64(sum)/float64(c.LinksPerFA)))
		}
		return worst
	}
	fixed, refreshed := spread(0), spread(4)
	t.Logf("per-link spread towards one FA: fixed order %.3f, refreshed every 4 rounds %.3f", fixed, refreshed)
	if refreshed > 0.1 || fixed < 4*refreshed {
		t.Errorf("spread %.3f with refresh, %.3f without: want under 0.1 and at least 4 times less", refreshed, fixed)
	}
}

func TestDeterministicPerSeed(t *testing.T) {
	c := Default()
	a, b, d := run(t, c, 3000, 5), run(t, c, 3000, 5), run(t, c, 3000, 6)
	if !reflect.DeepEqual(a.S, b.S) {
		t.Error("same seed, different stats")
	}
	if reflect.DeepEqual(a.S, d.S) {
		t.Error("different seeds, same stats")
	}
}

// Offered 1.2 of the host ports over a fabric of speed-up 1: the credits
// (3% above port rate) and the cell overheads oversubscribe the fabric.
// Without FCI the last-stage queues fill and cells are lost; with FCI the
// schedulers throttle and the fabric loses none (§4.2, §6.2). Without FCI
// the first cell is lost near slot 3300-4100 (seeds 1, 2, 3, 7), so 6000
// slots show the difference; a cut of a quarter of FCIDecrease loses
// cells within them too.
func TestFCIHoldsOversubscription(t *testing.T) {
	c := Default()
	c.Load = 1.2
	c.FEQueueCells, c.FCIThreshold = 64, 16
	on := run(t, c, 6000, 7)
	c.FCIThreshold = 0
	off := run(t, c, 6000, 7)
	t.Logf("FCI off: lost %d rho %.3f; on: lost %d rho %.3f fci cells %d", off.S.CellsLost, utilisation(off), on.S.CellsLost, utilisation(on), on.S.FCICells)
	if off.S.CellsLost == 0 {
		t.Error("without FCI an oversubscribed fabric lost nothing: the test shows nothing")
	}
	if on.S.CellsLost != 0 || on.S.FCICells == 0 {
		t.Errorf("with FCI: %d cells lost, %d FCI cells", on.S.CellsLost, on.S.FCICells)
	}
}

// The same oversubscribed fabric under the proportional FCI law (the
// Tofino programs' reaction): no cell lost with it, cells lost without FCI
// (the run above), and the credits it cancelled are the marked cells over a
// credit's worth of cells.
func TestFCIProportionalHoldsOversubscription(t *testing.T) {
	c := Default()
	c.Load = 1.2
	c.FEQueueCells, c.FCIThreshold = 64, 16
	c.FCIReaction = FCIProportional
	on := run(t, c, 15000, 7)
	t.Logf("proportional: lost %d rho %.3f fci cells %d credits cancelled %d granted %d",
		on.S.CellsLost, utilisation(on), on.S.FCICells, on.S.FCICancelled, on.S.Credits)
	if on.S.CellsLost != 0 || on.S.FCICells == 0 || on.S.FCICancelled == 0 {
		t.Errorf("with proportional FCI: %d cells lost, %d FCI cells, %d credits cancelled", on.S.CellsLost, on.S.FCICells, on.S.FCICancelled)
	}
	if per := int64(c.CreditCells()); on.S.FCICancelled > on.S.FCICells/per {
		t.Errorf("%d credits cancelled for %d marked cells of %d a credit", on.S.FCICancelled, on.S.FCICells, per)
	}
}

// Under the proportional law each port's scheduler cancels exactly one
// credit per credit's worth of marked cells (CreditCells: 16 cells of 256 B
// for a 4 KB credit): once the offered traffic stops and the fabric is
// empty, every port has spent all its whole credits' worth of marks, and
// the cut law's rate factor is never touched.
func TestFCIProportionalCancelsPerCreditOfMarks(t *testing.T) {
	c := Default()
	c.Load = 0.95
	c.FCIReaction = FCIProportional
	m := run(t, c, 10000, 3)
	m.arrRate = 0
	for fa := range m.nextArr {
		m.nextArr[fa] = math.Inf(1)
	}
	m.Run(20000)
	if m.S.BytesArrived != m.S.BytesOffered {
		t.Fatalf("not drained: %d of %d bytes arrived", m.S.BytesArrived, m.S.BytesOffered)
	}
	per := int64(c.CreditCells())
	if per != 16 {
		t.Fatalf("CreditCells %d, want 4096/256 = 16", per)
	}
	var marked, cancelled int64
	for g := range m.scheds {
		if want := m.S.PortFCICells[g] / per; m.S.PortFCICancelled[g] != want {
			t.Errorf("port %d: %d marked cells cancelled %d credits, want %d", g, m.S.PortFCICells[g], m.S.PortFCICancelled[g], want)
		}
		if f := m.scheds[g].factor; f != 1 {
			t.Errorf("port %d: rate factor %g under the proportional law", g, f)
		}
		marked += m.S.PortFCICells[g]
		cancelled += m.S.PortFCICancelled[g]
	}
	t.Logf("%d marked cells, %d credits cancelled, %d granted", marked, cancelled, m.S.Credits)
	if marked != m.S.FCICells || cancelled != m.S.FCICancelled || cancelled == 0 {
		t.Errorf("marked %d of %d, cancelled %d of %d: the test shows nothing without cancels", marked, m.S.FCICells, cancelled, m.S.FCICancelled)
	}
	// The cut law on the same run cancels nothing: it throttles the rate.
	c.FCIReaction = FCICut
	cut := run(t, c, 10000, 3)
	if cut.S.FCICells == 0 || cut.S.FCICancelled != 0 {
		t.Errorf("cut law: %d marked cells, %d credits cancelled", cut.S.FCICells, cut.S.FCICancelled)
	}
}

func TestFCIReactionValidated(t *testing.T) {
	c := Default()
	c.FCIReaction = "halve"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `"halve"`) {
		t.Errorf("FCIReaction halve: %v", err)
	}
	c.FCIReaction, c.FCIRecoverSlots = FCIProportional, 0
	if err := c.Validate(); err != nil {
		t.Errorf("the proportional law needs no recovery time: %v", err)
	}
}

// Two classes towards one oversubscribed port: the high one offers 0.75
// of the port and gets all of it, the low one the rest (§4.1: strict
// priority between classes). Round robin would give each half.
func TestStrictPriority(t *testing.T) {
	c := Default()
	c.FAs, c.FEs, c.LinksPerFA, c.PortsPerFA = 2, 2, 4, 1
	c.Priorities, c.HighShare, c.Load = 2, 0.25, 3
	m := run(t, c, 100000, 8)
	port := c.PortBps / 8 * c.SlotSeconds() * 100000 * 2 // both ports
	hi, lo := float64(m.S.PrioArrived[0])/port, float64(m.S.PrioArrived[1])/port
	hiOffered := float64(m.S.PrioOffered[0]) / port
	t.Logf("high offered %.3f got %.3f, low got %.3f of the ports", hiOffered, hi, lo)
	if hi < 0.97*hiOffered || hi+lo < 0.98 || hi+lo > 1.01 {
		t.Errorf("high got %.3f of %.3f offered, low %.3f: want high served in full and the port full", hi, hiOffered, lo)
	}
}

func TestValidate(t *testing.T) {
	c := Default()
	c.LinksPerFA = 6
	if _, err := New(c, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("6 links over 4 FEs accepted")
	}
}

// BenchmarkCells reports simulated cells per wall second.
func BenchmarkCells(b *testing.B) {
	c := Default()
	c.Load = 0.8
	var cells int64
	for i := 0; b.Loop(); i++ {
		m := run(b, c, 5000, uint64(i))
		cells += m.S.CellsSent
	}
	b.ReportMetric(float64(cells)/b.Elapsed().Seconds(), "cells/s")
}
