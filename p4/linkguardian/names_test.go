package linkguardian

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"testbed/p4/internal/p4check"
)

// The P4 sources are compiled by the lab's SDE, not here. These tests read
// them far enough to hold them to this package's contract: every name the
// control plane uses is declared, with that name, as that kind of object,
// in the control and program the contract says; and the header layout is
// the one the contract describes. A rename on either side fails them.

// checkLayout holds the shared header file to the contract's layout.
func checkLayout(p *p4check.Program) []error {
	var errs []error
	failf := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if w, err := p.Width("seq_no_t"); err != nil || w != SeqNoBits {
		failf("seq_no_t is %d bits (%v), the contract says SeqNoBits = %d", w, err, SeqNoBits)
	}
	lg, ok := p.Headers["lg_h"]
	if !ok {
		failf("no header lg_h")
	} else {
		total := 0
		got := map[string]int{}
		for _, f := range lg {
			w, err := p.Width(f.Type)
			if err != nil {
				failf("lg_h.%s: %v", f.Name, err)
			}
			total += w
			got[f.Name] = w
		}
		if total != HeaderBytes*8 {
			failf("lg_h is %d bits, the contract says HeaderBytes = %d", total, HeaderBytes)
		}
		for name, want := range map[string]int{"seq_no": SeqNoBits, "era": 1, "pkt_type": 3} {
			if got[name] != want {
				failf("lg_h.%s is %d bits, want %d", name, got[name], want)
			}
		}
	}
	// Every header is whole bytes; the resubmit header is Tofino 1's 64 bits.
	for name, fields := range p.Headers {
		total := 0
		for _, f := range fields {
			w, err := p.Width(f.Type)
			if err != nil {
				failf("%s.%s: %v", name, f.Name, err)
			}
			total += w
		}
		if total%8 != 0 {
			failf("header %s is %d bits, not whole bytes", name, total)
		}
		if name == "lg_resubmit_h" && total != 64 {
			failf("header lg_resubmit_h is %d bits, Tofino 1 resubmits 64", total)
		}
	}
	for name, want := range map[string]int64{
		"LG_TYPE_ORIGINAL":          PktOriginal,
		"LG_TYPE_RETRANSMITTED":     PktRetransmitted,
		"LG_TYPE_DUMMY":             PktDummy,
		"LG_TYPE_ACK":               PktAck,
		"LG_TYPE_LOSS_NOTIFICATION": PktLossNotification,
		"LG_MAX_HOLE_TRACK":         MaxHoleTrack,
		"LG_SEQ_RANGE":              SeqNoRange,
		"LG_RECIRC_DEV_PORT":        RecircPort,
		"LG_QID_TX_BUFFER":          QueueTxBuffer,
		"LG_QID_REORDER":            QueueReorder,
	} {
		if v, err := p.Value(name); err != nil || v != want {
			failf("%s = %d (%v), the contract says %d", name, v, err, want)
		}
	}
	return errs
}

// ---- tests ----

func loadPrograms(t *testing.T) map[string]*p4check.Program {
	return p4check.LoadAll(t, func(name string) string { return name + ".p4" }, ProgramSender, ProgramReceiver)
}

var reportAll = p4check.Report

func TestProgramsDeclareTheContractNames(t *testing.T) {
	progs := loadPrograms(t)
	decls := Declarations()
	if len(decls) == 0 {
		t.Fatal("no declarations")
	}
	reportAll(t, p4check.CheckDeclarations(progs, decls))
}

func TestHeaderLayoutMatchesTheContract(t *testing.T) {
	for name, p := range loadPrograms(t) {
		for _, err := range checkLayout(p) {
			t.Errorf("%s.p4 (common/headers.p4): %v", name, err)
		}
	}
}

func TestProgramsAreWired(t *testing.T) {
	for name, p := range loadPrograms(t) {
		reportAll(t, p4check.CheckWiring(name+".p4", p))
	}
}

