package fabric_test

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"testbed/drivers"
	"testbed/dut/fabric"
	sd "testbed/p4/stardust"
	simfabric "testbed/simlab/fabric"
	sm "testbed/simlab/stardustmodel"
)

func start(t *testing.T) *fabric.Conn {
	t.Helper()
	ctx := context.Background()
	srv, err := simfabric.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c, err := fabric.Dial(ctx, "fabric1", srv.Address(), fabric.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A fabric run through the device is the model's run for the same seed:
// its statistics, a flow's progress and a failed link's state come back
// over the wire as the model has them.
func TestCellFabricOverTheWireIsTheModel(t *testing.T) {
	ctx := context.Background()
	c := start(t)
	f := sd.DefaultFabric()
	f.FAs, f.FEs, f.LinksPerFA, f.PortsPerFA = 4, 2, 4, 2
	f.ReachPeriodSlots, f.ReachTh = 50, 3
	seed := fabric.Seed{7, 0x5d}
	if err := c.OpenCells(ctx, f, seed); err != nil {
		t.Fatal(err)
	}
	m, err := sm.New(f, rand.New(rand.NewPCG(seed[0], seed[1])))
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.AddFlow(ctx, fabric.Flow{Src: 0, Port: 7, Bytes: 64 << 10, PacketBytes: 1500})
	if err != nil {
		t.Fatal(err)
	}
	mid, err := m.AddFlow(0, 7, 0, 64<<10, 1500)
	if err != nil || mid != id {
		t.Fatalf("the model's flow %d, %v; the device's %d", mid, err, id)
	}
	l, err := c.FALink(ctx, 1, 2, 3)
	if err != nil || l.Link != m.FALink(1, 2) || l.FE != m.LinkFE(1, 2) || l.Reaches != m.FAReaches(1, 2, 3) {
		t.Fatalf("FA 1 link 2: %+v, %v", l, err)
	}
	if err := c.SetLink(ctx, l.Link, false); err != nil {
		t.Fatal(err)
	}
	if err := m.SetLink(l.Link, false); err != nil {
		t.Fatal(err)
	}
	now, err := c.Run(ctx, 3000)
	m.Run(3000)
	if err != nil || now != m.Now() {
		t.Fatalf("run: slot %d, %v; the model is at %d", now, err, m.Now())
	}
	got, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m.S) {
		t.Errorf("stats over the wire:\n%+v\nthe model's:\n%+v", got, m.S)
	}
	if got.CellsSent == 0 {
		t.Errorf("no cells were sent in 3000 slots: %+v", got)
	}
	fs, err := c.Flow(ctx, id)
	at, done := m.FlowDone(mid)
	if err != nil || fs.Delivered != m.FlowDelivered(mid) || fs.Done != done || fs.DoneSlot != at {
		t.Errorf("flow: %+v, %v; the model's delivered %d, done %v at %g", fs, err, m.FlowDelivered(mid), done, at)
	}
	ls, err := c.Link(ctx, l.Link)
	if err != nil || ls.Valid != m.LinkValid(l.Link) || ls.Valid {
		t.Errorf("failed link %d: %+v, %v; the model says valid %v", l.Link, ls, err, m.LinkValid(l.Link))
	}
}

func TestPacketFabricOverTheWire(t *testing.T) {
	ctx := context.Background()
	c := start(t)
	f := sd.DefaultFabric()
	f.FAs, f.FEs, f.LinksPerFA, f.PortsPerFA = 4, 2, 4, 2
	po := sd.PacketFabricOpts{BufferBytes: 64 << 10, InitWindow: 10, RTO: 1e6}
	seed := fabric.Seed{3, 0xec}
	if err := c.OpenPackets(ctx, f, po, seed); err != nil {
		t.Fatal(err)
	}
	pf, err := sm.NewPacketFabric(f, po, rand.New(rand.NewPCG(seed[0], seed[1])))
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.AddFlow(ctx, fabric.Flow{Src: 1, Port: 6, Bytes: 32 << 10, PacketBytes: 1500})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pf.AddFlowClass(1, 6, 0, 32<<10, 1500); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(ctx, 20000); err != nil {
		t.Fatal(err)
	}
	pf.Run(20000)
	fs, err := c.Flow(ctx, id)
	at, done := pf.FlowDone(id)
	if err != nil || fs.Done != done || fs.DoneSlot != at || fs.Delivered != pf.FlowDelivered(id) || fs.Drops != pf.FlowDrops(id) {
		t.Errorf("flow: %+v, %v; the fabric's done %v at %g, delivered %d", fs, err, done, at, pf.FlowDelivered(id))
	}
	if !done {
		t.Errorf("a 32 KB flow on an idle fabric is not done after 20000 slots: %+v", fs)
	}
	ps, err := c.PacketStats(ctx)
	if err != nil || ps.Now != pf.Now() || ps.Sent != pf.Sent || ps.Drops != pf.Drops || ps.Retransmits != pf.Retransmits {
		t.Errorf("counters %+v, %v", ps, err)
	}
}

// Bad requests are refused with what was asked and what is allowed, and
// the connection goes on.
func TestFabricRefusesBadRequests(t *testing.T) {
	ctx := context.Background()
	c := start(t)
	if _, err := c.Run(ctx, 10); err == nil || !strings.Contains(err.Error(), "fabric1: run: no fabric is open") {
		t.Errorf("run before open: %v", err)
	}
	bad := sd.DefaultFabric()
	bad.FAs = 1
	if err := c.OpenCells(ctx, bad, fabric.Seed{}); err == nil || !strings.Contains(err.Error(), "at least 2 FAs") {
		t.Errorf("a fabric of one FA: %v", err)
	}
	f := sd.DefaultFabric()
	f.FAs, f.FEs, f.LinksPerFA, f.PortsPerFA = 4, 2, 4, 2
	if err := c.OpenCells(ctx, f, fabric.Seed{1, 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Flow(ctx, 0); err == nil || !strings.Contains(err.Error(), "flow 0") {
		t.Errorf("a flow never added: %v", err)
	}
	if err := c.SetLink(ctx, 999, false); err == nil || !strings.Contains(err.Error(), "link 999") {
		t.Errorf("link 999: %v", err)
	}
	if _, err := c.FALink(ctx, 4, 0, -1); err == nil || !strings.Contains(err.Error(), "FAs 0..3") {
		t.Errorf("FA 4: %v", err)
	}
	if _, err := c.Run(ctx, 10); err != nil {
		t.Errorf("after refusals: %v", err)
	}
}

// The driver registers itself; opened through the registry as the engine
// opens a device, it names the fabric it reached.
func TestRegisteredDriverOpensTheFabric(t *testing.T) {
	ctx := context.Background()
	srv, err := simfabric.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	d, ok := drivers.Lookup(fabric.Kind, fabric.DriverName)
	if !ok {
		t.Fatalf("no %s driver %q in the registry", fabric.Kind, fabric.DriverName)
	}
	dev, err := d.Open(ctx, drivers.Config{Name: "fabric1", Kind: fabric.Kind, Driver: fabric.DriverName, Address: srv.Address()})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	id, err := dev.Identity(ctx)
	if err != nil || !strings.Contains(id.Model, "Stardust fabric") {
		t.Fatalf("identity %+v, %v", id, err)
	}
	if _, ok := dev.(*fabric.Conn); !ok {
		t.Fatalf("the registry opened a %T", dev)
	}
}
