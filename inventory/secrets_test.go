package inventory

import (
	"strings"
	"testing"
)

// A secret written anywhere but under credentials is refused with the
// file, line and field, and the reference form to write instead; the
// secret itself is never repeated in the message.
func TestSecretsOutsideCredentialsAreRejected(t *testing.T) {
	cases := []struct{ name, edit, repl, want string }{
		{"http password", "address: https://127.0.0.1:8443", "address: https://admin:hunter2@127.0.0.1:8443",
			`lab.yaml:21:14: devices.tg1.address: "https://admin:xxxxx@127.0.0.1:8443" carries a password in its userinfo (user:password@): an inventory holds no secrets; write https://127.0.0.1:8443 and refer to it under credentials: password_env: VAR`},
		{"http user", "address: https://127.0.0.1:8443", "address: https://hunter2@127.0.0.1:8443",
			`lab.yaml:21:14: devices.tg1.address: https://xxxxx@127.0.0.1:8443 carries userinfo, which an HTTP client sends as a credential`},
		{"tcp password", "address: tcp://10.0.0.5:5025", "address: tcp://admin:hunter2@10.0.0.5:5025",
			`lab.yaml:7:14: devices.voa1.address: "tcp://admin:xxxxx@10.0.0.5:5025" carries a password in its userinfo (user:password@): an inventory holds no secrets; write tcp://admin@10.0.0.5:5025 and refer to it under credentials`},
		{"unparsable with password", "address: tcp://10.0.0.5:5025", "address: tcp://admin:hunter2@10.0.0.5:50x25",
			`lab.yaml:7:14: devices.voa1.address: "tcp://xxxxx@10.0.0.5:50x25" carries a password`},
		{"token option", "ports: {p1: eth1, p2: eth2}", "ports: {p1: eth1, p2: eth2}\n    options: {insecure_tls: \"true\", api_token: hunter2}",
			`lab.yaml:23:37: devices.tg1.options.api_token: option "api_token" looks like a secret (its name contains "token"): an inventory holds no secrets; refer to it under credentials: password_env: VAR`},
		{"password option", "ports: {p1: eth1, p2: eth2}", "ports: {p1: eth1, p2: eth2}\n    options:\n      AdminPassword: hunter2",
			`lab.yaml:24:7: devices.tg1.options.AdminPassword: option "AdminPassword" looks like a secret (its name contains "password")`},
		{"secret option", "ports: {p1: eth1, p2: eth2}", "ports: {p1: eth1, p2: eth2}\n    options: {Client-SECRET: hunter2}",
			`devices.tg1.options.Client-SECRET: option "Client-SECRET" looks like a secret (its name contains "secret")`},
		{"key option", "ports: {p1: eth1, p2: eth2}", "ports: {p1: eth1, p2: eth2}\n    options: {ssh_key: hunter2}",
			`devices.tg1.options.ssh_key: option "ssh_key" looks like a secret (its name contains "key")`},
		{"short pw option", "ports: {p1: eth1, p2: eth2}", "ports: {p1: eth1, p2: eth2}\n    options: {admin_pw: hunter2}",
			`devices.tg1.options.admin_pw: option "admin_pw" looks like a secret (its name contains "pw")`},
		{"key file that is no path", "ports: {p1: eth1, p2: eth2}", "ports: {p1: eth1, p2: eth2}\n    options: {tls_key_file: hunter2}",
			`lab.yaml:23:15: devices.tg1.options.tls_key_file: option "tls_key_file" names a file, but its value is not a path`},
		{"env that is no name", "ports: {p1: eth1, p2: eth2}", "ports: {p1: eth1, p2: eth2}\n    options: {token_env: \"hunter2 x\"}",
			`devices.tg1.options.token_env: option "token_env" names an environment variable, but its value is not a variable name`},
		{"unknown secret field", "    timeout: 3s", "    timeout: 3s\n    api_key: hunter2",
			`lab.yaml:9:5: devices.voa1.api_key: secrets are never written in an inventory`},
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
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error repeats the secret:\n%v", err)
			}
		})
	}
}

// References and public material are not secrets: a known_hosts file, a
// key file's path, an environment variable's name, a host key.
func TestReferencesAndPathsInOptionsAreAccepted(t *testing.T) {
	text := strings.Replace(good, "ports: {p1: eth1, p2: eth2}", `ports: {p1: eth1, p2: eth2}
    options:
      known_hosts: ~/.ssh/known_hosts
      tls_key_file: /etc/testbed/tg1.key
      client_key_path: ./keys/tg1.pem
      api_token_env: LAB_TG1_TOKEN
      host_key_fingerprint: SHA256:3q2+7w
      public_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI"
      bypass_cache: "true"`, 1)
	text = strings.Replace(text, "address: tcp://10.0.0.5:5025", "address: tcp://admin@10.0.0.5:5025", 1)
	inv, err := Load(write(t, "lab.yaml", text))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := inv.Device("tg1"); d.Options["api_token_env"] != "LAB_TG1_TOKEN" || len(d.Options) != 7 {
		t.Fatalf("options: %v", d.Options)
	}
}

func TestRedactAddress(t *testing.T) {
	for in, want := range map[string]string{
		"https://admin:pw@10.0.0.9:8443/api": "https://admin:xxxxx@10.0.0.9:8443/api",
		"ssh://admin@10.0.0.21":              "ssh://admin@10.0.0.21",
		"tcp://u:p@h:bad":                    "tcp://xxxxx@h:bad",
		"serial:///dev/ttyUSB0?baud=9600":    "serial:///dev/ttyUSB0?baud=9600",
	} {
		if got := RedactAddress(in); got != want {
			t.Errorf("RedactAddress(%q) = %q, want %q", in, got, want)
		}
	}
}
