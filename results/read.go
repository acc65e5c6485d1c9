package results

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Reading a bundle trusts nothing in it: a bundle may come from another
// lab, an archive, a mail attachment. Every reader here streams (an entry
// is hashed and counted as it passes, never held whole, but for the few
// small files that are parsed: manifest.json, summary.json, SHA256SUMS and
// its signature), stays inside the bundle (no path from the bundle is ever
// opened: names are looked up among the files the walk found), refuses
// anything but regular files without opening them, and stops at the limits
// below.

// Default read limits. A real bundle is far below them: the largest the
// recipes write is fct's, 1.2 million per-trial samples, 48 MB of CSV
// (8.3 MB as gzip), with a dozen other files of kilobytes; a large lab's
// bundle has a transcript per device, a few hundred files. The limits leave
// twenty times that room and still stop a gzip bomb (a 6 MB archive
// inflating to 6 GB) after reading one gigabyte, a few seconds of work
// and no memory to speak of, since nothing is held.
const (
	// DefaultMaxBytes bounds all the files of a bundle together, as read
	// (inflated, for an archive).
	DefaultMaxBytes int64 = 4 << 30
	// DefaultMaxEntryBytes bounds one file, and a gzip table once inflated.
	DefaultMaxEntryBytes int64 = 1 << 30
	// DefaultMaxEntries bounds the number of files and directories.
	DefaultMaxEntries = 20000
	// maxMetaBytes bounds each file parsed whole (manifest.json,
	// summary.json, SHA256SUMS, SHA256SUMS.sig): a manifest of a
	// thousand-device lab is about a megabyte.
	maxMetaBytes int64 = 64 << 20
	// maxCSVHeaderBytes bounds a table's header row.
	maxCSVHeaderBytes = 1 << 20
)

// ReadLimits bound what reading one bundle may cost. A zero field takes
// its default.
type ReadLimits struct {
	// MaxBytes bounds the bytes of all files together (DefaultMaxBytes).
	MaxBytes int64
	// MaxEntryBytes bounds one file, and a gzip table's inflated bytes
	// (DefaultMaxEntryBytes).
	MaxEntryBytes int64
	// MaxEntries bounds the files and directories (DefaultMaxEntries).
	MaxEntries int
}

func (l ReadLimits) withDefaults() ReadLimits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxEntryBytes <= 0 {
		l.MaxEntryBytes = DefaultMaxEntryBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	return l
}

// Names of the read limits, as LimitError.Limit says which one tripped.
const (
	LimitBytes      = "max-bytes"
	LimitEntryBytes = "max-entry-bytes"
	LimitEntries    = "max-entries"
)

// LimitError says a bundle is larger than a read limit allows: it was not
// read further.
type LimitError struct {
	Bundle string
	Entry  string // the file being read; empty for the whole bundle
	Limit  string // LimitBytes, LimitEntryBytes or LimitEntries
	Max    int64
}

func (e *LimitError) Error() string {
	where := e.Bundle
	if e.Entry != "" {
		where += ": " + e.Entry
	}
	switch e.Limit {
	case LimitEntries:
		return fmt.Sprintf("%s: more than %d files and directories (limit %s)", where, e.Max, e.Limit)
	case LimitEntryBytes:
		return fmt.Sprintf("%s: larger than %s (limit %s, per file)", where, fmtBytes(e.Max), e.Limit)
	}
	return fmt.Sprintf("%s: the bundle's files are larger than %s together (limit %s)", where, fmtBytes(e.Max), e.Limit)
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// safeRel reports whether name is a clean relative slash path that stays
// inside the bundle: no leading "/", no "..", no "." or empty element, no
// backslash (a separator elsewhere), no NUL.
func safeRel(name string) bool {
	if name == "" || name == "." || strings.HasPrefix(name, "/") || strings.ContainsAny(name, "\\\x00") {
		return false
	}
	if path.Clean(name) != name {
		return false
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." {
			return false
		}
	}
	return true
}

// scanEntry is one file a walk of a bundle found.
type scanEntry struct {
	sum  string // hex SHA-256; empty for a file that was not read
	size int64
	// bad says why a file was not read: it is not a regular file.
	bad string
}

// scan is what one pass over a bundle found.
type scan struct {
	name    string
	entries map[string]*scanEntry
	// meta holds the small files parsed whole.
	meta map[string][]byte
	// problems: entries that are not regular files, leave the bundle or
	// appear twice.
	problems []string
	// With scanOptions.tables: lines of events.jsonl, and data tables.
	events int
	tables map[string]*TableInfo
}

