package tofino

import (
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	sd "testbed/p4/stardust"
	"testbed/simlab/physics"
	"testbed/simlab/wire"
	"testbed/simlab/world"
)

// A small Stardust bench for the tests: FAs and one or more FEs on
// simulated switches, every FA's port 136+8*j joined to FE j, an FE's port
// 136+8*i to FA i, host ports 176; driven through the agent protocol.
type sdBench struct {
	t     testing.TB
	dp    *Dataplane
	w     *world.World
	fas   []*Tofino
	fes   []*Tofino
	conns map[*Tofino]*agentConn
	voa   *world.VOA
	nreq  int
}

const sdHostPort = 176

func sdFabricPort(i int) int { return 136 + 8*i }

func newSDSwitch(dp *Dataplane, name, program string) *Tofino {
	sw := &Tofino{name: name, dp: dp, faults: &wire.Faults{}, agentToken: "tok", agentIdle: time.Minute,
		agentSlots: make(chan struct{}, 2), installed: map[string]bool{program: true}}
	sw.reset(program)
	return sw
}

// newSDBench starts nFA FAs and nFE FEs joined by 100G SR4 fibres of
// lengthM metres; fa0's fibres run through VOA channels.
func newSDBench(t testing.TB, seed uint64, nFA, nFE int, lengthM float64) *sdBench {
	t.Helper()
	w := world.New(seed)
	b := &sdBench{t: t, w: w, dp: NewDataplane(w), conns: map[*Tofino]*agentConn{}}
	tr, err := physics.TransceiverByName("100GBASE-SR4")
	if err != nil {
		t.Fatal(err)
	}
	none, err := physics.FECByName("none")
	if err != nil {
		t.Fatal(err)
	}
	b.voa = w.NewVOA("voa1", "sim", "N7764A", "1", "1", nFE, 0, 60, 0, 1e9)
	for i := 0; i < nFA; i++ {
		b.fas = append(b.fas, newSDSwitch(b.dp, fmt.Sprintf("fa%d", i+1), sd.ProgramFA))
	}
	for j := 0; j < nFE; j++ {
		b.fes = append(b.fes, newSDSwitch(b.dp, fmt.Sprintf("fe%d", j+1), sd.ProgramFE))
	}
	for _, sw := range append(append([]*Tofino{}, b.fas...), b.fes...) {
		b.conns[sw] = dialAgent(t, sw)
		b.ok(sw, "auth", `{"token":"tok"}`)
	}
	for i, fa := range b.fas {
		b.ok(fa, "port.add", fmt.Sprintf(`{"dev_port":%d,"speed":"BF_SPEED_100G","fec":"BF_FEC_TYP_NONE"}`, sdHostPort))
		b.ok(fa, "table.add", fmt.Sprintf(`{"name":%q,"key":{},"action":"set_id","data":{"id":%d}}`, sd.TableWhoami, i))
		b.ok(fa, "table.add", fmt.Sprintf(`{"name":%q,"key":{"dst_port":0},"action":"to_host","data":{"port":%d}}`, sd.TableHostPort, sdHostPort))
		for j, fe := range b.fes {
			fp, ep := sdFabricPort(j), sdFabricPort(i)
			b.ok(fa, "port.add", fmt.Sprintf(`{"dev_port":%d,"speed":"BF_SPEED_100G","fec":"BF_FEC_TYP_NONE"}`, fp))
			if i == 0 {
				b.ok(fe, "table.add", fmt.Sprintf(`{"name":%q,"key":{},"action":"set_id","data":{"id":%d}}`, sd.TableWhoami, j))
			}
			b.ok(fe, "port.add", fmt.Sprintf(`{"dev_port":%d,"speed":"BF_SPEED_100G","fec":"BF_FEC_TYP_NONE"}`, ep))
			var ch *world.VOAChannel
			if i == 0 {
				ch = b.voa.Channels[j]
			}
			up := w.NewFibre(fmt.Sprintf("%s-%s", fa.name, fe.name), tr, none, 0.5, 0.5, ch)
			up.LengthM = lengthM
			down := w.NewFibre(fmt.Sprintf("%s-%s (b->a)", fa.name, fe.name), tr, none, 1, 0, nil)
			down.LengthM = lengthM
			b.dp.Connect(up.Name, fa, fp, fe, ep, up, 0)
			b.dp.Connect(down.Name, fe, ep, fa, fp, down, 0)
			// The FE reaches FA i by its port to it, in every slot.
			for s := 0; s < sd.MaxLinks; s++ {
				b.ok(fe, "table.add", fmt.Sprintf(`{"name":%q,"key":{"dst_fa":%d,"slot":%d},"action":"to_link","data":{"link":%d}}`, sd.TableSpray, i, s, ep))
			}
		}
		// The FA sprays to every other FA over its fabric ports in turn.
		for k := range b.fas {
			if k == i {
				continue
			}
			for s := 0; s < sd.MaxLinks; s++ {
				b.ok(fa, "table.add", fmt.Sprintf(`{"name":%q,"key":{"dst_fa":%d,"slot":%d},"action":"to_link","data":{"link":%d}}`, sd.TableSpray, k, s, sdFabricPort(s%len(b.fes))))
			}
		}
	}
	return b
}

