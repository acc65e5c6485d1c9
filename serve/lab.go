package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"testbed/inventory"
	"testbed/orchestrator"
)

// LabDevice is one device of the lab page: from the inventory (when one
// is given), from the runs that used it, or from a lease held on it.
type LabDevice struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Driver  string `json:"driver"`
	Address string `json:"address"`
	// Key is the lease key (the physical device: its normalised address
	// or serial).
	Key string `json:"key"`
	// Identity is what the newest run that used it recorded (null: no
	// run has used it).
	Identity *SeenDevice `json:"identity"`
	// Lease is who holds it now (null: free).
	Lease *LeaseView `json:"lease"`
	// Waiting is how many runs queue for it.
	Waiting int `json:"waiting"`
	// Pending is how many undos its journal still holds.
	Pending int `json:"pending_undos"`
	// PendingByHolder is true when those undos were journaled by the run
	// holding the device now (they are undone at its end); false when a
	// run that is gone left them for the next holder or `lab recover`.
	PendingByHolder bool `json:"pending_by_holder"`
}

// LeaseView is a held lease.
type LeaseView struct {
	Owner string    `json:"owner"`
	Host  string    `json:"host"`
	PID   int       `json:"pid"`
	RunID string    `json:"run_id"`
	Lab   string    `json:"lab"`
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
}

func leaseView(l *orchestrator.Lease) *LeaseView {
	return &LeaseView{Owner: l.Owner, Host: l.Host, PID: l.PID, RunID: l.RunID, Lab: l.Lab, Since: l.Start.UTC(),
		Until: l.Renewed.Add(time.Duration(l.TTL)).UTC()}
}

// QueuedRun is a run waiting (`--wait`) for a device, in its order.
type QueuedRun struct {
	Key    string    `json:"key"`
	Device string    `json:"device"`
	Place  int       `json:"place"`
	Owner  string    `json:"owner"`
	Host   string    `json:"host"`
	PID    int       `json:"pid"`
	RunID  string    `json:"run_id"`
	Since  time.Time `json:"since"`
}

// PendingJournal is an undo journal left on disk: what is still to be
// undone on a device (a running run's, or a dead run's for the next
// holder or `testbed lab recover` to replay).
type PendingJournal struct {
	File   string        `json:"file"`
	Device string        `json:"device"`
	Undos  []PendingUndo `json:"undos"`
	Error  string        `json:"error,omitempty"`
}

// PendingUndo is one undo a journal holds.
type PendingUndo struct {
	Seq   int       `json:"seq"`
	RunID string    `json:"run_id"`
	Time  time.Time `json:"time"`
	Kind  string    `json:"kind"`
	Desc  string    `json:"desc"`
}

// Lab is the lab page's content.
type Lab struct {
	Name      string           `json:"name"`
	Inventory string           `json:"inventory"`
	Leases    string           `json:"lease_store"`
	Devices   []LabDevice      `json:"devices"`
	Journals  []PendingJournal `json:"journals"`
	Queue     []QueuedRun      `json:"queue"`
	Running   []Run            `json:"running"`
	// Problems are what could not be read (the lease store unreachable).
	Problems []string  `json:"problems"`
	Time     time.Time `json:"time"`
}

// LabSource is where the lab page looks: the inventory (optional), the
// lease store, and the state directory holding file journals.
type LabSource struct {
	Inventory *inventory.Inventory
	Leases    orchestrator.LeaseStore
	// LeasesName describes the store for the page ("file", "etcd://...").
	LeasesName string
	// JournalDir is where file leases keep undo journals
	// (<state>/leases); empty for etcd.
	JournalDir string
}

// Snapshot reads the lab's state now. It only reads: leases are listed,
// journals parsed, nothing is taken or replayed.
func (s *Server) labSnapshot(ctx context.Context) Lab {
	src := s.lab
	lab := Lab{Leases: src.LeasesName, Devices: []LabDevice{}, Journals: []PendingJournal{}, Queue: []QueuedRun{}, Problems: []string{}, Time: time.Now().UTC()}
	ds := labDevices{byKey: map[string]*LabDevice{}}
	if inv := src.Inventory; inv != nil {
		lab.Name, lab.Inventory = inv.Name, inv.Path
		ds.addInventory(inv)
	}
	seen, err := s.ix.LastSeen(ctx)
	if err != nil {
		lab.Problems = append(lab.Problems, err.Error())
	}
	ds.addSeen(seen, src.Inventory == nil)
	if src.Leases != nil {
		lab.readLeases(ctx, src, &ds)
	}
	if src.JournalDir != "" {
		lab.readJournals(src.JournalDir, &ds)
	}
	sort.SliceStable(lab.Queue, func(i, j int) bool {
		if lab.Queue[i].Key != lab.Queue[j].Key {
			return lab.Queue[i].Since.Before(lab.Queue[j].Since)
		}
		return lab.Queue[i].Place < lab.Queue[j].Place
	})
	for _, k := range ds.order {
		lab.Devices = append(lab.Devices, *ds.byKey[k])
	}
	run, err := s.ix.Runs(ctx, RunFilter{Status: "running", Limit: 50})
	if err != nil {
		lab.Problems = append(lab.Problems, err.Error())
	}
	lab.Running = run
	if lab.Running == nil {
		lab.Running = []Run{}
	}
	return lab
}

