package ocs_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"testbed/instruments/ocs"
	"testbed/internal/sched"
	simocs "testbed/simlab/ocs"
)

func opts8() simocs.MicroOCSOptions {
	return simocs.MicroOCSOptions{Vendor: "UC San Diego", Model: "Mordia-8", Serial: "MOR1", Firmware: "1.0", Ports: 8}
}

func TestMordiaConfigurationPortsAndDark(t *testing.T) {
	lab := newMordiaLab(t, 1, opts8())
	m, tr := openMordia(t, lab.addr, hangGuard)
	ctx := context.Background()
	id, _ := m.Identity(ctx)
	if id.Vendor != "UC San Diego" || id.Model != "Mordia-8" || id.Serial != "MOR1" || m.Ports() != (ocs.Ports{8, 8}) {
		t.Fatalf("identity %+v ports %v", id, m.Ports())
	}
	if c := m.Constraints(); c.MinSlot != 40*us || c.MinNight != 15*us || c.MaxSlots != 128 {
		t.Fatalf("constraints %+v", c)
	}
	if !slices.Contains(m.Capabilities(), ocs.CapSchedule) {
		t.Fatal("no schedule capability")
	}
	want := ocs.Shift(8, 3)
	if err := m.SetConfiguration(ctx, want); err != nil {
		t.Fatal(err)
	}
	// Returned only once the switch had the circuits up.
	if lit, night := lab.ocs.Lit(); night || len(lit) != 8 || lit[0].Out != want.Output(lit[0].In) {
		t.Fatalf("switch holds %v (night %v)", lit, night)
	}
	got, err := m.Configuration(ctx)
	if err != nil || !got.Equal(want) {
		t.Fatalf("Configuration = %v, %v", got, err)
	}
	ps, err := m.PortStatus(ctx)
	if err != nil || len(ps) != 16 {
		t.Fatalf("port status %v %v", ps, err)
	}
	if ps[0] != (ocs.PortStatus{Side: ocs.Input, Port: 1, State: ocs.PortEnabled, Peer: 4}) || ps[8+3] != (ocs.PortStatus{Side: ocs.Output, Port: 4, State: ocs.PortEnabled, Peer: 1}) {
		t.Fatalf("port status %+v / %+v", ps[0], ps[11])
	}
	if err := m.Dark(ctx); err != nil {
		t.Fatal(err)
	}
	if lit, _ := lab.ocs.Lit(); len(lit) != 0 {
		t.Fatalf("dark switch holds %v", lit)
	}
	if !strings.Contains(tr.String(), "> PUT /v1/configuration") || !strings.Contains(tr.String(), "> POST /v1/dark") {
		t.Errorf("transcript lacks the exchange:\n%s", tr)
	}
	// A configuration with an output used twice is refused before sending.
	n := len(lab.rec.exchanges())
	err = m.SetConfiguration(ctx, ocs.Configuration{{1, 2}, {3, 2}})
	if err == nil || !strings.Contains(err.Error(), "ocs1 (mordia-rest") || !strings.Contains(err.Error(), "output 2 is used twice") {
		t.Fatalf("bad configuration: %v", err)
	}
	if len(lab.rec.exchanges()) != n {
		t.Fatal("a refused configuration reached the switch")
	}
}

// waitPeriod asks the switch until its schedule has reached period p.
func waitPeriod(t *testing.T, s ocs.Scheduler, p int64) ocs.ScheduleStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		st, err := s.ScheduleStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == ocs.StateRunning && st.Period >= p {
			return st
		}
		select {
		case <-ctx.Done():
			t.Fatalf("period %d not reached: %+v", p, st)
		case <-time.After(200 * time.Microsecond):
		}
	}
}

// waitUntil asks the switch until its clock has passed t.
func waitUntil(t *testing.T, s ocs.Scheduler, at time.Duration) ocs.ScheduleStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		st, err := s.ScheduleStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Now >= at {
			return st
		}
		select {
		case <-ctx.Done():
			t.Fatalf("switch time %v not reached: %+v", at, st)
		case <-time.After(200 * time.Microsecond):
		}
	}
}

