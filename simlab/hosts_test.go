package simlab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"testbed/dut/host"
	"testbed/dut/tofino"
	"testbed/hostagent"
	"testbed/inventory"
	lg "testbed/p4/linkguardian"
	"testbed/transport"
)

func hostTestCtx(t *testing.T) context.Context {
	// The simulated hosts run trials in simulated time: a wall deadline
	// here only guards against a hang, so it is the test binary's own
	// (-timeout), less a margin to report the failure rather than panic.
	// A fixed minute failed on a loaded machine while the run progressed.
	ctx, cancel := context.WithCancel(context.Background())
	if d, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), d.Add(-15*time.Second))
	}
	t.Cleanup(cancel)
	return ctx
}

// openSimHost connects the host driver to a simulated host as the
// orchestrator does, from the lab's inventory entry.
func openSimHost(t *testing.T, lab *Lab, name string) (*host.Host, *inventory.Device) {
	t.Helper()
	d, ok := lab.Inventory().Device(name)
	if !ok {
		t.Fatalf("no %s in the inventory", name)
	}
	h, err := host.Open(hostTestCtx(t), d.Address, host.Options{Name: name,
		SSH: transport.SSHOptions{KeyFile: d.Credentials.KeyFile, KnownHosts: d.Options["known_hosts"]}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, d
}

func startLab(t *testing.T, seed uint64) *Lab {
	t.Helper()
	lab, err := StartDefault(Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	return lab
}

func TestSimulatedHostIdentityRunAndUpload(t *testing.T) {
	lab := startLab(t, 31)
	ctx := hostTestCtx(t)
	h, _ := openSimHost(t, lab, "h1")
	id, err := h.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(id.Firmware, "x86_64") || !strings.Contains(id.Model, "h1") || id.Serial == "" {
		t.Errorf("identity %+v", id)
	}
	r, err := h.Run(ctx, "uname -sm")
	if err != nil || r.Stdout != "Linux x86_64\n" {
		t.Errorf("uname -sm: %q, %v", r.Stdout, err)
	}
	r, err = h.Run(ctx, "cat /proc/sys/net/ipv4/tcp_early_retrans")
	if err != nil || r.Stdout != "3\n" {
		t.Errorf("cat tcp_early_retrans: %q, %v", r.Stdout, err)
	}
	// Anything else fails as a missing command would, saying what runs.
	var xe *host.ExitError
	_, err = h.Run(ctx, "ping -c 1 10.0.0.2")
	if !errors.As(err, &xe) || xe.Status != 127 || !strings.Contains(xe.Stderr, "runs only") {
		t.Errorf("an unknown command: %v", err)
	}
	_, err = h.Run(ctx, "echo a; rm -rf /")
	if !errors.As(err, &xe) || xe.Status != 127 {
		t.Errorf("shell syntax: %v", err)
	}
	// A command past its deadline is killed (137).
	sctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	if r, err := h.Run(sctx, "sleep 30"); err == nil {
		t.Errorf("sleep 30 within 1.5 s: %+v", r)
	}

	data := []byte("it's a file\nwith 'quotes'\n")
	sum, err := h.Upload(ctx, "dir/it's.txt", data, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	got, mode, ok := lab.Host("h1").File("/home/testbed/dir/it's.txt")
	if !ok || string(got) != string(data) || mode != 0o640 || sum != hex.EncodeToString(want[:]) {
		t.Errorf("uploaded file: %q mode %v (found %v), sha %s", got, mode, ok, sum)
	}
	if _, _, ok := lab.Host("h2").File("/home/testbed/dir/it's.txt"); ok {
		t.Error("h2 has h1's file")
	}
}

func TestSimulatedHostRunsTheUploadedAgentInProcess(t *testing.T) {
	lab := startLab(t, 32)
	ctx := hostTestCtx(t)
	h, d := openSimHost(t, lab, "h1")
	// No agent yet: starting one reports it died, with its log.
	if _, err := h.StartAgent(ctx); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("start without a binary: %v", err)
	}
	bin := host.AgentBinary{Path: d.Options["hostagent_amd64"], Version: hostagent.Version}
	in, err := h.InstallAgent(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	if !in.Replaced || in.Version != hostagent.Version || in.Machine != "x86_64" || in.GOARCH != "amd64" {
		t.Errorf("install: %+v", in)
	}
	again, err := h.InstallAgent(ctx, bin)
	if err != nil || again.Replaced {
		t.Errorf("second install: %+v, %v", again, err)
	}
	a, err := h.StartAgent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Started || !strings.HasPrefix(a.Addr, "127.0.0.1:") || !lab.Host("h1").AgentRunning() {
		t.Errorf("agent %+v", a)
	}
	c := hostagent.NewClient(a.Client, a.BaseURL)
	v, err := c.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v.Version != hostagent.Version || v.Hostname != "h1" || !v.Capabilities.FCT || !v.Capabilities.RDMAWriteLat {
		t.Errorf("version %+v", v)
	}
	// The agent serves only the driver's token, which agent-start left in
	// a 0600 file; it refuses text/plain bodies and other origins.
	tok, mode, ok := lab.Host("h1").File("/home/testbed/.testbed/hostagent/token")
	if !ok || mode != 0o600 || len(strings.TrimSpace(string(tok))) != 64 {
		t.Fatalf("token file: %d bytes, mode %v, found %v", len(tok), mode, ok)
	}
	bearer := "Bearer " + strings.TrimSpace(string(tok))
	for _, r := range []struct {
		method, auth, origin, ctype string
		status                      int
	}{
		{"GET", "", "", "", 401},
		{"GET", "Bearer " + strings.Repeat("f", 64), "", "", 401},
		{"GET", bearer, "", "", 200},
		{"GET", bearer, "http://attacker.example", "", 403},
		{"POST", bearer, "", "text/plain", 415},
		{"POST", bearer, "", "application/json", 201},
	} {
		if got := rawAgentStatus(t, a, r.method, r.auth, r.origin, r.ctype); got != r.status {
			t.Errorf("%s auth=%t origin=%q type=%q: HTTP %d, want %d", r.method, r.auth != "", r.origin, r.ctype, got, r.status)
		}
	}
	// The agent is found running by a second driver, which does not stop it.
	h2, _ := openSimHost(t, lab, "h1")
	a2, err := h2.StartAgent(ctx)
	if err != nil || a2.Started || a2.PID != a.PID {
		t.Errorf("second driver: %+v, %v", a2, err)
	}
	// The second driver's token replaced the first's.
	if _, err := c.Version(ctx); err == nil {
		t.Error("the first driver's token still works after a second driver started the agent")
	}
	if _, err := hostagent.NewClient(a2.Client, a2.BaseURL).Version(ctx); err != nil {
		t.Errorf("second driver: %v", err)
	}
	h2.Close()
	if !lab.Host("h1").AgentRunning() {
		t.Error("the second driver stopped an agent it did not start")
	}
	if err := h.StopAgent(ctx); err != nil {
		t.Fatal(err)
	}
	if lab.Host("h1").AgentRunning() {
		t.Error("the agent still runs after stop")
	}
}

func TestSimulatedHostSettingsAndUndo(t *testing.T) {
	lab := startLab(t, 33)
	ctx := hostTestCtx(t)
	h, _ := openSimHost(t, lab, "h2")
	sim := lab.Host("h2")

	ch, undo, err := h.Apply(ctx, host.Sysctl("net.ipv4.tcp_congestion_control", "dctcp"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := sim.Sysctl("net.ipv4.tcp_congestion_control"); v != "dctcp" || ch.Before != "cubic" || ch.After != "dctcp" {
		t.Errorf("after: %s, change %+v", v, ch)
	}
	if err := undo(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := sim.Sysctl("net.ipv4.tcp_congestion_control"); v != "cubic" {
		t.Errorf("after undo: %s", v)
	}
	if _, _, err := h.Apply(ctx, host.Sysctl("net.ipv4.tcp_congestion_control", "bbr9")); err == nil {
		t.Error("an unavailable congestion control was accepted")
	}
	if _, _, err := h.Apply(ctx, host.Sysctl("net.ipv4.tcp_early_retrans", "9")); err == nil {
		t.Error("tcp_early_retrans=9 was accepted")
	}
	if _, _, err := h.Apply(ctx, host.Sysctl("net.ipv4.no_such_thing", "1")); err == nil || !strings.Contains(err.Error(), "cannot be read") {
		t.Errorf("unknown sysctl: %v", err)
	}

	before := sim.Routes()
	ch, undo, err = h.Apply(ctx, host.RouteRTOMin("10.0.0.0/24", time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Before != host.Unset || ch.After != "1ms" {
		t.Errorf("change %+v", ch)
	}
	if !slices.Contains(sim.Routes(), "10.0.0.0/24 dev eth1 proto kernel scope link src 10.0.0.2 rto_min lock 1ms") {
		t.Errorf("routes after: %q", sim.Routes())
	}
	if d := sim.RTOMinTo(netip.MustParseAddr("10.0.0.1")); d != time.Millisecond {
		t.Errorf("the route's rto_min as the transport sees it: %v", d)
	}
	if err := undo(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sim.Routes(); !slices.Equal(got, before) {
		t.Errorf("routes after undo: %q, before %q", got, before)
	}
	if d := sim.RTOMinTo(netip.MustParseAddr("10.0.0.1")); d != 200*time.Millisecond {
		t.Errorf("without rto_min on the route: %v, want the kernel's 200ms", d)
	}
	// The default route carries a metric: it is matched and kept.
	if _, undo, err := h.Apply(ctx, host.RouteRTOMin("default", 5*time.Millisecond)); err != nil {
		t.Errorf("default route: %v", err)
	} else if err := undo(ctx); err != nil {
		t.Error(err)
	}
	if _, _, err := h.Apply(ctx, host.RouteRTOMin("10.9.0.0/16", time.Millisecond)); err == nil || !strings.Contains(err.Error(), "no route matches") {
		t.Errorf("a route that does not exist: %v", err)
	}
}

// openSimSwitch connects the switch driver to a simulated switch.
func openSimSwitch(t *testing.T, lab *Lab, name string) *tofino.Switch {
	t.Helper()
	d, _ := lab.Inventory().Device(name)
	s, err := tofino.Open(hostTestCtx(t), d.Address, tofino.Options{SSH: transport.SSHOptions{KeyFile: d.Credentials.KeyFile, KnownHosts: d.Options["known_hosts"]}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// setFibreLoss moves voa3's channel on lg100 until frames of frameBytes
// are lost with probability close to p, as read from the fibre's optics.
func setFibreLoss(t *testing.T, lab *Lab, p float64, frameBytes int) float64 {
	t.Helper()
	f, _ := lab.World().Fibre(hostFibre)
	lossAt := func(db float64) float64 {
		f.VOA.SetAttenuation(db)
		time.Sleep(f.VOA.SettleTime())
		return f.FrameLossProbability(frameBytes)
	}
	lo, hi := 0.0, 30.0
	for range 40 {
		mid := (lo + hi) / 2
		if lossAt(mid) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lossAt(hi)
}

// Traffic from h1 to h2 crosses lg100 with its loss and its protection:
// the FCTs the real hostagent records come from the transport model in
// simulated time. Without protection a lost request waits for the
// retransmission timer, whose floor is the route's rto_min; LinkGuardian
// repairs the loss on the link, below the transport.
func TestSimulatedHostsFCTAcrossTheProtectedLink(t *testing.T) {
	lab, ctx, sw1, _ := startLG100(t, 34)
	agents := map[string]*hostagent.Client{}
	drivers := map[string]*host.Host{}
	for _, name := range []string{"h1", "h2"} {
		h, d := openSimHost(t, lab, name)
		if _, err := h.InstallAgent(ctx, host.AgentBinary{Path: d.Options["hostagent_amd64"]}); err != nil {
			t.Fatal(err)
		}
		a, err := h.StartAgent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		agents[name], drivers[name] = hostagent.NewClient(a.Client, a.BaseURL), h
	}
	srv, err := agents["h2"].StartFCTServer(ctx, hostagent.FCTServerRequest{Listen: "10.0.0.2:0"})
	if err != nil {
		t.Fatal(err)
	}
	target := "10.0.0.2:" + strconv.Itoa(srv.Port)
	// 5e-3 over 4,000 trials a mode: as many trials lose a frame (some 24)
	// as 1e-3 gave over 20,000, a fifth of the trials for the same tails.
	const trials, lossRate = 4_000, 5e-3
	run := func(what string) hostagent.FCTSummary {
		t.Helper()
		t0 := lab.Host("h1").Now()
		st, err := agents["h1"].RunFCT(ctx, hostagent.FCTRunRequest{Target: target, Trials: trials, Warmup: 10})
		if err != nil || st.State != hostagent.StateDone {
			t.Fatalf("%s: %+v, %v", what, st, err)
		}
		s := *st.Summary
		t.Logf("%-22s p50 %6.1f us  p99 %6.1f us  p99.9 %8.1f us  p99.99 %9.1f us  max %9.1f us  retransmitting trials %d",
			what, micros(s.P50NS), micros(s.P99NS), micros(s.P999NS), micros(s.P9999NS), micros(s.MaxNS), s.Retrans.Trials)
		if s.Retrans.Status != "known" {
			t.Errorf("%s: retransmissions %+v, want known from the simulated connection", what, s.Retrans)
		}
		// The simulated clock moved by the trials' FCTs (and the warm-up's).
		if moved := lab.Host("h1").Now() - t0; moved < time.Duration(s.MeanNS*trials) {
			t.Errorf("%s: h1's clock moved %v for %d trials of mean %v", what, moved, trials, time.Duration(s.MeanNS))
		}
		return s
	}
	if _, _, err := drivers["h1"].Apply(ctx, host.RouteRTOMin("10.0.0.0/24", time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	lossless := run("lossless")
	loss := setFibreLoss(t, lab, lossRate, 143+70)
	t.Logf("fibre loss %.3g for 213 B frames", loss)
	off := run("off, rto_min 1ms")
	protect := func(blocking int64) {
		if err := sw1.AddEntry(ctx, lg.TableRetxMcast, tofino.Entry{Key: map[string]int64{"egress_port": 136}, Action: lg.ActionRetxCopies, Data: map[string]int64{"num_copies": 2}}); err != nil {
			t.Fatal(err)
		}
		if err := sw1.AddEntry(ctx, lg.TableLinkProtect, tofino.Entry{Key: map[string]int64{"egress_port": 136}, Action: lg.ActionProtect, Data: map[string]int64{"dummy_pkt_max_count": 4, "blocking_mode": blocking}}); err != nil {
			t.Fatal(err)
		}
	}
	unprotect := func() {
		for _, tb := range []string{lg.TableRetxMcast, lg.TableLinkProtect} {
			if err := sw1.DeleteEntry(ctx, tb, map[string]int64{"egress_port": 136}); err != nil {
				t.Fatal(err)
			}
		}
	}
	protect(1)
	ordered := run("linkguardian")
	unprotect()
	protect(0)
	nb := run("linkguardian-nb")
	unprotect()

	if lossless.Retrans.Trials != 0 || off.Retrans.Trials == 0 {
		t.Errorf("retransmitting trials: lossless %d, off %d", lossless.Retrans.Trials, off.Retrans.Trials)
	}
	// A loss without protection costs a retransmission timeout: the slow
	// trials take at least rto_min, orders of magnitude above a round trip.
	if off.MaxNS < int64(time.Millisecond) || off.P9999NS < 10*lossless.P9999NS {
		t.Errorf("off: max %v, p99.99 %v against lossless p99.99 %v", time.Duration(off.MaxNS), time.Duration(off.P9999NS), time.Duration(lossless.P9999NS))
	}
	for name, s := range map[string]hostagent.FCTSummary{"linkguardian": ordered, "linkguardian-nb": nb} {
		if s.Retrans.Trials != 0 || s.P9999NS > 2*lossless.P9999NS || s.P50NS > 2*lossless.P50NS || 10*s.P9999NS > off.P9999NS {
			t.Errorf("%s: p50 %v p99.99 %v, %d retransmitting trials; lossless p50 %v p99.99 %v; off p99.99 %v", name,
				time.Duration(s.P50NS), time.Duration(s.P9999NS), s.Retrans.Trials, time.Duration(lossless.P50NS), time.Duration(lossless.P9999NS), time.Duration(off.P9999NS))
		}
	}
	// The route's rto_min is the model's: back to the kernel's 200 ms, a
	// lost request waits about that long.
	if _, _, err := drivers["h1"].Apply(ctx, host.RouteRTOMin("10.0.0.0/24", 200*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	slow := run("off, rto_min 200ms")
	if slow.MaxNS < int64(150*time.Millisecond) || slow.MaxNS < 50*off.MaxNS/2 {
		t.Errorf("with rto_min 200ms the slowest trial took %v (with 1ms: %v)", time.Duration(slow.MaxNS), time.Duration(off.MaxNS))
	}
}

func micros(ns int64) float64 { return float64(ns) / 1e3 }

// rawAgentStatus sends one request to the agent through the driver's SSH
// connection with the given headers (none when empty): GET /v1/version, or
// POST /v1/fct/server with a JSON body.
func rawAgentStatus(t *testing.T, a *host.Agent, method, auth, origin, ctype string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{DialContext: a.DialContext}}
	defer hc.CloseIdleConnections()
	path, body := "/v1/version", io.Reader(nil)
	if method == "POST" {
		path, body = "/v1/fct/server", strings.NewReader(`{"listen":"10.0.0.1:0"}`)
	}
	req, _ := http.NewRequestWithContext(ctx, method, a.BaseURL+path, body)
	for k, v := range map[string]string{"Authorization": auth, "Origin": origin, "Content-Type": ctype} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// startLG100 starts the default bench with its fibres lit (the attenuators
// power up with their shutters closed, and these tests drive the switches
// without a recipe), sw1 and sw2 running LinkGuardian's sender and
// receiver with lg100's port (136) added at 100G and up.
func startLG100(t *testing.T, seed uint64) (*Lab, context.Context, *tofino.Switch, *tofino.Switch) {
	t.Helper()
	return startLG(t, seed, 100)
}

// startLG is startLG100 with the link's ports at gbps.
func startLG(t *testing.T, seed uint64, gbps int) (*Lab, context.Context, *tofino.Switch, *tofino.Switch) {
	t.Helper()
	lab := startLab(t, seed)
	for _, n := range []string{"voa1", "voa3"} {
		if v, ok := lab.World().VOA(n); ok {
			for _, ch := range v.Channels {
				ch.SetShutter(true)
			}
		}
	}
	ctx := hostTestCtx(t)
	sw1, sw2 := openSimSwitch(t, lab, "sw1"), openSimSwitch(t, lab, "sw2")
	for _, s := range []struct {
		sw   *tofino.Switch
		prog string
	}{{sw1, lg.ProgramSender}, {sw2, lg.ProgramReceiver}} {
		if err := s.sw.StartSwitchd(ctx, s.prog); err != nil {
			t.Fatal(err)
		}
		if err := s.sw.AddPort(ctx, 136, gbps, "none"); err != nil {
			t.Fatal(err)
		}
	}
	for _, sw := range []*tofino.Switch{sw1, sw2} {
		if err := sw.WaitPortUp(ctx, 136); err != nil {
			t.Fatal(err)
		}
	}
	return lab, ctx, sw1, sw2
}
