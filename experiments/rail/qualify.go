package rail

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"testbed/dut/p4switch"
	"testbed/experiments/lgbench"
	"testbed/experiments/rail/topo"
	"testbed/experiments/stats"
	"testbed/inventory"
	o "testbed/orchestrator"
	"testbed/results"
)

// QualifyName is the recipe's name on the command line.
const QualifyName = "link-qualify"

// Qualify implements orchestrator.Recipe.
type Qualify struct{}

// NewQualify returns the recipe.
func NewQualify() *Qualify { return &Qualify{} }

// Meta implements orchestrator.Recipe.
func (*Qualify) Meta() o.Meta {
	return o.Meta{
		Name:        QualifyName,
		Version:     "1.2.0",
		Summary:     "per link: transceiver diagnostics at both ends and a line-rate LPER test; writes a RAIL link table",
		Description: qualifyDescription,
		Params:      qualifyParams(),
		// Each link's packet error rate and its 95% upper bound.
		Headlines: []string{"links.*.lper", "links.*.lper_high", "links.*.attenuation_ab_db"},
	}
}

const qualifyDescription = `For each selected link between two switches (default: every link the LinkGuardian bench
can drive: a VOA on it, its ends on two switches), read the transceivers' digital
diagnostics at both ends (Rx and Tx power and bias per lane, through the switch's platform
CLI; the port's front-panel number comes from front_ports), derive the attenuation of each
direction (Tx power at one end less Rx power at the other, worst lane) and their
asymmetry, then send full-size frames at line rate from the sending switch's packet
generator for the stated seconds with every protection off and count, on the switches'
own counters, the frames sent and those the receiving switch delivered: the LPER is
lost/sent with its 95% Wilson interval; FCS errors are counted too. On an RS-FEC link the
receiver's FEC counters, read before and after, give the pre-FEC BER (corrected symbol
errors over bits) and a lower bound of the post-FEC BER (data/fec.csv); a switch driver
that reads no FEC counters leaves them unknown, and the summary's fec_note says so.
The VOA's attenuation is
not touched (the link is qualified as it is); a closed shutter is opened for
the run and closed again at its end.

With both_directions (default) b -> a is tested the same way after a -> b: the receiving
switch's packet generator sends out of its end of the link and the sending switch's port
counts the frames received OK (RAIL §2.3: high attenuation is asymmetric, a dirty
connector being on one fibre). data/links.csv, the RAIL link table rail-topology reads,
has both rates (b -> a empty when not tested, which rail-topology reads as the a -> b
rate). Roles come from the inventory option role. Writes data/ddm.csv (per end and lane), data/lper.csv and
data/links.csv; the summary has per link its attenuations, asymmetry, LPER with interval
and a health word: good (upper bound <= 1.2e-8, RAIL's 1e-12 BER for 1518 B frames), gray
(<= 0.1) or off (> 0.1, which RAIL turns off).`

func qualifyParams() []o.ParamSpec {
	ps := []o.ParamSpec{
		{Name: "links", Type: o.TypeStrings, Default: []string{}, Description: "links to qualify (default: every link with a VOA between two switches)"},
		// RAIL §4: "we measure packet corruption rate (LPER) with full-sized,
		// line rate traffic for five minutes".
		{Name: "seconds", Type: o.TypeFloat, Unit: "s", Default: 10.0, Min: o.Bound(1e-6), Max: o.Bound(3600), Description: "line-rate test per link, in seconds of traffic"},
		{Name: "frame_size", Type: o.TypeInt, Unit: "B", Default: int64(1518), Min: o.Bound(64), Max: o.Bound(9216), Description: "L2 frame size including FCS"},
		{Name: "front_ports", Type: o.TypeStrings, Default: []string{}, Description: "front-panel number of switch ports, device:port=number (for the transceiver diagnostics; a port without one is not read)"},
		{Name: "both_directions", Type: o.TypeBool, Default: true, Description: "also test b -> a: the receiving switch's packet generator sends, the sending switch's port counts"},
		{Name: "front_from_names", Type: o.TypeBool, Default: false, Description: "take a port named p<N> that front_ports leaves out as front-panel port N (the built-in benches name ports so)"},
	}
	for _, p := range lgbench.Params() {
		switch p.Name {
		case "sink_port", "pktgen_port", "replace_program", "port_up_timeout":
			ps = append(ps, p)
		}
	}
	return ps
}

