package tcpmodel

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"testbed/simlab/lgmodel"
)

var table = flag.Bool("table", false, "print LinkGuardian Fig. 9's TCP table (README) from 40 ms runs")

// flow runs cc for d over the 100G link in mode (backpressure bp) with a
// 1e-3 frame loss from 2 ms on (loss 0: none).
func flow(t *testing.T, cc string, mode lgmodel.Mode, bp bool, loss float64, d time.Duration) (FlowResult, float64) {
	t.Helper()
	c, err := DefaultFlow(cc, mode, 100e9, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	c.Link.Backpressure = bp
	c.Loss, c.LossFrom, c.Duration = loss, 2*time.Millisecond, d
	r, err := RunFlow(c, rand.New(rand.NewPCG(9, 9)))
	if err != nil {
		t.Fatal(err)
	}
	// Goodput once the loss is on and the flow past its start.
	var g float64
	n := 0
	for _, s := range r.Samples {
		if s.At > 3*time.Millisecond {
			g, n = g+s.GoodputBps, n+1
		}
	}
	return r, g / float64(max(n, 1))
}

// LinkGuardian §4.2: with backpressure the reorder buffer never
// overflows, so a TCP flow over the protected link loses nothing and
// never retransmits; the pause stops the sender switch's port, its queue
// grows and DCTCP's marks slow the flow instead. Without backpressure
// the reorder buffer overflows, originals are lost and TCP retransmits.
func TestBackpressureKeepsTCPWhole(t *testing.T) {
	on, gOn := flow(t, "dctcp", lgmodel.Ordered, true, 1e-3, 10*time.Millisecond)
	off, gOff := flow(t, "dctcp", lgmodel.Ordered, false, 1e-3, 10*time.Millisecond)
	t.Logf("backpressure on: %.1f Gb/s, %d retransmits, %d marks; off: %.1f Gb/s, %d retransmits, %d lost on the link", gOn/1e9, on.Retransmits, on.Marks, gOff/1e9, off.Retransmits, off.LinkLost)
	if on.LinkLost != 0 || on.Retransmits != 0 || on.RTOs != 0 || on.Marks == 0 {
		t.Errorf("with backpressure: %d lost, %d retransmits, %d timeouts, %d marks", on.LinkLost, on.Retransmits, on.RTOs, on.Marks)
	}
	var maxRx int64
	for _, s := range on.Samples {
		maxRx = max(maxRx, s.RxBufBytes)
	}
	if maxRx == 0 || maxRx > 200_000 {
		t.Errorf("reorder buffer up to %d B with backpressure", maxRx)
	}
	if off.LinkLost == 0 || off.Retransmits < off.LinkLost || gOff > gOn/2 {
		t.Errorf("without backpressure: %d lost, %d retransmits, %.1f Gb/s (with: %.1f)", off.LinkLost, off.Retransmits, gOff/1e9, gOn/1e9)
	}
}

// Unprotected, the link's losses reach TCP: every original lost is sent
// again, DCTCP halves on each recovery and falls below its lossless
// rate, while BBR, which takes no loss as a signal, keeps its rate.
func TestUnprotectedLossReachesTCP(t *testing.T) {
	clean, gClean := flow(t, "dctcp", lgmodel.Off, false, 0, 10*time.Millisecond)
	lossy, gLossy := flow(t, "dctcp", lgmodel.Off, false, 1e-3, 10*time.Millisecond)
	_, bClean := flow(t, "bbr", lgmodel.Off, false, 0, 10*time.Millisecond)
	bbr, bLossy := flow(t, "bbr", lgmodel.Off, false, 1e-3, 10*time.Millisecond)
	t.Logf("dctcp %.1f -> %.1f Gb/s (%d losses), bbr %.1f -> %.1f Gb/s (%d losses)", gClean/1e9, gLossy/1e9, lossy.Losses, bClean/1e9, bLossy/1e9, bbr.Losses)
	if clean.Retransmits != 0 || lossy.LinkLost == 0 || lossy.Retransmits < lossy.LinkLost || lossy.Losses == 0 {
		t.Errorf("dctcp: clean %d retransmits; lossy %d lost, %d retransmits, %d recoveries", clean.Retransmits, lossy.LinkLost, lossy.Retransmits, lossy.Losses)
	}
	if gLossy > 0.8*gClean || bLossy < 0.95*bClean {
		t.Errorf("goodput: dctcp %.1f of %.1f Gb/s, bbr %.1f of %.1f", gLossy/1e9, gClean/1e9, bLossy/1e9, bClean/1e9)
	}
}

// The README's table (LinkGuardian §4.2, Fig. 9 and Appendix B.3: one
// iperf flow over 25G links, 1e-3 loss):
// go test -run TestFig9TCPTable -v ./simlab/tcpmodel -args -table
// Each flow runs 1 s, the loss from 0.1 s; goodput is averaged from
// 0.2 s (LinkGuardian is on from the start, not switched on later).
func TestFig9TCPTable(t *testing.T) {
	if !*table {
		t.Skip("run with -args -table")
	}
	var b strings.Builder
	b.WriteString("| cc | lossless | loss 1e-3, unprotected | LinkGuardian, backpressure on | LinkGuardian, backpressure off |\n|---|---|---|---|---|\n")
	for _, cc := range []string{"dctcp", "cubic", "bbr"} {
		fmt.Fprintf(&b, "| %s |", cc)
		for _, x := range []struct {
			mode lgmodel.Mode
			bp   bool
			loss float64
		}{{lgmodel.Off, false, 0}, {lgmodel.Off, false, 1e-3}, {lgmodel.Ordered, true, 1e-3}, {lgmodel.Ordered, false, 1e-3}} {
			c, err := DefaultFlow(cc, x.mode, 25e9, 1e-3)
			if err != nil {
				t.Fatal(err)
			}
			c.Link.Backpressure = x.bp
			c.Loss, c.LossFrom, c.Duration, c.Sample = x.loss, 100*time.Millisecond, time.Second, 10*time.Millisecond
			r, err := RunFlow(c, rand.New(rand.NewPCG(9, 9)))
			if err != nil {
				t.Fatal(err)
			}
			var g float64
			var n int
			var rx int64
			for _, s := range r.Samples {
				if s.At > 200*time.Millisecond {
					g, n = g+s.GoodputBps, n+1
				}
				rx = max(rx, s.RxBufBytes)
			}
			fmt.Fprintf(&b, " %.2f Gb/s, %d retx (%d link), Rx buf %d KB |", g/float64(n)/1e9, r.Retransmits, r.LinkLost, rx/1000)
		}
		b.WriteString("\n")
	}
	t.Log("\n" + b.String())
}

// BenchmarkFlow reports how fast a DCTCP flow over a protected 100G link
// simulates: simulated milliseconds per wall-clock second.
func BenchmarkFlow(b *testing.B) {
	c, err := DefaultFlow("dctcp", lgmodel.Ordered, 100e9, 1e-3)
	if err != nil {
		b.Fatal(err)
	}
	c.Duration = 5 * time.Millisecond
	for i := 0; i < b.N; i++ {
		if _, err := RunFlow(c, rand.New(rand.NewPCG(1, uint64(i)))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(c.Duration.Milliseconds())*float64(b.N)/b.Elapsed().Seconds(), "sim-ms/s")
}
