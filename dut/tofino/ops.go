package tofino

import (
	"context"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"testbed/transport"
)

// maxDevPort bounds a dev port (PortId_t is 9 bits on Tofino 1).
const maxDevPort = 511

// Speeds the driver knows, in Gb/s, and their BF Runtime names.
var speeds = map[int]string{10: "BF_SPEED_10G", 25: "BF_SPEED_25G", 40: "BF_SPEED_40G", 50: "BF_SPEED_50G", 100: "BF_SPEED_100G"}

// FEC modes: the inventory's names and BF Runtime's.
var fecs = map[string]string{"none": "BF_FEC_TYP_NONE", "fc": "BF_FEC_TYP_FC", "rs528": "BF_FEC_TYP_RS", "rs544": "BF_FEC_TYP_RS"}

// AddPort adds and enables a port with a speed (Gb/s) and FEC mode (none,
// fc, rs528, rs544), auto-negotiation off.
func (s *Switch) AddPort(ctx context.Context, devPort, gbps int, fec string) error {
	sp, ok := speeds[gbps]
	if !ok {
		return fmt.Errorf("port %d: speed %d Gb/s (expected 10, 25, 40, 50 or 100)", devPort, gbps)
	}
	f, ok := fecs[fec]
	if !ok {
		return fmt.Errorf("port %d: FEC %q (expected none, fc, rs528 or rs544)", devPort, fec)
	}
	err := s.agent.call(ctx, "port.add", map[string]any{"dev_port": devPort, "speed": sp, "fec": f, "enable": true}, nil)
	if err != nil {
		return fmt.Errorf("port %d add %s %s: %w", devPort, sp, f, err)
	}
	return nil
}

// SetPortMode sets an added port's speed (Gb/s) and FEC mode (none, fc,
// rs528, rs544), keeping it enabled or not, and returns the mode it had.
// Changing the mode takes the link down while the port is re-added (see
// agent/PROTOCOL.md); an unchanged mode touches nothing.
func (s *Switch) SetPortMode(ctx context.Context, devPort, gbps int, fec string) (PortMode, error) {
	sp, ok := speeds[gbps]
	if !ok {
		return PortMode{}, fmt.Errorf("port %d: speed %d Gb/s (expected 10, 25, 40, 50 or 100)", devPort, gbps)
	}
	f, ok := fecs[fec]
	if !ok {
		return PortMode{}, fmt.Errorf("port %d: FEC %q (expected none, fc, rs528 or rs544)", devPort, fec)
	}
	return s.setPortMode(ctx, devPort, sp, f)
}

// RestorePortMode sets back a mode SetPortMode returned.
func (s *Switch) RestorePortMode(ctx context.Context, devPort int, m PortMode) error {
	_, err := s.setPortMode(ctx, devPort, m.Speed, m.FEC)
	return err
}

func (s *Switch) setPortMode(ctx context.Context, devPort int, speed, fec string) (PortMode, error) {
	var r struct {
		Previous PortMode `json:"previous"`
	}
	err := s.agent.call(ctx, "port.mode", map[string]any{"dev_port": devPort, "speed": speed, "fec": fec}, &r)
	if err != nil {
		return PortMode{}, fmt.Errorf("port %d set mode %s %s: %w", devPort, speed, fec, err)
	}
	return r.Previous, nil
}

// TxTimestamp reads the MAC's transmit timestamp of the last frame on a port
// whose P4 program asked for one (capture_tstamp_on_tx, as p4/timestamp does).
func (s *Switch) TxTimestamp(ctx context.Context, devPort int) (TxStamp, error) {
	var ts TxStamp
	if err := s.agent.call(ctx, "port.tx_tstamp", map[string]any{"dev_port": devPort}, &ts); err != nil {
		return ts, fmt.Errorf("port %d tx timestamp: %w", devPort, err)
	}
	return ts, nil
}

// DeletePort removes a port.
func (s *Switch) DeletePort(ctx context.Context, devPort int) error {
	if err := s.agent.call(ctx, "port.del", map[string]any{"dev_port": devPort}, nil); err != nil {
		return fmt.Errorf("port %d delete: %w", devPort, err)
	}
	return nil
}

