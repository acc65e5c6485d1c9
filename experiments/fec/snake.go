package fec

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"testbed/dut/p4switch"
	o "testbed/orchestrator"
	ts "testbed/p4/timestamp"
	"testbed/results"
)

// pktgenPort is Tofino 1's packet-generator port of pipe 0: probes enter
// the ingress pipeline there.
const pktgenPort = 68

// snake is the switch under test running the timestamp program, with its
// snake ports, and what the run changed on it recorded in the undo journal.
type snake struct {
	rc    *o.RunContext
	dev   string
	sw    p4switch.Switch
	ports []int
}

// openSnake starts the timestamp program on the switch (building it when
// it is not installed) and chains the ports: the generator's probes go out
// of ports[0], come back in through its loopback module (or the fibre to
// the next switch), out of ports[1], and so on; the last drops them.
func openSnake(ctx context.Context, rc *o.RunContext, dev string, ports []int, replace bool) (*snake, error) {
	return openSnakeFrom(ctx, rc, dev, pktgenPort, ports, replace)
}

// openSnakeFrom is openSnake for probes that enter the switch at port
// entry: the packet generator's, or, on a chain of switches, the port
// the fibre from the previous switch ends at.
func openSnakeFrom(ctx context.Context, rc *o.RunContext, dev string, entry int, ports []int, replace bool) (*snake, error) {
	sw, err := o.As[p4switch.Switch](rc, dev)
	if err != nil {
		return nil, err
	}
	s := &snake{rc: rc, dev: dev, sw: sw, ports: ports}
	got, err := sw.Program(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dev, err)
	}
	found := rc.ProgramFound(dev, got)
	if got != ts.Program {
		if got != "" && !replace {
			return nil, fmt.Errorf("%s runs the P4 program %q, not %q: set replace_program=true to restart its switch daemon with %s", dev, got, ts.Program, ts.Program)
		}
		builder, ok := sw.(p4switch.Builder)
		if !ok {
			return nil, fmt.Errorf("%s runs %q and its driver cannot build %s on it: load %s by hand, or use a driver that builds programs", dev, got, ts.Program, ts.Program)
		}
		b, err := builder.BuildProgram(ctx, ts.Program, ts.MainFile(ts.Program), ts.Sources())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dev, err)
		}
		after := "it is left running"
		if got != "" {
			// As the LinkGuardian bench does (lgbench.Bench.program): what
			// the run changed under the program it replaces is undone
			// while that program runs, and the program found is started
			// again at the run's end. Left running, the timestamp program
			// made every later LinkGuardian run on the switch refuse it.
			if err := rc.SettleProgram(ctx, dev, got, "bf_switchd restarts with "+ts.Program); err != nil {
				return nil, err
			}
			if got == found {
				after = "the run restarts " + found + ", the program found, at its end"
				if rc.FirstTouch("fec/program/" + dev) {
					if err := rc.Journal(dev, o.Undo{Kind: o.UndoTofinoProgram, Desc: fmt.Sprintf("restart bf_switchd on %s with %s, the program found", dev, found),
						Found: found, Args: map[string]string{"program": found}}); err != nil {
						return nil, err
					}
				}
			}
		}
		rc.Event(results.Event{Type: "setting", Device: dev, Message: fmt.Sprintf("built %s (sources %s) and starting bf_switchd with it (was: %q); %s", ts.Program, b.SourceSHA256[:12], got, after),
			Fields: map[string]any{"program": ts.Program, "previous_program": got, "source_sha256": b.SourceSHA256}})
		if err := sw.LoadProgram(ctx, ts.Program); err != nil {
			return nil, fmt.Errorf("%s: %w", dev, err)
		}
	} else if err := sw.Ready(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", dev, err)
	}
	in := entry
	for _, p := range append(append([]int{}, ports...), -1) {
		key := map[string]int64{ts.KeyIngressPort: int64(in)}
		e := p4switch.Entry{Key: key, Action: ts.ActionForward, Data: map[string]int64{ts.ParamPort: int64(p)}}
		if p < 0 {
			e = p4switch.Entry{Key: key, Action: ts.ActionDrop, Data: map[string]int64{}}
		}
		if err := s.entry(ctx, e); err != nil {
			return nil, err
		}
		in = p
	}
	return s, nil
}

