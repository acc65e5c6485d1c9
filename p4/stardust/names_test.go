package stardust

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"testbed/p4/internal/p4check"
)

// The P4 sources are compiled by the lab's SDE, not here. These tests read
// them far enough (with the shared reader in p4/internal/p4check) to hold
// them to this package's contract: every name the control plane uses is
// declared, with that name, as that kind of object, in the control and
// program the contract says; and the cell header is the one the contract
// describes. A rename on either side fails them.

// checkLayout holds the programs' cell header and constants to the
// contract.
func checkLayout(p *p4check.Program) []error {
	var errs []error
	failf := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	fields, ok := p.Headers["sd_h"]
	if !ok {
		return []error{errors.New("no header sd_h")}
	}
	want := []struct {
		name string
		bits int
	}{{"kind", 8}, {"flags", 8}, {"dst_fa", 16}, {"dst_port", 16}, {"src_fa", 16}, {"seq", 32}, {"len", 16}, {"tstamp", 32}}
	if len(fields) != len(want) {
		failf("sd_h has %d fields, the contract %d", len(fields), len(want))
	}
	total := 0
	for k, f := range fields {
		w, err := p.Width(f.Type)
		if err != nil {
			failf("sd_h.%s: %v", f.Name, err)
		}
		total += w
		if k < len(want) && (f.Name != want[k].name || w != want[k].bits) {
			failf("sd_h field %d is %s:%d, the contract says %s:%d", k, f.Name, w, want[k].name, want[k].bits)
		}
	}
	if total != CellHeaderBytes*8 {
		failf("sd_h is %d bits, the contract says CellHeaderBytes = %d", total, CellHeaderBytes)
	}
	for name, want := range map[string]int64{
		"SD_ETHERTYPE":    EtherType,
		"SD_KIND_DATA":    KindData,
		"SD_KIND_CREDIT":  KindCredit,
		"SD_KIND_REACH":   KindReach,
		"SD_FLAG_FCI":     FlagFCI,
		"SD_FLAG_LAST":    FlagLast,
		"SD_MAX_FAS":      MaxFAs,
		"SD_MAX_LINKS":    MaxLinks,
		"SD_MAX_PORTS":    PortCount,
		"SD_AGE_MAX":      AgeMax,
		"SD_KIND_AGE":     KindAge,
		"SD_HIST_BUCKETS": HistBuckets,
		"SD_LAT_SHIFT":    LatBucketShift,
		"SD_QHIST_SHIFT":  QHistShift,
	} {
		if v, err := p.Value(name); err != nil || v != want {
			failf("%s = %d (%v), the contract says %d", name, v, err, want)
		}
	}
	if _, isFA := p.Controls[ControlIngress].Tables["voq_map"]; isFA {
		if v, err := p.Value("SD_MAX_VOQS"); err != nil || v != MaxVOQs {
			failf("SD_MAX_VOQS = %d (%v), the contract says %d", v, err, MaxVOQs)
		}
		if v, err := p.Value("SD_CREDIT_CAP"); err != nil || v != CreditCapFrames {
			failf("SD_CREDIT_CAP = %d (%v), the contract says %d", v, err, CreditCapFrames)
		}
		if v, err := p.Value("SD_REASM_QID"); err != nil || v != ReasmQID {
			failf("SD_REASM_QID = %d (%v), the contract says %d", v, err, ReasmQID)
		}
	}
	return errs
}

// ---- tests ----

func loadPrograms(t *testing.T) map[string]*p4check.Program {
	return p4check.LoadAll(t, MainFile, ProgramFA, ProgramFE)
}

var reportAll = p4check.Report

func TestProgramsDeclareTheContractNames(t *testing.T) {
	reportAll(t, p4check.CheckDeclarations(loadPrograms(t), Declarations()))
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
		reportAll(t, p4check.CheckWiring(MainFile(name), p))
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
			if d.Kind == KindRegister && d.Program == ProgramFE && d.QualifiedName() == RegFCIThreshold {
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
			if d.Kind == KindAction && d.Name == ActionToVOQ && d.Table == TableVOQ {
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
			if errs := p4check.CheckDeclarations(progs, decls); len(errs) == 0 {
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
		{"reassembly register", ProgramFA, ") reg_reasm_drops;", ") reg_reasm_lost;", false},
		{"key", ProgramFE, `hdr.sd.dst_fa : exact @name("dst_fa");`, `hdr.sd.dst_fa : exact @name("fa");`, false},
		{"field width", ProgramFA, "bit<32> seq;", "bit<24> seq;", true},
		{"field order", ProgramFE, "fa_id_t dst_fa;\n    bit<16> dst_port;", "bit<16> dst_port;\n    fa_id_t dst_fa;", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, err := p4check.Load(MainFile(c.prog))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(src.Text, c.old) != 1 {
				t.Fatalf("%q occurs %d times, want 1", c.old, strings.Count(src.Text, c.old))
			}
			src.Text = strings.Replace(src.Text, c.old, c.new, 1)
			p, err := p4check.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			var errs []error
			if c.layout {
				errs = checkLayout(p)
			} else {
				progs := loadPrograms(t)
				progs[c.prog] = p
				errs = p4check.CheckDeclarations(progs, Declarations())
			}
			if len(errs) == 0 {
				t.Errorf("replacing %q with %q went unnoticed", c.old, c.new)
			}
		})
	}
	src, err := p4check.Load(MainFile(ProgramFE))
	if err != nil {
		t.Fatal(err)
	}
	src.Defines["SD_ETHERTYPE"] = "0x88B5"
	p, err := p4check.Parse(src)
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
	n, errs, err := p4check.CheckContractNames("contract.go", Declarations())
	if err != nil {
		t.Fatal(err)
	}
	reportAll(t, errs)
	if n != 28 {
		t.Errorf("found %d name constants in contract.go, want 28", n)
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
