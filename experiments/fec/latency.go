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

	o "testbed/orchestrator"
	"testbed/results"
)

// LatencyName is the recipe's name on the command line.
const LatencyName = "fec-latency"

// Latency implements orchestrator.Recipe.
type Latency struct{}

// NewLatency returns the recipe.
func NewLatency() *Latency { return &Latency{} }

// Meta implements orchestrator.Recipe.
func (*Latency) Meta() o.Meta {
	return o.Meta{
		Name:        LatencyName,
		Version:     "1.1.0",
		Summary:     "per-hop latency and jitter FEC adds, per FEC mode, speed, frame size and switch mode (FEC paper Figs. 5-7)",
		Description: latencyDescription,
		Params:      latencyParams(),
		// Figs. 5-7: the worst FEC latency per hop at 25G RS(528,514), a 25G hop among 100G, 100G's lane de-skew.
		// Fig. 7 on a chain of switches: the envelope over all its hops.
		Headlines: []string{"worst_per_hop_25g_rs528_ns", "heterogeneous_extra_ns", "deskew_100g_ns", "chain_envelope_ns"},
	}
}

const latencyDescription = `The switch runs the timestamp program (p4/timestamp, built and started if it runs
something else and replace_program is set). Its snake table sends the packet generator's
probes out of ports[0], back in through the port's loopback module, out of ports[1], and so
on; the last port drops them. For every mode in links (speed:fec), every frame size and
every switch mode (cut-through or store-and-forward, the traffic manager's setting towards
each snake port), every snake port is set to the mode and probes probes are sent one at a
time, the k-th at k * spacing_ns + frac(k * 0.618...) * spread_ns on the switch's clock:
spacing_ns is a whole number of nominal codewords and the golden-ratio sequence spreads the
send times evenly over spread_ns (a codeword or more) for any number of probes, whatever
the switch's clock offset, so the probes' headers fall at offsets all over the codeword, as
traffic places them. Per probe the MAC transmit timestamp of every port and the ingress
timestamp it came back in with (register reg_rx_ts) are read. Hop k is from the probe
leaving port k to it leaving port k+1 (the link, its FEC, and the switch's forwarding);
wire is from leaving a port to its ingress stamp (the PHYs, FEC and cable only).

Per hop: min, p50, p99, max and peak-to-peak of the hop latency; the marginal latency
(Fig. 6) is this mode's hop latency less the same speed's FEC-off hop latency (p50 less
p50, max less min) when links has the FEC-off mode too; fec_worst_ns is the worst FEC
delay per hop from the header's first bit, the paper's 246 ns at 25G RS(528,514): for
cut-through the largest wire latency less the FEC-off case's least, plus the header's
serialization without FEC; for store-and-forward marginal_max plus the frame's. Beside each row stands the
paper's closed-form prediction (§3.1, cases A-C, over every block-aligned header offset;
none for FC-FEC, which the paper does not analyse). The multi-hop envelope (Fig. 7) is the
range over probes of the latency from leaving port 0 to leaving port k. On one switch every
port runs from the switch's clock and a frame leaves a FEC port on its codeword grid, so
after the first link or two every probe meets the next codeword at the same offset and
the envelope stops growing; the paper's Fig. 7 assumes independent offsets per hop.
path=heterogeneous adds a case where the first snake port runs 25G RS(528,514) and the
others 100G RS(528,514), beside the all-100G case (§3.2.2's 159 ns, cut-through and the
smallest frame size only). The slow link is the first because only there do the probes'
codeword offsets vary: every port of one switch runs from its clock, and a frame leaves a
FEC port on that port's codeword grid, so on the later links of a one-switch snake every
probe falls at the same offset.
path=chain runs Fig. 7 on a chain of switches instead of the snake (--bench fec-chain: six
switches in a line, each on its own clock): every switch in chain runs the timestamp
program, its snake table forwarding from the port the previous switch's fibre ends at to
the port the next one's starts at (the first from its packet generator, the last drops);
for every mode in chain_links and every switch mode, the smallest frame size, probes are
sent from the first switch one every chain_spacing_ns (long enough for neighbouring
switches' clocks to drift a codeword apart over the run) and each switch's ingress stamp
(reg_rx_ts) and its egress port's MAC transmit timestamp are read. Hop k is from the
probe leaving switch k to it leaving switch k+1 (link k and switch k+1's forwarding): the
last switch sends the probes out of its port chain_exit (a loopback module) and drops them
when they come back; wire is from switch k's transmit stamp to switch k+1's ingress stamp;
the envelope over k hops is the range of the latency from leaving the first switch to the
header at switch k+1's MAC (its ingress stamp). Stamps of different
switches are compared: on a lab their timestamp counters must run at one rate (PTP,
SyncE); the envelope and per-hop ranges do not change with a constant offset between
them, the medians do.
Port modes, cut-through settings and snake entries found are restored at the end or on
abort; ports the run added are deleted. Writes data/fec_latency_frames.csv (per probe and
hop), data/fec_latency_hops.csv and data/fec_latency_envelope.csv.`

