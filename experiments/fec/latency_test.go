package fec_test

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"testbed/dut/tofino"
	"testbed/experiments/fec"
	"testbed/experiments/recipetest"
	"testbed/orchestrator"
	lg "testbed/p4/linkguardian"
	ts "testbed/p4/timestamp"
	"testbed/results"
	"testbed/transport"
)

// The paper's numbers (seed 001) and IEEE 802.3's, computed here.
const (
	paperWorst = 246.0 // §3.1, 25G RS(528,514), one hop
	paperHet   = 159.0 // §3.2.2, one 25G link among 100G
	tAcc25     = 5280 / 25.78125
	tDec528    = 15.0
	// The worst header offset a frame can take (headers start 8 bytes after
	// a 64b/66b block boundary): 8 header bytes are in the codeword's last
	// 257-bit block, 6 in the next; from the header's first bit, those 8
	// bytes and the 140 parity bits, then a whole codeword and two decodes.
	worst25     = (8*8*257/256.0+140)/25.78125 + tAcc25 + 2*tDec528
	headerBytes = 14
)

func row(t *testing.T, rows []map[string]string, link, size, mode, hop string) map[string]string {
	t.Helper()
	for _, r := range rows {
		if r["link"] == link && r["frame_bytes"] == size && r["switch_mode"] == mode && r["hop"] == hop && r["path"] == "homogeneous" {
			return r
		}
	}
	t.Fatalf("no row %s %s %s hop %s", link, size, mode, hop)
	return nil
}

func num(t *testing.T, r map[string]string, col string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(r[col], 64)
	if err != nil {
		t.Fatalf("%s = %q: %v", col, r[col], err)
	}
	return v
}

