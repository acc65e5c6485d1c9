package serve

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"testbed/results"
)

// Options configure a Server.
type Options struct {
	Index *Index
	Lab   LabSource
	// Token, when set, is required of every request: an
	// "Authorization: Bearer <token>" header, or once as ?token= (which
	// sets a cookie for the browser).
	Token string
	// Poll is how often the index follows the disk and live pages look
	// again (0: one second).
	Poll time.Duration
	Log  *slog.Logger
	// Version is the testbed version, shown in the pages' footer.
	Version string
}

// Server serves the pages and the API.
type Server struct {
	ix      *Index
	lab     LabSource
	token   string
	poll    time.Duration
	log     *slog.Logger
	version string
	mux     *http.ServeMux
}

// New builds a Server over an index and a lab.
func New(o Options) *Server {
	s := &Server{ix: o.Index, lab: o.Lab, token: o.Token, poll: o.Poll, log: o.Log, version: o.Version, mux: http.NewServeMux()}
	if s.poll <= 0 {
		s.poll = time.Second
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.routes()
	return s
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/lab", http.StatusFound) })
	m.HandleFunc("GET /lab", s.pageLab)
	m.HandleFunc("GET /runs", s.pageRuns)
	m.HandleFunc("GET /runs/{id}", s.pageRun)
	m.HandleFunc("GET /runs/{id}/diff", s.pageDiff)
	m.HandleFunc("GET /runs/{id}/files/{path...}", s.bundleFile)
	m.HandleFunc("GET /trends", s.pageTrends)
	m.HandleFunc("GET /trends/plot.svg", s.trendSVG)
	m.HandleFunc("GET /static/{name}", s.static)
	m.HandleFunc("GET /live/lab", s.liveLab)
	m.HandleFunc("GET /live/runs/{id}", s.liveRun)
	m.HandleFunc("GET /live/runs", s.liveRuns)

	m.HandleFunc("GET /api/v1/lab", s.apiLab)
	m.HandleFunc("GET /api/v1/runs", s.apiRuns)
	m.HandleFunc("GET /api/v1/runs/{id}", s.apiRun)
	m.HandleFunc("GET /api/v1/runs/{id}/progress", s.apiProgress)
	m.HandleFunc("GET /api/v1/runs/{id}/diff", s.apiDiff)
	m.HandleFunc("GET /api/v1/trends", s.apiTrends)
	m.HandleFunc("GET /api/v1/openapi.yaml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(openapiYAML)
	})
	m.HandleFunc("GET /api/v1/health", func(w http.ResponseWriter, r *http.Request) {
		n, err := s.ix.Count(r.Context())
		if err != nil {
			s.apiError(w, http.StatusInternalServerError, err)
			return
		}
		writeJSON(w, map[string]any{"ok": true, "runs": n, "runs_dir": s.ix.RunsDir(), "version": s.version})
	})
}

