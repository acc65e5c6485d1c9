package tofino

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	ts "testbed/p4/timestamp"
	"testbed/simlab/phy"
	"testbed/simlab/physics"
)

// The PHY side of a simulated switch: its ports' speed and FEC changes
// (port.mode), the traffic manager's cut-through setting per egress port
// (port.cut_through), the MAC's transmit timestamps (port.tx_tstamp), the
// RS/FC FEC counters (port.fec_stat), and the timestamp program's probes,
// which travel a snake of ports with every timestamp taken from the PHY
// model of the link they cross (simlab/phy).

// fecState is a switch's PHY state, guarded by the switch's mu.
type fecState struct {
	links    map[int]*portPHY    // egress dev port -> its transmit link
	ct       map[int]bool        // egress dev port -> cut-through enabled
	tx       map[int][]txStamp   // egress dev port -> transmit timestamp FIFO
	counters map[int]*fecCounter // ingress dev port -> FEC counters
}

type portPHY struct {
	key  string // speed and FEC it was built for
	link *phy.Link
}

type txStamp struct{ value, id int64 }

// fecCounter accumulates a receiving port's codeword statistics.
type fecCounter struct {
	since        time.Duration
	corr, uncorr int64
	ser          [4]int64
	rng          *rand.Rand
	hiSER        bool
}

// Timing of the simulated switch and its cabling (stated assumptions).
const (
	// pktgenPort is Tofino 1's packet-generator port of pipe 0: where a
	// probe enters the ingress pipeline.
	pktgenPort = 68
	// pipelineNs is the switch's own port-to-port latency before the egress
	// MAC: the 300 ns of a state-of-the-art switch the FEC paper cites (§1,
	// its ref. [16]); a stated parameter, not a measured Tofino figure.
	pipelineNs = 300.0
	// patchNs is a patch cord's or a loopback module's propagation delay
	// (2 m of fibre at 5 ns/m).
	patchNs = 10.0
	// maxLaneSkewNs bounds the lane-to-lane skew a multi-lane port's cabling
	// gives (ribbon fibres and board traces differ by a metre or two at
	// most; 802.3 clause 80.5 allows up to 180 ns at the receiver).
	maxLaneSkewNs = 12.0
	// hiSERWindow and hiSERThreshold: an RS-FEC receiver raises hi_ser when
	// more than 417 symbol errors arrive in 8192 codewords (IEEE 802.3
	// clause 91.5.3.3, RS(528,514); clause 119.2.5.3 gives 6380 for
	// RS(544,514)).
	hiSERWindow = 8192
)

func (t *Tofino) fecLocked() *fecState {
	if t.fec == nil {
		t.fec = &fecState{links: map[int]*portPHY{}, ct: map[int]bool{}, tx: map[int][]txStamp{}, counters: map[int]*fecCounter{}}
	}
	return t.fec
}

// seedFor is a deterministic stream per switch, port and purpose.
func (t *Tofino) seedFor(what string, port int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%s/%d", t.name, what, port)
	return h.Sum64()
}

// phyConfig is the PHY of a port at its speed and FEC: lanes and their
// signalling rates from IEEE 802.3 (clause 107 25GBASE-R, 95 100GBASE-SR4,
// 138 50GBASE-SR, 49 10GBASE-R), each lane's skew and the alignment point of
// the port's PCS drawn from the switch's seed (a port aligns when its link
// comes up), and the clock offset of the switch: every port of one switch
// runs from its reference clock (within 802.3's +-100 ppm).
func (t *Tofino) phyConfig(p *simPort) (phy.LinkConfig, error) {
	var c phy.LinkConfig
	fec := phy.FECNone
	switch p.fec {
	case "BF_FEC_TYP_FC":
		fec = phy.FECFire
	case "BF_FEC_TYP_RS":
		fec = phy.FECRS528
	}
	switch p.gbps {
	case 10:
		c = phy.LinkConfig{LaneRate: 10.3125e9, Lanes: 1, FEC: fec}
	case 25:
		c = phy.Preset25G(fec)
	case 50:
		if fec == phy.FECRS528 {
			c = phy.Preset50GPAM4() // RS on a 50G port is RS(544,514) (simPort.fecName)
		} else {
			c = phy.LinkConfig{LaneRate: phy.Lane25G, Lanes: 2, FEC: fec}
		}
	case 100:
		c = phy.LinkConfig{LaneRate: phy.Lane25G, Lanes: 4, FEC: fec}
	default:
		return c, fmt.Errorf("port %d: no PHY model for %d G", p.dev, p.gbps)
	}
	c.Name = fmt.Sprintf("%s/%d", t.name, p.dev)
	r := rand.New(rand.NewPCG(t.dp.world.Seed(), t.seedFor("phy", p.dev)))
	c.PPM = t.ppm()
	c.AlignNs = r.Float64() * 500
	c.PropagationNs = patchNs
	if c.Lanes > 1 {
		c.SkewNs = make([]float64, c.Lanes)
		for i := range c.SkewNs {
			c.SkewNs[i] = math.Round(r.Float64()*maxLaneSkewNs*10) / 10
		}
	}
	return c, nil
}

