package host

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Current reads a setting's present value, in the form Change.Before has
// ("unset" for a route metric the route does not carry). A run records it
// in its undo journal before it applies the setting.
func (h *Host) Current(ctx context.Context, s Setting) (string, error) {
	switch s.Kind {
	case SettingSysctl:
		if !sysctlKeyRe.MatchString(s.Key) {
			return "", fmt.Errorf("%s: %q is not a sysctl name", h.name, s.Key)
		}
		out, err := h.do(ctx, "read sysctl "+s.Key, opSysctlGet, nil, h.opts.Sysctl, s.Key)
		if err != nil {
			return "", err
		}
		return normal(out), nil
	case SettingRouteRTOMin:
		sel, err := routeSelector(h.name, s.Key)
		if err != nil {
			return "", err
		}
		r, err := h.readRoute(ctx, opRouteGet, sel, h.opts.IP, sel)
		if err != nil {
			return "", err
		}
		return r.value(), nil
	}
	return "", fmt.Errorf("%s: setting %s: unknown kind %q (known: %s, %s)", h.name, s, s.Kind, SettingSysctl, SettingRouteRTOMin)
}

// Restore puts a setting back to a value Current (or Change.Before)
// returned, whatever it is now, and checks it reads back. Unlike Apply it
// takes "unset" for a route's rto_min (the route then carries none). This
// is how an undo journal's entry is replayed after the run that changed
// the setting died.
func (h *Host) Restore(ctx context.Context, s Setting) error {
	switch s.Kind {
	case SettingSysctl:
		if !sysctlKeyRe.MatchString(s.Key) {
			return fmt.Errorf("%s: %q is not a sysctl name", h.name, s.Key)
		}
		v := normal(s.Value)
		if strings.ContainsAny(s.Value, "\n\r\x00") || v == "" {
			return fmt.Errorf("%s: restore sysctl %s: the value must be one non-empty line", h.name, s.Key)
		}
		out, err := h.do(ctx, fmt.Sprintf("sysctl -w %s=%s", s.Key, v), opSysctlSet, nil, h.opts.Sysctl, s.Key, v)
		if err != nil {
			return fmt.Errorf("restore sysctl %s=%s: %w", s.Key, v, err)
		}
		if got := normal(out); got != v {
			return fmt.Errorf("%s: restore sysctl %s=%s: reads back %q", h.name, s.Key, v, got)
		}
		return nil
	case SettingRouteRTOMin:
		sel, err := routeSelector(h.name, s.Key)
		if err != nil {
			return err
		}
		var want time.Duration
		if s.Value != Unset {
			want, err = time.ParseDuration(strings.TrimSpace(s.Value))
			if err != nil || want < time.Millisecond {
				return fmt.Errorf("%s: restore route %s rto_min %q: expected %q or a duration such as \"200ms\"", h.name, sel, s.Value, Unset)
			}
		}
		now, err := h.readRoute(ctx, opRouteGet, sel, h.opts.IP, sel)
		if err != nil {
			return fmt.Errorf("restore route %s rto_min %s: %w", sel, s.Value, err)
		}
		got, err := h.readRoute(ctx, opRouteSet, sel, h.opts.IP, sel, now.spec(strings.Fields(sel), want))
		if err != nil {
			return fmt.Errorf("restore route %s rto_min %s: %w", sel, s.Value, err)
		}
		if got.value() != s.Value && !(s.Value != Unset && got.has && got.rtoMin == want) {
			return fmt.Errorf("%s: restore route %s rto_min %s: reads back %s", h.name, sel, s.Value, got.value())
		}
		return nil
	}
	return fmt.Errorf("%s: restore %s: unknown kind %q (known: %s, %s)", h.name, s, s.Kind, SettingSysctl, SettingRouteRTOMin)
}

func routeSelector(name, key string) (string, error) {
	sel := strings.Fields(key)
	if len(sel) == 0 {
		return "", fmt.Errorf("%s: route setting without a selector", name)
	}
	for _, w := range sel {
		if !routeWordRe.MatchString(w) {
			return "", fmt.Errorf("%s: %q is not a route selector word", name, w)
		}
	}
	return strings.Join(sel, " "), nil
}

// readRoute runs "ip route show|change" and reads the one route it answers.
func (h *Host) readRoute(ctx context.Context, op, selector string, args ...string) (route, error) {
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
