package timestamp

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"testbed/p4/internal/p4check"
)

// The P4 sources are compiled by the lab's SDE, not here. These tests read
// them far enough to hold them to this package's contract: every name the
// control plane uses is declared, with that name, as that kind of object,
// in the control and program the contract says; and the header layout is
// the one the contract describes. A rename on either side fails them.

// checkLayout holds the program's stamp to the contract's layout.
func checkLayout(p *p4check.Program) []error {
	var errs []error
	failf := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	bits := func(header string) map[string]int {
		fields, ok := p.Headers[header]
		if !ok {
			failf("no header %s", header)
			return nil
		}
		got := map[string]int{}
		total := 0
		order := []string{}
		for _, f := range fields {
			w, err := p.Width(f.Type)
			if err != nil {
				failf("%s.%s: %v", header, f.Name, err)
			}
			got[f.Name] = w
			total += w
			order = append(order, f.Name)
		}
		got[""] = total
		got["order:"+strings.Join(order, ",")] = 1
		return got
	}
	if ts := bits("ts_h"); ts != nil {
		if ts[""] != HeaderBytes*8 {
			failf("ts_h is %d bits, the contract says HeaderBytes = %d", ts[""], HeaderBytes)
		}
		if ts["order:seq,hops,max_hops"] != 1 || ts["seq"] != 16 || ts["hops"] != 8 || ts["max_hops"] != 8 {
			failf("ts_h is not seq:16, hops:8, max_hops:8 in that order: %v", ts)
		}
	}
	if rec := bits("ts_rec_h"); rec != nil {
		if rec[""] != RecordBytes*8 {
			failf("ts_rec_h is %d bits, the contract says RecordBytes = %d", rec[""], RecordBytes)
		}
		if rec["order:rx_ts,eg_ts"] != 1 || rec["rx_ts"] != 32 || rec["eg_ts"] != 32 {
			failf("ts_rec_h is not rx_ts:32, eg_ts:32 in that order: %v", rec)
		}
	}
	if eth := bits("ethernet_h"); eth != nil && eth[""] != EthernetBytes*8 {
		failf("ethernet_h is %d bits, want %d", eth[""], EthernetBytes*8)
	}
	for name, want := range map[string]int64{
		"TS_ETHERTYPE": EtherType,
		"TS_MAX_HOPS":  MaxHops,
		"TS_MAX_PORTS": PortCount,
	} {
		if v, err := p.Value(name); err != nil || v != want {
			failf("%s = %d (%v), the contract says %d", name, v, err, want)
		}
	}
	// The headers struct carries exactly MaxHops records.
	found := false
	for _, f := range p.Structs["ts_headers_t"] {
		if f.Name == "rec" {
			found = true
			if want := "ts_rec_h[TS_MAX_HOPS]"; f.Type != want {
				failf("ts_headers_t.rec is %q, want %q", f.Type, want)
			}
		}
	}
	if !found {
		failf("ts_headers_t has no rec stack")
	}
	return errs
}

// ---- tests ----

func loadProgram(t *testing.T) map[string]*p4check.Program {
	return p4check.LoadAll(t, MainFile, Program)
}

var reportAll = p4check.Report

func TestProgramDeclaresTheContractNames(t *testing.T) {
	reportAll(t, p4check.CheckDeclarations(loadProgram(t), Declarations()))
}

func TestStampLayoutMatchesTheContract(t *testing.T) {
	reportAll(t, checkLayout(loadProgram(t)[Program]))
}

func TestProgramIsWired(t *testing.T) {
	reportAll(t, p4check.CheckWiring(MainFile(Program), loadProgram(t)[Program]))
}

// Every hop slot is written on both sides: the program's if-chains index
// the record stack by constant, one branch per record.
func TestEveryRecordIsStamped(t *testing.T) {
	p := loadProgram(t)[Program]
	for ctl, field := range map[string]string{ControlIngress: "rx_ts", ControlEgress: "eg_ts"} {
		body := p4check.Join(p.Controls[ctl].Body)
		for k := 0; k <= MaxHops; k++ {
			w := fmt.Sprintf("hdr.rec[%d].%s=", k, field)
			has := strings.Contains(body, w)
			if has != (k < MaxHops) {
				t.Errorf("%s: writes record %d's %s: %v, want %v", ctl, k, field, has, k < MaxHops)
			}
		}
	}
	for _, parser := range []string{"SwitchIngressParser", "SwitchEgressParser"} {
		body := p4check.Join(p.Parsers[parser].Body)
		if n := strings.Count(body, "pkt.extract(hdr.rec["); n != MaxHops {
			t.Errorf("%s extracts %d records, want %d", parser, n, MaxHops)
		}
	}
}

// A name changed on the contract side is caught.
func TestContractRenameIsCaught(t *testing.T) {
	progs := loadProgram(t)
	for name, mutate := range map[string]func(*Declaration) bool{
		"table renamed": func(d *Declaration) bool {
			if d.Kind == KindTable {
				d.Name = "chain"
				return true
			}
			return false
		},
		"register moved": func(d *Declaration) bool {
			if d.Kind == KindRegister && d.QualifiedName() == RegRxTs {
				d.Control = ControlEgress
				return true
			}
			return false
		},
		"parameter renamed": func(d *Declaration) bool {
			if d.Kind == KindAction && d.Name == ActionForward {
				d.Params = []string{"egress_port"}
				return true
			}
			return false
		},
		"key renamed": func(d *Declaration) bool {
			if d.Kind == KindTable {
				d.Keys = []string{"port"}
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
		name, old, new string
		layout         bool
	}{
		{"table", "table snake {", "table chain {", false},
		{"action parameter", "action forward(PortId_t port)", "action forward(PortId_t egress)", false},
		{"register", ") reg_tx_ts;", ") reg_eg_ts;", false},
		{"key", "ig_intr_md.ingress_port : exact;", "ig_intr_md.ingress_mac_tstamp : exact;", false},
		{"record width", "ts32_t eg_ts;", "bit<48> eg_ts;", true},
		{"field order", "bit<8>  hops;\n    bit<8>  max_hops;", "bit<8>  max_hops;\n    bit<8>  hops;", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, err := p4check.Load(MainFile(Program))
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
				errs = p4check.CheckDeclarations(map[string]*p4check.Program{Program: p}, Declarations())
			}
			if len(errs) == 0 {
				t.Errorf("replacing %q with %q went unnoticed", c.old, c.new)
			}
		})
	}
	src, err := p4check.Load(MainFile(Program))
	if err != nil {
		t.Fatal(err)
	}
	src.Defines["TS_MAX_HOPS"] = "6"
	p, err := p4check.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(checkLayout(p)) == 0 {
		t.Error("TS_MAX_HOPS 6 went unnoticed")
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
	if n != 5 {
		t.Errorf("found %d name constants in contract.go, want 5", n)
	}
}

func TestSourcesEmbedTheProgram(t *testing.T) {
	src := Sources()
	onDisk, err := os.ReadFile(MainFile(Program))
	if err != nil {
		t.Fatal(err)
	}
	if string(src[MainFile(Program)]) != string(onDisk) || len(src) != 1 {
		t.Errorf("Sources() holds %d files; %s not the file on disk", len(src), MainFile(Program))
	}
}
