package orchestrator

import "testing"

func TestMatchMetric(t *testing.T) {
	for _, c := range []struct {
		pat, path string
		want      bool
	}{
		{"links.*.loss_cliff_db.1e-06", "links.l25g.loss_cliff_db.1e-06", true},
		{"links.*.loss_cliff_db.1e-06", "links.l25g.loss_cliff_db.1e-03", false},
		{"links.*.loss_cliff_db.1e-06", "links.l25g.loss_cliff_db", false},
		{"mean_us", "mean_us", true},
		{"*", "a.b", false},
		{"fig10.*.*", "fig10.circuit.share95", true},
	} {
		if got := MatchMetric(c.pat, c.path); got != c.want {
			t.Errorf("MatchMetric(%q, %q) = %v", c.pat, c.path, got)
		}
	}
}
