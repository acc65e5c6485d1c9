package p4switch

import (
	"context"
	"fmt"
	"slices"
)

// Helpers the programs' control planes (p4/*) share, written against the
// core.

// ReadEach reads the indices idx of register reg (size entries) in one
// range request, each summed over the pipes.
func ReadEach(ctx context.Context, c Core, reg string, idx []int, size int) ([]int64, error) {
	out := make([]int64, len(idx))
	if len(idx) == 0 {
		return out, nil
	}
	lo, hi := slices.Min(idx), slices.Max(idx)
	if lo < 0 || hi >= size {
		return nil, fmt.Errorf("register %s: index outside 0..%d in %v", reg, size-1, idx)
	}
	v, err := c.ReadRegisterRange(ctx, reg, lo, hi-lo+1)
	if err != nil {
		return nil, err
	}
	for i, x := range idx {
		out[i] = v[x-lo]
	}
	return out, nil
}

// SameAction reports whether two entries have the same action and data.
func SameAction(a, b Entry) bool {
	if a.Action != b.Action || len(a.Data) != len(b.Data) {
		return false
	}
	for k, v := range a.Data {
		if bv, ok := b.Data[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// ReplaceKeyless makes e the only entry of a keyless table.
func ReplaceKeyless(ctx context.Context, c Core, table string, e Entry) error {
	if err := c.DeleteEntry(ctx, table, map[string]int64{}); err != nil && !IsNotFound(err) {
		return err
	}
	e.Key = map[string]int64{}
	return c.AddEntry(ctx, table, e)
}
