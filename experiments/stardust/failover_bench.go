package stardust

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"testbed/dut/p4switch"
	o "testbed/orchestrator"
	sd "testbed/p4/stardust"
	"testbed/results"
)

// stardust-failover on a Stardust bench (simlab/benches/stardust.yaml or a
// lab like it): the fabric brought up as stardust-fabric's bench mode does
// (bench.go), uniform traffic from every FA's generator, and a control
// plane in the recipe that polls the switches on their clock, through the
// switch driver only:
//
//   - every fabric port's state and reachability age (FabricLinks), and its
//     received and FCS-errored frame counters: a directed link a -> b is
//     good while b's age for it is under th (§5.9, App. E) and, over the
//     last poll, its FCS errors are at most error_threshold of the frames
//     it received (§5.9's link that corrupts marks itself faulty; on Tofino
//     the control plane reads the MAC's counters, p4/stardust/README.md);
//     a link that was bad is valid again after th reachability periods of
//     being good;
//   - the spraying tables follow (SetSpray): an FA sprays towards FA d over
//     the FEs whose link from it and link to d are both valid, keeping the
//     permutation of the bring-up (HealSpray's rule on the FA's own links,
//     and the reachability an FE's cells would carry for the others: the
//     programs' cells carry only their sender, so the control plane
//     carries the rest);
//   - the frames given up by the FAs' reassembly timer (§4.1; set at
//     bring-up to bench_reassembly_timeout): an early frame that old gives
//     up the missing numbers before it. The recipe reads every FA's
//     ReassemblyDrops at each poll; what they grew by since the last are
//     the frames it counts lost, sent by a timeout before the poll.
//
// The poll interval adds up to one interval to every reaction; the
// simulated switches' clock stands still while the control plane reads and
// writes, so the poll's own duration is measured in wall time and reported
// in the run's events (a real switch's clock does not stop).

// failoverBenchParams are the bench parameters of stardust-failover.
func failoverBenchParams() []o.ParamSpec {
	var out []o.ParamSpec
	for _, ps := range benchParams(0, 100*time.Microsecond, 0) {
		switch ps.Name {
		case "bench_link_gbps", "bench_host_gbps", "bench_warmup", "replace_program":
			out = append(out, ps)
		}
	}
	return append(out,
		o.ParamSpec{Name: "bench_poll", Type: o.TypeDuration, Default: 5 * time.Microsecond, Min: o.Bound(1e-7), Max: o.Bound(0.001), Description: "bench only: the control plane's poll interval on the switches' clock (reads every fabric port and the FAs' given-up frames, heals)"},
		o.ParamSpec{Name: "bench_reassembly_timeout", Type: o.TypeDuration, Default: 10 * time.Microsecond, Min: o.Bound(1e-6), Max: o.Bound(0.002), Description: "bench only: the FAs' reassembly timer (§4.1), set at bring-up: an early frame this long after its source sent it gives up the missing frames before it"},
		o.ParamSpec{Name: "heal_on_port_down", Type: o.TypeBool, Default: false, Description: "bench only: the control plane also takes a link out when its port reports down (loss of signal), not only when its reachability age reaches th (§5.9)"},
	)
}

// FailoverBench is what the bench mode adds to the summary.
type FailoverBench struct {
	PollUS              float64 `json:"poll_us"`
	ReassemblyTimeoutUS float64 `json:"reassembly_timeout_us"`
	// Polls counts the control plane's polls of every switch. Their wall
	// time (the mean and the longest) is an event of the run's, not a
	// number of the summary: it is the machine's, not the fabric's, and
	// differs between two runs of the same seed.
	Polls int `json:"polls"`
	// CorruptDB is the attenuation set on the corrupting link, CorruptFER
	// the frame error rate its receiver counted at it while calibrating.
	CorruptDB  float64 `json:"corrupt_db"`
	CorruptFER float64 `json:"corrupt_fer"`
	// ConvergedOverBound is the slowest down event's convergence over
	// (th + 1) reachability periods plus the poll interval.
	ConvergedOverBound float64 `json:"converged_over_bound"`
	// ValidMinOverTh is the quickest restore's valid time over th
	// reachability periods (at least 1: th good periods).
	ValidMinOverTh float64 `json:"valid_min_over_th"`
	// ValidMaxOverBound is the slowest over th + 1 periods plus two polls.
	ValidMaxOverBound float64 `json:"valid_max_over_bound"`
	// LostAfterConverged is the frames given up, in the down phases, later
	// than convergence plus the reassembly timeout and two polls.
	LostAfterConverged int64 `json:"lost_after_converged"`
	// LostInUpPhases is the frames given up in the restore phases, later
	// than the reassembly timeout and two polls after the restore.
	LostInUpPhases int64 `json:"lost_in_up_phases"`
	// CongestionLost is frames lost to full FE queues or recirculation
	// queues, the whole run.
	CongestionLost int64 `json:"congestion_lost"`
}

// dlink is one direction of a fabric link.
type dlink struct {
	tx, rx         *benchNode
	txPort, rxPort int
	// valid is whether the control plane sprays over it; good whether
	// the last poll found it so (age under th, no bad error verdict),
	// since goodSince.
	valid     bool
	goodSince time.Duration
	good      bool
	age       int
	up        bool
	errRate   float64
	// errBad is the last verdict on the error rate (over a poll in which
	// frames arrived); marks counts the times the link was taken out.
	errBad bool
	marks  int
	// counters at the receiver and the sender at the last poll
	rxAll, rxFCS, txData int64
	seen                 bool
}

// voaLink is a fabric link with a VOA on it.
type voaLink struct {
	fa     *benchNode
	faPort int
	fe     *benchNode
	voa    benchVOA
	// toFA says the VOA is on the fibre from the FE to the FA (the
	// inventory link's a end is the FE): the direction that corrupts.
	toFA bool
}

