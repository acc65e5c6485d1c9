package trafficgen_test

// The OTG emulator as the Open Traffic Generator project's own Go client,
// gosnappi v1.20.0 (the release whose models the emulator follows), sees
// it over HTTP: a config with every rate form, fixed and increment sizes,
// a flow with two rx ports, fixed_seconds and fixed_packets durations;
// start; flow and port metrics read through every getter of
// gosnappi.FlowMetric, MetricTimestamp, MetricLatency and PortMetric (a
// getter of a field the server left out dereferences nil); the
// metric_names and column_names filters; stop. The emulator's clock is
// its own (simulated time, TimeScale times the wall clock): what a client
// can check is that it is one clock, a flow's rate times the time its
// timestamps span giving its count.

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/open-traffic-generator/snappi/gosnappi"

	"testbed/simlab/physics"
	simtg "testbed/simlab/trafficgen"
	"testbed/simlab/world"
)

// gosnappiLab: eth1 transmits over fibre a (100 m) to eth2; eth4 over
// fibre b to eth3. The generator runs at its default time scale.
func gosnappiLab(t *testing.T) gosnappi.Api {
	t.Helper()
	w := world.New(7)
	tr, _ := physics.TransceiverByName("25GBASE-SR")
	fec, _ := physics.FECByName("none")
	v := w.NewVOA("voa1", "Keysight Technologies", "N7764A", "SIM1", "1.0", 2, 0, 60, 1.5, 1e6)
	fa := w.NewFibre("a", tr, fec, 1.0, 0.5, v.Channels[0])
	fa.LengthM = 100
	w.NewFibre("b", tr, fec, 1.0, 0.5, v.Channels[1])
	srv := simtg.NewOTGServer(w, []simtg.OTGPort{
		{Location: "eth1", TxFibre: "a"}, {Location: "eth2", RxFibre: "a"},
		{Location: "eth3", RxFibre: "b"}, {Location: "eth4", TxFibre: "b"},
	}, nil, simtg.OTGOptions{})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	api := gosnappi.NewApi()
	api.NewHttpTransport().SetLocation(srv.Addr())
	t.Cleanup(func() { api.Close() })
	return api
}

// flowCase is a flow of the config and the frame rate its rate form comes
// to at its mean frame size (IEEE 802.3: 20 B of preamble, SFD and gap per
// frame on the wire).
type flowCase struct {
	name    string
	tx      string
	rx      []string
	set     func(gosnappi.Flow)
	fps     float64
	frames  uint64 // frames it sends in all
	bytes   uint64 // bytes it sends in all
	arrives string // the port its fibre ends at
}

func wireFPS(bps float64, meanBytes float64) float64 { return bps / ((meanBytes + 20) * 8) }

func gosnappiFlows() []flowCase {
	// Sizes 64..127 step 1: 64 sizes, mean 95.5 B, sum 6112 B a cycle.
	incSum := uint64(0)
	for n := uint64(64); n <= 127; n++ {
		incSum += n
	}
	return []flowCase{
		{name: "pps", tx: "p1", rx: []string{"p3", "p2"}, arrives: "p2", fps: 1000, frames: 2000, bytes: 2000 * 128,
			set: func(f gosnappi.Flow) {
				f.Size().SetFixed(128)
				f.Rate().SetPps(1000)
				f.Duration().FixedSeconds().SetSeconds(2)
			}},
		{name: "bps", tx: "p4", rx: []string{"p3"}, arrives: "p3", fps: wireFPS(1e9, 95.5), frames: 6400, bytes: 100 * incSum,
			set: func(f gosnappi.Flow) {
				f.Size().Increment().SetStart(64).SetEnd(127).SetStep(1)
				f.Rate().SetBps(1_000_000_000)
				f.Duration().FixedPackets().SetPackets(6400)
			}},
		{name: "kbps", tx: "p1", rx: []string{"p2"}, arrives: "p2", fps: wireFPS(2e9, 1518), frames: 3000, bytes: 3000 * 1518,
			set: func(f gosnappi.Flow) {
				f.Size().SetFixed(1518)
				f.Rate().SetKbps(2_000_000)
				f.Duration().FixedPackets().SetPackets(3000)
			}},
		{name: "mbps", tx: "p1", rx: []string{"p2"}, arrives: "p2", fps: wireFPS(3e9, 512), frames: 0, bytes: 0,
			set: func(f gosnappi.Flow) {
				f.Size().SetFixed(512)
				f.Rate().SetMbps(3000)
				f.Duration().FixedSeconds().SetSeconds(0.5)
			}},
		{name: "gbps", tx: "p4", rx: []string{"p3"}, arrives: "p3", fps: wireFPS(10e9, 9000), frames: 1000, bytes: 1000 * 9000,
			set: func(f gosnappi.Flow) {
				f.Size().SetFixed(9000)
				f.Rate().SetGbps(10)
				f.Duration().FixedPackets().SetPackets(1000)
			}},
		{name: "percentage", tx: "p4", rx: []string{"p3"}, arrives: "p3", fps: wireFPS(0.1*25.78125e9*64/66, 1000), frames: 500, bytes: 500 * 1000,
			set: func(f gosnappi.Flow) {
				f.Size().SetFixed(1000)
				f.Rate().SetPercentage(10)
				f.Duration().FixedPackets().SetPackets(500)
			}},
	}
}

