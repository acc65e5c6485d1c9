package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"testbed/orchestrator"
	"testbed/results"
)

func TestMetricsListenAddr(t *testing.T) {
	for _, c := range []struct {
		in, addr string
		warn     bool
		err      string
	}{
		{in: "9101", addr: "127.0.0.1:9101"},
		{in: ":0", addr: "127.0.0.1:0"},
		{in: "localhost:9101", addr: "127.0.0.1:9101"},
		{in: "127.0.0.2:80", addr: "127.0.0.2:80"},
		{in: "[::1]:9101", addr: "[::1]:9101"},
		{in: "0.0.0.0:9101", addr: "0.0.0.0:9101", warn: true},
		{in: "192.0.2.7:9101", addr: "192.0.2.7:9101", warn: true},
		{in: "lab-host:9101", err: "not an IP address"},
		{in: "9101x", err: "expected PORT, :PORT or IP:PORT"},
		{in: ":99999", err: "not a number from 0 to 65535"},
	} {
		addr, warn, err := metricsListenAddr(c.in)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want an error saying %q", c.in, err, c.err)
			}
		case err != nil || addr != c.addr || (warn != "") != c.warn:
			t.Errorf("%q: %q warning %q err %v; want %q (warning %v)", c.in, addr, warn, err, c.addr, c.warn)
		}
	}
	if code, _, errOut := testbedRun(t, "exp", "run", "attenuation-sweep", "--metrics-addr", "lab-host:9101"); code != exitBadInput || !strings.Contains(errOut, "not an IP address") {
		t.Errorf("host name: exit %d: %s", code, errOut)
	}
	if code, _, errOut := testbedRun(t, "exp", "run", "attenuation-sweep", "--pushgateway", "127.0.0.1:9091"); code != exitBadInput || !strings.Contains(errOut, "http://") {
		t.Errorf("pushgateway without scheme: exit %d: %s", code, errOut)
	}
}

// promtoolCheck validates an exposition with Debian's promtool (package
// prometheus) when it is installed.
func promtoolCheck(t *testing.T, text []byte) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not on PATH (apt-get install prometheus): exposition not checked by promtool")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s\nexposition:\n%s", err, out, text)
	}
}

// sample finds the value of the first series of a family whose labels
// contain all of want (label="value" strings).
func sample(text, name string, want ...string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(line, w)
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		return v, err == nil
	}
	return 0, false
}

