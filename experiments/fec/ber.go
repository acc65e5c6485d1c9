package fec

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"testbed/dut/p4switch"
	"testbed/experiments/lgbench"
	"testbed/experiments/stats"
	o "testbed/orchestrator"
	"testbed/results"
)

// BERName is the recipe's name on the command line.
const BERName = "fec-ber"

// BER implements orchestrator.Recipe.
type BER struct{}

// NewBER returns the recipe.
func NewBER() *BER { return &BER{} }

// Meta implements orchestrator.Recipe.
func (*BER) Meta() o.Meta {
	return o.Meta{
		Name:        BERName,
		Version:     "1.0.0",
		Summary:     "pre-FEC BER, corrected and uncorrectable codewords and frame loss against attenuation, per FEC mode; the margin each FEC buys for its latency (FEC paper Figs. 9-10, §4.5)",
		Description: bERDescription,
		Params:      bERParams(),
		// §4.5: the margin each FEC buys and the latency it costs.
		Headlines: []string{"margins.*.*.margin_db", "margins.*.*.latency_cost_ns"},
	}
}

const bERDescription = `For each selected link (default: every link with a VOA whose ends are on two switches) the
LinkGuardian bench is opened with protection off (the sender's and receiver's programs,
their ports and the sink port, as loss-sweep does). For each FEC mode of fec_modes the link's
speed supports (25G: none, fc, rs528; 50G: rs544; 100G: none, rs528) both ends are set to it,
then for each attenuation of attenuations_db the VOA is set and, once the ports are up,
frames frames of frame_size bytes are sent at line rate. Around the run the receiving port's
FEC counters (corrected and uncorrectable codewords, symbol errors per lane, as the port
manager counts them) are read. pre_fec_ber is symbol errors over the line bits received (one
bit error per symbol error, good below about 1e-4; without FEC it is estimated from the
frames' FCS errors instead); frame loss is 1 - delivered/sent with its 95% Wilson upper
bound (empty pre_fec_ber where every frame was lost). A port that does not come up counts
every frame lost, and the higher attenuations of that mode are not tried. The margin of an FEC mode is
the highest attenuation whose frame loss upper bound is at most target_loss; margin_db is
that less the FEC-off mode's on the same link, and latency_cost_ns the paper's worst FEC
delay per hop for a cut-through switch (§3.1; empty for FC-FEC, which it does not
analyse): the trade §4.5 proposes to manage. The receiver's transceiver power is read when
front_ports names the receiving port. Port modes, the VOA and the bench's ports are
restored at the end or on abort. Writes data/fec_ber.csv and data/fec_margin.csv.`

func bERParams() []o.ParamSpec {
	ps := []o.ParamSpec{
		{Name: "links", Type: o.TypeStrings, Default: []string{}, Description: "links to sweep (default: every link with a VOA between two switches)"},
		{Name: "fec_modes", Type: o.TypeStrings, Default: []string{"none", "fc", "rs528", "rs544"}, Description: "FEC modes to try, each on the links whose speed supports it"},
		{Name: "attenuations_db", Type: o.TypeFloats, Unit: "dB", Default: []float64{7, 7.5, 8, 8.5, 9, 9.5, 10, 10.5, 11}, Min: o.Bound(0), Max: o.Bound(60), Description: "VOA attenuations to sweep"},
		{Name: "frames", Type: o.TypeInt, Unit: "frames", Default: int64(65536), Min: o.Bound(100), Max: o.Bound(1e10), Description: "line-rate frames per point (the generator sends whole batches of up to 65536)"},
		{Name: "frame_size", Type: o.TypeInt, Unit: "B", Default: int64(1518), Min: o.Bound(64), Max: o.Bound(9216), Description: "L2 frame size including FCS"},
		{Name: "target_loss", Type: o.TypeFloat, Default: 1e-4, Min: o.Bound(1e-12), Max: o.Bound(0.5), Description: "frame loss a mode must stay under (95% upper bound) for its margin"},
		{Name: "front_ports", Type: o.TypeStrings, Default: []string{}, Description: "front-panel number of switch ports, device:port=number, to read the receiver's transceiver power"},
		{Name: "up_timeout", Type: o.TypeDuration, Default: 2 * time.Second, Min: o.Bound(0.001), Max: o.Bound(3600), Description: "how long a port may take to come up at a point before it counts as down"},
	}
	for _, p := range lgbench.Params() {
		switch p.Name {
		case "sink_port", "pktgen_port", "replace_program", "port_up_timeout":
			ps = append(ps, p)
		}
	}
	return ps
}

