package tofino_test

import (
	"context"
	"reflect"
	"testing"

	sd "testbed/p4/stardust"
)

// The in-order release's sequence numbers through the driver, on a
// simulated FA: read in one request per register, and a frame given up
// only while the FA still expects it (the simulated switches release what
// waits behind it at the next move of the clock: simlab/tofino's
// TestStardust tests; the recipe that relies on it is stardust-failover on
// the bench).
func TestStardustSequencesThroughTheDriver(t *testing.T) {
	_, sws := startStardustBench(t, "fa1", "fe1")
	ctx := context.Background()
	fa := sws["fa1"]
	if err := fa.WriteRegister(ctx, sd.RegSeqIn, 2, 7); err != nil {
		t.Fatal(err)
	}
	if err := fa.WriteRegister(ctx, sd.RegSeqOut, 3, 41); err != nil {
		t.Fatal(err)
	}
	in, err := fa.SequenceIn(ctx, 4)
	if err != nil || !reflect.DeepEqual(in, []uint32{0, 0, 7, 0}) {
		t.Fatalf("sequence in %v %v, want [0 0 7 0]", in, err)
	}
	out, err := fa.SequenceOut(ctx, 4)
	if err != nil || !reflect.DeepEqual(out, []uint32{0, 0, 0, 41}) {
		t.Fatalf("sequence out %v %v, want [0 0 0 41]", out, err)
	}
	// Frame 6 is no longer expected (7 is): nothing is skipped.
	if ok, err := fa.SkipSequence(ctx, 2, 6); err != nil || ok {
		t.Errorf("skip of 6 while 7 is expected: %v %v", ok, err)
	}
	if ok, err := fa.SkipSequence(ctx, 2, 7); err != nil || !ok {
		t.Errorf("skip of 7: %v %v", ok, err)
	}
	if in, _ := fa.SequenceIn(ctx, 4); in[2] != 8 {
		t.Errorf("after giving up 7, the FA expects %d from FA 2, want 8", in[2])
	}
	// The sequence numbers are 32 bits: giving up the last wraps to 0.
	if err := fa.WriteRegister(ctx, sd.RegSeqIn, 1, 1<<32-1); err != nil {
		t.Fatal(err)
	}
	if ok, err := fa.SkipSequence(ctx, 1, 1<<32-1); err != nil || !ok {
		t.Errorf("skip of 2^32-1: %v %v", ok, err)
	}
	if in, _ := fa.SequenceIn(ctx, 4); in[1] != 0 {
		t.Errorf("after 2^32-1, the FA expects %d, want 0", in[1])
	}
	if _, err := fa.SequenceIn(ctx, 0); err == nil {
		t.Error("sequence numbers of no FA")
	}
	if _, err := fa.SkipSequence(ctx, sd.MaxFAs, 0); err == nil {
		t.Error("a skip for FA 256")
	}
}
