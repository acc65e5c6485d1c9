package stardust

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The P4 sources are compiled by the lab's SDE, not here. These tests read
// them far enough to hold them to this package's contract: every name the
// control plane uses is declared, with that name, as that kind of object,
// in the control and program the contract says; and the header layout is
// the one the contract describes. A rename on either side fails them.

// ---- reading the sources ----

// p4Source is a program's text with its quoted includes spliced in,
// comments and preprocessor lines removed, and its #defines.
type p4Source struct {
	text    string
	defines map[string]string
	origin  []string // "file:line" of each line of text
}

// at is where a line of the text comes from.
func (s p4Source) at(line int) string {
	if line >= 1 && line <= len(s.origin) {
		return s.origin[line-1]
	}
	return fmt.Sprintf("line %d", line)
}

var lineRe = regexp.MustCompile(`line (\d+)`)

// located rewrites "line N" in err as the file and line it stands for.
func (s p4Source) located(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(lineRe.ReplaceAllStringFunc(err.Error(), func(m string) string {
		n, _ := strconv.Atoi(strings.TrimPrefix(m, "line "))
		return s.at(n)
	}))
}

// loadP4 reads path and the files it includes with #include "...", each
// once (the headers have include guards). <...> includes are the SDE's.
func loadP4(path string) (p4Source, error) {
	src := p4Source{defines: map[string]string{}}
	var b strings.Builder
	if err := splice(path, &b, src.defines, &src.origin, map[string]bool{}); err != nil {
		return src, err
	}
	src.text = b.String()
	return src, nil
}

var (
	includeRe = regexp.MustCompile(`^#\s*include\s+"([^"]+)"`)
	defineRe  = regexp.MustCompile(`^#\s*define\s+([A-Za-z_]\w*)(?:\s+(.*))?$`)
)

