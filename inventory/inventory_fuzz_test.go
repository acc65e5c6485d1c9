package inventory

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

// FuzzParse: any bytes give an inventory or an error naming the file,
// never a panic; an inventory that loads holds no password in an address
// and writes out as YAML that loads again to the same devices and links.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		good,
		withHosts,
		"version: 1\ndevices:\n  tg1: {kind: trafficgen, driver: otg, address: 'https://admin:pw@h:1', options: {api_token: x}}\n",
		"version: 1\ndevices:\n  v: {kind: voa, driver: d, address: 'tcp://h:1', limits: {min_db: 0, max_db: 1}, safe_state: {attenuation_db: 2}}\nlinks:\n  - {name: l, a: {device: v}, b: {device: x}, transceiver: 10GBASE-SR, voa: {device: v, channel: 9}}\n",
		"version: 2\n",
		"devices: [\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		inv, err := Parse("lab.yaml", data)
		if err != nil {
			if !strings.Contains(err.Error(), "lab.yaml") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for _, d := range inv.Devices {
			if u, err := url.Parse(d.Address); err == nil {
				if pw, ok := u.User.Password(); ok && pw != "" {
					t.Fatalf("device %s: address %q with a password loaded", d.Name, d.Address)
				}
			}
		}
		out, err := inv.Marshal()
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := Parse("again.yaml", out)
		if err != nil {
			t.Fatalf("written out, the inventory does not load:\n%s\n%v", out, err)
		}
		if !slices.Equal(inv.DeviceNames(), again.DeviceNames()) || len(inv.Links) != len(again.Links) {
			t.Fatalf("round trip: devices %v -> %v, links %d -> %d", inv.DeviceNames(), again.DeviceNames(), len(inv.Links), len(again.Links))
		}
	})
}