// PortStatus reads a port's state.
func (s *Switch) PortStatus(ctx context.Context, devPort int) (PortStatus, error) {
	var ps PortStatus
	if err := s.agent.call(ctx, "port.status", map[string]any{"dev_port": devPort}, &ps); err != nil {
		return ps, fmt.Errorf("port %d status: %w", devPort, err)
	}
	for g, n := range speeds {
		if n == ps.Speed {
			ps.SpeedGbps = g
		}
	}
	return ps, nil
}

// WaitPortUp asks until the port reports up or ctx ends.
func (s *Switch) WaitPortUp(ctx context.Context, devPort int) error {
	var last PortStatus
	err := transport.Poll(ctx, func() (bool, error) {
		ps, err := s.PortStatus(ctx, devPort)
		last = ps
		return ps.Up, err
	})
	if err != nil {
		return fmt.Errorf("port %d not up (enabled=%v speed=%s fec=%s): %w", devPort, last.Enabled, last.Speed, last.FEC, err)
	}
	return nil
}

// PortCounters reads every $PORT_STAT counter of a port.
func (s *Switch) PortCounters(ctx context.Context, devPort int) (Counters, error) {
	return s.portStat(ctx, devPort, nil)
}

// portStat reads a port's $PORT_STAT counters, all of them or (names not
// nil) only those named: PortFramesOf's smaller answer.
func (s *Switch) portStat(ctx context.Context, devPort int, names []string) (Counters, error) {
	args := map[string]any{"dev_port": devPort}
	if names != nil {
		args["names"] = names
	}
	var r struct {
		TimeNs   int64            `json:"time_ns"`
		Counters map[string]int64 `json:"counters"`
	}
	if err := s.agent.call(ctx, "port.stat", args, &r); err != nil {
		return Counters{}, fmt.Errorf("port %d counters: %w", devPort, err)
	}
	if len(r.Counters) == 0 {
		return Counters{}, fmt.Errorf("port %d counters: empty answer", devPort)
	}
	return Counters{Time: time.Duration(r.TimeNs), Values: r.Counters}, nil
}

// ClearPortCounters zeroes a port's counters.
func (s *Switch) ClearPortCounters(ctx context.Context, devPort int) error {
	if err := s.agent.call(ctx, "port.stat_clear", map[string]any{"dev_port": devPort}, nil); err != nil {
		return fmt.Errorf("port %d clear counters: %w", devPort, err)
	}
	return nil
}

// CellBytes is a Tofino 1 buffer cell.
const CellBytes = 80

// Queue reads egress queue qid of devPort. On TF1 a pipe has 72 ports in
// port groups of 4 channels with 8 queues each: pipe = devPort>>7,
// pg_id = (devPort&0x7f)>>2, pg_queue = (devPort&3)*8 + qid.
func (s *Switch) Queue(ctx context.Context, devPort, qid int, clearWatermark bool) (QueueUsage, error) {
	var q QueueUsage
	if qid < 0 || qid > 7 {
		return q, fmt.Errorf("port %d queue %d: expected a queue 0..7", devPort, qid)
	}
	args := map[string]any{"pipe": devPort >> 7, "pg_id": (devPort & 0x7f) >> 2, "pg_queue": (devPort&3)*8 + qid, "clear_watermark": clearWatermark}
	if err := s.agent.call(ctx, "tm.queue", args, &q); err != nil {
		return q, fmt.Errorf("port %d queue %d: %w", devPort, qid, err)
	}
	return q, nil
}

// MaxQueuePriority is the highest scheduling priority of a TM queue:
// Tofino's BF_TM_SCH_PRIO_7 ("HIGH"); 0 is the lowest ("LOW").
const MaxQueuePriority = 7

// SetQueuePriority sets the scheduling priority of egress queue qid (the
// ig_tm_md.qid a program gives a frame, 0..7) of devPort, and returns the
// priority it had: what to set back. A queue of a higher priority is
// served first (strict priority); queues of one priority share the port by
// DWRR. The agent writes tf1.tm.queue.sched_cfg's max_priority of the queue
// tf1.tm.port.cfg names (PROTOCOL.md, tm.queue.sched); the SDE's default
// is 0 for every queue.
func (s *Switch) SetQueuePriority(ctx context.Context, devPort, qid, priority int) (prev int, err error) {
	if priority < 0 || priority > MaxQueuePriority {
		return 0, fmt.Errorf("port %d queue %d priority %d: expected 0..%d (%d served first)", devPort, qid, priority, MaxQueuePriority, MaxQueuePriority)
	}
	return s.queueSched(ctx, devPort, qid, &priority)
}

