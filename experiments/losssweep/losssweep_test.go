package losssweep_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"testbed/dut/tofino"
	"testbed/experiments/lgbench"
	"testbed/experiments/losssweep"
	"testbed/experiments/recipetest"
	"testbed/orchestrator"
	lg "testbed/p4/linkguardian"
	"testbed/results"
	"testbed/simlab"
	"testbed/transport"
)

// run runs the recipe against lab; observe sees every event and may abort
// the run.
func run(t *testing.T, lab *simlab.Lab, observe func(results.Event, func()), sets ...string) (orchestrator.RunResult, losssweep.Summary) {
	t.Helper()
	var s losssweep.Summary
	res := recipetest.Run(t, lab, losssweep.New(), 3, &s, observe, sets...)
	return *res, s
}

func open(t *testing.T, lab *simlab.Lab, name string) *tofino.Switch {
	t.Helper()
	d, ok := lab.Inventory().Device(name)
	if !ok {
		t.Fatalf("no %s", name)
	}
	sw, err := tofino.Open(context.Background(), d.Address, tofino.Options{Timeout: 20 * time.Second,
		SSH: transport.SSHOptions{KeyFile: d.Credentials.KeyFile, KnownHosts: d.Options["known_hosts"]}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	return sw
}

// LinkGuardian §4.1 and Fig. 8, from the simulated switches' counters:
// unprotected, the link loses what the calibration measured; protected,
// nothing is lost in either mode; the copies follow Eq. 2; ordered mode
// pays in link speed at 100G where the reorder buffer drains no faster
// than frames arrive, non-blocking mode barely; only ordered mode uses
// the reorder buffer.
func TestLossSweepProtectsAndCostsWhatThePaperSays(t *testing.T) {
	lab := recipetest.StartLab(t, 11)
	res, s := run(t, lab, nil, "loss_rates=1e-4,1e-3", "frames=1000000", "calib_losses=100")
	if res.Status != results.StatusOK {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	recipetest.CheckReport(t, res.Dir, "effective-loss", "effective-link-speed-25g", "effective-link-speed-100g")
	if s.Partial || len(s.Points) != 2 {
		t.Fatalf("summary: partial %v, speeds %d", s.Partial, len(s.Points))
	}
	for speed, byLoss := range s.Points {
		for nominal, byMode := range byLoss {
			off, lgo, nb := byMode["off"], byMode["linkguardian"], byMode["linkguardian-nb"]
			line := map[string]float64{"25G": 25, "100G": 100}[speed]
			t.Logf("%s %s: actual %.3g at %.2f dB; copies %d; effective off %.3g LG %.3g NB %.3g; speed off %.2f LG %.2f NB %.2f; buffers LG %d/%d NB %d/%d",
				speed, nominal, off.ActualLoss, off.AttenuationDB, lgo.RetxCopies, off.EffectiveLoss, lgo.EffectiveLoss, nb.EffectiveLoss,
				off.EffectiveSpeedGbps, lgo.EffectiveSpeedGbps, nb.EffectiveSpeedGbps, lgo.MaxTxBufferBytes, lgo.MaxRxBufferBytes, nb.MaxTxBufferBytes, nb.MaxRxBufferBytes)
			// Unprotected, a second measurement at the same attenuation
			// agrees with the calibration within sampling error.
			if off.ActualLoss <= 0 || off.EffectiveLoss < off.ActualLoss/2 || off.EffectiveLoss > off.ActualLoss*2 {
				t.Errorf("%s %s off: effective loss %.3g, calibrated %.3g", speed, nominal, off.EffectiveLoss, off.ActualLoss)
			}
			want, err := lg.Copies(s.TargetLoss, off.ActualLoss)
			if err != nil {
				t.Fatal(err)
			}
			for name, p := range map[string]losssweep.Point{"linkguardian": lgo, "linkguardian-nb": nb} {
				if p.RetxCopies != want {
					t.Errorf("%s %s %s: %d copies, Eq. 2 gives %d", speed, nominal, name, p.RetxCopies, want)
				}
				if p.EffectiveLossHigh >= off.ActualLoss/10 {
					t.Errorf("%s %s %s: effective loss %.3g (up to %.3g), actual %.3g: no protection", speed, nominal, name, p.EffectiveLoss, p.EffectiveLossHigh, off.ActualLoss)
				}
				if p.MaxTxBufferBytes <= 0 || p.MaxTxBufferBytes > 100_000 {
					t.Errorf("%s %s %s: Tx buffer peak %d B (the paper: under 90 KB)", speed, nominal, name, p.MaxTxBufferBytes)
				}
			}
			if lgo.MaxRxBufferBytes <= 0 || nb.MaxRxBufferBytes != 0 {
				t.Errorf("%s %s: reorder buffer LG %d B, NB %d B: only ordered mode reorders", speed, nominal, lgo.MaxRxBufferBytes, nb.MaxRxBufferBytes)
			}
			if off.EffectiveSpeedGbps > line || nb.EffectiveSpeedGbps > off.EffectiveSpeedGbps || lgo.EffectiveSpeedGbps > nb.EffectiveSpeedGbps {
				t.Errorf("%s %s: speeds off %.3f >= NB %.3f >= LG %.3f <= line %v does not hold", speed, nominal, off.EffectiveSpeedGbps, nb.EffectiveSpeedGbps, lgo.EffectiveSpeedGbps, line)
			}
			if nb.EffectiveSpeedGbps < 0.99*line {
				t.Errorf("%s %s: NB runs at %.2f Gb/s, more than 1%% below line rate", speed, nominal, nb.EffectiveSpeedGbps)
			}
		}
	}
	// The paper: about 8% less link speed for ordered mode at 100G and
	// 1e-3, little at 25G.
	if p := s.Points["100G"][losssweep.LossKey(1e-3)]["linkguardian"]; p.EffectiveSpeedGbps > 95 {
		t.Errorf("100G 1e-3 ordered mode keeps %.2f Gb/s: the reorder buffer costs nothing", p.EffectiveSpeedGbps)
	}
	if p := s.Points["25G"][losssweep.LossKey(1e-3)]["linkguardian"]; p.EffectiveSpeedGbps < 24 {
		t.Errorf("25G 1e-3 ordered mode drops to %.2f Gb/s", p.EffectiveSpeedGbps)
	}
	// More loss, more attenuation, and at least as many copies.
	for speed, byLoss := range s.Points {
		lo, hi := byLoss[losssweep.LossKey(1e-4)]["linkguardian"], byLoss[losssweep.LossKey(1e-3)]["linkguardian"]
		if hi.AttenuationDB <= lo.AttenuationDB || hi.ActualLoss <= lo.ActualLoss || hi.RetxCopies < lo.RetxCopies {
			t.Errorf("%s: 1e-4 at %.2f dB (%d copies), 1e-3 at %.2f dB (%d copies)", speed, lo.AttenuationDB, lo.RetxCopies, hi.AttenuationDB, hi.RetxCopies)
		}
	}
	checkRestored(t, lab, nil)
}

// found is what a lab engineer left on the switches before the run.
type found struct {
	protect, retx  tofino.Entry
	pause, resume  int64
	txPort, rxPort int
}

// checkRestored: every VOA at rest, no port the run added, protection
// entries and thresholds as they were found.
func checkRestored(t *testing.T, lab *simlab.Lab, f *found) {
	t.Helper()
	for _, name := range []string{"voa3"} {
		v, ok := lab.World().VOA(name)
		if !ok {
			t.Fatalf("no %s in the world", name)
		}
		for i, c := range v.Channels {
			if a := c.Target(); a != 0 {
				t.Errorf("%s channel %d left at %.2f dB", name, i+1, a)
			}
		}
	}
	ctx := context.Background()
	sw1, sw2 := open(t, lab, "sw1"), open(t, lab, "sw2")
	for _, sw := range []*tofino.Switch{sw1, sw2} {
		for _, p := range []int{136, 144, 160} {
			if f != nil && (p == f.txPort && sw == sw1 || p == f.rxPort && sw == sw2) {
				continue
			}
			if _, err := sw.PortStatus(ctx, p); err == nil || !tofino.IsNotFound(err) {
				t.Errorf("port %d still there after the run (%v)", p, err)
			}
		}
	}
	es, err := sw1.Entries(ctx, lg.TableLinkProtect)
	if err != nil {
		t.Fatal(err)
	}
	if f == nil {
		if len(es) != 0 {
			t.Errorf("protection entries left on sw1: %+v", es)
		}
		return
	}
	if len(es) != 1 || es[0].Action != f.protect.Action || es[0].Data[lg.ParamDummyPktMaxCount] != f.protect.Data[lg.ParamDummyPktMaxCount] ||
		es[0].Data[lg.ParamBlockingMode] != f.protect.Data[lg.ParamBlockingMode] {
		t.Errorf("sw1 %s: %+v, found before the run %+v", lg.TableLinkProtect, es, f.protect)
	}
	es, err = sw1.Entries(ctx, lg.TableRetxMcast)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Data[lg.ParamNumCopies] != f.retx.Data[lg.ParamNumCopies] {
		t.Errorf("sw1 %s: %+v, found before the run %+v", lg.TableRetxMcast, es, f.retx)
	}
	for reg, want := range map[string]int64{lg.RegPauseThreshold: f.pause, lg.RegResumeThreshold: f.resume} {
		v, err := sw2.ReadRegister(ctx, reg, 0)
		if err != nil || len(v) == 0 || v[0] != want {
			t.Errorf("sw2 %s = %v (%v), found %d", reg, v, err, want)
		}
	}
}

// An interrupted run leaves a bundle that says so, and the lab as found:
// the protection entry and thresholds an engineer had configured, the
// VOA at rest, the run's ports deleted.
func TestLossSweepAbortRestoresTheLab(t *testing.T) {
	lab := recipetest.StartLab(t, 12)
	ctx := context.Background()
	sw1, sw2 := open(t, lab, "sw1"), open(t, lab, "sw2")
	for sw, prog := range map[*tofino.Switch]string{sw1: lg.ProgramSender, sw2: lg.ProgramReceiver} {
		if err := sw.StartSwitchd(ctx, prog); err != nil {
			t.Fatal(err)
		}
	}
	f := &found{txPort: 144, rxPort: 144, pause: 300, resume: 250}
	for _, p := range []struct {
		sw   *tofino.Switch
		port int
	}{{sw1, f.txPort}, {sw2, f.rxPort}} {
		if err := p.sw.AddPort(ctx, p.port, 25, "none"); err != nil {
			t.Fatal(err)
		}
	}
	key := map[string]int64{"egress_port": int64(f.txPort)}
	f.protect = tofino.Entry{Key: key, Action: lg.ActionProtect, Data: map[string]int64{lg.ParamDummyPktMaxCount: 7, lg.ParamBlockingMode: 0}}
	f.retx = tofino.Entry{Key: key, Action: lg.ActionRetxCopies, Data: map[string]int64{lg.ParamNumCopies: 3}}
	if err := sw1.AddEntry(ctx, lg.TableLinkProtect, f.protect); err != nil {
		t.Fatal(err)
	}
	if err := sw1.AddEntry(ctx, lg.TableRetxMcast, f.retx); err != nil {
		t.Fatal(err)
	}
	if err := sw2.WriteRegister(ctx, lg.RegPauseThreshold, 0, f.pause); err != nil {
		t.Fatal(err)
	}
	if err := sw2.WriteRegister(ctx, lg.RegResumeThreshold, 0, f.resume); err != nil {
		t.Fatal(err)
	}
	// Stop it in the middle of the first protected stress test: 50 ms
	// after it starts, well inside its 4x10^7 frames (seconds of CPU at
	// 25G ordered and 1e-3). At 4x10^6 frames the step could end first
	// once the path got faster, and the abort met a finished sweep.
	res, s := run(t, lab, func(e results.Event, abort func()) {
		if e.Type == "step.start" && strings.Contains(e.Step, "linkguardian") {
			go func() { time.Sleep(50 * time.Millisecond); abort() }()
		}
	}, "links=lg25", "loss_rates=1e-3", "frames=40000000", "calib_losses=100")
	if res.Status != results.StatusAborted {
		t.Fatalf("status %s (%s), want aborted", res.Status, res.Reason)
	}
	if !s.Partial || len(res.Unrestored) != 0 {
		t.Errorf("summary partial %v, unrestored %v", s.Partial, res.Unrestored)
	}
	checkRestored(t, lab, f)
	if st, err := sw1.PktgenStatus(ctx, 1); err == nil && st.Enabled {
		t.Errorf("packet generator still running after the abort: %+v", st)
	}
}

func TestLossSweepExplainsALabWithoutSwitchLinks(t *testing.T) {
	lab := recipetest.StartLab(t, 13)
	r := losssweep.New()
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"links=l25g"}, "end a is on"},
		{[]string{"loss_rates=1e-9"}, "not above target_loss"},
		{[]string{"modes=fast"}, "modes"},
		{[]string{"max_db=400"}, "max_db"},
		// Hours on the simulated lab: refused, naming what makes it so.
		{[]string{"pktgen_period_ns=124", "resolve_effective_loss=1e-10", "sim_cpu_limit=10m"}, "over sim_cpu_limit=10m0s: resolve_effective_loss=1e-10 gives 3841458821 frames a point; pktgen_period_ns=124 paces"},
		{[]string{"frames=1e12"}, "over sim_cpu_limit"},
	} {
		params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, c.sets)
		if err != nil {
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: %v", c.sets, err)
			}
			continue
		}
		_, err = r.Plan(&orchestrator.PlanContext{Lab: lab.Inventory(), Params: params, Simulated: true})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v does not say %q", c.sets, err, c.want)
		}
	}
}

