package phy

import "fmt"

// Mode is how a switch forwards.
type Mode int

const (
	// CutThrough starts forwarding once the header is in (paper §3.1, its ref. [8]).
	CutThrough Mode = iota
	// StoreAndForward waits for the whole frame and its FCS (paper §3.1).
	StoreAndForward
)

func (m Mode) String() string {
	if m == StoreAndForward {
		return "store-and-forward"
	}
	return "cut-through"
}

// Hop is a switch between two links: it receives on the previous link and sends on Out.
type Hop struct {
	Mode Mode
	// PipelineNs is the switch's own latency from the moment it may forward to the
	// moment it offers the frame to the egress transmitter (parse, match-action, queue
	// of an idle port). A stated parameter, not from the paper.
	PipelineNs float64
	Out        *Link
}

// ReadyNs is when a switch in mode m may offer f to its egress link of data rate
// egressBps. A cut-through switch forwards after the header, but never so early that the
// egress would run out of frame before the ingress delivers it (a faster egress
// underruns, so the switch waits: real cut-through switches fall back to
// store-and-forward between mismatched speeds in the same way).
func ReadyNs(m Mode, f Frame, pipelineNs, egressBps float64) float64 {
	if m == StoreAndForward {
		return f.LastNs + pipelineNs
	}
	t := f.HeaderNs + pipelineNs
	// The egress needs (Size-1) bytes after the header's first; they must not outrun
	// the ingress's last byte.
	egressTail := float64((f.Size)*8) / egressBps * 1e9
	if u := f.LastNs + pipelineNs - egressTail; u > t {
		t = u
	}
	return t
}

// Path is a source link followed by hops, each with its egress link.
type Path struct {
	First *Link
	Hops  []Hop
}

// Trip is one frame's journey: its Frame on every link, in order.
type Trip []Frame

// HeaderLatencyNs is from the frame being offered at the source to its header reaching
// the last receiver's MAC.
func (t Trip) HeaderLatencyNs() float64 { return t[len(t)-1].HeaderNs - t[0].SentNs }

// LastLatencyNs is from the frame being offered to its last byte reaching the last MAC.
func (t Trip) LastLatencyNs() float64 { return t[len(t)-1].LastNs - t[0].SentNs }

// Send offers a frame of size bytes to the path's first link at sentNs.
func (p *Path) Send(sentNs float64, size int) (Trip, error) {
	if p.First == nil {
		return nil, fmt.Errorf("path: no first link")
	}
	f, err := p.First.Send(sentNs, size)
	if err != nil {
		return nil, err
	}
	trip := make(Trip, 0, len(p.Hops)+1)
	trip = append(trip, f)
	for i, h := range p.Hops {
		if h.Out == nil {
			return nil, fmt.Errorf("path: hop %d has no egress link", i+1)
		}
		at := ReadyNs(h.Mode, f, h.PipelineNs, h.Out.DataRate())
		f, err = h.Out.Send(at, size)
		if err != nil {
			return nil, fmt.Errorf("path: hop %d: %w", i+1, err)
		}
		trip = append(trip, f)
	}
	return trip, nil
}
