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

// An option key that the device's driver does not take (a typo, or an
// option of another driver) is refused when the inventory is checked, at
// the key's file, line and column, naming the device, the key, the keys
// the driver takes and, for a near miss, the one meant. Before, such a
// key was silently ignored.
func TestUnknownOptionKeysRefusedAtTheirLine(t *testing.T) {
	const text = `version: 1
name: t
devices:
  voa1:
    kind: voa
    driver: ozoptics-dd100
    address: "serial:///dev/ttyUSB0"
    options:
      travel_tme: 30s
  voa2:
    kind: voa
    driver: keysight-n77xx
    address: "tcp://127.0.0.1:5025"
    options:
      serial: MY123
      travel_time: 30s
  h1:
    kind: host
    driver: linux-ssh
    address: "ssh://u@127.0.0.1:22"
    options:
      knwon_hosts: ~/.ssh/known_hosts
      hostagent_arm64: /srv/hostagent-arm64
      reactor: rtor1
  sw1:
    kind: switch
    driver: tofino-bfrt
    address: "ssh://root@127.0.0.1:22"
    options:
      sde: /opt/sde
      role: tor
      colour: blue
`
	inv, err := inventory.Parse("lab.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	err = CheckDrivers(inv)
	if err == nil {
		t.Fatal("CheckDrivers passed an inventory with four unknown option keys")
	}
	want := []string{
		`lab.yaml:9:7: devices.voa1.options.travel_tme: unknown option "travel_tme" of voa1: its voa driver ozoptics-dd100 takes serial, travel_time; did you mean travel_time?`,
		`lab.yaml:16:7: devices.voa2.options.travel_time: unknown option "travel_time" of voa2: its voa driver keysight-n77xx takes serial`,
		`lab.yaml:22:7: devices.h1.options.knwon_hosts: unknown option "knwon_hosts" of h1: its host driver linux-ssh takes agent_dir, hostagent_<goarch>, hostagent_source, hostagent_version, ip, known_hosts, reactor, reactor_eps_gbps, serial, state_dir, sysctl; did you mean known_hosts?`,
		`lab.yaml:32:7: devices.sw1.options.colour: unknown option "colour" of sw1: its switch driver tofino-bfrt takes agent_port, clock_ppm, cpu_iface, known_hosts, privilege, role, sde, serial, stardust_id, stardust_role, start_timeout`,
	}
	if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("CheckDrivers:\n%s\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}

// CheckOptions, the check of a twin's inventory, refuses what the drivers
// of this build refuse at its line, and passes a device whose driver this
// build does not have (the twin leaves it out), which CheckDrivers
// refuses.
func TestCheckOptionsPassesDevicesOfOtherDrivers(t *testing.T) {
	const text = `version: 1
name: t
devices:
  voa1:
    kind: voa
    driver: ozoptics-dd100
    address: "serial:///dev/ttyUSB0"
    options:
      travel_tme: 30s
  leaf1:
    kind: switch
    driver: arista-eos
    address: "ssh://admin@192.0.2.3"
    options:
      anything: goes
`
	inv, err := inventory.Parse("lab.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	err = CheckOptions(inv)
	if err == nil || !strings.HasPrefix(err.Error(), `lab.yaml:9:7: devices.voa1.options.travel_tme: unknown option "travel_tme"`) || strings.Contains(err.Error(), "leaf1") {
		t.Errorf("CheckOptions: %v; want the unknown key of voa1 at lab.yaml:9:7 only", err)
	}
	if err := CheckDrivers(inv); err == nil || !strings.Contains(err.Error(), `unknown switch driver "arista-eos"`) {
		t.Errorf("CheckDrivers: %v; want leaf1's driver refused", err)
	}
	delete(inv.Devices["voa1"].Options, "travel_tme")
	if err := CheckOptions(inv); err != nil {
		t.Errorf("CheckOptions without the typo: %v", err)
	}
}
