package stardust

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"testbed/dut/p4switch"
	"testbed/inventory"
	o "testbed/orchestrator"
	"testbed/p4/ecmp"
	sd "testbed/p4/stardust"
	"testbed/results"
)

// The Stardust bench (simlab/benches/stardust.yaml, or a lab like it):
// Tofino switches in the FA and FE roles running p4/stardust's programs,
// every FA joined to every FE. stardust-fabric and stardust-packing run on
// it when the inventory has switches with the option stardust_role (fa or
// fe) and stardust_id (the fabric id): they bring the fabric up through
// p4/stardust's control plane over the switch core (a recipe names no table),
// drive host traffic from the FAs' packet generators (the bench's FA host
// ports have nothing behind them) and read the programs' histograms and
// the ports' and queues' counters. Without such switches they run the
// model alone, as before.
//
// Policy, stated once for both recipes: a switch not running its program
// has it built and bf_switchd started with it (left running afterwards);
// every table the bring-up fills is cleared at the end and given back the
// entries it held; ports the bring-up adds are deleted again, and a port
// whose speed it changes is set back; the FCI thresholds and the FAs'
// reassembly timeout are written back; every generator application it
// starts is stopped. Counters are never cleared: every figure is a
// difference of two reads.

// Inventory options of a bench switch.
const (
	optRole = "stardust_role"
	optID   = "stardust_id"
)

// Generator applications and ports the bring-up uses (Tofino 1 has apps
// 0..7 per pipe). genPort is pipe 0's generator port, SD_INTERNAL_PORT in
// p4/stardust/common/headers.p4; recircPort is SD_RECIRC_PORT in
// stardust_fa.p4, where a frame without a credit waits.
const (
	appCredit = 0
	appReach  = 1
	appAge    = 2
	appData   = 3

	genPort    = 68
	recircPort = 196
	// ctrlFrameBytes is a credit, reachability or aging frame: the
	// smallest Ethernet frame (FCS not counted).
	ctrlFrameBytes = 60
	// wireExtra is what a frame takes on the wire beyond its bytes: FCS,
	// preamble and start delimiter, inter-frame gap (IEEE 802.3).
	wireExtra = 4 + 8 + 12
	// hostPort is an FA's one host port, FA-local number 0.
	hostPort = 0
	// reachTh is App. E's th (Table 4: 3).
	reachTh = 3
)

// benchNode is one switch of the bench.
type benchNode struct {
	Name string
	FE   bool
	ID   int
	// Host is an FA's host dev port.
	Host int
	// Ports are the fabric dev ports in peer id order, Peers the id of
	// the switch at the other end of each.
	Ports, Peers []int
	// sw is the switch through the kind's interfaces; sd and ec are the
	// Stardust and ecmp programs' control planes over its core.
	sw benchSwitch
	sd *sd.Switch
	ec *ecmp.Switch
	// creditPorts is how many host ports an FA's credit application
	// serves (one per batch frame, SetCreditPorts); 0 is one.
	creditPorts int
}

func (n *benchNode) program() string {
	if n.FE {
		return sd.ProgramFE
	}
	return sd.ProgramFA
}

// benchVOA is a VOA channel on a fabric link, which must pass light.
type benchVOA struct {
	Device  string
	Channel int
}

// bench is the Stardust bench as the inventory describes it.
type bench struct {
	FAs, FEs []*benchNode
	VOAs     []benchVOA
	FEC      string
}