func TestFECLatencyOnTheSimulatedLab(t *testing.T) {
	lab := recipetest.StartLab(t, 7)
	var s fec.LatencySummary
	res := recipetest.Run(t, lab, fec.NewLatency(), 7, &s, nil,
		"links=25:none,25:rs528,100:none,100:rs528", "frame_sizes=64", "switch_modes=cut-through", "ports=0,4,8", "path=heterogeneous")
	if res.Status != "ok" {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	rows := recipetest.ReadTable(t, res.Dir, "fec_latency_hops")

	// Done means: the worst per hop at 25G RS(528,514) within a few ns of
	// the paper's 246 ns, and of the closed form at the worst offset.
	if s.WorstPerHop25GRS528Ns == nil {
		t.Fatal("no worst case per hop in the summary")
	}
	w := *s.WorstPerHop25GRS528Ns
	if math.Abs(w-worst25) > 2 || math.Abs(w-paperWorst) > 6 {
		t.Errorf("worst per hop at 25G RS(528,514): %.1f ns; closed form %.1f, paper %.0f", w, worst25, paperWorst)
	}
	t.Logf("worst per hop at 25G RS(528,514): %.1f ns (closed form %.1f ns, paper %.0f ns)", w, worst25, paperWorst)

	// FEC off: no FEC delay, so no jitter beyond a block and the clock's ns.
	if j := num(t, row(t, rows, "25G none", "64", "cut-through", "1"), "jitter_ns"); j > 3 {
		t.Errorf("25G without FEC: %.0f ns of jitter", j)
	}
	// With RS(528,514) one hop's latency spreads over about a codeword.
	ct := row(t, rows, "25G rs528", "64", "cut-through", "1")
	if j := num(t, ct, "jitter_ns"); j < tAcc25-15 || j > tAcc25+tDec528+10 {
		t.Errorf("25G RS(528,514) cut-through jitter %.0f ns, T_acc %.1f ns", j, tAcc25)
	}

	// 100G stripes a codeword over four lanes: a quarter of the
	// accumulation; and its receiver de-skews the lanes.
	ct100 := row(t, rows, "100G rs528", "64", "cut-through", "1")
	if j := num(t, ct100, "jitter_ns"); j > tAcc25/4+tDec528+6 || j < tAcc25/4-10 {
		t.Errorf("100G RS(528,514) jitter %.0f ns, T_acc/4 = %.1f ns", j, tAcc25/4)
	}
	if s.DeskewNs == nil || *s.DeskewNs <= 1 || *s.DeskewNs > 180 {
		t.Errorf("100G de-skew %v ns: want the slowest lane's skew, within 802.3's 180 ns", s.DeskewNs)
	}

	// The paper's prediction sits beside each FEC row.
	if p := num(t, ct, "paper_max_ns"); math.Abs(p-worst25) > 0.01 {
		t.Errorf("paper_max_ns %.2f, closed form %.2f", p, worst25)
	}

	// The summary's case keys are identifiers: metric paths without spaces.
	if _, ok := s.Cases["25G_rs528_64B_cut-through"]; !ok {
		t.Errorf("no case 25G_rs528_64B_cut-through in the summary")
	}
	for k := range s.Cases {
		if strings.ContainsAny(k, " .") {
			t.Errorf("case %q: a metric path segment with a space or a dot", k)
		}
	}

	// §3.2.2: a 25G link among 100G links.
	if s.HeterogeneousExtraNs == nil {
		t.Error("no heterogeneous path in the summary")
	} else if h := *s.HeterogeneousExtraNs; math.Abs(h-paperHet) > 4 {
		t.Errorf("one 25G link among 100G adds %.1f ns, paper %.0f", h, paperHet)
	} else {
		t.Logf("one 25G link among 100G adds %.1f ns (paper %.0f ns)", h, paperHet)
	}

	// Frames and envelope tables are there; the report has the figures.
	if n := len(recipetest.ReadTable(t, res.Dir, "fec_latency_frames")); n != 200*2*(4+1) { // four cases and the heterogeneous one
		t.Errorf("%d frame rows", n)
	}
	env := recipetest.ReadTable(t, res.Dir, "fec_latency_envelope")
	if len(env) == 0 {
		t.Error("no envelope rows")
	}
	// The heterogeneous path's rows give each hop its own link: the first
	// (its port at 25G) with the 25G PHY's prediction, the rest 100G's.
	paperMax := map[string]string{}
	for _, r := range recipetest.ReadTable(t, res.Dir, "fec_latency_hops") {
		if r["path"] == "homogeneous" && r["fec"] == "rs528" && r["hop"] == "1" {
			paperMax[r["speed_gbps"]] = r["paper_max_ns"]
		}
	}
	for _, r := range recipetest.ReadTable(t, res.Dir, "fec_latency_hops") {
		if r["path"] != "heterogeneous" {
			continue
		}
		want := "100"
		if r["hop"] == "1" {
			want = "25"
		}
		if r["speed_gbps"] != want || r["paper_max_ns"] != paperMax[want] || paperMax[want] == "" {
			t.Errorf("heterogeneous hop %s: speed %s G, paper max %s ns; want %s G and that link's %s ns", r["hop"], r["speed_gbps"], r["paper_max_ns"], want, paperMax[want])
		}
	}
	recipetest.CheckReport(t, res.Dir, "hop-latency-cdf", "marginal-latency", "envelope")

	// The switch is put back: no port the run added, the snake emptied.
	d, _ := lab.Inventory().Device("sw1")
	sw, err := tofino.Open(context.Background(), d.Address, tofino.Options{SSH: transport.SSHOptions{KeyFile: d.Credentials.KeyFile, KnownHosts: d.Options["known_hosts"]}})
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	ctx := context.Background()
	for _, p := range []int{0, 4, 8} {
		if _, err := sw.PortStatus(ctx, p); !tofino.IsNotFound(err) {
			t.Errorf("port %d left added: %v", p, err)
		}
	}
	if es, err := sw.Entries(ctx, ts.TableSnake); err != nil || len(es) != 0 {
		t.Errorf("snake entries left: %v %v", es, err)
	}
}

func TestFECLatencyRejectsBadModes(t *testing.T) {
	lab := recipetest.StartLab(t, 8)
	r := fec.NewLatency()
	for _, set := range []string{"links=50:rs528", "links=100:fc", "frame_sizes=63", "ports=0", "ports=0,68", "switch_modes=fast", "switch=voa1"} {
		params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, []string{set})
		if err != nil {
			continue // refused already
		}
		if _, err := r.Plan(&orchestrator.PlanContext{Params: params, Lab: lab.Inventory(), Simulated: true}); err == nil {
			t.Errorf("%s accepted", set)
		} else {
			t.Logf("%s: %v", set, err)
		}
	}
}