// A plan over sim_cpu_limit runs when the limit is raised over its
// estimate, which its steps give; the default 1e-10 table at line rate
// (some 4 min of CPU) and paced (some 25 min) are under the default limit,
// the paced 1e-11 table (ten times as long: some 4.2 h) over it.
func TestLossSweepSimulatedCPULimit(t *testing.T) {
	lab := recipetest.StartLab(t, 13)
	r := losssweep.New()
	for _, c := range []struct {
		sets []string
		ok   bool
	}{
		{[]string{"pktgen_period_ns=124", "resolve_effective_loss=1e-10"}, true},
		{[]string{"pktgen_period_ns=124", "resolve_effective_loss=1e-10", "sim_cpu_limit=10m"}, false},
		{[]string{"pktgen_period_ns=124", "resolve_effective_loss=1e-11", "sim_cpu_limit=2h"}, false},
		{[]string{"pktgen_period_ns=124", "resolve_effective_loss=1e-11", "sim_cpu_limit=12h"}, true},
		{[]string{"resolve_effective_loss=1e-10"}, true},
	} {
		params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, c.sets)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := r.Plan(&orchestrator.PlanContext{Lab: lab.Inventory(), Params: params, Simulated: true})
		if (err == nil) != c.ok {
			t.Errorf("%v: planned %v, want %v (%v)", c.sets, err == nil, c.ok, err)
			continue
		}
		if err == nil && !strings.Contains(plan.Steps[0].Note, "of CPU") {
			t.Errorf("%v: the first step does not give its link's estimate: %q", c.sets, plan.Steps[0].Note)
		}
	}
	// A real lab spends no CPU on it: the same plan is not refused.
	params, _ := orchestrator.ResolveParams(r.Meta().Params, "", nil, []string{"pktgen_period_ns=124", "resolve_effective_loss=1e-10"})
	if _, err := r.Plan(&orchestrator.PlanContext{Lab: lab.Inventory(), Params: params}); err != nil {
		t.Errorf("a real lab's plan refused: %v", err)
	}
}

