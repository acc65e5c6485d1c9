package hostagent

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// REACToR host control on a Linux host, with tc (iproute2):
//
//   - the interface's root qdisc is an htb (handle 1:) under one class 1:1
//     at the link rate; the EPS class is 1:2 (the default class, a pfifo
//     leaf) and destination k (from 0) is class 1:(0x10+k) with a plug
//     leaf qdisc, selected by a u32 filter on the destination address;
//   - a class's rate limit is its htb rate and ceil;
//   - pause and unpause are the plug leaf's "buffer" and
//     "release_indefinite": packets of a paused class wait in host memory
//     (REACToR §3.1), the rest of the host's traffic flows;
//   - with pfc, the filters also set the packet's priority (skbedit
//     priority: 1..7 for destinations, 0 for the EPS class) and the agent
//     checks with "dcb pfc show" that PFC is on for those priorities and
//     off for 0: the REACToR then pauses classes with PFC frames that the
//     NIC obeys (§3.4), and the agent never sees them;
//   - the demand report is each leaf's backlog ("tc -s -j qdisc show").
//
// Heartbeats set the REACToR clock and apply the period's circuit rate
// limits in one tc batch. The agent does not switch classes slot by slot
// itself: an exec of tc takes about a millisecond, ten times a slot.

// TCOptions configure the Linux implementation.
type TCOptions struct {
	// TC and DCB are the commands (default: "tc" and "dcb" from PATH).
	TC, DCB string
	// IsRoot says whether the agent may change tc (default: euid 0).
	IsRoot func() bool
	// SysClassNet is where interface speeds are read (default
	// /sys/class/net).
	SysClassNet string
	// Clock is the host's clock (default RealClock).
	Clock Clock
	// Dial and Listen carry the flows and the sink (defaults: the
	// kernel's).
	Dial   DialFunc
	Listen ListenFunc
	// Hostname names this host in flows.
	Hostname string
	Logger   *slog.Logger
}

// tcReactor implements ReactorHost with tc.
type tcReactor struct {
	o       TCOptions
	tc, dcb string
	why     string // why host control is not available ("" if it is)

	mu        sync.Mutex
	setup     *ReactorSetup
	classes   []*tcClass // destinations, then the EPS class
	schedules map[int64]ReactorSchedule
	hb        *ReactorHeartbeat
	hbAt      time.Duration // the local clock when the heartbeat came
	windows   []ReactorWindow
	seq       uint64
	traffic   *traffic
}

type tcClass struct {
	ReactorClass
	minor    int
	open     int64 // REACToR clock of the unpause that opened a window; -1 none
	openSent int64
}

// NewTCReactor returns the Linux implementation.
func NewTCReactor(o TCOptions) ReactorHost {
	if o.IsRoot == nil {
		o.IsRoot = func() bool { return os.Geteuid() == 0 }
	}
	if o.SysClassNet == "" {
		o.SysClassNet = "/sys/class/net"
	}
	if o.Clock == nil {
		o.Clock = RealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	r := &tcReactor{o: o, schedules: map[int64]ReactorSchedule{}}
	find := func(name, given string) (string, error) {
		if given != "" {
			return exec.LookPath(given)
		}
		return exec.LookPath(name)
	}
	var err error
	switch {
	case runtime.GOOS != "linux":
		r.why = "REACToR host control uses Linux tc; this host runs " + runtime.GOOS
	default:
		if r.tc, err = find("tc", o.TC); err != nil {
			r.why = "tc (iproute2) not found: " + err.Error()
		} else if !o.IsRoot() {
			r.why = fmt.Sprintf("changing tc classes needs root; the agent runs as uid %d", os.Geteuid())
		}
	}
	r.dcb, _ = find("dcb", o.DCB)
	r.traffic = newTraffic(o.Hostname, o.Dial, o.Listen, r.clock, o.Logger)
	return r
}

func (r *tcReactor) notAvailable() error {
	if r.why == "" {
		return nil
	}
	return apiErr(KindNotAvailable, "not available on this host: %s", r.why)
}

// clock is the REACToR clock: the controller's, as the last heartbeat set
// it; before one, the host's own.
func (r *tcReactor) clock() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clockLocked()
}

func (r *tcReactor) clockLocked() int64 {
	now := r.o.Clock()
	if r.hb == nil {
		return int64(now)
	}
	return r.hb.StartNs + int64(now-r.hbAt)
}

