// Package losssweep is the loss-sweep recipe (LinkGuardian §4.1, Fig. 8):
// for each link speed and actual loss rate, the switch packet generator's
// line-rate stress test with protection off, LinkGuardian and
// LinkGuardianNB, measuring effective loss rate, effective link speed,
// ackNoTimeout events and buffer peaks from the switches themselves.
package losssweep

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"testbed/experiments/lgbench"
	"testbed/experiments/stats"
	o "testbed/orchestrator"
	lg "testbed/p4/linkguardian"
	"testbed/results"
)

// Name is the recipe's name on the command line.
const Name = "loss-sweep"

// Recipe implements orchestrator.Recipe.
type Recipe struct {
	perRun int64 // frames per packet generator run (perRun; less in tests)
}

// New returns the recipe.
func New() *Recipe { return &Recipe{perRun: perRun} }

// Meta implements orchestrator.Recipe.
func (*Recipe) Meta() o.Meta {
	return o.Meta{
		Name:        Name,
		Version:     "1.0.0",
		Summary:     "effective loss rate and link speed under LinkGuardian, per link speed and loss rate (LinkGuardian Fig. 8)",
		Description: description,
		Params:      params(),
		// Fig. 8: effective loss and link speed under LinkGuardian, per link speed and loss rate.
		Headlines: []string{"points.*.*.linkguardian.effective_loss", "points.*.*.linkguardian.effective_link_speed_gbps", "points.*.*.linkguardian-nb.effective_link_speed_gbps"},
	}
}

const description = `For each selected link (default: every link with a VOA whose ends are on two switches), the
sending switch runs the LinkGuardian sender program and the receiving one the receiver
program, forwarding what it delivers out of its sink port. For each loss rate in
loss_rates the VOA is set by measuring: with protection off, MTU frames are sent at line
rate while the attenuation is raised, then interpolated on log(loss) between bracketing
points until the measured rate lies in [loss/calib_tolerance, loss] with about
calib_losses losses seen. At that attenuation the packet generator sends frames MTU
frames back to back (or one every pktgen_period_ns, scaled by 100/speed: 124 is the
LinkGuardian artifact's timer) in each mode of modes: off, linkguardian (ordered, with
backpressure unless backpressure=false) and linkguardian-nb. With resolve_effective_loss=r above 0 it
sends ceil(1.96^2/(10 r)) frames instead, so that an effective loss of r is told apart
from one of 100 r (r = 1e-10: 3.84e9 frames a point). Copies follow Eq. 2 from target_loss and
the measured loss; backpressure thresholds follow the link speed's t_flight_resume.
Effective loss is 1 - delivered/sent (a zero comes with its 95% upper bound); effective
link speed is the delivered rate between 10% and 90% of the run, counting preamble and
gap as line rate does. Timeouts are the receiver's ackNoTimeout count; buffer peaks are
the traffic manager's watermarks of the Tx buffer and reorder buffer queues.
Port counters are never cleared; queue watermarks are. The protection entries and
thresholds found are restored at the end or on abort, ports the run added are deleted,
and the VOA returns to its resting value. Writes data/loss_sweep.csv and a summary per
link speed, loss rate and mode.`

