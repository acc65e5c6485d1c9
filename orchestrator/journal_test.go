package orchestrator

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"testbed/dut/host"
	"testbed/dut/tofino"
	lg "testbed/p4/linkguardian"
	"testbed/results"
	"testbed/simlab"
)

func TestJournalKeepsWhatIsNotDoneAndIgnoresATornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev.journal")
	j, err := CreateJournal(path, "run-1", "tcp://a:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CreateJournal(path, "run-2", "tcp://a:1", nil); err == nil {
		t.Fatal("a second journal replaced one that was never replayed")
	}
	s1, _ := j.Append(UndoRecord{Device: "voa1", Kind: UndoVOAAttenuation, Desc: "first", Args: json.RawMessage(`{"channel":1,"db":0}`)})
	_, _ = j.Append(UndoRecord{Device: "voa1", Kind: UndoVOAAttenuation, Desc: "second", Args: json.RawMessage(`{"channel":2,"db":0}`)})
	if err := j.Done(s1); err != nil {
		t.Fatal(err)
	}
	// The writer dies in the middle of a line.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"op":"undo","seq":3,"undo":{"dev`)
	f.Close()
	p, err := ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 1 || p[0].Desc != "second" || p[0].RunID != "run-1" {
		t.Fatalf("pending %+v, want only the second undo of run-1", p)
	}
	if removed, _ := j.Close(); removed {
		t.Error("a journal with an undo left was removed")
	}
	// A line cut short that is not the last is an error, naming the line.
	os.WriteFile(path, []byte("{\"op\":\"begin\"}\n{garbage\n{\"op\":\"begin\"}\n"), 0o644)
	if _, err := ReadJournal(path); err == nil || !strings.Contains(err.Error(), ":2:") {
		t.Errorf("garbage in the middle: %v, want an error at line 2", err)
	}

	j2, err := CreateJournal(filepath.Join(t.TempDir(), "ok.journal"), "run-3", "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := j2.Append(UndoRecord{Device: "tg1", Kind: UndoTrafficStop, Desc: "stop"})
	j2.Done(s)
	if removed, err := j2.Close(); !removed || err != nil {
		t.Errorf("a journal with everything done is kept: %v %v", removed, err)
	}
}

// devRecipe touches the named devices through hook, one step.
type devRecipe struct {
	devices []string
	hook    func(ctx context.Context, rc *RunContext) error
}

func (r *devRecipe) Meta() Meta {
	return Meta{Name: "journal-probe", Version: "1.0.0", Summary: "changes devices"}
}
func (r *devRecipe) Plan(pc *PlanContext) (*Plan, error) {
	return &Plan{Steps: []*Step{{Name: "touch", Action: "touch", Devices: r.devices, Run: r.hook}}}, nil
}

