package stardust

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// The fabric's configuration and what a run of it measures: the contract
// between the Stardust recipes, which set a fabric up and read its
// statistics, and the simulated lab's cell-level model, which runs it
// (simlab/stardustmodel keeps these as its Config, Stats and PacketOpts).
// Every parameter notes its source; those the paper leaves open are marked
// ours.

// Fabric is one Stardust fabric and its offered traffic: the
// configuration of the cell-level model (simlab/stardustmodel) and of the
// simulated fabric that serves it.
type Fabric struct {
	// FAs is the number of Fabric Adapters (§6.2: 256).
	FAs int
	// FEs is the number of first-tier Fabric Elements (§6.2: 128).
	FEs int
	// LinksPerFA is t, the fabric links of one FA (§6.2: 32).
	LinksPerFA int
	// Groups splits the FAs and first-tier FEs into equal groups: an FA's
	// links go to the FEs of its group, link j to the group's FE j mod
	// (FEs/Groups), so an FE has LinksPerFA/(FEs/Groups) parallel links to
	// each FA of its group. One FE stage needs Groups 1 (every FE reaches
	// every FA); §6.2's two tiers are 8 groups of 32 FAs and 16 FEs.
	// 0 is 1.
	Groups int
	// Stages is 1 (FA-FE-FA) or 2 (FA-FE1-FE2-FE1-FA). 0 is 1.
	Stages int
	// FE2s is the number of second-tier FEs when Stages is 2 (§6.2: 64);
	// each first-tier FE has one link to each, so FE2s should equal a
	// first-tier FE's links to FAs for a non-blocking fabric.
	FE2s int
	// ReachPeriodSlots is the period of reachability cells on every link,
	// c/f of App. E in slots; 0 leaves the tables as built at the start
	// (every link valid) and skips the bookkeeping. Reachability cells
	// travel the control crossbar (§4.2) and take no data slot.
	ReachPeriodSlots int
	// ReachTh is th (App. E, Table 4: 3): good cells before a link is
	// valid, missed periods before it is not.
	ReachTh int
	// PortsPerFA is the FA's host-facing ports, each with its own egress
	// credit scheduler (§3.3).
	PortsPerFA int
	// PortBps is a host port's rate (§6.3: 10 Gb/s; §2.2: 100GE).
	PortBps float64
	// LinkBps is a fabric link's rate (Table 4: 50 Gb/s).
	LinkBps float64
	// CellBytes is a cell's payload bound (§3.2: e.g. 256 B; §6.1.1: 64 B).
	CellBytes int
	// CellHeaderBytes is the cell header: destination FA and port and a
	// sequence number (§3.2 "a small header"). 8 B is ours.
	CellHeaderBytes int
	// LinkOverheadBytes is the per-cell physical overhead on a fabric link
	// (§6.2 deducts "physical protocol overheads"); 8 B is ours.
	LinkOverheadBytes int
	// CreditBytes is what one credit lets a VOQ release (§3.3, §6.3: 4 KB;
	// §6.1.1: 2 KB).
	CreditBytes int
	// SpeedUp is the credit rate above the port rate (§4.1: e.g. 2%; §6.3:
	// 3%): credits flow at PortBps*(1+SpeedUp).
	SpeedUp float64
	// Priorities is the number of traffic classes, each with its own VOQ;
	// the scheduler serves them by strict priority, round robin within one
	// (§4.1).
	Priorities int
	// RefreshRounds is how many rounds over the links one random
	// permutation is used before it is replaced (§5.3 "every few rounds").
	// 0 never replaces it (a fixed order, to show synchronisation).
	RefreshRounds int
	// PropDelay is a fabric link's propagation delay (§6.2: 100 m links;
	// §5.6: 100 m is half a microsecond).
	PropDelay time.Duration
	// FEQueueCells is an FE output queue's capacity; a cell arriving to a
	// full queue is lost and counted (§5.5: the FE should never lose one).
	FEQueueCells int
	// FCIThreshold is the FE queue depth at or above which cells carry the
	// Fabric Congestion Indication (§4.2); 0 disables FCI.
	FCIThreshold int
	// FCIDecrease is the fraction by which an egress scheduler cuts its
	// credit rate on an FCI cell (at most once per control round trip,
	// as the cells marked before a cut took effect say nothing new), and FCIRecoverSlots how
	// many slots it takes to climb back linearly to the full rate. §4.2
	// says only that FCI "throttles the credit rate"; these are ours.
	FCIDecrease     float64
	FCIRecoverSlots int
	// FCIReaction is the egress scheduler's law on FCI: "cut" (the
	// FCIDecrease/FCIRecoverSlots law above) or "proportional" (the
	// Tofino programs' law, p4/stardust/README.md's FCI row: the
	// scheduler counts the marked cells that reach its port and cancels
	// one credit for each credit's worth of them, CreditCells, so its
	// credit rate falls by the share of cells marked). "" is "cut". Both
	// are ours: §4.2 says only that FCI throttles the credit rate.
	FCIReaction string
	// EgressStopBytes is the egress port buffer level above which the
	// scheduler stops sending credits (§4.1 "when the egress buffer is
	// close to full").
	EgressStopBytes int
	// Load is the offered load of every host port as a fraction of
	// PortBps: Poisson packet arrivals, destinations uniform over the
	// ports of the other FAs.
	Load float64
	// PacketBytes is the packets' size.
	PacketBytes int
	// HighShare is the fraction of packets in priority 0 (the highest)
	// when Priorities > 1; the rest go to priority Priorities-1.
	HighShare float64
}