// failoverCtl is the recipe's control plane on the bench.
type failoverCtl struct {
	br       *benchRun
	th       int
	period   time.Duration
	poll     time.Duration
	timeout  time.Duration
	thr      float64
	portDown bool
	heal     bool
	links    []*dlink
	// base is each FA's spraying permutation per destination after the
	// bring-up, cur what it sprays over now.
	base, cur map[*benchNode]map[int][]int
	maxID     int
	// ids are the FAs' ids; drops the sum of their ReassemblyDrops at the
	// last poll.
	ids   []int
	drops int64
	clock benchSwitch
	now   time.Duration
	// dataSize is the length of a data frame on the wire (FCS included):
	// the frames sent of its size range count the data frames.
	dataSize int
	// host frames released at the last poll, summed
	host int64
	// wall time of the polls
	wall []time.Duration
}

// pollResult is what one poll saw.
type pollResult struct {
	t time.Duration
	// hostFrames released since the previous poll; skipped frames the
	// FAs' reassembly timers gave up since the previous poll.
	hostFrames, skipped int64
	// sentBy is when the frames given up had been sent by: a reassembly
	// timeout before the poll (the frame after a gap, sent no earlier than
	// the gap's, was that old when it gave the gap up).
	sentBy time.Duration
}

func newFailoverCtl(br *benchRun, p *o.Params) *failoverCtl {
	c := &failoverCtl{br: br, th: int(p.Int("th")), period: p.Duration("reach_period"), poll: p.Duration("bench_poll"),
		timeout: p.Duration("bench_reassembly_timeout"), thr: p.Float("error_threshold"), portDown: p.Bool("heal_on_port_down"),
		base: map[*benchNode]map[int][]int{}, cur: map[*benchNode]map[int][]int{},
		clock: br.FAs[0].sw, dataSize: br.cfg.FrameBytes + 4}
	for _, fa := range br.FAs {
		c.maxID = max(c.maxID, fa.ID)
		c.ids = append(c.ids, fa.ID)
		for i, port := range fa.Ports {
			var fe *benchNode
			for _, f := range br.FEs {
				if f.ID == fa.Peers[i] {
					fe = f
				}
			}
			fePort := -1
			for j, peer := range fe.Peers {
				if peer == fa.ID {
					fePort = fe.Ports[j]
				}
			}
			for _, l := range []*dlink{{tx: fa, txPort: port, rx: fe, rxPort: fePort}, {tx: fe, txPort: fePort, rx: fa, rxPort: port}} {
				l.valid, l.good, l.up = true, true, true
				c.links = append(c.links, l)
			}
		}
	}
	return c
}

// voaDir is the direction of vl whose fibre runs through the VOA (the
// inventory link's a end to its b end).
func (c *failoverCtl) voaDir(vl voaLink) *dlink {
	if vl.toFA {
		return c.link(vl.fe, vl.fa)
	}
	return c.link(vl.fa, vl.fe)
}

// link is the directed link from tx to rx.
func (c *failoverCtl) link(tx, rx *benchNode) *dlink {
	for _, l := range c.links {
		if l.tx == tx && l.rx == rx {
			return l
		}
	}
	return nil
}

// start reads the spraying the bring-up wrote and the frames given up so
// far.
func (c *failoverCtl) start(ctx context.Context) error {
	for _, fa := range c.br.FAs {
		r, err := fa.sd.Reachability(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", fa.Name, err)
		}
		d, err := fa.sd.ReassemblyDrops(ctx, c.ids)
		if err != nil {
			return fmt.Errorf("%s: %w", fa.Name, err)
		}
		for _, v := range d {
			c.drops += v
		}
		c.base[fa], c.cur[fa] = map[int][]int{}, map[int][]int{}
		for d, ports := range r {
			c.base[fa][d] = slices.Clone(ports)
			c.cur[fa][d] = slices.Clone(ports)
		}
	}
	return nil
}

// portRead is what one poll read of one port: its link state and
// reachability age, and its counters; ok is false when the port is gone.
type portRead struct {
	ok   bool
	link sd.FabricLink
	cnt  p4switch.PortFrames
}

// readNode reads every fabric port of n (and an FA's host port counters
// and the frames its reassembly timer gave up, summed over the sources),
// in as few requests as the driver allows.
func (c *failoverCtl) readNode(ctx context.Context, n *benchNode) (map[int]portRead, int64, int64, error) {
	out := map[int]portRead{}
	ls, err := n.sd.FabricLinks(ctx, n.Ports, c.th)
	if p4switch.IsNotFound(err) {
		// A port is gone (a failed FE's): one by one.
		ls = nil
		for _, p := range n.Ports {
			l, err := n.sd.FabricLinks(ctx, []int{p}, c.th)
			if p4switch.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, 0, 0, fmt.Errorf("%s: %w", n.Name, err)
			}
			ls = append(ls, l...)
		}
	} else if err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %w", n.Name, err)
	}
	for _, l := range ls {
		// Only what the poll uses: the frames received and those with
		// FCS errors (the error verdict), the data frames sent (the
		// convergence measurement).
		cnt, err := n.sw.PortFramesOf(ctx, l.Port, p4switch.FrameQuery{Fields: p4switch.FramesRxAll | p4switch.FramesRxFCSErrors,
			TxSizes: p4switch.SizeRange{Min: c.dataSize, Max: c.dataSize}})
		if p4switch.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, 0, 0, fmt.Errorf("%s: %w", n.Name, err)
		}
		out[l.Port] = portRead{ok: true, link: l, cnt: cnt}
	}
	if n.FE {
		return out, 0, 0, nil
	}
	cnt, err := n.sw.PortFramesOf(ctx, n.Host, p4switch.FrameQuery{Fields: p4switch.FramesTxOK})
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %w", n.Name, err)
	}
	d, err := n.sd.ReassemblyDrops(ctx, c.ids)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %w", n.Name, err)
	}
	var drops int64
	for _, v := range d {
		drops += v
	}
	return out, cnt.TxOK, drops, nil
}

