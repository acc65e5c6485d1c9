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
