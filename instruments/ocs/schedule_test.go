package ocs

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"testbed/internal/sched"
)

const us = time.Microsecond

var mordia8 = Constraints{Ports: Ports{8, 8}, MinSlot: 40 * us, MinNight: 15 * us, MaxSlots: 128}

// allToAll is REACToR §5.2: 8 hosts, 7 configurations of 214.3 us
// (30 us of which is the reconfiguration budget) in a 1.5 ms period.
func allToAll() sched.Schedule {
	s := sched.Schedule{Period: 1500 * us, Delta: 30 * us}
	for k := 1; k <= 7; k++ {
		s.Slots = append(s.Slots, sched.Slot{Duration: 1500*us/7 - 30*us, Perm: Shift(8, k).Perm(8)})
	}
	return s
}

func TestAllToAllScheduleIsValidWithREACToRsDutyCycle(t *testing.T) {
	s := allToAll()
	if err := mordia8.Validate(s); err != nil {
		t.Fatal(err)
	}
	// 7 x (214.29 - 30) us of circuits in 1500 us: the 86% of §5.2.
	if d := s.DutyCycle(); math.Abs(d-0.86) > 0.001 {
		t.Errorf("duty cycle %.4f, want 0.86", d)
	}
	if s.SlotStart(3) != 3*(1500*us/7) || s.Busy() > s.Period {
		t.Errorf("slot 3 starts at %v, busy %v", s.SlotStart(3), s.Busy())
	}
	if c := Circuits(s.Slots[2].Perm); !c.Equal(Shift(8, 3)) {
		t.Errorf("slot 2 holds %v, want %v", c, Shift(8, 3))
	}
	if Shift(8, 3).Output(7) != 2 || Shift(8, 0).Output(5) != 5 {
		t.Errorf("Shift: %v", Shift(8, 3))
	}
}

func TestValidateNamesEverySlotAtFault(t *testing.T) {
	s := allToAll()
	s.Slots[2].Perm = Configuration{{1, 2}, {3, 2}}.Perm(8)                                                           // output 2 twice
	s.Slots[4].Perm = []int{sched.Dark, 8, sched.Dark, sched.Dark, sched.Dark, sched.Dark, sched.Dark, sched.Dark, 0} // ports out of range
	s.Slots[5].Duration = 5 * us                                                                                      // 35 us < 40 us minimum
	s.Slots = append(s.Slots, sched.Slot{Duration: 300 * us})                                                         // the 8th slot breaks W
	err := mordia8.Validate(s)
	var se *ScheduleError
	if !errors.As(err, &se) {
		t.Fatalf("error %v", err)
	}
	for _, want := range []string{
		"slots[2]: output 2 is used twice (by inputs 1 and 3)",
		"slots[4]: input 9 does not exist (inputs 1..8)",
		"slots[4]: output 9 does not exist (outputs 1..8)",
		"slots[5]: 35.0 us (30.0 us night + 5.0 us up) is shorter than the minimum slot 40.0 us",
		"slots take 1650.7 us (1410.7 us of circuits + 8 x 30.0 us",
		"8 x 30.0 us of reconfiguration), more than the period W = 1500.0 us",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if len(se.Problems) != 5 {
		t.Errorf("%d problems: %q", len(se.Problems), se.Problems)
	}
}

func TestValidateScheduleLevelProblems(t *testing.T) {
	for name, c := range map[string]struct {
		s    sched.Schedule
		want string
	}{
		"no night":      {sched.Schedule{Period: time.Millisecond, Slots: []sched.Slot{{Duration: 100 * us}}}, "night (the reconfiguration budget delta) is 0s"},
		"short night":   {sched.Schedule{Period: time.Millisecond, Delta: 10 * us, Slots: []sched.Slot{{Duration: 100 * us}}}, "shorter than the switch's worst-case reconfiguration time 15.0 us"},
		"no slots":      {sched.Schedule{Period: time.Millisecond, Delta: 20 * us}, "no slots"},
		"no period":     {sched.Schedule{Delta: 20 * us, Slots: []sched.Slot{{Duration: 100 * us}}}, "period W is 0s"},
		"output twice":  {sched.Schedule{Period: time.Millisecond, Delta: 20 * us, Slots: []sched.Slot{{Duration: 100 * us, Perm: []int{0, 0}}}}, "slots[0]: output 1 is used twice (by inputs 1 and 2)"},
		"zero duration": {sched.Schedule{Period: time.Millisecond, Delta: 50 * us, Slots: []sched.Slot{{}}}, "slots[0]: duration 0s"},
	} {
		if err := mordia8.Validate(c.s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	few := mordia8
	few.MaxSlots = 3
	if err := few.Validate(allToAll()); err == nil || !strings.Contains(err.Error(), "7 slots: the switch holds at most 3") {
		t.Errorf("max slots: %v", err)
	}
	// Exactly filling the period is allowed.
	s := sched.Schedule{Period: 200 * us, Delta: 20 * us, Slots: []sched.Slot{{Duration: 80 * us}, {Duration: 80 * us}}}
	if err := mordia8.Validate(s); err != nil {
		t.Errorf("sum + m*delta == W refused: %v", err)
	}
}

func TestChannelLists(t *testing.T) {
	if got := channelList([]int{1, 17, 3}); got != "(@1,17,3)" {
		t.Errorf("channelList = %q", got)
	}
	for in, want := range map[string][]int{"(@)": nil, "(@1,2)": {1, 2}, "( @3:5 )": nil, "(@3:5,9)": {3, 4, 5, 9}} {
		got, ok := parseChannelList(in)
		if in == "( @3:5 )" {
			if ok {
				t.Errorf("%q parsed", in)
			}
			continue
		}
		if !ok || len(got) != len(want) {
			t.Errorf("%q -> %v %v", in, got, ok)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%q -> %v", in, got)
			}
		}
	}
}