// DefaultFabric is a small fabric with the paper's per-link parameters: 50 Gb/s
// links (Table 4), 256 B cells (§3.2), 4 KB credits and 3% speed-up (§6.3),
// 100 m links (§6.2), and a fabric speed-up of 1 (as many fabric links as
// host ports, of equal rate).
func DefaultFabric() Fabric {
	return Fabric{
		FAs: 16, FEs: 4, LinksPerFA: 8, PortsPerFA: 8,
		PortBps: 50e9, LinkBps: 50e9,
		CellBytes: 256, CellHeaderBytes: 8, LinkOverheadBytes: 8,
		CreditBytes: 4096, SpeedUp: 0.03, Priorities: 1,
		RefreshRounds: 4, PropDelay: 500 * time.Nanosecond,
		FEQueueCells: 128, FCIThreshold: 32, FCIDecrease: 0.1, FCIRecoverSlots: 5000,
		EgressStopBytes: 64 << 10, Load: 0.7, PacketBytes: 1500, HighShare: 0.5,
	}
}

// The FCI reactions (Fabric.FCIReaction).
const (
	FCICut          = "cut"
	FCIProportional = "proportional"
)

// Reaction is FCIReaction with its default ("" is "cut").
func (c Fabric) Reaction() string {
	if c.FCIReaction == "" {
		return FCICut
	}
	return c.FCIReaction
}

// CreditCells is a credit's worth of cells at the model's cell size: the
// marked cells that cancel one credit under the proportional FCI law.
func (c Fabric) CreditCells() int { return (c.CreditBytes + c.CellBytes - 1) / c.CellBytes }

// NGroups and NStages are Groups and Stages with their defaults (0 is 1).
func (c Fabric) NGroups() int { return max(c.Groups, 1) }
func (c Fabric) NStages() int { return max(c.Stages, 1) }

// PaperFabric is §6.2's two-tier fabric: 256 FAs of 32 links, 128 first-tier FEs
// in 8 groups (64 links to FAs and 64 up each), 64 second-tier FEs of 128
// links, 100 m links; 50 Gb/s links and 256 B cells (§6.2's extrapolation,
// Table 4), eight 200 Gb/s host ports per FA (a fabric speed-up of 1),
// reachability cells every 10 us with th 3 (Table 4).
func PaperFabric() Fabric {
	c := DefaultFabric()
	c.FAs, c.FEs, c.LinksPerFA, c.Groups, c.Stages, c.FE2s = 256, 128, 32, 8, 2, 64
	c.PortsPerFA, c.PortBps = 8, 200e9
	c.ReachPeriodSlots, c.ReachTh = int(math.Round(10e-6/c.SlotSeconds())), 3
	return c
}

// SlotSeconds is one fabric cell time: a full cell with its header and the
// link overhead on one fabric link.
func (c Fabric) SlotSeconds() float64 {
	return float64(c.CellBytes+c.CellHeaderBytes+c.LinkOverheadBytes) * 8 / c.LinkBps
}