type scanOptions struct {
	limits ReadLimits
	// tables counts events.jsonl's lines and every data table's rows.
	tables bool
}

// isMeta reports whether a file is one of the few parsed whole.
func isMeta(name string) bool {
	switch name {
	case "manifest.json", "summary.json", sumsFile, SigFile:
		return true
	}
	return false
}

// files lists the regular files found, sorted.
func (s *scan) files() []string {
	out := make([]string, 0, len(s.entries))
	for k, e := range s.entries {
		if e.bad == "" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// scanner holds the running totals of one pass.
type scanner struct {
	s       *scan
	opts    scanOptions
	total   int64
	entries int
}

// scanBundle walks a bundle directory or .tar.gz once.
func scanBundle(p string, opts scanOptions) (*scan, error) {
	opts.limits = opts.limits.withDefaults()
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	sc := &scanner{s: &scan{name: p, entries: map[string]*scanEntry{}, meta: map[string][]byte{}, tables: map[string]*TableInfo{}}, opts: opts}
	switch {
	case fi.IsDir():
		err = sc.dir(p)
	case fi.Mode().IsRegular():
		var f *os.File
		if f, err = openRegular(p); err != nil {
			return nil, err
		}
		defer f.Close()
		err = sc.archive(f)
	default:
		return nil, fmt.Errorf("%s: not a directory or a .tar.gz but a %s", p, fileType(fi.Mode()))
	}
	if err != nil {
		return nil, err
	}
	return sc.s, nil
}

// scanArchive reads a .tar.gz bundle from r; name is used in messages.
func scanArchive(name string, r io.Reader, opts scanOptions) (*scan, error) {
	opts.limits = opts.limits.withDefaults()
	sc := &scanner{s: &scan{name: name, entries: map[string]*scanEntry{}, meta: map[string][]byte{}, tables: map[string]*TableInfo{}}, opts: opts}
	if err := sc.archive(r); err != nil {
		return nil, err
	}
	return sc.s, nil
}

func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "regular file"
	}
	return "special file"
}

func (sc *scanner) count() error {
	sc.entries++
	if sc.entries > sc.opts.limits.MaxEntries {
		return &LimitError{Bundle: sc.s.name, Limit: LimitEntries, Max: int64(sc.opts.limits.MaxEntries)}
	}
	return nil
}

func (sc *scanner) notRegular(name, what string) {
	if e, dup := sc.s.entries[name]; dup && e.bad == "" {
		sc.s.problems = append(sc.s.problems, "duplicate: "+name)
	}
	sc.s.entries[name] = &scanEntry{bad: what}
	sc.s.problems = append(sc.s.problems, fmt.Sprintf("not a regular file: %s (%s); a bundle holds regular files only", name, what))
}

// dir walks a bundle directory. Entries are classified by lstat (the
// directory listing's type) before anything is opened, so a FIFO, a device
// or a link (to /dev/zero, to /etc/hostname) is reported, never read.
func (sc *scanner) dir(root string) error {
	return fs.WalkDir(os.DirFS(root), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", sc.s.name, err)
		}
		if name == "." {
			return nil
		}
		if err := sc.count(); err != nil {
			return err
		}
		switch t := d.Type(); {
		case t.IsDir():
			return nil
		case t != 0:
			sc.notRegular(name, fileType(t))
			return nil
		}
		f, err := openRegular(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			var nr *notRegularError
			if errors.As(err, &nr) {
				sc.notRegular(name, nr.what)
				return nil
			}
			return fmt.Errorf("%s: %s: %w", sc.s.name, name, err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("%s: %s: %w", sc.s.name, name, err)
		}
		return sc.file(name, fi.Size(), f)
	})
}

type notRegularError struct{ what string }

func (e *notRegularError) Error() string { return "not a regular file but a " + e.what }

