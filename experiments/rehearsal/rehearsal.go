// Package rehearsal is the monitor-rehearsal recipe: the corruption
// monitor (experiments/monitor) runs against a link whose optics degrade
// while a line-rate flow crosses it, for a stated time of the switches'
// clock, and the recipe reports how long the monitor took to raise the
// alarm after the link's true loss crossed the threshold, its false
// alarms, and the frames lost before and after LinkGuardian protected the
// link.
package rehearsal

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"time"

	"testbed/dut/p4switch"
	"testbed/experiments/lgbench"
	"testbed/experiments/monitor"
	o "testbed/orchestrator"
	"testbed/results"
)

// Name is the recipe's name on the command line.
const Name = "monitor-rehearsal"

// Recipe implements orchestrator.Recipe.
type Recipe struct{}

// New returns the recipe.
func New() *Recipe { return &Recipe{} }

// Meta implements orchestrator.Recipe.
func (*Recipe) Meta() o.Meta {
	return o.Meta{
		Name:        Name,
		Version:     "1.0.0",
		Summary:     "the corruption monitor against a degrading link: detection delay, false alarms, frames lost before and after protection",
		Description: description,
		Params:      params(),
		// The monitor's detection delay, false alarms and frames lost before and after protection.
		Headlines: []string{"links.*.detection_delay_s", "links.*.false_alarms", "links.*.frames_lost_before_protection", "links.*.frames_lost_after_protection"},
	}
}

const description = `For each selected link (default: every link with a VOA whose ends are on two switches), the
sending switch's packet generator starts a line-rate flow of frame_size frames with
protection off, and the link's optics degrade along the switches' clock: the VOA rests at
clean_db, drifts up at drift_db_per_s from drift_start_s (at most drift_max_db above
clean_db), and returns to clean_db at clean_at_s, as a drifting attenuator or a dirty
connector that is cleaned would. On the simulated lab a scenario (testbed lab up
--scenario) adds its own impairments; the recipe does not know them and measures. Every
interval of the sender's clock the monitor polls both ports' counters through the switch
driver, exactly as testbed monitor does (a window of window frames, the 95% Wilson
interval, threshold, quiet), and its decisions are carried out through the driver
within the run: LinkGuardian (non-blocking mode: the monitor changes only the sending
switch, and ordered mode also needs the receiver's backpressure thresholds) with the
copies of Eq. 2 for target_loss,
more copies as the rate grows, off after the quiet period. The true loss is measured
apart from the monitor, from every frame: the receiver's FCS errors over the sender's
data frames in the trailing truth_window of the clock. Detection delay is the time from
the first poll at which the true loss exceeds threshold to the monitor's first alarm
(its state turning corrupting); an alarm while the true loss is below threshold/10 is a
false alarm. Frames lost before protection are the FCS errors while no protection was in
force; after protection, the flow's frames not delivered out of the sink port less
those. Writes data/timeseries.csv (one row a poll), data/decisions.csv (one row a
decision, with its rule and evidence) and a summary per link. Protection entries and the
VOA are put back as found at the end or on abort.`