// labDevices are the lab page's devices by lease key, in the order they
// were first found; a device leased by serial is found by its address
// too.
type labDevices struct {
	byKey map[string]*LabDevice
	order []string
}

// add adds d under its key, or returns the device already there.
func (ds *labDevices) add(d LabDevice) *LabDevice {
	if have, ok := ds.byKey[d.Key]; ok {
		return have
	}
	dd := d
	ds.byKey[d.Key] = &dd
	ds.order = append(ds.order, d.Key)
	return &dd
}

// addInventory adds the inventory's devices.
func (ds *labDevices) addInventory(inv *inventory.Inventory) {
	for _, n := range inv.DeviceNames() {
		d, _ := inv.Device(n)
		key := orchestrator.DeviceKey(d.Address, d.Options["serial"])
		ld := ds.add(LabDevice{Name: n, Kind: d.Kind, Driver: d.Driver, Address: d.Address, Key: key})
		if d.Options["serial"] != "" {
			// The lease is also taken on the address.
			ds.byKey[orchestrator.NormalizeAddress(d.Address)] = ld
		}
	}
}

// addSeen gives the devices the identity their newest run recorded; with
// no inventory, the devices runs used are the lab's (addNew).
func (ds *labDevices) addSeen(seen map[string]SeenDevice, addNew bool) {
	for _, addr := range sortedKeys(seen) {
		sd := seen[addr]
		if d, ok := ds.byKey[addr]; ok {
			d.Identity = &sd
			continue
		}
		if addNew {
			d := ds.add(LabDevice{Name: sd.Name, Kind: sd.Kind, Driver: sd.Driver, Address: sd.Address, Key: addr})
			d.Identity = &sd
		}
	}
}

// readLeases gives the devices their holders and the runs waiting for
// them; with no inventory, a leased device is the lab's too.
func (lab *Lab) readLeases(ctx context.Context, src LabSource, ds *labDevices) {
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	st, err := src.Leases.List(lctx)
	cancel()
	if err != nil {
		lab.Problems = append(lab.Problems, fmt.Sprintf("list leases (%s): %v", src.LeasesName, err))
	}
	for _, l := range st {
		d, ok := ds.byKey[l.Key]
		if !ok {
			if src.Inventory != nil {
				continue // another lab's device
			}
			name := ""
			if l.Holder != nil {
				name = l.Holder.Device
			}
			d = ds.add(LabDevice{Name: name, Address: l.Key, Key: l.Key})
		}
		if l.Holder != nil && d.Lease == nil {
			d.Lease = leaseView(l.Holder)
		}
		d.Waiting += len(l.Waiters)
		for i, w := range l.Waiters {
			lab.Queue = append(lab.Queue, QueuedRun{Key: l.Key, Device: d.Name, Place: i + 1, Owner: w.Owner, Host: w.Host, PID: w.PID, RunID: w.RunID, Since: w.Start.UTC()})
		}
	}
}

// readJournals lists the undo journals in dir that still hold undos (or
// cannot be read), and counts each device's pending undos.
func (lab *Lab) readJournals(dir string, ds *labDevices) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.journal"))
	sort.Strings(files)
	for _, f := range files {
		pj, ok := readPendingJournal(f)
		if !ok {
			continue
		}
		lab.Journals = append(lab.Journals, pj)
		for _, d := range ds.byKey {
			if d.Name == pj.Device && pj.Device != "" {
				d.Pending += len(pj.Undos)
				d.PendingByHolder = d.Lease != nil && len(pj.Undos) > 0 && pj.Undos[0].RunID == d.Lease.RunID
				break
			}
		}
	}
}

// readPendingJournal reads one journal file: false when it is gone
// (closed meanwhile) or holds nothing to undo.
func readPendingJournal(f string) (PendingJournal, bool) {
	pj := PendingJournal{File: filepath.Base(f), Undos: []PendingUndo{}}
	p, err := orchestrator.ReadJournal(f)
	if err != nil {
		if os.IsNotExist(err) {
			return pj, false // closed meanwhile
		}
		pj.Error = err.Error()
	}
	for _, u := range p {
		pj.Device = u.Device
		pj.Undos = append(pj.Undos, PendingUndo{Seq: u.Seq, RunID: u.RunID, Time: u.Time.UTC(), Kind: u.Kind, Desc: u.Desc})
	}
	return pj, len(pj.Undos) > 0 || pj.Error != ""
}
