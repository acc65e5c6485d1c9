package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"testbed/orchestrator"
	"testbed/results"
)

const metricsHelp = `Live metrics (off by default):
  --metrics-addr PORT, :PORT      serve Prometheus metrics on 127.0.0.1:PORT/metrics
  --metrics-addr IP:PORT          serve on that address; a non-loopback IP (e.g.
                                  0.0.0.0) exposes the lab's metrics to the network
                                  and is accepted only when written out in full
  --metrics-linger DURATION       keep serving for this long after the last run has
                                  ended (default 30s, two scrapes at Prometheus's
                                  common 15 s interval), so the final state (run ok,
                                  progress 1) is scraped; Ctrl-C stops it early
  --pushgateway URL               at the end, push each run's summary to a Prometheus
                                  Pushgateway (job "testbed", grouped by lab and by
                                  recipe, or by suite and entry)
Port 0 picks a free port; the address served is printed on stderr. A push that
fails is reported and turns an otherwise successful exit into 4.`

// metricsOptions are the live-metrics flags of exp run and exp rerun.
type metricsOptions struct {
	addr        string
	pushgateway string
	linger      time.Duration
}

// defaultMetricsLinger is two scrapes at a 15 s interval, the scrape
// interval of Prometheus's example configuration (its global default is
// 1 m; a job that scrapes a run's metrics sets a shorter one).
const defaultMetricsLinger = 30 * time.Second

func (o *metricsOptions) addFlags(c *cobra.Command) {
	c.Flags().StringVar(&o.addr, "metrics-addr", "", "serve Prometheus metrics during the run on [HOST:]PORT (host defaults to 127.0.0.1)")
	c.Flags().StringVar(&o.pushgateway, "pushgateway", "", "push the summary metrics to this Prometheus Pushgateway URL at the end")
	c.Flags().DurationVar(&o.linger, "metrics-linger", defaultMetricsLinger, "with --metrics-addr, keep serving the final metrics this long after the run ends (0: stop at once)")
}

// liveMetrics is the registry a run (or a suite's runs) publishes into,
// the server serving it, and where summaries are pushed. A nil
// *liveMetrics does nothing.
type liveMetrics struct {
	reg     *orchestrator.Metrics
	srv     *http.Server
	addr    string // the address served, once listening
	gateway string
	linger  time.Duration
	a       *app
}

// metricsListenAddr turns --metrics-addr into a listen address: a bare
// port, or an empty host, means loopback (127.0.0.1). A host must be an IP
// address or localhost, so the interface exposed is the one written; a
// non-loopback IP is accepted with a warning.
func metricsListenAddr(s string) (addr, warning string, err error) {
	s = strings.TrimSpace(s)
	if _, perr := strconv.ParseUint(s, 10, 16); perr == nil {
		return net.JoinHostPort("127.0.0.1", s), "", nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", "", fmt.Errorf("--metrics-addr %q: expected PORT, :PORT or IP:PORT", s)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", "", fmt.Errorf("--metrics-addr %q: port %q is not a number from 0 to 65535", s, port)
	}
	switch host {
	case "":
		return net.JoinHostPort("127.0.0.1", port), "", nil
	case "localhost":
		return net.JoinHostPort("127.0.0.1", port), "", nil
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return "", "", fmt.Errorf("--metrics-addr %q: %q is not an IP address: give 127.0.0.1 (or only the port) for this host, or the IP of the interface to expose", s, host)
	}
	if !ip.IsLoopback() {
		warning = fmt.Sprintf("metrics: serving on %s, not a loopback address: whoever can reach it can read the run's metrics", net.JoinHostPort(host, port))
	}
	return net.JoinHostPort(host, port), warning, nil
}

func checkPushgateway(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--pushgateway %q: expected an http:// or https:// URL such as http://127.0.0.1:9091", s)
	}
	return nil
}

