package fabric_test

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"testbed/drivers"
	"testbed/dut/fabric"
	sd "testbed/p4/stardust"
	simfabric "testbed/simlab/fabric"
	sm "testbed/simlab/stardustmodel"
	"testbed/simlab/wire"
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

// A run to the last byte and a watch over a failure, each one request,
// are the model stepped slot by slot and asked after every slot.
func TestRunUntilDoneAndWatchAreTheModelSlotBySlot(t *testing.T) {
	ctx := context.Background()
	c := start(t)
	f := sd.DefaultFabric()
	f.FAs, f.FEs, f.LinksPerFA, f.PortsPerFA = 4, 2, 4, 2
	f.ReachPeriodSlots, f.ReachTh = 50, 3
	seed := fabric.Seed{11, 0x5d}
	if err := c.OpenCells(ctx, f, seed); err != nil {
		t.Fatal(err)
	}
	m, err := sm.New(f, rand.New(rand.NewPCG(seed[0], seed[1])))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 4; i++ {
		if _, err := c.AddFlow(ctx, fabric.Flow{Src: i, Port: 0, Bytes: 16 << 10, PacketBytes: 1500}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.AddFlow(i, 0, 0, 16<<10, 1500); err != nil {
			t.Fatal(err)
		}
	}
	done := func() bool {
		for i := range 3 {
			if _, ok := m.FlowDone(i); !ok {
				return false
			}
		}
		return true
	}
	for m.Now() < 100000 && !done() {
		m.Run(1)
	}
	now, ok, err := c.RunUntilDone(ctx, 100000, 1)
	if err != nil || now != m.Now() || ok != done() || !ok {
		t.Fatalf("run until done: slot %d, done %v, %v; the model: slot %d, done %v", now, ok, err, m.Now(), done())
	}
	fs, err := c.Flows(ctx)
	if err != nil || len(fs) != 3 {
		t.Fatalf("flows: %+v, %v", fs, err)
	}
	for i, s := range fs {
		at, _ := m.FlowDone(i)
		if s.DoneSlot != at || s.Delivered != m.FlowDelivered(i) {
			t.Errorf("flow %d: %+v; the model's done at %g, %d B", i, s, at, m.FlowDelivered(i))
		}
	}

	// A link fails: its far end finds it invalid some periods later.
	l, err := c.FALink(ctx, 0, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetLink(ctx, l.Link, false); err != nil {
		t.Fatal(err)
	}
	if err := m.SetLink(l.Link, false); err != nil {
		t.Fatal(err)
	}
	origin := m.Now()
	tr, err := c.Watch(ctx, fabric.WatchSpec{Slots: 1000, Origin: origin, Bin: 100, Links: []int{l.Link}, Reach: []fabric.Reach{{FA: 0, J: 0, Dst: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	lost := func() int64 { return m.S.CellsLostFailed + m.S.CellsNoRoute + m.S.CellsCorrupted }
	if !tr.Start.Valid[0] || tr.Start.Slot != origin {
		t.Errorf("before the watch: %+v (the link was valid at slot %d)", tr.Start, origin)
	}
	bins := 0
	for m.Now() < origin+1000 {
		m.Run(1)
		got := tr.StateAt(m.Now())
		if got.Valid[0] != m.LinkValid(l.Link) || got.Reach[0] != m.FAReaches(0, 0, 1) || got.Lost != lost() {
			t.Fatalf("slot %d: the trace says %+v; the model valid %v, reach %v, lost %d", m.Now(), got, m.LinkValid(l.Link), m.FAReaches(0, 0, 1), lost())
		}
		if (m.Now()-origin)%100 == 0 {
			if bins >= len(tr.Bins) || tr.Bins[bins] != (fabric.Bin{Slot: m.Now(), BytesArrived: m.S.BytesArrived, Lost: lost()}) {
				t.Fatalf("bin %d at slot %d: %+v", bins, m.Now(), tr.Bins)
			}
			bins++
		}
	}
	if tr.Now != m.Now() || bins != len(tr.Bins) || bins != 10 {
		t.Errorf("watch ended at %d with %d bins; the model at %d, %d bins", tr.Now, len(tr.Bins), m.Now(), bins)
	}
	if tr.StateAt(tr.Now).Valid[0] {
		t.Errorf("1000 slots after the link failed its far end still holds it valid: %+v", tr.Changes)
	}
	if _, err := c.Watch(ctx, fabric.WatchSpec{Slots: 10, Bin: 0}); err == nil || !strings.Contains(err.Error(), "bin 0") {
		t.Errorf("a bin of 0 slots: %v", err)
	}
}

// Injected faults reach the driver as errors naming the device and the
// op: a device error refuses a change, a dropped connection and a
// garbled reply end the connection, a stalled reply meets the deadline.
func TestFabricFaults(t *testing.T) {
	ctx := context.Background()
	var faults wire.Faults
	srv, err := simfabric.ListenFaults(ctx, "127.0.0.1:0", &faults)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dial := func() *fabric.Conn {
		c, err := fabric.Dial(ctx, "fabric1", srv.Address(), fabric.Options{Timeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	f := sd.DefaultFabric()
	f.FAs, f.FEs, f.LinksPerFA, f.PortsPerFA = 4, 2, 4, 2
	c := dial()
	faults.FailNext(7, "fabric busy")
	if err := c.OpenCells(ctx, f, fabric.Seed{1, 2}); err == nil || !strings.Contains(err.Error(), "fabric1: open: device error 7: fabric busy") {
		t.Errorf("open with a device error pending: %v", err)
	}
	if _, err := c.Identity(ctx); err != nil {
		t.Errorf("identity after a device error: %v", err)
	}
	faults.GarbleNext(1)
	if _, err := c.Identity(ctx); err == nil || !strings.Contains(err.Error(), "fabric1: identity: reply") {
		t.Errorf("a garbled reply: %v", err)
	}
	c = dial()
	faults.DropNext(1)
	if _, err := c.Identity(ctx); err == nil || !strings.Contains(err.Error(), "fabric1: identity") {
		t.Errorf("a dropped connection: %v", err)
	}
	c = dial()
	faults.StallNext(1)
	if _, err := c.Identity(ctx); err == nil || !strings.Contains(err.Error(), "fabric1: identity") {
		t.Errorf("a stalled reply: %v", err)
	}
	c = dial()
	if _, err := c.Identity(ctx); err != nil {
		t.Errorf("a new connection after the faults: %v", err)
	}
}
