package orchestrator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// EtcdLeases keeps device leases in etcd, for labs shared by many hosts
// and CI runners. A run's claim is an etcd session (a lease kept alive
// while the process lives, forgotten TTL after it dies); each device is a
// concurrency.Mutex on its key, whose waiters are served in order of
// arrival. Under the prefix:
//
//	<prefix>/locks/<key>/<lease id>    the mutex (etcd's own queue)
//	<prefix>/holders/<key>             the holder's Lease, on its session
//	<prefix>/waiters/<key>/<lease id>  who waits, on the waiter's session
//	<prefix>/journal/<key>/<run>/<seq> undo journal records, not on a session
//
// Every write a holder makes for a device (its holder record, its undo
// journal) is a transaction conditioned on still owning the device's mutex
// (IsOwner), so a holder whose session expired cannot write over the next
// holder's state; and its HeldLeases.Lost channel closes when the session
// ends, which the run takes as its order to stop touching the devices.
type EtcdLeases struct {
	cli    *clientv3.Client
	prefix string
	ttl    time.Duration
	log    *slog.Logger
	// Timeout bounds each single request to etcd.
	Timeout time.Duration
}

// EtcdConfig says how to reach etcd.
type EtcdConfig struct {
	Endpoints []string
	Prefix    string
	// TLS client certificate, key and CA, by file reference.
	CertFile, KeyFile, CAFile string
	// TLS is set by etcds:// (TLS with the system's roots unless CAFile).
	TLS         bool
	DialTimeout time.Duration
}

// ParseLeasesURL reads --leases etcd://host:2379[,host2:2379]/prefix. A
// scheme etcds:// (or https in the endpoints) means TLS.
func ParseLeasesURL(s string) (EtcdConfig, error) {
	u, err := url.Parse(s)
	if err != nil {
		return EtcdConfig{}, &InputError{Msg: fmt.Sprintf("--leases %q: %v", s, err)}
	}
	scheme := "http"
	var cfg EtcdConfig
	switch u.Scheme {
	case "etcd":
	case "etcds":
		scheme = "https"
		cfg.TLS = true
	default:
		return EtcdConfig{}, &InputError{Msg: fmt.Sprintf("--leases %q: want etcd://host:2379[,host2:2379]/prefix", s)}
	}
	for _, h := range strings.Split(u.Host, ",") {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		if !strings.Contains(h, ":") {
			h += ":2379"
		}
		cfg.Endpoints = append(cfg.Endpoints, scheme+"://"+h)
	}
	if len(cfg.Endpoints) == 0 {
		return EtcdConfig{}, &InputError{Msg: fmt.Sprintf("--leases %q: no etcd endpoint", s)}
	}
	cfg.Prefix = "/" + strings.Trim(u.Path, "/")
	if cfg.Prefix == "/" {
		cfg.Prefix = "/testbed"
	}
	q := u.Query()
	cfg.CertFile, cfg.KeyFile, cfg.CAFile = q.Get("cert"), q.Get("key"), q.Get("ca")
	if cfg.CertFile != "" || cfg.CAFile != "" {
		cfg.TLS = true
		for i, e := range cfg.Endpoints {
			cfg.Endpoints[i] = "https://" + strings.TrimPrefix(e, "http://")
		}
	}
	return cfg, nil
}

