package trafficgen

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"testbed/simlab/wire"
)

// otgSpecVersion is the open-traffic-generator/models release whose
// artifacts/openapi.yaml the emulator follows; GET /capabilities/version
// reports it as api_spec_version.
const otgSpecVersion = "1.20.0"

// The flow fields the emulator reads, with the defaults that spec gives
// for omitted fields (components/schemas Flow.Size, Flow.SizeIncrement,
// Flow.Rate, Flow.Duration, Flow.FixedPackets, Flow.FixedSeconds). A
// pointer is nil when the client left the field out.
type otgSize struct {
	Choice    string `json:"choice,omitempty"` // default "fixed"
	Fixed     *int   `json:"fixed,omitempty"`  // default 64
	Increment *struct {
		Start *int `json:"start,omitempty"` // default 64
		End   *int `json:"end,omitempty"`   // default 1518
		Step  *int `json:"step,omitempty"`  // default 1
	} `json:"increment,omitempty"`
}

type otgRate struct {
	Choice     string  `json:"choice,omitempty"`     // default "pps"
	Pps        *otgU64 `json:"pps,omitempty"`        // default 1000
	Bps        *otgU64 `json:"bps,omitempty"`        // default 1e9, minimum 672
	Kbps       *otgU64 `json:"kbps,omitempty"`       // default 1e6
	Mbps       *otgU64 `json:"mbps,omitempty"`       // default 1000
	Gbps       *otgNum `json:"gbps,omitempty"`       // default 1 (uint32)
	Percentage *otgNum `json:"percentage,omitempty"` // default 100, in [0, 100]
}

type otgDuration struct {
	Choice       string `json:"choice,omitempty"` // default "continuous"
	FixedPackets *struct {
		Packets *otgNum `json:"packets,omitempty"` // default 1, minimum 1
		Gap     otgNum  `json:"gap,omitempty"`
	} `json:"fixed_packets,omitempty"`
	FixedSeconds *struct {
		Seconds *otgNum `json:"seconds,omitempty"` // default 1, minimum 0
		Gap     otgNum  `json:"gap,omitempty"`
	} `json:"fixed_seconds,omitempty"`
	Continuous *struct {
		Gap otgNum `json:"gap,omitempty"`
	} `json:"continuous,omitempty"`
}

// otgNum is a number of the OTG models as a client may send it: the
// models' JSON is protobuf's JSON mapping (gosnappi marshals with
// protojson), which writes 64-bit integers as strings and reads a number
// or a string for any numeric field. It is written back as a number.
type otgNum float64

func (n *otgNum) UnmarshalJSON(b []byte) error {
	v, err := parseOTGNumber(b)
	*n = otgNum(v)
	return err
}

// otgU64 is a uint64 field of the models: read as otgNum is, written as
// protojson writes it, a string of digits.
type otgU64 float64

func (n *otgU64) UnmarshalJSON(b []byte) error {
	v, err := parseOTGNumber(b)
	if err == nil && (v < 0 || v != math.Trunc(v)) {
		err = fmt.Errorf("%s is not an unsigned integer", b)
	}
	*n = otgU64(v)
	return err
}

func (n otgU64) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(strconv.FormatUint(uint64(n), 10))), nil
}

func parseOTGNumber(b []byte) (float64, error) {
	s := string(b)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s is not a number", b)
	}
	return v, nil
}

// u64 is a 64-bit counter in an answer, written as protojson writes
// uint64 (a string of digits), as Ixia-c's HTTP gateway does.
type u64 int64

func (n u64) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(strconv.FormatInt(int64(n), 10))), nil
}

func orU64(p *otgU64, def float64) float64 {
	if p == nil {
		return def
	}
	return float64(*p)
}

func orNum(p *otgNum, def float64) float64 {
	if p == nil {
		return def
	}
	return float64(*p)
}

