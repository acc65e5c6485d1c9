// Package results writes and reads result bundles (v1): one directory per
// run holding manifest.json, events.jsonl, data/*.csv with datapackage.json,
// summary.json, per-device transcripts, report.html and SHA256SUMS. A bundle
// is written as the run goes, never overwritten, and verifiable with
// standard tools (`sha256sum -c SHA256SUMS`).
package results

import (
	"compress/gzip"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"testbed/internal/redact"
)

// Schema names the bundle format this testbed writes: SchemaName at
// SchemaVersion (schema.go). Readers accept it and every older version.
const Schema = "testbed.bundle/v1"

// Status is how a run ended.
type Status string

// Run statuses. A bundle whose manifest still says running was never
// finalized: the process died.
const (
	StatusRunning Status = "running"
	StatusOK      Status = "ok"
	StatusFailed  Status = "failed"
	StatusAborted Status = "aborted"
)

// Manifest describes a run.
type Manifest struct {
	Schema   string          `json:"schema"`
	RunID    string          `json:"run_id"`
	Recipe   RecipeRef       `json:"recipe"`
	Params   []Param         `json:"params"`
	Seed     uint64          `json:"seed"`
	Status   Status          `json:"status"`
	Reason   string          `json:"reason,omitempty"`
	Progress *Progress       `json:"progress,omitempty"`
	Started  time.Time       `json:"started"`
	Ended    *time.Time      `json:"ended,omitempty"`
	Lab      Lab             `json:"lab"`
	Devices  []Device        `json:"devices"`
	Cleanup  []CleanupAction `json:"cleanup,omitempty"`
	Software Software        `json:"software"`
	Programs []Program       `json:"programs,omitempty"`
	Command  []string        `json:"command,omitempty"`
	// Labels tie a run to what asked for it, e.g. suite and suite_entry.
	Labels map[string]string `json:"labels,omitempty"`
	// LabRestored says whether every cleanup action succeeded (absent in
	// bundles written before it was recorded).
	LabRestored *bool `json:"lab_restored,omitempty"`
	// Recovered lists what this run undid, before it started, of what an
	// earlier run that died left on its devices (from their undo journals).
	Recovered []CleanupAction `json:"recovered,omitempty"`
}

// RecipeRef names a recipe and its version.
type RecipeRef struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Param is one resolved parameter.
type Param struct {
	Name   string `json:"name"`
	Value  any    `json:"value"`
	Type   string `json:"type"`
	Unit   string `json:"unit,omitempty"`
	Source string `json:"source"`
}

// Progress says how far a run got.
type Progress struct {
	StepsDone  int    `json:"steps_done"`
	StepsTotal int    `json:"steps_total"`
	LastStep   string `json:"last_step,omitempty"`
}

// Lab is the lab a run used.
type Lab struct {
	Simulated     bool   `json:"simulated"`
	Name          string `json:"name"`
	InventoryPath string `json:"inventory_path"`
	Inventory     any    `json:"inventory"`
}

// Identity is what a device reported itself to be.
type Identity struct {
	Vendor   string `json:"vendor"`
	Model    string `json:"model"`
	Serial   string `json:"serial"`
	Firmware string `json:"firmware"`
}

// Device is one device the run used.
type Device struct {
	Name     string   `json:"name"`
	Kind     string   `json:"kind"`
	Driver   string   `json:"driver"`
	Address  string   `json:"address"`
	Identity Identity `json:"identity"`
	Roles    []string `json:"roles,omitempty"`
}

// CleanupAction is one undo action run at the end and its outcome.
type CleanupAction struct {
	Action string `json:"action"`
	Device string `json:"device"`
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
	// FromRun is the run whose journal held the action (recovered ones).
	FromRun string `json:"from_run,omitempty"`
}

// Software is what produced the bundle.
type Software struct {
	TestbedVersion string `json:"testbed_version"`
	VCSRevision    string `json:"vcs_revision,omitempty"`
	VCSModified    bool   `json:"vcs_modified"`
	GoVersion      string `json:"go_version"`
	OS             string `json:"os"`
	Arch           string `json:"arch"`
}

// CurrentSoftware describes this binary.
func CurrentSoftware(version string) Software {
	s := Software{TestbedVersion: version, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				s.VCSRevision = kv.Value
			case "vcs.modified":
				s.VCSModified = kv.Value == "true"
			}
		}
	}
	return s
}

