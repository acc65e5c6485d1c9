// Package fct is the flow-completion-time recipe (LinkGuardian §4.3,
// Fig. 10): small RPCs (143 B by default) from a sender host to a receiver
// host across a corrupting LinkGuardian link, with the link lossless,
// lossy and unprotected, and lossy under LinkGuardian and LinkGuardianNB.
// The hosts' hostagent times every trial; the recipe keeps every sample,
// and reports the percentiles of each transport and mode and how each
// mode's p99.9 compares with the lossless one.
package fct

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"testbed/dut/host"
	"testbed/experiments/lgbench"
	"testbed/hostagent"
	o "testbed/orchestrator"
	lg "testbed/p4/linkguardian"
	"testbed/results"
)

// Name is the recipe's name on the command line.
const Name = "fct"

// Recipe implements orchestrator.Recipe.
type Recipe struct{}

// New returns the recipe.
func New() *Recipe { return &Recipe{} }

// Meta implements orchestrator.Recipe.
func (*Recipe) Meta() o.Meta {
	return o.Meta{
		Name:        Name,
		Version:     "2.0.0",
		Summary:     "tail flow completion times of small RPCs across a lossy link, with and without LinkGuardian (LinkGuardian Fig. 10)",
		Description: description,
		Params:      params(),
		// Fig. 10: the 99.9th percentile FCT per transport and mode.
		Headlines: []string{"transports.*.*.p99_9_us", "transports.*.*.p99_9_vs_lossless"},
		Topology:  topology(),
	}
}

const description = `A sender host and a receiver host hang off the two switches of a LinkGuardian link (a
fibre with a VOA from the sending to the receiving switch; by default the only such
link with a host on each end, preferring links as fast as the hosts' cables). The
switches run the LinkGuardian programs; both hosts run the hostagent, get the route
towards each other's subnet set to rto_min (1 ms, as in the paper), the congestion
control set (dctcp) and, with paper_sysctls, the LinkGuardian artifact's settings
(tcp_no_metrics_save=1, tcp_timestamps=0, tcp_sack=1, tcp_ecn=1 with dctcp,
tcp_recovery=1, tcp_early_retrans=3); everything is put back at the end or on abort.

loss_source=program (the default, as the artifact's evaluation mode): the sender
program's random drop (table emulate_random_pkt_drop) holds floor(loss_rate * 2^20)
of its 2^20 random numbers, so every packet towards the link, whatever its size, is
lost with exactly that / 2^20; the VOA stays at rest; the table is filled for the lossy
modes, emptied for lossless, and cleared at the end. loss_source=voa: the loss rate is
set through the VOA by measuring, as loss-sweep does, with frames of the size of the
flow's data frames (calib_frame_size: the flow's payload up to an MSS plus the headers
and FCS: 58 B without timestamps, 70 B with), so that loss_rate is the loss of the
flow's own packets; the measured rate must lie in [loss_rate, loss_rate *
calib_tolerance].

The default loss_rate, 1.25e-3, is above the 1e-3 the paper names on purpose: the
p99.9 of n trials is a timeout only when more than n/1000 trials lose a frame. At a
per-trial loss of exactly 1e-3 that is a coin flip; at 1.25e-3 and 300,000 trials the
p99.9 misses the timeout tail with probability 3.5e-5 (P[Binomial(300000, 1.25e-3) <=
300]). The summary's tails give this for the run.

Each mode runs the trials of each transport, split into blocks; block after block the
modes go round in a rotating order, so that a drift of the lab does not bias one mode.
lossless: the VOA at rest (its safe_state, else the value found), protection off.
off: the VOA at the calibrated attenuation, protection off. linkguardian and
linkguardian-nb: the calibrated attenuation with LinkGuardian in ordered (with
backpressure unless backpressure=false) or non-blocking mode, the copies by Eq. 2 for
target_loss and the measured loss.

tcp: the hostagent's FCT client on the sender, closed loop. connection=per-flow (the
default, as the artifact runs iperf -n 143 -N -Z dctcp once per flow): a new
TCP_NODELAY connection per trial; where the hosts capture their sockets' segments the
FCT is the artifact's fct1, from the first data segment to the first ACK covering all
bytes, so the handshake is not in it (summary timing "fct1"), else the application's
request-to-answer time ("app"). connection=persistent: one connection, a request of
flow_size bytes answered by response_size bytes, timed from just before the write to the
last byte read. Every trial is kept, with the data segments it sent again. rdma (where both hosts have perftest's
ib_write_lat): ib_write_lat with flow_size bytes and -U, so that it prints every
iteration's latency (the time between two successive posts, halved: a WRITE each way);
the percentiles are taken over every block's samples pooled; on hosts without it the
rdma blocks are skipped and the summary says why.

Writes data/fct_samples.csv.gz (one row per TCP trial, gzip CSV), data/fct_percentiles.csv (per transport, mode and percentile,
plotted on log axes against the tail fraction 1 - percentile), and a summary per
transport and mode with p50, p99, p99.9, p99.99 and each mode's p99.9 over the lossless
p99.9; per tcp mode, its tail: the trials affected by a loss (those that sent data
again) with their 95% Wilson interval, the affected trials' p50 and p99 (and p50 over
the lossless p99.9), the p99.9's 95% order-statistic interval, and for off the
probability that the p99.9 lands in the timeout tail (p_tail, p_miss) given the link's
loss per trial.`

// Modes of the recipe: the link's protection modes and the lossless baseline.
const Lossless = "lossless"

// Transports.
const (
	TCP  = "tcp"
	RDMA = "rdma"
)

