package tofino

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	lg "testbed/p4/linkguardian"
	"testbed/simlab/lgmodel"
	"testbed/simlab/physics"
	"testbed/simlab/world"
)

// Dataplane is the traffic between simulated switches: for every fibre
// joining two switch ports it runs the packet-level LinkGuardian model
// (lgmodel) with the corruption the fibre's optics give at that moment, in
// the protection mode, copies and thresholds the two switches' programs
// are configured with. Its clock is simulated and moves only when a
// switch is asked to wait for a time or for its packet generator, so a
// seeded run gives the same counters at the same instants every time.
type Dataplane struct {
	world *world.World

	// mu guards the dataplane and the models of its runs. Lock order:
	// mu first, then a switch's (Tofino.mu: addTraffic takes the
	// sender's, then the receiver's, one at a time), then a port's
	// (simPort.mu); memoMu is taken alone. A switch's handler that needs
	// the dataplane takes mu before its own lock (agentOp.locked,
	// opTMQueue), never with it held.
	mu sync.Mutex
	// waiting counts callers that must not wait for a long advance to
	// finish (a generator's stop): advance lets them in between chunks.
	waiting atomic.Int32
	now     time.Duration
	links   []*swLink
	runs    []*lgRun
	follow  []*following // traffic of others across the fibres (follow.go)
	nfollow uint64
	sd      *sdEngine // the Stardust fabric (stardust_dp.go)
	ec      *ecEngine // the ecmp fabric (ecmp_dp.go)
	ecSws   []*Tofino // switches that started an ecmp application
	// programs counts the switches' (re)starts with a program (reset);
	// fabrics is which switches run Stardust and ecmp as of a count, so
	// that an advance's chunks look only at those, not at every fibre's
	// switches (fabricSwitches).
	programs atomic.Uint64
	fabrics  fabricSwitches

	// The optics' last answers (physics.go's pure functions of their
	// arguments), asked again at every chunk of a long advance: the
	// same question gets the same answer without the work.
	// cfgEpoch counts the times an advance took the lock: a run's
	// configuration read from the switches' tables, registers and ports
	// is kept for the chunks of one (config).
	cfgEpoch  uint64
	advancing bool

	// txQueueEager asks a run's Tx buffer queue at every accounting, as
	// the switch did before it asked when the queue is read: tests
	// compare the two.
	txQueueEager bool
	// lightEveryChunk reads the light at every chunk of an advance, as
	// the switch did before it kept a steady fibre's reading (config),
	// and afterChunk, when set, is called after every chunk with the
	// clock: tests change the optics mid-advance and compare the two.
	lightEveryChunk bool
	afterChunk      func(now time.Duration)

	memoMu sync.Mutex
	berQ   berKey
	berA   float64
	lossQ  lossKey
	lossA  float64
}

type berKey struct {
	tr physics.Transceiver
	rx float64
	ok bool
}

type lossKey struct {
	tr    physics.Transceiver
	fec   physics.FEC
	rx    float64
	bytes int
	fire  bool // BF_FEC_TYP_FC: fec.go's fireFrameLoss
	ok    bool
}

// ber is tr.BER(rx), remembered for the next call with the same arguments.
func (d *Dataplane) ber(tr physics.Transceiver, rx float64) float64 {
	k := berKey{tr: tr, rx: rx, ok: true}
	d.memoMu.Lock()
	defer d.memoMu.Unlock()
	if d.berQ != k {
		d.berQ, d.berA = k, tr.BER(rx)
	}
	return d.berA
}

// frameLoss is a frameBytes frame's loss probability at rx over tr with
// fec (fire: Firecode FEC), remembered for the next call with the same
// arguments.
func (d *Dataplane) frameLoss(tr physics.Transceiver, fec physics.FEC, fire bool, rx float64, frameBytes int) float64 {
	k := lossKey{tr: tr, fec: fec, rx: rx, bytes: frameBytes, fire: fire, ok: true}
	d.memoMu.Lock()
	hit, a := d.lossQ == k, d.lossA
	d.memoMu.Unlock()
	if hit {
		return a
	}
	if fire {
		a = fireFrameLoss(d.ber(tr, rx), frameBytes) // fec.go
	} else {
		a = physics.FrameLossProbability(tr, fec, rx, frameBytes)
	}
	d.memoMu.Lock()
	d.lossQ, d.lossA = k, a
	d.memoMu.Unlock()
	return a
}

// NewDataplane makes an empty dataplane over the world.
func NewDataplane(w *world.World) *Dataplane { return &Dataplane{world: w} }

