// Package backpressure is the backpressure recipe (LinkGuardian §4.2,
// Fig. 9): one long line-rate flow across the corrupting link; the loss
// is switched on at one second and LinkGuardian (ordered mode) a few
// seconds later, with its pause/resume backpressure on and then off,
// while the switches' counters and buffers are polled at a fixed interval
// of the sender's clock.
package backpressure

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"testbed/dut/host"
	"testbed/experiments/lgbench"
	o "testbed/orchestrator"
	"testbed/results"
)

// Name is the recipe's name on the command line.
const Name = "backpressure"

// Recipe implements orchestrator.Recipe.
type Recipe struct{}

// New returns the recipe.
func New() *Recipe { return &Recipe{} }

// Meta implements orchestrator.Recipe.
func (*Recipe) Meta() o.Meta {
	return o.Meta{
		Name:        Name,
		Version:     "1.1.0",
		Summary:     "a long flow as loss and then LinkGuardian switch on, with backpressure on and off (LinkGuardian Fig. 9)",
		Description: description,
		Params:      params(),
		// Fig. 9: the rate delivered while protected, and frames lost, with backpressure on and off.
		Headlines: []string{"links.*.*.phases.protected.delivered_rate_gbps", "links.*.*.lost_while_protected"},
	}
}

const description = `For each selected link (default: every link with a VOA whose ends are on two switches), the
attenuation that gives loss_rate is first found by measuring, as in loss-sweep. Then, once
per value of backpressure, the VOA is set to clean_db, protection is turned off, and the
sending switch's packet generator starts a line-rate flow of frame_size frames. Every
interval of the sender's clock the recipe reads the sender port's data frames (the RMON
size counters over 127 B: originals and copies, not dummies), the frames delivered out of
the receiver's sink port, the receiver's pause frames, FCS errors and ackNoTimeout count,
and the occupancy of the Tx buffer and reorder buffer queues. At loss_on_s the VOA goes to
the calibrated attenuation; at protect_on_s LinkGuardian is enabled in ordered mode with
copies from Eq. 2 and, with backpressure on, the pause/resume thresholds of the link
speed (off: thresholds 0). At duration_s the flow stops. Rates count each frame as
frame_size plus preamble and gap. Frames lost while protected are the frames lost in the
whole flow less the FCS errors of the loss phase (every corrupted frame is lost there).
With flow=tcp the sending switch's generator stays idle: the host cabled to the sending
switch runs one iperf3 flow with congestion control cc (iperf3 -C, as the paper's Appendix
B.3) to the host cabled to the receiver across the link (tcp.go); the delivered rate is
what the iperf3 server received per interval and retransmissions are the sender's.
Writes data/timeseries.csv and a summary per link, backpressure setting and phase. The
protection entries and thresholds found are restored, ports the run added are deleted and
the VOA returns to its resting value, at the end or on abort.`

