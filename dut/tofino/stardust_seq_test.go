package tofino

import (
	"context"
	"testing"

	sd "testbed/p4/stardust"
)

// The in-order counters are 32 bits: a difference across the wrap is
// still the frames released, and a source outside the register is refused
// before anything is asked of the switch.
func TestSeqDeltaAcrossTheWrap(t *testing.T) {
	if d := SeqDelta(0xffff_fff0, 0x10); d != 0x20 {
		t.Errorf("SeqDelta across the wrap: %d, want 32", d)
	}
	if d := SeqDelta(7, 7); d != 0 {
		t.Errorf("SeqDelta(7, 7) = %d", d)
	}
	if _, err := (&Switch{}).InOrderReleased(context.Background(), []int{1, sd.MaxFAs}); err == nil {
		t.Error("a source FA beyond the register was accepted")
	}
}