func params() []o.ParamSpec {
	return []o.ParamSpec{
		{Name: "flow_size", Type: o.TypeInt, Unit: "B", Default: int64(143), Min: o.Bound(8), Max: o.Bound(64 << 20), Description: "bytes of each flow: the RPC request (tcp), the WRITE (rdma)"},
		{Name: "response_size", Type: o.TypeInt, Unit: "B", Default: int64(1), Min: o.Bound(1), Max: o.Bound(64 << 20), Description: "bytes of the answer to each tcp request"},
		{Name: "trials", Type: o.TypeInt, Default: int64(300_000), Min: o.Bound(1), Max: o.Bound(10_000_000), Description: "trials per transport and mode"},
		{Name: "blocks", Type: o.TypeInt, Default: int64(10), Min: o.Bound(1), Max: o.Bound(1000), Description: "blocks the trials of each mode are split into; modes take turns block by block"},
		{Name: "warmup", Type: o.TypeInt, Default: int64(100), Min: o.Bound(0), Max: o.Bound(1_000_000), Description: "trials run and not recorded before each block"},
		{Name: "transports", Type: o.TypeStrings, Default: []string{TCP, RDMA}, Enum: []string{TCP, RDMA}, Description: "tcp, rdma (rdma where the hosts have ib_write_lat)"},
		{Name: "modes", Type: o.TypeStrings, Default: []string{Lossless, "off", "linkguardian", "linkguardian-nb"}, Enum: []string{Lossless, "off", "linkguardian", "linkguardian-nb"}, Description: "lossless, off, linkguardian, linkguardian-nb"},
		{Name: "loss_rate", Type: o.TypeFloat, Default: 1.25e-3, Min: o.Bound(1e-7), Max: o.Bound(0.1), Description: "loss rate of the flow's data frames: 1.25e-3 so that with 300,000 trials the p99.9 misses the timeout tail with probability 3.5e-5 (README, FCT)"},
		{Name: "loss_source", Type: o.TypeString, Default: LossProgram, Enum: []string{LossProgram, LossVOA}, Description: "program: the sender program's random drop at exactly floor(loss_rate*2^20)/2^20 for every frame size (the artifact's evaluation mode); voa: the VOA, calibrated by measuring with the flow's own frame size"},
		{Name: "connection", Type: o.TypeString, Default: hostagent.ConnPerFlow, Enum: []string{hostagent.ConnPerFlow, hostagent.ConnPersistent}, Description: "per-flow: a new TCP connection per trial, timed by fct1 where the hosts capture (the artifact: iperf -n per flow); persistent: one connection, request and answer"},
		{Name: "paper_sysctls", Type: o.TypeBool, Default: true, Description: "set the artifact's host settings on both hosts (tcp_no_metrics_save=1, tcp_timestamps=0, tcp_sack=1, tcp_ecn=1 for dctcp else 0, tcp_recovery=1, tcp_early_retrans=3), undone at the end"},
		{Name: "target_loss", Type: o.TypeFloat, Default: 1e-8, Min: o.Bound(1e-15), Max: o.Bound(0.1), Description: "effective loss rate LinkGuardian is configured for (Eq. 2)"},
		{Name: "sender", Type: o.TypeString, Default: "", Description: "the host that sends the flows (default: the one on the link's sending switch)"},
		{Name: "receiver", Type: o.TypeString, Default: "", Description: "the host that answers them (default: the one on the link's receiving switch)"},
		{Name: "link", Type: o.TypeString, Default: "", Description: "the LinkGuardian link between their switches (default: the only one that fits)"},
		{Name: "rto_min", Type: o.TypeDuration, Default: time.Millisecond, Min: o.Bound(0), Max: o.Bound(60), Description: "rto_min on each host's route to the other (0: leave the routes alone)"},
		{Name: "route", Type: o.TypeString, Default: "", Description: "route selector for rto_min (default: the other host's subnet)"},
		{Name: "congestion_control", Type: o.TypeString, Default: "dctcp", Description: "net.ipv4.tcp_congestion_control on both hosts (empty: leave it)"},
		{Name: "trial_timeout", Type: o.TypeDuration, Default: 10 * time.Second, Min: o.Bound(0.001), Max: o.Bound(3600), Description: "a trial without an answer after this fails the block"},
		{Name: "keep_samples", Type: o.TypeBool, Default: true, Description: "write every tcp trial to data/fct_samples.csv.gz"},
		{Name: "rdma_device", Type: o.TypeString, Default: "", Description: "ib_write_lat -d (default: the tool's choice)"},
		{Name: "rdma_gid_index", Type: o.TypeInt, Default: int64(-1), Min: o.Bound(-1), Max: o.Bound(65535), Description: "ib_write_lat -x (RoCE GID index; -1: the tool's default)"},
		{Name: "rdma_port", Type: o.TypeInt, Default: int64(18515), Min: o.Bound(1), Max: o.Bound(65535), Description: "ib_write_lat -p: the TCP port its client and server meet on"},
		{Name: "backpressure", Type: o.TypeBool, Default: true, Description: "pause/resume backpressure in ordered mode"},
		{Name: "dummy_pkt_max_count", Type: o.TypeInt, Default: int64(4), Min: o.Bound(0), Max: o.Bound(255), Description: "dummies after each protected packet (tail-loss detection)"},
		{Name: "calib_frame_size", Type: o.TypeInt, Unit: "B", Default: int64(0), Min: o.Bound(0), Max: o.Bound(9216), Description: "frame size the loss is measured with (0: the flow's data frame)"},
		{Name: "calib_tolerance", Type: o.TypeFloat, Default: 1.5, Min: o.Bound(1.05), Max: o.Bound(10), Description: "accept a measured loss within [loss_rate, loss_rate*calib_tolerance]"},
		{Name: "calib_losses", Type: o.TypeInt, Default: int64(400), Min: o.Bound(10), Max: o.Bound(1e7), Description: "losses the accepting calibration measurement expects"},
		{Name: "calib_max_frames", Type: o.TypeInt, Unit: "frames", Default: int64(100_000_000), Min: o.Bound(1000), Max: o.Bound(1e15), Description: "cap on frames per calibration measurement"},
		{Name: "start_db", Type: o.TypeFloat, Unit: "dB", Default: 0.0, Min: o.Bound(0), Max: o.Bound(100), Description: "attenuation the calibration scan starts at"},
		{Name: "scan_step_db", Type: o.TypeFloat, Unit: "dB", Default: 0.5, Min: o.Bound(0.01), Max: o.Bound(100), Description: "step of the upward scan"},
		{Name: "max_db", Type: o.TypeFloat, Unit: "dB", Default: 25.0, Min: o.Bound(0), Max: o.Bound(100), Description: "highest attenuation the scan may set"},
		{Name: "sink_port", Type: o.TypeString, Default: "sink", Description: "the receiving switch's port (inventory name) the calibration's frames leave by"},
		{Name: "pktgen_port", Type: o.TypeInt, Default: int64(68), Min: o.Bound(0), Max: o.Bound(511), Description: "the packet generator's dev port (68 on Tofino 1 pipe 0)"},
		{Name: "replace_program", Type: o.TypeBool, Default: false, Description: "restart a switch daemon that runs another P4 program"},
		{Name: "port_up_timeout", Type: o.TypeDuration, Default: 30 * time.Second, Min: o.Bound(0.001), Max: o.Bound(3600), Description: "how long a port may take to come up"},
	}
}

// dataFrameBytes is the wire size (FCS included) of a full data frame of
// a flow of n bytes: one MSS (1448 B with timestamps, 1460 without) at
// most, plus TCP (20, + 12 of timestamp option), IPv4 (20), Ethernet (14)
// and FCS (4).
func dataFrameBytes(n int, timestamps bool) int {
	if !timestamps {
		return max(64, min(n, 1460)+58)
	}
	return max(64, min(n, 1448)+70)
}

// dataFrames is how many data segments a flow of n bytes takes.
func dataFrames(n int, timestamps bool) int {
	mss := 1448
	if !timestamps {
		mss = 1460
	}
	return (n + mss - 1) / mss
}