func params() []o.ParamSpec {
	return append([]o.ParamSpec{
		{Name: "links", Type: o.TypeStrings, Default: []string{}, Description: "links to test (default: every link with a VOA between two switches)"},
		{Name: "loss_rate", Type: o.TypeFloat, Default: 1e-3, Min: o.Bound(1e-9), Max: o.Bound(0.1), Description: "frame loss rate switched on through the VOA"},
		{Name: "target_loss", Type: o.TypeFloat, Default: 1e-8, Min: o.Bound(1e-15), Max: o.Bound(0.1), Description: "effective loss rate LinkGuardian is configured for (Eq. 2)"},
		{Name: "backpressure", Type: o.TypeStrings, Default: []string{"on", "off"}, Description: "runs, in order: on, off"},
		{Name: "loss_on_s", Type: o.TypeFloat, Unit: "s", Default: 2.0, Min: o.Bound(0), Max: o.Bound(3600), Description: "when the loss is switched on, from the flow's start"},
		{Name: "protect_on_s", Type: o.TypeFloat, Unit: "s", Default: 4.0, Min: o.Bound(0), Max: o.Bound(3600), Description: "when LinkGuardian is enabled"},
		{Name: "duration_s", Type: o.TypeFloat, Unit: "s", Default: 8.0, Min: o.Bound(0.01), Max: o.Bound(3600), Description: "length of the flow"},
		{Name: "interval", Type: o.TypeDuration, Default: 10 * time.Millisecond, Min: o.Bound(1e-5), Max: o.Bound(60), Description: "polling interval of the sender's clock"},
		{Name: "frame_size", Type: o.TypeInt, Unit: "B", Default: int64(1518), Min: o.Bound(128), Max: o.Bound(9216), Description: "L2 frame size including FCS (over 127 B, so data frames are told from dummies)"},
		{Name: "dummy_pkt_max_count", Type: o.TypeInt, Default: int64(4), Min: o.Bound(0), Max: o.Bound(255), Description: "dummies the sender may send after each protected packet"},
		{Name: "flow", Type: o.TypeString, Default: "line-rate", Description: "line-rate (the switch's packet generator) or tcp (an iperf3 flow between hosts)"},
		{Name: "cc", Type: o.TypeString, Default: "dctcp", Description: "congestion control of the TCP flow (iperf3 -C): dctcp, cubic or bbr"},
		{Name: "sender_host", Type: o.TypeString, Default: "", Description: "host sending the TCP flow (default: the first cabled to the sending switch)"},
		{Name: "receiver_host", Type: o.TypeString, Default: "", Description: "host receiving it (default: the first cabled to the receiving switch)"},
		{Name: "clean_db", Type: o.TypeFloat, Unit: "dB", Default: 0.0, Min: o.Bound(0), Max: o.Bound(100), Description: "attenuation before the loss is switched on"},
	}, lgbench.Params()...)
}

// Table is the declared time series.
func Table() results.Table {
	return results.Table{
		Name:        "timeseries",
		Title:       "A line-rate flow as loss and LinkGuardian switch on",
		Description: "One row per poll. Rates and counts are over the interval ending at time_s; buffers are the occupancy at time_s.",
		Fields: []results.Field{
			{Name: "run", Type: "string", Description: "link and backpressure setting"},
			{Name: "link", Type: "string", Description: "inventory link name"},
			{Name: "backpressure", Type: "string", Description: "on or off"},
			{Name: "time_s", Type: "number", Unit: "s", Description: "sender's clock since the flow started"},
			{Name: "phase", Type: "string", Description: "clean, loss (unprotected) or protected"},
			{Name: "sender_rate_gbps", Type: "number", Unit: "Gb/s", Description: "data frames (originals and copies) the sender's port transmitted"},
			{Name: "delivered_rate_gbps", Type: "number", Unit: "Gb/s", Description: "frames delivered out of the receiver's sink port"},
			{Name: "sender_queue_bytes", Type: "integer", Unit: "B", Description: "the sender's Tx buffer queue (buffered copies)"},
			{Name: "reorder_buffer_bytes", Type: "integer", Unit: "B", Description: "the receiver's reorder buffer queue"},
			{Name: "pause_frames", Type: "integer", Unit: "frames", Description: "pause frames the receiver sent"},
			{Name: "fcs_errors", Type: "integer", Unit: "frames", Description: "frames the receiver took with an FCS error"},
			{Name: "timeouts", Type: "integer", Description: "holes the receiver skipped by ackNoTimeout"},
			{Name: "flow", Type: "string", Description: "line-rate, or the TCP flow's congestion control"},
			{Name: "retransmits", Type: "integer", Unit: "segments", Description: "TCP retransmissions the sender counted in the interval (0 for the line-rate flow, which is not TCP)"},
		},
		// LinkGuardian Fig. 9: the flow's rate and the two buffers over
		// time, with the receiver's backpressure on (9a) and off (9b).
		Figures: []results.Figure{
			{Name: "delivered-rate", Title: "Delivered rate as loss, then LinkGuardian, switch on",
				Caption: "As LinkGuardian Fig. 9 (throughput): loss starts at loss_on_s, LinkGuardian (ordered) at protect_on_s; each value is the rate over the poll interval ending there. Dashed lines mark the phases.",
				Kind:    results.Step, X: "time_s", Y: "delivered_rate_gbps", Series: []string{"link", "backpressure"}, Legend: "{link}, backpressure {backpressure}", Phase: "phase",
				XLabel: "Time (s)", YLabel: "Delivered rate (Gb/s)"},
			{Name: "reorder-buffer", Title: "Receiver's reorder buffer (Rx buffer)",
				Caption: "As LinkGuardian Fig. 9 (Rx buffer): without backpressure the buffer fills and overflows.",
				Kind:    results.Line, X: "time_s", Y: "reorder_buffer_bytes", YScale: 1e-3, Series: []string{"link", "backpressure"}, Legend: "{link}, backpressure {backpressure}",
				XLabel: "Time (s)", YLabel: "Reorder buffer (KB)"},
			// Markers, not lines: the Tx buffer fills and drains many
			// times within a poll interval, so a line joining the polls
			// swings between empty and full at every step and paints a
			// solid block; the polls' markers show where the samples lie.
			{Name: "sender-queue", Title: "Sender's Tx buffer (retransmission copies)",
				Caption: "Each marker is the occupancy one poll found: the buffer fills and drains within a poll interval, so the polls scatter between empty and its peak.",
				Kind:    results.Scatter, X: "time_s", Y: "sender_queue_bytes", YScale: 1e-3, Series: []string{"link", "backpressure"}, Legend: "{link}, backpressure {backpressure}",
				XLabel: "Time (s)", YLabel: "Tx buffer (KB)"},
		},
	}
}

