package results

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// figFuzzFigures are one figure of every kind over the fuzzed table, with
// the options that change how its rows are read: series and a legend, a
// Where, error columns, a zero bound, log axes, a phase, scales, bins.
var figFuzzFigures = []Figure{
	{Name: "line", Kind: Line, X: "x", Y: "y", Series: []string{"s"}, Low: "lo", High: "hi", ZeroAt: "lo", Phase: "p", LogY: true},
	{Name: "scatter", Kind: Scatter, X: "x", Y: "y", Legend: "{s} at {p}", Where: []Cond{{Column: "p", Value: "1"}}, LogX: true},
	{Name: "step", Kind: Step, X: "x", Y: "y", XScale: 1e-3, YScale: 1e9},
	{Name: "bar", Kind: Bar, X: "s", Y: "y", Series: []string{"p"}, Aggregate: "mean"},
	{Name: "hist", Kind: Histogram, X: "x", Series: []string{"s"}},
	{Name: "histw", Kind: Histogram, X: "x", BinWidth: 0.5, Bins: 7},
	{Name: "cdf", Kind: CDF, X: "x", Series: []string{"s"}, LogX: true},
	{Name: "ccdf", Kind: CCDF, X: "y", Tail: 0.1, LogX: true, LogY: true, Phase: "p"},
}

var figFuzzFields = []Field{{Name: "x"}, {Name: "y", Unit: "ns"}, {Name: "s"}, {Name: "lo"}, {Name: "hi"}, {Name: "p"}}

// FuzzFigureCSV reads a bundle's figure table as ReadFigures does (the
// table gzip-compressed or not, as fct_samples.csv.gz is) and draws every
// figure: bad rows are an error naming the file and its line, never a
// panic, a hang or memory out of proportion to the input.
func FuzzFigureCSV(f *testing.F) {
	f.Add([]byte("x,y,s,lo,hi,p\n1,2,a,1,3,0\n2,0,a,,,1\n3,4,b,3,5,1\n"), false)
	f.Add([]byte("x,y,s,lo,hi,p\n1e17,1,a,,,0\n1.0000000000000002e17,2,a,,,1\n"), true)
	f.Add([]byte("x,y,s,lo,hi,p\n-Inf,NaN,a,,,0\n+Inf,1e308,b,,,1\n5e-324,-1e308,\"c\nd\",,,2\n"), false)
	f.Add([]byte("y,x,s\n1,2,a\n"), false)
	f.Add([]byte("x,y,s,lo,hi,p\n1,2,a,1,3\n"), true)
	f.Add([]byte("x,y,s,lo,hi,p\n\"1,2,a,1,3,0\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, gz bool) {
		if len(data) > 64<<10 {
			return
		}
		dir := t.TempDir()
		rel := "data/t.csv"
		body := data
		if gz {
			rel += ".gz"
			var b bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&b, gzip.NoCompression)
			zw.Write(data)
			zw.Close()
			body = b.Bytes()
		}
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), body, 0o644); err != nil {
			t.Fatal(err)
		}
		figs := make([]Figure, len(figFuzzFigures))
		for i, fg := range figFuzzFigures {
			fg.Table = "t"
			figs[i] = fg
		}
		type resource struct {
			Name   string `json:"name"`
			Path   string `json:"path"`
			Schema struct {
				Fields []Field `json:"fields"`
			} `json:"schema"`
		}
		res := resource{Name: "t", Path: rel}
		res.Schema.Fields = figFuzzFields
		dp, err := json.Marshal(map[string]any{"resources": []resource{res}, "figures": figs})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "datapackage.json"), dp, 0o644); err != nil {
			t.Fatal(err)
		}
		fds, err := ReadFigures(dir)
		if err != nil {
			if !strings.Contains(err.Error(), rel) {
				t.Fatalf("the error does not name the file %s: %v", rel, err)
			}
			return
		}
		if len(fds) != len(figFuzzFigures) {
			t.Fatalf("%d figures drawn, %d declared", len(fds), len(figFuzzFigures))
		}
		for _, fd := range fds {
			npts := 0
			for _, s := range fd.Series {
				npts += len(s.Points)
			}
			// A histogram's bins are bounded, whatever its values; every
			// other kind draws at most a point a row.
			if limit := len(data) + maxHistBins*len(fd.Series); npts > limit {
				t.Fatalf("figure %s: %d points from %d bytes", fd.Name, npts, len(data))
			}
			_ = CheckFigure(fd)
			_ = fd.SVG()
		}
	})
}

// A figure table's bad input is an error naming the file and the line.
func TestFigureCSVErrorsNameFileAndLine(t *testing.T) {
	for _, c := range []struct{ csv, want string }{
		{"x,q,s,lo,hi,p\n1,2,a,1,3,0\n", `data/t.csv: line 1: the header has no column "y", which figure line reads as its y`},
		{"x,y,s,lo,hi,p\n1,2,a,1,3,0\n1,2,a\n", "data/t.csv: record on line 3: wrong number of fields"},
		{"x,y,s,lo,hi,p\n1,2,a,1,3,0\n\"" + strings.Repeat("7", maxRecordBytes+8<<10), "data/t.csv: after line 2: a record longer than 1048576 bytes"},
	} {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "data"), 0o755)
		if err := os.WriteFile(filepath.Join(dir, "data", "t.csv"), []byte(c.csv), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := buildTableFigures(dir, "data/t.csv", figFuzzFigures, figFuzzFields)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40q: got %v, want %q", c.csv, err, c.want)
		}
	}
}
