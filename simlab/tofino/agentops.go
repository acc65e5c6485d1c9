package tofino

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"

	lg "testbed/p4/linkguardian"
)

// The agent protocol's ops (dut/tofino/agent/PROTOCOL.md) as a dispatch
// table, as simlab/wire/scpi keeps an instrument's SCPI commands: one entry
// per op string, naming its handler and whether it runs with the switch's
// lock held. Adding an op is its handler and one entry here.

// opCall is one request as a handler sees it.
type opCall struct {
	op   string
	args map[string]json.RawMessage
	// now is the dataplane's clock, read before t.mu was taken (locked
	// ops only).
	now time.Duration
}

// agentOp is an entry of agentOps.
type agentOp struct {
	// locked runs the handler with t.mu held. Lock order: the dataplane
	// before a switch, never the reverse, so a handler that drives the
	// dataplane (advances its clock, starts or stops an application) is
	// not locked and takes t.mu itself where it needs it.
	locked bool
	run    func(t *Tofino, c opCall) (any, error)
}

// agentOps is read only after initialisation.
var agentOps = map[string]agentOp{
	"hello": {locked: true, run: (*Tofino).opHello},
	"time":  {run: (*Tofino).opTime},
	// time.wait advances the dataplane's clock.
	"time.wait": {run: (*Tofino).opTimeWait},

	"port.add":         {locked: true, run: (*Tofino).opPortAdd},
	"port.del":         {locked: true, run: (*Tofino).opPortDel},
	"port.status":      {run: (*Tofino).opPortStatus}, // reads the dataplane's optics
	"port.stat":        {locked: true, run: (*Tofino).opPortStat},
	"port.stat_clear":  {locked: true, run: (*Tofino).opPortStat},
	"port.mode":        {locked: true, run: (*Tofino).opPortMode},       // fec.go
	"port.cut_through": {locked: true, run: (*Tofino).opPortCutThrough}, // fec.go
	"port.tx_tstamp":   {locked: true, run: (*Tofino).opPortTxTstamp},   // fec.go
	"port.fec_stat":    {run: (*Tofino).opPortFECStat},                  // fec.go; takes its locks

	"pktgen.start":  {run: (*Tofino).opPktgenStart},
	"pktgen.stop":   {run: (*Tofino).opPktgenStop},
	"pktgen.status": {run: (*Tofino).opPktgenStatus},

	"tm.queue":       {run: (*Tofino).opTMQueue}, // takes the dataplane's lock, then t.mu
	"tm.queue.sched": {locked: true, run: (*Tofino).opTMQueueSched},

	"reg.get":   {locked: true, run: (*Tofino).opReg},
	"reg.set":   {locked: true, run: (*Tofino).opReg},
	"reg.range": {run: (*Tofino).opRegRange}, // regrange.go; takes t.mu

	"table.add":   {locked: true, run: (*Tofino).opTableWrite},
	"table.mod":   {locked: true, run: (*Tofino).opTableWrite},
	"table.del":   {locked: true, run: (*Tofino).opTableWrite},
	"table.clear": {locked: true, run: (*Tofino).opTableWrite},
	"table.get":   {locked: true, run: (*Tofino).opTableGet},

	// The fixed-function setup a program relies on (lgsetup.go).
	"mirror.add":       {locked: true, run: (*Tofino).opSetup},
	"mirror.get":       {locked: true, run: (*Tofino).opSetup},
	"mirror.del":       {locked: true, run: (*Tofino).opSetup},
	"pre.node.add":     {locked: true, run: (*Tofino).opSetup},
	"pre.node.get":     {locked: true, run: (*Tofino).opSetup},
	"pre.node.del":     {locked: true, run: (*Tofino).opSetup},
	"pre.mgid.add":     {locked: true, run: (*Tofino).opSetup},
	"pre.mgid.get":     {locked: true, run: (*Tofino).opSetup},
	"pre.mgid.del":     {locked: true, run: (*Tofino).opSetup},
	"port.pfc":         {locked: true, run: (*Tofino).opSetup},
	"tm.queue.pfc_cos": {locked: true, run: (*Tofino).opSetup},
	"packet.out":       {locked: true, run: (*Tofino).opSetup},
}

