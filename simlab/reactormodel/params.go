package reactormodel

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// GapLaw is the law of the OCS's reconfiguration gap (the night): the time
// from the start of a slot until the new circuits carry light. It is a
// normal distribution of mean Mean and standard deviation SD truncated to
// [Min, Max], drawn by rejection; SD 0 gives Mean every time. The simulated
// microsecond switch (simlab.GapDistribution) is this same type.
type GapLaw struct {
	Mean, SD, Min, Max time.Duration
}

// DefaultGap is Mordia's measured end-to-end reconfiguration delay (MEMS
// switching plus transceiver lock): about 12 us on average, 14.84 us the
// largest observed (REACToR §4, Fig. 5). SD 1 us on [9 us, 15 us] puts the
// largest of a few thousand draws near 15 us.
func DefaultGap() GapLaw {
	return GapLaw{Mean: 12 * time.Microsecond, SD: time.Microsecond, Min: 9 * time.Microsecond, Max: 15 * time.Microsecond}
}

// Validate checks the law.
func (g GapLaw) Validate() error {
	switch {
	case g.Min <= 0:
		return fmt.Errorf("reconfiguration gap: min %v, expected a positive duration", g.Min)
	case g.Max < g.Min:
		return fmt.Errorf("reconfiguration gap: max %v is below min %v", g.Max, g.Min)
	case g.Mean < g.Min || g.Mean > g.Max:
		return fmt.Errorf("reconfiguration gap: mean %v is outside [%v, %v]", g.Mean, g.Min, g.Max)
	case g.SD < 0:
		return fmt.Errorf("reconfiguration gap: standard deviation %v is negative", g.SD)
	}
	return nil
}

// Draw returns one gap.
func (g GapLaw) Draw(r *rand.Rand) time.Duration {
	if g.SD <= 0 {
		return g.Mean
	}
	for range 10000 {
		x := float64(g.Mean) + r.NormFloat64()*float64(g.SD)
		if x >= float64(g.Min) && x <= float64(g.Max) {
			return time.Duration(math.Round(x))
		}
	}
	// A window far in the tail: uniform within it.
	return g.Min + time.Duration(r.Float64()*float64(g.Max-g.Min))
}

// PFCDelays are the times from the ToR sending an 802.1Qbb PFC frame for a
// class to the host's traffic of that class actually stopping (Off) or
// arriving (On) at the ToR. Each frame's delay is drawn uniformly from its
// range.
//
// REACToR §3.4 measured them on an Intel 82599 10 Gb/s NIC: off 1,014 to
// 2,188 ns, depending on where in the frame being sent the PFC frame lands
// (more than 185.6 ns into it and the NIC sends one more frame before
// pausing); on 1.2 to 1.3 us. A PFC frame landing at a uniformly random
// point of the frame in flight gives exactly a uniform off delay over a
// range one frame time wide, which is what the measured range is (1,174 ns,
// about one 1500-byte frame at 10 Gb/s). The paper has no measurement at
// 100 Gb/s; the same values are used there.
type PFCDelays struct {
	OffMin, OffMax time.Duration
	OnMin, OnMax   time.Duration
}

// DefaultPFC is §3.4's measurement.
func DefaultPFC() PFCDelays {
	return PFCDelays{OffMin: 1014 * time.Nanosecond, OffMax: 2188 * time.Nanosecond,
		OnMin: 1200 * time.Nanosecond, OnMax: 1300 * time.Nanosecond}
}

func (d PFCDelays) validate() error {
	if d.OffMin < 0 || d.OffMax < d.OffMin {
		return fmt.Errorf("PFC off delay [%v, %v], expected 0 <= min <= max", d.OffMin, d.OffMax)
	}
	if d.OnMin < 0 || d.OnMax < d.OnMin {
		return fmt.Errorf("PFC on delay [%v, %v], expected 0 <= min <= max", d.OnMin, d.OnMax)
	}
	return nil
}