// BERTables are the recipe's tables.
func BERTables() []results.Table {
	return []results.Table{
		{Name: "fec_ber", Title: "FEC counters and frame loss against attenuation",
			Description: "One row per link, FEC mode and attenuation.",
			Fields: []results.Field{
				{Name: "link", Type: "string"}, {Name: "speed_gbps", Type: "integer", Unit: "Gb/s"}, {Name: "fec", Type: "string"},
				{Name: "attenuation_db", Type: "number", Unit: "dB"},
				{Name: "rx_dbm", Type: "number", Unit: "dBm", Description: "receiver's transceiver power (worst lane), when its front port is known"},
				{Name: "up", Type: "boolean", Description: "the ports came up"},
				{Name: "codewords", Type: "integer", Description: "codewords received during the run (its device time x line rate / codeword bits)"},
				{Name: "corrected", Type: "integer", Description: "codewords the decoder corrected"},
				{Name: "uncorrectable", Type: "integer", Description: "codewords beyond the code's reach"},
				{Name: "symbol_errors", Type: "integer", Description: "symbol errors over every lane"},
				{Name: "pre_fec_ber", Type: "number", Unit: "1", Description: "bit error ratio before FEC (see the recipe's description)"},
				{Name: "pre_fec_ber_high", Type: "number", Unit: "1", Description: "95% upper bound of pre_fec_ber (drawn where nothing was seen)"},
				{Name: "frames_sent", Type: "integer", Unit: "frames"}, {Name: "frames_delivered", Type: "integer", Unit: "frames"},
				{Name: "fcs_errors", Type: "integer", Unit: "frames"},
				{Name: "frame_loss", Type: "number", Unit: "1", Description: "1 - delivered/sent"},
				{Name: "frame_loss_high", Type: "number", Unit: "1", Description: "95% Wilson upper bound of frame_loss"},
			},
			Figures: []results.Figure{
				{Name: "pre-fec-ber", Title: "Pre-FEC bit error ratio against attenuation",
					Caption: "What the FEC counters say of the line: symbol errors per bit received (from FCS errors without FEC). Open markers: nothing seen, drawn at the 95% upper bound.",
					Kind:    results.Line, X: "attenuation_db", Y: "pre_fec_ber", ZeroAt: "pre_fec_ber_high", Series: []string{"link", "fec"}, Legend: "{link} {fec}", LogY: true,
					XLabel: "VOA attenuation (dB)", YLabel: "Pre-FEC BER"},
				{Name: "frame-loss", Title: "Frame loss after FEC against attenuation",
					Caption: "In the lab's terms, the FEC paper's Figs. 9-10: each code holds the frame loss down to a higher attenuation (lower received power) than no FEC; a stronger code further. Open markers: no frame lost, drawn at the 95% upper bound.",
					Kind:    results.Line, X: "attenuation_db", Y: "frame_loss", ZeroAt: "frame_loss_high", Series: []string{"link", "fec"}, Legend: "{link} {fec}", LogY: true,
					XLabel: "VOA attenuation (dB)", YLabel: "Frame loss rate"},
			}},
		{Name: "fec_margin", Title: "Margin each FEC buys, and its latency cost",
			Description: "One row per link and FEC mode: the highest attenuation whose frame loss upper bound stays at most target_loss, its gain over FEC off, and the paper's worst FEC delay per cut-through hop.",
			Fields: []results.Field{
				{Name: "link", Type: "string"}, {Name: "speed_gbps", Type: "integer", Unit: "Gb/s"}, {Name: "fec", Type: "string"},
				{Name: "max_attenuation_db", Type: "number", Unit: "dB", Description: "highest swept attenuation with frame_loss_high <= target_loss (empty: none)"},
				{Name: "margin_db", Type: "number", Unit: "dB", Description: "max_attenuation_db less FEC off's on this link"},
				{Name: "latency_cost_ns", Type: "number", Unit: "ns", Description: "§3.1 worst FEC delay per cut-through hop (0 without FEC; empty for FC-FEC)"},
			},
			Figures: []results.Figure{{Name: "margin-vs-latency", Title: "Margin bought against latency paid, per FEC",
				Caption: "The FEC paper's §4.5 trade: each point is an FEC mode on a link, how many dB more attenuation it takes before frames are lost (against no FEC) and the worst latency it adds per cut-through hop.",
				Kind:    results.Scatter, X: "latency_cost_ns", Y: "margin_db", Series: []string{"link", "fec"}, Legend: "{link} {fec}",
				XLabel: "Worst FEC latency per hop (ns)", YLabel: "Margin over FEC off (dB)"}},
		},
	}
}

