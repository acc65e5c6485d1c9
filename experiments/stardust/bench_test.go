package stardust_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"testbed/dut/tofino"
	"testbed/experiments/recipetest"
	"testbed/experiments/stardust"
	"testbed/inventory"
	"testbed/orchestrator"
	sd "testbed/p4/stardust"
	"testbed/results"
	"testbed/simlab"
	"testbed/transport"
)

func startStardustBench(t *testing.T, seed uint64) *simlab.Lab {
	t.Helper()
	lab, err := simlab.StartBench("stardust", simlab.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	return lab
}

// openSwitch opens a driver of one of the lab's switches, as a person
// checking the lab after a run would.
func openSwitch(t *testing.T, lab *simlab.Lab, name string) *tofino.Switch {
	t.Helper()
	d, _ := lab.Inventory().Device(name)
	sw, err := tofino.Open(context.Background(), d.Address, tofino.Options{Timeout: 10 * time.Second,
		SSH: transport.SSHOptions{KeyFile: d.Credentials.KeyFile, KnownHosts: d.Options["known_hosts"]}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	return sw
}

// stardust-fabric on the simulated Stardust bench: the fabric brought up
// through the driver, traffic from the FAs' generators, every figure read
// from the switches. Every frame sent is accounted for (released at a host
// port, or counted dropped), the latency histograms' mass is the frames
// released, the data carried follows the utilisation, latency and queues
// grow with it; at the end the switches hold none of the run's entries,
// ports or generators.
func TestFabricOnTheBench(t *testing.T) {
	if raceDetector {
		t.Skip("a whole recipe on the bench's twelve switches: run without the race detector (make test-long does); TestFabricOnTheBenchInterrupted covers the bring-up under it")
	}
	recipetest.Long(t)
	lab := startStardustBench(t, 1)
	var s stardust.FabricSummary
	res := recipetest.Run(t, lab, stardust.NewFabric(), 1, &s, nil,
		"utilisations=0.5,0.9,0.95,1.2", "bench_measure=50us", "bench_warmup=10us", "bench_drain=1ms")
	if res.Status != "ok" {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	if s.ModelOnly || s.MeasuredOn != "bench" || s.Partial || len(s.Points) != 4 || !strings.Contains(s.Scale, "8 FAs x 4 FEs") || !strings.Contains(s.Fabric, "jittered arrivals") {
		t.Fatalf("summary %+v", s)
	}
	for k, p := range s.Points {
		if p.FramesGenerated == 0 || p.FramesDelivered+p.FramesWaitDropped+p.ReassemblyDrops != p.FramesGenerated || p.CellsLost != 0 || p.FabricDrops != 0 {
			t.Errorf("%s: %d frames sent, %d released, %d dropped waiting for credit, %d given up at the reassembly timeout, %d lost in the fabric (%d in FE queues): not accounted for, or lost",
				k, p.FramesGenerated, p.FramesDelivered, p.FramesWaitDropped, p.ReassemblyDrops, p.CellsLost, p.FabricDrops)
		}
		if p.CellsArrived != p.FramesDelivered {
			t.Errorf("%s: the latency histograms counted %d cells, the host ports released %d frames", k, p.CellsArrived, p.FramesDelivered)
		}
	}
	lo, hi, over := s.Points["u50"], s.Points["u90"], s.Points["u120"]
	if math.Abs(lo.DataUtilisation-0.5) > 0.02 || math.Abs(hi.DataUtilisation-0.9) > 0.03 {
		t.Errorf("delivered %.3f and %.3f of the fabric's capacity at 0.5 and 0.9", lo.DataUtilisation, hi.DataUtilisation)
	}
	if lo.LinkBusy < lo.DataUtilisation || lo.LinkBusy > lo.DataUtilisation+0.05 {
		t.Errorf("last-stage links busy %.3f carrying %.3f of data (credits and reachability cells are the difference)", lo.LinkBusy, lo.DataUtilisation)
	}
	if hi.QueueP999 <= lo.QueueP999 || hi.LatencyP999US <= lo.LatencyP999US || lo.LatencyP50US <= 0 {
		t.Errorf("queue p99.9 %d -> %d frames, latency p99.9 %.2f -> %.2f us from 0.5 to 0.9", lo.QueueP999, hi.QueueP999, lo.LatencyP999US, hi.LatencyP999US)
	}
	// Oversubscribed, the credits hold the fabric below its capacity and
	// the frames beyond it wait.
	if over.DataUtilisation >= 1 || over.LatencyP50US <= hi.LatencyP50US {
		t.Errorf("at 1.2: data %.3f, latency p50 %.2f us", over.DataUtilisation, over.LatencyP50US)
	}
	mass := map[string]float64{}
	for _, r := range recipetest.ReadTable(t, res.Dir, "fabric_latency") {
		p, _ := strconv.ParseFloat(r["probability"], 64)
		mass[r["utilisation"]] += p
	}
	for u, m := range mass {
		if math.Abs(m-1) > 1e-9 {
			t.Errorf("latency distribution at %s sums to %g", u, m)
		}
	}
	// Fig. 9's point at a measured 95%.
	if p := s.Points["u95"]; math.Abs(p.DataUtilisation-0.95) > 0.01 {
		t.Errorf("0.95 carried %.4f of the data capacity: not within 1%% of 95%%", p.DataUtilisation)
	}
	checkUnderMD1(t, res.Dir, []string{"0.5", "0.9", "0.95"})
	recipetest.CheckReport(t, res.Dir, "fig9-latency", "fig9-queue")

	// The lab as found: the programs keep running, with none of the run's
	// entries, ports or generators.
	fa := openSwitch(t, lab, "fa3")
	ctx := context.Background()
	for _, tb := range []string{sd.TableWhoami, sd.TableSpray, sd.TableGenFlow, sd.TableCreditTo, sd.TableHostPort} {
		if es, err := fa.Entries(ctx, tb); err != nil || len(es) != 0 {
			t.Errorf("fa3's %s after the run: %d entries, %v", tb, len(es), err)
		}
	}
	d, _ := lab.Inventory().Device("fa3")
	host, _ := strconv.Atoi(d.Ports["host"])
	if _, err := fa.PortStatus(ctx, host); !tofino.IsNotFound(err) {
		t.Errorf("fa3's host port after the run: %v, want deleted", err)
	}
	if st, err := fa.PktgenStatus(ctx, 0); err == nil && st.Enabled {
		t.Errorf("fa3's credit generator still enabled: %+v", st)
	}
	if to, err := sd.New(fa).ReassemblyTimeout(ctx); err != nil || to != 0 {
		t.Errorf("fa3's reassembly timeout after the run: %d %v, want the 0 found", to, err)
	}
	fe := openSwitch(t, lab, "fe2")
	if th, err := sd.New(fe).FCIThreshold(ctx); err != nil || th != 0 {
		t.Errorf("fe2's FCI threshold after the run: %d %v, want the 0 found", th, err)
	}
}

// A fabric link that corrupts 2% of its frames (fa1's fibre to fe1,
// through voa1): a lost frame holds its source's later frames at the
// destination only for the reassembly timeout, then its number is given
// up. Every frame is released or lost in the fabric, lost counts what the
// links corrupted, and every one but a source's lost tail (nothing after
// it to wait for it) is given up; the data carried stays the utilisation.
func TestFabricOnTheBenchLossyLink(t *testing.T) {
	if raceDetector {
		t.Skip("a whole recipe on the bench's twelve switches: run without the race detector (make test does)")
	}
	lab := startStardustBench(t, 4)
	v, _ := lab.World().VOA("voa1")
	fibre, _ := lab.World().Fibre("fa1-fe1")
	v.Channels[0].SetShutter(true)
	v.Channels[0].SetSpeed(1e9)
	lo, hi := 0.0, 30.0
	for i := 0; i < 50; i++ {
		v.Channels[0].SetAttenuation((lo + hi) / 2)
		if fibre.FrameLossProbability(280) < 0.02 {
			lo = (lo + hi) / 2
		} else {
			hi = (lo + hi) / 2
		}
	}
	if p := fibre.FrameLossProbability(280); p < 0.01 || p > 0.04 {
		t.Fatalf("fa1-fe1 loses %g of its frames, want about 2%%", p)
	}
	var s stardust.FabricSummary
	res := recipetest.Run(t, lab, stardust.NewFabric(), 4, &s, nil,
		"utilisations=0.5", "bench_measure=300us", "bench_warmup=10us", "bench_drain=1ms")
	if res.Status != "ok" {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	p := s.Points["u50"]
	if p.FramesDelivered+p.FramesWaitDropped+p.CellsLost != p.FramesGenerated || p.CellsLost < 10 || p.FabricDrops != 0 {
		t.Errorf("%d frames sent, %d released, %d dropped waiting for credit, %d lost in the fabric (%d in FE queues): want every frame released or lost on the lossy link",
			p.FramesGenerated, p.FramesDelivered, p.FramesWaitDropped, p.CellsLost, p.FabricDrops)
	}
	// fa1 sends to seven FAs: at most a lost tail to each is not given up.
	if p.ReassemblyDrops > p.CellsLost || p.ReassemblyDrops < p.CellsLost-7 {
		t.Errorf("%d given up at the reassembly timeout, %d lost in the fabric", p.ReassemblyDrops, p.CellsLost)
	}
	if math.Abs(p.DataUtilisation-0.5) > 0.02 {
		t.Errorf("delivered %.3f of the fabric's capacity at 0.5", p.DataUtilisation)
	}
	t.Logf("%d sent, %d lost on the link, %d given up, data %.3f", p.FramesGenerated, p.CellsLost, p.ReassemblyDrops, p.DataUtilisation)
}

// stardust-packing on the bench: frames as cells at line rate, every size
// delivered at line rate through the fabric, the data after the headers a
// growing share of it; Fig. 3 computed as on the model.
func TestPackingOnTheBench(t *testing.T) {
	if raceDetector {
		t.Skip("a whole recipe on the bench's twelve switches: run without the race detector (make test-long does); TestFabricOnTheBenchInterrupted covers the bring-up under it")
	}
	recipetest.Long(t)
	lab := startStardustBench(t, 2)
	var s stardust.PackingSummary
	// The recipe's fabric links are 40 Gb/s, 160 Gb/s for the 100 Gb/s
	// host port: the credits and reachability cells take their place on
	// the links (a 64 B credit per 4 KB), so a fabric needs a speed-up
	// above the credits' share (§4.1) for the datapath, not the fabric, to
	// set what crosses. At 25 Gb/s links (speed-up 1) the FAs' fabric
	// ports sit at their FCI threshold and 128 B frames cross at 0.80 of
	// line rate.
	res := recipetest.Run(t, lab, stardust.NewPacking(), 2, &s, nil, "sizes=128,1500", "bench_measure=30us", "bench_warmup=10us", "bench_drain=500us")
	if res.Status != "ok" {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	if s.ModelOnly || s.MeasuredOn != "bench" || s.Partial || !strings.Contains(s.Datapath, "no packing") {
		t.Fatalf("summary %+v", s)
	}
	if f := s.Modes["bench-frames"]; f.LineRateSizes != 2 || f.MinFraction < 0.99 || f.MinFraction > 1.001 {
		t.Errorf("frames: %+v, want line rate at every size", f)
	}
	var prev float64
	for _, r := range recipetest.ReadTable(t, res.Dir, "packing_throughput") {
		if r["mode"] != "bench-frame-payload" {
			continue
		}
		f, _ := strconv.ParseFloat(r["line_rate_fraction"], 64)
		if f <= prev {
			t.Errorf("payload share %g at %s B, %g at the size before", f, r["packet_bytes"], prev)
		}
		prev = f
	}
	// Fig. 3 at the smallest size, 128 B: a packet takes one 256 B word as
	// a packet switch, half of one packed.
	if math.Abs(s.Fig3Factor-2) > 0.01 {
		t.Errorf("Fig. 3 factor %g at 128 B, want 2", s.Fig3Factor)
	}
	recipetest.CheckReport(t, res.Dir, "fig8a-throughput", "fig3-parallelism")
}

// An inventory whose Stardust switches do not make a one-tier fabric is
// refused at planning, naming what is wrong.
func TestBenchInventoryErrors(t *testing.T) {
	text, err := simlab.Bench("stardust")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, to, want string }{
		{"            host: \"176\"\n            p1: \"136\"\n            p2: \"144\"\n            p3: \"152\"\n            p4: \"160\"\n        options:\n            known_hosts: ~/.ssh/known_hosts\n            sde: /opt/bf-sde\n            stardust_role: fa\n            stardust_id: \"2\"",
			"            p1: \"136\"\n            p2: \"144\"\n            p3: \"152\"\n            p4: \"160\"\n        options:\n            known_hosts: ~/.ssh/known_hosts\n            sde: /opt/bf-sde\n            stardust_role: fa\n            stardust_id: \"2\"", "fa3 has no port named host"},
		{"stardust_id: \"5\"", "stardust_id: \"4\"", "id 4"},
		{"stardust_role: fe\n            stardust_id: \"3\"", "stardust_role: fx\n            stardust_id: \"3\"", "expected fa or fe"},
	} {
		if !strings.Contains(string(text), c.from) {
			t.Fatalf("the bench file has no %q", c.from)
		}
		inv, err := inventory.Parse("stardust.yaml", []byte(strings.Replace(string(text), c.from, c.to, 1)))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []orchestrator.Recipe{stardust.NewFabric(), stardust.NewPacking(), stardust.NewFailover()} {
			params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Plan(&orchestrator.PlanContext{Params: params, Lab: inv}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want an error saying %q", r.Meta().Name, err, c.want)
			}
		}
	}
}

// Interrupted after its first utilisation on the bench, the run leaves a
// bundle marked aborted with that point, and the switches as it found
// them: no entry, port or generator of the run's.
func TestFabricOnTheBenchInterrupted(t *testing.T) {
	lab := startStardustBench(t, 3)
	var s stardust.FabricSummary
	res := recipetest.Run(t, lab, stardust.NewFabric(), 3, &s, func(e results.Event, abort func()) {
		if e.Type == "measurement" {
			abort()
		}
	}, "utilisations=0.5,0.9", "bench_measure=20us", "bench_warmup=10us")
	if res.Status != results.StatusAborted || !s.Partial || len(s.Points) != 1 || s.Points["u50"].FramesDelivered == 0 {
		t.Fatalf("status %s (%s), summary partial %v with %d points", res.Status, res.Reason, s.Partial, len(s.Points))
	}
	ctx := context.Background()
	for _, name := range []string{"fa5", "fe4"} {
		sw := openSwitch(t, lab, name)
		for _, tb := range []string{sd.TableWhoami, sd.TableSpray, sd.TableReachPort} {
			if es, err := sw.Entries(ctx, tb); err != nil || len(es) != 0 {
				t.Errorf("%s's %s after the aborted run: %d entries, %v", name, tb, len(es), err)
			}
		}
		if st, err := sw.PktgenStatus(ctx, 1); err == nil && st.Enabled {
			t.Errorf("%s's reachability generator still enabled", name)
		}
		d, _ := lab.Inventory().Device(name)
		p, _ := strconv.Atoi(d.Ports["p1"])
		if _, err := sw.PortStatus(ctx, p); !tofino.IsNotFound(err) {
			t.Errorf("%s's port %d after the aborted run: %v, want deleted", name, p, err)
		}
	}
}

// checkUnderMD1 holds the bench's last-stage queues to §4.2.1's bound:
// M/D/1, which assumes infinitely many FAs and no credits, is the worst
// case, so at each utilisation us the frames a cell found waiting must
// exceed k with at most M/D/1's probability at the measured link busy
// fraction (the M/D/1 rows of fabric_queue), for every k, up to 5% and
// 1e-3 for the sampling. It also holds that there is a queue to compare:
// at 0.95 most cells find one.
func checkUnderMD1(t *testing.T, dir string, us []string) {
	t.Helper()
	dist := queueDists(t, dir)
	if _, over := dist["1.2"]["M/D/1"]; over {
		t.Error("an M/D/1 prediction at utilisation 1.2")
	}
	for _, u := range us {
		for _, e := range md1Exceeded(dist[u]) {
			t.Errorf("utilisation %s: %s", u, e)
		}
		if u == "0.95" && tail(dist[u]["bench"], 1) < 0.5 {
			t.Errorf("utilisation 0.95: only %.3f of the cells found a frame waiting", tail(dist[u]["bench"], 1))
		}
	}
}

// queueDists reads fabric_queue: per utilisation and source, the
// distribution over queue_cells.
func queueDists(t *testing.T, dir string) map[string]map[string][]float64 {
	t.Helper()
	dist := map[string]map[string][]float64{}
	for _, r := range recipetest.ReadTable(t, dir, "fabric_queue") {
		k, _ := strconv.Atoi(r["queue_cells"])
		p, _ := strconv.ParseFloat(r["probability"], 64)
		if dist[r["utilisation"]] == nil {
			dist[r["utilisation"]] = map[string][]float64{}
		}
		d := dist[r["utilisation"]][r["source"]]
		for len(d) <= k {
			d = append(d, 0)
		}
		d[k] = p
		dist[r["utilisation"]][r["source"]] = d
	}
	return dist
}

func tail(d []float64, k int) float64 {
	s := 0.0
	for i := k; i < len(d); i++ {
		s += d[i]
	}
	return s
}

// md1Exceeded lists the k at which one utilisation's bench queue exceeds
// M/D/1 beyond the sampling's allowance (5% and 1e-3), or says that a
// distribution is missing.
func md1Exceeded(d map[string][]float64) []string {
	bench, md1 := d["bench"], d["M/D/1"]
	if len(bench) == 0 || len(md1) == 0 {
		return []string{fmt.Sprintf("%d bench and %d M/D/1 queue rows", len(bench), len(md1))}
	}
	var out []string
	for k := 1; k < len(bench); k++ {
		if b, m := tail(bench, k), tail(md1, k); b > 1.05*m+1e-3 {
			out = append(out, fmt.Sprintf("P(waiting >= %d) = %.4g on the bench, above M/D/1's %.4g", k, b, m))
		}
	}
	return out
}

// The M/D/1 check has power: the same fabric at the same utilisation
// holds the bound with the bench's spraying (a random permutation of each
// FA's four links per destination) and breaks it when every FA puts half
// its spraying slots on its link to fe1 (bench_hot_share=0.5). fe1's links
// to the FAs then run at about twice the average (0.9 of their capacity
// against 0.3 on the others' at utilisation 0.45) and carry half the
// cells, and the queues' mixture has a tail M/D/1 at the average busy
// fraction does not bound: §4.2.1's Poisson bound assumes each link takes
// its even share (1/fs), which the spraying (§5.3) gives and a persistent
// bias takes away. Both runs are the emulated switches' own histograms.
func TestFabricOnTheBenchHotLinkExceedsMD1(t *testing.T) {
	if raceDetector {
		t.Skip("two runs on the bench's twelve switches: run without the race detector (make test-long does)")
	}
	recipetest.Long(t) // 20 s, beside TestFabricOnTheBench, whose check it gives its power
	lab := startStardustBench(t, 1)
	sets := []string{"utilisations=0.45", "bench_measure=50us", "bench_warmup=10us", "bench_drain=1ms"}
	var even, hot stardust.FabricSummary
	resEven := recipetest.Run(t, lab, stardust.NewFabric(), 1, &even, nil, sets...)
	resHot := recipetest.Run(t, lab, stardust.NewFabric(), 1, &hot, nil, append(sets, "bench_hot_share=0.5")...)
	for _, r := range []*orchestrator.RunResult{resEven, resHot} {
		if r.Status != "ok" {
			t.Fatalf("run %s: %s", r.Status, r.Reason)
		}
	}
	if !strings.Contains(hot.Fabric, "0.5 of every FA's spraying") || strings.Contains(even.Fabric, "spraying on its link") {
		t.Errorf("fabric descriptions: %q, %q", even.Fabric, hot.Fabric)
	}
	pe, ph := even.Points["u45"], hot.Points["u45"]
	t.Logf("even: link busy %.3f, data %.3f, queue p99.9 %d, excess %v; hot: link busy %.3f, data %.3f, queue p99.9 %d, excess %v",
		pe.LinkBusy, pe.DataUtilisation, pe.QueueP999, ptr(pe.MD1MaxExcess), ph.LinkBusy, ph.DataUtilisation, ph.QueueP999, ptr(ph.MD1MaxExcess))
	// The same load: what the fabric carried does not depend on the spray.
	for _, p := range []stardust.FabricPoint{pe, ph} {
		if math.Abs(p.DataUtilisation-0.45) > 0.02 || p.CellsLost != 0 {
			t.Errorf("data %.3f of the capacity, %d lost", p.DataUtilisation, p.CellsLost)
		}
	}
	if math.Abs(pe.LinkBusy-ph.LinkBusy) > 0.01 {
		t.Errorf("the last-stage links' average busy fraction moved with the spray: %.3f and %.3f", pe.LinkBusy, ph.LinkBusy)
	}
	if e := md1Exceeded(queueDists(t, resEven.Dir)["0.45"]); len(e) != 0 {
		t.Errorf("even spraying: %v", e)
	}
	e := md1Exceeded(queueDists(t, resHot.Dir)["0.45"])
	if len(e) == 0 {
		t.Error("half of every FA's spraying on fe1: the queues stay under M/D/1 at the average busy fraction")
	}
	t.Logf("hot link: %v", e)
	// The hot FE's links carry their share: fe1 sent about twice what
	// each other FE sent (half the cells against a sixth each).
	if ph.QueueP999 <= pe.QueueP999 {
		t.Errorf("queue p99.9 %d frames with a hot link, %d without", ph.QueueP999, pe.QueueP999)
	}
}

func ptr(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
