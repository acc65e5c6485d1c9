package inventory

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// Five planted mistakes of three sorts (a field the format does not have; a
// kind, a transceiver and a VOA channel that do not exist; a device a link
// names that is missing) come back in one pass, sorted by line, each once,
// with what follows from the first (the misspelt address is missing).
func TestParseReportsEveryProblemInOnePass(t *testing.T) {
	const text = `version: 1
name: typos
devices:
  att:
    kind: voa
    driver: keysight-n77xx
    adress: tcp://192.0.2.10:5025
    channels: 2
  sw1:
    kind: swich
    driver: tofino-bfrt
    address: ssh://admin@192.0.2.11
    ports: {p1: "136"}
  sw2:
    kind: switch
    driver: tofino-bfrt
    address: ssh://admin@192.0.2.12
    ports: {p1: "136"}
links:
  - name: l1
    a: {device: sw1, port: p1}
    b: {device: sw2, port: p1}
    transceiver: 100GBASE-SR5
    voa: {device: att, channel: 3}
  - name: l2
    a: {device: sw1, port: p1}
    b: {device: sw3, port: p1}
    transceiver: 25GBASE-SR
`
	inv, err := ParsePartial("typos.yaml", []byte(text))
	var ve *ValidationError
	if !errors.As(err, &ve) || inv == nil {
		t.Fatalf("want the partial inventory and a ValidationError, got %v, %v", inv, err)
	}
	want := []string{
		`typos.yaml:4:3: devices.att.address: missing`,
		`typos.yaml:7:5: devices.att.adress: unknown field "adress"`,
		`typos.yaml:10:11: devices.sw1.kind: kind "swich" is not one of`,
		`typos.yaml:23:18: links[0].transceiver: unknown transceiver "100GBASE-SR5"`,
		`typos.yaml:24:33: links[0].voa.channel: channel 3 does not exist on att`,
		`typos.yaml:27:8: links[1].b.device: no device "sw3" in this inventory`,
	}
	if len(ve.Problems) != len(want) {
		t.Fatalf("%d problems, want %d:\n%v", len(ve.Problems), len(want), err)
	}
	for i, p := range ve.Problems {
		if !strings.HasPrefix(p.String(), want[i]) {
			t.Errorf("problem %d: %s\nwant %s...", i, p, want[i])
		}
	}
	if !slices.IsSortedFunc(ve.Problems, func(a, b Problem) int { return a.Pos.Line - b.Pos.Line }) {
		t.Errorf("not sorted by line:\n%v", err)
	}
	// Parse says the same, without the partial inventory.
	if inv, err := Parse("typos.yaml", []byte(text)); inv != nil || err == nil || err.Error() != ve.Error() {
		t.Errorf("Parse: %v, %v", inv, err)
	}
}

// A field the parser rejected is not reported again by the validation of
// what parsed (an address that is not a string is not also "missing").
func TestParseDoesNotReportAFieldTwice(t *testing.T) {
	const text = `version: 1
name: x
devices:
  att:
    kind: voa
    driver: keysight-n77xx
    address: [1, 2]
`
	_, err := Parse("x.yaml", []byte(text))
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Field != "devices.att.address" {
		t.Fatalf("want one problem of devices.att.address, got:\n%v", err)
	}
}