func params() []o.ParamSpec {
	return append([]o.ParamSpec{
		{Name: "links", Type: o.TypeStrings, Default: []string{}, Description: "links to test (default: every link with a VOA between two switches)"},
		{Name: "loss_rates", Type: o.TypeFloats, Default: []float64{1e-5, 1e-4, 1e-3}, Min: o.Bound(1e-9), Max: o.Bound(0.1), Description: "actual frame loss rates to set through the VOA"},
		{Name: "modes", Type: o.TypeStrings, Default: []string{"off", "linkguardian", "linkguardian-nb"}, Description: "protection modes: off, linkguardian, linkguardian-nb"},
		{Name: "target_loss", Type: o.TypeFloat, Default: 1e-8, Min: o.Bound(1e-15), Max: o.Bound(0.1), Description: "effective loss rate LinkGuardian is configured for (Eq. 2)"},
		{Name: "frames", Type: o.TypeInt, Unit: "frames", Default: int64(20_000_000), Min: o.Bound(1000), Max: o.Bound(1e12), Description: "frames per stress test (beyond what one packet generator run sends, several back to back)"},
		{Name: "resolve_effective_loss", Type: o.TypeFloat, Default: 0.0, Min: o.Bound(0), Max: o.Bound(1e-3), Description: "when above 0, frames per stress test are ceil(1.96^2/(10 x this)) instead of frames, so a point with no frame lost has a 95% upper bound of about 10x this and an effective loss at this rate is told apart from one 100x higher (1e-10: 3.84e9 frames)"},
		{Name: "frame_size", Type: o.TypeInt, Unit: "B", Default: int64(1518), Min: o.Bound(64), Max: o.Bound(9216), Description: "L2 frame size including FCS"},
		{Name: "backpressure", Type: o.TypeBool, Default: true, Description: "pause/resume backpressure in ordered mode"},
		{Name: "pktgen_period_ns", Type: o.TypeInt, Unit: "ns", Default: int64(0), Min: o.Bound(0), Max: o.Bound(1e6), Description: "the stress test's packet generator timer on a 100 Gb/s link, one frame a firing, scaled by 100/speed on another; 0 (or a period under a frame's time on the wire) sends back to back at line rate. 124 is the LinkGuardian artifact's (496 ns at 25G, sender/config_pktgen.py; 0.6% under line rate for MTU frames): its Tx buffer figures were read so. Calibration always sends at line rate. On the simulated lab a paced point costs some 2-5 times the CPU of a line-rate one (what follows a loss is stepped frame by frame)"},
		{Name: "dummy_pkt_max_count", Type: o.TypeInt, Default: int64(4), Min: o.Bound(0), Max: o.Bound(255), Description: "dummies the sender may send after each protected packet (tail-loss detection)"},
		{Name: "sim_cpu_limit", Type: o.TypeDuration, Default: time.Hour, Min: o.Bound(1), Max: o.Bound(1e6), Description: "on the simulated lab, a plan estimated to take more CPU time than this is refused before it starts, naming the parameters that make it (pktgen_period_ns=124 with resolve_effective_loss=1e-10 is some 25 min, 1e-11 hours); each link's first step gives its estimate. Raise it to run such a plan anyway. Unused on a real lab"},
	}, lgbench.Params()...)
}

// ArtifactPeriodNs is the LinkGuardian artifact's packet generator timer
// at 100G (NUS-SNL/linkguardian bd46f4b, switch_impl/system_impl/sender/
// config_pktgen.py lines 12-17: TIME_PERIOD_100G = 124, 496 at 25G, 1240 at
// 10G, one 1514 B packet a firing: 124 ns is one 1550 B slot at 100G).
const ArtifactPeriodNs = 124

// Period is the generator's timer for a link of gbps: periodNs at 100G,
// scaled by 100/gbps and rounded to whole nanoseconds (the timer's unit).
func Period(periodNs int64, gbps int) time.Duration {
	if periodNs <= 0 || gbps <= 0 {
		return 0
	}
	return time.Duration((periodNs*100+int64(gbps)/2)/int64(gbps)) * time.Nanosecond
}

