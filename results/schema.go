package results

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// SchemaName is the bundle schema's name without its version; Schema is
// SchemaName + "/v" + SchemaVersion.
const (
	SchemaName    = "testbed.bundle"
	SchemaVersion = 1
)

// Program is a program loaded on a device during a run (a P4 program on a
// switch, an agent script on a host), identified by the SHA-256 of what was
// loaded, so two runs can be told apart by the code their devices ran.
type Program struct {
	Device string `json:"device,omitempty"`
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

func (p Program) key() string {
	if p.Device == "" {
		return p.Name
	}
	return p.Device + "." + p.Name
}

// ParseSchema reads "testbed.bundle/vN" and returns N.
func ParseSchema(s string) (int, error) {
	name, ver, ok := strings.Cut(s, "/v")
	if !ok || name != SchemaName {
		return 0, fmt.Errorf("schema %q: expected %q", s, SchemaName+"/v<N>")
	}
	n, err := strconv.Atoi(ver)
	if err != nil || n < 1 || strconv.Itoa(n) != ver {
		return 0, fmt.Errorf("schema %q: version %q is not a positive whole number", s, ver)
	}
	return n, nil
}

// SchemaError is a manifest whose schema this testbed cannot read.
type SchemaError struct {
	Schema  string
	Version int // 0 when the schema does not parse
	Err     error
}

func (e *SchemaError) Error() string {
	if e.Version > SchemaVersion {
		return fmt.Sprintf("bundle schema v%d is newer than this testbed understands (v%d); upgrade testbed", e.Version, SchemaVersion)
	}
	return fmt.Sprintf("manifest.json: %v", e.Err)
}

func (e *SchemaError) Unwrap() error { return e.Err }

// decodeManifest reads manifest.json of any schema version this testbed
// understands and returns it as the current Manifest. Each older version
// gets a case that upgrades it; a newer one is refused with a SchemaError.
func decodeManifest(data []byte) (Manifest, error) {
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return Manifest{}, fmt.Errorf("manifest.json does not parse: %w", err)
	}
	v, err := ParseSchema(head.Schema)
	if err != nil {
		return Manifest{}, &SchemaError{Schema: head.Schema, Err: err}
	}
	if v > SchemaVersion {
		return Manifest{}, &SchemaError{Schema: head.Schema, Version: v}
	}
	var m Manifest
	switch v {
	case 1:
		if err := json.Unmarshal(data, &m); err != nil {
			return Manifest{}, fmt.Errorf("manifest.json (schema v1) does not parse: %w", err)
		}
	// When v2 becomes current, v1 keeps a case here that decodes the v1
	// layout into its own struct and converts it to the current Manifest.
	default:
		return Manifest{}, &SchemaError{Schema: head.Schema, Version: v, Err: fmt.Errorf("no reader for schema v%d", v)}
	}
	return m, nil
}
