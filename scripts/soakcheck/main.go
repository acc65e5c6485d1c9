// Command soakcheck reads the state of every device of a lab that a recipe
// changes and undoes: VOA attenuations and shutters, traffic generator
// flows and optical circuit switch circuits and schedule asked on the
// instruments' own wire protocols (SCPI over raw TCP, the DD-100's serial
// line, REST: direct.go), Tofino protection entries and thresholds through
// the switch agent, host congestion control and REACToR classes through
// the hostagent. scripts/soak.sh uses it before a soak
// ("snapshot") and after ("compare"): every device must be back at its
// safe state (a VOA with a safe_state) or at the state found before.
//
//	soakcheck snapshot --inventory lab.yaml > before.json
//	soakcheck compare --inventory lab.yaml before.json
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"testbed/dut/host"
	"testbed/dut/tofino"
	"testbed/hostagent"
	"testbed/instruments/ocs"
	"testbed/instruments/trafficgen"
	"testbed/instruments/voa"
	"testbed/inventory"
	"testbed/orchestrator"
	lg "testbed/p4/linkguardian"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	invPath := fs.String("inventory", "lab.yaml", "the lab's inventory")
	only := fs.String("devices", "", "read only these devices (comma-separated)")
	fs.Parse(os.Args[2:])
	inv, err := inventory.Load(*invPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soakcheck:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var names []string
	if *only != "" {
		names = strings.Split(*only, ",")
	}
	now := read(ctx, inv, names)
	switch os.Args[1] {
	case "snapshot":
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(now)
	case "compare":
		if fs.NArg() != 1 {
			usage()
		}
		b, err := os.ReadFile(fs.Arg(0))
		if err != nil {
			fmt.Fprintln(os.Stderr, "soakcheck:", err)
			os.Exit(2)
		}
		var before map[string]string
		if err := json.Unmarshal(b, &before); err != nil {
			fmt.Fprintf(os.Stderr, "soakcheck: %s: %v\n", fs.Arg(0), err)
			os.Exit(2)
		}
		os.Exit(compare(inv, before, now))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: soakcheck snapshot|compare --inventory lab.yaml [before.json]")
	os.Exit(2)
}

// compare prints one line per device property and returns 0 when every
// device is restored, 1 otherwise.
func compare(inv *inventory.Inventory, before, now map[string]string) int {
	var keys []string
	for k := range before {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bad := map[string]bool{}
	devices := map[string]bool{}
	for _, k := range keys {
		dev, prop, _ := strings.Cut(k, " ")
		devices[dev] = true
		want := before[k]
		if d, ok := inv.Device(dev); ok && d.Kind == "voa" && strings.HasPrefix(prop, "channel") {
			if r := orchestrator.RestingAttenuation(d); r != nil {
				want = fmt.Sprintf("%.2f", *r)
			}
		}
		if now[k] != want {
			bad[dev] = true
			fmt.Printf("NOT RESTORED %s: %s, want %s\n", k, now[k], want)
		}
	}
	fmt.Printf("devices checked: %d, restored: %d, not restored: %d\n", len(devices), len(devices)-len(bad), len(bad))
	if len(bad) > 0 {
		return 1
	}
	return 0
}

// read reads every device's state, "device property" -> value.
func read(ctx context.Context, inv *inventory.Inventory, names []string) map[string]string {
	if names == nil {
		names = inv.DeviceNames()
	}
	out := map[string]string{}
	var mu sync.Mutex
	set := func(dev, prop, v string) {
		mu.Lock()
		out[dev+" "+prop] = v
		mu.Unlock()
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 6)
	for _, name := range names {
		d, ok := inv.Device(name)
		if !ok {
			set(name, "open", "no such device")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			if readDirect(dctx, d, func(p, v string) { set(name, p, v) }) {
				return
			}
			od, err := orchestrator.OpenDevice(dctx, d, nil)
			if err != nil {
				set(name, "open", "error: "+err.Error())
				return
			}
			defer closeDriver(od)
			readDevice(dctx, d, od.Driver, func(p, v string) { set(name, p, v) })
		}()
	}
	wg.Wait()
	return out
}

func closeDriver(od *orchestrator.OpenedDevice) {
	if c, ok := od.Driver.(interface{ Close() error }); ok {
		c.Close()
	}
}

func errText(err error) string { return "error" }

func readDevice(ctx context.Context, d *inventory.Device, drv any, set func(prop, v string)) {
	switch x := drv.(type) {
	case voa.Attenuator:
		n := max(d.Channels, 1)
		for ch := 1; ch <= n; ch++ {
			v, err := x.Attenuation(ctx, ch)
			if err != nil {
				set(fmt.Sprintf("channel%d", ch), errText(err))
				continue
			}
			set(fmt.Sprintf("channel%d", ch), fmt.Sprintf("%.2f", v))
		}
	case trafficgen.Generator:
		fm, err := x.FlowMetrics(ctx)
		if err != nil {
			set("flows", errText(err))
			return
		}
		started := 0
		for _, f := range fm {
			if f.Transmit == trafficgen.StateStarted {
				started++
			}
		}
		set("flows_transmitting", fmt.Sprint(started))
	case *tofino.Switch:
		p, err := x.Program(ctx)
		if err != nil {
			p = errText(err)
		}
		set("program", p)
		for _, t := range []string{lg.TableLinkProtect, lg.TableRetxMcast} {
			es, err := x.Entries(ctx, t)
			if err != nil {
				set(t, errText(err))
				continue
			}
			b, _ := json.Marshal(es)
			set(t, string(b))
		}
		for _, r := range []string{lg.RegPauseThreshold, lg.RegResumeThreshold} {
			v, err := x.ReadRegister(ctx, r, 0)
			if err != nil {
				set(r, errText(err))
				continue
			}
			set(r, fmt.Sprint(v))
		}
	case *host.Host:
		v, err := x.Current(ctx, host.Sysctl("net.ipv4.tcp_congestion_control", ""))
		if err != nil {
			v = errText(err)
		}
		set("tcp_congestion_control", v)
		a, _, err := x.EnsureAgent(ctx)
		if err != nil {
			set("reactor", errText(err))
			return
		}
		st, err := hostagent.NewClient(a.Client, a.BaseURL).Reactor(ctx)
		if err != nil || !st.Available {
			set("reactor", "unavailable")
			return
		}
		set("reactor", fmt.Sprintf("setup %v, %d classes", st.Setup != nil, len(st.Classes)))
	case ocs.CircuitSwitch:
		c, err := x.Configuration(ctx)
		if err != nil {
			set("circuits", errText(err))
		} else {
			set("circuits", fmt.Sprint(len(c)))
		}
		if s, err := ocs.AsScheduler(x); err == nil {
			st, err := s.ScheduleStatus(ctx)
			if err != nil {
				set("schedule", errText(err))
			} else if st.State == "running" || st.State == "armed" {
				set("schedule", "running")
			} else {
				set("schedule", "stopped") // idle or loaded: nothing switches
			}
		}
	}
}
