package topo

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"testbed/experiments/stats"
)

// Columns of a link table file, in the order WriteCSV writes them. One row
// per physical link; "ab" is the direction from a to b, "ba" the reverse.
// Only a and b (or a link name the caller can resolve), and each
// direction's lper or frames and lost, are required; see
// experiments/rail/README.md.
var Columns = []string{
	"link", "a", "a_port", "a_role", "b", "b_port", "b_role",
	"transceiver", "fec", "length_m", "attenuation_ab_db", "attenuation_ba_db",
	"lper_ab", "lper_ab_low", "lper_ab_high", "frames_ab", "lost_ab",
	"lper_ba", "lper_ba_low", "lper_ba_high", "frames_ba", "lost_ba",
}

// Table is a link table as read from a file: the links and the roles the
// file gives (a_role, b_role or the JSON "switches" object).
type Table struct {
	Links []*Link
	Roles map[string]Role
}

// ReadTable reads a link table, CSV or JSON by the content's first
// character ('{' is JSON). name is the file's name for messages: every
// error names name:line and what was expected there.
func ReadTable(name string, r io.Reader) (*Table, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", name, err)
	}
	if t := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		return readJSON(name, data)
	}
	return readCSV(name, data)
}

type rowReader struct {
	name string
	tab  *Table
	// roleAt says where a switch's role was first given.
	roleAt map[string]string
}

func newRowReader(name string) *rowReader {
	return &rowReader{name: name, tab: &Table{Roles: map[string]Role{}}, roleAt: map[string]string{}}
}

func (rr *rowReader) role(at, sw, s string) error {
	if s == "" {
		return nil
	}
	r, err := ParseRole(s)
	if err != nil {
		return fmt.Errorf("%s: switch %s: %w", at, sw, err)
	}
	if prev, ok := rr.tab.Roles[sw]; ok && prev != r {
		return fmt.Errorf("%s: switch %s is %s here but %s at %s", at, sw, r, prev, rr.roleAt[sw])
	}
	rr.tab.Roles[sw], rr.roleAt[sw] = r, at
	return nil
}

// row turns one row (column -> text) into a link.
func (rr *rowReader) row(line int, get map[string]string) error {
	at := fmt.Sprintf("%s:%d", rr.name, line)
	l := &Link{Name: get["link"], A: get["a"], B: get["b"], APort: get["a_port"], BPort: get["b_port"],
		Transceiver: get["transceiver"], FEC: get["fec"], Source: at}
	if l.Name == "" && (l.A == "" || l.B == "") {
		return fmt.Errorf("%s: expected the ends a and b (or a link name the inventory knows)", at)
	}
	if l.Name == "" {
		l.Name = l.A + "-" + l.B
	}
	if err := rr.role(at, l.A, get["a_role"]); err != nil {
		return err
	}
	if err := rr.role(at, l.B, get["b_role"]); err != nil {
		return err
	}
	num := func(col string, lo, hi float64) (*float64, error) { return rowNum(at, get, col, lo, hi) }
	var err error
	if l.LengthM, err = num("length_m", 0, math.Inf(1)); err != nil {
		return err
	}
	if l.AttenuationABDB, err = num("attenuation_ab_db", -10, 100); err != nil {
		return err
	}
	if l.AttenuationBADB, err = num("attenuation_ba_db", -10, 100); err != nil {
		return err
	}
	est := func(dir string) (Estimate, bool, error) { return rowEstimate(at, get, dir) }
	ab, okAB, err := est("ab")
	if err != nil {
		return err
	}
	if !okAB {
		return fmt.Errorf("%s: expected lper_ab (or frames_ab and lost_ab)", at)
	}
	ba, okBA, err := est("ba")
	if err != nil {
		return err
	}
	if !okBA {
		ba = ab // one rate for both directions
	}
	l.AB, l.BA = ab, ba
	rr.tab.Links = append(rr.tab.Links, l)
	return nil
}

