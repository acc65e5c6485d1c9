package tofino

import (
	"context"
	"fmt"

	sd "testbed/p4/stardust"
)

// InOrderReleased reads, on an FA, the next sequence number it expects
// from each source FA in srcs (sd.RegSeqIn): how many of that source's
// frames it has released in order since the counter last wrapped or was
// written (the Tofino stand-in for §4.1's reassembly, p4/stardust/README.md).
// The counters are 32 bits: callers take differences modulo 2^32
// (SeqDelta). One register request covers every source.
func (s *Switch) InOrderReleased(ctx context.Context, srcs []int) ([]uint32, error) {
	if len(srcs) == 0 {
		return nil, nil
	}
	hi := 0
	for _, x := range srcs {
		if x < 0 || x >= sd.MaxFAs {
			return nil, fmt.Errorf("register %s: source FA %d outside 0..%d", sd.RegSeqIn, x, sd.MaxFAs-1)
		}
		hi = max(hi, x)
	}
	v, err := s.ReadRegisterRange(ctx, sd.RegSeqIn, 0, hi+1)
	if err != nil {
		return nil, err
	}
	if len(v) < hi+1 {
		return nil, fmt.Errorf("register %s: %d values for indices 0..%d", sd.RegSeqIn, len(v), hi)
	}
	out := make([]uint32, len(srcs))
	for i, x := range srcs {
		out[i] = uint32(v[x])
	}
	return out, nil
}

// SeqDelta is how many sequence numbers lie from a to b on the 32-bit
// counters InOrderReleased reads.
func SeqDelta(a, b uint32) int64 { return int64(b - a) }
