package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"testbed/dut/tofino"
	"testbed/inventory"
)

// CounterReader reads a switch port's $PORT_STAT counters; *tofino.Switch
// is one.
type CounterReader interface {
	PortCounters(ctx context.Context, devPort int) (tofino.Counters, error)
}

// The $PORT_STAT counters a direction is estimated from (Tofino's RMON
// names, as the switch driver returns them).
const (
	CtrTx    = "$FramesTransmittedAll"
	CtrRxOK  = "$FramesReceivedOK"
	CtrRxFCS = "$FramesReceivedwithFCSError"
)

// Direction is one direction of an inventory link between two switches:
// frames leave Sender's port and arrive at Receiver's.
type Direction struct {
	Dir
	Receiver       string
	TxPort, RxPort int
	TxName, RxName string // the inventory's port names
}

// Directions lists both directions of every inventory link whose ends are
// switches with numbered ports (Tofino dev ports), sorted by link.
func Directions(inv *inventory.Inventory) ([]Direction, error) {
	var out []Direction
	for _, l := range inv.Links {
		a, oka := inv.Devices[l.A.Device]
		b, okb := inv.Devices[l.B.Device]
		if !oka || !okb || a.Kind != "switch" || b.Kind != "switch" {
			continue
		}
		pa, err := devPort(a, l.A.Port)
		if err != nil {
			return nil, fmt.Errorf("link %s: %w", l.Name, err)
		}
		pb, err := devPort(b, l.B.Port)
		if err != nil {
			return nil, fmt.Errorf("link %s: %w", l.Name, err)
		}
		out = append(out,
			Direction{Dir: Dir{Link: l.Name, Direction: "a>b", Sender: a.Name}, Receiver: b.Name, TxPort: pa, RxPort: pb, TxName: l.A.Port, RxName: l.B.Port},
			Direction{Dir: Dir{Link: l.Name, Direction: "b>a", Sender: b.Name}, Receiver: a.Name, TxPort: pb, RxPort: pa, TxName: l.B.Port, RxName: l.A.Port})
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

// Monitor polls every direction's counters, keeps an estimator per
// direction and runs the policy. Poll is called by one goroutine; Snapshot
// and ServeHTTP may be called from others.
type Monitor struct {
	dirs     []Direction
	switches map[string]CounterReader
	est      []*Estimator
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
	Status
}

// NewMonitor builds a monitor over dirs. switches maps each switch name to
// its counter reader; timeout bounds every read.
func NewMonitor(dirs []Direction, switches map[string]CounterReader, cfg Config, policy *Policy, timeout time.Duration, log *slog.Logger) (*Monitor, error) {
	m := &Monitor{dirs: dirs, switches: switches, policy: policy, timeout: timeout, log: log, errs: map[string]string{}}
	for _, d := range dirs {
		for _, sw := range []string{d.Sender, d.Receiver} {
			if switches[sw] == nil {
				return nil, fmt.Errorf("monitor: link %s: no counter reader for switch %s", d.Link, sw)
			}
		}
		e, err := NewEstimator(cfg)
		if err != nil {
			return nil, err
		}
		m.est = append(m.est, e)
	}
	m.status = make([]DirStatus, len(dirs))
	for i, d := range dirs {
		m.status[i] = DirStatus{Link: d.Link, Direction: d.Direction, Sender: d.Sender, Receiver: d.Receiver, Status: m.est[i].Status()}
	}
	return m, nil
}

type portKey struct {
	sw   string
	port int
}

// Poll reads every port once (each port of a switch once, however many
// directions use it), feeds the estimators and returns the policy's
// decisions. A port that cannot be read leaves its directions' estimates
// as they were and is reported in the status; the error returned joins
// them.
func (m *Monitor) Poll(ctx context.Context, now time.Time) ([]Decision, error) {
	reads := map[portKey]tofino.Counters{}
	errs := map[string]string{}
	var firstErr error
	read := func(sw string, port int) (tofino.Counters, bool) {
		k := portKey{sw, port}
		if c, ok := reads[k]; ok {
			return c, true
		}
		if _, failed := errs[fmt.Sprintf("%s:%d", sw, port)]; failed {
			return tofino.Counters{}, false
		}
		rctx, cancel := context.WithTimeout(ctx, m.timeout)
		c, err := m.switches[sw].PortCounters(rctx, port)
		cancel()
		if err != nil {
			err = fmt.Errorf("%s: read counters: %w", sw, err)
			errs[fmt.Sprintf("%s:%d", sw, port)] = err.Error()
			if firstErr == nil {
				firstErr = err
			}
			m.log.Warn("monitor: counter read failed", "switch", sw, "port", port, "err", err)
			return tofino.Counters{}, false
		}
		reads[k] = c
		return c, true
	}
	var out []Decision
	status := make([]DirStatus, len(m.dirs))
	for i, d := range m.dirs {
		st := m.est[i].Status()
		tx, ok1 := read(d.Sender, d.TxPort)
		rx, ok2 := read(d.Receiver, d.RxPort)
		if ok1 && ok2 {
			fcs, has := rx.Values[CtrRxFCS]
			st = m.est[i].Observe(Reading{At: now, Tx: uint64(tx.Values[CtrTx]), RxOK: uint64(rx.Values[CtrRxOK]),
				RxFCS: uint64(fcs), HasFCS: has})
			if st.Changed {
				m.log.Info("monitor: state", "link", d.Link, "direction", d.Direction, "state", st.State.String(),
					"frames", st.Frames, "losses", st.Losses, "low", st.Low, "high", st.High, "reason", st.Reason)
			}
			if m.policy != nil {
				out = append(out, m.policy.Decide(d.Dir, st)...)
			}
		}
		status[i] = DirStatus{Link: d.Link, Direction: d.Direction, Sender: d.Sender, Receiver: d.Receiver, Status: st}
		if m.policy != nil {
			status[i].Copies = m.policy.Copies(d.Dir)
		}
	}
	m.mu.Lock()
	m.status, m.errs = status, errs
	m.mu.Unlock()
	return out, firstErr
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
