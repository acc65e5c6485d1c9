// Package bfrtinfo reads a BF Runtime info document (bf-rt.json, the
// shape the Intel SDE's compiler writes for a P4 program and bf_switchd
// ships for its fixed tables) and encodes the values BF Runtime gRPC
// carries. It follows the SDE's own reader, the Python client's
// info_parse.py (open-p4studio, pkgsrc/bf-drivers/src/bf_rt/
// bfruntime_grpc_client/python/info_parse.py): tables with keys, action
// specs and data, a data entry a singleton or a oneof, field sizes from
// their type ("bytes" of a width in bits, uint8..uint64, bool, string).
// The switch driver (dut/tofino/bfrtgrpc) and the simulated switch
// (simlab/tofino) both read the documents they exchange with it.
package bfrtinfo

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Info is one bf-rt.json document.
type Info struct {
	Tables []*Table `json:"tables"`

	byName map[string]*Table
	byID   map[uint32]*Table
}

// Table is one table of the document.
type Table struct {
	Name      string    `json:"name"`
	ID        uint32    `json:"id"`
	TableType string    `json:"table_type"`
	Size      int       `json:"size"`
	Key       []*Field  `json:"key"`
	Actions   []*Action `json:"action_specs"`
	RawData   []rawData `json:"data"`
	// Data is the table's common data fields (singletons and oneofs,
	// flattened), read-only and mandatory taken from their entry.
	Data []*Field `json:"-"`
}

// Action is an action of a match table.
type Action struct {
	ID   uint32   `json:"id"`
	Name string   `json:"name"`
	Data []*Field `json:"data"`
}

// Field is a key or data field.
type Field struct {
	ID          uint32       `json:"id"`
	Name        string       `json:"name"`
	MatchType   string       `json:"match_type,omitempty"`
	Type        *Type        `json:"type"`
	Repeated    bool         `json:"repeated"`
	Mandatory   bool         `json:"mandatory"`
	ReadOnly    bool         `json:"read_only"`
	Annotations []Annotation `json:"annotations"`
}

// Type is a field's type.
type Type struct {
	Type    string   `json:"type"`
	Width   int      `json:"width,omitempty"`
	Choices []string `json:"choices,omitempty"`
}

// Annotation is a name/value annotation.
type Annotation struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

type rawData struct {
	Mandatory bool     `json:"mandatory"`
	ReadOnly  bool     `json:"read_only"`
	Singleton *Field   `json:"singleton"`
	Oneof     []*Field `json:"oneof"`
}

// Parse reads a document; what names it gives is the name of the
// document in errors.
func Parse(what string, b []byte) (*Info, error) {
	var in Info
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("%s: not a BF Runtime info document: %w", what, err)
	}
	in.byName = map[string]*Table{}
	in.byID = map[uint32]*Table{}
	for i, t := range in.Tables {
		if t == nil || t.Name == "" || t.ID == 0 {
			return nil, fmt.Errorf("%s: table %d: expected a name and an id", what, i)
		}
		for _, d := range t.RawData {
			fs := d.Oneof
			if d.Singleton != nil {
				fs = []*Field{d.Singleton}
			}
			for _, f := range fs {
				f.Mandatory, f.ReadOnly = d.Mandatory, d.ReadOnly
				t.Data = append(t.Data, f)
			}
		}
		for _, f := range t.Key {
			if f.Type == nil {
				return nil, fmt.Errorf("%s: table %s: key field %s has no type", what, t.Name, f.Name)
			}
		}
		if _, dup := in.byID[t.ID]; dup {
			return nil, fmt.Errorf("%s: table %s: id %d is taken by %s", what, t.Name, t.ID, in.byID[t.ID].Name)
		}
		in.byName[t.Name] = t
		in.byID[t.ID] = t
	}
	return &in, nil
}

// Merge returns one index over the tables of several documents (a
// program's and the device's fixed tables, as a client sees them).
func Merge(docs ...*Info) *Info {
	out := &Info{byName: map[string]*Table{}, byID: map[uint32]*Table{}}
	for _, d := range docs {
		if d == nil {
			continue
		}
		for _, t := range d.Tables {
			out.Tables = append(out.Tables, t)
			out.byName[t.Name] = t
			out.byID[t.ID] = t
		}
	}
	return out
}

// Table finds a table by its full name ("pipe.SwitchEgress.link_protect",
// "$PORT") or, as the SDE's clients do, by a unique dotted suffix of it
// ("SwitchEgress.link_protect").
func (in *Info) Table(name string) (*Table, bool) {
	if t, ok := in.byName[name]; ok {
		return t, true
	}
	var found *Table
	for _, t := range in.Tables {
		if strings.HasSuffix(t.Name, "."+name) {
			if found != nil {
				return nil, false
			}
			found = t
		}
	}
	return found, found != nil
}