// Phase is what one phase of a run measured.
type Phase struct {
	Seconds           float64 `json:"seconds"`
	SenderRateGbps    float64 `json:"sender_rate_gbps"`
	DeliveredRateGbps float64 `json:"delivered_rate_gbps"`
	MaxTxBufferBytes  int64   `json:"max_tx_buffer_bytes"`
	MaxRxBufferBytes  int64   `json:"max_rx_buffer_bytes"`
	PauseFrames       int64   `json:"pause_frames"`
	FCSErrors         int64   `json:"fcs_errors"`
	Timeouts          int64   `json:"timeouts"`
	Retransmits       int64   `json:"retransmits"` // flow=tcp (0 for the line-rate flow)
}

// Run is one flow's summary.
type Run struct {
	// Flow is line-rate or tcp; CC the TCP flow's congestion control and
	// Retransmits its sender's retransmissions in all.
	Flow          string  `json:"flow"`
	CC            string  `json:"cc,omitempty"`
	Retransmits   int64   `json:"retransmits"`
	AttenuationDB float64 `json:"attenuation_db"`
	ActualLoss    float64 `json:"actual_loss"`
	RetxCopies    int     `json:"retx_copies"`
	PauseCells    int     `json:"pause_threshold_cells"`
	ResumeCells   int     `json:"resume_threshold_cells"`
	// Frames are counted for the line-rate flow only: a TCP flow's frames
	// on the sender's port include LinkGuardian's copies, so its losses are
	// not measured that way (nil, and absent from summary.json, rather than
	// a 0 that would read as nothing lost); its retransmissions say it.
	*Frames
	Phases map[string]Phase `json:"phases"`
}

// Frames are a line-rate run's frame counts, by the switches' counters.
type Frames struct {
	FramesSent      int64 `json:"frames_sent"`
	FramesDelivered int64 `json:"frames_delivered"`
	FramesLost      int64 `json:"frames_lost"`
	// LostWhileProtected: frames lost less the FCS errors of the loss
	// phase.
	LostWhileProtected int64 `json:"lost_while_protected"`
}

// Summary is summary.json: runs by link and backpressure setting.
type Summary struct {
	Partial bool                      `json:"partial"`
	Links   map[string]map[string]Run `json:"links"`
}

// The phases of a run, in order.
const (
	PhaseClean     = "clean"
	PhaseLoss      = "loss"
	PhaseProtected = "protected"
)

