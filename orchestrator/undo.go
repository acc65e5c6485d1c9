package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"testbed/dut/host"
	"testbed/dut/tofino"
	"testbed/hostagent"
	"testbed/instruments/ocs"
	"testbed/instruments/trafficgen"
	"testbed/instruments/voa"
)

// Undo is a change's undo as data: one device, a kind from the registry
// below, and its arguments. The same record undoes the change at the end of
// the run that made it (through the run's open driver) and after a crash
// (through a freshly opened driver of the device, from the journal). An
// undo that spans two devices is two Undos, so a dead device does not stop
// the other's restore.
type Undo struct {
	Kind string
	Desc string
	// Found is the value found before the change (recorded for people;
	// the arguments say what the undo does).
	Found any
	Args  any
}

// Undo kinds. Each names a function of the registry (undoKinds) that
// carries it out on a device's driver.
const (
	UndoVOAAttenuation   = "voa.attenuation"           // {channel, db}: set the channel
	UndoVOAShutter       = "voa.shutter"               // {channel, open}: set the channel's shutter
	UndoTrafficStop      = "trafficgen.stop"           // {}: stop all traffic
	UndoOCSDark          = "ocs.dark"                  // {}: no schedule, no circuit
	UndoHostSetting      = "host.setting"              // {kind, key, value}: put a setting back
	UndoTofinoDeletePort = "tofino.delete-port"        // {port}: delete a port the run added
	UndoTofinoEntry      = "tofino.entry"              // {table, key, entry?}: delete the run's entry, add back the one found
	UndoTofinoRegister   = "tofino.register"           // {name, index, value}: write a register back
	UndoTofinoPktgen     = "tofino.pktgen-stop"        // {app_id}: stop a packet generator application
	UndoTofinoPortMode   = "tofino.port-mode"          // {port, mode}: set a port's speed and FEC back
	UndoTofinoCutThrough = "tofino.cut-through"        // {port, enable}: set a port's cut-through back
	UndoReactorTeardown  = "hostagent.reactor-down"    // {}: remove REACToR classes and flows
	UndoFCTServerStop    = "hostagent.fct-server-stop" // {id}: stop an FCT server
	UndoTofinoAddPort    = "tofino.add-port"           // {port, gbps, fec}: add back a port taken down
	// UndoTofinoQueuePriority: {port, qid, priority}: set a TM queue's
	// scheduling priority back to the one SetQueuePriority found.
	UndoTofinoQueuePriority = "tofino.queue-priority"
	// UndoTofinoTableClear: {table}: delete every entry of a table the run
	// filled (it was empty when the run found it).
	UndoTofinoTableClear = "tofino.table-clear"
	// UndoTofinoProgram: {program}: restart the switch daemon with the P4
	// program it was found running, when the run started another (a
	// recipe that compares two programs on one bench). Undone in order,
	// the records journalled before it then meet the program they were
	// made for.
	UndoTofinoProgram = "tofino.program"
	// UndoTofinoMirror: {sid, session?}: delete the mirror session the run
	// set and add back the one found (none: leave it deleted).
	UndoTofinoMirror = "tofino.mirror"
	// UndoTofinoMulticastGroup: {mgid, node_ids, found?}: delete the group
	// and the nodes the run added, and add back the group found with its
	// nodes ({mgid, nodes}).
	UndoTofinoMulticastGroup = "tofino.multicast-group"
	// UndoTofinoPFC: {port, rx_map, tx_map}: set a port's PFC maps back.
	UndoTofinoPFC = "tofino.pfc"
	// UndoTofinoQueuePFCCos: {port, qid, cos}: set the PFC class a TM
	// queue honours back.
	UndoTofinoQueuePFCCos = "tofino.queue-pfc-cos"
)

type undoFunc func(ctx context.Context, od *OpenedDevice, args json.RawMessage) error