// startMetrics starts serving live metrics and checks the Pushgateway URL,
// as the options ask; nil when neither is asked for.
func (a *app) startMetrics(o metricsOptions) (*liveMetrics, error) {
	if o.addr == "" && o.pushgateway == "" {
		return nil, nil
	}
	if o.linger < 0 {
		return nil, &exitError{code: exitBadInput, err: fmt.Errorf("--metrics-linger %v: expected a duration of 0 or more", o.linger)}
	}
	lm := &liveMetrics{gateway: o.pushgateway, linger: o.linger, a: a}
	if o.pushgateway != "" {
		if err := checkPushgateway(o.pushgateway); err != nil {
			return nil, &exitError{code: exitBadInput, err: err}
		}
	}
	if o.addr == "" {
		return lm, nil
	}
	addr, warning, err := metricsListenAddr(o.addr)
	if err != nil {
		return nil, &exitError{code: exitBadInput, err: err}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &exitError{code: exitInfra, err: fmt.Errorf("metrics: listen on %s: %w", addr, err)}
	}
	if warning != "" {
		fmt.Fprintln(a.stderr, "testbed: warning: "+warning)
	}
	lm.reg = orchestrator.NewMetrics()
	mux := http.NewServeMux()
	mux.Handle("/metrics", lm.reg.Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "testbed: the run's Prometheus metrics are at /metrics")
	})
	lm.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	lm.addr = ln.Addr().String()
	go func() {
		if err := lm.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(a.stderr, "testbed: metrics server: %v\n", err)
		}
	}()
	fmt.Fprintf(a.stderr, "metrics: serving http://%s/metrics\n", lm.addr)
	return lm, nil
}

// Close keeps serving for the linger, so that the final state is scraped
// (an interrupt or SIGTERM cuts it short), then stops serving (a scrape in
// flight gets up to a second to finish).
func (lm *liveMetrics) Close() {
	if lm == nil || lm.srv == nil {
		return
	}
	if lm.linger > 0 {
		fmt.Fprintf(lm.a.stderr, "metrics: serving the final state at http://%s/metrics for %v more (--metrics-linger; Ctrl-C to stop)\n", lm.addr, lm.linger)
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		t := time.NewTimer(lm.linger)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := lm.srv.Shutdown(ctx); err != nil {
		lm.srv.Close()
	}
}

// pushGroup says which Pushgateway group a run's summary replaces: a
// single run's recipe, or a suite's entry.
type pushGroup struct {
	suite string
	entry string
}

// pushJob is the Pushgateway job every push goes to.
const pushJob = "testbed"

// push sends a finished run's summary metrics (orchestrator.SummaryMetrics)
// to the Pushgateway, replacing the group job="testbed", lab=<lab>, then
// suite=<suite> (suites only) and entry=<recipe or suite entry>. The
// series themselves carry recipe and run_id, which a grouping key may not
// repeat.
func (lm *liveMetrics) push(ctx context.Context, bundle string, g pushGroup) error {
	if lm == nil || lm.gateway == "" || bundle == "" {
		return nil
	}
	rd, err := results.Open(bundle)
	if err != nil {
		return fmt.Errorf("push %s: %w", bundle, err)
	}
	reg, err := orchestrator.SummaryMetrics(rd.Manifest, rd.Summary)
	if err != nil {
		return fmt.Errorf("push %s: %w", bundle, err)
	}
	grouping := []string{"lab", rd.Manifest.Lab.Name}
	if g.suite != "" {
		grouping = append(grouping, "suite", g.suite)
	}
	grouping = append(grouping, "entry", g.entry)
	if err := orchestrator.Push(ctx, lm.gateway, pushJob, grouping, reg); err != nil {
		return err
	}
	desc := make([]string, 0, len(grouping)/2)
	for i := 0; i+1 < len(grouping); i += 2 {
		desc = append(desc, grouping[i]+"="+grouping[i+1])
	}
	fmt.Fprintf(lm.a.stderr, "pushed the summary of %s to %s (job %s, %s)\n", rd.Manifest.RunID, lm.gateway, pushJob, strings.Join(desc, ", "))
	return nil
}
