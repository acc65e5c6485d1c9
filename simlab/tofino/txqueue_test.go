package tofino

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	lg "testbed/p4/linkguardian"
	"testbed/simlab/physics"
	"testbed/simlab/world"
)

// lgPair is a LinkGuardian sender and receiver joined by a 100G SR4
// fibre through a VOA channel, configured through the agent protocol as
// the control plane deploys a protected link (lgbench's setup: the
// mirror sessions, the dummy and the explicit ACK injected, the
// protection entry); no timer, PFC or multicast groups (one unicast copy).
type lgPair struct {
	t      testing.TB
	dp     *Dataplane
	tx, rx *Tofino
	conns  map[*Tofino]*agentConn
	ch     *world.VOAChannel
	fibre  *world.Fibre
	fec    physics.FEC
	nreq   int
}

const lgPairPort = 136

func newLGPair(t testing.TB, seed uint64, blocking int) *lgPair {
	t.Helper()
	return newLGPairAt(t, seed, blocking, "100GBASE-SR4", "BF_SPEED_100G")
}

// newLGPairAt is newLGPair over a fibre of the transceiver tr and ports
// of the speed.
func newLGPairAt(t testing.TB, seed uint64, blocking int, trName, speed string) *lgPair {
	t.Helper()
	w := world.New(seed)
	p := &lgPair{t: t, dp: NewDataplane(w), conns: map[*Tofino]*agentConn{}}
	tr, err := physics.TransceiverByName(trName)
	if err != nil {
		t.Fatal(err)
	}
	fec, err := physics.FECByName("rs528")
	if err != nil {
		t.Fatal(err)
	}
	p.fec = fec
	p.tx = newSDSwitch(p.dp, "sw1", lg.ProgramSender)
	p.rx = newSDSwitch(p.dp, "sw2", lg.ProgramReceiver)
	p.ch = w.NewVOA("voa1", "sim", "N7764A", "1", "1", 1, 0, 60, 0, 1e9).Channels[0]
	p.fibre = w.NewFibre("sw1-sw2", tr, fec, 1, 1, p.ch)
	back := w.NewFibre("sw2-sw1", tr, fec, 1, 1, nil)
	p.dp.Connect(p.fibre.Name, p.tx, lgPairPort, p.rx, lgPairPort, p.fibre, 0)
	p.dp.Connect(back.Name, p.rx, lgPairPort, p.tx, lgPairPort, back, 0)
	for _, s := range []struct {
		sw    *Tofino
		mirrs []lg.MirrorSession
		kind  int
	}{{p.tx, lg.SenderMirrors(lgPairPort), lg.PktDummy}, {p.rx, lg.ReceiverMirrors(lgPairPort), lg.PktAck}} {
		p.conns[s.sw] = dialAgent(t, s.sw)
		p.conns[s.sw].c.SetDeadline(time.Now().Add(time.Minute)) // the model's frames under the race detector
		p.ok(s.sw, "auth", `{"token":"tok"}`)
		p.ok(s.sw, "port.add", fmt.Sprintf(`{"dev_port":%d,"speed":%q,"fec":"BF_FEC_TYP_RS"}`, lgPairPort, speed))
		for _, m := range s.mirrs {
			p.ok(s.sw, "mirror.add", fmt.Sprintf(`{"sid":%d,"direction":%q,"ucast_egress_port":%d,"egress_port_queue":%d,"max_pkt_len":%d}`,
				m.ID, m.Direction, m.Port, m.Queue, m.MaxPktLen))
		}
		p.ok(s.sw, "table.add", fmt.Sprintf(`{"name":%q,"key":{%q:%d},"action":%q,"data":{%q:%d,%q:%d}}`, lg.TableL2Forward,
			lg.KeyDstAddr, lg.InjectAddr(lgPairPort, lg.QueueLowPrio), lg.ActionForwardToQueue, lg.ParamPort, lgPairPort, lg.ParamQID, lg.QueueLowPrio))
		p.ok(s.sw, "packet.out", fmt.Sprintf(`{"frame_hex":%q}`, hex.EncodeToString(lg.InjectFrame(lgPairPort, s.kind))))
	}
	p.ok(p.tx, "table.add", fmt.Sprintf(`{"name":%q,"key":{"egress_port":%d},"action":%q,"data":{%q:1,%q:%d}}`,
		lg.TableLinkProtect, lgPairPort, lg.ActionProtect, lg.ParamDummyPktMaxCount, lg.ParamBlockingMode, blocking))
	return p
}

func (p *lgPair) ok(sw *Tofino, op, args string) map[string]any {
	p.t.Helper()
	p.nreq++
	r := p.conns[sw].send(p.t, fmt.Sprintf(`{"id":%d,"op":%q,"args":%s}`, p.nreq, op, args))
	if r["ok"] != true {
		p.t.Fatalf("%s %s %s: %v", sw.name, op, args, r)
	}
	res, _ := r["result"].(map[string]any)
	return res
}

// attenuateTo sets the VOA where a 1024 B frame's loss first reaches
// loss, from the fibre's own optics.
func (p *lgPair) attenuateTo(loss float64) {
	p.t.Helper()
	for db := 0.0; db < 30; db += 0.01 {
		p.ch.SetAttenuation(db)
		if frameLoss1024(p.fibre.Transceiver, p.fec, p.fibre.EyePowerDBmAt(0)) >= loss {
			return
		}
	}
	p.t.Fatalf("no attenuation up to 30 dB gives a loss of %g", loss)
}