// run runs tc with args, or "tc -batch -" with the lines on stdin when
// args is nil.
func (r *tcReactor) run(ctx context.Context, lines []string, args ...string) ([]byte, error) {
	if args == nil {
		args = []string{"-batch", "-"}
	}
	cmd := exec.CommandContext(ctx, r.tc, args...)
	if lines != nil {
		cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		what := "tc " + strings.Join(args, " ")
		if lines != nil {
			what += ": " + strings.Join(lines, "; ")
		}
		return nil, apiErr(KindFailed, "%s: %s", truncateMsg(what, 300), msg)
	}
	return stdout.Bytes(), nil
}

func truncateMsg(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func bits(bps float64) string { return strconv.FormatFloat(bps, 'f', 0, 64) + "bit" }

func (c *tcClass) handle() string { return fmt.Sprintf("1:%x", c.minor) }
func (c *tcClass) leaf() string   { return fmt.Sprintf("%x:", c.minor) }

func (r *tcReactor) Status(ctx context.Context) (ReactorStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := ReactorStatus{Available: r.why == "", Reason: r.why, Backend: "tc", ClockNs: r.clockLocked()}
	if r.setup != nil {
		s := *r.setup
		st.Setup = &s
	}
	for _, c := range r.classes {
		st.Classes = append(st.Classes, c.ReactorClass)
	}
	if r.hb != nil {
		h := *r.hb
		st.Heartbeat = &h
		if s, ok := r.schedules[h.Period]; ok {
			st.Schedule = &s
		}
	}
	if st.Schedule == nil {
		var last int64 = -1
		for p := range r.schedules {
			last = max(last, p)
		}
		if s, ok := r.schedules[last]; ok {
			st.Schedule = &s
		}
	}
	return st, nil
}

// pfcCheck says whether PFC is on for priorities 1..n and off for 0 on
// iface, per "dcb pfc show dev IFACE prio-pfc".
func (r *tcReactor) pfcCheck(ctx context.Context, iface string, n int) error {
	if r.dcb == "" {
		return apiErr(KindNotAvailable, "not available on this host: pfc: dcb (iproute2) not found, so the NIC's PFC cannot be checked; set pfc false to pause classes through the agent")
	}
	cmd := exec.CommandContext(ctx, r.dcb, "pfc", "show", "dev", iface, "prio-pfc")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return apiErr(KindNotAvailable, "not available on this host: pfc on %s: dcb pfc show: %s (a NIC without DCB support cannot obey PFC frames; set pfc false)",
			iface, cmp.Or(strings.TrimSpace(stderr.String()), err.Error()))
	}
	on := map[int]bool{}
	for _, f := range strings.Fields(stdout.String()) {
		p, v, ok := strings.Cut(f, ":")
		if n, err := strconv.Atoi(p); ok && err == nil {
			on[n] = v == "on"
		}
	}
	var off []string
	for p := 1; p <= n; p++ {
		if !on[p] {
			off = append(off, strconv.Itoa(p))
		}
	}
	switch {
	case len(off) > 0:
		return apiErr(KindNotAvailable, "not available on this host: pfc on %s: PFC is off for priorities %s (dcb pfc set dev %s prio-pfc %s:on ...), or set pfc false",
			iface, strings.Join(off, ", "), iface, off[0])
	case on[0]:
		return apiErr(KindNotAvailable, "not available on this host: pfc on %s: PFC is on for priority 0, which carries the EPS class that must never pause (REACToR §3.2)", iface)
	}
	return nil
}

// linkRate reads the interface's speed (Mb/s) from sysfs.
func (r *tcReactor) linkRate(iface string) (float64, error) {
	b, err := os.ReadFile(filepath.Join(r.o.SysClassNet, iface, "speed"))
	if err != nil {
		return 0, apiErr(KindBadRequest, "link_bps: cannot read %s's speed (%v); give link_bps", iface, err)
	}
	mbps, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil || mbps <= 0 {
		return 0, apiErr(KindBadRequest, "link_bps: %s reports speed %q; give link_bps", iface, strings.TrimSpace(string(b)))
	}
	return mbps * 1e6, nil
}

