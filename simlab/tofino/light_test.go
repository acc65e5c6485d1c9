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
