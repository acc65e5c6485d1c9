package stardust

import (
	"context"
	"fmt"
)

// The in-order release's sequence numbers: at a destination FA the next
// it expects from each source (SequenceIn), at a source FA the next it
// will give each destination (SequenceOut). The FAs' reassembly timer
// (SetReassemblyTimeout) gives up missing frames in the dataplane; these
// reads are for a control plane that wants to see where each pair stands.

// SequenceIn reads an FA's next expected sequence number from each source
// FA 0..n-1 (RegSeqIn), in one request.
func (s *Switch) SequenceIn(ctx context.Context, n int) ([]uint32, error) {
	return s.seqs(ctx, RegSeqIn, n)
}

// SequenceOut reads an FA's next sequence number towards each destination
// FA 0..n-1 (RegSeqOut): every frame below it has left for the fabric.
func (s *Switch) SequenceOut(ctx context.Context, n int) ([]uint32, error) {
	return s.seqs(ctx, RegSeqOut, n)
}

func (s *Switch) seqs(ctx context.Context, reg string, n int) ([]uint32, error) {
	if n < 1 || n > MaxFAs {
		return nil, fmt.Errorf("register %s: %d FAs, expected 1..%d", reg, n, MaxFAs)
	}
	v, err := s.ReadRegisterRange(ctx, reg, 0, n)
	if err != nil {
		return nil, err
	}
	out := make([]uint32, n)
	for i, x := range v {
		out[i] = uint32(x) // a 32-bit register, summed over pipes of which one holds it
	}
	return out, nil
}