// On a real lab a line-rate stress test at 100G is told that its copies
// outrun the sender's loopback port (which the simulated switch does not
// show) and what the artifact paced at; a paced one, a 25G link and the
// simulated lab are not.
func TestLossSweepWarnsALabOfLineRateCopies(t *testing.T) {
	lab := recipetest.StartLab(t, 13)
	r := losssweep.New()
	notes := func(simulated bool, sets ...string) map[string]string {
		t.Helper()
		params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, sets)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := r.Plan(&orchestrator.PlanContext{Lab: lab.Inventory(), Params: params, Simulated: simulated})
		if err != nil {
			t.Fatal(err)
		}
		n := map[string]string{}
		for _, s := range plan.Steps {
			if s.Action == "prepare-switches" {
				n[s.Lane] = s.Note
			}
		}
		return n
	}
	const warn = "pktgen_period_ns=124"
	onLab := notes(false)
	if _, ok := onLab["lg25"]; !ok {
		t.Fatalf("no lg25 link prepared in the plan: %v", onLab)
	}
	if !strings.Contains(onLab["lg100"], warn) || !strings.Contains(onLab["lg100"], "loopback port") {
		t.Errorf("a real lab's line-rate 100G link is not warned: %q", onLab["lg100"])
	}
	if strings.Contains(onLab["lg25"], warn) {
		t.Errorf("a 25G link (its loopback port serves copies 4 times as fast) is warned: %q", onLab["lg25"])
	}
	if n := notes(false, "pktgen_period_ns=124")["lg100"]; strings.Contains(n, warn) {
		t.Errorf("a paced run is warned: %q", n)
	}
	if n := notes(true)["lg100"]; strings.Contains(n, warn) {
		t.Errorf("the simulated lab's run is warned: %q", n)
	}
}