// Loss sources.
const (
	LossProgram = "program"
	LossVOA     = "voa"
)

// paperSysctls are the LinkGuardian artifact's host settings for the FCT
// experiment (switch_impl/expt_scripts/fct_expt_tcp/run_expt.sh), besides
// the congestion control and the route's rto_min.
func paperSysctls(cc string) [][2]string {
	ecn := "0"
	if cc == "dctcp" {
		ecn = "1"
	}
	return [][2]string{
		{"net.ipv4.tcp_no_metrics_save", "1"},
		{"net.ipv4.tcp_timestamps", "0"},
		{"net.ipv4.tcp_sack", "1"},
		{"net.ipv4.tcp_ecn", ecn},
		{"net.ipv4.tcp_recovery", "1"},
		{"net.ipv4.tcp_early_retrans", "3"},
	}
}

// Tables are the declared data tables.
func Tables() []results.Table {
	return []results.Table{
		{
			Name:        "fct_samples",
			Compress:    true,
			Title:       "Every trial",
			Description: "One row per recorded trial, in the order the blocks ran. tcp: fct_ns is fct1 (first data segment to the first ACK covering all bytes, at the sender) when the summary's timing is fct1, else from just before the request's write to the last byte of the answer read. rdma: ib_write_lat's own sample (-U), the time between two successive posts halved (a WRITE each way).",
			Fields: []results.Field{
				{Name: "transport", Type: "string", Description: "tcp or rdma"},
				{Name: "mode", Type: "string", Description: "lossless, off, linkguardian or linkguardian-nb"},
				{Name: "block", Type: "integer", Description: "block number, from 1"},
				{Name: "trial", Type: "integer", Description: "trial within the block, from 0"},
				{Name: "start_ns", Type: "integer", Unit: "ns", Description: "start of the trial after the block's first"},
				{Name: "fct_ns", Type: "integer", Unit: "ns", Description: "flow completion time"},
				{Name: "retrans", Type: "integer", Description: "segments the sender retransmitted during the trial: data segments where the hosts capture (timing fct1), else TCP_INFO's count (-1: unknown; always for rdma)"},
			},
			// LinkGuardian Fig. 10a: the top 1% of FCTs as a CCDF per mode.
			Figures: []results.Figure{{
				Name: "fct-top1pct", Title: "Top 1% FCTs for 143 B flows",
				Caption: "As LinkGuardian Fig. 10 (a: DCTCP, b: RDMA WRITE): the fraction of trials at least as slow as x, from every recorded trial.",
				Kind:    results.CCDF, X: "fct_ns", XScale: 1e-3, Tail: 0.01, Series: []string{"transport", "mode"}, Legend: "{mode} ({transport})",
				LogX: true, LogY: true, XLabel: "Flow completion time (µs)", YLabel: "Fraction of trials (CCDF)",
			}},
		},
		{
			Name:        "fct_percentiles",
			Title:       "FCT percentiles per transport and mode",
			Description: "Exact nearest-rank percentiles over every trial of a transport and mode, the blocks' trials pooled (rdma: ib_write_lat's samples). tail is 1 - percentile/100.",
			Fields: []results.Field{
				{Name: "transport", Type: "string", Description: "tcp or rdma"},
				{Name: "mode", Type: "string", Description: "lossless, off, linkguardian or linkguardian-nb"},
				{Name: "flow_size", Type: "integer", Unit: "B", Description: "bytes per flow"},
				{Name: "percentile", Type: "number", Unit: "%", Description: "50, 90, 99, 99.9, 99.99 or 100 (the maximum)"},
				{Name: "fct_us", Type: "number", Unit: "us", Description: "flow completion time at that percentile"},
				{Name: "tail", Type: "number", Unit: "1", Description: "1 - percentile/100: the fraction of trials slower"},
				{Name: "series", Type: "string", Description: "transport/mode, for the plot"},
			},
			Figures: []results.Figure{{
				Name: "fct-percentiles", Title: "FCT percentiles per transport and mode",
				Caption: "The percentiles of the table as a tail plot: the fraction of trials slower than each, over every trial pooled.",
				Kind:    results.Scatter, X: "fct_us", Y: "tail", Series: []string{"transport", "mode"}, Legend: "{mode} ({transport})",
				LogX: true, LogY: true, XLabel: "Flow completion time (µs)", YLabel: "Fraction of trials slower",
			}},
		},
	}
}

// ModeSummary is one transport and mode in summary.json.
type ModeSummary struct {
	Trials  int     `json:"trials"`
	P50US   float64 `json:"p50_us"`
	P99US   float64 `json:"p99_us"`
	P999US  float64 `json:"p99_9_us"`
	P9999US float64 `json:"p99_99_us,omitempty"`
	MaxUS   float64 `json:"max_us"`
	// P999VsLossless is this mode's p99.9 over the lossless p99.9.
	P999VsLossless float64 `json:"p99_9_vs_lossless,omitempty"`
	// RetransTrials are the trials that saw a retransmission (tcp).
	RetransTrials int `json:"retrans_trials"`
	// SwitchDrops (tcp) are the frames the sender switch's emulated drop
	// took during this mode's blocks, read from its counter register
	// (lg.RegEmulatedDrops) before and after each block: the losses
	// counted at the switch, as the artifact counted them. With the link
	// protecting, drops > 0 while RetransTrials is 0 are losses it repaired.
	SwitchDrops int64 `json:"switch_drops"`
}

// Summary is summary.json.
type Summary struct {
	Partial           bool    `json:"partial"`
	FlowSize          int     `json:"flow_size"`
	Sender            string  `json:"sender"`
	Receiver          string  `json:"receiver"`
	Link              string  `json:"link"`
	LossRate          float64 `json:"loss_rate"`
	ActualLoss        float64 `json:"actual_loss"`
	AttenuationDB     float64 `json:"attenuation_db"`
	RestAttenuationDB float64 `json:"rest_attenuation_db"`
	RetxCopies        int     `json:"retx_copies"`
	RTOMinMS          float64 `json:"rto_min_ms"`
	LossSource        string  `json:"loss_source"`
	Connection        string  `json:"connection"`
	// Timing is what the tcp FCTs measure: fct1 (per-flow, captured) or
	// app (request to answer, by the application).
	Timing string `json:"timing,omitempty"`
	// Transports holds, per transport and mode, the distribution.
	Transports map[string]map[string]ModeSummary `json:"transports"`
	// Tails holds, per tcp mode, what makes its tail honest (tail.go).
	Tails map[string]TailSummary `json:"tails,omitempty"`
	// Unavailable says why a transport asked for did not run.
	Unavailable map[string]string `json:"unavailable,omitempty"`
}

