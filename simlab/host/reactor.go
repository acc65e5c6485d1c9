package host

import (
	"context"
	"fmt"

	"testbed/hostagent"
)

// SetReactor gives the host the REACToR host control its agent serves
// (the fabric it is cabled to); the agent started next uses it.
func (h *SimHost) SetReactor(r hostagent.ReactorHost) {
	h.mu.Lock()
	h.reactor = r
	h.mu.Unlock()
}

// reactorHost is what the host's agent does REACToR host control with:
// its fabric's, or nothing on a host that is on none. A simulated host
// never falls back to the machine's own tc. h.mu held.
func (h *SimHost) reactorHost() hostagent.ReactorHost {
	if h.reactor != nil {
		return h.reactor
	}
	return noReactor{host: h.name, sw: h.sw}
}

// noReactor answers not_available for a simulated host that no REACToR
// serves.
type noReactor struct{ host, sw string }

func (n noReactor) err() error {
	return &hostagent.APIError{Status: 501, Kind: hostagent.KindNotAvailable,
		Message: fmt.Sprintf("not available on this host: simulated host %s is cabled to %s, not to a REACToR", n.host, n.sw)}
}

func (n noReactor) Status(context.Context) (hostagent.ReactorStatus, error) {
	return hostagent.ReactorStatus{Backend: "simulated", Reason: fmt.Sprintf("simulated host %s is cabled to %s, not to a REACToR", n.host, n.sw)}, nil
}
func (n noReactor) Setup(context.Context, hostagent.ReactorSetup) error          { return n.err() }
func (n noReactor) Teardown(context.Context) error                               { return nil }
func (n noReactor) Pause(context.Context, hostagent.ReactorPause) error          { return n.err() }
func (n noReactor) SetRates(context.Context, hostagent.ReactorRates) error       { return n.err() }
func (n noReactor) SetSchedule(context.Context, hostagent.ReactorSchedule) error { return n.err() }
func (n noReactor) Heartbeat(context.Context, hostagent.ReactorHeartbeat) (hostagent.ReactorHeartbeatAck, error) {
	return hostagent.ReactorHeartbeatAck{}, n.err()
}
func (n noReactor) Demand(context.Context) (hostagent.ReactorDemand, error) {
	return hostagent.ReactorDemand{}, n.err()
}
func (n noReactor) Windows(context.Context, uint64) (hostagent.ReactorWindows, error) {
	return hostagent.ReactorWindows{}, n.err()
}
func (n noReactor) StartSink(context.Context, hostagent.ReactorSinkRequest) (hostagent.ReactorSink, error) {
	return hostagent.ReactorSink{}, n.err()
}
func (n noReactor) StartFlows(context.Context, hostagent.ReactorFlowsRequest) ([]hostagent.ReactorFlow, error) {
	return nil, n.err()
}
func (n noReactor) Flows(context.Context) (hostagent.ReactorFlows, error) {
	return hostagent.ReactorFlows{}, n.err()
}
func (n noReactor) StopFlows(context.Context) error { return nil }
func (n noReactor) Close() error                    { return nil }
