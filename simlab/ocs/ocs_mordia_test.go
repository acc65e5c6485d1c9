package ocs

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testbed/simlab/world"
	"testing"
	"time"
)

const us = time.Microsecond

// manualOCS makes a microsecond switch whose clock the test sets.
func manualOCS(t *testing.T, seed uint64, opts MicroOCSOptions) (*MicroOCS, *atomic.Int64) {
	t.Helper()
	var clock atomic.Int64
	opts.Clock = func() time.Duration { return time.Duration(clock.Load()) }
	m, err := NewMicroOCS(world.New(seed), "ocs", opts)
	if err != nil {
		t.Fatal(err)
	}
	return m, &clock
}

// roundRobin is REACToR §5.2's all-to-all: n-1 slots, slot k joins i to i+k.
func roundRobin(n int, period, night time.Duration) OCSSchedule {
	s := OCSSchedule{Period: period, Night: night}
	phi := period/time.Duration(n-1) - night
	for k := 1; k < n; k++ {
		var cs []OCSCircuit
		for i := 1; i <= n; i++ {
			cs = append(cs, OCSCircuit{In: i, Out: (i-1+k)%n + 1})
		}
		s.Slots = append(s.Slots, OCSSlot{Duration: phi, Circuits: cs})
	}
	return s
}

func TestMicroOCSRunsSlotsAndRecordsEveryNight(t *testing.T) {
	m, clock := manualOCS(t, 1, MicroOCSOptions{Ports: 8})
	s := roundRobin(8, 1500*us, 30*us) // 7 slots of 214.28 us, 30 us of which is night
	if err := m.Load(s); err != nil {
		t.Fatal(err)
	}
	clock.Store(int64(100 * us))
	start, err := m.Start(0, true)
	if err != nil || start != 1500*us {
		t.Fatalf("start at the next period boundary: %v, %v", start, err)
	}
	st := m.Status()
	if st.State != "armed" {
		t.Fatalf("before the start: %+v", st)
	}
	// The schedule over the ports, as the schedulers write it: slot k
	// feeds port i+k from port i, Perm counting ports from 0.
	if p := st.OnPorts; p == nil || p.Period != s.Period || p.Delta != s.Night || len(p.Slots) != 7 ||
		p.Slots[2].Duration != s.Slots[2].Duration || p.Slots[2].Perm[7] != 2 || p.Slots[0].Perm[3] != 4 {
		t.Fatalf("schedule over the ports: %+v", p)
	}
	// 10 us into slot 2 of period 0: still in its night if the gap is longer.
	slot2 := start + 2*(s.Night+s.Slots[0].Duration)
	clock.Store(int64(slot2 + 5*us))
	if lit, night := m.Lit(); !night || len(lit) != 0 {
		t.Fatalf("5 us into a night: lit %v night %v", lit, night)
	}
	clock.Store(int64(slot2 + 20*us))
	lit, night := m.Lit()
	if night || len(lit) != 8 || lit[0].Out != 4 {
		t.Fatalf("20 us into slot 2 (gap <= 15 us): lit %v night %v", lit, night)
	}
	// Run 100 periods; every slot start is one night, with gaps in [9, 15] us.
	end := start + 100*s.Period
	clock.Store(int64(end))
	var all []OCSNight
	for since := uint64(0); ; {
		ns, next, oldest, _ := m.Nights(since, 4096)
		if oldest != 0 {
			t.Fatalf("oldest %d: nothing should have been dropped", oldest)
		}
		all = append(all, ns...)
		if len(ns) == 0 {
			break
		}
		since = next
	}
	if len(all) != 700 {
		t.Fatalf("%d nights in 100 periods of 7 slots", len(all))
	}
	var sum, hi time.Duration
	for i, n := range all {
		p, k := int64(i/7), i%7
		want := start + time.Duration(p)*s.Period + s.SlotStartForTest(k)
		if n.Seq != uint64(i) || n.Period != p || n.Slot != k || n.Start != want {
			t.Fatalf("night %d = %+v, want period %d slot %d start %v", i, n, p, k, want)
		}
		g := n.End - n.Start
		if g < 9*us || g > 15*us {
			t.Fatalf("gap %v outside [9, 15] us", g)
		}
		sum += g
		hi = max(hi, g)
	}
	mean := float64(sum) / float64(len(all)) / float64(us)
	if math.Abs(mean-12) > 0.2 || hi < 14*us {
		t.Errorf("gap mean %.2f us, max %v: want about 12 us and close to 15 us (REACToR Fig. 5)", mean, hi)
	}
}

