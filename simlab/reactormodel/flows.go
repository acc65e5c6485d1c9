package reactormodel

import (
	"fmt"
	"time"
)

// FlowKind is how a flow offers traffic.
type FlowKind int

const (
	// Bulk is a TCP-like flow that takes all the bandwidth it can (§5.2):
	// the application always has data, and the flow keeps at most Window
	// bytes unacknowledged, queued at the host or in flight. Its receiver
	// acknowledges every Framing.AckEvery segments through its own EPS
	// class, so the ACKs cross the packet switch (§5.2: "all TCP ACKs via
	// the packet switch") and free the window when they arrive.
	Bulk FlowKind = iota
	// Paced offers Rate b/s of wire traffic whatever happens to it, like
	// the prototype's pktgen UDP sender (§5) and the offered demands of
	// §5.4. What the host cannot send yet waits in its class queue.
	Paced
)

func (k FlowKind) String() string {
	switch k {
	case Bulk:
		return "bulk"
	case Paced:
		return "paced"
	}
	return fmt.Sprintf("FlowKind(%d)", int(k))
}

// DefaultWindow is a bulk flow's window when none is given: Linux's
// largest autotuned send buffer (net.ipv4.tcp_wmem, 4 MiB).
const DefaultWindow = 4 << 20

// Flow is one flow between two hosts.
type Flow struct {
	Src, Dst int
	Kind     FlowKind
	// Rate is a paced flow's offered wire rate, in b/s.
	Rate float64
	// Window is a bulk flow's window in bytes (default DefaultWindow).
	Window float64
	// EPS puts the flow in its host's dedicated EPS class Q_P, which is
	// always unpaused and never gets a circuit (§3.2, first class
	// constraint), instead of the class of its destination.
	EPS bool
	// Start and Stop bound when the application offers data: from Start,
	// until Stop (0: to the end). A stopped flow's queued bytes are still
	// sent (they were committed to the network).
	Start, Stop time.Duration
}

func (f Flow) validate(n int, epsRate float64) error {
	if f.Src < 0 || f.Src >= n || f.Dst < 0 || f.Dst >= n {
		return fmt.Errorf("%d -> %d: hosts are 0..%d", f.Src, f.Dst, n-1)
	}
	if f.Src == f.Dst {
		return fmt.Errorf("%d -> %d: a host's traffic to itself does not cross the ToR", f.Src, f.Dst)
	}
	switch f.Kind {
	case Paced:
		if !(f.Rate > 0) {
			return fmt.Errorf("%d -> %d: paced at %g b/s, expected a positive rate", f.Src, f.Dst, f.Rate)
		}
	case Bulk:
		if f.Window < 0 {
			return fmt.Errorf("%d -> %d: window %g B, expected >= 0", f.Src, f.Dst, f.Window)
		}
		if epsRate <= 0 {
			return fmt.Errorf("%d -> %d: a bulk flow's ACKs cross the EPS (§5.2) and this ToR has none; use paced flows", f.Src, f.Dst)
		}
	default:
		return fmt.Errorf("%d -> %d: kind %v", f.Src, f.Dst, f.Kind)
	}
	if f.EPS && epsRate <= 0 {
		return fmt.Errorf("%d -> %d: in the EPS class of a ToR without EPS", f.Src, f.Dst)
	}
	if f.Start < 0 || (f.Stop != 0 && f.Stop <= f.Start) {
		return fmt.Errorf("%d -> %d: runs from %v to %v, expected 0 <= start < stop (or stop 0)", f.Src, f.Dst, f.Start, f.Stop)
	}
	return nil
}

// AllToAll is §5.2's workload: every host streams a bulk flow to every
// other host.
func AllToAll(n int) []Flow {
	var fs []Flow
	for i := range n {
		for j := range n {
			if i != j {
				fs = append(fs, Flow{Src: i, Dst: j, Kind: Bulk})
			}
		}
	}
	return fs
}

// GroupInternal is the first workload of §5.2's transition: the hosts split
// into two halves (0..n/2-1 and n/2..n-1), and every host streams a bulk
// flow to each other host of its half, from start until stop (0: to the
// end).
func GroupInternal(n int, start, stop time.Duration) []Flow {
	var fs []Flow
	for i := range n {
		for j := range n {
			if i != j && (i < n/2) == (j < n/2) {
				fs = append(fs, Flow{Src: i, Dst: j, Kind: Bulk, Start: start, Stop: stop})
			}
		}
	}
	return fs
}

// CrossTalk is the second workload of §5.2's transition: every host streams
// a bulk flow to each host of the other half.
func CrossTalk(n int, start, stop time.Duration) []Flow {
	var fs []Flow
	for i := range n {
		for j := range n {
			if (i < n/2) != (j < n/2) {
				fs = append(fs, Flow{Src: i, Dst: j, Kind: Bulk, Start: start, Stop: stop})
			}
		}
	}
	return fs
}

// Skewed is the workload of §5.4 on n hosts at linkRate: host j sends a
// large paced flow of share x of the link to j+1 and splits the rest
// equally among m small paced flows to j+2, j+3, ... (mod n; past n-2
// small flows the destinations repeat and flows share a class). Flows with
// nothing to offer are left out.
func Skewed(n int, linkRate, share float64, m int) []Flow {
	var fs []Flow
	for j := range n {
		if share > 0 {
			fs = append(fs, Flow{Src: j, Dst: (j + 1) % n, Kind: Paced, Rate: share * linkRate})
		}
		if share >= 1 {
			continue
		}
		for k := range m {
			off := 1
			if n > 2 {
				off = 2 + k%(n-2)
			}
			fs = append(fs, Flow{Src: j, Dst: (j + off) % n, Kind: Paced, Rate: (1 - share) * linkRate / float64(m)})
		}
	}
	return fs
}

// Fig10 is the workload of §5.4's Fig. 10: each host sends to its
// twenty-one neighbours, a large flow of share x of the link and twenty
// small flows sharing the rest.
func Fig10(n int, linkRate, share float64) []Flow { return Skewed(n, linkRate, share, 20) }

// Fig11 is the workload of §5.4's Fig. 11: each host sends a large flow of
// 90% of the link and m small flows sharing the other 10%.
func Fig11(n int, linkRate float64, m int) []Flow { return Skewed(n, linkRate, 0.9, m) }