// swLink is a fibre from a sender switch port to a receiver switch port.
type swLink struct {
	name     string
	tx       *Tofino
	txPort   int
	rx       *Tofino
	rxPort   int
	fibre    *world.Fibre
	sinkPort int    // where the receiver forwards delivered traffic
	nrun     uint64 // packet-generator runs started across it (startApp)
}

// Connect joins tx's port to rx's port through a fibre of the world; rx
// forwards what it delivers out of sinkPort.
func (d *Dataplane) Connect(name string, tx *Tofino, txPort int, rx *Tofino, rxPort int, f *world.Fibre, sinkPort int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.links = append(d.links, &swLink{name: name, tx: tx, txPort: txPort, rx: rx, rxPort: rxPort, fibre: f, sinkPort: sinkPort})
}

// Now is the dataplane's clock.
func (d *Dataplane) Now() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.now
}

// lgRun is one packet-generator application's traffic across a link,
// simulated in segments: a segment ends when anything it was configured
// with changes (loss, protection, copies, thresholds), its tail completes,
// and the next continues with the frames still to send.
type lgRun struct {
	link       *swLink
	app        *pktgenApp
	frameBytes int
	remaining  int64 // frames not yet offered to a segment
	stopped    bool

	seg      *lgmodel.Sim
	segStart time.Duration
	segKey   segConfig
	last     lgmodel.Result // of the current segment, already accounted
	rng      *rand.Rand
	// behind: the segment is to be advanced to this time of the clock
	// when its state is next needed (catchUp), not at every chunk.
	behind  time.Duration
	pending bool
	// The configuration's part read from the switches (config), as of
	// cfgEpoch.
	static      segConfig
	staticEpoch uint64
	staticPorts staticPorts
	// The whole configuration as a chunk of this advance last read it
	// with the light, and the stamp of the fibres it read the light of
	// (lightStamp), kept while they were steady: until their stamp moves
	// the light, and so the configuration, are the same (config).
	lit      segConfig
	litStamp uint64
	litOK    bool
	// goesOnEpoch: the advance (cfgEpoch) in which a chunk last found
	// the configuration the segment's with the light kept (goesOn).
	goesOnEpoch uint64
}

// staticPorts is what a link's ports' state says before the light is
// looked at: whether each end is enabled and agrees with its partner, and
// the fibre whose light decides (nil: none, the port is up), as portUp.
type staticPorts struct {
	txOK, rxOK     bool
	txLink, rxLink *swLink
	tp             bool // the sender's port exists
	fec            physics.FEC
	fire           bool
}

// segConfig is what a segment was started with.
type segConfig struct {
	up          bool
	mode        lgmodel.Mode
	bps, loss   float64
	drop        float64 // the loss-emulation table's part of loss
	copies      int
	pause, resu int
	fec         string
	// What the switches' fixed-function configuration allows (lgsetup.go):
	// copies kept in the Tx buffer, pauses honoured, the dummy and the
	// explicit ACK circulating, the receiver's timer running.
	noTxCopy, noPause, noDummy, noAck, noTimeout bool
}

// linkFor finds the link leaving sw's port.
func (d *Dataplane) linkFor(sw *Tofino, port int) *swLink {
	for _, l := range d.links {
		if l.tx == sw && l.txPort == port {
			return l
		}
	}
	return nil
}

// portUp reports whether a switch port has a link partner agreeing on
// speed and FEC, with light arriving; ports without a fibre (host-facing,
// internal) are up when enabled.
func (d *Dataplane) portUp(sw *Tofino, port int) bool {
	ok, l := d.portState(sw, port)
	return ok && d.light(l)
}

// light: the PCS of the port l's fibre ends at keeps lock (always true
// without a fibre, l nil).
func (d *Dataplane) light(l *swLink) bool {
	if l == nil {
		return true
	}
	return d.lit(l, l.fibre.EyePowerDBmAt(d.now))
}

// lit: the PCS of the port l's fibre ends at keeps lock with rx dBm at
// its eye. It loses lock when the raw bit error ratio nears 1e-3.
func (d *Dataplane) lit(l *swLink, rx float64) bool {
	return !math.IsInf(rx, -1) && d.ber(l.fibre.Transceiver, rx) < 1e-3
}