// Table is the declared data table.
func Table() results.Table {
	return results.Table{
		Name:        "loss_sweep",
		Title:       "LinkGuardian under packet-generator stress (line rate, or paced by pktgen_period_ns), per link speed, loss rate and mode",
		Description: "One row per stress test. effective_loss is 1 - frames_delivered/frames_sent; effective_loss_high its 95% Wilson upper bound (the figure to quote when effective_loss is 0).",
		Fields: []results.Field{
			{Name: "link", Type: "string", Description: "inventory link name"},
			{Name: "link_speed_gbps", Type: "integer", Unit: "Gb/s", Description: "line rate of the link"},
			{Name: "mode", Type: "string", Description: "off, linkguardian or linkguardian-nb"},
			{Name: "target_loss", Type: "number", Unit: "1", Description: "effective loss rate the protection is configured for"},
			{Name: "nominal_loss", Type: "number", Unit: "1", Description: "loss rate asked for"},
			{Name: "actual_loss", Type: "number", Unit: "1", Description: "frame loss rate measured with protection off at this attenuation"},
			{Name: "attenuation_db", Type: "number", Unit: "dB", Description: "VOA attenuation"},
			{Name: "retx_copies", Type: "integer", Description: "retransmitted copies (Eq. 2); 0 with protection off"},
			{Name: "frames_sent", Type: "integer", Unit: "frames", Description: "frames the packet generator sent"},
			{Name: "frames_delivered", Type: "integer", Unit: "frames", Description: "original frames delivered out of the receiver's sink port"},
			{Name: "effective_loss", Type: "number", Unit: "1", Description: "1 - frames_delivered / frames_sent"},
			{Name: "effective_loss_high", Type: "number", Unit: "1", Description: "95% Wilson upper bound of effective_loss"},
			{Name: "effective_link_speed_gbps", Type: "number", Unit: "Gb/s", Description: "delivered rate between 10% and 90% of the run, preamble and gap counted"},
			{Name: "timeouts", Type: "integer", Description: "holes the receiver skipped by ackNoTimeout"},
			{Name: "max_tx_buffer_bytes", Type: "integer", Unit: "B", Description: "watermark of the sender's Tx buffer queue: the queue the copies the leading ACK had not freed at their first pass wait in, in 80 B cells, as the authors' artifact reads it (its loopback port's queue). The simulated switch gives that queue (the receiver's courier cadence) for a packet generator run of up to 2^27 = 134,217,728 frames and the copies held for a longer one (frames_sent above it: the 1e-10 resolution's points) or when the receiver sends no leading ACK"},
			{Name: "max_rx_buffer_bytes", Type: "integer", Unit: "B", Description: "watermark of the receiver's reorder buffer queue"},
			{Name: "frames_on_wire", Type: "integer", Unit: "frames", Description: "every frame the sender transmitted: originals, copies, dummies"},
			{Name: "fcs_errors", Type: "integer", Unit: "frames", Description: "frames the receiver took with an FCS error"},
			{Name: "pause_frames", Type: "integer", Unit: "frames", Description: "pause frames the receiver sent"},
		},
		// LinkGuardian Fig. 8, top: effective against actual loss, one
		// curve per link speed and mode; a zero is drawn at its upper bound.
		Figures: []results.Figure{{
			Name: "effective-loss", Title: "Effective loss rate achieved by LinkGuardian (LG) and LinkGuardianNB",
			Caption: "As LinkGuardian Fig. 8 (top). Open triangles: no frame lost, drawn at the 95% upper bound of the effective loss; off is the unprotected link (effective = actual).",
			Kind:    results.Line, X: "actual_loss", Y: "effective_loss", ZeroAt: "effective_loss_high",
			Series: []string{"link_speed_gbps", "mode"}, Legend: "{link_speed_gbps}G {mode}", LogX: true, LogY: true,
			XLabel: "Actual loss rate (protection off)", YLabel: "Effective loss rate",
		}},
	}
}

// speedFigure is LinkGuardian Fig. 8, bottom, for one link speed: the
// effective link speed per mode against the actual loss rate.
func speedFigure(gbps int) results.Figure {
	return results.Figure{
		Name: fmt.Sprintf("effective-link-speed-%dg", gbps), Title: fmt.Sprintf("Effective link speed, %dG link", gbps),
		Caption: fmt.Sprintf("As LinkGuardian Fig. 8 (bottom), %d Gb/s link: delivered rate between 10%% and 90%% of each stress test.", gbps),
		Kind:    results.Line, X: "actual_loss", Y: "effective_link_speed_gbps",
		Where:  []results.Cond{{Column: "link_speed_gbps", Value: strconv.Itoa(gbps)}},
		Series: []string{"mode"}, LogX: true,
		XLabel: "Actual loss rate (protection off)", YLabel: "Effective link speed (Gb/s)",
	}
}

