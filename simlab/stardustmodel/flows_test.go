package stardustmodel

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func incastFabric() Config {
	c := Default()
	c.FAs, c.FEs, c.LinksPerFA, c.PortsPerFA = 8, 4, 4, 1
	c.PortBps, c.LinkBps, c.Load = 10e9, 10e9, 0
	return c
}

// One flow alone: on Stardust it takes its bytes at the port rate plus
// the fabric's delays; on the packet fabric with room in every buffer no
// packet is dropped and it takes its bytes at the port rate plus the
// window's first round trips. Two flows to one port on Stardust each get
// half the credits, so they finish together, at twice the time.
func TestFlowsAloneAndShared(t *testing.T) {
	c := incastFabric()
	const bytes = 200000
	ideal := float64(bytes) * 8 / c.PortBps / c.SlotSeconds()
	m, err := New(c, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.AddFlow(0, 0, 0, bytes, 1500); err == nil {
		t.Error("a flow to its own FA's port was accepted")
	}
	a, _ := m.AddFlow(1, 0, 0, bytes, 1500)
	if _, err := m.AddFlow(1, 0, 0, bytes, 1500); err == nil {
		t.Error("a second flow on a busy VOQ was accepted")
	}
	m.Run(int64(3 * ideal))
	d, ok := m.FlowDone(a)
	if !ok || d < ideal || d > ideal*1.05 {
		t.Errorf("one flow done %v at slot %.0f, ideal %.0f", ok, d, ideal)
	}
	m2, _ := New(c, rand.New(rand.NewPCG(1, 2)))
	x, _ := m2.AddFlow(1, 0, 0, bytes, 1500)
	y, _ := m2.AddFlow(2, 0, 0, bytes, 1500)
	m2.Run(int64(4 * ideal))
	dx, okx := m2.FlowDone(x)
	dy, oky := m2.FlowDone(y)
	if !okx || !oky || math.Abs(dx-dy) > 0.05*dx || dx < 2*ideal || m2.S.CellsLost != 0 {
		t.Errorf("two flows done at %.0f and %.0f, one alone's ideal %.0f, %d cells lost", dx, dy, ideal, m2.S.CellsLost)
	}

	pf, err := NewPacketFabric(c, PacketOpts{BufferBytes: 1 << 20, InitWindow: 10, RTO: time.Millisecond}, rand.New(rand.NewPCG(1, 3)))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := pf.AddFlow(1, 0, bytes, 1500)
	pf.Run(int64(5 * ideal))
	pd, ok := pf.FlowDone(p)
	if !ok || pf.Drops != 0 || pd < ideal || pd > 2*ideal {
		t.Errorf("packet fabric: one flow done %v at %.0f, ideal %.0f, %d drops", ok, pd, ideal, pf.Drops)
	}
}

// Seven flows into one port through 64 KB buffers: the port's buffer
// overflows, the lost packets are sent again after the RTO, and every
// flow still completes with all its bytes.
func TestPacketFabricIncastDropsAndRecovers(t *testing.T) {
	c := incastFabric()
	pf, err := NewPacketFabric(c, PacketOpts{BufferBytes: 64 << 10, InitWindow: 10, RTO: 200 * time.Microsecond}, rand.New(rand.NewPCG(1, 3)))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 7; i++ {
		if _, err := pf.AddFlow(i, 0, 100000, 1500); err != nil {
			t.Fatal(err)
		}
	}
	pf.Run(200000)
	for i := 0; i < 7; i++ {
		if _, ok := pf.FlowDone(i); !ok {
			t.Errorf("flow %d unfinished", i)
		}
	}
	if pf.Drops == 0 || pf.Retransmits != pf.Drops {
		t.Errorf("%d drops, %d retransmits", pf.Drops, pf.Retransmits)
	}
}
