package drivers_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"testbed/drivers"
	_ "testbed/drivers/all"
	"testbed/instruments/ocs"
)

// Every driver of the build registers itself once, with an undo for each
// of its kind's changes, and planning finds the OCS drivers that run
// schedules by asking, without opening anything.
func TestTheBuildsDrivers(t *testing.T) {
	want := map[string][]string{
		"host": {"linux-ssh"}, "ocs": {"mordia-rest", "polatis-scpi"}, "switch": {"tofino-bfrt", "tofino-bfrt-grpc"},
		"trafficgen": {"otg", "trex"}, "voa": {"keysight-n77xx", "ozoptics-dd100"},
	}
	for kind, names := range want {
		got := drivers.Names(kind)
		for _, n := range names {
			if !slices.Contains(got, n) {
				t.Errorf("%s drivers %v lack %s", kind, got, n)
			}
			d, ok := drivers.Lookup(kind, n)
			if !ok || d.Open == nil || len(d.Undo) == 0 {
				t.Errorf("%s/%s: registered %v, open %v, %d undo kinds", kind, n, ok, d.Open != nil, len(d.Undo))
			}
		}
	}
	if got := drivers.With("ocs", ocs.CapSchedule); !slices.Equal(got, []string{"mordia-rest"}) {
		t.Errorf("ocs drivers that run schedules: %v", got)
	}
	if _, ok := drivers.Lookup("switch", "tofino-p4runtime"); ok {
		t.Error("a driver nobody registered is found")
	}
	for _, u := range []string{"voa.attenuation", "tofino.entry", "host.setting", "ocs.dark", "trafficgen.stop"} {
		if !slices.Contains(drivers.UndoKinds(), u) {
			t.Errorf("undo kind %s not registered (have %v)", u, drivers.UndoKinds())
		}
	}
}

// A registration without what the engine needs, or a second one of the
// same kind and key, is refused.
func TestRegisterRefuses(t *testing.T) {
	open := func(context.Context, drivers.Config) (drivers.Device, error) { return nil, nil }
	for _, c := range []struct {
		name string
		d    drivers.Driver
		want string
	}{
		{"no open", drivers.Driver{Kind: "voa", Name: "x-test"}, "without a kind, name or Open"},
		{"no kind", drivers.Driver{Name: "x-test", Open: open}, "without a kind, name or Open"},
		{"twice", drivers.Driver{Kind: "voa", Name: "keysight-n77xx", Open: open}, "registered twice"},
	} {
		func() {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, c.want) {
					t.Errorf("%s: panic %v, want %q", c.name, r, c.want)
				}
			}()
			drivers.Register(c.d)
		}()
	}
}

// Config.Option expands a leading ~/ only for paths.
func TestConfigOption(t *testing.T) {
	c := drivers.Config{Options: map[string]string{"known_hosts": "~/kh", "sde": "~/x"}}
	if got := c.Option("known_hosts", true); strings.HasPrefix(got, "~") || !strings.HasSuffix(got, "/kh") {
		t.Errorf("path option %q", got)
	}
	if got := c.Option("sde", false); got != "~/x" {
		t.Errorf("plain option %q", got)
	}
}