func params() []o.ParamSpec {
	return append([]o.ParamSpec{
		{Name: "links", Type: o.TypeStrings, Default: []string{}, Description: "links to rehearse on (default: every link with a VOA between two switches)"},
		{Name: "duration_s", Type: o.TypeFloat, Unit: "s", Default: 12.0, Min: o.Bound(0.1), Max: o.Bound(3600), Description: "length of the rehearsal, the switches' clock"},
		{Name: "interval", Type: o.TypeDuration, Default: 100 * time.Millisecond, Min: o.Bound(1e-4), Max: o.Bound(60), Description: "the monitor's polling interval (the switches' clock)"},
		{Name: "clean_db", Type: o.TypeFloat, Unit: "dB", Default: 5.0, Min: o.Bound(0), Max: o.Bound(100), Description: "attenuation at rest"},
		{Name: "drift_start_s", Type: o.TypeFloat, Unit: "s", Default: 1.0, Min: o.Bound(0), Max: o.Bound(86400), Description: "when the VOA starts to drift"},
		{Name: "drift_db_per_s", Type: o.TypeFloat, Unit: "dB/s", Default: 0.5, Min: o.Bound(0), Max: o.Bound(100), Description: "drift rate of the VOA (0: no drift; the lab's own scenario only)"},
		{Name: "drift_max_db", Type: o.TypeFloat, Unit: "dB", Default: 3.0, Min: o.Bound(0), Max: o.Bound(100), Description: "most the drift adds to clean_db"},
		{Name: "clean_at_s", Type: o.TypeFloat, Unit: "s", Default: 8.0, Min: o.Bound(0), Max: o.Bound(86400), Description: "when the VOA returns to clean_db (the connector is cleaned)"},
		{Name: "threshold", Type: o.TypeFloat, Default: 1e-5, Min: o.Bound(1e-12), Max: o.Bound(0.5), Description: "the monitor's loss threshold (the interval's lower bound must exceed it)"},
		{Name: "window", Type: o.TypeInt, Unit: "frames", Default: int64(2_000_000), Min: o.Bound(1), Max: o.Bound(1e12), Description: "the monitor's frame-count window"},
		{Name: "quiet", Type: o.TypeDuration, Default: time.Second, Min: o.Bound(0), Max: o.Bound(3600), Description: "time below the threshold before a corrupting link is clean again"},
		{Name: "target_loss", Type: o.TypeFloat, Default: 1e-9, Min: o.Bound(1e-15), Max: o.Bound(0.1), Description: "effective loss LinkGuardian is configured for (Eq. 2)"},
		{Name: "truth_window", Type: o.TypeDuration, Default: time.Second, Min: o.Bound(1e-4), Max: o.Bound(3600), Description: "trailing time of the clock the true loss is counted over"},
		{Name: "frame_size", Type: o.TypeInt, Unit: "B", Default: int64(1518), Min: o.Bound(128), Max: o.Bound(9216), Description: "L2 frame size including FCS"},
		{Name: "dummy_pkt_max_count", Type: o.TypeInt, Default: int64(4), Min: o.Bound(0), Max: o.Bound(255), Description: "dummies the sender may send after each protected packet"},
	}, lgbench.Params()...)
}