// undoKinds is the registry of undo kinds. It is built on each call (no
// package-level mutable state).
func undoKinds() map[string]undoFunc {
	return map[string]undoFunc{
		UndoVOAAttenuation: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct {
				Channel int     `json:"channel"`
				DB      float64 `json:"db"`
			}
			v, err := driverAs[voa.Attenuator](od, raw, &a)
			if err != nil {
				return err
			}
			return v.SetAttenuation(ctx, a.Channel, a.DB)
		},
		UndoVOAShutter: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct {
				Channel int  `json:"channel"`
				Open    bool `json:"open"`
			}
			sh, err := driverAs[voa.Shutter](od, raw, &a)
			if err != nil {
				return err
			}
			return sh.SetShutter(ctx, a.Channel, a.Open)
		},
		UndoTrafficStop: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			g, err := driverAs[trafficgen.Generator](od, raw, nil)
			if err != nil {
				return err
			}
			return g.Stop(ctx)
		},
		UndoOCSDark: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			cs, err := driverAs[ocs.CircuitSwitch](od, raw, nil)
			if err != nil {
				return err
			}
			return cs.Dark(ctx)
		},
		UndoHostSetting: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct{ Kind, Key, Value string }
			h, err := driverAs[*host.Host](od, raw, &a)
			if err != nil {
				return err
			}
			return h.Restore(ctx, host.Setting{Kind: a.Kind, Key: a.Key, Value: a.Value})
		},
		UndoTofinoDeletePort: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct {
				Port int `json:"port"`
			}
			sw, err := switchFor(ctx, od, raw, &a)
			if sw == nil || err != nil {
				return err
			}
			if err := sw.DeletePort(ctx, a.Port); err != nil && !tofino.IsNotFound(err) {
				return err
			}
			return nil
		},
		UndoTofinoEntry: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct {
				Table string           `json:"table"`
				Key   map[string]int64 `json:"key"`
				Entry *tofino.Entry    `json:"entry"`
			}
			sw, err := switchFor(ctx, od, raw, &a)
			if sw == nil || err != nil {
				return err
			}
			if err := sw.DeleteEntry(ctx, a.Table, a.Key); err != nil && !tofino.IsNotFound(err) {
				return err
			}
			if a.Entry != nil {
				return sw.AddEntry(ctx, a.Table, *a.Entry)
			}
			return nil
		},
		UndoTofinoTableClear: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct {
				Table string `json:"table"`
			}
			sw, err := switchFor(ctx, od, raw, &a)
			if sw == nil || err != nil {
				return err
			}
			return sw.ClearTable(ctx, a.Table)
		},
		UndoTofinoRegister: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct {
				Name  string `json:"name"`
				Index int    `json:"index"`
				Value int64  `json:"value"`
			}
			sw, err := switchFor(ctx, od, raw, &a)
			if sw == nil || err != nil {
				return err
			}
			return sw.WriteRegister(ctx, a.Name, a.Index, a.Value)
		},
		UndoTofinoPktgen: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct {
				AppID int `json:"app_id"`
			}
			sw, err := switchFor(ctx, od, raw, &a)
			if sw == nil || err != nil {
				return err
			}
			if err := sw.StopPktgen(ctx, a.AppID); err != nil && !tofino.IsNotFound(err) {
				return err
			}
			return nil
		},
		UndoTofinoPortMode: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct {
				Port int             `json:"port"`
				Mode tofino.PortMode `json:"mode"`
			}
			sw, err := switchFor(ctx, od, raw, &a)
			if sw == nil || err != nil {
				return err
			}
			if err := sw.RestorePortMode(ctx, a.Port, a.Mode); err != nil && !tofino.IsNotFound(err) {
				return err
			}
			return nil
		},
		UndoTofinoCutThrough: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct {
				Port   int  `json:"port"`
				Enable bool `json:"enable"`
			}
			sw, err := switchFor(ctx, od, raw, &a)
			if sw == nil || err != nil {
				return err
			}
			if _, err := sw.SetCutThrough(ctx, a.Port, a.Enable); err != nil && !tofino.IsNotFound(err) {
				return err
			}
			return nil
		},
		UndoTofinoQueuePriority: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct {
				Port     int  `json:"port"`
				QID      int  `json:"qid"`
				Priority *int `json:"priority"`
			}
			sw, err := switchFor(ctx, od, raw, &a)
			if sw == nil || err != nil {
				return err
			}
			if a.Priority == nil {
				return fmt.Errorf("%s: %s of port %d queue %d without a priority", od.Dev.Name, UndoTofinoQueuePriority, a.Port, a.QID)
			}
			if _, err := sw.SetQueuePriority(ctx, a.Port, a.QID, *a.Priority); err != nil && !tofino.IsNotFound(err) {
				return err
			}
			return nil
		},
		UndoTofinoAddPort: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct {
				Port int    `json:"port"`
				Gbps int    `json:"gbps"`
				FEC  string `json:"fec"`
			}
			sw, err := switchFor(ctx, od, raw, &a)
			if sw == nil || err != nil {
				return err
			}
			if ps, err := sw.PortStatus(ctx, a.Port); err == nil && ps.Enabled {
				return nil // added back already
			}
			return sw.AddPort(ctx, a.Port, a.Gbps, a.FEC)
		},
		UndoTofinoMirror: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct {
				SID     int                   `json:"sid"`
				Session *tofino.MirrorSession `json:"session"`
			}
			sw, err := switchFor(ctx, od, raw, &a)
			if sw == nil || err != nil {
				return err
			}
			if err := sw.DeleteMirror(ctx, a.SID); err != nil && !tofino.IsNotFound(err) {
				return err
			}
			if a.Session != nil {
				return sw.AddMirror(ctx, *a.Session)
			}
			return nil
		},
		UndoTofinoMulticastGroup: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct {
				MGID    int   `json:"mgid"`
				NodeIDs []int `json:"node_ids"`
				Found   *struct {
					Nodes []tofino.MulticastNode `json:"nodes"`
				} `json:"found"`
			}
			sw, err := switchFor(ctx, od, raw, &a)
			if sw == nil || err != nil {
				return err
			}
			if err := sw.DeleteMulticastGroup(ctx, a.MGID); err != nil && !tofino.IsNotFound(err) {
				return err
			}
			for _, id := range a.NodeIDs {
				if err := sw.DeleteMulticastNode(ctx, id); err != nil && !tofino.IsNotFound(err) {
					return err
				}
			}
			if a.Found == nil {
				return nil
			}
			var ids []int
			for _, n := range a.Found.Nodes {
				if err := sw.AddMulticastNode(ctx, n); err != nil {
					return err
				}
				ids = append(ids, n.ID)
			}
			return sw.AddMulticastGroup(ctx, a.MGID, ids)
		},
		UndoTofinoPFC: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct {
				Port  int `json:"port"`
				RxMap int `json:"rx_map"`
				TxMap int `json:"tx_map"`
			}
			sw, err := switchFor(ctx, od, raw, &a)
			if sw == nil || err != nil {
				return err
			}
			if _, err := sw.SetPFC(ctx, a.Port, tofino.PFC{RxMap: a.RxMap, TxMap: a.TxMap}); err != nil && !tofino.IsNotFound(err) {
				return err
			}
			return nil
		},
		UndoTofinoQueuePFCCos: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct {
				Port int  `json:"port"`
				QID  int  `json:"qid"`
				Cos  *int `json:"cos"`
			}
			sw, err := switchFor(ctx, od, raw, &a)
			if sw == nil || err != nil {
				return err
			}
			if a.Cos == nil {
				return fmt.Errorf("%s: %s of port %d queue %d without a class", od.Dev.Name, UndoTofinoQueuePFCCos, a.Port, a.QID)
			}
			if _, err := sw.SetQueuePFCCos(ctx, a.Port, a.QID, *a.Cos); err != nil && !tofino.IsNotFound(err) {
				return err
			}
			return nil
		},
		UndoTofinoProgram: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct {
				Program string `json:"program"`
			}
			sw, err := driverAs[*tofino.Switch](od, raw, &a)
			if err != nil {
				return err
			}
			if a.Program == "" {
				return fmt.Errorf("%s: %s without a program", od.Dev.Name, UndoTofinoProgram)
			}
			p, err := sw.Program(ctx)
			if err != nil {
				return err
			}
			if p == a.Program {
				return nil // put back already
			}
			return sw.StartSwitchd(ctx, a.Program)
		},
		UndoReactorTeardown: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			c, err := agentOf(ctx, od, raw, nil)
			if err != nil {
				return err
			}
			return c.ReactorTeardown(ctx)
		},
		UndoFCTServerStop: func(ctx context.Context, od *OpenedDevice, raw json.RawMessage) error {
			var a struct {
				ID string `json:"id"`
			}
			c, err := agentOf(ctx, od, raw, &a)
			if err != nil {
				return err
			}
			var ae *hostagent.APIError
			if _, err := c.StopFCTServer(ctx, a.ID); err != nil && !(errors.As(err, &ae) && ae.Kind == hostagent.KindNotFound) {
				return err
			}
			return nil
		},
	}
}

