// Package suite is the nightly regression suite: a YAML file listing recipe
// runs (recipe, parameters, seed) and, per run, expectations on the
// numbers of its summary.json — absolute bounds, or tolerances relative to a
// baseline bundle with the direction that counts as a regression. It parses
// suite files (every error names file:line), runs the entries through a
// caller-supplied function, evaluates the expectations, and writes JUnit XML.
//
// A suite file:
//
//	name: nightly
//	entries:
//	  - id: sweep-quick
//	    recipe: attenuation-sweep
//	    seed: 1
//	    set: {links: [l10g, l25g-rs], step_db: 1}
//	    expect:
//	      - metric: links.l10g.loss_cliff_db.1e-06   # path as results.FlattenSummary names it
//	        min: 8
//	        max: 11
//	      - metric: links.*.loss_cliff_db.1e-06      # '*' matches one path segment
//	        abs_tol: 0.5                             # against the baseline bundle
//	        worse: lower                             # a lower value is a regression
//
// An entry's bench: names the built-in simulated bench (simlab/benches) it
// runs on when the suite runs without an inventory; the default bench
// otherwise.
package suite

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"testbed/internal/readfile"
	"testbed/orchestrator"
	"testbed/results"
)

// Pos is a place in a suite file.
type Pos struct {
	File   string
	Line   int
	Column int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// Suite is a parsed suite file.
type Suite struct {
	Path    string
	Name    string
	Entries []*Entry
}

// Entry is one run of a recipe and what its summary must show.
type Entry struct {
	// ID names the entry in reports, JUnit and baselines: the id given, else
	// the recipe's name.
	ID     string
	Recipe orchestrator.Recipe
	Params *orchestrator.Params
	// Set is the set: mapping as written, in file order, for display.
	Set    []SetParam
	Seed   *uint64
	Expect []*Expectation
	// Bench is the built-in simulated bench the entry runs on when the
	// suite runs without an inventory ("": the default bench).
	Bench string
	Pos   Pos
}

// SetParam is one parameter an entry sets.
type SetParam struct {
	Name  string
	Value any
}

// Expectation is a check on the summary metrics a pattern names.
type Expectation struct {
	// Metric is a dotted metric path; a segment may hold '*' (and the
	// other path.Match wildcards) and matches one segment.
	Metric string
	Min    *float64
	Max    *float64
	RelTol *float64
	AbsTol *float64
	// Worse is the direction that counts as a regression against the
	// baseline: results.LowerIsWorse, HigherIsWorse or Either.
	Worse results.Direction
	Pos   Pos
}

// Relative reports whether the expectation compares with a baseline.
func (x *Expectation) Relative() bool { return x.RelTol != nil || x.AbsTol != nil }

// Tolerance is the expectation's tolerance as results.CompareMetric takes it.
func (x *Expectation) Tolerance() results.Tolerance {
	var t results.Tolerance
	if x.RelTol != nil {
		t.Rel = *x.RelTol
	}
	if x.AbsTol != nil {
		t.Abs = *x.AbsTol
	}
	return t
}

// Condition says in words what the expectation requires.
func (x *Expectation) Condition() string {
	var parts []string
	switch {
	case x.Min != nil && x.Max != nil:
		parts = append(parts, fmt.Sprintf("in [%s, %s]", fnum(*x.Min), fnum(*x.Max)))
	case x.Min != nil:
		parts = append(parts, ">= "+fnum(*x.Min))
	case x.Max != nil:
		parts = append(parts, "<= "+fnum(*x.Max))
	}
	if x.Relative() {
		var tol []string
		if x.RelTol != nil {
			tol = append(tol, "rel_tol "+fnum(*x.RelTol))
		}
		if x.AbsTol != nil {
			tol = append(tol, "abs_tol "+fnum(*x.AbsTol))
		}
		parts = append(parts, fmt.Sprintf("within %s of baseline (%s)", strings.Join(tol, " or "), worseText(x.Worse)))
	}
	return strings.Join(parts, " and ")
}

func worseText(d results.Direction) string {
	switch d {
	case results.LowerIsWorse:
		return "lower is worse"
	case results.HigherIsWorse:
		return "higher is worse"
	}
	return "any change is worse"
}

func fnum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Match reports whether a metric path matches the expectation's pattern:
// as many segments, each matching its pattern segment.
func (x *Expectation) Match(metric string) bool { return matchPath(x.Metric, metric) }

func matchPath(pattern, metric string) bool {
	ps, ms := strings.Split(pattern, "."), strings.Split(metric, ".")
	if len(ps) != len(ms) {
		return false
	}
	for i := range ps {
		if ok, err := path.Match(ps[i], ms[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

var idRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Load reads and parses a suite file.
func Load(file string, reg *orchestrator.Registry) (*Suite, error) {
	data, err := readfile.Read(file, 16<<20) // a suite of hundreds of entries is kilobytes
	if err != nil {
		return nil, &orchestrator.InputError{Msg: fmt.Sprintf("suite: %v", err)}
	}
	return Parse(file, data, reg)
}

// Parse parses a suite. Every problem found is reported at once, each
// naming file:line; the error is an *orchestrator.InputError.
func Parse(file string, data []byte, reg *orchestrator.Registry) (*Suite, error) {
	p := &parser{file: file}
	s := &Suite{Path: file}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &orchestrator.InputError{Msg: fmt.Sprintf("%s: %s", file, strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &orchestrator.InputError{Msg: fmt.Sprintf("%s: empty suite: expected entries", file)}
	}
	root := doc.Content[0]
	var entries *yaml.Node
	switch root.Kind {
	case yaml.SequenceNode:
		entries = root
	case yaml.MappingNode:
		f := p.fields(root, "", []string{"name", "entries"})
		if kv, ok := f["name"]; ok {
			s.Name = p.scalar(kv[1], "name")
		}
		kv, ok := f["entries"]
		if !ok {
			p.add(root, "suite has no entries: list them under entries:")
		} else if kv[1].Kind != yaml.SequenceNode {
			p.add(kv[1], "entries: expected a list, got %s", kindName(kv[1]))
		} else {
			entries = kv[1]
		}
	default:
		p.add(root, "expected a mapping with name and entries, or a list of entries; got %s", kindName(root))
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(path.Base(strings.ReplaceAll(file, "\\", "/")), path.Ext(file))
	}
	ids := map[string]Pos{}
	if entries != nil {
		if len(entries.Content) == 0 {
			p.add(entries, "suite has no entries")
		}
		for i, n := range entries.Content {
			e, ok := p.entry(n, i, reg)
			if e == nil {
				continue
			}
			if e.ID != "" {
				if prev, dup := ids[e.ID]; dup {
					p.add(n, "entries[%d]: id %q is also the id of the entry at %s: give each entry its own id:", i, e.ID, prev)
					ok = false
				} else {
					ids[e.ID] = e.Pos
				}
			}
			if ok {
				s.Entries = append(s.Entries, e)
			}
		}
	}
	if len(p.problems) > 0 {
		return nil, &orchestrator.InputError{Msg: "suite " + file + ":\n  " + strings.Join(p.problems, "\n  ")}
	}
	return s, nil
}

type parser struct {
	file     string
	problems []string
}

func (p *parser) pos(n *yaml.Node) Pos { return Pos{File: p.file, Line: n.Line, Column: n.Column} }

func (p *parser) add(n *yaml.Node, format string, args ...any) {
	p.problems = append(p.problems, fmt.Sprintf("%s: %s", p.pos(n), fmt.Sprintf(format, args...)))
}

// fields returns a mapping's key -> (key, value) nodes, reporting unknown
// and repeated keys.
func (p *parser) fields(n *yaml.Node, where string, allowed []string) map[string][2]*yaml.Node {
	out := map[string][2]*yaml.Node{}
	if n.Kind != yaml.MappingNode {
		p.add(n, "%sexpected a mapping, got %s", prefix(where), kindName(n))
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, dup := out[k.Value]; dup {
			p.add(k, "%s%s given twice", prefix(where), k.Value)
			continue
		}
		if allowed != nil && !slices.Contains(allowed, k.Value) {
			p.add(k, "%sunknown key %q (expected one of: %s)", prefix(where), k.Value, strings.Join(allowed, ", "))
			continue
		}
		out[k.Value] = [2]*yaml.Node{k, v}
	}
	return out
}

func prefix(where string) string {
	if where == "" {
		return ""
	}
	return where + ": "
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

func (p *parser) scalar(n *yaml.Node, where string) string {
	if n.Kind != yaml.ScalarNode {
		p.add(n, "%s: expected a string, got %s", where, kindName(n))
		return ""
	}
	return n.Value
}

func (p *parser) number(n *yaml.Node, where string) *float64 {
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		if f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return &f
		}
	}
	p.add(n, "%s: expected a finite number, got %s", where, kindName(n))
	return nil
}

// entry parses one entry. Every problem in it is reported, whether or not
// its recipe is known. It returns nil for a node that is no mapping, and
// otherwise the entry with its id (for the duplicate check) and whether it
// is free of problems.
func (p *parser) entry(n *yaml.Node, i int, reg *orchestrator.Registry) (*Entry, bool) {
	where := fmt.Sprintf("entries[%d]", i)
	before := len(p.problems)
	f := p.fields(n, where, []string{"id", "recipe", "set", "seed", "expect", "bench"})
	if n.Kind != yaml.MappingNode {
		return nil, false
	}
	e := &Entry{Pos: p.pos(n)}
	r := p.entryRecipe(n, f, e, where, reg)
	p.entryID(f, e, where)
	if e.ID != "" {
		where = fmt.Sprintf("entry %s", e.ID)
	}
	p.entrySeed(f, e, where)
	if kv, ok := f["bench"]; ok {
		b := p.scalar(kv[1], where+".bench")
		if b != "" && !idRe.MatchString(b) {
			p.add(kv[1], "%s.bench %q: expected a built-in bench's name (testbed lab show-bench)", where, b)
		}
		e.Bench = b
	}
	values := map[string]any{}
	if kv, ok := f["set"]; ok {
		p.entrySet(kv[1], r, e, values, where)
	}
	if kv, ok := f["expect"]; ok {
		p.entryExpect(kv[1], e, where)
	}
	if len(p.problems) > before || r == nil {
		return e, false
	}
	params, err := orchestrator.ResolveParams(r.Meta().Params, e.Pos.String(), values, nil)
	if err != nil {
		p.add(n, "%s: %v", where, err)
		return e, false
	}
	e.Params = params
	return e, true
}

// entryRecipe reads an entry's recipe: nil when it has none or an unknown
// one (reported). The recipe's name is the entry's id unless it has one,
// known recipe or not, so that a repeated id is always found.
func (p *parser) entryRecipe(n *yaml.Node, f map[string][2]*yaml.Node, e *Entry, where string, reg *orchestrator.Registry) orchestrator.Recipe {
	kv, ok := f["recipe"]
	if !ok {
		p.add(n, "%s: no recipe: (known: %s)", where, strings.Join(reg.Names(), ", "))
		return nil
	}
	name := p.scalar(kv[1], where+".recipe")
	if name == "" {
		if kv[1].Kind == yaml.ScalarNode {
			p.add(kv[1], "%s: recipe is empty: expected a recipe's name (known: %s)", where, strings.Join(reg.Names(), ", "))
		}
		return nil
	}
	e.ID = name
	r, err := reg.Get(name)
	if err != nil {
		p.add(kv[1], "%s: %v", where, err)
		return nil
	}
	e.Recipe, e.ID = r, r.Meta().Name
	return r
}

// entryID reads an entry's own id.
func (p *parser) entryID(f map[string][2]*yaml.Node, e *Entry, where string) {
	kv, ok := f["id"]
	if !ok {
		return
	}
	id := p.scalar(kv[1], where+".id")
	if id != "" && !idRe.MatchString(id) {
		p.add(kv[1], "%s.id %q: expected letters, digits, '.', '_' and '-', starting with a letter or digit", where, id)
	}
	if id != "" {
		e.ID = id
	}
}

// entrySeed reads an entry's seed.
func (p *parser) entrySeed(f map[string][2]*yaml.Node, e *Entry, where string) {
	kv, ok := f["seed"]
	if !ok {
		return
	}
	if kv[1].Kind != yaml.ScalarNode || kv[1].Tag != "!!int" {
		p.add(kv[1], "%s: seed: expected a whole number >= 0, got %s", where, kindName(kv[1]))
	} else if s, err := strconv.ParseUint(strings.ReplaceAll(kv[1].Value, "_", ""), 0, 64); err != nil {
		p.add(kv[1], "%s: seed %s: expected a whole number >= 0 that fits in 64 bits", where, kv[1].Value)
	} else {
		e.Seed = &s
	}
}

// entrySet reads an entry's parameters into values and e.Set, each
// checked against the recipe r (when known) alone, so that a bad one is
// reported at its own line and as it was written.
func (p *parser) entrySet(n *yaml.Node, r orchestrator.Recipe, e *Entry, values map[string]any, where string) {
	sf := p.fields(n, where+": set", nil)
	for j := 0; n.Kind == yaml.MappingNode && j+1 < len(n.Content); j += 2 {
		k, vn := n.Content[j], n.Content[j+1]
		if x, ok := sf[k.Value]; !ok || x[0] != k {
			continue // repeated key, reported
		}
		var v any
		if err := vn.Decode(&v); err != nil {
			p.add(vn, "%s: set %s: %s", where, k.Value, strings.TrimPrefix(err.Error(), "yaml: "))
			continue
		}
		if r == nil {
			continue // no recipe to check the parameter against (reported)
		}
		pf := &orchestrator.ParamsFile{Values: map[string]any{k.Value: v}, Text: map[string]string{}}
		if vn.Kind == yaml.ScalarNode {
			pf.Text[k.Value] = vn.Value
		}
		if _, err := orchestrator.ResolveParamsFile(r.Meta().Params, pf, nil); err != nil {
			msg := err.Error()
			if ie, ok := err.(*orchestrator.InputError); ok {
				msg = strings.TrimSpace(strings.TrimPrefix(ie.Msg, "bad parameters:"))
				msg = strings.TrimPrefix(msg, ": ")
			}
			p.add(k, "%s (%s): set: %s", where, r.Meta().Name, msg)
			continue
		}
		values[k.Value] = v
		e.Set = append(e.Set, SetParam{Name: k.Value, Value: v})
	}
}

// entryExpect reads an entry's expectations.
func (p *parser) entryExpect(n *yaml.Node, e *Entry, where string) {
	if n.Kind != yaml.SequenceNode {
		p.add(n, "%s: expect: expected a list of expectations, got %s", where, kindName(n))
		return
	}
	for j, xn := range n.Content {
		if x := p.expectation(xn, fmt.Sprintf("%s: expect[%d]", where, j)); x != nil {
			e.Expect = append(e.Expect, x)
		}
	}
}

func (p *parser) expectation(n *yaml.Node, where string) *Expectation {
	before := len(p.problems)
	f := p.fields(n, where, []string{"metric", "min", "max", "rel_tol", "abs_tol", "worse"})
	if n.Kind != yaml.MappingNode {
		return nil
	}
	x := &Expectation{Pos: p.pos(n), Worse: results.Either}
	kv, ok := f["metric"]
	if !ok {
		p.add(n, "%s: no metric: (a summary path such as links.l10g.loss_cliff_db.1e-06; '*' matches one segment)", where)
		return nil
	}
	x.Metric = p.scalar(kv[1], where+".metric")
	for _, seg := range strings.Split(x.Metric, ".") {
		if seg == "" {
			p.add(kv[1], "%s: metric %q has an empty segment", where, x.Metric)
			break
		}
		if _, err := path.Match(seg, ""); err != nil {
			p.add(kv[1], "%s: metric %q: segment %q is not a valid pattern", where, x.Metric, seg)
			break
		}
	}
	for _, k := range []struct {
		key string
		dst **float64
	}{{"min", &x.Min}, {"max", &x.Max}, {"rel_tol", &x.RelTol}, {"abs_tol", &x.AbsTol}} {
		if kv, ok := f[k.key]; ok {
			*k.dst = p.number(kv[1], where+"."+k.key)
		}
	}
	for _, t := range []struct {
		key string
		v   *float64
	}{{"rel_tol", x.RelTol}, {"abs_tol", x.AbsTol}} {
		if t.v != nil && *t.v < 0 {
			p.add(f[t.key][1], "%s: %s %v: expected a number >= 0", where, t.key, *t.v)
		}
	}
	if x.Min != nil && x.Max != nil && *x.Min > *x.Max {
		p.add(n, "%s: min %v is above max %v", where, *x.Min, *x.Max)
	}
	if kv, ok := f["worse"]; ok {
		w := p.scalar(kv[1], where+".worse")
		switch strings.ToLower(w) {
		case "lower", "lower_is_worse", "lower-is-worse":
			x.Worse = results.LowerIsWorse
		case "higher", "higher_is_worse", "higher-is-worse":
			x.Worse = results.HigherIsWorse
		case "either":
			x.Worse = results.Either
		default:
			p.add(kv[1], "%s: worse %q: expected lower, higher or either", where, w)
		}
		if !x.Relative() {
			p.add(kv[1], "%s: worse says which change from the baseline is a regression; it needs rel_tol or abs_tol (min and max already say which side is bad)", where)
		}
	}
	if x.Min == nil && x.Max == nil && !x.Relative() && len(p.problems) == before {
		p.add(n, "%s: nothing to check: give min and/or max, or rel_tol/abs_tol against the baseline", where)
	}
	if len(p.problems) > before {
		return nil
	}
	return x
}