func (b *sdBench) req(sw *Tofino, op, args string) map[string]any {
	b.t.Helper()
	b.nreq++
	return b.conns[sw].send(b.t, fmt.Sprintf(`{"id":%d,"op":%q,"args":%s}`, b.nreq, op, args))
}

func (b *sdBench) ok(sw *Tofino, op, args string) map[string]any {
	b.t.Helper()
	r := b.req(sw, op, args)
	if r["ok"] != true {
		b.t.Fatalf("%s %s %s: %v", sw.name, op, args, r)
	}
	res, _ := r["result"].(map[string]any)
	return res
}

// app starts a generator application of kind on sw: perBatch frames of
// pktLen bytes every timerNs, batches times, each carrying cell c.
func (b *sdBench) app(sw *Tofino, id, pktLen int, timerNs, batches int64, perBatch int, c sd.Cell) {
	b.t.Helper()
	buf := hex.EncodeToString(sd.GeneratorBuffer([6]byte{2, 0, 0, 0, 0, 1}, c))
	b.ok(sw, "pktgen.start", fmt.Sprintf(`{"app_id":%d,"egress_port":%d,"pkt_len":%d,"timer_ns":%d,"batches":%d,"packets_per_batch":%d,"buffer_hex":%q}`,
		id, sdFabricPort(0), pktLen, timerNs, batches, perBatch, buf))
}

// flow sends app id's data frames from FA src to FA dst's port 0 in VOQ voq.
func (b *sdBench) flow(src, id, dst, voq int) {
	for s := 0; s < sd.MaxLinks; s++ {
		b.ok(b.fas[src], "table.add", fmt.Sprintf(`{"name":%q,"key":{"app_id":%d,"slot":%d},"action":"to_voq","data":{"fa":%d,"port":0,"voq":%d,"tc":0}}`, sd.TableGenFlow, id, s, dst, voq))
	}
}

// credits makes FA dst's port 0 credit the sources (FA, VOQ) round robin,
// a credit of frames every periodNs, for batches periods.
func (b *sdBench) credits(dst int, sources [][2]int, frames int, periodNs, batches int64) {
	fa := b.fas[dst]
	b.ok(fa, "table.add", fmt.Sprintf(`{"name":%q,"key":{"packet_id":0},"action":"credit_for","data":{"port":0}}`, sd.TableCreditPort))
	for s := 0; s < 256; s++ {
		src := sources[s%len(sources)]
		b.ok(fa, "table.add", fmt.Sprintf(`{"name":%q,"key":{"dst_port":0,"slot":%d},"action":"to_source","data":{"fa":%d,"voq":%d}}`, sd.TableCreditTo, s, src[0], src[1]))
	}
	b.app(fa, 7, 60, periodNs, batches, 1, sd.Cell{Kind: sd.KindCredit, PayloadLength: uint16(frames)})
}

func (b *sdBench) wait(until time.Duration) {
	b.t.Helper()
	b.ok(b.fas[0], "time.wait", fmt.Sprintf(`{"until_ns":%d}`, until.Nanoseconds()))
}