// rowNum reads a number column of a row: nil when empty, an error when
// it is no number in [lo, hi].
func rowNum(at string, get map[string]string, col string, lo, hi float64) (*float64, error) {
	s := strings.TrimSpace(get[col])
	if s == "" {
		return nil, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || v < lo || v > hi {
		return nil, fmt.Errorf("%s: column %s: %q: expected a number in [%g, %g]", at, col, s, lo, hi)
	}
	return &v, nil
}

// estCols are a direction's LPER columns of a row, each nil when empty.
type estCols struct{ p, lo, hi, frames, lost *float64 }

func rowEstCols(at string, get map[string]string, dir string) (estCols, error) {
	var c estCols
	var err error
	for _, x := range []struct {
		dst     **float64
		col     string
		lo, max float64
	}{{&c.p, "lper_" + dir, 0, 1}, {&c.lo, "lper_" + dir + "_low", 0, 1}, {&c.hi, "lper_" + dir + "_high", 0, 1},
		{&c.frames, "frames_" + dir, 1, math.MaxInt64}, {&c.lost, "lost_" + dir, 0, math.MaxInt64}} {
		if *x.dst, err = rowNum(at, get, x.col, x.lo, x.max); err != nil {
			return c, err
		}
	}
	return c, nil
}

// rowEstimate reads a direction's loss estimate from a row: the LPER
// given, or frames and lost with their Wilson interval, or both; an
// interval given overrides the computed one. false: the row has none.
func rowEstimate(at string, get map[string]string, dir string) (Estimate, bool, error) {
	c, err := rowEstCols(at, get, dir)
	if err != nil {
		return Estimate{}, false, err
	}
	if c.p == nil && c.lo == nil && c.hi == nil && c.frames == nil && c.lost == nil {
		return Estimate{}, false, nil
	}
	var e Estimate
	switch {
	case (c.frames == nil) != (c.lost == nil):
		return e, false, fmt.Errorf("%s: frames_%s and lost_%s go together", at, dir, dir)
	case c.frames != nil:
		e.Frames, e.Lost = int64(*c.frames), int64(*c.lost)
		if e.Lost > e.Frames {
			return e, false, fmt.Errorf("%s: lost_%s %d is more than frames_%s %d", at, dir, e.Lost, dir, e.Frames)
		}
		e.LPER = float64(e.Lost) / float64(e.Frames)
		e.Low, e.High = stats.Wilson(e.Lost, e.Frames, stats.Z95)
	case c.p == nil:
		return e, false, fmt.Errorf("%s: expected lper_%s (or frames_%s and lost_%s)", at, dir, dir, dir)
	}
	if c.p != nil {
		e.LPER = *c.p
		if c.frames == nil {
			e.Low, e.High = *c.p, *c.p
		}
	}
	if (c.lo == nil) != (c.hi == nil) {
		return e, false, fmt.Errorf("%s: lper_%s_low and lper_%s_high go together", at, dir, dir)
	}
	if c.lo != nil {
		e.Low, e.High = *c.lo, *c.hi
	}
	if e.Low > e.LPER || e.High < e.LPER {
		return e, false, fmt.Errorf("%s: interval [%g, %g] of direction %s does not contain its LPER %g", at, e.Low, e.High, dir, e.LPER)
	}
	return e, true, nil
}

func known(col string) bool {
	for _, c := range Columns {
		if c == col {
			return true
		}
	}
	return false
}

func readCSV(name string, data []byte) (*Table, error) {
	cr := csv.NewReader(bytes.NewReader(data))
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	rr := newRowReader(name)
	var header []string
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s:%d: %v", name, pe.Line, pe.Err)
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if header == nil {
			header = rec
			seen := map[string]bool{}
			for _, h := range header {
				h = strings.TrimSpace(h)
				if !known(h) {
					return nil, fmt.Errorf("%s:%d: unknown column %q (expected some of: %s)", name, line, h, strings.Join(Columns, ", "))
				}
				if seen[h] {
					return nil, fmt.Errorf("%s:%d: column %q twice", name, line, h)
				}
				seen[h] = true
			}
			continue
		}
		if len(rec) != len(header) {
			return nil, fmt.Errorf("%s:%d: %d fields, expected %d as in the header", name, line, len(rec), len(header))
		}
		get := map[string]string{}
		for i, h := range header {
			get[strings.TrimSpace(h)] = strings.TrimSpace(rec[i])
		}
		if err := rr.row(line, get); err != nil {
			return nil, err
		}
	}
	if header == nil {
		return nil, fmt.Errorf("%s: empty: expected a header row (%s) and one row per link", name, strings.Join(Columns, ","))
	}
	if len(rr.tab.Links) == 0 {
		return nil, fmt.Errorf("%s: no link rows after the header", name)
	}
	return rr.tab, nil
}