var slugRe = regexp.MustCompile(`[^a-z0-9]+`)

// NewRunID returns an id that sorts by time and is safe as a directory
// name: 20261122T130405.123Z-attenuation-sweep-3fa9c2.
func NewRunID(t time.Time, recipe string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	slug := strings.Trim(slugRe.ReplaceAllString(strings.ToLower(recipe), "-"), "-")
	if slug == "" {
		slug = "run"
	}
	return t.UTC().Format("20060102T150405.000Z") + "-" + slug + "-" + hex.EncodeToString(b[:])
}

// Options configure a bundle writer.
type Options struct {
	// Secrets are replaced by "***" in every text written (also as they
	// appear inside JSON strings and HTML). Besides them, every text
	// written has its URL passwords masked (http://user:***@host), and the
	// manifest its secret-looking values: see redactManifest.
	Secrets []string
	Now     func() time.Time
}

// Bundle is a bundle being written.
type Bundle struct {
	dir string
	now func() time.Time

	secMu   sync.RWMutex
	secrets []string

	mu          sync.Mutex
	m           Manifest
	events      *os.File
	tables      []*TableWriter
	files       []DataFile
	transcripts []*transcriptWriter
	final       bool
	// inv is the manifest's inventory as redactManifest left it: masked,
	// so that the next UpdateManifest need not go through it again.
	inv any
	// invJSON is the JSON of the inventory invJSONOf (the same map), for
	// writeManifest to write again without encoding it again.
	invJSON   json.RawMessage
	invJSONOf any
}