func (b *sdBench) reg(sw *Tofino, name string, idx int) int64 {
	b.t.Helper()
	res := b.ok(sw, "reg.get", fmt.Sprintf(`{"name":%q,"index":%d}`, name, idx))
	var sum int64
	for _, v := range res["values"].([]any) {
		sum += int64(v.(float64))
	}
	return sum
}

func (b *sdBench) hist(sw *Tofino, name string) []int64 {
	b.t.Helper()
	h := make([]int64, sd.HistBuckets)
	for i := range h {
		h[i] = b.reg(sw, name, i)
	}
	return h
}

func (b *sdBench) counter(sw *Tofino, port int, name string) int64 {
	b.t.Helper()
	res := b.ok(sw, "port.stat", fmt.Sprintf(`{"dev_port":%d}`, port))
	return int64(res["counters"].(map[string]any)[name].(float64))
}

func (b *sdBench) sent(sw *Tofino, id int) int64 {
	b.t.Helper()
	b.dp.mu.Lock()
	defer b.dp.mu.Unlock()
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.apps[id].sent
}

func histStats(h []int64) (n int64, minB int, mean float64) {
	minB = -1
	var sum float64
	for b, c := range h {
		if c > 0 && minB < 0 {
			minB = b
		}
		n += c
		sum += float64(b) * float64(c)
	}
	if n > 0 {
		mean = sum / float64(n)
	}
	return n, minB, mean
}

// Cells cross a two-FA, one-FE fabric by the switches' tables: every
// generated frame is released at the destination's host port once the
// credits have drained the VOQ, each counted once in the latency
// histogram, none faster than the unloaded path (two links' serialisation
// and propagation), and each fabric port counts what crossed it.
func TestStardustCellsCrossTheFabric(t *testing.T) {
	b := newSDBench(t, 1, 2, 1, 20)
	b.flow(0, 1, 1, 5)
	// 256 B frames (252 + FCS) at half the port rate: one every 44 ns for 20 us.
	b.app(b.fas[0], 1, 252, 44, 450, 1, sd.Cell{Kind: sd.KindData})
	// Credits of 16 frames at port rate x 1.03 (sd.CreditPeriod), for 40 us.
	period, err := sd.CreditPeriod(100e9, 0.03, 16*256)
	if err != nil {
		t.Fatal(err)
	}
	b.credits(1, [][2]int{{0, 5}}, 16, period.Nanoseconds(), 40_000/period.Nanoseconds())
	b.wait(50 * time.Microsecond)

	gen := b.sent(b.fas[0], 1)
	delivered := b.counter(b.fas[1], sdHostPort, "$FramesTransmittedOK")
	if gen != 450 || delivered != gen {
		t.Errorf("generated %d (want 450), delivered at fa2's host port %d", gen, delivered)
	}
	n, minB, mean := histStats(b.hist(b.fas[1], sd.RegLatHist))
	if n != delivered {
		t.Errorf("latency histogram holds %d cells, %d delivered", n, delivered)
	}
	// Unloaded: two 256 B frames at 100G (20.48 ns + 1.6 ns preamble and
	// gap) and two 20 m fibres (100 ns each).
	unloadedNs := 2 * ((256+20)*8/100.0 + 100)
	if float64(minB+1)*64 <= unloadedNs {
		t.Errorf("fastest cell in bucket %d (%d ns), below the unloaded path's %.0f ns", minB, minB*64, unloadedNs)
	}
	if tx, rx := b.counter(b.fas[0], sdFabricPort(0), "$FramesTransmittedOK"), b.counter(b.fes[0], sdFabricPort(0), "$FramesReceivedOK"); tx != rx || tx < delivered {
		t.Errorf("fa1's fabric port sent %d frames, fe1 received %d; %d data frames delivered", tx, rx, delivered)
	}
	if c := b.reg(b.fas[0], sd.RegSeqOut, 1); c != delivered {
		t.Errorf("fa1 reg_seq_out[1] = %d, want %d", c, delivered)
	}
	if c := b.reg(b.fas[1], sd.RegSeqIn, 0); c != delivered {
		t.Errorf("fa2 reg_seq_in[0] = %d, want %d", c, delivered)
	}
	t.Logf("%d cells, latency buckets from %d, mean %.1f (x64 ns)", n, minB, mean)
}

