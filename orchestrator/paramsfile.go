package orchestrator

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"testbed/internal/readfile"
)

// ParamsFile is a parameters file (`--params`): a YAML mapping of
// parameter name to value, with where each was written.
type ParamsFile struct {
	// Name is the file's name in messages.
	Name string
	// Values are the decoded values by parameter name.
	Values map[string]any
	// Lines are the lines the values are on (1-based; 0 when unknown).
	Lines map[string]int
	// Text is each scalar value as written (e.g. "1e-3"), for messages.
	Text map[string]string
}

// at is where a parameter was written: file:line, or the file alone.
func (f *ParamsFile) at(name string) string {
	if l := f.Lines[name]; l > 0 {
		return fmt.Sprintf("%s:%d", f.Name, l)
	}
	return f.Name
}

// ReadParamsFile reads and parses a parameters file.
func ReadParamsFile(path string) (*ParamsFile, error) {
	data, err := readfile.Read(path, 1<<20) // parameters are a few lines
	if err != nil {
		return nil, &InputError{Msg: fmt.Sprintf("parameters file: %v", err)}
	}
	return ParseParamsFile(path, data)
}

var yamlLineRe = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// ParseParamsFile parses a parameters file; name is used in messages.
// Every problem is reported at once with file:line; the values are
// checked against a recipe's parameters by ResolveParamsFile.
func ParseParamsFile(name string, data []byte) (*ParamsFile, error) {
	pf := &ParamsFile{Name: name, Values: map[string]any{}, Lines: map[string]int{}, Text: map[string]string{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := err.Error()
		if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
			return nil, &InputError{Msg: fmt.Sprintf("%s:%s: %s", name, m[1], msg[len(m[0]):])}
		}
		return nil, &InputError{Msg: fmt.Sprintf("%s: %s", name, strings.TrimPrefix(msg, "yaml: "))}
	}
	if len(doc.Content) == 0 {
		return pf, nil // an empty file sets nothing
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return pf, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, &InputError{Msg: fmt.Sprintf("%s:%d: expected a mapping of parameter name to value (name: value), got %s", name, root.Line, nodeKind(root))}
	}
	var problems []string
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			problems = append(problems, fmt.Sprintf("%s:%d: expected a parameter name, got %s", name, k.Line, nodeKind(k)))
			continue
		}
		if l, dup := pf.Lines[k.Value]; dup {
			problems = append(problems, fmt.Sprintf("%s:%d: parameter %s given twice (first on line %d)", name, k.Line, k.Value, l))
			continue
		}
		pf.Lines[k.Value] = k.Line
		var val any
		if err := v.Decode(&val); err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: parameter %s: %s", name, v.Line, k.Value, strings.TrimPrefix(err.Error(), "yaml: ")))
			continue
		}
		switch x := val.(type) {
		case map[string]any:
			problems = append(problems, fmt.Sprintf("%s:%d: parameter %s: expected a value or a list, got a mapping", name, v.Line, k.Value))
			continue
		case []any:
			for _, e := range x {
				switch e.(type) {
				case map[string]any, []any:
					problems = append(problems, fmt.Sprintf("%s:%d: parameter %s: expected a list of values, got a nested %s", name, v.Line, k.Value, nodeKindOf(e)))
				}
			}
		}
		pf.Values[k.Value] = val
		if v.Kind == yaml.ScalarNode {
			pf.Text[k.Value] = v.Value
		}
	}
	if len(problems) > 0 {
		return nil, &InputError{Msg: "bad parameters file:\n  " + strings.Join(problems, "\n  ")}
	}
	return pf, nil
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "nothing"
}

func nodeKindOf(v any) string {
	if _, ok := v.([]any); ok {
		return "list"
	}
	return "mapping"
}
