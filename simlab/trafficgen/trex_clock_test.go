package trafficgen

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"testbed/simlab/physics"
	"testbed/simlab/world"
)

// trexAt is an emulator on a clock the test moves, port 0 cabled to port 1
// over a 25G fibre.
func trexAt(t *testing.T, scale float64) (*TRexServer, *time.Time, func(method string, params map[string]any) map[string]any) {
	t.Helper()
	w := world.New(3)
	tr, _ := physics.TransceiverByName("25GBASE-SR")
	fec, _ := physics.FECByName("none")
	v := w.NewVOA("voa1", "Keysight Technologies", "N7764A", "SIM1", "1.0", 1, 0, 60, 1.5, 1e6)
	w.NewFibre("l25g", tr, fec, 1.0, 0.5, v.Channels[0])
	s := NewTRexServer(w, []TRexPort{{TxFibre: "l25g"}, {RxFibre: "l25g"}}, nil, TRexOptions{TimeScale: scale})
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	call := func(method string, params map[string]any) map[string]any {
		t.Helper()
		if params == nil {
			params = map[string]any{}
		}
		params["api_h"] = s.apiH
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "1", "method": method, "params": params})
		var rep struct {
			Result json.RawMessage `json:"result"`
			Error  *rpcError       `json:"error"`
		}
		if err := json.Unmarshal(s.handle(req), &rep); err != nil || rep.Error != nil {
			t.Fatalf("%s: %v %+v", method, err, rep.Error)
		}
		var out map[string]any
		json.Unmarshal(rep.Result, &out)
		return out
	}
	return s, &now, call
}

// One clock: a 1000 pps stream given 2 s (start_traffic's duration) sends
// 2000 frames, stopping when the emulator's clock has moved 2 s times the
// time scale's share, and its rate times its time is its count meanwhile.
func TestTRexClock(t *testing.T) {
	for _, scale := range []float64{1, 1000} {
		s, now, call := trexAt(t, scale)
		var handler string
		{
			req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "acquire",
				"params": map[string]any{"api_h": s.apiH, "port_id": 0, "user": "u", "session_id": 1, "force": false}})
			var rep struct {
				Result string `json:"result"`
			}
			json.Unmarshal(s.handle(req), &rep)
			handler = rep.Result
		}
		pkt := make([]byte, 60)
		pkt[12], pkt[13] = 0x08, 0x00
		call("add_stream", map[string]any{"handler": handler, "port_id": 0, "stream_id": 1, "stream": map[string]any{
			"enabled": true, "self_start": true, "isg": 0.0, "flags": 0, "action_count": 0, "next_stream_id": -1,
			"mode":       map[string]any{"type": "continuous", "rate": map[string]any{"type": "pps", "value": 1000}},
			"packet":     map[string]any{"binary": base64.StdEncoding.EncodeToString(pkt), "meta": ""},
			"vm":         map[string]any{"instructions": []any{}, "split_by_var": ""},
			"flow_stats": map[string]any{"enabled": true, "stream_id": 5, "rule_type": "stats"}}})
		call("start_traffic", map[string]any{"handler": handler, "port_id": 0, "mul": map[string]any{"type": "raw", "op": "abs", "value": 1.0},
			"duration": 2.0, "force": false, "core_mask": 1, "start_at_ts": 0})
		tx := func() (float64, string) {
			pg := call("get_pgid_stats", map[string]any{"pgids": []int{5}})["flow_stats"].(map[string]any)["5"].(map[string]any)
			st := call("get_port_status", map[string]any{"port_id": 0})["state"].(string)
			return pg["tp"].(map[string]any)["0"].(float64), st
		}
		*now = now.Add(time.Duration(0.5 / scale * float64(time.Second)))
		if n, st := tx(); n != 500 || st != "TX" {
			t.Errorf("scale %g: after 0.5 simulated s: %v frames, port %s; want 500, TX", scale, n, st)
		}
		*now = now.Add(time.Duration(10 / scale * float64(time.Second)))
		if n, st := tx(); n != 2000 || st != "STREAMS" {
			t.Errorf("scale %g: after the 2 s duration: %v frames, port %s; want 2000, STREAMS", scale, n, st)
		}
	}
}

// A continuous stream at line rate, read after a long simulated time, is
// answered promptly: its blocks grow, so the draws grow with the log of the
// frames sent.
func TestTRexLongContinuousStreamStaysSmall(t *testing.T) {
	s := NewTRexServer(world.New(1), []TRexPort{{}}, nil, TRexOptions{TimeScale: 1e5})
	x := &trexStream{frame: 64, rxPort: -1}
	x.run = &trexRun{fps: 37.2e6, running: true, realAt: time.Unix(0, 0)}
	s.advance(x, time.Unix(3600, 0)) // an hour of real time: 1.3e16 frames
	if x.run.blocks > 256*40 {
		t.Errorf("%d blocks drawn for %d frames", x.run.blocks, x.run.sent)
	}
	if tx, rx := x.run.counters(); tx != x.run.sent || rx != 0 || tx < 1e16 {
		t.Errorf("counters %d, %d", tx, rx)
	}
}