// ppm is the offset of the switch's reference clock: the one it was
// given, or its own draw from the world's seed.
func (t *Tofino) ppm() float64 {
	if t.clockPPM != nil {
		return *t.clockPPM
	}
	return (rand.New(rand.NewPCG(t.dp.world.Seed(), t.seedFor("clock", 0))).Float64()*2 - 1) * 100
}

// linkLocked is the transmit link of an egress port in its current mode.
func (t *Tofino) linkLocked(dev int) (*phy.Link, error) {
	p := t.ports[dev]
	if p == nil {
		return nil, fmt.Errorf("port %d is not added", dev)
	}
	st := t.fecLocked()
	key := fmt.Sprintf("%d/%s", p.gbps, p.fec)
	if pp := st.links[dev]; pp != nil && pp.key == key {
		return pp.link, nil
	}
	cfg, err := t.phyConfig(p)
	if err != nil {
		return nil, err
	}
	l, err := phy.NewLink(cfg)
	if err != nil {
		return nil, err
	}
	st.links[dev] = &portPHY{key: key, link: l}
	return l, nil
}

// fecPort is the added port the call's dev_port names, and the PHY
// state. With t.mu held.
func (t *Tofino) fecPort(c opCall) (int, *simPort, *fecState, error) {
	dev64, err := argInt(c.args, "dev_port")
	if err != nil {
		return 0, nil, nil, err
	}
	dev := int(dev64)
	p := t.ports[dev]
	if p == nil {
		return 0, nil, nil, notFound("port %d is not added", dev)
	}
	return dev, p, t.fecLocked(), nil
}

func (t *Tofino) opPortFECStat(c opCall) (any, error) {
	dev, err := argInt(c.args, "dev_port")
	if err != nil {
		return nil, err
	}
	return t.fecStat(int(dev))
}

// opPortMode is port.mode. With t.mu held.
func (t *Tofino) opPortMode(c opCall) (any, error) {
	dev, p, st, err := t.fecPort(c)
	if err != nil {
		return nil, err
	}
	sp, err := argStr(c.args, "speed")
	if err != nil {
		return nil, err
	}
	fec, err := argStr(c.args, "fec")
	if err != nil {
		return nil, err
	}
	g, known := speedGbps[sp]
	if !known {
		return nil, badReq("speed %q", sp)
	}
	if fec != "BF_FEC_TYP_NONE" && fec != "BF_FEC_TYP_RS" && fec != "BF_FEC_TYP_FC" {
		return nil, badReq("fec %q", fec)
	}
	prev := map[string]any{"speed": fmt.Sprintf("BF_SPEED_%dG", p.gbps), "fec": p.fec, "enabled": p.enabled}
	changed := g != p.gbps || fec != p.fec
	if changed {
		// As the agent does on a switch: delete and add again with the
		// old enable state; the port's counters start from zero.
		t.ports[dev] = &simPort{dev: dev, gbps: g, fec: fec, enabled: p.enabled, counters: map[string]int64{}}
		delete(st.links, dev)
		delete(st.counters, dev)
		delete(st.tx, dev)
	}
	return map[string]any{"previous": prev, "changed": changed}, nil
}

// opPortCutThrough is port.cut_through. With t.mu held.
func (t *Tofino) opPortCutThrough(c opCall) (any, error) {
	dev, _, st, err := t.fecPort(c)
	if err != nil {
		return nil, err
	}
	prev := st.ct[dev]
	if raw, given := c.args["enable"]; given {
		var on bool
		if err := json.Unmarshal(raw, &on); err != nil {
			return nil, badReq("enable: expected true or false")
		}
		st.ct[dev] = on
	}
	return map[string]any{"previous": prev, "enabled": st.ct[dev]}, nil
}