// Stopping a run in the middle of a line-rate stress test stops it there:
// the step returns with the cancellation, the packet generator is stopped,
// and it sent few frames after the cancellation (the waits on the switch's
// clock are short steps that look at the context between them, so the
// run does not wait out the stress test before it stops the generator).
func TestLossSweepCancelMidStressStopsTheGenerator(t *testing.T) {
	lab := recipetest.StartLab(t, 14)
	ctx := context.Background()
	watch := open(t, lab, "sw1")
	const frames = 20_000_000
	done, polled := make(chan struct{}), make(chan struct{})
	started := false
	var atCancel int64 = -1
	var stepErr string
	res, _ := run(t, lab, func(e results.Event, abort func()) {
		switch {
		case e.Type == "step.start" && strings.HasSuffix(e.Step, ", linkguardian"):
			// Cancel once the generator is running: a frame sent and
			// the run not done.
			started = true
			go func() {
				defer close(polled)
				for {
					select {
					case <-done:
						return
					default:
					}
					st, err := watch.PktgenStatus(ctx, 1)
					if err == nil && st.Enabled && !st.Done && st.Packets > 0 {
						atCancel = st.Packets
						abort()
						return
					}
				}
			}()
		case e.Type == "step.error":
			stepErr = e.Message
		}
	}, "links=lg25", "loss_rates=1e-3", "modes=off,linkguardian", "frames=20000000", "calib_losses=100")
	close(done)
	if started {
		<-polled
	}
	if res.Status != results.StatusAborted || !strings.Contains(res.Reason, "during step") || !strings.Contains(res.Reason, "linkguardian") {
		t.Fatalf("status %s (%s): want aborted during the linkguardian stress step", res.Status, res.Reason)
	}
	if !strings.Contains(stepErr, "aborted") && !strings.Contains(stepErr, "context canceled") {
		t.Errorf("the step returned %q, not the cancellation", stepErr)
	}
	st, err := watch.PktgenStatus(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Enabled {
		t.Errorf("packet generator still enabled after the abort: %+v", st)
	}
	t.Logf("generator: %d frames sent at the cancellation, %d in all (of %d)", atCancel, st.Packets, frames)
	// 5% of the run is about 0.5 s of the switch's time at 25G: far more
	// than one wait step, far less than the stress test's own waits.
	if after := st.Packets - atCancel; atCancel < 0 || after > frames/20 {
		t.Errorf("generator sent %d frames before the cancellation and %d after (of %d): the run waited out the stress test", atCancel, after, frames)
	}
	checkRestored(t, lab, nil)
	// The next run on the same lab sees none of the aborted run's frames
	// (they landed or were discarded at the stop, not when the switch's
	// clock next moved).
	next, _ := run(t, lab, nil, "links=lg25", "loss_rates=1e-3", "modes=linkguardian", "frames=200000", "calib_losses=50")
	if next.Status != results.StatusOK {
		t.Errorf("the run after the aborted one: %s (%s)", next.Status, next.Reason)
	}
}

// withoutSetupStep runs loss-sweep's unprotected and protected points at
// 1e-3 on one link, 300,000 frames, with one step of the control-plane
// setup taken out by remove once the event when says it is time (the
// bench has set it up); opened is given the lab first, to open the switch
// remove drives. It returns the two points and the run's warnings.
func withoutSetupStep(t *testing.T, link string, when func(results.Event) bool, remove func(ctx context.Context), opened func(*simlab.Lab)) (off, on losssweep.Point, warned string) {
	t.Helper()
	lab := recipetest.StartLab(t, 14)
	opened(lab)
	removed := false
	var ws []string
	res, s := run(t, lab, func(e results.Event, abort func()) {
		if e.Type == "warning" {
			ws = append(ws, e.Message)
		}
		if removed || !when(e) {
			return
		}
		removed = true
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		remove(ctx)
	}, "links="+link, "loss_rates=1e-3", "modes=off,linkguardian", "frames=300000", "calib_losses=100")
	if res.Status != results.StatusOK {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	if !removed {
		t.Fatal("the moment to take the step out never came: no setup to take it out of")
	}
	speed := map[string]string{"lg25": "25G", "lg100": "100G"}[link]
	p := s.Points[speed][losssweep.LossKey(1e-3)]
	return p["off"], p["linkguardian"], strings.Join(ws, "\n")
}

// The bench has started the receiver's timer: its setup is done.
func timerStarted(e results.Event) bool {
	return e.Type == "setting" && e.Device == "sw2" && strings.HasPrefix(e.Message, "timer for port")
}

// LinkGuardian protects only with the setup its programs assume: with the
// sender's Tx-buffer mirror session removed after the bench set it up,
// the switch keeps no copy, so nothing lost is retransmitted. The run's
// data says so: the protected points lose what the unprotected ones do,
// and their Tx buffer never held a byte.
func TestLossSweepWithoutTheTxBufferSessionDoesNotProtect(t *testing.T) {
	const txPort = 144 // lg25's sending end
	sid := lg.SessionTxBuffer | lg.PortIndex(txPort)
	var sw1 *tofino.Switch
	off, on, warned := withoutSetupStep(t, "lg25", timerStarted, func(ctx context.Context) {
		if m, err := sw1.Mirror(ctx, sid); err != nil || m.Port != lg.RecircPort {
			t.Errorf("the bench's Tx-buffer session %#x: %+v %v", sid, m, err)
		}
		if err := sw1.DeleteMirror(ctx, sid); err != nil {
			t.Errorf("delete mirror session %#x: %v", sid, err)
		}
	}, func(lab *simlab.Lab) { sw1 = open(t, lab, "sw1") })
	t.Logf("actual %.3g; effective off %.3g LG %.3g; LG Tx buffer peak %d B", off.ActualLoss, off.EffectiveLoss, on.EffectiveLoss, on.MaxTxBufferBytes)
	if on.EffectiveLoss < off.ActualLoss/2 {
		t.Errorf("LinkGuardian without its Tx-buffer session: effective loss %.3g, actual %.3g: it still protects", on.EffectiveLoss, off.ActualLoss)
	}
	if !strings.Contains(warned, fmt.Sprintf("sw1 has no mirror session %#x", sid)) {
		t.Errorf("the run's warnings %q do not name the missing session %#x", warned, sid)
	}
	if _, err := sw1.Mirror(context.Background(), sid); !tofino.IsNotFound(err) {
		t.Errorf("mirror session %#x after the run: %v, want none (the run added it)", sid, err)
	}
}

// Without the receiver's explicit ACK (its self-replenishing mirror
// session removed after the bench injected it, so it leaves once and is
// gone) the stress traffic has no ACK back to the sender but inside loss
// notifications: the Tx buffer fills between two losses and the copies
// of most lost frames are tail-dropped before they are needed. The
// protected points lose most of what the unprotected ones do, their Tx
// buffer full, and the run's warnings name the missing session.
func TestLossSweepWithoutTheExplicitACKDoesNotProtect(t *testing.T) {
	const rxPort = 144 // lg25's receiving end
	sid := lg.SessionLowPrio | lg.PortIndex(rxPort)
	var sw2 *tofino.Switch
	off, on, warned := withoutSetupStep(t, "lg25", timerStarted, func(ctx context.Context) {
		if err := sw2.DeleteMirror(ctx, sid); err != nil {
			t.Errorf("delete mirror session %#x: %v", sid, err)
		}
	}, func(lab *simlab.Lab) { sw2 = open(t, lab, "sw2") })
	t.Logf("actual %.3g; effective off %.3g LG %.3g; LG Tx buffer peak %d B", off.ActualLoss, off.EffectiveLoss, on.EffectiveLoss, on.MaxTxBufferBytes)
	if on.EffectiveLoss < off.ActualLoss/2 {
		t.Errorf("LinkGuardian without the explicit ACK: effective loss %.3g, actual %.3g: it still protects", on.EffectiveLoss, off.ActualLoss)
	}
	if on.MaxTxBufferBytes < 150_000 {
		t.Errorf("LinkGuardian without the explicit ACK: the Tx buffer peaked at %d B: something freed it", on.MaxTxBufferBytes)
	}
	if !strings.Contains(warned, fmt.Sprintf("sw2 has no mirror session %#x", sid)) {
		t.Errorf("the run's warnings %q do not name the missing session %#x", warned, sid)
	}
}

// Without the receiver's timer (its packet-generator application stopped
// after the bench started it) the receiver sends no pause frame (they are
// timer packets) and skips no hole (ackNoTimeout ticks on them): at 100G
// the reorder buffer overflows, and a frame it drops is a hole no copy
// fills, behind which the ordered mode delivers nothing more. The run's
// data shows no timeout and the reorder buffer full; its warnings name
// the timer.
func TestLossSweepWithoutTheTimerDoesNotProtect(t *testing.T) {
	var sw2 *tofino.Switch
	// After the unprotected point, before the protected one.
	measured := func(e results.Event) bool { return e.Type == "measurement" && e.Device == "sw1" }
	off, on, warned := withoutSetupStep(t, "lg100", measured, func(ctx context.Context) {
		if err := sw2.StopPktgen(ctx, lgbench.TimerAppID); err != nil {
			t.Errorf("stop the timer: %v", err)
		}
	}, func(lab *simlab.Lab) { sw2 = open(t, lab, "sw2") })
	t.Logf("actual %.3g; effective off %.3g LG %.3g; LG timeouts %d, reorder buffer peak %d B", off.ActualLoss, off.EffectiveLoss, on.EffectiveLoss, on.Timeouts, on.MaxRxBufferBytes)
	if on.EffectiveLoss < off.ActualLoss/2 {
		t.Errorf("LinkGuardian without the timer: effective loss %.3g, actual %.3g: it still protects", on.EffectiveLoss, off.ActualLoss)
	}
	if on.Timeouts != 0 || on.MaxRxBufferBytes < 150_000 {
		t.Errorf("LinkGuardian without the timer: %d timeouts, reorder buffer peak %d B", on.Timeouts, on.MaxRxBufferBytes)
	}
	if !strings.Contains(warned, "timer (packet generator application") {
		t.Errorf("the run's warnings %q do not name the timer", warned)
	}
}

// With the artifact's generator timer (pktgen_period_ns=124: 124 ns at
// 100G, sender/config_pktgen.py) the simulated switch sends what the
// driver asked for: one frame a period, not line rate. Unprotected, the
// link delivers the generator's rate less its loss; non-blocking, all of
// it, its header and dummies fitting in the generator's gaps.
func TestLossSweepPacedAsTheArtifact(t *testing.T) {
	lab := recipetest.StartLab(t, 11)
	res, s := run(t, lab, nil, "links=lg100", "loss_rates=1e-3", "modes=off,linkguardian-nb", "frames=300000", "calib_losses=100", "pktgen_period_ns=124")
	if res.Status != results.StatusOK {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	p := s.Points["100G"][losssweep.LossKey(1e-3)]
	off, nb := p["off"], p["linkguardian-nb"]
	gen := float64((1518+20)*8) / 124e-9 / 1e9 // Gb/s the generator offers
	t.Logf("generator %.3f Gb/s; off %.3f at loss %.3g, NB %.3f, Tx buffer %d B", gen, off.EffectiveSpeedGbps, off.ActualLoss, nb.EffectiveSpeedGbps, nb.MaxTxBufferBytes)
	if off.EffectiveSpeedGbps > gen*(1-off.ActualLoss/2) || off.EffectiveSpeedGbps < gen*(1-3*off.ActualLoss) {
		t.Errorf("off delivers %.3f Gb/s; the generator offers %.3f less a loss of %.3g", off.EffectiveSpeedGbps, gen, off.ActualLoss)
	}
	if nb.EffectiveSpeedGbps > gen*1.0001 || nb.EffectiveSpeedGbps < gen*0.999 {
		t.Errorf("NB delivers %.3f Gb/s, the generator offers %.3f", nb.EffectiveSpeedGbps, gen)
	}
}