type state struct {
	mu    sync.Mutex
	links map[string]map[string]Run
}

func (s *state) add(link, bp string, r Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.links[link] == nil {
		s.links[link] = map[string]Run{}
	}
	s.links[link][bp] = r
}

// Plan implements Recipe.
func (r *Recipe) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	links, binds, err := lgbench.Bind(pc, p.Strings("links"), p.String("sink_port"))
	if err != nil {
		return nil, err
	}
	bps := p.Strings("backpressure")
	if err := checkTimes(p, bps); err != nil {
		return nil, err
	}
	lossOn, protOn, dur := p.Float("loss_on_s"), p.Float("protect_on_s"), p.Float("duration_s")
	interval := p.Duration("interval")
	var hosts tcpHosts
	flowKind, cc := p.String("flow"), p.String("cc")
	switch flowKind {
	case "line-rate":
	case "tcp":
		if !slices.Contains(CCs, cc) {
			return nil, o.Inputf("cc %q: expected one of %s", cc, strings.Join(CCs, ", "))
		}
		if hosts, err = bindTCP(pc, links, p); err != nil {
			return nil, err
		}
		binds = append(binds, o.Binding{Role: "tcp-flow", Resource: hosts.Sender + " -> " + hosts.Receiver,
			Detail: fmt.Sprintf("iperf3 -C %s to %s across %s", cc, hosts.Dst, links[0].Link.Name)})
	default:
		return nil, o.Inputf("flow %q: expected line-rate or tcp", flowKind)
	}
	loss, target := p.Float("loss_rate"), p.Float("target_loss")
	if loss <= target {
		return nil, o.Inputf("loss_rate %g is not above target_loss %g: there is nothing to protect against", loss, target)
	}
	for _, l := range links {
		for _, db := range []float64{p.Float("max_db"), p.Float("clean_db")} {
			if err := pc.CheckAttenuation(l.VOA, l.VOAChannel, db); err != nil {
				return nil, o.Inputf("%v", err)
			}
		}
	}
	st := &state{links: map[string]map[string]Run{}}
	plan := &o.Plan{Bindings: binds, Tables: []results.Table{Table()},
		Summary: func(partial bool) (any, error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			return Summary{Partial: partial, Links: st.links}, nil
		}}
	fb := int(p.Int("frame_size"))
	for _, l := range links {
		lf := &linkFlows{l: l, p: p, st: st, fb: fb, loss: loss, target: target, flowKind: flowKind, hosts: hosts, cc: cc,
			interval: interval, lossOn: lossOn, protOn: protOn, dur: dur}
		devs := []string{l.Sender, l.Receiver, l.VOA}
		plan.Steps = append(plan.Steps, &o.Step{
			Name: fmt.Sprintf("%s: switches", l.Link.Name), Action: "prepare-switches", Devices: devs[:2],
			Run: func(ctx context.Context, rc *o.RunContext) error {
				var err error
				lf.bench, err = lgbench.Open(ctx, rc, l, lgbench.OpenOptions(p))
				return err
			},
		})
		plan.Steps = append(plan.Steps, &o.Step{
			Name: fmt.Sprintf("%s: find loss %g", l.Link.Name, loss), Action: "calibrate-loss", Devices: devs,
			Settings: []o.Setting{{Device: l.VOA, Name: fmt.Sprintf("ch%d.attenuation", l.VOAChannel), Value: fmt.Sprintf("measured for loss in [%g, %g]", loss/p.Float("calib_tolerance"), loss), Unit: "dB"}},
			Run:      lf.calibrate,
		})
		for _, bp := range bps {
			stepDevs, source := devs, o.Setting{Device: l.Sender, Name: "pktgen", Value: fmt.Sprintf("%g s of %d B frames at line rate out of port %d", dur, fb, l.TxPort)}
			if flowKind == "tcp" {
				stepDevs = append(slices.Clone(devs), hosts.Sender, hosts.Receiver)
				source = o.Setting{Device: hosts.Sender, Name: "iperf3", Value: host.Iperf3Flow{Dst: hosts.Dst, Seconds: int64(dur), Interval: interval, CC: cc}.Command()}
			}
			plan.Steps = append(plan.Steps, &o.Step{
				Name: fmt.Sprintf("%s: flow, backpressure %s", l.Link.Name, bp), Action: "timeseries", Devices: stepDevs,
				// The flow's length of the switch's time: what it takes on
				// a real lab (the ETA scales it to the lab's pace).
				Estimate: secs(dur),
				Settings: []o.Setting{
					source,
					{Device: l.VOA, Name: fmt.Sprintf("ch%d.attenuation", l.VOAChannel), Value: fmt.Sprintf("%g dB, calibrated at %g s", p.Float("clean_db"), lossOn), Unit: "dB"},
					{Device: l.Sender, Name: "protection", Value: fmt.Sprintf("off, linkguardian at %g s", protOn)},
					{Device: l.Receiver, Name: "backpressure", Value: bp},
				},
				Run: func(ctx context.Context, rc *o.RunContext) error { return lf.timeseries(ctx, rc, bp) },
			})
		}
	}
	return plan, nil
}