// frameLoss1024 is physics.FrameLossProbability of a 1024 B frame,
// remembered by its arguments for the test binary: attenuateTo's scans
// ask it at the same powers again and again (hundreds of steps a scan,
// each a sum of log-gamma terms), and it is a function of its arguments
// alone.
func frameLoss1024(tr physics.Transceiver, fec physics.FEC, eyeDBm float64) float64 {
	k := frameLossKey{tr, fec, eyeDBm}
	frameLossMemo.Lock()
	defer frameLossMemo.Unlock()
	if v, ok := frameLossMemo.m[k]; ok {
		return v
	}
	v := physics.FrameLossProbability(tr, fec, eyeDBm, 1024)
	frameLossMemo.m[k] = v
	return v
}

type frameLossKey struct {
	tr     physics.Transceiver
	fec    physics.FEC
	eyeDBm float64
}

var frameLossMemo = struct {
	sync.Mutex
	m map[frameLossKey]float64
}{m: map[frameLossKey]float64{}}

// txQueueReading is one tm.queue read of the sender's Tx buffer queue.
type txQueueReading struct{ at, usage, watermark int64 }

func (p *lgPair) readTxQueue(c *agentConn, id int, clear bool) (usage, watermark int64, err error) {
	line := fmt.Sprintf(`{"id":%d,"op":"tm.queue","args":{"pipe":%d,"pg_id":%d,"pg_queue":%d,"clear_watermark":%t}}`,
		id, lg.RecircPort>>7, lg.RecircPort&127>>2, lg.RecircPort&3*8+lg.QueueTxBuffer, clear)
	if _, err := c.c.Write([]byte(line + "\n")); err != nil {
		return 0, 0, err
	}
	reply, err := c.rd.ReadBytes('\n')
	if err != nil {
		return 0, 0, err
	}
	var r struct {
		OK     bool
		Result struct {
			Usage     int64 `json:"usage_cells"`
			Watermark int64 `json:"watermark_cells"`
		}
	}
	if err := json.Unmarshal(reply, &r); err != nil || !r.OK {
		return 0, 0, fmt.Errorf("tm.queue: %s (%v)", reply, err)
	}
	return r.Result.Usage, r.Result.Watermark, nil
}

// txQueueRun sends 2x10^5 frames at a loss of 1e-3 over the pair, reads
// the Tx buffer queue every 1 ms of the switch's clock (clearing its
// watermark at every third read), and changes the loss to 1e-5 right
// after the read at 9 ms, which clears (a new segment of the model), with the queue read by eager at every
// accounting (the switch's way before it asked when read) or when read.
// reader: another connection reads the queue as fast as it is answered
// for the whole run.
func txQueueRun(t *testing.T, blocking int, eager, reader bool) []txQueueReading {
	p := newLGPair(t, 1, blocking)
	p.dp.txQueueEager = eager
	p.attenuateTo(1e-3)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var reads int
	var readErr error
	if reader {
		c := dialAgent(t, p.tx)
		c.c.SetDeadline(time.Now().Add(time.Minute)) // a read waits for an advance under the race detector
		c.send(t, `{"id":1,"op":"auth","args":{"token":"tok"}}`)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, _, readErr = p.readTxQueue(c, reads+2, false); readErr != nil {
					return
				}
				reads++
			}
		}()
	}
	const frames, perBatch = 200_000, 4000
	p.ok(p.tx, "pktgen.start", fmt.Sprintf(`{"app_id":1,"egress_port":%d,"pkt_len":1020,"timer_ns":1,"batches":%d,"packets_per_batch":%d}`,
		lgPairPort, frames/perBatch, perBatch))
	var out []txQueueReading
	for i := 1; i <= 20; i++ { // 2x10^5 frames of 1024 B at 100G: 16.7 ms
		at := time.Duration(i) * time.Millisecond
		p.ok(p.tx, "time.wait", fmt.Sprintf(`{"until_ns":%d}`, at.Nanoseconds()))
		u, w, err := p.readTxQueue(p.conns[p.tx], 1000+i, i%3 == 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, txQueueReading{at.Nanoseconds(), u, w})
		if i == 9 {
			p.attenuateTo(1e-5)
		}
	}
	if st := p.ok(p.tx, "pktgen.status", `{"app_id":1}`); st["done"] != true {
		t.Fatalf("the generator has not sent its frames by 20 ms: %v", st)
	}
	close(stop)
	wg.Wait()
	if readErr != nil {
		t.Errorf("the concurrent reader: %v", readErr)
	}
	if reader && reads == 0 {
		t.Error("the concurrent reader read nothing")
	}
	return out
}

// A tm.queue read answers the Tx buffer queue from the model at the read,
// as the switch's reading at every accounting did: the same readings, a
// watermark cleared and a segment changed included, with another
// connection reading the queue throughout (under the race detector: the
// dataplane's lock before the switch's). Fails when a read does not ask
// the model (stale readings), when a new segment's model replaces the
// one waiting without asking it (the watermark the first segment reached
// when the clear at 9 ms left it is lost), or when the reads take the locks in
// the other order (a deadlock or a race).
func TestTxQueueReadAsAccounted(t *testing.T) {
	for _, c := range []struct {
		name     string
		blocking int
	}{{"ordered", 1}, {"non-blocking", 0}} {
		t.Run(c.name, func(t *testing.T) {
			want := txQueueRun(t, c.blocking, true, false)
			got := txQueueRun(t, c.blocking, false, true)
			if !slices.Equal(got, want) {
				t.Errorf("read when read:\n%v\nread at every accounting:\n%v", got, want)
			}
			var marked bool
			for _, r := range want {
				marked = marked || r.watermark > 0
			}
			if !marked || len(want) < 12 {
				t.Errorf("readings %v: want a Tx buffer queue with copies, read past the loss's change", want)
			}
		})
	}
}
