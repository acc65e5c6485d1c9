package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"testbed/dut/host"
	"testbed/internal/etcdtest"
	"testbed/results"
	"testbed/simlab"
)

// startEtcd runs etcd on loopback for one test, or skips saying why.
func startEtcd(t *testing.T) string { return etcdtest.Start(t) }

func newEtcdStore(t *testing.T, endpoint, prefix string, ttl time.Duration) *EtcdLeases {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var e *EtcdLeases
	var err error
	for ctx.Err() == nil { // etcd takes a moment to serve
		if e, err = NewEtcdLeases(ctx, EtcdConfig{Endpoints: []string{endpoint}, Prefix: prefix, DialTimeout: time.Second}, ttl, nil); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("etcd at %s: %v", endpoint, err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// backends gives, per backend, a constructor of stores that share one
// lease space (one state directory; one etcd prefix).
func backends(t *testing.T) map[string]func() LeaseStore {
	dir := t.TempDir()
	out := map[string]func() LeaseStore{
		"file": func() LeaseStore {
			return &FileLeases{L: NewLeaser(dir, time.Hour, nil), Poll: 20 * time.Millisecond}
		},
	}
	if _, err := exec.LookPath("etcd"); err == nil {
		ep := startEtcd(t)
		prefix := "/t-" + fmt.Sprint(time.Now().UnixNano())
		out["etcd"] = func() LeaseStore { return newEtcdStore(t, ep, prefix, 2*time.Second) }
	} else {
		t.Log("etcd not installed: only the file backend is tested")
	}
	return out
}

func TestLeaseStoresRefuseAndSayWhoThenHandOver(t *testing.T) {
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			a, b := mk(), mk()
			h, err := a.Acquire(ctx, LeaseRequest{Lab: "lab", Owner: "alice", RunID: "run-1", Devices: targets("voa1", "tcp://x:5025", "tg1", "http://y")})
			if err != nil {
				t.Fatal(err)
			}
			// Another spelling of the same address, beside a free device.
			_, err = b.Acquire(ctx, LeaseRequest{Lab: "lab2", Owner: "bob", RunID: "run-2", Devices: targets("tg0", "http://z", "att", "TCP://X:5025")})
			var held *LeaseHeldError
			if !errors.As(err, &held) || held.Held.Owner != "alice" || held.Held.RunID != "run-1" {
				t.Fatalf("second acquire: %v, want held by alice run-1", err)
			}
			st, err := a.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, s := range st {
				if s.Holder != nil {
					keys = append(keys, s.Key+"="+s.Holder.RunID)
				}
			}
			if got, want := strings.Join(keys, " "), "http://y:80=run-1 tcp://x:5025=run-1"; got != want {
				t.Errorf("held leases %q, want %q (all or nothing: bob's tg0 must not be held)", got, want)
			}
			// A waiter gets the device once it is released.
			got := make(chan error, 1)
			go func() {
				h2, err := b.Acquire(ctx, LeaseRequest{Lab: "lab2", Owner: "bob", RunID: "run-2", Devices: targets("att", "tcp://x:5025"), Wait: true})
				if err == nil {
					err = h2.Release(ctx)
				}
				got <- err
			}()
			select {
			case err := <-got:
				t.Fatalf("waiter returned while the device was held: %v", err)
			case <-time.After(300 * time.Millisecond):
			}
			if err := h.Release(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-got:
				if err != nil {
					t.Fatal(err)
				}
			case <-ctx.Done():
				t.Fatal("waiter never got the released device")
			}
			// A waiter gives up when its context ends.
			h, err = a.Acquire(ctx, LeaseRequest{Owner: "alice", RunID: "run-3", Devices: targets("voa1", "tcp://x:5025")})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Release(ctx)
			wctx, wcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer wcancel()
			if _, err := b.Acquire(wctx, LeaseRequest{Owner: "bob", RunID: "run-4", Devices: targets("voa1", "tcp://x:5025"), Wait: true}); err == nil {
				t.Fatal("waiter got a held device")
			}
		})
	}
}