// pollOnce reads every fabric port, updates the links' validity, rewrites
// the spraying where it changed (when healing) and counts the frames the
// FAs gave up.
func (c *failoverCtl) pollOnce(ctx context.Context) (pollResult, error) {
	wall := time.Now()
	t, err := c.clock.Clock(ctx)
	if err != nil {
		return pollResult{}, err
	}
	c.now = t
	res := pollResult{t: t}
	nodes := c.br.nodes()
	reads := make([]map[int]portRead, len(nodes))
	hosts := make([]int64, len(nodes))
	drops := make([]int64, len(nodes))
	idx := map[*benchNode]int{}
	for i, n := range nodes {
		idx[n] = i
	}
	if err := each(nodes, func(n *benchNode) error {
		i := idx[n]
		var err error
		reads[i], hosts[i], drops[i], err = c.readNode(ctx, n)
		return err
	}); err != nil {
		return res, err
	}
	for _, l := range c.links {
		tx := reads[idx[l.tx]][l.txPort]
		if tx.ok {
			l.txData = tx.cnt.TxSized
		}
		rx := reads[idx[l.rx]][l.rxPort]
		if !rx.ok {
			// The port is gone (a failed FE's): no news from its end.
			l.up, l.seen = false, false
			continue
		}
		all, fcs := rx.cnt.RxAll, rx.cnt.RxFCSErrors
		l.up, l.age = rx.link.Up, rx.link.Age
		if l.seen && all > l.rxAll {
			// A verdict on the error rate needs frames received.
			l.errRate = float64(fcs-l.rxFCS) / float64(all-l.rxAll)
			l.errBad = l.errRate > c.thr
		}
		l.rxAll, l.rxFCS, l.seen = all, fcs, true
		good := l.age < c.th && !l.errBad && (!c.portDown || l.up)
		switch {
		case !good:
			if l.valid {
				l.marks++
			}
			l.valid, l.good = false, false
		case !l.good:
			l.good, l.goodSince = true, t
		}
		if l.good && !l.valid && t-l.goodSince >= time.Duration(c.th)*c.period {
			l.valid = true
		}
	}
	if c.heal {
		if err := c.respray(ctx); err != nil {
			return res, err
		}
	}
	var host, dropped int64
	for i := range nodes {
		host += hosts[i]
		dropped += drops[i]
	}
	res.hostFrames, c.host = host-c.host, host
	res.skipped, c.drops = dropped-c.drops, dropped
	res.sentBy = t - c.timeout
	c.wall = append(c.wall, time.Since(wall))
	return res, nil
}

// respray writes, for every FA and destination, the links of the bring-up's
// permutation whose FE the FA reaches and that reaches the destination.
func (c *failoverCtl) respray(ctx context.Context) error {
	return each(c.br.FAs, func(fa *benchNode) error {
		for _, d := range c.br.FAs {
			if d == fa {
				continue
			}
			var keep []int
			for _, p := range c.base[fa][d.ID] {
				i := slices.Index(fa.Ports, p)
				if i < 0 {
					keep = append(keep, p)
					continue
				}
				var fe *benchNode
				for _, f := range c.br.FEs {
					if f.ID == fa.Peers[i] {
						fe = f
					}
				}
				if c.link(fa, fe).valid && c.link(fe, d).valid {
					keep = append(keep, p)
				}
			}
			if len(keep) == 0 {
				keep = c.base[fa][d.ID] // nothing better to send on
			}
			if slices.Equal(keep, c.cur[fa][d.ID]) {
				continue
			}
			if err := fa.sd.SetSpray(ctx, d.ID, keep); err != nil {
				return fmt.Errorf("%s: %w", fa.Name, err)
			}
			c.cur[fa][d.ID] = keep
		}
		return nil
	})
}

// dataSent is the data frames the senders of ls transmitted since before
// was read.
func dataSent(ls []*dlink, before map[*dlink]int64) int64 {
	var n int64
	for _, l := range ls {
		n += l.txData - before[l]
	}
	return n
}

func txData(ls []*dlink) map[*dlink]int64 {
	m := map[*dlink]int64{}
	for _, l := range ls {
		m[l] = l.txData
	}
	return m
}

func allValid(ls []*dlink) bool {
	for _, l := range ls {
		if !l.valid {
			return false
		}
	}
	return true
}

func allInvalid(ls []*dlink) bool {
	for _, l := range ls {
		if l.valid {
			return false
		}
	}
	return true
}

// findVOALinks lists the bench's fabric links with a VOA, by FA id and
// port.
func findVOALinks(pc *o.PlanContext, b *bench) []voaLink {
	var out []voaLink
	byName := map[string]*benchNode{}
	for _, n := range b.nodes() {
		byName[n.Name] = n
	}
	for _, l := range pc.Lab.Links {
		if l.VOA == nil {
			continue
		}
		a, z := byName[l.A.Device], byName[l.B.Device]
		if a == nil || z == nil {
			continue
		}
		faEnd, toFA := l.A, false
		if a.FE {
			a, z = z, a
			faEnd, toFA = l.B, true
		}
		p, err := devPortOf(pc.Lab.Devices[a.Name].Ports[faEnd.Port])
		if err != nil {
			continue
		}
		out = append(out, voaLink{fa: a, faPort: p, fe: z, voa: benchVOA{l.VOA.Device, l.VOA.Channel}, toFA: toFA})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].fa.ID != out[j].fa.ID {
			return out[i].fa.ID < out[j].fa.ID
		}
		return out[i].faPort < out[j].faPort
	})
	return out
}

// benchFormula is App. E for the bench (contract.go's Reach): one tier,
// the fibres' delay.
func benchFormula(p *o.Params, b *bench, propNs float64) (sd.Reach, error) {
	h := int(p.Int("hosts_per_fa"))
	r := sd.Reach{ClockHz: 1e9, Cycles: int(p.Duration("reach_period").Nanoseconds()), BitmapBits: int(p.Int("bitmap_bits")), MessageBytes: 24,
		HostsPerFA: h, Hosts: len(b.FAs) * h, Tiers: 1, Th: int(p.Int("th")), LinkBps: float64(p.Int("bench_link_gbps")) * 1e9,
		Prop: []time.Duration{time.Duration(propNs)}}
	if r.Cycles < 1 {
		return r, o.Inputf("reach_period %v: at least 1 ns on the bench", p.Duration("reach_period"))
	}
	return r, nil
}

