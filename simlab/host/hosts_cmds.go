package host

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The commands "run" answers on a simulated host: enough for a recipe to
// look at the host, nothing that would need a shell.
var runCommands = []string{"true", "false", "echo", "hostname", "uname", "nproc", "sleep", "cat /proc/sys/<key>", "sysctl -n <key>", "ip route show [<selector>]", "iperf3 -c <address> ... (bulk.go)", "pgrep -x <name>"}

// run runs the command line q under "timeout -s KILL w": one of
// runCommands, through runTable.
func (h *SimHost) run(ctx context.Context, w, q string, stdout, stderr io.Writer) int {
	secs, err := strconv.Atoi(w)
	if err != nil || secs < 1 {
		fmt.Fprintf(stderr, "timeout: invalid time interval '%s'\n", w)
		return 125
	}
	words, err := shellWords(q)
	if err != nil {
		fmt.Fprintf(stderr, "sh: %s: %v (the simulated host %s runs simple commands only: %s)\n", q, err, h.name, strings.Join(runCommands, ", "))
		return 127
	}
	if len(words) == 0 {
		return 0
	}
	cmd, ok := runTable[words[0]]
	if !ok {
		fmt.Fprintf(stderr, "sh: 1: %s: not found (the simulated host %s runs only: %s)\n", words[0], h.name, strings.Join(runCommands, ", "))
		return 127
	}
	return cmd(h, ctx, runCall{args: words[1:], limit: time.Duration(secs) * time.Second, stdout: stdout, stderr: stderr})
}

// runCall is one command run answers, under the session's context: its
// arguments, its time limit and its outputs.
type runCall struct {
	args           []string
	limit          time.Duration
	stdout, stderr io.Writer
}

// runTable are the commands run answers, by name; each returns its exit
// status.
var runTable = map[string]func(h *SimHost, ctx context.Context, c runCall) int{
	"true":  func(*SimHost, context.Context, runCall) int { return 0 },
	"false": func(*SimHost, context.Context, runCall) int { return 1 },
	"echo": func(_ *SimHost, _ context.Context, c runCall) int {
		fmt.Fprintln(c.stdout, strings.Join(c.args, " "))
		return 0
	},
	"hostname": func(h *SimHost, _ context.Context, c runCall) int {
		fmt.Fprintln(c.stdout, h.name)
		return 0
	},
	"nproc": func(_ *SimHost, _ context.Context, c runCall) int {
		fmt.Fprintln(c.stdout, 16)
		return 0
	},
	"uname":  func(h *SimHost, _ context.Context, c runCall) int { return h.uname(c.args, c.stdout, c.stderr) },
	"sleep":  (*SimHost).runSleep,
	"cat":    (*SimHost).runCat,
	"sysctl": (*SimHost).runSysctl,
	"iperf3": func(h *SimHost, ctx context.Context, c runCall) int {
		return h.iperf3(ctx, c.args, c.limit, c.stdout, c.stderr)
	},
	"pgrep": func(h *SimHost, _ context.Context, c runCall) int { return h.pgrep(c.args, c.stdout, c.stderr) },
	"ip":    (*SimHost).runIP,
}

// runSleep sleeps, killed (137) at the time limit or when the session
// ends.
func (h *SimHost) runSleep(ctx context.Context, c runCall) int {
	if len(c.args) != 1 {
		fmt.Fprintln(c.stderr, "sleep: missing operand")
		return 1
	}
	d, err := strconv.ParseFloat(c.args[0], 64)
	if err != nil || d < 0 {
		fmt.Fprintf(c.stderr, "sleep: invalid time interval '%s'\n", c.args[0])
		return 1
	}
	wait := time.Duration(d * float64(time.Second))
	t := time.NewTimer(min(wait, c.limit))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return 137
	case <-t.C:
	}
	if wait > c.limit {
		return 137 // timeout -s KILL
	}
	return 0
}

