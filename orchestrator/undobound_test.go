package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"testbed/dut/p4switch"
	lg "testbed/p4/linkguardian"
	"testbed/results"
	"testbed/simlab"
)

// slowMove is what the tests below need of the Keysight driver: its speed
// setting.
type slowMove interface {
	SetSpeed(ctx context.Context, ch int, dBps float64) error
}

// An undo is given the time its driver says it may take, not the run's
// fixed bound: voa1's channel 1, slowed to 1 dB/s, is moved 0.6 dB and its
// undo, a 600 ms move back, runs under a fixed bound of 150 ms (standing
// for the 30 s a 40 dB move at 0.1 dB/s outlasts). Given 150 ms, the undo
// is cut off, the lab left at 0.6 dB and the run failed "could not
// restore".
func TestUndoTakesTheTimeItsDriverSays(t *testing.T) {
	lab, err := simlab.StartDefault(simlab.Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	inv := lab.Inventory()
	state := t.TempDir()
	r := &devRecipe{devices: []string{"voa1"}, hook: func(ctx context.Context, rc *RunContext) error {
		a, err := rc.Attenuator("voa1")
		if err != nil {
			return err
		}
		if err := a.(slowMove).SetSpeed(ctx, 1, 1); err != nil {
			return err
		}
		return rc.SetAttenuation(ctx, "voa1", 1, 0.6)
	}}
	p, _ := ResolveParams(nil, "", nil, nil)
	eng := &Engine{RunsDir: filepath.Join(state, "runs"), StateDir: state}
	const per = 150 * time.Millisecond
	res, err := eng.Run(context.Background(), RunRequest{Recipe: r, Params: p, Lab: inv, Simulated: true, CleanupTimeout: per})
	if err != nil || res.Status != results.StatusOK {
		t.Fatalf("run: %v %s %s, unrestored %v", err, res.Status, res.Reason, res.Unrestored)
	}
	v, _ := lab.World().VOA("voa1")
	if got := v.Channels[0].Attenuation(); math.Abs(got) > 1e-9 {
		t.Fatalf("voa1 channel 1 left at %g dB, want its resting 0 dB", got)
	}
	// The bundle says what each undo was given: the move's, past the
	// fixed bound.
	f, err := os.Open(filepath.Join(res.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var bound float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e results.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "cleanup" && e.Device == "voa1" && e.Message == "restore voa1 channel 1 to 0.00 dB" {
			bound, _ = e.Fields["bound_s"].(float64)
		}
	}
	if bound < 0.6 {
		t.Errorf("the undo of a 600 ms move was given %v s", bound)
	}
}

// A dead run's undo replayed from its journal is given the time its
// driver says too: the channel it left at 0.6 dB, at 1 dB/s, goes back to
// 0 dB under a fixed bound of 150 ms.
func TestReplayedUndoTakesTheTimeItsDriverSays(t *testing.T) {
	lab, err := simlab.StartDefault(simlab.Options{Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	inv := lab.Inventory()
	d, _ := inv.Device("voa1")
	v, _ := lab.World().VOA("voa1")
	v.Channels[0].SetSpeed(1)
	v.Channels[0].SetAttenuation(0.6)
	for v.Channels[0].SettleTime() > 0 {
		time.Sleep(v.Channels[0].SettleTime())
	}
	path := filepath.Join(t.TempDir(), "voa1.journal")
	j, err := CreateJournal(path, "run-dead", d.Address, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append(UndoRecord{Device: "voa1", Kind: UndoVOAAttenuation, Desc: "restore voa1 channel 1", Args: json.RawMessage(`{"channel":1,"db":0}`)}); err != nil {
		t.Fatal(err)
	}
	rec, err := RecoverDevice(context.Background(), d, path, nil, 150*time.Millisecond)
	if err != nil || len(rec) != 1 || rec[0].Err != nil {
		t.Fatalf("recover: %v %+v", err, rec)
	}
	if got := v.Channels[0].Attenuation(); math.Abs(got) > 1e-9 {
		t.Fatalf("voa1 channel 1 left at %g dB, want 0 dB", got)
	}
}

// A program's restart, the undo of a run that loaded another, is given
// the switch driver's start-up bound, over SSH (StartTimeout and four
// Timeouts) and over BF Runtime gRPC (the load's StartTimeout and four
// Timeouts): the simulated switch takes 150 ms to load a program
// (bf_switchd's start, a warm init), longer than the fixed bound of 100 ms
// this run has. Over gRPC the driver said nothing and the restart was cut
// at 100 ms, the switch left running the run's program.
func TestProgramUndoTakesTheSwitchsStartBound(t *testing.T) {
	for _, driver := range []string{"tofino-bfrt", "tofino-bfrt-grpc"} {
		t.Run(driver, func(t *testing.T) { programUndoTakesTheStartBound(t, driver) })
	}
}

func programUndoTakesTheStartBound(t *testing.T, driver string) {
	lab, err := simlab.StartDefault(simlab.Options{Seed: 7, SwitchDriver: driver})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	inv := lab.Inventory()
	state := t.TempDir()
	// The lab's guard: a wait that goes wrong ends here, not at the
	// driver's 3 min start-up bound.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, _ := inv.Device("sw1")
	program := func() p4switch.Programs {
		od, err := OpenDevice(ctx, d, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { od.closer.Close() })
		return od.Driver.(p4switch.Programs)
	}
	if err := program().LoadProgram(ctx, lg.ProgramReceiver); err != nil {
		t.Fatal(err)
	}
	r := &devRecipe{devices: []string{"sw1"}, hook: func(ctx context.Context, rc *RunContext) error {
		core, err := rc.Switch("sw1")
		if err != nil {
			return err
		}
		if err := rc.Journal("sw1", Undo{Kind: UndoTofinoProgram, Desc: "restart bf_switchd on sw1 with " + lg.ProgramReceiver,
			Args: map[string]string{"program": lg.ProgramReceiver}}); err != nil {
			return err
		}
		return core.(p4switch.Programs).LoadProgram(ctx, lg.ProgramSender)
	}}
	p, _ := ResolveParams(nil, "", nil, nil)
	eng := &Engine{RunsDir: filepath.Join(state, "runs"), StateDir: state}
	res, err := eng.Run(ctx, RunRequest{Recipe: r, Params: p, Lab: inv, Simulated: true, CleanupTimeout: 100 * time.Millisecond})
	if err != nil || res.Status != results.StatusOK {
		t.Fatalf("run: %v %s %s, unrestored %v", err, res.Status, res.Reason, res.Unrestored)
	}
	if now, err := program().Program(ctx); err != nil || now != lg.ProgramReceiver {
		t.Fatalf("sw1 runs %q (%v), want %q, the program found", now, err, lg.ProgramReceiver)
	}
}

// A caller cancelled while a switch's program-scoped undos are settled
// (Ctrl-C, a step's deadline) still gets the switch put back: the undos
// run as the run's end runs them, under the run's cleanup context, each
// with its bound, not under the caller's context. sw1 (the SSH driver,
// over SSH to the simulated switch) has a register written by the run;
// SettleProgram, called with a context already cancelled, writes it back
// before it returns the cancellation. Under the caller's context the
// undo failed at once and the register stayed as the run left it until
// the run's end.
func TestSettleProgramRestoresForACancelledCaller(t *testing.T) {
	lab, err := simlab.StartDefault(simlab.Options{Seed: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	inv := lab.Inventory()
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, _ := inv.Device("sw1")
	od, err := OpenDevice(ctx, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { od.closer.Close() })
	sw := od.Driver.(p4switch.Core)
	if err := od.Driver.(p4switch.Programs).LoadProgram(ctx, lg.ProgramReceiver); err != nil {
		t.Fatal(err)
	}
	found, err := sw.ReadRegister(ctx, lg.RegPauseThreshold, 0)
	if err != nil {
		t.Fatal(err)
	}
	changed := found[0] + 1234
	var settleErr error
	var during []int64
	r := &devRecipe{devices: []string{"sw1"}, hook: func(ctx context.Context, rc *RunContext) error {
		core, err := rc.Switch("sw1")
		if err != nil {
			return err
		}
		if err := rc.Journal("sw1", Undo{Kind: UndoTofinoRegister, Desc: "write sw1's pause threshold back",
			Args: map[string]any{"name": lg.RegPauseThreshold, "index": 0, "value": found[0]}}); err != nil {
			return err
		}
		if err := core.WriteRegister(ctx, lg.RegPauseThreshold, 0, changed); err != nil {
			return err
		}
		cctx, ccancel := context.WithCancel(ctx)
		ccancel()
		settleErr = rc.SettleProgram(cctx, "sw1", lg.ProgramReceiver, "a test's restart")
		// What the switch holds as SettleProgram returns, before the
		// run's end could restore anything.
		during, err = sw.ReadRegister(ctx, lg.RegPauseThreshold, 0)
		return err
	}}
	p, _ := ResolveParams(nil, "", nil, nil)
	eng := &Engine{RunsDir: filepath.Join(state, "runs"), StateDir: state}
	res, err := eng.Run(ctx, RunRequest{Recipe: r, Params: p, Lab: inv, Simulated: true})
	if err != nil || res.Status != results.StatusOK {
		t.Fatalf("run: %v %s %s, unrestored %v", err, res.Status, res.Reason, res.Unrestored)
	}
	if !errors.Is(settleErr, context.Canceled) {
		t.Errorf("SettleProgram for a cancelled caller returned %v, want the cancellation once settled", settleErr)
	}
	if len(during) == 0 || during[0] != found[0] {
		t.Fatalf("as SettleProgram returned, sw1's %s[0] = %v, want %d as found (the run set %d)", lg.RegPauseThreshold, during, found[0], changed)
	}
	f, err := os.Open(filepath.Join(res.Dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	settled := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e results.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "undo.settled" && e.Device == "sw1" {
			if b, _ := e.Fields["bound_s"].(float64); b <= 0 {
				t.Errorf("settled undo without its bound: %+v", e)
			}
			settled++
		}
	}
	if settled != 1 {
		t.Errorf("%d undos settled on sw1, want 1", settled)
	}
}
