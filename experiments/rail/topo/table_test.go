package topo_test

import (
	"bytes"
	"strings"
	"testing"

	"testbed/experiments/rail/topo"
)

const csvTable = `# two ToRs under one aggregation switch
link,a,a_role,b,b_role,lper_ab,frames_ba,lost_ba
t1-a1,t1,tor,a1,agg,1e-9,,
t2-a1,t2,tor,a1,agg,2e-4,1000000,3
`

func TestReadCSVTable(t *testing.T) {
	tab, err := topo.ReadTable("links.csv", strings.NewReader(csvTable))
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Links) != 2 || tab.Roles["t2"] != topo.ToR || tab.Roles["a1"] != topo.Agg {
		t.Fatalf("table %+v", tab)
	}
	l0, l1 := tab.Links[0], tab.Links[1]
	if l0.BA != l0.AB || l0.AB.LPER != 1e-9 {
		t.Errorf("a row with one rate applies it both ways: %+v", l0)
	}
	if l1.BA.LPER != 3e-6 || !(l1.BA.Low < 3e-6 && l1.BA.High > 3e-6) || l1.BA.Frames != 1000000 {
		t.Errorf("frames and losses give the rate and its Wilson interval: %+v", l1.BA)
	}
	if l1.Source != "links.csv:4" {
		t.Errorf("source %q", l1.Source)
	}
	// What WriteCSV writes reads back the same.
	var buf bytes.Buffer
	if err := topo.WriteCSV(&buf, tab.Links, tab.Roles); err != nil {
		t.Fatal(err)
	}
	back, err := topo.ReadTable("out.csv", &buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tab.Links {
		if a, b := tab.Links[i], back.Links[i]; a.AB != b.AB || a.BA != b.BA || a.A != b.A || a.B != b.B {
			t.Errorf("row %d: %+v read back as %+v", i, a, b)
		}
	}
}

func TestReadTableErrorsNameFileLine(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"bad number", "a,b,lper_ab\nt1,a1,1e-9\nt2,a1,lots\n", "x:3: column lper_ab: \"lots\": expected a number in [0, 1]"},
		{"above one", "a,b,lper_ab\nt1,a1,1.5\n", "x:2: column lper_ab"},
		{"unknown column", "a,b,lper\n", "x:1: unknown column \"lper\""},
		{"no rate", "a,b,lper_ab\nt1,a1,\n", "x:2: expected lper_ab"},
		{"no ends", "a,b,lper_ab\n,a1,1e-9\n", "x:2: expected the ends a and b"},
		{"role conflict", "a,a_role,b,b_role,lper_ab\nt1,tor,a1,agg,0\nt1,agg,c1,core,0\n", "x:3: switch t1 is agg here but tor at x:2"},
		{"bad role", "a,a_role,b,lper_ab\nt1,leafish,a1,0\n", "x:2: switch t1: role \"leafish\": expected tor, agg or core"},
		{"lost above frames", "a,b,frames_ab,lost_ab\nt1,a1,10,11\n", "x:2: lost_ab 11 is more than frames_ab 10"},
		{"fields", "a,b,lper_ab\nt1,a1\n", "x:2: 2 fields, expected 3"},
		{"json key", "{\n \"links\": [\n  {\"a\": \"t1\", \"b\": \"a1\", \"lper_ab\": 0},\n  {\"a\": \"t2\", \"b\": \"a1\", \"lpr\": 0}\n ]\n}\n", "x:4: unknown key \"lpr\""},
		{"json value", "{\"links\": [\n{\"a\": \"t1\", \"b\": \"a1\", \"lper_ab\": 2}\n]}", "x:2: column lper_ab"},
		{"json syntax", "{\"links\": [\n{\"a\": \"t1\",, }\n]}", "x:2:"},
		{"json role", "{\"switches\": {\"t1\": \"torr\"},\n\"links\": [{\"a\": \"t1\", \"b\": \"a1\", \"lper_ab\": 0}]}", "x:1: switch t1: role \"torr\""},
	} {
		_, err := topo.ReadTable("x", strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func TestReadJSONTable(t *testing.T) {
	in := `{
  "switches": {"t1": "tor", "a1": "agg"},
  "links": [
    {"link": "t1-a1", "a": "t1", "b": "a1", "lper_ab": 1e-9, "lper_ba": 2e-9, "transceiver": "10GBASE-SR", "length_m": 420}
  ]
}`
	tab, err := topo.ReadTable("links.json", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	l := tab.Links[0]
	if l.AB.LPER != 1e-9 || l.BA.LPER != 2e-9 || *l.LengthM != 420 || l.Source != "links.json:4" || tab.Roles["a1"] != topo.Agg {
		t.Fatalf("%+v %+v", l, tab.Roles)
	}
}