// NewEtcdLeases connects to etcd. ttl is how long after a holder dies (or
// is cut off) its devices are given to the next in the queue; it is
// rounded up to whole seconds.
func NewEtcdLeases(ctx context.Context, cfg EtcdConfig, ttl time.Duration, log *slog.Logger) (*EtcdLeases, error) {
	if ttl <= 0 {
		ttl = 30 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dial := cfg.DialTimeout
	if dial <= 0 {
		dial = 5 * time.Second
	}
	// The client's own zap logging is silenced: its failures come back
	// as errors, wrapped and logged by the caller.
	cc := clientv3.Config{Endpoints: cfg.Endpoints, DialTimeout: dial, Context: ctx, Logger: zap.NewNop()}
	if cfg.TLS || cfg.CertFile != "" || cfg.CAFile != "" {
		tc, err := etcdTLS(cfg)
		if err != nil {
			return nil, err
		}
		cc.TLS = tc
		cc.Endpoints = nil
		for _, ep := range cfg.Endpoints {
			cc.Endpoints = append(cc.Endpoints, "https://"+strings.TrimPrefix(ep, "http://"))
		}
	}
	cli, err := clientv3.New(cc)
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	e := &EtcdLeases{cli: cli, prefix: strings.TrimSuffix(cfg.Prefix, "/"), ttl: ttl, log: log, Timeout: 5 * time.Second}
	sctx, cancel := context.WithTimeout(ctx, dial)
	defer cancel()
	if _, err := cli.Get(sctx, e.prefix+"/", clientv3.WithCountOnly()); err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcd %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	return e, nil
}

func etcdTLS(cfg EtcdConfig) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CertFile != "" {
		c, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("etcd client certificate %s: %w", cfg.CertFile, err)
		}
		tc.Certificates = []tls.Certificate{c}
	}
	if cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("etcd CA %s: %w", cfg.CAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("etcd CA %s: no certificate in it", cfg.CAFile)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// Close implements LeaseStore.
func (e *EtcdLeases) Close() error { return e.cli.Close() }

func keyPart(key string) string { return url.PathEscape(key) }

func (e *EtcdLeases) lockKey(k string) string   { return e.prefix + "/locks/" + keyPart(k) }
func (e *EtcdLeases) holderKey(k string) string { return e.prefix + "/holders/" + keyPart(k) }
func (e *EtcdLeases) waiterDir(k string) string { return e.prefix + "/waiters/" + keyPart(k) + "/" }
func (e *EtcdLeases) journalDir(k string) string {
	return e.prefix + "/journal/" + keyPart(k) + "/"
}

// leaseKeys is the sorted list of keys a run's devices need (address and,
// where given, serial), refusing one device named twice. Taking keys in
// sorted order keeps two runs that need overlapping devices from each
// holding what the other waits for.
func leaseKeys(devices []LeaseTarget) ([]string, map[string]LeaseTarget, error) {
	seen := map[string]string{}
	byKey := map[string]LeaseTarget{}
	var keys []string
	for _, t := range devices {
		ks := []string{NormalizeAddress(t.Address)}
		if t.Serial != "" {
			ks = append(ks, DeviceKey("", t.Serial))
		}
		for _, k := range ks {
			if other, dup := seen[k]; dup {
				if other == t.Device {
					continue
				}
				return nil, nil, &InputError{Msg: fmt.Sprintf("devices %s and %s are one physical device (%s): the inventory names it twice", other, t.Device, k)}
			}
			seen[k] = t.Device
			byKey[k] = t
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys, byKey, nil
}

type etcdHeld struct {
	mu      sync.Mutex // journal writes
	e       *EtcdLeases
	sess    *concurrency.Session
	cancel  context.CancelFunc
	mutexes map[string]*concurrency.Mutex
	leases  []*Lease
}

// Acquire implements LeaseStore. With req.Wait it queues on each device in
// order of arrival; while it waits, its waiter record (who, which run)
// lets `lab leases` list it.
func (e *EtcdLeases) Acquire(ctx context.Context, req LeaseRequest) (HeldLeases, error) {
	keys, byKey, err := leaseKeys(req.Devices)
	if err != nil {
		return nil, err
	}
	// The session outlives this call (it is the run's claim) but not the
	// HeldLeases: its keep-alive runs until Release.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	secs := int((e.ttl + time.Second - 1) / time.Second)
	sess, err := concurrency.NewSession(e.cli, concurrency.WithTTL(secs), concurrency.WithContext(sctx))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("etcd session: %w", err)
	}
	h := &etcdHeld{e: e, sess: sess, cancel: cancel, mutexes: map[string]*concurrency.Mutex{}}
	host, _ := os.Hostname()
	fail := func(err error) (HeldLeases, error) {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), e.Timeout)
		defer rcancel()
		_ = h.Release(rctx)
		return nil, err
	}
	for _, k := range keys {
		t := byKey[k]
		now := time.Now()
		ls := &Lease{Key: k, Device: t.Device, Address: t.Address, Lab: req.Lab, Owner: req.Owner, Host: host, PID: os.Getpid(),
			RunID: req.RunID, Start: now, Renewed: now, TTL: Duration(time.Duration(secs) * time.Second)}
		body, _ := json.Marshal(ls)
		m := concurrency.NewMutex(sess, e.lockKey(k))
		if !req.Wait {
			err := m.TryLock(ctx)
			if errors.Is(err, concurrency.ErrLocked) {
				held, herr := e.holder(ctx, k)
				if herr != nil || held == nil {
					return fail(fmt.Errorf("device %s (%s) is leased by another run (holder record unreadable: %v)", t.Device, k, herr))
				}
				return fail(&LeaseHeldError{Held: *held})
			}
			if err != nil {
				return fail(fmt.Errorf("lease %s (%s) in etcd: %w", t.Device, k, err))
			}
		} else {
			wk := e.waiterDir(k) + fmt.Sprintf("%016x", sess.Lease())
			pctx, pcancel := context.WithTimeout(ctx, e.Timeout)
			_, err := e.cli.Put(pctx, wk, string(body), clientv3.WithLease(sess.Lease()))
			pcancel()
			if err != nil {
				return fail(fmt.Errorf("queue for %s (%s) in etcd: %w", t.Device, k, err))
			}
			err = m.Lock(ctx)
			dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), e.Timeout)
			_, _ = e.cli.Delete(dctx, wk)
			dcancel()
			if err != nil {
				return fail(fmt.Errorf("wait for %s (%s): %w", t.Device, k, err))
			}
		}
		h.mutexes[k] = m
		pctx, pcancel := context.WithTimeout(ctx, e.Timeout)
		resp, err := e.cli.Txn(pctx).If(m.IsOwner()).Then(clientv3.OpPut(e.holderKey(k), string(body), clientv3.WithLease(sess.Lease()))).Commit()
		pcancel()
		if err != nil {
			return fail(fmt.Errorf("record lease of %s (%s) in etcd: %w", t.Device, k, err))
		}
		if !resp.Succeeded {
			return fail(fmt.Errorf("lease of %s (%s) lost while taking it", t.Device, k))
		}
		h.leases = append(h.leases, ls)
	}
	return h, nil
}