// Handler is the server's HTTP handler, token checked.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			// Read-only: nothing here changes the lab.
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "testbed serve is read-only", http.StatusMethodNotAllowed)
			return
		}
		if s.token != "" && !s.authorized(w, r) {
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

const tokenCookie = "testbed_serve_token"

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	eq := func(t string) bool { return subtle.ConstantTimeCompare([]byte(t), []byte(s.token)) == 1 }
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") && eq(strings.TrimPrefix(h, "Bearer ")) {
		return true
	}
	if c, err := r.Cookie(tokenCookie); err == nil && eq(c.Value) {
		return true
	}
	if t := r.URL.Query().Get("token"); t != "" && eq(t) {
		http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: t, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		q := r.URL.Query()
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
		return false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="testbed"`)
	http.Error(w, "testbed serve: a token is required (Authorization: Bearer <token>, or ?token=<token> once in a browser)", http.StatusUnauthorized)
	return false
}

// Serve follows the runs directory and serves on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if _, err := s.ix.Sync(ctx); err != nil {
		return err
	}
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	go s.follow(ctx)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		return nil
	}
}

// follow syncs the index with the disk every poll until ctx ends.
func (s *Server) follow(ctx context.Context) {
	t := time.NewTicker(s.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if st, err := s.ix.Sync(ctx); err != nil {
				if ctx.Err() == nil {
					s.log.Warn("run index sync", "err", err)
				}
			} else if st.changed() {
				s.log.Debug("run index sync", "added", st.Added, "updated", st.Updated, "removed", st.Removed)
			}
		}
	}
}

// IsLoopback reports whether a listen address binds loopback only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (s *Server) apiError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": err.Error()})
}

func statusOf(err error) int {
	if errors.Is(err, ErrNoRun) {
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}

func runFilter(r *http.Request) (RunFilter, error) {
	q := r.URL.Query()
	f := RunFilter{Recipe: q.Get("recipe"), Status: q.Get("status"), Suite: q.Get("suite"), SuiteEntry: q.Get("suite_entry"), Before: q.Get("before")}
	switch f.Status {
	case "", "ok", "failed", "aborted", "running":
	default:
		return f, fmt.Errorf("status %q: expected ok, failed, aborted or running", f.Status)
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 10000 {
			return f, fmt.Errorf("limit %q: expected a whole number from 1 to 10000", l)
		}
		f.Limit = n
	}
	return f, nil
}

func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	f, err := runFilter(r)
	if err != nil {
		s.apiError(w, http.StatusBadRequest, err)
		return
	}
	runs, err := s.ix.Runs(r.Context(), f)
	if err != nil {
		s.apiError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, map[string]any{"runs": runs})
}

// RunDetail is one run as its page and the API show it.
type RunDetail struct {
	Run
	Metrics  []headlineMetric `json:"headline_metrics"`
	Progress *Progress        `json:"progress"`
	Files    []string         `json:"files"`
	Report   string           `json:"report_url"`
	Previous string           `json:"previous_run_id"`
	Diff     string           `json:"diff_url"`
}

func (s *Server) runDetail(ctx context.Context, id string) (RunDetail, error) {
	run, err := s.ix.Run(ctx, id)
	if errors.Is(err, ErrNoRun) {
		// A run started since the index last looked (the lab page links a
		// lease to its run at once): look again before saying there is
		// none. Sync is a stat of the runs directory when nothing changed.
		if _, serr := s.ix.Sync(ctx); serr == nil {
			run, err = s.ix.Run(ctx, id)
		}
	}
	if err != nil {
		return RunDetail{}, err
	}
	d := RunDetail{Run: run, Files: []string{}}
	if d.Metrics, err = s.ix.Metrics(ctx, id); err != nil {
		return d, err
	}
	dir := filepath.Join(s.ix.RunsDir(), run.Dir)
	if p, err := runProgress(dir); err == nil {
		d.Progress = &p
	}
	d.Files = bundleFiles(dir)
	for _, f := range d.Files {
		if f == "report.html" {
			d.Report = "/runs/" + id + "/files/report.html"
		}
	}
	if prev, err := s.ix.Previous(ctx, run); err == nil && run.Status != "running" {
		d.Previous, d.Diff = prev.RunID, "/runs/"+id+"/diff"
	}
	return d, nil
}

// bundleFiles lists a bundle's report, figures and data files.
func bundleFiles(dir string) []string {
	out := []string{}
	for _, pat := range []string{"report.html", "summary.json", "manifest.json", "events.jsonl", "datapackage.json", "figures/*.svg", "data/*", "transcripts/*.log"} {
		ms, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, m := range ms {
			if fi, err := os.Lstat(m); err == nil && fi.Mode().IsRegular() {
				rel, _ := filepath.Rel(dir, m)
				out = append(out, filepath.ToSlash(rel))
			}
		}
	}
	return out
}

func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	d, err := s.runDetail(r.Context(), r.PathValue("id"))
	if err != nil {
		s.apiError(w, statusOf(err), err)
		return
	}
	writeJSON(w, d)
}

func (s *Server) apiProgress(w http.ResponseWriter, r *http.Request) {
	run, err := s.ix.Run(r.Context(), r.PathValue("id"))
	if err != nil {
		s.apiError(w, statusOf(err), err)
		return
	}
	p, err := runProgress(filepath.Join(s.ix.RunsDir(), run.Dir))
	if err != nil {
		s.apiError(w, http.StatusNotFound, fmt.Errorf("run %s: events: %w", run.RunID, err))
		return
	}
	writeJSON(w, p)
}

// diffReport diffs a run against the previous ok run of its recipe.
func (s *Server) diffReport(ctx context.Context, id string) (*results.DiffReport, Run, Run, error) {
	run, err := s.ix.Run(ctx, id)
	if err != nil {
		return nil, run, run, err
	}
	prev, err := s.ix.Previous(ctx, run)
	if err != nil {
		return nil, run, prev, err
	}
	a, err := results.Open(filepath.Join(s.ix.RunsDir(), prev.Dir))
	if err != nil {
		return nil, run, prev, fmt.Errorf("open %s: %w", prev.RunID, err)
	}
	b, err := results.Open(filepath.Join(s.ix.RunsDir(), run.Dir))
	if err != nil {
		return nil, run, prev, fmt.Errorf("open %s: %w", run.RunID, err)
	}
	rep, err := results.Diff(a, b, results.DiffOptions{})
	return rep, run, prev, err
}

func (s *Server) apiDiff(w http.ResponseWriter, r *http.Request) {
	rep, _, _, err := s.diffReport(r.Context(), r.PathValue("id"))
	if err != nil {
		s.apiError(w, statusOf(err), err)
		return
	}
	writeJSON(w, rep)
}

func (s *Server) apiLab(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, s.labSnapshot(r.Context()))
}

func (s *Server) apiTrends(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tf, err := trendFilter(q)
	if err != nil {
		s.apiError(w, http.StatusBadRequest, err)
		return
	}
	ts, err := s.ix.Trends(r.Context(), tf)
	if err != nil {
		s.apiError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, map[string]any{"trends": ts})
}

// bundleFile serves a file of a bundle, never leaving its directory (a
// symbolic link out of it is refused by os.Root).
func (s *Server) bundleFile(w http.ResponseWriter, r *http.Request) {
	run, err := s.ix.Run(r.Context(), r.PathValue("id"))
	if err != nil {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	root, err := os.OpenRoot(filepath.Join(s.ix.RunsDir(), run.Dir))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	defer root.Close()
	rel := r.PathValue("path")
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		http.Error(w, fmt.Sprintf("run %s has no file %s", run.RunID, rel), http.StatusNotFound)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		http.Error(w, fmt.Sprintf("run %s: %s is not a file", run.RunID, rel), http.StatusNotFound)
		return
	}
	switch {
	case strings.HasSuffix(rel, ".jsonl"), strings.HasSuffix(rel, ".log"), strings.HasSuffix(rel, ".csv"), rel == "SHA256SUMS":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	if strings.HasSuffix(rel, ".html") {
		// A report is the bundle's own page: no script of ours reaches it.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data: 'self'")
	}
	http.ServeContent(w, r, fi.Name(), fi.ModTime(), f)
}

// sse starts a server-sent events stream.
func sse(w http.ResponseWriter) (func(event, data string) bool, bool) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return nil, false
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	send := func(event, data string) bool {
		var b bytes.Buffer
		if event != "" {
			fmt.Fprintf(&b, "event: %s\n", event)
		}
		for _, l := range strings.Split(data, "\n") {
			fmt.Fprintf(&b, "data: %s\n", l)
		}
		b.WriteString("\n")
		if _, err := w.Write(b.Bytes()); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	return send, true
}

// stream sends render's output whenever it changes, every poll, until the
// client goes or render says stop.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, render func(ctx context.Context) (html string, stop bool)) {
	send, ok := sse(w)
	if !ok {
		return
	}
	ctx := r.Context()
	t := time.NewTicker(s.poll / 2)
	defer t.Stop()
	last := ""
	idle := 0
	for {
		html, stop := render(ctx)
		if html != last {
			if !send("", html) {
				return
			}
			last, idle = html, 0
		} else if idle++; idle >= 30 {
			// A comment now and then: proxies keep the stream open.
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			idle = 0
		}
		if stop {
			send("end", "")
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
