package results

import "testing"

func TestFlattenSummary(t *testing.T) {
	ms, err := FlattenSummary([]byte(`{"links":{"l10g":{"fec":"none","loss_cliff_db":{"1e-06":9.3,"1e-08":null}}},"points":[{"loss":1e-7},{"loss":2}],"ok":true}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Metric{
		{"links.l10g.fec", "none"},
		{"links.l10g.loss_cliff_db.1e-06", 9.3},
		{"links.l10g.loss_cliff_db.1e-08", nil},
		{"ok", true},
		{"points.0.loss", 1e-7},
		{"points.1.loss", 2.0},
	}
	if len(ms) != len(want) {
		t.Fatalf("got %v", ms)
	}
	for i := range want {
		if ms[i] != want[i] {
			t.Errorf("%d: got %+v, want %+v", i, ms[i], want[i])
		}
	}
	if !ms[1].IsNumber() || ms[0].IsNumber() {
		t.Error("IsNumber wrong")
	}
	if _, err := FlattenSummary([]byte(`{`)); err == nil {
		t.Error("broken JSON accepted")
	}
}