// portState is portUp before the light: whether the port is enabled and
// agrees with its link partner on speed and FEC, and the link whose fibre
// then decides (nil: a port without a fibre, up when enabled).
func (d *Dataplane) portState(sw *Tofino, port int) (bool, *swLink) {
	p := sw.port(port)
	if p == nil || !p.enabled {
		return false, nil
	}
	for _, l := range d.links {
		var peer *simPort
		switch {
		case l.tx == sw && l.txPort == port:
			peer = l.rx.port(l.rxPort)
		case l.rx == sw && l.rxPort == port:
			peer = l.tx.port(l.txPort)
		default:
			continue
		}
		if peer == nil || !peer.enabled || peer.gbps != p.gbps || peer.fec != p.fec {
			return false, nil
		}
		return true, l
	}
	return true, nil
}

// appState reads a packet-generator application's progress. The dataplane
// moves it under its own lock while traffic runs, so readers take that lock.
func (d *Dataplane) appState(app *pktgenApp) (active, done bool, sent int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return app.enabled && !app.done, app.done, app.sent
}

// lockPromptly takes the dataplane's lock without waiting for a long
// advance of the clock to end: the advance lets it in at its next chunk.
func (d *Dataplane) lockPromptly() {
	d.waiting.Add(1)
	d.mu.Lock()
	d.waiting.Add(-1)
}

// advanceChunk is how much simulated time an advance covers before it
// lets a prompt caller in (a few milliseconds of wall time at 100G).
const advanceChunk = time.Millisecond

// settleEvery bounds how much simulated time a long advance leaves the
// model behind before it catches up (settle): a stop that arrives during
// a wait of seconds of the switch's clock then waits for one piece of the
// model's work, not all of it (a 2 s wait at 100G and 1e-3 loss held the
// lock for minutes under the race detector and the stop timed out; in
// 10 ms pieces the stop is answered in 18 ms, 0.7 s under the detector).
// Catching up in pieces gives the same frames as in one: the model's
// stepping and skipping agree (lgmodel's tests). The bound is this span
// of the clock on a 100G link, and as many frames on a slower one
// (settleSpan).
const settleEvery = 10 * time.Millisecond

// settleSpan is how much of the clock an advance leaves the runs' models
// behind: settleEvery, or longer in proportion where the fastest link a
// model runs on is slower than 100G, so that a piece is about as many
// frames as settleEvery is at 100G (40 ms at 25G: 8.1x10^4 frames of
// 1518 B, as 10 ms at 100G). A catch-up costs the switch's bookkeeping
// (the ports' counters, the registers, the queues) and cuts the model's
// jumps: at 25G a stress test of 10^8 frames made 4,920 catch-ups of
// 10 ms, 33 M of the 69 M instructions the path spent beside the model.
func (d *Dataplane) settleSpan() time.Duration {
	fastest := 0.0
	for _, r := range d.runs {
		if r.seg != nil {
			fastest = max(fastest, r.segKey.bps)
		}
	}
	if fastest <= 0 || fastest >= 100e9 {
		return settleEvery
	}
	return time.Duration(float64(settleEvery) * 100e9 / fastest)
}

// disableApp marks an application stopped, under the dataplane's lock.
func (d *Dataplane) disableApp(app *pktgenApp) {
	d.lockPromptly()
	defer d.mu.Unlock()
	app.enabled = false
}

// startApp begins a packet-generator application's traffic.
func (d *Dataplane) startApp(sw *Tofino, app *pktgenApp) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.linkFor(sw, app.egressPort)
	if l == nil {
		// Traffic to a port with no simulated fibre goes nowhere the
		// model follows: it is counted as sent.
		app.done = true
		app.sent = app.total
		sw.countTx(app.egressPort, app.total, int64(app.pktLen+4))
		return nil
	}
	// A run's randomness is the world's stream for its link and the
	// link's own count of runs: what one link draws does not depend on
	// what other links ran before it, or at the same time.
	l.nrun++
	r := &lgRun{link: l, app: app, frameBytes: app.pktLen + 4, remaining: app.total,
		rng: d.world.Stream(fmt.Sprintf("lgrun/%s/%d", l.name, l.nrun))}
	d.runs = append(d.runs, r)
	return d.newSegment(r)
}

// stopApp ends an application's traffic the way a real generator stops:
// frames not yet sent are never sent, and the frames already sent finish
// their way through the link and its protocol (a copy still to be sent,
// a frame waiting in the reorder buffer for its retransmission or its
// ackNoTimeout), as the switch keeps protecting after its generator
// stops: the tail is completed in simulated time, as when a configuration
// change ends a segment. That takes microseconds of the link's time, and
// the counters are settled when it returns: a later move of the clock
// delivers nothing of this run into the next one.
func (d *Dataplane) stopApp(app *pktgenApp) {
	d.lockPromptly()
	defer d.mu.Unlock()
	kept := d.runs[:0]
	for _, r := range d.runs {
		if r.app != app {
			kept = append(kept, r)
			continue
		}
		r.stopped = true
		r.remaining = 0
		d.catchUp(r)
		if r.seg != nil {
			r.seg.StopOffering()
			r.seg.AdvanceTo(time.Duration(math.MaxInt64))
			d.account(r)
			r.seg = nil
		}
		app.done = true
	}
	d.runs = kept
}