// runCat reads files under /proc/sys: the host's sysctls.
func (h *SimHost) runCat(_ context.Context, c runCall) int {
	status := 0
	for _, f := range c.args {
		key, ok := strings.CutPrefix(path.Clean(f), "/proc/sys/")
		v, found := "", false
		if ok {
			v, found = h.Sysctl(strings.ReplaceAll(key, "/", "."))
		}
		if !found {
			fmt.Fprintf(c.stderr, "cat: %s: No such file or directory\n", f)
			status = 1
			continue
		}
		fmt.Fprintln(c.stdout, v)
	}
	return status
}

// runSysctl answers "sysctl -n <key>".
func (h *SimHost) runSysctl(_ context.Context, c runCall) int {
	if len(c.args) != 2 || c.args[0] != "-n" {
		fmt.Fprintf(c.stderr, "sysctl: the simulated host %s answers only \"sysctl -n <key>\" in run\n", h.name)
		return 127
	}
	return h.sysctlOp("sysctl-get", map[string]string{"C": "sysctl", "K": c.args[1]}, c.stdout, c.stderr)
}

// runIP answers "ip route show [<selector>]".
func (h *SimHost) runIP(_ context.Context, c runCall) int {
	args := c.args
	if len(args) < 2 || args[0] != "route" || (args[1] != "show" && args[1] != "list") {
		fmt.Fprintf(c.stderr, "ip: the simulated host %s answers only \"ip route show [<selector>]\" in run\n", h.name)
		return 127
	}
	return h.routeOp("route-get", map[string]string{"C": "ip", "R": strings.Join(args[2:], " ")}, c.stdout, c.stderr)
}

func (h *SimHost) uname(args []string, stdout, stderr io.Writer) int {
	fields := map[byte]string{'s': "Linux", 'n': h.name, 'r': "6.1.0-28-amd64", 'v': "#1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22)", 'm': "x86_64", 'o': "GNU/Linux"}
	order := "snrvmo"
	want := map[byte]bool{}
	for _, a := range args {
		if !strings.HasPrefix(a, "-") || len(a) < 2 {
			fmt.Fprintf(stderr, "uname: extra operand '%s'\n", a)
			return 1
		}
		for i := 1; i < len(a); i++ {
			c := a[i]
			if c == 'a' {
				for j := range len(order) {
					want[order[j]] = true
				}
				continue
			}
			if _, ok := fields[c]; !ok {
				fmt.Fprintf(stderr, "uname: invalid option -- '%c'\n", c)
				return 1
			}
			want[c] = true
		}
	}
	if len(want) == 0 {
		want['s'] = true
	}
	var out []string
	for i := range len(order) {
		if want[order[i]] {
			out = append(out, fields[order[i]])
		}
	}
	fmt.Fprintln(stdout, strings.Join(out, " "))
	return 0
}

// shellWords splits a simple command line: words, single and double
// quotes; no expansions, redirections or operators.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unterminated quote")
			}
			q := s[i+1 : i+1+j]
			if c == '"' && strings.ContainsAny(q, "$`\\") {
				return nil, fmt.Errorf("expansions are not supported")
			}
			cur.WriteString(q)
			in = true
			i += j + 1
		case strings.IndexByte("|&;<>()$`\\*?[]{}~#", c) >= 0:
			return nil, fmt.Errorf("shell syntax %q is not supported", c)
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// ---- sysctl

// hostSysctl is one entry of the host's sysctl table: its value and the
// values it accepts.
type hostSysctl struct {
	value    string
	readOnly bool
	min, max int64    // integer sysctls: the range (max 0: not an integer)
	choices  []string // string sysctls with a fixed set of values
	fields   int      // several integer fields (tab-separated), e.g. tcp_rmem
}