// The sender tracks MaxHoleTrack consecutive losses in as many 1-bit
// registers (§3.5), and draws DropRandomBits-bit random numbers.
func TestSenderHoleRegistersAndRandomWidth(t *testing.T) {
	p := loadPrograms(t)[ProgramSender]
	ig := p.Controls[ControlIngress]
	if ig == nil {
		t.Fatal("sender has no ingress control")
	}
	for k := 1; k <= MaxHoleTrack+1; k++ {
		is := ig.Instances[fmt.Sprintf("reg_retx_req_%d", k)]
		declared := len(is) == 1 && is[0].Type == "Register"
		if want := k <= MaxHoleTrack; declared != want {
			t.Errorf("reg_retx_req_%d declared %v, want %v (MaxHoleTrack = %d)", k, declared, want, MaxHoleTrack)
		}
		if declared {
			if args := p4check.SplitTop(is[0].TypeArgs, ","); len(args) != 2 || p4check.Join(args[0]) != "bit<1>" {
				t.Errorf("reg_retx_req_%d holds %s, want bit<1>", k, p4check.Join(is[0].TypeArgs))
			}
		}
	}
	n := 0
	for _, is := range ig.Instances {
		for _, in := range is {
			if in.Type != "Random" {
				continue
			}
			n++
			if w, err := p.Width(p4check.Join(in.TypeArgs)); err != nil || w != DropRandomBits {
				t.Errorf("Random<%s> is %d bits (%v), want %d", p4check.Join(in.TypeArgs), w, err, DropRandomBits)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d Random instances in the sender's ingress, want 1", n)
	}
	if DropTableEntries(1) != 1<<DropRandomBits {
		t.Errorf("DropTableEntries(1) = %d, want 2^%d", DropTableEntries(1), DropRandomBits)
	}
}

// A name changed on the contract side is caught.
func TestContractRenameIsCaught(t *testing.T) {
	progs := loadPrograms(t)
	mutations := map[string]func(*Declaration) bool{
		"table renamed": func(d *Declaration) bool {
			if d.Kind == KindTable && d.Name == "link_protect" {
				d.Name = "link_guard"
				return true
			}
			return false
		},
		"register moved to the other control": func(d *Declaration) bool {
			if d.Kind == KindRegister && d.Name == RegSeqNo {
				d.Control = ControlIngress
				return true
			}
			return false
		},
		"register in the other program": func(d *Declaration) bool {
			if d.Kind == KindRegister && d.QualifiedName() == RegPauseThreshold {
				d.Program = ProgramSender
				return true
			}
			return false
		},
		"action parameter renamed": func(d *Declaration) bool {
			if d.Kind == KindAction && d.Name == ActionProtect {
				d.Params = []string{ParamDummyPktMaxCount, "mode"}
				return true
			}
			return false
		},
		"action of another table": func(d *Declaration) bool {
			if d.Kind == KindAction && d.Name == ActionRetxCopies {
				d.Table = TableEmulateDrop
				return true
			}
			return false
		},
		"drop counter moved to the egress": func(d *Declaration) bool {
			if d.Kind == KindRegister && d.QualifiedName() == RegEmulatedDrops {
				d.Control = ControlEgress
				return true
			}
			return false
		},
		"key renamed": func(d *Declaration) bool {
			if d.Kind == KindTable && d.Name == "emulate_random_pkt_drop" {
				d.Keys = []string{"random"}
				return true
			}
			return false
		},
	}
	for name, mutate := range mutations {
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
			if errs := p4check.CheckDeclarations(progs, decls); len(errs) != 1 {
				t.Errorf("%d errors, want 1: %v", len(errs), errs)
			}
		})
	}
}