// planBench is stardust-failover on a Stardust bench.
func (r *Failover) planBench(pc *o.PlanContext, b *bench) (*o.Plan, error) {
	p := pc.Params
	vls := findVOALinks(pc, b)
	if len(vls) == 0 {
		return nil, fmt.Errorf("%s: no fabric link of the Stardust bench runs through a VOA (a link's voa:), so none can be darkened or made to corrupt (simlab/benches/stardust.yaml has fa1's four through voa1)", pc.Lab.Path)
	}
	vl := vls[0]
	voaDev, _ := pc.Lab.Device(vl.voa.Device)
	maxDB := 60.0
	if voaDev != nil && voaDev.Limits != nil {
		maxDB = voaDev.Limits.MaxDB
	}
	th := int(p.Int("th"))
	if th >= sd.AgeMax {
		return nil, o.Inputf("th %d: the programs' ages saturate at %d", th, sd.AgeMax)
	}
	period, poll, timeout := p.Duration("reach_period"), p.Duration("bench_poll"), p.Duration("bench_reassembly_timeout")
	phase, bin := p.Duration("phase"), p.Duration("bin")
	if bin%poll != 0 || phase%bin != 0 {
		return nil, o.Inputf("bin %v and phase %v: expected bin a multiple of bench_poll (%v) and phase a multiple of bin", bin, phase, poll)
	}
	// Shorter than on the model (3 x): the bench's traffic is paced, not
	// Poisson, so its bins settle sooner.
	if phase < time.Duration(2*(th+4))*period {
		return nil, o.Inputf("phase %v: expected at least 2 x (th + 4) reachability periods on the bench, for the fabric to converge and settle", phase)
	}
	if timeout < 2*time.Microsecond {
		return nil, o.Inputf("bench_reassembly_timeout %v: expected at least 2 us, well above the fabric's latency", timeout)
	}
	cfg := benchConfig{LinkGbps: int(p.Int("bench_link_gbps")), HostGbps: int(p.Int("bench_host_gbps")), FrameBytes: 256,
		CreditBytes: 4096, SpeedUp: 0.03, FCIFrames: 32, ReachPeriod: period, ReasmTimeout: timeout, Replace: p.Bool("replace_program")}
	propNs := 5 * 2.0 // a 2 m patch cord when the inventory gives no length
	for _, l := range pc.Lab.Links {
		if l.VOA != nil && l.VOA.Device == vl.voa.Device && l.VOA.Channel == vl.voa.Channel && l.FibreLengthM > 0 {
			propNs = 5 * l.FibreLengthM
		}
	}
	reach, err := benchFormula(p, b, propNs)
	if err != nil {
		return nil, err
	}
	desc := b.describe(cfg.LinkGbps, cfg.HostGbps)
	fabric := fmt.Sprintf("%s; 256 B frames as cells, 4 KB credits at 0.03 speed-up, FCI at 32 frames, reachability every %v (th %d), reassembly timer %v, control plane polling every %v", desc, period, th, timeout, poll)
	sum := FailoverSummary{ModelOnly: false, MeasuredOn: "bench", Tiers: map[string]FailoverRun{}, Bench: &FailoverBench{PollUS: us(poll), ReassemblyTimeoutUS: us(timeout)}}
	var mu sync.Mutex
	done := false
	var br *benchRun
	devs := b.devices()
	plan := &o.Plan{Tables: FailoverTables(),
		Bindings: []o.Binding{{Role: "fabric", Resource: "switches with stardust_role", Detail: desc},
			{Role: "failing link", Resource: fmt.Sprintf("%s port %d to %s", vl.fa.Name, vl.faPort, vl.fe.Name), Detail: fmt.Sprintf("through %s channel %d (dark at %.0f dB)", vl.voa.Device, vl.voa.Channel, maxDB)},
			{Role: "failing FE", Resource: vl.fe.Name, Detail: "its ports deleted through the switch driver, then added back"}},
		Summary: func(partial bool) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			s := sum
			s.Partial = partial || !done
			return s, nil
		}}
	plan.Steps = append(plan.Steps, b.upStep(cfg, &br))
	plan.Steps = append(plan.Steps, &o.Step{Name: "fail and restore", Action: "measure", Devices: devs,
		Note: fmt.Sprintf("%s dark and back, %s down and back, the link corrupting and clean, %v each, on the switches' clock", vl.fa.Name+"-"+vl.fe.Name, vl.fe.Name, phase),
		Run: func(ctx context.Context, rc *o.RunContext) error {
			if br == nil {
				return fmt.Errorf("the fabric is not up")
			}
			fb := &failoverBenchRun{p: p, br: br, rc: rc, vl: vl, maxDB: maxDB, reach: reach, fabric: fabric, mu: &mu, sum: &sum}
			if err := fb.run(ctx); err != nil {
				return err
			}
			mu.Lock()
			done = true
			mu.Unlock()
			return nil
		}})
	return plan, nil
}

func us(d time.Duration) float64 { return d.Seconds() * 1e6 }

// failoverBenchRun is one run of the phases on the bench.
type failoverBenchRun struct {
	p      *o.Params
	br     *benchRun
	rc     *o.RunContext
	vl     voaLink
	maxDB  float64
	reach  sd.Reach
	fabric string
	mu     *sync.Mutex
	sum    *FailoverSummary
	ctl    *failoverCtl
	// restDB is the VOA channel as found.
	restDB float64
}

// runFor polls until the clock reaches end, calling each after every poll.
func (fb *failoverBenchRun) runFor(ctx context.Context, end time.Duration, each func(pollResult) error) error {
	c := fb.ctl
	for {
		next := c.now - c.now%c.poll + c.poll
		if next > end {
			return nil
		}
		if _, err := c.clock.WaitClock(ctx, next); err != nil {
			return err
		}
		res, err := c.pollOnce(ctx)
		if err != nil {
			return err
		}
		if each != nil {
			if err := each(res); err != nil {
				return err
			}
		}
	}
}

