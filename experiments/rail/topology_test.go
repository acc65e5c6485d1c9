package rail_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"testbed/experiments/rail"
	"testbed/experiments/recipetest"
	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/results"
)

const example = "examples/rail-clos-lab.csv"

// runOffline runs rail-topology through the engine on a lab with no
// device at all: the recipe must need none.
func runOffline(t *testing.T, inv *inventory.Inventory, sets ...string) (*orchestrator.RunResult, rail.Summary) {
	t.Helper()
	r := rail.NewTopology()
	params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, sets)
	if err != nil {
		t.Fatal(err)
	}
	if inv == nil {
		inv = &inventory.Inventory{Name: "no-lab", Path: "(none)"}
	}
	dir := t.TempDir()
	eng := &orchestrator.Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state")}
	res, err := eng.Run(context.Background(), orchestrator.RunRequest{Recipe: r, Params: params, Lab: inv})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != results.StatusOK {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	if rep, err := results.Verify(res.Dir); err != nil || !rep.OK {
		t.Fatalf("bundle does not verify: %v %+v", err, rep)
	}
	var s rail.Summary
	b, err := os.ReadFile(filepath.Join(res.Dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return res, s
}

func TestTopologyOfTheExampleLab(t *testing.T) {
	res, s := runOffline(t, nil, "links_file="+example)
	if s.Partial || s.ToRs != 4 || s.Aggs != 4 || s.Cores != 2 || s.Links != 12 || s.Pairs != 12 || s.Paths != 24 {
		t.Fatalf("summary %+v", s)
	}
	if s.Algorithm1Agrees == nil || !*s.Algorithm1Agrees {
		t.Fatal("Algorithm 1 and the enumeration disagree")
	}
	// Class 3 (10%) keeps everything; class 2 (0.1%) drops the 4% and the
	// 0.3% link; class 1 (1e-6) also the 2e-5 one.
	excluded := map[string][]string{}
	for _, row := range recipetest.ReadTable(t, res.Dir, "class_links") {
		if row["kept"] == "false" {
			excluded[row["class"]] = append(excluded[row["class"]], row["link"])
		}
	}
	want := map[string]string{"1": "t2-a1 t3-a3 a3-c1", "2": "t2-a1 t3-a3", "3": ""}
	for c, w := range want {
		if got := strings.Join(excluded[c], " "); got != w {
			t.Errorf("class %s excludes %q, want %q", c, got, w)
		}
		cs := s.Classes[c]
		if cs.WorstPPER == nil || *cs.WorstPPER > cs.Bound || cs.PairsConnected != 12 {
			t.Errorf("class %s: %+v", c, cs)
		}
	}
	// Class 3's paths through the 0.3% link get RAIL's n = 14; those from
	// the 4% transmitter are replicated three times.
	c3 := s.Classes["3"]
	if c3.MinParityN == nil || *c3.MinParityN != 14 || c3.PathsReplicate != 3 {
		t.Errorf("class 3 coding: %+v", c3)
	}
	// The exports: the controller's document and the switches' filters.
	var doc rail.ClassesDoc
	b, err := os.ReadFile(filepath.Join(res.Dir, "data", "rail", "classes.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Classes) != 3 || len(doc.Classes[0].Excluded) != 3 || doc.Classes[0].Prefix != "10.1.0.0/16" {
		t.Errorf("classes.json: %+v", doc.Classes)
	}
	frr, err := os.ReadFile(filepath.Join(res.Dir, "data", "rail", "frr", "a1.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"ip prefix-list RAIL-CLASS-2 seq 5 permit 10.2.0.0/16 le 32", "route-map RAIL-OUT-swp2 deny 20\n match ip address prefix-list RAIL-CLASS-2",
		"neighbor swp2 route-map RAIL-OUT-swp2 out"} {
		if !strings.Contains(string(frr), w) {
			t.Errorf("a1.conf lacks %q:\n%s", w, frr)
		}
	}
	if strings.Contains(string(frr), "RAIL-OUT-swp1") {
		t.Errorf("a1.conf filters swp1 (t1-a1, a clean link):\n%s", frr)
	}
	// The links table is itself a valid links_file giving the same result.
	var m results.Manifest
	mb, _ := os.ReadFile(filepath.Join(res.Dir, "manifest.json"))
	json.Unmarshal(mb, &m)
	if len(m.Devices) != 0 {
		t.Errorf("the run opened devices: %+v", m.Devices)
	}
	_, again := runOffline(t, nil, "links_file="+filepath.Join(res.Dir, "data", "links.csv"))
	for c := range want {
		if *again.Classes[c].WorstPPER != *s.Classes[c].WorstPPER {
			t.Errorf("class %s from data/links.csv: worst %g, from the example %g", c, *again.Classes[c].WorstPPER, *s.Classes[c].WorstPPER)
		}
	}
}

func TestTopologyTakesEndsAndRolesFromTheInventory(t *testing.T) {
	dir := t.TempDir()
	inv, err := inventory.Parse(filepath.Join(dir, "lab.yaml"), []byte(`version: 1
name: rail-test
devices:
  t1: {kind: switch, driver: tofino-bfrt, address: "ssh://admin@127.0.0.1:1", options: {role: tor}, ports: {up: "1"}}
  t2: {kind: switch, driver: tofino-bfrt, address: "ssh://admin@127.0.0.1:2", options: {role: tor}, ports: {up: "1"}}
  a1: {kind: switch, driver: tofino-bfrt, address: "ssh://admin@127.0.0.1:3", options: {role: agg}, ports: {d1: "1", d2: "2"}}
links:
  - {name: t1-a1, a: {device: t1, port: up}, b: {device: a1, port: d1}, transceiver: 10GBASE-SR}
  - {name: t2-a1, a: {device: t2, port: up}, b: {device: a1, port: d2}, transceiver: 10GBASE-SR}
`))
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "links.csv")
	os.WriteFile(f, []byte("link,lper_ab\nt1-a1,0\nt2-a1,0.01\n"), 0o644)
	res, s := runOffline(t, inv, "links_file="+f)
	if s.ToRs != 2 || s.Classes["2"].LinksExcluded != 1 || s.Classes["3"].LinksExcluded != 0 {
		t.Fatalf("summary %+v", s)
	}
	rows := recipetest.ReadTable(t, res.Dir, "links")
	if rows[1]["a"] != "t2" || rows[1]["b_port"] != "d2" || rows[1]["b_role"] != "agg" {
		t.Errorf("link row from the inventory: %v", rows[1])
	}
}

func TestTopologyRefusesBadInputBeforeRunning(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("a,a_role,b,b_role,lper_ab\nt1,tor,a1,agg,0\nt2,tor,a1,agg,much\n"), 0o644)
	noRoles := filepath.Join(dir, "noroles.csv")
	os.WriteFile(noRoles, []byte("a,b,lper_ab\nt1,a1,0\n"), 0o644)
	r := rail.NewTopology()
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"links_file=" + filepath.Join(dir, "missing.csv")}, "missing.csv"},
		{[]string{"links_file=" + bad}, "bad.csv:3: column lper_ab"},
		{[]string{"links_file=" + noRoles}, "switch t1 has no role"},
		{[]string{"links_file=" + example, "class_bounds=1e-3,1e-6"}, "bounds must increase"},
		{[]string{"links_file=" + example, "class_prefixes=10.1.0.0/16"}, "1 blocks for 3 classes"},
		{[]string{"links_file=" + example, "max_paths=20"}, "24 ToR-pair paths, more than max_paths 20"},
		{[]string{"links_file=" + example, "class_prefixes=10.1.0.1/16,10.2.0.0/16,10.3.0.0/16"}, "host bits"},
	} {
		params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, c.sets)
		if err != nil {
			t.Fatal(err)
		}
		eng := &orchestrator.Engine{RunsDir: filepath.Join(dir, "runs"), StateDir: filepath.Join(dir, "state")}
		_, err = eng.Plan(orchestrator.RunRequest{Recipe: r, Params: params, Lab: &inventory.Inventory{Name: "x"}})
		var ie *orchestrator.InputError
		if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want an input error with %q", c.sets, err, c.want)
		}
	}
}