// A run that dies (here: its lease names a process that is gone, its
// journal and its changes are left as a SIGKILL leaves them) is undone by
// the next run before it starts: the next run finds, and restores at its
// end, the ORIGINAL values, not the dead run's leftovers.
func TestNextRunReplaysADeadRunsJournal(t *testing.T) {
	lab, err := simlab.StartDefault(simlab.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	inv := lab.Inventory()
	state := t.TempDir()
	const cc = "net.ipv4.tcp_congestion_control"
	h1 := lab.Host("h1")
	if v, _ := h1.Sysctl(cc); v != "cubic" {
		t.Fatalf("h1 starts with %s=%s, want cubic", cc, v)
	}

	// The dead run, as it leaves the disk and the devices: lease and
	// journal of h1, the journaled change made.
	h1dev, _ := inv.Device("h1")
	leaser := NewLeaser(state, time.Hour, nil)
	leases, err := leaser.Acquire(inv.Name, "alice", "run-dead", []LeaseTarget{{Device: "h1", Address: h1dev.Address}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := CreateJournal(leases[0].JournalPath(), "run-dead", leases[0].Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	od, err := OpenDevice(context.Background(), h1dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	hd := od.Driver.(*host.Host)
	before, err := hd.Current(context.Background(), host.Sysctl(cc, "dctcp"))
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"kind": host.SettingSysctl, "key": cc, "value": before})
	if _, err := j.Append(UndoRecord{Device: "h1", Kind: UndoHostSetting, Desc: "restore " + cc, Args: args}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := hd.Apply(context.Background(), host.Sysctl(cc, "dctcp")); err != nil {
		t.Fatal(err)
	}
	od.closer.Close()
	dead := *leases[0]
	dead.PID = 1 << 30
	b, _ := json.Marshal(dead)
	os.WriteFile(leases[0].path, b, 0o644)
	if v, _ := h1.Sysctl(cc); v != "dctcp" {
		t.Fatalf("the dead run's leftover is %s, want dctcp", v)
	}

	// The next run sets the same thing, and at its end puts back what it
	// found, which must be the original.
	var found string
	r := &devRecipe{devices: []string{"h1"}, hook: func(ctx context.Context, rc *RunContext) error {
		ch, err := rc.ApplyHostSetting(ctx, "h1", host.Sysctl(cc, "dctcp"))
		found = ch.Before
		return err
	}}
	p, _ := ResolveParams(nil, "", nil, nil)
	eng := &Engine{RunsDir: filepath.Join(state, "runs"), StateDir: state}
	res, err := eng.Run(context.Background(), RunRequest{Recipe: r, Params: p, Lab: inv, Simulated: true})
	if err != nil || res.Status != results.StatusOK {
		t.Fatalf("run: %v %+v", err, res)
	}
	if found != "cubic" {
		t.Errorf("the next run found %s=%s, want the original cubic (the dead run's journal was not replayed first)", cc, found)
	}
	if v, _ := h1.Sysctl(cc); v != "cubic" {
		t.Errorf("after the next run %s=%s, want the original cubic", cc, v)
	}
	var m results.Manifest
	mb, _ := os.ReadFile(filepath.Join(res.Dir, "manifest.json"))
	json.Unmarshal(mb, &m)
	if len(m.Recovered) != 1 || !m.Recovered[0].OK || m.Recovered[0].FromRun != "run-dead" || m.Recovered[0].Device != "h1" {
		t.Errorf("manifest recovered %+v, want h1's undo from run-dead", m.Recovered)
	}
	ev, _ := os.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
	if !strings.Contains(string(ev), `"recover"`) {
		t.Error("events.jsonl does not record the recovery")
	}
	if m.LabRestored == nil || !*m.LabRestored {
		t.Errorf("lab_restored %v", m.LabRestored)
	}
	if _, err := os.Stat(leases[0].JournalPath()); !os.IsNotExist(err) {
		t.Errorf("journal left after a run that restored everything: %v", err)
	}
}

// An undo that spans two devices is two journal entries, one per device:
// with one device failing, the other's is still replayed, and the dead
// one's stays in its journal for later.
func TestRecoverLabPerDevice(t *testing.T) {
	lab, err := simlab.StartDefault(simlab.Options{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	inv := lab.Inventory()
	state := t.TempDir()
	const cc = "net.ipv4.tcp_congestion_control"
	// Journals of a dead run on h2 and on voa1, whose restore then fails.
	voa1, _ := inv.Device("voa1")
	h2, _ := inv.Device("h2")
	leaser := NewLeaser(state, time.Hour, nil)
	for _, d := range []struct {
		name, addr string
		rec        UndoRecord
	}{
		{"h2", h2.Address, UndoRecord{Device: "h2", Kind: UndoHostSetting, Desc: "restore cc on h2", Args: json.RawMessage(`{"kind":"sysctl","key":"` + cc + `","value":"cubic"}`)}},
		{"voa1", voa1.Address, UndoRecord{Device: "voa1", Kind: UndoVOAAttenuation, Desc: "restore voa1 channel 1", Args: json.RawMessage(`{"channel":1,"db":0}`)}},
	} {
		ls, err := leaser.Acquire(inv.Name, "alice", "run-dead", []LeaseTarget{{Device: d.name, Address: d.addr}})
		if err != nil {
			t.Fatal(err)
		}
		j, err := CreateJournal(ls[0].JournalPath(), "run-dead", ls[0].Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		j.Append(d.rec)
		leaser.Release(ls) // the lease is gone, the journal stays
	}
	// Leave h2 changed, as the dead run did.
	od, err := OpenDevice(context.Background(), h2, nil)
	if err != nil {
		t.Fatal(err)
	}
	od.Driver.(*host.Host).Apply(context.Background(), host.Sysctl(cc, "dctcp"))
	od.closer.Close()
	lab.Faults("voa1").FailNext(-222, "Data out of range") // its restore fails

	rec, skipped, err := RecoverLab(context.Background(), inv, state, nil)
	if err == nil || !strings.Contains(err.Error(), "voa1") {
		t.Errorf("recover: %v, want voa1's failure reported", err)
	}
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	var okH2, failVOA bool
	for _, r := range rec {
		okH2 = okH2 || (r.Device == "h2" && r.Err == nil && r.FromRun == "run-dead")
		failVOA = failVOA || (r.Device == "voa1" && r.Err != nil)
	}
	if !okH2 || !failVOA {
		t.Errorf("recovered %+v: want h2 restored and voa1 failed", rec)
	}
	if v, _ := lab.Host("h2").Sysctl(cc); v != "cubic" {
		t.Errorf("h2 %s=%s after recovery, want cubic", cc, v)
	}
	ls, _ := filepath.Glob(filepath.Join(state, "leases", "*.journal"))
	if len(ls) != 1 || !strings.Contains(ls[0], "tcp") {
		t.Errorf("journals left %v, want voa1's only", ls)
	}
}

// A signal that arrives once every step has run, while the lab is being
// restored or the summary written, ends the run aborted, not ok.
func TestSignalDuringFinalisationEndsAborted(t *testing.T) {
	inv := simlab.DefaultInventory()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	r := &stepRecipe{n: 2, hook: func(ctx context.Context, rc *RunContext, i int) error { return nil }}
	p, _ := ResolveParams(nil, "", nil, nil)
	dir := t.TempDir()
	eng := &Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state")}
	eng.Observe = func(e results.Event) {
		if e.Type == "step.end" && e.Fields["index"] == 2 {
			cancel(ErrAborted) // Ctrl-C right after the last step
		}
	}
	res, err := eng.Run(ctx, RunRequest{Recipe: r, Params: p, Lab: inv, Simulated: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != results.StatusAborted || !strings.Contains(res.Reason, "finalisation") || res.StepsDone != 2 {
		t.Errorf("status %s (%s), %d steps done; want aborted during finalisation after 2", res.Status, res.Reason, res.StepsDone)
	}
}

// Every registered undo kind runs against the simulated lab's devices
// over their real transports, from its journaled arguments, and an undo
// whose change was never made (the run died between journaling and
// changing) succeeds as well.
func TestUndoKindsReplayFromData(t *testing.T) {
	lab, err := simlab.StartDefault(simlab.Options{Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	inv := lab.Inventory()
	cases := []struct {
		device string
		rec    UndoRecord
	}{
		{"voa1", UndoRecord{Kind: UndoVOAAttenuation, Args: json.RawMessage(`{"channel":2,"db":1.5}`)}},
		{"voa1", UndoRecord{Kind: UndoVOAShutter, Args: json.RawMessage(`{"channel":3,"open":true}`)}},
		{"tg1", UndoRecord{Kind: UndoTrafficStop}},
		{"ocs1", UndoRecord{Kind: UndoOCSDark}},
		{"h1", UndoRecord{Kind: UndoHostSetting, Args: json.RawMessage(`{"kind":"sysctl","key":"net.ipv4.tcp_congestion_control","value":"cubic"}`)}},
		{"h1", UndoRecord{Kind: UndoFCTServerStop, Args: json.RawMessage(`{"id":"fct-never-started"}`)}},
		{"rh1", UndoRecord{Kind: UndoReactorTeardown}},
		{"sw1", UndoRecord{Kind: UndoTofinoDeletePort, Args: json.RawMessage(`{"port":300}`)}},
		{"sw1", UndoRecord{Kind: UndoTofinoPktgen, Args: json.RawMessage(`{"app_id":1}`)}},
	}
	kinds := map[string]bool{}
	for _, c := range cases {
		kinds[c.rec.Kind] = true
		d, ok := inv.Device(c.device)
		if !ok {
			t.Fatalf("no %s in the simulated lab", c.device)
		}
		od, err := OpenDevice(context.Background(), d, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := runUndo(ctx, od, c.rec); err != nil {
			t.Errorf("%s on %s: %v", c.rec.Kind, c.device, err)
		}
		cancel()
		od.closer.Close()
	}
	if v := lab.World(); v != nil {
		w, _ := v.VOA("voa1")
		if got := w.Channels[1].Target(); got != 1.5 {
			t.Errorf("voa1 channel 2 at %.2f dB after its undo, want 1.50", got)
		}
		if !w.Channels[2].Shutter() {
			t.Errorf("voa1 channel 3's shutter closed after the undo that opens it")
		}
	}
	// On a switch running its program: what a dead run added is taken
	// away, and what it changed is put back, by a fresh driver.
	d1, _ := inv.Device("sw1")
	od1, err := OpenDevice(context.Background(), d1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer od1.closer.Close()
	sw := od1.Driver.(*tofino.Switch)
	ctx := context.Background()
	if err := sw.StartSwitchd(ctx, lg.ProgramSender); err != nil {
		t.Fatal(err)
	}
	if err := sw.AddPort(ctx, 144, 25, "none"); err != nil {
		t.Fatal(err)
	}
	if err := sw.AddEntry(ctx, lg.TableLinkProtect, tofino.Entry{Key: map[string]int64{"egress_port": 144}, Action: lg.ActionProtect,
		Data: map[string]int64{"blocking_mode": 1, "dummy_pkt_max_count": 4}}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // the loss emulation a run filled
		if err := sw.AddEntry(ctx, lg.TableEmulateDrop, tofino.Entry{Key: map[string]int64{lg.KeyRandNum: int64(i)}, Action: lg.ActionDrop}); err != nil {
			t.Fatal(err)
		}
	}
	fresh, err := OpenDevice(ctx, d1, nil) // the replaying run's own driver
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.closer.Close()
	for _, rec := range []UndoRecord{
		{Kind: UndoTofinoEntry, Args: json.RawMessage(`{"table":"` + lg.TableLinkProtect + `","key":{"egress_port":144},"entry":null}`)},
		{Kind: UndoTofinoDeletePort, Args: json.RawMessage(`{"port":144}`)},
		{Kind: UndoTofinoTableClear, Args: json.RawMessage(`{"table":"` + lg.TableEmulateDrop + `"}`)},
	} {
		kinds[rec.Kind] = true
		if err := runUndo(ctx, fresh, rec); err != nil {
			t.Errorf("%s on sw1 running its program: %v", rec.Kind, err)
		}
	}
	if es, err := sw.Entries(ctx, lg.TableLinkProtect); err != nil || len(es) != 0 {
		t.Errorf("entries after the undo: %v %v", es, err)
	}
	if es, err := sw.Entries(ctx, lg.TableEmulateDrop); err != nil || len(es) != 0 {
		t.Errorf("loss-emulation entries after the undo: %v %v", es, err)
	}
	if _, err := sw.PortStatus(ctx, 144); !tofino.IsNotFound(err) {
		t.Errorf("port 144 after its undo: %v, want not found", err)
	}
	// A dead run left port 136 at 100G RS(528,514) with cut-through on; its
	// journal says how it found them: 25G without FEC, store-and-forward.
	if err := sw.AddPort(ctx, 136, 25, "none"); err != nil {
		t.Fatal(err)
	}
	prev, err := sw.SetPortMode(ctx, 136, 100, "rs528")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sw.SetCutThrough(ctx, 136, true); err != nil {
		t.Fatal(err)
	}
	mode, _ := json.Marshal(map[string]any{"port": 136, "mode": prev})
	for _, rec := range []UndoRecord{
		{Kind: UndoTofinoPortMode, Args: mode},
		{Kind: UndoTofinoCutThrough, Args: json.RawMessage(`{"port":136,"enable":false}`)},
	} {
		kinds[rec.Kind] = true
		if err := runUndo(ctx, fresh, rec); err != nil {
			t.Errorf("%s on sw1: %v", rec.Kind, err)
		}
	}
	if st, err := sw.PortStatus(ctx, 136); err != nil || st.SpeedGbps != 25 || st.FEC != "BF_FEC_TYP_NONE" {
		t.Errorf("port 136 after its mode's undo: %+v %v, want 25G without FEC", st, err)
	}
	if on, err := sw.SetCutThrough(ctx, 136, false); err != nil || on {
		t.Errorf("port 136's cut-through after its undo: %v %v, want off", on, err)
	}
	// A dead run gave queue 3 of port 136 the highest priority; its
	// journal holds the one it found (the default).
	found, err := sw.SetQueuePriority(ctx, 136, 3, tofino.MaxQueuePriority)
	if err != nil {
		t.Fatal(err)
	}
	undo, _ := json.Marshal(map[string]any{"port": 136, "qid": 3, "priority": found})
	kinds[UndoTofinoQueuePriority] = true
	if err := runUndo(ctx, fresh, UndoRecord{Kind: UndoTofinoQueuePriority, Args: undo}); err != nil {
		t.Errorf("%s on sw1: %v", UndoTofinoQueuePriority, err)
	}
	if p, err := sw.SetQueuePriority(ctx, 136, 3, found); err != nil || p != found {
		t.Errorf("port 136 queue 3 after its priority's undo: %d %v, want %d", p, err, found)
	}
	if err := runUndo(ctx, fresh, UndoRecord{Kind: UndoTofinoQueuePriority, Args: json.RawMessage(`{"port":136,"qid":3}`)}); err == nil {
		t.Errorf("%s without a priority: no error", UndoTofinoQueuePriority)
	}
	// A dead run replaced the mirror session and the multicast group an
	// engineer had on port 136 with its own, and turned PFC on: its
	// journal puts back what it found.
	engineer := tofino.MirrorSession{ID: 0x108, Direction: "EGRESS", Port: 136, Queue: 5, MaxPktLen: 16384, Enabled: true}
	if err := sw.AddMirror(ctx, engineer); err != nil {
		t.Fatal(err)
	}
	if err := sw.DeleteMirror(ctx, engineer.ID); err != nil {
		t.Fatal(err)
	}
	if err := sw.AddMirror(ctx, tofino.MirrorSession{ID: 0x108, Direction: "EGRESS", Port: lg.RecircPort, Queue: lg.QueueTxBuffer, MaxPktLen: 16384}); err != nil {
		t.Fatal(err)
	}
	if err := sw.AddMulticastNode(ctx, tofino.MulticastNode{ID: 60, RID: 0, DevPorts: []int{136}}); err != nil {
		t.Fatal(err)
	}
	if err := sw.AddMulticastGroup(ctx, 2, []int{60}); err != nil {
		t.Fatal(err)
	}
	if _, err := sw.SetPFC(ctx, 136, tofino.PFC{RxMap: lg.PFCClassEnable}); err != nil {
		t.Fatal(err)
	}
	if _, err := sw.SetQueuePFCCos(ctx, 136, 7, 7); err != nil {
		t.Fatal(err)
	}
	mirror, _ := json.Marshal(map[string]any{"sid": engineer.ID, "session": engineer})
	group, _ := json.Marshal(map[string]any{"mgid": 2, "node_ids": []int{60},
		"found": map[string]any{"nodes": []tofino.MulticastNode{{ID: 70, RID: 1, DevPorts: []int{136, 137}}}}})
	for _, rec := range []UndoRecord{
		{Kind: UndoTofinoMirror, Args: mirror},
		{Kind: UndoTofinoMulticastGroup, Args: group},
		{Kind: UndoTofinoPFC, Args: json.RawMessage(`{"port":136,"rx_map":0,"tx_map":0}`)},
		{Kind: UndoTofinoQueuePFCCos, Args: json.RawMessage(`{"port":136,"qid":7,"cos":0}`)},
	} {
		kinds[rec.Kind] = true
		if err := runUndo(ctx, fresh, rec); err != nil {
			t.Errorf("%s on sw1: %v", rec.Kind, err)
		}
	}
	if m, err := sw.Mirror(ctx, engineer.ID); err != nil || m != engineer {
		t.Errorf("mirror session %#x after its undo: %+v %v, want %+v", engineer.ID, m, err, engineer)
	}
	if ids, err := sw.MulticastGroup(ctx, 2); err != nil || len(ids) != 1 || ids[0] != 70 {
		t.Errorf("multicast group 2 after its undo: %v %v, want the node found (70)", ids, err)
	}
	if _, err := sw.MulticastNodeOf(ctx, 60); !tofino.IsNotFound(err) {
		t.Errorf("the run's multicast node 60 after the undo: %v, want not found", err)
	}
	if p, err := sw.PFCOf(ctx, 136); err != nil || p != (tofino.PFC{}) {
		t.Errorf("port 136 PFC after its undo: %+v %v, want off", p, err)
	}
	if c, err := sw.QueuePFCCos(ctx, 136, 7); err != nil || c != 0 {
		t.Errorf("port 136 queue 7's PFC class after its undo: %d %v, want 0", c, err)
	}
	// A link the monitor took down comes back at the speed it had.
	kinds[UndoTofinoAddPort] = true
	if err := runUndo(ctx, fresh, UndoRecord{Kind: UndoTofinoAddPort, Args: json.RawMessage(`{"port":144,"gbps":25,"fec":"none"}`)}); err != nil {
		t.Errorf("%s on sw1: %v", UndoTofinoAddPort, err)
	}
	if ps, err := sw.PortStatus(ctx, 144); err != nil || ps.SpeedGbps != 25 {
		t.Errorf("port 144 after add-port: %+v %v", ps, err)
	}
	// A run that switched the program puts back the one it found: the
	// switch daemon restarts with it (its ports and tables start empty,
	// and the undos journalled before the switch then meet it).
	kinds[UndoTofinoProgram] = true
	if err := sw.StartSwitchd(ctx, lg.ProgramReceiver); err != nil {
		t.Fatal(err)
	}
	if err := runUndo(ctx, fresh, UndoRecord{Kind: UndoTofinoProgram, Args: json.RawMessage(`{"program":"` + lg.ProgramSender + `"}`)}); err != nil {
		t.Errorf("%s on sw1: %v", UndoTofinoProgram, err)
	}
	if p, err := sw.Program(ctx); err != nil || p != lg.ProgramSender {
		t.Errorf("program after its undo: %q %v, want %s", p, err, lg.ProgramSender)
	}
	if err := runUndo(ctx, fresh, UndoRecord{Kind: UndoTofinoProgram, Args: json.RawMessage(`{"program":""}`)}); err == nil {
		t.Errorf("%s without a program: no error", UndoTofinoProgram)
	}
	// The register kind writes back the value found; the receiver holds
	// the thresholds (see lgbench), exercised by the recipes and the soak.
	kinds[UndoTofinoRegister] = true
	for _, k := range UndoKinds() {
		if !kinds[k] {
			t.Errorf("undo kind %s is not exercised", k)
		}
	}
	// A kind this build does not know is an error naming it.
	d, _ := inv.Device("voa1")
	od, err := OpenDevice(context.Background(), d, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer od.closer.Close()
	if err := runUndo(context.Background(), od, UndoRecord{Kind: "voa.melt"}); err == nil || !strings.Contains(err.Error(), "voa.melt") {
		t.Errorf("unknown kind: %v", err)
	}
}

// A run killed after opening a device's journal and before its first undo
// leaves a journal of its "begin" line alone: nothing to undo, and it must
// not stop the runs after it from creating theirs.
func TestBeginOnlyJournalDoesNotBlockLaterRuns(t *testing.T) {
	lab, err := simlab.StartDefault(simlab.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	inv := lab.Inventory()
	state := t.TempDir()
	h1dev, _ := inv.Device("h1")
	leases, err := NewLeaser(state, time.Hour, nil).Acquire(inv.Name, "alice", "run-killed", []LeaseTarget{{Device: "h1", Address: h1dev.Address}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CreateJournal(leases[0].JournalPath(), "run-killed", leases[0].Key, nil); err != nil {
		t.Fatal(err)
	}
	_, err = CreateJournal(leases[0].JournalPath(), "run-other", leases[0].Key, nil)
	if err == nil || !strings.Contains(err.Error(), "lab recover") {
		t.Errorf("a second journal over the first: %v, want an error naming testbed lab recover", err)
	}
	dead := *leases[0]
	dead.PID = 1 << 30
	b, _ := json.Marshal(dead)
	os.WriteFile(leases[0].path, b, 0o644)

	for i := 0; i < 2; i++ {
		r := &devRecipe{devices: []string{"h1"}, hook: func(context.Context, *RunContext) error { return nil }}
		p, _ := ResolveParams(nil, "", nil, nil)
		eng := &Engine{RunsDir: filepath.Join(state, "runs"), StateDir: state}
		res, err := eng.Run(context.Background(), RunRequest{Recipe: r, Params: p, Lab: inv, Simulated: true})
		if err != nil || res.Status != results.StatusOK {
			t.Fatalf("run %d after the killed one: %v %+v", i+1, err, res)
		}
	}
	if _, err := os.Stat(leases[0].JournalPath()); !os.IsNotExist(err) {
		t.Errorf("journal left: %v", err)
	}
}
