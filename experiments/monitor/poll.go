package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"testbed/dut/p4switch"
	"testbed/hostagent"
	"testbed/inventory"
)

// CounterReader reads a switch port's frame counters (p4switch.PortCounters
// is one).
type CounterReader interface {
	PortFramesOf(ctx context.Context, devPort int, q p4switch.FrameQuery) (p4switch.PortFrames, error)
}

// frameQuery is what a direction is estimated from: at the sending port
// every frame sent, at the receiving port the frames received good and
// those with FCS errors (one read per port serves both directions).
var frameQuery = p4switch.FrameQuery{Fields: p4switch.FramesTxAll | p4switch.FramesRxOK | p4switch.FramesRxFCSErrors}

// Direction is one direction of an inventory link between two switches,
// or between a switch and a host: frames leave Sender's port (TxPort, or
// the host interface TxIface) and arrive at Receiver's.
type Direction struct {
	Dir
	Receiver       string
	TxPort, RxPort int
	TxName, RxName string // the inventory's port names
	// TxHost and RxHost say an end is a host, read through its hostagent;
	// its interface is the inventory's port name.
	TxHost, RxHost bool
	// Transceiver and FEC are the link's, from the inventory.
	Transceiver, FEC string
}

// Switched says both ends are switches: only then can LinkGuardian
// protect the direction, and only such links take part in CorrOpt.
func (d Direction) Switched() bool { return !d.TxHost && !d.RxHost }

// Directions lists both directions of every inventory link whose ends are
// switches with numbered ports (Tofino dev ports) or hosts, with at least
// one switch, sorted by link.
func Directions(inv *inventory.Inventory) ([]Direction, error) {
	var out []Direction
	for _, l := range inv.Links {
		a, oka := inv.Devices[l.A.Device]
		b, okb := inv.Devices[l.B.Device]
		if !oka || !okb || !endKind(a) || !endKind(b) || (a.Kind == "host" && b.Kind == "host") {
			continue
		}
		pa, err := endPort(a, l.A.Port)
		if err != nil {
			return nil, fmt.Errorf("link %s: %w", l.Name, err)
		}
		pb, err := endPort(b, l.B.Port)
		if err != nil {
			return nil, fmt.Errorf("link %s: %w", l.Name, err)
		}
		ha, hb := a.Kind == "host", b.Kind == "host"
		out = append(out,
			Direction{Dir: Dir{Link: l.Name, Direction: "a>b", Sender: a.Name}, Receiver: b.Name, TxPort: pa, RxPort: pb, TxName: l.A.Port, RxName: l.B.Port,
				TxHost: ha, RxHost: hb, Transceiver: l.Transceiver, FEC: l.FEC},
			Direction{Dir: Dir{Link: l.Name, Direction: "b>a", Sender: b.Name}, Receiver: a.Name, TxPort: pb, RxPort: pa, TxName: l.B.Port, RxName: l.A.Port,
				TxHost: hb, RxHost: ha, Transceiver: l.Transceiver, FEC: l.FEC})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Link < out[j].Link })
	return out, nil
}