// entry installs a snake entry, journalling the one it replaces.
func (s *snake) entry(ctx context.Context, e p4switch.Entry) error {
	es, err := s.sw.Entries(ctx, ts.TableSnake)
	if err != nil {
		return fmt.Errorf("%s: %w", s.dev, err)
	}
	var found *p4switch.Entry
	for i := range es {
		if es[i].Key[ts.KeyIngressPort] == e.Key[ts.KeyIngressPort] {
			found = &es[i]
		}
	}
	if found != nil && found.Action == e.Action && fmt.Sprint(found.Data) == fmt.Sprint(e.Data) {
		return nil
	}
	if err := s.rc.Journal(s.dev, o.Undo{Kind: o.UndoTofinoEntry, Desc: fmt.Sprintf("restore %s entry for ingress port %d on %s", ts.TableSnake, e.Key[ts.KeyIngressPort], s.dev),
		Found: found, Args: map[string]any{"table": ts.TableSnake, "key": e.Key, "entry": found}}); err != nil {
		return err
	}
	if found != nil {
		if err := s.sw.DeleteEntry(ctx, ts.TableSnake, e.Key); err != nil {
			return fmt.Errorf("%s: %w", s.dev, err)
		}
	}
	if err := s.sw.AddEntry(ctx, ts.TableSnake, e); err != nil {
		return fmt.Errorf("%s: %w", s.dev, err)
	}
	return nil
}

// setMode brings a port to a speed and FEC, adding it if it is not there;
// the first change of a port in a run journals how to put it back.
func (s *snake) setMode(ctx context.Context, port, gbps int, fec string) error {
	_, err := s.sw.PortStatus(ctx, port)
	switch {
	case p4switch.IsNotFound(err):
		if err := s.rc.Journal(s.dev, o.Undo{Kind: o.UndoTofinoDeletePort, Desc: fmt.Sprintf("delete port %d the run added on %s", port, s.dev),
			Args: map[string]int{"port": port}}); err != nil {
			return err
		}
		if err := s.sw.AddPort(ctx, port, gbps, fec); err != nil {
			return fmt.Errorf("%s: %w", s.dev, err)
		}
		s.rc.FirstTouch(fmt.Sprintf("fec/%s/%d/mode", s.dev, port)) // added: the delete undoes it
		return nil
	case err != nil:
		return fmt.Errorf("%s: %w", s.dev, err)
	}
	prev, err := s.sw.SetPortMode(ctx, port, gbps, fec)
	if err != nil {
		return fmt.Errorf("%s: %w", s.dev, err)
	}
	if s.rc.FirstTouch(fmt.Sprintf("fec/%s/%d/mode", s.dev, port)) {
		return s.rc.Journal(s.dev, o.Undo{Kind: o.UndoTofinoPortMode, Desc: fmt.Sprintf("set port %d back to %s %s on %s", port, prev.Speed, prev.FEC, s.dev),
			Found: prev, Args: map[string]any{"port": port, "mode": prev}})
	}
	return nil
}

// setCutThrough sets the forwarding mode towards a port.
func (s *snake) setCutThrough(ctx context.Context, port int, on bool) error {
	prev, err := s.sw.SetCutThrough(ctx, port, on)
	if err != nil {
		return fmt.Errorf("%s: %w", s.dev, err)
	}
	if s.rc.FirstTouch(fmt.Sprintf("fec/%s/%d/ct", s.dev, port)) {
		return s.rc.Journal(s.dev, o.Undo{Kind: o.UndoTofinoCutThrough, Desc: fmt.Sprintf("set cut-through towards port %d back to %v on %s", port, prev, s.dev),
			Found: prev, Args: map[string]any{"port": port, "enable": prev}})
	}
	return nil
}

// waitUp waits for every snake port to come up.
func (s *snake) waitUp(ctx context.Context, timeout time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, p := range s.ports {
		if err := s.sw.WaitPortUp(wctx, p); err != nil {
			return fmt.Errorf("%s: %w", s.dev, err)
		}
	}
	return nil
}

// drain empties the snake ports' transmit timestamp FIFOs of stamps from
// earlier traffic, so that each read that follows belongs to a probe.
func (s *snake) drain(ctx context.Context) error {
	for _, p := range s.ports {
		for i := 0; ; i++ {
			st, err := s.sw.TxTimestamp(ctx, p)
			if err != nil {
				return fmt.Errorf("%s: %w", s.dev, err)
			}
			if !st.Valid {
				break
			}
			if i >= 4096 {
				return fmt.Errorf("%s: port %d's transmit timestamps do not run out after %d reads: is other traffic stamped on it?", s.dev, p, i)
			}
		}
	}
	return nil
}

