package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func figTable() Table {
	return Table{
		Name: "pts",
		Fields: []Field{
			{Name: "speed", Type: "integer", Unit: "Gb/s"},
			{Name: "mode", Type: "string"},
			{Name: "loss", Type: "number", Unit: "1"},
			{Name: "eff", Type: "number", Unit: "1"},
			{Name: "eff_high", Type: "number", Unit: "1"},
			{Name: "fct_ns", Type: "integer", Unit: "ns"},
		},
		Figures: []Figure{
			{Name: "eff", Title: "Effective loss", Kind: Line, X: "loss", Y: "eff", Series: []string{"speed", "mode"},
				ZeroAt: "eff_high", High: "eff_high", LogX: true, LogY: true, XLabel: "Actual loss rate"},
			{Name: "eff-25", Title: "25G only", Kind: Scatter, X: "loss", Y: "eff", Where: []Cond{{"speed", "25.0"}}, Series: []string{"mode"}},
			{Name: "fct-tail", Title: "Tail", Kind: CCDF, X: "fct_ns", XScale: 1e-3, Series: []string{"mode"}, LogY: true, Tail: 0.5},
			{Name: "fct-hist", Title: "Histogram", Kind: Histogram, X: "fct_ns", Bins: 4},
			{Name: "bars", Title: "Bars", Kind: Bar, X: "mode", Y: "eff", Aggregate: "sum"},
		},
	}
}

