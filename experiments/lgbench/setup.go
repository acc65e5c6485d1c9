package lgbench

import (
	"context"
	"fmt"
	"slices"

	"testbed/dut/p4switch"
	o "testbed/orchestrator"
	lg "testbed/p4/linkguardian"
	"testbed/results"
)

// TimerAppID is the receiver's packet-generator application that times
// the protected link (ackNoTimeout, PFC frames). The stress traffic runs
// on the sender's generator, so the ids do not meet.
const TimerAppID = 7

// setup gives the link's two switches the fixed-function configuration
// the programs assume (p4/linkguardian/README.md, "Deploying";
// lg.SenderMirrors and the rest): mirror sessions, multicast groups for
// every number of copies, strict queue priorities, PFC reception on the
// sender, the receiver's timer, and the dummy and explicit ACK injected
// from the CPU port. Everything the run changes is journaled with what it
// found, so the end of the run, or a crash's recovery, puts it back.
// Settings found as wanted are left alone (and not journaled).
func (b *Bench) setup(ctx context.Context) error {
	if !b.rc.FirstTouch(fmt.Sprintf("lgsetup/%s/%d/%s/%d", b.Sender, b.TxPort, b.Receiver, b.RxPort)) {
		return nil
	}
	tx, err := asSetup(b.Sender, b.Tx)
	if err != nil {
		return err
	}
	rx, err := asSetup(b.Receiver, b.Rx)
	if err != nil {
		return err
	}
	for _, s := range []struct {
		dev   string
		sw    setupSwitch
		port  int
		mirrs []lg.MirrorSession
		kind  int
	}{
		{b.Sender, tx, b.TxPort, lg.SenderMirrors(b.TxPort), lg.PktDummy},
		{b.Receiver, rx, b.RxPort, lg.ReceiverMirrors(b.RxPort), lg.PktAck},
	} {
		for _, m := range s.mirrs {
			if err := b.setMirror(ctx, s.dev, s.sw, m); err != nil {
				return err
			}
		}
		for _, q := range []int{lg.QueueCtrl, lg.QueueNormal, lg.QueueLowPrio} {
			if err := b.setQueuePriority(ctx, s.dev, s.sw, s.port, q, lg.QueuePriorities[q]); err != nil {
				return err
			}
		}
		if err := b.inject(ctx, s.dev, s.sw, s.port, s.kind); err != nil {
			return err
		}
	}
	for n := 1; n <= lg.MaxRetxCopies; n++ {
		if err := b.setRetxGroup(ctx, n); err != nil {
			return err
		}
	}
	for _, q := range []int{lg.QueueNormal, lg.QueueCtrl, lg.QueueLowPrio} {
		if err := b.setQueueClass(ctx, q, lg.QueuePFCClasses[q]); err != nil {
			return err
		}
	}
	prev, err := tx.PFCOf(ctx, b.TxPort)
	if err != nil {
		return fmt.Errorf("%s: %w", b.Sender, err)
	}
	if want := (p4switch.PFC{RxMap: lg.PFCClassEnable, TxMap: prev.TxMap}); prev != want {
		if err := b.rc.Journal(b.Sender, o.Undo{Kind: o.UndoTofinoPFC, Desc: fmt.Sprintf("set port %d's PFC maps back to rx %#x tx %#x on %s", b.TxPort, prev.RxMap, prev.TxMap, b.Sender),
			Found: prev, Args: map[string]int{"port": b.TxPort, "rx_map": prev.RxMap, "tx_map": prev.TxMap}}); err != nil {
			return err
		}
		if _, err := tx.SetPFC(ctx, b.TxPort, want); err != nil {
			return fmt.Errorf("%s: %w", b.Sender, err)
		}
	}
	return b.startTimer(ctx)
}

func (b *Bench) setMirror(ctx context.Context, dev string, sw setupSwitch, m lg.MirrorSession) error {
	want := p4switch.MirrorSession{ID: m.ID, Direction: m.Direction, Port: m.Port, Queue: m.Queue, MaxPktLen: m.MaxPktLen, Enabled: true}
	found, err := sw.Mirror(ctx, m.ID)
	var prev *p4switch.MirrorSession
	switch {
	case p4switch.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("%s: %w", dev, err)
	case found == want:
		return nil
	default:
		prev = &found
	}
	desc := fmt.Sprintf("delete mirror session %#x the run added on %s", m.ID, dev)
	if prev != nil {
		desc = fmt.Sprintf("restore mirror session %#x found on %s", m.ID, dev)
	}
	if err := b.rc.Journal(dev, o.Undo{Kind: o.UndoTofinoMirror, Desc: desc, Found: prev, Args: map[string]any{"sid": m.ID, "session": prev}}); err != nil {
		return err
	}
	if prev != nil {
		if err := sw.DeleteMirror(ctx, m.ID); err != nil {
			return fmt.Errorf("%s: %w", dev, err)
		}
	}
	if err := sw.AddMirror(ctx, want); err != nil {
		return fmt.Errorf("%s: %w", dev, err)
	}
	return nil
}

