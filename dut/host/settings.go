package host

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Kinds of Setting.
const (
	// SettingSysctl is a sysctl: Key its name, Value what to write.
	SettingSysctl = "sysctl"
	// SettingRouteRTOMin is the rto_min metric of one route: Key the
	// selector given to "ip route show" (e.g. "10.0.0.0/24",
	// "default", "10.0.0.0/24 table 100"), Value a duration in whole
	// milliseconds ("1ms").
	SettingRouteRTOMin = "route-rto-min"
)

// Setting is a host setting a recipe changes for the length of a run.
type Setting struct {
	Kind  string
	Key   string
	Value string
}

// Sysctl is the setting "sysctl -w key=value".
func Sysctl(key, value string) Setting { return Setting{Kind: SettingSysctl, Key: key, Value: value} }

// RouteRTOMin is the setting "rto_min d" on the route matching selector.
func RouteRTOMin(selector string, d time.Duration) Setting {
	return Setting{Kind: SettingRouteRTOMin, Key: selector, Value: fmt.Sprintf("%dms", d.Milliseconds())}
}

func (s Setting) String() string {
	switch s.Kind {
	case SettingSysctl:
		return fmt.Sprintf("sysctl %s=%s", s.Key, s.Value)
	case SettingRouteRTOMin:
		return fmt.Sprintf("route %s rto_min %s", s.Key, s.Value)
	}
	return fmt.Sprintf("%s %s=%s", s.Kind, s.Key, s.Value)
}

// Unset is the Before or After of a route metric the route does not carry
// (the kernel's default applies).
const Unset = "unset"

// Change records a setting applied to a host, for the result bundle.
type Change struct {
	Host    string    `json:"host"`
	Kind    string    `json:"kind"`
	Key     string    `json:"key"`
	Value   string    `json:"value"`  // what was asked for
	Before  string    `json:"before"` // the value found
	After   string    `json:"after"`  // the value read back after the change
	Applied time.Time `json:"applied"`
}

// Undo restores what Apply changed.
type Undo func(ctx context.Context) error

