package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"testbed/dut/tofino"
	"testbed/inventory"
)

// wire is two switches' port counters joined by links whose a>b
// direction corrupts at a rate; every read advances the traffic.
type wire struct {
	mu    sync.Mutex
	ports map[string]map[int]*tofino.PortFrames
	reads map[string]int
	fail  string
}

func (w *wire) reader(sw string) CounterReader {
	return readerFunc(func(ctx context.Context, p int, q tofino.FrameQuery) (tofino.PortFrames, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := ctx.Deadline(); !ok {
			return tofino.PortFrames{}, errors.New("read without a deadline")
		}
		if sw == w.fail {
			return tofino.PortFrames{}, errors.New("connection refused")
		}
		w.reads[sw]++
		v := *w.ports[sw][p]
		return tofino.PortFrames{TxAll: v.TxAll, RxOK: v.RxOK, RxFCSErrors: v.RxFCSErrors}, nil
	})
}

type readerFunc func(context.Context, int, tofino.FrameQuery) (tofino.PortFrames, error)

func (f readerFunc) PortFramesOf(ctx context.Context, p int, q tofino.FrameQuery) (tofino.PortFrames, error) {
	return f(ctx, p, q)
}

func (w *wire) send(from string, fp int, to string, tp int, frames, bad int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, sp := range []struct {
		sw string
		p  int
	}{{from, fp}, {to, tp}} {
		if w.ports[sp.sw] == nil {
			w.ports[sp.sw] = map[int]*tofino.PortFrames{}
		}
		if w.ports[sp.sw][sp.p] == nil {
			w.ports[sp.sw][sp.p] = &tofino.PortFrames{TxAll: 5, RxOK: 7}
		}
	}
	w.ports[from][fp].TxAll += frames
	w.ports[to][tp].RxOK += frames - bad
	w.ports[to][tp].RxFCSErrors += bad
}

func TestMonitorPollsDetectsAndServesStatus(t *testing.T) {
	inv, err := inventory.Parse(filepath.Join(t.TempDir(), "lab.yaml"), []byte(`version: 1
name: m
devices:
  sw1: {kind: switch, driver: tofino-bfrt, address: "ssh://admin@127.0.0.1:1", ports: {p1: "0", p2: "4"}}
  sw2: {kind: switch, driver: tofino-bfrt, address: "ssh://admin@127.0.0.1:2", ports: {p1: "0", p2: "4"}}
  tg1: {kind: trafficgen, driver: otg, address: "http://127.0.0.1:3"}
links:
  - {name: lg25, a: {device: sw1, port: p2}, b: {device: sw2, port: p2}, transceiver: 25GBASE-SR}
  - {name: lg100, a: {device: sw1, port: p1}, b: {device: sw2, port: p1}, transceiver: 100GBASE-SR4}
  - {name: tg, a: {device: tg1, port: p1}, b: {device: sw1, port: p1}, transceiver: 25GBASE-SR}
`))
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := Directions(inv)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 4 || dirs[0].Link != "lg100" || dirs[2].Link != "lg25" || dirs[2].TxPort != 4 || dirs[3].Sender != "sw2" {
		t.Fatalf("directions %+v", dirs)
	}
	w := &wire{ports: map[string]map[int]*tofino.PortFrames{}, reads: map[string]int{}}
	for _, d := range dirs {
		w.send(d.Sender, d.TxPort, d.Receiver, d.RxPort, 0, 0)
	}
	pc := DefaultPolicy()
	pc.ProposeDisable = false
	pol, err := NewPolicy(pc, 1e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, nil))
	m, err := NewMonitor(dirs, map[string]CounterReader{"sw1": w.reader("sw1"), "sw2": w.reader("sw2")}, DefaultConfig(), pol, time.Second, log)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := m.Snapshot(); len(st) != 4 || st[2].Link != "lg25" || st[2].State != Unknown || st[2].Reason == "" {
		t.Fatalf("before the first poll: %+v", st)
	}
	ctx := context.Background()
	now := time.Unix(1e9, 0)
	var decided []Decision
	for i := 0; i < 10; i++ {
		// lg25 a>b corrupts at 1e-4; lg100 carries clean traffic; the
		// reverse of lg25 is idle.
		w.send("sw1", 4, "sw2", 4, 2_000_000, 200)
		w.send("sw1", 0, "sw2", 0, 2_000_000, 0)
		w.send("sw2", 0, "sw1", 0, 2_000_000, 0)
		now = now.Add(time.Second)
		ds, err := m.Poll(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		decided = append(decided, ds...)
	}
	if w.reads["sw1"] != 20 || w.reads["sw2"] != 20 {
		t.Fatalf("reads %v: each port once a poll", w.reads)
	}
	if len(decided) != 1 || decided[0].Link != "lg25" || decided[0].Direction != "a>b" || decided[0].Action != ActEnableLG {
		t.Fatalf("decisions %+v", decided)
	}
	want := map[string]State{"lg100 a>b": Clean, "lg100 b>a": Clean, "lg25 a>b": Corrupting, "lg25 b>a": Unknown}

	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "/status", nil))
	var got struct {
		Directions []struct {
			Link, Direction, State string
			Copies                 int `json:"linkguardian_copies"`
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for _, d := range got.Directions {
		if d.State != want[d.Link+" "+d.Direction].String() {
			t.Fatalf("%s %s is %s: %s", d.Link, d.Direction, d.State, rec.Body)
		}
		if (d.Copies > 0) != (d.Link == "lg25" && d.Direction == "a>b") {
			t.Fatalf("copies in status: %s", rec.Body)
		}
	}

	// A switch that stops answering: its directions keep their state and
	// the failure names the switch.
	w.fail = "sw2"
	_, err = m.Poll(ctx, now.Add(time.Second))
	if err == nil || !strings.Contains(err.Error(), "sw2") {
		t.Fatalf("err = %v", err)
	}
	if dirs, errs := m.Snapshot(); len(errs) == 0 || dirs[2].State != Corrupting {
		t.Fatalf("after a failed read: %+v %v", dirs, errs)
	}
	// The same failure poll after poll is warned about once per port.
	once := strings.Count(logged.String(), "counter read failed")
	for i := 2; i < 5; i++ {
		if _, err := m.Poll(ctx, now.Add(time.Duration(i)*time.Second)); err == nil {
			t.Fatal("sw2 answered")
		}
	}
	if n := strings.Count(logged.String(), "counter read failed"); once == 0 || n != once {
		t.Errorf("%d warnings after one failed poll, %d after four: %s", once, n, logged.String())
	}
}

func TestDirectionsNeedDevPorts(t *testing.T) {
	inv, err := inventory.Parse(filepath.Join(t.TempDir(), "lab.yaml"), []byte(`version: 1
name: m
devices:
  sw1: {kind: switch, driver: tofino-bfrt, address: "ssh://admin@127.0.0.1:1", ports: {p1: "x"}}
  sw2: {kind: switch, driver: tofino-bfrt, address: "ssh://admin@127.0.0.1:2", ports: {p1: "0"}}
links:
  - {name: l, a: {device: sw1, port: p1}, b: {device: sw2, port: p1}, transceiver: 25GBASE-SR}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Directions(inv); err == nil {
		t.Fatal("a port that is no dev port accepted")
	}
}
