package tofino

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	lg "testbed/p4/linkguardian"
)

// The fixed-function configuration a P4 program relies on besides its
// tables and registers: mirror sessions (bfrt.mirror.cfg), the packet
// replication engine's nodes and groups (bfrt.pre.node, bfrt.pre.mgid),
// PFC per port ($PORT's $RX_PFC_EN_MAP and $TX_PFC_EN_MAP), and packets
// sent from the CPU port. A bf_switchd restart forgets all of it, as the
// hardware's. The dataplane (dataplane.go) reads it as the chip would: no
// Tx-buffer session, no copy kept; no group, no replica; PFC reception
// off, no pause honoured; no timer application, no pause sent.

// setupState is the fixed-function configuration, guarded by the switch's mu.
type setupState struct {
	mirrors map[int]mirrorSession
	nodes   map[int]mcNode
	groups  map[int][]int // mgid -> node ids
	pfc     map[int][2]int64
	qcos    map[[2]int]int64 // (dev port, qid) -> the PFC class the queue honours (default 0)
	// injected counts the LinkGuardian frames sent from the CPU port that
	// the program routed into a queue: (dev port, qid) -> frames by type.
	injected map[[2]int]map[int]int
}

type mirrorSession struct {
	SID       int64  `json:"sid"`
	Direction string `json:"direction"`
	Enable    bool   `json:"session_enable"`
	Port      int64  `json:"ucast_egress_port"`
	Queue     int64  `json:"egress_port_queue"`
	MaxPktLen int64  `json:"max_pkt_len"`
}

// mcNode is a multicast node as the PRE keeps it. Its ports are a port
// bitmap (bf_mc_port_map_t): read back in ascending dev port order, each
// once, whatever order the add gave them in (open-p4studio
// bf_rt_pre_table_data_impl.hpp, setPortBitmap, walks the bitmap's bits
// from the lowest). Its handle is the lowest free id of the multicast
// manager's node allocator when it was added (mc_mgr_node.c,
// mc_mgr_node_alloc; mc_mgr_handle.c, bf_id_allocator_allocate), the key
// a group's members are kept and read back by (mc_mgr.c,
// mc_mgr_mgrp_get_first_node_mbr walks the group's node_mbrs map).
type mcNode struct {
	ID       int64   `json:"node_id"`
	RID      int64   `json:"rid"`
	DevPorts []int64 `json:"dev_ports"`
	handle   int
}

func newSetupState() *setupState {
	return &setupState{mirrors: map[int]mirrorSession{}, nodes: map[int]mcNode{}, groups: map[int][]int{},
		pfc: map[int][2]int64{}, qcos: map[[2]int]int64{}, injected: map[[2]int]map[int]int{}}
}

// Limits of Tofino 1's fixed-function blocks (bf_rt_mirror_tf1.json: sid
// 0..1023 with 0 reserved; bf_rt_pre_tf1.json: MGID 1..65535 with 0 not
// usable, RID 16 bits).
const (
	maxMirrorSID = 1023
	maxMGID      = 65535
	maxPktLenCap = 16384
)

func argInts(a map[string]json.RawMessage, k string) ([]int64, error) {
	v, ok := a[k]
	if !ok {
		return nil, badReq("missing argument %q", k)
	}
	var out []int64
	if err := json.Unmarshal(v, &out); err != nil {
		return nil, badReq("argument %q: expected a list of integers, got %s", k, v)
	}
	return out, nil
}

// opSetup serves mirror.*, pre.*, port.pfc, tm.queue.pfc_cos and
// packet.out, with t.mu held.
func (t *Tofino) opSetup(c opCall) (any, error) {
	if t.program == "" {
		return nil, fmt.Errorf("%s: no program running", c.op)
	}
	return t.setupLocked(agentReq{Op: c.op, Args: c.args})
}

// setupOps are the fixed-function operations, each with the op's name
// (a get and a del share a function), its arguments and the setup state,
// with t.mu held.
var setupOps = map[string]func(t *Tofino, op string, a map[string]json.RawMessage) (any, error){
	"mirror.add":       (*Tofino).mirrorAdd,
	"mirror.get":       (*Tofino).mirrorGetDel,
	"mirror.del":       (*Tofino).mirrorGetDel,
	"pre.node.add":     (*Tofino).preNodeAdd,
	"pre.node.get":     (*Tofino).preNodeGetDel,
	"pre.node.del":     (*Tofino).preNodeGetDel,
	"pre.mgid.add":     (*Tofino).preMgidAdd,
	"pre.mgid.get":     (*Tofino).preMgidGetDel,
	"pre.mgid.del":     (*Tofino).preMgidGetDel,
	"port.pfc":         (*Tofino).portPFC,
	"tm.queue.pfc_cos": (*Tofino).queuePFCCos,
	"packet.out":       (*Tofino).packetOut,
}