type state struct {
	mu          sync.Mutex
	tcp         map[string][]int64 // mode -> FCTs (ns)
	affected    map[string][]bool  // mode -> whether each trial retransmitted
	retrans     map[string]int
	drops       map[string]int64 // mode -> the sender switch's emulated drops over its tcp blocks
	timing      string
	rdma        map[string][]int64 // mode -> ib_write_lat's samples (ns), every block's pooled
	unavailable map[string]string
	cal         lgbench.Calibration
	rest        float64
	copies      int
}

// Validate implements orchestrator.Validator: the checks across the
// parameters (choices are their specs' Enum), made before Plan.
func (r *Recipe) Validate(p *o.Params) error {
	for _, name := range []string{"modes", "transports"} {
		vs := p.Strings(name)
		if len(vs) == 0 {
			return o.Inputf("%s: expected at least one", name)
		}
		for i, v := range vs {
			if slices.Contains(vs[:i], v) {
				return o.Inputf("%s: %s is listed twice", name, v)
			}
		}
	}
	trials, blocks := p.Int("trials"), p.Int("blocks")
	if blocks > trials {
		return o.Inputf("blocks %d: more blocks than trials (%d)", blocks, trials)
	}
	loss, target, tol := p.Float("loss_rate"), p.Float("target_loss"), p.Float("calib_tolerance")
	if loss <= target {
		return o.Inputf("loss_rate %g is not above target_loss %g: there is nothing to protect against", loss, target)
	}
	if loss*tol >= 0.5 {
		return o.Inputf("loss_rate %g * calib_tolerance %g: the calibration window reaches 0.5", loss, tol)
	}
	if p.String("loss_source") == LossProgram && lgbench.EmulatedLoss(loss) == 0 {
		return o.Inputf("loss_rate %g: below the program's resolution (2^-%d)", loss, lg.DropRandomBits)
	}
	if rtoMin := p.Duration("rto_min"); rtoMin != 0 && (rtoMin < time.Millisecond || rtoMin%time.Millisecond != 0) {
		return o.Inputf("rto_min %v: a whole number of milliseconds (or 0 to leave the routes alone)", rtoMin)
	}
	return nil
}

// Plan implements Recipe.
func (r *Recipe) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	// The lab must have the recipe's topology at all (the binder's
	// explanation when it does not); which link and hosts of it the run
	// takes, and the named ones' checks, are bind's below.
	_, terr := topology().Bind(pc.Lab)
	b, binds, err := bind(pc, p.String("sender"), p.String("receiver"), p.String("link"), p.String("sink_port"))
	if terr != nil {
		if err != nil {
			return nil, &o.InputError{Msg: terr.Error() + "\n" + err.Error()}
		}
		return nil, terr
	}
	if err != nil {
		return nil, err
	}
	fr, err := newFCTRun(pc, b)
	if err != nil {
		return nil, err
	}
	l, st := b.Link, fr.st
	plan := &o.Plan{Bindings: binds, Tables: Tables(),
		Summary: func(partial bool) (any, error) {
			s := st.summary(partial, b, fr.flow, fr.loss, fr.rtoMin, fr.modes, fr.transports, fr.flowFrames)
			s.LossSource, s.Connection = fr.lossSource, fr.conn
			return s, nil
		}}
	devs := []string{l.Sender, l.Receiver, l.VOA}
	sendHost, recvHost := b.Sender.Host, b.Receiver.Host
	hosts := []string{sendHost, recvHost}
	plan.Steps = append(plan.Steps, &o.Step{
		Name: fmt.Sprintf("%s: switches", l.Link.Name), Action: "prepare-switches", Devices: devs[:2],
		Settings: []o.Setting{
			{Device: l.Sender, Name: "program", Value: lg.ProgramSender},
			{Device: l.Receiver, Name: "program", Value: lg.ProgramReceiver},
			{Device: l.Sender, Name: fmt.Sprintf("port %d", l.TxPort), Value: fmt.Sprintf("%dG fec %s", l.Gbps, l.FEC)},
		},
		Run: func(ctx context.Context, rc *o.RunContext) error {
			var err error
			fr.bench, err = lgbench.Open(ctx, rc, l, lgbench.Options{ReplaceProgram: p.Bool("replace_program"), PortUpTimeout: p.Duration("port_up_timeout")})
			return err
		},
	})
	plan.Steps = append(plan.Steps, &o.Step{
		Name: "hosts", Action: "prepare-hosts", Devices: hosts, Settings: append(fr.hostSettings(),
			o.Setting{Device: sendHost, Name: "hostagent", Value: "installed if different, started"},
			o.Setting{Device: recvHost, Name: "fct server", Value: b.Receiver.Addr.Addr().String() + ":0"}),
		Note: "settings are read first and restored at the end; rdma runs only where both hosts have ib_write_lat",
		Run:  fr.prepareHosts,
	})
	// The VOA's resting value is where the lossless mode runs.
	plan.Steps = append(plan.Steps, &o.Step{
		Name: fmt.Sprintf("%s: resting attenuation", l.VOA), Action: "read-voa", Devices: []string{l.VOA},
		Note: "the inventory's safe_state, else the value found",
		Run:  fr.readRest,
	})
	needLoss := slices.ContainsFunc(fr.modes, func(m string) bool { return m != Lossless })
	if needLoss && fr.lossSource == LossProgram {
		plan.Steps = append(plan.Steps, &o.Step{
			Name: fmt.Sprintf("%s: loss emulation %g", l.Link.Name, fr.loss), Action: "emulate-loss", Devices: devs[:1],
			Settings: []o.Setting{{Device: l.Sender, Name: lg.TableEmulateDrop, Value: fmt.Sprintf("%d of 2^%d random numbers dropped: %.6g for every frame size",
				lg.DropTableEntries(fr.loss), lg.DropRandomBits, lgbench.EmulatedLoss(fr.loss))}},
			Note: "the artifact's drop_random_pkts; checked empty here, filled for the lossy modes, emptied for lossless, cleared at the end",
			Run:  fr.emulateLoss,
		})
	}
	if needLoss && fr.lossSource == LossVOA {
		plan.Steps = append(plan.Steps, &o.Step{
			Name: fmt.Sprintf("%s: set loss %g", l.Link.Name, fr.loss), Action: "calibrate-loss", Devices: devs,
			Settings: []o.Setting{{Device: l.VOA, Name: fmt.Sprintf("ch%d.attenuation", l.VOAChannel),
				Value: fmt.Sprintf("measured for a loss of %d B frames in [%g, %g]", fr.calibFrame, fr.loss, fr.loss*fr.tol), Unit: "dB"}},
			Note: "found by measuring with protection off, as loss-sweep does",
			Run:  fr.calibrateLoss,
		})
	}
	// The blocks: round k runs every mode once, starting from mode k.
	blocks := int(p.Int("blocks"))
	for k := range blocks {
		n := fr.perBlock(k)
		for i := range fr.modes {
			mode := fr.modes[(i+k)%len(fr.modes)]
			for _, tr := range fr.transports {
				plan.Steps = append(plan.Steps, &o.Step{
					Name: fmt.Sprintf("block %d/%d: %s %s", k+1, blocks, tr, mode), Action: "fct-block", Devices: append(slices.Clone(devs), hosts...),
					Settings: []o.Setting{{Device: sendHost, Name: tr + " trials", Value: fmt.Sprintf("%d of %d B to %s", n, fr.flow, recvHost)}},
					Run:      func(ctx context.Context, rc *o.RunContext) error { return fr.block(ctx, rc, k, n, mode, tr) },
				})
			}
		}
	}
	plan.Steps = append(plan.Steps, &o.Step{
		Name: "percentiles", Action: "write-percentiles", Note: "over every trial of each transport and mode",
		Run: func(ctx context.Context, rc *o.RunContext) error { return st.writePercentiles(rc, fr.flow) },
	})
	return plan, nil
}