// handle serves one request of the agent protocol.
func (t *Tofino) handle(req agentReq) (any, error) {
	defer t.noteChange(req.Op) // stardust_dp.go
	op, ok := agentOps[req.Op]
	if !ok {
		return nil, badReq("unknown op %q", req.Op)
	}
	c := opCall{op: req.Op, args: req.Args}
	if !op.locked {
		return op.run(t, c)
	}
	c.now = t.dp.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	return op.run(t, c)
}

func (t *Tofino) opHello(c opCall) (any, error) {
	return map[string]any{"agent": "testbed-bfrt-agent", "version": "1", "program": t.program, "time_ns": int64(c.now)}, nil
}

func (t *Tofino) opTime(opCall) (any, error) {
	return map[string]any{"time_ns": int64(t.dp.Now())}, nil
}

func (t *Tofino) opTimeWait(c opCall) (any, error) {
	until, err := argInt(c.args, "until_ns")
	if err != nil {
		return nil, err
	}
	now := t.dp.Now()
	if time.Duration(until) > now+60*time.Second {
		return nil, badReq("until_ns is %v ahead of the clock (at most 60s)", time.Duration(until)-now)
	}
	if err := t.dp.advance(time.Duration(until)); err != nil {
		return nil, err
	}
	return map[string]any{"time_ns": int64(t.dp.Now())}, nil
}

// app is the configured packet-generator application the call's app_id
// names.
func (t *Tofino) app(c opCall) (*pktgenApp, error) {
	id, err := argInt(c.args, "app_id")
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	app, ok := t.apps[int(id)]
	t.mu.Unlock()
	if !ok {
		return nil, notFound("pktgen app %d is not configured", id)
	}
	return app, nil
}

func (t *Tofino) opPktgenStatus(c opCall) (any, error) {
	app, err := t.app(c)
	if err != nil {
		return nil, err
	}
	if app.periodic {
		return t.dp.timerState(app), nil // lgsetup.go
	}
	if active, _, _ := t.dp.appState(app); active {
		// Generation proceeds in simulated time while it is watched.
		if err := t.dp.advance(t.dp.Now() + 2*time.Millisecond); err != nil {
			return nil, err
		}
	}
	active, done, sent := t.dp.appState(app)
	return map[string]any{"enabled": active, "packets": sent, "done": done}, nil
}

func (t *Tofino) opPktgenStart(c opCall) (any, error) { return t.pktgenStart(c.args) }

func (t *Tofino) opPktgenStop(c opCall) (any, error) {
	app, err := t.app(c)
	if err != nil {
		return nil, err
	}
	// Settled at once: what was in flight has landed or is discarded.
	t.dp.stopApp(app)
	t.dp.disableApp(app)
	return nil, nil
}

func (t *Tofino) opPortStatus(c opCall) (any, error) {
	dev, err := argInt(c.args, "dev_port")
	if err != nil {
		return nil, err
	}
	p := t.port(int(dev))
	if p == nil {
		return nil, notFound("port %d is not added", dev)
	}
	t.dp.mu.Lock() // portUp reads the clock a scenario's optics follow
	up := t.dp.portUp(t, int(dev))
	t.dp.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	return map[string]any{"dev_port": dev, "enabled": p.enabled, "up": up, "speed": fmt.Sprintf("BF_SPEED_%dG", p.gbps), "fec": p.fec}, nil
}

