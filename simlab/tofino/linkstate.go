package tofino

import (
	"fmt"

	lg "testbed/p4/linkguardian"
	"testbed/simlab/lgmodel"
	"testbed/simlab/physics"
)

// LinkState is what traffic other than the switches' own (the simulated
// hosts') sees on a switch fibre at one moment: whether it is up, the
// LinkGuardian mode and copies the two ends' programs are configured with,
// the receiver's backpressure thresholds, the optics, and the drop fraction
// of the sender's loss-emulation table.
type LinkState struct {
	Up            bool
	Mode          lgmodel.Mode
	Copies        int
	Pause, Resume int // the receiver's backpressure thresholds, cells
	Bps           float64
	FEC           string
	RxDBm         float64 // received power less the fibre's dispersion penalty (world.Fibre.EyePowerDBm)
	Drop          float64 // the sender's loss-emulation table's drop fraction
	Transceiver   physics.Transceiver
}

// AddEmulatedDrops counts frames of traffic on fibre that the sender's
// loss-emulation table took (drawn by whoever modelled that traffic, e.g.
// the simulated hosts) in the sender's lg.RegEmulatedDrops.
func (d *Dataplane) AddEmulatedDrops(fibre string, frames int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.links {
		if l.name == fibre {
			l.tx.mu.Lock()
			l.tx.addRegLocked(lg.RegEmulatedDrops, 0, frames)
			l.tx.mu.Unlock()
			return
		}
	}
}

// LinkState reads a switch fibre's state now, as the dataplane computes it
// for its own traffic.
func (d *Dataplane) LinkState(fibre string) (LinkState, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.linkStateLocked(fibre)
}

func (d *Dataplane) linkStateLocked(fibre string) (LinkState, error) {
	for _, l := range d.links {
		if l.name != fibre {
			continue
		}
		c, err := d.config(&lgRun{link: l, frameBytes: 1518})
		if err != nil {
			return LinkState{}, err
		}
		s := LinkState{Up: c.up && c.loss < 1, Mode: c.mode, Copies: c.copies, Pause: c.pause, Resume: c.resu, Bps: c.bps, FEC: c.fec,
			RxDBm: l.fibre.EyePowerDBmAt(d.now), Transceiver: l.fibre.Transceiver}
		if k := l.tx.tableSize(lg.TableEmulateDrop); k > 0 {
			s.Drop = float64(k) / (1 << 20)
		}
		return s, nil
	}
	return LinkState{}, fmt.Errorf("no switch fibre %q in the simulated dataplane", fibre)
}