// fctRun is a run of the recipe: its parameters, the binding, and what the
// steps found and set (the bench, the agents, the FCT server, the link's
// attenuation, protection and loss emulation as last set).
type fctRun struct {
	p                      *o.Params
	b                      binding
	st                     *state
	modes, transports      []string
	trials, blocks         int
	loss, target, tol      float64
	flow, resp             int
	lossSource, conn, cc   string
	route                  string
	paper                  bool
	calibFrame, flowFrames int
	rtoMin                 time.Duration
	bench                  *lgbench.Bench
	sender, receiver       *hostagent.Client
	fctTarget              string  // the receiver's FCT server
	rdmaOK                 string  // why rdma cannot run ("" it can)
	dropping               bool    // the loss emulation's entries are in the table
	curAtt                 float64 // the VOA's setting as last set (NaN: not yet)
	curMode                string  // the protection as last set
}

// newFCTRun reads the parameters and checks them against the binding.
func newFCTRun(pc *o.PlanContext, b binding) (*fctRun, error) {
	p, l := pc.Params, b.Link
	fr := &fctRun{p: p, b: b, curAtt: math.NaN(),
		modes: p.Strings("modes"), transports: p.Strings("transports"),
		trials: int(p.Int("trials")), blocks: int(p.Int("blocks")),
		loss: p.Float("loss_rate"), target: p.Float("target_loss"), tol: p.Float("calib_tolerance"),
		flow: int(p.Int("flow_size")), resp: int(p.Int("response_size")),
		lossSource: p.String("loss_source"), conn: p.String("connection"), paper: p.Bool("paper_sysctls"),
		route: p.String("route"), rtoMin: p.Duration("rto_min"), cc: p.String("congestion_control"),
		st: &state{tcp: map[string][]int64{}, affected: map[string][]bool{}, retrans: map[string]int{}, drops: map[string]int64{}, rdma: map[string][]int64{}, unavailable: map[string]string{}}}
	if err := pc.CheckAttenuation(l.VOA, l.VOAChannel, p.Float("max_db")); err != nil {
		return nil, o.Inputf("max_db: %v", err)
	}
	timestamps := !fr.paper // the artifact turns them off
	fr.calibFrame = int(p.Int("calib_frame_size"))
	if fr.calibFrame == 0 {
		fr.calibFrame = dataFrameBytes(fr.flow, timestamps)
	}
	if fr.calibFrame < 64 {
		return nil, o.Inputf("calib_frame_size %d: at least 64 B", fr.calibFrame)
	}
	fr.flowFrames = dataFrames(fr.flow, timestamps)
	return fr, nil
}

// perBlock is block k's trials: the first trials%blocks blocks take one
// more.
func (fr *fctRun) perBlock(k int) int {
	if k < fr.trials%fr.blocks {
		return fr.trials/fr.blocks + 1
	}
	return fr.trials / fr.blocks
}

// routeFor is the route selector rto_min goes on, towards a host.
func (fr *fctRun) routeFor(to attachment) string {
	if fr.route != "" {
		return fr.route
	}
	return to.Addr.Masked().String()
}

// hostEnds are each host with the route towards the other.
func (fr *fctRun) hostEnds() []struct{ dev, sel string } {
	return []struct{ dev, sel string }{{fr.b.Sender.Host, fr.routeFor(fr.b.Receiver)}, {fr.b.Receiver.Host, fr.routeFor(fr.b.Sender)}}
}

// hostSettings are the settings the hosts get, for the plan.
func (fr *fctRun) hostSettings() []o.Setting {
	out := []o.Setting{}
	for _, h := range fr.hostEnds() {
		if fr.rtoMin > 0 {
			out = append(out, o.Setting{Device: h.dev, Name: "route " + h.sel + " rto_min", Value: fr.rtoMin.String()})
		}
		if fr.cc != "" {
			out = append(out, o.Setting{Device: h.dev, Name: "net.ipv4.tcp_congestion_control", Value: fr.cc})
		}
		if fr.paper {
			for _, kv := range paperSysctls(fr.cc) {
				out = append(out, o.Setting{Device: h.dev, Name: kv[0], Value: kv[1]})
			}
		}
	}
	return out
}

// prepareHosts sets the hosts (journaled, so they are put back), opens
// their agents and starts the receiver's FCT server.
func (fr *fctRun) prepareHosts(ctx context.Context, rc *o.RunContext) error {
	for _, h := range fr.hostEnds() {
		if err := fr.applyHostSettings(ctx, rc, h.dev, h.sel); err != nil {
			return err
		}
	}
	caps, err := fr.openAgents(ctx, rc)
	if err != nil {
		return err
	}
	st, b, recvHost := fr.st, fr.b, fr.b.Receiver.Host
	if slices.Contains(fr.transports, RDMA) && fr.rdmaOK != "" {
		st.mu.Lock()
		st.unavailable[RDMA] = fr.rdmaOK
		st.mu.Unlock()
	}
	if slices.Contains(fr.transports, TCP) {
		srv, err := fr.receiver.StartFCTServer(ctx, hostagent.FCTServerRequest{Listen: b.Receiver.Addr.Addr().String() + ":0"})
		if err != nil {
			return fmt.Errorf("%s: %w", recvHost, err)
		}
		// The server's id is known once it runs: journaled at once.
		if err := rc.Journal(recvHost, o.Undo{Kind: o.UndoFCTServerStop, Desc: "stop the fct server " + srv.ID + " on " + recvHost,
			Args: map[string]string{"id": srv.ID}}); err != nil {
			_, _ = fr.receiver.StopFCTServer(ctx, srv.ID)
			return err
		}
		fr.fctTarget = b.Receiver.Addr.Addr().String() + ":" + strconv.Itoa(srv.Port)
	}
	rc.Event(results.Event{Type: "setting", Device: recvHost, Message: fmt.Sprintf("fct server at %s; %v", fr.fctTarget, caps),
		Fields: map[string]any{"target": fr.fctTarget, "rdma": fr.rdmaOK == ""}})
	return nil
}