func TestStardustRegisterSizes(t *testing.T) {
	b := newSDBench(t, 1, 2, 1, 2)
	if b.reg(b.fas[0], sd.RegCredit, sd.MaxVOQs-1) != 0 {
		t.Error("reg_credit's last VOQ is not 0")
	}
	for _, c := range []struct {
		sw   *Tofino
		name string
		size int
	}{{b.fas[0], sd.RegCredit, sd.MaxVOQs}, {b.fas[0], sd.RegSeqIn, sd.MaxFAs}, {b.fas[0], sd.RegFCI, sd.PortCount},
		{b.fas[0], sd.RegLatHist, sd.HistBuckets}, {b.fes[0], sd.RegFCIThreshold, 1}} {
		r := b.req(c.sw, "reg.get", fmt.Sprintf(`{"name":%q,"index":%d}`, c.name, c.size))
		if errKind(r) != "bad_request" {
			t.Errorf("%s[%d]: %v, want bad_request", c.name, c.size, r)
		}
	}
	if a := b.reg(b.fes[0], sd.RegReachAge, 300); a != sd.AgeMax {
		t.Errorf("reg_reach_age starts at %d, want %d", a, sd.AgeMax)
	}
}

// fanIn runs FAs 1 and 2 sending to FA 3's port 0 at utilisation rho of
// the port together (256 B frames), FA 3 crediting both round robin at
// port rate x 1.03 in 16-frame credits, the FE's FCI threshold at th
// cells; the senders stop after 30 us, the credits after 40 us.
func fanIn(t *testing.T, seed uint64, rho float64, th int) *sdBench {
	b := newSDBench(t, seed, 3, 1, 10)
	b.ok(b.fes[0], "reg.set", fmt.Sprintf(`{"name":%q,"index":0,"value":%d}`, sd.RegFCIThreshold, th))
	frameNs := (256 + 20) * 8 / 100.0
	period := int64(2 * frameNs / rho)
	for src := 0; src < 2; src++ {
		b.flow(src, 1, 2, src)
		b.app(b.fas[src], 1, 252, period, 30_000/period, 1, sd.Cell{Kind: sd.KindData})
	}
	cp, err := sd.CreditPeriod(100e9, 0.03, 16*256)
	if err != nil {
		t.Fatal(err)
	}
	b.credits(2, [][2]int{{0, 0}, {1, 1}}, 16, cp.Nanoseconds(), fanInCreditNs/cp.Nanoseconds())
	b.wait(fanInCreditNs*time.Nanosecond + 20*time.Microsecond)
	return b
}

// fanInCreditNs is how long fanIn's destination sends credits: long
// enough that the sources' backlog (30 us at up to 1.9 times the port)
// has crossed, its FCI marks cancelled, before the last credit: a mark
// that arrives after it stays pending (a credit loop crosses four
// pipelines, so at 0.95 the cells released by the last credits bring
// about a hundred).
const fanInCreditNs = 100_000