func (t *Tofino) setupLocked(req agentReq) (any, error) {
	f, ok := setupOps[req.Op]
	if !ok {
		return nil, badReq("unknown op %q", req.Op)
	}
	return f(t, req.Op, req.Args)
}

// mirrorAdd is mirror.add: a normal session, enabled
// (bfrt.mirror.cfg.add_with_normal).
func (t *Tofino) mirrorAdd(_ string, a map[string]json.RawMessage) (any, error) {
	var m mirrorSession
	var err error
	if m.SID, err = argInt(a, "sid"); err != nil {
		return nil, err
	}
	if m.Direction, err = argStr(a, "direction"); err != nil {
		return nil, err
	}
	if m.Port, err = argInt(a, "ucast_egress_port"); err != nil {
		return nil, err
	}
	if m.Queue, err = argInt(a, "egress_port_queue"); err != nil {
		return nil, err
	}
	if m.MaxPktLen, err = argInt(a, "max_pkt_len"); err != nil {
		return nil, err
	}
	m.Enable = true
	if err := m.check(); err != nil {
		return nil, err
	}
	if _, dup := t.setup.mirrors[int(m.SID)]; dup {
		return nil, fmt.Errorf("mirror.cfg: sid %d: Already exists (BF_ALREADY_EXISTS)", m.SID)
	}
	t.setup.mirrors[int(m.SID)] = m
	return nil, nil
}

// check holds a session to bf_rt_mirror_tf1.json's ranges.
func (m mirrorSession) check() error {
	switch {
	case m.SID < 1 || m.SID > maxMirrorSID:
		return badReq("sid %d: expected 1..%d", m.SID, maxMirrorSID)
	case m.Direction != "INGRESS" && m.Direction != "EGRESS" && m.Direction != "BOTH":
		return badReq("direction %q: expected INGRESS, EGRESS or BOTH", m.Direction)
	case m.Port < 0 || m.Port > 511:
		return badReq("ucast_egress_port %d: expected 0..511", m.Port)
	case m.Queue < 0 || m.Queue > 31:
		return badReq("egress_port_queue %d: expected 0..31", m.Queue)
	case m.MaxPktLen < 1 || m.MaxPktLen > maxPktLenCap:
		return badReq("max_pkt_len %d: expected 1..%d", m.MaxPktLen, maxPktLenCap)
	}
	return nil
}

// mirrorGetDel is mirror.get and mirror.del.
func (t *Tofino) mirrorGetDel(op string, a map[string]json.RawMessage) (any, error) {
	st := t.setup
	sid, err := argInt(a, "sid")
	if err != nil {
		return nil, err
	}
	m, ok := st.mirrors[int(sid)]
	if !ok {
		return nil, notFound("mirror session %d is not configured", sid)
	}
	if op == "mirror.del" {
		delete(st.mirrors, int(sid))
		// A frame that mirrored itself back into the session's
		// queue (the dummy, the explicit ACK) leaves once more and
		// is gone.
		delete(st.injected, [2]int{int(m.Port), int(m.Queue)})
		return nil, nil
	}
	return m, nil
}

// preNodeAdd is pre.node.add (bfrt.pre.node.add).
func (t *Tofino) preNodeAdd(_ string, a map[string]json.RawMessage) (any, error) {
	var n mcNode
	var err error
	if n.ID, err = argInt(a, "node_id"); err != nil {
		return nil, err
	}
	if n.RID, err = argInt(a, "rid"); err != nil {
		return nil, err
	}
	if n.DevPorts, err = argInts(a, "dev_ports"); err != nil {
		return nil, err
	}
	if n.ID < 0 || n.ID > 1<<32-1 || n.RID < 0 || n.RID > 0xffff {
		return nil, badReq("node %d rid %d: expected a 32-bit node id and a 16-bit rid", n.ID, n.RID)
	}
	for _, p := range n.DevPorts {
		if p < 0 || p > 511 {
			return nil, badReq("node %d: dev port %d outside 0..511", n.ID, p)
		}
	}
	if _, dup := t.setup.nodes[int(n.ID)]; dup {
		return nil, fmt.Errorf("pre.node: node %d: Already exists (BF_ALREADY_EXISTS)", n.ID)
	}
	slices.Sort(n.DevPorts)
	n.DevPorts = slices.Compact(n.DevPorts)
	n.handle = t.setup.freeNodeHandle()
	t.setup.nodes[int(n.ID)] = n
	return nil, nil
}

