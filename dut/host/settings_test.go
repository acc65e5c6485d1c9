package host

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Settings are tested two ways. Without privileges, Options.Sysctl and
// Options.IP point at stand-in scripts in the test's directory that keep
// their state in files (and print what the real tools print). As root,
// the real sysctl and ip run inside a network namespace made for the test
// (the options point at wrappers that nsenter it), so the machine's own
// settings are never touched.

const standInSysctl = `#!/bin/sh
# Stand-in sysctl: one file per key under $dir.
dir=DIR
case "$1" in
-n) f="$dir/$2"
    [ -f "$f" ] || { echo "sysctl: cannot stat /proc/sys/$2: No such file or directory" >&2; exit 255; }
    cat "$f" ;;
-w) k=${2%%=*}; v=${2#*=}; f="$dir/$k"
    [ -f "$f" ] || { echo "sysctl: cannot stat /proc/sys/$k: No such file or directory" >&2; exit 255; }
    [ -f "$f.ro" ] && { echo "sysctl: permission denied on key \"$k\"" >&2; exit 255; }
    [ -f "$f.ignore" ] || printf '%s\n' "$v" > "$f"
    echo "$k = $v" ;;
*) echo "stand-in sysctl: -n KEY | -w KEY=VALUE" >&2; exit 2 ;;
esac
`

const standInIP = `#!/bin/sh
# Stand-in ip: "route show DST" and "route change DST ..." on $dir/routes,
# one route a line; "rto_min X" is shown as "rto_min lock X" like ip does.
f=DIR/routes
[ "$1" = route ] || { echo "stand-in ip: route only" >&2; exit 2; }
case "$2" in
show) shift 2; awk -v d="$1" '$1 == d' "$f" ;;
change) shift 2
    awk -v d="$1" '$1 == d' "$f" | grep -q . || { echo "RTNETLINK answers: No such file or directory" >&2; exit 2; }
    line=$(echo "$*" | sed 's/ rto_min / rto_min lock /')
    awk -v d="$1" '$1 != d' "$f" > "$f.new"
    echo "$line" >> "$f.new"
    mv "$f.new" "$f" ;;
*) echo "stand-in ip: route show|change" >&2; exit 2 ;;
esac
`

func writeStandIns(t *testing.T, dir string) (sysctl, ip, state string) {
	t.Helper()
	state = filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	sysctl, ip = filepath.Join(dir, "sysctl"), filepath.Join(dir, "ip")
	os.WriteFile(sysctl, []byte(strings.ReplaceAll(standInSysctl, "DIR", state)), 0o755)
	os.WriteFile(ip, []byte(strings.ReplaceAll(standInIP, "DIR", state)), 0o755)
	return
}

