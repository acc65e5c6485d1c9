package p4check

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"testbed/p4/internal/decl"
)

func TestReaderRejectsUnbalancedSource(t *testing.T) {
	for _, text := range []string{
		"control SwitchEgress(inout h hdr) { action a() { }",
		"control SwitchEgress(inout h hdr) { table t { key = { x : exact; } }) }",
		"header h { bit<8> a; ",
	} {
		if _, err := Parse(Source{Text: text, Defines: map[string]string{}}); err == nil {
			t.Errorf("accepted %q", text)
		}
	}
	if _, err := StripComments("/* never closed"); err == nil {
		t.Error("accepted an unterminated comment")
	}
}

// Member chains from a block's parameters must name declared fields.
func TestReferencesResolve(t *testing.T) {
	text := `
header eth_h { bit<48> dst; bit<16> type; }
header tag_h { bit<8> kind; }
struct hdrs_t { eth_h eth; }
struct meta_t { tag_h tag; bit<8> n; }
control C(inout hdrs_t hdr, inout meta_t md, in ingress_intrinsic_metadata_t ig_intr_md) {
    action a() {
        hdr.eth.type = 1;
        md.tag.kind = md.n;
        md.tag.setValid();
        md.n = ig_intr_md.ingress_port[7:0];
        hdr.eth.typ = 2;
        md.tag.knd = 3;
    }
    apply { if (hdr.ether.isValid()) { a(); } }
}
`
	p, err := Parse(Source{Text: text, Defines: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	errs := p.CheckReferences(p.Controls["C"])
	got := fmt.Sprint(errs)
	for _, want := range []string{"hdr.eth.typ: eth_h has no member typ", "md.tag.knd: tag_h has no member knd",
		"hdr.ether: hdrs_t has no member ether"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in %s", want, got)
		}
	}
	if len(errs) != 3 {
		t.Errorf("%d errors, want 3: %v", len(errs), errs)
	}
}

// A contract constant missing from the declarations is reported, and so is
// one that is not a string literal.
func TestContractNamesAreChecked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "contract.go")
	src := "package c\n\nconst (\n\tTableT = \"SwitchIngress.t\"\n\tRegR = \"reg_r\"\n\tActionA = \"a\" + \"b\"\n\tOther = \"x\"\n)\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	decls := []decl.Declaration{{Program: "p", Control: "SwitchIngress", Kind: decl.KindTable, Name: "t"}}
	n, errs, err := CheckContractNames(path, decls)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(errs)
	for _, want := range []string{`contract.go's RegR = "reg_r" is not in Declarations()`, "ActionA: not a string literal"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in %s", want, got)
		}
	}
	if n != 3 || len(errs) != 2 {
		t.Errorf("%d names, %d errors, want 3 and 2: %v", n, len(errs), errs)
	}
}

// CheckWiring lists a program's errors in the same order every time: the
// pipeline's, then block by block in name order, each block's tables,
// actions and instances in name order (they are kept in maps, which Go
// walks in a different order each time).
func TestWiringErrorsInNameOrder(t *testing.T) {
	var text strings.Builder
	text.WriteString("header h_t { bit<8> a; }\nstruct hdrs_t { h_t h; }\n")
	var want []string
	for _, c := range []string{"Alpha", "Bravo", "Charlie", "Delta", "Echo"} {
		fmt.Fprintf(&text, "control %s(inout hdrs_t hdr) {\n", c)
		for _, a := range []string{"a1", "a2", "a3"} {
			fmt.Fprintf(&text, "    action %s() { }\n    action %s() { }\n", a, a)
		}
		for _, tb := range []string{"t1", "t2", "t3", "t4"} {
			fmt.Fprintf(&text, "    table %s { key = { hdr.h.a : exact; } actions = { a1; missing_%s; } }\n", tb, tb)
			want = append(want, fmt.Sprintf("prog: %s: table %s lists undeclared action missing_%s", c, tb, tb))
		}
		for _, a := range []string{"a1", "a2", "a3"} {
			want = append(want, fmt.Sprintf("prog: %s: action %s declared 2 times", c, a))
		}
		fmt.Fprintf(&text, "    apply { hdr.h.b = 1; }\n}\n")
	}
	// References are checked after every block's declarations.
	for _, c := range []string{"Alpha", "Bravo", "Charlie", "Delta", "Echo"} {
		want = append(want, fmt.Sprintf("prog: %s: ", c))
	}
	p, err := Parse(Source{Text: text.String(), Defines: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	for run := range 5 {
		var got []string
		for _, err := range CheckWiring("prog", p) {
			got = append(got, err.Error())
		}
		// The pipeline's two errors first (this program has neither a
		// Pipeline nor a Switch).
		if len(got) != 2+len(want) || got[0] != "prog: no Pipeline named pipe" || got[1] != "prog: no Switch(pipe) main" {
			t.Fatalf("run %d: %d errors, want %d beginning with the pipeline's:\n%s", run, len(got), 2+len(want), strings.Join(got, "\n"))
		}
		for i, w := range want {
			if g := got[2+i]; g != w && !(strings.HasSuffix(w, ": ") && strings.HasPrefix(g, w) && strings.Contains(g, "has no member b")) {
				t.Fatalf("run %d: error %d is %q, want %q; in order:\n%s", run, 2+i, g, w, strings.Join(got, "\n"))
			}
		}
	}
}