// CreditRateBps is the egress scheduler's credit rate in bytes' worth of
// data per second: port rate x (1 + speed-up) (§4.1).
func (c Fabric) CreditRateBps() float64 { return c.PortBps * (1 + c.SpeedUp) }

// Validate says what is wrong with c.
func (c Fabric) Validate() error {
	var errs []error
	errs = append(errs, c.validateSizes()...)
	if err := c.validateTopology(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.validateRates()...)
	return errors.Join(errs...)
}

// validateSizes checks the counts and sizes that must be positive.
func (c Fabric) validateSizes() []error {
	var errs []error
	pos := func(name string, v int) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s %d must be positive", name, v))
		}
	}
	pos("FAs", c.FAs)
	pos("FEs", c.FEs)
	pos("LinksPerFA", c.LinksPerFA)
	pos("PortsPerFA", c.PortsPerFA)
	pos("CellBytes", c.CellBytes)
	pos("CreditBytes", c.CreditBytes)
	pos("Priorities", c.Priorities)
	pos("FEQueueCells", c.FEQueueCells)
	pos("PacketBytes", c.PacketBytes)
	if c.FAs < 2 {
		errs = append(errs, errors.New("at least 2 FAs"))
	}
	return errs
}

// validateTopology checks that the groups and stages make a fabric in
// which every FA reaches every other: the first problem found, or nil.
func (c Fabric) validateTopology() error {
	g, st := c.NGroups(), c.NStages()
	switch {
	case st != 1 && st != 2:
		return fmt.Errorf("Stages %d: expected 1 or 2", c.Stages)
	case g < 1 || c.FAs%g != 0 || c.FEs%g != 0:
		return fmt.Errorf("Groups %d must divide FAs %d and FEs %d", g, c.FAs, c.FEs)
	case st == 1 && g != 1:
		return fmt.Errorf("one FE stage needs Groups 1, not %d: an FE must reach every FA", g)
	case c.FEs > 0 && c.LinksPerFA%(c.FEs/g) != 0:
		return fmt.Errorf("LinksPerFA %d is not a multiple of the %d FEs of a group", c.LinksPerFA, c.FEs/g)
	case st == 2 && c.FE2s <= 0:
		return fmt.Errorf("two FE stages need FE2s > 0, not %d", c.FE2s)
	}
	return nil
}

// validateRates checks the rates, delays, reachability cells and the
// congestion reaction's parameters.
func (c Fabric) validateRates() []error {
	var errs []error
	if c.ReachPeriodSlots < 0 || (c.ReachPeriodSlots > 0 && c.ReachTh <= 0) {
		errs = append(errs, fmt.Errorf("ReachPeriodSlots %d, ReachTh %d: expected a period >= 0 and th > 0 with it", c.ReachPeriodSlots, c.ReachTh))
	}
	if c.PortBps <= 0 || c.LinkBps <= 0 {
		errs = append(errs, errors.New("PortBps and LinkBps must be positive"))
	}
	if c.SpeedUp < 0 || c.Load < 0 || c.PropDelay < 0 || c.RefreshRounds < 0 || c.FCIThreshold < 0 {
		errs = append(errs, errors.New("SpeedUp, Load, PropDelay, RefreshRounds, FCIThreshold must not be negative"))
	}
	if c.FCIDecrease < 0 || c.FCIDecrease >= 1 {
		errs = append(errs, fmt.Errorf("FCIDecrease %g outside [0,1)", c.FCIDecrease))
	}
	switch c.FCIReaction {
	case "", FCICut, FCIProportional:
	default:
		errs = append(errs, fmt.Errorf("FCIReaction %q: expected %q or %q", c.FCIReaction, FCICut, FCIProportional))
	}
	if c.FCIThreshold > 0 && c.Reaction() == FCICut && c.FCIRecoverSlots <= 0 {
		errs = append(errs, errors.New("FCIRecoverSlots must be positive with FCI on"))
	}
	if c.HighShare < 0 || c.HighShare > 1 {
		errs = append(errs, fmt.Errorf("HighShare %g outside [0,1]", c.HighShare))
	}
	return errs
}