// Tables are the declared tables.
func Tables() []results.Table {
	return []results.Table{{
		Name:        "timeseries",
		Title:       "The monitor's estimate against the link's true loss",
		Description: "One row per poll of the monitor.",
		Fields: []results.Field{
			{Name: "link", Type: "string", Description: "inventory link name"},
			{Name: "time_s", Type: "number", Unit: "s", Description: "sender's clock since the flow started"},
			{Name: "attenuation_db", Type: "number", Unit: "dB", Description: "the VOA's setting"},
			{Name: "true_loss", Type: "number", Description: "FCS errors over data frames sent, in the trailing truth_window"},
			{Name: "true_loss_zero_at", Type: "number", Description: "3 / frames of the truth window: the 95% bound drawn where no frame was lost"},
			{Name: "estimate", Type: "number", Description: "the monitor's loss rate over its window"},
			{Name: "estimate_low", Type: "number", Description: "lower bound of the 95% Wilson interval"},
			{Name: "estimate_high", Type: "number", Description: "upper bound of the 95% Wilson interval"},
			{Name: "window_frames", Type: "integer", Unit: "frames", Description: "frames in the monitor's window"},
			{Name: "state", Type: "string", Description: "unknown, clean or corrupting"},
			{Name: "copies", Type: "integer", Description: "LinkGuardian copies in force (0: off)"},
			{Name: "fcs_errors", Type: "integer", Unit: "frames", Description: "FCS errors at the receiver over the interval"},
			{Name: "delivered", Type: "integer", Unit: "frames", Description: "frames delivered out of the sink port over the interval"},
		},
		Figures: []results.Figure{
			{Name: "loss-estimate", Title: "The monitor's loss estimate and its 95% interval",
				Caption: "The band is the Wilson interval over the monitor's frame-count window; the alarm is raised when its lower bound passes the threshold.",
				Kind:    results.Line, X: "time_s", Y: "estimate", Low: "estimate_low", High: "estimate_high", Band: true, ZeroAt: "estimate_high",
				Series: []string{"link"}, LogY: true, XLabel: "Time (s)", YLabel: "Loss rate"},
			{Name: "true-loss", Title: "The link's true loss (every frame counted)",
				Caption: "FCS errors over data frames in the trailing truth window: what the monitor should find. Open markers: nothing lost, drawn at 3/frames.",
				Kind:    results.Step, X: "time_s", Y: "true_loss", ZeroAt: "true_loss_zero_at", Series: []string{"link"}, LogY: true,
				XLabel: "Time (s)", YLabel: "Loss rate"},
			{Name: "copies", Title: "LinkGuardian copies in force",
				Caption: "The copies of each lost frame LinkGuardian retransmits, in force at each poll (0: protection off).",
				Kind:    results.Step, X: "time_s", Y: "copies", Series: []string{"link"}, XLabel: "Time (s)", YLabel: "Copies"},
		},
	}, {
		Name:        "decisions",
		Title:       "The monitor's decisions",
		Description: "One row per decision, with its rule and evidence, as the monitor journals it.",
		Fields: []results.Field{
			{Name: "link", Type: "string", Description: "inventory link name"},
			{Name: "time_s", Type: "number", Unit: "s", Description: "sender's clock since the flow started"},
			{Name: "direction", Type: "string", Description: "a>b or b>a of the inventory link"},
			{Name: "action", Type: "string", Description: "what was decided"},
			{Name: "outcome", Type: "string", Description: "done, proposed, deferred or failed"},
			{Name: "copies", Type: "integer", Description: "copies decided"},
			{Name: "frames", Type: "integer", Unit: "frames", Description: "frames in the window"},
			{Name: "losses", Type: "integer", Unit: "frames", Description: "of them lost"},
			{Name: "low", Type: "number", Description: "interval's lower bound"},
			{Name: "high", Type: "number", Description: "interval's upper bound"},
			{Name: "rule", Type: "string", Description: "the rule that decided"},
		},
		Figures: []results.Figure{
			{Name: "actions", Title: "The monitor's actions",
				Caption: "Each marker is a decision carried out: an enable or a raise at the copies it set, a disable at the copies it switched off (the copies figure above drops to 0 there).",
				Kind:    results.Scatter, X: "time_s", Y: "copies", Series: []string{"link", "action"}, Legend: "{link}: {action}",
				Where:  []results.Cond{{Column: "outcome", Value: "done"}},
				XLabel: "Time (s)", YLabel: "Copies"},
		},
	}}
}

// LinkResult is one link's rehearsal.
type LinkResult struct {
	// TrueOnsetS is when the true loss first exceeded the threshold (-1:
	// never); AlarmS when the monitor first turned corrupting (-1: never).
	TrueOnsetS       float64 `json:"true_onset_s"`
	AlarmS           float64 `json:"alarm_s"`
	DetectionDelayS  float64 `json:"detection_delay_s"`
	Detected         bool    `json:"detected"`
	FalseAlarms      int     `json:"false_alarms"`
	ProtectedS       float64 `json:"protected_s"` // when LinkGuardian went on (-1: never)
	UnprotectedS     float64 `json:"unprotected_s"`
	MaxCopies        int     `json:"max_copies"`
	FramesSent       int64   `json:"frames_sent"`
	LostBefore       int64   `json:"frames_lost_before_protection"`
	LostAfter        int64   `json:"frames_lost_after_protection"`
	ErrorsProtected  int64   `json:"fcs_errors_while_protected"`
	EffectiveLossAft float64 `json:"effective_loss_while_protected"`
	Decisions        int     `json:"decisions"`
}