// config reads what a segment would be configured with now.
func (d *Dataplane) config(r *lgRun) (segConfig, error) {
	// Within one advance the switches' state is read once: what the
	// light does is read at every chunk (a scenario's optics move with
	// the clock). A change another connection makes during an advance
	// lands between chunks at a moment no seed decides, so it counts
	// from the next advance, as a change made between two requests does.
	if !d.advancing || r.staticEpoch != d.cfgEpoch {
		c, sp, err := d.staticConfig(r)
		if err != nil {
			return c, err
		}
		r.static, r.staticPorts, r.staticEpoch, r.litOK = c, sp, 0, false
		if d.advancing {
			r.staticEpoch = d.cfgEpoch
		}
	}
	// The light is read at every chunk unless the fibres it is read on
	// were steady when a chunk of this advance read it and nothing has
	// changed them since (world.Fibre.LightStamp): a VOA set or moving,
	// a scenario's impairment. At 25G a stress test's 10^8 frames are
	// 49,200 chunks, and reading the light took a sixth of the path's
	// instructions beside the model.
	if r.litOK && !d.lightEveryChunk && r.lightStamp() == r.litStamp {
		return r.lit, nil
	}
	stamp, steady := r.lightSteady()
	c, err := d.lightConfig(r)
	r.lit, r.litStamp, r.litOK = c, stamp, d.advancing && steady && err == nil
	return c, err
}

// lightStamp is the sum of the stamps of the fibres whose light config
// reads for r: its link's, and those of the links its ends' ports are
// found on (portState).
func (r *lgRun) lightStamp() uint64 {
	n := r.link.fibre.Stamp()
	for _, e := range [2]*swLink{r.staticPorts.txLink, r.staticPorts.rxLink} {
		if e != nil && e != r.link {
			n += e.fibre.Stamp()
		}
	}
	return n
}

// lightSteady is lightStamp, and whether every one of those fibres is
// steady (world.Fibre.LightStamp).
func (r *lgRun) lightSteady() (uint64, bool) {
	n, steady := r.link.fibre.LightStamp()
	for _, e := range [2]*swLink{r.staticPorts.txLink, r.staticPorts.rxLink} {
		if e != nil && e != r.link {
			s, ok := e.fibre.LightStamp()
			n, steady = n+s, steady && ok
		}
	}
	return n, steady
}

// lightConfig is config from the switches' part (r.static) and the light.
func (d *Dataplane) lightConfig(r *lgRun) (segConfig, error) {
	c, sp := r.static, &r.staticPorts
	l := r.link
	// The light at the eye of the run's fibre, a scenario's impairments at
	// the switches' clock less the fibre's dispersion penalty: the ends'
	// ports are on that fibre (portState), and each read asks the
	// attenuator for its output power.
	rx := l.fibre.EyePowerDBmAt(d.now)
	light := func(e *swLink) bool {
		if e == l {
			return d.lit(l, rx)
		}
		return d.light(e)
	}
	c.up = sp.txOK && light(sp.txLink) && sp.rxOK && light(sp.rxLink)
	if !sp.tp {
		return c, nil
	}
	c.loss = 1
	if !math.IsInf(rx, -1) {
		c.loss = d.frameLoss(l.fibre.Transceiver, sp.fec, sp.fire, rx, r.frameBytes)
	}
	// The sender's loss-emulation table drops floor(p*2^20) of 2^20 random values.
	if c.drop > 0 {
		c.loss = 1 - (1-c.loss)*(1-c.drop)
	}
	return c, nil
}

