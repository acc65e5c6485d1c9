package simlab

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"testbed/hostagent"
	"testbed/simlab/ocs"
	"testbed/simlab/reactor"
	"testbed/simlab/world"
)

// fabricBench is a fabric of n hosts on an n-port switch, each host's
// host control served by a hostagent over HTTP on loopback.
type fabricBench struct {
	ocs     *ocs.MicroOCS
	fab     *reactor.ReactorFabric
	clients []*hostagent.Client
	addrs   []netip.Addr
	names   []string
	// setupTook is how long setup's n requests took on the switch's
	// clock: the measured round trips a start time must leave room for
	// (a fixed margin is passed on a loaded machine, under the race
	// detector most of all).
	setupTook time.Duration
}

func newFabricBench(t testing.TB, n int, eps float64) *fabricBench {
	return newFabricBenchOn(t, n, eps, nil, 0)
}

// newFabricBenchOn is newFabricBench on a switch with the given clock (nil:
// the wall clock) and a fabric whose pump looks every tick (0: its
// default).
func newFabricBenchOn(t testing.TB, n int, eps float64, clock func() time.Duration, tick time.Duration) *fabricBench {
	t.Helper()
	w := world.New(11)
	m, err := ocs.NewMicroOCS(w, "ocs9", ocs.MicroOCSOptions{Ports: n, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	b := &fabricBench{ocs: m}
	o := reactor.ReactorFabricOptions{Name: "rtor9", OCS: &fabricSwitch{m: m}, LinkBps: 10e9, EPSBps: eps, Seed: 3, Tick: tick}
	for i := range n {
		b.names = append(b.names, fmt.Sprintf("x%d", i+1))
		b.addrs = append(b.addrs, netip.AddrFrom4([4]byte{10, 9, 0, byte(i + 1)}))
		o.Hosts, o.Addrs, o.Ports = append(o.Hosts, b.names[i]), append(o.Addrs, b.addrs[i]), append(o.Ports, i+1)
	}
	if b.fab, err = reactor.NewReactorFabric(o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.fab.Close() })
	for i := range n {
		a := hostagent.New(hostagent.Options{Hostname: b.names[i], Reactor: b.fab.HostControl(i, "eth1")})
		srv := httptest.NewServer(a.Handler())
		t.Cleanup(func() { srv.Close(); a.Close() })
		b.clients = append(b.clients, hostagent.NewClient(srv.Client(), srv.URL))
	}
	return b
}

// setup gives every host a class per other host and an EPS rate.
func (b *fabricBench) setup(t testing.TB, ctx context.Context, eps float64) {
	t.Helper()
	t0 := b.ocs.Now()
	defer func() { b.setupTook = b.ocs.Now() - t0 }()
	for i, c := range b.clients {
		s := hostagent.ReactorSetup{Interface: "eth1", EPSBps: eps, PFC: len(b.clients) <= 8}
		for j := range b.clients {
			if j != i {
				s.Destinations = append(s.Destinations, hostagent.ReactorDestination{Name: b.names[j], Address: b.addrs[j].String()})
			}
		}
		if _, err := c.ReactorSetup(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
}

// fabricRoundRobin is §5.2's schedule on the switch: n-1 shifts per period.
func fabricRoundRobin(n int, period, night time.Duration) ocs.OCSSchedule {
	s := ocs.OCSSchedule{Period: period, Night: night}
	dur := (period - time.Duration(n-1)*night) / time.Duration(n-1)
	for k := 1; k < n; k++ {
		sl := ocs.OCSSlot{Duration: dur}
		for i := 1; i <= n; i++ {
			sl.Circuits = append(sl.Circuits, ocs.OCSCircuit{In: i, Out: (i-1+k)%n + 1})
		}
		s.Slots = append(s.Slots, sl)
	}
	return s
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// §5.2's all-to-all through the fabric: the switch plays the round robin,
// every host streams a bulk flow to every other; what the receivers count
// follows from the slot arithmetic, the PFC delays and the room §3.3
// leaves for the ACKs.
func TestFabricAllToAll(t *testing.T) {
	const n = 8
	b := newFabricBench(t, n, 10e9)
	ctx := testCtx(t)
	b.setup(t, ctx, 1e9)
	const W, dlt = 1500 * time.Microsecond, 30 * time.Microsecond
	if err := b.ocs.Load(fabricRoundRobin(n, W, dlt)); err != nil {
		t.Fatal(err)
	}
	// n requests for the flows and the start: room for them four times
	// over, as long as setup's n requests took.
	start := b.ocs.Now() + 150*time.Millisecond + 4*b.setupTook
	const warm, periods = 4, 16
	from, to := start+warm*W, start+(warm+periods)*W
	for i, c := range b.clients {
		var fs []hostagent.ReactorFlowRequest
		for j := range n {
			if j != i {
				fs = append(fs, hostagent.ReactorFlowRequest{Dst: b.names[j], Kind: hostagent.FlowBulk, StartNs: int64(start), StopNs: int64(to + W),
					MeasureFromNs: int64(from), MeasureToNs: int64(to)})
			}
		}
		if _, err := c.ReactorStartFlows(ctx, fs...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.ocs.Start(start, false); err != nil {
		t.Fatal(err)
	}
	got := make([]float64, n)
	for i, c := range b.clients {
		fs, err := c.ReactorWaitClock(ctx, int64(to), 5*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs.Received) != n-1 || len(fs.Sent) != n-1 {
			t.Fatalf("host %d: %d flows received, %d sent", i, len(fs.Received), len(fs.Sent))
		}
		for _, f := range fs.Received {
			if !f.Measured {
				t.Fatalf("host %d: flow %s not measured at %d (to %d)", i, f.ID, fs.ClockNs, to)
			}
			got[i] += f.GoodputBps
		}
	}
	if err := b.fab.Err(); err != nil {
		t.Fatal(err)
	}
	// The expectation, from §5.2's numbers and §3.4's PFC delays alone
	// (as in reactormodel's own test): a slot loses half of each delay's
	// spread, and circuits leave room for the ACKs (one 90-byte ACK per
	// two 1538-byte frames).
	slot := 1500.0 / (n - 1)
	lit := slot - 30
	loss := (1.3-1.2)/2 + (2.188-1.014)/2
	f := (n - 1) * (lit - loss) / 1500
	ack := 90.0 / (2 * 1538)
	x := 1 / (1 + f*ack)
	want := f * x * 10e9 * (1500.0 - 52) / (1500 + 38)
	for i, g := range got {
		if math.Abs(g-want) > 0.003*want {
			t.Errorf("host %d receives %.4g b/s, want %.4g within 0.3%%", i, g, want)
		}
	}
	t.Logf("per host %.3f Gb/s (want %.3f)", got[0]/1e9, want/1e9)

	// Every circuit the ToR opened shows in its source's window log, in
	// the switch's slots.
	ws, err := b.clients[0].ReactorWindows(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws.Windows) < (warm+periods)*(n-1) {
		t.Fatalf("%d windows", len(ws.Windows))
	}
	for _, w := range ws.Windows[:n-1] {
		if w.Period != 0 || w.Class != b.names[w.Slot+1] || w.Bytes <= 0 || w.CloseNs <= w.OpenNs || w.OpenNs < int64(start) {
			t.Errorf("window %+v", w)
		}
	}
	// The demand report is the classes' queues: bulk flows keep theirs
	// full until they stop.
	d, err := b.clients[0].ReactorDemand(ctx)
	if err != nil || len(d.Classes) != n {
		t.Fatalf("demand %+v, %v", d, err)
	}
}

// A flow added while the schedule runs starts when asked and does not
// change what came before (the model is replayed with it); a measurement
// that starts in the data plane's past is refused.
func TestFabricLateFlowAndReplay(t *testing.T) {
	const n = 4
	b := newFabricBench(t, n, 10e9)
	ctx := testCtx(t)
	b.setup(t, ctx, 1e9)
	const W = 1500 * time.Microsecond
	if err := b.ocs.Load(fabricRoundRobin(n, W, 30*time.Microsecond)); err != nil {
		t.Fatal(err)
	}
	start := b.ocs.Now() + 10*time.Millisecond + b.setupTook
	if _, err := b.ocs.Start(start, false); err != nil {
		t.Fatal(err)
	}
	paced := hostagent.ReactorFlowRequest{Dst: b.names[1], Kind: hostagent.FlowPaced, RateBps: 2e9, StartNs: int64(start),
		MeasureFromNs: int64(start + 2*W), MeasureToNs: int64(start + 6*W)}
	if _, err := b.clients[0].ReactorStartFlows(ctx, paced); err != nil {
		t.Fatal(err)
	}
	fs, err := b.clients[1].ReactorWaitClock(ctx, int64(start+6*W), 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	before := fs.Received[0]
	// Now another host's flow, later: the first flow's measurement stands.
	late := hostagent.ReactorFlowRequest{Dst: b.names[3], Kind: hostagent.FlowPaced, RateBps: 1e9}
	if _, err := b.clients[2].ReactorStartFlows(ctx, late); err != nil {
		t.Fatal(err)
	}
	fs, _ = b.clients[1].ReactorFlows(ctx)
	if after := fs.Received[0]; after.MeasuredBytes != before.MeasuredBytes || !after.Measured {
		t.Errorf("replay changed a measured flow: %+v, then %+v", before, after)
	}
	// 2 Gb/s paced into one class: its circuit (a third of the period,
	// less the nights) carries it all; the payload share of UDP frames.
	if want := 2e9 * (1500.0 - 28) / 1538; math.Abs(before.GoodputBps-want) > 0.02*want {
		t.Errorf("paced flow: %.4g b/s, want %.4g", before.GoodputBps, want)
	}
	old := paced
	old.MeasureFromNs, old.MeasureToNs = int64(start+W), int64(start+2*W)
	_, err = b.clients[0].ReactorStartFlows(ctx, old)
	var ae *hostagent.APIError
	if !errors.As(err, &ae) || ae.Kind != hostagent.KindConflict || !strings.Contains(err.Error(), "has passed") {
		t.Errorf("a measurement in the past: %v", err)
	}
	// Pause requests are the ToR's business.
	if _, err := b.clients[0].ReactorPause(ctx, hostagent.ReactorPause{Pause: []string{b.names[1]}}); !errors.Is(err, hostagent.ErrNotAvailable) {
		t.Errorf("pause: %v", err)
	}
	// Once the switch stops, the run ends and the flows stop.
	b.ocs.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b.fab.Step()
		fs, _ := b.clients[0].ReactorFlows(ctx)
		if len(fs.Sent) == 1 && fs.Sent[0].State == hostagent.FlowStopped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("flows after the switch stopped: %+v", fs.Sent)
		}
		time.Sleep(time.Millisecond)
	}
}

// A class's EPS rate limit set while the schedule runs holds from the
// data plane's present on: a paced EPS flow measured before it carries
// its rate, one measured after it the limit; and a replay (a late flow
// rebuilds the model from the run's start) sets the limit again at the
// same time, neither from the start nor never. The switch's clock is the
// test's and the pump looks only when asked, so the data plane is where
// the test puts it.
func TestFabricRateLimitHoldsThroughReplay(t *testing.T) {
	const n = 4
	var now atomic.Int64
	b := newFabricBenchOn(t, n, 10e9, func() time.Duration { return time.Duration(now.Load()) }, time.Hour)
	ctx := testCtx(t)
	b.setup(t, ctx, 10e9)
	const W = 1500 * time.Microsecond
	if err := b.ocs.Load(fabricRoundRobin(n, W, 30*time.Microsecond)); err != nil {
		t.Fatal(err)
	}
	start := time.Millisecond
	to := func(at time.Duration) {
		now.Store(int64(at))
		b.fab.Step()
	}
	// Two flows of host 0's EPS class: one before the limit, one after.
	a := hostagent.ReactorFlowRequest{Dst: b.names[1], EPS: true, Kind: hostagent.FlowPaced, RateBps: 4e9,
		StartNs: int64(start), StopNs: int64(start + 7*W), MeasureFromNs: int64(start + 2*W), MeasureToNs: int64(start + 6*W)}
	c := a
	c.StartNs, c.StopNs, c.MeasureFromNs, c.MeasureToNs = int64(start+8*W), 0, int64(start+9*W), int64(start+12*W)
	if _, err := b.clients[0].ReactorStartFlows(ctx, a, c); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ocs.Start(start, false); err != nil {
		t.Fatal(err)
	}
	to(start + 7*W)
	const limit = 1e9
	if _, err := b.clients[0].ReactorRates(ctx, hostagent.ReactorRates{RatesBps: map[string]float64{hostagent.ReactorEPS: limit}}); err != nil {
		t.Fatal(err)
	}
	to(start + 13*W)
	measured := func() []hostagent.ReactorFlow {
		t.Helper()
		fs, err := b.clients[1].ReactorFlows(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs.Received) != 2 || !fs.Received[0].Measured || !fs.Received[1].Measured {
			t.Fatalf("received at %d ns: %+v", fs.ClockNs, fs.Received)
		}
		return fs.Received
	}
	got := measured()
	share := (1500.0 - 28) / 1538 // the payload share of UDP frames
	for i, want := range []float64{4e9 * share, limit * share} {
		if g := got[i].GoodputBps; math.Abs(g-want) > 0.01*want {
			t.Errorf("flow %d (%s): %.4g b/s, want %.4g", i, got[i].ID, g, want)
		}
	}
	// A late flow of other hosts replays the run: what was measured stays.
	late := hostagent.ReactorFlowRequest{Dst: b.names[3], Kind: hostagent.FlowPaced, RateBps: 1e9}
	if _, err := b.clients[2].ReactorStartFlows(ctx, late); err != nil {
		t.Fatal(err)
	}
	again := measured()
	for i := range got {
		if again[i].MeasuredBytes != got[i].MeasuredBytes {
			t.Errorf("flow %d (%s): %d B measured, %d B after a replay", i, got[i].ID, got[i].MeasuredBytes, again[i].MeasuredBytes)
		}
	}
	if err := b.fab.Err(); err != nil {
		t.Fatal(err)
	}
}

// A host's REACToR clock is the data plane's: once the switch runs a
// schedule, it does not pass the run's start until the fabric has begun
// that run, so a wait for the clock to pass a measurement's end finds the
// flow measured. (The fabric's pump begins a run when it next looks at
// the switch; a pump starved of CPU for longer than the run, on a loaded
// machine, let a host report the switch's clock with the flows still
// waiting: TestDefaultBenchSummaries/reactor-reconfig's "flow ... was not
// measured".) The switch's clock is the test's and the pump looks only
// when asked.
func TestFabricClockWaitsForTheRunToBegin(t *testing.T) {
	const n = 3
	var now atomic.Int64
	b := newFabricBenchOn(t, n, 10e9, func() time.Duration { return time.Duration(now.Load()) }, time.Hour)
	ctx := testCtx(t)
	b.setup(t, ctx, 1e9)
	const W = 1500 * time.Microsecond
	if err := b.ocs.Load(fabricRoundRobin(n, W, 30*time.Microsecond)); err != nil {
		t.Fatal(err)
	}
	start := time.Millisecond
	fl := hostagent.ReactorFlowRequest{Dst: b.names[1], Kind: hostagent.FlowBulk, StartNs: int64(start),
		MeasureFromNs: int64(start + W), MeasureToNs: int64(start + 2*W)}
	if _, err := b.clients[0].ReactorStartFlows(ctx, fl); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ocs.Start(start, false); err != nil {
		t.Fatal(err)
	}
	check := func(when string) hostagent.ReactorFlows {
		t.Helper()
		fs, err := b.clients[1].ReactorFlows(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs.Received) != 1 {
			t.Fatalf("%s: %d flows received", when, len(fs.Received))
		}
		if fs.ClockNs >= fl.MeasureToNs && !fs.Received[0].Measured {
			t.Errorf("%s: the host's clock is at %d ns, past the measurement's end %d, and the flow is %s, not measured",
				when, fs.ClockNs, fl.MeasureToNs, fs.Received[0].State)
		}
		return fs
	}
	// The switch is well into the run; the pump has not looked.
	now.Store(int64(start + 5*W))
	if fs := check("before the fabric begins the run"); fs.ClockNs > int64(start) {
		t.Errorf("before the fabric begins the run the host's clock reads %d ns, past the run's start %d", fs.ClockNs, start)
	}
	b.fab.Step()
	if fs := check("after"); fs.ClockNs < fl.MeasureToNs || !fs.Received[0].Measured {
		t.Errorf("after the fabric's step: clock %d ns, flow %+v", fs.ClockNs, fs.Received[0])
	}
}

func TestFabricSetupChecksDestinations(t *testing.T) {
	b := newFabricBench(t, 3, 10e9)
	ctx := testCtx(t)
	for _, c := range []struct {
		s    hostagent.ReactorSetup
		want string
	}{
		{hostagent.ReactorSetup{Interface: "eth0", EPSBps: 1e9, Destinations: []hostagent.ReactorDestination{{Name: "a", Address: "10.9.0.2"}}}, "link to the REACToR is eth1"},
		{hostagent.ReactorSetup{Interface: "eth1", EPSBps: 1e9, Destinations: []hostagent.ReactorDestination{{Name: "a", Address: "10.9.0.7"}}}, "not a host of REACToR"},
		{hostagent.ReactorSetup{Interface: "eth1", EPSBps: 1e9, Destinations: []hostagent.ReactorDestination{{Name: "a", Address: "10.9.0.1"}}}, "this host itself"},
		{hostagent.ReactorSetup{Interface: "eth1", EPSBps: 20e9, Destinations: []hostagent.ReactorDestination{{Name: "a", Address: "10.9.0.2"}}}, "eps_bps"},
	} {
		var ae *hostagent.APIError
		if _, err := b.clients[0].ReactorSetup(ctx, c.s); !errors.As(err, &ae) || ae.Kind != hostagent.KindBadRequest || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.s, err, c.want)
		}
	}
	if _, err := b.clients[0].ReactorStartFlows(ctx, hostagent.ReactorFlowRequest{Dst: "x2", Kind: hostagent.FlowBulk}); err == nil || !strings.Contains(err.Error(), "no classes") {
		t.Errorf("flows before classes: %v", err)
	}
}

// BenchmarkFabricRateLimits is the data plane's cost for 10 ms of the
// switch's clock: 16 hosts, all-to-all bulk flows under the round robin,
// every class of every host rate limited (272 limits in force from the
// run's start). The switch's clock is the benchmark's, and the pump looks
// only when asked (Step), so each op advances the model by the same 10 ms.
func BenchmarkFabricRateLimits(b *testing.B) {
	const n = 16
	var now atomic.Int64
	clock := func() time.Duration { return time.Duration(now.Load()) }
	fb := newFabricBenchOn(b, n, 10e9, clock, time.Hour)
	ctx := testCtx(b)
	fb.setup(b, ctx, 1e9)
	for i, c := range fb.clients {
		r := hostagent.ReactorRates{RatesBps: map[string]float64{hostagent.ReactorEPS: 0.5e9}}
		for j := range n {
			if j != i {
				r.RatesBps[fb.names[j]] = 0.5e9
			}
		}
		if _, err := c.ReactorRates(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	const W = 1500 * time.Microsecond
	if err := fb.ocs.Load(fabricRoundRobin(n, W, 30*time.Microsecond)); err != nil {
		b.Fatal(err)
	}
	start := time.Millisecond
	for i, c := range fb.clients {
		var fs []hostagent.ReactorFlowRequest
		for j := range n {
			if j != i {
				fs = append(fs, hostagent.ReactorFlowRequest{Dst: fb.names[j], Kind: hostagent.FlowBulk, StartNs: int64(start)})
			}
		}
		if _, err := c.ReactorStartFlows(ctx, fs...); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := fb.ocs.Start(start, false); err != nil {
		b.Fatal(err)
	}
	now.Store(int64(start))
	fb.fab.Step()
	b.ResetTimer()
	for range b.N {
		now.Add(int64(10 * time.Millisecond))
		fb.fab.Step()
	}
	b.StopTimer()
	if err := fb.fab.Err(); err != nil {
		b.Fatal(err)
	}
	fs, err := fb.clients[0].ReactorFlows(ctx)
	if err != nil {
		b.Fatal(err)
	}
	// The data plane follows the switch's clock 300 us behind, on a
	// 100 us grid.
	if want := int64(start) + int64(b.N)*int64(10*time.Millisecond) - int64(time.Millisecond); fs.ClockNs < want {
		b.Fatalf("the data plane is at %d ns, want at least %d", fs.ClockNs, want)
	}
	b.ReportMetric(float64(fs.ClockNs-int64(start))/float64(b.N)/1e6, "sim-ms/op")
}
