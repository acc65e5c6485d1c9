package tofino_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"testbed/dut/tofino"
	lg "testbed/p4/linkguardian"
)

// A request the simulated agent does and whose answer is then lost with
// the connection (the SSH connection dropped after the operation, before
// the reply): the driver repeats it only where a repeat is safe, and
// otherwise reconciles or says the outcome is unknown.
func TestLostReplyIsNotDoneTwice(t *testing.T) {
	lab := startLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, _ := lab.Inventory().Device("sw1")
	// The connection's watcher notes a dropped reply's reconnect while
	// the test reads the transcript.
	var tr lockedText
	sw := openWith(t, lab, "sw1", 10*time.Second, &tr)
	if err := sw.StartSwitchd(ctx, lg.ProgramSender); err != nil {
		t.Fatal(err)
	}
	faults := lab.Faults("sw1")
	e := tofino.Entry{Key: map[string]int64{"egress_port": 136}, Action: lg.ActionProtect, Data: map[string]int64{"dummy_pkt_max_count": 4, "blocking_mode": 1}}

	// An add done before the answer was lost: the repeat finds the entry,
	// reads it back equal to the request, and the add is done, once.
	faults.DropReplyNext(1)
	if err := sw.AddEntry(ctx, lg.TableLinkProtect, e); err != nil {
		t.Fatalf("add whose answer was lost: %v", err)
	}
	if !strings.Contains(tr.String(), "table.add: done by the request sent before the connection was lost") {
		t.Errorf("transcript does not say the add was found done:\n%s", tr.String())
	}
	es, err := sw.Entries(ctx, lg.TableLinkProtect)
	if err != nil || len(es) != 1 || es[0].Data["blocking_mode"] != 1 {
		t.Fatalf("after the lost answer: entries %+v, %v", es, err)
	}

	// An add of another entry under a key that exists: the agent refused
	// it, the answer was lost, the repeat is refused too and the entry
	// read back is not what was sent: not done, and not reported done.
	other := e
	other.Data = map[string]int64{"dummy_pkt_max_count": 4, "blocking_mode": 0}
	faults.DropReplyNext(1)
	err = sw.AddEntry(ctx, lg.TableLinkProtect, other)
	if err == nil {
		t.Fatal("an add refused by the switch, its answer lost, reported done")
	}
	for _, want := range []string{d.Address, "table.add", "outcome unknown"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	// A delete whose answer was lost: the repeat finds nothing to delete,
	// which is the state asked for.
	faults.DropReplyNext(1)
	if err := sw.DeleteEntry(ctx, lg.TableLinkProtect, e.Key); err != nil {
		t.Fatalf("delete whose answer was lost: %v", err)
	}
	if es, err := sw.Entries(ctx, lg.TableLinkProtect); err != nil || len(es) != 0 {
		t.Fatalf("after the delete: entries %+v, %v", es, err)
	}

	// A frame sent from the CPU port, its answer lost: a repeat would send
	// it twice, so it is not repeated and the error says so.
	frame := make([]byte, 64)
	copy(frame, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x00})
	faults.DropReplyNext(1)
	before := strings.Count(tr.String(), `"op":"packet.out"`)
	err = sw.PacketOut(ctx, frame)
	if err == nil {
		t.Fatal("a packet.out whose answer was lost reported done")
	}
	for _, want := range []string{d.Address, "packet.out", "outcome unknown"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if n := strings.Count(tr.String(), `"op":"packet.out"`) - before; n != 1 {
		t.Errorf("packet.out sent %d times, want once", n)
	}

	// The fixed-function adds are reconciled by reading the object back.
	m := tofino.MirrorSession{ID: 7, Direction: "EGRESS", Port: 136, Queue: 1, MaxPktLen: 128}
	faults.DropReplyNext(1)
	if err := sw.AddMirror(ctx, m); err != nil {
		t.Fatalf("mirror.add whose answer was lost: %v", err)
	}
	// A node's ports are a bitmap on the switch, read back in ascending
	// order: given in another, the node read back is still the request.
	faults.DropReplyNext(1)
	if err := sw.AddMulticastNode(ctx, tofino.MulticastNode{ID: 3, RID: 9, DevPorts: []int{137, 136}}); err != nil {
		t.Fatalf("pre.node.add whose answer was lost: %v", err)
	}
	// Another port set under the same node is not the request.
	faults.DropReplyNext(1)
	if err := sw.AddMulticastNode(ctx, tofino.MulticastNode{ID: 3, RID: 9, DevPorts: []int{137}}); err == nil || !strings.Contains(err.Error(), "outcome unknown") {
		t.Errorf("pre.node.add of other ports under an existing node, its answer lost: %v, want the outcome unknown", err)
	}
	// A group's nodes come back in the order of their handles (the order
	// the nodes were added), not the group's.
	for _, id := range []int{4, 2} {
		if err := sw.AddMulticastNode(ctx, tofino.MulticastNode{ID: id, RID: 9, DevPorts: []int{136}}); err != nil {
			t.Fatal(err)
		}
	}
	faults.DropReplyNext(1)
	if err := sw.AddMulticastGroup(ctx, 5, []int{2, 3, 4}); err != nil {
		t.Fatalf("pre.mgid.add whose answer was lost: %v", err)
	}
	port := dev(t, lab, "sw1", "p1")
	if err := sw.DeletePort(ctx, port); err != nil && !tofino.IsNotFound(err) {
		t.Fatal(err)
	}
	faults.DropReplyNext(1)
	if err := sw.AddPort(ctx, port, 100, "rs528"); err != nil {
		t.Fatalf("port.add whose answer was lost: %v", err)
	}
	for _, op := range []string{"mirror.add", "pre.node.add", "pre.mgid.add", "port.add"} {
		if !strings.Contains(tr.String(), op+": done by the request sent before the connection was lost") {
			t.Errorf("transcript does not say %s was found done", op)
		}
	}

	// A read is repeated.
	faults.DropReplyNext(1)
	if _, err := sw.Entries(ctx, lg.TableLinkProtect); err != nil {
		t.Fatalf("read whose answer was lost: %v", err)
	}
}
