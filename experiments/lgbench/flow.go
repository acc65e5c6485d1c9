package lgbench

import (
	"context"
	"fmt"
	"time"
)

// Flow is a long line-rate flow of the packet generator that a recipe
// watches while it changes the link (the backpressure recipe).
type Flow struct {
	b       *Bench
	s       Stress
	Start   Snapshot // read just before the generator started
	stopped bool
}

// StartFlow starts s.Frames line-rate frames and returns at once.
func (b *Bench) StartFlow(ctx context.Context, s Stress) (*Flow, error) {
	per := min(s.Frames, 65536)
	batches := (s.Frames + per - 1) / per
	if s.Frames < 1 || batches > 65536 {
		return nil, fmt.Errorf("flow of %d frames: expected 1..%d", s.Frames, int64(65536)*65536)
	}
	if _, err := b.ReadQueues(ctx, true); err != nil {
		return nil, err
	}
	before, err := b.Read(ctx)
	if err != nil {
		return nil, err
	}
	if err := b.journalPktgen(s.AppID); err != nil {
		return nil, err
	}
	if err := b.txRTT.Measure(func() error { return b.Tx.StartPktgen(ctx, pktgen(b, s, int(batches), int(per))) }); err != nil {
		return nil, fmt.Errorf("%s: %w", b.Sender, err)
	}
	return &Flow{b: b, s: s, Start: before}, nil
}

// Sample is one poll of the flow.
type Sample struct {
	Snapshot
	Queues
}

// SampleAt waits for the sender's clock to reach t and reads the counters
// and buffers there.
func (f *Flow) SampleAt(ctx context.Context, t time.Duration) (Sample, error) {
	s, err := f.b.waitRead(ctx, t)
	if err != nil {
		return Sample{}, err
	}
	q, err := f.b.ReadQueues(ctx, false)
	if err != nil {
		return Sample{}, err
	}
	return Sample{s, q}, nil
}

// Stop stops the generator and returns how many frames it sent.
func (f *Flow) Stop(ctx context.Context) (int64, error) {
	if f.stopped {
		return 0, nil
	}
	f.stopped = true
	if err := f.b.Tx.StopPktgen(ctx, f.s.AppID); err != nil {
		return 0, fmt.Errorf("%s: %w", f.b.Sender, err)
	}
	st, err := f.b.Tx.PktgenStatus(ctx, f.s.AppID)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", f.b.Sender, err)
	}
	return st.Packets, nil
}

// Close stops the generator if it still runs (an error or abort mid-flow).
func (f *Flow) Close(ctx context.Context) {
	if !f.stopped {
		_ = f.b.txRTT.Cleanup(ctx, func(ctx context.Context) error { return f.b.Tx.StopPktgen(ctx, f.s.AppID) })
		f.stopped = true
	}
}
