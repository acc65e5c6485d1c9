package tofino

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"testbed/internal/bfrtinfo"
	"testbed/p4/ecmp"
	lg "testbed/p4/linkguardian"
	sd "testbed/p4/stardust"
	ts "testbed/p4/timestamp"
)

// The BF Runtime info the simulated switch gives a gRPC client: for the
// program it runs, a bf-rt.json synthesized from the program's contract
// (p4/*: its tables with their keys and actions, its registers) in the
// shape the SDE's compiler writes; for the device, the SDE's own fixed
// tables (sde/, copied from open-p4studio) and the simulated clock.
//
// What the contracts do not say, the synthesized document fills with
// assumptions a client must not depend on: every key and action
// parameter is "bytes" of 32 bits with an exact match, every register
// field 32 bits (Tofino 1's widest register cell), a table holds 4096
// entries. A client that reads widths from the document, as the SDE's
// Python client and the driver do, works with these and with a real
// compiler's.

//go:embed sde/bf_rt_*_tf1.json
var sdeTables embed.FS

// simClockTable is the one table the simulated switch adds to the SDE's
// fixed ones. BF Runtime has no clock, and the simulated dataplane's
// time moves only when a client asks it to (dataplane.go): over SSH the
// agent's time.wait asks; over gRPC a write of until_ns does. Reading it
// gives the switch's clock (time_ns). Drivers use it only when a device
// lists it; bf_switchd does not, and a real switch's time goes on by
// itself.
const simClockTable = "testbed.sim.clock"

const simClockID = 0xfe7e0001

