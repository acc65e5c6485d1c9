package orchestrator

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"testbed/instruments/trafficgen"
	"testbed/instruments/voa"
	"testbed/inventory"
	"testbed/results"
)

// RunContext is what a step sees while it runs: the devices through their
// driver interfaces, the bundle's tables and events, and the undo stack.
// The guarded operations (SetAttenuation, StartTraffic) register the undo
// that puts the lab back the first time they touch something.
type RunContext struct {
	RunID     string
	Seed      uint64
	Params    *Params
	Lab       *inventory.Inventory
	Simulated bool
	Log       *slog.Logger

	bundle  *results.Bundle
	devices *DeviceSet
	tables  map[string]*results.TableWriter
	emit    func(results.Event)
	metrics *RunMetrics

	// What every step of the run shares, whichever lane it runs in
	// (lanes.go): a step's own view differs only in its tables.
	*runShared
}

// runShared is the part of a run's context its steps share.
type runShared struct {
	mu      sync.Mutex
	undo    []undoAction
	touched map[string]bool
	// found is the P4 program each switch ran when the run first read it
	// (ProgramFound).
	found map[string]string
	// journals are the devices' undo journals (beside their leases).
	journals map[string]RunJournal
	// lost closes when the run's leases are lost: from then on its
	// cleanup leaves the devices (and their journals) to the next holder.
	lost <-chan struct{}
	// cleanupCtx and cleanupPer are what the run's undos run under, and
	// the bound of one whose driver says nothing (RunRequest's CleanupCtx
	// and CleanupTimeout): at its end, and when SettleProgram settles
	// them early.
	cleanupCtx context.Context
	cleanupPer time.Duration
}

type undoAction struct {
	Desc   string
	Device string
	Kind   string // the journaled undo's kind; "" for PushUndo's
	Fn     func(ctx context.Context) error
	// Bound is how long Fn may take, given the run's fixed bound per,
	// which it returns when the driver says nothing; nil: per.
	Bound func(ctx context.Context, per time.Duration) time.Duration
}

// Attenuator returns the named VOA's driver.
func (rc *RunContext) Attenuator(name string) (voa.Attenuator, error) {
	d, ok := rc.devices.Get(name)
	if !ok {
		return nil, fmt.Errorf("device %s is not part of this run", name)
	}
	a, ok := d.Driver.(voa.Attenuator)
	if !ok {
		return nil, fmt.Errorf("device %s is a %s, not an attenuator", name, d.Dev.Kind)
	}
	return a, nil
}

// Generator returns the named traffic generator's driver.
func (rc *RunContext) Generator(name string) (trafficgen.Generator, error) {
	d, ok := rc.devices.Get(name)
	if !ok {
		return nil, fmt.Errorf("device %s is not part of this run", name)
	}
	g, ok := d.Driver.(trafficgen.Generator)
	if !ok {
		return nil, fmt.Errorf("device %s is a %s, not a traffic generator", name, d.Dev.Kind)
	}
	return g, nil
}

// PushUndo registers an action the engine runs, last in first out, when the
// run ends however it ends. It is not journaled, so a crash forgets it: a
// change to a device is undone with Journal instead, which survives the
// run's death.
func (rc *RunContext) PushUndo(desc, device string, fn func(ctx context.Context) error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.undo = append(rc.undo, undoAction{Desc: desc, Device: device, Fn: fn})
}

// once reports whether key is touched for the first time.
func (rc *RunContext) once(key string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.touched[key] {
		return false
	}
	rc.touched[key] = true
	return true
}

// SetAttenuation sets a VOA channel. The first time a channel is touched it
// reads the present value and registers the undo that restores the channel
// to its resting value (the inventory's safe_state, else the value found);
// on an attenuator with a shutter it also opens a closed shutter and
// registers the undo that closes it again.
func (rc *RunContext) SetAttenuation(ctx context.Context, device string, channel int, dB float64) error {
	a, err := rc.Attenuator(device)
	if err != nil {
		return err
	}
	if rc.once(fmt.Sprintf("voa/%s/%d", device, channel)) {
		found, err := a.Attenuation(ctx, channel)
		if err != nil {
			return fmt.Errorf("%s: read channel %d before first setting: %w", device, channel, err)
		}
		rest := found
		d, _ := rc.Lab.Device(device)
		if r := RestingAttenuation(d); r != nil {
			rest = *r
		}
		if err := rc.Journal(device, Undo{Kind: UndoVOAAttenuation, Desc: fmt.Sprintf("restore %s channel %d to %.2f dB", device, channel, rest),
			Found: map[string]any{"channel": channel, "db": found}, Args: map[string]any{"channel": channel, "db": rest}}); err != nil {
			return err
		}
		if err := rc.EnsureLight(ctx, device, channel); err != nil {
			return err
		}
	}
	if err := a.SetAttenuation(ctx, channel, dB); err != nil {
		return fmt.Errorf("%s: %w", device, err)
	}
	rc.Event(results.Event{Type: "setting", Device: device, Message: fmt.Sprintf("channel %d set to %.2f dB", channel, dB),
		Fields: map[string]any{"channel": channel, "attenuation_db": dB}})
	return nil
}

