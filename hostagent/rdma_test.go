package hostagent

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"testing"
)

func f(v float64) *float64 { return &v }

func TestParseLatTableSamples(t *testing.T) {
	cases := []struct {
		file string
		rows []LatRow
	}{
		{"current_client_mlx4.txt", []LatRow{{Bytes: 2, Iterations: 1000, TMinUS: f(0.87), TMaxUS: f(4.70), TTypicalUS: f(0.89),
			TAvgUS: f(0.90), TStdevUS: f(0.08), P99US: f(0.95), P999US: f(4.70)}}},
		{"rxe_server.txt", []LatRow{{Bytes: 64, Iterations: 5, TMinUS: f(185.81), TMaxUS: f(219.13), TTypicalUS: f(193.75),
			TAvgUS: f(193.75), TStdevUS: f(7.00), P99US: f(219.13), P999US: f(219.13)}}},
		{"old_three_columns.txt", []LatRow{{Bytes: 2, Iterations: 1000, TMinUS: f(1.23), TMaxUS: f(20.35), TTypicalUS: f(1.27)}}},
		{"duration_mode.txt", []LatRow{{Bytes: 2, Iterations: 1289984, TAvgUS: f(3.88), TPSAvg: f(128993.46)}}},
		{"all_sizes_cpu_warnings.txt", []LatRow{
			{Bytes: 2, Iterations: 1000, TMinUS: f(1.79), TMaxUS: f(5.41), TTypicalUS: f(1.87), TAvgUS: f(1.88), TStdevUS: f(0.18), P99US: f(2.03), P999US: f(5.41)},
			{Bytes: 4, Iterations: 1000, TMinUS: f(1.77), TMaxUS: f(5.14), TTypicalUS: f(1.85), TAvgUS: f(1.86), TStdevUS: f(0.14), P99US: f(2.01), P999US: f(5.14)},
			{Bytes: 8, Iterations: 1000, TMinUS: f(1.77), TMaxUS: f(4.72), TTypicalUS: f(1.88), TAvgUS: f(1.88), TStdevUS: f(0.13), P99US: f(2.01), P999US: f(4.72)},
			{Bytes: 8388608, Iterations: 1000, TMinUS: f(345.23), TMaxUS: f(447.02), TTypicalUS: f(345.55), TAvgUS: f(348.34), TStdevUS: f(15.93), P99US: f(441.71), P999US: f(447.02)},
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			out, err := os.ReadFile("testdata/perftest/" + c.file)
			if err != nil {
				t.Fatal(err)
			}
			res, err := ParseLatTable(out)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Rows, c.rows) {
				t.Errorf("rows:\n got %s\nwant %s", rowsString(res.Rows), rowsString(c.rows))
			}
		})
	}
}

func rowsString(rows []LatRow) string {
	b, _ := json.Marshal(rows)
	return string(b)
}

func TestParseLatTableErrors(t *testing.T) {
	fail, err := os.ReadFile("testdata/perftest/failed_no_gid.txt")
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		"failed run":       string(fail),
		"empty":            "",
		"header, no rows":  " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n----\n",
		"unknown column":   " #bytes #iterations    t_min[usec]    t_median[usec]\n 2 1000 1.0 2.0\n",
		"short row":        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n 2 1000 1.0 2.0\n",
		"not a number":     " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n 2 1000 1.0 x 2.0\n",
		"bandwidth header": " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n 2 1000 1 1 1\n",
	}
	for name, in := range bad {
		if res, err := ParseLatTable([]byte(in)); err == nil {
			t.Errorf("%s: no error, got %+v", name, res)
		}
	}
}

func TestWriteLatArgs(t *testing.T) {
	gid := 3
	req, err := WriteLatRequest{Role: RoleClient, Server: "10.0.1.2", Iterations: 300000, Device: "mlx5_0", IBPort: 1, GIDIndex: &gid, TCPPort: 18515, ExtraArgs: []string{"-F"}}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-s", "143", "-n", "300000", "-d", "mlx5_0", "-i", "1", "-x", "3", "-p", "18515", "-F", "10.0.1.2"}
	if got := req.Args(); !slices.Equal(got, want) {
		t.Errorf("args: got %q, want %q", got, want)
	}
	srv, err := WriteLatRequest{Role: RoleServer}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := srv.Args(), []string{"-s", "143", "-n", "1000"}; !slices.Equal(got, want) {
		t.Errorf("server args: got %q, want %q", got, want)
	}
	for name, r := range map[string]WriteLatRequest{
		"no role":            {},
		"client no server":   {Role: RoleClient},
		"server with server": {Role: RoleServer, Server: "x"},
		"flag as server":     {Role: RoleClient, Server: "-a"},
		"iterations":         {Role: RoleServer, Iterations: 2},
		"size":               {Role: RoleServer, Size: -1},
		"device":             {Role: RoleServer, Device: "--all"},
	} {
		if _, err := r.Normalize(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// -U prints every sample before the table; they come back in order, and
// the table is read as without them.
func TestParseLatTableUnsorted(t *testing.T) {
	out, err := os.ReadFile("testdata/perftest/unsorted_client.txt")
	if err != nil {
		t.Fatal(err)
	}
	res, err := ParseLatTable(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.935, 0.895, 0.89, 0.9, 4.7, 0.885, 0.87, 0.895, 0.9}
	if !slices.Equal(res.SamplesUS, want) {
		t.Errorf("samples %v, want %v", res.SamplesUS, want)
	}
	if len(res.Rows) != 1 || res.Rows[0].Iterations != 10 || *res.Rows[0].TMaxUS != 0.935 {
		t.Errorf("rows %s", rowsString(res.Rows))
	}
	plain, err := os.ReadFile("testdata/perftest/current_client_mlx4.txt")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := ParseLatTable(plain); err != nil || res.SamplesUS != nil {
		t.Errorf("without -U: samples %v, err %v", res.SamplesUS, err)
	}
	table := " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n 2 1000 1.0 2.0 1.5\n"
	for name, in := range map[string]string{
		"skipped":      "#, usec\n1, 1.0\n3, 1.0\n" + table,
		"not a number": "#, usec\n1, x\n" + table,
		"empty":        "#, usec\n" + table,
		"twice":        "#, usec\n1, 1.0\n#, usec\n1, 1.0\n" + table,
	} {
		if res, err := ParseLatTable([]byte(in)); err == nil {
			t.Errorf("%s: no error, got %+v", name, res)
		}
	}
	req, err := WriteLatRequest{Role: RoleClient, Server: "10.0.1.2", Unsorted: true}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	if got := req.Args(); !slices.Contains(got, "-U") {
		t.Errorf("args %q: no -U", got)
	}
	if _, err := (WriteLatRequest{Role: RoleServer, Unsorted: true, Iterations: maxUnsortedIterations + 1}).Normalize(); err == nil {
		t.Error("unsorted with more iterations than the agent keeps: accepted")
	}
}