func readState(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSettingsWithStandIns(t *testing.T) {
	d := sharedSSHD(t)
	sysctl, ip, state := writeStandIns(t, t.TempDir())
	h := d.open(t, "h1", func(o *Options) { o.Sysctl, o.IP = sysctl, ip })
	ctx := testCtx(t)
	cc := filepath.Join(state, "net.ipv4.tcp_congestion_control")
	os.WriteFile(cc, []byte("cubic\n"), 0o644)

	ch, undo, err := h.Apply(ctx, Sysctl("net.ipv4.tcp_congestion_control", "dctcp"))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Before != "cubic" || ch.After != "dctcp" || ch.Host != "h1" || ch.Key != "net.ipv4.tcp_congestion_control" {
		t.Fatalf("change %+v", ch)
	}
	if got := readState(t, cc); got != "dctcp\n" {
		t.Fatalf("state %q", got)
	}
	if err := undo(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readState(t, cc); got != "cubic\n" {
		t.Fatalf("after undo: %q", got)
	}

	// Several fields, shown with tabs: compared and restored field-wise.
	rmem := filepath.Join(state, "net.ipv4.tcp_rmem")
	os.WriteFile(rmem, []byte("4096\t131072\t6291456\n"), 0o644)
	ch, undo, err = h.Apply(ctx, Sysctl("net.ipv4.tcp_rmem", "4096 262144 8388608"))
	if err != nil || ch.Before != "4096 131072 6291456" || ch.After != "4096 262144 8388608" {
		t.Fatalf("rmem: %+v %v", ch, err)
	}
	if err := undo(ctx); err != nil {
		t.Fatal(err)
	}

	// A sysctl that cannot be read is refused, and nothing is written.
	_, undo, err = h.Apply(ctx, Sysctl("net.ipv4.no_such_thing", "1"))
	if err == nil || undo != nil || !strings.Contains(err.Error(), "cannot be read") || !strings.Contains(err.Error(), "h1:") {
		t.Fatalf("unreadable sysctl: %v", err)
	}
	// One the host refuses to write: an error, the value untouched.
	os.WriteFile(cc+".ro", nil, 0o644)
	if _, _, err = h.Apply(ctx, Sysctl("net.ipv4.tcp_congestion_control", "bbr")); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("read-only sysctl: %v", err)
	}
	os.Remove(cc + ".ro")
	// One that accepts the write but keeps its value: reported.
	os.WriteFile(cc+".ignore", nil, 0o644)
	if _, _, err = h.Apply(ctx, Sysctl("net.ipv4.tcp_congestion_control", "bbr")); err == nil || !strings.Contains(err.Error(), `reads back "cubic"`) {
		t.Fatalf("sysctl that does not stick: %v", err)
	}
	os.Remove(cc + ".ignore")
	for _, bad := range []Setting{Sysctl("net.ipv4.x; rm -rf /", "1"), Sysctl("net.ipv4.tcp_rmem", "1\n2"), {Kind: "nvram", Key: "x", Value: "1"}} {
		if _, _, err := h.Apply(ctx, bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}

	// A route's rto_min.
	routes := filepath.Join(state, "routes")
	orig := "10.9.0.0/24 dev eth1 proto kernel scope link src 10.9.0.2 linkdown\ndefault via 192.0.2.1 dev eth0 rto_min lock 5ms\n"
	os.WriteFile(routes, []byte(orig), 0o644)
	ch, undo, err = h.Apply(ctx, RouteRTOMin("10.9.0.0/24", time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Before != Unset || ch.After != "1ms" || ch.Value != "1ms" {
		t.Fatalf("route change %+v", ch)
	}
	if got := readState(t, routes); !strings.Contains(got, "10.9.0.0/24 dev eth1 proto kernel scope link src 10.9.0.2 rto_min lock 1ms\n") {
		t.Fatalf("routes %q", got)
	}
	if err := undo(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readState(t, routes); !strings.Contains(got, "10.9.0.0/24 dev eth1 proto kernel scope link src 10.9.0.2\n") {
		t.Fatalf("routes after undo %q", got)
	}
	// A route that already has one is restored to it.
	ch, undo, err = h.Apply(ctx, RouteRTOMin("default", 2*time.Millisecond))
	if err != nil || ch.Before != "5ms" || ch.After != "2ms" {
		t.Fatalf("default route: %+v %v", ch, err)
	}
	if err := undo(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readState(t, routes); !strings.Contains(got, "default via 192.0.2.1 dev eth0 rto_min lock 5ms\n") {
		t.Fatalf("routes after undo %q", got)
	}
	// No such route: refused.
	if _, _, err := h.Apply(ctx, RouteRTOMin("10.99.0.0/16", time.Millisecond)); err == nil || !strings.Contains(err.Error(), "cannot be read") {
		t.Fatalf("missing route: %v", err)
	}
	if _, _, err := h.Apply(ctx, Setting{Kind: SettingRouteRTOMin, Key: "default", Value: "1500us"}); err == nil {
		t.Fatal("rto_min of 1.5 ms accepted (the kernel keeps whole milliseconds)")
	}
}

func TestParseRoute(t *testing.T) {
	r, err := parseRoute("10.9.0.0/24 dev lo scope link rto_min lock 1.5s")
	if err != nil || !r.has || r.rtoMin != 1500*time.Millisecond || r.value() != "1500ms" {
		t.Fatalf("%+v %v", r, err)
	}
	if got := r.spec([]string{"10.9.0.0/24", "table", "100"}, time.Millisecond); got != "10.9.0.0/24 dev lo scope link table 100 rto_min 1ms" {
		t.Fatalf("spec %q", got)
	}
	if got := r.spec(nil, 0); got != "10.9.0.0/24 dev lo scope link" {
		t.Fatalf("spec without rto_min %q", got)
	}
	if _, err := oneRoute("a dev x\nb dev y\n", "x"); err == nil {
		t.Fatal("two routes accepted")
	}
	if _, err := oneRoute("default proto static\n\tnexthop via 1.1.1.1 dev a weight 1\n", "default"); err == nil {
		t.Fatal("multipath route accepted")
	}
	if _, err := parseRoute("x dev a`b`"); err == nil {
		t.Fatal("odd word accepted")
	}
}

// netns is a network namespace held open by a sleeping process, with
// wrappers that run a command inside it.
func netns(t *testing.T, dir string) (sysctl, ip string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the real sysctl and ip run in a network namespace of the test, which needs root")
	}
	for _, c := range []string{"unshare", "nsenter", "sysctl", "ip"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s not found", c)
		}
	}
	hold := exec.Command("unshare", "-n", "sleep", "600")
	if err := hold.Start(); err != nil {
		t.Skipf("unshare -n: %v", err)
	}
	t.Cleanup(func() { hold.Process.Kill(); hold.Wait() })
	ns := "/proc/" + strconv.Itoa(hold.Process.Pid) + "/ns/net"
	self, _ := os.Readlink("/proc/self/ns/net")
	// Wait (asking) until the sleeper is in its own namespace.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if l, err := os.Readlink(ns); err == nil && l != self {
			break
		}
		if time.Now().After(deadline) {
			t.Skip("unshare -n did not make a network namespace")
		}
		time.Sleep(10 * time.Millisecond)
	}
	wrap := func(name, tool string) string {
		p := filepath.Join(dir, name)
		body := "#!/bin/sh\nexec nsenter --net=" + ns + " " + tool + " \"$@\"\n"
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sysctl, ip = wrap("ns-sysctl", "sysctl"), wrap("ns-ip", "ip")
	if out, err := exec.Command(ip, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Skipf("ip link set lo up in the namespace: %v %s", err, out)
	}
	if out, err := exec.Command(ip, "route", "add", "10.9.0.0/24", "dev", "lo").CombinedOutput(); err != nil {
		t.Skipf("ip route add in the namespace: %v %s", err, out)
	}
	return sysctl, ip
}

func TestSettingsWithRealToolsInNetns(t *testing.T) {
	d := sharedSSHD(t)
	sysctl, ip := netns(t, t.TempDir())
	h := d.open(t, "h1", func(o *Options) { o.Sysctl, o.IP = sysctl, ip })
	ctx := testCtx(t)
	hostCC, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")

	out, err := exec.Command(sysctl, "-n", "net.ipv4.tcp_congestion_control").Output()
	if err != nil {
		t.Fatal(err)
	}
	before := strings.TrimSpace(string(out))
	avail, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	want := ""
	for _, a := range strings.Fields(string(avail)) {
		if a != before {
			want = a
			break
		}
	}
	if want == "" {
		t.Skipf("only %q congestion control available", avail)
	}
	ch, undo, err := h.Apply(ctx, Sysctl("net.ipv4.tcp_congestion_control", want))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Before != before || ch.After != want {
		t.Fatalf("change %+v", ch)
	}
	if err := undo(ctx); err != nil {
		t.Fatal(err)
	}
	if out, _ := exec.Command(sysctl, "-n", "net.ipv4.tcp_congestion_control").Output(); strings.TrimSpace(string(out)) != before {
		t.Fatalf("after undo %q, want %q", out, before)
	}
	if after, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control"); string(after) != string(hostCC) {
		t.Fatalf("the machine's own setting changed: %q -> %q", hostCC, after)
	}

	ch, undo, err = h.Apply(ctx, RouteRTOMin("10.9.0.0/24", time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Before != Unset || ch.After != "1ms" {
		t.Fatalf("route change %+v", ch)
	}
	shown, _ := exec.Command(ip, "route", "show", "10.9.0.0/24").Output()
	if !strings.Contains(string(shown), "rto_min lock 1ms") {
		t.Fatalf("route %q", shown)
	}
	// Apply again from there and undo: back to 1ms, then to none.
	ch2, undo2, err := h.Apply(ctx, RouteRTOMin("10.9.0.0/24", 300*time.Millisecond))
	if err != nil || ch2.Before != "1ms" || ch2.After != "300ms" {
		t.Fatalf("second change %+v %v", ch2, err)
	}
	if err := undo2(ctx); err != nil {
		t.Fatal(err)
	}
	if err := undo(ctx); err != nil {
		t.Fatal(err)
	}
	shown, _ = exec.Command(ip, "route", "show", "10.9.0.0/24").Output()
	if strings.Contains(string(shown), "rto_min") || !strings.Contains(string(shown), "10.9.0.0/24 dev lo") {
		t.Fatalf("route after undo %q", shown)
	}
	var xe *ExitError
	if _, _, err := h.Apply(ctx, RouteRTOMin("10.77.0.0/24", time.Millisecond)); err == nil || errors.As(err, &xe) {
		t.Fatalf("missing route: %v (want a refusal, not a failed command)", err)
	}
}
