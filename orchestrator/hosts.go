package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"testbed/dut/host"
	"testbed/inventory"
	"testbed/results"
	"testbed/transport"
)

// Hosts (kind host, driver linux-ssh) are reached at ssh://user@host[:port]
// with the credentials of the inventory (key_file, ssh_agent, a password
// reference) and these options:
//
//	known_hosts        the known_hosts file (default ~/.ssh/known_hosts)
//	agent_dir          where the hostagent binary goes (default ~/.testbed/bin)
//	state_dir          its pid file and logs (default ~/.testbed/hostagent)
//	sysctl, ip         the commands used for settings (default from PATH)
//	hostagent_source   the testbed module to build the hostagent from
//	                   (default: found from the working directory upwards)
//	hostagent_<goarch> a prebuilt hostagent for linux/<goarch>, used when
//	                   it cannot be built (no Go toolchain or no source)
//	hostagent_version  the version a prebuilt hostagent must report

// hostOptions turns an inventory device into host driver options.
func hostOptions(d *inventory.Device, timeout time.Duration, tr *transport.Transcript) (host.Options, error) {
	so, err := sshOptions(d)
	if err != nil {
		return host.Options{}, err
	}
	src := host.AgentSource{ModuleDir: inventory.ExpandHome(d.Options["hostagent_source"]), Version: d.Options["hostagent_version"], Prebuilt: map[string]string{}}
	for k, v := range d.Options {
		if goarch, ok := strings.CutPrefix(k, "hostagent_"); ok && goarch != "source" && goarch != "version" {
			src.Prebuilt[goarch] = inventory.ExpandHome(v)
		}
	}
	return host.Options{
		SSH:        so,
		Name:       d.Name,
		Timeout:    timeout,
		AgentDir:   d.Options["agent_dir"],
		StateDir:   d.Options["state_dir"],
		Sysctl:     d.Options["sysctl"],
		IP:         d.Options["ip"],
		Agent:      src,
		Transcript: tr,
	}, nil
}

// openHost connects to a host and reads its identity.
func openHost(ctx context.Context, d *inventory.Device, timeout time.Duration, tr *transport.Transcript) (*OpenedDevice, error) {
	o, err := hostOptions(d, timeout, tr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Name, err)
	}
	// The driver's errors begin with the device's name already.
	h, err := host.Open(ctx, d.Address, o)
	if err != nil {
		return nil, fmt.Errorf("%w (opening %s at %s)", err, d.Driver, d.Address)
	}
	id, err := h.Identity(ctx)
	if err != nil {
		h.Close()
		return nil, err
	}
	return &OpenedDevice{Dev: d, Driver: h, Identity: id, closer: h}, nil
}

// Host returns the named host's driver.
func (rc *RunContext) Host(name string) (*host.Host, error) {
	d, ok := rc.devices.Get(name)
	if !ok {
		return nil, fmt.Errorf("device %s is not part of this run", name)
	}
	h, ok := d.Driver.(*host.Host)
	if !ok {
		return nil, fmt.Errorf("device %s is a %s, not a host", name, d.Dev.Kind)
	}
	return h, nil
}

// ApplyHostSetting changes a setting on a host for the rest of the run. The
// values before and after go into the bundle as a "setting" event; the
// first time a setting is touched, the undo that restores the value found
// is registered.
func (rc *RunContext) ApplyHostSetting(ctx context.Context, device string, s host.Setting) (host.Change, error) {
	h, err := rc.Host(device)
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
	h, err := rc.Host(device)
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
