package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"

	"testbed/internal/redact"
	"testbed/results"
)

func (a *app) resultsCmd() *cobra.Command {
	c := &cobra.Command{Use: "results", Short: "Verify, show, sign, pack and compare result bundles"}
	c.AddCommand(a.resultsVerifyCmd(), a.resultsShowCmd(), a.resultsSignCmd(), a.resultsPackCmd(), a.resultsDiffCmd())
	addReadLimitFlags(c, true)
	return c
}

func (a *app) resultsVerifyCmd() *cobra.Command {
	verify := &cobra.Command{
		Use:   "verify <bundle>...",
		Short: "Check bundles (directory or .tar.gz) against their SHA256SUMS and signature",
		Long: `Check that every file of a bundle matches SHA256SUMS, that none is missing or
extra or anything but a regular file, that every path stays inside the bundle,
that the manifest parses, and, when SHA256SUMS.sig is present, that it is a
valid SSH signature of SHA256SUMS. A bundle larger than --max-bytes (all files),
--max-entry-bytes (one file) or --max-entries is not read further (exit 2).
With --allowed-signers (OpenSSH's allowed_signers
format) the signer must be listed there and a signature is required; without it the
signer's key is reported but not checked. Exit 1 if any bundle does not verify.
The same checks with standard tools:
  (cd <bundle> && sha256sum -c SHA256SUMS)
  ssh-keygen -Y verify -f allowed_signers -I <identity> -n ` + results.SignatureNamespace + ` -s SHA256SUMS.sig < SHA256SUMS`,
		Args: cobra.MinimumNArgs(1),
		RunE: a.resultsVerify,
	}
	verify.Flags().String("allowed-signers", "", "OpenSSH allowed_signers file the bundle's signer must be in")
	return verify
}

// resultsVerify verifies every bundle named, prints the reports and
// fails when one did not verify.
func (a *app) resultsVerify(cmd *cobra.Command, args []string) error {
	var opts results.VerifyOptions
	var err error
	if opts.Limits, err = readLimits(cmd); err != nil {
		return err
	}
	if f, _ := cmd.Flags().GetString("allowed-signers"); f != "" {
		s, err := results.ReadAllowedSigners(f)
		if err != nil {
			return &exitError{code: exitBadInput, err: err}
		}
		opts.AllowedSigners = s
	}
	var reports []*results.VerifyReport
	bad := 0
	for _, p := range args {
		r, err := results.VerifyWith(p, opts)
		if err != nil {
			return bundleError("verify", p, err)
		}
		if !r.OK {
			bad++
		}
		reports = append(reports, r)
	}
	if a.json() {
		if err := a.printJSON(reports); err != nil {
			return err
		}
	} else {
		for _, r := range reports {
			a.printVerifyReport(r)
		}
	}
	if bad > 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("%d of %d bundles did not verify", bad, len(args))}
	}
	return nil
}

// printVerifyReport prints a bundle's verification: OK, or its problems,
// and what its signature says.
func (a *app) printVerifyReport(r *results.VerifyReport) {
	if r.OK {
		fmt.Fprintf(a.stdout, "%s: OK (status %s)\n", r.Dir, r.Status)
	} else {
		fmt.Fprintf(a.stdout, "%s: FAILED\n", r.Dir)
		for _, p := range r.Problems {
			fmt.Fprintf(a.stdout, "  %s\n", p)
		}
	}
	if s := r.Signature; s != nil && s.Valid {
		switch {
		case s.Checked:
			fmt.Fprintf(a.stdout, "  signature: valid, by %s key %s, allowed as %s\n", s.KeyType, s.Fingerprint, strings.Join(s.Principals, ","))
		case s.Problem != "":
			fmt.Fprintf(a.stdout, "  signature: valid, by %s key %s, NOT ALLOWED\n", s.KeyType, s.Fingerprint)
		default:
			fmt.Fprintf(a.stdout, "  signature: valid, by %s key %s; signer unchecked (give --allowed-signers FILE to check it)\n", s.KeyType, s.Fingerprint)
		}
	} else if s == nil && r.OK {
		fmt.Fprintln(a.stdout, "  signature: none (unsigned)")
	}
}