// Point is one stress test's summary.
type Point struct {
	Link               string  `json:"link"`
	AttenuationDB      float64 `json:"attenuation_db"`
	ActualLoss         float64 `json:"actual_loss"`
	RetxCopies         int     `json:"retx_copies"`
	FramesSent         int64   `json:"frames_sent"`
	FramesDelivered    int64   `json:"frames_delivered"`
	EffectiveLoss      float64 `json:"effective_loss"`
	EffectiveLossHigh  float64 `json:"effective_loss_high"`
	EffectiveSpeedGbps float64 `json:"effective_link_speed_gbps"`
	Timeouts           int64   `json:"timeouts"`
	MaxTxBufferBytes   int64   `json:"max_tx_buffer_bytes"`
	MaxRxBufferBytes   int64   `json:"max_rx_buffer_bytes"`
}

// Summary is summary.json: points by link speed ("25G"), nominal loss
// rate ("1e-05") and mode.
type Summary struct {
	Partial    bool    `json:"partial"`
	TargetLoss float64 `json:"target_loss"`
	// FramesPerPoint is what each stress test sends: frames, or the
	// count resolve_effective_loss asks for (FramesToResolve).
	FramesPerPoint       int64                                  `json:"frames_per_point,omitempty"`
	ResolveEffectiveLoss float64                                `json:"resolve_effective_loss,omitempty"`
	Points               map[string]map[string]map[string]Point `json:"points"`
}

type state struct {
	mu     sync.Mutex
	points map[string]map[string]map[string]Point
}

func (s *state) add(speed, loss, mode string, p Point) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.points[speed] == nil {
		s.points[speed] = map[string]map[string]Point{}
	}
	if s.points[speed][loss] == nil {
		s.points[speed][loss] = map[string]Point{}
	}
	s.points[speed][loss][mode] = p
}

// LossKey is how a nominal loss rate names its summary entry.
func LossKey(f float64) string { return strconv.FormatFloat(f, 'e', -1, 64) }