// staticConfig is the part of config the switches' tables, registers and
// ports decide (up and loss left for config).
func (d *Dataplane) staticConfig(r *lgRun) (segConfig, staticPorts, error) {
	l := r.link
	var sp staticPorts
	sp.txOK, sp.txLink = d.portState(l.tx, l.txPort)
	sp.rxOK, sp.rxLink = d.portState(l.rx, l.rxPort)
	tp := l.tx.port(l.txPort)
	var c segConfig
	if tp == nil {
		return c, sp, nil
	}
	sp.tp = true
	c.bps = float64(tp.gbps) * 1e9
	c.fec = tp.fecName()
	fec, err := physics.FECByName(c.fec)
	if err != nil {
		return c, sp, err
	}
	sp.fec, sp.fire = fec, tp.fec == "BF_FEC_TYP_FC"
	if n := l.tx.tableSize(lg.TableEmulateDrop); n > 0 {
		c.drop = float64(n) / (1 << 20)
	}
	c.mode = lgmodel.Off
	if l.tx.programName() == lg.ProgramSender && l.rx.programName() == lg.ProgramReceiver {
		if e, ok := l.tx.entry(lg.TableLinkProtect, "egress_port", l.txPort); ok {
			c.mode = lgmodel.NonBlocking
			if e.Data["blocking_mode"] == 1 {
				c.mode = lgmodel.Ordered
			}
			want := 0 // no entry: retx_one_copy, unicast
			if ce, ok := l.tx.entry(lg.TableRetxMcast, "egress_port", l.txPort); ok && ce.Data["num_copies"] > 0 {
				want = int(ce.Data["num_copies"])
			}
			// The copies a retransmission gets are the replicas the
			// multicast group holds, and none without a loss
			// notification; without the Tx-buffer session there is no
			// copy to send, and without PFC no pause is honoured.
			s := linkSetup(l.tx, l.txPort, l.rx, l.rxPort, want)
			c.copies = s.replicas
			if !s.notify {
				c.copies = 0
			}
			c.noTxCopy, c.noPause = !s.keepCopy, !s.backpressure
			c.noDummy, c.noAck, c.noTimeout = !s.dummy, !s.ack, !s.timer
			c.pause = int(l.rx.reg(lg.RegPauseThreshold, 0))
			c.resu = int(l.rx.reg(lg.RegResumeThreshold, 0))
		}
	}
	return c, sp, nil
}

// courierMaxFrames bounds the generator runs whose Tx buffer queue is
// read with the receiver's courier (lgmodel Config.CourierLoop); a longer
// run reads the copies held (loss-sweep's max_tx_buffer_bytes says so).
// The accounting jumps over steady stretches and replays the stretches
// after losses and the ways on from them from notes (lgmodel
// txpath_memo.go, txpath_tail.go); the lg100 rows at the 1e-10
// resolution (3.84x10^9 frames a point, mostly the 1e-3 points' losses)
// would take 1.65x (97 s of CPU against 59 s, measured with the bound
// lifted; 2.1x before the non-blocking changes), and 25G ordered at 1e-3,
// the table's slowest point, 1.15-1.6x (docs/linkguardian.md).
const courierMaxFrames = 1 << 27