func (t *Tofino) opPortAdd(c opCall) (any, error) {
	dev, err := argInt(c.args, "dev_port")
	if err != nil {
		return nil, err
	}
	sp, err := argStr(c.args, "speed")
	if err != nil {
		return nil, err
	}
	fec, err := argStr(c.args, "fec")
	if err != nil {
		return nil, err
	}
	g, ok := speedGbps[sp]
	if !ok {
		return nil, badReq("speed %q", sp)
	}
	if fec != "BF_FEC_TYP_NONE" && fec != "BF_FEC_TYP_RS" && fec != "BF_FEC_TYP_FC" {
		return nil, badReq("fec %q", fec)
	}
	if _, exists := t.ports[int(dev)]; exists {
		return nil, fmt.Errorf("port.add: dev_port %d: Already exists (BF_ALREADY_EXISTS)", dev)
	}
	t.ports[int(dev)] = &simPort{dev: int(dev), gbps: g, fec: fec, enabled: true, counters: map[string]int64{}}
	return nil, nil
}

func (t *Tofino) opPortDel(c opCall) (any, error) {
	dev, err := argInt(c.args, "dev_port")
	if err != nil {
		return nil, err
	}
	if _, ok := t.ports[int(dev)]; !ok {
		return nil, notFound("port %d is not added", dev)
	}
	delete(t.ports, int(dev))
	return nil, nil
}