// freeNodeHandle is the lowest node handle no node holds.
func (st *setupState) freeNodeHandle() int {
	used := map[int]bool{}
	for _, n := range st.nodes {
		used[n.handle] = true
	}
	h := 0
	for used[h] {
		h++
	}
	return h
}

// preNodeGetDel is pre.node.get and pre.node.del: a node a group holds
// cannot go first.
func (t *Tofino) preNodeGetDel(op string, a map[string]json.RawMessage) (any, error) {
	st := t.setup
	id, err := argInt(a, "node_id")
	if err != nil {
		return nil, err
	}
	n, ok := st.nodes[int(id)]
	if !ok {
		return nil, notFound("multicast node %d does not exist", id)
	}
	if op == "pre.node.get" {
		return n, nil
	}
	for g, ids := range st.groups {
		if slices.Contains(ids, int(id)) {
			return nil, fmt.Errorf("pre.node: node %d is a member of group %d: delete the group first (BF_IN_USE)", id, g)
		}
	}
	delete(st.nodes, int(id))
	return nil, nil
}

// preMgidAdd is pre.mgid.add: every node must exist.
func (t *Tofino) preMgidAdd(_ string, a map[string]json.RawMessage) (any, error) {
	st := t.setup
	mgid, err := argInt(a, "mgid")
	if err != nil {
		return nil, err
	}
	ids, err := argInts(a, "node_ids")
	if err != nil {
		return nil, err
	}
	if mgid < 1 || mgid > maxMGID {
		return nil, badReq("mgid %d: expected 1..%d", mgid, maxMGID)
	}
	if _, dup := st.groups[int(mgid)]; dup {
		return nil, fmt.Errorf("pre.mgid: group %d: Already exists (BF_ALREADY_EXISTS)", mgid)
	}
	var members []int
	for _, id := range ids {
		if _, ok := st.nodes[int(id)]; !ok {
			return nil, notFound("pre.mgid: group %d: node %d does not exist", mgid, id)
		}
		members = append(members, int(id))
	}
	st.groups[int(mgid)] = members
	return nil, nil
}

// preMgidGetDel is pre.mgid.get and pre.mgid.del.
func (t *Tofino) preMgidGetDel(op string, a map[string]json.RawMessage) (any, error) {
	st := t.setup
	mgid, err := argInt(a, "mgid")
	if err != nil {
		return nil, err
	}
	ids, ok := st.groups[int(mgid)]
	if !ok {
		return nil, notFound("multicast group %d does not exist", mgid)
	}
	if op == "pre.mgid.del" {
		delete(st.groups, int(mgid))
		return nil, nil
	}
	// The members in their nodes' handle order, not the add's.
	out := append([]int{}, ids...)
	slices.SortStableFunc(out, func(a, b int) int { return st.nodes[a].handle - st.nodes[b].handle })
	return map[string]any{"mgid": mgid, "node_ids": out}, nil
}

// portPFC is port.pfc: both maps set, or neither (a read).
func (t *Tofino) portPFC(_ string, a map[string]json.RawMessage) (any, error) {
	st := t.setup
	dev, err := argInt(a, "dev_port")
	if err != nil {
		return nil, err
	}
	if _, ok := t.ports[int(dev)]; !ok {
		return nil, notFound("port %d is not added", dev)
	}
	prev := st.pfc[int(dev)]
	now := prev
	_, hasRx := a["rx_map"]
	_, hasTx := a["tx_map"]
	if hasRx != hasTx {
		return nil, badReq("port.pfc: give both rx_map and tx_map, or neither to read")
	}
	if hasRx {
		if now[0], err = argInt(a, "rx_map"); err != nil {
			return nil, err
		}
		if now[1], err = argInt(a, "tx_map"); err != nil {
			return nil, err
		}
		if now[0] < 0 || now[0] > 0xff || now[1] < 0 || now[1] > 0xff {
			return nil, badReq("port.pfc: maps %#x, %#x: expected 8-bit class maps", now[0], now[1])
		}
		st.pfc[int(dev)] = now
	}
	return map[string]any{"previous": map[string]int64{"rx_map": prev[0], "tx_map": prev[1]}, "rx_map": now[0], "tx_map": now[1]}, nil
}

