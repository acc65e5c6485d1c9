package serve

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"testbed/results"
)

//go:embed static
var staticFS embed.FS

// openapiYAML documents the JSON API (served at /api/v1/openapi.yaml).
//
//go:embed openapi.yaml
var openapiYAML []byte

//go:embed templates/*.html
var templateFS embed.FS

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"whenp": func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"ago": func(t time.Time) string { return fmtDuration(time.Since(t)) + " ago" },
	"in": func(t time.Time) string {
		d := time.Until(t)
		if d < 0 {
			return "expired " + fmtDuration(-d) + " ago"
		}
		return "in " + fmtDuration(d)
	},
	"dur": func(s *float64) string {
		if s == nil {
			return ""
		}
		return fmtDuration(time.Duration(*s * float64(time.Second)))
	},
	"pct":  func(f float64) string { return strconv.FormatFloat(math.Round(f*1000)/10, 'f', -1, 64) },
	"num":  func(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) },
	"nump": func(f *float64) string { return fmtNum(f) },
	"any":  func(v any) string { return fmtAny(v) },
	"svg":  func(s string) template.HTML { return template.HTML(s) },
	"join": strings.Join,
	"q":    func(s string) string { return template.URLQueryEscaper(s) },
}

func fmtNum(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'g', 6, 64)
}

func fmtAny(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(x, 'g', 6, 64)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()+0.5))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours()/24), int(d.Hours())%24)
}

var tmpl = template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html"))

type page struct {
	Title   string
	Nav     string
	Version string
	// Live is the server-sent events URL whose fragments replace the
	// element with id "live".
	Live string
	Data any
}

func (s *Server) render(w http.ResponseWriter, name string, p page) {
	p.Version = s.version
	var b bytes.Buffer
	if err := tmpl.ExecuteTemplate(&b, name, p); err != nil {
		s.log.Error("render page", "page", name, "err", err)
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

func fragment(name string, data any) (string, error) {
	var b bytes.Buffer
	err := tmpl.ExecuteTemplate(&b, name, data)
	return b.String(), err
}

func (s *Server) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	b, err := staticFS.ReadFile("static/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch {
	case strings.HasSuffix(name, ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case strings.HasSuffix(name, ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	}
	_, _ = w.Write(b)
}

func (s *Server) pageLab(w http.ResponseWriter, r *http.Request) {
	s.render(w, "lab.html", page{Title: "Lab", Nav: "lab", Live: "/live/lab", Data: s.labSnapshot(r.Context())})
}

func (s *Server) liveLab(w http.ResponseWriter, r *http.Request) {
	s.stream(w, r, func(ctx context.Context) (string, bool) {
		lab := s.labSnapshot(ctx)
		html, err := fragment("lab-live", lab)
		if err != nil {
			return "render: " + template.HTMLEscapeString(err.Error()), true
		}
		return html, false
	})
}

type runsPage struct {
	Filter  RunFilter
	Running []Run
	Runs    []Run
	Recipes []string
	More    string
}

func (s *Server) runsPage(ctx context.Context, f RunFilter) (runsPage, error) {
	p := runsPage{Filter: f}
	var err error
	if p.Running, err = s.ix.Runs(ctx, RunFilter{Status: "running", Recipe: f.Recipe, Limit: 50}); err != nil {
		return p, err
	}
	lim := f.Limit
	if lim <= 0 {
		lim = 100
	}
	if p.Runs, err = s.ix.Runs(ctx, f); err != nil {
		return p, err
	}
	if len(p.Runs) == lim {
		p.More = p.Runs[len(p.Runs)-1].RunID
	}
	p.Recipes, err = s.ix.Recipes(ctx)
	return p, err
}

func (s *Server) pageRuns(w http.ResponseWriter, r *http.Request) {
	f, err := runFilter(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p, err := s.runsPage(r.Context(), f)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.render(w, "runs.html", page{Title: "Runs", Nav: "runs", Live: "/live/runs?recipe=" + template.URLQueryEscaper(f.Recipe), Data: p})
}

func (s *Server) liveRuns(w http.ResponseWriter, r *http.Request) {
	recipe := r.URL.Query().Get("recipe")
	s.stream(w, r, func(ctx context.Context) (string, bool) {
		running, err := s.ix.Runs(ctx, RunFilter{Status: "running", Recipe: recipe, Limit: 50})
		if err != nil {
			return template.HTMLEscapeString(err.Error()), false
		}
		type live struct {
			Run
			P *Progress
		}
		var rows []live
		for _, run := range running {
			l := live{Run: run}
			if p, err := runProgress(s.ix.RunsDir() + "/" + run.Dir); err == nil {
				l.P = &p
			}
			rows = append(rows, l)
		}
		html, err := fragment("running-live", rows)
		if err != nil {
			return template.HTMLEscapeString(err.Error()), true
		}
		return html, false
	})
}

func (s *Server) pageRun(w http.ResponseWriter, r *http.Request) {
	d, err := s.runDetail(r.Context(), r.PathValue("id"))
	if err != nil {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	live := ""
	if d.Status == "running" {
		live = "/live/runs/" + d.RunID
	}
	s.render(w, "run.html", page{Title: d.Recipe + " " + d.RunID, Nav: "runs", Live: live, Data: d})
}

func (s *Server) liveRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.stream(w, r, func(ctx context.Context) (string, bool) {
		d, err := s.runDetail(ctx, id)
		if err != nil {
			return template.HTMLEscapeString(err.Error()), errors.Is(err, ErrNoRun)
		}
		html, err := fragment("run-live", d)
		if err != nil {
			return template.HTMLEscapeString(err.Error()), true
		}
		// Once the run ended the page is sent whole one last time.
		return html, d.Status != "running"
	})
}

type diffPage struct {
	Run, Prev Run
	Report    *results.DiffReport
	Changed   []results.MetricDiff
	Same      int
	Prov      []results.ProvenanceDiff
}

func (s *Server) pageDiff(w http.ResponseWriter, r *http.Request) {
	rep, run, prev, err := s.diffReport(r.Context(), r.PathValue("id"))
	if err != nil {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	p := diffPage{Run: run, Prev: prev, Report: rep, Changed: rep.Changed(), Prov: rep.ProvenanceChanged()}
	p.Same = len(rep.Metrics) - len(p.Changed)
	s.render(w, "diff.html", page{Title: "diff " + run.RunID, Nav: "runs", Data: p})
}

type trendsPage struct {
	Filter TrendFilter
	Trends []Trend
	Suites []string
}

func (s *Server) pageTrends(w http.ResponseWriter, r *http.Request) {
	f, err := trendFilter(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ts, err := s.ix.Trends(r.Context(), f)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.render(w, "trends.html", page{Title: "Trends", Nav: "trends", Data: trendsPage{Filter: f, Trends: ts}})
}

func (s *Server) trendSVG(w http.ResponseWriter, r *http.Request) {
	f, err := trendFilter(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if f.Suite == "" || f.Entry == "" || f.Metric == "" {
		http.Error(w, "plot.svg needs suite, suite_entry and metric", http.StatusBadRequest)
		return
	}
	ts, err := s.ix.Trends(r.Context(), f)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if len(ts) == 0 {
		http.Error(w, fmt.Sprintf("no trend of %s in suite %s entry %s", f.Metric, f.Suite, f.Entry), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	_, _ = w.Write([]byte(ts[0].SVG()))
}

// Recipes is the recipes the index has runs of.
func (ix *Index) Recipes(ctx context.Context) ([]string, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT DISTINCT recipe FROM runs ORDER BY recipe`)
	if err != nil {
		return nil, fmt.Errorf("run index: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
