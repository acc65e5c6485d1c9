// Package grafana holds the lab's Grafana dashboard (testbed-lab.json) and
// the test that keeps it in step with the metrics the orchestrator
// publishes.
package grafana

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"testbed/orchestrator"
)

// Labels series get on their way to a dashboard, besides their own:
// Prometheus adds job and instance when scraping, and exp run's pushes
// group by lab, suite and entry.
var addedLabels = []string{"job", "instance", "lab", "suite", "entry"}

// PromQL words that are not metric names.
var promqlWords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true,
}

var (
	stringRe   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	varRe      = regexp.MustCompile(`\$\{?[A-Za-z_][A-Za-z0-9_]*\}?`)
	selectorRe = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}`)
	matcherRe  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	groupingRe = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	rangeRe    = regexp.MustCompile(`\[[^\]]*\]`)
	numberRe   = regexp.MustCompile(`\b\d+(\.\d+)?([eE][-+]?\d+)?\b`)
	identRe    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	labelVals  = regexp.MustCompile(`^\s*label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)
)

// family resolves a series name to the family that publishes it: the name
// itself, or a histogram's _bucket, _sum and _count.
func family(known map[string]orchestrator.MetricInfo, name string) (orchestrator.MetricInfo, bool) {
	if fi, ok := known[name]; ok {
		return fi, fi.Kind != orchestrator.KindHistogram // a histogram is read through its series
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if fi, ok := known[strings.TrimSuffix(name, suf)]; ok && strings.HasSuffix(name, suf) && fi.Kind == orchestrator.KindHistogram {
			return fi, true
		}
	}
	return orchestrator.MetricInfo{}, false
}

func labelsOf(fi orchestrator.MetricInfo, series string) []string {
	ls := append(slices.Clone(fi.Labels), addedLabels...)
	if strings.HasSuffix(series, "_bucket") {
		ls = append(ls, "le")
	}
	return ls
}

// checkExpr lists what in a PromQL expression does not match the metrics
// the orchestrator publishes: unknown series names, label names a
// selector or a grouping uses that the series do not have. It returns the
// series names used.
func checkExpr(known map[string]orchestrator.MetricInfo, expr string) (used []string, problems []string) {
	e := stringRe.ReplaceAllString(expr, `""`)
	e = varRe.ReplaceAllString(e, "1m")
	var labelsUsed []string
	e = selectorRe.ReplaceAllStringFunc(e, func(s string) string {
		m := selectorRe.FindStringSubmatch(s)
		for _, mm := range matcherRe.FindAllStringSubmatch(m[2], -1) {
			if mm[1] == "__name__" {
				problems = append(problems, fmt.Sprintf("%s: select series by name, not with __name__", expr))
				continue
			}
			if m[1] == "" {
				labelsUsed = append(labelsUsed, mm[1])
				continue
			}
			fi, ok := family(known, m[1])
			if ok && !slices.Contains(labelsOf(fi, m[1]), mm[1]) {
				problems = append(problems, fmt.Sprintf("%s: %s has no label %s (labels: %s)", expr, m[1], mm[1], strings.Join(labelsOf(fi, m[1]), ", ")))
			}
		}
		return " " + m[1] + " "
	})
	e = groupingRe.ReplaceAllStringFunc(e, func(s string) string {
		for _, l := range strings.Split(groupingRe.FindStringSubmatch(s)[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labelsUsed = append(labelsUsed, l)
			}
		}
		return " "
	})
	e = rangeRe.ReplaceAllString(e, " ")
	e = numberRe.ReplaceAllString(e, " ")
	for _, loc := range identRe.FindAllStringIndex(e, -1) {
		id := e[loc[0]:loc[1]]
		rest := strings.TrimLeft(e[loc[1]:], " \t\n")
		if promqlWords[strings.ToLower(id)] || strings.HasPrefix(rest, "(") {
			continue // a keyword or a function
		}
		used = append(used, id)
	}
	for _, n := range used {
		if _, ok := family(known, n); !ok {
			problems = append(problems, fmt.Sprintf("%s: %s is not a series the orchestrator publishes (orchestrator.KnownMetrics)", expr, n))
		}
	}
	// A grouping or bare matcher label must belong to some series the
	// expression reads.
	for _, l := range labelsUsed {
		found := false
		for _, n := range used {
			if fi, ok := family(known, n); ok && slices.Contains(labelsOf(fi, n), l) {
				found = true
			}
		}
		if !found && len(used) > 0 {
			problems = append(problems, fmt.Sprintf("%s: no series of the expression has the label %s", expr, l))
		}
	}
	return used, problems
}

type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *datasource     `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	Title      string      `json:"title"`
	Type       string      `json:"type"`
	Datasource *datasource `json:"datasource"`
	Targets    []struct {
		Expr       string      `json:"expr"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

func knownMetrics() map[string]orchestrator.MetricInfo {
	known := map[string]orchestrator.MetricInfo{}
	for _, fi := range orchestrator.KnownMetrics() {
		known[fi.Name] = fi
	}
	return known
}

