package results

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSecretsOutsideCredentialsAreScrubbed plants secrets where no
// credential reference names them: a password in a device's URL and an
// option named api_token, as an inventory's redacted copy carries them
// (nested maps, as YAML decodes). None may reach any file of the bundle,
// whichever way it is written: manifest, events, tables, transcripts,
// summary, report.
func TestSecretsOutsideCredentialsAreScrubbed(t *testing.T) {
	const urlPW, token = "Pl4nted-url<pw>&", "tok-PLANTED-0042"
	addr := "http://admin:" + urlPW + "@127.0.0.1:9000/api"
	inv := map[string]any{
		"name": "bench",
		"devices": map[string]any{
			"ocs1": map[string]any{
				"address": addr,
				"options": map[string]any{"api_token": token, "api_token_env": "OCS_TOKEN", "serial": "SN-1"},
			},
		},
	}
	m := Manifest{RunID: NewRunID(time.Now(), "x"), Lab: Lab{Name: "bench", Inventory: inv},
		Params:  []Param{{Name: "api_token", Value: token, Type: "string", Source: "set"}, {Name: "target", Value: addr, Type: "string", Source: "set"}},
		Command: []string{"testbed", "exp", "run", "x", "--set", "api_token=" + token, "--set", "target=" + addr},
		Labels:  map[string]string{"upstream": addr}}
	b, err := Create(t.TempDir(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.UpdateManifest(func(m *Manifest) {
		m.Devices = append(m.Devices, Device{Name: "ocs1", Kind: "ocs", Driver: "mordia-rest", Address: addr})
	}); err != nil {
		t.Fatal(err)
	}
	// An inventory replaced after Create (a new map, not the redacted
	// copy the bundle keeps) is redacted again.
	if err := b.UpdateManifest(func(m *Manifest) {
		m.Lab.Inventory = map[string]any{"name": "bench", "devices": map[string]any{
			"ocs1": map[string]any{"address": addr, "options": map[string]any{"api_token": "tok-PLANTED-0043", "api_token_env": "OCS_TOKEN", "serial": "SN-1"}}}}
	}); err != nil {
		t.Fatal(err)
	}
	b.Event(Event{Type: "connect", Device: "ocs1", Message: "GET " + addr + "/v1/status", Fields: map[string]any{"token": token}})
	// A field named like a secret whose value nothing else named: masked
	// in the event, and hunted in what is written after it.
	b.Event(Event{Type: "login", Device: "ocs1", Fields: map[string]any{"session_token": "sess-UNSEEN-77", "user": "admin"}})
	tr0, _ := b.Transcript("ocs0")
	tr0.Write([]byte("< session sess-UNSEEN-77 opened\n"))
	tr, _ := b.Transcript("ocs1")
	tr.Write([]byte("# connected to " + addr + "\n> Authorization: Bearer " + token + "\n"))
	tw, _ := b.CreateTable(Table{Name: "t", Fields: []Field{{Name: "where", Type: "string"}}})
	tw.Write(addr)
	b.WriteSummary(map[string]any{"endpoint": addr})
	if err := b.Finalize(StatusFailed, "could not reach "+addr); err != nil {
		t.Fatal(err)
	}
	// The caller's inventory is not changed.
	if inv["devices"].(map[string]any)["ocs1"].(map[string]any)["options"].(map[string]any)["api_token"] != token {
		t.Error("Create changed the caller's inventory")
	}
	leaks := []string{urlPW, token, "Pl4nted-url", "PLANTED", "&lt;pw&gt;", `\u003cpw\u003e`, "UNSEEN"}
	files := 0
	filepath.Walk(b.Dir(), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		files++
		data, _ := os.ReadFile(p)
		for _, l := range leaks {
			if bytes.Contains(data, []byte(l)) {
				t.Errorf("%s holds %q", filepath.Base(p), l)
			}
		}
		return nil
	})
	if files < 8 {
		t.Errorf("only %d files written", files)
	}
	data, _ := os.ReadFile(filepath.Join(b.Dir(), "manifest.json"))
	for _, keep := range []string{`"api_token": "***"`, `"api_token_env": "OCS_TOKEN"`, `"address": "http://admin:***@127.0.0.1:9000/api"`, `"serial": "SN-1"`, `"api_token=***"`} {
		if !strings.Contains(string(data), keep) {
			t.Errorf("manifest lacks %s", keep)
		}
	}
	if r, err := Verify(b.Dir()); err != nil || !r.OK {
		t.Errorf("verify: %v %+v", err, r)
	}
}

// BenchmarkUpdateManifest: the manifest rewritten after a step, with an
// inventory of a bench's size (35 devices with addresses and options).
func BenchmarkUpdateManifest(b *testing.B) {
	devs := map[string]any{}
	for i := range 35 {
		devs["dev"+strconv.Itoa(i)] = map[string]any{
			"kind": "switch", "driver": "tofino-ssh", "address": "ssh://admin@127.0.0.1:" + strconv.Itoa(40000+i),
			"credentials": map[string]any{"key_file": "/home/lab/.ssh/id_ed25519"},
			"options":     map[string]any{"sde": "/opt/bf-sde-9.13.0", "program": "linkguardian", "ports": []any{"1/0", "2/0", "3/0"}, "known_hosts": "/tmp/known_hosts"},
		}
	}
	m := Manifest{RunID: NewRunID(time.Now(), "x"), Lab: Lab{Name: "bench", Inventory: map[string]any{"name": "bench", "devices": devs}}}
	bu, err := Create(b.TempDir(), m, Options{})
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		if err := bu.UpdateManifest(func(m *Manifest) { m.Progress = &Progress{StepsDone: i, StepsTotal: 1 << 30} }); err != nil {
			b.Fatal(err)
		}
	}
}

// TestManifestRewrittenAsEncoded: the manifest rewritten after a step
// (its inventory's JSON kept from the write before) is, byte for byte,
// the manifest encoded whole, also after the inventory is replaced;
// HTML-escaped and non-ASCII text included.
func TestManifestRewrittenAsEncoded(t *testing.T) {
	inv := func(note string) map[string]any {
		return map[string]any{"name": "bench", "devices": map[string]any{
			"sw1": map[string]any{"address": "ssh://admin@127.0.0.1:22", "options": map[string]any{"note": note, "ports": []any{"1/0", 2, 3.5, true, nil}}},
		}}
	}
	m := Manifest{RunID: NewRunID(time.Now(), "x"), Lab: Lab{Name: "bench", Inventory: inv("a <b> & \"c\" é \u2028")}}
	b, err := Create(t.TempDir(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		got, err := os.ReadFile(filepath.Join(b.Dir(), "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.MarshalIndent(b.Manifest(), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, append(want, '\n')) {
			t.Errorf("%s: manifest.json is not the manifest encoded:\n%s\nwant:\n%s", when, got, want)
		}
	}
	check("created")
	for i := range 3 {
		if err := b.UpdateManifest(func(m *Manifest) { m.Progress = &Progress{StepsDone: i + 1, StepsTotal: 3} }); err != nil {
			t.Fatal(err)
		}
		check("step " + strconv.Itoa(i+1))
	}
	if err := b.UpdateManifest(func(m *Manifest) { m.Lab.Inventory = inv("replaced") }); err != nil {
		t.Fatal(err)
	}
	check("inventory replaced")
	if got, _ := os.ReadFile(filepath.Join(b.Dir(), "manifest.json")); !bytes.Contains(got, []byte(`"note": "replaced"`)) {
		t.Errorf("the replaced inventory was not written:\n%s", got)
	}
}