func (a *app) resultsShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show <bundle>",
		Short: "Show a bundle: run, status, parameters, devices, tables and summary",
		Args:  cobra.ExactArgs(1),
		RunE:  a.resultsShow,
	}
}

// resultsShow prints a bundle, and fails on one that holds what a
// bundle may not.
func (a *app) resultsShow(cmd *cobra.Command, args []string) error {
	lim, err := readLimits(cmd)
	if err != nil {
		return err
	}
	r, err := results.OpenWith(args[0], results.OpenOptions{Limits: lim})
	if err != nil {
		return bundleError("open", args[0], err)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(a.stderr, "testbed: warning: %s: %s\n", args[0], p)
	}
	if a.json() {
		if err := a.printJSON(map[string]any{"manifest": r.Manifest, "summary": r.Summary, "tables": r.Tables, "events": r.Events, "incomplete": r.Incomplete, "problems": r.Problems}); err != nil {
			return err
		}
		return unsafeBundle(args[0], r.Problems)
	}
	a.printRun(r)
	a.printContents(r)
	return unsafeBundle(args[0], r.Problems)
}

// printRun prints what ran: the run, recipe, status, times, lab, seed,
// software and progress.
func (a *app) printRun(r *results.Reader) {
	m := r.Manifest
	fmt.Fprintf(a.stdout, "run      %s\nrecipe   %s v%s\nstatus   %s", m.RunID, m.Recipe.Name, m.Recipe.Version, m.Status)
	if m.Reason != "" {
		fmt.Fprintf(a.stdout, " (%s)", m.Reason)
	}
	if r.Incomplete {
		fmt.Fprint(a.stdout, " [INCOMPLETE: never finalized]")
	}
	fmt.Fprintf(a.stdout, "\nstarted  %s\n", m.Started.Format("2006-01-02 15:04:05 MST"))
	if m.Ended != nil {
		fmt.Fprintf(a.stdout, "ended    %s (%s)\n", m.Ended.Format("2006-01-02 15:04:05 MST"), m.Ended.Sub(m.Started).Round(1e6))
	}
	lab := m.Lab.Name
	if m.Lab.Simulated {
		lab += " (simulated)"
	}
	fmt.Fprintf(a.stdout, "lab      %s\nseed     %d\nsoftware testbed %s (%s) %s %s/%s\n", lab, m.Seed, m.Software.TestbedVersion, shortRev(m.Software.VCSRevision), m.Software.GoVersion, m.Software.OS, m.Software.Arch)
	if m.Progress != nil {
		fmt.Fprintf(a.stdout, "progress %d/%d steps\n", m.Progress.StepsDone, m.Progress.StepsTotal)
	}
}

// printContents prints what the run recorded: parameters, devices,
// tables, cleanup and summary.
func (a *app) printContents(r *results.Reader) {
	m := r.Manifest
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nparameters:")
	for _, p := range m.Params {
		fmt.Fprintf(tw, "  %s\t%v %s\t(%s)\n", p.Name, p.Value, p.Unit, p.Source)
	}
	fmt.Fprintln(tw, "devices:")
	for _, d := range m.Devices {
		// A bundle written before addresses were redacted may hold a
		// URL's password: never print it.
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s %s s/n %s fw %s\n", d.Name, d.Kind, redact.URLPasswords(d.Address), d.Identity.Vendor, d.Identity.Model, d.Identity.Serial, d.Identity.Firmware)
	}
	fmt.Fprintln(tw, "tables:")
	for _, t := range r.Tables {
		fmt.Fprintf(tw, "  %s\t%d rows\n", t.Path, t.Rows)
	}
	tw.Flush()
	for _, c := range m.Cleanup {
		state := "ok"
		if !c.OK {
			state = "FAILED: " + c.Error
		}
		fmt.Fprintf(a.stdout, "cleanup: %s: %s\n", c.Action, state)
	}
	if len(r.Summary) > 0 {
		var v any
		if json.Unmarshal(r.Summary, &v) == nil {
			b, _ := json.MarshalIndent(v, "", "  ")
			fmt.Fprintf(a.stdout, "summary:\n%s\n", indent(string(b), "  "))
		}
	}
}

