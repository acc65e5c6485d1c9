package suite

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"testbed/orchestrator"
	"testbed/results"
)

// Labels a suite run records in each bundle's manifest.
const (
	LabelSuite = "suite"
	LabelEntry = "suite_entry"
)

// Baseline is a finished bundle an entry is compared with.
type Baseline struct {
	Path     string
	Manifest results.Manifest
	Summary  []byte
}

// Baselines are the bundles given with --baseline: one bundle, or every
// bundle (directory or .tar.gz) directly inside a directory.
type Baselines struct {
	Root    string
	Single  bool
	Bundles []*Baseline
	// Unreadable lists what in the directory did not open as a bundle.
	Unreadable []string
}

// LoadBaselines opens a bundle or a directory of bundles.
func LoadBaselines(p string) (*Baselines, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, &orchestrator.InputError{Msg: fmt.Sprintf("baseline: %v", err)}
	}
	bs := &Baselines{Root: p}
	if !fi.IsDir() || isBundleDir(p) {
		b, err := openBaseline(p)
		if err != nil {
			return nil, &orchestrator.InputError{Msg: fmt.Sprintf("baseline %s: %v", p, err)}
		}
		bs.Single, bs.Bundles = true, []*Baseline{b}
		return bs, nil
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, &orchestrator.InputError{Msg: fmt.Sprintf("baseline: %v", err)}
	}
	for _, de := range ents {
		full := filepath.Join(p, de.Name())
		if !(de.IsDir() && isBundleDir(full)) && !strings.HasSuffix(de.Name(), ".tar.gz") {
			continue
		}
		b, err := openBaseline(full)
		if err != nil {
			bs.Unreadable = append(bs.Unreadable, fmt.Sprintf("%s: %v", full, err))
			continue
		}
		bs.Bundles = append(bs.Bundles, b)
	}
	if len(bs.Bundles) == 0 {
		return nil, &orchestrator.InputError{Msg: fmt.Sprintf("baseline %s: no bundle in this directory (expected bundle directories with a manifest.json, or .tar.gz archives of them)", p)}
	}
	// Newest first: run ids and start times sort by time.
	sort.SliceStable(bs.Bundles, func(i, j int) bool {
		return bs.Bundles[i].Manifest.Started.After(bs.Bundles[j].Manifest.Started)
	})
	return bs, nil
}

func isBundleDir(p string) bool {
	_, err := os.Stat(filepath.Join(p, "manifest.json"))
	return err == nil
}

func openBaseline(p string) (*Baseline, error) {
	r, err := results.Open(p)
	if err != nil {
		return nil, err
	}
	return &Baseline{Path: p, Manifest: r.Manifest, Summary: r.Summary}, nil
}

// usable says why a bundle cannot serve as a baseline ("" if it can).
func (b *Baseline) usable() string {
	switch {
	case b.Manifest.Status != results.StatusOK:
		return fmt.Sprintf("its run ended %s", b.Manifest.Status)
	case len(b.Summary) == 0:
		return "it has no summary.json"
	}
	return ""
}

// For picks the baseline of an entry and says how it was chosen. In a
// directory: the newest finished (ok) bundle the same suite entry made
// (manifest label suite_entry), else the newest one of the same recipe
// with the same resolved parameters. A single bundle serves every entry of
// its recipe. nil means none fits; the reason says why.
func (bs *Baselines) For(e *Entry) (*Baseline, string) {
	if bs == nil {
		return nil, "no --baseline given"
	}
	recipe := e.Recipe.Meta().Name
	if bs.Single {
		b := bs.Bundles[0]
		switch {
		case b.Manifest.Recipe.Name != recipe:
			return nil, fmt.Sprintf("baseline %s is a %s run, entry %s runs %s", b.Path, b.Manifest.Recipe.Name, e.ID, recipe)
		case b.usable() != "":
			return nil, fmt.Sprintf("baseline %s cannot be used: %s", b.Path, b.usable())
		}
		if d := paramDiff(manifestValues(b.Manifest.Params), ParamValues(e.Params)); d != "" {
			// A metric measured with other parameters is another
			// quantity: comparing them would report a change the code
			// did not make.
			return nil, fmt.Sprintf("baseline %s ran with other parameters (%s): not compared", b.Path, d)
		}
		return b, "the bundle given"
	}
	want := ParamValues(e.Params)
	var byID, byParams *Baseline
	otherParams := ""
	sameRecipe, unusable := 0, 0
	for _, b := range bs.Bundles {
		if b.Manifest.Recipe.Name != recipe {
			continue
		}
		sameRecipe++
		if b.usable() != "" {
			unusable++
			continue
		}
		same := canonical(manifestValues(b.Manifest.Params)) == canonical(want)
		if b.Manifest.Labels[LabelEntry] == e.ID {
			switch {
			case byID == nil && same:
				byID = b
			case byID == nil && otherParams == "":
				// The entry's own bundle, from before its parameters
				// changed: not compared, and said.
				otherParams = fmt.Sprintf("the newest ok bundle of entry %s, %s, ran with other parameters (%s) and is not compared",
					e.ID, b.Path, paramDiff(manifestValues(b.Manifest.Params), want))
			}
		}
		if byParams == nil && same {
			byParams = b
		}
	}
	switch {
	case byID != nil:
		return byID, fmt.Sprintf("newest ok bundle of suite entry %s with its parameters", e.ID)
	case byParams != nil:
		how := fmt.Sprintf("newest ok %s bundle with the same parameters", recipe)
		if otherParams != "" {
			how += "; " + otherParams
		}
		return byParams, how
	}
	why := fmt.Sprintf("no ok bundle in %s is from entry %s or runs %s with the same parameters (%d bundles of %s, %d of them not ok or without summary)",
		bs.Root, e.ID, recipe, sameRecipe, recipe, unusable)
	if otherParams != "" {
		why += "; " + otherParams
	}
	return nil, why
}

// paramDiff names the parameters whose values differ between a baseline
// and an entry ("frame_size: 1518 in the baseline, 9216 here"), "" when
// none do.
func paramDiff(base, cur map[string]any) string {
	names := map[string]bool{}
	for k := range base {
		names[k] = true
	}
	for k := range cur {
		names[k] = true
	}
	var keys []string
	for k := range names {
		if canonical(map[string]any{"v": base[k]}) != canonical(map[string]any{"v": cur[k]}) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s: %s in the baseline, %s here", k, paramText(base, k), paramText(cur, k)))
	}
	return strings.Join(out, "; ")
}

func paramText(m map[string]any, k string) string {
	v, ok := m[k]
	if !ok {
		return "unset"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// ParamValues are resolved parameters as the manifest records them.
func ParamValues(p *orchestrator.Params) map[string]any {
	out := map[string]any{}
	for _, s := range p.Specs() {
		v, _ := p.Value(s.Name)
		if d, ok := v.(time.Duration); ok {
			v = d.String()
		}
		out[s.Name] = v
	}
	return out
}

func manifestValues(ps []results.Param) map[string]any {
	out := map[string]any{}
	for _, p := range ps {
		out[p.Name] = p.Value
	}
	return out
}

// canonical is a JSON form that is equal for equal values whether they
// came from Go (int64, []string) or from a manifest (float64, []any).
func canonical(m map[string]any) string {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Sprint(m)
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	b, _ = json.Marshal(v)
	return string(b)
}