// opPortTxTstamp is port.tx_tstamp. With t.mu held.
func (t *Tofino) opPortTxTstamp(c opCall) (any, error) {
	dev, _, st, err := t.fecPort(c)
	if err != nil {
		return nil, err
	}
	q := st.tx[dev]
	if len(q) == 0 {
		return map[string]any{"valid": false, "value": 0, "id": 0}, nil
	}
	st.tx[dev] = q[1:]
	return map[string]any{"valid": true, "value": q[0].value, "id": q[0].id}, nil
}

// rxLine is what arrives at a receiving port: the pre-FEC bit error ratio
// of its fibre (0 on a loopback module or a port without optics) and
// whether the link is up. portUp reads the clock and the links under the
// dataplane's lock, as the port status does (the read raced with an
// advance of the clock on another connection: TestFECCountersWhileTheClockMoves).
func (d *Dataplane) rxLine(sw *Tofino, dev int) (ber float64, up bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	up = d.portUp(sw, dev)
	for _, l := range d.links {
		if l.rx == sw && l.rxPort == dev {
			rx := l.fibre.EyePowerDBmAt(d.now) // the eye the decoder sees
			if math.IsInf(rx, -1) {
				return 0.5, up
			}
			return l.fibre.Transceiver.BER(rx), up
		}
	}
	return 0, up
}

// fecCode is the receiving port's code as the counters see it.
type fecCode struct {
	rs       physics.FEC // RS(N,K) with its T; zero for the Fire code
	fire     bool
	bits     int     // line bits per codeword
	lineBps  float64 // all lanes
	lanes    int
	thresh   float64 // hi_ser threshold per 8192 codewords
	resolved bool
}

func codeOf(p *simPort) (fecCode, error) {
	c := fecCode{lanes: 1}
	switch p.gbps {
	case 10:
		c.lineBps = 10.3125e9
	case 25:
		c.lineBps = phy.Lane25G
	case 50:
		c.lineBps, c.lanes = 2*phy.Lane25G, 2
		if p.fec == "BF_FEC_TYP_RS" {
			c.lineBps, c.lanes = phy.Lane50GPAM4, 1
		}
	case 100:
		c.lineBps, c.lanes = 4*phy.Lane25G, 4
	default:
		return c, fmt.Errorf("port %d: no FEC model for %d G", p.dev, p.gbps)
	}
	switch p.fec {
	case "BF_FEC_TYP_RS":
		rs, err := physics.FECByName(p.fecName())
		if err != nil {
			return c, err
		}
		c.rs, c.bits, c.resolved = rs, rs.N*rs.SymbolBits, true
		c.thresh = 417
		if rs.T == 15 {
			c.thresh = 6380
		}
	case "BF_FEC_TYP_FC":
		c.fire, c.bits, c.resolved = true, 2112, true
	}
	return c, nil
}

// codewordOdds are the probabilities that a codeword is corrected (it had
// errors, all within the code's reach) or uncorrectable, and the mean
// number of symbol errors in a codeword, for independent bit errors at ber.
// Reed-Solomon: symbol error ps = 1-(1-ber)^10; X ~ Binomial(N, ps)
// symbol errors; corrected when 1 <= X <= T (T = 7 for RS(528,514), 15 for
// RS(544,514), IEEE 802.3 clause 91.5.3.3, 134.5.3.3), uncorrectable when
// X > T (physics.CodewordFailure). Fire code (2112,2080): it corrects one
// burst of up to 11 bits (clause 74.7.4.6); independent errors make a block
// with one error correctable and, in the model, one with two or more not
// (two independent errors within 11 bits of each other are rare).
func (c fecCode) codewordOdds(ber float64) (corr, uncorr, meanSym float64) {
	if ber <= 0 {
		return 0, 0, 0
	}
	if c.fire {
		n := float64(c.bits)
		none := math.Exp(n * math.Log1p(-ber))
		one := n * ber * math.Exp((n-1)*math.Log1p(-ber))
		return one, math.Max(0, 1-none-one), n * ber
	}
	ps := -math.Expm1(float64(c.rs.SymbolBits) * math.Log1p(-ber))
	any := -math.Expm1(float64(c.rs.N) * math.Log1p(-ps))
	uncorr = physics.CodewordFailure(c.rs, ber)
	return math.Max(0, any-uncorr), uncorr, float64(c.rs.N) * ps
}