func (r *tcReactor) Setup(ctx context.Context, s ReactorSetup) error {
	if err := r.notAvailable(); err != nil {
		return err
	}
	if s.LinkBps == 0 {
		l, err := r.linkRate(s.Interface)
		if err != nil {
			return err
		}
		s.LinkBps = l
	}
	if s.EPSBps > s.LinkBps {
		return apiErr(KindBadRequest, "eps_bps %g is above the link's %g b/s", s.EPSBps, s.LinkBps)
	}
	if s.EPSBps < 8 {
		return apiErr(KindBadRequest, "eps_bps %g: an htb class needs a rate of at least 8 bit/s; on a Linux host the EPS class keeps one (limit it to 8 for next to nothing)", s.EPSBps)
	}
	if s.PFC {
		if err := r.pfcCheck(ctx, s.Interface, len(s.Destinations)); err != nil {
			return err
		}
	}
	dev := "dev " + s.Interface
	var classes []*tcClass
	lines := []string{
		"qdisc add " + dev + " root handle 1: htb default 2",
		"class add " + dev + " parent 1: classid 1:1 htb rate " + bits(s.LinkBps) + " ceil " + bits(s.LinkBps),
	}
	for k, d := range s.Destinations {
		p, _ := ParsePrefix(d.Address)
		c := &tcClass{ReactorClass: ReactorClass{ID: d.Name, Address: p.String(), RateBps: s.LinkBps}, minor: 0x10 + k, open: -1}
		if s.PFC {
			c.Priority = k + 1
		}
		c.Handle = c.handle()
		proto, match := "ip", "ip dst"
		if p.Addr().Is6() {
			proto, match = "ipv6", "ip6 dst"
		}
		action := ""
		if s.PFC {
			action = fmt.Sprintf(" action skbedit priority %d", c.Priority)
		}
		lines = append(lines,
			"class add "+dev+" parent 1:1 classid "+c.handle()+" htb rate "+bits(s.LinkBps)+" ceil "+bits(s.LinkBps),
			"qdisc add "+dev+" parent "+c.handle()+" handle "+c.leaf()+" plug limit 100000000",
			"qdisc change "+dev+" handle "+c.leaf()+" plug release_indefinite",
			fmt.Sprintf("filter add %s parent 1: protocol %s prio %d u32 match %s %s flowid %s%s", dev, proto, k+1, match, p, c.handle(), action))
		classes = append(classes, c)
	}
	eps := &tcClass{ReactorClass: ReactorClass{ID: ReactorEPS, RateBps: s.EPSBps}, minor: 2, open: -1}
	eps.Handle = eps.handle()
	lines = append(lines,
		"class add "+dev+" parent 1:1 classid 1:2 htb rate "+bits(s.EPSBps)+" ceil "+bits(s.EPSBps),
		"qdisc add "+dev+" parent 1:2 handle 2: pfifo limit 10000")
	classes = append(classes, eps)

	r.mu.Lock()
	old := r.setup
	r.mu.Unlock()
	// Start from the interface's default qdisc; an interface that has
	// none of ours answers "No such file or directory", which is fine.
	for _, iface := range uniq(s.Interface, old) {
		if _, err := r.run(ctx, nil, "qdisc", "del", "dev", iface, "root"); err != nil && !strings.Contains(err.Error(), "No such file") && !strings.Contains(err.Error(), "Cannot delete qdisc with handle of zero") {
			return err
		}
	}
	if _, err := r.run(ctx, lines); err != nil {
		// Leave nothing half made.
		r.run(ctx, nil, "qdisc", "del", "dev", s.Interface, "root")
		r.mu.Lock()
		r.setup, r.classes = nil, nil
		r.mu.Unlock()
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setup, r.classes = &s, classes
	r.o.Logger.Info("reactor classes set up", "interface", s.Interface, "destinations", len(s.Destinations), "pfc", s.PFC)
	return nil
}

func uniq(iface string, old *ReactorSetup) []string {
	if old == nil || old.Interface == iface {
		return []string{iface}
	}
	return []string{old.Interface, iface}
}

func (r *tcReactor) Teardown(ctx context.Context) error {
	r.traffic.stopAll()
	r.mu.Lock()
	s := r.setup
	r.setup, r.classes, r.schedules, r.hb = nil, nil, map[int64]ReactorSchedule{}, nil
	r.mu.Unlock()
	if s == nil {
		return nil
	}
	if err := r.notAvailable(); err != nil {
		return err
	}
	_, err := r.run(ctx, nil, "qdisc", "del", "dev", s.Interface, "root")
	return err
}

// class finds a class by id; r.mu held.
func (r *tcReactor) class(id string) (*tcClass, error) {
	if r.setup == nil {
		return nil, apiErr(KindConflict, "no classes: PUT /v1/reactor/classes first")
	}
	for _, c := range r.classes {
		if c.ID == id {
			return c, nil
		}
	}
	var ids []string
	for _, c := range r.classes {
		ids = append(ids, c.ID)
	}
	return nil, apiErr(KindNotFound, "no class %q (classes: %s)", id, strings.Join(ids, ", "))
}

func (r *tcReactor) Pause(ctx context.Context, p ReactorPause) error {
	if err := r.notAvailable(); err != nil {
		return err
	}
	r.mu.Lock()
	var lines []string
	var touched []*tcClass
	for _, set := range []struct {
		ids    []string
		paused bool
		verb   string
	}{{p.Pause, true, "buffer"}, {p.Unpause, false, "release_indefinite"}} {
		for _, id := range set.ids {
			c, err := r.class(id)
			if err != nil {
				r.mu.Unlock()
				return err
			}
			lines = append(lines, "qdisc change dev "+r.setup.Interface+" handle "+c.leaf()+" plug "+set.verb)
			touched = append(touched, c)
		}
	}
	iface := r.setup.Interface
	r.mu.Unlock()
	before, _ := r.stats(ctx, iface)
	if _, err := r.run(ctx, lines); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clockLocked()
	paused := map[string]bool{}
	for _, id := range p.Pause {
		paused[id] = true
	}
	for _, c := range touched {
		sent := before[c.leaf()].Bytes
		switch {
		case paused[c.ID] && !c.Paused && c.open >= 0:
			r.windows = append(r.windows, ReactorWindow{Seq: r.seq, Period: -1, Slot: -1, Class: c.ID, OpenNs: c.open, CloseNs: now,
				RateBps: c.RateBps, WireBytes: sent - c.openSent, Bytes: sent - c.openSent})
			r.seq++
			c.open = -1
		case !paused[c.ID] && c.Paused:
			c.open, c.openSent = now, sent
		}
		c.Paused = paused[c.ID]
	}
	if len(r.windows) > keepWindows {
		r.windows = slices.Delete(r.windows, 0, len(r.windows)-keepWindows)
	}
	return nil
}

// keepWindows bounds the window log.
const keepWindows = 1 << 16

func (r *tcReactor) SetRates(ctx context.Context, x ReactorRates) error {
	if err := r.notAvailable(); err != nil {
		return err
	}
	r.mu.Lock()
	if r.setup == nil {
		r.mu.Unlock()
		return apiErr(KindConflict, "no classes: PUT /v1/reactor/classes first")
	}
	var lines []string
	var set []*tcClass
	ids := make([]string, 0, len(x.RatesBps))
	for id := range x.RatesBps {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		c, err := r.class(id)
		if err != nil {
			r.mu.Unlock()
			return err
		}
		v := x.RatesBps[id]
		if v > r.setup.LinkBps {
			r.mu.Unlock()
			return apiErr(KindBadRequest, "rates_bps[%s] = %g is above the link's %g b/s", id, v, r.setup.LinkBps)
		}
		lines = append(lines, fmt.Sprintf("class change dev %s parent 1:1 classid %s htb rate %s ceil %s", r.setup.Interface, c.handle(), bits(v), bits(v)))
		set = append(set, c)
	}
	r.mu.Unlock()
	if _, err := r.run(ctx, lines); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range set {
		c.RateBps = x.RatesBps[c.ID]
	}
	return nil
}

func (r *tcReactor) SetSchedule(ctx context.Context, s ReactorSchedule) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.setup == nil {
		return apiErr(KindConflict, "no classes: PUT /v1/reactor/classes first")
	}
	for k, sl := range s.Slots {
		if sl.Dst == "" {
			continue
		}
		if _, err := r.class(sl.Dst); err != nil {
			return apiErr(KindBadRequest, "slots[%d]: %v", k, err.(*APIError).Message)
		}
		if sl.RateBps > r.setup.LinkBps {
			return apiErr(KindBadRequest, "slots[%d]: rate_bps %g is above the link's %g b/s", k, sl.RateBps, r.setup.LinkBps)
		}
	}
	r.schedules[s.Period] = s
	// Keep the schedules of the last few periods only.
	for p := range r.schedules {
		if p < s.Period-8 {
			delete(r.schedules, p)
		}
	}
	return nil
}

