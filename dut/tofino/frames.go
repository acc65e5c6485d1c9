package tofino

import (
	"context"
	"fmt"
	"math"
	"time"
)

// PortFrames is one read of a port's frame counters in device-neutral
// terms: running totals since the port was added or its counters cleared,
// each from a field of Tofino 1's $PORT_STAT table (bf_rt_port_tf1.json,
// the MAC's RMON counters, RFC 2819 / IEEE 802.3 clause 30; agent/PROTOCOL.md
// port.stat). A read of a subset (PortFramesOf) leaves the fields it did
// not ask for at 0.
type PortFrames struct {
	// Time is the switch's clock at the read.
	Time time.Duration
	// TxOK: frames sent without error ($FramesTransmittedOK).
	TxOK int64
	// TxAll: every frame sent, good or bad ($FramesTransmittedAll).
	TxAll int64
	// TxOctets: the bytes of every frame sent, FCS included
	// ($OctetsTransmittedTotal).
	TxOctets int64
	// TxPriPause: priority flow control (802.1Qbb) pause frames sent
	// ($FramesTransmittedPriPause).
	TxPriPause int64
	// RxOK: frames received without error ($FramesReceivedOK).
	RxOK int64
	// RxAll: every frame received, good or bad ($FramesReceivedAll).
	RxAll int64
	// RxFCSErrors: frames received with a bad frame check sequence: the
	// corruption a link's FEC left uncorrected ($FramesReceivedwithFCSError).
	RxFCSErrors int64
	// TxSized: frames sent whose length, FCS included, lies in the RMON
	// frame-size ranges covering the read's TxSizes (the sum of the
	// $FramesTransmittedLength_<range> fields); 0 unless asked for.
	TxSized int64
}

// FrameField selects a field of PortFrames for PortFramesOf; combine
// them with |.
type FrameField uint

// The fields, in the order a read names their counters.
const (
	FramesTxOK FrameField = 1 << iota
	FramesTxAll
	FramesTxOctets
	FramesTxPriPause
	FramesRxOK
	FramesRxAll
	FramesRxFCSErrors

	// FramesAll is every field but TxSized.
	FramesAll = FramesTxOK | FramesTxAll | FramesTxOctets | FramesTxPriPause | FramesRxOK | FramesRxAll | FramesRxFCSErrors
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

// SizeRange is a range of frame lengths in bytes, FCS included, Min to
// Max inclusive; Max 0 means no upper bound. The zero SizeRange selects
// nothing.
type SizeRange struct{ Min, Max int }

// FrameQuery is what a PortFramesOf read asks for: Fields, and, when
// TxSizes is set, TxSized over the RMON frame-size ranges it overlaps.
type FrameQuery struct {
	Fields  FrameField
	TxSizes SizeRange
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
func (r SizeRange) sizeNames() ([]string, error) {
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
		if sized, err = q.TxSizes.sizeNames(); err != nil {
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