func orInt(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// otgResolve applies the spec's defaults to a flow and returns its frame
// sizes (the repeating sequence), its frame rate at a port of lineBps, and
// the frames it sends (0: continuous). Every frame costs 20 B more on the
// wire, preamble and SFD and the minimum inter-packet gap (IEEE 802.3
// cl. 4), for the rates given in bits and in percent of the line.
func otgResolve(f *otgFlowJS, lineBps float64) (sizes []int, fps float64, packets int64, errs []string) {
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Sprintf("flow %s: ", f.Name)+fmt.Sprintf(format, args...))
	}
	sizes = otgFrameSizes(f.Size, bad)
	if len(sizes) == 0 {
		return nil, 0, 0, errs
	}
	var sum float64
	for _, n := range sizes {
		sum += float64(n)
	}
	wireBits := (sum/float64(len(sizes)) + 20) * 8
	fps = otgFrameRate(f.Rate, lineBps, wireBits, bad)
	if fps*wireBits > lineBps*(1+1e-9) {
		bad("rate %.6g frames/s of %.0f B on average needs %.6g b/s, more than the port's %.6g b/s", fps, sum/float64(len(sizes)), fps*wireBits, lineBps)
	}
	packets = otgFrameCount(f.Duration, fps, bad)
	return sizes, fps, packets, errs
}

// otgFrameSizes is a flow's repeating sequence of frame sizes: one fixed
// size (64 B by default) or an increment (64 to 1518 B by 1 by default);
// none when the size is bad.
func otgFrameSizes(size otgSize, bad func(string, ...any)) []int {
	switch size.Choice {
	case "", "fixed":
		n := orInt(size.Fixed, 64)
		if n < 64 || n > 9216 {
			bad("size.fixed %d is outside [64, 9216]", n)
		}
		return []int{n}
	case "increment":
		start, end, step := 64, 1518, 1
		if in := size.Increment; in != nil {
			start, end, step = orInt(in.Start, 64), orInt(in.End, 1518), orInt(in.Step, 1)
		}
		if start < 64 || end > 9216 || start > end || step < 1 {
			bad("size.increment start %d, end %d, step %d: want 64 <= start <= end <= 9216 and step >= 1", start, end, step)
			return nil
		}
		var sizes []int
		for n := start; n <= end; n += step {
			sizes = append(sizes, n)
		}
		return sizes
	default:
		bad("size choice %q is not supported (fixed, increment)", size.Choice)
		return nil
	}
}

// otgFrameRate is a flow's frame rate at a port of lineBps, its frames
// costing wireBits each on the line: given in frames (1000/s by
// default), in bits, or in percent of the line.
func otgFrameRate(rate otgRate, lineBps, wireBits float64, bad func(string, ...any)) float64 {
	var fps, bps float64
	switch rate.Choice {
	case "", "pps":
		fps = orU64(rate.Pps, 1000)
		if fps < 1 {
			bad("rate.pps %g is below 1", fps)
		}
	case "bps":
		bps = orU64(rate.Bps, 1e9)
		if bps < 672 {
			bad("rate.bps %g is below 672", bps)
		}
	case "kbps":
		bps = orU64(rate.Kbps, 1e6) * 1e3
	case "mbps":
		bps = orU64(rate.Mbps, 1000) * 1e6
	case "gbps":
		bps = orNum(rate.Gbps, 1) * 1e9
	case "percentage":
		pct := orNum(rate.Percentage, 100)
		if pct <= 0 || pct > 100 {
			bad("rate.percentage %g is outside (0, 100]", pct)
		}
		bps = pct / 100 * lineBps
	default:
		bad("rate choice %q is not one of pps, bps, kbps, mbps, gbps, percentage", rate.Choice)
	}
	if bps > 0 {
		fps = bps / wireBits
	}
	return fps
}

