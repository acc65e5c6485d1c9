package tofino

import (
	"context"
	"encoding/hex"
	"fmt"

	"testbed/dut/p4switch"
)

// KindUnsupported is the error kind of an operation the switch's driver
// has no way to make (packet.out over BF Runtime gRPC).
const KindUnsupported = "unsupported"

// IsUnsupported reports whether err is an operation the driver cannot make.
func IsUnsupported(err error) bool { return p4switch.IsUnsupported(err) }

// The switch's fixed-function configuration a P4 program relies on:
// mirror sessions, the packet replication engine, PFC, and packets sent
// from the CPU port (agent/PROTOCOL.md, "Fixed-function setup"). A
// bf_switchd restart forgets all of it.

// AddMirror adds and enables a mirror session to a port's queue.
func (s *Switch) AddMirror(ctx context.Context, m MirrorSession) error {
	args := map[string]any{"sid": m.ID, "direction": m.Direction, "ucast_egress_port": m.Port,
		"egress_port_queue": m.Queue, "max_pkt_len": m.MaxPktLen}
	if err := s.agent.call(ctx, "mirror.add", args, nil); err != nil {
		return fmt.Errorf("mirror session %d add (%s to port %d queue %d, %d B): %w", m.ID, m.Direction, m.Port, m.Queue, m.MaxPktLen, err)
	}
	return nil
}

// Mirror reads a mirror session; IsNotFound(err) when there is none.
func (s *Switch) Mirror(ctx context.Context, sid int) (MirrorSession, error) {
	var m MirrorSession
	if err := s.agent.call(ctx, "mirror.get", map[string]any{"sid": sid}, &m); err != nil {
		return m, fmt.Errorf("mirror session %d read: %w", sid, err)
	}
	return m, nil
}

// DeleteMirror deletes a mirror session.
func (s *Switch) DeleteMirror(ctx context.Context, sid int) error {
	if err := s.agent.call(ctx, "mirror.del", map[string]any{"sid": sid}, nil); err != nil {
		return fmt.Errorf("mirror session %d delete: %w", sid, err)
	}
	return nil
}

// AddMulticastNode adds a PRE node.
func (s *Switch) AddMulticastNode(ctx context.Context, n MulticastNode) error {
	if err := s.agent.call(ctx, "pre.node.add", map[string]any{"node_id": n.ID, "rid": n.RID, "dev_ports": n.DevPorts}, nil); err != nil {
		return fmt.Errorf("multicast node %d add (rid %d, ports %v): %w", n.ID, n.RID, n.DevPorts, err)
	}
	return nil
}

// MulticastNodeOf reads a PRE node.
func (s *Switch) MulticastNodeOf(ctx context.Context, id int) (MulticastNode, error) {
	var n MulticastNode
	if err := s.agent.call(ctx, "pre.node.get", map[string]any{"node_id": id}, &n); err != nil {
		return n, fmt.Errorf("multicast node %d read: %w", id, err)
	}
	return n, nil
}

// DeleteMulticastNode deletes a PRE node (no group may hold it).
func (s *Switch) DeleteMulticastNode(ctx context.Context, id int) error {
	if err := s.agent.call(ctx, "pre.node.del", map[string]any{"node_id": id}, nil); err != nil {
		return fmt.Errorf("multicast node %d delete: %w", id, err)
	}
	return nil
}

// AddMulticastGroup adds group mgid (bfrt.pre.mgid) with existing nodes.
func (s *Switch) AddMulticastGroup(ctx context.Context, mgid int, nodeIDs []int) error {
	if err := s.agent.call(ctx, "pre.mgid.add", map[string]any{"mgid": mgid, "node_ids": nodeIDs}, nil); err != nil {
		return fmt.Errorf("multicast group %d add (nodes %v): %w", mgid, nodeIDs, err)
	}
	return nil
}

// MulticastGroup reads the node ids of group mgid.
func (s *Switch) MulticastGroup(ctx context.Context, mgid int) ([]int, error) {
	var r struct {
		NodeIDs []int `json:"node_ids"`
	}
	if err := s.agent.call(ctx, "pre.mgid.get", map[string]any{"mgid": mgid}, &r); err != nil {
		return nil, fmt.Errorf("multicast group %d read: %w", mgid, err)
	}
	return r.NodeIDs, nil
}

