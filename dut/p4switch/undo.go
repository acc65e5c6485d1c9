package p4switch

import (
	"context"
	"encoding/json"
	"fmt"
)

// Undo kinds of the switch kind, carried out through its interfaces, so
// every switch driver registers the same ones (UndoKinds). The names
// began with the first driver's and stay as they are: journals on disk
// hold them.
const (
	UndoDeletePort = "tofino.delete-port" // {port}: delete a port the run added
	UndoEntry      = "tofino.entry"       // {table, key, entry?}: delete the run's entry, add back the one found
	UndoRegister   = "tofino.register"    // {name, index, value}: write a register back
	UndoPktgen     = "tofino.pktgen-stop" // {app_id}: stop a packet generator application
	UndoPortMode   = "tofino.port-mode"   // {port, mode}: set a port's speed and FEC back
	UndoCutThrough = "tofino.cut-through" // {port, enable}: set a port's cut-through back
	UndoAddPort    = "tofino.add-port"    // {port, gbps, fec}: add back a port taken down
	// UndoQueuePriority: {port, qid, priority}: set a TM queue's
	// scheduling priority back to the one SetQueuePriority found.
	UndoQueuePriority = "tofino.queue-priority"
	// UndoTableClear: {table}: delete every entry of a table the run
	// filled (it was empty when the run found it).
	UndoTableClear = "tofino.table-clear"
	// UndoProgram: {program}: start the switch again with the P4 program
	// it was found running, when the run started another (a recipe that
	// compares two programs on one bench). Undone in order, the records
	// journalled before it then meet the program they were made for.
	UndoProgram = "tofino.program"
	// UndoMirror: {sid, session?}: delete the mirror session the run set
	// and add back the one found (none: leave it deleted).
	UndoMirror = "tofino.mirror"
	// UndoMulticastGroup: {mgid, node_ids, found?}: delete the group and
	// the nodes the run added, and add back the group found with its
	// nodes ({nodes}).
	UndoMulticastGroup = "tofino.multicast-group"
	// UndoPFC: {port, rx_map, tx_map}: set a port's PFC maps back.
	UndoPFC = "tofino.pfc"
	// UndoQueuePFCCos: {port, qid, cos}: set the PFC class a queue honours back.
	UndoQueuePFCCos = "tofino.queue-pfc-cos"
)

// UndoFunc carries out one undo record on an opened switch driver.
type UndoFunc func(ctx context.Context, dev any, args json.RawMessage) error

// UndoKinds are the switch kind's undo kinds, for a switch driver's
// registration. Each finds the interface it needs on the driver.
func UndoKinds() map[string]UndoFunc {
	return map[string]UndoFunc{
		UndoDeletePort:     undoDeletePort,
		UndoEntry:          undoEntry,
		UndoTableClear:     undoTableClear,
		UndoRegister:       undoRegister,
		UndoPktgen:         undoPktgen,
		UndoPortMode:       undoPortMode,
		UndoCutThrough:     undoCutThrough,
		UndoQueuePriority:  undoQueuePriority,
		UndoMirror:         undoMirror,
		UndoMulticastGroup: undoMulticastGroup,
		UndoPFC:            undoPFC,
		UndoQueuePFCCos:    undoQueuePFCCos,
		UndoAddPort:        undoAddPort,
		UndoProgram:        undoProgram,
	}
}

// undoDeletePort deletes a port the run added.
func undoDeletePort(ctx context.Context, dev any, raw json.RawMessage) error {
	var a struct {
		Port int `json:"port"`
	}
	p, err := ready[Ports](ctx, dev, raw, &a)
	if p == nil || err != nil {
		return err
	}
	return ignoreNotFound(p.DeletePort(ctx, a.Port))
}

// undoEntry deletes the run's entry and adds back the one found.
func undoEntry(ctx context.Context, dev any, raw json.RawMessage) error {
	var a struct {
		Table string           `json:"table"`
		Key   map[string]int64 `json:"key"`
		Entry *Entry           `json:"entry"`
	}
	c, err := ready[Core](ctx, dev, raw, &a)
	if c == nil || err != nil {
		return err
	}
	if err := ignoreNotFound(c.DeleteEntry(ctx, a.Table, a.Key)); err != nil {
		return err
	}
	if a.Entry != nil {
		return c.AddEntry(ctx, a.Table, *a.Entry)
	}
	return nil
}