// QueuePriority reads the scheduling priority of egress queue qid of
// devPort (tm.queue.sched without a priority): what a run journals before
// it sets one.
func (s *Switch) QueuePriority(ctx context.Context, devPort, qid int) (int, error) {
	return s.queueSched(ctx, devPort, qid, nil)
}

// queueSched is tm.queue.sched: priority set when not nil; the priority
// the queue had.
func (s *Switch) queueSched(ctx context.Context, devPort, qid int, priority *int) (int, error) {
	what := "priority"
	args := map[string]any{"dev_port": devPort, "qid": qid}
	if priority != nil {
		what = fmt.Sprintf("priority %d", *priority)
		args["priority"] = *priority
	}
	switch {
	case devPort < 0 || devPort > maxDevPort:
		return 0, fmt.Errorf("port %d queue %d %s: dev port outside 0..%d", devPort, qid, what, maxDevPort)
	case qid < 0 || qid > 7:
		return 0, fmt.Errorf("port %d queue %d %s: expected a queue 0..7", devPort, qid, what)
	}
	var r struct {
		Priority *int `json:"priority"`
	}
	if err := s.agent.call(ctx, "tm.queue.sched", args, &r); err != nil {
		return 0, fmt.Errorf("port %d queue %d %s: %w", devPort, qid, what, err)
	}
	if r.Priority == nil || *r.Priority < 0 || *r.Priority > MaxQueuePriority {
		return 0, fmt.Errorf("port %d queue %d %s: the agent answered no priority 0..%d", devPort, qid, what, MaxQueuePriority)
	}
	return *r.Priority, nil
}

// ReadRegister reads one index of a register ("Control.register"), one
// value per pipe.
func (s *Switch) ReadRegister(ctx context.Context, name string, index int) ([]int64, error) {
	var r struct {
		Values []int64 `json:"values"`
	}
	if err := s.agent.call(ctx, "reg.get", map[string]any{"name": name, "index": index}, &r); err != nil {
		return nil, fmt.Errorf("register %s[%d]: %w", name, index, err)
	}
	if len(r.Values) == 0 {
		return nil, fmt.Errorf("register %s[%d]: no values", name, index)
	}
	return r.Values, nil
}

// MaxRegisterRange is the most indices one ReadRegisterRange reads (the
// agent's reg.range limit: the largest Stardust register, reg_credit,
// has 4096).
const MaxRegisterRange = 4096

// ReadRegisterRange reads count consecutive indices of a register from
// index from on, in one request, each summed over the pipes (a program's
// state lives in the pipe of its ports; the others read 0).
func (s *Switch) ReadRegisterRange(ctx context.Context, name string, from, count int) ([]int64, error) {
	if from < 0 || count < 1 || count > MaxRegisterRange {
		return nil, fmt.Errorf("register %s[%d..]: %d indices from %d (expected from >= 0 and 1..%d indices)", name, from, count, from, MaxRegisterRange)
	}
	var r struct {
		Values []int64 `json:"values"`
	}
	if err := s.agent.call(ctx, "reg.range", map[string]any{"name": name, "from": from, "count": count}, &r); err != nil {
		return nil, fmt.Errorf("register %s[%d..%d]: %w", name, from, from+count-1, err)
	}
	if len(r.Values) != count {
		return nil, fmt.Errorf("register %s[%d..%d]: %d values, want %d", name, from, from+count-1, len(r.Values), count)
	}
	return r.Values, nil
}

// WriteRegister writes one index of a register in every pipe.
func (s *Switch) WriteRegister(ctx context.Context, name string, index int, value int64) error {
	if err := s.agent.call(ctx, "reg.set", map[string]any{"name": name, "index": index, "value": value}, nil); err != nil {
		return fmt.Errorf("register %s[%d] = %d: %w", name, index, value, err)
	}
	return nil
}

// AddEntry adds an entry to a table ("Control.table") with an action.
func (s *Switch) AddEntry(ctx context.Context, table string, e Entry) error {
	args := map[string]any{"name": table, "action": e.Action, "key": e.Key, "data": e.Data}
	if err := s.agent.call(ctx, "table.add", args, nil); err != nil {
		return fmt.Errorf("table %s add %v -> %s%v: %w", table, e.Key, e.Action, e.Data, err)
	}
	return nil
}