// QualifyTables are the recipe's data tables.
func QualifyTables() []results.Table {
	lt := Tables()[0]
	lt.Title = "RAIL link table"
	lt.Description = "One row per qualified link, in the format rail-topology reads (experiments/rail/README.md): both directions' rates (b -> a empty when both_directions is off, which rail-topology reads as the a -> b rate); attenuations are from the transceivers' diagnostics (worst lane)."
	return []results.Table{
		{Name: "ddm", Title: "Transceiver diagnostics", Description: "One row per link end and lane, as the switch's platform CLI reports them before the test.",
			Fields: []results.Field{
				{Name: "link", Type: "string"}, {Name: "device", Type: "string"}, {Name: "port", Type: "string"}, {Name: "front_port", Type: "integer"},
				{Name: "lane", Type: "integer"}, {Name: "tx_dbm", Type: "number", Unit: "dBm"}, {Name: "rx_dbm", Type: "number", Unit: "dBm"},
				{Name: "bias_ma", Type: "number", Unit: "mA"},
			}},
		{Name: "lper", Title: "Link packet error rate", Description: "One row per link and tested direction: frames the sender's packet generator sent at line rate with protection off, those the receiver delivered, and lper = lost/sent with its 95% Wilson interval.",
			Fields: []results.Field{
				{Name: "link", Type: "string"}, {Name: "from", Type: "string"}, {Name: "to", Type: "string"},
				{Name: "transceiver", Type: "string"}, {Name: "fec", Type: "string"}, {Name: "frame_bytes", Type: "integer", Unit: "B"},
				{Name: "seconds", Type: "number", Unit: "s", Description: "device time from start to the generator done"},
				{Name: "frames_sent", Type: "integer", Unit: "frames"}, {Name: "frames_delivered", Type: "integer", Unit: "frames"},
				{Name: "frames_lost", Type: "integer", Unit: "frames"}, {Name: "fcs_errors", Type: "integer", Unit: "frames", Description: "frames the receiver took with a bad FCS"},
				{Name: "lper", Type: "number", Unit: "1"}, {Name: "lper_low", Type: "number", Unit: "1"}, {Name: "lper_high", Type: "number", Unit: "1"},
			}},
		lt,
		{Name: "fec", Title: "FEC counters", Description: "One row per FEC link whose receiving switch reads its RS-FEC counters: their differences over the LPER test and the BERs they give (experiments/rail/fec.go).",
			Fields: []results.Field{
				{Name: "link", Type: "string"}, {Name: "from", Type: "string"}, {Name: "to", Type: "string"}, {Name: "fec", Type: "string"},
				{Name: "codewords", Type: "integer", Unit: "codewords"}, {Name: "symbol_errors", Type: "integer", Unit: "symbols"},
				{Name: "uncorrectable", Type: "integer", Unit: "codewords"},
				{Name: "pre_fec_ber", Type: "number", Unit: "1", Description: "corrected symbol errors over bits received"},
				{Name: "post_fec_ber_low", Type: "number", Unit: "1", Description: "lower bound: t+1 bit errors per uncorrectable codeword"},
			}},
	}
}

// LinkHealth is one link's headline numbers.
type LinkHealth struct {
	AttenuationABDB *float64 `json:"attenuation_ab_db"`
	AttenuationBADB *float64 `json:"attenuation_ba_db"`
	// AsymmetryDB is attenuation a -> b less b -> a.
	AsymmetryDB *float64 `json:"asymmetry_db"`
	FramesSent  int64    `json:"frames_sent"`
	FramesLost  int64    `json:"frames_lost"`
	FCSErrors   int64    `json:"fcs_errors"`
	LPER        float64  `json:"lper"`
	LPERLow     float64  `json:"lper_low"`
	LPERHigh    float64  `json:"lper_high"`
	// Health is good, gray or off (see the recipe's description).
	Health string `json:"health"`
	// The b -> a test (both_directions; all 0 when off): frames b's
	// generator sent and a's port did not receive OK; Health is the worse
	// direction's.
	FramesSentBA int64   `json:"frames_sent_ba"`
	FramesLostBA int64   `json:"frames_lost_ba"`
	FCSErrorsBA  int64   `json:"fcs_errors_ba"`
	LPERBA       float64 `json:"lper_ba"`
	LPERLowBA    float64 `json:"lper_low_ba"`
	LPERHighBA   float64 `json:"lper_high_ba"`
	// FEC is the pre- and post-FEC BER from the receiver's FEC counters
	// (FEC links whose switch reads them); FECNote says why there is none.
	FEC     *FECBER `json:"fec,omitempty"`
	FECNote string  `json:"fec_note,omitempty"`
}