// EnsureLight opens a VOA channel's shutter if the attenuator has one and
// it is closed, and registers the undo that closes it again: a recipe that
// sets a channel needs light through it (a Keysight N776x powers up and
// resets with its shutters closed). Once per channel and run.
func (rc *RunContext) EnsureLight(ctx context.Context, device string, channel int) error {
	a, err := rc.Attenuator(device)
	if err != nil {
		return err
	}
	sh, ok := a.(voa.Shutter)
	if !ok || !rc.once(fmt.Sprintf("shutter/%s/%d", device, channel)) {
		return nil
	}
	open, err := sh.ShutterOpen(ctx, channel)
	if err != nil {
		return fmt.Errorf("%s: read the shutter of channel %d: %w", device, channel, err)
	}
	if open {
		return nil
	}
	if err := rc.Journal(device, Undo{Kind: UndoVOAShutter, Desc: fmt.Sprintf("close %s channel %d's shutter again", device, channel),
		Found: map[string]any{"channel": channel, "open": false}, Args: map[string]any{"channel": channel, "open": false}}); err != nil {
		return err
	}
	if err := sh.SetShutter(ctx, channel, true); err != nil {
		return fmt.Errorf("%s: %w", device, err)
	}
	rc.Event(results.Event{Type: "setting", Device: device, Message: fmt.Sprintf("channel %d shutter opened", channel),
		Fields: map[string]any{"channel": channel, "shutter": "open"}})
	return nil
}

// openShutters gives light to every VOA channel the plan sets (a setting
// named ch<N>.attenuation), before the first step: links must be lit
// before the steps that bring their ports up.
func (rc *RunContext) openShutters(ctx context.Context, plan *Plan) error {
	for _, st := range plan.Steps {
		for _, set := range st.Settings {
			var ch int
			if n, err := fmt.Sscanf(set.Name, "ch%d.attenuation", &ch); err != nil || n != 1 || set.Name != fmt.Sprintf("ch%d.attenuation", ch) {
				continue
			}
			if _, err := rc.Attenuator(set.Device); err != nil {
				continue
			}
			if err := rc.EnsureLight(ctx, set.Device, ch); err != nil {
				return err
			}
		}
	}
	return nil
}

// StartTraffic starts flows; the first start on a generator registers an
// undo that stops all its traffic.
func (rc *RunContext) StartTraffic(ctx context.Context, device string, flows ...string) error {
	g, err := rc.Generator(device)
	if err != nil {
		return err
	}
	if rc.once("tg/" + device) {
		if err := rc.Journal(device, Undo{Kind: UndoTrafficStop, Desc: "stop all traffic on " + device}); err != nil {
			return err
		}
	}
	if err := g.Start(ctx, flows...); err != nil {
		return fmt.Errorf("%s: start traffic: %w", device, err)
	}
	return nil
}

// Table returns the writer of a table the plan declared.
func (rc *RunContext) Table(name string) (*results.TableWriter, error) {
	t, ok := rc.tables[name]
	if !ok {
		return nil, fmt.Errorf("table %q was not declared in the plan", name)
	}
	return t, nil
}

// WriteDataFile exports a file under the bundle's data/ (a configuration
// snippet, a document a controller loads), written once.
func (rc *RunContext) WriteDataFile(f results.DataFile, data []byte) error {
	if err := rc.bundle.WriteDataFile(f, data); err != nil {
		return err
	}
	rc.Event(results.Event{Type: "file", Message: "wrote data/" + f.Path, Fields: map[string]any{"path": "data/" + f.Path, "bytes": len(data)}})
	return nil
}

// Event records an event in the bundle and shows it as progress.
func (rc *RunContext) Event(e results.Event) { rc.emit(e) }
