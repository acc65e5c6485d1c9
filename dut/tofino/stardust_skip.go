package tofino

import (
	"context"
	"fmt"

	sd "testbed/p4/stardust"
)

// The in-order release's sequence numbers, for a control plane that stands
// in for the reassembly timer the programs lack (p4/stardust/README.md:
// "a frame lost in the fabric stalls its source until the control plane
// resets reg_seq_in"). §4.1's egress FA drops a packet whose reassembly
// timer expires; here the control plane reads, at the destination FA, the
// next sequence number it expects from each source (SequenceIn) and, at
// the source FA, the next it will give each destination (SequenceOut): a
// frame the destination still expects that the source sent longer ago than
// a timeout is presumed lost, and SkipSequence gives it up.

// SequenceIn reads an FA's next expected sequence number from each source
// FA 0..n-1 (sd.RegSeqIn), in one request.
func (s *Switch) SequenceIn(ctx context.Context, n int) ([]uint32, error) {
	return s.seqs(ctx, sd.RegSeqIn, n)
}

// SequenceOut reads an FA's next sequence number towards each destination
// FA 0..n-1 (sd.RegSeqOut): every frame below it has left for the fabric.
func (s *Switch) SequenceOut(ctx context.Context, n int) ([]uint32, error) {
	return s.seqs(ctx, sd.RegSeqOut, n)
}

func (s *Switch) seqs(ctx context.Context, reg string, n int) ([]uint32, error) {
	if n < 1 || n > sd.MaxFAs {
		return nil, fmt.Errorf("register %s: %d FAs, expected 1..%d", reg, n, sd.MaxFAs)
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

// SkipSequence gives up the frame with sequence number expected from
// source FA src: the FA then releases the frames after it that wait their
// turn. It reads the register first and does nothing (returning false)
// when the FA no longer expects that frame (it arrived meanwhile). On
// Tofino the read and the write are two requests, so a frame arriving
// between them is released after the skip as an early frame's successor
// would be; the caller's timeout is what makes that unlikely.
func (s *Switch) SkipSequence(ctx context.Context, src int, expected uint32) (bool, error) {
	if src < 0 || src >= sd.MaxFAs {
		return false, fmt.Errorf("skip sequence: source FA %d outside 0..%d", src, sd.MaxFAs-1)
	}
	v, err := s.ReadRegister(ctx, sd.RegSeqIn, src)
	if err != nil {
		return false, err
	}
	var now int64
	for _, x := range v {
		now += x
	}
	if uint32(now) != expected {
		return false, nil
	}
	if err := s.WriteRegister(ctx, sd.RegSeqIn, src, int64(expected+1)); err != nil {
		return false, err
	}
	return true, nil
}
