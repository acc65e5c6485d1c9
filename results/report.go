package results

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// renderReport makes report.html: the run at a glance and one SVG chart per
// table that declares a Plot. Self-contained: no scripts, no external files.
func (b *Bundle) renderReport() ([]byte, error) {
	type tableView struct {
		Title, Path, Description string
		SVG                      template.HTML
		Rows                     int
	}
	var tables []tableView
	for _, t := range b.tables {
		rel := t.t.File()
		tv := tableView{Title: t.t.Title, Path: rel, Description: t.t.Description, Rows: t.rows}
		if tv.Title == "" {
			tv.Title = t.t.Name
		}
		if t.t.Plot != nil && !t.t.Compress {
			data, err := os.ReadFile(filepath.Join(b.dir, rel))
			if err != nil {
				return nil, err
			}
			recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
			if err != nil {
				return nil, fmt.Errorf("report: %s: %w", rel, err)
			}
			tv.SVG = template.HTML(plotSVG(t.t, recs))
		}
		tables = append(tables, tv)
	}
	summary := ""
	if s, err := os.ReadFile(filepath.Join(b.dir, "summary.json")); err == nil {
		summary = string(s)
	}
	inv, _ := json.MarshalIndent(b.m.Lab.Inventory, "", "  ")
	var buf bytes.Buffer
	err := reportTmpl.Execute(&buf, map[string]any{"M": b.m, "Tables": tables, "Summary": summary, "Inventory": string(inv)})
	return buf.Bytes(), err
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"dur": func(m Manifest) string {
		if m.Ended == nil {
			return "not finished"
		}
		return m.Ended.Sub(m.Started).Round(1e6).String()
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.M.RunID}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:70em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left;font-size:90%}
.ok{color:#060}.failed,.aborted,.running{color:#b00}pre{background:#f6f6f6;padding:.6em;overflow:auto;font-size:85%}
svg{background:#fff;border:1px solid #ddd}
</style></head><body>
<h1>{{.M.Recipe.Name}} <small>v{{.M.Recipe.Version}}</small></h1>
<p>Run <code>{{.M.RunID}}</code>: <b class="{{.M.Status}}">{{.M.Status}}</b>{{if .M.Reason}} ({{.M.Reason}}){{end}}</p>
<table>
<tr><th>started</th><td>{{.M.Started.Format "2006-01-02 15:04:05 MST"}}</td></tr>
<tr><th>duration</th><td>{{dur .M}}</td></tr>
<tr><th>lab</th><td>{{.M.Lab.Name}}{{if .M.Lab.Simulated}} (simulated){{end}} {{.M.Lab.InventoryPath}}</td></tr>
<tr><th>seed</th><td>{{.M.Seed}}</td></tr>
{{with .M.Progress}}<tr><th>progress</th><td>{{.StepsDone}}/{{.StepsTotal}} steps</td></tr>{{end}}
<tr><th>software</th><td>testbed {{.M.Software.TestbedVersion}} {{.M.Software.VCSRevision}} {{.M.Software.GoVersion}} {{.M.Software.OS}}/{{.M.Software.Arch}}</td></tr>
</table>
{{range .Tables}}<h2>{{.Title}}</h2>
{{if .SVG}}{{.SVG}}{{end}}
<p>{{.Description}} <a href="{{.Path}}">{{.Path}}</a> ({{.Rows}} rows)</p>
{{end}}
<h2>Summary</h2><pre>{{.Summary}}</pre>
<h2>Parameters</h2><table><tr><th>name</th><th>value</th><th>unit</th><th>source</th></tr>
{{range .M.Params}}<tr><td>{{.Name}}</td><td>{{.Value}}</td><td>{{.Unit}}</td><td>{{.Source}}</td></tr>{{end}}</table>
<h2>Devices</h2><table><tr><th>name</th><th>kind</th><th>driver</th><th>address</th><th>identity</th></tr>
{{range .M.Devices}}<tr><td>{{.Name}}</td><td>{{.Kind}}</td><td>{{.Driver}}</td><td>{{.Address}}</td><td>{{.Identity.Vendor}} {{.Identity.Model}} s/n {{.Identity.Serial}} fw {{.Identity.Firmware}}</td></tr>{{end}}</table>
{{if .M.Cleanup}}<h2>Cleanup</h2><table>{{range .M.Cleanup}}<tr><td>{{.Device}}</td><td>{{.Action}}</td><td>{{if .OK}}ok{{else}}FAILED: {{.Error}}{{end}}</td></tr>{{end}}</table>{{end}}
<h2>Inventory as used</h2><pre>{{.Inventory}}</pre>
</body></html>
`))

// plotSVG draws one line per series of the table's Plot.
func plotSVG(t Table, recs [][]string) string {
	p := t.Plot
	if len(recs) < 2 {
		return `<p>(no data)</p>`
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	xi, okx := col[p.X]
	yi, oky := col[p.Y]
	si, oks := col[p.Series]
	if !okx || !oky {
		return `<p>(plot columns missing)</p>`
	}
	type pt struct{ x, y float64 }
	series := map[string][]pt{}
	var names []string
	for _, r := range recs[1:] {
		x, err1 := strconv.ParseFloat(r[xi], 64)
		y, err2 := strconv.ParseFloat(r[yi], 64)
		if err1 != nil || err2 != nil || (p.LogX && x <= 0) || (p.LogY && y <= 0) {
			continue
		}
		name := ""
		if oks {
			name = r[si]
		}
		if _, seen := series[name]; !seen {
			names = append(names, name)
		}
		series[name] = append(series[name], pt{x, y})
	}
	tr := func(v float64, log bool) float64 {
		if log {
			return math.Log10(v)
		}
		return v
	}
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	// The x axis spans every measured row, even those a log y axis cannot
	// show (a loss-free point), so the reader sees where the sweep began.
	for _, r := range recs[1:] {
		if x, err := strconv.ParseFloat(r[xi], 64); err == nil && (!p.LogX || x > 0) {
			minX, maxX = math.Min(minX, tr(x, p.LogX)), math.Max(maxX, tr(x, p.LogX))
		}
	}
	for _, ps := range series {
		for _, q := range ps {
			minX, maxX = math.Min(minX, tr(q.x, p.LogX)), math.Max(maxX, tr(q.x, p.LogX))
			minY, maxY = math.Min(minY, tr(q.y, p.LogY)), math.Max(maxY, tr(q.y, p.LogY))
		}
	}
	if math.IsInf(minY, 0) {
		return `<p>(no plottable points: every value is zero on a log axis)</p>`
	}
	if p.LogY {
		minY, maxY = math.Floor(minY), math.Ceil(maxY)
	}
	if p.LogX {
		minX, maxX = math.Floor(minX), math.Ceil(maxX)
	}
	if maxX == minX {
		maxX++
	}
	if maxY == minY {
		maxY++
	}
	const W, H, L, R, T, B = 720.0, 420.0, 70.0, 150.0, 30.0, 50.0
	sx := func(v float64) float64 { return L + (v-minX)/(maxX-minX)*(W-L-R) }
	sy := func(v float64) float64 { return H - B - (v-minY)/(maxY-minY)*(H-T-B) }
	unit := func(name string) string {
		for _, f := range t.Fields {
			if f.Name == name && f.Unit != "" && f.Unit != "1" {
				return name + " (" + f.Unit + ")"
			}
		}
		return name
	}
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`, W, H, W, H)
	fmt.Fprintf(&s, `<text x="%.0f" y="18" font-size="13">%s</text>`, L, template.HTMLEscapeString(p.Title))
	fmt.Fprintf(&s, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`, L, T, W-L-R, H-T-B)
	for _, v := range ticks(minY, maxY, p.LogY) {
		y := sy(v)
		fmt.Fprintf(&s, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`,
			L, W-R, y, y, L-4, y+4, tickLabel(v, p.LogY))
	}
	for _, v := range ticks(minX, maxX, p.LogX) {
		x := sx(v)
		fmt.Fprintf(&s, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`,
			x, x, T, H-B, x, H-B+14, tickLabel(v, p.LogX))
	}
	fmt.Fprintf(&s, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, L+(W-L-R)/2, H-12, template.HTMLEscapeString(unit(p.X)))
	fmt.Fprintf(&s, `<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">%s</text>`, T+(H-T-B)/2, template.HTMLEscapeString(unit(p.Y)))
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}
	for i, name := range names {
		ps := series[name]
		sort.Slice(ps, func(a, b int) bool { return ps[a].x < ps[b].x })
		c := colors[i%len(colors)]
		var pts []string
		for _, q := range ps {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(tr(q.x, p.LogX)), sy(tr(q.y, p.LogY))))
		}
		fmt.Fprintf(&s, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, c, strings.Join(pts, " "))
		for _, q := range pts {
			xy := strings.SplitN(q, ",", 2)
			fmt.Fprintf(&s, `<circle cx="%s" cy="%s" r="2.2" fill="%s"/>`, xy[0], xy[1], c)
		}
		ly := T + 14 + float64(i)*16
		fmt.Fprintf(&s, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/><text x="%.0f" y="%.1f">%s</text>`,
			W-R+10, W-R+28, ly-4, ly-4, c, W-R+32, ly, template.HTMLEscapeString(name))
	}
	s.WriteString(`</svg>`)
	return s.String()
}

// ticks are decade marks on a log axis, about six round values otherwise.
func ticks(lo, hi float64, log bool) []float64 {
	var out []float64
	if log {
		step := math.Max(1, math.Ceil((hi-lo)/10))
		for v := math.Ceil(lo); v <= hi+1e-9; v += step {
			out = append(out, v)
		}
		return out
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*mag {
			step = m * mag
			break
		}
	}
	for v := math.Ceil(lo/step) * step; v <= hi+1e-9; v += step {
		out = append(out, v)
	}
	return out
}

func tickLabel(v float64, log bool) string {
	if log {
		return fmt.Sprintf("1e%d", int(math.Round(v)))
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