// TableByID finds a table by its id.
func (in *Info) TableByID(id uint32) (*Table, bool) {
	t, ok := in.byID[id]
	return t, ok
}

// KeyField finds a key field by its name, or by the keyword bfrt_python
// makes of it (Keyword).
func (t *Table) KeyField(name string) (*Field, bool) {
	return findField(t.Key, name)
}

// KeyByID finds a key field by its id.
func (t *Table) KeyByID(id uint32) (*Field, bool) {
	for _, f := range t.Key {
		if f.ID == id {
			return f, true
		}
	}
	return nil, false
}

// Action finds an action by its full name ("SwitchEgress.protect") or
// its last component ("protect").
func (t *Table) Action(name string) (*Action, bool) {
	for _, a := range t.Actions {
		if a.Name == name || lastPart(a.Name) == name {
			return a, true
		}
	}
	return nil, false
}

// ActionByID finds an action by its id.
func (t *Table) ActionByID(id uint32) (*Action, bool) {
	for _, a := range t.Actions {
		if a.ID == id {
			return a, true
		}
	}
	return nil, false
}

// DataField finds a data field by name (or keyword) among the action's
// fields (a nil action: none) and then the table's common ones, as
// info_parse.py's data_field_id_get does.
func (t *Table) DataField(name string, a *Action) (*Field, bool) {
	if a != nil {
		if f, ok := findField(a.Data, name); ok {
			return f, true
		}
	}
	return findField(t.Data, name)
}

// DataByID finds a data field by id, the action's first.
func (t *Table) DataByID(id uint32, a *Action) (*Field, bool) {
	if a != nil {
		for _, f := range a.Data {
			if f.ID == id {
				return f, true
			}
		}
	}
	for _, f := range t.Data {
		if f.ID == id {
			return f, true
		}
	}
	return nil, false
}

func findField(fs []*Field, name string) (*Field, bool) {
	for _, f := range fs {
		if f.Name == name {
			return f, true
		}
	}
	for _, f := range fs {
		if Keyword(f.Name) == name {
			return f, true
		}
	}
	return nil, false
}

func lastPart(s string) string {
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Keyword is the name bfrt_python gives a field as a keyword argument
// and in what it reads back: the part after the last dot, with "$"
// dropped and "[", "]", ":", "-" made "_" ("eg_intr_md.egress_port" ->
// "egress_port", "$DEV_PORT" -> "DEV_PORT"); the agent protocol names
// fields so (dut/tofino/agent/PROTOCOL.md).
func Keyword(name string) string {
	s := strings.ReplaceAll(name, "$", "")
	j := strings.IndexByte(s, '[')
	if j < 0 {
		j = len(s)
	}
	if i := strings.LastIndexByte(s[:j], '.'); i >= 0 {
		s = s[i+1:]
	}
	return strings.NewReplacer("[", "_", "]", "_", ":", "_", "-", "_").Replace(s)
}

// IsRegisterData reports whether a data field holds a register's value
// (annotation $bfrt_field_class = register_data): a read answers it once
// per pipe.
func (f *Field) IsRegisterData() bool {
	for _, a := range f.Annotations {
		if a.Name == "$bfrt_field_class" && a.Value == "register_data" {
			return true
		}
	}
	return false
}

// Bytes is how many bytes the field's value takes on the wire: "bytes"
// of its width rounded up, the integer types their size; 0 for bool,
// string and float, which travel in fields of their own.
func (f *Field) Bytes() int {
	if f.Type == nil {
		return 0
	}
	switch f.Type.Type {
	case "bytes":
		return (f.Type.Width + 7) / 8
	case "uint64":
		return 8
	case "uint32", "int32":
		return 4
	case "uint16":
		return 2
	case "uint8":
		return 1
	}
	return 0
}

// Encode is v big-endian in n bytes, as BF Runtime gRPC carries integers
// (the Python client's to_bytes); bits above n bytes are an error.
func Encode(v uint64, n int) ([]byte, error) {
	if n <= 0 || n > 8 && v>>63 != 0 {
		return nil, fmt.Errorf("value %d: no room in %d bytes", v, n)
	}
	if n < 8 && v>>(8*uint(n)) != 0 {
		return nil, fmt.Errorf("value %d does not fit in %d bytes", v, n)
	}
	b := make([]byte, n)
	for i := n - 1; i >= 0 && v != 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b, nil
}

// Decode reads a big-endian value of at most 8 significant bytes.
func Decode(b []byte) (uint64, error) {
	var v uint64
	for i, c := range b {
		if len(b)-i > 8 && c != 0 {
			return 0, fmt.Errorf("value of %d bytes does not fit in 64 bits", len(b))
		}
		v = v<<8 | uint64(c)
	}
	return v, nil
}