// BERPoint is one point's summary.
type BERPoint struct {
	PreFECBER     *float64 `json:"pre_fec_ber,omitempty"` // nil where every frame was lost
	Corrected     int64    `json:"corrected"`
	Uncorrectable int64    `json:"uncorrectable"`
	FrameLoss     float64  `json:"frame_loss"`
	FrameLossHigh float64  `json:"frame_loss_high"`
}

// Margin is one FEC mode's margin on a link.
type Margin struct {
	MaxAttenuationDB *float64 `json:"max_attenuation_db"`
	MarginDB         *float64 `json:"margin_db,omitempty"`
	LatencyCostNs    *float64 `json:"latency_cost_ns,omitempty"`
}

// BERSummary is summary.json: per link, FEC mode and attenuation ("9.5").
type BERSummary struct {
	Partial bool                                      `json:"partial"`
	Points  map[string]map[string]map[string]BERPoint `json:"points"`
	Margins map[string]map[string]Margin              `json:"margins"`
}

type berState struct {
	mu      sync.Mutex
	points  map[string]map[string]map[string]BERPoint
	margins map[string]map[string]Margin
}

func dbKey(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Plan implements Recipe.
func (r *BER) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	links, binds, err := lgbench.Bind(pc, p.Strings("links"), p.String("sink_port"))
	if err != nil {
		return nil, err
	}
	atts := p.Floats("attenuations_db")
	if len(atts) == 0 {
		return nil, o.Inputf("attenuations_db: empty")
	}
	slices.Sort(atts)
	for _, l := range links {
		if err := pc.CheckAttenuation(l.VOA, l.VOAChannel, atts[len(atts)-1]); err != nil {
			return nil, o.Inputf("attenuations_db: %v", err)
		}
	}
	fronts, err := frontPorts(p.Strings("front_ports"))
	if err != nil {
		return nil, err
	}
	for _, m := range p.Strings("fec_modes") {
		if !slices.Contains([]string{"none", "fc", "rs528", "rs544"}, m) {
			return nil, o.Inputf("fec_modes: %q (expected none, fc, rs528 or rs544)", m)
		}
	}
	st := &berState{points: map[string]map[string]map[string]BERPoint{}, margins: map[string]map[string]Margin{}}
	plan := &o.Plan{Bindings: binds, Tables: BERTables(),
		Summary: func(partial bool) (any, error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			return BERSummary{Partial: partial, Points: st.points, Margins: st.margins}, nil
		}}
	for _, l := range links {
		var modes []PHY
		for _, m := range p.Strings("fec_modes") {
			if ph, err := phyOf(l.Gbps, m); err == nil {
				modes = append(modes, ph)
			}
		}
		// FEC off first: the others' margins are counted from it.
		slices.SortStableFunc(modes, func(a, b PHY) int { return boolInt(a.FEC != "none") - boolInt(b.FEC != "none") })
		if len(modes) == 0 {
			return nil, o.Inputf("fec_modes %v: none runs at %s's %d G", p.Strings("fec_modes"), l.Link.Name, l.Gbps)
		}
		sw := &berSweep{l: l, atts: atts, st: st, p: p, fb: int(p.Int("frame_size")), target: p.Float("target_loss")}
		sw.front, sw.hasFront = fronts[l.Receiver+":"+l.Link.B.Port]
		devs := []string{l.Sender, l.Receiver, l.VOA}
		plan.Steps = append(plan.Steps, &o.Step{Name: l.Link.Name + ": switches", Action: "prepare-switches", Devices: devs[:2],
			Settings: []o.Setting{{Device: l.Sender, Name: fmt.Sprintf("port %d", l.TxPort), Value: fmt.Sprintf("%dG", l.Gbps)},
				{Device: l.Receiver, Name: fmt.Sprintf("ports %d, %d (sink)", l.RxPort, l.Sink), Value: fmt.Sprintf("%dG", l.Gbps)}},
			Run: func(ctx context.Context, rc *o.RunContext) error {
				var err error
				sw.bench, err = lgbench.Open(ctx, rc, l, lgbench.OpenOptions(p))
				return err
			}})
		for _, ph := range modes {
			plan.Steps = append(plan.Steps, &o.Step{Name: fmt.Sprintf("%s: %s sweep", l.Link.Name, ph.FEC), Action: "fec-sweep", Devices: devs,
				Settings: []o.Setting{{Device: l.Sender, Name: fmt.Sprintf("port %d fec", l.TxPort), Value: ph.FEC}, {Device: l.Receiver, Name: fmt.Sprintf("port %d fec", l.RxPort), Value: ph.FEC},
					{Device: l.VOA, Name: fmt.Sprintf("ch%d.attenuation", l.VOAChannel), Value: fmt.Sprint(atts), Unit: "dB"}},
				Run: func(ctx context.Context, rc *o.RunContext) error { return sw.run(ctx, rc, ph) }})
		}
	}
	return plan, nil
}