// allNights reads the record from since on, up to the nights that began
// before until (the schedule keeps adding nights while it is read).
func allNights(t *testing.T, s ocs.Scheduler, since uint64, until time.Duration) []ocs.Night {
	t.Helper()
	var out []ocs.Night
	for {
		nl, err := s.Nights(context.Background(), since)
		if err != nil {
			t.Fatal(err)
		}
		if nl.Missed != 0 {
			t.Fatalf("%d nights missed", nl.Missed)
		}
		for _, n := range nl.Nights {
			if n.Start >= until {
				return out
			}
			out = append(out, n)
		}
		if len(nl.Nights) == 0 {
			return out
		}
		since = nl.Next
	}
}

func TestMordiaRunsReplacesAndStopsASchedule(t *testing.T) {
	lab := newMordiaLab(t, 2, opts8())
	cs, _ := openMordia(t, lab.addr, hangGuard)
	s, err := ocs.AsScheduler(cs)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	all := allToAll(8, 1500*us, 30*us) // REACToR §5.2
	if err := s.LoadSchedule(ctx, all); err != nil {
		t.Fatal(err)
	}
	start, err := s.StartSchedule(ctx, ocs.StartAt{NextPeriod: true})
	if err != nil || start%all.Period != 0 {
		t.Fatalf("start %v, %v: want a multiple of the period", start, err)
	}
	// Loading over a running schedule is the switch's conflict, reported as such.
	if err := s.LoadSchedule(ctx, all); err == nil || !strings.Contains(err.Error(), "409 conflict") {
		t.Fatalf("load while running: %v", err)
	}
	st := waitPeriod(t, s, 4)
	if st.Start != start {
		t.Fatalf("status %+v, start %v", st, start)
	}
	ns := allNights(t, s, 0, st.Now)
	if len(ns) < 4*7 {
		t.Fatalf("%d nights after 4 periods", len(ns))
	}
	var sum, hi time.Duration
	for i, n := range ns {
		p, k := int64(i/7), i%7
		if n.Seq != uint64(i) || n.Period != p || n.Slot != k || n.Start != start+time.Duration(p)*all.Period+all.SlotStart(k) {
			t.Fatalf("night %d: %+v", i, n)
		}
		if n.Gap() < 9*us || n.Gap() > 15*us {
			t.Fatalf("night %d gap %v", i, n.Gap())
		}
		sum += n.Gap()
		hi = max(hi, n.Gap())
	}
	if mean := float64(sum) / float64(len(ns)) / float64(us); math.Abs(mean-12) > 1 {
		t.Errorf("mean gap %.2f us, want about 12", mean)
	}

	// Replace: two configurations in a 400 us period, from the next boundary on.
	next := sched.Schedule{Period: 400 * us, Delta: 20 * us, Slots: []sched.Slot{
		{Duration: 150 * us, Perm: ocs.Configuration{{1, 2}, {2, 1}}.Perm(8)},
		{Duration: 150 * us},
	}}
	// Armed ahead (at_ns): the first boundary at or after the time asked,
	// waiting in the switch's status; a replacement for the next boundary
	// supersedes it.
	ahead := st.Now + 1000*all.Period + all.Period/2
	far, err := s.ReplaceSchedule(ctx, next, ocs.StartAt{At: ahead})
	if err != nil || (far-start)%all.Period != 0 || far < ahead || far >= ahead+all.Period {
		t.Fatalf("replacement armed for %v: effective %v, %v; want the first boundary after it", ahead, far, err)
	}
	if st, err := s.ScheduleStatus(ctx); err != nil || st.ReplaceAt != far {
		t.Fatalf("status while armed ahead: %+v %v", st, err)
	}
	at, err := s.ReplaceSchedule(ctx, next, ocs.StartAt{NextPeriod: true})
	if err != nil {
		t.Fatal(err)
	}
	if (at-start)%all.Period != 0 || at <= st.Start {
		t.Fatalf("replacement at %v: not a boundary of the running schedule (start %v)", at, start)
	}
	st = waitUntil(t, s, at+3*next.Period)
	var after []ocs.Night
	for _, n := range allNights(t, s, 0, st.Now) {
		if n.Start >= at {
			after = append(after, n)
		}
	}
	if len(after) < 2 || after[0].Start != at || after[0].Slot != 0 || after[1].Slot != 1 || after[1].Start != at+170*us {
		t.Fatalf("nights after the replacement: %+v", after[:min(3, len(after))])
	}
	if err := s.StopSchedule(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := s.ScheduleStatus(ctx); err != nil || st.State != ocs.StateLoaded {
		t.Fatalf("after stop: %+v %v", st, err)
	}
	if c, err := cs.Configuration(ctx); err != nil || len(c) != 0 {
		t.Fatalf("after stop: %v %v", c, err)
	}
	if now, err := s.Clock(ctx); err != nil || now <= at {
		t.Fatalf("clock %v %v", now, err)
	}
}

func TestMordiaRefusesABadScheduleBeforeSending(t *testing.T) {
	lab := newMordiaLab(t, 3, opts8())
	cs, tr := openMordia(t, lab.addr, hangGuard)
	s, _ := ocs.AsScheduler(cs)
	ctx := context.Background()
	bad := allToAll(8, 1500*us, 30*us)
	bad.Slots[3].Perm[5] = bad.Slots[3].Perm[6]
	bad.Slots = append(bad.Slots, sched.Slot{Duration: 200 * us}) // 8 slots no longer fit W
	n := len(lab.rec.exchanges())
	err := s.LoadSchedule(ctx, bad)
	var se *ocs.ScheduleError
	if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), "ocs1 (mordia-rest ") ||
		!strings.Contains(err.Error(), "slots[3]: output 3 is used twice (by inputs 6 and 7)") ||
		!strings.Contains(err.Error(), "more than the period W = 1500.0 us") {
		t.Fatalf("bad schedule: %v", err)
	}
	if _, err := s.ReplaceSchedule(ctx, bad, ocs.StartAt{NextPeriod: true}); !errors.As(err, &se) {
		t.Fatalf("bad replacement: %v", err)
	}
	if len(lab.rec.exchanges()) != n || strings.Contains(tr.String(), "/v1/schedule") {
		t.Fatal("a refused schedule reached the switch")
	}
	if st := lab.ocs.Status(); st.State != "idle" {
		t.Fatalf("switch state %+v", st)
	}
}

