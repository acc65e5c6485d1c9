package results

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSchemaConstantsAgree(t *testing.T) {
	v, err := ParseSchema(Schema)
	if err != nil || v != SchemaVersion || !strings.HasPrefix(Schema, SchemaName+"/") {
		t.Fatalf("Schema %q parses to %d, %v; SchemaVersion is %d", Schema, v, err, SchemaVersion)
	}
}

func TestParseSchema(t *testing.T) {
	for in, want := range map[string]int{"testbed.bundle/v1": 1, "testbed.bundle/v2": 2, "testbed.bundle/v12": 12} {
		if got, err := ParseSchema(in); err != nil || got != want {
			t.Errorf("%s: %d %v", in, got, err)
		}
	}
	for _, in := range []string{"", "testbed.bundle", "testbed.bundle/1", "testbed.bundle/v0", "testbed.bundle/v01", "testbed.bundle/v1.1", "other/v1", "testbed.bundle/v-1"} {
		if _, err := ParseSchema(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// doctor rewrites the schema line of a finalized bundle's manifest.
func doctor(t *testing.T, schema string) string {
	t.Helper()
	dir := finalized(t)
	p := filepath.Join(dir, "manifest.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	doctored := strings.Replace(string(data), `"schema": "`+Schema+`"`, `"schema": "`+schema+`"`, 1)
	if doctored == string(data) {
		t.Fatalf("manifest has no schema line to doctor:\n%s", data)
	}
	if err := os.WriteFile(p, []byte(doctored), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReaderRefusesNewerSchema(t *testing.T) {
	dir := doctor(t, "testbed.bundle/v3")
	_, err := Open(dir)
	var se *SchemaError
	if !errors.As(err, &se) || se.Version != 3 {
		t.Fatalf("Open of a v3 bundle: %v", err)
	}
	want := "bundle schema v3 is newer than this testbed understands (v1); upgrade testbed"
	if err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	r, err := Verify(dir)
	if err != nil || r.OK || !strings.Contains(strings.Join(r.Problems, "\n"), want) {
		t.Errorf("verify of a v3 bundle: %v %+v", err, r)
	}

	for _, bad := range []string{"testbed.bundle/vX", "somebody.else/v1"} {
		dir := doctor(t, bad)
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "manifest.json") {
			t.Errorf("Open of schema %q: %v", bad, err)
		}
	}
}

func TestReaderReadsCurrentSchema(t *testing.T) {
	dir := finalized(t)
	r, err := Open(dir)
	if err != nil || r.Manifest.Schema != Schema || r.Manifest.Recipe.Name != "attenuation-sweep" {
		t.Fatalf("Open: %v %+v", err, r)
	}
}