// setRetxGroup makes multicast group n hold n replicas of the protected
// port (set_retx_copies(n) selects it).
func (b *Bench) setRetxGroup(ctx context.Context, n int) error {
	tx, err := asSetup(b.Sender, b.Tx)
	if err != nil {
		return err
	}
	_, err = asSetup(b.Receiver, b.Rx)
	if err != nil {
		return err
	}
	mgid, nodes, err := lg.RetxGroup(b.TxPort, n)
	if err != nil {
		return err
	}
	var ids []int
	for _, nd := range nodes {
		ids = append(ids, nd.ID)
	}
	found, err := tx.MulticastGroup(ctx, mgid)
	var prev []p4switch.MulticastNode
	switch {
	case p4switch.IsNotFound(err):
		found = nil
	case err != nil:
		return fmt.Errorf("%s: %w", b.Sender, err)
	case slices.Equal(found, ids):
		return nil // as a previous run left it
	}
	for _, id := range found {
		nd, err := tx.MulticastNodeOf(ctx, id)
		if err != nil {
			return fmt.Errorf("%s: %w", b.Sender, err)
		}
		prev = append(prev, nd)
	}
	args := map[string]any{"mgid": mgid, "node_ids": ids}
	desc := fmt.Sprintf("delete multicast group %d and its nodes the run added on %s", mgid, b.Sender)
	if found != nil {
		args["found"] = map[string]any{"nodes": prev}
		desc = fmt.Sprintf("restore multicast group %d found on %s", mgid, b.Sender)
	}
	if err := b.rc.Journal(b.Sender, o.Undo{Kind: o.UndoTofinoMulticastGroup, Desc: desc, Found: prev, Args: args}); err != nil {
		return err
	}
	if found != nil {
		if err := tx.DeleteMulticastGroup(ctx, mgid); err != nil {
			return fmt.Errorf("%s: %w", b.Sender, err)
		}
		for _, nd := range prev {
			if err := tx.DeleteMulticastNode(ctx, nd.ID); err != nil {
				return fmt.Errorf("%s: %w", b.Sender, err)
			}
		}
	}
	for _, nd := range nodes {
		if err := tx.AddMulticastNode(ctx, p4switch.MulticastNode{ID: nd.ID, RID: nd.RID, DevPorts: nd.DevPorts}); err != nil {
			return fmt.Errorf("%s: %w", b.Sender, err)
		}
	}
	if err := tx.AddMulticastGroup(ctx, mgid, ids); err != nil {
		return fmt.Errorf("%s: %w", b.Sender, err)
	}
	return nil
}

func (b *Bench) setQueuePriority(ctx context.Context, dev string, sw setupSwitch, port, qid, prio int) error {
	found, err := sw.QueuePriority(ctx, port, qid)
	if err != nil {
		return fmt.Errorf("%s: %w", dev, err)
	}
	if found == prio {
		return nil
	}
	if err := b.rc.Journal(dev, o.Undo{Kind: o.UndoTofinoQueuePriority, Desc: fmt.Sprintf("set port %d queue %d on %s back to priority %d", port, qid, dev, found),
		Found: found, Args: map[string]int{"port": port, "qid": qid, "priority": found}}); err != nil {
		return err
	}
	if _, err := sw.SetQueuePriority(ctx, port, qid, prio); err != nil {
		return fmt.Errorf("%s: %w", dev, err)
	}
	return nil
}

