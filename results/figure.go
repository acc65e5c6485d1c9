package results

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"testbed/internal/readfile"
)

// Kind is how a figure draws its rows.
type Kind string

// Figure kinds.
const (
	// Line joins a series' points in x order.
	Line Kind = "line"
	// Scatter draws markers only.
	Scatter Kind = "scatter"
	// Step holds each y over the interval that ends at its x (a rate
	// measured over a polling interval).
	Step Kind = "step"
	// Bar draws one bar per x category (x may be a string column), series
	// side by side.
	Bar Kind = "bar"
	// Histogram counts the values of X in equal-width bins; Y is unused.
	Histogram Kind = "histogram"
	// CDF draws the empirical fraction of X values at or below x.
	CDF Kind = "cdf"
	// CCDF draws the empirical fraction of X values at or above x, the
	// tail plot of latency papers; Tail keeps its top fraction only.
	CCDF Kind = "ccdf"
)

var figureKinds = []Kind{Line, Scatter, Step, Bar, Histogram, CDF, CCDF}

// Cond keeps the rows whose Column equals Value (numerically when both
// parse as numbers, so "0.9" matches "0.90").
type Cond struct {
	Column string `json:"column"`
	Value  string `json:"value"`
}

// Figure declares one figure drawn from a table's rows: inline in
// report.html and on its own as figures/<Name>.svg, listed in
// datapackage.json under "figures".
type Figure struct {
	// Name is the file name, figures/<Name>.svg: unique within a bundle.
	Name  string `json:"name"`
	Title string `json:"title"`
	// Caption is printed under the figure in the report.
	Caption string `json:"caption,omitempty"`
	Kind    Kind   `json:"kind"`
	X       string `json:"x"`
	// Y is the plotted column; unused by Histogram, CDF and CCDF.
	Y string `json:"y,omitempty"`
	// Series are the columns whose values together name a series
	// (link speed x mode): one legend entry, one colour each.
	Series []string `json:"series,omitempty"`
	// Legend writes a series' legend entry from its row's columns, each
	// {column} replaced by its value: "{tor}, {eps_gbps} Gb/s EPS". Empty
	// joins the Series values with spaces.
	Legend string `json:"legend,omitempty"`
	// Where keeps the rows that meet every condition.
	Where []Cond `json:"where,omitempty"`
	// Low and High are columns bounding Y: drawn as error bars, or as a
	// shaded band when Band is set.
	Low  string `json:"low,omitempty"`
	High string `json:"high,omitempty"`
	Band bool   `json:"band,omitempty"`
	// ZeroAt draws a Y of zero at this column's value as an open marker:
	// an upper bound where nothing was observed (a log axis has no zero).
	ZeroAt string `json:"zero_at,omitempty"`
	LogX   bool   `json:"log_x,omitempty"`
	LogY   bool   `json:"log_y,omitempty"`
	XLabel string `json:"x_label,omitempty"`
	YLabel string `json:"y_label,omitempty"`
	// XScale and YScale multiply the values drawn (1e-3: ns as us); 0 is 1.
	XScale float64 `json:"x_scale,omitempty"`
	YScale float64 `json:"y_scale,omitempty"`
	// Bins is the number of Histogram bins (0: about sqrt(n), 5 to 40).
	Bins int `json:"bins,omitempty"`
	// BinWidth, when above 0, is the Histogram bins' width in x's unit,
	// aligned on its multiples (a recipe's own bin parameter), instead of
	// Bins.
	BinWidth float64 `json:"bin_width,omitempty"`
	// Tail keeps the CCDF's points at or below this fraction (0.01: the
	// top 1%); 0 keeps all.
	Tail float64 `json:"tail,omitempty"`
	// Phase is a column naming the phase of the experiment each row is
	// in (link-down, protected): where it changes along x a dashed
	// vertical line is drawn, labelled with the new phase, so a time
	// series shows when each failure or switch happened.
	Phase string `json:"phase,omitempty"`
	// Aggregate combines the Bar rows sharing x and series: "sum" or
	// "mean"; empty requires one row each.
	Aggregate string `json:"aggregate,omitempty"`
	// Table is the table drawn from, filled in when the bundle lists it.
	Table string `json:"table,omitempty"`
	Path  string `json:"path,omitempty"`
}

// Mark is a dashed vertical line at X, labelled.
type Mark struct {
	X     float64
	Label string
}