func splice(path string, b *strings.Builder, defines map[string]string, origin *[]string, seen map[string]bool) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if seen[abs] {
		return nil
	}
	seen[abs] = true
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text, err := stripComments(string(raw))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for n, line := range strings.SplitAfter(text, "\n") {
		here := fmt.Sprintf("%s:%d", path, n+1)
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "#") {
			b.WriteString(line)
			if strings.HasSuffix(line, "\n") {
				*origin = append(*origin, here)
			}
			continue
		}
		if strings.HasSuffix(t, `\`) {
			return fmt.Errorf("%s: multi-line macro %q: not supported by this reader", path, t)
		}
		if m := includeRe.FindStringSubmatch(t); m != nil {
			if err := splice(filepath.Join(filepath.Dir(path), m[1]), b, defines, origin, seen); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		} else if m := defineRe.FindStringSubmatch(t); m != nil {
			if _, ok := defines[m[1]]; !ok {
				defines[m[1]] = strings.TrimSpace(m[2])
			}
		}
		b.WriteString("\n")
		*origin = append(*origin, here)
	}
	return nil
}

// stripComments blanks // and /* */ comments, keeping line breaks and
// string literals.
func stripComments(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case s[i] == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return "", errors.New("unterminated string")
			}
			b.WriteString(s[i : j+1])
			i = j + 1
		case strings.HasPrefix(s[i:], "//"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return b.String(), nil
			}
			i += j
		case strings.HasPrefix(s[i:], "/*"):
			j := strings.Index(s[i+2:], "*/")
			if j < 0 {
				return "", errors.New("unterminated comment")
			}
			b.WriteString(strings.Repeat("\n", strings.Count(s[i:i+2+j+2], "\n")))
			b.WriteByte(' ')
			i += 2 + j + 2
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), nil
}

type token struct {
	text string
	line int
}

// tokenize splits P4 text into identifiers, numbers (with their width
// prefix, 8w0x11), strings and single punctuation characters; '>>' stays
// two tokens so that bit<bit<16>> type arguments nest.
func tokenize(s string) []token {
	var toks []token
	line := 1
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case isWordByte(c):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			toks = append(toks, token{s[i:j], line})
			i = j
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			toks = append(toks, token{s[i:min(j+1, len(s))], line})
			i = j + 1
		default:
			toks = append(toks, token{s[i : i+1], line})
			i++
		}
	}
	return toks
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isIdent(t string) bool {
	return t != "" && isWordByte(t[0]) && (t[0] < '0' || t[0] > '9')
}

// ---- what a program declares ----

type p4Action struct {
	params []string
	line   int
}

type p4Table struct {
	keys    []string
	actions []string
	line    int
}

// p4Instance is an extern instantiation: Register<bit<16>, lg_idx_t>(128, 0) reg_seq_no;
type p4Instance struct {
	typ      string
	typeArgs []token
	args     []token
	line     int
}

type p4Control struct {
	actions   map[string][]p4Action
	tables    map[string][]p4Table
	instances map[string][]p4Instance
	apply     []token
	body      []token
	line      int
	params    map[string]string // parameter name -> type
}

type p4Field struct{ typ, name string }

type p4Program struct {
	src      p4Source
	defines  map[string]string
	typedefs map[string]string
	consts   map[string]string
	headers  map[string][]p4Field
	structs  map[string][]p4Field
	controls map[string]*p4Control
	parsers  map[string]*p4Control
	// top-level extern instances: the Pipeline and the Switch
	instances map[string]p4Instance
}

// parseP4 reads a program's top-level declarations; errors say where.
func parseP4(src p4Source) (*p4Program, error) {
	p, err := parseTopLevel(src)
	return p, src.located(err)
}

func parseTopLevel(src p4Source) (*p4Program, error) {
	p := &p4Program{
		src: src, defines: src.defines, typedefs: map[string]string{}, consts: map[string]string{},
		headers: map[string][]p4Field{}, structs: map[string][]p4Field{}, controls: map[string]*p4Control{},
		parsers: map[string]*p4Control{}, instances: map[string]p4Instance{},
	}
	toks := tokenize(src.text)
	for i := 0; i < len(toks); {
		t := toks[i].text
		var err error
		switch {
		case t == "@":
			i, err = skipAnnotation(toks, i)
		case t == "typedef":
			var end int
			if end, err = statementEnd(toks, i); err == nil {
				if end-i < 3 {
					return nil, fmt.Errorf("line %d: short typedef", toks[i].line)
				}
				p.typedefs[toks[end-1].text] = join(toks[i+1 : end-1])
				i = end + 1
			}
		case t == "const":
			var end int
			if end, err = statementEnd(toks, i); err == nil {
				eq := indexOf(toks[i:end], "=")
				if eq < 2 {
					return nil, fmt.Errorf("line %d: const without a value", toks[i].line)
				}
				p.consts[toks[i+eq-1].text] = join(toks[i+eq+1 : end])
				i = end + 1
			}
		case t == "header" || t == "struct":
			i, err = p.parseFields(toks, i)
		case t == "control" || t == "parser":
			i, err = p.parseBlock(toks, i)
		case isIdent(t) && i+1 < len(toks) && (toks[i+1].text == "<" || toks[i+1].text == "("):
			var name string
			var inst p4Instance
			var next int
			if name, inst, next, err = parseInstance(toks, i); err == nil {
				if name != "" {
					p.instances[name] = inst
					i = next
				} else {
					i, err = skipStatement(toks, i)
				}
			}
		default:
			i, err = skipStatement(toks, i)
		}
		if err != nil {
			return nil, err
		}
	}
	return p, nil
}

// parseFields reads `header NAME { TYPE name; ... }` (or struct).
func (p *p4Program) parseFields(toks []token, i int) (int, error) {
	if i+2 >= len(toks) || toks[i+2].text != "{" {
		return skipStatement(toks, i)
	}
	end, err := matching(toks, i+2)
	if err != nil {
		return 0, err
	}
	var fields []p4Field
	for _, f := range splitTop(toks[i+3:end], ";") {
		f = dropAnnotations(f)
		if len(f) < 2 {
			continue
		}
		fields = append(fields, p4Field{typ: join(f[:len(f)-1]), name: f[len(f)-1].text})
	}
	if toks[i].text == "header" {
		p.headers[toks[i+1].text] = fields
	} else {
		p.structs[toks[i+1].text] = fields
	}
	return end + 1, nil
}

// parseBlock reads `control NAME(...) { body }`; parsers are only named.
func (p *p4Program) parseBlock(toks []token, i int) (int, error) {
	if i+2 >= len(toks) || toks[i+2].text != "(" {
		return 0, fmt.Errorf("line %d: %s %s: expected a parameter list", toks[i].line, toks[i].text, toks[min(i+1, len(toks)-1)].text)
	}
	name := toks[i+1].text
	close, err := matching(toks, i+2)
	if err != nil {
		return 0, err
	}
	if close+1 >= len(toks) || toks[close+1].text != "{" {
		return 0, fmt.Errorf("line %d: %s %s: expected a body", toks[i].line, toks[i].text, name)
	}
	end, err := matching(toks, close+1)
	if err != nil {
		return 0, err
	}
	params := map[string]string{}
	for _, prm := range splitTop(toks[i+3:close], ",") {
		prm = dropAnnotations(prm)
		if len(prm) >= 2 {
			params[prm[len(prm)-1].text] = prm[len(prm)-2].text
		}
	}
	if toks[i].text == "parser" {
		p.parsers[name] = &p4Control{body: toks[close+2 : end], params: params, line: toks[i].line}
		return end + 1, nil
	}
	if _, dup := p.controls[name]; dup {
		return 0, fmt.Errorf("line %d: control %s declared twice", toks[i].line, name)
	}
	c, err := parseControlBody(toks[close+2 : end])
	if err != nil {
		return 0, fmt.Errorf("control %s: %w", name, err)
	}
	c.body, c.params, c.line = toks[close+2:end], params, toks[i].line
	p.controls[name] = c
	return end + 1, nil
}

// parseControlBody reads the declarations at the top level of a control's
// body: actions, tables, extern instances and the apply block. Statements
// inside actions and apply blocks are not declarations.
func parseControlBody(toks []token) (*p4Control, error) {
	c := &p4Control{actions: map[string][]p4Action{}, tables: map[string][]p4Table{}, instances: map[string][]p4Instance{}}
	for i := 0; i < len(toks); {
		t := toks[i].text
		var err error
		switch {
		case t == "@":
			i, err = skipAnnotation(toks, i)
		case t == "action":
			if i+2 >= len(toks) || toks[i+2].text != "(" {
				return nil, fmt.Errorf("line %d: action without parameters", toks[i].line)
			}
			close, err := matching(toks, i+2)
			if err != nil {
				return nil, err
			}
			if close+1 >= len(toks) || toks[close+1].text != "{" {
				return nil, fmt.Errorf("line %d: action %s without a body", toks[i].line, toks[i+1].text)
			}
			end, err := matching(toks, close+1)
			if err != nil {
				return nil, err
			}
			var params []string
			for _, prm := range splitTop(toks[i+3:close], ",") {
				if prm = dropAnnotations(prm); len(prm) > 0 {
					params = append(params, prm[len(prm)-1].text)
				}
			}
			c.actions[toks[i+1].text] = append(c.actions[toks[i+1].text], p4Action{params: params, line: toks[i].line})
			i = end + 1
		case t == "table":
			if i+2 >= len(toks) || toks[i+2].text != "{" {
				return nil, fmt.Errorf("line %d: table without a body", toks[i].line)
			}
			end, err := matching(toks, i+2)
			if err != nil {
				return nil, err
			}
			tbl, err := parseTable(toks[i+3 : end])
			if err != nil {
				return nil, fmt.Errorf("table %s: %w", toks[i+1].text, err)
			}
			tbl.line = toks[i].line
			c.tables[toks[i+1].text] = append(c.tables[toks[i+1].text], tbl)
			i = end + 1
		case t == "apply" && i+1 < len(toks) && toks[i+1].text == "{":
			end, err := matching(toks, i+1)
			if err != nil {
				return nil, err
			}
			c.apply = toks[i+2 : end]
			i = end + 1
		case isIdent(t) && i+1 < len(toks) && (toks[i+1].text == "<" || toks[i+1].text == "("):
			name, inst, next, err := parseInstance(toks, i)
			if err != nil {
				return nil, err
			}
			if name == "" {
				if i, err = skipStatement(toks, i); err != nil {
					return nil, err
				}
				continue
			}
			c.instances[name] = append(c.instances[name], inst)
			i = next
		default:
			i, err = skipStatement(toks, i)
		}
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

// parseTable reads a table's key and actions properties.
func parseTable(toks []token) (p4Table, error) {
	var tbl p4Table
	for i := 0; i < len(toks); {
		prop := toks[i].text
		if (prop == "key" || prop == "actions") && i+2 < len(toks) && toks[i+1].text == "=" && toks[i+2].text == "{" {
			end, err := matching(toks, i+2)
			if err != nil {
				return tbl, err
			}
			for _, e := range splitTop(toks[i+3:end], ";") {
				if len(e) == 0 {
					continue
				}
				if prop == "actions" {
					if e = dropAnnotations(e); len(e) > 0 {
						tbl.actions = append(tbl.actions, e[0].text)
					}
					continue
				}
				k, err := keyName(e)
				if err != nil {
					return tbl, err
				}
				tbl.keys = append(tbl.keys, k)
			}
			i = end + 1
			if i < len(toks) && toks[i].text == ";" {
				i++
			}
			continue
		}
		var err error
		if i, err = skipStatement(toks, i); err != nil {
			return tbl, err
		}
	}
	return tbl, nil
}

// keyName is the name bfrt gives a key element `expr : kind [@name("n")]`:
// the @name if there is one, else the expression's last component with
// slices spelled out (eg_intr_md.egress_port[7:0] -> egress_port_7_0_).
func keyName(e []token) (string, error) {
	colon, depth := -1, 0
	for j, t := range e {
		switch t.text {
		case "[", "(":
			depth++
		case "]", ")":
			depth--
		case ":":
			if depth == 0 && colon < 0 {
				colon = j
			}
		}
	}
	if colon < 1 {
		return "", fmt.Errorf("line %d: key element without a match kind", e[0].line)
	}
	for j := colon + 1; j+4 < len(e); j++ {
		if e[j].text == "@" && e[j+1].text == "name" && e[j+2].text == "(" {
			return strings.Trim(e[j+3].text, `"`), nil
		}
	}
	expr := join(e[:colon])
	expr = expr[strings.LastIndexByte(expr, '.')+1:]
	return strings.NewReplacer("[", "_", ":", "_", "]", "_").Replace(expr), nil
}

