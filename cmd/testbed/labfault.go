package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"testbed/internal/readfile"
	"testbed/orchestrator"
	"testbed/simlab/wire"
)

// faultGrammar is the --fault grammar, for help texts and errors.
const faultGrammar = `<device>=<kind>, kind one of drop, delay:<duration>, garbage, error:<text>,
slip:<steps> (a DD-100's stepper loses that many steps on a motion), each
followed by :N (the next N requests, or a slip's motions, default 1) or
:always (every one until cleared)`

// controlComment begins the inventory-out line that holds the lab's fault
// control address.
const controlComment = "# Fault control: "

// faultFlag is one --fault or lab fault argument: device=spec.
type faultFlag struct {
	Device string
	Spec   wire.FaultSpec
}

func parseFaultFlag(s string) (faultFlag, error) {
	dev, spec, ok := strings.Cut(s, "=")
	if !ok || dev == "" {
		return faultFlag{}, fmt.Errorf("fault %q: expected %s", s, faultGrammar)
	}
	fs, err := wire.ParseFaultSpec(spec)
	if err != nil {
		return faultFlag{}, fmt.Errorf("%s: %w", dev, err)
	}
	return faultFlag{Device: dev, Spec: fs}, nil
}

// faultTarget is what the control endpoint changes: a lab's fault injectors.
type faultTarget interface {
	FaultDevices() []string
	Faults(device string) *wire.Faults
}

// faultRequest is the body of POST /faults.
type faultRequest struct {
	Device string `json:"device"`
	Fault  string `json:"fault"`
}

// pendingFaults lists every device's pending faults in the grammar.
func pendingFaults(t faultTarget) map[string][]string {
	out := map[string][]string{}
	for _, d := range t.FaultDevices() {
		list := []string{}
		for _, p := range t.Faults(d).Pending() {
			list = append(list, p.String())
		}
		out[d] = list
	}
	return out
}

// faultHandler serves the lab's fault control: GET /faults lists what is
// pending per device, POST /faults {"device":"voa1","fault":"drop:3"} adds
// a fault, DELETE /faults[?device=voa1] clears one device's or every
// device's faults.
func faultHandler(t faultTarget, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	known := func(d string) bool { return t.Faults(d) != nil }
	reply := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(v)
	}
	fail := func(w http.ResponseWriter, code int, format string, args ...any) {
		reply(w, code, map[string]string{"error": fmt.Sprintf(format, args...)})
	}
	mux.HandleFunc("GET /faults", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusOK, pendingFaults(t))
	})
	mux.HandleFunc("POST /faults", func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			fail(w, http.StatusUnsupportedMediaType, "POST /faults takes application/json, not %q", ct)
			return
		}
		var req faultRequest
		dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			fail(w, http.StatusBadRequest, "body: %v (expected {\"device\":\"voa1\",\"fault\":\"drop:3\"})", err)
			return
		}
		if !known(req.Device) {
			fail(w, http.StatusNotFound, "no device %q takes faults (devices: %s)", req.Device, strings.Join(t.FaultDevices(), ", "))
			return
		}
		fs, err := wire.ParseFaultSpec(req.Fault)
		if err != nil {
			fail(w, http.StatusBadRequest, "%s: %v", req.Device, err)
			return
		}
		if err := t.Faults(req.Device).Inject(fs); err != nil {
			fail(w, http.StatusBadRequest, "%s: %v", req.Device, err)
			return
		}
		log.Info("fault injected", "device", req.Device, "fault", fs.String())
		reply(w, http.StatusOK, pendingFaults(t))
	})
	mux.HandleFunc("DELETE /faults", func(w http.ResponseWriter, r *http.Request) {
		devs := t.FaultDevices()
		if d := r.URL.Query().Get("device"); d != "" {
			if !known(d) {
				fail(w, http.StatusNotFound, "no device %q takes faults (devices: %s)", d, strings.Join(devs, ", "))
				return
			}
			devs = []string{d}
		}
		for _, d := range devs {
			t.Faults(d).Reset()
		}
		log.Info("faults cleared", "devices", devs)
		reply(w, http.StatusOK, pendingFaults(t))
	})
	return mux
}

// serveFaultControl starts the fault control endpoint on a loopback
// address; stop shuts it down.
func serveFaultControl(addr string, t faultTarget, log *slog.Logger) (url string, stop func(), err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", nil, fmt.Errorf("--lab-control %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", nil, fmt.Errorf("--lab-control %q: the fault control binds a loopback address only (127.0.0.1:PORT)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("fault control: listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: faultHandler(t, log), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}, nil
}

// controlFromInventory reads the fault control address lab up wrote into
// its inventory's header.
func controlFromInventory(path string) (string, error) {
	data, err := readfile.Read(path, 16<<20) // an inventory (inventory.MaxFileBytes)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "#") {
			break
		}
		if rest, ok := strings.CutPrefix(line, controlComment); ok {
			return strings.Fields(rest)[0], nil
		}
	}
	return "", fmt.Errorf("%s has no %q line: not written by a running testbed lab up", path, strings.TrimSpace(controlComment))
}

