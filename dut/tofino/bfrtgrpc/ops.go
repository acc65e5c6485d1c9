package bfrtgrpc

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"testbed/dut/tofino"
	"testbed/internal/bfrtinfo"
	"testbed/internal/bfrtpb"
)

// The operations of dut/tofino/agent/PROTOCOL.md on the SDE's tables, as
// testbed_agent.py makes them with bfrt_python, table by table:
//
//	port.*           $PORT ($SPEED, $FEC, $PORT_ENABLE, $AUTO_NEGOTIATION,
//	                 $PORT_UP, $CUT_THROUGH_EN, $TIMESTAMP_1588_*), $PORT_STAT
//	tm.queue         tf1.tm.counter.queue (pipe as the target)
//	tm.queue.sched   tf1.tm.port.cfg, tf1.tm.queue.sched_cfg max_priority
//	reg.*            the program's Register tables ($REGISTER_INDEX, <reg>.f1)
//	table.*          the program's match tables
//	pktgen.*         tf1.pktgen.port_cfg, pkt_buffer, app_cfg
//	time, time.wait  testbed.sim.clock where the switch has it (the
//	                 simulated one), else the driver's own clock
//
// port.fec_stat has no table: the SDE's port tables carry no FEC
// counter (bf_rt_port_tf1.json), and the port manager's
// bf_port_rs_fec_status_and_counters_get is not reached over BF Runtime.

// entry is one table entry as read: key and data fields by name.
type entry struct {
	key    map[string]uint64
	action string
	data   map[string]any
}

// Call answers one operation (tofino.Conn).
func (c *Conn) Call(ctx context.Context, op string, args any, out any) error {
	ctx, cancel := c.deadline(ctx)
	defer cancel()
	if agentOps[op] {
		return c.viaAgent(ctx, op, args, out)
	}
	a := map[string]json.RawMessage{}
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if err := json.Unmarshal(b, &a); err != nil {
			return fmt.Errorf("%s: args: %w", op, err)
		}
	}
	res, err := c.do(ctx, op, args0{a})
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if res == nil {
		res = map[string]any{}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return json.Unmarshal(b, out)
}

// agentOps are the operations BF Runtime serves no table or call for,
// answered by the switch's testbed agent over SSH (Options.Agent):
//   - port.fec_stat: no table carries a port's FEC counters, on any
//     Tofino. bf_rt_port_tf1.json, _tf2.json and _tf3.json (open-p4studio,
//     pkgsrc/bf-drivers/src/bf_rt/bf_rt_port/) give $PORT's $FEC, the
//     mode, and $PORT_STAT's RMON counters ($FramesReceivedwithFCSError,
//     ...), but no codeword counter; the port manager keeps them
//     (bf_port_rs_fec_status_and_counters_get, bf_port_if.h), which the
//     agent calls inside bf_switchd;
//   - packet.out: bfruntime.proto's stream carries digests, idle-timeout
//     and port-status notifications, no packets; a frame for the CPU port
//     goes through the SDE kernel packet driver's interface, as the agent
//     sends it.
var agentOps = map[string]bool{"port.fec_stat": true, "packet.out": true}

// viaAgent sends op to the side channel's agent, started first when it
// has not answered since the program was loaded.
func (c *Conn) viaAgent(ctx context.Context, op string, args, out any) error {
	ag := c.opts.Agent
	if ag == nil {
		return &tofino.AgentError{Op: op, Kind: tofino.KindUnsupported,
			Message: "BF Runtime gRPC serves no " + map[string]string{"port.fec_stat": "FEC counters (no BF Runtime table has them)", "packet.out": "packet-out (its stream carries no packets)"}[op] +
				": give the device options.agent_ssh (ssh://user@host, the switch's testbed agent; docs/tofino-grpc.md)"}
	}
	c.mu.Lock()
	up := c.agentUp
	c.mu.Unlock()
	if !up {
		if c.tr != nil {
			c.tr.Note("%s: BF Runtime has none; through the testbed agent over SSH (the side channel)", op)
		}
		if err := ag.EnsureAgent(ctx); err != nil {
			return fmt.Errorf("%s through the agent side channel: %w", op, err)
		}
		c.mu.Lock()
		c.agentUp = true
		c.mu.Unlock()
	}
	return ag.AgentCall(ctx, op, args, out)
}

type args0 struct{ m map[string]json.RawMessage }

// class reads an optional argument in 0..7 (a queue's priority or PFC
// class): set is false when it is not given, and the op only reads.
func (a args0) class(op, k string) (v int64, set bool, err error) {
	if !a.has(k) {
		return 0, false, nil
	}
	if v, err = a.int(op, k); err != nil {
		return 0, false, err
	}
	if v < 0 || v > 7 {
		return 0, false, badRequest(op, "%s %d: expected 0..7", k, v)
	}
	return v, true, nil
}

func (a args0) has(k string) bool { _, ok := a.m[k]; return ok }

func (a args0) int(op, k string) (int64, error) {
	v, ok := a.m[k]
	if !ok {
		return 0, badRequest(op, "missing argument %q", k)
	}
	var n int64
	if err := json.Unmarshal(v, &n); err != nil {
		return 0, badRequest(op, "argument %q: expected an integer, got %s", k, v)
	}
	return n, nil
}

func (a args0) str(op, k string) (string, error) {
	var s string
	if err := json.Unmarshal(a.m[k], &s); err != nil {
		return "", badRequest(op, "argument %q: expected a string", k)
	}
	return s, nil
}

func (a args0) bool(k string) (bool, bool) {
	var b bool
	if v, ok := a.m[k]; ok && json.Unmarshal(v, &b) == nil {
		return b, true
	}
	return false, false
}

