package inventory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const good = `version: 1
name: bench-a
devices:
  voa1:
    kind: voa
    driver: keysight-n77xx
    address: tcp://10.0.0.5:5025
    timeout: 3s
    channels: 4
    limits: {min_db: 0, max_db: 30}
    safe_state: {attenuation_db: 2}
    credentials: {password_env: TB_TEST_PW}
  voa2:
    kind: voa
    driver: ozoptics-dd100
    address: serial:///dev/ttyUSB0?baud=9600
    credentials: {password_file: PWFILE}
  tg1:
    kind: trafficgen
    driver: otg
    address: https://127.0.0.1:8443
    ports: {p1: eth1, p2: eth2}
links:
  - name: l25g
    a: {device: tg1, port: p1}
    b: {device: tg1, port: p2}
    transceiver: 25GBASE-SR
    voa: {device: voa1, channel: 2}
    loss_after_voa_db: 0.5
`

func write(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadGoodInventoryAndRoundTrip(t *testing.T) {
	inv, err := Load(write(t, "lab.yaml", good))
	if err != nil {
		t.Fatal(err)
	}
	l, ok := inv.Link("l25g")
	if !ok || l.FEC != "rs528" || l.VOA.Channel != 2 || l.LossAfterVOADB != 0.5 {
		t.Fatalf("link: %+v", l)
	}
	d, _ := inv.Device("voa1")
	if d.Limits.MaxDB != 30 || *d.SafeState.AttenuationDB != 2 || d.Timeout.Seconds() != 3 || d.Pos.Line != 4 {
		t.Fatalf("voa1: %+v pos %v", d, d.Pos)
	}
	data, err := inv.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("again.yaml", data)
	if err != nil {
		t.Fatalf("round trip: %v\n%s", err, data)
	}
	if len(again.Devices) != 3 || len(again.Links) != 1 || again.Links[0].VOA.Device != "voa1" || again.Devices["tg1"].Ports["p2"] != "eth2" {
		t.Fatalf("round trip lost data:\n%s", data)
	}
}

func TestValidationNamesFileLineAndField(t *testing.T) {
	cases := []struct{ name, edit, repl, want string }{
		{"typo", "    address: tcp://10.0.0.5:5025\n    timeout", "    adress: tcp://10.0.0.5:5025\n    timeout", `lab.yaml:7:5: devices.voa1.adress: unknown field "adress"`},
		{"kind", "kind: trafficgen", "kind: generator", `lab.yaml:19:11: devices.tg1.kind: kind "generator" is not one of`},
		{"scheme", "https://127.0.0.1:8443", "ssh://127.0.0.1:8443", "lab.yaml:21:14: devices.tg1.address: a trafficgen is not reached over ssh"},
		{"serial", "serial:///dev/ttyUSB0?baud=9600", "serial://dev/ttyUSB0", "lab.yaml:16:14: devices.voa2.address"},
		{"limits", "{min_db: 0, max_db: 30}", "{min_db: 40, max_db: 30}", "lab.yaml:10:13: devices.voa1.limits: need 0 <= min_db < max_db"},
		{"safe", "{attenuation_db: 2}", "{attenuation_db: 31}", "lab.yaml:11:34: devices.voa1.safe_state.attenuation_db: 31 dB is outside the limits"},
		{"timeout", "timeout: 3s", "timeout: soon", `lab.yaml:8:14: devices.voa1.timeout: "soon" is not a positive duration`},
		{"channel", "channel: 2}", "channel: 5}", "lab.yaml:28:34: links[0].voa.channel: channel 5 does not exist on voa1"},
		{"port", "port: p2}", "port: p9}", `links[0].b.port: device tg1 has no port "p9"`},
		{"transceiver", "25GBASE-SR", "25GBASE-LR", `lab.yaml:27:18: links[0].transceiver: unknown transceiver "25GBASE-LR"`},
		{"fec", "loss_after_voa_db: 0.5", "loss_after_voa_db: 0.5\n    fec: rs544", `links[0].fec: fec "rs544" is not available on 25GBASE-SR`},
		{"voakind", "{device: voa1, channel: 2}", "{device: tg1, channel: 2}", "links[0].voa.device: device tg1 is a trafficgen, not a voa"},
		{"secret", "credentials: {password_env: TB_TEST_PW}", "credentials: {password: hunter2}", "devices.voa1.credentials.password: secrets are never written in an inventory"},
		{"dup", "  tg1:\n", "  voa1:\n    kind: voa\n  tg1:\n", "defined twice"},
		{"nan", "{min_db: 0, max_db: 30}", "{min_db: 0, max_db: .nan}", "lab.yaml:10:33: devices.voa1.limits.max_db: expected a number in dB, got .nan: not a finite number"},
		{"inf", "{attenuation_db: 2}", "{attenuation_db: -.inf}", "devices.voa1.safe_state.attenuation_db: expected a number in dB, got -.inf: not a finite number"},
		{"version", "version: 1", "version: 2", "lab.yaml:1:10: version: inventory version 2 is not supported"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(good, c.edit, c.repl, 1)
			if text == good {
				t.Fatalf("edit %q did not apply", c.edit)
			}
			_, err := Load(write(t, "lab.yaml", text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error:\n%v\nwant it to contain:\n%s", err, c.want)
			}
		})
	}
}

func TestYAMLSyntaxErrorNamesFile(t *testing.T) {
	_, err := Load(write(t, "broken.yaml", "version: 1\ndevices:\n  voa1: [\n"))
	if err == nil || !strings.Contains(err.Error(), "broken.yaml") || !strings.Contains(err.Error(), "line") {
		t.Fatalf("error %v does not name the file and line", err)
	}
}

func TestAllProblemsReportedAtOnce(t *testing.T) {
	text := strings.Replace(strings.Replace(good, "kind: trafficgen", "kind: nope", 1), "25GBASE-SR", "x", 1)
	_, err := Load(write(t, "lab.yaml", text))
	ve, ok := err.(*ValidationError)
	if !ok || len(ve.Problems) < 2 {
		t.Fatalf("want every problem, got %v", err)
	}
}

func TestSecretsResolvedButNeverWrittenOut(t *testing.T) {
	t.Setenv("TB_TEST_PW", "env-secret-123")
	pw := write(t, "pw", "file-secret-456\n")
	inv, err := Load(write(t, "lab.yaml", strings.Replace(good, "PWFILE", pw, 1)))
	if err != nil {
		t.Fatal(err)
	}
	secrets, _ := inv.Secrets()
	if strings.Join(secrets, ",") != "env-secret-123,file-secret-456" {
		t.Fatalf("secrets = %v", secrets)
	}
	data, _ := inv.Marshal()
	red := inv.Redacted()
	for _, s := range secrets {
		if strings.Contains(string(data), s) || strings.Contains(strings.ReplaceAll(strings.TrimSpace(fmtAny(red)), "\n", ""), s) {
			t.Errorf("secret %q written out", s)
		}
	}
	if !strings.Contains(fmtAny(red), "TB_TEST_PW") {
		t.Errorf("redacted inventory lost the reference: %v", red)
	}
}

func fmtAny(v any) string { return fmt.Sprint(v) }

// A host cabled to an optical circuit switch names the switch's port by
// its number (REACToR hosts on a Mordia's ports).
func TestLinkToAnOCSPortByNumber(t *testing.T) {
	const lab = `version: 1
devices:
  ocs1:
    kind: ocs
    driver: mordia-rest
    address: http://10.0.0.7:8081
  rh1:
    kind: host
    driver: linux-ssh
    address: ssh://testbed@10.0.1.1
    ports: {eth1: 10.20.0.1/24}
    options: {reactor: rtor1, reactor_eps_gbps: "10"}
links:
  - name: rh1-ocs1
    a: {device: rh1, port: eth1}
    b: {device: ocs1, port: "PORT"}
    transceiver: 10GBASE-SR
`
	inv, err := Load(write(t, "lab.yaml", strings.Replace(lab, "PORT", "3", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := inv.Link("rh1-ocs1"); l.B.Port != "3" {
		t.Fatalf("link %+v", l)
	}
	for _, p := range []string{"0", "in3", ""} {
		_, err := Load(write(t, "lab.yaml", strings.Replace(lab, "PORT", p, 1)))
		if err == nil || !strings.Contains(err.Error(), "links[0].b.port") || !strings.Contains(err.Error(), "an ocs port is a number from 1") {
			t.Errorf("port %q: %v", p, err)
		}
	}
}

// An inventory path that is not a regular file (a FIFO would block the
// reader for ever, /dev/zero never end) is refused at once, naming it.
func TestLoadRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "lab.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	zero := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, zero} {
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Load(%s): %v", p, err)
		}
	}
}

// A bundle carries an option's value only when its key is known safe: a
// secret under a name nobody listed (session, community, otp_seed) is
// masked by default, not by luck.
func TestRedactedKeepsOnlyKnownSafeOptions(t *testing.T) {
	text := strings.Replace(good, "  tg1:\n", "  tg1:\n    options: {snmp_community: public-ring-77, otp_seed: JBSWY3DPEHPK3PXP, sde: /opt/bf-sde, known_hosts: /etc/kh, api_token_env: TG_TOKEN}\n", 1)
	inv, err := Load(write(t, "lab.yaml", text))
	if err != nil {
		t.Fatal(err)
	}
	got := fmtAny(inv.Redacted())
	for _, leak := range []string{"public-ring-77", "JBSWY3DPEHPK3PXP"} {
		if strings.Contains(got, leak) {
			t.Errorf("option value %q in the redacted inventory: %s", leak, got)
		}
	}
	for _, keep := range []string{"sde:/opt/bf-sde", "known_hosts:/etc/kh", "api_token_env:TG_TOKEN", "snmp_community:***"} {
		if !strings.Contains(got, keep) {
			t.Errorf("%s lost from %s", keep, got)
		}
	}
}