// Summary is summary.json.
type Summary struct {
	Partial   bool                  `json:"partial"`
	Threshold float64               `json:"threshold"`
	Links     map[string]LinkResult `json:"links"`
}

// Plan implements Recipe.
func (r *Recipe) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	links, binds, err := lgbench.Bind(pc, p.Strings("links"), p.String("sink_port"))
	if err != nil {
		return nil, err
	}
	dur, interval := p.Float("duration_s"), p.Duration("interval")
	if n := dur / interval.Seconds(); n > 1e5 {
		return nil, o.Inputf("interval %v over duration_s %g is %.0f polls (at most 10^5)", interval, dur, n)
	}
	if p.Float("drift_start_s") > p.Float("clean_at_s") {
		return nil, o.Inputf("drift_start_s %g after clean_at_s %g", p.Float("drift_start_s"), p.Float("clean_at_s"))
	}
	cfg := monitor.Config{Window: uint64(p.Int("window")), Threshold: p.Float("threshold"), Quiet: p.Duration("quiet")}
	if _, err := monitor.NewEstimator(cfg); err != nil {
		return nil, o.Inputf("%v", err)
	}
	if _, err := monitor.NewPolicy(monitor.PolicyConfig{TargetLoss: p.Float("target_loss")}, cfg.Threshold, nil); err != nil {
		return nil, o.Inputf("%v", err)
	}
	for _, l := range links {
		top := p.Float("clean_db") + math.Min(p.Float("drift_max_db"), p.Float("drift_db_per_s")*(p.Float("clean_at_s")-p.Float("drift_start_s")))
		for _, db := range []float64{p.Float("clean_db"), top} {
			if err := pc.CheckAttenuation(l.VOA, l.VOAChannel, db); err != nil {
				return nil, o.Inputf("%v", err)
			}
		}
	}
	var mu sync.Mutex
	res := map[string]LinkResult{}
	plan := &o.Plan{Bindings: binds, Tables: Tables(),
		Summary: func(partial bool) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			return Summary{Partial: partial, Threshold: cfg.Threshold, Links: res}, nil
		}}
	for _, l := range links {
		var bench *lgbench.Bench
		devs := []string{l.Sender, l.Receiver, l.VOA}
		plan.Steps = append(plan.Steps, &o.Step{
			Name: fmt.Sprintf("%s: switches", l.Link.Name), Action: "prepare-switches", Devices: devs[:2],
			Run: func(ctx context.Context, rc *o.RunContext) error {
				var err error
				bench, err = lgbench.Open(ctx, rc, l, lgbench.OpenOptions(p))
				return err
			},
		})
		plan.Steps = append(plan.Steps, &o.Step{
			Name: fmt.Sprintf("%s: rehearsal", l.Link.Name), Action: "rehearse", Devices: devs,
			Settings: []o.Setting{
				{Device: l.Sender, Name: "pktgen", Value: fmt.Sprintf("%g s of %d B frames at line rate out of port %d", dur, p.Int("frame_size"), l.TxPort)},
				{Device: l.VOA, Name: fmt.Sprintf("ch%d.attenuation", l.VOAChannel), Value: fmt.Sprintf("%g dB, drifting %g dB/s from %g s, back at %g s",
					p.Float("clean_db"), p.Float("drift_db_per_s"), p.Float("drift_start_s"), p.Float("clean_at_s")), Unit: "dB"},
				{Device: l.Sender, Name: "protection", Value: "off, then as the monitor decides"},
			},
			Run: func(ctx context.Context, rc *o.RunContext) error {
				if bench == nil {
					return o.Skip("the switches of %s were not prepared", l.Link.Name)
				}
				rh := &rehearsal{rc: rc, b: bench, l: l, p: p, cfg: cfg}
				lr, err := rh.run(ctx)
				mu.Lock()
				res[l.Link.Name] = lr
				mu.Unlock()
				if err != nil {
					return err
				}
				rc.Event(results.Event{Type: "measurement", Device: l.Receiver, Message: fmt.Sprintf("%s: true loss over %g at %.2f s, alarm at %.2f s (delay %.2f s), %d false alarms; frames lost %d before protection, %d after",
					l.Link.Name, cfg.Threshold, lr.TrueOnsetS, lr.AlarmS, lr.DetectionDelayS, lr.FalseAlarms, lr.LostBefore, lr.LostAfter),
					Fields: map[string]any{"link": l.Link.Name, "detection_delay_s": lr.DetectionDelayS, "false_alarms": lr.FalseAlarms,
						"frames_lost_before_protection": lr.LostBefore, "frames_lost_after_protection": lr.LostAfter}})
				return nil
			},
		})
	}
	return plan, nil
}