// setQueueClass sets the PFC class a queue of the sender's protected
// port honours.
func (b *Bench) setQueueClass(ctx context.Context, qid, cos int) error {
	tx, err := asSetup(b.Sender, b.Tx)
	if err != nil {
		return err
	}
	_, err = asSetup(b.Receiver, b.Rx)
	if err != nil {
		return err
	}
	found, err := tx.QueuePFCCos(ctx, b.TxPort, qid)
	if err != nil {
		return fmt.Errorf("%s: %w", b.Sender, err)
	}
	if found == cos {
		return nil
	}
	if err := b.rc.Journal(b.Sender, o.Undo{Kind: o.UndoTofinoQueuePFCCos, Desc: fmt.Sprintf("set port %d queue %d on %s back to PFC class %d", b.TxPort, qid, b.Sender, found),
		Found: found, Args: map[string]int{"port": b.TxPort, "qid": qid, "cos": found}}); err != nil {
		return err
	}
	if _, err := tx.SetQueuePFCCos(ctx, b.TxPort, qid, cos); err != nil {
		return fmt.Errorf("%s: %w", b.Sender, err)
	}
	return nil
}

// inject routes the port's CPU-injected frames to its low-priority queue
// and sends one (the dummy or the explicit ACK), which then replenishes
// itself there. A route found in place means one was sent already: a
// second frame would circulate beside the first, so none is sent.
func (b *Bench) inject(ctx context.Context, dev string, sw setupSwitch, port, kind int) error {
	key := map[string]int64{lg.KeyDstAddr: lg.InjectAddr(port, lg.QueueLowPrio)}
	es, err := sw.EntriesWhere(ctx, lg.TableL2Forward, key)
	if err != nil {
		return fmt.Errorf("%s: %w", dev, err)
	}
	if len(es) > 0 {
		return nil
	}
	if err := b.rc.Journal(dev, o.Undo{Kind: o.UndoTofinoEntry, Desc: fmt.Sprintf("remove the %s route of port %d's injected frames on %s", lg.TableL2Forward, port, dev),
		Args: map[string]any{"table": lg.TableL2Forward, "key": key, "entry": nil}}); err != nil {
		return err
	}
	if err := sw.AddEntry(ctx, lg.TableL2Forward, p4switch.Entry{Key: key, Action: lg.ActionForwardToQueue,
		Data: map[string]int64{lg.ParamPort: int64(port), lg.ParamQID: lg.QueueLowPrio}}); err != nil {
		return fmt.Errorf("%s: %w", dev, err)
	}
	err = sw.PacketOut(ctx, lg.InjectFrame(port, kind))
	if p4switch.IsUnsupported(err) {
		// A driver with no packet-out (BF Runtime gRPC): the program runs
		// without its self-replenishing frame on this port, which detects
		// tail losses (sender) or acknowledges without reverse traffic
		// (receiver) only once one is sent another way.
		b.rc.Event(results.Event{Type: "warning", Device: dev, Message: fmt.Sprintf("port %d: no %s injected: %v", port, map[int]string{lg.PktDummy: "dummy", lg.PktAck: "explicit ACK"}[kind], err)})
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", dev, err)
	}
	return nil
}

// startTimer points the receiver's periodic timer at the link: the
// programs protect one link per pipe, so a timer running for another
// link of the receiver (a bench of several links, run one after the
// other) is stopped and started again for this one. Its stop at the end
// of the run is journaled.
func (b *Bench) startTimer(ctx context.Context) error {
	rx, err := asSetup(b.Receiver, b.Rx)
	if err != nil {
		return err
	}
	st, err := rx.PktgenStatus(ctx, TimerAppID)
	switch {
	case err == nil && st.Enabled:
		if err := rx.StopPktgen(ctx, TimerAppID); err != nil {
			return fmt.Errorf("%s: %w", b.Receiver, err)
		}
	case err != nil && !p4switch.IsNotFound(err):
		return fmt.Errorf("%s: %w", b.Receiver, err)
	}
	if b.rc.FirstTouch(fmt.Sprintf("pktgen/%s/%d", b.Receiver, TimerAppID)) {
		if err := b.rc.Journal(b.Receiver, o.Undo{Kind: o.UndoTofinoPktgen, Desc: fmt.Sprintf("stop the timer (packet generator application %d) on %s", TimerAppID, b.Receiver),
			Args: map[string]int{"app_id": TimerAppID}}); err != nil {
			return err
		}
	}
	b.rc.Event(results.Event{Type: "setting", Device: b.Receiver, Message: fmt.Sprintf("timer for port %d every %v (packet generator application %d)", b.RxPort, lg.TimerInterval, TimerAppID)})
	if err := rx.StartPktgen(ctx, p4switch.Pktgen{AppID: TimerAppID, Port: lg.RecircPort, EgressPort: b.RxPort, PacketBytes: lg.TimerFrameBytes,
		Interval: lg.TimerInterval, Batches: 1, PerBatch: 1, Periodic: true}); err != nil {
		return fmt.Errorf("%s: %w", b.Receiver, err)
	}
	return nil
}

