// Package trafficgen drives traffic generators. Generator is the interface
// recipes use; the OTG driver speaks the Open Traffic Generator REST API
// (Keysight Ixia-c and others).
package trafficgen

import (
	"context"
	"time"

	"testbed/transport"
)

// Generator is a traffic generator with named test ports.
type Generator interface {
	Identity(ctx context.Context) (transport.Identity, error)
	// Configure replaces the whole configuration (ports and flows).
	Configure(ctx context.Context, cfg Config) error
	// Start starts transmitting the named flows (all flows if none named).
	Start(ctx context.Context, flows ...string) error
	// Stop stops transmitting the named flows (all if none named).
	Stop(ctx context.Context, flows ...string) error
	FlowMetrics(ctx context.Context, flows ...string) ([]FlowMetrics, error)
	PortMetrics(ctx context.Context, ports ...string) ([]PortMetrics, error)
	Close() error
}

// Config is a set of test ports and the flows between them.
type Config struct {
	Ports []Port
	Flows []Flow
}

// Port is a test port; Location is the generator's own locator for it.
type Port struct {
	Name     string
	Location string
}

// Flow is a stream of fixed-size frames from one port to another.
type Flow struct {
	Name        string
	TxPort      string
	RxPort      string
	FrameBytes  int     // L2 frame size including FCS, e.g. 1518
	RatePercent float64 // of line rate, (0, 100]
	Packets     int64   // frames to send; 0 means continuous
}

// State of a flow's transmission.
const (
	StateStarted = "started"
	StateStopped = "stopped"
	StatePaused  = "paused"
)

// FlowMetrics are a flow's counters.
type FlowMetrics struct {
	Name     string
	Transmit string // StateStarted, StateStopped, StatePaused
	FramesTx int64
	FramesRx int64
	BytesTx  int64
	BytesRx  int64
	// FramesTxRate is the current transmit rate in frames per second.
	FramesTxRate float64
	// Loss is the generator's own loss figure in percent, if it reports one.
	Loss float64
}

// PortMetrics are a port's counters.
type PortMetrics struct {
	Name     string
	FramesTx int64
	FramesRx int64
	BytesTx  int64
	BytesRx  int64
}

// Options configure a driver when it is opened.
type Options struct {
	Timeout    time.Duration
	Transcript *transport.Transcript
	// InsecureTLS skips certificate checks (Ixia-c ships a self-signed cert).
	InsecureTLS bool
	// MaxReply bounds a REST reply's body (0: DefaultMaxReply).
	MaxReply int
}

// DefaultMaxReply bounds a REST generator's reply: its largest is the
// metrics of every flow, some 300 bytes a flow, so 64 MiB holds over
// 200,000 flows, far more than a port set runs; a longer body is not a
// reply, and reading it whole would hold whatever the far end sends.
const DefaultMaxReply = 64 << 20
