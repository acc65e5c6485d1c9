package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"testbed/results"
)

// addReadLimitFlags adds the flags that raise (or lower) what reading a
// bundle may cost (results.ReadLimits) to c, and with persistent to its
// subcommands too.
func addReadLimitFlags(c *cobra.Command, persistent bool) {
	f := c.Flags()
	if persistent {
		f = c.PersistentFlags()
	}
	f.String(results.LimitBytes, fmtSize(results.DefaultMaxBytes), "most bytes a bundle's files may hold together (inflated, for an archive)")
	f.String(results.LimitEntryBytes, fmtSize(results.DefaultMaxEntryBytes), "most bytes one file of a bundle may hold (a gzip table: inflated)")
	f.Int(results.LimitEntries, results.DefaultMaxEntries, "most files and directories a bundle may hold")
}

// readLimits reads the flags addReadLimitFlags added.
func readLimits(cmd *cobra.Command) (results.ReadLimits, error) {
	var l results.ReadLimits
	for _, x := range []struct {
		name string
		dst  *int64
	}{{results.LimitBytes, &l.MaxBytes}, {results.LimitEntryBytes, &l.MaxEntryBytes}} {
		s, err := cmd.Flags().GetString(x.name)
		if err != nil {
			return l, err
		}
		if *x.dst, err = parseSize(s); err != nil {
			return l, &exitError{code: exitBadInput, err: fmt.Errorf("--%s: %w", x.name, err)}
		}
	}
	n, err := cmd.Flags().GetInt(results.LimitEntries)
	if err != nil {
		return l, err
	}
	if n < 1 {
		return l, &exitError{code: exitBadInput, err: fmt.Errorf("--%s %d: expected a count of at least 1", results.LimitEntries, n)}
	}
	l.MaxEntries = n
	return l, nil
}

// parseSize reads a byte count: 1048576, 512KiB, 64MiB, 4GiB (K, M, G, T
// with or without "iB"/"B" are all powers of 1024).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	lower := strings.ToLower(t)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"t", 1 << 40}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}} {
		for _, form := range []string{u.suffix + "ib", u.suffix + "b", u.suffix} {
			if strings.HasSuffix(lower, form) {
				t, mult = strings.TrimSpace(t[:len(t)-len(form)]), u.m
				goto parse
			}
		}
	}
	if strings.HasSuffix(lower, "b") {
		t = strings.TrimSpace(t[:len(t)-1])
	}
parse:
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) || v*float64(mult) > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q: expected a size such as 1073741824, 512MiB or 4GiB", s)
	}
	return int64(v * float64(mult)), nil
}

func fmtSize(n int64) string {
	switch {
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return strconv.FormatInt(n, 10)
}

// bundleError is an error reading a bundle, as the CLI reports it: bad
// input (exit 2); a limit says which flag raises it.
func bundleError(op, p string, err error) error {
	var le *results.LimitError
	if errors.As(err, &le) {
		// The error names the bundle (and the file) already.
		return &exitError{code: exitBadInput, err: fmt.Errorf("%s: %w; if the bundle is genuine, raise the limit with --%s", op, err, le.Limit)}
	}
	return &exitError{code: exitBadInput, err: fmt.Errorf("%s %s: %w", op, p, err)}
}
