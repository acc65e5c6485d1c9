// Package serve is `testbed serve`: the lab's pages (devices, leases, undo
// journals, the queue), the runs (live progress of running ones read from
// their bundles as they are written, finished ones with their headline
// numbers and a diff against the previous run of the recipe), the nightly
// trends, and a JSON API for the same. Lists and trends come from a run
// index (SQLite, embedded) rebuilt from the bundles of the runs directory,
// which stay the truth: the index is a cache, kept in step with what is on
// disk. Serving is read-only: nothing here writes to the lab, its leases,
// its journals or a bundle.
package serve

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	// modernc.org/sqlite is SQLite translated to Go: no cgo, so the
	// static testbed binary keeps building everywhere.
	_ "modernc.org/sqlite"

	"testbed/orchestrator"
	"testbed/results"
)

// maxMetaBytes bounds a manifest.json, summary.json or suite report as
// the index reads it (the bundle reader's own limit for them).
const maxMetaBytes = 64 << 20

// HeadlineFunc returns a recipe's headline metric patterns (its declared
// Headlines), nil for a recipe this build does not know.
type HeadlineFunc func(recipe string) []string

// maxHeadlines is how many headline numbers of a run the index keeps: the
// trends plot them, lists show the first three.
const maxHeadlines = 12

// Index is the run index: one row per bundle directory of the runs
// directory, its headline numbers, its devices, and the suite's checks of
// it. Sync brings it in step with the disk.
type Index struct {
	db        *sql.DB
	runsDir   string
	headlines HeadlineFunc
	// syncMu serialises Syncs (readers do not take it).
	syncMu sync.Mutex
	// What the last Sync saw (under syncMu).
	synced             bool
	dirStamp, repStamp stamp
	fullAt             time.Time
	// gen counts Syncs that changed something, for live pages.
	mu  sync.Mutex
	gen uint64
}

const schema = `
CREATE TABLE IF NOT EXISTS runs (
	run_id      TEXT PRIMARY KEY,
	dir         TEXT NOT NULL UNIQUE,
	recipe      TEXT NOT NULL,
	version     TEXT NOT NULL,
	status      TEXT NOT NULL,
	reason      TEXT NOT NULL,
	started     INTEGER NOT NULL,
	ended       INTEGER,
	simulated   INTEGER NOT NULL,
	lab         TEXT NOT NULL,
	suite       TEXT NOT NULL,
	suite_entry TEXT NOT NULL,
	steps_done  INTEGER NOT NULL,
	steps_total INTEGER NOT NULL,
	last_step   TEXT NOT NULL,
	headline    TEXT NOT NULL,
	mtime       INTEGER NOT NULL,
	size        INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_recipe ON runs(recipe, run_id);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status, run_id);
CREATE INDEX IF NOT EXISTS runs_suite ON runs(suite, suite_entry, run_id);
CREATE TABLE IF NOT EXISTS metrics (
	run_id TEXT NOT NULL,
	ord    INTEGER NOT NULL,
	path   TEXT NOT NULL,
	value  REAL NOT NULL,
	unit   TEXT NOT NULL,
	PRIMARY KEY (run_id, path)
);
CREATE TABLE IF NOT EXISTS devices (
	run_id   TEXT NOT NULL,
	name     TEXT NOT NULL,
	kind     TEXT NOT NULL,
	driver   TEXT NOT NULL,
	address  TEXT NOT NULL,
	seen_key TEXT NOT NULL,
	vendor   TEXT NOT NULL,
	model    TEXT NOT NULL,
	serial   TEXT NOT NULL,
	firmware TEXT NOT NULL,
	PRIMARY KEY (run_id, name)
);
CREATE INDEX IF NOT EXISTS devices_seen ON devices(seen_key, run_id);
CREATE TABLE IF NOT EXISTS suite_reports (
	file  TEXT PRIMARY KEY,
	mtime INTEGER NOT NULL,
	size  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS checks (
	file      TEXT NOT NULL,
	run_id    TEXT NOT NULL,
	metric    TEXT NOT NULL,
	condition TEXT NOT NULL,
	outcome   TEXT NOT NULL,
	low       REAL,
	high      REAL,
	baseline  REAL
);
CREATE INDEX IF NOT EXISTS checks_run ON checks(run_id, metric);
CREATE INDEX IF NOT EXISTS checks_file ON checks(file);
`

