package tofino

import (
	"archive/tar"
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"testbed/p4/ecmp"
	"testbed/simlab/world"
)

// execOK runs one of the driver's shell operations on sw.
func execOK(t *testing.T, sw *Tofino, cmd string, stdin []byte) string {
	t.Helper()
	var out, errb bytes.Buffer
	if rc := sw.exec(t.Context(), cmd, bytes.NewReader(stdin), &out, &errb); rc != 0 {
		t.Fatalf("%s: rc %d: %s", firstLineOf(cmd), rc, errb.String())
	}
	return out.String()
}

// ecmp is built and started as the driver does it (upload, bf-p4c,
// run_switchd.sh -p ecmp); the switch then answers for the contract's
// tables, actions and registers, and runs a generator application with a
// packet buffer at its period, below line rate.
func TestECMPProgramOnTheSwitch(t *testing.T) {
	sw := testSwitch(time.Minute, 1)
	sw.installed = map[string]bool{}
	sw.dp = NewDataplane(world.New(1))
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for name, body := range map[string]string{"ecmp.p4": "#include \"headers.p4\"\n", "headers.p4": "\n"} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	tw.Close()
	execOK(t, sw, "# testbed:p4-upload\ntar -x -C \"$HOME/.testbed/p4/ecmp\"", tb.Bytes())
	execOK(t, sw, "# testbed:p4-build\n# program=ecmp main=ecmp.p4\ndir=\"$HOME/.testbed/p4/ecmp\"", nil)
	execOK(t, sw, "# testbed:switchd-start\ncd \"$SDE\" && ./run_switchd.sh -p ecmp", nil)
	if sw.program != ecmp.Program {
		t.Fatalf("switchd runs %q, want ecmp", sw.program)
	}
	var want []string
	for _, d := range ecmp.Declarations() {
		if d.Kind != "action" {
			want = append(want, d.QualifiedName())
		}
	}
	var got []string
	for r := range sw.regs {
		got = append(got, r)
	}
	for tbl := range sw.tables {
		got = append(got, tbl)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("objects %v, want the contract's %v", got, want)
	}

	a := dialAgent(t, sw)
	n := 0
	send := func(op, args string) map[string]any {
		n++
		return a.send(t, fmt.Sprintf(`{"id":%d,"op":%q,"args":%s}`, n, op, args))
	}
	if r := send("auth", `{"token":"tok-123"}`); r["ok"] != true {
		t.Fatalf("auth: %v", r)
	}
	for _, c := range []struct {
		op, args string
		ok       bool
	}{
		{"table.add", `{"name":"SwitchIngress.whoami","key":{},"action":"set_id","data":{"id":3}}`, true},
		{"table.add", `{"name":"SwitchIngress.gen_flow","key":{"app_id":1,"slot":0},"action":"to_flow","data":{"dst":2,"flow":7}}`, true},
		// Stardust's gen_flow action is not ecmp's.
		{"table.add", `{"name":"SwitchIngress.gen_flow","key":{"app_id":1,"slot":1},"action":"to_voq","data":{}}`, false},
		{"table.add", `{"name":"SwitchIngress.route","key":{"dst":3},"action":"to_host","data":{"port":176}}`, true},
		{"table.add", `{"name":"SwitchIngress.route","key":{"dst":2},"action":"ecmp_hash","data":{}}`, true},
		{"table.add", `{"name":"SwitchIngress.route","key":{"dst":4},"action":"ecmp_spray","data":{}}`, true},
		{"table.add", `{"name":"SwitchIngress.ecmp_slot","key":{"dst":2,"slot":0},"action":"to_link","data":{"link":136}}`, true},
		{"table.add", `{"name":"SwitchIngress.ecmp_slot","key":{"dst":2,"slot":1},"action":"drop","data":{}}`, true},
		{"reg.set", `{"name":"SwitchIngress.reg_flow_sent","index":255,"value":1}`, true},
		{"reg.get", `{"name":"SwitchEgress.reg_flow_last_ns","index":256}`, false},
		{"reg.range", `{"name":"SwitchEgress.reg_flow_rcvd","from":0,"count":256}`, true},
		{"port.add", `{"dev_port":176,"speed":"BF_SPEED_100G","fec":"BF_FEC_TYP_NONE"}`, true},
	} {
		if r := send(c.op, c.args); (r["ok"] == true) != c.ok {
			t.Errorf("%s %s: %v, want ok=%v", c.op, c.args, r, c.ok)
		}
	}
	buf, err := ecmp.Generator{SrcMAC: [6]byte{2, 0, 0, 0, 3, 1}, SrcAddr: ecmp.SourceAddr(3, 1)}.Buffer(1024)
	if err != nil {
		t.Fatal(err)
	}
	// 1020 B every 10 us: far below the 100G line rate, timed by the
	// ecmp dataplane.
	if r := send("pktgen.start", fmt.Sprintf(`{"app_id":1,"egress_port":176,"pkt_len":1020,"timer_ns":10000,"batches":5,"packets_per_batch":2,"buffer_hex":%q}`, hex.EncodeToString(buf))); r["ok"] != true {
		t.Fatalf("pktgen.start: %v", r)
	}
	app := sw.apps[1]
	if app.ecmp == nil || !app.ecmp.ip || app.ecmp.gen.SrcAddr != ecmp.SourceAddr(3, 1) || app.timerNs != 10000 || app.total != 10 {
		t.Fatalf("app %+v, want the buffer's generator timed at 10 us", app)
	}
	bad := strings.Replace(hex.EncodeToString(buf), "0800", "86dd", 1)
	if r := send("pktgen.start", fmt.Sprintf(`{"app_id":2,"egress_port":176,"pkt_len":1020,"timer_ns":10000,"batches":5,"packets_per_batch":2,"buffer_hex":%q}`, bad)); errKind(r) != "bad_request" || !strings.Contains(fmt.Sprint(r), "EtherType") {
		t.Errorf("a buffer that is not IPv4: %v, want bad_request naming the EtherType", r)
	}
}
