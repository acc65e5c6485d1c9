package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"testbed/drivers"
	"testbed/dut/host"
	"testbed/dut/p4switch"
	"testbed/instruments/ocs"
	"testbed/instruments/trafficgen"
	"testbed/instruments/voa"
	"testbed/inventory"
	"testbed/results"
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

// Undo kinds. Each names a function that a driver registers (package
// drivers) and that carries it out on an opened device of that driver;
// the kinds' packages define them. These names stay for the recipes and
// tools that journal by them.
const (
	UndoVOAAttenuation   = voa.UndoAttenuation
	UndoVOAShutter       = voa.UndoShutter
	UndoTrafficStop      = trafficgen.UndoStop
	UndoOCSDark          = ocs.UndoDark
	UndoHostSetting      = host.UndoSetting
	UndoReactorTeardown  = host.UndoReactorTeardown
	UndoFCTServerStop    = host.UndoFCTServerStop
	UndoTofinoDeletePort = p4switch.UndoDeletePort
	UndoTofinoEntry      = p4switch.UndoEntry
	UndoTofinoRegister   = p4switch.UndoRegister
	UndoTofinoPktgen     = p4switch.UndoPktgen
	UndoTofinoPortMode   = p4switch.UndoPortMode
	UndoTofinoCutThrough = p4switch.UndoCutThrough
	UndoTofinoAddPort    = p4switch.UndoAddPort
	// UndoTofinoQueuePriority: p4switch.UndoQueuePriority.
	UndoTofinoQueuePriority = p4switch.UndoQueuePriority
	// UndoTofinoTableClear: p4switch.UndoTableClear.
	UndoTofinoTableClear = p4switch.UndoTableClear
	// UndoTofinoProgram: p4switch.UndoProgram.
	UndoTofinoProgram = p4switch.UndoProgram
	// UndoTofinoMirror: p4switch.UndoMirror.
	UndoTofinoMirror = p4switch.UndoMirror
	// UndoTofinoMulticastGroup: p4switch.UndoMulticastGroup.
	UndoTofinoMulticastGroup = p4switch.UndoMulticastGroup
	// UndoTofinoPFC: p4switch.UndoPFC.
	UndoTofinoPFC = p4switch.UndoPFC
	// UndoTofinoQueuePFCCos: p4switch.UndoQueuePFCCos.
	UndoTofinoQueuePFCCos = p4switch.UndoQueuePFCCos
)

// UndoKinds lists the undo kinds some driver of this build carries out.
func UndoKinds() []string { return drivers.UndoKinds() }

// undoFor is the function that carries out an undo kind on a device: the
// one its driver registered.
func undoFor(dev *inventory.Device, kind string) (drivers.UndoFunc, error) {
	drv, ok := drivers.Lookup(dev.Kind, dev.Driver)
	if !ok {
		return nil, fmt.Errorf("%s: no %s driver %q in this build to undo %q with", dev.Name, dev.Kind, dev.Driver, kind)
	}
	f, ok := drv.Undo[kind]
	if !ok {
		if slices.Contains(UndoKinds(), kind) {
			return nil, fmt.Errorf("%s: undo kind %q does not apply to a %s (driver %s)", dev.Name, kind, dev.Kind, dev.Driver)
		}
		return nil, fmt.Errorf("%s: unknown undo kind %q (this build knows: %s)", dev.Name, kind, strings.Join(UndoKinds(), ", "))
	}
	return f, nil
}

// undoBound is how long undo u may take on the opened device: what its
// driver works out from the device (asked within per), or per, the run's
// fixed bound, when the driver says nothing of this kind or cannot tell
// (the undo itself then meets whatever kept it from telling).
func undoBound(ctx context.Context, od *OpenedDevice, u UndoRecord, per time.Duration) time.Duration {
	drv, ok := drivers.Lookup(od.Dev.Kind, od.Dev.Driver)
	if !ok || drv.UndoBound[u.Kind] == nil {
		return per
	}
	bctx, cancel := context.WithTimeout(ctx, per)
	defer cancel()
	d, err := drv.UndoBound[u.Kind](bctx, od.Driver, u.Args)
	if err != nil || d <= 0 {
		return per
	}
	return d
}