// Plan implements Recipe.
func (r *Recipe) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	links, binds, err := lgbench.Bind(pc, p.Strings("links"), p.String("sink_port"))
	if err != nil {
		return nil, err
	}
	var modes []lgbench.Mode
	for _, m := range p.Strings("modes") {
		mode, err := lgbench.ParseMode(m)
		if err != nil {
			return nil, o.Inputf("modes: %v", err)
		}
		modes = append(modes, mode)
	}
	losses := p.Floats("loss_rates")
	if len(losses) == 0 || len(modes) == 0 {
		return nil, o.Inputf("loss_rates and modes must not be empty")
	}
	target := p.Float("target_loss")
	frames := p.Int("frames")
	resolve := p.Float("resolve_effective_loss")
	if resolve > 0 {
		frames = FramesToResolve(resolve)
	}
	for _, l := range losses {
		if l <= target {
			return nil, o.Inputf("loss rate %g is not above target_loss %g: there is nothing to protect against", l, target)
		}
	}
	slices.Sort(losses)
	for _, l := range links {
		if err := pc.CheckAttenuation(l.VOA, l.VOAChannel, p.Float("max_db")); err != nil {
			return nil, o.Inputf("max_db: %v", err)
		}
	}
	st := &state{points: map[string]map[string]map[string]Point{}}
	table := Table()
	for _, l := range links {
		f := speedFigure(l.Gbps)
		if !slices.ContainsFunc(table.Figures, func(g results.Figure) bool { return g.Name == f.Name }) {
			table.Figures = append(table.Figures, f)
		}
	}
	plan := &o.Plan{Bindings: binds, Tables: []results.Table{table},
		Summary: func(partial bool) (any, error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			return Summary{Partial: partial, TargetLoss: target, FramesPerPoint: frames, ResolveEffectiveLoss: resolve, Points: st.points}, nil
		}}
	fb := int(p.Int("frame_size"))
	stress := lgbench.StressFrom(p, fb)
	// What the points cost on the simulated lab, checked before a step is
	// laid out.
	var cost simCost
	linkCPU := map[string]time.Duration{}
	for _, l := range links {
		paced := Period(p.Int("pktgen_period_ns"), l.Gbps) > l.Duration(1, fb)
		for _, loss := range losses {
			for _, m := range modes {
				// A paced ordered point below 100G keeps its reorder
				// buffer's rotation between losses, stepped (simcost.go).
				slow := paced && m == lgbench.LinkGuard && l.Gbps < 100
				linkCPU[l.Link.Name] += cost.add(frames, loss, paced, slow)
			}
		}
	}
	if pc.Simulated {
		if err := cost.check(p, frames, p.Duration("sim_cpu_limit")); err != nil {
			return nil, err
		}
	}
	for _, l := range links {
		ls := stress
		ls.Period = Period(p.Int("pktgen_period_ns"), l.Gbps)
		pace := "at line rate"
		if ls.Period > l.Duration(1, fb) {
			pace = fmt.Sprintf("one every %v", ls.Period)
		}
		prepNote := prepareNote(pc.Simulated, &l, fb, ls.Period, linkCPU[l.Link.Name])
		sw := &sweepLink{l: l, p: p, st: st, fb: fb, target: target, frames: frames, stress: ls, perRun: r.perRun,
			start: p.Float("start_db"), speed: fmt.Sprintf("%dG", l.Gbps)}
		devs := []string{l.Sender, l.Receiver, l.VOA}
		plan.Steps = append(plan.Steps, &o.Step{
			Name: fmt.Sprintf("%s: switches", l.Link.Name), Action: "prepare-switches", Devices: devs[:2], Lane: l.Link.Name, Note: prepNote,
			Settings: []o.Setting{
				{Device: l.Sender, Name: "program", Value: lg.ProgramSender},
				{Device: l.Receiver, Name: "program", Value: lg.ProgramReceiver},
				{Device: l.Sender, Name: fmt.Sprintf("port %d", l.TxPort), Value: fmt.Sprintf("%dG fec %s", l.Gbps, l.FEC)},
				{Device: l.Receiver, Name: fmt.Sprintf("ports %d, %d (sink)", l.RxPort, l.Sink), Value: fmt.Sprintf("%dG fec %s", l.Gbps, l.FEC)},
			},
			Run: func(ctx context.Context, rc *o.RunContext) error {
				var err error
				sw.bench, err = lgbench.Open(ctx, rc, l, lgbench.OpenOptions(p))
				return err
			},
		})
		for _, loss := range losses {
			plan.Steps = append(plan.Steps, &o.Step{
				Name: fmt.Sprintf("%s: set loss %g", l.Link.Name, loss), Action: "calibrate-loss", Devices: devs, Lane: l.Link.Name,
				Settings: []o.Setting{{Device: l.VOA, Name: fmt.Sprintf("ch%d.attenuation", l.VOAChannel), Value: fmt.Sprintf("measured for loss in [%g, %g]", loss/p.Float("calib_tolerance"), loss), Unit: "dB"}},
				Note:     "the attenuation is found by measuring with protection off, starting where the previous loss rate was found",
				Run:      func(ctx context.Context, rc *o.RunContext) error { return sw.calibrate(ctx, rc, loss) },
			})
			for _, mode := range modes {
				plan.Steps = append(plan.Steps, &o.Step{
					Name: fmt.Sprintf("%s: loss %g, %s", l.Link.Name, loss, mode), Action: "stress-test", Devices: devs[:2], Lane: l.Link.Name,
					Settings: []o.Setting{
						{Device: l.Sender, Name: "protection", Value: string(mode)},
						{Device: l.Sender, Name: "pktgen", Value: fmt.Sprintf("%d frames of %d B %s out of port %d", frames, fb, pace, l.TxPort)},
					},
					Note: "copies from Eq. 2 with the loss measured in the step before",
					Run:  func(ctx context.Context, rc *o.RunContext) error { return sw.stressTest(ctx, rc, loss, mode) },
				})
			}
		}
	}
	return plan, nil
}

