package reactormodel

import (
	"fmt"
	"math"
	"time"

	"testbed/internal/sched"
)

// SlotRecord is one circuit of one slot: what the OCS, the ToR's PFC
// frames and the source host did with it. Times are from the start of the
// run.
type SlotRecord struct {
	Period   int64
	Slot     int
	Src, Dst int
	// Start is when the slot's night began, End when its light ended,
	// Gap the drawn reconfiguration gap and LitAt = Start + Gap.
	Start, End, Gap, LitAt time.Duration
	// UnpauseSent and PauseSent are when the ToR sent the PFC frames for
	// the source's class; Open and Close when they took effect at the
	// host (after the PFC on and off delays).
	UnpauseSent, Open, PauseSent, Close time.Duration
	// RateLimit is the class's circuit rate limit in this configuration,
	// in b/s (§3.3).
	RateLimit float64
	// FirstByte and LastByte bound when traffic crossed the circuit (-1:
	// none did).
	FirstByte, LastByte time.Duration
	// WireBytes crossed the circuit; Bytes is their payload.
	WireBytes, Bytes float64
}

// PeriodRecord is one period's schedule and when it was decided.
type PeriodRecord struct {
	Period           int64
	Start, DecidedAt time.Duration
	Schedule         sched.Schedule
}

// Night is one reconfiguration of the OCS.
type Night struct {
	Period     int64
	Slot       int
	Start, Gap time.Duration
}

// FlowResult is one flow over the measured interval.
type FlowResult struct {
	Flow
	Counters
	// GoodputBps is the payload delivered per second.
	GoodputBps float64
}

// Result is what happened over the measured interval [From, To).
type Result struct {
	From, To time.Duration
	Flows    []FlowResult
	// Slots are the records of the slots that started in the interval.
	Slots   []SlotRecord
	Periods []PeriodRecord
	Nights  []Night
	// GoodputBps is the payload delivered per second, all flows.
	GoodputBps float64
	// RxGoodputBps is the payload each host received per second.
	RxGoodputBps []float64
	// OfferedBytes and DeliveredBytes are the paced flows' wire bytes
	// offered and delivered; GoodputFraction is their ratio (NaN without
	// paced flows): the goodput of the ToR given the offered workload
	// (§5.4).
	OfferedBytes, DeliveredBytes float64
	GoodputFraction              float64
	// DutyCycle is the fraction of port-time during which circuits were
	// open to traffic: from the end of each slot's night budget to the end
	// of its light, summed over the ports lit in each slot, over ports x
	// time.
	DutyCycle float64
	// CircuitLoad is what crossed circuits over what the ports could have
	// carried at the link rate in the interval.
	CircuitLoad float64
	// GapMean and GapMax summarise the nights that began in the interval.
	GapMean, GapMax time.Duration
	// ShuntedBytes and DroppedBytes total the flows' counters.
	ShuntedBytes, DroppedBytes float64
}

// Mark starts a new measured interval at the current time.
func (m *Model) Mark() {
	m.markAt = m.now
	for _, f := range m.flows {
		f.mark = f.c
	}
	m.usableMark = m.usable
	m.markSlots = len(m.slots)
	m.markPeriods = len(m.periods)
	m.markNights = len(m.nights)
	// Records of the slot in progress belong to the interval they began in.
	for m.markSlots > 0 && m.slots[m.markSlots-1].Start >= m.now {
		m.markSlots--
	}
	for m.markPeriods > 0 && m.periods[m.markPeriods-1].Start >= m.now {
		m.markPeriods--
	}
	for m.markNights > 0 && m.nights[m.markNights-1].Start >= m.now {
		m.markNights--
	}
}

// Result reports the interval from the last Mark (or the start) to now.
func (m *Model) Result() Result {
	r := Result{From: m.markAt, To: m.now, RxGoodputBps: make([]float64, m.n), GoodputFraction: math.NaN()}
	secs := (m.now - m.markAt).Seconds()
	for _, f := range m.flows {
		fr := FlowResult{Flow: f.Flow, Counters: f.c.sub(f.mark)}
		if secs > 0 {
			fr.GoodputBps = fr.Delivered * f.payload * 8 / secs
		}
		r.GoodputBps += fr.GoodputBps
		r.RxGoodputBps[f.Dst] += fr.GoodputBps
		r.ShuntedBytes += fr.Shunted
		r.DroppedBytes += fr.Dropped
		if f.Kind == Paced {
			r.OfferedBytes += fr.Offered
			r.DeliveredBytes += fr.Delivered
		}
		r.CircuitLoad += fr.ViaCircuit
		r.Flows = append(r.Flows, fr)
	}
	if r.OfferedBytes > 0 {
		r.GoodputFraction = r.DeliveredBytes / r.OfferedBytes
	}
	portTime := float64(m.now-m.markAt) * float64(m.n)
	if portTime > 0 {
		r.DutyCycle = (m.usable - m.usableMark) / portTime
		r.CircuitLoad /= portTime * m.link
	} else {
		r.CircuitLoad = 0
	}
	for _, s := range m.slots[m.markSlots:] {
		if s.Start < m.now {
			r.Slots = append(r.Slots, s)
		}
	}
	for _, p := range m.periods[m.markPeriods:] {
		if p.Start < m.now {
			r.Periods = append(r.Periods, p)
		}
	}
	var sum time.Duration
	for _, nt := range m.nights[m.markNights:] {
		if nt.Start >= m.now {
			continue
		}
		r.Nights = append(r.Nights, nt)
		sum += nt.Gap
		r.GapMax = max(r.GapMax, nt.Gap)
	}
	if len(r.Nights) > 0 {
		r.GapMean = sum / time.Duration(len(r.Nights))
	}
	return r
}

// FlowCounters returns every flow's counters since the model's start, in
// the order the flows were given: what Result reports per flow, without
// building the rest of a Result (the simulated lab reads it often).
func (m *Model) FlowCounters() []Counters {
	out := make([]Counters, len(m.flows))
	for i, f := range m.flows {
		out[i] = f.c
	}
	return out
}

// Run builds a model, runs warmup periods, then measures periods more.
func Run(p Params, flows []Flow, warmup, periods int) (Result, error) {
	if warmup < 0 || periods < 1 {
		return Result{}, fmt.Errorf("reactor model: %d warm-up and %d measured periods, expected >= 0 and >= 1", warmup, periods)
	}
	m, err := New(p, flows)
	if err != nil {
		return Result{}, err
	}
	if warmup > 0 {
		if err := m.RunPeriods(warmup); err != nil {
			return Result{}, err
		}
	}
	m.Mark()
	if err := m.RunPeriods(periods); err != nil {
		return Result{}, err
	}
	return m.Result(), nil
}