// UndoKinds lists the registered undo kinds.
func UndoKinds() []string {
	var out []string
	for k := range undoKinds() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// driverAs checks the device's driver is a T and decodes the arguments.
func driverAs[T any](od *OpenedDevice, raw json.RawMessage, args any) (T, error) {
	var zero T
	d, ok := od.Driver.(T)
	if !ok {
		return zero, fmt.Errorf("device %s is a %s (driver %s), which this undo does not apply to", od.Dev.Name, od.Dev.Kind, od.Dev.Driver)
	}
	if args != nil {
		if len(raw) == 0 {
			return zero, fmt.Errorf("%s: undo without its arguments", od.Dev.Name)
		}
		if err := json.Unmarshal(raw, args); err != nil {
			return zero, fmt.Errorf("%s: undo arguments %s: %w", od.Dev.Name, raw, err)
		}
	}
	return d, nil
}

// switchFor returns a switch ready for agent requests, or nil when no
// switch daemon runs: then the ports, entries, registers and generator
// applications a run made are gone with it, and there is nothing to undo.
func switchFor(ctx context.Context, od *OpenedDevice, raw json.RawMessage, args any) (*tofino.Switch, error) {
	sw, err := driverAs[*tofino.Switch](od, raw, args)
	if err != nil {
		return nil, err
	}
	p, err := sw.Program(ctx)
	if err != nil {
		return nil, err
	}
	if p == "" {
		return nil, nil
	}
	// A fresh driver (a replay after a crash) starts the agent if the
	// dead run's is gone; the run's own driver has it already.
	if err := sw.EnsureAgent(ctx); err != nil {
		return nil, err
	}
	return sw, nil
}

// agentOf reaches a host's hostagent (started if none runs).
func agentOf(ctx context.Context, od *OpenedDevice, raw json.RawMessage, args any) (*hostagent.Client, error) {
	h, err := driverAs[*host.Host](od, raw, args)
	if err != nil {
		return nil, err
	}
	a, _, err := h.EnsureAgent(ctx)
	if err != nil {
		return nil, err
	}
	return hostagent.NewClient(a.Client, a.BaseURL), nil
}

// runUndo carries out one undo record on an opened device.
func runUndo(ctx context.Context, od *OpenedDevice, u UndoRecord) error {
	f, ok := undoKinds()[u.Kind]
	if !ok {
		return fmt.Errorf("%s: unknown undo kind %q (this build knows: %s)", od.Dev.Name, u.Kind, strings.Join(UndoKinds(), ", "))
	}
	// The caller names the device and the undo: the engine's cleanup
	// report and RecoverDevice's Recovered both carry them.
	return f(ctx, od, u.Args)
}

// Journal records an undo for a change the run is about to make to a
// device: it appends it to the device's journal (on disk before it
// returns) and pushes it on the run's undo stack. Call it before the
// change; if it fails, do not make the change.
func (rc *RunContext) Journal(device string, u Undo) error {
	od, ok := rc.devices.Get(device)
	if !ok {
		return fmt.Errorf("device %s is not part of this run", device)
	}
	if _, ok := undoKinds()[u.Kind]; !ok {
		return fmt.Errorf("%s: unknown undo kind %q", device, u.Kind)
	}
	rec := UndoRecord{Device: device, Kind: u.Kind, Desc: u.Desc}
	var err error
	if u.Args != nil {
		if rec.Args, err = json.Marshal(u.Args); err != nil {
			return fmt.Errorf("%s: undo arguments: %w", device, err)
		}
	}
	if u.Found != nil {
		if rec.Found, err = json.Marshal(u.Found); err != nil {
			return fmt.Errorf("%s: found value: %w", device, err)
		}
	}
	j := rc.journals[device]
	seq := 0
	if j != nil {
		if seq, err = j.Append(rec); err != nil {
			return fmt.Errorf("%s: %w", device, err)
		}
	}
	rc.mu.Lock()
	rc.undo = append(rc.undo, undoAction{Desc: u.Desc, Device: device, Fn: func(ctx context.Context) error {
		if err := runUndo(ctx, od, rec); err != nil {
			return err
		}
		if j != nil {
			if err := j.Done(seq); err != nil {
				rc.Log.Warn("undo journal", "device", device, "err", err)
			}
		}
		return nil
	}})
	rc.mu.Unlock()
	return nil
}