// OpenIndex opens (or creates) the index database at dbPath for the
// bundles under runsDir. The database is a cache: a file that is not one
// of ours, or of an older layout, is started afresh.
func OpenIndex(ctx context.Context, dbPath, runsDir string, headlines HeadlineFunc) (*Index, error) {
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o755); err != nil {
		return nil, fmt.Errorf("run index %s: %w", dbPath, err)
	}
	db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, fmt.Errorf("run index %s: %w", dbPath, err)
	}
	if err := initSchema(ctx, db); err != nil {
		db.Close()
		// A damaged cache is rebuilt, never trusted.
		_ = os.Remove(dbPath)
		if db, err = sql.Open("sqlite", "file:"+dbPath+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"); err != nil {
			return nil, fmt.Errorf("run index %s: %w", dbPath, err)
		}
		if err := initSchema(ctx, db); err != nil {
			db.Close()
			return nil, fmt.Errorf("run index %s: %w", dbPath, err)
		}
	}
	if headlines == nil {
		headlines = func(string) []string { return nil }
	}
	return &Index{db: db, runsDir: runsDir, headlines: headlines}, nil
}

// indexLayout is bumped when the tables change: an older cache is dropped.
const indexLayout = 2

func initSchema(ctx context.Context, db *sql.DB) error {
	var v int
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	if v != 0 && v != indexLayout {
		for _, t := range []string{"runs", "metrics", "devices", "suite_reports", "checks"} {
			if _, err := db.ExecContext(ctx, `DROP TABLE IF EXISTS `+t); err != nil {
				return err
			}
		}
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, `PRAGMA user_version = `+strconv.Itoa(indexLayout))
	return err
}

// Close closes the database.
func (ix *Index) Close() error { return ix.db.Close() }

// RunsDir is the directory the index follows.
func (ix *Index) RunsDir() string { return ix.runsDir }

// Generation counts the Syncs that changed the index.
func (ix *Index) Generation() uint64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.gen
}

// SyncStats says what a Sync changed.
type SyncStats struct {
	Added, Updated, Removed int
	// Skipped are directories without a readable manifest: not bundles.
	Skipped int
}

func (s SyncStats) changed() bool { return s.Added+s.Updated+s.Removed > 0 }

type stamp struct{ mtime, size int64 }

func statStamp(p string) stamp {
	fi, err := os.Stat(p)
	if err != nil {
		return stamp{}
	}
	return stamp{fi.ModTime().UnixNano(), fi.Size()}
}

// fullSyncEvery is how often Sync lists the whole runs directory even
// though its mtime did not move.
const fullSyncEvery = time.Minute

// Sync brings the index in step with the runs directory: a bundle
// directory not indexed, or whose manifest.json changed since (a running
// run updates it as it goes, and finalizing rewrites it), is read; an
// indexed bundle gone from disk is dropped. Suite reports under
// <runs>/suite-reports are followed the same way.
func (ix *Index) Sync(ctx context.Context) (SyncStats, error) {
	ix.syncMu.Lock()
	defer ix.syncMu.Unlock()
	var st SyncStats
	quick, dirStamp, repStamp := ix.quickSync()
	if !quick {
		ix.fullAt = time.Now()
	}
	known, err := ix.knownRuns(ctx, quick)
	if err != nil {
		return st, err
	}
	var names []string
	if quick {
		names = sortedKeys(known)
	} else if names, err = ix.bundleDirs(); err != nil {
		return st, err
	}
	seen, changed := ix.changedBundles(names, known)
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return st, fmt.Errorf("run index: %w", err)
	}
	defer tx.Rollback()
	if err := ix.applySync(ctx, tx, known, seen, changed, &st); err != nil {
		return st, err
	}
	sr := false
	if !quick {
		if sr, err = ix.syncSuiteReports(ctx, tx); err != nil {
			return st, err
		}
	}
	if err := tx.Commit(); err != nil {
		return st, fmt.Errorf("run index: %w", err)
	}
	ix.synced, ix.dirStamp, ix.repStamp = true, dirStamp, repStamp
	if st.changed() || sr {
		ix.mu.Lock()
		ix.gen++
		ix.mu.Unlock()
	}
	return st, nil
}