// runUndo carries out one undo record on an opened device.
func runUndo(ctx context.Context, od *OpenedDevice, u UndoRecord) error {
	f, err := undoFor(od.Dev, u.Kind)
	if err != nil {
		return err
	}
	// The caller names the device and the undo: the engine's cleanup
	// report and RecoverDevice's Recovered both carry them.
	return f(ctx, od.Driver, u.Args)
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
	if _, err := undoFor(od.Dev, u.Kind); err != nil {
		return err
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
	rc.undo = append(rc.undo, undoAction{Desc: u.Desc, Device: device, Kind: u.Kind, Bound: func(ctx context.Context, per time.Duration) time.Duration {
		return undoBound(ctx, od, rec, per)
	}, Fn: func(ctx context.Context) error {
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

// programScoped says whether an undo kind restores state a switch's running
// P4 program holds (its ports, table entries, registers, packet generator
// applications, queue and port settings): state that goes with the program
// when bf_switchd restarts with another, and that only the program it was
// recorded under has. The program a run found (UndoTofinoProgram) belongs
// to the switch, not to a program.
func programScoped(kind string) bool {
	switch kind {
	case UndoTofinoDeletePort, UndoTofinoEntry, UndoTofinoRegister, UndoTofinoPktgen, UndoTofinoPortMode, UndoTofinoCutThrough,
		UndoTofinoAddPort, UndoTofinoQueuePriority, UndoTofinoTableClear,
		// The fixed-function setup: a bf_switchd restart forgets it too.
		UndoTofinoMirror, UndoTofinoMulticastGroup, UndoTofinoPFC, UndoTofinoQueuePFCCos:
		return true
	}
	return false
}

// ProgramFound records the P4 program a switch runs, the first time a run
// reads it, and returns the program found then: what a run that replaces
// programs restores at its end.
func (rc *RunContext) ProgramFound(device, program string) string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.found == nil {
		rc.found = map[string]string{}
	}
	if p, ok := rc.found[device]; ok {
		return p
	}
	rc.found[device] = program
	return program
}

// SettleProgram runs now, last in first out, the pending undos recorded
// under the P4 program a switch runs, before the caller replaces that
// program (restarts bf_switchd with another): undone later, they would
// meet a program that has none of their tables and registers ("could not
// restore"), and the restart takes the state they restore away anyway. An
// undo recorded under a program belongs to it: it is carried out while the
// program still runs, and the bundle records each one as settled, with
// why (an "undo.settled" event). The program the run found, if the caller
// journals its restart, stays for the end of the run. It stops at the
// first undo that fails, which stays pending with the ones below it, and
// returns its error.
//
// The undos run as the run's end runs them: under the run's cleanup
// context, not ctx, each given the time its driver says (UndoBound) or
// the run's fixed bound, so a caller cancelled (Ctrl-C, a step's
// deadline) while settling still leaves the switch as the run found it,
// and a hung switch does not hold the caller past the bound. ctx is only
// checked after: a caller cancelled gets its cause once all are settled.
func (rc *RunContext) SettleProgram(ctx context.Context, device, program, why string) error {
	rc.mu.Lock()
	var mine []undoAction
	kept := rc.undo[:0:0]
	for _, u := range rc.undo {
		if u.Device == device && programScoped(u.Kind) {
			mine = append(mine, u)
		} else {
			kept = append(kept, u)
		}
	}
	rc.undo = kept
	rc.mu.Unlock()
	cctx, per := rc.cleanupCtx, rc.cleanupPer
	if cctx == nil {
		cctx = context.WithoutCancel(ctx)
	}
	if per <= 0 {
		per = RunRequest{}.cleanupTimeout()
	}
	for i := len(mine) - 1; i >= 0; i-- {
		u := mine[i]
		bound, err := runUndoAction(cctx, u, per)
		if err != nil {
			// Put back what was not settled, in its order, under what the
			// run has pushed since: the end of the run tries again.
			rc.mu.Lock()
			rc.undo = append(append([]undoAction(nil), mine[:i+1]...), rc.undo...)
			rc.mu.Unlock()
			rc.Event(results.Event{Type: "undo.error", Device: device, Message: fmt.Sprintf("%s (settling before %s): %v", u.Desc, why, err),
				Fields: map[string]any{"bound_s": bound.Seconds()}})
			return fmt.Errorf("%s: settle %q before %s: %w", device, u.Desc, why, err)
		}
		rc.Event(results.Event{Type: "undo.settled", Device: device, Message: fmt.Sprintf("%s: undone now, under %s, before %s", u.Desc, program, why),
			Fields: map[string]any{"program": program, "kind": u.Kind, "why": why, "bound_s": bound.Seconds()}})
	}
	if cause := context.Cause(ctx); cause != nil {
		return fmt.Errorf("%s: settled before %s, then: %w", device, why, cause)
	}
	return nil
}
