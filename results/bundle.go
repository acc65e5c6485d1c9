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
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
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
	// Secrets are replaced by "***" in every text written.
	Secrets []string
	Now     func() time.Time
}

// Bundle is a bundle being written.
type Bundle struct {
	dir     string
	secrets []string
	now     func() time.Time

	mu          sync.Mutex
	m           Manifest
	events      *os.File
	tables      []*TableWriter
	transcripts []*transcriptWriter
	final       bool
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
	for _, s := range opts.Secrets {
		if s != "" {
			b.secrets = append(b.secrets, s)
		}
	}
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

func (b *Bundle) scrub(s string) string {
	for _, sec := range b.secrets {
		s = strings.ReplaceAll(s, sec, "***")
	}
	return s
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
	data, err := json.MarshalIndent(b.m, "", "  ")
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

// Plot asks the report to draw a table.
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
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, x := range b.tables {
		if x.t.Name == t.Name {
			return nil, fmt.Errorf("bundle: table %s declared twice", t.Name)
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
	tw.b.mu.Lock()
	defer tw.b.mu.Unlock()
	if tw.b.final {
		return errors.New("bundle: already finalized")
	}
	if err := tw.w.Write(rec); err != nil {
		return err
	}
	tw.rows++
	return tw.flush(tw.gz == nil || tw.rows%compressFlushRows == 0)
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
	errs = append(errs, b.writeDataPackage(), b.writeManifest())
	report, err := b.renderReport()
	errs = append(errs, err)
	if err == nil {
		errs = append(errs, b.writeFile("report.html", report))
	}
	errs = append(errs, writeSums(b.dir))
	return errors.Join(errs...)
}

func (b *Bundle) writeDataPackage() error {
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
	dp := struct {
		Name      string     `json:"name"`
		Profile   string     `json:"profile"`
		Resources []resource `json:"resources"`
	}{Name: strings.ToLower(unsafeName.ReplaceAllString(b.m.RunID, "-")), Profile: "tabular-data-package", Resources: []resource{}}
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
	data, err := json.MarshalIndent(dp, "", "  ")
	if err != nil {
		return err
	}
	return b.writeFile("datapackage.json", append(data, '\n'))
}
