package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// inventory check reports every problem of a file in one pass, sorted by
// line: the parser's (an unknown field), the validation's (a kind, a
// transceiver, a VOA channel) and the drivers' (a driver this build does
// not have).
func TestInventoryCheckReportsEveryProblemInOnePass(t *testing.T) {
	const text = `version: 1
name: typos
devices:
  att:
    kind: voa
    driver: keysight-n77xx
    address: tcp://192.0.2.10:5025
    channels: 2
    colour: blue
  sw1:
    kind: swich
    driver: tofino-bfrt
    address: ssh://admin@192.0.2.11
    ports: {p1: "136"}
  sw2:
    kind: switch
    driver: tofino-bfrtt
    address: ssh://admin@192.0.2.12
    ports: {p1: "136"}
links:
  - name: l1
    a: {device: sw1, port: p1}
    b: {device: sw2, port: p1}
    transceiver: 100GBASE-SR5
    voa: {device: att, channel: 3}
`
	f := filepath.Join(t.TempDir(), "typos.yaml")
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := testbedRun(t, "inventory", "check", "--offline", f)
	if code != exitBadInput {
		t.Fatalf("exit %d, want %d:\n%s", code, exitBadInput, errOut)
	}
	want := []string{
		`typos.yaml:9:5: devices.att.colour: unknown field "colour"`,
		`typos.yaml:11:11: devices.sw1.kind: kind "swich" is not one of`,
		`typos.yaml:17:13: devices.sw2.driver: unknown switch driver "tofino-bfrtt"`,
		`typos.yaml:24:18: links[0].transceiver: unknown transceiver "100GBASE-SR5"`,
		`typos.yaml:25:33: links[0].voa.channel: channel 3 does not exist on att`,
	}
	last := -1
	for _, w := range want {
		i := strings.Index(errOut, w)
		if i < 0 {
			t.Errorf("missing %q in:\n%s", w, errOut)
			continue
		}
		if i < last {
			t.Errorf("%q is not in line order in:\n%s", w, errOut)
		}
		last = i
	}
	if n := strings.Count(errOut, "typos.yaml:"); n != len(want) {
		t.Errorf("%d problems reported, want %d:\n%s", n, len(want), errOut)
	}
}
