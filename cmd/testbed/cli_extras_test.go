package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"testbed/results"
)

func TestSnakeCaseAndEmptyLists(t *testing.T) {
	for in, want := range map[string]string{"RunID": "run_id", "StepsDone": "steps_done", "OK": "ok", "HTTPStatus": "http_status", "Name": "name", "P99US": "p99_us"} {
		if got := snakeCase(in); got != want {
			t.Errorf("snakeCase(%q) = %q, want %q", in, got, want)
		}
	}
	type inner struct{ DeviceName string }
	v := struct {
		RunID    string
		Tagged   string `json:"tagged_name"`
		Skip     string `json:"-"`
		Empty    []string
		Omitted  []string `json:"omitted,omitempty"`
		Devices  map[string]inner
		Started  time.Time
		Children []inner
	}{RunID: "r", Tagged: "t", Devices: map[string]inner{"voa1": {"x"}}, Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	b, err := json.Marshal(jsonShape(v))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"children":[],"devices":{"voa1":{"device_name":"x"}},"empty":[],"run_id":"r","started":"2026-01-02T03:04:05Z","tagged_name":"t"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

// Every command's help carries an Example block.
func TestEveryCommandHasAnExample(t *testing.T) {
	root := newRoot(&bytes.Buffer{}, &bytes.Buffer{})
	walk(root, func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%q has no Example in its help", c.CommandPath())
		}
	})
}

// jsonKeys collects the object keys of a JSON document.
func jsonKeys(v any, out map[string]bool) {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			out[k] = true
			jsonKeys(c, out)
		}
	case []any:
		for _, c := range t {
			jsonKeys(c, out)
		}
	}
}

var snakeKey = regexp.MustCompile(`^[a-z0-9]+(_[a-z0-9]+)*$`)

func writeBundle(t *testing.T, runs, recipe string, at time.Time, status results.Status, summary any) string {
	t.Helper()
	b, err := results.Create(runs, results.Manifest{RunID: results.NewRunID(at, recipe), Recipe: results.RecipeRef{Name: recipe, Version: "1"}, Started: at}, results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WriteSummary(summary); err != nil {
		t.Fatal(err)
	}
	reason := ""
	if status != results.StatusOK {
		reason = "voa1: set attenuation 12.5 dB: connection reset"
	}
	if err := b.Finalize(status, reason); err != nil {
		t.Fatal(err)
	}
	return b.Dir()
}

func TestResultsListFiltersAndSpeaksSnakeCase(t *testing.T) {
	runs := t.TempDir()
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	// The recipe's headline (loss_cliff_db.1e-06) comes first, whatever
	// sorts before it in the summary.
	a1 := writeBundle(t, runs, "attenuation-sweep", t0, results.StatusOK, map[string]any{"thresholds": []float64{1e-8}, "links": map[string]any{"l10g": map[string]any{"max_loss_free_db": 8.9, "loss_cliff_db": map[string]any{"1e-06": 9.3}}}})
	writeBundle(t, runs, "loss-sweep", t0.Add(time.Minute), results.StatusFailed, map[string]any{"partial": true})
	a2 := writeBundle(t, runs, "attenuation-sweep", t0.Add(2*time.Minute), results.StatusOK, map[string]any{"links": map[string]any{"l10g": map[string]any{"max_loss_free_db": 9.0}}})
	if err := os.Mkdir(filepath.Join(runs, "not-a-bundle"), 0o755); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(t.TempDir(), "index.sqlite")
	list := func(args ...string) (string, int) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"results", "list", "--runs-dir", runs}, args...), &out, &errOut)
		// The run index (testbed serve's) answers the same.
		var iout, ierr bytes.Buffer
		icode := run(context.Background(), append([]string{"results", "list", "--runs-dir", runs, "--index", index}, args...), &iout, &ierr)
		if icode != code || iout.String()+ierr.String() != out.String()+errOut.String() {
			t.Errorf("results list %v: through the index (exit %d)\n%s%s\nnot as read from the bundles (exit %d)\n%s%s", args, icode, iout.String(), ierr.String(), code, out.String(), errOut.String())
		}
		return out.String() + errOut.String(), code
	}
	out, code := list()
	if code != 0 || strings.Count(out, "\n") != 4 || !strings.Contains(out, "links.l10g.loss_cliff_db.1e-06 9.3 dB") || strings.Contains(out, "thresholds") {
		t.Errorf("list (exit %d):\n%s", code, out)
	}
	// A failed run shows why it failed.
	if !strings.Contains(out, "failed: voa1: set attenuation 12.5 dB: connection reset") || strings.Contains(out, "partial") {
		t.Errorf("list (exit %d):\n%s", code, out)
	}
	out, _ = list("--recipe", "attenuation-sweep", "--latest", "-o", "json")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 || rows[0]["path"] != a2 {
		t.Fatalf("--latest: %v\n%s (want %s, not %s)", err, out, a2, a1)
	}
	keys := map[string]bool{}
	jsonKeys(rows, keys)
	for k := range keys {
		if !snakeKey.MatchString(k) {
			t.Errorf("key %q is not lower_snake_case", k)
		}
	}
	out, _ = list("--status", "aborted", "-o", "json")
	if strings.TrimSpace(out) != "[]" {
		t.Errorf("no match gives %q, want []", out)
	}
	if _, code := list("--status", "fine"); code != exitBadInput {
		t.Errorf("--status fine: exit %d, want %d", code, exitBadInput)
	}
}

func TestExpRunWithoutRecipeListsThem(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"exp", "run"}, &out, &errOut)
	if code != exitBadInput || !strings.Contains(out.String(), "attenuation-sweep") || !strings.Contains(out.String(), "reactor-hybrid") {
		t.Errorf("exit %d:\n%s%s", code, out.String(), errOut.String())
	}
}

// Completion offers recipes, --set names with types, inventory names
// after '=', and bundles.
func TestCompletion(t *testing.T) {
	complete := func(args ...string) string {
		var out bytes.Buffer
		run(context.Background(), append([]string{cobra.ShellCompRequestCmd}, args...), &out, &bytes.Buffer{})
		return out.String()
	}
	if out := complete("exp", "run", "loss"); !strings.Contains(out, "loss-sweep\t") {
		t.Errorf("recipes:\n%s", out)
	}
	if out := complete("exp", "run", "loss-sweep", "--set", "loss_"); !strings.Contains(out, "loss_rates=\t[]float") {
		t.Errorf("--set names:\n%s", out)
	}
	if out := complete("exp", "run", "loss-sweep", "--set", "links=lg25,"); !strings.Contains(out, "links=lg25,lg100") {
		t.Errorf("--set links values:\n%s", out)
	}
	runs := t.TempDir()
	dir := writeBundle(t, runs, "fct", time.Now(), results.StatusOK, map[string]any{})
	if out := complete("results", "show", "--runs-dir", runs, ""); !strings.Contains(out, dir) {
		t.Errorf("bundles:\n%s", out)
	}
}
