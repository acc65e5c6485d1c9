package bfrtgrpc

import (
	"context"
	"encoding/json"

	"testbed/internal/bfrtinfo"
	"testbed/internal/bfrtpb"
)

// The fixed-function setup a program relies on (agent/PROTOCOL.md,
// "Fixed-function setup") over BF Runtime gRPC: the SDE's own tables
// $mirror.cfg (bf_rt_mirror_tf1.json), $pre.node and $pre.mgid
// (bf_rt_pre_tf1.json), $PORT's $RX_PFC_EN_MAP and $TX_PFC_EN_MAP
// (bf_rt_port_tf1.json) and tf1.tm.queue.cfg's pfc_cos (bf_rt_tm_tf1.json).
// BF Runtime has no packet-out: packet.out goes to the agent side channel
// (ops.go, agentOps).

func (c *Conn) setupOp(ctx context.Context, in *bfrtinfo.Info, op string, a args0) (any, error) {
	switch op {
	case "mirror.add", "mirror.get", "mirror.del":
		return c.mirror(ctx, in, op, a)
	case "pre.node.add", "pre.node.get", "pre.node.del":
		return c.preNode(ctx, in, op, a)
	case "pre.mgid.add", "pre.mgid.get", "pre.mgid.del":
		return c.preMgid(ctx, in, op, a)
	case "port.pfc":
		return c.portPFC(ctx, in, a)
	case "tm.queue.pfc_cos":
		return c.queuePFCCos(ctx, in, a)
	}
	return nil, badRequest(op, "unknown op %q", op)
}

// list reads a list of integers.
func (a args0) list(op, k string) ([]uint32, error) {
	var l []int64
	if err := json.Unmarshal(a.m[k], &l); err != nil {
		return nil, badRequest(op, "argument %q: expected a list of integers", k)
	}
	out := make([]uint32, len(l))
	for i, v := range l {
		if v < 0 || v > 1<<32-1 {
			return nil, badRequest(op, "argument %q: %d is not a 32-bit value", k, v)
		}
		out[i] = uint32(v)
	}
	return out, nil
}

func (c *Conn) mirror(ctx context.Context, in *bfrtinfo.Info, op string, a args0) (any, error) {
	t, err := table(op, in, "$mirror.cfg")
	if err != nil {
		return nil, err
	}
	sid, err := a.int(op, "sid")
	if err != nil {
		return nil, err
	}
	if sid < 1 || sid > 1023 {
		return nil, badRequest(op, "sid %d: expected 1..1023", sid)
	}
	k := map[string]int64{"$sid": sid}
	switch op {
	case "mirror.del":
		return nil, c.write(ctx, op, update{typ: bfrtpb.Update_DELETE, table: t, pipe: -1, key: k})
	case "mirror.get":
		var r map[string]any
		err := c.readOne(ctx, in, t, k, nil, nil, func(e *entry) error {
			en, _ := e.data["$session_enable"].(bool)
			dir, _ := e.data["$direction"].(string)
			r = map[string]any{"sid": sid, "direction": dir, "session_enable": en, "ucast_egress_port": e.int("$ucast_egress_port"),
				"egress_port_queue": e.int("$egress_port_queue"), "max_pkt_len": e.int("$max_pkt_len")}
			return nil
		})
		return r, err
	}
	normal, ok := t.Action("$normal")
	if !ok {
		return nil, notFound(op, "$mirror.cfg has no $normal")
	}
	d := map[string]any{"$session_enable": true, "$ucast_egress_port_valid": true}
	dir, err := a.str(op, "direction")
	if err != nil {
		return nil, err
	}
	d["$direction"] = dir
	for arg, field := range map[string]string{"ucast_egress_port": "$ucast_egress_port", "egress_port_queue": "$egress_port_queue", "max_pkt_len": "$max_pkt_len"} {
		v, err := a.int(op, arg)
		if err != nil {
			return nil, err
		}
		d[field] = v
	}
	return nil, c.write(ctx, op, update{typ: bfrtpb.Update_INSERT, table: t, pipe: -1, key: k, action: normal, data: d})
}

func (c *Conn) preNode(ctx context.Context, in *bfrtinfo.Info, op string, a args0) (any, error) {
	t, err := table(op, in, "$pre.node")
	if err != nil {
		return nil, err
	}
	id, err := a.int(op, "node_id")
	if err != nil {
		return nil, err
	}
	k := map[string]int64{"$MULTICAST_NODE_ID": id}
	switch op {
	case "pre.node.del":
		return nil, c.write(ctx, op, update{typ: bfrtpb.Update_DELETE, table: t, pipe: -1, key: k})
	case "pre.node.get":
		var r map[string]any
		err := c.readOne(ctx, in, t, k, nil, nil, func(e *entry) error {
			ports := []int64{}
			l, _ := e.data["$DEV_PORT"].([]uint32)
			for _, p := range l {
				ports = append(ports, int64(p))
			}
			r = map[string]any{"node_id": id, "rid": e.int("$MULTICAST_RID"), "dev_ports": ports}
			return nil
		})
		return r, err
	}
	rid, err := a.int(op, "rid")
	if err != nil {
		return nil, err
	}
	ports, err := a.list(op, "dev_ports")
	if err != nil {
		return nil, err
	}
	return nil, c.write(ctx, op, update{typ: bfrtpb.Update_INSERT, table: t, pipe: -1, key: k,
		data: map[string]any{"$MULTICAST_RID": rid, "$MULTICAST_LAG_ID": []uint32{}, "$DEV_PORT": ports}})
}

