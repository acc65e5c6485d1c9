package orchestrator

import (
	"strings"
	"testing"

	"testbed/inventory"
)

// A driver option's bad value is refused when the inventory is checked,
// before any device opens, at the value's file and line, naming the
// option and what was expected: one case per kind of option (a duration,
// a TCP port, true or false) and per driver that reads it.
func TestDriverOptionsCheckedAtTheirLine(t *testing.T) {
	const text = `version: 1
name: t
devices:
  voa1:
    kind: voa
    driver: ozoptics-dd100
    address: "serial:///dev/ttyUSB0"
    options:
      travel_time: fast
  sw1:
    kind: switch
    driver: tofino-bfrt
    address: "ssh://root@127.0.0.1:22"
    options:
      sde: /opt/sde
      agent_port: "70000"
      start_timeout: "-3m"
  sw2:
    kind: switch
    driver: tofino-bfrt-grpc
    address: "tcp://127.0.0.1:50052"
    options:
      start_timeout: "3"
  sw3:
    kind: switch
    driver: tofino-bfrt-grpc
    address: "tcp://127.0.0.1:50053"
    options:
      start_timeout: 90s
      agent_port: "9091"
  tg1:
    kind: trafficgen
    driver: otg
    address: "https://127.0.0.1:8443"
    options:
      insecure_tls: "yes"
  fabric1:
    kind: fabric
    driver: stardust-model
    address: "tcp://127.0.0.1:7000"
    options:
      run_timeout: 10
`
	inv, err := inventory.Parse("lab.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	err = CheckDrivers(inv)
	if err == nil {
		t.Fatal("CheckDrivers passed an inventory with six bad option values")
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{
		`lab.yaml:9:7: devices.voa1.options.travel_time: "fast": expected a positive duration (e.g. 30s), how long the motor takes over the whole range (voa driver ozoptics-dd100)`,
		`lab.yaml:16:7: devices.sw1.options.agent_port: "70000": expected a TCP port 1..65535 (switch driver tofino-bfrt)`,
		`lab.yaml:17:7: devices.sw1.options.start_timeout: "-3m": expected a positive duration (e.g. 3m), how long the switch may take to start a program (switch driver tofino-bfrt)`,
		`lab.yaml:23:7: devices.sw2.options.start_timeout: "3": expected a positive duration (e.g. 3m), how long the switch may take to start a program (switch driver tofino-bfrt-grpc)`,
		`lab.yaml:36:7: devices.tg1.options.insecure_tls: "yes": expected true or false, whether to accept the device's certificate unchecked (a self-signed one) (trafficgen driver otg)`,
		`lab.yaml:42:7: devices.fabric1.options.run_timeout: "10": expected a positive duration (e.g. 10m), how long an exchange that steps the fabric may take (fabric driver stardust-model)`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("CheckDrivers:\n%s\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}