// SlotStartForTest is when slot k starts within a period.
func (s OCSSchedule) SlotStartForTest(k int) time.Duration {
	var t time.Duration
	for i := 0; i < k; i++ {
		t += s.Night + s.Slots[i].Duration
	}
	return t
}

func TestMicroOCSGapsDependOnSeedNotOnPolling(t *testing.T) {
	gaps := func(seed uint64, step time.Duration) []time.Duration {
		m, clock := manualOCS(t, seed, MicroOCSOptions{Ports: 4})
		if err := m.Load(roundRobin(4, 300*us, 20*us)); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Start(10*us, false); err != nil {
			t.Fatal(err)
		}
		for now := time.Duration(0); now <= 30*time.Millisecond; now += step {
			clock.Store(int64(now))
			m.Lit()
		}
		clock.Store(int64(30 * time.Millisecond))
		ns, _, _, _ := m.Nights(0, 4096)
		var out []time.Duration
		for _, n := range ns {
			out = append(out, n.End-n.Start)
		}
		return out
	}
	a, b, c := gaps(7, 3*us), gaps(7, 1100*us), gaps(8, 3*us)
	if len(a) != 300 || len(b) != len(a) {
		t.Fatalf("%d and %d nights, want 300", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("night %d: %v vs %v: the polling changed the draws", i, a[i], b[i])
		}
	}
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Fatal("different seeds gave the same gaps")
	}
}

func TestMicroOCSReplaceAtPeriodBoundaryAndStop(t *testing.T) {
	m, clock := manualOCS(t, 3, MicroOCSOptions{Ports: 4})
	a := roundRobin(4, 600*us, 20*us)
	if err := m.Load(a); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Start(1000*us, false); err != nil {
		t.Fatal(err)
	}
	clock.Store(int64(1000*us + 2*600*us + 50*us)) // in period 2
	b := OCSSchedule{Period: 400 * us, Night: 20 * us, Slots: []OCSSlot{{Duration: 100 * us, Circuits: []OCSCircuit{{1, 2}, {2, 1}}}}}
	at, err := m.Replace(b, 0)
	if err != nil || at != 1000*us+3*600*us {
		t.Fatalf("replace: effective %v, %v; want the start of period 3", at, err)
	}
	if st := m.Status(); st.ReplaceAt != at || st.Period != 2 {
		t.Fatalf("status %+v", st)
	}
	clock.Store(int64(at + 2*400*us + 30*us))
	ns, _, _, _ := m.Nights(0, 4096)
	last := ns[len(ns)-1]
	if last.Period != 5 || last.Slot != 0 || last.Start != at+2*400*us {
		t.Fatalf("last night %+v: the new schedule's periods are 400 us from %v", last, at)
	}
	if lit, _ := m.Lit(); len(lit) != 2 {
		t.Fatalf("lit %v, want the replacement's two circuits", lit)
	}
	m.Stop()
	if lit, night := m.Lit(); len(lit) != 0 || night {
		t.Fatalf("after stop: %v %v", lit, night)
	}
	if st := m.Status(); st.State != "loaded" {
		t.Fatalf("after stop: %+v", st)
	}
	n := len(ns)
	clock.Store(int64(at + 10*400*us))
	if ns, _, _, _ := m.Nights(0, 4096); len(ns) != n {
		t.Fatalf("nights recorded after stop: %d -> %d", n, len(ns))
	}
}