// sweepLink is one link's sweep: its bench once prepared, and the loss
// rate last set on it.
type sweepLink struct {
	l      lgbench.Link
	p      *o.Params
	st     *state
	fb     int
	target float64
	frames int64
	stress lgbench.Stress
	perRun int64
	speed  string
	bench  *lgbench.Bench
	cal    lgbench.Calibration
	start  float64 // where the previous loss rate was found
}

// calibrate sets loss on the link by measuring with protection off.
func (sw *sweepLink) calibrate(ctx context.Context, rc *o.RunContext, loss float64) error {
	l := sw.l
	if sw.bench == nil {
		return o.Skip("the switches of %s were not prepared", l.Link.Name)
	}
	var err error
	co := lgbench.CalibrationFrom(sw.p, sw.fb)
	co.StartDB = sw.start // where the previous loss rate was found
	sw.cal, err = sw.bench.Calibrate(ctx, loss, co)
	if err != nil {
		return err
	}
	cal := sw.cal
	sw.start = cal.AttenuationDB
	rc.Event(results.Event{Type: "measurement", Device: l.VOA, Message: fmt.Sprintf("%s: loss %.3g at %.3f dB (%d of %d frames, %d measurements)",
		l.Link.Name, cal.Loss, cal.AttenuationDB, cal.Lost, cal.Frames, cal.Measurements),
		Fields: map[string]any{"link": l.Link.Name, "nominal_loss": loss, "actual_loss": cal.Loss, "attenuation_db": cal.AttenuationDB}})
	return nil
}

// stressTest runs the stress test in mode at the loss rate set.
func (sw *sweepLink) stressTest(ctx context.Context, rc *o.RunContext, loss float64, mode lgbench.Mode) error {
	l, cal, p, target, bench := sw.l, sw.cal, sw.p, sw.target, sw.bench
	if bench == nil || cal.Target != loss {
		return o.Skip("the loss rate %g was not set on %s", loss, l.Link.Name)
	}
	prot, err := bench.DefaultProtection(mode, target, cal.Loss, p.Bool("backpressure"), int(p.Int("dummy_pkt_max_count")))
	if err != nil {
		return err
	}
	if err := bench.Protect(ctx, prot); err != nil {
		return err
	}
	s := sw.stress
	s.Window = true
	res, err := runStress(ctx, bench, s, sw.frames, sw.perRun)
	if err != nil {
		return err
	}
	pt := Point{Link: l.Link.Name, AttenuationDB: cal.AttenuationDB, ActualLoss: cal.Loss, RetxCopies: prot.Copies,
		FramesSent: res.Sent, FramesDelivered: res.Delivered, EffectiveSpeedGbps: res.RateGbps, Timeouts: res.Timeouts,
		MaxTxBufferBytes: res.MaxTxBufBytes, MaxRxBufferBytes: res.MaxRxBufBytes}
	pt.EffectiveLoss = float64(res.Lost()) / float64(res.Sent)
	_, pt.EffectiveLossHigh = stats.Wilson(res.Lost(), res.Sent, stats.Z95)
	sw.st.add(sw.speed, LossKey(loss), string(mode), pt)
	t, err := rc.Table("loss_sweep")
	if err != nil {
		return err
	}
	if err := t.Write(l.Link.Name, l.Gbps, string(mode), target, loss, cal.Loss, cal.AttenuationDB, prot.Copies, res.Sent, res.Delivered,
		pt.EffectiveLoss, pt.EffectiveLossHigh, res.RateGbps, res.Timeouts, res.MaxTxBufBytes, res.MaxRxBufBytes, res.Wire, res.FCS, res.Pauses); err != nil {
		return err
	}
	eff := fmt.Sprintf("%.3g", pt.EffectiveLoss)
	if res.Lost() == 0 {
		eff = fmt.Sprintf("0 (< %.2g)", pt.EffectiveLossHigh)
	}
	rc.Event(results.Event{Type: "measurement", Device: l.Sender, Message: fmt.Sprintf("%s %s at %.3g: %d copies, effective loss %s, %.2f Gb/s, %d timeouts, buffers %d/%d B",
		l.Link.Name, mode, cal.Loss, prot.Copies, eff, res.RateGbps, res.Timeouts, res.MaxTxBufBytes, res.MaxRxBufBytes),
		Fields: map[string]any{"link": l.Link.Name, "mode": string(mode), "actual_loss": cal.Loss, "effective_loss": pt.EffectiveLoss,
			"effective_link_speed_gbps": res.RateGbps, "frames_sent": res.Sent}})
	return nil
}