// missingSetup reads back what protecting the link with copies
// retransmitted copies relies on, and names what is not in place: a
// switch without it forwards but does not protect, and a run that finds
// it so says why its protected points lose what the unprotected ones do.
func (b *Bench) missingSetup(ctx context.Context, copies int) ([]string, error) {
	tx, err := asSetup(b.Sender, b.Tx)
	if err != nil {
		return nil, err
	}
	rx, err := asSetup(b.Receiver, b.Rx)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, s := range []struct {
		dev   string
		sw    setupSwitch
		mirrs []lg.MirrorSession
	}{{b.Sender, tx, lg.SenderMirrors(b.TxPort)}, {b.Receiver, rx, lg.ReceiverMirrors(b.RxPort)}} {
		for _, m := range s.mirrs {
			got, err := s.sw.Mirror(ctx, m.ID)
			switch {
			case p4switch.IsNotFound(err):
				missing = append(missing, fmt.Sprintf("%s has no mirror session %#x", s.dev, m.ID))
			case err != nil:
				return nil, fmt.Errorf("%s: %w", s.dev, err)
			case !got.Enabled || got.Port != m.Port || got.Queue != m.Queue || got.MaxPktLen != m.MaxPktLen || got.Direction != m.Direction:
				missing = append(missing, fmt.Sprintf("%s's mirror session %#x is %+v, not %s to port %d queue %d (%d B)", s.dev, m.ID, got, m.Direction, m.Port, m.Queue, m.MaxPktLen))
			}
		}
	}
	if copies >= 1 {
		mgid, nodes, err := lg.RetxGroup(b.TxPort, copies)
		if err != nil {
			return nil, err
		}
		ids, err := tx.MulticastGroup(ctx, mgid)
		switch {
		case p4switch.IsNotFound(err):
			missing = append(missing, fmt.Sprintf("%s has no multicast group %d", b.Sender, mgid))
		case err != nil:
			return nil, fmt.Errorf("%s: %w", b.Sender, err)
		case len(ids) != len(nodes):
			missing = append(missing, fmt.Sprintf("%s's multicast group %d has %d nodes, not %d", b.Sender, mgid, len(ids), len(nodes)))
		}
	}
	for _, q := range []int{lg.QueueNormal, lg.QueueCtrl, lg.QueueLowPrio} {
		c, err := tx.QueuePFCCos(ctx, b.TxPort, q)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.Sender, err)
		}
		if c != lg.QueuePFCClasses[q] {
			missing = append(missing, fmt.Sprintf("%s's port %d queue %d honours PFC class %d, not %d", b.Sender, b.TxPort, q, c, lg.QueuePFCClasses[q]))
		}
	}
	if p, err := tx.PFCOf(ctx, b.TxPort); err != nil {
		return nil, fmt.Errorf("%s: %w", b.Sender, err)
	} else if p.RxMap&lg.PFCClassEnable == 0 {
		missing = append(missing, fmt.Sprintf("%s's port %d does not honour PFC class 0", b.Sender, b.TxPort))
	}
	if st, err := rx.PktgenStatus(ctx, TimerAppID); err != nil && !p4switch.IsNotFound(err) {
		return nil, fmt.Errorf("%s: %w", b.Receiver, err)
	} else if err != nil || !st.Enabled {
		missing = append(missing, fmt.Sprintf("%s's timer (packet generator application %d) does not run", b.Receiver, TimerAppID))
	}
	return missing, nil
}

// setupSwitch is a switch with the fixed-function configuration the
// programs rely on.
type setupSwitch interface {
	p4switch.Switch
	p4switch.Mirrors
	p4switch.Multicast
	p4switch.FlowControl
	p4switch.CPUPort
}

// asSetup is sw with its fixed-function configuration, or an error naming
// the device when its driver has none.
func asSetup(dev string, sw p4switch.Switch) (setupSwitch, error) {
	s, ok := sw.(setupSwitch)
	if !ok {
		return nil, fmt.Errorf("%s: its driver (%T) sets no mirror sessions, multicast groups, PFC or CPU packets: LinkGuardian cannot be set up on it", dev, sw)
	}
	return s, nil
}
