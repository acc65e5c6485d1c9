package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"testbed/internal/readfile"
)

// renderReport makes report.html: the run at a glance, every table's
// figures (the same SVG as figures/<name>.svg), the headline numbers as a
// table with units, and the devices the run used. Self-contained: no
// scripts, no external files.
func (b *Bundle) renderReport(figs []FigureData) ([]byte, error) {
	type figView struct {
		Name, Path, Caption string
		SVG                 template.HTML
	}
	type tableView struct {
		Title, Path, Description string
		Figures                  []figView
		Rows                     int
	}
	var tables []tableView
	for _, t := range b.tables {
		rel := t.t.File()
		tv := tableView{Title: t.t.Title, Path: rel, Description: t.t.Description, Rows: t.rows}
		if tv.Title == "" {
			tv.Title = t.t.Name
		}
		for _, fd := range figs {
			if fd.Table == t.t.Name {
				tv.Figures = append(tv.Figures, figView{Name: fd.Name, Path: fd.Path, Caption: fd.Caption, SVG: template.HTML(fd.SVG())})
			}
		}
		tables = append(tables, tv)
	}
	var summary []summaryRow
	s, err := readfile.Read(filepath.Join(b.dir, "summary.json"), maxMetaBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("report: %w", err)
	}
	if err == nil {
		ms, err := FlattenSummary(s)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		for _, m := range ms {
			summary = append(summary, newSummaryRow(m))
		}
	}
	inv, _ := json.MarshalIndent(usedInventory(b.m.Lab.Inventory, b.m.Devices), "", "  ")
	var buf bytes.Buffer
	err = reportTmpl.Execute(&buf, map[string]any{"M": b.m, "Tables": tables, "Summary": summary, "Inventory": string(inv)})
	return buf.Bytes(), err
}

// summaryRow is one headline number of the report.
type summaryRow struct{ Name, Value, Unit string }

// unitBySuffix reads a summary key's unit from its suffix, the naming
// convention of every summary.json (loss_cliff_db, goodput_gbps).
var unitBySuffix = []struct{ suffix, unit string }{
	{"_dbm", "dBm"}, {"_db", "dB"}, {"_gbps", "Gb/s"}, {"_mbps", "Mb/s"}, {"_us", "µs"}, {"_ns", "ns"},
	{"_ms", "ms"}, {"_seconds", "s"}, {"_s", "s"}, {"_bytes", "B"}, {"_pct", "%"}, {"_percent", "%"}, {"_frames", "frames"},
}

// MetricUnit is the unit a summary metric's name says it has: the suffix
// of its last key that is not a number or an index (loss_cliff_db and
// loss_cliff_db.1e-06 are in dB), or "".
func MetricUnit(path string) string {
	keys := strings.Split(path, ".")
	for i := len(keys) - 1; i >= 0; i-- {
		k := keys[i]
		if _, err := strconv.ParseFloat(k, 64); err == nil || k == "" || strings.HasPrefix(k, "1e") || strings.HasPrefix(k, "1e-") {
			continue
		}
		for _, u := range unitBySuffix {
			if strings.HasSuffix(k, u.suffix) {
				return u.unit
			}
		}
		return ""
	}
	return ""
}

func newSummaryRow(m Metric) summaryRow {
	r := summaryRow{Name: m.Path, Unit: MetricUnit(m.Path)}
	switch v := m.Value.(type) {
	case float64:
		r.Value = strconv.FormatFloat(v, 'g', 6, 64)
	case nil:
		r.Value = "null"
	default:
		r.Value = fmt.Sprint(v)
	}
	return r
}

// usedInventory keeps, of the inventory as used, the devices the run
// bound and the links whose every device is one of them.
func usedInventory(inv any, devs []Device) any {
	raw, err := json.Marshal(inv)
	if err != nil {
		return inv
	}
	var doc map[string]any
	if json.Unmarshal(raw, &doc) != nil || doc == nil {
		return inv
	}
	used := map[string]bool{}
	for _, d := range devs {
		used[d.Name] = true
	}
	if ds, ok := doc["devices"].(map[string]any); ok {
		for n := range ds {
			if !used[n] {
				delete(ds, n)
			}
		}
	}
	if ls, ok := doc["links"].([]any); ok {
		kept := []any{}
		for _, l := range ls {
			refs := deviceRefs(l)
			all := len(refs) > 0
			for _, r := range refs {
				all = all && used[r]
			}
			if all {
				kept = append(kept, l)
			}
		}
		doc["links"] = kept
	}
	return doc
}

// deviceRefs collects the "device" values anywhere inside v.
func deviceRefs(v any) []string {
	var out []string
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			if s, ok := c.(string); ok && k == "device" {
				out = append(out, s)
			} else {
				out = append(out, deviceRefs(c)...)
			}
		}
	case []any:
		for _, c := range t {
			out = append(out, deviceRefs(c)...)
		}
	}
	return out
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
svg{background:#fff;border:1px solid #ddd;max-width:100%;height:auto}figure{margin:1em 0}figcaption{font-size:90%;color:#444}
table.num td:nth-child(2){text-align:right;font-variant-numeric:tabular-nums}
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
{{range .Figures}}<figure>{{.SVG}}<figcaption>{{if .Caption}}{{.Caption}} {{end}}<a href="{{.Path}}">{{.Path}}</a></figcaption></figure>
{{end}}<p>{{.Description}} <a href="{{.Path}}">{{.Path}}</a> ({{.Rows}} rows)</p>
{{end}}
<h2>Summary</h2>{{if .Summary}}<table class="num"><tr><th>metric</th><th>value</th><th>unit</th></tr>
{{range .Summary}}<tr><td><code>{{.Name}}</code></td><td>{{.Value}}</td><td>{{.Unit}}</td></tr>{{end}}</table>{{else}}<p>(no summary.json)</p>{{end}}
<h2>Parameters</h2><table><tr><th>name</th><th>value</th><th>unit</th><th>source</th></tr>
{{range .M.Params}}<tr><td>{{.Name}}</td><td>{{.Value}}</td><td>{{.Unit}}</td><td>{{.Source}}</td></tr>{{end}}</table>
<h2>Devices</h2><table><tr><th>name</th><th>kind</th><th>driver</th><th>address</th><th>identity</th></tr>
{{range .M.Devices}}<tr><td>{{.Name}}</td><td>{{.Kind}}</td><td>{{.Driver}}</td><td>{{.Address}}</td><td>{{.Identity.Vendor}} {{.Identity.Model}} s/n {{.Identity.Serial}} fw {{.Identity.Firmware}}</td></tr>{{end}}</table>
{{if .M.Cleanup}}<h2>Cleanup</h2><table>{{range .M.Cleanup}}<tr><td>{{.Device}}</td><td>{{.Action}}</td><td>{{if .OK}}ok{{else}}FAILED: {{.Error}}{{end}}</td></tr>{{end}}</table>{{end}}
<h2>Inventory as used (the devices of this run)</h2><pre>{{.Inventory}}</pre>
</body></html>
`))