func (e *EtcdLeases) holder(ctx context.Context, k string) (*Lease, error) {
	gctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	resp, err := e.cli.Get(gctx, e.holderKey(k))
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	var ls Lease
	if err := json.Unmarshal(resp.Kvs[0].Value, &ls); err != nil {
		return nil, fmt.Errorf("holder record of %s: %w", k, err)
	}
	return &ls, nil
}

func (h *etcdHeld) Leases() []*Lease      { return h.leases }
func (h *etcdHeld) Lost() <-chan struct{} { return h.sess.Done() }

// Release unlocks the devices (removing the holder records guarded by
// ownership) and revokes the session.
func (h *etcdHeld) Release(ctx context.Context) error {
	var errs []error
	for k, m := range h.mutexes {
		rctx, cancel := context.WithTimeout(ctx, h.e.Timeout)
		if _, err := h.e.cli.Txn(rctx).If(m.IsOwner()).Then(clientv3.OpDelete(h.e.holderKey(k))).Commit(); err != nil {
			errs = append(errs, fmt.Errorf("release %s: %w", k, err))
		}
		if err := m.Unlock(rctx); err != nil {
			errs = append(errs, fmt.Errorf("release %s: %w", k, err))
		}
		cancel()
	}
	h.mutexes = map[string]*concurrency.Mutex{}
	err := h.sess.Close() // revokes the etcd lease: waiter records go too
	h.cancel()
	if err != nil && !errors.Is(err, context.Canceled) {
		errs = append(errs, fmt.Errorf("close etcd session: %w", err))
	}
	return errors.Join(errs...)
}

