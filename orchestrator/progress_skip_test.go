package orchestrator

import (
	"fmt"
	"strings"
	"testing"

	"testbed/results"
)

// Steps skipped for one reason print as one line per run of them (one per
// link when a link goes dark), and a step that measures several points
// numbers them.
func TestProgressGroupsSkipsAndNumbersRefinement(t *testing.T) {
	var out syncBuffer
	p := NewProgressDisplay(&out, false)
	skip := func(i int, link string, db float64) {
		s, _ := stepEvents(i, 8, fmt.Sprintf("%s @ %.1f dB", link, db))
		p.Observe(s)
		p.Observe(results.Event{Type: "step.skip", Step: s.Step, Message: link + " went dark", Fields: map[string]any{"index": i, "of": 8}})
	}
	skip(1, "l10g", 12)
	skip(2, "l10g", 13)
	skip(3, "l10g", 14)
	skip(4, "l25g", 9)
	s, e := stepEvents(5, 8, "l25g refine")
	p.Observe(s)
	for _, db := range []string{"8.1", "8.2", "8.3"} {
		p.Observe(results.Event{Type: "measurement", Message: "l25g " + db + " dB: loss 0"})
	}
	p.Observe(e)
	skip(6, "l50g", 7)
	skip(7, "l50g", 8)
	p.Close()
	got := out.String()
	for _, want := range []string{
		"[   1-3/8] 3 steps skipped (l10g @ 12.0 dB .. l10g @ 14.0 dB): l10g went dark\n",
		"[   4/8] l25g @ 9.0 dB: skipped: l25g went dark\n",
		"[   5/8] l25g 8.1 dB: loss 0\n",
		"[   5/8 #2] l25g 8.2 dB: loss 0\n",
		"[   5/8 #3] l25g 8.3 dB: loss 0\n",
		"[   6-7/8] 2 steps skipped (l50g @ 7.0 dB .. l50g @ 8.0 dB): l50g went dark\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "skipped"); n != 3 {
		t.Errorf("%d skip lines, want one per link (3):\n%s", n, got)
	}
}