// openRegular opens p only if it is a regular file: without following a
// final symbolic link and without blocking on a FIFO (openNoFollow), then
// checked on the open descriptor, so a file swapped after the directory was
// listed is caught too.
func openRegular(p string) (*os.File, error) {
	f, err := openNoFollow(p)
	if err != nil {
		if fi, lerr := os.Lstat(p); lerr == nil && !fi.Mode().IsRegular() {
			return nil, &notRegularError{fileType(fi.Mode())}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &notRegularError{fileType(fi.Mode())}
	}
	return f, nil
}

// archive reads a .tar.gz bundle in one pass. Its entries lie under one
// top directory (the run id), which is stripped.
func (sc *scanner) archive(r io.Reader) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("%s: not a directory or a .tar.gz: %w", sc.s.name, err)
	}
	lim := sc.opts.limits
	// The tar stream itself (headers and padding as well as the files) is
	// bounded too, so entries whose data tar skips (links, devices with a
	// size) cannot inflate without end.
	streamMax := lim.MaxBytes + int64(lim.MaxEntries)*3*512 + 1<<20
	tr := tar.NewReader(&capReader{r: zr, max: streamMax, err: &LimitError{Bundle: sc.s.name, Limit: LimitBytes, Max: lim.MaxBytes}})
	top := ""
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var le *LimitError
			if errors.As(err, &le) {
				return err
			}
			return fmt.Errorf("%s: %w", sc.s.name, err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		if err := sc.count(); err != nil {
			return err
		}
		// "./run-id/..." (tar -C runs ./run-id) is "run-id/...".
		raw := strings.TrimPrefix(strings.TrimSuffix(h.Name, "/"), "./")
		if raw == "." || raw == "" {
			continue
		}
		if !safeRel(raw) {
			sc.s.problems = append(sc.s.problems, fmt.Sprintf("unsafe path: archive entry %q leaves the bundle", h.Name))
			continue
		}
		first, name, nested := strings.Cut(raw, "/")
		if !nested {
			name = raw
		} else if top == "" {
			top = first
		} else if first != top {
			sc.s.problems = append(sc.s.problems, fmt.Sprintf("unsafe path: archive entry %q is outside the top directory %s/", h.Name, top))
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg, '\x00':
		default:
			what := "special file"
			switch h.Typeflag {
			case tar.TypeSymlink:
				what = "symbolic link to " + h.Linkname
			case tar.TypeLink:
				what = "hard link to " + h.Linkname
			case tar.TypeChar:
				what = "character device"
			case tar.TypeBlock:
				what = "device"
			case tar.TypeFifo:
				what = "named pipe"
			}
			if nested {
				sc.notRegular(name, what)
			} else {
				sc.s.problems = append(sc.s.problems, fmt.Sprintf("unsafe path: archive entry %q (%s) is outside the bundle's top directory", h.Name, what))
			}
			continue
		}
		if !nested {
			// A file beside the top directory is not part of the bundle.
			sc.s.problems = append(sc.s.problems, fmt.Sprintf("unsafe path: archive entry %q is outside the bundle's top directory", h.Name))
			continue
		}
		if e, dup := sc.s.entries[name]; dup {
			if e.bad == "" {
				sc.s.problems = append(sc.s.problems, "duplicate: "+name)
			}
			continue
		}
		if err := sc.file(name, h.Size, tr); err != nil {
			return err
		}
	}
}

// capReader fails with err once more than max bytes were read.
type capReader struct {
	r   io.Reader
	n   int64
	max int64
	err error
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n > c.max {
		return 0, c.err
	}
	if rem := c.max - c.n + 1; int64(len(p)) > rem {
		p = p[:rem]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		return n, c.err
	}
	return n, err
}

// file reads one regular file of declared size from r: hashed, counted
// against the limits, kept whole if it is parsed (isMeta), and, with
// opts.tables, counted as events or table rows.
func (sc *scanner) file(name string, size int64, r io.Reader) error {
	lim := sc.opts.limits
	entryErr := &LimitError{Bundle: sc.s.name, Entry: name, Limit: LimitEntryBytes, Max: lim.MaxEntryBytes}
	totalErr := &LimitError{Bundle: sc.s.name, Entry: name, Limit: LimitBytes, Max: lim.MaxBytes}
	if size > lim.MaxEntryBytes {
		return entryErr
	}
	if sc.total+size > lim.MaxBytes {
		return totalErr
	}
	in := &capReader{r: &capReader{r: r, max: lim.MaxEntryBytes, err: entryErr}, max: lim.MaxBytes - sc.total, err: totalErr}
	h := sha256.New()
	var src io.Reader = io.TeeReader(in, h)
	var keep *bytes.Buffer
	if isMeta(name) {
		limit := min(maxMetaBytes, lim.MaxEntryBytes)
		tooLarge := fmt.Errorf("%s: %s: larger than %s, more than such a file ever holds", sc.s.name, name, fmtBytes(limit))
		// Refused by its size before a byte is held: growing a buffer
		// towards the cap took more memory than a process under a
		// virtual memory limit (ulimit -v) has, and the runtime aborted.
		if size > limit {
			return tooLarge
		}
		keep = &bytes.Buffer{}
		keep.Grow(int(max(size, 0)) + bytes.MinRead)
		src = io.TeeReader(src, &capWriter{w: keep, max: limit, err: tooLarge})
	}
	var err error
	switch {
	case sc.opts.tables && name == "events.jsonl":
		sc.s.events, err = countLines(src)
	case sc.opts.tables && isTable(name):
		err = sc.table(name, src)
	}
	if err == nil {
		_, err = io.Copy(io.Discard, src)
	}
	sc.total += in.n
	if err != nil {
		var le *LimitError
		if errors.As(err, &le) {
			return le
		}
		return fmt.Errorf("%s: %s: %w", sc.s.name, name, err)
	}
	sc.s.entries[name] = &scanEntry{sum: hex.EncodeToString(h.Sum(nil)), size: in.n}
	if keep != nil {
		sc.s.meta[name] = keep.Bytes()
	}
	return nil
}

