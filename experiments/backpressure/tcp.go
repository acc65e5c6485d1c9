package backpressure

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"testbed/dut/host"
	"testbed/experiments/lgbench"
	"testbed/inventory"
	o "testbed/orchestrator"
	"testbed/results"
)

// The TCP flow (LinkGuardian §4.2 and Appendix B.3): instead of the
// switch's packet generator, the host cabled to the sending switch runs
// one iperf3 flow with the congestion control cc (iperf3 -C) to the host
// cabled to the receiving switch, across the link. The loss and
// LinkGuardian are switched on at the same times of the sender switch's
// clock as for the line-rate flow; the delivered rate per interval is
// what the iperf3 server received (--get-server-output), retransmissions
// are the sender's TCP counts (iperf3's per-interval retransmits, from
// TCP_INFO), and pause frames, FCS errors, timeouts and both buffers are
// read from the switches as for the line-rate flow.

// CCs are the congestion controls the paper ran.
var CCs = []string{"dctcp", "cubic", "bbr"}

// tcpHosts is the pair of hosts a TCP flow runs between.
type tcpHosts struct {
	Sender, Receiver string
	Dst              netip.Addr
}

// hostOn finds a host cabled to switch sw: the named one (checked) or
// the first by name.
func hostOn(inv *inventory.Inventory, sw, want string) (string, netip.Prefix, error) {
	var names []string
	found := map[string]netip.Prefix{}
	for _, l := range inv.Links {
		for _, e := range [][2]inventory.Endpoint{{l.A, l.B}, {l.B, l.A}} {
			d, ok := inv.Device(e[0].Device)
			if !ok || d.Kind != "host" || e[1].Device != sw {
				continue
			}
			p, err := netip.ParsePrefix(d.Ports[e[0].Port])
			if err != nil {
				return "", netip.Prefix{}, inv.DeviceErrorf(d, "ports", "host %s port %s (cable %s to %s): %q is not an address with prefix length", d.Name, e[0].Port, l.Name, sw, d.Ports[e[0].Port])
			}
			if _, dup := found[d.Name]; !dup {
				names = append(names, d.Name)
			}
			found[d.Name] = p
		}
	}
	sort.Strings(names)
	if want != "" {
		if p, ok := found[want]; ok {
			return want, p, nil
		}
		return "", netip.Prefix{}, fmt.Errorf("%s: host %q is not cabled to %s (hosts there: %s)", inv.Path, want, sw, strings.Join(names, ", "))
	}
	if len(names) == 0 {
		return "", netip.Prefix{}, fmt.Errorf("%s: flow=tcp needs a host cabled to %s; none is", inv.Path, sw)
	}
	return names[0], found[names[0]], nil
}

// bindTCP checks a TCP flow can run on the links and finds its hosts.
func bindTCP(pc *o.PlanContext, links []lgbench.Link, p *o.Params) (tcpHosts, error) {
	if len(links) != 1 {
		names := make([]string, len(links))
		for i, l := range links {
			names[i] = l.Link.Name
		}
		return tcpHosts{}, o.Inputf("flow=tcp runs over one link, the hosts' data path; got %d (%s): set links", len(links), strings.Join(names, ", "))
	}
	l := links[0]
	// Host traffic between the two switches crosses their data-path link
	// where several join them.
	var joining []*inventory.Link
	for _, x := range pc.Lab.Links {
		if x.A.Device == l.Sender && x.B.Device == l.Receiver {
			joining = append(joining, x)
		}
	}
	if len(joining) > 1 && !l.Link.DataPath {
		var dp []string
		for _, x := range joining {
			if x.DataPath {
				dp = append(dp, x.Name)
			}
		}
		return tcpHosts{}, o.Inputf("link %s does not carry host traffic from %s to %s (its data path is %s): a TCP flow would not cross it", l.Link.Name, l.Sender, l.Receiver, strings.Join(dp, ", "))
	}
	var h tcpHosts
	var err error
	if h.Sender, _, err = hostOn(pc.Lab, l.Sender, p.String("sender_host")); err != nil {
		return h, o.Inputf("%v", err)
	}
	var dst netip.Prefix
	if h.Receiver, dst, err = hostOn(pc.Lab, l.Receiver, p.String("receiver_host")); err != nil {
		return h, o.Inputf("%v", err)
	}
	h.Dst = dst.Addr()
	if d := p.Float("duration_s"); d != float64(int64(d)) {
		return h, o.Inputf("duration_s %g: iperf3 -t takes whole seconds", d)
	}
	if err := (host.Iperf3Flow{Seconds: int64(p.Float("duration_s")), Interval: p.Duration("interval")}).Check(); err != nil {
		return h, o.Inputf("duration_s, interval: %v", err)
	}
	return h, nil
}