// queuePFCCos is tm.queue.pfc_cos: with cos a write, without a read.
func (t *Tofino) queuePFCCos(_ string, a map[string]json.RawMessage) (any, error) {
	k, err := tmQueueKey(a)
	if err != nil {
		return nil, err
	}
	prev := t.setup.qcos[k]
	if _, set := a["cos"]; set {
		cos, err := argInt(a, "cos")
		if err != nil {
			return nil, err
		}
		if cos < 0 || cos > 7 {
			return nil, badReq("cos %d: expected 0..7", cos)
		}
		t.setup.qcos[k] = cos
	}
	return map[string]any{"cos": prev}, nil
}

// packetOut is packet.out.
func (t *Tofino) packetOut(_ string, a map[string]json.RawMessage) (any, error) {
	h, err := argStr(a, "frame_hex")
	if err != nil {
		return nil, err
	}
	f, err := hex.DecodeString(h)
	if err != nil || len(f) < 60 || len(f) > 9216 || h != strings.ToLower(h) {
		return nil, badReq("frame_hex: expected lowercase hex of a 60..9216 byte frame without FCS")
	}
	t.packetOutLocked(f)
	return nil, nil
}

// packetOutLocked is a frame from the CPU port entering the program's
// ingress: the LinkGuardian programs route it by destination MAC through
// l2_forward (no entry: dropped, l2_miss) and, when it is one of their
// own frames, it settles in the queue the entry names.
func (t *Tofino) packetOutLocked(f []byte) {
	dst, kind, ok := lg.ParseInjected(f)
	if !ok || (t.program != lg.ProgramSender && t.program != lg.ProgramReceiver) {
		return
	}
	for _, e := range t.tables[lg.TableL2Forward] {
		if e.Key[lg.KeyDstAddr] != dst || e.Action != lg.ActionForwardToQueue {
			continue
		}
		k := [2]int{int(e.Data[lg.ParamPort]), int(e.Data[lg.ParamQID])}
		if t.setup.injected[k] == nil {
			t.setup.injected[k] = map[int]int{}
		}
		t.setup.injected[k][kind]++
		return
	}
}

// lgSetup is what the chip's fixed-function configuration does for a
// protected link: how many replicas a retransmission of copies gets,
// whether copies are kept at all, whether the sender honours the
// receiver's pauses; why names what is missing (for the transcript of
// a run that does not protect).
type lgSetup struct {
	keepCopy     bool
	notify       bool
	replicas     int
	backpressure bool
	dummy, ack   bool // the sender's dummy, the receiver's explicit ACK circulate
	timer        bool // the receiver's timer runs: ackNoTimeout, PFC frames
	why          []string
}

// circulating reports whether a frame of kind, injected from the CPU port
// into port's lowest-priority queue, still circulates there: it mirrors
// itself back into that queue each time it leaves (session 0x180|idx,
// sender.p4 and receiver.p4), so without that session it left once and
// is gone. With t.mu held.
func (t *Tofino) circulating(port, kind int) bool {
	m, ok := t.setup.mirrors[lg.SessionLowPrio|lg.PortIndex(port)]
	if !ok || !m.Enable || m.Direction == "INGRESS" || int(m.Port) != port || m.Queue != lg.QueueLowPrio {
		return false
	}
	return t.setup.injected[[2]int{port, lg.QueueLowPrio}][kind] > 0
}

// notificationMinBytes is a loss notification as the receiver mirrors it:
// Ethernet (14) + LinkGuardian (3) + loss header (3).
const notificationMinBytes = 14 + lg.HeaderBytes + 3