func (r *tcReactor) Heartbeat(ctx context.Context, h ReactorHeartbeat) (ReactorHeartbeatAck, error) {
	r.mu.Lock()
	hb := h
	r.hb, r.hbAt = &hb, r.o.Clock()
	s, ok := r.schedules[h.Period]
	ack := ReactorHeartbeatAck{Period: h.Period, Scheduled: ok}
	var lines []string
	var set []*tcClass
	want := map[string]float64{}
	if ok && r.setup != nil && r.why == "" {
		for _, sl := range s.Slots {
			if sl.Dst != "" && sl.RateBps > 0 {
				if v, seen := want[sl.Dst]; !seen || sl.RateBps < v {
					want[sl.Dst] = sl.RateBps
				}
			}
		}
		for _, c := range r.classes {
			if v, ok := want[c.ID]; ok && v != c.RateBps {
				lines = append(lines, fmt.Sprintf("class change dev %s parent 1:1 classid %s htb rate %s ceil %s", r.setup.Interface, c.handle(), bits(v), bits(v)))
				set = append(set, c)
			}
		}
	}
	r.mu.Unlock()
	if len(lines) > 0 {
		t0 := r.o.Clock()
		if _, err := r.run(ctx, lines); err != nil {
			return ack, err
		}
		ack.ApplyNs = int64(r.o.Clock() - t0)
		r.mu.Lock()
		for _, c := range set {
			c.RateBps = want[c.ID]
			ack.Applied = append(ack.Applied, c.ID)
		}
		r.mu.Unlock()
	}
	ack.ClockNs = r.clock()
	return ack, nil
}