// List implements LeaseStore: per device key, the holder and the waiters
// in their order of arrival.
func (e *EtcdLeases) List(ctx context.Context) ([]LeaseStatus, error) {
	gctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	hs, err := e.cli.Get(gctx, e.prefix+"/holders/", clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list leases in etcd: %w", err)
	}
	ws, err := e.cli.Get(gctx, e.prefix+"/waiters/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return nil, fmt.Errorf("list lease waiters in etcd: %w", err)
	}
	by := map[string]*LeaseStatus{}
	get := func(k string) *LeaseStatus {
		if s := by[k]; s != nil {
			return s
		}
		s := &LeaseStatus{Key: k, Waiters: []Lease{}}
		by[k] = s
		return s
	}
	for _, kv := range hs.Kvs {
		var ls Lease
		if json.Unmarshal(kv.Value, &ls) == nil {
			get(ls.Key).Holder = &ls
		}
	}
	for _, kv := range ws.Kvs {
		var ls Lease
		if json.Unmarshal(kv.Value, &ls) == nil {
			s := get(ls.Key)
			s.Waiters = append(s.Waiters, ls)
		}
	}
	out := []LeaseStatus{}
	for _, s := range by {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// ForceRelease implements LeaseStore: it revokes the etcd session that
// owns the device's mutex (the first key of its queue), which ends every
// lease of that run: the holder, if it still lives, sees Lost and stops, its
// journal writes are refused, and the next waiter is served. The act is
// recorded under <prefix>/released/<key>/<time>.
func (e *EtcdLeases) ForceRelease(ctx context.Context, key, by string) (*Lease, error) {
	gctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	resp, err := e.cli.Get(gctx, e.lockKey(key)+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return nil, fmt.Errorf("release %s in etcd: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	held, _ := e.holder(gctx, key)
	rec, _ := json.Marshal(map[string]any{"time": time.Now().UTC(), "key": key, "by": by, "holder": held})
	if _, err := e.cli.Put(gctx, e.prefix+"/released/"+keyPart(key)+"/"+time.Now().UTC().Format(time.RFC3339Nano), string(rec)); err != nil {
		return nil, fmt.Errorf("record forced release of %s in etcd: %w", key, err)
	}
	if _, err := e.cli.Revoke(gctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		return nil, fmt.Errorf("release %s in etcd: revoke the holder's session: %w", key, err)
	}
	if held == nil {
		held = &Lease{Key: key}
	}
	return held, nil
}

// EtcdJournal is a device's undo journal in etcd, written by the run that
// holds the device: each record is a key under the device's journal
// directory, put and deleted (when done) only while the run still owns the
// device's mutex. A record that outlives its run is replayed by the next
// holder.
type EtcdJournal struct {
	h       *etcdHeld
	key     string
	run     string
	seq     int
	pending map[int]bool
	// ctx is the run's, without its cancellation (the undos of an
	// aborted run are still journaled as done); each write is bounded by
	// the store's Timeout.
	ctx context.Context
}

// Journal opens the undo journal of one of the held devices for a run.
func (h *etcdHeld) Journal(key, runID string) (*EtcdJournal, error) {
	if h.mutexes[key] == nil {
		return nil, fmt.Errorf("undo journal of %s: device not held", key)
	}
	return &EtcdJournal{h: h, key: key, run: runID, pending: map[int]bool{}, ctx: context.Background()}, nil
}

func (h *etcdHeld) OpenJournal(ctx context.Context, ls *Lease, runID string) (RunJournal, error) {
	j, err := h.Journal(ls.Key, runID)
	if err != nil {
		return nil, err
	}
	j.ctx = context.WithoutCancel(ctx)
	return j, nil
}

func (h *etcdHeld) ClearJournal(context.Context, *Lease) error { return nil } // replayed records are deleted one by one

func (j *EtcdJournal) recKey(seq int) string {
	return j.h.e.journalDir(j.key) + keyPart(j.run) + "/" + fmt.Sprintf("%08d", seq)
}

// guarded runs one write on the journal only while the device is ours.
func (j *EtcdJournal) guarded(ctx context.Context, op clientv3.Op) error {
	cctx, cancel := context.WithTimeout(ctx, j.h.e.Timeout)
	defer cancel()
	resp, err := j.h.e.cli.Txn(cctx).If(j.h.mutexes[j.key].IsOwner()).Then(op).Commit()
	if err != nil {
		return fmt.Errorf("undo journal of %s in etcd: %w", j.key, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("undo journal of %s: the lease is lost (another run holds the device now); not touching it", j.key)
	}
	return nil
}

// Append records an undo before the change it undoes is made; it returns
// only once etcd has it, and fails once the device is no longer this
// run's.
func (j *EtcdJournal) Append(u UndoRecord) (int, error) {
	j.h.mu.Lock()
	defer j.h.mu.Unlock()
	j.seq++
	b, err := json.Marshal(PendingUndo{Seq: j.seq, RunID: j.run, PID: os.Getpid(), Time: time.Now().UTC(), UndoRecord: u})
	if err != nil {
		return 0, err
	}
	if err := j.guarded(j.ctx, clientv3.OpPut(j.recKey(j.seq), string(b))); err != nil {
		return 0, err
	}
	j.pending[j.seq] = true
	return j.seq, nil
}

// Done records that an undo was carried out (its record goes).
func (j *EtcdJournal) Done(seq int) error {
	j.h.mu.Lock()
	defer j.h.mu.Unlock()
	if err := j.guarded(j.ctx, clientv3.OpDelete(j.recKey(seq))); err != nil {
		return err
	}
	delete(j.pending, seq)
	return nil
}

// Close reports whether every undo this run journaled was done.
func (j *EtcdJournal) Close() (bool, error) {
	j.h.mu.Lock()
	defer j.h.mu.Unlock()
	return len(j.pending) == 0, nil
}

// PendingJournal returns the undos a device's journal holds that were
// never done, oldest first (run ids sort by time, sequence numbers are
// fixed width).
func (h *etcdHeld) PendingJournal(ctx context.Context, ls *Lease) ([]PendingUndo, error) {
	key := ls.Key
	gctx, cancel := context.WithTimeout(ctx, h.e.Timeout)
	defer cancel()
	resp, err := h.e.cli.Get(gctx, h.e.journalDir(key), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, fmt.Errorf("read undo journal of %s in etcd: %w", key, err)
	}
	var out []PendingUndo
	for _, kv := range resp.Kvs {
		var p PendingUndo
		if err := json.Unmarshal(kv.Value, &p); err != nil {
			return nil, fmt.Errorf("undo journal of %s: %s: %w", key, path.Base(string(kv.Key)), err)
		}
		out = append(out, p)
	}
	return out, nil
}

// MarkReplayed removes a replayed undo of an earlier run from the journal,
// guarded by this run's ownership of the device.
func (h *etcdHeld) MarkReplayed(ctx context.Context, ls *Lease, u PendingUndo) error {
	j := &EtcdJournal{h: h, key: ls.Key, run: u.RunID}
	return j.guarded(ctx, clientv3.OpDelete(j.recKey(u.Seq)))
}