func (a *app) labFaultCmd() *cobra.Command {
	var control, invFile string
	var clear bool
	c := &cobra.Command{
		Use:   "fault [<device>=<fault>]...",
		Short: "Change the injected faults of a running lab up",
		Long: `Add faults to the devices of a running "testbed lab up", clear them, or list
what is pending (no arguments). A fault is
  ` + faultGrammar + `.
The lab is reached through its fault control endpoint (an HTTP server on
127.0.0.1 that lab up prints and writes into its inventory's header):
--lab-control ADDR, or --inventory of the file lab up wrote (default:
TESTBED_INVENTORY or the config file's inventory).

The endpoint itself: GET /faults lists the pending faults per device;
POST /faults with {"device":"voa1","fault":"drop:3"} adds one;
DELETE /faults (?device=voa1 for one device) clears them.`,
		Example: `  testbed lab fault voa1=drop:3 --inventory lab.yaml
  testbed lab fault sw1=error:BF_INVALID_ARG:always tg1=delay:2s --lab-control 127.0.0.1:7411
  testbed lab fault --clear voa1 --inventory lab.yaml
  testbed lab fault --inventory lab.yaml --output json     # what is pending`,
		RunE: func(cmd *cobra.Command, args []string) error { return a.labFault(cmd, control, invFile, clear, args) },
	}
	c.Flags().StringVar(&control, "lab-control", "", "the running lab's fault control address (lab up prints it)")
	c.Flags().StringVar(&invFile, "inventory", "", "the inventory lab up wrote (its header holds the control address)")
	c.Flags().BoolVar(&clear, "clear", false, "clear the faults of the named devices (all devices when none is named)")
	return c
}

// labFault changes or lists the faults of the lab whose control address
// is given, or written in the inventory's header.
func (a *app) labFault(cmd *cobra.Command, control, invFile string, clear bool, args []string) error {
	base, err := a.labControlBase(control, invFile)
	if err != nil {
		return err
	}
	var faults []faultFlag
	if !clear {
		for _, s := range args {
			f, err := parseFaultFlag(s)
			if err != nil {
				return &orchestrator.InputError{Msg: err.Error()}
			}
			faults = append(faults, f)
		}
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
	defer cancel()
	fc := &faultControl{base: base}
	switch {
	case clear && len(args) == 0:
		err = fc.do(ctx, http.MethodDelete, "/faults", nil)
	case clear:
		for _, d := range args {
			if err = fc.do(ctx, http.MethodDelete, "/faults?device="+url.QueryEscape(d), nil); err != nil {
				break
			}
		}
	case len(faults) == 0:
		err = fc.do(ctx, http.MethodGet, "/faults", nil)
	default:
		for _, f := range faults {
			if err = fc.do(ctx, http.MethodPost, "/faults", faultRequest{Device: f.Device, Fault: f.Spec.String()}); err != nil {
				break
			}
		}
	}
	if err != nil {
		return err
	}
	if a.json() {
		return a.printJSON(map[string]any{"pending": fc.pending})
	}
	for _, d := range sortedKeys(fc.pending) {
		if len(fc.pending[d]) > 0 {
			fmt.Fprintf(a.stdout, "%s\t%s\n", d, strings.Join(fc.pending[d], " "))
		}
	}
	return nil
}

// labControlBase is the lab's fault control URL: --lab-control, or the
// address in the header of the inventory lab up wrote (--inventory,
// TESTBED_INVENTORY or the config file's).
func (a *app) labControlBase(control, invFile string) (string, error) {
	base := control
	if base == "" && invFile == "" {
		invFile = a.v.GetString("inventory") // TESTBED_INVENTORY or the config file
	}
	if base == "" && invFile != "" {
		var err error
		if base, err = controlFromInventory(invFile); err != nil {
			return "", &orchestrator.InputError{Msg: err.Error()}
		}
	}
	if base == "" {
		return "", &orchestrator.InputError{Msg: "lab fault needs the running lab's control address: --lab-control 127.0.0.1:PORT, or --inventory of the file lab up wrote"}
	}
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return base, nil
}

// faultControl is a client of a running lab's fault control endpoint;
// pending is the faults its last reply listed.
type faultControl struct {
	base    string
	pending map[string][]string
}

// do sends one request (body as JSON) and reads the pending faults the
// endpoint answers with.
func (fc *faultControl) do(ctx context.Context, method, path string, body any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, fc.base+path, rd)
	if err != nil {
		return &orchestrator.InputError{Msg: fmt.Sprintf("lab control %s: %v", fc.base, err)}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return &orchestrator.InfraError{Op: "reach the lab's fault control at " + fc.base, Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return &orchestrator.InfraError{Op: "read the lab's fault control reply", Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		json.Unmarshal(data, &e)
		if e.Error == "" {
			e.Error = strings.TrimSpace(string(data))
		}
		return &orchestrator.InputError{Msg: fmt.Sprintf("lab fault: %s", e.Error)}
	}
	fc.pending = nil
	if err := json.Unmarshal(data, &fc.pending); err != nil {
		return &orchestrator.InfraError{Op: "read the lab's fault control reply", Err: err}
	}
	return nil
}

func sortedKeys(m map[string][]string) []string {
	return slices.Sorted(maps.Keys(m))
}