func (fb *failoverBenchRun) run(ctx context.Context) error {
	p, br, rc := fb.p, fb.br, fb.rc
	phase, bin, warm := p.Duration("phase"), p.Duration("bin"), p.Duration("bench_warmup")
	c := newFailoverCtl(br, p)
	fb.ctl = c
	a, err := rc.Attenuator(fb.vl.voa.Device)
	if err != nil {
		return err
	}
	if fb.restDB, err = a.Attenuation(ctx, fb.vl.voa.Channel); err != nil {
		return fmt.Errorf("%s: %w", fb.vl.voa.Device, err)
	}
	// Traffic: uniform over the other FAs' host ports at load of the
	// FA's fabric capacity, each host port's credits round robin over the
	// VOQs that send to it.
	if err := br.setFlows(ctx, br.uniformTargets); err != nil {
		return err
	}
	if err := c.start(ctx); err != nil {
		return err
	}
	const probes = 12
	// A probe sees about 100 data frames or more on the link at the
	// default load (10 us at 15 Gb/s of 256 B frames is 68).
	probe := max(2*c.period, 20*time.Microsecond)
	settle := time.Duration(c.th+2)*c.period + c.timeout
	// The phases, and after the last a reassembly timeout and two polls
	// for its lost frames to be found.
	total := warm + probes*probe + settle + 8*phase + c.timeout + 2*c.poll + c.period
	framePeriod, k, _ := pace(br.cfg.FrameBytes, p.Float("load")*br.fabricCapacity())
	batches, err := batchesFor(total, framePeriod)
	if err != nil {
		return err
	}
	if err := br.startInfra(ctx, total+c.period); err != nil {
		return err
	}
	t0, err := c.clock.Clock(ctx)
	if err != nil {
		return err
	}
	c.now = t0
	for _, n := range br.FAs {
		g := sd.Generator{AppID: appData, Port: genPort, EgressPort: n.Host, FrameBytes: br.cfg.FrameBytes, Period: framePeriod, PerBatch: k, Batches: batches,
			Cell: sd.Cell{Kind: sd.KindData, SrcFA: uint16(n.ID)}}
		if err := br.startGen(ctx, n, g); err != nil {
			return err
		}
	}
	defer br.stopAll(context.WithoutCancel(ctx), appData, appCredit, appReach, appAge)
	// Warm-up, with the control plane polling but not yet healing: the
	// ages start at SD_AGE_MAX until the first cells.
	if err := fb.runFor(ctx, t0+warm, nil); err != nil {
		return err
	}
	for _, l := range c.links {
		l.valid, l.good, l.goodSince = true, true, c.now
	}
	if err := fb.calibrate(ctx, probes, probe); err != nil {
		return err
	}
	if err := fb.runFor(ctx, c.now+settle, nil); err != nil {
		return err
	}
	for _, l := range c.links {
		if !l.good {
			return fmt.Errorf("%s -> %s not good %v after calibrating and settling (age %d, error rate %.3f)", l.tx.Name, l.rx.Name, settle, l.age, l.errRate)
		}
		l.valid = true
	}
	c.heal = true
	return fb.phases(ctx, phase, bin)
}

// calibrate finds the attenuation at which the link's receiver counts a
// frame error rate near error_rate: bisection between the channel as found
// (clean) and its maximum (dark), probe by probe, each probe measured by
// the receiving port's counters over probe. The control plane does not
// heal meanwhile; the FAs' timers give up the frames lost.
func (fb *failoverBenchRun) calibrate(ctx context.Context, probes int, probe time.Duration) error {
	c, want := fb.ctl, fb.p.Float("error_rate")
	l := fb.ctl.voaDir(fb.vl)
	lo, hi := fb.restDB, fb.maxDB
	best, bestFER := -1.0, 0.0
	for i := 0; i < probes; i++ {
		mid := (lo + hi) / 2
		if err := fb.rc.SetAttenuation(ctx, fb.vl.voa.Device, fb.vl.voa.Channel, math.Round(mid*100)/100); err != nil {
			return err
		}
		all0, fcs0 := l.rxAll, l.rxFCS
		if err := fb.runFor(ctx, c.now+probe, nil); err != nil {
			return err
		}
		n, bad := l.rxAll-all0, l.rxFCS-fcs0
		fer := 1.0
		if l.up && n > 0 {
			fer = float64(bad) / float64(n)
		}
		fb.rc.Event(results.Event{Type: "setting", Device: fb.vl.voa.Device, Message: fmt.Sprintf("calibrating: channel %d at %.2f dB, %s counted %d of %d frames with FCS errors (port %s)",
			fb.vl.voa.Channel, mid, l.rx.Name, bad, n, map[bool]string{true: "up", false: "down"}[l.up])})
		if l.up && n > 0 && fer > 0 && (best < 0 || math.Abs(math.Log(fer/want)) < math.Abs(math.Log(bestFER/want))) {
			best, bestFER = math.Round(mid*100)/100, fer
		}
		if best >= 0 && bestFER >= want/2 && bestFER <= 2*want {
			break // near enough: a few % is what is asked
		}
		if fer > want {
			hi = mid
		} else {
			lo = mid
		}
	}
	if best < 0 || bestFER < want/3 || bestFER > 3*want {
		return fmt.Errorf("%s channel %d: no attenuation between %.1f and %.1f dB gave %s's port a frame error rate within a factor 3 of %g (closest %g at %.2f dB)",
			fb.vl.voa.Device, fb.vl.voa.Channel, fb.restDB, fb.maxDB, l.rx.Name, want, bestFER, best)
	}
	fb.mu.Lock()
	fb.sum.Bench.CorruptDB, fb.sum.Bench.CorruptFER = best, bestFER
	fb.mu.Unlock()
	return fb.rc.SetAttenuation(ctx, fb.vl.voa.Device, fb.vl.voa.Channel, fb.restDB)
}