func latencyParams() []o.ParamSpec {
	return []o.ParamSpec{
		{Name: "switch", Type: o.TypeString, Default: "sw1", Description: "the switch whose ports form the snake"},
		{Name: "ports", Type: o.TypeStrings, Default: []string{"0", "4", "8", "12", "16", "20"}, Description: "dev ports of the snake, in order, each with a loopback module (or a fibre to the next switch); n ports give n-1 hops"},
		{Name: "links", Type: o.TypeStrings, Default: []string{"25:none", "25:fc", "25:rs528", "50:rs544", "100:none", "100:rs528"}, Description: "port modes, speed:fec (10:none|fc, 25:none|fc|rs528, 50:rs544, 100:none|rs528)"},
		{Name: "frame_sizes", Type: o.TypeStrings, Default: []string{"64", "512", "1518"}, Description: "probe frame sizes in bytes including FCS (64 .. 9216)"},
		{Name: "switch_modes", Type: o.TypeStrings, Default: []string{"cut-through", "store-and-forward"}, Description: "forwarding modes: cut-through, store-and-forward"},
		{Name: "probes", Type: o.TypeInt, Default: int64(200), Min: o.Bound(2), Max: o.Bound(100000), Description: "probes per case"},
		// 50 codewords of 25G RS(528,514) (50 x 204.8 ns), 100 of 50G
		// RS(544,514) and 200 of 100G: the spread alone sets the offset.
		{Name: "spacing_ns", Type: o.TypeInt, Unit: "ns", Default: int64(10240), Min: o.Bound(1000), Max: o.Bound(1e9), Description: "base time between probes on the switch's clock"},
		// A 25G RS(528,514) codeword takes 204.8 ns to arrive; 200 probes
		// over it leave gaps under 1.7 ns, less than a 66-bit block (2.5 ns),
		// so every block offset, the worst included, gets probes.
		{Name: "spread_ns", Type: o.TypeInt, Unit: "ns", Default: int64(205), Min: o.Bound(0), Max: o.Bound(1e6), Description: "window the golden-ratio sequence spreads the probes' send times over, on top of the spacing"},
		{Name: "path", Type: o.TypeString, Default: "homogeneous", Enum: []string{"homogeneous", "heterogeneous", "chain"}, Description: "heterogeneous: also a 100G RS(528,514) snake whose first port runs 25G RS(528,514) (§3.2.2); chain: instead of the snake, probes along the chain of switches, each on its own clock (Fig. 7; --bench fec-chain)"},
		{Name: "chain", Type: o.TypeStrings, Default: []string{"sw1", "sw2", "sw3", "sw4", "sw5", "sw6"}, Description: "path=chain: the switches in line order, each consecutive pair joined by a fibre of the inventory; n switches give n-1 hops"},
		{Name: "chain_exit", Type: o.TypeString, Default: "p2", Description: "path=chain: the inventory port of the last switch the probes leave by (a loopback module), whose transmit stamp ends the last hop; empty: the last hop ends at the last switch's MAC"},
		{Name: "chain_links", Type: o.TypeStrings, Default: []string{"25:none", "25:rs528"}, Description: "path=chain: port modes (speed:fec) every chain port runs in turn; the speed must be the chain fibres' transceivers'"},
		// 200 probes 100 us apart span 20 ms: two clocks 50 ppm apart drift
		// by 1 us against each other, about five 25G RS(528,514) codewords,
		// so each link's codeword phase takes every value over the run.
		{Name: "chain_spacing_ns", Type: o.TypeInt, Unit: "ns", Default: int64(100000), Min: o.Bound(1000), Max: o.Bound(1e9), Description: "path=chain: base time between probes; the run must be long enough for neighbouring switches' clocks to drift a codeword apart (probes x chain_spacing_ns x their ppm difference)"},
		{Name: "replace_program", Type: o.TypeBool, Default: false, Description: "restart the switch daemon with the timestamp program if it runs another"},
		{Name: "port_up_timeout", Type: o.TypeDuration, Default: 10 * time.Second, Min: o.Bound(0.001), Max: o.Bound(3600), Description: "how long the snake ports may take to come up after a mode change"},
	}
}

