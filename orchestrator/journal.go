package orchestrator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// The undo journal is a write-ahead log per device, kept beside the
// device's lease (<state>/leases/<device>.journal). Before a run changes a
// device it appends, and syncs to disk, the value it found and the undo that
// restores it, as data (an UndoRecord: a kind from the registry in undo.go
// and its arguments), not as a closure. When the run's own cleanup has
// carried out an undo it appends a "done" line for it. When every undo is
// done the run closes the journal by removing it. So a journal that outlives
// its run (kill -9, power loss, a device that could not be restored) lists
// exactly what is still to be undone, and the next run to lease the device,
// or `testbed lab recover`, replays it before touching the device.

// UndoRecord is one journaled undo: which device (by the inventory name of
// the run that wrote it), what kind of undo (a key of the registry), its
// arguments, and the value found before the change (for people reading).
type UndoRecord struct {
	Device string          `json:"device"`
	Kind   string          `json:"kind"`
	Desc   string          `json:"desc"`
	Found  json.RawMessage `json:"found,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
}

// journalLine is one line of a journal file.
type journalLine struct {
	Op    string      `json:"op"` // begin | undo | done
	Seq   int         `json:"seq,omitempty"`
	Time  time.Time   `json:"time"`
	RunID string      `json:"run_id,omitempty"`
	PID   int         `json:"pid,omitempty"`
	Key   string      `json:"key,omitempty"`
	Undo  *UndoRecord `json:"undo,omitempty"`
}

// Journal is an open journal a run appends to.
type Journal struct {
	mu      sync.Mutex
	path    string
	f       *os.File
	runID   string
	seq     int
	pending map[int]bool
	now     func() time.Time
}

// CreateJournal starts the journal of a device for a run. The file must
// not exist: a journal left by an earlier run is replayed (and removed)
// before a new run may create its own.
func CreateJournal(path, runID, key string, now func() time.Time) (*Journal, error) {
	if now == nil {
		now = time.Now
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o664)
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create undo journal %s: an earlier run's journal is still there: `testbed lab recover` replays and removes it: %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("create undo journal %s: %w", path, err)
	}
	_ = f.Chmod(0o664) // another lab user's run may have to replay it
	j := &Journal{path: path, f: f, runID: runID, pending: map[int]bool{}, now: now}
	if err := j.write(journalLine{Op: "begin", RunID: runID, PID: os.Getpid(), Key: key}); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return j, nil
}

func (j *Journal) write(l journalLine) error {
	l.Time = j.now().UTC()
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("undo journal %s: %w", j.path, err)
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("append to undo journal %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("sync undo journal %s: %w", j.path, err)
	}
	return nil
}

// Append records an undo before the change it undoes is made, and returns
// its sequence number. It returns only once the line is on disk.
func (j *Journal) Append(u UndoRecord) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return 0, fmt.Errorf("undo journal %s is closed", j.path)
	}
	j.seq++
	if err := j.write(journalLine{Op: "undo", Seq: j.seq, Undo: &u}); err != nil {
		return 0, err
	}
	j.pending[j.seq] = true
	return j.seq, nil
}

// Done records that an undo was carried out.
func (j *Journal) Done(seq int) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return fmt.Errorf("undo journal %s is closed", j.path)
	}
	if err := j.write(journalLine{Op: "done", Seq: seq}); err != nil {
		return err
	}
	delete(j.pending, seq)
	return nil
}

// Close closes the journal, removing it when nothing in it is left to
// undo; it reports whether it removed it.
func (j *Journal) Close() (removed bool, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return false, nil
	}
	err = j.f.Close()
	j.f = nil
	if len(j.pending) == 0 {
		if rerr := os.Remove(j.path); rerr != nil {
			return false, errors.Join(err, fmt.Errorf("remove undo journal %s: %w", j.path, rerr))
		}
		return true, err
	}
	return false, err
}

// PendingUndo is an undo a journal holds that was never done.
type PendingUndo struct {
	Seq   int
	RunID string
	PID   int
	Time  time.Time
	UndoRecord
}

// ReadJournal returns the undos of a journal file that were never done, in
// the order they were journaled. A last line cut short (the writer died in
// the middle of it) is ignored: its change was never made, because the
// change follows the synced line.
func ReadJournal(path string) ([]PendingUndo, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseJournal(path, b)
}

func parseJournal(path string, b []byte) ([]PendingUndo, error) {
	type key struct {
		run string
		seq int
	}
	var order []key
	undos := map[key]PendingUndo{}
	run, pid := "", 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Bytes()
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		var l journalLine
		if err := json.Unmarshal(text, &l); err != nil {
			if !bytes.HasSuffix(b, []byte("\n")) && int64(len(b)) == offsetAfter(b, line) {
				break // the torn last line of a writer that died
			}
			return nil, fmt.Errorf("%s:%d: not a journal line: %v", path, line, err)
		}
		switch l.Op {
		case "begin":
			run, pid = l.RunID, l.PID
		case "undo":
			if l.Undo == nil {
				return nil, fmt.Errorf("%s:%d: undo line without its undo", path, line)
			}
			k := key{run, l.Seq}
			order = append(order, k)
			undos[k] = PendingUndo{Seq: l.Seq, RunID: run, PID: pid, Time: l.Time, UndoRecord: *l.Undo}
		case "done":
			delete(undos, key{run, l.Seq})
		default:
			return nil, fmt.Errorf("%s:%d: unknown journal op %q (expected begin, undo or done)", path, line, l.Op)
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []PendingUndo
	for _, k := range order {
		if u, ok := undos[k]; ok {
			out = append(out, u)
		}
	}
	return out, nil
}

// offsetAfter is the byte offset just past line n (1-based) of b.
func offsetAfter(b []byte, n int) int64 {
	off := 0
	for i := 0; i < n; i++ {
		j := bytes.IndexByte(b[off:], '\n')
		if j < 0 {
			return int64(len(b))
		}
		off += j + 1
	}
	return int64(off)
}

// markDone appends a done line for an undo of another run's journal (a
// replay), synced.
func markDone(path string, u PendingUndo) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("undo journal %s: %w", path, err)
	}
	defer f.Close()
	// A replayed undo is marked done under its own run's section: a begin
	// line for that run, then the done line.
	now := time.Now().UTC()
	var buf bytes.Buffer
	for _, l := range []journalLine{{Op: "begin", RunID: u.RunID, PID: u.PID, Time: now}, {Op: "done", Seq: u.Seq, Time: now}} {
		b, _ := json.Marshal(l)
		buf.Write(append(b, '\n'))
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("undo journal %s: %w", path, err)
	}
	return f.Sync()
}