// linkSetup reads the configuration a protected link from tx's txPort to
// rx's rxPort depends on. copies is what set_retx_copies asks for (0: no
// entry, one unicast copy). Takes both switches' locks in turn.
func linkSetup(tx *Tofino, txPort int, rx *Tofino, rxPort int, copies int) lgSetup {
	var s lgSetup
	tx.mu.Lock()
	m, ok := tx.setup.mirrors[lg.SessionTxBuffer|lg.PortIndex(txPort)]
	s.keepCopy = ok && m.Enable && m.Direction != "INGRESS" && m.Port == lg.RecircPort && m.Queue == lg.QueueTxBuffer
	if !s.keepCopy {
		s.why = append(s.why, fmt.Sprintf("sender: no mirror session %#x to port %d queue %d (the Tx buffer)", lg.SessionTxBuffer|lg.PortIndex(txPort), lg.RecircPort, lg.QueueTxBuffer))
	}
	if copies == 0 {
		s.replicas = 1 // retx_one_copy: unicast
	} else if ids, ok := tx.setup.groups[copies]; ok {
		for _, id := range ids {
			for _, p := range tx.setup.nodes[id].DevPorts {
				if int(p) == txPort {
					s.replicas++
				}
			}
		}
	}
	if s.replicas == 0 {
		s.why = append(s.why, fmt.Sprintf("sender: multicast group %d has no replica of port %d", copies, txPort))
	}
	rxMap := tx.setup.pfc[txPort][0]
	// The receiver's PFC frames pause class 0 (LG_PFC_CLASS_ENABLE): the
	// normal queue honours them when it is in class 0 and the MAC takes
	// class 0's frames.
	normalCos := tx.setup.qcos[[2]int{txPort, lg.QueueNormal}]
	ctrlCos := tx.setup.qcos[[2]int{txPort, lg.QueueCtrl}]
	s.dummy = tx.circulating(txPort, lg.PktDummy)
	tx.mu.Unlock()
	if !s.dummy {
		s.why = append(s.why, fmt.Sprintf("sender: no dummy circulates in port %d's queue %d (injected from the CPU port, replenished by mirror session %#x): a lost tail goes unnoticed", txPort, lg.QueueLowPrio, lg.SessionLowPrio|lg.PortIndex(txPort)))
	}
	rx.mu.Lock()
	m, ok = rx.setup.mirrors[lg.SessionCtrl|lg.PortIndex(rxPort)]
	s.notify = ok && m.Enable && m.Direction != "EGRESS" && int(m.Port) == rxPort && m.MaxPktLen >= notificationMinBytes
	if !s.notify {
		s.why = append(s.why, fmt.Sprintf("receiver: no mirror session %#x to port %d carrying a %d B loss notification", lg.SessionCtrl|lg.PortIndex(rxPort), rxPort, notificationMinBytes))
	}
	s.ack = rx.circulating(rxPort, lg.PktAck)
	if !s.ack {
		s.why = append(s.why, fmt.Sprintf("receiver: no explicit ACK circulates in port %d's queue %d (injected from the CPU port, replenished by mirror session %#x): without reverse traffic the sender's Tx buffer is freed only by loss notifications", rxPort, lg.QueueLowPrio, lg.SessionLowPrio|lg.PortIndex(rxPort)))
	}
	timer := false
	for _, app := range rx.apps {
		if app.periodic && app.enabled && app.egressPort == rxPort {
			timer = true
		}
	}
	rx.mu.Unlock()
	s.timer = timer
	s.backpressure = rxMap&lg.PFCClassEnable != 0 && normalCos == 0 && timer
	if rxMap&lg.PFCClassEnable == 0 {
		s.why = append(s.why, fmt.Sprintf("sender: port %d does not honour PFC class 0", txPort))
	}
	if normalCos != 0 {
		s.why = append(s.why, fmt.Sprintf("sender: port %d's normal queue honours PFC class %d, not 0", txPort, normalCos))
	}
	if ctrlCos == 0 {
		// Not modelled (lgmodel pauses the normal queue alone): on the
		// chip a pause would hold the retransmissions too.
		s.why = append(s.why, fmt.Sprintf("sender: port %d's retransmission queue is in PFC class 0: a pause holds it too", txPort))
	}
	if !timer {
		s.why = append(s.why, fmt.Sprintf("receiver: no periodic timer application for port %d: no ackNoTimeout skips a hole no copy fills, no pause frame is sent", rxPort))
	}
	sort.Strings(s.why)
	return s
}

// pktgenTrigger reads pktgen.start's trigger: timer_one_shot (the
// default) or timer_periodic (tf1.pktgen.app_cfg's
// mod_with_trigger_timer_periodic).
func pktgenTrigger(a map[string]json.RawMessage) (string, error) {
	if _, ok := a["trigger"]; !ok {
		return "timer_one_shot", nil
	}
	s, err := argStr(a, "trigger")
	if err != nil {
		return "", err
	}
	if s != "timer_one_shot" && s != "timer_periodic" {
		return "", badReq("trigger %q: expected timer_one_shot or timer_periodic", s)
	}
	return s, nil
}

// timerState is a periodic application's pktgen.status: it never ends,
// and has sent a batch every period since it started.
func (d *Dataplane) timerState(app *pktgenApp) map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	sent := int64(0)
	if app.enabled && app.timerNs > 0 && d.now > app.startNs {
		sent = int64(d.now-app.startNs) / app.timerNs * int64(app.perBatch)
	}
	return map[string]any{"enabled": app.enabled, "packets": sent, "done": false}
}
