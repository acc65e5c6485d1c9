package host

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"testbed/hostagent"
)

// A trial's deadline is on the host's clock, as its FCT is: a request
// sent into a dark fibre times out when the host's clock reaches the
// deadline, however long the agent asked for, without waiting for it in
// real time (an hour here: the test would hang); the host's clock shows
// the wait. On the real clock, a loaded machine computing a trial slowly
// timed out trials whose simulated FCT was microseconds.
func TestTrialDeadlineIsOnTheHostsClock(t *testing.T) {
	var up atomic.Bool
	up.Store(true)
	n := NewHostNet(func(string) (Path, error) { return Path{Up: up.Load(), FEC: "none", Bps: 25e9}, nil }, 1)
	n.Route("sw1", "sw2", "f12")
	n.Route("sw2", "sw1", "f21")
	h1, err := n.AddHost(HostOptions{Name: "h1", Addr: netip.MustParsePrefix("10.0.0.1/24"), Switch: "sw1"})
	if err != nil {
		t.Fatal(err)
	}
	defer h1.Close()
	h2, err := n.AddHost(HostOptions{Name: "h2", Addr: netip.MustParsePrefix("10.0.0.2/24"), Switch: "sw2"})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln, err := h2.listen(ctx, "tcp", "10.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := hostagent.ServeFCT(ln, nil)
	defer srv.Close()
	// The fibre goes dark once the connection is up.
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := h1.dial(ctx, network, address)
		up.Store(false)
		return c, err
	}
	before := h1.clock.now()
	const hour = 3_600_000
	_, err = hostagent.RunFCTClock(ctx, hostagent.FCTRunRequest{Target: ln.Addr().String(), Trials: 3, TrialTimeoutMS: hour}, dial, h1.clock.now, nil)
	if err == nil || !strings.Contains(err.Error(), "no answer within the trial timeout 1h0m0s") {
		t.Fatalf("trial into a dark fibre: %v; want the trial timeout", err)
	}
	if waited := h1.clock.now() - before; waited < time.Hour-time.Minute || waited > time.Hour+time.Minute {
		t.Errorf("the host's clock moved %v during the timed-out trial, want the hour of its deadline", waited)
	}
}
