package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"testbed/experiments"
	"testbed/internal/readfile"
	"testbed/orchestrator"
	"testbed/results"
	"testbed/serve"
)

// bundleEntry is one bundle under the runs directory, as listed.
type bundleEntry struct {
	RunID    string    `json:"run_id"`
	Recipe   string    `json:"recipe"`
	Status   string    `json:"status"`
	Started  time.Time `json:"started"`
	Path     string    `json:"path"`
	Headline []string  `json:"headline"`
}

// listBundles reads the manifest (and summary) of every bundle directory
// under dir, oldest first. Directories without a readable manifest are
// not bundles and are left out.
func listBundles(dir string) ([]bundleEntry, error) {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return []bundleEntry{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list bundles under %s: %w", dir, err)
	}
	out := []bundleEntry{}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		raw, err := readfile.Read(filepath.Join(p, "manifest.json"), maxBundleMetaBytes)
		if err != nil {
			continue
		}
		var m results.Manifest
		if json.Unmarshal(raw, &m) != nil || m.RunID == "" {
			continue
		}
		be := bundleEntry{RunID: m.RunID, Recipe: m.Recipe.Name, Status: string(m.Status), Started: m.Started, Path: p, Headline: []string{}}
		switch {
		case m.Status == results.StatusFailed || m.Status == results.StatusAborted:
			// Why it did not end ok, not numbers it did not finish.
			be.Headline = []string{shorten(string(m.Status)+": "+m.Reason, 160)}
		default:
			if s, err := readfile.Read(filepath.Join(p, "summary.json"), maxBundleMetaBytes); err == nil {
				be.Headline = headline(s, recipeHeadlines(m.Recipe.Name), 3)
			}
		}
		out = append(out, be)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RunID < out[j].RunID })
	return out, nil
}

// headline is up to n of a summary's numbers, "name value unit": those
// the recipe's headline patterns match, in the patterns' order, else (a
// recipe that declares none) the first in the summary's order.
func headline(summary []byte, patterns []string, n int) []string {
	out, _ := headlines(summary, patterns, n)
	return out
}

// headlines is headline and how many numbers it left out.
func headlines(summary []byte, patterns []string, n int) ([]string, int) {
	ms, err := results.FlattenSummary(summary)
	if err != nil {
		return []string{}, 0
	}
	format := func(m results.Metric, v float64) string {
		s := m.Path + " " + strconv.FormatFloat(v, 'g', 4, 64)
		if u := results.MetricUnit(m.Path); u != "" {
			s += " " + u
		}
		return s
	}
	var picked []string
	total := 0
	if len(patterns) > 0 {
		for _, pat := range patterns {
			for _, m := range ms {
				if v, ok := m.Value.(float64); ok && orchestrator.MatchMetric(pat, m.Path) {
					picked = append(picked, format(m, v))
				}
			}
		}
	}
	if len(picked) == 0 {
		// No pattern matched (or none declared): the summary's first.
		for _, m := range ms {
			if v, ok := m.Value.(float64); ok {
				picked = append(picked, format(m, v))
			}
		}
	}
	for _, m := range ms {
		if _, ok := m.Value.(float64); ok {
			total++
		}
	}
	if len(picked) > n {
		picked = picked[:n]
	}
	if picked == nil {
		picked = []string{}
	}
	return picked, total - len(picked)
}

// recipeHeadlines is the headline patterns of a recipe of this build, by
// name (none for a recipe this build lacks).
func recipeHeadlines(name string) []string {
	r, err := experiments.Registry().Get(name)
	if err != nil {
		return nil
	}
	return r.Meta().Headlines
}

func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// previousRun is the newest bundle of the recipe under dir before runID,
// or "".
func previousRun(dir, recipe, runID string) string {
	bs, err := listBundles(dir)
	if err != nil {
		return ""
	}
	prev := ""
	for _, b := range bs {
		if b.Recipe == recipe && b.RunID < runID {
			prev = b.Path
		}
	}
	return prev
}