// undoTableClear deletes every entry of a table the run filled.
func undoTableClear(ctx context.Context, dev any, raw json.RawMessage) error {
	var a struct {
		Table string `json:"table"`
	}
	c, err := ready[Core](ctx, dev, raw, &a)
	if c == nil || err != nil {
		return err
	}
	return c.ClearTable(ctx, a.Table)
}

// undoRegister writes a register back.
func undoRegister(ctx context.Context, dev any, raw json.RawMessage) error {
	var a struct {
		Name  string `json:"name"`
		Index int    `json:"index"`
		Value int64  `json:"value"`
	}
	c, err := ready[Core](ctx, dev, raw, &a)
	if c == nil || err != nil {
		return err
	}
	return c.WriteRegister(ctx, a.Name, a.Index, a.Value)
}

// undoPktgen stops a packet generator application.
func undoPktgen(ctx context.Context, dev any, raw json.RawMessage) error {
	var a struct {
		AppID int `json:"app_id"`
	}
	g, err := ready[PacketGenerator](ctx, dev, raw, &a)
	if g == nil || err != nil {
		return err
	}
	return ignoreNotFound(g.StopPktgen(ctx, a.AppID))
}

// undoPortMode sets a port's speed and FEC back.
func undoPortMode(ctx context.Context, dev any, raw json.RawMessage) error {
	var a struct {
		Port int      `json:"port"`
		Mode PortMode `json:"mode"`
	}
	p, err := ready[Ports](ctx, dev, raw, &a)
	if p == nil || err != nil {
		return err
	}
	return ignoreNotFound(p.RestorePortMode(ctx, a.Port, a.Mode))
}

// undoCutThrough sets a port's cut-through back.
func undoCutThrough(ctx context.Context, dev any, raw json.RawMessage) error {
	var a struct {
		Port   int  `json:"port"`
		Enable bool `json:"enable"`
	}
	p, err := ready[Ports](ctx, dev, raw, &a)
	if p == nil || err != nil {
		return err
	}
	_, err = p.SetCutThrough(ctx, a.Port, a.Enable)
	return ignoreNotFound(err)
}

// undoQueuePriority sets a TM queue's scheduling priority back.
func undoQueuePriority(ctx context.Context, dev any, raw json.RawMessage) error {
	var a struct {
		Port     int  `json:"port"`
		QID      int  `json:"qid"`
		Priority *int `json:"priority"`
	}
	q, err := ready[Queues](ctx, dev, raw, &a)
	if q == nil || err != nil {
		return err
	}
	if a.Priority == nil {
		return fmt.Errorf("%s of port %d queue %d without a priority", UndoQueuePriority, a.Port, a.QID)
	}
	_, err = q.SetQueuePriority(ctx, a.Port, a.QID, *a.Priority)
	return ignoreNotFound(err)
}

// undoMirror deletes the mirror session the run set and adds back the one found.
func undoMirror(ctx context.Context, dev any, raw json.RawMessage) error {
	var a struct {
		SID     int            `json:"sid"`
		Session *MirrorSession `json:"session"`
	}
	m, err := ready[Mirrors](ctx, dev, raw, &a)
	if m == nil || err != nil {
		return err
	}
	if err := ignoreNotFound(m.DeleteMirror(ctx, a.SID)); err != nil {
		return err
	}
	if a.Session != nil {
		return m.AddMirror(ctx, *a.Session)
	}
	return nil
}

// undoMulticastGroup deletes the group and the nodes the run added, and adds back the group found with its nodes.
func undoMulticastGroup(ctx context.Context, dev any, raw json.RawMessage) error {
	var a struct {
		MGID    int   `json:"mgid"`
		NodeIDs []int `json:"node_ids"`
		Found   *struct {
			Nodes []MulticastNode `json:"nodes"`
		} `json:"found"`
	}
	m, err := ready[Multicast](ctx, dev, raw, &a)
	if m == nil || err != nil {
		return err
	}
	if err := ignoreNotFound(m.DeleteMulticastGroup(ctx, a.MGID)); err != nil {
		return err
	}
	for _, id := range a.NodeIDs {
		if err := ignoreNotFound(m.DeleteMulticastNode(ctx, id)); err != nil {
			return err
		}
	}
	if a.Found == nil {
		return nil
	}
	var ids []int
	for _, n := range a.Found.Nodes {
		if err := m.AddMulticastNode(ctx, n); err != nil {
			return err
		}
		ids = append(ids, n.ID)
	}
	return m.AddMulticastGroup(ctx, a.MGID, ids)
}