// fecStat brings a port's FEC counters up to the dataplane's clock and
// reads them, named as the SDE's port manager names them
// (bf_port_rs_fec_status_and_counters_get: hi_ser, fec_align_status,
// fec_corr_cnt, fec_uncorr_cnt, fec_ser_lane_0..3). Codewords arrive
// continuously while the link is up, idles or frames alike: their number is
// the time elapsed times the line rate over the codeword's bits.
func (t *Tofino) fecStat(dev int) (any, error) {
	ber, up := t.dp.rxLine(t, dev)
	now := t.dp.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.ports[dev]
	if p == nil {
		return nil, notFound("port %d is not added", dev)
	}
	code, err := codeOf(p)
	if err != nil {
		return nil, err
	}
	st := t.fecLocked()
	c := st.counters[dev]
	if c == nil {
		c = &fecCounter{since: now, rng: rand.New(rand.NewPCG(t.dp.world.Seed(), t.seedFor("fec", dev)))}
		st.counters[dev] = c
	}
	if code.resolved && up && now > c.since {
		n := int64((now - c.since).Seconds() * code.lineBps / float64(code.bits))
		corr, uncorr, meanSym := code.codewordOdds(ber)
		nc := physics.Binomial(c.rng, n, corr)
		nu := physics.Binomial(c.rng, n-nc, math.Min(1, uncorr/math.Max(1e-300, 1-corr)))
		c.corr += nc
		c.uncorr += nu
		// Symbol errors the decoder located, spread over the lanes the
		// codewords are striped on (clause 91.5.2.7: round robin).
		if nc > 0 {
			perCorr := meanSym / math.Max(corr+uncorr, 1e-300) // mean errors given at least one
			if corr+uncorr == 0 {
				perCorr = 1
			}
			total := int64(math.Round(float64(nc) * math.Max(1, perCorr)))
			for i := 0; i < code.lanes && i < len(c.ser); i++ {
				share := total / int64(code.lanes)
				if int64(i) < total%int64(code.lanes) {
					share++
				}
				c.ser[i] += share
			}
		}
		c.hiSER = !code.fire && meanSym*hiSERWindow > code.thresh
		c.since = now
	}
	if !up {
		c.since = now
	}
	res := map[string]any{"time_ns": int64(now), "hi_ser": c.hiSER && up, "fec_align_status": up && code.resolved,
		"fec_corr_cnt": c.corr, "fec_uncorr_cnt": c.uncorr}
	for i := 0; i < 4; i++ {
		res[fmt.Sprintf("fec_ser_lane_%d", i)] = c.ser[i]
	}
	return res, nil
}

// peer is where a frame leaving sw's port arrives: the other end of its
// fibre, or the port itself when no fibre is known (a loopback module);
// and whether both ends are up (under the dataplane's lock, which portUp
// needs).
func (d *Dataplane) peer(sw *Tofino, dev int) (*Tofino, int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	nsw, nport := sw, dev
	for _, l := range d.links {
		if l.tx == sw && l.txPort == dev {
			nsw, nport = l.rx, l.rxPort
			break
		}
	}
	return nsw, nport, d.portUp(sw, dev) && d.portUp(nsw, nport)
}

// maxSnakeHops ends a snake that loops.
const maxSnakeHops = 64

// sendProbes is the timestamp program's answer to its packet generator:
// app.total probes of app.pktLen bytes (plus FCS), one every timer, enter
// ingress at the generator port, are stamped at every ingress (the MAC's
// timestamp: when the PHY has delivered the Ethernet header) and egress, and
// follow the snake table from port to port. Each frame is placed into the
// stream of every link it crosses after whatever that link carried before
// it, so its offset within the codewords is the traffic's doing; the time
// the next switch may forward it is the cut-through or store-and-forward
// rule of its egress port (phy.ReadyNs).
func (t *Tofino) sendProbes(app *pktgenApp, timerNs int64) error {
	start := float64(t.dp.Now())
	size := app.pktLen + 4
	for i := int64(0); i < app.total; i++ {
		at := start + float64(i*timerNs)
		if err := t.probe(at, size, uint16(i)); err != nil {
			return err
		}
	}
	t.dp.mu.Lock()
	app.sent, app.done, app.enabled = app.total, true, false
	t.dp.mu.Unlock()
	return nil
}

// setRegLocked writes a register of the running program, if it has it.
func (t *Tofino) setRegLocked(name string, idx int, v int64) {
	if r, ok := t.regs[name]; ok {
		r[idx] = v
	}
}

func stamp32(ns float64) int64 { return int64(uint32(int64(math.Round(ns)))) }

