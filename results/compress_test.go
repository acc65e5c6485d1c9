package results

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A compressed table is a gzip CSV the standard tools read, described as
// such in datapackage.json, counted by Open and covered by SHA256SUMS.
func TestCompressedTable(t *testing.T) {
	b, _ := newBundle(t)
	tw, err := b.CreateTable(Table{Name: "samples", Compress: true, Fields: []Field{{Name: "trial", Type: "integer"}, {Name: "fct_us", Type: "number"}}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2*compressFlushRows + 17
	for i := range n {
		if err := tw.Write(i, float64(i)/7); err != nil {
			t.Fatal(err)
		}
	}
	// Before the end, every whole block of rows is already in the file.
	partial, err := os.ReadFile(filepath.Join(b.Dir(), "data", "samples.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(partial))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(zr) // no trailer yet: an unexpected EOF after the data
	if lines := strings.Count(string(got), "\n"); lines != 1+2*compressFlushRows {
		t.Errorf("mid-run the file holds %d lines, want %d", lines, 1+2*compressFlushRows)
	}
	if err := b.Finalize(StatusOK, ""); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(b.Dir(), "data", "samples.csv.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err = gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(zr).ReadAll()
	if err != nil || len(recs) != n+1 || recs[0][1] != "fct_us" || recs[n][0] != "8208" {
		t.Fatalf("%d records, last %v, %v", len(recs), recs[len(recs)-1], err)
	}
	var dp struct {
		Resources []struct{ Path, Compression string }
	}
	data, _ := os.ReadFile(filepath.Join(b.Dir(), "datapackage.json"))
	if err := json.Unmarshal(data, &dp); err != nil || len(dp.Resources) != 1 || dp.Resources[0].Path != "data/samples.csv.gz" || dp.Resources[0].Compression != "gz" {
		t.Errorf("datapackage: %+v %v", dp, err)
	}
	if rep, err := Verify(b.Dir()); err != nil || !rep.OK {
		t.Errorf("verify: %+v %v", rep, err)
	}
	r, err := Open(b.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tables) != 1 || r.Tables[0].Name != "samples" || r.Tables[0].Rows != n {
		t.Errorf("tables: %+v", r.Tables)
	}
}