// contend runs n contenders for devs devices (contender i wants device
// i%devs), each holding its device briefly, and fails on any overlap. With
// ordered, each contender is queued only after the one before it is seen
// waiting, the devices being held meanwhile, and each device must be
// served in that order of arrival.
func contend(t *testing.T, mk func() LeaseStore, n, devs int, ordered bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dev := func(i int) []LeaseTarget {
		return targets(fmt.Sprintf("d%d", i%devs), fmt.Sprintf("tcp://10.0.0.%d:5025", i%devs))
	}
	var all []LeaseTarget
	for d := 0; d < devs; d++ {
		all = append(all, dev(d)...)
	}
	store := mk()
	var gate HeldLeases
	if ordered {
		var err error
		if gate, err = store.Acquire(ctx, LeaseRequest{Owner: "gate", RunID: "gate", Devices: all}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	inUse := map[int]int{}
	order := map[int][]int{}
	var errs []error
	var wg sync.WaitGroup
	waiting := func() int {
		st, err := store.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w := 0
		for _, s := range st {
			w += len(s.Waiters)
		}
		return w
	}
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := mk().Acquire(ctx, LeaseRequest{Owner: fmt.Sprint("c", i), RunID: fmt.Sprint("run-", i), Devices: dev(i), Wait: true})
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			mu.Lock()
			d := i % devs
			inUse[d]++
			if inUse[d] > 1 {
				errs = append(errs, fmt.Errorf("device d%d held by two contenders at once", d))
			}
			order[d] = append(order[d], i)
			mu.Unlock()
			time.Sleep(15 * time.Millisecond)
			mu.Lock()
			inUse[d]--
			mu.Unlock()
			if err := h.Release(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
		if ordered {
			for waiting() < i+1 {
				if ctx.Err() != nil {
					t.Fatalf("contender %d never queued", i)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	if gate != nil {
		if err := gate.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	served := 0
	for d := 0; d < devs; d++ {
		served += len(order[d])
		if !ordered {
			continue
		}
		for k := 1; k < len(order[d]); k++ {
			if order[d][k] < order[d][k-1] {
				t.Errorf("device d%d served %v: not in order of arrival", d, order[d])
				break
			}
		}
	}
	if served != n {
		t.Errorf("%d of %d contenders served", served, n)
	}
	t.Logf("served per device: %v", order)
}

func TestLeaseStoresNeverOverlap(t *testing.T) {
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) { contend(t, mk, 8, 3, false) })
	}
}

// Twenty contenders for three devices on etcd: never two on one device,
// and each device handed out in order of arrival.
func TestEtcdLeasesTwentyContendersFirstComeFirstServed(t *testing.T) {
	ep := startEtcd(t)
	contend(t, func() LeaseStore { return newEtcdStore(t, ep, "/fcfs", 2*time.Second) }, 20, 3, true)
}

// The holder process of TestEtcdLeaseOfAKilledHolder: takes the device,
// journals an undo, says so, and waits to be killed.
func TestEtcdLeaseHolderProcess(t *testing.T) {
	ep := os.Getenv("TESTBED_TEST_ETCD_HOLDER")
	if ep == "" {
		t.Skip("run by TestEtcdLeaseOfAKilledHolder as its holder process")
	}
	ctx := context.Background()
	e := newEtcdStore(t, ep, "/kill", 2*time.Second)
	h, err := e.Acquire(ctx, LeaseRequest{Owner: "victim", RunID: "20260101T000000.000Z-dead", Devices: targets("voa1", "tcp://10.9.9.9:5025")})
	if err != nil {
		t.Fatal(err)
	}
	j, err := h.(*etcdHeld).Journal("tcp://10.9.9.9:5025", "20260101T000000.000Z-dead")
	if err != nil {
		t.Fatal(err)
	}
	for _, db := range []float64{0, 3} {
		if _, err := j.Append(UndoRecord{Device: "voa1", Kind: UndoVOAAttenuation, Desc: fmt.Sprintf("restore voa1 channel 1 to %.2f dB", db),
			Args: []byte(fmt.Sprintf(`{"channel":1,"db":%g}`, db))}); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Println("held")
	time.Sleep(time.Minute)
}

// A holder killed outright loses its devices when its session's TTL runs
// out; the waiter gets them within the TTL and finds the dead run's undo
// journal to replay.
func TestEtcdLeaseOfAKilledHolder(t *testing.T) {
	ep := startEtcd(t)
	const ttl = 2 * time.Second
	e := newEtcdStore(t, ep, "/kill", ttl)
	cmd := exec.Command(os.Args[0], "-test.run=^TestEtcdLeaseHolderProcess$", "-test.v")
	cmd.Env = append(os.Environ(), "TESTBED_TEST_ETCD_HOLDER="+ep)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "held" {
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := e.Acquire(ctx, LeaseRequest{Owner: "next", RunID: "run-next", Devices: targets("att", "tcp://10.9.9.9:5025")}); !errors.As(err, new(*LeaseHeldError)) {
		t.Fatalf("device not held by the holder process: %v", err)
	}
	type res struct {
		h   HeldLeases
		err error
	}
	got := make(chan res, 1)
	go func() {
		h, err := e.Acquire(ctx, LeaseRequest{Owner: "next", RunID: "run-next", Devices: targets("att", "tcp://10.9.9.9:5025"), Wait: true})
		got <- res{h, err}
	}()
	time.Sleep(200 * time.Millisecond)
	killed := time.Now()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.h.Release(context.Background())
	took := time.Since(killed)
	t.Logf("waiter got the device %v after the holder was killed (TTL %v)", took.Round(time.Millisecond), ttl)
	if took > ttl+time.Second {
		t.Errorf("waiter got the device %v after the kill, want within the TTL %v (+1s)", took, ttl)
	}
	h := r.h.(*etcdHeld)
	ls := h.Leases()[0]
	pending, err := h.PendingJournal(ctx, ls)
	if err != nil {
		t.Fatal(err)
	}
	var descs []string
	for i := len(pending) - 1; i >= 0; i-- { // replayed newest first
		descs = append(descs, pending[i].RunID+": "+pending[i].Desc)
		if err := h.MarkReplayed(ctx, ls, pending[i]); err != nil {
			t.Fatal(err)
		}
	}
	want := "20260101T000000.000Z-dead: restore voa1 channel 1 to 3.00 dB|20260101T000000.000Z-dead: restore voa1 channel 1 to 0.00 dB"
	if got := strings.Join(descs, "|"); got != want {
		t.Errorf("replayed %q, want %q", got, want)
	}
	if left, _ := h.PendingJournal(ctx, ls); len(left) != 0 {
		t.Errorf("journal keeps %d undos after the replay", len(left))
	}
}

// A holder whose session ends (a partition longer than the TTL) is told by
// Lost, and its journal writes are refused once another run holds the
// device: fencing.
func TestEtcdLeaseLostHolderCannotWrite(t *testing.T) {
	ep := startEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, b := newEtcdStore(t, ep, "/fence", 2*time.Second), newEtcdStore(t, ep, "/fence", 2*time.Second)
	h, err := a.Acquire(ctx, LeaseRequest{Owner: "a", RunID: "run-a", Devices: targets("voa1", "tcp://10.1.1.1:5025")})
	if err != nil {
		t.Fatal(err)
	}
	eh := h.(*etcdHeld)
	j, err := eh.Journal("tcp://10.1.1.1:5025", "run-a")
	if err != nil {
		t.Fatal(err)
	}
	// Cut the holder off as a partition would: its etcd lease is gone.
	if _, err := a.cli.Revoke(ctx, eh.sess.Lease()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Lost():
	case <-ctx.Done():
		t.Fatal("Lost never closed after the session ended")
	}
	h2, err := b.Acquire(ctx, LeaseRequest{Owner: "b", RunID: "run-b", Devices: targets("voa1", "tcp://10.1.1.1:5025"), Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Release(ctx)
	if _, err := j.Append(UndoRecord{Device: "voa1", Kind: UndoVOAAttenuation, Desc: "late write"}); err == nil || !strings.Contains(err.Error(), "lease is lost") {
		t.Fatalf("a cut-off holder's journal write: %v, want refused", err)
	}
	if p, _ := h2.PendingJournal(ctx, h2.Leases()[0]); len(p) != 0 {
		t.Errorf("the cut-off holder wrote %d journal records", len(p))
	}
}

func TestParseLeasesURL(t *testing.T) {
	c, err := ParseLeasesURL("etcd://e1:2379,e2,10.0.0.3:2379/lab-a?cert=/etc/tb/c.pem&key=/etc/tb/k.pem&ca=/etc/tb/ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Endpoints, " "); got != "https://e1:2379 https://e2:2379 https://10.0.0.3:2379" || !c.TLS || c.Prefix != "/lab-a" || c.CertFile != "/etc/tb/c.pem" || c.CAFile != "/etc/tb/ca.pem" {
		t.Errorf("parsed %+v", c)
	}
	if c, _ := ParseLeasesURL("etcds://e1"); c.Endpoints[0] != "https://e1:2379" || !c.TLS || c.Prefix != "/testbed" {
		t.Errorf("parsed %+v", c)
	}
	for _, bad := range []string{"http://e1:2379/x", "etcd:///x"} {
		if _, err := ParseLeasesURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A run on etcd leases waits for a device a dead run still holds (saying
// who holds it and its place in the queue), gets it when the dead run's
// session ends, and replays the dead run's journal, kept in etcd, before
// it starts: it finds, and leaves, the original value.
func TestEngineOnEtcdWaitsThenReplaysADeadRunsJournal(t *testing.T) {
	ep := startEtcd(t)
	lab, err := simlab.StartDefault(simlab.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	inv := lab.Inventory()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const cc = "net.ipv4.tcp_congestion_control"
	h1 := lab.Host("h1")
	h1dev, _ := inv.Device("h1")

	dead := newEtcdStore(t, ep, "/engine", 2*time.Second)
	dh, err := dead.Acquire(ctx, LeaseRequest{Lab: inv.Name, Owner: "alice", RunID: "run-dead", Devices: []LeaseTarget{{Device: "h1", Address: h1dev.Address}}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := dh.OpenJournal(ctx, dh.Leases()[0], "run-dead")
	if err != nil {
		t.Fatal(err)
	}
	od, err := OpenDevice(ctx, h1dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	hd := od.Driver.(*host.Host)
	before, err := hd.Current(ctx, host.Sysctl(cc, "dctcp"))
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"kind": host.SettingSysctl, "key": cc, "value": before})
	if _, err := j.Append(UndoRecord{Device: "h1", Kind: UndoHostSetting, Desc: "restore " + cc, Args: args}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := hd.Apply(ctx, host.Sysctl(cc, "dctcp")); err != nil {
		t.Fatal(err)
	}
	od.closer.Close()
	// The dead run's process goes once the next run waits for its lease:
	// its session ends then (a fixed delay here raced the engine's start on
	// a loaded machine, and the next run found the lease already gone).
	var revoke sync.Once
	goes := func() {
		revoke.Do(func() {
			go func() { _, _ = dead.cli.Revoke(context.Background(), dh.(*etcdHeld).sess.Lease()) }()
		})
	}

	var found, waitedFor string
	place := 0
	r := &devRecipe{devices: []string{"h1"}, hook: func(ctx context.Context, rc *RunContext) error {
		ch, err := rc.ApplyHostSetting(ctx, "h1", host.Sysctl(cc, "dctcp"))
		found = ch.Before
		return err
	}}
	p, _ := ResolveParams(nil, "", nil, nil)
	state := t.TempDir()
	eng := &Engine{RunsDir: filepath.Join(state, "runs"), StateDir: state, Leases: newEtcdStore(t, ep, "/engine", 2*time.Second)}
	res, err := eng.Run(ctx, RunRequest{Recipe: r, Params: p, Lab: inv, Simulated: true, WaitLeases: true,
		OnLeaseWait: func(h Lease, n int) { waitedFor, place = h.RunID, n; goes() }})
	if err != nil || res.Status != results.StatusOK {
		t.Fatalf("run: %v %+v", err, res)
	}
	if waitedFor != "run-dead" || place != 1 {
		t.Errorf("waited for %q at place %d, want run-dead at 1", waitedFor, place)
	}
	if found != "cubic" {
		t.Errorf("the next run found %s=%s, want the original cubic (the dead run's journal was not replayed first)", cc, found)
	}
	if v, _ := h1.Sysctl(cc); v != "cubic" {
		t.Errorf("after the next run %s=%s, want cubic", cc, v)
	}
	var m results.Manifest
	mb, _ := os.ReadFile(filepath.Join(res.Dir, "manifest.json"))
	json.Unmarshal(mb, &m)
	if len(m.Recovered) != 1 || !m.Recovered[0].OK || m.Recovered[0].FromRun != "run-dead" {
		t.Errorf("manifest recovered %+v, want h1's undo from run-dead", m.Recovered)
	}
	st, err := eng.Leases.List(ctx)
	if err != nil || len(st) != 0 {
		t.Errorf("leases left after the run: %+v %v", st, err)
	}
}

// Fencing: a run whose etcd session ends in the middle (cut off past its
// TTL) stops: its step's context ends, its cleanup does not touch the
// device, and the undo stays in the journal, which the next run replays.
func TestEngineOnEtcdStopsTouchingDevicesWhenItsLeaseIsLost(t *testing.T) {
	ep := startEtcd(t)
	lab, err := simlab.StartDefault(simlab.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	inv := lab.Inventory()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const cc = "net.ipv4.tcp_congestion_control"
	h1 := lab.Host("h1")
	store := newEtcdStore(t, ep, "/fenced", 2*time.Second)
	var stepErr error
	r := &devRecipe{devices: []string{"h1"}, hook: func(sctx context.Context, rc *RunContext) error {
		if _, err := rc.ApplyHostSetting(sctx, "h1", host.Sysctl(cc, "dctcp")); err != nil {
			return err
		}
		ls, err := store.cli.Leases(sctx)
		if err != nil {
			return err
		}
		for _, l := range ls.Leases { // the partition: every session gone
			_, _ = store.cli.Revoke(sctx, l.ID)
		}
		select {
		case <-sctx.Done():
			stepErr = context.Cause(sctx)
			return stepErr
		case <-time.After(10 * time.Second):
			return errors.New("the step went on after its lease was lost")
		}
	}}
	p, _ := ResolveParams(nil, "", nil, nil)
	state := t.TempDir()
	eng := &Engine{RunsDir: filepath.Join(state, "runs"), StateDir: state, Leases: store}
	res, err := eng.Run(ctx, RunRequest{Recipe: r, Params: p, Lab: inv, Simulated: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != results.StatusAborted || stepErr == nil || !strings.Contains(stepErr.Error(), "leases lost") {
		t.Fatalf("run %s (%s), step ended by %v: want aborted by the lost lease", res.Status, res.Reason, stepErr)
	}
	if v, _ := h1.Sysctl(cc); v != "dctcp" {
		t.Errorf("a run that lost its lease still restored h1 (%s=%s): it touched a device that was no longer its", cc, v)
	}
	// The next run replays the journal the fenced run left in etcd.
	next := &devRecipe{devices: []string{"h1"}, hook: func(context.Context, *RunContext) error { return nil }}
	res, err = eng.Run(ctx, RunRequest{Recipe: next, Params: p, Lab: inv, Simulated: true})
	if err != nil || res.Status != results.StatusOK {
		t.Fatalf("next run: %v %+v", err, res)
	}
	if v, _ := h1.Sysctl(cc); v != "cubic" {
		t.Errorf("after the next run %s=%s, want cubic (the journal was not replayed)", cc, v)
	}
}

// An operator's forced release frees the device for the next run, says
// whose lease it took, and (on etcd) tells the holder it lost it.
func TestLeaseStoresForceRelease(t *testing.T) {
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			a, b := mk(), mk()
			h, err := a.Acquire(ctx, LeaseRequest{Owner: "alice", RunID: "run-1", Devices: targets("voa1", "tcp://x:5025")})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Release(ctx)
			was, err := b.ForceRelease(ctx, "tcp://x:5025", "ops")
			if err != nil || was == nil || was.RunID != "run-1" {
				t.Fatalf("force release: %+v %v, want run-1's lease", was, err)
			}
			h2, err := b.Acquire(ctx, LeaseRequest{Owner: "bob", RunID: "run-2", Devices: targets("voa1", "tcp://x:5025")})
			if err != nil {
				t.Fatalf("after a forced release: %v", err)
			}
			defer h2.Release(ctx)
			if name == "etcd" {
				select {
				case <-h.Lost():
				case <-ctx.Done():
					t.Error("the holder was not told it lost the device")
				}
			}
			if was, err := b.ForceRelease(ctx, "tcp://nothing:1", "ops"); was != nil || err != nil {
				t.Errorf("force release of a free device: %+v %v", was, err)
			}
		})
	}
}

// lab recover on etcd: the journal a dead run left in etcd is replayed
// once its session is gone.
func TestRecoverLabOnEtcd(t *testing.T) {
	ep := startEtcd(t)
	lab, err := simlab.StartDefault(simlab.Options{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	inv := lab.Inventory()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const cc = "net.ipv4.tcp_congestion_control"
	h1dev, _ := inv.Device("h1")
	store := newEtcdStore(t, ep, "/recover", 2*time.Second)
	dh, err := store.Acquire(ctx, LeaseRequest{Owner: "alice", RunID: "run-dead", Devices: []LeaseTarget{{Device: "h1", Address: h1dev.Address}}})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := dh.OpenJournal(ctx, dh.Leases()[0], "run-dead")
	args, _ := json.Marshal(map[string]string{"kind": host.SettingSysctl, "key": cc, "value": "cubic"})
	if _, err := j.Append(UndoRecord{Device: "h1", Kind: UndoHostSetting, Desc: "restore " + cc, Args: args}); err != nil {
		t.Fatal(err)
	}
	od, err := OpenDevice(ctx, h1dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := od.Driver.(*host.Host).Apply(ctx, host.Sysctl(cc, "dctcp")); err != nil {
		t.Fatal(err)
	}
	od.closer.Close()
	// While the run lives, recover leaves its device alone.
	if _, skipped, _ := RecoverLabIn(ctx, inv, store, nil); !strings.Contains(strings.Join(skipped, " "), "h1") {
		t.Errorf("recover did not skip h1, held by a live run: %v", skipped)
	}
	if v, _ := lab.Host("h1").Sysctl(cc); v != "dctcp" {
		t.Fatalf("recover touched a device a live run holds: %s=%s", cc, v)
	}
	if _, err := store.cli.Revoke(ctx, dh.(*etcdHeld).sess.Lease()); err != nil {
		t.Fatal(err)
	}
	rec, skipped, err := RecoverLabIn(ctx, inv, store, nil)
	if err != nil || len(skipped) != 0 {
		t.Fatalf("recover: %v, skipped %v", err, skipped)
	}
	if len(rec) != 1 || rec[0].FromRun != "run-dead" || rec[0].Err != nil {
		t.Errorf("recovered %+v, want h1's undo from run-dead", rec)
	}
	if v, _ := lab.Host("h1").Sysctl(cc); v != "cubic" {
		t.Errorf("after recover %s=%s, want cubic", cc, v)
	}
}