// applyHostSettings sets a host's congestion control, the artifact's
// sysctls and rto_min on its route sel.
func (fr *fctRun) applyHostSettings(ctx context.Context, rc *o.RunContext, dev, sel string) error {
	if fr.cc != "" {
		if _, err := rc.ApplyHostSetting(ctx, dev, host.Sysctl("net.ipv4.tcp_congestion_control", fr.cc)); err != nil {
			return err
		}
	}
	if fr.paper {
		for _, kv := range paperSysctls(fr.cc) {
			if _, err := rc.ApplyHostSetting(ctx, dev, host.Sysctl(kv[0], kv[1])); err != nil {
				return err
			}
		}
	}
	if fr.rtoMin > 0 {
		if _, err := rc.ApplyHostSetting(ctx, dev, host.RouteRTOMin(sel, fr.rtoMin)); err != nil {
			return err
		}
	}
	return nil
}

// openAgents opens both hosts' agents and says what each can do; rdma
// needs ib_write_lat on both.
func (fr *fctRun) openAgents(ctx context.Context, rc *o.RunContext) ([]string, error) {
	clients := map[string]*hostagent.Client{}
	var caps []string
	for _, h := range []string{fr.b.Sender.Host, fr.b.Receiver.Host} {
		a, err := rc.HostAgent(ctx, h)
		if err != nil {
			return nil, err
		}
		c := hostagent.NewClient(a.Client, a.BaseURL)
		v, err := c.Version(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", h, err)
		}
		if !v.Capabilities.RDMAWriteLat && fr.rdmaOK == "" {
			fr.rdmaOK = fmt.Sprintf("not available on %s: %s not found", h, hostagent.WriteLatTool)
		}
		caps = append(caps, fmt.Sprintf("%s: hostagent %s, tcp_info %v, ib_write_lat %v", h, v.Version, v.Capabilities.TCPInfoRetrans, v.Capabilities.RDMAWriteLat))
		clients[h] = c
	}
	fr.sender, fr.receiver = clients[fr.b.Sender.Host], clients[fr.b.Receiver.Host]
	return caps, nil
}

// readRest reads the VOA's resting value: the inventory's safe_state,
// else the value found.
func (fr *fctRun) readRest(ctx context.Context, rc *o.RunContext) error {
	l := fr.b.Link
	d, _ := rc.Lab.Device(l.VOA)
	if rest := o.RestingAttenuation(d); rest != nil {
		fr.st.rest = *rest
		return nil
	}
	a, err := rc.Attenuator(l.VOA)
	if err != nil {
		return err
	}
	v, err := a.Attenuation(ctx, l.VOAChannel)
	if err != nil {
		return fmt.Errorf("%s: %w", l.VOA, err)
	}
	fr.st.rest = v
	return nil
}

// emulateLoss checks the sender program's drop table is empty; the first
// lossy block fills it (setLink).
func (fr *fctRun) emulateLoss(ctx context.Context, rc *o.RunContext) error {
	l, st, loss := fr.b.Link, fr.st, fr.loss
	if fr.bench == nil {
		return o.Skip("the switches were not prepared")
	}
	if err := fr.bench.PrepareDrop(ctx); err != nil {
		return err
	}
	got := lgbench.EmulatedLoss(loss)
	st.mu.Lock()
	st.cal = lgbench.Calibration{Target: loss, Loss: got, AttenuationDB: st.rest}
	st.mu.Unlock()
	rc.Event(results.Event{Type: "setting", Device: l.Sender, Message: fmt.Sprintf("%s: loss emulation %.6g (%d entries)", l.Link.Name, got, lg.DropTableEntries(loss)),
		Fields: map[string]any{"link": l.Link.Name, "nominal_loss": loss, "actual_loss": got}})
	return nil
}

// calibrateLoss sets the loss through the VOA by measuring with frames of
// calib_frame_size, protection off.
func (fr *fctRun) calibrateLoss(ctx context.Context, rc *o.RunContext) error {
	l, st, p, loss, tol, calibFrame := fr.b.Link, fr.st, fr.p, fr.loss, fr.tol, fr.calibFrame
	if fr.bench == nil {
		return o.Skip("the switches were not prepared")
	}
	stress := lgbench.Stress{AppID: 1, PktgenPort: int(p.Int("pktgen_port")), FrameBytes: calibFrame, Poll: time.Millisecond}
	cal, err := fr.bench.Calibrate(ctx, loss*tol, lgbench.CalibrateOptions{StartDB: p.Float("start_db"), StepDB: p.Float("scan_step_db"),
		MaxDB: p.Float("max_db"), Tolerance: tol, Losses: p.Int("calib_losses"), MaxFrames: p.Int("calib_max_frames"), FrameBytes: calibFrame, Stress: stress})
	if err != nil {
		return err
	}
	st.mu.Lock()
	st.cal = cal
	st.mu.Unlock()
	rc.Event(results.Event{Type: "measurement", Device: l.VOA, Message: fmt.Sprintf("%s: loss %.3g of %d B frames at %.3f dB (%d of %d frames, %d measurements)",
		l.Link.Name, cal.Loss, calibFrame, cal.AttenuationDB, cal.Lost, cal.Frames, cal.Measurements),
		Fields: map[string]any{"link": l.Link.Name, "nominal_loss": loss, "actual_loss": cal.Loss, "attenuation_db": cal.AttenuationDB, "frame_bytes": calibFrame}})
	return nil
}

// setLink puts the link in mode: the lossless one at rest, unprotected;
// the others at the loss set, with their protection. Only what changed
// since the last block is touched.
func (fr *fctRun) setLink(ctx context.Context, rc *o.RunContext, mode string) error {
	st, l, p, bench := fr.st, fr.b.Link, fr.p, fr.bench
	att := st.rest
	prot := lgbench.Protection{Mode: lgbench.Off}
	if mode != Lossless {
		if st.cal.Target == 0 {
			return o.Skip("the loss rate was not set")
		}
		att = st.cal.AttenuationDB
		var err error
		if prot, err = bench.DefaultProtection(lgbench.Mode(mode), fr.target, st.cal.Loss, p.Bool("backpressure"), int(p.Int("dummy_pkt_max_count"))); err != nil {
			return err
		}
		st.mu.Lock()
		st.copies = max(st.copies, prot.Copies)
		st.mu.Unlock()
	}
	if fr.lossSource == LossProgram {
		att = st.rest // the fibre stays at rest; the program drops
		if err := fr.setDrop(ctx, mode != Lossless); err != nil {
			return err
		}
	}
	if att != fr.curAtt {
		if err := rc.SetAttenuation(ctx, l.VOA, l.VOAChannel, att); err != nil {
			return err
		}
		fr.curAtt = att
	}
	if mode != fr.curMode {
		if err := bench.Protect(ctx, prot); err != nil {
			return err
		}
		fr.curMode = mode
	}
	return nil
}