// checkTimes checks the backpressure choices and the flow's times.
func checkTimes(p *o.Params, bps []string) error {
	if len(bps) == 0 {
		return o.Inputf("backpressure: expected on, off or both")
	}
	for _, b := range bps {
		if b != "on" && b != "off" {
			return o.Inputf("backpressure: %q (expected on or off)", b)
		}
	}
	lossOn, protOn, dur := p.Float("loss_on_s"), p.Float("protect_on_s"), p.Float("duration_s")
	if !(lossOn <= protOn && protOn < dur) {
		return o.Inputf("expected loss_on_s <= protect_on_s < duration_s, got %g, %g, %g", lossOn, protOn, dur)
	}
	interval := p.Duration("interval")
	if n := dur / interval.Seconds(); n > 1e6 {
		return o.Inputf("interval %v over duration_s %g is %.0f polls (at most 10^6)", interval, dur, n)
	}
	return nil
}

// linkFlows are one link's runs: its bench once prepared and the loss
// found on it.
type linkFlows struct {
	l                   lgbench.Link
	p                   *o.Params
	st                  *state
	fb                  int
	loss, target        float64
	flowKind, cc        string
	hosts               tcpHosts
	interval            time.Duration
	lossOn, protOn, dur float64
	bench               *lgbench.Bench
	cal                 lgbench.Calibration
}

// calibrate finds the attenuation for the loss rate, protection off.
func (lf *linkFlows) calibrate(ctx context.Context, rc *o.RunContext) error {
	l := lf.l
	if lf.bench == nil {
		return o.Skip("the switches of %s were not prepared", l.Link.Name)
	}
	if err := lf.bench.Protect(ctx, lgbench.Protection{Mode: lgbench.Off}); err != nil {
		return err
	}
	var err error
	lf.cal, err = lf.bench.Calibrate(ctx, lf.loss, lgbench.CalibrationFrom(lf.p, lf.fb))
	if err != nil {
		return err
	}
	cal := lf.cal
	rc.Event(results.Event{Type: "measurement", Device: l.VOA, Message: fmt.Sprintf("%s: loss %.3g at %.3f dB (%d of %d frames)",
		l.Link.Name, cal.Loss, cal.AttenuationDB, cal.Lost, cal.Frames),
		Fields: map[string]any{"link": l.Link.Name, "actual_loss": cal.Loss, "attenuation_db": cal.AttenuationDB}})
	return nil
}

