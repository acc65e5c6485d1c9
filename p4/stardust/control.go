package stardust

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testbed/dut/p4switch"
	"time"

	"testbed/p4/ecmp"
)

// What the Stardust programs (p4/stardust, stardust_fa and stardust_fe)
// offer their control plane, in the fabric's terms: a recipe asks for
// links, reachability and counters and never names a bfrt table. Every
// name and key below comes from p4/stardust's contract.

// FabricLink is one fabric port as the control plane sees it.
type FabricLink struct {
	Port int
	// Up is the port's link state (port.status).
	Up bool
	// Age is the aging ticks since the port's last reachability cell
	// (RegReachAge, saturating at AgeMax).
	Age int
	// Valid is what the reachability table should hold: up, and fewer
	// than th ticks without a reachability cell (§5.9, App. E).
	Valid bool
}

// FabricLinks reads the link state and reachability age of each fabric
// port; th is App. E's threshold (Table 4: 3).
func (s *Switch) FabricLinks(ctx context.Context, ports []int, th int) ([]FabricLink, error) {
	if th < 1 || th > AgeMax {
		return nil, fmt.Errorf("reachability threshold %d: expected 1..%d", th, AgeMax)
	}
	out := make([]FabricLink, 0, len(ports))
	// The ages in one request.
	ages, err := p4switch.ReadEach(ctx, s, RegReachAge, ports, PortCount)
	if err != nil {
		return nil, err
	}
	for i, p := range ports {
		st, err := s.PortStatus(ctx, p)
		if err != nil {
			return nil, err
		}
		l := FabricLink{Port: p, Up: st.Up, Age: int(ages[i])}
		l.Valid = l.Up && l.Age < th
		out = append(out, l)
	}
	return out, nil
}

// Reachability is the spraying table: for each destination FA, the fabric
// ports its cells are sprayed over, in slot order with repeats removed.
// A destination with no entry, or only drop entries, is unreachable.
func (s *Switch) Reachability(ctx context.Context) (map[int][]int, error) {
	es, err := s.Entries(ctx, TableSpray)
	if err != nil {
		return nil, err
	}
	return sprayLinks(es), nil
}

// sprayLinks is Reachability's reading of spraying entries.
func sprayLinks(es []p4switch.Entry) map[int][]int {
	es = slices.Clone(es)
	sort.Slice(es, func(i, j int) bool {
		a, b := es[i].Key, es[j].Key
		if a[KeyDstFA] != b[KeyDstFA] {
			return a[KeyDstFA] < b[KeyDstFA]
		}
		return a[KeySlot] < b[KeySlot]
	})
	out := map[int][]int{}
	seen := map[[2]int64]bool{}
	for _, e := range es {
		if e.Action != ActionToLink {
			continue
		}
		d, l := e.Key[KeyDstFA], e.Data[ParamLink]
		if !seen[[2]int64{d, l}] {
			seen[[2]int64{d, l}] = true
			out[int(d)] = append(out[int(d)], int(l))
		}
	}
	return out
}

// SetSpray writes the spraying slots of destination FA dst: the links in
// the order given (a random permutation, §5.3), repeated over the
// MaxLinks slots; no links drops the destination's cells. It replaces
// what the slots held.
//
// It reads only dst's entries (table.get with a key) and changes in place
// (table.mod) only the slots whose action or link differs, adding the
// slots dst has no entry for (all of them the first time): on a switch
// every request is a round trip over SSH to bfrt_python, and a heal that
// takes one of four links out changes 46 to 49 of the 64 slots (the
// slots' links shift), where deleting and adding them all took 128
// requests and a read of the whole table.
func (s *Switch) SetSpray(ctx context.Context, dst int, links []int) error {
	if err := checkSpray(dst, links); err != nil {
		return err
	}
	have, err := s.EntriesWhere(ctx, TableSpray, map[string]int64{KeyDstFA: int64(dst)})
	if err != nil {
		return err
	}
	return s.writeSpray(ctx, dst, links, have)
}

func checkSpray(dst int, links []int) error {
	if dst < 0 || dst >= MaxFAs {
		return fmt.Errorf("spray: destination FA %d outside 0..%d", dst, MaxFAs-1)
	}
	if len(links) > MaxLinks {
		return fmt.Errorf("spray: %d links for FA %d, the table has %d slots", len(links), dst, MaxLinks)
	}
	return nil
}