// The last-stage FE queue grows with the load; every cell that found the
// FCI threshold or more ahead of it is marked, every 16 marks (a credit's
// worth) cancel one of the destination port's credits (which never reach
// the wire), and with the threshold out of reach nothing is marked.
func TestStardustFEQueueAndFCI(t *testing.T) {
	means := map[float64]float64{}
	for _, rho := range []float64{0.5, 0.95} {
		b := fanIn(t, 1, rho, 1<<20)
		n, _, mean := histStats(b.hist(b.fes[0], sd.RegQHist))
		means[rho] = mean
		if got := b.counter(b.fas[2], sdHostPort, "$FramesTransmittedOK"); n != got || got == 0 {
			t.Errorf("rho %.2f: FE queue histogram holds %d cells, %d delivered", rho, n, got)
		}
		if f := b.reg(b.fas[2], sd.RegFCI, 0); f != 0 {
			t.Errorf("rho %.2f: %d FCI marks with the threshold out of reach", rho, f)
		}
	}
	if means[0.95] <= means[0.5] {
		t.Errorf("mean FE queue bucket %.3f at 0.95, %.3f at 0.5: want it to grow with load", means[0.95], means[0.5])
	}

	const th = 8 // buffer cells: two 256 B frames
	b := fanIn(t, 1, 0.95, th)
	h := b.hist(b.fes[0], sd.RegQHist)
	var above int64
	for bk := th >> sd.QHistShift; bk < len(h); bk++ {
		above += h[bk]
	}
	cp, _ := sd.CreditPeriod(100e9, 0.03, 16*256)
	emitted := fanInCreditNs / cp.Nanoseconds()
	onWire := b.counter(b.fas[2], sdFabricPort(0), "$FramesTransmittedLength_eq_64")
	pending := b.reg(b.fas[2], sd.RegFCI, 0)
	if above < 16 || above != 16*(emitted-onWire)+pending || pending >= 16 {
		t.Errorf("%d cells found %d cells or more; credits cancelled %d of %d, %d marks pending: want marks = 16 x cancelled + pending (under 16) = cells above",
			above, th, emitted-onWire, emitted, pending)
	}
	t.Logf("mean queue bucket %.3f at 0.5, %.3f at 0.95; %d marked", means[0.5], means[0.95], above)
}

// Credits bound what a VOQ sends: offered 1.2 times the fabric link's
// rate, with credits for a 40G port (40G x 1.03), the fabric delivers the
// credited rate and no more, and the frames the recirculation port cannot
// hold are dropped and counted by tm.queue on it.
func TestStardustCreditsBoundTheRate(t *testing.T) {
	b := newSDBench(t, 2, 2, 1, 2)
	b.flow(0, 1, 1, 0)
	const runNs = 600_000
	b.app(b.fas[0], 1, 252, 18, runNs/18, 1, sd.Cell{Kind: sd.KindData}) // 1.23 x 100G
	cp, err := sd.CreditPeriod(40e9, 0.03, 16*256)
	if err != nil {
		t.Fatal(err)
	}
	b.credits(1, [][2]int{{0, 0}}, 16, cp.Nanoseconds(), runNs/cp.Nanoseconds())
	b.wait(runNs * time.Nanosecond)
	delivered := b.counter(b.fas[1], sdHostPort, "$FramesTransmittedOK")
	credited := float64(runNs/cp.Nanoseconds()) * 16
	line := runNs / ((256 + 20) * 8 / 100.0)
	if float64(delivered) > credited || float64(delivered) < 0.98*credited {
		t.Errorf("delivered %d frames in %d ns; credits for %.0f, line rate %.0f", delivered, runNs, credited, line)
	}
	q := b.ok(b.fas[0], "tm.queue", `{"pipe":1,"pg_id":17,"pg_queue":0}`)
	if q["drop_count_packets"].(float64) <= 0 || q["watermark_cells"].(float64) < sdRecircCapBytes/sd.TMCellBytes*0.9 {
		t.Errorf("recirculation queue %v: want it full and dropping", q)
	}
	t.Logf("delivered %d (%.3f of line rate), recirculation %v", delivered, float64(delivered)/line, q)
}

// Reachability cells keep the ages of live links low; a dark fibre stops
// them, and both ends of the link age while the others do not.
func TestStardustDarkFibreAges(t *testing.T) {
	b := newSDBench(t, 3, 2, 2, 2)
	for _, sw := range append(append([]*Tofino{}, b.fas...), b.fes...) {
		ports := []int{sdFabricPort(0), sdFabricPort(1)}
		for i, p := range ports {
			b.ok(sw, "table.add", fmt.Sprintf(`{"name":%q,"key":{"packet_id":%d},"action":"reach_on","data":{"link":%d}}`, sd.TableReachPort, i, p))
		}
		b.app(sw, 2, 60, 1000, 50, len(ports), sd.Cell{Kind: sd.KindReach})
		b.app(sw, 3, 60, 1000, 50, 200, sd.Cell{Kind: sd.KindAge})
	}
	b.wait(10 * time.Microsecond)
	for _, sw := range b.fes {
		if a := b.reg(sw, sd.RegReachAge, sdFabricPort(0)); a > 1 {
			t.Errorf("%s: age %d on a live link", sw.name, a)
		}
	}
	b.voa.Channels[0].SetShutter(false) // fa1-fe1 dark
	b.wait(30 * time.Microsecond)
	if a := b.reg(b.fes[0], sd.RegReachAge, sdFabricPort(0)); a < 15 {
		t.Errorf("fe1's port from fa1: age %d after 20 us dark", a)
	}
	if a := b.reg(b.fas[0], sd.RegReachAge, sdFabricPort(0)); a < 15 {
		t.Errorf("fa1's port to fe1: age %d after 20 us dark", a)
	}
	if a := b.reg(b.fes[0], sd.RegReachAge, sdFabricPort(1)); a > 1 {
		t.Errorf("fe1's port from fa2: age %d", a)
	}
	if a := b.reg(b.fas[0], sd.RegReachAge, sdFabricPort(1)); a > 1 {
		t.Errorf("fa1's port to fe2: age %d", a)
	}
}

