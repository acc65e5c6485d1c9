package tofino

import (
	"context"
	"fmt"
	"sort"

	sd "testbed/p4/stardust"
)

// What the Stardust programs (p4/stardust, stardust_fa and stardust_fe)
// offer their control plane, in the fabric's terms: a recipe asks for
// links, reachability and counters and never names a bfrt table. Every
// name and key below comes from p4/stardust's contract.

// FabricLink is one fabric port as the control plane sees it.
type FabricLink struct {
	Port int
	// Up is the port's link state (port.status).
	Up bool
	// Age is the aging ticks since the port's last reachability cell
	// (RegReachAge, saturating at sd.AgeMax).
	Age int
	// Valid is what the reachability table should hold: up, and fewer
	// than th ticks without a reachability cell (§5.9, App. E).
	Valid bool
}

// FabricLinks reads the link state and reachability age of each fabric
// port; th is App. E's threshold (Table 4: 3).
func (s *Switch) FabricLinks(ctx context.Context, ports []int, th int) ([]FabricLink, error) {
	if th < 1 || th > sd.AgeMax {
		return nil, fmt.Errorf("reachability threshold %d: expected 1..%d", th, sd.AgeMax)
	}
	out := make([]FabricLink, 0, len(ports))
	for _, p := range ports {
		st, err := s.PortStatus(ctx, p)
		if err != nil {
			return nil, err
		}
		age, err := s.ReadRegister(ctx, sd.RegReachAge, p)
		if err != nil {
			return nil, err
		}
		l := FabricLink{Port: p, Up: st.Up, Age: int(age[0])}
		l.Valid = l.Up && l.Age < th
		out = append(out, l)
	}
	return out, nil
}

// Reachability is the spraying table: for each destination FA, the fabric
// ports its cells are sprayed over, in slot order with repeats removed.
// A destination with no entry, or only drop entries, is unreachable.
func (s *Switch) Reachability(ctx context.Context) (map[int][]int, error) {
	es, err := s.Entries(ctx, sd.TableSpray)
	if err != nil {
		return nil, err
	}
	sort.Slice(es, func(i, j int) bool {
		a, b := es[i].Key, es[j].Key
		if a[sd.KeyDstFA] != b[sd.KeyDstFA] {
			return a[sd.KeyDstFA] < b[sd.KeyDstFA]
		}
		return a[sd.KeySlot] < b[sd.KeySlot]
	})
	out := map[int][]int{}
	seen := map[[2]int64]bool{}
	for _, e := range es {
		if e.Action != sd.ActionToLink {
			continue
		}
		d, l := e.Key[sd.KeyDstFA], e.Data[sd.ParamLink]
		if !seen[[2]int64{d, l}] {
			seen[[2]int64{d, l}] = true
			out[int(d)] = append(out[int(d)], int(l))
		}
	}
	return out, nil
}

// SetSpray writes the spraying slots of destination FA dst: the links in
// the order given (a random permutation, §5.3), repeated over the
// sd.MaxLinks slots; no links drops the destination's cells. It replaces
// what the slots held.
func (s *Switch) SetSpray(ctx context.Context, dst int, links []int) error {
	if dst < 0 || dst >= sd.MaxFAs {
		return fmt.Errorf("spray: destination FA %d outside 0..%d", dst, sd.MaxFAs-1)
	}
	if len(links) > sd.MaxLinks {
		return fmt.Errorf("spray: %d links for FA %d, the table has %d slots", len(links), dst, sd.MaxLinks)
	}
	es, err := s.Entries(ctx, sd.TableSpray)
	if err != nil {
		return err
	}
	for _, e := range es {
		if e.Key[sd.KeyDstFA] == int64(dst) {
			if err := s.DeleteEntry(ctx, sd.TableSpray, e.Key); err != nil {
				return err
			}
		}
	}
	for slot := 0; slot < sd.MaxLinks; slot++ {
		e := Entry{Key: map[string]int64{sd.KeyDstFA: int64(dst), sd.KeySlot: int64(slot)}, Action: sd.ActionDrop}
		if len(links) > 0 {
			e.Action, e.Data = sd.ActionToLink, map[string]int64{sd.ParamLink: int64(links[slot%len(links)])}
		}
		if err := s.AddEntry(ctx, sd.TableSpray, e); err != nil {
			return err
		}
	}
	return nil
}

// HealSpray is the control plane's half of self-healing (§5.9; on Tofino
// the program ages links and the control plane acts, p4/stardust's
// README): it reads the fabric ports, and rewrites the spraying slots of
// every destination in dsts to the links that are valid among those it
// sprays over now, keeping their order; a destination whose links are
// all gone keeps them (nothing better to send on). It returns the links
// it took out.
func (s *Switch) HealSpray(ctx context.Context, ports []int, th int, dsts []int) ([]int, error) {
	links, err := s.FabricLinks(ctx, ports, th)
	if err != nil {
		return nil, err
	}
	valid := map[int]bool{}
	var out []int
	for _, l := range links {
		valid[l.Port] = l.Valid
		if !l.Valid {
			out = append(out, l.Port)
		}
	}
	reach, err := s.Reachability(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range dsts {
		var keep []int
		for _, p := range reach[d] {
			if v, known := valid[p]; !known || v {
				keep = append(keep, p)
			}
		}
		if len(keep) == len(reach[d]) || len(keep) == 0 {
			continue
		}
		if err := s.SetSpray(ctx, d, keep); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// VOQCredits reads the credit balance, in frames, of each VOQ (FA
// program: RegCredit, §3.3).
func (s *Switch) VOQCredits(ctx context.Context, voqs []int) ([]int64, error) {
	return s.readEach(ctx, sd.RegCredit, voqs, sd.MaxVOQs)
}

// FCICounts reads, per host port, the FCI-marked cells counted and not
// yet spent cancelling credits (FA program: RegFCI, §4.2).
func (s *Switch) FCICounts(ctx context.Context, ports []int) ([]int64, error) {
	return s.readEach(ctx, sd.RegFCI, ports, 512)
}

func (s *Switch) readEach(ctx context.Context, reg string, idx []int, size int) ([]int64, error) {
	out := make([]int64, len(idx))
	for i, x := range idx {
		if x < 0 || x >= size {
			return nil, fmt.Errorf("register %s: index %d outside 0..%d", reg, x, size-1)
		}
		v, err := s.ReadRegister(ctx, reg, x)
		if err != nil {
			return nil, err
		}
		// The program's state lives in the pipe of its ports; the others
		// read 0, so the sum is that pipe's value.
		for _, p := range v {
			out[i] += p
		}
	}
	return out, nil
}