// findBench reads the bench from inv: nil (and no error) when inv has no
// switch with a stardust_role.
func findBench(inv *inventory.Inventory) (*bench, error) {
	if inv == nil {
		return nil, nil
	}
	b := &bench{FEC: "none"}
	byName := map[string]*benchNode{}
	ids := map[string]map[int]string{"fa": {}, "fe": {}}
	for _, name := range inv.DeviceNames() {
		n, err := benchNodeOf(inv, name, ids)
		if err != nil {
			return nil, err
		}
		if n == nil {
			continue // no Stardust role
		}
		if n.FE {
			b.FEs = append(b.FEs, n)
		} else {
			b.FAs = append(b.FAs, n)
		}
		byName[name] = n
	}
	if len(byName) == 0 {
		return nil, nil
	}
	if len(b.FAs) < 2 || len(b.FEs) < 1 {
		return nil, fmt.Errorf("%s: a Stardust bench needs at least 2 FAs and 1 FE (stardust_role), found %d and %d", inv.Path, len(b.FAs), len(b.FEs))
	}
	ends, err := b.links(inv, byName)
	if err != nil {
		return nil, err
	}
	for _, list := range [][]*benchNode{b.FAs, b.FEs} {
		sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	}
	for _, n := range append(append([]*benchNode{}, b.FAs...), b.FEs...) {
		if err := b.wire(inv, n, ends[n]); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// benchEnd is a node's end of a fabric link: its dev port and the peer.
type benchEnd struct {
	port int
	peer *benchNode
}

// benchNodeOf reads device name's Stardust role, id and (an FA's) host
// port; nil when it has no role. ids holds the ids taken, per role.
func benchNodeOf(inv *inventory.Inventory, name string, ids map[string]map[int]string) (*benchNode, error) {
	d := inv.Devices[name]
	role, ok := d.Options[optRole]
	if !ok {
		return nil, nil
	}
	if d.Kind != "switch" {
		return nil, inv.DeviceErrorf(d, "options."+optRole, "%s is a %s: only switches take a Stardust role", name, d.Kind)
	}
	if role != "fa" && role != "fe" {
		return nil, inv.DeviceErrorf(d, "options."+optRole, "%q: expected fa or fe", role)
	}
	id, err := strconv.Atoi(d.Options[optID])
	if err != nil || id < 0 || id >= sd.MaxFAs {
		return nil, inv.DeviceErrorf(d, "options."+optID, "%q: expected a fabric id 0..%d", d.Options[optID], sd.MaxFAs-1)
	}
	if other, dup := ids[role][id]; dup {
		return nil, inv.DeviceErrorf(d, "options."+optID, "%s id %d is also %s's", role, id, other)
	}
	ids[role][id] = name
	n := &benchNode{Name: name, FE: role == "fe", ID: id, Host: -1}
	if !n.FE {
		v, ok := d.Ports["host"]
		if !ok {
			return nil, inv.DeviceErrorf(d, "ports", "FA %s has no port named host (its generators' traffic leaves the fabric there)", name)
		}
		if n.Host, err = devPortOf(v); err != nil {
			return nil, inv.DeviceErrorf(d, "ports.host", "%v", err)
		}
	}
	return n, nil
}

// links reads the fabric links between the bench's nodes: each node's
// ends, the VOAs on them and the links' FEC.
func (b *bench) links(inv *inventory.Inventory, byName map[string]*benchNode) (map[*benchNode][]benchEnd, error) {
	ends := map[*benchNode][]benchEnd{}
	for _, l := range inv.Links {
		a, okA := byName[l.A.Device]
		z, okZ := byName[l.B.Device]
		if !okA || !okZ {
			continue
		}
		if a.FE == z.FE {
			return nil, inv.LinkErrorf(l, "", "joins %s and %s, both in the same role: a one-tier fabric joins FAs to FEs", a.Name, z.Name)
		}
		for _, e := range []struct {
			n, peer *benchNode
			port    string
		}{{a, z, l.A.Port}, {z, a, l.B.Port}} {
			v, ok := inv.Devices[e.n.Name].Ports[e.port]
			if !ok {
				return nil, inv.LinkErrorf(l, "", "%s has no port %q", e.n.Name, e.port)
			}
			p, err := devPortOf(v)
			if err != nil {
				return nil, inv.LinkErrorf(l, "", "%s port %s: %v", e.n.Name, e.port, err)
			}
			ends[e.n] = append(ends[e.n], benchEnd{p, e.peer})
		}
		if l.VOA != nil {
			b.VOAs = append(b.VOAs, benchVOA{l.VOA.Device, l.VOA.Channel})
		}
		if l.FEC != "" && l.FEC != "none" {
			b.FEC = l.FEC
		}
	}
	return ends, nil
}

// wire gives node n its ports and peers, by the peers' ids: one link to
// each node of the other role (a one-tier fabric).
func (b *bench) wire(inv *inventory.Inventory, n *benchNode, es []benchEnd) error {
	sort.Slice(es, func(i, j int) bool { return es[i].peer.ID < es[j].peer.ID })
	want := len(b.FEs)
	if n.FE {
		want = len(b.FAs)
	}
	if len(es) != want {
		return fmt.Errorf("%s: %s has %d fabric links, want one to each of the %d %s (a one-tier fabric)", inv.Path, n.Name, len(es), want, map[bool]string{true: "FAs", false: "FEs"}[n.FE])
	}
	for i, e := range es {
		if i > 0 && es[i-1].peer == e.peer {
			return fmt.Errorf("%s: %s has two links to %s", inv.Path, n.Name, e.peer.Name)
		}
		n.Ports = append(n.Ports, e.port)
		n.Peers = append(n.Peers, e.peer.ID)
	}
	return nil
}

func devPortOf(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n >= sd.PortCount {
		return 0, fmt.Errorf("%q: expected a Tofino dev port number (0..%d)", v, sd.PortCount-1)
	}
	return n, nil
}

func (b *bench) nodes() []*benchNode { return append(append([]*benchNode{}, b.FAs...), b.FEs...) }

// devices lists the switches and VOAs the bench touches.
func (b *bench) devices() []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range b.nodes() {
		out = append(out, n.Name)
	}
	for _, v := range b.VOAs {
		if !seen[v.Device] {
			seen[v.Device] = true
			out = append(out, v.Device)
		}
	}
	return out
}

func (b *bench) describe(linkGbps, hostGbps int) string {
	return fmt.Sprintf("%d FAs (%s..%s) x %d links of %d Gb/s to %d FEs (%s..%s), one %d Gb/s host port per FA driven by its packet generator",
		len(b.FAs), b.FAs[0].Name, b.FAs[len(b.FAs)-1].Name, len(b.FEs), linkGbps, len(b.FEs), b.FEs[0].Name, b.FEs[len(b.FEs)-1].Name, hostGbps)
}

// benchConfig is what a bench run sets up.
type benchConfig struct {
	LinkGbps, HostGbps int
	// FrameBytes is a host frame (a cell; FCS not counted).
	FrameBytes int
	// CreditBytes and SpeedUp give a credit's worth and the credit rate.
	CreditBytes int
	SpeedUp     float64
	// FCIFrames is the FEs' and the FAs' fabric ports' FCI threshold in
	// frames (0: off).
	FCIFrames   int
	ReachPeriod time.Duration
	// ReasmTimeout is the FAs' reassembly timer: the age at which an early
	// frame gives up the numbers before it; 0 leaves a stall for ever.
	ReasmTimeout time.Duration
	Replace      bool
	// Arrivals is how the FAs' data generators space their frames:
	// "paced" (or empty: batches at a fixed period) or "jittered" (see
	// dataGens).
	Arrivals string
	// HotShare, above 0, is the share of every FA's spraying slots given
	// to its link to the first FE, the rest spread evenly over its other
	// links (hotSpray); 0 sprays over a random permutation of its links.
	HotShare float64
}

// Arrival processes of the bench's host traffic.
const (
	arrivalsPaced    = "paced"
	arrivalsJittered = "jittered"
)

// jitterApps are the generator applications that carry an FA's host
// traffic with arrivals=jittered: the data application and the four
// others Tofino 1's pipe has free (apps 0..7; the bench's credits,
// reachability cells and aging ticks take 0..2).
var jitterApps = []int{appData, 4, 5, 6, 7}

// dataApps are the applications that carry host traffic.
func (br *benchRun) dataApps() []int {
	if br.cfg.Arrivals == arrivalsJittered {
		return jitterApps
	}
	return []int{appData}
}

// benchParams are the parameters the bench mode adds to a recipe.
func benchParams(measure, warm, drain time.Duration) []o.ParamSpec {
	return []o.ParamSpec{
		{Name: "bench_link_gbps", Type: o.TypeInt, Unit: "Gb/s", Default: int64(25), Enum: []string{"10", "25", "40", "50", "100"}, Description: "bench only: the fabric ports' speed (25: four links carry one 100 Gb/s host port, a fabric speed-up of 1 as in the model)"},
		{Name: "bench_host_gbps", Type: o.TypeInt, Unit: "Gb/s", Default: int64(100), Enum: []string{"10", "25", "40", "50", "100"}, Description: "bench only: the FA host port's speed"},
		{Name: "bench_measure", Type: o.TypeDuration, Default: measure, Min: o.Bound(1e-6), Max: o.Bound(1), Description: "bench only: measured time per point, on the switches' clock"},
		{Name: "bench_warmup", Type: o.TypeDuration, Default: warm, Min: o.Bound(0), Max: o.Bound(1), Description: "bench only: traffic before measuring"},
		{Name: "bench_drain", Type: o.TypeDuration, Default: drain, Min: o.Bound(0), Max: o.Bound(1), Description: "bench only: time after the traffic stops for the fabric to empty, before the accounting reads"},
		{Name: "replace_program", Type: o.TypeBool, Default: false, Description: "bench only: restart a switch daemon that runs another P4 program with the Stardust one"},
	}
}

// benchRun is a bench brought up for a run.
type benchRun struct {
	*bench
	cfg benchConfig
	rc  *o.RunContext
}

// benchSwitch is what the Stardust bench uses of a switch: the switch
// kind's interfaces (dut/p4switch), whatever its driver.
type benchSwitch interface {
	p4switch.Core
	p4switch.Programs
	p4switch.Builder
	p4switch.Ports
	p4switch.PortCounters
	p4switch.Queues
	p4switch.PacketGenerator
	p4switch.Clock
}

// open gets node n's switch from the run and the programs' control
// planes over it.
func (n *benchNode) open(rc *o.RunContext) error {
	sw, err := o.As[benchSwitch](rc, n.Name)
	if err != nil {
		return err
	}
	n.sw, n.sd, n.ec = sw, sd.New(sw), ecmp.New(sw)
	return nil
}

// up brings the bench to its programs, ports, tables and registers,
// journalling every change first.
func (b *bench) up(ctx context.Context, rc *o.RunContext, cfg benchConfig) (*benchRun, error) {
	br := &benchRun{bench: b, cfg: cfg, rc: rc}
	for _, n := range b.nodes() {
		if err := n.open(rc); err != nil {
			return nil, err
		}
	}
	// Programs: every switch at once (a build and a daemon start each).
	if err := each(b.nodes(), func(n *benchNode) error { return br.program(ctx, n) }); err != nil {
		return nil, err
	}
	if err := br.portsUp(ctx, cfg.HostGbps, cfg.LinkGbps, nil); err != nil {
		return nil, err
	}
	// What the tables and registers held, journalled before any write.
	for _, n := range b.nodes() {
		if err := br.journalSnapshot(ctx, n); err != nil {
			return nil, err
		}
	}
	if err := each(b.nodes(), func(n *benchNode) error { return br.tables(ctx, n) }); err != nil {
		return nil, err
	}
	rc.Event(results.Event{Type: "setting", Message: fmt.Sprintf("Stardust fabric up: %s; FCI at %d frames", b.describe(cfg.LinkGbps, cfg.HostGbps), cfg.FCIFrames)})
	return br, nil
}

// portsUp adds (or sets to speed) every FA's host port and extra host
// ports at hostGbps and every fabric port at linkGbps, journalling each
// change; lets light through the bench's VOAs; and waits for the fabric
// ports to come up.
func (br *benchRun) portsUp(ctx context.Context, hostGbps, linkGbps int, extra map[*benchNode][]int) error {
	for _, n := range br.nodes() {
		if !n.FE {
			for _, p := range append([]int{n.Host}, extra[n]...) {
				if err := br.port(ctx, n, p, hostGbps); err != nil {
					return err
				}
			}
		}
		for _, p := range n.Ports {
			if err := br.port(ctx, n, p, linkGbps); err != nil {
				return err
			}
		}
	}
	for _, v := range br.VOAs {
		if err := br.rc.EnsureLight(ctx, v.Device, v.Channel); err != nil {
			return err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, n := range br.nodes() {
		for _, p := range n.Ports {
			if err := n.sw.WaitPortUp(wctx, p); err != nil {
				return fmt.Errorf("%s: fabric port %d: %w", n.Name, p, err)
			}
		}
	}
	return nil
}

// each runs f for every node at once and returns the first error.
func each(ns []*benchNode, f func(*benchNode) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(ns))
	for i, n := range ns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(n)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (br *benchRun) program(ctx context.Context, n *benchNode) error {
	want := n.program()
	got, err := n.sw.Program(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	if got == want {
		if err := n.sw.Ready(ctx); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		return nil
	}
	if got != "" && !br.cfg.Replace {
		return fmt.Errorf("%s runs the P4 program %q, not %q: set replace_program=true to restart its switch daemon with %s", n.Name, got, want, want)
	}
	b, err := n.sw.BuildProgram(ctx, want, sd.MainFile(want), sd.Sources())
	if err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	br.rc.Event(results.Event{Type: "setting", Device: n.Name, Message: fmt.Sprintf("built %s (sources %s) and starting bf_switchd with it (was: %q); it is left running", want, b.SourceSHA256[:12], got),
		Fields: map[string]any{"program": want, "previous_program": got, "source_sha256": b.SourceSHA256}})
	if err := n.sw.LoadProgram(ctx, want); err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	return nil
}

// port adds a port at gbps (or sets an added one's speed), journalling
// its undo.
func (br *benchRun) port(ctx context.Context, n *benchNode, port, gbps int) error {
	st, err := n.sw.PortStatus(ctx, port)
	switch {
	case p4switch.IsNotFound(err):
		if err := br.rc.Journal(n.Name, o.Undo{Kind: o.UndoTofinoDeletePort, Desc: fmt.Sprintf("delete port %d the run added on %s", port, n.Name),
			Args: map[string]int{"port": port}}); err != nil {
			return err
		}
		if err := n.sw.AddPort(ctx, port, gbps, br.FEC); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("%s: %w", n.Name, err)
	case st.SpeedGbps == gbps:
		return nil
	}
	if !br.rc.FirstTouch(fmt.Sprintf("stardust/port-mode/%s/%d", n.Name, port)) {
		return fmt.Errorf("%s: port %d at %s, the run set %d Gb/s", n.Name, port, st.Speed, gbps)
	}
	found := p4switch.PortMode{Speed: st.Speed, FEC: st.FEC, Enabled: st.Enabled}
	if err := br.rc.Journal(n.Name, o.Undo{Kind: o.UndoTofinoPortMode, Desc: fmt.Sprintf("set port %d on %s back to %s %s", port, n.Name, st.Speed, st.FEC),
		Found: found, Args: map[string]any{"port": port, "mode": found}}); err != nil {
		return err
	}
	if _, err := n.sw.SetPortMode(ctx, port, gbps, br.FEC); err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	return nil
}

// journalSnapshot records, once per switch and run, the undo of the
// bring-up's writes: each table cleared and given back what it held, the
// registers written back.
func (br *benchRun) journalSnapshot(ctx context.Context, n *benchNode) error {
	if !br.rc.FirstTouch("stardust/tables/" + n.Name) {
		return nil
	}
	snap, err := n.sd.FabricSnapshot(ctx, n.program())
	if err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	for _, r := range snap.Registers {
		if err := br.rc.Journal(n.Name, o.Undo{Kind: o.UndoTofinoRegister, Desc: fmt.Sprintf("restore %s[%d] = %d found on %s", r.Name, r.Index, r.Value, n.Name),
			Found: r.Value, Args: map[string]any{"name": r.Name, "index": r.Index, "value": r.Value}}); err != nil {
			return err
		}
	}
	// The undo runs last-in first-out: the table is cleared, then what it
	// held is added back.
	for _, t := range snap.Tables {
		for i := range t.Entries {
			e := t.Entries[i]
			if err := br.rc.Journal(n.Name, o.Undo{Kind: o.UndoTofinoEntry, Desc: fmt.Sprintf("restore a %s entry found on %s", t.Table, n.Name),
				Found: e, Args: map[string]any{"table": t.Table, "key": e.Key, "entry": e}}); err != nil {
				return err
			}
		}
		if err := br.rc.Journal(n.Name, o.Undo{Kind: o.UndoTofinoTableClear, Desc: fmt.Sprintf("clear %s on %s (it held %d entries)", t.Table, n.Name, len(t.Entries)),
			Args: map[string]any{"table": t.Table}}); err != nil {
			return err
		}
	}
	return nil
}

// voq is the VOQ index, at every source FA, of destination FA fa's host
// port: one VOQ per destination port and traffic class 0 (§3.3).
func voq(fa int) int { return fa }

// tables writes a switch's tables: its id, reachability ports and the
// spraying permutations (§5.3: a random permutation of the FA's links per
// destination; an FE's one port to each FA); an FA's host port, credit
// port and sources (every other FA's VOQ for it, round robin) and
// generator flows (uniform over the other FAs' host ports), reassembly
// timeout and FCI threshold; an FE's FCI threshold.
func (br *benchRun) tables(ctx context.Context, n *benchNode) error {
	wrap := func(err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		return nil
	}
	if err := n.sd.SetFabricID(ctx, n.ID); err != nil {
		return wrap(err)
	}
	if err := n.sd.SetReachPorts(ctx, n.Ports); err != nil {
		return wrap(err)
	}
	if n.FE {
		for i, fa := range n.Peers {
			if err := n.sd.SetSpray(ctx, fa, []int{n.Ports[i]}); err != nil {
				return wrap(err)
			}
		}
		return wrap(n.sd.SetFCIThreshold(ctx, int(sd.FCIThreshold(br.cfg.FCIFrames, br.cfg.FrameBytes))))
	}
	rng := rand.New(rand.NewPCG(br.rc.Seed, uint64(n.ID)+0x5d))
	var srcs []sd.CreditSource
	for _, d := range br.FAs {
		if d == n {
			continue
		}
		perm := append([]int{}, n.Ports...)
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		if br.cfg.HotShare > 0 {
			perm = hotSpray(n.Ports, br.cfg.HotShare, rng)
		}
		if err := n.sd.SetSpray(ctx, d.ID, perm); err != nil {
			return wrap(err)
		}
		srcs = append(srcs, sd.CreditSource{FA: d.ID, VOQ: voq(n.ID)})
	}
	if err := n.sd.SetHostPorts(ctx, map[int]int{hostPort: n.Host}); err != nil {
		return wrap(err)
	}
	if err := n.sd.SetCreditPorts(ctx, []int{hostPort}); err != nil {
		return wrap(err)
	}
	if err := n.sd.SetReassemblyTimeout(ctx, br.cfg.ReasmTimeout); err != nil {
		return wrap(err)
	}
	// The FA's fabric ports mark FCI at the FEs' threshold: the bench's
	// links carry just the host port's rate, so credits a few percent
	// above it queue there first (stardust_fa.p4).
	if err := n.sd.SetFCIThreshold(ctx, int(sd.FCIThreshold(br.cfg.FCIFrames, br.cfg.FrameBytes))); err != nil {
		return wrap(err)
	}
	return wrap(n.sd.SetCreditSources(ctx, hostPort, srcs))
}

// hotSpray is a destination's 64 spraying slots with share of them on
// ports[0] (the link to the first FE) and the rest round robin over a
// random permutation of the other ports: a spray that is not uniform, the
// persistent bias §5.3 says the random permutations exist to prevent. The
// hot slots are spread evenly over the round (slot i is hot when
// floor((i+1) share 64) passes an integer), so the hot link takes every
// few cells of a destination, not a run of them.
func hotSpray(ports []int, share float64, rng *rand.Rand) []int {
	rest := append([]int{}, ports[1:]...)
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	hot := int(math.Round(share * sd.MaxLinks))
	out := make([]int, sd.MaxLinks)
	k := 0
	for i := range out {
		if (i+1)*hot/sd.MaxLinks > i*hot/sd.MaxLinks || len(rest) == 0 {
			out[i] = ports[0]
			continue
		}
		out[i] = rest[k%len(rest)]
		k++
	}
	return out
}

// uniformTargets are FA n's generator targets uniform over the other FAs,
// starting after n itself: with 7 targets over 64 slots the first has one
// slot more, and starting after n gives that slot to a different
// destination for each source.
func (br *benchRun) uniformTargets(n *benchNode) []sd.VOQTarget {
	var out []sd.VOQTarget
	k := len(br.FAs)
	start := 0
	for i, d := range br.FAs {
		if d == n {
			start = i
		}
	}
	for j := 1; j < k; j++ {
		d := br.FAs[(start+j)%k]
		out = append(out, sd.VOQTarget{FA: d.ID, Port: hostPort, VOQ: voq(d.ID)})
	}
	return out
}

// permutationTargets send FA n's frames all to the next FA.
func (br *benchRun) permutationTargets(n *benchNode) []sd.VOQTarget {
	for i, d := range br.FAs {
		if d == n {
			next := br.FAs[(i+1)%len(br.FAs)]
			return []sd.VOQTarget{{FA: next.ID, Port: hostPort, VOQ: voq(next.ID)}}
		}
	}
	return nil
}

// pace is a generator's batch period and batch size for rate bits/s of
// frames of frameBytes: the smallest batch (up to 64 frames) whose whole
// period in ns is within 0.2% of the rate, the period rounded up so the
// rate is never exceeded. It returns the rate the pacing gives.
func pace(frameBytes int, bps float64) (time.Duration, int, float64) {
	per := float64((frameBytes+wireExtra)*8) / bps * 1e9
	best, bestK := math.Ceil(per), 1
	for k := 1; k <= 64; k++ {
		p := math.Ceil(per * float64(k))
		if (p-per*float64(k))/(per*float64(k)) < 0.002 {
			best, bestK = p, k
			break
		}
	}
	return time.Duration(best), bestK, float64(bestK*(frameBytes+wireExtra)*8) / best * 1e9
}

// dataGens are the data generator applications of one FA (egress port
// and source left to fill) that offer bps (wire bits) of frameBytes
// frames for d, and the rate they offer.
//
// paced: one application, batches of k frames at a fixed period (pace).
//
// jittered: a Tofino generator draws no exponential gaps, so it cannot
// offer the Poisson arrivals of the paper's simulation; it jitters the gap
// between batches uniformly (ibg_jitter: the SDE's reference model draws
// base + uniform(0, max)). Each of the jitterApps sends one frame per
// batch, with gaps of 1 ns plus a uniform draw from 0..J: a renewal
// process of mean gap 1 + J/2 ns, a coefficient of variation near
// 1/sqrt(3). The FA's frames are the superposition of these independent
// streams and each destination's share a random thinning of it (gen_flow's
// random slot), both of which bring a stream towards Poisson
// (Palm-Khintchine, Renyi); over long times its counts still vary a third
// as much as Poisson's. J is chosen so that the five together offer bps;
// the batches cover d with 10% to spare (the gaps' sum is random), and the
// caller stops them at the window's end.
func (br *benchRun) dataGens(frameBytes int, bps float64, d time.Duration) ([]sd.Generator, float64, error) {
	wire := float64((frameBytes + wireExtra) * 8)
	base := sd.Generator{AppID: appData, Port: genPort, FrameBytes: frameBytes, Cell: sd.Cell{Kind: sd.KindData}}
	if br.cfg.Arrivals != arrivalsJittered {
		period, k, offered := pace(frameBytes, bps)
		batches, err := batchesFor(d, period)
		if err != nil {
			return nil, 0, err
		}
		base.Period, base.PerBatch, base.Batches = period, k, batches
		return []sd.Generator{base}, offered, nil
	}
	m := len(jitterApps)
	mean := wire / bps * 1e9 * float64(m) // ns between one application's frames
	j := math.Round(2 * (mean - 1))
	if j < 2 {
		return nil, 0, o.Inputf("arrivals=jittered: %g b/s of %d B frames is a frame every %.2f ns from each of %d generator applications: too fast to jitter", bps, frameBytes, mean, m)
	}
	mean = 1 + j/2
	batches, err := batchesFor(d+d/10, time.Duration(mean))
	if err != nil {
		return nil, 0, err
	}
	var gens []sd.Generator
	for _, a := range jitterApps {
		g := base
		g.AppID, g.Period, g.Jitter, g.PerBatch, g.Batches = a, time.Nanosecond, time.Duration(j), 1, batches
		gens = append(gens, g)
	}
	return gens, float64(m) * wire / mean * 1e9, nil
}

// batchesFor is how many batches of period cover d, at most the
// generator's 65536.
func batchesFor(d, period time.Duration) (int, error) {
	n := int((d + period - 1) / period)
	if n > 1<<16 {
		return 0, fmt.Errorf("%v of batches every %v is %d batches; the packet generator counts 65536 at most (shorten the bench times)", d, period, n)
	}
	return max(n, 1), nil
}

// startInfra starts, on every switch, the applications that run under
// the traffic for d: credits at the host port's rate x (1 + speed-up)
// (§4.1), reachability cells and aging ticks every reach period (App. E).
func (br *benchRun) startInfra(ctx context.Context, d time.Duration) error {
	cfg := br.cfg
	frames := max(1, min(sd.CreditCapFrames, cfg.CreditBytes/cfg.FrameBytes))
	creditPeriod, err := sd.CreditPeriod(float64(cfg.HostGbps)*1e9, cfg.SpeedUp, frames*(cfg.FrameBytes+wireExtra))
	if err != nil {
		return err
	}
	for _, n := range br.nodes() {
		egress := n.Host
		if n.FE {
			egress = n.Ports[0]
		}
		maxPort := 0
		for _, p := range n.Ports {
			maxPort = max(maxPort, p)
		}
		gens := []sd.Generator{
			{AppID: appReach, Period: cfg.ReachPeriod, PerBatch: len(n.Ports), Cell: sd.Cell{Kind: sd.KindReach, SrcFA: uint16(n.ID)}},
			// An aging tick's packet id is the dev port it ages: a batch
			// covers every fabric port (and those below them).
			{AppID: appAge, Period: cfg.ReachPeriod, PerBatch: maxPort + 1, Cell: sd.Cell{Kind: sd.KindAge}},
		}
		if !n.FE {
			gens = append(gens, sd.Generator{AppID: appCredit, Period: creditPeriod, PerBatch: max(1, n.creditPorts),
				Cell: sd.Cell{Kind: sd.KindCredit, SrcFA: uint16(n.ID), PayloadLength: uint16(frames)}})
		}
		for _, g := range gens {
			g.Port, g.EgressPort, g.FrameBytes = genPort, egress, ctrlFrameBytes
			if g.Batches, err = batchesFor(d, g.Period); err != nil {
				return fmt.Errorf("%s: generator %d: %w", n.Name, g.AppID, err)
			}
			if err := br.startGen(ctx, n, g); err != nil {
				return err
			}
		}
	}
	return nil
}

func (br *benchRun) startGen(ctx context.Context, n *benchNode, g sd.Generator) error {
	if br.rc.FirstTouch(fmt.Sprintf("pktgen/%s/%d", n.Name, g.AppID)) {
		if err := br.rc.Journal(n.Name, o.Undo{Kind: o.UndoTofinoPktgen, Desc: fmt.Sprintf("stop packet generator application %d on %s", g.AppID, n.Name),
			Args: map[string]int{"app_id": g.AppID}}); err != nil {
			return err
		}
	}
	if err := n.sd.StartGenerator(ctx, g); err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	return nil
}

// stopAll stops every application the bench starts, on every switch.
func (br *benchRun) stopAll(ctx context.Context, apps ...int) error {
	for _, n := range br.nodes() {
		for _, a := range apps {
			if n.FE && (a == appCredit || a == appData || br.cfg.Arrivals == arrivalsJittered && slices.Contains(jitterApps, a)) {
				continue
			}
			if err := n.sw.StopPktgen(ctx, a); err != nil && !p4switch.IsNotFound(err) {
				return fmt.Errorf("%s: %w", n.Name, err)
			}
		}
	}
	return nil
}

// benchReading is one read of everything a point needs.
type benchReading struct {
	At time.Duration
	// Lat and Queue are the FAs' latency and the FEs' queue histograms,
	// summed over the switches.
	Lat, Queue []int64
	// Host frames and octets transmitted by the FAs' host ports
	// (released frames), summed, and the frames by FA (br.FAs' order).
	HostFrames, HostOctets int64
	HostFramesBy           []int64
	// FE transmit frames and octets on their fabric ports, summed (the
	// last stage's links).
	FEFrames, FEOctets int64
	// Frames dropped waiting for credit at the FAs' recirculation queues,
	// early frames dropped waiting for their turn there (SD_REASM_QID),
	// and frames lost to full FE output queues.
	WaitDrops, ReorderDrops, FabricDrops int64
	// ReasmDrops is the sequence numbers the FAs gave up at a reassembly
	// timeout, summed over the sources.
	ReasmDrops int64
}

func (br *benchRun) read(ctx context.Context, at time.Duration) (benchReading, error) {
	r := benchReading{At: at, Lat: make([]int64, sd.HistBuckets), Queue: make([]int64, sd.HistBuckets), HostFramesBy: make([]int64, len(br.FAs))}
	for i, n := range br.FAs {
		h, err := n.sd.LatencyHistogram(ctx)
		if err != nil {
			return r, fmt.Errorf("%s: %w", n.Name, err)
		}
		addTo(r.Lat, h)
		c, err := n.sw.PortFramesOf(ctx, n.Host, p4switch.FrameQuery{Fields: p4switch.FramesTxOK | p4switch.FramesTxOctets})
		if err != nil {
			return r, fmt.Errorf("%s: %w", n.Name, err)
		}
		r.HostFrames += c.TxOK
		r.HostOctets += c.TxOctets
		r.HostFramesBy[i] = c.TxOK
		d, err := n.sd.QueueDrops(ctx, []int{recircPort}, 0)
		if err != nil {
			return r, fmt.Errorf("%s: %w", n.Name, err)
		}
		r.WaitDrops += d[0]
		if d, err = n.sd.QueueDrops(ctx, []int{recircPort}, sd.ReasmQID); err != nil {
			return r, fmt.Errorf("%s: %w", n.Name, err)
		}
		r.ReorderDrops += d[0]
		srcs := make([]int, len(br.FAs))
		for i, s := range br.FAs {
			srcs[i] = s.ID
		}
		g, err := n.sd.ReassemblyDrops(ctx, srcs)
		if err != nil {
			return r, fmt.Errorf("%s: %w", n.Name, err)
		}
		for _, v := range g {
			r.ReasmDrops += v
		}
	}
	for _, n := range br.FEs {
		h, err := n.sd.QueueHistogram(ctx)
		if err != nil {
			return r, fmt.Errorf("%s: %w", n.Name, err)
		}
		addTo(r.Queue, h)
		for _, p := range n.Ports {
			c, err := n.sw.PortFramesOf(ctx, p, p4switch.FrameQuery{Fields: p4switch.FramesTxOK | p4switch.FramesTxOctets})
			if err != nil {
				return r, fmt.Errorf("%s: %w", n.Name, err)
			}
			r.FEFrames += c.TxOK
			r.FEOctets += c.TxOctets
		}
		d, err := n.sd.QueueDrops(ctx, n.Ports, 0)
		if err != nil {
			return r, fmt.Errorf("%s: %w", n.Name, err)
		}
		for _, x := range d {
			r.FabricDrops += x
		}
	}
	return r, nil
}

func addTo(a, b []int64) {
	for i := range b {
		if i < len(a) {
			a[i] += b[i]
		}
	}
}

// benchPoint is what one traffic pattern measured: the window's
// histograms and counters, and the whole run's accounting (from before
// the traffic started to after the drain).
type benchPoint struct {
	Window time.Duration
	// OfferedBps is one FA's offered rate, wire bits.
	OfferedBps float64
	Lat, Queue []int64
	// Window figures: released frames and their octets, last-stage link
	// frames and octets; released frames by destination FA (br.FAs'
	// order).
	HostFrames, HostOctets, FEFrames, FEOctets int64
	HostFramesBy                               []int64
	// Whole run: frames the data generators sent, released at the host
	// ports, dropped waiting for credit, dropped waiting for their turn at
	// the destination, lost in FE queues, given up at a reassembly
	// timeout, and the latency histogram's mass (cells that arrived at
	// their FA).
	Generated, Delivered, WaitDrops, ReorderDrops, FabricDrops, ReasmDrops, Arrived int64
	// Drained is how long after the window the accounting was read.
	Drained time.Duration
}

// setFlows points every FA's data generator at targets(n) and gives each
// host port's credits, round robin, to the VOQs that send to it (the
// Tofino programs have no request messages: the control plane lists the
// sources, p4/stardust/README.md).
func (br *benchRun) setFlows(ctx context.Context, targets func(*benchNode) []sd.VOQTarget) error {
	srcs := map[int][]sd.CreditSource{}
	for _, n := range br.FAs {
		for _, a := range br.dataApps() {
			if err := n.sd.SetGenFlow(ctx, a, targets(n)); err != nil {
				return fmt.Errorf("%s: %w", n.Name, err)
			}
		}
		seen := map[int]bool{}
		for _, v := range targets(n) {
			if !seen[v.FA] {
				seen[v.FA] = true
				srcs[v.FA] = append(srcs[v.FA], sd.CreditSource{FA: n.ID, VOQ: v.VOQ})
			}
		}
	}
	return each(br.FAs, func(n *benchNode) error {
		if err := n.sd.SetCreditSources(ctx, hostPort, srcs[n.ID]); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		return nil
	})
}

// runTraffic runs host traffic from every FA's data generator, rate bps
// (wire bits) of frameBytes frames to targets(n), and measures.
func (br *benchRun) runTraffic(ctx context.Context, frameBytes int, bps float64, targets func(*benchNode) []sd.VOQTarget, warm, measure, drain time.Duration) (benchPoint, error) {
	var pt benchPoint
	clock := br.FAs[0].sw
	// Each host port's credits go round robin to the VOQs that send to it
	// (the Tofino programs have no request messages: the control plane
	// lists the sources, p4/stardust/README.md).
	if err := br.setFlows(ctx, targets); err != nil {
		return pt, err
	}
	gens, offered, err := br.dataGens(frameBytes, bps, warm+measure)
	if err != nil {
		return pt, err
	}
	pt.OfferedBps = offered
	if err := br.startInfra(ctx, warm+measure+drain+br.cfg.ReachPeriod); err != nil {
		return pt, err
	}
	t0, err := clock.Clock(ctx)
	if err != nil {
		return pt, err
	}
	r0, err := br.read(ctx, t0)
	if err != nil {
		return pt, err
	}
	for _, n := range br.FAs {
		for _, g := range gens {
			g.EgressPort, g.Cell.SrcFA = n.Host, uint16(n.ID)
			if err := br.startGen(ctx, n, g); err != nil {
				return pt, err
			}
		}
	}
	tA, err := clock.WaitClock(ctx, t0+warm)
	if err != nil {
		return pt, err
	}
	rA, err := br.read(ctx, tA)
	if err != nil {
		return pt, err
	}
	tB, err := clock.WaitClock(ctx, tA+measure)
	if err != nil {
		return pt, err
	}
	rB, err := br.read(ctx, tB)
	if err != nil {
		return pt, err
	}
	// The generators are done (their batches cover the warm-up and the
	// window); stopped, their counts are final.
	if err := br.stopAll(ctx, br.dataApps()...); err != nil {
		return pt, err
	}
	for _, n := range br.FAs {
		for _, a := range br.dataApps() {
			st, err := n.sw.PktgenStatus(ctx, a)
			if err != nil {
				return pt, fmt.Errorf("%s: %w", n.Name, err)
			}
			pt.Generated += st.Packets
		}
	}
	// Drain: ask, a step at a time, until every frame sent is released or
	// counted dropped (frames waiting for credit go on being released while
	// credits flow), for at most drain. Every frame sent to the fabric is
	// released or given up at a reassembly timeout, but a source's last
	// frames lost in the fabric, which nothing after them stalls for: so
	// also done once everything has arrived or been counted lost in the
	// fabric and the releases have stopped.
	step := max(drain/20, 5*time.Microsecond)
	rC, t := rB, tB
	for t < tB+drain {
		if t, err = clock.WaitClock(ctx, min(t+step, tB+drain)); err != nil {
			return pt, err
		}
		prev := rC
		if rC, err = br.read(ctx, t); err != nil {
			return pt, err
		}
		released, waited := rC.HostFrames-r0.HostFrames, rC.WaitDrops-r0.WaitDrops
		if released+waited+rC.ReasmDrops-r0.ReasmDrops >= pt.Generated {
			break
		}
		var arrived int64
		for _, v := range sub(rC.Lat, r0.Lat) {
			arrived += v
		}
		if arrived+waited+rC.FabricDrops-r0.FabricDrops >= pt.Generated && rC.HostFrames == prev.HostFrames && rC.ReasmDrops == prev.ReasmDrops {
			break
		}
	}
	pt.Drained = rC.At - tB
	if err := br.stopAll(ctx, appCredit, appReach, appAge); err != nil {
		return pt, err
	}
	pt.Window = rB.At - rA.At
	pt.Lat, pt.Queue = sub(rB.Lat, rA.Lat), sub(rB.Queue, rA.Queue)
	pt.HostFrames, pt.HostOctets = rB.HostFrames-rA.HostFrames, rB.HostOctets-rA.HostOctets
	pt.HostFramesBy = sub(rB.HostFramesBy, rA.HostFramesBy)
	pt.FEFrames, pt.FEOctets = rB.FEFrames-rA.FEFrames, rB.FEOctets-rA.FEOctets
	pt.Delivered = rC.HostFrames - r0.HostFrames
	pt.WaitDrops = rC.WaitDrops - r0.WaitDrops
	pt.ReorderDrops = rC.ReorderDrops - r0.ReorderDrops
	pt.FabricDrops = rC.FabricDrops - r0.FabricDrops
	pt.ReasmDrops = rC.ReasmDrops - r0.ReasmDrops
	for _, v := range sub(rC.Lat, r0.Lat) {
		pt.Arrived += v
	}
	return pt, nil
}

// hostCapacity is the bits/s the FAs' host ports carry together.
func (br *benchRun) hostCapacity() float64 { return float64(len(br.FAs)*br.cfg.HostGbps) * 1e9 }

// fabricCapacity is the bits/s one FA's fabric links carry.
func (br *benchRun) fabricCapacity() float64 {
	return float64(len(br.FEs)*br.cfg.LinkGbps) * 1e9
}

// lastStageBusy is the last-stage (FE to FA) links' busy fraction over
// the window: frames and their preamble and gap on the wire.
func (br *benchRun) lastStageBusy(pt benchPoint) float64 {
	links := 0
	for _, n := range br.FEs {
		links += len(n.Ports)
	}
	bits := float64(pt.FEOctets+pt.FEFrames*(wireExtra-4)) * 8
	return bits / (float64(links) * float64(br.cfg.LinkGbps) * 1e9 * pt.Window.Seconds())
}
