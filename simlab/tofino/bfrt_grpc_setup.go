package tofino

import (
	"google.golang.org/grpc/codes"

	"testbed/internal/bfrtinfo"
	"testbed/internal/bfrtpb"
)

// The fixed-function setup tables over BF Runtime gRPC ($mirror.cfg,
// $pre.node, $pre.mgid, tf1.tm.queue.cfg's pfc_cos): served by the same
// operations as the agent protocol's (lgsetup.go), so a session or group
// written over either path is read back over the other, and the dataplane
// depends on it the same way.

func (s *bfrtService) writeSetup(t *bfrtinfo.Table, typ bfrtpb.Update_Type, key map[string]uint64, act *bfrtinfo.Action, data map[string]any, pipe int64) error {
	u64 := func(k string) int64 { v, _ := data[k].(uint64); return int64(v) }
	ints := func(k string) []int64 {
		l, _ := data[k].([]uint32)
		out := make([]int64, len(l))
		for i, v := range l {
			out[i] = int64(v)
		}
		return out
	}
	switch t.TableType {
	case "MirrorCfg":
		sid := key["$sid"]
		switch typ {
		case bfrtpb.Update_DELETE:
			return s.op("mirror.del", map[string]any{"sid": sid}, nil)
		case bfrtpb.Update_INSERT:
			if act == nil || lastName(act.Name) != "$normal" {
				return bfErr(codes.Unimplemented, "%s: the simulated switch serves $normal sessions only", t.Name)
			}
			dir, _ := data["$direction"].(string)
			return s.op("mirror.add", map[string]any{"sid": sid, "direction": dir, "ucast_egress_port": u64("$ucast_egress_port"),
				"egress_port_queue": u64("$egress_port_queue"), "max_pkt_len": u64("$max_pkt_len")}, nil)
		}
	case "PreNode":
		id := key["$MULTICAST_NODE_ID"]
		switch typ {
		case bfrtpb.Update_DELETE:
			return s.op("pre.node.del", map[string]any{"node_id": id}, nil)
		case bfrtpb.Update_INSERT:
			return s.op("pre.node.add", map[string]any{"node_id": id, "rid": u64("$MULTICAST_RID"), "dev_ports": ints("$DEV_PORT")}, nil)
		}
	case "PreMgid":
		mgid := key["$MGID"]
		switch typ {
		case bfrtpb.Update_DELETE:
			return s.op("pre.mgid.del", map[string]any{"mgid": mgid}, nil)
		case bfrtpb.Update_INSERT:
			return s.op("pre.mgid.add", map[string]any{"mgid": mgid, "node_ids": ints("$MULTICAST_NODE_ID")}, nil)
		}
	case "TmQueueCfg":
		cos, ok := data["pfc_cos"].(uint64)
		if typ != bfrtpb.Update_MODIFY || !ok || len(data) != 1 {
			return bfErr(codes.InvalidArgument, "%s: only pfc_cos is written by the simulated switch", t.Name)
		}
		dev, qid := tmQueuePort(pipe, key["pg_id"], key["pg_queue"])
		return s.op("tm.queue.pfc_cos", map[string]any{"dev_port": dev, "qid": qid, "cos": int64(cos)}, nil)
	}
	return bfErr(codes.InvalidArgument, "%s: update %v", t.Name, typ)
}

func (s *bfrtService) readSetup(t *bfrtinfo.Table, key map[string]uint64, want map[string]bool, pipe int64) ([]*bfrtpb.TableEntry, error) {
	var act *bfrtinfo.Action
	d := map[string]any{}
	u32s := func(l []int64) []uint32 {
		out := make([]uint32, len(l))
		for i, v := range l {
			out[i] = uint32(v)
		}
		return out
	}
	switch t.TableType {
	case "MirrorCfg":
		var m mirrorSession
		if err := s.op("mirror.get", map[string]any{"sid": key["$sid"]}, &m); err != nil {
			return nil, err
		}
		act, _ = t.Action("$normal")
		d = map[string]any{"$session_enable": m.Enable, "$direction": m.Direction, "$ucast_egress_port": m.Port, "$ucast_egress_port_valid": true,
			"$egress_port_queue": m.Queue, "$max_pkt_len": m.MaxPktLen}
	case "PreNode":
		var n mcNode
		if err := s.op("pre.node.get", map[string]any{"node_id": key["$MULTICAST_NODE_ID"]}, &n); err != nil {
			return nil, err
		}
		d = map[string]any{"$MULTICAST_RID": n.RID, "$MULTICAST_LAG_ID": []uint32{}, "$DEV_PORT": u32s(n.DevPorts)}
	case "PreMgid":
		var g struct {
			NodeIDs []int64 `json:"node_ids"`
		}
		if err := s.op("pre.mgid.get", map[string]any{"mgid": key["$MGID"]}, &g); err != nil {
			return nil, err
		}
		d = map[string]any{"$MULTICAST_NODE_ID": u32s(g.NodeIDs)}
	case "TmQueueCfg":
		dev, qid := tmQueuePort(pipe, key["pg_id"], key["pg_queue"])
		var r struct {
			Cos int64 `json:"cos"`
		}
		if err := s.op("tm.queue.pfc_cos", map[string]any{"dev_port": dev, "qid": qid}, &r); err != nil {
			return nil, err
		}
		d = map[string]any{"pfc_cos": r.Cos}
	}
	e, err := entry(t, intMap(key), act, filter(d, want))
	if err != nil {
		return nil, err
	}
	return []*bfrtpb.TableEntry{e}, nil
}