func (a args0) ints(op, k string) (map[string]int64, error) {
	out := map[string]int64{}
	if v, ok := a.m[k]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &out); err != nil {
			return nil, badRequest(op, "argument %q: expected an object of integers", k)
		}
	}
	return out, nil
}

func badRequest(op, f string, a ...any) error {
	return &tofino.AgentError{Op: op, Kind: "bad_request", Message: fmt.Sprintf(f, a...)}
}

func notFound(op, f string, a ...any) error {
	return &tofino.AgentError{Op: op, Kind: "not_found", Message: fmt.Sprintf(f, a...)}
}

func (c *Conn) do(ctx context.Context, op string, a args0) (any, error) {
	if op == "hello" {
		p, err := c.Program(ctx)
		if err != nil {
			return nil, err
		}
		now, err := c.now(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"agent": "bfruntime-grpc", "version": tofino.AgentVersion, "program": p, "time_ns": now}, nil
	}
	in, err := c.tables(ctx)
	if err != nil {
		return nil, err
	}
	switch op {
	case "time":
		now, err := c.now(ctx)
		return map[string]any{"time_ns": now}, err
	case "time.wait":
		return c.timeWait(ctx, in, a)
	case "port.add", "port.del", "port.status", "port.mode", "port.tx_tstamp", "port.cut_through":
		return c.port(ctx, in, op, a)
	case "port.stat", "port.stat_clear":
		return c.portStat(ctx, in, op, a)
	case "tm.queue":
		return c.tmQueue(ctx, in, a)
	case "tm.queue.sched":
		return c.tmQueueSched(ctx, in, a)
	case "reg.get", "reg.set", "reg.range":
		return c.register(ctx, in, op, a)
	case "table.add", "table.mod", "table.del", "table.clear", "table.get":
		return c.table(ctx, in, op, a)
	case "pktgen.start", "pktgen.stop", "pktgen.status":
		return c.pktgen(ctx, in, op, a)
	case "mirror.add", "mirror.get", "mirror.del", "pre.node.add", "pre.node.get", "pre.node.del",
		"pre.mgid.add", "pre.mgid.get", "pre.mgid.del", "port.pfc", "tm.queue.pfc_cos", "packet.out":
		return c.setupOp(ctx, in, op, a) // setup.go
	}
	return nil, badRequest(op, "unknown op %q", op)
}

// ---- requests ----

func (c *Conn) target(pipe int64) *bfrtpb.TargetDevice {
	p := uint32(0xffff)
	if pipe >= 0 {
		p = uint32(pipe)
	}
	return &bfrtpb.TargetDevice{DeviceId: c.opts.Device, PipeId: p, Direction: 0xff, PrsrId: 0xff}
}

// key encodes key fields given by name (or bfrt_python keyword).
func key(op string, t *bfrtinfo.Table, k map[string]int64) (*bfrtpb.TableKey, error) {
	out := &bfrtpb.TableKey{}
	names := make([]string, 0, len(k))
	for n := range k {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f, ok := t.KeyField(n)
		if !ok {
			return nil, notFound(op, "table %s has no key field %q", t.Name, n)
		}
		if f.MatchType != "" && f.MatchType != "Exact" {
			return nil, badRequest(op, "table %s key %s: a %s match; the driver writes exact keys", t.Name, f.Name, f.MatchType)
		}
		b, err := bfrtinfo.Encode(uint64(k[n]), f.Bytes())
		if err != nil {
			return nil, badRequest(op, "table %s key %s: %v", t.Name, f.Name, err)
		}
		out.Fields = append(out.Fields, &bfrtpb.KeyField{FieldId: f.ID, MatchType: &bfrtpb.KeyField_Exact_{Exact: &bfrtpb.KeyField_Exact{Value: b}}})
	}
	return out, nil
}

// data encodes data fields by name: integers in their bytes, bool and
// string values as such, []byte as a stream.
func data(op string, t *bfrtinfo.Table, act *bfrtinfo.Action, d map[string]any) (*bfrtpb.TableData, error) {
	out := &bfrtpb.TableData{}
	if act != nil {
		out.ActionId = act.ID
	}
	names := make([]string, 0, len(d))
	for n := range d {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f, ok := t.DataField(n, act)
		if !ok {
			return nil, notFound(op, "table %s has no data field %q", t.Name, n)
		}
		df := &bfrtpb.DataField{FieldId: f.ID}
		switch v := d[n].(type) {
		case bool:
			df.Value = &bfrtpb.DataField_BoolVal{BoolVal: v}
		case string:
			df.Value = &bfrtpb.DataField_StrVal{StrVal: v}
		case []byte:
			df.Value = &bfrtpb.DataField_Stream{Stream: v}
		case []uint32:
			df.Value = &bfrtpb.DataField_IntArrVal{IntArrVal: &bfrtpb.DataField_IntArray{Val: v}}
		case []bool:
			df.Value = &bfrtpb.DataField_BoolArrVal{BoolArrVal: &bfrtpb.DataField_BoolArray{Val: v}}
		case int64:
			b, err := bfrtinfo.Encode(uint64(v), f.Bytes())
			if err != nil {
				return nil, badRequest(op, "table %s field %s: %v", t.Name, f.Name, err)
			}
			df.Value = &bfrtpb.DataField_Stream{Stream: b}
		case int:
			b, err := bfrtinfo.Encode(uint64(v), f.Bytes())
			if err != nil {
				return nil, badRequest(op, "table %s field %s: %v", t.Name, f.Name, err)
			}
			df.Value = &bfrtpb.DataField_Stream{Stream: b}
		default:
			return nil, fmt.Errorf("%s: table %s field %s: value %T", op, t.Name, f.Name, v)
		}
		out.Fields = append(out.Fields, df)
	}
	return out, nil
}