// quickSync says whether only the running bundles need looking at again,
// with the runs directory's and the suite reports' stamps now. A bundle
// added or removed changes the runs directory's mtime; a bundle changes
// only while it runs. So while the directory is as last seen, only the
// running bundles are looked at again (and every fullSyncEvery the whole
// directory, for what an mtime can miss: a clock step, a copy keeping
// times).
func (ix *Index) quickSync() (quick bool, dirStamp, repStamp stamp) {
	dirStamp = statStamp(ix.runsDir)
	repStamp = statStamp(filepath.Join(ix.runsDir, suiteReportsDir))
	// A directory changed within the mtime's granularity of the last look
	// may have changed again unseen: listed whole until it is older.
	settled := time.Since(time.Unix(0, max(dirStamp.mtime, repStamp.mtime))) > 2*time.Second
	quick = ix.synced && settled && dirStamp == ix.dirStamp && repStamp == ix.repStamp && time.Since(ix.fullAt) < fullSyncEvery
	return quick, dirStamp, repStamp
}

// knownRuns are the indexed bundles (only the running ones on a quick
// sync) with their manifests' stamps when indexed.
func (ix *Index) knownRuns(ctx context.Context, quick bool) (map[string]stamp, error) {
	known := map[string]stamp{}
	q := `SELECT dir, mtime, size FROM runs`
	if quick {
		q += ` WHERE status = 'running'`
	}
	rows, err := ix.db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("run index: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d string
		var s stamp
		if err := rows.Scan(&d, &s.mtime, &s.size); err != nil {
			return nil, fmt.Errorf("run index: %w", err)
		}
		known[d] = s
	}
	return known, nil
}

