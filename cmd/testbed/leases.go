package main

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/spf13/cobra"

	"testbed/inventory"
	"testbed/orchestrator"
)

// leaseStore is where this invocation's leases live: --leases (or
// TESTBED_LEASES, or leases: in the config file) naming etcd, else lease
// files under the state directory.
func (a *app) leaseStore(ctx context.Context) (orchestrator.LeaseStore, error) {
	spec := a.v.GetString("leases")
	if spec == "" || spec == "file" {
		return &orchestrator.FileLeases{L: orchestrator.NewLeaser(a.stateDir(), 0, a.logger())}, nil
	}
	cfg, err := orchestrator.ParseLeasesURL(spec)
	if err != nil {
		return nil, err
	}
	if c := a.v.GetString("leases_cert"); c != "" {
		cfg.CertFile, cfg.TLS = c, true
	}
	if k := a.v.GetString("leases_key"); k != "" {
		cfg.KeyFile = k
	}
	if ca := a.v.GetString("leases_ca"); ca != "" {
		cfg.CAFile, cfg.TLS = ca, true
	}
	ttl := a.v.GetDuration("lease_ttl")
	st, err := orchestrator.NewEtcdLeases(ctx, cfg, ttl, a.logger())
	if err != nil {
		return nil, &orchestrator.InfraError{Op: "reach the lease store", Err: err}
	}
	return st, nil
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
}

// printLeaseWait says, before a run queues, who holds what it waits for.
func (a *app) printLeaseWait(prefix string) func(orchestrator.Lease, int) {
	return func(h orchestrator.Lease, place int) {
		fmt.Fprintf(a.stderr, "%swaiting for %s (%s): held by %s (pid %d on %s, run %s) since %s; place %d in its queue\n",
			prefixed(prefix), h.Device, h.Key, h.Owner, h.PID, h.Host, h.RunID, h.Start.Format(time.RFC3339), place)
	}
}

func (a *app) labLeasesCmd() *cobra.Command {
	var invFile string
	c := &cobra.Command{
		Use:   "leases",
		Short: "List who holds the lab's devices and who waits for them",
		Long: `List the device leases of the lease store (--leases etcd://..., else the lease
files of the state directory): per physical device, its holder (user, host,
pid, run id, since, expiry) and, on etcd, the runs waiting for it in their
order of arrival. With --inventory only that lab's devices are listed, by
their names there.`,
		Example: `  testbed lab leases
  testbed lab leases --inventory lab.yaml --leases etcd://etcd1:2379,etcd2:2379,etcd3:2379/lab-a
  TESTBED_LEASES=etcd://etcd1:2379/lab-a testbed lab leases --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			store, err := a.leaseStore(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			st, err := store.List(ctx)
			if err != nil {
				return &orchestrator.InfraError{Op: "list leases", Err: err}
			}
			path := invFile
			if path == "" {
				path = a.v.GetString("inventory")
			}
			if path != "" {
				inv, err := inventory.Load(path)
				if err != nil {
					return &orchestrator.InputError{Msg: err.Error()}
				}
				names := map[string]string{}
				for _, n := range inv.DeviceNames() {
					d, _ := inv.Device(n)
					names[orchestrator.NormalizeAddress(d.Address)] = n
					if s := d.Options["serial"]; s != "" {
						names[orchestrator.DeviceKey("", s)] = n
					}
				}
				var mine []orchestrator.LeaseStatus
				for _, s := range st {
					if n, ok := names[s.Key]; ok {
						if s.Holder != nil {
							h := *s.Holder
							h.Device = n
							s.Holder = &h
						}
						mine = append(mine, s)
					}
				}
				st = mine
			}
			if st == nil {
				st = []orchestrator.LeaseStatus{}
			}
			if a.json() {
				return a.printJSON(map[string]any{"leases": st})
			}
			if len(st) == 0 {
				fmt.Fprintln(a.stdout, "no device is leased")
			}
			for _, s := range st {
				if h := s.Holder; h != nil {
					fmt.Fprintf(a.stdout, "%s\t%s\theld by %s@%s pid %d run %s since %s, until %s\n", s.Key, h.Device, h.Owner, h.Host, h.PID, h.RunID,
						h.Start.Format(time.RFC3339), h.Renewed.Add(time.Duration(h.TTL)).Format(time.RFC3339))
				} else {
					fmt.Fprintf(a.stdout, "%s\t(free)\n", s.Key)
				}
				for i, w := range s.Waiters {
					fmt.Fprintf(a.stdout, "  %d. waiting: %s@%s pid %d run %s since %s\n", i+1, w.Owner, w.Host, w.PID, w.RunID, w.Start.Format(time.RFC3339))
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&invFile, "inventory", "", "list only this lab's devices, by its names")
	c.AddCommand(a.labLeasesReleaseCmd())
	return c
}

func (a *app) labLeasesReleaseCmd() *cobra.Command {
	var force bool
	var invFile string
	c := &cobra.Command{
		Use:   "release <device> --force",
		Short: "Take a device's lease from its holder (operator; recorded)",
		Long: `Take a device's lease away from the run holding it, for a holder known to be
gone or stuck. <device> is a device key as "lab leases" prints it, or a
device name of --inventory. The act is recorded with who did it (in etcd
under <prefix>/released/, or in <state>/leases/released.log). On etcd the
holder's session is revoked: a holder that still runs sees its lease lost
and stops touching its devices. The device's undo journal stays; its next
holder replays it first. --force is required.`,
		Example: `  testbed lab leases release tcp://10.0.0.21:5025 --force
  testbed lab leases release voa1 --inventory lab.yaml --force --leases etcd://etcd1:2379/lab-a`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !force {
				return &orchestrator.InputError{Msg: "releasing another run's lease needs --force (check with testbed lab leases that its holder is gone)"}
			}
			key := args[0]
			path := invFile
			if path == "" {
				path = a.v.GetString("inventory")
			}
			if path != "" {
				inv, err := inventory.Load(path)
				if err != nil {
					return &orchestrator.InputError{Msg: err.Error()}
				}
				if d, ok := inv.Device(key); ok {
					key = orchestrator.NormalizeAddress(d.Address)
				}
			}
			ctx := cmd.Context()
			store, err := a.leaseStore(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			host, _ := os.Hostname()
			by := fmt.Sprintf("%s@%s pid %d", currentUser(), host, os.Getpid())
			was, err := store.ForceRelease(ctx, key, by)
			if err != nil {
				return &orchestrator.InfraError{Op: "release " + key, Err: err}
			}
			if was == nil {
				if a.json() {
					return a.printJSON(map[string]any{"key": key, "released": nil})
				}
				fmt.Fprintf(a.stdout, "%s is not leased\n", key)
				return nil
			}
			a.logger().Warn("lease released by force", "key", key, "by", by, "holder", was.Owner, "run", was.RunID)
			if a.json() {
				return a.printJSON(map[string]any{"key": key, "released": was, "by": by})
			}
			fmt.Fprintf(a.stdout, "released %s, held by %s (run %s); recorded as by %s\n", key, was.Owner, was.RunID, by)
			return nil
		},
	}
	c.Flags().BoolVar(&force, "force", false, "take the lease although a run holds it")
	c.Flags().StringVar(&invFile, "inventory", "", "resolve <device> as a device name of this inventory")
	return c
}