// qdiscStats is one qdisc of "tc -s -j qdisc show".
type qdiscStats struct {
	Kind    string `json:"kind"`
	Handle  string `json:"handle"`
	Parent  string `json:"parent"`
	Bytes   int64  `json:"bytes"`
	Packets int64  `json:"packets"`
	Drops   int64  `json:"drops"`
	Backlog int64  `json:"backlog"`
	Qlen    int64  `json:"qlen"`
}

// stats reads the qdiscs of iface by handle.
func (r *tcReactor) stats(ctx context.Context, iface string) (map[string]qdiscStats, error) {
	out, err := r.run(ctx, nil, "-s", "-j", "qdisc", "show", "dev", iface)
	if err != nil {
		return nil, err
	}
	var qs []qdiscStats
	if err := json.Unmarshal(out, &qs); err != nil {
		return nil, apiErr(KindFailed, "tc -s -j qdisc show dev %s: not the JSON expected (%v): %.100q", iface, err, out)
	}
	m := map[string]qdiscStats{}
	for _, q := range qs {
		m[q.Handle] = q
	}
	return m, nil
}

func (r *tcReactor) Demand(ctx context.Context) (ReactorDemand, error) {
	if err := r.notAvailable(); err != nil {
		return ReactorDemand{}, err
	}
	r.mu.Lock()
	if r.setup == nil {
		r.mu.Unlock()
		return ReactorDemand{}, apiErr(KindConflict, "no classes: PUT /v1/reactor/classes first")
	}
	iface := r.setup.Interface
	classes := slices.Clone(r.classes)
	r.mu.Unlock()
	st, err := r.stats(ctx, iface)
	if err != nil {
		return ReactorDemand{}, err
	}
	d := ReactorDemand{ClockNs: r.clock()}
	for _, c := range classes {
		q, ok := st[c.leaf()]
		if !ok {
			return d, apiErr(KindFailed, "class %s: its qdisc %s is gone from %s (was the root qdisc replaced?)", c.ID, c.leaf(), iface)
		}
		d.Classes = append(d.Classes, ReactorClassDemand{ID: c.ID, BacklogBytes: q.Backlog, BacklogPackets: q.Qlen, SentBytes: q.Bytes, Drops: q.Drops})
	}
	return d, nil
}

func (r *tcReactor) Windows(ctx context.Context, since uint64) (ReactorWindows, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := ReactorWindows{Next: max(since, r.seq), ClockNs: r.clockLocked()}
	for _, w := range r.windows {
		if w.Seq >= since {
			out.Windows = append(out.Windows, w)
		}
	}
	return out, nil
}

func (r *tcReactor) StartSink(ctx context.Context, req ReactorSinkRequest) (ReactorSink, error) {
	return r.traffic.startSink(ctx, req)
}

func (r *tcReactor) StartFlows(ctx context.Context, req ReactorFlowsRequest) ([]ReactorFlow, error) {
	r.mu.Lock()
	if r.setup != nil {
		for i, f := range req.Flows {
			if _, err := r.class(f.Dst); err != nil {
				r.mu.Unlock()
				return nil, apiErr(KindBadRequest, "flows[%d]: %s", i, err.(*APIError).Message)
			}
		}
	}
	r.mu.Unlock()
	return r.traffic.start(req.Flows)
}

func (r *tcReactor) Flows(ctx context.Context) (ReactorFlows, error) { return r.traffic.list(), nil }

func (r *tcReactor) StopFlows(ctx context.Context) error {
	r.traffic.stopAll()
	return nil
}

func (r *tcReactor) Close() error {
	return errors.Join(r.traffic.close())
}