// DeleteMulticastGroup deletes group mgid (its nodes stay).
func (s *Switch) DeleteMulticastGroup(ctx context.Context, mgid int) error {
	if err := s.agent.call(ctx, "pre.mgid.del", map[string]any{"mgid": mgid}, nil); err != nil {
		return fmt.Errorf("multicast group %d delete: %w", mgid, err)
	}
	return nil
}

// SetPFC sets a port's PFC maps and returns those it had.
func (s *Switch) SetPFC(ctx context.Context, devPort int, p PFC) (PFC, error) {
	if p.RxMap < 0 || p.RxMap > 0xff || p.TxMap < 0 || p.TxMap > 0xff {
		return PFC{}, fmt.Errorf("port %d PFC rx %#x tx %#x: expected 8-bit class maps", devPort, p.RxMap, p.TxMap)
	}
	var r struct {
		Previous PFC `json:"previous"`
	}
	if err := s.agent.call(ctx, "port.pfc", map[string]any{"dev_port": devPort, "rx_map": p.RxMap, "tx_map": p.TxMap}, &r); err != nil {
		return PFC{}, fmt.Errorf("port %d PFC rx %#x tx %#x: %w", devPort, p.RxMap, p.TxMap, err)
	}
	return r.Previous, nil
}

// PFCOf reads a port's PFC maps.
func (s *Switch) PFCOf(ctx context.Context, devPort int) (PFC, error) {
	var p PFC
	if err := s.agent.call(ctx, "port.pfc", map[string]any{"dev_port": devPort}, &p); err != nil {
		return p, fmt.Errorf("port %d PFC read: %w", devPort, err)
	}
	return p, nil
}

// PacketOut sends a frame (without FCS, 60..9216 bytes) from the CPU port
// into the program's ingress pipeline.
func (s *Switch) PacketOut(ctx context.Context, frame []byte) error {
	if len(frame) < 60 || len(frame) > 9216 {
		return fmt.Errorf("packet out: a %d B frame (expected 60..9216 without FCS)", len(frame))
	}
	if err := s.agent.call(ctx, "packet.out", map[string]any{"frame_hex": hex.EncodeToString(frame)}, nil); err != nil {
		return fmt.Errorf("packet out (%d B to %x): %w", len(frame), frame[:6], err)
	}
	return nil
}

// SetQueuePFCCos sets the PFC class egress queue qid of devPort honours
// (tf1.tm.queue.cfg pfc_cos; every queue is in class 0 until set) and
// returns the class it had.
func (s *Switch) SetQueuePFCCos(ctx context.Context, devPort, qid, cos int) (int, error) {
	if cos < 0 || cos > 7 {
		return 0, fmt.Errorf("port %d queue %d PFC class %d: expected 0..7", devPort, qid, cos)
	}
	return s.queuePFCCos(ctx, devPort, qid, &cos)
}

// QueuePFCCos reads the PFC class egress queue qid of devPort honours.
func (s *Switch) QueuePFCCos(ctx context.Context, devPort, qid int) (int, error) {
	return s.queuePFCCos(ctx, devPort, qid, nil)
}

func (s *Switch) queuePFCCos(ctx context.Context, devPort, qid int, cos *int) (int, error) {
	args := map[string]any{"dev_port": devPort, "qid": qid}
	what := "PFC class"
	if cos != nil {
		args["cos"] = *cos
		what = fmt.Sprintf("PFC class %d", *cos)
	}
	if qid < 0 || qid > 7 {
		return 0, fmt.Errorf("port %d queue %d %s: expected a queue 0..7", devPort, qid, what)
	}
	var r struct {
		Cos *int `json:"cos"`
	}
	if err := s.agent.call(ctx, "tm.queue.pfc_cos", args, &r); err != nil {
		return 0, fmt.Errorf("port %d queue %d %s: %w", devPort, qid, what, err)
	}
	if r.Cos == nil {
		return 0, fmt.Errorf("port %d queue %d %s: the agent answered no class", devPort, qid, what)
	}
	return *r.Cos, nil
}
