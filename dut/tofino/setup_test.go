package tofino_test

import (
	"context"
	"testing"

	"testbed/dut/tofino"
	lg "testbed/p4/linkguardian"
)

// setupLG gives a sender and a receiver the fixed-function setup
// LinkGuardian needs for a link of copies retransmitted copies (the
// bench's, experiments/lgbench/setup.go, without its journal): without it
// the switches forward but do not protect.
func setupLG(t *testing.T, ctx context.Context, tx, rx *tofino.Switch, txPort, rxPort, copies int) {
	t.Helper()
	for _, s := range []struct {
		sw    *tofino.Switch
		mirrs []lg.MirrorSession
	}{{tx, lg.SenderMirrors(txPort)}, {rx, lg.ReceiverMirrors(rxPort)}} {
		for _, m := range s.mirrs {
			if err := s.sw.AddMirror(ctx, tofino.MirrorSession{ID: m.ID, Direction: m.Direction, Port: m.Port, Queue: m.Queue, MaxPktLen: m.MaxPktLen}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mgid, nodes, err := lg.RetxGroup(txPort, copies)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, n := range nodes {
		if err := tx.AddMulticastNode(ctx, tofino.MulticastNode{ID: n.ID, RID: n.RID, DevPorts: n.DevPorts}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, n.ID)
	}
	if err := tx.AddMulticastGroup(ctx, mgid, ids); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.SetPFC(ctx, txPort, tofino.PFC{RxMap: lg.PFCClassEnable}); err != nil {
		t.Fatal(err)
	}
	// The dummy and the explicit ACK, from the CPU port into the
	// lowest-priority queue, where they replenish themselves.
	for _, s := range []struct {
		sw         *tofino.Switch
		port, kind int
	}{{tx, txPort, lg.PktDummy}, {rx, rxPort, lg.PktAck}} {
		if err := s.sw.AddEntry(ctx, lg.TableL2Forward, tofino.Entry{Key: map[string]int64{lg.KeyDstAddr: lg.InjectAddr(s.port, lg.QueueLowPrio)},
			Action: lg.ActionForwardToQueue, Data: map[string]int64{lg.ParamPort: int64(s.port), lg.ParamQID: lg.QueueLowPrio}}); err != nil {
			t.Fatal(err)
		}
		if err := s.sw.PacketOut(ctx, lg.InjectFrame(s.port, s.kind)); err != nil {
			t.Fatal(err)
		}
	}
	// The receiver's timer for the link (ackNoTimeout, pause frames).
	if err := rx.StartPktgen(ctx, tofino.Pktgen{AppID: 7, Port: lg.RecircPort, EgressPort: rxPort, PacketBytes: lg.TimerFrameBytes,
		Interval: lg.TimerInterval, Batches: 1, PerBatch: 1, Periodic: true}); err != nil {
		t.Fatal(err)
	}
}

// The setup ops answer as the SDE's tables do: a second add of one key
// is refused, a read of what is not there is not found, a group names
// only nodes that exist, a node in a group cannot go first, and a
// bf_switchd restart forgets all of it.
func TestSetupOpsKeepTheirState(t *testing.T) {
	lab, tx, _, p, _ := startLG100Stress(t)
	_ = lab
	ctx := context.Background()
	m := tofino.MirrorSession{ID: lg.SessionTxBuffer | lg.PortIndex(p), Direction: "EGRESS", Port: lg.RecircPort, Queue: lg.QueueTxBuffer, MaxPktLen: 16384, Enabled: true}
	if err := tx.AddMirror(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := tx.AddMirror(ctx, m); err == nil {
		t.Error("a second add of one mirror session: no error")
	}
	if got, err := tx.Mirror(ctx, m.ID); err != nil || got != m {
		t.Errorf("mirror session read back %+v %v, want %+v", got, err, m)
	}
	if _, err := tx.Mirror(ctx, m.ID+1); !tofino.IsNotFound(err) {
		t.Errorf("a session never added: %v, want not found", err)
	}
	if err := tx.AddMirror(ctx, tofino.MirrorSession{ID: 5, Direction: "SIDEWAYS", Port: p, MaxPktLen: 64}); err == nil {
		t.Error("a mirror session with direction SIDEWAYS: no error")
	}
	if err := tx.AddMulticastGroup(ctx, 3, []int{900}); !tofino.IsNotFound(err) {
		t.Errorf("a group of a node that does not exist: %v, want not found", err)
	}
	if err := tx.AddMulticastNode(ctx, tofino.MulticastNode{ID: 900, RID: 1, DevPorts: []int{p}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.AddMulticastGroup(ctx, 3, []int{900}); err != nil {
		t.Fatal(err)
	}
	if err := tx.DeleteMulticastNode(ctx, 900); err == nil {
		t.Error("deleting a node its group still holds: no error")
	}
	if prev, err := tx.SetPFC(ctx, p, tofino.PFC{RxMap: 1, TxMap: 2}); err != nil || prev != (tofino.PFC{}) {
		t.Errorf("PFC of a fresh port: %+v %v, want off", prev, err)
	}
	if got, err := tx.PFCOf(ctx, p); err != nil || got != (tofino.PFC{RxMap: 1, TxMap: 2}) {
		t.Errorf("PFC read back %+v %v", got, err)
	}
	if err := tx.PacketOut(ctx, make([]byte, 20)); err == nil {
		t.Error("a 20 B packet out: no error")
	}
	if err := tx.PacketOut(ctx, lg.InjectFrame(p, lg.PktDummy)); err != nil {
		t.Fatal(err)
	}
	if err := tx.StartSwitchd(ctx, lg.ProgramSender); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Mirror(ctx, m.ID); !tofino.IsNotFound(err) {
		t.Errorf("mirror session after a bf_switchd restart: %v, want not found", err)
	}
	if _, err := tx.MulticastGroup(ctx, 3); !tofino.IsNotFound(err) {
		t.Errorf("multicast group after a bf_switchd restart: %v, want not found", err)
	}
}