// LatencyTables are the recipe's tables.
func LatencyTables() []results.Table {
	caseFields := []results.Field{
		{Name: "link", Type: "string", Description: "the case's port modes, as speed and FEC (25G rs528; 100G rs528 + 25G rs528 for the heterogeneous path)"},
		{Name: "speed_gbps", Type: "integer", Unit: "Gb/s", Description: "speed of the snake ports; in the per-probe and per-hop rows, of the hop's own link (25 for the heterogeneous path's first hop, whose port runs 25G)"},
		{Name: "fec", Type: "string", Description: "none, fc, rs528 or rs544"},
		{Name: "frame_bytes", Type: "integer", Unit: "B", Description: "probe frame size including FCS"},
		{Name: "switch_mode", Type: "string", Description: "cut-through or store-and-forward"},
		{Name: "path", Type: "string", Description: "homogeneous or heterogeneous"},
	}
	with := func(fs ...results.Field) []results.Field { return append(slices.Clone(caseFields), fs...) }
	return []results.Table{
		{Name: "fec_latency_frames", Title: "Per-probe, per-hop latencies", Description: "One row per probe and hop, from the switch's timestamps.",
			Fields: with(
				results.Field{Name: "probe", Type: "integer"},
				results.Field{Name: "hop", Type: "integer", Description: "1 is from leaving ports[0] to leaving ports[1]; on the chain, from leaving the first switch to leaving the second"},
				results.Field{Name: "hop_ns", Type: "number", Unit: "ns", Description: "transmit timestamp of the hop's second port less its first's"},
				results.Field{Name: "wire_ns", Type: "number", Unit: "ns", Description: "ingress timestamp at the hop's link end less its transmit timestamp: both PHYs, FEC and cable"},
				results.Field{Name: "cumulative_ns", Type: "number", Unit: "ns", Description: "from leaving ports[0] to the end of this hop; on the chain, from leaving the first switch to the header at the hop's receiving switch's MAC"},
			)},
		{Name: "fec_latency_hops", Title: "Per-hop latency, jitter and the paper's prediction",
			Description: "One row per case and hop. marginal_* and fec_worst_ns need the FEC-off case of the same speed, frame size and switch mode; paper_* are the §3.1 closed forms over every block-aligned header offset (empty without FEC and for FC-FEC).",
			Fields: with(
				results.Field{Name: "hop", Type: "integer"},
				results.Field{Name: "probes", Type: "integer"},
				results.Field{Name: "min_ns", Type: "number", Unit: "ns"}, results.Field{Name: "p50_ns", Type: "number", Unit: "ns"},
				results.Field{Name: "p99_ns", Type: "number", Unit: "ns"}, results.Field{Name: "max_ns", Type: "number", Unit: "ns"},
				results.Field{Name: "jitter_ns", Type: "number", Unit: "ns", Description: "peak to peak: max - min"},
				results.Field{Name: "wire_min_ns", Type: "number", Unit: "ns"}, results.Field{Name: "wire_max_ns", Type: "number", Unit: "ns"},
				results.Field{Name: "marginal_p50_ns", Type: "number", Unit: "ns", Description: "p50 less the FEC-off case's p50 (Fig. 6)"},
				results.Field{Name: "marginal_max_ns", Type: "number", Unit: "ns", Description: "max less the FEC-off case's min"},
				results.Field{Name: "fec_worst_ns", Type: "number", Unit: "ns", Description: "the worst FEC delay from the header's first bit: cut-through, the largest wire latency less the FEC-off case's least, plus the header's serialization without FEC; store-and-forward, marginal_max plus the frame's serialization without FEC"},
				results.Field{Name: "t_acc_ns", Type: "number", Unit: "ns", Description: "codeword accumulation time over all lanes"},
				results.Field{Name: "t_dec_ns", Type: "number", Unit: "ns", Description: "the paper's decoding time"},
				results.Field{Name: "paper_min_ns", Type: "number", Unit: "ns", Description: "§3.1: least FEC delay from the header's first bit"},
				results.Field{Name: "paper_max_ns", Type: "number", Unit: "ns", Description: "§3.1: worst FEC delay from the header's first bit"},
				results.Field{Name: "paper_marginal_max_ns", Type: "number", Unit: "ns", Description: "paper_max less the FEC-off serialization"},
			),
		},
		{Name: "fec_latency_envelope", Title: "Multi-hop latency envelope",
			Description: "One row per case and number of hops: the range over probes of the latency from leaving ports[0] to leaving the hop's last port (Fig. 7); on the chain, from leaving the first switch to the header at the hop's receiving switch's MAC.",
			Fields: with(
				results.Field{Name: "hops", Type: "integer"},
				results.Field{Name: "min_ns", Type: "number", Unit: "ns"}, results.Field{Name: "max_ns", Type: "number", Unit: "ns"},
				results.Field{Name: "envelope_ns", Type: "number", Unit: "ns", Description: "max - min"},
				results.Field{Name: "paper_envelope_ns", Type: "number", Unit: "ns", Description: "hops x the paper's per-hop range (paper_max - paper_min): the envelope if every hop's offset were independent"},
				results.Field{Name: "p50_ns", Type: "number", Unit: "ns", Description: "median over probes of the latency to the end of this hop"},
				results.Field{Name: "p99_ns", Type: "number", Unit: "ns"},
			),
		},
	}
}

