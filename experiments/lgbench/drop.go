package lgbench

import (
	"context"
	"fmt"

	"testbed/dut/p4switch"
	o "testbed/orchestrator"
	lg "testbed/p4/linkguardian"
)

// The sender program's loss emulation (p4/linkguardian/sender.p4, table
// emulate_random_pkt_drop): each packet toward the link draws a
// DropRandomBits-bit random number and is lost when the table holds it.
// The LinkGuardian artifact's evaluation mode fills it as
// drop_random_pkts(p) does (switch_impl/system_impl/receiver/
// devtest_cmds.py): floor(p * 2^20) entries, so every packet, whatever
// its size, is lost with exactly that many / 2^20.

// EmulatedLoss is the loss rate the table gives for a nominal rate p.
func EmulatedLoss(p float64) float64 {
	return float64(lg.DropTableEntries(p)) / float64(uint64(1)<<lg.DropRandomBits)
}

// EmulateDrop fills the sender's loss-emulation table for the rate p and
// returns the rate it gives. The table must be empty when first found
// (as the artifact refuses to add to one already configured); its
// clearing is journaled on the sender once per run.
func (b *Bench) EmulateDrop(ctx context.Context, p float64) (float64, error) {
	if err := b.PrepareDrop(ctx); err != nil {
		return 0, err
	}
	if err := b.ClearDrop(ctx); err != nil {
		return 0, err
	}
	n := lg.DropTableEntries(p)
	// Spread over the random numbers' range as drop_random_pkts does;
	// any n distinct values give the same rate.
	step := float64(uint64(1)<<lg.DropRandomBits) / float64(n+1)
	for i := range n {
		key := int64(float64(i+1) * step)
		if err := b.Tx.AddEntry(ctx, lg.TableEmulateDrop, p4switch.Entry{Key: map[string]int64{lg.KeyRandNum: key}, Action: lg.ActionDrop}); err != nil {
			return 0, fmt.Errorf("%s: %w", b.Sender, err)
		}
	}
	return EmulatedLoss(p), nil
}

// PrepareDrop checks, once per run, that the sender's loss-emulation
// table is empty, and journals its clearing.
func (b *Bench) PrepareDrop(ctx context.Context) error {
	if !b.rc.FirstTouch("lgbench/drop/" + b.Sender) {
		return nil
	}
	es, err := b.Tx.Entries(ctx, lg.TableEmulateDrop)
	if err != nil {
		return fmt.Errorf("%s: %w", b.Sender, err)
	}
	if len(es) > 0 {
		return fmt.Errorf("%s: %s already holds %d entries (another run's loss emulation?): clear it first", b.Sender, lg.TableEmulateDrop, len(es))
	}
	return b.rc.Journal(b.Sender, o.Undo{Kind: o.UndoTofinoTableClear, Desc: fmt.Sprintf("clear the loss emulation (%s) on %s", lg.TableEmulateDrop, b.Sender),
		Args: map[string]any{"table": lg.TableEmulateDrop}})
}

// ClearDrop empties the sender's loss-emulation table.
func (b *Bench) ClearDrop(ctx context.Context) error {
	if err := b.Tx.ClearTable(ctx, lg.TableEmulateDrop); err != nil {
		return fmt.Errorf("%s: %w", b.Sender, err)
	}
	return nil
}

// EmulatedDrops reads the sender's count of the packets its emulated drop
// took (lg.RegEmulatedDrops, summed over the pipes): the losses counted at
// the switch, as the artifact counted them. Read it before and after a
// block; the difference is the block's.
func (b *Bench) EmulatedDrops(ctx context.Context) (int64, error) {
	v, err := b.Tx.ReadRegister(ctx, lg.RegEmulatedDrops, 0)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", b.Sender, err)
	}
	if len(v) == 0 {
		return 0, fmt.Errorf("%s: register %s read no value", b.Sender, lg.RegEmulatedDrops)
	}
	var n int64
	for _, x := range v {
		n += x
	}
	return n, nil
}