// newSegment starts a segment with the frames still to send.
func (d *Dataplane) newSegment(r *lgRun) error {
	c, err := d.config(r)
	if err != nil {
		return err
	}
	r.segKey, r.segStart, r.last, r.seg = c, d.now, lgmodel.Result{}, nil
	if r.remaining <= 0 {
		return nil
	}
	if !c.up || c.loss >= 0.5 {
		return nil // a dark or down link: the generator's frames go nowhere; wait for a change
	}
	cfg, err := lgmodel.Defaults(c.mode, c.bps, c.loss, r.remaining)
	if err != nil && c.mode == lgmodel.Off {
		// Off needs none of the protocol's measured delays.
		cfg = lgmodel.Config{Mode: lgmodel.Off, LinkBps: c.bps, Loss: c.loss, Frames: r.remaining,
			Pipeline: time.Microsecond, Propagation: 10 * time.Nanosecond, RxBufferCap: 200_000}
		err = nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", r.link.name, err)
	}
	cfg.FrameBytes = r.frameBytes
	// The generator's timer: the model paces the originals when it is
	// longer than a frame's time on the wire (the phase restarts with
	// the segment, frames not yet offered from its start).
	cfg.Period = time.Duration(r.app.timerNs)
	cfg.Drop = c.drop                                                                  // the drops the table takes are counted in lg.RegEmulatedDrops
	cfg.Propagation += r.link.tx.fecDelay(r.link.tx.port(r.link.txPort), r.frameBytes) // fec.go
	cfg.LossSmall = 0
	// Skipped-over runs of at most 256 frames (31 us at 100G). Counters
	// read mid-run are exact either way (lgmodel counts a run's frames as
	// they cross the wire); the cap bounds how far a run that arrives out
	// of order, and so is counted only when it lands, can lag, and with it
	// how far the receiver's reorder-buffer fill (what backpressure pauses
	// on) can overshoot. 8192 made 10^9-frame points cheaper but let the
	// buffer reach 66,960 B against the 45,684 B the pause threshold and
	// four frames in flight allow (the backpressure recipe's test).
	// The cap also bounds what a segment ended mid-run (a configuration
	// change, a generator's stop: StopOffering) still sends: the run
	// under way completes. Uncapped, a lossless link's segment is one
	// run of every frame, all sent at once however early it is stopped.
	// Without a reorder buffer (non-blocking, or protection off) only
	// that bound is left, and 1024 frames (125 us at 100G, 500 us at
	// 25G) keep it small beside a stress test's milliseconds: at 25G
	// and 1e-3, runs of 256 frames made a run between corruptions four
	// runs and the model 1.5x slower, its Tx buffer accounting 1.3-1.6x
	// (BenchmarkRecipeFrames25GNB1e3 against BenchmarkFrames25GNB1e3).
	// The model sends the capped runs of a stretch that start by the
	// time the switch asks for as one (lgmodel runChain): what it gives
	// and what a stop finds sent are those of the runs one by one
	// (TestStoppedGeneratorSentAtMostTheRunUnderWay), and the cap costs
	// a run only where a catch-up or a stop cuts a stretch.
	cfg.MaxRun = 256
	if c.mode != lgmodel.Ordered {
		cfg.MaxRun = 1024
	}
	if c.mode != lgmodel.Off {
		cfg.Copies = c.copies
		cfg.PauseCells, cfg.ResumeCells = c.pause, c.resu
		// Thresholds of zero, or beyond the buffer, mean no backpressure.
		cfg.NoTxCopy = c.noTxCopy
		cfg.NoDummy, cfg.NoAck, cfg.NoTimeout = c.noDummy, c.noAck, c.noTimeout
		cfg.Backpressure = !c.noPause && c.mode == lgmodel.Ordered && c.pause > 0 && c.resu > 0 && c.resu <= c.pause &&
			int64(c.pause)*lg.CellBytes < int64(cfg.RxBufferCap)
		if r.app.total <= courierMaxFrames {
			// The Tx buffer's queue as the courier's cadence fills it
			// (lgmodel txpath.go).
			cfg = cfg.WithCourier()
		}
	}
	seg, err := lgmodel.New(cfg, r.rng)
	if err != nil {
		return err
	}
	r.seg = seg
	r.remaining = 0
	return nil
}

// advance moves the clock to t, rolling segments over where their
// configuration changed. It goes in chunks of advanceChunk and, between
// chunks, lets in a caller that takes the lock promptly (a generator's
// stop), so a stop during a long wait is answered at once.
func (d *Dataplane) advance(t time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cfgEpoch++
	d.advancing = true
	defer func() { d.advancing = false }()
	// The model is advanced and its counters added up when the lock is
	// let go (settle), not at every chunk: nobody reads them in between.
	defer d.settle()
	settled, span := d.now, d.settleSpan()
	for {
		if t < d.now {
			return nil
		}
		step := min(t, d.now+advanceChunk)
		if err := d.advanceLocked(step); err != nil {
			return err
		}
		if d.afterChunk != nil {
			d.afterChunk(d.now)
		}
		if step >= t {
			return nil
		}
		if d.now-settled >= span {
			// The model's work is bounded per piece, so a prompt
			// caller that comes now waits for at most one piece, not
			// for the whole advance's frames at once.
			d.settle()
			settled, span = d.now, d.settleSpan()
		}
		if d.waiting.Load() > 0 {
			d.settle()
			d.advancing = false
			d.mu.Unlock()
			for d.waiting.Load() > 0 {
				runtime.Gosched()
			}
			d.mu.Lock()
			d.cfgEpoch++ // the prompt caller may have changed the switches
			d.advancing = true
			span = d.settleSpan() // and started or stopped a run
		}
	}
}

func (d *Dataplane) advanceLocked(t time.Duration) error {
	for _, r := range d.runs {
		if err := d.advanceRun(r, t); err != nil {
			return err
		}
	}
	if len(d.follow) > 0 {
		d.stepFollowers(d.now, t)
	}
	// The fabrics' switches, read once a chunk for both (fabric_dp.go).
	sd, ec := d.fabricSwitchesLocked()
	if err := d.stepStardust(sd, t); err != nil {
		return err
	}
	if err := d.stepECMP(ec, t); err != nil { // ecmp_dp.go
		return err
	}
	d.now = t
	d.dropEnded()
	return nil
}

