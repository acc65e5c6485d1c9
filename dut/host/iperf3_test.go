package host

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// The command line is iperf3(1)'s, and what iperf3 would refuse is refused
// before a host is asked.
func TestIperf3FlowCommand(t *testing.T) {
	f := Iperf3Flow{Dst: netip.MustParseAddr("10.0.0.2"), Seconds: 2, Interval: 250 * time.Millisecond, CC: "dctcp"}
	if got, want := f.Command(), "iperf3 -c 10.0.0.2 -t 2 -i 0.25 -C dctcp -J --get-server-output"; got != want {
		t.Errorf("command %q, want %q", got, want)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
	f = Iperf3Flow{Dst: netip.MustParseAddr("10.0.0.2"), Bytes: 100 << 20, Interval: 100 * time.Millisecond, CC: "cubic"}
	if got, want := f.Command(), "iperf3 -c 10.0.0.2 -n 104857600 -i 0.1 -C cubic -J --get-server-output"; got != want {
		t.Errorf("command %q, want %q", got, want)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
	for _, bad := range []Iperf3Flow{{Seconds: 0, Interval: time.Second}, {Seconds: 1, Interval: 50 * time.Millisecond},
		{Seconds: 1, Bytes: 1 << 20, Interval: time.Second}, {Bytes: -1, Interval: time.Second}} {
		if bad.Check() == nil {
			t.Errorf("%+v passed", bad)
		}
	}
}

// -J output: intervals, the sender's totals and the server's intervals are
// read; an "error" iperf3 reports is an error.
func TestParseIperf3JSON(t *testing.T) {
	out := `{"start":{},"intervals":[{"streams":[],"sum":{"start":0,"end":0.5,"seconds":0.5,"bytes":1000,"bits_per_second":16000,"retransmits":3}}],
"end":{"sum_sent":{"bytes":1000,"retransmits":3},"sum_received":{"bytes":900}},
"server_output_json":{"intervals":[{"sum":{"start":0,"end":0.5,"bytes":900}}]}}`
	r, err := ParseIperf3JSON(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Intervals) != 1 || r.Intervals[0].Sum.Retransmits != 3 || r.End.SumSent.Bytes != 1000 || len(r.ServerIntervals()) != 1 || r.ServerIntervals()[0].Sum.Bytes != 900 {
		t.Errorf("report %+v", r)
	}
	if _, err := ParseIperf3JSON(`{"error":"unable to connect to server: Connection refused"}`); err == nil || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("error report: %v", err)
	}
	if _, err := ParseIperf3JSON("iperf3: error"); err == nil {
		t.Error("text output parsed as JSON")
	}
}