// The same seed gives the same histograms.
func TestStardustDeterministic(t *testing.T) {
	run := func() []int64 {
		b := fanIn(t, 9, 0.9, 1<<20)
		return append(b.hist(b.fas[2], sd.RegLatHist), b.hist(b.fes[0], sd.RegQHist)...)
	}
	x, y := run(), run()
	for i := range x {
		if x[i] != y[i] {
			t.Fatalf("seed 9 twice: bucket %d differs (%d, %d)", i, x[i], y[i])
		}
	}
}

// The bench's fabric (8 FAs x 4 FEs at 100G, simlab/benches/stardust.yaml)
// under uniform all-to-all traffic at 90% of the host ports' rate, 256 B
// frames, credits at port rate x 1.03: reports the frames that cross a
// fabric link per wall second and the simulated microseconds per wall
// second, each iteration one millisecond of the bench's clock.
func BenchmarkStardustBenchFabric(b *testing.B) {
	f := newSDBench(b, 1, 8, 4, 2)
	n := len(f.fas)
	cp, err := sd.CreditPeriod(100e9, 0.03, 16*256)
	if err != nil {
		b.Fatal(err)
	}
	period := int64(math.Round((256 + 20) * 8 / 100.0 / 0.9))
	const horizon = 1 << 40 // batches: more than any run takes
	for i, fa := range f.fas {
		var others [][2]int
		for k := 0; k < n; k++ {
			if k != i {
				others = append(others, [2]int{k, i})
			}
		}
		for s := 0; s < sd.MaxLinks; s++ {
			dst := others[s%len(others)][0]
			f.ok(fa, "table.add", fmt.Sprintf(`{"name":%q,"key":{"app_id":1,"slot":%d},"action":"to_voq","data":{"fa":%d,"port":0,"voq":%d,"tc":0}}`, sd.TableGenFlow, s, dst, dst))
		}
		f.credits(i, others, 16, cp.Nanoseconds(), horizon)
		f.app(fa, 1, 252, period, horizon, 1, sd.Cell{Kind: sd.KindData})
	}
	f.wait(100 * time.Microsecond)
	f.dp.mu.Lock()
	hops0 := f.dp.sd.fab.Hops
	f.dp.mu.Unlock()
	start := f.dp.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.wait(start + time.Duration(i+1)*time.Millisecond)
	}
	b.StopTimer()
	f.dp.mu.Lock()
	hops := f.dp.sd.fab.Hops - hops0
	f.dp.mu.Unlock()
	wall := b.Elapsed().Seconds()
	f.dp.mu.Lock()
	fab := f.dp.sd.fab
	b.Logf("generated %d, delivered %d, in flight %d", fab.Generated, fab.Delivered, fab.InFlight())
	f.dp.mu.Unlock()
	b.ReportMetric(float64(hops)/wall, "frames/s")
	b.ReportMetric(float64(b.N)*1000/wall, "sim-us/s")
}

