package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"testbed/results"
)

func (a *app) resultsCmd() *cobra.Command {
	c := &cobra.Command{Use: "results", Short: "Verify and show result bundles"}
	verify := &cobra.Command{
		Use:   "verify <bundle>...",
		Short: "Check bundles (directory or .tar.gz) against their SHA256SUMS",
		Long: `Check that every file of a bundle matches SHA256SUMS, that none is missing or
extra, and that the manifest parses. Exit 1 if any bundle does not verify.
The same check with standard tools: (cd <bundle> && sha256sum -c SHA256SUMS).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var reports []*results.VerifyReport
			bad := 0
			for _, p := range args {
				r, err := results.Verify(p)
				if err != nil {
					return &exitError{code: exitBadInput, err: fmt.Errorf("verify %s: %w", p, err)}
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
					if r.OK {
						fmt.Fprintf(a.stdout, "%s: OK (status %s)\n", r.Dir, r.Status)
						continue
					}
					fmt.Fprintf(a.stdout, "%s: FAILED\n", r.Dir)
					for _, p := range r.Problems {
						fmt.Fprintf(a.stdout, "  %s\n", p)
					}
				}
			}
			if bad > 0 {
				return &exitError{code: exitFailed, err: fmt.Errorf("%d of %d bundles did not verify", bad, len(args))}
			}
			return nil
		},
	}
	show := &cobra.Command{
		Use:   "show <bundle>",
		Short: "Show a bundle: run, status, parameters, devices, tables and summary",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := results.Open(args[0])
			if err != nil {
				return &exitError{code: exitBadInput, err: fmt.Errorf("open %s: %w", args[0], err)}
			}
			m := r.Manifest
			if a.json() {
				return a.printJSON(map[string]any{"manifest": m, "summary": r.Summary, "tables": r.Tables, "events": r.Events, "incomplete": r.Incomplete})
			}
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
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "\nparameters:")
			for _, p := range m.Params {
				fmt.Fprintf(tw, "  %s\t%v %s\t(%s)\n", p.Name, p.Value, p.Unit, p.Source)
			}
			fmt.Fprintln(tw, "devices:")
			for _, d := range m.Devices {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s %s s/n %s fw %s\n", d.Name, d.Kind, d.Address, d.Identity.Vendor, d.Identity.Model, d.Identity.Serial, d.Identity.Firmware)
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
			return nil
		},
	}
	c.AddCommand(verify, show)
	return c
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