// unsafeBundle is the exit of a command that read a bundle holding
// entries a bundle may not (a path leaving it, a link, a device file, a
// duplicate): exit 1, as verify gives, whatever was shown of it.
func unsafeBundle(path string, problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	return &exitError{code: exitFailed, err: fmt.Errorf("%s: %d problem(s) in the bundle, above: it is not a bundle to trust (testbed results verify says more)", path, len(problems))}
}

func shortRev(r string) string {
	if len(r) > 12 {
		return r[:12]
	}
	if r == "" {
		return "no vcs info"
	}
	return r
}

func indent(s, pre string) string {
	return pre + strings.ReplaceAll(s, "\n", "\n"+pre)
}

func (a *app) resultsSignCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "sign <bundle>",
		Short: "Sign a bundle's SHA256SUMS with an SSH key (writes SHA256SUMS.sig)",
		Long: `Write SHA256SUMS.sig into a finalized bundle directory: an SSH signature (OpenSSH's
SSHSIG format, SHA-512, namespace ` + results.SignatureNamespace + `) over SHA256SUMS, which lists
every other file's SHA-256. The bundle must verify first, and an existing signature
is never overwritten. Keys: ed25519, ECDSA, RSA (signed with rsa-sha2-512).

--key is an OpenSSH private key. A passphrase-protected key needs --passphrase-file,
or an SSH agent (SSH_AUTH_SOCK) holding it; --key may also name the .pub of a key in
the agent, and with no --key the agent's only key is used. Anyone can check it with:
  ssh-keygen -Y verify -f allowed_signers -I <identity> -n ` + results.SignatureNamespace + ` \
    -s <bundle>/SHA256SUMS.sig < <bundle>/SHA256SUMS`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, _ := cmd.Flags().GetString("key")
			pass, _ := cmd.Flags().GetString("passphrase-file")
			signer, done, err := results.LoadSigner(cmd.Context(), results.SignerOptions{KeyFile: expandHome(key), PassphraseFile: expandHome(pass), AgentSocket: os.Getenv("SSH_AUTH_SOCK")})
			if err != nil {
				return &exitError{code: exitBadInput, err: fmt.Errorf("sign %s: %w", args[0], err)}
			}
			defer done()
			if err := results.Sign(args[0], signer); err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			pub := signer.PublicKey()
			out := struct {
				Bundle      string `json:"bundle"`
				Signature   string `json:"signature"`
				Namespace   string `json:"namespace"`
				KeyType     string `json:"key_type"`
				Fingerprint string `json:"fingerprint"`
			}{args[0], filepath.Join(args[0], results.SigFile), results.SignatureNamespace, pub.Type(), ssh.FingerprintSHA256(pub)}
			if a.json() {
				return a.printJSON(out)
			}
			fmt.Fprintf(a.stdout, "%s: signed by %s key %s\n%s\n", out.Bundle, out.KeyType, out.Fingerprint, out.Signature)
			return nil
		},
	}
	c.Flags().String("key", "", "OpenSSH private key, or the .pub of a key held by the SSH agent")
	c.Flags().String("passphrase-file", "", "file whose first line is the key's passphrase")
	return c
}

func (a *app) resultsPackCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "pack <bundle>",
		Short: "Write a bundle as a reproducible .tar.gz",
		Long: `Write a verified bundle directory as a .tar.gz that is the same, byte for byte,
every time and wherever the directory lies: one top directory named by the run id,
entries sorted, every mtime the run's end time, uid/gid 0 with no user names, modes
0644 (files) and 0755 (directories), a gzip header with no name and no time.
SHA256SUMS.sig goes in when present. The archive verifies with
'testbed results verify <archive>', or after 'tar -xzf' with sha256sum -c.

--out defaults to <run id>.tar.gz in the current directory; "-" writes to stdout.
(-o is the output format, as for every command.)`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			out, _ := cmd.Flags().GetString("out")
			if out == "-" {
				if err := results.PackTo(a.stdout, dir); err != nil {
					return &exitError{code: exitFailed, err: err}
				}
				return nil
			}
			if out == "" {
				r, err := results.Open(dir)
				if err != nil {
					return &exitError{code: exitBadInput, err: fmt.Errorf("pack %s: %w", dir, err)}
				}
				out = r.Manifest.RunID + ".tar.gz"
			}
			if err := results.Pack(dir, out); err != nil {
				code := exitFailed
				if errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrNotExist) {
					code = exitBadInput
				}
				return &exitError{code: code, err: err}
			}
			data, err := os.ReadFile(out)
			if err != nil {
				return &exitError{code: exitInfra, err: err}
			}
			sum := sha256.Sum256(data)
			if a.json() {
				return a.printJSON(map[string]any{"bundle": dir, "archive": out, "bytes": len(data), "sha256": hex.EncodeToString(sum[:])})
			}
			fmt.Fprintf(a.stderr, "packed %s: %d bytes, sha256 %x\n", dir, len(data), sum)
			fmt.Fprintln(a.stdout, out)
			return nil
		},
	}
	c.Flags().String("out", "", `archive to write (default <run id>.tar.gz; "-" for stdout)`)
	return c
}