// parseInstance reads `Type[<args>](ctor args) name;` or `... name = {...};`
// at toks[i]. It returns an empty name if toks[i] does not start one.
func parseInstance(toks []token, i int) (string, p4Instance, int, error) {
	inst := p4Instance{typ: toks[i].text, line: toks[i].line}
	j := i + 1
	if toks[j].text == "<" {
		end, err := matchingAngle(toks, j)
		if err != nil {
			return "", inst, 0, err
		}
		inst.typeArgs = toks[j+1 : end]
		j = end + 1
	}
	if j >= len(toks) || toks[j].text != "(" {
		return "", inst, 0, nil
	}
	close, err := matching(toks, j)
	if err != nil {
		return "", inst, 0, err
	}
	inst.args = toks[j+1 : close]
	if close+2 >= len(toks) || !isIdent(toks[close+1].text) {
		return "", inst, 0, nil
	}
	name := toks[close+1].text
	switch toks[close+2].text {
	case ";":
		return name, inst, close + 3, nil
	case "=":
		if close+3 >= len(toks) || toks[close+3].text != "{" {
			return "", inst, 0, fmt.Errorf("line %d: %s %s: expected { after =", inst.line, inst.typ, name)
		}
		end, err := matching(toks, close+3)
		if err != nil {
			return "", inst, 0, err
		}
		if end+1 >= len(toks) || toks[end+1].text != ";" {
			return "", inst, 0, fmt.Errorf("line %d: %s %s: missing ; after its body", inst.line, inst.typ, name)
		}
		return name, inst, end + 2, nil
	}
	return "", inst, 0, nil
}

