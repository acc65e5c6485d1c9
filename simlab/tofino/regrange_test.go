package tofino

import (
	"testing"
	"time"

	sd "testbed/p4/stardust"
)

// reg.range answers what reg.set wrote, index by index, and refuses a
// range the register does not hold.
func TestRegRange(t *testing.T) {
	sw := testSwitch(time.Minute, 1)
	sw.reset(sd.ProgramFA)
	a := dialAgent(t, sw)
	if r := a.send(t, `{"id":1,"op":"auth","args":{"token":"tok-123"}}`); r["ok"] != true {
		t.Fatalf("auth: %v", r)
	}
	sw.regs[sd.RegLatHist][3] = 11
	sw.regs[sd.RegLatHist][511] = 4
	r := a.send(t, `{"id":2,"op":"reg.range","args":{"name":"`+sd.RegLatHist+`","from":2,"count":3}}`)
	res, _ := r["result"].(map[string]any)
	if v, _ := res["values"].([]any); len(v) != 3 || v[0] != 0.0 || v[1] != 11.0 || v[2] != 0.0 {
		t.Fatalf("range 2..4: %v", r)
	}
	r = a.send(t, `{"id":3,"op":"reg.range","args":{"name":"`+sd.RegLatHist+`","from":0,"count":512}}`)
	res, _ = r["result"].(map[string]any)
	if v, _ := res["values"].([]any); len(v) != 512 || v[511] != 4.0 {
		t.Fatalf("the whole histogram: %v", r["error"])
	}
	// reg_credit has 4096 entries (SD_MAX_VOQS): the whole of it at once.
	r = a.send(t, `{"id":5,"op":"reg.range","args":{"name":"`+sd.RegCredit+`","from":0,"count":4096}}`)
	res, _ = r["result"].(map[string]any)
	if v, _ := res["values"].([]any); len(v) != 4096 {
		t.Fatalf("reg_credit whole: %v", r["error"])
	}
	for _, c := range []struct{ args, kind string }{
		{`{"name":"` + sd.RegLatHist + `","from":500,"count":13}`, "bad_request"},
		{`{"name":"` + sd.RegSeqOut + `","from":200,"count":100}`, "bad_request"}, // 256 entries (SD_MAX_FAS)
		{`{"name":"` + sd.RegLatHist + `","from":0,"count":4097}`, "bad_request"},
		{`{"name":"` + sd.RegLatHist + `","from":-1,"count":1}`, "bad_request"},
		{`{"name":"` + sd.RegLatHist + `","count":1}`, "bad_request"},
		{`{"name":"SwitchIngress.reg_nope","from":0,"count":1}`, "not_found"},
	} {
		if r := a.send(t, `{"id":4,"op":"reg.range","args":`+c.args+`}`); errKind(r) != c.kind {
			t.Errorf("%s: %v, want %s", c.args, r, c.kind)
		}
	}
}