// update is one entry to write.
type update struct {
	typ    bfrtpb.Update_Type
	table  *bfrtinfo.Table
	pipe   int64 // -1 all pipes
	key    map[string]int64
	action *bfrtinfo.Action
	data   map[string]any
}

// write sends updates in one batch.
func (c *Conn) write(ctx context.Context, op string, us ...update) error {
	req := &bfrtpb.WriteRequest{Target: c.target(-1), ClientId: c.opts.ClientID, P4Name: c.p4Name()}
	for _, u := range us {
		k, err := key(op, u.table, u.key)
		if err != nil {
			return err
		}
		d, err := data(op, u.table, u.action, u.data)
		if err != nil {
			return err
		}
		te := &bfrtpb.TableEntry{TableId: u.table.ID, Data: d}
		if len(k.Fields) > 0 {
			te.Value = &bfrtpb.TableEntry_Key{Key: k}
		}
		if u.pipe >= 0 {
			te.EntryTgt = c.target(u.pipe)
		}
		req.Updates = append(req.Updates, &bfrtpb.Update{Type: u.typ, Entity: &bfrtpb.Entity{Entity: &bfrtpb.Entity_TableEntry{TableEntry: te}}})
	}
	c.sent("Write", req)
	if _, err := c.stub.Write(ctx, req); err != nil {
		return c.rpcErr(op, err)
	}
	return nil
}

// query is one entry (or, without a key, every entry) to read.
type query struct {
	table  *bfrtinfo.Table
	pipe   int64
	key    map[string]int64
	fields []string // data fields to read (none: all)
}

// read sends queries in one request and decodes the entries.
func (c *Conn) read(ctx context.Context, in *bfrtinfo.Info, op string, qs ...query) ([]entry, error) {
	req := &bfrtpb.ReadRequest{Target: c.target(-1), ClientId: c.opts.ClientID, P4Name: c.p4Name()}
	for _, q := range qs {
		k, err := key(op, q.table, q.key)
		if err != nil {
			return nil, err
		}
		te := &bfrtpb.TableEntry{TableId: q.table.ID, Data: &bfrtpb.TableData{}, TableFlags: &bfrtpb.TableFlags{FromHw: true}}
		if len(k.Fields) > 0 {
			te.Value = &bfrtpb.TableEntry_Key{Key: k}
		}
		if q.pipe >= 0 {
			te.EntryTgt = c.target(q.pipe)
		}
		for _, n := range q.fields {
			f, ok := q.table.DataField(n, nil)
			if !ok {
				return nil, badRequest(op, "table %s has no data field %q", q.table.Name, n)
			}
			te.Data.Fields = append(te.Data.Fields, &bfrtpb.DataField{FieldId: f.ID})
		}
		req.Entities = append(req.Entities, &bfrtpb.Entity{Entity: &bfrtpb.Entity_TableEntry{TableEntry: te}})
	}
	c.sent("Read", req)
	st, err := c.stub.Read(ctx, req)
	if err != nil {
		return nil, c.rpcErr(op, err)
	}
	var out []entry
	for {
		resp, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, c.rpcErr(op, err)
		}
		c.received("Read", resp)
		for _, ent := range resp.Entities {
			te := ent.GetTableEntry()
			if te == nil {
				continue
			}
			t, ok := in.TableByID(te.TableId)
			if !ok {
				return nil, fmt.Errorf("%s: an entry of table %d the switch's documents do not list", op, te.TableId)
			}
			e, err := decode(t, te)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", op, err)
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// readOne reads one entry and hands it to f.
func (c *Conn) readOne(ctx context.Context, in *bfrtinfo.Info, t *bfrtinfo.Table, k map[string]int64, pipe *int64, fields []string, f func(*entry) error) error {
	p := int64(-1)
	if pipe != nil {
		p = *pipe
	}
	es, err := c.read(ctx, in, "read "+t.Name, query{table: t, pipe: p, key: k, fields: fields})
	if err != nil {
		return err
	}
	if len(es) != 1 {
		return fmt.Errorf("read %s %v: %d entries, expected one", t.Name, k, len(es))
	}
	return f(&es[0])
}

// decode reads an entry: integers as uint64 (a register's values, one per
// pipe, as []uint64), bool, string, int arrays as []uint32.
func decode(t *bfrtinfo.Table, te *bfrtpb.TableEntry) (entry, error) {
	e := entry{key: map[string]uint64{}, data: map[string]any{}}
	for _, kf := range te.GetKey().GetFields() {
		f, ok := t.KeyByID(kf.FieldId)
		if !ok {
			return e, fmt.Errorf("table %s: key field %d", t.Name, kf.FieldId)
		}
		v, err := bfrtinfo.Decode(kf.GetExact().GetValue())
		if err != nil {
			return e, fmt.Errorf("table %s key %s: %w", t.Name, f.Name, err)
		}
		e.key[f.Name] = v
	}
	var act *bfrtinfo.Action
	if id := te.GetData().GetActionId(); id != 0 {
		a, ok := t.ActionByID(id)
		if !ok {
			return e, fmt.Errorf("table %s: action %d", t.Name, id)
		}
		act, e.action = a, a.Name
	}
	for _, df := range te.GetData().GetFields() {
		f, ok := t.DataByID(df.FieldId, act)
		if !ok {
			return e, fmt.Errorf("table %s: data field %d", t.Name, df.FieldId)
		}
		switch v := df.Value.(type) {
		case *bfrtpb.DataField_Stream:
			if f.Type != nil && f.Type.Type == "bytes" && (f.Type.Width > 64 || f.Repeated && !f.IsRegisterData()) {
				e.data[f.Name] = v.Stream
				continue
			}
			x, err := bfrtinfo.Decode(v.Stream)
			if err != nil {
				return e, fmt.Errorf("table %s field %s: %w", t.Name, f.Name, err)
			}
			if f.IsRegisterData() {
				l, _ := e.data[f.Name].([]uint64)
				e.data[f.Name] = append(l, x)
				continue
			}
			e.data[f.Name] = x
		case *bfrtpb.DataField_BoolVal:
			e.data[f.Name] = v.BoolVal
		case *bfrtpb.DataField_StrVal:
			e.data[f.Name] = v.StrVal
		case *bfrtpb.DataField_IntArrVal:
			e.data[f.Name] = v.IntArrVal.GetVal()
		case *bfrtpb.DataField_FloatVal:
			e.data[f.Name] = v.FloatVal
		}
	}
	return e, nil
}

func (e *entry) int(name string) int64 {
	switch v := e.data[name].(type) {
	case uint64:
		return int64(v)
	case bool:
		if v {
			return 1
		}
	}
	return 0
}

func table(op string, in *bfrtinfo.Info, name string) (*bfrtinfo.Table, error) {
	t, ok := in.Table(name)
	if !ok {
		return nil, notFound(op, "the switch has no table %s", name)
	}
	return t, nil
}

// ---- the clock ----

// simClock is the simulated switch's clock table (simlab/tofino
// bfrt_info.go): BF Runtime has none, and a simulated dataplane's time
// moves only when asked.
const simClock = "testbed.sim.clock"

// now is the switch's clock where it has one, else the driver's.
func (c *Conn) now(ctx context.Context) (int64, error) {
	in, err := c.tables(ctx)
	if err != nil {
		return 0, err
	}
	t, ok := in.Table(simClock)
	if !ok {
		return time.Since(c.local).Nanoseconds(), nil
	}
	var ns int64
	err = c.readOne(ctx, in, t, nil, nil, nil, func(e *entry) error { ns = e.int("time_ns"); return nil })
	return ns, err
}

func (c *Conn) timeWait(ctx context.Context, in *bfrtinfo.Info, a args0) (any, error) {
	until, err := a.int("time.wait", "until_ns")
	if err != nil {
		return nil, err
	}
	now, err := c.now(ctx)
	if err != nil {
		return nil, err
	}
	if time.Duration(until-now) > 60*time.Second {
		return nil, badRequest("time.wait", "until_ns is %v ahead of the clock (at most 60s)", time.Duration(until-now))
	}
	if t, ok := in.Table(simClock); ok {
		if err := c.write(ctx, "time.wait", update{typ: bfrtpb.Update_MODIFY, table: t, pipe: -1, data: map[string]any{"until_ns": until}}); err != nil {
			return nil, err
		}
		now, err := c.now(ctx)
		return map[string]any{"time_ns": now}, err
	}
	if d := time.Duration(until - now); d > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(d):
		}
	}
	now, err = c.now(ctx)
	return map[string]any{"time_ns": now}, err
}

