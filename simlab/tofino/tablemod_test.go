package tofino

import (
	"fmt"
	"testing"
	"time"

	sd "testbed/p4/stardust"
)

// table.mod changes an entry in place and bumps what the Stardust
// dataplane reads; table.get with a key answers the entries that have
// it; both refuse what the protocol says they refuse.
func TestTableModAndKeyedGet(t *testing.T) {
	sw := testSwitch(time.Minute, 1)
	sw.reset(sd.ProgramFA)
	sw.dp = &Dataplane{} // the clock the table ops read; no fibres
	a := dialAgent(t, sw)
	if r := a.send(t, `{"id":1,"op":"auth","args":{"token":"tok-123"}}`); r["ok"] != true {
		t.Fatalf("auth: %v", r)
	}
	spray := `"name":"` + sd.TableSpray + `"`
	for _, line := range []string{
		`{"id":2,"op":"table.add","args":{` + spray + `,"action":"` + sd.ActionToLink + `","key":{"dst_fa":3,"slot":0},"data":{"link":10}}}`,
		`{"id":3,"op":"table.add","args":{` + spray + `,"action":"` + sd.ActionToLink + `","key":{"dst_fa":3,"slot":1},"data":{"link":11}}}`,
		`{"id":4,"op":"table.add","args":{` + spray + `,"action":"` + sd.ActionToLink + `","key":{"dst_fa":4,"slot":0},"data":{"link":12}}}`,
	} {
		if r := a.send(t, line); r["ok"] != true {
			t.Fatalf("%s: %v", line, r)
		}
	}
	ver := sw.sdVer
	if r := a.send(t, `{"id":5,"op":"table.mod","args":{`+spray+`,"action":"`+sd.ActionDrop+`","key":{"dst_fa":3,"slot":1}}}`); r["ok"] != true {
		t.Fatalf("mod: %v", r)
	}
	if sw.sdVer == ver {
		t.Error("table.mod did not mark a change for the dataplane")
	}
	es := sw.tables[sd.TableSpray]
	if len(es) != 3 || es[1].Action != sd.ActionDrop || len(es[1].Data) != 0 || es[1].Key[sd.KeySlot] != 1 {
		t.Errorf("after mod: %+v, want slot 1 dropping, in its place", es)
	}
	r := a.send(t, `{"id":6,"op":"table.get","args":{`+spray+`,"key":{"dst_fa":3}}}`)
	res, _ := r["result"].(map[string]any)
	if got, _ := res["entries"].([]any); len(got) != 2 {
		t.Errorf("FA 3's entries: %v", r)
	}
	r = a.send(t, `{"id":7,"op":"table.get","args":{`+spray+`,"key":{"dst_fa":4,"slot":0}}}`)
	res, _ = r["result"].(map[string]any)
	if got, _ := res["entries"].([]any); len(got) != 1 {
		t.Errorf("FA 4 slot 0: %v", r)
	}
	r = a.send(t, `{"id":8,"op":"table.get","args":{`+spray+`,"key":null}}`)
	res, _ = r["result"].(map[string]any)
	if got, _ := res["entries"].([]any); len(got) != 3 {
		t.Errorf("a null key reads the table: %v", r)
	}
	for _, c := range []struct{ op, args, kind string }{
		{"table.mod", spray + `,"action":"` + sd.ActionDrop + `","key":{"dst_fa":9,"slot":0}`, "not_found"},
		{"table.mod", spray + `,"action":"to_nowhere","key":{"dst_fa":3,"slot":0}`, "not_found"},
		{"table.mod", spray + `,"key":{"dst_fa":3,"slot":0}`, "bad_request"},
		{"table.mod", spray + `,"action":"` + sd.ActionToLink + `","key":{"dst_fa":"x"}`, "bad_request"},
		{"table.mod", `"name":"SwitchIngress.nope","action":"drop","key":{"dst_fa":3}`, "not_found"},
		{"table.get", spray + `,"key":{}`, "bad_request"},
		{"table.get", spray + `,"key":[1]`, "bad_request"},
	} {
		if r := a.send(t, `{"id":9,"op":"`+c.op+`","args":{`+c.args+`}}`); errKind(r) != c.kind {
			t.Errorf("%s %s: %v, want %s", c.op, c.args, r, c.kind)
		}
	}
	if es := sw.tables[sd.TableSpray]; len(es) != 3 || es[0].Data[sd.ParamLink] != 10 {
		t.Errorf("the refused requests changed the table: %+v", es)
	}
}

// port.stat with names answers just those counters, with the values of
// the whole read; a name the port does not count, or an empty list, is
// refused (as the real agent, agent/PROTOCOL.md).
func TestPortStatNames(t *testing.T) {
	b := newSDBench(t, 2, 2, 1, 2)
	port := sdFabricPort(0)
	all := b.ok(b.fas[0], "port.stat", fmt.Sprintf(`{"dev_port":%d}`, port))["counters"].(map[string]any)
	some := b.ok(b.fas[0], "port.stat", fmt.Sprintf(`{"dev_port":%d,"names":["$FramesReceivedAll","$FramesTransmittedOK"]}`, port))["counters"].(map[string]any)
	if len(all) < 10 || len(some) != 2 || some["$FramesReceivedAll"] != all["$FramesReceivedAll"] || some["$FramesTransmittedOK"] != all["$FramesTransmittedOK"] {
		t.Errorf("named %v, of %d counters", some, len(all))
	}
	for _, names := range []string{`["$NoSuchCounter"]`, `[]`, `"$FramesReceivedAll"`} {
		if r := b.req(b.fas[0], "port.stat", fmt.Sprintf(`{"dev_port":%d,"names":%s}`, port, names)); errKind(r) != "bad_request" {
			t.Errorf("names %s: %v, want bad_request", names, r)
		}
	}
}
