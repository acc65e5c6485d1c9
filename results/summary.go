package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// Metric is one leaf of a summary.json, named by its path.
type Metric struct {
	// Path joins the object keys and array indexes from the root with
	// dots, e.g. "links.l10g.loss_cliff_db.1e-06" or "points.3.loss".
	Path string
	// Value is a float64, string, bool or nil (JSON null).
	Value any
}

// IsNumber reports whether the metric holds a number.
func (m Metric) IsNumber() bool { _, ok := m.Value.(float64); return ok }

// FlattenSummary turns a summary document into its leaves, sorted by path.
// Numbers keep full precision (json.Number parsed as float64). It is the
// one definition of a metric name that `results diff`, suites and metrics
// exporters share.
func FlattenSummary(data []byte) ([]Metric, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("summary.json: %w", err)
	}
	var out []Metric
	var walk func(prefix string, v any) error
	join := func(prefix, k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	walk = func(prefix string, v any) error {
		switch t := v.(type) {
		case map[string]any:
			for k, c := range t {
				if err := walk(join(prefix, k), c); err != nil {
					return err
				}
			}
		case []any:
			for i, c := range t {
				if err := walk(join(prefix, strconv.Itoa(i)), c); err != nil {
					return err
				}
			}
		case json.Number:
			f, err := strconv.ParseFloat(string(t), 64)
			if err != nil {
				return fmt.Errorf("summary.json: %s: %w", prefix, err)
			}
			out = append(out, Metric{Path: prefix, Value: f})
		default: // string, bool, nil
			out = append(out, Metric{Path: prefix, Value: t})
		}
		return nil
	}
	if err := walk("", v); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}