// latencyFigures are the report's figures for the smallest frame size;
// the chain's (path=chain) has its own and the envelope's.
func latencyFigures(tables []results.Table, small int, chain bool) {
	sz := strconv.Itoa(small)
	add := func(table string, f results.Figure) {
		for i := range tables {
			if tables[i].Name == table {
				tables[i].Figures = append(tables[i].Figures, f)
			}
		}
	}
	if chain {
		add("fec_latency_envelope", results.Figure{
			Name: "chain-latency", Title: fmt.Sprintf("Latency over a chain of switches, each on its own clock, %s B frames", sz),
			Caption: "As the FEC paper's Fig. 7 on a lab: the median latency from the probe leaving the first switch to its header at each next one's MAC, the band from the least to the most over probes. With FEC the band widens at every hop, because each link runs from its own switch's clock and a probe meets each codeword at another offset; without FEC it stays a few ns wide.",
			Kind:    results.Line, X: "hops", Y: "p50_ns", Low: "min_ns", High: "max_ns", Band: true, Series: []string{"link", "switch_mode"},
			Where:  []results.Cond{{Column: "path", Value: "chain"}, {Column: "frame_bytes", Value: sz}},
			XLabel: "Hops", YLabel: "Latency (ns)",
		})
	} else {
		add("fec_latency_frames", results.Figure{
			Name: "hop-latency-cdf", Title: fmt.Sprintf("Latency of one hop, %s B frames, cut-through", sz),
			Caption: "As the FEC paper's Fig. 5 seen over many frames: each probe's header falls at another offset in the codeword, so one hop's latency spreads over about a codeword's accumulation time with FEC, and hardly at all without.",
			Kind:    results.CDF, X: "hop_ns", Series: []string{"link"},
			Where:  []results.Cond{{Column: "hop", Value: "1"}, {Column: "frame_bytes", Value: sz}, {Column: "switch_mode", Value: "cut-through"}, {Column: "path", Value: "homogeneous"}},
			XLabel: "Hop latency (ns)", YLabel: "Fraction of probes",
		})
		add("fec_latency_hops", results.Figure{
			Name: "marginal-latency", Title: fmt.Sprintf("Marginal latency FEC adds to one hop (worst case), %s B frames", sz),
			Caption: "As the FEC paper's Fig. 6: the worst hop latency with FEC less the least without, per port mode and switch mode, hop 1. Cut-through loses most: it needed only the header.",
			Kind:    results.Bar, X: "link", Y: "marginal_max_ns", Series: []string{"switch_mode"},
			Where:  []results.Cond{{Column: "hop", Value: "1"}, {Column: "frame_bytes", Value: sz}, {Column: "path", Value: "homogeneous"}},
			XLabel: "Port mode", YLabel: "Marginal latency (ns)",
		})
	}
	add("fec_latency_envelope", results.Figure{
		Name: "envelope", Title: fmt.Sprintf("Latency envelope over hops, %s B frames, cut-through", sz),
		Caption: "As the FEC paper's Fig. 7: the range over probes of the latency from the first port grows with the hops a frame crosses.",
		Kind:    results.Line, X: "hops", Y: "envelope_ns", Series: []string{"link"},
		Where:  []results.Cond{{Column: "switch_mode", Value: "cut-through"}, {Column: "frame_bytes", Value: sz}},
		XLabel: "Hops", YLabel: "Envelope: max - min latency (ns)",
	})
}

// caseKey names a case.
type caseKey struct {
	link        string
	gbps        int
	fec         string
	frameBytes  int
	mode        string
	path        string
	slowFirst   bool
	offCounterp string // link of the FEC-off case to compare with
}

func (k caseKey) String() string {
	return fmt.Sprintf("%s %dB %s", k.link, k.frameBytes, k.mode)
}

// metricName is the case's key in the summary: an identifier, so a
// metric path has no spaces (25G_rs528_64B_cut-through; the mixed snake
// 100G_rs528_then_25G_rs528_64B_cut-through_heterogeneous).
func (k caseKey) metricName() string {
	s := strings.ReplaceAll(k.String(), " + ", "_then_")
	if k.slowFirst {
		s += " heterogeneous"
	}
	if k.path == "chain" {
		s += " chain"
	}
	return strings.ReplaceAll(s, " ", "_")
}

// HopStats is one hop's headline numbers in the summary.
type HopStats struct {
	P50Ns         float64  `json:"p50_ns"`
	MaxNs         float64  `json:"max_ns"`
	JitterNs      float64  `json:"jitter_ns"`
	MarginalP50Ns *float64 `json:"marginal_p50_ns,omitempty"`
	MarginalMaxNs *float64 `json:"marginal_max_ns,omitempty"`
	FECWorstNs    *float64 `json:"fec_worst_ns,omitempty"`
	PaperMaxNs    *float64 `json:"paper_max_ns,omitempty"`
}

// Case is one case's summary.
type Case struct {
	Hops []HopStats `json:"hops"`
	// EnvelopeNs is the envelope over every hop of the snake.
	EnvelopeNs float64 `json:"envelope_ns"`
	// MaxTotalNs is the worst latency over every hop.
	MaxTotalNs float64 `json:"max_total_ns"`
	// EnvelopeByHopsNs is the envelope over the first 1, 2, ... hops
	// (Fig. 7's growth).
	EnvelopeByHopsNs []float64 `json:"envelope_by_hops_ns,omitempty"`
}