// ---- ports ----

func (c *Conn) port(ctx context.Context, in *bfrtinfo.Info, op string, a args0) (any, error) {
	t, err := table(op, in, "$PORT")
	if err != nil {
		return nil, err
	}
	dev, err := a.int(op, "dev_port")
	if err != nil {
		return nil, err
	}
	k := map[string]int64{"$DEV_PORT": dev}
	status := func() (entry, error) {
		var e entry
		err := c.readOne(ctx, in, t, k, nil, []string{"$PORT_ENABLE", "$PORT_UP", "$SPEED", "$FEC"}, func(x *entry) error { e = *x; return nil })
		return e, err
	}
	switch op {
	case "port.add":
		sp, err := a.str(op, "speed")
		if err != nil {
			return nil, err
		}
		fec, err := a.str(op, "fec")
		if err != nil {
			return nil, err
		}
		en, _ := a.bool("enable")
		return nil, c.write(ctx, op, update{typ: bfrtpb.Update_INSERT, table: t, pipe: -1, key: k,
			data: map[string]any{"$SPEED": sp, "$FEC": fec, "$AUTO_NEGOTIATION": "PM_AN_FORCE_DISABLE", "$PORT_ENABLE": en}})
	case "port.del":
		return nil, c.write(ctx, op, update{typ: bfrtpb.Update_DELETE, table: t, pipe: -1, key: k})
	case "port.status":
		e, err := status()
		if err != nil {
			return nil, err
		}
		en, _ := e.data["$PORT_ENABLE"].(bool)
		up, _ := e.data["$PORT_UP"].(bool)
		return map[string]any{"dev_port": dev, "enabled": en, "up": up, "speed": e.data["$SPEED"], "fec": e.data["$FEC"]}, nil
	case "port.mode":
		sp, err := a.str(op, "speed")
		if err != nil {
			return nil, err
		}
		fec, err := a.str(op, "fec")
		if err != nil {
			return nil, err
		}
		e, err := status()
		if err != nil {
			return nil, err
		}
		en, _ := e.data["$PORT_ENABLE"].(bool)
		prev := map[string]any{"speed": e.data["$SPEED"], "fec": e.data["$FEC"], "enabled": en}
		changed := e.data["$SPEED"] != sp || e.data["$FEC"] != fec
		if changed {
			if err := c.write(ctx, op, update{typ: bfrtpb.Update_MODIFY, table: t, pipe: -1, key: k, data: map[string]any{"$SPEED": sp, "$FEC": fec}}); err != nil {
				return nil, err
			}
		}
		return map[string]any{"previous": prev, "changed": changed}, nil
	case "port.tx_tstamp":
		var r map[string]any
		err := c.readOne(ctx, in, t, k, nil, []string{"$TIMESTAMP_1588_VALID", "$TIMESTAMP_1588_VALUE", "$TIMESTAMP_1588_ID"}, func(e *entry) error {
			v, _ := e.data["$TIMESTAMP_1588_VALID"].(bool)
			r = map[string]any{"valid": v, "value": e.int("$TIMESTAMP_1588_VALUE"), "id": e.int("$TIMESTAMP_1588_ID")}
			return nil
		})
		return r, err
	case "port.cut_through":
		var prev bool
		if err := c.readOne(ctx, in, t, k, nil, []string{"$CUT_THROUGH_EN"}, func(e *entry) error { prev, _ = e.data["$CUT_THROUGH_EN"].(bool); return nil }); err != nil {
			return nil, err
		}
		now := prev
		if on, given := a.bool("enable"); given && on != prev {
			if err := c.write(ctx, op, update{typ: bfrtpb.Update_MODIFY, table: t, pipe: -1, key: k, data: map[string]any{"$CUT_THROUGH_EN": on}}); err != nil {
				return nil, err
			}
			now = on
		}
		return map[string]any{"previous": prev, "enabled": now}, nil
	}
	return nil, badRequest(op, "unknown op")
}