func gosnappiConfig(cases []flowCase) gosnappi.Config {
	cfg := gosnappi.NewConfig()
	for i, loc := range []string{"eth1", "eth2", "eth3", "eth4"} {
		cfg.Ports().Add().SetName(fmt.Sprintf("p%d", i+1)).SetLocation(loc)
	}
	for _, c := range cases {
		f := cfg.Flows().Add().SetName(c.name)
		f.TxRx().Port().SetTxName(c.tx).SetRxNames(c.rx)
		c.set(f)
		eth := f.Packet().Add().Ethernet()
		eth.Src().SetValue("02:00:00:00:00:01")
		eth.Dst().SetValue("02:00:00:00:00:02")
		f.Metrics().SetEnable(true).SetTimestamps(true)
		f.Metrics().Latency().SetEnable(true).SetMode(gosnappi.FlowLatencyMetricsMode.CUT_THROUGH)
	}
	return cfg
}

// present fails the test naming every field the server left out, before
// a getter would dereference it.
func present(t *testing.T, what string, fields map[string]bool) {
	t.Helper()
	var missing []string
	for name, ok := range fields {
		if !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%s: the server left out %s (gosnappi's getters would dereference nil)", what, strings.Join(missing, ", "))
	}
}

func flowMetricsOf(t *testing.T, api gosnappi.Api, req gosnappi.MetricsRequest) map[string]gosnappi.FlowMetric {
	t.Helper()
	resp, err := api.GetMetrics(req)
	if err != nil {
		t.Fatalf("get flow metrics: %v", err)
	}
	out := map[string]gosnappi.FlowMetric{}
	for _, m := range resp.FlowMetrics().Items() {
		out[m.Name()] = m
	}
	return out
}

func setTransmit(t *testing.T, api gosnappi.Api, state gosnappi.StateTrafficFlowTransmitStateEnum, flows ...string) {
	t.Helper()
	cs := gosnappi.NewControlState()
	cs.Traffic().FlowTransmit().SetState(state).SetFlowNames(flows)
	if _, err := api.SetControlState(cs); err != nil {
		t.Fatalf("%s: %v", state, err)
	}
}

func TestGosnappiEndToEnd(t *testing.T) {
	api := gosnappiLab(t)
	if v, err := api.GetVersion(); err != nil || v.ApiSpecVersion() != "1.20.0" {
		t.Fatalf("version: %v %v", v, err)
	}
	if err := api.CheckVersionCompatibility(); err != nil {
		t.Fatalf("gosnappi 1.20.0 against the emulator: %v", err)
	}
	cases := gosnappiFlows()
	if _, err := api.SetConfig(gosnappiConfig(cases)); err != nil {
		t.Fatalf("set config: %v", err)
	}
	got, err := api.GetConfig()
	if err != nil || len(got.Flows().Items()) != len(cases) || got.Flows().Items()[0].Rate().Pps() != 1000 {
		t.Fatalf("get config: %v %v", got, err)
	}
	setTransmit(t, api, gosnappi.StateTrafficFlowTransmitState.START)

	// Wait by asking until every flow has stopped by itself.
	all := gosnappi.NewMetricsRequest()
	all.Flow()
	var ms map[string]gosnappi.FlowMetric
	deadline := time.Now().Add(20 * time.Second)
	for {
		ms = flowMetricsOf(t, api, all)
		done := len(ms) == len(cases)
		for _, m := range ms {
			present(t, "flow "+m.Name(), map[string]bool{"transmit": m.HasTransmit()})
			done = done && m.Transmit() == gosnappi.FlowMetricTransmit.STOPPED
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("flows still running after 20 s: %v", ms)
		}
		time.Sleep(5 * time.Millisecond)
	}
	rxByPort := map[string]uint64{}
	txByPort := map[string]uint64{}
	for _, c := range cases {
		m := ms[c.name]
		if m == nil {
			t.Fatalf("no metrics for flow %s", c.name)
		}
		present(t, "flow "+c.name, map[string]bool{"name": m.HasName(), "port_tx": m.HasPortTx(), "port_rx": m.HasPortRx(),
			"frames_tx": m.HasFramesTx(), "frames_rx": m.HasFramesRx(), "bytes_tx": m.HasBytesTx(), "bytes_rx": m.HasBytesRx(),
			"frames_tx_rate": m.HasFramesTxRate(), "frames_rx_rate": m.HasFramesRxRate(), "loss": m.HasLoss(),
			"timestamps": m.HasTimestamps(), "latency": m.HasLatency()})
		ts, lat := m.Timestamps(), m.Latency()
		present(t, "flow "+c.name+" timestamps and latency", map[string]bool{
			"first_timestamp_ns": ts.HasFirstTimestampNs(), "last_timestamp_ns": ts.HasLastTimestampNs(),
			"minimum_ns": lat.HasMinimumNs(), "maximum_ns": lat.HasMaximumNs(), "average_ns": lat.HasAverageNs()})
		if m.PortTx() != c.tx || m.PortRx() != c.arrives {
			t.Errorf("flow %s: port_tx %s port_rx %s, want %s and %s", c.name, m.PortTx(), m.PortRx(), c.tx, c.arrives)
		}
		want := c.frames
		if want == 0 { // fixed_seconds: the frames that fit
			want = uint64(math.Floor(0.5 * c.fps))
		}
		if m.FramesTx() != want {
			t.Errorf("flow %s: frames_tx %d, want %d", c.name, m.FramesTx(), want)
		}
		if c.bytes != 0 && m.BytesTx() != c.bytes {
			t.Errorf("flow %s: bytes_tx %d, want %d", c.name, m.BytesTx(), c.bytes)
		}
		// One clock: the first and last frames' times span (n-1)/rate.
		span := (ts.LastTimestampNs() - ts.FirstTimestampNs()) / 1e9
		if got := 1 + span*c.fps; math.Abs(got-float64(m.FramesTx())) > 1e-6*float64(m.FramesTx())+1e-6 {
			t.Errorf("flow %s: %d frames, but its timestamps span %.9f s at %.3f frames/s (%.3f frames)", c.name, m.FramesTx(), span, c.fps, got)
		}
		if m.FramesRx() > m.FramesTx() || m.BytesRx() > m.BytesTx() || m.FramesTxRate() != 0 || m.FramesRxRate() != 0 {
			t.Errorf("flow %s stopped: %v", c.name, m)
		}
		if wantLoss := 100 * float64(m.FramesTx()-m.FramesRx()) / float64(m.FramesTx()); math.Abs(float64(m.Loss())-wantLoss) > 1e-3 {
			t.Errorf("flow %s: loss %v%%, counters say %v%%", c.name, m.Loss(), wantLoss)
		}
		// Cut-through latency over a fibre is its time of flight: fibre
		// a is 100 m long, b a patch cord.
		flight := 0.0
		if c.tx == "p1" {
			flight = 500
		}
		if lat.MinimumNs() != flight || lat.MaximumNs() != flight || lat.AverageNs() != flight {
			t.Errorf("flow %s: latency %v, want %v ns", c.name, lat, flight)
		}
		txByPort[c.tx] += m.FramesTx()
		rxByPort[c.arrives] += m.FramesRx()
	}
	if ms["pps"].FramesTx() != 2000 {
		t.Errorf("a 1000 pps flow for fixed_seconds 2 sent %d frames, want 2000", ms["pps"].FramesTx())
	}

	// Port metrics, every getter.
	ports := gosnappi.NewMetricsRequest()
	ports.Port()
	resp, err := api.GetMetrics(ports)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.PortMetrics().Items()) != 4 {
		t.Fatalf("port metrics: %v", resp)
	}
	for _, p := range resp.PortMetrics().Items() {
		present(t, "port "+p.Name(), map[string]bool{"name": p.HasName(), "location": p.HasLocation(), "link": p.HasLink(),
			"capture": p.HasCapture(), "frames_tx": p.HasFramesTx(), "frames_rx": p.HasFramesRx(), "bytes_tx": p.HasBytesTx(),
			"bytes_rx": p.HasBytesRx(), "frames_tx_rate": p.HasFramesTxRate(), "frames_rx_rate": p.HasFramesRxRate(),
			"bytes_tx_rate": p.HasBytesTxRate(), "bytes_rx_rate": p.HasBytesRxRate(), "transmit": p.HasTransmit(), "last_change": p.HasLastChange()})
		if p.FramesTx() != txByPort[p.Name()] || p.FramesRx() != rxByPort[p.Name()] {
			t.Errorf("port %s: frames tx %d rx %d, flows say %d and %d", p.Name(), p.FramesTx(), p.FramesRx(), txByPort[p.Name()], rxByPort[p.Name()])
		}
		if p.Link() != gosnappi.PortMetricLink.UP || p.Capture() != gosnappi.PortMetricCapture.STOPPED || p.Transmit() != gosnappi.PortMetricTransmit.STOPPED ||
			p.FramesTxRate() != 0 || p.BytesRxRate() != 0 || p.LastChange() == 0 || !strings.HasPrefix(p.Location(), "eth") {
			t.Errorf("port %s: %v", p.Name(), p)
		}
	}

	// The filters: a row keeps its keys and the names asked for.
	some := gosnappi.NewMetricsRequest()
	some.Flow().SetFlowNames([]string{"pps"}).SetMetricNames([]gosnappi.FlowMetricsRequestMetricNamesEnum{gosnappi.FlowMetricsRequestMetricNames.FRAMES_TX})
	fm := flowMetricsOf(t, api, some)["pps"]
	if fm == nil || !fm.HasFramesTx() || fm.FramesTx() != 2000 || fm.HasFramesRx() || fm.HasTransmit() || fm.HasLoss() || fm.HasTimestamps() || !fm.HasPortTx() {
		t.Errorf("metric_names [frames_tx]: %v", fm)
	}
	cols := gosnappi.NewMetricsRequest()
	cols.Port().SetPortNames([]string{"p2"}).SetColumnNames([]gosnappi.PortMetricsRequestColumnNamesEnum{gosnappi.PortMetricsRequestColumnNames.FRAMES_RX})
	resp, err = api.GetMetrics(cols)
	if err != nil {
		t.Fatal(err)
	}
	if ps := resp.PortMetrics().Items(); len(ps) != 1 || ps[0].Name() != "p2" || !ps[0].HasFramesRx() || ps[0].FramesRx() != rxByPort["p2"] || ps[0].HasFramesTx() || ps[0].HasLink() {
		t.Errorf("column_names [frames_rx]: %v", resp)
	}

	// A continuous flow: started, it has a rate; stopped, it keeps its
	// count.
	cont := []flowCase{{name: "cont", tx: "p1", rx: []string{"p2"}, set: func(f gosnappi.Flow) {
		f.Rate().SetPps(100000)
		f.Duration().Continuous()
	}}}
	if _, err := api.SetConfig(gosnappiConfig(cont)); err != nil {
		t.Fatal(err)
	}
	setTransmit(t, api, gosnappi.StateTrafficFlowTransmitState.START, "cont")
	one := gosnappi.NewMetricsRequest()
	one.Flow().SetFlowNames([]string{"cont"})
	m := flowMetricsOf(t, api, one)["cont"]
	if m.Transmit() != gosnappi.FlowMetricTransmit.STARTED || m.FramesTxRate() != 100000 {
		t.Fatalf("continuous flow running: %v", m)
	}
	resp, err = api.GetMetrics(ports)
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.PortMetrics().Items()[0]; p.Transmit() != gosnappi.PortMetricTransmit.STARTED || p.FramesTxRate() != 100000 || p.BytesTxRate() != 100000*64 {
		t.Errorf("p1 while cont runs: %v", p)
	}
	setTransmit(t, api, gosnappi.StateTrafficFlowTransmitState.STOP, "cont")
	m = flowMetricsOf(t, api, one)["cont"]
	again := flowMetricsOf(t, api, one)["cont"]
	ts := m.Timestamps()
	if m.Transmit() != gosnappi.FlowMetricTransmit.STOPPED || m.FramesTx() == 0 || again.FramesTx() != m.FramesTx() ||
		math.Abs(1+(ts.LastTimestampNs()-ts.FirstTimestampNs())/1e9*100000-float64(m.FramesTx())) > 1e-3 {
		t.Errorf("continuous flow stopped: %v then %v", m, again)
	}
}

// What gosnappi sends that the emulator cannot serve comes back as the
// spec's Error, which gosnappi turns into its error.
func TestGosnappiErrors(t *testing.T) {
	api := gosnappiLab(t)
	cfg := gosnappi.NewConfig()
	cfg.Ports().Add().SetName("p1").SetLocation("eth1")
	cfg.Ports().Add().SetName("p2").SetLocation("eth2")
	f := cfg.Flows().Add().SetName("f1")
	f.TxRx().Port().SetTxName("p1").SetRxNames([]string{"p2"})
	f.Rate().SetGbps(400)
	_, err := api.SetConfig(cfg)
	if err == nil || !strings.Contains(err.Error(), "flow f1") {
		t.Fatalf("a 400 Gb/s flow on a 25G port: %v", err)
	}
	req := gosnappi.NewMetricsRequest()
	req.Flow().SetFlowNames([]string{"nope"})
	if _, err := api.GetMetrics(req); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("metrics of an unknown flow: %v", err)
	}
}