// LatencySummary is summary.json.
type LatencySummary struct {
	Partial bool            `json:"partial"`
	Cases   map[string]Case `json:"cases"`
	// WorstPerHop25GRS528Ns is fec_worst_ns at 25G RS(528,514), cut-through,
	// smallest frame, the worst hop; the paper says 246 ns (§3.1).
	WorstPerHop25GRS528Ns *float64 `json:"worst_per_hop_25g_rs528_ns,omitempty"`
	// DeskewNs is how much longer the 100G (4-lane) link's least wire
	// latency is than the 25G link's without FEC, after each one's header
	// serialization: what the receiver's de-skew holds every byte for
	// (§3.2.1), both ports on the same kind of loopback module.
	DeskewNs *float64 `json:"deskew_100g_ns,omitempty"`
	// HeterogeneousExtraNs is the worst FEC delay per hop at 25G
	// RS(528,514) less that at 100G RS(528,514) (fec_worst_ns, cut-through,
	// smallest frame, hop 1): what a frame crossing one 25G link among 100G
	// links gets over any other path, the way §3.2.2 computes its 159 ns
	// from the per-link numbers of Fig. 2.
	HeterogeneousExtraNs *float64 `json:"heterogeneous_extra_ns,omitempty"`
	// HeterogeneousTotalExtraNs is how much worse the heterogeneous snake's
	// worst total latency is than the all-100G snake's: the FEC's share
	// and the slower serialization of the 25G hop.
	HeterogeneousTotalExtraNs *float64 `json:"heterogeneous_total_extra_ns,omitempty"`
	// ChainEnvelopeNs is, on a chain of switches (path=chain), the
	// envelope over all its hops at 25G RS(528,514), cut-through, the
	// smallest frame: Fig. 7's five-hop envelope on a six-switch chain.
	ChainEnvelopeNs *float64 `json:"chain_envelope_ns,omitempty"`
}

// sample is a case's stamps' differences, [hop][probe]; cum, when set
// (the chain), the latency to each hop's end as the envelope takes it,
// else the sum of the hops.
type sample struct{ hop, wire, cum [][]float64 }

type latencyState struct {
	mu      sync.Mutex
	samples map[caseKey]*sample
	order   []caseKey
	summary LatencySummary
}

func ptr(v float64) *float64 { return &v }