func uniform(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

// Framing is what a frame costs on the wire beyond its payload. Flows are
// carried as wire bytes (every frame with its headers, preamble and
// inter-frame gap); goodput is the payload part of what arrives.
type Framing struct {
	// MTU is the IP packet size (1500 in the prototype, §3.4).
	MTU int
	// L2Overhead is what Ethernet adds per packet on the wire: 14 B
	// header, 4 B FCS, 8 B preamble and SFD, 12 B inter-frame gap
	// (IEEE 802.3).
	L2Overhead int
	// TCPIPHeaders is IPv4 (20 B) plus TCP with the timestamp option
	// (32 B), as Linux sends by default (RFC 7323).
	TCPIPHeaders int
	// UDPIPHeaders is IPv4 (20 B) plus UDP (8 B): the prototype's pktgen
	// traffic (§5) and the paced flows here.
	UDPIPHeaders int
	// AckWire is one pure TCP ACK on the wire: 14 + 20 + 32 + 4 = 70 B
	// frame plus 20 B of preamble and gap.
	AckWire int
	// AckEvery is the number of full segments one ACK covers: 2, the
	// delayed-ACK rule of RFC 1122 §4.2.3.2 and RFC 5681 §4.2. Receivers
	// that coalesce (GRO/LRO) acknowledge less often.
	AckEvery int
}

// DefaultFraming is standard Ethernet with a 1500-byte MTU.
func DefaultFraming() Framing {
	return Framing{MTU: 1500, L2Overhead: 38, TCPIPHeaders: 52, UDPIPHeaders: 28, AckWire: 90, AckEvery: 2}
}

func (f Framing) validate() error {
	if f.MTU <= f.TCPIPHeaders || f.MTU <= f.UDPIPHeaders || f.L2Overhead < 0 || f.TCPIPHeaders < 0 || f.UDPIPHeaders < 0 {
		return fmt.Errorf("framing: MTU %d with %d B of TCP/IP and %d B of UDP/IP headers, L2 overhead %d: expected headers smaller than the MTU and nothing negative",
			f.MTU, f.TCPIPHeaders, f.UDPIPHeaders, f.L2Overhead)
	}
	if f.AckWire <= 0 || f.AckEvery < 1 {
		return fmt.Errorf("framing: ACK of %d B every %d segments, expected a positive size and at least 1", f.AckWire, f.AckEvery)
	}
	return nil
}

func (f Framing) wire() float64 { return float64(f.MTU + f.L2Overhead) }

// payload is the goodput carried by one wire byte of a flow of kind k.
func (f Framing) payload(k FlowKind) float64 {
	h := f.UDPIPHeaders
	if k == Bulk {
		h = f.TCPIPHeaders
	}
	return float64(f.MTU-h) / f.wire()
}

// ackRatio is the ACK wire bytes per data wire byte.
func (f Framing) ackRatio() float64 { return float64(f.AckWire) / (float64(f.AckEvery) * f.wire()) }

// DemandSource says where the controller's demand matrix comes from.
type DemandSource int

const (
	// Reported: the hosts' demand reports, the occupancy of each traffic
	// class when the controller reads them (§3.1: "the occupancy of these
	// traffic classes defines the imminent end-host demand").
	Reported DemandSource = iota
	// Oracle: the offered load of the flows active when the controller
	// decides, for one period (a paced flow's rate x W; a bulk flow, which
	// takes all it can, the link rate x W). The prototype and the §5.4
	// simulations use a demand oracle (§3.1, §3.2).
	Oracle
)

func (d DemandSource) String() string {
	switch d {
	case Reported:
		return "reported"
	case Oracle:
		return "oracle"
	}
	return fmt.Sprintf("DemandSource(%d)", int(d))
}

// Params describe one hybrid ToR, its hosts, its OCS and its controller.
// Zero values take the defaults noted (see Defaults).
type Params struct {
	// Hosts is the number of hosts, one per ToR downlink and OCS port.
	Hosts int
	// LinkRate is each host's link to the ToR and each circuit, in b/s:
	// 10 Gb/s in the prototype (§4), 100 Gb/s in §5.4.
	LinkRate float64
	// EPSRate is what each host may send into, and receive from, the
	// packet switch, in b/s: 1 Gb/s in the prototype (§4), 10 or 20 Gb/s
	// in §5.4. Zero is a pure circuit ToR.
	EPSRate float64
	// Period is the scheduling period W (1.5 ms in §5.2, 3 ms in §4 and
	// §5.4).
	Period time.Duration
	// Delta is the night budgeted per slot, the reconfiguration delay the
	// controller assumes (30 us in the prototype, §4; 20 us in §5.4). The
	// gap law's maximum must fit in it.
	Delta time.Duration
	// MinSlot is the shortest lit configuration a scheduler may use,
	// not counting Delta (20 us in §5.4: 40 us including the gap).
	MinSlot time.Duration
	// Gap is the OCS's reconfiguration gap (default DefaultGap).
	Gap GapLaw
	// PFC are the pause and unpause delays (default DefaultPFC).
	PFC PFCDelays
	// PauseLead is how long before a slot ends the ToR sends the pause
	// frame for the class on the circuit (default PFC.OffMax: all
	// circuit traffic has stopped when the OCS starts reconfiguring,
	// §3.4). Traffic still arriving after the circuit goes dark is
	// shunted to the EPS by the ToR's classifier.
	PauseLead time.Duration
	// UnpauseLead is how long before the night budget ends the ToR sends
	// the unpause frame for the next circuit's class (default PFC.OnMin:
	// traffic resumes no earlier than the budget's end; §3.4 hides the
	// first microsecond of a PFC delay the same way).
	UnpauseLead time.Duration
	// UnpauseAtLight sends the unpause frame when the circuit actually
	// lights (the end of the drawn gap) instead of at the budget's end,
	// as if the ToR saw the transceivers lock. The prototype assumes the
	// budget (§4).
	UnpauseAtLight bool
	// ScheduleLead is how long before a period boundary the controller
	// reads the demand and computes the next period's schedule (default
	// 100 us: the schedule has to reach the hosts, which takes under
	// 15 us, §4, and the switch loads it just before the period starts,
	// §5.2 Fig. 7). It must exceed PauseLead.
	ScheduleLead time.Duration
	// Demand is where the controller's demand comes from (default
	// Reported).
	Demand DemandSource
	// Scheduler computes each period's schedule (default: Solstice from
	// internal/sched, keeping the number of configurations
	// that delivers the most when there is an EPS, all of them when
	// there is none).
	Scheduler Scheduler
	// Framing is the frame arithmetic (default DefaultFraming).
	Framing Framing
	// EPSBuffer is the packet switch's buffer per output port, in bytes;
	// traffic beyond it is dropped (0: unbounded).
	EPSBuffer float64
	// MaxStep bounds the fluid step (default 20 us when there are bulk
	// flows, whose ACK clock is sampled once a step; otherwise steps end
	// only at slot, period, decision and flow events, where the fluid
	// service is exact).
	MaxStep time.Duration
	// Seed drives the gap and PFC delay draws.
	Seed uint64
	// NoSlotRecords skips the per-slot, per-port records (long sweeps
	// that need only totals).
	NoSlotRecords bool
}

// Defaults is the prototype of §4 and §5.2: 8 hosts at 10 Gb/s, a 1 Gb/s
// EPS, 1.5 ms periods, a 30 us night budget in configurations of at least
// 160 us ("delivers at least 81% link efficiency", §4), Mordia's gap law,
// the measured PFC delays.
func Defaults() Params {
	return Params{
		Hosts:    8,
		LinkRate: 10e9,
		EPSRate:  1e9,
		Period:   1500 * time.Microsecond,
		Delta:    30 * time.Microsecond,
		MinSlot:  130 * time.Microsecond,
	}
}

// Section54 is the simulation of §5.4: 64 hosts at 100 Gb/s, an EPS of
// epsRate b/s per host (10 or 20 Gb/s; 0 for the pure circuit ToR), 3 ms
// periods, a 20 us reconfiguration delay and configurations of at least
// 40 us including it, schedules from a demand oracle.
func Section54(epsRate float64) Params {
	return Params{
		Hosts:    64,
		LinkRate: 100e9,
		EPSRate:  epsRate,
		Period:   3 * time.Millisecond,
		Delta:    20 * time.Microsecond,
		MinSlot:  20 * time.Microsecond,
		Demand:   Oracle,
	}
}

func (p *Params) fill(hasBulk bool) {
	if p.Gap == (GapLaw{}) {
		p.Gap = DefaultGap()
	}
	if p.PFC == (PFCDelays{}) {
		p.PFC = DefaultPFC()
	}
	if p.PauseLead == 0 {
		p.PauseLead = p.PFC.OffMax
	}
	if p.UnpauseLead == 0 {
		p.UnpauseLead = p.PFC.OnMin
	}
	if p.ScheduleLead == 0 {
		p.ScheduleLead = 100 * time.Microsecond
	}
	if p.Framing == (Framing{}) {
		p.Framing = DefaultFraming()
	}
	if p.MaxStep == 0 && hasBulk {
		p.MaxStep = 20 * time.Microsecond
	}
}

// Validate checks the parameters (after defaults are filled in).
func (p Params) Validate() error {
	var errs []error
	if p.Hosts < 2 {
		errs = append(errs, fmt.Errorf("%d hosts, expected at least 2", p.Hosts))
	}
	if !(p.LinkRate > 0) || math.IsInf(p.LinkRate, 0) {
		errs = append(errs, fmt.Errorf("link rate %g b/s, expected a positive finite rate", p.LinkRate))
	}
	if !(p.EPSRate >= 0) || p.EPSRate > p.LinkRate {
		errs = append(errs, fmt.Errorf("EPS rate %g b/s, expected between 0 and the link rate %g b/s", p.EPSRate, p.LinkRate))
	}
	if p.Period <= 0 {
		errs = append(errs, fmt.Errorf("period %v, expected a positive duration", p.Period))
	}
	if p.MinSlot < 0 {
		errs = append(errs, fmt.Errorf("minimum slot %v, expected >= 0", p.MinSlot))
	}
	if err := p.Gap.Validate(); err != nil {
		errs = append(errs, err)
	} else if p.Gap.Max > p.Delta {
		errs = append(errs, fmt.Errorf("night budget delta %v is shorter than the switch's longest gap %v: circuits could light after the hosts are unpaused", p.Delta, p.Gap.Max))
	}
	if err := p.PFC.validate(); err != nil {
		errs = append(errs, err)
	}
	if p.PauseLead < 0 || p.UnpauseLead < 0 {
		errs = append(errs, fmt.Errorf("pause lead %v, unpause lead %v: expected >= 0", p.PauseLead, p.UnpauseLead))
	}
	if p.ScheduleLead <= p.PauseLead || p.ScheduleLead >= p.Period {
		errs = append(errs, fmt.Errorf("schedule lead %v, expected more than the pause lead %v and less than the period %v", p.ScheduleLead, p.PauseLead, p.Period))
	}
	if p.Demand != Reported && p.Demand != Oracle {
		errs = append(errs, fmt.Errorf("demand source %v, expected reported or oracle", p.Demand))
	}
	if err := p.Framing.validate(); err != nil {
		errs = append(errs, err)
	}
	if !(p.EPSBuffer >= 0) {
		errs = append(errs, fmt.Errorf("EPS buffer %g B, expected >= 0", p.EPSBuffer))
	}
	if p.MaxStep < 0 {
		errs = append(errs, fmt.Errorf("max step %v, expected >= 0", p.MaxStep))
	}
	return errors.Join(errs...)
}