// QualifySummary is summary.json.
type QualifySummary struct {
	Partial bool                  `json:"partial"`
	Links   map[string]LinkHealth `json:"links"`
}

// Health thresholds. RAIL §2/§7.2: an LPER of 1e-8 for 1518 B frames
// corresponds to a BER of about 1e-12 (LPER = 1-(1-BER)^bits, §4), the
// standard's target; RAIL turns off links above 10% (§5.4).
const (
	goodLPER = 1.2e-8 // 1-(1-1e-12)^(1518*8)
	offLPER  = 0.1
)

func health(high float64) string {
	switch {
	case high <= goodLPER:
		return "good"
	case high <= offLPER:
		return "gray"
	}
	return "off"
}

type qualifyState struct {
	mu    sync.Mutex
	links map[string]*topo.Link
	hs    map[string]LinkHealth
	// lengthM is each link's fibre length from the inventory (absent: not given).
	lengthM map[string]float64
	// ba marks the links whose b -> a direction was measured.
	ba    map[string]bool
	order []string
}

// frontPorts parses device:port=number entries.
func frontPorts(entries []string) (map[string]int, error) {
	out := map[string]int{}
	for _, e := range entries {
		k, v, ok := strings.Cut(e, "=")
		n, err := strconv.Atoi(v)
		if !ok || !strings.Contains(k, ":") || err != nil || n < 0 {
			return nil, fmt.Errorf("front_ports entry %q: expected device:port=number", e)
		}
		out[k] = n
	}
	return out, nil
}