func devPort(d *inventory.Device, port string) (int, error) {
	v, ok := d.Ports[port]
	if !ok {
		return 0, fmt.Errorf("%s has no port %q", d.Name, port)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 511 {
		return 0, fmt.Errorf("%s port %s is %q: expected a Tofino dev port number (0..511)", d.Name, port, v)
	}
	return n, nil
}

func endKind(d *inventory.Device) bool { return d.Kind == "switch" || d.Kind == "host" }

func endPort(d *inventory.Device, port string) (int, error) {
	if d.Kind == "host" {
		if _, ok := d.Ports[port]; !ok {
			return 0, fmt.Errorf("%s has no port %q", d.Name, port)
		}
		return -1, nil
	}
	return devPort(d, port)
}

// Hosts lists the hosts the directions read (sorted, once each).
func Hosts(dirs []Direction) []string {
	var out []string
	for _, d := range dirs {
		if d.TxHost && !slices.Contains(out, d.Sender) {
			out = append(out, d.Sender)
		}
		if d.RxHost && !slices.Contains(out, d.Receiver) {
			out = append(out, d.Receiver)
		}
	}
	sort.Strings(out)
	return out
}

// Switches lists the switches the directions read (in order of first use).
func Switches(dirs []Direction) []string {
	var out []string
	for _, d := range dirs {
		if !d.TxHost && !slices.Contains(out, d.Sender) {
			out = append(out, d.Sender)
		}
		if !d.RxHost && !slices.Contains(out, d.Receiver) {
			out = append(out, d.Receiver)
		}
	}
	return out
}

// Monitor polls every direction's counters, keeps an estimator per
// direction and runs the policy. Poll is called by one goroutine; Snapshot
// and ServeHTTP may be called from others.
type Monitor struct {
	dirs     []Direction
	switches map[string]CounterReader
	hosts    map[string]HostCounterReader
	est      []*Estimator
	fecPrev  []*p4switch.FECCounters
	fecSum   []FECStatus
	policy   *Policy
	timeout  time.Duration
	log      *slog.Logger

	mu     sync.Mutex
	status []DirStatus
	errs   map[string]string
}

// DirStatus is a direction's state as the status endpoint shows it.
type DirStatus struct {
	Link      string `json:"link"`
	Direction string `json:"direction"`
	Sender    string `json:"sender"`
	Receiver  string `json:"receiver"`
	Copies    int    `json:"linkguardian_copies"`
	// Counters is "" when the counters were read, else why they are
	// unavailable (a host without NIC counters).
	Counters string     `json:"counters_unavailable,omitempty"`
	FEC      *FECStatus `json:"fec,omitempty"`
	Status
}

// NewMonitor builds a monitor over dirs between switches. switches maps
// each switch name to its counter reader; timeout bounds every read.
func NewMonitor(dirs []Direction, switches map[string]CounterReader, cfg Config, policy *Policy, timeout time.Duration, log *slog.Logger) (*Monitor, error) {
	return NewMonitorWith(dirs, switches, nil, cfg, policy, timeout, log)
}

// NewMonitorWith is NewMonitor with the hosts' counter readers, for
// directions with a host end. A switch reader that is also a FECReader
// gives the directions it receives their FEC counters.
func NewMonitorWith(dirs []Direction, switches map[string]CounterReader, hosts map[string]HostCounterReader, cfg Config, policy *Policy, timeout time.Duration, log *slog.Logger) (*Monitor, error) {
	m := &Monitor{dirs: dirs, switches: switches, hosts: hosts, policy: policy, timeout: timeout, log: log, errs: map[string]string{}}
	for _, d := range dirs {
		for _, end := range []struct {
			name string
			host bool
		}{{d.Sender, d.TxHost}, {d.Receiver, d.RxHost}} {
			if end.host && hosts[end.name] == nil {
				return nil, fmt.Errorf("monitor: link %s: no counter reader for host %s", d.Link, end.name)
			}
			if !end.host && switches[end.name] == nil {
				return nil, fmt.Errorf("monitor: link %s: no counter reader for switch %s", d.Link, end.name)
			}
		}
		e, err := NewEstimator(cfg)
		if err != nil {
			return nil, err
		}
		m.est = append(m.est, e)
	}
	m.fecPrev = make([]*p4switch.FECCounters, len(dirs))
	m.fecSum = make([]FECStatus, len(dirs))
	m.status = make([]DirStatus, len(dirs))
	for i, d := range dirs {
		m.status[i] = DirStatus{Link: d.Link, Direction: d.Direction, Sender: d.Sender, Receiver: d.Receiver, Status: m.est[i].Status()}
	}
	return m, nil
}

// Directions are the directions the monitor follows.
func (m *Monitor) Directions() []Direction { return m.dirs }

type portKey struct {
	sw   string
	port int
}

// endReading is one end's counters: frames sent, received good, received
// bad (hasBad: the end counts them).
type endReading struct {
	tx, rxOK, rxBad uint64
	hasBad          bool
}

// Poll reads every port once (each port of a switch once, however many
// directions use it; each host once), feeds the estimators and returns the
// policy's decisions. A port that cannot be read leaves its directions'
// estimates as they were and is reported in the status; the error
// returned joins them. A host whose agent has no NIC counters, or a switch
// without FEC counters, is reported unavailable, not as an error.
func (m *Monitor) Poll(ctx context.Context, now time.Time) ([]Decision, error) {
	m.mu.Lock()
	prevErrs := m.errs
	m.mu.Unlock()
	r := &pollRound{m: m, ctx: ctx, prevErrs: prevErrs, reads: map[portKey]endReading{}, hostReads: map[string]hostagent.Counters{},
		unavail: map[string]string{}, errs: map[string]string{}}
	var out []Decision
	status := make([]DirStatus, len(m.dirs))
	for i, d := range m.dirs {
		ds, dec := m.pollDir(ctx, r, i, d, now)
		out = append(out, dec...)
		status[i] = ds
	}
	m.mu.Lock()
	m.status, m.errs = status, r.errs
	m.mu.Unlock()
	return out, r.firstErr
}

// pollDir feeds direction i's estimator with its ends' readings and
// returns its status and the policy's decisions on it.
func (m *Monitor) pollDir(ctx context.Context, r *pollRound, i int, d Direction, now time.Time) (DirStatus, []Decision) {
	var out []Decision
	ds := DirStatus{Link: d.Link, Direction: d.Direction, Sender: d.Sender, Receiver: d.Receiver, Status: m.est[i].Status()}
	tx, ok1 := r.read(d.Sender, d.TxHost, d.TxPort, d.TxName)
	rx, ok2 := r.read(d.Receiver, d.RxHost, d.RxPort, d.RxName)
	for _, key := range []string{endKey(d.Sender, d.TxHost, d.TxPort, d.TxName), endKey(d.Receiver, d.RxHost, d.RxPort, d.RxName)} {
		if why, ok := r.unavail[key]; ok && ds.Counters == "" {
			ds.Counters = why
		}
	}
	if !d.RxHost {
		f := m.readFEC(ctx, i, d)
		ds.FEC = &f
	}
	if ok1 && ok2 {
		st := m.est[i].Observe(Reading{At: now, Tx: tx.tx, RxOK: rx.rxOK, RxFCS: rx.rxBad, HasFCS: rx.hasBad})
		ds.Status = st
		if st.Changed {
			m.log.Info("monitor: state", "link", d.Link, "direction", d.Direction, "state", st.State.String(),
				"frames", st.Frames, "losses", st.Losses, "low", st.Low, "high", st.High, "reason", st.Reason)
		}
		if m.policy != nil && d.Switched() {
			out = append(out, m.policy.Decide(d.Dir, st)...)
			if ds.FEC != nil {
				out = append(out, m.policy.DecideFEC(d.Dir, st, *ds.FEC, d.Transceiver)...)
			}
		}
	}
	if m.policy != nil {
		ds.Copies = m.policy.Copies(d.Dir)
	}
	return ds, out
}

// pollRound is one poll's reads: each switch port and each host read at
// most once, the ends that failed and the ones with nothing to read.
type pollRound struct {
	m         *Monitor
	ctx       context.Context
	prevErrs  map[string]string
	reads     map[portKey]endReading
	hostReads map[string]hostagent.Counters
	unavail   map[string]string
	errs      map[string]string
	firstErr  error
}

func (r *pollRound) fail(key string, err error) {
	r.errs[key] = err.Error()
	if r.firstErr == nil {
		r.firstErr = err
	}
	// Said once while it lasts: a port failing the same way every
	// poll is one warning, not one a second.
	if r.prevErrs[key] != err.Error() {
		r.m.log.Warn("monitor: counter read failed (said again only when it changes)", "end", key, "err", err)
	}
}

func (r *pollRound) read(name string, host bool, port int, iface string) (endReading, bool) {
	if host {
		return r.readHost(name, iface)
	}
	return r.readSwitch(name, port)
}

func (r *pollRound) readSwitch(sw string, port int) (endReading, bool) {
	k := portKey{sw, port}
	if c, ok := r.reads[k]; ok {
		return c, true
	}
	key := fmt.Sprintf("%s:%d", sw, port)
	if _, failed := r.errs[key]; failed {
		return endReading{}, false
	}
	if _, ok := r.unavail[key]; ok {
		return endReading{}, false
	}
	rctx, cancel := context.WithTimeout(r.ctx, r.m.timeout)
	c, err := r.m.switches[sw].PortFramesOf(rctx, port, frameQuery)
	cancel()
	if p4switch.IsNotFound(err) {
		// A port not added is a link out of service: nothing to read.
		r.unavail[key] = fmt.Sprintf("%s: port %d not added: %v", sw, port, err)
		return endReading{}, false
	}
	if err != nil {
		r.fail(key, fmt.Errorf("%s: read counters: %w", sw, err))
		return endReading{}, false
	}
	// A switch port counts FCS errors (the read fails if not).
	e := endReading{tx: uint64(c.TxAll), rxOK: uint64(c.RxOK), rxBad: uint64(c.RxFCSErrors), hasBad: true}
	r.reads[k] = e
	return e, true
}

func (r *pollRound) readHost(h, iface string) (endReading, bool) {
	key := h + ":" + iface
	if _, failed := r.errs[h]; failed {
		return endReading{}, false
	}
	if why, ok := r.unavail[h]; ok {
		r.unavail[key] = why
		return endReading{}, false
	}
	c, ok := r.hostReads[h]
	if !ok {
		rctx, cancel := context.WithTimeout(r.ctx, r.m.timeout)
		var err error
		c, err = r.m.hosts[h].Counters(rctx)
		cancel()
		var ae *hostagent.APIError
		if errors.As(err, &ae) && ae.Kind == hostagent.KindNotAvailable {
			r.unavail[h] = fmt.Sprintf("%s: no NIC counters: %s", h, ae.Message)
			r.unavail[key] = r.unavail[h]
			return endReading{}, false
		}
		if err != nil {
			r.fail(h, fmt.Errorf("%s: read NIC counters: %w", h, err))
			return endReading{}, false
		}
		r.hostReads[h] = c
	}
	st, ok := c.Interfaces[iface]
	if !ok {
		r.unavail[key] = fmt.Sprintf("%s: no interface %s in its counters", h, iface)
		return endReading{}, false
	}
	_, hasErrs := st[HostRxErrs]
	return endReading{tx: st[HostTx], rxOK: st[HostRx], rxBad: st[HostRxErrs], hasBad: hasErrs}, true
}

// endKey names an end in read errors and unavailability: switch:devport
// or host:interface.
func endKey(name string, host bool, port int, iface string) string {
	if host {
		return name + ":" + iface
	}
	return fmt.Sprintf("%s:%d", name, port)
}

// readFEC reads the FEC counters of a direction's receiving port, when
// its switch's driver has them.
func (m *Monitor) readFEC(ctx context.Context, i int, d Direction) FECStatus {
	f := m.fecSum[i]
	f.Mode = d.FEC
	fr, ok := m.switches[d.Receiver].(FECReader)
	if !ok {
		f.Available, f.Reason = false, fmt.Sprintf("%s: the switch driver reads no FEC counters", d.Receiver)
		return f
	}
	rctx, cancel := context.WithTimeout(ctx, m.timeout)
	c, err := fr.FECCounters(rctx, d.RxPort)
	cancel()
	if err != nil {
		f.Available, f.Reason = false, fmt.Sprintf("%s: FEC counters of port %d: %v", d.Receiver, d.RxPort, err)
		m.fecPrev[i] = nil
		return f
	}
	if !c.Aligned && c.Corrected == 0 && c.Uncorrected == 0 {
		// A port without FEC (or without codeword lock) reads zeros.
		f.Available, f.Reason = false, fmt.Sprintf("%s: port %d has no FEC codeword lock (FEC off or link down)", d.Receiver, d.RxPort)
		m.fecPrev[i] = nil
		return f
	}
	f.Available, f.Reason = true, ""
	f.LastCorrected, f.LastUncorrected = 0, 0
	if p := m.fecPrev[i]; p != nil && c.Corrected >= p.Corrected && c.Uncorrected >= p.Uncorrected {
		f.LastCorrected, f.LastUncorrected = c.Corrected-p.Corrected, c.Uncorrected-p.Uncorrected
		f.Corrected += f.LastCorrected
		f.Uncorrected += f.LastUncorrected
	}
	m.fecPrev[i] = &c
	m.fecSum[i] = f
	return f
}

// Snapshot is the latest status of every direction and the reads that
// failed at the last poll.
func (m *Monitor) Snapshot() (dirs []DirStatus, errs map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	errs = make(map[string]string, len(m.errs))
	for k, v := range m.errs {
		errs[k] = v
	}
	return append([]DirStatus(nil), m.status...), errs
}

// ServeHTTP serves the status as JSON.
func (m *Monitor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	dirs, errs := m.Snapshot()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(struct {
		Directions []DirStatus       `json:"directions"`
		ReadErrors map[string]string `json:"read_errors"`
	}{dirs, errs})
}

// Status is direction i's latest status, with the copies in force.
func (m *Monitor) Status(i int) DirStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status[i]
}