// capWriter fails with err once more than max bytes were written.
type capWriter struct {
	w   io.Writer
	n   int64
	max int64
	err error
}

func (c *capWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	if c.n > c.max {
		return 0, c.err
	}
	return c.w.Write(p)
}

func isTable(name string) bool {
	return strings.HasPrefix(name, "data/") && (strings.HasSuffix(name, ".csv") || strings.HasSuffix(name, ".csv.gz"))
}

func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 32<<10)
	n := 0
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// table counts a data table's rows, inflating a .csv.gz under the
// per-file limit. A table that does not parse (bad gzip, bad quoting) is
// listed with what could be read: showing a bundle does not judge it.
func (sc *scanner) table(name string, r io.Reader) error {
	ti := &TableInfo{Name: strings.TrimSuffix(strings.TrimSuffix(path.Base(name), ".gz"), ".csv"), Path: name}
	sc.s.tables[name] = ti
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil
		}
		lim := sc.opts.limits.MaxEntryBytes
		r = &capReader{r: zr, max: lim, err: &LimitError{Bundle: sc.s.name, Entry: name + " (inflated)", Limit: LimitEntryBytes, Max: lim}}
	}
	header, rows, err := countCSV(r)
	var le *LimitError
	if errors.As(err, &le) {
		return le
	}
	for _, h := range header {
		ti.Fields = append(ti.Fields, Field{Name: h})
	}
	if rows > 0 {
		ti.Rows = rows - 1
	}
	return nil
}

// countCSV counts the records of RFC 4180 CSV in constant memory (a quoted
// field may hold newlines; empty lines are no records, as encoding/csv
// reads them) and parses the first record, the header.
func countCSV(r io.Reader) (header []string, records int, err error) {
	var head []byte
	// pendingCR: the last byte read was a '\r' outside quotes, which is
	// data unless a '\n' follows (CRLF ends a line as LF does).
	inQuote, lineEmpty, pendingCR := false, true, false
	buf := make([]byte, 32<<10)
	for {
		k, rerr := r.Read(buf)
		chunk := buf[:k]
		if records == 0 && len(head) <= maxCSVHeaderBytes {
			head = append(head, chunk[:min(len(chunk), maxCSVHeaderBytes+1-len(head))]...)
		}
		for len(chunk) > 0 {
			if pendingCR {
				pendingCR = false
				if chunk[0] != '\n' {
					lineEmpty = false
				}
			}
			// Only quotes and newlines change the state: skip to the next.
			i := bytes.IndexAny(chunk, "\"\n")
			run := chunk
			if i >= 0 {
				run = chunk[:i]
			}
			if !inQuote && len(run) > 0 && run[len(run)-1] == '\r' {
				if i < 0 {
					pendingCR = true
				}
				run = run[:len(run)-1]
			}
			if len(run) > 0 {
				lineEmpty = false
			}
			if i < 0 {
				break
			}
			switch c := chunk[i]; {
			case c == '"':
				inQuote = !inQuote
				lineEmpty = false
			case !inQuote: // '\n'
				if !lineEmpty {
					records++
				}
				lineEmpty = true
			}
			chunk = chunk[i+1:]
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			err = rerr
			break
		}
	}
	if !lineEmpty && err == nil { // a "\r" at the very end is dropped, as encoding/csv does
		records++
	}
	if len(head) > 0 && len(head) <= maxCSVHeaderBytes {
		cr := csv.NewReader(bytes.NewReader(head))
		cr.FieldsPerRecord = -1
		header, _ = cr.Read()
	}
	return header, records, err
}