func TestMetricsServedDuringRun(t *testing.T) {
	t.Parallel()
	lab, inv := startLab(t, 21)
	runs, state := dirs(t)
	// Every VOA reply 50 ms late: the sweep lasts long enough to be watched.
	lab.Faults("voa1").SetDelay(50 * time.Millisecond)
	cmd := exec.Command(testbedBin, "exp", "run", "attenuation-sweep", "--inventory", inv, "--runs-dir", runs, "--state-dir", state,
		"--metrics-addr", "127.0.0.1:0", "--set", "links=l10g", "--set", "step_db=1", "--set", "fine_step_db=0.25", "--set", "max_seconds=0.5")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var log strings.Builder
	var logMu sync.Mutex
	addrc := make(chan string, 1)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(stderr)
		addrRe := regexp.MustCompile(`^metrics: serving (http://\S+/metrics)$`)
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if m := addrRe.FindStringSubmatch(sc.Text()); m != nil {
				addrc <- m[1]
			}
		}
	}()
	var url string
	select {
	case url = <-addrc:
	case <-time.After(20 * time.Second):
		t.Fatalf("no metrics address printed")
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("served on %s, want loopback", url)
	}

	// Scrape until the run is part-way: running, some steps done, not all.
	var text string
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "text/plain" || params["version"] != "0.0.4" {
				t.Fatalf("content type %q: want the text format, version 0.0.4", resp.Header.Get("Content-Type"))
			}
			text = string(b)
			p, ok := sample(text, "testbed_run_progress_ratio")
			running, _ := sample(text, "testbed_run_state", `state="running"`)
			if ok && p > 0 && p < 1 && running == 1 {
				break
			}
		}
		if time.Now().After(deadline) {
			logMu.Lock()
			defer logMu.Unlock()
			t.Fatalf("never saw the run part-way; last scrape (err %v):\n%s\nstderr:\n%s", err, text, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, name := range []string{"testbed_run_info", "testbed_run_state", "testbed_run_step", "testbed_run_steps", "testbed_run_progress_ratio",
		"testbed_run_start_time_seconds", "testbed_run_events_total"} {
		if _, ok := sample(text, name, `recipe="attenuation-sweep"`, `run_id="`); !ok {
			t.Errorf("no %s series labelled with recipe and run_id:\n%s", name, text)
		}
	}
	if v, ok := sample(text, "testbed_run_step"); !ok || v < 1 {
		t.Errorf("testbed_run_step %v while running", v)
	}
	for _, st := range []string{"ok", "failed", "aborted"} {
		if v, _ := sample(text, "testbed_run_state", `state="`+st+`"`); v != 0 {
			t.Errorf("state %s is %v while running", st, v)
		}
	}
	promtoolCheck(t, []byte(text))
	// Live series from the measurements, by link.
	deadline = time.Now().Add(30 * time.Second)
	for {
		if v, ok := sample(text, "testbed_sent_frames_total", `link="l10g"`); ok && v > 0 {
			if _, ok := sample(text, "testbed_attenuation_decibels", `link="l10g"`); !ok {
				t.Errorf("no attenuation gauge beside the frame counter:\n%s", text)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no frames counted live:\n%s", text)
		}
		time.Sleep(50 * time.Millisecond)
		if resp, err := http.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			text = string(b)
		}
	}
	promtoolCheck(t, []byte(text))

	lab.Faults("voa1").SetDelay(0)
	// After the run, the final state stays scrapeable for the linger: run
	// ok, progress 1.
	deadline = time.Now().Add(60 * time.Second)
	for {
		if resp, err := http.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			text = string(b)
			ok, _ := sample(text, "testbed_run_state", `state="ok"`)
			if p, _ := sample(text, "testbed_run_progress_ratio"); ok == 1 && p == 1 {
				break
			}
		}
		if time.Now().After(deadline) {
			logMu.Lock()
			defer logMu.Unlock()
			t.Fatalf("never scraped the final state; last scrape:\n%s\nstderr:\n%s", text, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if running, _ := sample(text, "testbed_run_state", `state="running"`); running != 0 {
		t.Errorf("final state still running:\n%s", text)
	}
	promtoolCheck(t, []byte(text))
	// Ctrl-C ends the linger early, and the exit code stays the run's.
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	<-drained
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "--metrics-linger") {
		t.Errorf("stderr does not say the metrics linger:\n%s", log.String())
	}
	if _, err := http.Get(url); err == nil {
		t.Errorf("metrics still served after the linger")
	}
}

// pushRecorder is a Pushgateway stand-in that records what it is sent.
type pushRecorder struct {
	mu     sync.Mutex
	status int
	reqs   []pushed
}

type pushed struct {
	method, path, contentType string
	body                      string
}

func (p *pushRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.reqs = append(p.reqs, pushed{r.Method, r.URL.EscapedPath(), r.Header.Get("Content-Type"), string(b)})
	status := p.status
	p.mu.Unlock()
	if status != 0 {
		http.Error(w, "pushgateway says no", status)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// decodePushPath decodes a Pushgateway push path, /metrics/job/<job>/<name>/<value>...,
// into its grouping labels (with job), in whatever order they come; a name
// ending in @base64 has its value in base64url ("=" for an empty one).
func decodePushPath(path string) (map[string]string, error) {
	rest, ok := strings.CutPrefix(path, "/metrics/")
	parts := strings.Split(rest, "/")
	if !ok || len(parts)%2 != 0 {
		return nil, fmt.Errorf("push path %q: expected /metrics/ and name/value pairs", path)
	}
	group := map[string]string{}
	for i := 0; i < len(parts); i += 2 {
		name, value := parts[i], parts[i+1]
		var err error
		if n, ok := strings.CutSuffix(name, "@base64"); ok {
			var b []byte
			if value != "=" {
				b, err = base64.RawURLEncoding.DecodeString(value)
			}
			name, value = n, string(b)
		} else {
			value, err = url.QueryUnescape(value)
		}
		if _, dup := group[name]; err != nil || dup {
			return nil, fmt.Errorf("push path %q: label %s: %v (or given twice)", path, name, err)
		}
		group[name] = value
	}
	return group, nil
}

func TestPushgatewayGetsTheSummary(t *testing.T) {
	t.Parallel()
	rec := &pushRecorder{}
	gw := httptest.NewServer(rec) // 127.0.0.1
	defer gw.Close()
	runs, state := dirs(t)
	args := append([]string{"exp", "run", "attenuation-sweep", "--runs-dir", runs, "--state-dir", state, "--seed", "4", "--pushgateway", gw.URL + "/"}, quick...)
	code, out, errOut := testbedRun(t, args...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	bundle := lastLine(out)
	rd, err := results.Open(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.reqs) != 1 {
		t.Fatalf("%d pushes, want 1", len(rec.reqs))
	}
	p := rec.reqs[0]
	if g, err := decodePushPath(p.path); p.method != http.MethodPut || err != nil || !maps.Equal(g, map[string]string{"job": "testbed", "lab": "simlab", "entry": "attenuation-sweep"}) ||
		p.contentType != orchestrator.MetricsContentType {
		t.Errorf("push: %s %s %v %v (%s)", p.method, p.path, g, err, p.contentType)
	}
	if !strings.Contains(errOut, "pushed the summary of "+rd.Manifest.RunID) {
		t.Errorf("push not reported: %s", errOut)
	}
	metrics, err := results.FlattenSummary(rd.Summary)
	if err != nil {
		t.Fatal(err)
	}
	run := `run_id="` + rd.Manifest.RunID + `"`
	n := 0
	for _, m := range metrics {
		v, ok := m.Value.(float64)
		if !ok {
			continue
		}
		n++
		got, found := sample(p.body, "testbed_result_value", run, `metric="`+m.Path+`"`)
		if !found || got != v {
			t.Errorf("pushed %s = %v (found %v), summary says %v", m.Path, got, found, v)
		}
	}
	if n == 0 {
		t.Fatalf("summary has no number")
	}
	if v, ok := sample(p.body, "testbed_run_state", run, `state="ok"`); !ok || v != 1 {
		t.Errorf("pushed state ok = %v (%v):\n%s", v, ok, p.body)
	}
	if v, ok := sample(p.body, "testbed_run_duration_seconds", run); !ok || v <= 0 {
		t.Errorf("pushed duration %v", v)
	}
	promtoolCheck(t, []byte(p.body))

	// A suite pushes each entry into its own group.
	file := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(file, []byte("name: push-test\nentries:\n  - id: one\n    recipe: attenuation-sweep\n    seed: 1\n    set: {links: [l10g], step_db: 1, fine_step_db: 0.25, max_seconds: 0.5}\n    expect:\n      - {metric: partial, max: 0}\n"), 0o644)
	code, out, errOut = testbedRun(t, "exp", "run", "--suite", file, "--runs-dir", runs, "--state-dir", state, "--pushgateway", gw.URL)
	if code != exitOK || len(rec.reqs) != 2 {
		t.Errorf("suite push: exit %d, %d pushes\n%s\n%s", code, len(rec.reqs), out, errOut)
	} else if g, err := decodePushPath(rec.reqs[1].path); err != nil || !maps.Equal(g, map[string]string{"job": "testbed", "lab": "simlab", "suite": "push-test", "entry": "one"}) {
		t.Errorf("suite push to %s: %v %v", rec.reqs[1].path, g, err)
	}

	// A gateway that refuses: the run is fine, the exit code says the
	// push failed.
	rec.mu.Lock()
	rec.status = http.StatusInternalServerError
	rec.mu.Unlock()
	code, out, errOut = testbedRun(t, args...)
	if code != exitInfra || !strings.Contains(errOut, "pushgateway says no") || !strings.HasPrefix(lastLine(out), runs) {
		t.Errorf("refused push: exit %d\n%s\n%s", code, out, errOut)
	}
}