// hostSysctls is the sysctl table of a fresh simulated host: Debian 12
// defaults. The transport model reads net.ipv4.tcp_early_retrans (3 or 4:
// the tail loss probe is on), net.ipv4.tcp_reordering and
// net.ipv4.tcp_max_reordering; the others are kept and read back only.
func hostSysctls() map[string]hostSysctl {
	return map[string]hostSysctl{
		"net.ipv4.tcp_congestion_control":           {value: "cubic", choices: []string{"reno", "cubic", "dctcp"}},
		"net.ipv4.tcp_available_congestion_control": {value: "reno cubic dctcp", readOnly: true},
		"net.ipv4.tcp_early_retrans":                {value: "3", min: 0, max: 4},
		"net.ipv4.tcp_sack":                         {value: "1", min: 0, max: 1},
		"net.ipv4.tcp_timestamps":                   {value: "1", min: 0, max: 2},
		"net.ipv4.tcp_recovery":                     {value: "1", min: 0, max: 7},
		"net.ipv4.tcp_reordering":                   {value: "3", min: 1, max: 300},
		"net.ipv4.tcp_max_reordering":               {value: "300", min: 1, max: 100000},
		"net.ipv4.tcp_ecn":                          {value: "2", min: 0, max: 2},
		"net.ipv4.tcp_no_metrics_save":              {value: "0", min: 0, max: 1},
		"net.ipv4.tcp_thin_linear_timeouts":         {value: "0", min: 0, max: 1},
		"net.ipv4.tcp_retries2":                     {value: "15", min: 0, max: 255},
		"net.ipv4.tcp_min_rtt_wlen":                 {value: "300", min: 0, max: 86400},
		"net.ipv4.tcp_rmem":                         {value: "4096\t131072\t6291456", fields: 3},
		"net.ipv4.tcp_wmem":                         {value: "4096\t16384\t4194304", fields: 3},
		"net.core.default_qdisc":                    {value: "fq_codel", choices: []string{"pfifo_fast", "fq", "fq_codel"}},
	}
}

func defaultSysctls() map[string]string {
	m := map[string]string{}
	for k, s := range hostSysctls() {
		m[k] = s.value
	}
	return m
}

// sysctlOp answers sysctl-get and sysctl-set; h.mu not held.
func (h *SimHost) sysctlOp(op string, v map[string]string, stdout, stderr io.Writer) int {
	if c := v["C"]; c != "sysctl" && path.Base(c) != "sysctl" {
		fmt.Fprintf(stderr, "sh: 1: %s: not found\n", c)
		return 127
	}
	key := strings.ReplaceAll(v["K"], "/", ".")
	spec, known := hostSysctls()[key]
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.sysctl[key]; !ok || !known {
		fmt.Fprintf(stderr, "sysctl: cannot stat /proc/sys/%s: No such file or directory\n", strings.ReplaceAll(key, ".", "/"))
		return 255
	}
	if op == "sysctl-set" {
		val, err := spec.check(v["V"])
		if err != nil {
			fmt.Fprintf(stderr, "sysctl: setting key \"%s\": %v\n", key, err)
			return 255
		}
		h.sysctl[key] = val
	}
	fmt.Fprintln(stdout, h.sysctl[key])
	return 0
}

func (s hostSysctl) check(v string) (string, error) {
	v = strings.TrimSpace(v)
	switch {
	case s.readOnly:
		return "", fmt.Errorf("Operation not permitted")
	case len(s.choices) > 0:
		if !slices.Contains(s.choices, v) {
			return "", fmt.Errorf("No such file or directory") // no such module
		}
		return v, nil
	case s.fields > 0:
		f := strings.Fields(v)
		if len(f) != s.fields {
			return "", fmt.Errorf("Invalid argument")
		}
		for _, x := range f {
			if n, err := strconv.ParseInt(x, 10, 64); err != nil || n < 0 {
				return "", fmt.Errorf("Invalid argument")
			}
		}
		return strings.Join(f, "\t"), nil
	case s.max > 0:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < s.min || n > s.max {
			return "", fmt.Errorf("Invalid argument")
		}
		return strconv.FormatInt(n, 10), nil
	}
	return v, nil
}

// ---- routes

