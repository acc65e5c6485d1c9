package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Outcome is one host's result of a FanOut.
type Outcome[T any] struct {
	Host  string
	Value T
	Err   error
}

// FanOut runs f on every host, at most limit at a time (all at once when
// limit <= 0), and returns one Outcome per host in the order given: a
// host's failure (or panic) never hides the others' results. Hosts not yet
// started when ctx ends get ctx's error.
func FanOut[T any](ctx context.Context, hosts []*Host, limit int, f func(context.Context, *Host) (T, error)) []Outcome[T] {
	if limit <= 0 || limit > len(hosts) {
		limit = len(hosts)
	}
	out := make([]Outcome[T], len(hosts))
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i, h := range hosts {
		out[i].Host = h.Name()
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			out[i].Err = fmt.Errorf("%s: not started: %w", h.Name(), ctx.Err())
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer func() {
				if p := recover(); p != nil {
					out[i].Err = fmt.Errorf("%s: panic: %v", h.Name(), p)
				}
			}()
			out[i].Value, out[i].Err = f(ctx, h)
		}()
	}
	wg.Wait()
	return out
}

// Failures joins the errors of the outcomes that failed, each naming its
// host; nil when every host succeeded.
func Failures[T any](outs []Outcome[T]) error {
	var errs []error
	for _, o := range outs {
		if o.Err == nil {
			continue
		}
		if strings.HasPrefix(o.Err.Error(), o.Host+":") {
			errs = append(errs, o.Err)
		} else {
			errs = append(errs, fmt.Errorf("%s: %w", o.Host, o.Err))
		}
	}
	return errors.Join(errs...)
}