// frontPorts parses front_ports (device:port=number).
func frontPorts(entries []string) (map[string]int, error) {
	fronts := map[string]int{}
	for _, e := range entries {
		k, v, ok := strings.Cut(e, "=")
		n, err := strconv.Atoi(v)
		if !ok || !strings.Contains(k, ":") || err != nil || n < 0 {
			return nil, o.Inputf("front_ports entry %q: expected device:port=number", e)
		}
		fronts[k] = n
	}
	return fronts, nil
}

// berSweep is one link's sweeps, a FEC mode each, over the attenuations.
type berSweep struct {
	l        lgbench.Link
	bench    *lgbench.Bench // set by the link's prepare step
	atts     []float64
	st       *berState
	p        *o.Params
	fb       int
	target   float64
	front    int
	hasFront bool
}

// run sweeps the attenuations with FEC mode ph on both ends, from the
// lowest; past a point where a port went down nothing more is tried.
func (sw *berSweep) run(ctx context.Context, rc *o.RunContext, ph PHY) error {
	l, p := sw.l, sw.p
	if sw.bench == nil {
		return o.Skip("the switches of %s were not prepared", l.Link.Name)
	}
	tx := &snake{rc: rc, dev: l.Sender, sw: sw.bench.Tx}
	rx := &snake{rc: rc, dev: l.Receiver, sw: sw.bench.Rx}
	if err := tx.setMode(ctx, l.TxPort, l.Gbps, ph.FEC); err != nil {
		return err
	}
	if err := rx.setMode(ctx, l.RxPort, l.Gbps, ph.FEC); err != nil {
		return err
	}
	tbl, err := rc.Table("fec_ber")
	if err != nil {
		return err
	}
	best := math.NaN()
	down := false
	for _, att := range sw.atts {
		if down {
			// More attenuation than a port already lost: not tried.
			if err := tbl.Write(l.Link.Name, l.Gbps, ph.FEC, att, nil, false, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil); err != nil {
				return err
			}
			continue
		}
		if err := rc.SetAttenuation(ctx, l.VOA, l.VOAChannel, att); err != nil {
			return err
		}
		pt, up, rxPower, err := berPoint(ctx, sw.bench, ph, sw.fb, int(p.Int("pktgen_port")), p.Int("frames"), p.Duration("up_timeout"), sw.front, sw.hasFront)
		if err != nil {
			return err
		}
		if err := tbl.Write(l.Link.Name, l.Gbps, ph.FEC, att, rxPower, up, pt.codewords, pt.Corrected, pt.Uncorrectable, pt.symbols,
			opt(pt.ber, true), opt(pt.berHigh, !math.IsNaN(pt.berHigh)), pt.sent, pt.delivered, pt.fcs, pt.FrameLoss, pt.FrameLossHigh); err != nil {
			return err
		}
		if pt.FrameLossHigh <= sw.target {
			best = att
		}
		down = !up
		sw.st.add(l.Link.Name, ph.FEC, att, pt)
		rc.Event(results.Event{Type: "measurement", Device: l.Receiver, Message: fmt.Sprintf("%s %s at %.2f dB: pre-FEC BER %.3g, %d corrected, %d uncorrectable, frame loss %.3g",
			l.Link.Name, ph.FEC, att, pt.ber, pt.Corrected, pt.Uncorrectable, pt.FrameLoss),
			Fields: map[string]any{"link": l.Link.Name, "fec": ph.FEC, "attenuation_db": att, "pre_fec_ber": opt(pt.ber, true), "frame_loss": pt.FrameLoss}})
	}
	return sw.st.margin(rc, l.Link.Name, l.Gbps, ph, best, sw.fb)
}

// add records a point of link's sweep with fec at att.
func (st *berState) add(link, fec string, att float64, pt berMeasured) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.points[link] == nil {
		st.points[link] = map[string]map[string]BERPoint{}
	}
	if st.points[link][fec] == nil {
		st.points[link][fec] = map[string]BERPoint{}
	}
	if !math.IsNaN(pt.ber) {
		pt.PreFECBER = ptr(pt.ber)
	}
	st.points[link][fec][dbKey(att)] = pt.BERPoint
}

type berMeasured struct {
	BERPoint
	ber                  float64
	codewords, symbols   int64
	sent, delivered, fcs int64
	berHigh              float64
}

