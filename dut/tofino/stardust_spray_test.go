package tofino_test

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"testbed/dut/tofino"
	sd "testbed/p4/stardust"
)

// lockedText is a transcript's writer the test reads while the driver's
// connection may still write to it.
type lockedText struct {
	mu sync.Mutex
	sb strings.Builder
}

func (l *lockedText) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sb.Write(p)
}

// String is what has been written so far.
func (l *lockedText) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sb.String()
}

// ops counts the agent requests by op written since the last call.
func (l *lockedText) ops() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, m := range regexp.MustCompile(`> \{"id":\d+,"op":"([a-z._]+)"`).FindAllStringSubmatch(l.sb.String(), -1) {
		out[m[1]]++
	}
	l.sb.Reset()
	return out
}

// SetSpray over the agent protocol against a simulated switch running
// stardust_fa: it reads only its destination's entries (table.get with a
// key), adds the slots the destination has none for, and then changes in
// place (table.mod) only the slots whose link or action differs; the
// table holds what the links say, slot by slot, whatever was there.
func TestSetSprayChangesOnlyTheSlotsThatDiffer(t *testing.T) {
	lab := startLab(t)
	ctx := context.Background()
	var text lockedText
	fa := openWith(t, lab, "sw1", 20*time.Second, &text)
	if _, err := fa.BuildProgram(ctx, sd.ProgramFA, sd.MainFile(sd.ProgramFA), sd.Sources()); err != nil {
		t.Fatal(err)
	}
	if err := fa.StartSwitchd(ctx, sd.ProgramFA); err != nil {
		t.Fatal(err)
	}
	// slots reads destination dst's slots back: the link of each, -1 for
	// a drop.
	slots := func(dst int) []int {
		t.Helper()
		es, err := fa.EntriesWhere(ctx, sd.TableSpray, map[string]int64{sd.KeyDstFA: int64(dst)})
		if err != nil {
			t.Fatal(err)
		}
		out := make([]int, sd.MaxLinks)
		seen := map[int64]bool{}
		for _, e := range es {
			if e.Key[sd.KeyDstFA] != int64(dst) || seen[e.Key[sd.KeySlot]] {
				t.Fatalf("FA %d's read holds %v", dst, e.Key)
			}
			seen[e.Key[sd.KeySlot]] = true
			out[e.Key[sd.KeySlot]] = -1
			if e.Action == sd.ActionToLink {
				out[e.Key[sd.KeySlot]] = int(e.Data[sd.ParamLink])
			}
		}
		if len(seen) != sd.MaxLinks {
			t.Fatalf("FA %d has %d slots, want %d", dst, len(seen), sd.MaxLinks)
		}
		return out
	}
	want := func(links []int) []int {
		out := make([]int, sd.MaxLinks)
		for i := range out {
			out[i] = -1
			if len(links) > 0 {
				out[i] = links[i%len(links)]
			}
		}
		return out
	}
	check := func(what string, dst int, links []int, ops map[string]int) {
		t.Helper()
		text.ops()
		if err := sd.New(fa).SetSpray(ctx, dst, links); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := text.ops(); !equalCounts(got, ops) {
			t.Errorf("%s: requests %v, want %v", what, got, ops)
		}
		if got, w := slots(dst), want(links); !equalInts(got, w) {
			t.Errorf("%s: slots %v, want %v", what, got, w)
		}
	}
	all := []int{10, 11, 12, 13}
	check("first write", 3, all, map[string]int{"table.get": 1, "table.add": sd.MaxLinks})
	check("another destination", 4, []int{13, 12}, map[string]int{"table.get": 1, "table.add": sd.MaxLinks})
	// One of four links out: the slots whose link moves, 48 of 64 here
	// (slot i held all[i%4] and now holds keep[i%3]).
	keep := []int{10, 12, 13}
	changed := 0
	for i := 0; i < sd.MaxLinks; i++ {
		if all[i%4] != keep[i%3] {
			changed++
		}
	}
	check("heal", 3, keep, map[string]int{"table.get": 1, "table.mod": changed})
	check("unchanged", 3, keep, map[string]int{"table.get": 1})
	check("unreachable", 3, nil, map[string]int{"table.get": 1, "table.mod": sd.MaxLinks})
	check("back", 3, all, map[string]int{"table.get": 1, "table.mod": sd.MaxLinks})
	if got, w := slots(4), want([]int{13, 12}); !equalInts(got, w) {
		t.Errorf("FA 4, another destination's, changed: %v, want %v", got, w)
	}
	// A destination with some slots only: the missing ones are added.
	if err := fa.DeleteEntry(ctx, sd.TableSpray, map[string]int64{sd.KeyDstFA: 4, sd.KeySlot: 5}); err != nil {
		t.Fatal(err)
	}
	check("a slot missing", 4, []int{13, 12}, map[string]int{"table.get": 1, "table.add": 1})

	// table.mod's errors: a key with no entry, an action the table does
	// not have.
	err := fa.ModifyEntry(ctx, sd.TableSpray, tofino.Entry{Key: map[string]int64{sd.KeyDstFA: 9, sd.KeySlot: 0}, Action: sd.ActionDrop})
	if !tofino.IsNotFound(err) {
		t.Errorf("modify of a missing entry: %v, want not_found", err)
	}
	err = fa.ModifyEntry(ctx, sd.TableSpray, tofino.Entry{Key: map[string]int64{sd.KeyDstFA: 3, sd.KeySlot: 0}, Action: "to_nowhere"})
	if !tofino.IsNotFound(err) {
		t.Errorf("modify with an unknown action: %v, want not_found", err)
	}
	if _, err := fa.EntriesWhere(ctx, sd.TableSpray, nil); err == nil {
		t.Error("a keyed read with no key field accepted")
	}
	if es, err := fa.EntriesWhere(ctx, sd.TableSpray, map[string]int64{sd.KeyDstFA: 9}); err != nil || len(es) != 0 {
		t.Errorf("FA 9's entries: %v %v, want none", es, err)
	}
	if es, err := fa.Entries(ctx, sd.TableSpray); err != nil || len(es) != 2*sd.MaxLinks {
		t.Errorf("the whole table: %d entries (%v), want %d", len(es), err, 2*sd.MaxLinks)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