func (c *Conn) portStat(ctx context.Context, in *bfrtinfo.Info, op string, a args0) (any, error) {
	t, err := table(op, in, "$PORT_STAT")
	if err != nil {
		return nil, err
	}
	dev, err := a.int(op, "dev_port")
	if err != nil {
		return nil, err
	}
	k := map[string]int64{"$DEV_PORT": dev}
	if op == "port.stat_clear" {
		// A modify with no data fields clears every counter of the port
		// (BfRtPortStatTable::tableEntryMod).
		return nil, c.write(ctx, op, update{typ: bfrtpb.Update_MODIFY, table: t, pipe: -1, key: k})
	}
	var names []string
	if a.has("names") {
		if err := json.Unmarshal(a.m["names"], &names); err != nil || len(names) == 0 {
			return nil, badRequest(op, "argument \"names\": expected a non-empty list of counter names")
		}
		for _, n := range names {
			if _, ok := t.DataField(n, nil); !ok {
				return nil, badRequest(op, "port %d: no counter %s in $PORT_STAT", dev, n)
			}
		}
	}
	qs := []query{{table: t, pipe: -1, key: k, fields: names}}
	clock, hasClock := in.Table(simClock)
	if hasClock {
		qs = append(qs, query{table: clock, pipe: -1})
	}
	t0 := time.Since(c.local).Nanoseconds()
	es, err := c.read(ctx, in, op, qs...)
	if err != nil {
		return nil, err
	}
	t1 := time.Since(c.local).Nanoseconds()
	counters := map[string]int64{}
	ns := (t0 + t1) / 2
	for _, e := range es {
		if hasClock && len(e.key) == 0 && e.data["time_ns"] != nil {
			ns = e.int("time_ns")
			continue
		}
		for n, v := range e.data {
			if x, ok := v.(uint64); ok {
				counters[n] = int64(x)
			}
		}
	}
	if len(counters) == 0 {
		return nil, notFound(op, "port %d is not added", dev)
	}
	return map[string]any{"time_ns": ns, "counters": counters}, nil
}

// ---- traffic manager ----