// probe walks one probe through the snake.
func (t *Tofino) probe(at float64, size int, seq uint16) error {
	sw, ing := t, pktgenPort
	var in *phy.Frame // the frame as the ingress received it (nil from the generator)
	rxTs := at
	for hop := 0; hop < maxSnakeHops; hop++ {
		sw.mu.Lock()
		sw.setRegLocked(ts.RegRxTs, ing, stamp32(rxTs))
		var e simEntry
		found := false
		for _, x := range sw.tables[ts.TableSnake] {
			if x.Key[ts.KeyIngressPort] == int64(ing) {
				e, found = x, true
			}
		}
		if !found || e.Action != ts.ActionForward {
			sw.mu.Unlock()
			return nil // dropped: the end of the snake
		}
		out := int(e.Data[ts.ParamPort])
		link, err := sw.linkLocked(out)
		if err != nil {
			sw.mu.Unlock()
			return fmt.Errorf("timestamp probe %d: egress %w", seq, err)
		}
		mode := phy.StoreAndForward
		if sw.fecLocked().ct[out] {
			mode = phy.CutThrough
		}
		ready := rxTs + pipelineNs
		if in != nil {
			ready = phy.ReadyNs(mode, *in, pipelineNs, link.DataRate())
		}
		sw.setRegLocked(ts.RegTxTs, out, stamp32(ready))
		f, err := link.Send(ready, size)
		if err != nil {
			sw.mu.Unlock()
			return err
		}
		st := sw.fecLocked()
		st.tx[out] = append(st.tx[out], txStamp{value: int64(math.Round(f.HeaderTxNs)), id: int64(seq)})
		if len(st.tx[out]) > 1024 { // the port manager's FIFO is finite: the oldest go
			st.tx[out] = st.tx[out][1:]
		}
		sw.mu.Unlock()
		sw.countTx(out, 1, int64(size))
		nsw, nport, up := t.dp.peer(sw, out)
		if !up {
			return nil // a down link loses it
		}
		if p := nsw.port(nport); p != nil {
			p.add("$FramesReceivedAll", 1)
			p.add("$FramesReceivedOK", 1)
			p.add("$OctetsReceived", int64(size))
			p.add(rxLength(int64(size)), 1)
		}
		fr := f
		in, sw, ing, rxTs = &fr, nsw, nport, f.HeaderNs
	}
	return fmt.Errorf("timestamp probe %d: the snake loops beyond %d hops", seq, maxSnakeHops)
}

// fireFrameLoss is the probability that a frame of frameBytes (FCS
// included) is lost on a BASE-R FEC link at a pre-FEC bit error ratio: its
// bits and 8 bytes of preamble ride 65 bits per 64 (each block's sync header
// compressed to one bit) in blocks of 2080 message bits (clause 74.7.1),
// starting on a block boundary, so it spans ceil(L/2080) or one more of
// them; it is lost when any of them is uncorrectable (codewordOdds).
func fireFrameLoss(ber float64, frameBytes int) float64 {
	_, fail, _ := fecCode{fire: true, bits: 2112}.codewordOdds(ber)
	if fail <= 0 {
		return 0
	}
	l := float64(frameBytes+8) * 8 * 65 / 64
	spans := math.Floor(l/2080) + 1
	f := l/2080 - math.Floor(l/2080)
	lok := math.Log1p(-fail)
	ok := (1-f)*math.Exp(spans*lok) + f*math.Exp((spans+1)*lok)
	return math.Max(0, math.Min(1, 1-ok))
}

// fecDelay is what a port's FEC adds, on average, to the time a frame of
// frameBytes takes to arrive whole at the far end: the store-and-forward
// latency over back-to-back frames (their headers at every offset the
// traffic gives) through the port's PHY less the same PHY without FEC
// (simlab/phy). The LinkGuardian model takes it as part of the link's one
// way, where its fixed port-to-port latency has no FEC in it.
func (t *Tofino) fecDelay(p *simPort, frameBytes int) time.Duration {
	if p == nil || p.fec == "BF_FEC_TYP_NONE" {
		return 0
	}
	on, err := t.phyConfig(p)
	if err != nil {
		return 0
	}
	off := on
	off.FEC, off.DecodeNs = phy.FECNone, 0
	if on.FEC == phy.FECRS528 && on.LaneRate == phy.Lane50GPAM4 {
		off.LaneRate, off.Lanes = phy.Lane25G, 2 // 50G without FEC is 2 x 25G NRZ
	}
	const frames = 400 // enough to visit every block offset of a codeword
	a, err := phy.MeasureHop(on, frameBytes, frames)
	if err != nil {
		return 0
	}
	b, err := phy.MeasureHop(off, frameBytes, frames)
	if err != nil {
		return 0
	}
	return time.Duration(math.Max(0, a.StoreAndForward.Mean-b.StoreAndForward.Mean))
}