// timeseries runs the flow with backpressure bp: clean, then lossy, then
// protected.
func (lf *linkFlows) timeseries(ctx context.Context, rc *o.RunContext, bp string) error {
	l, p := lf.l, lf.p
	if lf.bench == nil || lf.cal.Target != lf.loss {
		return o.Skip("the loss rate of %s was not found", l.Link.Name)
	}
	f := flow{rc: rc, b: lf.bench, l: l, cal: lf.cal, bp: bp, fb: lf.fb, interval: lf.interval, target: lf.target, cleanDB: p.Float("clean_db"),
		lossOn: secs(lf.lossOn), protOn: secs(lf.protOn), dur: secs(lf.dur), dummies: int(p.Int("dummy_pkt_max_count")), pktgenPort: int(p.Int("pktgen_port"))}
	var run Run
	var err error
	if lf.flowKind == "tcp" {
		run, err = f.runTCP(ctx, lf.hosts, lf.cc)
	} else {
		run, err = f.run(ctx)
	}
	if err != nil {
		return err
	}
	lf.st.add(l.Link.Name, bp, run)
	pr := run.Phases[PhaseProtected]
	msg := fmt.Sprintf("%s backpressure %s: protected %.2f Gb/s delivered, reorder buffer up to %d B, %d pause frames",
		l.Link.Name, bp, pr.DeliveredRateGbps, pr.MaxRxBufferBytes, pr.PauseFrames)
	fields := map[string]any{"link": l.Link.Name, "backpressure": bp, "flow": run.Flow}
	if run.Frames != nil {
		msg += fmt.Sprintf(", %d frames lost while protected", run.LostWhileProtected)
		fields["frames_sent"], fields["frames_lost"] = run.FramesSent, run.FramesLost
	} else {
		msg += fmt.Sprintf(", %d TCP retransmissions", run.Retransmits)
		fields["retransmits"] = run.Retransmits
	}
	rc.Event(results.Event{Type: "measurement", Device: l.Receiver, Message: msg, Fields: fields})
	return nil
}