// tcpReading is one poll of the switches.
type tcpReading struct {
	at   time.Duration
	snap lgbench.Snapshot
	q    lgbench.Queues
}

// runTCP is one run of the time series with a TCP flow.
func (f *flow) runTCP(ctx context.Context, hosts tcpHosts, cc string) (Run, error) {
	b, l := f.b, f.l
	run := Run{Flow: "tcp", CC: cc, AttenuationDB: f.cal.AttenuationDB, ActualLoss: f.cal.Loss, Phases: map[string]Phase{}}
	snd, err := o.As[host.Iperf3Runner](f.rc, hosts.Sender)
	if err != nil {
		return run, err
	}
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
	if busy, err := snd.Iperf3Running(ctx); err != nil || busy {
		if err == nil {
			err = fmt.Errorf("%s runs iperf3 already: a second flow would share the link", hosts.Sender)
		}
		return run, err
	}
	flow := host.Iperf3Flow{Dst: hosts.Dst, Seconds: int64(f.dur / time.Second), Interval: f.interval, CC: cc}
	// The flow's end is judged on the switch's clock below (on a simulated
	// host it runs in the switches' simulated time, which a loaded control
	// host computes slowly), and so is a hang: awaitReport gives up when
	// the clock is twice the flow and 10 s past its start with no report.
	// This wall deadline is only the host's timeout(1), which kills iperf3
	// should this process die: it must not end a flow the clock still
	// runs, which a wall bound of 20 flows and a minute did (a 1 s flow,
	// some 3 s of wall time alone, ended at its 80 s deadline on a machine
	// 14 jobs deep with a CPU profile on: over 80 times slower than real
	// time).
	fctx, cancel := context.WithTimeout(ctx, iperf3KillAfter(f.dur))
	defer cancel()
	var rtt o.RoundTrip // the sender's: the wait for iperf3's report once the clock is past its end
	done, err := f.startIperf3(ctx, fctx, snd, hosts.Sender, flow, &rtt)
	if err != nil {
		return run, err
	}
	t0, err := b.Tx.Clock(ctx)
	if err != nil {
		return run, fmt.Errorf("%s: %w", l.Sender, err)
	}
	name := fmt.Sprintf("%s backpressure %s %s", l.Link.Name, f.bp, cc)
	reads, phases, err := f.pollTCP(ctx, t0, prot, name)
	if err != nil {
		return run, err
	}
	out, err := f.awaitReport(ctx, done, t0, &rtt, hosts.Sender)
	if err != nil {
		return run, err
	}
	if out.err != nil {
		return run, out.err
	}
	rep := out.rep
	if rep.Server == nil || len(rep.Server.Intervals) != len(rep.Intervals) || len(rep.Intervals) < len(reads)-1 {
		return run, fmt.Errorf("%s: iperf3 reported %d intervals (%d at the server), expected %d of %v", hosts.Sender, len(rep.Intervals), len(rep.ServerIntervals()), len(reads)-1, f.interval)
	}
	if err := f.writeTCP(table, name, cc, reads, phases, rep, &run); err != nil {
		return run, err
	}
	// The frame counts of the line-rate flow are not taken: the sender
	// port's data frames include LinkGuardian's copies, and the TCP flow's
	// own count of what the link cost it is its retransmissions.
	run.Retransmits = rep.End.SumSent.Retransmits
	return run, nil
}

// iperf3Result is iperf3's report, or why there is none.
type iperf3Result struct {
	rep host.Iperf3Report
	err error
}