// berPoint measures one attenuation: FEC counters around a line-rate run.
func berPoint(ctx context.Context, b *lgbench.Bench, ph PHY, fb, pktgen int, frames int64, upTimeout time.Duration, front int, hasFront bool) (berMeasured, bool, any, error) {
	m := berMeasured{berHigh: math.NaN()}
	m.ber = math.NaN()
	var rx any
	if hasFront {
		if optics, ok := b.Rx.(p4switch.Optics); !ok {
			// A driver that reads no diagnostics leaves the power unknown.
		} else if lanes, err := optics.Transceiver(ctx, front); err == nil && len(lanes) > 0 {
			w := lanes[0].RxDBm
			for _, ln := range lanes {
				w = math.Min(w, ln.RxDBm)
			}
			rx = w
		}
	}
	wctx, cancel := context.WithTimeout(ctx, upTimeout)
	up := b.Tx.WaitPortUp(wctx, b.TxPort) == nil && b.Rx.WaitPortUp(wctx, b.RxPort) == nil
	cancel()
	if ctx.Err() != nil {
		return m, false, rx, ctx.Err()
	}
	before, err := b.Rx.FECCounters(ctx, b.RxPort)
	if err != nil {
		return m, up, rx, fmt.Errorf("%s: %w", b.Receiver, err)
	}
	s := lgbench.Stress{AppID: 1, PktgenPort: pktgen, FrameBytes: fb, Poll: time.Millisecond, Frames: frames}
	res, err := b.Run(ctx, s)
	if err != nil {
		return m, up, rx, err
	}
	after, err := b.Rx.FECCounters(ctx, b.RxPort)
	if err != nil {
		return m, up, rx, fmt.Errorf("%s: %w", b.Receiver, err)
	}
	m.sent, m.delivered, m.fcs = res.Sent, res.Delivered, res.FCS
	m.FrameLoss = float64(res.Lost()) / float64(max(1, res.Sent))
	_, m.FrameLossHigh = stats.Wilson(res.Lost(), res.Sent, stats.Z95)
	m.Corrected, m.Uncorrectable = after.Corrected-before.Corrected, after.Uncorrected-before.Uncorrected
	for i := range after.SymbolErrors {
		m.symbols += after.SymbolErrors[i] - before.SymbolErrors[i]
	}
	if ph.CodeBits > 0 && up {
		m.codewords = int64((after.Time - before.Time).Seconds() * ph.Baud * float64(ph.Lanes) / float64(ph.CodeBits))
		bits := m.codewords * int64(ph.CodeBits)
		if bits > 0 {
			m.ber = float64(m.symbols) / float64(bits)
			_, m.berHigh = stats.Wilson(m.symbols, bits, stats.Z95)
		}
	} else if res.Sent > 0 && res.Lost() < res.Sent && up {
		// Without FEC: a frame survives when none of its 8*size bits flipped.
		bits := float64(8 * fb)
		m.ber = -math.Log1p(-math.Min(m.FrameLoss, 1-1e-12)) / bits
		_, hi := stats.Wilson(res.Lost(), res.Sent, stats.Z95)
		m.berHigh = -math.Log1p(-math.Min(hi, 1-1e-12)) / bits
	}
	return m, up, rx, nil
}

// margin records a mode's margin once its sweep is done.
func (st *berState) margin(rc *o.RunContext, link string, gbps int, ph PHY, best float64, fb int) error {
	tbl, err := rc.Table("fec_margin")
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.margins[link] == nil {
		st.margins[link] = map[string]Margin{}
	}
	m := Margin{}
	if !math.IsNaN(best) {
		m.MaxAttenuationDB = ptr(best)
	}
	if off, ok := st.margins[link]["none"]; ok && off.MaxAttenuationDB != nil && m.MaxAttenuationDB != nil {
		m.MarginDB = ptr(best - *off.MaxAttenuationDB)
	}
	if ph.FEC == "none" {
		m.LatencyCostNs, m.MarginDB = ptr(0), nil
		if m.MaxAttenuationDB != nil {
			m.MarginDB = ptr(0)
		}
	} else if pr, ok := ph.Predict(fb, false); ok {
		m.LatencyCostNs = ptr(pr.MaxNs)
	}
	st.margins[link][ph.FEC] = m
	val := func(v *float64) any {
		if v == nil {
			return nil
		}
		return *v
	}
	return tbl.Write(link, gbps, ph.FEC, val(m.MaxAttenuationDB), val(m.MarginDB), val(m.LatencyCostNs))
}