// ---- working on tokens ----

var closer = map[string]string{"(": ")", "{": "}", "[": "]"}

// matching returns the index of the bracket closing toks[i].
func matching(toks []token, i int) (int, error) {
	var stack []string
	for j := i; j < len(toks); j++ {
		t := toks[j].text
		if c, ok := closer[t]; ok {
			stack = append(stack, c)
			continue
		}
		if t == ")" || t == "}" || t == "]" {
			if len(stack) == 0 || stack[len(stack)-1] != t {
				return 0, fmt.Errorf("line %d: unbalanced %q (opened line %d)", toks[j].line, t, toks[i].line)
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return j, nil
			}
		}
	}
	return 0, fmt.Errorf("line %d: %q never closed", toks[i].line, toks[i].text)
}

func matchingAngle(toks []token, i int) (int, error) {
	depth := 0
	for j := i; j < len(toks); j++ {
		switch toks[j].text {
		case "<":
			depth++
		case ">":
			if depth--; depth == 0 {
				return j, nil
			}
		case ";", "{", "}":
			return 0, fmt.Errorf("line %d: type arguments never closed", toks[i].line)
		}
	}
	return 0, fmt.Errorf("line %d: type arguments never closed", toks[i].line)
}

// statementEnd returns the index of the ';' ending the statement at i.
func statementEnd(toks []token, i int) (int, error) {
	for j := i; j < len(toks); j++ {
		switch toks[j].text {
		case ";":
			return j, nil
		case "(", "{", "[":
			end, err := matching(toks, j)
			if err != nil {
				return 0, err
			}
			j = end
		case ")", "}", "]":
			return 0, fmt.Errorf("line %d: unbalanced %q", toks[j].line, toks[j].text)
		}
	}
	return 0, fmt.Errorf("line %d: statement never ends", toks[i].line)
}

// skipStatement passes a statement: up to its ';', or a block that is not
// followed by one (if/else bodies, parser states).
func skipStatement(toks []token, i int) (int, error) {
	for j := i; j < len(toks); j++ {
		switch toks[j].text {
		case ";":
			return j + 1, nil
		case "{":
			end, err := matching(toks, j)
			if err != nil {
				return 0, err
			}
			if end+1 < len(toks) && toks[end+1].text == ";" {
				return end + 2, nil
			}
			return end + 1, nil
		case "(", "[":
			end, err := matching(toks, j)
			if err != nil {
				return 0, err
			}
			j = end
		case ")", "}", "]":
			return 0, fmt.Errorf("line %d: unbalanced %q", toks[j].line, toks[j].text)
		}
	}
	return len(toks), nil
}