// A replacement armed ahead (at) waits for the first boundary at or after
// at, through the boundaries before it; one armed before the run starts,
// for its start, runs from the start.
func TestMicroOCSReplaceArmedAhead(t *testing.T) {
	m, clock := manualOCS(t, 3, MicroOCSOptions{Ports: 4})
	a := roundRobin(4, 600*us, 20*us)
	if err := m.Load(a); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Start(1000*us, false); err != nil {
		t.Fatal(err)
	}
	b := OCSSchedule{Period: 400 * us, Night: 20 * us, Slots: []OCSSlot{{Duration: 100 * us, Circuits: []OCSCircuit{{1, 2}, {2, 1}}}}}
	// Armed, not started: a time in the middle of period 3 takes period 4's start.
	at, err := m.Replace(b, 1000*us+3*600*us+1)
	if err != nil || at != 1000*us+4*600*us {
		t.Fatalf("replace ahead: effective %v, %v; want the start of period 4", at, err)
	}
	clock.Store(int64(at - 10*us))
	if st := m.Status(); st.ReplaceAt != at || st.Period != 3 {
		t.Fatalf("just before the boundary: %+v", st)
	}
	clock.Store(int64(at + 30*us))
	ns, _, _, _ := m.Nights(0, 4096)
	last := ns[len(ns)-1]
	if last.Period != 4 || last.Slot != 0 || last.Start != at {
		t.Fatalf("last night %+v: the replacement begins at %v", last, at)
	}
	if st := m.Status(); st.ReplaceAt != 0 || st.Schedule.Period != 400*us {
		t.Fatalf("after the boundary: %+v", st)
	}
	// A time already past takes the next boundary; before the start, the start.
	m.Stop()
	if _, err := m.Start(at+10*600*us, false); err != nil {
		t.Fatal(err)
	}
	if got, err := m.Replace(a, 1); err != nil || got != at+10*600*us {
		t.Fatalf("replace before the start: effective %v, %v; want the start", got, err)
	}
	if st := m.Status(); st.ReplaceAt != 0 || st.Schedule.Period != 600*us {
		t.Fatalf("replaced before the start: %+v", st)
	}
}

func TestMicroOCSRefusals(t *testing.T) {
	m, clock := manualOCS(t, 1, MicroOCSOptions{Ports: 4})
	var oe *OCSError
	bad := roundRobin(4, 600*us, 20*us)
	bad.Slots[1].Circuits[2].Out = 9
	bad.Slots[2].Circuits[0].Out = bad.Slots[2].Circuits[1].Out
	err := m.Load(bad)
	if !errors.As(err, &oe) || oe.Kind != "validation" || !strings.Contains(err.Error(), "slots[1]: output 9 out of range") ||
		!strings.Contains(err.Error(), "slots[2]: output") {
		t.Fatalf("bad circuits: %v", err)
	}
	tight := roundRobin(4, 600*us, 20*us)
	tight.Period = 500 * us
	if err := m.Load(tight); err == nil || !strings.Contains(err.Error(), "exceeds period_ns") {
		t.Fatalf("W too short: %v", err)
	}
	if err := m.Load(roundRobin(4, 600*us, 5*us)); err == nil || !strings.Contains(err.Error(), "night_ns 5000 below") {
		t.Fatalf("night below the worst-case gap: %v", err)
	}
	if _, err := m.Start(0, true); !errors.As(err, &oe) || oe.Kind != "conflict" {
		t.Fatalf("start with nothing loaded: %v", err)
	}
	if err := m.Load(roundRobin(4, 600*us, 20*us)); err != nil {
		t.Fatal(err)
	}
	clock.Store(int64(time.Millisecond))
	if _, err := m.Start(500*us, false); err == nil || !strings.Contains(err.Error(), "not in the future") {
		t.Fatalf("start in the past: %v", err)
	}
	if _, err := m.Start(0, true); err != nil {
		t.Fatal(err)
	}
	if err := m.SetConfiguration([]OCSCircuit{{1, 1}}); !errors.As(err, &oe) || oe.Kind != "conflict" {
		t.Fatalf("configuration while armed: %v", err)
	}
	if err := m.Load(roundRobin(4, 600*us, 20*us)); !errors.As(err, &oe) || oe.Kind != "conflict" {
		t.Fatalf("load while armed: %v", err)
	}
	m.Dark()
	if st := m.Status(); st.State != "idle" || st.Schedule != nil {
		t.Fatalf("after dark: %+v, want idle with no schedule loaded", st)
	}
	if err := m.SetConfiguration([]OCSCircuit{{1, 3}, {3, 1}}); err != nil {
		t.Fatal(err)
	}
	clock.Add(int64(16 * us))
	if lit, _ := m.Lit(); len(lit) != 2 {
		t.Fatalf("static configuration: %v", lit)
	}
	ns, _, _, _ := m.Nights(0, 10)
	if len(ns) != 1 || ns[0].Period != -1 || ns[0].Slot != -1 {
		t.Fatalf("static configuration night: %+v", ns)
	}
}