// dropEnded takes the runs whose application is done off the list.
func (d *Dataplane) dropEnded() {
	if !slices.ContainsFunc(d.runs, func(r *lgRun) bool { return r.app.done }) {
		return
	}
	kept := d.runs[:0]
	for _, r := range d.runs {
		if !r.app.done {
			kept = append(kept, r)
		}
	}
	d.runs = kept
}

func (d *Dataplane) advanceRun(r *lgRun, t time.Duration) error {
	if r.goesOn(d) {
		r.behind, r.pending = t, true // as below, where nothing changed
		return nil
	}
	for {
		c, err := d.config(r)
		if err != nil {
			return err
		}
		if c != r.segKey && r.pending {
			// The segment is where the clock is before it changes.
			d.catchUp(r)
			if r.app.done {
				return nil // it had ended before the change
			}
		}
		if c != r.segKey {
			// Something changed: end the segment (its tail completes in
			// simulated time), then continue with the rest.
			if r.seg != nil {
				r.seg.StopOffering()
				r.seg.AdvanceTo(time.Duration(math.MaxInt64))
				d.account(r)
				d.now = max(d.now, r.segStart+r.seg.Now())
				r.seg = nil
			}
			r.remaining = max(0, r.app.total-r.app.sent)
			if r.stopped {
				r.remaining = 0
			}
			if err := d.newSegment(r); err != nil {
				return err
			}
		}
		if r.seg == nil {
			d.dropWhileDown(r, t)
			if r.remaining == 0 {
				r.app.done = true
			}
			return nil
		}
		if len(d.follow) == 0 {
			// Nothing changed: the segment goes on as it is. Advancing
			// it only when its state is needed (a configuration change,
			// the lock let go) is exact (lgmodel gives the same for any
			// slicing of its time) and lets it jump over whole cycles
			// that chunk boundaries would cut.
			r.behind, r.pending = t, true
			if r.litOK {
				r.goesOnEpoch = d.cfgEpoch
			}
			return nil
		}
		// Followers add to the same queues: their order of updates
		// stays as it was, chunk by chunk.
		if r.pending {
			d.catchUp(r)
			if r.seg == nil {
				continue
			}
		}
		done := r.seg.AdvanceTo(t - r.segStart)
		d.account(r)
		if done {
			r.seg = nil
			if r.remaining == 0 {
				r.app.done = true
				return nil
			}
			continue
		}
		return nil
	}
}

// goesOn: an earlier chunk of this advance found r's configuration its
// segment's, with the light kept (config), and the light's fibres are
// unchanged since: config would give the segment's configuration again,
// so the chunk leaves the segment to go on as it is without asking (at
// 25G a stress test's 49,200 chunks spent 23 M instructions in config's
// answer and its comparison with the segment's, of the 80 M the path
// spent beside the model).
func (r *lgRun) goesOn(d *Dataplane) bool {
	return r.goesOnEpoch == d.cfgEpoch && d.advancing && r.seg != nil && len(d.follow) == 0 &&
		r.litOK && !d.lightEveryChunk && r.lightStamp() == r.litStamp
}

// dropWhileDown: while the link is down or dark the generator still sends
// at line rate and every frame is lost.
func (d *Dataplane) dropWhileDown(r *lgRun, t time.Duration) {
	from := max(d.now, r.segStart)
	if r.remaining <= 0 || t <= from || r.segKey.bps <= 0 {
		return
	}
	perFrame := max(float64((r.frameBytes+20)*8)/r.segKey.bps, float64(r.app.timerNs)*1e-9) // line rate, or the generator's pace
	n := min(r.remaining, int64((t-from).Seconds()/perFrame))
	if n <= 0 {
		return
	}
	r.remaining -= n
	r.app.sent += n
	r.segStart = from + time.Duration(float64(n)*perFrame*1e9)
	if tp := r.link.tx.port(r.link.txPort); tp != nil && tp.enabled {
		tp.add("$FramesTransmittedAll", n)
		tp.add("$FramesTransmittedOK", n)
		tp.add("$OctetsTransmittedTotal", n*int64(r.frameBytes))
		tp.add(txLength(int64(r.frameBytes)), n)
	}
}

// settle brings every run's segment to the clock and accounts what it
// did: before the dataplane's lock is let go.
func (d *Dataplane) settle() {
	ended := false
	for _, r := range d.runs {
		d.catchUp(r)
		ended = ended || r.app.done
	}
	if ended {
		kept := d.runs[:0]
		for _, r := range d.runs {
			if !r.app.done {
				kept = append(kept, r)
			}
		}
		d.runs = kept
	}
}

