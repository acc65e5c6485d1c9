package grafana

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"testbed/experiments/monitor"
	"testbed/hostagent"
	"testbed/orchestrator"
)

// monitorMetrics is what testbed monitor serves, as the dashboard check
// reads metric families.
func monitorMetrics() map[string]orchestrator.MetricInfo {
	known := map[string]orchestrator.MetricInfo{}
	for _, d := range monitor.MetricDescs() {
		known[d.Name] = orchestrator.MetricInfo{Name: d.Name, Kind: d.Kind, Help: d.Help, Labels: d.Labels}
	}
	return known
}

// The monitor's dashboard reads only series the monitor serves, with
// their labels, through the data source variable, and shows what an
// operator watches; its PromQL parses (promtool, when installed).
func TestMonitorDashboardUsesOnlyServedMetrics(t *testing.T) {
	b, err := os.ReadFile("testbed-monitor.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("testbed-monitor.json: %v", err)
	}
	if d.Title == "" || d.UID == "" {
		t.Errorf("dashboard needs a title and a uid")
	}
	known := monitorMetrics()
	used := map[string]bool{}
	var exprs []string
	check := func(where, expr string) {
		exprs = append(exprs, strings.ReplaceAll(expr, "$__range", "1h"))
		names, problems := checkExpr(known, expr)
		for _, p := range problems {
			t.Errorf("%s: %s", where, strings.ReplaceAll(p, "the orchestrator publishes (orchestrator.KnownMetrics)", "testbed monitor serves (monitor.MetricDescs)"))
		}
		if len(names) == 0 {
			t.Errorf("%s: %q reads no series", where, expr)
		}
		for _, n := range names {
			used[n] = true
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		m := labelVals.FindStringSubmatch(q.Query)
		if m == nil || v.Datasource == nil || v.Datasource.UID != "${datasource}" {
			t.Errorf("variable %s: %q from %+v", v.Name, q.Query, v.Datasource)
			continue
		}
		check("variable "+v.Name, m[1])
	}
	panels := 0
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		panels++
		where := fmt.Sprintf("panel %q", p.Title)
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("%s: data source %+v, %d queries", where, p.Datasource, len(p.Targets))
		}
		for _, tg := range p.Targets {
			check(where, tg.Expr)
		}
	}
	if panels < 6 {
		t.Errorf("only %d panels", panels)
	}
	for _, want := range []string{"testbed_monitor_state", "testbed_monitor_loss_rate", "testbed_monitor_loss_rate_low", "testbed_monitor_loss_rate_high",
		"testbed_monitor_linkguardian_copies", "testbed_monitor_decisions_total", "testbed_monitor_read_errors_total"} {
		if !used[want] {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
	// The check fails on a name the monitor does not serve.
	if _, problems := checkExpr(known, `testbed_monitor_loss{link="a"}`); len(problems) == 0 {
		t.Errorf("an unserved series passed the check")
	}
	promtoolCheckRules(t, exprs)
}

// What the monitor actually serves on /metrics, after polling a link
// whose ends are hosts read through real hostagents on loopback, is what
// MetricDescs lists (so the dashboard check above is against the truth),
// and `promtool check metrics` accepts it when installed.
func TestMonitorServesTheDescribedMetrics(t *testing.T) {
	dev := func(dir string, rx, errs, tx uint64) {
		s := "Inter-|   Receive                                                |  Transmit\n" +
			" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" +
			fmt.Sprintf("  eth1: %d %d %d 0 0 0 0 0 %d %d 0 0 0 0 0 0\n", rx*1500, rx, errs, tx*1500, tx)
		if err := os.WriteFile(filepath.Join(dir, "dev"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hosts := map[string]monitor.HostCounterReader{}
	dirs := map[string]string{}
	for _, h := range []string{"h1", "h2"} {
		dirs[h] = t.TempDir()
		a := hostagent.New(hostagent.Options{ProcNet: dirs[h], Hostname: h})
		srv := httptest.NewServer(a.Handler())
		t.Cleanup(func() { srv.Close(); a.Close() })
		hosts[h] = hostagent.NewClient(srv.Client(), srv.URL)
	}
	m, err := monitor.NewMonitorWith([]monitor.Direction{{Dir: monitor.Dir{Link: "h1h2", Direction: "a>b", Sender: "h1"}, Receiver: "h2",
		TxName: "eth1", RxName: "eth1", TxHost: true, RxHost: true}}, nil, hosts, monitor.Config{Threshold: 1e-4}, nil, 5*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	mm := monitor.NewMetrics()
	for i := uint64(0); i < 3; i++ {
		dev(dirs["h1"], 0, 0, i*100000)
		dev(dirs["h2"], i*99900, i*100, 0)
		ds, err := m.Poll(context.Background(), time.Unix(1e9+int64(i), 0))
		if err != nil {
			t.Fatal(err)
		}
		mm.Update(m, append(ds, monitor.Decision{Action: monitor.ActProposeDown, Outcome: monitor.OutcomeProposed}))
	}
	mm.ReadError()
	srv := httptest.NewServer(promhttp.HandlerFor(mm.Reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	known := monitorMetrics()
	served := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) (\S+)$`).FindAllStringSubmatch(string(body), -1) {
		served[m[1]] = true
		if fi, ok := known[m[1]]; !ok || fi.Kind != m[2] {
			t.Errorf("served %s (%s): described as %+v", m[1], m[2], fi)
		}
	}
	for name := range known {
		// FEC families appear only where a receiving switch reads FEC.
		if !served[name] && !strings.Contains(name, "_fec_") {
			t.Errorf("%s is described but not served", name)
		}
	}
	if !strings.Contains(string(body), `testbed_monitor_state{direction="a>b",link="h1h2"} 2`) {
		t.Errorf("the corrupting host link is not served as such:\n%s", body)
	}
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not on PATH (apt-get install prometheus): exposition not checked by promtool")
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(string(body))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s\n%s", err, out, body)
	}
}