// With no links_file, rail-topology reads the newest ok link-qualify
// bundle's table under the runs directory, else the built-in example, and
// its binding says which and why.
func TestTopologyWithoutALinksFile(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	r := rail.NewTopology()
	params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	plan := func() orchestrator.Binding {
		t.Helper()
		eng := &orchestrator.Engine{RunsDir: runs, StateDir: filepath.Join(dir, "state")}
		p, err := eng.Plan(orchestrator.RunRequest{Recipe: r, Params: params, Lab: &inventory.Inventory{Name: "x"}})
		if err != nil {
			t.Fatal(err)
		}
		return p.Bindings[0]
	}
	if b := plan(); !strings.HasSuffix(b.Resource, "rail-clos-lab.csv (built in)") || !strings.Contains(b.Detail, "the example table") {
		t.Errorf("no runs: bound %+v", b)
	}
	ex, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	bundle := func(id, recipe, status string, table []byte) string {
		d := filepath.Join(runs, id)
		os.MkdirAll(filepath.Join(d, "data"), 0o755)
		os.WriteFile(filepath.Join(d, "manifest.json"), []byte(`{"run_id":"`+id+`","recipe":{"name":"`+recipe+`"},"status":"`+status+`"}`), 0o644)
		os.WriteFile(filepath.Join(d, "data", "links.csv"), table, 0o644)
		return filepath.Join(d, "data", "links.csv")
	}
	older := bundle("20260101T000000.000Z-link-qualify-aaaaaa", rail.QualifyName, "ok", ex)
	bundle("20260102T000000.000Z-link-qualify-bbbbbb", rail.QualifyName, "failed", ex)
	bundle("20260103T000000.000Z-fct-cccccc", "fct", "ok", ex)
	if b := plan(); b.Resource != older || !strings.Contains(b.Detail, "newest link-qualify bundle") {
		t.Errorf("one ok link-qualify bundle: bound %+v", b)
	}
	// A newer table with one ToR cannot serve: said, and the next source used.
	bundle("20260104T000000.000Z-link-qualify-dddddd", rail.QualifyName, "ok", []byte("a,a_role,b,b_role,lper_ab\nt1,tor,a1,agg,0\n"))
	if b := plan(); !strings.HasSuffix(b.Resource, "(built in)") || !strings.Contains(b.Detail, "not used: "+runs) || !strings.Contains(b.Detail, "1 ToR switches") {
		t.Errorf("a one-ToR table: bound %+v", b)
	}
}
