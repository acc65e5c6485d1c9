package rail

import (
	_ "embed"
	"encoding/json"
	"os"
	"path/filepath"

	"testbed/internal/readfile"
	o "testbed/orchestrator"
)

// exampleTable is RAIL's lab (§7.3) as a link table, hand-made (its header
// says so): what rail-topology reads when no links_file is given and no
// link-qualify bundle has a table it can use.
//
//go:embed examples/rail-clos-lab.csv
var exampleTable []byte

// exampleName is how the example table is named in the plan and bundle.
const exampleName = "experiments/rail/examples/rail-clos-lab.csv (built in)"

// tableSource is where rail-topology's link table comes from.
type tableSource struct {
	name string // a path, or the example's name
	data []byte
	// why says how the source was chosen when no links_file was given.
	why string
}

// qualifiedTables lists, newest first, the links.csv of every ok
// link-qualify bundle under runsDir.
func qualifiedTables(runsDir string) []string {
	if runsDir == "" {
		return nil
	}
	ents, err := os.ReadDir(runsDir)
	if err != nil {
		return nil
	}
	var out []string
	for i := len(ents) - 1; i >= 0; i-- { // run ids sort by time
		dir := filepath.Join(runsDir, ents[i].Name())
		raw, err := readfile.Read(filepath.Join(dir, "manifest.json"), 64<<20)
		if err != nil {
			continue
		}
		var m struct {
			Recipe struct {
				Name string `json:"name"`
			} `json:"recipe"`
			Status string `json:"status"`
		}
		if json.Unmarshal(raw, &m) != nil || m.Recipe.Name != QualifyName || m.Status != "ok" {
			continue
		}
		if p := filepath.Join(dir, "data", "links.csv"); regular(p) {
			out = append(out, p)
		}
	}
	return out
}

// tableSources is what rail-topology tries, in order: links_file alone
// when given; else the newest link-qualify bundle's table, then the
// example table.
func tableSources(pc *o.PlanContext) ([]tableSource, error) {
	if file := pc.Params.String("links_file"); file != "" {
		data, err := readfile.Read(file, 256<<20) // a fabric of 10^5 links is a few megabytes
		if err != nil {
			return nil, o.Inputf("links_file: %v", err)
		}
		return []tableSource{{name: file, data: data}}, nil
	}
	var out []tableSource
	for _, p := range qualifiedTables(pc.RunsDir) {
		data, err := readfile.Read(p, 256<<20)
		if err != nil {
			continue
		}
		out = append(out, tableSource{name: p, data: data, why: "no links_file given: the newest link-qualify bundle's table"})
		break
	}
	return append(out, tableSource{name: exampleName, data: exampleTable, why: "no links_file given and no link-qualify bundle under the runs directory with a table of two or more ToRs: the example table (RAIL's lab, hand-made loss counts); --set links_file=path for your own"}), nil
}

func regular(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}