// A generator buffer is checked; a topology the fabric cannot hold is an
// error of the op that moves the clock, naming the switches, once an
// application generates.
func TestStardustBadInput(t *testing.T) {
	b := newSDBench(t, 1, 2, 1, 2)
	for _, bad := range []string{`"zz"`, `"0011"`, `7`} {
		r := b.req(b.fas[0], "pktgen.start", fmt.Sprintf(`{"app_id":1,"egress_port":176,"pkt_len":64,"timer_ns":100,"batches":1,"packets_per_batch":1,"buffer_hex":%s}`, bad))
		if errKind(r) != "bad_request" {
			t.Errorf("buffer_hex %s: %v, want bad_request", bad, r)
		}
	}
	// Inter-batch jitter: timed for a Stardust application with a cell,
	// refused where the switch does not follow the frames (no buffer) and
	// out of the field's range.
	for _, bad := range []string{`"ibg_jitter_ns":-1`, `"ibg_jitter_ns":4294967296`, `"ibg_jitter_ns":"5"`} {
		r := b.req(b.fas[0], "pktgen.start", `{"app_id":5,"egress_port":176,"pkt_len":64,"timer_ns":100,"batches":1,"packets_per_batch":1,`+bad+`}`)
		if errKind(r) != "bad_request" {
			t.Errorf("%s: %v, want bad_request", bad, r)
		}
	}
	// Without a buffer: generated at its period (below line rate), moving nothing.
	b.ok(b.fas[0], "pktgen.start", `{"app_id":4,"egress_port":176,"pkt_len":64,"timer_ns":1000,"batches":3,"packets_per_batch":2}`)
	b.wait(10 * time.Microsecond)
	if n := b.sent(b.fas[0], 4); n != 6 {
		t.Errorf("an application without a buffer generated %d frames, want 6", n)
	}
	if n := b.counter(b.fas[0], sdFabricPort(0), "$FramesTransmittedOK"); n != 0 {
		t.Errorf("an application without a buffer sent %d frames to the fabric", n)
	}
	b.ok(b.fas[1], "table.del", fmt.Sprintf(`{"name":%q,"key":{}}`, sd.TableWhoami))
	b.ok(b.fas[1], "table.add", fmt.Sprintf(`{"name":%q,"key":{},"action":"set_id","data":{"id":0}}`, sd.TableWhoami))
	b.wait(time.Microsecond) // nothing generates: no error
	b.app(b.fes[0], 2, 60, 1000, 10, 1, sd.Cell{Kind: sd.KindAge})
	r := b.req(b.fas[0], "time.wait", `{"until_ns":20000}`)
	e, _ := r["error"].(map[string]any)
	if msg, _ := e["message"].(string); r["ok"] != false || !strings.Contains(msg, "fa1") || !strings.Contains(msg, "fa2") {
		t.Errorf("two FAs with id 0: %v", r)
	}
}

// lossyFibre sets the VOA on fa1-fe1 to the attenuation that loses a
// share p of 256 B frames (bisected on the optics' frame loss
// probability) and returns the probability it set.
func (b *sdBench) lossyFibre(p float64) float64 {
	fibre, _ := b.w.Fibre("fa1-fe1")
	ch := b.voa.Channels[0]
	lo, hi := 0.0, 30.0
	for i := 0; i < 50; i++ {
		ch.SetAttenuation((lo + hi) / 2)
		if fibre.FrameLossProbability(256) < p {
			lo = (lo + hi) / 2
		} else {
			hi = (lo + hi) / 2
		}
	}
	return fibre.FrameLossProbability(256)
}