func TestMicroOCSNightLogIsARing(t *testing.T) {
	m, clock := manualOCS(t, 1, MicroOCSOptions{Ports: 4, NightLog: 16})
	if err := m.Load(roundRobin(4, 300*us, 20*us)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Start(0, true); err != nil {
		t.Fatal(err)
	}
	clock.Store(int64(300*us + 10*300*us + 1)) // 10 periods of 3 slots, and the 31st night begun
	ns, next, oldest, _ := m.Nights(0, 100)
	if oldest != 31-16 || len(ns) != 15 || ns[0].Seq != oldest || next != 30 {
		t.Fatalf("oldest %d next %d, %d nights (first %+v)", oldest, next, len(ns), ns[0])
	}
}

func TestGapFromOptions(t *testing.T) {
	g, err := GapFromOptions(map[string]string{"reconfig_mean_us": "20", "reconfig_max_us": "25", "reconfig_sd_us": "0"})
	if err != nil || g.Mean != 20*us || g.Max != 25*us || g.Min != 9*us || g.SD != 0 {
		t.Fatalf("%+v %v", g, err)
	}
	if g.Draw(nil) != 20*us {
		t.Fatal("SD 0 must give the mean")
	}
	for _, bad := range []map[string]string{{"reconfig_dist": "gamma"}, {"reconfig_mean_us": "30"}, {"reconfig_min_us": "x"}} {
		if _, err := GapFromOptions(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestMordiaServerHangsMidSchedule checks the fault over HTTP: requests
// are answered until the schedule reaches the period, then none is.
func TestMordiaServerHangsMidSchedule(t *testing.T) {
	m, clock := manualOCS(t, 1, MicroOCSOptions{Ports: 4})
	srv := NewMordiaServer(m, nil)
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	client := &http.Client{Timeout: 300 * time.Millisecond}
	do := func(method, path, body string) (int, string, error) {
		req, _ := http.NewRequest(method, srv.Addr()+path, strings.NewReader(body))
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	sched := `{"period_ns":600000,"night_ns":20000,"slots":[{"duration_ns":180000,"circuits":[{"in":1,"out":2},{"in":2,"out":1}]}]}`
	if code, body, err := do("PUT", "/v1/schedule", sched); err != nil || code != 200 {
		t.Fatalf("load: %d %s %v", code, body, err)
	}
	if code, body, _ := do("PUT", "/v1/schedule", `{"period_ns":1,"bogus":2}`); code != 400 || !strings.Contains(body, "bogus") {
		t.Fatalf("unknown field: %d %s", code, body)
	}
	if code, body, _ := do("GET", "/v1/nope", ""); code != 404 {
		t.Fatalf("unknown route: %d %s", code, body)
	}
	code, body, _ := do("POST", "/v1/schedule/start", `{"next_period":true}`)
	var started struct {
		StartNs int64 `json:"start_ns"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &started) != nil || started.StartNs != 600000 {
		t.Fatalf("start: %d %s", code, body)
	}
	srv.HangAfterPeriods(3)
	clock.Store(started.StartNs + 2*600000 + 1)
	if code, _, err := do("GET", "/v1/schedule", ""); err != nil || code != 200 {
		t.Fatalf("in period 2: %d %v", code, err)
	}
	clock.Store(started.StartNs + 3*600000 + 1)
	if _, _, err := do("GET", "/v1/schedule", ""); err == nil {
		t.Fatal("in period 3 the server still answers")
	}
	if _, _, err := do("POST", "/v1/dark", ""); err == nil {
		t.Fatal("a hung server answered dark")
	}
	// The data plane ran on while the control plane hung.
	if st := m.Status(); st.State != "running" || st.Period != 3 {
		t.Fatalf("model %+v", st)
	}
	srv.Resume()
	if code, _, err := do("POST", "/v1/dark", ""); err != nil || code != 200 {
		t.Fatalf("after resume: %d %v", code, err)
	}
}