var (
	sysctlKeyRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_./-]*$`)
	routeWordRe = regexp.MustCompile(`^[A-Za-z0-9_.:/@%+-]+$`)
)

// Apply reads a setting's present value (refusing the setting if it cannot
// be read), changes it, reads it back, and returns the change with both
// values and the undo that restores the value found. A value that does not
// read back as asked is restored at once and reported.
func (h *Host) Apply(ctx context.Context, s Setting) (Change, Undo, error) {
	switch s.Kind {
	case SettingSysctl:
		return h.applySysctl(ctx, s)
	case SettingRouteRTOMin:
		return h.applyRouteRTOMin(ctx, s)
	}
	return Change{}, nil, fmt.Errorf("%s: setting %s: unknown kind %q (known: %s, %s)", h.name, s, s.Kind, SettingSysctl, SettingRouteRTOMin)
}

// normal is a sysctl value with its whitespace (tabs between fields) made
// single spaces, as it is compared and written back.
func normal(v string) string { return strings.Join(strings.Fields(v), " ") }

func (h *Host) applySysctl(ctx context.Context, s Setting) (Change, Undo, error) {
	what := "setting " + s.String()
	if !sysctlKeyRe.MatchString(s.Key) {
		return Change{}, nil, fmt.Errorf("%s: %s: %q is not a sysctl name", h.name, what, s.Key)
	}
	if strings.ContainsAny(s.Value, "\n\r\x00") || normal(s.Value) == "" {
		return Change{}, nil, fmt.Errorf("%s: %s: the value must be one non-empty line", h.name, what)
	}
	out, err := h.do(ctx, "read sysctl "+s.Key, opSysctlGet, nil, h.opts.Sysctl, s.Key)
	if err != nil {
		return Change{}, nil, fmt.Errorf("%s: refused, its present value cannot be read: %w", what, err)
	}
	before := normal(out)
	ch := Change{Host: h.name, Kind: s.Kind, Key: s.Key, Value: normal(s.Value), Before: before, Applied: time.Now()}
	set := func(ctx context.Context, v string) (string, error) {
		out, err := h.do(ctx, fmt.Sprintf("sysctl -w %s=%s", s.Key, v), opSysctlSet, nil, h.opts.Sysctl, s.Key, v)
		return normal(out), err
	}
	after, err := set(ctx, ch.Value)
	ch.After = after
	if err == nil && after != ch.Value {
		err = fmt.Errorf("%s: %s: reads back %q", h.name, what, after)
	}
	if err != nil {
		if _, rerr := set(ctx, before); rerr != nil {
			err = errors.Join(err, fmt.Errorf("restoring %q: %w", before, rerr))
		}
		return ch, nil, err
	}
	undo := func(ctx context.Context) error {
		got, err := set(ctx, before)
		if err != nil {
			return fmt.Errorf("restore sysctl %s=%s: %w", s.Key, before, err)
		}
		if got != before {
			return fmt.Errorf("%s: restore sysctl %s=%s: reads back %q", h.name, s.Key, before, got)
		}
		return nil
	}
	return ch, undo, nil
}

// route is one line of "ip route show": its words, and the rto_min it
// carries (0 when none).
type route struct {
	words  []string
	rtoMin time.Duration
	has    bool
}

// outputOnly are words "ip route show" prints that "ip route change" does
// not take.
var outputOnly = []string{"linkdown", "dead", "offload", "trap", "offload_failed", "rt_offload", "rt_trap", "rt_offload_failed", "pervasive", "notify", "unresolved"}

func parseRoute(line string) (route, error) {
	var r route
	f := strings.Fields(line)
	for i := 0; i < len(f); i++ {
		w := f[i]
		if !routeWordRe.MatchString(w) {
			return r, fmt.Errorf("route %q: unexpected word %q", line, w)
		}
		switch {
		case w == "rto_min":
			i++
			if i < len(f) && f[i] == "lock" {
				i++
			}
			if i >= len(f) {
				return r, fmt.Errorf("route %q: rto_min without a value", line)
			}
			d, err := time.ParseDuration(f[i])
			if err != nil {
				return r, fmt.Errorf("route %q: rto_min %q: %w", line, f[i], err)
			}
			r.rtoMin, r.has = d, true
		case w == "expires" || w == "cache":
			if w == "expires" {
				i++
			}
		case slices.Contains(outputOnly, w):
		default:
			r.words = append(r.words, w)
		}
	}
	return r, nil
}

func (r route) value() string {
	if !r.has {
		return Unset
	}
	return fmtMs(r.rtoMin)
}

func fmtMs(d time.Duration) string {
	if d%time.Millisecond == 0 {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return d.String()
}

// spec is the words for "ip route change": the route as shown, with
// rto_min d (or none when d is 0) and the selector's table.
func (r route) spec(selector []string, d time.Duration) string {
	w := slices.Clone(r.words)
	if i := slices.Index(selector, "table"); i >= 0 && i+1 < len(selector) && !slices.Contains(w, "table") {
		w = append(w, "table", selector[i+1])
	}
	if d > 0 {
		w = append(w, "rto_min", fmtMs(d))
	}
	return strings.Join(w, " ")
}

// oneRoute reads the single route an "ip route show" answer must hold.
func oneRoute(out, selector string) (route, error) {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if l[0] == ' ' || l[0] == '\t' {
			return route{}, fmt.Errorf("route %s has several next hops; this driver changes single-path routes only", selector)
		}
		lines = append(lines, l)
	}
	switch len(lines) {
	case 0:
		return route{}, fmt.Errorf("no route matches %q", selector)
	case 1:
		return parseRoute(lines[0])
	}
	return route{}, fmt.Errorf("%d routes match %q (add dev, table or metric to name one): %s", len(lines), selector, strings.Join(lines, "; "))
}

func (h *Host) applyRouteRTOMin(ctx context.Context, s Setting) (Change, Undo, error) {
	what := "setting " + s.String()
	sel := strings.Fields(s.Key)
	if len(sel) == 0 {
		return Change{}, nil, fmt.Errorf("%s: %s: no route selector", h.name, what)
	}
	for _, w := range sel {
		if !routeWordRe.MatchString(w) {
			return Change{}, nil, fmt.Errorf("%s: %s: %q is not a route selector word", h.name, what, w)
		}
	}
	want, err := time.ParseDuration(strings.TrimSpace(s.Value))
	if err != nil || want < time.Millisecond || want%time.Millisecond != 0 {
		return Change{}, nil, fmt.Errorf("%s: %s: rto_min must be a whole number of milliseconds (\"1ms\")", h.name, what)
	}
	selector := strings.Join(sel, " ")
	read := func(ctx context.Context, op string, args ...string) (route, error) {
		verb := "show"
		if op == opRouteSet {
			verb = "change"
		}
		out, err := h.do(ctx, "ip route "+verb+" "+selector, op, nil, args...)
		if err != nil {
			return route{}, err
		}
		r, err := oneRoute(out, selector)
		if err != nil {
			return route{}, fmt.Errorf("%s: %w", h.name, err)
		}
		return r, nil
	}
	orig, err := read(ctx, opRouteGet, h.opts.IP, selector)
	if err != nil {
		return Change{}, nil, fmt.Errorf("%s: refused, its present value cannot be read: %w", what, err)
	}
	ch := Change{Host: h.name, Kind: s.Kind, Key: selector, Value: fmtMs(want), Before: orig.value(), Applied: time.Now()}
	restore := func(ctx context.Context) error {
		got, err := read(ctx, opRouteSet, h.opts.IP, selector, orig.spec(sel, orig.rtoMin))
		if err != nil {
			return fmt.Errorf("restore route %s rto_min %s: %w", selector, orig.value(), err)
		}
		if got.value() != orig.value() {
			return fmt.Errorf("%s: restore route %s rto_min %s: reads back %s", h.name, selector, orig.value(), got.value())
		}
		return nil
	}
	got, err := read(ctx, opRouteSet, h.opts.IP, selector, orig.spec(sel, want))
	if err == nil {
		ch.After = got.value()
		if !got.has || got.rtoMin != want {
			err = fmt.Errorf("%s: %s: reads back %s", h.name, what, got.value())
		}
	}
	if err != nil {
		if rerr := restore(ctx); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return ch, nil, err
	}
	return ch, restore, nil
}