func TestMordiaStopsAnsweringMidSchedule(t *testing.T) {
	lab := newMordiaLab(t, 4, opts8())
	cs, tr := openMordia(t, lab.addr, 300*time.Millisecond)
	s, _ := ocs.AsScheduler(cs)
	ctx := context.Background()
	if err := s.LoadSchedule(ctx, allToAll(8, 1500*us, 30*us)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartSchedule(ctx, ocs.StartAt{NextPeriod: true}); err != nil {
		t.Fatal(err)
	}
	// Read the record as the schedule runs; once a period's worth has been
	// read, the controller hangs two periods later.
	var seen int
	var since uint64
	var hangAt int64 = -1
	deadline := time.Now().Add(10 * time.Second)
	var err error
	var took time.Duration
	for time.Now().Before(deadline) {
		t0 := time.Now()
		var nl ocs.NightLog
		nl, err = s.Nights(ctx, since)
		took = time.Since(t0)
		if err != nil {
			break
		}
		seen += len(nl.Nights)
		since = nl.Next
		if seen >= 7 && hangAt < 0 {
			hangAt = nl.Nights[len(nl.Nights)-1].Period + 2
			lab.srv.HangAfterPeriods(hangAt)
		}
		time.Sleep(200 * time.Microsecond)
	}
	if err == nil {
		t.Fatal("the switch never stopped answering")
	}
	if hangAt < 0 {
		t.Fatalf("%d nights read before the switch hung: not mid-schedule", seen)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "ocs1 (mordia-rest "+lab.addr+"): read nights: no answer within 300ms") {
		t.Fatalf("error %v", err)
	}
	if took > 2*time.Second {
		t.Fatalf("the call took %v: the deadline was not honoured", took)
	}
	// Going dark fails the same way, promptly.
	t0 := time.Now()
	if err := cs.Dark(ctx); err == nil || !strings.Contains(err.Error(), "ocs1") || time.Since(t0) > 2*time.Second {
		t.Fatalf("dark on a hung switch: %v after %v", err, time.Since(t0))
	}
	if !strings.Contains(tr.String(), "! ") {
		t.Error("the transcript does not record the failure")
	}
	// The data plane ran on; once the controller answers again, dark works.
	if st := lab.ocs.Status(); st.State != "running" || st.Period < hangAt {
		t.Fatalf("switch %+v", st)
	}
	lab.srv.Resume()
	if err := cs.Dark(ctx); err != nil {
		t.Fatal(err)
	}
	if st := lab.ocs.Status(); st.State != "idle" {
		t.Fatalf("after dark: %+v, want idle (no schedule loaded)", st)
	}
}

func TestMordiaDeviceErrorsAndGarbage(t *testing.T) {
	lab := newMordiaLab(t, 5, opts8())
	cs, _ := openMordia(t, lab.addr, hangGuard)
	ctx := context.Background()
	lab.faults.FailNext(500, "wavelength selective switch 3 not responding")
	err := cs.SetConfiguration(ctx, ocs.Shift(8, 1))
	var ae *ocs.APIError
	if !errors.As(err, &ae) || ae.Status != 500 || !strings.Contains(err.Error(), "set configuration 1->2 2->3") ||
		!strings.Contains(err.Error(), "500 internal: wavelength selective switch 3 not responding") {
		t.Fatalf("device error: %v", err)
	}
	// One garbled reply to a read is tried once more (transport.RetryOnce),
	// two are the error; a setting's is not retried (the switch may have
	// acted on it).
	cs, tr := openMordia(t, lab.addr, hangGuard)
	lab.faults.GarbleNext(1)
	if _, err := cs.Configuration(ctx); err != nil || !strings.Contains(tr.String(), "trying once more") {
		t.Fatalf("one garbled reply to a read: %v; transcript:\n%s", err, tr)
	}
	lab.faults.GarbleNext(2)
	if _, err := cs.Configuration(ctx); err == nil || !strings.Contains(err.Error(), "not the expected JSON") {
		t.Fatalf("garbage twice: %v", err)
	}
	n := len(lab.rec.exchanges())
	lab.faults.GarbleNext(1)
	if err := cs.SetConfiguration(ctx, ocs.Shift(8, 1)); err == nil || !strings.Contains(err.Error(), "not the expected JSON") {
		t.Fatalf("a garbled reply to a setting: %v", err)
	}
	if x := lab.rec.exchanges()[n:]; len(x) != 1 || x[0].Method != "PUT" {
		t.Fatalf("a garbled reply to a setting was followed by %d exchanges, want none", len(x)-1)
	}
	lab.faults.DropNext(1)
	if _, err := cs.Configuration(ctx); err != nil {
		t.Fatalf("a read across one dropped connection is retried: %v", err)
	}
	s, _ := ocs.AsScheduler(cs)
	if _, err := s.StartSchedule(ctx, ocs.StartAt{NextPeriod: true}); err == nil || !strings.Contains(err.Error(), "409 conflict: no schedule loaded") {
		t.Fatalf("start with nothing loaded: %v", err)
	}
	if _, err := ocs.Open(ctx, "lightswitch", lab.addr, ocs.Options{}); err == nil || !strings.Contains(err.Error(), "mordia-rest, polatis-scpi") {
		t.Fatalf("unknown driver: %v", err)
	}
}