// phases runs before, link-down, link-up, fe-down, fe-up, corrupt, clean.
func (fb *failoverBenchRun) phases(ctx context.Context, phase, bin time.Duration) error {
	bp, err := fb.newBenchPhases(ctx, phase, bin)
	if err != nil {
		return err
	}
	cong0, err := fb.congestion(ctx)
	if err != nil {
		return err
	}
	for _, ph := range bp.list(ctx) {
		if err := bp.runPhase(ctx, ph); err != nil {
			return err
		}
	}
	// The last phase's lost frames: one more window of polls.
	end := bp.c.now
	if err := fb.runFor(ctx, end+bp.late, func(r pollResult) error {
		if r.sentBy <= end {
			bp.prev.skips = append(bp.prev.skips, r)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := bp.finish(bp.prev); err != nil {
		return err
	}
	congEnd, err := fb.congestion(ctx)
	if err != nil {
		return err
	}
	bp.totals(congEnd - cong0)
	return nil
}

// benchPhase is a phase of the bench's run.
type benchPhase struct {
	name   string
	apply  func() error
	failed []*dlink // links whose data is lost while they are used (down events)
	down   func() bool
	ages   []*dlink // receiving ends whose age reaching th is reachability's detection
	up     func() bool
}

// pendingPhase is a phase whose polls are done, waiting for the frames it
// lost to be found.
type pendingPhase struct {
	ph       benchPhase
	at       time.Duration
	ev       FailoverEvent
	skips    []pollResult
	bins     []float64
	lastData time.Duration
}

// benchPhases is the bench's phases under way: the tables, the baseline
// and the worst figures over the events so far.
type benchPhases struct {
	fb         *failoverBenchRun
	c          *failoverCtl
	phase, bin time.Duration
	tl, et, ct *results.TableWriter
	frameBits  float64
	// faLink: the direction through the VOA first (the one that
	// corrupts), then the other; feLinks every link of the FE, feToFA
	// those from it.
	faLink, feLinks, feToFA []*dlink
	formula, formulaPD      float64
	bound, vbound           float64
	// A frame lost is given up a reassembly timeout after the frame
	// after it was sent, and found at the next poll: each poll's are the
	// phase's in which they had been sent (by that bound, a timeout
	// before the poll; a frame sent by the instant of an event and lost
	// in flight is the event's), and an event's row waits for them.
	late                                   time.Duration
	run                                    FailoverRun
	base, floor                            float64
	worstE, worstBound, validMin, validMax float64
	lostAfter, lostUp                      int64
	prev                                   *pendingPhase
}

func (fb *failoverBenchRun) newBenchPhases(ctx context.Context, phase, bin time.Duration) (*benchPhases, error) {
	c, vl := fb.ctl, fb.vl
	fe := vl.fe
	bp := &benchPhases{fb: fb, c: c, phase: phase, bin: bin, base: -1, validMin: math.Inf(1),
		frameBits: float64((fb.br.cfg.FrameBytes + wireExtra) * 8),
		formula:   us(fb.reach.Period()) * float64(fb.reach.Messages()*(2*fb.reach.Tiers-1)*fb.reach.Th),
		formulaPD: us(fb.reach.Recovery()),
		bound:     us(time.Duration(c.th+1)*c.period + c.poll),
		vbound:    us(time.Duration(c.th+1)*c.period + 2*c.poll),
		late:      c.timeout + 2*c.poll}
	bp.run = FailoverRun{Fabric: fb.fabric, FormulaUS: bp.formula, FormulaPDUS: bp.formulaPD, Events: map[string]FailoverEvent{}}
	bp.faLink = []*dlink{c.link(vl.fa, fe), c.link(fe, vl.fa)}
	if vl.toFA {
		bp.faLink[0], bp.faLink[1] = bp.faLink[1], bp.faLink[0]
	}
	for _, l := range c.links {
		if l.tx == fe || l.rx == fe {
			bp.feLinks = append(bp.feLinks, l)
		}
	}
	// An FE that fails sends no reachability cells: the FAs' ends of its
	// links find that; its own ends are gone with it.
	for _, l := range bp.feLinks {
		if l.tx == fe {
			bp.feToFA = append(bp.feToFA, l)
		}
	}
	var err error
	for _, t := range []struct {
		w    **results.TableWriter
		name string
	}{{&bp.tl, "failover_timeline"}, {&bp.et, "failover_events"}, {&bp.ct, "failover_convergence"}} {
		if *t.w, err = fb.rc.Table(t.name); err != nil {
			return nil, err
		}
	}
	return bp, nil
}

// list is the phases: before, link-down, link-up, fe-down, fe-up,
// corrupt, clean.
func (bp *benchPhases) list(ctx context.Context) []benchPhase {
	fb, vl, faLink, feLinks, feToFA := bp.fb, bp.fb.vl, bp.faLink, bp.feLinks, bp.feToFA
	setVOA := func(dB float64) func() error {
		return func() error { return fb.rc.SetAttenuation(ctx, vl.voa.Device, vl.voa.Channel, dB) }
	}
	fePorts := append([]int{}, vl.fe.Ports...)
	corruptDB := fb.sum.Bench.CorruptDB
	return []benchPhase{
		{name: "before", apply: func() error { return nil }},
		{name: "link-down", apply: setVOA(fb.maxDB), failed: faLink, ages: faLink, down: func() bool { return allInvalid(faLink) }},
		{name: "link-up", apply: setVOA(fb.restDB), up: func() bool { return allValid(faLink) }},
		{name: "fe-down", apply: func() error { return fb.feDown(ctx, fePorts) }, failed: feLinks, ages: feToFA, down: func() bool { return allInvalid(feToFA) }},
		{name: "fe-up", apply: func() error { return fb.feUp(ctx, fePorts) }, up: func() bool { return allValid(feLinks) }},
		{name: "corrupt", apply: setVOA(corruptDB), failed: faLink[:1], down: func() bool { return !faLink[0].valid }},
		{name: "clean", apply: setVOA(fb.restDB), up: func() bool { return faLink[0].valid }},
	}
}

// runPhase applies a phase and polls through it; the previous phase is
// finished once the frames it lost have been found.
func (bp *benchPhases) runPhase(ctx context.Context, ph benchPhase) error {
	fb, c := bp.fb, bp.c
	if ph.name == "clean" {
		if err := bp.awaitOut(ctx); err != nil {
			return err
		}
	}
	if err := ph.apply(); err != nil {
		return err
	}
	at := c.now
	cur := &pendingPhase{ph: ph, at: at, ev: FailoverEvent{AtUS: us(at)}, lastData: -1}
	marks0 := 0
	for _, l := range ph.failed {
		marks0 += l.marks
	}
	congBefore, err := fb.congestion(ctx)
	if err != nil {
		return err
	}
	pp := &phasePoll{bp: bp, cur: cur, binEnd: at + bp.bin, prevData: txData(ph.failed)}
	if err := fb.runFor(ctx, at+bp.phase, pp.poll); err != nil {
		return err
	}
	congAfter, err := fb.congestion(ctx)
	if err != nil {
		return err
	}
	cur.ev.CongestionLost = congAfter - congBefore
	for _, l := range ph.failed {
		cur.ev.Marks += l.marks
	}
	cur.ev.Marks -= marks0
	if bp.prev != nil {
		if err := bp.finish(bp.prev); err != nil {
			return err
		}
	}
	bp.prev = cur
	return nil
}

// awaitOut polls, at most a phase, until the corrupting link is out and
// its last verdict bad. The corrupting link comes back after th good
// periods of reachability cells alone and is taken out again when data
// crosses it (the marks): cleaning it at such a poll makes valid measure
// th good periods after cleaning, not the rest of a wait already begun.
// Its polls' lost frames are the corrupt phase's.
func (bp *benchPhases) awaitOut(ctx context.Context) error {
	errDone := errors.New("done")
	err := bp.fb.runFor(ctx, bp.c.now+bp.phase, func(r pollResult) error {
		bp.prev.skips = append(bp.prev.skips, r)
		if l := bp.faLink[0]; !l.valid && !l.good {
			return errDone
		}
		return nil
	})
	if err != nil && err != errDone {
		return err
	}
	return nil
}

// phasePoll is a phase's polling: its current bin and whether data has
// stopped going onto the failed links.
type phasePoll struct {
	bp                 *benchPhases
	cur                *pendingPhase
	stopped            bool
	binFrames, binLost int64
	binEnd             time.Duration
	prevData           map[*dlink]int64
}

// poll takes one poll's result into the phase.
func (pp *phasePoll) poll(r pollResult) error {
	bp, cur := pp.bp, pp.cur
	ph, ev := cur.ph, &cur.ev
	// Converged: data stopped going onto the failed links, the
	// first poll after detection at which none had since the last.
	if n := dataSent(ph.failed, pp.prevData); n > 0 && !pp.stopped {
		cur.lastData = r.t
	} else if n == 0 && ev.DetectUS != nil {
		pp.stopped = true
	}
	pp.prevData = txData(ph.failed)
	if err := bp.assign(r, cur); err != nil {
		return err
	}
	pp.detect(r)
	pp.binFrames += r.hostFrames
	pp.binLost += r.skipped
	if r.t < pp.binEnd {
		return nil
	}
	b := float64(pp.binFrames)
	cur.bins = append(cur.bins, b)
	norm := any(nil)
	if bp.base > 0 {
		norm = b / bp.base
	}
	if err := bp.tl.Write(1, us(pp.binEnd-bp.bin), ph.name, b*bp.frameBits/bp.bin.Seconds()/1e9, norm, pp.binLost); err != nil {
		return err
	}
	pp.binFrames, pp.binLost = 0, 0
	pp.binEnd += bp.bin
	return nil
}

// assign gives a poll's lost frames to the phase they were sent in. A
// failure loses the frames in flight at its instant; a restore loses
// none: a frame lost just before it whose successor left in the poll
// after it is bounded by the successor's send (sentBy), so the restore's
// first poll interval of bounds is the previous phase's. The first poll
// of the current phase's own finishes the previous one.
func (bp *benchPhases) assign(r pollResult, cur *pendingPhase) error {
	if bp.prev != nil && (r.sentBy < cur.at || (cur.ph.up != nil && r.sentBy <= cur.at+bp.c.poll)) {
		bp.prev.skips = append(bp.prev.skips, r)
		return nil
	}
	cur.skips = append(cur.skips, r)
	if bp.prev != nil {
		if err := bp.finish(bp.prev); err != nil {
			return err
		}
		bp.prev = nil
	}
	return nil
}

// detect notes the first poll at which the phase's detection,
// reachability's and validity hold.
func (pp *phasePoll) detect(r pollResult) {
	ph, ev, at, c := pp.cur.ph, &pp.cur.ev, pp.cur.at, pp.bp.c
	if ph.down != nil && ev.DetectUS == nil && ph.down() {
		ev.DetectUS = ptr(us(r.t - at))
	}
	if len(ph.ages) > 0 && ev.ReachUS == nil {
		all := true
		for _, l := range ph.ages {
			all = all && l.age >= c.th
		}
		if all {
			ev.ReachUS = ptr(us(r.t - at))
		}
	}
	if ph.up != nil && ev.ValidUS == nil && ph.up() {
		ev.ValidUS = ptr(us(r.t - at))
	}
}

// finish completes a phase once its lost frames are in: the first phase
// sets the baseline; an event gets its dip, recovery and convergence, its
// rows and its place in the summary.
func (bp *benchPhases) finish(pd *pendingPhase) error {
	ph, ev := pd.ph, &pd.ev
	for _, r := range pd.skips {
		ev.CellsLost += r.skipped
	}
	if ph.name == "before" {
		var sd float64
		bp.base, sd = meanSD(pd.bins[len(pd.bins)/2:])
		// The bench's paced traffic spreads its bins by a few
		// tenths of a %: its normal range is at least 1%.
		bp.floor = 1 - max(3*sd/bp.base, 0.01)
		return nil
	}
	ev.Dip = 1
	last := -1
	for i, b := range pd.bins {
		ev.Dip = min(ev.Dip, b/bp.base)
		if b/bp.base < bp.floor {
			last = i
		}
	}
	if last >= 0 {
		ev.RecoveredUS = ptr(us(time.Duration(last+1) * bp.bin))
	}
	if ph.down != nil {
		bp.converged(pd)
	}
	if ph.up != nil {
		bp.lostUp += ev.CellsLost
		if ev.ValidUS != nil {
			bp.validMin = min(bp.validMin, *ev.ValidUS/us(time.Duration(bp.c.th)*bp.c.period))
			bp.validMax = max(bp.validMax, *ev.ValidUS/bp.vbound)
		} else {
			bp.validMax = math.Inf(1)
		}
	}
	if err := bp.writeEvent(ph, ev); err != nil {
		return err
	}
	fb := bp.fb
	fb.mu.Lock()
	bp.run.Events[ph.name] = *ev
	bp.run.WorstOverFormula = bp.worstE
	fb.sum.Tiers["t1"] = bp.run
	fb.sum.WorstOverFormula = bp.worstE
	fb.mu.Unlock()
	fb.rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("bench, %s: detect %s, reachability %s, converged %s, valid %s us; %d frames given up as lost, %d lost to congestion, dip %.3f, recovered %s us, taken out %d times (App. E %.1f us, %.1f with pd)",
		ph.name, fmtp(ev.DetectUS), fmtp(ev.ReachUS), fmtp(ev.ConvergedUS), fmtp(ev.ValidUS), ev.CellsLost, ev.CongestionLost, ev.Dip, fmtp(ev.RecoveredUS), ev.Marks, bp.formula, bp.formulaPD)})
	return nil
}

// converged sets a failure's convergence (the last poll at which data
// went onto its links), against App. E's and the bound, and counts the
// frames lost after it (a corrupting link's aside).
func (bp *benchPhases) converged(pd *pendingPhase) {
	conv := 0.0
	if pd.lastData >= 0 {
		conv = us(pd.lastData - pd.at)
	}
	pd.ev.ConvergedUS = ptr(conv)
	bp.worstE = max(bp.worstE, conv/bp.formulaPD)
	bp.worstBound = max(bp.worstBound, conv/bp.bound)
	after := pd.at + time.Duration(conv*1e3) + bp.late
	for _, r := range pd.skips {
		if r.t > after && pd.ph.name != "corrupt" {
			bp.lostAfter += r.skipped
		}
	}
}

// writeEvent writes an event's row and a failure's convergence rows.
func (bp *benchPhases) writeEvent(ph benchPhase, ev *FailoverEvent) error {
	var fo, fopd any
	if ph.down != nil {
		fo, fopd = bp.formula, bp.formulaPD
	}
	if err := bp.et.Write(1, ph.name, ev.AtUS, nilable(ev.DetectUS), nilable(ev.ConvergedUS), nilable(ev.ValidUS), fo, fopd, ev.CellsLost, ev.CongestionLost, ev.Dip, nilable(ev.RecoveredUS), nilable(ev.ReachUS), "bench"); err != nil {
		return err
	}
	if ph.down == nil {
		return nil
	}
	for _, row := range []struct {
		src string
		v   any
	}{{"bench", *ev.ConvergedUS}, {"bench reachability", nilable(ev.ReachUS)}, {"App. E", bp.formula}, {"App. E with pd", bp.formulaPD}} {
		if row.v == nil {
			continue
		}
		if err := bp.ct.Write(1, ph.name, row.src, row.v); err != nil {
			return err
		}
	}
	return nil
}

// totals puts the run's figures over every event into the summary, and
// the polls' wall time into the events.
func (bp *benchPhases) totals(congestion int64) {
	c, fb := bp.c, bp.fb
	var wsum, wmax time.Duration
	for _, w := range c.wall {
		wsum += w
		wmax = max(wmax, w)
	}
	fb.mu.Lock()
	defer fb.mu.Unlock()
	bs := fb.sum.Bench
	bs.ConvergedOverBound, bs.ValidMinOverTh, bs.ValidMaxOverBound = bp.worstBound, bp.validMin, bp.validMax
	bs.LostAfterConverged, bs.LostInUpPhases, bs.CongestionLost = bp.lostAfter, bp.lostUp, congestion
	bs.Polls = len(c.wall)
	if len(c.wall) > 0 {
		fb.rc.Event(results.Event{Type: "measurement", Message: fmt.Sprintf("%d polls of every switch took %.3f ms of wall time on average, %.3f ms at most (the simulated switches' clock stands still meanwhile; a real switch's does not)",
			len(c.wall), wsum.Seconds()*1e3/float64(len(c.wall)), wmax.Seconds()*1e3)})
	}
}

// feDown takes every port of the FE down through the switch driver (a dead
// FE: no cell crosses its links, no reachability cell leaves it),
// journalling the port's return.
func (fb *failoverBenchRun) feDown(ctx context.Context, ports []int) error {
	fe := fb.vl.fe
	for _, port := range ports {
		if fb.rc.FirstTouch(fmt.Sprintf("stardust/fe-down/%s/%d", fe.Name, port)) {
			if err := fb.rc.Journal(fe.Name, o.Undo{Kind: o.UndoTofinoAddPort, Desc: fmt.Sprintf("add back port %d (%d Gb/s) of %s, taken down to fail the FE", port, fb.br.cfg.LinkGbps, fe.Name),
				Args: map[string]any{"port": port, "gbps": fb.br.cfg.LinkGbps, "fec": fb.br.FEC}}); err != nil {
				return err
			}
		}
		if err := fe.sw.DeletePort(ctx, port); err != nil {
			return fmt.Errorf("%s: %w", fe.Name, err)
		}
	}
	fb.rc.Event(results.Event{Type: "setting", Device: fe.Name, Message: fmt.Sprintf("FE down: ports %v deleted", ports)})
	return nil
}

func (fb *failoverBenchRun) feUp(ctx context.Context, ports []int) error {
	fe := fb.vl.fe
	for _, port := range ports {
		if err := fe.sw.AddPort(ctx, port, fb.br.cfg.LinkGbps, fb.br.FEC); err != nil {
			return fmt.Errorf("%s: %w", fe.Name, err)
		}
	}
	fb.rc.Event(results.Event{Type: "setting", Device: fe.Name, Message: fmt.Sprintf("FE up: ports %v added back at %d Gb/s", ports, fb.br.cfg.LinkGbps)})
	return nil
}

// congestion is the frames lost to full queues so far: the FEs' fabric
// ports' and the FAs' recirculation queues.
func (fb *failoverBenchRun) congestion(ctx context.Context) (int64, error) {
	var n int64
	for _, fa := range fb.br.FAs {
		d, err := fa.sd.QueueDrops(ctx, []int{recircPort}, 0)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", fa.Name, err)
		}
		n += d[0]
	}
	for _, fe := range fb.br.FEs {
		for _, port := range fe.Ports {
			d, err := fe.sd.QueueDrops(ctx, []int{port}, 0)
			if p4switch.IsNotFound(err) {
				continue
			}
			if err != nil {
				return 0, fmt.Errorf("%s: %w", fe.Name, err)
			}
			n += d[0]
		}
	}
	return n, nil
}
