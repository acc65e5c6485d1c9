package monitor

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"testbed/dut/tofino"
	"testbed/inventory"
	o "testbed/orchestrator"
	lg "testbed/p4/linkguardian"
	"testbed/simlab"
	"testbed/transport"
)

// actBench is the simulated lab's sw1 and sw2 running LinkGuardian's
// programs with lg25 and lg100 added, reached over SSH through the
// switch driver, and a file lease store in a temporary state directory.
type actBench struct {
	lab   *simlab.Lab
	inv   *inventory.Inventory
	sws   map[string]*tofino.Switch
	store *o.FileLeases
	state string
	dir   Direction // lg25 a>b: sw1 -> sw2
}

func newActBench(t *testing.T) *actBench { return newActBenchOver(t, "tofino-bfrt") }

// newActBenchOver is the bench with its switches reached through the
// switch driver of that inventory key (tofino-bfrt: over SSH;
// tofino-bfrt-grpc: over BF Runtime gRPC, as the orchestrator opens it).
func newActBenchOver(t *testing.T, driver string) *actBench {
	t.Helper()
	lab, err := simlab.StartDefault(simlab.Options{Seed: 31, SwitchDriver: driver})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := &actBench{lab: lab, inv: lab.Inventory(), sws: map[string]*tofino.Switch{}, state: t.TempDir()}
	b.store = &o.FileLeases{L: o.NewLeaser(b.state, time.Minute, nil)}
	for name, prog := range map[string]string{"sw1": lg.ProgramSender, "sw2": lg.ProgramReceiver} {
		d, _ := b.inv.Device(name)
		var sw *tofino.Switch
		if driver == "tofino-bfrt" {
			sw, err = tofino.Open(ctx, d.Address, tofino.Options{Timeout: 20 * time.Second,
				SSH: transport.SSHOptions{KeyFile: d.Credentials.KeyFile, KnownHosts: d.Options["known_hosts"]}})
		} else {
			var od *o.OpenedDevice
			if od, err = o.OpenDevice(ctx, d, nil); err == nil {
				sw = od.Driver.(*tofino.Switch)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sw.Close() })
		if err := sw.StartSwitchd(ctx, prog); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for port, gbps := range map[string]int{"p1": 100, "p2": 25} {
			n, _ := strconv.Atoi(d.Ports[port])
			if err := sw.AddPort(ctx, n, gbps, "none"); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		b.sws[name] = sw
	}
	all, err := Directions(b.inv)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range all {
		if d.Link == "lg25" && d.Direction == "a>b" {
			b.dir = d
		}
	}
	if b.dir.Sender != "sw1" {
		t.Fatalf("lg25 a>b: %+v", b.dir)
	}
	return b
}

func (b *actBench) actor(sws map[string]SwitchActor) *Actor {
	if sws == nil {
		sws = map[string]SwitchActor{"sw1": b.sws["sw1"], "sw2": b.sws["sw2"]}
	}
	return &Actor{Inv: b.inv, Store: b.store, Switches: sws, Owner: "test", RunID: "monitor-test", Dummies: 10, Blocking: true}
}

func (b *actBench) decision(a Action, copies int) Decision {
	return Decision{At: time.Unix(1e9, 0), Link: b.dir.Link, Direction: b.dir.Direction, Sender: b.dir.Sender, Action: a, Copies: copies}
}

// entry is sw1's entry of table for the direction's port (nil: none).
func (b *actBench) entry(t *testing.T, table string) *tofino.Entry {
	t.Helper()
	es, err := b.sws["sw1"].Entries(context.Background(), table)
	if err != nil {
		t.Fatal(err)
	}
	for i := range es {
		if es[i].Key["egress_port"] == int64(b.dir.TxPort) {
			return &es[i]
		}
	}
	return nil
}

// journals lists the undo journals left in the state directory.
func (b *actBench) journals(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(b.state, "leases", "*.journal"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (b *actBench) noLeaseLeft(t *testing.T) {
	t.Helper()
	ls, err := b.store.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 0 {
		t.Fatalf("leases left held: %+v", ls)
	}
}

// The policy's LinkGuardian decisions carried out on the simulated
// switch through its driver: enable writes both sender entries with
// Eq. 2's copies, a raise rewrites the copies, disable removes them. Each
// action holds the switch's lease only while it runs and leaves no undo
// journal behind; a switch leased by a run defers the action untouched.
func TestActorCarriesOutLinkGuardianDecisions(t *testing.T) {
	b := newActBench(t)
	ctx := context.Background()
	a := b.actor(nil)
	act := func(d Decision, want string) {
		t.Helper()
		out, err := a.Act(ctx, d, b.dir)
		if out != want {
			t.Fatalf("%s: outcome %s (%v), want %s", d.Action, out, err, want)
		}
		b.noLeaseLeft(t)
		if j := b.journals(t); len(j) != 0 {
			t.Fatalf("%s: undo journals left: %v", d.Action, j)
		}
	}
	act(b.decision(ActEnableLG, 2), OutcomeDone)
	retx, prot := b.entry(t, lg.TableRetxMcast), b.entry(t, lg.TableLinkProtect)
	if retx == nil || retx.Data["num_copies"] != 2 || prot == nil || prot.Data["blocking_mode"] != 1 || prot.Data["dummy_pkt_max_count"] != 10 {
		t.Fatalf("after enable: retx %+v protect %+v", retx, prot)
	}
	act(b.decision(ActRaiseCopies, 3), OutcomeDone)
	if retx := b.entry(t, lg.TableRetxMcast); retx == nil || retx.Data["num_copies"] != 3 || b.entry(t, lg.TableLinkProtect) == nil {
		t.Fatalf("after raise: retx %+v", retx)
	}
	act(b.decision(ActDisableLG, 3), OutcomeDone)
	if retx, prot := b.entry(t, lg.TableRetxMcast), b.entry(t, lg.TableLinkProtect); retx != nil || prot != nil {
		t.Fatalf("after disable: retx %+v protect %+v", retx, prot)
	}
	act(b.decision(ActProposeDown, 0), OutcomeProposed)

	// A run holds sw1: the action waits, nothing changes.
	d, _ := b.inv.Device("sw1")
	h, err := b.store.Acquire(ctx, o.LeaseRequest{Lab: b.inv.Name, Owner: "someone", RunID: "loss-sweep-run",
		Devices: []o.LeaseTarget{{Device: "sw1", Address: d.Address}}})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := NewPolicy(PolicyConfig{TargetLoss: 1e-9}, 1e-4, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMonitor([]Direction{b.dir}, map[string]CounterReader{"sw1": b.sws["sw1"], "sw2": b.sws["sw2"]}, Config{Threshold: 1e-4}, pol, 5*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ds := pol.Decide(b.dir.Dir, Status{State: Corrupting, Changed: true, Frames: 1e6, Losses: 1000, Rate: 1e-3, Low: 9e-4, High: 1.1e-3})
	if len(ds) != 1 || pol.Copies(b.dir.Dir) == 0 {
		t.Fatalf("policy decided %+v", ds)
	}
	m.Carry(ctx, a, ds)
	h.Release(ctx)
	if ds[0].Outcome != OutcomeDeferred || !strings.Contains(ds[0].Error, "loss-sweep-run") {
		t.Fatalf("leased switch: %+v", ds[0])
	}
	// Forgotten by the policy: the next poll decides it again.
	if pol.Copies(b.dir.Dir) != 0 {
		t.Fatalf("policy still counts %d copies on a deferred enable", pol.Copies(b.dir.Dir))
	}
	if b.entry(t, lg.TableRetxMcast) != nil {
		t.Fatal("a deferred action changed the switch")
	}
}

// failingSwitch is the real driver whose AddEntry on one table fails, as a
// switch refusing an entry would.
type failingSwitch struct {
	*tofino.Switch
	table string
}

func (f failingSwitch) AddEntry(ctx context.Context, table string, e tofino.Entry) error {
	if table == f.table {
		return errors.New("table full")
	}
	return f.Switch.AddEntry(ctx, table, e)
}

// stallingSwitch fails as failingSwitch does, and has the switch swallow
// the next request it is sent: the first put-back's.
type stallingSwitch struct {
	failingSwitch
	stall func()
}

func (s stallingSwitch) AddEntry(ctx context.Context, table string, e tofino.Entry) error {
	err := s.failingSwitch.AddEntry(ctx, table, e)
	if table == s.table {
		s.stall()
	}
	return err
}

// A put-back whose reply never comes (a loaded or lossy control path) is
// asked again once its deadline, derived from the switch's measured round
// trips, passes: the switch ends as found, where a fixed 10 s deadline
// gave up and left it changed for lab recover.
func TestActorRetriesAStalledPutBack(t *testing.T) {
	b := newActBench(t)
	ctx := context.Background()
	found := tofino.Entry{Key: map[string]int64{"egress_port": int64(b.dir.TxPort)}, Action: lg.ActionRetxCopies, Data: map[string]int64{"num_copies": 1}}
	if err := b.sws["sw1"].AddEntry(ctx, lg.TableRetxMcast, found); err != nil {
		t.Fatal(err)
	}
	f := b.lab.Faults("sw1")
	if f == nil {
		t.Fatal("sw1 has no fault injector")
	}
	sw := stallingSwitch{failingSwitch{b.sws["sw1"], lg.TableLinkProtect}, func() { f.StallNext(1) }}
	a := b.actor(map[string]SwitchActor{"sw1": sw})
	out, err := a.Act(ctx, b.decision(ActEnableLG, 4), b.dir)
	if out != OutcomeFailed || err == nil || !strings.Contains(err.Error(), "put back as found") {
		t.Fatalf("a failed enable whose put-back stalled once: %s %v", out, err)
	}
	if retx := b.entry(t, lg.TableRetxMcast); retx == nil || retx.Data["num_copies"] != 1 {
		t.Fatalf("retx entry %+v, found 1 copy", retx)
	}
	if j := b.journals(t); len(j) != 0 {
		t.Fatalf("undo journals left: %v", j)
	}
	b.noLeaseLeft(t)
}

// An action that fails half-way puts back what it changed; one that dies
// half-way (the crash hook stops it as a killed process would) leaves its
// undo journal, and `testbed lab recover`'s replay puts the switch back as
// found, entries and deleted port alike.
func TestActorLeavesTheSwitchAsFound(t *testing.T) {
	b := newActBench(t)
	ctx := context.Background()
	// Found: one copy already configured by someone (a run's leftover).
	found := tofino.Entry{Key: map[string]int64{"egress_port": int64(b.dir.TxPort)}, Action: lg.ActionRetxCopies, Data: map[string]int64{"num_copies": 1}}
	if err := b.sws["sw1"].AddEntry(ctx, lg.TableRetxMcast, found); err != nil {
		t.Fatal(err)
	}
	asFound := func(when string) {
		t.Helper()
		if retx := b.entry(t, lg.TableRetxMcast); retx == nil || retx.Data["num_copies"] != 1 {
			t.Fatalf("%s: retx entry %+v, found 1 copy", when, retx)
		}
		if prot := b.entry(t, lg.TableLinkProtect); prot != nil {
			t.Fatalf("%s: protect entry %+v, found none", when, prot)
		}
	}

	// The second step fails: the first is put back.
	a := b.actor(map[string]SwitchActor{"sw1": failingSwitch{b.sws["sw1"], lg.TableLinkProtect}})
	out, err := a.Act(ctx, b.decision(ActEnableLG, 4), b.dir)
	if out != OutcomeFailed || err == nil || !strings.Contains(err.Error(), "table full") || !strings.Contains(err.Error(), "put back") {
		t.Fatalf("failing switch: %s %v", out, err)
	}
	asFound("after a failed enable")
	if j := b.journals(t); len(j) != 0 {
		t.Fatalf("undo journals left after a clean failure: %v", j)
	}

	// The monitor dies after the first step.
	a = b.actor(nil)
	a.crash = func(step string) error {
		if step == "set "+lg.TableRetxMcast {
			return errCrash
		}
		return nil
	}
	if out, err := a.Act(ctx, b.decision(ActEnableLG, 4), b.dir); out != OutcomeFailed || !errors.Is(err, errCrash) {
		t.Fatalf("crash: %s %v", out, err)
	}
	if retx := b.entry(t, lg.TableRetxMcast); retx == nil || retx.Data["num_copies"] != 4 {
		t.Fatalf("the crashed action did not change the switch: %+v", retx)
	}
	if len(b.journals(t)) != 1 {
		t.Fatalf("journals after the crash: %v", b.journals(t))
	}
	rec, _, err := o.RecoverLabIn(ctx, b.inv, b.store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec) != 1 {
		t.Fatalf("recovered %+v", rec)
	}
	asFound("after recover")

	// Taking the link down (an operator allowed it) and dying after:
	// recover adds the port back at its speed.
	before, err := b.sws["sw1"].PortStatus(ctx, b.dir.TxPort)
	if err != nil {
		t.Fatal(err)
	}
	a.crash = func(string) error { return errCrash }
	if out, err := a.Act(ctx, b.decision(ActDisableLink, 0), b.dir); out != OutcomeFailed || !errors.Is(err, errCrash) {
		t.Fatalf("disable link: %s %v", out, err)
	}
	if _, err := b.sws["sw1"].PortStatus(ctx, b.dir.TxPort); !tofino.IsNotFound(err) {
		t.Fatalf("port %d not deleted: %v", b.dir.TxPort, err)
	}
	if _, _, err := o.RecoverLabIn(ctx, b.inv, b.store, nil); err != nil {
		t.Fatal(err)
	}
	after, err := b.sws["sw1"].PortStatus(ctx, b.dir.TxPort)
	if err != nil || after.Speed != before.Speed || after.FEC != before.FEC {
		t.Fatalf("port after recover: %+v %v, before %+v", after, err, before)
	}
	if _, err := os.Stat(filepath.Join(b.state, "leases")); err != nil {
		t.Fatal(err)
	}
	if j := b.journals(t); len(j) != 0 {
		t.Fatalf("journals left after recover: %v", j)
	}

	// A monitor that died mid-action and restarts: its next action on the
	// switch first replays what the dead one left, then acts.
	a.crash = func(step string) error {
		if step == "set "+lg.TableRetxMcast {
			return errCrash
		}
		return nil
	}
	if out, err := a.Act(ctx, b.decision(ActEnableLG, 5), b.dir); out != OutcomeFailed || !errors.Is(err, errCrash) {
		t.Fatalf("crash: %s %v", out, err)
	}
	a.crash = nil
	if out, err := a.Act(ctx, b.decision(ActEnableLG, 2), b.dir); out != OutcomeDone {
		t.Fatalf("after restart: %s %v", out, err)
	}
	if retx, prot := b.entry(t, lg.TableRetxMcast), b.entry(t, lg.TableLinkProtect); retx == nil || retx.Data["num_copies"] != 2 || prot == nil {
		t.Fatalf("after restart: retx %+v protect %+v", retx, prot)
	}
	if j := b.journals(t); len(j) != 0 {
		t.Fatalf("journals left after the replaying action: %v", j)
	}
}