// hostRoute is one route of the main table.
type hostRoute struct {
	dst    string       // as shown: "default" or a prefix
	prefix netip.Prefix // 0.0.0.0/0 for default
	words  []string     // the rest as shown, rto_min left out
	dev    string
	proto  string
	via    string
	metric string
	rtoMin time.Duration // 0: none
}

func (r *hostRoute) String() string {
	s := r.dst
	if len(r.words) > 0 {
		s += " " + strings.Join(r.words, " ")
	}
	if r.rtoMin > 0 {
		s += " rto_min lock " + fmtRouteTime(r.rtoMin)
	}
	return s
}

func fmtRouteTime(d time.Duration) string {
	if d%time.Millisecond == 0 {
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	}
	return strconv.FormatInt(d.Microseconds(), 10) + "us"
}

// routeKeys are the route attributes with a value that "ip route" takes.
var routeKeys = []string{"via", "dev", "proto", "scope", "src", "metric", "table", "rto_min"}

// parseRoute reads the words of a route as given to "ip route change".
func parseRoute(words []string) (*hostRoute, string, error) {
	if len(words) > 0 && words[0] == "to" {
		words = words[1:]
	}
	if len(words) == 0 {
		return nil, "", fmt.Errorf("Error: destination is required.")
	}
	r := &hostRoute{dst: words[0]}
	var err error
	if r.prefix, err = parseDst(words[0]); err != nil {
		return nil, "", err
	}
	r.dst = words[0]
	if r.dst != "default" {
		r.dst = r.prefix.String()
		if r.prefix.Bits() == 32 {
			r.dst = r.prefix.Addr().String()
		}
	}
	table := "main"
	for i := 1; i < len(words); i++ {
		w := words[i]
		if w == "onlink" {
			r.words = append(r.words, w)
			continue
		}
		if !slices.Contains(routeKeys, w) || i+1 >= len(words) {
			return nil, "", fmt.Errorf("Error: either \"to\" is duplicate, or \"%s\" is a garbage.", w)
		}
		i++
		val := words[i]
		switch w {
		case "rto_min":
			if val == "lock" && i+1 < len(words) {
				i++
				val = words[i]
			}
			d, err := parseRouteTime(val)
			if err != nil {
				return nil, "", fmt.Errorf("Error: argument \"%s\" is wrong: \"rto_min\" value is invalid", val)
			}
			r.rtoMin = d
			continue
		case "table":
			table = val
			continue
		case "dev":
			r.dev = val
		case "proto":
			r.proto = val
		case "via":
			if _, err := netip.ParseAddr(val); err != nil {
				return nil, "", fmt.Errorf("Error: inet address is expected rather than \"%s\".", val)
			}
			r.via = val
		case "metric":
			r.metric = val
		}
		r.words = append(r.words, w, val)
	}
	return r, table, nil
}

func parseDst(w string) (netip.Prefix, error) {
	if w == "default" {
		return netip.MustParsePrefix("0.0.0.0/0"), nil
	}
	if p, err := netip.ParsePrefix(w); err == nil && p.Addr().Is4() {
		return p.Masked(), nil
	}
	if a, err := netip.ParseAddr(w); err == nil && a.Is4() {
		return netip.PrefixFrom(a, 32), nil
	}
	return netip.Prefix{}, fmt.Errorf("Error: any valid prefix is expected rather than \"%s\".", w)
}

// parseRouteTime reads an rto_min as ip takes it: "1ms", "200ms", "1s",
// "500us", or a number of milliseconds.
func parseRouteTime(s string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		s = strconv.FormatFloat(n, 'f', -1, 64) + "ms"
	}
	s = strings.NewReplacer("msec", "ms", "usec", "us", "sec", "s").Replace(s)
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("bad time %q", s)
	}
	return d, nil
}

func mustRoute(s string) *hostRoute {
	r, _, err := parseRoute(strings.Fields(s))
	if err != nil {
		panic(err)
	}
	return r
}

// routeSelector is what "ip route show" filters by.
type routeSelector struct {
	prefix             *netip.Prefix
	table              string
	dev, proto, via    string
	scope, src, metric string
}