// writeSpray makes dst's slots hold links, given have, what the table
// holds for dst (entries of other destinations in have are ignored).
func (s *Switch) writeSpray(ctx context.Context, dst int, links []int, have []p4switch.Entry) error {
	cur := map[int64]p4switch.Entry{}
	for _, e := range have {
		if e.Key[KeyDstFA] == int64(dst) {
			cur[e.Key[KeySlot]] = e
		}
	}
	for slot := 0; slot < MaxLinks; slot++ {
		e := p4switch.Entry{Key: map[string]int64{KeyDstFA: int64(dst), KeySlot: int64(slot)}, Action: ActionDrop}
		if len(links) > 0 {
			e.Action, e.Data = ActionToLink, map[string]int64{ParamLink: int64(links[slot%len(links)])}
		}
		old, ok := cur[int64(slot)]
		switch {
		case !ok:
			err := s.AddEntry(ctx, TableSpray, e)
			if err != nil {
				return err
			}
		case !p4switch.SameAction(old, e):
			if err := s.ModifyEntry(ctx, TableSpray, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// HealSpray is the control plane's half of self-healing (§5.9; on Tofino
// the program ages links and the control plane acts, p4/stardust's
// README): it reads the fabric ports, and rewrites the spraying slots of
// every destination in dsts to the links that are valid among those it
// sprays over now, keeping their order; a destination whose links are
// all gone keeps them (nothing better to send on). It returns the links
// it took out. The spraying table is read once; each destination's
// rewrite changes only the slots that differ (SetSpray).
func (s *Switch) HealSpray(ctx context.Context, ports []int, th int, dsts []int) ([]int, error) {
	links, err := s.FabricLinks(ctx, ports, th)
	if err != nil {
		return nil, err
	}
	valid := map[int]bool{}
	var out []int
	for _, l := range links {
		valid[l.Port] = l.Valid
		if !l.Valid {
			out = append(out, l.Port)
		}
	}
	es, err := s.Entries(ctx, TableSpray)
	if err != nil {
		return nil, err
	}
	reach := sprayLinks(es)
	for _, d := range dsts {
		var keep []int
		for _, p := range reach[d] {
			if v, known := valid[p]; !known || v {
				keep = append(keep, p)
			}
		}
		if len(keep) == len(reach[d]) || len(keep) == 0 {
			continue
		}
		if err := checkSpray(d, keep); err != nil {
			return nil, err
		}
		if err := s.writeSpray(ctx, d, keep, es); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// VOQCredits reads the credit balance, in frames, of each VOQ (FA
// program: RegCredit, §3.3).
func (s *Switch) VOQCredits(ctx context.Context, voqs []int) ([]int64, error) {
	return p4switch.ReadEach(ctx, s, RegCredit, voqs, MaxVOQs)
}

// FCICounts reads, per host port, the FCI-marked cells counted and not
// yet spent cancelling credits (FA program: RegFCI, §4.2).
func (s *Switch) FCICounts(ctx context.Context, ports []int) ([]int64, error) {
	return p4switch.ReadEach(ctx, s, RegFCI, ports, 512)
}

// ---- bring-up: what a Stardust fabric needs written before cells move ----
//
// Each method below replaces what it writes (the entries it owns are
// deleted first), so a bring-up can be run again. FabricSnapshot reads,
// before any of them writes, what they will change, so that a caller can
// journal its undo: every table a bring-up fills, with the entries found,
// and the registers it writes, with the values found.

// FabricSnapshot is what a Stardust bring-up of one switch changes, as
// found before it writes.
type FabricSnapshot struct {
	// Tables are the tables the bring-up fills, each with the entries it
	// held (none on a freshly started program). Undo: clear the table, then
	// add back what it held.
	Tables []TableSnapshot
	// Registers are the control-plane registers the bring-up writes, with
	// the values found. Undo: write them back.
	Registers []RegisterValue
}

// TableSnapshot is one table's entries as found.
type TableSnapshot struct {
	Table   string
	Entries []p4switch.Entry
}

// RegisterValue is one register index and its value (summed over pipes).
type RegisterValue struct {
	Name  string
	Index int
	Value int64
}

// fabricTables are the tables a bring-up of program fills.
func fabricTables(program string) ([]string, error) {
	switch program {
	case ecmp.Program:
		return []string{ecmp.TableWhoami, ecmp.TableGenFlow, ecmp.TableRoute, ecmp.TableECMPSlot}, nil
	case ProgramFA:
		return []string{TableWhoami, TableHostPort, TableGenFlow, TableCreditPort, TableCreditTo, TableReachPort, TableSpray}, nil
	case ProgramFE:
		return []string{TableWhoami, TableReachPort, TableSpray}, nil
	}
	return nil, fmt.Errorf("fabric snapshot: program %q (expected %s, %s or %s)", program, ProgramFA, ProgramFE, ecmp.Program)
}

// FabricSnapshot reads what a bring-up of program (ProgramFA,
// ProgramFE or ecmp.Program) will change on the switch. The ecmp
// program has no control-plane register (its flow registers are counters,
// cleared by ClearFlowCounts, not settings): only its tables.
func (s *Switch) FabricSnapshot(ctx context.Context, program string) (FabricSnapshot, error) {
	var snap FabricSnapshot
	tables, err := fabricTables(program)
	if err != nil {
		return snap, err
	}
	for _, t := range tables {
		es, err := s.Entries(ctx, t)
		if err != nil {
			return snap, err
		}
		snap.Tables = append(snap.Tables, TableSnapshot{Table: t, Entries: es})
	}
	var regs []string
	switch program {
	case ProgramFA:
		regs = []string{RegFCIThreshold, RegReasmTimeout}
	case ProgramFE:
		regs = []string{RegFCIThreshold}
	}
	for _, reg := range regs {
		v, err := p4switch.ReadEach(ctx, s, reg, []int{0}, 1)
		if err != nil {
			return snap, err
		}
		snap.Registers = append(snap.Registers, RegisterValue{Name: reg, Index: 0, Value: v[0]})
	}
	return snap, nil
}

// SetFabricID gives the switch its fabric id: the FA's number, or the
// FE's in its reachability cells (whoami's one entry, keyless; without
// it the program's id is 0).
func (s *Switch) SetFabricID(ctx context.Context, id int) error {
	if id < 0 || id >= MaxFAs {
		return fmt.Errorf("fabric id %d: expected 0..%d", id, MaxFAs-1)
	}
	return p4switch.ReplaceKeyless(ctx, s, TableWhoami, p4switch.Entry{Action: ActionSetID, Data: map[string]int64{ParamID: int64(id)}})
}

// FabricID reads the switch's fabric id; ok is false when none is set
// (the program then uses 0).
func (s *Switch) FabricID(ctx context.Context) (id int, ok bool, err error) {
	es, err := s.Entries(ctx, TableWhoami)
	if err != nil {
		return 0, false, err
	}
	for _, e := range es {
		if e.Action == ActionSetID {
			return int(e.Data[ParamID]), true, nil
		}
	}
	return 0, false, nil
}

// SetHostPorts names an FA's host ports: FA-local port number (what
// cells and credits carry as their destination port) -> dev port a
// released frame leaves by. It replaces every host port.
func (s *Switch) SetHostPorts(ctx context.Context, ports map[int]int) error {
	if err := s.ClearTable(ctx, TableHostPort); err != nil {
		return err
	}
	local := make([]int, 0, len(ports))
	for l := range ports {
		if l < 0 || l >= PortCount {
			return fmt.Errorf("host port %d: expected an FA-local port 0..%d", l, PortCount-1)
		}
		local = append(local, l)
	}
	sort.Ints(local)
	for _, l := range local {
		if err := s.AddEntry(ctx, TableHostPort, p4switch.Entry{Key: map[string]int64{KeyDstPort: int64(l)}, Action: ActionToHost,
			Data: map[string]int64{ParamPort: int64(ports[l])}}); err != nil {
			return err
		}
	}
	return nil
}

// VOQTarget is where a host frame goes: the VOQ (an index into the FA's
// credit register) of destination FA FA's host port Port (FA-local), in
// traffic class TC.
type VOQTarget struct {
	FA, Port, VOQ, TC int
}

func (v VOQTarget) check() error {
	switch {
	case v.FA < 0 || v.FA >= MaxFAs:
		return fmt.Errorf("VOQ target: FA %d outside 0..%d", v.FA, MaxFAs-1)
	case v.Port < 0 || v.Port >= PortCount:
		return fmt.Errorf("VOQ target: port %d outside 0..%d", v.Port, PortCount-1)
	case v.VOQ < 0 || v.VOQ >= MaxVOQs:
		return fmt.Errorf("VOQ target: VOQ %d outside 0..%d", v.VOQ, MaxVOQs-1)
	case v.TC < 0 || v.TC > 7:
		return fmt.Errorf("VOQ target: traffic class %d outside 0..7", v.TC)
	}
	return nil
}

// SetGenFlow spreads the host frames of generator application app over
// targets: the program draws one of MaxLinks slots per frame, and slot
// s goes to targets[s mod len(targets)] (so with 7 targets the first gets
// 10 of the 64 slots and the others 9). It replaces the application's
// slots; no targets drops its frames.
func (s *Switch) SetGenFlow(ctx context.Context, app int, targets []VOQTarget) error {
	if app < 0 || app > 7 {
		return fmt.Errorf("generator flow: application %d outside 0..7", app)
	}
	if len(targets) > MaxLinks {
		return fmt.Errorf("generator flow: %d targets for %d slots", len(targets), MaxLinks)
	}
	for _, v := range targets {
		if err := v.check(); err != nil {
			return err
		}
	}
	es, err := s.Entries(ctx, TableGenFlow)
	if err != nil {
		return err
	}
	for _, e := range es {
		if e.Key[KeyAppID] == int64(app) {
			if err := s.DeleteEntry(ctx, TableGenFlow, e.Key); err != nil {
				return err
			}
		}
	}
	if len(targets) == 0 {
		return nil
	}
	for slot := 0; slot < MaxLinks; slot++ {
		v := targets[slot%len(targets)]
		if err := s.AddEntry(ctx, TableGenFlow, p4switch.Entry{Key: map[string]int64{KeyAppID: int64(app), KeySlot: int64(slot)}, Action: ActionToVOQ,
			Data: map[string]int64{ParamFA: int64(v.FA), ParamPort: int64(v.Port), ParamVOQ: int64(v.VOQ), ParamTC: int64(v.TC)}}); err != nil {
			return err
		}
	}
	return nil
}

// SetCreditPorts names the host port (FA-local) each frame of a credit
// batch is for: packet id i -> ports[i]. The credit application then
// sends batches of len(ports) frames. It replaces every entry.
func (s *Switch) SetCreditPorts(ctx context.Context, ports []int) error {
	return s.byPacketID(ctx, TableCreditPort, ActionCreditFor, ParamPort, ports)
}

// SetReachPorts names the fabric port each frame of a reachability batch
// leaves by: packet id i -> links[i] (dev ports).
func (s *Switch) SetReachPorts(ctx context.Context, links []int) error {
	return s.byPacketID(ctx, TableReachPort, ActionReachOn, ParamLink, links)
}

func (s *Switch) byPacketID(ctx context.Context, table, action, param string, vals []int) error {
	if err := s.ClearTable(ctx, table); err != nil {
		return err
	}
	for i, v := range vals {
		if v < 0 || v >= PortCount {
			return fmt.Errorf("%s: port %d for packet %d outside 0..%d", table, v, i, PortCount-1)
		}
		if err := s.AddEntry(ctx, table, p4switch.Entry{Key: map[string]int64{KeyPacketID: int64(i)}, Action: action,
			Data: map[string]int64{param: int64(v)}}); err != nil {
			return err
		}
	}
	return nil
}

// CreditSource is a VOQ a port's credits go to: VOQ at source FA FA.
type CreditSource struct {
	FA, VOQ int
}

// CreditSlots is how many round-robin slots a host port's credits cycle
// over (credit_to's slot key, reg_credit_rr counting 0..255).
const CreditSlots = 256

// SetCreditSources lists the VOQs host port port (FA-local) hands its
// credits to, round robin: slot s of the port's CreditSlots goes to
// srcs[s mod len(srcs)] (§4.1's round robin over the VOQs that asked; the
// Tofino programs have no requests, so the list is the control plane's).
// It replaces the port's slots; no sources leaves its credits unaddressed.
func (s *Switch) SetCreditSources(ctx context.Context, port int, srcs []CreditSource) error {
	if port < 0 || port >= PortCount {
		return fmt.Errorf("credit sources: port %d outside 0..%d", port, PortCount-1)
	}
	if len(srcs) > CreditSlots {
		return fmt.Errorf("credit sources: %d sources for %d slots", len(srcs), CreditSlots)
	}
	for _, c := range srcs {
		if c.FA < 0 || c.FA >= MaxFAs || c.VOQ < 0 || c.VOQ >= MaxVOQs {
			return fmt.Errorf("credit source FA %d VOQ %d: expected FA 0..%d, VOQ 0..%d", c.FA, c.VOQ, MaxFAs-1, MaxVOQs-1)
		}
	}
	es, err := s.Entries(ctx, TableCreditTo)
	if err != nil {
		return err
	}
	for _, e := range es {
		if e.Key[KeyDstPort] == int64(port) {
			if err := s.DeleteEntry(ctx, TableCreditTo, e.Key); err != nil {
				return err
			}
		}
	}
	if len(srcs) == 0 {
		return nil
	}
	for slot := 0; slot < CreditSlots; slot++ {
		c := srcs[slot%len(srcs)]
		if err := s.AddEntry(ctx, TableCreditTo, p4switch.Entry{Key: map[string]int64{KeyDstPort: int64(port), KeySlot: int64(slot)}, Action: ActionToSource,
			Data: map[string]int64{ParamFA: int64(c.FA), ParamVOQ: int64(c.VOQ)}}); err != nil {
			return err
		}
	}
	return nil
}

// SetFCIThreshold sets the queue depth, in the traffic manager's buffer
// cells (FCIThreshold turns frames into them), at which an FE's output
// ports or an FA's fabric ports mark FCI; 0 turns the switch's marking
// off.
func (s *Switch) SetFCIThreshold(ctx context.Context, cells int) error {
	if cells < 0 {
		return fmt.Errorf("FCI threshold %d buffer cells: expected 0 or more", cells)
	}
	return s.WriteRegister(ctx, RegFCIThreshold, 0, int64(cells))
}

// FCIThreshold reads an FE's or FA's FCI threshold in buffer cells.
func (s *Switch) FCIThreshold(ctx context.Context) (int, error) {
	v, err := p4switch.ReadEach(ctx, s, RegFCIThreshold, []int{0}, 1)
	if err != nil {
		return 0, err
	}
	return int(v[0]), nil
}

// SetReassemblyTimeout sets an FA's reassembly timer (§4.1: the egress
// FA drops a packet whose reassembly timer expires; RegReasmTimeout, in
// ns): an early frame whose age, the FA's global timestamp minus its
// source's when it left for the fabric, has reached the timeout gives up
// every sequence number of its source before it and is released. 0 waits
// for ever. The FAs' global timestamps must be synced (as for the latency
// histogram).
func (s *Switch) SetReassemblyTimeout(ctx context.Context, d time.Duration) error {
	if d < 0 || d.Nanoseconds() > ReasmTimeoutMaxNs {
		return fmt.Errorf("reassembly timeout %v: expected 0 to %v", d, time.Duration(ReasmTimeoutMaxNs))
	}
	return s.WriteRegister(ctx, RegReasmTimeout, 0, d.Nanoseconds())
}

// ReassemblyTimeout reads an FA's reassembly timer.
func (s *Switch) ReassemblyTimeout(ctx context.Context) (time.Duration, error) {
	v, err := p4switch.ReadEach(ctx, s, RegReasmTimeout, []int{0}, 1)
	if err != nil {
		return 0, err
	}
	return time.Duration(v[0]) * time.Nanosecond, nil
}

// ReassemblyDrops reads, per source FA, the sequence numbers this FA gave
// up at a reassembly timeout and has not released since (RegReasmDrops):
// frames of that source lost in the fabric or dropped waiting here, in one
// request.
func (s *Switch) ReassemblyDrops(ctx context.Context, srcs []int) ([]int64, error) {
	return p4switch.ReadEach(ctx, s, RegReasmDrops, srcs, MaxFAs)
}

// Generator is a Stardust packet-generator application: batches of
// PerBatch frames (packet ids 0..PerBatch-1) of FrameBytes (FCS not
// counted), one batch every Period, Batches times, each frame carrying
// Cell. Cell.Kind says what the program makes of them (KindData host
// frames, taken by gen_flow to a VOQ; KindCredit credits, packet id ->
// credit_port, worth Cell.PayloadLength frames; KindReach reachability
// cells, packet id -> reach_port; KindAge aging ticks, packet id = the
// dev port aged).
type Generator struct {
	AppID int
	// Port is the generator port (68 on Tofino 1's pipe 0); EgressPort an
	// added port of the switch (the agent checks it is there; the program
	// decides where frames go).
	Port, EgressPort int
	FrameBytes       int
	Period           time.Duration
	// Jitter, when positive, adds to each gap between batches a uniform
	// draw from 0..Jitter (the generator's ibg_jitter).
	Jitter   time.Duration
	PerBatch int
	Batches  int
	Cell     Cell
}

// GeneratorSourceMAC is the source MAC of a Stardust generator frame: a
// locally administered address naming the application, as the agent's
// own frames do (02:74:62:<app>:00:00).
func GeneratorSourceMAC(app int) [6]byte { return [6]byte{0x02, 0x74, 0x62, byte(app), 0, 0} }

// StartGenerator starts a Stardust generator application with its cell in
// the packet buffer (GeneratorBuffer).
func (s *Switch) StartGenerator(ctx context.Context, g Generator) error {
	if g.Cell.Kind > KindAge {
		return fmt.Errorf("generator application %d: cell kind %d (expected data 0, credit 1, reachability 2 or aging 3)", g.AppID, g.Cell.Kind)
	}
	if g.FrameBytes < EthernetBytes+CellHeaderBytes {
		return fmt.Errorf("generator application %d: %d B frames cannot hold the %d B Ethernet and cell headers", g.AppID, g.FrameBytes, EthernetBytes+CellHeaderBytes)
	}
	return s.StartPktgen(ctx, p4switch.Pktgen{AppID: g.AppID, Port: g.Port, EgressPort: g.EgressPort, PacketBytes: g.FrameBytes, Interval: g.Period, IntervalJitter: g.Jitter,
		Batches: g.Batches, PerBatch: g.PerBatch, Buffer: GeneratorBuffer(GeneratorSourceMAC(g.AppID), g.Cell)})
}

// ---- reads ----

// LatencyHistogram reads an FA's fabric latency histogram (RegLatHist):
// bucket b counts the data cells that reached this FA b x
// LatencyBucket after their source FA sent them (the last bucket: that
// long or more).
func (s *Switch) LatencyHistogram(ctx context.Context) ([]int64, error) {
	return s.ReadRegisterRange(ctx, RegLatHist, 0, HistBuckets)
}

// LatencyBucket is the width of a latency histogram bucket.
const LatencyBucket = time.Duration(1) << LatBucketShift

// QueueHistogram reads an FE's output queue histogram (RegQHist):
// bucket b counts the data cells that found b x QueueBucketCells of the
// traffic manager's buffer cells ahead of them on enqueue, over the FE's
// ports (the last bucket: that many or more).
func (s *Switch) QueueHistogram(ctx context.Context) ([]int64, error) {
	return s.ReadRegisterRange(ctx, RegQHist, 0, HistBuckets)
}

// QueueBucketCells is the width of a queue histogram bucket in the traffic
// manager's buffer cells (TMCellBytes each).
const QueueBucketCells = 1 << QHistShift

// QueueDrops reads the frames each port's egress queue qid lost to a
// full buffer (the traffic manager's drop counter; on an FE, cells lost
// in the fabric).
func (s *Switch) QueueDrops(ctx context.Context, ports []int, qid int) ([]int64, error) {
	out := make([]int64, len(ports))
	for i, p := range ports {
		q, err := s.Queue(ctx, p, qid, false)
		if err != nil {
			return nil, err
		}
		out[i] = q.DropPackets
	}
	return out, nil
}