type rehearsal struct {
	rc  *o.RunContext
	b   *lgbench.Bench
	l   lgbench.Link
	p   *o.Params
	cfg monitor.Config
}

func secs(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// attenuation is the VOA's setting at t of the clock.
func (r *rehearsal) attenuation(t time.Duration) float64 {
	p := r.p
	clean := p.Float("clean_db")
	from, to := secs(p.Float("drift_start_s")), secs(p.Float("clean_at_s"))
	if t < from || t >= to {
		return clean
	}
	d := math.Min(p.Float("drift_max_db"), p.Float("drift_db_per_s")*(t-from).Seconds())
	return clean + math.Round(d*100)/100 // the VOA's 0.01 dB steps
}

type truthSample struct {
	at        time.Duration
	data, fcs int64
}

func (r *rehearsal) run(ctx context.Context) (LinkResult, error) {
	lr := LinkResult{TrueOnsetS: -1, AlarmS: -1, ProtectedS: -1, DetectionDelayS: -1}
	b, l, p := r.b, r.l, r.p
	if err := b.Protect(ctx, lgbench.Protection{Mode: lgbench.Off}); err != nil {
		return lr, err
	}
	lp := &rehearsalLoop{r: r, lr: &lr, db: r.attenuation(0), truthWin: p.Duration("truth_window"), interval: p.Duration("interval")}
	if err := r.rc.SetAttenuation(ctx, l.VOA, l.VOAChannel, lp.db); err != nil {
		return lr, err
	}
	var err error
	if lp.m, lp.actor, err = r.monitor(); err != nil {
		return lr, err
	}
	if lp.ts, err = r.rc.Table("timeseries"); err != nil {
		return lr, err
	}
	if lp.dt, err = r.rc.Table("decisions"); err != nil {
		return lr, err
	}
	fb := int(p.Int("frame_size"))
	dur := secs(p.Float("duration_s"))
	frames := int64(math.Ceil((dur + time.Second).Seconds() / b.Duration(1, fb).Seconds()))
	fl, err := b.StartFlow(ctx, lgbench.Stress{Frames: frames, FrameBytes: fb, AppID: 1, PktgenPort: int(p.Int("pktgen_port"))})
	if err != nil {
		return lr, err
	}
	defer fl.Close(ctx)
	t0 := fl.Start.Time
	lp.prev = fl.Start
	lp.truth = []truthSample{{at: 0, data: fl.Start.TxData, fcs: fl.Start.RxFCS}}
	for k := int64(1); ; k++ {
		at := time.Duration(k) * lp.interval
		if at > dur {
			break
		}
		s, err := fl.SampleAt(ctx, t0+at)
		if err != nil {
			return lr, err
		}
		if err := lp.tick(ctx, s.Time-t0, s); err != nil {
			return lr, err
		}
	}
	if lp.protected {
		lr.ErrorsProtected += lp.prev.RxFCS - lp.protectedAt.RxFCS
	}
	err = r.finish(ctx, fl, &lr)
	return lr, err
}

// monitor is the monitor over this link's protected direction, reading
// the run's switch drivers, and its actor, acting within the run.
func (r *rehearsal) monitor() (*monitor.Monitor, *monitor.Actor, error) {
	b, l, p := r.b, r.l, r.p
	dir := monitor.Direction{Dir: monitor.Dir{Link: l.Link.Name, Direction: "a>b", Sender: l.Sender}, Receiver: l.Receiver,
		TxPort: l.TxPort, RxPort: l.RxPort, TxName: l.Link.A.Port, RxName: l.Link.B.Port, Transceiver: l.Link.Transceiver, FEC: l.FEC}
	pol, err := monitor.NewPolicy(monitor.PolicyConfig{TargetLoss: p.Float("target_loss")}, r.cfg.Threshold, nil)
	if err != nil {
		return nil, nil, err
	}
	readers := map[string]monitor.CounterReader{l.Sender: b.Tx, l.Receiver: b.Rx}
	m, err := monitor.NewMonitor([]monitor.Direction{dir}, readers, r.cfg, pol, 10*time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, nil, err
	}
	actor := &monitor.Actor{Run: r.rc, Switches: map[string]monitor.SwitchActor{l.Sender: b.Tx, l.Receiver: b.Rx},
		Dummies: int(p.Int("dummy_pkt_max_count"))}
	return m, actor, nil
}

// rehearsalLoop is the rehearsal's poll loop: the monitor, the truth
// window and whether the link is protected, as of the last sample.
type rehearsalLoop struct {
	r           *rehearsal
	lr          *LinkResult
	m           *monitor.Monitor
	actor       *monitor.Actor
	ts, dt      *results.TableWriter
	db          float64
	truthWin    time.Duration
	interval    time.Duration
	truth       []truthSample
	prev        lgbench.Snapshot
	protected   bool
	protectedAt lgbench.Snapshot
}

// trueLoss is the loss over the truth window ending now, and the loss
// three frames in it would be.
func (lp *rehearsalLoop) trueLoss(now time.Duration, s lgbench.Sample) (float64, float64) {
	lp.truth = append(lp.truth, truthSample{at: now, data: s.TxData, fcs: s.RxFCS})
	i := 0
	for i < len(lp.truth)-1 && now-lp.truth[i+1].at >= lp.truthWin {
		i++
	}
	lp.truth = lp.truth[i:]
	w := lp.truth[len(lp.truth)-1]
	tData, tFCS := w.data-lp.truth[0].data, w.fcs-lp.truth[0].fcs
	if tData == 0 {
		return 0, 0
	}
	return float64(tFCS) / float64(tData), 3 / float64(tData)
}

// tick is one poll at now (s the flow's sample): the monitor polls and
// acts, the result and the tables take note, the VOA drifts on.
func (lp *rehearsalLoop) tick(ctx context.Context, now time.Duration, s lgbench.Sample) error {
	r, lr, l := lp.r, lp.lr, lp.r.l
	trueLoss, zeroAt := lp.trueLoss(now, s)
	if lr.TrueOnsetS < 0 && trueLoss > r.cfg.Threshold {
		lr.TrueOnsetS = now.Seconds()
	}
	was := lp.m.Status(0)
	ds, _ := lp.m.Poll(ctx, time.Unix(0, 0).UTC().Add(now))
	lp.m.Carry(ctx, lp.actor, ds)
	st := lp.m.Status(0)
	if st.State == monitor.Corrupting && was.State != monitor.Corrupting {
		if lr.AlarmS < 0 {
			lr.AlarmS = now.Seconds()
		}
		if trueLoss < r.cfg.Threshold/10 {
			lr.FalseAlarms++
		}
	}
	if err := lp.decisions(now, ds); err != nil {
		return err
	}
	copies := st.Copies
	lr.MaxCopies = max(lr.MaxCopies, copies)
	if !lp.protected && copies > 0 {
		lp.protected, lp.protectedAt = true, s.Snapshot
		lr.ProtectedS = now.Seconds()
		lr.LostBefore += s.RxFCS - lp.prev.RxFCS // errors of the interval the protection ended
	} else if !lp.protected {
		lr.LostBefore += s.RxFCS - lp.prev.RxFCS
	} else if copies == 0 {
		lp.protected = false
		lr.UnprotectedS = now.Seconds()
		lr.ErrorsProtected += s.RxFCS - lp.protectedAt.RxFCS
	}
	if err := lp.ts.Write(l.Link.Name, now.Seconds(), lp.db, trueLoss, zeroAt, st.Rate, st.Low, st.High, st.Frames, st.State.String(), copies,
		s.RxFCS-lp.prev.RxFCS, s.Delivered-lp.prev.Delivered); err != nil {
		return err
	}
	lp.prev = s.Snapshot
	if next := r.attenuation(now + lp.interval); next != lp.db {
		lp.db = next
		if err := r.rc.SetAttenuation(ctx, l.VOA, l.VOAChannel, lp.db); err != nil {
			return err
		}
	}
	return nil
}

// decisions writes the monitor's decisions at now to the table and the
// events.
func (lp *rehearsalLoop) decisions(now time.Duration, ds []monitor.Decision) error {
	for _, d := range ds {
		lp.lr.Decisions++
		if err := lp.dt.Write(lp.r.l.Link.Name, now.Seconds(), d.Direction, string(d.Action), d.Outcome, d.Copies, d.Evidence.Frames, d.Evidence.Losses,
			d.Evidence.Low, d.Evidence.High, d.Rule); err != nil {
			return err
		}
		lp.r.rc.Event(results.Event{Type: "decision", Device: d.Sender, Message: fmt.Sprintf("%s %s: %s (%s): %s", d.Link, d.Direction, d.Action, d.Outcome, d.Rule),
			Fields: map[string]any{"time_s": now.Seconds(), "action": string(d.Action), "outcome": d.Outcome, "copies": d.Copies,
				"frames": d.Evidence.Frames, "losses": d.Evidence.Losses, "low": d.Evidence.Low, "high": d.Evidence.High}})
	}
	return nil
}

// finish stops the flow and counts what it lost before and under
// protection, and the detection delay.
func (r *rehearsal) finish(ctx context.Context, fl *lgbench.Flow, lr *LinkResult) error {
	b, l := r.b, r.l
	sent, err := fl.Stop(ctx)
	if err != nil {
		return err
	}
	tnow, err := b.Tx.Clock(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", l.Sender, err)
	}
	end, err := fl.SampleAt(ctx, tnow+time.Millisecond)
	if err != nil {
		return err
	}
	lr.FramesSent = sent
	lost := sent - (end.Delivered - fl.Start.Delivered)
	if lost < 0 {
		return fmt.Errorf("%s: %d frames delivered of %d sent: the sink port counts other traffic", l.Receiver, end.Delivered-fl.Start.Delivered, sent)
	}
	// Frames the flow lost while unprotected were every FCS error then;
	// the rest were lost under protection.
	lr.LostAfter = max(0, lost-lr.LostBefore)
	if lr.ErrorsProtected > 0 {
		lr.EffectiveLossAft = float64(lr.LostAfter) / float64(lr.ErrorsProtected)
	}
	if lr.AlarmS >= 0 && lr.TrueOnsetS >= 0 {
		lr.Detected = true
		lr.DetectionDelayS = lr.AlarmS - lr.TrueOnsetS
	}
	return nil
}

// Compile-time check: the switch kind is what the monitor reads and acts
// through.
var (
	_ monitor.CounterReader = p4switch.Switch(nil)
	_ monitor.SwitchActor   = p4switch.Switch(nil)
)
