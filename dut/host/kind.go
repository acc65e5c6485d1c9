package host

import (
	"context"
	"net/http"
)

// The host kind's interfaces: what recipes and the run engine use of an
// end host. Linux over SSH (Host, this package's driver) implements them
// all; a recipe asks the run for the one it needs and never names Host.

// Settings changes a host's settings (sysctls, a route's rto_min) and puts
// them back.
type Settings interface {
	// Current reads a setting's present value, as Restore takes it.
	Current(ctx context.Context, s Setting) (string, error)
	// Apply changes a setting and says what it was and is.
	Apply(ctx context.Context, s Setting) (Change, Undo, error)
	// Restore puts back a value Current read.
	Restore(ctx context.Context, s Setting) error
}

// AgentRunner runs this build's hostagent on the host.
type AgentRunner interface {
	// EnsureAgent makes sure the hostagent of this build runs (installed
	// only when the host has another) and returns how to reach it.
	EnsureAgent(ctx context.Context) (*Agent, Installed, error)
}

// Iperf3Runner runs iperf3 flows from the host.
type Iperf3Runner interface {
	Iperf3(ctx context.Context, f Iperf3Flow) (Iperf3Report, error)
	Iperf3Running(ctx context.Context) (bool, error)
}

// Commands runs shell commands on the host.
type Commands interface {
	Run(ctx context.Context, cmd string) (Result, error)
}

// Reach is how to speak HTTP to services on the host's loopback.
type Reach interface {
	HTTPClient() *http.Client
}

// Capabilities a host driver may declare.
const (
	CapAgent    = "hostagent" // AgentRunner
	CapIperf3   = "iperf3"    // Iperf3Runner
	CapSettings = "settings"  // Settings
)

var (
	_ Settings     = (*Host)(nil)
	_ AgentRunner  = (*Host)(nil)
	_ Iperf3Runner = (*Host)(nil)
	_ Commands     = (*Host)(nil)
	_ Reach        = (*Host)(nil)
)