// opt is v for a table cell, or an empty cell.
func opt(v float64, ok bool) any {
	if !ok || math.IsNaN(v) {
		return nil
	}
	return v
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Plan implements Recipe.
func (r *Latency) Plan(pc *o.PlanContext) (*o.Plan, error) {
	p := pc.Params
	dev := p.String("switch")
	d, ok := pc.Lab.Device(dev)
	if !ok || d.Kind != "switch" {
		return nil, o.Inputf("switch: %q is not a switch of %s", dev, pc.Lab.Path)
	}
	ports, err := parseInts("ports", p.Strings("ports"), 0, 511)
	if err != nil {
		return nil, err
	}
	if len(ports) < 2 {
		return nil, o.Inputf("ports: %d given; a hop needs two snake ports", len(ports))
	}
	for i, a := range ports {
		if a == pktgenPort || slices.Contains(ports[i+1:], a) {
			return nil, o.Inputf("ports: port %d is the packet generator's or listed twice", a)
		}
	}
	links, err := parseModes(p.Strings("links"))
	if err != nil {
		return nil, err
	}
	sizes, err := parseInts("frame_sizes", p.Strings("frame_sizes"), 64, 9216)
	if err != nil {
		return nil, err
	}
	var modes []string
	for _, m := range p.Strings("switch_modes") {
		if m != "cut-through" && m != "store-and-forward" {
			return nil, o.Inputf("switch_modes: %q (expected cut-through or store-and-forward)", m)
		}
		modes = append(modes, m)
	}
	if len(modes) == 0 {
		return nil, o.Inputf("switch_modes: empty")
	}
	het := p.String("path") == "heterogeneous"
	probes := int(p.Int("probes"))
	if p.String("path") == "chain" {
		return planChain(pc, sizes, modes, probes, float64(p.Int("spread_ns")))
	}
	spacing := time.Duration(p.Int("spacing_ns"))
	spread := float64(p.Int("spread_ns"))

	// The cases, in the order they run: FEC-off first at each speed, so
	// the marginal latency has its reference when the FEC case ends.
	var cases []caseKey
	slices.SortStableFunc(links, func(a, b PHY) int {
		if a.Gbps != b.Gbps {
			return a.Gbps - b.Gbps
		}
		return boolInt(a.FEC != "none") - boolInt(b.FEC != "none")
	})
	hasOff := map[int]bool{}
	for _, l := range links {
		if l.FEC == "none" {
			hasOff[l.Gbps] = true
		}
	}
	for _, l := range links {
		for _, sz := range sizes {
			for _, m := range modes {
				k := caseKey{link: fmt.Sprintf("%dG %s", l.Gbps, l.FEC), gbps: l.Gbps, fec: l.FEC, frameBytes: sz, mode: m, path: "homogeneous"}
				if hasOff[l.Gbps] {
					k.offCounterp = fmt.Sprintf("%dG none", l.Gbps)
				}
				cases = append(cases, k)
			}
		}
	}
	if het {
		small := slices.Min(sizes)
		base := caseKey{link: "100G rs528", gbps: 100, fec: "rs528", frameBytes: small, mode: "cut-through", path: "homogeneous"}
		if hasOff[100] {
			base.offCounterp = "100G none"
		}
		if !slices.Contains(cases, base) {
			cases = append(cases, base)
		}
		cases = append(cases, caseKey{link: "100G rs528 + 25G rs528", gbps: 100, fec: "rs528", frameBytes: small, mode: "cut-through", path: "heterogeneous", slowFirst: true})
	}
	st := &latencyState{samples: map[caseKey]*sample{}, summary: LatencySummary{Cases: map[string]Case{}}}
	tables := LatencyTables()
	latencyFigures(tables, slices.Min(sizes), false)
	plan := &o.Plan{Tables: tables,
		Bindings: []o.Binding{{Role: "snake", Resource: dev, Detail: fmt.Sprintf("ports %v with loopback modules, probes from the packet generator (port %d)", ports, pktgenPort)}},
		Summary: func(partial bool) (any, error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			s := st.summary
			s.Partial = partial
			s.DeskewNs = st.deskew()
			s.HeterogeneousExtraNs = st.hetExtra()
			return s, nil
		}}
	var sn *snake
	plan.Steps = append(plan.Steps, &o.Step{Name: dev + ": timestamp program", Action: "prepare-switch", Devices: []string{dev},
		Settings: []o.Setting{{Device: dev, Name: "program", Value: "timestamp"}, {Device: dev, Name: "snake", Value: fmt.Sprintf("%d -> %v -> drop", pktgenPort, ports)}},
		Run: func(ctx context.Context, rc *o.RunContext) error {
			var err error
			sn, err = openSnake(ctx, rc, dev, ports, p.Bool("replace_program"))
			return err
		}})
	for _, k := range cases {
		plan.Steps = append(plan.Steps, &o.Step{Name: "probes: " + k.String() + map[bool]string{true: " (heterogeneous path)"}[k.slowFirst], Action: "probe", Devices: []string{dev},
			Settings: []o.Setting{{Device: dev, Name: "snake ports", Value: k.link}, {Device: dev, Name: "forwarding", Value: k.mode},
				{Device: dev, Name: "probes", Value: fmt.Sprintf("%d of %d B, one every %v + up to %.0f ns", probes, k.frameBytes, spacing, spread)}},
			Run: func(ctx context.Context, rc *o.RunContext) error {
				if sn == nil {
					return o.Skip("the timestamp program was not started on %s", dev)
				}
				return runCase(ctx, rc, sn, st, k, probes, spacing, spread, p.Duration("port_up_timeout"))
			}})
	}
	return plan, nil
}

// deskew compares the least wire latency of 100G and 25G ports without
// FEC, cut-through, smallest frame (st.mu held).
func (st *latencyState) deskew() *float64 {
	least := func(gbps int) (float64, bool) {
		best, ok, size := math.Inf(1), false, math.MaxInt
		for k, smp := range st.samples {
			if k.gbps != gbps || k.fec != "none" || k.mode != "cut-through" || k.frameBytes > size || k.path == "chain" {
				continue
			}
			if k.frameBytes < size {
				best, size = math.Inf(1), k.frameBytes
			}
			for _, w := range smp.wire {
				best = math.Min(best, slices.Min(w))
			}
			ok = true
		}
		p, _ := phyOf(gbps, "none")
		return best - p.plainNs(headerBytes), ok
	}
	a, okA := least(100)
	b, okB := least(25)
	if !okA || !okB {
		return nil
	}
	return ptr(a - b)
}

// hetExtra is the difference of the 25G and 100G RS(528,514) worst FEC
// delays of hop 1, cut-through, smallest frame (st.mu held).
func (st *latencyState) hetExtra() *float64 {
	worst := func(gbps int) (float64, bool) {
		best, size := math.NaN(), math.MaxInt
		for key, c := range st.summary.Cases {
			var k caseKey
			for _, o := range st.order {
				if o.metricName() == key && !o.slowFirst {
					k = o
				}
			}
			if k.gbps != gbps || k.fec != "rs528" || k.mode != "cut-through" || k.frameBytes > size || k.path != "homogeneous" || len(c.Hops) == 0 || c.Hops[0].FECWorstNs == nil {
				continue
			}
			best, size = *c.Hops[0].FECWorstNs, k.frameBytes
		}
		return best, !math.IsNaN(best)
	}
	a, okA := worst(25)
	b, okB := worst(100)
	if !okA || !okB {
		return nil
	}
	return ptr(a - b)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// runCase sets the snake's ports to the case's mode, sends the probes and
// writes the tables.
func runCase(ctx context.Context, rc *o.RunContext, sn *snake, st *latencyState, k caseKey, probes int, spacing time.Duration, spread float64, upTimeout time.Duration) error {
	for i, port := range sn.ports {
		g, f := k.gbps, k.fec
		if k.slowFirst && i == 0 {
			g = 25
		}
		if err := sn.setMode(ctx, port, g, f); err != nil {
			return err
		}
		if err := sn.setCutThrough(ctx, port, k.mode == "cut-through"); err != nil {
			return err
		}
	}
	if err := sn.waitUp(ctx, upTimeout); err != nil {
		return err
	}
	if err := sn.drain(ctx); err != nil {
		return err
	}
	frames, err := rc.Table("fec_latency_frames")
	if err != nil {
		return err
	}
	hops := len(sn.ports) - 1
	smp := &sample{hop: make([][]float64, hops), wire: make([][]float64, hops)}
	start, err := sn.sw.Clock(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", sn.dev, err)
	}
	for n := 0; n < probes; n++ {
		// The golden ratio's fractional multiples fill [0, 1) evenly.
		_, frac := math.Modf(float64(n+1) * (math.Sqrt(5) - 1) / 2)
		at := start + time.Duration(n+1)*spacing + time.Duration(math.Round(frac*spread))
		ps, err := sn.send(ctx, at, k.frameBytes, k.gbps)
		if err != nil {
			return err
		}
		cum := 0.0
		for h := 0; h < hops; h++ {
			hop := float64(ps.tx[h+1] - ps.tx[h])
			wire := float64(ps.rx[h] - ps.tx[h])
			cum += hop
			smp.hop[h] = append(smp.hop[h], hop)
			smp.wire[h] = append(smp.wire[h], wire)
			if err := frames.Write(k.link, k.hopGbps(h), k.fec, k.frameBytes, k.mode, k.path, n, h+1, hop, wire, cum); err != nil {
				return err
			}
		}
	}
	return st.keep(rc, k, smp)
}

// keep records a case's samples, in the order the cases finish, and
// writes its rows.
func (st *latencyState) keep(rc *o.RunContext, k caseKey, smp *sample) error {
	st.mu.Lock()
	st.samples[k] = smp
	st.order = append(st.order, k)
	st.mu.Unlock()
	return writeCase(rc, st, k, smp)
}

// hopGbps is the speed of hop h's link: the heterogeneous path's first
// port, and so its first hop, runs at 25G.
func (k caseKey) hopGbps(h int) int {
	if k.slowFirst && h == 0 {
		return 25
	}
	return k.gbps
}

// writeCase computes a case's per-hop and envelope rows and its summary.
func writeCase(rc *o.RunContext, st *latencyState, k caseKey, smp *sample) error {
	hopsT, err := rc.Table("fec_latency_hops")
	if err != nil {
		return err
	}
	envT, err := rc.Table("fec_latency_envelope")
	if err != nil {
		return err
	}
	st.mu.Lock()
	var off *sample
	if k.offCounterp != "" && k.fec != "none" {
		ok := k
		ok.link, ok.fec = k.offCounterp, "none"
		off = st.samples[ok]
	}
	st.mu.Unlock()
	c := Case{}
	span := make([]float64, len(smp.hop)) // the paper's jitter per hop; NaN: no prediction
	for h := range smp.hop {
		hs, sp, err := writeHop(hopsT, k, smp, off, h)
		if err != nil {
			return err
		}
		c.Hops, span[h] = append(c.Hops, hs), sp
	}
	if err := writeEnvelope(envT, k, smp, span, &c); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.record(k, c)
	return nil
}

// hopPHY is a hop's PHY, the paper's prediction for it and the FEC-off
// wait for what the hop holds (a header cut-through, the frame
// store-and-forward).
func hopPHY(gbps int, k caseKey) (PHY, Prediction, bool, float64, error) {
	phy, err := phyOf(gbps, k.fec)
	if err != nil {
		return PHY{}, Prediction{}, false, 0, err
	}
	saf := k.mode == "store-and-forward"
	pred, hasPred := phy.Predict(k.frameBytes, saf)
	offWait := phy.plainNs(headerBytes)
	if saf {
		offWait = phy.plainNs(k.frameBytes)
	}
	return phy, pred, hasPred, offWait, nil
}

// writeHop writes hop h's row and returns its statistics and the paper's
// jitter for it (NaN: no prediction). The heterogeneous path's first hop
// runs at 25G: its row is that link's, with its own PHY's prediction, and
// no marginal (the FEC-off counterpart is the 100G case).
func writeHop(hopsT *results.TableWriter, k caseKey, smp, off *sample, h int) (HopStats, float64, error) {
	g := k.hopGbps(h)
	phy, pred, hasPred, offWait, err := hopPHY(g, k)
	if err != nil {
		return HopStats{}, 0, err
	}
	if g != k.gbps {
		off = nil
	}
	span := math.NaN()
	if hasPred {
		span = pred.MaxNs - pred.MinNs
	}
	v := slices.Sorted(slices.Values(smp.hop[h]))
	w := slices.Sorted(slices.Values(smp.wire[h]))
	hs := HopStats{P50Ns: quantile(v, 0.5), MaxNs: v[len(v)-1], JitterNs: v[len(v)-1] - v[0]}
	var mp50, mmax, worst float64
	if off != nil && h < len(off.hop) {
		ov := slices.Sorted(slices.Values(off.hop[h]))
		mp50, mmax = hs.P50Ns-quantile(ov, 0.5), hs.MaxNs-ov[0]
		worst = mmax + offWait
		if k.mode != "store-and-forward" {
			// What the link itself holds the header for, from the
			// wire: the egress's alignment to its own stream, which
			// differs with FEC by a few ns, stays out.
			worst = w[len(w)-1] - slices.Min(off.wire[h]) + offWait
		}
		hs.MarginalP50Ns, hs.MarginalMaxNs, hs.FECWorstNs = ptr(mp50), ptr(mmax), ptr(worst)
	}
	if hasPred {
		hs.PaperMaxNs = ptr(pred.MaxNs)
	}
	tDec := phy.TDec
	if k.fec == "none" {
		tDec = 0
	}
	err = hopsT.Write(k.link, g, k.fec, k.frameBytes, k.mode, k.path, h+1, len(v), v[0], hs.P50Ns, quantile(v, 0.99), hs.MaxNs, hs.JitterNs,
		w[0], w[len(w)-1], opt(mp50, off != nil), opt(mmax, off != nil), opt(worst, off != nil),
		phy.TAcc(), opt(tDec, true), opt(pred.MinNs, hasPred), opt(pred.MaxNs, hasPred), opt(pred.MarginalMaxNs, hasPred))
	return hs, span, err
}

// writeEnvelope writes the envelope over 1..n hops (the cumulative
// latency per probe) and the case's envelope and worst total.
func writeEnvelope(envT *results.TableWriter, k caseKey, smp *sample, span []float64, c *Case) error {
	cum := make([]float64, len(smp.hop[0]))
	for h := range smp.hop {
		for i, v := range smp.hop[h] {
			cum[i] += v
		}
		if smp.cum != nil {
			copy(cum, smp.cum[h])
		}
		sorted := slices.Sorted(slices.Values(cum))
		lo, hi := sorted[0], sorted[len(sorted)-1]
		paperEnv := 0.0
		for _, x := range span[:h+1] {
			paperEnv += x // NaN when a hop has no prediction
		}
		if err := envT.Write(k.link, k.gbps, k.fec, k.frameBytes, k.mode, k.path, h+1, lo, hi, hi-lo, opt(paperEnv, !math.IsNaN(paperEnv)),
			quantile(sorted, 0.5), quantile(sorted, 0.99)); err != nil {
			return err
		}
		c.EnvelopeNs, c.MaxTotalNs = hi-lo, hi
		c.EnvelopeByHopsNs = append(c.EnvelopeByHopsNs, hi-lo)
	}
	return nil
}

// record puts a case into the summary, with the headline numbers it
// answers: the worst per hop at 25G RS(528,514) (from its smallest
// frames' case) and what the heterogeneous path adds. st.mu is held.
func (st *latencyState) record(k caseKey, c Case) {
	st.summary.Cases[k.metricName()] = c
	if k.gbps == 25 && k.fec == "rs528" && k.mode == "cut-through" && k.path == "homogeneous" && st.smallest(k) {
		w := math.Inf(-1)
		for _, h := range c.Hops {
			if h.FECWorstNs != nil {
				w = math.Max(w, *h.FECWorstNs)
			}
		}
		if !math.IsInf(w, -1) {
			st.summary.WorstPerHop25GRS528Ns = ptr(w)
		}
	}
	if k.path == "chain" && k.gbps == 25 && k.fec == "rs528" && k.mode == "cut-through" {
		st.summary.ChainEnvelopeNs = ptr(c.EnvelopeNs)
	}
	if k.slowFirst {
		base := k
		base.link, base.path, base.slowFirst = "100G rs528", "homogeneous", false
		if b, ok := st.summary.Cases[base.metricName()]; ok {
			st.summary.HeterogeneousTotalExtraNs = ptr(c.MaxTotalNs - b.MaxTotalNs)
		}
	}
}

// smallest reports whether no case of k's link and mode has smaller frames.
func (st *latencyState) smallest(k caseKey) bool {
	for _, o := range st.order {
		if o.link == k.link && o.mode == k.mode && o.frameBytes < k.frameBytes {
			return false
		}
	}
	return true
}
