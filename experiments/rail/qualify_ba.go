package rail

import (
	"context"
	"fmt"
	"time"

	"testbed/dut/p4switch"
	"testbed/experiments/lgbench"
	"testbed/experiments/rail/topo"
	"testbed/experiments/stats"
	o "testbed/orchestrator"
	"testbed/results"
)

// baStep is the longest wait for device time one request asks for, as the
// bench's own (lgbench): the context is checked between steps.
const baStep = 50 * time.Millisecond

// reverse tests b -> a: the receiving switch's packet generator sends the
// same line-rate frames out of its end of the link, and the sending
// switch's port counts what arrives (frames received OK and with FCS
// errors). RAIL §2.3: attenuation is asymmetric when high, so one
// direction's rate does not tell the other's.
func (st *qualifyState) reverse(ctx context.Context, rc *o.RunContext, b *lgbench.Bench, l lgbench.Link, tl *topo.Link, s lgbench.Stress, frames int64, fb int) error {
	gen, cnt := b.Rx, b.Tx // b sends, a counts
	if rc.FirstTouch(fmt.Sprintf("pktgen/%s/%d", l.Receiver, s.AppID)) {
		if err := rc.Journal(l.Receiver, o.Undo{Kind: o.UndoTofinoPktgen, Desc: fmt.Sprintf("stop packet generator application %d on %s", s.AppID, l.Receiver),
			Args: map[string]int{"app_id": s.AppID}}); err != nil {
			return err
		}
	}
	read := func() (ok, fcs int64, err error) {
		c, err := cnt.PortFramesOf(ctx, l.TxPort, p4switch.FrameQuery{Fields: p4switch.FramesRxOK | p4switch.FramesRxFCSErrors})
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", l.Sender, err)
		}
		return c.RxOK, c.RxFCSErrors, nil
	}
	ok0, fcs0, err := read()
	if err != nil {
		return err
	}
	per := min(frames, 65536)
	g := p4switch.Pktgen{AppID: s.AppID, Port: s.PktgenPort, EgressPort: l.RxPort, PacketBytes: fb - 4,
		Interval: b.LineRateInterval(fb), Batches: int((frames + per - 1) / per), PerBatch: int(per)}
	var rtt o.RoundTrip // the generator's: its stop after an error has a deadline from it
	var t0 time.Duration
	if err := rtt.Measure(func() (err error) { t0, err = gen.Clock(ctx); return err }); err != nil {
		return fmt.Errorf("%s: %w", l.Receiver, err)
	}
	if err := rtt.Measure(func() error { return gen.StartPktgen(ctx, g) }); err != nil {
		return fmt.Errorf("%s: %w", l.Receiver, err)
	}
	done := false
	defer func() {
		if !done {
			_ = rtt.Cleanup(ctx, func(ctx context.Context) error { return gen.StopPktgen(ctx, s.AppID) })
		}
	}()
	limit := t0 + 2*b.Duration(g.Packets(), fb) + 10*time.Second
	var sent int64
	for now := t0; ; {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: wait for the packet generator: %w", l.Receiver, context.Cause(ctx))
		}
		stt, err := gen.PktgenStatus(ctx, s.AppID)
		if err != nil {
			return fmt.Errorf("%s: %w", l.Receiver, err)
		}
		if stt.Done {
			sent = stt.Packets
			break
		}
		if now > limit {
			return fmt.Errorf("%s: the packet generator sent %d of %d frames by %v of device time", l.Receiver, stt.Packets, g.Packets(), now-t0)
		}
		if now, err = gen.WaitClock(ctx, now+baStep); err != nil {
			return fmt.Errorf("%s: %w", l.Receiver, err)
		}
	}
	done = true
	// Frames in flight land within microseconds: a millisecond covers them.
	if now, err := gen.Clock(ctx); err != nil {
		return fmt.Errorf("%s: %w", l.Receiver, err)
	} else if _, err := gen.WaitClock(ctx, now+time.Millisecond); err != nil {
		return fmt.Errorf("%s: %w", l.Receiver, err)
	}
	ok1, fcs1, err := read()
	if err != nil {
		return err
	}
	if sent == 0 {
		return fmt.Errorf("%s: the packet generator sent no frame on %s", l.Receiver, tl.Name)
	}
	got := ok1 - ok0
	if got > sent {
		return fmt.Errorf("%s: port %d received %d frames of %d sent: other traffic crosses the link", l.Sender, l.TxPort, got, sent)
	}
	lost := sent - got
	lo, hi := stats.Wilson(lost, sent, stats.Z95)
	e := topo.Estimate{LPER: float64(lost) / float64(sent), Low: lo, High: hi, Frames: sent, Lost: lost}
	t, err := rc.Table("lper")
	if err != nil {
		return err
	}
	secs := b.Duration(sent, fb).Seconds()
	if err := t.Write(tl.Name, tl.B, tl.A, tl.Transceiver, tl.FEC, fb, secs, sent, got, lost, fcs1-fcs0, e.LPER, lo, hi); err != nil {
		return err
	}
	rate := fmt.Sprintf("%.3g", e.LPER)
	if lost == 0 {
		rate = fmt.Sprintf("0 (< %.2g)", hi)
	}
	rc.Event(results.Event{Type: "measurement", Device: l.Receiver, Message: fmt.Sprintf("%s %s->%s: LPER %s (%d of %d frames, %d FCS errors)", tl.Name, tl.B, tl.A, rate, lost, sent, fcs1-fcs0),
		Fields: map[string]any{"link": tl.Name, "frames_sent": sent, "frames_lost": lost, "loss_rate": e.LPER, "loss_rate_high": hi}})
	st.mu.Lock()
	defer st.mu.Unlock()
	tl.BA = e
	st.ba[tl.Name] = true
	h := st.hs[tl.Name]
	h.FramesSentBA, h.FramesLostBA, h.FCSErrorsBA, h.LPERBA, h.LPERLowBA, h.LPERHighBA = sent, lost, fcs1-fcs0, e.LPER, lo, hi
	h.Health = health(max(h.LPERHigh, hi))
	st.hs[tl.Name] = h
	return nil
}