// setDrop fills or empties the sender program's drop table when it is
// not so already.
func (fr *fctRun) setDrop(ctx context.Context, want bool) error {
	if want == fr.dropping {
		return nil
	}
	var err error
	if want {
		_, err = fr.bench.EmulateDrop(ctx, fr.loss)
	} else {
		err = fr.bench.ClearDrop(ctx)
	}
	if err != nil {
		return err
	}
	fr.dropping = want
	return nil
}

// block runs block k's n trials of transport tr in mode.
func (fr *fctRun) block(ctx context.Context, rc *o.RunContext, k, n int, mode, tr string) error {
	st, p, l := fr.st, fr.p, fr.b.Link
	if fr.bench == nil || fr.sender == nil {
		return o.Skip("the switches or hosts were not prepared")
	}
	if tr == RDMA && fr.rdmaOK != "" {
		return o.Skip("rdma: %s", fr.rdmaOK)
	}
	if err := fr.setLink(ctx, rc, mode); err != nil {
		return err
	}
	if tr != TCP {
		return st.runRDMA(ctx, rc, fr.sender, fr.receiver, fr.b, p, fr.flow, n, mode, k+1)
	}
	before, err := fr.bench.EmulatedDrops(ctx)
	if err != nil {
		return err
	}
	if err := st.runTCP(ctx, rc, fr.sender, fr.b.Sender.Host, hostagent.FCTRunRequest{Target: fr.fctTarget, RequestSize: fr.flow, ResponseSize: fr.resp, Trials: n,
		Warmup: int(p.Int("warmup")), Connections: 1, TrialTimeoutMS: int(p.Duration("trial_timeout").Milliseconds()), Connection: fr.conn}, mode, k+1, p.Bool("keep_samples")); err != nil {
		return err
	}
	after, err := fr.bench.EmulatedDrops(ctx)
	if err != nil {
		return err
	}
	st.mu.Lock()
	st.drops[mode] += after - before
	st.mu.Unlock()
	rc.Event(results.Event{Type: "measurement", Device: l.Sender, Message: fmt.Sprintf("tcp %s block %d: %d frames taken by the emulated drop (%s)", mode, k+1, after-before, lg.RegEmulatedDrops),
		Fields: map[string]any{"transport": TCP, "mode": mode, "block": k + 1, "switch_drops": after - before}})
	return nil
}

// runTCP runs one block of TCP trials on the sender's agent and keeps them.
func (st *state) runTCP(ctx context.Context, rc *o.RunContext, c *hostagent.Client, dev string, req hostagent.FCTRunRequest, mode string, block int, keep bool) error {
	run, err := c.RunFCT(ctx, req)
	if err != nil {
		return fmt.Errorf("%s: %w", dev, err)
	}
	if run.State != hostagent.StateDone {
		msg := run.State
		if run.Error != nil {
			msg += ": " + run.Error.Message
		}
		return fmt.Errorf("%s: fct run %s %s", dev, run.ID, msg)
	}
	samples, err := c.FCTSamples(ctx, run.ID)
	if err != nil {
		return fmt.Errorf("%s: samples of %s: %w", dev, run.ID, err)
	}
	if len(samples) != req.Trials {
		return fmt.Errorf("%s: fct run %s returned %d samples of %d trials", dev, run.ID, len(samples), req.Trials)
	}
	if keep {
		t, err := rc.Table("fct_samples")
		if err != nil {
			return err
		}
		for _, s := range samples {
			if err := t.Write(TCP, mode, block, s.Trial, s.StartNS, s.FCTNS, s.Retrans); err != nil {
				return err
			}
		}
	}
	fcts := make([]int64, len(samples))
	aff := make([]bool, len(samples))
	retrans := 0
	for i, s := range samples {
		fcts[i] = s.FCTNS
		if s.Retrans > 0 {
			retrans++
			aff[i] = true
		}
	}
	st.mu.Lock()
	st.tcp[mode] = append(st.tcp[mode], fcts...)
	st.affected[mode] = append(st.affected[mode], aff...)
	st.retrans[mode] += retrans
	st.timing = run.Summary.Timing
	st.mu.Unlock()
	s := run.Summary
	rc.Event(results.Event{Type: "measurement", Device: dev, Message: fmt.Sprintf("tcp %s block %d: %d trials, p50 %.1f us, p99.9 %.1f us, max %.1f us, %d retransmitting",
		mode, block, s.Count, us(s.P50NS), us(s.P999NS), us(s.MaxNS), retrans),
		Fields: map[string]any{"transport": TCP, "mode": mode, "block": block, "trials": s.Count, "p50_us": us(s.P50NS), "p99_9_us": us(s.P999NS), "retrans_trials": retrans}})
	return nil
}