// nonP4Info is the device's fixed tables: the SDE's Tofino 1 documents
// merged into one, plus the clock.
func nonP4Info() ([]byte, error) {
	names, err := sdeTables.ReadDir("sde")
	if err != nil {
		return nil, err
	}
	var all []json.RawMessage
	for _, n := range names {
		b, err := sdeTables.ReadFile("sde/" + n.Name())
		if err != nil {
			return nil, err
		}
		var doc struct {
			Tables []json.RawMessage `json:"tables"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("sde/%s: %w", n.Name(), err)
		}
		all = append(all, doc.Tables...)
	}
	clock := bfrtTableDoc{Name: simClockTable, ID: simClockID, TableType: "SimClock", Size: 1, Key: []bfrtFieldDoc{},
		Data: []bfrtDataDoc{
			{ReadOnly: true, Singleton: &bfrtFieldDoc{ID: 1, Name: "time_ns", Annotations: []bfrtinfo.Annotation{}, Type: bfrtinfo.Type{Type: "uint64"}}},
			{Singleton: &bfrtFieldDoc{ID: 2, Name: "until_ns", Annotations: []bfrtinfo.Annotation{}, Type: bfrtinfo.Type{Type: "uint64"}}},
		},
		SupportedOperations: []string{}, Attributes: []string{}, Annotations: []bfrtinfo.Annotation{}, DependsOn: []uint32{}}
	cb, err := json.Marshal(clock)
	if err != nil {
		return nil, err
	}
	all = append(all, cb)
	return json.MarshalIndent(map[string]any{"tables": all}, "", "  ")
}

// The SDE's document shapes, as bf-p4c writes them (tables, key fields,
// action specs, data entries).
type bfrtTableDoc struct {
	Name                  string                `json:"name"`
	ID                    uint32                `json:"id"`
	TableType             string                `json:"table_type"`
	Size                  int                   `json:"size"`
	Annotations           []bfrtinfo.Annotation `json:"annotations"`
	DependsOn             []uint32              `json:"depends_on"`
	HasConstDefaultAction bool                  `json:"has_const_default_action"`
	Key                   []bfrtFieldDoc        `json:"key"`
	ActionSpecs           []bfrtActionDoc       `json:"action_specs,omitempty"`
	Data                  []bfrtDataDoc         `json:"data"`
	SupportedOperations   []string              `json:"supported_operations"`
	Attributes            []string              `json:"attributes"`
}

type bfrtFieldDoc struct {
	ID          uint32                `json:"id"`
	Name        string                `json:"name"`
	Repeated    bool                  `json:"repeated"`
	Annotations []bfrtinfo.Annotation `json:"annotations"`
	Mandatory   bool                  `json:"mandatory"`
	ReadOnly    *bool                 `json:"read_only,omitempty"`
	MatchType   string                `json:"match_type,omitempty"`
	Type        bfrtinfo.Type         `json:"type"`
}

type bfrtActionDoc struct {
	ID          uint32                `json:"id"`
	Name        string                `json:"name"`
	ActionScope string                `json:"action_scope"`
	Annotations []bfrtinfo.Annotation `json:"annotations"`
	Data        []bfrtFieldDoc        `json:"data"`
}

type bfrtDataDoc struct {
	Mandatory bool          `json:"mandatory"`
	ReadOnly  bool          `json:"read_only"`
	Singleton *bfrtFieldDoc `json:"singleton"`
}

// programDecls is what the contracts declare for program.
func programDecls(program string) []lg.Declaration {
	var out []lg.Declaration
	for _, ds := range [][]lg.Declaration{lg.Declarations(), sd.Declarations(), ts.Declarations(), ecmp.Declarations()} {
		for _, d := range ds {
			if d.Program == program {
				out = append(out, d)
			}
		}
	}
	if len(out) == 0 && isECMP(program) {
		out = ecmp.Declarations()
	}
	return out
}

// Ids of the synthesized objects, in the ranges bf-p4c uses for them
// (tables 0x02..., registers 0x0f..., actions 0x01...), numbered in the
// order of the names.
const (
	p4TableIDBase  = 0x02000000
	p4RegIDBase    = 0x0f000000
	p4ActionIDBase = 0x01000000
)

// programInfo synthesizes program's bf-rt.json from its contract.
func programInfo(program string) ([]byte, error) {
	decls := programDecls(program)
	if len(decls) == 0 {
		return nil, fmt.Errorf("no contract declares program %q", program)
	}
	sort.SliceStable(decls, func(i, j int) bool { return decls[i].QualifiedName() < decls[j].QualifiedName() })
	f := false
	var tables []bfrtTableDoc
	nt, nr, na := 0, 0, 0
	for _, d := range decls {
		switch d.Kind {
		case lg.KindTable:
			nt++
			name := d.QualifiedName()
			t := bfrtTableDoc{Name: "pipe." + name, ID: uint32(p4TableIDBase + nt), TableType: "MatchAction_Direct", Size: 4096,
				Annotations: []bfrtinfo.Annotation{}, DependsOn: []uint32{}, SupportedOperations: []string{}, Attributes: []string{"EntryScope"}, Data: []bfrtDataDoc{}}
			if name == lg.TableEmulateDrop {
				t.Size = 1 << lg.DropRandomBits
			}
			for i, k := range d.Keys {
				t.Key = append(t.Key, bfrtFieldDoc{ID: uint32(i + 1), Name: k, Annotations: []bfrtinfo.Annotation{}, Mandatory: true, MatchType: "Exact", Type: bfrtinfo.Type{Type: "bytes", Width: 32}})
			}
			for _, a := range decls {
				if a.Kind != lg.KindAction || a.Table != name {
					continue
				}
				na++
				ad := bfrtActionDoc{ID: uint32(p4ActionIDBase + na), Name: a.Control + "." + a.Name, ActionScope: "TableAndDefault", Annotations: []bfrtinfo.Annotation{}, Data: []bfrtFieldDoc{}}
				for i, p := range a.Params {
					ad.Data = append(ad.Data, bfrtFieldDoc{ID: uint32(i + 1), Name: p, Annotations: []bfrtinfo.Annotation{}, Mandatory: true, ReadOnly: &f, Type: bfrtinfo.Type{Type: "bytes", Width: 32}})
				}
				t.ActionSpecs = append(t.ActionSpecs, ad)
			}
			tables = append(tables, t)
		case lg.KindRegister:
			// A register's data field is written with one value and
			// read with one per pipe: annotation $bfrt_field_class =
			// register_data, not repeated (bf_rt_table.hpp, Annotation).
			nr++
			name := d.QualifiedName()
			tables = append(tables, bfrtTableDoc{Name: "pipe." + name, ID: uint32(p4RegIDBase + nr), TableType: "Register", Size: regSize(name),
				Annotations: []bfrtinfo.Annotation{}, DependsOn: []uint32{}, SupportedOperations: []string{"Sync"}, Attributes: []string{},
				Key: []bfrtFieldDoc{{ID: 1, Name: "$REGISTER_INDEX", Annotations: []bfrtinfo.Annotation{}, Mandatory: true, MatchType: "Exact", Type: bfrtinfo.Type{Type: "uint32"}}},
				Data: []bfrtDataDoc{{Singleton: &bfrtFieldDoc{ID: 1, Name: name + ".f1",
					Annotations: []bfrtinfo.Annotation{{Name: "$bfrt_field_class", Value: "register_data"}}, Type: bfrtinfo.Type{Type: "bytes", Width: 32}}}}})
		}
	}
	return json.MarshalIndent(map[string]any{"schema_version": "1.0.0", "tables": tables, "learn_filters": []any{}}, "", "  ")
}

// SimulatedBuild is what the simulated compiler makes of program: its
// bf-rt.json, context.json and pipeline binary, the three files a BF
// Runtime client sends with SetForwardingPipelineConfig to load it (the
// SDE installs them as share/tofinopd/<program>/bf-rt.json and
// pipe/{context.json,tofino.bin}). The simulated switch loads only a
// binary of this shape whose program and bf-rt.json match the request.
func SimulatedBuild(program string) (bfrt, context, binary []byte, err error) {
	bfrt, err = programInfo(program)
	if err != nil {
		return nil, nil, nil, err
	}
	context, err = json.MarshalIndent(map[string]any{"program_name": program, "compiler_version": "simulated", "schema_version": "1.12.0", "tables": []any{}}, "", "  ")
	if err != nil {
		return nil, nil, nil, err
	}
	sum := sha256.Sum256(bfrt)
	binary = []byte(simBinaryMagic + "program=" + program + "\nbfrt_sha256=" + hex.EncodeToString(sum[:]) + "\n")
	return bfrt, context, binary, nil
}

const simBinaryMagic = "TOFINO1 PIPELINE (simulated)\n"

// checkBuild verifies that a forwarding config is a build of its program.
func checkBuild(p4Name string, bfrt, context, binary []byte) error {
	if !bytes.HasPrefix(binary, []byte(simBinaryMagic)) {
		return fmt.Errorf("program %s: the pipeline binary is not one this switch runs (expected a tofino.bin of the simulated compiler)", p4Name)
	}
	kv := map[string]string{}
	for _, l := range strings.Split(string(binary[len(simBinaryMagic):]), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			kv[k] = v
		}
	}
	sum := sha256.Sum256(bfrt)
	switch {
	case kv["program"] != p4Name:
		return fmt.Errorf("program %s: the pipeline binary is program %q's", p4Name, kv["program"])
	case kv["bfrt_sha256"] != hex.EncodeToString(sum[:]):
		return fmt.Errorf("program %s: bfruntime_info is not the bf-rt.json the binary was built with", p4Name)
	}
	var c struct {
		Program string `json:"program_name"`
	}
	if err := json.Unmarshal(context, &c); err != nil || c.Program != p4Name {
		return fmt.Errorf("program %s: context.json is not the program's (program_name %q)", p4Name, c.Program)
	}
	return nil
}

// Programs lists the P4 programs the simulated switch runs (those whose
// contracts it models).
func Programs() []string {
	return []string{lg.ProgramSender, lg.ProgramReceiver, sd.ProgramFA, sd.ProgramFE, ts.Program, ecmp.Program}
}