// Figs. 5-6: with FEC, cut-through waits for the header's codeword and
// pays nearly what store-and-forward pays; without FEC, store-and-forward
// pays the frame's serialization more than cut-through.
func TestFECLatencyCutThroughVsStoreAndForward(t *testing.T) {
	lab := recipetest.StartLab(t, 6)
	res := recipetest.Run(t, lab, fec.NewLatency(), 6, nil, nil,
		"links=25:none,25:rs528", "frame_sizes=64,1518", "ports=0,4", "probes=60")
	if res.Status != "ok" {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	rows := recipetest.ReadTable(t, res.Dir, "fec_latency_hops")
	p50 := func(link, size, mode string) float64 { return num(t, row(t, rows, link, size, mode, "1"), "p50_ns") }
	if j := num(t, row(t, rows, "25G none", "1518", "store-and-forward", "1"), "jitter_ns"); j > 3 {
		t.Errorf("25G without FEC, store-and-forward: %.0f ns of jitter", j)
	}
	ser := float64(1518-headerBytes) * 8 * 66 / 64 / 25.78125
	if d := p50("25G none", "1518", "store-and-forward") - p50("25G none", "1518", "cut-through"); math.Abs(d-ser) > 4 {
		t.Errorf("1518 B without FEC: store-and-forward waits %.0f ns more than cut-through, want %.0f", d, ser)
	}
	// 64 B frames with FEC: the two differ in case B only, by up to a
	// codeword and a decode, and most frames are in case A.
	if d := p50("25G rs528", "64", "store-and-forward") - p50("25G rs528", "64", "cut-through"); d < -5 || d > tAcc25+tDec528 {
		t.Errorf("64 B with RS(528,514): store-and-forward's median exceeds cut-through's by %.0f ns", d)
	}
	// Marginal latency (Fig. 6) against what each switch waited for
	// without FEC: the header (cut-through) or the frame (store-and-forward).
	ctRel := num(t, row(t, rows, "25G rs528", "64", "cut-through", "1"), "marginal_p50_ns") / (headerBytes * 8 * 66 / 64 / 25.78125)
	safRel := num(t, row(t, rows, "25G rs528", "1518", "store-and-forward", "1"), "marginal_p50_ns") / ser
	if ctRel < 10*safRel {
		t.Errorf("marginal latency over the FEC-off wait: cut-through %.1fx, store-and-forward %.2fx", ctRel, safRel)
	}
	t.Logf("marginal latency over the FEC-off wait: cut-through %.1fx, store-and-forward %.2fx", ctRel, safRel)
}

// Interrupted half-way: the bundle says aborted and verifies, and the
// switch is as it was: a port it had keeps its mode and forwarding, the
// ports the run added are gone, the snake is empty.
func TestFECLatencyAbortRestoresTheSwitch(t *testing.T) {
	lab := recipetest.StartLab(t, 9)
	ctx := context.Background()
	d, _ := lab.Inventory().Device("sw1")
	sw, err := tofino.Open(ctx, d.Address, tofino.Options{SSH: transport.SSHOptions{KeyFile: d.Credentials.KeyFile, KnownHosts: d.Options["known_hosts"]}})
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	if _, err := sw.BuildProgram(ctx, ts.Program, ts.MainFile(ts.Program), ts.Sources()); err != nil {
		t.Fatal(err)
	}
	if err := sw.StartSwitchd(ctx, ts.Program); err != nil {
		t.Fatal(err)
	}
	if err := sw.AddPort(ctx, 4, 10, "none"); err != nil {
		t.Fatal(err)
	}
	res := recipetest.Run(t, lab, fec.NewLatency(), 9, nil, func(e results.Event, abort func()) {
		if e.Type == "step.start" && e.Fields["index"] == 4 {
			abort()
		}
	}, "links=25:none,25:rs528", "frame_sizes=64", "ports=0,4,8", "probes=20")
	if res.Status != results.StatusAborted {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	if len(res.Unrestored) != 0 {
		t.Errorf("not restored: %v", res.Unrestored)
	}
	if st, err := sw.PortStatus(ctx, 4); err != nil || st.SpeedGbps != 10 || st.FEC != "BF_FEC_TYP_NONE" {
		t.Errorf("port 4 after the run: %+v %v, want 10G without FEC as found", st, err)
	}
	if on, err := sw.SetCutThrough(ctx, 4, false); err != nil || on {
		t.Errorf("port 4 cut-through left %v (%v)", on, err)
	}
	for _, p := range []int{0, 8} {
		if _, err := sw.PortStatus(ctx, p); !tofino.IsNotFound(err) {
			t.Errorf("port %d left added: %v", p, err)
		}
	}
	if es, err := sw.Entries(ctx, ts.TableSnake); err != nil || len(es) != 0 {
		t.Errorf("snake entries left: %v %v", es, err)
	}
}

// A switch found running another program (a LinkGuardian run's, left
// running by design) is replaced only with replace_program, and the
// program found runs again after the run: left with the timestamp
// program, every later LinkGuardian run on the switch refused it.
func TestFECLatencyRestartsTheProgramFound(t *testing.T) {
	lab := recipetest.StartLab(t, 9)
	ctx := context.Background()
	d, _ := lab.Inventory().Device("sw1")
	sw, err := tofino.Open(ctx, d.Address, tofino.Options{SSH: transport.SSHOptions{KeyFile: d.Credentials.KeyFile, KnownHosts: d.Options["known_hosts"]}})
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	if err := sw.StartSwitchd(ctx, lg.ProgramSender); err != nil {
		t.Fatal(err)
	}
	res := recipetest.Run(t, lab, fec.NewLatency(), 9, nil, nil, "links=25:none,25:rs528", "frame_sizes=64", "switch_modes=cut-through", "ports=0,4", "probes=20", "replace_program=true")
	if res.Status != results.StatusOK {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	if got, err := sw.Program(ctx); err != nil || got != lg.ProgramSender {
		t.Errorf("sw1 runs %q after the run (%v), want %q, the program found", got, err, lg.ProgramSender)
	}
}