// FabricStats is what a run of a Fabric measured.
type FabricStats struct {
	Slots        int64
	SlotSeconds  float64
	CellsSent    int64 // cells that left a source FA
	CellsArrived int64 // cells that reached their destination FA
	CellsLost    int64 // cells that found an FE queue full
	// CellsLostFailed counts cells sent on a failed link or to a failed
	// FE, or queued in an FE when it failed; CellsNoRoute those an FE
	// held for a destination its table said no link reached.
	CellsLostFailed int64
	CellsNoRoute    int64
	// CellsCorrupted counts cells a corrupting link lost (errors.go).
	CellsCorrupted int64
	FCICells       int64 // cells that arrived carrying FCI
	// FCICancelled counts the credits the proportional FCI law cancelled
	// (Fabric.FCIReaction), PortFCICells[g] and PortFCICancelled[g] the
	// marked cells and cancelled credits of port g.
	FCICancelled     int64
	PortFCICells     []int64
	PortFCICancelled []int64
	Credits          int64 // credits granted, all ports
	BytesOffered     int64 // packet bytes that arrived at the FAs
	BytesArrived     int64 // packet bytes that reached the destination FA
	Bursts           int64 // credits that released data: each is packed as a unit
	BurstBytes       int64 // the packet bytes they released
	Packets          int64 // packets they released
	// QueueHist[k] counts (slot, last-stage FE output queue) samples with
	// k cells queued, taken after the slot's arrivals and before its
	// departure (the cell in service counts).
	QueueHist []int64
	// LatencyHist[k] counts cells whose fabric traversal, from leaving
	// the source FA to reaching the destination FA, took k slots.
	LatencyHist []int64
	// UplinkCells[fa*LinksPerFA+j] counts cells sprayed on FA fa's link j.
	UplinkCells []int64
	// UplinkDst[(fa*LinksPerFA+j)*FAs+d] counts those of them bound for
	// FA d.
	UplinkDst []int64
	// FELinkBusy counts slots in which a last-stage FE output link sent a cell,
	// summed over the links; FELinks is their number.
	FELinkBusy int64
	FELinks    int
	// PortBytes[g] is the bytes delivered to global destination port g,
	// and PortCredits[g] the credits its scheduler granted.
	PortBytes   []int64
	PortCredits []int64
	// PrioOffered and PrioArrived are packet bytes offered and delivered
	// per priority.
	PrioOffered []int64
	PrioArrived []int64
}

// PacketFabricOpts are the parameters of the packet-switched fabric the
// paper compares Stardust with, beyond its Fabric.
type PacketFabricOpts struct {
	// BufferBytes is every switch output's buffer.
	BufferBytes int
	// InitWindow is a flow's first window in packets (Linux: 10).
	InitWindow int
	// RTO is the retransmission timeout.
	RTO time.Duration
	// OpenLoop sends every flow at its port rate with no window, and
	// never again what is lost: a burst pushed into the fabric, shorter
	// than congestion control's reaction (§5.2).
	OpenLoop bool
	// Spray sends each packet on a random uplink and a random spine
	// downlink instead of the flow's hashed ones: load balancing as good
	// as a packet fabric gets (§5.2 "even with multi-path routing").
	Spray bool
	// Classes is the number of traffic classes (0 is 1): every switch
	// output keeps a buffer of BufferBytes per class and serves them by
	// strict priority, class 0 first.
	Classes int
}

// Utilisation is the last-stage FE links' busy fraction: cells sent over
// link-slots.
func (s FabricStats) Utilisation() float64 {
	if s.Slots == 0 || s.FELinks == 0 {
		return 0
	}
	return float64(s.FELinkBusy) / float64(s.Slots) / float64(s.FELinks)
}

// LatencyQuantile is the q-quantile of the cells' fabric latency, in
// seconds (slots times the slot time).
func (s FabricStats) LatencyQuantile(q float64) float64 {
	var n int64
	for _, c := range s.LatencyHist {
		n += c
	}
	if n == 0 {
		return 0
	}
	want := int64(q * float64(n))
	var seen int64
	for k, c := range s.LatencyHist {
		seen += c
		if seen > want {
			return float64(k) * s.SlotSeconds
		}
	}
	return float64(len(s.LatencyHist)-1) * s.SlotSeconds
}

// QueueTail is P(Q >= k) over the last-stage FE queue samples.
func (s FabricStats) QueueTail(k int) float64 {
	var n, above int64
	for j, c := range s.QueueHist {
		n += c
		if j >= k {
			above += c
		}
	}
	if n == 0 {
		return 0
	}
	return float64(above) / float64(n)
}
