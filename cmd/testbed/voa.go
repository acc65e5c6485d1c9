package main

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"testbed/instruments/voa"
	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/simlab"
)

func (a *app) voaCmd() *cobra.Command {
	c := &cobra.Command{Use: "voa", Short: "Work with the lab's attenuators"}
	c.AddCommand(a.voaHomeCmd())
	return c
}

// homeFlags are voa home's flags.
type homeFlags struct {
	invFile string
	seed    uint64
	stay    bool
}

func (a *app) voaHomeCmd() *cobra.Command {
	var o homeFlags
	home := &cobra.Command{
		Use:   "home <voa>...",
		Short: "Run motor-driven attenuators back to their home sensor, then where they stood",
		Long: `home runs each named attenuator's stepper back to its home sensor, which resets its step
count (the OZ Optics DD-100-MC's H command), and reports how far the count was off there:
after a power cut, a move by hand or an Error-5 (home sensor), the count, and so every
attenuation the device reports, may be off. It then sets the attenuation read before
homing again, now counted from home (--stay: leave it at home, its minimum, 0 dB).
It leases the attenuators while it works. An attenuator without a home sensor (a
Keysight N77xx) is refused, and so is one whose inventory limits.min_db is above 0 dB:
homing passes the light unattenuated to what that limit protects. With no --inventory
it homes on the simulated lab.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.voaHome(cmd.Context(), o, args) },
	}
	home.Flags().StringVar(&o.invFile, "inventory", "", "lab inventory (default: the simulated lab)")
	home.Flags().Uint64Var(&o.seed, "seed", 1, "seed of the simulated lab")
	home.Flags().BoolVar(&o.stay, "stay", false, "leave the attenuator at home (0 dB) instead of setting it back")
	return home
}

// homeResult is one attenuator homed.
type homeResult struct {
	VOA string `json:"voa"`
	// DiffSteps is how far the step count was off at the home sensor.
	DiffSteps int `json:"diff_steps"`
	// BeforeDB is the attenuation read before homing (by the old count);
	// AfterDB the attenuation it stands at after, read back.
	BeforeDB float64 `json:"before_db"`
	AfterDB  float64 `json:"after_db"`
	Error    string  `json:"error,omitempty"`
}

// voaHome homes the named attenuators, leased while it works, on the
// lab's inventory or the simulated lab.
func (a *app) voaHome(ctx context.Context, o homeFlags, args []string) error {
	inv, closeLab, err := a.labInventory(o.invFile, o.seed, "homing its attenuators")
	if err != nil {
		return err
	}
	defer closeLab()
	devs, targets, err := homeTargets(inv, args)
	if err != nil {
		return err
	}
	release, err := a.leaseDevices(inv, "voa-home", "the attenuators", targets)
	if err != nil {
		return err
	}
	defer release()
	var out []homeResult
	failed := 0
	for _, d := range devs {
		r, err := homeOne(ctx, d, o.stay)
		if err != nil {
			return err
		}
		if r.Error != "" {
			failed++
		}
		out = append(out, r)
	}
	if err := a.printHome(out); err != nil {
		return err
	}
	if failed > 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("%d of %d attenuators not homed", failed, len(out))}
	}
	return nil
}

// labInventory loads the inventory file (or the configured one), or
// starts the simulated lab and returns its; close stops that lab.
func (a *app) labInventory(file string, seed uint64, doing string) (*inventory.Inventory, func(), error) {
	if file == "" {
		file = a.v.GetString("inventory") // TESTBED_INVENTORY or the config file
	}
	if file != "" {
		inv, err := checkedInventory(file)
		if err != nil {
			return nil, nil, err
		}
		return inv, func() {}, nil
	}
	lab, err := simlab.StartDefault(simlab.Options{Seed: seed, Log: a.logger()})
	if err != nil {
		return nil, nil, &orchestrator.InfraError{Op: "start the simulated lab", Err: err}
	}
	fmt.Fprintf(a.stderr, "simulated lab up: %s\n", doing)
	return lab.Inventory(), func() { lab.Close() }, nil
}

// checkedInventory loads an inventory file and checks it against this
// build's drivers before any device is opened: a kind or driver it does
// not have, an option key a driver does not take or a value not of its
// form is bad input at its line, as a run refuses it. Every command that
// opens the devices of an inventory file takes it through here.
func checkedInventory(file string) (*inventory.Inventory, error) {
	inv, err := inventory.Load(file)
	if err != nil {
		return nil, &orchestrator.InputError{Msg: err.Error()}
	}
	if err := orchestrator.CheckDrivers(inv); err != nil {
		return nil, err
	}
	return inv, nil
}

// leaseDevices leases targets of inv for a command's work (kind names
// the holder, what names them in an error), as the user running it, for
// at most an hour; release gives them back.
func (a *app) leaseDevices(inv *inventory.Inventory, kind, what string, targets []orchestrator.LeaseTarget) (release func(), err error) {
	owner := "unknown"
	if u, err := user.Current(); err == nil {
		owner = u.Username
	}
	leaser := orchestrator.NewLeaser(a.stateDir(), time.Hour, a.logger())
	leases, err := leaser.Acquire(inv.Name, owner, kind+"-"+fmt.Sprint(os.Getpid()), targets)
	if err != nil {
		return nil, &orchestrator.InfraError{Op: "lease " + what, Err: err}
	}
	return func() { leaser.Release(leases) }, nil
}

// homeTargets are the named devices, each an attenuator of the inventory
// whose driver can home it and whose limits allow it, and their leases.
func homeTargets(inv *inventory.Inventory, names []string) ([]*inventory.Device, []orchestrator.LeaseTarget, error) {
	var targets []orchestrator.LeaseTarget
	var devs []*inventory.Device
	for _, n := range names {
		d, ok := inv.Device(n)
		if !ok {
			return nil, nil, &orchestrator.InputError{Msg: fmt.Sprintf("%s: no device %q (attenuators: %s)", inv.Path, n, strings.Join(voaNames(inv), ", "))}
		}
		if d.Kind != voa.Kind {
			return nil, nil, &orchestrator.InputError{Msg: fmt.Sprintf("%s: device %s is a %s, not an attenuator", inv.Path, n, d.Kind)}
		}
		if d.Limits != nil && d.Limits.MinDB > 0 {
			return nil, nil, &orchestrator.InputError{Msg: inv.DeviceErrorf(d, "limits", "%s: homing runs the attenuator to 0 dB, below its limits.min_db %.2f dB: lower the limit for the homing, with what it protects disconnected", n, d.Limits.MinDB).Error()}
		}
		targets = append(targets, orchestrator.LeaseTarget{Device: n, Address: d.Address, Serial: d.Options["serial"]})
		devs = append(devs, d)
	}
	return devs, targets, nil
}

// homeOne homes one attenuator and, unless stay, sets it back to the
// attenuation read before; the device's errors are in the result, an
// error says its driver cannot home.
func homeOne(ctx context.Context, d *inventory.Device, stay bool) (homeResult, error) {
	r := homeResult{VOA: d.Name}
	od, err := orchestrator.OpenDevice(ctx, d, nil)
	if err != nil {
		r.Error = err.Error()
		return r, nil
	}
	defer closeDevice(od)
	h, ok := od.Driver.(voa.Homer)
	att, _ := od.Driver.(voa.Attenuator)
	if !ok || att == nil {
		return r, &orchestrator.InputError{Msg: fmt.Sprintf("%s: its driver %s has no home sensor to run to (only a motor-driven attenuator that counts steps, ozoptics-dd100, homes)", d.Name, d.Driver)}
	}
	r.Error = homeAndSetBack(ctx, d.Name, att, h, stay, &r)
	return r, nil
}

// homeAndSetBack reads, homes, sets back unless stay, and reads back,
// into r; it returns the first error's text.
func homeAndSetBack(ctx context.Context, name string, att voa.Attenuator, h voa.Homer, stay bool, r *homeResult) string {
	var err error
	if r.BeforeDB, err = att.Attenuation(ctx, 1); err != nil {
		return fmt.Sprintf("%s: read before homing: %v", name, err)
	}
	if r.DiffSteps, err = h.Home(ctx); err != nil {
		return fmt.Sprintf("%s: %v", name, err)
	}
	msg := ""
	if !stay {
		if err := att.SetAttenuation(ctx, 1, r.BeforeDB); err != nil {
			msg = fmt.Sprintf("%s: homed, then set back to %.2f dB: %v", name, r.BeforeDB, err)
		}
	}
	if r.AfterDB, err = att.Attenuation(ctx, 1); err != nil && msg == "" {
		msg = fmt.Sprintf("%s: read after homing: %v", name, err)
	}
	return msg
}

// printHome prints each attenuator's homing.
func (a *app) printHome(out []homeResult) error {
	if a.json() {
		return a.printJSON(out)
	}
	for _, r := range out {
		if r.Error != "" {
			fmt.Fprintf(a.stdout, "%s: FAILED: %s\n", r.VOA, r.Error)
			continue
		}
		fmt.Fprintf(a.stdout, "%s: homed, its count %d steps off; at %.2f dB (%.2f dB before)\n", r.VOA, r.DiffSteps, r.AfterDB, r.BeforeDB)
	}
	return nil
}

func voaNames(inv *inventory.Inventory) []string {
	var out []string
	for _, n := range inv.DeviceNames() {
		if d, _ := inv.Device(n); d.Kind == voa.Kind {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