// A name changed on the P4 side is caught; so is a change of layout.
func TestSourceRenameIsCaught(t *testing.T) {
	for _, c := range []struct {
		name, program, old, new string
		layout                  bool
	}{
		{"table", ProgramSender, "table link_protect {", "table link_guard {", false},
		{"action", ProgramSender, "action set_retx_copies(", "action set_copies(", false},
		{"action parameter", ProgramSender, "bit<1> blocking_mode)", "bit<1> ordered)", false},
		{"register", ProgramReceiver, ") reg_ack_timeout_count;", ") reg_timeouts;", false},
		{"register", ProgramSender, ") reg_era;", ") reg_epoch;", false},
		{"drop counter", ProgramSender, ") emulated_drops;", ") emulated_losses;", false},
		{"key", ProgramSender, "ig_md.rand_num : exact;", "ig_md.rnd : exact;", false},
		{"seqNo width", ProgramReceiver, "typedef bit<16> seq_no_t;", "typedef bit<15> seq_no_t;", true},
		{"packet type", ProgramSender, "LG_TYPE_ACK               = 3;", "LG_TYPE_ACK               = 5;", true},
		{"recirculation port", ProgramSender, "#define LG_RECIRC_PORT 196", "#define LG_RECIRC_PORT 68", true},
	} {
		t.Run(c.name+" in "+c.program, func(t *testing.T) {
			src, err := p4check.Load(c.program + ".p4")
			if err != nil {
				t.Fatal(err)
			}
			// The #define is only in the raw text: apply it there.
			if strings.HasPrefix(c.old, "#define") {
				_, v, _ := strings.Cut(strings.TrimPrefix(c.new, "#define "), " ")
				k := strings.Fields(c.old)[1]
				if _, ok := src.Defines[k]; !ok {
					t.Fatalf("no #define %s", k)
				}
				src.Defines[k] = v
			} else {
				if strings.Count(src.Text, c.old) != 1 {
					t.Fatalf("%q occurs %d times in %s.p4, want 1", c.old, strings.Count(src.Text, c.old), c.program)
				}
				src.Text = strings.Replace(src.Text, c.old, c.new, 1)
			}
			p, err := p4check.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			progs := loadPrograms(t)
			progs[c.program] = p
			var errs []error
			if c.layout {
				errs = checkLayout(p)
			} else {
				errs = p4check.CheckDeclarations(progs, Declarations())
			}
			if len(errs) == 0 {
				t.Errorf("replacing %q with %q went unnoticed", c.old, c.new)
			}
		})
	}
}

// The reader finds declarations by structure, not by text: a name in a
// comment, inside an action's body or in another control does not count.
func TestReaderIsStructural(t *testing.T) {
	src := p4check.Source{Defines: map[string]string{}}
	text, err := p4check.StripComments(`
/* table link_protect { } */
// action protect(bit<16> dummy_pkt_max_count, bit<1> blocking_mode) { }
control SwitchIngress(inout h hdr) {
    Register<bit<16>, bit<7>>(128, 0) reg_seq_no;
    action protect(bit<16> dummy_pkt_max_count, bit<1> blocking_mode) { }
    table link_protect {
        key = { eg_intr_md.egress_port : exact; }
        actions = { protect; }
    }
    apply { link_protect.apply(); }
}
control SwitchEgress(inout h hdr) {
    action unrelated() { bit<8> reg_era; }
    RegisterAction<bit<16>, bit<7>, bit<16>>(reg_elsewhere) take = {
        void apply(inout bit<16> v, out bit<16> rv) { rv = v; }
    };
    table t {
        key = { eg_intr_md.egress_port[7:0] : exact; hdr.x : ternary @name("custom"); }
        actions = { @defaultonly NoAction; }
    }
    apply { if (hdr.a.isValid()) { t.apply(); nothere.apply(); } }
}
`)
	if err != nil {
		t.Fatal(err)
	}
	src.Text = text
	p, err := p4check.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	progs := map[string]*p4check.Program{ProgramSender: p}
	errs := p4check.CheckDeclarations(progs, Declarations()[:4])
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	got := strings.Join(msgs, "\n")
	// link_protect, protect and reg_seq_no are in SwitchIngress here, not
	// SwitchEgress; reg_era exists only as a local inside an action.
	for _, want := range []string{"table SwitchEgress.link_protect:", "action SwitchEgress.protect:",
		"register SwitchEgress.reg_seq_no:", "register SwitchEgress.reg_era:"} {
		if !strings.Contains(got, want) {
			t.Errorf("no error for %s; got:\n%s", want, got)
		}
	}
	ig := p.Controls[ControlIngress]
	if ig == nil || len(ig.Tables["link_protect"]) != 1 || len(ig.Actions["protect"]) != 1 {
		t.Fatalf("ingress declarations not found: %+v", ig)
	}
	if k := ig.Tables["link_protect"][0].Keys; !slices.Equal(k, []string{"egress_port"}) {
		t.Errorf("keys %q", k)
	}
	if k := p.Controls[ControlEgress].Tables["t"][0].Keys; !slices.Equal(k, []string{"egress_port_7_0_", "custom"}) {
		t.Errorf("keys %q", k)
	}
	wiring := fmt.Sprint(p4check.CheckWiring("snippet", p))
	for _, want := range []string{"no Pipeline", "RegisterAction take uses reg_elsewhere", "nothere.apply(): no table"} {
		if !strings.Contains(wiring, want) {
			t.Errorf("wiring: no %q in %s", want, wiring)
		}
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
	if n < 10 {
		t.Errorf("found %d name constants in contract.go; the reader has lost them", n)
	}
}