func (c *Conn) tmQueue(ctx context.Context, in *bfrtinfo.Info, a args0) (any, error) {
	const op = "tm.queue"
	t, err := table(op, in, "tf1.tm.counter.queue")
	if err != nil {
		return nil, err
	}
	var v [3]int64
	for i, n := range []string{"pipe", "pg_id", "pg_queue"} {
		if v[i], err = a.int(op, n); err != nil {
			return nil, err
		}
	}
	k := map[string]int64{"pg_id": v[1], "pg_queue": v[2]}
	var r map[string]any
	err = c.readOne(ctx, in, t, k, &v[0], nil, func(e *entry) error {
		r = map[string]any{"usage_cells": e.int("usage_cells"), "watermark_cells": e.int("watermark_cells"), "drop_count_packets": e.int("drop_count_packets")}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if cl, _ := a.bool("clear_watermark"); cl {
		if err := c.write(ctx, op, update{typ: bfrtpb.Update_MODIFY, table: t, pipe: v[0], key: k, data: map[string]any{"watermark_cells": int64(0)}}); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (c *Conn) tmQueueSched(ctx context.Context, in *bfrtinfo.Info, a args0) (any, error) {
	const op = "tm.queue.sched"
	sched, err := table(op, in, "tf1.tm.queue.sched_cfg")
	if err != nil {
		return nil, err
	}
	k, pipe, err := c.queueKey(ctx, in, op, a)
	if err != nil {
		return nil, err
	}
	read := func() (int, error) {
		var p int
		err := c.readOne(ctx, in, sched, k, &pipe, []string{"max_priority"}, func(e *entry) error {
			s, _ := e.data["max_priority"].(string)
			var err error
			p, err = priority(s)
			return err
		})
		return p, err
	}
	prev, err := read()
	if err != nil {
		return nil, err
	}
	want, set, err := a.class(op, "priority")
	if err != nil {
		return nil, err
	}
	if set {
		if int(want) != prev {
			if err := c.write(ctx, op, update{typ: bfrtpb.Update_MODIFY, table: sched, pipe: pipe, key: k, data: map[string]any{"max_priority": strconv.Itoa(int(want))}}); err != nil {
				return nil, err
			}
			got, err := read()
			if err != nil {
				return nil, err
			}
			if got != int(want) {
				dev, _ := a.int(op, "dev_port") // queueKey checked both
				qid, _ := a.int(op, "qid")
				return nil, fmt.Errorf("%s: port %d queue %d: wrote priority %d, reads %d", op, dev, qid, want, got)
			}
		}
	}
	return map[string]any{"priority": prev}, nil
}

// priority reads a max_priority choice (LOW 0, HIGH 7).
func priority(s string) (int, error) {
	switch s {
	case "LOW":
		return 0, nil
	case "HIGH":
		return 7, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 7 {
		return 0, fmt.Errorf("max_priority %q: expected LOW, 0..7 or HIGH", s)
	}
	return n, nil
}

// ---- registers ----

func (c *Conn) register(ctx context.Context, in *bfrtinfo.Info, op string, a args0) (any, error) {
	name, err := a.str(op, "name")
	if err != nil {
		return nil, err
	}
	t, ok := in.Table("pipe." + name)
	if !ok || t.TableType != "Register" {
		return nil, notFound(op, "%s has no register %q", c.boundProgram(), name)
	}
	f := name + ".f1"
	if _, ok := t.DataField(f, nil); !ok {
		return nil, badRequest(op, "register %s: no field %s (registers of more than one field are not read)", name, f)
	}
	sum := func(e entry) int64 {
		var s int64
		vs, _ := e.data[f].([]uint64)
		for _, v := range vs {
			s += int64(v)
		}
		return s
	}
	switch op {
	case "reg.get":
		idx, err := a.int(op, "index")
		if err != nil {
			return nil, err
		}
		var vals []int64
		err = c.readOne(ctx, in, t, map[string]int64{"$REGISTER_INDEX": idx}, nil, nil, func(e *entry) error {
			vs, _ := e.data[f].([]uint64)
			for _, v := range vs {
				vals = append(vals, int64(v))
			}
			return nil
		})
		return map[string]any{"values": vals}, err
	case "reg.set":
		idx, err := a.int(op, "index")
		if err != nil {
			return nil, err
		}
		v, err := a.int(op, "value")
		if err != nil {
			return nil, err
		}
		return nil, c.write(ctx, op, update{typ: bfrtpb.Update_MODIFY, table: t, pipe: -1, key: map[string]int64{"$REGISTER_INDEX": idx}, data: map[string]any{f: v}})
	}
	from, err := a.int(op, "from")
	if err != nil {
		return nil, err
	}
	count, err := a.int(op, "count")
	if err != nil {
		return nil, err
	}
	if from < 0 || count < 1 || count > tofino.MaxRegisterRange {
		return nil, badRequest(op, "register %s: %d indices from %d (expected from >= 0 and 1..%d)", name, count, from, tofino.MaxRegisterRange)
	}
	// One request of count keyed reads (the agent makes one get per index
	// under one hold of its lock).
	qs := make([]query, count)
	for i := range qs {
		qs[i] = query{table: t, pipe: -1, key: map[string]int64{"$REGISTER_INDEX": from + int64(i)}}
	}
	es, err := c.read(ctx, in, op, qs...)
	if err != nil {
		return nil, err
	}
	if len(es) != int(count) {
		return nil, fmt.Errorf("%s: register %s: %d entries for %d indices", op, name, len(es), count)
	}
	vals := make([]int64, count)
	for _, e := range es {
		i := int64(e.key["$REGISTER_INDEX"]) - from
		if i < 0 || i >= count {
			return nil, fmt.Errorf("%s: register %s: an entry of index %d", op, name, e.key["$REGISTER_INDEX"])
		}
		vals[i] = sum(e)
	}
	return map[string]any{"values": vals}, nil
}

// ---- match tables ----

func (c *Conn) table(ctx context.Context, in *bfrtinfo.Info, op string, a args0) (any, error) {
	name, err := a.str(op, "name")
	if err != nil {
		return nil, err
	}
	t, ok := in.Table("pipe." + name)
	if !ok || t.TableType == "Register" {
		return nil, notFound(op, "%s has no table %q", c.boundProgram(), name)
	}
	k, err := a.ints(op, "key")
	if err != nil {
		return nil, err
	}
	switch op {
	case "table.add", "table.mod":
		an, err := a.str(op, "action")
		if err != nil {
			return nil, err
		}
		act, ok := t.Action(an)
		if !ok {
			return nil, notFound(op, "table %s has no action %q", name, an)
		}
		d, err := a.ints(op, "data")
		if err != nil {
			return nil, err
		}
		dd := map[string]any{}
		for n, v := range d {
			dd[n] = v
		}
		typ := bfrtpb.Update_INSERT
		if op == "table.mod" {
			typ = bfrtpb.Update_MODIFY
		}
		return nil, c.write(ctx, op, update{typ: typ, table: t, pipe: -1, key: k, action: act, data: dd})
	case "table.del":
		return nil, c.write(ctx, op, update{typ: bfrtpb.Update_DELETE, table: t, pipe: -1, key: k})
	case "table.clear":
		// A delete without a key deletes every entry (the Python
		// client's entry_del with no key).
		return nil, c.write(ctx, op, update{typ: bfrtpb.Update_DELETE, table: t, pipe: -1})
	}
	if a.has("key") && len(k) == 0 {
		return nil, badRequest(op, "table %s get: key: expected a non-empty object of key fields", name)
	}
	for n := range k {
		if _, ok := t.KeyField(n); !ok {
			return nil, badRequest(op, "table %s has no key field %q", name, n)
		}
	}
	es, err := c.read(ctx, in, op, query{table: t, pipe: -1})
	if err != nil {
		return nil, err
	}
	entries := []tofino.Entry{}
	for _, e := range es {
		te := tofino.Entry{Key: map[string]int64{}, Action: lastPart(e.action), Data: map[string]int64{}}
		for n, v := range e.key {
			te.Key[bfrtinfo.Keyword(n)] = int64(v)
		}
		match := true
		for n, v := range k {
			if kv, ok := te.Key[n]; !ok || kv != v {
				match = false
			}
		}
		if !match {
			continue
		}
		for n, v := range e.data {
			if x, ok := v.(uint64); ok {
				te.Data[bfrtinfo.Keyword(n)] = int64(x)
			}
		}
		entries = append(entries, te)
	}
	return map[string]any{"entries": entries}, nil
}

func lastPart(s string) string {
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// ---- packet generator ----

// Tofino 1's generator: a 16 KiB buffer per pipe, each application a
// 2 KiB slot when its frame fits (the agent's layout), the 6 B header it
// writes in place of a frame's first bytes.
const (
	pktBufferBytes = 16 << 10
	pktBufferSlot  = 2048
	pktgenHeader   = 6
	pktgenEther    = 0x88B5
)

func (c *Conn) pktgen(ctx context.Context, in *bfrtinfo.Info, op string, a args0) (any, error) {
	app, err := table(op, in, "tf1.pktgen.app_cfg")
	if err != nil {
		return nil, err
	}
	oneShot, ok := app.Action("trigger_timer_one_shot")
	if !ok {
		return nil, notFound(op, "tf1.pktgen.app_cfg has no trigger_timer_one_shot")
	}
	id, err := a.int(op, "app_id")
	if err != nil {
		return nil, err
	}
	k := map[string]int64{"app_id": id}
	switch op {
	case "pktgen.status":
		return c.pktgenStatus(ctx, in, app, k)
	case "pktgen.stop":
		// Disabled with the one-shot action whatever its trigger (a read
		// first would be one more status request, which moves the
		// simulated switch's clock): a later start writes the whole
		// configuration again.
		return nil, c.write(ctx, op, update{typ: bfrtpb.Update_MODIFY, table: app, pipe: -1, key: k, action: oneShot, data: map[string]any{"app_enable": false}})
	}
	return nil, c.pktgenStart(ctx, in, op, a, app, oneShot, id)
}

// pktgenStatus reads an application's state: enabled, packets sent, and
// done once all are (a periodic timer never is).
func (c *Conn) pktgenStatus(ctx context.Context, in *bfrtinfo.Info, app *bfrtinfo.Table, k map[string]int64) (any, error) {
	var r map[string]any
	err := c.readOne(ctx, in, app, k, nil, nil, func(e *entry) error {
		total := (e.int("batch_count_cfg") + 1) * (e.int("packets_per_batch_cfg") + 1)
		en, _ := e.data["app_enable"].(bool)
		n := e.int("pkt_counter")
		r = map[string]any{"enabled": en, "packets": n, "done": n >= total && lastPart(e.action) != "trigger_timer_periodic"}
		return nil
	})
	return r, err
}

// pktgenArgs are pktgen.start's numbers.
type pktgenArgs struct {
	port, egress, pktLen, timer, batches, perBatch int64
	jitter                                         int64  // ibg_jitter_ns (0: none)
	frame                                          []byte // buffer_hex (nil: the agent's frame)
}

// readPktgenArgs reads and checks pktgen.start's arguments.
func readPktgenArgs(op string, a args0) (pktgenArgs, error) {
	var v [6]int64
	var err error
	for i, n := range []string{"dev_port", "egress_port", "pkt_len", "timer_ns", "batches", "packets_per_batch"} {
		if v[i], err = a.int(op, n); err != nil {
			return pktgenArgs{}, err
		}
	}
	p := pktgenArgs{port: v[0], egress: v[1], pktLen: v[2], timer: v[3], batches: v[4], perBatch: v[5]}
	switch {
	case p.pktLen < 60 || p.pktLen > pktBufferBytes:
		return p, badRequest(op, "pkt_len %d: expected 60..%d", p.pktLen, pktBufferBytes)
	case p.timer < 1 || p.batches < 1 || p.perBatch < 1 || p.batches > 1<<16 || p.perBatch > 1<<16:
		return p, badRequest(op, "timer_ns %d, batches %d, packets_per_batch %d: expected positive, at most 65536 batches and packets", p.timer, p.batches, p.perBatch)
	}
	if a.has("ibg_jitter_ns") {
		if p.jitter, err = a.int(op, "ibg_jitter_ns"); err != nil {
			return p, err
		}
		if p.jitter < 0 || p.jitter > 1<<32-1 {
			return p, badRequest(op, "ibg_jitter_ns %d: expected 0..%d", p.jitter, int64(1<<32-1))
		}
	}
	if a.has("buffer_hex") {
		h, err := a.str(op, "buffer_hex")
		if err != nil {
			return p, err
		}
		if p.frame, err = hex.DecodeString(h); err != nil {
			return p, badRequest(op, "buffer_hex: %v", err)
		}
		if len(p.frame) > int(p.pktLen)-pktgenHeader {
			return p, badRequest(op, "buffer_hex: %d bytes, a %d B packet holds %d after the %d B pktgen header", len(p.frame), p.pktLen, p.pktLen-pktgenHeader, pktgenHeader)
		}
	}
	return p, nil
}

// buffer is what the generator's buffer holds for application id: the
// frame after the pktgen header, padded to the packet; without one, the
// agent's frame: broadcast, source MAC 02:74:62:<app>:<egress port>,
// EtherType 0x88B5, zeros.
func (p pktgenArgs) buffer(id int64) []byte {
	if p.frame != nil {
		return append(p.frame, make([]byte, int(p.pktLen)-pktgenHeader-len(p.frame))...)
	}
	f := make([]byte, p.pktLen)
	copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x74, 0x62, byte(id), byte(p.egress >> 8), byte(p.egress), pktgenEther >> 8, pktgenEther & 0xff})
	return f[pktgenHeader:]
}

// pktgenTrigger is the application's trigger action: the one-shot
// timer, or the one pktgen.start's trigger names.
func pktgenTrigger(op string, a args0, app *bfrtinfo.Table, oneShot *bfrtinfo.Action) (*bfrtinfo.Action, error) {
	if !a.has("trigger") {
		return oneShot, nil
	}
	tr, err := a.str(op, "trigger")
	if err != nil {
		return nil, err
	}
	if tr != "timer_one_shot" && tr != "timer_periodic" {
		return nil, badRequest(op, "trigger %q: expected timer_one_shot or timer_periodic", tr)
	}
	trigger, ok := app.Action("trigger_" + tr)
	if !ok {
		return nil, notFound(op, "tf1.pktgen.app_cfg has no trigger_%s", tr)
	}
	return trigger, nil
}

// pktgenStart configures and enables application id.
func (c *Conn) pktgenStart(ctx context.Context, in *bfrtinfo.Info, op string, a args0, app *bfrtinfo.Table, oneShot *bfrtinfo.Action, id int64) error {
	k := map[string]int64{"app_id": id}
	trigger, err := pktgenTrigger(op, a, app, oneShot)
	if err != nil {
		return err
	}
	portCfg, err := table(op, in, "tf1.pktgen.port_cfg")
	if err != nil {
		return err
	}
	buffer, err := table(op, in, "tf1.pktgen.pkt_buffer")
	if err != nil {
		return err
	}
	p, err := readPktgenArgs(op, a)
	if err != nil {
		return err
	}
	if _, err := c.do(ctx, "port.status", args0{map[string]json.RawMessage{"dev_port": json.RawMessage(strconv.FormatInt(p.egress, 10))}}); tofino.IsNotFound(err) {
		return notFound(op, "egress port %d is not added", p.egress)
	}
	pipe := p.port >> 7
	if st, err := c.pktgenStatus(ctx, in, app, k); err == nil {
		if m, _ := st.(map[string]any); m["enabled"] == true {
			return &tofino.AgentError{Op: op, Kind: "bfrt", Message: fmt.Sprintf("pktgen app %d is running (%v packets sent): stop it first", id, m["packets"])}
		}
	}
	buf := p.buffer(id)
	offset := int64(0)
	if len(buf) <= pktBufferSlot {
		offset = id * pktBufferSlot
	}
	// As the agent and Intel's tna_pktgen example: the port, the buffer,
	// the application configured disabled, then enabled alone.
	return c.write(ctx, op,
		update{typ: bfrtpb.Update_MODIFY, table: portCfg, pipe: -1, key: map[string]int64{"dev_port": p.port}, data: map[string]any{"pktgen_enable": true}},
		update{typ: bfrtpb.Update_MODIFY, table: buffer, pipe: pipe, key: map[string]int64{"pkt_buffer_offset": offset, "pkt_buffer_size": int64(len(buf))}, data: map[string]any{"buffer": buf}},
		update{typ: bfrtpb.Update_MODIFY, table: app, pipe: pipe, key: k, action: trigger, data: map[string]any{
			"timer_nanosec": p.timer, "app_enable": false, "pkt_len": int64(len(buf)), "pkt_buffer_offset": offset,
			"pipe_local_source_port": p.port & 0x7f, "increment_source_port": false,
			"batch_count_cfg": p.batches - 1, "packets_per_batch_cfg": p.perBatch - 1,
			"ibg": p.timer, "ibg_jitter": p.jitter, "ipg": p.timer, "ipg_jitter": int64(0),
			"batch_counter": int64(0), "pkt_counter": int64(0), "trigger_counter": int64(0)}},
		update{typ: bfrtpb.Update_MODIFY, table: app, pipe: pipe, key: k, action: trigger, data: map[string]any{"app_enable": true}},
	)
}

// queueKey finds the key of the queue an op names by dev_port and qid, as
// bf_rt_tm_tf1.json describes tf1.tm.port.cfg: the port's pg_id, and
// egress_qid_queues[qid] as pg_queue; the pipe is dev_port>>7.
func (c *Conn) queueKey(ctx context.Context, in *bfrtinfo.Info, op string, a args0) (map[string]int64, int64, error) {
	cfg, err := table(op, in, "tf1.tm.port.cfg")
	if err != nil {
		return nil, 0, err
	}
	dev, err := a.int(op, "dev_port")
	if err != nil {
		return nil, 0, err
	}
	qid, err := a.int(op, "qid")
	if err != nil {
		return nil, 0, err
	}
	if qid < 0 || qid > 7 {
		return nil, 0, badRequest(op, "qid %d: expected 0..7", qid)
	}
	var pg, pq int64
	err = c.readOne(ctx, in, cfg, map[string]int64{"dev_port": dev}, nil, []string{"pg_id", "egress_qid_queues"}, func(e *entry) error {
		qs, _ := e.data["egress_qid_queues"].([]uint32)
		if int(qid) >= len(qs) {
			return notFound(op, "port %d: egress_qid_queues has %d queues", dev, len(qs))
		}
		pg, pq = e.int("pg_id"), int64(qs[qid])
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return map[string]int64{"pg_id": pg, "pg_queue": pq}, dev >> 7, nil
}