// catchUp advances a run's segment to where advanceRun left it behind,
// and accounts it.
func (d *Dataplane) catchUp(r *lgRun) {
	if !r.pending {
		return
	}
	r.pending = false
	if r.seg == nil {
		return
	}
	done := r.seg.AdvanceTo(r.behind - r.segStart)
	d.account(r)
	if done {
		r.seg = nil
		if r.remaining == 0 {
			r.app.done = true
		}
	}
}

// account adds what the segment did since last time to the ports'
// counters and the programs' registers.
func (d *Dataplane) account(r *lgRun) {
	cur := r.seg.Counters() // the Tx buffer queue is asked when read (txqueue.go)
	prev := r.last
	r.last = cur
	r.app.sent += cur.FramesSent - prev.FramesSent
	d.addTraffic(r.link, r.frameBytes, r.segKey.mode, cur, prev, r.seg)
}

// addTraffic adds what traffic of frameBytes frames did on l between
// two readings of its counters to the ports' counters and the programs'
// registers and queues (bufs: the buffers now).
func (d *Dataplane) addTraffic(l *swLink, frameBytes int, mode lgmodel.Mode, cur, prev lgmodel.Result, bufs interface {
	Buffers() (int64, int64, bool)
}) {
	dSent := cur.FramesSent - prev.FramesSent
	dTx := cur.Transmissions - prev.Transmissions
	dDummies := cur.Dummies - prev.Dummies
	dCorrupt := cur.Corrupted - prev.Corrupted
	dDelivered := cur.Delivered - prev.Delivered
	hdr := 0
	if mode != lgmodel.Off {
		hdr = lg.HeaderBytes
	}
	big := int64(frameBytes + hdr)
	small := int64(64 + hdr)
	// Sender port: every transmission leaves it.
	tp := l.tx.port(l.txPort)
	rp := l.rx.port(l.rxPort)
	octets := (dTx-dDummies)*big + dDummies*small
	dPause := cur.PauseFrames - prev.PauseFrames
	tp.addAll(counterAdd{"$FramesTransmittedAll", dTx}, counterAdd{"$FramesTransmittedOK", dTx},
		counterAdd{"$OctetsTransmittedTotal", octets},
		counterAdd{txLength(big), dTx - dDummies}, counterAdd{txLength(small), dDummies},
		counterAdd{"$FramesReceivedPriPause", dPause})
	// Receiver port: what arrives, the corrupted part with an FCS error.
	rp.addAll(counterAdd{"$FramesReceivedAll", dTx}, counterAdd{"$FramesReceivedOK", dTx - dCorrupt},
		counterAdd{"$FramesReceivedwithFCSError", dCorrupt}, counterAdd{"$FrameswithanyError", dCorrupt},
		counterAdd{"$OctetsReceived", octets},
		counterAdd{rxLength(big), dTx - dDummies}, counterAdd{rxLength(small), dDummies},
		counterAdd{"$FramesTransmittedPriPause", dPause})
	// Delivered originals leave the receiver's sink port.
	l.rx.port(l.sinkPort).addAll(counterAdd{"$FramesTransmittedAll", dDelivered}, counterAdd{"$FramesTransmittedOK", dDelivered},
		counterAdd{"$OctetsTransmittedTotal", dDelivered * int64(frameBytes)}, counterAdd{txLength(int64(frameBytes)), dDelivered})
	l.tx.mu.Lock()
	l.tx.addRegLocked(senderSeqReg, 0, dSent)
	l.tx.addRegLocked(lg.RegEmulatedDrops, 0, cur.Dropped-prev.Dropped) // the frames the emulated drop took, as drawn
	if m, ok := bufs.(courierModel); ok && m.HasTxQueue() {
		// The queue the copies the courier's ACK missed wait in: asked
		// when it is read (txqueue.go).
		q := l.tx.queue(lg.RecircPort, lg.QueueTxBuffer)
		q.readLater(m)
		if d.txQueueEager {
			q.catchUp()
		}
	} else {
		l.tx.queueTrack(lg.RecircPort, lg.QueueTxBuffer, bufs, cur.MaxTxBufferBytes, true)
	}
	l.tx.mu.Unlock()
	l.rx.mu.Lock()
	l.rx.addRegLocked(lg.RegTimeoutCount, 0, cur.Timeouts-prev.Timeouts)
	l.rx.addRegLocked(lg.RegExpectedSeqNo, 0, (cur.Delivered+cur.Lost)-(prev.Delivered+prev.Lost))
	l.rx.queueTrack(lg.RecircPort, lg.QueueReorder, bufs, cur.MaxRxBufferBytes, false)
	l.rx.mu.Unlock()
}