// lineAt is the 1-based line of the first non-blank, non-comma byte at or
// after off.
func lineAt(data []byte, off int64) int {
	i := int(off)
	for i < len(data) && strings.IndexByte(" \t\r\n,", data[i]) >= 0 {
		i++
	}
	return 1 + bytes.Count(data[:min(i, len(data))], []byte("\n"))
}

func readJSON(name string, data []byte) (*Table, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	fail := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("%s:%d: %v", name, lineAt(data, se.Offset-1), se)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%s:%d: %s: expected %s, not %s", name, lineAt(data, te.Offset-1), te.Field, te.Type, te.Value)
		}
		return fmt.Errorf("%s:%d: %w", name, lineAt(data, dec.InputOffset()), err)
	}
	expect := func(d json.Delim) error {
		tok, err := dec.Token()
		if err != nil {
			return fail(err)
		}
		if tok != d {
			return fmt.Errorf("%s:%d: expected %q, found %v", name, lineAt(data, dec.InputOffset()-1), d, tok)
		}
		return nil
	}
	if err := expect('{'); err != nil {
		return nil, err
	}
	rr := newRowReader(name)
	var roles map[string]string
	var rolesLine int
	sawLinks := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fail(err)
		}
		key, _ := tok.(string)
		switch key {
		case "switches":
			rolesLine = lineAt(data, dec.InputOffset()+1)
			if err := dec.Decode(&roles); err != nil {
				return nil, fail(err)
			}
		case "links":
			sawLinks = true
			if err := expect('['); err != nil {
				return nil, err
			}
			for dec.More() {
				line := lineAt(data, dec.InputOffset())
				var m map[string]any
				if err := dec.Decode(&m); err != nil {
					return nil, fail(err)
				}
				get := map[string]string{}
				for k, v := range m {
					if !known(k) {
						return nil, fmt.Errorf("%s:%d: unknown key %q (expected some of: %s)", name, line, k, strings.Join(Columns, ", "))
					}
					switch x := v.(type) {
					case string:
						get[k] = x
					case json.Number:
						get[k] = x.String()
					case nil:
					default:
						return nil, fmt.Errorf("%s:%d: key %q: expected a string or a number", name, line, k)
					}
				}
				if err := rr.row(line, get); err != nil {
					return nil, err
				}
			}
			if err := expect(']'); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("%s:%d: unknown key %q (expected switches and links)", name, lineAt(data, dec.InputOffset()-1), key)
		}
	}
	if !sawLinks || len(rr.tab.Links) == 0 {
		return nil, fmt.Errorf("%s: expected a non-empty \"links\" array", name)
	}
	var sws []string
	for s := range roles {
		sws = append(sws, s)
	}
	sort.Strings(sws)
	for _, s := range sws {
		if err := rr.role(fmt.Sprintf("%s:%d", name, rolesLine), s, roles[s]); err != nil {
			return nil, err
		}
	}
	return rr.tab, nil
}

// WriteCSV writes links in the format ReadTable reads, with the roles
// given (nil: none).
func WriteCSV(w io.Writer, links []*Link, roles map[string]Role) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(Columns); err != nil {
		return err
	}
	f := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'g', -1, 64)
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	count := func(e Estimate) (string, string) {
		if e.Frames == 0 {
			return "", ""
		}
		return strconv.FormatInt(e.Frames, 10), strconv.FormatInt(e.Lost, 10)
	}
	role := func(s string) string {
		if r, ok := roles[s]; ok {
			return r.String()
		}
		return ""
	}
	for _, l := range links {
		fab, lab := count(l.AB)
		fba, lba := count(l.BA)
		rec := []string{l.Name, l.A, l.APort, role(l.A), l.B, l.BPort, role(l.B), l.Transceiver, l.FEC,
			f(l.LengthM), f(l.AttenuationABDB), f(l.AttenuationBADB),
			g(l.AB.LPER), g(l.AB.Low), g(l.AB.High), fab, lab,
			g(l.BA.LPER), g(l.BA.Low), g(l.BA.High), fba, lba}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