// TestFiguresWrittenListedAndChecked writes a table with several figures
// and reads them back from the finished bundle.
func TestFiguresWrittenListedAndChecked(t *testing.T) {
	b, err := Create(t.TempDir(), Manifest{RunID: "r1"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := b.CreateTable(figTable())
	if err != nil {
		t.Fatal(err)
	}
	rows := [][]any{
		// Written out of x order: the figure sorts within a series.
		{25, "lg", 1e-3, 1e-9, 3e-9, 5000},
		{25, "lg", 1e-5, 0.0, 2e-8, 6000},
		{100, "lg", 1e-4, 1e-8, 2e-8, 7000},
		{100, "lg", 1e-3, 2e-8, 3e-8, 9000},
		{25, "off", 1e-3, 1e-3, 1.1e-3, 8000},
	}
	for _, r := range rows {
		if err := tw.Write(r...); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Finalize(StatusOK, ""); err != nil {
		t.Fatal(err)
	}
	figs, err := ReadFigures(b.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 5 {
		t.Fatalf("%d figures, want 5", len(figs))
	}
	by := map[string]FigureData{}
	for _, fd := range figs {
		by[fd.Name] = fd
		for _, p := range CheckFigure(fd) {
			t.Error(p)
		}
	}
	eff := by["eff"]
	if got := strings.Join(eff.Legend, ","); got != "25 lg,100 lg,25 off" {
		t.Errorf("legend %q, want one entry per speed x mode", got)
	}
	first := eff.Series[0].Points[0]
	if first.X != 1e-5 || !first.Bound || first.Y != 2e-8 {
		t.Errorf("zero effective loss drawn as %+v, want at its upper bound 2e-8, marked", first)
	}
	if eff.XLabelText != "Actual loss rate" || eff.YLabelText != "Eff" {
		t.Errorf("labels %q, %q", eff.XLabelText, eff.YLabelText)
	}
	if eff.YMin != 1e-9 || eff.YMax != 1e-2 {
		t.Errorf("log y range [%g, %g], want decades around the data [1e-9, 1e-2]", eff.YMin, eff.YMax)
	}
	if n := len(by["eff-25"].Series); n != 2 {
		t.Errorf("filter speed=25: %d series, want lg and off", n)
	}
	tail := by["fct-tail"]
	// lg: 5, 6, 7, 9 us; P(X >= 6) = 0.75 is above the window, so the
	// curve enters it at 6 us; off's one value enters and leaves at 8 us.
	if len(tail.Series) != 2 || len(tail.Series[0].Points) != 3 || tail.Series[0].Points[0].X != 6 || tail.Series[0].Points[0].Y != 0.5 ||
		tail.Series[0].Points[1].X != 7 || tail.Series[0].Points[1].Y != 0.5 || len(tail.Series[1].Points) != 1 || tail.Series[1].Points[0].X != 8 {
		t.Errorf("ccdf %+v: want lg's top half entering at 6 us, then 7 and 9 us; off at 8 us", tail.Series)
	}
	var total float64
	for _, p := range by["fct-hist"].Series[0].Points {
		total += p.Y
	}
	if total != 5 {
		t.Errorf("histogram counts %g values, want 5", total)
	}
	if c := by["bars"].Categories; strings.Join(c, ",") != "lg,off" {
		t.Errorf("bar categories %v", c)
	}
	if y := by["bars"].Series[0].Points[0].Y; y != 1e-9+1e-8+2e-8 {
		t.Errorf("bar sum %g", y)
	}

	sums, err := os.ReadFile(filepath.Join(b.Dir(), "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(b.Dir(), "figures", "eff.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), `<svg xmlns="http://www.w3.org/2000/svg"`) || !strings.Contains(string(svg), `10<tspan dy="-6" font-size="9">-9</tspan>`) {
		t.Errorf("figures/eff.svg is not an SVG with 10^-9 ticks:\n%.500s", svg)
	}
	for _, f := range figs {
		if !strings.Contains(string(sums), "  "+f.Path+"\n") {
			t.Errorf("SHA256SUMS lacks %s", f.Path)
		}
	}
	var dp struct {
		Figures []Figure `json:"figures"`
	}
	raw, _ := os.ReadFile(filepath.Join(b.Dir(), "datapackage.json"))
	if err := json.Unmarshal(raw, &dp); err != nil || len(dp.Figures) != 5 || dp.Figures[0].Path != "figures/eff.svg" {
		t.Errorf("datapackage figures %+v (%v)", dp.Figures, err)
	}
	report, _ := os.ReadFile(filepath.Join(b.Dir(), "report.html"))
	if n := strings.Count(string(report), "<svg "); n != 5 {
		t.Errorf("report has %d figures, want 5", n)
	}
	if rep, err := Verify(b.Dir()); err != nil || !rep.OK {
		t.Errorf("bundle does not verify: %v %+v", err, rep)
	}
}

func TestCheckFigureFindsZigZagAndEmpty(t *testing.T) {
	fd := FigureData{Figure: Figure{Name: "f", Kind: Line}, Series: []SeriesData{{Name: "a", Points: []Point{{X: 1}, {X: 1}}}}, Legend: []string{"a"}}
	if p := CheckFigure(fd); len(p) != 1 || !strings.Contains(p[0], "zig-zags") {
		t.Errorf("two points at one x: %v", p)
	}
	if p := CheckFigure(FigureData{Figure: Figure{Name: "e"}}); len(p) != 1 || !strings.Contains(p[0], "no point") {
		t.Errorf("empty figure: %v", p)
	}
}

func TestFigureColumnsValidated(t *testing.T) {
	b, err := Create(t.TempDir(), Manifest{RunID: "r2"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Finalize(StatusOK, "")
	tb := figTable()
	tb.Figures = []Figure{{Name: "x", Kind: Line, X: "loss", Y: "nope"}}
	_, err = b.CreateTable(tb)
	if err == nil || !strings.Contains(err.Error(), `table pts figure "x": y column "nope" is not a field`) {
		t.Errorf("bad column: %v", err)
	}
	tb.Figures = []Figure{{Name: "x", Kind: "pie", X: "loss", Y: "eff"}}
	if _, err = b.CreateTable(tb); err == nil || !strings.Contains(err.Error(), `kind "pie"`) {
		t.Errorf("bad kind: %v", err)
	}
}
