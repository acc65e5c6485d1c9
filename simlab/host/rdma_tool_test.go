package host

import (
	"strings"
	"testing"

	"testbed/hostagent"
)

// The report is perftest's: the agent's parser (which reads the real
// tool's output) reads it, with the statistics print_report_lat computes.
func TestPerftestLatReport(t *testing.T) {
	// 11 iterations: 10 round trips, 2 to 20 us; halved: 1 ... 10 us.
	var rtts []float64
	for i := 10; i >= 1; i-- {
		rtts = append(rtts, float64(2*i))
	}
	out := perftestLatReport(143, 11, rtts)
	if !strings.Contains(out, "99.9% percentile[usec]") || strings.Count(out, perftestResultLine) != 2 {
		t.Fatalf("not perftest's table:\n%s", out)
	}
	res, err := hostagent.ParseLatTable([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Rows[0]
	// 10 deltas, the 2 largest out of the count: n = 8 over 1..8 (plus 9,
	// 10 beyond). Median of 8 (get_median: (n-1)%2 != 0): (4+5)/2; t_max
	// at index 8: 9; average 4.5; 99% at ceil(7.92) = 8: 9.
	if r.Bytes != 143 || r.Iterations != 11 || *r.TMinUS != 1 || *r.TMaxUS != 9 || *r.TTypicalUS != 4.5 || *r.TAvgUS != 4.5 || *r.P99US != 9 || *r.P999US != 9 {
		t.Fatalf("row %+v: min %v max %v typical %v avg %v p99 %v p99.9 %v", r, *r.TMinUS, *r.TMaxUS, *r.TTypicalUS, *r.TAvgUS, *r.P99US, *r.P999US)
	}
}

func TestWriteLatArgs(t *testing.T) {
	a, err := parseWriteLatArgs(hostagent.WriteLatRequest{Role: hostagent.RoleClient, Server: "10.0.0.2", Size: 143, Iterations: 1000, TCPPort: 18516}.Args())
	if err != nil || a.size != 143 || a.iters != 1000 || a.port != 18516 || a.server != "10.0.0.2" {
		t.Fatalf("%+v %v", a, err)
	}
	for _, bad := range [][]string{{"-s"}, {"-s", "x"}, {"--frobnicate", "1"}, {"-n", "2"}, {"a", "b"}} {
		if _, err := parseWriteLatArgs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
