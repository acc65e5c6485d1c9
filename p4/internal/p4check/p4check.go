// Package p4check reads P4_16 sources far enough to hold them to a Go
// control-plane contract: the programs' tests use it to check that every
// name the control plane uses is declared, with that name, as that kind of
// object, in the control and program the contract says, and that the
// programs are wired together. The sources are compiled by the lab's SDE,
// not here.
package p4check

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"testbed/p4/internal/decl"
)

// ---- reading the sources ----

// Source is a program's text with its quoted includes spliced in,
// comments and preprocessor lines removed, and its #defines.
type Source struct {
	Text    string
	Defines map[string]string
	origin  []string // "file:line" of each line of text
}

// at is where a line of the text comes from.
func (s Source) at(line int) string {
	if line >= 1 && line <= len(s.origin) {
		return s.origin[line-1]
	}
	return fmt.Sprintf("line %d", line)
}

var lineRe = regexp.MustCompile(`line (\d+)`)

// located rewrites "line N" in err as the file and line it stands for.
func (s Source) located(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(lineRe.ReplaceAllStringFunc(err.Error(), func(m string) string {
		n, _ := strconv.Atoi(strings.TrimPrefix(m, "line "))
		return s.at(n)
	}))
}

// Load reads path and the files it includes with #include "...", each
// once (the headers have include guards). <...> includes are the SDE's.
func Load(path string) (Source, error) {
	src := Source{Defines: map[string]string{}}
	var b strings.Builder
	if err := splice(path, &b, src.Defines, &src.origin, map[string]bool{}); err != nil {
		return src, err
	}
	src.Text = b.String()
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
	text, err := StripComments(string(raw))
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

// StripComments blanks // and /* */ comments, keeping line breaks and
// string literals.
func StripComments(s string) (string, error) {
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

type Action struct {
	params []string
	line   int
}

type Table struct {
	Keys    []string
	Actions []string
	line    int
}

// Instance is an extern instantiation: Register<bit<16>, lg_idx_t>(128, 0) reg_seq_no;
type Instance struct {
	Type     string
	TypeArgs []token
	args     []token
	line     int
}

// Args are the instance's constructor arguments, each as its tokens
// joined: Register<bit<32>, flow_t>(ECMP_MAX_FLOWS, 0) gives
// ["ECMP_MAX_FLOWS", "0"].
func (in Instance) Args() []string {
	var out []string
	for _, a := range SplitTop(in.args, ",") {
		out = append(out, Join(a))
	}
	return out
}

type Control struct {
	Actions   map[string][]Action
	Tables    map[string][]Table
	Instances map[string][]Instance
	apply     []token
	Body      []token
	line      int
	params    map[string]string // parameter name -> type
}

type Field struct{ Type, Name string }

type Program struct {
	src      Source
	defines  map[string]string
	typedefs map[string]string
	consts   map[string]string
	Headers  map[string][]Field
	Structs  map[string][]Field
	Controls map[string]*Control
	Parsers  map[string]*Control
	// top-level extern instances: the Pipeline and the Switch
	Instances map[string]Instance
}

// Parse reads a program's top-level declarations; errors say where.
func Parse(src Source) (*Program, error) {
	p, err := parseTopLevel(src)
	return p, src.located(err)
}

func parseTopLevel(src Source) (*Program, error) {
	p := &Program{
		src: src, defines: src.Defines, typedefs: map[string]string{}, consts: map[string]string{},
		Headers: map[string][]Field{}, Structs: map[string][]Field{}, Controls: map[string]*Control{},
		Parsers: map[string]*Control{}, Instances: map[string]Instance{},
	}
	toks := tokenize(src.Text)
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
				p.typedefs[toks[end-1].text] = Join(toks[i+1 : end-1])
				i = end + 1
			}
		case t == "const":
			var end int
			if end, err = statementEnd(toks, i); err == nil {
				eq := indexOf(toks[i:end], "=")
				if eq < 2 {
					return nil, fmt.Errorf("line %d: const without a value", toks[i].line)
				}
				p.consts[toks[i+eq-1].text] = Join(toks[i+eq+1 : end])
				i = end + 1
			}
		case t == "header" || t == "struct":
			i, err = p.parseFields(toks, i)
		case t == "control" || t == "parser":
			i, err = p.parseBlock(toks, i)
		case isIdent(t) && i+1 < len(toks) && (toks[i+1].text == "<" || toks[i+1].text == "("):
			var name string
			var inst Instance
			var next int
			if name, inst, next, err = parseInstance(toks, i); err == nil {
				if name != "" {
					p.Instances[name] = inst
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
func (p *Program) parseFields(toks []token, i int) (int, error) {
	if i+2 >= len(toks) || toks[i+2].text != "{" {
		return skipStatement(toks, i)
	}
	end, err := matching(toks, i+2)
	if err != nil {
		return 0, err
	}
	var fields []Field
	for _, f := range SplitTop(toks[i+3:end], ";") {
		f = dropAnnotations(f)
		if len(f) < 2 {
			continue
		}
		fields = append(fields, Field{Type: Join(f[:len(f)-1]), Name: f[len(f)-1].text})
	}
	if toks[i].text == "header" {
		p.Headers[toks[i+1].text] = fields
	} else {
		p.Structs[toks[i+1].text] = fields
	}
	return end + 1, nil
}

// parseBlock reads `control NAME(...) { body }`; parsers are only named.
func (p *Program) parseBlock(toks []token, i int) (int, error) {
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
	for _, prm := range SplitTop(toks[i+3:close], ",") {
		prm = dropAnnotations(prm)
		if len(prm) >= 2 {
			params[prm[len(prm)-1].text] = prm[len(prm)-2].text
		}
	}
	if toks[i].text == "parser" {
		p.Parsers[name] = &Control{Body: toks[close+2 : end], params: params, line: toks[i].line}
		return end + 1, nil
	}
	if _, dup := p.Controls[name]; dup {
		return 0, fmt.Errorf("line %d: control %s declared twice", toks[i].line, name)
	}
	c, err := parseControlBody(toks[close+2 : end])
	if err != nil {
		return 0, fmt.Errorf("control %s: %w", name, err)
	}
	c.Body, c.params, c.line = toks[close+2:end], params, toks[i].line
	p.Controls[name] = c
	return end + 1, nil
}

// parseControlBody reads the declarations at the top level of a control's
// body: actions, tables, extern instances and the apply block. Statements
// inside actions and apply blocks are not declarations.
func parseControlBody(toks []token) (*Control, error) {
	c := &Control{Actions: map[string][]Action{}, Tables: map[string][]Table{}, Instances: map[string][]Instance{}}
	for i := 0; i < len(toks); {
		t := toks[i].text
		var err error
		switch {
		case t == "@":
			i, err = skipAnnotation(toks, i)
		case t == "action":
			name, a, end, err := parseActionDecl(toks, i)
			if err != nil {
				return nil, err
			}
			c.Actions[name] = append(c.Actions[name], a)
			i = end + 1
		case t == "table":
			name, tbl, end, err := parseTableDecl(toks, i)
			if err != nil {
				return nil, err
			}
			c.Tables[name] = append(c.Tables[name], tbl)
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
			c.Instances[name] = append(c.Instances[name], inst)
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

// parseActionDecl reads the action declared at toks[i] ("action"): its
// name, its parameters' names, and the index of its body's closing brace.
func parseActionDecl(toks []token, i int) (string, Action, int, error) {
	if i+2 >= len(toks) || toks[i+2].text != "(" {
		return "", Action{}, 0, fmt.Errorf("line %d: action without parameters", toks[i].line)
	}
	close, err := matching(toks, i+2)
	if err != nil {
		return "", Action{}, 0, err
	}
	if close+1 >= len(toks) || toks[close+1].text != "{" {
		return "", Action{}, 0, fmt.Errorf("line %d: action %s without a body", toks[i].line, toks[i+1].text)
	}
	end, err := matching(toks, close+1)
	if err != nil {
		return "", Action{}, 0, err
	}
	var params []string
	for _, prm := range SplitTop(toks[i+3:close], ",") {
		if prm = dropAnnotations(prm); len(prm) > 0 {
			params = append(params, prm[len(prm)-1].text)
		}
	}
	return toks[i+1].text, Action{params: params, line: toks[i].line}, end, nil
}

// parseTableDecl reads the table declared at toks[i] ("table"): its name,
// its properties, and the index of its body's closing brace.
func parseTableDecl(toks []token, i int) (string, Table, int, error) {
	if i+2 >= len(toks) || toks[i+2].text != "{" {
		return "", Table{}, 0, fmt.Errorf("line %d: table without a body", toks[i].line)
	}
	end, err := matching(toks, i+2)
	if err != nil {
		return "", Table{}, 0, err
	}
	tbl, err := parseTable(toks[i+3 : end])
	if err != nil {
		return "", Table{}, 0, fmt.Errorf("table %s: %w", toks[i+1].text, err)
	}
	tbl.line = toks[i].line
	return toks[i+1].text, tbl, end, nil
}

// parseTable reads a table's key and actions properties.
func parseTable(toks []token) (Table, error) {
	var tbl Table
	for i := 0; i < len(toks); {
		prop := toks[i].text
		if (prop == "key" || prop == "actions") && i+2 < len(toks) && toks[i+1].text == "=" && toks[i+2].text == "{" {
			end, err := matching(toks, i+2)
			if err != nil {
				return tbl, err
			}
			for _, e := range SplitTop(toks[i+3:end], ";") {
				if len(e) == 0 {
					continue
				}
				if prop == "actions" {
					if e = dropAnnotations(e); len(e) > 0 {
						tbl.Actions = append(tbl.Actions, e[0].text)
					}
					continue
				}
				k, err := keyName(e)
				if err != nil {
					return tbl, err
				}
				tbl.Keys = append(tbl.Keys, k)
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
	expr := Join(e[:colon])
	expr = expr[strings.LastIndexByte(expr, '.')+1:]
	return strings.NewReplacer("[", "_", ":", "_", "]", "_").Replace(expr), nil
}

// parseInstance reads `Type[<args>](ctor args) name;` or `... name = {...};`
// at toks[i]. It returns an empty name if toks[i] does not start one.
func parseInstance(toks []token, i int) (string, Instance, int, error) {
	inst := Instance{Type: toks[i].text, line: toks[i].line}
	j := i + 1
	if toks[j].text == "<" {
		end, err := matchingAngle(toks, j)
		if err != nil {
			return "", inst, 0, err
		}
		inst.TypeArgs = toks[j+1 : end]
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
			return "", inst, 0, fmt.Errorf("line %d: %s %s: expected { after =", inst.line, inst.Type, name)
		}
		end, err := matching(toks, close+3)
		if err != nil {
			return "", inst, 0, err
		}
		if end+1 >= len(toks) || toks[end+1].text != ";" {
			return "", inst, 0, fmt.Errorf("line %d: %s %s: missing ; after its body", inst.line, inst.Type, name)
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

// SplitTop splits at sep outside brackets.
func SplitTop(toks []token, sep string) [][]token {
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

func Join(toks []token) string {
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

func (p *Program) Width(typ string) (int, error) {
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

// Value is the integer a const or #define name stands for.
func (p *Program) Value(name string) (int64, error) {
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

// CheckWiring checks what a compiler would reject first: the pipeline
// names declared blocks, tables list declared actions, register actions
// name declared registers, and the apply blocks apply declared tables and
// execute declared register actions.
func CheckWiring(name string, p *Program) []error {
	var errs []error
	failf := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	// Blocks, tables, actions and instances in name order, so that a
	// program checked twice lists its errors the same way.
	p.checkPipeline(failf)
	for _, cname := range slices.Sorted(maps.Keys(p.Controls)) {
		c := p.Controls[cname]
		checkDeclarations(cname, c, failf)
		checkCalls(cname, c, failf)
	}
	blocks := map[string]*Control{}
	for n, c := range p.Controls {
		blocks[n] = c
	}
	for n, c := range p.Parsers {
		blocks[n] = c
	}
	for _, bname := range slices.Sorted(maps.Keys(blocks)) {
		for _, err := range p.CheckReferences(blocks[bname]) {
			failf("%s: %v", bname, err)
		}
	}
	return errs
}

// checkPipeline checks the TNA package: a Pipeline pipe of six blocks,
// parsers and controls in turn, and a Switch(pipe) main.
func (p *Program) checkPipeline(failf func(string, ...any)) {
	pipe, ok := p.Instances["pipe"]
	if !ok || pipe.Type != "Pipeline" {
		failf("no Pipeline named pipe")
	} else {
		blocks := SplitTop(pipe.args, ",")
		if len(blocks) != 6 {
			failf("Pipeline has %d blocks, TNA wants 6", len(blocks))
		}
		for k, b := range blocks {
			if len(b) == 0 {
				failf("Pipeline block %d is empty", k)
				continue
			}
			isParser := k == 0 || k == 3
			if _, ok := p.Parsers[b[0].text]; isParser && !ok {
				failf("Pipeline block %d: no parser %s", k, b[0].text)
			}
			if _, ok := p.Controls[b[0].text]; !isParser && !ok {
				failf("Pipeline block %d: no control %s", k, b[0].text)
			}
		}
	}
	if sw, ok := p.Instances["main"]; !ok || sw.Type != "Switch" || Join(sw.args) != "pipe" {
		failf("no Switch(pipe) main")
	}
}

// checkDeclarations checks a control's declarations: each table, action
// and instance declared once, tables listing declared actions, and each
// RegisterAction using one Register of the control.
func checkDeclarations(cname string, c *Control, failf func(string, ...any)) {
	for _, tname := range slices.Sorted(maps.Keys(c.Tables)) {
		ts := c.Tables[tname]
		if len(ts) > 1 {
			failf("%s: table %s declared %d times", cname, tname, len(ts))
		}
		for _, t := range ts {
			for _, a := range t.Actions {
				if _, ok := c.Actions[a]; !ok && a != "NoAction" {
					failf("%s: table %s lists undeclared action %s", cname, tname, a)
				}
			}
		}
	}
	for _, aname := range slices.Sorted(maps.Keys(c.Actions)) {
		if as := c.Actions[aname]; len(as) > 1 {
			failf("%s: action %s declared %d times", cname, aname, len(as))
		}
	}
	for _, iname := range slices.Sorted(maps.Keys(c.Instances)) {
		is := c.Instances[iname]
		if len(is) > 1 {
			failf("%s: %s declared %d times", cname, iname, len(is))
		}
		if is[0].Type == "RegisterAction" {
			if len(is[0].args) != 1 {
				failf("%s: RegisterAction %s: expected one register", cname, iname)
			} else if r := c.Instances[is[0].args[0].text]; len(r) != 1 || r[0].Type != "Register" {
				failf("%s: RegisterAction %s uses %s, not a Register of this control", cname, iname, is[0].args[0].text)
			}
		}
	}
}

// checkCalls checks the method calls anywhere in a control:
// NAME.apply() applies a declared table, NAME.execute( runs a declared
// RegisterAction.
func checkCalls(cname string, c *Control, failf func(string, ...any)) {
	all := c.Body
	for k := 0; k+2 < len(all); k++ {
		if all[k+1].text != "." {
			continue
		}
		obj, method := all[k].text, all[k+2].text
		switch method {
		case "apply":
			if _, ok := c.Tables[obj]; !ok {
				failf("%s: %s.apply(): no table %s", cname, obj, obj)
			}
		case "execute":
			if is := c.Instances[obj]; len(is) != 1 || is[0].Type != "RegisterAction" {
				failf("%s: %s.execute(): no RegisterAction %s", cname, obj, obj)
			}
		}
	}
}

// headerMethods are what a header instance offers.
var headerMethods = map[string]bool{"isValid": true, "setValid": true, "setInvalid": true}

// CheckReferences resolves every member chain that starts at one of the
// block's parameters (hdr.lg.seq_no, ig_md.mirror.kind) against the
// declared structs and headers. Parameters of the architecture's types
// (ig_intr_md, ...) are the SDE's and are not checked.
func (p *Program) CheckReferences(b *Control) []error {
	var errs []error
	toks := b.Body
	for k := 0; k < len(toks); k++ {
		typ, ok := b.params[toks[k].text]
		if !ok || (k > 0 && toks[k-1].text == ".") {
			continue
		}
		path := toks[k].text
		for j := k + 1; j+1 < len(toks) && toks[j].text == "."; j += 2 {
			member := toks[j+1].text
			path += "." + member
			fields, isHeader := p.Headers[typ]
			if !isHeader {
				if fields, ok = p.Structs[typ]; !ok {
					break // a bit<N> field, or an architecture type
				}
			}
			if isHeader && headerMethods[member] {
				break
			}
			next := ""
			for _, f := range fields {
				if f.Name == member {
					next = f.Type
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

// CheckDeclarations holds the programs to the list of declarations.
func CheckDeclarations(progs map[string]*Program, decls []decl.Declaration) []error {
	var errs []error
	fail := func(d decl.Declaration, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.p4: %s %s.%s: %s", d.Program, d.Kind, d.Control, d.Name, fmt.Sprintf(format, args...)))
	}
	for _, d := range decls {
		p, ok := progs[d.Program]
		if !ok {
			fail(d, "no such program")
			continue
		}
		c, ok := p.Controls[d.Control]
		if !ok {
			fail(d, "the program has no control %s", d.Control)
			continue
		}
		switch d.Kind {
		case decl.KindTable:
			ts := c.Tables[d.Name]
			if len(ts) != 1 {
				fail(d, "declared %d times in control %s, want once", len(ts), d.Control)
				continue
			}
			if !slices.Equal(ts[0].Keys, d.Keys) {
				fail(d, "keys %q, the control plane uses %q", ts[0].Keys, d.Keys)
			}
		case decl.KindAction:
			as := c.Actions[d.Name]
			if len(as) != 1 {
				fail(d, "declared %d times in control %s, want once", len(as), d.Control)
				continue
			}
			if !slices.Equal(as[0].params, d.Params) && (len(as[0].params) != 0 || len(d.Params) != 0) {
				fail(d, "parameters %q, the control plane uses %q", as[0].params, d.Params)
			}
			tc, tn := decl.SplitQualified("", d.Table)
			if tc != d.Control {
				fail(d, "its table %s is in another control", d.Table)
				continue
			}
			if ts := c.Tables[tn]; len(ts) != 1 || !slices.Contains(ts[0].Actions, d.Name) {
				fail(d, "not among the actions of table %s", d.Table)
			}
		case decl.KindRegister:
			is := c.Instances[d.Name]
			if len(is) != 1 || is[0].Type != "Register" {
				fail(d, "no single Register of that name in control %s (%d declarations)", d.Control, len(is))
			}
		default:
			fail(d, "unknown kind")
		}
	}
	return errs
}

// CheckContractNames holds the names a contract's Go file gives the control
// plane (its constants Table*, Action* and Reg*, string literals) to its
// declarations, so that a name added to the contract is checked too. It
// returns how many such constants the file has.
func CheckContractNames(path string, decls []decl.Declaration) (int, []error, error) {
	f, err := parser.ParseFile(gotoken.NewFileSet(), path, nil, 0)
	if err != nil {
		return 0, nil, err
	}
	listed := map[string]bool{}
	for _, d := range decls {
		listed[d.Name] = true
		listed[d.Control+"."+d.Name] = true
	}
	n := 0
	var errs []error
	for _, fd := range f.Decls {
		g, ok := fd.(*ast.GenDecl)
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
					errs = append(errs, fmt.Errorf("%s: not a string literal", id.Name))
					continue
				}
				v, _ := strconv.Unquote(lit.Value)
				if !listed[v] {
					errs = append(errs, fmt.Errorf("%s's %s = %q is not in Declarations()", filepath.Base(path), id.Name, v))
				}
			}
		}
	}
	return n, errs, nil
}
