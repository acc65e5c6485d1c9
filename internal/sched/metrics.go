package sched

import (
	"fmt"
	"math"
)

// Report is what a schedule does with a demand over one period.
//
// Every pair's demand is split three ways, Circuit + EPS + Deferred = Demand:
// a pair with at least one circuit in the period sends over it what its
// circuits can carry, and the rest waits at the host for the next period
// (REACToR §3.2, third class constraint: a class unpaused for a circuit is
// not sent to the EPS in the same period); a pair with no circuit is left to
// the EPS (fourth class constraint).
type Report struct {
	// Circuit[i][j] is what i sends to j over circuits.
	Circuit [][]int64
	// EPS[i][j] is the demand of a pair with no circuit, left to the EPS.
	EPS [][]int64
	// Deferred[i][j] is what a pair with a circuit could not fit into it.
	Deferred [][]int64

	DemandBytes   int64
	CircuitBytes  int64
	EPSBytes      int64
	DeferredBytes int64

	// CircuitCapacityBytes is what the lit circuits could have carried:
	// the sum over slots and lit inputs of duration x LinkRate.
	CircuitCapacityBytes int64
	// EPSCapacityBytes is what one host may send to, or receive from, the
	// EPS in a period (EPSRate x W).
	EPSCapacityBytes int64
	// EPSLoad is the busiest host's EPS bytes (sent or received) over
	// EPSCapacityBytes; above 1 the EPS cannot carry its share in one
	// period. It is +Inf when there is EPS demand and no EPS.
	EPSLoad float64
	// EPSFits says whether every host's EPS bytes, in each direction, fit
	// in EPSCapacityBytes.
	EPSFits bool
	// EPSCarriedBytes is a lower bound on what the EPS delivers in the
	// period: each pair's EPS bytes scaled down by the load of the busier
	// of its two hosts, when that exceeds 1.
	EPSCarriedBytes int64

	// DutyCycle is the lit time over the period.
	DutyCycle float64
}

// DeliveredBytes is what reaches its destination this period: circuit
// bytes plus what the EPS carries.
func (r Report) DeliveredBytes() int64 { return r.CircuitBytes + r.EPSCarriedBytes }

// CircuitUtilization is CircuitBytes over CircuitCapacityBytes: how well
// the demand fills the circuits it was given (a pure circuit ToR handing
// small flows whole slots shows up here, REACToR §5.4).
func (r Report) CircuitUtilization() float64 {
	if r.CircuitCapacityBytes == 0 {
		return 0
	}
	return float64(r.CircuitBytes) / float64(r.CircuitCapacityBytes)
}

// Evaluate plays s once against d under the rates and period of c. It needs
// the shapes to agree (c.N ports, N x N demand, N-input slots) but not the
// schedule to be valid, so that an invalid one can be inspected too.
func Evaluate(s Schedule, d Demand, c Constraints) (Report, error) {
	if err := c.Validate(); err != nil {
		return Report{}, fmt.Errorf("evaluate: constraints: %w", err)
	}
	if err := d.Validate(c.N); err != nil {
		return Report{}, fmt.Errorf("evaluate: %w", err)
	}
	n := c.N
	capacity := NewDemand(n)
	lit := make([][]bool, n)
	for i := range lit {
		lit[i] = make([]bool, n)
	}
	r := Report{DutyCycle: s.DutyCycle()}
	for k, sl := range s.Slots {
		if len(sl.Perm) != n {
			return Report{}, fmt.Errorf("evaluate: slot %d: permutation has %d inputs, expected %d", k, len(sl.Perm), n)
		}
		b := bytesIn(sl.Duration, c.LinkRate)
		for i, j := range sl.Perm {
			if j == Dark {
				continue
			}
			if j < 0 || j >= n {
				return Report{}, fmt.Errorf("evaluate: slot %d: input %d -> output %d, expected an output in 0..%d or %d for dark", k, i, j, n-1, Dark)
			}
			capacity[i][j] += b
			lit[i][j] = true
			r.CircuitCapacityBytes += b
		}
	}
	r.Circuit, r.EPS, r.Deferred = NewDemand(n), NewDemand(n), NewDemand(n)
	sent := make([]int64, n)
	recv := make([]int64, n)
	for i := range n {
		for j := range n {
			v := d[i][j]
			r.DemandBytes += v
			if !lit[i][j] {
				r.EPS[i][j] = v
				r.EPSBytes += v
				sent[i] += v
				recv[j] += v
				continue
			}
			served := min(v, capacity[i][j])
			r.Circuit[i][j] = served
			r.Deferred[i][j] = v - served
			r.CircuitBytes += served
			r.DeferredBytes += v - served
		}
	}

	r.EPSCapacityBytes = bytesIn(s.Period, c.EPSRate)
	load := func(b int64) float64 {
		switch {
		case b == 0:
			return 0
		case r.EPSCapacityBytes == 0:
			return math.Inf(1)
		}
		return float64(b) / float64(r.EPSCapacityBytes)
	}
	r.EPSFits = true
	for h := range n {
		if sent[h] > r.EPSCapacityBytes || recv[h] > r.EPSCapacityBytes {
			r.EPSFits = false
		}
		r.EPSLoad = max(r.EPSLoad, load(sent[h]), load(recv[h]))
	}
	for i := range n {
		for j := range n {
			v := r.EPS[i][j]
			if v == 0 {
				continue
			}
			if f := max(1, load(sent[i]), load(recv[j])); !math.IsInf(f, 1) {
				r.EPSCarriedBytes += int64(float64(v) / f)
			}
		}
	}
	return r, nil
}
