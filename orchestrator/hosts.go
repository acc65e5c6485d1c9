package orchestrator

import (
	"context"
	"fmt"

	"testbed/dut/host"
	"testbed/results"
)

// ApplyHostSetting changes a setting on a host for the rest of the run. The
// values before and after go into the bundle as a "setting" event; the
// first time a setting is touched, the undo that restores the value found
// is registered.
func (rc *RunContext) ApplyHostSetting(ctx context.Context, device string, s host.Setting) (host.Change, error) {
	h, err := As[host.Settings](rc, device)
	if err != nil {
		return host.Change{}, err
	}
	first := rc.once("host/" + device + "/" + s.Kind + "/" + s.Key)
	if first {
		// Journal the value found before anything changes, so that a
		// run that dies here is undone by the next.
		before, err := h.Current(ctx, s)
		if err != nil {
			return host.Change{}, fmt.Errorf("setting %s: refused, its present value cannot be read: %w", s, err)
		}
		if err := rc.Journal(device, Undo{Kind: UndoHostSetting, Desc: fmt.Sprintf("restore %s %s on %s to %s", s.Kind, s.Key, device, before),
			Found: before, Args: map[string]string{"kind": s.Kind, "key": s.Key, "value": before}}); err != nil {
			return host.Change{}, err
		}
	}
	ch, _, err := h.Apply(ctx, s)
	if err != nil {
		return ch, err
	}
	rc.Event(results.Event{Type: "setting", Device: device, Message: fmt.Sprintf("%s %s: %s -> %s", s.Kind, ch.Key, ch.Before, ch.After),
		Fields: map[string]any{"kind": ch.Kind, "key": ch.Key, "value": ch.Value, "before": ch.Before, "after": ch.After}})
	return ch, nil
}

// HostAgent makes sure the hostagent of this build runs on a host (installed
// only when the host has a different one) and returns it; the driver stops
// it when the run closes the host, if it started it.
func (rc *RunContext) HostAgent(ctx context.Context, device string) (*host.Agent, error) {
	h, err := As[host.AgentRunner](rc, device)
	if err != nil {
		return nil, err
	}
	a, in, err := h.EnsureAgent(ctx)
	if err != nil {
		return nil, err
	}
	if rc.once("hostagent/" + device) {
		rc.Event(results.Event{Type: "setting", Device: device, Message: fmt.Sprintf("hostagent %s at %s (replaced: %v), listening on %s", in.Version, in.Path, in.Replaced, a.Addr),
			Fields: map[string]any{"hostagent_version": in.Version, "previous_version": in.Previous, "replaced": in.Replaced, "sha256": in.SHA256, "machine": in.Machine, "started": a.Started}})
	}
	return a, nil
}
