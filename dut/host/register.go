package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"testbed/drivers"
	"testbed/hostagent"
	"testbed/transport"
)

// Kind is the inventory's kind for an end host.
const Kind = "host"

// Undo kinds of the host kind (the run journals them by these names).
const (
	UndoSetting         = "host.setting"              // {kind, key, value}: put a setting back
	UndoReactorTeardown = "hostagent.reactor-down"    // {}: remove REACToR classes and flows
	UndoFCTServerStop   = "hostagent.fct-server-stop" // {id}: stop an FCT server
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
func init() {
	drivers.Register(drivers.Driver{
		Kind: Kind, Name: "linux-ssh",
		Capabilities: []string{CapAgent, CapIperf3, CapSettings},
		Options:      driverOptions(),
		Open: func(ctx context.Context, c drivers.Config) (drivers.Device, error) {
			o, err := optionsOf(c)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.Name, err)
			}
			return Open(ctx, c.Address, o)
		},
		Undo: map[string]drivers.UndoFunc{
			UndoSetting: func(ctx context.Context, dev drivers.Device, raw json.RawMessage) error {
				var a struct{ Kind, Key, Value string }
				h, err := undoArgs[Settings](dev, raw, &a)
				if err != nil {
					return err
				}
				return h.Restore(ctx, Setting{Kind: a.Kind, Key: a.Key, Value: a.Value})
			},
			UndoReactorTeardown: func(ctx context.Context, dev drivers.Device, raw json.RawMessage) error {
				c, err := agentOf(ctx, dev, raw, nil)
				if err != nil {
					return err
				}
				return c.ReactorTeardown(ctx)
			},
			UndoFCTServerStop: func(ctx context.Context, dev drivers.Device, raw json.RawMessage) error {
				var a struct {
					ID string `json:"id"`
				}
				c, err := agentOf(ctx, dev, raw, &a)
				if err != nil {
					return err
				}
				var ae *hostagent.APIError
				if _, err := c.StopFCTServer(ctx, a.ID); err != nil && !(errors.As(err, &ae) && ae.Kind == hostagent.KindNotFound) {
					return err
				}
				return nil
			},
		},
	})
}

// driverOptions are the options a host may carry: the driver's (above)
// and those the REACToR recipes and the simulated lab's twin read.
func driverOptions() map[string]drivers.Option {
	t := drivers.TextOption
	return map[string]drivers.Option{
		"known_hosts": t("the known_hosts file"), "agent_dir": t("where the hostagent binary goes"),
		"state_dir": t("the hostagent's pid file and logs"), "sysctl": t("the sysctl command"), "ip": t("the ip command"),
		"hostagent_source":   t("the testbed module to build the hostagent from"),
		"hostagent_<goarch>": t("a prebuilt hostagent for linux/<goarch>"),
		"hostagent_version":  t("the version a prebuilt hostagent must report"),
		"reactor":            t("the REACToR the host hangs off"),
		"reactor_eps_gbps":   t("what the REACToR's packet switch carries at the host's port, in Gb/s"),
	}
}

// optionsOf turns an inventory device's settings into Options.
func optionsOf(c drivers.Config) (Options, error) {
	var so transport.SSHOptions
	if c.SSH != nil {
		var err error
		if so, err = c.SSH(); err != nil {
			return Options{}, err
		}
	}
	src := AgentSource{ModuleDir: c.Option("hostagent_source", true), Version: c.Options["hostagent_version"], Prebuilt: map[string]string{}}
	for k, v := range c.Options {
		if goarch, ok := strings.CutPrefix(k, "hostagent_"); ok && goarch != "source" && goarch != "version" {
			src.Prebuilt[goarch] = drivers.ExpandHome(v)
		}
	}
	return Options{
		SSH:        so,
		Name:       c.Name,
		Timeout:    c.Timeout,
		AgentDir:   c.Options["agent_dir"],
		StateDir:   c.Options["state_dir"],
		Sysctl:     c.Options["sysctl"],
		IP:         c.Options["ip"],
		Agent:      src,
		Transcript: c.Transcript,
	}, nil
}

// undoArgs checks the driver implements T and decodes an undo's arguments
// (none when args is nil).
func undoArgs[T any](dev drivers.Device, raw json.RawMessage, args any) (T, error) {
	var zero T
	t, ok := dev.(T)
	if !ok {
		return zero, fmt.Errorf("host driver %T does not implement the interface this undo needs (%T)", dev, &zero)
	}
	if args == nil {
		return t, nil
	}
	if len(raw) == 0 {
		return zero, fmt.Errorf("undo without its arguments")
	}
	if err := json.Unmarshal(raw, args); err != nil {
		return zero, fmt.Errorf("undo arguments %s: %w", raw, err)
	}
	return t, nil
}

// agentOf reaches a host's hostagent (started if none runs).
func agentOf(ctx context.Context, dev drivers.Device, raw json.RawMessage, args any) (*hostagent.Client, error) {
	h, err := undoArgs[AgentRunner](dev, raw, args)
	if err != nil {
		return nil, err
	}
	a, _, err := h.EnsureAgent(ctx)
	if err != nil {
		return nil, err
	}
	return hostagent.NewClient(a.Client, a.BaseURL), nil
}