// opPortStat is port.stat and port.stat_clear.
func (t *Tofino) opPortStat(c opCall) (any, error) {
	dev, err := argInt(c.args, "dev_port")
	if err != nil {
		return nil, err
	}
	p, ok := t.ports[int(dev)]
	if !ok {
		return nil, notFound("port %d is not added", dev)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.op == "port.stat_clear" {
		p.counters = map[string]int64{}
		return nil, nil
	}
	var names []string
	if v, ok := c.args["names"]; ok {
		if err := json.Unmarshal(v, &names); err != nil || len(names) == 0 {
			return nil, badReq("argument \"names\": expected a non-empty list of counter names, got %s", v)
		}
	}
	cs := map[string]int64{}
	for _, n := range portStatNames {
		cs[n] = p.counters[n]
	}
	cs["$OctetsReceivedinGoodFrames"] = p.counters["$OctetsReceived"] * cs["$FramesReceivedOK"] / max(1, cs["$FramesReceivedAll"])
	cs["$PriorityPauseFrames"] = p.counters["$FramesReceivedPriPause"]
	if names != nil {
		sel := make(map[string]int64, len(names))
		for _, n := range names {
			v, ok := cs[n]
			if !ok {
				return nil, badReq("port %d: no counter %s in $PORT_STAT", dev, n)
			}
			sel[n] = v
		}
		cs = sel
	}
	return map[string]any{"time_ns": int64(c.now), "counters": cs}, nil
}

// opTMQueue is tm.queue: a queue's depth, watermark and drops, its
// watermark cleared after the read when asked. A queue that shows a
// model's Tx buffer queue asks the model now (txqueue.go), under the
// dataplane's lock: it takes that lock first, then t.mu (the lock order).
func (t *Tofino) opTMQueue(c opCall) (any, error) {
	if t.dp != nil {
		t.dp.mu.Lock()
		defer t.dp.mu.Unlock()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	pipe, err := argInt(c.args, "pipe")
	if err != nil {
		return nil, err
	}
	pg, err := argInt(c.args, "pg_id")
	if err != nil {
		return nil, err
	}
	pq, err := argInt(c.args, "pg_queue")
	if err != nil {
		return nil, err
	}
	dev := int(pipe<<7 | pg<<2 | pq/8)
	q := t.queues[[2]int{dev, int(pq % 8)}]
	if q == nil {
		q = &simQueue{}
	}
	q.catchUp()
	res := map[string]any{"usage_cells": ceilDiv(q.usage, lg.CellBytes), "watermark_cells": ceilDiv(q.watermark, lg.CellBytes), "drop_count_packets": q.drops}
	if cl, ok := c.args["clear_watermark"]; ok && string(cl) == "true" {
		q.watermark = q.usage
	}
	return res, nil
}

func (t *Tofino) opTMQueueSched(c opCall) (any, error) { return t.queueSched(c.args) }

// opReg is reg.get and reg.set.
func (t *Tofino) opReg(c opCall) (any, error) {
	name, err := argStr(c.args, "name")
	if err != nil {
		return nil, err
	}
	idx, err := argInt(c.args, "index")
	if err != nil {
		return nil, err
	}
	r, ok := t.regs[name]
	if !ok {
		return nil, notFound("bfrt.%s.pipe has no register %q", t.program, name)
	}
	if n := regSize(name); idx < 0 || idx >= int64(n) {
		return nil, badReq("register %s has %d entries: index %d outside 0..%d", name, n, idx, n-1) // stardust.go
	}
	if c.op == "reg.set" {
		v, err := argInt(c.args, "value")
		if err != nil {
			return nil, err
		}
		r[int(idx)] = v
		return nil, nil
	}
	// One value per pipe; the program's state lives in pipe 0's copy
	// for the ports of this bench, the others read 0.
	return map[string]any{"values": []int64{r[int(idx)], 0, 0, 0}}, nil
}

// table is the program's table the call names, and the call's key.
func (t *Tofino) table(c opCall) (name string, entries []simEntry, key map[string]int64, err error) {
	name, err = argStr(c.args, "name")
	if err != nil {
		return "", nil, nil, err
	}
	entries, ok := t.tables[name]
	if !ok {
		return "", nil, nil, notFound("bfrt.%s.pipe has no table %q", t.program, name)
	}
	key, err = argMap(c.args, "key")
	if err != nil {
		return "", nil, nil, err
	}
	return name, entries, key, nil
}

func (t *Tofino) opTableGet(c opCall) (any, error) {
	name, entries, key, err := t.table(c)
	if err != nil {
		return nil, err
	}
	// With a key, only the entries whose key has each of its fields at
	// its value (PROTOCOL.md: the agent filters the table's read the same
	// way).
	if raw, keyed := c.args["key"]; keyed && string(raw) != "null" && len(key) == 0 {
		return nil, badReq("table %s get: key: expected a non-empty object of key fields", name)
	}
	out := []simEntry{}
	for _, e := range entries {
		if keyMatches(e.Key, key) {
			out = append(out, e)
		}
	}
	return map[string]any{"entries": out}, nil
}

// opTableWrite is table.add, table.mod, table.del and table.clear.
func (t *Tofino) opTableWrite(c opCall) (any, error) {
	name, entries, key, err := t.table(c)
	if err != nil {
		return nil, err
	}
	if c.op == "table.clear" {
		t.tables[name] = nil
		delete(t.keys, name)
		return nil, nil
	}
	ks := keyString(key)
	idx := -1
	if t.keys[name][ks] {
		// From the end: a run's undo deletes its entries last first.
		for i := len(entries) - 1; i >= 0; i-- {
			if maps.Equal(entries[i].Key, key) {
				idx = i
				break
			}
		}
	}
	if c.op == "table.del" {
		if idx < 0 {
			return nil, notFound("table %s has no entry %v", name, key)
		}
		t.tables[name] = append(entries[:idx:idx], entries[idx+1:]...)
		delete(t.keys[name], ks)
		return nil, nil
	}
	action, err := argStr(c.args, "action")
	if err != nil {
		return nil, err
	}
	if !tableAction(t.program, name, action) {
		return nil, notFound("table %s has no action %q (add_with_%s)", name, action, action)
	}
	data, err := argMap(c.args, "data")
	if err != nil {
		return nil, err
	}
	if c.op == "table.mod" {
		// mod_with_<action>: the entry keeps its key and place and takes
		// the new action and data; a key with no entry is
		// BF_OBJECT_NOT_FOUND.
		if idx < 0 {
			return nil, notFound("table %s has no entry %v to modify", name, key)
		}
		entries[idx] = simEntry{Key: entries[idx].Key, Action: action, Data: data}
		return nil, nil
	}
	if idx >= 0 {
		return nil, fmt.Errorf("table %s: entry %v already exists (BF_ALREADY_EXISTS)", name, key)
	}
	t.tables[name] = append(entries, simEntry{Key: key, Action: action, Data: data})
	if t.keys[name] == nil {
		t.keys[name] = map[string]bool{}
	}
	t.keys[name][ks] = true
	return nil, nil
}
