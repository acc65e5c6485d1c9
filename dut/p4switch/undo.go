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
)

// UndoFunc carries out one undo record on an opened switch driver.
type UndoFunc func(ctx context.Context, dev any, args json.RawMessage) error

// UndoKinds are the switch kind's undo kinds, for a switch driver's
// registration. Each finds the interface it needs on the driver.
func UndoKinds() map[string]UndoFunc {
	return map[string]UndoFunc{
		UndoDeletePort: func(ctx context.Context, dev any, raw json.RawMessage) error {
			var a struct {
				Port int `json:"port"`
			}
			p, err := ready[Ports](ctx, dev, raw, &a)
			if p == nil || err != nil {
				return err
			}
			return ignoreNotFound(p.DeletePort(ctx, a.Port))
		},
		UndoEntry: func(ctx context.Context, dev any, raw json.RawMessage) error {
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
		},
		UndoTableClear: func(ctx context.Context, dev any, raw json.RawMessage) error {
			var a struct {
				Table string `json:"table"`
			}
			c, err := ready[Core](ctx, dev, raw, &a)
			if c == nil || err != nil {
				return err
			}
			return c.ClearTable(ctx, a.Table)
		},
		UndoRegister: func(ctx context.Context, dev any, raw json.RawMessage) error {
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
		},
		UndoPktgen: func(ctx context.Context, dev any, raw json.RawMessage) error {
			var a struct {
				AppID int `json:"app_id"`
			}
			g, err := ready[PacketGenerator](ctx, dev, raw, &a)
			if g == nil || err != nil {
				return err
			}
			return ignoreNotFound(g.StopPktgen(ctx, a.AppID))
		},
		UndoPortMode: func(ctx context.Context, dev any, raw json.RawMessage) error {
			var a struct {
				Port int      `json:"port"`
				Mode PortMode `json:"mode"`
			}
			p, err := ready[Ports](ctx, dev, raw, &a)
			if p == nil || err != nil {
				return err
			}
			return ignoreNotFound(p.RestorePortMode(ctx, a.Port, a.Mode))
		},
		UndoCutThrough: func(ctx context.Context, dev any, raw json.RawMessage) error {
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
		},
		UndoQueuePriority: func(ctx context.Context, dev any, raw json.RawMessage) error {
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
		},
		UndoAddPort: func(ctx context.Context, dev any, raw json.RawMessage) error {
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
		},
		UndoProgram: func(ctx context.Context, dev any, raw json.RawMessage) error {
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
		},
	}
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