func secs(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// flow is one run of the time series.
type flow struct {
	rc                  *o.RunContext
	b                   *lgbench.Bench
	l                   lgbench.Link
	cal                 lgbench.Calibration
	bp                  string
	fb                  int
	interval            time.Duration
	target, cleanDB     float64
	lossOn, protOn, dur time.Duration
	dummies, pktgenPort int
}

func (f *flow) run(ctx context.Context) (Run, error) {
	b, l := f.b, f.l
	run := Run{Flow: "line-rate", AttenuationDB: f.cal.AttenuationDB, ActualLoss: f.cal.Loss, Phases: map[string]Phase{}}
	if err := f.rc.SetAttenuation(ctx, l.VOA, l.VOAChannel, f.cleanDB); err != nil {
		return run, err
	}
	if err := b.Protect(ctx, lgbench.Protection{Mode: lgbench.Off}); err != nil {
		return run, err
	}
	prot, err := b.DefaultProtection(lgbench.LinkGuard, f.target, f.cal.Loss, f.bp == "on", f.dummies)
	if err != nil {
		return run, err
	}
	run.RetxCopies, run.PauseCells, run.ResumeCells = prot.Copies, prot.PauseCells, prot.ResumeCells
	table, err := f.rc.Table("timeseries")
	if err != nil {
		return run, err
	}
	// Enough frames that the generator outlasts the flow even at line rate.
	frames := int64(math.Ceil((f.dur + time.Second).Seconds() / b.Duration(1, f.fb).Seconds()))
	fl, err := b.StartFlow(ctx, lgbench.Stress{Frames: frames, FrameBytes: f.fb, AppID: 1, PktgenPort: f.pktgenPort})
	if err != nil {
		return run, err
	}
	defer fl.Close(ctx)
	t0 := fl.Start.Time
	bits := float64((f.fb + 20) * 8)
	name := fmt.Sprintf("%s backpressure %s", l.Link.Name, f.bp)
	phase := PhaseClean
	phaseStart := fl.Start
	prev := lgbench.Sample{Snapshot: fl.Start}
	var lossFCS int64
	var ph Phase
	endPhase := func(s lgbench.Sample) {
		ph.Seconds = (s.Time - phaseStart.Time).Seconds()
		if dt := (s.Time - phaseStart.Time).Seconds(); dt > 0 {
			ph.SenderRateGbps = float64(s.TxData-phaseStart.TxData) * bits / dt / 1e9
		}
		if dt := (s.SinkTime - phaseStart.SinkTime).Seconds(); dt > 0 {
			ph.DeliveredRateGbps = float64(s.Delivered-phaseStart.Delivered) * bits / dt / 1e9
		}
		ph.PauseFrames = s.PauseFrames - phaseStart.PauseFrames
		ph.FCSErrors = s.RxFCS - phaseStart.RxFCS
		ph.Timeouts = s.Timeouts - phaseStart.Timeouts
		run.Phases[phase] = ph
		if phase == PhaseLoss {
			lossFCS = ph.FCSErrors
		}
		ph, phaseStart = Phase{}, s.Snapshot
	}
	for k := int64(1); ; k++ {
		at := time.Duration(k) * f.interval
		if at > f.dur {
			break
		}
		s, err := fl.SampleAt(ctx, t0+at)
		if err != nil {
			return run, err
		}
		var sent, delivered float64
		if dt := (s.Time - prev.Time).Seconds(); dt > 0 {
			sent = float64(s.TxData-prev.TxData) * bits / dt / 1e9
		}
		if dt := (s.SinkTime - prev.SinkTime).Seconds(); dt > 0 {
			delivered = float64(s.Delivered-prev.Delivered) * bits / dt / 1e9
		}
		if err := table.Write(name, l.Link.Name, f.bp, (s.Time - t0).Seconds(), phase, sent, delivered, s.TxBuffer, s.Reorder,
			s.PauseFrames-prev.PauseFrames, s.RxFCS-prev.RxFCS, s.Timeouts-prev.Timeouts, "line-rate", 0); err != nil {
			return run, err
		}
		ph.MaxTxBufferBytes = max(ph.MaxTxBufferBytes, s.TxBuffer)
		ph.MaxRxBufferBytes = max(ph.MaxRxBufferBytes, s.Reorder)
		prev = s
		elapsed := s.Time - t0
		if phase == PhaseClean && elapsed >= f.lossOn {
			endPhase(s)
			phase = PhaseLoss
			if err := f.rc.SetAttenuation(ctx, l.VOA, l.VOAChannel, f.cal.AttenuationDB); err != nil {
				return run, err
			}
			f.changed(ctx, fmt.Sprintf("%s: loss on (%.3f dB)", name, f.cal.AttenuationDB))
		}
		if phase == PhaseLoss && elapsed >= f.protOn {
			endPhase(s)
			phase = PhaseProtected
			if err := b.Protect(ctx, prot); err != nil {
				return run, err
			}
			f.changed(ctx, fmt.Sprintf("%s: linkguardian on, %d copies, thresholds %d/%d cells", name, prot.Copies, prot.PauseCells, prot.ResumeCells))
		}
	}
	endPhase(prev)
	sent, err := fl.Stop(ctx)
	if err != nil {
		return run, err
	}
	// What is still in flight (copies, the reorder buffer) lands within
	// microseconds of device time.
	now, err := b.Tx.Clock(ctx)
	if err != nil {
		return run, fmt.Errorf("%s: %w", l.Sender, err)
	}
	end, err := fl.SampleAt(ctx, now+time.Millisecond)
	if err != nil {
		return run, err
	}
	run.Frames = &Frames{FramesSent: sent}
	run.FramesDelivered = end.Delivered - fl.Start.Delivered
	run.FramesLost = run.FramesSent - run.FramesDelivered
	run.LostWhileProtected = run.FramesLost - lossFCS
	if run.FramesLost < 0 {
		return run, fmt.Errorf("%s: %d frames delivered of %d sent: the sink port counts other traffic", l.Receiver, run.FramesDelivered, run.FramesSent)
	}
	return run, nil
}

// changed records when a change took effect, by the sender's clock.
func (f *flow) changed(ctx context.Context, msg string) {
	e := results.Event{Type: "change", Device: f.l.Sender, Message: msg}
	if now, err := f.b.Tx.Clock(ctx); err == nil {
		e.Fields = map[string]any{"device_time_s": now.Seconds()}
	}
	f.rc.Event(e)
}