// probeStamps is one probe's stamps: per snake port, the MAC's transmit
// timestamp and the ingress timestamp when it came back in (ns, the
// switch's 32-bit clock).
type probeStamps struct {
	tx, rx []uint32
}

// send offers one probe of frameBytes at the switch's clock time at and
// reads its stamps back.
func (s *snake) send(ctx context.Context, at time.Duration, frameBytes int, gbps int) (probeStamps, error) {
	var ps probeStamps
	if err := s.fire(ctx, at, frameBytes, gbps); err != nil {
		return ps, err
	}
	for _, p := range s.ports {
		tx, err := s.txStamp(ctx, p)
		if err != nil {
			return ps, err
		}
		rx, err := s.rxStamp(ctx, p)
		if err != nil {
			return ps, err
		}
		ps.tx = append(ps.tx, tx)
		ps.rx = append(ps.rx, rx)
	}
	return ps, nil
}

// txStamp is the MAC transmit timestamp of the probe that last left port p.
func (s *snake) txStamp(ctx context.Context, p int) (uint32, error) {
	st, err := s.sw.TxTimestamp(ctx, p)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", s.dev, err)
	}
	if !st.Valid {
		return 0, fmt.Errorf("%s: port %d has no transmit timestamp for the probe: is the port in the snake and up?", s.dev, p)
	}
	return uint32(st.Value), nil
}

// rxStamp is the MAC ingress timestamp of the probe that last came in at
// port p (the timestamp program's reg_rx_ts).
func (s *snake) rxStamp(ctx context.Context, p int) (uint32, error) {
	v, err := s.sw.ReadRegister(ctx, ts.RegRxTs, p)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", s.dev, err)
	}
	if len(v) == 0 {
		return 0, fmt.Errorf("%s: %s[%d] read no value", s.dev, ts.RegRxTs, p)
	}
	return uint32(v[0]), nil
}

// fire sends one probe of frameBytes from the packet generator at the
// switch's clock time at, and waits until the generator is done.
func (s *snake) fire(ctx context.Context, at time.Duration, frameBytes int, gbps int) error {
	if _, err := s.sw.WaitClock(ctx, at); err != nil {
		return fmt.Errorf("%s: %w", s.dev, err)
	}
	// One probe: a single batch of one packet, its timer the line time.
	line := time.Duration(float64((frameBytes+20)*8)/float64(gbps)) + time.Nanosecond
	g := p4switch.Pktgen{AppID: 1, Port: pktgenPort, EgressPort: s.ports[0], PacketBytes: frameBytes - 4, Interval: line, Batches: 1, PerBatch: 1}
	if s.rc.FirstTouch("fec/pktgen/" + s.dev) {
		if err := s.rc.Journal(s.dev, o.Undo{Kind: o.UndoTofinoPktgen, Desc: fmt.Sprintf("stop packet generator application 1 on %s", s.dev),
			Args: map[string]int{"app_id": 1}}); err != nil {
			return err
		}
	}
	if err := s.sw.StartPktgen(ctx, g); err != nil {
		return fmt.Errorf("%s: %w", s.dev, err)
	}
	for {
		st, err := s.sw.PktgenStatus(ctx, 1)
		if err != nil {
			return fmt.Errorf("%s: %w", s.dev, err)
		}
		if st.Done || !st.Enabled {
			return nil
		}
	}
}

// parseInts reads a list parameter of integers.
func parseInts(name string, vs []string, lo, hi int) ([]int, error) {
	var out []int
	for _, v := range vs {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < lo || n > hi {
			return nil, o.Inputf("%s: %q: expected an integer in %d..%d", name, v, lo, hi)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, o.Inputf("%s: empty", name)
	}
	return out, nil
}

// parseModes reads speed:fec entries ("25:rs528").
func parseModes(vs []string) ([]PHY, error) { return parseModesOf("links", vs) }

// parseModesOf is parseModes for the parameter name.
func parseModesOf(name string, vs []string) ([]PHY, error) {
	var out []PHY
	for _, v := range vs {
		a, b, ok := strings.Cut(strings.TrimSpace(v), ":")
		g, err := strconv.Atoi(a)
		if !ok || err != nil {
			return nil, o.Inputf("%s: %q: expected speed:fec, as 25:rs528", name, v)
		}
		p, err := phyOf(g, b)
		if err != nil {
			return nil, o.Inputf("%s: %q: %v", name, v, err)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, o.Inputf("%s: empty", name)
	}
	return out, nil
}