// Point is one drawn point. Low and High are NaN without error columns;
// Bound marks a zero drawn at its upper bound. X2 is a bar's right edge.
type Point struct {
	X, Y      float64
	X2        float64
	Low, High float64
	Bound     bool
	// Marked rings the point in red: a value a regression suite flagged.
	Marked bool
}

// SeriesData is one series as drawn, its points in drawing order.
type SeriesData struct {
	Name   string
	Points []Point
}

// FigureData is a figure after its rows are read, filtered, grouped and
// ordered: what the SVG shows, as numbers, for tests and tools.
type FigureData struct {
	Figure
	XLabelText, YLabelText string
	// Categories name a Bar figure's x positions 0, 1, ...
	Categories []string
	Series     []SeriesData
	// Legend holds the legend's entries as drawn.
	Legend []string
	// Dropped counts rows with no plottable value (empty cells, a
	// non-positive value on a log axis).
	Dropped int
	// Marks are the phase changes along x, in x order.
	Marks []Mark
	// Missing names the series, and a Bar figure's categories, that had
	// rows but no plottable value: not drawn, listed under the legend.
	Missing                []string
	XMin, XMax, YMin, YMax float64
}

// Empty reports whether the figure draws no point.
func (fd *FigureData) Empty() bool {
	for _, s := range fd.Series {
		if len(s.Points) > 0 {
			return false
		}
	}
	return true
}

var legendRe = regexp.MustCompile(`\{[a-z0-9_]+\}`)

var figureNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_\-]*$`)

// figures returns the table's figures, a legacy Plot as a line figure.
func (t Table) figures() []Figure {
	fs := slices.Clone(t.Figures)
	if len(fs) == 0 && t.Plot != nil {
		f := Figure{Name: t.Name, Title: t.Plot.Title, Kind: Line, X: t.Plot.X, Y: t.Plot.Y, LogX: t.Plot.LogX, LogY: t.Plot.LogY}
		if t.Plot.Series != "" {
			f.Series = []string{t.Plot.Series}
		}
		fs = append(fs, f)
	}
	for i := range fs {
		if fs[i].Kind == "" {
			fs[i].Kind = Line
		}
		fs[i].Table = t.Name
		fs[i].Path = "figures/" + fs[i].Name + ".svg"
	}
	return fs
}

// validateFigures checks every column a figure names is one of the table's.
func (t Table) validateFigures() error {
	cols := map[string]bool{}
	for _, f := range t.Fields {
		cols[f.Name] = true
	}
	for _, f := range t.figures() {
		where := fmt.Sprintf("table %s figure %q", t.Name, f.Name)
		if !figureNameRe.MatchString(f.Name) {
			return fmt.Errorf("%s: name: use lower-case letters, digits, _ and -", where)
		}
		if !slices.Contains(figureKinds, f.Kind) {
			return fmt.Errorf("%s: kind %q is not one of %v", where, f.Kind, figureKinds)
		}
		for _, n := range f.columns() {
			if !cols[n.col] {
				return fmt.Errorf("%s: %s column %q is not a field of the table", where, n.role, n.col)
			}
		}
		switch f.Aggregate {
		case "", "sum", "mean":
		default:
			return fmt.Errorf("%s: aggregate %q: expected sum or mean", where, f.Aggregate)
		}
	}
	return nil
}

// maxRecordBytes bounds one record of a figure's table: encoding/csv
// holds a whole record (a quoted field may span lines) before it returns
// it, so a table with no record end would otherwise be read into memory
// whole. The widest record a recipe writes is a few hundred bytes.
const maxRecordBytes = 1 << 20

// recordCap counts the bytes read since the last record ended (reset by
// eachRecord after each record; the CSV reader's read-ahead counts too,
// a few KiB) and fails the read past maxRecordBytes.
type recordCap struct {
	r    io.Reader
	n    int64
	over bool
}

var errRecordTooLong = fmt.Errorf("a record longer than %d bytes", maxRecordBytes)

func (c *recordCap) Read(p []byte) (int, error) {
	if c.n > maxRecordBytes {
		c.over = true
		return 0, errRecordTooLong
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// figColumn is a column a figure reads, and as what.
type figColumn struct{ role, col string }

// columns are the columns the figure reads: x, y (but for a distribution),
// its series, conditions, legend's, bounds and phase.
func (f Figure) columns() []figColumn {
	need := []figColumn{{"x", f.X}}
	switch f.Kind {
	case Histogram, CDF, CCDF:
	default:
		need = append(need, figColumn{"y", f.Y})
	}
	for _, s := range f.Series {
		need = append(need, figColumn{"series", s})
	}
	for _, c := range f.Where {
		need = append(need, figColumn{"where", c.Column})
	}
	for _, m := range legendRe.FindAllString(f.Legend, -1) {
		need = append(need, figColumn{"legend", m[1 : len(m)-1]})
	}
	for _, o := range []figColumn{{"low", f.Low}, {"high", f.High}, {"zero_at", f.ZeroAt}, {"phase", f.Phase}} {
		if o.col != "" {
			need = append(need, o)
		}
	}
	return need
}

// eachRecord reads a table's CSV (gzip when compressed) and gives fn its
// records one at a time, header first, with each one's line. The slice fn
// gets is reused for the next record (its strings are not): fn copies what
// it keeps. A figure of every trial reads millions of rows; reading them
// one at a time keeps only what each figure draws (a distribution's
// values), not every row's cells. A table is read up to
// DefaultMaxEntryBytes (inflated), a record up to maxRecordBytes; an error
// names the table's file and the line.
func eachRecord(dir, rel string, fn func(rec []string, line int) error) error {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	defer f.Close()
	var in io.Reader = f
	if strings.HasSuffix(rel, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		defer zr.Close()
		in = zr
	}
	tooLarge := fmt.Errorf("larger than %s (inflated)", fmtBytes(DefaultMaxEntryBytes))
	rc := &recordCap{r: &capReader{r: in, max: DefaultMaxEntryBytes, err: tooLarge}}
	r := csv.NewReader(rc)
	r.ReuseRecord = true
	last := 0
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if rc.over {
			// The CSV reader reports it inside a quoted field as a quote
			// missing.
			return fmt.Errorf("%s: after line %d: %w", rel, last, errRecordTooLong)
		}
		if _, ok := err.(*csv.ParseError); ok {
			// It names the line: "record on line 3: wrong number of fields".
			return fmt.Errorf("%s: %w", rel, err)
		}
		if err != nil {
			return fmt.Errorf("%s: after line %d: %w", rel, last, err)
		}
		rc.n = 0
		line, _ := r.FieldPos(0)
		if err := fn(rec, line); err != nil {
			return fmt.Errorf("%s: line %d: %w", rel, line, err)
		}
		last, _ = r.FieldPos(len(rec) - 1)
	}
}

// buildTableFigures builds the figures of one table in one pass over its
// records.
func buildTableFigures(dir, rel string, fs []Figure, fields []Field) ([]FigureData, error) {
	bs := make([]*figBuilder, len(fs))
	for i, f := range fs {
		bs[i] = newFigBuilder(f, fields)
	}
	err := eachRecord(dir, rel, func(rec []string, _ int) error {
		for _, b := range bs {
			if err := b.add(rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]FigureData, len(bs))
	for i, b := range bs {
		out[i] = b.finish()
	}
	return out, nil
}

// ReadFigures rebuilds every figure of a bundle directory from the figure
// declarations in its datapackage.json and its data tables.
func ReadFigures(dir string) ([]FigureData, error) {
	raw, err := readfile.Read(filepath.Join(dir, "datapackage.json"), maxMetaBytes)
	if err != nil {
		return nil, fmt.Errorf("read figures: %w", err)
	}
	var dp struct {
		Resources []struct {
			Name   string `json:"name"`
			Path   string `json:"path"`
			Schema struct {
				Fields []Field `json:"fields"`
			} `json:"schema"`
		} `json:"resources"`
		Figures []Figure `json:"figures"`
	}
	if err := json.Unmarshal(raw, &dp); err != nil {
		return nil, fmt.Errorf("read figures: datapackage.json: %w", err)
	}
	var out []FigureData
	for _, f := range dp.Figures {
		found := false
		for _, r := range dp.Resources {
			if r.Name != strings.ReplaceAll(f.Table, "_", "-") {
				continue
			}
			found = true
			fds, err := buildTableFigures(dir, r.Path, []Figure{f}, r.Schema.Fields)
			if err != nil {
				return nil, fmt.Errorf("read figures: figure %s: %w", f.Name, err)
			}
			out = append(out, fds...)
		}
		if !found {
			return nil, fmt.Errorf("read figures: figure %s: datapackage.json lists no table %q", f.Name, f.Table)
		}
	}
	return out, nil
}

func (f Figure) scale(s float64) float64 {
	if s == 0 {
		return 1
	}
	return s
}

// keep reports whether a row meets every condition of the figure.
func (f Figure) keep(row []string, col map[string]int) bool {
	for _, c := range f.Where {
		v := row[col[c.Column]]
		if v == c.Value {
			continue
		}
		a, err1 := strconv.ParseFloat(v, 64)
		b, err2 := strconv.ParseFloat(c.Value, 64)
		if err1 != nil || err2 != nil || a != b {
			return false
		}
	}
	return true
}

// figBuilder builds one figure from a table's records given one at a
// time, header first (add), then draws it (finish).
type figBuilder struct {
	fd     FigureData
	g      figRows
	header bool
	// dist: a Histogram, CDF or CCDF without phase marks keeps each kept
	// row's X value only (vals, scaled, per series), as distribution
	// reads it, not the row.
	dist bool
	vals map[string][]float64
}

func newFigBuilder(f Figure, fields []Field) *figBuilder {
	b := &figBuilder{fd: FigureData{Figure: f}, g: figRows{col: map[string]int{}, rows: map[string][][]string{}}, vals: map[string][]float64{}}
	b.fd.axisLabels(fields)
	switch f.Kind {
	case Histogram, CDF, CCDF:
		b.dist = f.Phase == ""
	}
	return b
}

// add takes the next record; the first is the header, which must name
// every column the figure reads. The record may be reused by the caller
// after add returns.
func (b *figBuilder) add(r []string) error {
	if !b.header {
		b.header = true
		for i, h := range r {
			b.g.col[h] = i
		}
		for _, n := range b.fd.Figure.columns() {
			if _, ok := b.g.col[n.col]; !ok {
				return fmt.Errorf("the header has no column %q, which figure %s reads as its %s", n.col, b.fd.Name, n.role)
			}
		}
		return nil
	}
	name, ok := b.g.keep(b.fd.Figure, r)
	if !ok {
		return nil
	}
	if !b.dist {
		b.g.rows[name] = append(b.g.rows[name], slices.Clone(r))
		return nil
	}
	f := b.fd.Figure
	x, ok := b.g.num(r, f.X)
	if !ok || (f.LogX && x <= 0) {
		b.fd.Dropped++
		return nil
	}
	b.vals[name] = append(b.vals[name], x*f.scale(f.XScale))
	return nil
}

// finish draws the figure from the records added.
func (b *figBuilder) finish() FigureData {
	fd, f, g := b.fd, b.fd.Figure, b.g
	if !b.header {
		return fd
	}
	switch f.Kind {
	case Bar:
		fd.barSeries(g)
	case Histogram:
		fd.histogramSeries(g, b.distribution(&fd))
	case CDF, CCDF:
		fd.cdfSeries(g, b.distribution(&fd))
	default:
		fd.pointSeries(g)
	}
	if f.Phase != "" && len(g.names) > 0 && f.Kind != Bar {
		fd.Marks = phaseMarks(g.rows[g.names[0]], g.col[f.X], g.col[f.Phase], f.scale(f.XScale))
	}
	fd.dropEmpty()
	for _, s := range fd.Series {
		name := s.Name
		if name == "" {
			name = fd.YLabelText
		}
		fd.Legend = append(fd.Legend, name)
	}
	fd.ranges()
	return fd
}

// distribution is each series' X values: read as the rows came, or from
// the rows kept.
func (b *figBuilder) distribution(fd *FigureData) map[string][]float64 {
	if b.dist {
		return b.vals
	}
	return b.g.distribution(fd)
}

// axisLabels sets the axes' labels: the figure's own, or the columns'
// names and units in words (a distribution's y axis says what the count
// or fraction is of).
func (fd *FigureData) axisLabels(fields []Field) {
	f := fd.Figure
	fd.XLabelText, fd.YLabelText = f.XLabel, f.YLabel
	unitOf := map[string]string{}
	for _, fl := range fields {
		unitOf[fl.Name] = fl.Unit
	}
	if fd.XLabelText == "" {
		fd.XLabelText = humanLabel(f.X, unitOf[f.X])
	}
	if fd.YLabelText == "" {
		switch f.Kind {
		case Histogram:
			fd.YLabelText = "Count"
		case CDF:
			fd.YLabelText = "Fraction at or below"
		case CCDF:
			fd.YLabelText = "Fraction at or above"
		default:
			fd.YLabelText = humanLabel(f.Y, unitOf[f.Y])
		}
	}
}

// figRows are a table's rows that a figure keeps, grouped by series.
type figRows struct {
	// col is each column's index by name.
	col map[string]int
	// names are the series in order of first appearance; rows their rows.
	names []string
	rows  map[string][][]string
}

// keep reports whether the figure keeps row r and names its series, by
// its Series columns or its Legend template; a series seen for the first
// time is added to names (and to rows, empty).
func (g *figRows) keep(f Figure, r []string) (string, bool) {
	if !f.keep(r, g.col) {
		return "", false
	}
	var parts []string
	for _, s := range f.Series {
		parts = append(parts, r[g.col[s]])
	}
	name := strings.Join(parts, " ")
	if f.Legend != "" {
		name = legendRe.ReplaceAllStringFunc(f.Legend, func(m string) string {
			if i, ok := g.col[m[1:len(m)-1]]; ok && i < len(r) {
				return r[i]
			}
			return m
		})
	}
	if _, seen := g.rows[name]; !seen {
		g.names = append(g.names, name)
		g.rows[name] = nil
	}
	return name, true
}

// num is the row's value of the named column: false when the figure
// names no such column or its cell is not a number.
func (g figRows) num(row []string, name string) (float64, bool) {
	i, ok := g.col[name]
	if !ok || name == "" || i >= len(row) {
		return math.NaN(), false
	}
	v, err := strconv.ParseFloat(row[i], 64)
	return v, err == nil && !math.IsNaN(v) && !math.IsInf(v, 0)
}

// barSeries draws one bar per category and series: the categories in
// natural order, the rows sharing one summed or averaged.
func (fd *FigureData) barSeries(g figRows) {
	f := fd.Figure
	ys := f.scale(f.YScale)
	catIdx := map[string]int{}
	for _, name := range g.names {
		for _, r := range g.rows[name] {
			c := r[g.col[f.X]]
			if _, ok := catIdx[c]; !ok {
				catIdx[c] = len(fd.Categories)
				fd.Categories = append(fd.Categories, c)
			}
		}
	}
	sortNatural(fd.Categories)
	for i, c := range fd.Categories {
		catIdx[c] = i
	}
	for _, name := range g.names {
		sum := map[int]float64{}
		n := map[int]int{}
		for _, r := range g.rows[name] {
			y, ok := g.num(r, f.Y)
			if !ok {
				fd.Dropped++
				continue
			}
			k := catIdx[r[g.col[f.X]]]
			sum[k] += y * ys
			n[k]++
		}
		s := SeriesData{Name: name}
		for k := range fd.Categories {
			if n[k] == 0 {
				continue
			}
			y := sum[k]
			if f.Aggregate == "mean" {
				y /= float64(n[k])
			}
			s.Points = append(s.Points, Point{X: float64(k), X2: float64(k) + 1, Y: y, Low: math.NaN(), High: math.NaN()})
		}
		fd.Series = append(fd.Series, s)
	}
}

// distribution reads each series' X values, scaled, for a histogram or
// a distribution function; it counts the rows without one (or with a
// non-positive one on a log axis) as dropped.
func (g figRows) distribution(fd *FigureData) map[string][]float64 {
	f := fd.Figure
	xs := f.scale(f.XScale)
	vals := map[string][]float64{}
	for _, name := range g.names {
		for _, r := range g.rows[name] {
			x, ok := g.num(r, f.X)
			if !ok || (f.LogX && x <= 0) {
				fd.Dropped++
				continue
			}
			vals[name] = append(vals[name], x*xs)
		}
	}
	return vals
}

// histogramSeries counts every series' values in bins shared by all.
func (fd *FigureData) histogramSeries(g figRows, vals map[string][]float64) {
	var all []float64
	for _, name := range g.names {
		all = append(all, vals[name]...)
	}
	edges := histEdges(all, fd.Bins, fd.BinWidth)
	for _, name := range g.names {
		s := SeriesData{Name: name}
		counts := make([]int, max(len(edges)-1, 0))
		for _, v := range vals[name] {
			i := sort.SearchFloat64s(edges, v)
			if i < len(edges) && edges[i] == v {
				i++
			}
			counts[min(max(i-1, 0), len(counts)-1)]++
		}
		for i, c := range counts {
			s.Points = append(s.Points, Point{X: edges[i], X2: edges[i+1], Y: float64(c), Low: math.NaN(), High: math.NaN()})
		}
		fd.Series = append(fd.Series, s)
	}
}

// cdfSeries draws every series' empirical distribution: the fraction of
// values at or below x (CDF) or at or above it (CCDF, its Tail only).
func (fd *FigureData) cdfSeries(g figRows, vals map[string][]float64) {
	for _, name := range g.names {
		v := vals[name]
		sort.Float64s(v)
		s := SeriesData{Name: name}
		if fd.Kind == CDF {
			s.Points = cdfPoints(v)
		} else {
			s.Points = ccdfPoints(v, fd.Tail)
		}
		fd.Series = append(fd.Series, s)
	}
}

// cdfPoints are the sorted values' P(X <= x): the last of equal values
// carries the fraction.
func cdfPoints(v []float64) []Point {
	var out []Point
	n := float64(len(v))
	for i := 0; i < len(v); i++ {
		if i+1 < len(v) && v[i+1] == v[i] {
			continue
		}
		out = append(out, Point{X: v[i], Y: float64(i+1) / n, Low: math.NaN(), High: math.NaN()})
	}
	return out
}

// ccdfPoints are the sorted values' P(X >= x), the first of equal values
// carrying it; with a tail above 0, only the fractions at or below it.
func ccdfPoints(v []float64, tail float64) []Point {
	var out []Point
	n := float64(len(v))
	for i := 0; i < len(v); i++ {
		if i > 0 && v[i-1] == v[i] {
			continue
		}
		frac := float64(len(v)-i) / n
		if tail > 0 && frac > tail {
			// The curve enters the tail window at the last value above
			// it: drawn at the window's top.
			if j := sort.Search(len(v), func(k int) bool { return v[k] > v[i] }); j >= len(v) || float64(len(v)-j)/n <= tail {
				out = append(out, Point{X: v[i], Y: tail, Low: math.NaN(), High: math.NaN()})
			}
			continue
		}
		out = append(out, Point{X: v[i], Y: frac, Low: math.NaN(), High: math.NaN()})
	}
	return out
}

// pointSeries draws one point per row, in x order, with its interval
// and, where nothing was observed, at its upper bound.
func (fd *FigureData) pointSeries(g figRows) {
	for _, name := range g.names {
		s := SeriesData{Name: name}
		for _, r := range g.rows[name] {
			p, ok := fd.point(g, r)
			if !ok {
				fd.Dropped++
				continue
			}
			s.Points = append(s.Points, p)
		}
		sort.SliceStable(s.Points, func(a, b int) bool { return s.Points[a].X < s.Points[b].X })
		fd.Series = append(fd.Series, s)
	}
}

// point reads one row's point, scaled: false when it has no x or y, or
// a non-positive one on a log axis. A y of zero with a ZeroAt column
// above zero is drawn at that bound.
func (fd *FigureData) point(g figRows, r []string) (Point, bool) {
	f := fd.Figure
	xs, ys := f.scale(f.XScale), f.scale(f.YScale)
	x, okx := g.num(r, f.X)
	y, oky := g.num(r, f.Y)
	p := Point{X: x * xs, Y: y * ys, Low: math.NaN(), High: math.NaN()}
	if lo, ok := g.num(r, f.Low); ok {
		p.Low = lo * ys
	}
	if hi, ok := g.num(r, f.High); ok {
		p.High = hi * ys
	}
	if oky && y == 0 && f.ZeroAt != "" {
		if b, ok := g.num(r, f.ZeroAt); ok && b > 0 {
			p.Y, p.Bound = b*ys, true
		}
	}
	return p, okx && oky && (!f.LogX || p.X > 0) && (!f.LogY || p.Y > 0)
}

// phaseMarks returns where the phase column changes along x, over one
// series' rows (the phases of a run are the same for every series).
func phaseMarks(rows [][]string, xc, pc int, scale float64) []Mark {
	type xp struct {
		x float64
		p string
	}
	var v []xp
	for _, r := range rows {
		if xc >= len(r) || pc >= len(r) {
			continue
		}
		x, err := strconv.ParseFloat(r[xc], 64)
		if err != nil {
			continue
		}
		v = append(v, xp{x * scale, r[pc]})
	}
	sort.SliceStable(v, func(a, b int) bool { return v[a].x < v[b].x })
	var out []Mark
	for i := 1; i < len(v); i++ {
		if v[i].p != v[i-1].p {
			out = append(out, Mark{X: v[i].x, Label: v[i].p})
		}
	}
	return out
}

// dropEmpty takes out what would be drawn as nothing and read as zero: a
// series with no plottable point (a legend entry beside no mark), and a
// Bar category where no series has a value (an empty slot reads as a
// bar of 0). Both are named in Missing, which the SVG lists under the
// legend. A figure with no point at all keeps its series: it says so.
func (fd *FigureData) dropEmpty() {
	if fd.Empty() {
		return
	}
	if fd.Kind == Bar {
		used := make([]bool, len(fd.Categories))
		for _, s := range fd.Series {
			for _, p := range s.Points {
				used[int(p.X)] = true
			}
		}
		newIdx := make([]int, len(fd.Categories))
		var cats []string
		for i, c := range fd.Categories {
			if !used[i] {
				fd.Missing = append(fd.Missing, c)
				continue
			}
			newIdx[i] = len(cats)
			cats = append(cats, c)
		}
		fd.Categories = cats
		for _, s := range fd.Series {
			for j := range s.Points {
				k := float64(newIdx[int(s.Points[j].X)])
				s.Points[j].X, s.Points[j].X2 = k, k+1
			}
		}
	}
	kept := fd.Series[:0]
	for _, s := range fd.Series {
		if len(s.Points) == 0 {
			name := s.Name
			if name == "" {
				name = fd.YLabelText
			}
			fd.Missing = append(fd.Missing, name)
			continue
		}
		kept = append(kept, s)
	}
	fd.Series = kept
}

// maxHistBins bounds a histogram's bins, whatever its values' span and
// its BinWidth: a bin width far under the span (a stray value, a width
// declared in another unit) would otherwise make one edge per step.
const maxHistBins = 10000

// histEdges returns bins+1 equal-width edges over the values, on round
// numbers: at least two, and at most maxHistBins+1 (the width grown to
// a round step that covers the span in that many).
func histEdges(v []float64, bins int, width float64) []float64 {
	if len(v) == 0 {
		return nil
	}
	lo, hi := slices.Min(v), slices.Max(v)
	if bins <= 0 {
		bins = min(max(int(math.Sqrt(float64(len(v)))), 5), 40)
	}
	if hi == lo && width <= 0 {
		return []float64{lo - 0.5, lo + 0.5}
	}
	// The span, halved first where it overflows (-1e308 to 1e308).
	span := func(n int) float64 {
		if d := (hi - lo) / float64(n); !math.IsInf(d, 0) {
			return d
		}
		return hi/float64(n) - lo/float64(n)
	}
	w := width
	if w <= 0 {
		w = niceStep(span(bins))
	}
	if n := math.Floor(hi/w) - math.Floor(lo/w); !(n < maxHistBins) {
		w = niceStep(span(maxHistBins) * (1 + 1e-9))
	}
	start := math.Floor(lo/w) * w
	var edges []float64
	for i := 0; i <= maxHistBins; i++ {
		// Edges by multiplication: added up, a step under the values'
		// precision would never pass hi.
		e := start + float64(i)*w
		edges = append(edges, e)
		if e > hi {
			break
		}
	}
	if len(edges) < 2 {
		edges = append(edges, math.Nextafter(edges[0], math.Inf(1)))
	}
	return edges
}

// niceStep rounds a step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag*(1+1e-9) {
			return m * mag
		}
	}
	return 10 * mag
}

// ranges sets the axes' spans from the data: decades on log axes, the
// data's span with a margin on linear ones (from zero for counts and bars).
func (fd *FigureData) ranges() {
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range fd.Series {
		for _, p := range s.Points {
			xmin, xmax = math.Min(xmin, p.X), math.Max(xmax, p.X)
			if fd.Kind == Bar || fd.Kind == Histogram {
				xmax = math.Max(xmax, p.X2)
			}
			ymin, ymax = math.Min(ymin, p.Y), math.Max(ymax, p.Y)
			for _, e := range []float64{p.Low, p.High} {
				if !math.IsNaN(e) && (!fd.LogY || e > 0) {
					ymin, ymax = math.Min(ymin, e), math.Max(ymax, e)
				}
			}
		}
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax, ymin, ymax = 0, 1, 0, 1
		if fd.LogX {
			xmin, xmax = 1, 10
		}
		if fd.LogY {
			ymin, ymax = 1, 10
		}
	}
	switch fd.Kind {
	case Bar, Histogram:
		ymin = math.Min(0, ymin)
	case CDF, CCDF:
		if !fd.LogY {
			ymin, ymax = 0, 1
		}
	}
	fd.XMin, fd.XMax = axisSpan(xmin, xmax, fd.LogX, fd.Kind == Bar || fd.Kind == Histogram)
	fd.YMin, fd.YMax = axisSpan(ymin, ymax, fd.LogY, false)
	if fd.Kind == Bar || fd.Kind == Histogram {
		fd.YMin = math.Min(0, fd.YMin)
		if fd.Kind == Bar {
			fd.XMin, fd.XMax = 0, math.Max(1, float64(len(fd.Categories)))
		}
	}
}

// axisSpan widens [lo, hi] to whole decades (log) or by 4% each side.
func axisSpan(lo, hi float64, log, exact bool) (float64, float64) {
	if log {
		a, b := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if a == b {
			b++
		}
		return math.Pow(10, a), math.Pow(10, b)
	}
	if hi == lo {
		d := math.Max(math.Abs(lo)*0.1, 1)
		return lo - d, hi + d
	}
	if exact {
		return lo, hi
	}
	m := (hi - lo) * 0.04
	nlo, nhi := lo-m, hi+m
	if lo >= 0 && nlo < 0 {
		nlo = 0
	}
	return nlo, nhi
}

var unitSuffix = regexp.MustCompile(`_(db|dbm|us|ns|ms|s|gbps|bytes|b|pct)$`)

// humanLabel makes an axis label from a column name and unit:
// attenuation_db, dB -> "Attenuation (dB)".
func humanLabel(name, unit string) string {
	base := name
	if unit != "" {
		base = unitSuffix.ReplaceAllString(base, "")
	}
	base = strings.ReplaceAll(base, "_", " ")
	if base != "" {
		base = strings.ToUpper(base[:1]) + base[1:]
	}
	if u := displayUnit(unit); u != "" {
		return base + " (" + u + ")"
	}
	return base
}

func displayUnit(u string) string {
	switch u {
	case "", "1":
		return ""
	case "us":
		return "µs"
	}
	return u
}

// sortNatural sorts strings with their digit runs compared as numbers:
// h2 before h10.
func sortNatural(s []string) {
	re := regexp.MustCompile(`^(.*?)(\d+)$`)
	sort.SliceStable(s, func(i, j int) bool {
		a, b := re.FindStringSubmatch(s[i]), re.FindStringSubmatch(s[j])
		if a != nil && b != nil && a[1] == b[1] {
			x, _ := strconv.Atoi(a[2])
			y, _ := strconv.Atoi(b[2])
			return x < y
		}
		return s[i] < s[j]
	})
}

// CheckFigure reports what makes a figure misleading: no point, a series
// whose x goes back (a zig-zag), two series with one legend entry.
func CheckFigure(fd FigureData) []string {
	var probs []string
	if fd.Empty() {
		probs = append(probs, fmt.Sprintf("figure %s: no point drawn", fd.Name))
	}
	if len(fd.Legend) != len(fd.Series) {
		probs = append(probs, fmt.Sprintf("figure %s: %d legend entries for %d series", fd.Name, len(fd.Legend), len(fd.Series)))
	}
	seen := map[string]bool{}
	for _, l := range fd.Legend {
		if seen[l] {
			probs = append(probs, fmt.Sprintf("figure %s: legend entry %q twice", fd.Name, l))
		}
		seen[l] = true
	}
	connected := fd.Kind == Line || fd.Kind == Step || fd.Kind == CDF || fd.Kind == CCDF
	for _, s := range fd.Series {
		for i := 1; i < len(s.Points); i++ {
			// A line through two points at one x, or any series going
			// back, draws a zig-zag; markers may share an x.
			if x0, x1 := s.Points[i-1].X, s.Points[i].X; x1 < x0 || (connected && x1 == x0) {
				probs = append(probs, fmt.Sprintf("figure %s series %q: x %g after %g: the series zig-zags (is a series column missing?)", fd.Name, s.Name, s.Points[i].X, s.Points[i-1].X))
				break
			}
		}
	}
	return probs
}

// svgBuf is a small helper over bytes.Buffer for SVG text.
type svgBuf struct{ bytes.Buffer }

func (b *svgBuf) f(format string, a ...any) { fmt.Fprintf(&b.Buffer, format, a...) }