func skipAnnotation(toks []token, i int) (int, error) {
	j := i + 2 // '@' name
	if j < len(toks) && toks[j].text == "(" {
		end, err := matching(toks, j)
		if err != nil {
			return 0, err
		}
		return end + 1, nil
	}
	return j, nil
}

func dropAnnotations(toks []token) []token {
	var out []token
	for i := 0; i < len(toks); {
		if toks[i].text == "@" {
			next, err := skipAnnotation(toks, i)
			if err != nil {
				return out
			}
			i = next
			continue
		}
		out = append(out, toks[i])
		i++
	}
	return out
}

// splitTop splits at sep outside brackets.
func splitTop(toks []token, sep string) [][]token {
	var parts [][]token
	depth, start := 0, 0
	for j, t := range toks {
		switch t.text {
		case "(", "{", "[", "<":
			depth++
		case ")", "}", "]", ">":
			depth--
		}
		if t.text == sep && depth == 0 {
			parts = append(parts, toks[start:j])
			start = j + 1
		}
	}
	if start < len(toks) {
		parts = append(parts, toks[start:])
	}
	return parts
}

func join(toks []token) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t.text)
	}
	return b.String()
}

func indexOf(toks []token, s string) int {
	for j, t := range toks {
		if t.text == s {
			return j
		}
	}
	return -1
}

// ---- values and widths ----

// tnaWidths are the Tofino 1 widths of the TNA typedefs the headers use
// (tna.p4 is the SDE's, not in this repository).
var tnaWidths = map[string]int{"PortId_t": 9, "MirrorId_t": 10, "QueueId_t": 5, "MulticastGroupId_t": 16}

var bitRe = regexp.MustCompile(`^bit<(\d+)>$`)

func (p *p4Program) width(typ string) (int, error) {
	for range 16 {
		if m := bitRe.FindStringSubmatch(typ); m != nil {
			return strconv.Atoi(m[1])
		}
		if w, ok := tnaWidths[typ]; ok {
			return w, nil
		}
		next, ok := p.typedefs[typ]
		if !ok {
			return 0, fmt.Errorf("type %q: not a bit<N> type", typ)
		}
		typ = next
	}
	return 0, fmt.Errorf("type %q: typedef loop", typ)
}

var widthPrefixRe = regexp.MustCompile(`^\d+[ws]`)