// Plan implements Recipe.
func (r *Qualify) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	// Protection stays off: any link speed the switch has will do.
	links, binds, err := lgbench.BindUnprotected(pc, p.Strings("links"), p.String("sink_port"))
	if err != nil {
		return nil, err
	}
	fronts, err := frontPorts(p.Strings("front_ports"))
	if err != nil {
		return nil, &o.InputError{Msg: err.Error()}
	}
	if p.Bool("front_from_names") {
		for _, l := range links {
			for _, e := range []inventory.Endpoint{l.Link.A, l.Link.B} {
				n, err := strconv.Atoi(strings.TrimPrefix(e.Port, "p"))
				if _, given := fronts[e.Device+":"+e.Port]; !given && strings.HasPrefix(e.Port, "p") && err == nil && n >= 0 {
					fronts[e.Device+":"+e.Port] = n
				}
			}
		}
	}
	fb := int(p.Int("frame_size"))
	st := &qualifyState{links: map[string]*topo.Link{}, hs: map[string]LinkHealth{}, lengthM: map[string]float64{}, ba: map[string]bool{}}
	plan := &o.Plan{Bindings: binds, Tables: QualifyTables(),
		Summary: func(partial bool) (any, error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			return QualifySummary{Partial: partial, Links: st.hs}, nil
		}}
	for _, l := range links {
		var bench *lgbench.Bench
		il := l.Link
		if il.FibreLengthM > 0 {
			st.lengthM[il.Name] = il.FibreLengthM
		}
		tl := &topo.Link{Name: il.Name, A: il.A.Device, B: il.B.Device, APort: il.A.Port, BPort: il.B.Port, Transceiver: il.Transceiver, FEC: l.FEC}
		frames := int64(math.Ceil(p.Float("seconds") * l.LineRateBps / (float64(fb+20) * 8)))
		// The VOA is leased and lit (its shutter opened if closed) but its
		// attenuation is left as found: the link is qualified as it is.
		devs := []string{l.Sender, l.Receiver, l.VOA}
		plan.Steps = append(plan.Steps,
			&o.Step{Name: il.Name + ": switches", Action: "prepare-switches", Devices: devs,
				Settings: []o.Setting{
					{Device: l.Sender, Name: fmt.Sprintf("port %d", l.TxPort), Value: fmt.Sprintf("%dG fec %s", l.Gbps, l.FEC)},
					{Device: l.Receiver, Name: fmt.Sprintf("ports %d, %d (sink)", l.RxPort, l.Sink), Value: fmt.Sprintf("%dG fec %s", l.Gbps, l.FEC)},
					{Device: l.Sender, Name: "protection", Value: "off"},
				},
				Run: func(ctx context.Context, rc *o.RunContext) error {
					var err error
					if bench, err = lgbench.Open(ctx, rc, l, lgbench.OpenOptions(p)); err != nil {
						return err
					}
					return bench.Protect(ctx, lgbench.Protection{Mode: lgbench.Off})
				}},
			&o.Step{Name: il.Name + ": transceivers", Action: "read-ddm", Devices: devs,
				Note: "Rx/Tx power and bias per lane at both ends; ports without a front_ports number are not read",
				Run: func(ctx context.Context, rc *o.RunContext) error {
					if bench == nil {
						return o.Skip("the switches of %s were not prepared", il.Name)
					}
					return st.ddm(ctx, rc, bench, tl, fronts)
				}},
			&o.Step{Name: il.Name + ": LPER", Action: "stress-test", Devices: devs,
				Settings: []o.Setting{{Device: l.Sender, Name: "pktgen", Value: fmt.Sprintf("%d frames of %d B at line rate out of port %d (%g s)", frames, fb, l.TxPort, p.Float("seconds"))}},
				Run: func(ctx context.Context, rc *o.RunContext) error {
					if bench == nil {
						return o.Skip("the switches of %s were not prepared", il.Name)
					}
					s := lgbench.StressFrom(p, fb)
					s.Frames = frames
					fc := openFEC(ctx, bench, l)
					res, err := bench.Run(ctx, s)
					if err != nil {
						return err
					}
					if err := st.lper(rc, l, tl, res, fb); err != nil {
						return err
					}
					if err := st.fec(ctx, rc, fc, l, tl, res, fb); err != nil {
						return err
					}
					if !p.Bool("both_directions") {
						return nil
					}
					return st.reverse(ctx, rc, bench, l, tl, s, frames, fb)
				}})
	}
	plan.Steps = append(plan.Steps, &o.Step{Name: "link table", Action: "write", Note: "data/links.csv, the table rail-topology reads",
		Run: func(ctx context.Context, rc *o.RunContext) error { return st.table(rc) }})
	return plan, nil
}

// ddm reads both ends' diagnostics and derives the attenuations.
func (st *qualifyState) ddm(ctx context.Context, rc *o.RunContext, b *lgbench.Bench, tl *topo.Link, fronts map[string]int) error {
	t, err := rc.Table("ddm")
	if err != nil {
		return err
	}
	read := func(sw p4switch.Switch, dev, port string) ([]p4switch.Lane, error) {
		front, ok := fronts[dev+":"+port]
		if !ok {
			rc.Event(results.Event{Type: "note", Device: dev, Message: fmt.Sprintf("%s: no front-panel number for port %s (front_ports): diagnostics not read", tl.Name, port)})
			return nil, nil
		}
		optics, ok := sw.(p4switch.Optics)
		if !ok {
			rc.Event(results.Event{Type: "note", Device: dev, Message: fmt.Sprintf("%s: the driver of %s reads no transceiver diagnostics: not read", tl.Name, dev)})
			return nil, nil
		}
		lanes, err := optics.Transceiver(ctx, front)
		if err != nil {
			return nil, fmt.Errorf("%s: link %s: %w", dev, tl.Name, err)
		}
		for _, ln := range lanes {
			if err := t.Write(tl.Name, dev, port, front, ln.Lane, ln.TxDBm, ln.RxDBm, ln.BiasMilli); err != nil {
				return nil, err
			}
		}
		return lanes, nil
	}
	la, err := read(b.Tx, tl.A, tl.APort)
	if err != nil {
		return err
	}
	lb, err := read(b.Rx, tl.B, tl.BPort)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	tl.AttenuationABDB, tl.AttenuationBADB = attenuation(la, lb), attenuation(lb, la)
	h := st.hs[tl.Name]
	h.AttenuationABDB, h.AttenuationBADB = tl.AttenuationABDB, tl.AttenuationBADB
	if h.AttenuationABDB != nil && h.AttenuationBADB != nil {
		v := round3(*h.AttenuationABDB - *h.AttenuationBADB)
		h.AsymmetryDB = &v
	}
	st.hs[tl.Name] = h
	return nil
}