// bundleDirs lists the runs directory's subdirectories but the suite
// reports'.
func (ix *Index) bundleDirs() ([]string, error) {
	ents, err := os.ReadDir(ix.runsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list bundles under %s: %w", ix.runsDir, err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && e.Name() != suiteReportsDir {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// changedBundles are the named directories that hold a manifest (seen)
// and those whose manifest is not indexed as it is now (changed).
func (ix *Index) changedBundles(names []string, known map[string]stamp) (map[string]bool, []string) {
	seen := map[string]bool{}
	var changed []string
	for _, name := range names {
		fi, err := os.Stat(filepath.Join(ix.runsDir, name, "manifest.json"))
		if err != nil {
			continue
		}
		seen[name] = true
		s := stamp{fi.ModTime().UnixNano(), fi.Size()}
		if k, ok := known[name]; ok && k == s {
			continue
		}
		changed = append(changed, name)
	}
	return seen, changed
}

// applySync drops the indexed bundles gone from disk and (re)indexes the
// changed ones, counting each in st.
func (ix *Index) applySync(ctx context.Context, tx *sql.Tx, known map[string]stamp, seen map[string]bool, changed []string, st *SyncStats) error {
	for d := range known {
		if !seen[d] {
			if err := deleteRun(ctx, tx, `dir = ?`, d); err != nil {
				return err
			}
			st.Removed++
		}
	}
	for _, d := range changed {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, was := known[d]
		ok, err := ix.indexBundle(ctx, tx, d)
		if err != nil {
			return err
		}
		switch {
		case !ok:
			st.Skipped++
		case was:
			st.Updated++
		default:
			st.Added++
		}
	}
	return nil
}

func deleteRun(ctx context.Context, tx *sql.Tx, where string, arg any) error {
	var id string
	err := tx.QueryRowContext(ctx, `SELECT run_id FROM runs WHERE `+where, arg).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("run index: %w", err)
	}
	for _, q := range []string{`DELETE FROM runs WHERE run_id = ?`, `DELETE FROM metrics WHERE run_id = ?`, `DELETE FROM devices WHERE run_id = ?`} {
		if _, err := tx.ExecContext(ctx, q, id); err != nil {
			return fmt.Errorf("run index: drop %s: %w", id, err)
		}
	}
	return nil
}

// indexBundle reads one bundle directory's manifest (and summary, once
// the run ended) into the index; false when it is not a bundle.
func (ix *Index) indexBundle(ctx context.Context, tx *sql.Tx, name string) (bool, error) {
	dir := filepath.Join(ix.runsDir, name)
	mp := filepath.Join(dir, "manifest.json")
	fi, err := os.Stat(mp)
	if err != nil {
		return false, nil
	}
	raw, err := readBounded(mp)
	if err != nil {
		return false, nil
	}
	var m results.Manifest
	if json.Unmarshal(raw, &m) != nil || m.RunID == "" {
		return false, nil
	}
	if err := deleteRun(ctx, tx, `dir = ?`, name); err != nil {
		return false, err
	}
	// One run id in two directories (a copy): the newer directory wins.
	if err := deleteRun(ctx, tx, `run_id = ?`, m.RunID); err != nil {
		return false, err
	}
	var ended any
	if m.Ended != nil {
		ended = m.Ended.UnixNano()
	}
	var pr results.Progress
	if m.Progress != nil {
		pr = *m.Progress
	}
	var metrics []headlineMetric
	head := []string{}
	switch m.Status {
	case results.StatusFailed, results.StatusAborted:
		head = []string{shorten(string(m.Status)+": "+m.Reason, 160)}
	}
	if m.Status != results.StatusRunning {
		if s, err := readBounded(filepath.Join(dir, "summary.json")); err == nil {
			metrics = pickHeadlines(s, ix.headlines(m.Recipe.Name), maxHeadlines)
			if m.Status == results.StatusOK {
				for i, hm := range metrics {
					if i == 3 {
						break
					}
					head = append(head, hm.String())
				}
			}
		}
	}
	hj, _ := json.Marshal(head)
	lab := m.Lab.Name
	_, err = tx.ExecContext(ctx, `INSERT INTO runs (run_id, dir, recipe, version, status, reason, started, ended, simulated, lab, suite, suite_entry,
		steps_done, steps_total, last_step, headline, mtime, size) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		m.RunID, name, m.Recipe.Name, m.Recipe.Version, string(m.Status), m.Reason, m.Started.UnixNano(), ended, m.Lab.Simulated, lab,
		m.Labels["suite"], m.Labels["suite_entry"], pr.StepsDone, pr.StepsTotal, pr.LastStep, string(hj), fi.ModTime().UnixNano(), fi.Size())
	if err != nil {
		return false, fmt.Errorf("run index: add %s: %w", name, err)
	}
	for i, hm := range metrics {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO metrics (run_id, ord, path, value, unit) VALUES (?,?,?,?,?)`, m.RunID, i, hm.Path, hm.Value, hm.Unit); err != nil {
			return false, fmt.Errorf("run index: add %s: %w", name, err)
		}
	}
	for _, d := range m.Devices {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO devices (run_id, name, kind, driver, address, seen_key, vendor, model, serial, firmware) VALUES (?,?,?,?,?,?,?,?,?,?)`,
			m.RunID, d.Name, d.Kind, d.Driver, d.Address, seenKey(m, d), d.Identity.Vendor, d.Identity.Model, d.Identity.Serial, d.Identity.Firmware); err != nil {
			return false, fmt.Errorf("run index: add %s: %w", name, err)
		}
	}
	return true, nil
}

// seenKey names the physical device a run used: its normalised address
// (the lease key), or for a simulated lab, whose emulators listen on new
// ports each time, the lab's name and the device's.
func seenKey(m results.Manifest, d results.Device) string {
	if m.Lab.Simulated {
		return "simulated:" + m.Lab.Name + "/" + d.Name
	}
	return orchestrator.NormalizeAddress(d.Address)
}

func readBounded(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxMetaBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxMetaBytes {
		return nil, fmt.Errorf("%s: more than the %d bytes a bundle's metadata may hold", p, maxMetaBytes)
	}
	return b, nil
}

// headlineMetric is one headline number of a run.
type headlineMetric struct {
	Path  string  `json:"metric"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

func (h headlineMetric) String() string {
	s := h.Path + " " + strconv.FormatFloat(h.Value, 'g', 4, 64)
	if h.Unit != "" {
		s += " " + h.Unit
	}
	return s
}

// pickHeadlines is up to n of a summary's numbers: those the recipe's
// headline patterns match, in the patterns' order, else the summary's
// first numbers (as `results list` picks them).
func pickHeadlines(summary []byte, patterns []string, n int) []headlineMetric {
	ms, err := results.FlattenSummary(summary)
	if err != nil {
		return nil
	}
	var out []headlineMetric
	seen := map[string]bool{}
	add := func(m results.Metric) {
		if v, ok := m.Value.(float64); ok && !seen[m.Path] && len(out) < n {
			seen[m.Path] = true
			out = append(out, headlineMetric{Path: m.Path, Value: v, Unit: results.MetricUnit(m.Path)})
		}
	}
	for _, pat := range patterns {
		for _, m := range ms {
			if orchestrator.MatchMetric(pat, m.Path) {
				add(m)
			}
		}
	}
	if len(out) == 0 {
		for _, m := range ms {
			add(m)
		}
	}
	return out
}

func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// suiteReportsDir is where `exp run --suite` keeps its reports (the JSON
// of --output json), beside the bundles it wrote.
const suiteReportsDir = "suite-reports"

// suiteReport is the part of a suite report the index reads.
type suiteReport struct {
	Suite   string `json:"suite"`
	Entries []struct {
		ID     string `json:"id"`
		RunID  string `json:"run_id"`
		Checks []struct {
			Metric    string   `json:"metric"`
			Condition string   `json:"condition"`
			Outcome   string   `json:"outcome"`
			Low       *float64 `json:"band_low"`
			High      *float64 `json:"band_high"`
			Baseline  any      `json:"baseline"`
		} `json:"checks"`
	} `json:"entries"`
}

// syncSuiteReports follows the suite reports' directory; it reports
// whether anything changed.
func (ix *Index) syncSuiteReports(ctx context.Context, tx *sql.Tx) (bool, error) {
	known := map[string]stamp{}
	rows, err := tx.QueryContext(ctx, `SELECT file, mtime, size FROM suite_reports`)
	if err != nil {
		return false, fmt.Errorf("run index: %w", err)
	}
	for rows.Next() {
		var f string
		var s stamp
		if err := rows.Scan(&f, &s.mtime, &s.size); err != nil {
			rows.Close()
			return false, fmt.Errorf("run index: %w", err)
		}
		known[f] = s
	}
	rows.Close()
	dir := filepath.Join(ix.runsDir, suiteReportsDir)
	ents, _ := os.ReadDir(dir)
	seen := map[string]bool{}
	changed := false
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		seen[e.Name()] = true
		s := stamp{fi.ModTime().UnixNano(), fi.Size()}
		if k, ok := known[e.Name()]; ok && k == s {
			continue
		}
		changed = true
		if _, err := tx.ExecContext(ctx, `DELETE FROM checks WHERE file = ?`, e.Name()); err != nil {
			return false, fmt.Errorf("run index: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO suite_reports (file, mtime, size) VALUES (?,?,?)`, e.Name(), s.mtime, s.size); err != nil {
			return false, fmt.Errorf("run index: %w", err)
		}
		raw, err := readBounded(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var rep suiteReport
		if json.Unmarshal(raw, &rep) != nil {
			continue
		}
		for _, en := range rep.Entries {
			if en.RunID == "" {
				continue
			}
			for _, c := range en.Checks {
				if c.Metric == "" {
					continue
				}
				var base any
				if f, ok := c.Baseline.(float64); ok {
					base = f
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO checks (file, run_id, metric, condition, outcome, low, high, baseline) VALUES (?,?,?,?,?,?,?,?)`,
					e.Name(), en.RunID, c.Metric, c.Condition, c.Outcome, c.Low, c.High, base); err != nil {
					return false, fmt.Errorf("run index: %w", err)
				}
			}
		}
	}
	for f := range known {
		if !seen[f] {
			changed = true
			if _, err := tx.ExecContext(ctx, `DELETE FROM checks WHERE file = ?`, f); err != nil {
				return false, fmt.Errorf("run index: %w", err)
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM suite_reports WHERE file = ?`, f); err != nil {
				return false, fmt.Errorf("run index: %w", err)
			}
		}
	}
	return changed, nil
}

// Run is one indexed run, as the API lists it.
type Run struct {
	RunID      string     `json:"run_id"`
	Recipe     string     `json:"recipe"`
	Version    string     `json:"recipe_version"`
	Status     string     `json:"status"`
	Reason     string     `json:"reason"`
	Started    time.Time  `json:"started"`
	Ended      *time.Time `json:"ended"`
	Seconds    *float64   `json:"duration_seconds"`
	Simulated  bool       `json:"simulated"`
	Lab        string     `json:"lab"`
	Suite      string     `json:"suite"`
	SuiteEntry string     `json:"suite_entry"`
	StepsDone  int        `json:"steps_done"`
	StepsTotal int        `json:"steps_total"`
	LastStep   string     `json:"last_step"`
	Headline   []string   `json:"headline"`
	Dir        string     `json:"-"`
}

// RunFilter selects runs; empty fields select all.
type RunFilter struct {
	Recipe, Status, Suite, SuiteEntry string
	// Before lists runs older than this run id (paging backwards).
	Before string
	// Limit caps the rows (0: 100; -1: no cap); newest first.
	Limit int
}

const runCols = `run_id, dir, recipe, version, status, reason, started, ended, simulated, lab, suite, suite_entry, steps_done, steps_total, last_step, headline`

func scanRun(sc interface{ Scan(...any) error }) (Run, error) {
	var r Run
	var started int64
	var ended sql.NullInt64
	var head string
	if err := sc.Scan(&r.RunID, &r.Dir, &r.Recipe, &r.Version, &r.Status, &r.Reason, &started, &ended, &r.Simulated, &r.Lab, &r.Suite, &r.SuiteEntry,
		&r.StepsDone, &r.StepsTotal, &r.LastStep, &head); err != nil {
		return r, err
	}
	r.Started = time.Unix(0, started).UTC()
	if ended.Valid {
		e := time.Unix(0, ended.Int64).UTC()
		r.Ended = &e
		s := e.Sub(r.Started).Seconds()
		r.Seconds = &s
	}
	r.Headline = []string{}
	_ = json.Unmarshal([]byte(head), &r.Headline)
	return r, nil
}

// Runs lists indexed runs, newest first.
func (ix *Index) Runs(ctx context.Context, f RunFilter) ([]Run, error) {
	var where []string
	var args []any
	for _, c := range []struct{ col, v string }{{"recipe", f.Recipe}, {"status", f.Status}, {"suite", f.Suite}, {"suite_entry", f.SuiteEntry}} {
		if c.v != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	if f.Before != "" {
		where = append(where, "run_id < ?")
		args = append(args, f.Before)
	}
	q := `SELECT ` + runCols + ` FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	lim := f.Limit
	if lim == 0 {
		lim = 100
	}
	q += ` ORDER BY run_id DESC LIMIT ` + strconv.Itoa(lim)
	rows, err := ix.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("run index: %w", err)
	}
	defer rows.Close()
	out := []Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("run index: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ErrNoRun is returned for a run id the index does not hold.
var ErrNoRun = errors.New("no such run")

// Path is a run's bundle directory.
func (ix *Index) Path(r Run) string { return filepath.Join(ix.runsDir, r.Dir) }

// Run is one indexed run by id.
func (ix *Index) Run(ctx context.Context, id string) (Run, error) {
	r, err := scanRun(ix.db.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE run_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("run %s: %w", id, ErrNoRun)
	}
	if err != nil {
		return r, fmt.Errorf("run index: %w", err)
	}
	return r, nil
}

// Previous is the newest run of the same recipe before id that finished
// ok, or ErrNoRun.
func (ix *Index) Previous(ctx context.Context, r Run) (Run, error) {
	p, err := scanRun(ix.db.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE recipe = ? AND run_id < ? AND status = 'ok' ORDER BY run_id DESC LIMIT 1`, r.Recipe, r.RunID))
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("no run of %s before %s: %w", r.Recipe, r.RunID, ErrNoRun)
	}
	if err != nil {
		return p, fmt.Errorf("run index: %w", err)
	}
	return p, nil
}

// Metrics is a run's headline numbers as indexed.
func (ix *Index) Metrics(ctx context.Context, id string) ([]headlineMetric, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT path, value, unit FROM metrics WHERE run_id = ? ORDER BY ord`, id)
	if err != nil {
		return nil, fmt.Errorf("run index: %w", err)
	}
	defer rows.Close()
	out := []headlineMetric{}
	for rows.Next() {
		var m headlineMetric
		if err := rows.Scan(&m.Path, &m.Value, &m.Unit); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// Count is how many runs the index holds.
func (ix *Index) Count(ctx context.Context) (int, error) {
	var n int
	err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM runs`).Scan(&n)
	return n, err
}

// SeenDevice is a device as the newest run that used it saw it.
type SeenDevice struct {
	Name     string    `json:"name"`
	Kind     string    `json:"kind"`
	Driver   string    `json:"driver"`
	Address  string    `json:"address"`
	Vendor   string    `json:"vendor"`
	Model    string    `json:"model"`
	Serial   string    `json:"serial"`
	Firmware string    `json:"firmware"`
	RunID    string    `json:"run_id"`
	Seen     time.Time `json:"seen"`
}

// LastSeen is, per device (normalised address; lab and name for a
// simulated lab), the identity the newest run that
// used the device recorded.
func (ix *Index) LastSeen(ctx context.Context) (map[string]SeenDevice, error) {
	// The newest run per device comes from the (seen_key, run_id) index
	// alone; only those rows are read.
	rows, err := ix.db.QueryContext(ctx, `WITH last AS (SELECT seen_key, MAX(run_id) AS run_id FROM devices GROUP BY seen_key)
		SELECT d.seen_key, d.name, d.kind, d.driver, d.address, d.vendor, d.model, d.serial, d.firmware, d.run_id, r.started
		FROM last JOIN devices d ON d.seen_key = last.seen_key AND d.run_id = last.run_id JOIN runs r ON r.run_id = d.run_id`)
	if err != nil {
		return nil, fmt.Errorf("run index: %w", err)
	}
	defer rows.Close()
	out := map[string]SeenDevice{}
	for rows.Next() {
		var d SeenDevice
		var key string
		var started int64
		if err := rows.Scan(&key, &d.Name, &d.Kind, &d.Driver, &d.Address, &d.Vendor, &d.Model, &d.Serial, &d.Firmware, &d.RunID, &started); err != nil {
			return nil, err
		}
		d.Seen = time.Unix(0, started).UTC()
		out[key] = d
	}
	return out, rows.Err()
}

// sortedKeys is a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