// perRun is the most frames one stress test sends in one packet generator
// run: the generator counts 2^16 batches of 2^16 packets; a whole number of
// full batches below 4x10^9.
const perRun = 61035 * 65536

// runStress sends n frames as consecutive packet generator runs of at most
// per frames and adds their counts up; the window rate is the mean of
// the runs' rates weighted by their frames, the buffer peaks the largest.
func runStress(ctx context.Context, b *lgbench.Bench, s lgbench.Stress, n, per int64) (lgbench.StressResult, error) {
	var sum lgbench.StressResult
	var rate float64
	for left := n; left > 0; {
		s.Frames = min(left, per)
		r, err := b.Run(ctx, s)
		if err != nil {
			return sum, err
		}
		left -= s.Frames
		sum.Sent += r.Sent
		sum.Delivered += r.Delivered
		sum.Wire += r.Wire
		sum.FCS += r.FCS
		sum.Timeouts += r.Timeouts
		sum.Pauses += r.Pauses
		sum.Elapsed += r.Elapsed
		rate += r.RateGbps * float64(r.Sent)
		sum.MaxTxBufBytes = max(sum.MaxTxBufBytes, r.MaxTxBufBytes)
		sum.MaxRxBufBytes = max(sum.MaxRxBufBytes, r.MaxRxBufBytes)
	}
	if sum.Sent > 0 {
		sum.RateGbps = rate / float64(sum.Sent)
	}
	return sum, nil
}

// prepareNote is what a link's first step says of its stress points: on
// the simulated lab their CPU estimate; on a real lab, when the sender's
// copies outrun its loopback port, that they do.
func prepareNote(simulated bool, l *lgbench.Link, fb int, period time.Duration, cpu time.Duration) string {
	if simulated {
		return fmt.Sprintf("on the simulated lab this link's stress points take about %s of CPU (sim_cpu_limit bounds the plan's)", roundCPU(cpu))
	}
	// The originals leave one a period or back to back on the link; their
	// copies are read back through the sender's loopback port, a MAC
	// port where a copy is longer than its original (lg.TxLoopbackCopyNs:
	// docs/linkguardian.md, the Tx buffer, part 4). Faster than it drains,
	// its queue grows between losses; the simulated switch reads that
	// queue without the port's own time, so a rehearsal shows none of it.
	copyNs, wireNs := lg.TxLoopbackCopyNs(fb), lg.ProtectedFrameNs(fb, l.LineRateBps)
	if max(float64(period.Nanoseconds()), wireNs) >= copyNs {
		return ""
	}
	pace := "at line rate"
	if float64(period.Nanoseconds()) > wireNs {
		pace = fmt.Sprintf("one every %v", period)
	}
	// The least pktgen_period_ns (at 100G, scaled by 100/speed) that paces
	// the originals no faster than the port drains their copies.
	keep := int64(math.Ceil(copyNs * float64(l.Gbps) / 100))
	for float64(Period(keep, l.Gbps).Nanoseconds()) < copyNs {
		keep++
	}
	return fmt.Sprintf("%s the sender's copies outrun its loopback port (a copy is %d B longer than its original, and the port adds a MAC's preamble and gap): on a switch its queue grows between losses and may drop copies, losses LinkGuardian then cannot repair, which the simulated switch does not show; pace the generator so that the port keeps up, as the authors' artifact did (%d ns at 100G, its 1514 B packets): --set pktgen_period_ns=%d", pace, lg.BufferedHeaderBytes, ArtifactPeriodNs, keep)
}