// startIperf3 starts the flow on the sender (under fctx) and waits, by
// asking, until iperf3 runs: the flow's clock starts then. The report
// comes on the channel returned.
func (f *flow) startIperf3(ctx, fctx context.Context, snd host.Iperf3Runner, sender string, flow host.Iperf3Flow, rtt *o.RoundTrip) (<-chan iperf3Result, error) {
	done := make(chan iperf3Result, 1)
	go func() {
		rep, err := snd.Iperf3(fctx, flow)
		done <- iperf3Result{rep, err}
	}()
	f.rc.Event(results.Event{Type: "command", Device: sender, Message: flow.Command()})
	for {
		var busy bool
		err := rtt.Measure(func() (err error) { busy, err = snd.Iperf3Running(ctx); return err })
		if err != nil {
			return nil, err
		}
		if busy {
			return done, nil
		}
		select {
		case r := <-done:
			return nil, fmt.Errorf("%s: iperf3 ended before it was seen running: %v", sender, r.err)
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// pollTCP reads the switches every interval of the switch's clock from t0
// over the flow, turning the loss on and then LinkGuardian (prot) at their
// times; it returns the reads and the phase each interval was in.
func (f *flow) pollTCP(ctx context.Context, t0 time.Duration, prot lgbench.Protection, name string) ([]tcpReading, []string, error) {
	b, l := f.b, f.l
	first, err := b.Read(ctx)
	if err != nil {
		return nil, nil, err
	}
	reads := []tcpReading{{at: 0, snap: first}}
	phase := PhaseClean
	phases := []string{}
	for k := int64(1); ; k++ {
		at := time.Duration(k) * f.interval
		if at > f.dur {
			return reads, phases, nil
		}
		if err := waitClock(ctx, b, t0+at); err != nil {
			return nil, nil, err
		}
		s, err := b.Read(ctx)
		if err != nil {
			return nil, nil, err
		}
		q, err := b.ReadQueues(ctx, false)
		if err != nil {
			return nil, nil, err
		}
		reads = append(reads, tcpReading{at: at, snap: s, q: q})
		phases = append(phases, phase)
		if phase == PhaseClean && at >= f.lossOn {
			phase = PhaseLoss
			if err := f.rc.SetAttenuation(ctx, l.VOA, l.VOAChannel, f.cal.AttenuationDB); err != nil {
				return nil, nil, err
			}
			f.changed(ctx, fmt.Sprintf("%s: loss on (%.3f dB)", name, f.cal.AttenuationDB))
		}
		if phase == PhaseLoss && at >= f.protOn {
			phase = PhaseProtected
			if err := b.Protect(ctx, prot); err != nil {
				return nil, nil, err
			}
			f.changed(ctx, fmt.Sprintf("%s: linkguardian on, %d copies, thresholds %d/%d cells", name, prot.Copies, prot.PauseCells, prot.ResumeCells))
		}
	}
}

// awaitReport waits for iperf3's report: the flow ends at its duration,
// its last interval is stepped once the clock has passed it. Twice the
// flow and 10 s more on the switch's clock, the report is one answer
// away, its deadline from the sender's measured round trips.
func (f *flow) awaitReport(ctx context.Context, done <-chan iperf3Result, t0 time.Duration, rtt *o.RoundTrip, sender string) (iperf3Result, error) {
	b := f.b
	for at := f.dur + f.interval; ; at += f.interval {
		if err := waitClock(ctx, b, t0+at); err != nil {
			return iperf3Result{}, err
		}
		select {
		case out := <-done:
			return out, nil
		case <-ctx.Done():
			return iperf3Result{}, context.Cause(ctx)
		case <-time.After(50 * time.Millisecond):
			if at < reportLimit(f.dur) {
				continue
			}
			select {
			case out := <-done:
				return out, nil
			case <-ctx.Done():
				return iperf3Result{}, context.Cause(ctx)
			case <-time.After(rtt.Deadline()):
				return iperf3Result{}, fmt.Errorf("%s: iperf3 gave no report %v after its %v flow began on %s's clock", sender, at, f.dur, f.l.Sender)
			}
		}
	}
}

// writeTCP writes one row per poll, joined with iperf3's interval ending
// there, and the run's phases.
func (f *flow) writeTCP(table *results.TableWriter, name, cc string, reads []tcpReading, phases []string, rep host.Iperf3Report, run *Run) error {
	l := f.l
	var ph Phase
	phStart := reads[0]
	var sentB, recvB int64
	closePhase := func(name string, end tcpReading) {
		secs := (end.at - phStart.at).Seconds()
		ph.Seconds = secs
		if secs > 0 {
			ph.SenderRateGbps = float64(sentB) * 8 / secs / 1e9
			ph.DeliveredRateGbps = float64(recvB) * 8 / secs / 1e9
		}
		ph.PauseFrames = end.snap.PauseFrames - phStart.snap.PauseFrames
		ph.FCSErrors = end.snap.RxFCS - phStart.snap.RxFCS
		ph.Timeouts = end.snap.Timeouts - phStart.snap.Timeouts
		run.Phases[name] = ph
		ph, phStart, sentB, recvB = Phase{}, end, 0, 0
	}
	for i := 1; i < len(reads); i++ {
		r, prev := reads[i], reads[i-1]
		iv, sv := rep.Intervals[i-1].Sum, rep.Server.Intervals[i-1].Sum
		secs := iv.End - iv.Start
		var sent, recv float64
		if secs > 0 {
			sent = float64(iv.Bytes) * 8 / secs / 1e9
			recv = float64(sv.Bytes) * 8 / secs / 1e9
		}
		if err := table.Write(name, l.Link.Name, f.bp, r.at.Seconds(), phases[i-1], sent, recv, r.q.TxBuffer, r.q.Reorder,
			r.snap.PauseFrames-prev.snap.PauseFrames, r.snap.RxFCS-prev.snap.RxFCS, r.snap.Timeouts-prev.snap.Timeouts, cc, iv.Retransmits); err != nil {
			return err
		}
		sentB, recvB = sentB+iv.Bytes, recvB+sv.Bytes
		ph.Retransmits += iv.Retransmits
		ph.MaxTxBufferBytes = max(ph.MaxTxBufferBytes, r.q.TxBuffer)
		ph.MaxRxBufferBytes = max(ph.MaxRxBufferBytes, r.q.Reorder)
		if i == len(reads)-1 || phases[i] != phases[i-1] {
			closePhase(phases[i-1], r)
		}
	}
	return nil
}

// reportLimit is how far past its start on the switch's clock a flow of
// dur has gone, with no report from iperf3, when awaitReport stops
// stepping and waits one answer for it: twice the flow and 10 s.
func reportLimit(dur time.Duration) time.Duration { return 2*dur + 10*time.Second }

// slowestPace is how many times slower than real time a simulated flow
// may run (the switches' clock against the wall's) before the host's
// timeout(1) may end it: a 100G TCP flow alone goes some 3 times slower
// than real time, and has gone over 80 times slower on a loaded machine
// with a CPU profile on. At 300 a 1 s flow is killed after an hour, should
// this process die (a real host's iperf3 ends by itself at its -t).
const slowestPace = 300

// iperf3KillAfter is the wall deadline the host's timeout(1) kills a flow
// of dur at, should this process die: late enough that awaitReport's
// judgment on the switch's clock (reportLimit) comes first at any pace up
// to slowestPace. A real host's iperf3 ends by itself at dur.
func iperf3KillAfter(dur time.Duration) time.Duration {
	return slowestPace*reportLimit(dur) + time.Minute
}

// waitClock waits for the sender switch's clock to reach t, in steps.
func waitClock(ctx context.Context, b *lgbench.Bench, t time.Duration) error {
	now, err := b.Tx.Clock(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", b.Sender, err)
	}
	for now < t {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: wait for clock %v: %w", b.Sender, t, context.Cause(ctx))
		}
		if now, err = b.Tx.WaitClock(ctx, min(t, now+50*time.Millisecond)); err != nil {
			return fmt.Errorf("%s: %w", b.Sender, err)
		}
	}
	return nil
}
