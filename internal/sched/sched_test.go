package sched

import (
	"math"
	"strings"
	"testing"
	"time"
)

// prototype is the §5.2 setting of REACToR's 8-host testbed: 1.5 ms periods,
// a 30 us configured reconfiguration gap (§4), 10 Gb/s circuits and a 1 Gb/s
// EPS (10:1, §1).
func prototype() Constraints {
	return Constraints{
		N:        8,
		Period:   1500 * time.Microsecond,
		Delta:    30 * time.Microsecond,
		MinSlot:  10 * time.Microsecond,
		LinkRate: 10e9,
		EPSRate:  1e9,
	}
}

func TestConstraintsValidate(t *testing.T) {
	if err := prototype().Validate(); err != nil {
		t.Fatalf("prototype constraints rejected: %v", err)
	}
	bad := Constraints{N: 0, Period: 0, Delta: -1, MinSlot: -1, LinkRate: 0, EPSRate: -1}
	err := bad.Validate()
	if err == nil {
		t.Fatal("all-bad constraints accepted")
	}
	for _, want := range []string{"N = 0", "period", "reconfiguration delay", "minimum slot", "link rate", "EPS rate"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestMaxSlots(t *testing.T) {
	c := prototype()
	// Each slot needs MinSlot + Delta = 40 us; 1500/40 = 37.5.
	if got, want := c.MaxSlots(), int(c.Period/(c.MinSlot+c.Delta)); got != want || got != 37 {
		t.Errorf("MaxSlots = %d, want %d", got, want)
	}
	// §5.4: at least 40 us per configuration including a 20 us gap, in a
	// 3000 us period: "at most 75 configurations".
	c.Period, c.Delta, c.MinSlot = 3000*time.Microsecond, 20*time.Microsecond, 20*time.Microsecond
	if got := c.MaxSlots(); got != 75 {
		t.Errorf("§5.4 MaxSlots = %d, want the paper's 75", got)
	}
	c.Delta, c.MinSlot = 0, 0
	if got := c.MaxSlots(); got != int(c.Period) {
		t.Errorf("MaxSlots with no gap and no floor = %d, want one per nanosecond (%d)", got, int(c.Period))
	}
}

func TestRoundRobinPrototype(t *testing.T) {
	c := prototype()
	s, err := RoundRobin(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(s, c); err != nil {
		t.Fatalf("round robin fails its own check: %v", err)
	}
	if len(s.Slots) != c.N-1 {
		t.Fatalf("%d slots, want N-1 = %d", len(s.Slots), c.N-1)
	}
	want := (c.Period - time.Duration(c.N-1)*c.Delta) / time.Duration(c.N-1)
	seen := make(map[[2]int]int)
	for k, sl := range s.Slots {
		if sl.Duration != want {
			t.Errorf("slot %d lasts %v, want %v", k, sl.Duration, want)
		}
		for i, j := range sl.Perm {
			if i == j {
				t.Errorf("slot %d connects host %d to itself", k, i)
			}
			seen[[2]int{i, j}]++
		}
	}
	for i := range c.N {
		for j := range c.N {
			if i != j && seen[[2]int{i, j}] != 1 {
				t.Errorf("pair %d->%d has %d circuits per period, want 1", i, j, seen[[2]int{i, j}])
			}
		}
	}
	// §5.2: 214.3 us per configuration including the 30 us gap, an 86%
	// duty cycle.
	if slot := want + c.Delta; math.Abs(slot.Seconds()*1e6-214.3) > 0.05 {
		t.Errorf("slot plus gap = %v, paper says 214.3 us", slot)
	}
	if d := s.DutyCycle(); math.Abs(d-0.86) > 0.005 {
		t.Errorf("duty cycle %.4f, paper says 86%%", d)
	}
}

func TestRoundRobinRejects(t *testing.T) {
	c := prototype()
	c.N = 1
	if _, err := RoundRobin(c); err == nil || !strings.Contains(err.Error(), "at least 2") {
		t.Errorf("1-port round robin: err = %v", err)
	}
	c = prototype()
	c.MinSlot = 200 * time.Microsecond
	if _, err := RoundRobin(c); err == nil || !strings.Contains(err.Error(), "minimum slot") {
		t.Errorf("round robin under a 200 us floor: err = %v", err)
	}
}

func TestValidateNamesTheProblem(t *testing.T) {
	c := prototype()
	c.N = 4
	good := func() Schedule {
		return Schedule{Delta: c.Delta, Period: c.Period, Slots: []Slot{
			{Perm: []int{1, 2, 3, 0}, Duration: 100 * time.Microsecond},
			{Perm: []int{2, Dark, 0, Dark}, Duration: 100 * time.Microsecond},
			{Perm: []int{3, 0, 1, 2}, Duration: 100 * time.Microsecond},
		}}
	}
	if err := Validate(good(), c); err != nil {
		t.Fatalf("good schedule rejected: %v", err)
	}
	cases := []struct {
		name   string
		mutate func(*Schedule)
		want   []string
	}{
		{"short permutation", func(s *Schedule) { s.Slots[1].Perm = []int{1, 0, 2} }, []string{"slot 1", "3 inputs", "expected 4"}},
		{"output out of range", func(s *Schedule) { s.Slots[2].Perm[3] = 4 }, []string{"slot 2", "input 3 -> output 4", "0..3"}},
		{"negative output", func(s *Schedule) { s.Slots[0].Perm[0] = -2 }, []string{"slot 0", "input 0 -> output -2"}},
		{"output fed twice", func(s *Schedule) { s.Slots[2].Perm = []int{3, 0, 3, 2} }, []string{"slot 2", "inputs 0 and 2", "output 3", "at most once"}},
		{"slot too short", func(s *Schedule) { s.Slots[1].Duration = 5 * time.Microsecond }, []string{"slot 1", "5µs", "minimum slot 10µs"}},
		{"zero slot", func(s *Schedule) { s.Slots[0].Duration = 0 }, []string{"slot 0", "lasts 0s"}},
		{"over the period", func(s *Schedule) { s.Slots[2].Duration = 1400 * time.Microsecond }, []string{"3 slots", "3 x 30µs", "period 1.5ms"}},
		{"gap too small", func(s *Schedule) { s.Delta = 12 * time.Microsecond }, []string{"gap of 12µs", "switch's 30µs"}},
		{"period too long", func(s *Schedule) { s.Period = 2 * c.Period }, []string{"period 3ms", "at most 1.5ms"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := good()
			tc.mutate(&s)
			err := Validate(s, c)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// Exactly filling the period is allowed; one nanosecond more is not.
	s := good()
	s.Slots[2].Duration = c.Period - 3*c.Delta - 200*time.Microsecond
	if err := Validate(s, c); err != nil {
		t.Errorf("schedule filling the period exactly rejected: %v", err)
	}
	s.Slots[2].Duration++
	if err := Validate(s, c); err == nil {
		t.Error("schedule 1 ns over the period accepted")
	}
	// Several problems are all reported.
	s = good()
	s.Slots[0].Duration = time.Microsecond
	s.Slots[2].Perm[0] = 7
	err := Validate(s, c)
	if err == nil || !strings.Contains(err.Error(), "slot 0") || !strings.Contains(err.Error(), "slot 2") {
		t.Errorf("two problems, error %v", err)
	}
}

func TestDemandValidate(t *testing.T) {
	d := NewDemand(3)
	d[0][1] = 5
	if err := d.Validate(3); err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(4); err == nil || !strings.Contains(err.Error(), "3 rows") {
		t.Errorf("wrong size: %v", err)
	}
	d[2][2] = 1
	if err := d.Validate(3); err == nil || !strings.Contains(err.Error(), "demand[2][2]") {
		t.Errorf("diagonal: %v", err)
	}
	d[2][2], d[1][0] = 0, -1
	if err := d.Validate(3); err == nil || !strings.Contains(err.Error(), "demand[1][0] = -1") {
		t.Errorf("negative: %v", err)
	}
	d[1] = d[1][:2]
	if err := d.Validate(3); err == nil || !strings.Contains(err.Error(), "row 1 has 2") {
		t.Errorf("ragged: %v", err)
	}
}

func TestFromRates(t *testing.T) {
	// 10 Gb/s for 1.5 ms is 1,875,000 bytes; 1 b/s for 1 ms rounds to 0.
	d := FromRates([][]float64{{0, 10e9}, {1, 0}}, 1500*time.Microsecond)
	if d[0][1] != 10e9*0.0015/8 {
		t.Errorf("10 Gb/s over 1.5 ms = %d bytes, want %d", d[0][1], int64(10e9*0.0015/8))
	}
	if d[1][0] != 0 || d[0][0] != 0 {
		t.Errorf("small rates: %v", d)
	}
}

func TestEvaluateByHand(t *testing.T) {
	// Three hosts, 1 ms period, 8 Gb/s circuits (1 byte/ns), 1 Gb/s EPS
	// (125,000 bytes per period per host and direction).
	c := Constraints{N: 3, Period: time.Millisecond, Delta: 50 * time.Microsecond, LinkRate: 8e9, EPSRate: 1e9}
	s := Schedule{Delta: c.Delta, Period: c.Period, Slots: []Slot{
		{Perm: []int{1, Dark, 0}, Duration: 100 * time.Microsecond}, // 100,000 bytes per circuit
		{Perm: []int{1, 2, Dark}, Duration: 300 * time.Microsecond}, // 300,000 bytes per circuit
	}}
	d := NewDemand(3)
	d[0][1] = 450_000 // two circuits, 400,000 bytes: 50,000 deferred
	d[2][0] = 20_000  // circuit of 100,000: fully served
	d[1][2] = 0       // a lit circuit with no demand
	d[1][0] = 100_000 // no circuit: EPS
	d[0][2] = 160_000 // no circuit: EPS; host 0 sends 160,000 > 125,000
	r, err := Evaluate(s, d, c)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, got, want int64) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	check("Circuit[0][1]", r.Circuit[0][1], 400_000)
	check("Deferred[0][1]", r.Deferred[0][1], 50_000)
	check("Circuit[2][0]", r.Circuit[2][0], 20_000)
	check("EPS[1][0]", r.EPS[1][0], 100_000)
	check("EPS[0][2]", r.EPS[0][2], 160_000)
	check("CircuitBytes", r.CircuitBytes, 420_000)
	check("EPSBytes", r.EPSBytes, 260_000)
	check("DeferredBytes", r.DeferredBytes, 50_000)
	check("DemandBytes", r.DemandBytes, d.Total())
	check("CircuitCapacityBytes", r.CircuitCapacityBytes, 2*100_000+2*300_000)
	check("EPSCapacityBytes", r.EPSCapacityBytes, 125_000)
	if r.EPSFits {
		t.Error("EPS said to fit though host 0 sends 160,000 bytes into 125,000")
	}
	if want := 160_000.0 / 125_000; math.Abs(r.EPSLoad-want) > 1e-12 {
		t.Errorf("EPSLoad = %g, want %g", r.EPSLoad, want)
	}
	// Pair 0->2 shrinks by 160/125 to what host 0 may send; pair 1->0
	// (100,000 bytes, the only EPS traffic of hosts 1 and 0) is carried.
	wantCarried := int64(160_000/(160_000.0/125_000)) + 100_000
	check("EPSCarriedBytes", r.EPSCarriedBytes, wantCarried)
	check("DeliveredBytes", r.DeliveredBytes(), 420_000+wantCarried)
	if want := 0.4; math.Abs(r.DutyCycle-want) > 1e-12 {
		t.Errorf("DutyCycle = %g, want %g", r.DutyCycle, want)
	}
	if want := 420_000.0 / 800_000; math.Abs(r.CircuitUtilization()-want) > 1e-12 {
		t.Errorf("CircuitUtilization = %g, want %g", r.CircuitUtilization(), want)
	}

	// No EPS at all: what is left to it cannot be carried.
	c.EPSRate = 0
	r, err = Evaluate(s, d, c)
	if err != nil {
		t.Fatal(err)
	}
	if r.EPSFits || !math.IsInf(r.EPSLoad, 1) || r.EPSCarriedBytes != 0 {
		t.Errorf("pure circuit ToR: fits %v, load %g, carried %d", r.EPSFits, r.EPSLoad, r.EPSCarriedBytes)
	}
}

func TestEvaluateRejectsShapes(t *testing.T) {
	c := prototype()
	s, err := RoundRobin(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Evaluate(s, NewDemand(7), c); err == nil {
		t.Error("7x7 demand on 8 ports accepted")
	}
	s.Slots[3].Perm = s.Slots[3].Perm[:5]
	if _, err := Evaluate(s, NewDemand(8), c); err == nil || !strings.Contains(err.Error(), "slot 3") {
		t.Errorf("short permutation: %v", err)
	}
}

func TestRoundRobinServesUniformDemand(t *testing.T) {
	// Each pair offers exactly what one round-robin slot carries: all of
	// it goes over circuits, and the duty cycle is the schedule's.
	c := prototype()
	s, err := RoundRobin(c)
	if err != nil {
		t.Fatal(err)
	}
	per := bytesIn(s.Slots[0].Duration, c.LinkRate)
	d := uniform(c.N, per)
	r, err := Evaluate(s, d, c)
	if err != nil {
		t.Fatal(err)
	}
	if r.CircuitBytes != d.Total() || r.EPSBytes != 0 || r.DeferredBytes != 0 {
		t.Errorf("circuit %d, EPS %d, deferred %d of %d", r.CircuitBytes, r.EPSBytes, r.DeferredBytes, d.Total())
	}
	// One byte more per pair is deferred, pair by pair.
	r, err = Evaluate(s, uniform(c.N, per+1), c)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(c.N * (c.N - 1)); r.DeferredBytes != want {
		t.Errorf("deferred %d, want one byte per pair (%d)", r.DeferredBytes, want)
	}
}

func uniform(n int, v int64) Demand {
	d := NewDemand(n)
	for i := range n {
		for j := range n {
			if i != j {
				d[i][j] = v
			}
		}
	}
	return d
}
