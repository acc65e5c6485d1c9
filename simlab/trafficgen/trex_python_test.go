package trafficgen_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"testbed/simlab/physics"
	"testbed/simlab/trafficgen"
	"testbed/simlab/world"
)

// pythonWithZMQ finds a python3 that imports zmq (Debian's python3-zmq is
// installed for /usr/bin/python3, which another python3 on PATH may hide).
func pythonWithZMQ(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		tried = append(tried, path)
		if exec.Command(path, "-c", "import zmq").Run() == nil {
			return path
		}
	}
	t.Skipf("no python3 with pyzmq (tried %v): install python3-zmq (.ci/run does) to run the TRex client exchange", tried)
	return ""
}

// TRex's own client, as it speaks on the wire (testdata/trex_stl_exchange.py
// sends what trex-core's JsonRpcClient and STL port code send): one
// single-burst stream with flow statistics from port 0 to port 1 over a
// modelled 25G fibre, its counters, and the server's errors for a second
// owner, a stream without its isg and a method it does not have.
func TestTRexServerAnswersTheTRexClient(t *testing.T) {
	py := pythonWithZMQ(t)
	w := world.New(4)
	tr, _ := physics.TransceiverByName("25GBASE-SR")
	fec, _ := physics.FECByName("none")
	v := w.NewVOA("voa1", "Keysight Technologies", "N7764A", "SIM1", "1.0", 1, 0, 60, 1.5, 1e6)
	w.NewFibre("l25g", tr, fec, 1.0, 0.5, v.Channels[0])
	srv := trafficgen.NewTRexServer(w, []trafficgen.TRexPort{{TxFibre: "l25g"}, {RxFibre: "l25g"}}, nil, trafficgen.TRexOptions{TimeScale: 1e4})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })

	run := func(total int) map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "trex_stl_exchange.py"), srv.Addr(), strconv.Itoa(total))
		out, err := cmd.Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("trex_stl_exchange.py: %v\n%s%s", err, out, stderr)
		}
		var res map[string]any
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		return res
	}
	res := run(200000)
	num := func(k string) float64 { f, _ := res[k].(float64); return f }
	if res["version"] == "" || num("port_count") != 2 || num("speed_gbps") != 25 {
		t.Errorf("version and system info: %v", res)
	}
	if m, _ := res["missing_cmds"].([]any); len(m) != 0 {
		t.Errorf("supported commands lack %v", m)
	}
	if s, _ := res["states_before"].([]any); len(s) != 2 || s[0] != "IDLE" {
		t.Errorf("port states before %v", s)
	}
	if num("pg_tx") != 200000 || num("pg_rx") != 200000 || num("pg_tx_bytes") != 200000*64 {
		t.Errorf("flow stats at 0 dB: %v", res)
	}
	if num("opackets") != 200000 || num("ipackets") != 200000 {
		t.Errorf("port stats at 0 dB: %v", res)
	}
	errIs := func(key string, code float64, text string) {
		e, _ := res[key].(map[string]any)
		if e == nil || e["code"] != code || !strings.Contains(e["error"].(string), text) {
			t.Errorf("%s: %v, want code %v and %q", key, res[key], code, text)
		}
	}
	errIs("second_owner", -32000, "already owned by 'trex-client'")
	errIs("missing_isg", -32602, "'isg' is missing")
	errIs("unknown_method", -32601, "Method no_such_method not registered")

	// Past the 25G no-FEC cliff the client sees the optics model's losses;
	// its counters are the packet group's afresh (a new stream, a new
	// version of pg 7) while the port counters run on.
	v.Channels[0].SetAttenuation(8.5)
	res = run(200000)
	if num("pg_tx") != 200000 || num("pg_rx") >= 200000 || num("pg_rx") == 0 {
		t.Errorf("flow stats at 8.5 dB: %v", res)
	}
	if num("opackets") != 400000 || num("ipackets") != 200000+num("pg_rx") {
		t.Errorf("port stats after two runs: %v", res)
	}
}