func TestDashboardUsesOnlyPublishedMetrics(t *testing.T) {
	b, err := os.ReadFile("testbed-lab.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("testbed-lab.json: %v", err)
	}
	if d.Title == "" || d.UID == "" {
		t.Errorf("dashboard needs a title and a uid")
	}
	known := knownMetrics()
	var exprs []string
	used := map[string]bool{}
	check := func(where, expr string) {
		exprs = append(exprs, expr)
		names, problems := checkExpr(known, expr)
		for _, p := range problems {
			t.Errorf("%s: %s", where, p)
		}
		if len(names) == 0 {
			t.Errorf("%s: %q reads no series", where, expr)
		}
		for _, n := range names {
			if fi, ok := family(known, n); ok {
				used[fi.Name] = true
			}
		}
	}

	// The Prometheus data source is a variable, so the dashboard imports
	// into any Grafana.
	dsVar := false
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			var q string
			if json.Unmarshal(v.Query, &q) == nil && q == "prometheus" {
				dsVar = v.Name == "datasource"
			}
		case "query":
			var q struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &q); err != nil {
				_ = json.Unmarshal(v.Query, &q.Query)
			}
			if v.Datasource == nil || v.Datasource.UID != "${datasource}" {
				t.Errorf("variable %s: data source %+v, want the ${datasource} variable", v.Name, v.Datasource)
			}
			m := labelVals.FindStringSubmatch(q.Query)
			if m == nil {
				t.Errorf("variable %s: %q: expected label_values(<series>, <label>)", v.Name, q.Query)
				continue
			}
			where := "variable " + v.Name
			check(where, m[1])
			names, _ := checkExpr(known, m[1])
			for _, n := range names {
				if fi, ok := family(known, n); ok && !slices.Contains(labelsOf(fi, n), m[2]) {
					t.Errorf("%s: %s has no label %s", where, n, m[2])
				}
			}
		}
	}
	if !dsVar {
		t.Errorf("no data source variable named datasource of type prometheus")
	}

	var walk func(ps []panel)
	n := 0
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			n++
			where := fmt.Sprintf("panel %q", p.Title)
			if len(p.Targets) == 0 {
				t.Errorf("%s has no query", where)
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("%s: data source %+v, want the ${datasource} variable", where, p.Datasource)
			}
			for _, tg := range p.Targets {
				if tg.Datasource != nil && tg.Datasource.UID != "${datasource}" {
					t.Errorf("%s: a query's data source is %+v", where, tg.Datasource)
				}
				check(where, tg.Expr)
			}
		}
	}
	walk(d.Panels)
	if n < 8 {
		t.Errorf("only %d panels", n)
	}
	// What a lab engineer watches must be on it.
	for _, want := range []string{"testbed_run_state", "testbed_run_step", "testbed_run_progress_ratio", "testbed_frame_loss_ratio",
		"testbed_sent_frames_total", "testbed_queue_depth_packets", "testbed_fct_seconds", "testbed_result_value"} {
		if !used[want] {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
	promtoolCheckRules(t, exprs)
}

// The check must be able to fail: names and labels the orchestrator does
// not publish are caught.
func TestDashboardCheckCatchesDrift(t *testing.T) {
	known := knownMetrics()
	for _, c := range []struct{ expr, want string }{
		{`rate(testbed_frames_sent_total{link="a"}[5m])`, "testbed_frames_sent_total is not a series"},
		{`testbed_fct_seconds{link="a"}`, "testbed_fct_seconds is not a series"},
		{`histogram_quantile(0.9, sum by (le, port) (rate(testbed_fct_seconds_bucket[1m])))`, "no series of the expression has the label port"},
		{`testbed_run_state{status="ok"} == 1`, "testbed_run_state has no label status"},
		{`testbed_run_progress_ratio{le="1"}`, "has no label le"},
		{`{__name__="testbed_run_step"}`, "__name__"},
	} {
		_, problems := checkExpr(known, c.expr)
		if !strings.Contains(strings.Join(problems, "\n"), c.want) {
			t.Errorf("%s: problems %q, want one saying %q", c.expr, problems, c.want)
		}
	}
	for _, ok := range []string{
		`histogram_quantile(0.99, sum by (le, link) (rate(testbed_fct_seconds_bucket{run_id=~"$run_id"}[$__rate_interval])))`,
		`sum by (type) (rate(testbed_run_events_total[5m]))`,
		`testbed_result_value{entry="nightly", metric=~"links.*"} > 1e-3`,
		`(time() - testbed_run_start_time_seconds) and on(recipe, run_id) (testbed_run_state{state="running"} == 1)`,
	} {
		if used, problems := checkExpr(known, ok); len(problems) > 0 || len(used) == 0 {
			t.Errorf("%s: used %v, problems %q", ok, used, problems)
		}
	}
}

// promtoolCheckRules checks that every expression parses as PromQL, as
// recording rules `promtool check rules` reads, when promtool (Debian
// package prometheus) is installed.
func promtoolCheckRules(t *testing.T, exprs []string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not on PATH (apt-get install prometheus): PromQL syntax not checked")
		return
	}
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, e := range exprs {
		e = strings.NewReplacer("$__rate_interval", "1m", "$__interval", "1m").Replace(e)
		e = varRe.ReplaceAllString(e, ".*")
		q, _ := json.Marshal(e) // a JSON string is a YAML string
		fmt.Fprintf(&b, "      - record: dashboard:expr_%d\n        expr: %s\n", i, q)
	}
	f := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, path, "check", "rules", f).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s\n%s", err, out, b.String())
	}
}