// ModifyEntry gives the entry with e.Key the action and data of e, in
// place (bfrt_python's mod_with_<action>, agent/PROTOCOL.md table.mod);
// a key with no entry is an error.
func (s *Switch) ModifyEntry(ctx context.Context, table string, e Entry) error {
	args := map[string]any{"name": table, "action": e.Action, "key": e.Key, "data": e.Data}
	if err := s.agent.call(ctx, "table.mod", args, nil); err != nil {
		return fmt.Errorf("table %s modify %v -> %s%v: %w", table, e.Key, e.Action, e.Data, err)
	}
	return nil
}

// DeleteEntry deletes the entry with key.
func (s *Switch) DeleteEntry(ctx context.Context, table string, key map[string]int64) error {
	if err := s.agent.call(ctx, "table.del", map[string]any{"name": table, "key": key}, nil); err != nil {
		return fmt.Errorf("table %s delete %v: %w", table, key, err)
	}
	return nil
}

// ClearTable deletes every entry of a table.
func (s *Switch) ClearTable(ctx context.Context, table string) error {
	if err := s.agent.call(ctx, "table.clear", map[string]any{"name": table}, nil); err != nil {
		return fmt.Errorf("table %s clear: %w", table, err)
	}
	return nil
}

// Entries reads every entry of a table.
func (s *Switch) Entries(ctx context.Context, table string) ([]Entry, error) {
	var r struct {
		Entries []Entry `json:"entries"`
	}
	if err := s.agent.call(ctx, "table.get", map[string]any{"name": table}, &r); err != nil {
		return nil, fmt.Errorf("table %s read: %w", table, err)
	}
	return r.Entries, nil
}

// EntriesWhere reads the entries of a table whose key has each field of
// key at its value (table.get with a key: a destination's 64 spraying
// slots, not the table's 256 x 64). key must name at least one field.
func (s *Switch) EntriesWhere(ctx context.Context, table string, key map[string]int64) ([]Entry, error) {
	if len(key) == 0 {
		return nil, fmt.Errorf("table %s read: expected at least one key field to select by", table)
	}
	var r struct {
		Entries []Entry `json:"entries"`
	}
	if err := s.agent.call(ctx, "table.get", map[string]any{"name": table, "key": key}, &r); err != nil {
		return nil, fmt.Errorf("table %s read %v: %w", table, key, err)
	}
	return r.Entries, nil
}

// pktgenHeaderBytes is the header TF1's packet generator writes in place
// of a frame's first bytes (TNA's pktgen_timer_header_t).
const pktgenHeaderBytes = 6

// validatePktgen checks a configuration against TF1's limits.
func validatePktgen(p Pktgen) error {
	switch {
	case p.PacketBytes < 60 || p.PacketBytes > 16384:
		return fmt.Errorf("pktgen: packet of %d bytes without FCS (expected 60..16384)", p.PacketBytes)
	case p.Batches < 1 || p.Batches > 65536 || p.PerBatch < 1 || p.PerBatch > 65536:
		return fmt.Errorf("pktgen: %d batches of %d packets (each expected 1..65536)", p.Batches, p.PerBatch)
	case p.Interval <= 0:
		return fmt.Errorf("pktgen: interval %v (expected > 0)", p.Interval)
	case p.IntervalJitter < 0 || p.IntervalJitter > 0 && p.Periodic:
		return fmt.Errorf("pktgen: interval jitter %v (expected >= 0, and none on a periodic timer)", p.IntervalJitter)
	case len(p.Buffer) > p.PacketBytes-pktgenHeaderBytes:
		return fmt.Errorf("pktgen: a buffer of %d bytes in a %d B packet (at most %d after the %d B pktgen header)", len(p.Buffer), p.PacketBytes, p.PacketBytes-pktgenHeaderBytes, pktgenHeaderBytes)
	}
	return nil
}

// StartPktgen configures and enables a packet-generator application.
func (s *Switch) StartPktgen(ctx context.Context, p Pktgen) error {
	if err := validatePktgen(p); err != nil {
		return err
	}
	args := map[string]any{"app_id": p.AppID, "dev_port": p.Port, "egress_port": p.EgressPort, "pkt_len": p.PacketBytes,
		"timer_ns": p.Interval.Nanoseconds(), "batches": p.Batches, "packets_per_batch": p.PerBatch}
	if len(p.Buffer) > 0 {
		args["buffer_hex"] = hex.EncodeToString(p.Buffer)
	}
	if p.Periodic {
		args["trigger"] = "timer_periodic" // a timer until stopped (the LinkGuardian receiver's)
	}
	if p.IntervalJitter > 0 {
		args["ibg_jitter_ns"] = p.IntervalJitter.Nanoseconds()
	}
	if err := s.agent.call(ctx, "pktgen.start", args, nil); err != nil {
		return fmt.Errorf("pktgen app %d start: %w", p.AppID, err)
	}
	return nil
}