// A corrupting fibre loses frames at the optics' frame loss probability:
// they count as FCS errors at the receiving port, never reach the FE, and
// the first lost data frame stalls its source's later frames at the
// destination (in-order release; reg_reasm_timeout left at 0, no timeout).
func TestStardustCorruptingFibre(t *testing.T) {
	b := newSDBench(t, 4, 2, 1, 2)
	p := b.lossyFibre(0.02)
	b.flow(0, 1, 1, 0)
	b.ok(b.fas[0], "reg.set", fmt.Sprintf(`{"name":%q,"index":0,"value":%d}`, sd.RegCredit, sd.CreditCapFrames))
	b.app(b.fas[0], 1, 252, 100, 20_000, 1, sd.Cell{Kind: sd.KindData})
	b.credits(1, [][2]int{{0, 0}}, 16, 1000, 2_000)
	b.wait(2100 * time.Microsecond)
	tx := b.counter(b.fas[0], sdFabricPort(0), "$FramesTransmittedOK")
	bad := b.counter(b.fes[0], sdFabricPort(0), "$FramesReceivedwithFCSError")
	ok := b.counter(b.fes[0], sdFabricPort(0), "$FramesReceivedOK")
	if tx != bad+ok || tx < 20_000 {
		t.Fatalf("sent %d, received %d good and %d bad", tx, ok, bad)
	}
	mean := p * float64(tx)
	if sigma := math.Sqrt(mean); math.Abs(float64(bad)-mean) > 5*sigma {
		t.Errorf("%d of %d frames corrupted; the optics give p = %.4f, %.0f expected", bad, tx, p, mean)
	}
	released := b.counter(b.fas[1], sdHostPort, "$FramesTransmittedOK")
	next := b.reg(b.fas[1], sd.RegSeqIn, 0)
	if released != next || released >= 20_000-bad {
		t.Errorf("released %d, reg_seq_in %d: want the source stalled at its first lost frame", released, next)
	}
	t.Logf("p %.4f: %d of %d corrupted; released %d before the stall", p, bad, tx, released)
}

// The reassembly timer through the agent protocol: with the same lossy
// fibre at 2% loss and reg_reasm_timeout at 20 us on the destination, a
// lost frame stalls its source only until the frame after it is 20 us
// old; then reg_seq_in moves past the gap, reg_reasm_drops counts it, and
// the frames after it are released: what was released and what was given
// up make up every number the source sent but a lost tail. About 400 gaps
// in 2 ms: given up one timeout at a time, as the stall-age design did,
// they would take 8 ms; per frame, the last is given up 20 us after the
// last frame was sent.
func TestStardustReassemblyTimeout(t *testing.T) {
	b := newSDBench(t, 4, 2, 1, 2)
	b.lossyFibre(0.02)
	b.flow(0, 1, 1, 0)
	b.ok(b.fas[0], "reg.set", fmt.Sprintf(`{"name":%q,"index":0,"value":%d}`, sd.RegCredit, sd.CreditCapFrames))
	b.ok(b.fas[1], "reg.set", fmt.Sprintf(`{"name":%q,"index":0,"value":20000}`, sd.RegReasmTimeout))
	b.app(b.fas[0], 1, 252, 100, 20_000, 1, sd.Cell{Kind: sd.KindData})
	b.credits(1, [][2]int{{0, 0}}, 16, 1000, 2_000)
	b.wait(2100 * time.Microsecond)
	tx := b.counter(b.fas[0], sdFabricPort(0), "$FramesTransmittedOK")
	bad := b.counter(b.fes[0], sdFabricPort(0), "$FramesReceivedwithFCSError")
	if tx < 20_000 || bad < 200 {
		t.Fatalf("sent %d frames, %d corrupted: want 20000 and about 2%%", tx, bad)
	}
	released := b.counter(b.fas[1], sdHostPort, "$FramesTransmittedOK")
	next := b.reg(b.fas[1], sd.RegSeqIn, 0)
	drops := b.reg(b.fas[1], sd.RegReasmDrops, 0)
	// 2.1 ms: 100 us after the last frame was sent, every lost frame but a
	// lost tail (no later frame to stall) is given up.
	if released+drops != next || drops > bad || drops < bad-3 || next < 20_000-3 {
		t.Errorf("released %d + given up %d, reg_seq_in %d; %d corrupted: want the sum to be reg_seq_in (about 20000) and every corrupted frame given up",
			released, drops, next, bad)
	}
	// Port 196's queue SD_REASM_QID: the early frames' queue.
	if q := b.ok(b.fas[1], "tm.queue", fmt.Sprintf(`{"pipe":1,"pg_id":17,"pg_queue":%d}`, sd.ReasmQID)); q["drop_count_packets"].(float64) != 0 || q["watermark_cells"].(float64) == 0 {
		t.Errorf("early frames' queue %v: want it used and never full", q)
	}
	t.Logf("%d of %d corrupted; released %d, given up %d", bad, tx, released, drops)
}
