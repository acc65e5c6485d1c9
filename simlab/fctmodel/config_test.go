package fctmodel

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"testbed/simlab/lgmodel"
)

// A corrupting reverse direction loses answers too: a 143 B RPC is slowed
// when its request or its answer is corrupted.
func TestReverseLossSlowsAnswers(t *testing.T) {
	const p = 5e-3
	n := trials(60_000)
	c := config(t, TCP, lgmodel.Off, p, 143)
	var err error
	if c.Reverse, err = DefaultLink(lgmodel.Off, 100e9, p); err != nil {
		t.Fatal(err)
	}
	slow := summarize(run(t, c, n, 9)).count(time.Millisecond)
	want := 1 - (1-p)*(1-p)
	t.Logf("%d of %d slow, want about %.0f", slow, n, want*float64(n))
	if !within(slow, n, want, 4.5) {
		t.Errorf("%d of %d slow, want about %.0f", slow, n, want*float64(n))
	}
}

// With LossBytes the loss is that of a frame of that size and smaller
// frames are corrupted less, as bit errors would: a 143 B request is a
// 213-byte frame. FrameLoss replaces the rule altogether.
func TestLossScalesWithFrameSize(t *testing.T) {
	const p = 0.02
	n := trials(60_000)
	c := config(t, TCP, lgmodel.Off, p, 143)
	c.Forward.LossBytes = 1518
	slow := summarize(run(t, c, n, 10)).count(time.Millisecond)
	want := -math.Expm1(213.0 / 1518 * math.Log1p(-p))
	if !within(slow, n, want, 4.5) {
		t.Errorf("scaled: %d of %d slow, want about %.0f", slow, n, want*float64(n))
	}
	c.Forward.LossBytes = 0
	c.Forward.FrameLoss = func(bytes int) float64 {
		if bytes == 213 {
			return 0.1
		}
		return 0
	}
	slow = summarize(run(t, c, n, 10)).count(time.Millisecond)
	if !within(slow, n, 0.1, 4.5) {
		t.Errorf("FrameLoss: %d of %d slow, want about %.0f", slow, n, 0.1*float64(n))
	}
}

func TestConfigErrors(t *testing.T) {
	good := config(t, TCP, lgmodel.Ordered, 1e-3, 143)
	for name, change := range map[string]func(*Config){
		"request":       func(c *Config) { c.RequestBytes = 0 },
		"tcp answer":    func(c *Config) { c.ResponseBytes = 0 },
		"copies":        func(c *Config) { c.Forward.LG.Copies = 0 },
		"loss":          func(c *Config) { c.Forward.Loss = 1 },
		"host rate":     func(c *Config) { c.HostBps = 0 },
		"rto_min":       func(c *Config) { c.TCP.RTOMin = 0 },
		"reordering":    func(c *Config) { c.TCP.MaxReordering = 1 },
		"negative host": func(c *Config) { c.Host.RxStack = -1 },
		"transport":     func(c *Config) { c.Transport = 7 },
		"rdma timeout":  func(c *Config) { c.Transport, c.RDMA.TimeoutExp = RDMA, 40 },
	} {
		c := good
		change(&c)
		if _, err := New(c, rand.New(rand.NewPCG(1, 1))); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !strings.HasPrefix(err.Error(), "fctmodel: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := New(good, nil); err == nil {
		t.Error("no random source: accepted")
	}
	if _, err := Defaults(TCP, lgmodel.Ordered, 1e-3, 143); err != nil {
		t.Error(err)
	}
	if _, err := Defaults(TCP, lgmodel.Ordered, 1e-3, 143); err != nil {
		t.Error(err)
	}
	if _, err := DefaultLink(lgmodel.Ordered, 40e9, 1e-3); err == nil {
		t.Error("LinkGuardian at 40G has no measured delays, yet it was accepted")
	}
	if _, err := DefaultLink(lgmodel.Off, 40e9, 1e-3); err != nil {
		t.Errorf("an unprotected 40G link: %v", err)
	}
}

func benchmark(b *testing.B, c Config) {
	m, err := New(c, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		b.Fatal(err)
	}
	m.Run(10_000) // the states a run meets, mostly
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Trial()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "trials/s")
}

func BenchmarkTrial(b *testing.B) {
	for _, bc := range []struct {
		name string
		tr   Transport
		mode lgmodel.Mode
		size int
		step bool
	}{
		{"tcp-143-off", TCP, lgmodel.Off, 143, false},
		{"tcp-143-lg", TCP, lgmodel.Ordered, 143, false},
		{"tcp-24387-nb", TCP, lgmodel.NonBlocking, 24387, false},
		{"rdma-143-off", RDMA, lgmodel.Off, 143, false},
		{"rdma-24387-lg", RDMA, lgmodel.Ordered, 24387, false},
		{"tcp-143-off-step", TCP, lgmodel.Off, 143, true},
		{"tcp-24387-nb-step", TCP, lgmodel.NonBlocking, 24387, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := config(b, bc.tr, bc.mode, 1e-3, bc.size)
			c.Step = bc.step
			benchmark(b, c)
		})
	}
}

// Two bad links are reported forward first, then reverse, every time: the
// links were checked in a map's order, so the same bad configuration
// gave its errors in either order from one call to the next.
func TestValidateReportsLinksInOrder(t *testing.T) {
	c, err := Defaults(TCP, lgmodel.Off, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	c.Forward.Loss, c.Reverse.Loss = 2, 3
	for i := 0; i < 50; i++ {
		err := c.validate()
		if err == nil {
			t.Fatal("links with loss 2 and 3 validated")
		}
		msg := err.Error()
		f, r := strings.Index(msg, "forward link"), strings.Index(msg, "reverse link")
		if f < 0 || r < 0 || f > r {
			t.Fatalf("call %d: want the forward link's error before the reverse one's, got %q", i, msg)
		}
	}
}