// attenuation from tx's end to rx's end: the worst lane's Tx power less
// its Rx power (lanes matched by number; nil when either end is unread).
func attenuation(tx, rx []p4switch.Lane) *float64 {
	worst := math.Inf(-1)
	for _, a := range tx {
		for _, b := range rx {
			if a.Lane == b.Lane {
				worst = max(worst, a.TxDBm-b.RxDBm)
			}
		}
	}
	if math.IsInf(worst, -1) {
		return nil
	}
	v := round3(worst)
	return &v
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func (st *qualifyState) lper(rc *o.RunContext, l lgbench.Link, tl *topo.Link, res lgbench.StressResult, fb int) error {
	if res.Sent == 0 {
		return fmt.Errorf("%s: the packet generator sent no frame on %s", l.Sender, tl.Name)
	}
	lost := res.Lost()
	lo, hi := stats.Wilson(lost, res.Sent, stats.Z95)
	e := topo.Estimate{LPER: float64(lost) / float64(res.Sent), Low: lo, High: hi, Frames: res.Sent, Lost: lost}
	t, err := rc.Table("lper")
	if err != nil {
		return err
	}
	if err := t.Write(tl.Name, tl.A, tl.B, tl.Transceiver, tl.FEC, fb, res.Elapsed.Seconds(), res.Sent, res.Delivered, lost, res.FCS, e.LPER, lo, hi); err != nil {
		return err
	}
	rate := fmt.Sprintf("%.3g", e.LPER)
	if lost == 0 {
		rate = fmt.Sprintf("0 (< %.2g)", hi)
	}
	rc.Event(results.Event{Type: "measurement", Device: l.Sender, Message: fmt.Sprintf("%s %s->%s: LPER %s (%d of %d frames, %d FCS errors)", tl.Name, tl.A, tl.B, rate, lost, res.Sent, res.FCS),
		Fields: map[string]any{"link": tl.Name, "frames_sent": res.Sent, "frames_lost": lost, "loss_rate": e.LPER, "loss_rate_high": hi}})
	st.mu.Lock()
	defer st.mu.Unlock()
	tl.AB, tl.BA = e, e
	h := st.hs[tl.Name]
	h.FramesSent, h.FramesLost, h.FCSErrors, h.LPER, h.LPERLow, h.LPERHigh, h.Health = res.Sent, lost, res.FCS, e.LPER, lo, hi, health(hi)
	st.hs[tl.Name] = h
	st.links[tl.Name] = tl
	st.order = append(st.order, tl.Name)
	return nil
}

// table writes data/links.csv: the link table, a -> b measured, b -> a
// left empty.
func (st *qualifyState) table(rc *o.RunContext) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.order) == 0 {
		return o.Skip("no link was measured")
	}
	t, err := rc.Table("links")
	if err != nil {
		return err
	}
	names := slices.Clone(st.order)
	sort.Strings(names)
	for _, n := range names {
		l := st.links[n]
		role := func(sw string) string {
			if d, ok := rc.Lab.Device(sw); ok {
				return d.Options["role"]
			}
			return ""
		}
		var length any
		if m, ok := st.lengthM[n]; ok {
			length = m
		}
		if err := t.Write(l.Name, l.A, l.APort, role(l.A), l.B, l.BPort, role(l.B), l.Transceiver, l.FEC, length,
			ptr(l.AttenuationABDB), ptr(l.AttenuationBADB),
			l.AB.LPER, l.AB.Low, l.AB.High, l.AB.Frames, l.AB.Lost, ba(st.ba[n], l.BA.LPER), ba(st.ba[n], l.BA.Low), ba(st.ba[n], l.BA.High),
			ba(st.ba[n], l.BA.Frames), ba(st.ba[n], l.BA.Lost)); err != nil {
			return err
		}
	}
	return nil
}

// ba is a b -> a value of the link table, empty when that direction was
// not measured.
func ba[T any](measured bool, v T) any {
	if !measured {
		return nil
	}
	return v
}