// undoPFC sets a port's PFC maps back.
func undoPFC(ctx context.Context, dev any, raw json.RawMessage) error {
	var a struct {
		Port  int `json:"port"`
		RxMap int `json:"rx_map"`
		TxMap int `json:"tx_map"`
	}
	f, err := ready[FlowControl](ctx, dev, raw, &a)
	if f == nil || err != nil {
		return err
	}
	_, err = f.SetPFC(ctx, a.Port, PFC{RxMap: a.RxMap, TxMap: a.TxMap})
	return ignoreNotFound(err)
}

// undoQueuePFCCos sets the PFC class a queue honours back.
func undoQueuePFCCos(ctx context.Context, dev any, raw json.RawMessage) error {
	var a struct {
		Port int  `json:"port"`
		QID  int  `json:"qid"`
		Cos  *int `json:"cos"`
	}
	f, err := ready[FlowControl](ctx, dev, raw, &a)
	if f == nil || err != nil {
		return err
	}
	if a.Cos == nil {
		return fmt.Errorf("%s of port %d queue %d without a class", UndoQueuePFCCos, a.Port, a.QID)
	}
	_, err = f.SetQueuePFCCos(ctx, a.Port, a.QID, *a.Cos)
	return ignoreNotFound(err)
}

// undoAddPort adds back a port taken down, unless it is up already.
func undoAddPort(ctx context.Context, dev any, raw json.RawMessage) error {
	var a struct {
		Port int    `json:"port"`
		Gbps int    `json:"gbps"`
		FEC  string `json:"fec"`
	}
	p, err := ready[Ports](ctx, dev, raw, &a)
	if p == nil || err != nil {
		return err
	}
	if ps, err := p.PortStatus(ctx, a.Port); err == nil && ps.Enabled {
		return nil // added back already
	}
	return p.AddPort(ctx, a.Port, a.Gbps, a.FEC)
}

// undoProgram starts the switch again with the program it was found running, unless it runs it already.
func undoProgram(ctx context.Context, dev any, raw json.RawMessage) error {
	var a struct {
		Program string `json:"program"`
	}
	p, err := as[Programs](dev, raw, &a)
	if err != nil {
		return err
	}
	if a.Program == "" {
		return fmt.Errorf("%s without a program", UndoProgram)
	}
	now, err := p.Program(ctx)
	if err != nil {
		return err
	}
	if now == a.Program {
		return nil // put back already
	}
	return p.LoadProgram(ctx, a.Program)
}

// as checks the driver implements T and decodes the undo's arguments.
func as[T any](dev any, raw json.RawMessage, args any) (T, error) {
	var zero T
	t, ok := dev.(T)
	if !ok {
		return zero, fmt.Errorf("switch driver %T does not implement the interface this undo needs (%T)", dev, &zero)
	}
	if len(raw) == 0 {
		return zero, fmt.Errorf("undo without its arguments")
	}
	if err := json.Unmarshal(raw, args); err != nil {
		return zero, fmt.Errorf("undo arguments %s: %w", raw, err)
	}
	return t, nil
}

// ready is as, for a switch that answers requests: the zero T (and no
// error) when no program runs, since then the ports, entries, registers
// and generator applications a run made are gone with it, and there is
// nothing to undo. A freshly opened driver (a replay after a crash) is
// made Ready first.
func ready[T any](ctx context.Context, dev any, raw json.RawMessage, args any) (T, error) {
	var zero T
	t, err := as[T](dev, raw, args)
	if err != nil {
		return zero, err
	}
	if p, ok := dev.(Programs); ok {
		prog, err := p.Program(ctx)
		if err != nil {
			return zero, err
		}
		if prog == "" {
			return zero, nil
		}
		if err := p.Ready(ctx); err != nil {
			return zero, err
		}
	}
	return t, nil
}

func ignoreNotFound(err error) error {
	if IsNotFound(err) {
		return nil
	}
	return err
}
