package tofino_test

import (
	"context"
	"reflect"
	"testing"

	sd "testbed/p4/stardust"
)

// The in-order release's sequence numbers through the driver, on a
// simulated FA: read in one request per register.
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
	in, err := sd.New(fa).SequenceIn(ctx, 4)
	if err != nil || !reflect.DeepEqual(in, []uint32{0, 0, 7, 0}) {
		t.Fatalf("sequence in %v %v, want [0 0 7 0]", in, err)
	}
	out, err := sd.New(fa).SequenceOut(ctx, 4)
	if err != nil || !reflect.DeepEqual(out, []uint32{0, 0, 0, 41}) {
		t.Fatalf("sequence out %v %v, want [0 0 0 41]", out, err)
	}
	// The sequence numbers are 32 bits.
	if err := fa.WriteRegister(ctx, sd.RegSeqIn, 1, 1<<32-1); err != nil {
		t.Fatal(err)
	}
	if in, _ := sd.New(fa).SequenceIn(ctx, 4); in[1] != 1<<32-1 {
		t.Errorf("the FA expects %d from FA 1, want 2^32-1", in[1])
	}
	if _, err := sd.New(fa).SequenceIn(ctx, 0); err == nil {
		t.Error("sequence numbers of no FA")
	}
	if _, err := sd.New(fa).SequenceOut(ctx, sd.MaxFAs+1); err == nil {
		t.Error("sequence numbers of 257 FAs")
	}
}
