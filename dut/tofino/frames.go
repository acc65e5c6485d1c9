package tofino

import (
	"context"
	"fmt"
	"math"
)

// frameFields maps each field to its $PORT_STAT counter and its place in
// PortFrames, in FrameField order.
var frameFields = []struct {
	f    FrameField
	name string
	dst  func(*PortFrames) *int64
}{
	{FramesTxOK, "$FramesTransmittedOK", func(p *PortFrames) *int64 { return &p.TxOK }},
	{FramesTxAll, "$FramesTransmittedAll", func(p *PortFrames) *int64 { return &p.TxAll }},
	{FramesTxOctets, "$OctetsTransmittedTotal", func(p *PortFrames) *int64 { return &p.TxOctets }},
	{FramesTxPriPause, "$FramesTransmittedPriPause", func(p *PortFrames) *int64 { return &p.TxPriPause }},
	{FramesRxOK, "$FramesReceivedOK", func(p *PortFrames) *int64 { return &p.RxOK }},
	{FramesRxAll, "$FramesReceivedAll", func(p *PortFrames) *int64 { return &p.RxAll }},
	{FramesRxFCSErrors, "$FramesReceivedwithFCSError", func(p *PortFrames) *int64 { return &p.RxFCSErrors }},
}

// rmonSizes are the MAC's RMON frame-size ranges, as the
// $FramesTransmittedLength_<name> / $FramesReceivedLength_<name> fields of
// $PORT_STAT name them (bf_rt_port_tf1.json): each range's largest length,
// FCS included; the last is 9216 B and over.
var rmonSizes = []struct {
	max  int
	name string
}{{63, "lt_64"}, {64, "eq_64"}, {127, "65_127"}, {255, "128_255"}, {511, "256_511"}, {1023, "512_1023"},
	{1518, "1024_1518"}, {2047, "1519_2047"}, {4095, "2048_4095"}, {8191, "4096_8191"}, {9215, "8192_9215"}, {math.MaxInt, "9216"}}

// sizeNames are the transmit frame-size counters whose ranges overlap r.
func sizeNames(r SizeRange) ([]string, error) {
	hi := r.Max
	if hi == 0 {
		hi = math.MaxInt
	}
	if r.Min < 1 || hi < r.Min {
		return nil, fmt.Errorf("frame sizes %d..%d B (expected 1 <= min <= max, or max 0 for no upper bound)", r.Min, r.Max)
	}
	var out []string
	lo := 0
	for _, b := range rmonSizes {
		if r.Min <= b.max && hi >= lo {
			out = append(out, "$FramesTransmittedLength_"+b.name)
		}
		lo = b.max + 1
	}
	return out, nil
}

// PortFrames reads every PortFrames field of a port but TxSized, in one
// port.stat request naming just their seven counters.
func (s *Switch) PortFrames(ctx context.Context, devPort int) (PortFrames, error) {
	return s.PortFramesOf(ctx, devPort, FrameQuery{Fields: FramesAll})
}

// PortFramesOf reads the fields q asks for, in one port.stat request
// naming only their counters (a poll of many ports keeps its requests and
// answers small); the others are 0. A field the port does not count is an
// error.
func (s *Switch) PortFramesOf(ctx context.Context, devPort int, q FrameQuery) (PortFrames, error) {
	var names []string
	for _, f := range frameFields {
		if q.Fields&f.f != 0 {
			names = append(names, f.name)
		}
	}
	var sized []string
	if q.TxSizes != (SizeRange{}) {
		var err error
		if sized, err = sizeNames(q.TxSizes); err != nil {
			return PortFrames{}, fmt.Errorf("port %d frame counters: %w", devPort, err)
		}
		names = append(names, sized...)
	}
	if q.Fields&^FramesAll != 0 || len(names) == 0 {
		return PortFrames{}, fmt.Errorf("port %d frame counters: fields %#x (expected a non-empty combination of the Frames* fields, or frame sizes)", devPort, uint(q.Fields))
	}
	c, err := s.portStat(ctx, devPort, names)
	if err != nil {
		return PortFrames{}, err
	}
	pf := PortFrames{Time: c.Time}
	get := func(name string) (int64, error) {
		v, ok := c.Values[name]
		if !ok {
			return 0, fmt.Errorf("port %d frame counters: the answer has no %s", devPort, name)
		}
		return v, nil
	}
	for _, f := range frameFields {
		if q.Fields&f.f == 0 {
			continue
		}
		if *f.dst(&pf), err = get(f.name); err != nil {
			return PortFrames{}, err
		}
	}
	for _, n := range sized {
		v, err := get(n)
		if err != nil {
			return PortFrames{}, err
		}
		pf.TxSized += v
	}
	return pf, nil
}