// Create makes root/<RunID> and writes the manifest at once. It refuses a
// directory that exists: nothing is ever overwritten.
func Create(root string, m Manifest, opts Options) (*Bundle, error) {
	if m.RunID == "" {
		return nil, errors.New("bundle: manifest has no run id")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	dir := filepath.Join(root, m.RunID)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	b := &Bundle{dir: dir, now: opts.Now}
	if b.now == nil {
		b.now = time.Now
	}
	b.addSecrets(opts.Secrets)
	b.addSecrets(redactManifest(&m, nil))
	b.inv = m.Lab.Inventory
	m.Schema = Schema
	if m.Status == "" {
		m.Status = StatusRunning
	}
	if m.Started.IsZero() {
		m.Started = b.now()
	}
	b.m = m
	if err := b.writeManifest(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "events.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	b.events = f
	return b, nil
}

// Dir is the bundle's directory.
func (b *Bundle) Dir() string { return b.dir }

// Manifest returns a copy of the manifest.
func (b *Bundle) Manifest() Manifest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m
}

// addSecrets adds values to scrub, in every form they may be written in.
func (b *Bundle) addSecrets(values []string) {
	b.secMu.Lock()
	defer b.secMu.Unlock()
	for _, v := range values {
		if v == "" {
			continue
		}
		for _, f := range redact.Forms(v) {
			if !slices.Contains(b.secrets, f) {
				b.secrets = append(b.secrets, f)
			}
		}
	}
	// Longest first, so that a secret containing another is replaced whole.
	slices.SortStableFunc(b.secrets, func(x, y string) int { return len(y) - len(x) })
}

// scrub removes every known secret and every URL password from s.
func (b *Bundle) scrub(s string) string {
	b.secMu.RLock()
	defer b.secMu.RUnlock()
	return redact.Text(s, b.secrets)
}

// redactManifest masks, in place, what in a manifest looks secret though
// no credential reference named it: the values of secret-looking keys
// (api_token, password, ...) in the inventory as used, in the labels, and
// of parameters so named, also as "name=value" in the command line; and
// the passwords of URLs (device addresses above all). It returns the
// values it masked, to be hunted in the bundle's other files. The
// inventory is replaced by a redacted copy: the caller's is not changed.
// An inventory that is still the copy done (the same map) was redacted
// before: masking it again changes nothing and finds nothing (masked
// values are Mask, passwords in URLs Mask too), and after each step of a
// run it was most of the redaction's CPU (a bench's inventory is large).
func redactManifest(m *Manifest, done any) []string {
	var found []string
	add := func(v any) any {
		out, f := redact.Value(v)
		found = append(found, f...)
		return out
	}
	if m.Lab.Inventory != nil && !sameMap(m.Lab.Inventory, done) {
		m.Lab.Inventory = add(m.Lab.Inventory)
	}
	m.Devices = slices.Clone(m.Devices)
	for i := range m.Devices {
		m.Devices[i].Address = add(m.Devices[i].Address).(string)
	}
	m.Params = slices.Clone(m.Params)
	for i, p := range m.Params {
		if redact.SecretKey(p.Name) {
			if v, ok := p.Value.(string); ok && len(v) >= redact.MinScrubLen {
				found = append(found, v)
			}
			m.Params[i].Value = redact.Mask
		} else {
			m.Params[i].Value = add(p.Value)
		}
	}
	m.Command = slices.Clone(m.Command)
	for i, arg := range m.Command {
		if k, v, ok := strings.Cut(arg, "="); ok && redact.SecretKey(strings.TrimLeft(k, "-")) {
			if len(v) >= redact.MinScrubLen {
				found = append(found, v)
			}
			m.Command[i] = k + "=" + redact.Mask
		} else {
			m.Command[i] = add(arg).(string)
		}
	}
	if m.Labels != nil {
		m.Labels = add(m.Labels).(map[string]string)
	}
	return found
}

// sameMap reports whether a and b are the same map (not equal ones).
func sameMap(a, b any) bool {
	ra, rb := reflect.ValueOf(a), reflect.ValueOf(b)
	return ra.Kind() == reflect.Map && rb.Kind() == reflect.Map && ra.Type() == rb.Type() && ra.UnsafePointer() == rb.UnsafePointer()
}

// writeFile writes a scrubbed file atomically (temporary file + rename).
func (b *Bundle) writeFile(rel string, data []byte) error {
	p := filepath.Join(b.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.scrub(string(data))), 0o644); err != nil {
		return fmt.Errorf("bundle: write %s: %w", rel, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("bundle: write %s: %w", rel, err)
	}
	return nil
}

func (b *Bundle) writeManifest() error {
	// The inventory, most of the manifest, is encoded once while it is
	// the same map: the manifest is rewritten after every step, and
	// encoding it was half of that. A json.RawMessage is written as its
	// compacted bytes, HTML-escaped as json.Marshal escapes, and the
	// whole then indented: the same bytes as encoding the map in place.
	m := b.m
	if inv := m.Lab.Inventory; reflect.ValueOf(inv).Kind() == reflect.Map {
		if !sameMap(inv, b.invJSONOf) {
			b.invJSON, b.invJSONOf = nil, nil
			if raw, err := json.Marshal(inv); err == nil {
				b.invJSON, b.invJSONOf = raw, inv
			}
		}
		if b.invJSON != nil {
			m.Lab.Inventory = b.invJSON
		}
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("bundle: manifest: %w", err)
	}
	return b.writeFile("manifest.json", append(data, '\n'))
}

// UpdateManifest changes the manifest and rewrites it atomically.
func (b *Bundle) UpdateManifest(fn func(*Manifest)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.final {
		return errors.New("bundle: already finalized")
	}
	fn(&b.m)
	b.addSecrets(redactManifest(&b.m, b.inv))
	b.inv = b.m.Lab.Inventory
	return b.writeManifest()
}

// Event is one line of events.jsonl.
type Event struct {
	Time    time.Time      `json:"time"`
	Type    string         `json:"type"`
	Step    string         `json:"step,omitempty"`
	Device  string         `json:"device,omitempty"`
	Message string         `json:"message,omitempty"`
	Fields  map[string]any `json:"fields,omitempty"`
}

// Event appends an event, written through so a crash loses nothing.
func (b *Bundle) Event(e Event) error {
	if e.Time.IsZero() {
		e.Time = b.now()
	}
	if e.Fields != nil {
		// A field named like a secret (api_token) is masked, and its
		// value hunted through the rest of the bundle from now on.
		v, found := redact.Value(e.Fields)
		e.Fields = v.(map[string]any)
		b.addSecrets(found)
	}
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("bundle: event: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.final {
		return errors.New("bundle: already finalized")
	}
	_, err = b.events.WriteString(b.scrub(string(data)) + "\n")
	return err
}

// Field is a table column.
type Field struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Unit        string `json:"unit,omitempty"`
	Description string `json:"description,omitempty"`
}

// Plot asks the report to draw a table as one line figure; Figures is
// the richer form and wins when both are set.
type Plot struct {
	X, Y, Series string
	LogX, LogY   bool
	Title        string
}