func (c *Conn) preMgid(ctx context.Context, in *bfrtinfo.Info, op string, a args0) (any, error) {
	t, err := table(op, in, "$pre.mgid")
	if err != nil {
		return nil, err
	}
	mgid, err := a.int(op, "mgid")
	if err != nil {
		return nil, err
	}
	k := map[string]int64{"$MGID": mgid}
	switch op {
	case "pre.mgid.del":
		return nil, c.write(ctx, op, update{typ: bfrtpb.Update_DELETE, table: t, pipe: -1, key: k})
	case "pre.mgid.get":
		var r map[string]any
		err := c.readOne(ctx, in, t, k, nil, nil, func(e *entry) error {
			ids := []int64{}
			l, _ := e.data["$MULTICAST_NODE_ID"].([]uint32)
			for _, n := range l {
				ids = append(ids, int64(n))
			}
			r = map[string]any{"mgid": mgid, "node_ids": ids}
			return nil
		})
		return r, err
	}
	nodes, err := a.list(op, "node_ids")
	if err != nil {
		return nil, err
	}
	return nil, c.write(ctx, op, update{typ: bfrtpb.Update_INSERT, table: t, pipe: -1, key: k,
		data: map[string]any{"$MULTICAST_NODE_ID": nodes, "$MULTICAST_NODE_L1_XID_VALID": make([]bool, len(nodes)), "$MULTICAST_NODE_L1_XID": make([]uint32, len(nodes))}})
}

func (c *Conn) portPFC(ctx context.Context, in *bfrtinfo.Info, a args0) (any, error) {
	const op = "port.pfc"
	t, err := table(op, in, "$PORT")
	if err != nil {
		return nil, err
	}
	dev, err := a.int(op, "dev_port")
	if err != nil {
		return nil, err
	}
	if a.has("rx_map") != a.has("tx_map") {
		return nil, badRequest(op, "give both rx_map and tx_map, or neither to read")
	}
	k := map[string]int64{"$DEV_PORT": dev}
	read := func() (map[string]int64, error) {
		var m map[string]int64
		err := c.readOne(ctx, in, t, k, nil, []string{"$RX_PFC_EN_MAP", "$TX_PFC_EN_MAP"}, func(e *entry) error {
			m = map[string]int64{"rx_map": e.int("$RX_PFC_EN_MAP"), "tx_map": e.int("$TX_PFC_EN_MAP")}
			return nil
		})
		return m, err
	}
	prev, err := read()
	if err != nil {
		return nil, err
	}
	now := prev
	if a.has("rx_map") {
		rx, err := a.int(op, "rx_map")
		if err != nil {
			return nil, err
		}
		tx, err := a.int(op, "tx_map")
		if err != nil {
			return nil, err
		}
		if rx < 0 || rx > 0xff || tx < 0 || tx > 0xff {
			return nil, badRequest(op, "maps %#x, %#x: expected 8-bit class maps", rx, tx)
		}
		now = map[string]int64{"rx_map": rx, "tx_map": tx}
		if now["rx_map"] != prev["rx_map"] || now["tx_map"] != prev["tx_map"] {
			if err := c.write(ctx, op, update{typ: bfrtpb.Update_MODIFY, table: t, pipe: -1, key: k,
				data: map[string]any{"$RX_PFC_EN_MAP": rx, "$TX_PFC_EN_MAP": tx}}); err != nil {
				return nil, err
			}
		}
	}
	return map[string]any{"previous": prev, "rx_map": now["rx_map"], "tx_map": now["tx_map"]}, nil
}

func (c *Conn) queuePFCCos(ctx context.Context, in *bfrtinfo.Info, a args0) (any, error) {
	const op = "tm.queue.pfc_cos"
	qcfg, err := table(op, in, "tf1.tm.queue.cfg")
	if err != nil {
		return nil, err
	}
	k, pipe, err := c.queueKey(ctx, in, op, a) // as tm.queue.sched finds it
	if err != nil {
		return nil, err
	}
	var prev int64
	if err := c.readOne(ctx, in, qcfg, k, &pipe, []string{"pfc_cos"}, func(e *entry) error { prev = e.int("pfc_cos"); return nil }); err != nil {
		return nil, err
	}
	cos, set, err := a.class(op, "cos")
	if err != nil {
		return nil, err
	}
	if set {
		if cos != prev {
			if err := c.write(ctx, op, update{typ: bfrtpb.Update_MODIFY, table: qcfg, pipe: pipe, key: k, data: map[string]any{"pfc_cos": cos}}); err != nil {
				return nil, err
			}
		}
	}
	return map[string]any{"cos": prev}, nil
}