func (a *app) resultsDiffCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "diff <A> <B>",
		Short: "Compare two bundles' summaries metric by metric, and how they were made",
		Long: `Compare summary.json of bundle A (the baseline) with bundle B, metric by metric
(a metric is a leaf of summary.json named by its dotted path, e.g.
links.l10g.loss_cliff_db.1e-06): both values, the absolute change B-A, the relative
change (B-A)/|A|, and whether it is within tolerance. Strings, booleans and nulls
compare exactly. Then provenance: recipe and version, seed, parameters, lab, device
identities, software, program hashes; differences are listed.

By default numbers must be equal. --tolerance 0.05 (or 5%) accepts a relative
change up to 5% of |A|; --abs-tolerance accepts an absolute change; either one
suffices. Exit 0 when every metric is within tolerance and none is missing on one
side, 1 otherwise, 2 when a bundle cannot be read.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts results.DiffOptions
			rel, _ := cmd.Flags().GetString("tolerance")
			v, err := parseTolerance(rel)
			if err != nil {
				return &exitError{code: exitBadInput, err: fmt.Errorf("--tolerance: %w", err)}
			}
			opts.Tolerance.Rel = v
			opts.Tolerance.Abs, _ = cmd.Flags().GetFloat64("abs-tolerance")
			dir, _ := cmd.Flags().GetString("direction")
			if opts.Direction, err = results.ParseDirection(dir); err != nil {
				return &exitError{code: exitBadInput, err: fmt.Errorf("--direction: %w", err)}
			}
			ignore, _ := cmd.Flags().GetStringArray("ignore")
			for _, p := range ignore {
				opts.Rules = append(opts.Rules, results.Rule{Pattern: p, Ignore: true})
			}
			if err := opts.Validate(); err != nil {
				return &exitError{code: exitBadInput, err: err}
			}
			lim, err := readLimits(cmd)
			if err != nil {
				return err
			}
			var rd [2]*results.Reader
			for i, p := range args {
				if rd[i], err = results.OpenWith(p, results.OpenOptions{Limits: lim}); err != nil {
					return bundleError("diff: open", p, err)
				}
				for _, prob := range rd[i].Problems {
					fmt.Fprintf(a.stderr, "testbed: warning: %s: %s\n", p, prob)
				}
			}
			if err := unsafeBundle(args[0], rd[0].Problems); err != nil {
				return err
			}
			if err := unsafeBundle(args[1], rd[1].Problems); err != nil {
				return err
			}
			rep, err := results.Diff(rd[0], rd[1], opts)
			if err != nil {
				return &exitError{code: exitBadInput, err: err}
			}
			if a.json() {
				if err := a.printJSON(rep); err != nil {
					return err
				}
			} else {
				changedOnly, _ := cmd.Flags().GetBool("changed")
				printDiff(a.stdout, rep, rd[0].Manifest, rd[1].Manifest, opts, changedOnly)
			}
			if !rep.Identical {
				return &exitError{code: exitFailed}
			}
			return nil
		},
	}
	f := c.Flags()
	f.String("tolerance", "0", "relative tolerance, a fraction of |A| (0.05) or a percentage (5%)")
	f.Float64("abs-tolerance", 0, "absolute tolerance, in the metric's own unit")
	f.String("direction", "either", "which change is a regression: either, higher_is_worse, lower_is_worse")
	f.StringArray("ignore", nil, "leave out metrics matching this pattern ('*' spans dots), repeatable")
	f.Bool("changed", false, "list only the metrics that differ")
	return c
}

// parseTolerance reads "0.05" or "5%".
func parseTolerance(s string) (float64, error) {
	s = strings.TrimSpace(s)
	div := 1.0
	if strings.HasSuffix(s, "%") {
		s, div = strings.TrimSpace(strings.TrimSuffix(s, "%")), 100
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q: expected a number >= 0 such as 0.05 or 5%%", s)
	}
	return v / div, nil
}

func printDiff(w io.Writer, rep *results.DiffReport, ma, mb results.Manifest, opts results.DiffOptions, changedOnly bool) {
	side := func(label string, ref results.BundleRef, m results.Manifest) {
		fmt.Fprintf(w, "%s  %s\n   %s v%s, seed %d, status %s, testbed %s (%s)\n", label, ref.Path, m.Recipe.Name, m.Recipe.Version, m.Seed, m.Status,
			m.Software.TestbedVersion, shortRev(m.Software.VCSRevision))
	}
	side("A", rep.A, ma)
	side("B", rep.B, mb)
	tol := "exact"
	if t := opts.Tolerance; t.Rel > 0 || t.Abs > 0 {
		var parts []string
		if t.Rel > 0 {
			parts = append(parts, "relative "+strconv.FormatFloat(t.Rel*100, 'g', -1, 64)+"%")
		}
		if t.Abs > 0 {
			parts = append(parts, "absolute "+strconv.FormatFloat(t.Abs, 'g', -1, 64))
		}
		tol = strings.Join(parts, " or ")
	}
	fmt.Fprintf(w, "tolerance: %s\n\n", tol)

	counts := map[string]int{}
	shown := 0
	for _, m := range rep.Metrics {
		if !changedOnly || m.Changed() {
			shown++
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if shown > 0 {
		fmt.Fprintln(tw, "metric\tA\tB\tB-A\trel\tstatus")
	} else {
		fmt.Fprintln(tw, "no metric differs beyond tolerance")
	}
	for _, m := range rep.Metrics {
		counts[m.Status]++
		if changedOnly && !m.Changed() {
			continue
		}
		va, vb := diffValue(m.A), diffValue(m.B)
		switch m.Status {
		case results.MetricOnlyA:
			vb = "-"
		case results.MetricOnlyB:
			va = "-"
		}
		abs, rel := "", ""
		if m.AbsChange != nil {
			abs = strconv.FormatFloat(*m.AbsChange, 'g', 4, 64)
			if *m.AbsChange > 0 {
				abs = "+" + abs
			}
		}
		if m.RelChange != nil {
			rel = fmt.Sprintf("%+.3g%%", *m.RelChange*100)
		} else if m.AbsChange != nil {
			rel = "n/a"
		}
		status := m.Status
		if m.Changed() {
			status = strings.ToUpper(status)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.Path, va, vb, abs, rel, status)
	}
	tw.Flush()

	pc := rep.ProvenanceChanged()
	if len(pc) == 0 {
		fmt.Fprintf(w, "\nprovenance: all %d facts the same\n", len(rep.Provenance))
	} else {
		fmt.Fprintf(w, "\nprovenance: %d of %d facts differ\n", len(pc), len(rep.Provenance))
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  fact\tA\tB")
		for _, p := range pc {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", p.Field, orDash(p.A), orDash(p.B))
		}
		tw.Flush()
	}
	changed := len(rep.Metrics) - counts[results.MetricEqual] - counts[results.MetricWithin]
	verdict := "IDENTICAL within tolerance"
	if !rep.Identical {
		verdict = "DIFFERENT"
	}
	fmt.Fprintf(w, "\n%s: %d metrics, %d equal, %d within tolerance, %d differ (%d worse, %d better), %d only in A, %d only in B\n",
		verdict, len(rep.Metrics), counts[results.MetricEqual], counts[results.MetricWithin], changed-counts[results.MetricOnlyA]-counts[results.MetricOnlyB],
		counts[results.MetricWorse], counts[results.MetricBetter], counts[results.MetricOnlyA], counts[results.MetricOnlyB])
}

func diffValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return strconv.Quote(x)
	}
	return fmt.Sprint(v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// expandHome turns a leading ~/ into the home directory, for paths given
// in config files (the shell expands them on a command line).
func expandHome(p string) string {
	if strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, p[2:])
		}
	}
	return p
}