func (a *app) resultsListCmd() *cobra.Command {
	var recipe, status, index string
	var latest bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the bundles under the runs directory: id, recipe, status, time, headline",
		Example: `  testbed results list
  testbed results list --recipe loss-sweep --status ok
  testbed results list --recipe attenuation-sweep --latest -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch status {
			case "", string(results.StatusOK), string(results.StatusFailed), string(results.StatusAborted), string(results.StatusRunning):
			default:
				return &exitError{code: exitBadInput, err: fmt.Errorf("--status %q: expected ok, failed, aborted or running", status)}
			}
			var all []bundleEntry
			var err error
			if index != "" {
				all, err = indexedBundles(cmd.Context(), index, a.v.GetString("runs_dir"), recipe, status)
			} else {
				all, err = listBundles(a.v.GetString("runs_dir"))
			}
			if err != nil {
				return err
			}
			rows := []bundleEntry{}
			for _, b := range all {
				if (recipe == "" || b.Recipe == recipe) && (status == "" || b.Status == status) {
					rows = append(rows, b)
				}
			}
			if latest && len(rows) > 1 {
				rows = rows[len(rows)-1:]
			}
			if a.json() {
				return a.printJSON(rows)
			}
			return printBundleList(a.stdout, rows)
		},
	}
	c.Flags().StringVar(&recipe, "recipe", "", "only bundles of this recipe")
	c.Flags().StringVar(&status, "status", "", "only bundles with this status: ok, failed, aborted, running")
	c.Flags().BoolVar(&latest, "latest", false, "only the newest matching bundle")
	c.Flags().StringVar(&index, "index", "", "answer from this run index (testbed serve's, brought up to date with the runs directory first) instead of reading every bundle")
	_ = c.RegisterFlagCompletionFunc("recipe", completeRecipes)
	_ = c.RegisterFlagCompletionFunc("status", cobra.FixedCompletions([]string{"ok", "failed", "aborted", "running"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func printBundleList(w io.Writer, rows []bundleEntry) error {
	if len(rows) == 0 {
		fmt.Fprintln(w, "no bundles")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN ID\tRECIPE\tSTATUS\tSTARTED\tHEADLINE")
	for _, b := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", b.RunID, b.Recipe, b.Status, b.Started.Local().Format("2006-01-02 15:04"), strings.Join(b.Headline, "; "))
	}
	return tw.Flush()
}

// noRecipe answers `exp run` without a recipe: the recipes to choose from.
func (a *app) noRecipe() error {
	reg := experiments.Registry()
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Which recipe? testbed exp run <recipe> (testbed exp show <recipe> for its parameters):")
	for _, n := range reg.Names() {
		if r, err := reg.Get(n); err == nil {
			fmt.Fprintf(tw, "  %s\t%s\n", n, r.Meta().Summary)
		}
	}
	tw.Flush()
	return &exitError{code: exitBadInput, err: fmt.Errorf("exp run: no recipe given")}
}

// printRunEnd closes a run's output with its headline numbers, the
// report's path and the commands to look further: show the bundle, and
// diff it against the last run of the same recipe.
func (a *app) printRunEnd(res *orchestrator.RunResult) {
	w := a.stderr
	m, err := readManifest(res.Dir)
	if err != nil {
		return
	}
	fmt.Fprintf(w, "\n%s %s: %s", m.Recipe.Name, res.RunID, res.Status)
	if m.Ended != nil {
		fmt.Fprintf(w, " in %s", orchestrator.FormatDuration(m.Ended.Sub(m.Started)))
	}
	fmt.Fprintf(w, " (%d/%d steps)\n", res.StepsDone, res.StepsTotal)
	if res.Status != results.StatusOK {
		fmt.Fprintf(w, "  why: %s\n", res.Reason)
	}
	if s, err := readfile.Read(filepath.Join(res.Dir, "summary.json"), maxBundleMetaBytes); err == nil {
		// The recipe's headline numbers (its paper's), at most a dozen.
		hs, more := headlines(s, recipeHeadlines(m.Recipe.Name), 12)
		for _, h := range hs {
			fmt.Fprintf(w, "  %s\n", h)
		}
		if more > 0 {
			fmt.Fprintf(w, "  ... %d more numbers in %s\n", more, filepath.Join(res.Dir, "summary.json"))
		}
	}
	if _, err := os.Stat(filepath.Join(res.Dir, "report.html")); err == nil {
		fmt.Fprintf(w, "report: %s\n", filepath.Join(res.Dir, "report.html"))
	}
	fmt.Fprintf(w, "next:   testbed results show %s\n", res.Dir)
	if prev := previousRun(filepath.Dir(res.Dir), m.Recipe.Name, res.RunID); prev != "" {
		fmt.Fprintf(w, "        testbed results diff %s %s\n", prev, res.Dir)
	}
}

func readManifest(dir string) (results.Manifest, error) {
	var m results.Manifest
	raw, err := readfile.Read(filepath.Join(dir, "manifest.json"), maxBundleMetaBytes)
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(raw, &m)
}

// maxBundleMetaBytes bounds a bundle's manifest.json and summary.json as
// `results list` reads them (the bundle reader's own limit for them).
const maxBundleMetaBytes = 64 << 20

// indexedBundles is listBundles answered by a run index (serve's): the
// index is brought in step with the runs directory, then asked.
func indexedBundles(ctx context.Context, path, runs, recipe, status string) ([]bundleEntry, error) {
	ix, err := serve.OpenIndex(ctx, path, runs, recipeHeadlines)
	if err != nil {
		return nil, err
	}
	defer ix.Close()
	if _, err := ix.Sync(ctx); err != nil {
		return nil, err
	}
	rs, err := ix.Runs(ctx, serve.RunFilter{Recipe: recipe, Status: status, Limit: -1})
	if err != nil {
		return nil, err
	}
	out := make([]bundleEntry, 0, len(rs))
	for i := len(rs) - 1; i >= 0; i-- { // oldest first, as listBundles
		r := rs[i]
		out = append(out, bundleEntry{RunID: r.RunID, Recipe: r.Recipe, Status: r.Status, Started: r.Started, Path: ix.Path(r), Headline: r.Headline})
	}
	return out, nil
}