// Table declares a data table: data/<Name>.csv.
type Table struct {
	Name        string
	Title       string
	Description string
	Fields      []Field
	Plot        *Plot
	// Figures are drawn from the table's rows in the report and written
	// as figures/<name>.svg.
	Figures []Figure
	// Compress writes data/<Name>.csv.gz (gzip) instead: for tables of
	// per-trial samples. Rows reach the file every compressFlushRows rows
	// and at the end, so an interrupted run keeps all but the last few.
	Compress bool
}

// File is the table's path in the bundle.
func (t Table) File() string {
	if t.Compress {
		return "data/" + t.Name + ".csv.gz"
	}
	return "data/" + t.Name + ".csv"
}

const compressFlushRows = 4096

// TableWriter appends rows to a table.
type TableWriter struct {
	b    *Bundle
	t    Table
	f    *os.File
	gz   *gzip.Writer // Compress
	w    *csv.Writer
	rows int

	// A held writer (Hold) keeps its rows until Commit hands them to its
	// parent.
	parent *TableWriter
	hmu    sync.Mutex
	held   [][]string
}

var fieldTypes = []string{"string", "number", "integer", "boolean", "datetime"}

// CreateTable writes the table's header row now.
func (b *Bundle) CreateTable(t Table) (*TableWriter, error) {
	if !regexp.MustCompile(`^[a-z0-9_\-]+$`).MatchString(t.Name) {
		return nil, fmt.Errorf("bundle: table name %q: use lower-case letters, digits, _ and -", t.Name)
	}
	var header []string
	for _, f := range t.Fields {
		if !slices.Contains(fieldTypes, f.Type) {
			return nil, fmt.Errorf("bundle: table %s field %s: type %q is not one of %v", t.Name, f.Name, f.Type, fieldTypes)
		}
		header = append(header, f.Name)
	}
	if err := t.validateFigures(); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, x := range b.tables {
		if x.t.Name == t.Name {
			return nil, fmt.Errorf("bundle: table %s declared twice", t.Name)
		}
		for _, f := range x.t.figures() {
			for _, g := range t.figures() {
				if f.Name == g.Name {
					return nil, fmt.Errorf("bundle: table %s: figure %q is also table %s's", t.Name, g.Name, x.t.Name)
				}
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(b.dir, "data"), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(b.dir, filepath.FromSlash(t.File())), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("bundle: table %s: %w", t.Name, err)
	}
	tw := &TableWriter{b: b, t: t, f: f, w: csv.NewWriter(f)}
	if t.Compress {
		tw.gz = gzip.NewWriter(f)
		tw.w = csv.NewWriter(tw.gz)
	}
	if err := tw.w.Write(header); err != nil {
		f.Close()
		return nil, err
	}
	if err := tw.flush(true); err != nil {
		f.Close()
		return nil, err
	}
	b.tables = append(b.tables, tw)
	return tw, tw.w.Error()
}

// Write appends one row, one value per field, flushed at once.
func (tw *TableWriter) Write(values ...any) error {
	if len(values) != len(tw.t.Fields) {
		return fmt.Errorf("bundle: table %s: %d values for %d fields", tw.t.Name, len(values), len(tw.t.Fields))
	}
	rec := make([]string, len(values))
	for i, v := range values {
		rec[i] = tw.b.scrub(cell(v))
	}
	if tw.parent != nil {
		tw.hmu.Lock()
		defer tw.hmu.Unlock()
		tw.held = append(tw.held, rec)
		return nil
	}
	tw.b.mu.Lock()
	defer tw.b.mu.Unlock()
	return tw.writeLocked(rec)
}

// writeLocked appends a row, under the bundle's lock.
func (tw *TableWriter) writeLocked(rec []string) error {
	if tw.b.final {
		return errors.New("bundle: already finalized")
	}
	if err := tw.w.Write(rec); err != nil {
		return err
	}
	tw.rows++
	return tw.flush(tw.gz == nil || tw.rows%compressFlushRows == 0)
}

// Hold returns a writer of the same table that keeps its rows until its
// Commit appends them to this table, in one piece: work that runs at the
// same time as other work writes through one, and the rows land in the
// order the commits come, not in the order the rows were measured.
func (tw *TableWriter) Hold() *TableWriter {
	return &TableWriter{b: tw.b, t: tw.t, parent: tw}
}

// Commit appends the rows a held writer (Hold) kept to its table and
// forgets them; on a writer that was not held it does nothing.
func (tw *TableWriter) Commit() error {
	if tw.parent == nil {
		return nil
	}
	tw.hmu.Lock()
	rows := tw.held
	tw.held = nil
	tw.hmu.Unlock()
	if len(rows) == 0 {
		return nil
	}
	tw.b.mu.Lock()
	defer tw.b.mu.Unlock()
	for _, rec := range rows {
		if err := tw.parent.writeLocked(rec); err != nil {
			return fmt.Errorf("bundle: table %s: %w", tw.t.Name, err)
		}
	}
	return nil
}

// flush pushes buffered rows to the file: always for plain tables, every
// compressFlushRows rows for compressed ones (a gzip flush costs bytes).
func (tw *TableWriter) flush(now bool) error {
	if !now {
		return nil
	}
	tw.w.Flush()
	if err := tw.w.Error(); err != nil {
		return err
	}
	if tw.gz != nil {
		return tw.gz.Flush()
	}
	return nil
}

// close ends the table's file (the gzip trailer for compressed ones).
func (tw *TableWriter) close() error {
	err := tw.flush(true)
	if tw.gz != nil {
		err = errors.Join(err, tw.gz.Close())
	}
	return errors.Join(err, tw.f.Close())
}

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return ""
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case *float64:
		if x == nil {
			return ""
		}
		return cell(*x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

// transcriptWriter scrubs secrets from each write.
type transcriptWriter struct {
	b  *Bundle
	mu sync.Mutex
	f  *os.File
}

func (t *transcriptWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return 0, os.ErrClosed
	}
	if _, err := t.f.WriteString(t.b.scrub(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (t *transcriptWriter) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return nil
	}
	err := t.f.Close()
	t.f = nil
	return err
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Transcript opens transcripts/<device>.log for appending.
func (b *Bundle) Transcript(device string) (io.WriteCloser, error) {
	name := unsafeName.ReplaceAllString(device, "_")
	if err := os.MkdirAll(filepath.Join(b.dir, "transcripts"), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(b.dir, "transcripts", name+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("bundle: transcript %s: %w", device, err)
	}
	t := &transcriptWriter{b: b, f: f}
	b.mu.Lock()
	b.transcripts = append(b.transcripts, t)
	b.mu.Unlock()
	return t, nil
}

// DataFile is a file a recipe exports beside its tables, under data/: a
// configuration snippet, a document a controller loads. datapackage.json
// lists it as a plain data resource.
type DataFile struct {
	// Path is below data/: letters, digits, '_', '-', '.', and '/' between
	// directories.
	Path        string
	Mediatype   string
	Description string
}

var dataFileRe = regexp.MustCompile(`^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*(/[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*)*$`)

// WriteDataFile writes data/<f.Path> once (scrubbed, atomically). It
// refuses a path a table or an earlier file holds: nothing is overwritten.
func (b *Bundle) WriteDataFile(f DataFile, data []byte) error {
	if !dataFileRe.MatchString(f.Path) {
		return fmt.Errorf("bundle: data file %q: use letters, digits, _, -, . and / between names", f.Path)
	}
	rel := "data/" + f.Path
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.final {
		return errors.New("bundle: already finalized")
	}
	for _, t := range b.tables {
		if t.t.File() == rel {
			return fmt.Errorf("bundle: data file %s is table %s", rel, t.t.Name)
		}
	}
	for _, x := range b.files {
		if x.Path == f.Path {
			return fmt.Errorf("bundle: data file %s written twice", rel)
		}
	}
	if err := b.writeFile(rel, data); err != nil {
		return err
	}
	b.files = append(b.files, f)
	return nil
}

// WriteSummary writes summary.json.
func (b *Bundle) WriteSummary(v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("bundle: summary: %w", err)
	}
	return b.writeFile("summary.json", append(data, '\n'))
}

// Finalize closes every file, records the outcome, writes
// datapackage.json, report.html and the manifest, then SHA256SUMS last.
func (b *Bundle) Finalize(status Status, reason string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.final {
		return errors.New("bundle: already finalized")
	}
	b.final = true
	var errs []error
	errs = append(errs, b.events.Close())
	for _, t := range b.tables {
		errs = append(errs, t.close())
	}
	for _, t := range b.transcripts {
		errs = append(errs, t.Close())
	}
	end := b.now()
	b.m.Status, b.m.Reason, b.m.Ended = status, reason, &end
	figs, err := b.buildFigures()
	errs = append(errs, err)
	for _, fd := range figs {
		errs = append(errs, b.writeFile(fd.Path, []byte(xmlHeader+fd.SVG()+"\n")))
	}
	errs = append(errs, b.writeDataPackage(figs), b.writeManifest())
	report, err := b.renderReport(figs)
	errs = append(errs, err)
	if err == nil {
		errs = append(errs, b.writeFile("report.html", report))
	}
	errs = append(errs, writeSums(b.dir))
	return errors.Join(errs...)
}

const xmlHeader = `<?xml version="1.0" encoding="UTF-8" standalone="no"?>` + "\n"

// buildFigures reads every table with figures back from the bundle and
// builds its figures, in declaration order.
func (b *Bundle) buildFigures() ([]FigureData, error) {
	var out []FigureData
	var errs []error
	for _, tw := range b.tables {
		fs := tw.t.figures()
		if len(fs) == 0 {
			continue
		}
		fds, err := buildTableFigures(b.dir, tw.t.File(), fs, tw.t.Fields)
		if err != nil {
			errs = append(errs, fmt.Errorf("bundle: figures of table %s: %w", tw.t.Name, err))
			continue
		}
		out = append(out, fds...)
	}
	return out, errors.Join(errs...)
}

func (b *Bundle) writeDataPackage(figs []FigureData) error {
	type schema struct {
		Fields []Field `json:"fields"`
	}
	type resource struct {
		Name        string `json:"name"`
		Path        string `json:"path"`
		Profile     string `json:"profile"`
		Format      string `json:"format"`
		Mediatype   string `json:"mediatype"`
		Encoding    string `json:"encoding"`
		Title       string `json:"title,omitempty"`
		Description string `json:"description,omitempty"`
		Compression string `json:"compression,omitempty"`
		Schema      schema `json:"schema"`
	}
	// Figures are a custom property of the package (the profile keeps
	// resources tabular): each names its table, file and how it is drawn,
	// enough to draw it again from the data.
	dp := struct {
		Name      string     `json:"name"`
		Profile   string     `json:"profile"`
		Resources []resource `json:"resources"`
		Figures   []Figure   `json:"figures"`
	}{Name: strings.ToLower(unsafeName.ReplaceAllString(b.m.RunID, "-")), Profile: "tabular-data-package", Resources: []resource{}, Figures: []Figure{}}
	for _, fd := range figs {
		dp.Figures = append(dp.Figures, fd.Figure)
	}
	for _, t := range b.tables {
		fields := slices.Clone(t.t.Fields)
		for i := range fields {
			if fields[i].Unit != "" && !strings.Contains(fields[i].Description, "unit:") {
				fields[i].Description = strings.TrimSpace(fields[i].Description + " (unit: " + fields[i].Unit + ")")
			}
		}
		r := resource{Name: strings.ReplaceAll(t.t.Name, "_", "-"), Path: t.t.File(),
			Profile: "tabular-data-resource", Format: "csv", Mediatype: "text/csv", Encoding: "utf-8",
			Title: t.t.Title, Description: t.t.Description, Schema: schema{Fields: fields}}
		if t.t.Compress {
			r.Compression = "gz"
		}
		dp.Resources = append(dp.Resources, r)
	}
	var files []any
	for _, f := range b.files {
		files = append(files, struct {
			Name        string `json:"name"`
			Path        string `json:"path"`
			Profile     string `json:"profile"`
			Mediatype   string `json:"mediatype,omitempty"`
			Description string `json:"description,omitempty"`
		}{Name: strings.ToLower(unsafeName.ReplaceAllString(f.Path, "-")), Path: "data/" + f.Path, Profile: "data-resource",
			Mediatype: f.Mediatype, Description: f.Description})
	}
	var data []byte
	var err error
	if len(files) == 0 {
		data, err = json.MarshalIndent(dp, "", "  ")
	} else {
		// Not every resource is a table: the package is a plain data
		// package (Frictionless), its tables still tabular resources.
		all := make([]any, 0, len(dp.Resources)+len(files))
		for _, r := range dp.Resources {
			all = append(all, r)
		}
		data, err = json.MarshalIndent(struct {
			Name      string `json:"name"`
			Profile   string `json:"profile"`
			Resources []any  `json:"resources"`
		}{dp.Name, "data-package", append(all, files...)}, "", "  ")
	}
	if err != nil {
		return err
	}
	return b.writeFile("datapackage.json", append(data, '\n'))
}