// runRDMA runs one block of ib_write_lat: a server job on the receiver,
// then the client on the sender.
func (st *state) runRDMA(ctx context.Context, rc *o.RunContext, snd, rcv *hostagent.Client, b binding, p *o.Params, flow, n int, mode string, block int) error {
	// n+1 posts give n samples. -U: every iteration's latency, so that the
	// percentiles come from
	// the blocks' samples pooled (a p99.9 averaged over blocks is not the
	// p99.9 of the trials).
	req := hostagent.WriteLatRequest{Size: flow, Iterations: max(n+1, 5), Device: p.String("rdma_device"), TCPPort: int(p.Int("rdma_port")), Unsorted: true}
	if g := int(p.Int("rdma_gid_index")); g >= 0 {
		req.GIDIndex = &g
	}
	sreq := req
	sreq.Role = hostagent.RoleServer
	var rtt o.RoundTrip // the receiver's: the server's stop has a deadline from it
	var srv hostagent.WriteLatStatus
	if err := rtt.Measure(func() (err error) { srv, err = rcv.StartWriteLat(ctx, sreq); return err }); err != nil {
		return fmt.Errorf("%s: %w", b.Receiver.Host, err)
	}
	defer rtt.Cleanup(ctx, func(ctx context.Context) error { _, err := rcv.StopWriteLat(ctx, srv.ID); return err })
	creq := req
	creq.Role, creq.Server = hostagent.RoleClient, b.Receiver.Addr.Addr().String()
	var cl hostagent.WriteLatStatus
	// The server needs a moment to listen; the client is retried briefly.
	attempt := 0
	for ; ; attempt++ {
		job, err := snd.StartWriteLat(ctx, creq)
		if err != nil {
			return fmt.Errorf("%s: %w", b.Sender.Host, err)
		}
		// A client that ran before the server listened fails ("Couldn't
		// connect"): that, and only that, is tried again.
		cl, err = snd.WaitWriteLat(ctx, job.ID)
		if err != nil && (ctx.Err() != nil || cl.State != hostagent.StateFailed) {
			return fmt.Errorf("%s: %w", b.Sender.Host, err)
		}
		if cl.State == hostagent.StateDone || attempt >= 5 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond << attempt): // 20 ms ... 320 ms
		}
	}
	if cl.State != hostagent.StateDone || cl.Result == nil || len(cl.Result.Rows) == 0 {
		msg := cl.State
		if cl.Error != nil {
			msg += ": " + cl.Error.Message
		}
		return fmt.Errorf("%s: ib_write_lat: %s", b.Sender.Host, msg)
	}
	row := cl.Result.Rows[len(cl.Result.Rows)-1]
	val := func(v *float64) float64 {
		if v == nil {
			return math.NaN()
		}
		return *v
	}
	if len(cl.Result.SamplesUS) == 0 {
		return fmt.Errorf("%s: ib_write_lat printed no samples with -U (--report-unsorted): a perftest without it cannot give the pooled distribution", b.Sender.Host)
	}
	ns := make([]int64, len(cl.Result.SamplesUS))
	var start int64
	if t, err := rc.Table("fct_samples"); err == nil {
		for i, x := range cl.Result.SamplesUS {
			ns[i] = int64(math.Round(x * 1e3))
			if err := t.Write(RDMA, mode, block, i, start, ns[i], -1); err != nil {
				return err
			}
			start += 2 * ns[i] // a sample is half the round trip
		}
	} else {
		return err
	}
	st.mu.Lock()
	st.rdma[mode] = append(st.rdma[mode], ns...)
	st.mu.Unlock()
	rc.Event(results.Event{Type: "measurement", Device: b.Sender.Host, Message: fmt.Sprintf("rdma %s block %d: %d iterations, typical %.2f us, p99.9 %.2f us",
		mode, block, row.Iterations, val(row.TTypicalUS), val(row.P999US)),
		Fields: map[string]any{"transport": RDMA, "mode": mode, "block": block, "iterations": row.Iterations, "client_runs": attempt + 1}})
	return nil
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

// percentilePoints are the rows of fct_percentiles, in parts per million
// (1e6: the maximum).
var percentilePoints = []int64{hostagent.PPM50, hostagent.PPM90, hostagent.PPM99, hostagent.PPM999, hostagent.PPM9999, 1_000_000}

// distributions computes, per transport and mode, the summary.
func (st *state) distributions(modes, transports []string) map[string]map[string]ModeSummary {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := map[string]map[string]ModeSummary{}
	for _, tr := range transports {
		for _, m := range modes {
			var s ModeSummary
			switch tr {
			case TCP:
				f := st.tcp[m]
				if len(f) == 0 {
					continue
				}
				d := hostagent.Distribute(slices.Clone(f))
				s = ModeSummary{Trials: d.Count, P50US: us(d.P50NS), P99US: us(d.P99NS), P999US: us(d.P999NS), P9999US: us(d.P9999NS), MaxUS: us(d.MaxNS), RetransTrials: st.retrans[m], SwitchDrops: st.drops[m]}
			case RDMA:
				f := st.rdma[m]
				if len(f) == 0 {
					continue
				}
				d := hostagent.Distribute(slices.Clone(f))
				s = ModeSummary{Trials: d.Count, P50US: us(d.P50NS), P99US: us(d.P99NS), P999US: us(d.P999NS), P9999US: us(d.P9999NS), MaxUS: us(d.MaxNS)}
			}
			if out[tr] == nil {
				out[tr] = map[string]ModeSummary{}
			}
			out[tr][m] = s
		}
		if base, ok := out[tr][Lossless]; ok && base.P999US > 0 {
			for m, s := range out[tr] {
				s.P999VsLossless = s.P999US / base.P999US
				out[tr][m] = s
			}
		}
	}
	return out
}

func (st *state) summary(partial bool, b binding, flow int, loss float64, rtoMin time.Duration, modes, transports []string, frames int) Summary {
	d := st.distributions(modes, transports)
	st.mu.Lock()
	defer st.mu.Unlock()
	var tails map[string]TailSummary
	if slices.Contains(transports, TCP) {
		base := d[TCP][Lossless].P999US
		for _, m := range modes {
			f := st.tcp[m]
			if len(f) == 0 {
				continue
			}
			// A trial is affected when one of its data frames is lost on
			// the link: 1-(1-p)^frames, p the link's loss per frame (the
			// reverse direction, with the ACKs, is clean).
			// Only unprotected losses end in the transport's timeout tail.
			q := 0.0
			if m == string(lgbench.Off) && st.cal.Loss > 0 {
				q = -math.Expm1(float64(frames) * math.Log1p(-st.cal.Loss))
			}
			if tails == nil {
				tails = map[string]TailSummary{}
			}
			tails[m] = tailOf(f, st.affected[m], q, base)
		}
	}
	s := Summary{Partial: partial, FlowSize: flow, Sender: b.Sender.Host, Receiver: b.Receiver.Host, Link: b.Link.Link.Name,
		LossRate: loss, ActualLoss: st.cal.Loss, AttenuationDB: st.cal.AttenuationDB, RestAttenuationDB: st.rest, RetxCopies: st.copies,
		RTOMinMS: float64(rtoMin) / float64(time.Millisecond), Transports: d, Tails: tails, Timing: st.timing}
	if len(st.unavailable) > 0 {
		s.Unavailable = map[string]string{}
		for k, v := range st.unavailable {
			s.Unavailable[k] = v
		}
	}
	return s
}

// writePercentiles writes fct_percentiles from every trial kept.
func (st *state) writePercentiles(rc *o.RunContext, flow int) error {
	t, err := rc.Table("fct_percentiles")
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var errs []error
	write := func(tr, mode string, ppm int64, v float64) {
		if math.IsNaN(v) {
			return
		}
		errs = append(errs, t.Write(tr, mode, flow, float64(ppm)/1e4, v, float64(1_000_000-ppm)/1e6, tr+"/"+mode))
	}
	for _, tr := range []string{TCP, RDMA} {
		byMode := map[string]map[string][]int64{TCP: st.tcp, RDMA: st.rdma}[tr]
		for _, mode := range sortedKeys(byMode) {
			f := slices.Clone(byMode[mode])
			slices.Sort(f)
			for _, ppm := range percentilePoints {
				write(tr, mode, ppm, us(hostagent.PercentileSorted(f, ppm)))
			}
		}
	}
	return errors.Join(errs...)
}

func sortedKeys[V any](m map[string]V) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	slices.Sort(k)
	return k
}