// otgFrameCount is the frames a flow sends at fps (0: continuous): a fixed
// count (1 by default), or the frames that fit in a fixed time (1 s by
// default).
func otgFrameCount(d otgDuration, fps float64, bad func(string, ...any)) int64 {
	switch d.Choice {
	case "", "continuous":
		return 0
	case "fixed_packets":
		packets := int64(1)
		if fp := d.FixedPackets; fp != nil && fp.Packets != nil {
			packets = int64(*fp.Packets)
		}
		if packets < 1 {
			bad("duration.fixed_packets.packets %d is below 1", packets)
		}
		return packets
	case "fixed_seconds":
		secs := 1.0
		if fs := d.FixedSeconds; fs != nil {
			secs = orNum(fs.Seconds, 1)
		}
		if secs <= 0 {
			bad("duration.fixed_seconds.seconds %g is not positive", secs)
		}
		// The flow stops after secs of transmission: the frames that fit.
		return max(1, int64(math.Floor(secs*fps+1e-9)))
	default:
		bad("duration choice %q is not supported (fixed_packets, fixed_seconds, continuous)", d.Choice)
		return 0
	}
}

// transmit sends n frames, starting with the from-th of the flow, across
// its fibre, each run of one size at that size's loss probability, and
// returns how many were lost.
func (f *otgFlow) transmit(from, n int64) (lost int64) {
	k := int64(len(f.sizes))
	if k == 1 {
		return f.fibre.Transmit(n, f.sizes[0])
	}
	// Frames from..from+n-1; frame i has size sizes[i mod k].
	for j := int64(0); j < k; j++ {
		idx := (from + j) % k
		cnt := (n - j + k - 1) / k // frames j, j+k, ... below n
		if cnt > 0 {
			lost += f.fibre.Transmit(cnt, f.sizes[idx])
		}
	}
	return lost
}

// bytes is the size of the flow's first n frames.
func (f *otgFlow) bytes(n int64) int64 {
	k := int64(len(f.sizes))
	var cycle, part int64
	for i, s := range f.sizes {
		cycle += int64(s)
		if int64(i) < n%k {
			part += int64(s)
		}
	}
	return n/k*cycle + part
}

// rxBytes is the bytes of rx frames received out of tx sent, at the mean
// size of those sent (losses per size are not kept apart).
func (f *otgFlow) rxBytes(tx, rx int64) int64 {
	if tx == 0 {
		return 0
	}
	if len(f.sizes) == 1 {
		return rx * int64(f.sizes[0])
	}
	return int64(float64(f.bytes(tx)) * float64(rx) / float64(tx))
}

// otgNotFound answers paths and methods the API does not have with the
// spec's Error object (components/schemas/Error: code, kind, errors)
// instead of Go's plain text: 404 for an unknown path, 405 for a known
// path with another method.
func otgNotFound(mux *http.ServeMux) {
	methods := map[string]string{"/capabilities/version": "GET", "/config": "GET, POST", "/control/state": "POST", "/monitor/metrics": "POST"}
	for path, allow := range methods {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			wire.WriteJSON(w, http.StatusMethodNotAllowed, otgError{Code: http.StatusMethodNotAllowed, Kind: "validation",
				Errors: []string{fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow)}})
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		wire.WriteJSON(w, http.StatusNotFound, otgError{Code: http.StatusNotFound, Kind: "validation",
			Errors: []string{fmt.Sprintf("%s %s: no such path in the Open Traffic Generator API", r.Method, r.URL.Path)}})
	})
}

// receiver finds where a flow's frames land: the configured port whose
// location receives the fibre (OTGPort.RxFibre), and whether it is one of
// the flow's rx ports (the flow's frames_rx counts only those; the port's
// own frames_rx counts whatever arrives). Without RxFibre on any port, the
// first rx port receives.
func (s *OTGServer) receiver(ports []otgPort, fibre string, rxs []string) (string, bool) {
	declared := false
	for _, p := range s.ports {
		declared = declared || p.RxFibre != ""
	}
	if !declared {
		return rxs[0], true
	}
	for _, p := range ports {
		if s.ports[p.Location].RxFibre == fibre {
			for _, rx := range rxs {
				if rx == p.Name {
					return p.Name, true
				}
			}
			return p.Name, false
		}
	}
	return "", false
}
