package trafficgen

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"testbed/simlab/physics"
	"testbed/simlab/world"
)

// fakeClock is the real time the emulator reads, moved by the test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func post(t *testing.T, url, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST %s %s: %d %v %v", url, body, resp.StatusCode, m, err)
	}
	return m
}

// One clock: at TimeScale s, a flow of 1000 frames/s for fixed_seconds 2
// has sent its 2000 frames after 2/s seconds of real time, not before,
// and its timestamps span the 1.999 simulated seconds between its first
// and last frames, whatever the scale. TimeScale 1 is lab up --clock real.
func TestOTGClock(t *testing.T) {
	for _, scale := range []float64{1, 1000} {
		w := world.New(1)
		tr, _ := physics.TransceiverByName("25GBASE-SR")
		fec, _ := physics.FECByName("none")
		v := w.NewVOA("voa1", "Keysight Technologies", "N7764A", "SIM1", "1.0", 1, 0, 60, 1.5, 1e6)
		w.NewFibre("l", tr, fec, 1.0, 0.5, v.Channels[0])
		clk := &fakeClock{t: time.Unix(1e9, 0)}
		s := NewOTGServer(w, []OTGPort{{Location: "eth1", TxFibre: "l"}, {Location: "eth2"}}, nil, OTGOptions{TimeScale: scale})
		s.now = clk.now
		s.epoch = clk.now()
		if err := s.Start("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		base := s.Addr()
		post(t, base+"/config", `{"ports":[{"name":"p1","location":"eth1"},{"name":"p2","location":"eth2"}],"flows":[{"name":"f","tx_rx":{"choice":"port","port":{"tx_name":"p1","rx_names":["p2"]}},`+
			`"rate":{"choice":"pps","pps":"1000"},"duration":{"choice":"fixed_seconds","fixed_seconds":{"seconds":2}},"metrics":{"enable":true,"timestamps":true}}]}`)
		clk.add(time.Second)
		post(t, base+"/control/state", `{"choice":"traffic","traffic":{"choice":"flow_transmit","flow_transmit":{"state":"start"}}}`)
		metric := func() map[string]any {
			m := post(t, base+"/monitor/metrics", `{"choice":"flow"}`)
			return m["flow_metrics"].([]any)[0].(map[string]any)
		}
		real := time.Duration(float64(2*time.Second) / scale)
		clk.add(real / 2)
		if m := metric(); m["frames_tx"] != "1001" || m["transmit"] != "started" {
			t.Errorf("scale %g, half way (%v of real time): %v, want 1001 frames sent (one at 0 s, one every 1 ms) and still started", scale, real/2, m)
		}
		clk.add(real / 2)
		m := metric()
		ts := m["timestamps"].(map[string]any)
		first, last := ts["first_timestamp_ns"].(float64), ts["last_timestamp_ns"].(float64)
		if m["frames_tx"] != "2000" || m["transmit"] != "stopped" {
			t.Errorf("scale %g, after %v of real time: %v, want 2000 frames and stopped", scale, real, m)
		}
		// The flow started at 1 s of real time after the emulator did.
		if want := 1e9 * scale; first != want || last-first != 1999e6 {
			t.Errorf("scale %g: timestamps first %v last %v ns, want first %v and a span of 1.999 s", scale, first, last, want)
		}
		n, _ := strconv.Atoi(m["frames_tx"].(string))
		if got := 1 + (last-first)/1e9*1000; got != float64(n) {
			t.Errorf("scale %g: 1000 frames/s over the timestamps' span is %v frames, the counter %d", scale, got, n)
		}
		s.Close()
	}
}
