package fctmodel

import (
	"testing"
	"time"

	"testbed/simlab/lgmodel"
)

// Heavy corruption both ways, odd sizes and settings: every trial ends,
// nothing is delivered twice to the application, and FCTs stay sane.
func TestHeavyLossEverywhere(t *testing.T) {
	for _, tc := range []struct {
		name string
		tr   Transport
		mode lgmodel.Mode
		loss float64
		req  int
		resp int
		set  func(*Config)
	}{
		{"tcp big answer", TCP, lgmodel.Off, 0.05, 200, 60_000, nil},
		{"tcp 1 MB", TCP, lgmodel.NonBlocking, 0.02, 1 << 20, 1, nil},
		{"tcp no delayed ack", TCP, lgmodel.Ordered, 0.1, 24387, 3000, func(c *Config) { c.TCP.DelayedAck = false }},
		{"tcp no tlp", TCP, lgmodel.Off, 0.1, 5000, 100, func(c *Config) { c.TCP.TLP = false }},
		{"tcp think", TCP, lgmodel.NonBlocking, 0.05, 143, 1, func(c *Config) { c.Think = 3 * time.Millisecond }},
		{"rdma ping-pong", RDMA, lgmodel.NonBlocking, 0.05, 24387, 5000, nil},
		{"rdma ack every 4", RDMA, lgmodel.Off, 0.05, 24387, 0, func(c *Config) { c.RDMA.AckEvery = 4 }},
	} {
		for _, step := range []bool{false, true} {
			c := config(t, tc.tr, tc.mode, tc.loss, tc.req)
			c.ResponseBytes = tc.resp
			var err error
			if c.Reverse, err = DefaultLink(tc.mode, 100e9, tc.loss); err != nil {
				t.Fatal(err)
			}
			if tc.set != nil {
				tc.set(&c)
			}
			c.Step = step
			n := 300
			if tc.req >= 1<<20 {
				n = 20
			}
			ts := run(t, c, n, 14)
			s := summarize(ts)
			t.Logf("%s (step %v): p50 %v max %v; %d retransmitted, %d timeouts, %d recoveries/NAKs, %d duplicates",
				tc.name, step, s.p(.5), s.fct[len(s.fct)-1], s.retrans, s.timeouts, s.recov, s.spur)
			if s.fct[0] <= 0 || s.fct[len(s.fct)-1] > 10*time.Second {
				t.Errorf("%s: FCTs from %v to %v", tc.name, s.fct[0], s.fct[len(s.fct)-1])
			}
			for i := 1; i < len(ts); i++ {
				if ts[i].Start < ts[i-1].Start+ts[i-1].FCT+c.Think {
					t.Fatalf("%s: trial %d starts at %v, before the previous one ended", tc.name, i, ts[i].Start)
				}
			}
		}
	}
}