// StopPktgen disables a packet-generator application.
func (s *Switch) StopPktgen(ctx context.Context, appID int) error {
	if err := s.agent.call(ctx, "pktgen.stop", map[string]any{"app_id": appID}, nil); err != nil {
		return fmt.Errorf("pktgen app %d stop: %w", appID, err)
	}
	return nil
}

// PktgenStatus reads an application's progress.
func (s *Switch) PktgenStatus(ctx context.Context, appID int) (PktgenStatus, error) {
	var st PktgenStatus
	if err := s.agent.call(ctx, "pktgen.status", map[string]any{"app_id": appID}, &st); err != nil {
		return st, fmt.Errorf("pktgen app %d status: %w", appID, err)
	}
	return st, nil
}

// Clock reads the switch's clock.
func (s *Switch) Clock(ctx context.Context) (time.Duration, error) {
	var r struct {
		TimeNs int64 `json:"time_ns"`
	}
	if err := s.agent.call(ctx, "time", nil, &r); err != nil {
		return 0, fmt.Errorf("clock: %w", err)
	}
	return time.Duration(r.TimeNs), nil
}

var ddmRe = regexp.MustCompile(`Channel\s+(\d+):\s+(-?[\d.]+|-inf)\s*dBm\s+(-?[\d.]+|-inf)\s*dBm\s+(-?[\d.]+)\s*mA`)

// Transceiver reads a front-panel port's transceiver diagnostics (RX/TX
// power per lane) through the platform CLI.
func (s *Switch) Transceiver(ctx context.Context, frontPort int) ([]Lane, error) {
	out, err := s.sh(ctx, "ddm", s.privilegeCheck(`"$SDE/run_bfshell.sh"`)+fmt.Sprintf(`f=$(mktemp) && chmod 644 "$f" && printf 'ucli\nbf_pltfm\nqsfp\nget-ddm %d\nend\nexit\n' > "$f" && %s%s "$SDE/run_bfshell.sh" -f "$f"; rc=$?; rm -f "$f"; exit $rc`, frontPort, s.privileged(), `SDE="$SDE" SDE_INSTALL="$SDE_INSTALL"`), nil)
	if err != nil {
		return nil, fmt.Errorf("port %d transceiver: %w", frontPort, err)
	}
	var lanes []Lane
	for _, m := range ddmRe.FindAllStringSubmatch(out, -1) {
		l := Lane{}
		l.Lane, _ = strconv.Atoi(m[1])
		l.RxDBm = parseDBm(m[2])
		l.TxDBm = parseDBm(m[3])
		l.BiasMilli, _ = strconv.ParseFloat(m[4], 64)
		lanes = append(lanes, l)
	}
	if len(lanes) == 0 {
		return nil, fmt.Errorf("port %d transceiver: no \"Channel N:\" lines in %q", frontPort, truncate(strings.TrimSpace(out), 200))
	}
	return lanes, nil
}

func parseDBm(s string) float64 {
	if s == "-inf" {
		return -40
	}
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// maxClockWait is how far ahead of the switch's clock time.wait may ask.
const maxClockWait = 60 * time.Second

// WaitClock answers once the switch's clock has reached t (at most 60 s
// ahead): the way to sample at fixed intervals of the device's own time.
func (s *Switch) WaitClock(ctx context.Context, t time.Duration) (time.Duration, error) {
	var r struct {
		TimeNs int64 `json:"time_ns"`
	}
	if _, ok := ctx.Deadline(); !ok {
		// The answer comes when the switch's clock gets there: allow the
		// longest wait the agent accepts on top of the usual deadline.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.Timeout+maxClockWait)
		defer cancel()
	}
	if err := s.agent.call(ctx, "time.wait", map[string]any{"until_ns": t.Nanoseconds()}, &r); err != nil {
		return 0, fmt.Errorf("wait for clock %v: %w", t, err)
	}
	return time.Duration(r.TimeNs), nil
}