// value is the integer a const or #define name stands for.
func (p *p4Program) value(name string) (int64, error) {
	expr := name
	for range 16 {
		if v, ok := p.consts[expr]; ok {
			expr = v
			continue
		}
		if v, ok := p.defines[expr]; ok {
			expr = v
			continue
		}
		if strings.HasPrefix(expr, "(") { // (type)value
			if k := strings.IndexByte(expr, ')'); k > 0 {
				expr = expr[k+1:]
				continue
			}
		}
		n, err := strconv.ParseInt(widthPrefixRe.ReplaceAllString(expr, ""), 0, 64)
		if err != nil {
			return 0, fmt.Errorf("%s = %q: not an integer", name, expr)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%s: definition loop", name)
}

// ---- the checks ----

// checkDeclarations holds the programs to the list of declarations.
func checkDeclarations(progs map[string]*p4Program, decls []Declaration) []error {
	var errs []error
	fail := func(d Declaration, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.p4: %s %s: %s", d.Program, d.Kind, d.QualifiedName(), fmt.Sprintf(format, args...)))
	}
	for _, d := range decls {
		p, ok := progs[d.Program]
		if !ok {
			fail(d, "no such program")
			continue
		}
		c, ok := p.controls[d.Control]
		if !ok {
			fail(d, "the program has no control %s", d.Control)
			continue
		}
		switch d.Kind {
		case KindTable:
			ts := c.tables[d.Name]
			if len(ts) != 1 {
				fail(d, "declared %d times in control %s, want once", len(ts), d.Control)
				continue
			}
			if !slices.Equal(ts[0].keys, d.Keys) {
				fail(d, "keys %q, the control plane uses %q", ts[0].keys, d.Keys)
			}
		case KindAction:
			as := c.actions[d.Name]
			if len(as) != 1 {
				fail(d, "declared %d times in control %s, want once", len(as), d.Control)
				continue
			}
			if !slices.Equal(as[0].params, d.Params) && (len(as[0].params) != 0 || len(d.Params) != 0) {
				fail(d, "parameters %q, the control plane uses %q", as[0].params, d.Params)
			}
			tc, tn := splitQualified("", d.Table)
			if tc != d.Control {
				fail(d, "its table %s is in another control", d.Table)
				continue
			}
			if ts := c.tables[tn]; len(ts) != 1 || !slices.Contains(ts[0].actions, d.Name) {
				fail(d, "not among the actions of table %s", d.Table)
			}
		case KindRegister:
			is := c.instances[d.Name]
			if len(is) != 1 || is[0].typ != "Register" {
				fail(d, "no single Register of that name in control %s (%d declarations)", d.Control, len(is))
			}
		default:
			fail(d, "unknown kind")
		}
	}
	return errs
}

// checkWiring checks what a compiler would reject first: the pipeline
// names declared blocks, tables list declared actions, register actions
// name declared registers, and the apply blocks apply declared tables and
// execute declared register actions.
func checkWiring(name string, p *p4Program) []error {
	var errs []error
	failf := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	pipe, ok := p.instances["pipe"]
	if !ok || pipe.typ != "Pipeline" {
		failf("no Pipeline named pipe")
	} else {
		blocks := splitTop(pipe.args, ",")
		if len(blocks) != 6 {
			failf("Pipeline has %d blocks, TNA wants 6", len(blocks))
		}
		for k, b := range blocks {
			if len(b) == 0 {
				failf("Pipeline block %d is empty", k)
				continue
			}
			isParser := k == 0 || k == 3
			if _, ok := p.parsers[b[0].text]; isParser && !ok {
				failf("Pipeline block %d: no parser %s", k, b[0].text)
			}
			if _, ok := p.controls[b[0].text]; !isParser && !ok {
				failf("Pipeline block %d: no control %s", k, b[0].text)
			}
		}
	}
	if sw, ok := p.instances["main"]; !ok || sw.typ != "Switch" || join(sw.args) != "pipe" {
		failf("no Switch(pipe) main")
	}
	for cname, c := range p.controls {
		for tname, ts := range c.tables {
			if len(ts) > 1 {
				failf("%s: table %s declared %d times", cname, tname, len(ts))
			}
			for _, t := range ts {
				for _, a := range t.actions {
					if _, ok := c.actions[a]; !ok && a != "NoAction" {
						failf("%s: table %s lists undeclared action %s", cname, tname, a)
					}
				}
			}
		}
		for aname, as := range c.actions {
			if len(as) > 1 {
				failf("%s: action %s declared %d times", cname, aname, len(as))
			}
		}
		for iname, is := range c.instances {
			if len(is) > 1 {
				failf("%s: %s declared %d times", cname, iname, len(is))
			}
			if is[0].typ == "RegisterAction" {
				if len(is[0].args) != 1 {
					failf("%s: RegisterAction %s: expected one register", cname, iname)
				} else if r := c.instances[is[0].args[0].text]; len(r) != 1 || r[0].typ != "Register" {
					failf("%s: RegisterAction %s uses %s, not a Register of this control", cname, iname, is[0].args[0].text)
				}
			}
		}
		// Method calls anywhere in the control: NAME.apply() and NAME.execute(.
		all := c.body
		for k := 0; k+2 < len(all); k++ {
			if all[k+1].text != "." {
				continue
			}
			obj, method := all[k].text, all[k+2].text
			switch method {
			case "apply":
				if _, ok := c.tables[obj]; !ok {
					failf("%s: %s.apply(): no table %s", cname, obj, obj)
				}
			case "execute":
				if is := c.instances[obj]; len(is) != 1 || is[0].typ != "RegisterAction" {
					failf("%s: %s.execute(): no RegisterAction %s", cname, obj, obj)
				}
			}
		}
	}
	blocks := map[string]*p4Control{}
	for n, c := range p.controls {
		blocks[n] = c
	}
	for n, c := range p.parsers {
		blocks[n] = c
	}
	for bname, b := range blocks {
		for _, err := range p.checkReferences(b) {
			failf("%s: %v", bname, err)
		}
	}
	return errs
}

// headerMethods are what a header instance offers.
var headerMethods = map[string]bool{"isValid": true, "setValid": true, "setInvalid": true}

// checkReferences resolves every member chain that starts at one of the
// block's parameters (hdr.lg.seq_no, ig_md.mirror.kind) against the
// declared structs and headers. Parameters of the architecture's types
// (ig_intr_md, ...) are the SDE's and are not checked.
func (p *p4Program) checkReferences(b *p4Control) []error {
	var errs []error
	toks := b.body
	for k := 0; k < len(toks); k++ {
		typ, ok := b.params[toks[k].text]
		if !ok || (k > 0 && toks[k-1].text == ".") {
			continue
		}
		path := toks[k].text
		for j := k + 1; j+1 < len(toks) && toks[j].text == "."; j += 2 {
			member := toks[j+1].text
			path += "." + member
			fields, isHeader := p.headers[typ]
			if !isHeader {
				if fields, ok = p.structs[typ]; !ok {
					break // a bit<N> field, or an architecture type
				}
			}
			if isHeader && headerMethods[member] {
				break
			}
			next := ""
			for _, f := range fields {
				if f.name == member {
					next = f.typ
				}
			}
			if next == "" {
				errs = append(errs, fmt.Errorf("%s: %s: %s has no member %s", p.src.at(toks[k].line), path, typ, member))
				break
			}
			typ = next
		}
	}
	return errs
}

// splitQualified separates "Control.name"; a name without a control gets control.
func splitQualified(control, name string) (string, string) {
	if c, n, ok := strings.Cut(name, "."); ok {
		return c, n
	}
	return control, name
}

// checkLayout holds the programs' cell header and constants to the
// contract.
func checkLayout(p *p4Program) []error {
	var errs []error
	failf := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	fields, ok := p.headers["sd_h"]
	if !ok {
		return []error{errors.New("no header sd_h")}
	}
	want := []struct {
		name string
		bits int
	}{{"kind", 8}, {"flags", 8}, {"dst_fa", 16}, {"dst_port", 16}, {"src_fa", 16}, {"seq", 32}, {"len", 16}}
	if len(fields) != len(want) {
		failf("sd_h has %d fields, the contract %d", len(fields), len(want))
	}
	total := 0
	for k, f := range fields {
		w, err := p.width(f.typ)
		if err != nil {
			failf("sd_h.%s: %v", f.name, err)
		}
		total += w
		if k < len(want) && (f.name != want[k].name || w != want[k].bits) {
			failf("sd_h field %d is %s:%d, the contract says %s:%d", k, f.name, w, want[k].name, want[k].bits)
		}
	}
	if total != CellHeaderBytes*8 {
		failf("sd_h is %d bits, the contract says CellHeaderBytes = %d", total, CellHeaderBytes)
	}
	for name, want := range map[string]int64{
		"SD_ETHERTYPE":   EtherType,
		"SD_KIND_DATA":   KindData,
		"SD_KIND_CREDIT": KindCredit,
		"SD_KIND_REACH":  KindReach,
		"SD_FLAG_FCI":    FlagFCI,
		"SD_FLAG_LAST":   FlagLast,
		"SD_MAX_FAS":     MaxFAs,
		"SD_MAX_LINKS":   MaxLinks,
		"SD_MAX_PORTS":   PortCount,
		"SD_AGE_MAX":     AgeMax,
	} {
		if v, err := p.value(name); err != nil || v != want {
			failf("%s = %d (%v), the contract says %d", name, v, err, want)
		}
	}
	if _, isFA := p.controls[ControlIngress].tables["voq_map"]; isFA {
		if v, err := p.value("SD_MAX_VOQS"); err != nil || v != MaxVOQs {
			failf("SD_MAX_VOQS = %d (%v), the contract says %d", v, err, MaxVOQs)
		}
	}
	return errs
}

// ---- tests ----

func loadPrograms(t *testing.T) map[string]*p4Program {
	t.Helper()
	out := map[string]*p4Program{}
	for _, prog := range []string{ProgramFA, ProgramFE} {
		src, err := loadP4(MainFile(prog))
		if err != nil {
			t.Fatal(err)
		}
		p, err := parseP4(src)
		if err != nil {
			t.Fatalf("%s: %v", MainFile(prog), err)
		}
		out[prog] = p
	}
	return out
}

func reportAll(t *testing.T, errs []error) {
	t.Helper()
	for _, err := range errs {
		t.Error(err)
	}
}

func TestProgramsDeclareTheContractNames(t *testing.T) {
	reportAll(t, checkDeclarations(loadPrograms(t), Declarations()))
}

func TestCellLayoutMatchesTheContract(t *testing.T) {
	for name, p := range loadPrograms(t) {
		for _, err := range checkLayout(p) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestProgramsAreWired(t *testing.T) {
	for name, p := range loadPrograms(t) {
		reportAll(t, checkWiring(MainFile(name), p))
	}
}

// A name changed on the contract side is caught.
func TestContractRenameIsCaught(t *testing.T) {
	progs := loadPrograms(t)
	for name, mutate := range map[string]func(*Declaration) bool{
		"table renamed": func(d *Declaration) bool {
			if d.Kind == KindTable && d.Program == ProgramFA && d.QualifiedName() == TableVOQ {
				d.Name = "voqs"
				return true
			}
			return false
		},
		"register moved": func(d *Declaration) bool {
			if d.Kind == KindRegister && d.QualifiedName() == RegFCIThreshold {
				d.Control = ControlIngress
				return true
			}
			return false
		},
		"register in the other program": func(d *Declaration) bool {
			if d.Kind == KindRegister && d.QualifiedName() == RegCredit {
				d.Program = ProgramFE
				return true
			}
			return false
		},
		"parameter renamed": func(d *Declaration) bool {
			if d.Kind == KindAction && d.Name == ActionToVOQ {
				d.Params = []string{"fa", "port", "queue", "tc"}
				return true
			}
			return false
		},
		"key renamed": func(d *Declaration) bool {
			if d.Kind == KindTable && d.Program == ProgramFE && d.QualifiedName() == TableSpray {
				d.Keys = []string{"dst_fa", "index"}
				return true
			}
			return false
		},
	} {
		t.Run(name, func(t *testing.T) {
			decls := Declarations()
			hit := 0
			for k := range decls {
				if mutate(&decls[k]) {
					hit++
				}
			}
			if hit != 1 {
				t.Fatalf("the mutation applied to %d declarations, want 1", hit)
			}
			if errs := checkDeclarations(progs, decls); len(errs) == 0 {
				t.Error("went unnoticed")
			}
		})
	}
}

// A name or layout changed on the P4 side is caught.
func TestSourceRenameIsCaught(t *testing.T) {
	for _, c := range []struct {
		name, prog, old, new string
		layout               bool
	}{
		{"table", ProgramFA, "table credit_to {", "table credits_to {", false},
		{"action parameter", ProgramFA, "action to_source(fa_id_t fa, bit<16> voq)", "action to_source(fa_id_t fa, bit<16> q)", false},
		{"register", ProgramFE, ") reg_fci_th;", ") reg_fci_threshold;", false},
		{"key", ProgramFE, `hdr.sd.dst_fa : exact @name("dst_fa");`, `hdr.sd.dst_fa : exact @name("fa");`, false},
		{"field width", ProgramFA, "bit<32> seq;", "bit<24> seq;", true},
		{"field order", ProgramFE, "fa_id_t dst_fa;\n    bit<16> dst_port;", "bit<16> dst_port;\n    fa_id_t dst_fa;", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, err := loadP4(MainFile(c.prog))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(src.text, c.old) != 1 {
				t.Fatalf("%q occurs %d times, want 1", c.old, strings.Count(src.text, c.old))
			}
			src.text = strings.Replace(src.text, c.old, c.new, 1)
			p, err := parseP4(src)
			if err != nil {
				t.Fatal(err)
			}
			var errs []error
			if c.layout {
				errs = checkLayout(p)
			} else {
				progs := loadPrograms(t)
				progs[c.prog] = p
				errs = checkDeclarations(progs, Declarations())
			}
			if len(errs) == 0 {
				t.Errorf("replacing %q with %q went unnoticed", c.old, c.new)
			}
		})
	}
	src, err := loadP4(MainFile(ProgramFE))
	if err != nil {
		t.Fatal(err)
	}
	src.defines["SD_ETHERTYPE"] = "0x88B5"
	p, err := parseP4(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(checkLayout(p)) == 0 {
		t.Error("SD_ETHERTYPE 0x88B5 went unnoticed")
	}
}

// Every name constant of contract.go (Table*, Action*, Reg*) is in
// Declarations, so a name added to the contract is checked too.
func TestDeclarationsCoverTheContract(t *testing.T) {
	f, err := parser.ParseFile(gotoken.NewFileSet(), "contract.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, d := range Declarations() {
		listed[d.Name] = true
		listed[d.QualifiedName()] = true
	}
	n := 0
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != gotoken.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for k, id := range vs.Names {
				if !strings.HasPrefix(id.Name, "Table") && !strings.HasPrefix(id.Name, "Action") && !strings.HasPrefix(id.Name, "Reg") {
					continue
				}
				n++
				lit, ok := vs.Values[k].(*ast.BasicLit)
				if !ok || lit.Kind != gotoken.STRING {
					t.Errorf("%s: not a string literal", id.Name)
					continue
				}
				v, _ := strconv.Unquote(lit.Value)
				if !listed[v] {
					t.Errorf("contract.go's %s = %q is not in Declarations()", id.Name, v)
				}
			}
		}
	}
	if n != 23 {
		t.Errorf("found %d name constants in contract.go, want 23", n)
	}
}

func TestSourcesEmbedThePrograms(t *testing.T) {
	src := Sources()
	for _, f := range []string{MainFile(ProgramFA), MainFile(ProgramFE), "common/headers.p4"} {
		onDisk, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if string(src[f]) != string(onDisk) {
			t.Errorf("Sources()[%s] is not the file on disk", f)
		}
	}
	if len(src) != 3 {
		t.Errorf("Sources() holds %d files, want 3", len(src))
	}
}
