package tofino

import (
	"fmt"
	"maps"
	"testing"
	"time"

	lg "testbed/p4/linkguardian"
)

// lightRun sends 10^5 frames over the pair at a loss of 1e-3 for 10 ms
// of the switch's clock, with a change at 4 ms: "voa" sets the VOA for a
// loss of 1e-5 after the chunk that ends there, within one wait (one
// advance); "switch" takes the protection off between a wait to 4 ms
// and one to 10 ms; "" changes nothing. everyChunk: the dataplane reads
// the light and the configuration at every chunk. It returns the ports'
// counters and the generator's frames.
func lightRun(t *testing.T, everyChunk bool, change string) map[string]any {
	p := newLGPair(t, 3, 0)
	p.dp.lightEveryChunk = everyChunk
	p.attenuateTo(1e-5)
	low := p.ch.Target()
	p.attenuateTo(1e-3)
	changed := false
	p.dp.afterChunk = func(now time.Duration) {
		if change == "voa" && !changed && now >= 4*time.Millisecond {
			p.ch.SetAttenuation(low)
			changed = true
		}
	}
	const frames, perBatch = 100_000, 4000
	p.ok(p.tx, "pktgen.start", fmt.Sprintf(`{"app_id":1,"egress_port":%d,"pkt_len":1020,"timer_ns":1,"batches":%d,"packets_per_batch":%d}`,
		lgPairPort, frames/perBatch, perBatch))
	if change == "switch" {
		p.ok(p.tx, "time.wait", `{"until_ns":4000000}`)
		p.ok(p.tx, "table.del", fmt.Sprintf(`{"name":%q,"key":{"egress_port":%d}}`, lg.TableLinkProtect, lgPairPort))
		changed = true
	}
	p.ok(p.tx, "time.wait", `{"until_ns":10000000}`)
	if changed != (change != "") {
		t.Fatalf("%q: changed %t", change, changed)
	}
	out := map[string]any{}
	for _, e := range []struct {
		name string
		sw   *Tofino
		c    string
	}{{"tx", p.tx, `"$FramesTransmittedAll","$OctetsTransmittedTotal"`}, {"rx", p.rx, `"$FramesReceivedOK","$FramesReceivedwithFCSError"`}} {
		res := p.ok(e.sw, "port.stat", fmt.Sprintf(`{"dev_port":%d,"names":[%s]}`, lgPairPort, e.c))
		for k, v := range res["counters"].(map[string]any) {
			out[e.name+k] = v
		}
	}
	st := p.ok(p.tx, "pktgen.status", `{"app_id":1}`)
	if st["done"] != true {
		t.Fatalf("the generator has not sent its frames by 10 ms: %v", st)
	}
	out["sent"] = st["packets"]
	return out
}

// A change to the link while the generator runs takes effect where the
// configuration was read at every chunk: a VOA set while a wait moves the
// clock at the next chunk of that wait, a table changed between two waits
// from the second, though a steady fibre's light and the configuration
// found with it are now kept between chunks (config, goesOn,
// world.Fibre.LightStamp). The same counters either way, and not those
// of a run that changes nothing. Fails when SetAttenuation does not move
// the fibre's stamp, when config or goesOn keep the light without asking
// the stamp, or when goesOn keeps the configuration into another
// advance. (Non-blocking: the mode does not matter to the reading, and
// it is the cheaper.)
func TestLinkChangedMidRunTakesEffectAsReadAtEveryChunk(t *testing.T) {
	stay := lightRun(t, false, "")
	for _, change := range []string{"voa", "switch"} {
		t.Run(change, func(t *testing.T) {
			want := lightRun(t, true, change)
			got := lightRun(t, false, change)
			if !maps.Equal(got, want) {
				t.Errorf("kept between chunks:\n%v\nread at every chunk:\n%v", got, want)
			}
			if maps.Equal(stay, want) {
				t.Errorf("the same counters with the change as without (%v): it was not seen", stay)
			}
		})
	}
}

// A long wait catches the model up in pieces of about as many frames on
// any link (settleSpan): on a 25G link every 40 ms of the clock, the
// frames of settleEvery (10 ms) at 100G. The frames the generator sent,
// read after every chunk, move only at a catch-up: no piece is more
// than settleEvery's frames at 100G and a chunk's, and each is more than
// settleEvery's frames at 25G. Fails with the span left at settleEvery
// on the slower link (four times the catch-ups, each with the switch's
// bookkeeping), and with the pieces unbounded (a stop mid-wait waiting
// for the whole wait's model).
func TestCatchUpsAreAsManyFramesOnASlowerLink(t *testing.T) {
	// Unprotected, with the VOA at 0 dB: the model's cheapest.
	p := newLGPairAt(t, 3, 0, "25GBASE-SR", "BF_SPEED_25G")
	p.ok(p.tx, "table.del", fmt.Sprintf(`{"name":%q,"key":{"egress_port":%d}}`, lg.TableLinkProtect, lgPairPort))
	const frameBytes, perBatch = 1024, 4000
	perFrame := float64((frameBytes+20)*8) / 25e9       // seconds on the wire
	frames := int64(0.2/perFrame) / perBatch * perBatch // 200 ms at line rate
	var sent []int64
	p.dp.afterChunk = func(time.Duration) {
		for _, r := range p.dp.runs {
			sent = append(sent, r.app.sent)
		}
	}
	p.ok(p.tx, "pktgen.start", fmt.Sprintf(`{"app_id":1,"egress_port":%d,"pkt_len":%d,"timer_ns":1,"batches":%d,"packets_per_batch":%d}`,
		lgPairPort, frameBytes-4, frames/perBatch, perBatch))
	p.ok(p.tx, "time.wait", `{"until_ns":250000000}`)
	var pieces []int64
	for i := 1; i < len(sent); i++ {
		if d := sent[i] - sent[i-1]; d > 0 {
			pieces = append(pieces, d)
		}
	}
	at100 := int64(settleEvery.Seconds() * 100e9 / float64((frameBytes+20)*8))
	chunk := int64(advanceChunk.Seconds() / perFrame)
	here := int64(settleEvery.Seconds() / perFrame)
	if len(pieces) < 3 {
		t.Fatalf("%d catch-ups seen in a wait of 250 ms: want at least 3", len(pieces))
	}
	for i, n := range pieces {
		if n > at100+chunk || n <= here {
			t.Errorf("catch-up %d of %d took %d frames: want more than %d (10 ms here), at most %d (10 ms at 100G and a chunk)", i+1, len(pieces), n, here, at100+chunk)
		}
	}
}