func parseSelector(words []string) (routeSelector, error) {
	s := routeSelector{table: "main"}
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch w {
		case "table", "dev", "proto", "via", "scope", "src", "metric":
			if i+1 >= len(words) {
				return s, fmt.Errorf("Command line is not complete. Try option \"help\"")
			}
			i++
			v := words[i]
			switch w {
			case "table":
				s.table = v
			case "dev":
				s.dev = v
			case "proto":
				s.proto = v
			case "via":
				s.via = v
			case "scope":
				s.scope = v
			case "src":
				s.src = v
			case "metric":
				s.metric = v
			}
		default:
			if w == "to" || w == "exact" {
				continue
			}
			if s.prefix != nil {
				return s, fmt.Errorf("Error: either \"to\" is duplicate, or \"%s\" is a garbage.", w)
			}
			p, err := parseDst(w)
			if err != nil {
				return s, err
			}
			s.prefix = &p
		}
	}
	return s, nil
}

func (s routeSelector) matches(r *hostRoute) bool {
	attr := func(key string) string {
		for i := 0; i+1 < len(r.words); i++ {
			if r.words[i] == key {
				return r.words[i+1]
			}
		}
		return ""
	}
	switch {
	case s.table != "main" && s.table != "254":
		return false
	case s.prefix != nil && *s.prefix != r.prefix:
		return false // "ip route show PREFIX" selects that exact prefix
	case s.dev != "" && s.dev != r.dev, s.proto != "" && s.proto != r.proto, s.via != "" && s.via != r.via:
		return false
	case s.scope != "" && s.scope != attr("scope"), s.src != "" && s.src != attr("src"), s.metric != "" && s.metric != r.metric:
		return false
	}
	return true
}

// routeOp answers route-get and route-set; h.mu not held.
func (h *SimHost) routeOp(op string, v map[string]string, stdout, stderr io.Writer) int {
	if c := v["C"]; c != "ip" && path.Base(c) != "ip" {
		fmt.Fprintf(stderr, "sh: 1: %s: not found\n", c)
		return 127
	}
	sel, err := parseSelector(strings.Fields(v["R"]))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 255
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if op == "route-set" {
		nr, table, err := parseRoute(strings.Fields(v["N"]))
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 255
		}
		i := slices.IndexFunc(h.routes, func(r *hostRoute) bool {
			return (table == "main" || table == "254") && r.prefix == nr.prefix && (nr.metric == "" || nr.metric == r.metric)
		})
		if i < 0 {
			fmt.Fprintln(stderr, "RTNETLINK answers: No such file or directory")
			return 2
		}
		if nr.dev == "" {
			nr.dev = h.routes[i].dev
		}
		if nr.dev != "eth0" && nr.dev != h.iface {
			fmt.Fprintf(stderr, "Cannot find device \"%s\"\n", nr.dev)
			return 1
		}
		h.routes[i] = nr
	}
	for _, r := range h.routes {
		if sel.matches(r) {
			fmt.Fprintln(stdout, r.String())
		}
	}
	return 0
}

// routeTo is the route the host takes to dst: the longest matching prefix
// of its main table; h.mu held.
func (h *SimHost) routeTo(dst netip.Addr) *hostRoute {
	var best *hostRoute
	for _, r := range h.routes {
		if r.prefix.Contains(dst) && (best == nil || r.prefix.Bits() > best.prefix.Bits()) {
			best = r
		}
	}
	return best
}

// linuxRTOMin is TCP_RTO_MIN, the kernel's rto_min where no route sets one.
const linuxRTOMin = 200 * time.Millisecond

// RTOMinTo is the rto_min TCP uses towards dst: the route's, else the
// kernel's.
func (h *SimHost) RTOMinTo(dst netip.Addr) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.routeTo(dst); r != nil && r.rtoMin > 0 {
		return r.rtoMin
	}
	return linuxRTOMin
}
