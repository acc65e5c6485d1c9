package tofino

import (
	"fmt"
	"testing"

	lg "testbed/p4/linkguardian"
)

// A generator stopped in the middle of a long steady stretch has sent what
// the line carried by then and at most the capped run under way
// (newSegment's MaxRun: 1024 frames non-blocking, 256 ordered), not the
// rest of the stretch: at a loss of 1e-6 a stretch between corruptions
// is about a million frames, the stop comes 3 ms (some 36,000 frames) in.
// Fails with the cap lifted, and with the model sending the capped runs
// of a stretch as one beyond the time the switch asked for (lgmodel's
// runChain).
func TestStoppedGeneratorSentAtMostTheRunUnderWay(t *testing.T) {
	for _, c := range []struct {
		blocking int
		maxRun   int64
	}{{0, 1024}, {1, 256}} {
		p := newLGPair(t, 5, c.blocking)
		p.attenuateTo(1e-6)
		const frameBytes, perBatch, stopNs = 1024, 4000, 3_000_000
		p.ok(p.tx, "pktgen.start", fmt.Sprintf(`{"app_id":1,"egress_port":%d,"pkt_len":%d,"timer_ns":1,"batches":%d,"packets_per_batch":%d}`,
			lgPairPort, frameBytes-4, 1000, perBatch))
		p.ok(p.tx, "time.wait", fmt.Sprintf(`{"until_ns":%d}`, stopNs))
		p.ok(p.tx, "pktgen.stop", `{"app_id":1}`)
		st := p.ok(p.tx, "pktgen.status", `{"app_id":1}`)
		sent, _ := st["packets"].(float64)
		perFrame := float64((frameBytes+20+lg.HeaderBytes)*8) / 100e9
		line := int64(stopNs*1e-9/perFrame) + 1 // frames begun by the stop at line rate
		if int64(sent) > line+c.maxRun || int64(sent) < line*9/10 {
			t.Errorf("blocking %d: the generator stopped at %d ns had sent %.0f frames: want at most %d (the line's %d and a run of %d), and most of the line's",
				c.blocking, stopNs, sent, line+c.maxRun, line, c.maxRun)
		}
	}
}
